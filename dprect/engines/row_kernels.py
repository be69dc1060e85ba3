"""Row-local kernels written with numpy and pyarrow only — no other dprect import — so that
the Spark engine can ship this module to executors *by value* (executors need not have
dprect installed) and the in-memory route can call the very same code.

:func:`group_index` — each row's position in a PUBLIC list of group values, −1 for a value
not listed or a null. Numbers are compared in the column's own type: a column of an
integer type (or a decimal of scale 0) as exact integers (a listed value that is no
integer of the type's range matches no row), a float32 column as float32 (each listed
value rounded to its nearest float32: :func:`single_key`), other numbers as float64 (−0.0
as 0.0, NaN matching nothing); booleans as booleans, anything else as its text. Nothing
here raises for a value: what a row holds decides only which group it counts in
(row-local, so it costs no privacy). The list's lookup (:func:`group_lookup`: a dense
table for integer values, :class:`DenseGroups`, else Arrow's set) is made once for a
tuple — an executor's task unpickles its list once — and kept in one slot.

:func:`sum_by_digits` — the partial reduction of the Spark kernels (rows to unique keys
with their counts and exact integer sums) by counting into a dense table when the keys'
span is small, which costs O(rows) instead of a sort; the same unique keys, counts and
sums as sorting (it declines, returning None, where the table would be too large or a
sum might not be exact, and the caller sorts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def group_index(array: Any, kind: str, values: Sequence[Any] | None) -> np.ndarray:
    """For each row, the index of its group value in ``values`` (int32), or −1: another
    value or a null. ``kind`` is the column's kind from its type (numeric, boolean, string,
    null); a numeric column is compared in its own type (module notes). The values'
    lookup is :func:`group_lookup`'s (made once for a tuple)."""
    n = len(array)
    if values is None or kind == "null" or n == 0:
        return np.full(n, -1, dtype=np.int32)
    col = array
    if pa.types.is_dictionary(col.type):
        col = pc.cast(col, col.type.value_type)
    if kind == "numeric" and integer_type(col.type):
        return group_lookup(kind, values, col.type).index(col)
    lookup = group_lookup(kind, values, col.type)
    if kind == "numeric":
        col = pc.add(pc.cast(col, pa.float64(), safe=False), 0.0)
        if isinstance(lookup, DenseGroups):
            return lookup.index(col.to_numpy(zero_copy_only=False))
    elif kind != "boolean":
        col = pc.cast(col, pa.string())
    found = pc.index_in(col, value_set=lookup)
    return np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int32)


def integer_type(data_type: Any) -> bool:
    """Whether an Arrow type (not a dictionary) holds integers only, compared as exact
    integers: an integer type or a decimal of scale 0."""
    return bool(pa.types.is_integer(data_type)
                or (pa.types.is_decimal(data_type) and data_type.scale == 0))


def single_type(data_type: Any) -> bool:
    """Whether an Arrow type (a dictionary's values too) is float32, whose keys are
    compared as float32 (:func:`single_key`)."""
    t = data_type.value_type if pa.types.is_dictionary(data_type) else data_type
    return bool(pa.types.is_float32(t))


def single_key(value: float) -> float:
    """A listed number as a float32 column compares it: its float64 rounded to the nearest
    float32 (ties to even), as a float64 (exact) — unless that float32 is infinite (the
    number lies beyond float32's range): then the float64 itself, which no float32 row
    holds, so that it never matches a row's ±inf."""
    x = float(value)
    with np.errstate(over="ignore"):
        r = float(np.float32(x))
    return r + 0.0 if np.isfinite(r) or not np.isfinite(x) else x


