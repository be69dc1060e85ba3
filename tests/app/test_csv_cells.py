"""How the numpy engine reads a CSV file's cells: as Spark's CSV reader does
(docs/operations.md, "CSV"). Only an empty cell is null; ``NA``, ``null``, ``N/A`` ... are
words, which make a column text (pyarrow's default read them as null: a column holding one
ran on numpy and was refused as text on Spark);
``NaN`` is the number NaN; a column with no values is text, the type Spark infers for it
(pyarrow's null type ran as all nulls on numpy)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import messages, run

from dprect.engines.arrow_input import read_table
from dprect.engines.input_errors import not_numeric


def _csv(path: Path, cells: list[str]) -> Path:
    rows = [f"{cell},{i % 2}" for i, cell in enumerate(cells)]
    path.write_text("x,y\n" + "\n".join(rows) + "\n")
    return path


def _aggregate(path: Path, out: Path) -> list[str]:
    return ["aggregate", "--input", str(path), "--columns", "x", "--statistics",
            "count,mean", "--epsilon", "1", "--output", str(out), "--seed", "1", "--quiet"]


@pytest.mark.parametrize("word", ["NA", "null", "N/A", "NULL", "#N/A", "n/a"])
def test_a_word_for_a_missing_value_makes_a_csv_column_text(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], word: str) -> None:
    cells = [word if i % 10 == 0 else f"{i}.5" for i in range(200)]
    out = tmp_path / "r.json"
    code, _, err = run(_aggregate(_csv(tmp_path / "t.csv", cells), out), capsys)
    assert code == 2, err
    assert messages(err) == [f"dprect: error: {not_numeric('x', 'string')}"]
    assert not out.exists()


def test_a_csv_column_with_no_values_is_text(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    code, _, err = run(_aggregate(_csv(tmp_path / "t.csv", [""] * 200), out), capsys)
    assert code == 2, err
    assert messages(err) == [f"dprect: error: {not_numeric('x', 'string')}"]
    assert not out.exists()


def test_nan_is_a_number_and_an_empty_cell_null(tmp_path: Path) -> None:
    path = _csv(tmp_path / "t.csv", ["NaN", "", "1.5", "2.5"])
    column = read_table(path, ["x"]).column("x")
    assert str(column.type) == "double"
    assert column.null_count == 1 and column.to_pylist()[2:] == [1.5, 2.5]


def test_an_empty_cell_of_a_text_column_is_null_quoted_or_not(tmp_path: Path) -> None:
    """Spark's CSV reader reads ``,,`` and ``,"",`` in a text column as null; pyarrow's
    default kept "" — a group or class of the empty text that numpy released and Spark
    dropped. A blank (spaces) is text on both."""
    path = tmp_path / "t.csv"
    path.write_text('g,x\na,1\n,2\n"",3\n  ,4\n')
    column = read_table(path, ["g"]).column("g")
    assert column.to_pylist() == ["a", None, None, "  "]
