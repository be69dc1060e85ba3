"""Small groups' quantiles near ONE pooled centre per column (issue #41 item 5;
docs/privacy.md §11a, Lemma Q5): a cell whose noisy count is below the plan's
``pool_rows`` (the row need of a small group's own centre) releases no own centre; its
quantiles are drawn near its column's centre drawn once from the pooled rows of all such
cells, at the same ε as an own centre."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from dprect.core import guarantee_check
from dprect.core.guarantee_check import GuaranteeCheckError, check_quantiles_plan
from dprect.core.quantile_release import plan_statistics, release_grouped
from dprect.core.quantiles import plan_quantiles, quantile_statistics, release_cell
from dprect.core.randomness import RandomSource


def _rng(seed: int) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=seed)


def test_small_groups_medians_lie_in_their_data():
    """8 groups of 250 rows, normal(50, 10), the median at ε = 0.25 (a column's share of
    ε = 1 over 4 columns): each group is below the own centre's row need (1,065 rows),
    so without the pool each drew its own centre, which mostly missed (measured on main:
    50 of 400 medians within the group's [min, max], 12.5%); pooled (2,000 rows) the
    centre lands and the medians follow (measured: 400 of 400). Power: the 50 seeds'
    pooled centres are independent; the threshold, 360 of 400, fails only if more than 5
    seeds' centres miss entirely (or many medians stray), which at a miss rate of 1%
    has probability below 10^-4 (binomial tail), while a rate of 12.5% per median passes
    it with probability below 10^-100."""
    plan = plan_statistics(["median"], 0.25, 1)
    gen = np.random.default_rng(0)
    data = [gen.normal(50.0, 10.0, 250) for _ in range(8)]
    stats = {(g, 0): quantile_statistics(x, plan) for g, x in enumerate(data)}
    names = [f"g{g}" for g in range(8)]
    inside = 0
    for seed in range(50):
        cells = release_grouped(plan, stats, names, ["y"], _rng(seed)).cells
        inside += sum(x.min() <= row[0].values[0] <= x.max()
                      for row, x in zip(cells, data, strict=True))
    assert inside >= 360, inside


def test_cells_with_their_own_centre_are_drawn_as_before():
    """Where no noisy count is below ``pool_rows``, every cell is ``release_cell``'s on its
    group's stream (no pool, no draw from the run's source): the release without
    pooling, bit for bit; a group with a pooled cell keeps its other cells too."""
    from dprect.core.quantile_release import first_phase, release_groups

    plan = plan_quantiles([0.1, 0.5, 0.9], 0.5, columns=2)
    gen = np.random.default_rng(1)
    big = [gen.normal(50.0, 10.0, 5000), gen.exponential(3.0, 5000)]
    small = gen.normal(50.0, 10.0, 200)
    stats = {(0, 0): quantile_statistics(big[0], plan),
             (0, 1): quantile_statistics(big[1], plan),
             (1, 0): quantile_statistics(big[0][:3000], plan),
             (1, 1): quantile_statistics(small, plan)}
    seeds = [11, 22]
    first = first_phase(plan, stats, seeds, 2)
    assert first.pooled == [(1, 1)] and sorted(first.pools.hists) == [1]
    rng = _rng(5)
    got = release_groups(plan, stats, seeds, 2, rng)
    for g, seed in enumerate(seeds):
        stream = RandomSource.stream(seed)
        own = [release_cell(stats[(g, j)], plan, stream) for j in range(2)]
        assert got[g][0] == own[0]  # drawn as without pooling
        if g == 0:
            assert got[g][1] == own[1]
    assert got[1][1].small


def test_the_plan_pools_below_an_own_centres_row_need():
    plan = plan_quantiles([0.1, 0.5, 0.9], 0.5, columns=2)
    assert plan.pool_rows == plan.branch(-1).centre_rows(plan.beta) == 1065
    assert plan.pool_rows <= plan.split_rows
    assert plan.pooled(1064) and not plan.pooled(1065) and not plan.pooled(None)
    assert plan.to_json()["pool_rows"] == plan.pool_rows
    assert plan_quantiles([0.5], 1.0, grid="binary").pool_rows == 0  # no centre


def test_the_check_refuses_a_wrong_pooled_constant(monkeypatch):
    """The independent check charges a pooled cell's centre once per row
    (``QUANTILE_POOLS_PER_ROW`` = 1): with 2 the pooled split exceeds the column's ε and
    the plan is refused; a pool row need above the small groups' split (a pooled cell
    that is not a small one) is refused too."""
    plan = dataclasses.replace(plan_quantiles([0.1, 0.5, 0.9], 1.0, columns=2), check=None)
    report = check_quantiles_plan(plan)
    assert len(report.details["per_draw"]) == 4  # the count, then three splits
    with pytest.raises(GuaranteeCheckError, match="row need"):
        check_quantiles_plan(dataclasses.replace(plan, pool_rows=plan.split_rows + 1))
    monkeypatch.setattr(guarantee_check, "QUANTILE_POOLS_PER_ROW", 2)
    with pytest.raises(GuaranteeCheckError):
        check_quantiles_plan(plan)


def _anchor_table(tiny: int, copies: int = 1, big: int = 4) -> list[np.ndarray]:
    """``big`` groups of 5,000 rows and ``copies`` tiny groups of ``tiny`` rows, whole
    numbers uniform on [200, 1000]."""
    gen = np.random.default_rng(49)
    return ([gen.uniform(200, 1000, 5000).round() for _ in range(big)]
            + [gen.uniform(200, 1000, tiny).round() for _ in range(copies)])


def _today(plan, stats, seeds, columns, rng):
    """The release by Lemma Q5 alone (before the anchor): every pooled column's centre drawn
    from ``rng``, columns in order, whatever its pool's released rows."""
    from dprect.core.quantile_release import first_phase, second_phase
    from dprect.core.quantiles import pooled_centre

    first = first_phase(plan, stats, seeds, columns)
    centres = {j: pooled_centre(plan, *first.pools.hists[j], rng)
               for j in sorted(first.pools.hists)}
    return second_phase(plan, stats, first, centres, columns)


