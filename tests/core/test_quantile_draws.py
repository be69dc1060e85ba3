"""The quantiles' draws computed once per cell (:mod:`dprect.core.quantile_draws`) are the
laws drawn one by one, draw for draw: for a seed the same cells, the same noisy count and
the same random bits consumed (the generator's state after the cell) as the reference —
each quantile's own law (``quantile_law``) drawn by ``sample_unimodal`` on the whole
grid, or by ``quantile_centre.draw_near`` in the centre's window — on the centred and the
whole-grid splits, ties, both signs, an empty cell, depths beyond int64 and the binary
grid. The laws themselves are tested on the reference (test_quantiles.py,
test_quantile_centre.py)."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from dprect.core.decimal_grid import DecimalGrid
from dprect.core.errors import ParameterError
from dprect.core.interior_point import sample_unimodal
from dprect.core.quantile_centre import (
    blocks,
    centre_pieces,
    draw_near,
    level_of,
    levels,
    sign_pieces,
)
from dprect.core.quantile_release import release_groups
from dprect.core.quantiles import (
    QuantilePlan,
    QuantileStatistics,
    draws,
    plan_quantiles,
    quantile_grid,
    quantile_law,
    quantile_statistics,
    release_cell,
)
from dprect.core.randomness import RandomSource

QS = [0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99]


def reference_draws(stats: QuantileStatistics, plan: QuantilePlan, rng: RandomSource
                    ) -> tuple[list[int], int | None]:
    """The draws of one cell as the mechanism states them, one law per quantile
    (docs/privacy.md §11a): the count, then on the whole grid each law's exact draw, or
    the centre, the sign and each law's windowed draw."""
    noisy = None
    if plan.counted:
        scale = plan.count_scale
        noisy = int(stats.counts.sum()) + rng.discrete_laplace_int(scale.denominator,
                                                                   scale.numerator)
    split = plan if noisy is None else plan.branch(noisy)
    if not split.centred:
        return [sample_unimodal(quantile_law(stats, split, j), rate, rng)
                for j, rate in enumerate(split.rates)], noisy
    g = quantile_grid(plan.grid, plan.resolution)
    assert isinstance(g, DecimalGrid)
    centre = sample_unimodal(centre_pieces(g, stats.keys, stats.counts,
                                           split.centre_epsilon), split.centre_rate, rng)
    sign = sample_unimodal(sign_pieces(g, stats.keys, stats.counts, split.centre_epsilon),
                           split.sign_rate, rng)
    return [draw_near(quantile_law(stats, split, j), rate, g, centre, sign, rng)
            for j, rate in enumerate(split.rates)], noisy


