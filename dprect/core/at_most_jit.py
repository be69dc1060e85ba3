"""An outward search's step tests compiled (numba), on the bytes of the OS entropy pool.

:func:`dprect.core.randomness._first_at_most` decides, level by level, whether a fresh
Z ~ DLap (rate n/d) is ≤ the level: a sign (one byte's top bit), then exact
Bernoulli(exp(−γ)) draws built from uniform integers ``randbelow(m)`` (rejection on
(m − 1).bit_length() bits of big-endian bytes). On a describe run's driver that loop is
about half of the mechanism's time, a few microseconds of Python per step. This is the
same loop compiled, reading the same bytes of a
:class:`~dprect.core.randomness.PooledSystemRandom` pool in the same order with the same
integer arithmetic: for any pool it returns the same index and leaves the pool at the
same byte as the Python loop (tests/core/test_at_most_jit.py compares the two byte for
byte), so the law is the exact one of docs/privacy.md §7 — only faster.

It takes the rates a plan makes, n/2^e (the exact value of a float ε; n and 2^e below
2^63: :func:`rate_shift`); a level's exponent m·n/2^e (m = level + 1 or −level − 1) is
split exactly from m·n held as two 64-bit halves (:func:`_exponent`), and every uniform
draw is on uint64. What it cannot finish it hands back untouched, at the start of a
level: a read past the pool's end (the pool refills in Python), a uniform draw over 2^64
values or more (``randbelow(d·k)`` with d·k ≥ 2^64), or an exponent whose whole part
needs 64 bits. The caller then runs that one level in Python from the same byte and goes
on compiled from the next, so the bytes read are the Python loop's; any other rate, or a
level beyond int64, runs in Python throughout.

numba is optional (the ``spark`` extra brings it): without it :func:`compiled` is False
and the Python loop runs (without a writable cache it compiles for the process) — the
same bytes, the same results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dprect.core.numba_jit import njit

#: the status beside the index and the byte the compiled loop stopped at
DONE, HANDED_BACK = 0, 1
#: the largest whole part and denominator the compiled loop takes (63 bits)
FITS = (1 << 63) - 1


def _jit(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` compiled (:func:`dprect.core.numba_jit.njit`), or ``fn`` itself where numba
    is not installed (the loops then call each other in Python; :func:`compiled` says
    so and the caller keeps its own loop)."""
    compiled_fn = njit(fn)
    return fn if compiled_fn is None else compiled_fn


@_jit
def _below(pool: np.ndarray, at: int, n: np.uint64) -> tuple[np.uint64, int, bool]:
    """(r, at, ok): ``PooledSystemRandom._randbelow(n)`` on the pool from byte ``at`` —
    n = 1 reads nothing; else k = (n − 1).bit_length() bits, the top k of ⌈k/8⌉ bytes
    big-endian, until below n — or ok False (the pool ends first; ``at`` unchanged)."""
    one = np.uint64(1)
    if n <= one:
        return np.uint64(0), at, True
    m = n - one
    bits = 0
    while m > 0:
        bits += 1
        m = m >> one
    size = (bits + 7) >> 3
    drop = np.uint64(size * 8 - bits)
    eight = np.uint64(8)
    end = pool.shape[0]
    while True:
        if at + size > end:
            return np.uint64(0), at, False
        r = np.uint64(0)
        for j in range(size):
            r = (r << eight) | np.uint64(pool[at + j])
        at += size
        r = r >> drop
        if r < n:
            return r, at, True


@_jit
def _bernoulli_exp(pool: np.ndarray, at: int, whole: int, frac: np.uint64,
                   d: np.uint64) -> tuple[bool, int, bool]:
    """(b, at, ok): ``_bernoulli_exp_int`` of γ = whole + frac/d — per whole unit K = the
    first k with Bernoulli(1/k) = 0 (``randbelow(k) < 1``), b False on an even K; then
    the first k with ``randbelow(d·k) ≥ frac``, b = [k odd] — or ok False (the pool ends,
    or d·k ≥ 2^64)."""
    one = np.uint64(1)
    two = np.uint64(2)
    for _ in range(whole):
        k = two  # randbelow(1) = 0 < 1, read-free
        while True:
            r, at, ok = _below(pool, at, k)
            if not ok:
                return False, at, False
            if r >= one:
                break
            k += one
        if k % two == 0:
            return False, at, True
    top = np.uint64(0xFFFFFFFFFFFFFFFF)
    k = one
    while True:
        if k > top // d:
            return False, at, False
        r, at, ok = _below(pool, at, d * k)
        if not ok:
            return False, at, False
        if not r < frac:
            return k % two == one, at, True
        k += one


