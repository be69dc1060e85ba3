"""A cell's quantile laws' sampler tables in ONE compiled call (issue #41): the buckets of
every law at the first precision and the decision intervals of the first uniform's bits —
:func:`dprect.core.quantile_draws._tables` of each law's
:func:`~dprect.core.interior_point.law_buckets`, integer for integer, without a Python
integer or a :class:`~dprect.core.interior_point.Buckets` made.

Imported only where :mod:`dprect.core.random_jit` loads (numba installed, its cache
writable: :func:`dprect.core.randomness.kernels`), by :mod:`dprect.core.quantile_draws`.

**The derivation** (docs/privacy.md §2, "Exact sampling of the interior point"; the
Python one is :func:`~dprect.core.interior_point._general_buckets`): law j ∝ exp(c·depth),
c = num/den, on the pieces ``starts`` of a grid of m points, its depth row unimodal with
its largest value kmax first met at piece ``split``. Bucket n holds the points of depth
in (t[n + 1], t[n]], t[n] = kmax − min(⌈n·den/num⌉, kmax + 1) — made here for n = 0, 1,
… from den = Q·num + R by n·den = a_n·num + r_n, a_{n+1} = a_n + Q + [r_n + R ≥ num]
(every r below num < 2^62, so the sums stay in int64; a_n saturates past kmax + 1, where
the cap holds anyway). n_max = ⌊c·kmax⌋ is the last n with t[n] ≥ 0, n_cut =
min(n_max, ``_bucket_cut(128)``). The runs of bucket n are the searches of t[n] and
t[n + 1] on the rising and the falling half, their positions the pieces' starts (m past
the last): the general loop over n = 0 … n_cut, the empty buckets skipped — what
:func:`~dprect.core.interior_point._sparse_buckets` finds by searching the occupied
buckets only (the same :class:`Buckets`, tests/core/test_interior_point.py).

**The enclosures** x_lo[j] ≤ 2^128·Σ_{i ≤ j} T_i·e^{−n_i} ≤ x_hi[j] are sums of size ×
``_exp_neg_table(128)``'s entries (each ≤ 2^128) on four 64-bit words: every size is
below m < 2^62, so every sum is below m·2^128 < 2^190, and x·2^64 < 2^254 fits the four
words. Bucket j's decision interval (:func:`~dprect.core.interior_point.decision_interval`
at 64 bits: lo = ⌈x_hi[j − 1]·2^64 / W_lo⌉, hi = min(⌊x_lo[j]·2^64 / W_hi⌋ − 1, 2^64 − 1))
is a long division on the words (restoring, one quotient bit a step from the operands'
bit lengths: the quotient is about 2^64, so ~65 steps), the intervals kept up to the
first bucket with x_lo ≥ W_lo − ⌊W_lo / 2^24⌋ (``Buckets.intervals``' ``share``).

Hence the same arrays as the Python assembly (tests/core/test_quantile_jit.py, over
random laws of one to many buckets, their mutations failing it), so the same draws and
bits. A law whose buckets do not tile the grid (the Python derivation's AssertionError)
returns ``FAULT``: the caller takes the Python path, which raises.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dprect.core.interior_point import FIRST_PRECISION, _bucket_cut, _exp_neg_table
from dprect.core.random_jit import _div2, _jit, _mul_wide, depth_of

DONE, FAULT = 0, 5

#: the last bucket made explicit at the first precision (n_cut ≤ this)
CUT = _bucket_cut(FIRST_PRECISION)

_W = np.uint64(0xFFFFFFFFFFFFFFFF)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)


def _words(x: int) -> tuple[int, int, int, int]:
    """x < 2^256 as four 64-bit words, least significant first."""
    return tuple((x >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(4))  # type: ignore


def exp_tables() -> tuple[np.ndarray, np.ndarray]:
    """``_exp_neg_table(FIRST_PRECISION)`` as (CUT + 2, 4) uint64 words (lo, hi)."""
    lo, hi = _exp_neg_table(FIRST_PRECISION)
    return (np.array([_words(v) for v in lo], dtype=np.uint64),
            np.array([_words(v) for v in hi], dtype=np.uint64))


@_jit
def _add_into(acc: Any, k: Any, x: Any, t: Any, row: Any) -> None:
    """acc[k] += x·t[row] on four words (x < 2^63; the sum stays below 2^256)."""
    carry = _ZERO
    for i in range(4):
        h, lo = _mul_wide(x, t[row, i])
        s = acc[k, i] + lo
        c = _ONE if s < lo else _ZERO
        s2 = s + carry
        if s2 < s:
            c += _ONE
        acc[k, i] = s2
        carry = h + c


@_jit
def _less(a: Any, b: Any) -> Any:
    """a < b on four words (arrays, least significant first)."""
    for i in range(3, -1, -1):
        if a[i] != b[i]:
            return a[i] < b[i]
    return False


@_jit
def _bits(a: Any) -> Any:
    """The bit length of a four-word number."""
    for i in range(3, -1, -1):
        if a[i] != _ZERO:
            w = a[i]
            n = 0
            while w:
                w >>= _ONE
                n += 1
            return 64 * i + n
    return 0


@_jit
def _shl(a: Any, s: Any, out: Any) -> None:
    """out = a << s (0 ≤ s < 256; the bits past 2^256 dropped)."""
    whole = s // 64
    part = s % 64
    for i in range(3, -1, -1):
        j = i - whole
        v = _ZERO
        if j >= 0:
            v = a[j] << np.uint64(part)
            if part and j >= 1:
                v |= a[j - 1] >> np.uint64(64 - part)
        out[i] = v


@_jit
def _shr1(a: Any) -> None:
    """a >>= 1 in place."""
    for i in range(4):
        a[i] = a[i] >> _ONE
        if i < 3:
            a[i] |= (a[i + 1] & _ONE) << np.uint64(63)


@_jit
def _sub_from(a: Any, b: Any) -> None:
    """a −= b in place (a ≥ b)."""
    borrow = _ZERO
    for i in range(4):
        x = a[i]
        d = x - b[i]
        nb = _ONE if x < b[i] else _ZERO
        d2 = d - borrow
        if d < borrow:
            nb = _ONE
        a[i] = d2
        borrow = nb


@_jit
def _divide(x: Any, w: Any, rem: Any, d: Any) -> Any:
    """⌊x·2^64 / w⌋ for x < 2^192, w ≥ 1 (four words each) as (high, low, exact): the
    quotient's two words (saturated to 2^128 − 1 past them: the callers compare it with
    2^64) and whether it divides exactly. ``rem``, ``d``: four-word scratch."""
    if x[3] != _ZERO:  # not below 2^192: never (every sum is below m·2^128 < 2^190)
        return _W, _W, False
    rem[0] = _ZERO
    rem[1] = x[0]
    rem[2] = x[1]
    rem[3] = x[2]
    s = _bits(rem) - _bits(w)
    if s < 0:
        return _ZERO, _ZERO, rem[0] == 0 and rem[1] == 0 and rem[2] == 0 and rem[3] == 0
    if s >= 128:
        return _W, _W, False
    _shl(w, s, d)
    qh = _ZERO
    ql = _ZERO
    for k in range(s, -1, -1):
        if not _less(rem, d):
            _sub_from(rem, d)
            if k >= 64:
                qh |= _ONE << np.uint64(k - 64)
            else:
                ql |= _ONE << np.uint64(k)
        _shr1(d)
    return qh, ql, rem[0] == 0 and rem[1] == 0 and rem[2] == 0 and rem[3] == 0


@_jit
def _position(starts: Any, m: Any, i: Any) -> Any:
    """The grid position of piece i's start (m for i = the pieces' count)."""
    count = starts.shape[0]
    if i == count:
        return m
    return starts[min(i, count - 1)]


@_jit
def _rising(depths: Any, law: Any, split: Any, t: Any, ranks: Any) -> Any:
    """#{i ≤ split: depth[i] ≤ t} on the non-decreasing half (searchsorted right)."""
    lo = 0
    hi = split + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if depth_of(depths, law, mid, ranks) <= t:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def _falling(depths: Any, law: Any, split: Any, t: Any, ranks: Any) -> Any:
    """split + 1 + #{i > split: depth[i] > t} on the non-increasing half."""
    lo = split + 1
    hi = ranks[1].shape[0] if ranks[0] else depths.shape[1]
    while lo < hi:
        mid = (lo + hi) // 2
        if depth_of(depths, law, mid, ranks) > t:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def laws_tables(starts: Any, depths: Any, nums: Any, dens: Any, m: Any, lo_tab: Any,
                hi_tab: Any, bits: Any, share: Any) -> Any:
    """The tables of ``quantile_draws._tables`` for laws j = 0 … L − 1 on the pieces
    ``starts`` (int64) of a grid of ``m`` points (m < 2^62), law j's depths
    ``depths[j]`` (int64, unimodal), rate nums[j]/dens[j] (num < 2^62, den = (high, low)
    words below 2^96), at the first precision (``lo_tab``, ``hi_tab``:
    :func:`exp_tables`) and ``bits`` = 64, ``share`` = 24: (status, laws, rows,
    intervals) — ``DONE``, or ``FAULT`` (a law's buckets do not tile the grid)."""
    none = np.zeros(1, dtype=np.int64)
    return rank_tables(starts, depths, nums, dens, m, lo_tab, hi_tab, bits, share,
                       (False, none, none, none, none, none))


