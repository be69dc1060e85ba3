"""``dprect bounds`` and ``dprect.bounds`` on the numpy engine: private clamping bounds
from the command line and from Python.

Properties checked (small tables, fast):

* Parquet and CSV, grouped and ungrouped: the result JSON (bounds per group and column,
  guarantee, plan, coverage statement, library forms) and the ``--table`` output (CSV or
  Delta), bounds that cover the data when the plan says there are rows enough;
* the group values are a public list: unknown values in the data are dropped row-locally
  (same result as the table without those rows) and never reported; a listed group absent
  from the data is reported all the same;
* a null, NaN or ±inf value is left out of its column only;
* a grouped run is charged once in the ledger (not once per group); a released run id is
  replayed without spending;
* bad input ends with one line on stderr, exit code 2, nothing written and nothing
  reserved;
* the plan is printed before the input is read (``--plan-only``: printed, nothing else);
* the Python API gives the CLI's result for the same seed, on numpy, pandas and pyarrow
  input.
"""

from __future__ import annotations

import csv
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run

import dprect
from dprect.core.accounting import Guarantee
from dprect.core.bounds import BoundsRequest, BoundsResult, histogram, plan_bounds
from dprect.core.domains import FloatBins
from dprect.core.request import Source
from dprect.core.statistic import COVERAGE
from dprect.engines.grouped import NumpyGroupedRoute
from dprect.release.aggregate_record import bounds_record, table_rows
from dprect.release.ledger import Ledger

N = 6000
SEED = 7
#: a budget and coverage under which a few thousand rows give bounds inside the data
COMMON = ["--epsilon", "4", "--coverage", "0.9", "--seed", str(SEED)]


def _table(n: int = N, seed: int = 0) -> pa.Table:
    gen = np.random.default_rng(seed)
    return pa.table({
        "x": gen.normal(10.0, 2.0, n),
        "y": gen.exponential(50.0, n),
        "k": gen.integers(-20, 20, n),
        "g": gen.choice(["a", "b", "zz"], n, p=[0.45, 0.45, 0.10]),  # zz: not listed
    })


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bounds_cli")
    table = _table()
    pq.write_table(table, d / "t.parquet")
    pcsv.write_csv(table, d / "t.csv")
    # the same rows without the unlisted group
    pq.write_table(table.filter(np.asarray(table.column("g")) != "zz"), d / "listed.parquet")
    x = table.column("x").to_pylist()
    x[3], x[5], x[8] = None, float("nan"), float("inf")
    pq.write_table(table.set_column(0, "x", pa.array(x, pa.float64())), d / "bad_x.parquet")
    pq.write_table(table.set_column(0, "x", pa.array(["v"] * N)), d / "text_x.parquet")
    return d




