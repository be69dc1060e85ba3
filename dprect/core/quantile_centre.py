"""Quantiles of small groups: a private centre, a window around it with a base measure
that decays away from it, drawn exactly (issue #41, point 5; proof in docs/privacy.md
§11a, "Small groups"). :mod:`dprect.core.quantiles` draws a noisy count first; a group
below the plan's ``split_rows`` is drawn through this module.

With a uniform base measure over the decimal grid's M = 108,000,002 cells, the cells
outside the data outweigh a group of a few hundred rows (a p10 has bad = q·n there, so it
needs q·n ≳ (2/ε_each)·ln M rows): a p10 or p90 of such a group could land anywhere up to
±10³⁰⁰. From the cell statistics the quantiles already read:

1. **Centre** (ε_c). The grid's cells fall in B = K + 1 = 601 public *magnitude blocks*
   (:func:`blocks`): zero's two cells, and per decade k the cells of both signs whose
   value's magnitude is in [10^k, 10^(k+1)). The exponential mechanism for the median of
   the magnitudes over the blocks: block b with probability ∝ exp(−ε_c·bad(b)/2),
   bad(b) = dist(n/2, [#{|x| in blocks < b}, #{|x| in blocks ≤ b}]) (sensitivity 1), the
   rank law of q = 1/2 (:func:`rank_pieces`, :func:`centre_pieces`) drawn by the exact
   sampler. Magnitudes centre a column that straddles zero on its scale. With
   ``SIGN_PART`` of ε_c, the sign class (negative, zero, positive) holding the median is
   drawn the same way (:func:`sign_pieces`, three candidates).
2. **Each quantile** draws cell i with probability ∝ μ_c(i)·exp(−ε_each·bad_q(i)/2),
   μ_c(i) = exp(−λ·d(i, c)) on the :func:`window` d(i, c) ≤ W and 0 outside it, d the
   decades between i's block and the centre (:func:`block_levels`; ``ZERO_DECADES``
   between zero's block and any other) plus ``SIGN_DECADES`` on the sign opposite to the
   released one (:func:`levels`), λ = ``DECAY``, W = ``WINDOW_DECADES``: a base
   measure that is a public function of the released centre, so the draw stays
   ε_each-DP (docs/privacy.md §11a, Lemma Q3).

**Exact draw** (:func:`draw_near`): the uniform-measure law's pieces cut to the window and
laid end to end (:func:`restrict`: a unimodal depth stays unimodal on an ordered subset)
are drawn by ``interior_point.unimodal_sampler`` (built once); each draw is accepted with
probability exp(−λ·d) (:meth:`RandomSource.bernoulli_exp` on the exact rational), else
drawn again — rejection sampling, so the accepted cell has exactly the law above, and a
round is accepted with probability ≥ e^{−λW} = e^{−6} whatever the data. A run draws a
cell's m quantiles through :mod:`dprect.core.quantile_draws` (the pieces built and cut
once, :func:`rank_frame` and :func:`cut`, the rounds' level in integers,
:func:`level_of`): the same draws, which :func:`draw_near` states one law at a time.

Nothing here reads rows; the draws read the merged statistics only, so they are the same
on every engine for a seed.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from dprect.core.bounds import MAX_WEIGHTED_ROWS
from dprect.core.crmath import exp_array
from dprect.core.decimal_grid import DecimalGrid
from dprect.core.interior_point import Pieces, unimodal_sampler
from dprect.core.randomness import RandomSource

#: the base measure's decay per decade from the centre (nats), exact
DECAY = Fraction(3, 2)
#: the window: the cells within this many decades of the centre are the candidates
#: (so at least one rejection round in e^{DECAY·WINDOW_DECADES} = e^6 is accepted)
WINDOW_DECADES = 4
#: the zero block and any other block are this many decades apart
ZERO_DECADES = 2
#: a cell of the sign opposite to the released sign is this many decades farther
SIGN_DECADES = 2
#: the share of the centre's ε its sign takes (the magnitude block the rest), exact
SIGN_PART = Fraction(1, 5)


def decades(grid: DecimalGrid) -> int:
    """K, the decades of each sign."""
    return grid.per_sign // grid.per_decade


def block_count(grid: DecimalGrid) -> int:
    """B = K + 1 magnitude blocks: zero's, then the decades."""
    return decades(grid) + 1


