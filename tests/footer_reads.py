"""A local Parquet folder and a count of the footers read from it, for
``engines/test_footer_read_once.py`` and ``spark/test_footer_read_once_spark.py``."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.core as pq_core
import pytest


def write_folder(folder: Path) -> list[Path]:
    """A Parquet folder of three files (a legacy INT96 timestamp in each), partitioned
    like Spark's output; its data files."""
    files = []
    for i, day in enumerate(["day=1", "day=1", "day=2"]):
        file = folder / day / f"part-{i}.parquet"
        file.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"t": [dt.datetime(2024, 5, 1 + i)], "x": [float(i)]}),
                       file, use_deprecated_int96_timestamps=True)
        files.append(file)
    (folder / "_SUCCESS").write_bytes(b"")
    return files


def count_footer_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[Path]:
    """Count the Parquet files opened through pyarrow's ``ParquetFile`` (which reads the
    footer; :func:`pyarrow.parquet.read_schema` opens one too), by path."""
    opened: Counter[Path] = Counter()

    class Counting(pq.ParquetFile):
        def __init__(self, source, *args, **kwargs):  # type: ignore[no-untyped-def]
            opened[Path(source).resolve()] += 1
            super().__init__(source, *args, **kwargs)

    monkeypatch.setattr(pq, "ParquetFile", Counting)
    monkeypatch.setattr(pq_core, "ParquetFile", Counting)
    return opened
