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
row's occurrence rank among the identical rows — so a row's sort values are, bit for bit,
those the numpy engine computes for the same float64 values. The rank comes either from
column ``_rk`` (a window in Spark: :func:`dprect.engines.spark.order_pass.ranks`) or, when
the task says so (:attr:`PassTask.key_buckets`), from the partition itself: the kernel
ranks the partition's rows exactly (:func:`dprect.core.ties.occurrence_ranks`) and also
emits their distinct row keys (:func:`dprect.core.ties.row_keys`), bucketed, for the merge
stage to check that no key occurs in two partitions — then every group of identical rows
lies in one partition and the partition's ranks are the global ones (otherwise the merge
stage says ``split`` and the pass is run again with the window).
The cuts so far (:attr:`PassTask.cuts`, sort-value thresholds) are applied row-locally.
Output: per order kept, rows (``_o`` = the order's index, ``_id``, the key in ``_ki``
(int64) or ``_kf`` (float64)), plus a summary row per task (``_o`` = −1) whose ``_bad``
says whether a flagged row was seen and whose ``_id`` counts the rows that survived the
cuts (a speed aid for the driver, never output); with partition ranks, key rows (``_o`` =
−2, ``_id`` = bucket, ``_hk`` = the bucket's distinct row keys as int64 bytes) and, from
the merge stage, a split row (``_o`` = −3) when some key occurs in two partitions.

Keys only (:attr:`PassTask.keys_only`, for a plan that never cuts: the composition
baseline). No cut will ever remove a listed row, so an order needs only the multiset of
its best K keys: no row ids, no cross-order bookkeeping. The output is then
:data:`KEYS_ONLY_SCHEMA` — ``_o``, one int64 ``_k`` and ``_bad`` (12 bytes an entry
against 29) — where ``_k`` holds an int key as it is and a float key as its float64 bit
pattern (:func:`pack_keys`: bit for bit, −0.0 and all), and the summary row's ``_k``
the count of rows that survived the cuts. Each order's rows are emitted contiguously.
Such a task has no ties (the composition baseline refines nothing) and no cuts.

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
from itertools import pairwise
from typing import Any

import numpy as np
import pyarrow as pa

from dprect.core.ties import occurrence_ranks, row_keys

ORDER = "_o"
ROW_ID = "_id"
BAD = "_bad"
INT_KEY = "_ki"
#: the input's occurrence rank of a row among the rows identical to it (present when the
#: task has ties: :func:`dprect.engines.spark.order_pass.run_pass`)
RANK = "_rk"
FLOAT_KEY = "_kf"
#: a key row's packed distinct row keys (int64 bytes; null on other rows)
ROW_KEYS = "_hk"
SUMMARY = -1
#: tag of a key row (one per partition and bucket) and of the merge stage's split row
KEYS = -2
SPLIT = -3
#: keys-only output's one key column: an int key, or a float key's float64 bits
KEY = "_k"
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
    (axis, hi, t) on sort values — hi removes v ≥ t, lo removes v ≤ t; ``key_buckets``:
    0 when the input carries the rank column (or there are no ties), else the partitions
    rank their own rows and emit their row keys in this many buckets (module notes);
    ``keys_only``: list keys without row ids (:data:`KEYS_ONLY_SCHEMA`; module notes)."""

    domains: tuple[Any, ...]
    ties: Any
    orders: tuple[PassOrder, ...]
    cuts: tuple[tuple[int, bool, int | float], ...] = ()
    key_buckets: int = 0
    keys_only: bool = False

    def __post_init__(self) -> None:
        if self.keys_only and (self.ties is not None or self.cuts):
            raise ValueError("a keys-only pass has no ties and no cuts")

    @property
    def schema(self) -> str:
        """The pass's output schema (Spark DDL)."""
        return KEYS_ONLY_SCHEMA if self.keys_only else OUTPUT_SCHEMA

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


def pack_keys(keys: np.ndarray) -> np.ndarray:
    """Keys as int64 for the keys-only column: an int key as it is, a float key's float64
    bit pattern (the inverse is :func:`unpack_keys`; no value goes through a conversion)."""
    if keys.dtype.kind == "f":
        return np.ascontiguousarray(keys, dtype=np.float64).view(np.int64)
    return np.asarray(keys, dtype=np.int64)


def unpack_keys(packed: np.ndarray, is_int: bool) -> np.ndarray:
    """The keys :func:`pack_keys` packed, for an axis whose keys are int (or float)."""
    packed = np.ascontiguousarray(packed, dtype=np.int64)
    return packed if is_int else packed.view(np.float64)


class Best:
    """The best ``order.rows`` rows of one order seen so far (buffered, reduced in bulk);
    ``ids``: False keeps the keys alone (a keys-only pass: :meth:`add`'s ids are ignored,
    :meth:`result`'s are empty)."""

    def __init__(self, order: PassOrder, ids: bool = True) -> None:
        self.order = order
        self._with_ids = ids
        self._keys: list[np.ndarray] = []
        self._ids: list[np.ndarray] = []
        self._buffered = 0
        self._worst: Any = None  # worst kept key after the last reduce (key's dtype)

    def add(self, keys: np.ndarray, ids: np.ndarray | None) -> None:
        t = self.order.threshold
        for bound in (t, self._worst):  # the worst kept key: ties kept, reduced later
            if bound is not None:
                keep = keys <= bound
                keys = keys[keep]
                if self._with_ids:
                    assert ids is not None
                    ids = ids[keep]
        if len(keys) == 0:
            return
        self._keys.append(keys)
        if self._with_ids:
            assert ids is not None
            self._ids.append(ids)
        self._buffered += len(keys)
        if self._buffered > 4 * self.order.rows + _SLACK:
            self._reduce()

    def _reduce(self) -> None:
        k = self.order.rows
        keys = np.concatenate(self._keys) if len(self._keys) > 1 else self._keys[0]
        if not self._with_ids:
            if len(keys) > k:
                keys = np.partition(keys, k - 1)[:k]
                self._worst = keys.max()
            self._keys, self._buffered = [keys], len(keys)
            return
        ids = np.concatenate(self._ids) if len(self._ids) > 1 else self._ids[0]
        if len(keys) > k:
            idx = np.argpartition(keys, k - 1)[:k]
            keys, ids = keys[idx], ids[idx]
            self._worst = keys.max()
        self._keys, self._ids = [keys], [ids]
        self._buffered = len(keys)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """The kept (keys, ids), in no particular order (possibly empty; ids empty when
        the keys are kept alone)."""
        if not self._keys:
            return np.empty(0), np.empty(0, dtype=np.int64)
        self._reduce()
        return self._keys[0], self._ids[0] if self._with_ids else np.empty(0, dtype=np.int64)


def _encoded(batch: pa.RecordBatch, task: PassTask, axes: Sequence[int],
             rows: np.ndarray | None) -> dict[int, np.ndarray]:
    """The unrefined sort values of axes ``axes`` for the batch's rows ``rows``."""
    out = {}
    for j in axes:
        x = batch.column(feature_column(j)).to_numpy(zero_copy_only=False)
        out[j] = task.domains[j].encode(x if rows is None else x[rows])  # widens float32
    return out


def sort_values(batch: pa.RecordBatch, task: PassTask, rows: np.ndarray | None
                ) -> dict[int, np.ndarray]:
    """The sort values (refined where the task's ties refine) of the needed axes for the
    batch's rows ``rows`` (None: all), ranked by the batch's ``_rk`` column (without it —
    the thresholds' sample — by the batch's own rows)."""
    axes = task.needed_axes()
    raw = _encoded(batch, task, axes, rows)
    if task.ties is None:
        return raw
    d = len(task.domains)
    n = len(next(iter(raw.values())))
    full = [raw.get(j, np.zeros(n, dtype=np.int64)) for j in range(d)]
    ranks = None
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


def _good_rows(batch: pa.RecordBatch) -> tuple[bool, np.ndarray | None]:
    """Whether the batch holds a flagged row, and its unflagged rows (None: all)."""
    if BAD in batch.schema.names:
        flags = np.asarray(batch.column(BAD).to_numpy(zero_copy_only=False), dtype=bool)
        if flags.any():
            return True, np.flatnonzero(~flags)
    return False, None


def _offer_values(values: dict[int, np.ndarray], ids: np.ndarray, task: PassTask,
                  best: Sequence[Best]) -> int:
    """Offer rows (sort values per needed axis, ids) to every order, after the cuts; how
    many rows survive the cuts."""
    if task.cuts:
        idx = np.flatnonzero(surviving(values, task.cuts, len(ids)))
        if len(idx) < len(ids):
            ids = ids[idx]
            values = {j: v[idx] for j, v in values.items()}
    for b in best:
        b.add(order_key(values[b.order.axis], b.order.hi), ids)
    return len(ids)


def _offer(batch: pa.RecordBatch, task: PassTask, best: Sequence[Best]) -> tuple[bool, int]:
    """Offer one batch's rows to every order: whether a row makes the input invalid, and
    how many rows survive the cuts."""
    bad, rows = _good_rows(batch)
    ids = batch.column(ROW_ID).to_numpy()
    if rows is not None:
        ids = ids[rows]
    return bad, _offer_values(sort_values(batch, task, rows), ids, task, best)


def _emit(task: PassTask, best: Sequence[Best], bad: bool, remaining: int,
          split: bool = False) -> pa.RecordBatch:
    """Every order's kept rows tagged with ``_o``, plus the summary row: ``_bad``, and in
    ``_id`` the number of rows that survived the cuts; and a split row when ``split``.
    A keys-only task's output is :func:`_emit_keys`'."""
    if task.keys_only:
        return _emit_keys(best, bad, remaining)
    results = [b.result() for b in best]
    total = 1 + sum(len(keys) for keys, _ in results) + int(split)
    tags = np.empty(total, dtype=np.int32)  # filled in place: one array per column
    ids = np.zeros(total, dtype=np.int64)
    ints = np.zeros(total, dtype=np.int64)
    floats = np.zeros(total, dtype=np.float64)
    tags[0], ids[0] = SUMMARY, remaining
    at = 1
    for i, (b, (keys, kept)) in enumerate(zip(best, results, strict=True)):
        end = at + len(keys)
        tags[at:end] = i
        ids[at:end] = kept
        if task.key_is_int(b.order.axis):  # an int64 key never goes through a float64
            ints[at:end] = keys
        else:
            floats[at:end] = keys
        at = end
    if split:
        tags[at] = SPLIT
    flags = np.zeros(total, dtype=bool)
    flags[0] = bad
    return _batch(tags, ids, ints, floats, flags, pa.nulls(total, pa.binary()))


def _emit_keys(best: Sequence[Best], bad: bool, remaining: int) -> pa.RecordBatch:
    """A keys-only task's output (:data:`KEYS_ONLY_SCHEMA`): the summary row (``_k`` =
    the rows that survived the cuts), then every order's kept keys, packed
    (:func:`pack_keys`), order by order."""
    results = [b.result()[0] for b in best]
    total = 1 + sum(len(keys) for keys in results)
    tags = np.empty(total, dtype=np.int32)
    packed = np.empty(total, dtype=np.int64)
    tags[0], packed[0] = SUMMARY, remaining
    at = 1
    for i, keys in enumerate(results):
        end = at + len(keys)
        tags[at:end] = i
        packed[at:end] = pack_keys(keys) if len(keys) else 0
        at = end
    flags = np.zeros(total, dtype=bool)
    flags[0] = bad
    return pa.RecordBatch.from_arrays(
        [pa.array(tags, pa.int32()), pa.array(packed, pa.int64()), pa.array(flags, pa.bool_())],
        names=[ORDER, KEY, BAD])


def _batch(tags: np.ndarray, ids: np.ndarray, ints: np.ndarray, floats: np.ndarray,
           flags: np.ndarray, keys: pa.Array) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(tags, pa.int32()), pa.array(ids, pa.int64()), pa.array(ints, pa.int64()),
         pa.array(floats, pa.float64()), pa.array(flags, pa.bool_()), keys],
        names=[ORDER, ROW_ID, INT_KEY, FLOAT_KEY, BAD, ROW_KEYS])


