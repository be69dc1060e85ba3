"""A small group's whole quantile draws in ONE compiled call a cell (issue #41): the noisy
count, the centre block, the sign class and every quantile near them —
:func:`dprect.core.quantiles.draws` on its centred branch, integer for integer, on the
same random words in the same order.

Imported only where :mod:`dprect.core.random_jit` loads (numba installed, its cache
writable), by :mod:`dprect.core.quantile_draws` (:func:`~dprect.core.quantile_draws.
compiled_cell`).

**The steps** (:func:`cell_draws`), each the compiled twin of the Python step it names:

1. the count n + Z, Z = ``discrete_laplace_int(s, t)`` (:func:`~dprect.core.random_jit.
   discrete_laplace` for t below 2^62, else ``discrete_laplace2``, as the source
   chooses; ⌊(U + t·V)/s⌋ on two words); a count at or above ``split_rows``
   (the large groups' branch: the whole grid) ends the call with :data:`LARGE`;
2. the rows per magnitude block (``quantile_centre.block_rows``: a difference of the
   cumulative counts per run of the sorted keys) and per sign class
   (``quantile_centre.sign_rows``), each the rank law of q = 1/2 over its occupied
   blocks (classes) as ``quantile_centre.rank_frame`` lays it (the gap before the first,
   each occupied one and the gap after it, the empty gaps dropped; the pieces
   ``_few_rank_pieces`` makes for a few keys, the same arrays) with depths max(w) − w,
   w = max(0, 2·lo − n, n − 2·hi); each drawn by the tables of
   :func:`dprect.core.quantile_jit.laws_tables` and
   :func:`~dprect.core.random_jit.unimodal_rounds` (``quantile_draws.draw_one``);
3. the window of the centre and sign (``quantile_centre._window``: the blocks within
   ``WINDOW_DECADES`` of the centre, each sign's decade unless the opposite sign's two
   extra decades put it past, zero's two cells, sorted and joined where adjacent), its
   runs of keys (``window_runs``), their ranks (``quantiles._ranks``) and the rows
   before each run, the window's pieces (:func:`~dprect.core.random_jit.window_pieces`,
   ``window_depths``' layout) and the rejection rounds (``quantile_draws.near_window``)
   — each law's depths read off the pieces' ranks where they are read
   (``random_jit.depth_of``: its kmax and split by searches,
   :func:`~dprect.core.quantile_jit.rank_tables`; the buckets' searches and each drawn
   piece's depth), not made as a (laws × pieces) array: the same integers.

Every integer is below 2^62 where the caller checked the plan's constants and the cell's
rows (n < 2^60, every b·n below 2^62). Where a draw would leave compiled code (an
undecided uniform: ``PAUSE``; ``BOUND``; a table that contradicts a draw, ``FAULT``; a
quotient past int64) the call ends with that status: the caller puts the source's state
back as it was before the call and draws the cell in Python — the same bits from the
same state (the Python path is the reference; tests/core/test_quantile_cell_jit.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dprect.core.quantile_jit import laws_tables, rank_tables
from dprect.core.random_jit import (
    DONE,
    _div2,
    _jit,
    _mul_small2,
    discrete_laplace,
    discrete_laplace2,
    rank_rounds,
    unimodal_rounds,
    window_pieces,
)

#: :func:`cell_draws`' statuses besides random_jit's: the large groups' branch, and a
#: cell the compiled call does not draw (the caller's Python path draws it)
LARGE, PYTHON = 6, 7

#: ``consts``' fields
(S, _T, SPLIT_ROWS, PER_SIGN, ZERO, PER_DECADE, SIZE, BLOCKS, CENTRE_NUM, SIGN_NUM, BITS,
 SHARE, WINDOW, ZERO_DECADES, SIGN_DECADES) = range(15)


@_jit
def _lower(a: Any, x: Any, lo: Any, hi: Any) -> Any:
    """The first index in [lo, hi) of the sorted ``a`` with a[i] ≥ x (searchsorted)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def _upper(a: Any, x: Any, lo: Any, hi: Any) -> Any:
    """The first index in [lo, hi) of the sorted ``a`` with a[i] > x."""
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def half_law(rows: Any, m: Any) -> Any:
    """The rank law of q = 1/2 over a grid of m candidates holding ``rows[i]`` rows each
    (the occupied ones: rows > 0), every row of a candidate counted as at its value
    (``quantile_centre.rank_pieces`` of the occupied candidates, lo = the rows before,
    hi = up to it): (starts as int64, depths as a (1, pieces) int64 row)."""
    count = 0
    for i in range(m):
        if rows[i] > 0:
            count += 1
    starts = np.empty(2 * count + 1, dtype=np.int64)
    lo = np.empty(2 * count + 1, dtype=np.int64)
    hi = np.empty(2 * count + 1, dtype=np.int64)
    p = 0
    n = np.int64(0)
    for i in range(m):
        n += rows[i]
    if count == 0:
        starts[0] = 0
        lo[0] = 0
        hi[0] = 0
        p = 1
    else:
        upto = np.int64(0)
        prev = -1  # the last occupied candidate
        for i in range(m):
            if rows[i] <= 0:
                continue
            if i > prev + 1:  # the gap before it: every row so far below
                starts[p] = prev + 1
                lo[p] = upto
                hi[p] = upto
                p += 1
            starts[p] = i
            lo[p] = upto
            upto += rows[i]
            hi[p] = upto
            p += 1
            prev = i
        if prev < m - 1:
            starts[p] = prev + 1
            lo[p] = upto
            hi[p] = upto
            p += 1
    depths = np.empty((1, p), dtype=np.int64)
    top = np.int64(0)
    for i in range(p):
        w = max(2 * lo[i] - n, n - 2 * hi[i])
        w = max(w, np.int64(0))
        depths[0, i] = w
        if w > top:
            top = w
    for i in range(p):
        depths[0, i] = top - depths[0, i]
    return starts[:p].copy(), depths


