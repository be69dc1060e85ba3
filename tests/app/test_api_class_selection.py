"""The classes found privately from Python (``dprect.fit(..., select_groups=True)`` and
``RectangleClassifier(select_groups=True)``, docs/privacy.md §18): the same option as
``fit --select-groups`` — the same names and defaults as the declared run option
(dprect/app/options.py's SELECTION_OPTIONS), for a seed the command line's classes and
rectangles, ONE charge of the composed (ε + ε_s, δ + δ_s) to a budget, and the refusals
of the command line (a listed class y cannot hold, its budget without it) before any
charge. A public list with it: tests/app/test_class_lists_combined.py."""

from __future__ import annotations

import inspect
import json
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

import dprect
from dprect.app.options import SELECTION_OPTIONS
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.labels import LabelText

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")
SELECT = {"select_groups": True, "selection_epsilon": 0.5, "selection_delta": 1e-6}
GRID = "0:10:64"


def _data() -> tuple[np.ndarray, np.ndarray]:
    """Classes 1 and 2.5 of 400 rows (kept surely: N = 51 at (0.5, 1e-6)), 30 labels of
    one row each (kept with probability <= 1e-6), a NaN label (no class)."""
    labels = np.array([1.0] * 400 + [2.5] * 400 + [100.0 + i for i in range(30)] + [np.nan])
    x = np.array([1.0 + (i % 3) if i < 400 else 6.0 + (i % 3) for i in range(len(labels))])
    return np.column_stack([x, x / 2]), labels


def test_the_options_are_the_declared_run_options() -> None:
    fit_params = inspect.signature(dprect.fit).parameters
    clf_params = inspect.signature(dprect.RectangleClassifier).parameters
    for option in SELECTION_OPTIONS:
        default = option.default if option.kind == "flag" else None
        assert fit_params[option.name].default == default, option.name
        assert clf_params[option.name].default == default, option.name


def test_a_seeded_api_run_equals_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, labels = _data()
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": X[:, 0], "y": X[:, 1], "lab": labels}), path)
    out = tmp_path / "o.json"
    code, _, err = run(["fit", "--input", str(path), "--features", "x,y", "--label", "lab",
                        "--epsilon", "2", "--delta", "1e-6", "--grid", GRID,
                        "--select-groups", "--selection-epsilon", "0.5",
                        "--selection-delta", "1e-6", "--seed", "4", "--output", str(out)],
                       capsys)
    assert code == 0, err
    cli = json.loads(out.read_text())
    budget = dprect.PrivacyBudget()
    got = dprect.fit(X, labels, epsilon=2, delta=1e-6, grid=GRID, features=["x", "y"],
                     seed=4, budget=budget, **SELECT)
    api = got.to_json()
    assert cli["classes"] == api["classes"] == got.classes == ["1", "2.5"]
    assert api["rectangles"] == cli["rectangles"]
    assert api["privacy"] == cli["privacy"]
    assert api["statistics_privacy"] == cli["statistics_privacy"]
    assert api["group_selection"]["groups_kept"] == cli["group_selection"]["groups_kept"] == 2
    # one charge of the composed guarantee, whatever the number of classes
    assert [c.guarantee for c in budget.charges] == [got.guarantee]
    assert got.guarantee.epsilon == pytest.approx(
        cli["statistics_privacy"]["epsilon"] + 0.5, abs=1e-12)


