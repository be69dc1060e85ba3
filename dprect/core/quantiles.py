"""Many private quantiles of one (group, column) in one charge (issue #41; proof in
docs/privacy.md §11a, "Many quantiles in one charge").

**Input** (:class:`QuantileStatistics`, summable over disjoint row sets, so an engine
merges them per (group, column, cell) like any other statistic). The column's rows enter
only through, per cell i of a public grid over every float, the row count and the rows
equal to the cell's *value* v_i — its float of smallest magnitude. The grid
(:func:`quantile_grid`) is :class:`~dprect.core.decimal_grid.DecimalGrid` ``(5)`` by
default — cells opening at every decimal of at most 5 significant digits between 10^−300
and 10^300, both signs, and zero: M = 108,000,002 cells, so a value typed as 0.31, 1013.2
or 2007 is a cell's value exactly — or ``FloatBins(bits)`` ("binary": 2^(12 + bits) bins, whose
values are binary edges). The list of quantiles 0 < q_1 < … < q_m < 1 (exact rationals
q_j = a_j/b_j) and the ε of the quantiles are public.

**The mechanism** (:func:`release_quantiles`). For each q_j, independently, one exponential
mechanism (McSherry & Talwar 2007) over the M cells of the grid — a finite public list
that covers every float, so no range is asked and no centre is needed. With
lo(i) = #{x < v_i}, hi(i) = #{x ≤ v_i} (both from the statistics: rows of earlier cells lie
below v_i, of later cells above, and of cell i only those equal to v_i are not on its far
side) and n the rows,

    bad_j(i) = max(0, lo(i) − q_j·n, q_j·n − hi(i))

is exactly the rank error (in rows, ties counted) of releasing v_i — 0 when the target rank
lies in v_i's run of ties, so a column of 800,000 equal values is no special case. Cell i
is drawn with probability ∝ exp(−ε_each·bad_j(i)/2), ε_each = (ε/m)·(1 − 10⁻⁹), and v_i is
released. lo and hi move by 0 or 1 when a row is added, q_j·n by q_j, so every bad_j moves
by at most 1: each draw is ε_each-DP and the m draws together (m·ε_each, 0)-DP (basic
composition). The released values are sorted and handed to the quantiles in increasing
order: monotone in q by post-processing.

**Exact sampling.** lo ≤ hi are non-decreasing along the grid and hi(i) ≤ lo(i + 1), so
b_j·bad_j is a non-negative integer, V-shaped with a flat bottom, and constant on
O(#occupied cells) pieces (each occupied cell, each gap): the law is exp(c_j·depth) with an
integer unimodal depth and the exact rational rate c_j = ε_each/(2·b_j), which the exact
sampler of the interior point (``interior_point.sample_unimodal``, docs/privacy.md §2)
draws with no floating-point number deciding anything (it checks the unimodality).

**Rank error** (:meth:`QuantilePlan.rank_bound`). With probability ≥ 1 − β every one of
the m draws has bad_j ≤ OPT_j + T, T = (2/ε_each)·ln(m·M/β) rows, OPT_j the least rank
error any bin value has (0 unless the target rank falls strictly inside a bin between
values that are not bin values); sorting does not raise the largest of the m errors.

**Small groups.** The bins far outside the data have bad = min(q, 1 − q)·n at most, so a
group needs about T/min(q_j, 1 − q_j) rows before its quantile is sure to lie inside its
range (:meth:`QuantilePlan.rows_needed`); below that the value may be any float.

**Draw order** (the same for a seed on every engine): a group's stream draws its columns
in order and, per column, the m quantiles in increasing q (:func:`draw_quantile_bins`),
each one exact draw; no draw depends on another group's.

Nothing here reads rows (but :func:`quantile_statistics`, the numpy reference of the
statistics, and :func:`rank_error`, for evaluation), writes or logs: the caller hands
merged statistics and a :class:`~dprect.core.randomness.RandomSource` (one stream per
group, in the public order).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from dprect.core.accounting import ADD_REMOVE, REPLACE_ONE
from dprect.core.bounds import MAX_WEIGHTED_ROWS
from dprect.core.decimal_grid import DecimalGrid
from dprect.core.domains import MAX_FLOAT_BINS_BITS, FloatBins
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import CheckReport, check_quantiles_plan
from dprect.core.interior_point import Pieces, sample_unimodal
from dprect.core.randomness import RandomSource

#: the default grid: decimals of QUANTILE_DIGITS significant digits (DecimalGrid(5): every
#: value typed with at most 5 significant digits is a candidate exactly; 4 digits missed
#: pressures like 1013.2); "binary" is FloatBins(QUANTILE_BITS). docs/results.md §5.6
#: measures both and other resolutions
QUANTILE_GRID = "decimal"
QUANTILE_DIGITS = 5
QUANTILE_BITS = 12
#: the largest denominator a quantile may have (q = a/b exactly; depths are in 1/b rows)
MAX_DENOMINATOR = 10**6
#: the shrink of ε/m so that m·ε_each stays ≤ ε after the float division
SHRINK = 1e-9
_MAX_FLOAT = float(np.finfo(np.float64).max)


def as_quantile(q: float | Fraction | str) -> Fraction:
    """q as an exact rational in (0, 1) with denominator ≤ :data:`MAX_DENOMINATOR`: a
    float is read by its shortest decimal form (0.1 → 1/10)."""
    try:
        f = Fraction(repr(q)) if isinstance(q, float) else Fraction(q)
    except (ValueError, TypeError, ZeroDivisionError):
        raise ParameterError("a quantile must be a number in (0, 1)") from None
    if not 0 < f < 1:
        raise ParameterError("a quantile must lie strictly between 0 and 1")
    if f.denominator > MAX_DENOMINATOR:
        raise ParameterError(f"a quantile's denominator must be at most {MAX_DENOMINATOR}")
    return f


@dataclass(frozen=True)
class QuantilePlan:
    """The public plan of one (group, column)'s quantiles: a function of the request only.

    ``quantiles`` the exact q_j (sorted, distinct), ``epsilon`` the stated ε of them all
    (under ``neighbouring``), ``epsilon_each`` the float ε of each draw, ``grid`` and
    ``resolution`` the grid (:func:`quantile_grid`)."""

    quantiles: tuple[Fraction, ...]
    epsilon: float
    epsilon_each: float
    grid: str
    resolution: int
    neighbouring: str
    #: what the independent check re-derived (docs/privacy.md §10), set by the planner
    check: CheckReport | None = None

    @property
    def rates(self) -> tuple[Fraction, ...]:
        """c_j = ε_each/(2·b_j), exact: the rate each draw's sampler uses per 1/b_j row."""
        e = Fraction(self.epsilon_each)
        return tuple(e / (2 * q.denominator) for q in self.quantiles)

    @property
    def grid_size(self) -> int:
        """M, the candidates of every draw (108,000,002 on the default decimal grid)."""
        return quantile_grid(self.grid, self.resolution).size

    def rank_bound(self, beta: float) -> float:
        """T = (2/ε_each)·ln(m·M/β) rows: with probability ≥ 1 − β every draw has
        bad_j ≤ OPT_j + T (module docstring)."""
        m = len(self.quantiles)
        return 2.0 / self.epsilon_each * (math.log(m * self.grid_size) - math.log(beta))

    def rows_needed(self, beta: float) -> int:
        """About the rows a group needs before each quantile lies inside its range with
        probability ≥ 1 − β: T / min(q, 1 − q) over the plan's quantiles."""
        t = self.rank_bound(beta)
        return math.ceil(max(t / float(min(q, 1 - q)) for q in self.quantiles))