def blocks(grid: DecimalGrid, index: np.ndarray) -> np.ndarray:
    """Each cell's magnitude block: 0 for the two cells at zero, 1 + k for a cell of
    either sign in decade k (its magnitude index j // per_decade)."""
    i = np.asarray(index, dtype=np.int64)
    neg = (grid.per_sign - 1 - i) // grid.per_decade
    pos = (i - grid.zero - 1) // grid.per_decade
    return np.where(i < grid.per_sign, 1 + neg,
                    np.where(i <= grid.zero, 0, 1 + pos)).astype(np.int64)


def block_levels(grid: DecimalGrid, centre: int, block: np.ndarray) -> np.ndarray:
    """d(block, centre): the decades between each magnitude block and the centre block
    (module docstring, step 3): |b − c|, and ``ZERO_DECADES`` between zero's block and
    any other."""
    b = np.asarray(block, dtype=np.int64)
    d = np.where((b == 0) | (centre == 0), ZERO_DECADES, np.abs(b - centre))
    return np.where(b == centre, 0, d).astype(np.int64)


def signs(grid: DecimalGrid, index: np.ndarray) -> np.ndarray:
    """Each cell's sign class: 0 negative, 1 zero's two cells, 2 positive (grid order)."""
    i = np.asarray(index, dtype=np.int64)
    return np.where(i < grid.per_sign, 0, np.where(i <= grid.zero, 1, 2)).astype(np.int64)


def levels(grid: DecimalGrid, centre: int, sign: int, index: np.ndarray) -> np.ndarray:
    """d(i, c) for each cell index i: its block's decades from the centre block, plus
    ``SIGN_DECADES`` on the sign opposite to the released ``sign`` (0 negative, 1 zero:
    none opposite, 2 positive)."""
    i = np.asarray(index, dtype=np.int64)
    opposite = (sign != 1) & (signs(grid, i) == 2 - sign)
    return block_levels(grid, centre, blocks(grid, i)) + SIGN_DECADES * opposite


def level_of(grid: DecimalGrid, centre: int, sign: int, i: int) -> int:
    """:func:`levels` of one cell ``i``, in Python integers (the rejection rounds' test:
    equal to ``levels(grid, centre, sign, [i])[0]``)."""
    if i < grid.per_sign:
        block, cls = 1 + (grid.per_sign - 1 - i) // grid.per_decade, 0
    elif i <= grid.zero:
        block, cls = 0, 1
    else:
        block, cls = 1 + (i - grid.zero - 1) // grid.per_decade, 2
    if block == centre:
        d = 0
    elif block == 0 or centre == 0:
        d = ZERO_DECADES
    else:
        d = abs(block - centre)
    return d + (SIGN_DECADES if sign != 1 and cls == 2 - sign else 0)


@dataclass(frozen=True)
class RankFrame:
    """The pieces of every rank law over one cell's grid (:func:`rank_frame`): ``starts``
    and ``sizes`` (uint64, tiling the grid), each piece's lo = #{x < v} and hi = #{x ≤ v}
    (int64) and the rows n — the same for every quantile, so built once per cell."""

    starts: np.ndarray
    sizes: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n: int
    grid_size: int

    def weighted(self, q: Fraction, index: np.ndarray | None = None) -> np.ndarray:
        """b·bad(i) = max(0, b·lo − a·n, a·n − b·hi) of each piece (q = a/b), or of the
        pieces ``index``: int64, or Python integers beyond int64."""
        lo, hi = (self.lo, self.hi) if index is None else (self.lo[index], self.hi[index])
        a, b = q.numerator, q.denominator
        bb: int | np.int64 = b
        t: int | np.int64 = a * self.n
        if b * max(self.n, 1) >= MAX_WEIGHTED_ROWS:  # beyond int64: exact Python integers
            lo, hi = lo.astype(object), hi.astype(object)
        else:
            bb, t = np.int64(b), np.int64(a * self.n)
        return np.maximum(0, np.maximum(lo * bb - t, t - hi * bb))


