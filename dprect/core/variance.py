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
h = (U − L)/2, both exact rationals: Q = Σ (clamp(x̃, L, U) − m)² exactly
(:func:`centred_squares`). A row adds a term in [0, h²], so adding or removing one moves
Q by at most h², and R = ⌊Q·2^K/h² + 1/2⌋ (K = ``SQUARE_FRACTION_BITS``;
:func:`integer_squares`) by at most 2^K (⌊· + 1/2⌋ is non-decreasing and commutes with
integer shifts). Released: R̃ = R + DLap(2^K/ε_Q) — (ε_Q, 0)-DP given the bounds.
Centring on m, not 0, cuts the sensitivity from max(L², U²) to ((U − L)/2)².

**The variance** (:func:`released_variance`, post-processing of ñ, the released mean μ̂
(itself of ñ and S̃) and R̃): v = h²·R̃/2^K / max(1, ñ) − (μ̂ − m)², clipped to
[0, h²] (the variance of values in [L, U] is at most h²); std = √v. It estimates the
population variance (divisor n) of the clamped values: Σ(c − m)²/n − (c̄ − m)². No noise
interval is released for them (the estimate is a ratio with a squared term: no simple
exact interval; stated in privacy.md §17).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dprect.core.describe_stats import EXPONENT_BIAS, CellStatistics, unpack

#: K: the integer sum of squares' per-row clip is 2^K units of γ₂ = h²/2^K
SQUARE_FRACTION_BITS = 30
_LARGEST = float(np.finfo(np.float64).max)


def midpoint_and_half(lower: float, upper: float) -> tuple[Fraction, Fraction]:
    """(m, h) = ((L + U)/2, (U − L)/2) exactly."""
    lo, hi = Fraction(lower), Fraction(upper)
    return (lo + hi) / 2, (hi - lo) / 2


def centred_squares(stats: CellStatistics, lower_step: int, upper_step: int,
                    lower: float, upper: float) -> Fraction:
    """Q = Σ (clamp(x̃, L, U) − m)² exactly, for L = the lower candidate ``lower_step``
    and U = the upper one ``upper_step`` (their values ``lower``, ``upper``): a row
    below L or above U adds h², a row between adds (x̃ − m)², summed as
    Σx̃² − 2m·Σx̃ + n·m² from the exact sums per (interval, exponent). A cell without
    rows has Q = 0 (its statistics, made for no bins, carry no squares)."""
    if not len(stats.keys):
        return Fraction(0)
    if stats.squares is None:
        raise ValueError("these statistics were counted without squares")
    m, h = midpoint_and_half(lower, upper)
    interval, exponent = unpack(stats.keys)
    mid = (interval > -lower_step - 1) & (interval < upper_step + 1)
    outside = int(stats.counts[~mid].sum())
    n_mid = int(stats.counts[mid].sum())
    if not n_mid:
        return outside * h * h
    e_mid = [int(e) - EXPONENT_BIAS for e in exponent[mid].tolist()]
    s_mid = [int(s) for s in stats.sums[mid].tolist()]
    q_mid = [int(q) for q in stats.squares[mid].tolist()]
    base = min(e_mid)
    first = sum(s << (e - base) for s, e in zip(s_mid, e_mid, strict=True))
    second = sum(q << (2 * (e - base)) for q, e in zip(q_mid, e_mid, strict=True))
    sum_x = _scaled(first, base)
    sum_x2 = _scaled(second, 2 * base)
    return outside * h * h + sum_x2 - 2 * m * sum_x + n_mid * m * m


def _scaled(acc: int, exponent: int) -> Fraction:
    return Fraction(acc, 1 << -exponent) if exponent < 0 else Fraction(acc << exponent)


def integer_squares(centred: Fraction, lower: float, upper: float,
                    sensitivity: int = 1 << SQUARE_FRACTION_BITS) -> int:
    """R = ⌊Q·k/h² + 1/2⌋ (0 when h = 0): a row moves Q by at most h², so R by at most
    k (module notes)."""
    _, h = midpoint_and_half(lower, upper)
    if h <= 0:
        return 0
    q = centred * int(sensitivity) / (h * h) + Fraction(1, 2)
    return q.numerator // q.denominator


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


__all__ = ["SQUARE_FRACTION_BITS", "centred_squares", "integer_squares",
           "midpoint_and_half", "released_variance"]