def _key_rows(keys: np.ndarray, buckets: int) -> pa.RecordBatch:
    """Key rows: the distinct row keys ``keys``, one row per bucket (key mod ``buckets``)
    holding that bucket's keys as int64 bytes."""
    keys = np.unique(keys)
    bucket = keys % buckets  # numpy's % of a positive modulus is never negative
    order = np.argsort(bucket, kind="stable")
    keys, bucket = keys[order], bucket[order]
    present, starts = np.unique(bucket, return_index=True)
    ends = np.append(starts[1:], len(keys))
    blobs = [keys[a:b].tobytes() for a, b in zip(starts, ends, strict=True)]
    n = len(present)
    return _batch(np.full(n, KEYS, dtype=np.int32), present.astype(np.int64),
                  np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.float64),
                  np.zeros(n, dtype=bool), pa.array(blobs, pa.binary()))


OUTPUT_SCHEMA = (f"{ORDER} int, {ROW_ID} bigint, {INT_KEY} bigint, {FLOAT_KEY} double, "
                 f"{BAD} boolean, {ROW_KEYS} binary")
#: a keys-only pass's output (module notes)
KEYS_ONLY_SCHEMA = f"{ORDER} int, {KEY} bigint, {BAD} boolean"


def partition_lists(batches: Iterator[pa.RecordBatch], task: PassTask
                    ) -> Iterator[pa.RecordBatch]:
    """mapInArrow body of the pass: every surviving row is offered to every order."""
    best = [Best(o, ids=not task.keys_only) for o in task.orders]
    if task.ties is not None and task.key_buckets:
        yield from _partition_ranked(batches, task, best)
        return
    bad = False
    remaining = 0
    for batch in batches:
        if batch.num_rows:
            flagged, survived = _offer(batch, task, best)
            bad, remaining = bad or flagged, remaining + survived
    yield _emit(task, best, bad, remaining)


