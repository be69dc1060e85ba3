"""``describe`` on Spark: DP count, sum and mean per public group and column with private
bounds (:mod:`dprect.core.aggregates`), every group and column at once, in TWO passes over
the rows — the fewest the mechanism allows: the side candidates are public only once the
centre is released, and the centre needs the rows (docs/privacy.md §11).

:class:`SparkDescribeRoute` reads the table (:func:`~dprect.engines.spark.source.read_source`:
Parquet, CSV or Delta) and checks its schema with no Spark job; the prepared run's
:meth:`~SparkDescribePrepared.describe` then

1. **pass 1** — the centre-grid histogram of every (group, column): the bounds route's
   one-pass histogram kernel (:func:`~dprect.engines.spark.bounds.spark_histograms`) on
   ``FloatBins(CENTRE_BITS)``; the driver draws every centre
   (:func:`~dprect.core.aggregates.draw_centres`);
2. **pass 2** — :func:`partial_statistics` in ``mapInArrow``: each row's interval between
   its cell's public candidates and its truncated significand
   (:mod:`dprect.core.describe_stats`), reduced per (group, column, interval, exponent) to
   a count and an exact int64 sum in numpy, then summed by a Spark aggregation; each
   cell's cuts travel with the task, made once on the driver from its centre and only
   as far as its search-bin range from pass 1 reaches
   (:func:`~dprect.core.describe_stats.range_cuts`: a whole grid is ~8,500 candidates a
   side, ~260 kB, and at 64 columns × 1,000 groups the centres are nearly all distinct);
3. the rest of the mechanism on the driver
   (:func:`~dprect.core.aggregates.describe_from_statistics`).

The executors call the core's own functions, shipped by value with the kernel, on the same
float64 the numpy route reads, and the driver draws in the core's order, so for a seed the
result equals :func:`dprect.describe`'s on the same rows, bit for bit. Row rules as the
bounds route's: a null, NaN or ±inf value is left out of its column only, rows of unlisted
groups (or a null group) are dropped. The two passes must read the same rows: a file or a
Delta version does; a source that changes between them is not supported.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

import dprect.core.describe_stats
import dprect.core.interior_point
import dprect.core.randomness
import dprect.core.tail_bounds
from dprect.core.aggregates import (
    DescribePlan,
    DescribeResult,
    describe_from_statistics,
    draw_centres,
)
from dprect.core.describe_stats import (
    CellStatistics,
    JointCuts,
    joint_cuts,
    joint_positions,
    pack,
    range_cuts,
    search_range,
    sum_by_key,
    truncated,
)
from dprect.core.domains import Domain, FloatBins
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.randomness import RandomSource
from dprect.core.request import Source
from dprect.core.tail_bounds import CENTRE_BITS
from dprect.engines.bounds_input import resolve_groups
from dprect.engines.prepared import PreparedRun
from dprect.engines.row_kernels import sum_by_digits
from dprect.engines.spark.bounds import (
    COLUMN,
    COUNT,
    GROUP,
    KEY,
    by_cell,
    check_schema,
    finite_chunks,
    spark_histograms,
)
from dprect.engines.spark.remote import default_parallelism
from dprect.engines.spark.source import SPARK_ERRORS, opened_source, spark_message
from dprect.engines.spark.sql import ident

SUM = "_s"
#: the Spark DDL schema of :func:`partial_statistics`' output
OUTPUT_SCHEMA = f"{GROUP} int, {COLUMN} int, {KEY} bigint, {COUNT} bigint, {SUM} bigint"
#: a (interval, exponent) key (:func:`~dprect.core.describe_stats.pack`) is below 2^27
_KEY_BITS = 27
#: rows buffered before a chunk is processed (amortises the per-cell work)
CHUNK_ROWS = 1 << 19
#: a chunk's (group, interval, exponent) triples are counted in a dense table when it has
#: at most this many cells a row (else the keys are sorted)
DENSE_CELLS_PER_ROW = 8


# -- the kernel (numpy and pyarrow only; shipped by value) ------------------------------------
def _chunk_statistics(group: np.ndarray, values: np.ndarray, cuts: JointCuts
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One column's rows of a chunk (listed groups, finite values) reduced to sorted
    unique keys group << 27 | (interval, exponent) key, with the row count and Σ signed
    truncated significand of each. ``cuts``: the column's cuts, cell i = group i (made
    once on the driver, :func:`column_cuts`). A row's position p in the joined cuts plus
    its group numbers the (group, interval) pairs in their order, so the pairs (p + g,
    exponent) are counted in a dense table when it is small
    (:func:`~dprect.engines.row_kernels.sum_by_digits`), else the keys are sorted."""
    g = group.astype(np.int64)
    pos = joint_positions(values, g, cuts)
    exponent, significand = truncated(values)
    dense = sum_by_digits([pos + g, exponent], [significand], DENSE_CELLS_PER_ROW * len(g))
    if dense is None:
        interval = pos - cuts.starts[g] + cuts.base[g]
        keys = (g << _KEY_BITS) | pack(interval, exponent)
        return sum_by_key(keys, significand)
    (code, e), n, (sums,) = dense
    # code = p + g, with group g's positions in [start_g, start_g + its cuts]: g is the
    # last group whose first code start_g + g is at most the code
    first = cuts.starts + np.arange(len(cuts.starts), dtype=np.int64)
    gg = np.searchsorted(first, code, side="right") - 1
    interval = code - gg - cuts.starts[gg] + cuts.base[gg]
    return (gg << _KEY_BITS) | pack(interval, e), n, sums


