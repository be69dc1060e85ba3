"""Noise intervals of the released aggregates (issue #41 point 4; proofs in docs/privacy.md
§15): post-processing of the public plan and the mechanism's released values only — no
budget, no row read.

Each interval covers the value the mechanism would release WITHOUT noise (its *target*)
with probability at least the stated level λ (default :data:`DEFAULT_LEVEL`); α = 1 − λ.
What the noise does not cover — the rows the released bounds clip, the 30-bit truncation
of each row — is the target's definition, not an error of the interval.

**Count.** ñ = n + Z_n, Z_n ~ DLap(ε_n) exactly, P(|Z_n| ≥ z) = 2e^{−ε_n z}/(1 + e^{−ε_n})
for an integer z ≥ 1; q = the smallest integer with P(|Z_n| > q) ≤ α
(:func:`count_quantile`); the released count c = max(ñ, 0) gets [max(c − q, 0), c + q].

**The mixed law.** The sum and the mean are off by a·Z_n + γ·Z_S (γ = w/2^K,
Z_S ~ DLap(ε_S/2^K)); as γ·Z_S = s·L + γθ with L ~ Laplace(1), s = w/ε_S and |θ| < 1,
|a·Z_n + γZ_S| ≤ s·|L + (a/s)·Z_n| + γ. H(r) = the smallest h with
P(|L + r·Z_n| > h) ≤ α (:func:`mixed_quantile`, summed over Z_n's exact law), is
non-decreasing in |r|: tabulated on r_i = 10^-4·2^(i/64) and read at the first grid point
≥ |r| (:func:`mixed_quantile_at`, never below the true H); above the grid,
r·q' + ln(1/(α·SPLIT)) with q' the count quantile at α·(1 − SPLIT).

The miss P(|L + r·Z_n| > h) = Σ_z P(|Z_n| = z)·P(|L + r·z| > h) + the far tail is summed
by numpy's pairwise sum of the rounded products (``ndarray.sum``: a fixed order), never
as a BLAS dot product (``p @ m``): OpenBLAS splits a long dot product over its threads
(up to 2^16 terms here), so its rounding — and in a rare bisection step H, hence the
released intervals — depended on how many BLAS threads the process had (one where
``OMP_NUM_THREADS=1`` was set before numpy loaded, as in Spark's workers; the cores
elsewhere: docs/results.md §5.3b 'intervals without BLAS'), and the threads spun on each
call. Where numba loads, the whole search of H runs compiled
(:mod:`dprect.core.intervals_jit`: every miss made there by the same operations, the same
exponentials and the same pairwise sum, so the same bits); without it, the numpy path.

**Sum.** Released R = p·c + γ·S̃ (p the pivot), target V = p·n + T (T the exact centred
clamped sum): for ñ > 0, R ± (s·H(|p|/s) + 3γ/2) at level α₁ = α·(1 − SPLIT); for ñ ≤ 0,
V ∈ [min(0, q₂L), max(0, q₂U)] with q₂ the count quantile at α₂ = α·SPLIT (α₁ + α₂ = α).

**Mean.** Target μ = p + a*, a* = T/n. Given ñ > 0 and G = γ·S̃, the set
A = {a : |G − a·ñ| ≤ s·H(|a|/s) + 3γ/2} holds a* with probability ≥ 1 − α (test
inversion, Fieller-style); its hull is found by shrinking A₀ = [L − p, U − p] by
A_{k+1} = A_k ∩ [(G − h_k)/ñ, (G + h_k)/ñ], h_k = s·H(m_k/s) + 3γ/2, m_k = max |a| on A_k
(every A_k ⊇ A: stopping at any k is conservative). Rounded outward: every float
operation's result is moved one float outward from its correctly rounded value — G = γ·S̃
down and up, A₀'s ends and the ends of each A_k out, |a|/s, s·H, 3γ/2 and h_k up — so the
stated interval holds the hull computed exactly from the floats γ, s, H's values, ñ, p,
L and U (computed to nearest, an end could lie an ulp or two inside it). With c = 0 the
interval is [L, U]; an empty A_k (this run's noise is a miss) gives [mean, mean].
docs/privacy.md §15 states these formulas; tests/core/test_interval_formulas.py computes
them from its text.

**Coverage bounds** (bounds, docs/privacy.md §9). A bound's cell i has badness ≤ T with
probability ≥ 1 − m·e^{−ε_each·T/2} (the exponential mechanism's utility bound, a cell of
badness 0 exists). With both sides of a column at α/2 each, T_λ = (2/ε_each)·ln(2m/α):
with probability ≥ λ, each side of that column clips at most t + T_λ rows and its cell
reaches at least t − T_λ rows (t = max(k_j, α_cov·n) its target): ``rank_error``.

**Quantiles** (docs/privacy.md §11a, §15). The m quantiles of a (group, column) drawn on
the whole grid (M cells, uniform measure: every cell of a plan without the small groups'
centre, and a counted plan's cells whose noisy count is at or above ``split_rows``) are m
independent exponential mechanisms at ε_each; with α/m each, T_λ = (2/ε_each)·ln(m·M/α)
(:func:`rank_error` with d = m): with probability ≥ λ, SIMULTANEOUSLY for every j, the
released value's ranks [#{x < v}, #{x ≤ v}] lie within OPT_j + T_λ rows of q_j·n (OPT_j
the least rank error any cell's value has: 0 unless q_j·n falls strictly inside a cell
whose rows are not its value); sorting the m values keeps it. A small group's draws
(centred, in a window) carry no unconditional statement: their ``rank_error`` is None.

**The small-group flag** (:func:`below_need`, :func:`below_needs`): a cell whose released
noisy count lies below the plan's row need is flagged — post-processing of a released
count and the public plan, like the intervals; the one rule of the flag
:data:`BELOW_ROW_NEED` that describe's and the quantiles' rows, column arrays, tables and
plots carry under that one name (a mixed run's row: :func:`any_below`).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from dprect.core import crmath
from dprect.core.crmath import EXP_ZERO_BELOW, exp_array
from dprect.core.errors import ParameterError

#: the stated level of every interval unless a run names another
DEFAULT_LEVEL = 0.95
#: THE name of the small-group flag (:func:`below_need`) in every record row, table
#: column, summary line and plot note, whichever statistics released it (describe's,
#: the quantiles', a mixed run's): one word for one concept
BELOW_ROW_NEED = "below_row_need"
#: the name the quantiles' records gave the flag until session 49: read in a recorded
#: row (a replay of an older record), never written
FORMER_BELOW_ROW_NEED = "below_rows_needed"
#: the share of α the sum's ñ ≤ 0 case sets aside (α₂ = α·SPLIT; module notes)
SPLIT = 0.01
#: the grid of H: r_i = GRID_START·2^(i/GRID_PER_OCTAVE), i = 0 … GRID_POINTS − 1
GRID_START = 1e-4
GRID_PER_OCTAVE = 64
GRID_POINTS = 64 * 27  # up to about 1.3·10^4
#: the most values of Z_n's folded law kept exactly (past it, runs of values are merged
#: onto their largest: :func:`_count_law`)
LAW_POINTS = 1 << 16
#: Z_n's law is summed to where its far tail is below α times this (counted as a miss)
TAIL_SHARE = 1e-9
_BISECTIONS = 64


def check_level(level: object, name: str = "interval_level") -> float:
    """The stated level: a finite number in (0, 1)."""
    if isinstance(level, bool) or not isinstance(level, int | float) \
            or not math.isfinite(level) or not 0 < level < 1:
        raise ParameterError(f" must be a number in (0, 1), got {level!r}", parameter=name)
    return float(level)


def dlap_tail(rate: float, z: int) -> float:
    """P(|Z| ≥ z) for Z ~ DLap(rate) (P(Z = k) ∝ e^{−rate·|k|}): 2e^{−rate·z}/(1 + e^{−rate})
    for an integer z ≥ 1, and 1 for z ≤ 0."""
    if z <= 0:
        return 1.0
    return 2.0 * crmath.exp(-rate * z) / (1.0 + crmath.exp(-rate))


@lru_cache(maxsize=4096)
def count_quantile(rate: float, alpha: float) -> int:
    """The smallest integer q ≥ 0 with P(|Z| > q) = P(|Z| ≥ q + 1) ≤ α, Z ~ DLap(rate)
    (cached: a few (rate, α) a plan, asked for by every cell; the tails are
    :mod:`dprect.core.crmath`'s correctly rounded exponentials)."""
    if not rate > 0 or not 0 < alpha < 1:
        raise ParameterError(f"count_quantile needs rate > 0 and alpha in (0, 1), got "
                             f"{rate!r}, {alpha!r}")
    guess = crmath.log(2.0 / (alpha * (1.0 + crmath.exp(-rate)))) / rate - 1.0
    q = max(0, math.ceil(guess) - 1)
    while dlap_tail(rate, q + 1) > alpha:
        q += 1
    while q > 0 and dlap_tail(rate, q) <= alpha:
        q -= 1
    return q


def _laplace_miss(h: float, shifts: np.ndarray) -> np.ndarray:
    """P(|L + c| > h) for L ~ Laplace(1), h ≥ 0, at each |c| in ``shifts`` (≥ 0,
    non-decreasing): P(L > h − c) — ½e^{c−h} for c ≤ h (the shifts before
    ``searchsorted(shifts, h)``), 1 − ½e^{h−c} past it — plus P(L < −h − c) = ½e^{−(h+c)}.
    Each element by the same float operations as the two branches computed everywhere
    and selected (the same bits: tests/core/test_intervals.py), with two exponentials an
    element instead of three, all in one call of :func:`~dprect.core.crmath.exp_array`
    (correctly rounded: the same bits on every machine; its cost is partly per call):
    the bisections of :func:`mixed_quantile` call it ~70 times a grid point, over tens of
    thousands of values at a small count ε (docs/results.md §5.3b)."""
    k = int(np.searchsorted(shifts, h, side="right"))
    n = len(shifts)
    args = np.empty(2 * n)  # the exponents, all in one exp_array call (its cost a call)
    # c − h; h − c, exactly −(c − h); −h − c, exactly −(h + c) (round to nearest is
    # symmetric in sign; a zero's sign does not change e^x)
    np.subtract(shifts[:k], h, out=args[:k])
    np.subtract(h, shifts[k:], out=args[k:n])
    np.subtract(-h, shifts, out=args[n:])
    # e^x is 0.0 below EXP_ZERO_BELOW: on a prefix of the near part (c − h increasing)
    # and on suffixes of the far part and the tail (decreasing); exp_array on the rest
    a = int(np.searchsorted(args[:k], EXP_ZERO_BELOW, side="left"))
    b = n - int(np.searchsorted(args[k:n][::-1], EXP_ZERO_BELOW, side="left"))
    c = 2 * n - int(np.searchsorted(args[n:][::-1], EXP_ZERO_BELOW, side="left"))
    if c - n == n and b - a == n:
        e = exp_array(args)
    else:
        e = np.zeros(2 * n)
        live = exp_array(np.concatenate((args[a:b], args[n:c])))
        e[a:b] = live[:b - a]
        e[n:c] = live[b - a:]
    e *= 0.5  # ½e^{c−h}, ½e^{h−c}, ½e^{−(h+c)}
    out, tail = e[:n], e[n:]
    np.subtract(1.0, out[k:], out=out[k:])  # 1 − ½e^{h−c}, exactly (−½e^{h−c}) + 1
    out += tail
    return out


@lru_cache(maxsize=64)
def _count_law(rate: float, alpha: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Z_n's law folded on |z|: values 0 … K, their probabilities P(|Z| = z), and the far
    tail P(|Z| > K) ≤ α·TAIL_SHARE.

    Past :data:`LAW_POINTS` values (a tiny ε: K grows as 1/rate) the values are taken in
    runs of s and each run's mass is put on its LARGEST value: P(|L + c| > h) grows with
    |c|, so the miss computed from the coarsened law is never below the exact one and the
    H found from it is an upper bound still (memory bounded at any ε)."""
    k = count_quantile(rate, alpha * TAIL_SHARE)
    if k + 1 <= LAW_POINTS:
        z = np.arange(k + 1, dtype=np.float64)
        norm = -crmath.expm1(-rate) / (1.0 + crmath.exp(-rate))
        p = norm * exp_array(-rate * z)
        p[1:] *= 2.0
        return z, p, dlap_tail(rate, k + 1)
    step = -(-(k + 1) // LAW_POINTS)
    tops = np.minimum(np.arange(step - 1, k + step, step, dtype=np.float64), float(k))
    starts = np.concatenate(([0.0], tops[:-1] + 1.0))
    below = 2.0 / (1.0 + crmath.exp(-rate))  # P(|Z| ≥ a) = below·e^{−rate·a} for a ≥ 1
    p = below * (exp_array(-rate * starts) - exp_array(-rate * (tops + 1.0)))
    p[0] = 1.0 - below * crmath.exp(-rate * (tops[0] + 1.0))
    return tops, p, dlap_tail(rate, k + 1)


def mixed_quantile(r: float, rate: float, alpha: float) -> float:
    """H(r): an h with P(|L + r·Z| > h) ≤ α, L ~ Laplace(1), Z ~ DLap(rate) independent,
    within 10^-12 (relative) above the smallest such h (bisection on the exact tail)."""
    z, p, far = _count_law(rate, alpha)
    shifts = abs(r) * z
    lo, hi = 0.0, crmath.log(2.0 / alpha) + abs(r) * (count_quantile(rate, alpha / 2) + 1)
    kernel = _bisection_kernel()
    if kernel is not None:  # the same search compiled, the same bits (module notes)
        return _compiled_search(kernel, shifts, p, far, alpha, lo, hi)

    def miss(h: float) -> float:
        terms = _laplace_miss(h, shifts)
        terms *= p
        return float(terms.sum()) + far  # numpy's pairwise sum, not BLAS (module notes)

    while miss(hi) > alpha:
        lo, hi = hi, 2.0 * hi
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if miss(mid) > alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi


@lru_cache(maxsize=1)
def _bisection_kernel() -> Any:
    """:func:`dprect.core.intervals_jit.bisect` (H's search compiled), or None where
    numba does not load or has no cache location (the numpy path then)."""
    try:
        from dprect.core import intervals_jit
    except ImportError:
        return None
    return intervals_jit.bisect


def _compiled_search(kernel: Any, shifts: np.ndarray, p: np.ndarray, far: float,
                     alpha: float, lo: float, hi: float) -> float:
    """:func:`mixed_quantile`'s search by the compiled ``kernel`` from [lo, hi]; the
    exponentials it leaves undecided made here by :func:`exp_array` (decimal), the search
    resumed at the same h."""
    from dprect.core.intervals_jit import HI, LO, RESUME, STATE

    state = np.zeros(STATE)
    state[LO], state[HI] = lo, hi
    n2 = 2 * len(shifts)
    args, e = np.empty(n2), np.empty(n2)
    pending = np.empty(n2, dtype=np.int64)
    tables = (*crmath._table(), crmath._POW2)
    while True:
        left = kernel(shifts, p, far, alpha, _BISECTIONS, state, args, e, pending, *tables)
        if not left:
            return float(state[HI])
        idx = pending[:left]
        e[idx] = exp_array(args[idx])
        state[RESUME] = 1.0


@lru_cache(maxsize=65536)
def _grid_quantile(i: int, rate: float, alpha: float) -> float:
    return mixed_quantile(_grid_point(i), rate, alpha)


def _grid_point(i: int) -> float:
    # 2^(i/64) correctly rounded (crmath: not libm's pow, whose last bit may depend on
    # the CPU), the values pow gave on the machines measured
    return GRID_START * math.ldexp(crmath.octave_steps(GRID_PER_OCTAVE)[i % GRID_PER_OCTAVE],
                                   i // GRID_PER_OCTAVE)


@lru_cache(maxsize=1)
def grid_points() -> np.ndarray:
    """The grid r_0 … r_{GRID_POINTS − 1} as floats (``_grid_point``'s very values,
    increasing), read-only: :func:`mixed_quantile_at`'s index is the first of them
    ≥ |r| (what :mod:`dprect.core.release_jit` finds by bisection)."""
    points = np.array([_grid_point(i) for i in range(GRID_POINTS)], dtype=np.float64)
    points.flags.writeable = False
    return points


@lru_cache(maxsize=64)
def quantile_table(rate: float, alpha: float) -> np.ndarray:
    """H at each grid point for (rate, α), NaN where not made yet: a compiled reader
    (:mod:`dprect.core.release_jit`) asks for a missing one, made by
    :func:`fill_quantile` — the values of ``mixed_quantile_at`` on the grid, made
    lazily as there (one table per plan's (ε_n, α): a few a process)."""
    return np.full(GRID_POINTS, np.nan)


def fill_quantile(table: np.ndarray, i: int, rate: float, alpha: float) -> None:
    """Entry ``i`` of ``quantile_table(rate, alpha)``: H at grid point i."""
    table[i] = _grid_quantile(int(i), rate, alpha)


@lru_cache(maxsize=1)
def _point_list() -> list[float]:
    """:func:`grid_points` as a Python list (searched by :func:`bisect.bisect_left`)."""
    points = grid_points().tolist()
    if any(b <= a for a, b in itertools.pairwise(points)):  # cannot happen: 2^(i/64) grows
        raise AssertionError("the interval grid's points do not increase")
    return points


def mixed_quantile_at(r: float, rate: float, alpha: float) -> float:
    """An upper bound on H(|r|) read from the grid (module notes): H at the first grid
    point ≥ |r| (found by bisection on the points); H(GRID_START) below the grid; the
    discrete regime's bound above it, as the compiled reader
    (:mod:`dprect.core.release_jit`) reads it there too."""
    r = abs(r)
    if r <= GRID_START:
        return _grid_quantile(0, rate, alpha)
    points = _point_list()
    if r <= points[-1]:
        return _grid_quantile(bisect.bisect_left(points, r), rate, alpha)
    # above the grid: no point is ≥ r (r > the last, the points increasing: _point_list)
    # |L + rZ| ≤ r·|Z| + |L|: P(|Z| > q') + P(|L| > ℓ) = α·(1 − SPLIT) + α·SPLIT
    return r * count_quantile(rate, alpha * (1.0 - SPLIT)) + crmath.log(1.0 / (alpha * SPLIT))


def below_need(count: float | None, need: int) -> bool | None:
    """The small-group flag of one cell: whether its released noisy ``count`` lies below
    the plan's row ``need`` (an integer: the rows the plan's accuracy statements ask of a
    group; :data:`BELOW_ROW_NEED`, describe's and the quantiles') — None
    where no count was released. Post-processing of a released value and the public plan
    only. The comparison is exact: Python compares a float (or an int) with an int
    exactly, at any size. THE rule: every record, row and table flag is made by it or by
    :func:`below_needs`, its array form."""
    if count is None:
        return None
    return bool((count if isinstance(count, int | np.integer) else float(count)) < need)


def any_below(flags: Iterable[bool | None]) -> bool | None:
    """The flag of a mixed run's (group, column) row from its parts' flags
    (:func:`below_need` each, or None where a part released none): true when any part
    flags the cell (some of its values may be far off), false when every part that
    released a flag says false, None when none did. Post-processing of released flags;
    each part's own flag stays in its record."""
    released = [bool(f) for f in flags if f is not None]
    return any(released) if released else None


def below_needs(counts: np.ndarray, needs: Sequence[int]) -> np.ndarray:
    """:func:`below_need` of each released count (float64 ``counts``; a NaN is not below)
    against its own row need (``needs``, one per count), as a boolean array — float64's
    comparison where every need is exact as a float64 (below 2^53), else
    :func:`below_need` count by count."""
    if all(abs(n) < 1 << 53 for n in set(needs)):
        return np.asarray(counts, dtype=np.float64) < np.array(needs, dtype=np.float64)
    return np.array([below_need(c, n) for c, n in zip(counts.tolist(), needs, strict=True)],
                    dtype=bool)


def count_interval(count: float, rate: float, level: float) -> tuple[float, float]:
    """[max(c − q, 0), c + q] for the released count c (module notes, Count)."""
    q = count_quantile(rate, 1.0 - level)
    return max(count - q, 0.0), count + q


def sum_interval(total: float, noisy_count: int, pivot: float, gamma: float,
                 sum_epsilon: float, sensitivity: int, count_rate: float,
                 lower: float, upper: float, level: float) -> tuple[float, float]:
    """The interval of the released sum ``total`` (module notes, Sum): ``gamma`` the sum's
    unit γ = w/k (k = ``sensitivity``), so s = γ·k/ε_S."""
    alpha = 1.0 - level
    a1, a2 = alpha * (1.0 - SPLIT), alpha * SPLIT
    if noisy_count <= 0:
        q2 = count_quantile(count_rate, a2)
        return min(0.0, q2 * lower), max(0.0, q2 * upper)
    if gamma == 0.0:
        if lower != upper:  # γ = w/k did not fit a float: no finite statement
            return -math.inf, math.inf
        q = count_quantile(count_rate, alpha)  # L = U = p: the sum is p·ñ, off by p·Z_n
        return (total - abs(pivot) * q, total + abs(pivot) * q)
    s = gamma * sensitivity / sum_epsilon
    h = s * mixed_quantile_at(pivot / s, count_rate, a1) + 1.5 * gamma
    return total - h, total + h


def mean_interval(mean: float, noisy_count: int, noisy_sum: int, pivot: float,
                  gamma: float, sum_epsilon: float, sensitivity: int, count_rate: float,
                  lower: float, upper: float, level: float, rounds: int = 12
                  ) -> tuple[float, float]:
    """The interval of the released mean (module notes, Mean): the hull of the test
    inversion's set, by at most ``rounds`` shrinking steps (each a valid interval)."""
    if noisy_count <= 0 or gamma == 0.0:
        return lower, upper
    alpha = 1.0 - level
    s = gamma * sensitivity / sum_epsilon
    try:
        g = gamma * noisy_sum
    except OverflowError:
        return lower, upper
    lo, hi = _down(lower - pivot), _up(upper - pivot)
    if not (math.isfinite(g) and math.isfinite(lo) and math.isfinite(hi)):
        return lower, upper
    n = float(noisy_count)
    g_lo, g_hi = _down(g), _up(g)  # G = γ·S̃ lies between them
    for _ in range(rounds):
        m = max(abs(lo), abs(hi))
        # each float operation's result moved one float outward (h, |a|/s up; the ends
        # out): the ends hold those of the hull computed exactly (module notes, Mean)
        v = mixed_quantile_at(_up(m / s), count_rate, alpha)
        h = _up(_up(s * v) + _up(1.5 * gamma))
        new_lo = max(lo, _down(_down(g_lo - h) / n))
        new_hi = min(hi, _up(_up(g_hi + h) / n))
        if new_lo > new_hi:  # the set is empty: this run's noise fell outside it
            return mean, mean
        if (new_lo, new_hi) == (lo, hi):
            break
        lo, hi = new_lo, new_hi
    return max(lower, _down(pivot + lo)), min(upper, _up(pivot + hi))


def _down(x: float) -> float:
    """The float below ``x``: below the exact value whose correctly rounded float is x."""
    return math.nextafter(x, -math.inf)


def _up(x: float) -> float:
    """The float above ``x`` (:func:`_down`'s mirror)."""
    return math.nextafter(x, math.inf)


def query_intervals(statistics: tuple[str, ...], level: float, count_epsilon: float,
                    sum_epsilon: float, sensitivity: int, lower: float, upper: float,
                    pivot: float, gamma: float, noisy_count: int, noisy_sum: int | None,
                    count: float, total: float | None, mean: float | None
                    ) -> tuple[tuple[str, float, float], ...]:
    """(statistic, low, high) for each of ``statistics`` a query cell released, from the
    plan's ε_n, ε_S and k, the released bounds, the pivot and γ, the noisy count ñ and
    sum S̃ and the released count, sum and mean (post-processing only)."""
    out = []
    for name in statistics:
        if name == "count":
            out.append(("count", *count_interval(count, count_epsilon, level)))
        elif name == "sum" and total is not None and noisy_sum is not None:
            out.append(("sum", *sum_interval(total, noisy_count, pivot, gamma, sum_epsilon,
                                             sensitivity, count_epsilon, lower, upper,
                                             level)))
        elif name == "mean" and mean is not None and noisy_sum is not None:
            out.append(("mean", *mean_interval(mean, noisy_count, noisy_sum, pivot, gamma,
                                               sum_epsilon, sensitivity, count_epsilon,
                                               lower, upper, level)))
    return tuple(out)


def rank_error(epsilon_each: float, grid_size: int, level: float, draws: int = 2,
               sensitivity: float = 1.0) -> float:
    """T_λ = (2Δ/ε_each)·ln(d·m/α): with probability ≥ λ each of d exponential mechanisms
    at ε_each over m cells (score of sensitivity Δ = ``sensitivity``, drawn at
    ε_each/(2Δ) per unit) has badness ≤ its best cell's + T_λ (a union bound, α/d each).
    ``draws`` d = 2: both coverage bounds of a column, whose best cell has badness 0
    (module notes, Coverage bounds; Δ = 1); d = the m quantiles of a (group, column) on
    the whole grid (module notes, Quantiles; Δ the largest max(q, 1 − q) of the plan).
    Rounded up by 2^-46."""
    alpha = 1.0 - level
    t = 2.0 * sensitivity / epsilon_each * (crmath.log(draws * grid_size) - crmath.log(alpha))
    return math.nextafter(t * (1.0 + 2.0**-46), math.inf)


__all__ = ["BELOW_ROW_NEED", "DEFAULT_LEVEL", "FORMER_BELOW_ROW_NEED", "GRID_PER_OCTAVE",
           "GRID_POINTS", "GRID_START", "SPLIT", "TAIL_SHARE", "any_below", "below_need",
           "below_needs", "check_level", "count_interval", "count_quantile", "dlap_tail",
           "fill_quantile", "grid_points", "mean_interval", "mixed_quantile",
           "mixed_quantile_at", "quantile_table", "query_intervals", "rank_error",
           "sum_interval"]
