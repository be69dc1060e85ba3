"""The noise intervals (dprect/core/intervals.py, docs/privacy.md §15): their constants
against the exact law the samplers draw, and their coverage measured on seeded runs of the
mechanisms, with a power check (a wrong level is detected)."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from seeded_source import seeded as _seeded

from dprect.core import aggregates, intervals
from dprect.core.bounds import BoundsRequest, histogram, plan_bounds, run_bounds
from dprect.core.crmath import exp_array
from dprect.core.describe_stats import truncated_value
from dprect.core.domains import FloatBins
from dprect.core.errors import ParameterError
from dprect.core.intervals import (
    count_interval,
    count_quantile,
    mixed_quantile,
    mixed_quantile_at,
    rank_error,
)
from dprect.core.request import DescribeRequest


@functools.cache
def _dlap_norm(rate: float) -> float:
    return 1.0 + 2.0 * math.fsum(math.exp(-rate * k) for k in range(1, 200_000))


def _dlap_pmf(rate: float, z: int) -> float:
    """P(Z = z) of the two-sided geometric law, written from its definition
    P(Z = z) ∝ e^{−rate·|z|} with the normaliser summed here (not the closed form)."""
    return math.exp(-rate * abs(z)) / _dlap_norm(rate)


@pytest.mark.parametrize("rate,alpha", [(0.13, 0.05), (1.0, 0.05), (0.013, 0.1),
                                        (0.5, 0.01), (3.0, 0.05)])
def test_count_quantile_is_the_smallest_integer_of_the_exact_law(rate, alpha):
    q = count_quantile(rate, alpha)
    inside = sum(_dlap_pmf(rate, z) for z in range(-q, q + 1))
    assert 1 - inside <= alpha + 1e-12
    if q > 0:
        narrower = inside - 2 * _dlap_pmf(rate, q)
        assert 1 - narrower > alpha


def test_count_quantile_constant_at_the_default_plan():
    """ε = 1, one column: ε_n = 0.65·0.2·ε_col; q = 23 rows at 95% (a continuous Laplace
    would say ln(20)/ε_n ≈ 23.0; the plan's β-statement ln(2/α)/ε_n ≈ 28.4 is looser)."""
    plan = aggregates.plan_describe(1.0, 1)
    assert count_quantile(plan.count_epsilon, 0.05) == 23
    assert count_interval(100.0, plan.count_epsilon, 0.95) == (77.0, 123.0)
    assert count_interval(5.0, plan.count_epsilon, 0.95) == (0.0, 28.0)


def test_count_quantile_matches_the_sampler():
    """The sampler's own draws (RandomSource.discrete_laplace at the plan's exact scale)
    fall outside ±q with the law's probability; a power check: ±(q − 3) is seen to miss
    more than α."""
    plan = aggregates.plan_describe(1.0, 1)
    assert plan.count_scale is not None
    rng = _seeded(5)
    draws = np.array([rng.discrete_laplace(plan.count_scale) for _ in range(20_000)])
    q = count_quantile(plan.count_epsilon, 0.05)
    se = math.sqrt(0.05 * 0.95 / len(draws))
    assert abs(np.mean(np.abs(draws) > q) - 0.05) < 4 * se + 0.004  # q is an integer
    assert np.mean(np.abs(draws) > q - 3) > 0.05 + 4 * se


@pytest.mark.parametrize("r", [0.0, 0.05, 0.4, 2.0, 30.0])
def test_mixed_quantile_against_monte_carlo(r):
    """P(|L + r·Z| > H(r)) = α on 400,000 draws of the two laws (numpy's Laplace, the
    two-sided geometric as a difference of geometric variables); power: 0.9·H misses
    detectably more."""
    rate, alpha = 0.13, 0.05
    h = mixed_quantile(r, rate, alpha)
    gen = np.random.default_rng(11)
    n = 400_000
    p = 1.0 - math.exp(-rate)
    z = gen.geometric(p, n) - gen.geometric(p, n)
    x = np.abs(gen.laplace(0.0, 1.0, n) + r * z)
    se = math.sqrt(alpha * (1 - alpha) / n)
    assert abs(np.mean(x > h) - alpha) < 4 * se + 0.002
    assert np.mean(x > 0.9 * h) > alpha + 6 * se


def test_mixed_quantile_grid_reads_never_below_and_close_above():
    rate, alpha = 0.13, 0.05
    for r in (0.0, 3e-5, 0.0123, 0.5, 7.7, 1e3, 5e4):
        exact = mixed_quantile(r, rate, alpha)
        read = mixed_quantile_at(r, rate, alpha)
        assert exact <= read <= exact * 1.0110 + 1e-9


def test_mixed_quantile_reads_the_first_grid_point_at_or_above():
    """``mixed_quantile_at`` reads H at the FIRST grid point ≥ |r| — on every point, a
    float either side of it, and wide random r — the index of the first point ≥ |r|
    (the reference here: ``np.searchsorted`` on the points), found by bisection; an index
    one off (a point either side) would read another H and fails it."""
    read: list[int] = []
    real = intervals._grid_quantile
    try:
        def noted(i: int, rate: float, alpha: float) -> float:
            read.append(i)
            return 0.0

        intervals._grid_quantile = noted  # type: ignore[assignment]
        gen = np.random.default_rng(3)
        points = [intervals._grid_point(i) for i in range(intervals.GRID_POINTS)]
        at_or_above = np.array(points)
        rs = [*points, *(math.nextafter(p, 0.0) for p in points),
              *(math.nextafter(p, math.inf) for p in points),
              *(10.0 ** gen.uniform(-6.0, 4.1, 20_000)).tolist(), -points[5], 0.0]
        for r in rs:
            read.clear()
            intervals.mixed_quantile_at(r, 0.1, 0.05)
            x = abs(r)
            want = 0 if x <= intervals.GRID_START else \
                int(np.searchsorted(at_or_above, x)) if x <= points[-1] else None
            assert read == ([] if want is None else [want]), r
    finally:
        intervals._grid_quantile = real  # type: ignore[assignment]


def test_rank_error_constant():
    """T_λ = (2/ε_each)·ln(2m/(1 − λ)) (both sides of a column at (1 − λ)/2 each)."""
    assert rank_error(0.5, 1000, 0.95) == pytest.approx(4 * math.log(40_000), rel=1e-12)
    plan = plan_bounds(BoundsRequest(1.0, interval_level=0.9), [FloatBins(12)])
    m = FloatBins(12).size
    assert plan.interval_rank_error[0] == pytest.approx(
        2 / plan.epsilon_each * math.log(2 * m / 0.1), rel=1e-12)


def test_level_is_validated():
    for bad in (0.0, 1.0, 1.5, -0.1, float("nan"), True):
        with pytest.raises(ParameterError, match="interval_level"):
            DescribeRequest(1.0, interval_level=bad)
        with pytest.raises(ParameterError, match="interval_level"):
            BoundsRequest(1.0, interval_level=bad)


# -- coverage on seeded runs of the mechanisms (with a power check) ---------------------------
RUNS = 600


def _coverage(level: float, values: np.ndarray, epsilon: float = 1.0,
              runs: int = RUNS) -> dict[str, float]:
    """The share of seeded describe runs whose count, sum and mean intervals hold their
    targets: n, Σ clamp(x̃, L, U) and that / n (x̃ truncated to 30 significant bits)."""
    plan = aggregates.plan_describe(epsilon, 1, interval_level=level)
    distinct, counts = np.unique(truncated_value(values), return_counts=True)
    n = len(values)
    exact = [(Fraction(v), int(c)) for v, c in zip(distinct.tolist(), counts, strict=True)]
    hits = {"count": 0, "sum": 0, "mean": 0}
    for seed in range(runs):
        cell = aggregates.describe_cell(values, plan, _seeded(1000 + seed))
        lo, hi = Fraction(cell.lower), Fraction(cell.upper)
        total = sum((min(max(v, lo), hi) * c for v, c in exact), Fraction(0))
        for s, target in (("count", Fraction(n)), ("sum", total), ("mean", total / n)):
            span = cell.interval(s)
            assert span is not None
            hits[s] += int(Fraction(span[0]) <= target <= Fraction(span[1]))
    return {s: h / runs for s, h in hits.items()}


@pytest.fixture(scope="module")
def skewed() -> np.ndarray:
    """A skewed column with ties (the pivot's lever on the count noise matters)."""
    gen = np.random.default_rng(3)
    return np.round(gen.lognormal(3.0, 1.0, 3000), 1)


def _accepted(share: float, level: float, runs: int = RUNS) -> bool:
    """The test's acceptance region: within 3 binomial standard errors of the level."""
    return abs(share - level) <= 3 * math.sqrt(level * (1 - level) / runs)


def test_describe_intervals_cover_at_the_stated_level(skewed):
    got = _coverage(0.95, skewed)
    assert all(_accepted(v, 0.95) for v in got.values()), got


def test_coverage_test_detects_a_wrong_level(skewed):
    """Power: intervals made at level 0.90 are rejected by the same acceptance region when
    claimed as 0.95 (so the test above can fail)."""
    got = _coverage(0.90, skewed)
    assert not any(_accepted(v, 0.95) for v in got.values()), got
    assert all(_accepted(v, 0.90) for v in got.values()), got


def test_coverage_bounds_rank_interval_holds_at_least_the_level():
    """Both sides of the coverage bounds clip within ±rank_error of their target in at
    least the stated share of runs; power: a tenth of rank_error is seen to fail."""
    gen = np.random.default_rng(8)
    x = gen.normal(50.0, 10.0, 5000)
    domain = FloatBins(12)
    plan = plan_bounds(BoundsRequest(0.5, interval_level=0.95), [domain])
    hist = histogram(x, domain)
    cum = np.concatenate([[0], np.cumsum(hist.counts)])
    t = max(plan.floor_rows[0], float(plan.alpha) * hist.total)
    err = plan.interval_rank_error[0]
    worst = []
    for seed in range(200):
        res = run_bounds(plan, {(None, 0): hist}, [None], _seeded(seed), ["x"])
        lo, hi = res.lower_index[0][0], res.upper_index[0][0]
        below = int(cum[np.searchsorted(hist.keys, lo, side="left")])
        upto = int(cum[np.searchsorted(hist.keys, lo, side="right")])
        above = hist.total - int(cum[np.searchsorted(hist.keys, hi, side="right")])
        from_hi = hist.total - int(cum[np.searchsorted(hist.keys, hi, side="left")])
        worst.append(max(below - t, t - upto, above - t, t - from_hi))
        assert res.rows()[0]["rank_error"] == err
    worst_arr = np.array(worst)
    assert np.mean(worst_arr <= err) >= 0.95
    assert np.mean(worst_arr <= err / 10) < 0.95


@pytest.mark.parametrize("epsilon", [0.01, 1.0, 50.0])
def test_intervals_are_ordered_and_never_nan_at_the_float_extremes(epsilon):
    """Near the float range, with one row, no row or ties: every interval is an ordered
    pair without NaN (±inf where nothing finite can be stated), and the released count and
    mean lie in theirs."""
    plan = aggregates.plan_describe(epsilon, 1)
    cases = [np.array([1e300, 1.5e300, -1e300, 1.7e308] * 50), np.array([1e-300, 2e-300] * 3),
             np.array([5.0]), np.array([]), np.full(5000, 7.0)]
    for x in cases:
        for seed in range(4):
            cell = aggregates.describe_cell(x, plan, _seeded(seed))
            for s in ("count", "sum", "mean"):
                span = cell.interval(s)
                assert span is not None
                lo, hi = span
                assert not (math.isnan(lo) or math.isnan(hi)) and lo <= hi
            for s in ("count", "mean"):
                lo, hi = cell.interval(s) or (math.nan, math.nan)
                assert lo <= getattr(cell, s) <= hi


def test_the_coarsened_count_law_bounds_h_from_above(monkeypatch):
    """Past LAW_POINTS values the count's law is merged onto each run's largest value: H
    read from it is never below the exact H (it would under-cover otherwise) and close to
    it; the law keeps its whole mass. Fails if a run's mass sits on its smallest value."""
    from dprect.core import intervals

    rate, alpha = 1e-3, 0.05
    exact = [intervals.mixed_quantile(r, rate, alpha) for r in (0.5, 3.0, 50.0)]
    monkeypatch.setattr(intervals, "LAW_POINTS", 1 << 10)
    intervals._count_law.cache_clear()
    try:
        z, p, far = intervals._count_law(rate, alpha)
        assert len(z) <= 1 << 10 and abs(p.sum() + far - 1.0) < 1e-12
        coarse = [intervals.mixed_quantile(r, rate, alpha) for r in (0.5, 3.0, 50.0)]
    finally:
        intervals._count_law.cache_clear()
    for c, e in zip(coarse, exact, strict=True):
        assert e <= c <= 1.01 * e


def _laplace_miss_reference(h: float, shifts: np.ndarray) -> np.ndarray:
    """The miss as first written: both branches at every shift, then selected (with the
    correctly rounded exponential the miss uses, :func:`dprect.core.crmath.exp_array`)."""
    near = 0.5 * exp_array(-(h - np.minimum(shifts, h)))
    far = 1.0 - 0.5 * exp_array(-np.maximum(shifts - h, 0.0))
    return np.where(shifts <= h, near, far) + 0.5 * exp_array(-(h + shifts))


def test_the_laplace_miss_is_the_branches_bit_for_bit_with_two_exponentials(monkeypatch):
    """P(|L + c| > h) on the count law's shifts, each branch computed only where it is
    taken: the same bits as both branches computed everywhere and selected (so every H,
    hence every released interval, is unchanged) — at h = 0, h on a shift, every shift
    below or above h, the coarsened law — with 2 exponentials a shift, not 3."""
    rs = np.random.default_rng(41)
    laws = [intervals._count_law(rate, 0.0495) for rate in (0.0005078124994921875, 0.02, 3.0)]
    for z, _p, _far in laws:
        for _ in range(300):
            shifts = float(10 ** rs.uniform(-4, 2)) * z
            h = float(rs.choice([0.0, float(shifts[len(shifts) // 2]),
                                 float(rs.uniform(0, 2)) * float(shifts[-1]) + 1e-9,
                                 float(rs.uniform(0, 40)), 2.0 * float(shifts[-1]) + 1.0]))
            assert np.array_equal(intervals._laplace_miss(h, shifts),
                                  _laplace_miss_reference(h, shifts)), h
    exps: list[int] = []
    real = exp_array

    def counted(x):
        exps.append(np.size(x))
        return real(x)

    monkeypatch.setattr(intervals, "exp_array", counted)
    shifts = 0.01 * laws[0][0]
    intervals._laplace_miss(50.0, shifts)
    assert sum(exps) == 2 * len(shifts)


def test_h_does_not_depend_on_the_blas_threads() -> None:
    """H sums its miss in a fixed order (numpy's pairwise sum), not by a BLAS dot
    product, whose rounding depends on how many threads OpenBLAS splits it over: the
    same H (hence the same released intervals) with 1, 2 or 4 BLAS threads. The point is
    the one where the describe digest's variance intervals differed with the threads
    (``p @ m``: 6.7844085421297455 on one thread, 6.784408542135017 on two; docs/results.md
    §5.3b); power check: the dot product itself differs with the threads here, so the
    test fails if the miss goes back to BLAS."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    rate, alpha = 0.0005078124994921875, 0.025000000000000022
    r = intervals._grid_point(196)
    z, p, _far = intervals._count_law(rate, alpha)
    terms = intervals._laplace_miss(6.78440854213, abs(r) * z)
    dots, hs = set(), set()
    for threads in (1, 2, 4):
        with threadpoolctl.threadpool_limits(threads, user_api="blas"):
            dots.add(float(p @ terms))
            hs.add(mixed_quantile(r, rate, alpha))
    if len(dots) == 1:
        pytest.skip("this BLAS rounds a dot product alike on 1, 2 and 4 threads")
    assert len(hs) == 1


def test_the_small_group_flag_is_exact_at_any_size() -> None:
    """below_need / below_needs, the one small-group rule (the flag below_row_need of
    describe and the quantiles): a count below its need, None without a count, a NaN
    never below; exact where float64 is not — 2^53 as a float is below the need 2^53 + 1,
    which float64 reads as 2^53 (so a float64 comparison says it is not)."""
    from dprect.core.intervals import below_need, below_needs

    big = (1 << 53) + 1
    assert below_need(None, 5) is None
    assert below_need(4.0, 5) is True and below_need(5.0, 5) is False
    assert below_need(float(1 << 53), big) is True
    assert not float(1 << 53) < float(big)  # what float64 alone would say
    assert below_need(float("nan"), 5) is False
    counts = np.array([4.0, 5.0, np.nan, float(1 << 53), -np.inf])
    assert below_needs(counts[:3], [5, 5, 5]).tolist() == [True, False, False]
    assert below_needs(counts, [5, 5, 5, big, 5]).tolist() == \
        [True, False, False, True, True]
    assert below_needs(counts[3:4], [1 << 53]).tolist() == [False]


def test_mixed_quantile_above_the_grid_is_the_discrete_regimes_bound() -> None:
    """Past the grid's last point no grid point is ≥ r: the bound is the discrete
    regime's r·q' + ln(1/(α·SPLIT)), for a finite r and for r = inf (the compiled
    reader's answer there; the removed estimate-and-step search raised on an inf)."""
    from dprect.core.intervals import SPLIT, count_quantile, grid_points

    rate, alpha = 0.5, 0.05
    last = float(grid_points()[-1])
    far = count_quantile(rate, alpha * (1.0 - SPLIT))
    for r in (math.nextafter(last, math.inf), 3.0 * last, -7.0 * last):
        assert mixed_quantile_at(r, rate, alpha) == \
            abs(r) * far + math.log(1.0 / (alpha * SPLIT))
    assert mixed_quantile_at(math.inf, rate, alpha) == math.inf
    assert mixed_quantile_at(last, rate, alpha) <= mixed_quantile_at(3.0 * last, rate, alpha)
