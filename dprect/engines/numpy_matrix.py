"""The in-memory engine straight on the caller's matrix: no copy of X, one blocked pass.

:class:`MatrixEngine` answers the engine's questions (docs/algorithm.md §7) for the rows of
a 2-D array ``X`` (rows × features, float32 or float64 read as they are, any other numeric
dtype read as float64 block by block) that are *selected*: ``positive`` and, on every
feature, finite (the ``drop`` policy of :func:`dprect.core.reading.select_rows`, row-local).
It is :class:`~dprect.engines.numpy_engine.NumpyEngine` on ``select_rows(X, positive)``
encoded by the domains — the same answers — without the float64 copy of X, the copy of
the selected rows and the encoded columns, and without a full pass per window.

**One pass for every order.** At the first window (nothing cut yet) a fixed strided sample
of X's rows (no randomness is drawn) gives, per order (axis, side), a raw-value threshold
t with a safety margin such that about ``K`` selected rows lie at or beyond it (``K`` from
the first window's ``stop``, capped by :data:`CANDIDATE_CELLS` over all orders). ONE pass
over X in blocks of :data:`BLOCK_ROWS` rows (each block cache-resident: the finite check,
two comparisons against the 2d thresholds at once and one ``flatnonzero``) lists, per
order, every selected row at or beyond its threshold: its row number and its sort value
(``Domain.encode`` of the gathered values — the reference encoding). That list is an upper
set of the order by value; every encoding is non-decreasing, so it holds every selected
row whose sort value is strictly beyond the threshold's and some of the rows tied with it:
its first ``stop`` ranks are the whole order's as multisets whenever it holds at least
``stop`` rows (docs/algorithm.md §7, the one-pass strategy's argument).

**Cuts are recorded, not applied.** A cut costs nothing; a window counts the listed rows
that survive every recorded cut (each cut tests the row's own sort value on the cut's
axis, encoded from X for the listed rows only). If at least ``stop`` survive, their first
``stop`` ranks are the remaining rows' — a remaining row ranked before a survivor is itself
listed (the list is an upper set) and survived the same row-local cuts.

**Otherwise the engine materialises.** A list that runs short, a sample too small to give
a threshold, ties to refine (:meth:`set_ties`, which needs every row) or ``remaining()``
after a cut: the selected rows are encoded into columns in one more blocked pass, the
recorded cuts replayed, and a :class:`NumpyEngine` answers from then on. Either way the
answers are the same multisets, so the output never depends on the path; thresholds,
``K`` and the block size change the speed only.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from dprect.core.domains import Domain, Side
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.ties import TieBreaker
from dprect.engines.numpy_engine import NumpyEngine, _ranks

#: rows per block of a pass: 8 features × 16,384 rows of float64 is 1 MiB, cache-resident
BLOCK_ROWS = 1 << 14
#: rows of X in the strided sample that sets the thresholds
SAMPLE_ROWS = 1 << 14
#: listed rows per order: at least this many, and about LIST_FACTOR × the first stop
MIN_LIST = 1 << 12
LIST_FACTOR = 8
#: all orders' listed rows together at most (16 bytes each: row number and sort value)
CANDIDATE_CELLS = 1 << 23
#: dtypes read as they are (their values are exactly float64 values, compared exactly)
NATIVE = (np.dtype(np.float32), np.dtype(np.float64))


class _List:
    """One order's listed rows: row numbers into X and their sort values on the axis."""

    def __init__(self, rows: np.ndarray, values: np.ndarray) -> None:
        self.rows = rows
        self.values = values
        self.cut_values: dict[int, np.ndarray] = {}  # axis -> the rows' sort values


