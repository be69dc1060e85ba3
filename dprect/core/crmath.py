"""Correctly rounded exp, log, log1p and expm1 (session 42, issues #41/#42 note): the same
bits on every IEEE-754 machine.

numpy's float64 ``exp``/``log`` take SIMD paths chosen by the CPU (AVX-512 kernels where
present), and glibc's libm picks FMA/AVX2 variants of ``exp``, ``log``, ``expm1``,
``log1p`` by CPU (``GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA`` switches them off): each
is accurate to about half an ulp, but the variants round differently in the last bit for
some arguments (on the machine this was written on, 395 of 600,000 ``np.exp`` values and
27 of 600,000 ``np.log`` values changed with those two features off). A float computed
from them that feeds a release — a noise interval's bisection, a count quantile — could
then differ between a driver and an executor on different CPUs. These functions return
the correctly rounded value (round to nearest, ties to even) of the exact function, which
is one number whatever the machine.

**Scalars** (:func:`exp`, :func:`log`, :func:`log1p`, :func:`expm1`): the exact function
value of the double's exact decimal expansion in Python's :mod:`decimal`, whose ``exp``
and ``ln`` are correctly rounded at the context's precision, here :data:`DIGITS` = 40
significant digits (≥ 132 bits), then rounded once to the nearest double
(``float(Decimal)`` is correctly rounded). The double rounding can only go wrong where the
exact value lies within 10^-39 (relative) of a midpoint between two doubles; the closest
approach of exp and log of a double to such a midpoint is about 2^-113 (relative,
Lefèvre and Muller's worst cases), far above it, and exp and log of a double other than
exp(0), log(1) are never exactly a midpoint (Lindemann). ``log1p`` adds 1 exactly
(decimal addition at the precision the sum needs) before ``ln``; ``expm1`` takes
``exp`` at 60 digits and subtracts 1 for |x| ≥ 10^-10 (≥ 50 correct digits left), and
the Taylor series at 40 digits below. About 30 µs (exp) to 60 µs (log) a call: for the
few constants a plan or an interval needs, not for arrays (``exp``, ``exp2`` and ``log``
keep their last 4,096 values: ±0 give one value each; ``log1p`` and ``expm1`` keep the
sign of a zero and are not cached).

**Arrays** (:func:`exp_array`): the correctly rounded exp of each element — the very
values of :func:`exp` — in three stages, every operation an IEEE-754 +, −, × or an exact
operation (``rint``, integer shifts and masks, a table look-up, ``ldexp`` to a normal
result), each a separate numpy ufunc (no fused multiply-add: numpy does not contract), so
every stage gives the same bits on any machine:

1. x = k·ln2/2^10 + r, k = rint(x·2^10/ln2), with ln2/2^10 split in three parts
   (:data:`_C1`, :data:`_C2`: 32 significant bits, so k·C1 and k·C2 are exact for
   |k| < 2^21; the rest, :data:`_C3`); e^x = 2^(k >> 10) · 2^(j/2^10) · e^r, j = k & 1023,
   |r| ≤ ln2/2^11·(1 + 2^-40); 2^(j/2^10) from a table as a correctly rounded double plus
   the correctly rounded remainder (made once with :mod:`decimal`); e^r − 1 by its Taylor
   polynomial to r^5 (truncation below 2^-78, relative). The fast stage carries the result
   as one double y and its rounding residual: their sum's relative error is below 2^-62.7
   (the roundings of r, e^r − 1, the product by the table and the remainder's sum: each
   below 2^-64.5; 2^-63.1 the largest measured), :data:`_FAST_BOUND` = 2^-61 is used. If
   y + residual ± y·bound both round to y, y is the correctly rounded value (rounding is
   monotone); about 0.5% of the elements are not decided so.
2. Those elements again in double-double arithmetic (Dekker's exact products, with the
   table's double split in 26-bit halves; r as a double-double): relative error below
   2^-74.5 (truncation 2^-78.5, the roundings of the polynomial and the tails' sums below
   2^-76 each; 2^-75.3 measured), :data:`_SLOW_BOUND` = 2^-72 used, the same test; about
   one in 2^11 of those elements (they lie near a midpoint) is left.
3. Those by :func:`exp` (decimal).

Below e^x's normal range (x in [−745.14, −708.39): a subnormal result) stage 2's value is
rounded to the subnormal grid by the same test (:func:`_exp_subnormal`), the undecided by
:func:`exp`; below −745.14 the value is 0.0 (e^x < 2^-1075), above 709.79 inf, NaN stays
NaN, and the last sliver below overflow (709.78, 709.79] goes to :func:`exp`. So every
element is :func:`exp` of it, bit for bit (tests/core/test_crmath.py).

**Compiled.** Where numba loads and can cache its code (:func:`dprect.core.jit_cache.
cached_njit`), stages 1 and 2 run as one compiled loop (:func:`dprect.core.exp_jit.
fast_loop`, loaded by :func:`_kernel`): the same operations element by element — stage
1's polynomial and stage 2 are the very functions the numpy stages run
(:mod:`dprect.core.exp_stages`' ``_expm1_poly`` and ``_slow_parts``, compiled there for
one element) — numba emits no fused multiply-add without fastmath, and a decided element
is the correctly rounded value whatever route decided it: the same bits as numpy's
stages (tested on 10^6 elements); about ``np.exp``'s time on a large array (an AVX2
machine without AVX-512, where ``np.exp`` is glibc's). The loop also checks each element
is in the main range (and counts those it leaves to stage 3), so an array of the main
range takes one compiled call and no reductions (~6 µs on 40 elements, this shared
machine); one with an element outside it takes the routing below.
Elsewhere, and on arrays below :data:`_KERNEL_FROM` elements, numpy's stages: stage 1
in chunks of :data:`_CHUNK`, 3–5× ``np.exp`` on a large array and some 30 µs a call on a
small one (~40 ufunc calls).
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from functools import lru_cache
from typing import Any

import numpy as np

# exp_array's constants and the operations its numpy stages share with the compiled ones
# (_WIDE, 60 digits, serves expm1 and the table too)
from dprect.core.exp_stages import (
    _BITS,
    _C1,
    _C2,
    _C3,
    _FAST_BOUND,
    _HIGH,
    _INV,
    _LOW,
    _MASK,
    _N,
    _POW2_OFFSET,
    _SLOW_BOUND,
    _SPLITTER,
    _WIDE,
    _expm1_poly,
    _slow_parts,
)

#: significant decimal digits of the scalar functions' exact value before its one rounding
#: to a double
DIGITS = 40
_CTX = decimal.Context(prec=DIGITS, rounding=decimal.ROUND_HALF_EVEN,
                       Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
_TINY_SERIES = 1e-10


def _exp_edge(x: float, low: float, below: float, at_zero: float) -> float | None:
    """The value of e^x, or of a function of it, where no rounding is needed: NaN at NaN,
    inf above 710 (e^710 overflows a double), ``below`` under ``low`` (where it rounds
    to its limit) and ``at_zero`` at ±0; None elsewhere (compute it)."""
    if math.isnan(x):
        return math.nan
    if x > 710.0:
        return math.inf
    if x < low:
        return below
    if x == 0.0:
        return at_zero
    return None


@lru_cache(maxsize=4096)  # plan constants are asked for again and again
def exp(x: float) -> float:
    """e^x correctly rounded (module notes); exp(NaN) is NaN, exp(±inf) is inf / 0.0."""
    x = float(x)
    edge = _exp_edge(x, -746.0, 0.0, 1.0)
    if edge is not None:
        return edge
    return float(_CTX.exp(Decimal(x)))


@lru_cache(maxsize=4096)  # plan constants are asked for again and again
def exp2(x: float) -> float:
    """2^x correctly rounded: exact for an integer x in range, else :mod:`decimal`'s power
    at :data:`DIGITS` digits (accurate to about one unit in the 40th digit, so the one
    rounding to a double is the correct one: module notes); 2^NaN is NaN, 2^±inf is
    inf / 0.0."""
    x = float(x)
    if math.isnan(x):
        return math.nan
    if x >= 1024.0:
        return math.inf
    if x < -1080.0:
        return 0.0
    if x == int(x):
        return math.ldexp(1.0, int(x))
    return float(_CTX.power(Decimal(2), Decimal(x)))


@lru_cache(maxsize=16)
def octave_steps(r: int) -> tuple[float, ...]:
    """2^(j/r) correctly rounded for j = 0 … r − 1 (r ≥ 1): 2^(i/r) for any integer i is
    ``math.ldexp(octave_steps(r)[i % r], i // r)``, exactly (a power of two scales a
    normal double exactly)."""
    return tuple(exp2(j / r) for j in range(r))


@lru_cache(maxsize=4096)  # plan constants are asked for again and again
def log(x: float) -> float:
    """ln x correctly rounded for x > 0; −inf at 0, NaN below 0 or at NaN, inf at inf
    (ValueError is not raised: callers check their domain)."""
    x = float(x)
    if math.isnan(x) or x < 0.0:
        return math.nan
    if x == 0.0:
        return -math.inf
    if math.isinf(x):
        return math.inf
    if x == 1.0:
        return 0.0
    return float(_CTX.ln(Decimal(x)))


def log1p(x: float) -> float:
    """ln(1 + x) correctly rounded for x > −1 (1 + x formed exactly); −inf at −1, NaN below
    it or at NaN, inf at inf."""
    x = float(x)
    if math.isnan(x) or x < -1.0:
        return math.nan
    if x == -1.0:
        return -math.inf
    if math.isinf(x):
        return math.inf
    if x == 0.0:
        return x  # ±0 kept
    d = Decimal(x)
    if abs(x) < _TINY_SERIES:  # x − x²/2 + x³/3 − x⁴/4 (the next term < 10^-40·|x|)
        total = d - _CTX.power(d, 2) / 2 + _CTX.power(d, 3) / 3 - _CTX.power(d, 4) / 4
        return float(_CTX.plus(total))
    exact = decimal.Context(prec=1100, Emax=decimal.MAX_EMAX,
                            Emin=decimal.MIN_EMIN).add(Decimal(1), d)  # 1 + x exactly
    return float(_CTX.ln(exact))


def expm1(x: float) -> float:
    """e^x − 1 correctly rounded; expm1(NaN) is NaN, expm1(±inf) is inf / −1.0."""
    x = float(x)
    edge = _exp_edge(x, -100.0, -1.0, x)  # below −100, e^x < 2^-144: e^x − 1 rounds to −1
    if edge is not None:  # at ±0: x itself (its sign kept)
        return edge
    d = Decimal(x)
    if abs(x) < _TINY_SERIES:  # x + x²/2 + x³/6 + x⁴/24 (the next term < 10^-40·|x|)
        total = d + _CTX.power(d, 2) / 2 + _CTX.power(d, 3) / 6 + _CTX.power(d, 4) / 24
        return float(_CTX.plus(total))
    return float(_CTX.subtract(_WIDE.exp(d), Decimal(1)))


# -- exp_array -------------------------------------------------------------------------

#: routing limits of the rest: e^x rounds to 0.0 below −745.14 (< ln 2^-1075) and to inf
#: above 709.79 (> ln(2^1024 − 2^970)); between them and the main range, :func:`exp`
_ZERO_BELOW, _INF_ABOVE = -745.14, 709.79
#: exp_array gives 0.0 for every x below this (a caller may skip those elements)
EXP_ZERO_BELOW = _ZERO_BELOW
#: elements a pass of the vectorised stages takes (temporaries of 64 KiB: in cache, and
#: below malloc's mmap threshold, whose fresh pages cost more than the arithmetic)
_CHUNK = 8192


@lru_cache(maxsize=1)
def _table() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """2^(j/2^10) for j = 0 … 1023: the correctly rounded double T, the correctly rounded
    remainder, and T's high and low 26/27-bit halves (exact: T = high + low)."""
    step = _WIDE.divide(_WIDE.ln(Decimal(2)), Decimal(_N))  # ln2/2^10 to 60 digits
    hi = np.empty(_N)
    lo = np.empty(_N)
    for j in range(_N):
        t = _CTX.exp(_WIDE.multiply(step, Decimal(j)))  # 2^(j/2^10), correctly rounded
        # to 40 digits (of an argument within 10^-58 of j·ln2/2^10)
        hi[j] = float(t)
        lo[j] = float(t - Decimal(hi[j]))
    c = hi * _SPLITTER
    high = c - (c - hi)
    low = hi - high
    for a in (hi, lo, high, low):
        a.flags.writeable = False
    return hi, lo, high, low


