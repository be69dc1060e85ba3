"""The in-memory engine: positives as numpy columns, the remaining set as a boolean mask.

A round costs O(n) and touches one column. ``window`` answers a small rank range (the
usual case: N_t ≪ remaining rows) without copying or partitioning the whole column: a
fixed strided sample of the column (no randomness is drawn) suggests a threshold t; the
remaining values at or beyond t form an *upper set* of the order from ``side``, so when it
holds at least ``stop`` values its first ``stop`` ranks are exactly those of the whole
remaining set, and only that small set is partitioned (introselect). When the guess holds
too few values (adversarial layouts) the engine falls back to partitioning every remaining
value. Either way the returned multiset is the same, so the output never depends on the
path. A cut is one vectorised comparison into a reused scratch mask.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from dprect.core.domains import Domain, Side
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.ties import TieBreaker, occurrence_ranks

_SAMPLE_SIZE = 1 << 14  # strided sample that suggests the threshold
_MIN_FAST_ROWS = 1 << 16  # below this a full partition is already cheap
#: values refined at a time by :func:`refine_in_place`: blocks of REFINE_CELLS // dims rows
#: (at least 1024), so the refinement's transients (a new int64 array per refined axis)
#: stay near 16 MiB
REFINE_CELLS = 1 << 21


def refine_in_place(columns: list[np.ndarray], ties: TieBreaker,
                    ranks: np.ndarray | None = None) -> None:
    """``columns`` (the WHOLE multiset of rows the rounds run on) replaced by
    ``ties.refine(columns)``, block by block of rows: given each row's occurrence rank
    among all the rows (``ranks``; default :func:`~dprect.core.ties.occurrence_ranks` of
    ``columns``), the refinement of a row depends on that row alone, so this gives the
    same values as refining the whole columns at once, without a second copy of every
    column. Each block's hash is computed from the block's unrefined values before any is
    replaced. The arrays are overwritten: only for columns the caller owns."""
    if not ties.active:
        return
    if ranks is None:
        ranks = occurrence_ranks(columns)
    n = len(columns[0])
    rows = max(1024, REFINE_CELLS // len(columns))
    for first in range(0, n, rows):
        block = [c[first:first + rows] for c in columns]
        refined = ties.refine(block, ranks[first:first + rows])  # new arrays: refined axes
        for j, bits in enumerate(ties.bits):
            if bits:
                columns[j][first:first + rows] = refined[j]


#: values (rows × axes) from which a histogram query runs compiled
#: (:mod:`dprect.engines.histogram_jit`, where numba is installed): below, numpy's
#: binary search costs less than loading numba (~0.4 s once a process)
JIT_VALUES = 1 << 24


def bucket_counts(values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """One axis of :meth:`dprect.core.engine.Engine.histograms`, on ``values``: int64 counts of
    v ≤ t_0, t_{i−1} < v ≤ t_i, v > t_{k−1} (thresholds non-decreasing, the values'
    dtype). Shared by every engine (the Spark engine runs it on each partition)."""
    t = np.asarray(thresholds, dtype=values.dtype)
    if len(t) > 1 and (t[1:] < t[:-1]).any():
        raise ParameterError("histogram thresholds must be non-decreasing")
    slot = np.searchsorted(t, values, side="left")  # #{t_i < v}: v's interval
    return np.bincount(slot, minlength=len(t) + 1).astype(np.int64)


def counter(thresholds: np.ndarray, dtype: np.dtype, *, compiled: bool
            ) -> Callable[[np.ndarray], np.ndarray]:
    """values (of ``dtype``) → their :func:`bucket_counts` for ``thresholds`` (cast to
    ``dtype``; refused unless non-decreasing): compiled
    (:func:`~dprect.engines.histogram_jit.compiled_counts`, the same counts) where
    ``compiled`` — the caller's choice, for a query large enough to pay for loading numba
    (~0.4 s once) — and numba is installed, else numpy."""
    t = np.asarray(thresholds, dtype=dtype)
    if len(t) > 1 and (t[1:] < t[:-1]).any():
        raise ParameterError("histogram thresholds must be non-decreasing")
    if compiled and len(t):
        from dprect.engines import histogram_jit

        if histogram_jit.available():
            guided = histogram_jit.guide(t)
            return lambda values: histogram_jit.compiled_counts(  # type: ignore[return-value]
                values, guided)
    return lambda values: bucket_counts(values, t)


def axes_thresholds(thresholds: Sequence[np.ndarray], dims: int) -> list[np.ndarray]:
    """The thresholds of :meth:`dprect.core.engine.Engine.histograms`, checked: one array
    per axis (a parameter, never data)."""
    out = list(thresholds)
    if len(out) != dims:
        raise ParameterError(f"histogram thresholds for {len(out)} axes, engine has {dims}")
    return out


def _ranks(values: np.ndarray, side: Side, first: int, last: int, *, inplace: bool
           ) -> np.ndarray:
    """Values at ranks [first, last) of ``values`` ordered from ``side`` (any order)."""
    n = len(values)
    if side == "lo":
        lo, hi = first, last - 1
    else:  # rank r from the top is ascending index n - 1 - r
        lo, hi = n - last, n - 1 - first
    kth = (lo, hi) if lo != hi else lo
    if inplace:
        values.partition(kth)
        part = values
    else:
        part = np.partition(values, kth)
    return part[lo:hi + 1].copy()


class NumpyEngine:
    """Engine over encoded positive rows held in memory."""

    def __init__(self, columns: list[np.ndarray], *, refined: TieBreaker | None = None
                 ) -> None:
        """``columns``: the positives' sort values, one array per axis. ``refined``: the
        columns are already refined by these ties (e.g. computed elsewhere, as the Spark
        engine's ``collect`` strategy does); :meth:`set_ties` with the same ties is then a
        no-op. None: unrefined columns."""
        if not columns:
            raise InputDataError("the engine needs at least one feature column")
        n = len(columns[0])
        if any(len(c) != n for c in columns):
            raise InputDataError("all feature columns must have the same length")
        self._columns = [np.ascontiguousarray(c) for c in columns]
        self._remaining = np.ones(n, dtype=bool)
        self._scratch: np.ndarray | None = None  # reused boolean buffer of length n
        self._count = n  # number of remaining rows
        self._all = True  # fast path while nothing has been cut
        if refined is not None and len(refined.bits) != len(columns):
            raise ParameterError(f"tie bits for {len(refined.bits)} axes, engine has "
                                 f"{len(columns)}")
        self._ties: TieBreaker | None = refined
        self._used = False  # a window or cut has been answered

    @classmethod
    def from_features(cls, X_pos: np.ndarray, domains: list[Domain]) -> NumpyEngine:
        """Encode the positive rows' features with their domains."""
        return cls([d.encode(X_pos[:, j]) for j, d in enumerate(domains)])

    @property
    def dims(self) -> int:
        return len(self._columns)

    def remaining(self) -> int:
        """The number of remaining rows (all positives before the first cut): the exact
        count ``auto``'s private count adds its noise to."""
        return self._count

    def set_ties(self, ties: TieBreaker, *, in_place: bool = False) -> None:
        """Replace every column by its refined sort values (:mod:`dprect.core.ties`).
        ``in_place``: overwrite the column arrays block by block (:func:`refine_in_place`;
        for an engine that owns its arrays, e.g. the Spark engine's collected rows)."""
        if self._ties == ties:
            return
        if self._used or (self._ties is not None and self._ties.active):
            raise ParameterError("set_ties must come before the first window or cut")
        if len(ties.bits) != self.dims:
            raise ParameterError(f"tie bits for {len(ties.bits)} axes, engine has {self.dims}")
        if in_place:
            refine_in_place(self._columns, ties)
        else:
            self._columns = [np.ascontiguousarray(c) for c in ties.refine(self._columns)]
        self._ties = ties

    def _column(self, axis: int) -> np.ndarray:
        col = self._columns[axis]
        return col if self._all else col[self._remaining]

    def _buffer(self) -> np.ndarray:
        if self._scratch is None:
            self._scratch = np.empty(len(self._remaining), dtype=bool)
        return self._scratch

    def _upper_set(self, axis: int, side: Side, stop: int) -> np.ndarray | None:
        """The remaining values at or beyond a guessed threshold, if at least ``stop``.

        The set is closed upwards in the order from ``side`` (every remaining value at or
        beyond t, ties included), so its first ``stop`` ranks equal the full set's.
        Returns None when the guess is useless (too few values, or no saving).
        """
        col = self._columns[axis]
        step = max(1, len(col) // _SAMPLE_SIZE)
        sample = col[::step] if self._all else col[::step][self._remaining[::step]]
        expected = stop * len(sample) / self._count  # sample points expected in the prefix
        k = math.ceil(expected + 4 * math.sqrt(expected) + 16)
        if k >= len(sample):
            return None
        hit = self._buffer()
        if side == "hi":  # the k-th largest sample value
            threshold = np.partition(sample, len(sample) - k)[len(sample) - k]
            np.greater_equal(col, threshold, out=hit)
        else:  # the k-th smallest
            threshold = np.partition(sample, k - 1)[k - 1]
            np.less_equal(col, threshold, out=hit)
        if not self._all:
            np.logical_and(hit, self._remaining, out=hit)
        found = col[hit]
        return found if len(found) >= stop else None

    def window(self, axis: int, side: Side, stop: int, size: int) -> np.ndarray:
        self._used = True
        n = self._count
        first, last = max(0, stop - size), min(stop, n)  # ranks [first, last) from `side`
        if last <= first:
            return self._columns[axis][:0].copy()
        if n >= _MIN_FAST_ROWS and 2 * last <= n:
            found = self._upper_set(axis, side, last)
            if found is not None:
                return _ranks(found, side, first, last, inplace=True)
        return _ranks(self._column(axis), side, first, last, inplace=not self._all)

    def histograms(self, thresholds: Sequence[np.ndarray]) -> list[np.ndarray]:
        """:meth:`dprect.core.engine.Engine.histograms`: each remaining column read once
        (compiled, :mod:`~dprect.engines.histogram_jit`, from :data:`JIT_VALUES`
        values)."""
        self._used = True
        compiled = self._count * self.dims >= JIT_VALUES
        return [counter(t, self._columns[j].dtype, compiled=compiled)(self._column(j))
                for j, t in enumerate(axes_thresholds(thresholds, self.dims))]

    def cut(self, axis: int, side: Side, threshold: int | float) -> None:
        self._used = True
        col = self._columns[axis]
        keep = self._buffer()
        if side == "hi":
            np.less(col, threshold, out=keep)
        else:
            np.greater(col, threshold, out=keep)
        np.logical_and(self._remaining, keep, out=self._remaining)
        self._count = int(np.count_nonzero(self._remaining))
        self._all = False