def test_a_tiny_pool_searches_near_the_other_groups_anchor():
    """One group of 30 rows beside four of 5,000 (ε = 1, p10, median, p90): the tiny
    cell is the column's only pooled one and its released rows (≈ 30) are far below
    ``pool_rows`` (267), so the pooled centre drawn from its own rows ran away (measured
    on main, these 50 seeds: 1 median and 2 of 150 releases inside the group's [221,
    990], 147 of 150 more than 10^4× off it, up to 5.4e273). Anchored on the large
    groups' middle bins (Lemma Q6) its quantiles stay near the data: measured 45 of 50
    medians and 106 of 150 releases inside, none 10^4× off (the largest 54,625; since
    the rates follow each quantile's sensitivity, session 50: 45, 102, none). The p10
    and p90 of 30 rows still miss the range about a third of the time — the small
    split's ε_each (0.275; 0.233 before) against the window's cells below the data at a
    rank error of 3 rows — so the thresholds are 40 of 50 medians, 75 of 150 releases and
    at most one release 10^4× off: far from main's, and each a few standard deviations of 50 seeds
    below the measured rates."""
    plan = plan_statistics(["median", "p10", "p90"], 1.0, 1)
    assert plan.pool_rows == 267 and plan.split_rows == 1507  # the large: no own centre
    data = _anchor_table(30)
    stats = {(g, 0): quantile_statistics(x, plan) for g, x in enumerate(data)}
    names = [f"g{g}" for g in range(len(data))]
    x = data[-1]
    lo, hi = x.min(), x.max()
    medians = inside = far = 0
    for seed in range(50):
        cells = release_grouped(plan, stats, names, ["y"], _rng(seed)).cells
        v = np.array(cells[-1][0].values)
        assert cells[-1][0].small
        medians += bool(lo <= v[1] <= hi)
        inside += int(((v >= lo) & (v <= hi)).sum())
        far += int(((np.abs(v) > 1e4 * hi) | (np.abs(v) < 1e-4 * lo)).sum())
    assert medians >= 40 and inside >= 75 and far <= 1, (medians, inside, far)


def test_a_pool_that_reaches_pool_rows_is_drawn_as_before():
    """Twelve groups of 30 rows pooled beside four of 5,000: their released rows (≈ 360)
    reach ``pool_rows``, so the column's centre is drawn from the pool as before the
    anchor — the release is main's, bit for bit; and a column whose pooled cells have no
    other cell to anchor on (the tiny group alone) draws its pooled centre as before."""
    plan = plan_statistics(["median", "p10", "p90"], 1.0, 1)
    for data in (_anchor_table(30, copies=12), _anchor_table(30, big=0)):
        stats = {(g, 0): quantile_statistics(x, plan) for g, x in enumerate(data)}
        names = [f"g{g}" for g in range(len(data))]
        for seed in (0, 1, 2):
            got = release_grouped(plan, stats, names, ["y"], _rng(seed)).cells
            rng = _rng(seed)
            assert got == _today(plan, stats, rng.stream_seeds(len(names)), 1, rng)


