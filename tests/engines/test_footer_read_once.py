"""A local Parquet folder's footers are read once each before its rows: the schema
agreement check (:func:`dprect.engines.file_schemas.check_folder`) reads every file's
footer and hands the first one's schema on, so the numpy engine's INT96 typing
(:func:`dprect.engines.arrow_input.read_table`) does not read that footer again (nor does
the Spark engine's declared schema: tests/spark/test_footer_read_once_spark.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from footer_reads import count_footer_reads, write_folder

from dprect.engines.arrow_input import read_table


def test_the_numpy_engine_reads_each_footer_once(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    files = write_folder(tmp_path / "in")
    opened = count_footer_reads(monkeypatch)
    table = read_table(tmp_path / "in", ["t", "x"])
    assert table.schema.field("t").type == pa.timestamp("us", tz="UTC")  # INT96 as Spark
    assert sorted(table.column("x").to_pylist()) == [0.0, 1.0, 2.0]
    assert opened == Counter({f.resolve(): 1 for f in files})


def test_a_single_file_footer_is_read_once(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    file = write_folder(tmp_path / "in")[0]
    opened = count_footer_reads(monkeypatch)
    assert read_table(file, ["t"]).schema.field("t").type == pa.timestamp("us", tz="UTC")
    assert opened == Counter({file.resolve(): 1})