def bounds_argv(data: Path, tmp: Path, *extra: str, table: str = "t.parquet",
                output: str = "bounds.json") -> list[str]:
    return ["bounds", "--input", str(data / table), "--columns", "x,y,k",
            "--output", str(tmp / output), *COMMON, *extra]


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# -- results --------------------------------------------------------------------------------
def test_ungrouped_parquet_bounds_cover_the_data(data: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(bounds_argv(data, tmp_path, "--table", str(tmp_path / "b.csv")),
                         capsys)
    assert code == 0, err
    js = json.loads((tmp_path / "bounds.json").read_text())
    for key in ("columns", "groups", "bounds", "privacy", "plan", "coverage",
                "library_forms", "seeded", "warning", "method"):
        assert key in js
    assert js["columns"] == ["x", "y", "k"] and js["groups"] == [None]
    assert js["privacy"]["epsilon"] <= 4.0 and js["privacy"]["delta"] == 0.0
    assert "statement" in js["coverage"] and js["coverage"]["coverage"] == 0.9
    table = _table()
    for row in js["bounds"]:
        col = np.asarray(table.column(row["column"]), dtype=np.float64)
        assert row["lower"] < row["upper"]
        inside = ((col >= row["lower"]) & (col <= row["upper"])).mean()
        assert 0.75 <= inside < 1.0, row  # about 0.9; the plan's slack is small at 6000
    forms = js["library_forms"]
    assert set(forms) == {"opendp", "tumult", "diffprivlib"}
    assert forms["opendp"]["x"] == [js["bounds"][0]["lower"], js["bounds"][0]["upper"]]
    assert forms["tumult"]["y"] == {"low": js["bounds"][1]["lower"],
                                    "high": js["bounds"][1]["upper"]}
    assert forms["diffprivlib"]["bounds"][0] == [b["lower"] for b in js["bounds"]]
    with open(tmp_path / "b.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["column"] for r in rows] == ["x", "y", "k"]
    assert all(r["group"] == "" for r in rows)
    assert [float(r["lower"]) for r in rows] == [b["lower"] for b in js["bounds"]]
    assert [float(r["upper"]) for r in rows] == [b["upper"] for b in js["bounds"]]
    # printed: the plan first, then the bounds, then where they went
    lines = out.splitlines()
    assert lines[0].startswith("plan: ") and "charged once" in lines[0]
    assert any(ln.startswith("x: lower ") for ln in lines)
    assert out.index("plan: ") < out.index("x: lower ") < out.index("result written")


def test_grouped_csv_reports_listed_groups_only(data: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(bounds_argv(data, tmp_path, "--group-by", "g", "--groups", "a,b,c",
                                     "--table", str(tmp_path / "b.csv"), table="t.csv"),
                         capsys)
    assert code == 0, err
    text = (tmp_path / "bounds.json").read_text()
    js = json.loads(text)
    assert js["groups"] == ["a", "b", "c"]  # c is listed but absent: reported all the same
    assert [(b["group"], b["column"]) for b in js["bounds"]] == [
        (g, c) for g in ("a", "b", "c") for c in ("x", "y", "k")]
    assert "zz" not in text and "zz" not in out  # an unlisted group is never reported
    assert set(js["library_forms"]["by_group"]) == {"a", "b", "c"}
    with open(tmp_path / "b.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["group"] for r in rows] == ["a"] * 3 + ["b"] * 3 + ["c"] * 3
    assert "zz" not in (tmp_path / "b.csv").read_text()


def test_unlisted_group_rows_are_dropped_row_locally(data: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """The same seed on the table and on the table without the unlisted group's rows:
    the same bounds (the dropped rows changed nothing)."""
    argv = ["--group-by", "g", "--groups", "a,b"]
    assert run(bounds_argv(data, tmp_path, *argv, output="all.json"), capsys)[0] == 0
    assert run(bounds_argv(data, tmp_path, *argv, table="listed.parquet",
                           output="listed.json"), capsys)[0] == 0
    a = json.loads((tmp_path / "all.json").read_text())
    b = json.loads((tmp_path / "listed.json").read_text())
    assert a["bounds"] == b["bounds"]
    # and CSV gives what Parquet gives
    assert run(bounds_argv(data, tmp_path, *argv, table="t.csv", output="csv.json"),
               capsys)[0] == 0
    assert json.loads((tmp_path / "csv.json").read_text())["bounds"] == a["bounds"]


def test_null_nan_inf_values_leave_only_their_column(tmp_path: Path) -> None:
    """A null, NaN or ±inf in x drops that row from x's histogram only."""
    table = _table(200)
    x = table.column("x").to_pylist()
    x[1], x[2], x[3] = None, float("nan"), float("-inf")
    table = table.set_column(0, "x", pa.array(x, pa.float64()))
    pq.write_table(table, tmp_path / "t.parquet")
    source = Source(str(tmp_path / "t.parquet"), ["x", "y"])
    domains = [FloatBins(), FloatBins()]
    with NumpyGroupedRoute().open(source, None, COVERAGE.spec(domains),
                                  lambda m: None) as prepared:
        hists = {cell: c.histogram() for cell, c in prepared.statistics().items()}
    clean_x = histogram(np.array([v for v in x if v is not None and math.isfinite(v)]),
                        FloatBins())
    assert np.array_equal(hists[(0, 0)].keys, clean_x.keys)
    assert np.array_equal(hists[(0, 0)].counts, clean_x.counts)
    assert hists[(0, 0)].total == 197 and hists[(0, 1)].total == 200


def test_delta_table_output(data: Path, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    from deltalake import DeltaTable

    code, _, err = run(bounds_argv(data, tmp_path, "--group-by", "g", "--groups", "a,b",
                                     "--table", str(tmp_path / "btable")), capsys)
    assert code == 0, err
    rows = DeltaTable(str(tmp_path / "btable")).to_pyarrow_table().to_pylist()
    js = json.loads((tmp_path / "bounds.json").read_text())
    assert rows == [{k: b[k] for k in ("group", "column", "lower", "upper", "rank_error")}
                    for b in js["bounds"]]
    # a second release overwrites the table (one commit), it does not append
    code, _out, err = run(bounds_argv(data, tmp_path, "--group-by", "g", "--groups", "a,b",
                                     "--table", str(tmp_path / "btable")), capsys)
    assert code == 0, err
    assert DeltaTable(str(tmp_path / "btable")).to_pyarrow_table().num_rows == 6


def test_infinite_bounds_are_written_as_strings() -> None:
    """A bound at ±inf (possible for a group with very few rows) keeps the JSON strict."""
    the_plan = plan_bounds(BoundsRequest(1.0), [FloatBins()])
    result = BoundsResult(["x"], [None], [[-math.inf]], [[math.inf]], [[0]],
                          [[FloatBins().size - 1]], [FloatBins()], the_plan.guarantee,
                          the_plan.to_json())
    record = bounds_record(result, the_plan)
    text = json.dumps(record, allow_nan=False)
    assert '"-inf"' in text and '"inf"' in text
    assert table_rows(json.loads(text)) == [{"group": None, "column": "x",
                                             "lower": -math.inf, "upper": math.inf,
                                             "rank_error": json.loads(text)["bounds"][0][
                                                 "rank_error"]}]


# -- the ledger -----------------------------------------------------------------------------
def test_grouped_run_is_charged_once(data: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    groups = ["--group-by", "g", "--groups", "a,b,c"]
    code, out, err = run(bounds_argv(data, tmp_path, *groups, "--ledger", str(ledger),
                                     "--dataset", "ds", "--run-id", "r1"), capsys)
    assert code == 0, err
    assert out.splitlines()[0].startswith("run id r1")
    g: Guarantee = plan_bounds(BoundsRequest(4.0, coverage=0.9),
                               [FloatBins()] * 3).guarantee
    status = Ledger(ledger).status("ds", runs=True)
    assert len(status.runs) == 1 and status.runs[0].status == "released"
    assert status.runs[0].method == "bounds" and status.runs[0].features == ["x", "y", "k"]
    assert status.spent.epsilon == pytest.approx(g.epsilon)  # once, not 3 times
    assert status.spent.delta == g.delta
    first = (tmp_path / "bounds.json").read_text()
    # the same run id again: the recorded result, nothing spent, input never read
    code, out, err = run(bounds_argv(data, tmp_path, *groups, "--ledger", str(ledger),
                                     "--dataset", "ds", "--run-id", "r1",
                                     table="does-not-exist.parquet", output="again.json"),
                         capsys)
    assert code == 0, err
    assert "released before" in out and "nothing was spent" in out
    assert (tmp_path / "again.json").read_text() == first
    assert Ledger(ledger).status("ds").spent.epsilon == pytest.approx(g.epsilon)


def test_fit_refuses_a_bounds_run_id(data: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A fit that reuses a run id a bounds run released: one line, exit 2, nothing
    written, nothing spent (and the bounds run's record is not replayed as a rectangle)."""
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    code, _, err = run(bounds_argv(data, tmp_path, "--ledger", str(ledger), "--dataset", "ds",
                                   "--run-id", "r1"), capsys)
    assert code == 0, err
    spent = Ledger(ledger).status("ds").spent.epsilon
    out_json = tmp_path / "fit.json"
    code, _, err = run(["fit", "--input", str(data), "--features", "x,y", "--label", "k",
                          "--epsilon", "1", "--delta", "1e-6", "--output", str(out_json),
                          "--ledger", str(ledger), "--dataset", "ds", "--run-id", "r1"],
                         capsys)
    assert code == 2 and "another kind of run" in err and len(messages(err)) == 1
    assert not out_json.exists()
    assert Ledger(ledger).status("ds").spent.epsilon == spent


@pytest.mark.parametrize(("change", "words"), [
    (["--columns", "x,y"], "columns x, y, k, this run x, y"),
    (["--epsilon", "2"], "(epsilon, delta) (4, 0) add-remove, this run (2, 0) add-remove"),
    (["--neighbouring", "replace-one"], "(epsilon, delta) (4, 0) add-remove, this run (4, 0) "
                                        "replace-one")])
def test_a_released_run_id_asked_again_with_other_parameters_is_refused(
        data: Path, tmp_path: Path, change: list[str], words: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A run id is an idempotency key for ONE run: asked again with other columns or
    another budget it was published as before — the first run's bounds, exit 0, under
    the new run's output name. Now one line naming what differs, exit 2, nothing written
    or spent; the same parameters still publish the recorded result again."""
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    same = ["--ledger", str(ledger), "--dataset", "ds", "--run-id", "r1"]
    assert run(bounds_argv(data, tmp_path, *same), capsys)[0] == 0
    spent = Ledger(ledger).status("ds").spent.epsilon
    argv = bounds_argv(data, tmp_path, *same, output="other.json")
    option, value = change
    if option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv += change
    code, out, err = run(argv, capsys)
    lines = messages(err)
    assert code == 2 and len(lines) == 1, (code, out, err)
    assert lines[0] == (f"dprect: error: run id r1 was released with other parameters "
                        f"({words}); use a new run id, or the released run's parameters "
                        "to publish its result again")
    assert not (tmp_path / "other.json").exists()
    assert Ledger(ledger).status("ds").spent.epsilon == spent
    code, out, err = run(bounds_argv(data, tmp_path, *same, output="again.json"), capsys)
    assert code == 0 and "released before" in out, err
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "bounds.json").read_bytes()


def test_cap_exceeded_spends_and_writes_nothing(data: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    code, _, err = run(bounds_argv(data, tmp_path, "--group-by", "g", "--groups", "a,b",
                                     "--ledger", str(ledger), "--dataset", "ds",
                                     "--cap-epsilon", "3", "--cap-delta", "1e-6"), capsys)
    assert code == 2 and "cap exceeded" in err and len(messages(err)) == 1
    assert not (tmp_path / "bounds.json").exists()
    assert Ledger(ledger).runs("ds") == []


# -- bad input ------------------------------------------------------------------------------
BAD = [
    (["--columns", "x,nope"], "t.parquet", "no column"),
    (["--columns", "x"], "text_x.parquet", "must be numeric"),
    (["--group-by", "nope", "--groups", "a"], "t.parquet", "no column"),
    (["--columns", "x", "--group-by", "k", "--groups", "a,b"], "t.parquet", "not a number"),
    (["--columns", "x", "--group-by", "k", "--groups", "1,1.0"], "t.parquet", "same value"),
    (["--columns", "x", "--group-by", "k", "--groups", "1,2.5"], "t.parquet",
     "the group column 'k' holds integers: group value '2.5' is not one"),
    (["--columns", "x", "--group-by", "k", "--groups", "2.5", "--select-groups",
      "--selection-epsilon", "1", "--selection-delta", "1e-6"], "t.parquet",
     "holds integers: group value '2.5' is not one"),
    (["--group-by", "g", "--groups", "a,a"], "t.parquet", "listed twice"),
    (["--group-by", "g"], "t.parquet", "PUBLIC list"),
    (["--groups", "a,b"], "t.parquet", "need --group-by"),
    (["--group-by", "g", "--groups", "a", "--groups-file", "f.txt"], "t.parquet",
     "not both"),
    (["--group-by", "g", "--groups-file", "missing.txt"], "t.parquet", "does not exist"),
    (["--grid", "floatbins:99"], "t.parquet", "bits"),
    (["--grid", "float"], "t.parquet", "FloatBins"),
    (["--coverage", "1.5"], "t.parquet", "coverage"),
    (["--epsilon", "-1"], "t.parquet", "epsilon"),
    (["--format", "delta"], "t.parquet", "needs --engine spark"),
    (["--master", "local[1]"], "t.parquet", "needs --engine spark"),
    (["--rows", "0"], "t.parquet", "rows"),
    (["--columns", "x,g"], "t.parquet", "must be numeric"),
    (["--columns", "x,x"], "t.parquet", "twice"),
    (["--columns", "x,g", "--group-by", "g", "--groups", "a"], "t.parquet",
     "also listed"),
    ([], "missing.parquet", "does not exist"),
    (["--run-id", "r"], "t.parquet", "needs a ledger"),
    # a dataset id without a ledger names nothing here (it was ignored; s39-edges)
    (["--dataset", "ds"], "t.parquet", "give a ledger path (--ledger) too"),
    # an empty listed group was skipped (s39-edges b)
    (["--group-by", "g", "--groups", "a,,b"], "t.parquet", "--groups: an empty value"),
    # s39-edges2: --columns skipped an empty entry silently
    (["--columns", "x,y,"], "t.parquet", "--columns: an empty name"),
]


@pytest.mark.parametrize(("extra", "table", "message"), BAD)
def test_bad_input_one_line_exit_2_nothing_written_nothing_reserved(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
        table: str, message: str) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    argv = bounds_argv(data, tmp_path, "--table", str(tmp_path / "b.csv"), table=table)
    if "--run-id" not in extra and "--dataset" not in extra:
        argv += ["--ledger", str(ledger), "--dataset", "ds"]
    code, out, err = run([*argv, *extra], capsys)
    assert code == 2, (out, err)
    lines = messages(err)
    assert len(lines) == 1 and message in lines[0], err
    assert not (tmp_path / "bounds.json").exists() and not (tmp_path / "b.csv").exists()
    assert not list(tmp_path.glob(".*.tmp"))
    assert Ledger(ledger).runs("ds") == []  # nothing reserved


def test_bad_outputs_are_refused_before_reading(data: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "notdelta").mkdir()
    (tmp_path / "notdelta" / "x.txt").write_text("x")
    for extra, message in ((["--table", str(tmp_path / "notdelta")], "no Delta table"),
                           (["--table", str(tmp_path / "bounds.json")], "same path"),
                           (["--table", str(data / "t.parquet")], "same path")):
        code, out, err = run(bounds_argv(data, tmp_path, *extra), capsys)
        assert code == 2 and message in err, err
        assert not (tmp_path / "bounds.json").exists()
    code, out, err = run(bounds_argv(data, tmp_path, output="folder"), capsys)
    assert code == 2 and "is a folder" in err
    assert "plan:" not in out  # refused before the plan is printed and the input read


def test_groups_file_gives_the_flag_result(data: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "groups.txt").write_text("a\n\n  b \n")
    assert run(bounds_argv(data, tmp_path, "--group-by", "g", "--groups-file",
                           str(tmp_path / "groups.txt"), output="file.json"), capsys)[0] == 0
    assert run(bounds_argv(data, tmp_path, "--group-by", "g", "--groups", "a,b",
                           output="flag.json"), capsys)[0] == 0
    assert (tmp_path / "file.json").read_text() == (tmp_path / "flag.json").read_text()


def test_a_groups_file_saved_by_windows_tools_gives_the_flag_result(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Excel's and Notepad's "UTF-8" files start with a byte-order mark and end lines with
    # CRLF: the mark was read as part of the first value ('\ufeffa'), a group of no rows,
    # released and charged instead of group a
    (tmp_path / "groups.txt").write_bytes(b"\xef\xbb\xbfa\r\nb\r\n")
    assert run(bounds_argv(data, tmp_path, "--group-by", "g", "--groups-file",
                           str(tmp_path / "groups.txt"), output="file.json"), capsys)[0] == 0
    assert run(bounds_argv(data, tmp_path, "--group-by", "g", "--groups", "a,b",
                           output="flag.json"), capsys)[0] == 0
    assert (tmp_path / "file.json").read_text() == (tmp_path / "flag.json").read_text()


def test_a_groups_file_that_is_not_utf8_or_repeats_a_value_says_what_to_do(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    groups = tmp_path / "groups.txt"
    for body, words in [(b"a\nb\xe9\n", "it is not UTF-8 text; save it as UTF-8, one group "
                                        "value per line"),
                        (b"a\nb\n\na\n", f"group value 'a' is listed twice (groups file "
                                         f"{str(groups)!r}): list each value once")]:
        groups.write_bytes(body)
        code, _, err = run(bounds_argv(data, tmp_path, "--group-by", "g", "--groups-file",
                                       str(groups)), capsys)
        lines = messages(err)
        assert code == 2 and len(lines) == 1 and words in lines[0], err
        assert not (tmp_path / "bounds.json").exists()


def test_numeric_group_column_reads_listed_text(data: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(["bounds", "--input", str(data / "t.parquet"), "--columns", "x",
                          "--group-by", "k", "--groups=-3,0,5.0,99",
                          "--output", str(tmp_path / "k.json"), *COMMON], capsys)
    assert code == 0, err
    js = json.loads((tmp_path / "k.json").read_text())
    assert js["groups"] == ["-3", "0", "5.0", "99"]


# -- the plan -------------------------------------------------------------------------------
def test_plan_only_prints_the_plan_and_touches_nothing(data: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    code, out, err = run(["bounds", "--input", str(tmp_path / "missing.parquet"),
                          "--columns", "x,y", "--epsilon", "1", "--rows", "100000",
                          "--output", str(tmp_path / "b.json"), "--plan-only"], capsys)
    assert code == 0, err
    assert "FloatBins(bits=12)" in out and "guarantee (1" in out and "rows needed" in out
    assert "clip/side at 100,000" in out
    assert out.splitlines()[2].startswith("x ")
    assert not (tmp_path / "b.json").exists()


# -- the Python API -------------------------------------------------------------------------
def test_api_matches_the_cli_on_every_input_kind(data: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert run(bounds_argv(data, tmp_path, "--group-by", "g", "--groups", "a,b"),
               capsys)[0] == 0
    cli = json.loads((tmp_path / "bounds.json").read_text())
    table = _table()
    kwargs = dict(epsilon=4.0, coverage=0.9, seed=SEED, group_by="g", groups=["a", "b"])
    from_arrow = quiet(dprect.bounds, table, ["x", "y", "k"], **kwargs)
    from_pandas = quiet(dprect.bounds, table.to_pandas(), ["x", "y", "k"], **kwargs)
    X = np.column_stack([np.asarray(table.column(c), dtype=np.float64)
                         for c in ("x", "y", "k")])
    from_numpy = quiet(dprect.bounds, X, ["x", "y", "k"], epsilon=4.0, coverage=0.9,
                       seed=SEED, group_by=np.asarray(table.column("g")), groups=["a", "b"])
    for result in (from_arrow, from_pandas, from_numpy):
        assert result.seeded and result.groups == ["a", "b"]
        assert [[b for b in row] for row in result.lower] == [
            [b["lower"] for b in cli["bounds"] if b["group"] == g] for g in ("a", "b")]
        assert [[b for b in row] for row in result.upper] == [
            [b["upper"] for b in cli["bounds"] if b["group"] == g] for g in ("a", "b")]
    assert from_arrow.library_forms("a")["opendp"]["x"] == (
        from_arrow.lower[0][0], from_arrow.upper[0][0])


def test_api_refusals() -> None:
    table = _table(100)
    with pytest.raises(dprect.ParameterError, match="PUBLIC list"):
        dprect.bounds(table, ["x"], epsilon=1.0, group_by="g")
    with pytest.raises(dprect.ParameterError, match="groups needs group_by"):
        dprect.bounds(table, ["x"], epsilon=1.0, groups=["a"])
    with pytest.raises(dprect.InputDataError, match="no column"):
        dprect.bounds(table, ["nope"], epsilon=1.0)
    with pytest.raises(dprect.InputDataError, match="must be numeric"):
        dprect.bounds(table, ["g"], epsilon=1.0)
    for select in (False, True):  # a fraction no row of an integer column can hold
        with pytest.raises(dprect.ParameterError, match=r"'k' holds integers: .*'2\.5'"):
            dprect.aggregate(table, ["x"], statistics=["coverage"], epsilon=1.0,
                             group_by="k", groups=[1, 2.5], select_groups=select,
                             selection_epsilon=1.0 if select else None,
                             selection_delta=1e-6 if select else None)
    result = quiet(dprect.bounds, table, epsilon=1.0, group_by="g", groups=["a"], seed=1)
    assert result.columns == ["x", "y", "k"]  # every column but the group column


def test_library_forms_feed_opendp() -> None:
    """The OpenDP form goes straight into OpenDP's clamp and a DP sum (skipped where OpenDP
    is not installed: it is not a dependency)."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    rng = np.random.default_rng(3)
    X = rng.lognormal(size=(20_000, 2))
    result = quiet(dprect.bounds, X, columns=["a", "b"], epsilon=2.0, seed=5)
    lower, upper = result.library_forms()["opendp"]["a"]
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance())
    clamp = space >> dp.t.then_clamp(bounds=(lower, upper))
    clamped = clamp(X[:, 0].tolist())
    assert min(clamped) >= lower and max(clamped) <= upper
    dp_sum = clamp >> dp.t.then_sum() >> dp.m.then_laplace(scale=upper - lower)
    assert 0 < dp_sum.map(1) < float("inf")  # OpenDP accepts the bounds and prices them
    assert np.isfinite(dp_sum(X[:, 0].tolist()))
