""":class:`~dprect.engines.numpy_matrix.MatrixEngine`'s list pass compiled (numba): one
read of the rows that counts the selected ones and lists every value at or beyond its
column's threshold.

The numpy pass (``numpy_matrix``) makes, per block of rows, a finiteness test, two
comparisons, an OR and a ``flatnonzero`` — five sweeps of the block and a boolean array
each — which on float64 costs more than a min/max pass of the matrix. Compiled, it is ONE
sweep of each row (:func:`_hit_rows`): a row is *selected* when it is positive and every
value is finite (the ``drop`` policy of :func:`dprect.core.reading.select_rows`), it is
*hit* when some value v has v ≥ hi_j or v ≤ lo_j (NaN is neither; ±inf only in a row that
is not selected); the selected rows are counted and the hit ones listed. A hit row's
values are copied, while in cache, to a small buffer, from which :func:`_by_column` takes
each hit (row, raw value) grouped by column, rows ascending — the entries the numpy pass
finds, in the order its stable sort by column gives. The raw values keep the matrix's dtype (the
domains encode them as the numpy path does), and the comparisons are those of numpy on
the same dtypes (a float32 value against a float64 threshold compares exactly), so the
lists are the numpy pass's, bit for bit (tests/engines/test_numpy_engines.py).

Memory: a buffer of :data:`CHUNK_ROWS` hit rows and their values, and the entries (a row
number, int32 below 2^31 rows, and a raw value: at most 12 bytes each); nothing per row
of the matrix.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dprect.engines.jit import compile_kernel


def _hit_rows(X: Any, positive: Any, hi: Any, lo: Any, start: int, rows: Any,
              values: Any) -> Any:
    """(next row, selected rows counted, filled): from row ``start``, each selected row of
    ``X`` counted and, when hit, its number and its d values copied to the next place of
    ``rows`` and ``values`` (while the row is in cache); stops at the end (next row =
    len(X)) or before a hit row the buffers have no room for (that row neither counted
    nor copied: resume from it). ``positive``: one flag per row, or empty for every row.
    Plain Python, compiled by numba."""
    n, d = X.shape
    select = positive.shape[0] > 0
    room = rows.shape[0]
    count = 0
    e = 0
    for i in range(start, n):
        if select and not positive[i]:
            continue
        bad = False
        hit = False
        for j in range(d):
            v = X[i, j]
            bad |= not math.isfinite(v)
            hit |= (v >= hi[j]) | (v <= lo[j])
        if bad:
            continue
        if hit:
            if e == room:
                return i, count, e
            rows[e] = i
            for j in range(d):
                values[e, j] = X[i, j]
            e += 1
        count += 1
    return n, count, e


def _by_column(rows: Any, values: Any, hi: Any, lo: Any, first: int, row_type: Any
               ) -> Any:
    """(offsets, rows, raws): the hit rows' entries (row + ``first``, of ``row_type``'s
    dtype, and raw value) at or beyond their column's threshold, grouped by column (column
    j's at [offsets[j], offsets[j + 1]), in the order of ``rows``): a count per column,
    then the entries. Plain Python, compiled."""
    d = values.shape[1]
    counts = np.zeros(d + 1, dtype=np.int64)
    for r in range(rows.shape[0]):
        for j in range(d):
            v = values[r, j]
            counts[j + 1] += (v >= hi[j]) | (v <= lo[j])
    offsets = np.cumsum(counts)
    out_rows = np.empty(offsets[d], dtype=row_type.dtype)
    out_raws = np.empty(offsets[d], dtype=values.dtype)
    fill = offsets[:d].copy()
    for r in range(rows.shape[0]):
        for j in range(d):
            v = values[r, j]
            if v >= hi[j] or v <= lo[j]:
                out_rows[fill[j]] = rows[r] + first
                out_raws[fill[j]] = v
                fill[j] += 1
    return offsets, out_rows, out_raws


#: hit rows copied per call of the row kernel (a small buffer: ~1 MiB of values at d = 8)
CHUNK_ROWS = 1 << 14


def available() -> bool:
    """Whether the compiled pass can run here (numba installed; imports it)."""
    return compile_kernel(_hit_rows) is not None


#: one column's entries: pieces of (rows, raw values), in row order
Pieces = list[tuple[np.ndarray, np.ndarray]]


def list_pass(X: np.ndarray, positive: np.ndarray | None, hi: np.ndarray, lo: np.ndarray,
              cap: int, first: int = 0) -> tuple[int, list[Pieces] | None] | None:
    """(selected rows, entries): the selected rows of the 2-D float32/float64 ``X`` counted
    (``positive`` None: every row positive) and the entries at or beyond the thresholds
    (``hi``/``lo``: float64, one per column) as one list of pieces (rows + ``first``, raw
    values) per column, rows ascending — None when there are more than ``cap`` (the count
    is exact either way). None without numba."""
    hit_rows, by_column = compile_kernel(_hit_rows), compile_kernel(_by_column)
    if hit_rows is None or by_column is None:
        return None
    d = X.shape[1]
    flags = np.zeros(0, dtype=bool) if positive is None else np.ascontiguousarray(positive)
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    lo = np.ascontiguousarray(lo, dtype=np.float64)
    chunk = max(1, min(CHUNK_ROWS, cap + 1))
    rows, values = np.empty(chunk, dtype=np.int64), np.empty((chunk, d), dtype=X.dtype)
    pieces: list[Pieces] = [[] for _ in range(d)]
    # row numbers as int32 below 2^31 rows (4 bytes an entry), else int64
    row_type = np.zeros(0, np.int32 if first + len(X) < 1 << 31 else np.int64)
    start, count, entries = 0, 0, 0
    while start < len(X):
        start, counted, hits = hit_rows(X, flags, hi, lo, start, rows, values)
        count += counted
        if not hits:
            continue
        offsets, got_rows, got_raws = by_column(rows[:hits], values[:hits], hi, lo, first,
                                                row_type)
        entries += int(offsets[-1])
        if entries > cap:  # more entries than allowed: count the rest only
            none = np.full(d, np.inf)
            count += hit_rows(X, flags, none, -none, start, rows[:0], values[:0])[1]
            return count, None
        for j in range(d):
            a, b = offsets[j], offsets[j + 1]
            if b > a:
                pieces[j].append((got_rows[a:b], got_raws[a:b]))
    for column in pieces:
        if not column:  # no entry: an empty piece of the matrix's dtype
            column.append((row_type, np.zeros(0, X.dtype)))
    return count, pieces


__all__ = ["Pieces", "available", "list_pass"]
