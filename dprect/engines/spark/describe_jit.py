"""The describe pass's per-column step compiled: each row's search bin and truncated
significand (and, for a variance, the two 30-bit words of its square), counted and summed
per (group, bin), in two loops over the rows (numba) — every word a column needs summed in
the same loops, from one encoding of each value (a column with squares was encoded three
times, once per word, before: docs/results.md §5.3b).

What :func:`dprect.engines.spark.statistics.partial_bins` computes per chunk and column with
numpy — ``FloatBins(SEARCH_BITS).encode``, :func:`~dprect.core.describe_stats.significands`
and :func:`~dprect.engines.spark.statistics.chunk_counts` — about twenty passes over the
values, each a temporary array: this does it in two, with no temporaries but two dense
tables, one per sign (the bins of the negative values lie below +0.0's bin H, the others
at or above it, and on a real column each sign's bins span few binades).

Bit by bit the same as the numpy functions (tests/spark/test_describe_jit.py), on a
value's IEEE pattern b read as int64: the bin of b ≥ 0 or of −0.0 (b = −2^63) is
((b & ABS) >> shift) + H, of any other negative b it is (~b) >> shift; the significand is
M = ((|b| & MANTISSA) >> DROP) | [|b| ≥ 2^52]·2^(52 − DROP), negated for b < 0. Counts
and sums are int64 and exact (|M| < 2^30: a sum over fewer than 2^33 rows cannot wrap;
a chunk has far fewer, and the kernel merges with :func:`merge_sorted` only while no
merged key reaches 2^33 rows, summing exactly past it: ``describe._int64_safe``).
The tables have at most ``limit`` cells; when the groups times the spans would need more
(many groups of few rows: issue #42's 10^6 groups), the rows are placed group by group
instead (:func:`_sparse_bins`: a counting sort on the group, each group's few rows sorted
by bin; the same lists in the same order, O(rows + groups)) — and where the groups are
far more than the chunk's rows (:data:`SPARSE_GROUPS_PER_ROW`) :func:`column_words`
returns None and the caller counts with numpy.

It also merges a column's running total with each chunk's lists (:func:`merge_sorted`:
both in key order, one linear pass, where numpy would sort their concatenation; a
family's several words: :func:`merge_two`), and a range's partial lists
(:func:`merge_words`: windows of sorted words, each entry's key offset in its window
with its index, a window sorted by numpy in the cache and its runs read once: ~30 ns an
entry whatever the number of lists, where a heap of the lists' next keys paid log2(k)
sift levels an entry, ~70 ns at the ~40 lists of a range at 10^7 rows; a column's
significands and its squares' two words, which share their keys and counts, merged
together). And it makes
and reads a decimal grid chunk's packed words around numpy's sort (:func:`packed_count`:
the quantiles' (group, cell) pairs with their at-value bit, counted).

The kernel imports this module on the executor (it does not travel by value with the
kernel), so it is used where dprect and numba are installed — the compiled code is then
cached on disk by numba (``cache=True``: compiled once per installation, loaded in a
fraction of a second by every later Python worker) — and the numpy path runs where they
are not. numba is imported only when a chunk is large enough to pay for loading it (the
caller decides); each process keeps the compiled function
(:func:`dprect.engines.jit.compile_kernel`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dprect.engines.jit import compile_kernel

#: checked by the kernel that calls :func:`column_words` (it travels by value, this module
#: is imported on the executor: a different installed version is not used)
VERSION = 8
#: :func:`column_words` places a chunk's rows group by group (:func:`_sparse_bins`) when
#: its dense table is too large and the groups are at most this many a row (or within
#: the dense table's limit): the groups' table then stays the size of the chunk's arrays
SPARSE_GROUPS_PER_ROW = 4


def _decode(b: int, shift: int, zero_bin: int, drop: int) -> tuple[bool, int, int]:
    """(negative, k, M) of the value of IEEE pattern ``b`` read as int64 (module notes):
    negative when its bin lies below +0.0's bin H = ``zero_bin`` (b < 0 but not −0.0's
    −2^63); its search bin k, (~b) >> shift if negative, else ((b & ABS) >> shift) + H;
    its truncated significand M = ((|b| & MANTISSA) >> drop) | [|b| ≥ 2^52]·2^(52 − drop),
    negated for b < 0 (−0.0's 0 stays 0) — what ``FloatBins(SEARCH_BITS).encode`` and
    :func:`~dprect.core.describe_stats.significands` give it. Plain Python, compiled by
    numba (the bin kernels call it compiled: :func:`dprect.engines.jit.compile_kernel`'s
    ``calls``)."""
    mag = b & 0x7FFFFFFFFFFFFFFF
    m = (mag & ((1 << 52) - 1)) >> drop
    if mag >= 1 << 52:
        m |= 1 << (52 - drop)
    if b < 0:
        m = -m
    if b < 0 and b != -0x7FFFFFFFFFFFFFFF - 1:
        return True, (~b) >> shift, m
    return False, (mag >> shift) + zero_bin, m


def _word(m: int, word: int) -> int:
    """What a row of significand ``m`` adds to the sum of ``word``: 0 M itself, 1 or 2 the
    high or the low 30-bit word of M² = hi·2^30 + lo (M² < 2^60:
    :func:`~dprect.core.describe_stats.square_words`). Plain Python, compiled by numba."""
    if word == 1:
        return (m * m) >> 30
    if word == 2:
        return (m * m) & 0x3FFFFFFF
    return m


#: the row helpers the bin kernels call compiled (:func:`dprect.engines.jit.compile_kernel`)
_ROW_STEPS = (_decode, _word)


def _two_sided_bins(bits: np.ndarray, group: np.ndarray, groups: int, shift: int,
                    zero_bin: int, drop: int, limit: int, words: np.ndarray) -> Any:
    """(found, g, b, n, sums): found False when the table would exceed ``limit``
    cells; else the unique (group, bin) pairs in (group, bin) order with their row
    counts and, per entry w of ``words``, a row of sums (``sums[w]``): word 0 the
    significands' sums, 1 or 2 those of the high or the low 30-bit word of the squared
    significands (:func:`~dprect.core.describe_stats.square_words`) — every word from ONE
    encoding of each value (module notes; a row's bin, significand and words:
    :func:`_decode`, :func:`_word`). Plain Python, compiled by numba."""
    rows = bits.shape[0]
    nw = words.shape[0]
    big = 1 << 62
    neg_lo, neg_hi, pos_lo, pos_hi = big, -1, big, -1
    for i in range(rows):
        negative, k, _ = _decode(bits[i], shift, zero_bin, drop)
        if negative:
            neg_lo = min(neg_lo, k)
            neg_hi = max(neg_hi, k)
        else:
            pos_lo = min(pos_lo, k)
            pos_hi = max(pos_hi, k)
    neg_span = neg_hi - neg_lo + 1 if neg_hi >= 0 else 0
    pos_span = pos_hi - pos_lo + 1 if pos_hi >= 0 else 0
    empty = np.zeros(0, dtype=np.int64)
    if groups * (neg_span + pos_span) > limit:
        return False, empty.astype(np.int32), empty, empty, np.zeros((nw, 0), dtype=np.int64)
    # one table, bin-major (a bin's groups side by side: rows crowd into few bins, so
    # the writes stay in a small part of it), the negative bins first; a cell's sums of
    # every word side by side
    width = neg_span + pos_span
    counts = np.zeros(groups * width, dtype=np.int64)
    sums = np.zeros(groups * width * nw, dtype=np.int64)
    for i in range(rows):
        negative, k, m = _decode(bits[i], shift, zero_bin, drop)
        cell = ((k - neg_lo) if negative else (neg_span + k - pos_lo)) * groups + group[i]
        counts[cell] += 1
        at = cell * nw
        for w in range(nw):
            sums[at + w] += _word(m, words[w])
    found = 0
    for c in range(groups * width):
        if counts[c] > 0:
            found += 1
    g_out = np.empty(found, dtype=np.int32)
    b_out = np.empty(found, dtype=np.int64)
    n_out = np.empty(found, dtype=np.int64)
    s_out = np.empty((nw, found), dtype=np.int64)
    r = 0
    for g in range(groups):  # read out group by group: the pairs in (group, bin) order
        for t in range(width):
            c = t * groups + g
            if counts[c] > 0:
                g_out[r] = g
                b_out[r] = t + neg_lo if t < neg_span else t - neg_span + pos_lo
                n_out[r] = counts[c]
                for w in range(nw):
                    s_out[w, r] = sums[c * nw + w]
                r += 1
    return True, g_out, b_out, n_out, s_out


#: a group's rows up to this many are put in bin order by insertion (else by a sort)
_INSERTION_ROWS = 24


def _sparse_bins(bits: np.ndarray, group: np.ndarray, groups: int, shift: int,
                 zero_bin: int, drop: int, words: np.ndarray) -> Any:
    """:func:`_two_sided_bins`' lists where its dense table would be too large (many
    groups, few rows each: issue #42's 10^6 groups of ~10 rows): (g, b, n, sums), the
    unique (group, bin) pairs in (group, bin) order with their row counts and a row of
    sums per entry of ``words`` — the same lists. The rows are placed group by group (a
    counting sort on the group: its sizes, their running sum, each row's bin and
    significand packed in one word B·2^32 + (M + 2^31) and written at its group's next
    slot), each group's few words sorted (insertion; numpy's sort past
    :data:`_INSERTION_ROWS`: bin order, the significands unpacked), and the runs of
    equal bins read once: O(rows + groups), one random write a row, where numpy's route
    sorts the (group, bin) words and gathers the sums by the permutation. Each
    (group, bin)'s count and sums are integers added in any order: exact, the same as
    the dense table's. The caller checks that a bin is below 2^31 and |M| below 2^31
    (:func:`column_words`). Plain Python, compiled by numba."""
    half = 1 << 31
    low = (1 << 32) - 1
    rows = bits.shape[0]
    nw = words.shape[0]
    start = np.zeros(groups + 1, dtype=np.int64)
    for i in range(rows):
        start[group[i] + 1] += 1
    for g in range(groups):
        start[g + 1] += start[g]
    slot = start[:groups].copy()
    packed = np.empty(rows, dtype=np.int64)
    for i in range(rows):
        _, k, m = _decode(bits[i], shift, zero_bin, drop)
        at = slot[group[i]]
        slot[group[i]] = at + 1
        packed[at] = (k << 32) | (m + half)
    found = 0  # each group's words sorted, its distinct bins counted
    for g in range(groups):
        a, z = start[g], start[g + 1]
        if z - a > _INSERTION_ROWS:  # a large group: numpy's sort
            packed[a:z] = np.sort(packed[a:z])
        else:
            for i in range(a + 1, z):
                v = packed[i]
                j = i - 1
                while j >= a and packed[j] > v:
                    packed[j + 1] = packed[j]
                    j -= 1
                packed[j + 1] = v
        for i in range(a, z):
            if i == a or packed[i] >> 32 != packed[i - 1] >> 32:
                found += 1
    g_out = np.empty(found, dtype=np.int32)  # the lists at their size: no copies
    b_out = np.empty(found, dtype=np.int64)
    n_out = np.zeros(found, dtype=np.int64)
    s_out = np.zeros((nw, found), dtype=np.int64)
    r = 0
    for g in range(groups):
        for i in range(start[g], start[g + 1]):
            v = packed[i]
            k = v >> 32
            if i == start[g] or k != packed[i - 1] >> 32:
                g_out[r] = g
                b_out[r] = k
                r += 1
            n_out[r - 1] += 1
            m = (v & low) - half
            for w in range(nw):
                s_out[w, r - 1] += _word(m, words[w])
    return g_out, b_out, n_out, s_out


def _merge_sorted(k1: np.ndarray, n1: np.ndarray, s1: np.ndarray, k2: np.ndarray,
                  n2: np.ndarray, s2: np.ndarray) -> Any:
    """(ok, keys, counts, sums): two lists of strictly increasing keys merged in one
    linear pass, the counts and sums of a key in both added; ok False (and empty lists)
    when a list's keys do not strictly increase. Plain Python, compiled by numba."""
    a, b = k1.shape[0], k2.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    for i in range(1, a):
        if k1[i] <= k1[i - 1]:
            return False, empty, empty, empty
    for i in range(1, b):
        if k2[i] <= k2[i - 1]:
            return False, empty, empty, empty
    keys = np.empty(a + b, dtype=np.int64)
    counts = np.empty(a + b, dtype=np.int64)
    sums = np.empty(a + b, dtype=np.int64)
    i = j = r = 0
    while i < a or j < b:
        if j == b or (i < a and k1[i] < k2[j]):
            keys[r], counts[r], sums[r] = k1[i], n1[i], s1[i]
            i += 1
        elif i == a or k2[j] < k1[i]:
            keys[r], counts[r], sums[r] = k2[j], n2[j], s2[j]
            j += 1
        else:
            keys[r], counts[r], sums[r] = k1[i], n1[i] + n2[j], s1[i] + s2[j]
            i += 1
            j += 1
        r += 1
    return True, keys[:r], counts[:r], sums[:r]


