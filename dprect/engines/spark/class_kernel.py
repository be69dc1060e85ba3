"""The classes' shared first pass inside Spark's Python workers: every class's orders in ONE
pass (issue #24; the driver's side is :mod:`dprect.engines.spark.class_pass`).

Like :mod:`dprect.engines.spark.pass_kernel` (whose code it runs, class by class) it needs
numpy and pyarrow only, and is pickled by value. The input is a pass input
(:func:`~dprect.engines.spark.pass_kernel.feature_column` columns, ``_id``, optional
``_bad`` and ``_rk``) with one more column after the d features, ``_x{d}``: the row's
class index (−1 for a row of no listed class, shipped only when the ``error`` policy
flags it). One task per class (:class:`~dprect.engines.spark.pass_kernel.PassTask`, each
class's own first task; they share domains, ties, keys-only mode and key buckets).

Class i's part of a batch is its rows plus the flagged rows: the single fit of class i
reads exactly those (its positives, and every row the ``error`` policy flags, whatever its
label), and the kernel never lists a flagged row, only reports it. Each part goes through
the single pass's own code (:func:`~dprect.engines.spark.pass_kernel.partition_lists`,
:func:`~dprect.engines.spark.pass_kernel.merge_lists`), so each class's output rows are,
row for row, what its own pass would emit on the same partitions, with column ``_g``
(:data:`CLASS`) = i appended. When the partitions rank identical rows themselves (ties,
``key_buckets``), class i's rows are ranked among class i's rows only — its own fit's
ranks — and its key rows carry ``_g`` too, so the merge stage checks each class apart.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dprect.engines.spark.pass_kernel import (
    BAD,
    Best,
    PassTask,
    _emit,
    _offer,
    feature_column,
    merge_lists,
    partition_lists,
)

#: the output's class index column
CLASS = "_g"


def class_column(dims: int) -> str:
    """The input column holding a row's class index (after the ``dims`` features)."""
    return feature_column(dims)


def class_schema(tasks: Sequence[PassTask]) -> str:
    """The shared pass's output schema: the single pass's, plus ``_g``."""
    return f"{tasks[0].schema}, {CLASS} int"


def of_class(batch: pa.RecordBatch, dims: int, index: int) -> pa.RecordBatch:
    """Class ``index``'s part of an input batch: its rows and every flagged row."""
    keep = batch.column(class_column(dims)).to_numpy(zero_copy_only=False) == index
    if BAD in batch.schema.names:
        keep |= np.asarray(batch.column(BAD).to_numpy(zero_copy_only=False), dtype=bool)
    return batch.filter(pa.array(keep))


def tagged(batch: pa.RecordBatch, index: int) -> pa.RecordBatch:
    """An output batch of class ``index`` with its ``_g`` column."""
    return batch.append_column(CLASS, pa.array(np.full(batch.num_rows, index, dtype=np.int32)))


def untagged(batch: pa.RecordBatch | pa.Table, index: int) -> pa.RecordBatch | pa.Table:
    """The rows of class ``index`` of a shared output, without ``_g``."""
    mine = batch.filter(pc.equal(batch.column(CLASS), index))
    return mine.drop_columns([CLASS])


def class_partition_lists(batches: Iterator[pa.RecordBatch], tasks: Sequence[PassTask]
                          ) -> Iterator[pa.RecordBatch]:
    """mapInArrow body of the shared pass: every class's orders, each class offered its
    own part of every batch (module notes)."""
    dims = len(tasks[0].domains)
    if tasks[0].ties is not None and tasks[0].key_buckets:
        # each class's partition ranks its own rows, all at once: hold the partition
        # (the single pass holds its encoded columns likewise)
        held = [b for b in batches if b.num_rows]
        for i, task in enumerate(tasks):
            for out in partition_lists(iter([of_class(b, dims, i) for b in held]), task):
                yield tagged(out, i)
        return
    best = [[Best(o, ids=not t.keys_only) for o in t.orders] for t in tasks]
    bad = [False] * len(tasks)
    remaining = [0] * len(tasks)
    for batch in batches:
        if batch.num_rows == 0:
            continue
        for i, task in enumerate(tasks):
            part = of_class(batch, dims, i)
            if part.num_rows:
                flagged, survived = _offer(part, task, best[i])
                bad[i], remaining[i] = bad[i] or flagged, remaining[i] + survived
    for i, task in enumerate(tasks):
        yield tagged(_emit(task, best[i], bad[i], remaining[i]), i)


def class_merge_lists(batches: Iterator[pa.RecordBatch], tasks: Sequence[PassTask]
                      ) -> Iterator[pa.RecordBatch]:
    """mapInArrow body of the shared pass's merge stage: each class's rows merged by the
    single pass's :func:`~dprect.engines.spark.pass_kernel.merge_lists` (a stage's rows
    are lists, at most K per order and partition: held at once)."""
    held = [b for b in batches if b.num_rows]
    for i, task in enumerate(tasks):
        parts = [p for p in (untagged(b, i) for b in held) if p.num_rows]
        if parts:
            for out in merge_lists(iter(parts), task):
                yield tagged(out, i)
