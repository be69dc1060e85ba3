"""exp_array's stages 1 and 2 compiled (numba): :func:`fast_loop`, and the two pieces
it shares with the numpy stages of :mod:`dprect.core.crmath` and with H's compiled search
(:mod:`dprect.core.intervals_jit`) — :func:`expm1_poly` (stage 1's polynomial) and
:func:`slow_parts` (stage 2's double-double): :mod:`dprect.core.exp_stages`'
``_expm1_poly`` and ``_slow_parts`` compiled, the very text the numpy stages run.

Imported only by :func:`dprect.core.crmath._kernel` (lazily, at exp_array's first array
of ``crmath._KERNEL_FROM`` elements or more) and by :mod:`dprect.core.intervals_jit`; an
ImportError — numba not installed, or no cache location it can keep fresh
(:func:`dprect.core.jit_cache.cached_njit`'s RuntimeError) — means "no compiled path":
crmath runs its numpy stages. crmath itself imports no numba (a compiled kernel calls
compiled functions only, so the loop lives here), and this module reads exp_array's
constants from :mod:`dprect.core.exp_stages`, not from crmath (no import circle).

**The same bits.** Every operation is an IEEE-754 +, −, × or an exact one (``rint``, an
integer shift or mask, a table look-up, a product by a power of two to a normal result),
numba emits no fused multiply-add without fastmath, and a decided element is the
correctly rounded value whatever route decided it: the loop gives numpy's stages' values
(tests/core/test_crmath.py compares them on 10^6 elements; the module notes of
:mod:`dprect.core.crmath` give the stages, their error bounds and the rounding test).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dprect.core import exp_stages
from dprect.core.jit_cache import cached_njit

_LOW, _HIGH, _INV = exp_stages._LOW, exp_stages._HIGH, exp_stages._INV
_C1, _C23 = exp_stages._C1, exp_stages._C2 + exp_stages._C3
_FAST_BOUND, _SLOW_BOUND = exp_stages._FAST_BOUND, exp_stages._SLOW_BOUND
_POW2_OFFSET = exp_stages._POW2_OFFSET


def _fast_loop(x: Any, hi: Any, lo: Any, t_high: Any, t_low: Any, pow2: Any, y: Any,
               ok: Any) -> int:  # pragma: no cover (numba)
    """Stages 1 and 2 element by element: crmath's ``_reduce``, ``_fast_parts`` (its
    polynomial :func:`expm1_poly` itself), ``_decided``, then where undecided
    :func:`slow_parts` (``_slow_parts`` itself) and the test again, and ``_scale`` — their
    operations in their order. ``ok`` False leaves an element to stage 3. Returns the
    count of such elements, or −1 at the first element outside [_LOW, _HIGH] or NaN
    (checked before any table is read; ``y`` and ``ok`` then incomplete)."""
    undecided = 0
    for i in range(x.size):
        v = x[i]
        if not (v >= _LOW and v <= _HIGH):
            return -1
        kf = np.rint(v * _INV)
        k = np.int64(kf)
        e = k >> 10
        j = k & 1023
        r = v - kf * _C1
        r -= kf * _C23
        p = expm1_poly(r)
        t = hi[j]
        p *= t
        p += lo[j]
        yy = t + p
        res = p - (yy - t)
        err = yy * _FAST_BOUND
        decided = ((res + err) + yy == yy) and ((res - err) + yy == yy)
        if not decided:  # stage 2 (any decided value is exp's)
            yy, res = slow_parts(v, kf, j, hi, lo, t_high, t_low)
            err = yy * _SLOW_BOUND
            decided = ((res + err) + yy == yy) and ((res - err) + yy == yy)
        ok[i] = decided  # False: left to stage 3
        if not decided:
            undecided += 1
        half = e >> 1
        yy *= pow2[half + _POW2_OFFSET]  # 2^half: the value _scale makes from its bits
        yy *= pow2[e - half + _POW2_OFFSET]
        y[i] = yy
    return undecided


try:
    #: ``exp_stages._expm1_poly`` compiled: stage 1's e^r − 1 of one double
    expm1_poly = cached_njit(exp_stages._expm1_poly)
    #: ``exp_stages._slow_parts`` compiled: stage 2's y and residual of one element
    slow_parts = cached_njit(exp_stages._slow_parts)
    #: :func:`_fast_loop` compiled: exp_array's stages 1 and 2 on a float64 array
    fast_loop = cached_njit(_fast_loop)
except RuntimeError as e:  # numba: no cache location here (jit_cache)
    raise ImportError("no cache location for exp_array's compiled stages") from e


__all__ = ["expm1_poly", "fast_loop", "slow_parts"]
