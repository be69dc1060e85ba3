"""A block of describe cells released in one compiled call (issue #42): each cell's exact
integer sum S and step γ (:func:`dprect.core.aggregates._sum_and_step`), its released sum
and mean (:func:`~dprect.core.aggregates.released_sum_mean`) and its noise intervals
(:func:`dprect.core.intervals.query_intervals`: count, sum, mean), from arrays — the
post-processing of released values (docs/privacy.md §11, §15), bit for bit what the
Python functions give; a cell this code cannot make exactly is left to them.

Imported only where :mod:`dprect.core.random_jit` loads (numba installed, its cache
writable), by :func:`dprect.core.aggregates._released_many`.

**The exact sum on two words.** With T = n_low·L + n_high·U − n·p + Σ_e S_e·2^(e − 1052)
(:func:`dprect.core.describe_stats.centred_sum_dyadic`) and W = max(U − p, p − L, 0),
S = ⌊T·k/W + 1/2⌋ and γ = W/k rounded (k = 2^K) depend on the rationals T and W only,
not on how they are written: here every term is m·2^(E − B) over B, the least exponent
of a non-zero term (L, U and p as their 53-bit significands with trailing zeros
stripped, each (interval, exponent) entry's significand sum at 2^(e − 1052)), summed
as a signed 128-bit integer A = T·2^−B in two 64-bit words. **The bound:** with N terms,
each |term| < 2^(126 − ⌈log2 N⌉) (checked term by term: its bit length plus its shift),
so |A| ≤ Σ|term| < 2^126 and no partial sum wraps; L, U and p each below 2^124 over
2^B (checked), so W' = W·2^−B < 2^125. Then Q = ⌊|A|·2^K / W'⌋ by long division bit by
bit (the remainder stays below W', so doubling it fits), checked below 2^62, and with R
its remainder S = Q + [2R ≥ W'] for A ≥ 0 and S = −Q − [2R > W'] for A < 0 (⌊x + 1/2⌋
of ±(Q + R/W')). γ = float(W'·2^(B − K)): W' rounded to 53 bits to nearest-even (its
top 64 bits with the rest as a sticky bit), then scaled by a power of two — exact when
the result is a normal float; a subnormal or infinite γ is left to Python (whose int
division rounds it once). A term or a W past the bound, a quotient past 2^62, a sum
or mean that is not finite, a quantile argument that is not finite, or ±inf or NaN
among L, U, p: the cell is left to Python (status 1), and is released there exactly as
before.

**The floats.** The released sum and mean, and the intervals, are the Python functions'
operations in the same order on the same doubles (Python's int → float conversions and
numba's are both correctly rounded, ties to even; ``min``/``max`` pick between equal
values as Python's builtins do: the first unless the second is strictly smaller /
larger). The mixed quantile H at a grid point is read from a table
(:func:`dprect.core.intervals.quantile_table`: the very values of ``_grid_quantile``),
at the first grid point ≥ |r| found by bisection on the grid's floats — the index
``mixed_quantile_at`` finds. A grid value not made yet stops the block at that cell
(:func:`release_block` returns the cell, the table and the index); the caller makes it
and calls again from that cell.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dprect.core import crmath
from dprect.core.describe_stats import EXPONENT_BIAS, EXPONENT_BITS, INTERVAL_OFFSET
from dprect.core.intervals import (
    SPLIT,
    count_quantile,
    fill_quantile,
    grid_points,
    quantile_table,
)
from dprect.core.random_jit import _ONE, _TOP, _jit, _mul_wide

#: a cell's status: released here, or left to Python
DONE, PYTHON = 0, 1
#: the values released per cell: total, mean, count interval, sum interval, mean
#: interval (low, high each), γ
VALUES = 9

_Z = np.uint64(0)
_FRAC = np.uint64((1 << 52) - 1)
_HIDDEN = np.uint64(1 << 52)
#: the least normal double: a γ below it is left to Python (subnormal: rounded once)
_TINY = 2.0 ** -1022


@_jit
def _bitlen(x: Any) -> int:
    """The bit length of the uint64 ``x`` (0 for 0)."""
    n = 0
    while x != _Z:
        x >>= _ONE
        n += 1
    return n


@_jit
def _bitlen2(h: Any, lo: Any) -> int:
    return 64 + _bitlen(h) if h != _Z else _bitlen(lo)


@_jit
def _shl(h: Any, lo: Any, s: int) -> Any:
    """(h, lo) << s for 0 ≤ s < 128 (the caller has checked that nothing is lost)."""
    if s == 0:
        return h, lo
    if s >= 64:
        return lo << np.uint64(s - 64), _Z
    return (h << np.uint64(s)) | (lo >> np.uint64(64 - s)), lo << np.uint64(s)


@_jit
def _add(h1: Any, l1: Any, h2: Any, l2: Any) -> Any:
    lo = l1 + l2
    return h1 + h2 + (_ONE if lo < l1 else _Z), lo


@_jit
def _neg(h: Any, lo: Any) -> Any:
    return _add(~h, ~lo, _Z, _ONE)


@_jit
def _less(h1: Any, l1: Any, h2: Any, l2: Any) -> Any:
    """(h1, l1) < (h2, l2) as signed 128-bit integers."""
    a, b = np.int64(h1), np.int64(h2)
    return a < b or (a == b and l1 < l2)


@_jit
def _float_of(h: Any, lo: Any) -> float:
    """The non-negative 128-bit (h, lo) rounded to the nearest double (ties to even):
    its top 64 bits, the bits below ORed into the lowest as a sticky bit (64 ≥ 53 + 2
    bits, so the one rounding of the 64-bit integer is the correct one)."""
    if h == _Z:
        return float(lo)
    s = _bitlen(h)
    v = (h << np.uint64(64 - s)) | (lo >> np.uint64(s))
    if lo & ((_ONE << np.uint64(s)) - _ONE) != _Z:
        v |= _ONE
    return math.ldexp(float(v), s)


@_jit
def _parts(bits: Any) -> Any:
    """A finite double's (sign, significand, exponent) with x = ±m·2^e, trailing zeros
    of m stripped (m = 0 for ±0)."""
    neg = (bits & _TOP) != _Z
    biased = np.int64((bits >> np.uint64(52)) & np.uint64(0x7FF))
    m = bits & _FRAC
    e = np.int64(-1074) if biased == 0 else biased - 1075
    if biased != 0:
        m |= _HIDDEN
    if m == _Z:
        return neg, m, 0
    while m & _ONE == _Z:
        m >>= _ONE
        e += 1
    return neg, m, e


@_jit
def _term(h: Any, lo: Any, neg: bool, m: Any, count: Any, shift: int, limit: int) -> Any:
    """(h, lo) + (−1)^neg·m·count·2^shift, and whether the term kept within 2^limit."""
    ph, pl = _mul_wide(m, count)
    if ph == _Z and pl == _Z:
        return h, lo, True
    if _bitlen2(ph, pl) + shift > limit:
        return h, lo, False
    ph, pl = _shl(ph, pl, shift)
    if neg:
        ph, pl = _neg(ph, pl)
    h, lo = _add(h, lo, ph, pl)
    return h, lo, True


@_jit
def _sum_and_step(keys: Any, counts: Any, sums: Any, a: int, b: int, kl: int, ku: int,
                  lo_bits: Any, hi_bits: Any, p_bits: Any, k_bits: int, layout: Any) -> Any:
    """(ok, S, γ) of one cell (module notes); ok False where the bound does not hold.
    ``layout``: the statistics keys' (exponent bits, interval offset, exponent bias) —
    a key is (interval + offset) << bits | e, its sum at 2^(e − bias)
    (:func:`dprect.core.describe_stats.pack`)."""
    bits, offset, bias = layout[0], layout[1], layout[2]
    mask = (1 << bits) - 1
    for x in (lo_bits, hi_bits, p_bits):
        if (x >> np.uint64(52)) & np.uint64(0x7FF) == np.uint64(0x7FF):  # ±inf or NaN
            return False, 0, 0.0
    ln, lm, le = _parts(lo_bits)
    un, um, ue = _parts(hi_bits)
    pn, pm, pe = _parts(p_bits)
    below, above = -kl - 1, ku + 1
    n_low = np.int64(0)
    n_high = np.int64(0)
    rows = np.int64(0)
    base = 1 << 20
    for m, e in ((lm, le), (um, ue), (pm, pe)):
        if m != _Z and e < base:
            base = e
    mids = 0
    for j in range(a, b):
        i = (keys[j] >> bits) - offset
        rows += counts[j]
        if i <= below:
            n_low += counts[j]
        elif i >= above:
            n_high += counts[j]
        else:
            mids += 1
            if sums[j] != 0:
                e = (keys[j] & mask) - bias
                if e < base:
                    base = e
    if base == 1 << 20:  # L = U = p = 0 and no row's significand: T = W = 0
        return True, 0, 0.0
    limit = 126 - _bitlen(np.uint64(3 + mids))
    h, lo = _Z, _Z
    h, lo, ok1 = _term(h, lo, ln, lm, np.uint64(n_low), le - base, limit)
    h, lo, ok2 = _term(h, lo, un, um, np.uint64(n_high), ue - base, limit)
    h, lo, ok3 = _term(h, lo, not pn, pm, np.uint64(rows), pe - base, limit)
    if not (ok1 and ok2 and ok3):
        return False, 0, 0.0
    for j in range(a, b):
        i = (keys[j] >> bits) - offset
        if below < i < above and sums[j] != 0:
            s = sums[j]
            mag = np.uint64(s) if s > 0 else np.uint64(0) - np.uint64(s)
            h, lo, ok = _term(h, lo, s < 0, mag, _ONE, (keys[j] & mask) - bias - base,
                              limit)
            if not ok:
                return False, 0, 0.0
    # W' = max(U − p, p − L, 0) over 2^base, each difference of two terms < 2^125
    for m, e in ((lm, le), (um, ue), (pm, pe)):
        if m != _Z and _bitlen(m) + e - base > 124:
            return False, 0, 0.0
    uh, ul = _term(_Z, _Z, un, um, _ONE, ue - base, 126)[:2]
    lh, ll = _term(_Z, _Z, ln, lm, _ONE, le - base, 126)[:2]
    qh, ql = _term(_Z, _Z, pn, pm, _ONE, pe - base, 126)[:2]
    nh, nl = _neg(qh, ql)
    d1h, d1l = _add(uh, ul, nh, nl)  # U − p
    d2h, d2l = _add(*_neg(lh, ll), qh, ql)  # p − L
    wh, wl = (d2h, d2l) if _less(d1h, d1l, d2h, d2l) else (d1h, d1l)
    if _less(wh, wl, _Z, _Z) or (wh == _Z and wl == _Z):
        return True, 0, 0.0
    # |A|·2^K / W' by long division, bit by bit
    negative = (h & _TOP) != _Z
    ah, al = _neg(h, lo) if negative else (h, lo)
    rh, rl = _Z, _Z
    q = np.int64(0)
    for t in range(_bitlen2(ah, al) - 1 + k_bits, -1, -1):
        bit = _Z
        if t >= k_bits:
            u = t - k_bits
            bit = ((ah >> np.uint64(u - 64)) if u >= 64 else (al >> np.uint64(u))) & _ONE
        rh, rl = _shl(rh, rl, 1)
        rl |= bit
        if q >= np.int64(1) << 61:
            return False, 0, 0.0
        q <<= 1
        if not _less(rh, rl, wh, wl):
            rh, rl = _add(rh, rl, *_neg(wh, wl))
            q += 1
    th, tl = _shl(rh, rl, 1)  # 2R
    if negative:
        s_int = -q - (1 if _less(wh, wl, th, tl) else 0)
    else:
        s_int = q + (0 if _less(th, tl, wh, wl) else 1)
    gamma = math.ldexp(_float_of(wh, wl), base - k_bits)
    if not (_TINY <= gamma < math.inf):
        return False, 0, 0.0
    return True, s_int, gamma


@_jit
def _pmax(a: float, b: float) -> float:
    """Python's ``max(a, b)``: b only when strictly larger."""
    return b if b > a else a


