"""A schema refusal reads the same, word for word, on both engines: a column that is not
numeric names its type as Spark does (:func:`dprect.engines.file_schemas.spark_type_name`
on numpy's side), and a column the input lacks names the input's path and its columns
(:func:`dprect.engines.input_errors.missing_columns`) — one line for a user, and for a
log alert, whatever the engine."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run

DAY = dt.date(2024, 5, 1)
NOON = dt.datetime(2024, 5, 1, 12)


def _parquet(column: pa.Array) -> Callable[[Path], Path]:
    """A Parquet file of column ``x`` (``column``), numbers ``z`` and labels ``y``."""
    def write(folder: Path) -> Path:
        path = folder / "t.parquet"
        pq.write_table(pa.table({"x": column, "z": [1.0, 2.0], "y": [1, 0]}), path)
        return path
    return write


def _csv(cells: tuple[str, str]) -> Callable[[Path], Path]:
    """A CSV file of column ``x`` (``cells``), numbers ``z`` and labels ``y``."""
    def write(folder: Path) -> Path:
        path = folder / "t.csv"
        path.write_text(f"x,z,y\n{cells[0]},1.0,1\n{cells[1]},2.0,0\n")
        return path
    return write


def _fit(features: str, label: str = "y") -> list[str]:
    return ["fit", "--features", features, "--label", label, "--epsilon", "1", "--delta",
            "1e-7", "--grid", "0:10:16"]


def _aggregate(columns: str, *extra: str) -> list[str]:
    return ["aggregate", "--columns", columns, "--statistics", "mean", "--epsilon", "1",
            *extra]


#: id → (the input's writer, the command without --input, --engine and --output)
CASES = {
    "parquet-date": (_parquet(pa.array([DAY, DAY], pa.date32())), _fit("x")),
    "parquet-timestamp": (_parquet(pa.array([NOON, NOON], pa.timestamp("us", tz="UTC"))),
                          _fit("z,x")),
    "parquet-timestamp-ntz": (_parquet(pa.array([NOON, NOON], pa.timestamp("ms"))),
                              _aggregate("x")),
    "parquet-large-string": (_parquet(pa.array(["a", "b"], pa.large_string())),
                             _aggregate("x")),
    "parquet-dictionary": (_parquet(pa.array(["a", "b"]).dictionary_encode()), _fit("x")),
    "parquet-binary": (_parquet(pa.array([b"a", b"b"], pa.large_binary())), _fit("x")),
    "parquet-list": (_parquet(pa.array([[1], [2]], pa.list_(pa.int64()))), _fit("x")),
    "parquet-struct": (_parquet(pa.array([{"a": 1, "b": "c"}] * 2, pa.struct(
        [("a", pa.int64()), ("b", pa.large_string())]))), _aggregate("x")),
    "parquet-map": (_parquet(pa.array([[("k", 1)]] * 2, pa.map_(pa.string(), pa.int32()))),
                    _aggregate("x")),
    "parquet-date-label": (_parquet(pa.array([DAY, DAY], pa.date32())), _fit("z", "x")),
    "parquet-date-group": (_parquet(pa.array([DAY, DAY], pa.date32())),
                           _aggregate("z", "--group-by", "x", "--groups", "a,b")),
    "csv-date": (_csv(("2024-05-01", "2024-05-02")), _aggregate("x")),
    "csv-timestamp": (_csv(("2024-05-01 12:00:00", "2024-05-02 12:00:00")), _fit("x")),
    "csv-timestamp-utc": (_csv(("2024-05-01T12:00:00Z", "2024-05-02T12:00:00Z")),
                          _aggregate("x")),
    "csv-text": (_csv(("a", "b")), _fit("x")),
    "parquet-missing-features": (_parquet(pa.array([1.0, 2.0])), _fit("p,x,q")),
    "parquet-missing-label": (_parquet(pa.array([1.0, 2.0])), _fit("x", "label")),
    "csv-missing-column": (_csv(("1", "2")), _aggregate("x,p")),
    "csv-missing-group": (_csv(("1", "2")), _aggregate("x", "--group-by", "g", "--groups", "a,b")),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_schema_refusal_reads_the_same_on_both_engines(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    write, command = CASES[case]
    path = write(tmp_path)
    lines = {}
    for engine in ("numpy", "spark"):
        out = tmp_path / f"{engine}.json"
        code, _, err = run([*command, "--input", str(path), "--engine", engine,
                            "--output", str(out)], capsys)
        assert code == 2, err
        assert not out.exists()
        lines[engine] = messages(err)
    assert len(lines["numpy"]) == 1, lines
    assert lines["spark"] == lines["numpy"]
    assert "2024" not in lines["numpy"][0].replace(str(tmp_path), "")  # never a cell
