"""The quantiles' rank intervals (issue #41; docs/privacy.md §15, Quantiles): T_λ's
constant on the mechanism's exact law, seeded coverage with a power check, the small
groups' empty interval, and the level as post-processing."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from seeded_source import seeded as _seeded

from dprect.core.errors import ParameterError
from dprect.core.intervals import rank_error as level_rank_error
from dprect.core.quantiles import (
    QuantilePlan,
    best_rank_error,
    plan_quantiles,
    quantile_law,
    quantile_statistics,
    rank_error,
    release_cell,
)

#: the default decimal grid's cells (docs/privacy.md §11a)
DECIMAL_CELLS = 108_000_002


def _excess_miss(plan: QuantilePlan, x: np.ndarray, j: int, t: float) -> float:
    """P(bad_j > OPT_j + t) on draw j's exact law: a piece's bad − OPT is
    (max depth − its depth)/b (depth = D − b·bad)."""
    law = quantile_law(quantile_statistics(x, plan), plan, j)
    excess = (law.depths.max() - law.depths).astype(np.float64) / plan.quantiles[j].denominator
    return float(law.probabilities()[excess > t].sum())


def _tight(t: float, value: float = 2007.0) -> np.ndarray:
    """A constant column whose median's far cells have bad = n/2 just above t: every cell
    but the value's is at rank error n/2 ∈ (t, t + 1/2]."""
    return np.full(math.floor(2 * t) + 1, value)


@pytest.mark.parametrize("quantiles", [("1/2",), ("1/4", "1/2", "3/4")])
@pytest.mark.parametrize("level", [0.95, 0.8])
def test_rank_error_constant_on_the_exact_law(quantiles, level):
    """T_λ = (2Δ/ε_each)·ln(m·M/α), Δ = max_j max(q_j, 1 − q_j) (1/2 for the median
    alone, 3/4 with the quartiles): its value, and on the data where the union bound is
    tightest (all M − 1 other cells at one rank error just above T_λ) the median draw's
    miss probability is at most α/m — and, when the median's Δ is the plan's, at least
    (α/m)·e^{−ε_each/2}/(1 + α): a T_λ without the m, with 1/ε for 2/ε, with Δ = 1 (the
    rate for a sensitivity of 1 row), or a grid of another size leaves that range."""
    plan = plan_quantiles(list(quantiles), 1.0, centre=False, interval_level=level)
    m, alpha = len(quantiles), 1 - level
    t = plan.interval_rank_error
    delta = max(max(Fraction(q), 1 - Fraction(q)) for q in quantiles)
    assert plan.grid_size == DECIMAL_CELLS and plan.sensitivity == delta
    assert t == pytest.approx(2 * float(delta) / plan.epsilon_each
                              * math.log(m * DECIMAL_CELLS / alpha), rel=1e-12)
    assert t == level_rank_error(plan.epsilon_each, DECIMAL_CELLS, level, draws=m,
                                 sensitivity=float(delta))
    j = plan.quantiles.index(Fraction(1, 2))
    miss = _excess_miss(plan, _tight(t), j, t)
    assert miss <= alpha / m
    if delta == Fraction(1, 2):
        assert miss >= alpha / m * math.exp(-plan.epsilon_each / 2) / (1 + alpha) \
            * (1 - 1e-9)


def test_the_interval_is_the_plan_rank_bound_and_bounds_are_unchanged():
    """The quantiles' T_λ is Theorem Q′'s T at β = α (one statement), and the coverage
    bounds' (d = 2 draws, the default) keeps its value."""
    plan = plan_quantiles(["1/10", "1/2", "9/10"], 2.0, interval_level=0.9)
    assert plan.interval_rank_error == pytest.approx(plan.rank_bound(0.1), rel=1e-12)
    assert level_rank_error(0.5, 1000, 0.95) == pytest.approx(4 * math.log(40_000))


RUNS = 400


