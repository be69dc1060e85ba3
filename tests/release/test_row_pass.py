"""One read of a released record's table rows for every output (issue #42,
dprect/release/row_pass.py): the stdout summary of a large release, its plot and its
table (CSV, Parquet or Delta) are fed by ONE read of the record's rows — each added its
reader, then the rows were read once — and each output is what it is on its own: the
table holds the record's table rows, the plot is the figure drawn from the record alone,
the summary its overview. A replay publishes from one read too. (A spooled record's rows
go through the same pass: tests/spark/test_streamed_sinks.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run

from dprect.release import aggregate_record
from dprect.release.aggregate_plot import png, render_describe_figure
from dprect.release.aggregate_record import overview_lines, table_rows

GROUPS = 40  # 80 cells: past LISTED_CELLS, the summary's overview reads every row


def _data(tmp_path: Path) -> Path:
    gen = np.random.default_rng(3)
    n = 6000
    path = tmp_path / "many.parquet"
    pq.write_table(pa.table({"x": gen.normal(10.0, 2.0, n), "y": gen.exponential(5.0, n),
                             "g": [f"g{i}" for i in gen.integers(0, GROUPS, n)]}), path)
    return path


@pytest.fixture()
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per read of a record's rows (every reader goes through row_blocks)."""
    seen: list[int] = []
    real = aggregate_record.row_blocks

    def counted(rows):  # type: ignore[no-untyped-def]
        seen.append(len(rows))
        return real(rows)

    monkeypatch.setattr(aggregate_record, "row_blocks", counted)
    return seen


@pytest.mark.parametrize("table", ["t.csv", "t.parquet", "delta"])
def test_the_summary_the_plot_and_the_table_share_one_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], reads: list[int],
        table: str) -> None:
    if table == "delta":
        pytest.importorskip("deltalake")
    data, out_path = _data(tmp_path), tmp_path / "d.json"
    table_path, plot = tmp_path / table, tmp_path / "d.png"
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    argv = ["describe", "--input", str(data), "--columns", "x,y", "--epsilon", "2",
            "--seed", "5", "--group-by", "g", "--groups",
            ",".join(f"g{i}" for i in range(GROUPS)), "--output", str(out_path),
            "--table", str(table_path), "--plot", str(plot), "--ledger", str(ledger),
            "--dataset", "ds", "--run-id", "r1"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert reads == [2 * GROUPS]  # one read, for the summary, the plot and the table
    record = json.loads(out_path.read_text())
    for line in overview_lines(record):
        assert line in out
    assert plot.read_bytes() == png(render_describe_figure(record, title="ds"))
    want = table_rows(record)
    if table == "t.csv":
        got = table_path.read_text().splitlines()
        assert len(got) == 1 + len(want)
        assert [line.split(",")[:2] for line in got[1:]] == [
            [r["group"], r["column"]] for r in want]
    else:
        if table == "delta":
            from deltalake import DeltaTable

            rows = DeltaTable(str(table_path)).to_pyarrow_table().to_pylist()
        else:
            rows = pq.read_table(table_path).to_pylist()
        assert rows == [{k: r[k] for k in rows[0]} for r in want]
    reads.clear()
    table_path.rename(tmp_path / "first")
    plot.unlink()
    code, out, err = run(argv, capsys)  # a replay: the recorded record, one read again
    assert code == 0 and "released before" in out, err
    assert reads == [2 * GROUPS]
    assert plot.read_bytes() == png(render_describe_figure(record, title="ds"))


def test_a_write_failing_during_the_read_leaves_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A table whose file fails while the rows are read (here: the disk full at its first
    block): no output is written — the table's temporary file is removed, the plot and the
    JSON never staged — and the run says so in one line."""
    import errno

    from dprect.release import aggregate_table

    def full(self, rows):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "full")

    monkeypatch.setattr(aggregate_table.CsvFeed, "__call__", full)
    data = _data(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code, _, err = run(["describe", "--input", str(data), "--columns", "x,y", "--epsilon",
                        "2", "--group-by", "g", "--groups",
                        ",".join(f"g{i}" for i in range(GROUPS)), "--output",
                        str(out_dir / "d.json"), "--table", str(out_dir / "t.csv"),
                        "--plot", str(out_dir / "d.png")], capsys)
    assert code == 2 and "no output was written" in err, err
    # the run draws before it writes: about 3 s with numba's cache cold (0.5 s warm), so
    # a loaded machine may show the heartbeat (every 6 s) first: progress, not a line
    lines = messages(err)
    assert len(lines) == 1 and "No space left" in lines[0], err
    assert list(out_dir.iterdir()) == []
