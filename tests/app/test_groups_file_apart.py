"""A groups file is read as PUBLIC text: its lines are released as group names, and a
refusal of them quotes a line ("group value '…' is listed twice"). One that is the input
itself — by its path, or by a hard link under another name — or a file inside the input's
folder (a Delta table's log holds each column's minima and maxima) would put rows of the
data there. Main read the file first: ``--input t.csv --groups-file t.csv`` on a table with
a repeated row printed that row in its refusal (the same-path check came later), and a
file inside the input's folder was read as groups. Now both are refused before the file
is read, from the paths alone (sinks.check_public_read), in one line, exit 2, nothing
written or charged — the command's run, its ``--plan-only`` and the job alike."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dprect.engines.grouped import NumpyGroupedRoute
from tests.cli_run import job_argv, messages, run

SECRET = "secret-row-Q8"
REPO = Path(__file__).resolve().parents[2]


def _table(tmp_path: Path) -> Path:
    """A CSV table with a repeated row (a groups file reading it lists that line twice)."""
    path = tmp_path / "data.csv"
    path.write_text(f"x,g\n1.5,{SECRET}\n2.5,b\n1.5,{SECRET}\n")
    return path


def _argv(data: Path, groups_file: Path, out: Path, *extra: str) -> list[str]:
    return ["aggregate", "--input", str(data), "--columns", "x", "--statistics",
            "count,mean", "--epsilon", "1", "--group-by", "g", "--groups-file",
            str(groups_file), "--output", str(out), "--quiet", *extra]


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], out: Path) -> str:
    code, stdout, err = run(argv, capsys)
    lines = messages(err)
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert SECRET not in stdout + err
    assert not out.exists()
    return lines[0]


@pytest.mark.parametrize("extra", [[], ["--select-groups", "--selection-epsilon", "1",
                                        "--selection-delta", "1e-6", "--plan-only"]],
                         ids=["run", "plan-only"])
def test_the_input_as_groups_file_is_refused_before_a_line_of_it_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]) -> None:
    data, out = _table(tmp_path), tmp_path / "o.json"
    line = _refused(capsys, _argv(data, data, out, *extra), out)
    assert line == "dprect: error: --input and --groups-file are the same path"


def test_a_hard_link_to_the_input_is_the_same_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, out = _table(tmp_path), tmp_path / "o.json"
    link = tmp_path / "groups.txt"
    os.link(data, link)
    line = _refused(capsys, _argv(data, link, out), out)
    assert line == ("dprect: error: --input and --groups-file are the same file "
                    "(a hard link)")


def test_a_groups_file_inside_the_input_folder_is_refused_with_a_ledger_untouched(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "table"
    folder.mkdir()
    pq.write_table(pa.table({"x": [1.5, 2.5], "g": ["a", "b"]}), folder / "part-0.parquet")
    inside = folder / "notes.txt"  # text among the table's files: read as data by Spark
    inside.write_text(f"{SECRET}\n{SECRET}\n")
    ledger, out = tmp_path / "ledger", tmp_path / "o.json"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    before = sorted(p.name for p in (ledger / "_delta_log").iterdir())
    line = _refused(capsys, _argv(folder, inside, out, "--ledger", str(ledger),
                                  "--dataset", "ds"), out)
    assert line == (f"dprect: error: --groups-file {str(inside)!r} lies inside --input "
                    f"{str(folder)!r}: a file of public values must lie apart from the data")
    assert sorted(p.name for p in (ledger / "_delta_log").iterdir()) == before


def test_a_groups_file_beside_the_input_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, out = _table(tmp_path), tmp_path / "o.json"
    listed = tmp_path / "groups.txt"
    listed.write_text("b\n")
    code, _, err = run(_argv(data, listed, out), capsys)
    assert code == 0 and out.exists(), err


def test_the_job_refuses_its_input_as_groups_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "jobs"))
    import aggregate as job

    data, out = _table(tmp_path), tmp_path / "job.json"
    argv = job_argv(REPO / "conf" / "aggregate.yaml", f"input={data}", "format=csv",
                    "columns=[x]", "group_by=g", "groups=null", f"groups_file={data}",
                    "table=null", f"output={out}")
    capsys.readouterr()
    assert job.main(argv, route=NumpyGroupedRoute()) == 2
    err = capsys.readouterr().err
    lines = messages(err)
    assert lines == ["aggregate: error: aggregate.input and aggregate.groups_file are the "
                     "same path"], err
    assert SECRET not in err and not out.exists()