def _coverage(made: float, runs: int = RUNS) -> float:
    """The share of seeded releases of the median whose released value's rank error is
    within OPT + rank_error, on the column tight for the level it was made at."""
    plan = plan_quantiles(["1/2"], 1.0, centre=False, interval_level=made)
    t = plan.interval_rank_error
    assert t is not None
    x = _tight(t)
    stats = quantile_statistics(x, plan)
    best = best_rank_error(stats, plan, plan.quantiles[0])
    assert best == 0
    hits = 0
    for seed in range(runs):
        cell = release_cell(stats, plan, _seeded(7000 + seed))
        assert cell.rank_error == t
        hits += int(rank_error(x, cell.values[0], 0.5) * len(x) <= best + t)
    return hits / runs


def _at_least(share: float, level: float, runs: int = RUNS) -> bool:
    """The acceptance region: not below the level by more than 3 binomial errors."""
    return share >= level - 3 * math.sqrt(level * (1 - level) / runs)


def test_seeded_coverage_is_at_least_the_level():
    got = _coverage(0.9)
    assert _at_least(got, 0.9), got


def test_seeded_coverage_power_rejects_a_lower_level_claimed():
    """Power: a rank error made at 0.6, on data where it is tight, is rejected by the
    same region when claimed as 0.9 (so the test above can fail) and accepted at 0.6."""
    got = _coverage(0.6)
    assert not _at_least(got, 0.9), got
    assert _at_least(got, 0.6), got


def test_best_rank_error_is_the_least_over_every_cell():
    """OPT by brute force over a small binary grid's every cell value."""
    from dprect.core.quantiles import bin_values

    plan = plan_quantiles(["1/3"], 1.0, grid="binary", resolution=2)
    gen = np.random.default_rng(2)
    x = np.sort(np.concatenate([gen.uniform(1.0, 1.9, 7), [4.0, 4.0, -2.5]]))
    stats = quantile_statistics(x, plan)
    values = bin_values(plan, np.arange(plan.grid_size))
    brute = min(max(Fraction(0), int(np.searchsorted(x, v, "left")) - Fraction(len(x), 3),
                    Fraction(len(x), 3) - int(np.searchsorted(x, v, "right")))
                for v in values)
    assert best_rank_error(stats, plan, plan.quantiles[0]) == brute > 0


def test_small_groups_have_no_interval_and_the_level_is_post_processing():
    """A group drawn by the small split (centred) releases rank_error None; a large
    one the plan's T_λ; the level changes no released value."""
    gen = np.random.default_rng(5)
    big, small = gen.normal(10, 2, 6000), gen.normal(10, 2, 30)
    p95 = plan_quantiles(["1/10", "1/2"], 1.0)
    p50 = plan_quantiles(["1/10", "1/2"], 1.0, interval_level=0.5)
    assert p95.interval_rank_error > p50.interval_rank_error > 0
    assert p95.branch(-1).interval_rank_error is None
    for qs in (["1/2"], ["1/100", "1/2", "99/100"]):  # unflagged cells carry an interval
        for eps, beta in ((0.1, 1e-3), (1.0, 0.5), (8.0, 1e-9)):
            p = plan_quantiles(qs, eps, beta=beta)
            assert p.split_rows <= p.rows_needed()
    for x, want in ((big, (p95.interval_rank_error, p50.interval_rank_error)),
                    (small, (None, None))):
        a = release_cell(quantile_statistics(x, p95), p95, _seeded(3))
        b = release_cell(quantile_statistics(x, p50), p50, _seeded(3))
        assert a.values == b.values and (a.rank_error, b.rank_error) == want
    assert p50.to_json()["interval_level"] == 0.5
    assert p50.to_json()["rank_error_at_level"] == p50.interval_rank_error
    for bad in (0.0, 1.0, float("nan"), True):
        with pytest.raises(ParameterError, match="interval_level"):
            plan_quantiles(["1/2"], 1.0, interval_level=bad)