def exact_integer(value: Any) -> int | None:
    """A listed value as an exact integer, or None when it is none (a fraction, a
    non-finite number): an int as it is, a float or a Decimal that is a whole number."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | np.integer):
        return int(value)
    try:
        if not np.isfinite(float(value)):
            return None
        return int(value) if value == int(value) else None
    except (TypeError, ValueError, OverflowError):
        return None


class IntegerGroups:
    """Listed values looked up in a column of an integer type (or a decimal of scale 0),
    compared as exact integers: the values that are integers of the type's range, in an
    array of the type the column is compared in (int64 for the signed types and the
    unsigned ones up to 32 bits, uint64, the decimal itself) with their positions in the
    list — as a dense table where they allow it (:class:`DenseGroups`' rule, over int64);
    a listed value that is no integer of that range matches no row."""

    def __init__(self, values: Sequence[Any], data_type: Any) -> None:
        if pa.types.is_decimal(data_type):
            self.type = data_type
            top = 10 ** data_type.precision - 1
            low, high = -top, top
        elif pa.types.is_uint64(data_type):
            self.type, low, high = pa.uint64(), 0, (1 << 64) - 1
        else:
            self.type, low, high = pa.int64(), -(1 << 63), (1 << 63) - 1
        kept: Any = None
        if pa.types.is_int64(self.type) and all(type(v) is int for v in values):
            try:  # the usual list, ids of int64's range: in C's loops
                kept = np.fromiter(values, np.int64, len(values))
                self.where = np.arange(len(values), dtype=np.int32)
            except OverflowError:
                kept = None
        if kept is None:
            exact = [(i, exact_integer(v)) for i, v in enumerate(values)]
            inside = [(i, x) for i, x in exact if x is not None and low <= x <= high]
            self.where = np.asarray([i for i, _ in inside], dtype=np.int32)
            kept = [x for _, x in inside]
        self.dense: DenseGroups | None = None
        if pa.types.is_int64(self.type) and len(kept):
            ints = np.asarray(kept, dtype=np.int64)
            if max(abs(int(ints.min())), abs(int(ints.max()))) <= _DENSE_LIMIT:
                self.dense = DenseGroups.of(ints.astype(np.float64))  # exact: below 2^53
        if pa.types.is_decimal(self.type):
            from decimal import Decimal

            self.set = pa.array([Decimal(int(k)) for k in kept], self.type)
        else:
            self.set = pa.array(kept, self.type)

    def index(self, col: Any) -> np.ndarray:
        """Each row's position in the list (int32), −1 for a null or another value."""
        col = pc.cast(col, self.type)  # exact: int64 holds every narrower signed value
        if self.dense is not None:
            valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            x = np.asarray(pc.fill_null(col, 0).to_numpy(zero_copy_only=False),
                           dtype=np.int64)
            inside = valid & (x >= int(self.dense.low)) & (x <= int(self.dense.high))
            slot = np.where(inside, x - int(self.dense.low), 0)
            found = np.where(inside, self.dense.table[slot], np.int32(-1))
        else:
            got = pc.index_in(col, value_set=self.set)
            found = np.asarray(pc.fill_null(got, -1).to_numpy(zero_copy_only=False),
                               dtype=np.int32)
        if not len(self.where):
            return np.full(len(col), -1, dtype=np.int32)
        return np.where(found >= 0, self.where[np.maximum(found, 0)], np.int32(-1)
                        ).astype(np.int32)


#: a dense table of integer group values spans at most this many slots a value (plus
#: :data:`_DENSE_SLACK`); wider lists are looked up by Arrow's hash set
_DENSE_SLOTS_PER_VALUE = 4
_DENSE_SLACK = 1 << 16
#: a dense table's values lie in [−2^53, 2^53], where every float64 integer is exact
_DENSE_LIMIT = float(1 << 53)


class DenseGroups:
    """Integer group values v_0 … v_{G−1} (distinct, each in [−2^53, 2^53], none −0.0) as
    a table t of span = max − min + 1 slots, t[v_i − min] = i and −1 elsewhere: a float64
    x (−0.0 already 0.0) is in group t[x − min] when it is an integer in [min, max], else
    in none (NaN and ±inf fail the range) — the same index as Arrow's ``index_in``
    against the values (exact equality of float64s, −1 where none is equal), in O(1) a
    row where a hash set of G values would be built each call."""

    def __init__(self, low: float, table: np.ndarray) -> None:
        self.low = low
        self.high = low + (len(table) - 1)  # exact: both integers within ±2^53
        self.table = table

    def index(self, x: np.ndarray) -> np.ndarray:
        """Each float64 of ``x``'s group index (int32), −1 for none."""
        x = np.asarray(x, dtype=np.float64)
        inside = (x >= self.low) & (x <= self.high)
        inside &= np.floor(x) == x
        slot = np.where(inside, x, self.low).astype(np.int64) - np.int64(self.low)
        return np.where(inside, self.table[slot], np.int32(-1))

    @classmethod
    def of(cls, values: Sequence[Any] | np.ndarray) -> DenseGroups | None:
        """The table of float64 ``values``, or None (Arrow's set then): a value not an
        integer of [−2^53, 2^53], a −0.0, two equal values, or a span past
        :data:`_DENSE_SLOTS_PER_VALUE` slots a value (plus :data:`_DENSE_SLACK`)."""
        v = np.asarray(values, dtype=np.float64)
        if not len(v) or not np.all(np.abs(v) <= _DENSE_LIMIT) \
                or not np.all(np.floor(v) == v) or np.signbit(v[v == 0]).any():
            return None
        low, high = float(v.min()), float(v.max())
        if high - low + 1 > _DENSE_SLOTS_PER_VALUE * len(v) + _DENSE_SLACK:
            return None
        table = np.full(int(high - low) + 1, -1, dtype=np.int32)
        slot = v.astype(np.int64) - np.int64(low)
        table[slot] = np.arange(len(v), dtype=np.int32)
        if np.count_nonzero(table >= 0) != len(v):  # two equal values: Arrow's first
            return None
        return cls(low, table)


#: the one lookup kept: (values, kind, lookup) of the last tuple of values looked up —
#: the run's public list, unpickled once a task in an executor, so a task builds its
#: lookup once (not once a chunk); the tuple itself is held, so its identity is not reused
_LAST: tuple[Any, tuple[str, Any], Any] | None = None


def group_lookup(kind: str, values: Sequence[Any], data_type: Any = None) -> Any:
    """The values' lookup for ``kind`` and the column's Arrow type ``data_type``: an
    :class:`IntegerGroups` for a column of an integer type, a :class:`DenseGroups` for
    numbers that allow it, else the Arrow array of the values as the column is compared
    (float64 — a float32 column's values rounded as :func:`single_key` says —, bool or
    string) for ``index_in``. Made once for a ``tuple`` of values (immutable, so its
    identity names its contents): kept in one slot, :data:`_LAST`, until another tuple
    (or another kind or type) is looked up; a list is made each call (it could change in
    place)."""
    global _LAST
    last = _LAST
    if last is not None and last[0] is values and last[1] == (kind, data_type):
        return last[2]
    lookup: Any
    if kind == "numeric" and data_type is not None and integer_type(data_type):
        lookup = IntegerGroups(values, data_type)
    elif kind == "numeric":
        single = data_type is not None and single_type(data_type)
        numbers = [single_key(v) if single else float(v) for v in values]
        lookup = DenseGroups.of(numbers) or pa.array(numbers, pa.float64())
    elif kind == "boolean":
        lookup = pa.array([bool(v) for v in values], pa.bool_())
    else:
        lookup = pa.array([str(v) for v in values], pa.string())
    if isinstance(values, tuple):
        _LAST = (values, (kind, data_type), lookup)
    return lookup


def table_groups(table: Any, group_column: str | None, kind: str,
                 values: Sequence[Any] | None) -> np.ndarray:
    """Each row's group index in an Arrow ``table`` (:func:`group_index` of its
    ``group_column``); every row is group 0 when the run is ungrouped (None)."""
    if group_column is None:
        return np.zeros(table.num_rows, dtype=np.int32)
    return group_index(table.column(group_column).combine_chunks(), kind, values)


#: a value's two parts for the exact float64 sums: v = hi·2^16 + lo, 0 ≤ lo < 2^16
_LOW_BITS = 16
#: values summed by :func:`sum_by_digits` must lie in (−2^31, 2^31): |hi| < 2^15, so
#: every partial float64 sum of up to 2^37 rows is an integer below 2^53 (exact)
_VALUE_LIMIT = 1 << 31
#: below this many rows the values are summed in one piece: n·2^31 < 2^53, so every
#: float64 partial sum is an exact integer without the split
_ONE_PIECE_ROWS = 1 << 22


def sum_by_digits(digits: Sequence[np.ndarray], values: Sequence[np.ndarray],
                  limit: int) -> tuple[list[np.ndarray], np.ndarray, list[np.ndarray]] | None:
    """The unique tuples (digits[0][r], digits[1][r], …) in lexicographic order, with the
    number of rows of each and, per array of ``values``, the exact int64 sum over its
    rows — or None (the caller sorts instead) when the digits' box (the product of their
    spans) has more than ``limit`` cells, there are no rows, or a value lies outside
    (−2^31, 2^31). Each row's tuple gets its index in the box, np.bincount counts (and sums
    the values — in one piece below 2^22 rows, else split as v = hi·2^16 + lo — so that
    every float64 partial sum is an exact integer), and the non-empty cells are read back
    in index order, which is the tuples' order."""
    n = len(digits[0]) if digits else 0
    if n == 0:
        return None
    lows, spans = [], []
    size = 1
    for d in digits:
        lo, hi = int(d.min()), int(d.max())
        lows.append(lo)
        spans.append(hi - lo + 1)
        size *= hi - lo + 1
    if size > limit:
        return None
    for v in values:
        if len(v) and (int(v.max()) >= _VALUE_LIMIT or int(v.min()) <= -_VALUE_LIMIT):
            return None
    code = np.zeros(n, dtype=np.int64)
    for d, lo, span in zip(digits, lows, spans, strict=True):
        code *= span
        code += np.asarray(d, dtype=np.int64) - lo
    counts = np.bincount(code, minlength=size)
    cells = np.flatnonzero(counts)
    out: list[np.ndarray] = []
    rest = cells.astype(np.int64)
    for lo, span in zip(reversed(lows), reversed(spans), strict=True):
        out.append(rest % span + lo)
        rest = rest // span
    out.reverse()
    sums = []
    for v in values:
        v = np.asarray(v, dtype=np.int64)
        if n < _ONE_PIECE_ROWS:  # every partial sum is an integer below 2^53: exact
            sums.append(np.bincount(code, weights=v, minlength=size)[cells].astype(np.int64))
            continue
        high = np.bincount(code, weights=v >> _LOW_BITS, minlength=size)[cells]
        low = np.bincount(code, weights=v & ((1 << _LOW_BITS) - 1), minlength=size)[cells]
        sums.append((high.astype(np.int64) << _LOW_BITS) + low.astype(np.int64))
    return out, counts[cells].astype(np.int64), sums


__all__ = ["DenseGroups", "IntegerGroups", "exact_integer", "group_index", "group_lookup",
           "integer_type", "single_key", "single_type", "sum_by_digits", "table_groups"]
