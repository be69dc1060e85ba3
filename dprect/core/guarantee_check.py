"""The independent guarantee check: every plan's stated (ε, δ) re-derived before a run reads
any data (docs/privacy.md §10).

The planner (:mod:`dprect.core.planner`), the bounds planner (:mod:`dprect.core.bounds`)
and the describe planner (:mod:`dprect.core.aggregates`) *size* a run: from a budget they
search for per-round ε, windows Δ, margin laws, k and δ splits, with floating-point
searches and caches. This module *verifies* the result. It
takes the plan as it will execute — per round the ε the sampler uses, Δ, the grid the
interior point runs on (the refined grid of the tie bits the engine applies, read from
:func:`dprect.core.ties.refined`: the very domain object the rounds run on), the margin
law's own parameters, β_IP; the method, the accounting and the neighbouring relation —
and re-derives from first principles, in 80-digit decimal and exact rational arithmetic,
that the stated guarantee holds. It shares no sizing or accounting code with the planners
(it imports neither :mod:`~dprect.core.accounting` nor :mod:`~dprect.core.interior_point`);
its constants are written here once, with the
lemma each comes from:

* **quantiles** (docs/privacy.md §11a): each draw weighs a bin by exp(−c·(b·bad)) with a
  rank score that moves by at most max(q, 1 − q) times the rows one neighbour adds
  (:data:`QUANTILE_SENSITIVITY`), i.e. max(a, b − a)·s units of 1/b row for q = a/b, so
  it is (2·c·max(a, b − a)·s)-DP;
  the m draws compose (basic), groups in parallel; a cell below the plan's ``pool_rows``
  reads its column's ONE pooled centre, each row in :data:`QUANTILE_POOLS_PER_ROW` pool
  (Lemma Q5: one more split, re-derived like the others) — or, a pool whose released rows
  fall short of ``pool_rows``, its column's anchor on other cells' releases (Lemma Q6:
  no centre drawn, the small split less its centre, below the splits re-derived: nothing
  added);

* **interior-point failure** (McSherry & Talwar's utility bound for the depth score):
  a round on a grid of M points with window Δ fails on one side with probability at most
  M·exp(−ε·⌈Δ/2⌉/2); it must be ≤ β_IP, and 2R·β_IP ≤ β (union bound over 2R sides);
* **margin-law ratio** ρ = inf_{r≥1} P(N ≥ r + Δ)/P(N ≥ r), computed from the law's own
  definition (staircase: ρ_law^⌈Δ/Δ_law⌉; the paper's Laplace law: by log-concavity
  min(e^{−Δ/scale}, P(N ≥ Δ_law + Δ))), and q = ρ·(1 − β_IP);
* **RandMargins, refined** (docs/privacy.md §4 and "Bounded-range accounting"): with the
  plan's k as a witness and δ₂ = δ̃ − (1 − q)^k (k < R), the run is (k·ε, (1 − q)^k)-DP
  (pure), and (s, (1 − q)^k + δ₂)-DP for s = ρ_k + 2√(ρ_k·ln(1/δ₂)) (bounded range,
  ρ_k = k·ε²/8) or for any s with min_α δ_α(s; ρ_k) ≤ δ₂ (the CKS conversion, every
  α > 1 valid: the check searches α itself);
* **RandMargins, the paper's statement**: (70·ε·ln(1/δ_p), (R + 2)·δ_p) with the paper's
  Laplace law, β_IP < 1/4, δ_p < e^{−2};
* **composition of R ε₀-bounded-range mechanisms**: basic (R·ε₀, 0), or ρ = R·ε₀²/8 zCDP
  converted by Bun–Steinke or CKS;
* **private bounds**: the sampler's rate c per 1/b row gives each exponential mechanism
  ε = 2·c·b·s with the score's sensitivity s = 1 (docs/privacy.md §9, Lemma B1), 2d of
  them per group composed as above (groups are disjoint: parallel), and each column's
  rank error T_j must satisfy m_j·exp(−ε·T_j/(2s)) ≤ β/(2d);
* **describe** (bounds aimed at a query + DP aggregates, docs/privacy.md §11): per column
  the centre's two exponential mechanisms (Lemma D2) — its sign class at rate c₁ (weight
  exp(c₁·rows of the class), sensitivity 1) and its magnitude's median at rate c₂
  (weight exp(c₂·depth of |x|), sensitivity 1) — are 2c₁- and 2c₂-DP, composed
  (basic); each side is one exponential mechanism over its candidate steps with weight
  exp(−r·clipped rows − μ·step) on a monotone sensitivity-1 score, so r-DP (not 2r: the
  score moves one way), and the two sides (disjoint rows) compose in parallel;
  the count with DLap scale b_n is (1/b_n)-DP and the integer sum with per-row clip k and
  scale b_S is (k/b_S)-DP, and the integer sum of squares about the bounds' midpoint with
  per-row clip k_Q and scale b_Q (k_Q/b_Q)-DP (§17; drawn iff a variance or a std is
  asked, the same in every split); columns compose by basic composition, groups in parallel;
  with the count drawn first, its released value picks one of the plan's splits
  (adaptive composition, Theorem D′): the count's ε plus the largest split's, the splits
  picked by decreasing least counts with the last taking every count below. The
  split is re-derived too: the count noise is drawn iff a statistic is asked and the sum
  noise iff a sum or a mean is (a count-only plan draws none), and the drawn noises must
  spend the requested budget (:data:`DESCRIBE_UNSPENT`);
* **auto's private count** (docs/privacy.md §13): a count of the positives has
  sensitivity 1 under add/remove, so count + DLap(b) is (1/b, 0)-DP; drawn before the
  rounds, it composes with them by basic composition — the rounds must meet
  (ε_a − 1/b, δ_a) of the add/remove target (ε_a, δ_a);
* **auto's contest** (docs/privacy.md §19): the count of the positives, a count of the
  negatives (sensitivity 1: (1/b⁻, 0)), composition and the aimed box each at its own
  stated add/remove share (each re-derived as a run of its own), and the selection, an
  exponential mechanism on a monotone utility of sensitivity Δ at rate ε_s/Δ: ε_s-DP
  (:data:`CONTEST_SELECT_FACTOR` = 1; 2 for a utility that is not monotone); the five
  compose adaptively by basic composition: Σε ≤ ε_a, Σδ ≤ δ_a;
* **groups found privately** (docs/privacy.md §18): a key kept with probability p_k on
  its row count k is (ε₁, δ₁)-DP for a ±1 change iff p_0 = 0, p non-decreasing and, at
  every k, p_k ≤ e^{ε₁}·p_{k−1} + δ₁ and 1 − p_k ≥ e^{−ε₁}·(1 − p_{k−1} − δ₁) (DVGM
  2022); a neighbour changes :data:`SELECTION_KEYS_CHANGED` keys (one under add/remove,
  two under replace-one), composed (basic); the statistics that follow on the kept keys
  compose adaptively: the run states at least the sum;
* **replace-one**: an add/remove (ε, δ) run is (2ε, (1 + e^ε)·δ) under replace-one (group
  privacy of size 2), so a replace-one statement (ε̃, δ̃) is checked as the add/remove
  statement (ε̃/2, δ̃/(1 + e^{ε̃/2})).

A route verifies a statement only if its re-derived ε and δ are both at most the stated
ones, after every decimal quantity has been pushed to its unsafe side by a relative
:data:`SLACK` (far above the 10^−80 rounding of the arithmetic, far below the 2^−46
rounding margin the accountant states its floats with). A plan no route verifies is a bug
in dprect: :func:`check_fit_plan`, :func:`check_bounds_plan` and
:func:`check_describe_plan` refuse it with one line
naming only parameters (:class:`GuaranteeCheckError`), before anything is read or
reserved. A verified plan carries a :class:`CheckReport`, which the run's JSON states.
"""

from __future__ import annotations