def rank_frame(keys: np.ndarray, row_lo: np.ndarray, row_hi: np.ndarray, incl: np.ndarray,
               m: int) -> RankFrame:
    """The pieces of the rank laws over a grid of ``m`` cells (:func:`rank_pieces`),
    without the quantile."""
    u = len(keys)
    n = int(incl[-1]) if u else 0
    if u == 0:
        starts, sizes = np.zeros(1, np.uint64), np.array([m], np.uint64)
        lo = hi = np.zeros(1, np.int64)
    else:
        ukeys = np.asarray(keys, dtype=np.int64).astype(np.uint64)
        starts = np.empty(2 * u + 1, np.uint64)
        sizes = np.empty(2 * u + 1, np.uint64)
        lo = np.empty(2 * u + 1, np.int64)
        hi = np.empty(2 * u + 1, np.int64)
        starts[0], sizes[0], lo[0], hi[0] = 0, ukeys[0], 0, 0
        starts[1::2], sizes[1::2], lo[1::2], hi[1::2] = ukeys, 1, row_lo, row_hi
        starts[2:-1:2] = ukeys[:-1] + np.uint64(1)
        sizes[2:-1:2] = ukeys[1:] - ukeys[:-1] - np.uint64(1)
        # an empty bin between: every row is < or > v, the rows of earlier bins below
        lo[2:-1:2] = hi[2:-1:2] = np.asarray(incl, dtype=np.int64)[:-1]
        starts[-1], sizes[-1] = ukeys[-1] + np.uint64(1), np.uint64(m - 1 - int(keys[-1]))
        lo[-1] = hi[-1] = n
        keep = sizes > 0
        starts, sizes, lo, hi = starts[keep], sizes[keep], lo[keep], hi[keep]
    return RankFrame(starts, sizes, lo, hi, n, m)


def window_runs(keys: np.ndarray, ranges: Sequence[tuple[int, int]]
                ) -> tuple[np.ndarray, np.ndarray]:
    """For each range [a_r, z_r) of ``ranges`` (sorted, disjoint), the run [first_r,
    end_r) of the sorted ``keys`` inside it (int64 arrays): the keys :func:`window_frame`
    reads."""
    edges = np.searchsorted(keys, np.array(ranges, dtype=np.int64).ravel())
    return edges[0::2], edges[1::2]


def window_frame(ranges: Sequence[tuple[int, int]], firsts: np.ndarray, ends: np.ndarray,
                 keys: np.ndarray, row_lo: np.ndarray, row_hi: np.ndarray,
                 incl: np.ndarray, before: np.ndarray, n: int, m: int) -> RankFrame:
    """The cell's rank frame (:func:`rank_frame`) restricted to ``ranges`` (sorted,
    disjoint, as :func:`window` makes them: never adjacent), built from the keys inside
    them only: per range r its run of keys (:func:`window_runs`: ``firsts``, ``ends``),
    given concatenated as ``keys`` with their ``row_lo``, ``row_hi`` and cumulative
    counts ``incl`` (the cell's), and ``before[r]``, the cell's rows below range r's first
    cell (the cumulative count of the last key before it, 0 if none); ``n`` the cell's
    rows.

    Range r's pieces: from a_r to its first key (or to z_r without one) a gap of ranks
    ``before[r]``, each key's cell with its own, after each key to the next key of the
    run (the last: to z_r) a gap of the key's cumulative count — the frame's pieces
    clipped to [a_r, z_r) with their ranks: a grid cell between two keys has in the frame
    the ranks of the gap after the lower key, which is the run's key or, for a cell
    before the run's first key, the last key before a_r (whose count is ``before[r]``).
    So :func:`cut` of this frame to ``ranges`` (each range's pieces start at a_r and end
    at z_r: the same search) gives the whole frame's cut pieces and ranks, from work of
    the window's keys, not the cell's (tests/core/test_quantile_draws_compiled.py)."""
    a = np.array([r[0] for r in ranges], dtype=np.int64)
    z = np.array([r[1] for r in ranges], dtype=np.int64)
    w = (np.asarray(ends) - np.asarray(firsts)).astype(np.int64)
    runs = len(ranges)
    prior = np.zeros(runs, dtype=np.int64)  # the keys of the runs before each run
    np.cumsum(w[:-1], out=prior[1:])
    lead = 2 * prior + np.arange(runs, dtype=np.int64)  # each run's first (gap) piece
    total = 2 * int(w.sum()) + runs
    begin = np.empty(total, dtype=np.int64)
    end = np.empty(total, dtype=np.int64)
    lo = np.empty(total, dtype=np.int64)
    hi = np.empty(total, dtype=np.int64)
    k = np.asarray(keys, dtype=np.int64)
    of = np.repeat(np.arange(runs, dtype=np.int64), w)  # each key's run
    at = lead[of] + 1 + 2 * (np.arange(len(k), dtype=np.int64) - prior[of])
    has = w > 0
    following = np.empty(len(k), dtype=np.int64)  # the next key of the run, or z_r
    following[:-1] = k[1:]
    following[prior[has] + w[has] - 1] = z[has]
    first_key = z.copy()  # each run's first key, or z_r (no key: one gap)
    first_key[has] = k[prior[has]]
    begin[lead], end[lead] = a, first_key
    lo[lead] = hi[lead] = before
    begin[at], end[at], lo[at], hi[at] = k, k + 1, row_lo, row_hi
    begin[at + 1], end[at + 1] = k + 1, following
    lo[at + 1] = hi[at + 1] = incl
    sizes = end - begin
    keep = sizes > 0
    return RankFrame(begin[keep].astype(np.uint64), sizes[keep].astype(np.uint64), lo[keep],
                     hi[keep], n, m)