def test_the_classifier_keeps_the_classes_in_ys_type() -> None:
    from dprect.app.classifier import PrivacyLeakWarning

    X, labels = _data()
    ints = np.where(np.isnan(labels), -1, np.round(labels * 2)).astype(np.int64)  # 2, 5
    budget = dprect.PrivacyBudget()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # no leak warning
        warnings.filterwarnings("ignore", "this run used a fixed seed")
        clf = dprect.RectangleClassifier(2, 1e-6, grid=GRID, random_state=3,
                                         budget=budget, **SELECT).fit(X, ints)
    assert clf.classes_.dtype == ints.dtype and clf.classes_.tolist() == [2, 5]
    assert set(clf.predict(X[:800]).tolist()) <= {2, 5}
    assert len(budget.charges) == 1
    charge = budget.charges[0].guarantee  # the classes' fit's, then the selection's
    assert charge.epsilon == pytest.approx(clf.result_.privacy.epsilon + 0.5, abs=1e-12)
    assert charge.delta == pytest.approx(clf.result_.privacy.delta + 1e-6, rel=1e-12)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({**SELECT, "classes": ["abc"]}, ParameterError, "the label column 'y' is numeric"),
    ({"selection_epsilon": 0.5}, ParameterError, "selection_epsilon needs select_groups"),
    ({**SELECT, "positive_label": 2.5}, ParameterError, "leave out positive_label"),
    # s39-edges2: 1.0 and True equal the default 1 but are a label given, as with classes
    ({**SELECT, "positive_label": 1.0}, ParameterError, "leave out positive_label"),
    ({**SELECT, "positive_label": True}, ParameterError, "leave out positive_label"),
    ({**SELECT, "selection_delta": 0.0}, ParameterError, "selection_delta must be"),
])
def test_refused_before_anything_is_charged(kwargs, error, message) -> None:
    X, labels = _data()
    budget = dprect.PrivacyBudget()
    with pytest.raises(error, match=message):
        dprect.fit(X, labels, epsilon=2, delta=1e-6, grid=GRID, budget=budget, **kwargs)
    assert budget.charges == []


@pytest.mark.parametrize("label", [1, LabelText("1"), 1.0, True, 2, "a"], ids=repr)
def test_a_positive_label_beside_a_selection_is_refused_as_beside_a_class_list(label) -> None:
    """--select-groups fits one rectangle per class found, as --classes does per class
    listed: a positive label given beside either is refused alike (s39-edges2: '1' from
    the command line, and 1.0 or True, passed beside a selection; only the default 1
    itself, the option left out, is taken by both)."""
    from dprect.app.flow import fit_selection
    from dprect.core.request import FitRequest

    def refused(make) -> bool:
        try:
            make()
        except ParameterError:
            return True
        return False

    listed = refused(lambda: FitRequest(epsilon=1, delta=1e-6, classes=("a", "b"),
                                        positive_label=label))
    selected = refused(lambda: fit_selection({**SELECT, "positive_label": label}))
    assert listed == selected == (not (label == 1 and type(label) is int)), (listed, selected)


@pytest.mark.parametrize("beside", [SELECT, {"classes": [0, 1]}], ids=["select", "classes"])
def test_the_python_api_refuses_an_explicit_default_label_as_the_fronts_do(beside) -> None:
    """``positive_label=1`` given as a keyword is a label given, as ``--positive-label 1``
    and ``fit.positive_label: 1`` are (s40): refused beside a class list or a selection,
    before anything is charged; the keyword left out is accepted."""
    X, labels = _data()
    budget = dprect.PrivacyBudget()
    with pytest.raises(ParameterError, match=r"positive label|positive_label"):
        dprect.fit(X, labels, epsilon=2, delta=1e-6, grid=GRID, budget=budget, seed=3,
                   positive_label=1, **beside)
    assert budget.charges == []
    dprect.fit(X, labels, epsilon=2, delta=1e-6, grid=GRID, budget=budget, seed=3, **beside)
    assert len(budget.charges) == 1


def test_untyped_labels_are_refused_by_their_type() -> None:
    X, labels = _data()
    budget = dprect.PrivacyBudget()
    with pytest.raises(InputDataError, match="select_groups needs typed labels"):
        dprect.fit(X, labels.tolist(), epsilon=2, delta=1e-6, grid=GRID, budget=budget,
                   **SELECT)
    assert budget.charges == []


def test_a_pandas_text_column_is_never_refused_for_a_value() -> None:
    """A value that is not text in a pandas object column (pandas' text column) is no
    class — positive_mask never matches it — and refuses nothing (no refusal may depend
    on a value)."""
    pd = pytest.importorskip("pandas")
    from dprect.app.api import label_counts

    y = pd.Series(["a"] * 3 + [None, float("nan"), 3, b"a"], dtype=object)
    assert label_counts(y, len(y)) == {"a": 3}
    X, _ = _data()
    budget = dprect.PrivacyBudget()
    big = pd.Series(["a"] * 400 + ["b"] * 400 + [7] * 31, dtype=object)
    got = dprect.fit(X, big, epsilon=2, delta=1e-6, grid=GRID, seed=1, budget=budget,
                     **SELECT)
    assert got.classes == ["a", "b"] and len(budget.charges) == 1
