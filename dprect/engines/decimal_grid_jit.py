"""The decimal grid's encoding compiled (numba): :meth:`DecimalGrid.encode
<dprect.core.decimal_grid.DecimalGrid.encode>` in one loop over the values, the same int64
cell indices bit for bit (issue #41; tests/engines/test_decimal_grid_jit.py).

The reference (numpy) makes about fifteen temporary arrays a call — the log10 estimate
and up to four vectorised corrections, each computing f twice — about 1.4 µs a value,
most of a Spark quantile pass's CPU. Here, per value x with a = |x|:

* a < f_0 (the tiny cells, ±0.0) or NaN: the positive tiny cell ``zero`` when x ≥ 0 (so
  −0.0 and +0.0), else the negative tiny cell ``per_sign`` — NaN included, as the
  reference (NaN ≥ f_0 and NaN ≥ 0 are both false);
* else j = the largest index with f_j ≤ a, and the cell zero + 1 + j (x > 0) or
  per_sign − 1 − j (x < 0), as the reference.

j starts from the reference's estimate (e = ⌊log10 a⌋, k = clip(e − D + 1), m =
clip(⌊a / 10^k⌋)) and is then corrected down while f_j > a and up while f_{j+1} ≤ a, f
computed by the very float operations of ``DecimalGrid._f`` (m·10^k or m / 10^−k from
the same table :data:`~dprect.core.decimal_grid.POW10`, IEEE-754 exact rounding in
both). f is strictly increasing, so the largest j with f_j ≤ a is unique: the reference's
corrections stop at that j, and so do these, whatever the estimate (numba's log10 may
differ from numpy's by an ulp; only the number of corrections depends on it). ±∞, which
the reference does not admit (its corrections do not settle; every caller passes finite
values), get the last cell of their sign, the one that reaches ±∞.

With the quantiles' at-value counts (:func:`compiled_at_value`), the same loop also gives
each row's 1 if it equals its cell's value, else 0 — 0.0 for the positive tiny cell,
−5e−324 for the negative one, ±f_j where the corrections end — what
:func:`~dprect.core.quantiles.at_value_counts` computes from ``DecimalGrid.values``.

The Spark pass imports this module on the executor (it does not travel by value with the
kernel) and checks :data:`VERSION`; where dprect or numba is missing the reference runs.
numba is loaded (about 0.4 s a process) only for batches of at least
:data:`JIT_VALUES` values (:func:`encode`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dprect.core.decimal_grid import POW10, DecimalGrid
from dprect.core.quantiles import at_value_counts
from dprect.engines.jit import compile_kernel

#: the version of this module's interface the Spark kernel calls
VERSION = 1
#: batches of at least this many values are encoded compiled (where numba is installed):
#: the reference's ~1.4 µs a value pays numba's ~0.4 s load from about 3·10^5 values, and
#: a process pays it once
JIT_VALUES = 1 << 16


def _encode(x: Any, pow10: Any, digits: int, low_m: int, per_decade: int, k_min: int,
            k_max: int, per_sign: int, zero: int, f0: float, shift: int, out: Any,
            at: Any) -> None:
    """``out[i]`` = the cell of ``x[i]`` (module docstring), the estimated decade moved
    by ``shift`` (0; tests move it to run the corrections across decades); and, where
    ``at`` is not empty, ``at[i]`` = 1 if x[i] equals its cell's value (0.0, −5e−324, f_j
    or −f_j), else 0. Plain Python, compiled by numba."""
    with_at = at.shape[0] > 0
    tiny_negative = -5e-324
    high_m = 10 * low_m - 1
    last = per_sign - 1
    for i in range(x.shape[0]):
        v = x[i]
        a = abs(v)
        if not a >= f0:  # a tiny cell, ±0.0 or NaN
            out[i] = zero if v >= 0 else per_sign
            if with_at:
                at[i] = 1 if v == (0.0 if v >= 0 else tiny_negative) else 0
            continue
        if a == math.inf:
            j = last
            if with_at:
                at[i] = 0
        else:
            k = math.floor(math.log10(a)) - digits + 1 + shift
            k = min(max(k, k_min), k_max)
            scaled = a / pow10[k] if k >= 0 else a * pow10[-k]
            m = min(max(math.floor(scaled), low_m), high_m)
            here = -1.0  # f(k, m) where the loops computed it (f ≥ 0), else −1
            while k > k_min or m > low_m:  # down while f(k, m) > a
                f = m * pow10[k] if k >= 0 else m / pow10[-k]
                if f <= a:
                    here = f
                    break
                m -= 1
                if m < low_m:
                    m, k = high_m, k - 1
            while k < k_max or m < high_m:  # up while the next f <= a
                m2, k2 = (m + 1, k) if m < high_m else (low_m, k + 1)
                f = m2 * pow10[k2] if k2 >= 0 else m2 / pow10[-k2]
                if f > a:
                    break
                m, k = m2, k2
                here = f
            j = (k - k_min) * per_decade + (m - low_m)
            if with_at:
                if here < 0.0:  # the cell's value not computed above
                    here = m * pow10[k] if k >= 0 else m / pow10[-k]
                at[i] = 1 if a == here else 0
        out[i] = zero + 1 + j if v >= 0 else last - j


def compiled_encode(grid: DecimalGrid, x: np.ndarray, shift: int = 0) -> np.ndarray | None:
    """``grid.encode(x)`` compiled (int64), or None where numba is not installed.
    ``shift`` ≠ 0 (tests only) starts every value's search ``shift`` decades off: the
    cells are the same, at the cost of up to 9·10^(D−1)·|shift| corrections a value."""
    got = _run(grid, x, shift, False)
    return None if got is None else got[0]


def compiled_at_value(grid: DecimalGrid, x: np.ndarray, shift: int = 0
                      ) -> tuple[np.ndarray, np.ndarray] | None:
    """(``grid.encode(x)``, :func:`~dprect.core.quantiles.at_value_counts` of them)
    compiled, in one loop (the cell's value is the f the corrections end on), or None
    where numba is not installed."""
    return _run(grid, x, shift, True)


def _run(grid: DecimalGrid, x: np.ndarray, shift: int, with_at: bool
         ) -> tuple[np.ndarray, np.ndarray] | None:
    kernel = compile_kernel(_encode)
    if kernel is None:
        return None
    raw = np.ascontiguousarray(x, dtype=np.float64).ravel()
    out = np.empty(raw.shape[0], dtype=np.int64)
    at = np.empty(raw.shape[0] if with_at else 0, dtype=np.int64)
    f0 = float(grid.values(np.array([grid.zero + 1], dtype=np.int64))[0])
    kernel(raw, POW10, grid.digits, grid.low_m, grid.per_decade, grid.k_min, grid.k_max,
           grid.per_sign, grid.zero, f0, shift, out, at)
    return out.reshape(np.shape(x)), at.reshape(np.shape(x) if with_at else (0,))


def encode(grid: DecimalGrid, x: np.ndarray) -> np.ndarray:
    """``grid.encode(x)`` (int64) for finite or NaN values: compiled for at least
    :data:`JIT_VALUES` values where numba is installed, else the reference."""
    if np.size(x) >= JIT_VALUES:
        got = compiled_encode(grid, x)
        if got is not None:
            return got
    return grid.encode(x).astype(np.int64)


def encode_at_value(grid: DecimalGrid, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`encode`, the rows at their cell's value: ``at_value_counts``) of finite
    or NaN values, compiled in one loop from :data:`JIT_VALUES` values."""
    if np.size(x) >= JIT_VALUES:
        got = compiled_at_value(grid, x)
        if got is not None:
            return got
    cells = grid.encode(x).astype(np.int64)
    return cells, at_value_counts(grid, x, cells)


def available() -> bool:
    """Whether numba is installed (the compiled encoding runs)."""
    return compile_kernel(_encode) is not None


__all__ = ["JIT_VALUES", "VERSION", "available", "compiled_at_value", "compiled_encode",
           "encode", "encode_at_value"]