def partial_statistics(batches: Iterator[Any], columns: Sequence[str],
                       cuts: Sequence[JointCuts], group_column: str | None,
                       group_kind: str, group_values: Sequence[Any] | None
                       ) -> Iterator[Any]:
    """mapInArrow body of pass 2: one record batch of (group, column, interval-exponent
    key, count, Σ significand) for a partition's rows. ``cuts[j]``: column j's cuts of
    every group given its released centre (:func:`column_cuts`)."""
    acc: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [
        (np.zeros(0, np.int64),) * 3 for _ in columns]
    for j, group, x in finite_chunks(batches, CHUNK_ROWS, columns, group_column, group_kind,
                                     group_values):
        keys, n, sums = _chunk_statistics(group, x, cuts[j])
        k0, n0, s0 = acc[j]
        acc[j] = (keys, n, sums) if not len(k0) else sum_by_key(
            np.concatenate([k0, keys]), np.concatenate([s0, sums]), np.concatenate([n0, n]))
    gs, js, ks, ns, ss = [], [], [], [], []
    for j, (k, n, s) in enumerate(acc):
        gs.append((k >> _KEY_BITS).astype(np.int32))
        js.append(np.full(len(k), j, dtype=np.int32))
        ks.append(k & ((1 << _KEY_BITS) - 1))
        ns.append(n)
        ss.append(s)
    yield pa.RecordBatch.from_arrays(
        [pa.array(np.concatenate(xs)) for xs in (gs, js, ks, ns, ss)],
        names=[GROUP, COLUMN, KEY, COUNT, SUM])


# executors get the kernel and the core's statistics, candidates and their imports by value
for _module in (dprect.core.describe_stats, dprect.core.tail_bounds,
                dprect.core.interior_point, dprect.core.randomness):
    cloudpickle.register_pickle_by_value(sys.modules[_module.__name__])
cloudpickle.register_pickle_by_value(sys.modules[__name__])


# -- the driver -------------------------------------------------------------------------------
def to_statistics(table: Any) -> dict[tuple[int, int], CellStatistics]:
    """The collected sums as one :class:`CellStatistics` per (group, column), keys
    sorted."""
    return {cell: CellStatistics(k, n, s)
            for cell, (k, n, s) in by_cell(table, [COUNT, SUM]).items()}


def column_cuts(centres: np.ndarray, ranges: np.ndarray) -> list[JointCuts]:
    """Per column j, the cuts of every group g given its centre ``centres[g, j]``, trimmed
    to the cell's search-bin range ``ranges[g, j]`` from pass 1
    (:func:`~dprect.core.describe_stats.range_cuts`: only the candidates up to the rows
    are made), joined for one search per chunk. A cell without rows in pass 1 gets no
    cuts (the two passes read the same rows, so none comes)."""
    groups, columns = centres.shape
    return [joint_cuts([range_cuts(float(centres[g, j]), int(ranges[g, j, 0]),
                                   int(ranges[g, j, 1])) for g in range(groups)])
            for j in range(columns)]


