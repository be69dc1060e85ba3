"""Bounds v2: a private centre, then each side searched outward until its tail is small
(issue #23; proofs in docs/privacy.md §11, "Bounds aimed at a query").

The coverage bounds of :mod:`dprect.core.bounds` aim at a share of the rows and pay a
union bound over a whole 2^24-cell grid: each side clips at least a floor of hundreds of
rows. A DP mean or sum wants something else: the clip that balances the bias of clipping
against the noise of a wide range, about 1/(2ε_q) rows per side (Amin et al. 2019;
Huang, Liang & Yi 2021). This module finds it, for one (group, column) at a time, in two
steps that never need a user-given range:

1. **Centre** (sign × magnitude, issue #41; docs/privacy.md §11, Lemma D2). ε_c in two
   draws. The sign class s ∈ {−, +} (− the rows x < 0, + the rest, −0.0 and 0 included)
   by the exponential mechanism with score #{x of class s}: probability ∝
   exp(ε₁·#{x of class s}/2), ε₁ = ``SIGN_SHARE``·ε_c (a row moves one score by 1:
   ε₁-DP). Then the median of the magnitudes |x| on the non-negative half of the coarse
   public grid ``FloatBins(CENTRE_BITS)`` (2^(11 + CENTRE_BITS) bins; the |x| histogram is
   the signed one folded, :func:`magnitude_counts`): bin i drawn ∝ exp(ε₂·depth(i)/2),
   depth(i) = min(#{|x| in bins ≤ i}, #{|x| in bins ≥ i}), ε₂ = ε_c − ε₁ (sensitivity 1:
   ε₂-DP). The depth is unimodal and constant on O(#occupied bins) pieces, so
   :func:`~dprect.core.interior_point.sample_unimodal` draws both exactly with the rational
   rates ε₁/2 and ε₂/2; basic composition gives ε_c. The centre c = s·m, m the drawn
   bin's smallest float capped to the finite floats (+0.0 for m = 0), is post-processing.
   In float order a column straddling zero has ~32,000 bins of depth ≈ n/2 between
   −0.05 and +0.05, and the median's mechanism drew centres of 2^−56 … 2^−799 (docs/
   results.md §5.7c); no |x| lies in those bins, so for the magnitude they have depth 0.
2. **Two sides, outward, in parallel.** Given c, the candidate upper bounds are
   U_k = the largest float of the ``FloatBins(SEARCH_BITS)`` bin holding c + 2^(k/r)
   (k = r·MIN_OFFSET_EXPONENT, …, r·MAX_OFFSET_EXPONENT − 1, r = STEPS_PER_OCTAVE; sums
   that overflow are capped at the largest float; repeated bins are dropped), and the
   lower ones L_k = the smallest float of the bin holding c − 2^(k/r). A side that
   crosses zero (the lower side of c > 0, the upper of c < 0) takes the points
   c ∓ 2^(k/r) of c's sign, then 0, then ∓2^(k/r) for every k with 2^(k/r) ≥
   |c|·2^−ZERO_RESTART_BITS — outward from zero again — so that on data of one sign the
   bound beyond zero stays near zero (a lower bound of −83,712 for a column of times in
   1…2,400 was the failure this fixes), without hundreds of steps at offsets too small
   to matter, each a test of the same tail count #{x beyond 0}. Every
   candidate is a public function of c; U_k ≥ c ≥ L_k. Each side then draws one
   candidate with the monotone exponential mechanism over its tail counts
   q_k = #{x > U_k} (upper) or #{x < L_k} (lower), weight
   exp(−ε_s·max(q_k − t, 0) − μ·k) (t the public target of clipped rows, μ a public decay
   per step: :mod:`dprect.core.step_exponential`, which holds the proof's outline and the
   exact sampler; docs/privacy.md §11). The rows above c and the rows below c are
   disjoint and a row equal to c is in no tail, so the two sides together are ε_s-DP
   (parallel composition), and a column's bounds cost ε_c + ε_s.

No floating-point number enters a draw; the candidate offsets 2^(k/r) are public
constants computed in floating point once.

**Draw order** (identical across engines for a seed): the centre (its sign, then its
magnitude), then the lower side's draw, then the upper side's.
"""