def plan_quantiles(quantiles: Sequence[float | Fraction | str], epsilon: float, *,
                   grid: str = QUANTILE_GRID, resolution: int | None = None,
                   neighbouring: str = ADD_REMOVE) -> QuantilePlan:
    """The plan of m quantiles at ε (one charge for all of them, per group and column;
    groups compose in parallel), verified by ``guarantee_check.check_quantiles_plan``
    before it is returned (a :class:`GuaranteeCheckError` if not). Under replace-one the
    add/remove ε/2 is spent (group privacy of size 2, docs/privacy.md §6)."""
    qs = sorted({as_quantile(q) for q in quantiles})
    if not qs:
        raise ParameterError("ask for at least one quantile")
    if not (isinstance(epsilon, float | int) and math.isfinite(epsilon) and epsilon > 0):
        raise ParameterError("the quantiles' epsilon must be a finite number > 0")
    if neighbouring not in (ADD_REMOVE, REPLACE_ONE):
        raise ParameterError("neighbouring must be 'add-remove' or 'replace-one'")
    if resolution is None:
        resolution = QUANTILE_DIGITS if grid == "decimal" else QUANTILE_BITS
    quantile_grid(grid, resolution)  # refuses a grid it does not know
    budget = float(epsilon) / (2 if neighbouring == REPLACE_ONE else 1)
    each = budget / len(qs) * (1 - SHRINK)
    plan = QuantilePlan(tuple(qs), float(epsilon), each, grid, resolution, neighbouring)
    # the plan as it will execute, re-derived independently before anything is read
    return dataclasses.replace(plan, check=check_quantiles_plan(plan))