def _partition_ranked(batches: Iterator[pa.RecordBatch], task: PassTask,
                      best: Sequence[Best]) -> Iterator[pa.RecordBatch]:
    """The pass over one partition ranked by itself: the partition's unflagged rows are
    encoded on every axis (a row's identity is all its sort values) and held — memory of
    the order of the partition's size — ranked exactly among themselves, refined and
    offered at once; then the key rows of their distinct row keys, for the merge stage's
    check that the ranks are global (module notes)."""
    d = len(task.domains)
    bad = False
    ids: list[np.ndarray] = []
    parts: list[dict[int, np.ndarray]] = []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        flagged, rows = _good_rows(batch)
        bad = bad or flagged
        got = batch.column(ROW_ID).to_numpy()
        ids.append(got if rows is None else got[rows])
        parts.append(_encoded(batch, task, range(d), rows))
    n = sum(len(i) for i in ids)
    if n == 0:
        yield _emit(task, best, bad, 0)
        return
    columns = [np.concatenate([p[j] for p in parts]) for j in range(d)]
    del parts
    keys = row_keys(columns)  # the ranks' grouping and the merge's check: one hash
    refined = task.ties.refine(columns, occurrence_ranks(columns, keys))
    values = {j: refined[j] for j in task.needed_axes()}
    del refined
    remaining = _offer_values(values, np.concatenate(ids), task, best)
    yield _emit(task, best, bad, remaining)
    yield _key_rows(keys, task.key_buckets)


