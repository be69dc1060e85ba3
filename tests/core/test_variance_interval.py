"""The variance's and the std's noise intervals (dprect/core/variance.py, docs/privacy.md
§17, Lemma V3 and Theorem V4):

* Q/n's interval (the mean's test inversion with the pivot 0, the range [0, h²] and ε_Q)
  holds Q/n in about its level of draws of the two noises' exact laws — not far above
  (it uses their joint law) — and an interval made at a lower level is rejected by the
  same acceptance region (power);
* the variance's interval is the union bound at α/SPREAD_PARTS = α/2 each: Q/n's interval
  at 1 − α/2 less (μ − m)² over the mean's span, and Q/n's holds the brute-force hull of
  the test-inversion set at α/2 (exact H, not the grid) — made at α, or with ε_Q
  doubled, it does not;
* seeded runs of the whole mechanism cover the clamped values' variance (and std) in at
  least the stated level of runs, and intervals made at 0.5 claimed at 0.95 are rejected
  (power); an interval always holds the released variance;
* the production computation (in integers: h² held as an integer times 2^−2·_SCALE)
  equals the same computation in Fractions (the oracles here) bit for bit.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from seeded_source import seeded as _seeded

from dprect.core import variance
from dprect.core.aggregates import plan_describe, run_describe
from dprect.core.intervals import mean_interval, mixed_quantile
from dprect.core.variance import (
    SPREAD_PARTS,
    SQUARE_FRACTION_BITS,
    squares_span,
    variance_interval,
)

K = 1 << SQUARE_FRACTION_BITS
_LARGEST = 1.7976931348623157e308


def _scaled(h2: Fraction) -> int:
    """h² as squares_span takes it: h²·2^(2·_SCALE), an integer (h² of floats is dyadic)."""
    out = h2 * (1 << 2 * variance._SCALE)
    assert out.denominator == 1
    return out.numerator


def _up(x: Fraction) -> float:
    """The smallest float ≥ x (inf beyond the range)."""
    try:
        f = float(x)
    except OverflowError:
        return math.inf if x > 0 else -_LARGEST
    if math.isinf(f):
        return f
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


def _down(x: Fraction) -> float:
    """The largest float ≤ x (±the largest float beyond the range)."""
    try:
        f = float(x)
    except OverflowError:
        return -_LARGEST if x < 0 else _LARGEST
    f = max(min(f, _LARGEST), -_LARGEST)
    return math.nextafter(f, -math.inf) if Fraction(f) > x else f


def _fraction_squares_span(noisy_squares: int, noisy_count: int, h2: Fraction,
                           count_epsilon: float, squares_epsilon: float, level: float,
                           sensitivity: int = K) -> tuple[float, float]:
    """squares_span of h² computed in Fractions (as dprect/core/variance.py had it beside
    the integer form until s32): the oracle the integer computation must equal bit for
    bit."""
    top = _up(h2)
    try:
        gamma = float(h2 / int(sensitivity))
    except OverflowError:
        gamma = 0.0
    if gamma == 0.0 or math.isinf(top):
        return 0.0, top
    released = Fraction(gamma) * noisy_squares / max(1, noisy_count)
    estimate = float(min(max(released, Fraction(0)), h2))
    return mean_interval(estimate, noisy_count, noisy_squares, 0.0, gamma, squares_epsilon,
                         sensitivity, count_epsilon, 0.0, top, level)


def _dlap(rng: np.random.Generator, rate: float, size: int) -> np.ndarray:
    """Draws of DLap(rate) (P(z) ∝ e^{−rate·|z|}) as the difference of two geometric
    variables on {0, 1, …} with ratio e^{−rate}."""
    p = -math.expm1(-rate)
    return (rng.geometric(p, size) - rng.geometric(p, size)).astype(np.int64)


def _accepts(covered: int, runs: int, level: float) -> bool:
    """The acceptance region: coverage at least the level less 3 binomial errors."""
    return covered / runs >= level - 3 * math.sqrt(level * (1 - level) / runs)


@pytest.mark.parametrize("level,made", [(0.9, 0.9), (0.9, 0.75)])
def test_q_over_n_is_covered_at_its_level_from_the_noises_laws(level: float, made: float):
    """n = 400 rows, h² = 3600, Q/n = 700 (Q exact), ε_n = 0.065, ε_Q = 0.325 (the
    default split at ε = 1): R̃ = ⌊Q·k/h² + ½⌋ + DLap(ε_Q/k), ñ = n + DLap(ε_n)."""
    n, h2, a_star = 400, Fraction(3600), Fraction(700)
    eps_n, eps_q, runs = 0.065, 0.325, 3000
    rng = np.random.default_rng(17)
    r = math.floor(a_star * n * K / h2 + Fraction(1, 2))
    noisy_n = n + _dlap(rng, eps_n, runs)
    noisy_r = r + _dlap(rng, eps_q / K, runs)
    covered = 0
    for nn, rr in zip(noisy_n.tolist(), noisy_r.tolist(), strict=True):
        lo, hi = squares_span(rr, nn, _scaled(h2), eps_n, eps_q, made, K)
        covered += int(Fraction(lo) <= a_star <= Fraction(hi))
    if made == level:
        assert _accepts(covered, runs, level), covered / runs
        assert covered / runs <= level + 0.03  # the joint law: not a union bound's slack
    else:  # power: a narrower interval claimed at the level is rejected
        assert not _accepts(covered, runs, level), covered / runs


@pytest.mark.parametrize("noisy_r,noisy_n,mean_span", [
    (int(700 * 400 * K / 3600) + 12_345, 403, (98.0, 101.5)),
    (int(300 * 2000 * K / 3600), 1990, (99.0, 99.5)),
    (int(2000 * 150 * K / 3600), 151, (60.0, 140.0)),
])
def test_the_interval_is_the_union_bound_of_its_two_events(noisy_r, noisy_n, mean_span):
    """L = 40, U = 160 (m = 100, h² = 3600), ε_n = 0.065, ε_Q = 0.325, λ = 0.95: the
    interval is Q/n's at 1 − α/2 = 0.975 less (μ − m)² over the mean's span (at that level
    too: :func:`spread_intervals`); and Q/n's holds the brute-force hull of
    A = {a ∈ [0, h²] : |G − a·ñ| ≤ s·H(a/s) + 3γ₂/2} (G = γ₂R̃, γ₂ = h²/k, s = h²/ε_Q,
    H the exact mixed quantile at α/2 = 0.025; at α, or with ε_Q doubled, it does not)."""
    lower, upper, eps_n, eps_q, level = 40.0, 160.0, 0.065, 0.325, 0.95
    h2, m = 3600.0, 100.0
    assert SPREAD_PARTS == 2
    h2_s = _scaled(Fraction(3600))
    a_lo, a_hi = squares_span(noisy_r, noisy_n, h2_s, eps_n, eps_q, 0.975, K)
    d = [abs(x - m) for x in mean_span]
    d_min = 0.0 if mean_span[0] <= m <= mean_span[1] else min(d)
    lo, hi = variance_interval(noisy_r, noisy_n, mean_span, lower, upper, eps_n, eps_q,
                               level, K)
    assert lo == pytest.approx(max(a_lo - max(d) ** 2, 0.0), rel=1e-12, abs=1e-9)
    assert hi == pytest.approx(min(a_hi, h2) - d_min ** 2, rel=1e-12)
    gamma, s = h2 / K, h2 / eps_q
    g = gamma * noisy_r
    grid = np.linspace(0.0, h2, 1_201)
    inside = [a for a in grid.tolist()
              if abs(g - a * noisy_n) <= s * mixed_quantile(a / s, eps_n, 0.025) + 1.5 * gamma]
    assert a_lo <= min(inside) and max(inside) <= a_hi  # holds the hull
    narrow = squares_span(noisy_r, noisy_n, h2_s, eps_n, eps_q, 0.95, K)
    assert not narrow[0] <= min(inside) or not max(inside) <= narrow[1]  # α, not α/2
    if noisy_n >= 400:  # where the squares noise dominates (on 151 rows the count's does)
        doubled = squares_span(noisy_r, noisy_n, h2_s, eps_n, 2 * eps_q, 0.975, K)
        assert not doubled[0] <= min(inside) or not max(inside) <= doubled[1]


def _target(x: np.ndarray, lower: float, upper: float) -> Fraction:
    """The clamped values' population variance, exactly (x integers: x̃ = x)."""
    c = [Fraction(int(v)) for v in np.clip(x, lower, upper)]
    n, m = len(c), (Fraction(lower) + Fraction(upper)) / 2
    mu = sum(c, Fraction(0)) / n
    return sum(((v - m) ** 2 for v in c), Fraction(0)) / n - (mu - m) ** 2