#: the merge (:func:`_window_words`) sorts windows of about this many entries (a window's
#: words, counts and sums stay in the cache while it is sorted and read)
WINDOW_ENTRIES = 1 << 18


def _window_words(keys: np.ndarray, offsets: np.ndarray, low: int, shift: int,
                  windows: int, index_bits: int) -> Any:
    """(ok, words, starts): every entry t of the k lists ``keys[offsets[i]:offsets[i+1]]``
    (``offsets[0]`` = 0) as the word ((key − low) mod 2^shift) << index_bits | t in its
    key window v = (key − low) >> shift, the words laid out window by window (``starts[v]``
    … ``starts[v + 1]``; within a window in list order); ok False (and empty arrays) when
    a list's keys do not strictly increase or a key lies outside the ``windows`` windows
    from ``low`` (the caller reads low and the span off the lists' first and last keys,
    which bound a list's keys only where they increase: checked before a key's window is
    counted, so nothing is written past ``starts``). The caller has checked that shift +
    index_bits ≤ 62 (every word a non-negative int64) and t < 2^index_bits. Plain Python,
    compiled by numba."""
    k = offsets.shape[0] - 1
    total = offsets[k]
    empty = np.zeros(0, dtype=np.int64)
    starts = np.zeros(windows + 1, dtype=np.int64)
    for i in range(k):
        for t in range(offsets[i], offsets[i + 1]):
            # the order read on the keys themselves (key − low wraps past int64 where a
            # list's keys fall below low); a key past the windows, or wrapped, refused
            rel = keys[t] - low
            if (t > offsets[i] and keys[t] <= keys[t - 1]) or rel < 0 or (rel >> shift) >= windows:
                return False, empty, empty
            starts[(rel >> shift) + 1] += 1
    for v in range(windows):
        starts[v + 1] += starts[v]
    at = starts[:-1].copy()
    words = np.empty(total, dtype=np.int64)
    inner = (np.int64(1) << shift) - 1
    for t in range(total):
        rel = keys[t] - low
        v = rel >> shift
        words[at[v]] = ((rel & inner) << index_bits) | t
        at[v] += 1
    return True, words, starts


