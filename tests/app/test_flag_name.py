"""One word for one concept: the small-group flag (a cell's released count below the rows
its statistics need) is ``below_row_need`` in every output of every mix of statistics —
describe's, the quantiles', a mixed run's — in the JSON record (and each part's), the
table (CSV, Parquet), the summary, the plan printout, the ledger and the plot's text; no
output says ``below_rows_needed`` (the quantiles' name for it until session 49). Main
named it ``below_row_need`` for describe and ``below_rows_needed`` for the quantiles, so a
table of ``mean,median`` had two columns for one concept.

A record made before (its quantile rows under the former name) still reads: its table and
lines carry the flag as released, under the one name."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_run import run
from golden_cases import INPUT, SEED

from dprect.release.aggregate_record import summary_lines, table_rows

#: the one name (dprect.core.intervals.BELOW_ROW_NEED), and the one no output may carry
BELOW_ROW_NEED, FORMER = "below_row_need", "below_rows_needed"
#: the describe preset's statistics, the quantiles', both (a mixed run)
MIXES = ("bounds,count,sum,mean", "p10,median", "count,mean,median")


def _texts(*paths: Path) -> str:
    """Every file under ``paths`` (a file, or a folder's files) as text (bytes decoded
    leniently: Parquet's schema names are plain ASCII in it)."""
    out = []
    for p in paths:
        for f in ([p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file())):
            out.append(f.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


@pytest.mark.parametrize("statistics", MIXES)
def test_every_mix_of_statistics_names_the_flag_one_way(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], statistics: str) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    out, table, parquet = tmp_path / "r.json", tmp_path / "t.csv", tmp_path / "t.parquet"
    printed = ""
    for sink, run_id in ((table, "r1"), (parquet, "r2")):
        code, stdout, stderr = run(
            ["aggregate", "--input", str(INPUT), "--columns", "x,y", "--group-by", "g",
             "--groups", "a,b,c", "--epsilon", "1", "--statistics", statistics,
             "--seed", SEED, "--output", str(out), "--table", str(sink),
             "--ledger", str(ledger), "--dataset", "ds", "--run-id", run_id], capsys)
        assert code == 0, stderr
        printed += stdout + stderr
    record = json.loads(out.read_text())
    for rows in [record["results"], *(p["results"] for p in record.get("parts", {})
                                      .values())]:
        assert all(BELOW_ROW_NEED in r and FORMER not in r for r in rows)
    header = next(csv.reader(table.open()))
    assert header.count(BELOW_ROW_NEED) == 1 and header[-1] == BELOW_ROW_NEED, header
    schema = pq.read_schema(parquet)
    assert schema.names.count(BELOW_ROW_NEED) == 1 and schema.names[-1] == BELOW_ROW_NEED
    assert str(schema.field(BELOW_ROW_NEED).type) == "bool"
    assert [r[BELOW_ROW_NEED] for r in table_rows(record)] == \
        [None if c == "" else c == "true" for c in
         (r[BELOW_ROW_NEED] for r in csv.DictReader(table.open()))]
    assert FORMER not in _texts(out, table, ledger) + printed


def test_a_mixed_row_is_flagged_where_any_part_flags_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The describe part asks no count (its flag: empty), the quantiles' part flags its
    cells: the run's row carries the quantiles' flag, once."""
    out = tmp_path / "r.json"
    code, _, stderr = run(["aggregate", "--input", str(INPUT), "--columns", "x",
                           "--group-by", "g", "--groups", "a,b,nope", "--epsilon", "1",
                           "--statistics", "mean,median", "--seed", SEED,
                           "--output", str(out)], capsys)
    assert code == 0, stderr
    record = json.loads(out.read_text())
    describe, quantiles = (record["parts"][m]["results"] for m in ("describe", "quantiles"))
    assert all(r[BELOW_ROW_NEED] is None for r in describe)
    assert [r[BELOW_ROW_NEED] for r in record["results"]] == \
        [r[BELOW_ROW_NEED] for r in quantiles]
    assert any(r[BELOW_ROW_NEED] for r in quantiles)  # the group without rows


def test_a_quantiles_record_of_the_former_name_reads_under_the_one_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    code, _, stderr = run(["aggregate", "--input", str(INPUT), "--columns", "x",
                           "--group-by", "g", "--groups", "a,nope", "--epsilon", "1",
                           "--statistics", "median", "--seed", SEED,
                           "--output", str(out)], capsys)
    assert code == 0, stderr
    record = json.loads(out.read_text())
    flags = [r[BELOW_ROW_NEED] for r in record["results"]]
    assert True in flags
    old = json.loads(out.read_text().replace(f'"{BELOW_ROW_NEED}"', f'"{FORMER}"'))
    assert [r[BELOW_ROW_NEED] for r in table_rows(old)] == flags
    assert all(FORMER not in r for r in table_rows(old))
    assert summary_lines(old) == summary_lines(record)


def test_the_quantiles_plot_and_plan_name_the_flag_one_way(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    from dprect.release.quantile_plot import quantiles_figure

    out = tmp_path / "r.json"
    code, printed, stderr = run(["aggregate", "--input", str(INPUT), "--columns", "x",
                                 "--group-by", "g", "--groups", "a,nope", "--epsilon", "1",
                                 "--statistics", "median,p90", "--seed", SEED,
                                 "--output", str(out)], capsys)
    assert code == 0, stderr
    assert f"flagged {BELOW_ROW_NEED}, all its quantiles" in printed
    fig, _ = quantiles_figure(json.loads(out.read_text()))
    texts = " ".join(t.get_text() for t in [*fig.texts, *(t for ax in fig.axes
                                                          for t in ax.texts)])
    assert BELOW_ROW_NEED in texts and FORMER not in texts + printed
