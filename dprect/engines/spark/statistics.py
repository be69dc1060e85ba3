"""The Spark engine's grouped-statistics primitive (issue #41): every (public group,
column)'s :class:`~dprect.core.statistic.CellBins` under any
:class:`~dprect.core.statistic.StatisticsSpec`, in ONE pass over the rows — the rows
counted per bin of each column's public grid and, where the spec asks, the exact sums of
their truncated significands (:func:`~dprect.core.describe_stats.significands`). One
kernel serves every mechanism: describe's (the ``FloatBins(SEARCH_BITS)`` grid with sums:
every candidate bound is a search-bin edge, so the bins serve the centre, both searches
and the clamped sum; docs/privacy.md §11 — with, for a variance or std, the exact sums of
squared significands as two more word columns, :func:`virtual_columns`, §17) and bounds'
(each column's domain, counts only; §9). The mechanisms then run on the driver from the merged cells
(:mod:`dprect.engines.grouped`), as on the numpy engine — or, on a run of many groups, in
the executors (:mod:`dprect.engines.spark.executor_draws`).

:class:`~dprect.engines.spark.grouped_route.SparkGroupedRoute` reads the table
(:func:`~dprect.engines.spark.source.read_source`: Parquet, CSV or Delta) and checks its
schema and the spec's grids with no Spark job; the prepared run's ``statistics`` then runs
**the pass** (:func:`spark_statistics`): :func:`partial_bins` in ``mapInArrow`` encodes each
chunk's finite values on the column's grid and counts (and sums) them per (group, column,
bin) in numpy — a dense table where it is small (:func:`chunk_counts`), else one sort
of int64 words (a decimal grid's (group, cell) with its at-value bit packed in:
:func:`_packed_count`), compiled for the search grid where the executor has dprect and
numba (a column's significands and its squares' two words summed from one encoding of
each value: :func:`shared_lists`), with each column's running total and a chunk's lists
merged in one linear pass (in int64 while no key reaches 2^33 rows, exactly past it); the
input is coalesced to one partition per core. Each partition's lists leave as sorted int64
blobs (a sum as two words: exact at any count; compressed, :data:`BLOB_CODEC`), one per
key range, each range is merged by one task (:func:`merge_blobs`: one k-way merge of the
sorted lists, no sort) and the ranges are
collected in key order. So the number of Spark
jobs depends on neither the groups nor the columns nor the statistics asked. On a run of
many groups the draws run in the executors instead, over the same pass cut into blocks of
groups (:func:`counting_pass` with ``blocks``; :mod:`dprect.engines.spark.executor_draws`).

**The kernel** needs numpy and pyarrow only; this module, the domains
(:mod:`dprect.engines.spark.by_value`) and the core's statistics are pickled *by value*,
so executors do not need dprect installed. Its encodings ARE the core's (each column by
its grid's own :meth:`~dprect.core.domains.Domain.encode`; a decimal grid's compiled,
the same cells bit for bit, on a large chunk where the executor has dprect and numba:
:func:`grid_keys`), and it reads the same float64
the numpy route reads, so every cell equals the core's
:func:`~dprect.core.statistic.cell_bins` of the cell's values, and for a seed a run's
result equals the numpy engine's, bit for bit. Row rules, the numpy route's: a value is
read as float64 (``pyarrow.compute.cast``, integers beyond 2^53 rounded), a null, NaN or
±inf value is left out of its column only, and a row whose group value is not one of the
listed values (or is null) is dropped; numbers are compared as float64, −0.0 as 0.0.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import cloudpickle
from pyspark.sql import DataFrame
from pyspark.sql import types as T  # noqa: N812

import dprect.core.decimal_grid
import dprect.core.describe_stats
import dprect.core.interior_point
import dprect.core.quantiles
import dprect.core.randomness
import dprect.core.statistic
import dprect.core.tail_bounds
from dprect.core.decimal_grid import DecimalGrid
from dprect.core.describe_stats import (
    DROPPED_BITS,
    EXACT_ROWS,
    from_words,
    significands,
    square_words,
    sum_by_key,
    sum_words,
    words_sum,
)
from dprect.core.domains import Domain, FloatBins, Grid
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.quantiles import at_value_counts
from dprect.core.statistic import (
    SEARCH_GRID,
    CellBins,
    ColumnSpec,
    GroupedStatistics,
    StatisticsSpec,
    complete,
)
from dprect.engines import row_kernels
from dprect.engines.bounds_input import resolve_groups
from dprect.engines.input_errors import column_names
from dprect.engines.row_kernels import table_groups
from dprect.engines.spark import by_value  # noqa: F401  (registers the core's modules)
from dprect.engines.spark.checks import label_kind
from dprect.engines.spark.remote import default_parallelism
from dprect.engines.spark.source import SPARK_ERRORS, spark_message
from dprect.engines.spark.sql import ident

PART = "_p"
BLOB = "_b"
#: the Spark DDL schema of :func:`partial_bins`' and :func:`merge_blobs`' output
OUTPUT_SCHEMA = f"{PART} int, {BLOB} binary"
_GRID = SEARCH_GRID
_NUMERIC = (T.NumericType, T.BooleanType, T.NullType)
#: values (rows × columns) buffered before a chunk is counted: 2^25 float64, 256 MB —
#: 2^19 rows of 64 columns (amortises the per-chunk work; bounded on a wide table)
CHUNK_VALUES = 1 << 25
#: a chunk is counted in a dense (group, key) table when the table has at most this many
#: cells a row (else it is sorted)
DENSE_CELLS_PER_ROW = 4
#: chunks of at least this many rows are counted by the compiled step, where it runs
JIT_ROWS = 1 << 16
#: the compiled step's dense tables hold at most this many (group, bin) cells
JIT_CELLS = 1 << 22
#: the version of :mod:`dprect.engines.spark.describe_jit` this kernel calls
JIT_VERSION = 4
#: the version of :mod:`dprect.engines.decimal_grid_jit` this kernel calls
DECIMAL_JIT_VERSION = 1
#: a blob's int64 rows: key, count, and the sum's two words (hi, lo)
BLOB_ROWS = 4
#: a blob's lists travel compressed (keys as differences, each row in its least integer
#: type; :func:`_blob`): the quantiles' decimal grid makes nearly every value a cell of
#: its own, 32 bytes raw, about 1.5–2 bytes compressed — what the shuffle, the kept blocks
#: and a collect hold; zstd's fast level −1 on the narrowed rows (docs/results.md §5.3b)
BLOB_CODEC = "zstd"
BLOB_LEVEL = -1
#: a partition's running lists are sent on (one blob per range, merged with the rest by
#: the range's merge task) once they hold this many entries: 2^24 entries, 384 MB of
#: lists (the quantiles' cells hold about one entry per distinct value: a partition of
#: 10^6 rows × 64 columns would otherwise hold ~1.5 GB in its Python worker)
HELD_ENTRIES = 1 << 24
#: the sums' key ranges (merge tasks) per core of the session, at least
RANGES_PER_CORE = 8
#: and at least one range per this many cells (a range's blob stays far below Arrow's
#: 2 GB per binary batch: 4,096 cells × a few hundred bins × 32 bytes)
CELLS_PER_RANGE = 4096


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
    ``values`` over each pair's rows, None without values). Each pair is one int64 word
    g·span + (key − low) where that fits; without values, or with values that are each 0
    or 1 (the quantiles' at-value rows), the word carries the value as its lowest bit and
    the words are sorted themselves (:func:`_packed_count`: no permutation gathered);
    other values follow an argsort of the words (a lexsort of the two arrays past
    int64)."""
    if len(keys) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return group[:0].astype(np.int32), empty, empty, None if values is None else empty
    low, span = int(keys.min()), int(keys.max()) - int(keys.min()) + 1
    if (int(group.max()) + 1) * span < 1 << 62:  # one int64 key: argsort, not lexsort
        word = group.astype(np.int64) * span + (keys - low)
        if values is None or (int(values.min()) >= 0 and int(values.max()) <= 1):
            return _packed_count(word, span, low, values)
        order = np.argsort(word)
    else:
        order = np.lexsort((keys, group))
    g, k = group[order], keys[order]
    new = np.ones(len(k), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (k[1:] != k[:-1])
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, len(k))).astype(np.int64)
    sums = None if values is None else \
        np.add.reduceat(np.asarray(values, dtype=np.int64)[order], starts).astype(np.int64)
    return g[starts].astype(np.int32), k[starts], counts, sums


