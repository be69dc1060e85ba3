"""One rectangle per class for one charge: the Python API and ``dprect fit --classes``.

Properties checked (numpy engine):

* ``fit(classes=...)`` is, class by class, the ordinary fit of that class as the positive
  label with the class's seed (:func:`dprect.core.classes.class_seeds`);
* the premise of the parallel composition: a class's rectangle does not depend on any row
  of another class or of an unlisted label (they are its negatives, and negatives enter
  no computation) — changing, adding or removing such rows leaves it identical;
* ``dprect fit --classes`` under a ledger reserves ONCE the plan's guarantee (checked
  against the planner and the ledger's events and spent total), the JSON holds every
  class, the results table one row per class, the plot is written; a replay spends
  nothing; a bad class list is one line, exit 2, nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run

import dprect
from dprect.app.api import resolve_domains
from dprect.core.classes import ClassesResult, class_seeds
from dprect.core.planner import plan
from dprect.release.ledger import Ledger
from dprect.release.results_table import read_results

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")

GRID = "0:10:1024"
EPS, DELTA = 2.0, 1e-7
CLASSES = ["x", "y", "z"]


def table(seed: int = 0, n: int = 6000) -> tuple[np.ndarray, np.ndarray]:
    """Three classes in three boxes, plus rows of an unlisted label 'w' and nulls."""
    gen = np.random.default_rng(seed)
    label = gen.choice(["x", "y", "z", "w"], n, p=[0.3, 0.3, 0.3, 0.1])
    centre = {"x": 2.0, "y": 5.0, "z": 8.0, "w": 5.0}
    X = np.column_stack([[centre[v] for v in label], [10 - centre[v] for v in label]])
    X = X + gen.uniform(-1, 1, X.shape)
    return X, label


def test_each_class_is_its_own_fit_with_its_seed():
    X, y = table()
    res = dprect.fit(X, y, classes=CLASSES, grid=GRID, epsilon=EPS, delta=DELTA, seed=11)
    assert isinstance(res, ClassesResult) and res.classes == CLASSES
    for c, s, r in zip(CLASSES, class_seeds(11, 3), res.results, strict=True):
        # the classes' fit chooses at N = ∞ (no count, privacy.md §12): the single fit of
        # the method it chose
        one = dprect.fit(X, y, positive_label=c, grid=GRID, epsilon=EPS, delta=DELTA,
                         seed=s, method=r.method)
        assert (r.lower_index, r.upper_index) == (one.lower_index, one.upper_index)
        assert r.privacy == one.privacy == res.privacy  # one guarantee for all
        assert not r.empty
    assert res["y"] is res.results[1]
    assert ClassesResult.from_json(json.loads(res.to_json_string())) == res


def test_other_classes_rows_do_not_move_a_class():
    """Class x's rectangle is a function of the x rows only: rows of y, z, the unlisted
    w and nulls may change, appear or vanish without changing it (same seed)."""
    X, y = table()
    base = dprect.fit(X, y, classes=CLASSES, grid=GRID, epsilon=EPS, delta=DELTA, seed=3)
    gen = np.random.default_rng(9)
    X2, y2 = X.copy(), y.astype(object)
    others = y != "x"
    X2[others] = gen.uniform(0, 10, (int(others.sum()), 2))  # move every other row
    y2[np.flatnonzero(others)[:50]] = None  # null labels
    extra = gen.uniform(0, 10, (500, 2))  # new rows of an unlisted label
    X2 = np.vstack([X2, extra])
    y2 = np.concatenate([y2, np.array(["q"] * 500, dtype=object)])
    moved = dprect.fit(X2, y2, classes=CLASSES, grid=GRID, epsilon=EPS, delta=DELTA,
                       seed=3)
    assert moved["x"].lower_index == base["x"].lower_index
    assert moved["x"].upper_index == base["x"].upper_index
    # and the y rows do matter for y (the test can fail): its rectangle moved
    assert (moved["y"].lower_index, moved["y"].upper_index) != (
        base["y"].lower_index, base["y"].upper_index)


def test_keyword_and_request_agree_and_errors_are_parameter_errors():
    X, y = table(n=500)
    req = dprect.FitRequest(epsilon=EPS, delta=DELTA, classes=("x", "y"))
    a = dprect.fit(X, y, req, grid=GRID, seed=1)
    b = dprect.fit(X, y, classes=["x", "y"], grid=GRID, epsilon=EPS, delta=DELTA, seed=1)
    assert a == b
    with pytest.raises(dprect.ParameterError):
        dprect.fit(X, y, req, classes=["x"])
    with pytest.raises(dprect.ParameterError):
        dprect.fit(X, y, classes=[], epsilon=EPS, delta=DELTA)
    with pytest.raises(dprect.ParameterError):  # a numeric class for string labels
        dprect.fit(X, y, classes=["x", 3], grid=GRID, epsilon=EPS, delta=DELTA)


# -- the command line ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("classes_cli")
    X, y = table(n=4000)
    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "label": y}), d / "t.parquet")
    return d


def argv(data: Path, tmp: Path, *extra: str) -> list[str]:
    return ["fit", "--input", str(data / "t.parquet"), "--features", "a,b", "--label",
            "label", "--epsilon", str(EPS), "--delta", str(DELTA), "--grid", GRID,
            "--classes", "x,y,z", "--output", str(tmp / "r.json"), *extra]


def test_cli_classes_cost_one_charge(data: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]):
    led = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(led)], capsys)[0] == 0
    extra = ["--ledger", str(led), "--dataset", "ds", "--run-id", "r1",
             "--results-table", str(tmp_path / "results"), "--plot", str(tmp_path / "p.png"),
             "--seed", "5"]
    code, out, err = run(argv(data, tmp_path, *extra), capsys)
    assert code == 0, err
    g = plan(epsilon=EPS, delta=DELTA, domains=resolve_domains(GRID, ["a", "b"])
             ).chosen.guarantee
    ledger = Ledger(str(led))
    reserves = [e for e in ledger.events("ds") if e["event"] == "reserve"]
    assert len(reserves) == 1  # three classes, ONE reservation
    spent = ledger.spent("ds")
    assert spent is not None
    assert spent.epsilon == pytest.approx(g.epsilon) and spent.delta == pytest.approx(g.delta)
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["classes"] == ["x", "y", "z"] and set(record["rectangles"]) == {"x", "y", "z"}
    assert record["privacy"]["epsilon"] == pytest.approx(g.epsilon)
    result = ClassesResult.from_json(record)
    api = dprect.fit(*table(n=4000), classes=CLASSES, grid=GRID, epsilon=EPS, delta=DELTA,
                     seed=5)
    assert [r.lower_index for r in result.results] == [r.lower_index for r in api.results]
    rows = read_results(str(tmp_path / "results")).to_pylist()
    assert sorted(json.loads(r["parameters"])["class"] for r in rows) == ["x", "y", "z"]
    assert {r["run_id"] for r in rows} == {"r1"}
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    # replay: nothing spent, no second set of rows
    code, out, err = run(argv(data, tmp_path, *extra), capsys)
    assert code == 0 and "nothing was spent" in out, err
    assert Ledger(str(led)).spent("ds") == spent
    assert len(read_results(str(tmp_path / "results"))) == 3


@pytest.mark.parametrize("classes", ["x,x", ",", "x, x"])
def test_cli_bad_class_list_is_one_line(data: Path, tmp_path: Path, classes: str,
                                        capsys: pytest.CaptureFixture[str]):
    args = argv(data, tmp_path)
    args[args.index("x,y,z")] = classes
    code, _, err = run(args, capsys)
    assert code == 2 and "Traceback" not in err
    assert "class" in err.strip().splitlines()[-1]  # one line (after argparse's usage)
    assert not (tmp_path / "r.json").exists()


def test_job_config_reads_a_class_list():
    """``fit.classes`` in the fit job's config: a YAML list (strings read against the
    column's type, numbers as they are) or a comma-separated string."""
    import fit_rectangle

    from dprect.app.jobs_support import section_values
    from dprect.core.labels import LabelText

    base = {"input": "in.parquet", "features": ["a", "b"], "label": "y", "epsilon": 1.0,
            "delta": 1e-6, "output": "out.json"}
    for given, expected in (([2, "x", True], (2, LabelText("x"), True)),
                            ("p, q", (LabelText("p"), LabelText("q")))):
        cfg = section_values({"fit": {**base, "classes": given}}, "fit", fit_rectangle.OPTIONS)
        assert fit_rectangle.settings(cfg).request.classes == expected
    cfg = section_values({"fit": base}, "fit", fit_rectangle.OPTIONS)
    assert fit_rectangle.settings(cfg).request.classes is None
    cfg = section_values({"fit": {**base, "classes": ["x", "x"]}}, "fit", fit_rectangle.OPTIONS)
    with pytest.raises(dprect.ParameterError, match="listed twice"):
        fit_rectangle.settings(cfg)


