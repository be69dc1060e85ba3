"""The in-memory engine on rows held where they are: no float64 copy, one blocked pass.

:class:`MatrixEngine` answers the engine's questions (docs/algorithm.md §7) for the rows of
a 2-D array ``X`` (rows × features, float32 or float64 read as they are, any other numeric
dtype read as float64 block by block) — or of Arrow record batches
(:meth:`MatrixEngine.from_batches`, the ``collect`` strategy's shipped rows) — that are
*selected*: ``positive`` and, on every feature, finite (the ``drop`` policy of
:func:`dprect.core.reading.select_rows`, row-local). It answers as
:class:`~dprect.engines.numpy_engine.NumpyEngine` on ``select_rows(X, positive)`` encoded
by the domains — the same multisets — without the float64 copy of X, the copy of the
selected rows and the encoded columns (8·d bytes a row), and without a full pass per
window.

**One pass for every order.** At the first window (nothing cut yet) — or earlier, when
``auto``'s private count asks for :meth:`MatrixEngine.remaining` first — a fixed strided
sample of the rows (no randomness is drawn) gives, per order (axis, side), a raw-value
threshold with a safety margin such that about ``K`` selected rows lie at or beyond it
(``K`` from the first window's ``stop``: :data:`LIST_FACTOR` × stop, at least
:data:`MIN_LIST`; :data:`PRELIST` for the count's pass, whose lists a first window whose
own ``K`` is not larger keeps; at most half :data:`CANDIDATE_CELLS` over all orders).
ONE pass over the rows counts the selected ones and lists, per order, every selected row
at or beyond its threshold: its row number and its sort value (``Domain.encode`` of the
gathered values — the reference encoding) — so a fit reads X once. Where numba is
installed and X holds at least :data:`JIT_VALUES` values, the pass is compiled
(:mod:`dprect.engines.matrix_jit`: one sweep of each row); elsewhere it runs in numpy
blocks (:data:`BLOCK_ROWS` rows of a matrix, or one Arrow batch: each block
cache-resident — the finite check, two comparisons against the 2d thresholds at once — a
contiguous block as rows of :data:`WIDE_VALUES` values, the thresholds tiled — and one
``flatnonzero``). Both list the same entries in the same order. That list
is an upper set of the order by value; every encoding is non-decreasing, so it holds every
selected row whose sort value is strictly beyond the threshold's and some of the rows tied
with it: whenever it holds at least ``stop`` rows its first ``stop`` ranks are the whole
order's, as multisets (docs/algorithm.md §7, the one-pass strategy's argument). A pass
that would list more than :data:`CANDIDATE_CELLS` rows (ties at a threshold, a misleading
sample) keeps no list.

**Cuts are recorded, not applied.** A cut costs nothing; a window counts the listed rows
that survive every recorded cut (each cut tests the row's own sort value on the cut's
axis, encoded for the listed rows only). If at least ``stop`` survive, their first
``stop`` ranks are the remaining rows' — a remaining row ranked before a survivor is itself
listed (the list is an upper set) and survived the same row-local cuts.

**Otherwise a window streams.** A list that runs short, or no list: one pass over the
blocks applies the recorded cuts to each block's selected rows, encodes the axis and keeps
the best ``stop`` values so far — memory of one block and 2·stop values, never of n.
Only ties to refine (:meth:`MatrixEngine.set_ties`: every row's occurrence rank) encode
every selected row into columns, for a :class:`NumpyEngine`. Either way the answers are
the same multisets, so the output never depends on the path; thresholds, ``K`` and the
block size change the speed only.

**The quantile box on shipped batches.** Where no window is expected (``collect``'s
count when the label count predicts the box, :meth:`MatrixEngine.remaining` with
``lists=False``), the count is the selected flags' — made column by column on the batches'
zero-copy views, kept (one byte a row) — and no list is made; the box's histogram queries
then read each column's views (no row block stacked), a column's counts summed part by part
by one thread, the columns shared by :data:`HISTOGRAM_THREADS` threads (the compiled
counts hold no GIL). The same counts as the blocked pass; a matrix X keeps the blocked pass.

**Memory.** Besides the rows themselves: the lists, at most :data:`CANDIDATE_CELLS`
entries of at most :data:`LIST_ENTRY_BYTES` while built and held (:data:`LIST_BYTES`),
and one block's transients (the compiled pass: one buffer of hit rows) — unless ties are
refined (8·d bytes a row then).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from dprect.core.domains import Domain, Side
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.ties import TieBreaker

# JIT_VALUES: values (rows × features) from which the list pass (:mod:`matrix_jit`) and the
# histogram query (:mod:`histogram_jit`) run compiled, where numba is installed: below,
# the numpy pass costs less than loading numba (~0.4 s once)
from dprect.engines.numpy_engine import (
    JIT_VALUES,
    NumpyEngine,
    _ranks,
    axes_thresholds,
    counter,
)

#: rows per block of a pass: 8 features × 16,384 rows of float64 is 1 MiB, cache-resident
BLOCK_ROWS = 1 << 14
#: values per row of the list pass's comparisons: a contiguous block of d features is
#: compared as rows of about this many values (the thresholds tiled), not as rows of d —
#: numpy's inner loop then runs over 256 values instead of 8 (about 2.5× faster at d = 8)
WIDE_VALUES = 256
#: rows of X in the strided sample that sets the thresholds
SAMPLE_ROWS = 1 << 14
#: listed rows per order: at least this many, and about LIST_FACTOR × the first stop
MIN_LIST = 1 << 12
LIST_FACTOR = 2
#: listed rows per order when the pass runs before any window (the count ``auto`` asks for
#: first): lists kept for a first window whose own target is at most this
PRELIST = 1 << 13
#: all orders' listed rows together at most: a pass that would list more keeps none
CANDIDATE_CELLS = 9 << 18
#: driver bytes per listed row at most, while the lists are built and held: its row number
#: (int32), axis (uint16) and raw value (≤ 8) gathered per block and once concatenated,
#: its place in the axis sort (int64), then the list's row number and sort value (below
#: 2^31 rows and 2^16 features; wider row numbers or axes take a few bytes more). The
#: compiled pass holds less: its row number and raw value (≤ 12), a column's joined once
#: (≤ 12), then the list's row number, sort value and the encoding's transient (≤ 20)
LIST_ENTRY_BYTES = 2 * (4 + 2 + 8) + 8 + 4 + 8
#: the lists' driver bytes at most
LIST_BYTES = CANDIDATE_CELLS * LIST_ENTRY_BYTES
#: threads counting a histogram query's columns on shipped batches (the machine's 2
#: cores; the compiled counts run without the GIL, and so do numpy's ufuncs of the
#: encoding on a batch's column): each column is counted by one thread, in part order
HISTOGRAM_THREADS = 2
#: dtypes read as they are (their values are exactly float64 values, compared exactly)
NATIVE = (np.dtype(np.float32), np.dtype(np.float64))


#: a pass's entries: per column, pieces of (rows, raw values), rows ascending
_Entries = list[list[tuple[np.ndarray, np.ndarray]]]


class _List:
    """One order's listed rows: row numbers into X and their sort values on the axis."""

    def __init__(self, rows: np.ndarray, values: np.ndarray) -> None:
        self.rows = rows
        self.values = values
        self.cut_values: dict[int, np.ndarray] = {}  # axis -> the rows' sort values


