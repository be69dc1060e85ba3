"""The histogram queries' executor kernel on raw rows, and the rows it holds packed.

Where the quantile box asks two histogram queries (its centres', then its sides';
:class:`~dprect.engines.spark.rounds.RoundsStrategy` with ``hold``) and the engine has
no ties, the first query reads each positive's *raw* feature values as
:func:`~dprect.engines.spark.shipped.shipped_rows` ships them (FloatType and DoubleType
as they are, every other type as Spark's ``CAST(x AS DOUBLE)``) and the Python worker
encodes them with the core's own :meth:`Domain.encode
<dprect.core.domains.Domain.encode>` — the ``collect`` and ``pass`` strategies' encoding,
exact by :mod:`~dprect.engines.spark.shipped`'s argument: the same sort values, bit for
bit, as the SQL twin ``sort_sql`` the other queries run. Issue #43, d = 1,024: the
1,024 ``sort_sql`` projections cost the JVM more than reading the rows (executor CPU on
131,072 rows: the encoded columns to Arrow 30.9 s, the raw columns 14.4 s).

The same job also emits the batch's raw columns as ONE binary value a block of rows
(:func:`pack`: each column's bytes after the other, at most :data:`PACK_BYTES`), which the
strategy persists: the next query reads those few values from the executors' storage and
decodes them with ``np.frombuffer`` (:func:`unpack`, no copy), where holding the 1,024
feature columns cost a columnar cache build and each read a row-by-row conversion back
to Arrow. The output of both kinds of rows has one schema (:data:`HELD_SCHEMA`): a
partition's counts (``k`` = 0; :func:`counts_row`) and — from the first query — the
packed blocks (``k`` = 1, ``c`` = the block's rows).

**The counts to the driver** (every histogram query, :meth:`RoundsStrategy.histograms
<dprect.engines.spark.rounds.RoundsStrategy.histograms>`): a partition's dense counts of
every slot of every axis, narrowed to the least unsigned integer type that holds its
largest count and compressed (zlib, level 1), in one row; the driver sums them as int64
(:func:`sum_counts`; a public shape: the slots are the thresholds'). Issue #43, d = 1,024:
the dense int64 counts were 1.5 GB to the driver (1,024 axes × 4,097 slots × 45
partitions), their non-zero (slot, count) pairs still 83 MB from 6 partitions of 131,072
rows (~850 of an axis's 4,097 slots occupied in each); one byte a slot, mostly zero
outside the rows' range, compresses to a few hundred kB a partition.

Counting: each axis's sort values by :func:`~dprect.engines.numpy_engine.counter` (the
numpy engine's own code; compiled where asked and the thresholds are many, one counter
per distinct thresholds: :func:`counters` — issue #43, d = 1,024: 1,024 compiled
counters' guides built per partition and query cost the Python workers ~1.1–1.6 s a
partition, more than the counting), over the rows that survive the recorded
cuts (:func:`~dprect.engines.spark.pass_kernel.surviving`); every row is held, cut or not,
so a later query sees its own cuts.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dprect.core.domains import Domain
from dprect.engines.numpy_engine import counter
from dprect.engines.spark.pass_kernel import feature_column, surviving

__all__ = ["BLOCK", "COUNTS", "GUIDED_THRESHOLDS", "HELD_SCHEMA", "PACK_BYTES", "HeldTask",
           "count_held", "count_shipped", "counters", "counts_row", "pack", "sum_counts",
           "unpack"]

#: the output of every histogram query: rows of kind ``k`` — :data:`COUNTS` (``c`` the
#: counts' bytes a slot, ``b`` the compressed counts) or :data:`BLOCK` (the first held
#: query's packed rows: ``c`` the block's rows, ``b`` its bytes)
HELD_SCHEMA = "k int, c long, b binary"
COUNTS, BLOCK = 0, 1
#: at most this many bytes in one packed block: small, because the JVM copies each block
#: whole (Arrow → row → cache) — 64 MiB blocks ran a 4 GiB local driver out of heap on
#: the d = 1,024 × 10^6-row fit (docs/results.md §3, s28); 2 MiB fitted
PACK_BYTES = 2 << 20
#: an axis's counter is compiled from this many thresholds on (:func:`counters`): on
#: 6,600 int64 values numpy's count takes 0.03–0.07 ms for 3–100 thresholds, 0.37 ms for
#: 4,096, the compiled count ~0.03 ms after a guide of 0.2–0.6 ms, 1.8 ms at 4,096
GUIDED_THRESHOLDS = 256


@dataclass(frozen=True)
class HeldTask:
    """What a histogram query's partition needs: the domains, the shipped dtypes
    (float32 or float64, from the schema: :func:`~dprect.engines.spark.shipped.shipped_widths`),
    each axis's thresholds (the sort values' dtype), the recorded cuts (axis, hi, t) and
    whether to count with the compiled kernel."""

    domains: tuple[Domain, ...]
    shipped: tuple[np.dtype, ...]
    thresholds: tuple[np.ndarray, ...]
    cuts: tuple[tuple[int, bool, int | float], ...]
    compiled: bool


def pack(columns: Sequence[np.ndarray]) -> Iterator[tuple[int, pa.Buffer]]:
    """The rows of ``columns`` (one array per feature, equal lengths) as blocks of
    (rows, bytes): each block's columns one after the other, at most :data:`PACK_BYTES`
    bytes (one row at least)."""
    n = len(columns[0]) if columns else 0
    width = sum(c.dtype.itemsize for c in columns)
    step = max(1, PACK_BYTES // max(width, 1))
    for start in range(0, n, step):
        part = [np.ascontiguousarray(c[start:start + step]).view(np.uint8) for c in columns]
        yield min(step, n - start), pa.py_buffer(np.concatenate(part))


def unpack(rows: int, block: pa.Buffer, shipped: Sequence[np.dtype]) -> list[np.ndarray]:
    """A block of :func:`pack` back as its columns (views of ``block``, no copy)."""
    out, offset = [], 0
    for dtype in shipped:
        out.append(np.frombuffer(block, dtype=dtype, count=rows, offset=offset))
        offset += rows * np.dtype(dtype).itemsize
    return out


def counters(thresholds: Sequence[np.ndarray], dtypes: Sequence[np.dtype], *,
             compiled: bool) -> list[Callable[[np.ndarray], np.ndarray]]:
    """Each axis's :func:`~dprect.engines.numpy_engine.counter` for a partition: one per
    distinct (dtype, thresholds) — the box's first query asks every axis of a domain
    the same coarse thresholds — and compiled (where ``compiled``) only for at least
    :data:`GUIDED_THRESHOLDS` thresholds, where the guide (~0.2–1.8 ms to build: 2^16
    slots) pays for itself on a partition's rows; the same counts either way."""
    made: dict[tuple[str, bytes], Callable[[np.ndarray], np.ndarray]] = {}
    out = []
    for t, dtype in zip(thresholds, dtypes, strict=True):
        t = np.asarray(t, dtype=dtype)
        key = (t.dtype.str, t.tobytes())
        if key not in made:
            made[key] = counter(t, dtype, compiled=compiled and len(t) >= GUIDED_THRESHOLDS)
        out.append(made[key])
    return out


