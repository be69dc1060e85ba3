"""The planner: from a total budget to every parameter of a run (docs/algorithm.md §6).

Input: the total (ε̃, δ̃), the features' domains, a failure target β for the whole run, the
rectangle shape and a method. Nothing here looks at data.

* The IP failure target per round and side is β_IP = β/(2R): the run "fails" if any of the
  2R one-sided IP failures happens (union bound), and only then may the rectangle leave
  the true one or misclassify more than Σ N_t positives.
* RandMargins (refined accounting, issue #12): for every staircase ratio ρ on a grid of
  rationals {1/100, …, 99/100}, find the largest per-round ε such that some k and δ split
  meets (ε̃, δ̃) by one of the four refined bounds — pure, Azuma, bounded range (BR) and BR
  with the CKS conversion (:func:`~dprect.core.accounting.refined_epsilon`);
  Δ_t = interior_point_size(ε, β_IP, m_t); the predicted misclassified positives are
  Σ_t (E[N_t] − Δ_t/2). Keep the best ρ. The checked inverse costs milliseconds (CKS in
  60-digit arithmetic), so the ratios are ranked by the float estimate, a lower bound on
  each prediction, and checked in that order until none left can win: the same plan as an
  exhaustive check (:func:`~dprect.core.accounting.refined_estimate` looks only at the k
  that can win: at d = 4096 about 1.6 s, docs/results.md §3).
* RandMargins (paper accounting): δ = δ̃/(R + 2), ε = ε̃/(70·ln(1/δ)), the paper's Laplace
  margin law; same prediction formula. Unchanged by the bounded-range accounting.
* Composition baseline: the largest ε₀ meeting (ε̃, δ̃) by the bounded-range composition of
  R rounds (:func:`~dprect.core.accounting.composition_br`): basic R·ε₀, or
  ρ = R·ε₀²/8 zCDP converted by Canonne–Kamath–Steinke or Bun–Steinke, whichever is
  smallest; prediction Σ_t Δ₀_t/2.
* ``auto`` runs RandMargins (refined) and composition and picks the smaller prediction
  (:func:`_safe_choice`). Without a public estimate N of the positives, when the choice
  depends on N (exactly when RandMargins is chosen at N = ∞, :mod:`dprect.core.auto_count`)
  both candidates are planned at (ε − ε_c, δ), ε_c = ε/1000 spent on a private count of
  the positives drawn first; the run chooses at N = max(count, 1) (:meth:`Plan.resolved`).
* ``auto``'s contest (issue #44, :mod:`dprect.core.contest`): a counting plan with the
  quantile box also plans composition and the aimed box at their shares inside its one
  statement; where :func:`contest_fires` holds at the released N both run and an exact
  selection on their measured balanced error picks one (docs/algorithm.md §10).
* Every per-round ε is shrunk by 10⁻⁹ and the stated guarantee recomputed from it by the
  accountant (its ``bound`` names the bound used), then checked against the request.

**Plans do not depend on optional packages.** dp-accounting (a dev-only cross-check of the
composition bound, in the tests) is never asked at plan time: ``use_dp_accounting=False``.
The same request gives the same plan wherever it is made.

**Plan-time limits** (:data:`MAX_IP_SIZE`, :data:`MAX_EXPECTED_MARGIN`). A method whose
rounds would need an interior-point input Δ above ``MAX_IP_SIZE`` or expect a block
E[N_t] above ``MAX_EXPECTED_MARGIN`` is not planned: ``auto`` picks the other method if
that one is within the limits, and otherwise (or when that method was asked for) the
planner raises a one-line :class:`ParameterError` naming ε, the limit and what to change.
This happens before any budget is reserved or any data is read, wherever a plan is made
(API, CLI, Spark jobs): the limits depend only on the public request.

Replace-one neighbours: the planner plans the add/remove budget whose group-privacy image
is the requested one (:func:`dprect.core.accounting.add_remove_budget`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Unpack

from dprect.core import crmath
from dprect.core.accounting import (
    Guarantee,
    RefinedChoice,
    add_remove_budget,
    composition_br,
    composition_br_epsilon,
    escape_probability,
    paper_bound,
    refined_epsilon,
    refined_estimate,
    refined_guarantee,
    replace_one,
)
from dprect.core.auto_count import AUTO_COUNT_SHARE, PrivateCount, float_up
from dprect.core.contest import CONTEST_PRICE, CONTEST_RATIO, contest_split
from dprect.core.domains import (
    Domain,
    FloatOrder,
    GridArg,
    Side,
    check_dims,
    feature_names,
    resolve_domains,
)
from dprect.core.errors import ParameterError
from dprect.core.expectation import DEFAULT_TARGET_SHARE, Expectation, Sizing, count_text
from dprect.core.guarantee_check import CheckReport, check_contest_plan, check_fit_plan
from dprect.core.interior_point import interior_point_size
from dprect.core.margins import LaplaceLaw, MarginLaw, StaircaseLaw
from dprect.core.quantile_box import (
    AIM_SIDE_SHARE,
    AIM_TOTAL_SHARE,
    AIMED_DECAY,
    AIMED_SCORE,
    AIMED_STEPS_PER_OCTAVE,
    coarse_bins,
    overshoot_bound,
    overshoot_steps,
    predicted_axis_clip,
    predicted_clip,
    quantile_decay,
    side_target,
    widening,
)
from dprect.core.request import (
    Accounting,
    BudgetOptions,
    MarginLawName,
    Method,
    Neighbouring,
    PlanRequest,
    Shape,
    make_request,
)
from dprect.core.ties import TieBreaker, refined_size, tie_bits
from dprect.core.validation import check_positive_int

RHO_GRID = tuple(Fraction(i, 100) for i in range(1, 100))

# -- plan-time limits (defined here only; see the module docstring) -------------------------
#: The largest interior-point input Δ (real points and virtual pads) a plan may use: the
#: size the exact IP sampler is built and benchmarked for (benchmarks/interior_point.py;
#: about 40 ms per call at Δ = 10^6, holding Δ grid indices in memory). Δ ≈ (4/ε)·ln(m/β)
#: per round, so a tiny per-round ε or a huge grid exceeds it.
MAX_IP_SIZE = 10**6
#: The largest expected block E[N_t] of one RandMargins round: a round may misclassify up
#: to N_t − 1 positives and an engine reads N_t ranks, so a plan expecting more than this
#: per round is useless and slow. (The composition baseline's block is Δ₀.)
MAX_EXPECTED_MARGIN = 10**8
#: ``auto`` picks an UNAIMED quantile box (t = 0: a small table, where the aim is not
#: affordable) over the choice between the other two only when, at N, that choice is
#: predicted to leave out at least (1 − this share) of N — a nearly empty rectangle — and
#: the box no more (:func:`_safe_choice`): an unaimed side's bounds reach past the data by
#: its prior's overshoot. An aimed box is also picked where its predicted miss exceeds
#: that choice's by at most :data:`AUTO_BOX_RELATIVE` times that miss and
#: :data:`AUTO_BOX_EXCESS` of N (or, with a stated target miss, is at most that miss plus
#: its aim)
AUTO_QUANTILES_GAP = 0.05
#: the share of the add/remove ε ``auto`` spends on its private count when the count
#: decides for the quantile box (not only between the other two: then
#: :data:`~dprect.core.auto_count.AUTO_COUNT_SHARE`): the box's choice flips at a few
#: hundred to a few thousand positives, where a count at ε/1000 (standard deviation
#: ≈ 1414/ε) cannot tell a table of 50 from one of 3,000; at ε/50 it is ≈ 71/ε
QUANTILES_COUNT_SHARE = Fraction(1, 50)
#: w, the weight of the independent union in an aimed box's predicted miss
#: (:func:`quantiles_predicted`: M^(1−w)·I^w between the nested M = max_j c_j and the
#: independent I) at a large aim, a·t ≫ AIMED_NOISE_NATS. A calibration, not a
#: derivation: the features' tails overlap by an amount no public parameter tells;
#: fitted on the aimed cells of docs/results.md §4.1 (a constant w = 0.55–0.7 put 7 of
#: the 9 within 25% or 0.02 — all but weather at ε ≤ 1; w = 1, independence, none)
AIMED_OVERLAP = 0.6
#: κ, the nats of a side's aim, a·t, over which its clip turns from noise-driven
#: (independent across the axes: w → 1) to tail-driven (w → AIMED_OVERLAP), e^{−a·t/κ}.
#: Also fitted on docs/results.md §4.1: 3 for the score |q − t| (before s25-brake); with
#: the bracket score (its sides clip at most about t, fewer at a small aim) κ = 2 puts
#: the 9 aimed cells of §4.1 within 25% or 0.02, κ = 3 eight (weather at ε = 1 planned
#: 0.128, measured 0.100), κ = 1 nine but two of the three shared-factor test cells off
AIMED_NOISE_NATS = 2.0
#: ``auto`` picks RandMargins only when it is predicted to misclassify at most this share
#: fewer positives than the composition baseline (:func:`_safe_choice`)
AUTO_MARGIN = 0.10
#: the aimed quantile box's allowance by default (issue #44; :func:`_safe_choice`,
#: :func:`box_excess_allowed`): ``auto`` takes the aimed box where its predicted miss b
#: exceeds the old choice's c by at most min(AUTO_BOX_RELATIVE·c, AUTO_BOX_EXCESS) (shares
#: of N). The excess b − c is a loss only where the tails the box trims hold no negatives
#: (separable classes): there the balanced error (FN + FP)/2 rises by (b − c)/2 and
#: nothing is gained. AUTO_BOX_EXCESS = 2 × 0.02 bounds that loss by issue #44's own
#: tolerance in balanced error (0.02); AUTO_BOX_RELATIVE = 1 by the old choice's own miss
#: again — the box never misses more than twice what the old choice loses to its noise,
#: and as N grows (c → 0, b → its aim's share) the old choice stays, with its one scan
#: (issue #43). Where the tails hold negatives (overlapping classes, docs/results.md §4.1)
#: the trimmed band's FP gain may exceed the excess; no public input tells, so the bound
#: is on the loss alone. Not fitted to a cell: diamonds at ε = 4 (b − c = 0.006) and
#: flights at ε = 1 (0.031 ≤ c = 0.043) pass it, flights at ε = 4 (0.062 = 5.1·c) does not
AUTO_BOX_EXCESS = 0.04
AUTO_BOX_RELATIVE = 1.0
_SHRINK = 1.0 - 1e-9  # per-round ε is shrunk this much so the stated bound holds after rounding


@dataclass(frozen=True)
class RoundPlan:
    """One round: which side of which axis, its grid size, Δ_t and margin law."""

    axis: int
    side: Side
    grid_size: int
    ip_size: int
    law: MarginLaw | None  # None for the composition baseline (B_t = first Δ₀ points)
    #: RandMargins: the axis's tie bits b (its IP and cuts run on m·2^b refined points,
    #: :mod:`dprect.core.ties`); 0 for the composition baseline, which never cuts
    tie_bits: int = 0
    #: the axis's domain is the float order (its keys run far past any data: the quantile
    #: box's model gives its sides no grid end, :func:`quantiles_predicted`)
    float_order: bool = False

    @property
    def predicted_misclassified(self) -> float:
        if self.law is None:
            return self.ip_size / 2
        return self.law.expected_misclassified

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"axis": self.axis, "side": self.side, "ip_size": self.ip_size}
        if self.law is not None:
            out["margin_law"] = self.law.to_json()
        if self.tie_bits:
            out["tie_bits"] = self.tie_bits
        return out


@dataclass(frozen=True)
class MethodPlan:
    """Everything one method needs to run, and what it predicts."""

    method: str
    accounting: str
    ip_epsilon: float
    ip_beta: float
    rounds: tuple[RoundPlan, ...]
    guarantee: Guarantee
    details: dict[str, Any] = field(default_factory=dict)
    #: the add/remove guarantee of one run when ``guarantee`` is its replace-one image
    #: (None: ``guarantee`` is add/remove itself) — what the classes' composition starts
    #: from (:func:`dprect.core.classes.classes_charge`)
    add_remove: Guarantee | None = None

    @property
    def add_remove_guarantee(self) -> Guarantee:
        """One run's add/remove guarantee (of which ``guarantee`` is the stated form)."""
        return self.guarantee if self.add_remove is None else self.add_remove

    @property
    def predicted_misclassified(self) -> float:
        if self.method == "quantiles":  # large N, no target: R sides of ~1/ε rows each
            return float(self.details["large_sample_clip"])
        return float(sum(r.predicted_misclassified for r in self.rounds))

    def tie_breaker(self, domains: Sequence[Domain]) -> TieBreaker:
        """The refinement the engine applies before this method runs (every b_j = 0 for
        the composition baseline and the paper's accounting)."""
        bits = [0] * len(domains)
        for r in self.rounds:
            bits[r.axis] = max(bits[r.axis], r.tie_bits)
        return TieBreaker.for_domains(domains, bits)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "accounting": self.accounting,
            "ip_epsilon": self.ip_epsilon,
            "ip_failure_per_side": self.ip_beta,
            "predicted_misclassified_positives": self.predicted_misclassified,
            "guarantee": self.guarantee.to_json(),
            **self.details,
            "rounds": [r.to_json() for r in self.rounds],
        }