class _Parts:
    """The rows as consecutive parts: each part a 2-D block on demand (rows × features,
    float32/float64) and its columns. :meth:`of_matrix`: row blocks of a matrix (views);
    :meth:`of_batches`: Arrow record batches (a block is a transient copy of one batch,
    a column a zero-copy view)."""

    def __init__(self, sizes: list[int], block: Callable[[int], np.ndarray],
                 column: Callable[[int, int], np.ndarray], dims: int,
                 matrix: np.ndarray | None = None) -> None:
        self.offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self.block = block
        self.column = column
        self.dims = dims
        self.matrix = matrix  # every part at once: a float32/float64 matrix, else None

    @property
    def rows(self) -> int:
        return int(self.offsets[-1])

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def of_matrix(cls, X: np.ndarray) -> _Parts:
        n = len(X)
        native = X.dtype in NATIVE

        def block(i: int) -> np.ndarray:
            part = X[i * BLOCK_ROWS:(i + 1) * BLOCK_ROWS]
            return part if native else part.astype(np.float64)

        def column(i: int, j: int) -> np.ndarray:
            part = X[i * BLOCK_ROWS:(i + 1) * BLOCK_ROWS, j]
            return part if native else part.astype(np.float64)

        sizes = [min(BLOCK_ROWS, n - first) for first in range(0, n, BLOCK_ROWS)]
        return cls(sizes, block, column, X.shape[1], X if native else None)

    @classmethod
    def of_batches(cls, batches: Sequence[pa.RecordBatch], dims: int) -> _Parts:
        """The first ``dims`` columns of each batch, float32 or float64 (a null reads as
        NaN: only in a row the caller does not select)."""

        def column(i: int, j: int) -> np.ndarray:
            values = batches[i].column(j).to_numpy(zero_copy_only=False)
            return values if values.dtype in NATIVE else values.astype(np.float64)

        def block(i: int) -> np.ndarray:
            return np.column_stack([column(i, j) for j in range(dims)])

        return cls([b.num_rows for b in batches], block, column, dims)

    def spans(self) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, 2-D float32/float64 rows): the matrix at once, else part by part."""
        if self.matrix is not None:
            yield 0, self.matrix
            return
        for i in range(len(self)):
            yield int(self.offsets[i]), self.block(i)

    def gather(self, rows: np.ndarray, axis: int) -> np.ndarray:
        """Column ``axis`` at the (global, ascending or not) ``rows``."""
        part = np.searchsorted(self.offsets, rows, side="right") - 1
        out: np.ndarray | None = None
        for i in np.unique(part):
            at = np.flatnonzero(part == i)
            values = self.column(int(i), axis)[rows[at] - self.offsets[i]]
            if out is None:
                out = np.empty(len(rows), dtype=values.dtype)
            elif out.dtype != values.dtype:
                out = out.astype(np.float64)
            out[at] = values
        return out if out is not None else np.zeros(0)


class MatrixEngine:
    """The selected rows of ``X`` as an engine (module docstring)."""

    def __init__(self, X: np.ndarray | None, positive: np.ndarray | None,
                 domains: list[Domain], *, parts: _Parts | None = None) -> None:
        """``X``: 2-D numeric array, held (not copied: the caller must not change it during
        the fit). ``positive``: a boolean per row (None: every row). ``domains``: one per
        column. (``parts``: the rows in other containers, :meth:`from_batches`.)"""
        if parts is None:
            if X is None or X.ndim != 2 or X.shape[1] == 0:
                raise InputDataError("the engine needs a 2-D array with feature columns")
            parts = _Parts.of_matrix(X)
        if len(domains) != parts.dims:
            raise InputDataError("one domain per feature column")
        if positive is not None and positive.shape != (parts.rows,):
            raise InputDataError("one positive flag per row")
        self._parts = parts
        self._positive = positive
        self._domains = domains
        self._count: int | None = None  # selected rows, once a pass has counted them
        self._lists: dict[tuple[int, Side], _List] | None = None
        self._cuts: list[tuple[int, Side, int | float]] = []
        self._listed_for = 0  # the lists' target (rows per order)
        self._windowed = False  # a window has been asked for
        self._inner: NumpyEngine | None = None  # only to refine ties
        #: per part, its rows' selected flags (None: every row), once computed column by
        #: column (:meth:`_selected`: shipped batches only)
        self._chosen: list[np.ndarray | None] | None = None

    @classmethod
    def from_batches(cls, batches: Sequence[pa.RecordBatch], used: np.ndarray | None,
                     domains: list[Domain]) -> MatrixEngine:
        """The rows of Arrow ``batches`` (their first ``len(domains)`` columns, float32 or
        float64; held, not copied) where ``used`` holds (None: every row), finite ones
        only — e.g. the ``collect`` strategy's shipped rows."""
        return cls(None, used, domains, parts=_Parts.of_batches(batches, len(domains)))

    @property
    def dims(self) -> int:
        return self._parts.dims

    # -- the blocks ---------------------------------------------------------------------

    def _blocks(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(first row, block as float32/float64, selected flags of its rows)."""
        parts = self._parts
        for i in range(len(parts)):
            first, last = int(parts.offsets[i]), int(parts.offsets[i + 1])
            block = parts.block(i)
            chosen = _selection([np.isfinite(block)], self._positive_of(first, last))
            yield first, block, np.ones(len(block), dtype=bool) if chosen is None else chosen

    def _positive_of(self, first: int, last: int) -> np.ndarray | None:
        """The positive flags of rows [first, last) (a view; None: every row)."""
        return None if self._positive is None else self._positive[first:last]

    def _selected(self) -> list[np.ndarray | None]:
        """Per part, its rows' selected flags — ``positive`` and finite on every feature —
        or None where every row is selected; made column by column (a batch's column is
        a zero-copy view: no block is stacked) once, then kept (one byte a row)."""
        if self._chosen is None:
            parts, chosen = self._parts, []
            for i in range(len(parts)):
                first, last = int(parts.offsets[i]), int(parts.offsets[i + 1])
                keep = _selection((np.isfinite(parts.column(i, j)) for j in range(self.dims)),
                                  self._positive_of(first, last))
                chosen.append(None if keep is None or keep.all() else keep)
            self._chosen = chosen
        return self._chosen

    def _selected_sample(self, step: int) -> np.ndarray:
        """The selected rows among every ``step``-th row (raw values, float32/float64)."""
        parts, d = self._parts, self.dims
        if parts.matrix is not None:  # global rows 0, step, 2·step, ... at once
            piece = parts.matrix[::step]
            keep = _selection([np.isfinite(piece)],
                              None if self._positive is None else self._positive[::step])
            return piece if keep is None else piece[keep]
        pieces = []
        for i in range(len(parts)):
            first, last = int(parts.offsets[i]), int(parts.offsets[i + 1])
            start = -first % step  # global rows 0, step, 2·step, ...
            if start >= last - first:
                continue
            piece = np.column_stack([parts.column(i, j)[start::step] for j in range(d)])
            keep = _selection([np.isfinite(piece)], None if self._positive is None
                              else self._positive[first + start:last:step])
            pieces.append(piece if keep is None else piece[keep])
        return np.concatenate(pieces) if pieces else np.zeros((0, d))

    def _thresholds(self, target: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Per axis, the raw hi and lo thresholds for about ``target`` selected rows at or
        beyond each (the k-th sample value with a safety margin); None when the sample
        cannot give them."""
        step = max(1, self._parts.rows // SAMPLE_ROWS)
        sample = self._selected_sample(step)
        expected = target / step
        k = math.ceil(expected + 4 * math.sqrt(expected) + 16)
        if k >= len(sample):
            return None
        hi, lo = len(sample) - k, k - 1
        ordered = np.partition(sample, sorted({lo, hi}), axis=0)
        return ordered[hi], ordered[lo]

    def _target(self, stop: int | None) -> int:
        """Rows to list per order: about :data:`LIST_FACTOR` × the first window's ``stop``
        (None: before any window, :data:`PRELIST`), at least :data:`MIN_LIST`; at most
        half :data:`CANDIDATE_CELLS` over all orders (the sample's safety margin lists
        more than the target)."""
        want = PRELIST if stop is None else max(MIN_LIST, LIST_FACTOR * stop)
        return min(want, CANDIDATE_CELLS // (2 * 2 * self.dims))

    def _build_lists(self, target: int, *, count: bool) -> None:
        """The one pass (module docstring): the selected rows counted and, when the sample
        gives thresholds for ``target`` rows per order and at most
        :data:`CANDIDATE_CELLS` entries lie beyond them, every order's list kept (else
        none). ``count``: make the pass even without thresholds, for the count alone."""
        found = self._thresholds(target)
        if found is None:
            if count:
                self._count = self._counted()
            return
        hi_t, lo_t = found
        passed = self._jit_pass(hi_t, lo_t) or self._numpy_pass(hi_t, lo_t)
        self._count, entries = passed
        if entries is None:
            return
        lists: dict[tuple[int, Side], _List] = {}
        for j in range(self.dims):
            pieces, entries[j] = entries[j], []  # a column's pieces freed as it is listed
            row, raw = _joined(pieces)
            del pieces
            hi = raw >= hi_t[j]
            lo = raw <= lo_t[j]
            domain = self._domains[j]
            lists[(j, "hi")] = _List(row[hi], domain.encode(raw[hi]))
            lists[(j, "lo")] = _List(row[lo], domain.encode(raw[lo]))
        self._lists = lists
        self._listed_for = target

    def _jit_pass(self, hi_t: np.ndarray, lo_t: np.ndarray
                  ) -> tuple[int, _Entries | None] | None:
        """The pass compiled (:func:`dprect.engines.matrix_jit.list_pass` on each span of
        the rows): (selected rows, entries or None past the cap); None when the rows are
        too few to pay for numba, or numba is not installed."""
        if self._parts.rows * self.dims < JIT_VALUES:
            return None
        from dprect.engines import matrix_jit

        if not matrix_jit.available():
            return None
        count = entries = 0
        found: _Entries | None = [[] for _ in range(self.dims)]
        none = np.full(self.dims, np.inf)  # past the cap: the count only
        for first, rows in self._parts.spans():
            pos = self._positive_of(first, first + len(rows))
            out = (matrix_jit.list_pass(rows, pos, hi_t, lo_t, CANDIDATE_CELLS - entries,
                                        first) if found is not None
                   else matrix_jit.list_pass(rows, pos, none, -none, 0))
            assert out is not None
            count += out[0]
            if found is None:
                continue
            if out[1] is None:
                found = None
                continue
            for j, pieces in enumerate(out[1]):
                entries += sum(len(r) for r, _ in pieces)
                found[j] += pieces
        return count, found

    def _counted(self) -> int:
        """The selected rows counted in one pass (compiled where it pays: no value lies
        beyond infinite thresholds in a selected row)."""
        none = np.full(self.dims, np.inf)
        passed = self._jit_pass(none, -none)
        if passed is not None:
            return passed[0]
        return sum(int(np.count_nonzero(c)) for _, _, c in self._blocks())

    def _numpy_pass(self, hi_t: np.ndarray, lo_t: np.ndarray
                    ) -> tuple[int, _Entries | None]:
        """The pass in numpy blocks: (selected rows, entries or None past the cap) — a
        contiguous block compared as rows of :data:`WIDE_VALUES` values, the thresholds
        tiled (:func:`_beyond`)."""
        d = self.dims
        reps = max(1, WIDE_VALUES // d)
        hi_w, lo_w = np.tile(hi_t, reps), np.tile(lo_t, reps)
        wide = self._parts.rows >= 1 << 31
        rows: list[np.ndarray] | None = []
        cols: list[np.ndarray] = []
        raws: list[np.ndarray] = []
        count = entries = 0
        for first, block, chosen in self._blocks():
            count += int(np.count_nonzero(chosen))
            if rows is None:  # past the cap: the count only
                continue
            flat = _beyond(block, hi_w, lo_w)
            r, c = np.divmod(flat, d)
            keep = chosen[r]
            r, c = r[keep], c[keep]
            entries += len(r)
            if entries > CANDIDATE_CELLS:  # ties at a threshold, a misleading sample
                rows = None
                continue
            rows.append(r + first if wide else (r + first).astype(np.int32))
            cols.append(c.astype(np.uint16) if d <= 1 << 16 else c)
            raws.append(block[r, c])
        if rows is None:
            return count, None
        all_rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        all_cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        all_raws = np.concatenate(raws) if raws else np.zeros(0)
        del rows, cols, raws
        order = np.argsort(all_cols, kind="stable")  # a radix sort on 16-bit columns
        offsets = np.searchsorted(all_cols[order], np.arange(d + 1))
        all_rows, all_raws = all_rows[order], all_raws[order]
        return count, [[(all_rows[offsets[j]:offsets[j + 1]],
                         all_raws[offsets[j]:offsets[j + 1]])] for j in range(d)]

    # -- without lists -------------------------------------------------------------------

    def _surviving(self, block: np.ndarray, chosen: np.ndarray) -> np.ndarray:
        """The block's selected rows that survive every recorded cut (a copy)."""
        rows = block[chosen]
        for axis, side, threshold in self._cuts:
            values = self._domains[axis].encode(rows[:, axis])
            rows = rows[values < threshold if side == "hi" else values > threshold]
        return rows

    def _stream(self, axis: int, side: Side, first: int, stop: int) -> np.ndarray:
        """A window by one pass over the parts holding at most the ``stop`` best sort
        values so far (memory of one block and 2·stop values, whatever n): the remaining
        rows of each block (every recorded cut applied), encoded on ``axis``, merged into
        the best ``stop`` from ``side``; then ranks [first, min(stop, remaining))."""
        best: np.ndarray | None = None
        count = 0
        domain = self._domains[axis]
        for _, block, chosen in self._blocks():
            values = domain.encode(self._surviving(block, chosen)[:, axis])
            count += len(values)
            best = values if best is None else np.concatenate([best, values])
            if len(best) > 2 * stop:
                best = _best(best, side, stop)
        last = min(stop, count)
        if best is None or last <= first:
            return domain.encode(np.zeros(0))
        return _ranks(_best(best, side, last), side, first, last, inplace=True)

    def _columns(self) -> list[np.ndarray]:
        """The selected rows encoded into one array per axis (one blocked pass)."""
        parts: list[list[np.ndarray]] = [[] for _ in range(self.dims)]
        for _, block, chosen in self._blocks():
            rows = block[chosen]
            for j, domain in enumerate(self._domains):
                parts[j].append(domain.encode(rows[:, j]))
        return [np.concatenate(p) if p else self._domains[j].encode(np.zeros(0))
                for j, p in enumerate(parts)]

    # -- the engine ----------------------------------------------------------------------

    def remaining(self, *, lists: bool = True) -> int:
        """The number of remaining rows (the selected rows before the first cut).
        ``lists``: the first count's pass also lists for a first window (module notes);
        False where no window is expected (the quantile box asks histograms only): on
        shipped batches the count is then the selected flags' (:meth:`_selected`, column
        by column, kept for the histogram queries), elsewhere a pass that counts only.
        Speed only: the count is the same."""
        if self._inner is not None:
            return self._inner.remaining()
        if self._cuts:
            return sum(len(self._surviving(b, c)) for _, b, c in self._blocks())
        if self._count is None and not lists:
            sizes = np.diff(self._parts.offsets)
            self._count = (self._counted() if self._parts.matrix is not None else
                           sum(int(sizes[i]) if c is None else int(np.count_nonzero(c))
                               for i, c in enumerate(self._selected())))
        if self._count is None:  # no pass yet: the pass counts, and lists for a window
            self._build_lists(self._target(None), count=True)
        assert self._count is not None
        return self._count

    def set_ties(self, ties: TieBreaker, *, in_place: bool = True) -> None:
        """Refine ties (before any window or cut): inactive ties change nothing; active
        ones need every row with its occurrence rank, so the selected rows are encoded
        into columns this engine owns and a :class:`NumpyEngine` refines and answers."""
        if self._inner is not None:
            self._inner.set_ties(ties, in_place=True)
            return
        if self._cuts or self._windowed:
            raise ParameterError("set_ties must come before the first window or cut")
        if len(ties.bits) != self.dims:
            raise ParameterError(f"tie bits for {len(ties.bits)} axes, engine has {self.dims}")
        if ties.active:
            inner = NumpyEngine(self._columns())
            inner.set_ties(ties, in_place=True)
            self._inner = inner
            self._lists = None  # the count's pass may have listed: no longer asked

    def cut(self, axis: int, side: Side, threshold: int | float) -> None:
        if self._inner is not None:
            self._inner.cut(axis, side, threshold)
        else:
            self._cuts.append((axis, side, threshold))

    def histograms(self, thresholds: Sequence[np.ndarray]) -> list[np.ndarray]:
        """:meth:`dprect.core.engine.Engine.histograms` of the remaining rows (the
        quantile box's query) in ONE pass over the blocks: each block's surviving rows,
        every axis encoded and counted (compiled from :data:`JIT_VALUES` values,
        :mod:`~dprect.engines.histogram_jit`), summed — the same counts as
        :class:`NumpyEngine`'s on the same rows."""
        cuts = axes_thresholds(thresholds, self.dims)
        if self._inner is not None:
            return self._inner.histograms(cuts)
        compiled = self._parts.rows * self.dims >= JIT_VALUES
        if self._parts.matrix is None and not self._cuts:
            return self._column_histograms(cuts, compiled=compiled)
        counts = [counter(t, dom.sort_dtype, compiled=compiled)
                  for dom, t in zip(self._domains, cuts, strict=True)]
        totals = [np.zeros(len(t) + 1, dtype=np.int64) for t in cuts]
        for _, block, chosen in self._blocks():
            # nothing cut and every row selected (the box on a finite matrix): the block
            # as it is, no copy
            rows = block if not self._cuts and chosen.all() else self._surviving(block,
                                                                                 chosen)
            for j, dom in enumerate(self._domains):
                totals[j] += counts[j](dom.encode(rows[:, j]))
        return totals

    def _column_histograms(self, cuts: list[np.ndarray], *, compiled: bool
                           ) -> list[np.ndarray]:
        """The histogram query on parts held as columns (shipped batches), nothing cut:
        each column counted part by part on its zero-copy views — the selected rows only
        (:meth:`_selected`), encoded and counted — with no block stacked; the columns
        (their counters' guides built too, once per distinct thresholds) shared by
        :data:`HISTOGRAM_THREADS` threads where the query is ``compiled``. Each column's
        counts are summed by one thread in part order: the same integers as the blocked
        pass."""
        parts, chosen = self._parts, self._selected()
        # one counter per distinct (dtype, thresholds): the box's first query asks every
        # axis of a domain the same public coarse thresholds (a thread may build one
        # twice: the same counter)
        made: dict[tuple[str, bytes], Callable[[np.ndarray], np.ndarray]] = {}

        def column(j: int) -> np.ndarray:
            domain = self._domains[j]
            key = (domain.sort_dtype.str, np.asarray(cuts[j], dtype=domain.sort_dtype).tobytes())
            count = made.get(key)
            if count is None:
                count = made[key] = counter(cuts[j], domain.sort_dtype, compiled=compiled)
            total: np.ndarray | None = None
            for i, keep in enumerate(chosen):
                values = parts.column(i, j)
                got = count(domain.encode(values if keep is None else values[keep]))
                total = got if total is None else total + got
            return total if total is not None else count(domain.encode(np.zeros(0)))

        if not compiled or self.dims == 1:
            return [column(j) for j in range(self.dims)]
        with ThreadPoolExecutor(max_workers=HISTOGRAM_THREADS) as pool:
            return list(pool.map(column, range(self.dims)))

    def _survivors(self, listed: _List) -> np.ndarray:
        """The listed values of rows surviving every recorded cut."""
        keep = np.ones(len(listed.rows), dtype=bool)
        for axis, side, threshold in self._cuts:
            values = listed.cut_values.get(axis)
            if values is None:
                values = self._domains[axis].encode(self._parts.gather(listed.rows, axis))
                listed.cut_values[axis] = values
            keep &= values < threshold if side == "hi" else values > threshold
        return listed.values[keep]

    def window(self, axis: int, side: Side, stop: int, size: int) -> np.ndarray:
        if self._inner is not None:
            return self._inner.window(axis, side, stop, size)
        first = max(0, stop - size)
        if not self._windowed:  # lists for the first window (or those of the count's pass)
            self._windowed = True
            target = self._target(stop)
            if target >= stop and (self._lists is None or self._listed_for < target):
                self._build_lists(target, count=False)
        listed = None if self._lists is None else self._lists[(axis, side)]
        survivors = None if listed is None else self._survivors(listed)
        if survivors is None or len(survivors) < stop:
            return self._stream(axis, side, first, stop)
        if stop <= first:
            return survivors[:0].copy()
        return _ranks(survivors, side, first, stop, inplace=True)


def _selection(finite: Iterable[np.ndarray], positive: np.ndarray | None
               ) -> np.ndarray | None:
    """A part's selected flags — ``positive`` (None: every row) and finite on every
    feature — from ``finite``, its rows' finite flags: per feature (1-D, a column at a
    time) or for a block (2-D, rows × features); None when every flag holds (no positive
    and every value finite). A new array, or ``positive`` itself where every value is
    finite (callers never write to either)."""
    keep = positive
    for flags in finite:
        if not flags.all():
            rows = flags if flags.ndim == 1 else np.asarray(flags.all(axis=1))
            keep = rows if keep is None else keep & rows
    return keep


def _joined(pieces: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """One column's entries from its pieces: (rows, raw values)."""
    if len(pieces) == 1:
        return pieces[0]
    if not pieces:
        return np.zeros(0, np.int32), np.zeros(0)
    return (np.concatenate([r for r, _ in pieces]), np.concatenate([v for _, v in pieces]))


def _beyond(block: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Row-major flat indices of the ``block``'s values at or beyond their column's
    threshold (≥ ``hi`` or ≤ ``lo``; NaN is neither). ``hi``/``lo``: the d thresholds
    tiled k times: a C-contiguous block whose size k·d divides is compared as rows of
    k·d values (the same values, the same flat indices: a reshape of a C-contiguous
    block keeps its row-major order), any other with the first d."""
    d = block.shape[1]
    if len(hi) > d and block.flags.c_contiguous and block.size % len(hi) == 0:
        block = block.reshape(-1, len(hi))
    else:
        hi, lo = hi[:d], lo[:d]
    hit = np.greater_equal(block, hi)
    hit |= np.less_equal(block, lo)
    return np.flatnonzero(hit)


def _best(values: np.ndarray, side: Side, count: int) -> np.ndarray:
    """The ``count`` first values from ``side`` (any order; all when fewer)."""
    if count >= len(values):
        return values
    if count <= 0:
        return values[:0]
    if side == "hi":
        return np.partition(values, len(values) - count)[len(values) - count:]
    return np.partition(values, count - 1)[:count]


__all__ = ["LIST_BYTES", "MatrixEngine"]