@_jit
def window_ranges(consts: Any, centre: Any, sign: Any) -> Any:
    """``quantile_centre.window(grid, centre, sign)`` as (starts, stops) int64 arrays."""
    per_sign = consts[PER_SIGN]
    zero = consts[ZERO]
    per_decade = consts[PER_DECADE]
    limit = consts[WINDOW]
    spans_a = np.empty(2 * consts[BLOCKS] + 1, dtype=np.int64)
    spans_z = np.empty(2 * consts[BLOCKS] + 1, dtype=np.int64)
    k = 0
    extra0 = consts[SIGN_DECADES] if sign == 2 else 0  # s = 0 = 2 − sign
    extra2 = consts[SIGN_DECADES] if sign == 0 else 0  # s = 2 = 2 − sign
    lo_b = max(centre - limit, 0)
    hi_b = min(centre + limit, consts[BLOCKS] - 1)
    for b in range(consts[BLOCKS]):
        if b != 0 and (b < lo_b or b > hi_b) and centre != 0:
            continue
        if b == centre:
            level = 0
        elif b == 0 or centre == 0:
            level = consts[ZERO_DECADES]
        else:
            level = abs(b - centre)
        if level > limit:
            continue
        if b == 0:
            spans_a[k] = per_sign
            spans_z[k] = zero + 1
            k += 1
            continue
        if level + extra0 <= limit:
            neg_hi = per_sign - (b - 1) * per_decade
            spans_a[k] = neg_hi - per_decade
            spans_z[k] = neg_hi
            k += 1
        if level + extra2 <= limit:
            start = zero + 1 + (b - 1) * per_decade
            spans_a[k] = start
            spans_z[k] = start + per_decade
            k += 1
    order = np.argsort(spans_a[:k], kind="mergesort")
    out_a = np.empty(k, dtype=np.int64)
    out_z = np.empty(k, dtype=np.int64)
    r = 0
    for i in range(k):
        a = spans_a[order[i]]
        z = spans_z[order[i]]
        if r and out_z[r - 1] == a:
            out_z[r - 1] = z
        else:
            out_a[r] = a
            out_z[r] = z
            r += 1
    return out_a[:r].copy(), out_z[:r].copy()


