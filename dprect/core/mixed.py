"""Statistics of several mechanisms in ONE charge and ONE engine pass (issue #41; the
proof is docs/privacy.md §11b).

**The split.** A run asking for statistics of k mechanisms (e.g. ``mean`` of
:data:`~dprect.core.statistic.QUERY` and ``median``, ``p90`` of
:data:`~dprect.core.statistic.QUANTILES`) gives mechanism i the share

    ε_i = ε · w_i / Σ_k w_k

of the run's ε, ``w_i`` the public weight declared once in the registry
(:attr:`~dprect.core.statistic.Mechanism.weight`; all 1 today: equal shares), each
ε_i the largest float not above the exact rational, so Σ ε_i ≤ ε exactly. Each mechanism
is planned on its share alone (its own planner, its own guarantee-check entry) as a pure
(ε_i, 0)-DP mechanism; by basic composition the run is (Σ ε_i, 0) ⊆ (ε, 0)-DP, groups in
parallel as in each mechanism. :func:`dprect.core.guarantee_check.check_mixed_plan`
re-derives it before anything is read: every part's own check, every part within its
declared share, and the sum.

**One pass.** The engine counts one :class:`~dprect.core.statistic.StatisticsSpec` whose
columns are every mechanism's spec columns in turn (:func:`mixed_spec`: the same source
column counted once per mechanism, on that mechanism's grid), so the engines' primitives
read a source column more than once and nothing else changes; :func:`part_cells` hands
each mechanism its slice, renumbered from column 0.

**Streams.** Mechanism i draws from ``RandomSource.stream(s_i)``, ``s_i`` the run
source's i-th :meth:`~dprect.core.randomness.RandomSource.stream_seeds` entry, so the
parts are independent and a run of ONE mechanism (which never comes here) draws exactly
as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dprect.core.accounting import Guarantee
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import CheckReport, check_mixed_plan
from dprect.core.intervals import BELOW_ROW_NEED, any_below
from dprect.core.randomness import RandomSource
from dprect.core.statistic import STATISTICS, GroupedStatistics, Mechanism, StatisticsSpec, outputs

#: the bound a mixed run's guarantee states (docs/privacy.md §11b)
MIXED_BOUND = "basic composition of pure mechanisms (declared shares), groups in parallel"


def shares(epsilon: float, weights: Sequence[int]) -> tuple[float, ...]:
    """Each mechanism's ε: the largest float ≤ ε·w_i/Σw (exact rationals), so the shares
    never sum past ε."""
    if not weights or any(isinstance(w, bool) or not isinstance(w, int) or w < 1
                          for w in weights):
        raise ParameterError("the mechanisms' weights must be positive integers")
    total = sum(weights)
    out = []
    for w in weights:
        exact = Fraction(epsilon) * w / total
        f = float(exact)
        if Fraction(f) > exact:
            f = math.nextafter(f, 0.0)
        out.append(f)
    return tuple(out)


@dataclass(frozen=True)
class MixedPlan:
    """A run of several mechanisms: their names and declared weights, the run's ε and
    neighbouring relation, each mechanism's own plan on its share (same order), and the
    check's report (set by :func:`plan_mixed`)."""

    mechanisms: tuple[str, ...]
    weights: tuple[int, ...]
    epsilon: float
    neighbouring: str
    plans: tuple[Any, ...]
    check: CheckReport | None = None

    @property
    def guarantee(self) -> Guarantee:
        """(ε, 0)-DP: the sum of the parts' pure guarantees (re-derived by the check)."""
        return Guarantee(float(self.epsilon), 0.0, self.neighbouring, MIXED_BOUND)

    @property
    def statistics(self) -> tuple[str, ...]:
        """Every statistic the parts release (what a plot or a front end asks about)."""
        return tuple(s for p in self.plans for s in getattr(p, "statistics", ()))

    def to_json(self) -> dict[str, Any]:
        return {"mechanisms": list(self.mechanisms), "weights": list(self.weights),
                "epsilon": self.epsilon, "neighbouring": self.neighbouring,
                "shares": [p.guarantee.epsilon for p in self.plans],
                "check": None if self.check is None else self.check.to_json()}


def plan_mixed(mechanisms: Sequence[Mechanism], epsilon: float,
               plan_one: Callable[[Mechanism, float], Any]) -> MixedPlan:
    """The plan of a run of ``mechanisms`` (two or more, each once) for ``epsilon``:
    ``plan_one(mechanism, share)`` plans one on its :func:`shares` entry (pure, under the
    neighbouring relation the run asks: the first part's, which the check holds every
    part to); the result is checked (:func:`~dprect.core.guarantee_check.check_mixed_plan`)."""
    if len(mechanisms) < 2 or len({m.name for m in mechanisms}) != len(mechanisms):
        raise ParameterError("a mixed run needs two or more mechanisms, each once")
    weights = tuple(m.weight for m in mechanisms)
    plans = tuple(plan_one(m, e) for m, e in zip(mechanisms, shares(epsilon, weights),
                                                 strict=True))
    neighbouring = plans[0].guarantee.neighbouring
    plan = MixedPlan(tuple(m.name for m in mechanisms), weights, float(epsilon),
                     neighbouring, plans)
    return MixedPlan(plan.mechanisms, weights, plan.epsilon, neighbouring, plans,
                     check_mixed_plan(plan))


def mixed_spec(specs: Sequence[StatisticsSpec]) -> StatisticsSpec:
    """One spec counting every mechanism's spec columns in turn (module notes)."""
    return StatisticsSpec(tuple(c for s in specs for c in s.columns))