@_jit
def _rank_peak(lo: Any, hi: Any, t: Any, b: Any, count: Any) -> Any:
    """(top, least, split) of w_i = max(0, b·lo_i − t, t − b·hi_i) over the pieces
    (lo, hi non-decreasing): its largest value (at an end: f_i = b·lo_i − t does not
    decrease, g_i = t − b·hi_i does not increase, so w falls to its least and rises
    after), its least and the first piece at it — ``random_jit.window_depths``' top,
    top − kmax and split, by searches. i* = the first i with f_i ≥ g_i (f − g does not
    decrease); before it w = max(0, g) (not increasing), from it max(0, f) (not
    decreasing); the least is w at i* − 1 or at i*, first met where max(0, g) reaches
    it before i*, else at i*."""
    top = max(max(b * lo[0] - t, t - b * hi[0]), max(b * lo[count - 1] - t,
                                                      t - b * hi[count - 1]))
    top = max(top, np.int64(0))
    a = 0
    z = count
    while a < z:  # i*: the first i with f_i ≥ g_i
        mid = (a + z) // 2
        if b * lo[mid] - t >= t - b * hi[mid]:
            z = mid
        else:
            a = mid + 1
    star = a
    least = top
    if star < count:
        least = max(b * lo[star] - t, np.int64(0))
    if star > 0:
        left = max(t - b * hi[star - 1], np.int64(0))
        if left <= least:
            least = left
            a = 0
            z = star - 1
            while a < z:  # the first i < i* with max(0, g_i) ≤ least
                mid = (a + z) // 2
                if max(t - b * hi[mid], np.int64(0)) <= least:
                    z = mid
                else:
                    a = mid + 1
            return top, least, a
    return top, least, star