def _columns(rows: int, seed: int) -> list[np.ndarray]:
    gen = np.random.default_rng(seed)
    return [gen.normal(50.0, 10.0, rows), gen.lognormal(2.0, 1.0, rows),
            -gen.exponential(30.0, rows), gen.normal(0.5, 4.0, rows),
            np.round(gen.normal(0.0, 3.0, rows)),  # ties, both signs and zero
            np.r_[np.full(rows, 65000.0), gen.uniform(0, 5e5, rows // 4)]]


def _same(stats: QuantileStatistics, plan: QuantilePlan, seed: int) -> bool:
    """The fast draws equal the reference's; whether the cell was drawn near a centre."""
    fast, ref = RandomSource.stream(seed), RandomSource.stream(seed)
    got = draws(stats, plan, fast)
    assert got == reference_draws(stats, plan, ref)
    assert fast._gen.getstate() == ref._gen.getstate()  # the same bits consumed
    return got[1] is not None and plan.branch(got[1]).centred


@pytest.mark.parametrize("epsilon", [0.5 / 64, 3.0, 40.0, 3000.0 / 64])
def test_fast_draws_equal_the_laws_drawn_one_by_one(epsilon: float) -> None:
    """The benchmark's shape (ε per column of a 64-column run: every group small) and
    larger ε (groups of 2,000 rows on the whole grid), six columns, several seeds."""
    plan = plan_quantiles(QS, epsilon)
    assert plan.counted
    centred = {_same(quantile_statistics(x, plan), plan, 100 * k + seed)
               for k, x in enumerate(_columns(2000, 11)) for seed in (1, 2, 3)}
    # the small groups' split at the smallest ε, the whole grid at the largest
    assert centred == ({True} if epsilon < 0.01 else {False} if epsilon > 10
                       else centred)


def test_fast_draws_on_small_empty_and_uncentred_cells() -> None:
    """A few rows, no rows, the plans without a centre (decimal and binary grids)."""
    none = np.zeros(0, dtype=np.int64)
    empty = QuantileStatistics(none, none, none)
    for plan in (plan_quantiles(QS, 1.0), plan_quantiles([0.5], 1.0, centre=False),
                 plan_quantiles(QS, 20.0, centre=False),
                 plan_quantiles(QS, 2.0, grid="binary")):
        for x in (np.array([3.0]), np.array([-2.0, 0.0, 0.0, 7.5, 1e6]),
                  _columns(300, 5)[3]):
            for seed in (7, 8):
                _same(quantile_statistics(x, plan), plan, seed)
        _same(empty, plan, 9)


def test_a_bin_off_the_grid_is_refused_at_either_end() -> None:
    """A statistic's bin below the grid's first cell or past its last is refused before
    any draw (the sorted keys' searches, ``block_rows`` and ``window_runs``, would read a
    key below 0 as none, or fail otherwise), on both splits."""
    for plan in (plan_quantiles(QS, 0.5 / 64), plan_quantiles(QS, 40.0),
                 plan_quantiles([0.5], 1.0, centre=False)):
        size = quantile_grid(plan.grid, plan.resolution).size
        for keys in ([-5], [-5, 3], [3, size]):
            ones = np.ones(len(keys), dtype=np.int64)
            stats = QuantileStatistics(np.array(keys, dtype=np.int64), ones * 50, ones)
            with pytest.raises(ParameterError, match="outside the plan's grid"):
                draws(stats, plan, RandomSource.stream(1))


def test_fast_draws_beyond_int64_depths() -> None:
    """b·n ≥ 2^62: the depths are Python integers on both paths."""
    for plan in (plan_quantiles([0.1, 0.5], 1.0), plan_quantiles([0.1, 0.5], 1.0,
                                                                 centre=False)):
        st = quantile_statistics(np.array([3.0, 5.0, -1.0]), plan)
        big = dataclasses.replace(st, counts=st.counts * (1 << 60),
                                  at_value=st.at_value * (1 << 60))
        _same(big, plan, 4)


def test_level_of_is_levels() -> None:
    """The rejection rounds' level in integers equals the array form, at every block and
    sign edge of the grid and at random cells, for centres across the grid."""
    g = quantile_grid("decimal", 5)
    assert isinstance(g, DecimalGrid)
    edges = [0, g.per_sign - 1, g.per_sign, g.zero, g.zero + 1, g.size - 1]
    edges += [g.per_sign - k * g.per_decade + d for k in (1, 2, 300) for d in (-1, 0)]
    edges += [g.zero + 1 + k * g.per_decade + d for k in (1, 2, 300) for d in (-1, 0)]
    pick = random.Random(5)
    cells = np.array(edges + [pick.randrange(g.size) for _ in range(300)], dtype=np.int64)
    for centre in {0, 1, 2, 300, 301, 599, 600, *blocks(g, cells[:40]).tolist()}:
        for sign in (0, 1, 2):
            want = levels(g, centre, sign, cells).tolist()
            assert [level_of(g, centre, sign, int(i)) for i in cells] == want


def test_a_blocks_values_at_once_are_each_cells() -> None:
    """:func:`release_groups` finds a block's values in one grid call
    (:func:`released_cells`): the same cells — values sorted, flag, rank error — as
    :func:`release_cell` one cell at a time on the same streams, small groups (centred)
    and large (whole grid) in one block."""
    plan = plan_quantiles(QS, 40.0)
    cols = _columns(2000, 5)
    stats = {(g, j): quantile_statistics(c if g % 2 else c[: 30 + 7 * g], plan)
             for g in range(4) for j, c in enumerate(cols)}
    seeds = [101, 202, 303, 404]
    got = release_groups(plan, stats, seeds, len(cols), RandomSource(9))
    want = []
    for g, seed in enumerate(seeds):
        rng = RandomSource.stream(seed)
        want.append([release_cell(stats[(g, j)], plan, rng) for j in range(len(cols))])
    assert got == want
    flags = {c.small for row in got for c in row}
    assert flags == {True, False}  # both splits in the block
    assert all(list(c.values) == sorted(c.values) for row in got for c in row)