def as_depths(weighted: np.ndarray) -> np.ndarray:
    """depth = max(b·bad) − b·bad: int64, or Python integers beyond int64."""
    depths = weighted.max() - weighted
    return depths if weighted.dtype == object else depths.astype(np.int64)


def rank_pieces(keys: np.ndarray, row_lo: np.ndarray, row_hi: np.ndarray,
                incl: np.ndarray, m: int, q: Fraction, epsilon: float) -> Pieces:
    """The rank law of q over a grid of ``m`` cells as constant-depth pieces: the
    occupied cells ``keys`` (sorted) with lo = ``row_lo`` = #{x < v}, hi = ``row_hi`` =
    #{x ≤ v} and ``incl`` the rows of the cells up to each (their cumulative counts); an
    empty cell's lo = hi = the rows of the cells before it. depth =
    D − b·bad, bad = dist(q·n, [lo, hi]) in 1/b rows (q = a/b). ``epsilon`` sets only the
    float ``Pieces.epsilon``. A law of a few occupied cells (the centre's blocks, the
    sign's classes) is made in Python integers: :func:`_few_rank_pieces`."""
    u = len(keys)
    if 0 < u <= FEW_KEYS and q.denominator * max(int(incl[-1]), 1) < MAX_WEIGHTED_ROWS:
        return _few_rank_pieces(keys, row_lo, row_hi, incl, m, q, epsilon)
    frame = rank_frame(keys, row_lo, row_hi, incl, m)
    return Pieces(frame.starts, frame.sizes, as_depths(frame.weighted(q)), epsilon, m)


#: :func:`rank_pieces` makes a law of at most this many occupied cells in Python integers
FEW_KEYS = 16


def _few_rank_pieces(keys: np.ndarray, row_lo: np.ndarray, row_hi: np.ndarray,
                     incl: np.ndarray, m: int, q: Fraction, epsilon: float) -> Pieces:
    """:func:`rank_pieces` of a few keys (at least one; every b·n below
    ``MAX_WEIGHTED_ROWS``: ``RankFrame.weighted``'s int64 case) in Python integers: the
    frame's pieces as :func:`rank_frame` lays them (the gap before the first key, then
    each key's cell and the gap after it, the empty gaps dropped) and their depths
    max(b·bad) − b·bad — the same arrays (tests/core/test_quantile_centre.py)."""
    k, lo, hi, cum = (np.asarray(x, dtype=np.int64).tolist()
                      for x in (keys, row_lo, row_hi, incl))
    n = cum[-1]
    ends = [*k[1:], m]
    # (start, size, lo, hi): a gap's lo = hi = the rows before it, a key's its cell's
    pieces = [(0, k[0], 0, 0)] if k[0] > 0 else []
    for i, key in enumerate(k):
        pieces.append((key, 1, lo[i], hi[i]))
        if ends[i] > key + 1:
            pieces.append((key + 1, ends[i] - key - 1, cum[i], cum[i]))
    a, b = q.numerator, q.denominator
    t = a * n
    weighted = [max(0, b * below - t, t - b * upto) for _, _, below, upto in pieces]
    top = max(weighted)
    return Pieces(np.array([p[0] for p in pieces], dtype=np.uint64),
                  np.array([p[1] for p in pieces], dtype=np.uint64),
                  np.array([top - w for w in weighted], dtype=np.int64), epsilon, m)


