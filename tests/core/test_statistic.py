"""The seam of the grouped aggregates (dprect/core/statistic.py, issue #41): the reference
reduction is each mechanism's own statistics, the numpy primitive equals it cell by cell,
and a noise is drawn only when an asked statistic reads it."""

from __future__ import annotations

import numpy as np
import pytest

from dprect.core.aggregates import plan_describe, query_split
from dprect.core.bounds import histogram
from dprect.core.describe_stats import bin_statistics
from dprect.core.domains import FloatBins, Grid
from dprect.core.errors import ParameterError
from dprect.core.statistic import (
    COVERAGE,
    QUERY,
    SEARCH_GRID,
    STATISTICS,
    CellBins,
    ColumnSpec,
    StatisticsSpec,
    cell_bins,
    noises_drawn,
)
from dprect.engines.grouped import grouped_statistics


def _values() -> np.ndarray:
    gen = np.random.default_rng(8)
    return np.concatenate([gen.normal(3, 40, 3000), np.full(500, 7.0), [0.0, -0.0, 5e-324,
                                                                        -1e300]])


def test_the_reference_reduction_is_each_mechanisms_own():
    x = _values()
    with_sums = cell_bins(x, ColumnSpec(SEARCH_GRID, True))
    want = bin_statistics(x)
    assert np.array_equal(with_sums.keys, want.bins)
    assert np.array_equal(with_sums.counts, want.counts)
    assert np.array_equal(with_sums.sums, want.sums)
    for grid in (FloatBins(12), Grid(-50.0, 50.0, 64)):
        counted = cell_bins(x, ColumnSpec(grid, False))
        hist = histogram(x, grid)
        assert counted.sums is None
        assert np.array_equal(counted.keys, hist.keys)
        assert np.array_equal(counted.counts, hist.counts)
    with pytest.raises(ParameterError, match="without sums"):
        counted.bin_statistics()


def test_the_numpy_primitive_equals_the_reference_per_cell():
    gen = np.random.default_rng(3)
    n = 4000
    a, b = gen.normal(0, 10, n), gen.integers(-3, 4, n).astype(float)
    a[::13], b[::17] = np.nan, np.inf
    group = gen.integers(-1, 3, n).astype(np.int32)  # -1: a row of no listed group
    spec = StatisticsSpec((ColumnSpec(SEARCH_GRID, True), ColumnSpec(Grid(-4.0, 4.0, 8),
                                                                     False)))
    got = grouped_statistics([a, b], group, 4, spec)  # group 3 is listed, has no rows
    assert set(got) == {(g, j) for g in range(4) for j in range(2)}
    for (g, j), cell in got.items():
        x = (a, b)[j][group == g]
        want = cell_bins(x[np.isfinite(x)], spec.columns[j])
        assert np.array_equal(cell.keys, want.keys) and np.array_equal(cell.counts,
                                                                       want.counts)
        assert (cell.sums is None) == (want.sums is None)
        if want.sums is not None:
            assert np.array_equal(cell.sums, want.sums)
    assert len(got[(3, 0)].keys) == 0


def test_the_mechanisms_specs():
    assert QUERY.spec([FloatBins(12)] * 2) == StatisticsSpec(
        (ColumnSpec(SEARCH_GRID, True),) * 2)  # describe counts on its search grid
    assert COVERAGE.spec([Grid(0.0, 1.0, 4)]) == StatisticsSpec(
        (ColumnSpec(Grid(0.0, 1.0, 4), False),))
    with pytest.raises(ParameterError):
        StatisticsSpec(())
    assert isinstance(CellBins(np.zeros(0, np.int64), np.zeros(0, np.int64)).histogram().total,
                      int)


@pytest.mark.parametrize(("asked", "drawn"), [
    (("count",), ("count",)), (("sum",), ("count", "sum")), (("mean",), ("count", "sum")),
    (("count", "sum", "mean"), ("count", "sum")), ((), ())])
def test_a_noise_is_drawn_only_when_an_asked_statistic_reads_it(asked, drawn):
    assert noises_drawn(asked) == drawn
    if asked:
        eps_n, eps_s = query_split(1.0, asked)
        assert (eps_s > 0) == ("sum" in drawn) and eps_n + eps_s == 1.0
        plan = plan_describe(1.0, 1, statistics=asked)
        assert (plan.sum_epsilon > 0) == ("sum" in drawn)


def test_every_statistic_names_its_mechanisms_noises():
    for s in STATISTICS.values():
        assert set(s.draws) <= set(s.mechanism.noises) and s.outputs


def test_the_record_and_table_columns_are_the_statistics_outputs():
    from dprect.core.statistic import outputs
    from dprect.release.aggregate_table import BOUNDS_LAYOUT, layout

    assert outputs(QUERY) == ("lower", "upper", "count", "count_low", "count_high", "sum",
                              "sum_low", "sum_high", "mean", "mean_low", "mean_high")
    assert outputs(COVERAGE) == ("lower", "upper", "rank_error")
    assert [k for k, _ in BOUNDS_LAYOUT.columns] == ["group", "column", *outputs(COVERAGE)]
    assert layout(QUERY).names == ("group", "column", *outputs(QUERY), "below_row_need")


def test_a_mechanisms_plan_and_draw_are_its_registered_ones():
    """``Mechanism.plan``/``draw`` delegate to what the driver's draws registered
    (dprect/engines/grouped.py): the planners and draws of describe and bounds; a mechanism
    nothing registered is refused by name."""
    from dprect.core.aggregates import plan_describe
    from dprect.core.bounds import plan_bounds
    from dprect.core.errors import ParameterError
    from dprect.core.statistic import RUNS, Mechanism
    from dprect.engines.grouped import draw_coverage, draw_query

    assert RUNS[QUERY.name] == (plan_describe, draw_query)
    assert RUNS[COVERAGE.name] == (plan_bounds, draw_coverage)
    assert QUERY.plan(1.0, 2) == plan_describe(1.0, 2)
    stray = Mechanism("stray", QUERY.column_spec)
    with pytest.raises(ParameterError, match="'stray' mechanism has no plan and draw"):
        stray.plan(1.0, 2)
