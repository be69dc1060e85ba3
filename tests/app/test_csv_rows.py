"""How the numpy engine reads a CSV file's rows and header, as the Spark engine reads them
(docs/operations.md, "CSV"; the parity is tests/spark/test_csv_rows_spark.py):

* a row with more or fewer fields than the header (a line of spaces is one field) refuses
  the file in one line, never the row or its place, before anything is reserved;
* an empty line is skipped;
* a quoted field may hold a line end, part of its value — in a file of any size (pyarrow's
  default cut a large file into blocks at line ends, quoted or not: a value split in two);
* a header that gives one name to two fields (ignoring case) is refused from the header.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import messages, run

from dprect.engines.arrow_input import read_table
from dprect.engines.input_errors import csv_name_twice, input_error
from dprect.release.ledger import Ledger

#: one CSV file per malformed case: a row with an extra field, one with a missing field,
#: a line of spaces among three columns
MALFORMED = {"extra": "g,x,y\na,1.5,1\nb,2.5,0,7\na,3.5,1\n",
             "missing": "g,x,y\na,1.5,1\nb,2.5\na,3.5,1\n",
             "spaces": "g,x,y\na,1.5,1\n   \na,3.5,1\n"}


def _aggregate(path: Path, tmp: Path, *extra: str) -> list[str]:
    return ["aggregate", "--input", str(path), "--columns", "x", "--statistics", "count",
            "--epsilon", "1", "--output", str(tmp / "r.json"), "--seed", "1", "--quiet",
            *extra]


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_row_of_another_width_refuses_the_file_before_the_charge(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    path = tmp_path / "t.csv"
    path.write_text(MALFORMED[case])
    code, _, err = run(_aggregate(path, tmp_path, "--ledger", str(ledger), "--dataset",
                                    "ds"), capsys)
    assert code == 2, err
    assert messages(err) == [f"dprect: error: {input_error(path, 'csv', columns=['x'])}"]
    assert not (tmp_path / "r.json").exists()
    assert Ledger(ledger).events("ds") == []


def test_empty_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("g,x\n\na,1.5\n\n\nb,2.5\r\n\r\n")
    assert read_table(path, ["g", "x"]).to_pydict() == {"g": ["a", "b"], "x": [1.5, 2.5]}


def test_a_quoted_line_end_is_part_of_its_value_in_a_large_file(tmp_path: Path) -> None:
    """Over 1 MB (pyarrow's block): the default reader cut a block inside a quoted value
    and read a group 'b"' that no row holds."""
    path = tmp_path / "t.csv"
    path.write_text("g,x\n" + "".join(f'"a\nb",{i}.5\n' for i in range(100_000)))
    table = read_table(path, ["g", "x"])
    assert table.num_rows == 100_000
    assert table.column("g").unique().to_pylist() == ["a\nb"]


@pytest.mark.parametrize("header,fields", [("g,x,g", (1, 3)), ("x,g,X", (1, 3)),
                                           ("g,x,y,G", (1, 4))])
def test_a_header_naming_two_fields_alike_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], header: str,
        fields: tuple[int, int]) -> None:
    """Spark renames such fields by their place (x0, X2) where pyarrow keeps both names:
    a run reading x (or another column) ran on one engine and not the other."""
    path = tmp_path / "t.csv"
    width = header.count(",") + 1
    path.write_text(header + "\n" + "".join(",".join(["1.5"] * width) + "\n"
                                           for _ in range(5)))
    names = header.split(",")
    said = csv_name_twice(path, names[fields[0] - 1], names[fields[1] - 1], *fields)
    code, _, err = run(_aggregate(path, tmp_path), capsys)
    assert code == 2, err
    assert messages(err) == [f"dprect: error: {said}"]
    assert f"header fields {fields[0]} and {fields[1]} have one name" in str(said)


def test_empty_header_names_are_not_one_name(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("x,,y,\n1.5,1,2,3\n")
    assert read_table(path, ["x"]).column("x").to_pylist() == [1.5]
