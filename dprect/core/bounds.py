"""Private clamping bounds: per column, a lower and an upper bound covering a chosen share of
the rows, with no public bounds needed (issue #14; docs/algorithm.md §9, proofs in
docs/privacy.md §9).

Every row counts (there is no label). Column j is read on a public grid {0, …, m_j − 1}
(any domain whose sort values are int64 grid indices: :class:`~dprect.core.domains.Grid`,
:class:`~dprect.core.domains.IntegerRange` and, the natural choice,
:class:`~dprect.core.domains.FloatBins`, which needs no bounds). The data enter only as one
histogram per (group, column): the occupied grid indices and their counts.

**The mechanism.** With α = a/b = (1 − coverage)/2 ∈ (0, 1/2) and n rows in the group,
each side aims to clip t = max(k_j, α·n) rows (the public floor k_j = ⌈T_j⌉ + 1). The
lower bound is the exponential mechanism (McSherry & Talwar 2007) over the grid with
badness(i) = max(0, L(i) − t, t − L'(i)), L(i) = #{idx < i}, L'(i) = #{idx ≤ i} (the
upper bound's with G(i) = #{idx > i}, G'(i) = #{idx ≥ i}); its sensitivity is 1, and
i is drawn ∝ exp(−ε_each·badness(i)/2): ε_each-DP and ε_each-bounded-range. The released
value is the cell's edge (``lower_value(i)`` / ``upper_value(i)``), clipping exactly L(i)
(G(i)) rows. Why the floor and the range [L, L'] (small groups, a heavy extreme cell):
docs/privacy.md §9.

**Exact sampling.** b·badness(i) = max(0, b·L(i) − B, B − b·L'(i)), B = max(b·k_j, a·n),
is V-shaped, so depth(i) = D − b·badness(i) is unimodal and constant on O(#keys) pieces;
:func:`dprect.core.interior_point.sample_unimodal` draws i ∝ exp(c·depth(i)) with the
exact rational c = ε_each/(2b) (ε_each the exact value of the accountant's float). No
floating-point number enters a draw.

**Budget.** A group's 2d mechanisms compose: ε_each is the largest per-mechanism ε whose
bounded-range composition over 2d rounds (:func:`~dprect.core.accounting.composition_br`)
meets the budget, shrunk by 10⁻⁹; replace-one plans the add/remove budget whose
group-privacy image is the request. Groups are disjoint (parallel composition): the run's
guarantee is one group's.

**Coverage** (docs/privacy.md §9). With probability ≥ 1 − β, for every column j and side,
the released cell's badness is ≤ T_j = (2/ε_each)·ln(m_j·2d/β), so the side clips at most
max(k_j, α·n) + T_j rows and, in a group of at least k_j rows, the bound is at or inside
the group's extreme cell. β is per group.

**Draw order** (identical across engines for a seed): groups in the given public order,
columns in order, the lower bound before the upper one.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from dprect.core import crmath
from dprect.core.accounting import (
    Guarantee,
    add_remove_budget,
    composition_br,
    composition_br_epsilon,
    replace_one,
)
from dprect.core.domains import Domain, FloatBins, Grid
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import CheckReport, check_bounds_plan
from dprect.core.interior_point import Pieces, sample_unimodal
from dprect.core.intervals import rank_error as level_rank_error
from dprect.core.randomness import SEEDED_WARNING, RandomSource, expect_draws
from dprect.core.request import (
    COVERAGE_DENOMINATOR,
    BoundsRequest,
    Neighbouring,
    coverage_alpha,
)
from dprect.core.validation import (
    check_positive_int,
    repeat_at,
)

#: depths are int64 while b·n stays below this (b the denominator of α, n a group's rows),
#: and exact Python integers above it
MAX_WEIGHTED_ROWS = 2**62
_SHRINK = 1.0 - 1e-9  # ε_each is shrunk this much so the stated bound holds after rounding
_UP = 1.0 + 2.0**-46  # T_j is rounded up by this relative margin

BoundSide = Literal["lower", "upper"]

_set = object.__setattr__


def _check_bounds_domain(name: str, d: object) -> Domain:
    if not isinstance(d, Grid | FloatBins):
        raise ParameterError(
            f"{name} must be a grid whose sort values are grid indices (FloatBins, "
            f"Grid or IntegerRange), got {d!r}; for columns without public bounds use "
            f"FloatBins()")
    return d


def _up(x: float) -> float:
    return math.nextafter(x * _UP, math.inf)


@dataclass(frozen=True)
class BoundsPlan:
    """Every parameter of a private-bounds run, from the public request and domains only.

    ``alpha``: the lower bound's target quantile (the upper's is 1 − α); ``epsilon_each``:
    each exponential mechanism's ε; ``guarantee``: the run's (ε̃, δ̃) and the bound proving
    it; ``rank_error``: T_j per column, in rows (module docstring); ``rows``: the user's
    public estimate of a group's row count, if given (it changes nothing but the printout).
    """

    request: BoundsRequest
    domains: tuple[Domain, ...]
    alpha: Fraction
    epsilon_each: float
    guarantee: Guarantee
    rank_error: tuple[float, ...]
    rows: int | None = None
    #: what the independent guarantee check re-derived (set by :func:`plan_bounds`)
    check: CheckReport | None = None

    @property
    def mechanisms(self) -> int:
        """2d: the exponential mechanisms of one group."""
        return 2 * len(self.domains)

    @property
    def sensitivity(self) -> Fraction:
        """1: the badness's sensitivity under adding or removing a row (the clipped count
        moves by at most 1 and the target max(k_j, α·n) by at most α, in the same
        direction; docs/privacy.md §9, Lemma B1)."""
        return Fraction(1)

    @property
    def floor_rows(self) -> tuple[int, ...]:
        """k_j = ⌈T_j⌉ + 1: the fewest rows a side aims to clip, whatever the group's size.
        The target is max(k_j, α·n): it keeps every outer grid cell's badness above
        T_j, so a bound lands beyond the data only with probability ≤ β/(2d)."""
        return tuple(math.ceil(t) + 1 for t in self.rank_error)

    @property
    def c(self) -> Fraction:
        """The exact rate of the sampler: weight exp(c·depth), depth in units of 1/b
        rows (α = a/b): c = ε_each/(2·b) (sensitivity 1)."""
        return Fraction(self.epsilon_each) / (2 * self.alpha.denominator)

    @property
    def failure_each(self) -> float:
        """β/(2d): each mechanism's share of the failure probability."""
        return self.request.beta / self.mechanisms

    @property
    def interval_rank_error(self) -> tuple[float, ...]:
        """Per column, T_λ = (2/ε_each)·ln(2m_j/(1 − λ)) at the request's
        ``interval_level`` λ: with probability ≥ λ both bounds of the column clip within
        ±T_λ rows of their target (:func:`dprect.core.intervals.rank_error`)."""
        return tuple(level_rank_error(self.epsilon_each, d.size, self.request.interval_level)
                     for d in self.domains)

    def expected_clipped_share(self) -> tuple[float, ...] | None:
        """Per column, the share of ``rows`` a side may clip under the coverage statement
        (ties aside): (max(k_j, α·rows) + T_j)/rows, capped at 1; None without ``rows``."""
        if self.rows is None:
            return None
        a = float(self.alpha)
        return tuple(min(1.0, (max(k, a * self.rows) + t) / self.rows)
                     for t, k in zip(self.rank_error, self.floor_rows, strict=True))

    def rows_needed(self) -> tuple[int, ...]:
        """Per column, ⌈k_j/α⌉: from this many rows in a group on, the target is the
        share α·n (the floor k_j no longer binds) and each side clips α·n ± T_j. Below it
        each side clips about k_j ± T_j rows (at least one, ties aside); below about
        2(k_j + T_j) rows the two bounds may cross."""
        return tuple(math.ceil(k / float(self.alpha)) for k in self.floor_rows)

    def to_json(self) -> dict[str, Any]:
        share = self.expected_clipped_share()
        return {
            "request": self.request.to_json(),
            "domains": [d.to_json() for d in self.domains],
            "alpha": str(self.alpha),
            "alpha_float": float(self.alpha),
            "mechanisms_per_group": self.mechanisms,
            "epsilon_each": self.epsilon_each,
            "failure_each": self.failure_each,
            "guarantee": self.guarantee.to_json(),
            "rank_error": list(self.rank_error),
            "rows": self.rows,
            "expected_clipped_share": None if share is None else list(share),
            "rows_needed": list(self.rows_needed()),
            "interval_level": self.request.interval_level,
            "rank_error_at_level": list(self.interval_rank_error),
            **({} if self.check is None else {"guarantee_check": self.check.to_json()}),
        }

    def table(self, columns: Sequence[str] | None = None) -> str:
        """The planner's printout: per column its grid, α, T_j and (with ``rows``) the
        share a side may clip at that many rows."""
        names = ([f"x{j}" for j in range(len(self.domains))] if columns is None
                 else [str(c) for c in columns])
        if len(names) != len(self.domains):
            raise ParameterError(f"{len(names)} column names for {len(self.domains)} domains")
        share = self.expected_clipped_share()
        rows_txt = "-" if self.rows is None else f"{self.rows:,}"
        gw = max(24, *(len(repr(d)) + 2 for d in self.domains))
        nw = max(16, *(len(n) + 2 for n in names))
        head = (f"{'column':<{nw}}{'grid':<{gw}}{'m':>14}{'alpha':>11}{'T (rows)':>12}"
                f"{'clip/side at ' + rows_txt:>24}{'rows needed':>14}")
        lines = [head, "-" * len(head)]
        needed = self.rows_needed()
        for j, (name, d) in enumerate(zip(names, self.domains, strict=True)):
            share_txt = "-" if share is None else f"{share[j]:.4%}"
            lines.append(f"{name:<{nw}}{d!r:<{gw}}{d.size:>14,}{float(self.alpha):>11.4g}"
                         f"{self.rank_error[j]:>12.1f}{share_txt:>24}{needed[j]:>14,}")
        g = self.guarantee
        lines += [
            "",
            f"{self.mechanisms} exponential mechanisms per group, epsilon each "
            f"{self.epsilon_each:.6g}; alpha = {self.alpha} per side "
            f"(coverage {self.request.coverage:g})",
            f"guarantee ({g.epsilon:.6g}, {g.delta:.3g})-DP, {g.neighbouring} neighbours: "
            f"{g.bound}",
            *([] if self.check is None else [
                f"re-derived by the independent check: ({self.check.epsilon:.6g}, "
                f"{self.check.delta:.3g}) by {self.check.route}"]),
            f"with probability >= 1 - {self.request.beta:g} per group, each side of column j "
            f"clips at most max(k_j, alpha*n) + T_j rows of a group's n (at least "
            f"max(k_j, alpha*n) - T_j less the rows of the bound's grid cell), "
            f"k_j = ceil(T_j) + 1",
            "rows needed: k_j/alpha for the share alpha to bind; below it each side clips "
            "about k_j rows, and below about 2(k_j + T_j) rows the bounds may cross",
        ]
        return "\n".join(lines)