@dataclass(frozen=True)
class QuantileStatistics:
    """One (group, column)'s sufficient statistics for the quantiles, summable over
    disjoint row sets (an engine merges them per key): the sorted unique
    cells ``keys`` of its finite values on the plan's grid, each cell's row count
    ``counts`` (≥ 1) and ``at_value``, its rows equal to the cell's value (its float of
    smallest magnitude, :func:`bin_values`: what the mechanism releases for that cell)."""

    keys: np.ndarray
    counts: np.ndarray
    at_value: np.ndarray

    def __post_init__(self) -> None:
        k, c, e = (np.asarray(a) for a in (self.keys, self.counts, self.at_value))
        if not (k.ndim == c.ndim == e.ndim == 1 and len(k) == len(c) == len(e)):
            raise ParameterError("quantile statistics need equally long keys, counts and "
                                 "at_value")
        if len(k) and ((k[1:] <= k[:-1]).any() or (c < 1).any() or (e < 0).any()
                       or (e > c).any()):
            raise ParameterError("quantile statistics need strictly increasing keys, "
                                 "counts >= 1 and 0 <= at_value <= counts")


class _BinaryGrid:
    """``FloatBins(bits)`` seen as a quantile grid: a bin's value is its float of smallest
    magnitude (the smallest float of a bin of x ≥ 0, the largest of a negative bin)."""

    def __init__(self, bits: int) -> None:
        if isinstance(bits, bool) or not isinstance(bits, int) \
                or not 1 <= bits <= MAX_FLOAT_BINS_BITS:
            raise ParameterError(f"a binary quantile grid's bits must be an integer in "
                                 f"1..{MAX_FLOAT_BINS_BITS}")
        self.bins = FloatBins(bits)
        self.size = self.bins.size
        self._zero_bin = 1 << (11 + bits)

    def encode(self, x: np.ndarray) -> np.ndarray:
        return self.bins.encode(x)

    def negative(self, index: np.ndarray) -> np.ndarray:
        return np.asarray(index, dtype=np.int64) < self._zero_bin

    def values(self, index: np.ndarray) -> np.ndarray:
        out = [self.bins.upper_value(int(i)) if i < self._zero_bin
               else self.bins.lower_value(int(i)) for i in np.asarray(index)]
        return np.clip(np.array(out, dtype=np.float64), -_MAX_FLOAT, _MAX_FLOAT)