def _window_runs(words: np.ndarray, starts: np.ndarray, low: int, shift: int,
                 index_bits: int, counts: np.ndarray, sums: np.ndarray) -> Any:
    """(keys, counts, sums): the runs of equal keys of :func:`_window_words`' words, each
    window's words sorted — every entry's count and sum words (a row of ``sums`` a word)
    read at its index t and added to its key's. Plain Python, compiled by numba."""
    total = words.shape[0]
    w = sums.shape[0]
    mask = (np.int64(1) << index_bits) - 1
    out_k = np.empty(total, dtype=np.int64)
    out_n = np.empty(total, dtype=np.int64)
    out_s = np.empty((w, total), dtype=np.int64)
    r = -1
    last = np.int64(0)
    for v in range(starts.shape[0] - 1):
        base = low + (np.int64(v) << shift)
        for a in range(starts[v], starts[v + 1]):
            word = words[a]
            key = base + (word >> index_bits)
            t = word & mask
            if r >= 0 and last == key:
                out_n[r] += counts[t]
                for x in range(w):
                    out_s[x, r] += sums[x, t]
            else:
                r += 1
                out_k[r] = key
                out_n[r] = counts[t]
                for x in range(w):
                    out_s[x, r] = sums[x, t]
                last = key
    return out_k[:r + 1], out_n[:r + 1], out_s[:, :r + 1]


