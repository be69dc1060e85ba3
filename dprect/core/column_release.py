"""Describe's round two of a block as column arrays (issue #42): the block's statistics,
draws and release kept as one numpy array per field from the decode to the released
cells, no Python object a cell on the way.

**What it draws.** :func:`finish_columns` is :func:`~dprect.core.aggregates.finish_small`
of a block where EVERY cell was left to round two and every column takes the pooled
split around its column's pooled centre (:func:`~dprect.core.aggregates.column_centres`,
a ``(centre, True)`` anchor): the many-small-groups run, ~10 rows a group, where no group
reaches a centre of its own (docs/results.md §5.7b). Every cell of column j then searches
from the one centre c_j — one pair of shared candidate streams a column
(:func:`~dprect.core.tail_bounds.shared_streams`) — under the one split
``plan.pooled``, so the block is a handful of column-wide constants and, per cell, its
statistics' entries, its group's stream and its released count. It returns None (and
draws nothing) for any other block, and for one the arrays cannot carry exactly (no
compiled samplers, sources not joinable, a sum of squares, counts past int64, non-int64
statistics — the block's bins, or the sums given the centres, where a key holds
:data:`~dprect.core.describe_stats.EXACT_ROWS` rows or more): the caller then runs
``finish_small``.

**The same release, bit for bit.** Cells are taken column by column (cell c = j·m + g,
m groups: the decode's order) where ``finish_small`` takes them group by group. Each
group draws from its own stream (a seeded run) and a group's cells are still drawn in
its columns' order — the lower side, the upper side, the sum noise of column 0, then of
column 1, … (docs/privacy.md §11, "Draw order") — so every stream gives each cell the
same bits; groups without a seed share one OS source, whose draws are never reproduced
(the law is the same in any order). The statistics given the centres are
:func:`~dprect.core.describe_stats.statistics_of_cells`' (the same cuts, made column by
column in the same order: :func:`~dprect.core.describe_stats.column_statistics`), the
draws :func:`~dprect.core.cell_draws.draw_cells`' (the same compiled kernel:
:func:`~dprect.core.cell_draws.draw_cell_arrays`), the release
:func:`~dprect.core.aggregates._released_many`'s (the same compiled
:func:`~dprect.core.release_jit.release_cells` on the same arrays, and a cell it leaves to
Python released by ``_released`` from that cell's own objects, made for it alone).
Checked by ``benchmarks/describe_block_draws.py digest`` (every released value of seeded
runs) and tests/core/test_column_release.py (equal to ``finish_small`` cell for cell).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from dprect.core.aggregates import (
    _RELEASE_LIMIT,
    BlockDraws,
    Cell,
    DescribePlan,
    _bounds_and_pivots,
    _noise_scales,
    _released,
    _side_bins,
    _split_of,
    collector_paused,
    grouped_side_bins,
    release_rows_of,
    released_cells,
)
from dprect.core.cell_draws import CellDraw, draw_cell_arrays
from dprect.core.column_block import ColumnBins
from dprect.core.describe_stats import CellStatistics, column_statistics, joined_tails_of
from dprect.core.randomness import JointStreams, RandomSource, kernels
from dprect.core.tail_bounds import CandidateStream, shared_streams


class _Cells:
    """Cell i's :class:`~dprect.core.cell_draws.CellDraw` made when asked (a draw or a
    release left to Python, or a side's reach checked past its candidates made), from
    the block's arrays."""

    def __init__(self, tails: np.ndarray, tail_at: np.ndarray,
                 pairs: Sequence[tuple[CandidateStream, CandidateStream]], groups: int,
                 kind: CellDraw) -> None:
        self.tails, self.tail_at, self.pairs, self.groups = tails, tail_at, pairs, groups
        self.kind = kind

    def __len__(self) -> int:
        return len(self.tail_at)

    def __getitem__(self, i: int) -> CellDraw:
        a, b, e = self.tail_at[i].tolist()
        lower, upper = self.pairs[i // self.groups]
        return CellDraw(self.tails[a:b], self.tails[b:e], lower, upper, self.kind.tier,
                        self.kind.noises, i % self.groups)


def _fits(values: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """``values`` as int64 (0 where one does not fit) and whether each fits."""
    try:
        return np.array(values, dtype=np.int64), np.ones(len(values), dtype=bool)
    except OverflowError:
        ok = np.array([-(1 << 63) <= v < (1 << 63) for v in values], dtype=bool)
        return np.array([v if fit else 0 for v, fit in zip(values, ok.tolist(), strict=True)],
                        dtype=np.int64), ok


def pooled_block(plan: DescribePlan, anchors: Sequence[tuple[float, bool]],
                 draws: BlockDraws, columns: int) -> bool:
    """Whether :func:`finish_columns` may draw a block of ``columns`` columns with round
    one's ``draws``: every check of it that does not read the block's statistics — the
    compiled samplers, the plan (a pooled split with ONE noise, the sum's: not a
    bounds-alone or count-only plan, no sum of squares), every anchor pooled, every cell
    left to round two with its released count. Public and block-independent but for
    ``draws``' shape, so a caller asks it BEFORE it decodes the block as column arrays
    (:meth:`~dprect.engines.spark.executor_draws.Blocks.column_bins`): a block it refuses
    is decoded once, for :func:`~dprect.core.aggregates.finish_small`, not twice."""
    tier = plan.pooled
    return not (kernels() is None or tier is None or not plan.statistics
                or plan.squares_scale is not None or len(anchors) != columns
                or not all(pooled for _, pooled in anchors)
                or any(map(any, draws.cells))  # a cell drawn in round one (a Cell is true)
                or any(None in row for row in draws.counts)
                or len(_noise_scales(plan, tier)) != 1)


def _pair_bins(pairs: Sequence[tuple[CandidateStream, CandidateStream]], column: np.ndarray,
               low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lower and upper sides' bins of cells of ``column``s (each column's cells
    search from its one pair of streams, ``pairs[j]``) at their ``low`` and ``high``
    steps: :func:`~dprect.core.aggregates._side_bins` of those cells' streams — the same
    bins, each stream grown as there (once, to its cells' farthest step; columns of one
    centre share their streams) — the cells' streams known without telling 16,000 of
    them apart by identity (:func:`~dprect.core.aggregates.grouped_side_bins`); where
    ``_side_bins`` reads cell by cell (a negative step, or more than one stream for
    every four cells) it is called itself."""
    out = []
    used = np.unique(column).tolist()
    for side, steps in ((0, low), (1, high)):
        # the distinct streams of the columns read (a few), numbered in order
        number: dict[int, int] = {}
        streams: list[CandidateStream] = []
        of = np.zeros(len(pairs), dtype=np.int64)
        for j in used:
            stream = pairs[j][side]
            of[j] = number.setdefault(id(stream), len(streams))
            if of[j] == len(streams):
                streams.append(stream)
        if 4 * len(streams) > len(steps) or (len(steps) and int(steps.min()) < 0):
            out.append(_side_bins([pairs[j][side] for j in column.tolist()], steps))
        else:
            out.append(grouped_side_bins(streams, of[column], steps))
    return out[0], out[1]


@collector_paused
def finish_columns(plan: DescribePlan, anchors: Sequence[tuple[float, bool]],
                   block: ColumnBins, draws: BlockDraws, *, pooled: bool | None = None
                   ) -> ReleasedColumns | None:
    """:func:`~dprect.core.aggregates.finish_small` of a block whose every cell takes the
    pooled split (module notes), as column arrays: the same cells
    (:meth:`ReleasedColumns.rows`), or None — nothing drawn — where the block is not such
    a block (:func:`pooled_block`) or the arrays cannot carry it. ``pooled``: the
    caller's own answer of :func:`pooled_block` for this block and ``draws`` (it asks
    before the decode), passed down so that it is asked once; None: asked here."""
    m, columns, tier = block.groups, block.columns, plan.pooled
    if pooled is None:
        pooled = pooled_block(plan, anchors, draws, columns)
    if (not pooled or len(draws.cells) != m
            or not block.bins.dtype == block.counts.dtype == block.sums.dtype == np.int64):
        return None
    assert tier is not None  # pooled_block
    scales = _noise_scales(plan, tier)
    try:  # the released counts, cell c = j·m + g
        noisy = np.array(draws.counts, dtype=np.int64).reshape(m, columns).T.ravel()
    except OverflowError:
        return None
    # every group has cells left (all of them): its second stream, in group order
    sources = RandomSource.streams(draws.resume)
    if not JointStreams.possible(sources):
        return None
    from dprect.core import release_jit  # loaded with the compiled samplers (numba)

    n = m * columns
    centres = [float(c) for c, _ in anchors]
    pairs = [shared_streams(c) for c in centres]
    keys, counts, sums, at = column_statistics(block.bins, block.counts, block.sums,
                                               block.at, m, pairs)
    if sums.dtype != np.int64:  # a key of EXACT_ROWS rows or more: its sum a Python int
        return None
    tails, tail_at = joined_tails_of(keys, counts, at)
    made = np.array([(lo.count, hi.count) for lo, hi in pairs], dtype=np.int64)
    kind = CellDraw(tails[0:0], tails[0:0], pairs[0][0], pairs[0][1], tier, scales, 0)
    cells = _Cells(tails, tail_at, pairs, m, kind)
    steps, noise_list = draw_cell_arrays(
        cast(Sequence[CellDraw], cells), sources, [kind], np.zeros(n, dtype=np.int64),
        np.tile(np.arange(m, dtype=np.int64), columns), (tails, tail_at),
        np.repeat(made, m, axis=0))
    # the release's arrays (_release_columns' for these cells)
    k_bits, eps_s, share = _split_of(plan, tier)
    noise, fit = _fits(noise_list)
    limit = _RELEASE_LIMIT
    good = (fit & (-limit < noise) & (noise < limit) & (-limit < noisy) & (noisy < limit)
            & (k_bits >= 0))
    sizes = np.diff(at)
    if good.all():
        r_keys, r_counts, r_sums, r_at = keys, counts, sums, at
    else:
        keep = np.repeat(good, sizes)
        r_keys, r_counts, r_sums = keys[keep], counts[keep], sums[keep]
        r_at = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.where(good, sizes, 0), out=r_at[1:])
    ints, given, sides = release_rows_of(
        good, steps, noisy, noise, np.full(n, k_bits, dtype=np.int64),
        np.repeat(np.array(centres, dtype=np.float64), m), np.full(n, share),
        np.full(n, eps_s), lambda ok, low, high: _pair_bins(pairs, ok // m, low, high))
    f = _bounds_and_pivots(plan, sides, given, ints[:, 4] >= 0)
    status, values = release_jit.release_cells(
        r_keys, r_counts, r_sums, r_at, ints[:, 0].copy(), ints[:, 1].copy(), f,
        ints[:, 2].copy(), ints[:, 3].copy(), given[:, 2].copy(), ints[:, 4].copy(),
        plan.count_epsilon, plan.interval_level, "sum" in plan.statistics,
        "mean" in plan.statistics)
    python: dict[int, Cell] = {}
    for i in np.flatnonzero(status != release_jit.DONE).tolist():  # left to Python
        a, z = int(at[i]), int(at[i + 1])
        stats = CellStatistics(keys[a:z], counts[a:z], sums[a:z],
                               pairs[i // m] if z > a else None)
        python[i] = _released(plan, cells[i], centres[i // m], stats,
                              draws.counts[i % m][i // m], int(steps[i, 0]), int(steps[i, 1]),
                              [noise_list[i]])[0]
    return ReleasedColumns(tuple(plan.statistics), m, columns, f[:, :2].copy(),
                           ints[:, 2].copy(), values, python)


@dataclass(frozen=True)
class ReleasedColumns:
    """A block's released cells as column arrays — what leaves an executor (pickled: a
    few arrays, not an object a cell): cell c = j·``groups`` + g's bounds (L, U), its
    released count ñ and the compiled release's ``values`` row
    (:func:`~dprect.core.release_jit.release_cells`), and the cells released in Python
    (``python``: c → its :class:`~dprect.core.aggregates.Cell`). :meth:`rows` makes the
    very cells ``finish_small`` returns (:func:`~dprect.core.aggregates.released_cells`,
    the fields made as :func:`~dprect.core.aggregates._released_many` makes them)."""

    statistics: tuple[str, ...]
    groups: int
    columns: int
    bounds: np.ndarray
    noisy: np.ndarray
    values: np.ndarray
    python: dict[int, Cell]

    def __len__(self) -> int:
        """The block's groups (as the released rows' number)."""
        return self.groups

    def rows(self) -> list[list[Cell]]:
        """The released cells, ``[group][column]``."""
        out = released_cells(self.statistics, self.bounds, self.noisy, self.values)
        for i, cell in self.python.items():
            out[i] = cell
        m = self.groups
        return [out[g::m] for g in range(m)]

    def fields(self) -> dict[str, np.ndarray | None]:
        """Every cell's released fields as arrays in cell order (c = j·``groups`` + g), as
        :func:`~dprect.core.aggregates.released_cells` makes each :class:`Cell`'s:
        ``lower``, ``upper``, ``count`` (max(ñ, 0) as a float), ``sum``, ``mean`` (None
        where not asked) and each asked statistic's interval ends ``<s>_low`` and
        ``<s>_high``; the cells of :attr:`python` are not in them (their caller takes
        those from the cells)."""
        want, v = set(self.statistics), self.values
        out: dict[str, np.ndarray | None] = {
            "lower": self.bounds[:, 0], "upper": self.bounds[:, 1],
            "count": (np.maximum(self.noisy, 0).astype(np.float64)
                      if "count" in want else None),
            "sum": v[:, 0] if "sum" in want else None,
            "mean": v[:, 1] if "mean" in want else None}
        for q, name in enumerate(("count", "sum", "mean")):  # query_intervals' columns
            if name in want:
                out[f"{name}_low"], out[f"{name}_high"] = v[:, 2 + 2 * q], v[:, 3 + 2 * q]
        return out


class ColumnRows(Sequence[list[Cell]]):
    """A block's released cells ``[group][column]`` kept as its :class:`ReleasedColumns`
    (issue #42): read as a sequence, the very cells :meth:`ReleasedColumns.rows` makes
    (made at the first read); a reader that can take the arrays
    (:func:`~dprect.release.aggregate_record.describe_rows`) reads :attr:`released`
    instead and makes no :class:`Cell` a cell."""

    def __init__(self, released: ReleasedColumns) -> None:
        self.released = released
        self._rows: list[list[Cell]] | None = None

    def _made(self) -> list[list[Cell]]:
        if self._rows is None:
            self._rows = self.released.rows()
        return self._rows

    def __len__(self) -> int:
        return self.released.groups

    def __getitem__(self, i: Any) -> Any:
        return self._made()[i]

    def __iter__(self) -> Iterator[list[Cell]]:
        return iter(self._made())


def released_rows(done: list[list[Cell]] | ReleasedColumns) -> Sequence[list[Cell]]:
    """A block's released cells ``[group][column]``, whichever form its draw returned (the
    arrays kept: :class:`ColumnRows`)."""
    return ColumnRows(done) if isinstance(done, ReleasedColumns) else done


__all__ = ["ColumnRows", "ReleasedColumns", "finish_columns", "pooled_block", "released_rows"]
