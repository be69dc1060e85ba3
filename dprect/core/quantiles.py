"""Many private quantiles of one (group, column) in one charge (issue #41; proof in
docs/privacy.md §11a, "Many quantiles in one charge").

**Input** (:class:`QuantileStatistics`, summable over disjoint row sets, so an engine
merges them per (group, column, bin) like any other statistic). The column's rows enter
only through, per bin i of the public grid ``FloatBins(bits)`` (``bits`` =
:data:`QUANTILE_BITS` by default: 2^(12 + bits) bins over every float, each at most 2^−bits
of its binade wide), the row count and the rows equal to the bin's *value* v_i — its float
of smallest magnitude (:func:`bin_value`; every integer of magnitude below 2^(bits + 1),
8,192 on the default grid, is one). The list of quantiles 0 < q_1 < … < q_m < 1 (exact
rationals q_j = a_j/b_j) and the ε of the quantiles are public.

**The mechanism** (:func:`release_quantiles`). For each q_j, independently, one exponential
mechanism (McSherry & Talwar 2007) over the M = 2^(12 + bits) bins of the grid — a finite
public list that covers every float, so no range is asked and no centre is needed. With
lo(i) = #{x < v_i}, hi(i) = #{x ≤ v_i} (both from the statistics: rows of earlier bins lie
below v_i, of later bins above, and of bin i only those equal to v_i are not on its far
side) and n the rows,

    bad_j(i) = max(0, lo(i) − q_j·n, q_j·n − hi(i))

is exactly the rank error (in rows, ties counted) of releasing v_i — 0 when the target rank
lies in v_i's run of ties, so a column of 800,000 equal values is no special case. Bin i is
drawn with probability ∝ exp(−ε_each·bad_j(i)/2), ε_each = (ε/m)·(1 − 10⁻⁹), and v_i is
released. lo and hi move by 0 or 1 when a row is added, q_j·n by q_j, so every bad_j moves
by at most 1: each draw is ε_each-DP and the m draws together (m·ε_each, 0)-DP (basic
composition). The released values are sorted and handed to the quantiles in increasing
order: monotone in q by post-processing.

**Exact sampling.** lo ≤ hi are non-decreasing along the grid and hi(i) ≤ lo(i + 1), so
b_j·bad_j is a non-negative integer, V-shaped with a flat bottom, and constant on
O(#occupied bins) pieces (each occupied bin, each gap): the law is exp(c_j·depth) with an
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

import numpy as np

from dprect.core.bounds import MAX_WEIGHTED_ROWS
from dprect.core.domains import FloatBins
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import CheckReport, check_quantiles_plan
from dprect.core.interior_point import Pieces, sample_unimodal
from dprect.core.randomness import RandomSource

#: the grid the quantiles are drawn on: FloatBins(12), 2^24 bins over every float, each
#: at most 1/4,096 of its binade wide (integers up to 2^12 are bin edges); docs/results.md
#: §5.6 measures 4 and 8 bits too
QUANTILE_BITS = 12
#: the largest denominator a quantile may have (q = a/b exactly; depths are in 1/b rows)
MAX_DENOMINATOR = 10**6
#: the shrink of ε/m so that m·ε_each stays ≤ ε after the float division
SHRINK = 1e-9
_MAX_FLOAT = float(np.finfo(np.float64).max)
ADD_REMOVE, REPLACE_ONE = "add-remove", "replace-one"


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
    (under ``neighbouring``), ``epsilon_each`` the float ε of each draw, ``bits`` the grid."""

    quantiles: tuple[Fraction, ...]
    epsilon: float
    epsilon_each: float
    bits: int
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
        """M = 2^(12 + bits), the candidates of every draw."""
        return FloatBins(self.bits).size

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
                   bits: int = QUANTILE_BITS, neighbouring: str = ADD_REMOVE
                   ) -> QuantilePlan:
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
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 12:
        raise ParameterError("the quantile grid's bits must be an integer in 1..12")
    budget = float(epsilon) / (2 if neighbouring == REPLACE_ONE else 1)
    each = budget / len(qs) * (1 - SHRINK)
    plan = QuantilePlan(tuple(qs), float(epsilon), each, bits, neighbouring)
    # the plan as it will execute, re-derived independently before anything is read
    return dataclasses.replace(plan, check=check_quantiles_plan(plan))


