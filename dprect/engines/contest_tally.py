"""The numpy engines' tally for ``auto``'s contest (:mod:`dprect.core.contest`): for the
contest's rectangles, the exact count of the negatives and, per rectangle, the positives
outside and the negatives inside — on the rows the fit learns from (label equal to the
positive label, every feature finite under ``drop``) and the negatives (another label or
null, every feature finite). A row is inside by the test of
:meth:`~dprect.core.result.FitResult.contains` (each feature's grid index between the
rectangle's ends). The counts go to the core's noise and selection only; never released.
The Spark engine's twin is :func:`dprect.engines.spark.contest_tally.spark_tally` (one
aggregation over the rows)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dprect.core.contest import Tally
from dprect.core.domains import Domain


def numpy_tally(X: np.ndarray, positive: np.ndarray, domains: Sequence[Domain]) -> Tally:
    """The tally of the table ``X`` (float64, rows × features) with its ``positive`` flags;
    the grid indices are computed once, at the first call."""
    finite = np.isfinite(X).all(axis=1)
    flags = np.asarray(positive, dtype=bool)[finite]
    rows = X[finite]
    keys: list[np.ndarray] = []

    def tally(rects: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]
              ) -> tuple[int, list[tuple[int, int]]]:
        if not keys:
            keys.extend(d.to_index(d.encode(rows[:, j])) for j, d in enumerate(domains))
        out = []
        for lo, hi in rects:
            inside = np.ones(len(rows), dtype=bool)
            for j, key in enumerate(keys):
                inside &= (key >= np.uint64(lo[j])) & (key <= np.uint64(hi[j]))
            out.append((int((flags & ~inside).sum()), int((~flags & inside).sum())))
        return int((~flags).sum()), out

    return tally


__all__ = ["numpy_tally"]
