"""A CSV input through Spark Connect is read by the one CSV rule (docs/operations.md,
"CSV"): the same file gives the numpy engine's output for a seed — a group holding bytes
that are not UTF-8 included — and a malformed one is refused in one line before the
charge, with no ledger row, as on a classic session. The client runs as a child process
(a Connect session switches pyspark into Connect mode for its whole process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from connect_server import client_env

from dprect.engines.arrow_input import read_table
from dprect.engines.input_errors import unreadable_input
from dprect.release.ledger import Ledger
from tests.app.test_csv_rows import MALFORMED
from tests.cli_run import messages, run

pytestmark = pytest.mark.connect

SELECT = ["--select-groups", "--selection-epsilon", "1", "--selection-delta", "1e-6"]


#: ``dprect ARGV`` with the CSV input removed after its schema was read, before the
#: Spark engine's row check (a file gone between listing and reading)
REMOVED = """
import os, sys
from dprect.app.cli import main
from dprect.engines.spark import source
real = source._check_csv_rows
def gone(df, path, columns):
    os.remove(path)
    return real(df, path, columns)
source._check_csv_rows = gone
sys.exit(main(sys.argv[1:]))
"""


def _child(args: list[str], cwd: Path, code: str | None = None
           ) -> subprocess.CompletedProcess[str]:
    start = ["-m", "dprect"] if code is None else ["-c", code]
    return subprocess.run([sys.executable, *start, *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=client_env())


def _csv(path: Path) -> Path:
    """Groups ``ok`` and the bytes ``\\xffbad`` (every third row), a quoted group holding
    a line end, a numeric column ``x``."""
    lines = [b"g,x"]
    for i in range(900):
        key = b"\xffbad" if i % 3 == 0 else b'"o\nk"' if i % 3 == 1 else b"ok"
        lines.append(b"%s,%d.5" % (key, i % 17 - 8))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_a_csv_input_through_connect_gives_the_numpy_output(
        connect_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _csv(tmp_path / "t.csv")
    options = ["aggregate", "--input", str(data), "--columns", "x", "--statistics",
               "count,mean", "--epsilon", "1", "--group-by", "g", *SELECT, "--seed", "4",
               "--quiet"]
    code, _, err = run([*options, "--output", str(tmp_path / "numpy.json")], capsys)
    assert code == 0, err
    done = _child([*options, "--engine", "spark", "--remote", connect_url, "--output",
                   str(tmp_path / "connect.json")], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "connect.json").read_bytes() == (tmp_path / "numpy.json").read_bytes()
    assert b"\\ufffdbad" in (tmp_path / "numpy.json").read_bytes()


def test_a_malformed_csv_through_connect_is_refused_before_the_charge(
        connect_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    path = tmp_path / "t.csv"
    path.write_text(MALFORMED["extra"])
    with pytest.raises(Exception) as on_numpy:
        read_table(path, ["x", "g"])
    out = tmp_path / "r.json"
    done = _child(["aggregate", "--input", str(path), "--columns", "x", "--group-by", "g",
                   "--groups", "a,b", "--statistics", "count", "--epsilon", "1",
                   "--output", str(out), "--ledger", str(ledger), "--dataset", "ds",
                   "--engine", "spark", "--remote", connect_url, "--quiet"], tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert messages(done.stderr) == [f"dprect: error: {on_numpy.value}"]
    assert Ledger(ledger).events("ds") == [] and not out.exists()


def test_a_csv_file_gone_before_the_row_check_through_connect_is_not_malformed(
        connect_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    path = _csv(tmp_path / "t.csv")
    out = tmp_path / "r.json"
    done = _child(["aggregate", "--input", str(path), "--columns", "x", "--group-by", "g",
                   "--groups", "ok", "--statistics", "count", "--epsilon", "1",
                   "--output", str(out), "--ledger", str(ledger), "--dataset", "ds",
                   "--engine", "spark", "--remote", connect_url, "--quiet"], tmp_path,
                  REMOVED)
    assert done.returncode == 2, done.stderr[-3000:]
    assert messages(done.stderr) == [f"dprect: error: {unreadable_input(path, 'csv')}"]
    assert Ledger(ledger).events("ds") == [] and not out.exists()