from __future__ import annotations

import bisect
import math
import struct
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Literal

import numpy as np

from dprect.core import crmath
from dprect.core.domains import FloatBins
from dprect.core.errors import ParameterError
from dprect.core.interior_point import Pieces, sample_unimodal
from dprect.core.randomness import RandomSource

#: the centre's grid: FloatBins(4), 2^16 bins over every float (bins ≤ 1/16 wide: the
#: centre, a bin's smallest float, lies within 1/16 of the median, not in a thin tail)
CENTRE_BITS = 4
#: the share of the centre's ε_c its sign class takes (the magnitude the rest), exact:
#: ε₁ = SIGN_SHARE·ε_c, ε₂ = ε_c − ε₁ (docs/privacy.md §11, Lemma D2). The centre's row
#: need max((4/ε₂)·ln(2h/β), (2/ε₁)·ln(2/β)) (h = 2^15 magnitude bins) is least where the
#: two terms are equal, at the share 2·ln(2/β)/(2·ln(2/β) + 4·ln(2h/β)) = 0.174 at
#: β = 10⁻³; 1/5 is that share at β = 2/h = 2^−14 (the magnitude's term binds for every
#: larger β), 3% above the least need at 10⁻³ (1/4, before: 10%; docs/privacy.md §11,
#: "Accuracy")
SIGN_SHARE = Fraction(1, 5)
#: the candidates are edges of FloatBins(4) bins, the centre's grid: so one pass's
#: per-bin counts and sums serve the centre, the searches and the clamped sum
#: (describe_stats.BinStatistics; docs/privacy.md §11)
SEARCH_BITS = 4
#: offsets 2^(k/r): r steps per factor of 2
STEPS_PER_OCTAVE = 8
#: the smallest and (one past the) largest offset exponent: 2^-32 … 2^1024
MIN_OFFSET_EXPONENT = -32
MAX_OFFSET_EXPONENT = 1024
#: a side that crosses zero goes on from 0 with the offsets ≥ |c|·2^-ZERO_RESTART_BITS
ZERO_RESTART_BITS = 4

_MAX_FLOAT = float(np.finfo(np.float64).max)
_CENTRE_GRID = FloatBins(CENTRE_BITS)
_SEARCH_GRID = FloatBins(SEARCH_BITS)

Side = Literal["lower", "upper"]


# -- the centre ------------------------------------------------------------------------------
def centre_pieces(values: np.ndarray, epsilon: float | None = None) -> Pieces:
    """The median exponential mechanism's law on ``FloatBins(CENTRE_BITS)`` as pieces of
    constant depth min(#{x ≤ bin}, #{x ≥ bin}) (``values``: one column's finite values).
    ``epsilon`` only sets the float ``Pieces.epsilon`` for tests and audits (None: 1)."""
    x = np.asarray(values, dtype=np.float64)
    if len(x):
        keys, counts = np.unique(_CENTRE_GRID.encode(x), return_counts=True)
    else:
        keys, counts = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return centre_pieces_from_counts(keys, counts, epsilon)


