"""A block of describe cells' draws in one compiled call (issue #42): every cell's lower
side, upper side and noises, in the draw order of
:func:`dprect.core.aggregates.finish_cell`, each group from its own stream.

Imported only where :mod:`dprect.core.random_jit` loads (numba installed, its cache
writable: :func:`dprect.core.randomness.kernels`); the caller then hands the whole block
to :func:`block_draws` instead of one compiled call per draw (three to four a cell, each
paying numba's argument dispatch and the source's state hand-over: most of a cell's cost
once the draws themselves were compiled).

**The same bits.** :func:`block_draws` calls the very kernels the one-draw path calls
(:func:`~dprect.core.random_jit.side_draw` with no hint,
:func:`~dprect.core.random_jit.discrete_laplace` /
:func:`~dprect.core.random_jit.discrete_laplace2`), on the same state, in the same order:
cell i's draws come from row ``rows[i]`` of the seeded sources' joined Mersenne Twister
states (kind 0), or from the one OS pool the block's sources share (kind 1). Where the
one-draw path would leave compiled code for a draw — a side's :data:`ASK`,
:data:`PYTHON` or :data:`PAUSE` status, a scale past the compiled samplers' integers,
:data:`BOUND` — the block stops *at that draw* and says where (cell, phase) and why
(with the side's state when it paused mid-round); the caller makes that one draw in
Python exactly as the one-draw path makes it, and calls again from the next phase. So
the values and the bits consumed are those of the one-draw path whichever ran
(tests/core/test_block_jit.py compares them cell by cell, and the sources' states
after).

Phases of a cell: 0 the lower side, 1 the upper side, 2 the sum noise, 3 the sum of
squares' noise (2 and 3 drawn only where the cell's tier names a scale: ``noise_kind``
0 none, 1 one word, 2 two words, 3 Python).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dprect.core.random_jit import (
    BOUND,
    DONE,
    PYTHON,
    _jit,
    _mul_wide,
    discrete_laplace,
    discrete_laplace2,
    fill_words,
    side_draw,
)

#: the phases of a cell (two sides, two noises at most)
PHASES = 4


@_jit
def block_draws(kind: Any, mts: Any, pool: Any, pos: Any, start: Any, phase: Any,
                rows: Any, tiers: Any, tails: Any, tail_at: Any, has_upto: Any,
                strides: Any, targets: Any, side_ok: Any, eps_f: Any, mu_f: Any, slack_f: Any,
                max_level: Any, ints: Any, noise_kind: Any, noise_s: Any, noise_th: Any,
                noise_tl: Any, steps: Any, noises: Any) -> Any:
    """Cells ``start`` … of the block from phase ``phase`` of the first, until all are
    drawn or a draw needs Python. Per cell i: ``rows[i]`` (its source: row of ``mts``
    when kind is 0), ``tiers[i]`` (index into the per-tier arrays: ``targets``,
    ``side_ok`` (0: the sides' integers do not fit, Python draws them), ``eps_f``,
    ``mu_f``, ``ints[tier]`` = (e, m, h, den, μ's numerator, μ's denominator), and
    ``noise_*[tier, n]``: noise n's kind, s and t's two words), its tails side by side
    (``tails[tail_at[i, side] : tail_at[i, side + 1]]``, side 0 lower, 1 upper, the
    upper's end at ``tail_at[i, 2]``; the side reads every ``strides[tier]``-th) and
    ``has_upto[i, side]`` (the strided side's steps made). Writes ``steps[i,
    side]`` = (k, known) and ``noises[i, n]`` = (U's high word, U's low word, V,
    negative) as uint64.

    Returns (cell, phase, status, k, level, known, base, shift, far, a, order, held,
    starts, sizes): cell = len(rows) when every draw is made (status ``DONE``); else the
    draw that stopped it and :func:`~dprect.core.random_jit.side_draw`'s status and
    outputs for a side (``PYTHON`` with nothing drawn for a noise or a side the tier
    cannot run compiled; ``BOUND`` as the samplers return it)."""
    empty = np.zeros(0, dtype=np.int64)
    n = rows.shape[0]
    for i in range(start, n):
        mt = mts[rows[i]] if kind == 0 else mts[0]
        tr = tiers[i]
        first = phase if i == start else 0
        for ph in range(first, PHASES):
            if ph < 2:
                if side_ok[tr] == 0:
                    return i, ph, PYTHON, 0, 0, 0, 0, 0, False, empty, empty, empty, \
                        empty, empty
                view = tails[tail_at[i, ph]:tail_at[i, ph + 1]:strides[tr]]
                st, k, level, known, base, shift, far, a, order, held, starts, sizes = \
                    side_draw(kind, mt, pool, pos, view, targets[tr], eps_f[tr], mu_f[tr],
                              slack_f, max_level, -1, has_upto[i, ph], ints[tr, 0],
                              ints[tr, 1], ints[tr, 2], ints[tr, 3], ints[tr, 4],
                              ints[tr, 5])
                if st != DONE:
                    return i, ph, st, k, level, known, base, shift, far, a, order, held, \
                        starts, sizes
                steps[i, ph, 0] = k
                steps[i, ph, 1] = known
                continue
            nk = noise_kind[tr, ph - 2]
            if nk == 0:
                continue
            if nk == 3:
                return i, ph, PYTHON, 0, 0, 0, 0, 0, False, empty, empty, empty, empty, \
                    empty
            if nk == 1:
                u, v, negative, st = discrete_laplace(kind, mt, pool, pos,
                                                      noise_s[tr, ph - 2],
                                                      np.int64(noise_tl[tr, ph - 2]))
                uh = np.uint64(0)
                ul = np.uint64(u)
            else:
                uh, ul, v, negative, st = discrete_laplace2(
                    kind, mt, pool, pos, noise_s[tr, ph - 2], noise_th[tr, ph - 2],
                    noise_tl[tr, ph - 2])
            if st != DONE:
                return i, ph, BOUND, 0, 0, 0, 0, 0, False, empty, empty, empty, empty, empty
            noises[i, ph - 2, 0] = uh
            noises[i, ph - 2, 1] = ul
            noises[i, ph - 2, 2] = np.uint64(v)
            noises[i, ph - 2, 3] = np.uint64(1) if negative else np.uint64(0)
    return n, 0, DONE, 0, 0, 0, 0, 0, False, empty, empty, empty, empty, empty


@_jit
def block_noises(kind: Any, mts: Any, pool: Any, pos: Any, per: int, s: Any, th: Any,
                 tl: Any, wide: bool, noises: Any) -> Any:
    """``noises.shape[0]`` draws of DLap at scale t/s, ``per`` a row in order, draw i
    from row i // ``per`` of ``mts`` (kind 0; the one pool for kind 1): the draws
    :meth:`~dprect.core.randomness.RandomSource.discrete_laplace_int` makes on each row's
    source one after the other, as (U's high word, U's low word, V, negative), on one
    word (:func:`~dprect.core.random_jit.discrete_laplace`) or two (``wide``) as it
    chooses. Returns (draws made, status): ``BOUND`` stops the block at that draw."""
    n = noises.shape[0]
    for i in range(n):
        mt = mts[i // per] if kind == 0 else mts[0]
        if wide:
            uh, ul, v, negative, st = discrete_laplace2(kind, mt, pool, pos, s, th, tl)
        else:
            u, v, negative, st = discrete_laplace(kind, mt, pool, pos, s, np.int64(tl))
            uh = np.uint64(0)
            ul = np.uint64(u)
        if st != DONE:
            return i, st
        noises[i, 0] = uh
        noises[i, 1] = ul
        noises[i, 2] = np.uint64(v)
        noises[i, 3] = np.uint64(1) if negative else np.uint64(0)
    return n, DONE


@_jit
def block_tails(keys: Any, counts: Any, at: Any, exponent_bits: Any, offset: Any) -> Any:
    """:func:`dprect.core.random_jit.data_tails` of every cell of a block at once: cell
    c's entries are ``keys[at[c] : at[c + 1]]`` (and their counts); returns the tails side
    by side and ``tail_at`` as :func:`block_draws` reads them (cell c's lower tails at
    ``tail_at[c, 0] : tail_at[c, 1]``, its upper ones up to ``tail_at[c, 2]``): the same
    reaches and suffix sums, int64, exact."""
    n = at.shape[0] - 1
    tail_at = np.zeros((n, 3), dtype=np.int64)
    total = 0
    for c in range(n):
        far_lo = -1
        far_hi = -1
        for j in range(at[c], at[c + 1]):
            i = (keys[j] >> exponent_bits) - offset
            if i <= -1:
                far_lo = max(far_lo, -i - 1)
            elif i >= 1:
                far_hi = max(far_hi, i - 1)
        tail_at[c, 0] = total
        total += far_lo + 1
        tail_at[c, 1] = total
        total += far_hi + 1
        tail_at[c, 2] = total
    tails = np.zeros(total, dtype=np.int64)
    for c in range(n):
        low, high = tail_at[c, 0], tail_at[c, 1]
        for j in range(at[c], at[c + 1]):
            i = (keys[j] >> exponent_bits) - offset
            if i <= -1:
                tails[low - i - 1] += counts[j]
            elif i >= 1:
                tails[high + i - 1] += counts[j]
        for k in range(high - 2, low - 1, -1):
            tails[k] += tails[k + 1]
        for k in range(tail_at[c, 2] - 2, high - 1, -1):
            tails[k] += tails[k + 1]
    return tails, tail_at


@_jit
def _first_at_most(bins: Any, a: int, b: int, x: int) -> int:
    """The first index in [a, b) of the decreasing ``bins`` with bins[i] ≤ x (b if none)."""
    while a < b:
        mid = (a + b) // 2
        if bins[mid] <= x:
            b = mid
        else:
            a = mid + 1
    return a


@_jit
def _first_at_least(bins: Any, a: int, b: int, x: int) -> int:
    """The first index in [a, b) of the increasing ``bins`` with bins[i] ≥ x (b if none)."""
    while a < b:
        mid = (a + b) // 2
        if bins[mid] >= x:
            b = mid
        else:
            a = mid + 1
    return a


@_jit
def column_cuts(bins: Any, at: Any, lower: Any, upper: Any, low_bin: Any, high_bin: Any,
                span: int) -> Any:
    """:func:`dprect.core.describe_stats.range_cuts` of every cell of a column, joined
    as :func:`~dprect.core.describe_stats.joint_cuts` joins them: cell g's lower and
    upper candidate streams' made bins are ``bins[at[s] : at[s + 1]]`` for s =
    ``lower[g]`` (strictly decreasing) and ``upper[g]`` (strictly increasing), made at
    least as far as the range [``low_bin[g]``, ``high_bin[g]``] needs
    (:meth:`~dprect.core.tail_bounds.CandidateStream.reach`); ``lower[g]`` < 0: a cell
    without rows (no cuts, base 0). With ℓ the lower bins > lo (nL of them) and u the
    upper bins < hi: base = #{u + 1 ≤ lo} − nL, the cuts ℓ ≤ hi ascending then u + 1 > lo,
    each + g·``span``. Returns (joint, starts, base)."""
    n = lower.shape[0]
    starts = np.zeros(n, dtype=np.int64)
    base = np.zeros(n, dtype=np.int64)
    # per cell: [i0, nl) of its lower bins (ℓ ≤ hi among ℓ > lo), [j0, nu) of its upper
    ends = np.zeros((n, 4), dtype=np.int64)
    total = 0
    for g in range(n):
        starts[g] = total
        if lower[g] < 0:
            continue
        lo, hi = low_bin[g], high_bin[g]
        a, b = at[lower[g]], at[lower[g] + 1]
        nl = _first_at_most(bins, a, b, lo)  # ℓ > lo: a prefix of the decreasing bins
        i0 = _first_at_most(bins, a, nl, hi)
        c, d = at[upper[g]], at[upper[g] + 1]
        nu = _first_at_least(bins, c, d, hi)  # u < hi: a prefix of the increasing bins
        j0 = _first_at_least(bins, c, nu, lo)  # u + 1 > lo ⟺ u ≥ lo; the j0 − c before
        base[g] = (j0 - c) - (nl - a)
        ends[g, 0], ends[g, 1], ends[g, 2], ends[g, 3] = i0, nl, j0, nu
        total += (nl - i0) + (nu - j0)
    joint = np.zeros(total, dtype=np.int64)
    for g in range(n):
        if lower[g] < 0:
            continue
        k = starts[g]
        shift = g * span
        for i in range(ends[g, 1] - 1, ends[g, 0] - 1, -1):
            joint[k] = bins[i] + shift
            k += 1
        for j in range(ends[g, 2], ends[g, 3]):
            joint[k] = bins[j] + 1 + shift
            k += 1
    return joint, starts, base


@_jit
def column_entries(bins: Any, counts: Any, sums: Any, sizes: Any, joint: Any, starts: Any,
                   base: Any, zero_bin: int, search_bits: int, span: int, offset: int,
                   exponent_bits: int, packed_bits: int, exact_rows: int) -> Any:
    """:func:`dprect.core.describe_stats.joint_statistics_from_bins` of a column's cells
    at once, each cell's keys kept apart: cell g holds the next ``sizes[g]`` entries of
    ``bins`` (its search bins), ``counts`` and ``sums`` (int64), and its cuts are
    ``joint[starts[g] :]`` of the column's :class:`~dprect.core.describe_stats.JointCuts`
    (none where the next cell's start is its own). Each entry's key is pack(interval, e)
    — interval = (the ``searchsorted(joint, bin + g·span, "right")`` of the entry, the
    cell's start where it has no cuts) − starts[g] + base[g], e = max(top >> search_bits,
    1) with top the bin's distance from ``zero_bin`` (:func:`~dprect.core.describe_stats.
    bin_exponents`) — and each cell's equal keys are summed (counts and sums in int64, as
    numpy's ``add.reduceat`` wraps; integers, so the order of the terms changes no
    value) into its sorted unique keys. Returns (keys, counts, sums, unique keys a cell,
    status): status 0, or 1 where the numpy path must run — a packed key outside
    [0, 2^packed_bits) or a key of ``exact_rows`` rows or more (its sum a Python
    integer there); the arrays are then not read."""
    n = bins.shape[0]
    groups = sizes.shape[0]
    cuts = joint.shape[0]
    limit = np.int64(1) << packed_bits
    entries = np.empty((3, n), dtype=np.int64)  # each entry's key, count and sum
    keys, out_n, out_s = entries[0], entries[1], entries[2]
    unique = np.zeros(groups, dtype=np.int64)
    read = 0
    write = 0
    for g in range(groups):
        size = sizes[g]
        if size == 0:
            continue
        first = starts[g]
        end = starts[g + 1] if g + 1 < groups else cuts
        shift = g * span
        at = write
        for r in range(read, read + size):
            b = bins[r]
            pos = first
            if end > first:  # np.searchsorted(joint, b + shift, side="right")
                x = b + shift
                # within the cell's own cuts where those hold the answer (the cut
                # before them ≤ x, the one after > x: every cell's cuts lie in its own
                # span), else over them all
                lo, hi = first, end
                if (first > 0 and joint[first - 1] > x) or (end < cuts and joint[end] <= x):
                    lo, hi = 0, cuts
                pos = _first_at_least(joint, lo, hi, x + 1)  # the first cut > x
            top = b - zero_bin if b >= zero_bin else zero_bin - 1 - b
            e = top >> search_bits
            if e < 1:
                e = np.int64(1)
            key = ((pos - first + base[g] + offset) << exponent_bits) | e
            if key < 0 or key >= limit:
                return keys, out_n, out_s, unique, 1
            keys[write + r - read] = key
            out_n[write + r - read] = counts[r]
            out_s[write + r - read] = sums[r]
        # the cell's entries in key order (insertion a few, a merge sort past that)
        if size <= 32:
            for i in range(at + 1, at + size):
                key, cn, cs = keys[i], out_n[i], out_s[i]
                k = i
                while k > at and keys[k - 1] > key:
                    keys[k], out_n[k], out_s[k] = keys[k - 1], out_n[k - 1], out_s[k - 1]
                    k -= 1
                keys[k], out_n[k], out_s[k] = key, cn, cs
        else:
            order = np.argsort(keys[at:at + size], kind="mergesort")
            keys[at:at + size] = keys[at:at + size][order]
            out_n[at:at + size] = out_n[at:at + size][order]
            out_s[at:at + size] = out_s[at:at + size][order]
        # equal keys summed in place: the cell's sorted unique keys from ``at`` on
        w = at
        for i in range(at + 1, at + size):
            if keys[i] == keys[w]:
                out_n[w] += out_n[i]
                out_s[w] += out_s[i]
            else:
                w += 1
                keys[w], out_n[w], out_s[w] = keys[i], out_n[i], out_s[i]
        write = w + 1
        unique[g] = write - at
        read += size
    for k in range(write):
        if out_n[k] >= exact_rows:
            return keys, out_n, out_s, unique, 1
    return keys[:write], out_n[:write], out_s[:write], unique, 0


@_jit
def _div_wide(u1: Any, u0: Any, v: Any, shift: Any) -> Any:
    """⌊(u1·2^64 + u0)/v⌋ for u1 < v < 2^64 (the quotient below 2^64), ``shift`` the
    leading zero bits of v (1 ≤ shift ≤ 63): two 32-bit quotient digits by Knuth's
    algorithm D on the normalised divisor (Hacker's Delight, ``divlu``), each digit
    estimated from the divisor's top word and corrected at most twice — exact."""
    b = np.uint64(1) << np.uint64(32)
    mask = b - np.uint64(1)
    sh = np.uint64(shift)
    v = v << sh
    vn1 = v >> np.uint64(32)
    vn0 = v & mask
    un32 = (u1 << sh) | (u0 >> (np.uint64(64) - sh))
    un10 = u0 << sh
    un1 = un10 >> np.uint64(32)
    un0 = un10 & mask
    q1 = _digit(un32, un1, vn1, vn0)
    un21 = un32 * b + un1 - q1 * v  # mod 2^64: the true remainder is below v
    return q1 * b + _digit(un21, un0, vn1, vn0)


@_jit
def _digit(top: Any, next_word: Any, vn1: Any, vn0: Any) -> Any:
    """One 32-bit quotient digit of algorithm D (:func:`_div_wide`): ⌊(top·2^32 +
    ``next_word``)/(vn1·2^32 + vn0)⌋, estimated as ⌊top/vn1⌋ and corrected (at most
    twice) while the estimate's product exceeds the dividend."""
    b = np.uint64(1) << np.uint64(32)
    q = top // vn1
    rhat = top - q * vn1
    while q >= b or q * vn0 > b * rhat + next_word:
        q -= np.uint64(1)
        rhat += vn1
        if rhat >= b:
            break
    return q


@_jit
def wide_noise_values(noises: Any, kinds: Any, rate: Any, scale_high: Any, scale_low: Any,
                      shift: Any, out: Any) -> Any:
    """:func:`~dprect.core.cell_draws.noise_value` of many draws of two-word scales
    exactly, in int64: draw i (``noises[i]`` = U's high word, U's low word, V, negative)
    at the scale t/s of its kind k = ``kinds[i]`` (s = ``rate[k]``, 0 < s < 2^62, whose
    leading zero bits are ``shift[k]``; t = ``scale_high[k]``·2^64 + ``scale_low[k]``):
    ±⌊(U + t·V)/s⌋, N = U + t·V formed on two words (the partial products of
    :func:`~dprect.core.random_jit._mul_wide`, every carry kept) and divided by
    :func:`_div_wide`. Returns the draws made: a draw whose N reaches 2^128 or whose
    quotient reaches 2^63 stops the call there (the caller makes the rest as Python
    integers)."""
    n = noises.shape[0]
    top = np.uint64(1) << np.uint64(63)
    for i in range(n):
        k = kinds[i]
        s = np.uint64(rate[k])
        uh, ul, v = noises[i, 0], noises[i, 1], noises[i, 2]
        ph, pl = _mul_wide(scale_low[k], v)  # t's low word · V
        hh, hl = _mul_wide(scale_high[k], v)  # t's high word · V, times 2^64
        if hh != 0:
            return i
        low = ul + pl
        high = uh + ph
        if high < uh:
            return i
        if low < ul:  # the low words' carry
            high += np.uint64(1)
            if high == 0:
                return i
        total = high + hl
        if total < high:
            return i
        if total >= s:  # a quotient of 2^64 or more
            return i
        q = _div_wide(total, low, s, shift[k])
        if q >= top:
            return i
        out[i] = -np.int64(q) if noises[i, 3] != 0 else np.int64(q)
    return n


@_jit
def dense_histogram(keys: Any, counts: Any, low: Any, span: Any) -> Any:
    """The sorted unique ``keys`` whose summed ``counts`` are positive, and those sums
    (int64, added as numpy adds them), every key in [``low``, ``low`` + ``span``): one
    pass into a dense array of the span, then its positive entries in key order — what
    :func:`dprect.core.describe_stats.merge_histograms` makes by sorting."""
    dense = np.zeros(span, dtype=np.int64)
    for i in range(keys.shape[0]):
        dense[keys[i] - low] += counts[i]
    kept = 0
    for i in range(span):
        if dense[i] > 0:
            kept += 1
    out_keys = np.empty(kept, dtype=np.int64)
    out_counts = np.empty(kept, dtype=np.int64)
    j = 0
    for i in range(span):
        if dense[i] > 0:
            out_keys[j] = low + i
            out_counts[j] = dense[i]
            j += 1
    return out_keys, out_counts


@_jit
def block_words(mts: Any, rows: Any, k: int, out: Any) -> None:
    """getrandbits(k) of each listed row of the seeded sources' joined states, as
    ⌈k/32⌉ words, least significant first, into ``out[i]`` (row ``rows[i]``): what
    :meth:`~dprect.core.randomness.RandomSource.randbits` draws on each row's source
    (:func:`~dprect.core.random_jit.fill_words`, its very kernel), the rows in turn —
    each draws from its own state, so their order changes no value."""
    for i in range(rows.shape[0]):
        fill_words(mts[rows[i]], k, out[i])


__all__ = ["PHASES", "block_draws", "block_noises", "block_tails", "block_words",
           "column_cuts", "column_entries", "dense_histogram", "wide_noise_values"]

