"""Per-partition top-K of every (axis, side) order — the vectorised kernel of the one pass.

Runs inside Spark's Python workers (``DataFrame.mapInArrow``) and on the driver. It needs
numpy and pyarrow only, and :mod:`dprect.engines.spark.engine` registers this module to be pickled
*by value*, so executors do not need dprect installed.

Columns: ``_x{j}`` is the value of feature j as a float64 (Spark's ``cast("double")``) or,
for the axes in ``integers`` (axes refined for ties, :mod:`dprect.core.ties`), its refined
sort value as an int64 (up to 2^62: never converted to float64); ``_bad`` (optional)
marks rows that make the input invalid, ``_id`` (ignored) numbers rows in the direct pass,
``_w{k}`` (optional, :func:`own_sql`) packs which orders a row is offered to — bit b of
``_w{k}`` for order 32k + b (absent: every row to every order, or by :attr:`Order.beyond`)
—, ``_o`` tags output rows with their order (−1: the summary row, whose ``_bad`` says
whether a bad row was seen).

An order whose own threshold predicate is a plain comparison of its shipped value (the
pass's ``x >= t`` on ``hi``, ``x <= t`` on ``lo``, x the float64 ``_x{axis}``: an untied
axis) carries t as :attr:`Order.beyond`, and the kernel evaluates that predicate itself
(:func:`beyond`) as Spark evaluates it — the same comparison on the same float64 values
(Spark orders NaN above every number and equal to itself, and −0.0 equal to 0.0; a
null compares as null, a row not offered) — so the rows offered are the rows the bit
would mark, without a column computed for them in Spark.

Guarantee (the prefix property used by the engine): for an order with key κ (κ = x for
``lo``, −x for ``hi``; x the float64 value or the int64 refined sort value) and length K,
:class:`TopK` keeps a set S of min(K, n) rows such that no row it was given and did not
keep has a key strictly smaller than a key in S. Merging the kept sets of disjoint parts
and keeping K again preserves this (a row dropped in its part is beaten by the K rows kept
there), so partition → merge → driver is exact. An order is given only the rows its bit
of ``_w`` marks: when those are the rows closed upward in its order (the pass's own
threshold predicate), S is a prefix of the order — rows marked for other orders only,
which lie behind them but are not its next rows, never enter it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

ORDER = "_o"
BAD = "_bad"
ROW_ID = "_id"
SUMMARY = -1
#: prefix of the packed columns of which orders a row is offered to (:func:`own_sql`)
OWN = "_w"
#: orders per packed column: bits 0…31 of a bigint (as few ``|`` per SQL expression as
#: :data:`~dprect.engines.spark.prefetch.HASH_CHUNK`'s ``+``: Spark's parser recurses
#: once per operator)
OWN_BITS = 32


def value_column(axis: int) -> str:
    """The name of feature ``axis``'s float64 column in the pass."""
    return f"_x{axis}"


def own_sql(predicates: Sequence[str]) -> list[tuple[str, str]]:
    """(SQL, column name) of the packed columns ``_w{k}``: bit b of ``_w{k}`` is set on a
    row where ``predicates[32k + b]`` holds (a null counts as false). Packed for size:
    one bigint (an 8-byte field of Spark's rows, one Arrow column) for every 32 orders,
    where a boolean per order is a field and a column each. No guard against Catalyst's
    constraint propagation, which the pass turns off while it is planned and run
    (:func:`~dprect.engines.spark.session.constraints_unpropagated`)."""
    out = []
    for k in range(0, len(predicates), OWN_BITS):
        bits = [f"CASE WHEN {p} THEN {1 << (i - k)} ELSE 0 END"
                for i, p in enumerate(predicates[k:k + OWN_BITS], start=k)]
        out.append((f"CAST({' | '.join(bits)} AS BIGINT)", f"{OWN}{k // OWN_BITS}"))
    return out


