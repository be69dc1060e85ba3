"""H's bisection compiled (issue #42): :func:`dprect.core.intervals.mixed_quantile`'s whole
search — the doubling of the upper end, then the bisection — with every miss
P(|L + r·Z_n| > h) made in the same compiled call, bit for bit what the numpy path
(:func:`~dprect.core.intervals._laplace_miss`, ``ndarray.sum``) gives.

Imported only where :mod:`dprect.core.random_jit` and :mod:`dprect.core.exp_jit` load
(numba installed, its cache writable), by :func:`dprect.core.intervals._bisection_kernel`;
elsewhere the numpy path.

**The same bits.** A miss is made element by element with the numpy path's operations
in their order: the exponents c − h before ``searchsorted(shifts, h, side="right")`` and
h − c from it, and −h − c; e^x of each as :func:`~dprect.core.crmath.exp_array` gives it
— 0.0 below ``EXP_ZERO_BELOW``, exp_array's compiled stages themselves
(:func:`dprect.core.exp_jit.fast_loop`, called on the exponents of the main range) and
the subnormal band by :func:`~dprect.core.crmath._exp_subnormal`'s operations (its stage
2 the same compiled ``crmath._slow_parts``, :func:`dprect.core.exp_jit.slow_parts`); the
×½, the 1 − ½e^{h−c} past the split, the tail added, the product by the law's
probability; then numpy's pairwise sum of those terms (:func:`_pairwise`: numpy's
``pairwise_sum`` — eight accumulators on blocks of up to 128, halves split at a multiple
of 8 — which is what ``ndarray.sum`` runs on a contiguous float64 array: one inner loop,
no buffering) plus the far tail.
An element whose exponential the compiled stages leave undecided (stage 3: decimal, about
one in 4·10^5; or NaN) stops the call: its index is returned and the caller makes it with
:func:`~dprect.core.crmath.exp_array` and calls again, the search resuming at the same h
(:func:`bisect`'s state). tests/core/test_intervals_jit.py compares every miss and H with
the numpy path's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dprect.core import crmath
from dprect.core.exp_jit import fast_loop, slow_parts
from dprect.core.random_jit import _jit

#: state slots of :func:`bisect` (a float64 array): the ends, the phase (0 doubling the
#: upper end, 1 bisecting), the bisections made, whether the current h's exponentials
#: are in place (resuming after the caller made the undecided ones)
LO, HI, PHASE, STEPS, RESUME = range(5)
STATE = 5

_LOW, _HIGH = crmath._LOW, crmath._HIGH
_ZERO_BELOW = crmath.EXP_ZERO_BELOW
_INV = crmath._INV
_SLOW_BOUND = crmath._SLOW_BOUND
_POW2_OFFSET = crmath._POW2_OFFSET
_TINY_STEP = 2.0 ** -52
_DENORM = 5e-324


@_jit
def _block(a: Any, start: int, n: int) -> float:  # pragma: no cover (numba)
    """numpy's ``pairwise_sum`` on a block of n ≤ 128 elements from ``start``: a plain
    loop below 8, else eight accumulators, combined as a tree, and the rest added."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[start + i]
        return res
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
    m = n - n % 8
    i = 8
    while i < m:
        j = start + i
        r0 += a[j]
        r1 += a[j + 1]
        r2 += a[j + 2]
        r3 += a[j + 3]
        r4 += a[j + 4]
        r5 += a[j + 5]
        r6 += a[j + 6]
        r7 += a[j + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[start + i]
        i += 1
    return res


_STACK = 64  # the halving's depth is below log2(n) + 1 ≤ 63


@_jit
def _pairwise(a: Any, n: int) -> float:  # pragma: no cover (numba)
    """numpy's ``pairwise_sum`` of a[:n] (float64), the same additions in the same order:
    blocks of up to 128 by :func:`_block`; a longer run split in two at half its length
    rounded down to a multiple of 8, the halves' sums added (left + right). The recursion
    unrolled on a stack (numba's cache does not keep recursive functions)."""
    if n <= 128:
        return _block(a, 0, n)
    starts = np.empty(_STACK, dtype=np.int64)
    sizes = np.empty(_STACK, dtype=np.int64)
    phases = np.zeros(_STACK, dtype=np.int64)
    lefts = np.empty(_STACK)
    starts[0], sizes[0], phases[0] = 0, n, 0
    top = 1
    got = 0.0  # the sum of the run last finished
    while top:
        f = top - 1
        s, m = starts[f], sizes[f]
        if m <= 128:
            got = _block(a, s, m)
            top -= 1
            continue
        half = m // 2
        half -= half % 8
        if phases[f] == 0:  # the left half first
            phases[f] = 1
            starts[top], sizes[top], phases[top] = s, half, 0
            top += 1
        elif phases[f] == 1:  # then the right half
            lefts[f] = got
            phases[f] = 2
            starts[top], sizes[top], phases[top] = s + half, m - half, 0
            top += 1
        else:
            got = lefts[f] + got
            top -= 1
    return got


@_jit
def _subnormal(x: float, hi: Any, lo: Any, t_high: Any, t_low: Any,
               pow2: Any) -> tuple[float, bool]:  # pragma: no cover (numba)
    """e^x for x in [−745.14, −708.39): :func:`~dprect.core.crmath._exp_subnormal`'s
    operations on one element (stage 2's double-double, ``crmath._slow_parts`` itself
    compiled, then the subnormal grid), and whether decided (else
    :func:`~dprect.core.crmath.exp`'s)."""
    kf = np.rint(x * _INV)
    k = np.int64(kf)
    e = k >> 10
    j = k & 1023
    y, res = slow_parts(x, kf, j, hi, lo, t_high, t_low)
    p2 = pow2[e + 1074 + _POW2_OFFSET]  # 2^(e + 1074), as _exp_subnormal makes it
    big = y * p2
    n = np.rint(big)
    d = (big - n) + res * p2
    err = big * _SLOW_BOUND + _TINY_STEP
    return (n + np.rint(d)) * _DENORM, np.rint(d - err) == np.rint(d + err)


@_jit
def _exponentials(h: float, shifts: Any, args: Any, e: Any, live: Any, where: Any,
                  y: Any, ok: Any, pending: Any, hi: Any, lo: Any, t_high: Any,
                  t_low: Any, pow2: Any) -> int:  # pragma: no cover (numba)
    """The miss's 2n exponents at h into ``args`` and their e^x into ``e`` (as
    exp_array gives each); returns how many are left undecided, their indices first in
    ``pending`` (``e`` there not made)."""
    n = shifts.size
    k = 0  # searchsorted(shifts, h, side="right"): the shifts ≤ h (non-decreasing)
    while k < n and shifts[k] <= h:
        k += 1
    for i in range(n):
        args[i] = shifts[i] - h if i < k else h - shifts[i]
        args[n + i] = -h - shifts[i]
    m = 0
    undecided = 0
    for i in range(2 * n):
        x = args[i]
        if x < _ZERO_BELOW:
            e[i] = 0.0
        elif x >= _LOW and x <= _HIGH:
            live[m] = x
            where[m] = i
            m += 1
        elif x < _LOW:
            v, decided = _subnormal(x, hi, lo, t_high, t_low, pow2)
            if decided:
                e[i] = v
            else:
                pending[undecided] = i
                undecided += 1
        else:  # NaN (or above the main range: never, the exponents are ≤ 0)
            pending[undecided] = i
            undecided += 1
    if m:
        fast_loop(live[:m], hi, lo, t_high, t_low, pow2, y[:m], ok[:m])
        for q in range(m):
            if ok[q]:
                e[where[q]] = y[q]
            else:
                pending[undecided] = where[q]
                undecided += 1
    return undecided


@_jit
def _miss(h: float, shifts: Any, p: Any, far: float, e: Any) -> float:  # pragma: no cover
    """The miss at h from its exponentials ``e``: _laplace_miss's terms times p, summed
    as ``ndarray.sum`` sums them, plus the far tail (the terms written over e[:n])."""
    n = shifts.size
    for i in range(n):
        half = e[i] * 0.5  # ½e^{c−h} up to the split, 1 − ½e^{h−c} past it
        side = half if shifts[i] <= h else 1.0 - half
        e[i] = (side + e[n + i] * 0.5) * p[i]
    return _pairwise(e, n) + far


@_jit
def bisect(shifts: Any, p: Any, far: float, alpha: float, steps: int, state: Any,
           args: Any, e: Any, pending: Any, hi: Any, lo: Any, t_high: Any, t_low: Any,
           pow2: Any) -> int:  # pragma: no cover (numba)
    """:func:`~dprect.core.intervals.mixed_quantile`'s search from ``state`` (the ends
    [lo, hi] to start from, phase 0) with at most ``steps`` bisections: 0 when done (H in
    ``state[HI]``), else the count of exponentials left undecided at the current h (their
    indices in ``pending``, exponents in ``args``): the caller puts their e^x in ``e``,
    sets ``state[RESUME]`` and calls again."""
    n2 = args.size
    live = np.empty(n2)
    where = np.empty(n2, dtype=np.int64)
    y = np.empty(n2)
    ok = np.empty(n2, dtype=np.bool_)
    low, high = state[LO], state[HI]
    phase = int(state[PHASE])
    made = int(state[STEPS])
    resume = state[RESUME] != 0.0
    while True:
        if phase == 1 and made >= steps:
            state[HI] = high
            return 0
        h = high if phase == 0 else 0.5 * (low + high)
        if not resume:
            left = _exponentials(h, shifts, args, e, live, where, y, ok, pending, hi, lo,
                                 t_high, t_low, pow2)
            if left:
                state[LO], state[HI] = low, high
                state[PHASE], state[STEPS], state[RESUME] = phase, made, 1.0
                return left
        resume = False
        above = _miss(h, shifts, p, far, e) > alpha
        if phase == 0:
            if above:
                low, high = high, 2.0 * high
            else:
                phase = 1
            continue
        if above:
            low = h
        else:
            high = h
        made += 1
        if high - low <= 1e-12 * high:
            state[HI] = high
            return 0