def repeated(columns: Sequence[Any], spec: StatisticsSpec) -> list[Any]:
    """A route's source columns (names, or the values read) repeated as the spec counts
    them: once per mechanism for a :func:`mixed_spec` (``columns`` in turn, k times for a
    spec of k·len(columns) columns), as they are for one mechanism's spec."""
    if not columns or len(spec.columns) % len(columns):
        raise ParameterError(f"{len(columns)} column(s) for a spec of "
                             f"{len(spec.columns)}")
    return [c for _ in range(len(spec.columns) // len(columns)) for c in columns]


def part_cells(cells: Mapping[tuple[int, int], Any], part: int, columns: int
               ) -> GroupedStatistics:
    """Mechanism ``part``'s cells of a :func:`mixed_spec` run over ``columns`` columns,
    its column indices from 0."""
    low = part * columns
    return {(g, j - low): c for (g, j), c in cells.items() if low <= j < low + columns}


#: every mechanism a statistic is drawn by, by its name (a mixed plan names its parts)
_MECHANISMS: dict[str, Mechanism] = {s.mechanism.name: s.mechanism for s in STATISTICS.values()}


@dataclass(frozen=True)
class MixedResult:
    """A mixed run's release: each mechanism's own result (``results``, the plan's order)
    under the run's one guarantee."""

    plan: MixedPlan
    results: tuple[Any, ...]

    @property
    def guarantee(self) -> Guarantee:
        return self.plan.guarantee

    def to_json(self) -> dict[str, Any]:
        """The plan, the guarantee and each part's own JSON (its ``to_json``), by
        mechanism."""
        return {"method": "+".join(self.plan.mechanisms), "plan": self.plan.to_json(),
                "privacy": self.guarantee.to_json(),
                "parts": {m: r.to_json() for m, r in zip(self.plan.mechanisms,
                                                         self.results, strict=True)}}

    #: as the other results name it too
    to_dict = to_json

    def rows(self) -> list[dict[str, Any]]:
        """One dict per (group, column) in draw order with every part's outputs and the
        flag (each part's ``rows()`` merged, in the plan's order: the parts share the run's
        groups and columns, and no two mechanisms of a mixed run release the same output).
        Every row has the keys of the released record's rows
        (:func:`dprect.release.aggregate_record.mixed_columns`, in its order): group,
        column, per mechanism every output of its statistics
        (:func:`~dprect.core.statistic.outputs` for the run's statistics), then the
        small-group flag :data:`~dprect.core.intervals.BELOW_ROW_NEED` of the parts'
        flags (:func:`~dprect.core.intervals.any_below`) — a statistic not asked is
        None, as in the record."""
        statistics = self.plan.statistics
        keys: dict[str, None] = {"group": None, "column": None}
        merged: dict[tuple[Any, Any], dict[str, Any]] = {}
        flags: dict[tuple[Any, Any], list[Any]] = {}
        for name, r in zip(self.plan.mechanisms, self.results, strict=True):
            keys.update(dict.fromkeys(outputs(_MECHANISMS[name], statistics)))
            for row in r.rows():
                cell = (row["group"], row["column"])
                merged.setdefault(cell, {}).update(row)
                if BELOW_ROW_NEED in row:
                    flags.setdefault(cell, []).append(row[BELOW_ROW_NEED])
        if flags:  # after the outputs, as a part's record row has it
            keys[BELOW_ROW_NEED] = None
            for cell, row in merged.items():
                row[BELOW_ROW_NEED] = any_below(flags.get(cell, ()))
        return [{k: row.get(k) for k in keys} for row in merged.values()]

    def result(self, mechanism: str) -> Any:
        """The part drawn by ``mechanism`` (its name)."""
        return self.results[self.plan.mechanisms.index(mechanism)]


def draw_mixed(plan: MixedPlan, mechanisms: Sequence[Mechanism],
               cells: Mapping[tuple[int, int], Any], group_names: Sequence[Any],
               columns: Sequence[str], rng: RandomSource) -> MixedResult:
    """Every part drawn from its slice of ``cells`` (:func:`part_cells`) with its own
    stream of ``rng`` (module notes)."""
    return draw_parts(plan, mechanisms, rng, lambda i, m, p, stream: m.draw(
        p, part_cells(cells, i, len(columns)), group_names, columns, stream))


def draw_parts(plan: MixedPlan, mechanisms: Sequence[Mechanism], rng: RandomSource,
               draw: Callable[[int, Mechanism, Any, RandomSource], Any]) -> MixedResult:
    """Every part ``i`` drawn by ``draw(i, mechanism, its plan, its stream)``, each with
    its own stream of ``rng`` (one seed per part, in the plan's order): the draws from
    merged cells (:func:`draw_mixed`) or in the executors
    (:mod:`dprect.engines.spark.executor_draws`) alike."""
    if tuple(m.name for m in mechanisms) != plan.mechanisms:
        raise ParameterError("the mechanisms do not match the mixed plan's")
    seeds = rng.stream_seeds(len(mechanisms))
    return MixedResult(plan, tuple(
        draw(i, m, p, RandomSource.stream(seed))
        for i, (m, p, seed) in enumerate(zip(mechanisms, plan.plans, seeds, strict=True))))


__all__ = ["MIXED_BOUND", "MixedPlan", "MixedResult", "draw_mixed", "draw_parts", "mixed_spec",
           "part_cells", "plan_mixed", "repeated", "shares"]