def beyond(values: pa.Array, t: float, hi: bool) -> np.ndarray:
    """Where Spark's ``x >= t`` (``hi``) or ``x <= t`` holds on float64 ``values``: its
    double comparison (``SQLOrderingUtil.compareDoubles``) treats NaN as equal to NaN and
    above every other value, and −0.0 as equal to 0.0 (numpy's too); a null row compares
    as null: False."""
    x = values.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    if hi:  # NaN ≥ anything; a number ≥ NaN never
        mask = np.isnan(x) | (x >= t)
    elif np.isnan(t):  # anything ≤ NaN
        mask = np.ones(len(x), dtype=bool)
    else:  # NaN ≤ a number never
        mask = x <= t
    if values.null_count:
        mask &= ~values.is_null().to_numpy(zero_copy_only=False)
    return mask


def _owned(batch: pa.RecordBatch, orders: Sequence[Order]) -> list[np.ndarray] | None:
    """Per order, the mask of ``batch``'s rows offered to it — its ``_w`` bit, or its
    :attr:`Order.beyond` predicate on its own value column —, or None: neither, every
    row goes to every order."""
    bits = f"{OWN}0" in batch.schema.names
    if not bits and all(o.beyond is None for o in orders):
        return None
    packed = ([_numpy(batch, f"{OWN}{k}") for k in range(-(-len(orders) // OWN_BITS))]
              if bits else [])
    out = []
    for i, o in enumerate(orders):
        if o.beyond is not None:
            out.append(beyond(batch.column(value_column(o.axis)), o.beyond, o.hi))
        elif bits:
            out.append((packed[i // OWN_BITS] >> (i % OWN_BITS)) & 1 == 1)
        else:
            out.append(np.ones(batch.num_rows, dtype=bool))
    return out


@dataclass(frozen=True)
class Order:
    """One (axis, side) order to keep: its top ``rows`` rows with the values of ``columns``."""

    axis: int
    hi: bool
    rows: int
    columns: tuple[int, ...]
    #: the order's own threshold t where its predicate is a plain comparison of its
    #: shipped value: the rows offered to it are those where :func:`beyond` holds
    #: (None: its ``_w`` bit, or every row)
    beyond: float | None = None


class TopK:
    """The best ``order.rows`` rows of one order seen so far (buffered, reduced in bulk)."""

    def __init__(self, order: Order) -> None:
        self.order = order
        self._chunks: list[dict[int, np.ndarray]] = []
        self._buffered = 0
        # key of the worst kept row after the last reduce (a numpy scalar of the key's
        # dtype: an int64 key above 2^53 must not be rounded through a float)
        self._cut: Any = None

    def key(self, values: np.ndarray) -> np.ndarray:
        return -values if self.order.hi else values

    def add(self, columns: dict[int, np.ndarray]) -> None:
        """Offer rows (a dict axis → float64 or int64 values, equal lengths)."""
        key = self.key(columns[self.order.axis])
        if self._cut is not None:
            keep = np.flatnonzero(key <= self._cut)  # ties kept: harmless, reduced later
            if len(keep) == 0:
                return
            if len(keep) < len(key):
                columns = {c: v[keep] for c, v in columns.items()}
        chunk = {c: columns[c] for c in self.order.columns}
        self._chunks.append(chunk)
        self._buffered += len(chunk[self.order.axis])
        if self._buffered > 4 * self.order.rows + 65536:
            self._reduce()

    def _reduce(self) -> None:
        k = self.order.rows
        cols = {c: np.concatenate([ch[c] for ch in self._chunks]) for c in self.order.columns}
        n = len(cols[self.order.axis])
        if n > k:
            key = self.key(cols[self.order.axis])
            idx = np.argpartition(key, k - 1)[:k]
            cols = {c: v[idx] for c, v in cols.items()}
            self._cut = key[idx].max()
        self._chunks = [cols]
        self._buffered = min(n, k)

    def result(self) -> dict[int, np.ndarray]:
        """The kept rows (at most ``rows``), in no particular order (none: empty float64
        arrays, which :func:`_emit` casts to the column's dtype)."""
        if not self._chunks:
            return {c: np.empty(0, dtype=np.float64) for c in self.order.columns}
        self._reduce()
        return self._chunks[0]


def _numpy(batch: pa.RecordBatch, name: str) -> np.ndarray:
    return batch.column(name).to_numpy(zero_copy_only=False)


def _dtype(column: int, integers: Collection[int]) -> type[np.generic]:
    return np.int64 if column in integers else np.float64


def _emit(tops: Sequence[TopK], carried: Sequence[int], bad: bool,
          integers: Collection[int]) -> pa.RecordBatch:
    """The kept rows of every order, tagged with ``_o``, plus the summary row. A column an
    order does not carry (and the summary row's) holds a filler never read: NaN, or 0 in
    an int64 column."""
    def filler(c: int, n: int) -> np.ndarray:
        return np.zeros(n, dtype=np.int64) if c in integers else np.full(n, np.nan)

    tags, cols = [np.array([SUMMARY], dtype=np.int32)], {c: [filler(c, 1)] for c in carried}
    for i, top in enumerate(tops):
        kept = top.result()
        n = len(kept[top.order.axis])
        tags.append(np.full(n, i, dtype=np.int32))
        for c in carried:  # each piece in its column's dtype: no int64 through a float64
            cols[c].append(kept[c].astype(_dtype(c, integers), copy=False) if c in kept
                           else filler(c, n))
    bads = np.zeros(sum(len(t) for t in tags), dtype=bool)
    bads[0] = bad
    arrays = [pa.array(np.concatenate(tags)), pa.array(bads)]
    arrays += [pa.array(np.concatenate(cols[c])) for c in carried]
    return pa.RecordBatch.from_arrays(arrays,
                                      names=[ORDER, BAD, *map(value_column, carried)])


def output_schema(carried: Iterable[int], integers: Collection[int] = ()) -> str:
    """The Spark DDL schema of :func:`partition_top` / :func:`merge_top` output."""
    return ", ".join([f"{ORDER} int", f"{BAD} boolean",
                      *(f"{value_column(c)} {'bigint' if c in integers else 'double'}"
                        for c in carried)])


def partition_top(batches: Iterator[pa.RecordBatch], orders: Sequence[Order],
                  carried: Sequence[int], integers: Collection[int] = ()
                  ) -> Iterator[pa.RecordBatch]:
    """mapInArrow body of the pass: every input row is offered to every order, or with
    ``_w`` columns (:func:`own_sql`) to the orders whose bit it has, and to an order with
    :attr:`Order.beyond` where that predicate holds on it.

    Input: ``_x{c}`` for c in ``carried`` (int64 for c in ``integers``, never null) and
    optionally ``_bad``; rows with ``_bad`` true are reported in the summary row and kept
    out of every order.
    """
    tops = [TopK(o) for o in orders]
    bad = False
    for batch in batches:
        if batch.num_rows == 0:
            continue
        columns = {c: _numpy(batch, value_column(c)) for c in carried}
        owned = _owned(batch, orders)
        if BAD in batch.schema.names:
            flags = _numpy(batch, BAD).astype(bool)
            if flags.any():
                bad = True
                owned = [m & ~flags for m in owned] if owned is not None else None
                good = np.flatnonzero(~flags)
                if owned is None:
                    columns = {c: v[good] for c, v in columns.items()}
        for i, top in enumerate(tops):
            if owned is None:
                top.add(columns)
            elif owned[i].any():
                rows = np.flatnonzero(owned[i])
                top.add({c: columns[c][rows] for c in top.order.columns})
    yield _emit(tops, carried, bad, integers)


def merge_top(batches: Iterator[pa.RecordBatch], orders: Sequence[Order],
              carried: Sequence[int], integers: Collection[int] = ()
              ) -> Iterator[pa.RecordBatch]:
    """mapInArrow body of the merge stage (and the driver's last merge): rows arrive tagged
    with their order; each order keeps its best rows again; summary flags are or-ed."""
    tops = [TopK(o) for o in orders]
    bad = False
    for batch in batches:
        if batch.num_rows == 0:
            continue
        tags = _numpy(batch, ORDER)
        bad = bad or bool(_numpy(batch, BAD)[tags == SUMMARY].any())
        columns = {c: _numpy(batch, value_column(c)) for c in carried}
        for i in np.unique(tags[tags != SUMMARY]):
            rows = np.flatnonzero(tags == i)
            top = tops[int(i)]
            top.add({c: columns[c][rows] for c in top.order.columns})
    yield _emit(tops, carried, bad, integers)
