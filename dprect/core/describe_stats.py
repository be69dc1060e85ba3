"""The sufficient statistics of a describe run (issue #23): what the mechanism of
:mod:`dprect.core.aggregates` reads from the rows of one (group, column), as summable
integer counts and sums, so every engine hands it the same numbers (proofs in
docs/privacy.md §11).

The mechanism needs, per (group, column):

(a) **the centre's histogram**: the number of rows per ``FloatBins(CENTRE_BITS)`` bin
    (:func:`centre_counts`; the depth of every bin follows from it,
    :func:`~dprect.core.tail_bounds.centre_pieces_from_counts`);
(b) **given the released centre c**, the candidates of each side are public
    (:func:`~dprect.core.tail_bounds.candidates`; uncached,
    :func:`~dprect.core.tail_bounds.side_candidates`). Every candidate is an edge of a
    ``FloatBins(SEARCH_BITS)`` bin — a lower candidate L_k the smallest float of its bin
    ℓ_k, an upper one U_k the largest of its bin u_k, on the sides that cross zero too
    (checked by :func:`cell_grid`) — so x < L_k ⟺ bin(x) < ℓ_k and x > U_k ⟺ bin(x) ≥
    u_k + 1. The sorted cuts ℓ_{nL−1} < … < ℓ_0 ≤ u_0 < u_0 + 1 < … < u_{nU−1} + 1 split
    the line into intervals; a row's interval is i(x) = #{cuts ≤ bin(x)} − nL ∈ [−nL, nU]
    (:func:`row_intervals`), and the tail counts are #{x < L_k} = #{i(x) ≤ −k − 1} and
    #{x > U_k} = #{i(x) ≥ k + 1} (:func:`data_tails`): per-interval counts suffice;
(c) **the clamped sum.** Each row is first truncated toward zero to
    ``SIGNIFICANT_BITS`` = 30 significant bits (the low 23 bits of its float64 bit
    pattern cleared): x̃ = ±M·2^(e − 1052) with M < 2^30 an integer and e = max(E, 1)
    from the biased exponent E (:func:`truncated`). This is row-local and public, moves
    x by less than 2^−29·|x|, and keeps x in its ``FloatBins(SEARCH_BITS)`` bin (the bin
    reads the top 1 + 11 + SEARCH_BITS bits of the pattern), so no interval straddles a
    candidate:
    for the released L = L_a, U = U_b, clamp(x̃, L, U) is L on the intervals ≤ −a − 1, U
    on those ≥ b + 1 and x̃ itself in between. Per (interval, exponent e) the statistics
    keep the row count and the exact sum of the signed M (|Σ M| < n·2^30: an int64 below
    2^33 rows per entry, :data:`EXACT_ROWS`; from there on a Python integer, summed in
    two int64 words, :func:`sum_by_key`), so T = Σ clamp(x̃, L, U) − n·p is an exact rational
    (:func:`centred_sum_at`): T = n_low·L + n_high·U + Σ_e S_e·2^(e − 1052) − n·p.

The statistics of disjoint row sets add (keys, counts and sums summed per key), which is
what lets an engine count partitions apart and sum them. (a) and (b)–(c) for every centre
also follow from one set of counts and sums per search bin, made before any draw
(:class:`BinStatistics`): one pass over the rows (the Spark route,
:mod:`dprect.engines.spark.statistics`, which calls these very functions on its executors).
Nothing here draws noise.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property, lru_cache, partial
from typing import Any

import numpy as np

from dprect.core.domains import FloatBins
from dprect.core.randomness import kernels
from dprect.core.records import quick_init
from dprect.core.tail_bounds import (
    CENTRE_BITS,
    SEARCH_BITS,
    CandidateStream,
    bin_edges,
    shared_streams,
    side_candidates,
)

#: significant bits a row keeps for the sum (the leading 1 included): x̃ = ±M·2^s, M < 2^30
SIGNIFICANT_BITS = 30
#: low bit-pattern bits a row's truncation clears: 23
DROPPED_BITS = 53 - SIGNIFICANT_BITS
_ABS_BITS = np.int64((1 << 63) - 1)  # masks on int64 bit patterns
_MANTISSA_BITS = np.int64((1 << 52) - 1)
_NORMAL_BITS = np.int64(1 << 52)  # the smallest normal magnitude's pattern
#: x̃ = M·2^(e − EXPONENT_BIAS) with e = max(E, 1): 1075 − 23
EXPONENT_BIAS = 1075 - DROPPED_BITS
_CENTRE_GRID = FloatBins(CENTRE_BITS)
_SEARCH_GRID = FloatBins(SEARCH_BITS)
#: key packing of (interval, exponent): interval + OFFSET < 2^16, exponent < 2^11
_INTERVAL_OFFSET = 1 << 15
_EXPONENT_BITS = 11
#: the key layout, public for compiled readers (:mod:`dprect.core.release_jit`)
INTERVAL_OFFSET, EXPONENT_BITS = _INTERVAL_OFFSET, _EXPONENT_BITS
_EXPONENT_MASK = (1 << _EXPONENT_BITS) - 1


# -- (a) the centre ---------------------------------------------------------------------------
def centre_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique ``FloatBins(CENTRE_BITS)`` bins of ``values`` (finite) and their
    counts."""
    x = np.asarray(values, dtype=np.float64)
    keys, counts = np.unique(_CENTRE_GRID.encode(x), return_counts=True)
    return keys.astype(np.int64), counts.astype(np.int64)


# -- (b) the intervals ------------------------------------------------------------------------
@dataclass(frozen=True)
class CellGrid:
    """The public candidates of one centre and the cuts between them (module notes)."""

    lower: np.ndarray
    upper: np.ndarray
    cuts: np.ndarray  # sorted bin thresholds: bin(x) ≥ cut

    @property
    def below(self) -> int:
        """nL: the number of lower candidates (the smallest interval is −nL)."""
        return len(self.lower)


def make_cell_grid(centre: float) -> CellGrid:
    """The candidates of both sides of ``centre`` and their ``FloatBins(SEARCH_BITS)``
    cuts (every candidate a bin edge, checked by the tests). Uncached: what the Spark
    kernel calls (:func:`cell_grid` is the cached form)."""
    lower = side_candidates(float(centre), "lower")
    upper = side_candidates(float(centre), "upper")
    lo_bins, up_bins = _SEARCH_GRID.encode(lower), _SEARCH_GRID.encode(upper)
    cuts = np.concatenate([lo_bins[::-1], up_bins + 1]).astype(np.int64)
    if len(cuts) > 1 and not np.all(cuts[1:] > cuts[:-1]):
        raise AssertionError("describe candidates' cuts are not increasing")
    if len(lower) >= _INTERVAL_OFFSET or len(upper) >= _INTERVAL_OFFSET:
        raise AssertionError("too many describe candidates for the interval key")
    cuts.setflags(write=False)
    return CellGrid(lower, upper, cuts)


#: :func:`make_cell_grid` cached (the driver's and the numpy route's; ~270 kB a grid)
cell_grid = lru_cache(maxsize=1024)(make_cell_grid)


@dataclass(frozen=True)
class CellCuts:
    """The cuts one cell's rows are searched in: i(x) = base + #{c in cuts : c ≤ bin(x)}."""

    cuts: np.ndarray
    base: int


def cell_cuts(grid: CellGrid, low_bin: int | None = None, high_bin: int | None = None
              ) -> CellCuts:
    """The cuts of a centre's ``grid``, optionally trimmed to rows whose
    ``FloatBins(SEARCH_BITS)`` bin lies in [``low_bin``, ``high_bin``]: a cut ≤ low_bin
    counts for every such row (it moves into ``base``) and a cut > high_bin for none, so
    every such row gets the same interval as under the full cuts. Trimming only saves
    work (an engine knows each cell's range from the centre histogram)."""
    first = 0 if low_bin is None else int(np.searchsorted(grid.cuts, low_bin, "right"))
    last = len(grid.cuts) if high_bin is None else \
        int(np.searchsorted(grid.cuts, high_bin, "right"))
    return CellCuts(grid.cuts[first:max(first, last)], first - grid.below)


