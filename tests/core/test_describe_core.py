"""Bounds aimed at a query and the DP aggregates (issue #23): dprect.core.tail_bounds,
dprect.core.aggregates, the exact discrete Laplace sampler and the guarantee check."""

from __future__ import annotations

import dataclasses
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chisquare

from dprect.core import aggregates, describe_stats, guarantee_check, step_exponential, tail_bounds
from dprect.core.aggregates import centred_integer_sum, describe_cell, plan_describe, run_describe
from dprect.core.domains import FloatBins
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import GuaranteeCheckError, check_describe_plan
from dprect.core.randomness import RandomSource


def seeded(seed: int) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=seed)


def _dlap_pmf(z: np.ndarray, scale: float) -> np.ndarray:
    q = math.exp(-1 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(z)


def _chi2_pvalue(draws: list[int], scale: float) -> float:
    z = np.asarray(draws)
    edges = np.arange(-6, 7)  # cells ..., -6, -5, ..., 5, 6, ... (tails pooled)
    obs = [np.sum(z <= -6)] + [np.sum(z == e) for e in edges[1:-1]] + [np.sum(z >= 6)]
    pmf = _dlap_pmf(edges[1:-1], scale)
    tail = (1 - pmf.sum()) / 2
    exp = np.concatenate([[tail], pmf, [tail]]) * len(z)
    return float(chisquare(obs, exp).pvalue)


def test_discrete_laplace_matches_its_law_with_power():
    rng = seeded(11)
    scale = Fraction(5, 2)
    draws = [rng.discrete_laplace(scale) for _ in range(6000)]
    assert _chi2_pvalue(draws, 2.5) > 1e-3
    # power: the same test rejects the law at a 20% larger scale on these draws
    assert _chi2_pvalue(draws, 3.0) < 1e-3
    # symmetric: mean near 0 (sd of the mean ≈ 0.05)
    assert abs(np.mean(draws)) < 0.25


def test_discrete_laplace_rejects_bad_scale():
    with pytest.raises(ValueError):
        seeded(1).discrete_laplace(Fraction(0))


def test_centre_pieces_are_the_median_depth():
    x = np.array([1.0, 1.0, 2.0, 5.0, 100.0, -3.0])
    p = tail_bounds.centre_pieces(x)
    grid = FloatBins(tail_bounds.CENTRE_BITS)
    keys = grid.encode(x)
    for i in sorted(set(keys.tolist()) | {0, grid.size - 1, int(keys.min()) + 1}):
        want = min(int(np.sum(keys <= i)), int(np.sum(keys >= i)))
        k = int(np.searchsorted(p.starts, np.uint64(i), side="right")) - 1
        assert int(p.depths[k]) == want
    assert int(p.starts[-1]) + int(p.sizes[-1]) == grid.size


def test_candidates_are_bin_edges_outward_and_tail_counts_exact():
    g = FloatBins(tail_bounds.SEARCH_BITS)
    for c in (0.0, 3.5, -1e6):
        up = tail_bounds.candidates(c, "upper")
        lo = tail_bounds.candidates(c, "lower")
        assert (np.diff(up) > 0).all() and (np.diff(lo) < 0).all()
        assert up[0] >= c >= lo[0]
        for v in up[::97]:
            assert g.upper_value(g.index_of(v)) == v
        for v in lo[::97]:
            assert g.lower_value(g.index_of(v)) == v
        assert len(up) <= tail_bounds.candidate_count()
    x = np.sort(np.array([-5.0, 0.0, 1.0, 2.0, 2.0, 9.0]))
    b = np.array([-6.0, 0.5, 2.0, 10.0])
    assert tail_bounds.tail_counts(x, b, "upper").tolist() == [6, 4, 1, 0]
    assert tail_bounds.tail_counts(x, b, "lower").tolist() == [0, 2, 3, 6]


def test_plan_split_and_guarantee():
    p = plan_describe(1.0, 4)
    per = p.centre_epsilon + p.bounds_epsilon - p.centre_epsilon + p.count_epsilon \
        + p.sum_epsilon
    assert 4 * per <= 1.0
    assert p.guarantee.epsilon == pytest.approx(1.0, rel=1e-8)
    assert p.guarantee.delta == 0.0
    assert p.check is not None and p.check.epsilon <= 1.0 + 1e-12
    assert p.centre_epsilon == pytest.approx(aggregates.CENTRE_SHARE * 0.25, rel=1e-8)
    assert p.side_epsilon == pytest.approx(aggregates.SIDES_SHARE * 0.25, rel=1e-8)
    assert p.target == math.ceil(aggregates.TARGET_FACTOR / p.sum_epsilon
                                 + aggregates.MARGIN_FACTOR / (0.25 * aggregates.SIDES_SHARE))
    assert "guarantee (1, 0)-DP" in p.table()
    r = plan_describe(1.0, 1, neighbouring="replace-one")
    assert r.guarantee.epsilon <= 1.0 and r.sum_epsilon == pytest.approx(
        plan_describe(0.5, 1).sum_epsilon, rel=1e-8)
    b = plan_describe(1.0, 1, statistics=(), query_epsilon=0.5)
    assert b.count_epsilon == b.sum_epsilon == 0 and b.bounds_epsilon == pytest.approx(1.0)
    with pytest.raises(ParameterError, match="query_epsilon"):
        plan_describe(1.0, 1, statistics=())
    with pytest.raises(ParameterError, match="statistics"):
        plan_describe(1.0, 1, statistics=("median",))


# -- the independent check: it refuses a plan whose noise is smaller than stated -----------
@pytest.mark.parametrize("field,factor", [("centre_epsilon", 1.01), ("side_epsilon", 1.01),
                                          ("count_epsilon", 1.01),
                                          ("sum_epsilon", 1.01)])
def test_check_refuses_a_larger_mechanism_epsilon(field, factor):
    p = plan_describe(1.0, 3)
    bad = dataclasses.replace(p, **{field: getattr(p, field) * factor}, check=None)
    with pytest.raises(GuaranteeCheckError, match="describe"):
        check_describe_plan(bad)


def test_check_reads_the_sum_sensitivity_and_its_own_constant(monkeypatch):
    p = plan_describe(1.0, 2)
    # the sum noise scaled for 2^30 but rows clipped at 2^31: twice the stated epsilon_S
    bad = dataclasses.replace(p, sum_sensitivity=p.sum_sensitivity * 2, check=None)
    assert bad.sum_scale == 2 * p.sum_scale  # the plan scales noise by it ...
    tampered = dataclasses.replace(p, check=None)
    object.__setattr__(tampered, "sum_sensitivity", p.sum_sensitivity * 2)
    assert check_describe_plan(tampered).epsilon <= 1.0  # ... consistently (same epsilon)
    check_describe_plan(p)
    monkeypatch.setattr(guarantee_check, "DESCRIBE_SENSITIVITY", 2)
    with pytest.raises(GuaranteeCheckError):
        check_describe_plan(p)


def test_planner_constants_cannot_overspend(monkeypatch):
    monkeypatch.setattr(aggregates, "SUM_SHARE", 1.2)  # count epsilon would be negative
    with pytest.raises((AssertionError, GuaranteeCheckError, ParameterError)):
        p = plan_describe(1.0, 1)
        assert p.count_epsilon > 0


# -- the aggregates --------------------------------------------------------------------------
def test_centred_integer_sum_is_bounded_per_row():
    x = np.array([-1e300, -2.0, 0.0, 1.0, 3.0, 1e300])
    k = 1 << aggregates.SUM_FRACTION_BITS
    s = centred_integer_sum(x, -1.0, 3.0, 1.0)
    # clamp: -1, -1, 0, 1, 3, 3; p = 1, gamma = 2/k
    assert s == round((-2 - 2 - 1 + 0 + 2 + 2) / (2 / k))
    # pivot 0: gamma = max(3 - 0, 0 + 1)/k = 3/k
    assert centred_integer_sum(x, -1.0, 3.0, 0.0) == round((-1 - 1 + 0 + 1 + 3 + 3) / (3 / k))
    for pivot in (1.0, 0.0, -1.0):
        base = centred_integer_sum(x, -1.0, 3.0, pivot)
        for extra in (-1e308, 7.0, 1.0):
            d = centred_integer_sum(np.append(x, extra), -1.0, 3.0, pivot) - base
            assert abs(d) <= k


def _pivot_cost(p: float, lo: float, c: float, hi: float, en: float, es: float) -> float:
    return math.hypot(max(hi - p, p - lo) / es, (c - p) / en)


def test_pivot_minimises_the_predicted_variance_between_centre_and_midpoint():
    # skewed: p* = c + (U − c)·ε_n²/(ε_n² + ε_S²), off the median towards the far bound
    share = 0.18**2 / (0.18**2 + 0.42**2)
    p = aggregates.choose_pivot(0.0, 100.0, 16000.0, 0.18, 0.42)
    assert p == pytest.approx(100.0 + 15900.0 * share, rel=1e-12)
    grid = np.linspace(100.0, 8000.0, 4001)  # every p between c and m does no better
    costs = [_pivot_cost(q, 0.0, 100.0, 16000.0, 0.18, 0.42) for q in grid]
    assert _pivot_cost(p, 0.0, 100.0, 16000.0, 0.18, 0.42) <= min(costs) + 1e-9
    assert _pivot_cost(p, 0.0, 100.0, 16000.0, 0.18, 0.42) < 0.93 * _pivot_cost(
        100.0, 0.0, 100.0, 16000.0, 0.18, 0.42)  # 8% below the centre's
    # symmetric: the midpoint (p* beyond it is clamped back)
    assert aggregates.choose_pivot(-10.0, 0.5, 10.0, 0.18, 0.42) == 0.0
    # a centre below L is clamped to L first, then moved towards U
    assert aggregates.choose_pivot(0.0, -5.0, 10.0, 0.18, 0.42) == pytest.approx(
        10.0 * share)
    # the mirror case (c above the midpoint): towards L
    assert aggregates.choose_pivot(-16000.0, -100.0, 0.0, 0.18, 0.42) == pytest.approx(
        -100.0 - 15900.0 * share)
    # bounds at the ends of the floats: finite, no overflow
    assert aggregates.choose_pivot(-1.7e308, 0.0, 1.7e308, 0.18, 0.42) == 0.0


def test_describe_cell_accuracy_and_clipping_on_a_heavy_tail():
    x = np.sort(np.random.default_rng(5).lognormal(0.0, 1.0, 50_000))
    p = plan_describe(1.0, 1)
    rng = seeded(21)
    errs, clips = [], []
    for _ in range(12):
        c = describe_cell(x, p, rng)
        assert c.lower <= c.upper and c.mean is not None and c.count is not None
        errs.append(abs(c.mean - x.mean()) / x.mean())
        clips += [int(np.sum(x < c.lower)), int(np.sum(x > c.upper))]
        assert max(abs(c.lower), abs(c.upper)) < 1000 * x.max()
    assert np.median(errs) < 0.01
    assert max(clips) <= p.side_clip_bound()
    # the bounds are aimed: the upper side clips some rows in most runs (not the max)
    assert np.mean(np.array(clips[1::2]) > 0) >= 0.5


def test_run_describe_draw_order_and_groups_in_parallel():
    rs = np.random.default_rng(1)
    vals = {("a", 0): rs.normal(10, 2, 3000), ("b", 0): rs.normal(-5, 1, 2000),
            ("a", 1): rs.exponential(3, 3000), ("b", 1): rs.exponential(1, 2000)}
    p = plan_describe(2.0, 2)
    res = run_describe(p, vals, ["a", "b", "c"], ["x", "y"], seeded(9))
    # a stream per group; in it the group's centres first, then per cell the sides and
    # the noise (tests/core/test_describe_stats.py checks the order against an
    # independent re-draw)
    seeds = seeded(9).stream_seeds(3)
    for gi, g in enumerate(["a", "b", "c"]):
        rng = RandomSource.stream(seeds[gi])
        centres = [tail_bounds.draw_centre(vals.get((g, j), np.zeros(0)), p.centre_rate, rng)
                   for j in range(2)]
        for j in range(2):
            x = vals.get((g, j), np.zeros(0))
            stats = describe_stats.cell_statistics(x, centres[j])
            assert aggregates.finish_cell(p, centres[j], stats, rng) == res.cells[gi][j]
    # one charge for any number of groups: the guarantee is the plan's
    many = run_describe(p, vals, [f"g{i}" for i in range(40)], ["x", "y"], seeded(2))
    assert many.guarantee == res.guarantee == p.guarantee
    assert res.to_dict()["seeded"] and "warning" in res.to_dict()
    assert [r["group"] for r in res.rows()] == ["a", "a", "b", "b", "c", "c"]
    with pytest.raises(ParameterError, match="twice"):
        run_describe(p, vals, ["a", "a"], ["x", "y"], seeded(1))


def test_random_plans_are_verified_and_within_budget():
    rs = np.random.default_rng(8)
    for _ in range(200):
        eps = float(np.exp(rs.uniform(np.log(1e-3), np.log(50))))
        d = int(rs.integers(1, 300))
        stats = tuple(s for s in aggregates.STATISTICS if rs.random() < 0.6)
        nb = str(rs.choice(["add-remove", "replace-one"]))
        p = plan_describe(eps, d, statistics=stats, neighbouring=nb,
                          query_epsilon=None if stats else eps / d)
        assert p.check is not None and p.check.epsilon <= eps
        assert p.guarantee.epsilon <= eps and p.guarantee.delta == 0.0
        assert p.target >= 1 and p.centre_rows > 0


def test_centre_rows_statement_holds_on_a_small_group():
    p = plan_describe(4.0, 1)
    n = p.centre_rows
    x = np.sort(np.random.default_rng(3).uniform(100.0, 200.0, n))
    rng = seeded(4)
    pieces = tail_bounds.centre_pieces(x, epsilon=p.centre_epsilon)
    probs = pieces.probabilities()
    grid = FloatBins(tail_bounds.CENTRE_BITS)
    lo, hi = grid.index_of(x[0]), grid.index_of(x[-1])
    inside = sum(float(pr) for pr, st, sz in zip(probs, pieces.starts, pieces.sizes,
                                                 strict=True)
                 if lo <= int(st) and int(st) + int(sz) - 1 <= hi)
    assert 1.0 - inside <= p.beta
    c = tail_bounds.draw_centre(x, p.centre_rate, rng)
    assert grid.lower_value(lo) <= c <= x[-1]


def test_a_side_crossing_zero_passes_through_zero():
    # through 0, then outward from zero again from |c|·2^-ZERO_RESTART_BITS (= 2^-4):
    # the next candidate is the first offset 2^(k/8) at or above it (its bin's edge)
    assert tail_bounds.ZERO_RESTART_BITS == 4
    step = 2.0 ** (1 / tail_bounds.STEPS_PER_OCTAVE) * (1 + 2.0**-11)
    lo = tail_bounds.candidates(1500.0, "lower")
    i = int(np.argmax(lo <= 0))
    start = 1500.0 / 16
    assert lo[i] == 0.0 and -start * step < lo[i + 1] <= -start * (1 - 2.0**-11)
    up = tail_bounds.candidates(-3.0, "upper")
    j = int(np.argmax(up >= 0))
    start = 3.0 / 16
    assert 0 <= up[j] < 1e-300 and start * (1 - 2.0**-11) <= up[j + 1] < start * step
    # the lazy stream makes the same points past zero
    for c, side in ((1500.0, "lower"), (-3.0, "upper"), (0.37, "lower"), (-1e-300, "upper")):
        full = tail_bounds.candidates(c, side)
        assert np.array_equal(tail_bounds.CandidateStream(c, side).upto(len(full)), full)
    # on data of one sign the lower bound stays near zero (within the restart's scale)
    x = np.sort(np.random.default_rng(6).uniform(1.0, 2400.0, 20_000))
    p = plan_describe(1.0, 1)
    rng = seeded(12)
    for _ in range(20):
        c = describe_cell(x, p, rng)
        assert c.lower > -2400.0 / 16


@pytest.mark.parametrize("n,d", [(0, 1), (1, 3), (1, 1), (7, 2)])
def test_integer_bernoulli_exp_frequency_with_power(n, d):
    from scipy.stats import binomtest
    rng = seeded(60 + n)
    draws = 4000
    hits = sum(rng._bernoulli_exp_int(n, d) for _ in range(draws))
    assert binomtest(hits, draws, math.exp(-n / d)).pvalue > 1e-3
    if n:
        assert binomtest(hits, draws, math.exp(-1.3 * n / d)).pvalue < 1e-3


def test_clipped_rows_meet_the_issue_target_on_a_heavy_tail():
    """Issue #23's clipping target: at most 1/(2ε_q) + 20/ε_b rows per side in ≥ 95% of
    runs (ε_q the query's, ε_b the bounds' ε per column); and aimed, not covering: the
    upper side clips at least one row in most runs. A target or margin constant several
    times too large, or a threshold share far off, fails it."""
    x = np.sort(np.random.default_rng(9).pareto(1.5, 30_000) + 1.0)
    p = plan_describe(1.0, 1)
    limit = 1 / (2 * (p.count_epsilon + p.sum_epsilon)) + 20 / p.bounds_epsilon
    rng = seeded(31)
    clips = []
    for _ in range(30):
        lo, hi = _bounds(x, p, rng)
        clips += [int(np.sum(x < lo)), int(np.sum(x > hi))]
    assert np.mean(np.array(clips) <= limit) >= 0.95
    assert np.mean(np.array(clips[1::2]) >= 1) >= 0.7


def _bounds(x: np.ndarray, p: aggregates.DescribePlan, rng: RandomSource) -> tuple[float, float]:
    c = describe_cell(x, p, rng)
    return c.lower, c.upper


# -- issue #23's clipping check: the split, the margin and the centre grid ----------------------
def test_split_constants_hold_the_clip_limit_and_the_runaway():
    """The default split and the sides' prior: a step clipping the issue's limit
    1/(2ε_S) + 20/ε_b rows weighs at most 10⁻⁶ of the target step (before the prior's
    pull over a gap), and a bound 1000× past the data has probability below 10⁻¹⁵ a side.
    A decay of 1/4 (runaway 1.2·10⁻⁸ — 23,000 sides of evidence would still be clean, but
    the statement moves) or a margin of 3.375 (the earlier targets: 1.0·10⁻⁶) fails it."""
    assert (aggregates.CENTRE_SHARE, aggregates.SIDES_SHARE, aggregates.SUM_SHARE,
            aggregates.TARGET_FACTOR, aggregates.MARGIN_FACTOR, step_exponential.DECAY) == (
        0.05, 0.3, 0.8, 0.5, 2.0, Fraction(1, 2))
    for eps, target in ((0.5, 16), (1.0, 8), (4.0, 2)):
        p = plan_describe(eps, 1)
        assert p.target == target
        limit = p.clip_limit
        assert limit == pytest.approx(1 / (2 * 0.52 * eps) + 20 / (0.35 * eps), rel=1e-6)
        assert p.clip_weight(math.ceil(limit)) < 1e-6
        assert p.runaway(aggregates.RUNAWAY_STEPS[1]) < 1e-15
        assert p.runaway(16) == pytest.approx(math.exp(-0.5 * 16) / -math.expm1(-0.5))
        assert p.clip_weight(p.target) == 1.0


def test_centre_grid_is_fine_enough_to_start_in_the_bulk():
    """The centre is the smallest float of its FloatBins(4) bin (≤ 1/16 wide): on a column
    whose median sits high in a wide bin (diamonds depth: median 61.8, a thin lower tail
    from 56 down), the centre stays within 1/16 of the median, so the lower side starts in
    the bulk. With FloatBins(2) (bins ≤ 1/4 wide) it was 56.0, inside the thin tail, and
    every fine offset of the search became a test at a tail count near the limit."""
    assert tail_bounds.CENTRE_BITS == 4
    x = np.sort(np.concatenate([np.random.default_rng(3).normal(61.8, 1.0, 50_000),
                                np.linspace(43.0, 56.0, 60)]))
    p = plan_describe(1.0, 1)
    rng = seeded(5)
    med = float(np.median(x))
    for _ in range(20):
        c = tail_bounds.draw_centre(x, p.centre_rate, rng)
        assert med * (1 - 1 / 16) - 1.0 <= c <= med
    grid = FloatBins(tail_bounds.CENTRE_BITS)
    i = grid.index_of(61.8)
    assert tail_bounds.centre_value(i) == 60.0
    assert grid.size == 1 << 16


def dewpoint_like(below: int) -> np.ndarray:
    """A weather-dewpoint-like column, sorted: 26,000 rows about N(42, 12²) (centre near
    40) and ``below`` rows uniform in [−10, 0)."""
    return np.sort(np.concatenate([np.random.default_rng(4).normal(42.0, 12.0, 26_000),
                                   -np.random.default_rng(5).uniform(0.0, 10.0, below)]))


def test_zero_restart_lets_a_side_reach_the_rows_past_zero(monkeypatch):
    """A dewpoint-like column (centre 40, 179 rows in [−10, 0)) at ε = 0.5: with the
    restart at |c|·2^-4 the lower side's law clips more than the issue's limit with
    probability below 10⁻³; at 2^-10 the six extra octaves of steps between 0 and the
    rows cost the prior 24 nats, more than clipping the rows costs, and the side clips
    every one of them almost surely (what ``ZERO_RESTART_BITS`` = 10 did to weather
    dewp)."""
    x = dewpoint_like(179)
    p = plan_describe(0.5, 1)

    def clips_over_limit() -> float:
        lo = tail_bounds.side_candidates(40.0, "lower")  # uncached: reads the constant
        q = tail_bounds.tail_counts(x, lo, "lower")
        law = step_exponential.step_law(q, p.target, p.side_epsilon, len(lo))
        return float(law[q > p.clip_limit].sum())

    assert clips_over_limit() < 1e-3
    monkeypatch.setattr(tail_bounds, "ZERO_RESTART_BITS", 10)
    assert clips_over_limit() > 0.5


def test_a_side_crossing_zero_does_not_retest_the_tail_below_zero_at_tiny_offsets():
    """Past zero the offsets restart at |c|·2^-4, not at 2^-32: on data reaching below
    zero (weather dewpoint: centre near 40, 221 rows below 0) the search makes a few
    steps at the tail count #{x < 0}, not hundreds."""
    x = dewpoint_like(221)
    c = 40.0
    lo = tail_bounds.candidates(c, "lower")
    q = tail_bounds.tail_counts(x, lo, "lower")
    at_zero = int((x < 0).sum())
    same = int(np.sum((lo <= 0) & (lo > -c / 16 * 1.01) & (q == at_zero)))
    assert same <= 1  # 0 itself; before, every offset 2^-32 … 2.5 (hundreds of steps)
    assert int(np.sum((lo < 0) & (lo > -c / 16))) == 0