def _coverage(level: float, runs: int) -> tuple[int, int, int]:
    x = np.round(np.random.default_rng(3).normal(100.0, 20.0, 500))
    plan = plan_describe(1.0, 1, statistics=("mean", "variance", "std"),
                         interval_level=level)
    var_hits = std_hits = holds = 0
    for r in range(runs):
        cell = run_describe(plan, {(None, 0): x}, [None], ["x"], _seeded(5000 + r)).cells[0][0]
        v = _target(x, cell.lower, cell.upper)
        span, roots = cell.interval("variance"), cell.interval("std")
        assert span is not None and roots is not None and cell.variance is not None
        var_hits += int(Fraction(span[0]) <= v <= Fraction(span[1]))
        std_hits += int(Fraction(roots[0]) ** 2 <= v <= Fraction(roots[1]) ** 2)
        holds += int(span[0] <= cell.variance <= span[1])
    return var_hits, std_hits, holds


def test_seeded_runs_cover_the_variance_and_the_std_at_least_at_the_level():
    runs, level = 300, 0.95
    var_hits, std_hits, holds = _coverage(level, runs)
    assert _accepts(var_hits, runs, level) and _accepts(std_hits, runs, level)
    assert holds == runs  # the released variance lies in its own interval
    # power: the same region rejects intervals made at 0.5 claimed at 0.95
    low_var, low_std, _ = _coverage(0.5, runs)
    assert not _accepts(low_var, runs, level) and not _accepts(low_std, runs, level)


