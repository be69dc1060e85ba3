"""The exact samplers of :mod:`dprect.core.randomness` compiled (numba), on the same bits.

Imported by :mod:`dprect.core.randomness` only, and only where numba is installed (an
ImportError here means "no compiled path": every caller then runs the Python samplers).
The core imports no engine, so numba is gated here, in the core, the way
:mod:`dprect.engines.jit` gates it for the engines (docs/architecture.md).

**The streams.** A seeded source is CPython's Mersenne Twister (MT19937) — its state held
here in a uint32 array of 625 words (the 624 words and the index, as
``random.Random.getstate()`` lists them), seeded by :func:`seed_state` exactly as
``random.Random(seed)`` seeds itself for an integer seed (``init_by_array`` on the 32-bit
words of |seed|, least significant first; one word 0 for seed 0). ``getrandbits(k)``, k ≤
32, is the next tempered word shifted right by 32 − k; for 32 < k ≤ 64 the low word comes
first, the high one shifted right by 64 − k (CPython's little-endian fill). ``randbelow(n)``
is CPython's ``_randbelow_with_getrandbits``: k = n.bit_length() bits until they read
below n. An unseeded source is :class:`~dprect.core.randomness.PooledSystemRandom`: its
pool of OS bytes (a view of the same bytearray) and its read position, read here exactly as
its ``getrandbits`` and ``_randbelow`` read them; an exhausted pool is refilled in place
from ``os.urandom`` (numba's object mode). So a compiled sampler draws the same bits, in
the same order, as the Python sampler on the same source: the same values for a seed
(tests/core/test_random_jit.py compares them draw for draw).

**int64 arithmetic.** The caller (:mod:`dprect.core.randomness`) hands a compiled
sampler only integers below 2^62 (:data:`LIMIT`); larger ones take the Python path, which
draws the same bits from the same state. A Bernoulli(a/(b·k)) of the loops is
``randbelow(b·k/g) < a/g`` with g = gcd(a, b·k) = gcd(a, k) (gcd(a, b) = 1); where b·k/g
passes 2^62 it is drawn on two 64-bit words (b, k < 2^62: the product is below 2^124), by
the same rule and from the same bits as Python's arbitrary-precision ``randbelow``. A
loop's round k reaching 2^62 (probability below 1/(2^62 − 1)!: round j goes on with
probability at most 1/j) ends the call with :data:`BOUND`, on which the caller raises an
internal error; it never draws differently. A geometric draw's ⌊(U + t·V)/s⌋ is returned
as (U, V) and made on Python integers.

Also here, compiled under the same gate, what a side's draw reads and makes before its
rounds: a cell's tail counts (:func:`data_tails`) and the side's levels
(:func:`side_setup`, :func:`side_draw`) — integers and the same IEEE operations as the
Python code, in the same order.

Status codes: ``DONE`` (0), ``PAUSE`` (1: the side draw's round needs Python — a far step
whose existence the stream must decide, or a level difference that may not fit int64),
``BOUND`` (2, above).

And a cell's quantile draws (:func:`unimodal_rounds`: the exact unimodal sampler of
:mod:`dprect.core.interior_point` and the centre's rejection rounds of
:mod:`dprect.core.quantile_draws`): ``PAUSE`` there is an attempt whose bucket the first
uniform's bits do not decide, ``FAULT`` (5) a table that contradicts a draw (the Python
sampler's AssertionError).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros as _cttz

from dprect.core.jit_cache import cached_njit

#: every integer a compiled sampler is given stays below this (see the module docstring)
LIMIT = 1 << 62
DONE, PAUSE, BOUND = 0, 1, 2

_N = 624
_M = 397
_U32 = np.uint64(0xFFFFFFFF)
_UPPER = np.uint64(0x80000000)
_LOWER = np.uint64(0x7FFFFFFF)
_MATRIX_A = np.uint64(0x9908B0DF)
_ONE = np.uint64(1)
_S32 = np.uint64(32)
_B = np.uint64(0x9D2C5680)
_C = np.uint64(0xEFC60000)
_LIMIT = np.int64(LIMIT)
_TOP = np.uint64(1 << 63)
#: numba's count of trailing zero bits (LLVM's cttz) of a nonzero integer, its type kept
_trailing_zeros: Any = _cttz



def _jit(fn: Any) -> Any:
    """``fn`` compiled by numba and cached on disk, the cache kept no older than the
    package's sources (:func:`dprect.core.jit_cache.cached_njit`: numba checks a
    kernel's own file only, not the modules it calls). Where no cache location can be
    written or kept fresh (a read-only installation, without ``NUMBA_CACHE_DIR``) this
    module is not used — an ImportError, so the Python samplers run: compiling every
    kernel in every process takes ten seconds and more, more than most runs' draws."""
    try:
        return cached_njit(fn)
    except RuntimeError as e:  # numba: "cannot cache function …: no locator available"
        raise ImportError("no cache location for the compiled samplers") from e


class _Refills(threading.local):
    """Per thread: ``log`` — where a list, every refill's bytes are appended to it (a
    caller that may have to put a compiled call's reads back,
    ``quantile_draws.compiled_cell``, hands them to the next refills), and ``kept`` the
    pool as it was before the first of them (a refill is the only write to a pool in a
    compiled call, so with ``kept`` the caller has every byte the call read: no copy
    made before each call); ``given`` — OS bytes read once and put back (their reads
    undone): the next refills of a pool, here and ``PooledSystemRandom``'s own, take
    them first, in order, then the OS's."""

    def __init__(self) -> None:
        self.log: list[bytes] | None = None
        self.kept: bytes | None = None
        self.given: list[bytes] = []


#: this thread's refill log and given-back bytes (:class:`_Refills`)
REFILLS = _Refills()


def _refill(pool: np.ndarray) -> None:
    """A new pool of OS bytes, in place (the pool's bytearray sees them): the next given
    back (``REFILLS.given``) if one is as long, else the OS's; logged in ``REFILLS.log``
    where it is a list, the pool's old bytes kept first (``REFILLS.kept``) where the log
    is empty."""
    given = REFILLS.given
    fresh = given.pop(0) if given and len(given[0]) == pool.shape[0] \
        else os.urandom(pool.shape[0])
    log = REFILLS.log
    if log is not None:
        if not log:  # the call's first refill: the bytes it read before are these
            REFILLS.kept = pool.tobytes()
        log.append(fresh)
    pool[:] = np.frombuffer(fresh, dtype=np.uint8)


@_jit
def _twist(mt: Any) -> None:
    for kk in range(_N):
        y = (np.uint64(mt[kk]) & _UPPER) | (np.uint64(mt[(kk + 1) % _N]) & _LOWER)
        v = np.uint64(mt[(kk + _M) % _N]) ^ (y >> _ONE)
        if y & _ONE:
            v ^= _MATRIX_A
        mt[kk] = np.uint32(v & _U32)