def range_cuts(centre: float, low_bin: int, high_bin: int,
               streams: tuple[CandidateStream, CandidateStream] | None = None) -> CellCuts:
    """:func:`cell_cuts` ``(make_cell_grid(centre), low_bin, high_bin)`` for a non-empty
    range (``low_bin`` ≤ ``high_bin``), without the whole grid: only the candidates up to
    the range are made (:class:`~dprect.core.tail_bounds.CandidateStream`, equal to the
    grid's prefix). A row's interval is i(x) = #{k : u_k + 1 ≤ bin(x)} − #{k : ℓ_k >
    bin(x)}; for bin(x) in the range, the upper cuts u_k + 1 ≤ ``low_bin`` and the lower
    ones ℓ_k ≤ ``low_bin`` count for every row, so base = #{u_k + 1 ≤ low_bin} −
    #{ℓ_k > low_bin}, and the cuts inside (``low_bin``, ``high_bin``] are searched —
    the very base and cuts of :func:`cell_cuts`. Each side is read only as far as the
    range (:meth:`~dprect.core.tail_bounds.CandidateStream.bins_while`: a bisection, then
    one encoding of the points up to it), ~0.1 ms a cell where a whole grid
    (:func:`make_cell_grid`: ~8,500 candidates a side) takes ~2 ms and ~260 kB — an
    engine needs one per (group, column), and their centres are mostly distinct. An empty
    range (a cell without rows) gets no cuts and base 0. ``streams``, (lower, upper)
    streams of ``centre`` (fresh, or shared:
    :func:`~dprect.core.tail_bounds.shared_streams`), are read instead of new ones and
    keep the candidates made (the cell's searches then read them:
    :func:`statistics_of_cells`)."""
    lo, hi = int(low_bin), int(high_bin)
    if hi < lo:
        return CellCuts(np.zeros(0, dtype=np.int64), 0)
    c = float(centre)
    low_side, high_side = (streams if streams is not None
                           else (CandidateStream(c, "lower"), CandidateStream(c, "upper")))
    # where keep starts to fail, in w (the outward point): the upper side's raw = w
    # leaves bins < hi at bin hi's smallest float; the lower side's raw = −w leaves
    # bins > lo at bin lo's largest (only a starting point for the search)
    upper = high_side.bins_while(lambda b: b < hi, _SEARCH_GRID.lower_value(hi)) + 1
    lower = low_side.bins_while(lambda b: b > lo, -_SEARCH_GRID.upper_value(lo))
    base = int(np.count_nonzero(upper <= lo)) - len(lower)
    inside = np.concatenate([lower[lower <= hi][::-1],
                             upper[upper > lo]]).astype(np.int64)
    return CellCuts(inside, base)


def row_intervals(values: np.ndarray, cell: np.ndarray, cuts: Sequence[CellCuts]
                  ) -> np.ndarray:
    """Each row's interval i(x) ∈ [−nL, nU] (module notes) under the cuts of its cell:
    ``cell[r]`` indexes ``cuts`` (:func:`joint_intervals` on :func:`joint_cuts`)."""
    return joint_intervals(values, cell, joint_cuts(cuts))


@dataclass(frozen=True)
class JointCuts:
    """Several cells' cuts in one sorted array, cell i's offset by i·2^(13 + SEARCH_BITS)
    (above any bin), with where each cell's cuts start and each cell's base."""

    joint: np.ndarray
    starts: np.ndarray
    base: np.ndarray


def joint_cuts(cuts: Sequence[CellCuts]) -> JointCuts:
    """The cells' ``cuts`` joined for one search (:func:`joint_intervals`); made once for
    many chunks of rows."""
    span = np.int64(2 * _SEARCH_GRID.size)
    joint = (np.concatenate([c.cuts + i * span for i, c in enumerate(cuts)])
             if cuts else np.zeros(0, dtype=np.int64))
    starts = np.cumsum([0] + [len(c.cuts) for c in cuts])[:-1].astype(np.int64)
    base = np.array([c.base for c in cuts], dtype=np.int64)
    return JointCuts(joint.astype(np.int64), starts, base)


def joint_intervals(values: np.ndarray, cell: np.ndarray, cuts: JointCuts) -> np.ndarray:
    """:func:`row_intervals` on joined cuts: one search over all the cells' cuts at once
    (a row of cell i meets only cell i's cuts below its offset key)."""
    cell = np.asarray(cell, dtype=np.int64)
    pos = joint_positions(values, cell, cuts)
    return (pos - cuts.starts[cell] + cuts.base[cell]).astype(np.int64)


def joint_positions(values: np.ndarray, cell: np.ndarray, cuts: JointCuts) -> np.ndarray:
    """Each row's position in the joined cuts: its cell's start plus the number of that
    cell's cuts at or below its bin (the interval is this minus the start, plus the
    base): :func:`bin_positions` of the rows' ``FloatBins(SEARCH_BITS)`` bins."""
    x = np.asarray(values, dtype=np.float64)
    return bin_positions(_SEARCH_GRID.encode(x), cell, cuts)


def bin_positions(bins: np.ndarray, cell: np.ndarray, cuts: JointCuts) -> np.ndarray:
    """:func:`joint_positions` from ``FloatBins(SEARCH_BITS)`` bins (an entry of a cell
    without cuts is not searched)."""
    bins = np.asarray(bins, dtype=np.int64)
    cell = np.asarray(cell, dtype=np.int64)
    pos = cuts.starts[cell].copy() if len(cell) else np.zeros(0, dtype=np.int64)
    has = np.diff(np.r_[cuts.starts, len(cuts.joint)])[cell] > 0 if len(cell) else cell
    if np.any(has):
        span = np.int64(2 * _SEARCH_GRID.size)
        pos[has] = np.searchsorted(cuts.joint, bins[has] + cell[has] * span, side="right")
    return pos.astype(np.int64)


