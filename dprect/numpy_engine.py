"""The in-memory engine: positives as numpy columns, the remaining set as a boolean mask.

A round costs O(n): one masked column read and one ``np.partition`` (introselect) that
places the ranks [stop − size, stop) — no full sort. A cut is one vectorised comparison.
"""

from __future__ import annotations

import numpy as np

from dprect.domains import Domain, Side
from dprect.errors import InputDataError


class NumpyEngine:
    """Engine over encoded positive rows held in memory."""

    def __init__(self, columns: list[np.ndarray]) -> None:
        if not columns:
            raise InputDataError("the engine needs at least one feature column")
        n = len(columns[0])
        if any(len(c) != n for c in columns):
            raise InputDataError("all feature columns must have the same length")
        self._columns = [np.ascontiguousarray(c) for c in columns]
        self._remaining = np.ones(n, dtype=bool)
        self._all = True  # fast path while nothing has been cut

    @classmethod
    def from_features(cls, X_pos: np.ndarray, domains: list[Domain]) -> NumpyEngine:
        """Encode the positive rows' features with their domains."""
        return cls([d.encode(X_pos[:, j]) for j, d in enumerate(domains)])

    @property
    def dims(self) -> int:
        return len(self._columns)

    def _column(self, axis: int) -> np.ndarray:
        col = self._columns[axis]
        return col if self._all else col[self._remaining]

    def window(self, axis: int, side: Side, stop: int, size: int) -> np.ndarray:
        col = self._column(axis)
        n = len(col)
        first, last = max(0, stop - size), min(stop, n)  # ranks [first, last) from `side`
        if last <= first:
            return col[:0].copy()
        if side == "lo":
            lo, hi = first, last - 1
        else:  # rank r from the top is ascending index n - 1 - r
            lo, hi = n - last, n - 1 - first
        part = np.partition(col, (lo, hi)) if lo != hi else np.partition(col, lo)
        return part[lo:hi + 1].copy()

    def cut(self, axis: int, side: Side, threshold: int | float) -> None:
        col = self._columns[axis]
        keep = col < threshold if side == "hi" else col > threshold
        self._remaining &= keep
        self._all = False