@_jit
def _draw_law(kind: Any, mt: Any, pool: Any, pos: Any, starts: Any, depths: Any, num: Any,
              den: Any, m: Any, lo_tab: Any, hi_tab: Any, consts: Any, accept: Any,
              out: Any) -> Any:
    """``quantile_draws.draw_one`` of the law (starts, depths) at rate num/den on a grid
    of m points: (status, the drawn point)."""
    nums = np.empty(1, dtype=np.int64)
    nums[0] = num
    status, laws, rows, intervals = laws_tables(starts, depths, nums, den, m, lo_tab,
                                                hi_tab, consts[BITS], consts[SHARE])
    if status != DONE:
        return PYTHON, np.int64(0)
    none = np.zeros(1, dtype=np.int64)
    grid = np.zeros(7, dtype=np.int64)
    status, _, _ = unimodal_rounds(kind, mt, pool, pos, 0, starts, depths, laws, den, rows,
                                   intervals, consts[BITS], False, none, none, grid, accept,
                                   out)
    return status, out[0]


@_jit
def cell_draws(kind: Any, mt: Any, pool: Any, pos: Any, keys: Any, counts: Any, at: Any,
               consts: Any, count_t: Any, centre_den: Any, sign_den: Any, qa: Any,
               qb: Any, nums: Any, dens: Any, block_firsts: Any, block_ids: Any,
               lo_tab: Any, hi_tab: Any, accept: Any, out: Any) -> Any:
    """One small group's draws (module notes) as (status, noisy count): ``DONE`` with
    the quantiles' cells in ``out``; ``LARGE`` (the count at or above the split); else
    the status that ended it (the caller restores the source and draws in Python).
    ``consts``: the fields named at the top of this module; ``count_t``: the count
    scale's numerator t as (high, low) words; ``centre_den``, ``sign_den``, ``dens``:
    rates' denominators as (high, low) words, one row each."""
    u = keys.shape[0]
    incl = np.empty(u, dtype=np.int64)
    total = np.int64(0)
    for i in range(u):
        total += counts[i]
        incl[i] = total
    # 1. the count
    s = consts[S]
    th = count_t[0]
    tl = count_t[1]
    if th == 0 and tl < np.uint64(1 << 62):  # RandomSource.discrete_laplace_int's choice
        zu, zv, negative, status = discrete_laplace(kind, mt, pool, pos, s, np.int64(tl))
        uh = np.uint64(0)
        ul = np.uint64(zu)
    else:
        uh, ul, zv, negative, status = discrete_laplace2(kind, mt, pool, pos, s, th, tl)
    if status != DONE:
        return status, np.int64(0)
    if zv >= 1 << 31:
        return PYTHON, np.int64(0)
    ph, pl = _mul_small2(th, tl, zv)  # U + t·V < 2^96·2^31 + 2^96 < 2^127
    pl2 = pl + ul
    ph += uh + (np.uint64(1) if pl2 < pl else np.uint64(0))
    gh, gl = _div2(ph, pl2, np.uint64(0), np.uint64(s))
    if gh != 0 or gl >= np.uint64(1 << 62):
        return PYTHON, np.int64(0)
    g = np.int64(gl)
    noisy = total - g if negative else total + g
    if noisy >= consts[SPLIT_ROWS]:
        return LARGE, noisy
    if u and (keys[0] < 0 or keys[u - 1] >= consts[SIZE]):
        return PYTHON, noisy  # the Python path refuses the cell
    one = np.zeros(1, dtype=np.int64)
    # 2. the centre block: the rows per magnitude block, the rank law of 1/2 on them
    blocks = consts[BLOCKS]
    per_block = np.zeros(blocks, dtype=np.int64)
    if u:
        runs = block_firsts.shape[0]
        a = _upper(block_firsts, keys[0], 0, runs) - 1
        z = _upper(block_firsts, keys[u - 1], 0, runs) - 1
        prev = np.int64(0)
        for r in range(a, z + 1):
            end = _lower(keys, block_firsts[r + 1], 0, u) if r < z else u
            v = incl[end - 1]
            per_block[block_ids[r]] += v - prev
            prev = v
    starts, depths = half_law(per_block, blocks)
    status, centre = _draw_law(kind, mt, pool, pos, starts, depths, consts[CENTRE_NUM],
                               centre_den, blocks, lo_tab, hi_tab, consts, accept, one)
    if status != DONE:
        return status, noisy
    # the sign class
    per_class = np.zeros(3, dtype=np.int64)
    if u:
        at0 = _lower(keys, consts[PER_SIGN], 0, u)
        at1 = _lower(keys, consts[ZERO] + 1, 0, u)
        below = incl[at0 - 1] if at0 else np.int64(0)
        upto = incl[at1 - 1] if at1 else np.int64(0)
        per_class[0] = below
        per_class[1] = upto - below
        per_class[2] = total - upto
    starts, depths = half_law(per_class, 3)
    status, sign = _draw_law(kind, mt, pool, pos, starts, depths, consts[SIGN_NUM],
                             sign_den, 3, lo_tab, hi_tab, consts, accept, one)
    if status != DONE:
        return status, noisy
    # 3. the quantiles in the window
    ra, rz = window_ranges(consts, centre, sign)
    runs = ra.shape[0]
    w = np.empty(runs, dtype=np.int64)
    before = np.zeros(runs, dtype=np.int64)
    firsts = np.empty(runs, dtype=np.int64)
    inside = 0
    for r in range(runs):
        f = _lower(keys, ra[r], 0, u)
        e = _lower(keys, rz[r], f, u)
        firsts[r] = f
        w[r] = e - f
        inside += e - f
        if f > 0:
            before[r] = incl[f - 1]
    k_in = np.empty(inside, dtype=np.int64)
    lo_in = np.empty(inside, dtype=np.int64)
    hi_in = np.empty(inside, dtype=np.int64)
    incl_in = np.empty(inside, dtype=np.int64)
    p = 0
    zero = consts[ZERO]
    for r in range(runs):
        for i in range(firsts[r], firsts[r] + w[r]):
            k_in[p] = keys[i]
            incl_in[p] = incl[i]
            prior = incl[i] - counts[i]
            if keys[i] < zero:  # a negative cell: its rows lie below its value
                lo_in[p] = incl[i] - at[i]
                hi_in[p] = incl[i]
            else:
                lo_in[p] = prior
                hi_in[p] = prior + at[i]
            p += 1
    starts_u, _, lo_p, hi_p = window_pieces(ra, rz, w, k_in, lo_in, hi_in, incl_in, before)
    size = np.int64(0)
    offsets = np.empty(runs, dtype=np.int64)
    for r in range(runs):
        offsets[r] = size
        size += rz[r] - ra[r]
    starts = starts_u.astype(np.int64)
    m = qa.shape[0]
    tq = np.empty(m, dtype=np.int64)
    for j in range(m):
        tq[j] = qa[j] * total
    ranks = (True, lo_p, hi_p, tq, qb, np.zeros(m, dtype=np.int64))
    status, laws, rows, intervals = rank_tables(starts, one.reshape(1, 1), nums, dens, size,
                                                lo_tab, hi_tab, consts[BITS], consts[SHARE],
                                                ranks)
    if status != DONE:
        return PYTHON, noisy
    grid = np.empty(7, dtype=np.int64)
    grid[0] = consts[PER_SIGN]
    grid[1] = zero
    grid[2] = consts[PER_DECADE]
    grid[3] = centre
    grid[4] = sign
    grid[5] = consts[ZERO_DECADES]
    grid[6] = consts[SIGN_DECADES]
    status, _, _ = rank_rounds(kind, mt, pool, pos, 0, m, starts, one.reshape(1, 1), laws,
                               dens, rows, intervals, consts[BITS], True, ra, offsets, grid,
                               accept, out, ranks)
    return status, noisy


__all__ = ["LARGE", "PYTHON", "cell_draws", "half_law", "window_ranges"]
