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
blobs (a sum as two words: exact at any count; compressed, :data:`BLOB_CODEC`; a segment
per kernel column, a variance's three sharing their keys and counts, so a reader
decompresses only the columns it reads: :func:`_segment`), one per key range, each range
is merged by one task (:func:`merge_blobs`: one k-way merge of the sorted lists a
segment, no sort) and the ranges are collected in key order. So the number of Spark
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
import struct
import sys
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any, NamedTuple

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
    SUM_WORD,
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
from dprect.engines.input_errors import missing_columns, not_numeric
from dprect.engines.row_kernels import table_groups
from dprect.engines.spark import by_value  # noqa: F401  (registers the core's modules)
from dprect.engines.spark.block_ranges import BlockRanges
from dprect.engines.spark.checks import integral_type, label_kind
from dprect.engines.spark.jvm_bins import group_keys, merged_cells, readable, takes
from dprect.engines.spark.remote import default_parallelism
from dprect.engines.spark.session import has_bins
from dprect.engines.spark.source import SPARK_ERRORS, spark_message
from dprect.engines.spark.sql import ident

PART = "_p"
BLOB = "_b"
#: the merge's partition of a block by block range (:func:`counting_pass` with ``ranges``)
RANGE = "_w"
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
JIT_VERSION = 8
#: the version of :mod:`dprect.engines.decimal_grid_jit` this kernel calls
DECIMAL_JIT_VERSION = 1
#: a blob's lists travel compressed (keys as differences, each row in its least integer
#: type; :func:`_segment`): the quantiles' decimal grid makes nearly every value a cell of
#: its own, 32 bytes raw, about 1.5–2 bytes compressed — what the shuffle, the kept blocks
#: and a collect hold; zstd's fast level −1 on the narrowed rows (docs/results.md §5.3b)
BLOB_CODEC = "zstd"
BLOB_LEVEL = -1
#: a partition's decimal-grid lists are sent on (one blob per range, merged with the rest
#: by the range's merge task) once they hold this many entries: 2^24 entries, 384 MB of
#: lists (the quantiles' cells hold about one entry per distinct value: a partition of
#: 10^6 rows × 64 columns would otherwise hold ~1.5 GB in its Python worker)
HELD_ENTRIES = 1 << 24
#: the lists of grids other than the decimal ones (the search grid's: a few hundred bins
#: a cell, whatever the rows) are kept, summing on across the decimal grids' sends,
#: until they hold this many entries — a family's entry counted once: 40 bytes with a
#: variance's words, so at most about 500 MB — and then sent with the rest (each send of
#: them is all their cells again). The benchmark's 64 columns × 1,000 groups hold about
#: 8·10^6 at 10^6 rows a partition, 9·10^6 at 2·10^6 (docs/results.md §5.3b)
KEPT_ENTRIES = 3 << 22
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
    the words are sorted themselves (:func:`_packed_count`: no permutation gathered; from
    :data:`JIT_ROWS` pairs the words made and their runs read compiled around the same
    sort, ``describe_jit.packed_count``: the same lists, in less than half the CPU on a
    quantile column's chunk); other values follow an argsort of the words (a lexsort of
    the two arrays past int64)."""
    if len(keys) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return group[:0].astype(np.int32), empty, empty, None if values is None else empty
    low, span = int(keys.min()), int(keys.max()) - int(keys.min()) + 1
    if (int(group.max()) + 1) * span < 1 << 62:  # one int64 key: argsort, not lexsort
        packed = values is None or (int(values.min()) >= 0 and int(values.max()) <= 1)
        jit = _jit() if packed and len(keys) >= JIT_ROWS else None
        got = None if jit is None else jit.packed_count(group, keys, low, span, values)
        if got is not None:  # the words made and their runs read compiled, the same lists
            return got
        word = group.astype(np.int64) * span + (keys - low)
        if packed:
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
    finite — a null, NaN or ±inf is left out of that column only (row-local). A column
    named more than once (a mixed run's, once per mechanism) is read once a chunk, its
    arrays shared (the kernel only reads them) and let go at its last name: a column
    named once is not held past its own turn (the chunk's columns are not all kept)."""
    last = {name: j for j, name in enumerate(columns)}  # each column's last index
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
        read: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # a column named twice: once
        for j, name in enumerate(columns):
            if name not in read:
                x = as_float64(table.column(name).combine_chunks())
                use = np.isfinite(x)
                if every and use.all():  # nothing to leave out: no copies
                    read[name] = (group, x)
                else:
                    use &= listed
                    read[name] = (group[use], x[use])
            yield j, *(read[name] if j < last[name] else read.pop(name))


def _binary(data: bytes) -> Any:
    """``data`` as a one-value Arrow ``binary`` array (no copy)."""
    offsets = np.array([0, len(data)], dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), 1, [None, pa.py_buffer(offsets),
                                                   pa.py_buffer(data)])


class Family(NamedTuple):
    """A column's kernel columns (:func:`virtual_columns`): its significands (or counts)
    and, for a variance, its squares' two words — on one grid, so the same bins and
    counts, their keys a constant apart: ``first`` kernel column, each word's key
    ``offsets`` (word i's keys are the first word's plus offsets[i]) and ``start``, the
    first key of the first word's cells (its key base)."""

    first: int
    offsets: tuple[int, ...]
    start: int


#: a blob is a run of SEGMENTS in key order, each compressed apart, so a reader of some
#: columns decompresses only theirs (:func:`from_blob`). A segment holds a RUN of
#: families with the same words on the same kind of grid (:func:`_runs`: a mechanism's
#: columns, e.g. the query's with their squares, or the quantiles'): one list of keys (the
#: first word's), counts and a sum row a word for them all — a family's keys and counts
#: once for its words. Its header: :data:`_HEAD` (the run's first kernel column, the words
#: w, the families F, the entries n, the first and the last key, the payload's bytes),
#: w int64 key offsets, per family four int64 (its first kernel column, its start, the
#: first key of its entries here and their number), 2 + 2w row codes (a byte each, padded
#: to 8: the steps between a family's keys — its first step 0, its first key in the
#: header —, the counts, each word's high and low sum word; :data:`_ROW_TYPES`' index, or
#: :data:`_ZERO`), then the payload padded to 8
_HEAD = "<7q"
_HEAD_BYTES = struct.calcsize(_HEAD)
#: a row's code when every value is 0: the row takes no bytes (the quantiles' at-value
#: sums' high word, a one-entry segment's steps)
_ZERO = 255


def _pad(n: int) -> int:
    return -(-n // 8) * 8


#: one family's piece of a segment: keys, counts, per word (hi, lo) — hi None where it is
#: zeros (:func:`_words`) — and, or None to find them here, the keys' steps (the first is
#: not read: 0) and each row's least and largest value (steps, counts, each hi, lo)
Piece = tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray | None, np.ndarray]],
              np.ndarray | None, list[tuple[int, int]] | None]


