"""The ``pass`` strategy's vectorised kernel: every (axis, side) order's best rows, per partition.

Runs inside Spark's Python workers (``DataFrame.mapInArrow``) and on the driver; it needs
numpy and pyarrow only (no pyspark). :mod:`dprect.engines.spark.order_pass` registers this
module — and the core modules whose objects a task carries (domains, ties) — to be pickled
*by value*, so executors do not need dprect installed.

Input batches: column ``_id`` (int64, unique per row within one pass: Spark's
``monotonically_increasing_id``), one raw feature column per axis (:func:`feature_column`;
float32, float64, or Spark's cast to double), and optionally ``_bad`` (rows that make the
input invalid: reported, never used). Each batch is turned into sort values with the
core's own code — :meth:`Domain.encode <dprect.core.domains.Domain.encode>` of the values
as float64, then :meth:`TieBreaker.refine <dprect.core.ties.TieBreaker.refine>` with the
row's occurrence rank among the identical rows from column ``_rk`` (computed in Spark:
:func:`dprect.engines.spark.order_pass.ranks`) — so a row's sort values are, bit for bit,
those the numpy engine computes for the same float64 values.
The cuts so far (:attr:`PassTask.cuts`, sort-value thresholds) are applied row-locally.
Output: per order kept, rows (``_o`` = the order's index, ``_id``, the key in ``_ki``
(int64) or ``_kf`` (float64)), plus a summary row per task (``_o`` = −1) whose ``_bad``
says whether a flagged row was seen and whose ``_id`` counts the rows that survived the
cuts (a speed aid for the driver, never output).

Order keys: κ = v for ``lo`` and κ = −v for ``hi`` (v the sort value: int64 below 2^62 or a
canonical float64), so "best" always means "smallest key" and v = ±κ exactly.

Guarantee (the prefix property). For an order with K = ``rows`` and optional key threshold
T, :class:`Best` keeps a set S of min(K, n') of the n' rows offered with κ ≤ T (all rows
when T is None) such that no offered row left out has a key strictly smaller than a key in
S. Merging the kept sets of disjoint parts and keeping K again preserves this, so
partition → merge → driver gives, per order, rows of the remaining set such that every
remaining row not kept has a key ≥ every kept key (docs/architecture.md, "The pass plan").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

ORDER = "_o"
ROW_ID = "_id"
BAD = "_bad"
INT_KEY = "_ki"
#: the input's occurrence rank of a row among the rows identical to it (present when the
#: task has ties: :func:`dprect.engines.spark.order_pass.run_pass`)
RANK = "_rk"
FLOAT_KEY = "_kf"
SUMMARY = -1
#: buffered rows beyond K before an order's buffer is reduced again
_SLACK = 65536


def feature_column(axis: int) -> str:
    """The name of axis ``axis``'s raw value column in the pass's input."""
    return f"_x{axis}"


@dataclass(frozen=True)
class PassOrder:
    """One order to keep: its best ``rows`` rows by key among those with key ≤
    ``threshold`` (None: no threshold). ``hi``: ordered from the largest sort value."""

    axis: int
    hi: bool
    rows: int
    threshold: int | float | None = None


@dataclass(frozen=True)
class PassTask:
    """What one pass computes: the orders to keep, on the rows surviving ``cuts``.

    ``domains``/``ties``: the engine's (ties None when no axis is refined); ``cuts``:
    (axis, hi, t) on sort values — hi removes v ≥ t, lo removes v ≤ t."""

    domains: tuple[Any, ...]
    ties: Any
    orders: tuple[PassOrder, ...]
    cuts: tuple[tuple[int, bool, int | float], ...] = ()

    def needed_axes(self) -> list[int]:
        """Axes whose sort values the pass computes."""
        axes = {o.axis for o in self.orders} | {c[0] for c in self.cuts}
        if self.ties is not None:  # h needs every hashed axis (refined axes are hashed)
            axes |= set(self.ties.hashed)
        return sorted(axes)

    def key_is_int(self, axis: int) -> bool:
        return bool(self.domains[axis].sort_dtype.kind == "i")


def order_key(values: np.ndarray, hi: bool) -> np.ndarray:
    """κ of sort values ``values`` in an order (module notes)."""
    return -values if hi else values


class Best:
    """The best ``order.rows`` rows of one order seen so far (buffered, reduced in bulk)."""

    def __init__(self, order: PassOrder) -> None:
        self.order = order
        self._keys: list[np.ndarray] = []
        self._ids: list[np.ndarray] = []
        self._buffered = 0
        self._worst: Any = None  # worst kept key after the last reduce (key's dtype)

    def add(self, keys: np.ndarray, ids: np.ndarray) -> None:
        t = self.order.threshold
        if t is not None:
            keep = keys <= t
            keys, ids = keys[keep], ids[keep]
        if self._worst is not None:
            keep = keys <= self._worst  # ties kept: harmless, reduced later
            keys, ids = keys[keep], ids[keep]
        if len(keys) == 0:
            return
        self._keys.append(keys)
        self._ids.append(ids)
        self._buffered += len(keys)
        if self._buffered > 4 * self.order.rows + _SLACK:
            self._reduce()

    def _reduce(self) -> None:
        k = self.order.rows
        keys = np.concatenate(self._keys) if len(self._keys) > 1 else self._keys[0]
        ids = np.concatenate(self._ids) if len(self._ids) > 1 else self._ids[0]
        if len(keys) > k:
            idx = np.argpartition(keys, k - 1)[:k]
            keys, ids = keys[idx], ids[idx]
            self._worst = keys.max()
        self._keys, self._ids = [keys], [ids]
        self._buffered = len(keys)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """The kept (keys, ids), in no particular order (possibly empty)."""
        if not self._keys:
            return np.empty(0), np.empty(0, dtype=np.int64)
        self._reduce()
        return self._keys[0], self._ids[0]


def sort_values(batch: pa.RecordBatch, task: PassTask, rows: np.ndarray | None
                ) -> dict[int, np.ndarray]:
    """The sort values (refined where the task's ties refine) of the needed axes for the
    batch's rows ``rows`` (None: all)."""
    axes = task.needed_axes()
    raw: dict[int, np.ndarray] = {}
    for j in axes:
        x = batch.column(feature_column(j)).to_numpy(zero_copy_only=False)
        raw[j] = task.domains[j].encode(x if rows is None else x[rows])  # widens float32
    if task.ties is None:
        return raw
    d = len(task.domains)
    n = len(next(iter(raw.values())))
    full = [raw.get(j, np.zeros(n, dtype=np.int64)) for j in range(d)]
    ranks = None  # without the rank column (the thresholds' sample): ranks in the batch
    if RANK in batch.schema.names:
        ranks = batch.column(RANK).to_numpy(zero_copy_only=False)
        ranks = ranks if rows is None else ranks[rows]
    refined = task.ties.refine(full, ranks)
    return {j: refined[j] for j in axes}


def surviving(values: dict[int, np.ndarray], cuts: Sequence[tuple[int, bool, int | float]],
              n: int) -> np.ndarray:
    """Which of ``n`` rows (sort values per axis in ``values``) survive ``cuts``: a hi cut
    at t removes v ≥ t, a lo cut removes v ≤ t."""
    keep = np.ones(n, dtype=bool)
    for axis, hi, t in cuts:
        keep &= (values[axis] < t) if hi else (values[axis] > t)
    return keep


def _offer(batch: pa.RecordBatch, task: PassTask, best: Sequence[Best]) -> tuple[bool, int]:
    """Offer one batch's rows to every order: whether a row makes the input invalid, and
    how many rows survive the cuts."""
    bad = False
    rows: np.ndarray | None = None
    if BAD in batch.schema.names:
        flags = np.asarray(batch.column(BAD).to_numpy(zero_copy_only=False), dtype=bool)
        if flags.any():
            bad = True
            rows = np.flatnonzero(~flags)
    ids = batch.column(ROW_ID).to_numpy()
    if rows is not None:
        ids = ids[rows]
    values = sort_values(batch, task, rows)
    if task.cuts:
        idx = np.flatnonzero(surviving(values, task.cuts, len(ids)))
        if len(idx) < len(ids):
            ids = ids[idx]
            values = {j: v[idx] for j, v in values.items()}
    for b in best:
        b.add(order_key(values[b.order.axis], b.order.hi), ids)
    return bad, len(ids)


def _emit(task: PassTask, best: Sequence[Best], bad: bool, remaining: int
          ) -> pa.RecordBatch:
    """Every order's kept rows tagged with ``_o``, plus the summary row: ``_bad``, and in
    ``_id`` the number of rows that survived the cuts."""
    tags = [np.array([SUMMARY], dtype=np.int32)]
    ids = [np.array([remaining], dtype=np.int64)]
    ints = [np.zeros(1, dtype=np.int64)]
    floats = [np.zeros(1, dtype=np.float64)]
    for i, b in enumerate(best):
        keys, kept = b.result()
        n = len(keys)
        tags.append(np.full(n, i, dtype=np.int32))
        ids.append(kept.astype(np.int64, copy=False))
        if task.key_is_int(b.order.axis):  # an int64 key never goes through a float64
            ints.append(keys.astype(np.int64, copy=False))
            floats.append(np.zeros(n, dtype=np.float64))
        else:
            ints.append(np.zeros(n, dtype=np.int64))
            floats.append(keys.astype(np.float64, copy=False))
    flags = np.zeros(sum(len(t) for t in tags), dtype=bool)
    flags[0] = bad
    return pa.RecordBatch.from_arrays(
        [pa.array(np.concatenate(tags)), pa.array(np.concatenate(ids)),
         pa.array(np.concatenate(ints)), pa.array(np.concatenate(floats)), pa.array(flags)],
        names=[ORDER, ROW_ID, INT_KEY, FLOAT_KEY, BAD])


OUTPUT_SCHEMA = (f"{ORDER} int, {ROW_ID} bigint, {INT_KEY} bigint, {FLOAT_KEY} double, "
                 f"{BAD} boolean")


def partition_lists(batches: Iterator[pa.RecordBatch], task: PassTask
                    ) -> Iterator[pa.RecordBatch]:
    """mapInArrow body of the pass: every surviving row is offered to every order."""
    best = [Best(o) for o in task.orders]
    bad = False
    remaining = 0
    for batch in batches:
        if batch.num_rows:
            flagged, survived = _offer(batch, task, best)
            bad, remaining = bad or flagged, remaining + survived
    yield _emit(task, best, bad, remaining)


def merge_lists(batches: Iterator[pa.RecordBatch], task: PassTask
                ) -> Iterator[pa.RecordBatch]:
    """mapInArrow body of the merge stage (and the driver's last merge): rows arrive tagged
    with their order; each order keeps its best rows again; summary flags are or-ed."""
    best = [Best(o) for o in task.orders]
    bad = False
    remaining = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        tags = batch.column(ORDER).to_numpy()
        flags = np.asarray(batch.column(BAD).to_numpy(zero_copy_only=False), dtype=bool)
        bad = bad or bool(flags[tags == SUMMARY].any())
        ids = batch.column(ROW_ID).to_numpy()
        remaining += int(ids[tags == SUMMARY].sum())
        ints = batch.column(INT_KEY).to_numpy()
        floats = batch.column(FLOAT_KEY).to_numpy()
        for i in np.unique(tags[tags != SUMMARY]):
            rows = np.flatnonzero(tags == i)
            b = best[int(i)]
            keys = ints if task.key_is_int(b.order.axis) else floats
            b.add(keys[rows], ids[rows])
    yield _emit(task, best, bad, remaining)
