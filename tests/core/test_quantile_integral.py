"""The quantiles of a column whose DECLARED type is integral are released as integers
(``QuantilePlan.integral``, :func:`dprect.core.quantiles.snap_integers` in
:func:`~dprect.core.quantiles.released_cells`: post-processing, docs/privacy.md §11a,
"Integer columns"): a median whose target rank falls between two integers is no longer a
float such as -6.5e-75 from the gap, a float plan is unchanged, -0.0 is released as 0.0,
and the rank error of a snapped value is never larger on integer data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprect.core.errors import ParameterError
from dprect.core.quantile_release import plan_statistics, release_groups
from dprect.core.quantiles import (
    bin_values,
    plan_quantiles,
    quantile_grid,
    quantile_statistics,
    rank_error,
    release_cell,
    snap_integers,
)
from dprect.core.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")

#: half the rows at -1, half at 0: the median's target rank lies in the gap (-1, 0),
#: where the grid holds millions of candidates of rank error 0
GAP = np.concatenate([np.full(500, -1.0), np.zeros(500)])
#: half at 3, half at 4: the median lies anywhere in [3, 4] (10,001 decimal candidates)
STEP = np.concatenate([np.full(1000, 3.0), np.full(1000, 4.0)])


def _released(values: np.ndarray, integral: bool, seed: int) -> tuple[float, ...]:
    plan = plan_quantiles([0.25, 0.5, 0.75], 4.0)
    if integral:
        plan = plan.with_integral([True])
    return release_cell(quantile_statistics(values, plan), plan, RandomSource(seed)).values


def test_an_integral_plan_releases_integers_where_a_float_plan_does_not():
    for data in (GAP, STEP):
        floats = [_released(data, False, seed) for seed in range(8)]
        ints = [_released(data, True, seed) for seed in range(8)]
        # the float plan: a median in the gap, not a whole number (the absurd release)
        assert any(not float(v).is_integer() for row in floats for v in row)
        for f, i in zip(floats, ints, strict=True):
            assert all(float(v).is_integer() for v in i)
            # the same draws (post-processing only): each value the float one, rounded
            assert list(i) == [float(np.rint(v)) + 0.0 for v in f]
            assert list(i) == sorted(i)


def test_minus_zero_is_released_as_zero():
    got = snap_integers(np.array([-0.0, -6.5e-75, -0.4, 0.4, -0.5, 0.5, 1.5, -2.5, 7.0]))
    assert got.tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, -2.0, 7.0]
    assert not np.signbit(got[:6]).any()
    ints = [v for seed in range(8) for v in _released(GAP, True, seed)]
    assert all(math.copysign(1.0, v) > 0 for v in ints if v == 0.0)
    assert snap_integers(np.array([1.7976931348623157e308])).tolist() == [1.7976931348623157e308]


def test_the_plan_json_names_integral_columns_only_when_one_is():
    plan = plan_statistics(["median"], 1.0, 3)
    assert "integral" not in plan.to_json()
    none = plan.with_integral([False, False, False])
    assert none == plan and "integral" not in none.to_json()
    some = plan.with_integral([False, True, False])
    assert some.to_json()["integral"] == [False, True, False]
    assert some.guarantee == plan.guarantee and some.epsilon_each == plan.epsilon_each
    assert not some.column_integral(0) and some.column_integral(1)
    with pytest.raises(ParameterError):
        plan.with_integral([True])


def test_each_column_is_snapped_by_its_own_flag():
    """release_groups (both engines' draws) snaps the integral column's cells only."""
    plan = plan_statistics(["p25", "median", "p75"], 8.0, 2).with_integral([True, False])
    cells = {(g, j): quantile_statistics(STEP, plan) for g in range(3) for j in range(2)}
    seeds = RandomSource(5).stream_seeds(3)
    got = release_groups(plan, cells, seeds, 2, RandomSource(9))
    floats = release_groups(plan.with_integral([False, False]), cells, seeds, 2, RandomSource(9))
    for g in range(3):
        assert all(float(v).is_integer() for v in got[g][0].values)
        assert got[g][1] == floats[g][1]  # the float column: the float plan's release
        assert list(got[g][0].values) == snap_integers(np.array(floats[g][0].values)).tolist()
    assert any(not float(v).is_integer() for g in range(3) for v in floats[g][1].values)


def test_the_rank_error_of_a_snapped_value_is_never_larger_on_integer_data():
    """Why the rank interval (``<name>_rank_error``) stands unchanged: on whole numbers a
    value v between k and k + 1 has the ranks of both neighbours' ends, so rounding
    it to either does not move it away from q·n (docs/privacy.md §11a)."""
    gen = np.random.default_rng(3)
    data = np.sort(gen.integers(-20, 20, 400).astype(np.float64))
    plan = plan_quantiles([0.5], 1.0)
    grid = quantile_grid(plan.grid, plan.resolution)
    near = np.concatenate([gen.uniform(-25, 25, 3000), gen.normal(0, 1e-3, 500),
                           np.arange(-22, 23, 0.5)])
    values = bin_values(plan, grid.encode(near).astype(np.int64))
    assert len(values) > 3000 and not all(float(v).is_integer() for v in values)
    for q in (0.1, 0.37, 0.5, 0.9):
        for v, s in zip(values.tolist(), snap_integers(values).tolist(), strict=True):
            assert rank_error(data, s, q) <= rank_error(data, v, q) + 1e-12
