"""The Spark engine reads a local Parquet folder's footers once each on the driver: the
schema agreement check reads them all and hands the first one's schema on to the schema
Spark is told to read with (:func:`dprect.engines.spark.source._declared_schema`), which
read that footer again; tests/engines/test_footer_read_once.py for the numpy engine."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from footer_reads import count_footer_reads, write_folder

from dprect.engines.spark.source import read_source


def test_the_spark_engine_reads_each_footer_once(spark, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    files = write_folder(tmp_path / "in")
    opened = count_footer_reads(monkeypatch)
    df = read_source(spark, tmp_path / "in", columns=["t", "x"])
    assert dict(df.dtypes)["t"] == "timestamp"
    assert sorted(r.x for r in df.select("x").collect()) == [0.0, 1.0, 2.0]
    assert opened == Counter({f.resolve(): 1 for f in files})