@dataclass(frozen=True)
class ContestPlan:
    """``auto``'s contest's public constants (:mod:`dprect.core.contest`): the two fits at
    their shares (``old``: the composition baseline; ``box``: the aimed quantile box; each
    stating its own add/remove guarantee, without the count), the negatives' count (its
    discrete Laplace scale) and the selection's ε_s (an exact rational)."""

    old: MethodPlan
    box: MethodPlan
    negatives: PrivateCount
    select_epsilon: Fraction

    @property
    def select_epsilon_float(self) -> float:
        """ε_s rounded up to a float (what the accounting adds)."""
        return float_up(self.select_epsilon)

    def parts(self, count_epsilon: float) -> list[tuple[str, float, float]]:
        """(name, ε, δ) of each part, add/remove: the count, the negatives' count, the
        selection, the two fits."""
        return [("count of the positives", count_epsilon, 0.0),
                ("count of the negatives", self.negatives.epsilon, 0.0),
                ("selection", self.select_epsilon_float, 0.0),
                (self.old.method, self.old.guarantee.epsilon, self.old.guarantee.delta),
                (self.box.method, self.box.guarantee.epsilon, self.box.guarantee.delta)]

    def to_json(self) -> dict[str, Any]:
        return {"old": self.old.method,
                "fits": {c.method: {"guarantee": c.guarantee.to_json(),
                                    "ip_epsilon": c.ip_epsilon}
                         for c in (self.old, self.box)},
                "negatives_noise": {"epsilon": self.negatives.epsilon,
                                    "scale": str(self.negatives.scale)},
                "select_epsilon": str(self.select_epsilon),
                "utility": "-(FN/n+ + FP/n-): monotone, exponential mechanism, drawn exactly"}


