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
partition's non-zero (slot, count) pairs with ``b`` null (what the driver sums), then —
from the first query — the packed blocks with ``s`` = −1, ``c`` = the block's rows.

Counting: each axis's sort values by :func:`~dprect.engines.numpy_engine.counter` (the
numpy engine's own code; compiled where asked), over the rows that survive the recorded
cuts (:func:`~dprect.engines.spark.pass_kernel.surviving`); every row is held, cut or not,
so a later query sees its own cuts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dprect.core.domains import Domain
from dprect.engines.numpy_engine import counter
from dprect.engines.spark.pass_kernel import feature_column, surviving

__all__ = ["HELD_SCHEMA", "PACK_BYTES", "HeldTask", "count_held", "count_shipped", "pack",
           "unpack"]

#: the output of both queries: (slot, count) pairs with ``b`` null; packed blocks of
#: rows (``s`` = −1, ``c`` = the block's rows, ``b`` its bytes)
HELD_SCHEMA = "s long, c long, b binary"
#: at most this many bytes in one packed block (Arrow's binary offsets are 32-bit)
PACK_BYTES = 64 << 20


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


class _Counts:
    """A partition's counts of every axis (int64), and their non-zero pairs."""

    def __init__(self, task: HeldTask) -> None:
        self.task = task
        self.count = [counter(t, d.sort_dtype, compiled=task.compiled)
                      for t, d in zip(task.thresholds, task.domains, strict=True)]
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

    def pairs(self) -> pa.RecordBatch:
        dense = np.concatenate(self.totals)
        slots = np.flatnonzero(dense)
        return pa.RecordBatch.from_arrays(
            [pa.array(slots), pa.array(dense[slots]), pa.nulls(len(slots), pa.binary())],
            names=["s", "c", "b"])


def _blocks(columns: Sequence[np.ndarray]) -> pa.RecordBatch:
    """The packed blocks of ``columns`` as rows of :data:`HELD_SCHEMA`."""
    sizes, data = [], []
    for rows, block in pack(columns):
        sizes.append(rows)
        data.append(pa.Array.from_buffers(pa.binary(), 1, [
            None, pa.py_buffer(np.array([0, block.size], dtype=np.int32)), block]))
    return pa.RecordBatch.from_arrays(
        [pa.array([-1] * len(sizes), pa.int64()), pa.array(sizes, pa.int64()),
         pa.concat_arrays(data) if data else pa.array([], pa.binary())],
        names=["s", "c", "b"])


def count_shipped(batches: Iterator[pa.RecordBatch], task: HeldTask, *, hold: bool
                  ) -> Iterator[pa.RecordBatch]:
    """The first query's partition: its shipped raw rows (columns ``_x{j}``) counted,
    then their non-zero pairs; ``hold``: each batch's rows packed too (module notes)."""
    counts = _Counts(task)
    for batch in batches:
        columns = [batch.column(feature_column(j)).to_numpy(zero_copy_only=False)
                   for j in range(len(task.domains))]
        counts.add(columns)
        if hold and len(columns[0]):
            yield _blocks(columns)
        del columns
    yield counts.pairs()


def count_held(batches: Iterator[pa.RecordBatch], task: HeldTask
               ) -> Iterator[pa.RecordBatch]:
    """A later query's partition: its held blocks (``b`` not null) decoded and counted,
    then the non-zero pairs."""
    counts = _Counts(task)
    for batch in batches:
        sizes = batch.column(1).to_numpy(zero_copy_only=False)
        blocks = batch.column(2)
        for i, rows in enumerate(sizes):
            counts.add(unpack(int(rows), blocks[i].as_buffer(), task.shipped))
    yield counts.pairs()
