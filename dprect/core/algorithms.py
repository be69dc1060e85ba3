"""The algorithms, written once over the engine seam (:mod:`dprect.core.engine`).

* :func:`run_randmargins` — RandMargins for general rectangles (docs/algorithm.md §2; R = 2d
  rounds, or R = d hi-rounds for the paper's origin-anchored class). Round t = (j, s):
  draw N_t from the margin law; B_t = the first N_t points of the remaining set ordered
  from side s, padded with virtual points at the far end of the grid (index 0 for hi,
  m_j − 1 for lo; counted, never materialised); D_t = the last Δ points of B_t, i.e. the
  engine's ranks [N_t − Δ, N_t); p_t = IP_ε(D_t); remove every remaining
  point with y_j ≥ p_t (hi) or y_j ≤ p_t (lo) — non-strict, as the proof needs. An axis
  with tie bits b > 0 (the plan's choice, :mod:`dprect.core.ties`) runs the IP and the cut
  on its refined grid (m·2^b points; a float-order axis keeps its 2^64 keys, the low b
  breaking ties), where y_j is the row's refined sort value, and reports the value part
  of p_t (:func:`~dprect.core.ties.value_part`); the engine refines its rows first
  (``set_ties``).
* :func:`run_composition` — the composition baseline (paper §1.2): each round is
  IP_ε₀ of the first Δ₀ points of ALL positives in its order (padded); nothing is removed.
* :func:`run_quantiles` — the quantile box (issue #44, :mod:`dprect.core.quantile_box`):
  per axis a private centre and two sides, each aimed at a target of clipped rows; no cut.
* :func:`run_nonprivate_bounding_box` — the exact bounding box of the positives.
  **NOT differentially private**; a reference for benchmarks on public or synthetic data.

Randomness is drawn only here and only in a fixed order — ``auto``'s private count of the
positives first when its plan is pending (:func:`resolve_auto`: the engines' exact counts
are equal, so the choice is too), then round by round N_t and the IP's draws — which is
what makes every engine return the identical rectangle for the same seed.

``trace`` (tests and benchmarks only) collects per-round internals — data-dependent, so it
is never part of a result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dprect.core.contest import Tally, scores, select
from dprect.core.domains import Domain, Side
from dprect.core.engine import Engine
from dprect.core.errors import ParameterError
from dprect.core.interior_point import interior_point
from dprect.core.planner import MethodPlan, Plan, RoundPlan
from dprect.core.quantile_box import centre_query, run_quantile_box, side_target
from dprect.core.randomness import RandomSource
from dprect.core.result import FitResult
from dprect.core.ties import refined, value_part


@dataclass(frozen=True)
class RoundTrace:
    """Internals of one round (test and benchmark use only: data-dependent)."""

    axis: int
    side: Side
    block_size: int  # N_t (Δ₀ for the composition baseline)
    threshold: int  # p_t, a grid index
    window_min: int  # min D_t (grid index, pads included)
    window_max: int
    real_points: int  # points of D_t that are data, not pads

    @property
    def failed(self) -> bool:
        """The IP missed [min D_t, max D_t]."""
        return not self.window_min <= self.threshold <= self.window_max


@dataclass(frozen=True)
class Rectangle:
    """A rectangle in grid indices: lo[j] ≤ x_j ≤ hi[j]. Empty if any lo[j] > hi[j]."""

    lo: tuple[int, ...]
    hi: tuple[int, ...]

    def to_units(self, domains: list[Domain]) -> tuple[list[float], list[float]]:
        lower = [d.lower_value(i) for d, i in zip(domains, self.lo, strict=True)]
        upper = [d.upper_value(i) for d, i in zip(domains, self.hi, strict=True)]
        return lower, upper


def _window(engine: Engine, domain: Domain, r: RoundPlan, stop: int) -> tuple[np.ndarray, int]:
    """D_t: grid indices of its real points (ranks [stop − Δ, stop) of the remaining points
    from side r.side) and the number of virtual pads that complete it to Δ points, all at
    the far end of the grid (index 0 for hi, m − 1 for lo). Pads are counted, never
    materialised, so Δ costs no memory beyond the real points."""
    real = domain.to_index(engine.window(r.axis, r.side, stop, r.ip_size))
    return real, r.ip_size - len(real)


def _pad_index(domain: Domain, side: Side) -> int:
    return 0 if side == "hi" else domain.size - 1


def _interior_point(engine: Engine, domain: Domain, r: RoundPlan, stop: int, epsilon: float,
                    rng: RandomSource, trace: list[RoundTrace] | None) -> int:
    """p_t = IP_ε(D_t), D_t the window ending at rank ``stop`` plus its virtual pads."""
    real, pads = _window(engine, domain, r, stop)
    pad_index = _pad_index(domain, r.side)
    p = interior_point(real, epsilon=epsilon, grid_size=domain.size, rng=rng,
                       pad_count=pads, pad_index=pad_index)
    if trace is not None:
        ends = [int(real.min()), int(real.max())] if len(real) else []
        ends += [pad_index] if pads else []
        trace.append(RoundTrace(r.axis, r.side, stop, p, min(ends), max(ends), len(real)))
    return p


def _assemble(domains: list[Domain], found: dict[tuple[int, Side], int]) -> Rectangle:
    lo = tuple(found.get((j, "lo"), 0) for j in range(len(domains)))
    hi = tuple(found.get((j, "hi"), d.size - 1) for j, d in enumerate(domains))
    return Rectangle(lo, hi)


def run_randmargins(engine: Engine, domains: list[Domain], plan: MethodPlan,
                    rng: RandomSource, trace: list[RoundTrace] | None = None) -> Rectangle:
    """RandMargins (docs/algorithm.md §2, ties §8) on the engine's positives."""
    ties = plan.tie_breaker(domains)
    if ties.active:
        engine.set_ties(ties)
    found: dict[tuple[int, Side], int] = {}
    for r in plan.rounds:
        assert r.law is not None
        domain = refined(domains[r.axis], r.tie_bits)
        block = r.law.sample(rng)  # N_t ≥ Δ, independent of the data
        p = _interior_point(engine, domain, r, block, plan.ip_epsilon, rng, trace)
        engine.cut(r.axis, r.side, domain.cut_threshold(p, r.side))
        found[(r.axis, r.side)] = value_part(domain, p, r.side)  # a base grid index
    return _assemble(domains, found)