@dataclass(frozen=True)
class Plan:
    """The chosen method's plan plus every candidate the planner compared.

    ``excluded`` names the methods left out by the plan-time limits, with the reason.
    ``sizing``: the public estimate of the positives (if any) and the target share of
    positives outside the rectangle behind the plan's expectation
    (:mod:`dprect.core.expectation`)."""

    chosen: MethodPlan
    candidates: dict[str, MethodPlan]
    request: dict[str, Any]
    excluded: dict[str, str] = field(default_factory=dict)
    sizing: Sizing = field(default_factory=Sizing)
    #: what the independent guarantee check re-derived for the chosen plan
    check: CheckReport | None = None
    #: ``auto`` without a public N, when the choice depends on N: the private count of
    #: the positives drawn first (:mod:`dprect.core.auto_count`); None: no count
    count: PrivateCount | None = None
    #: the check's report of every candidate (a counting plan may run either; "contest":
    #: the contest's, :func:`~dprect.core.guarantee_check.check_contest_plan`)
    checks: dict[str, CheckReport] = field(default_factory=dict)
    #: a counting plan's contest between composition and the aimed box, planned at its
    #: shares (:mod:`dprect.core.contest`); None: none planned
    contest: ContestPlan | None = None
    #: the contest runs (its public gate :func:`contest_fires` held at the released N)
    contest_runs: bool = False

    @property
    def pending(self) -> bool:
        """The choice waits for the private count (drawn first by the run)."""
        return self.count is not None and self.count.noisy is None

    def resolved(self, count: PrivateCount) -> Plan:
        """This plan with its count drawn and ``auto``'s choice made at N = max(count, 1)
        by :func:`_safe_choice` (post-processing of the released count)."""
        if (self.count is None or self.count.noisy is not None or count.noisy is None
                or count.scale != self.count.scale):
            raise ValueError("resolved() needs a pending plan and its drawn count")
        chosen = _safe_choice(list(self.candidates.values()), count.positives)
        runs = self.contest is not None and contest_fires(
            self.candidates, self.contest, chosen, count.positives)
        check = self.checks["contest"] if runs else self.checks.get(chosen.method, self.check)
        return dataclasses.replace(self, chosen=chosen, count=count, check=check,
                                   contest_runs=runs)

    def _outside(self, c: MethodPlan) -> float:
        """The positives ``c`` is expected to leave outside: its large-sample count, or,
        for the quantile box at the user's N, its prediction at N (its sides' aim is a
        share of N, :func:`quantiles_predicted`)."""
        if c.method == Method.QUANTILES.value and self.sizing.positives is not None:
            return predicted_at(c, self.sizing.positives)
        return c.predicted_misclassified

    def expectation(self) -> Expectation:
        """The chosen method's expectation."""
        return self.sizing.expect(self.chosen.method, self._outside(self.chosen))

    def to_json(self) -> dict[str, Any]:
        predictions = {name: self._outside(c) for name, c in self.candidates.items()}
        out: dict[str, Any] = {
            "request": self.request,
            "chosen": self.chosen.method,
            "plan": self.chosen.to_json(),
            "predictions": predictions,
            "bounds": {name: c.guarantee.bound for name, c in self.candidates.items()},
            "expectation": self.sizing.to_json(predictions),
        }
        if self.check is not None:
            out["guarantee_check"] = self.check.to_json()
        if self.excluded:
            out["excluded"] = dict(self.excluded)
        if self.count is not None:
            out["private_count"] = self.count.to_json()
            if self.count.noisy is not None:
                out["positives_noisy"] = self.count.noisy
        if self.contest is not None:
            out["contest"] = {**self.contest.to_json(), "runs": self.contest_runs}
        return out

    def count_line(self) -> str | None:
        """What ``auto`` spends on its private count (None when it spends nothing)."""
        if self.count is None:
            return None
        eps = float(self.request.get("epsilon", 0.0))
        share = ("1/1000" if "quantiles" not in self.candidates
                 or self.candidates["quantiles"].details.get("count_share") is None
                 else self.candidates["quantiles"].details["count_share"])
        text = (f"  auto (no --positives): spends epsilon {self.count.epsilon:.6g} "
                f"({share} of the add/remove epsilon) on a private count of the positives "
                f"(discrete Laplace, scale {float(self.count.scale):.6g}) drawn first, then "
                f"picks at N = max(count, 1); the methods run at the rest of epsilon={eps:g}")
        if self.count.noisy is not None:
            text += f"; the count released: {self.count.noisy:,}"
        return text

    def contest_line(self) -> str | None:
        """``auto``'s contest: its gate, its shares and, once the count is drawn, whether
        it runs (None when none is planned)."""
        c = self.contest
        if c is None:
            return None
        fit = c.old.guarantee
        text = (f"  auto's contest (docs/privacy.md §19), where at the released N "
                f"composition is kept, the aimed box is predicted to miss at most "
                f"{CONTEST_RATIO:g} times its positives and the split costs each at most "
                f"{100 * CONTEST_PRICE:g}% of N: composition and the aimed box each at "
                f"({fit.epsilon:.6g}, {fit.delta:.3g}), a count of the negatives at "
                f"epsilon {c.negatives.epsilon:.6g} (discrete Laplace, scale "
                f"{float(c.negatives.scale):.6g}) and an exact selection at epsilon "
                f"{float(c.select_epsilon):.6g} by FN/n+ + FP/n-; one rectangle returned")
        if self.count is not None and self.count.noisy is not None:
            text += "; runs: " + ("yes" if self.contest_runs else "no")
        return text

    def quantiles_line(self) -> str | None:
        """The quantile box's target and its predicted FP-side widening (None when the
        box is no candidate)."""
        box = self.candidates.get(Method.QUANTILES.value)
        if box is None:
            return None
        share = float(box.details.get("target_miss") or 0.0)
        n = self.sizing.positives if self.sizing.positives is not None else (
            self.count.positives if self.count is not None and self.count.noisy is not None
            else None)
        sides = len(box.rounds)
        alpha = Fraction(box.details["aim_side_share"])
        rule = (f"the larger of target_miss*N/{sides} and {float(alpha):g}*N where affordable"
                if share else f"{float(alpha):g}*N where affordable")
        t = 0
        if n is not None:
            t = side_target(share, n, sides, Fraction(box.details["side_epsilon"]))
            aim = (f"each of its {sides} sides aims at {count_text(t)} clipped rows (at "
                   f"N = {count_text(n)}; {rule})" if t else
                   f"each of its {sides} sides clips as few rows as its noise allows (at "
                   f"N = {count_text(n)} the aim {rule} is not affordable)")
        else:
            aim = f"each of its {sides} sides aims at {rule} (N: auto's count)"
        unaimed = (f"a side lands on average "
                   f"{float(box.details['overshoot_steps']):.2g} steps past its target "
                   f"step, a bound about {_big_percent(100 * box.details['widening'])}% "
                   f"farther from its axis's centre than the target's (more positives "
                   f"inside, and more negatives: the FP side)")
        a, mu = Fraction(box.details["aimed_rate"]), Fraction(box.details["aimed_decay"])
        if t:
            bound = overshoot_bound(a, t, mu)  # 0.0 once e^-(a*t) underflows (a huge aim)
            brake = (f"{f'<= {bound:.2g}' if bound > 0 else '< 1e-300'} (K more steps: "
                     f"times e^-{float(mu):g}K)")
        else:
            brake = f"<= e^-(a*t + {float(mu):g})/(1 - e^-{float(mu):g}), a = {float(a):.4g}"
        aimed = (f"an aimed side is charged for every row it clips beyond its target, and "
                 f"a step past the one holding its target row for the rows it leaves short; "
                 f"it lands more than one step (a factor 2^(1/{AIMED_STEPS_PER_OCTAVE}) of "
                 f"its offset from the centre) past its data's last row with probability "
                 f"{brake}")
        text = f"  quantiles: {aim}; {aimed if n is None or t else 'unaimed, ' + unaimed}"
        blind = quantiles_range(box, n) if n is not None and t else None
        if n is not None and blind is not None:
            per = 100 / max(n, 1)
            text += (f"\n  quantiles on the float order (no public range): its predicted "
                     f"miss, {per * quantiles_predicted(box, n):.3g}% of N, is a range, "
                     f"from {per * blind[0]:.3g}% (a side whose step holding its target "
                     f"row reaches past a hard edge clips nothing) to "
                     f"{per * blind[1]:.3g}% (its axes' clips independent): "
                     f"the plan sees neither the data's scale nor the shape of their tails")
        if len(self.candidates) > 1:  # auto: its rule (_safe_choice)
            if share:
                miss = ("its aim at N" if n is None else
                        f"{100 * quantiles_aim(box, n) / max(n, 1):.3g}% of N, its aim at N")
                text += (f"\n  auto picks the quantile box where its predicted miss is at "
                         f"most the other choice's plus its target miss ({miss})")
            else:
                text += (f"\n  auto picks the quantile box where its predicted miss "
                         f"exceeds the other choice's by at most min("
                         f"{'' if AUTO_BOX_RELATIVE == 1 else f'{AUTO_BOX_RELATIVE:g} x '}"
                         f"that choice's miss, {100 * AUTO_BOX_EXCESS:g}% of N) (the "
                         f"positives it may lose where the classes separate), or where "
                         f"that choice is nearly empty")
        return text


    def table(self) -> str:
        """A human-readable comparison of the candidates."""
        head = (f"{'method':<13}{'accounting':<12}{'eps/round':>11}{'IP size':>10}"
                f"{'margin law':>22}{'predicted miscl.':>18}  bound")
        lines = [head, "-" * len(head)]
        for name, c in self.candidates.items():
            sizes = sorted({r.ip_size for r in c.rounds})
            size_txt = str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}..{sizes[-1]}"
            law = c.rounds[0].law
            law_txt = "-" if law is None else law.summary
            mark = "*" if c is self.chosen else " "
            lines.append(
                f"{mark}{name:<12}{c.accounting:<12}{c.ip_epsilon:>11.5g}{size_txt:>10}"
                f"{law_txt:>22}{c.predicted_misclassified:>18.1f}  {c.guarantee.bound}"
            )
        for name, reason in self.excluded.items():
            lines.append(f" {name:<12}excluded: {reason}")
        g = self.chosen.guarantee
        lines.append(f"* chosen: {self.chosen.method}; guarantee ({g.epsilon:.6g}, {g.delta:.3g})"
                     f"-DP, {g.neighbouring} neighbours")
        if self.check is not None:
            lines.append(f"  re-derived by the independent check: ({self.check.epsilon:.6g}, "
                         f"{self.check.delta:.3g}) by {self.check.route}")
        said = self.count_line()
        if said is not None:
            lines.append(said)
        said = self.quantiles_line()
        if said is not None:
            lines.append(said)
        said = self.contest_line()
        if said is not None:
            lines.append(said)
        lines.append("")
        lines += self.sizing.table({name: self._outside(c)
                                    for name, c in self.candidates.items()},
                                   self.chosen.method)
        return "\n".join(lines)


def _big_percent(value: float) -> str:
    """A percentage that may be astronomically large (a side's widening at a tiny ε:
    2^(steps/4) − 1, up to 2^1000): whole below 10^6 (``484``), else three significant
    digits (``4.85e+257``)."""
    value = float(value)
    return f"{value:.0f}" if value < 1e6 else f"{value:.3g}"


def schedule(dims: int, shape: Shape | str) -> list[tuple[int, Side]]:
    """The public round order: (axis, side) pairs, lo then hi for each axis (general), or
    hi only (the paper's origin-anchored class)."""
    if Shape.parse(shape, "shape") is Shape.ORIGIN:
        return [(j, "hi") for j in range(dims)]
    return [(j, side) for j in range(dims) for side in ("lo", "hi")]


# -- RandMargins, refined accounting -----------------------------------------------------
def _refined_choice(eps_total: float, delta_total: float, q: float, rounds: int, *,
                    checked: bool = True) -> RefinedChoice:
    """The largest per-round ε meeting (ε̃, δ̃) by a refined bound (pure, Azuma, bounded
    range, bounded range with CKS), with its kind, k and δ₂ (``checked=False``: the float
    estimate, an upper bound, only for ranking); ε = 0.0 when none does (the plan-time
    limits then refuse it). Depends on nothing installed optionally."""
    inverse = refined_epsilon if checked else refined_estimate
    try:
        return inverse(eps_total, delta_total, q=q, rounds=rounds)
    except ParameterError:  # ε̃ so small that no positive per-round ε is representable
        return RefinedChoice(0.0, "pure", rounds, 0.0)


def _within_budget(g: Guarantee, eps_total: float, delta_total: float) -> Guarantee:
    """``g``, after checking that it is within the (add/remove) budget it was planned for."""
    if g.epsilon > eps_total or g.delta > delta_total:
        raise AssertionError("planner produced a guarantee above the budget")
    return g


_SizeLaws = dict[int, tuple[int, MarginLaw | None]]  # IP grid m·2^b -> (Δ, law)