def _reference_interval(noisy_squares: int, noisy_count: int,
                        mean_span: tuple[float, float], lower: float, upper: float,
                        count_epsilon: float, squares_epsilon: float, level: float,
                        sensitivity: int = K) -> tuple[float, float]:
    """variance_interval as it was computed in Fractions (before s31): the reference the
    integer computation must equal bit for bit."""
    lo_f, hi_f = Fraction(lower), Fraction(upper)
    m, h = (lo_f + hi_f) / 2, (hi_f - lo_f) / 2
    h2 = h * h
    if h2 == 0:
        return 0.0, 0.0
    inner = 1.0 - (1.0 - level) / SPREAD_PARTS
    a_lo, a_hi = (Fraction(x) if math.isfinite(x) else h2 for x in _fraction_squares_span(
        noisy_squares, noisy_count, h2, count_epsilon, squares_epsilon, inner, sensitivity))
    a, b = (Fraction(x) - m for x in mean_span)
    d_min = Fraction(0) if a <= 0 <= b else min(abs(a), abs(b))
    d_max = max(abs(a), abs(b))
    v_lo = min(max(a_lo - d_max * d_max, Fraction(0)), h2)
    v_hi = min(max(min(a_hi, h2) - d_min * d_min, Fraction(0)), h2)
    return _down(v_lo), _up(v_hi)