def centre_pieces_from_counts(keys: np.ndarray, counts: np.ndarray,
                              epsilon: float | None = None, *,
                              grid_size: int | None = None) -> Pieces:
    """:func:`centre_pieces` from the column's ``FloatBins(CENTRE_BITS)`` histogram:
    sorted unique bin ``keys`` and their ``counts`` (each ≥ 1): all the centre reads.
    ``grid_size``: another coarse grid of that many bins (the quantile box's centre,
    :mod:`dprect.core.quantile_box`); None: the centre grid's."""
    m = _CENTRE_GRID.size if grid_size is None else int(grid_size)
    keys = np.asarray(keys, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    u = len(keys)
    if u == 0:
        return Pieces(np.zeros(1, dtype=np.uint64), np.array([m], dtype=np.uint64),
                      np.zeros(1, dtype=np.int64), 1.0 if epsilon is None else epsilon, m)
    ukeys = keys.astype(np.uint64)
    incl = np.cumsum(counts).astype(np.int64)  # #{x in bins ≤ key_r}
    before = incl - counts  # #{x in bins < key_r}
    starts = np.empty(2 * u + 1, dtype=np.uint64)
    sizes = np.empty(2 * u + 1, dtype=np.uint64)
    depths = np.empty(2 * u + 1, dtype=np.int64)
    starts[0], sizes[0], depths[0] = 0, ukeys[0], 0
    starts[1::2], sizes[1::2] = ukeys, 1
    depths[1::2] = np.minimum(incl, n - before)
    starts[2:-1:2] = ukeys[:-1] + np.uint64(1)
    sizes[2:-1:2] = ukeys[1:] - ukeys[:-1] - np.uint64(1)
    depths[2:-1:2] = np.minimum(incl[:-1], n - incl[:-1])
    starts[-1] = ukeys[-1] + np.uint64(1)
    sizes[-1] = np.uint64(m - 1 - int(keys[-1]))
    depths[-1] = 0
    keep = sizes > 0
    return Pieces(starts[keep], sizes[keep], depths[keep],
                  1.0 if epsilon is None else epsilon, m)


def centre_value(index: int) -> float:
    """The centre a drawn bin stands for: its smallest float, capped to the finite ones."""
    v = _CENTRE_GRID.lower_value(int(index))
    return min(max(v, -_MAX_FLOAT), _MAX_FLOAT)


def centre_rates(rate: Fraction) -> tuple[Fraction, Fraction]:
    """(sign rate, magnitude rate) of a centre at ``rate`` = ε_c/2: ε₁/2 and ε₂/2 with
    ε₁ = ``SIGN_SHARE``·ε_c and ε₂ = ε_c − ε₁, exact (they add up to ``rate``)."""
    sign = Fraction(rate) * SIGN_SHARE
    return sign, Fraction(rate) - sign


def magnitude_counts(keys: np.ndarray, counts: np.ndarray
                     ) -> tuple[int, np.ndarray, np.ndarray]:
    """The centre grid's histogram (sorted ``keys``, ``counts``) folded to the magnitudes:
    (#{x < 0}, the sorted bins of |x| on the non-negative half, numbered from 0, their
    counts). ``FloatBins.encode`` is symmetric — key(−x) = 2H − 1 − key(x) for x ≠ 0
    (H = 2^(11 + CENTRE_BITS), +0.0's bin; −0.0 lands on +0.0's), as the order key
    complements a negative pattern — so bin k < H of x < 0 holds |x| in bin 2H − 1 − k:
    the histogram of |x| is exact, and the engines need collect nothing new."""
    half = _CENTRE_GRID.size >> 1
    k = np.asarray(keys, dtype=np.int64)
    n = np.asarray(counts, dtype=np.int64)
    neg = k < half
    folded = np.where(neg, half - 1 - k, k - half)
    mags, at = np.unique(folded, return_inverse=True)
    summed = np.zeros(len(mags), dtype=np.int64)
    np.add.at(summed, at, n)
    return int(n[neg].sum()), mags, summed


def draw_centre_from_counts(keys: np.ndarray, counts: np.ndarray, sign_rate: Fraction,
                            magnitude_rate: Fraction, rng: RandomSource) -> float:
    """The private centre s·m (module docstring, step 1) from the centre grid's histogram
    (sorted keys, counts): the sign class drawn ∝ exp(``sign_rate``·#{x of the class})
    (rate ε₁/2), then the magnitude's bin ∝ exp(``magnitude_rate``·depth) over the
    folded histogram of |x| (:func:`magnitude_counts`; rate ε₂/2), both exact. The
    histogram is checked — keys strictly increasing inside the grid, counts ≥ 1 — which
    makes the pieces valid by construction (they tile the grid; the depth
    min(#{≤ bin}, #{≥ bin}) rises then falls; any depth on two points is unimodal), so
    the sampler skips its own checks of them (one draw per (group, column) on a describe
    run's driver). The check's refusal depends on the histogram's form only."""
    k = np.asarray(keys, dtype=np.int64)
    n = np.asarray(counts, dtype=np.int64)
    if len(k) != len(n) or (len(k) and (k[0] < 0 or k[-1] >= _CENTRE_GRID.size
                                        or (n < 1).any() or (k[1:] <= k[:-1]).any())):
        raise ParameterError("a centre histogram needs strictly increasing keys inside "
                             "the grid and counts >= 1")
    negative, mags, mag_counts = magnitude_counts(k, n)
    rows = int(n.sum())
    classes = Pieces(np.array([0, 1], dtype=np.uint64), np.ones(2, dtype=np.uint64),
                     np.array([negative, rows - negative], dtype=np.int64), 1.0, 2)
    sign = sample_unimodal(classes, sign_rate, rng, trusted=True)
    half = _CENTRE_GRID.size >> 1
    drawn = sample_unimodal(centre_pieces_from_counts(mags, mag_counts, grid_size=half),
                            magnitude_rate, rng, trusted=True)
    m = centre_value(half + drawn)
    return (m if sign else -m) + 0.0  # + 0.0: a magnitude 0 is +0.0 on either sign


# -- the candidates --------------------------------------------------------------------------
def _offsets() -> np.ndarray:
    """2^(k/8) for the offset exponents k, correctly rounded (:mod:`dprect.core.crmath`:
    the same bits on every machine; numpy's exp2 gave these too)."""
    k = np.arange(MIN_OFFSET_EXPONENT * STEPS_PER_OCTAVE,
                  MAX_OFFSET_EXPONENT * STEPS_PER_OCTAVE, dtype=np.int64)
    steps = np.array(crmath.octave_steps(STEPS_PER_OCTAVE))
    return np.ldexp(steps[k % STEPS_PER_OCTAVE], k // STEPS_PER_OCTAVE)


def bin_edges(index: np.ndarray, upper: bool) -> np.ndarray:
    """``FloatBins(SEARCH_BITS)`` edges, vectorised: the largest (``upper``) or smallest
    float of each bin — ``FloatBins.upper_value`` / ``lower_value`` bit for bit (capped at
    ±inf's pattern as they are: tests/core/test_release_jit.py compares every kind of
    bin); a block of cells' bounds (:func:`dprect.core.aggregates._released_many`)."""
    g = _SEARCH_GRID
    half = np.int64(1 << (11 + g.bits))
    i = index.astype(np.int64)
    negative = i < half
    j = np.where(negative, half - 1 - i, i - half).astype(np.uint64)
    shift = np.uint64(g.shift)
    low = j << shift
    high = ((j + np.uint64(1)) << shift) - np.uint64(1)
    inf_bits = np.uint64(0x7FF0000000000000)
    low, high = np.minimum(low, inf_bits), np.minimum(high, inf_bits)
    low_v, high_v = low.view(np.float64), high.view(np.float64)
    if upper:  # the largest float: +high, or −low for a negative bin (never −0.0)
        small = np.maximum(low, np.uint64(1)).view(np.float64)
        return np.where(negative, -small, high_v)
    return np.where(negative, -high_v, low_v)


def side_candidates(centre: float, side: Side) -> np.ndarray:
    """:func:`candidates` without its cache or checks (a finite float centre, a valid
    side): what a kernel shipped by value to Spark executors calls (a cached function
    would be pickled by reference)."""
    off = _offsets()
    sign = 1.0 if side == "upper" else -1.0
    with np.errstate(over="ignore"):
        raw = centre + sign * off
    if sign * centre < 0:  # the side crosses zero: through 0, then outward from 0
        restart = int(np.searchsorted(off, _restart_offset(centre), side="left"))
        raw = np.concatenate([raw[sign * raw < 0], [0.0], sign * off[restart:]])
    raw = np.clip(raw, -_MAX_FLOAT, _MAX_FLOAT)
    idx = _SEARCH_GRID.encode(raw)
    keep = np.concatenate([[True], idx[1:] != idx[:-1]])  # the offsets are monotone
    edges = bin_edges(idx[keep], upper=side == "upper")
    edges.setflags(write=False)
    return edges


def _restart_offset(centre: float) -> float:
    """|c|·2^-ZERO_RESTART_BITS (exact): a side that crosses zero goes on from 0 with the
    offsets at least this large. A bound at the first of them (a bin edge at most
    2^(1/8)·17/16 of |c|·2^-4 from zero) widens the range [c, 0] by at most 1/13 of it
    (and 0 itself stays a candidate, so data of one sign keep a bound at zero); smaller
    offsets would each cost the draw's prior μ more to pass, on data that reach past zero
    at the same tail count #{x beyond 0}: with 2^-10 and the default split, the 179 rows
    below zero of a dewpoint column (centre near 40) were clipped every time at ε = 0.5,
    six more octaves of such steps costing 24 nats of prior (docs/privacy.md §11)."""
    return math.ldexp(abs(float(centre)), -ZERO_RESTART_BITS)


_candidates_cached = lru_cache(maxsize=256)(side_candidates)
_OFFSETS = _offsets()
_OFFSETS.setflags(write=False)
_OFFSET_LIST: list[float] = _OFFSETS.tolist()
_U64 = (1 << 64) - 1
#: CandidateStream makes up to this many more candidates point by point (Python floats:
#: a search usually stops within a few), looking at most at _SCALAR_POINTS points, else
#: in numpy chunks that double — the same bins either way
_SCALAR_CANDIDATES = 4
_SCALAR_POINTS = 32


def _search_bin(x: float) -> int:
    """``FloatBins(SEARCH_BITS).encode`` of one float, on Python integers (−0.0 read as
    +0.0; the unsigned order key's top 1 + 11 + SEARCH_BITS bits)."""
    (b,) = struct.unpack("<Q", struct.pack("<d", x + 0.0))  # x + 0.0: −0.0 → +0.0
    u = (~b & _U64) if b >> 63 else (b | (1 << 63))
    return u >> (52 - SEARCH_BITS)


class CandidateStream:
    """The candidates of one side of ``centre``, made only as far as a caller reads them:
    :meth:`upto` ``(n)`` returns the first n of :func:`side_candidates` (all of them
    when there are fewer), equal element for element to that array's prefix.

    The same points as :func:`side_candidates`, read outward: w = ±raw (+ on the upper
    side, − on the lower) is w_j = ±c + 2^(j/r) for every offset — or, on a side that
    crosses zero, those w_j < 0 (the offsets below |c|: the sign of a rounded sum is the
    sign of the exact one), then 0, then every 2^(j/r) — capped at the largest float
    (fl(a + b) is monotone in b and −fl(a + b) = fl(−a − b), so raw = ±w point for point).
    w is non-decreasing, so the bins of raw are monotone and dropping repeated bins keeps
    the first point of each run of equal bins, whatever prefix is read. The first run —
    the offsets too small to leave the centre's own bin, up to thousands of points — is
    skipped by a bisection on w against that bin's edge; the rest is encoded in chunks
    that double. What the driver of a describe run uses, where a search usually stops
    within a few candidates of the centre (:func:`side_candidates` makes all ~8,500)."""

    def __init__(self, centre: float, side: Side) -> None:
        self.centre = float(centre)
        self._sign = 1.0 if side == "upper" else -1.0
        self._upper = side == "upper"
        self._a = self._sign * float(centre)  # w_j = a + 2^(j/r)
        crosses = self._a < 0
        self._cross = bisect.bisect_left(_OFFSET_LIST, -self._a) if crosses else -1
        # past zero the offsets go on from the first ≥ |c|·2^-ZERO_RESTART_BITS
        self._restart = (bisect.bisect_left(_OFFSET_LIST, _restart_offset(centre))
                         if crosses else 0)
        self._length = len(_OFFSET_LIST) + (self._cross + 1 - self._restart
                                            if crosses else 0)
        first = _search_bin(self._sign * self._w_at(0))
        # the points in the first one's bin are a prefix: w ≤ the bin's outer edge
        edge = (_SEARCH_GRID.upper_value(first) if self._upper
                else -_SEARCH_GRID.lower_value(first))
        self._pos = self._prefix_end(0, lambda p: self._w_at(p) <= edge, edge)
        self._last = first
        self._bins: list[int] = [first]
        #: the made bins as a read-only array (:meth:`made`), or None
        self._array: np.ndarray | None = None
        self._first = first
        self._chunk = 64
        self.count = 1

    def _w_at(self, pos: int) -> float:
        """The outward point w at position ``pos`` (a float: Python's double arithmetic
        rounds as numpy's does)."""
        if self._cross < 0 or pos < self._cross:
            w = self._a + _OFFSET_LIST[pos]
        elif pos == self._cross:
            w = 0.0
        else:
            w = _OFFSET_LIST[self._restart + pos - self._cross - 1]
        return min(w, _MAX_FLOAT)

    def _guess(self, target: float) -> int:
        """About the number of positions whose w lies below ``target`` (floating point,
        from the offsets alone; only a starting point for :meth:`_prefix_end`)."""
        # a + off rounds to the target or below up to off ≈ target − a + ulp(a)/2 (far
        # from the data the offsets below half an ulp of c leave w at c: thousands)
        near = target - self._a + math.ulp(self._a) / 2
        if self._cross < 0:
            pos = bisect.bisect_left(_OFFSET_LIST, near)
        elif target <= 0.0:
            pos = min(bisect.bisect_left(_OFFSET_LIST, near), self._cross)
        else:
            pos = self._cross + 1 + max(0, bisect.bisect_left(_OFFSET_LIST, target)
                                        - self._restart)
        return min(max(pos, 0), self._length)

    def _prefix_end(self, start: int, holds: Callable[[int], bool], target: float) -> int:
        """The first position p ≥ ``start`` where ``holds(p)`` fails (the length if
        none), for a ``holds`` true on a prefix of the positions — the value of
        ``bisect`` over them, found from :meth:`_guess` ``(target)`` (w ≈ ``target``
        where it fails) by galloping to a bracket and bisecting inside it: exact
        whatever the guess, a few evaluations when it is close (it is, up to rounding)."""
        n = self._length
        g = min(max(self._guess(target), start), n)
        if g < n and holds(g):  # the end lies after g: gallop forward
            lo, step = g + 1, 1  # holds(lo − 1)
            hi = min(g + step, n)
            while hi < n and holds(hi):
                lo, step = hi + 1, 2 * step
                hi = min(g + step, n)
        else:  # the end lies at or before g: gallop backward
            hi, step = g, 1  # fails at hi (or hi = n)
            lo = max(g - step, start)
            while lo > start and not holds(lo):
                hi, step = lo, 2 * step
                lo = max(g - step, start)
        # holds on [start, lo), fails from hi on; search [lo, hi)
        return bisect.bisect_left(range(lo, hi), True, key=lambda p: not holds(p)) + lo

    def _raw(self, start: int, stop: int) -> np.ndarray:
        """raw = ±w at positions start … stop − 1."""
        if self._cross < 0:
            with np.errstate(over="ignore"):
                w = self._a + _OFFSETS[start:stop]
        else:
            c = self._cross
            with np.errstate(over="ignore"):
                head = self._a + _OFFSETS[start:min(stop, c)]
            zero = [0.0] if start <= c < stop else []
            j = self._restart
            tail = _OFFSETS[j + max(start - c - 1, 0):j + max(stop - c - 1, 0)]
            w = np.concatenate([head, zero, tail])
        return self._sign * np.minimum(w, _MAX_FLOAT)

    @property
    def complete(self) -> bool:
        """Whether every candidate has been made (``count`` is then their number)."""
        return self._pos >= self._length

    def _grow(self, n: int) -> None:
        """Make candidates (their bins) until there are ``n`` or the side ends."""
        if n - self.count <= _SCALAR_CANDIDATES:  # a few more: point by point
            sign, budget = self._sign, _SCALAR_POINTS
            while self.count < n and self._pos < self._length and budget:
                b = _search_bin(sign * self._w_at(self._pos))
                self._pos += 1
                budget -= 1
                if b != self._last:
                    self._bins.append(b)
                    self._last = b
                    self.count += 1
        while self.count < n and not self.complete:
            stop = min(self._pos + self._chunk, self._length)
            idx = _SEARCH_GRID.encode(self._raw(self._pos, stop))
            self._pos = stop
            self._chunk *= 2
            keep = idx != np.concatenate([[self._last], idx[:-1]])
            self._last = int(idx[-1])
            if keep.any():
                self._bins.extend(idx[keep].tolist())
                self.count += int(keep.sum())

    def bins_while(self, keep: Callable[[int], bool], target: float | None = None
                   ) -> np.ndarray:
        """The ``FloatBins(SEARCH_BITS)`` bins of the candidates, outward, for as long as
        ``keep(bin)`` holds — ``keep`` must hold for a prefix of the side's bins (e.g.
        bin ≤ b on the upper side, bin ≥ b on the lower). The bins of the points are
        monotone, so the points whose bin is kept are a prefix too: found by bisection,
        encoded in one piece, repeats dropped: a Spark describe run's cuts up to a
        cell's rows (:func:`dprect.core.describe_stats.range_cuts`). On a stream that
        has made no candidate but its first, by the bisection; on one that has made
        more (a shared stream), from the made bins (:meth:`_made_while`); the bins
        found are kept as made, so a later search of the side reads them without making
        them again. ``target``, if given, is about the outward point w = ±raw where
        ``keep`` starts to fail: it only speeds up the search (any value gives the same
        bins)."""
        if self.count != 1:
            return self._made_while(keep)
        if not keep(self._first):
            return np.zeros(0, dtype=np.int64)
        sign = self._sign
        start = self._pos
        stop = self._prefix_end(start, lambda p: keep(_search_bin(sign * self._w_at(p))),
                                math.inf if target is None else target)
        idx = _SEARCH_GRID.encode(self._raw(start, stop))
        new = idx != np.concatenate([[self._first], idx[:-1]])
        out = np.concatenate([[self._first], idx[new]]).astype(np.int64)
        if stop > start:
            # the points start … stop − 1 are the ones _grow would read next, with the
            # same repeats dropped (against the first bin, the only one made): the
            # stream is as if grown to them
            self._bins = out.tolist()
            self.count = len(self._bins)
            self._last = self._bins[-1]
            self._pos = stop
        return out

    def reach(self, keep: Callable[[int], bool], target: float | None = None) -> np.ndarray:
        """Make every bin :meth:`bins_while` ``(keep, target)`` returns, as it makes
        them (the stream left in the state it leaves), and return the made bins
        (:meth:`made`): the bins where ``keep`` holds are their prefix — a compiled
        reader of many cells finds its end by bisection
        (:func:`dprect.core.block_jit.column_cuts`)."""
        if self.count == 1:
            self.bins_while(keep, target)
        else:
            self._made_past(keep)
        return self.made()

    def _made_past(self, keep: Callable[[int], bool]) -> None:
        """Grown until a made bin fails ``keep`` or the side ends (a stream that has made
        more than its first candidate)."""
        while keep(self._bins[-1]) and not self.complete:
            self._grow(2 * self.count)

    def _made_while(self, keep: Callable[[int], bool]) -> np.ndarray:
        """:meth:`bins_while` on a stream that has made more than its first candidate
        (a shared one, :func:`shared_streams`): grown until a made bin fails ``keep`` or
        the side ends (:meth:`_made_past`), then the made bins' prefix where ``keep``
        holds — the same bins (the stream's bins are the same sequence however far it
        has been made)."""
        self._made_past(keep)
        bins = self._bins
        end = bisect.bisect_left(range(len(bins)), True, key=lambda i: not keep(bins[i]))
        return self.made()[:end]

    def made(self) -> np.ndarray:
        """The made bins as an int64 array, read-only (a view of it is handed out), made
        again only once the stream has grown: the bins made never change, only more are
        appended, so an array as long as the list holds its values (many cells of one
        centre read the same shared stream: issue #42)."""
        array = self._array
        if array is None or len(array) != len(self._bins):
            array = np.array(self._bins, dtype=np.int64)
            array.flags.writeable = False
            self._array = array
        return array

    def upto(self, n: int) -> np.ndarray:
        """The first ``n`` candidates (fewer only if the side has fewer)."""
        self._grow(n)
        return bin_edges(np.array(self._bins[:n], dtype=np.int64), upper=self._upper)

    def value(self, k: int) -> float:
        """Candidate k (an IndexError past the side's last): the edge of its bin, as
        :func:`bin_edges` gives it (``FloatBins.upper_value`` / ``lower_value``)."""
        i = self.bin_at(k)
        return (_SEARCH_GRID.upper_value(i) if self._upper
                else _SEARCH_GRID.lower_value(i))

    def bin_at(self, k: int) -> int:
        """Candidate k's bin (an IndexError past the side's last): :meth:`value` is its
        edge, :func:`bin_edges` the edges of many."""
        self._grow(k + 1)
        if not 0 <= k < self.count:
            raise IndexError("past the last candidate on this side")
        return self._bins[k]

    @property
    def upper(self) -> bool:
        """Whether this is the upper side (its candidates' values are their bins' upper
        edges)."""
        return self._upper

    def has(self, k: int) -> bool:
        """Whether the side has a candidate k (made as far as needed)."""
        if k >= self.count:
            # a few past the made ones (a search's next far step): just those, point by
            # point; else doubling. Either way the same candidates, only made sooner or later
            near = k + 1 - self.count <= _SCALAR_CANDIDATES
            self._grow(k + 1 if near else max(k + 1, 2 * self.count))
        return k < self.count


@lru_cache(maxsize=512)
def _shared_stream(bits: str, side: Side) -> CandidateStream:
    return CandidateStream(float.fromhex(bits), side)


def shared_streams(centre: float) -> tuple[CandidateStream, CandidateStream]:
    """The (lower, upper) :class:`CandidateStream` of ``centre``, shared by every cell of
    this process searching from the same centre (a describe run's anchored cells of a
    column share one; a centre is a bin's edge, so own centres repeat too): a stream's
    candidates depend on its centre and side alone and it only ever makes more of them,
    so a shared one gives every reader what a fresh one would, made once (the cache
    keeps the 512 latest by the centre's exact bits, −0.0 apart from 0.0)."""
    bits = float(centre).hex()
    return _shared_stream(bits, "lower"), _shared_stream(bits, "upper")


def candidates(centre: float, side: Side) -> np.ndarray:
    """The public candidate bounds of one side, outward from ``centre`` (module
    docstring): non-decreasing (upper) or non-increasing (lower), no two equal."""
    if side not in ("lower", "upper"):
        raise ParameterError(f"side must be 'lower' or 'upper', got {side!r}")
    c = float(centre)
    if not math.isfinite(c):
        raise ParameterError("the centre must be finite")
    return _candidates_cached(c, side)


def tail_counts(sorted_values: np.ndarray, bounds: np.ndarray, side: Side) -> np.ndarray:
    """#{x > U_k} (upper) or #{x < L_k} (lower) for every candidate; ``sorted_values``
    ascending. These are the rows a bound at the candidate clips."""
    v = sorted_values
    if side == "upper":
        return (len(v) - np.searchsorted(v, bounds, side="right")).astype(np.int64)
    return np.searchsorted(v, bounds, side="left").astype(np.int64)


def candidate_count() -> int:
    """The most candidates a side can visit: 2·r·(MAX − MIN) + 1 (a side crossing zero
    visits at most every offset on each sign, and zero)."""
    return 2 * STEPS_PER_OCTAVE * (MAX_OFFSET_EXPONENT - MIN_OFFSET_EXPONENT) + 1


__all__ = [
    "CENTRE_BITS",
    "MAX_OFFSET_EXPONENT",
    "MIN_OFFSET_EXPONENT",
    "SEARCH_BITS",
    "SIGN_SHARE",
    "STEPS_PER_OCTAVE",
    "ZERO_RESTART_BITS",
    "CandidateStream",
    "bin_edges",
    "candidate_count",
    "candidates",
    "centre_pieces",
    "centre_pieces_from_counts",
    "centre_rates",
    "centre_value",
    "draw_centre_from_counts",
    "magnitude_counts",
    "shared_streams",
    "side_candidates",
    "tail_counts",
]