@_jit
def _pmin(a: float, b: float) -> float:
    """Python's ``min(a, b)``: b only when strictly smaller."""
    return b if b < a else a


@_jit
def _down(x: float) -> float:
    """``math.nextafter(x, -inf)`` (intervals._down)."""
    return np.nextafter(x, -np.inf)


@_jit
def _up(x: float) -> float:
    """``math.nextafter(x, inf)`` (intervals._up)."""
    return np.nextafter(x, np.inf)


#: a pivot cost's two terms in the compiled comparison: 0 or of magnitude in
#: [2^−500, 2^500] (their squares and sums normal floats); else the cell's pivot is Python's
_TERM_LOW, _TERM_HIGH = 2.0 ** -500, 2.0 ** 500
#: the relative gap between two squared costs that decides their order for CPython's
#: ``math.hypot`` (:func:`pivot_block`'s proof); closer, the cell's pivot is Python's
_GAP = 2.0 ** -40


@_jit
def _cost2(p: float, lower: float, upper: float, c: float, count_eps: float,
           sum_eps: float) -> Any:
    """(V, ok): V = (w/ε_S)² + ((c − p)/ε_n)² in floats, w = max(U − p, p − L) (the square
    of :func:`~dprect.core.aggregates.choose_pivot`'s cost, its two terms the same doubles);
    ok when both terms are 0 or within [2^−500, 2^500] in magnitude."""
    a = _pmax(upper - p, p - lower) / sum_eps
    b = (c - p) / count_eps
    ok = _in_range(abs(a)) and _in_range(abs(b))
    return (a * a + b * b if ok else 0.0), ok


