"""The variance and standard deviation of a query cell (issue #41 point 4; proof in
docs/privacy.md §17): an exact clamped sum of squares about the released bounds' midpoint,
its integer form of per-row clip 2^K, and the variance as post-processing of the noisy
count, clamped sum and sum of squares.

**Sufficient statistics.** A row's truncated value is x̃ = M·2^(e − EXPONENT_BIAS)
(:mod:`dprect.core.describe_stats`, |M| < 2^30), so x̃² = M²·2^(2(e − EXPONENT_BIAS)) with
M² < 2^60. Per search bin (one exponent e) an engine keeps Σ M² exactly: each M² is cut
into two words of 30 bits, M² = hi·2^30 + lo with 0 ≤ hi, lo < 2^30
(:func:`~dprect.core.describe_stats.square_words`) — each word is a value below 2^30 a
row, exactly what the significand sums already are, so the same exact reduction sums them
(:func:`~dprect.core.describe_stats.sum_by_key`) — and Σ M² = 2^30·Σ hi + Σ lo
(:func:`~dprect.core.describe_stats.bin_squares`; Python integers).

**The query.** Given the released bounds L ≤ U (candidate edges, so a row's clamp is
read off its interval as for the sum), midpoint m = (L + U)/2 and half-width
h = (U − L)/2, both exact rationals: Q = Σ (clamp(x̃, L, U) − m)² exactly. A row adds a
term in [0, h²], so adding or removing one moves Q by at most h², and
R = ⌊Q·2^K/h² + 1/2⌋ (K = ``SQUARE_FRACTION_BITS``; :func:`released_squares`, in
integers) by at most 2^K (⌊· + 1/2⌋ is non-decreasing and commutes with
integer shifts). Released: R̃ = R + DLap(2^K/ε_Q) — (ε_Q, 0)-DP given the bounds.
Centring on m, not 0, cuts the sensitivity from max(L², U²) to ((U − L)/2)².

**The variance** (:func:`released_variance`, post-processing of ñ, the released mean μ̂
(itself of ñ and S̃) and R̃): v = h²·R̃/2^K / max(1, ñ) − (μ̂ − m)², clipped to
[0, h²] (the variance of values in [L, U] is at most h²); std = √v. It estimates the
population variance (divisor n) of the clamped values: Σ(c − m)²/n − (c̄ − m)².

**The noise interval** (:func:`spread_intervals`; privacy.md §17, Lemma V3 and Theorem V4):
at the stated level λ (α = 1 − λ), post-processing of ñ, S̃, R̃ and the plan. Its target
is the variance without noise, v* = Q/n − (μ − m)² (μ = V/n the mean's target, n ≥ 1
rows). Q/n is a mean of per-row terms in [0, h²] released exactly as the mean's centred
sum is (R̃ = ⌊Q/γ₂ + ½⌋ + DLap(ε_Q/k), γ₂ = h²/k, with the same ñ), so the mean's test
inversion (:func:`~dprect.core.intervals.mean_interval`, with the pivot 0, the range
[0, h²] and ε_Q) gives Q/n an interval [a₋, a₊] through the JOINT law of the count and
squares noises (:func:`squares_span`). A union bound over two events, α/2 each
(:data:`SPREAD_PARTS`): Q/n ∈ [a₋, a₊] and μ in the mean's interval at level 1 − α/2, on
which (μ − m)² ∈ [d₋², d₊²] (the least and the largest distance from m on it), so
v* ∈ [a₋ − d₊², min(a₊, h²) − d₋²] ∩ [0, h²], rounded outward to floats. The std's
interval is its square roots (√ is increasing), rounded outward. Conservative: the two
errors rarely reach their extremes together.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

from dprect.core.describe_stats import EXPONENT_BIAS, CellStatistics, dyadic, unpack
from dprect.core.intervals import mean_interval

#: K: the integer sum of squares' per-row clip is 2^K units of γ₂ = h²/2^K
SQUARE_FRACTION_BITS = 30
#: the variance's interval splits α evenly over this many events (Q/n's interval and the
#: mean's: a union bound; module notes)
SPREAD_PARTS = 2
_LARGEST = float(np.finfo(np.float64).max)


@lru_cache(maxsize=4096)
def midpoint_and_half(lower: float, upper: float) -> tuple[Fraction, Fraction]:
    """(m, h) = ((L + U)/2, (U − L)/2) exactly (a cell's variance reads it four times:
    made once; ±0.0 give the same Fractions, so one entry serves both)."""
    lo, hi = Fraction(lower), Fraction(upper)
    return (lo + hi) / 2, (hi - lo) / 2


def released_squares(stats: CellStatistics, lower_step: int, upper_step: int,
                     lower: float, upper: float,
                     sensitivity: int = 1 << SQUARE_FRACTION_BITS) -> int:
    """R = ⌊Q·k/h² + 1/2⌋ (0 when h ≤ 0) for Q = Σ (clamp(x̃, L, U) − m)² (module notes;
    L = the lower candidate ``lower_step``, U = the upper one ``upper_step``, their values
    ``lower``, ``upper``; k = ``sensitivity``) — the integer R the noise is added to — in
    Python integers, no Fraction: L = ℓ·2^e and
    U = u·2^e (e the lesser of their exponents, :func:`~dprect.core.describe_stats.dyadic`)
    give m = (ℓ + u)·2^(e−1) and h = (u − ℓ)·2^(e−1); Σx̃ = S·2^b and Σx̃² = S₂·2^(2b) as
    :func:`_clamped_sums` gives them; so Q = q·2^E with E = 2·min(e − 1, b) and q an
    integer, and R = ⌊Q·k/h² + 1/2⌋ = ⌊(2·q·k + D)/(2·D)⌋ with D = (u − ℓ)²·2^(2(e−1)−E):
    the same rational floored, the same integer (tests/core/test_variance.py's
    rational ``centred_squares`` and ``integer_squares``). The same
    checks in the same order: no rows 0, no squares counted raises, h ≤ 0 gives 0."""
    if not len(stats.keys):  # Q = 0: R = 0 whatever h
        return 0
    outside, n_mid, base, first, second = _clamped_sums(stats, lower_step, upper_step)
    (lm, le), (um, ue) = dyadic(lower), dyadic(upper)
    e = min(le, ue)
    low, high = lm << (le - e), um << (ue - e)
    width = high - low  # h = width·2^(e−1)
    if width <= 0:
        return 0
    em = e - 1  # m = (low + high)·2^em, h = width·2^em
    centre = low + high
    if not n_mid:  # first = second = 0
        base = em
    low_e = 2 * min(em, base)  # E
    q = ((outside * width * width + n_mid * centre * centre) << (2 * em - low_e)) \
        + (second << (2 * base - low_e)) - (2 * centre * first << (em + base - low_e))
    den = width * width << (2 * em - low_e)
    return (2 * q * int(sensitivity) + den) // (2 * den)


def _clamped_sums(stats: CellStatistics, lower_step: int, upper_step: int
                  ) -> tuple[int, int, int, int, int]:
    """(rows outside [L, U], rows between, b, S, S₂) of a cell with rows: Σx̃ = S·2^b and
    Σx̃² = S₂·2^(2b) over the rows between L (the lower candidate ``lower_step``) and U
    (the upper one ``upper_step``), b the least exponent of theirs — integers, the sums
    :func:`released_squares` reads (b = 0 and S = S₂ = 0
    without a row between). Raises where the squares were not counted."""
    if stats.squares is None:
        raise ValueError("these statistics were counted without squares")
    interval, exponent = unpack(stats.keys)
    mid = (interval > -lower_step - 1) & (interval < upper_step + 1)
    outside = int(stats.counts[~mid].sum())
    n_mid = int(stats.counts[mid].sum())
    if not n_mid:
        return outside, 0, 0, 0, 0
    e_mid = [int(e) - EXPONENT_BIAS for e in exponent[mid].tolist()]
    s_mid = [int(s) for s in stats.sums[mid].tolist()]
    q_mid = [int(q) for q in stats.squares[mid].tolist()]
    base = min(e_mid)
    first = sum(s << (e - base) for s, e in zip(s_mid, e_mid, strict=True))
    second = sum(q << (2 * (e - base)) for q, e in zip(q_mid, e_mid, strict=True))
    return outside, n_mid, base, first, second


def released_variance(noisy_squares: int, noisy_count: int, mean: float, lower: float,
                      upper: float, sensitivity: int = 1 << SQUARE_FRACTION_BITS
                      ) -> tuple[float, float]:
    """(variance, std): v = h²·R̃/k / max(1, ñ) − (μ̂ − m)² clipped to [0, h²], and √v
    (post-processing of released values only; computed exactly, rounded to the nearest
    float, the largest float when beyond)."""
    m, h = midpoint_and_half(lower, upper)
    h2 = h * h
    v = h2 * noisy_squares / int(sensitivity) / max(1, noisy_count) - (Fraction(mean) - m) ** 2
    v = min(max(v, Fraction(0)), h2)
    try:
        out = float(v)
    except OverflowError:
        out = _LARGEST
    out = min(out, _LARGEST)
    return out, math.sqrt(out)


def _root_down(v: float) -> float:
    r = math.sqrt(v)
    return math.nextafter(r, 0.0) if r > 0 and r * r > v else r


def _root_up(v: float) -> float:
    r = math.sqrt(v)
    return math.nextafter(r, math.inf) if r * r < v else r


def variance_interval(noisy_squares: int, noisy_count: int, mean_span: tuple[float, float],
                      lower: float, upper: float, count_epsilon: float,
                      squares_epsilon: float, level: float,
                      sensitivity: int = 1 << SQUARE_FRACTION_BITS) -> tuple[float, float]:
    """The variance's interval (module notes): Q/n's interval at level 1 − α/:data:`SPREAD_PARTS`
    (:func:`squares_span`) minus (μ − m)² over ``mean_span``, the mean's interval at the
    same level, clipped to [0, h²]. Exact, in integers: every quantity is a dyadic
    rational (floats, their midpoint and half-width, squares of differences), held as an
    integer times 2^−:data:`_SCALE` (or 2^−2·_SCALE for squares) — the same values as the
    rationals, so the same floats out (:func:`_down_scaled`, :func:`_up_scaled`)."""
    lo_s, hi_s = _scaled_float(lower), _scaled_float(upper)
    m_s, h_s = (lo_s + hi_s) >> 1, (hi_s - lo_s) >> 1  # exact: both scaled floats are even
    h2_s = h_s * h_s
    if h2_s == 0:
        return 0.0, 0.0
    inner = 1.0 - (1.0 - level) / SPREAD_PARTS
    a_lo_s, a_hi_s = (_scaled_float(x) << _SCALE if math.isfinite(x) else h2_s
                      for x in squares_span(noisy_squares, noisy_count, h2_s, count_epsilon,
                                            squares_epsilon, inner, sensitivity))
    a, b = (_scaled_float(x) - m_s for x in mean_span)
    d_min = 0 if a <= 0 <= b else min(abs(a), abs(b))
    d_max = max(abs(a), abs(b))
    v_lo = min(max(a_lo_s - d_max * d_max, 0), h2_s)
    v_hi = min(max(min(a_hi_s, h2_s) - d_min * d_min, 0), h2_s)
    return _down_scaled(v_lo, 2 * _SCALE), _up_scaled(v_hi, 2 * _SCALE)


#: the dyadic rationals of :func:`variance_interval` are held as integers times
#: 2^−_SCALE: every float is k·2^e with e ≥ −1074, so a float times 2^_SCALE is an
#: even integer and the midpoint and half-width of two floats integers too
_SCALE = 1076


def _scaled_float(x: float) -> int:
    """x·2^:data:`_SCALE`, exactly (x finite; its ratio's denominator is 2^j, j ≤ 1074)."""
    p, q = x.as_integer_ratio()
    return p << (_SCALE - (q.bit_length() - 1))


def _exceeds(f: float, n: int, shift: int) -> int:
    """The sign of f − n·2^−shift, exactly (f finite, shift ≥ 1074)."""
    p, q = f.as_integer_ratio()
    d = (p << (shift - (q.bit_length() - 1))) - n
    return (d > 0) - (d < 0)


def _down_scaled(n: int, shift: int) -> float:
    """The largest float ≤ x = n·2^−shift (−largest float below the range, 0 for 0; the
    int division is correctly rounded, as a Fraction's float is)."""
    try:
        f = n / (1 << shift)
    except OverflowError:
        return -_LARGEST if n < 0 else _LARGEST
    f = max(min(f, _LARGEST), -_LARGEST)
    return math.nextafter(f, -math.inf) if _exceeds(f, n, shift) > 0 else f


def _up_scaled(n: int, shift: int) -> float:
    """The smallest float ≥ x = n·2^−shift (inf beyond the range)."""
    try:
        f = n / (1 << shift)
    except OverflowError:
        return math.inf if n > 0 else -_LARGEST
    if math.isinf(f):
        return f
    return math.nextafter(f, math.inf) if _exceeds(f, n, shift) < 0 else f


def squares_span(noisy_squares: int, noisy_count: int, h2_s: int, count_epsilon: float,
                 squares_epsilon: float, level: float,
                 sensitivity: int = 1 << SQUARE_FRACTION_BITS) -> tuple[float, float]:
    """An interval of Q/n at ``level``, for h² = ``h2_s``·2^−2·:data:`_SCALE` (an integer:
    h² of two floats is a dyadic rational): the mean's test inversion
    (:func:`~dprect.core.intervals.mean_interval`) with the pivot 0, the per-row range h²
    (γ₂ = h²/k) and the squares' ε_Q in place of the sum's (privacy.md §17, Lemma V3);
    [0, h²] (h² rounded up to a float) when γ₂ = h²/k underflows to 0 or h² is past a
    float. The released estimate γ₂·R̃/max(1, ñ), clipped to [0, h²], is computed in
    integers: each rational's float correctly rounded by the int division, its
    comparisons exact (tests/core/test_variance_interval.py holds it against the same
    computation in Fractions)."""
    shift = 2 * _SCALE
    top = _up_scaled(h2_s, shift)
    try:
        gamma = h2_s / (int(sensitivity) << shift)
    except OverflowError:
        gamma = 0.0
    if gamma == 0.0 or math.isinf(top):
        return 0.0, top
    # released = γ·R̃/max(1, ñ) = g·R̃ / (max(1, ñ)·2^_SCALE), g = γ·2^_SCALE
    num, den = _scaled_float(gamma) * noisy_squares, max(1, noisy_count) << _SCALE
    if num <= 0:
        estimate = 0.0
    elif num << shift >= h2_s * den:  # released ≥ h² (h² = h2_s·2^−shift)
        estimate = h2_s / (1 << shift)
    else:
        estimate = num / den
    return mean_interval(estimate, noisy_count, noisy_squares, 0.0, gamma, squares_epsilon,
                         sensitivity, count_epsilon, 0.0, top, level)


def spread_intervals(statistics: tuple[str, ...], level: float, noisy_squares: int,
                     noisy_count: int, noisy_sum: int, mean: float, pivot: float,
                     gamma: float, count_epsilon: float, sum_epsilon: float,
                     sum_sensitivity: int, squares_epsilon: float, lower: float,
                     upper: float, squares_sensitivity: int = 1 << SQUARE_FRACTION_BITS
                     ) -> tuple[tuple[str, float, float], ...]:
    """(statistic, low, high) for the ``variance`` and ``std`` among ``statistics``:
    :func:`variance_interval` with the mean's interval at level 1 − α/SPREAD_PARTS, and its
    square roots for the std (post-processing of ñ, S̃, R̃ and the plan only)."""
    want = [s for s in ("variance", "std") if s in statistics]
    if not want:
        return ()
    inner = 1.0 - (1.0 - level) / SPREAD_PARTS
    span = mean_interval(mean, noisy_count, noisy_sum, pivot, gamma, sum_epsilon,
                         sum_sensitivity, count_epsilon, lower, upper, inner)
    lo, hi = variance_interval(noisy_squares, noisy_count, span, lower, upper,
                               count_epsilon, squares_epsilon, level, squares_sensitivity)
    roots = (_root_down(lo), _root_up(hi))
    return tuple((s, *((lo, hi) if s == "variance" else roots)) for s in want)


__all__ = ["SPREAD_PARTS", "SQUARE_FRACTION_BITS",
           "midpoint_and_half", "released_squares", "released_variance",
           "spread_intervals", "squares_span",
           "variance_interval"]