@_jit
def rank_tables(starts: Any, depths: Any, nums: Any, dens: Any, m: Any, lo_tab: Any,
                hi_tab: Any, bits: Any, share: Any, ranks: Any) -> Any:
    """:func:`laws_tables` of the laws whose depths ``random_jit.depth_of`` reads: the
    rows ``depths``, or where ``ranks`` = (True, lo, hi, t, b, top) the rank laws of the
    pieces' ranks (each law's kmax and split by :func:`_rank_peak`, its top written to
    ``top`` for the sampler) — the same tables as of their depth rows."""
    count = starts.shape[0]
    n_laws = nums.shape[0]
    laws = np.zeros((n_laws + 1, 5), dtype=np.int64)
    rows = np.empty((n_laws * (CUT + 1), 5), dtype=np.int64)
    intervals = np.empty((n_laws * (CUT + 1), 3), dtype=np.uint64)
    t = np.empty(CUT + 2, dtype=np.int64)
    found = np.empty((CUT + 1, 5), dtype=np.int64)  # (n, size, left start, len, right)
    x_lo = np.zeros((CUT + 1, 4), dtype=np.uint64)
    x_hi = np.zeros((CUT + 1, 4), dtype=np.uint64)
    w_lo = np.zeros(4, dtype=np.uint64)
    w_hi = np.zeros((1, 4), dtype=np.uint64)
    rem = np.zeros(4, dtype=np.uint64)
    scratch = np.zeros(4, dtype=np.uint64)
    cap = np.zeros(4, dtype=np.uint64)
    n_rows = 0
    n_int = 0
    for law in range(n_laws):
        if ranks[0]:
            top, least, split = _rank_peak(ranks[1], ranks[2], ranks[3][law],
                                           ranks[4][law], count)
            ranks[5][law] = top
            kmax = top - least
        else:
            kmax = depths[law, 0]
            split = 0
            for i in range(1, count):
                if depths[law, i] > kmax:
                    kmax = depths[law, i]
                    split = i
        num = nums[law]
        dh = dens[law, 0]
        dl = dens[law, 1]
        qh, ql = _div2(dh, dl, _ZERO, np.uint64(num))  # den = Q·num + R
        _, pl = _mul_wide(ql, np.uint64(num))
        r_step = np.int64(dl - pl)  # R < num: the low word's difference is R
        big = qh != 0 or ql > np.uint64(kmax + 1)  # every n ≥ 1 past the cap
        q = np.int64(0) if big else np.int64(ql)
        a = np.int64(0)
        r = np.int64(0)
        top = CUT + 1  # the largest n with t[n] ≥ 0, up to CUT + 1
        for n in range(CUT + 2):
            if n == 0:
                c = np.int64(0)
            elif big or a > kmax + 1:
                c = kmax + 1
            else:
                c = a + (1 if r > 0 else 0)
                if c > kmax + 1:
                    c = kmax + 1
            t[n] = kmax - c
            if t[n] < 0 and top == CUT + 1:
                top = n - 1
            if not big and a <= kmax + 1:  # a_{n+1}, r_{n+1}
                a += q
                r += r_step
                if r >= num:
                    r -= num
                    a += 1
        laws[law, 0] = kmax
        laws[law, 1] = num
        laws[law, 3] = n_rows
        laws[law, 4] = n_int
        if top == 0:  # c·kmax < 1: interior_point._one_bucket, the run (0, m, m)
            laws[law, 2] = 1
            rows[n_rows, 0] = 0
            rows[n_rows, 1] = m
            rows[n_rows, 2] = 0
            rows[n_rows, 3] = m
            rows[n_rows, 4] = m
            n_rows += 1
            continue
        n_max_known = top <= CUT  # else n_max > CUT
        n_cut = top if n_max_known else CUT
        # the buckets n = 0 … n_cut, the empty ones skipped, the enclosures summed
        for i in range(4):
            x_lo[0, i] = _ZERO
            w_hi[0, i] = _ZERO
        found_n = 0
        explicit = np.int64(0)
        pos_left_next = _position(starts, m, _rising(depths, law, split, t[0], ranks))
        pos_right_next = _position(starts, m, _falling(depths, law, split, t[0], ranks))
        for n in range(n_cut + 1):
            left_end = pos_left_next
            right_start = pos_right_next
            pos_left_next = _position(starts, m,
                                      _rising(depths, law, split, t[n + 1], ranks))
            pos_right_next = _position(starts, m,
                                       _falling(depths, law, split, t[n + 1], ranks))
            left_start = pos_left_next
            right_end = pos_right_next
            left_len = left_end - left_start
            size = left_len + right_end - right_start
            if size == 0:
                continue
            explicit += size
            _add_into(x_lo, found_n, np.uint64(size), lo_tab, n)
            _add_into(w_hi, 0, np.uint64(size), hi_tab, n)
            if found_n + 1 <= CUT:  # the next bucket's sum starts from this one's
                for i in range(4):
                    x_lo[found_n + 1, i] = x_lo[found_n, i]
            for i in range(4):
                x_hi[found_n, i] = w_hi[0, i]
            found[found_n, 0] = n
            found[found_n, 1] = size
            found[found_n, 2] = left_start
            found[found_n, 3] = left_len
            found[found_n, 4] = right_start
            found_n += 1
        tail = m - explicit
        if n_max_known and tail != 0:
            return FAULT, laws, rows, intervals
        for i in range(4):
            w_lo[i] = x_lo[found_n - 1, i] if found_n else _ZERO
        _add_into(w_hi, 0, np.uint64(tail), hi_tab, n_cut + 1)
        single = found_n == 1 and not _less(w_lo, w_hi[0]) and not _less(w_hi[0], w_lo)
        laws[law, 2] = 1 if single else 0
        used = 1
        if not single:
            # the share's last bucket: the first j with x_lo[j] ≥ W_lo − ⌊W_lo/2^share⌋
            for i in range(4):
                cap[i] = w_lo[i]
            for _ in range(share):
                _shr1(cap)
            for i in range(4):
                scratch[i] = w_lo[i]
            _sub_from(scratch, cap)
            last = found_n
            for j in range(found_n):
                if not _less(x_lo[j], scratch):
                    last = j + 1
                    break
            used = 0
            for j in range(min(last, found_n)):
                if j == 0:
                    lo_h = _ZERO
                    lo_l = _ZERO
                else:
                    lo_h, lo_l, exact = _divide(x_hi[j - 1], w_lo, rem, scratch)
                    if not exact:  # the ceiling
                        lo_l += _ONE
                        if lo_l == _ZERO:
                            lo_h += _ONE
                hq_h, hq_l, exact = _divide(x_lo[j], w_hi[0], rem, scratch)
                if hq_h == _ZERO and hq_l == _ZERO:
                    continue  # hi = −1
                hi = _W if hq_h != _ZERO else hq_l - _ONE  # min(q − 1, 2^64 − 1)
                if lo_h != _ZERO or lo_l > hi:
                    continue
                intervals[n_int, 0] = lo_l
                intervals[n_int, 1] = hi
                intervals[n_int, 2] = np.uint64(n_rows + j)
                n_int += 1
                used = j + 1
        for j in range(used):
            for i in range(5):
                rows[n_rows, i] = found[j, i]
            n_rows += 1
    laws[n_laws, 3] = n_rows
    laws[n_laws, 4] = n_int
    return DONE, laws, rows[:n_rows].copy(), intervals[:n_int].copy()


__all__ = ["CUT", "DONE", "FAULT", "exp_tables", "laws_tables", "rank_tables"]