@_jit
def _word(mt: Any) -> Any:
    """genrand_uint32: the next tempered 32-bit word (uint64)."""
    i = np.int64(mt[_N])
    if i >= _N:
        _twist(mt)
        i = np.int64(0)
    y = np.uint64(mt[i])
    mt[_N] = np.uint32(i + 1)
    y ^= y >> np.uint64(11)
    y ^= (y << np.uint64(7)) & _B
    y ^= (y << np.uint64(15)) & _C
    y ^= y >> np.uint64(18)
    return y & _U32


@_jit
def _init_genrand(mt: Any, s: Any) -> None:
    mt[0] = np.uint32(s)
    for i in range(1, _N):
        prev = np.uint64(mt[i - 1])
        mt[i] = np.uint32((np.uint64(1812433253) * (prev ^ (prev >> np.uint64(30)))
                           + np.uint64(i)) & _U32)
    mt[_N] = np.uint32(_N)


@_jit
def seed_state(mt: Any, key: Any) -> None:
    """``init_by_array(key)``: the state of ``random.Random(seed)``, ``key`` the seed's
    32-bit words (uint32, least significant first)."""
    _init_genrand(mt, np.uint64(19650218))
    _mix_key(mt, key)


@_jit
def _mix_key(mt: Any, key: Any) -> None:
    """``init_by_array``'s two loops over ``key`` and its last words, on the state
    ``init_genrand(19650218)`` left in ``mt`` (the same for every seed)."""
    n = key.shape[0]
    i = 1
    j = 0
    k = _N if _N > n else n
    while k > 0:
        prev = np.uint64(mt[i - 1])
        v = (np.uint64(mt[i]) ^ ((prev ^ (prev >> np.uint64(30))) * np.uint64(1664525))) \
            + np.uint64(key[j]) + np.uint64(j)
        mt[i] = np.uint32(v & _U32)
        i += 1
        j += 1
        if i >= _N:
            mt[0] = mt[_N - 1]
            i = 1
        if j >= n:
            j = 0
        k -= 1
    k = _N - 1
    while k > 0:
        prev = np.uint64(mt[i - 1])
        v = (np.uint64(mt[i]) ^ ((prev ^ (prev >> np.uint64(30))) * np.uint64(1566083941))) \
            - np.uint64(i)
        mt[i] = np.uint32(v & _U32)
        i += 1
        if i >= _N:
            mt[0] = mt[_N - 1]
            i = 1
        k -= 1
    mt[0] = np.uint32(0x80000000)
    mt[_N] = np.uint32(_N)


@_jit
def seed_states(mts: Any, keys: Any, at: Any) -> None:
    """:func:`seed_state` of each row: ``mts[r]`` from ``keys[at[r]:at[r + 1]]`` (a block's
    group streams seeded in one call: :meth:`dprect.core.randomness.RandomSource.streams`);
    ``init_genrand(19650218)``, the same for every seed, made once and copied."""
    start = np.zeros(_N + 1, dtype=np.uint32)
    _init_genrand(start, np.uint64(19650218))
    for r in range(mts.shape[0]):
        mts[r, :] = start
        _mix_key(mts[r], keys[at[r]:at[r + 1]])


@_jit
def _bit_length(n: Any) -> Any:
    """The bit length of 0 ≤ n < 2^64."""
    x = np.uint64(n)
    k = 0
    while x:
        x >>= _ONE
        k += 1
    return k


@_jit
def _mt_bits(mt: Any, k: Any) -> Any:
    """getrandbits(k), 0 ≤ k ≤ 64, as uint64."""
    if k == 0:
        return np.uint64(0)
    if k <= 32:
        return _word(mt) >> np.uint64(32 - k)
    lo = _word(mt)
    hi = _word(mt) >> np.uint64(64 - k)
    return (hi << _S32) | lo


@_jit
def _take(pool: Any, pos: Any, n: Any) -> Any:
    """The start of the next n bytes of the pool (refilled in place when they run past
    its end: the rest is dropped, as ``PooledSystemRandom._take`` drops it)."""
    at = pos[0]
    end = at + n
    if end > pool.shape[0]:
        with numba.objmode():
            _refill(pool)
        at = 0
        end = n
    pos[0] = end
    return at


@_jit
def _pool_bits(pool: Any, pos: Any, k: Any) -> Any:
    """``PooledSystemRandom.getrandbits(k)``, 0 ≤ k ≤ 64, as uint64."""
    at = pos[0]
    if 0 < k <= 8 and at < pool.shape[0]:
        pos[0] = at + 1
        return np.uint64(pool[at]) >> np.uint64(8 - k)
    n = (k + 7) // 8
    if n == 0:
        return np.uint64(0)
    at = _take(pool, pos, n)
    r = np.uint64(0)
    for i in range(n):
        r = (r << np.uint64(8)) | np.uint64(pool[at + i])
    return r >> np.uint64(n * 8 - k)


@_jit
def _pool_below(pool: Any, pos: Any, n: Any) -> Any:
    """``PooledSystemRandom._randbelow(n)``, 1 ≤ n < 2^63."""
    if n == 1:
        return np.int64(0)
    k = _bit_length(n - 1)
    size = (k + 7) >> 3
    drop = np.uint64((size << 3) - k)
    while True:
        at = _take(pool, pos, size)
        r = np.uint64(0)
        for i in range(size):
            r = (r << np.uint64(8)) | np.uint64(pool[at + i])
        r >>= drop
        if r < np.uint64(n):
            return np.int64(r)


@_jit
def bits(kind: Any, mt: Any, pool: Any, pos: Any, k: Any) -> Any:
    """getrandbits(k), 0 ≤ k ≤ 64, of the source (kind 0: the twister, 1: the pool)."""
    return _mt_bits(mt, k) if kind == 0 else _pool_bits(pool, pos, k)


@_jit
def below(kind: Any, mt: Any, pool: Any, pos: Any, n: Any) -> Any:
    """randbelow(n), 1 ≤ n < 2^63, of the source, as the Python source draws it."""
    if kind != 0:
        return _pool_below(pool, pos, n)
    k = _bit_length(n)
    bound = np.uint64(n)
    r = _mt_bits(mt, k)
    while r >= bound:
        r = _mt_bits(mt, k)
    return np.int64(r)


@_jit
def fill_words(mt: Any, k: Any, out: Any) -> None:
    """getrandbits(k) for any k ≥ 1 as its 32-bit words, least significant first, into
    ``out`` (⌈k/32⌉ of them): CPython's fill, the last word shifted right."""
    i = 0
    while k > 0:
        r = _word(mt)
        if k < 32:
            r >>= np.uint64(32 - k)
        out[i] = np.uint32(r)
        i += 1
        k -= 32


@_jit
def _mul_wide(x: Any, y: Any) -> Any:
    """x·y for any 0 ≤ x, y < 2^64, as (high, low) 64-bit words (uint64): the four
    32-bit partial products; ``mid`` is below 3·2^32, so no sum overflows."""
    x = np.uint64(x)
    y = np.uint64(y)
    x0 = x & _U32
    x1 = x >> _S32
    y0 = y & _U32
    y1 = y >> _S32
    p00 = x0 * y0
    p01 = x0 * y1
    p10 = x1 * y0
    p11 = x1 * y1
    mid = (p00 >> _S32) + (p01 & _U32) + (p10 & _U32)
    lo = (p00 & _U32) | ((mid & _U32) << _S32)
    hi = p11 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32)
    return hi, lo