def test_the_integer_interval_equals_the_fractions_bit_for_bit():
    """variance_interval in integers (dyadic rationals scaled by 2^1076) gives the
    Fraction computation's floats exactly: bounds of both signs and every scale from
    subnormals to ~10^300 (h²/k past a float, h² past a float), ±0.0, L = U, noisy
    counts ≤ 0, negative and huge noisy squares, mean spans inside, across and outside
    the bounds, and every rounding direction (a result that is exactly a float)."""
    rs = np.random.default_rng(31)
    cases = [(0, 0, (0.0, 0.0), 0.0, 0.0), (5, 3, (-0.0, 0.0), -0.0, 0.0),
             (K, 1, (1.0, 1.0), 1.0, 1.0), (K * 4, 4, (0.5, 1.5), 0.0, 2.0),
             (-K, 7, (-1.0, 2.0), -1.0, 3.0), (10**40, 2, (0.0, 1e300), -1e300, 1e300),
             (3, 1, (5e-324, 1e-323), 0.0, 2e-323), (K, 10, (-1e308, 1e308), -1.7e308, 1.7e308)]
    for _ in range(3000):
        scale = 10.0 ** float(rs.integers(-320, 300))
        lo = float(rs.normal()) * scale
        hi = lo + abs(float(rs.normal())) * scale * float(rs.choice([0.0, 1e-9, 1.0, 30.0]))
        if not (math.isfinite(lo) and math.isfinite(hi)):
            continue
        n = int(rs.integers(-5, 10**6))
        squares = int(rs.integers(-(1 << 40), 1 << 62)) * int(rs.choice([1, 1 << 20]))
        a, b = sorted(float(v) for v in rs.uniform(lo - (hi - lo), hi + (hi - lo), 2))
        cases.append((squares, n, (a, b), lo, hi))
    for squares, n, span, lo, hi in cases:
        for eps in (0.0025, 1.0):
            args = (squares, n, span, lo, hi, 0.0005, eps, 0.95)
            assert variance_interval(*args) == _reference_interval(*args), args


def test_the_integer_squares_span_equals_the_fractions_on_each_branch():
    """squares_span (h² as an integer times 2^−2·_SCALE) gives the Fraction computation's
    floats (_fraction_squares_span) exactly on each of its branches: h²/k underflowing to
    0 (subnormal bounds), h² past a float (top = inf), a released Q/n ≤ 0 (R̃ ≤ 0), at or
    above h² (clipped) and inside."""
    rs = np.random.default_rng(41)
    bounds = [(0.0, 5e-324), (0.0, 1e-300), (-1.7e308, 1.7e308), (0.0, 2.0), (-3.5, 1e6)]
    for _ in range(20):
        scale = 10.0 ** float(rs.integers(-300, 300))
        lo = float(rs.normal()) * scale
        bounds.append((lo, lo + abs(float(rs.normal())) * scale))
    for lo, hi in bounds:
        h = (Fraction(hi) - Fraction(lo)) / 2
        h2 = h * h
        if h2 == 0:
            continue
        for squares, n in ((-K, 3), (0, 5), (K, 1), (4 * K, 1), (K // 3, 7),
                           (int(rs.integers(0, 1 << 40)), int(rs.integers(-2, 10**4)))):
            # both ε_Q on the five fixed bounds, one on the random ones (each ~10 ms)
            for eps in (0.0025, 1.0)[(lo, hi) not in bounds[:5]:]:
                want = _fraction_squares_span(squares, n, h2, 0.0005, eps, 0.975, K)
                got = squares_span(squares, n, _scaled(h2), 0.0005, eps, 0.975, K)
                assert got == want, (lo, hi, squares, n)
    # the first two bounds' h²/k is 0, the third's h² past a float: [0, top] with no test
    assert squares_span(K, 1, 1, 0.0005, 1.0, 0.975, K) == (0.0, 5e-324)
    assert squares_span(K, 1, _scaled(Fraction(1.7e308) ** 2), 0.0005, 1.0, 0.975,
                        K) == (0.0, math.inf)