class _Counts:
    """A partition's counts of every axis (int64)."""

    def __init__(self, task: HeldTask) -> None:
        self.task = task
        self.count = counters(task.thresholds, [d.sort_dtype for d in task.domains],
                              compiled=task.compiled)
        self.totals = [np.zeros(len(t) + 1, dtype=np.int64) for t in task.thresholds]

    def add(self, columns: Sequence[np.ndarray]) -> None:
        """Count the rows of the raw ``columns`` that survive the cuts."""
        task = self.task
        if not len(columns[0]):
            return
        if task.cuts:
            cut_axes = {a for a, _, _ in task.cuts}
            values = {a: task.domains[a].encode(columns[a]) for a in cut_axes}
            keep = surviving(values, task.cuts, len(columns[0]))
            columns = [c[keep] for c in columns]
        for j, domain in enumerate(task.domains):
            self.totals[j] += self.count[j](domain.encode(columns[j]))  # widens float32



def counts_row(totals: Sequence[np.ndarray]) -> pa.RecordBatch:
    """A partition's counts of every axis (int64) as one :data:`COUNTS` row (module
    notes: narrowed, compressed)."""
    dense = np.concatenate(totals) if totals else np.zeros(0, dtype=np.int64)
    top = int(dense.max()) if len(dense) else 0
    narrow = next(np.dtype(t) for t in ("<u1", "<u2", "<u4", "<u8")
                  if top < 2 ** (8 * np.dtype(t).itemsize))
    blob = zlib.compress(dense.astype(narrow).tobytes(), 1)
    return pa.RecordBatch.from_arrays(
        [pa.array([COUNTS], pa.int32()), pa.array([narrow.itemsize], pa.int64()),
         pa.array([blob], pa.binary())], names=["k", "c", "b"])