def spark_statistics(df: DataFrame, columns: Sequence[str], centres: np.ndarray,
                     ranges: np.ndarray, *, group_by: str | None, group_kind: str,
                     group_values: Sequence[Any] | None
                     ) -> dict[tuple[int, int], CellStatistics]:
    """Pass 2: every (group, column)'s statistics given its centre, in one Spark job.
    ``centres[g, j]`` the released centres, ``ranges[g, j]`` each cell's search-bin range
    from pass 1 (:func:`~dprect.core.describe_stats.search_range`)."""
    body = partial(partial_statistics, columns=list(columns),
                   cuts=column_cuts(np.asarray(centres, dtype=np.float64),
                                    np.asarray(ranges, dtype=np.int64)),
                   group_column=group_by, group_kind=group_kind, group_values=group_values)
    read = [*columns, *([group_by] if group_by is not None else [])]
    selected = df.selectExpr(*[ident(c) for c in read]).coalesce(
        default_parallelism(df.sparkSession))  # as pass 1: fewer, larger partial sums
    sums = (selected.mapInArrow(body, OUTPUT_SCHEMA)
            .groupBy(GROUP, COLUMN, KEY)
            .agg(F.sum(COUNT).alias(COUNT), F.sum(SUM).alias(SUM)))
    try:
        table = sums.toArrow()
    except SPARK_ERRORS as exc:
        raise InputDataError(f"Spark failed while summing: {spark_message(exc)}") from None
    return to_statistics(table)


class SparkDescribePrepared(PreparedRun):
    """A checked DataFrame, ready for :meth:`describe`; closing it runs ``on_close``."""

    def __init__(self, df: DataFrame, source: Source, groups: list[str] | None,
                 group_kind: str, on_close: Callable[[], None] | None = None) -> None:
        super().__init__(on_close)
        self.df = df
        self.source = source
        self.groups = groups
        self.group_kind = group_kind

    def describe(self, plan: DescribePlan, group_names: list[Any], rng: RandomSource
                 ) -> DescribeResult:
        """The run (module notes): ``group_names`` label the listed groups in the result
        ([None] ungrouped), one per listed group, in the listed order."""
        columns = list(self.source.columns)
        group_by = self.source.group_by
        n_groups = len(self.groups or []) if group_by is not None else 1
        if len(group_names) != n_groups:
            raise ParameterError(f"{len(group_names)} group name(s) for {n_groups} "
                                 f"listed group(s)")
        if plan.columns != len(columns):
            raise ParameterError(f"{len(columns)} column(s) for a plan of {plan.columns}")
        centre_grid: list[Domain] = [FloatBins(CENTRE_BITS)] * len(columns)
        hist = spark_histograms(self.df, columns, centre_grid, group_by=group_by,
                                groups=self.groups)
        centres = draw_centres(plan, {k: (h.keys, h.counts) for k, h in hist.items()},
                               n_groups, rng)
        c = np.array([[centres[(g, j)] for j in range(len(columns))]
                      for g in range(n_groups)], dtype=np.float64)
        r = np.array([[search_range(hist[(g, j)].keys) for j in range(len(columns))]
                      for g in range(n_groups)], dtype=np.int64).reshape(n_groups,
                                                                         len(columns), 2)
        resolved = (None if group_by is None else
                    resolve_groups(list(self.groups or []), self.group_kind or "null",
                                   group_by))
        stats = spark_statistics(self.df, columns, c, r, group_by=group_by,
                                 group_kind=self.group_kind, group_values=resolved)
        return describe_from_statistics(plan, centres, stats, group_names, columns, rng)


class SparkDescribeRoute:
    """The Spark engine's part of a describe run: start or reuse a session (``session``
    returns it and whether this run owns it), read the table, check its schema — every
    column numeric, the group column able to hold the listed values — with no Spark job
    beyond what reading needs. A session the run owns is stopped when the prepared run
    closes, or at once if reading fails."""

    def __init__(self, session: Callable[[], tuple[SparkSession, bool]]) -> None:
        self.session = session

    def open(self, source: Source, groups: list[str] | None,
             progress: Callable[[str], None]) -> SparkDescribePrepared:
        with opened_source(self.session, source, progress) as (df, stop):
            kind = check_schema(df, source.columns, source.group_by)
            if source.group_by is not None:
                resolve_groups(list(groups or []), kind or "null", source.group_by)
            return SparkDescribePrepared(df, source, groups, kind or "", stop)


def cli_describe_route(master: str | None = None, remote: str | None = None
                       ) -> SparkDescribeRoute:
    """The Spark route of ``dprect describe --engine spark --master M | --remote URL``."""
    from dprect.engines.spark.cli import cli_session

    return SparkDescribeRoute(lambda: cli_session(master, remote))


__all__ = ["OUTPUT_SCHEMA", "SparkDescribePrepared", "SparkDescribeRoute",
           "cli_describe_route", "column_cuts", "partial_statistics", "spark_statistics",
           "to_statistics"]
