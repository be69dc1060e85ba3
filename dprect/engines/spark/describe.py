"""``describe`` on Spark: DP count, sum and mean per public group and column with private
bounds (:mod:`dprect.core.aggregates`), every group and column at once, in ONE pass over
the rows: every candidate bound is a ``FloatBins(SEARCH_BITS)`` bin edge, whatever the
centre, so the rows' counts and truncated sums per search bin serve the centre, both
searches and the clamped sum (:class:`~dprect.core.describe_stats.BinStatistics`;
docs/privacy.md §11).

:class:`SparkDescribeRoute` reads the table (:func:`~dprect.engines.spark.source.read_source`:
Parquet, CSV or Delta) and checks its schema with no Spark job; the prepared run's
:meth:`~SparkDescribePrepared.describe` then

1. **the pass** — :func:`partial_bins` in ``mapInArrow``: each row's search bin and its
   truncated significand (:func:`~dprect.core.describe_stats.significands`), counted and
   summed per (group, column, bin) in numpy (a dense table where it is small, the bounds
   route's :func:`~dprect.engines.spark.bounds.chunk_counts`; compiled where the
   executor has dprect and numba, with each column's running total and a chunk's lists
   merged in one linear pass — in int64 while no key reaches 2^33 rows, exactly past
   it); each partition's sums leave as sorted int64 blobs (a sum as two words: exact at
   any count), one per key range (each column's part copied once into its range's
   blob), each range is merged by one task (:func:`merge_blobs`) and the ranges are
   collected in key order (:func:`spark_bins`);
2. on the driver, the bins cut into blocks of groups
   (:class:`~dprect.core.describe_stats.BinBlock`) and the mechanism on each
   (:func:`~dprect.core.aggregates.describe_blocks`), in worker processes on a large run
   (:mod:`dprect.engines.driver_pool`): per group, every centre from the bins coarsened
   to the centre grid, every cell's statistics given its centre
   (:func:`~dprect.core.describe_stats.statistics_of_cells`: its cuts made once, only
   over its bins' range), then the searches and the noise.

The executors call the core's own functions, shipped by value with the kernel, on the same
float64 the numpy route reads, and the driver draws in the core's order, so for a seed the
result equals :func:`dprect.describe`'s on the same rows, bit for bit. Row rules as the
bounds route's: a null, NaN or ±inf value is left out of its column only, rows of unlisted
groups (or a null group) are dropped.
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

import dprect.core.describe_stats
import dprect.core.interior_point
import dprect.core.randomness
import dprect.core.tail_bounds
from dprect.core.aggregates import (
    DescribePlan,
    DescribeResult,
    describe_blocks,
    group_blocks,
)
from dprect.core.describe_stats import (
    DROPPED_BITS,
    EXACT_ROWS,
    BinStatistics,
    bin_blocks,
    significands,
    sum_by_key,
    sum_words,
    words_sum,
)
from dprect.core.domains import FloatBins
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.randomness import RandomSource
from dprect.core.request import Source
from dprect.core.tail_bounds import SEARCH_BITS
from dprect.engines.bounds_input import resolve_groups
from dprect.engines.driver_pool import block_mapper
from dprect.engines.prepared import PreparedRun
from dprect.engines.spark.bounds import (
    CHUNK_VALUES,
    check_schema,
    chunk_counts,
    finite_chunks,
)
from dprect.engines.spark.remote import default_parallelism
from dprect.engines.spark.source import SPARK_ERRORS, opened_source, spark_message
from dprect.engines.spark.sql import ident

PART = "_p"
BLOB = "_b"
#: the Spark DDL schema of :func:`partial_bins`' and :func:`merge_blobs`' output
OUTPUT_SCHEMA = f"{PART} int, {BLOB} binary"
_GRID = FloatBins(SEARCH_BITS)
#: chunks of at least this many rows are counted by the compiled step, where it runs
JIT_ROWS = 1 << 16
#: the compiled step's dense tables hold at most this many (group, bin) cells
JIT_CELLS = 1 << 22
#: the version of :mod:`dprect.engines.spark.describe_jit` this kernel calls
JIT_VERSION = 2
#: a blob's int64 rows: key, count, and the sum's two words (hi, lo)
BLOB_ROWS = 4
#: the sums' key ranges (merge tasks) per core of the session, at least
RANGES_PER_CORE = 8
#: and at least one range per this many cells (a range's blob stays far below Arrow's
#: 2 GB per binary batch: 4,096 cells × a few hundred bins × 32 bytes)
CELLS_PER_RANGE = 4096


# -- the kernel (numpy and pyarrow only; shipped by value) ------------------------------------
def to_blob(keys: np.ndarray, counts: np.ndarray, sums: np.ndarray) -> Any:
    """Sorted (key, count, sum) lists as one Arrow ``binary`` array of one value
    (:func:`from_blob` reads it back): keys, counts and each sum's two int64 words
    (:func:`~dprect.core.describe_stats.sum_words`: a sum past int64, a key of 2^33 rows
    or more, travels exactly) copied once, side by side, into an int64 array that Arrow
    then holds without a copy."""
    out = np.empty((BLOB_ROWS, len(keys)), dtype=np.int64)
    out[0], out[1] = keys, counts
    out[2], out[3] = sum_words(sums)
    return _blob(out)


def _blob(table: np.ndarray) -> Any:
    """A C-contiguous (BLOB_ROWS, n) int64 array as :func:`to_blob`'s one-value binary
    array (Arrow holds the array's memory, no copy)."""
    offsets = np.array([0, table.nbytes], dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), 1, [None, pa.py_buffer(offsets),
                                                   pa.py_buffer(table)])