def _reduce(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kf, j, e): k = rint(x·2^10/ln2) as a float, j = k & 1023, e = k >> 10."""
    kf = np.multiply(x, _INV)
    np.rint(kf, out=kf)
    k = kf.astype(np.int64)
    e = np.right_shift(k, _BITS)
    np.bitwise_and(k, _MASK, out=k)
    return kf, k, e


def _fast(x: np.ndarray, kf: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stage 1 (module notes): 2^(j/2^10)·e^r as a double y, and whether y is decided
    (the correctly rounded value)."""
    y, res = _fast_parts(x, kf, j)
    return y, _decided(y, res, _FAST_BOUND)


def _fast_parts(x: np.ndarray, kf: np.ndarray, j: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Stage 1's y and its residual (y + residual within 2^-63 of 2^(j/2^10)·e^r), the
    operations in place, in this order."""
    hi, lo, _, _ = _table()
    r = np.multiply(kf, _C1)
    np.subtract(x, r, out=r)  # exact
    tmp = np.multiply(kf, _C2 + _C3)
    r -= tmp  # r
    p = _expm1_poly(r)
    t = np.take(hi, j, mode="clip")  # j in 0 … 1023 (clip: no bounds check pass)
    p *= t
    p += np.take(lo, j, out=tmp, mode="clip")  # u = t·(e^r − 1) + remainder
    y = np.add(t, p)
    np.subtract(y, t, out=t)
    np.subtract(p, t, out=p)  # the residual: y + residual = t + u exactly (Fast2Sum)
    return y, p


def _decided(y: np.ndarray, res: np.ndarray, bound: float) -> np.ndarray:
    """Whether y is the correctly rounded value of a number within y·bound of y + res:
    y + res ± y·bound both round to y (rounding is monotone, so everything between does
    too)."""
    err = np.multiply(y, bound)
    up = np.add(res, err)
    up += y
    ok = np.equal(up, y)
    np.subtract(res, err, out=up)
    up += y
    ok &= np.equal(up, y)
    return ok


def _scale(y: np.ndarray, e: np.ndarray) -> None:
    """y·2^e in place, for e in [−1022, 1024] and a normal result: two exact products
    by 2^(e >> 1) and 2^(e − (e >> 1)) made from their bits (np.ldexp is a libm call an
    element)."""
    half = np.right_shift(e, 1)
    e -= half
    half += 1023
    np.left_shift(half, 52, out=half)
    y *= half.view(np.float64)
    e += 1023
    np.left_shift(e, 52, out=e)
    y *= e.view(np.float64)


def _slow(x: np.ndarray, kf: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stage 2 (module notes): 2^(j/2^10)·e^r in double-double, and whether decided."""
    y, res = _slow_parts(x, kf, j, *_table())
    return y, _decided(y, res, _SLOW_BOUND)


def exp_array(x: object) -> np.ndarray:
    """e^x of each element of the float64 array ``x``, correctly rounded: the values of
    :func:`exp` element by element, the same bits on any IEEE-754 machine (module notes:
    the stages, their error bounds, the elements left to :func:`exp`). A new float64
    array of ``x``'s shape."""
    xs = np.asarray(x, dtype=np.float64)
    flat = xs.ravel()
    kernel = _kernel() if flat.size >= _KERNEL_FROM else None
    if kernel is not None:  # one compiled call checks the range too (no reductions)
        y = np.empty_like(flat)
        ok = np.empty(flat.size, dtype=bool)
        undecided = kernel(np.ascontiguousarray(flat), *_table(), _POW2, y, ok)
        if undecided >= 0:  # every element in [_LOW, _HIGH]
            if undecided:
                _stage3(flat, y, ok)
            return y.reshape(xs.shape)
    if flat.size == 0 or (flat.min() >= _LOW and flat.max() <= _HIGH):  # NaN: not here
        return _exp_main(flat).reshape(xs.shape)
    main = (flat >= _LOW) & (flat <= _HIGH)
    out = _exp_main(np.where(main, flat, 0.0))  # the rest's places overwritten below
    np.putmask(out, flat < _ZERO_BELOW, 0.0)
    np.putmask(out, flat > _INF_ABOVE, np.inf)
    np.putmask(out, np.isnan(flat), np.nan)
    band = (flat >= _ZERO_BELOW) & (flat < _LOW)  # a subnormal result (or 2^-1022)
    if band.any():
        idx = np.flatnonzero(band)
        out[idx] = _exp_subnormal(flat[idx])
    sliver = (flat > _HIGH) & (flat <= _INF_ABOVE)  # the last sliver below overflow
    if sliver.any():
        for i in np.flatnonzero(sliver).tolist():
            out[i] = exp(float(flat[i]))
    return out.reshape(xs.shape)


def _exp_subnormal(x: np.ndarray) -> np.ndarray:
    """e^x for x in [−745.14, −708.39) (1-d), correctly rounded to the subnormal grid
    (multiples of 2^-1074): with y + res within 2^-74.5 of 2^(j/2^10)·e^r (stage 2) and
    s = e + 1074 (−1 … 52), e^x·2^1074 = (y + res)·2^s = n + t, n = rint(y·2^s) (exact
    products by 2^s, y·2^s − n exact); the result is (n + rint(t))·2^-1074 unless t ± the
    error bound round to different integers — then :func:`exp`."""
    kf, j, e = _reduce(x)
    y, res = _slow_parts(x, kf, j, *_table())
    e += 1074 + 1023
    np.left_shift(e, 52, out=e)
    p2 = e.view(np.float64)  # 2^s, exact (a normal double)
    big = y * p2
    n = np.rint(big)
    t = (big - n) + res * p2
    err = big * _SLOW_BOUND + 2.0 ** -52  # and t's own rounding (|t| < 2)
    ok = np.rint(t - err) == np.rint(t + err)
    out = (n + np.rint(t)) * 5e-324  # an integer below 2^53 times 2^-1074: exact
    for i in np.flatnonzero(~ok).tolist():
        out[i] = exp(float(x[i]))
    return out


def _exp_main(x: np.ndarray) -> np.ndarray:
    """:func:`exp_array` on x in [_LOW, _HIGH] (1-d): stages 1 and 2 compiled where numba
    loads (:func:`dprect.core.exp_jit.fast_loop`, the same operations), else stage 1 in
    chunks of :data:`_CHUNK` (in cache) and stage 2 once on every chunk's undecided; then
    stage 3."""
    y = np.empty_like(x)
    ok = np.empty(len(x), dtype=bool)
    kernel = _kernel() if len(x) >= _KERNEL_FROM else None
    if kernel is not None:
        if kernel(np.ascontiguousarray(x), *_table(), _POW2, y, ok) == 0:
            return y
    else:
        for s in range(0, len(x), _CHUNK):
            part = x[s:s + _CHUNK]
            kf, j, e = _reduce(part)
            yc, okc = _fast(part, kf, j)
            _scale(yc, e)
            y[s:s + _CHUNK] = yc
            ok[s:s + _CHUNK] = okc
    if not ok.all():
        _stage3(x, y, ok)
    return y


def _stage3(x: np.ndarray, y: np.ndarray, ok: np.ndarray) -> None:
    """Stage 2 on the elements ``ok`` leaves undecided, then :func:`exp` on those it
    leaves undecided, into ``y``."""
    bad = np.flatnonzero(~ok)
    xb = x[bad]
    kf, j, e = _reduce(xb)
    y2, ok2 = _slow(xb, kf, j)
    _scale(y2, e)
    y[bad] = y2
    for i in bad[~ok2].tolist():
        y[i] = exp(float(x[i]))


#: arrays from this length take the compiled stages (numpy's below it: no compile or load)
_KERNEL_FROM = 8
#: 2^i for i = −_POW2_OFFSET … _POW2_OFFSET − 1 (exact), the compiled stage's scale factors
_POW2 = np.array([math.ldexp(1.0, i) for i in range(-_POW2_OFFSET, _POW2_OFFSET)])


@lru_cache(maxsize=1)
def _kernel() -> Any:
    """Stages 1 and 2 compiled (:func:`dprect.core.exp_jit.fast_loop`: numba, cached on
    disk by :func:`dprect.core.jit_cache.cached_njit`), or None without numba or a
    cache."""
    try:
        from dprect.core import exp_jit
    except (ImportError, RuntimeError):
        return None
    return exp_jit.fast_loop


__all__ = ["DIGITS", "EXP_ZERO_BELOW", "exp", "exp2", "exp_array", "expm1", "log", "log1p",
           "octave_steps"]
