"""A schema refusal reads the same, word for word, on both engines: a column that is not
numeric names its type as Spark does (:func:`dprect.engines.file_schemas.spark_type_name`
on numpy's side), and a column the input lacks names the input's path and its columns
(:func:`dprect.engines.input_errors.missing_columns`) — one line for a user, and for a
log alert, whatever the engine. A column read of a type the engines would read otherwise
— a duration (Spark: a bigint without its unit), a type Spark's Parquet reader cannot
read (a timestamp in nanoseconds, a time of day, float16, a decimal of more than 38
digits) — is refused alike in every use (:func:`dprect.engines.file_schemas.check_types`),
and an unused one is skipped alike; so is an input giving two columns one name
(:func:`dprect.engines.file_schemas.check_unique`). Nothing is written or charged."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run

from dprect.release.ledger import Ledger

DAY = dt.date(2024, 5, 1)
NOON = dt.datetime(2024, 5, 1, 12)


def _parquet(column: pa.Array, int96: bool = False) -> Callable[[Path], Path]:
    """A Parquet file of column ``x`` (``column``), numbers ``z`` and labels ``y``
    (timestamps stored as legacy INT96 if ``int96``)."""
    def write(folder: Path) -> Path:
        path = folder / "t.parquet"
        pq.write_table(pa.table({"x": column, "z": [1.0, 2.0], "y": [1, 0]}), path,
                       use_deprecated_int96_timestamps=int96)
        return path
    return write


def _csv(cells: tuple[str, str]) -> Callable[[Path], Path]:
    """A CSV file of column ``x`` (``cells``), numbers ``z`` and labels ``y``."""
    def write(folder: Path) -> Path:
        path = folder / "t.csv"
        path.write_text(f"x,z,y\n{cells[0]},1.0,1\n{cells[1]},2.0,0\n")
        return path
    return write


def _repeated_csv(folder: Path) -> Path:
    """A CSV file whose header names two columns ``x``."""
    path = folder / "t.csv"
    path.write_text("x,z,x,y\n1.0,1.0,2.0,1\n3.0,2.0,4.0,0\n")
    return path


def _repeated_parquet(folder: Path) -> Path:
    """A Parquet file of two columns ``x`` (the run reads neither)."""
    path = folder / "t.parquet"
    pq.write_table(pa.table([pa.array([1.0, 2.0]), pa.array([1.0, 2.0]),
                             pa.array([3.0, 4.0]), pa.array([1, 0])],
                            names=["x", "z", "x", "y"]), path)
    return path


def _fit(features: str, label: str = "y") -> list[str]:
    return ["fit", "--features", features, "--label", label, "--epsilon", "1", "--delta",
            "1e-7", "--grid", "0:10:16"]


def _aggregate(columns: str, *extra: str) -> list[str]:
    return ["aggregate", "--columns", columns, "--statistics", "mean", "--epsilon", "1",
            *extra]


def _bounds(columns: str) -> list[str]:
    return ["bounds", "--columns", columns, "--epsilon", "1"]


def _describe(columns: str) -> list[str]:
    return ["describe", "--columns", columns, "--epsilon", "1"]


DURATION = pa.array([5, 7], pa.duration("us"))
NANOS = pa.array([NOON, NOON], pa.timestamp("ns"))
TIME = pa.array([dt.time(12), dt.time(13)], pa.time64("us"))
WIDE = pa.array([Decimal("1.5"), Decimal("2.5")], pa.decimal256(40, 2))
HALF = pa.array(np.array([1, 2], np.float16))
NULLS = pa.nulls(2)

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
    # a duration: Spark read it as a bigint (no unit) and ran, numpy refused it
    "parquet-duration": (_parquet(DURATION), _fit("z,x")),
    "parquet-duration-label": (_parquet(DURATION), _fit("z", "x")),
    "parquet-duration-group": (_parquet(DURATION),
                               _aggregate("z", "--group-by", "x", "--groups", "5,7")),
    "parquet-duration-bounds": (_parquet(DURATION), _bounds("x")),
    "parquet-duration-describe": (_parquet(DURATION), _describe("x")),
    "parquet-duration-quantiles": (_parquet(DURATION),
                                   ["aggregate", "--columns", "x", "--statistics",
                                    "median,p90", "--epsilon", "1"]),
    "parquet-duration-coverage": (_parquet(DURATION),
                                  ["aggregate", "--columns", "z,x", "--statistics",
                                   "coverage", "--epsilon", "1"]),
    # types Spark's Parquet reader cannot read: its read failed (as damaged, or with a
    # float16's advice), numpy named them as any timestamp or refused nothing
    "parquet-timestamp-ns": (_parquet(NANOS), _fit("x")),
    "parquet-timestamp-ns-zone-group": (
        _parquet(pa.array([NOON, NOON], pa.timestamp("ns", tz="UTC"))),
        _aggregate("z", "--group-by", "x", "--groups", "a,b")),
    "parquet-time64": (_parquet(TIME), _aggregate("x")),
    "parquet-time32-label": (_parquet(pa.array([dt.time(12)] * 2, pa.time32("ms"))),
                             _fit("z", "x")),
    "parquet-decimal256": (_parquet(WIDE), _bounds("x")),
    "parquet-float16": (_parquet(HALF), _describe("x")),
    "parquet-list-of-float16": (_parquet(pa.array([[1.0], [2.0]], pa.list_(pa.float16()))),
                                _fit("z", "x")),
    # a legacy INT96 timestamp is a timestamp (in UTC) to Spark, not a timestamp_ntz
    "parquet-int96": (_parquet(NANOS, int96=True), _fit("z,x")),
    # Arrow's null type is an int column of nulls to Spark: a word is no group value
    "parquet-null-group": (_parquet(NULLS),
                           _aggregate("z", "--group-by", "x", "--groups", "a,b")),
    "parquet-null-label-word": (_parquet(NULLS),
                                [*_fit("z", "x"), "--positive-label", "abc"]),
    # two columns of one name: numpy failed (exit 1, or "damaged"), Spark renamed a CSV
    # file's (a0, a2: "no column 'a'") and failed on a Parquet file's (exit 1)
    "csv-repeated-name": (_repeated_csv, _fit("x,z")),
    "parquet-repeated-name": (_repeated_parquet, _fit("z")),
}


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A budget ledger the refused runs name (none may reserve in it)."""
    from dprect.app.cli import main

    path = str(tmp_path_factory.mktemp("ledger") / "ledger")
    assert main(["budget", "init", "--ledger", path]) == 0
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_a_schema_refusal_reads_the_same_on_both_engines(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str], ledger: str,
        case: str) -> None:
    write, command = CASES[case]
    path = write(tmp_path)
    lines = {}
    for engine in ("numpy", "spark"):
        out = tmp_path / f"{engine}.json"
        dataset = f"{case}-{engine}"
        code, _, err = run([*command, "--input", str(path), "--engine", engine,
                            "--output", str(out), "--ledger", ledger, "--dataset", dataset],
                           capsys)
        assert code == 2, err
        assert not out.exists()
        assert Ledger(ledger).events(dataset) == []  # refused before any reservation
        lines[engine] = messages(err)
    assert len(lines["numpy"]) == 1, lines
    assert lines["spark"] == lines["numpy"]
    assert "2024" not in lines["numpy"][0].replace(str(tmp_path), "")  # never a cell