def run_composition(engine: Engine, domains: list[Domain], plan: MethodPlan,
                    rng: RandomSource, trace: list[RoundTrace] | None = None) -> Rectangle:
    """The composition baseline: IP of the first Δ₀ positives of each order, no removal."""
    found: dict[tuple[int, Side], int] = {}
    for r in plan.rounds:
        domain = domains[r.axis]
        p = _interior_point(engine, domain, r, r.ip_size, plan.ip_epsilon, rng, trace)
        found[(r.axis, r.side)] = p
    return _assemble(domains, found)


def run_quantiles(engine: Engine, domains: list[Domain], plan: MethodPlan,
                  rng: RandomSource, positives: int | None = None,
                  trace: list | None = None) -> Rectangle:
    """The quantile box of ``plan`` (its rates and decay are the exact rationals the plan
    states, :func:`~dprect.core.planner._plan_quantiles`); each side aims at
    ⌊target_miss·N/R⌋ clipped rows, N = ``positives`` (the plan's public estimate or
    auto's released count; no target without it)."""
    d = plan.details
    origin = _origin(plan)
    target = side_target(float(d.get("target_miss") or 0.0), positives, len(plan.rounds),
                         Fraction(d["side_epsilon"]))
    lo, hi = run_quantile_box(
        engine, domains, origin=origin,
        centre_rate=Fraction(d["side_epsilon"]) if origin else Fraction(d["centre_rate"]),
        side_epsilon=Fraction(d["side_epsilon"]), target=target, rng=rng,
        decay=Fraction(d["decay"]),
        aimed_rate=Fraction(d["aimed_rate"]) if d.get("aimed_rate") else None,
        aimed_decay=Fraction(d["aimed_decay"]),
        trace=trace)
    return Rectangle(lo, hi)


def _origin(plan: MethodPlan) -> bool:
    """Whether a quantile box's plan has the origin shape (public centre 0, no centre drawn)."""
    return plan.details.get("centre_rate") is None


def box_first_query(plan: MethodPlan, domains: list[Domain]) -> list[np.ndarray] | None:
    """The first histogram query of ``plan``'s run when it is public before ``auto``'s
    count: the quantile box's centres' coarse thresholds
    (:func:`~dprect.core.quantile_box.centre_query`). None for another method, or the
    origin shape, whose one query is its sides' — candidates aimed by a target drawn from
    the count."""
    if plan.method != "quantiles" or _origin(plan):
        return None
    return centre_query(domains)


