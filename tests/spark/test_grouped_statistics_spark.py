"""The Spark engine's one grouped-statistics primitive equals the numpy engine's (issue
#41): for a spec mixing the query mechanism's columns (search grid, exact sums) and the
coverage mechanism's (each column's own domain, counts only), every (group, column) cell
of :func:`~dprect.engines.spark.statistics.spark_statistics` is
:func:`~dprect.engines.grouped.grouped_statistics`' — one pass for any set of
statistics, the keys of columns of different grid sizes laid side by side."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dprect.core.domains import FloatBins, Grid
from dprect.core.statistic import SEARCH_GRID, ColumnSpec, StatisticsSpec
from dprect.engines.grouped import grouped_statistics
from dprect.engines.spark.statistics import spark_statistics


def test_spark_statistics_equal_numpys_for_a_mixed_spec(spark, tmp_path: Path):
    gen = np.random.default_rng(14)
    n = 5000
    a = gen.normal(0, 30, n)
    a[::11] = np.nan
    b = gen.integers(-5, 6, n).astype(float)
    c = np.ldexp(gen.uniform(-1, 1, n), gen.integers(-60, 60, n))
    c[::7] = np.inf
    g = gen.choice(["p", "q", "r", "unlisted"], n)
    pq.write_table(pa.table({"a": a, "b": b, "c": c, "g": g}), tmp_path / "t.parquet")
    spec = StatisticsSpec((ColumnSpec(SEARCH_GRID, True), ColumnSpec(Grid(-5.0, 5.0, 10),
                                                                     False),
                           ColumnSpec(FloatBins(12), False)))
    listed = ["r", "p", "empty", "q"]
    df = spark.read.parquet(str(tmp_path / "t.parquet")).repartition(3)
    got = spark_statistics(df, ["a", "b", "c"], spec, group_by="g", groups=listed)
    index = np.array([listed.index(v) if v in listed else -1 for v in g], dtype=np.int32)
    want = grouped_statistics([a, b, c], index, len(listed), spec)
    assert set(got) == set(want)
    for key, cell in want.items():
        other = got[key]
        assert other.keys.tolist() == cell.keys.tolist(), key
        assert other.counts.tolist() == cell.counts.tolist(), key
        assert (other.sums is None) == (cell.sums is None), key
        if cell.sums is not None:
            assert [int(v) for v in other.sums] == [int(v) for v in cell.sums], key
    assert len(got[(2, 0)].keys) == 0  # the listed group without rows
