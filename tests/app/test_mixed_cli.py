"""``dprect aggregate --statistics mean,median,p90`` and ``jobs/aggregate.py`` with a list
of several mechanisms' statistics (issue #41; docs/privacy.md §11b) on the numpy engine
(the Spark run is tests/spark/test_aggregate_spark.py):

* the command's record for a seed is the Python API's (:func:`dprect.aggregate` drawn on
  the same table, :func:`~dprect.release.aggregate_record.mixed_record`), its table one row
  per (group, column) with every asked statistic, its printout each part's plan and the
  composition;
* the ledger charges the run ONCE as ``describe+quantiles`` for (ε, 0); the same run id
  replays the record; a preset refuses it under its run id by what it is;
* the job (``statistics: mean,median,p90``) writes the command's result;
* bad input (colliding outputs, a delta, a plot, another mechanism's option) ends with one
  line, exit code 2, nothing written or reserved (tests/app/test_aggregate_cli.py's BAD).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_run import job_argv, run
from golden_cases import INPUT, SEED

import dprect
from dprect.engines.grouped import NumpyGroupedRoute
from dprect.release.aggregate_record import mixed_columns, mixed_record
from dprect.release.ledger import Ledger

REPO = Path(__file__).resolve().parents[2]
ASKED = "mean,median,p90"
ARGS = ["--columns", "x,y", "--group-by", "g", "--groups", "a,b,c", "--epsilon", "2",
        "--statistics", ASKED, "--seed", SEED]


def _cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, *extra: str
         ) -> tuple[str, dict, str]:
    out = tmp_path / f"{name}.json"
    code, printed, err = run(["aggregate", "--input", str(INPUT), *ARGS, "--output",
                              str(out), *extra], capsys)
    assert code == 0, err
    return printed, json.loads(out.read_text()), err


def test_the_command_draws_what_the_python_api_draws_for_a_seed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pa_csv = pytest.importorskip("pyarrow.csv")
    table = tmp_path / "t.csv"
    printed, record, _ = _cli(tmp_path, capsys, "cli", "--table", str(table))
    # a CSV's types are inferred from its values, so the command line never releases
    # its quantiles as integers; pyarrow's reader infers int64 for a whole column, which
    # the API takes as declared: the table is cast to float64 to ask the same release
    read = pa_csv.read_csv(INPUT)
    pa = pytest.importorskip("pyarrow")
    read = read.cast(pa.schema([pa.field(f.name, pa.float64()) if pa.types.is_integer(f.type)
                                else f for f in read.schema]))
    api = dprect.aggregate(read, ["x", "y"], statistics=ASKED.split(","),
                           epsilon=2, group_by="g", groups=["a", "b", "c"], seed=int(SEED))
    assert record == json.loads(json.dumps(mixed_record(api)))
    assert record["method"] == "describe+quantiles"
    assert [(r["group"], r["column"]) for r in record["results"]] == [
        (g, c) for g in "abc" for c in "xy"]
    rows = list(csv.DictReader(table.open()))
    assert tuple(rows[0]) == mixed_columns(["describe", "quantiles"])
    for row, released in zip(rows, record["results"], strict=True):
        for key in ("mean", "median", "p90", "lower", "upper"):
            assert float(row[key]) == released[key]
        assert row["count"] == "" and row["p10"] == ""  # not asked
    plan = [line for line in printed.splitlines() if line.startswith("plan: ")]
    assert any(line.startswith("plan: DP mean") for line in plan)
    assert any(line.startswith("plan: private quantiles median, p90") for line in plan)
    assert plan[-1].startswith("plan: composition of 2 mechanisms") and \
        "describe 1, quantiles 1" in plan[-1] and "guarantee (2, 0)-DP" in plan[-1]


def test_the_ledger_charges_once_replays_and_a_preset_refuses_the_record(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    common = ["--ledger", str(ledger), "--dataset", "ds", "--run-id", "r1"]
    _, first, _ = _cli(tmp_path, capsys, "a", *common)
    printed, again, _ = _cli(tmp_path, capsys, "b", *common)
    assert "released before" in printed and again == first
    assert "median" in printed  # the summary of the replayed record
    runs = Ledger(str(ledger)).runs("ds")
    assert len(runs) == 1
    assert runs[0].method == "describe+quantiles"
    assert (runs[0].epsilon, runs[0].delta) == (2.0, 0.0)
    code, _, err = run(["describe", "--input", str(INPUT), "--columns", "x,y", "--epsilon",
                        "2", "--output", str(tmp_path / "d.json"), *common], capsys)
    assert code == 2 and "statistics of several mechanisms" in err, err
    assert not (tmp_path / "d.json").exists()


def test_the_job_runs_a_mixed_list_and_writes_the_commands_result(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "jobs"))
    import aggregate as job

    argv = job_argv(REPO / "conf" / "aggregate.yaml", f"input={INPUT}", "format=csv",
                    "columns=[x,y]", "group_by=g", "groups=[a,b,c]", f"statistics={ASKED}",
                    "epsilon=2", f"output={tmp_path / 'job.json'}",
                    f"table={tmp_path / 'job.csv'}", f"seed={SEED}")
    assert job.main(argv, route=NumpyGroupedRoute()) == 0
    _cli(tmp_path, capsys, "cli", "--table", str(tmp_path / "cli.csv"))
    assert (tmp_path / "job.json").read_text() == (tmp_path / "cli.json").read_text()
    assert (tmp_path / "job.csv").read_text() == (tmp_path / "cli.csv").read_text()


def test_a_variance_part_is_counted_with_squares_and_has_its_columns(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``variance,median``: the query part's spec counts the sums of squares its plan
    needs (``run_spec``, shared with the Python API), and the table has the on-ask
    ``variance`` column, filled, as the record's rows do."""
    pa_csv = pytest.importorskip("pyarrow.csv")
    out, table = tmp_path / "v.json", tmp_path / "v.csv"
    code, _, err = run(["aggregate", "--input", str(INPUT), "--columns", "x", "--epsilon",
                        "2", "--statistics", "variance,median", "--seed", SEED, "--output",
                        str(out), "--table", str(table)], capsys)
    assert code == 0, err
    record = json.loads(out.read_text())
    api = dprect.aggregate(pa_csv.read_csv(INPUT), ["x"], statistics=["variance", "median"],
                           epsilon=2, seed=int(SEED))
    assert record == json.loads(json.dumps(mixed_record(api)))
    rows = list(csv.DictReader(table.open()))
    assert "variance" in rows[0] and rows[0]["variance"] != "" and rows[0]["median"] != ""
    assert float(rows[0]["variance"]) == record["results"][0]["variance"]
