"""Cells' bin statistics joined column by column, as a block's decode has them (tests of
describe's blocks: tests/core/test_column_release.py, test_anchored_block.py)."""

from __future__ import annotations

import numpy as np

from dprect.core.column_block import ColumnBins
from dprect.core.describe_stats import BinStatistics


def joined_columns(bins: dict[tuple[int, int], BinStatistics], groups: int, columns: int
                   ) -> ColumnBins:
    """The cells of ``bins`` (by (group, column); an absent cell empty) joined column by
    column (cell c = j·groups + g)."""
    empty = BinStatistics(*(np.zeros(0, dtype=np.int64),) * 3)
    cells = [bins.get((g, j), empty) for j in range(columns) for g in range(groups)]
    at = np.zeros(len(cells) + 1, dtype=np.int64)
    np.cumsum([len(c.bins) for c in cells], out=at[1:])
    joined = [np.concatenate([np.zeros(0, dtype=np.int64)]
                             + [np.asarray(getattr(c, f), dtype=np.int64) for c in cells])
              for f in ("bins", "counts", "sums")]
    return ColumnBins(*joined, at, groups, columns)
