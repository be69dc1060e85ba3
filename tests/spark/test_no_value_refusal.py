"""No refusal depends on the rows' values (issue 10, point 1), and outputs are checked
before anything is read or reserved (point 8) — on every route: ``dprect fit`` with the
numpy and the Spark engine, and the fit job.

Acceptance: a table with no positive rows and the same table plus one positive row end
with the same exit code (0) and an output of the same schema (the same JSON keys and value
types; the same results-table columns). So do a table with no rows, labels other than the
positive label and null labels. Only the schema (a label column that cannot hold the
positive label) and paths are refused.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]

import fit_rectangle  # noqa: E402
from cli_run import messages  # noqa: E402

import dprect  # noqa: E402
from dprect.app.cli import main as cli  # noqa: E402
from dprect.app.jobs_support import EXIT_BAD_INPUT  # noqa: E402
from dprect.core.errors import InputDataError, ParameterError  # noqa: E402
from dprect.engines.spark.fit import fit_dataframe, prepare_fit, validate_dataframe  # noqa: E402
from dprect.release.ledger import Ledger  # noqa: E402
from dprect.release.results_table import read_results  # noqa: E402

FEATURES = ["f0", "f1"]
GRID = "0:10:256"
N = 300


def _shape(node):
    """A JSON value's structure: keys and value types (numbers as one type), not values."""
    if isinstance(node, dict):
        return {k: _shape(v) for k, v in node.items()}
    if isinstance(node, list):
        return ["list", len(node)]
    if isinstance(node, bool) or not isinstance(node, int | float):
        return type(node).__name__
    return "number"


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """No positives; the same plus one positive row; no rows; odd and null labels."""
    d = tmp_path_factory.mktemp("no_value_refusal")
    gen = np.random.default_rng(2)
    X = gen.uniform(0, 10, (N, 2))
    base = {"f0": X[:, 0], "f1": X[:, 1]}
    out = {}

    def write(name: str, table: pa.Table) -> None:
        pq.write_table(table, d / f"{name}.parquet")
        out[name] = d / f"{name}.parquet"

    no_pos = pa.table({**base, "label": pa.array(np.zeros(N, np.int32))})
    write("no_positives", no_pos)
    write("one_positive", pa.concat_tables([no_pos, pa.table({
        "f0": [5.0], "f1": [5.0], "label": pa.array([1], pa.int32())})]))
    write("no_rows", no_pos.slice(0, 0))
    write("odd_labels", pa.table({**base, "label": pa.array(
        [None if i % 3 == 0 else (2 if i % 3 == 1 else -7) for i in range(N)], pa.int32())}))
    return out


ROUTES = ["numpy", "spark-prefetch", "spark-rounds"]


def _cli_fit(route: str, table: Path, out: Path, *extra: str) -> int:
    """``dprect fit`` of ``table`` on ``route``, seeded: auto's private count of the
    positives picks the method, and a method has its own plan's fields, so unseeded runs
    of two tables differ in shape whenever their noisy counts fall on two sides of a
    crossover (about 1% of pairs: the count's scale is 50 here). With one seed every
    table draws the same noise, so the outputs differ only where the rows make them."""
    engine = [] if route == "numpy" else ["--engine", "spark", "--plan", route.split("-")[1]]
    return cli(["fit", "--input", str(table), "--features", ",".join(FEATURES),
                "--label", "label", "--epsilon", "1", "--delta", "1e-6", "--grid", GRID,
                "--output", str(out), "--seed", "5", *engine, *extra])


