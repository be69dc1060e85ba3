"""Support for the Spark tests: the grouped statistics of one table on both engines, and
their comparison cell by cell (the Spark primitive must hand the core exactly what the
numpy primitive does: docs/architecture.md, the engines' contract)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dprect.core.statistic import GroupedStatistics, StatisticsSpec
from dprect.engines.grouped import grouped_statistics
from dprect.engines.spark.statistics import spark_statistics


def both_engines(spark: Any, path: Path, table: Mapping[str, np.ndarray],
                 columns: Sequence[str], spec: StatisticsSpec, listed: Sequence[str],
                 partitions: int = 3) -> tuple[GroupedStatistics, GroupedStatistics]:
    """``table`` (its group column ``g``) written to ``path`` as Parquet, and its cells
    under ``spec`` for the groups ``listed``: (Spark's one pass over ``partitions``
    partitions, the numpy primitive's on the same arrays). ``columns`` may name a column
    twice (a mixed run's spec)."""
    pq.write_table(pa.table(dict(table)), path)
    df = spark.read.parquet(str(path)).repartition(partitions)
    got = spark_statistics(df, list(columns), spec, group_by="g", groups=list(listed))
    index = np.array([listed.index(v) if v in listed else -1 for v in table["g"]],
                     dtype=np.int32)
    want = grouped_statistics([table[c] for c in columns], index, len(listed), spec)
    return got, want


def assert_same_cells(got: GroupedStatistics, want: GroupedStatistics) -> None:
    """Every (group, column) cell the same: its keys and counts, and each of the sums, the
    rows at a bin's value and the sums of squares kept by both or by neither, equal as
    exact integers."""
    assert set(got) == set(want)
    for key, cell in want.items():
        other = got[key]
        assert other.keys.tolist() == cell.keys.tolist(), key
        assert other.counts.tolist() == cell.counts.tolist(), key
        for field in ("sums", "at_value", "squares"):
            mine, theirs = getattr(cell, field), getattr(other, field)
            assert (mine is None) == (theirs is None), (key, field)
            if mine is not None:
                assert [int(v) for v in theirs] == [int(v) for v in mine], (key, field)