def _ip_grid(domains: Sequence[Domain], axis: int, bits: Sequence[int] | None) -> int:
    """The size of the grid the interior point of a round on ``axis`` runs on: the axis's
    refined grid (:func:`~dprect.core.ties.refined_size`: m·2^b points on a grid axis, the
    same 2^64 keys on a float-order one; m without tie bits). Windows are sized for it,
    never for m alone: axes of different kinds share grid sizes but not tie bits."""
    return refined_size(domains[axis], bits[axis] if bits else 0)


def _ip_grids(domains: Sequence[Domain], bits: Sequence[int] | None) -> list[int]:
    """:func:`_ip_grid` of every axis, computed once per candidate (the ρ search asks
    for every round about a hundred times)."""
    return [_ip_grid(domains, axis, bits) for axis in range(len(domains))]


class _OverLimit(Exception):  # noqa: N818 — internal signal, never escapes the planner
    """A candidate plan exceeds a plan-time limit (``what`` is a phrase for the message)."""

    def __init__(self, what: str, excess: float) -> None:
        super().__init__(what)
        self.what = what
        self.excess = excess  # value / limit: the smallest one is reported


def _checked_ip_size(eps: float, ip_beta: float, m: int) -> int:
    """Δ = interior_point_size(ε, β_IP, m), or :class:`_OverLimit` above MAX_IP_SIZE (an
    estimate screens out sizes too large to compute in floating point)."""
    eps = float(eps)
    estimate = 4 * (crmath.log(m) - crmath.log(ip_beta)) / eps if eps > 0 else math.inf
    if not estimate <= 2 * MAX_IP_SIZE:  # also catches inf (ε underflowed to 0)
        amount = f"about {estimate:.3g}" if math.isfinite(estimate) else "unboundedly many"
        raise _OverLimit(f"interior-point inputs of {amount} values per round "
                         f"(limit MAX_IP_SIZE = {MAX_IP_SIZE:,})", estimate / MAX_IP_SIZE)
    size = interior_point_size(eps, ip_beta, m)
    if size > MAX_IP_SIZE:
        raise _OverLimit(f"interior-point inputs of {size:,} values per round "
                         f"(limit MAX_IP_SIZE = {MAX_IP_SIZE:,})", size / MAX_IP_SIZE)
    return size


def _size_laws(order: list[tuple[int, Side]], domains: list[Domain], eps: float,
               ip_beta: float, make_law, bits: Sequence[int] | None = None,
               sizes: Sequence[int] | None = None,
               distinct: Sequence[int] | None = None) -> _SizeLaws:
    """Δ and the margin law of every distinct grid the interior point runs on: the refined
    grid of m·2^b points of an axis with tie bits b (:func:`_ip_grid`), keyed by its size.
    Two axes with the same m but different tie bits (an IntegerRange and a FloatBins of
    2^16 points) get different windows. ``distinct``: the rounds' grid sizes without
    repeats, in the rounds' order (:func:`_distinct_grids`, computed once by a search that
    asks for many ε), else found from ``order``.

    Raises :class:`_OverLimit` when a Δ or an expected block exceeds the plan-time limits
    (the first grid in the rounds' order that does).
    """
    per_size: _SizeLaws = {}
    if distinct is None:
        distinct = _distinct_grids(order, sizes if sizes is not None
                                   else _ip_grids(domains, bits))
    for m in distinct:
        if m not in per_size:
            size = _checked_ip_size(eps, ip_beta, m)
            law = make_law(size)
            if law is not None and not law.mean <= MAX_EXPECTED_MARGIN:
                raise _OverLimit(
                    f"blocks of {law.mean:.3g} points per round in expectation "
                    f"(limit MAX_EXPECTED_MARGIN = {MAX_EXPECTED_MARGIN:,})",
                    law.mean / MAX_EXPECTED_MARGIN)
            per_size[m] = (size, law)
    return per_size


def _distinct_grids(order: list[tuple[int, Side]], sizes: Sequence[int]) -> list[int]:
    """The rounds' IP grid sizes without repeats, in the order the rounds first use them."""
    return list(dict.fromkeys(sizes[axis] for axis, _side in order))


def _build_rounds(order: list[tuple[int, Side]], domains: list[Domain], per_size: _SizeLaws,
                  bits: Sequence[int] | None = None,
                  sizes: Sequence[int] | None = None) -> tuple[RoundPlan, ...]:
    """The rounds; rounds on equal grid sizes share one (immutable) law. ``bits``: the
    axes' tie bits (RandMargins with refined accounting), else none."""
    rounds = []
    for axis, side in order:
        size, law = per_size[sizes[axis] if sizes is not None
                             else _ip_grid(domains, axis, bits)]
        rounds.append(RoundPlan(axis, side, domains[axis].size, size, law,
                                bits[axis] if bits else 0))
    return tuple(rounds)


def _rounds_with(order: list[tuple[int, Side]], domains: list[Domain], eps: float,
                 ip_beta: float, make_law) -> tuple[RoundPlan, ...]:
    return _build_rounds(order, domains, _size_laws(order, domains, eps, ip_beta, make_law))


def _predicted_from(order: list[tuple[int, Side]], domains: list[Domain], per_size: _SizeLaws,
                    bits: Sequence[int] | None = None,
                    sizes: Sequence[int] | None = None,
                    round_grids: Sequence[int] | None = None) -> float:
    """What ``MethodPlan.predicted_misclassified`` of these rounds returns (same values,
    same order, hence the same float), without building the rounds. ``round_grids``: each
    round's IP grid size in order (computed once by a search), else found from ``order``."""
    value = {m: RoundPlan(0, "hi", m, size, law).predicted_misclassified
             for m, (size, law) in per_size.items()}
    if round_grids is None:
        grid = sizes if sizes is not None else _ip_grids(domains, bits)
        round_grids = [grid[axis] for axis, _side in order]
    return float(sum(map(value.__getitem__, round_grids)))


def _plan_refined(eps_t: float, delta_t: float, domains: list[Domain],
                  order: list[tuple[int, Side]], ip_beta: float, margin_law: str,
                  continuous: frozenset[int] = frozenset()) -> MethodPlan:
    """Best refined-accounting plan: over the staircase ratios ρ ∈ :data:`RHO_GRID`, or the
    paper's law (whose ρ depends on Δ: a short fixed-point iteration).

    For a given ρ the accountant's inverse (:func:`refined_epsilon`) gives the largest
    per-round ε over the pure, Azuma, bounded-range and bounded-range-CKS bounds, every k
    and the best δ split. Checking that ε (the CKS conversion in 60-digit arithmetic) costs
    milliseconds, so the staircase search is a branch and bound: the float estimate
    (:func:`refined_estimate`, never below the checked ε) gives every ρ a lower bound on
    its prediction (a smaller ε means a larger Δ, and E[N] − Δ/2 grows with Δ); ratios are
    checked in the order of that bound until it cannot beat the best checked prediction.
    The result is the one an exhaustive check would give, ties going to the smaller ρ."""
    rounds = len(order)
    if margin_law != "staircase":
        return _plan_refined_laplace(eps_t, delta_t, domains, order, ip_beta, continuous)
    bits = tie_bits(domains, rounds, continuous)
    sizes = _ip_grids(domains, bits)
    round_grids = [sizes[axis] for axis, _side in order]  # once: asked for every ρ
    distinct = list(dict.fromkeys(round_grids))
    over: _OverLimit | None = None  # the mildest violation, if no candidate is in limits

    def note(exc: _OverLimit) -> None:
        nonlocal over
        if over is None or exc.excess < over.excess:
            over = exc

    bounds: list[tuple[float, int]] = []  # (lower bound on the prediction, index in grid)
    for i, rho in enumerate(RHO_GRID):
        q = StaircaseLaw(1, rho).rho * (1 - ip_beta)
        estimate = _refined_choice(eps_t, delta_t, q, rounds, checked=False)
        try:
            per_size = _size_laws(order, domains, estimate.epsilon * _SHRINK, ip_beta,
                                  lambda size, rho=rho: StaircaseLaw(size, rho), bits, sizes,
                                  distinct)
        except _OverLimit as exc:  # this ρ is out (the checked ε is no larger)
            note(exc)
            continue
        bounds.append((_predicted_from(order, domains, per_size, bits, sizes, round_grids), i))
    best: MethodPlan | None = None
    best_key = (math.inf, len(RHO_GRID))  # (prediction, index): the smallest wins
    for key in sorted(bounds):
        if key > best_key:  # no ρ from here on can reach the best checked prediction
            break
        rho = RHO_GRID[key[1]]
        q = StaircaseLaw(1, rho).rho * (1 - ip_beta)
        choice = _refined_choice(eps_t, delta_t, q, rounds)
        eps = choice.epsilon * _SHRINK
        try:
            per_size = _size_laws(order, domains, eps, ip_beta,
                                  lambda size, rho=rho: StaircaseLaw(size, rho), bits, sizes,
                                  distinct)
        except _OverLimit as exc:
            note(exc)
            continue
        checked_key = (_predicted_from(order, domains, per_size, bits, sizes, round_grids),
                       key[1])
        if checked_key < best_key:
            best_key = checked_key
            best = _refined_method_plan(eps, choice, q, str(rho), "staircase", order, domains,
                                        per_size, ip_beta, eps_t, delta_t, bits)
    if best is None:
        assert over is not None
        raise over
    return best