@_jit
def _wide_bits(kind: Any, mt: Any, pool: Any, pos: Any, k: Any) -> Any:
    """getrandbits(k), 64 < k ≤ 128, of the twister (CPython's little-endian word fill,
    the last word shifted right) as (high, low) words."""
    lo = _word(mt) | (_word(mt) << _S32)
    k -= 64
    hi = np.uint64(0)
    shift = np.uint64(0)
    while k > 0:
        r = _word(mt)
        if k < 32:
            r >>= np.uint64(32 - k)
        hi |= r << shift
        shift += _S32
        k -= 32
    return hi, lo


@_jit
def _less2(ah: Any, al: Any, bh: Any, bl: Any) -> Any:
    """(ah, al) < (bh, bl) on two-word numbers."""
    return ah < bh or (ah == bh and al < bl)


@_jit
def _below2(kind: Any, mt: Any, pool: Any, pos: Any, nh: Any, nl: Any) -> Any:
    """randbelow(n) for 1 ≤ n = (nh, nl) < 2^127 (two uint64 words) with the Python
    source's draws, as (high, low) words: one int64 draw below 2^63, else the
    twister's k = n.bit_length() bits (CPython's word fill) or the pool's
    k = (n − 1).bit_length() bits of ⌈k/8⌉ bytes big-endian, until they read below n."""
    if nh == 0 and nl < _TOP:
        return np.uint64(0), np.uint64(below(kind, mt, pool, pos, np.int64(nl)))
    if kind == 0:
        k = 64 + _bit_length(nh) if nh else 64
        while True:
            rh, rl = _wide_bits(kind, mt, pool, pos, k) if k > 64 else \
                (np.uint64(0), _mt_bits(mt, k))
            if _less2(rh, rl, nh, nl):
                return rh, rl
    mh, ml = _sub2(nh, nl, np.uint64(0), _ONE)  # k = (n − 1).bit_length()
    k = 64 + _bit_length(mh) if mh else _bit_length(ml)
    size = (k + 7) >> 3
    drop = (size << 3) - k
    while True:
        at = _take(pool, pos, size)
        rh = np.uint64(0)
        rl = np.uint64(0)
        for i in range(size):  # (rh, rl) = (rh, rl)·256 + byte
            rh = (rh << np.uint64(8)) | (rl >> np.uint64(56))
            rl = (rl << np.uint64(8)) | np.uint64(pool[at + i])
        if drop:
            rl = (rl >> np.uint64(drop)) | (rh << np.uint64(64 - drop))
            rh >>= np.uint64(drop)
        if _less2(rh, rl, nh, nl):
            return rh, rl


@_jit
def _below_is_less(kind: Any, mt: Any, pool: Any, pos: Any, b: Any, m: Any, a: Any) -> Any:
    """``randbelow(b·m) < a`` (1 ≤ b, m < 2^62, 0 ≤ a < 2^62) with the Python source's
    draws: the product as one int64 when it fits, else as two words (b·m < 2^124)."""
    if m <= (_LIMIT - 1) // b:
        return below(kind, mt, pool, pos, b * m) < a
    nh, nl = _mul_wide(b, m)
    rh, rl = _below2(kind, mt, pool, pos, nh, nl)
    return rh == 0 and rl < np.uint64(a)


@_jit
def _gcd(a: Any, b: Any) -> Any:
    """gcd(a, b) of 0 ≤ a, b < 2^64, compiled once per integer type (int64 and uint64
    words alike): Stein's binary gcd — g = 2^min(tz(a), tz(b)) · gcd of their odd parts,
    by subtracting the smaller odd part from the larger and dropping the difference's
    trailing zeros — the same integer as Euclid's, without a division (Euclid's ~30
    64-bit divisions on a 56-bit U: about a third of a count noise's cost, s39-sampler).
    Stops early where an odd part reaches 1 (a scale's power-of-two numerator)."""
    if a == 0:
        return b
    if b == 0:
        return a
    shift = _trailing_zeros(a | b)
    a >>= _trailing_zeros(a)
    while True:
        b >>= _trailing_zeros(b)
        if a > b:
            a, b = b, a
        if a == 1:
            return a << shift
        b -= a
        if b == 0:
            return a << shift


@_jit
def exp_units(kind: Any, mt: Any, pool: Any, pos: Any, whole: Any) -> Any:
    """:func:`~dprect.core.randomness._exp_units`: Bernoulli(exp(−whole))."""
    for _ in range(whole):
        k = 1
        while below(kind, mt, pool, pos, k) < 1:
            k += 1
        if k % 2 == 0:
            return False
    return True