def _bounds(row: np.ndarray | None) -> tuple[int, int]:
    """A row's least and largest value ((0, 0) for None: zeros, or empty)."""
    if row is None or not len(row):
        return 0, 0
    return int(row.min()), int(row.max())


def _segment(families: Sequence[Family], pieces: Sequence[Piece | None]) -> bytes:
    """One segment (:data:`_HEAD`'s notes) of a run of ``families`` (the same offsets),
    ``pieces`` one a family (None or empty: no entries here; n ≥ 1 in all): sorted int64
    keys, their counts and per sum word its (high, low) int64 word rows
    (:func:`~dprect.core.describe_stats.sum_words`). The rows — the keys as steps within
    their family — each in its least integer type over every piece (:func:`_narrow`; an
    all-zero row none), side by side, compressed (:data:`BLOB_CODEC`: the quantiles'
    cells, one entry per distinct value of 32 bytes raw, take about 1.5). Each piece's
    rows are written once, narrowed, into the codec's input; they are not changed."""
    have = [p for p in pieces if p is not None and len(p[0])]
    n = sum(len(p[0]) for p in have)
    offsets = families[0].offsets
    rows, bounds = [], []
    for keys, counts, words, steps, known in have:
        if steps is None:
            steps = np.empty(len(keys), dtype=np.int64)
            steps[0] = 0
            np.subtract(keys[1:], keys[:-1], out=steps[1:])
        row = [steps, counts, *(r for pair in words for r in pair)]  # a row None: zeros
        rows.append(row)
        if known is None:
            known = [_bounds(steps[1:]), *(_bounds(r) for r in row[1:])]
        bounds.append(known)
    kinds = [_narrow([b[i] for b in bounds]) for i in range(2 + 2 * len(offsets))]
    raw = np.empty(sum(k.itemsize for k in kinds if k is not None) * n, dtype=np.uint8)
    at = 0
    for i, kind in enumerate(kinds):  # each row written once, narrowed, piece by piece
        if kind is None:
            continue
        for row, piece in zip(rows, have, strict=True):
            size = kind.itemsize * len(piece[0])
            target, values = raw[at:at + size].view(kind), row[i]
            if values is None:
                target[:] = 0
            else:
                np.copyto(target, values, casting="unsafe")
                if i == 0:
                    target[0] = 0  # a family's first key is in the header
            at += size
    payload = _codec().compress(raw, asbytes=True) if at else b""
    codes = bytes(_ZERO if k is None else _ROW_TYPES.index(k) for k in kinds)
    head = struct.pack(_HEAD, families[0].first, len(offsets), len(families), n,
                       int(have[0][0][0]), int(have[-1][0][-1]), len(payload))
    table = np.array([[f.first, f.start, *((int(p[0][0]), len(p[0]))
                                            if p is not None and len(p[0]) else (0, 0))]
                      for f, p in zip(families, pieces, strict=True)], dtype="<i8")
    return b"".join((head, np.asarray(offsets, dtype="<i8").tobytes(), table.tobytes(),
                     codes.ljust(_pad(len(codes)), b"\0"), payload,
                     bytes(_pad(len(payload)) - len(payload))))


#: the types a blob's row may take (its code: the index), narrowest first
_ROW_TYPES = tuple(np.dtype(t).newbyteorder("<") for t in
                   ("u1", "i1", "u2", "i2", "u4", "i4", "i8"))
#: each of them with its least and largest value (``np.iinfo`` once, not a row a segment)
_ROW_RANGES = tuple((k, int(np.iinfo(k).min), int(np.iinfo(k).max)) for k in _ROW_TYPES)


def _narrow(bounds: Sequence[tuple[int, int]]) -> np.dtype[Any] | None:
    """The narrowest integer type of :data:`_ROW_TYPES` that holds an int64 row whose
    pieces lie within ``bounds`` (least, largest) — so its values unchanged: counts of
    mostly ones, at-value rows and a sum's high word of small values in a byte, a sum's
    low word below 2^32 in four — or None for a row of zeros only (no bytes)."""
    low = min(b[0] for b in bounds)
    high = max(b[1] for b in bounds)
    if low == high == 0:
        return None
    for kind, least, largest in _ROW_RANGES:
        if least <= low and high <= largest:
            return kind
    raise AssertionError("an int64 row fits int64")  # pragma: no cover


def _codec() -> Any:
    """The blobs' codec (:data:`BLOB_CODEC`, at :data:`BLOB_LEVEL` where it has levels)."""
    if pa.Codec.supports_compression_level(BLOB_CODEC):
        return pa.Codec(BLOB_CODEC, compression_level=BLOB_LEVEL)
    return pa.Codec(BLOB_CODEC)


