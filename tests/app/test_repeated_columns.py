"""An input that gives one name to two columns is refused in one line (s50-fitedge's
audit). On main the numpy engine failed after the plan with an internal error (exit 1,
pyarrow's ``KeyError`` on selecting the column) for a CSV header ``a,b,a``, called a
Parquet file with two ``a`` columns "not a Parquet file ... or damaged", and the Spark
engine failed on such a Parquet file with an internal error too (``schema.field`` in the
type check). The schema-only refusal names the input and the column; nothing is written
or charged. (Both engines' words: tests/spark/test_schema_refusals_spark.py.)"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run

from dprect.release.ledger import Ledger

FIT = ["fit", "--label", "y", "--epsilon", "1", "--delta", "0", "--seed", "1", "--quiet"]


def _csv(folder: Path) -> Path:
    path = folder / "t.csv"
    path.write_text("a,b,a,y\n1,2,3,1\n4,5,6,0\n7,8,9,1\n")
    return path


def _parquet(folder: Path) -> Path:
    path = folder / "t.parquet"
    pq.write_table(pa.table([pa.array([1.0, 4.0]), pa.array([2.0, 5.0]),
                             pa.array([3.0, 6.0]), pa.array([1, 0])],
                            names=["a", "b", "a", "y"]), path)
    return path


def _parquet_folder(folder: Path) -> Path:
    (folder / "in").mkdir()
    _parquet(folder / "in")
    return folder / "in"


@pytest.mark.parametrize(("write", "features", "words"), [
    (_parquet, "a,b", "give each column its own name (Parquet readers refuse"),
    (_parquet, "b", "give each column its own name (Parquet readers refuse"),
    (_parquet_folder, "b", "give each column its own name (Parquet readers refuse"),
], ids=["parquet", "parquet-unread", "parquet-folder"])
def test_two_columns_of_one_name_are_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], write: object, features: str,
        words: str) -> None:
    path = write(tmp_path)  # type: ignore[operator]
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    out = tmp_path / "r.json"
    code, _, err = run([*FIT, "--input", str(path), "--features", features, "--output",
                        str(out), "--ledger", str(ledger), "--dataset", "ds"], capsys)
    assert code == 2, err
    lines = messages(err)
    assert len(lines) == 1, err
    assert f"input {str(path)!r} has 2 columns named 'a'" in lines[0] and words in lines[0]
    assert not out.exists() and Ledger(str(ledger)).runs("ds") == []


@pytest.mark.parametrize("features", ["a,b", "b"], ids=["read", "unread"])
def test_a_csv_header_naming_two_fields_alike_is_refused_from_the_header(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], features: str) -> None:
    """One CSV rule (s50-csv's, docs/operations.md "CSV"): the header alone decides,
    whichever columns the run reads (Spark's reader renames such fields by place)."""
    path = _csv(tmp_path)
    out = tmp_path / "r.json"
    code, _, err = run([*FIT, "--input", str(path), "--features", features,
                        "--output", str(out)], capsys)
    assert code == 2, err
    lines = messages(err)
    assert len(lines) == 1 and "header fields 1 and 3 have one name" in lines[0], err
    assert not out.exists()


def test_aggregate_refuses_a_repeated_csv_column(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["aggregate", "--input", str(_csv(tmp_path)), "--columns", "b",
                        "--statistics", "count", "--epsilon", "1", "--output",
                        str(tmp_path / "r.json")], capsys)
    assert code == 2 and "header fields 1 and 3 have one name" in err
    assert len(messages(err)) == 1
