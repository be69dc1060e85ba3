"""The pieces of :func:`dprect.core.crmath.exp_array`'s stages 1 and 2 that run both as
numpy on arrays (:mod:`dprect.core.crmath`) and compiled on one element
(:mod:`dprect.core.exp_jit`): their constants, stage 1's polynomial
(:func:`_expm1_poly`) and stage 2's double-double (:func:`_slow_parts`) — ONE text each,
written with operators that act on a numpy array and on a double alike, so the numpy
stages and the compiled loop make the same operations in the same order (crmath's module
notes give the stages, their error bounds and why the bits agree). Plain Python, no
numba: crmath works without it; the compiled module imports this one and not crmath
(which imports the compiled module, lazily: no import circle). The names keep crmath's
underscores: they are crmath's own (it imports them), for the two modules only.
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from typing import Any

import numpy as np

#: 60 significant digits (the constants here; crmath's expm1 and table too)
_WIDE = decimal.Context(prec=60, rounding=decimal.ROUND_HALF_EVEN,
                        Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
#: the table's steps: 2^(j/2^10) for j = 0 … 2^10 − 1
_BITS = 10
_N = 1 << _BITS
_MASK = _N - 1


def _split_ln2() -> tuple[float, float, float]:
    """ln2/2^10 = C1 + C2 + C3, C1 and C2 with 32 significant bits each."""
    ln2 = _WIDE.divide(_WIDE.ln(Decimal(2)), Decimal(_N))
    c1 = float(ln2)
    m, e = math.frexp(c1)
    c1 = math.ldexp(math.floor(m * 2**32) / 2**32, e)  # 32 bits
    rest = ln2 - Decimal(c1)
    c2 = float(rest)
    m, e = math.frexp(c2)
    c2 = math.ldexp(math.floor(m * 2**32) / 2**32, e)
    c3 = float(rest - Decimal(c2))
    return c1, c2, c3


_C1, _C2, _C3 = _split_ln2()
_INV = float(_WIDE.divide(Decimal(_N), _WIDE.ln(Decimal(2))))  # 2^10/ln2 (any k works)
#: the Taylor coefficients 1/3!, 1/4!, 1/5! as doubles
_P3, _P4, _P5 = 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0
#: relative error bounds of the fast and the double-double stage (crmath's module notes)
_FAST_BOUND = 2.0 ** -61
_SLOW_BOUND = 2.0 ** -72
#: the elements the stages take: x in [−708.39, 709.78] (normal results)
_LOW, _HIGH = -708.39, 709.78
_SPLITTER = 134217729.0  # 2^27 + 1 (Dekker/Veltkamp)
#: the compiled stages' scale factors are 2^i for i = −_POW2_OFFSET … _POW2_OFFSET − 1
_POW2_OFFSET = 600


def _expm1_poly(r: Any) -> Any:
    """Stage 1's e^r − 1: its Taylor polynomial to r^5 by Horner's scheme, in this order
    — on an array (numpy: one product, then in place) or on one double (compiled): the
    same operations either way."""
    p = r * _P5
    p += _P4
    p *= r
    p += _P3
    p *= r
    p += 0.5
    p *= r
    p *= r
    p += r
    return p


def _slow_parts(x: Any, kf: Any, j: Any, hi: np.ndarray, lo: np.ndarray,
               t_high: np.ndarray, t_low: np.ndarray) -> tuple[Any, Any]:
    """Stage 2's y and residual (y + residual within 2^-74.5 of 2^(j/2^10)·e^r) from
    crmath's table (T as a double ``hi`` and its remainder ``lo``, T's halves ``t_high`` +
    ``t_low``) — on arrays (numpy) or on one element (compiled: exp_array's loop and H's
    search, :mod:`dprect.core.intervals_jit`): the same operations, in this order."""
    a = x - kf * _C1  # exact
    b = -(kf * _C2)
    r = a + b  # a − k·C2 exactly as r + r_lo (Knuth's TwoSum)
    bv = r - a
    r_lo = (a - (r - bv)) + (b - bv)
    r_lo -= kf * _C3
    p = r * r
    p *= 0.5 + r * (_P3 + r * (_P4 + r * _P5))
    q = r_lo + (p + r * r_lo)  # e^r − 1 − r, |q| < 2^-22
    t, tl = hi[j], lo[j]
    prod = t * r  # t·r exactly as prod + prod_err (Dekker; r split in halves by Veltkamp)
    c = r * _SPLITTER
    r_high = c - (c - r)
    r_low = r - r_high
    th, tlow = t_high[j], t_low[j]
    prod_err = ((th * r_high - prod) + th * r_low + tlow * r_high) + tlow * r_low
    s = t + prod
    s_err = prod - (s - t)  # Fast2Sum, |t| ≥ |prod|
    tail = s_err + (prod_err + (t * q + tl * (1.0 + r)))
    y = s + tail
    return y, tail - (y - s)