QuantileGrid = DecimalGrid | _BinaryGrid


@lru_cache(maxsize=16)
def quantile_grid(grid: str, resolution: int) -> QuantileGrid:
    """The public grid of a plan: ``"decimal"`` (:class:`DecimalGrid` of ``resolution``
    significant digits) or ``"binary"`` (``FloatBins(resolution)``)."""
    if grid == "decimal":
        return DecimalGrid(resolution)
    if grid == "binary":
        return _BinaryGrid(resolution)
    raise ParameterError("the quantile grid must be 'decimal' or 'binary'")


def bin_values(plan: QuantilePlan, index: np.ndarray) -> np.ndarray:
    """The value each of the plan grid's cells ``index`` stands for: its float of smallest
    magnitude, capped to the finite floats (what the mechanism releases)."""
    return quantile_grid(plan.grid, plan.resolution).values(np.asarray(index, np.int64))


def merge_quantile_statistics(parts: Sequence[QuantileStatistics]) -> QuantileStatistics:
    """The statistics of the union of disjoint row sets: counts and ``at_value`` added per
    cell (what an engine does per (group, column) across partitions)."""
    keys = np.concatenate([np.asarray(p.keys, np.int64) for p in parts] + [np.zeros(0, np.int64)])
    counts = np.concatenate([np.asarray(p.counts, np.int64) for p in parts]
                            + [np.zeros(0, np.int64)])
    at = np.concatenate([np.asarray(p.at_value, np.int64) for p in parts]
                        + [np.zeros(0, np.int64)])
    out, inverse = np.unique(keys, return_inverse=True)
    return QuantileStatistics(out, np.bincount(inverse, counts, len(out)).astype(np.int64),
                              np.bincount(inverse, at, len(out)).astype(np.int64))


def quantile_statistics(values: np.ndarray, plan: QuantilePlan) -> QuantileStatistics:
    """The :class:`QuantileStatistics` of one cell's finite ``values`` on the plan's grid
    (the numpy reference an engine's per-row kernel must match: a row's cell and whether
    it equals its cell's value are functions of the row alone)."""
    x = np.asarray(values, dtype=np.float64)
    g = quantile_grid(plan.grid, plan.resolution)
    keys, inverse, counts = np.unique(g.encode(x), return_inverse=True, return_counts=True)
    hit = x == g.values(keys)[inverse]
    at_value = np.bincount(inverse, weights=hit, minlength=len(keys)).astype(np.int64)
    return QuantileStatistics(keys.astype(np.int64), counts.astype(np.int64), at_value)