def plan_bounds(request: BoundsRequest, domains: Sequence[Domain], *,
                rows: int | None = None) -> BoundsPlan:
    """The plan of a private-bounds run (nothing here looks at data).

    ε_each: the largest per-mechanism ε whose bounded-range composition over the 2d
    mechanisms of a group meets the (add/remove) budget, shrunk by 10⁻⁹; the guarantee is
    the accountant's value at ε_each (:func:`~dprect.core.accounting.composition_br`),
    mapped to replace-one by group privacy when asked. ``rows``: an optional public
    estimate of a group's row count, for the printout."""
    if not isinstance(request, BoundsRequest):
        raise ParameterError(f"request must be a BoundsRequest, got {type(request).__name__}")
    if isinstance(domains, Domain) or not isinstance(domains, Sequence) or not domains:
        raise ParameterError("domains must be a non-empty list (one domain per column)")
    doms = tuple(_check_bounds_domain(f"domains[{i}]", d) for i, d in enumerate(domains))
    if rows is not None:
        rows = check_positive_int(rows, "rows")
    alpha = request.alpha
    rounds = 2 * len(doms)
    eps_ar, delta_ar = add_remove_budget(request.epsilon, request.delta, request.neighbouring)
    eps_each = composition_br_epsilon(eps_ar, delta_ar, rounds, use_dp_accounting=False)
    eps_each *= _SHRINK
    g = composition_br(eps_each, rounds=rounds, delta=delta_ar, use_dp_accounting=False)
    if g.epsilon > eps_ar or g.delta > delta_ar:
        raise AssertionError("bounds planner produced a guarantee above the budget")
    if Neighbouring.parse(request.neighbouring, "neighbouring") is Neighbouring.REPLACE_ONE:
        g = replace_one(g)
        if g.epsilon > request.epsilon or g.delta > request.delta:
            raise AssertionError("bounds planner produced a guarantee above the budget")
    g = Guarantee(g.epsilon, g.delta, g.neighbouring,
                  f"{g.bound}; {rounds} exponential mechanisms per group, groups in parallel")
    sens = 1.0  # BoundsPlan.sensitivity
    log_term = [crmath.log(d.size) + crmath.log(rounds) - crmath.log(request.beta) for d in doms]
    rank_error = tuple(_up(2.0 * sens / eps_each * lt) for lt in log_term)
    unchecked = BoundsPlan(request=request, domains=doms, alpha=alpha, epsilon_each=eps_each,
                           guarantee=g, rank_error=rank_error, rows=rows)
    # the plan as it will execute, re-derived independently before anything is read
    return dataclasses.replace(unchecked, check=check_bounds_plan(unchecked))