def _windowed(keys: np.ndarray, counts: np.ndarray, sums: np.ndarray, offsets: np.ndarray
              ) -> tuple[bool, np.ndarray, np.ndarray, np.ndarray] | None:
    """The k lists ``keys[offsets[i]:offsets[i + 1]]`` (with their counts and each row of
    the (w, n) table ``sums``) merged by windows of the keys (:data:`WINDOW_ENTRIES`
    entries each on average): the entries bucketed by window, each entry's key offset
    in its window with its index as one word (:func:`_window_words`), each window's
    words sorted by numpy (a vectorised sort of an array in the cache), then their runs
    read in one pass (:func:`_window_runs`) — the keys, counts and sums of a sort of the
    concatenation (integers added, in any order): ~30 ns an entry whatever k, where a
    heap of the lists' next keys paid a sift of log2(k) levels an entry (~70 ns at a
    range's ~40 partial lists at 10^7 rows: docs/results.md §5.3b). The heap, kept for
    fewer than 8 lists, went in issue #41 (its run step was this one's written again):
    at 3 to 7 lists the windows cost 1.1–1.35× its time, on a range's few lists, a small
    merge; two lists take :func:`merge_flat`'s linear pass (benchmarks/describe_merge.py). (ok,
    keys, counts, sums), ok False where a list's keys do not strictly increase; None
    without numba, or where the windows' words would not fit an int64, or a key less
    the least first key would not (a span past 2^63), or the lists' first and last keys
    span nothing (a list not increasing): the caller sorts."""
    bucket = compile_kernel(_window_words)
    runs = compile_kernel(_window_runs)
    if bucket is None or runs is None:
        return None
    total = int(offsets[-1])
    if total == 0:
        return True, keys[:0], counts[:0], sums[:, :0]
    ends = offsets[1:] - 1
    have = offsets[:-1] <= ends
    low = int(keys[offsets[:-1][have]].min())
    span = int(keys[ends[have]].max()) - low + 1
    index_bits = max(1, (total - 1).bit_length())
    # windows of 2^shift keys, about WINDOW_ENTRIES entries each where the keys spread
    shift = min(62 - index_bits, max(0, (span * WINDOW_ENTRIES // total).bit_length() - 1))
    windows = ((span - 1) >> shift) + 1 if shift >= 0 else 0
    # a span below 1 (a list not increasing) or past 2^63 (key − low not an int64)
    if shift < 0 or not 0 < span <= 1 << 63 or windows > 4 * total + 64:
        return None
    ok, words, starts = bucket(keys, offsets, low, shift, windows, index_bits)
    if not ok:
        return False, keys[:0], counts[:0], sums[:, :0]
    for a, z in zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True):
        if z - a > 1:
            words[a:z].sort()
    k, n, s = runs(words, starts, low, shift, index_bits, counts, sums)
    return True, k, n, s


def merge_words(parts: Sequence[tuple[np.ndarray, np.ndarray, Sequence[np.ndarray]]]
                ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]] | None:
    """Several (key, count, [sum of each word]) lists with strictly increasing keys, every
    part with the same number of words, summed by key (a range's partial lists, one or
    more per partition), by windows of sorted words (:func:`_windowed`; two lists in one
    linear pass, :func:`merge_two`'s). None without numba, when a list is not strictly
    increasing, or where the words would not fit an int64 (the caller sorts)."""
    if compile_kernel(_window_runs) is None or not parts:
        return None
    sizes = np.array([0, *(len(p[0]) for p in parts)], dtype=np.int64)
    keys, counts = (np.concatenate([np.asarray(p[i], dtype=np.int64) for p in parts])
                    for i in range(2))
    words = len(parts[0][2])
    sums = np.empty((words, len(keys)), dtype=np.int64)
    for x in range(words):
        np.concatenate([np.asarray(p[2][x], dtype=np.int64) for p in parts], out=sums[x])
    return merge_flat(keys, counts, sums, np.cumsum(sizes))


def merge_flat(keys: np.ndarray, counts: np.ndarray, sums: np.ndarray, offsets: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]] | None:
    """:func:`merge_words` of lists laid end to end: list i is entries
    ``offsets[i]`` … ``offsets[i + 1]`` − 1 (``offsets[0]`` = 0) of the int64 ``keys``,
    ``counts`` and each row of the (words, n) int64 table ``sums`` (a range's partial
    lists decoded in place, no concatenation: ``statistics._merged_segments``). None
    without numba, when a list is not strictly increasing, or where the words would not
    fit an int64."""
    if len(offsets) == 3:  # two lists: one linear pass (windows cost more)
        two = compile_kernel(_merge_two_words)
        if two is None:
            return None
        a, b, z = (int(x) for x in offsets)
        got = two(keys[a:b], counts[a:b], sums[:, a:b], keys[b:z], counts[b:z], sums[:, b:z])
    else:
        got = _windowed(keys, counts, sums, offsets)
    if got is None or not got[0]:
        return None
    return got[1], got[2], list(got[3])


