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
is drawn with probability ∝ exp(−ε_each·bad_j(i)/(2Δ_j)), ε_each = (ε/m)·(1 − 10⁻⁹), and
v_i is released. lo and hi move by 0 or 1 when a row is added, q_j·n by q_j, so every bad_j
moves by at most Δ_j = max(q_j, 1 − q_j) (half a row for the median): each draw is
ε_each-DP and the m draws together (m·ε_each, 0)-DP (basic composition). The released
values are sorted and handed to the quantiles in increasing order: monotone in q by
post-processing.

**Exact sampling.** lo ≤ hi are non-decreasing along the grid and hi(i) ≤ lo(i + 1), so
b_j·bad_j is a non-negative integer, V-shaped with a flat bottom, and constant on
O(#occupied cells) pieces (each occupied cell, each gap): the law is exp(c_j·depth) with an
integer unimodal depth and the exact rational rate c_j = ε_each/(2·max(a_j, b_j − a_j))
(q_j = a_j/b_j: Δ_j in units of 1/b_j row), which the exact
sampler of the interior point (``interior_point.sample_unimodal``, docs/privacy.md §2)
draws with no floating-point number deciding anything (it checks the unimodality).

**Rank error** (:meth:`QuantilePlan.rank_bound`). With probability ≥ 1 − β every one of
the m draws has bad_j ≤ OPT_j + T, T = (2Δ/ε_each)·ln(m·M/β) rows (Δ = max_j Δ_j), OPT_j
the least rank
error any bin value has (0 unless the target rank falls strictly inside a bin between
values that are not bin values); sorting does not raise the largest of the m errors.

**Small groups.** The bins far outside the data have bad = min(q, 1 − q)·n at most, so
under the uniform measure a group needs about T/min(q_j, 1 − q_j) rows before its quantile
is sure to lie inside its range. The default plan (decimal grid) therefore draws a noisy
count first (``COUNT_SHARE`` of the column's ε), which picks the split
(:meth:`QuantilePlan.branch`, adaptive composition): at or above ``split_rows`` the
quantiles are drawn as above over the whole grid; below it a private centre takes
``SMALL_CENTRE_SHARE`` and each quantile is drawn inside a window around it under a base
measure decaying away from it (:mod:`dprect.core.quantile_centre`). The plan states
``rows_needed`` and each cell releases the flag n̂ < rows_needed. A cell whose noisy
count is below ``pool_rows`` (the row need of its own centre) releases no own centre: ONE
centre per column is drawn from the pooled rows of all such cells (:func:`pooled_centre`,
the same mechanisms and ε) and their quantiles are drawn near it (:func:`draws_near`;
the two phases: :mod:`dprect.core.quantile_release`; docs/privacy.md §11a, Lemma Q5) —
or, when those cells' released rows fall short of ``pool_rows`` beside other cells,
near the column's anchor on the other cells' released bins (no draw, Lemma Q6).

**Draw order** (the same for a seed on every engine): a group's stream draws its columns
in order and, per column, the count, the centre (small split) and the m quantiles in
increasing q (:func:`draws`), each one exact draw; no draw depends on another group's
but a pooled cell's, drawn after every count near its column's pooled centre.

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
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from dprect.core import crmath
from dprect.core.accounting import ADD_REMOVE, REPLACE_ONE, Guarantee
from dprect.core.decimal_grid import DecimalGrid
from dprect.core.domains import MAX_FLOAT_BINS_BITS, FloatBins
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import CheckReport, check_quantiles_plan
from dprect.core.interior_point import Pieces
from dprect.core.intervals import DEFAULT_LEVEL, below_need, check_level
from dprect.core.intervals import rank_error as level_rank_error
from dprect.core.quantile_centre import (
    DECAY,
    SIGN_PART,
    WINDOW_DECADES,
    block_count,
    centre_pieces,
    measure_mass,
    rank_frame,
    rank_pieces,
    sign_pieces,
    window,
    window_runs,
)
from dprect.core.quantile_draws import compiled_cell, draw_one, near_window, whole_grid
from dprect.core.randomness import RandomSource
from dprect.core.request import DescribeRequest, check_run_epsilon

#: the β of the plan's statements when none is named: the aggregate request's default
_DESCRIBE_BETA = float(next(f.default for f in dataclasses.fields(DescribeRequest)
                           if f.name == "beta"))  # type: ignore[arg-type]

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
#: the share of a column's ε its noisy count takes (drawn first), and the centre's share
#: for a group whose noisy count is below the plan's ``split_rows`` and at or above it
#: (the quantiles take the rest; :mod:`dprect.core.quantile_centre`, docs/privacy.md §11a).
#: The centre is a rank law of q = 1/2, sensitivity 1/2 row (Lemma Q1): at this share its
#: rate per row — hence its row need ``centre_rows`` and the pool's ``pool_rows`` — is the
#: one a share of 1/4 gave at the sensitivity of 1 row charged before session 50
COUNT_SHARE = 0.05
SMALL_CENTRE_SHARE = 0.125
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


def sensitivity_units(q: Fraction) -> int:
    """max(a, b − a) for q = a/b in lowest terms: the most the rank score b·bad_q moves
    when one row is added or removed, in its units of 1/b row (docs/privacy.md §11a,
    Lemma Q1: max(q, 1 − q) row)."""
    return max(q.numerator, q.denominator - q.numerator)


@dataclass(frozen=True)
class QuantilePlan:
    """The public plan of the quantiles of ``columns`` columns per group: a function of the
    request only.

    ``quantiles`` the exact q_j (sorted, distinct), ``epsilon`` the stated ε of them all
    (every column's, under ``neighbouring``), ``epsilon_each`` the float ε of each
    quantile's draw, ``grid`` and ``resolution`` the grid (:func:`quantile_grid`).
    ``centre_epsilon`` and ``count_epsilon`` (per column; 0: none) are the centre and the
    count of :mod:`dprect.core.quantile_centre` (the default on the decimal grid); a group
    whose noisy count is below ``split_rows`` is drawn by :meth:`branch`'s plan instead,
    with ``small_centre_epsilon`` and ``small_epsilon_each`` (adaptive composition: each
    branch spends the same column ε). ``beta`` is the failure probability of
    ``rows_needed``."""

    quantiles: tuple[Fraction, ...]
    epsilon: float
    epsilon_each: float
    grid: str
    resolution: int
    neighbouring: str
    columns: int = 1
    centre_epsilon: float = 0.0
    count_epsilon: float = 0.0
    small_centre_epsilon: float = 0.0
    small_epsilon_each: float = 0.0
    split_rows: int = 0
    beta: float = 1e-3
    #: the stated level of each cell's ``rank_error`` (:attr:`interval_rank_error`)
    interval_level: float = DEFAULT_LEVEL
    #: the row need of a small group's own centre (:meth:`centre_rows` of the small split
    #: at ``beta``): a cell whose noisy count is below it is pooled (:meth:`pooled`) — its
    #: quantiles are drawn near ONE centre per column drawn from the pooled rows of all
    #: such cells of the column (docs/privacy.md §11a, Lemma Q5), or, when their
    #: released rows add up to less than this beside other cells, near the column's
    #: anchor (Lemma Q6); 0: no pooling
    pool_rows: int = 0
    #: what the independent check re-derived (docs/privacy.md §10), set by the planner
    check: CheckReport | None = None
    #: per column, whether its DECLARED type is integral (a Parquet or Delta integer
    #: type, a decimal of scale 0: never a CSV column, whose types are read from its
    #: values): each released quantile of such a column is snapped to the nearest integer
    #: (:func:`snap_integers`, post-processing). Empty: no column is (the default)
    integral: tuple[bool, ...] = ()

    def column_integral(self, column: int) -> bool:
        """Whether column ``column``'s quantiles are released as integers."""
        return column < len(self.integral) and self.integral[column]

    def with_integral(self, flags: Sequence[bool]) -> QuantilePlan:
        """This plan with each column's integrality (``flags``, one per column, from the
        declared schema only: post-processing, the guarantee is this plan's)."""
        flags = tuple(bool(f) for f in flags)
        if len(flags) != self.columns:
            raise ParameterError(f"a plan of the quantiles of {self.columns} column(s) "
                                 f"for {len(flags)} column type(s)")
        return dataclasses.replace(self, integral=flags if any(flags) else ())

    @cached_property
    def rates(self) -> tuple[Fraction, ...]:
        """c_j = ε_each/(2·max(a_j, b_j − a_j)), exact: the rate each draw's sampler uses
        per 1/b_j row (q_j = a_j/b_j): the rank score moves by at most max(q_j, 1 − q_j)
        row, i.e. max(a_j, b_j − a_j) units (docs/privacy.md §11a, Lemma Q1). (The plan's
        constants are computed once: it is frozen.)"""
        e = Fraction(self.epsilon_each)
        return tuple(e / (2 * sensitivity_units(q)) for q in self.quantiles)

    @cached_property
    def centre_rate(self) -> Fraction:
        """(1 − SIGN_PART)·ε_c/2, exact: the centre block's rate per 1/2 row (the rank law
        of q = 1/2, whose score moves by at most 1/2 row: one unit)."""
        return Fraction(self.centre_epsilon) * (1 - SIGN_PART) / 2

    @cached_property
    def sign_rate(self) -> Fraction:
        """SIGN_PART·ε_c/2, exact: the sign's rate per 1/2 row (q = 1/2 too)."""
        return Fraction(self.centre_epsilon) * SIGN_PART / 2

    @cached_property
    def count_scale(self) -> Fraction:
        """1/ε_n, exact: the flag count's two-sided geometric scale (sensitivity 1).
        (This and the two rates above are computed once a plan: every cell reads them.)"""
        return 1 / Fraction(self.count_epsilon)

    def branch(self, noisy: int) -> QuantilePlan:
        """The plan a group of noisy count ``noisy`` is drawn by: the small groups' split
        below ``split_rows``, else this plan."""
        if not self.counted or noisy >= self.split_rows:
            return self
        return self._small

    @cached_property
    def _small(self) -> QuantilePlan:
        """The small groups' split (:meth:`branch`), made once."""
        return dataclasses.replace(self, centre_epsilon=self.small_centre_epsilon,
                                   epsilon_each=self.small_epsilon_each, split_rows=0,
                                   pool_rows=0)

    def pooled(self, noisy: int | None) -> bool:
        """Whether a cell of noisy count ``noisy`` takes its column's pooled centre
        (below :attr:`pool_rows`; post-processing of the released count)."""
        return noisy is not None and self.counted and noisy < self.pool_rows

    @property
    def centred(self) -> bool:
        """Whether the draws use the small groups' centre and base measure."""
        return self.centre_epsilon > 0

    @property
    def counted(self) -> bool:
        """Whether a noisy count is drawn first (it picks the split: :meth:`branch`)."""
        return self.count_epsilon > 0

    @property
    def grid_size(self) -> int:
        """M, the candidates of every draw (108,000,002 on the default decimal grid)."""
        return quantile_grid(self.grid, self.resolution).size

    @property
    def guarantee(self) -> Guarantee:
        """The stated guarantee (ε, 0) of a run (every column, every group)."""
        bound = (f"basic composition of {self.columns} column(s) x ("
                 + ("count + centre (small groups) + " if self.counted else "")
                 + f"{len(self.quantiles)} quantile draw(s)); groups in parallel")
        return Guarantee(self.epsilon, 0.0, self.neighbouring, bound)

    @cached_property
    def sensitivity(self) -> Fraction:
        """Δ = max_j max(q_j, 1 − q_j), exact: the largest row a neighbour moves any of the
        plan's rank scores (Lemma Q1), which the plan's rank statements use for every
        draw (each draw's own Δ_j is at most it)."""
        return max(Fraction(sensitivity_units(q), q.denominator) for q in self.quantiles)

    def rank_bound(self, beta: float, decades: int = 0) -> float:
        """T = (2Δ/ε_each)·(ln(m·M/β) + λ·min(d, L)) rows, Δ = :attr:`sensitivity`: with
        probability ≥ 1 − β every draw has bad_j ≤ OPT_j + T (module docstring;
        docs/privacy.md §11a, Theorems Q′ and Q″). M is the grid's cells, or with the
        centre the base measure's mass (:func:`~dprect.core.quantile_centre.measure_mass`),
        and ``decades`` d the decades between the centre and the best cell (0 without a
        centre)."""
        m = len(self.quantiles)
        scale = 2.0 * float(self.sensitivity) / self.epsilon_each
        if not self.centred:
            return scale * (crmath.log(m * self.grid_size) - crmath.log(beta))
        g = quantile_grid(self.grid, self.resolution)
        assert isinstance(g, DecimalGrid)
        far = float(DECAY) * min(decades, WINDOW_DECADES)
        return scale * (crmath.log(m * measure_mass(g)) - crmath.log(beta) + far)

    @cached_property
    def interval_rank_error(self) -> float | None:
        """T_λ = (2Δ/ε_each)·ln(m·M/α), α = 1 − ``interval_level``, Δ =
        :attr:`sensitivity`: with probability ≥ λ
        every one of the m draws of a (group, column) on the whole grid has rank error
        ≤ OPT_j + T_λ rows, the m together (α/m each; docs/privacy.md §15, Quantiles).
        None for the small groups' centred draws (no unconditional statement)."""
        if self.centred:
            return None
        return level_rank_error(self.epsilon_each, self.grid_size, self.interval_level,
                                draws=len(self.quantiles),
                                sensitivity=float(self.sensitivity))

    def centre_rows(self, beta: float) -> int:
        """The rows from which the centre block lands among the data's blocks with
        probability ≥ 1 − β: 2·(1/ε_b)·ln(B/β), ε_b = 2·``centre_rate`` its share of ε_c
        (a score of sensitivity 1/2 row drawn at ε_b per row: its rank error stays below
        n/2; 0 without one)."""
        if not self.centred:
            return 0
        g = quantile_grid(self.grid, self.resolution)
        assert isinstance(g, DecimalGrid)
        return math.ceil(1.0 / float(self.centre_rate)
                         * (crmath.log(block_count(g)) - crmath.log(beta)))

    def rows_needed(self, beta: float | None = None) -> int:
        """About the rows a group needs before each quantile lies inside its range with
        probability ≥ 1 − β (default the plan's): the centre's rows and
        T/min(q, 1 − q) over the plan's quantiles (with the best cell in the centre's
        decade), under the small groups' split (the one a group near this size gets) —
        and at least ``split_rows``, so a cell whose count is not flagged is drawn on the
        whole grid and carries its rank interval (docs/privacy.md §11a, §15)."""
        if beta is None:
            return self._rows_needed
        return max(self.split_rows, self.branch(-1).split_free_rows(beta))

    @cached_property
    def _rows_needed(self) -> int:
        """:meth:`rows_needed` at the plan's β, computed once (each cell's flag reads it)."""
        return max(self.split_rows, self.branch(-1).split_free_rows(self.beta))

    def split_free_rows(self, beta: float) -> int:
        """:meth:`rows_needed` of this plan's own draws (no split): the centre's rows
        and T/min(q, 1 − q)."""
        t = self.rank_bound(beta)
        return max(self.centre_rows(beta),
                   math.ceil(max(t / float(min(q, 1 - q)) for q in self.quantiles)))

    def to_json(self) -> dict[str, Any]:
        """The public plan, as recorded."""
        return {"quantiles": [str(q) for q in self.quantiles], "epsilon": self.epsilon,
                "epsilon_each": self.epsilon_each, "centre_epsilon": self.centre_epsilon,
                "count_epsilon": self.count_epsilon,
                "small_centre_epsilon": self.small_centre_epsilon,
                "small_epsilon_each": self.small_epsilon_each, "split_rows": self.split_rows,
                "pool_rows": self.pool_rows,
                "columns": self.columns,
                "grid": f"{self.grid}({self.resolution})", "neighbouring": self.neighbouring,
                "beta": self.beta, "rows_needed": self.rows_needed(),
                "interval_level": self.interval_level,
                "rank_error_at_level": self.interval_rank_error,
                **({"integral": list(self.integral)} if any(self.integral) else {}),
                **({} if self.check is None else {"guarantee_check": self.check.to_json()})}


def plan_quantiles(quantiles: Sequence[float | Fraction | str], epsilon: float, *,
                   grid: str = QUANTILE_GRID, resolution: int | None = None,
                   neighbouring: str = ADD_REMOVE, columns: int = 1,
                   centre: bool | None = None, beta: float | None = None,
                   interval_level: float = DEFAULT_LEVEL) -> QuantilePlan:
    """The plan of m quantiles on each of ``columns`` columns at a total ε (one charge for
    all of them; each column gets ε/columns, groups compose in parallel), verified by
    ``guarantee_check.check_quantiles_plan`` before it is returned (a
    :class:`GuaranteeCheckError` if not). Under replace-one the add/remove ε/2 is spent
    (group privacy of size 2, docs/privacy.md §6). ``centre`` (default: on the decimal
    grid) draws each (group, column)'s count first at ``COUNT_SHARE`` of the column's ε;
    below ``split_rows`` a centre takes ``SMALL_CENTRE_SHARE`` and the quantiles the rest
    drawn near it, else the quantiles take the rest over the whole grid.
    ``interval_level`` is the level of each cell's ``rank_error`` (post-processing)."""
    qs = sorted({as_quantile(q) for q in quantiles})
    if not qs:
        raise ParameterError("ask for at least one quantile")
    if not (isinstance(epsilon, float | int) and math.isfinite(epsilon) and epsilon > 0):
        raise ParameterError("the quantiles' epsilon must be a finite number > 0")
    check_run_epsilon(epsilon)  # the floor every run's ε has (5e-324 overflowed a plan)
    if neighbouring not in (ADD_REMOVE, REPLACE_ONE):
        raise ParameterError("neighbouring must be 'add-remove' or 'replace-one'")
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ParameterError("the quantiles need at least one column")
    if beta is None:  # the aggregate request's default (its accuracy statements' β)
        beta = _DESCRIBE_BETA
    if not (isinstance(beta, float | int) and 0 < beta < 1):
        raise ParameterError(" must be a number in (0, 1)", parameter="beta")
    level = check_level(interval_level)
    if resolution is None:
        resolution = QUANTILE_DIGITS if grid == "decimal" else QUANTILE_BITS
    quantile_grid(grid, resolution)  # refuses a grid it does not know
    centred = grid == "decimal" if centre is None else bool(centre)
    if centred and grid != "decimal":
        raise ParameterError("the small groups' centre needs the decimal grid")
    budget = float(epsilon) / (2 if neighbouring == REPLACE_ONE else 1) / columns
    if not centred:
        plan = QuantilePlan(tuple(qs), float(epsilon), budget / len(qs) * (1 - SHRINK),
                            grid, resolution, neighbouring, columns, beta=float(beta),
                            interval_level=level)
        return dataclasses.replace(plan, check=check_quantiles_plan(plan))
    small_c = budget * SMALL_CENTRE_SHARE * (1 - SHRINK)
    small_e, large_e = (budget * (1 - COUNT_SHARE - c) / len(qs) * (1 - SHRINK)
                        for c in (SMALL_CENTRE_SHARE, 0.0))
    plan = QuantilePlan(tuple(qs), float(epsilon), large_e, grid, resolution,
                        neighbouring, columns, 0.0, budget * COUNT_SHARE * (1 - SHRINK),
                        small_c, small_e, 0, float(beta), level)
    # the split: from the rows where the whole grid's uniform draws land inside the data
    plan = dataclasses.replace(plan, split_rows=plan.split_free_rows(plan.beta))
    # the pool: below the row need of a small group's own centre (Lemma Q5)
    plan = dataclasses.replace(plan, pool_rows=min(plan.split_rows,
                                                   plan.branch(-1).centre_rows(plan.beta)))
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


def quantile_statistics(values: np.ndarray, plan: QuantilePlan) -> QuantileStatistics:
    """The :class:`QuantileStatistics` of one cell's finite ``values`` on the plan's grid
    (the numpy reference an engine's per-row kernel must match: a row's cell and whether
    it equals its cell's value are functions of the row alone)."""
    x = np.asarray(values, dtype=np.float64)
    g = quantile_grid(plan.grid, plan.resolution)
    cells = g.encode(x).astype(np.int64)
    keys, inverse, counts = np.unique(cells, return_inverse=True, return_counts=True)
    at_value = np.bincount(inverse, weights=at_value_counts(g, x, cells),
                           minlength=len(keys)).astype(np.int64)
    return QuantileStatistics(keys.astype(np.int64), counts.astype(np.int64), at_value)


def at_value_counts(grid: QuantileGrid, x: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Per row, 1 if the row equals its cell's value (``cells``: the rows' cells on
    ``grid``), else 0 (int64): the row's own integer whose sum per cell is ``at_value``
    — what every engine sums per (group, column, cell)."""
    x = np.asarray(x, dtype=np.float64)
    if len(x) == 0:
        return np.zeros(0, dtype=np.int64)
    return (x == grid.values(np.asarray(cells, dtype=np.int64))).astype(np.int64)


def quantile_law(stats: QuantileStatistics, plan: QuantilePlan, j: int) -> Pieces:
    """The law of draw j under the uniform base measure as constant-depth pieces over the
    grid (module docstring): depth = D − b·bad with bad(i) = dist(q·n, [lo(i), hi(i)]),
    lo(i) = #{x < v_i} and hi(i) = #{x ≤ v_i} for the bin's value v_i.
    ``Pieces.probabilities`` gives the law in floating point (tests and audits); the draw
    takes the exact rate ``plan.rates[j]``."""
    g = quantile_grid(plan.grid, plan.resolution)
    keys, row_lo, row_hi, incl = _cell_ranks(stats, g)
    return rank_pieces(keys, row_lo, row_hi, incl, g.size, plan.quantiles[j],
                       2.0 * float(plan.rates[j]))


def _cell_ranks(stats: QuantileStatistics, g: QuantileGrid
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The occupied cells' keys, lo = #{x < v}, hi = #{x ≤ v} of each one's value v,
    and the rows of the cells up to each (cumulative counts)."""
    keys, incl = _cell_rows(stats, g)
    return _ranks(g, keys, stats.counts, stats.at_value, incl)


def _cell_rows(stats: QuantileStatistics, g: QuantileGrid) -> tuple[np.ndarray, np.ndarray]:
    """The occupied cells' keys (checked on the grid: both ends, as the sorted keys'
    searches of :func:`~dprect.core.quantile_centre.block_rows` and
    :func:`~dprect.core.quantile_centre.window_runs` need) and their cumulative counts."""
    keys = np.asarray(stats.keys, dtype=np.int64)
    if len(keys) and (int(keys[0]) < 0 or int(keys[-1]) >= g.size):
        raise ParameterError("a quantile statistic's bin lies outside the plan's grid")
    return keys, np.cumsum(np.asarray(stats.counts, dtype=np.int64))


def _ranks(g: QuantileGrid, keys: np.ndarray, counts: np.ndarray, at: np.ndarray,
           incl: np.ndarray, index: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_cell_ranks` of the keys ``index`` (all without; ``incl`` the cell's
    cumulative counts: each key's ranks are its own, whichever keys are asked)."""
    counts = np.asarray(counts, dtype=np.int64)
    at = np.asarray(at, dtype=np.int64)
    if index is not None:
        keys, incl, counts, at = keys[index], incl[index], counts[index], at[index]
    before = incl - counts
    neg = g.negative(keys)
    # a bin's value v: rows of earlier bins are < v, of later bins > v; inside the bin
    # only the rows equal to v are not on v's far side (the bin's other rows are
    # farther from zero: above v on the positive side, below it on the negative)
    row_lo = np.where(neg, incl - at, before)
    row_hi = np.where(neg, incl, before + at)
    return keys, row_lo, row_hi, incl


def best_rank_error(stats: QuantileStatistics, plan: QuantilePlan, q: Fraction) -> Fraction:
    """OPT_q = min_i bad_q(i) in rows, exact: the least rank error any cell's value of
    the plan's grid has (occupied cells, and an empty cell's lo = hi = the rows before
    it). Evaluation only (docs/privacy.md §11a, Theorem Q′; §15, Quantiles)."""
    g = quantile_grid(plan.grid, plan.resolution)
    keys, row_lo, row_hi, incl = _cell_ranks(stats, g)
    n = int(incl[-1]) if len(keys) else 0
    target = Fraction(q) * n
    spans = [(int(a), int(b)) for a, b in zip(row_lo, row_hi, strict=True)]
    ends = np.concatenate([[-1], keys, [g.size]])
    gaps = np.concatenate([[0], incl])[np.diff(ends) > 1]  # rows before each empty run
    spans += [(int(c), int(c)) for c in gaps]
    return min(max(Fraction(0), a - target, target - b) for a, b in spans)


def draws(stats: QuantileStatistics, plan: QuantilePlan, rng: RandomSource
          ) -> tuple[list[int], int | None]:
    """Every draw of one (group, column), in this order on every engine: with the plan's
    centre (:mod:`dprect.core.quantile_centre`) the noisy count n + Z (returned), which
    picks the split (:meth:`QuantilePlan.branch`), the centre block, and each quantile's
    bin under the base measure around the centre;
    without one each quantile's bin under the uniform measure (count None)."""
    fast = compiled_cell(stats.keys, stats.counts, stats.at_value, plan, rng)
    if fast is not None:  # a small group's draws in one compiled call: the same bits
        return fast
    noisy = None
    if plan.counted:
        scale = plan.count_scale
        noisy = int(np.asarray(stats.counts, dtype=np.int64).sum()) \
            + rng.discrete_laplace_int(scale.denominator, scale.numerator)
    split = plan if noisy is None else plan.branch(noisy)  # adaptive: follows the count
    g = quantile_grid(plan.grid, plan.resolution)
    keys, incl = _cell_rows(stats, g)
    if not split.centred:  # every quantile's pieces over the whole grid, once
        frame = rank_frame(*_ranks(g, keys, stats.counts, stats.at_value, incl), g.size)
        return whole_grid(frame, split.quantiles, split.rates, rng), noisy
    assert isinstance(g, DecimalGrid)
    centre, sign = _centre_sign(split, g, keys, stats.counts, incl, rng)
    return _near(stats, split, g, keys, incl, centre, sign, rng), noisy


def _centre_sign(split: QuantilePlan, g: DecimalGrid, keys: np.ndarray, counts: np.ndarray,
                 incl: np.ndarray, rng: RandomSource) -> tuple[int, int]:
    """The centre block, then the sign, of a small split's rows (sorted cells ``keys``,
    ``counts``, running rows ``incl``): two exact draws from ``rng``."""
    centre = draw_one(centre_pieces(g, keys, counts, split.centre_epsilon, incl),
                      split.centre_rate, rng)
    sign = draw_one(sign_pieces(g, keys, counts, split.centre_epsilon, incl),
                    split.sign_rate, rng)
    return centre, sign


def _near(stats: QuantileStatistics, split: QuantilePlan, g: DecimalGrid, keys: np.ndarray,
          incl: np.ndarray, centre: int, sign: int, rng: RandomSource) -> list[int]:
    """Each quantile's bin of a cell near ``centre`` and ``sign`` under the small split."""
    # the frame's pieces in the window only, from its keys (the same cut, ranks, depths)
    ranges = window(g, centre, sign)
    firsts, ends = window_runs(keys, ranges)
    inside = np.concatenate([np.arange(f, e) for f, e in
                             zip(firsts.tolist(), ends.tolist(), strict=True)])
    before = np.where(firsts > 0, incl[np.maximum(firsts - 1, 0)], 0) if len(incl) \
        else np.zeros(len(ranges), dtype=np.int64)
    return near_window(ranges, firsts, ends,
                       *_ranks(g, keys, stats.counts, stats.at_value, incl, inside),
                       before, int(incl[-1]) if len(incl) else 0, split.quantiles,
                       split.rates, g, centre, sign, rng)


def pool_histogram(parts: Sequence[tuple[np.ndarray, np.ndarray]]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The summed histogram (sorted grid cells, their rows; int64) of ``parts`` (each
    sorted cells and rows): a column's pool, the same whatever the order or blocking."""
    keys = [np.asarray(k, dtype=np.int64) for k, _ in parts]
    counts = [np.asarray(c, dtype=np.int64) for _, c in parts]
    if not keys or not sum(len(k) for k in keys):
        none = np.zeros(0, dtype=np.int64)
        return none, none.copy()
    every, at = np.unique(np.concatenate(keys), return_inverse=True)
    return every, _summed(at, np.concatenate(counts), len(every))


def _summed(at: np.ndarray, counts: np.ndarray, size: int) -> np.ndarray:
    """Exact int64 sums of ``counts`` by ``at`` (no float weights)."""
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, at, counts)
    return out


def pooled_centre(plan: QuantilePlan, keys: np.ndarray, counts: np.ndarray,
                  rng: RandomSource) -> tuple[int, int]:
    """A column's ONE pooled centre (block, sign) from the summed histogram of its pooled
    cells (:func:`pool_histogram`), drawn from ``rng`` by the same exponential mechanisms
    and at the same ε as a small cell's own centre (docs/privacy.md §11a, Lemma Q5: a row
    is in one group, so in the pool once)."""
    small = plan.branch(-1)
    g = quantile_grid(plan.grid, plan.resolution)
    assert isinstance(g, DecimalGrid) and small.centred
    keys = np.asarray(keys, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    return _centre_sign(small, g, keys, counts, np.cumsum(counts), rng)


def draws_near(stats: QuantileStatistics, plan: QuantilePlan, centre: int, sign: int,
               rng: RandomSource) -> list[int]:
    """A pooled cell's quantile bins, drawn under the small split near its column's
    pooled ``centre`` and ``sign`` (:func:`pooled_centre`) from ``rng``."""
    small = plan.branch(-1)
    g = quantile_grid(plan.grid, plan.resolution)
    assert isinstance(g, DecimalGrid)
    keys, incl = _cell_rows(stats, g)
    return _near(stats, small, g, keys, incl, centre, sign, rng)


@dataclass(frozen=True)
class QuantileCell:
    """One (group, column)'s release: the quantiles' values in the plan's order,
    with the plan's centre whether its noisy count lies below ``rows_needed`` (None
    without a centre: no count drawn), and ``rank_error``, the plan's T_λ when the cell
    was drawn on the whole grid (:attr:`QuantilePlan.interval_rank_error`; None for a
    small group's centred draws: no unconditional statement, docs/privacy.md §15)."""

    values: tuple[float, ...]
    small: bool | None
    rank_error: float | None = None


def release_cell(stats: QuantileStatistics, plan: QuantilePlan, rng: RandomSource,
                 column: int = 0) -> QuantileCell:
    """The release of one (group, column) (:func:`draws`, then :func:`released_cells`):
    the drawn bins' values, sorted (monotone in q by post-processing; integers for an
    integral ``column``), the flag and the rank error at the plan's level
    (post-processing of the count: the split it picked)."""
    drawn, noisy = draws(stats, plan, rng)
    return released_cells(plan, [drawn], [noisy], [column])[0]


def snap_integers(values: np.ndarray) -> np.ndarray:
    """``values`` rounded to the nearest integer (``np.rint``: halves to even), −0.0 as
    0.0 — the release of an integral column's quantiles (post-processing of released
    values: the guarantee is unchanged, and on integer data the rank error does not grow:
    docs/privacy.md §11a, "Integer columns")."""
    r = np.rint(np.asarray(values, dtype=np.float64))
    return np.where(r == 0.0, 0.0, r)


def released_cells(plan: QuantilePlan, drawn: Sequence[Sequence[int]] | np.ndarray,
                   noisy: Sequence[int | None],
                   columns: Sequence[int] | None = None) -> list[QuantileCell]:
    """The releases of cells from their :func:`draws` (each cell's m drawn bins and its
    noisy count), in order: each cell's values sorted, its flag and rank error
    (post-processing only) — every cell's values found in ONE call of the grid's
    ``values`` (a block's cells at once: the same floats as cell by cell). ``columns``:
    each cell's column index (default: cells laid out group by group, the plan's columns
    in order); a cell of an integral column (:attr:`QuantilePlan.integral`) has its
    values snapped to integers (:func:`snap_integers`) — the one place every engine's
    release passes, so both give the same bytes."""
    m = len(plan.quantiles)
    bins = np.array(drawn, dtype=np.int64).reshape(len(drawn), m)
    ordered = np.sort(bin_values(plan, bins.ravel()).reshape(bins.shape), axis=1)
    if any(plan.integral):
        where = (np.arange(len(drawn)) % plan.columns if columns is None
                 else np.asarray(columns, dtype=np.int64))
        if len(where) != len(drawn):
            raise ParameterError("released_cells needs one column index per cell")
        snap = np.array([plan.column_integral(int(j)) for j in where], dtype=bool)
        ordered[snap] = snap_integers(ordered[snap])
    values = ordered.tolist()
    needed = plan.rows_needed()
    return [QuantileCell(tuple(row), below_need(n, needed),
                         (plan if n is None else plan.branch(n)).interval_rank_error)
            for row, n in zip(values, noisy, strict=True)]


def release_quantiles(stats: QuantileStatistics, plan: QuantilePlan, rng: RandomSource,
                      column: int = 0) -> np.ndarray:
    """The released quantiles of one (group, column), one per ``plan.quantiles`` (in
    increasing q, non-decreasing values): :func:`release_cell`'s values. ``stats``: the
    cell's :class:`QuantileStatistics` on the plan's grid (no keys for a group without
    rows); ``column`` its index among the plan's columns."""
    return np.array(release_cell(stats, plan, rng, column).values, dtype=np.float64)


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
    "COUNT_SHARE",
    "MAX_DENOMINATOR",
    "QUANTILE_BITS",
    "QUANTILE_DIGITS",
    "QUANTILE_GRID",
    "SMALL_CENTRE_SHARE",
    "QuantileCell",
    "QuantilePlan",
    "QuantileStatistics",
    "as_quantile",
    "at_value_counts",
    "best_rank_error",
    "bin_values",
    "draws",
    "draws_near",
    "plan_quantiles",
    "pool_histogram",
    "pooled_centre",
    "quantile_grid",
    "quantile_law",
    "quantile_statistics",
    "rank_error",
    "release_cell",
    "release_quantiles",
    "released_cells",
    "snap_integers",
]
