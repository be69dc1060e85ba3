"""One axis of the quantile box's histogram query compiled (numba): the counts of
:func:`dprect.engines.numpy_engine.bucket_counts` in a few nanoseconds a value.

``bucket_counts`` bins with ``np.searchsorted`` — a binary search of each value over the
thresholds, about 70 ns a value on unsorted values and the coarse grid's 4,095
thresholds: 16 such searches of a 10^7-row column made the box 20× a min/max pass
(issue #43). Here a value's slot #{i : t_i < v} comes from a *guide*: the values and the
thresholds are mapped to their order keys (:func:`order_keys`: an order-preserving map to
uint64 — the IEEE-754 bits with the negatives' flipped, −0.0 read as +0.0; an int64 with
its sign bit flipped), so t_i < v ⇔ key(t_i) < key(v); the thresholds' key range is cut
into 2^:data:`GUIDE_BITS` public buckets of 2^shift keys, and ``table[g]`` = #{i : key(t_i)
< the first key of bucket g}. A value in bucket g has its slot in [table[g],
table[g + 1]]: a binary search over the (usually zero to two) thresholds in its bucket
gives it exactly. Values at or below t_0 are in slot 0, above t_{k−1} in slot k. The same
counts as ``bucket_counts``, bit for bit (tests/engines/test_histogram_jit.py); the
thresholds are public, the guide is a function of them only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dprect.engines.jit import compile_kernel

#: the guide's buckets: 2^GUIDE_BITS of them (a 256 KiB int32 table, cache-resident)
GUIDE_BITS = 16
_SIGN = np.uint64(1 << 63)


def order_keys(values: np.ndarray) -> np.ndarray:
    """uint64 keys in the order of ``values`` (float64 or int64; float: −0.0 as +0.0,
    no NaN): key(a) < key(b) ⇔ a < b."""
    if values.dtype.kind == "f":
        bits = np.asarray(values, dtype=np.float64).view(np.uint64)
        bits = np.where(bits == _SIGN, np.uint64(0), bits)  # −0.0 → +0.0
        return np.where(bits >= _SIGN, ~bits, bits | _SIGN)
    return np.asarray(values, dtype=np.int64).view(np.uint64) ^ _SIGN


def _guided_counts(bits: Any, is_float: bool, tkeys: Any, base: Any, shift: Any,
                   table: Any, out: Any) -> None:
    """Add each value's slot #{i : tkeys[i] < key} to ``out`` (len(tkeys) + 1 counts):
    ``bits`` the values' 64 bits as uint64, their key made here as :func:`order_keys`
    makes it, but a value −0.0 not read as +0.0: its key is the one just below +0.0's,
    and no threshold's key lies between them (the thresholds' −0.0 is read as +0.0), so
    the counts are the same. Plain Python, compiled by numba (every integer uint64 or
    int64, never mixed)."""
    sign = np.uint64(1 << 63)
    one = np.int64(1)
    k = tkeys.shape[0]
    first = tkeys[0]
    last = tkeys[k - 1]
    for i in range(bits.shape[0]):
        b = bits[i]
        key = (~b if b >= sign else b | sign) if is_float else b ^ sign
        c = key if key > first else first  # the bucket of the key clamped into
        c = c if c < last else last        # [t_0, t_{k−1}]: below t_0 slot 0, above k
        g = (c - base) >> shift
        lo = table[g]
        hi = table[g + np.uint64(1)]
        if hi - lo <= one:  # at most one threshold in the bucket: no branch on the data
            slot = lo + ((hi > lo) & (tkeys[min(lo, k - 1)] < key))
        else:  # the first j in [lo, hi) with tkeys[j] >= key
            while lo < hi:
                mid = (lo + hi) >> one
                if tkeys[mid] < key:
                    lo = mid + one
                else:
                    hi = mid
            slot = lo
        out[slot] += 1


def guide(thresholds: np.ndarray) -> tuple[np.ndarray, np.uint64, np.uint64, np.ndarray]:
    """(threshold keys, base, shift, table) for :func:`compiled_counts` (public: a
    function of the thresholds only)."""
    tkeys = order_keys(thresholds)
    base = tkeys[0]
    span = int(tkeys[-1] - base)
    shift = max(0, span.bit_length() - GUIDE_BITS)
    buckets = (span >> shift) + 2
    # a bucket whose first key would pass 2^64 − 1 (the key range reaching the top of
    # uint64) starts after every threshold: its entry is k, never a wrapped-around start
    fits = min(buckets, ((2**64 - 1 - int(base)) >> shift) + 1)
    starts = base + (np.arange(fits, dtype=np.uint64) << np.uint64(shift))
    table = np.full(buckets, len(tkeys), dtype=np.int64)
    table[:fits] = np.searchsorted(tkeys, starts, side="left")
    return tkeys, base, np.uint64(shift), table


def compiled_counts(values: np.ndarray, guided: tuple[np.ndarray, np.uint64, np.uint64,
                                                      np.ndarray]) -> np.ndarray | None:
    """:func:`~dprect.engines.numpy_engine.bucket_counts` of ``values`` for the
    thresholds of ``guided`` (:func:`guide`, non-decreasing thresholds), compiled; None
    without numba."""
    kernel = compile_kernel(_guided_counts)
    if kernel is None:
        return None
    tkeys, base, shift, table = guided
    out = np.zeros(len(tkeys) + 1, dtype=np.int64)
    if len(tkeys) == 0:
        out[0] = len(values)
        return out
    is_float = values.dtype.kind == "f"
    raw = np.ascontiguousarray(values, dtype=np.float64 if is_float else np.int64)
    kernel(raw.view(np.uint64), is_float, tkeys, base, shift, table, out)
    return out


def available() -> bool:
    """Whether numba is installed (the compiled counts run)."""
    return compile_kernel(_guided_counts) is not None


__all__ = ["GUIDE_BITS", "available", "compiled_counts", "guide", "order_keys"]
