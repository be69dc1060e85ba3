"""The Spark engine's one grouped-statistics primitive equals the numpy engine's (issue
#41): for a spec mixing the query mechanism's columns (search grid, exact sums) and the
coverage mechanism's (each column's own domain, counts only), every (group, column) cell
of :func:`~dprect.engines.spark.statistics.spark_statistics` is
:func:`~dprect.engines.grouped.grouped_statistics`' — one pass for any set of
statistics, the keys of columns of different grid sizes laid side by side."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from engine_cells import assert_same_cells, both_engines

from dprect.core.domains import FloatBins, Grid
from dprect.core.mixed import mixed_spec
from dprect.core.statistic import QUANTILES, QUERY, SEARCH_GRID, ColumnSpec, StatisticsSpec


def test_spark_statistics_equal_numpys_for_a_mixed_spec(spark, tmp_path: Path):
    gen = np.random.default_rng(14)
    n = 5000
    a = gen.normal(0, 30, n)
    a[::11] = np.nan
    b = gen.integers(-5, 6, n).astype(float)
    c = np.ldexp(gen.uniform(-1, 1, n), gen.integers(-60, 60, n))
    c[::7] = np.inf
    g = gen.choice(["p", "q", "r", "unlisted"], n)
    spec = StatisticsSpec((ColumnSpec(SEARCH_GRID, True), ColumnSpec(Grid(-5.0, 5.0, 10),
                                                                     False),
                           ColumnSpec(FloatBins(12), False)))
    got, want = both_engines(spark, tmp_path / "t.parquet", {"a": a, "b": b, "c": c, "g": g},
                             ["a", "b", "c"], spec, ["r", "p", "empty", "q"])
    assert_same_cells(got, want)
    assert len(got[(2, 0)].keys) == 0  # the listed group without rows


def test_a_mixed_runs_spec_reads_a_column_once_per_mechanism(spark, tmp_path: Path):
    """A run of several mechanisms (issue #41, docs/privacy.md §11b): one pass over a
    spec holding the query's and the quantiles' columns of the same source columns —
    the source columns listed twice — equals numpy's cell for cell."""
    gen = np.random.default_rng(41)
    n = 3000
    a = np.round(gen.lognormal(2, 1, n), 2)
    a[::13] = np.nan
    b = np.round(gen.normal(0, 5, n), 1)
    g = gen.choice(["p", "q", "unlisted"], n)
    spec = mixed_spec([QUERY.spec([SEARCH_GRID] * 2), QUANTILES.spec([SEARCH_GRID] * 2)])
    got, want = both_engines(spark, tmp_path / "m.parquet", {"a": a, "b": b, "g": g},
                             ["a", "b", "a", "b"], spec, ["q", "p"], partitions=2)
    assert len(want) == 8
    assert_same_cells(got, want)
