"""The ``rounds`` strategy: one top-N Spark job a round — the simple reference.

The positive rows are encoded once into their sort values ``_v{j}`` by the SQL twin of the
core's encoding (:meth:`Domain.sort_sql <dprect.core.domains.Domain.sort_sql>`; refined by
the row hash and the row's occurrence rank when the engine has ties,
:func:`dprect.engines.spark.prefetch.with_ranks` and ``refine``) and,
when asked, cached. The remaining set is never materialised: it is the encoded rows
filtered by the recorded cuts (``hi``: keep v < t; ``lo``: keep v > t). Each window is one
job collecting only the ranks asked for, of the one column asked for. It answers exactly
as the numpy engine (docs/algorithm.md §7) and is what the exactness tests compare the
other strategies with; :class:`~dprect.engines.spark.prefetch.PrefetchStrategy` also uses
it for a round whose list runs short.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark import StorageLevel, cloudpickle
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812

from dprect.core.domains import Side
from dprect.engines.numpy_engine import axes_thresholds
from dprect.engines.spark import by_value, held_kernel  # noqa: F401  (by_value registers)
from dprect.engines.spark.held_kernel import (
    BLOCK,
    COUNTS,
    HELD_SCHEMA,
    HeldTask,
    count_held,
    count_shipped,
    counters,
    counts_row,
    sum_counts,
)
from dprect.engines.spark.prefetch import RANK_COLUMN, refine, with_ranks
from dprect.engines.spark.shipped import shipped_rows, shipped_widths
from dprect.engines.spark.sql import all_of, ident, literal, seen
from dprect.engines.spark.strategy import Rows

# the held queries' kernel and its task travel by value, as the pass's (order_pass)
cloudpickle.register_pickle_by_value(sys.modules[held_kernel.__name__])

#: above this many rows a window is taken by a full sort instead of a top-N heap
TOP_N_ROWS = 1_000_000
_MAX_LIMIT = 2**31 - 1
_TOP_K_CONF = "spark.sql.execution.topKSortFallbackThreshold"


class RoundsStrategy:
    """A job a round on the encoded positives (``cache``: persist them, released by
    :meth:`close`; ``hold``: persist instead the rows learned from as they are read —
    their raw feature values, narrower than the sort values — encoded again by each
    query: the quantile box's two histogram queries, issue #43, where the second read of
    a wide table, every row decoded to keep the positives, cost as much as the first).
    Without ties, ``hold``'s histogram queries are :mod:`~dprect.engines.spark.held_kernel`'s:
    the first job ships the raw rows, encodes and counts them in the Python worker and
    emits them packed, a binary block of rows, which is what is held; with ties (the
    refinement's ranks are a window over every partition) the held rows are the feature
    columns, encoded by SQL in each query."""

    def __init__(self, rows: Rows, *, cache: bool = True, hold: bool = False) -> None:
        self.rows = rows
        self.cache = cache and not hold
        self.hold = hold
        #: the histogram queries run on raw rows, the first one's packed rows held
        self.packed = hold and rows.ties is None
        self._vcols = [f"_v{j}" for j in range(len(rows.names))]
        self._encoded_rows: DataFrame | None = None
        self._held: DataFrame | None = None
        self._cached = False

    def prepare(self) -> bool:
        problem = self.rows.problem
        return problem is not None and bool(
            self.rows.data.selectExpr(seen(problem)).collect()[0][0])

    def window(self, axis: int, side: Side, first: int, stop: int) -> np.ndarray:
        """Ranks [first, stop) from ``side`` of the remaining rows, by Spark jobs.

        Small windows (stop ≤ 1M, decided from the public ``stop`` only) are one top-N job.
        Larger ones first count the remaining rows n, then take the cheaper end: ranks
        [first, min(stop, n)) from ``side`` or, equivalently, ranks [n − min(stop, n),
        n − first) from the other side; above 1M rows by a full sort, not a heap.
        """
        rem = self._remaining()
        other: Side = "lo" if side == "hi" else "hi"
        if stop <= TOP_N_ROWS:
            return self._take(rem, axis, side, first, stop, sort=False)
        n = rem.count()
        self.rows.stats["window_jobs"] += 1
        if first >= n:
            return np.empty(0, dtype=self.rows.dtypes[axis])
        end = min(stop, n)
        if n - first < end:
            first, end, side = n - end, n - first, other
        return self._take(rem, axis, side, first, end, sort=end > TOP_N_ROWS)

    def histograms(self, thresholds: Sequence[np.ndarray], *, compiled: bool = False
                   ) -> list[np.ndarray]:
        """:meth:`dprect.core.engine.Engine.histograms` by ONE job over every axis's
        column: each partition's counts of every axis
        (:func:`~dprect.engines.numpy_engine.counter`, the numpy engine's own code on the
        same sort values, one a distinct thresholds; ``compiled``: with numba where the
        executor has it, for many thresholds:
        :func:`~dprect.engines.spark.held_kernel.counters`), shipped as one compressed
        row of narrow dense counts and summed on the driver
        (:func:`~dprect.engines.spark.held_kernel.counts_row`, ``sum_counts``: issue #43,
        the dense int64 counts were 1.5 GB to the driver at d = 1,024)."""
        dtypes = self.rows.dtypes
        cuts = [np.asarray(t, dtype=dtypes[j])
                for j, t in enumerate(axes_thresholds(thresholds, len(self._vcols)))]
        widths = [len(c) + 1 for c in cuts]
        if self.packed:
            table = self._held_counts(cuts, compiled)
        else:
            def count(batches):  # runs on the executors
                counts = counters(cuts, dtypes, compiled=compiled)
                totals = [np.zeros(w, dtype=np.int64) for w in widths]
                for batch in batches:
                    for j in range(len(cuts)):
                        values = batch.column(j).to_numpy(zero_copy_only=False)
                        totals[j] += counts[j](np.asarray(values, dtype=dtypes[j]))
                yield counts_row(totals)

            got = self._remaining().select(*self._vcols).mapInArrow(count, HELD_SCHEMA)
            table = got.select("c", "b").toArrow()
        self.rows.stats["window_jobs"] += 1
        return sum_counts(table, widths)

    def _held_counts(self, cuts: list[np.ndarray], compiled: bool) -> pa.Table:
        """A histogram query's counts rows by :mod:`~dprect.engines.spark.held_kernel`:
        the first on the shipped raw rows, whose packed blocks it persists (released by
        :meth:`close`); each later one on those blocks."""
        rows = self.rows
        task = HeldTask(tuple(rows.domains), tuple(
            np.dtype(np.float32 if w == 4 else np.float64)
            for w in shipped_widths(rows.data, rows.names)), tuple(cuts),
            tuple((a, s == "hi", t) for a, s, t in rows.cuts), compiled)
        if self._held is None:
            shipped = shipped_rows(rows.data, rows.names, rows.positive, None)
            held = shipped.mapInArrow(partial(count_shipped, task=task, hold=True),
                                      HELD_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
            self._held = held
            # the action builds the whole cache (every block), then keeps the counts
            return held.where(f"k = {COUNTS}").select("c", "b").toArrow()
        blocks = self._held.where(f"k = {BLOCK}")
        return blocks.mapInArrow(partial(count_held, task=task), HELD_SCHEMA) \
            .select("c", "b").toArrow()

    def cut(self, axis: int, side: Side, threshold: int | float) -> None:
        """Nothing to do: the remaining rows are filtered by the recorded cuts."""

    def close(self) -> None:
        """Release the cached rows (the strategy can still answer, uncached)."""
        if self._cached and self._encoded_rows is not None:
            self._encoded_rows.unpersist()
        if self._held is not None:
            self._held.unpersist()
        self._cached = False

    def _key(self, axis: int, side: Side) -> Column:
        col = F.col(self._vcols[axis])
        return col.desc() if side == "hi" else col.asc()

    def _encoded(self) -> DataFrame:
        """The positive rows as sort values ``_v{j}`` (refined when the engine has ties;
        built, and cached when asked, on the first window job)."""
        if self._encoded_rows is None:
            rows = self.rows
            data = rows.data if rows.positive is None else rows.data.where(rows.positive)
            if self.hold and not self.packed:  # the rows learned from, read once
                data = data.selectExpr(*map(ident, rows.names))
                data = data.persist(StorageLevel.MEMORY_AND_DISK)
                self._held = data
            encoded = data.selectExpr(*[f"{rows.sorts[j]} AS {v}"
                                        for j, v in enumerate(self._vcols)])
            if rows.ties is not None:  # ranks among identical rows, then r_j
                encoded = refine(with_ranks(encoded, self._vcols), rows.ties, self._vcols,
                                 dict(enumerate(self._vcols)), barrier=True,
                                 rank=RANK_COLUMN)
            if self.cache:
                encoded = encoded.persist(StorageLevel.MEMORY_AND_DISK)
                self._cached = True
            self._encoded_rows = encoded
        return self._encoded_rows

    def _remaining(self) -> DataFrame:
        cuts = self.rows.cuts
        if not cuts:
            return self._encoded()
        return self._encoded().where(all_of(
            f"{self._vcols[a]} {'<' if s == 'hi' else '>'} {literal(t)}"
            for a, s, t in cuts))

    def _take(self, rem: DataFrame, axis: int, side: Side, first: int, stop: int,
              sort: bool) -> np.ndarray:
        stop = min(stop, _MAX_LIMIT)
        query = rem.select(self._vcols[axis]).orderBy(self._key(axis, side)).limit(stop)
        if first:
            query = query.offset(first)
        conf = self.rows.data.sparkSession.conf
        previous = conf.get(_TOP_K_CONF, None) if sort else None
        try:
            if sort:  # a full distributed sort instead of a heap of `stop` rows per task
                conf.set(_TOP_K_CONF, str(TOP_N_ROWS))
            table = query.toArrow()
        finally:
            if sort:
                if previous is None:
                    conf.unset(_TOP_K_CONF)
                else:
                    conf.set(_TOP_K_CONF, previous)
        self.rows.stats["window_jobs"] += 1
        values = table.column(0).to_numpy(zero_copy_only=False)
        return np.asarray(values, dtype=self.rows.dtypes[axis])


__all__ = ["TOP_N_ROWS", "RoundsStrategy"]