def order_rows(tags: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(order index, its row positions in ``tags``) for every order with rows, in one
    stable sort of the order rows (a scan of ``tags`` per order costs orders × rows: at
    d = 1,024, 2,048 orders over 2·10^7 listed rows took 20 s)."""
    listed = np.flatnonzero(tags >= 0)
    if len(listed) == 0:
        return
    by_order = listed[np.argsort(tags[listed], kind="stable")]
    sorted_tags = tags[by_order]
    starts = np.flatnonzero(np.r_[True, sorted_tags[1:] != sorted_tags[:-1]])
    ends = np.append(starts[1:], len(by_order))
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        yield int(sorted_tags[a]), by_order[a:b]


def merge_lists(batches: Iterator[pa.RecordBatch], task: PassTask
                ) -> Iterator[pa.RecordBatch]:
    """mapInArrow body of the merge stage (and the driver's last merge): rows arrive tagged
    with their order; each order keeps its best rows again; summary flags are or-ed. Key
    rows (one per partition and bucket, each partition's keys distinct) are pooled per
    bucket: a key met twice in a bucket occurs in two partitions — a split row says so.
    A keys-only task's rows carry packed keys and no ids (:func:`_merge_keys`)."""
    if task.keys_only:
        yield _merge_keys(batches, task)
        return
    best = [Best(o) for o in task.orders]
    bad = False
    split = False
    remaining = 0
    pooled: dict[int, list[np.ndarray]] = {}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        tags = batch.column(ORDER).to_numpy()
        flags = np.asarray(batch.column(BAD).to_numpy(zero_copy_only=False), dtype=bool)
        bad = bad or bool(flags[tags == SUMMARY].any())
        split = split or bool((tags == SPLIT).any())
        ids = batch.column(ROW_ID).to_numpy()
        remaining += int(ids[tags == SUMMARY].sum())
        for r in np.flatnonzero(tags == KEYS):
            pooled.setdefault(int(ids[r]), []).append(
                np.frombuffer(batch.column(ROW_KEYS)[int(r)].as_py(), dtype=np.int64))
        ints = batch.column(INT_KEY).to_numpy()
        floats = batch.column(FLOAT_KEY).to_numpy()
        for i, rows in order_rows(tags):
            b = best[i]
            keys = ints if task.key_is_int(b.order.axis) else floats
            b.add(keys[rows], ids[rows])
    for arrays in pooled.values():
        if not split and len(arrays) > 1:
            keys = np.concatenate(arrays)
            split = len(np.unique(keys)) < len(keys)
    yield _emit(task, best, bad, remaining, split)


def _merge_keys(batches: Iterator[pa.RecordBatch], task: PassTask) -> pa.RecordBatch:
    """:func:`merge_lists` of a keys-only task: each order's best keys again, the summary
    rows' counts summed and flags or-ed."""
    best = [Best(o, ids=False) for o in task.orders]
    bad = False
    remaining = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        tags = batch.column(ORDER).to_numpy()
        packed = batch.column(KEY).to_numpy()
        summary = tags == SUMMARY
        flags = np.asarray(batch.column(BAD).to_numpy(zero_copy_only=False), dtype=bool)
        bad = bad or bool(flags[summary].any())
        remaining += int(packed[summary].sum())
        for i, rows in key_runs(tags):
            b = best[i]
            b.add(unpack_keys(packed[rows], task.key_is_int(b.order.axis)), None)
    return _emit_keys(best, bad, remaining)


def key_runs(tags: np.ndarray) -> Iterator[tuple[int, slice]]:
    """(order index, slice) of every run of equal order tags in ``tags`` (a keys-only
    output lists each order's rows together, so a batch holds a few runs per order at
    most: no sort of the rows, unlike :func:`order_rows`)."""
    if len(tags) == 0:
        return
    starts = np.flatnonzero(tags[1:] != tags[:-1]) + 1
    bounds = [0, *starts.tolist(), len(tags)]
    for a, b in pairwise(bounds):
        t = int(tags[a])
        if t >= 0:
            yield t, slice(a, b)