def _packed_count(word: np.ndarray, span: int, low: int, bits: np.ndarray | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`_count` of the pairs' words w = g·span + (key − low) (each below 2^62),
    with ``bits`` each 0 or 1 (or None): the words 2w + bit sorted in place (numpy's sort
    of int64, far faster than an argsort and the gathers it needs), then per run of
    equal w its length (the count) and its words' lowest bits summed (the sum of
    ``bits``). The same pairs, order, counts and sums as the argsort."""
    if bits is not None:
        word <<= 1
        word |= np.asarray(bits, dtype=np.int64)
    word.sort()
    pair = word >> 1 if bits is not None else word
    new = np.empty(len(pair), dtype=bool)
    new[0] = True
    np.not_equal(pair[1:], pair[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, len(pair))).astype(np.int64)
    first = pair[starts]
    sums = None if bits is None else np.add.reduceat(word & 1, starts).astype(np.int64)
    return (first // span).astype(np.int32), first % span + low, counts, sums


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


def to_blob(keys: np.ndarray, counts: np.ndarray, sums: np.ndarray) -> Any:
    """Sorted (key, count, sum) lists as one Arrow ``binary`` array of one value
    (:func:`from_blob` reads it back): keys, counts and each sum's two int64 words
    (:func:`~dprect.core.describe_stats.sum_words`: a sum past int64, a key of 2^33 rows
    or more, travels exactly), compressed (:func:`_blob`)."""
    hi, lo = sum_words(sums)
    return _blob((np.asarray(keys, dtype=np.int64), np.asarray(counts, dtype=np.int64),
                  hi, lo))


def _blob(rows: Sequence[np.ndarray]) -> Any:
    """:data:`BLOB_ROWS` int64 rows of n entries — sorted keys, counts, the sums' high and
    low words — as :func:`to_blob`'s one-value binary array: n (one int64), each row's
    type (:func:`_narrow`: 1, 2, 4 or 8 bytes; a byte each, padded to 8), then the rows —
    the first (the keys) as differences — each in its width, side by side, compressed
    (:data:`BLOB_CODEC`; the quantiles' cells, one entry per distinct value of 32 bytes
    raw, take about 1.5 bytes, and the narrowed rows leave the codec about a third of the
    raw bytes to read). Each row is written once, narrowed, into the codec's input; the
    rows are not changed."""
    keys = rows[0]
    n = len(keys)
    data = np.array([n], dtype=np.int64).tobytes()
    if n:
        steps = np.empty(n, dtype=np.int64)  # sorted keys: small steps
        steps[0] = keys[0]
        np.subtract(keys[1:], keys[:-1], out=steps[1:])
        table = [steps, *rows[1:]]
        kinds = [_narrow(row) for row in table]
        data += bytes(_ROW_TYPES.index(k) for k in kinds).ljust(8, b"\0")
        raw = np.empty(sum(k.itemsize for k in kinds) * n, dtype=np.uint8)
        at = 0
        for row, kind in zip(table, kinds, strict=True):  # each written once, narrowed
            np.copyto(raw[at:at + kind.itemsize * n].view(kind), row, casting="unsafe")
            at += kind.itemsize * n
        data += _codec().compress(raw, asbytes=True)
    offsets = np.array([0, len(data)], dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), 1, [None, pa.py_buffer(offsets),
                                                   pa.py_buffer(data)])


#: the types a blob's row may take (its code: the index), narrowest first
_ROW_TYPES = tuple(np.dtype(t).newbyteorder("<") for t in
                   ("u1", "i1", "u2", "i2", "u4", "i4", "i8"))


def _narrow(row: np.ndarray) -> np.dtype[Any]:
    """The narrowest integer type of :data:`_ROW_TYPES` that holds an int64 row's least
    and largest value (so its values unchanged: counts of mostly ones, at-value rows and
    a sum's high word of zeros in a byte, a sum's low word below 2^32 in four)."""
    low, high = int(row.min()), int(row.max())
    for kind in _ROW_TYPES:
        info = np.iinfo(kind)
        if info.min <= low and high <= info.max:
            return kind
    raise AssertionError("an int64 row fits int64")  # pragma: no cover


def _codec() -> Any:
    """The blobs' codec (:data:`BLOB_CODEC` at :data:`BLOB_LEVEL`)."""
    return pa.Codec(BLOB_CODEC, compression_level=BLOB_LEVEL)