# -- histograms ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Histogram:
    """One column of one group: sorted unique int64 grid indices and their int64 counts
    (each ≥ 1). Built by :func:`histogram` (numpy), or from an engine's grouped
    statistics (:meth:`dprect.core.statistic.CellBins.histogram`)."""

    keys: np.ndarray
    counts: np.ndarray

    def __post_init__(self) -> None:
        keys = np.asarray(self.keys)
        counts = np.asarray(self.counts)
        if keys.ndim != 1 or counts.ndim != 1 or len(keys) != len(counts):
            raise ParameterError("a histogram needs equally long one-dimensional keys and "
                                 "counts")
        if len(keys) and (keys.dtype.kind not in "iu" or counts.dtype.kind not in "iu"):
            raise ParameterError("histogram keys and counts must be integers")
        keys = keys.astype(np.int64)
        counts = counts.astype(np.int64)
        if len(keys) and ((np.diff(keys) <= 0).any() or (counts <= 0).any()
                          or int(keys[0]) < 0):
            raise ParameterError("histogram keys must be sorted, unique grid indices >= 0 "
                                 "and counts >= 1")
        _set(self, "keys", keys)
        _set(self, "counts", counts)

    @property
    def total(self) -> int:
        """n: the rows counted."""
        return int(self.counts.sum())

    @classmethod
    def empty(cls) -> Histogram:
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