@_jit
def _in_range(m: float) -> bool:
    """m (≥ 0) is 0 or within [2^−500, 2^500]."""
    return m == 0.0 or _TERM_LOW <= m <= _TERM_HIGH


@_jit
def _cheaper(p: float, q: float, lower: float, upper: float, c: float, count_eps: float,
             sum_eps: float) -> Any:
    """(cost(p) < cost(q) as CPython decides it, decided): equal arguments (±0 alike: the
    terms' magnitudes are the same) have equal costs (not less); else the squared costs
    decide when they differ by the relative gap :data:`_GAP` (:func:`pivot_block`), and
    nothing is decided closer."""
    if p == q:
        return False, True
    vp, okp = _cost2(p, lower, upper, c, count_eps, sum_eps)
    vq, okq = _cost2(q, lower, upper, c, count_eps, sum_eps)
    if not (okp and okq):
        return False, False
    if vp <= vq * (1.0 - _GAP):
        return True, True
    if vp >= vq * (1.0 + _GAP):
        return False, True
    return False, False


@_jit
def pivot_block(lower: Any, upper: Any, centre: Any, share: Any, count_eps: float,
                sum_eps: Any, pivot: Any, ok: Any) -> None:
    """Each cell's :func:`~dprect.core.aggregates.choose_pivot` ``(lower[i], centre[i],
    upper[i], ε_n, sum_eps[i])`` into ``pivot[i]`` with ``ok[i]`` = 1, or ``ok[i]`` = 0
    where this code cannot decide it as CPython does (the caller calls ``choose_pivot``).

    The pivot is the floats of ``choose_pivot`` in the same order (``share[i]`` its
    :func:`~dprect.core.aggregates.pivot_share`, made in Python once per split); only the
    two comparisons of costs differ: CPython compares ``math.hypot(a, b)`` of the same
    doubles a = w/ε_S, b = (c − p)/ε_n, a function whose rounding numba does not share
    (CPython ≥ 3.10: error under 1 ulp, not correctly rounded). Here the squares
    V = a² + b² are compared instead, and only where they are far apart.
    **The proof.** With a, b zero or in [2^−500, 2^500] no step under- or overflows, so
    V = t²(1 + δ), t = √(a² + b²) the exact hypot, |δ| ≤ 3·2^−53 < 2^−51 (two squares and
    a sum, each rounded once); CPython's h = t(1 + η), |η| < 2^−52. If V_p ≤ V_q(1 − 2^−40)
    then t_p² < t_q²(1 − 2^−40)(1 + 2^−51)/(1 − 2^−51) < t_q²(1 − 2^−41), so
    t_p < t_q(1 − 2^−42) and h_p < t_q(1 − 2^−42)(1 + 2^−52) < t_q(1 − 2^−52) < h_q: CPython
    finds cost(p) < cost(q) too; symmetrically V_p ≥ V_q(1 + 2^−40) gives h_p > h_q.
    Two equal arguments have the same cost in both (±0 alike: hypot reads the terms'
    magnitudes, which are equal): not less. Anything else — closer squares, a term out
    of that range, L, U or the centre not finite — is left to Python
    (tests/core/test_release_jit.py compares with ``choose_pivot`` on random and tied
    cells)."""
    for i in range(lower.shape[0]):
        lo, hi, ctr, se = lower[i], upper[i], centre[i], sum_eps[i]
        ok[i] = 0
        if not (math.isfinite(lo) and math.isfinite(hi) and math.isfinite(ctr)):
            continue
        mid = lo / 2 + hi / 2
        c = _pmin(_pmax(ctr, lo), hi)
        far = hi if c <= mid else lo
        step = (far / 2 - c / 2) * (2.0 * share[i])
        less, decided = _cheaper(mid, c, lo, hi, c, count_eps, se)  # min(c, mid, key=cost)
        if not decided:
            continue
        best = mid if less else c
        if math.isfinite(step):
            p_star = _pmin(_pmax(c + step, _pmin(c, mid)), _pmax(c, mid))
            less, decided = _cheaper(p_star, best, lo, hi, c, count_eps, se)
            if not decided:
                continue
            if less:
                best = p_star
        pivot[i] = best
        ok[i] = 1