@pytest.mark.parametrize("spelled", ["x,,y", "x,y,", " "])
def test_job_class_list_with_an_empty_entry_is_refused_as_on_the_command_line(spelled):
    """A class list spelled with an empty entry (s40-edges item 1): the job split it by
    hand and the request refused it in its own words; now the command line's own split
    (options.comma_entries), the same text but for the key it names."""
    import fit_rectangle

    from dprect.app.cli import _labels
    from dprect.app.jobs_support import section_values

    base = {"input": "in.parquet", "features": ["a", "b"], "label": "y", "epsilon": 1.0,
            "delta": 1e-6, "output": "out.json"}
    cfg = section_values({"fit": {**base, "classes": spelled}}, "fit", fit_rectangle.OPTIONS)
    with pytest.raises(dprect.ParameterError) as job_error:
        fit_rectangle.settings(cfg)
    with pytest.raises(dprect.ParameterError) as cli_error:
        _labels(spelled)
    assert str(job_error.value) == f"fit.classes: {cli_error.value}"


#: the refusal of a positive label beside a class list / a private selection of classes
BESIDE = {"classes": ("give classes or a positive label, not both",) * 2,
          "select": ("--select-groups fits one rectangle per class found: leave out "
                     "--positive-label", "fit.select_groups fits one rectangle per class "
                     "found: leave out fit.positive_label")}