def histogram(values: np.ndarray, domain: Domain) -> Histogram:
    """The histogram of one column's values on ``domain`` (numpy: encode, then
    ``np.unique``). NaN values are skipped (a row-local filter; callers normally drop such
    rows first); ±inf are encoded as the domain encodes them."""
    _check_bounds_domain("domain", domain)
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[~np.isnan(x)]
    if not len(x):
        return Histogram.empty()
    keys, counts = np.unique(domain.encode(x).astype(np.int64), return_counts=True)
    return Histogram(keys, counts.astype(np.int64))


# -- the mechanism -------------------------------------------------------------------------
def bound_pieces(hist: Histogram, grid_size: int, alpha: Fraction, side: BoundSide,
                 epsilon_each: float = 1.0, floor: int = 0) -> Pieces:
    """The exponential mechanism's law for one bound as constant-depth pieces.

    The badness at i is the distance from the target t = max(``floor``, α·n) to the range
    [least(i), most(i)] of the counts a bound inside cell i clips (the cell's own rows
    clipped or not): max(0, least(i) − t, t − most(i)). Piece depth = D − b·badness
    (α = a/b, D the largest b·badness over the grid), so the law is
    P(i) ∝ exp(c·depth(i)) with c = ε_each/(2b) (sensitivity 1). ``epsilon_each`` only sets
    ``Pieces.epsilon`` = 2c (as a float) so that :meth:`Pieces.probabilities` is this law
    (tests and audits); the draw takes the exact c."""
    m = int(grid_size)
    a, b = alpha.numerator, alpha.denominator
    if not 0 < alpha < 1:
        raise ParameterError(f"alpha must be in (0, 1), got {alpha}")
    keys, counts = hist.keys, hist.counts
    if len(keys) and int(keys[-1]) >= m:
        raise ParameterError(f"a histogram key is outside the grid of {m} points (an internal "
                             "invariant: every key is a grid index)")
    if side not in ("lower", "upper"):
        raise ParameterError(f"side must be 'lower' or 'upper', got {side!r}")
    n = int(hist.total)
    if isinstance(floor, bool) or not isinstance(floor, int) or floor < 0:
        raise ParameterError(f"floor must be an integer >= 0, got {floor!r}")
    clip = max(b * floor, a * n)  # b × the rows a side aims to clip
    # depths in units of 1/b rows are int64 while b·max(n, floor) < 2^62, else exact Python
    # integers (object arrays): the same law for a group of any size, never a refusal
    wide = b * max(n, floor) >= MAX_WEIGHTED_ROWS
    u = len(keys)
    if u == 0:
        starts = np.zeros(1, dtype=np.uint64)
        sizes = np.array([m], dtype=np.uint64)
        below = np.zeros(1, dtype=np.int64)  # #{idx < piece}
        upto = np.zeros(1, dtype=np.int64)  # #{idx ≤ piece}
    else:
        below_incl = np.cumsum(counts)  # #{idx <= k_r}
        ukeys = keys.astype(np.uint64)
        gap_sizes = ukeys[1:] - ukeys[:-1] - np.uint64(1)
        # head gap, then point, gap, point, …, point, then the tail gap (empty ones dropped)
        starts = np.empty(2 * u + 1, dtype=np.uint64)
        sizes = np.empty(2 * u + 1, dtype=np.uint64)
        below = np.empty(2 * u + 1, dtype=np.int64)
        upto = np.empty(2 * u + 1, dtype=np.int64)
        starts[0], sizes[0], below[0], upto[0] = 0, ukeys[0], 0, 0
        starts[1::2], sizes[1::2] = ukeys, 1
        below[1::2], upto[1::2] = below_incl - counts, below_incl
        starts[2:-1:2], sizes[2:-1:2] = ukeys[:-1] + np.uint64(1), gap_sizes
        below[2:-1:2] = upto[2:-1:2] = below_incl[:-1]
        starts[-1] = ukeys[-1] + np.uint64(1)
        sizes[-1] = np.uint64(m - 1 - int(keys[-1]))
        below[-1] = upto[-1] = n
        keep = sizes > 0
        starts, sizes, below, upto = starts[keep], sizes[keep], below[keep], upto[keep]
    # the rows a bound in this cell clips lie in [least, most]: the cell's own rows may be
    # clipped or not, as the bound moves inside the cell (docs/privacy.md §9, the score)
    if wide:
        below, upto = below.astype(object), upto.astype(object)
    if side == "lower":
        least, most = below, upto
    else:
        least, most = n - upto, n - below
    bb, target = (b, clip) if wide else (np.int64(b), np.int64(clip))
    weighted = np.maximum(0, np.maximum(least * bb - target, target - most * bb))
    depths = weighted.max() - weighted
    if not wide:
        depths = depths.astype(np.int64)
    c = Fraction(epsilon_each) / (2 * b)
    return Pieces(starts, sizes, depths, 2.0 * float(c), m)