def test_columns_the_run_does_not_read_may_be_of_any_type_on_both_engines(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A table holding columns of every type the engines would not read alike, unused:
    a fit and an aggregate grouped by the label read only their columns and give the same
    result for a seed on both engines (Spark's reader, which cannot read some of them,
    skips them as the numpy engine does)."""
    n = 60
    gen = np.random.default_rng(4)
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({
        "x": gen.uniform(0, 10, n), "z": gen.uniform(0, 10, n),
        "y": pa.array(gen.integers(0, 2, n), pa.int32()),
        "nanos": pa.array([NOON] * n, pa.timestamp("ns", tz="UTC")),
        "time": pa.array([dt.time(12)] * n, pa.time64("ns")),
        "wide": pa.array([Decimal("1.5")] * n, pa.decimal256(40, 2)),
        "half": pa.array(np.ones(n, np.float16)),
        "halves": pa.array([[1.0]] * n, pa.list_(pa.float16())),
        "duration": pa.array([5] * n, pa.duration("s")),
    }), path)
    commands = {
        "fit": _fit("x,z"),
        "aggregate": ["aggregate", "--columns", "x,z", "--statistics", "mean,median",
                      "--epsilon", "1", "--group-by", "y", "--groups", "0,1"],
    }
    for name, command in commands.items():
        results = {}
        for engine in ("numpy", "spark"):
            out = tmp_path / f"{name}-{engine}.json"
            code, _, err = run([*command, "--input", str(path), "--engine", engine,
                                "--output", str(out), "--seed", "11", "--quiet"], capsys)
            assert code == 0, (name, engine, err)
            results[engine] = json.loads(out.read_text())
        assert results["spark"] == results["numpy"], name