import decimal
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from dprect.core.domains import Domain
from dprect.core.errors import ParameterError
from dprect.core.margins import LaplaceLaw, StaircaseLaw
from dprect.core.ties import refined

#: ρ per ε² of an ε-bounded-range mechanism (Cesar & Rogers 2021: ε-BR ⇒ ε²/8-zCDP)
BR_ZCDP = Fraction(1, 8)
#: the paper's constant: 35·ln(1/δ) paid rounds, each costing 2ε (Lemma 3.2)
PAPER_FACTOR = 70
#: the paper's accounting needs β < 1/4 and δ_p < e^{−2}
PAPER_MAX_BETA = Fraction(1, 4)
PAPER_MAX_LOG_DELTA = -2
#: the sensitivity of the private bounds' badness score, in rows (docs/privacy.md §9)
BOUNDS_SENSITIVITY = 1
#: the sensitivity of the describe centre's depth and of a side's tail counts, in rows
DESCRIBE_SENSITIVITY = 1
#: how many pools of one column a row enters when a column without an anchor draws ONE
#: centre from the pooled histogram of its small cells (docs/privacy.md §11, Lemma D6): a
#: row is in one group, whose cell of the column is in the pool or not — the pooled depth
#: moves by at most DESCRIBE_SENSITIVITY times this
DESCRIBE_POOLS_PER_ROW = 1
#: the describe statistics that read the noisy clamped sum (the count reads only its own
#: noise): written here again, not imported, so the check re-derives the split itself
DESCRIBE_SUMMED = ("sum", "mean")
#: the describe statistics that read the noisy clamped sum of squares (and the sum and
#: count: docs/privacy.md §17), written here again too
DESCRIBE_SPREAD = ("variance", "std")
#: a describe plan's drawn noises must re-derive at least (1 − this) of the requested
#: add/remove budget (the planner shrinks by 10⁻⁹; a share left undrawn is far larger)
DESCRIBE_UNSPENT = Fraction(1, 10**6)
#: the quantile box's aimed side scores this check knows, each with the most a row moves
#: one log-weight, in units of the aimed rate a (docs/privacy.md §16): the bracket score
#: a·((q_k − t)⁺ + (t − q_{k−1})⁺) by a (Lemma QB3: the two terms never move together).
#: Written here again, not imported from the sampler. A pair whose log-weights move by up
#: to a·s both ways is (2·s·a)-DP and bounded-range; a plan naming another score is refused
QUANTILE_AIMED_SHIFTS = {"bracket": 1}
#: the sensitivity of ``auto``'s count of the positives under add/remove, in rows
COUNT_SENSITIVITY = 1
#: the contest's selection: an exponential mechanism at rate ε_s/Δ on a utility whose
#: every entry moves the same way under add/remove (monotone) is ε_s·this-DP (McSherry &
#: Talwar: 1 for a monotone utility, 2 otherwise; docs/privacy.md §19, Lemma C1)
CONTEST_SELECT_FACTOR = 1
#: the add/remove steps one replace-one neighbour makes among a classes' fit's runs
#: (docs/privacy.md §12, Theorem K′): two inside one class's run, or one in each of two
CLASSES_REPLACE_STEPS = 2
#: relative slack by which every re-derived quantity is pushed to its unsafe side
SLACK = Decimal("1e-40")

_CONTEXT = decimal.Context(prec=80, rounding=decimal.ROUND_HALF_EVEN)


class GuaranteeCheckError(ParameterError):
    """The independent check could not re-derive a plan's stated guarantee: a dprect bug.
    The message names parameters only; nothing was read or reserved."""


@dataclass(frozen=True)
class CheckReport:
    """What the check re-derived: the route that verified the stated guarantee, its
    (ε, δ) (both at most the stated ones), and the failure bounds it recomputed."""

    product: str
    route: str
    epsilon: float
    delta: float
    neighbouring: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"product": self.product, "route": self.route, "epsilon": self.epsilon,
                "delta": self.delta, "neighbouring": self.neighbouring, **self.details}


# -- decimal helpers ---------------------------------------------------------------------------
def _dec(x: float | int | Fraction) -> Decimal:
    """The exact value of a float or int (a Fraction is divided out at 80 digits)."""
    with decimal.localcontext(_CONTEXT):
        if isinstance(x, Fraction):
            return Decimal(x.numerator) / Decimal(x.denominator)
        return Decimal(x)


def _high(x: Decimal) -> Decimal:
    """x pushed up by the relative slack (an upper bound of a computed quantity)."""
    with decimal.localcontext(_CONTEXT):
        return x + abs(x) * SLACK


def _low(x: Decimal) -> Decimal:
    """x pushed down by the relative slack (a lower bound of a computed quantity)."""
    with decimal.localcontext(_CONTEXT):
        return x - abs(x) * SLACK


def _ln(x: Decimal) -> Decimal:
    with decimal.localcontext(_CONTEXT):
        return x.ln()


def _exp(x: Decimal) -> Decimal:
    with decimal.localcontext(_CONTEXT):
        return x.exp()


def _float_up(x: Decimal) -> float:
    """A float ≥ x (for the report)."""
    f = float(x)
    return math.nextafter(f, math.inf) if _dec(f) < x else f


# -- statements --------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Route:
    name: str
    epsilon: Decimal
    delta: Decimal


def _bun_steinke(rho: Decimal, delta: Decimal) -> Decimal:
    """ε = ρ + 2√(ρ·ln(1/δ)): ρ-zCDP ⇒ (ε, δ)-DP (Bun & Steinke 2016, Prop. 1.3); upper."""
    with decimal.localcontext(_CONTEXT):
        return _high(rho + 2 * (rho * -_ln(delta)).sqrt())


def _cks_log_delta(rho: float, eps: float, alpha: float) -> float:
    """ln δ_α(ε) in floating point, for the search over α only."""
    am1 = alpha - 1.0
    return am1 * (alpha * rho - eps) - math.log(am1) + alpha * math.log1p(-1.0 / alpha)


def _cks_order(rho: Decimal, eps: Decimal) -> float:
    """An order α > 1 where ln δ_α(ε) is about minimal (every α is valid; the search only
    decides how tight the check is): a grid in u = ln(α − 1), then golden section."""
    r, e = float(rho), float(eps)

    def f(u: float) -> float:
        try:
            return _cks_log_delta(r, e, 1.0 + math.exp(u))
        except (OverflowError, ValueError):
            return math.inf

    grid = [-30.0 + 0.25 * i for i in range(281)]  # α − 1 from 1e-13 to 1.3e17
    values = [f(u) for u in grid]
    i = min(range(len(grid)), key=values.__getitem__)
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(200):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if f(a) <= f(b):
            hi = b
        else:
            lo = a
        if hi - lo < 1e-15:
            break
    best = min((grid[i], lo, hi, 0.5 * (lo + hi)), key=f)
    return 1.0 + math.exp(best)


def _cks_log_delta_exact(rho: Decimal, eps: Decimal, alpha: Decimal) -> Decimal:
    """ln δ_α(ε) = (α−1)(αρ − ε) − ln(α−1) + α·ln(1 − 1/α) in 80-digit decimal (α > 1)."""
    with decimal.localcontext(_CONTEXT):
        am1 = alpha - 1
        return am1 * (alpha * rho - eps) - _ln(am1) + alpha * _ln(am1 / alpha)


#: Newton steps that refine the float search's order in decimal (quadratic convergence
#: from the float's ~1e-8 relative error: three suffice; the rest are a margin)
CKS_NEWTON_STEPS = 6