def from_blob(blob: Any, keys: tuple[int, int] | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (key, count, sum) lists of a blob (bytes or an Arrow buffer: :func:`_blob`'s
    n, its rows' types, then its compressed rows; the sums joined from their words:
    int64, or Python integers past int64) — given ``keys`` (first, end), only its entries
    with first ≤ key < end: every key is read (the steps' running sum), the counts and
    sums of those entries only (a block's cells read by one mechanism of a mixed run)."""
    buffer = pa.py_buffer(blob)
    n = int(np.frombuffer(buffer, dtype=np.int64, count=1)[0])
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    kinds = [_ROW_TYPES[c] for c in np.frombuffer(buffer, dtype=np.uint8, count=BLOB_ROWS,
                                                  offset=8).tolist()]
    raw = _codec().decompress(buffer.slice(16),
                              decompressed_size=sum(k.itemsize for k in kinds) * n)
    offsets = np.cumsum([0, *(k.itemsize * n for k in kinds)]).tolist()
    key = np.cumsum(np.frombuffer(raw, dtype=kinds[0], count=n), dtype=np.int64)
    a, z = (0, n) if keys is None else \
        (int(i) for i in np.searchsorted(key, np.array(keys, dtype=np.int64)))
    counts, hi, lo = (np.frombuffer(raw, dtype=kind, count=z - a,
                                    offset=at + a * kind.itemsize).astype(np.int64)
                      for kind, at in zip(kinds[1:], offsets[1:-1], strict=True))
    return key[a:z], counts, words_sum(hi, lo, counts)


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


def _decimal_jit() -> Any:
    """:mod:`dprect.engines.decimal_grid_jit` where the executor has dprect with it, of
    the version this kernel calls (:data:`DECIMAL_JIT_VERSION`), else None."""
    try:
        from dprect.engines import decimal_grid_jit
    except ImportError:  # the kernel runs without dprect (or an older one) here
        return None
    return decimal_grid_jit if decimal_grid_jit.VERSION == DECIMAL_JIT_VERSION else None


def grid_keys(grid: Domain | DecimalGrid, x: np.ndarray, at_value: bool = False
              ) -> tuple[np.ndarray, np.ndarray | None]:
    """(``grid.encode(x)`` as int64, and for ``at_value`` on a decimal grid the rows at
    their cell's value, :func:`~dprect.core.quantiles.at_value_counts`, else None) of
    finite ``x`` (contiguous float64): a decimal grid's compiled in one loop
    (:mod:`dprect.engines.decimal_grid_jit`, the same cells and counts bit for bit) for a
    chunk of at least :data:`JIT_ROWS` values where the executor has it and numba."""
    if not isinstance(grid, DecimalGrid):
        return np.asarray(grid.encode(x), dtype=np.int64), None
    jit = _decimal_jit() if len(x) >= JIT_ROWS else None
    if jit is not None:
        if at_value:
            both = jit.compiled_at_value(grid, x)
            if both is not None:
                return np.asarray(both[0], dtype=np.int64), both[1]
        else:
            got = jit.compiled_encode(grid, x)
            if got is not None:
                return np.asarray(got, dtype=np.int64), None
    keys = np.asarray(grid.encode(x), dtype=np.int64)
    return keys, at_value_counts(grid, x, keys) if at_value else None


def _int64_safe(total: Lists, chunk: Lists) -> bool:
    """Whether every sum of ``total`` and ``chunk`` merged is an int64 — both int64 and no
    key reaching :data:`~dprect.core.describe_stats.EXACT_ROWS` rows — as the compiled
    merge needs (:func:`~dprect.core.describe_stats.sum_by_key` is exact past it)."""
    return (total[2].dtype != object and chunk[2].dtype != object
            and int(total[1].max(initial=0)) + int(chunk[1].max(initial=0)) < EXACT_ROWS)


def _merge_into(total: Lists | None, chunk: Lists) -> Lists:
    """A column's running (key, count, sum) total — sorted, unique — and a chunk's lists
    summed by key: the chunk itself where it is the first and its keys strictly increase
    (every counting step gives them in key order), one linear merge where
    ``describe_jit`` runs here, else :func:`_merge`; the same lists."""
    if total is None and _increasing(chunk[0]) and chunk[2].dtype != object:
        return (np.asarray(chunk[0], dtype=np.int64), np.asarray(chunk[1], dtype=np.int64),
                np.asarray(chunk[2], dtype=np.int64))
    if total is not None and len(chunk[0]) >= JIT_ROWS // 64 and _int64_safe(total, chunk):
        jit = _jit()
        got = jit.merge_sorted(total, chunk) if jit is not None else None
        if got is not None:
            return got
    return _merge([chunk] if total is None else [total, chunk])


def _increasing(keys: np.ndarray) -> bool:
    """Whether ``keys`` strictly increase (sorted and unique)."""
    return bool((keys[1:] > keys[:-1]).all())


def _merge_sorted(parts: Sequence[Lists]) -> Lists:
    """Partial (key, count, sum) lists, each sorted and unique, summed by key
    (:func:`_merge`'s lists): merged in one pass (``describe_jit``'s :func:`merge_many`:
    a heap of the parts' next keys, each entry written once; merged two by two before,
    each entry was copied log2(parts) times — a range gets one part per partition and per
    early send) where it runs here and every sum stays an int64 (no key can reach
    :data:`~dprect.core.describe_stats.EXACT_ROWS` rows: the parts' largest counts add up
    to less), else — or when a part is not strictly increasing — by :func:`_merge`'s
    sort."""
    kept = [p for p in parts if len(p[0])]
    if len(kept) <= 1:
        if kept and _increasing(kept[0][0]) and kept[0][2].dtype != object:
            return kept[0]
        return _merge(parts)
    jit = _jit()
    if jit is None or any(p[2].dtype == object for p in kept) \
            or sum(int(p[1].max()) for p in kept) >= EXACT_ROWS:
        return _merge(parts)
    got = jit.merge_many(kept)
    return _merge(parts) if got is None else got  # None: a part not strictly increasing


def column_lists(group: np.ndarray, values: np.ndarray, groups: int,
                 grid: Domain | DecimalGrid, sums: bool, at_value: bool = False,
                 word: int = 0
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One chunk of one column: the unique (group, bin of ``grid``) pairs of its finite
    ``values`` with their row counts and (``sums``) significand sums — or (``at_value``,
    a decimal grid) the rows equal to the bin's value
    (:func:`~dprect.core.quantiles.at_value_counts`), carried in the sums' place — zeros
    without, in any order; for the search grid with sums compiled
    (:mod:`dprect.engines.spark.describe_jit`, where dprect and numba are installed on
    the executor, the same version, and the chunk has at least :data:`JIT_ROWS` rows),
    else with numpy; the same lists either way. ``word`` 1 or 2 sums the high or the low
    30-bit word of the squared significands instead
    (:func:`~dprect.core.describe_stats.square_words`)."""
    if sums and grid == _GRID:
        got = _compiled_words(group, values, groups, [word])
        if got is not None:
            return got[0], got[1], got[2], got[3][0]
    x = np.ascontiguousarray(values, dtype=np.float64)
    keys, at_rows = grid_keys(grid, x, at_value and not sums)
    added = significands(x.view(np.int64)) if sums else at_rows
    if added is not None and sums and word:
        added = square_words(added)[word - 1]
    # a decimal grid's keys are sparse (about a cell a value): no dense table, so no
    # split halves, counted by one sort
    g, b, n, summed = chunk_counts(group, keys, added,
                                   depth=0 if isinstance(grid, DecimalGrid) else 2)
    return g, b, n, np.zeros(len(b), dtype=np.int64) if summed is None else summed


def _compiled_words(group: np.ndarray, values: np.ndarray, groups: int,
                    words: Sequence[int]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]] | None:
    """The search grid's (group, bin, count, [sum of each word]) of a chunk of at least
    :data:`JIT_ROWS` values by the compiled step (:func:`.describe_jit.column_words`:
    one encoding of each value for every word), or None: a small chunk, no compiled
    step of this kernel's version here, or too wide a table."""
    if len(values) < JIT_ROWS:
        return None
    jit = _jit()
    if jit is None:
        return None
    got: tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]] | None = \
        jit.column_words(values, group, groups, _GRID.shift, _GRID.size // 2,
                         DROPPED_BITS, JIT_CELLS, words)
    return got


def shared_lists(group: np.ndarray, values: np.ndarray, groups: int,
                 columns: Sequence[tuple[ColumnSpec, int]]
                 ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`column_lists` of every kernel column ``(spec, word)`` of one chunk of one
    column, in that order: the search grid's columns with sums — describe's significands
    and a variance's two square words — from ONE compiled encoding of each value
    (:func:`_compiled_words`; they share the pairs and counts), the others (and those,
    where the compiled step does not run) one by one. The same lists either way."""
    out: list[Any] = [None] * len(columns)
    shared = [i for i, (c, _) in enumerate(columns) if c.sums and c.grid == _GRID]
    if len(shared) > 1:
        got = _compiled_words(group, values, groups, [columns[i][1] for i in shared])
        if got is not None:
            for i, summed in zip(shared, got[3], strict=True):
                out[i] = (got[0], got[1], got[2], summed)
    for i, (c, word) in enumerate(columns):
        if out[i] is None:
            out[i] = column_lists(group, values, groups, c.grid, c.sums, c.at_value, word)
    return out


def key_bases(spec: StatisticsSpec, groups: int) -> np.ndarray:
    """Where each column's keys start: cell (group g, column j) holds the keys
    base[j] + g·size_j + bin (size_j its grid's), so the keys are j-major, then g, then
    bin; ``base[-1]`` is the end of the last column's."""
    sizes = [int(c.grid.size) for c in spec.columns]
    return np.array(np.cumsum([0, *(groups * s for s in sizes)]), dtype=object)


def cell_starts(spec: StatisticsSpec, groups: int, cells: np.ndarray) -> np.ndarray:
    """The first key of each cell index c = j·G + g (c = C: the end of the keys)."""
    base = key_bases(spec, groups)
    sizes = [int(c.grid.size) for c in spec.columns]
    out = []
    for c in cells.tolist():
        j, g = divmod(int(c), groups)
        out.append(int(base[-1]) if j == len(sizes) else int(base[j]) + g * sizes[j])
    return np.array(out, dtype=np.int64)


def virtual_columns(spec: StatisticsSpec) -> tuple[StatisticsSpec, tuple[tuple[int, int], ...]]:
    """The kernel's columns for ``spec``: each column as it is, and after a column with
    squares two more on its grid whose "sums" are the high and the low 30-bit words of
    the squared significands (:func:`~dprect.core.describe_stats.square_words`: each
    below 2^30 a row, as a significand is, so they travel and merge as sums do); with,
    for each, (the column's index, the word: 0 the significand, 1 high, 2 low). A spec
    without squares is its own (the same keys, blobs and cells as before)."""
    cols: list[ColumnSpec] = []
    layout: list[tuple[int, int]] = []
    for j, c in enumerate(spec.columns):
        cols.append(ColumnSpec(c.grid, c.sums, c.at_value))
        layout.append((j, 0))
        if c.squares:
            cols += [ColumnSpec(c.grid, True)] * 2
            layout += [(j, 1), (j, 2)]
    return StatisticsSpec(tuple(cols)), tuple(layout)


def real_cells(cells: GroupedStatistics, spec: StatisticsSpec, groups: int
               ) -> GroupedStatistics:
    """The cells of ``spec``'s columns from those of its :func:`virtual_columns`: a
    column with squares gets Σ M² = 2^30·Σ hi + Σ lo from its two word columns
    (:func:`~dprect.core.describe_stats.from_words`; same rows, so the same bins)."""
    _, layout = virtual_columns(spec)
    out: GroupedStatistics = {}
    for v, (j, word) in enumerate(layout):
        if word:
            continue
        squares = spec.columns[j].squares
        for g in range(groups):
            cell = cells[(g, v)]
            if not squares:
                out[(g, j)] = cell
                continue
            hi, lo = cells[(g, v + 1)].sums, cells[(g, v + 2)].sums
            assert hi is not None and lo is not None  # word columns keep sums
            out[(g, j)] = CellBins(cell.keys, cell.counts, cell.sums,
                                   squares=from_words(hi, lo))
    return out


def block_limits(spec: StatisticsSpec, groups: int, starts: Sequence[int]
                 ) -> list[np.ndarray]:
    """Per kernel column, the first key of each block of consecutive groups starting at
    ``starts`` (then ``groups``: the end): range r holds every column's cells of block r
    (:func:`partial_bins`' ``limits``; the executor draws,
    :mod:`dprect.engines.spark.executor_draws`). A public function of the shape."""
    base = key_bases(spec, groups)
    at = np.array([*starts, groups], dtype=np.int64)
    return [np.int64(base[v]) + at * np.int64(c.grid.size)
            for v, c in enumerate(spec.columns)]


def partial_bins(batches: Iterator[Any], columns: Sequence[str], group_column: str | None,
                 group_kind: str, group_values: Sequence[Any] | None, groups: int,
                 ranges: int, spec: StatisticsSpec,
                 layout: Sequence[tuple[int, int]] | None = None,
                 limits: Sequence[np.ndarray] | None = None) -> Iterator[Any]:
    """mapInArrow body: a partition's rows counted (and summed) per (group g, column j,
    bin b) (module notes; :func:`column_lists` per chunk and column) under the key of
    :func:`key_bases`, sorted, and cut into ``ranges`` contiguous key ranges of cells
    (or, given ``limits``, per kernel column the first key of each range and the end:
    :func:`block_limits`, a range per block of groups), one
    (range, blob) row each (:func:`to_blob`), each row a batch of its own — sent early,
    and the lists started again, whenever they hold :data:`HELD_ENTRIES` (the range's
    merge task sums every row of its range, so the merged lists are the same). Ungrouped
    (``group_column`` None): every row is group 0 (``groups`` 1). ``spec`` is the
    kernel's (:func:`virtual_columns`), ``layout`` its columns' (column, word); None:
    one kernel column per column, its significands."""
    words = list(layout) if layout is not None else [(j, 0) for j in range(len(columns))]
    acc: list[Lists | None] = [None for _ in words]
    base = key_bases(spec, groups)
    chunk_rows = -(-CHUNK_VALUES // max(1, len(columns)))
    if limits is None:
        cells = len(spec.columns) * groups
        starts = cell_starts(spec, groups,
                             np.arange(ranges + 1, dtype=np.int64) * cells // ranges)
        limits = [starts for _ in spec.columns]
    kernel_of = [[v for v, (of, _) in enumerate(words) if of == j]
                 for j in range(len(columns))]
    for j, group, x in finite_chunks(batches, chunk_rows, columns, group_column, group_kind,
                                     group_values):
        mine = kernel_of[j]  # a column's kernel columns share its encoding where they can
        lists = shared_lists(group, x, groups, [(spec.columns[v], words[v][1]) for v in mine])
        for v, (g, b, n, sums) in zip(mine, lists, strict=True):
            size = np.int64(spec.columns[v].grid.size)
            key = np.int64(base[v]) + g.astype(np.int64) * size + b
            acc[v] = _merge_into(acc[v], (key, n, sums))  # sorted, one list per column
        if sum(len(t[0]) for t in acc if t is not None) >= HELD_ENTRIES:
            yield from range_blobs(acc, limits, ranges)  # merged with the rest by range
            acc = [None for _ in words]
    yield from range_blobs(acc, limits, ranges)


def range_blobs(acc: Sequence[Lists | None], limits: Sequence[np.ndarray], ranges: int
                ) -> Iterator[Any]:
    """:func:`partial_bins`' output: per key range with entries, one (range, blob) batch
    of every kernel column's running (key, count, sum) lists ``acc`` cut at ``limits``."""
    kept = [(total, lim) for total, lim in zip(acc, limits, strict=True) if total is not None]
    # v-major: in key order; each column's rows (its sums as two words, split once)
    filled = [(total[0], total[1], *sum_words(total[2])) for total, _ in kept]
    edges = [np.searchsorted(total[0], lim).tolist() for total, lim in kept]
    for r in range(ranges):  # a batch per range: Arrow's binary holds < 2 GB a batch
        pieces = [(rows, e[r], e[r + 1])
                  for rows, e in zip(filled, edges, strict=True) if e[r + 1] > e[r]]
        if not pieces:
            continue
        table = [np.concatenate([rows[i][lo:hi] for rows, lo, hi in pieces])
                 for i in range(BLOB_ROWS)]  # each column's part of the range, copied once
        yield pa.RecordBatch.from_arrays([pa.array([r], pa.int32()), _blob(table)],
                                         names=[PART, BLOB])


def merge_blobs(table: Any) -> Any:
    """applyInArrow body: one range's partial lists (one blob per partition) summed."""
    part = table.column(PART)[0].as_py()
    merged = _merge_sorted([from_blob(b.as_buffer()) for b in table.column(BLOB)])
    return pa.table({PART: pa.array([part], pa.int32()),
                     BLOB: to_blob(*merged)})


# executors get the kernel and the core's statistics, candidates and their imports by value
for _module in (dprect.core.describe_stats, dprect.core.tail_bounds,
                dprect.core.interior_point, dprect.core.randomness, dprect.core.statistic,
                dprect.core.decimal_grid, dprect.core.quantiles):
    cloudpickle.register_pickle_by_value(sys.modules[_module.__name__])
cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(row_kernels)  # table_groups, shared with the numpy route


# -- the driver -------------------------------------------------------------------------------
def check_grid(grid: Domain | DecimalGrid) -> None:
    """Refuse a grid whose sort values are not bin indices (the kernel counts bins)."""
    if isinstance(grid, FloatBins | Grid | DecimalGrid):  # IntegerRange: the Grid's encoding
        return
    raise ParameterError(f"the Spark engine counts columns on FloatBins, Grid, "
                         f"IntegerRange or decimal grids, got {grid!r}")


def check_schema(df: DataFrame, columns: Sequence[str], group_by: str | None) -> str | None:
    """The schema checks of a grouped run (no Spark job): every column exists and is
    numeric (integer, floating, decimal or boolean), the group column exists and holds
    numbers, booleans or strings (the label's kinds, :func:`.checks.label_kind`). Returns
    the group column's kind (None without one)."""
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
    return None if group_by is None else label_kind(types[group_by], group_by, "group")


def counting_pass(df: DataFrame, columns: Sequence[str], spec: StatisticsSpec, *,
                  group_by: str | None = None, groups: Sequence[str] | None = None,
                  blocks: Sequence[int] | None = None
                  ) -> tuple[DataFrame, StatisticsSpec, int]:
    """The pass as a DataFrame, not yet run (module notes): one (range, blob) row per key
    range of the merged cells, with the kernel's spec (:func:`virtual_columns`) and the
    number of groups. ``blocks``: the first group of each block of consecutive groups, the
    ranges then being the blocks, every column's cells of a block in one row
    (:func:`block_limits`; range r is block r), for the draws in
    the executors; None: contiguous key ranges sized for the collect. Schema errors are
    raised here, before any Spark job."""
    kind = check_schema(df, columns, group_by)
    if len(spec.columns) != len(columns):
        raise ParameterError(f"{len(columns)} column(s) for a spec of {len(spec.columns)}")
    kernel, layout = virtual_columns(spec)
    for c in spec.columns:
        check_grid(c.grid)
    if group_by is not None:
        if not groups:
            raise ParameterError("a group column needs the public list of group values")
        values = resolve_groups(list(groups), kind or "null", group_by)
        count = len(groups)
    else:
        values, count = None, 1
    if int(key_bases(kernel, count)[-1]) >= 1 << 62:
        raise ParameterError(f"{len(columns)} columns × {count} groups are too many cells "
                             f"for one run")
    cores = default_parallelism(df.sparkSession)
    ranges = len(blocks) if blocks is not None else \
        max(RANGES_PER_CORE * cores, -(-len(kernel.columns) * count // CELLS_PER_RANGE))
    body = partial(partial_bins, columns=list(columns), group_column=group_by,
                   group_kind=kind or "", group_values=values, groups=count,
                   ranges=ranges, spec=kernel, layout=layout,
                   limits=None if blocks is None else block_limits(kernel, count, blocks))
    # each column selected once: a mixed run's spec counts a column once per mechanism
    read = list(dict.fromkeys([*columns, *([group_by] if group_by is not None else [])]))
    selected = df.selectExpr(*[ident(c) for c in read]).coalesce(cores)
    merged = (selected.mapInArrow(body, OUTPUT_SCHEMA).groupBy(PART)
              .applyInArrow(merge_blobs, OUTPUT_SCHEMA))
    return merged, kernel, count


def spark_statistics(df: DataFrame, columns: Sequence[str], spec: StatisticsSpec, *,
                     group_by: str | None = None, groups: Sequence[str] | None = None
                     ) -> GroupedStatistics:
    """The pass (module notes): every (group index, column index)'s cell under ``spec``
    (every cell present; an empty one has no rows). ``groups`` is the PUBLIC list of group
    values (text, read against the group column's type); without ``group_by`` there is
    one group, 0. Schema errors are raised before any Spark job; one Spark job whatever
    the groups, columns and statistics."""
    merged, kernel, count = counting_pass(df, columns, spec, group_by=group_by,
                                          groups=groups)
    try:
        table = merged.toArrow()
    except SPARK_ERRORS as exc:
        raise InputDataError(f"Spark failed while counting: {spark_message(exc)}") from None
    return real_cells(complete(to_cells(table, kernel, count), kernel, count), spec, count)


def to_cells(table: Any, spec: StatisticsSpec, groups: int,
             columns: tuple[int, int] | None = None,
             block: tuple[int, int] | None = None) -> GroupedStatistics:
    """The collected ranges (any order) as one cell per (group, column) with rows; given
    ``columns`` (a, b), only the cells of ``spec``'s columns a … b − 1, numbered from 0
    (the cells of ``StatisticsSpec(spec.columns[a:b])``: a block's cells read by one
    mechanism of a mixed run, the others' left undecoded). Given ``block`` (first, end):
    the ranges hold the cells of the groups first … end − 1 only (one block's range of
    the executor draws, :func:`block_limits`), and only those groups' cell edges are
    made and searched — work of the block's size, not of every group's (a 10^6-group
    run made and searched 8·10^6 edges for each of its ~2,000 blocks, once per phase:
    issue #42); the same cells, keyed by their groups' global indices."""
    order = np.argsort(np.asarray(table.column(PART).to_numpy(), dtype=np.int64))
    blobs = [b.as_buffer() for b in table.column(BLOB)]  # no copies
    wanted = None
    if columns is not None:  # the columns' keys, from the first one's base
        whole = key_bases(spec, groups)
        wanted = (int(whole[columns[0]]), int(whole[columns[1]]))
    parts = [from_blob(blobs[i], wanted) for i in order]
    out: GroupedStatistics = {}
    if not parts:
        return out
    # disjoint ranges in key order: sorted (contiguous ranges; a block's range, one row,
    # holds every column's cells of its groups: its lists as they are)
    keys, n, sums = parts[0] if len(parts) == 1 else _joined(parts)
    if columns is not None and wanted is not None:
        keys = keys - wanted[0]
        spec = StatisticsSpec(spec.columns[columns[0]:columns[1]])
        if not len(keys):
            return out
    # cell c = j·m + (g − first) (m = end − first groups) holds the keys
    # [edges[j, g − first], edges[j, g − first + 1]): the cells' edges found in the sorted
    # keys (no division an entry), each entry's bin its key minus its cell's first edge
    first, end = (0, groups) if block is None else block
    m = end - first
    base = key_bases(spec, groups)
    edges = np.stack([
        np.int64(base[j]) + np.arange(first, end + 1, dtype=np.int64) * np.int64(c.grid.size)
        for j, c in enumerate(spec.columns)])
    at_edge = np.searchsorted(keys, edges.ravel()).reshape(edges.shape)
    starts = edges[:, :-1].ravel()
    low, high = at_edge[:, :-1].ravel(), at_edge[:, 1:].ravel()
    size = high - low
    used = np.flatnonzero(size)
    assert int(size[used].sum()) == len(keys), "a key outside the block's cells"
    bins = keys - np.repeat(starts[used], size[used])
    # per column, its cells' sums, or None; and its at-value rows as int64, converted a
    # column's run of entries at a time (not a cell at a time: the same values), or None
    kept_of = [sums if c.sums else None for c in spec.columns]
    at_of: list[np.ndarray | None] = [None] * len(spec.columns)
    if any(c.at_value for c in spec.columns):
        at_all = np.zeros(len(keys), dtype=np.int64)  # filled on at-value columns' runs
        for j, c in enumerate(spec.columns):
            if c.at_value:
                a, z = int(low[j * m]), int(high[(j + 1) * m - 1])
                at_all[a:z] = np.asarray(sums[a:z]).astype(np.int64)
                at_of[j] = at_all
    for j, g, lo, hi in zip((used // m).tolist(), (used % m + first).tolist(),
                            low[used].tolist(), high[used].tolist(), strict=True):
        kept, at = kept_of[j], at_of[j]
        out[(g, j)] = CellBins(bins[lo:hi], n[lo:hi], None if kept is None else kept[lo:hi],
                               None if at is None else at[lo:hi])
    return out


__all__ = [
    "CHUNK_VALUES",
    "OUTPUT_SCHEMA",
    "block_limits",
    "check_grid",
    "check_schema",
    "chunk_counts",
    "counting_pass",
    "finite_chunks",
    "grid_keys",
    "partial_bins",
    "real_cells",
    "spark_statistics",
    "to_cells",
]
