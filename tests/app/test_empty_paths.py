"""An empty path option — what ``--output "$OUT"`` gives when ``OUT`` is unset — is refused
in one line naming the option and what to give, before anything is read, reserved or
written. To the operating system an empty path is the current folder: before the check
``--input ''`` read the working folder as a Parquet folder (and was refused naming one of
its files), ``--output ''`` was refused as an output that "contains" the input, and
``dprect budget show --ledger ''`` called the working folder a damaged ledger."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import messages, run
from pin_data import cli_args, write_parquet

from dprect.release.ledger import Ledger


def _listing(folder: Path) -> list[str]:
    return sorted(f"{p.relative_to(folder)}:{p.stat().st_size}" for p in folder.rglob("*"))


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder holds the input and an initialised ledger, as a user's might."""
    monkeypatch.chdir(tmp_path)
    write_parquet(tmp_path)
    Ledger(tmp_path / "ledger").init()
    return tmp_path


def _refused(place: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    before = _listing(place)
    code, out, err = run(argv, capsys)
    lines = messages(err)
    assert code == 2 and len(lines) == 1, (code, out, err)
    assert "plan:" not in out  # nothing planned, nothing read
    assert _listing(place) == before  # nothing written
    assert Ledger(place / "ledger").events("ds") == []
    return lines[0]


BOUNDS = ["bounds", "--input", "demo_slice.parquet", "--columns", "f0,f1", "--epsilon", "1",
          "--seed", "3"]


@pytest.mark.parametrize(("option", "given"), [("--output", ""), ("--table", ""),
                                               ("--output", "  "), ("--ledger", "")])
def test_an_empty_output_or_ledger_path_is_refused_naming_the_option(
        place: Path, option: str, given: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*BOUNDS, "--output", "b.json", "--table", "b.csv", "--ledger", "ledger",
            "--dataset", "ds"]
    argv[argv.index(option) + 1] = given
    line = _refused(place, argv, capsys)
    assert f"{option} is an empty path; give " in line, line


def test_an_empty_input_is_refused_not_read_as_the_working_folder(
        place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = cli_args(Path(""), place / "out" / "fit.json", "--ledger", "ledger",
                    "--dataset", "ds")
    argv[argv.index("--input") + 1] = ""
    line = _refused(place, argv, capsys)
    assert line == "dprect: error: --input is an empty path; give the table's file or folder"
    assert not (place / "out").exists()


@pytest.mark.parametrize("option", ["--output", "--plot", "--results-table"])
def test_a_fit_output_left_empty_is_named_not_taken_for_the_working_folder(
        place: Path, option: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = cli_args(place / "demo_slice.parquet", Path("fit.json"), "--plot", "p.png",
                    "--results-table", "results")
    argv[argv.index(option) + 1] = ""
    line = _refused(place, argv, capsys)
    assert f"{option} is an empty path; give the path to write to" in line, line


@pytest.mark.parametrize("argv", [["budget", "init", "--ledger", ""],
                                  ["budget", "show", "ds", "--ledger", ""],
                                  ["budget", "set-cap", "ds", "--epsilon", "1", "--delta", "0",
                                   "--ledger", " "]])
def test_a_budget_command_with_an_empty_ledger_path_is_refused(
        place: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(place, argv, capsys)
    assert "the budget ledger's path is empty; give the ledger's folder" in line, line


@pytest.mark.parametrize("given", ["", " "])
def test_an_empty_groups_file_path_is_refused_naming_the_option(
        place: Path, given: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``--groups-file ''`` said the groups file '' "does not exist or is not a file"."""
    line = _refused(place, [*BOUNDS, "--group-by", "label", "--groups-file", given,
                            "--output", "b.json", "--ledger", "ledger", "--dataset", "ds"],
                    capsys)
    assert line == ("dprect: error: --groups-file is an empty path; give the file of group "
                    "values, one per line"), line