# -- (c) the truncated values -----------------------------------------------------------------
def truncated(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(e, signed M) with x̃ = M·2^(e − EXPONENT_BIAS): x truncated toward zero to
    ``SIGNIFICANT_BITS`` significant bits (finite values; −0.0 gives M = 0)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    return np.maximum((bits & _ABS_BITS) >> 52, 1), significands(bits)


def significands(bits: np.ndarray) -> np.ndarray:
    """The signed M of :func:`truncated` from the values' bit patterns (int64 views):
    the top ``SIGNIFICANT_BITS`` bits of the significand, the implicit bit included for a
    normal value (biased exponent > 0), negated for a negative one. What a pass computes
    for every row (one value at a time it is M = ±(mantissa | 2^52 if normal) >> DROP)."""
    mag = bits & _ABS_BITS
    m = (mag & _MANTISSA_BITS) >> DROPPED_BITS
    m |= (mag >= _NORMAL_BITS).astype(np.int64) << (52 - DROPPED_BITS)
    np.negative(m, out=m, where=bits < 0)
    return m


def truncated_value(values: np.ndarray) -> np.ndarray:
    """x̃ as floats (exact: at most 30 significant bits), for tests and references."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    mask = ~np.uint64((1 << DROPPED_BITS) - 1)
    return (bits & mask).view(np.float64)


# -- one cell's statistics --------------------------------------------------------------------
def pack(interval: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """One int64 key per (interval, exponent), ordered as the pairs are."""
    return ((np.asarray(interval, dtype=np.int64) + _INTERVAL_OFFSET) << _EXPONENT_BITS) \
        | np.asarray(exponent, dtype=np.int64)


def unpack(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    key = np.asarray(key, dtype=np.int64)
    return (key >> _EXPONENT_BITS) - _INTERVAL_OFFSET, key & ((1 << _EXPONENT_BITS) - 1)


#: the word width a squared significand is cut at (M² = hi·2^30 + lo)
SQUARE_WORD = 30
_SQUARE_MASK = (1 << SQUARE_WORD) - 1
#: a key's significand sum is an exact int64 below this many rows: |Σ M| < rows·2^30 ≤ 2^63
EXACT_ROWS = 1 << (63 - SIGNIFICANT_BITS)
#: the low word of a sum split in two int64 words, s = hi·2^SUM_WORD + lo, 0 ≤ lo < 2^32
SUM_WORD = 32
_LOW_WORD = (1 << SUM_WORD) - 1


def sums_array(values: Any) -> np.ndarray:
    """Significand sums as an array: int64, or Python integers (an object array) when
    some sum lies past int64 — a key of :data:`EXACT_ROWS` rows or more."""
    if isinstance(values, np.ndarray) and values.dtype == object:
        return values
    try:
        return np.asarray(values, dtype=np.int64)
    except OverflowError:
        return np.array([int(v) for v in values], dtype=object)


def sum_words(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sum s as two int64 words (hi, lo), s = hi·2^32 + lo with 0 ≤ lo < 2^32: a
    sum of n rows has |hi| < n/4 + 1, so the words of every sum an int64 count allows fit
    int64, and words add without wrapping (hi's under 2^63 rows, lo's under 2^31 terms)."""
    s = sums_array(sums)
    if s.dtype != object:
        return s >> SUM_WORD, s & _LOW_WORD
    return (np.array([int(v) >> SUM_WORD for v in s], dtype=np.int64),
            np.array([int(v) & _LOW_WORD for v in s], dtype=np.int64))


def words_sum(hi: np.ndarray, lo: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The sums of :func:`sum_words`' words (summed word by word): int64 when every count
    is below :data:`EXACT_ROWS` (then every sum fits, and the int64 arithmetic, exact
    modulo 2^64, gives it), else Python integers."""
    hi, lo = np.asarray(hi, dtype=np.int64), np.asarray(lo, dtype=np.int64)
    if not (np.asarray(counts) >= EXACT_ROWS).any():
        with np.errstate(over="ignore"):
            return (hi << SUM_WORD) + lo
    return np.array([(h << SUM_WORD) + v for h, v in zip(hi.tolist(), lo.tolist(),
                                                           strict=True)], dtype=object)


def sum_by_key(keys: np.ndarray, values: np.ndarray, counts: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted unique int64 ``keys`` with the number of entries (or the sum of ``counts``)
    and the sum of ``values`` under each: the reduction every engine applies. Exact at any
    count: each value is a sum of its count's significands (|value| < count·2^30; a row's
    own M when ``counts`` is None), so a key of fewer than :data:`EXACT_ROWS` rows sums in
    int64 (exact modulo 2^64, and the sum fits); a key with more is summed in two words
    (:func:`sum_words`, under 2^31 entries a key) and its sum is a Python integer
    (:func:`words_sum`; the sums then an object array)."""
    keys = np.asarray(keys, dtype=np.int64)
    values = sums_array(values)
    n = np.ones(len(keys), dtype=np.int64) if counts is None else \
        np.asarray(counts, dtype=np.int64)
    if len(keys) == 0:
        return keys, n, values
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    rows = np.add.reduceat(n[order], starts)
    if values.dtype != object and not (rows >= EXACT_ROWS).any():
        return k[starts], rows, np.add.reduceat(values[order], starts)
    hi, lo = sum_words(values[order])
    return k[starts], rows, words_sum(np.add.reduceat(hi, starts),
                                      np.add.reduceat(lo, starts), rows)


@quick_init
@dataclass(frozen=True)
class CellStatistics:
    """One (group, column) given its centre: per (interval, exponent) key
    (:func:`pack`), sorted and unique, the row count and Σ of the signed truncated
    significands; ``streams``, when the statistics were made from bins, the cell's
    (lower, upper) candidate streams with the candidates up to its rows already made
    (what its searches read next; not part of the statistics' value)."""

    keys: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    streams: tuple[CandidateStream, CandidateStream] | None = field(
        default=None, compare=False, repr=False)
    #: Σ of the squared significands per key (Python integers), when counted (a variance
    #: run's: :mod:`dprect.core.variance`)
    squares: np.ndarray | None = field(default=None, compare=False, repr=False)

    @classmethod
    def empty(cls) -> CellStatistics:
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, z)

    @property
    def rows(self) -> int:
        return int(self.counts.sum())


def cell_statistics(values: np.ndarray, centre: float) -> CellStatistics:
    """The statistics of one cell's finite ``values`` given its released ``centre``."""
    x = np.asarray(values, dtype=np.float64)
    cuts = [cell_cuts(cell_grid(centre))]
    interval = row_intervals(x, np.zeros(len(x), dtype=np.int64), cuts)
    exponent, m = truncated(x)
    return CellStatistics(*sum_by_key(pack(interval, exponent), m))


# -- the one-pass form: per search bin, before any centre ------------------------------------
#: a packed (interval, exponent) key is below 2^27 (:func:`pack`)
PACKED_BITS = 27
_ZERO_BIN = _SEARCH_GRID.size // 2  # H: the bin of +0.0


@quick_init
@dataclass(frozen=True)
class BinStatistics:
    """One cell's rows per ``FloatBins(SEARCH_BITS)`` bin, before any centre: sorted
    unique ``bins``, the row count and Σ of the signed truncated significands M of each
    (:func:`bin_statistics`). A search bin lies inside one binade, so its rows share the
    exponent e (:func:`bin_exponents`), and every candidate is a search-bin edge, so a bin
    lies inside one interval whatever the centre: the cell's :class:`CellStatistics` given
    any centre are these summed by (interval, e) (:func:`statistics_of_cells`), and its
    centre histogram is these coarsened (:func:`centre_counts_from_bins`, as the centre
    grid is coarser). So one pass over the rows serves the centre, both searches and the
    clamped sum (docs/privacy.md §11)."""

    bins: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    #: Σ M² per bin (Python integers, an object array) when counted (a variance run's:
    #: :func:`dprect.core.variance.bin_squares`); they go to (interval, e) as the sums do
    squares: np.ndarray | None = None


def bin_statistics(values: np.ndarray, squares: bool = False) -> BinStatistics:
    """The :class:`BinStatistics` of one cell's finite ``values`` (with the sums of
    squared significands when ``squares``)."""
    x = np.ascontiguousarray(values, dtype=np.float64)
    keys, m = _SEARCH_GRID.encode(x), significands(x.view(np.int64))
    return BinStatistics(*sum_by_key(keys, m), bin_squares(keys, m) if squares else None)


def square_words(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each signed significand M (|M| < 2^30) squared and cut into two int64 words,
    M² = hi·2^30 + lo, 0 ≤ hi, lo < 2^30 (M² < 2^60 fits int64)."""
    sq = np.asarray(m, dtype=np.int64) ** 2
    return sq >> SQUARE_WORD, sq & _SQUARE_MASK


def from_words(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Σ M² = 2^30·Σ hi + Σ lo per entry, as Python integers (an object array): joined in
    int64 where the word sums are non-negative int64 whose largest join,
    2^30·max(hi) + max(lo), is below 2^63 (so none wraps); else, from integer arrays,
    by numpy's object arithmetic on their Python integers (``astype(object)``: each
    element's exact int, shifted and added by Python's int operations — about 4× faster
    than a loop of ``int()`` calls on a cell of a few hundred bins, where a bin of 8 rows
    or more passes 2^63: every query cell of a variance run, docs/results.md §5.3b); else
    one Python integer at a time. The same integers every way."""
    h, v = np.asarray(hi), np.asarray(lo)
    if len(h) != len(v):
        raise ValueError("from_words needs equally long word sums")
    if h.dtype == v.dtype == np.int64 and (not len(h) or (
            int(h.min()) >= 0 and int(v.min()) >= 0
            and (int(h.max()) << SQUARE_WORD) + int(v.max()) < 1 << 63)):
        return ((h << SQUARE_WORD) + v).astype(object)
    if h.dtype.kind in "iu" and v.dtype.kind in "iu" and h.ndim == v.ndim == 1:
        return np.asarray((h.astype(object) << SQUARE_WORD) + v.astype(object), dtype=object)
    return np.array([(int(a) << SQUARE_WORD) + int(b) for a, b in zip(h, v, strict=True)],
                    dtype=object)


def bin_squares(keys: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Σ M² per sorted unique key of ``keys`` (one entry per row, its significand in
    ``m``): the two words summed exactly apart (:func:`~dprect.core.describe_stats.sum_by_key`)
    and joined (:func:`from_words`)."""
    hi, lo = square_words(m)
    _, _, hi_sum = sum_by_key(keys, hi)
    _, _, lo_sum = sum_by_key(keys, lo)
    return from_words(hi_sum, lo_sum)


def exact_by_key(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Σ of ``values`` (Python integers: exact at any size) per sorted unique key of
    ``keys``, in the keys' order (as :func:`sum_by_key` orders them)."""
    keys = np.asarray(keys, dtype=np.int64)
    if not len(keys):
        return np.zeros(0, dtype=object)
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    return np.add.reduceat(np.asarray(values, dtype=object)[order], starts).astype(object)


def bin_exponents(bins: np.ndarray) -> np.ndarray:
    """The exponent e = max(E, 1) of every finite float in each ``FloatBins(SEARCH_BITS)``
    bin (E the biased exponent: bin i ≥ H holds magnitudes whose top 11 + SEARCH_BITS
    pattern bits are i − H, a negative bin i < H those of H − 1 − i; domains.FloatBins), the
    e of :func:`truncated` for every row of the bin."""
    b = np.asarray(bins, dtype=np.int64)
    top = np.where(b >= _ZERO_BIN, b - _ZERO_BIN, _ZERO_BIN - 1 - b)
    return np.maximum(top >> SEARCH_BITS, 1)


def centre_counts_from_bins(bins: np.ndarray, counts: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`centre_counts` from a cell's sorted search bins and their counts: a centre
    bin holds 2^(SEARCH_BITS − CENTRE_BITS) consecutive search bins."""
    shifted = np.asarray(bins, dtype=np.int64) >> (SEARCH_BITS - CENTRE_BITS)
    n = np.asarray(counts, dtype=np.int64)
    if len(shifted) < 2 or not (shifted[1:] >= shifted[:-1]).all():
        keys, _, summed = sum_by_key(shifted, n)
        return keys, summed
    # sorted bins (a cell's, as BinStatistics keeps them): the shifted keys are sorted
    # too, so sum_by_key's stable sort is the identity and its runs are these
    starts = np.flatnonzero(np.concatenate(([True], shifted[1:] != shifted[:-1])))
    return shifted[starts], np.add.reduceat(n, starts)


def joint_statistics_from_bins(cell: np.ndarray, stats: BinStatistics, cuts: JointCuts
                               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Several cells' statistics at once: entry r of ``stats`` belongs to cell ``cell[r]``
    of ``cuts``; returns sorted unique keys cell << PACKED_BITS | pack(interval, e) with
    their counts and sums (each bin's to its (interval, e) under its cell's cuts, what
    :func:`cell_statistics` sums row by row; one search for all cells)."""
    return sum_by_key(joint_keys(cell, stats, cuts), stats.sums, stats.counts)


def joint_keys(cell: np.ndarray, stats: BinStatistics, cuts: JointCuts) -> np.ndarray:
    """Each entry's key cell << PACKED_BITS | pack(interval, e) (unsorted), what
    :func:`joint_statistics_from_bins` reduces by."""
    cell = np.asarray(cell, dtype=np.int64)
    pos = bin_positions(stats.bins, cell, cuts)
    interval = pos - cuts.starts[cell] + cuts.base[cell] if len(cell) else pos
    return (cell << PACKED_BITS) | pack(interval, bin_exponents(stats.bins))


def statistics_of_cells(bins: Mapping[tuple[int, int], BinStatistics],
                        centres: Mapping[tuple[int, int], float], groups: int, columns: int
                        ) -> dict[tuple[int, int], CellStatistics]:
    """Every (group, column)'s :class:`CellStatistics` from its :class:`BinStatistics`
    (``bins``; a cell missing has no rows, and gets none) and its released centre, a
    column at a time: each cell's cuts made once and only over its bins' range
    (:func:`range_cuts`; the column's in one compiled call where the compiled samplers
    are loaded, :func:`_column_cuts`: the same cuts), one search for all the column's
    groups (:func:`joint_statistics_from_bins`)."""
    out: dict[tuple[int, int], CellStatistics] = {}
    if not bins:  # no cell has rows: no statistics, no search (a block of pooled cells)
        return out
    mask = (1 << PACKED_BITS) - 1
    none = BinStatistics(*(np.zeros(0, dtype=np.int64),) * 3)
    # each centre's shared streams looked up once (by value: ±0.0 are looked up each time,
    # equal as keys but not the same centre)
    pairs: dict[float, tuple[CandidateStream, CandidateStream]] = {}

    def streams_of(c: float) -> tuple[CandidateStream, CandidateStream]:
        pair = pairs.get(c) if c else None
        if pair is None:
            pair = shared_streams(c)
            if c:
                pairs[c] = pair
        return pair

    for j in range(columns):
        cells = [bins.get((g, j), none) for g in range(groups)]
        sizes = np.fromiter(map(len, (b.bins for b in cells)), dtype=np.int64, count=groups)
        streams = [streams_of(centres[(g, j)]) if size else None
                   for g, size in enumerate(sizes.tolist())]
        joined = BinStatistics(np.concatenate([b.bins for b in cells]),
                               np.concatenate([b.counts for b in cells]),
                               np.concatenate([b.sums for b in cells]))
        cuts = (joint_cuts([range_cuts(centres[(g, j)], int(b.bins[0]), int(b.bins[-1]),
                                       streams[g])
                            if len(b.bins) else CellCuts(np.zeros(0, dtype=np.int64), 0)
                            for g, b in enumerate(cells)])
                if kernels() is None else
                _column_cuts(cells, streams, _first_last(joined.bins, sizes)))
        cell = np.repeat(np.arange(groups, dtype=np.int64), sizes)
        keys, n, sums = joint_statistics_from_bins(cell, joined, cuts)
        if not len(keys):  # no group of the block has rows in this column
            continue
        squares = None
        if any(b.squares is not None for b in cells if len(b.bins)):
            squares = exact_by_key(joint_keys(cell, joined, cuts), np.concatenate(
                [np.asarray(b.squares, dtype=object) for b in cells if len(b.bins)]))
        g = keys >> PACKED_BITS
        starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
        local = keys & mask  # each cell's keys: views of one array
        for lo, hi, cell_g in zip(starts.tolist(), [*starts[1:].tolist(), len(g)],
                                  g[starts].tolist(), strict=True):
            out[(cell_g, j)] = CellStatistics(
                local[lo:hi], n[lo:hi], sums[lo:hi], streams[cell_g],
                None if squares is None else squares[lo:hi])
    return out


def column_statistics(bins: np.ndarray, counts: np.ndarray, sums: np.ndarray, at: np.ndarray,
                      groups: int, pairs: Sequence[tuple[CandidateStream, CandidateStream]],
                      compiled_entries: bool = True
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`statistics_of_cells` of a block whose cells are column arrays — cell
    c = j·``groups`` + g (columns, then groups, in order: as the decode yields them) holds
    the int64 ``bins``, ``counts`` and ``sums`` at ``at[c]:at[c + 1]`` (none: no rows) —
    and whose column j searches from ONE centre, the centre of ``pairs[j]`` (its shared
    streams: a describe column of anchored or pooled cells): the same cuts, made in the
    same order (:func:`_column_cuts`, a column at a time), and the same statistics, as
    column arrays too: every cell's (interval, e) keys, counts and sums side by side in
    cell order and where each cell's start (``at``), no object a cell. Where the compiled
    samplers are loaded. A column's keys are made and summed cell by cell in one compiled
    call (:func:`dprect.core.block_jit.column_entries`: the same search, exponents and
    integer sums) unless ``compiled_entries`` is false or it declines (a key of
    :data:`EXACT_ROWS` rows or more), then by numpy (:func:`_column_entries`); the
    same arrays either way (tests/core/test_describe_stats.py)."""
    from dprect.core import block_jit  # loaded with the compiled samplers (numba)

    compiled = block_jit.column_entries if compiled_entries and all(
        a.dtype == np.int64 for a in (bins, counts, sums)) else None
    empty = np.zeros(0, dtype=np.int64)
    keys_of, counts_of, sums_of = [empty], [empty], [empty]
    unique = np.zeros(len(pairs) * groups, dtype=np.int64)  # each cell's keys
    for j, pair in enumerate(pairs):
        a, z = int(at[j * groups]), int(at[(j + 1) * groups])
        if a == z:  # no group of the block has rows in this column: no search
            continue
        sizes = np.diff(at[j * groups:(j + 1) * groups + 1])
        joined = BinStatistics(bins[a:z], counts[a:z], sums[a:z])
        has = sizes > 0
        # each cell's next cell of the other kind (rows, none): the runs of one entry
        flips = np.flatnonzero(has[1:] != has[:-1]) + 1
        runs = np.append(flips, groups)[np.searchsorted(flips, np.arange(groups),
                                                        side="right")]
        cuts = _column_cuts((), [pair] * groups if has.all() else
                            [pair if h else None for h in has.tolist()],
                            _first_last(joined.bins, sizes), runs)
        made = None if compiled is None else compiled(
            joined.bins, joined.counts, joined.sums, sizes, cuts.joint, cuts.starts,
            cuts.base, _ZERO_BIN, SEARCH_BITS, 2 * _SEARCH_GRID.size, _INTERVAL_OFFSET,
            _EXPONENT_BITS, PACKED_BITS, EXACT_ROWS)
        if made is None or made[4]:  # the numpy path: one search for the column
            keys, n, summed, cell_unique = _column_entries(joined, sizes, cuts, groups)
        else:
            keys, n, summed, cell_unique = made[:4]
        keys_of.append(keys)
        counts_of.append(n)
        sums_of.append(summed)
        unique[j * groups:(j + 1) * groups] = cell_unique
    starts = np.zeros(len(unique) + 1, dtype=np.int64)
    np.cumsum(unique, out=starts[1:])
    return np.concatenate(keys_of), np.concatenate(counts_of), np.concatenate(sums_of), starts


def _column_entries(joined: BinStatistics, sizes: np.ndarray, cuts: JointCuts, groups: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A column's cells' statistics as :func:`column_statistics` keeps them — every
    cell's (interval, e) keys (cell g's ``sizes[g]`` entries of ``joined``, searched in
    ``cuts``), their counts and sums, in cell order, and each cell's number of keys —
    by numpy (:func:`joint_statistics_from_bins`: one search for the column): what
    :func:`dprect.core.block_jit.column_entries` makes compiled, the same arrays."""
    cell = np.repeat(np.arange(groups, dtype=np.int64), sizes)
    keys, n, summed = joint_statistics_from_bins(cell, joined, cuts)
    unique = np.bincount(keys >> PACKED_BITS, minlength=groups).astype(np.int64)
    return keys & ((1 << PACKED_BITS) - 1), n, summed, unique


def _first_last(joined: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Each cell's (first bin, last bin) — (0, 0) for a cell without bins — from the
    cells' bins side by side (``joined``) and their numbers (``sizes``), at once."""
    out = np.zeros((len(sizes), 2), dtype=np.int64)
    ends = np.cumsum(sizes)
    has = sizes > 0
    out[has, 0] = joined[(ends - sizes)[has]]
    out[has, 1] = joined[ends[has] - 1]
    return out


class _Rows:
    """Row g of a 2-D array as ``array.tolist()[g]`` gives it (the same Python ints or
    floats), made when asked: :func:`_column_cuts` reads a few rows of many."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __getitem__(self, g: int) -> list[Any]:
        row: list[Any] = self.array[g].tolist()
        return row


def _column_cuts(cells: Sequence[BinStatistics],
                 streams: Sequence[tuple[CandidateStream, CandidateStream] | None],
                 first_last: np.ndarray | None = None, runs: np.ndarray | None = None
                 ) -> JointCuts:
    """``joint_cuts([range_cuts(…) for each cell])`` of a column's cells (``streams``
    their centres' shared streams, None for a cell without rows) in one compiled call
    (:func:`dprect.core.block_jit.column_cuts`): each side made as far as
    :func:`range_cuts` makes it (:meth:`~dprect.core.tail_bounds.CandidateStream.reach`),
    the same cuts and bases. Where the compiled samplers are loaded. ``first_last``:
    each cell's (first bin, last bin), (0, 0) without rows, when made already
    (:func:`_first_last`; then ``cells`` is not read). ``runs`` (with ``first_last``):
    for each cell, the next cell whose ``streams`` entry is not the same object (the
    next run's first; n past the last run), when known — a run of cells the loop below
    skips is then skipped at once, and a cell's bins and targets are read only for the
    cells it visits (a column of one pooled centre: a handful), not made into lists
    for all of them; the same reaches in the same order, so the same cuts and streams."""
    from dprect.core import block_jit  # loaded with the compiled samplers (numba)

    n = len(streams)
    # each cell's sides' slots in ``sides`` (−1: no rows), made as lists, then arrays
    lower, upper = [-1] * n, [-1] * n
    slots: dict[int, int] = {}
    sides: list[CandidateStream] = []
    ends: Any  # each cell's (first bin, last bin): a list, or _Rows
    if first_last is None:
        ends = [(int(b.bins[0]), int(b.bins[-1])) if pair is not None else (0, 0)
                for b, pair in zip(cells, streams, strict=True)]
        bins = np.array(ends, dtype=np.int64).reshape(-1, 2)
    else:
        bins = first_last
        ends = bins.tolist() if runs is None else _Rows(bins)
    # the searches' targets, each cell's lower_value(hi) and −upper_value(lo), at once
    both = np.stack([-bin_edges(bins[:, 0], upper=True), bin_edges(bins[:, 1], upper=False)],
                    axis=1)
    targets: Any = both.tolist() if runs is None or first_last is None else _Rows(both)
    # range_cuts' two searches a cell (x < hi on the upper side, x > lo on the lower),
    # without their arrays. A side that has made more than its first candidate only
    # grows along one chain of states (doubling) while its last bin passes the range's
    # end, so such searches one after the other leave it where the one reaching
    # farthest does: they are folded into that one (``farthest``), made at the end
    farthest: dict[int, list[Any]] = {}  # id(side) → [side, farthest end, upper]
    # a run of cells after the first of one pair whose two sides are both folded does
    # nothing but fold its ends and take the same slots: the run's ends are folded at
    # once (the farthest of a max / min, whatever the order) when it ends
    run_pair: Any = None
    run_from = 0

    def end_run(stop: int) -> None:
        if run_pair is None or stop <= run_from:
            return
        low_side, high_side = run_pair
        top = int(bins[run_from:stop, 1].max())
        bottom = int(bins[run_from:stop, 0].min())
        for fold, end, is_upper in ((farthest[id(high_side)], top, True),
                                    (farthest[id(low_side)], bottom, False)):
            if fold[1] is None or (end > fold[1] if is_upper else end < fold[1]):
                fold[1] = end
        lower[run_from:stop] = [lower[run_from - 1]] * (stop - run_from)
        upper[run_from:stop] = [upper[run_from - 1]] * (stop - run_from)

    if len(bins) != n:
        raise ValueError("_column_cuts needs one (first, last) bin a cell")
    jump = None if runs is None or first_last is None else runs.tolist()
    g = -1
    while g + 1 < n:
        g += 1
        pair = streams[g]
        if pair is run_pair:
            if jump is not None:  # the rest of this run too: the same pair
                g = jump[g] - 1
            continue
        end_run(g)
        run_pair = None
        if pair is None:
            continue
        (lo, hi), (lo_at, hi_at) = ends[g], targets[g]
        low_side, high_side = pair
        for side, end, at_end, is_upper in ((high_side, hi, hi_at, True),
                                            (low_side, lo, lo_at, False)):
            fold = farthest.get(id(side))
            if fold is not None:
                if fold[1] is None or (end > fold[1] if is_upper else end < fold[1]):
                    fold[1] = end
                continue
            side.reach(partial(operator.gt if is_upper else operator.lt, end), at_end)
            if side.count != 1:  # past its first candidate: later searches fold
                farthest[id(side)] = [side, None, is_upper]
        for side, out in ((low_side, lower), (high_side, upper)):
            slot = slots.get(id(side))
            if slot is None:
                slot = slots[id(side)] = len(sides)
                sides.append(side)
            out[g] = slot
        if id(low_side) in farthest and id(high_side) in farthest:
            run_pair, run_from = pair, g + 1
    end_run(n)
    for side, end, is_upper in farthest.values():
        if end is not None:
            side.reach(partial(operator.gt if is_upper else operator.lt, end))
    made = [s.made() for s in sides]  # after every reach: each as made at last
    at = np.zeros(len(made) + 1, dtype=np.int64)
    np.cumsum([len(m) for m in made], out=at[1:])
    joint, starts, base = block_jit.column_cuts(
        np.concatenate([np.zeros(0, dtype=np.int64), *made]), at,
        np.array(lower, dtype=np.int64), np.array(upper, dtype=np.int64),
        bins[:, 0].copy(), bins[:, 1].copy(), 2 * _SEARCH_GRID.size)
    return JointCuts(joint, starts, base)


def hist_rows(hists: Sequence[Sequence[tuple[np.ndarray, np.ndarray]]]) -> list[int]:
    """Each histogram's rows (the sum of its counts), groups then columns in order, in
    one pass over the joined counts (exact: int64 sums of row counts)."""
    flat = [counts for row in hists for _, counts in row]
    sizes = np.array([len(c) for c in flat], dtype=np.int64)
    ends = np.cumsum(sizes)
    total = np.concatenate(([0], np.cumsum(np.concatenate(
        [np.zeros(0, dtype=np.int64), *flat]).astype(np.int64, copy=False))))
    return (total[ends] - total[ends - sizes]).tolist()


def merge_histograms(parts: Iterable[tuple[np.ndarray, np.ndarray]]
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The sum of centre-grid histograms (sorted keys, counts): the histogram of the union
    of their rows (exact integer counts, sorted keys, no zero count). Keys within a
    span of a few times their number are summed in one compiled pass where the compiled
    samplers are loaded (:func:`dprect.core.block_jit.dense_histogram`), any others by
    one stable sort; the same keys and int64 sums (tests/core/test_block_jit.py)."""
    pairs = list(parts)
    keys = np.concatenate([np.zeros(0, dtype=np.int64)]
                          + [np.asarray(k, dtype=np.int64) for k, _ in pairs])
    counts = np.concatenate([np.zeros(0, dtype=np.int64)]
                            + [np.asarray(c, dtype=np.int64) for _, c in pairs])
    if not len(keys):
        return keys, counts
    low, high = int(keys.min()), int(keys.max())
    if kernels() is not None and high - low < 4 * len(keys) + 4096:
        # keys within a span of the entries' order (a block's pooled column: a few
        # thousand centre bins): summed in one compiled pass over a dense array
        from dprect.core import block_jit  # loaded with the compiled samplers (numba)

        made: tuple[np.ndarray, np.ndarray] = block_jit.dense_histogram(
            keys, counts, low, high - low + 1)
        return made
    # the keys in order (one stable sort), each run of equal keys summed at once: the
    # sorted unique keys and int64 sums of np.unique with np.add.at, without add.at's
    # element-by-element scatter (~15,000 entries a pooled column of a block)
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    summed = np.add.reduceat(counts[order], starts)
    keep = summed > 0
    return k[starts][keep], summed[keep]


@dataclass(frozen=True)
class BinBlock:
    """A block of consecutive public groups for :func:`dprect.core.aggregates.describe_block`
    from one pass's :class:`BinStatistics`: ``bins[(group, column)]`` with groups local to
    the block (a cell missing has no rows), ``groups`` and ``columns`` its shape. Small
    enough to send to a worker process (numpy arrays pickle as bytes)."""

    bins: dict[tuple[int, int], BinStatistics]
    groups: int
    columns: int

    def __getstate__(self) -> dict[str, Any]:
        """What a worker process is sent: the cells' arrays joined into one int64 array
        each (with their lengths), not one pickled array per cell — a 10^5-group run's
        blocks pickled in ~6 s and 130 MB, one array per cell, for arrays of a few
        entries (issue #42). Cells with sums past int64 or with squares (object arrays)
        are sent as they are."""
        flat = all(b.squares is None and b.sums.dtype == np.int64
                   and b.bins.dtype == np.int64 and b.counts.dtype == np.int64
                   for b in self.bins.values())
        if not flat or not self.bins:
            return {"bins": self.bins, "groups": self.groups, "columns": self.columns}
        cells = list(self.bins.values())
        return {"keys": np.array(list(self.bins), dtype=np.int64).reshape(-1, 2),
                "lengths": np.array([len(b.bins) for b in cells], dtype=np.int64),
                "joined": tuple(np.concatenate([getattr(b, name) for b in cells])
                                for name in ("bins", "counts", "sums")),
                "groups": self.groups, "columns": self.columns}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """The block :meth:`__getstate__` sent: each cell's arrays views of the joined
        ones, the same values, dtypes and cell order."""
        bins = state.get("bins")
        if bins is None:
            cuts = np.concatenate(([0], np.cumsum(state["lengths"]))).tolist()
            joined = state["joined"]
            bins = {(g, j): BinStatistics(*(a[lo:hi] for a in joined))
                    for (g, j), lo, hi in zip(state["keys"].tolist(), cuts[:-1], cuts[1:],
                                              strict=True)}
        object.__setattr__(self, "bins", bins)
        object.__setattr__(self, "groups", state["groups"])
        object.__setattr__(self, "columns", state["columns"])

    @cached_property
    def _histograms(self) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        return self.centre_histograms()

    def cell_rows(self) -> list[int]:
        """Every cell's rows, groups then columns in order (:func:`hist_rows` of
        :meth:`centre_histograms`, made once and kept for :meth:`centre_histogram`)."""
        return hist_rows(self._histograms)

    def pooled_histograms(self, groups: Mapping[int, Sequence[int]]
                          ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Per column j of ``groups``, the sum (:func:`merge_histograms`) of the centre
        histograms of its cells of the groups ``groups[j]``."""
        return {j: merge_histograms([self._histograms[g][j] for g in gs])
                for j, gs in groups.items()}

    def centre_histogram(self, group: int, column: int) -> tuple[np.ndarray, np.ndarray]:
        made = self.__dict__.get("_histograms")  # the block's, once made: the same arrays
        if made is not None:
            return made[group][column]
        b = self.bins.get((group, column))
        if b is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return centre_counts_from_bins(b.bins, b.counts)

    def centre_histograms(self) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        """Every cell's :meth:`centre_histogram`, ``[group][column]``, in one reduction
        over the block: the cells' search bins shifted to centre bins side by side, a run
        of equal centre bins within a cell summed — the very keys and counts, cell by
        cell, of :func:`centre_counts_from_bins` on sorted bins (a block holding a cell
        whose bins are not sorted is reduced cell by cell)."""
        names = [(g, j) for g in range(self.groups) for j in range(self.columns)]
        cells = [self.bins.get(k) for k in names]
        present = [b for b in cells if b is not None and len(b.bins)]
        if not present:
            return [[self.centre_histogram(g, j) for j in range(self.columns)]
                    for g in range(self.groups)]
        sizes = [len(b.bins) for b in present]
        shifted = np.concatenate([np.asarray(b.bins, dtype=np.int64) for b in present]) \
            >> (SEARCH_BITS - CENTRE_BITS)
        counts = np.concatenate([np.asarray(b.counts, dtype=np.int64) for b in present])
        first = np.zeros(len(shifted), dtype=bool)
        first[np.cumsum([0, *sizes[:-1]])] = True  # each cell's first entry
        if (shifted[1:] < shifted[:-1])[~first[1:]].any():  # an unsorted cell
            return [[self.centre_histogram(g, j) for j in range(self.columns)]
                    for g in range(self.groups)]
        starts = np.flatnonzero(first | np.concatenate(([True], shifted[1:] != shifted[:-1])))
        keys, summed = shifted[starts], np.add.reduceat(counts, starts)
        # present cell p's runs: keys[bounds[p]:bounds[p + 1]] (each cell's first entry
        # opens a run)
        bounds = [*np.flatnonzero(first[starts]).tolist(), len(starts)]
        empty = np.zeros(0, dtype=np.int64)
        out: list[tuple[np.ndarray, np.ndarray]] = []
        p = 0
        for b in cells:
            if b is None or not len(b.bins):
                out.append((empty, empty))
                continue
            lo, hi = bounds[p], bounds[p + 1]
            out.append((keys[lo:hi], summed[lo:hi]))
            p += 1
        return [out[g * self.columns:(g + 1) * self.columns] for g in range(self.groups)]

    def statistics(self, centres: Sequence[Sequence[float]]) -> list[list[CellStatistics]]:
        flat = {(g, j): c for g, row in enumerate(centres) for j, c in enumerate(row)}
        stats = statistics_of_cells(self.bins, flat, self.groups, self.columns)
        empty = CellStatistics.empty()
        return [[stats.get((g, j), empty) for j in range(self.columns)]
                for g in range(self.groups)]

    def statistics_at(self, centres: Mapping[tuple[int, int], float]
                      ) -> dict[tuple[int, int], CellStatistics]:
        """The statistics of the cells named in ``centres`` (``(group, column)`` → its
        centre) only: a describe run's anchored cells, drawn after the others."""
        own = {k: self.bins[k] for k in centres if k in self.bins}
        stats = statistics_of_cells(own, centres, self.groups, self.columns)
        empty = CellStatistics.empty()
        return {k: stats.get(k, empty) for k in centres}


def bin_blocks(bins: Mapping[tuple[int, int], BinStatistics], columns: int,
               blocks: Sequence[range]) -> list[BinBlock]:
    """``bins`` (groups global) cut into one :class:`BinBlock` per range of groups."""
    if any(a.stop > b.start for a, b in itertools.pairwise(blocks)):  # not ascending
        return [BinBlock({(g - r.start, j): b for (g, j), b in bins.items() if g in r},
                         len(r), columns) for r in blocks]
    starts = [r.start for r in blocks]
    parts: list[dict[tuple[int, int], BinStatistics]] = [{} for _ in blocks]
    for (g, j), b in bins.items():  # one pass, whatever the number of blocks
        i = bisect.bisect_right(starts, g) - 1
        if i >= 0 and g in blocks[i]:
            parts[i][(g - starts[i], j)] = b
    return [BinBlock(own, len(r), columns) for own, r in zip(parts, blocks, strict=True)]


# -- what the mechanism reads -----------------------------------------------------------------
def joined_tails(cells: Sequence[CellStatistics]
                 ) -> tuple[list[tuple[np.ndarray, np.ndarray]],
                            tuple[np.ndarray, np.ndarray]] | None:
    """:func:`data_tails` of every cell at once, in one compiled call where the samplers
    run compiled (:func:`dprect.core.block_jit.block_tails`: the same counts): each
    cell's (lower, upper) tails — views of one array — and (that array, where each
    cell's tails start) as :func:`dprect.core.cell_draws.draw_cells` reads them; None
    without the compiled samplers, or for cells whose keys or counts are not int64."""
    if kernels() is None or not all(c.keys.dtype == np.int64 and c.counts.dtype == np.int64
                                    for c in cells):
        return None
    at = np.zeros(len(cells) + 1, dtype=np.int64)
    np.cumsum([len(c.keys) for c in cells], out=at[1:])
    empty = np.zeros(0, dtype=np.int64)
    tails, tail_at = joined_tails_of(np.concatenate([empty] + [c.keys for c in cells]),
                                     np.concatenate([empty] + [c.counts for c in cells]), at)
    views = [(tails[a:b], tails[b:e]) for a, b, e in tail_at.tolist()]
    return views, (tails, tail_at)


def joined_tails_of(keys: np.ndarray, counts: np.ndarray, at: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`data_tails` of cells side by side — cell c's int64 ``keys`` and ``counts``
    at ``at[c]:at[c + 1]`` — in one compiled call
    (:func:`dprect.core.block_jit.block_tails`): every cell's tails in one array and,
    per cell, where its lower tails start, its upper tails start and they end. Where the
    compiled samplers are loaded."""
    from dprect.core import block_jit  # loaded with the compiled samplers (numba)

    tails, tail_at = block_jit.block_tails(keys, counts, at, _EXPONENT_BITS,
                                           _INTERVAL_OFFSET)
    return tails, tail_at


def data_tails(stats: CellStatistics) -> tuple[np.ndarray, np.ndarray]:
    """The lower and the upper side's tail counts (module notes, (b)) at the candidates
    k = 0 … D − 1 up to the farthest interval holding rows on that side, from the
    statistics alone: every tail count beyond is 0, so no grid is needed (the side's draw,
    :func:`~dprect.core.step_exponential.draw_step`, reads the candidates past them from a
    lazy :class:`~dprect.core.tail_bounds.CandidateStream` only when it draws one). Lower:
    #{i ≤ −k − 1}; upper: #{i ≥ k + 1}. Compiled where the samplers are
    (:func:`dprect.core.random_jit.data_tails`: the same counts)."""
    jit = kernels()
    if jit is not None and stats.keys.dtype == np.int64 and stats.counts.dtype == np.int64:
        lower, upper = jit.data_tails(stats.keys, stats.counts, _EXPONENT_BITS,
                                      _INTERVAL_OFFSET)
        return lower, upper
    if len(stats.keys) <= _SCALAR_ENTRIES:
        tails = _data_tails_scalar(stats.keys.tolist(), stats.counts.tolist())
        if tails is not None:
            return tails
    interval = (stats.keys >> _EXPONENT_BITS) - _INTERVAL_OFFSET
    counts = stats.counts
    # the keys are sorted, so the intervals ascend: the lower side's reach −i − 1 read
    # backwards and the upper side's i − 1 ascend; tail(k) = Σ counts of reach ≥ k is a
    # suffix sum at the first entry reaching k (one bisection per k, int64 throughout)
    split_low = int(np.searchsorted(interval, 0, side="left"))  # entries with i ≤ −1
    split_high = int(np.searchsorted(interval, 1, side="left"))  # entries with i ≥ 1
    out = []
    for reach, c in ((-interval[:split_low][::-1] - 1, counts[:split_low][::-1]),
                     (interval[split_high:] - 1, counts[split_high:])):
        if not len(reach):
            out.append(np.zeros(0, dtype=np.int64))
            continue
        suffix = np.zeros(len(c) + 1, dtype=np.int64)
        suffix[:-1] = np.cumsum(c[::-1])[::-1]
        first = np.searchsorted(reach, np.arange(int(reach[-1]) + 1), side="left")
        out.append(suffix[first])
    return out[0], out[1]


#: a cell of at most this many statistics entries, reaching at most _SCALAR_REACH
#: candidates out, has its tails made on Python integers (the same counts; numpy's calls
#: cost more than the sums on a small cell)
_SCALAR_ENTRIES = 64
_SCALAR_REACH = 256


def _data_tails_scalar(keys: list[int], counts: list[int]
                       ) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`data_tails` of a small cell on Python integers: per side, the entries'
    reach (−i − 1 below, i − 1 above) and tail(k) = Σ counts of reach ≥ k for k = 0 …
    the farthest reach. None when a side reaches past ``_SCALAR_REACH``."""
    lower: dict[int, int] = {}
    upper: dict[int, int] = {}
    for key, c in zip(keys, counts, strict=True):
        i = (key >> _EXPONENT_BITS) - _INTERVAL_OFFSET
        if i <= -1:
            lower[-i - 1] = lower.get(-i - 1, 0) + c
        elif i >= 1:
            upper[i - 1] = upper.get(i - 1, 0) + c
    out = []
    for side in (lower, upper):
        if not side:
            out.append(np.zeros(0, dtype=np.int64))
            continue
        far = max(side)
        if far > _SCALAR_REACH:
            return None
        tails = [0] * (far + 1)
        running = 0
        for k in range(far, -1, -1):
            running += side.get(k, 0)
            tails[k] = running
        out.append(np.array(tails, dtype=np.int64))
    return out[0], out[1]


def centred_sum_at(stats: CellStatistics, lower_step: int, upper_step: int, lower: float,
                   upper: float, pivot: float) -> Fraction:
    """T = Σ clamp(x̃, L, U) − n·p exactly (module notes, (c)), for L = the lower
    candidate a = ``lower_step`` and U = the upper candidate b = ``upper_step``, given by
    their values ``lower`` = L_a and ``upper`` = U_b."""
    acc, base = centred_sum_dyadic(stats, lower_step, upper_step, lower, upper, pivot)
    return Fraction(acc, 1 << -base) if base < 0 else Fraction(acc << base)


#: below this many rows in a cell, Σ of the significands of one exponent fits an int64
#: (|M| < 2^30 a row, so |Σ M| < 2^62)
_INT64_ROWS = 1 << 32
#: from this many entries between the bounds on, they are summed per exponent in numpy
#: first (fewer are cheaper one by one)
_REDUCE_ENTRIES = 48


def centred_sum_dyadic(stats: CellStatistics, lower_step: int, upper_step: int,
                       lower: float, upper: float, pivot: float) -> tuple[int, int]:
    """:func:`centred_sum_at` as (acc, base) with T = acc·2^base exactly: every term is a
    dyadic rational m·2^e, summed as integers over the least exponent. The rows between
    the bounds are first summed per exponent in int64 when there are many (exact below
    2^32 rows in the cell), so the Python integers touch one term per exponent, not one
    per statistics entry."""
    if len(stats.keys) <= _SCALAR_ENTRIES:
        return _centred_sum_scalar(stats, lower_step, upper_step, lower, upper, pivot)
    interval, exponent = unpack(stats.keys)
    low = interval <= -lower_step - 1
    high = interval >= upper_step + 1
    mid = ~(low | high)
    terms = [(m * int(stats.counts[low].sum()), e) for m, e in (dyadic(lower),)]
    terms += [(m * int(stats.counts[high].sum()), e) for m, e in (dyadic(upper),)]
    terms += [(-m * stats.rows, e) for m, e in (dyadic(pivot),)]
    if mid.any():
        e_mid, s_mid = exponent[mid], stats.sums[mid]
        if len(e_mid) > _REDUCE_ENTRIES and stats.rows < _INT64_ROWS:
            order = np.argsort(e_mid, kind="stable")
            e_sorted = e_mid[order]
            starts = np.flatnonzero(np.concatenate(([True], e_sorted[1:] != e_sorted[:-1])))
            e_mid = e_sorted[starts]
            s_mid = np.add.reduceat(s_mid[order], starts)
        terms += [(int(si), int(ei) - EXPONENT_BIAS)
                  for ei, si in zip(e_mid.tolist(), s_mid.tolist(), strict=True)]
    base = min(e for _, e in terms)
    return sum(m << (e - base) for m, e in terms), base


def _centred_sum_scalar(stats: CellStatistics, lower_step: int, upper_step: int,
                        lower: float, upper: float, pivot: float) -> tuple[int, int]:
    """:func:`centred_sum_dyadic` of a small cell on Python integers, entry by entry:
    the same exact sum over the same least exponent (the terms of L, U and p always
    count towards it, as there)."""
    below, above, rows = -lower_step - 1, upper_step + 1, 0
    n_low = n_high = 0
    mid: list[tuple[int, int]] = []
    for key, n, sm in zip(stats.keys.tolist(), stats.counts.tolist(), stats.sums.tolist(),
                          strict=True):
        rows += n
        i = (key >> _EXPONENT_BITS) - _INTERVAL_OFFSET
        if i <= below:
            n_low += n
        elif i >= above:
            n_high += n
        else:
            mid.append((int(sm), (key & _EXPONENT_MASK) - EXPONENT_BIAS))
    (lm, le), (um, ue), (pm, pe) = dyadic(lower), dyadic(upper), dyadic(pivot)
    terms = [(lm * n_low, le), (um * n_high, ue), (-pm * rows, pe), *mid]
    base = min(e for _, e in terms)
    return sum(m << (e - base) for m, e in terms), base


def dyadic(x: float) -> tuple[int, int]:
    """(m, e) with x = m·2^e exactly (a finite float)."""
    n, d = float(x).as_integer_ratio()  # d is a power of two
    return n, 1 - d.bit_length()


__all__ = ["DROPPED_BITS", "EXACT_ROWS", "EXPONENT_BIAS", "EXPONENT_BITS", "INTERVAL_OFFSET",
           "SIGNIFICANT_BITS", "SQUARE_WORD",
           "SUM_WORD", "BinBlock", "CellCuts", "CellGrid", "CellStatistics", "JointCuts",
           "bin_blocks", "bin_squares", "cell_cuts", "cell_grid", "cell_statistics",
           "centre_counts", "centred_sum_at", "centred_sum_dyadic",
           "column_statistics", "data_tails", "dyadic", "exact_by_key",
           "from_words", "hist_rows", "joined_tails_of", "joint_cuts",
           "joint_intervals", "joint_keys", "joint_positions", "make_cell_grid",
           "merge_histograms",
           "pack", "range_cuts", "row_intervals", "square_words",
           "sum_by_key", "sum_words", "sums_array", "truncated", "truncated_value", "unpack",
           "words_sum"]