def _merge_two_words(k1: np.ndarray, n1: np.ndarray, s1: np.ndarray, k2: np.ndarray,
                     n2: np.ndarray, s2: np.ndarray) -> Any:
    """:func:`_merge_sorted` of two lists of several sum words (``s1``, ``s2``: a row a
    word): one linear pass, no heap. Plain Python, compiled by numba."""
    a, b = k1.shape[0], k2.shape[0]
    w = s1.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    for i in range(1, a):
        if k1[i] <= k1[i - 1]:
            return False, empty, empty, np.zeros((w, 0), dtype=np.int64)
    for i in range(1, b):
        if k2[i] <= k2[i - 1]:
            return False, empty, empty, np.zeros((w, 0), dtype=np.int64)
    keys = np.empty(a + b, dtype=np.int64)
    counts = np.empty(a + b, dtype=np.int64)
    sums = np.empty((w, a + b), dtype=np.int64)
    i = j = r = 0
    while i < a or j < b:
        if j == b or (i < a and k1[i] < k2[j]):
            keys[r], counts[r] = k1[i], n1[i]
            for x in range(w):
                sums[x, r] = s1[x, i]
            i += 1
        elif i == a or k2[j] < k1[i]:
            keys[r], counts[r] = k2[j], n2[j]
            for x in range(w):
                sums[x, r] = s2[x, j]
            j += 1
        else:
            keys[r], counts[r] = k1[i], n1[i] + n2[j]
            for x in range(w):
                sums[x, r] = s1[x, i] + s2[x, j]
            i += 1
            j += 1
        r += 1
    return True, keys[:r], counts[:r], sums[:, :r]