def _plan_refined_laplace(eps_t: float, delta_t: float, domains: list[Domain],
                          order: list[tuple[int, Side]], ip_beta: float,
                          continuous: frozenset[int] = frozenset()) -> MethodPlan:
    """Refined accounting with the paper's law: ρ = min(e^{-1/2}, P(N ≥ 2Δ)) depends on Δ,
    hence on ε, found by a short fixed-point iteration (ρ only falls)."""
    rounds = len(order)
    bits = tie_bits(domains, rounds, continuous)
    rho_val = math.exp(-0.5) * (1 - 1e-12)
    for _ in range(8):
        q = rho_val * (1 - ip_beta)
        choice = _refined_choice(eps_t, delta_t, q, rounds)
        eps = choice.epsilon * _SHRINK
        per_size = _size_laws(order, domains, eps, ip_beta,  # _OverLimit: no plan
                              lambda size: LaplaceLaw(size, ip_beta), bits)
        law_rho = min(law.rho for _, law in per_size.values())  # type: ignore[union-attr]
        if law_rho >= rho_val:  # the laws' ratio is at least the q the accountant used
            break
        rho_val = law_rho
    else:  # ρ settles in one or two steps; never plan with a q above the laws' ratio
        raise AssertionError("the paper's law: its ratio did not settle")
    return _refined_method_plan(eps, choice, q, f"{rho_val:.12g}", "laplace", order, domains,
                                per_size, ip_beta, eps_t, delta_t, bits)


def _refined_method_plan(eps: float, choice: RefinedChoice, q: float, rho_txt: str,
                         margin_law: str, order: list[tuple[int, Side]],
                         domains: list[Domain], per_size: _SizeLaws, ip_beta: float,
                         eps_t: float, delta_t: float, bits: Sequence[int]) -> MethodPlan:
    """The RandMargins plan at the (shrunk) per-round ε of ``choice``. Its guarantee is the
    accountant's value at that ε, for the choice's bound, k and δ₂. (q from the IP's actual
    failure bound, ≤ the target, can only be larger: safe.)"""
    rounds = len(order)
    guarantee = _within_budget(refined_guarantee(
        eps, kind=choice.kind, k=choice.k, q=q, rounds=rounds, delta2=choice.delta2),
        eps_t, delta_t)
    return MethodPlan(
        method="randmargins", accounting="refined", ip_epsilon=eps, ip_beta=ip_beta,
        rounds=_build_rounds(order, domains, per_size, bits, _ip_grids(domains, bits)),
        guarantee=guarantee,
        details={"margin_law": margin_law, "rho": rho_txt, "q": q, "k": choice.k,
                 "bound_kind": choice.kind,
                 "delta_split": {"escape": escape_probability(q, choice.k, rounds),
                                 "delta2": choice.delta2},
                 "shape_rounds": rounds},
    )


def _plan_paper(eps_t: float, delta_t: float, domains: list[Domain],
                order: list[tuple[int, Side]], ip_beta: float) -> MethodPlan:
    """The paper's accounting, as the paper states it (its Laplace law, δ = δ̃/(R + 2))."""
    rounds = len(order)
    delta = delta_t / (rounds + 2)
    if delta >= crmath.exp(-2):
        raise ParameterError("the paper's accounting needs delta/(R+2) < e^-2")
    if ip_beta >= 0.25:
        raise ParameterError("the paper's accounting needs an IP failure beta < 1/4")
    # the stated (R + 2)·δ (rounded up by the accountant) must not exceed δ̃
    while paper_bound(1.0, delta=delta, rounds=rounds).delta > delta_t:
        delta = math.nextafter(delta, 0.0) * (1.0 - 2.0**-50)
    eps = eps_t / (70 * crmath.log(1 / delta)) * _SHRINK
    rs = _rounds_with(order, domains, eps, ip_beta, lambda size: LaplaceLaw(size, ip_beta))
    return MethodPlan(
        method="randmargins", accounting="paper", ip_epsilon=eps, ip_beta=ip_beta, rounds=rs,
        guarantee=_within_budget(paper_bound(eps, delta=delta, rounds=rounds), eps_t, delta_t),
        details={"margin_law": "laplace", "paper_delta": delta, "shape_rounds": rounds},
    )


def _plan_composition(eps_t: float, delta_t: float, domains: list[Domain],
                      order: list[tuple[int, Side]], ip_beta: float) -> MethodPlan:
    """The baseline: the largest ε₀ whose R rounds meet (ε̃, δ̃) by the bounded-range
    composition (:func:`composition_br`: basic R·ε₀, or ρ = R·ε₀²/8 zCDP converted by CKS or
    Bun–Steinke, whichever is smallest). Never dp-accounting's PLD: a plan must not depend on
    which optional packages are installed (that package is a dev-only cross-check)."""
    rounds = len(order)
    try:
        eps0 = composition_br_epsilon(eps_t, delta_t, rounds, use_dp_accounting=False)
    except ParameterError:  # ε̃ so small that no positive ε₀ is representable
        eps0 = 0.0
    eps = eps0 * _SHRINK
    rs = _rounds_with(order, domains, eps, ip_beta, lambda size: None)  # limits first
    guarantee = _within_budget(
        composition_br(eps, rounds=rounds, delta=delta_t, use_dp_accounting=False),
        eps_t, delta_t)
    return MethodPlan(
        method="composition", accounting="composition", ip_epsilon=eps, ip_beta=ip_beta,
        rounds=rs, guarantee=guarantee, details={"shape_rounds": rounds},
    )


def _plan_quantiles(eps_t: float, delta_t: float, domains: list[Domain],
                    order: list[tuple[int, Side]], ip_beta: float,
                    target_miss: float, aims: bool = True) -> MethodPlan:
    """The quantile box (:mod:`dprect.core.quantile_box`): R = len(order) mechanisms (per
    axis the centre and the side pair; the side alone for the origin shape), each
    ε₀-DP and ε₀-bounded-range, composed as the composition baseline's R rounds
    (:func:`composition_br`; docs/privacy.md §16) — the same ε₀. The centre's rate is
    ε₀ and the sides' ε₀ (both scores are monotone under add/remove), both the
    exact rationals of the float ε₀ the sampler uses; the prior's decay
    μ = min(1/2, ε₀) (:func:`~dprect.core.quantile_box.quantile_decay`). ``aims``: the run
    has an N (a public estimate or auto's count) for its sides' targets; without one (a
    forced box without ``positives``) every t is 0, and the predictions say so."""
    rounds = len(order)
    try:
        eps0 = composition_br_epsilon(eps_t, delta_t, rounds, use_dp_accounting=False)
    except ParameterError:
        eps0 = 0.0
    eps = eps0 * _SHRINK
    bins = max(coarse_bins(d) for d in domains)
    needed = 4 * crmath.log(max(bins, 2)) / eps if eps > 0 else math.inf
    if not needed <= MAX_IP_SIZE:  # also inf: a centre's depth must beat ln(bins)
        amount = f"about {needed:.3g}" if math.isfinite(needed) else "unboundedly many"
        raise _OverLimit(f"{amount} positives for its centres (limit MAX_IP_SIZE = "
                         f"{MAX_IP_SIZE:,})", needed / MAX_IP_SIZE)
    guarantee = _within_budget(
        composition_br(eps, rounds=rounds, delta=delta_t, use_dp_accounting=False),
        eps_t, delta_t)
    side = Fraction(eps)
    origin = all(s == "hi" for _, s in order)
    rs = tuple(RoundPlan(axis, s, domains[axis].size, 0, None,
                         float_order=isinstance(domains[axis], FloatOrder)) for axis, s in order)
    return MethodPlan(
        method="quantiles", accounting="composition", ip_epsilon=eps, ip_beta=ip_beta,
        rounds=rs, guarantee=guarantee,
        details={"centre_rate": str(side) if not origin else None,
                 "side_epsilon": str(side), "decay": str(quantile_decay(side)),
                 "aimed_rate": str(side / 2), "aimed_decay": str(AIMED_DECAY),
                 "aimed_score": AIMED_SCORE,
                 "aim_side_share": str(min(AIM_SIDE_SHARE, AIM_TOTAL_SHARE / rounds)),
                 "aims": aims,
                 "target_miss": target_miss, "shape_rounds": rounds,
                 "large_sample_clip": rounds / eps,
                 "overshoot_steps": overshoot_steps(quantile_decay(side)),
                 "widening": widening(quantile_decay(side))})