@_jit
def _quantile(r: float, grid: Any, table: Any, q_far: int, log_far: float) -> Any:
    """(H, grid index needed or −1): ``mixed_quantile_at(r, …)`` from the table."""
    r = abs(r)
    i = 0 if r <= grid[0] else np.searchsorted(grid, r)
    if i >= grid.shape[0]:
        return r * float(q_far) + log_far, -1
    v = table[i]
    return v, (i if np.isnan(v) else -1)


@_jit
def release_block(start: int, keys: Any, counts: Any, sums: Any, at: Any, kl: Any,
                  ku: Any, lo: Any, hi: Any, pivot: Any, bits: Any, noisy_n: Any,
                  noise: Any, sum_eps: Any, k_bits: Any, count_eps: float,
                  q_count: int, q_low: int, q_alpha: int, want_sum: bool,
                  want_mean: bool, grid: Any, tables: Any, q_far: Any, log_far: Any,
                  layout: Any, status: Any, out: Any) -> Any:
    """Cells ``start`` … in order (module notes): cell c's statistics entries
    ``keys/counts/sums[at[c]:at[c + 1]]``, its steps, bounds and pivot (``bits[c]`` their
    bit patterns: L, U, p), ñ, the sum noise, its split's ε_S and K (k = 2^K). Plan
    constants: ε_n, the count quantiles of the intervals (``count_interval``'s,
    ``sum_interval``'s at α·SPLIT and at α), the grid and the two quantile tables
    (row 0 at α(1 − SPLIT) for the sum, row 1 at α for the mean) and each table's
    discrete regime (``q_far``, ``log_far``); ``layout`` the keys'
    (:func:`_sum_and_step`). Writes ``status[c]`` and ``out[c]``;
    returns (cell, table, index) of a grid value needed, or (n, −1, −1) when done."""
    n = at.shape[0] - 1
    for c in range(start, n):
        status[c] = PYTHON
        if k_bits[c] < 0:
            continue
        ok, s_int, gamma = _sum_and_step(keys, counts, sums, at[c], at[c + 1], kl[c],
                                         ku[c], bits[c, 0], bits[c, 1], bits[c, 2],
                                         k_bits[c], layout)
        if not ok:
            continue
        nn = noisy_n[c]
        p, low, high = pivot[c], lo[c], hi[c]
        noisy_s = s_int + noise[c]
        centred = gamma * float(noisy_s)
        total = p * float(max(nn, 0)) + centred
        mean = p + centred / float(max(1, nn))
        if not (math.isfinite(total) and math.isfinite(mean)):
            continue
        mean = _pmin(_pmax(mean, low), high)
        count = float(max(nn, 0))
        out[c, 0], out[c, 1] = total, mean
        out[c, 2], out[c, 3] = _pmax(count - float(q_count), 0.0), count + float(q_count)
        sens = float(np.int64(1) << k_bits[c])
        if want_sum:
            if nn <= 0:
                out[c, 4] = _pmin(0.0, float(q_low) * low)
                out[c, 5] = _pmax(0.0, float(q_low) * high)
            elif gamma == 0.0:
                if low != high:
                    out[c, 4], out[c, 5] = -math.inf, math.inf
                else:
                    out[c, 4] = total - abs(p) * float(q_alpha)
                    out[c, 5] = total + abs(p) * float(q_alpha)
            else:
                s = gamma * sens / sum_eps[c]
                r = p / s
                if not math.isfinite(r):
                    continue
                v, need = _quantile(r, grid, tables[0], q_far[0], log_far[0])
                if need >= 0:
                    return c, 0, need
                h = s * v + 1.5 * gamma
                out[c, 4], out[c, 5] = total - h, total + h
        if want_mean:
            if nn <= 0 or gamma == 0.0:
                out[c, 6], out[c, 7] = low, high
            else:
                s = gamma * sens / sum_eps[c]
                g = gamma * float(noisy_s)
                g_lo, g_hi = _down(g), _up(g)
                a, b = _down(low - p), _up(high - p)
                if not (math.isfinite(g) and math.isfinite(a) and math.isfinite(b)):
                    out[c, 6], out[c, 7] = low, high
                else:
                    nf = float(nn)
                    state = 0  # 0 shrunk to the end or stable, 1 empty, 2 Python
                    for _ in range(12):
                        r = _up(_pmax(abs(a), abs(b)) / s)
                        if not math.isfinite(r):
                            state = 2
                            break
                        v, need = _quantile(r, grid, tables[1], q_far[1], log_far[1])
                        if need >= 0:
                            return c, 1, need
                        # rounded outward, as intervals.mean_interval rounds them
                        h = _up(_up(s * v) + _up(1.5 * gamma))
                        new_a = _pmax(a, _down(_down(g_lo - h) / nf))
                        new_b = _pmin(b, _up(_up(g_hi + h) / nf))
                        if new_a > new_b:  # the set is empty
                            state = 1
                            break
                        if new_a == a and new_b == b:
                            break
                        a, b = new_a, new_b
                    if state == 2:
                        continue
                    if state == 1:
                        out[c, 6], out[c, 7] = mean, mean
                    else:
                        out[c, 6] = _pmax(low, _down(p + a))
                        out[c, 7] = _pmin(high, _up(p + b))
        out[c, 8] = gamma
        status[c] = DONE
    return n, -1, -1