def sign_pieces(grid: DecimalGrid, keys: np.ndarray, counts: np.ndarray, epsilon: float,
                incl: np.ndarray | None = None) -> Pieces:
    """The sign's law (step 1): the rank law of q = 1/2 over the three sign classes
    (negative, zero, positive; :func:`signs`), every row of a class counted as at its
    value — the class holding the median; ``epsilon`` (the sign's ε) sets only the float
    law. ``keys`` sorted (a cell's statistics), ``incl`` their cumulative counts if made
    already (:func:`sign_rows`)."""
    rows = sign_rows(grid, keys, np.cumsum(counts) if incl is None else incl)
    used = np.flatnonzero(rows)
    incl = np.cumsum(rows[used])
    return rank_pieces(used, incl - rows[used], incl, incl, 3, Fraction(1, 2), epsilon)


def sign_rows(grid: DecimalGrid, keys: np.ndarray, incl: np.ndarray) -> np.ndarray:
    """The rows of each sign class (:func:`signs`; int64, 3) of a cell whose sorted cells
    ``keys`` have the cumulative counts ``incl``: the classes are three runs of the sorted
    keys (below ``per_sign``, up to ``zero``, above), so each class's rows are a
    difference of ``incl`` at two searches — the sums of the counts per class, exactly
    (integers added in another order)."""
    at = np.searchsorted(np.asarray(keys, dtype=np.int64), [grid.per_sign, grid.zero + 1])
    below, upto = (int(incl[e - 1]) if e else 0 for e in at.tolist())
    total = int(incl[-1]) if len(incl) else 0
    return np.array([below, upto - below, total - upto], dtype=np.int64)


@lru_cache(maxsize=16)
def _block_runs(grid: DecimalGrid) -> tuple[np.ndarray, np.ndarray]:
    """The grid cut into runs of one magnitude block each (:func:`blocks`): each run's
    first cell (sorted, from 0) and its block — the negative decades from the largest
    magnitude (block K) down to block 1, zero's two cells (block 0), the positive decades
    up from block 1 to K."""
    k, step = decades(grid), grid.per_decade
    firsts = np.concatenate([np.arange(k, dtype=np.int64) * step, [grid.per_sign],
                             grid.zero + 1 + np.arange(k, dtype=np.int64) * step])
    ids = np.concatenate([np.arange(k, 0, -1), [0], np.arange(1, k + 1)]).astype(np.int64)
    firsts = firsts.astype(np.int64)
    firsts.flags.writeable = ids.flags.writeable = False  # cached: shared by every caller
    return firsts, ids


def block_rows(grid: DecimalGrid, keys: np.ndarray, incl: np.ndarray) -> np.ndarray:
    """The rows of each magnitude block (:func:`blocks`; int64, ``block_count``) of a cell
    whose sorted cells ``keys`` have the cumulative counts ``incl``: the blocks are runs
    of the grid (:func:`_block_runs`), so the keys of one run are consecutive and its rows
    a difference of ``incl`` — only the runs from the first key's to the last key's are
    searched (a few decades, not a block per key). The sums of the counts per block,
    exactly (integers added in another order)."""
    out = np.zeros(block_count(grid), dtype=np.int64)
    if not len(keys):
        return out
    keys = np.asarray(keys, dtype=np.int64)
    firsts, ids = _block_runs(grid)
    a, z = (np.searchsorted(firsts, [keys[0], keys[-1]], side="right") - 1).tolist()
    ends = np.append(np.searchsorted(keys, firsts[a + 1:z + 1]), len(keys))
    rows = np.asarray(incl, dtype=np.int64)[ends - 1]  # every end >= 1: keys[0] is in run a
    rows[1:] -= rows[:-1].copy()
    np.add.at(out, ids[a:z + 1], rows)
    return out