def quantiles_predicted(method: MethodPlan, positives: int, independent: bool = False
                        ) -> float:
    """The quantile box's predicted positives outside at N = ``positives``: per axis its
    expected clip c_j — :func:`~dprect.core.quantile_box.predicted_axis_clip` (the centre
    in the data or not, then the sides), or for the origin shape's one side
    :func:`~dprect.core.quantile_box.predicted_clip` on all N — with each side's target;
    the axes' clips overlap as composition's rounds do (each a share c_j/N of the
    positives, independent across the axes): N·(1 − Π_j (1 − c_j/N)). An aimed box's
    (t > 0) clips are the tails of the features, which on real tables hold largely the
    same rows (docs/results.md §4.1: measured about half the independent union on
    diamonds and flights): the model takes a weighted geometric mean of the two public
    extremes, nested (M = max_j c_j) and independent (I): M^(1−w)·I^w, with
    w = w∞ + (1 − w∞)·e^{−a·t/κ} (w∞ = :data:`AIMED_OVERLAP`, κ =
    :data:`AIMED_NOISE_NATS`, a the aimed rate): where a side's noise outweighs its aim
    (a·t of a few nats: weather at ε ≤ 1) its clips are set by the noise, independent
    across the axes, and w nears 1. ``independent``: the independent union I whatever the
    aim (no credit for the tails' overlap: what independent features give, the bound
    :func:`_safe_choice` holds the aimed box to)."""
    origin = method.details.get("centre_rate") is None
    eps = float(Fraction(method.details["side_epsilon"]))
    target = _side_target(method, positives)
    aimed = float(Fraction(method.details["aimed_rate"]))
    mu = float(Fraction(method.details["aimed_decay" if target else "decay"]))
    n = float(max(positives, 1))
    keep = 0.0  # log Π_j (1 − c_j/N)
    widest = 0.0  # max_j c_j
    for r in method.rounds:
        if origin:
            clip = predicted_clip(eps, n, target, mu, aimed)
        elif r.side == "lo":
            continue  # the axis's two sides are counted once, with its hi round
        else:
            clip = predicted_axis_clip(eps, n, target, mu, r.grid_size, aimed, r.float_order)
        share = min(1.0, clip / n)
        if share >= 1.0:
            return float(positives)
        keep += math.log1p(-share)
        widest = max(widest, clip)
    union = n * -math.expm1(keep)
    if target > 0 and not independent:  # aimed: the tails' overlap, nested to independent
        w = AIMED_OVERLAP + (1 - AIMED_OVERLAP) * math.exp(-aimed * target / AIMED_NOISE_NATS)
        union = widest ** (1 - w) * union ** w
    return float(min(positives, union))


def quantiles_range(method: MethodPlan, positives: int) -> tuple[float, float] | None:
    """The aimed quantile box's predicted miss on the float order as the range the plan
    states, (0, I) at N = ``positives``, I its independent union
    (:func:`quantiles_predicted` with ``independent``); None when no axis is the float
    order's (a public grid's range gives the model the data's scale). On the float
    order the model's one figure is data-blind: measured at 2,000 rows of [−50, 50]^8,
    [0, 50]^8 and normal(0, 1)^8 the same plan (12.2%) missed 0%, 12% and 19%
    (docs/results.md §4.1b) — at a hard edge the step holding a side's t-th row reaches
    past it, on a tail a side clips t and its noise, independent across the axes."""
    if not any(r.float_order for r in method.rounds):
        return None
    return 0.0, quantiles_predicted(method, positives, independent=True)


def plan(request: PlanRequest | None = None, /, *, domains: list[Domain] | None = None,
         dims: int | None = None, grid: GridArg = None, positives: int | None = None,
         target_share: float = DEFAULT_TARGET_SHARE, features: Sequence[str] | None = None,
         auto_count: bool = True, **options: Unpack[BudgetOptions]) -> Plan:
    """Choose per-round ε, Δ, margin law, k and δ split for a total (ε, δ) budget.

    The features' public domains are ``domains`` (one per feature), or — like the CLI's
    ``--dims`` — ``dims`` features x0…x{dims−1} whose domains come from ``grid`` (as in
    :func:`dprect.fit`: a Domain for all, a list, a ``--grid`` string, or None for the
    float-order domain).

    The budget is a :class:`~dprect.core.request.PlanRequest` (a ``FitRequest`` will do),
    or its fields as keywords — ``epsilon`` and ``delta`` required, the others defaulting
    as :mod:`dprect.core.request` says. Returns a :class:`Plan` whose ``chosen`` method is,
    for ``method="auto"``, RandMargins only when it is predicted to misclassify at least
    :data:`AUTO_MARGIN` fewer positives than the composition baseline
    (:func:`_safe_choice`); the plan reports both methods' predictions.

    ``positives`` is an optional public estimate N of the number of positive rows (never
    read from the data) and ``target_share`` a share of positives outside the rectangle
    (default 5%): the plan's ``expectation`` (its JSON and table) gives, per method, the
    expected share outside at N and the smallest N for the target share
    (:mod:`dprect.core.expectation`). N also lets ``auto`` compare the methods at N
    (:func:`_safe_choice`: composition's cuts overlap on a finite sample, RandMargins'
    removals do not); otherwise neither changes the plan.

    ``features``: the features' names (default x0, x1, …), which the request's
    ``continuous`` declaration names (:func:`continuous_axes`).

    ``auto_count``: with ``method="auto"``, no ``positives`` and RandMargins chosen at
    N = ∞ (the case where the choice depends on N, :mod:`dprect.core.auto_count`), plan
    both candidates at (ε − ε_c, δ) with ε_c = ε/1000 (add/remove) spent on a private
    count of the positives, drawn first by the run (the plan is ``pending`` until
    :meth:`Plan.resolved`); both candidates state the same total guarantee, re-derived
    by the independent check. False (the classes' fits) keeps the choice at N = ∞.
    """
    sizing = Sizing(positives, target_share)  # checked first, like the budget
    req = make_request(PlanRequest, request, options, "dprect.plan")
    epsilon, delta, beta, method = req.epsilon, req.delta, req.beta, req.method
    domains = _plan_domains(domains, dims, grid)
    if not isinstance(domains, list | tuple) or len(domains) == 0:
        raise ParameterError("domains must be a non-empty list (one domain per feature)")
    check_dims(len(domains), "domains")
    for i, d in enumerate(domains):
        if not isinstance(d, Domain):
            raise ParameterError(f"domains[{i}] must be a Domain, got {d!r}")
    paper = req.accounting is Accounting.PAPER
    if paper and delta == 0.0 and method is not Method.COMPOSITION:
        raise ParameterError("delta=0 cannot be met by accounting='paper': the paper's bound "
                             "needs delta > 0 (use accounting='refined', whose pure bound "
                             "gives (epsilon, 0), or method='composition')")
    margin_law = MarginLawName.LAPLACE if paper else req.margin_law
    order = schedule(len(domains), req.shape)
    ip_beta = _ip_failure_target(beta, len(order))
    continuous = continuous_axes(req.continuous, features, len(domains))
    eps_ar, delta_ar = add_remove_budget(epsilon, delta, req.neighbouring)

    over: dict[str, _OverLimit] = {}
    rm: MethodPlan | None = None
    comp: MethodPlan | None = None
    try:
        if paper and delta == 0.0:  # method='composition': RandMargins is not a candidate
            pass
        elif paper:
            rm = _plan_paper(eps_ar, delta_ar, list(domains), order, ip_beta)
        else:
            rm = _plan_refined(eps_ar, delta_ar, list(domains), order, ip_beta,
                               margin_law.value, continuous)
    except _OverLimit as exc:
        over["randmargins"] = exc
    try:
        comp = _plan_composition(eps_ar, delta_ar, list(domains), order, ip_beta)
    except _OverLimit as exc:
        over["composition"] = exc
    if req.neighbouring is Neighbouring.REPLACE_ONE:
        rm = None if rm is None else _with_guarantee(rm, _within_budget(
            replace_one(rm.guarantee), epsilon, delta), rm.guarantee)
        comp = None if comp is None else _with_guarantee(comp, _within_budget(
            replace_one(comp.guarantee), epsilon, delta), comp.guarantee)
    quant = None
    # auto considers the box only at a finite N (its public estimate, or the count it
    # draws): at N = ∞ the box is never chosen (_safe_choice), so it is no candidate then
    if method is Method.QUANTILES or (method is Method.AUTO and (
            sizing.positives is not None or auto_count)):
        try:
            quant = _plan_quantiles(eps_ar, delta_ar, list(domains), order, ip_beta,
                                    req.target_miss, aims=sizing.positives is not None
                                    or method is Method.AUTO)
        except _OverLimit as exc:
            over["quantiles"] = exc
    if req.neighbouring is Neighbouring.REPLACE_ONE and quant is not None:
        quant = _with_guarantee(quant, _within_budget(replace_one(quant.guarantee), epsilon,
                                                      delta), quant.guarantee)
    candidates = {name: c for name, c in (("randmargins", rm), ("composition", comp),
                                          ("quantiles", quant)) if c is not None}
    auto = method is Method.AUTO
    wanted = list(candidates) if auto else [method.value]
    if not all(name in candidates for name in wanted) or not candidates:
        raise ParameterError(_limit_message(epsilon, {
            name: over[name] for name in (over if auto else (method.value,))}))
    chosen = _safe_choice([candidates[name] for name in wanted], sizing.positives)
    asked = {**req.to_json(), "margin_law": margin_law.value, "dims": len(domains)}
    excluded = {name: f"over a plan-time limit: it would need {exc.what}"
                for name, exc in over.items()}
    if paper and delta == 0.0:
        excluded["randmargins"] = "the paper's accounting needs delta > 0"
    if req.target_miss and "quantiles" not in wanted and "quantiles" not in over:
        why = (("", "method", f"={method.value} never draws it") if not auto else
               ("a classes' fit counts no positives, so auto weighs the box only at a "
                "public N: give ", "positives", ", an estimate of each class's positive "
                "rows"))
        raise ParameterError((" aims the quantiles method's box, which this run cannot "
                              f"choose ({why[0]}", why[1], f"{why[2]}); leave ",
                              "target_miss", " out"), parameter="target_miss")
    if req.target_miss and sizing.positives is None and not (
            auto and auto_count) and "quantiles" in wanted:
        raise ParameterError((" needs N: give ", "positives", " (a public estimate of the "
                              "positive rows) or use ", "method", "='auto', which counts "
                              "them"), parameter="target_miss")
    if (auto and auto_count and sizing.positives is None and len(candidates) >= 2
            and (chosen.method == "randmargins" or "quantiles" in candidates)):
        counted = _counting_candidates(req, list(domains), order, ip_beta, margin_law.value,
                                       continuous, eps_ar, delta_ar, paper=paper,
                                       names=tuple(candidates), share=(
                                           AUTO_COUNT_SHARE if chosen.method == "randmargins"
                                           else QUANTILES_COUNT_SHARE))
        if counted is not None:
            count, candidates, contest = counted
            chosen = _safe_choice(list(candidates.values()), None)
            checks = {name: check_fit_plan(c, list(domains), beta=beta,
                                           shape=req.shape.value)
                      for name, c in candidates.items()}
            if contest is not None:
                g = chosen.guarantee
                checks["contest"] = check_contest_plan(
                    contest, count.to_json(), list(domains), beta=beta,
                    shape=req.shape.value, stated=(g.epsilon, g.delta, g.neighbouring))
            return Plan(chosen=chosen, candidates=candidates, request=asked,
                        excluded=excluded, sizing=sizing, check=checks[chosen.method],
                        count=count, checks=checks, contest=contest)
    # the plan as it will execute, re-derived independently before anything is read
    check = check_fit_plan(chosen, list(domains), beta=beta, shape=req.shape.value)
    return Plan(chosen=chosen, candidates=candidates, request=asked, excluded=excluded,
                sizing=sizing, check=check)