def release_cells(keys: np.ndarray, counts: np.ndarray, sums: np.ndarray, at: np.ndarray,
                  kl: np.ndarray, ku: np.ndarray, bounds: np.ndarray, noisy_n: np.ndarray,
                  noise: np.ndarray, sum_eps: np.ndarray, k_bits: np.ndarray,
                  count_eps: float, level: float, want_sum: bool, want_mean: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(status, values) of every cell (:func:`release_block`): ``bounds[c]`` = (L, U,
    p) as floats; the plan's constants made here as ``intervals`` makes them, each grid
    value the block asks for made and the block called again from that cell."""
    alpha = 1.0 - level
    alphas = (alpha * (1.0 - SPLIT), alpha)  # sum_interval's a1; mean_interval's α
    tables = [quantile_table(count_eps, a) for a in alphas]
    q_far = np.array([count_quantile(count_eps, a * (1.0 - SPLIT)) for a in alphas],
                     dtype=np.int64)
    log_far = np.array([crmath.log(1.0 / (a * SPLIT)) for a in alphas])
    q_count = count_quantile(count_eps, 1.0 - level)
    q_low = count_quantile(count_eps, alpha * SPLIT)
    q_alpha = count_quantile(count_eps, alpha)
    bounds = np.ascontiguousarray(bounds, dtype=np.float64)
    bits = bounds.view(np.uint64)
    n = len(at) - 1
    status = np.full(n, PYTHON, dtype=np.int64)
    out = np.zeros((n, VALUES))
    grid = grid_points()
    layout = np.array([EXPONENT_BITS, INTERVAL_OFFSET, EXPONENT_BIAS], dtype=np.int64)
    start = 0
    while start < n:
        joined = np.stack(tables)  # the tables as they stand (a value made is kept)
        c, which, i = release_block(start, keys, counts, sums, at, kl, ku, bounds[:, 0],
                                    bounds[:, 1], bounds[:, 2], bits, noisy_n, noise,
                                    sum_eps, k_bits, count_eps, q_count, q_low, q_alpha,
                                    want_sum, want_mean, grid, joined, q_far, log_far,
                                    layout, status, out)
        if which < 0:
            break
        fill_quantile(tables[which], int(i), count_eps, alphas[which])
        start = int(c)
    return status, out


__all__ = ["DONE", "PYTHON", "VALUES", "pivot_block", "release_block", "release_cells"]