def run_nonprivate_bounding_box(engine: Engine, domains: list[Domain]) -> Rectangle:
    """The exact bounding box of the positives. NOT differentially private.

    With no positives it returns the empty rectangle lo = m − 1, hi = 0 on every axis.
    """
    lo, hi = [], []
    for j, domain in enumerate(domains):
        low = domain.to_index(engine.window(j, "lo", 1, 1))
        high = domain.to_index(engine.window(j, "hi", 1, 1))
        lo.append(int(low[0]) if len(low) else domain.size - 1)
        hi.append(int(high[0]) if len(high) else 0)
    return Rectangle(tuple(lo), tuple(hi))


def resolve_auto(the_plan: Plan, positives: Callable[[], int], rng: RandomSource) -> Plan:
    """A pending ``auto`` plan (:attr:`Plan.pending`) resolved: the count of the positives
    (``positives()``, the engine's exact count of the rows it learns from, before any cut)
    plus its discrete Laplace noise — the FIRST draw of the run — and the choice at
    N = max(noisy count, 1) (:meth:`Plan.resolved`). A plan that is not pending is
    returned as it is, with nothing counted or drawn."""
    if not the_plan.pending:
        return the_plan
    assert the_plan.count is not None
    return the_plan.resolved(the_plan.count.draw(positives(), rng))


def run_contest(engine: Engine, domains: list[Domain], the_plan: Plan, rng: RandomSource,
                tally: Tally) -> tuple[Rectangle, str]:
    """``auto``'s contest (:mod:`dprect.core.contest`), its draws in a fixed order:
    composition at its share, the aimed box at its share (aimed at the released N), the
    negatives' count + DLap(b⁻), then the exact selection on score_j = FN_j/ñ⁺ + FP_j/ñ⁻.
    ``tally`` counts, engine-side and exactly, the negatives and each rectangle's
    positives outside and negatives inside; only the chosen rectangle and its method's
    name are returned (the scores, counts and the other rectangle stay here)."""
    contest, count = the_plan.contest, the_plan.count
    assert contest is not None and count is not None and count.noisy is not None
    n_pos = count.positives
    rects = [run_composition(engine, domains, contest.old, rng),
             run_quantiles(engine, domains, contest.box, rng, n_pos)]
    negatives, tallied = tally([(r.lo, r.hi) for r in rects])
    n_neg = contest.negatives.draw(negatives, rng).positives  # max(noisy, 1)
    j = select(scores(tallied, n_pos, n_neg), n_pos, n_neg, contest.select_epsilon, rng)
    return rects[j], (contest.old.method, contest.box.method)[j]


def run_plan(engine: Engine, domains: list[Domain], features: list[str], the_plan: Plan,
             rng: RandomSource, trace: list | None = None,
             positives: Callable[[], int] | None = None,
             tally: Tally | None = None) -> FitResult:
    """Run an already-made plan on an engine: ``auto``'s private count first if the plan
    is pending (:func:`resolve_auto`; ``positives`` counts the engine's rows, by default
    its ``remaining()``), then the chosen method's rounds (all noise drawn here, in round
    order), the rectangle in feature units, and the plan's guarantee. Where the resolved
    plan's contest runs (:attr:`Plan.contest_runs`) and the route gives a ``tally`` of
    its rows (:data:`~dprect.core.contest.Tally`), :func:`run_contest` picks the
    rectangle; without a tally the default choice runs (spending less than stated)."""
    if the_plan.pending:
        counter = positives if positives is not None else getattr(engine, "remaining", None)
        if counter is None:
            raise ParameterError("this engine cannot count its positives for auto's private "
                                 "count (give the plan a public estimate of the positives)")
        the_plan = resolve_auto(the_plan, counter, rng)
    chosen = the_plan.chosen
    method, parameters = chosen.method, the_plan.to_json()
    if the_plan.contest_runs and tally is not None:
        rect, method = run_contest(engine, domains, the_plan, rng, tally)
        parameters["contest_chose"] = method
    elif chosen.method == "quantiles":
        known = (the_plan.sizing.positives if the_plan.sizing.positives is not None else
                 the_plan.count.positives if the_plan.count is not None
                 and the_plan.count.noisy is not None else None)
        rect = run_quantiles(engine, domains, chosen, rng, known, trace=trace)
    elif chosen.method == "randmargins":
        rect = run_randmargins(engine, domains, chosen, rng, trace=trace)
    else:
        rect = run_composition(engine, domains, chosen, rng, trace=trace)
    lower, upper = rect.to_units(domains)
    return FitResult(
        features=list(features), lower=lower, upper=upper,
        lower_index=list(rect.lo), upper_index=list(rect.hi), domains=list(domains),
        method=method, privacy=chosen.guarantee, parameters=parameters, seeded=rng.seeded,
    )