def centre_pieces(grid: DecimalGrid, keys: np.ndarray, counts: np.ndarray, epsilon: float,
                  incl: np.ndarray | None = None) -> Pieces:
    """The centre's law on the blocks (step 1) as pieces: the cells' rows summed per block
    (:func:`block_rows`), then the rank law of q = 1/2 with every row of a block counted
    as at its value (:func:`rank_pieces`; depths in half rows, a score that moves by at
    most one half row, drawn at the rate ε_c/2 per half row); ``epsilon`` (ε_c) sets
    only the float law ``Pieces.probabilities`` (tests and audits). ``keys`` sorted (a
    cell's statistics), ``incl`` their cumulative counts if made already."""
    per_block = block_rows(grid, keys, np.cumsum(counts) if incl is None else incl)
    ub = np.flatnonzero(per_block)  # the occupied blocks (every count is >= 1)
    rows = per_block[ub]
    incl = np.cumsum(rows)
    return rank_pieces(ub, incl - rows, incl, incl, block_count(grid), Fraction(1, 2),
                       epsilon)


def window(grid: DecimalGrid, centre: int, sign: int) -> list[tuple[int, int]]:
    """The cells of level ≤ ``WINDOW_DECADES`` (:func:`levels`), as sorted disjoint index
    ranges [start, stop) of the grid: a run of decades on each sign and zero's two
    cells (a public function of the centre and sign: computed once for each)."""
    return list(_window(grid, centre, sign))


@lru_cache(maxsize=4096)
def _window(grid: DecimalGrid, centre: int, sign: int) -> tuple[tuple[int, int], ...]:
    block_level = block_levels(grid, centre, np.arange(block_count(grid)))
    extra = {s: SIGN_DECADES * int(sign != 1 and s == 2 - sign) for s in (0, 2)}
    spans: list[tuple[int, int]] = []
    for b in np.flatnonzero(block_level <= WINDOW_DECADES).tolist():
        if b == 0:
            spans.append((grid.per_sign, grid.zero + 1))
            continue
        if block_level[b] + extra[0] <= WINDOW_DECADES:  # decade b − 1, negative side
            neg_hi = grid.per_sign - (b - 1) * grid.per_decade
            spans.append((neg_hi - grid.per_decade, neg_hi))
        if block_level[b] + extra[2] <= WINDOW_DECADES:
            lo = grid.zero + 1 + (b - 1) * grid.per_decade
            spans.append((lo, lo + grid.per_decade))
    out: list[tuple[int, int]] = []
    for a, z in sorted(spans):
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], z)
        else:
            out.append((a, z))
    return tuple(out)


@dataclass(frozen=True)
class Cut:
    """Pieces cut to sorted disjoint index ranges and laid end to end (:func:`cut`):
    the kept pieces' ``index`` into the uncut pieces, their new ``starts`` and ``sizes``
    (uint64), each range's first cell ``firsts`` and its ``offsets`` in the compressed
    grid of ``size`` cells (to map a drawn point back)."""

    index: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    firsts: tuple[int, ...]
    offsets: tuple[int, ...]
    size: int

    def cell(self, y: int) -> int:
        """The grid cell of the compressed grid's point ``y``."""
        r = bisect.bisect_right(self.offsets, y) - 1
        return self.firsts[r] + (y - self.offsets[r])