def draw_bound(hist: Histogram, plan: BoundsPlan, column: int, side: BoundSide,
               rng: RandomSource) -> int:
    """One private bound: a grid index of column ``column`` drawn exactly from the
    exponential mechanism (module docstring)."""
    pieces = bound_pieces(hist, plan.domains[column].size, plan.alpha, side,
                          plan.epsilon_each, plan.floor_rows[column])
    return sample_unimodal(pieces, plan.c, rng)


@dataclass(frozen=True)
class BoundsResult:
    """Private lower and upper bounds per group and column.

    ``lower``/``upper`` are in feature units ([group][column]: the smallest float of the
    lower bound's grid cell, the largest of the upper's), ``lower_index``/``upper_index``
    the grid indices drawn. ``groups`` is ``[None]`` for an ungrouped run. A pair with
    lower > upper can only occur in a group with few rows (about 2(k_j + T_j) or fewer): the
    bounds are released as drawn; check before clamping. A bound beyond the data (even
    ±inf on a :class:`~dprect.core.domains.FloatBins` column) is drawn with probability at
    most β/(2d) per bound once a group has k_j rows; below k_j rows it becomes likely."""

    columns: list[str]
    groups: list[Any]
    lower: list[list[float]]
    upper: list[list[float]]
    lower_index: list[list[int]]
    upper_index: list[list[int]]
    domains: list[Domain]
    guarantee: Guarantee
    plan: dict[str, Any] = field(default_factory=dict)
    seeded: bool = False

    @property
    def grouped(self) -> bool:
        return self.groups != [None]

    def rank_error(self, column: int) -> float | None:
        """The plan's T_λ of ``column`` (:attr:`BoundsPlan.interval_rank_error`): each
        bound's rows clipped lie within ±T_λ of its target, both sides together with
        probability ≥ the plan's ``interval_level``; None for a plan without it."""
        errors = self.plan.get("rank_error_at_level")
        return None if errors is None else float(errors[column])

    def rows(self) -> list[dict[str, Any]]:
        """One dict per (group, column) — group, column, lower, upper, rank_error — in
        draw order, for a CSV or Delta table."""
        return [{"group": g, "column": c, "lower": self.lower[gi][j],
                 "upper": self.upper[gi][j], "rank_error": self.rank_error(j)}
                for gi, g in enumerate(self.groups) for j, c in enumerate(self.columns)]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "columns": list(self.columns),
            "groups": list(self.groups),
            "bounds": [{"group": g, "column": c, "lower": self.lower[gi][j],
                        "upper": self.upper[gi][j], "lower_index": self.lower_index[gi][j],
                        "upper_index": self.upper_index[gi][j],
                        "rank_error": self.rank_error(j)}
                       for gi, g in enumerate(self.groups)
                       for j, c in enumerate(self.columns)],
            "domains": [d.to_json() for d in self.domains],
            "privacy": self.guarantee.to_json(),
            "plan": self.plan,
            "seeded": self.seeded,
        }
        if self.seeded:
            out["warning"] = SEEDED_WARNING
        return out

    def _forms(self, gi: int) -> dict[str, Any]:
        lo, hi = self.lower[gi], self.upper[gi]
        return {
            "opendp": {c: (lo[j], hi[j]) for j, c in enumerate(self.columns)},
            "tumult": {c: {"low": lo[j], "high": hi[j]} for j, c in enumerate(self.columns)},
            "diffprivlib": {"bounds": (list(lo), list(hi))},
        }

    def library_forms(self, group: Any = ...) -> dict[str, Any]:
        """The bounds in the forms other DP libraries take them.

        * ``"opendp"``: {column: (lower, upper)} — the ``bounds=`` of OpenDP's
          ``make_clamp`` (and of the measurements built on a clamped column), or the
          argument of the context API's ``.clamp((lower, upper))``, per column;
        * ``"tumult"``: {column: {"low": lower, "high": upper}} — the ``low=``/``high=`` of
          Tumult Analytics' ``QueryBuilder`` aggregations (``sum``, ``average``,
          ``variance``, ``stdev``, ``quantile``, …) per column;
        * ``"diffprivlib"``: {"bounds": ([lower per column], [upper per column])} — the
          ``bounds=`` of diffprivlib's models and tools (for one column,
          ``bounds=(lower, upper)``).

        For an ungrouped run (or with ``group`` naming one group) the value is one such
        dict; for a grouped run without ``group``, a dict {group: forms}. The values are
        floats: for an integer column in a library that wants integer bounds, round the
        lower bound down and the upper bound up. Check that lower ≤ upper and that both
        are finite before passing them on (see the class notes)."""
        if group is not ...:
            if group not in self.groups:
                raise ParameterError(f"group {group!r} is not one of the result's groups")
            return self._forms(self.groups.index(group))
        if not self.grouped:
            return self._forms(0)
        return {g: self._forms(gi) for gi, g in enumerate(self.groups)}