def _counting_candidates(req: PlanRequest, domains: list[Domain],
                         order: list[tuple[int, Side]], ip_beta: float, margin_law: str,
                         continuous: frozenset[int], eps_ar: float, delta_ar: float, *,
                         paper: bool = False, names: tuple[str, ...] | None = None,
                         share: Fraction = AUTO_COUNT_SHARE
                         ) -> tuple[PrivateCount, dict[str, MethodPlan], ContestPlan | None
                                    ] | None:
    """``auto``'s counting route (:mod:`dprect.core.auto_count`): the count at ε_c =
    ε/1000 of the add/remove budget, both candidates at (ε − ε_c, δ), each stating the
    same total — the larger of their (method + count) guarantees by basic composition,
    then the replace-one image for a replace-one request. None if a candidate is over a
    plan-time limit at the smaller budget (the plan then stays at N = ∞, no count)."""
    count = PrivateCount.for_budget(eps_ar, share)
    rest = eps_ar - count.epsilon
    while rest + count.epsilon > eps_ar:  # float rounding: never above the budget
        rest = math.nextafter(rest, 0.0)
    planned: list[MethodPlan] = []
    try:
        if names is None or Method.RANDMARGINS.value in names:
            planned.append(
                _plan_paper(rest, delta_ar, domains, order, ip_beta) if paper else
                _plan_refined(rest, delta_ar, domains, order, ip_beta, margin_law,
                              continuous))
        planned.append(_plan_composition(rest, delta_ar, domains, order, ip_beta))
        if names is not None and Method.QUANTILES.value in names:
            planned.append(_plan_quantiles(rest, delta_ar, domains, order, ip_beta,
                                           req.target_miss))
    except (_OverLimit, ParameterError):
        return None
    eps = max(_sum_up(c.guarantee.epsilon, count.epsilon) for c in planned)
    dlt = max(c.guarantee.delta for c in planned)
    bounds = "; ".join(f"{c.method}: {c.guarantee.bound}" for c in planned)
    # one statement for all (the ledger reserves it before the choice is made)
    g = _within_budget(Guarantee(
        eps, dlt, planned[0].guarantee.neighbouring,
        f"private count of the positives ({count.epsilon:.6g}, 0) + the chosen method's "
        f"rounds by basic composition ({bounds})"), eps_ar, delta_ar)
    # the contest's parts fit inside the one statement g made for the other routes, so a
    # counting plan states what it stated before the contest existed
    contest = (_plan_contest(req, domains, order, ip_beta, eps_ar, g.epsilon, g.delta,
                             count.epsilon)
               if names is not None and Method.QUANTILES.value in names
               and Method.COMPOSITION.value in names else None)
    g_ar = None
    if req.neighbouring is Neighbouring.REPLACE_ONE:
        g_ar, g = g, _within_budget(replace_one(g), req.epsilon, req.delta)
    out: dict[str, MethodPlan] = {}
    for c in planned:
        details = {**c.details, "private_count": count.to_json()}
        if c.method == Method.QUANTILES.value:
            details["count_share"] = str(share)
        out[c.method] = MethodPlan(c.method, c.accounting, c.ip_epsilon, c.ip_beta,
                                   c.rounds, g, details, g_ar)
    return count, out, contest


def _plan_contest(req: PlanRequest, domains: list[Domain], order: list[tuple[int, Side]],
                  ip_beta: float, eps_ar: float, eps_stated: float, delta_stated: float,
                  count_epsilon: float) -> ContestPlan | None:
    """The contest's two fits at their shares (:func:`~dprect.core.contest.contest_split`
    of the plan's add/remove statement (``eps_stated``, ``delta_stated``): each
    (ε_f, δ/2)), the negatives' count and ε_s (shares of ``eps_ar``); None with a stated
    target miss (the user's rule decides), where a fit is over a plan-time limit at its
    share, or where the parts' sum would exceed the statement (the other routes' total:
    the contest never changes what a plan states)."""
    if req.target_miss:
        return None
    negatives, select, fit = contest_split(eps_ar, eps_stated, count_epsilon)
    if fit <= 0:
        return None
    try:
        old = _plan_composition(fit, delta_stated / 2, domains, order, ip_beta)
        box = _plan_quantiles(fit, delta_stated / 2, domains, order, ip_beta, 0.0)
    except (_OverLimit, ParameterError):
        return None
    contest = ContestPlan(old, box, negatives, select)
    total = 0.0
    for _name, e, _d in contest.parts(count_epsilon):
        total = _sum_up(total, e)
    if total > eps_stated or old.guarantee.delta + box.guarantee.delta > delta_stated:
        return None
    return contest


def contest_fires(candidates: dict[str, MethodPlan], contest: ContestPlan,
                  chosen: MethodPlan, positives: int) -> bool:
    """The contest's public gate at N = ``positives`` (the released count; docs/algorithm.md
    §10): (1) the default rule keeps composition (``chosen``) although the aimed box is a
    candidate whose sides aim (t > 0, at full budget and at the contest's share); (2) the
    box is a moderate candidate: its predicted miss b (:func:`box_upper`) is at most
    :data:`~dprect.core.contest.CONTEST_RATIO` times composition's c (at a large N, c → 0,
    the old choice keeps its one scan); (3) the split is cheap: at the contest's shares
    each candidate's predicted miss rises by at most
    :data:`~dprect.core.contest.CONTEST_PRICE`·N (0.01 of balanced error). Public: the
    plan's predictions at the released N only."""
    quant = candidates.get(Method.QUANTILES.value)
    if quant is None or chosen.method != Method.COMPOSITION.value or positives < 1:
        return False
    if _side_target(quant, positives) <= 0 or _side_target(contest.box, positives) <= 0:
        return False
    c, b = predicted_at(chosen, positives), box_upper(quant, positives)
    if not b <= CONTEST_RATIO * c:
        return False
    price = CONTEST_PRICE * positives
    return (predicted_at(contest.old, positives) - c <= price
            and box_upper(contest.box, positives) - b <= price)


def _sum_up(a: float, b: float) -> float:
    """a + b rounded up (basic composition of two ε's in floating point)."""
    s = a + b
    return s if Fraction(s) >= Fraction(a) + Fraction(b) else math.nextafter(s, math.inf)


def predictions(request: PlanRequest, domains: list[Domain],
                continuous: frozenset[int] = frozenset()) -> dict[str, float]:
    """The candidates' predicted misclassified positives for ``request`` on ``domains``
    (``continuous``: the axes declared free of ties), as :func:`plan` computes them —
    without making a plan (no guarantee check, nothing to run): what-if comparisons such
    as the crossover (:mod:`dprect.core.crossover`). A candidate over a plan-time limit
    is absent."""
    order = schedule(len(domains), request.shape)
    ip_beta = _ip_failure_target(request.beta, len(order))
    eps_ar, delta_ar = add_remove_budget(request.epsilon, request.delta, request.neighbouring)
    paper = request.accounting is Accounting.PAPER
    out: dict[str, float] = {}
    try:
        if paper and request.delta > 0.0:
            rm = _plan_paper(eps_ar, delta_ar, domains, order, ip_beta)
            out["randmargins"] = rm.predicted_misclassified
        elif not paper:
            rm = _plan_refined(eps_ar, delta_ar, domains, order, ip_beta,
                               request.margin_law.value, continuous)
            out["randmargins"] = rm.predicted_misclassified
    except _OverLimit:
        pass
    try:
        comp = _plan_composition(eps_ar, delta_ar, domains, order, ip_beta)
        out["composition"] = comp.predicted_misclassified
    except _OverLimit:
        pass
    return out


def continuous_axes(names: Sequence[str], features: Sequence[str] | None, dims: int
                    ) -> frozenset[int]:
    """The axes the continuity declaration ``names`` names, among ``features`` (default
    x0 … x{dims−1}); a name that is not a feature is refused (public: the request's)."""
    listed = feature_names(None if features is None else list(features), dims)
    unknown = [n for n in names if n not in listed]
    if unknown:
        raise ParameterError(f" names {unknown[0]!r}, which is not one of the features",
                             parameter="continuous")
    return frozenset(listed.index(n) for n in names)