def cut(starts: np.ndarray, sizes: np.ndarray, ranges: Sequence[tuple[int, int]]) -> Cut:
    """The pieces (``starts``, ``sizes``: tiling a grid, or tiling each of ``ranges`` —
    a frame restricted to them, :func:`window_frame`) cut to ``ranges`` (sorted,
    disjoint), laid end to end: range r = [a_r, z_r) keeps the pieces lo_r … hi_r − 1
    that meet it (lo_r the first piece ending after a_r, hi_r the first starting at or
    after z_r), each clipped to [a_r, z_r) and moved to the range's offset (the lengths
    of the ranges before it) — every range at once, in int64. As the pieces tile the grid
    from 0 (their starts increase), or each range from a_r, the first piece ending after
    a_r is the last one starting at or before it: both ends are searched on the starts
    themselves, and only the kept pieces' ends are made (work of the window's pieces,
    not the grid's)."""
    a = np.array([r[0] for r in ranges], dtype=np.int64)
    z = np.array([r[1] for r in ranges], dtype=np.int64)
    offsets = np.zeros(len(ranges), dtype=np.int64)
    np.cumsum((z - a)[:-1], out=offsets[1:])
    lo = np.searchsorted(starts, a.astype(starts.dtype), side="right") - 1
    hi = np.searchsorted(starts, z.astype(starts.dtype), side="left")
    kept = hi - lo
    of = np.repeat(np.arange(len(ranges)), kept)  # each kept piece's range
    first = np.zeros(len(ranges), dtype=np.int64)
    np.cumsum(kept[:-1], out=first[1:])
    index = np.arange(int(kept.sum()), dtype=np.int64) + (lo - first)[of]
    begin = starts[index].astype(np.int64)
    s = np.maximum(begin, a[of])
    e = np.minimum(begin + sizes[index].astype(np.int64), z[of])
    return Cut(index, (s - a[of] + offsets[of]).astype(np.uint64), (e - s).astype(np.uint64),
               tuple(r[0] for r in ranges), tuple(offsets.tolist()),
               int(offsets[-1] + z[-1] - a[-1]) if len(ranges) else 0)


def restrict(pieces: Pieces, ranges: list[tuple[int, int]]) -> tuple[Pieces, np.ndarray]:
    """The pieces cut to the cells of ``ranges`` (sorted, disjoint) and laid end to end
    (a unimodal depth stays unimodal on any ordered subset), with each range's offset in
    the compressed grid (to map a drawn point back)."""
    c = cut(pieces.starts, pieces.sizes, ranges)
    depths = pieces.depths[c.index]
    if depths.dtype != object:
        depths = depths.astype(np.int64)
    depths = depths - depths.min()
    out = Pieces(c.starts, c.sizes, depths, pieces.epsilon, c.size)
    return out, np.array(c.offsets, dtype=np.int64)


def draw_near(pieces: Pieces, rate: Fraction, grid: DecimalGrid, centre: int, sign: int,
              rng: RandomSource) -> int:
    """One quantile's cell (step 2): the uniform-measure law restricted to the centre's
    :func:`window`, drawn exactly (``interior_point.unimodal_sampler``, made once), each
    draw accepted with probability exp(−DECAY·level) (module docstring)."""
    ranges = window(grid, centre, sign)
    cut, offsets = restrict(pieces, ranges)
    sampler = unimodal_sampler(cut, rate)
    firsts = np.array([a for a, _ in ranges], dtype=np.int64)
    while True:
        y = sampler.sample(rng)
        r = int(np.searchsorted(offsets, y, side="right")) - 1
        i = int(firsts[r] + (y - offsets[r]))
        level = int(levels(grid, centre, sign, np.array([i], dtype=np.int64))[0])
        if level == 0 or rng.bernoulli_exp(DECAY * level):
            return i


@lru_cache(maxsize=8)
def measure_mass(grid: DecimalGrid) -> float:
    """max over centres c of Σ_i μ_c(i) (in cells of weight 1): the effective size of the
    grid in the rank bound (docs/privacy.md §11a, Theorem Q″), in floating point."""
    sizes = np.full(block_count(grid), 2.0 * grid.per_decade)
    sizes[0] = 2.0
    best = 0.0
    all_blocks = np.arange(block_count(grid))
    for c in range(block_count(grid)):
        lv = block_levels(grid, c, all_blocks)
        inside = lv <= WINDOW_DECADES
        best = max(best, float((sizes[inside] * exp_array(-float(DECAY) * lv[inside])).sum()))
    return best


__all__ = [
    "DECAY",
    "SIGN_DECADES",
    "SIGN_PART",
    "WINDOW_DECADES",
    "ZERO_DECADES",
    "Cut",
    "RankFrame",
    "as_depths",
    "block_count",
    "block_levels",
    "block_rows",
    "blocks",
    "centre_pieces",
    "cut",
    "decades",
    "draw_near",
    "level_of",
    "levels",
    "measure_mass",
    "rank_frame",
    "rank_pieces",
    "restrict",
    "sign_pieces",
    "sign_rows",
    "signs",
    "window",
    "window_frame",
    "window_runs",
]
