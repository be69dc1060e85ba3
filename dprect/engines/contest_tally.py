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
    nothing is read until the first call (a fit whose contest does not run pays nothing),
    which selects the finite rows and computes their grid indices once."""
    table: list[tuple[np.ndarray, list[np.ndarray]]] = []

    def tally(rects: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]
              ) -> tuple[int, list[tuple[int, int]]]:
        if not table:
            finite = np.isfinite(X).all(axis=1)
            rows = X[finite]
            table.append((np.asarray(positive, dtype=bool)[finite],
                          [d.to_index(d.encode(rows[:, j])) for j, d in enumerate(domains)]))
        flags, keys = table[0]
        out = []
        for lo, hi in rects:
            inside = np.ones(len(flags), dtype=bool)
            for j, key in enumerate(keys):
                inside &= (key >= np.uint64(lo[j])) & (key <= np.uint64(hi[j]))
            out.append((int((flags & ~inside).sum()), int((~flags & inside).sum())))
        return int((~flags).sum()), out

    return tally


__all__ = ["numpy_tally"]