@_jit
def bernoulli_exp_reduced(kind: Any, mt: Any, pool: Any, pos: Any, a: Any, b: Any) -> Any:
    """:func:`~dprect.core.randomness._bernoulli_exp_reduced` (gcd(a, b) = 1, b < 2^62):
    1 (True), 0 (False) or :data:`BOUND`."""
    whole = a // b
    if not exp_units(kind, mt, pool, pos, whole):
        return 0
    a -= whole * b
    k = 1
    while True:
        if k >= _LIMIT:
            return BOUND
        # a/(b·k) in lowest terms: gcd(a, b·k) = gcd(a, k), as gcd(a, b) = 1
        g = _gcd(a, k)
        if not _below_is_less(kind, mt, pool, pos, b, k // g, a // g):
            return k % 2
        k += 1


@_jit
def bernoulli_exp_int(kind: Any, mt: Any, pool: Any, pos: Any, n: Any, d: Any) -> Any:
    """:func:`~dprect.core.randomness._bernoulli_exp_int` (0 ≤ n, 1 ≤ d < 2^62): 1, 0 or
    :data:`BOUND`."""
    whole = n // d
    frac = n - whole * d
    if not exp_units(kind, mt, pool, pos, whole):
        return 0
    k = 1
    while True:
        if k >= _LIMIT:
            return BOUND
        if not _below_is_less(kind, mt, pool, pos, d, k, frac):
            return k % 2
        k += 1


@_jit
def geometric_exp(kind: Any, mt: Any, pool: Any, pos: Any, s: Any, t: Any) -> Any:
    """:func:`~dprect.core.randomness._geometric_exp` (1 ≤ s, t < 2^62) as (U, V, status):
    the draw is ⌊(U + t·V)/s⌋, made by the caller."""
    while True:
        u = below(kind, mt, pool, pos, t)
        g = _gcd(u, t)
        r = bernoulli_exp_reduced(kind, mt, pool, pos, u // g, t // g)
        if r == BOUND:
            return u, 0, BOUND
        if r == 1:
            break
    v, status = _geometric_e(kind, mt, pool, pos)
    return u, v, status


@_jit
def _geometric_e(kind: Any, mt: Any, pool: Any, pos: Any) -> Any:
    """V, the Bernoulli(e^−1) successes before the first failure, as (V, status)."""
    v = 0
    while True:
        r = bernoulli_exp_reduced(kind, mt, pool, pos, 1, 1)
        if r == BOUND:
            return v, BOUND
        if r == 0:
            return v, DONE
        v += 1


@_jit
def discrete_laplace(kind: Any, mt: Any, pool: Any, pos: Any, s: Any, t: Any) -> Any:
    """:meth:`~dprect.core.randomness.RandomSource.discrete_laplace_int` (1 ≤ s, t <
    2^62) as (U, V, negative, status): the draw is ±⌊(U + t·V)/s⌋. The rejected pair
    (negative, 0) is told without forming U + t·V: it is 0 iff t·V ≤ s − 1 − U."""
    while True:
        u, v, status = geometric_exp(kind, mt, pool, pos, s, t)
        if status != DONE:
            return u, v, False, status
        negative = bits(kind, mt, pool, pos, 1) == 1
        if negative and u <= s - 1 and v <= (s - 1 - u) // t:
            continue
        return u, v, negative, DONE


# -- two-word integers: the geometric draw of a scale t up to 2^96 (a sum's noise) --------


@_jit
def _shr2(h: Any, lo: Any, n: Any) -> Any:
    """(h, lo) >> n, 0 ≤ n < 128."""
    if n == 0:
        return h, lo
    if n >= 64:
        return np.uint64(0), h >> np.uint64(n - 64)
    return h >> np.uint64(n), (lo >> np.uint64(n)) | (h << np.uint64(64 - n))


@_jit
def _shl2(h: Any, lo: Any, n: Any) -> Any:
    """(h, lo) << n, 0 ≤ n < 128 (the caller keeps the result below 2^128)."""
    if n == 0:
        return h, lo
    if n >= 64:
        return lo << np.uint64(n - 64), np.uint64(0)
    return (h << np.uint64(n)) | (lo >> np.uint64(64 - n)), lo << np.uint64(n)


@_jit
def _sub2(ah: Any, al: Any, bh: Any, bl: Any) -> Any:
    """(ah, al) − (bh, bl) for a ≥ b."""
    borrow = np.uint64(1) if al < bl else np.uint64(0)
    return ah - bh - borrow, al - bl


@_jit
def _ctz2(h: Any, lo: Any) -> Any:
    """The trailing zero bits of a nonzero two-word number."""
    n = 0
    if lo == 0:
        n = 64
        lo = h
    while not lo & _ONE:
        lo >>= _ONE
        n += 1
    return n


@_jit
def _power_of_two(h: Any, lo: Any) -> Any:
    """Whether a nonzero two-word number has one bit set."""
    return (h == 0 and lo & (lo - _ONE) == 0) or (lo == 0 and h & (h - _ONE) == 0)


@_jit
def _gcd2(ah: Any, al: Any, bh: Any, bl: Any) -> Any:
    """gcd of two two-word numbers, not both 0 (binary gcd; one word once both fit; a
    power of two b — a scale's numerator often is — by the trailing zeros alone)."""
    if ah == 0 and al == 0:
        return bh, bl
    if bh == 0 and bl == 0:
        return ah, al
    if _power_of_two(bh, bl):
        return _shl2(np.uint64(0), _ONE, min(_ctz2(ah, al), _ctz2(bh, bl)))
    shift = min(_ctz2(ah, al), _ctz2(bh, bl))
    ah, al = _shr2(ah, al, _ctz2(ah, al))
    while True:
        if ah == 0 and bh == 0:
            return _shl2(np.uint64(0), _gcd(al, bl), shift)
        bh, bl = _shr2(bh, bl, _ctz2(bh, bl))
        if _less2(bh, bl, ah, al):
            ah, al, bh, bl = bh, bl, ah, al
        bh, bl = _sub2(bh, bl, ah, al)
        if bh == 0 and bl == 0:
            return _shl2(ah, al, shift)


@_jit
def _div2(ah: Any, al: Any, bh: Any, bl: Any) -> Any:
    """⌊a/b⌋ of two-word numbers (b ≥ 1, a < 2^127): a shift for a power of two b, 32-bit
    pieces for b < 2^32, else binary long division."""
    if bh == 0 and al < _TOP and ah == 0:
        return np.uint64(0), al // bl
    if _power_of_two(bh, bl):
        return _shr2(ah, al, _ctz2(bh, bl))
    if bh == 0 and bl <= _U32:
        return _div_small(ah, al, bl)
    qh = np.uint64(0)
    ql = np.uint64(0)
    rh = np.uint64(0)
    rl = np.uint64(0)
    for i in range(127, -1, -1):
        rh, rl = _shl2(rh, rl, 1)  # r < b < 2^127: no bit is lost
        bit = (ah >> np.uint64(i - 64)) & _ONE if i >= 64 else (al >> np.uint64(i)) & _ONE
        rl |= bit
        if not _less2(rh, rl, bh, bl):
            rh, rl = _sub2(rh, rl, bh, bl)
            if i >= 64:
                qh |= _ONE << np.uint64(i - 64)
            else:
                ql |= _ONE << np.uint64(i)
    return qh, ql


@_jit
def _mod_small(h: Any, lo: Any, d: Any) -> Any:
    """(h, lo) mod d for 1 ≤ d < 2^32, by 32-bit pieces (each partial value below 2^64)."""
    dd = np.uint64(d)
    r = (h >> _S32) % dd
    r = ((r << _S32) | (h & _U32)) % dd
    r = ((r << _S32) | (lo >> _S32)) % dd
    return ((r << _S32) | (lo & _U32)) % dd


@_jit
def _div_small(h: Any, lo: Any, d: Any) -> Any:
    """⌊(h, lo)/d⌋ for 1 ≤ d < 2^32 (the quotient's two words), by 32-bit pieces."""
    dd = np.uint64(d)
    q3 = (h >> _S32) // dd
    r = (h >> _S32) % dd
    cur = (r << _S32) | (h & _U32)
    q2 = cur // dd
    r = cur % dd
    cur = (r << _S32) | (lo >> _S32)
    q1 = cur // dd
    r = cur % dd
    cur = (r << _S32) | (lo & _U32)
    q0 = cur // dd
    return (q3 << _S32) | q2, (q1 << _S32) | q0


@_jit
def _mul_small2(h: Any, lo: Any, m: Any) -> Any:
    """(h, lo)·m for m < 2^31 (the caller keeps the product below 2^127)."""
    mm = np.uint64(m)
    ph, pl = _mul_wide(lo, mm)
    return h * mm + ph, pl


#: the round at which a two-word loop stops (b·k must stay below 2^127: b < 2^96)
WIDE = 1 << 96
_WIDE_ROUNDS = np.int64(1 << 31)


@_jit
def _bernoulli_exp_frac2(kind: Any, mt: Any, pool: Any, pos: Any, ah: Any, al: Any,
                         bh: Any, bl: Any) -> Any:
    """:func:`bernoulli_exp_reduced` of a/b < 1 on two-word numbers (gcd(a, b) = 1,
    b < 2^96): round k draws ``randbelow(b·k/g) < a/g``, g = gcd(a, k)."""
    k = 1
    while True:
        if k >= _WIDE_ROUNDS:  # probability below 1/(2^31 − 1)!
            return BOUND
        g = np.int64(_gcd(np.uint64(k), _mod_small(ah, al, k))) if ah or al else k
        nh, nl = _mul_small2(bh, bl, k // g)
        xh, xl = _div_small(ah, al, g)
        rh, rl = _below2(kind, mt, pool, pos, nh, nl)
        if not _less2(rh, rl, xh, xl):
            return k % 2
        k += 1


@_jit
def geometric_exp2(kind: Any, mt: Any, pool: Any, pos: Any, th: Any, tl: Any) -> Any:
    """:func:`geometric_exp` for a t = (th, tl) of two words (t < 2^96) as (U's high
    word, U's low word, V, status): the draw is ⌊(U + t·V)/s⌋, made by the caller."""
    while True:
        uh, ul = _below2(kind, mt, pool, pos, th, tl)
        gh, gl = _gcd2(uh, ul, th, tl)
        ah, al = _div2(uh, ul, gh, gl)
        bh, bl = _div2(th, tl, gh, gl)
        if ah == 0 and al == 0:  # exp(−0): accepted without a draw, as Python's 0/1
            r = bernoulli_exp_reduced(kind, mt, pool, pos, np.int64(0), np.int64(1))
        elif bh == 0 and bl < _LIMIT:
            r = bernoulli_exp_reduced(kind, mt, pool, pos, np.int64(al), np.int64(bl))
        else:
            r = _bernoulli_exp_frac2(kind, mt, pool, pos, ah, al, bh, bl)
        if r == BOUND:
            return uh, ul, 0, BOUND
        if r == 1:
            break
    v, status = _geometric_e(kind, mt, pool, pos)
    return uh, ul, v, status


@_jit
def discrete_laplace2(kind: Any, mt: Any, pool: Any, pos: Any, s: Any, th: Any,
                      tl: Any) -> Any:
    """:func:`discrete_laplace` for a t of two words (t < 2^96; s < 2^62) as (U's two
    words, V, negative, status). The rejected (negative, 0): U + t·V < s, which needs
    V = 0 and U < s when t ≥ s."""
    while True:
        uh, ul, v, status = geometric_exp2(kind, mt, pool, pos, th, tl)
        if status != DONE:
            return uh, ul, v, False, status
        negative = bits(kind, mt, pool, pos, 1) == 1
        if negative and uh == 0 and ul < np.uint64(s):
            if v == 0:
                continue
            if th == 0 and tl < np.uint64(s):  # t < s < 2^62: one word
                t = np.int64(tl)
                if v <= (s - 1 - np.int64(ul)) // t:
                    continue
        return uh, ul, v, negative, DONE


@_jit
def side_rounds(kind: Any, mt: Any, pool: Any, pos: Any, held: Any, starts: Any,
                sizes: Any, order: Any, a: Any, far: Any, far_from: Any, shift: Any,
                cap: Any, mu_num: Any, mu_den: Any, e_num: Any, m_num: Any, base: Any,
                den: Any, has_upto: Any, far_num: Any) -> Any:
    """The rounds of :func:`dprect.core.step_exponential._draw` until one is accepted:
    (status, k, level). ``DONE``: step k drawn. ``PAUSE``: this round drew step k at
    ``level`` and the caller finishes the round in Python (k a far step not below
    ``has_upto``, whose existence the stream decides, or whose (D_k − μℓ)·den =
    ``far_num`` — the same for every far step — is −1: not an int64 below 2^62; or a data
    step whose (D_k − μℓ)·den is not proven to be the int64 computed here); then it calls
    again for the next rounds. ``BOUND``: see the module docstring. ``cap`` 0: C is
    made here as ``_draw`` makes it (the largest level's size, and one more than the
    largest from ``far_from`` on if the side has far steps).

    (D_k − μℓ)·den = e·a_k + m·k + base − ℓ·m is computed in int64, which wraps modulo
    2^64; the float of the same sum has an error below ``err`` = 2^−50 × the sum of the
    terms' magnitudes, so when the wrapped value w is in [0, 2^62) and |w − float| ≤ err
    < 2^61, the exact value is w (any other representative is 2^64 away)."""
    if cap == 0:  # C: a level's data steps, plus its far step from far_from on
        top = 0
        tail = 0
        for i in range(sizes.shape[0]):
            top = max(top, sizes[i])
            if held[i] >= far_from:
                tail = max(tail, sizes[i])
        cap = max(top, 1 + tail if far else 1)
    while True:
        u, v, status = geometric_exp(kind, mt, pool, pos, mu_num, mu_den)
        if status != DONE:
            return BOUND, 0, 0
        if v > (_LIMIT - u) // mu_den:  # ℓ past 2^62: probability below e^(−2^62/t)
            return BOUND, 0, 0
        level = (u + mu_den * v) // mu_num
        i = np.searchsorted(held, level)
        size = 0
        start = 0
        if i < held.shape[0] and held[i] == level:
            size = sizes[i]
            start = starts[i]
        uu = below(kind, mt, pool, pos, cap)
        if uu < size:  # a data step: its (D_k − μℓ)·den, proven exact or left to Python
            k = order[start + uu]
            q = a[k]
            num = e_num * q + m_num * k + base - level * m_num
            est = (float(e_num) * float(q) + float(m_num) * float(k) + float(base)
                   - float(level) * float(m_num))
            err = (abs(float(e_num) * float(q)) + abs(float(m_num) * float(k))
                   + abs(float(base)) + abs(float(level) * float(m_num))) * 2.0 ** -50
            if not (0 <= num < _LIMIT and abs(float(num) - est) <= err and err < 2.0 ** 61):
                return PAUSE, k, level
        elif far and uu == size and level >= far_from:  # the far step: far_num
            k = level - shift
            if k >= has_upto or far_num < 0:
                return PAUSE, k, level
            num = far_num
        else:
            continue
        # either step accepted with probability exp(−num/den), from the same bits
        r = bernoulli_exp_int(kind, mt, pool, pos, num, den)
        if r == BOUND:
            return BOUND, 0, 0
        if r == 1:
            return DONE, k, level


#: the longest array :func:`_stable_order` sorts by insertion (a side's levels: one a
#: data step, a dozen or two for a describe cell)
_INSERTION = 32


@_jit
def _stable_order(keys: Any) -> Any:
    """``np.argsort(keys, kind="mergesort")`` as int64: the one stable order (equal keys
    in index order), so the same array by either sort — by insertion up to
    :data:`_INSERTION` keys (no merge buffers, no copy to int64: about a side's setup's
    third on a describe cell, s39-sampler), numpy's merge sort past it."""
    n = keys.shape[0]
    if n > _INSERTION:
        return np.argsort(keys, kind="mergesort").astype(np.int64)
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        key = keys[i]
        j = i
        while j > 0 and keys[order[j - 1]] > key:  # strict: an equal key stays after
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
    return order


#: D̃/μ is shrunk by this factor before its floor (step_exponential's ``_SHRINK``)
_SHRINK = 1.0 - 1e-12


@_jit
def side_setup(tails: Any, target: Any, eps_f: Any, mu_f: Any, slack_f: Any,
               max_level: Any, far_hint: Any, has_upto: Any) -> Any:
    """:func:`dprect.core.step_exponential._scalar_setup` compiled (one-sided): the same
    IEEE operations in the same order, so the same levels. Returns (status, known, k_min,
    a_min, a, order, held, starts, sizes): status 0; 1 when a float is not finite (the
    caller's numpy path handles it); 2 when whether step ``known`` exists is needed and
    not given (``far_hint`` −1 and ``known`` ≥ ``has_upto``): the caller asks the stream
    and calls again with ``far_hint`` 0 or 1. Nothing is drawn."""
    n = tails.shape[0]
    tmax = np.int64(0)
    known = 0
    for i in range(n):
        if tails[i] > tmax:
            tmax = tails[i]
        if tails[i]:
            known = i + 1
    t = target if target < tmax else tmax
    a = np.zeros(known, dtype=np.int64)
    for k in range(known):
        q = tails[k]
        a[k] = q - t if q > t else 0
    empty = np.zeros(0, dtype=np.int64)
    k_min = 0
    if known:
        best = np.inf
        for k in range(known):
            g = eps_f * float(a[k]) + mu_f * float(k)
            if g == np.inf:
                return 1, known, 0, 0, a, empty, empty, empty, empty
            if g < best:
                best = g
                k_min = k
    if not known or known < has_upto:
        far = True
    elif far_hint < 0:
        return 2, known, 0, 0, a, empty, empty, empty, empty
    else:
        far = far_hint == 1
    if far and (not known or mu_f * float(known) < eps_f * float(a[k_min])
                + mu_f * float(k_min)):
        k_min = known
    a_min = a[k_min] if k_min < known else np.int64(0)
    km = float(k_min)
    levels = np.zeros(known, dtype=np.int64)
    for k in range(known):
        r = (eps_f * float(a[k] - a_min) + mu_f * (float(k) - km) + slack_f) / mu_f \
            * _SHRINK - 1e-9
        levels[k] = max_level if r >= float(max_level) else (np.int64(r) if r > 0 else 0)
    order = _stable_order(levels)
    count = 0
    for i in range(known):
        if i == 0 or levels[order[i]] != levels[order[i - 1]]:
            count += 1
    held = np.zeros(count, dtype=np.int64)
    starts = np.zeros(count, dtype=np.int64)
    sizes = np.zeros(count, dtype=np.int64)
    j = -1
    for i in range(known):
        if i == 0 or levels[order[i]] != levels[order[i - 1]]:
            j += 1
            held[j] = levels[order[i]]
            starts[j] = i
        sizes[j] += 1
    return 0, known, k_min, a_min, a, order, held, starts, sizes


#: :func:`side_draw`'s status when nothing was drawn and the Python path must draw (a
#: float past the range, or the side's base not an int64 below 2^62)
PYTHON = 3
#: :func:`side_draw`'s status when nothing was drawn and the stream must say whether the
#: step past the data exists (then call again with ``far_hint``)
ASK = 4


@_jit
def side_draw(kind: Any, mt: Any, pool: Any, pos: Any, tails: Any, target: Any,
              eps_f: Any, mu_f: Any, slack_f: Any, max_level: Any, far_hint: Any,
              has_upto: Any, e_num: Any, m_num: Any, h_num: Any, den: Any, mu_num: Any,
              mu_den: Any) -> Any:
    """A one-sided side's whole draw (:func:`side_setup`, then :func:`side_rounds`) in
    one call: (status, k, level, known, base, shift, far, a, order, held, starts,
    sizes). ``DONE``: step k. ``PAUSE``: as :func:`side_rounds`, with what the caller
    needs to finish the round and go on (base = η·den − e·a_{k*} − m·k* exactly; shift =
    ⌊base/m⌋, the far steps' level offset; the arrays). ``BOUND`` as there.
    :data:`PYTHON` and :data:`ASK`: nothing drawn. e, m, h (ε, μ, η over their common
    denominator ``den``) are below 2^62; e·a_{k*} + m·k* is formed on two words, and a
    base outside (−2^62, 2^62) is :data:`PYTHON`."""
    status, known, k_min, a_min, a, order, held, starts, sizes = side_setup(
        tails, target, eps_f, mu_f, slack_f, max_level, far_hint, has_upto)
    # as side_setup decides it: the step past the data exists if it was made already
    far = True if known == 0 or known < has_upto else far_hint == 1
    if status != 0:
        return (PYTHON if status == 1 else ASK), 0, 0, known, 0, 0, far, a, order, held, \
            starts, sizes
    ph, pl = _mul_wide(e_num, a_min)
    qh, ql = _mul_wide(m_num, k_min)
    sl = pl + ql
    sh = ph + qh + (_ONE if sl < pl else np.uint64(0))
    h = np.uint64(h_num)
    if sh != 0 or sl >= h + np.uint64(LIMIT):  # base ≤ −2^62
        return PYTHON, 0, 0, known, 0, 0, far, a, order, held, starts, sizes
    base = np.int64(h_num) - np.int64(sl)
    shift = base // m_num
    far_from = known + shift
    if far and far_from < 0:  # cannot happen: the Python path raises
        return PYTHON, 0, 0, known, 0, 0, far, a, order, held, starts, sizes
    far_num = base - m_num * shift  # (D_k − μℓ)·den of every far step: base mod m
    st, k, level = side_rounds(kind, mt, pool, pos, held, starts, sizes, order, a, far,
                               far_from, shift, 0, mu_num, mu_den, e_num, m_num, base,
                               den, has_upto, far_num)
    return st, k, level, known, base, shift, far, a, order, held, starts, sizes


@_jit
def data_tails(keys: Any, counts: Any, exponent_bits: Any, offset: Any) -> Any:
    """:func:`dprect.core.describe_stats.data_tails` compiled (a side's draw's input, no
    draw): per side the entries' reach — −i − 1 below, i − 1 above, i = (key >>
    ``exponent_bits``) − ``offset`` the entry's interval, 0 on neither side — and
    tail(k) = Σ counts of reach ≥ k for k = 0 … the farthest reach (int64, exact)."""
    far_lo = -1
    far_hi = -1
    for j in range(keys.shape[0]):
        i = (keys[j] >> exponent_bits) - offset
        if i <= -1:
            far_lo = max(far_lo, -i - 1)
        elif i >= 1:
            far_hi = max(far_hi, i - 1)
    lower = np.zeros(far_lo + 1, dtype=np.int64)
    upper = np.zeros(far_hi + 1, dtype=np.int64)
    for j in range(keys.shape[0]):
        i = (keys[j] >> exponent_bits) - offset
        if i <= -1:
            lower[-i - 1] += counts[j]
        elif i >= 1:
            upper[i - 1] += counts[j]
    for k in range(far_lo - 1, -1, -1):
        lower[k] += lower[k + 1]
    for k in range(far_hi - 1, -1, -1):
        upper[k] += upper[k + 1]
    return lower, upper


# -- the quantiles' draws: the exact unimodal sampler and its rejection rounds ----------

#: :func:`unimodal_rounds`'s status when its tables contradict a draw (a point outside
#: its bucket, a level outside the window): the Python sampler's AssertionError
FAULT = 5


@_jit
def _ratio_exp(kind: Any, mt: Any, pool: Any, pos: Any, ah: Any, al: Any, bh: Any,
               bl: Any) -> Any:
    """``RandomSource.bernoulli_exp_ratio(a, b)`` for 0 ≤ a < b < 2^96 given as two words
    (1, 0 or :data:`BOUND`): reduced by their gcd, then the one-word sampler where the
    reduced b is below 2^62, else the two-word one (:func:`_bernoulli_exp_frac2`) — the
    draws the Python source makes (its compiled sampler or its Python one, the same
    bits), as :func:`geometric_exp2` dispatches them."""
    gh, gl = _gcd2(ah, al, bh, bl)
    ah, al = _div2(ah, al, gh, gl)
    bh, bl = _div2(bh, bl, gh, gl)
    if ah == 0 and al == 0:  # exp(−0): 0/1, as Python's gcd(0, b) = b makes it
        return bernoulli_exp_reduced(kind, mt, pool, pos, np.int64(0), np.int64(1))
    if bh == 0 and bl < _LIMIT:
        return bernoulli_exp_reduced(kind, mt, pool, pos, np.int64(al), np.int64(bl))
    return _bernoulli_exp_frac2(kind, mt, pool, pos, ah, al, bh, bl)


@_jit
def _unimodal_sample(kind: Any, mt: Any, pool: Any, pos: Any, starts: Any, depths: Any,
                     law: Any, kmax: Any, num: Any, dh: Any, dl: Any, single: Any, b0: Any,
                     d0: Any, d1: Any, intervals: Any, rows: Any, bits_u: Any,
                     ranks: Any) -> Any:
    """``interior_point.ExactSampler.sample`` of one law as (status, y, u): its
    attempts until one is accepted (``DONE``, y). Each attempt's bucket is decided on
    the first ``bits_u`` bits u of its uniform by the intervals (lo, hi, bucket row)
    ``intervals[d0:d1]`` (``Buckets.intervals``, the same decision as
    ``Buckets.decide``); a u in none of them (the Python sampler would draw more bits
    and refine) ends the call with ``PAUSE`` and u, the Python sampler finishing that
    attempt from u. ``single``: one bucket, no bit drawn (row b0). ``rows``: (n, size,
    left start, left length, right start) of each bucket. The point's γ·den =
    num·(kmax − depth) − n·den is formed on two words (num < 2^62, kmax − depth < 2^63,
    n ≤ 140, den = (dh, dl) < 2^96) and must lie in [0, den), else ``FAULT``. The
    law's depth of piece i: ``depths[law, i]``, or with ``ranks`` read off its ranks
    (:func:`depth_of`)."""
    while True:
        if single:
            j = b0
        else:
            u = bits(kind, mt, pool, pos, bits_u)
            lo = d0
            hi = d1
            while lo < hi:  # the first row whose interval starts above u
                mid = (lo + hi) // 2
                if intervals[mid, 0] <= u:
                    lo = mid + 1
                else:
                    hi = mid
            if lo == d0 or intervals[lo - 1, 1] < u:
                return PAUSE, np.int64(0), u
            j = np.int64(intervals[lo - 1, 2])
        r = below(kind, mt, pool, pos, rows[j, 1])
        y = rows[j, 2] + r if r < rows[j, 3] else rows[j, 4] + (r - rows[j, 3])
        lo = 0
        hi = starts.shape[0]
        while lo < hi:  # the piece holding y: the last start ≤ y
            mid = (lo + hi) // 2
            if starts[mid] <= y:
                lo = mid + 1
            else:
                hi = mid
        ph, pl = _mul_wide(num, kmax - depth_of(depths, law, lo - 1, ranks))
        qh, ql = _mul_small2(dh, dl, rows[j, 0])
        if _less2(ph, pl, qh, ql):
            return FAULT, np.int64(0), np.uint64(0)
        ah, al = _sub2(ph, pl, qh, ql)
        if not _less2(ah, al, dh, dl):
            return FAULT, np.int64(0), np.uint64(0)
        accepted = _ratio_exp(kind, mt, pool, pos, ah, al, dh, dl)
        if accepted == BOUND:
            return BOUND, np.int64(0), np.uint64(0)
        if accepted == 1:
            return DONE, y, np.uint64(0)


@_jit
def _window_level(i: Any, grid: Any) -> Any:
    """``quantile_centre.level_of`` of cell i; ``grid`` = (per_sign, zero, per_decade,
    centre, sign, ZERO_DECADES, SIGN_DECADES) (int64; every value below 2^62)."""
    per_sign, zero, per_decade = grid[0], grid[1], grid[2]
    centre, sign = grid[3], grid[4]
    if i < per_sign:
        block = 1 + (per_sign - 1 - i) // per_decade
        cls = 0
    elif i <= zero:
        block = 0
        cls = 1
    else:
        block = 1 + (i - zero - 1) // per_decade
        cls = 2
    if block == centre:
        d = 0
    elif block == 0 or centre == 0:
        d = grid[5]
    else:
        d = abs(block - centre)
    if sign != 1 and cls == 2 - sign:
        d += grid[6]
    return d


@_jit
def unimodal_rounds(kind: Any, mt: Any, pool: Any, pos: Any, first: Any, starts: Any,
                    depths: Any, laws: Any, dens: Any, rows: Any, intervals: Any,
                    bits_u: Any, centred: Any, firsts: Any, offsets: Any, grid: Any,
                    accept: Any, out: Any) -> Any:
    """The draws of laws ``first`` … m − 1 of one cell (:mod:`dprect.core.
    quantile_draws`) in one call, as (status, law, u): law j an exact draw
    (:func:`_unimodal_sample`) on the shared pieces ``starts`` with depths ``depths[j]``,
    ``laws[j]`` = (kmax, num, single, its first bucket row, its first interval row; its
    last is the next law's first − 1), at rate num/den, ``dens[j]`` = den's two words;
    ``rows``: the buckets (n, size, left start, left length, right start), int64;
    ``intervals``: (lo, hi, bucket row), uint64; the draw written to ``out[j]``.
    ``centred``: each draw y is a point of the window laid end to end (its ranges'
    first cells ``firsts`` at ``offsets``), mapped to its cell i and accepted with
    probability exp(−a/b), (a, b) = ``accept[level(i)]`` (:func:`_window_level`), else
    drawn again — ``quantile_draws.near_centre``'s rounds. ``DONE``: every law drawn;
    ``PAUSE``: law ``law`` stopped at an attempt's undecided u (the caller finishes that
    law in Python, then calls again from ``law`` + 1); ``BOUND``, ``FAULT``: the caller
    raises."""
    none = np.zeros(1, dtype=np.int64)  # depth_of's ranks where the depths are given
    return rank_rounds(kind, mt, pool, pos, first, depths.shape[0], starts, depths, laws,
                       dens, rows, intervals, bits_u, centred, firsts, offsets, grid,
                       accept, out, (False, none, none, none, none, none))


@_jit
def depth_of(depths: Any, law: Any, i: Any, ranks: Any) -> Any:
    """Law ``law``'s depth of piece i: ``depths[law, i]``, or where ``ranks`` = (True,
    lo, hi, t, b, top) a rank law's, top[law] − max(0, b·lo_i − t, t − b·hi_i) (t =
    ``t[law]`` = a·n, b = ``b[law]`` for q = a/b: ``quantile_draws.rank_depths``'
    integers, every b·n below 2^62) — without the (laws × pieces) array."""
    if not ranks[0]:
        return depths[law, i]
    t = ranks[3][law]
    b = ranks[4][law]
    w = max(ranks[1][i] * b - t, t - ranks[2][i] * b)
    return ranks[5][law] - max(w, np.int64(0))


@_jit
def rank_rounds(kind: Any, mt: Any, pool: Any, pos: Any, first: Any, m: Any, starts: Any,
                depths: Any, laws: Any, dens: Any, rows: Any, intervals: Any, bits_u: Any,
                centred: Any, firsts: Any, offsets: Any, grid: Any, accept: Any, out: Any,
                ranks: Any) -> Any:
    """:func:`unimodal_rounds` of the m laws whose depths :func:`depth_of` reads
    (``depths``, or their ``ranks``): the same attempts, rounds and statuses."""
    for law in range(first, m):
        while True:
            status, y, u = _unimodal_sample(
                kind, mt, pool, pos, starts, depths, law, laws[law, 0], laws[law, 1],
                dens[law, 0], dens[law, 1], laws[law, 2] != 0, laws[law, 3],
                laws[law, 4], laws[law + 1, 4], intervals, rows, bits_u, ranks)
            if status != DONE:
                return status, law, u
            if not centred:
                out[law] = y
                break
            lo = 0
            hi = offsets.shape[0]
            while lo < hi:  # the window's range holding y: the last offset ≤ y
                mid = (lo + hi) // 2
                if offsets[mid] <= y:
                    lo = mid + 1
                else:
                    hi = mid
            i = firsts[lo - 1] + (y - offsets[lo - 1])
            level = _window_level(i, grid)
            if level == 0:
                out[law] = i
                break
            if level >= accept.shape[0]:
                return FAULT, law, np.uint64(0)
            a = accept[level, 0]
            b = accept[level, 1]
            g = _gcd(a, b)
            accepted = bernoulli_exp_reduced(kind, mt, pool, pos, a // g, b // g)
            if accepted == BOUND:
                return BOUND, law, np.uint64(0)
            if accepted == 1:
                out[law] = i
                break
    return DONE, m, np.uint64(0)


@_jit
def window_depths(a: Any, z: Any, w: Any, keys: Any, row_lo: Any, row_hi: Any,
                  incl: Any, before: Any, qa: Any, qb: Any, n: Any) -> Any:
    """A small group's quantile laws on the centre's window in one pass (no draw):
    ``quantile_centre.window_frame``'s pieces of the ranges [a_r, z_r) — per range its
    lead gap (ranks ``before[r]``), then per key of its run (``w[r]`` keys of ``keys``,
    concatenated) the key's cell (``row_lo``, ``row_hi``) and the gap after it to the
    next key or z_r (ranks ``incl``), the empty ones dropped — laid end to end as
    ``quantile_centre.cut`` lays them (each range's pieces tile it: the cut keeps them
    all, moved by the ranges' offsets), and each law j's depths on them,
    ``quantile_draws.rank_depths``' integers: w = max(0, b·lo − a·n, a·n − b·hi) (q_j =
    ``qa[j]/qb[j]``, every b·n below 2^62: the caller's condition), depth = max(w) − w.
    Returns (starts, sizes) as uint64, the depths (laws × pieces, int64) and each law's
    largest depth and its first piece (``depths.max(axis=1)``, ``depths.argmax(axis=1)``:
    the least w, first met)."""
    starts, sizes, lo, hi = window_pieces(a, z, w, keys, row_lo, row_hi, incl, before)
    p = starts.shape[0]
    m = qa.shape[0]
    depths = np.empty((m, p), dtype=np.int64)
    kmax = np.empty(m, dtype=np.int64)
    split = np.empty(m, dtype=np.int64)
    for j in range(m):
        t = qa[j] * n
        b = qb[j]
        top = np.int64(0)
        least = np.int64(0)
        first = 0
        for i in range(p):
            x = max(lo[i] * b - t, t - hi[i] * b)
            x = max(x, np.int64(0))
            depths[j, i] = x
            if x > top:
                top = x
            if i == 0 or x < least:
                least = x
                first = i
        for i in range(p):
            depths[j, i] = top - depths[j, i]
        kmax[j] = top - least
        split[j] = first
    return starts, sizes, depths, kmax, split


@_jit
def window_pieces(a: Any, z: Any, w: Any, keys: Any, row_lo: Any, row_hi: Any, incl: Any,
                  before: Any) -> Any:
    """:func:`window_depths`' pieces without the laws: (starts, sizes) as uint64 and
    each piece's ranks (lo, hi) as int64, laid end to end (the one layout of a small
    group's window frame compiled; :func:`window_depths` and
    :func:`dprect.core.quantile_cell_jit.cell_draws` read it)."""
    runs = a.shape[0]
    bound = runs + 2 * keys.shape[0]
    starts = np.empty(bound, dtype=np.uint64)
    sizes = np.empty(bound, dtype=np.uint64)
    lo = np.empty(bound, dtype=np.int64)
    hi = np.empty(bound, dtype=np.int64)
    p = 0
    key = 0
    offset = 0
    for r in range(runs):
        shift = offset - a[r]  # a cell's place in the window laid end to end
        stop = z[r] if w[r] == 0 else keys[key]
        if stop > a[r]:
            starts[p] = a[r] + shift
            sizes[p] = stop - a[r]
            lo[p] = before[r]
            hi[p] = before[r]
            p += 1
        for i in range(key, key + w[r]):
            starts[p] = keys[i] + shift
            sizes[p] = 1
            lo[p] = row_lo[i]
            hi[p] = row_hi[i]
            p += 1
            stop = z[r] if i == key + w[r] - 1 else keys[i + 1]
            if stop > keys[i] + 1:
                starts[p] = keys[i] + 1 + shift
                sizes[p] = stop - keys[i] - 1
                lo[p] = incl[i]
                hi[p] = incl[i]
                p += 1
        key += w[r]
        offset += z[r] - a[r]
    return starts[:p].copy(), sizes[:p].copy(), lo[:p].copy(), hi[:p].copy()
