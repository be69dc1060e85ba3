"""A grouped run whose temporary folder cannot take a file is refused before anything is
read or reserved (s42 audit, "every output checked writable before the budget is
reserved"). Its spool of released rows (dprect/release/row_spool.py) is made in that
folder once the budget is reserved; before the check, a folder found unusable only then
left the run charged (a ``reserve`` and a ``fail`` row) with nothing released. The suite
runs as root, which writes anywhere, so the unusable folder is simulated by a path under
a regular file (``NotADirectoryError`` for root too)."""

from __future__ import annotations

import tempfile

import pytest
from cli_run import messages, run
from sink_table import sink_table

from dprect.release.ledger import Ledger

ARGV = ["--columns", "f0,f1", "--group-by", "g", "--groups", "a,b", "--epsilon", "1",
        "--seed", "3"]


@pytest.mark.parametrize("command", [
    ["describe"], ["bounds"], ["aggregate", "--statistics", "median"]])
def test_an_unusable_temporary_folder_is_refused_before_the_charge(
        command, tmp_path, capsys, monkeypatch) -> None:
    data = sink_table(tmp_path)
    led = tmp_path / "ledger"
    Ledger(led).init()
    (tmp_path / "a_file").write_text("x")
    out = tmp_path / "out"
    argv = [*command, *ARGV, "--input", str(data), "--output", str(out / "r.json"),
            "--ledger", str(led), "--dataset", "ds", "--run-id", "r1"]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "a_file" / "tmp"))
    code, printed, err = run(argv, capsys)
    lines = messages(err)
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("dprect: error: the temporary folder "), lines
    assert "(Not a directory)" in lines[0] and "nothing was read or charged" in lines[0]
    assert "run id" not in printed  # the run never started
    assert Ledger(led).events("ds") == []
    assert not out.exists()

    monkeypatch.setattr(tempfile, "tempdir", None)  # a usable folder: the same run runs
    code, _, err = run(argv, capsys)
    assert code == 0, err
    assert [e["event"] for e in Ledger(led).events("ds")] == ["reserve", "release"]