class MatrixEngine:
    """The selected rows of ``X`` as an engine (module docstring)."""

    def __init__(self, X: np.ndarray, positive: np.ndarray | None, domains: list[Domain]
                 ) -> None:
        """``X``: 2-D numeric array, held (not copied: the caller must not change it during
        the fit). ``positive``: a boolean per row (None: every row). ``domains``: one per
        column."""
        if X.ndim != 2 or X.shape[1] == 0:
            raise InputDataError("the engine needs a 2-D array with feature columns")
        if len(domains) != X.shape[1]:
            raise InputDataError("one domain per feature column")
        if positive is not None and positive.shape != (len(X),):
            raise InputDataError("one positive flag per row")
        self._X = X
        self._positive = positive
        self._domains = domains
        self._count: int | None = None  # selected rows, once a pass has counted them
        self._lists: dict[tuple[int, Side], _List] | None = None
        self._cuts: list[tuple[int, Side, int | float]] = []
        self._inner: NumpyEngine | None = None  # after materialising
        self._ties: TieBreaker | None = None

    @property
    def dims(self) -> int:
        return self._X.shape[1]

    @property
    def materialised(self) -> bool:
        """Whether the rows were encoded into columns (a :class:`NumpyEngine` answers)."""
        return self._inner is not None

    # -- the blocks ---------------------------------------------------------------------

    def _blocks(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(first row, block of X as float32/float64, selected flags of its rows)."""
        X, n = self._X, len(self._X)
        native = X.dtype in NATIVE
        for first in range(0, n, BLOCK_ROWS):
            block = X[first:first + BLOCK_ROWS]
            if not native:
                block = block.astype(np.float64)
            finite = np.isfinite(block)
            pos = None if self._positive is None else self._positive[first:first + BLOCK_ROWS]
            if finite.all():
                chosen = np.ones(len(block), dtype=bool) if pos is None else pos
            else:
                chosen = finite.all(axis=1)
                if pos is not None:
                    chosen &= pos
            yield first, block, chosen

    def _selected_sample(self) -> np.ndarray:
        """The strided sample's selected rows (raw values, float32/float64)."""
        X = self._X
        step = max(1, len(X) // SAMPLE_ROWS)
        sample = X[::step]
        if X.dtype not in NATIVE:
            sample = sample.astype(np.float64)
        keep = np.isfinite(sample).all(axis=1)
        if self._positive is not None:
            keep &= self._positive[::step]
        return sample[keep]

    def _thresholds(self, target: int) -> tuple[np.ndarray, np.ndarray, float] | None:
        """Per axis, the raw hi and lo thresholds for about ``target`` selected rows at or
        beyond each, and the sampling rate; None when the sample cannot give them."""
        n = len(self._X)
        step = max(1, n // SAMPLE_ROWS)
        sample = self._selected_sample()
        rate = 1.0 / step
        expected = target * rate
        k = math.ceil(expected + 4 * math.sqrt(expected) + 16)
        if k >= len(sample):
            return None
        ordered = np.sort(sample, axis=0)
        return ordered[len(sample) - k], ordered[k - 1], rate

    def _build_lists(self, stop: int) -> bool:
        """The one pass (module docstring); False when no thresholds can be set."""
        orders = 2 * self.dims
        target = max(MIN_LIST, LIST_FACTOR * stop)
        if target * orders > CANDIDATE_CELLS:
            target = CANDIDATE_CELLS // orders
            if target < 2 * stop:
                return False
        found = self._thresholds(target)
        if found is None:
            return False
        hi_t, lo_t, _ = found
        d = self.dims
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        raws: list[np.ndarray] = []
        count = 0
        for first, block, chosen in self._blocks():
            count += int(np.count_nonzero(chosen))
            hit = np.greater_equal(block, hi_t)
            hit |= np.less_equal(block, lo_t)
            flat = np.flatnonzero(hit)
            r, c = np.divmod(flat, d)
            keep = chosen[r]
            r, c = r[keep], c[keep]
            rows.append(r + first)
            cols.append(c)
            raws.append(block[r, c])
        self._count = count
        all_rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        all_cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        all_raws = np.concatenate(raws) if raws else np.zeros(0)
        order = np.argsort(all_cols.astype(np.uint16) if d < 1 << 16 else all_cols,
                           kind="stable")  # a radix sort on 16-bit columns
        bounds = np.searchsorted(all_cols[order], np.arange(d + 1))
        lists: dict[tuple[int, Side], _List] = {}
        for j in range(d):
            idx = order[bounds[j]:bounds[j + 1]]
            raw, row = all_raws[idx], all_rows[idx]
            hi = raw >= hi_t[j]
            lo = raw <= lo_t[j]
            domain = self._domains[j]
            lists[(j, "hi")] = _List(row[hi], domain.encode(raw[hi]))
            lists[(j, "lo")] = _List(row[lo], domain.encode(raw[lo]))
        self._lists = lists
        return True

    # -- materialising -------------------------------------------------------------------

    def _columns(self) -> list[np.ndarray]:
        """The selected rows encoded into one array per axis (one blocked pass)."""
        parts: list[list[np.ndarray]] = [[] for _ in range(self.dims)]
        for _, block, chosen in self._blocks():
            rows = block[chosen]
            for j, domain in enumerate(self._domains):
                parts[j].append(domain.encode(rows[:, j]))
        return [np.concatenate(p) if p else self._domains[j].encode(np.zeros(0))
                for j, p in enumerate(parts)]

    def _materialise(self) -> NumpyEngine:
        if self._inner is None:
            inner = NumpyEngine(self._columns())
            self._count = inner.remaining()
            if self._ties is not None:
                inner.set_ties(self._ties, in_place=True)
            for axis, side, threshold in self._cuts:
                inner.cut(axis, side, threshold)
            self._inner = inner
            self._lists = None
        return self._inner

    # -- the engine ----------------------------------------------------------------------

    def remaining(self) -> int:
        """The number of remaining rows (the selected rows before the first cut)."""
        if self._inner is not None:
            return self._inner.remaining()
        if self._cuts:
            return self._materialise().remaining()
        if self._count is None:
            self._count = sum(int(np.count_nonzero(c)) for _, _, c in self._blocks())
        return self._count

    def set_ties(self, ties: TieBreaker, *, in_place: bool = True) -> None:
        """Refine ties (before any window or cut): inactive ties change nothing; active
        ones need every row, so the rows are materialised (columns this engine owns)."""
        if self._inner is not None:
            self._inner.set_ties(ties, in_place=True)
            return
        if self._cuts or self._lists is not None:
            raise ParameterError("set_ties must come before the first window or cut")
        if len(ties.bits) != self.dims:
            raise ParameterError(f"tie bits for {len(ties.bits)} axes, engine has {self.dims}")
        self._ties = ties
        if ties.active:
            self._materialise()

    def cut(self, axis: int, side: Side, threshold: int | float) -> None:
        if self._inner is not None:
            self._inner.cut(axis, side, threshold)
        else:
            self._cuts.append((axis, side, threshold))

    def _survivors(self, listed: _List) -> np.ndarray:
        """The listed values of rows surviving every recorded cut."""
        keep = np.ones(len(listed.rows), dtype=bool)
        for axis, side, threshold in self._cuts:
            values = listed.cut_values.get(axis)
            if values is None:
                raw = self._X[listed.rows, axis]
                if self._X.dtype not in NATIVE:
                    raw = raw.astype(np.float64)
                values = self._domains[axis].encode(raw)
                listed.cut_values[axis] = values
            keep &= values < threshold if side == "hi" else values > threshold
        return listed.values[keep]

    def window(self, axis: int, side: Side, stop: int, size: int) -> np.ndarray:
        if self._inner is None and self._lists is None and not self._build_lists(stop):
            self._materialise()
        if self._inner is not None:
            return self._inner.window(axis, side, stop, size)
        assert self._lists is not None
        survivors = self._survivors(self._lists[(axis, side)])
        if len(survivors) < stop:
            return self._materialise().window(axis, side, stop, size)
        first = max(0, stop - size)
        if stop <= first:
            return survivors[:0].copy()
        return _ranks(survivors, side, first, stop, inplace=True)


__all__ = ["MatrixEngine"]
