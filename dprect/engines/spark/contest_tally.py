"""The Spark engine's tally for ``auto``'s contest (:mod:`dprect.core.contest`): the numpy
tally's counts (:func:`dprect.engines.contest_tally.numpy_tally`) as ONE job over the
rows — each partition's rows encoded in the executors by the domains' own ``encode``
(the numpy engine's very test, so the counts are equal), reduced there to one row of
partial counts per partition; the driver sums those rows. No row is collected, and the
counts go to the core's noise and selection only."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame

from dprect.core.contest import Tally
from dprect.core.domains import Domain
from dprect.engines.contest_tally import numpy_tally
from dprect.engines.spark.sql import as_double

_POSITIVE = "__dprect_positive"
_NEGATIVES = "negatives"


def _partition(batches: Iterator[pa.RecordBatch], *, dims: int, domains: list[Domain],
               rects: list[tuple[tuple[int, ...], tuple[int, ...]]]
               ) -> Iterator[pa.RecordBatch]:
    """One row of partial counts per partition: the negatives, then per rectangle the
    positives outside and the negatives inside (:func:`numpy_tally` of its rows)."""
    total = np.zeros(1 + 2 * len(rects), dtype=np.int64)
    for batch in batches:
        if batch.num_rows == 0:
            continue
        X = np.column_stack([batch.column(j).to_numpy(zero_copy_only=False)
                             .astype(np.float64) for j in range(dims)])
        flags = batch.column(dims).to_numpy(zero_copy_only=False).astype(bool)
        negatives, counts = numpy_tally(X, flags, domains)(rects)
        total += np.array([negatives, *(v for pair in counts for v in pair)],
                          dtype=np.int64)
    yield pa.RecordBatch.from_arrays([pa.array([int(v)], pa.int64()) for v in total],
                                     names=_names(len(rects)))


def _names(rects: int) -> list[str]:
    return [_NEGATIVES, *(f"{k}_{i}" for i in range(rects) for k in ("fn", "fp"))]


def spark_tally(df: DataFrame, features: Sequence[str], positive: str,
                domains: Sequence[Domain]) -> Tally:
    """The tally of ``df``: ``positive`` the SQL predicate of the rows learned from
    (:attr:`~dprect.engines.spark.checks.TableChecks.positive`); every other row with
    all features finite is a negative (as the numpy tally's)."""
    names = list(features)
    doms = list(domains)

    def tally(rects: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]
              ) -> tuple[int, list[tuple[int, int]]]:
        plain = [(tuple(int(v) for v in lo), tuple(int(v) for v in hi)) for lo, hi in rects]
        rows = df.selectExpr(*(f"{as_double(c)} AS `f{j}`" for j, c in enumerate(names)),
                             f"coalesce({positive}, false) AS {_POSITIVE}")
        schema = ", ".join(f"{n} long" for n in _names(len(plain)))
        parts = rows.mapInArrow(partial(_partition, dims=len(names), domains=doms,
                                        rects=plain), schema)
        sums = parts.groupBy().sum().collect()[0]  # one row: the partitions' sums
        values = [int(sums[f"sum({n})"] or 0) for n in _names(len(plain))]
        return values[0], [(values[1 + 2 * i], values[2 + 2 * i]) for i in range(len(plain))]

    return tally


__all__ = ["spark_tally"]