GroupBounds = tuple[list[list[float]], list[list[float]], list[list[int]], list[list[int]]]


#: about how many sampler calls a cell's two bounds make (measured: 2 to 3): a run
#: announces its cells × this (public), so that a process loads the compiled samplers
#: from its public size (:func:`~dprect.core.randomness.expect_draws`)
DRAWS_A_CELL = 3


def draw_groups(plan: BoundsPlan, histograms: Mapping[tuple[Any, int], Histogram],
                groups: Sequence[Any], rng: RandomSource) -> GroupBounds:
    """The bounds of ``groups`` in order, columns in order, lower then upper, all from
    ``rng`` (:func:`run_bounds`' draws): per group and column the lower and upper values
    and grid indices (``[group][column]``)."""
    expect_draws(len(groups) * len(plan.domains) * DRAWS_A_CELL)  # public sizes
    empty = Histogram.empty()
    lower: list[list[float]] = []
    upper: list[list[float]] = []
    lower_index: list[list[int]] = []
    upper_index: list[list[int]] = []
    for g in groups:
        lo_v, hi_v, lo_i, hi_i = [], [], [], []
        for j, d in enumerate(plan.domains):
            hist = histograms.get((g, j), empty)
            if not isinstance(hist, Histogram):
                raise ParameterError(f"histograms[({g!r}, {j})] must be a Histogram")
            i_lo = draw_bound(hist, plan, j, "lower", rng)
            i_hi = draw_bound(hist, plan, j, "upper", rng)
            lo_i.append(i_lo)
            hi_i.append(i_hi)
            lo_v.append(d.lower_value(i_lo))
            hi_v.append(d.upper_value(i_hi))
        lower.append(lo_v)
        upper.append(hi_v)
        lower_index.append(lo_i)
        upper_index.append(hi_i)
    return lower, upper, lower_index, upper_index