def _packed_words(group: np.ndarray, keys: np.ndarray, low: int, span: int,
                  bits: np.ndarray, with_bits: bool) -> np.ndarray:
    """Each pair's word w = g·span + (key − low), as 2w + bit where ``with_bits`` (the
    bit each 0 or 1): :func:`~dprect.engines.spark.statistics._packed_count`'s words in
    one loop (numpy makes three temporaries). Plain Python, compiled by numba."""
    n = keys.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        w = np.int64(group[i]) * span + (keys[i] - low)
        out[i] = (w << 1) | bits[i] if with_bits else w
    return out


def _packed_runs(word: np.ndarray, span: int, low: int, with_bits: bool) -> Any:
    """The runs of the SORTED words of :func:`_packed_words`: per run of equal pair
    w = g·span + (key − low) (the word itself, or without its lowest bit where
    ``with_bits``) its group g = ⌊w/span⌋ (int32), key w mod span + low, length (the
    count) and its words' lowest bits summed — numpy's ``flatnonzero``, ``diff``,
    ``reduceat``, ``//`` and ``%`` of ``_packed_count`` in one pass; the group followed
    along the sorted pairs (g·span ≤ w < (g + 1)·span), no division. Plain Python,
    compiled by numba."""
    n = word.shape[0]
    g_out = np.empty(n, dtype=np.int32)
    k_out = np.empty(n, dtype=np.int64)
    n_out = np.empty(n, dtype=np.int64)
    s_out = np.empty(n if with_bits else 0, dtype=np.int64)
    r = -1
    prev = -1  # every pair is >= 0
    g = 0
    edge = span  # the first pair of group g + 1
    for i in range(n):
        w = word[i]
        p = w >> 1 if with_bits else w
        if p != prev:
            r += 1
            while p >= edge:
                g += 1
                edge += span
            g_out[r] = g
            k_out[r] = p - (edge - span) + low
            n_out[r] = 1
            if with_bits:
                s_out[r] = w & 1
            prev = p
        else:
            n_out[r] += 1
            if with_bits:
                s_out[r] += w & 1
    r += 1
    return g_out[:r], k_out[:r], n_out[:r], s_out[:r]


