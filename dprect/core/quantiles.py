"""Many private quantiles of one (group, column) in one charge (issue #41; proof in
docs/privacy.md §11a, "Quantiles").

**Input.** The column's rows enter only through their counts per bin of the public grid
``FloatBins(bits)`` (sorted unique bin ``keys`` and their ``counts``: the sufficient
statistics an engine merges per (group, column); ``bits`` = :data:`QUANTILE_BITS` by
default, 2^(12 + bits) bins over every float, each at most 2^−bits of its binade wide).
The list of quantiles 0 < q_1, …, q_m < 1 (exact rationals q_j = a_j/b_j) and the ε of
the quantiles are public.

**The mechanism** (:func:`release_quantiles`). For each q_j, independently, one exponential
mechanism (McSherry & Talwar 2007) over the M = 2^(12 + bits) bins of the grid — a finite
public list that covers every float, so no range is asked of the user and no centre is
needed. With below(i) = #{x in bins < i}, upto(i) = #{x in bins ≤ i} and n the rows,

    bad_j(i) = max(0, below(i) − q_j·n, q_j·n − upto(i))

is the distance from the target rank q_j·n to the ranks a value inside bin i can have (0
on the bin holding the target rank: a bin of ties is one candidate, so a column of
800,000 equal values is no special case). Bin i is drawn with probability
∝ exp(−ε_each·bad_j(i)/2), ε_each = ε/m (shrunk by 10⁻⁹ so that m·ε_each ≤ ε in floating
point), and released as its smallest float, capped to the finite floats. Adding or
removing a row moves every bad_j by at most 1 (docs/privacy.md §9, Lemma B1, with the
floor 0 and α = q_j: ``bounds.bound_pieces`` computes exactly this law), so each draw is
ε_each-DP (Lemma B2) and the m draws together are (m·ε_each, 0)-DP by basic composition.
The released values are then sorted and handed to the quantiles in increasing order:
monotone in q by post-processing.

**Exact sampling.** b_j·bad_j is an integer, V-shaped along the grid with a flat bottom
and constant on O(#occupied bins) pieces, so the law is exp(c_j·depth) with an integer
unimodal depth and the exact rational rate c_j = ε_each/(2·b_j): the exact sampler of the
interior point (``interior_point.sample_unimodal``, docs/privacy.md §2) draws it with no
floating-point number deciding anything.

**Rank error** (:meth:`QuantilePlan.rank_bound`). On a group of n ≥ 1 rows some bin has
bad = 0, so with probability ≥ 1 − β every one of the m draws has
bad_j ≤ T = (2/ε_each)·ln(m·M/β) rows (Theorem C's union bound). The released value v
(a bin's smallest float) then has #{x < v} = below(i), and its rank error
dist(q_j·n, [#{x < v}, #{x ≤ v}]) is at most T plus the rows of its bin strictly above v
(none when the column's values are bin edges, e.g. integers below 2^bits·… on the
default grid). Sorting does not increase the largest of the m errors (a sorted vector is
no farther, in the sup norm, from a sorted target than the unsorted one).

**Small groups.** The bins far outside the data have bad = min(q, 1 − q)·n at most, so a
group needs about T/min(q_j, 1 − q_j) rows before its quantile is sure to lie inside its
range (:meth:`QuantilePlan.rows_needed`); below that the value may be any float.

Nothing here reads rows, writes or logs: the caller hands merged counts and a
:class:`~dprect.core.randomness.RandomSource` (one stream per group, in the public order).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dprect.core.bounds import Histogram, bound_pieces
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
        bad_j ≤ T (module docstring)."""
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


def quantile_law(keys: np.ndarray, counts: np.ndarray, plan: QuantilePlan, j: int
                 ) -> Pieces:
    """The law of draw j as constant-depth pieces (``interior_point.Pieces``; its
    ``probabilities`` give the law in floating point, for tests and audits)."""
    return bound_pieces(Histogram(np.asarray(keys, dtype=np.int64),
                                  np.asarray(counts, dtype=np.int64)),
                        plan.grid_size, plan.quantiles[j], "lower", plan.epsilon_each, 0)


def bin_value(plan: QuantilePlan, index: int) -> float:
    """The value a drawn bin stands for: its smallest float, capped to the finite ones."""
    v = FloatBins(plan.bits).lower_value(int(index))
    return min(max(v, -_MAX_FLOAT), _MAX_FLOAT)


def draw_quantile_bins(keys: np.ndarray, counts: np.ndarray, plan: QuantilePlan,
                       rng: RandomSource) -> list[int]:
    """The m bins drawn, in the plan's quantile order, before sorting (exact)."""
    return [sample_unimodal(quantile_law(keys, counts, plan, j), rate, rng)
            for j, rate in enumerate(plan.rates)]


def release_quantiles(keys: np.ndarray, counts: np.ndarray, plan: QuantilePlan,
                      rng: RandomSource) -> np.ndarray:
    """The released quantiles of one (group, column), one per ``plan.quantiles`` (in
    increasing q, non-decreasing values): the drawn bins' values, sorted (module
    docstring). ``keys``/``counts``: the column's ``FloatBins(plan.bits)`` bins (sorted,
    unique) and row counts (≥ 1) within the group; empty for a group without rows."""
    drawn = draw_quantile_bins(keys, counts, plan, rng)
    return np.sort(np.array([bin_value(plan, i) for i in drawn], dtype=np.float64))


def coarsen(keys: np.ndarray, counts: np.ndarray, from_bits: int, to_bits: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """``FloatBins(to_bits)`` counts from ``FloatBins(from_bits)`` ones (to ≤ from): a
    coarse bin holds 2^(from − to) consecutive fine ones (the grids share their order)."""
    if not 0 <= to_bits <= from_bits:
        raise ParameterError("coarsen goes from finer to coarser bits")
    k = np.asarray(keys, dtype=np.int64) >> (from_bits - to_bits)
    out, inv = np.unique(k, return_inverse=True)
    return out, np.bincount(inv, weights=np.asarray(counts, dtype=np.int64),
                            minlength=len(out)).astype(np.int64)


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


__all__ = ["MAX_DENOMINATOR", "QUANTILE_BITS", "QuantilePlan", "as_quantile", "bin_value",
           "coarsen", "draw_quantile_bins", "plan_quantiles", "quantile_law", "rank_error",
           "release_quantiles"]