def _ip_failure_target(beta: float, rounds: int) -> float:
    """β_IP = β/(2R), rounded down so that the union bound 2R·β_IP ≤ β holds exactly."""
    ip_beta = beta / (2 * rounds)
    while Fraction(ip_beta) * (2 * rounds) > Fraction(beta):
        ip_beta = math.nextafter(ip_beta, 0.0)
    return ip_beta


def _safe_choice(options: list[MethodPlan], positives: int | None = None) -> MethodPlan:
    """``auto``'s rule (docs/algorithm.md §6): the composition baseline unless RandMargins
    is predicted to misclassify at most (1 − :data:`AUTO_MARGIN`) times as many positives.

    Why not simply the smaller prediction: the predictions are expectations (measured over
    planned 0.93–1.02 in docs/results.md), so a smaller gap is noise; and the methods fail
    differently — composition's rounds are independent (a bad round moves one side),
    while a RandMargins cut that removes more than its block (exact duplicate rows, tied
    float-order values: :mod:`dprect.core.ties`) starves every later round. So RandMargins
    must win clearly to be chosen.

    The quantile box (issue #44), when it is a candidate, at a finite N (at N = None
    never), replaces that choice in three cases. (1) With a stated ``target_miss`` (the
    user asks for its aim): when its predicted miss is at most the choice's plus its aim
    (:func:`quantiles_aim`), the rows given up on request not held against it. (2) By
    default, where its sides aim at a target (t > 0): when its predicted miss b
    (:func:`box_upper`: the plan's figure on a grid, the range's upper end on the float
    order) exceeds the choice's c by at most min(:data:`AUTO_BOX_RELATIVE`·c,
    :data:`AUTO_BOX_EXCESS`·N) (:func:`box_excess_allowed`; issue #44, s32): b − c is a
    loss only where the classes separate (the trimmed tails hold no negatives), half of it
    in balanced error, so it is bounded by issue #44's tolerance (0.02 of balanced error)
    and by the choice's own miss; at a large N (composition's miss → 0, the box's → its
    aim) the choice is the old one, and the Spark fit keeps its one scan (s25-brake's
    rule, at most the choice's plus the aim, took the box on nearly every large table).
    Where the tails hold the negatives (diamonds at ε = 4, flights at ε ≤ 1,
    docs/results.md §4.1) the box wins on the balanced error while missing more
    positives; flights at ε = 4, whose excess is 5 times composition's miss, keeps
    composition. The s25-s31 rule (the independent union at most
    (1 − :data:`AUTO_MARGIN`)·c, no tolerance for a larger miss) implies this one.
    (3) Where the choice is predicted to leave out at least (1 − :data:`AUTO_QUANTILES_GAP`)
    of N (a nearly empty rectangle) and the box no more.

    With a public estimate N of the positives (``positives``; never the data's count) both
    predictions are taken at N (:func:`predicted_at`): RandMargins removes its rounds'
    blocks from the remaining rows, disjointly, so it leaves min(N, Σ_t E[N_t] − Δ_t/2)
    outside; composition cuts every round on ALL positives, so its rounds' removals overlap
    and, with the axes' removals independent, it leaves N·(1 − Π_t (1 − c_t/N)) outside
    (c_t = Δ₀_t/2; the overlap-aware count the sample-complexity benchmark measures within
    5%). Without N, or as N grows, both tend to the sums — the rule above. The two differ
    where the sums approach N: at d = 256, ε = 1 and 10^6 positives of real-world marginals
    RandMargins' sum is 1.16·10^6 (an empty rectangle) and composition's 1.58·10^6, yet
    composition's cuts leave 64% outside (docs/results.md §8)."""
    if len(options) == 1:
        return options[0]
    by_name = {c.method: c for c in options}
    quant = by_name.pop("quantiles", None)
    old = _old_choice(by_name, positives)
    if quant is None:
        assert old is not None
        return old
    if old is None:
        return quant
    if positives is not None:
        at_old, at_box = predicted_at(old, positives), predicted_at(quant, positives)
        aim = quantiles_aim(quant, positives)
        stated = float(quant.details.get("target_miss") or 0.0) > 0
        if stated and aim > 0 and at_box <= at_old + aim:
            return quant
        if aim > 0 and box_excess_allowed(quant, at_old, positives):
            return quant
        if at_old >= (1 - AUTO_QUANTILES_GAP) * positives and at_box <= at_old:
            return quant
    return old


def box_upper(method: MethodPlan, positives: int) -> float:
    """The aimed box's predicted miss as ``auto``'s default rule reads it: on a public grid
    :func:`quantiles_predicted` (the plan's figure, calibrated on the real tables of
    docs/results.md §4.1); where an axis is the float order the upper end of
    :func:`quantiles_range` (the independent union: there the one figure is data-blind)."""
    blind = quantiles_range(method, positives)
    return blind[1] if blind is not None else quantiles_predicted(method, positives)


def box_excess_allowed(method: MethodPlan, at_old: float, positives: int) -> bool:
    """``auto``'s default allowance for the aimed box (issue #44): its predicted miss b
    (:func:`box_upper`) exceeds the old choice's c (``at_old``, positives) by at most
    min(:data:`AUTO_BOX_RELATIVE`·c, :data:`AUTO_BOX_EXCESS`·N). The argument (the
    constants' docstring; docs/algorithm.md §10): b − c costs (b − c)/(2N) of balanced error
    where the classes separate and the box's trim gains nothing, so the loss is bounded by
    issue #44's tolerance (0.02) and by the old choice's own miss; as N grows c → 0 and the
    old choice stays. Public: the plan's predictions at the public (or released) N."""
    excess = box_upper(method, positives) - at_old
    return excess <= min(AUTO_BOX_RELATIVE * at_old, AUTO_BOX_EXCESS * positives)


def _side_target(method: MethodPlan, positives: int) -> int:
    """The box's per-side target t at N = ``positives`` as its run computes it (0 for a
    run without N, :func:`_plan_quantiles`' ``aims``)."""
    if not method.details.get("aims", True):
        return 0
    return side_target(float(method.details.get("target_miss") or 0.0), positives,
                       len(method.rounds), Fraction(method.details["side_epsilon"]))


def quantiles_aim(method: MethodPlan, positives: int) -> float:
    """The positives the quantile box gives up by design at N = ``positives``: each side's
    target t (:func:`~dprect.core.quantile_box.side_target`; 0 where no aim is
    affordable), the axes' overlapping as its clips do, N·(1 − Π_axes (1 − t_axis/N)),
    t_axis = 2t (t for the origin shape's one side)."""
    t = _side_target(method, positives)
    if t <= 0 or positives <= 0:
        return 0.0
    per_axis = t if method.details.get("centre_rate") is None else 2 * t
    axes = sum(1 for r in method.rounds if r.side == "hi")
    n = float(positives)
    return n * -math.expm1(axes * math.log1p(-min(1.0, per_axis / n)))


def _old_choice(by_name: dict[str, MethodPlan], positives: int | None) -> MethodPlan | None:
    """The choice between RandMargins and the composition baseline (:func:`_safe_choice`)."""
    if len(by_name) < 2:
        return next(iter(by_name.values()), None)
    rm, comp = by_name["randmargins"], by_name["composition"]
    if predicted_at(rm, positives) <= (1 - AUTO_MARGIN) * predicted_at(comp, positives):
        return rm
    return comp


def predicted_at(method: MethodPlan, positives: int | None) -> float:
    """The positives ``method`` is predicted to leave outside among ``positives`` (None:
    the large-sample count, ``predicted_misclassified``): RandMargins' count capped at N
    (its removals are disjoint), composition's overlap N·(1 − Π_t (1 − c_t/N))
    (:func:`_safe_choice` explains)."""
    if positives is None:
        return method.predicted_misclassified
    n = float(positives)
    if method.method == "quantiles":
        return quantiles_predicted(method, int(positives))
    if method.method == "randmargins":
        return min(n, method.predicted_misclassified)
    keep = 1.0
    for r in method.rounds:
        keep *= 1.0 - min(1.0, max(0.0, r.predicted_misclassified) / n)
    return n * (1.0 - keep)


def _plan_domains(domains: list[Domain] | None, dims: int | None, grid: GridArg
                  ) -> list[Domain]:
    """The domains of :func:`plan`: given, or ``dims`` features' domains from ``grid``."""
    if domains is not None:
        if grid is not None:
            raise ParameterError("give either domains or grid (with dims), not both")
        if (dims is not None and isinstance(domains, list | tuple)
                and check_positive_int(dims, "dims") != len(domains)):
            raise ParameterError(f"dims={dims!r} does not match the {len(domains)} domains")
        return domains
    if dims is None:
        raise ParameterError("give dims (the number of features) or domains "
                             "(one per feature)")
    return resolve_domains(grid, feature_names(None, check_dims(check_positive_int(
        dims, "dims"), "dims")))


def _limit_message(epsilon: float, over: dict[str, _OverLimit]) -> str:
    """One line: ε, what each method would need, the limit, and what to change."""
    needs = "; ".join(f"{name} would need {exc.what}" for name, exc in over.items())
    return (f"epsilon={epsilon:g} is too small for this plan: {needs}. Raise epsilon, "
            f"coarsen the grids (fewer grid points), use fewer features or a larger beta")


def _with_guarantee(p: MethodPlan, g: Guarantee, add_remove: Guarantee | None = None
                    ) -> MethodPlan:
    return MethodPlan(p.method, p.accounting, p.ip_epsilon, p.ip_beta, p.rounds, g, p.details,
                      add_remove)