@pytest.mark.parametrize("route", ROUTES)
def test_cli_no_positives_and_one_positive_look_alike(
        spark, route: str, tables: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    outcomes = {}
    for name, table in tables.items():
        out = tmp_path / f"{name}.json"
        code = _cli_fit(route, table, out)
        captured = capsys.readouterr()
        # the heartbeat's lines depend on the clock only (a loaded machine passes its
        # 10 s): every other line of stderr must be the same
        outcomes[name] = (code, messages(captured.err), _shape(json.loads(out.read_text()))
                          if out.exists() else None)
    assert outcomes["no_positives"][0] == outcomes["one_positive"][0] == 0, outcomes
    for name, (code, err, shape) in outcomes.items():
        assert (code, err) == (0, []), (name, err)
        assert shape == outcomes["one_positive"][2], name


def _job_args(table: Path, out: Path, *extra: str) -> list[str]:
    return ["--set", f"input={table}", "--set", f"features=[{', '.join(FEATURES)}]",
            "--set", "label=label", "--set", f"grid={GRID}", "--set", "epsilon=1.0",
            "--set", "delta=1e-6", "--set", "dataset=acceptance",
            "--set", f"output={out / 'result.json'}",
            "--set", f"results_table={out / 'results'}",
            "--set", f"plot={out / 'rect.png'}", *extra]


def test_job_no_positives_and_one_positive_look_alike(
        spark, tables: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The job's tables give the same outputs but their values, seeded as
    :func:`_cli_fit` is: auto's private count (scale 50) picks the method, and unseeded
    tables differed in plan fields whenever a count fell in composition's window."""
    outcomes = {}
    for name, table in tables.items():
        out = tmp_path / name
        code = fit_rectangle.main(_job_args(table, out, "--set", "seed=5"), spark)
        captured = capsys.readouterr()
        results = read_results(out / "results")
        outcomes[name] = (code, captured.err,
                          _shape(json.loads((out / "result.json").read_text())),
                          results.schema.names, results.num_rows,
                          (out / "rect.png").exists())
    want = outcomes["one_positive"]
    assert want[0] == 0 and want[1] == "" and want[4] == 1 and want[5]
    for name, got in outcomes.items():
        assert got == want, name


def test_job_positive_label_and_schema_refusal(spark, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    gen = np.random.default_rng(3)
    X = gen.uniform(0, 10, (400, 2))
    inside = ((X > 2) & (X < 7)).all(axis=1)
    labels = [None if i % 10 == 0 else ("churned" if v else "stayed")
              for i, v in enumerate(inside)]
    pq.write_table(pa.table({"f0": X[:, 0], "f1": X[:, 1], "label": labels}),
                   tmp_path / "s.parquet")
    pq.write_table(pa.table({"f0": X[:, 0], "f1": X[:, 1], "label": pa.array(
        [None if i % 10 == 0 else bool(v) for i, v in enumerate(inside)])}),
        tmp_path / "b.parquet")
    seeded = ("--set", "seed=5")
    assert fit_rectangle.main(_job_args(tmp_path / "s.parquet", tmp_path / "s",
                                        "--set", "positive_label=churned", *seeded),
                              spark) == 0
    assert fit_rectangle.main(_job_args(tmp_path / "b.parquet", tmp_path / "b",
                                        "--set", "positive_label=true", *seeded),
                              spark) == 0
    s = json.loads((tmp_path / "s" / "result.json").read_text())
    b = json.loads((tmp_path / "b" / "result.json").read_text())
    assert (s["lower"], s["upper"]) == (b["lower"], b["upper"])
    capsys.readouterr()
    # the default label 1 on a string column: refused from the schema, nothing written
    code = fit_rectangle.main(_job_args(tmp_path / "s.parquet", tmp_path / "bad"), spark)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_BAD_INPUT and len(err) == 1, err
    assert "holds strings, but the positive label" in err[0]
    assert not (tmp_path / "bad" / "result.json").exists()
    # a fraction on an integer label column matches no row: refused from the schema
    # (s39-edges c), not an empty rectangle for the budget
    pq.write_table(pa.table({"f0": X[:, 0], "f1": X[:, 1],
                             "label": pa.array(inside.astype(np.int32))}),
                   tmp_path / "i.parquet")
    code = fit_rectangle.main(_job_args(tmp_path / "i.parquet", tmp_path / "frac",
                                        "--set", "positive_label=1.5"), spark)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_BAD_INPUT and len(err) == 1, err
    assert "holds integers: the positive label" in err[0]
    assert not (tmp_path / "frac" / "result.json").exists()


# -- the job: outputs checked first, the run id printed --------------------------------------
def _init_ledger(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["budget", "init", "--ledger", str(path)]) == 0, capsys.readouterr().err
    capsys.readouterr()


@pytest.mark.parametrize("key", ["output", "plot", "results_table"])
def test_job_bad_output_is_refused_before_reserving(
        key: str, tables: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger"
    _init_ledger(ledger, capsys)
    (tmp_path / "a_file").write_text("x")
    bad = tmp_path / "a_file" / ("results" if key == "results_table" else "x.out")
    # no session is passed and none is started: the check comes before Spark
    code = fit_rectangle.main(_job_args(
        tables["one_positive"], tmp_path / "out", "--set", f"{key}={bad}",
        "--set", f"ledger={ledger}", "--set", "run_id=r-bad"))
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == EXIT_BAD_INPUT and len(lines) == 1, captured.err
    assert lines[0].startswith(f"fit_rectangle: error: fit.{key} "), lines
    assert "run id" not in captured.out
    assert Ledger(ledger).events("acceptance") == []
    assert not (tmp_path / "out").exists()


def test_job_prints_the_run_id_of_a_ledger_run(
        spark, tables: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger"
    _init_ledger(ledger, capsys)
    code = fit_rectangle.main(_job_args(tables["one_positive"], tmp_path / "out",
                                        "--set", f"ledger={ledger}"), spark)
    out = capsys.readouterr().out
    assert code == 0
    match = re.search(r"^\[fit_rectangle\] run id ([0-9a-f]{32}) ", out, re.MULTILINE)
    assert match, out
    assert [r.run_id for r in Ledger(ledger).runs("acceptance")] == [match.group(1)]
    assert out.index(match.group(0)) < out.index("checking the input")


# -- the DataFrame front end -------------------------------------------------------------------
BUDGET = {"epsilon": 2.0, "delta": 1e-6, "seed": 1}


def _fit(df, label="y", **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_dataframe(df, features=["a"], label=label, grid="0:8:16",
                             **{**BUDGET, **kw})


def _numpy(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dprect.fit(np.asarray(X, dtype=float).reshape(-1, 1), y, grid="0:8:16",
                          features=["a"], **{**BUDGET, **kw})


@pytest.mark.parametrize("plan", ["prefetch", "rounds"])
def test_positive_label_kinds_match_numpy(spark, plan: str) -> None:
    a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    text = ["yes", "no", None, "yes", "maybe", "yes", None]
    df = spark.createDataFrame(
        [(x, s, None if s is None else s == "yes", None if s is None else
          (1 if s == "yes" else 0)) for x, s in zip(a, text, strict=True)],
        "a double, s string, b boolean, n int")
    want = _numpy(a, np.array([s == "yes" for s in text]))
    for label, positive in (("s", "yes"), ("b", True), ("b", 1), ("n", 1), ("n", True)):
        got = _fit(df, label, positive_label=positive, strategy=plan)
        assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)
    for label, positive, match in (("s", 1, "holds strings"), ("n", "yes", "is numeric"),
                                   ("b", 2, "is boolean")):
        with pytest.raises(ParameterError, match=match):
            _fit(df, label, positive_label=positive, strategy=plan)


def test_string_labels_cannot_escape_the_literal(spark) -> None:
    tricky = "it's `x` \\' OR true --"
    df = spark.createDataFrame([(1.0, tricky), (2.0, "other"), (3.0, tricky)],
                               "a double, y string")
    got = _fit(df, positive_label=tricky)
    want = _numpy([1.0, 2.0, 3.0], [1, 0, 1])
    assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)


@pytest.mark.parametrize("plan", ["prefetch", "rounds"])
def test_dataframes_are_never_refused_for_values(spark, plan: str) -> None:
    """No rows, no positives, odd labels, null labels, a column of the null type: all fit
    (drop policy); only the opt-in error policy refuses a NaN feature."""
    df = spark.createDataFrame([(1.0, 1), (float("nan"), 1), (3.0, 7), (4.0, None)],
                               "a double, y int")
    frames = [df.limit(0), df.filter("y = 7"), df,
              df.selectExpr("a", "NULL AS y"), df.selectExpr("NULL AS a", "y")]
    shapes = {repr(_shape(_fit(f, strategy=plan).to_json())) for f in frames}
    assert len(shapes) == 1
    # the composition baseline's rectangle on no rows is empty (auto runs the quantile
    # box there, issue #44: a box drawn from the prior, not empty)
    assert _fit(df.limit(0), strategy=plan, method="composition").empty
    with pytest.raises(InputDataError, match="'error' invalid-rows policy"):
        _fit(df, invalid_rows="error", strategy=plan)
    validate_dataframe(df.filter("y = 7"), ["a"], "y")  # other labels: fine
    with prepare_fit(df.limit(0), features=["a"], label="y", epsilon=1.0, delta=1e-6,
                     strategy=plan, method="composition") as prepared, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert prepared.run(seed=2).empty


def test_a_uint64_or_decimal_0_column_holds_integers_on_both_engines(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Spark reads Parquet's uint64 as decimal(20,0): a fractional positive label or group
    value, which no row of such a column can equal, is refused from the schema on Spark
    as on numpy (Spark ran it: an empty rectangle, a group of no rows, for the budget)."""
    gen = np.random.default_rng(4)
    path = tmp_path / "u.parquet"
    pq.write_table(pa.table({"x": gen.normal(0, 1, 50),
                             "y": pa.array(gen.integers(0, 2, 50), pa.uint64()),
                             "g": pa.array([int(v) for v in gen.integers(1, 3, 50)],
                                           pa.decimal128(10, 0))}),
                   path)
    common = ["--input", str(path), "--epsilon", "1", "--seed", "1", "--quiet"]
    commands = {
        "label": ["fit", *common, "--features", "x", "--label", "y", "--delta", "1e-6",
                  "--positive-label", "1.5"],
        "group": ["describe", *common, "--columns", "x", "--group-by", "g", "--groups",
                  "1,2.5"]}
    for name, argv in commands.items():
        lines = {}
        for engine in ("numpy", "spark"):
            out = tmp_path / f"{name}-{engine}.json"
            capsys.readouterr()
            assert cli([*argv, "--output", str(out), "--engine", engine]) == 2
            lines[engine] = messages(capsys.readouterr().err)
            assert not out.exists()
        assert lines["spark"] == lines["numpy"] and len(lines["numpy"]) == 1, lines
        assert "holds integers" in lines["numpy"][0]