def quantile_law(stats: QuantileStatistics, plan: QuantilePlan, j: int) -> Pieces:
    """The law of draw j as constant-depth pieces over the grid (module docstring):
    depth = D − b·bad with bad(i) = dist(q·n, [lo(i), hi(i)]), lo(i) = #{x < v_i} and
    hi(i) = #{x ≤ v_i} for the bin's value v_i. ``Pieces.probabilities`` gives the law in
    floating point (tests and audits); the draw takes the exact rate ``plan.rates[j]``."""
    q = plan.quantiles[j]
    a, b = q.numerator, q.denominator
    g = quantile_grid(plan.grid, plan.resolution)
    m = g.size
    keys = np.asarray(stats.keys, dtype=np.int64)
    counts = np.asarray(stats.counts, dtype=np.int64)
    at = np.asarray(stats.at_value, dtype=np.int64)
    n = int(counts.sum())
    u = len(keys)
    if u and int(keys[-1]) >= m:
        raise ParameterError("a quantile statistic's bin lies outside the plan's grid")
    if u == 0:
        starts, sizes = np.zeros(1, np.uint64), np.array([m], np.uint64)
        lo = hi = np.zeros(1, np.int64)
    else:
        incl = np.cumsum(counts)
        before = incl - counts
        neg = g.negative(keys)
        # a bin's value v: rows of earlier bins are < v, of later bins > v; inside the bin
        # only the rows equal to v are not on v's far side (the bin's other rows are
        # farther from zero: above v on the positive side, below it on the negative)
        row_lo = np.where(neg, incl - at, before)
        row_hi = np.where(neg, incl, before + at)
        ukeys = keys.astype(np.uint64)
        starts = np.empty(2 * u + 1, np.uint64)
        sizes = np.empty(2 * u + 1, np.uint64)
        lo = np.empty(2 * u + 1, np.int64)
        hi = np.empty(2 * u + 1, np.int64)
        starts[0], sizes[0], lo[0], hi[0] = 0, ukeys[0], 0, 0
        starts[1::2], sizes[1::2], lo[1::2], hi[1::2] = ukeys, 1, row_lo, row_hi
        starts[2:-1:2] = ukeys[:-1] + np.uint64(1)
        sizes[2:-1:2] = ukeys[1:] - ukeys[:-1] - np.uint64(1)
        lo[2:-1:2] = hi[2:-1:2] = incl[:-1]  # an empty bin between: every row is < or > v
        starts[-1], sizes[-1] = ukeys[-1] + np.uint64(1), np.uint64(m - 1 - int(keys[-1]))
        lo[-1] = hi[-1] = n
        keep = sizes > 0
        starts, sizes, lo, hi = starts[keep], sizes[keep], lo[keep], hi[keep]
    bb: int | np.int64 = b
    t: int | np.int64 = a * n
    if b * max(n, 1) >= MAX_WEIGHTED_ROWS:  # beyond int64: exact Python integers
        lo, hi = lo.astype(object), hi.astype(object)
    else:
        bb, t = np.int64(b), np.int64(a * n)
    weighted = np.maximum(0, np.maximum(lo * bb - t, t - hi * bb))
    depths = weighted.max() - weighted
    if weighted.dtype != object:
        depths = depths.astype(np.int64)
    return Pieces(starts, sizes, depths, 2.0 * float(plan.rates[j]), m)


def draw_quantile_bins(stats: QuantileStatistics, plan: QuantilePlan, rng: RandomSource
                       ) -> list[int]:
    """The m bins drawn, in the plan's quantile order, before sorting (exact)."""
    return [sample_unimodal(quantile_law(stats, plan, j), rate, rng)
            for j, rate in enumerate(plan.rates)]


def release_quantiles(stats: QuantileStatistics, plan: QuantilePlan, rng: RandomSource
                      ) -> np.ndarray:
    """The released quantiles of one (group, column), one per ``plan.quantiles`` (in
    increasing q, non-decreasing values): the drawn bins' values, sorted (module
    docstring). ``stats``: the cell's :class:`QuantileStatistics` on the plan's grid (no
    keys for a group without rows)."""
    drawn = draw_quantile_bins(stats, plan, rng)
    return np.sort(bin_values(plan, np.array(drawn, dtype=np.int64)))


def rank_error(sorted_values: np.ndarray, released: float, q: float) -> float:
    """dist(q·n, [#{x < v}, #{x ≤ v}]) / n for the released v: the rank error with ties
    counted in the released value's favour (every rank a tie at v can take). Evaluation
    only (it reads the rows)."""
    x = np.asarray(sorted_values)
    n = len(x)
    lo = int(np.searchsorted(x, released, side="left"))
    hi = int(np.searchsorted(x, released, side="right"))
    t = float(q) * n
    return max(0.0, lo - t, t - hi) / n


__all__ = [
    "MAX_DENOMINATOR",
    "QUANTILE_BITS",
    "QUANTILE_DIGITS",
    "QUANTILE_GRID",
    "QuantilePlan",
    "QuantileStatistics",
    "as_quantile",
    "bin_values",
    "draw_quantile_bins",
    "merge_quantile_statistics",
    "plan_quantiles",
    "quantile_grid",
    "quantile_law",
    "quantile_statistics",
    "rank_error",
    "release_quantiles",
]