SELECT_ARGS = ["--select-groups", "--selection-epsilon", "1", "--selection-delta", "0.05"]


@pytest.mark.parametrize("beside", sorted(BESIDE))
def test_a_positive_label_given_as_the_default_is_refused_on_both_fronts(
        beside: str, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """``--positive-label 1`` and ``fit.positive_label: 1`` beside a class list or
    ``select_groups`` (s40-edges item 2): the command line refused it (its 1 is text, no
    default), the job took it as the key left out (its default was always filled in, and
    YAML's 1 is the default itself). Both fronts now know a label given: the same
    refusal, in each front's spelling of the keys; nothing written. Left out (or null in
    the job) it is the request's default, and taken."""
    import fit_rectangle

    from dprect.app.jobs_support import section_values

    cli_text, job_text = BESIDE[beside]
    args = argv(data, tmp_path, "--positive-label", "1")
    if beside == "select":
        del args[args.index("--classes"):args.index("--classes") + 2]
        args += SELECT_ARGS
    code, _, err = run(args, capsys)
    assert code == 2 and cli_text in err and len(messages(err)) == 1, err
    assert not (tmp_path / "r.json").exists()

    base = {"input": "in.parquet", "features": ["a", "b"], "label": "y", "epsilon": 1.0,
            "delta": 1e-6, "output": "out.json"}
    base |= ({"classes": ["x", "y"]} if beside == "classes" else
             {"select_groups": True, "selection_epsilon": 1.0, "selection_delta": 0.05})
    for label in (1, 1.0, True, "1", "x"):
        cfg = section_values({"fit": {**base, "positive_label": label}}, "fit",
                             fit_rectangle.OPTIONS)
        with pytest.raises(dprect.ParameterError) as refused:
            fit_rectangle.settings(cfg)
        assert str(refused.value).startswith(job_text), (label, refused.value)
    for left_out in ({}, {"positive_label": None}):
        cfg = section_values({"fit": {**base, **left_out}}, "fit", fit_rectangle.OPTIONS)
        assert fit_rectangle.settings(cfg).request.positive_label == 1


def test_a_mutated_classes_composition_refuses_the_run(data: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch):
    """The classes' charge is re-derived by the independent check before the table is
    read (docs/privacy.md §10, §12): with the replace-one factor 2 of the composition
    dropped (:data:`dprect.core.classes.REPLACE_STEPS` = 1), ``dprect fit --classes`` is
    refused — one line, exit 2, nothing reserved or written — and so is the API."""
    from dprect.core import classes as classes_module
    from dprect.core.guarantee_check import GuaranteeCheckError

    led = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(led)], capsys)[0] == 0
    extra = ["--neighbouring", "replace-one", "--ledger", str(led), "--dataset", "ds"]
    code, _, err = run(argv(data, tmp_path, *extra), capsys)
    assert code == 0, err  # the composition as proved: the run goes ahead
    (tmp_path / "r.json").unlink()
    monkeypatch.setattr(classes_module, "REPLACE_STEPS", 1)
    code, _, err = run(argv(data, tmp_path, *extra), capsys)
    assert code == 2 and "Traceback" not in err, err
    assert len(messages(err)) == 1
    assert "independent guarantee check refused this classes plan" in err
    assert not (tmp_path / "r.json").exists()
    assert len([e for e in Ledger(str(led)).events("ds") if e["event"] == "reserve"]) == 1
    X, y = table(n=500)
    with pytest.raises(GuaranteeCheckError):
        dprect.fit(X, y, classes=CLASSES, grid=GRID, epsilon=EPS, delta=DELTA,
                   neighbouring="replace-one")
    # add/remove does not use the factor: it still runs
    assert dprect.fit(X, y, classes=CLASSES, grid=GRID, epsilon=EPS, delta=DELTA).classes \
        == CLASSES