def from_blob(blob: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (key, count, sum) lists of a blob (bytes or an Arrow buffer; no copy but the
    sums', joined from their words: int64, or Python integers past int64)."""
    k, n, hi, lo = np.frombuffer(blob, dtype=np.int64).reshape(BLOB_ROWS, -1)
    return k, n, words_sum(hi, lo, n)


Lists = tuple[np.ndarray, np.ndarray, np.ndarray]


def _joined(parts: Sequence[Lists]) -> Lists:
    """(key, count, sum) lists concatenated, in the given order."""
    keys, n, sums = (np.concatenate([p[i] for p in parts]) for i in range(3))
    return keys, n, sums


def _merge(parts: Sequence[Lists]) -> Lists:
    """Partial (key, count, sum) lists summed by key (sorted)."""
    keys, n, sums = _joined(parts)
    return sum_by_key(keys, sums, n)


def _jit() -> Any:
    """:mod:`dprect.engines.spark.describe_jit` where the executor has dprect of this
    kernel's version (JIT_VERSION), else None (the numpy steps run)."""
    try:
        from dprect.engines.spark import describe_jit
    except ImportError:  # the kernel runs without dprect on this executor
        return None
    return describe_jit if describe_jit.VERSION == JIT_VERSION else None


def _int64_safe(total: Lists, chunk: Lists) -> bool:
    """Whether every sum of ``total`` and ``chunk`` merged is an int64 — both int64 and no
    key reaching :data:`~dprect.core.describe_stats.EXACT_ROWS` rows — as the compiled
    merge needs (:func:`~dprect.core.describe_stats.sum_by_key` is exact past it)."""
    return (total[2].dtype != object and chunk[2].dtype != object
            and int(total[1].max(initial=0)) + int(chunk[1].max(initial=0)) < EXACT_ROWS)


def _merge_into(total: Lists | None, chunk: Lists) -> Lists:
    """A column's running (key, count, sum) total — sorted, unique — and a chunk's lists
    summed by key: one linear merge where the chunk's keys come sorted (the compiled
    step's) and ``describe_jit`` runs here, else :func:`_merge`; the same lists."""
    if total is not None and len(chunk[0]) >= JIT_ROWS // 64 and _int64_safe(total, chunk):
        jit = _jit()
        got = jit.merge_sorted(total, chunk) if jit is not None else None
        if got is not None:
            return got
    return _merge([chunk] if total is None else [total, chunk])


def column_lists(group: np.ndarray, values: np.ndarray, groups: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One chunk of one column: the unique (group, search bin) pairs of its finite
    ``values`` with their row counts and significand sums, in any order — compiled
    (:mod:`dprect.engines.spark.describe_jit`, where dprect and numba are installed on
    the executor, the same version, and the chunk has at least :data:`JIT_ROWS` rows),
    else with numpy; the same lists either way."""
    if len(values) >= JIT_ROWS:
        jit = _jit()
        if jit is not None:
            got = jit.column_bins(values, group, groups, _GRID.shift, _GRID.size // 2,
                                  DROPPED_BITS, JIT_CELLS)
            if got is not None:
                return got
    x = np.ascontiguousarray(values, dtype=np.float64)
    g, b, n, sums = chunk_counts(group, _GRID.encode(x), significands(x.view(np.int64)))
    if sums is None:  # chunk_counts sums whenever it is given values
        raise AssertionError("describe kernel: the significands were not summed")
    return g, b, n, sums


def partial_bins(batches: Iterator[Any], columns: Sequence[str], group_column: str | None,
                 group_kind: str, group_values: Sequence[Any] | None, groups: int,
                 ranges: int) -> Iterator[Any]:
    """mapInArrow body: a partition's rows counted and summed per (group g, column j,
    search bin b) (module notes; :func:`column_lists` per chunk and column) under the key
    (j·G + g)·size + b (G groups, ``size`` the search grid's), sorted, and cut into
    ``ranges`` contiguous key ranges of cells, one (range, blob) row each
    (:func:`to_blob`), each row a batch of its own. Ungrouped (``group_column`` None):
    every row is group 0 (``groups`` 1)."""
    acc: list[Lists | None] = [None for _ in columns]
    size = np.int64(_GRID.size)
    chunk_rows = -(-CHUNK_VALUES // max(1, len(columns)))
    for j, group, x in finite_chunks(batches, chunk_rows, columns, group_column, group_kind,
                                     group_values):
        g, b, n, sums = column_lists(group, x, groups)
        key = (np.int64(j) * groups + g.astype(np.int64)) * size + b
        acc[j] = _merge_into(acc[j], (key, n, sums))  # sorted, one list per column
    filled = [total for total in acc if total is not None]  # j-major: in key order
    cells = len(columns) * groups
    limits = np.arange(ranges + 1, dtype=np.int64) * cells // ranges * size
    edges = [np.searchsorted(total[0], limits) for total in filled]
    for r in range(ranges):  # a batch per range: Arrow's binary holds < 2 GB a batch
        pieces = [(total, int(e[r]), int(e[r + 1]))
                  for total, e in zip(filled, edges, strict=True) if e[r + 1] > e[r]]
        if not pieces:
            continue
        table = np.empty((BLOB_ROWS, sum(hi - lo for _, lo, hi in pieces)), dtype=np.int64)
        at = 0
        for total, lo, hi in pieces:  # each column's part of the range, copied once
            table[0, at:at + hi - lo] = total[0][lo:hi]
            table[1, at:at + hi - lo] = total[1][lo:hi]
            table[2, at:at + hi - lo], table[3, at:at + hi - lo] = sum_words(total[2][lo:hi])
            at += hi - lo
        yield pa.RecordBatch.from_arrays([pa.array([r], pa.int32()), _blob(table)],
                                         names=[PART, BLOB])


def merge_blobs(table: Any) -> Any:
    """applyInArrow body: one range's partial lists (one blob per partition) summed."""
    part = table.column(PART)[0].as_py()
    merged = _merge([from_blob(b.as_buffer()) for b in table.column(BLOB)])
    return pa.table({PART: pa.array([part], pa.int32()),
                     BLOB: to_blob(*merged)})


# executors get the kernel and the core's statistics, candidates and their imports by value
for _module in (dprect.core.describe_stats, dprect.core.tail_bounds,
                dprect.core.interior_point, dprect.core.randomness):
    cloudpickle.register_pickle_by_value(sys.modules[_module.__name__])
cloudpickle.register_pickle_by_value(sys.modules[__name__])


# -- the driver -------------------------------------------------------------------------------
def spark_bins(df: DataFrame, columns: Sequence[str], *, group_by: str | None,
               group_kind: str, group_values: Sequence[Any] | None
               ) -> dict[tuple[int, int], BinStatistics]:
    """The pass: every (group, column)'s :class:`BinStatistics` in one Spark job (a cell
    without rows is missing). Each partition's sums travel as a few blobs of sorted int64
    lists, one per key range, each range is summed by one task (:func:`merge_blobs`), and
    the ranges come back in key order: no aggregation row by row."""
    groups = len(group_values) if group_by is not None and group_values else 1
    size = _GRID.size
    if len(columns) * groups * size >= 1 << 62:
        raise ParameterError(f"{len(columns)} columns × {groups} groups are too many cells "
                             f"for one describe run")
    cores = default_parallelism(df.sparkSession)
    body = partial(partial_bins, columns=list(columns), group_column=group_by,
                   group_kind=group_kind, group_values=group_values, groups=groups,
                   ranges=max(RANGES_PER_CORE * cores,
                              -(-len(columns) * groups // CELLS_PER_RANGE)))
    read = [*columns, *([group_by] if group_by is not None else [])]
    selected = df.selectExpr(*[ident(c) for c in read]).coalesce(cores)
    merged = (selected.mapInArrow(body, OUTPUT_SCHEMA).groupBy(PART)
              .applyInArrow(merge_blobs, OUTPUT_SCHEMA))
    try:
        table = merged.toArrow()
    except SPARK_ERRORS as exc:
        raise InputDataError(f"Spark failed while counting: {spark_message(exc)}") from None
    order = np.argsort(np.asarray(table.column(PART).to_numpy(), dtype=np.int64))
    blobs = [b.as_buffer() for b in table.column(BLOB)]  # no copies
    parts = [from_blob(blobs[i]) for i in order]
    if not parts:
        return {}
    keys, n, sums = _joined(parts)  # disjoint ranges in key order: sorted
    cell = keys // size
    starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    out: dict[tuple[int, int], BinStatistics] = {}
    bins = keys - cell * size
    for lo, hi in zip(starts, np.r_[starts[1:], len(keys)], strict=True):
        j, g = divmod(int(cell[lo]), groups)
        out[(g, j)] = BinStatistics(bins[lo:hi], n[lo:hi], sums[lo:hi])
    return out


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
        resolved = (None if group_by is None else
                    resolve_groups(list(self.groups or []), self.group_kind or "null",
                                   group_by))
        with block_mapper(n_groups, len(columns)) as (mapper, parts):  # workers start
            bins = spark_bins(self.df, columns, group_by=group_by,
                              group_kind=self.group_kind, group_values=resolved)
            blocks = bin_blocks(bins, len(columns), group_blocks(n_groups, parts))
            del bins
            return describe_blocks(plan, blocks, group_names, columns, rng, mapper)


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
           "cli_describe_route", "partial_bins", "spark_bins"]