def _cks_stationary(rho: Decimal, eps: Decimal, alpha: Decimal) -> Decimal:
    """The order where ln δ_α(ε) is least, refined in decimal from ``alpha``. Its
    derivative in α is g(α) = (2α − 1)ρ − ε + ln(1 − 1/α): increasing (g′ = 2ρ +
    1/(α(α−1)) > 0), so the minimum is g's one root, found by Newton's method (a step
    that would leave α > 1 halves the way to 1 instead). Every α > 1 gives a valid δ
    (Canonne, Kamath & Steinke 2020, Cor. 13): this only makes the check as tight as
    the accountant's own search where ln δ_α is flat (δ near 1; the float search's
    rounding there moved ln δ by ~1e-14)."""
    with decimal.localcontext(_CONTEXT):
        a = alpha
        for _ in range(CKS_NEWTON_STEPS):
            g = (2 * a - 1) * rho - eps + _ln((a - 1) / a)
            step = g / (2 * rho + 1 / (a * (a - 1)))
            a = a - step if a - step > 1 else (1 + a) / 2
        return a


def _cks_holds(rho: Decimal, eps: Decimal, delta: Decimal) -> Decimal | None:
    """The CKS δ at ε for ρ-zCDP (Canonne, Kamath & Steinke 2020, Prop. 12 and Cor. 13):
    δ_α(ε) = exp((α−1)(αρ − ε))/(α − 1)·(1 − 1/α)^α at the searched α, in decimal (upper);
    returned when it is at most ``delta``, else None."""
    if rho == 0:
        return Decimal(0)
    alpha = _dec(_cks_order(rho, eps))
    if not alpha > 1:
        return None
    with decimal.localcontext(_CONTEXT):
        log_d = min(_cks_log_delta_exact(rho, eps, a)
                    for a in (alpha, _cks_stationary(rho, eps, alpha)))
        log_d = log_d + abs(log_d) * SLACK + SLACK
        if log_d > _ln(delta):
            return None
        return _high(_exp(log_d))


def _zcdp_routes(name: str, rho: Decimal, eps: Decimal, delta: Decimal, extra_delta: Decimal
                 ) -> list[_Route]:
    """The routes from ρ-zCDP (on an event whose complement has probability
    ``extra_delta``) to the stated (ε, δ): Bun–Steinke and CKS at δ₂ = δ − extra."""
    with decimal.localcontext(_CONTEXT):
        d2 = delta - extra_delta
    if not d2 > 0:
        return []
    out = [_Route(f"{name}, Bun-Steinke conversion", _bun_steinke(rho, d2), delta)]
    cks = _cks_holds(rho, eps, d2)
    if cks is not None:
        with decimal.localcontext(_CONTEXT):
            out.append(_Route(f"{name}, CKS conversion", eps, _high(cks + extra_delta)))
    return out


def _count_first(count: Any, eps_a: Decimal, details: dict[str, Any], product: str,
                 stated: tuple[float, float]) -> tuple[Decimal | None, Decimal]:
    """Auto's private count of the positives (the plan's ``private_count``), drawn first:
    its ε_c (None without one) and the ε left for the rounds, eps_a − ε_c (basic
    composition; :func:`_with_count` adds it back to the route found); refused when the
    count spends it all."""
    count_eps = _count_epsilon(count)
    if count_eps is None:
        return None, eps_a
    with decimal.localcontext(_CONTEXT):
        eps_a = eps_a - count_eps
    details["private_count_epsilon"] = _float_up(count_eps)
    if eps_a <= 0:
        raise _refuse(product, "its private count spends the whole epsilon", *stated)
    return count_eps, eps_a


def _with_count(best: _Route, count_eps: Decimal | None) -> _Route:
    """``best`` after auto's private count of the positives (ε_c, 0), by basic composition
    (docs/privacy.md §13; exact in the check's context: ≤ the target); ``best`` itself
    when there is no count."""
    if count_eps is None:
        return best
    with decimal.localcontext(_CONTEXT):
        return _Route(f"{best.name}; + a count of the positives with discrete Laplace "
                      f"noise ({_float_up(count_eps):.6g}, 0) by basic composition",
                      best.epsilon + count_eps, best.delta)


def _best(routes: list[_Route], eps: Decimal, delta: Decimal) -> _Route | None:
    """The first route (in order) whose ε and δ are both within the stated ones."""
    for r in routes:
        if r.epsilon <= eps and r.delta <= delta:
            return r
    return None


def _composition_routes(eps0: Decimal, rounds: int, eps: Decimal, delta: Decimal
                        ) -> list[_Route]:
    """R mechanisms, each ε₀-DP and ε₀-bounded-range, composed adaptively."""
    with decimal.localcontext(_CONTEXT):
        routes = [_Route(f"basic composition of {rounds} mechanisms",
                         _high(rounds * eps0), Decimal(0))]
        if delta > 0:
            rho = _high(rounds * eps0 * eps0 * _dec(BR_ZCDP))
            routes += _zcdp_routes(f"zCDP of {rounds} bounded-range mechanisms", rho, eps,
                                   delta, Decimal(0))
    return routes


def _add_remove_target(eps: float, delta: float, neighbouring: str) -> tuple[Decimal, Decimal]:
    """The add/remove statement that implies the stated one: itself, or for replace-one
    (ε̃/2, δ̃/(1 + e^{ε̃/2})) (group privacy of size 2), rounded to the safe side."""
    e, d = _dec(eps), _dec(delta)
    if neighbouring == "add-remove":
        return e, d
    if neighbouring != "replace-one":
        raise GuaranteeCheckError(f"the independent guarantee check knows no neighbouring "
                                  f"relation {neighbouring!r}")
    with decimal.localcontext(_CONTEXT):
        half = e / 2
        return _low(half), _low(d / (1 + _high(_exp(half))))


def _refuse(product: str, what: str, eps: float, delta: float) -> GuaranteeCheckError:
    return GuaranteeCheckError(
        f"the independent guarantee check refused this {product} plan: {what} (stated "
        f"epsilon={eps!r}, delta={delta!r}); nothing was read or reserved. This is a bug "
        f"in dprect: please report it with the parameters")