class _Segment:
    """A segment's header read from a blob (:data:`_HEAD`'s notes), its payload not yet
    decompressed."""

    __slots__ = ("buffer", "column", "families", "first", "kinds", "last", "n", "offsets",
                 "payload", "pieces", "size")

    def __init__(self, buffer: Any, at: int) -> None:
        v, w, f, n, first, last, size = struct.unpack_from(_HEAD, buffer, at)
        at += _HEAD_BYTES
        self.buffer, self.column, self.n, self.first, self.last, self.size = \
            buffer, v, n, first, last, size
        self.offsets: tuple[int, ...] = struct.unpack_from(f"<{w}q", buffer, at)
        at += 8 * w
        table = struct.unpack_from(f"<{4 * f}q", buffer, at)
        self.families = tuple(Family(table[4 * i], self.offsets, table[4 * i + 1])
                              for i in range(f))
        #: each family's entries: (its first key, their number)
        self.pieces = [(table[4 * i + 2], table[4 * i + 3]) for i in range(f)]
        at += 32 * f
        codes = buffer.slice(at, 2 + 2 * w).to_pybytes()
        self.kinds = [None if c == _ZERO else _ROW_TYPES[c] for c in codes]
        self.payload = at + _pad(2 + 2 * w)

    @property
    def end(self) -> int:
        """Where the next segment starts."""
        return self.payload + _pad(self.size)

    def spans(self) -> list[tuple[int, int]]:
        """Each word's least and largest key."""
        return [(self.first + off, self.last + off) for off in self.offsets]

    def rows(self) -> tuple[Any, list[int]]:
        """The payload decompressed and each row's byte offset in it."""
        widths = [0 if k is None else k.itemsize * self.n for k in self.kinds]
        raw = _codec().decompress(self.buffer.slice(self.payload, self.size),
                                  decompressed_size=sum(widths)) if self.size else b""
        return raw, np.cumsum([0, *widths]).tolist()

    def keys(self, raw: Any, at: list[int], out: np.ndarray | None = None) -> np.ndarray:
        """The first word's keys: each family's from its first key (the header's) by the
        running sum of its steps (written into ``out``, n int64, where given)."""
        if self.kinds[0] is None:
            keys = np.zeros(self.n, dtype=np.int64) if out is None else out
            keys[:] = 0
        else:
            keys = np.cumsum(np.frombuffer(raw, dtype=self.kinds[0], count=self.n,
                                           offset=at[0]), dtype=np.int64, out=out)
        a = 0
        for first, n in self.pieces:
            if n:
                keys[a:a + n] += first - keys[a]
                a += n
        return keys

    def row(self, raw: Any, at: list[int], i: int, a: int, z: int,
            out: np.ndarray | None = None) -> np.ndarray:
        """Row ``i``'s entries a … z − 1 as int64 (written into ``out`` where given)."""
        kind = self.kinds[i]
        if kind is None:
            if out is None:
                return np.zeros(z - a, dtype=np.int64)
            out[:] = 0
            return out
        got = np.frombuffer(raw, dtype=kind, count=z - a, offset=at[i] + a * kind.itemsize)
        if out is None:
            return got.astype(np.int64)
        np.copyto(out, got, casting="unsafe")
        return out

    def sums(self, raw: Any, at: list[int], word: int, a: int, z: int,
             counts: np.ndarray) -> np.ndarray:
        """Word ``word``'s sums of the entries a … z − 1 (``counts`` theirs) joined from
        their high and low words (:func:`~dprect.core.describe_stats.words_sum`; a high
        word of zeros: the low word itself)."""
        lo = self.row(raw, at, 3 + 2 * word, a, z)
        if self.kinds[2 + 2 * word] is None:
            return lo
        return words_sum(self.row(raw, at, 2 + 2 * word, a, z), lo, counts)

    def cuts(self, keys: np.ndarray, wanted: tuple[int, int] | None
             ) -> list[tuple[int, int, int, int]]:
        """(kernel column, word, a, z): the entries a … z − 1 of each family's word with
        keys in ``wanted`` (first, end) (None: every entry), in key order — a family's
        words one after the other, each its keys plus its offset."""
        if len(self.offsets) == 1:  # one word: the keys are every family's, in place
            whole = [(self.column, 0, 0, self.n)]
        else:
            whole = []
            a = 0
            for f, (_, n) in zip(self.families, self.pieces, strict=True):
                whole += [(f.first + i, i, a, a + n) for i in range(len(self.offsets)) if n]
                a += n
        if wanted is None:
            return whole
        edges = [np.searchsorted(keys, [wanted[0] - off, wanted[1] - off]).tolist()
                 for off in self.offsets]
        out = []
        for v, i, a, z in whole:
            lo, hi = max(a, edges[i][0]), min(z, edges[i][1])
            if hi > lo:
                out.append((v, i, lo, hi))
        return out


def _segments(blob: Any) -> Iterator[_Segment]:
    """A blob's segments, in key order (bytes or an Arrow buffer)."""
    buffer = pa.py_buffer(blob)
    at = 0
    while at < buffer.size:
        seg = _Segment(buffer, at)
        yield seg
        at = seg.end


def _read(seg: _Segment) -> Words:
    """A segment's (keys of its first word, counts, [sum of each word]) — the sums joined
    from their words (int64, or Python integers past int64)."""
    raw, at = seg.rows()
    keys = seg.keys(raw, at)
    counts = seg.row(raw, at, 1, 0, seg.n)
    return keys, counts, [seg.sums(raw, at, i, 0, seg.n, counts)
                          for i in range(len(seg.offsets))]