def packed_count(group: np.ndarray, keys: np.ndarray, low: int, span: int,
                 bits: np.ndarray | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None] | None:
    """:func:`~dprect.engines.spark.statistics._packed_count` of the pairs (``group``,
    ``keys``), compiled around numpy's sort: the words made in one loop
    (:func:`_packed_words`), sorted in place by numpy, their runs read in one pass
    (:func:`_packed_runs`) — the same pairs, order, counts and sums; None without numba,
    or where a group is negative (the runs follow the groups up from 0: numpy's floor
    division then). The caller checks what ``_packed_count`` needs: every word below
    2^62, each bit 0 or 1."""
    make = compile_kernel(_packed_words)
    runs = compile_kernel(_packed_runs)
    if make is None or runs is None or (len(group) and int(group.min()) < 0):
        return None
    with_bits = bits is not None
    word = make(np.ascontiguousarray(group), np.ascontiguousarray(keys, dtype=np.int64),
                int(low), int(span),
                np.ascontiguousarray(bits, dtype=np.int64) if with_bits
                else np.zeros(1, dtype=np.int64), with_bits)
    word.sort()
    g, k, n, s = runs(word, int(span), int(low), with_bits)
    return g, k, n, s if with_bits else None


def merge_two(first: tuple[np.ndarray, np.ndarray, Sequence[np.ndarray]],
              second: tuple[np.ndarray, np.ndarray, Sequence[np.ndarray]]
              ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]] | None:
    """Two (key, count, [sum of each word]) lists with strictly increasing keys and the
    same words summed by key in one linear pass (a family's running total and a chunk's
    lists); None without numba or when a list is not strictly increasing."""
    fn = compile_kernel(_merge_two_words)
    if fn is None:
        return None
    ok, k, n, s = fn(*(np.ascontiguousarray(x, dtype=np.int64) for x in first[:2]),
                     np.ascontiguousarray(np.array(first[2], dtype=np.int64)),
                     *(np.ascontiguousarray(x, dtype=np.int64) for x in second[:2]),
                     np.ascontiguousarray(np.array(second[2], dtype=np.int64)))
    return (k, n, list(s)) if ok else None


def compiled() -> Callable[..., Any] | None:
    """The compiled :func:`_two_sided_bins`, or None where numba is not installed."""
    return compile_kernel(_two_sided_bins, _ROW_STEPS)


def merge_sorted(first: tuple[np.ndarray, np.ndarray, np.ndarray],
                 second: tuple[np.ndarray, np.ndarray, np.ndarray]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Two (key, count, sum) lists with strictly increasing keys summed by key, in one
    linear pass (the kernel's running total of a column and a chunk's lists, which
    :func:`column_words` gives in key order); None without numba or when a list is not
    strictly increasing (the caller sorts)."""
    fn = compile_kernel(_merge_sorted)
    if fn is None:
        return None
    ok, k, n, s = fn(*(np.ascontiguousarray(x, dtype=np.int64) for x in (*first, *second)))
    return (k, n, s) if ok else None


def column_words(values: np.ndarray, group: np.ndarray, groups: int, shift: int,
                 zero_bin: int, drop: int, limit: int, words: Sequence[int]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]] | None:
    """(group, bin, count, [sum of each word of ``words``]) of one chunk's finite
    ``values`` (float64) and their group indices, compiled, every word from one encoding
    of each value (module notes: 0 the significands, 1 or 2 the high or the low word of
    their squares), or None: no numba, or the tables would be too large."""
    fn = compiled()
    if fn is None:
        return None
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    group = np.ascontiguousarray(group, dtype=np.int64)
    asked = np.asarray(words, dtype=np.int64)
    found, g, b, n, s = fn(bits, group, int(groups), int(shift), int(zero_bin), int(drop),
                           int(limit), asked)
    if found:
        return g, b, n, list(s)
    # the dense table too large: the rows placed group by group instead, where the
    # groups' table (one int64 a group) is no larger than a dense one or the chunk
    if groups > max(limit, SPARSE_GROUPS_PER_ROW * len(bits)) \
            or (1 << (63 - shift)) + zero_bin >= 1 << 31 or 53 - drop > 31:
        return None  # (or a bin or a significand past 31 bits: not packed in one word)
    sparse = compile_kernel(_sparse_bins, _ROW_STEPS)
    if sparse is None:  # pragma: no cover (numba ran the dense step above)
        return None
    g, b, n, s = sparse(bits, group, int(groups), int(shift), int(zero_bin), int(drop),
                        asked)
    return g, b, n, list(s)


__all__ = ["VERSION", "column_words", "compiled", "merge_flat",
           "merge_sorted", "merge_two", "merge_words", "packed_count"]