@dataclass(frozen=True)
class QuantileStatistics:
    """One (group, column)'s sufficient statistics for the quantiles, summable over
    disjoint row sets (an engine merges them per key): the sorted unique
    ``FloatBins(bits)`` bins ``keys`` of its finite values, each bin's row count
    ``counts`` (≥ 1) and ``at_value``, its rows equal to the bin's value (its float of
    smallest magnitude, :func:`bin_value`: what the mechanism releases for that bin)."""

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


def bin_values(bits: int, keys: np.ndarray) -> np.ndarray:
    """The value each bin stands for (:func:`bin_value`), for many bins."""
    grid = FloatBins(bits)
    return np.array([bin_value(grid, int(i)) for i in np.asarray(keys)], dtype=np.float64)


def bin_value(grid: FloatBins, index: int) -> float:
    """The value bin ``index`` stands for: its float of smallest magnitude — the smallest
    float of a bin of x ≥ 0, the largest of a negative bin (so an integer, or any
    value that opens a bin toward zero, is a bin's value on both sides of zero) — capped to
    the finite floats."""
    i = int(index)
    neg = i < (1 << (11 + grid.bits))
    v = grid.upper_value(i) if neg else grid.lower_value(i)
    return min(max(v, -_MAX_FLOAT), _MAX_FLOAT)


def quantile_statistics(values: np.ndarray, bits: int = QUANTILE_BITS
                        ) -> QuantileStatistics:
    """The :class:`QuantileStatistics` of one cell's finite ``values`` (the numpy
    reference an engine's per-row kernel must match: a row's bin and whether it equals
    its bin's value are functions of the row alone)."""
    x = np.asarray(values, dtype=np.float64)
    keys, inverse, counts = np.unique(FloatBins(bits).encode(x), return_inverse=True,
                                      return_counts=True)
    hit = x == bin_values(bits, keys)[inverse]
    at_value = np.bincount(inverse, weights=hit, minlength=len(keys)).astype(np.int64)
    return QuantileStatistics(keys.astype(np.int64), counts.astype(np.int64), at_value)


def quantile_law(stats: QuantileStatistics, plan: QuantilePlan, j: int) -> Pieces:
    """The law of draw j as constant-depth pieces over the grid (module docstring):
    depth = D − b·bad with bad(i) = dist(q·n, [lo(i), hi(i)]), lo(i) = #{x < v_i} and
    hi(i) = #{x ≤ v_i} for the bin's value v_i. ``Pieces.probabilities`` gives the law in
    floating point (tests and audits); the draw takes the exact rate ``plan.rates[j]``."""
    q = plan.quantiles[j]
    a, b = q.numerator, q.denominator
    m = plan.grid_size
    zero_bin = 1 << (11 + plan.bits)
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
        neg = keys < zero_bin
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
    docstring). ``stats``: the cell's :class:`QuantileStatistics` on ``FloatBins(plan.bits)``
    (no keys for a group without rows)."""
    grid = FloatBins(plan.bits)
    drawn = draw_quantile_bins(stats, plan, rng)
    return np.sort(np.array([bin_value(grid, i) for i in drawn], dtype=np.float64))


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


__all__ = ["MAX_DENOMINATOR", "QUANTILE_BITS", "QuantilePlan", "QuantileStatistics",
           "as_quantile", "bin_value", "bin_values", "draw_quantile_bins",
           "plan_quantiles", "quantile_law", "quantile_statistics", "rank_error",
           "release_quantiles"]