def from_blob(blob: Any, keys: tuple[int, int] | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (key, count, sum) lists of a blob (bytes or an Arrow buffer: its segments,
    :data:`_HEAD`'s notes; a family's words each as its own kernel column's lists, its
    keys the first word's plus the word's offset; the sums joined from their words:
    int64, or Python integers past int64) — given ``keys`` (first, end), only its entries
    with first ≤ key < end: a segment with no key there is not even decompressed, and of
    the others every key is read (the steps' running sum), the counts and sums of those
    entries only (a block's cells read by one mechanism of a mixed run)."""
    pieces: list[Lists] = []
    for seg in _segments(blob):
        if keys is not None and not any(lo < keys[1] and keys[0] <= hi
                                        for lo, hi in seg.spans()):
            continue
        raw, at = seg.rows()
        first_keys = seg.keys(raw, at)
        cuts = seg.cuts(first_keys, keys)
        if not cuts:
            continue
        a, z = min(c[2] for c in cuts), max(c[3] for c in cuts)
        counts = seg.row(raw, at, 1, a, z)
        words: dict[int, np.ndarray] = {}  # each word's sums joined once
        for _, i, lo, hi in cuts:
            if i not in words:
                words[i] = seg.sums(raw, at, i, a, z, counts)
            off = seg.offsets[i]
            pieces.append((first_keys[lo:hi] + off if off else first_keys[lo:hi],
                           counts[lo - a:hi - a], words[i][lo - a:hi - a]))
    if not pieces:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    return pieces[0] if len(pieces) == 1 else _joined(pieces)


Lists = tuple[np.ndarray, np.ndarray, np.ndarray]
#: (key, count, [sum of each word]) lists: a kernel column's, or a family's (keys and
#: counts shared by a column's significands and its squares' two words)
Words = tuple[np.ndarray, np.ndarray, list[np.ndarray]]


def _joined(parts: Sequence[Lists]) -> Lists:
    """(key, count, sum) lists concatenated, in the given order."""
    keys, n, sums = (np.concatenate([p[i] for p in parts]) for i in range(3))
    return keys, n, sums


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


def _int64_safe(total: Words, chunk: Words) -> bool:
    """Whether every sum of ``total`` and ``chunk`` merged is an int64 — both int64 and no
    key reaching :data:`~dprect.core.describe_stats.EXACT_ROWS` rows — as the compiled
    merge needs (:func:`~dprect.core.describe_stats.sum_by_key` is exact past it)."""
    return (all(x.dtype != object for x in (*total[2], *chunk[2]))
            and int(total[1].max(initial=0)) + int(chunk[1].max(initial=0)) < EXACT_ROWS)


def _words_into(total: Words | None, chunk: Words) -> Words:
    """A family's running (key, count, [sum of each word]) total — sorted, unique — and a
    chunk's lists summed by key: the chunk itself where it is the first and its keys
    strictly increase (every counting step gives them in key order), one linear merge
    where ``describe_jit`` runs here (:func:`merge_sorted` of one word, :func:`merge_two`
    of several), else by a sort (:func:`_sum_words`); the same lists."""
    if total is None and _increasing(chunk[0]) and all(x.dtype != object for x in chunk[2]):
        return (np.asarray(chunk[0], dtype=np.int64), np.asarray(chunk[1], dtype=np.int64),
                [np.asarray(x, dtype=np.int64) for x in chunk[2]])
    if total is not None and len(chunk[0]) >= JIT_ROWS // 64 and _int64_safe(total, chunk):
        jit = _jit()
        if jit is not None and len(chunk[2]) == 1:
            one = jit.merge_sorted((total[0], total[1], total[2][0]),
                                   (chunk[0], chunk[1], chunk[2][0]))
            if one is not None:
                return one[0], one[1], [one[2]]
        elif jit is not None:
            got: Words | None = jit.merge_two(total, chunk)
            if got is not None:
                return got
    return _sum_words([chunk] if total is None else [total, chunk])


def _increasing(keys: np.ndarray) -> bool:
    """Whether ``keys`` strictly increase (sorted and unique)."""
    return bool((keys[1:] > keys[:-1]).all())


def _merge_words(parts: Sequence[Words]) -> Words:
    """Partial (key, count, [sum of each word]) lists, each sorted and unique, every part
    with the same words, summed by key: merged compiled (``describe_jit``'s
    :func:`merge_words`: windows of sorted words, each entry written once; a family's
    words merged together, its keys and counts once) where it runs here and every sum
    stays an int64 (no key can reach :data:`~dprect.core.describe_stats.EXACT_ROWS` rows:
    the parts' largest counts add up to less), else — or when a part is not strictly
    increasing, or the keys span past 2^63 — by a sort
    (:func:`~dprect.core.describe_stats.sum_by_key`, word by word)."""
    kept = [p for p in parts if len(p[0])]
    exact = all(s.dtype != object for p in kept for s in p[2])
    if len(kept) <= 1:
        if kept and exact and _increasing(kept[0][0]):
            return kept[0]
        return _sum_words(parts)
    jit = _jit()
    if jit is None or not exact or sum(int(p[1].max()) for p in kept) >= EXACT_ROWS:
        return _sum_words(parts)
    got: Words | None = jit.merge_words(kept)
    # None: a part not strictly increasing, or keys the compiled merge's words cannot hold
    return _sum_words(parts) if got is None else got


def _sum_words(parts: Sequence[Words]) -> Words:
    """:func:`_merge_words` by a sort: each word summed by key
    (:func:`~dprect.core.describe_stats.sum_by_key`: exact at any count)."""
    keys = np.concatenate([np.asarray(p[0], dtype=np.int64) for p in parts])
    counts = np.concatenate([np.asarray(p[1], dtype=np.int64) for p in parts])
    summed = [sum_by_key(keys, np.concatenate([p[2][x] for p in parts]), counts)
              for x in range(len(parts[0][2]))]
    return summed[0][0], summed[0][1], [s[2] for s in summed]


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
                 limits: Sequence[np.ndarray] | None = None,
                 only: Sequence[int] | None = None) -> Iterator[Any]:
    """mapInArrow body: a partition's rows counted (and summed) per (group g, column j,
    bin b) (module notes; :func:`column_lists` per chunk and column) under the key of
    :func:`key_bases`, sorted, and cut into ``ranges`` contiguous key ranges of cells
    (or, given ``limits``, per kernel column the first key of each range and the end:
    :func:`block_limits`, a range per block of groups), one
    (range, blob) row each (:func:`range_blobs`), each row a batch of its own — sent
    early, and those lists started again: the decimal grids' (about an entry a value)
    whenever they hold :data:`HELD_ENTRIES`, every list whenever the others hold
    :data:`KEPT_ENTRIES` (the range's merge task sums every row of its range, so the
    merged lists are the same whenever a list is sent). Ungrouped
    (``group_column`` None): every row is group 0 (``groups`` 1). ``spec`` is the
    kernel's (:func:`virtual_columns`), ``layout`` its columns' (column, word); None:
    one kernel column per column, its significands. ``only``: the indices of the columns
    counted here (the others' are counted in the JVM: :func:`partial_pass`); None: all."""
    words = list(layout) if layout is not None else [(j, 0) for j in range(len(columns))]
    base = key_bases(spec, groups)
    counted = list(range(len(columns))) if only is None else list(only)
    chunk_rows = -(-CHUNK_VALUES // max(1, len(counted)))
    if limits is None:
        limits = range_limits(spec, groups, ranges)
    # a column's kernel columns are one family (its significands and its squares' words:
    # one list of keys and counts, a sum row a word) or one kernel column
    families = _families(spec, words, base)
    family_of = {words[f.first][0]: i for i, f in enumerate(families)}
    runs = _runs(spec, families)
    acc: list[Words | None] = [None for _ in families]
    # a decimal grid's lists grow about an entry a value: those are sent on when they
    # hold HELD_ENTRIES; the other grids' (a few hundred bins a cell, whatever the rows)
    # keep summing across those sends while they hold fewer than KEPT_ENTRIES
    growing = [isinstance(spec.columns[f.first].grid, DecimalGrid) for f in families]
    for i, group, x in finite_chunks(batches, chunk_rows, [columns[j] for j in counted],
                                     group_column, group_kind, group_values):
        f = family_of[counted[i]]
        v = families[f].first
        mine = range(v, v + len(families[f].offsets))  # they share the column's encoding
        lists = shared_lists(group, x, groups, [(spec.columns[u], words[u][1]) for u in mine])
        g, b, n, _ = lists[0]
        for other in lists[1:]:  # the same rows on the same grid: the same pairs, in order
            if not (np.array_equal(other[0], g) and np.array_equal(other[1], b)
                    and np.array_equal(other[2], n)):
                raise AssertionError("a family's words counted different bins")
        key = np.int64(base[v]) + g.astype(np.int64) * np.int64(spec.columns[v].grid.size) + b
        acc[f] = _words_into(acc[f], (key, n, [t[3] for t in lists]))  # sorted, unique
        held = [0 if t is None else len(t[0]) for t in acc]
        rest = sum(h for h, grows in zip(held, growing, strict=True) if not grows)
        if sum(held) - rest >= HELD_ENTRIES or rest >= KEPT_ENTRIES:  # sent on, merged
            send = [grows or rest >= KEPT_ENTRIES for grows in growing]  # with the rest
            yield from range_blobs([t if out else None for t, out in zip(acc, send,
                                                                         strict=True)],
                                   limits, ranges, families, runs)
            acc = [None if out else t for t, out in zip(acc, send, strict=True)]
    yield from range_blobs(acc, limits, ranges, families, runs)


def range_limits(spec: StatisticsSpec, groups: int, ranges: int) -> list[np.ndarray]:
    """Per kernel column, the first key of each of ``ranges`` contiguous key ranges of
    cells, then the end (:func:`partial_bins`' ranges without blocks)."""
    cells = len(spec.columns) * groups
    starts = cell_starts(spec, groups, np.arange(ranges + 1, dtype=np.int64) * cells // ranges)
    return [starts for _ in spec.columns]


def jvm_blobs(batches: Iterator[Any], spec: StatisticsSpec, layout: Sequence[tuple[int, int]],
              groups: int, ranges: int, limits: Sequence[np.ndarray], stride: int,
              counted: Sequence[int]) -> Iterator[Any]:
    """mapInArrow body of the JVM route (:mod:`dprect.engines.spark.jvm_bins`): the
    JVM's merged cells — per (group g, column j) row, int64 rows (bin, count, Σ M[, Σ of
    M²'s high word, of its low word]), ``stride`` the words after the bin (count
    included) — as :func:`partial_bins`' (range, blob) rows: each column's family's
    (key, count, [sum of each word]) lists under :func:`key_bases`' keys (a family of one
    word reads Σ M only), sorted, cut by :func:`range_blobs` — a batch of cells at a time
    (the merge sums a range's blobs whatever their number). ``spec`` and ``layout`` are
    the kernel's (:func:`virtual_columns`); the JVM's column c is the spec's column
    ``counted[c]`` (the others' families are left to :func:`partial_bins`)."""
    base = key_bases(spec, groups)
    families = _families(spec, layout, base)
    runs = _runs(spec, families)
    family_of = {layout[f.first][0]: i for i, f in enumerate(families)}
    family = np.array([family_of[j] for j in counted], dtype=np.int64)
    start = np.array([families[family_of[j]].start for j in counted], dtype=np.int64)
    # each counted column's own grid size (key_bases' size_j), not an assumed first column's
    size = np.array([int(spec.columns[families[family_of[j]].first].grid.size)
                     for j in counted], dtype=np.int64)
    width = 1 + stride
    for batch in batches:
        if batch.num_rows == 0:
            continue
        g = batch.column(0).to_numpy(zero_copy_only=False).astype(np.int64)
        c = batch.column(1).to_numpy(zero_copy_only=False).astype(np.int64)
        cells = batch.column(2)
        ends = np.frombuffer(cells.buffers()[1], dtype="<i4")[
            cells.offset:cells.offset + len(cells) + 1].astype(np.int64)
        rows = np.frombuffer(cells.buffers()[2], dtype="<i8",
                             count=int(ends[-1] - ends[0]) // 8,
                             offset=int(ends[0])).reshape(-1, width)
        per = np.diff(ends) // (8 * width)
        col = np.repeat(c, per)
        keys = start[col] + np.repeat(g, per) * size[col] + rows[:, 0]
        order = np.argsort(keys, kind="stable")  # families' keys lie in increasing ranges
        keys, rows = keys[order], rows[order]
        cuts = np.searchsorted(family[col][order], np.arange(len(families) + 1)).tolist()
        acc: list[Words | None] = [None] * len(families)
        for f, fam in enumerate(families):
            a, z = cuts[f], cuts[f + 1]
            if z > a:
                acc[f] = (keys[a:z], rows[a:z, 1].copy(),
                          [rows[a:z, 2 + w].copy() for w in range(len(fam.offsets))])
        yield from range_blobs(acc, limits, ranges, families, runs)


def range_blobs(acc: Sequence[Words | None], limits: Sequence[np.ndarray], ranges: int,
                families: Sequence[Family] | None = None,
                runs: Sequence[Sequence[int]] | None = None) -> Iterator[Any]:
    """:func:`partial_bins`' output: per key range with entries, one (range, blob) batch
    of every family's running (key, count, [sum of each word]) lists ``acc`` (family i of
    ``families``, :func:`_families`; None: a kernel column each, its first key its start)
    cut at its first kernel column's ``limits``: a segment a run of families (``runs``,
    :func:`_runs`; None: a run a family) with entries in the range (:func:`_segment`)."""
    if families is None:
        families = [Family(v, (0,), 0 if t is None or not len(t[0]) else int(t[0][0]))
                    for v, t in enumerate(acc)]
    if runs is None:
        runs = [[i] for i in range(len(families))]
    # each family's rows (its sums split once, its keys' steps taken once), the least and
    # largest value of each (a piece's rows lie within them), where each range starts
    rows = {}
    for i, t in enumerate(acc):
        if t is None or not len(t[0]):
            continue
        steps = np.empty(len(t[0]), dtype=np.int64)
        steps[0] = 0
        np.subtract(t[0][1:], t[0][:-1], out=steps[1:])
        split = [_bounded_words(x) for x in t[2]]
        words = [pair for pair, _ in split]
        bounds = [_bounds(t[1]), *(b for _, two in split for b in two)]
        edges = np.searchsorted(t[0], limits[families[i].first])
        rows[i] = (t[0], t[1], words, steps, bounds, edges.tolist(),
                   _range_bounds(steps, edges))
    for r in range(ranges):  # a batch per range: Arrow's binary holds < 2 GB a batch
        segments = []
        for run in runs:
            pieces: list[Piece | None] = []
            for i in run:
                got = rows.get(i)
                if got is None or got[5][r + 1] <= got[5][r]:
                    pieces.append(None)
                    continue
                keys, counts, words, steps, bounds, e, step_bounds = got
                a, z = e[r], e[r + 1]
                pieces.append((keys[a:z], counts[a:z],
                               [(None if hi is None else hi[a:z], lo[a:z]) for hi, lo in words],
                               steps[a:z], [step_bounds[r], *bounds]))
            if any(p is not None for p in pieces):
                segments.append(_segment([families[i] for i in run], pieces))
        if segments:
            yield pa.RecordBatch.from_arrays([pa.array([r], pa.int32()),
                                              _binary(b"".join(segments))],
                                             names=[PART, BLOB])


def _range_bounds(steps: np.ndarray, edges: np.ndarray) -> list[tuple[int, int]]:
    """Per range r (entries ``edges[r]`` … ``edges[r + 1]`` − 1 of a family's lists),
    :func:`_bounds` of its steps after its first (``steps[a + 1:z]``: a range's first key
    is in its segment's header; (0, 0) for a range of one entry or none) — every range's
    at once, not a call a range (at 10^6 groups a family's lists are cut into thousands
    of ranges a send): one ``reduceat`` of the minima and one of the maxima at the
    indices a + 1, z of each range with steps, every other result read (no copies)."""
    out = [(0, 0)] * (len(edges) - 1)
    a, z = edges[:-1], edges[1:]
    many = np.flatnonzero(z - a > 1)  # ranges with a step after their first
    if not len(many):
        return out
    at = np.empty(2 * len(many), dtype=np.int64)
    at[0::2] = a[many] + 1
    at[1::2] = z[many]
    if at[-1] == len(steps):  # the last range runs to the end: reduceat's last does
        at = at[:-1]
    least = np.minimum.reduceat(steps, at)[0::2].tolist()
    largest = np.maximum.reduceat(steps, at)[0::2].tolist()
    for r, low, high in zip(many.tolist(), least, largest, strict=True):
        out[r] = (low, high)
    return out


def _words(sums: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """A sum row's two words (:func:`~dprect.core.describe_stats.sum_words`), the high
    one None where every sum lies in [0, 2^32) — the low word is then the sum itself
    (the quantiles' at-value rows, a square word's sums over few rows): no split, no
    copies."""
    return _bounded_words(sums)[0]


def _bounded_words(sums: np.ndarray
                   ) -> tuple[tuple[np.ndarray | None, np.ndarray], list[tuple[int, int]]]:
    """:func:`_words` of a sum row, with each word's least and largest value."""
    if sums.dtype != object and len(sums):
        low, high = int(sums.min()), int(sums.max())
        if low >= 0 and high < 1 << SUM_WORD:
            return (None, sums), [(0, 0), (low, high)]
    hi, lo = sum_words(sums)
    return (hi, lo), [_bounds(hi), _bounds(lo)]


def _families(spec: StatisticsSpec, words: Sequence[tuple[int, int]], base: np.ndarray
              ) -> list[Family]:
    """The kernel's columns grouped into :class:`Family` s, one a column: its kernel
    columns (its significands and, for a variance, its squares' two words:
    :func:`virtual_columns`), on one grid, so with the same bins and counts and keys a
    constant apart (each word's offset base[v + i] − base[v])."""
    out = []
    v = 0
    while v < len(words):
        w = 1
        while v + w < len(words) and words[v + w][0] == words[v][0]:
            if spec.columns[v + w].grid != spec.columns[v].grid:
                raise ParameterError("a column's kernel columns must share its grid")
            w += 1
        out.append(Family(v, tuple(int(base[v + i]) - int(base[v]) for i in range(w)),
                          int(base[v])))
        v += w
    return out


def _runs(spec: StatisticsSpec, families: Sequence[Family]) -> list[list[int]]:
    """The families cut into runs of consecutive families with the same words (offsets)
    on the same kind of grid — a segment each (:func:`_segment`): in a mixed run, each
    mechanism's columns (the query's on the search grid, with or without squares; the
    quantiles' on decimal grids; the coverage bounds' on their domains), so a mechanism
    reads its own segments. A public function of the spec."""
    out: list[list[int]] = []
    for i, f in enumerate(families):
        kind = (f.offsets, type(spec.columns[f.first].grid))
        if out and kind == (families[out[-1][0]].offsets,
                            type(spec.columns[families[out[-1][0]].first].grid)):
            out[-1].append(i)
        else:
            out.append([i])
    return out


def merge_blobs(table: Any) -> Any:
    """applyInArrow body: one range's partial lists (one blob per partition and early
    send) summed, segment by segment (:func:`_merged_segments`)."""
    part = table.column(PART)[0].as_py()
    merged = _merged_segments([b.as_buffer() for b in table.column(BLOB)])
    return pa.table({PART: pa.array([part], pa.int32()), BLOB: _binary(merged)})


def merge_block(table: Any) -> Any:
    """applyInArrow body of the merge by block range (:func:`counting_pass` with
    ``ranges``): one block's partial lists summed as :func:`merge_blobs` sums them, or,
    for a block present by its listed row alone (no rows in the block), a null blob —
    with the listed row's other columns (its seeds, its group names), as they came, in
    their order (a plain function: pyspark's ``applyInArrow`` reads a ``partial``'s
    type hints and fails)."""
    part = table.column(PART)[0].as_py()
    carried = [c for c in table.column_names if c not in (PART, BLOB, RANGE)]
    blobs = [b.as_buffer() for b in table.column(BLOB) if b.is_valid]
    out = {PART: pa.array([part], pa.int32()),
           BLOB: _binary(_merged_segments(blobs)) if blobs else pa.nulls(1, pa.binary())}
    for name in carried:
        listed = table.column(name).drop_null()
        out[name] = listed.slice(0, 1) if len(listed) else pa.nulls(1, pa.binary())
    return pa.table(out)


def _merged_segments(blobs: Sequence[Any]) -> bytes:
    """The segments of several blobs of one range summed run by run (every family's
    words together, :func:`_merge_words`), in key order, as one blob's bytes. A run
    whose segments differ in shape from blob to blob (its families, e.g. a blob of
    one list's blob beside a pass's) is merged kernel column by kernel column."""
    found: dict[int, list[tuple[tuple[Family, ...], Words]]] = {}
    flat: dict[int, Words] = {}  # a run's lists merged from one flat decode
    segs: dict[int, list[_Segment]] = {}
    for blob in blobs:
        for seg in _segments(blob):
            segs.setdefault(seg.column, []).append(seg)
    for v, run in segs.items():
        shapes = {(tuple(f.first for f in seg.families), seg.offsets) for seg in run}
        merged = _merge_flat(run) if len(shapes) == 1 and len(run) > 1 else None
        if merged is not None:
            flat[v] = merged
            found[v] = [(run[0].families, merged)]
        else:
            found[v] = [(seg.families, _read(seg)) for seg in run]
    del segs
    out = []
    while found:
        v = min(found)
        group = found.pop(v)
        shapes = {(tuple(f.first for f in families), families[0].offsets)
                  for families, _ in group}
        if len(shapes) > 1:  # each kernel column apart
            for families, lists in group:
                for column, start, piece in _apart(families, lists):
                    found.setdefault(column, []).append(((Family(column, (0,), start),),
                                                         piece))
            continue
        keys, counts, sums = flat.pop(v) if v in flat and len(group) == 1 else \
            _merge_words([lists for _, lists in group])
        families = group[0][0]
        at = np.searchsorted(keys, [f.start for f in families[1:]]).tolist() \
            if len(families) > 1 else []
        words = [_words(x) for x in sums]
        out.append(_segment(families, [
            (keys[a:z], counts[a:z],
             [(None if hi is None else hi[a:z], lo[a:z]) for hi, lo in words], None, None)
            for a, z in zip([0, *at], [*at, len(keys)], strict=True)]))
    return b"".join(out)


def _merge_flat(run: Sequence[_Segment]) -> Words | None:
    """:func:`_merge_words` of several segments of one shape, each decoded in place into
    one flat list (no concatenation of the decoded parts: ``describe_jit``'s
    :func:`merge_flat`), where every list is int64 and they merge compiled as
    :func:`_merge_words` would merge them; None (the caller decodes and merges them
    apart, as before) where a sum is past int64, a count past
    :data:`~dprect.core.describe_stats.EXACT_ROWS` could be reached, or the compiled merge
    is not here. The same lists."""
    jit = _jit()
    if jit is None:
        return None
    total = sum(seg.n for seg in run)
    words = len(run[0].offsets)
    keys = np.empty(total, dtype=np.int64)
    counts = np.empty(total, dtype=np.int64)
    sums = np.empty((words, total), dtype=np.int64)
    offsets = np.zeros(len(run) + 1, dtype=np.int64)
    top = 0
    a = 0
    for i, seg in enumerate(run):
        z = a + seg.n
        raw, at = seg.rows()
        seg.keys(raw, at, out=keys[a:z])
        n = seg.row(raw, at, 1, 0, seg.n, out=counts[a:z])
        top += int(n.max())
        for x in range(words):
            if seg.kinds[2 + 2 * x] is None:  # no high word: the low word is the sum
                seg.row(raw, at, 3 + 2 * x, 0, seg.n, out=sums[x, a:z])
                continue
            got = seg.sums(raw, at, x, 0, seg.n, n)
            if got.dtype == object:
                return None
            sums[x, a:z] = got
        offsets[i + 1] = a = z
    if top >= EXACT_ROWS:
        return None
    merged: Words | None = jit.merge_flat(keys, counts, sums, offsets)
    return merged


def _apart(families: Sequence[Family], lists: Words
           ) -> Iterator[tuple[int, int, Words]]:
    """A segment's lists (:func:`_read`) as each kernel column's: (kernel column, its
    start, its lists — keys in place)."""
    keys, counts, sums = lists
    offsets = families[0].offsets
    at = np.searchsorted(keys, [f.start for f in families]).tolist() \
        if len(families) > 1 else [0]
    for f, a, z in zip(families, at, [*at[1:], len(keys)], strict=True):
        for i, off in enumerate(offsets):
            if z > a:
                yield f.first + i, f.start + off, (keys[a:z] + off, counts[a:z],
                                                   [sums[i][a:z]])


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
        raise missing_columns(None, missing, list(types))
    for c in columns:
        if not isinstance(types[c], _NUMERIC):
            raise not_numeric(c, types[c].simpleString())
    return None if group_by is None else label_kind(types[group_by], group_by, "group")


def counting_pass(df: DataFrame, columns: Sequence[str], spec: StatisticsSpec, *,
                  group_by: str | None = None, groups: Sequence[str] | None = None,
                  blocks: Sequence[int] | None = None, cores: int | None = None,
                  ranges: BlockRanges | None = None, listed: DataFrame | None = None
                  ) -> tuple[DataFrame, StatisticsSpec, int]:
    """The pass as a DataFrame, not yet run (module notes): one (range, blob) row per key
    range of the merged cells, with the kernel's spec (:func:`virtual_columns`) and the
    number of groups. ``blocks``: the first group of each block of consecutive groups, the
    ranges then being the blocks, every column's cells of a block in one row
    (:func:`block_limits`; range r is block r), for the draws in
    the executors; None: contiguous key ranges sized for the collect. ``cores``: as
    :func:`partial_pass` takes it. ``ranges`` (with ``blocks``): the merge's exchange puts
    each block in its partition by block range
    (:class:`~dprect.engines.spark.block_ranges.BlockRanges`, ``repartitionById``), so the
    merged blocks lie in runs of consecutive blocks that never cross a wave; else a hash
    of the range. ``listed`` (with ``ranges``): a row per block (:data:`PART` and binary
    columns: its seeds, its names), sent in the same exchange and merged into its block's
    row (:func:`merge_block`), so every block has a row (a null blob where it has no rows)
    carrying its listed columns. Schema errors are raised here, before any Spark job."""
    partial_rows, kernel, count = partial_pass(df, columns, spec, group_by=group_by,
                                               groups=groups, blocks=blocks, cores=cores)
    if ranges is None:
        if listed is not None:
            raise ParameterError("listed blocks are merged by block range only")
        merged = partial_rows.groupBy(PART).applyInArrow(merge_blobs, OUTPUT_SCHEMA)
        return merged, kernel, count
    carried = [] if listed is None else [c for c in listed.columns if c != PART]
    rows = partial_rows if listed is None else \
        partial_rows.unionByName(listed, allowMissingColumns=True)
    schema = ", ".join([OUTPUT_SCHEMA, *(f"{c} binary" for c in carried)])
    merged = rows.withColumn(RANGE, ranges.column(PART)) \
        .repartitionById(ranges.partitions, RANGE) \
        .groupBy(RANGE, PART).applyInArrow(merge_block, schema)
    return merged, kernel, count


#: the group column's name in the pass's rows (:func:`pass_input`)
PLAIN_GROUP = "_g"


def plain_names(columns: Sequence[str]) -> dict[str, str]:
    """Each distinct column's name in the pass's rows (:func:`pass_input`): ``_c`` and its
    place among the distinct columns."""
    return {c: f"_c{j}" for j, c in enumerate(dict.fromkeys(columns))}


def pass_input(df: DataFrame, columns: Sequence[str], group_by: str | None,
               cores: int | None = None, plain: dict[str, str] | None = None) -> DataFrame:
    """The rows the pass reads: each column selected once (a mixed run's spec counts a
    column once per mechanism) under its plain name (``plain``, :func:`plain_names` of
    all the run's columns; default: of ``columns``) with the group column as
    :data:`PLAIN_GROUP`, one partition per core (``cores``: the session's default
    parallelism as the caller read it; None: read here). Plain names, as pyspark's
    ``mapInArrow`` resolves its input's columns by name, and a column named ``a.b`` or
    with a backtick does not resolve as itself (a struct field, a syntax error)."""
    names = plain_names(columns) if plain is None else plain
    read = [f"{ident(c)} AS {names[c]}" for c in dict.fromkeys(columns)]
    if group_by is not None:
        read.append(f"{ident(group_by)} AS {PLAIN_GROUP}")
    return df.selectExpr(*read).coalesce(
        default_parallelism(df.sparkSession) if cores is None else cores)


def partial_pass(df: DataFrame, columns: Sequence[str], spec: StatisticsSpec, *,
                 group_by: str | None = None, groups: Sequence[str] | None = None,
                 blocks: Sequence[int] | None = None, cores: int | None = None
                 ) -> tuple[DataFrame, StatisticsSpec, int]:
    """:func:`counting_pass` before its merge stage: each partition's (range, blob) rows
    (:func:`partial_bins`), not yet run, with the kernel's spec and the number of groups —
    describe's columns, where the session's JVM counts them (:func:`jvm_route`), as the
    JVM's merged cells written as blobs (:func:`jvm_blobs`), beside the other columns'
    ``mapInArrow`` rows (the merge sums them alike: the same merged cells either way).
    ``cores``: the session's default parallelism as the caller read it (None: read here),
    read once a pass."""
    kind = check_schema(df, columns, group_by)
    if len(spec.columns) != len(columns):
        raise ParameterError(f"{len(columns)} column(s) for a spec of {len(spec.columns)}")
    kernel, layout = virtual_columns(spec)
    for c in spec.columns:
        check_grid(c.grid)
    if group_by is not None:
        if not groups:
            raise ParameterError("a group column needs the public list of group values")
        group_type = df.schema[group_by].dataType  # keys compared in the column's own type
        resolved = resolve_groups(list(groups), kind or "null", group_by,
                                  integral=integral_type(group_type),
                                  single=isinstance(group_type, T.FloatType))
        # a tuple: an executor's task builds its lookup once (row_kernels.group_lookup)
        values = None if resolved is None else tuple(resolved)
        count = len(groups)
    else:
        values, count = None, 1
    if int(key_bases(kernel, count)[-1]) >= 1 << 62:
        raise ParameterError(f"{len(columns)} columns × {count} groups are too many cells "
                             f"for one run")
    if cores is None:
        cores = default_parallelism(df.sparkSession)
    ranges = len(blocks) if blocks is not None else \
        max(RANGES_PER_CORE * cores, -(-len(kernel.columns) * count // CELLS_PER_RANGE))
    limits = None if blocks is None else block_limits(kernel, count, blocks)
    jvm = jvm_route(df, spec, columns, group_by, kind, count)
    keys = [] if group_by is None or not jvm else group_keys(
        values or [], kind or "", integral_type(df.schema[group_by].dataType))
    if keys is None:  # a listed integer past the long range: no JVM key stands for it
        jvm = []
    taken = set(jvm)
    rest = [j for j in range(len(columns)) if j not in taken]
    plain = plain_names(columns)
    group = None if group_by is None else PLAIN_GROUP
    body = partial(partial_bins, columns=[plain[c] for c in columns], group_column=group,
                   group_kind=kind or "", group_values=values, groups=count,
                   ranges=ranges, spec=kernel, layout=layout, limits=limits,
                   only=rest if jvm else None)
    rows = pass_input(df, [columns[j] for j in rest], group_by, cores, plain).mapInArrow(
        body, OUTPUT_SCHEMA) if rest else None
    if jvm:  # describe's columns counted in the JVM, their cells written as blobs here
        names = [columns[j] for j in jvm]
        squares = any(spec.columns[j].squares for j in jvm)
        cells = merged_cells(pass_input(df, names, group_by, cores, plain), group,
                             [plain[c] for c in names],
                             keys or [], shift=_GRID.shift,
                             zero_bin=_GRID.size // 2, drop=DROPPED_BITS, squares=squares,
                             reducers=cores)
        written = cells.mapInArrow(partial(
            jvm_blobs, spec=kernel, layout=layout, groups=count, ranges=ranges,
            limits=range_limits(kernel, count, ranges) if limits is None else limits,
            stride=4 if squares else 2, counted=jvm), OUTPUT_SCHEMA)
        rows = written if rows is None else written.unionByName(rows)
    assert rows is not None  # a spec has columns
    return rows, kernel, count


def jvm_route(df: DataFrame, spec: StatisticsSpec, columns: Sequence[str],
              group_by: str | None, kind: str | None, groups: int = 1) -> list[int]:
    """The indices of the columns the pass counts in the JVM
    (:mod:`dprect.engines.spark.jvm_bins`): those of describe's (the search grid with
    sums, no at-value rows) whose types the JVM reads, when the group column (of
    ``kind``) is one it reads, the public ``groups`` and those columns are at most
    :data:`~dprect.engines.spark.jvm_bins.MAX_GROUPS` and ``MAX_COLUMNS``
    (:func:`~dprect.engines.spark.jvm_bins.takes`: its memory bounded whatever the
    values; else every column takes the pass) and the session's JVM holds the kernel at
    its version (:func:`~dprect.engines.spark.session.has_bins`); the others (a mixed run's
    quantiles or coverage bounds) take ``mapInArrow``. Public: the spec, the schema, the
    number of public groups and the session only; the cells are the same either way."""
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    if group_by is not None and (kind not in ("numeric", "boolean")
                                 or not readable([], types[group_by])):
        return []
    chosen = [j for j, (c, name) in enumerate(zip(spec.columns, columns, strict=True))
              if c.grid == _GRID and c.sums and not c.at_value and readable([types[name]], None)]
    if not chosen or not takes(groups, len(chosen)):
        return []
    return chosen if has_bins(df.sparkSession) else []


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
    out: GroupedStatistics = {}
    found = _cell_entries(table, spec, groups, columns, block)
    if found is None:
        return out
    spec, first, m, bins, n, sums, low, high = found
    size = high - low
    used = np.flatnonzero(size)
    # per column, its cells' sums, or None; and its at-value rows as int64, converted a
    # column's run of entries at a time (not a cell at a time: the same values), or None
    kept_of = [sums if c.sums else None for c in spec.columns]
    at_of: list[np.ndarray | None] = [None] * len(spec.columns)
    if any(c.at_value for c in spec.columns):
        at_all = np.zeros(len(bins), dtype=np.int64)  # filled on at-value columns' runs
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


def to_column_arrays(table: Any, spec: StatisticsSpec, groups: int,
                     columns: tuple[int, int], block: tuple[int, int]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`to_cells`' cells of one block as column arrays, no object a cell: cell
    c = j·m + (g − first) (m = end − first groups; j numbered from ``columns``' first)
    holds the entries at[c]:at[c + 1] of the bins, their rows and their sums (the
    decode's own arrays: the same values as the cells' — each a slice of these);
    ``spec``'s columns a … b − 1 must keep sums."""
    first, end = block
    found = _cell_entries(table, spec, groups, columns, block)
    if found is None:
        empty = np.zeros(0, dtype=np.int64)
        return (empty, empty, empty,
                np.zeros((end - first) * (columns[1] - columns[0]) + 1, dtype=np.int64))
    _, _, _, bins, n, sums, low, high = found
    at = np.zeros(len(low) + 1, dtype=np.int64)
    at[:-1], at[-1] = low, high[-1] if len(high) else 0
    return bins, n, np.asarray(sums), at


def _cell_entries(table: Any, spec: StatisticsSpec, groups: int,
                  columns: tuple[int, int] | None, block: tuple[int, int] | None
                  ) -> tuple[StatisticsSpec, int, int, np.ndarray, np.ndarray, Any,
                             np.ndarray, np.ndarray] | None:
    """The decode :func:`to_cells` and :func:`to_column_arrays` share: (the columns'
    spec, the first group, m groups, every entry's bin, rows and sums, and each cell
    c = j·m + (g − first)'s first entry and end), or None without entries; the entries
    of cell c are [low[c], high[c]) — consecutive cells' ranges meet."""
    order = np.argsort(np.asarray(table.column(PART).to_numpy(), dtype=np.int64))
    blobs = [b.as_buffer() for b in table.column(BLOB)]  # no copies
    wanted = None
    if columns is not None:  # the columns' keys, from the first one's base
        whole = key_bases(spec, groups)
        wanted = (int(whole[columns[0]]), int(whole[columns[1]]))
    parts = [from_blob(blobs[i], wanted) for i in order]
    if not parts:
        return None
    # disjoint ranges in key order: sorted (one range, a block's: its lists as they are) —
    # but a family's words travel in its first word's range (range_blobs), so a range cut
    # inside a family's later words leaves those past the next range's first keys: sorted
    keys, n, sums = parts[0] if len(parts) == 1 else _joined(parts)
    if len(parts) > 1 and not _increasing(keys):
        order = np.argsort(keys, kind="stable")
        keys, n, sums = keys[order], n[order], sums[order]
    if columns is not None and wanted is not None:
        keys = keys - wanted[0]
        spec = StatisticsSpec(spec.columns[columns[0]:columns[1]])
        if not len(keys):
            return None
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
    return spec, first, m, bins, n, sums, low, high


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
    "jvm_blobs",
    "jvm_route",
    "partial_bins",
    "partial_pass",
    "pass_input",
    "plain_names",
    "range_limits",
    "real_cells",
    "spark_statistics",
    "to_cells",
]
