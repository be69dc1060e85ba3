"""Private clamping bounds on Spark: every (group, column) histogram in ONE pass.

:class:`SparkBoundsRoute` is the Spark engine's part of the bounds flow
(:class:`dprect.app.bounds_flow.BoundsRoute`, structurally): read the table
(:func:`~dprect.engines.spark.source.read_source`: Parquet, CSV or Delta), check its schema
(no Spark job), and, once the flow has reserved the budget, compute the histograms
(:func:`spark_histograms`):

1. ``mapInArrow`` with :func:`partial_histograms`: each partition's rows are encoded on
   their public grids and counted per (group, column, grid index) — all groups and all
   columns at once, in numpy; the input is coalesced to one partition per core of the
   session's default parallelism, so each task's partial counts cover a larger share of
   the rows (a file of many splits otherwise sends the aggregation one partial list per
   split, ~100 rows per (group, column) each at 64 columns × 1,000 groups);
2. a Spark aggregation sums the counts by (group, column, grid index);
3. the sums are collected to the driver as one :class:`~dprect.core.bounds.Histogram` per
   (group, column).

So the number of Spark jobs does not depend on the number of groups or columns. The
mechanism itself (every random draw) runs on the driver in the core
(:func:`dprect.core.bounds.run_bounds`), so for a seed the result is identical to the numpy
engine's on the same rows.

**The kernel.** :func:`partial_histograms` and its helpers need numpy and pyarrow only, and
this module is pickled *by value* (as :mod:`dprect.engines.spark.topk` is), so executors do
not need dprect installed. Its encodings ARE the core's: the domains travel with the task
by value (:mod:`dprect.engines.spark.by_value`) and each column is encoded by its
domain's own :meth:`~dprect.core.domains.Domain.encode`, as the numpy route encodes it —
one encoding per domain, no copy. Row rules, as the numpy route's: a value is read as float64
(``pyarrow.compute.cast``, integers beyond 2^53 rounded), a null, NaN or ±inf value is left
out of its column only, and a row whose group value is not one of the listed values (or is
null) is dropped; numbers are compared as float64, −0.0 as 0.0.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql import types as T  # noqa: N812

from dprect.core.bounds import Histogram
from dprect.core.domains import Domain, FloatBins, Grid
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.request import Source
from dprect.engines import row_kernels
from dprect.engines.bounds_input import (
    Histograms,
    complete,
    resolve_groups,
)
from dprect.engines.input_errors import column_names
from dprect.engines.prepared import PreparedRun
from dprect.engines.row_kernels import table_groups
from dprect.engines.spark import by_value  # noqa: F401  (registers the core's modules)
from dprect.engines.spark.checks import label_kind
from dprect.engines.spark.remote import default_parallelism
from dprect.engines.spark.source import SPARK_ERRORS, opened_source, spark_message
from dprect.engines.spark.sql import ident

GROUP = "_g"
COLUMN = "_j"
KEY = "_k"
COUNT = "_n"
#: the Spark DDL schema of :func:`partial_histograms`' output
OUTPUT_SCHEMA = f"{GROUP} int, {COLUMN} int, {KEY} bigint, {COUNT} bigint"

_NUMERIC = (T.NumericType, T.BooleanType, T.NullType)
#: values (rows × columns) buffered before a chunk is counted: 2^25 float64, 256 MB —
#: 2^19 rows of 64 columns (amortises the per-chunk work; bounded on a wide table)
CHUNK_VALUES = 1 << 25
#: a chunk is counted in a dense (group, key) table when the table has at most this many
#: cells a row (else it is sorted)
DENSE_CELLS_PER_ROW = 4


# -- the kernel (numpy and pyarrow only; shipped by value) ------------------------------------
def as_float64(array: Any) -> np.ndarray:
    """A column as float64 with nulls as NaN (the numpy route's
    :func:`~dprect.engines.arrow_input.numeric_column`)."""
    if pa.types.is_null(array.type):
        return np.full(len(array), np.nan)
    out = pc.cast(array, pa.float64(), safe=False)
    if out.null_count:
        out = pc.fill_null(out, float("nan"))
    return np.asarray(out.to_numpy(zero_copy_only=False), dtype=np.float64)


def _count(group: np.ndarray, keys: np.ndarray, values: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Unique (group, key) pairs, sorted, with their counts (and the exact int64 sum of
    ``values`` over each pair's rows, None without values)."""
    if len(keys) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return group[:0].astype(np.int32), empty, empty, None if values is None else empty
    order = np.lexsort((keys, group))
    g, k = group[order], keys[order]
    new = np.ones(len(k), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (k[1:] != k[:-1])
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, len(k))).astype(np.int64)
    sums = None if values is None else \
        np.add.reduceat(np.asarray(values, dtype=np.int64)[order], starts).astype(np.int64)
    return g[starts].astype(np.int32), k[starts], counts, sums


