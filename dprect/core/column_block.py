"""A block of describe cells as column arrays (issue #42): the decode's own arrays — one
per field, cells in column order — read by describe's two rounds without a Python object
a cell (:class:`ColumnBlock` for round one, :func:`~dprect.core.column_release.
finish_columns` for round two).

:class:`ColumnBlock` is a :class:`~dprect.core.aggregates.CellBlock` (what
:func:`~dprect.core.aggregates.describe_block` reads) over :class:`ColumnBins`: each
cell's rows and each column's pooled centre-grid histogram are reduced over the joined
arrays at once; a cell's own centre histogram and the statistics of the cells that
search from their own centres are made for those cells alone, by the very functions
:class:`~dprect.core.describe_stats.BinBlock` uses
(:func:`~dprect.core.describe_stats.centre_counts_from_bins`,
:func:`~dprect.core.describe_stats.statistics_of_cells`). The same values as a
``BinBlock`` of the same cells: integer sums of the same counts, regrouped
(tests/core/test_column_release.py; ``benchmarks/describe_block_draws.py digest``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dprect.core.describe_stats import (
    BinStatistics,
    CellStatistics,
    centre_counts_from_bins,
    merge_histograms,
    statistics_of_cells,
)
from dprect.core.tail_bounds import CENTRE_BITS, SEARCH_BITS


@dataclass(frozen=True)
class ColumnBins:
    """A block's describe statistics per search bin as column arrays: cell
    c = j·``groups`` + g (columns, then groups; groups local) holds the sorted int64
    ``bins``, ``counts`` and ``sums`` at ``at[c]:at[c + 1]`` (an empty range: no rows);
    ``at`` has ``groups·columns + 1`` entries. The cells of
    :class:`~dprect.core.describe_stats.BinStatistics`, joined."""

    bins: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    at: np.ndarray
    groups: int
    columns: int

    def cell(self, group: int, column: int) -> BinStatistics | None:
        """One cell's :class:`~dprect.core.describe_stats.BinStatistics` (views of the
        arrays), None without rows."""
        c = column * self.groups + group
        a, z = int(self.at[c]), int(self.at[c + 1])
        if a == z:
            return None
        return BinStatistics(self.bins[a:z], self.counts[a:z], self.sums[a:z])


class ColumnBlock:
    """:class:`ColumnBins` as a :class:`~dprect.core.aggregates.CellBlock` (module
    notes)."""

    def __init__(self, arrays: ColumnBins) -> None:
        self.arrays = arrays

    @property
    def groups(self) -> int:
        return self.arrays.groups

    def centre_histogram(self, group: int, column: int) -> tuple[np.ndarray, np.ndarray]:
        cell = self.arrays.cell(group, column)
        if cell is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return centre_counts_from_bins(cell.bins, cell.counts)

    def centre_histograms(self) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        return [[self.centre_histogram(g, j) for j in range(self.arrays.columns)]
                for g in range(self.groups)]

    def cell_rows(self) -> list[int]:
        """Every cell's rows, groups then columns: one cumulative sum of the counts
        (exact: int64 sums of row counts)."""
        a = self.arrays
        total = np.zeros(len(a.counts) + 1, dtype=np.int64)
        np.cumsum(a.counts, out=total[1:])
        rows = total[a.at[1:]] - total[a.at[:-1]]
        return rows.reshape(a.columns, a.groups).T.ravel().tolist()

    def pooled_histograms(self, groups: Mapping[int, Sequence[int]]
                          ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Per column j of ``groups``, the centre-grid histogram of the rows of its cells
        of the groups ``groups[j]``: their search bins shifted to centre bins and summed
        by key at once — the sum (:func:`~dprect.core.describe_stats.merge_histograms`)
        of those cells' centre histograms, the same keys and counts."""
        a, m, out = self.arrays, self.arrays.groups, {}
        for j, gs in groups.items():
            lo, hi = int(a.at[j * m]), int(a.at[(j + 1) * m])
            chosen = np.zeros(m, dtype=bool)
            chosen[np.asarray(gs, dtype=np.int64)] = True
            take = np.repeat(chosen, np.diff(a.at[j * m:(j + 1) * m + 1]))
            keys = np.asarray(a.bins[lo:hi][take], dtype=np.int64) >> (SEARCH_BITS - CENTRE_BITS)
            out[j] = merge_histograms([(keys, a.counts[lo:hi][take])])
        return out

    def _named(self, centres: Mapping[tuple[int, int], float]
               ) -> dict[tuple[int, int], BinStatistics]:
        named = {k: self.arrays.cell(*k) for k in centres}
        return {k: b for k, b in named.items() if b is not None}

    def statistics(self, centres: Sequence[Sequence[float]]) -> list[list[CellStatistics]]:
        flat = {(g, j): c for g, row in enumerate(centres) for j, c in enumerate(row)}
        stats = statistics_of_cells(self._named(flat), flat, self.groups, self.arrays.columns)
        empty = CellStatistics.empty()
        return [[stats.get((g, j), empty) for j in range(self.arrays.columns)]
                for g in range(self.groups)]

    def statistics_at(self, centres: Mapping[tuple[int, int], float]
                      ) -> dict[tuple[int, int], CellStatistics]:
        """The statistics of the cells named in ``centres`` only (as
        :meth:`~dprect.core.describe_stats.BinBlock.statistics_at`)."""
        stats = statistics_of_cells(self._named(centres), centres, self.groups,
                                    self.arrays.columns)
        empty = CellStatistics.empty()
        return {k: stats.get(k, empty) for k in centres}


__all__ = ["ColumnBins", "ColumnBlock"]
