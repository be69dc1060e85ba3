"""The engine seam: the two questions every execution engine answers (docs/algorithm.md §7).

The private core (:mod:`dprect.core.algorithms`) draws all randomness, in a fixed order, and
runs every interior-point call; an engine only holds the positive rows, encoded as *sort
values* per feature (:mod:`dprect.core.domains`), and answers:

* :meth:`Engine.window` — the multiset of sort values on ``axis`` at ranks
  [stop − size, stop) of the *remaining* rows, ordered from ``side`` (rank 0 is the largest
  value for ``hi``, the smallest for ``lo``); ranks beyond the remaining rows are simply
  absent (the core pads them);
* :meth:`Engine.cut` — remove every remaining row whose sort value on ``axis`` is ≥ t
  (``hi``) or ≤ t (``lo``).

* :meth:`Engine.histograms` — per axis j, the counts of the remaining rows between
  public, non-decreasing sort-value thresholds t_0 ≤ … ≤ t_{k−1} of that axis: k + 1
  counts, of the rows with sort value ≤ t_0, in (t_{i−1}, t_i], and > t_{k−1} — every
  axis in one query, so an engine answers it in one pass over the rows (the quantile
  box's only question, :mod:`dprect.core.quantile_box`; a multiset statistic, so it too
  is the same on every engine);

and, before the first of them when RandMargins refines ties, :meth:`Engine.set_ties`:
from then on an axis's sort values are the rows' refined sort values
(:class:`dprect.core.ties.TieBreaker`: a map of the row's own sort values and of its
occurrence rank among the rows identical to it).

The answer to ``window`` depends only on the multiset of values at those ranks, so how an
engine breaks ties can never change the output: every engine returns the identical
rectangle for the same seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from dprect.core.domains import Side
from dprect.core.ties import TieBreaker


@runtime_checkable
class Engine(Protocol):
    """What the core asks of an execution engine."""

    @property
    def dims(self) -> int:
        """Number of features."""
        ...

    def window(self, axis: int, side: Side, stop: int, size: int) -> np.ndarray:
        """Sort values at ranks [stop − size, stop) of the remaining rows (any order)."""
        ...

    def cut(self, axis: int, side: Side, threshold: int | float) -> None:
        """Remove remaining rows with value ≥ threshold (hi) or ≤ threshold (lo)."""
        ...

    def histograms(self, thresholds: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Per axis j (``thresholds[j]``, one array per axis), the int64 counts of the
        remaining rows: sort value ≤ t_0, in (t_{i−1}, t_i] for each i, and > t_{k−1}
        (k + 1 counts for k non-decreasing thresholds)."""
        ...

    def set_ties(self, ties: TieBreaker) -> None:
        """Refine every axis's sort values by ``ties`` (before any window or cut)."""
        ...
