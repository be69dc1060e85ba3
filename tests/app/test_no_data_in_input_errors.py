"""No value of the input in any message of the numpy engine (issue #40, point 1), and
schema agreement of a multi-file input (point 2).

Every command (fit, fit with a class list, bounds, describe), with and without a ledger,
on inputs whose cells, rows and bytes carry a sentinel (:mod:`tests.sentinel_inputs`):
the sentinel is in no output, and each run ends with exit 0 or one line and exit 2. Then
the issue's repros, each one line and exit 2.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.cli_run import messages, run
from tests.sentinel_inputs import SENTINEL, build, garbage, run_all


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_no_sentinel_through_any_command(tmp_path: Path, capsys) -> None:
    inputs = build(tmp_path)
    seen = run_all(lambda argv: run(argv, capsys), tmp_path, inputs, ["--engine", "numpy"])
    # what each input gives: schema and format refusals, values read by the reading rule
    code = {k: v[0] for k, v in seen.items()}
    for ledger in (False, True):
        for command in ("fit", "classes", "bounds", "describe"):
            for name in ("parquet: text cell in a numeric column", "csv: malformed row",
                         "parquet: garbage bytes", "csv: garbage bytes",
                         "parquet folder: renamed file", "parquet folder: text file",
                         "parquet folder: garbage file"):
                assert code[(name, command, ledger)] == 2, (name, command)
        # a text label: refused for the numeric positive label, read for a class list
        assert code[("parquet: text label", "fit", ledger)] == 2
        assert code[("parquet: text label", "classes", ledger)] == 0
        assert code[("parquet: text label", "bounds", ledger)] == 0
        # planted values (tests/sentinel_inputs.PLANTED) in rows that are read: released
        # through, never shown; the text label column refuses the numeric positive label
        for name in ("parquet: planted value and group", "csv: planted value and group"):
            assert code[(name, "fit", ledger)] == 2
            for command in ("classes", "bounds", "describe"):
                assert code[(name, command, ledger)] == 0, (name, command)


def _fit(path: Path, tmp: Path, capsys, *extra: str) -> tuple[int, str, str]:
    return run(["fit", "--input", str(path), "--features", "x", "--label", "y",
                "--epsilon", "1", "--delta", "1e-6", "--output", str(tmp / "r.json"),
                *extra], capsys)


def _one_line(code: int, err: str) -> str:
    lines = messages(err)
    assert code == 2 and len(lines) == 1, err
    return lines[0]


def test_a_malformed_csv_row_is_not_quoted(tmp_path: Path, capsys) -> None:
    path = tmp_path / "t.csv"
    path.write_text("x,z,y\n1.0,2.0,1\n58.59,2.43,1,alice@example.com\n3,4,0\n")
    line = _one_line(*_fit(path, tmp_path, capsys)[::2])
    assert "alice@example.com" not in line and "58.59" not in line
    assert line.startswith(f"dprect: error: cannot read {str(path)!r} as csv")
    assert not (tmp_path / "r.json").exists()


def test_a_binary_file_is_not_echoed(tmp_path: Path, capsys) -> None:
    for name in ("t.csv", "t.parquet"):
        path = tmp_path / name
        path.write_bytes(garbage())
        line = _one_line(*_fit(path, tmp_path, capsys)[::2])
        assert SENTINEL not in line and f"cannot read {str(path)!r} as " in line


def _folder(tmp: Path, second: dict[str, object]) -> Path:
    folder = tmp / "folder"
    folder.mkdir()
    pq.write_table(pa.table({"x": [1.0, 2.0], "y": [1, 0]}), folder / "a.parquet")
    pq.write_table(pa.table(second), folder / "b.parquet")
    return folder


def test_a_renamed_column_in_one_file_is_refused(tmp_path: Path, capsys) -> None:
    folder = _folder(tmp_path, {"x_new": [1.0, 2.0], "y": [1, 1]})
    line = _one_line(*_fit(folder, tmp_path, capsys)[::2])
    assert "column 'x'" in line and "double in 'a.parquet'" in line
    assert "absent from 'b.parquet'" in line
    assert not (tmp_path / "r.json").exists()


def test_a_text_column_in_one_file_is_refused(tmp_path: Path, capsys) -> None:
    folder = _folder(tmp_path, {"x": ["SSN 123-45-6789", "3"], "y": [1, 1]})
    line = _one_line(*_fit(folder, tmp_path, capsys)[::2])
    assert "123-45" not in line
    assert "column 'x'" in line and "double in 'a.parquet'" in line
    assert "string in 'b.parquet'" in line


def test_files_that_differ_on_an_unused_column_are_read(tmp_path: Path, capsys) -> None:
    folder = _folder(tmp_path, {"x": [1.0, 2.0], "y": [1, 1], "s": ["a", "b"]})
    code, _, err = _fit(folder, tmp_path, capsys)
    assert code == 0, err


def test_a_csv_folder_is_refused_by_the_numpy_engine(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "t.csv"
    folder.mkdir()
    (folder / "a.csv").write_text("x,y\n1.0,1\n")
    line = _one_line(*_fit(folder, tmp_path, capsys)[::2])
    assert "is a folder" in line and "Spark engine" in line


def _parquet_folder(tmp: Path, extra: str, text: str) -> Path:
    folder = tmp / "pq"
    folder.mkdir()
    pq.write_table(pa.table({"x": [1.0, 2.0], "y": [1, 0]}), folder / "part-0.parquet")
    (folder / extra).write_text(text)
    return folder


def test_a_stray_file_in_a_parquet_folder_is_refused_saying_what_to_do(
        tmp_path: Path, capsys) -> None:
    # a README beside the part files: named, and the fix given (move it, or an _ name)
    folder = _parquet_folder(tmp_path, "README.txt", f"notes {SENTINEL}\n")
    line = _one_line(*_fit(folder, tmp_path, capsys)[::2])
    assert f"cannot read {str(folder / 'README.txt')!r} as parquet" in line
    assert "move this one out of the folder, or start its name with _ or ." in line
    assert SENTINEL not in line and not (tmp_path / "r.json").exists()
    # a CSV file among them: also how a folder of CSV files is read
    (folder / "README.txt").rename(folder / "_README.txt")  # now skipped
    (folder / "more.csv").write_text("x,y\n3.0,1\n")
    line = _one_line(*_fit(folder, tmp_path, capsys)[::2])
    assert "more.csv' as parquet" in line and "needs --format csv" in line
    (folder / "more.csv").unlink()
    assert _fit(folder, tmp_path, capsys)[0] == 0  # _README.txt is skipped


def test_a_folder_without_data_files_is_refused_as_such(tmp_path: Path, capsys) -> None:
    # before: "has no column(s) 'x', 'y'; it has no columns" — true, but no help
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "_SUCCESS").write_text("")
    line = _one_line(*_fit(folder, tmp_path, capsys)[::2])
    assert line == (f"dprect: error: input {str(folder)!r} is a folder with no data files "
                    "(files whose names start with _ or . are skipped): give the table's "
                    "file or the folder that holds its files")


def test_a_csv_file_under_another_name_is_refused_naming_the_format_option(
        tmp_path: Path, capsys) -> None:
    path = tmp_path / "export.txt"
    path.write_text("x,y\n1.0,1\n2.0,0\n")
    line = _one_line(*_fit(path, tmp_path, capsys)[::2])
    assert "as parquet" in line and "a CSV file needs --format csv" in line
    assert _fit(path, tmp_path, capsys, "--format", "csv")[0] == 0


@pytest.mark.parametrize("name,extra", [("t.parquet", ["--format", "csv"]),
                                        ("export.csv", [])])
def test_a_parquet_file_read_as_csv_is_refused_saying_it_looks_like_parquet(
        tmp_path: Path, capsys, name: str, extra: list[str]) -> None:
    path = tmp_path / name
    pq.write_table(pa.table({"x": [1.0, 2.0], "y": [1, 0]}), path)
    line = _one_line(*_fit(path, tmp_path, capsys, *extra)[::2])
    assert line.startswith(f"dprect: error: cannot read {str(path)!r} as csv"), line
    assert "it starts with Parquet's magic number PAR1, so it looks like a Parquet file " \
           "(--format parquet" in line, line
    assert not (tmp_path / "r.json").exists()
    assert _fit(path, tmp_path, capsys, "--format", "parquet")[0] == 0
    # a file that does not start as Parquet does gets no such hint
    other = tmp_path / "other.csv"
    other.write_bytes(b"PAR" + garbage())
    line = _one_line(*_fit(other, tmp_path, capsys)[::2])
    assert "as csv" in line and "Parquet" not in line, line


def test_a_text_feature_is_refused_saying_what_a_text_column_can_be(
        tmp_path: Path, capsys) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [SENTINEL, "b"], "y": [1, 0]}), path)
    line = _one_line(*_fit(path, tmp_path, capsys)[::2])
    assert line == ("dprect: error: column 'x' must be numeric, but its type is string: "
                    "features and columns to aggregate take numbers (a text column can be "
                    "the label or the group column; a CSV column is text when any of its "
                    "cells is not a number)")