def sum_counts(table: pa.Table, widths: Sequence[int]) -> list[np.ndarray]:
    """The driver's sum of a query's :data:`COUNTS` rows (columns ``c``, ``b``): each
    axis's int64 counts (``widths``: an axis's slots)."""
    total = np.zeros(sum(widths), dtype=np.int64)
    sizes = table.column("c").to_pylist()
    for size, blob in zip(sizes, table.column("b").to_pylist(), strict=True):
        # a count is at most a partition's rows: exact as int64 whatever its type
        total += np.frombuffer(zlib.decompress(blob), dtype=f"<u{size}").astype(np.int64)
    return np.split(total, np.cumsum(widths)[:-1])


def _blocks(columns: Sequence[np.ndarray]) -> pa.RecordBatch:
    """The packed blocks of ``columns`` as :data:`BLOCK` rows."""
    sizes, data = [], []
    for rows, block in pack(columns):
        sizes.append(rows)
        data.append(pa.Array.from_buffers(pa.binary(), 1, [
            None, pa.py_buffer(np.array([0, block.size], dtype=np.int32)), block]))
    return pa.RecordBatch.from_arrays(
        [pa.array([BLOCK] * len(sizes), pa.int32()), pa.array(sizes, pa.int64()),
         pa.concat_arrays(data) if data else pa.array([], pa.binary())],
        names=["k", "c", "b"])


def count_shipped(batches: Iterator[pa.RecordBatch], task: HeldTask, *, hold: bool
                  ) -> Iterator[pa.RecordBatch]:
    """The first query's partition: its shipped raw rows (columns ``_x{j}``) counted,
    then their counts row; ``hold``: each batch's rows packed too (module notes)."""
    counts = _Counts(task)
    for batch in batches:
        columns = [batch.column(feature_column(j)).to_numpy(zero_copy_only=False)
                   for j in range(len(task.domains))]
        counts.add(columns)
        if hold and len(columns[0]):
            yield _blocks(columns)
        del columns
    yield counts_row(counts.totals)


def count_held(batches: Iterator[pa.RecordBatch], task: HeldTask
               ) -> Iterator[pa.RecordBatch]:
    """A later query's partition: its held :data:`BLOCK` rows decoded and counted, then
    its counts row."""
    counts = _Counts(task)
    for batch in batches:
        sizes = batch.column(1).to_numpy(zero_copy_only=False)
        blocks = batch.column(2)
        for i, rows in enumerate(sizes):
            counts.add(unpack(int(rows), blocks[i].as_buffer(), task.shipped))
    yield counts_row(counts.totals)