def run_bounds(plan: BoundsPlan, histograms: Mapping[tuple[Any, int], Histogram],
               groups: Sequence[Any], rng: RandomSource, columns: Sequence[str]
               ) -> BoundsResult:
    """Draw the private bounds of every (group, column).

    ``histograms[(group, j)]`` is column j's histogram within ``group`` (``group`` None for
    an ungrouped run, with ``groups=[None]``); a missing entry is an empty histogram (a
    group without rows is fine: its bounds are drawn all the same), and entries for groups
    not in ``groups`` are ignored (nothing about them is released). ``groups`` is the
    PUBLIC list of groups, in the order of the draws (never read it from the data).
    Draws: groups in order, columns in order, lower then upper."""
    if not isinstance(plan, BoundsPlan):
        raise ParameterError(f"plan must be a BoundsPlan, got {type(plan).__name__}")
    if not isinstance(rng, RandomSource):
        raise ParameterError(f"rng must be a RandomSource, got {type(rng).__name__}")
    cols, group_list = checked_bounds(plan, groups, columns)
    return bounds_result(plan, cols, group_list,
                         draw_groups(plan, histograms, group_list, rng), rng.seeded)


def checked_bounds(plan: BoundsPlan, groups: Sequence[Any], columns: Sequence[str]
                   ) -> tuple[list[str], list[Any]]:
    """A run's column names and public groups, checked against the plan (parameters
    only): as many columns as domains, none twice; no group twice (none at all: a private
    selection kept none)."""
    if not isinstance(plan, BoundsPlan):
        raise ParameterError(f"plan must be a BoundsPlan, got {type(plan).__name__}")
    cols = [str(c) for c in columns]
    if len(cols) != len(plan.domains):
        raise ParameterError(f"{len(cols)} column names for {len(plan.domains)} domains")
    if len(set(cols)) != len(cols):
        raise ParameterError("a column is named twice")
    group_list = list(groups)  # [None] when ungrouped; [] when a private selection kept none
    if (i := repeat_at(group_list)) is not None:
        raise ParameterError(f"group {group_list[i]!r} is listed twice")
    return cols, group_list


def bounds_result(plan: BoundsPlan, columns: list[str], groups: list[Any],
                  drawn: GroupBounds, seeded: bool) -> BoundsResult:
    """The result of the bounds ``drawn`` for every group (:func:`draw_groups`, of one
    stream or of blocks of groups drawn apart), under the plan's guarantee."""
    lower, upper, lower_index, upper_index = drawn
    return BoundsResult(columns=columns, groups=groups, lower=lower, upper=upper,
                        lower_index=lower_index, upper_index=upper_index,
                        domains=list(plan.domains), guarantee=plan.guarantee,
                        plan=plan.to_json(), seeded=seeded)


__all__ = ["COVERAGE_DENOMINATOR", "MAX_WEIGHTED_ROWS", "BoundsPlan", "BoundsRequest",
           "BoundsResult", "GroupBounds", "Histogram", "bound_pieces", "bounds_result",
           "checked_bounds", "coverage_alpha", "draw_bound", "draw_groups",
           "histogram", "plan_bounds", "run_bounds"]