def _reduce(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum partial (group, key, count) lists of one column."""
    g = np.concatenate([p[0] for p in parts])
    k = np.concatenate([p[1] for p in parts])
    n = np.concatenate([p[2] for p in parts])
    if len(k) == 0:
        return g.astype(np.int32), k.astype(np.int64), n.astype(np.int64)
    order = np.lexsort((k, g))
    g, k, n = g[order], k[order], n[order]
    new = np.ones(len(k), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (k[1:] != k[:-1])
    starts = np.flatnonzero(new)
    return g[starts].astype(np.int32), k[starts], np.add.reduceat(n, starts).astype(np.int64)


def chunk_counts(group: np.ndarray, keys: np.ndarray, values: np.ndarray | None = None,
                 depth: int = 2
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`_count` of a chunk, as unique (group, key) pairs in any order: by a dense
    table over (group, key) where its box is at most ``DENSE_CELLS_PER_ROW`` cells a row
    (O(rows); e.g. a coarse grid's keys), else the keys are split at the middle of their
    span and each half counted so (``depth`` times: a FloatBins column of both signs is
    two narrow runs of keys, one each side of zero's bin), else sorted. The same pairs,
    counts and sums (of ``values``, integers in (−2^31, 2^31)) either way."""
    dense = row_kernels.sum_by_digits([group, keys], [] if values is None else [values],
                                      DENSE_CELLS_PER_ROW * len(keys))
    if dense is not None:
        (g, k), n, sums = dense
        return g.astype(np.int32), k.astype(np.int64), n, sums[0] if sums else None
    if depth == 0 or len(keys) < 2:
        return _count(group, keys, values)
    middle = int(keys.min()) // 2 + int(keys.max()) // 2
    high = keys > middle
    if high.all() or not high.any():
        return _count(group, keys, values)
    parts = [chunk_counts(group[side], keys[side],
                          None if values is None else values[side], depth - 1)
             for side in (~high, high)]
    g, k, n = (np.concatenate([p[i] for p in parts]) for i in range(3))
    added = None if values is None else np.concatenate([p[3] for p in parts])
    return g, k, n, added


def finite_chunks(batches: Iterator[Any], chunk_rows: int, columns: Sequence[str],
                  group_column: str | None, group_kind: str,
                  group_values: Sequence[Any] | None
                  ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """A kernel's partition read in chunks: its Arrow ``batches`` buffered until at least
    ``chunk_rows`` rows (the last chunk may hold fewer), then, per chunk and column j,
    (j, group indices, float64 values) of the rows in a listed group whose value is
    finite — a null, NaN or ±inf is left out of that column only (row-local)."""
    pending: list[Any] = []
    rows = 0
    for batch in itertools.chain(batches, [None]):  # None: the end, flush the rest
        if batch is not None:
            if batch.num_rows == 0:
                continue
            pending.append(batch)
            rows += batch.num_rows
            if rows < chunk_rows:
                continue
        if not pending:
            continue
        table = pa.Table.from_batches(pending)
        pending, rows = [], 0
        group = table_groups(table, group_column, group_kind, group_values)
        listed = group >= 0
        every = bool(listed.all())
        for j, name in enumerate(columns):
            x = as_float64(table.column(name).combine_chunks())
            use = np.isfinite(x)
            if every and use.all():  # nothing to leave out: no copies
                yield j, group, x
                continue
            use &= listed
            yield j, group[use], x[use]


def partial_histograms(batches: Iterator[Any], columns: Sequence[str],
                       domains: Sequence[Domain], group_column: str | None,
                       group_kind: str, group_values: Sequence[Any] | None
                       ) -> Iterator[Any]:
    """mapInArrow body: one record batch of (group, column, grid index, count) for the
    rows of a partition. Ungrouped (``group_column`` None): every row is group 0. Batches
    are counted in chunks of about ``CHUNK_VALUES`` values (:func:`chunk_counts`)."""
    parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in columns]
    chunk_rows = -(-CHUNK_VALUES // max(1, len(columns)))
    for j, group, x in finite_chunks(batches, chunk_rows, columns, group_column, group_kind,
                                     group_values):
        parts[j].append(chunk_counts(group, domains[j].encode(x))[:3])
        if len(parts[j]) > 1:  # keep one partial list per column
            parts[j] = [_reduce(parts[j])]
    gs, js, ks, ns = [], [], [], []
    for j, p in enumerate(parts):
        if not p:
            continue
        g, k, n = p[0]
        gs.append(g)
        js.append(np.full(len(k), j, dtype=np.int32))
        ks.append(k)
        ns.append(n)

    def cat(xs: list[np.ndarray], dtype: type) -> Any:
        return pa.array(np.concatenate(xs) if xs else np.zeros(0, dtype=dtype))

    yield pa.RecordBatch.from_arrays(
        [cat(gs, np.int32), cat(js, np.int32), cat(ks, np.int64), cat(ns, np.int64)],
        names=[GROUP, COLUMN, KEY, COUNT])


# executors get the kernel's code with the task, and the domains with their encoders
# (by_value): they need numpy and pyarrow, not dprect
cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(row_kernels)  # table_groups, shared with the numpy route


# -- the driver -------------------------------------------------------------------------------
def check_domain(domain: Domain) -> None:
    """Refuse a domain whose sort values are not grid indices (the histograms count grid
    cells)."""
    if isinstance(domain, FloatBins | Grid):  # IntegerRange too: its encoding is the Grid's
        return
    raise ParameterError(f"the Spark engine bounds columns on FloatBins, Grid or "
                         f"IntegerRange domains, got {domain!r}")


def group_kind(data_type: T.DataType, column: str) -> str:
    """What the group column can hold, from its Spark type only: numeric, boolean, string
    or null; another type is refused (the label's kinds, :func:`.checks.label_kind`)."""
    return label_kind(data_type, column, "group")


def check_schema(df: DataFrame, columns: Sequence[str], group_by: str | None) -> str | None:
    """The schema checks of a bounds run (no Spark job): every column exists and is numeric
    (integer, floating, decimal or boolean), the group column exists and holds numbers,
    booleans or strings. Returns the group column's kind (None without one)."""
    types = {f.name: f.dataType for f in df.schema.fields}
    wanted = [*columns, *([group_by] if group_by is not None else [])]
    missing = [c for c in wanted if c not in types]
    if missing:
        raise InputDataError(f"the input has no column(s) {', '.join(map(repr, missing))}; "
                             f"it has {column_names(list(types))}")
    for c in columns:
        if not isinstance(types[c], _NUMERIC):
            raise InputDataError(f"column {c!r} must be numeric, but its type is "
                                 f"{types[c].simpleString()}")
    return None if group_by is None else group_kind(types[group_by], group_by)


def spark_histograms(df: DataFrame, columns: Sequence[str], domains: Sequence[Domain], *,
                     group_by: str | None = None, groups: Sequence[str] | None = None
                     ) -> Histograms:
    """Every (group index, column index) histogram of ``df`` in one pass (module notes):
    ``groups`` is the PUBLIC list of group values (text, read against the group column's
    type); without ``group_by`` there is one group, 0. Schema errors are raised before any
    Spark job; the number of jobs does not depend on the number of groups."""
    kind = check_schema(df, columns, group_by)
    for d in domains:
        check_domain(d)
    if group_by is not None:
        if not groups:
            raise ParameterError("a group column needs the public list of group values")
        resolved = resolve_groups(list(groups), kind or "null", group_by)
        count = len(groups)
    else:
        resolved, count = None, 1
    body = partial(partial_histograms, columns=list(columns), domains=list(domains),
                   group_column=group_by, group_kind=kind or "", group_values=resolved)
    read = [*columns, *([group_by] if group_by is not None else [])]
    selected = df.selectExpr(*[ident(c) for c in read]).coalesce(
        default_parallelism(df.sparkSession))
    sums = (selected.mapInArrow(body, OUTPUT_SCHEMA)
            .groupBy(GROUP, COLUMN, KEY).agg(F.sum(COUNT).alias(COUNT)))
    try:
        table = sums.toArrow()
    except SPARK_ERRORS as exc:
        raise InputDataError(f"Spark failed while counting: {spark_message(exc)}") from None
    return complete(to_histograms(table), count, len(columns), domains)


def by_cell(table: Any, values: Sequence[str]) -> dict[tuple[int, int], list[np.ndarray]]:
    """A collected table of (group, column, key, *values) rows as, per (group, column),
    the int64 arrays [key, *values] sorted by key (shared with the describe route)."""
    def col(name: str) -> np.ndarray:
        return np.asarray(table.column(name).to_numpy(zero_copy_only=False), dtype=np.int64)

    g, j, k = col(GROUP), col(COLUMN), col(KEY)
    out: dict[tuple[int, int], list[np.ndarray]] = {}
    if len(k) == 0:
        return out
    order = np.lexsort((k, j, g))
    g, j = g[order], j[order]
    arrays = [k[order], *(col(v)[order] for v in values)]
    cut = np.flatnonzero((g[1:] != g[:-1]) | (j[1:] != j[:-1])) + 1
    for lo, hi in zip(np.r_[0, cut], np.r_[cut, len(k)], strict=True):
        out[(int(g[lo]), int(j[lo]))] = [a[lo:hi] for a in arrays]
    return out


def to_histograms(table: Any) -> dict[tuple[int, int], Histogram]:
    """The collected sums as one histogram per (group, column), keys sorted."""
    return {cell: Histogram(k, n) for cell, (k, n) in by_cell(table, [COUNT]).items()}


class SparkBoundsPrepared(PreparedRun):
    """A checked DataFrame, ready for :meth:`histograms`; closing it runs ``on_close``
    (e.g. stops a session started for this run)."""

    def __init__(self, df: DataFrame, source: Source, domains: list[Domain],
                 groups: list[str] | None,
                 on_close: Callable[[], None] | None = None) -> None:
        super().__init__(on_close)
        self.df = df
        self.source = source
        self.domains = domains
        self.groups = groups

    def histograms(self) -> Histograms:
        return spark_histograms(self.df, self.source.columns, self.domains,
                                group_by=self.source.group_by, groups=self.groups)



class SparkBoundsRoute:
    """The Spark engine's part of the bounds flow: start or reuse a session (``session``
    returns it and whether this run owns it), read the table, check its schema and the
    listed groups against the group column's type (no Spark job beyond what reading
    needs). A session the run owns is stopped when the prepared run closes, or at once if
    reading fails."""

    def __init__(self, session: Callable[[], tuple[SparkSession, bool]]) -> None:
        self.session = session

    def open(self, source: Source, domains: list[Domain], groups: list[str] | None,
             progress: Callable[[str], None]) -> SparkBoundsPrepared:
        with opened_source(self.session, source, progress) as (df, stop):
            for d in domains:
                check_domain(d)
            kind = check_schema(df, source.columns, source.group_by)
            if source.group_by is not None:
                resolve_groups(list(groups or []), kind or "null", source.group_by)
            return SparkBoundsPrepared(df, source, domains, groups, stop)


def cli_bounds_route(master: str | None = None, remote: str | None = None
                     ) -> SparkBoundsRoute:
    """The Spark route of ``dprect bounds --engine spark --master M | --remote URL``."""
    from dprect.engines.spark.cli import cli_session

    return SparkBoundsRoute(lambda: cli_session(master, remote))


__all__ = [
    "OUTPUT_SCHEMA",
    "SparkBoundsPrepared",
    "SparkBoundsRoute",
    "by_cell",
    "check_domain",
    "check_schema",
    "cli_bounds_route",
    "partial_histograms",
    "spark_histograms",
    "to_histograms",
]