@_jit
def _exponent(level: int, n: np.uint64, shift: int) -> tuple[np.int64, np.uint64, bool]:
    """(whole, frac, ok): ⌊m·n/2^shift⌋ and m·n mod 2^shift for m = level + 1 (level ≥ 0)
    or −level − 1, exactly (m·n as two 64-bit halves); ok False when the whole part does
    not fit in 63 bits."""
    m = np.uint64(level + 1) if level >= 0 else np.uint64(-(level + 1))
    half = np.uint64(32)
    mask = np.uint64(0xFFFFFFFF)
    m0, m1 = m & mask, m >> half
    n0, n1 = n & mask, n >> half
    p00, p01, p10, p11 = m0 * n0, m0 * n1, m1 * n0, m1 * n1
    mid = (p00 >> half) + (p01 & mask) + (p10 & mask)
    lo = (p00 & mask) | (mid << half)
    hi = p11 + (p01 >> half) + (p10 >> half) + (mid >> half)
    if shift == 0:
        if hi != 0 or lo >> np.uint64(63) != 0:
            return np.int64(0), np.uint64(0), False
        return np.int64(lo), np.uint64(0), True
    e = np.uint64(shift)
    if hi >> e != 0:
        return np.int64(0), np.uint64(0), False
    whole = (hi << (np.uint64(64) - e)) | (lo >> e)
    if whole >> np.uint64(63) != 0:
        return np.int64(0), np.uint64(0), False
    return np.int64(whole), lo & ((np.uint64(1) << e) - np.uint64(1)), True


@_jit
def first_at_most_bytes(pool: np.ndarray, at: int, levels: np.ndarray, n: np.uint64,
                        shift: int, one_whole: int, one_frac: np.uint64
                        ) -> tuple[int, int, int]:
    """(i, at, status): ``_first_at_most(levels, n, 2^shift)`` on the pool from byte
    ``at`` (the G ≥ 1 test's exponent n/2^shift given as its whole and fractional
    parts). Status DONE: i is the first level whose test succeeds (−1: none) and ``at``
    the byte after its draws; HANDED_BACK: the loop could not finish level i, and ``at``
    is the byte its draws start at."""
    end = pool.shape[0]
    d = np.uint64(1) << np.uint64(shift)
    for i in range(levels.shape[0]):
        start = at
        level = levels[i]
        whole, frac, ok = _exponent(level, n, shift)
        if not ok:
            return i, start, HANDED_BACK
        nonneg = level >= 0
        while True:
            if at >= end:  # the sign: getrandbits(1) is one byte's top bit
                return i, start, HANDED_BACK
            negative = pool[at] >> 7
            at += 1
            if negative == 1:
                b, at, ok = _bernoulli_exp(pool, at, one_whole, one_frac, d)
                if not ok:
                    return i, start, HANDED_BACK
                if not b:  # G = 0 with a negative sign: rejected, drawn again
                    continue
                if nonneg:
                    return i, at, DONE
                b, at, ok = _bernoulli_exp(pool, at, whole, frac, d)
                if not ok:
                    return i, start, HANDED_BACK
                if b:
                    return i, at, DONE
                break
            if nonneg:
                b, at, ok = _bernoulli_exp(pool, at, whole, frac, d)
                if not ok:
                    return i, start, HANDED_BACK
                if not b:
                    return i, at, DONE
            break
    return -1, at, DONE


def compiled() -> bool:
    """Whether the loop is compiled (numba installed); the first call in a process loads
    it from numba's cache or compiles it (a worker process calls this while it waits)."""
    if not hasattr(first_at_most_bytes, "py_func"):  # a numba dispatcher keeps its source
        return False
    pool = np.frombuffer(bytes(1), dtype=np.uint8)  # read-only, as a pool's bytes are
    first_at_most_bytes(pool, 0, np.zeros(0, dtype=np.int64), np.uint64(1), 0, 0,
                        np.uint64(0))
    return True


def rate_shift(n: int, d: int) -> int | None:
    """e with d = 2^e when the compiled loop takes the rate n/d (d a power of two below
    2^63 — every rate a plan makes from a float ε — and n < 2^63), else None."""
    if n < 1 or n > FITS or d < 1 or d > FITS or d & (d - 1):
        return None
    return d.bit_length() - 1


__all__ = ["DONE", "FITS", "HANDED_BACK", "compiled", "first_at_most_bytes", "rate_shift"]