def test_an_anchored_column_takes_no_draw_from_the_run_source():
    """Two columns: the tiny group's cell of column 0 alone below ``pool_rows`` (anchored:
    no draw), column 1 pooled over twelve tiny groups (drawn): column 1's centre is the
    FIRST draw from the run's source after the seeds, as if column 0 had no pool — the
    source's consumption follows the released counts, in column order."""
    from dprect.core.quantile_centre import blocks
    from dprect.core.quantile_release import (
        first_phase,
        pooled_centres,
        signed_blocks,
    )
    from dprect.core.quantiles import pooled_centre, quantile_grid

    plan = plan_statistics(["median", "p10", "p90"], 2.0, 2)
    data = _anchor_table(30, copies=12)
    # column 0: the first tiny group only is tiny (the others 5,000 rows); column 1: as is
    gen = np.random.default_rng(3)
    col0 = data[:5] + [gen.uniform(200, 1000, 5000).round() for _ in data[5:]]
    stats = {(g, j): quantile_statistics(x, plan)
             for j, col in enumerate((col0, data)) for g, x in enumerate(col)}
    rng = _rng(8)
    seeds = rng.stream_seeds(len(data))
    first = first_phase(plan, stats, seeds, 2)
    assert sorted(first.pools.hists) == [0, 1] and first.pools.rows[0] < plan.pool_rows
    assert first.pools.rows[1] >= plan.pool_rows
    state = _rng(8)
    state.stream_seeds(len(data))
    want1 = pooled_centre(plan, *first.pools.hists[1], state)
    centres = pooled_centres(plan, first.pools, rng)
    assert centres[1] == want1
    # column 0's anchor: the lower median of the other cells' middle bins, as (block, sign)
    middles = sorted(signed_blocks(plan, np.sort(first.drawn[g * 2])[1:2]).tolist()[0]
                     for g in range(len(data)) if (g, 0) not in first.pooled)
    key = middles[(len(middles) - 1) // 2]
    g = quantile_grid(plan.grid, plan.resolution)
    hundreds = int(blocks(g, g.encode(np.array([500.0])))[0])  # the block of [100, 1000)
    assert centres[0] == (abs(key), 1 + (key > 0) - (key < 0)) == (hundreds, 2)


def test_the_anchor_joins_exactly_whatever_the_blocks():
    """The anchor's lower median is the same whichever blocks the pools come from: the
    joined pools of every split of the groups into two blocks give the one-block pools,
    and the anchor of a key multiset is its lower median in the signed order."""
    from dprect.core.quantile_release import anchor_centre, first_phase, joined_pools

    plan = plan_statistics(["median"], 1.0, 1)
    data = _anchor_table(30, big=5)
    stats = {(g, 0): quantile_statistics(x, plan) for g, x in enumerate(data)}
    seeds = _rng(2).stream_seeds(len(data))
    whole = first_phase(plan, stats, seeds, 1).pools
    for cut in range(1, len(data)):
        parts = [first_phase(plan, {(g - a, 0): stats[(g, 0)] for g in range(a, z)},
                             seeds[a:z], 1).pools for a, z in ((0, cut), (cut, len(data)))]
        joined = joined_pools(parts)
        assert joined.rows == whole.rows
        for j in whole.anchors:
            assert all(np.array_equal(a, b) for a, b in
                       zip(joined.anchors[j], whole.anchors[j], strict=True))
    keys, counts = np.array([-3, 0, 2, 5]), np.array([2, 1, 1, 3])
    assert anchor_centre(keys, counts) == (2, 2)  # -3 -3 0 2 5 5 5: the 4th
    assert anchor_centre(keys[:3], counts[:3]) == (3, 0)  # -3 -3 0 2: the 2nd (lower)
    assert anchor_centre(keys[1:3], counts[1:3]) == (0, 1)  # 0 2: zero's block
    assert anchor_centre(np.array([-4]), np.array([1])) == (4, 0)