# -- RandMargins and the composition baseline ----------------------------------------------
def _law_ratio(law: object, window: int) -> Decimal:
    """ρ = inf_{r ≥ 1} P(N ≥ r + Δ)/P(N ≥ r) of a margin law, for a round whose window is
    Δ = ``window``, from the law's own definition (a lower bound)."""
    if isinstance(law, StaircaseLaw):
        # N = Δ_L·(1 + J), P(J ≥ j) = ρ_L^j: P(N ≥ r) = ρ_L^(⌈r/Δ_L⌉ − 1) for r > Δ_L, else 1.
        # Between r and r + Δ at most ⌈Δ/Δ_L⌉ steps are crossed.
        steps = -(-window // law.size)
        return _low(_dec(law.rho_fraction ** steps))
    if isinstance(law, LaplaceLaw):
        # N = max(Δ_L, μ + ⌈w⌉), w ~ Laplace(0, b): P(N ≥ r) = T(r − μ) for r > Δ_L with
        # T(k) = P(w > k − 1) = ½e^{−(k−1)/b} (k ≥ 1), 1 − ½e^{(k−1)/b} (k ≤ 0). T is
        # log-concave, so its ratio over Δ falls to its limit e^{−Δ/b}; for r ≤ Δ_L the
        # ratio is P(N ≥ r + Δ) ≥ P(N ≥ Δ_L + Δ).
        b = _dec(law.scale)
        with decimal.localcontext(_CONTEXT):
            k = Decimal(law.size + window - law.mu)
            tail = (_exp(-(k - 1) / b) / 2) if k >= 1 else (1 - _exp((k - 1) / b) / 2)
            return _low(min(_exp(-Decimal(window) / b), tail))
    raise GuaranteeCheckError(f"the independent guarantee check knows no margin law "
                              f"{type(law).__name__}")


def _rounds_of(shape: str, dims: int) -> set[tuple[int, str]]:
    if shape == "origin":
        return {(j, "hi") for j in range(dims)}
    return {(j, s) for j in range(dims) for s in ("lo", "hi")}


def check_fit_plan(method_plan: Any, domains: Sequence[Domain], *, beta: float,
                   shape: str) -> CheckReport:
    """Re-derive the guarantee of a rectangle plan (a :class:`~dprect.core.planner.MethodPlan`
    as it will execute on ``domains``) and its interior-point failure bounds; refuse it
    (:class:`GuaranteeCheckError`) unless both hold. ``beta`` and ``shape`` are the
    request's."""
    g = method_plan.guarantee
    product = "rectangle"
    eps_a, delta_a = _add_remove_target(g.epsilon, g.delta, g.neighbouring)
    best, details = _run_route(method_plan, domains, beta, shape, product, eps_a, delta_a,
                               g.epsilon, g.delta)
    return _report(product, best, g.neighbouring, details)


def _run_route(p: Any, domains: Sequence[Domain], beta: float, shape: str, product: str,
               eps_a: Decimal, delta_a: Decimal, stated_eps: float, stated_delta: float
               ) -> tuple[_Route, dict[str, Any]]:
    """The route by which ONE run of the rectangle plan ``p`` meets the add/remove
    statement (``eps_a``, ``delta_a``), with what was recomputed on the way; refused
    (naming the stated ε and δ) unless some route does and every interior point's failure
    is within β_IP."""
    stated = stated_eps, stated_delta  # what a refusal names
    rounds = list(p.rounds)
    big_r = len(rounds)
    if {(r.axis, r.side) for r in rounds} != _rounds_of(shape, len(domains)) or \
            big_r != len(_rounds_of(shape, len(domains))):
        raise _refuse(product, "its rounds are not one per side of every axis", *stated)
    if p.method == "quantiles":
        return _check_quantiles(p, len(domains), shape, product, eps_a, delta_a, stated)
    eps0 = _dec(p.ip_epsilon)
    beta_ip = _dec(p.ip_beta)
    if not 0 < p.ip_beta or Fraction(p.ip_beta) * 2 * big_r > Fraction(beta):  # exact
        raise _refuse(product, "its interior-point failure targets exceed beta",
                          *stated)
    # -- every round's interior point: M·exp(−ε⌈Δ/2⌉/2) ≤ β_IP on the grid it runs on
    bits = [0] * len(domains)
    for r in rounds:  # the refinement the engine applies (MethodPlan.tie_breaker)
        bits[r.axis] = max(bits[r.axis], int(r.tie_bits))
    log_beta_ip = _ln(beta_ip)
    worst = None
    seen: dict[tuple[int, int], Decimal] = {}
    for r in rounds:
        grid = int(refined(domains[r.axis], bits[r.axis]).size)
        key = (grid, int(r.ip_size))
        if key not in seen:
            with decimal.localcontext(_CONTEXT):
                seen[key] = _high(_ln(Decimal(grid)) - eps0 * ((r.ip_size + 1) // 2) / 2)
        log_fail = seen[key]
        if log_fail > log_beta_ip:
            raise _refuse(product, f"a round on axis {r.axis} ({grid:,} grid points, "
                          f"window {r.ip_size}) fails more often than beta_IP",
                          *stated)
        worst = log_fail if worst is None else max(worst, log_fail)
    details: dict[str, Any] = {
        "ip_failure_target": p.ip_beta,
        "max_ip_failure_bound": _float_up(_exp(worst)) if worst is not None else 0.0,
        "rounds": big_r,
    }
    count_eps, eps_a = _count_first(p.details.get("private_count"), eps_a, details,
                                    product, stated)
    if p.method == "composition":
        routes = _composition_routes(eps0, big_r, eps_a, delta_a)
    elif p.method == "randmargins" and p.accounting == "refined":
        rho = min(_law_ratio(r.law, int(r.ip_size)) for r in rounds)
        with decimal.localcontext(_CONTEXT):
            q = _low(rho * (1 - beta_ip))
        details["q"] = float(q)
        routes = []
        witness = int(p.details.get("k", big_r))
        for k in sorted({max(1, min(witness, big_r)), big_r}):
            with decimal.localcontext(_CONTEXT):
                escape = Decimal(0) if k >= big_r else _high((1 - q) ** k)
                routes.append(_Route(f"refined theorem, pure bound (k={k} of {big_r})",
                                     _high(k * eps0), escape))
                rho_k = _high(k * eps0 * eps0 * _dec(BR_ZCDP))
            routes += _zcdp_routes(f"refined theorem, bounded range (k={k} of {big_r})",
                                   rho_k, eps_a, delta_a, escape)
    elif p.method == "randmargins" and p.accounting == "paper":
        routes = _paper_routes(p, rounds, beta_ip, big_r)
    else:
        raise _refuse(product, f"method {p.method!r} with accounting {p.accounting!r} is "
                      f"not one the check knows", *stated)
    best = _best(routes, eps_a, delta_a)
    if best is None:
        raise _refuse(product, "no route re-derives its stated guarantee from its per-round "
                      f"epsilon {p.ip_epsilon!r}", *stated)
    return _with_count(best, count_eps), details


def check_classes_plan(method_plan: Any, domains: Sequence[Domain], *, beta: float,
                       shape: str, charge: Any, classes: int | None) -> CheckReport:
    """Re-derive the charge of a classes' fit (docs/privacy.md §12): ``classes`` runs of
    (None: any number — the classes a private selection keeps, docs/privacy.md §18)
    the rectangle plan ``method_plan`` on disjoint positive sets, charged ONCE as
    ``charge`` (an (ε̃, δ̃) with its neighbouring relation). The charge holds when one
    run meets the add/remove statement (ε_a, δ_a) below, whose route this check finds as
    for a single fit (:func:`check_fit_plan`'s routes, from the rounds themselves):

    * add/remove (Theorem K): a row added or removed changes one class's positives at
      most, the other runs' inputs are unchanged (parallel composition): (ε_a, δ_a) =
      (ε̃, δ̃);
    * replace-one (Theorem K′): a replaced row is :data:`CLASSES_REPLACE_STEPS` = 2
      add/remove steps, either both inside one class's run — group privacy of size 2,
      (2ε_a, (1 + e^{ε_a})·δ_a) — or one in each of two classes' runs with independent
      noise — basic composition, (2ε_a, 2δ_a). Both must be within (ε̃, δ̃): ε_a = ε̃/2
      and δ_a = min(δ̃/(1 + e^{ε̃/2}), δ̃/2).

    Refuses (:class:`GuaranteeCheckError`) a charge no route re-derives."""
    product = "classes"
    if classes is not None and int(classes) < 1:
        raise _refuse(product, "it has no class", charge.epsilon, charge.delta)
    runs = "any number of" if classes is None else str(int(classes))
    steps = CLASSES_REPLACE_STEPS
    e, d = _dec(charge.epsilon), _dec(charge.delta)
    if charge.neighbouring == "add-remove":
        eps_a, delta_a = e, d
        how = (f"parallel composition of {runs} runs on disjoint rows (one run "
               f"changes)")
    elif charge.neighbouring == "replace-one":
        with decimal.localcontext(_CONTEXT):
            eps_a = _low(e / steps)
            same = d / _high(sum((_exp(i * eps_a) for i in range(steps)), Decimal(0)))
            cross = d / steps  # one add/remove step in each of `steps` runs
            delta_a = _low(min(same, cross))
        how = (f"replace-one over {runs} runs: {steps} add/remove steps, in one "
               f"run (group privacy) or one in each of {steps} runs (basic composition)")
    else:
        raise GuaranteeCheckError(f"the independent guarantee check knows no neighbouring "
                                  f"relation {charge.neighbouring!r}")
    best, details = _run_route(method_plan, domains, beta, shape, product, eps_a, delta_a,
                               charge.epsilon, charge.delta)
    eps, delta = best.epsilon, best.delta
    if charge.neighbouring == "replace-one":
        with decimal.localcontext(_CONTEXT):
            eps = _high(steps * eps)
            delta = _high(max(sum((_high(_exp(i * best.epsilon)) for i in range(steps)),
                                  Decimal(0)),
                              Decimal(steps)) * delta)
    details["classes"] = None if classes is None else int(classes)
    return CheckReport(product, f"{best.name}; {how}", _float_up(eps), _float_up(delta),
                       charge.neighbouring, details)


def _check_quantiles(p: Any, dims: int, shape: str, product: str, eps_a: Decimal,
                     delta_a: Decimal, stated: tuple[float, float]
                     ) -> tuple[_Route, dict[str, Any]]:
    """The quantile box (docs/privacy.md §16), from the rates its sampler draws with: per
    axis the centre's depth mechanism at rate c (weight exp(c·depth); adding a row raises
    every depth by 0 or 1 — a monotone sensitivity-1 score: c-DP and c-bounded-range;
    none for the origin shape, whose centre is the public 0)
    and the side pair's step mechanism at ε_s (weight exp(−ε_s·clipped − μ·step), a
    monotone sensitivity-1 score: ε_s-DP and ε_s-bounded-range), or, aimed at a target,
    at the aimed rate a with the bracket score (weight exp(−a·((q_k − t)⁺ +
    (t − q_{k−1})⁺) − μ·step): each log-weight moves both ways, by at most a —
    2a-DP and 2a-bounded-range, so charged 2a; :data:`QUANTILE_AIMED_SHIFTS`); the two sides
    read disjoint rows: parallel; all 2d (d) mechanisms composed as R ε₀-bounded-range
    mechanisms, ε₀ the largest of their ε's; auto's count by basic composition. The
    route by which ONE run meets the add/remove statement (``eps_a``, ``delta_a``), as
    :func:`_run_route` returns it."""
    d = p.details
    try:
        side = Fraction(str(d["side_epsilon"]))
        centre = None if d.get("centre_rate") is None else Fraction(str(d["centre_rate"]))
        decay = Fraction(str(d["decay"]))
        aimed = Fraction(str(d["aimed_rate"]))
        shift = QUANTILE_AIMED_SHIFTS[str(d["aimed_score"])]
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        raise _refuse(product, "its quantile rates cannot be read", *stated) from None
    origin = shape == "origin"
    if side <= 0 or decay <= 0 or aimed <= 0 or (centre is None) != origin or (
            centre is not None and centre <= 0):
        raise _refuse(product, "its quantile rates are not positive (or its centre does "
                      "not match its shape)", *stated)
    mechanisms = dims if origin else 2 * dims  # (centres) + side pairs
    pair = max(_dec(side), _dec(2 * shift * aimed))  # the aimed pair: 2·s·a (Lemma QB3)
    eps0 = _high(pair) if centre is None else _high(max(pair, _dec(centre)))
    details: dict[str, Any] = {"mechanisms": mechanisms}
    count_eps, eps_a = _count_first(d.get("private_count"), eps_a, details, product, stated)
    best = _best(_composition_routes(eps0, mechanisms, eps_a, delta_a), eps_a, delta_a)
    if best is None:
        raise _refuse(product, "no route re-derives its stated guarantee from its quantile "
                      f"rates (side {float(side)!r})", *stated)
    return _with_count(best, count_eps), details


def _count_epsilon(count: Any) -> Decimal | None:
    """The add/remove ε of ``auto``'s private count (None: the plan has none): a count
    has sensitivity :data:`COUNT_SENSITIVITY` under add/remove, and adding DLap(b) noise
    to it is (sensitivity/b, 0)-DP (the discrete Laplace mechanism), b read from the
    plan as the exact rational the sampler uses."""
    if count is None:
        return None
    try:
        scale = Fraction(str(count["scale"]))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        raise GuaranteeCheckError("the independent guarantee check cannot read the plan's "
                                  "private count") from None
    if scale <= 0:
        raise GuaranteeCheckError("the plan's private count has a non-positive scale")
    return _high(_dec(Fraction(COUNT_SENSITIVITY) / scale))


def check_contest_plan(contest: Any, count: Any, domains: Sequence[Domain], *, beta: float,
                       shape: str, stated: tuple[float, float, str]) -> CheckReport:
    """Re-derive the guarantee of ``auto``'s contest (:class:`~dprect.core.planner.ContestPlan`,
    ``count`` the plan's private count's JSON) against the plan's statement ``stated`` =
    (ε, δ, neighbouring): each fit re-derived as ONE run at its own stated add/remove
    (ε_i, δ_i) (its rounds, rates and failure bounds, as :func:`check_fit_plan`), then
    the count of the positives (1/b), the count of the negatives (1/b⁻, same sensitivity
    :data:`COUNT_SENSITIVITY`) and the selection (:data:`CONTEST_SELECT_FACTOR`·ε_s, ε_s
    the exact rational the sampler uses) added by basic composition; refused unless
    Σε ≤ ε_a and Σδ ≤ δ_a of the statement's add/remove target."""
    product = "rectangle (auto's contest)"
    eps_s, delta_s, neighbouring = stated
    eps_a, delta_a = _add_remove_target(eps_s, delta_s, neighbouring)
    total_eps, total_delta = Decimal(0), Decimal(0)
    names: list[str] = []
    details: dict[str, Any] = {}
    for fit in (contest.old, contest.box):
        g = fit.guarantee
        if g.neighbouring != "add-remove" or fit.details.get("private_count") is not None:
            raise _refuse(product, "a fit of the contest is not stated add/remove on its "
                          "own", eps_s, delta_s)
        fe, fd = _dec(g.epsilon), _dec(g.delta)
        best, _ = _run_route(fit, domains, beta, shape, product, fe, fd, eps_s, delta_s)
        with decimal.localcontext(_CONTEXT):
            total_eps, total_delta = total_eps + best.epsilon, total_delta + best.delta
        names.append(f"{fit.method}: {best.name}")
    count_eps = _count_epsilon(count)
    negatives_eps = _count_epsilon({"scale": contest.negatives.scale})
    try:
        select = Fraction(str(contest.select_epsilon))
    except (TypeError, ValueError, ZeroDivisionError):
        raise _refuse(product, "its selection's epsilon cannot be read", eps_s,
                      delta_s) from None
    if count_eps is None or negatives_eps is None or select <= 0:
        raise _refuse(product, "its counts or selection are missing", eps_s, delta_s)
    with decimal.localcontext(_CONTEXT):
        select_eps = _high(_dec(CONTEST_SELECT_FACTOR * select))
        total_eps = total_eps + count_eps + negatives_eps + select_eps
    details.update({"private_count_epsilon": _float_up(count_eps),
                    "negatives_noise_epsilon": _float_up(negatives_eps),
                    "select_epsilon": _float_up(select_eps)})
    if total_eps > eps_a or total_delta > delta_a:
        raise _refuse(product, "its parts add up to more than its stated guarantee",
                      eps_s, delta_s)
    best = _Route("basic composition of a count of the positives, a count of the "
                  "negatives, " + ", ".join(names) + " and the monotone selection",
                  total_eps, total_delta)
    return _report(product, best, neighbouring, details)


def _paper_routes(p: Any, rounds: list[Any], beta_ip: Decimal, big_r: int) -> list[_Route]:
    """The paper's Lemma 3.2: (70·ε·ln(1/δ_p), (R + 2)·δ_p) with its Laplace law."""
    delta_p = _dec(float(p.details.get("paper_delta", 0.0)))
    if not (0 < delta_p and _ln(delta_p) < PAPER_MAX_LOG_DELTA
            and beta_ip < _dec(PAPER_MAX_BETA)):
        return []
    for r in rounds:
        law = r.law
        with decimal.localcontext(_CONTEXT):
            if not (isinstance(law, LaplaceLaw) and law.size == r.ip_size
                    and law.scale == 2 * r.ip_size
                    and Decimal(law.mu) >= _high(4 * law.size * -_ln(beta_ip))):
                return []
    eps0 = _dec(p.ip_epsilon)
    with decimal.localcontext(_CONTEXT):
        return [_Route("paper (Lemma 3.2)", _high(PAPER_FACTOR * eps0 * -_ln(delta_p)),
                       _high((big_r + 2) * delta_p))]


def _report(product: str, best: _Route, neighbouring: str, details: dict[str, Any]
            ) -> CheckReport:
    eps, delta = best.epsilon, best.delta
    route = best.name
    if neighbouring == "replace-one":
        with decimal.localcontext(_CONTEXT):
            eps, delta = 2 * eps, _high((1 + _high(_exp(eps))) * delta)
        route += "; replace-one by group privacy (2eps, (1+e^eps)delta)"
    return CheckReport(product, route, _float_up(eps), _float_up(delta), neighbouring, details)


# -- private bounds --------------------------------------------------------------------------
def check_bounds_plan(plan: Any) -> CheckReport:
    """Re-derive the guarantee of a private-bounds plan (a
    :class:`~dprect.core.bounds.BoundsPlan`) and each column's rank error; refuse it
    (:class:`GuaranteeCheckError`) unless both hold."""
    g = plan.guarantee
    product = "bounds"
    b = plan.alpha.denominator
    mechanisms = 2 * len(plan.domains)
    # each draw: weight exp(c·depth), depth in units of 1/b rows, sensitivity s rows, so the
    # mechanism is (2·c·b·s)-DP and -bounded-range
    eps_m = Fraction(plan.c) * 2 * b * BOUNDS_SENSITIVITY
    eps0 = _dec(eps_m)
    lam = _dec(Fraction(plan.c) * b)  # the rate per row: exp(−λ·badness)
    log_target = _ln(_dec(plan.request.beta) / mechanisms)
    for j, (d, t) in enumerate(zip(plan.domains, plan.rank_error, strict=True)):
        with decimal.localcontext(_CONTEXT):
            log_fail = _high(_ln(Decimal(int(d.size))) - lam * _dec(t))
        if log_fail > log_target:
            raise _refuse(product, f"column {j}'s rank error T does not reach beta/(2d)",
                          g.epsilon, g.delta)
    eps_a, delta_a = _add_remove_target(g.epsilon, g.delta, g.neighbouring)
    best = _best(_composition_routes(eps0, mechanisms, eps_a, delta_a), eps_a, delta_a)
    if best is None:
        raise _refuse(product, "no route re-derives its stated guarantee from its sampler "
                      "rate", g.epsilon, g.delta)
    return _report(product, best, g.neighbouring,
                   {"mechanisms_per_group": mechanisms, "epsilon_each": float(eps_m),
                    "groups": "parallel (disjoint)"})


# -- describe: bounds aimed at a query, then count / sum / mean -----------------------------
def check_describe_plan(plan: Any) -> CheckReport:
    """Re-derive the guarantee of a describe plan (a
    :class:`~dprect.core.aggregates.DescribePlan`) from the exact rates and scales its
    samplers use; refuse it (:class:`GuaranteeCheckError`) unless it holds.

    A plan with a count draws it first and picks each cell's split (``plan.tiers``) by
    the released count (adaptive composition, docs/privacy.md §11, "Small groups"): a
    cell spends the count's ε plus its split's, so every split is re-derived and the
    largest counts; more than one split needs the count drawn first, selected by
    decreasing ``min_count`` with the last one taking every count below."""
    g = plan.guarantee
    product = "describe"
    s = Fraction(DESCRIBE_SENSITIVITY)
    tiers = list(plan.tiers)
    asked = set(plan.statistics)
    if (plan.count_scale is not None) != bool(asked):
        raise _refuse(product, "the count noise does not match the statistics asked",
                      g.epsilon, g.delta)
    if not tiers or tiers[-1].min_count is not None or (
            len(tiers) > 1 and plan.count_scale is None):
        raise _refuse(product, "its splits are not chosen by a released count (the last "
                      "must take every count)", g.epsilon, g.delta)
    bars = [t.min_count for t in tiers[:-1]]
    if None in bars or any(a <= b for a, b in itertools.pairwise(bars)):
        raise _refuse(product, "its splits' least counts do not decrease", g.epsilon,
                      g.delta)
    count = Fraction(0)
    parts: dict[str, Any] = {}
    if plan.count_scale is not None:
        count = s / Fraction(plan.count_scale)
        parts["count"] = float(count)
    # the sum of squares (a variance or a std asked; the same in every split): a row adds
    # a term in [0, h²] to Q, so at most 2^K units of h²/2^K to the rounded integer
    # (privacy.md §17, Lemma V1): sensitivity = the plan's per-row clip
    squares_scale = getattr(plan, "squares_scale", None)
    if (squares_scale is not None) != bool(asked & set(DESCRIBE_SPREAD)):
        raise _refuse(product, "the sum-of-squares noise does not match the statistics "
                      "asked (drawn only for a variance or a std)", g.epsilon, g.delta)
    if squares_scale is not None:
        sens = int(plan.squares_sensitivity)
        if sens < 1:
            raise _refuse(product, "a sum-of-squares clip below one unit", g.epsilon,
                          g.delta)
        squares = Fraction(sens) / Fraction(squares_scale)
        count += squares  # drawn whatever the split: spent with the count
        parts["sum of squares"] = float(squares)
    # the pooled split (a column without an anchor: a function of the released counts)
    # is one more split a cell may take, re-derived like the others
    pooled = getattr(plan, "pooled", None)
    if pooled is not None and (not pooled.pooled or plan.count_scale is None):
        raise _refuse(product, "its pooled split is not marked pooled, or is not chosen by "
                      "released counts", g.epsilon, g.delta)
    splits = []
    for tier in [*tiers, *([pooled] if pooled is not None else [])]:
        # the centre's exponential mechanism at rate c is 2c-DP (depth sensitivity s); an
        # anchored centre (rate 0) reads no row of its group: other groups' releases; the
        # pooled split's one centre per column reads the union of its cells' rows, each
        # row in DESCRIBE_POOLS_PER_ROW pool(s): depth sensitivity s times that (Lemma D6)
        pools = DESCRIBE_POOLS_PER_ROW if tier.pooled else 1
        # an own centre is two draws (Lemma D2), both exponential mechanisms read at the
        # rates the sampler is given: the sign class, weight exp(rate·rows of the class)
        # (a row moves one class's score by s: 2·rate·s), then the magnitude's median,
        # exp(rate·depth of |x|) (2·rate·s); basic composition. Both drawn or neither
        sign_rate = Fraction(tier.sign_rate)
        magnitude_rate = Fraction(tier.magnitude_rate)
        if sign_rate < 0 or magnitude_rate < 0 or (sign_rate > 0) != (magnitude_rate > 0) \
                or (sign_rate + magnitude_rate > 0) == bool(tier.anchored):
            raise _refuse(product, "a centre's sign and magnitude are not both drawn (or "
                          "an anchored centre draws)", g.epsilon, g.delta)
        sign = sign_rate * 2 * s * pools
        magnitude = magnitude_rate * 2 * s * pools
        # each side: exp(−rate·clipped rows) over its steps, a monotone utility (every
        # step's clipped rows move the same way, by at most s): rate·s, not 2·rate·s; the
        # two sides (disjoint rows) in parallel
        sides = Fraction(tier.side_rate) * s
        # the sum noise is drawn for a sum or a mean only (a count-only run draws none)
        if (tier.sum_scale is not None) != bool(
                asked & set(DESCRIBE_SUMMED + DESCRIBE_SPREAD)):
            raise _refuse(product, "the sum noise does not match the statistics asked (a "
                          "count-only run draws none)", g.epsilon, g.delta)
        summed = Fraction(0)
        if tier.sum_scale is not None:
            sens = int(tier.sum_sensitivity)
            if sens < 1:
                raise _refuse(product, "a sum clip below one unit", g.epsilon, g.delta)
            summed = Fraction(sens) / Fraction(tier.sum_scale)
        splits.append({"centre: sign": sign, "centre: magnitude": magnitude,
                       "sides (parallel)": sides, "sum": summed})
    totals = [count + sum(split.values(), Fraction(0)) for split in splits]
    per_column = max(totals)
    total = per_column * int(plan.columns)
    eps_a, delta_a = _add_remove_target(g.epsilon, g.delta, g.neighbouring)
    with decimal.localcontext(_CONTEXT):
        drawn = ", count" if "count" in parts else ""
        drawn += ", sum" if any(split["sum"] for split in splits) else ""
        drawn += ", sum of squares" if "sum of squares" in parts else ""
        chosen = (f"; the count first, then one of {len(tiers)} splits by its released "
                  f"value (adaptive composition)" if len(tiers) > 1 else "")
        chosen += (", or the pooled split by the column's released counts"
                   if pooled is not None else "")
        route = _Route(f"basic composition of {plan.columns} column(s) (centre, two "
                       f"sides in parallel{drawn}{chosen}), groups in parallel",
                       _high(_dec(total)), Decimal(0))
    best = _best([route], eps_a, delta_a)
    if best is None:
        raise _refuse(product, "no route re-derives its stated guarantee from its sampler "
                      "rates", g.epsilon, g.delta)
    # the split spends the request: what the drawn noises re-derive reaches the
    # add/remove budget of the requested epsilon (up to DESCRIBE_UNSPENT), under every
    # split a count may pick: a share left to a mechanism that is not drawn is a planner
    # bug (issue #40's count-only split)
    budget, _ = _add_remove_target(plan.epsilon, plan.delta, g.neighbouring)
    with decimal.localcontext(_CONTEXT):
        short = any(_dec(t * int(plan.columns)) < budget * (1 - _dec(DESCRIBE_UNSPENT))
                    for t in totals)
    if short:
        raise _refuse(product, "its drawn noises spend less than the requested epsilon "
                      "(a share goes to no released statistic)", g.epsilon, g.delta)
    first = splits[0]
    parts.update({k: float(v) for k, v in first.items() if k != "sum" or v})
    details: dict[str, Any] = {"epsilon_per_column": float(per_column), "per_column": parts,
                               "groups": "parallel (disjoint)"}
    if len(tiers) > 1:
        details["splits_by_released_count"] = [
            {k: float(v) for k, v in split.items()} for split in splits]
    return _report(product, best, g.neighbouring, details)


# -- quantiles -------------------------------------------------------------------------------
#: the rows one neighbour adds or removes, which move #{x < v} and #{x ≤ v} by at most this
#: and q·n by q times this, so the rank score of q by at most max(q, 1 − q) times this
#: (docs/privacy.md §11a, Lemma Q1), the check's own constant
QUANTILE_SENSITIVITY = 1
#: how many pools of one column a row enters when the cells whose noisy count is below the
#: plan's ``pool_rows`` draw ONE centre per column from their pooled rows (docs/privacy.md
#: §11a, Lemma Q5): a row is in one group, whose cell of the column is in the pool or not
#: — the pooled centre's depths move by at most QUANTILE_SENSITIVITY times this. (An
#: anchored pool, Lemma Q6, draws no centre: post-processing of other cells' releases,
#: its split the small one less the centre's ε — no split of its own to re-derive.)
QUANTILE_POOLS_PER_ROW = 1


def _rank_units(q: Fraction) -> int:
    """max(a, b − a) for q = a/b in lowest terms: the most the score b·bad_q moves per
    row a neighbour adds or removes (#{x < v}, #{x ≤ v} by 0 or b units, b·q·n by a:
    Lemma Q1), the check's own derivation."""
    a, b = q.numerator, q.denominator
    return max(a, b - a)


def check_quantiles_plan(plan: Any) -> CheckReport:
    """Re-derive the guarantee of a quantiles plan (a
    :class:`~dprect.core.quantiles.QuantilePlan`) from the exact rates its samplers use:
    draw j weighs a bin by exp(−c_j·(b_j·bad)) with bad of sensitivity max(q_j, 1 − q_j)
    row, i.e. max(a_j, b_j − a_j) units of 1/b_j row (q_j = a_j/b_j), a score that moves
    both ways: ε_j = 2·c_j·max(a_j, b_j − a_j) (Lemma B2); a centred plan's centre is the
    rank law of q = 1/2 on the blocks at rate c_c per 1/2 row, sensitivity one unit
    (ε = 2·c_c), its flag count a two-sided geometric of scale t (ε = s/t), and the base
    measure around the centre is public given it. Per column the draws compose (basic),
    the columns compose (basic), groups in parallel; refuse the plan
    (:class:`GuaranteeCheckError`) unless the total is within the stated ε."""
    product = "quantiles"
    qs = [Fraction(q) for q in plan.quantiles]
    rates = [Fraction(r) for r in plan.rates]
    columns = int(plan.columns)
    if not qs or len(qs) != len(rates) or any(not 0 < q < 1 for q in qs) or columns < 1:
        raise _refuse(product, "its quantiles are not a list in (0, 1), one rate each",
                      plan.epsilon, 0.0)
    s = Fraction(QUANTILE_SENSITIVITY)
    parts = [2 * c * _rank_units(q) * s for q, c in zip(qs, rates, strict=True)]
    total = sum(parts, Fraction(0))
    pool_rows = int(getattr(plan, "pool_rows", 0))
    if pool_rows < 0 or (pool_rows and (not plan.counted or pool_rows > plan.split_rows)):
        # a pooled cell is a cell of the small split, chosen by its released count only
        raise _refuse(product, "its pool's row need is not a released count below the "
                      "small groups' split", plan.epsilon, 0.0)
    if plan.counted:  # the count, then either split's centre and draws (adaptive)
        count = s / Fraction(plan.count_scale)
        # (split, pools a row's centre reads): the large, the small (own centre) and, with
        # a pool, the small split around its column's ONE pooled centre (Lemma Q5)
        splits = [(plan, 1), (plan.branch(-1), 1),
                  *([(plan.branch(-1), QUANTILE_POOLS_PER_ROW)] if pool_rows else [])]
        totals = [count
                  + 2 * (Fraction(p.centre_rate) + Fraction(p.sign_rate))
                  * _rank_units(Fraction(1, 2)) * s * pools
                  + sum((2 * c * _rank_units(q) * s
                         for q, c in zip(qs, p.rates, strict=True)), Fraction(0))
                  for p, pools in splits]
        parts = [count, *(t - count for t in totals)]
        total = max(totals)
    eps_a, delta_a = _add_remove_target(plan.epsilon, 0.0, plan.neighbouring)
    with decimal.localcontext(_CONTEXT):
        route = _Route(f"basic composition of {columns} column(s) x {len(parts)} draw(s) "
                       "(rank scores of sensitivity max(q, 1 - q) and a count of 1; adaptive "
                       "split), groups "
                       "in parallel", _high(_dec(columns * total)), Decimal(0))
    best = _best([route], eps_a, delta_a)
    if best is None:
        raise _refuse(product, "no route re-derives its stated guarantee from its sampler "
                      "rates", plan.epsilon, 0.0)
    return _report(product, best, plan.neighbouring,
                   {"per_draw": [float(p) for p in parts], "columns": columns,
                    "groups": "parallel (disjoint)"})


# -- several mechanisms in one run -----------------------------------------------------------
#: each mechanism's own check entry, by the product name a mixed plan records
_PART_CHECKS = {"bounds": check_bounds_plan, "describe": check_describe_plan,
                "quantiles": check_quantiles_plan}


def check_mixed_plan(plan: Any) -> CheckReport:
    """Re-derive the guarantee of a run of several mechanisms (a
    :class:`~dprect.core.mixed.MixedPlan`; docs/privacy.md §11b): every part's own check
    entry re-run on its plan, every part pure and stated within its declared share
    ε·w_i/Σw (exact rationals, the weights the plan records), and, by basic composition,
    the parts' ε (each verified by its own entry) summed within the run's stated ε; refuse it
    (:class:`GuaranteeCheckError`) otherwise."""
    product = "aggregate"
    eps = float(plan.epsilon)
    weights = [int(w) for w in plan.weights]
    names = list(plan.mechanisms)
    if len(names) < 2 or len(set(names)) != len(names) or len(weights) != len(names) \
            or len(plan.plans) != len(names) or any(w < 1 for w in weights):
        raise _refuse(product, "its mechanisms, weights and plans do not match", eps, 0.0)
    total_weight = sum(weights)
    parts: dict[str, Any] = {}
    total = Fraction(0)
    for name, w, part in zip(names, weights, plan.plans, strict=True):
        check = _PART_CHECKS.get(name)
        if check is None:
            raise _refuse(product, f"no check entry for the mechanism {name!r}", eps, 0.0)
        report = check(part)
        g = part.guarantee
        if g.delta != 0 or report.delta != 0 or g.neighbouring != plan.neighbouring:
            raise _refuse(product, f"its {name!r} part is not pure under the run's "
                          "neighbouring relation", eps, 0.0)
        share = Fraction(eps) * w / total_weight
        if Fraction(g.epsilon) > share:
            raise _refuse(product, f"its {name!r} part states more than its declared "
                          "share of epsilon", eps, 0.0)
        total += Fraction(g.epsilon)  # verified by the part's own check just above
        parts[name] = {"share": float(share), "check": report.to_json()}
    with decimal.localcontext(_CONTEXT):
        route = _Route(f"basic composition of {len(names)} pure mechanism(s) "
                       f"({', '.join(names)}), groups in parallel", _high(_dec(total)),
                       Decimal(0))
        stated = _dec(eps) * (1 + SLACK)
    if route.epsilon > stated:
        raise _refuse(product, "the parts' epsilons sum past the run's", eps, 0.0)
    return CheckReport(product, route.name, _float_up(route.epsilon), 0.0,
                       plan.neighbouring, {"parts": parts, "groups": "parallel (disjoint)"})


# -- groups found privately ---------------------------------------------------------------------
#: key counts one neighbouring step changes, by one row each (docs/privacy.md §18): written
#: here again, not imported, so the check re-derives the per-key budget itself
SELECTION_KEYS_CHANGED = {"add-remove": 1, "replace-one": 2}


def check_selection_plan(plan: Any) -> CheckReport:
    """Re-derive the guarantee of a private group selection (a
    :class:`~dprect.core.group_selection.SelectionPlan`; docs/privacy.md §18) from its keep
    table alone: the per-key (ε₁, δ₁) = (ε_s, δ_s)/m with m the keys one neighbour changes
    (:data:`SELECTION_KEYS_CHANGED`); p_0 = 0, the table non-decreasing and ending at 1
    (a key of at least N rows kept surely), and for every k ≥ 1 the two constraints of a
    Bernoulli on a ±1 change of a key's count (DVGM Theorem 1):
    p_k ≤ e^{ε₁}·p_{k−1} + δ₁ and 1 − p_k ≥ e^{−ε₁}·(1 − p_{k−1} − δ₁) — the mirrored
    two hold for a non-decreasing p — checked in 80-digit decimal with each side pushed to
    its unsafe side; then the m keys compose (basic): (m·ε₁, m·δ₁) within the stated."""
    product = "group selection"
    eps, delta, relation = float(plan.epsilon), float(plan.delta), str(plan.neighbouring)
    m = SELECTION_KEYS_CHANGED.get(relation)
    if m is None:
        raise _refuse(product, f"unknown neighbouring relation {relation!r}", eps, delta)
    if not (eps > 0 and 0 < delta < 1):
        raise _refuse(product, "its epsilon and delta are not a selection's", eps, delta)
    e1, d1 = Fraction(eps) / m, Fraction(delta) / m
    one = 2 ** int(plan.bits)
    table = [int(v) for v in plan.keep]
    if not table or table[-1] != one or any(
            b < a for a, b in zip([0, *table], table, strict=False)):
        raise _refuse(product, "its keep table is not non-decreasing from 0 to 1", eps, delta)
    # e^{±ε₁} bounded at ε₁ ≤ 1000 (a smaller grow and a larger shrink: a stricter check
    # for a larger ε₁; exp overflowed Decimal from ε₁ ~ 2.3e6)
    capped = min(e1, Fraction(1000))
    with decimal.localcontext(_CONTEXT):
        grow, shrink = _low(_exp(_dec(capped))), _high(_exp(-_dec(capped)))
        before = Fraction(0)
        for k, numerator in enumerate(table, start=1):
            p = Fraction(numerator, one)
            if _high(_dec(p - d1)) > grow * _dec(before):
                raise _refuse(product, f"p_{k} exceeds e^eps*p_{k - 1} + delta", eps, delta)
            rest = 1 - before - d1
            if rest > 0 and _low(_dec(1 - p)) < shrink * _high(_dec(rest)):
                raise _refuse(product, f"1 - p_{k} is below e^-eps*(1 - p_{k - 1} - delta)",
                              eps, delta)
            before = p
    if m * e1 > Fraction(eps) or m * d1 > Fraction(delta):  # exact rationals
        raise _refuse(product, "its keys' composition exceeds the stated guarantee", eps,
                      delta)
    route = _Route(f"optimal partition selection per key, {m} key(s) per neighbour (basic "
                   "composition)", _dec(m * e1), _dec(m * d1))
    return CheckReport(product, route.name, _float_up(route.epsilon), _float_up(route.delta),
                       relation, {"always_kept_from_rows": len(table),
                                  "keep_probability_1_row": float(Fraction(table[0], one))})


#: what a PUBLIC group listed beside a private selection adds to the run's (ε, δ): nothing
#: (docs/privacy.md §18, Theorem S′: its release does not depend on the data, and the
#: selection over the other keys is the same per-key mechanism on fewer keys)
LISTED_GROUP_COST = (Fraction(0), Fraction(0))


def check_selected_run(statistics: Any, selection: Any, run: Any, listed: int = 0) -> None:
    """The run after a private group selection (docs/privacy.md §18), with ``listed``
    public groups released beside it: its stated (ε, δ) at least the statistics' plus the
    selection's plus ``listed`` × :data:`LISTED_GROUP_COST` (exact rationals; adaptive
    composition; the statistics are (ε, δ) for ANY set of groups, listed or kept), in one
    relation; refuse it (:class:`GuaranteeCheckError`) otherwise."""
    if isinstance(listed, bool) or not isinstance(listed, int) or listed < 0:
        raise _refuse("selected-groups", "the number of listed groups is not a count",
                      run.epsilon, run.delta)
    extra_eps, extra_delta = (listed * c for c in LISTED_GROUP_COST)
    if not (statistics.neighbouring == selection.neighbouring == run.neighbouring) \
            or Fraction(run.epsilon) < Fraction(statistics.epsilon) + Fraction(
                selection.epsilon) + extra_eps \
            or Fraction(run.delta) < Fraction(statistics.delta) + Fraction(
                selection.delta) + extra_delta:
        raise _refuse("selected-groups", "the selection and the statistics do not compose "
                      "within its stated guarantee", run.epsilon, run.delta)


__all__ = ["BOUNDS_SENSITIVITY", "BR_ZCDP", "CLASSES_REPLACE_STEPS",
           "CONTEST_SELECT_FACTOR", "DESCRIBE_POOLS_PER_ROW",
           "DESCRIBE_SENSITIVITY", "DESCRIBE_SPREAD", "DESCRIBE_SUMMED", "DESCRIBE_UNSPENT",
           "LISTED_GROUP_COST", "PAPER_FACTOR",
           "QUANTILE_POOLS_PER_ROW", "QUANTILE_SENSITIVITY", "SELECTION_KEYS_CHANGED",
           "SLACK", "CheckReport",
           "GuaranteeCheckError", "check_bounds_plan", "check_classes_plan",
           "check_contest_plan",
           "check_describe_plan", "check_fit_plan", "check_mixed_plan", "check_quantiles_plan",
           "check_selected_run", "check_selection_plan"]
