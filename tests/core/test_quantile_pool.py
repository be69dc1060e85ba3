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
    assert first.pooled == [(1, 1)] and sorted(first.pools) == [1]
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
