"""Privacy accounting: the bounds dprect can state for a run (docs/privacy.md §4–§6).

Every function returns a :class:`Guarantee` — (ε̃, δ̃), the neighbouring relation and the
*name of the bound used* — so a result always says why its numbers hold. Proofs are in
``docs/privacy.md``.

RandMargins, refined theorem (docs/privacy.md §4). The IP is ε-DP (replace-one) on inputs of
size Δ with one-sided failure ≤ β_IP; the margin law has ratio ρ; q = ρ·(1 − β_IP). For
every integer k ≥ 1 and δ₂ ∈ (0, 1), R rounds are, under add/remove neighbours,

* (k·ε, (1 − q)^k)-DP                                      — :func:`refined_pure`
* (k·ε²/2 + ε·√(2k·ln(1/δ₂)), (1 − q)^k + δ₂)-DP           — :func:`refined_azuma`

and if k ≥ R the (1 − q)^k term is 0 (at most R rounds can be paid).

RandMargins, the paper's statement (Sadigurschi & Stemmer 2021, Lemma 3.2 with Claim 3.1
and the proof of (iii)): at most 35·ln(1/δ) paid rounds except with probability δ, each
costing 2ε: ε̃ = 70·ε·ln(1/δ), δ̃ = (R + 2)·δ — :func:`paper_bound`. Valid only with the
paper's Laplace margin law, β < 1/4 and δ < e^{−2}.

Replace-one neighbours follow from add/remove by group privacy of size 2:
(ε, δ) ↦ (2ε, (1 + e^ε)·δ) — :func:`replace_one`.

Bounded-range accounting (issue #12; docs/privacy.md "Bounded-range accounting"), what
the planner uses. The IP is ε-bounded-range, hence (ε²/8)-zCDP (:func:`br_zcdp`):

* RandMargins: (kε²/8 + ε·√(k·ln(1/δ₂)/2), (1 − q)^k + δ₂) — :func:`refined_br`, and the
  CKS conversion of kε²/8 on {K ≤ k} — :func:`refined_br_cks`; the best of all refined
  bounds — :func:`refined_best`, its inverse — :func:`refined_epsilon` (the
  planner's; :func:`refined_estimate` is its unchecked float search).
* Composition baseline: ρ = R·ε₀²/8 converted by Bun–Steinke or Canonne–Kamath–Steinke
  (:func:`zcdp_to_dp_bun_steinke`, :func:`zcdp_to_dp_cks`), the pure R·ε₀ and, if
  installed, dp-accounting's PLD of the pure ε₀-DP worst case — :func:`composition_br`,
  its inverse — :func:`composition_br_epsilon`. The planner calls both with
  ``use_dp_accounting=False``: dp-accounting is a dev-only cross-check, and a plan must
  not depend on which optional packages are installed. (Before issue #12 the baseline
  was R·ε₀ by basic composition, or ρ_z = R·ε₀²/2 zCDP, any ε₀-DP mechanism's charge.)
"""

from __future__ import annotations

import decimal
import functools
import importlib
import math
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, NamedTuple

from dprect.core.errors import ParameterError
from dprect.core.request import Neighbouring
from dprect.core.validation import (
    check_delta,
    check_epsilon,
    check_open_unit,
    check_positive_int,
)

#: the neighbouring relations as a guarantee spells them (:class:`Neighbouring`'s values)
ADD_REMOVE: str = Neighbouring.ADD_REMOVE.value
REPLACE_ONE: str = Neighbouring.REPLACE_ONE.value


@dataclass(frozen=True)
class Guarantee:
    """An (ε, δ)-DP statement and the bound that proves it."""

    epsilon: float
    delta: float
    neighbouring: str
    bound: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _check_q(q: float) -> float:
    if not 0.0 < q <= 1.0:
        raise ParameterError(f"q = rho*(1-beta_ip) must be in (0, 1], got {q!r}")
    return float(q)


def escape_probability(q: float, k: int, rounds: int) -> float:
    """(1 − q)^k, the chance of more than k paid rounds, rounded up (:func:`_up`); 0 when
    k ≥ R."""
    if k >= rounds:
        return 0.0
    return _up((1.0 - _check_q(q)) ** k)


def _paid_rounds(epsilon: float, k: int, rounds: int) -> tuple[float, int, int]:
    """A refined bound's checked ε₀, k_eff = min(k, R) paid rounds, and R."""
    epsilon = check_epsilon(epsilon)
    k = check_positive_int(k, "k")
    rounds = check_positive_int(rounds, "rounds")
    return epsilon, min(k, rounds), rounds


def refined_pure(epsilon: float, *, k: int, q: float, rounds: int) -> Guarantee:
    """(k·ε, (1 − q)^k)-DP, add/remove (refined theorem, first bound)."""
    epsilon, k_eff, rounds = _paid_rounds(epsilon, k, rounds)
    return Guarantee(
        epsilon=_up(k_eff * epsilon),
        delta=escape_probability(q, k_eff, rounds),
        neighbouring=ADD_REMOVE,
        bound=f"refined theorem, pure bound (k={k_eff} paid rounds of {rounds})",
    )


def refined_azuma(
    epsilon: float, *, k: int, q: float, rounds: int, delta2: float
) -> Guarantee:
    """(kε²/2 + ε√(2k·ln(1/δ₂)), (1 − q)^k + δ₂)-DP, add/remove (refined, second bound)."""
    epsilon, k_eff, rounds = _paid_rounds(epsilon, k, rounds)
    delta2 = check_open_unit(delta2, "delta2")
    eps_total = k_eff * epsilon**2 / 2 + epsilon * math.sqrt(2 * k_eff * math.log(1 / delta2))
    return Guarantee(
        epsilon=_up(eps_total),
        delta=escape_probability(q, k_eff, rounds) + delta2,
        neighbouring=ADD_REMOVE,
        bound=f"refined theorem, Azuma bound (k={k_eff} paid rounds of {rounds})",
    )


def paper_bound(epsilon: float, *, delta: float, rounds: int) -> Guarantee:
    """The paper's statement: (70·ε·ln(1/δ), (R + 2)·δ), δ < e^{−2}."""
    epsilon = check_epsilon(epsilon)
    delta = check_open_unit(delta, "delta")
    rounds = check_positive_int(rounds, "rounds")
    if delta >= math.exp(-2):
        raise ParameterError(f"the paper's accounting needs delta < e^-2, got {delta}")
    return Guarantee(
        epsilon=_up(70 * epsilon * math.log(1 / delta)),
        delta=_up((rounds + 2) * delta),
        neighbouring=ADD_REMOVE,
        bound="paper (Sadigurschi & Stemmer 2021, Lemma 3.2: 35 ln(1/delta) paid rounds)",
    )


def group_privacy(g: Guarantee, size: int) -> tuple[float, float]:
    """Group privacy: an add/remove (ε, δ) mechanism is (size·ε, δ·Σ_{i<size} e^{iε})-
    indistinguishable on inputs ``size`` add/remove steps apart (Dwork & Roth 2014,
    Thm 2.2, with δ); both rounded up."""
    if g.neighbouring != ADD_REMOVE:
        raise ParameterError("group privacy expects an add/remove guarantee")
    eps = size * g.epsilon
    if Fraction(eps) < size * Fraction(g.epsilon):
        eps = math.nextafter(eps, math.inf)
    return eps, _up(math.fsum(math.exp(i * g.epsilon) for i in range(size)) * g.delta)


def replace_one(g: Guarantee) -> Guarantee:
    """Group privacy of size 2: add/remove (ε, δ) ⇒ replace-one (2ε, (1 + e^ε)·δ)."""
    if g.neighbouring != ADD_REMOVE:
        raise ParameterError("replace_one expects an add/remove guarantee")
    eps, delta = group_privacy(g, 2)
    return Guarantee(eps, delta, REPLACE_ONE,
                     g.bound + "; replace-one by group privacy (2eps, (1+e^eps)delta)")


def unused_delta(asked: object, guarantee: Guarantee) -> str:
    """A printout's note when a run was given a δ > 0 its guarantee does not use (the
    planner found no gain over a pure bound: the guarantee is (ε, 0), and a ledger charges
    the guarantee, so δ 0): ``"; the delta given (1e-300) is not used and not charged"``.
    ``asked`` is the request's δ, or a result's parameters holding it under
    ``request``; "" otherwise."""
    if isinstance(asked, dict):
        request = asked.get("request")
        asked = request.get("delta") if isinstance(request, dict) else None
    if isinstance(asked, bool) or not isinstance(asked, int | float) or not asked > 0 \
            or guarantee.delta != 0:
        return ""
    return f"; the delta given ({asked:.3g}) is not used and not charged"


def add_remove_budget(epsilon: float, delta: float, neighbouring: Neighbouring | str
                      ) -> tuple[float, float]:
    """The add/remove budget whose replace-one image is (ε, δ) (identity for add/remove)."""
    if Neighbouring.parse(neighbouring, "neighbouring") is Neighbouring.ADD_REMOVE:
        return epsilon, delta
    eps = epsilon / 2
    return eps, delta / (1 + math.exp(eps))


# == Bounded-range accounting (issue #12) =====================================================
# The functions above are unchanged (the accounting before issue #12, kept to report what
# these gain); the planner uses these. Proofs: docs/privacy.md, "Bounded-range accounting".
#
# Safe rounding. Every closed form below is a short sum of non-negative floats, each within
# a few ulps of its exact value, so it is rounded up by the relative margin _UP (2^-46,
# about 64 ulps). The CKS conversion, whose terms cancel, is instead checked in 60-digit
# decimal arithmetic and raised until the check passes. A stated ε can therefore only be
# larger than the exact bound, never smaller.

_UP = 1.0 + 2.0**-46
_DECIMAL = decimal.Context(prec=60, rounding=decimal.ROUND_HALF_EVEN)
_LOG_DELTA_SLACK = decimal.Decimal("1e-30")  # far above the decimal rounding error (~1e-50)
#: the CKS search runs over u = ln(α − 1) on this grid, then refines by golden section
_CKS_U_GRID = tuple(-16.0 + 0.5 * i for i in range(93))  # α − 1 ∈ [1.1e-7, 1.0e13]
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _up(x: float) -> float:
    """x ≥ 0 rounded up by the margin :data:`_UP` (and at least one ulp); 0 stays 0."""
    return 0.0 if x == 0.0 else math.nextafter(x * _UP, math.inf)


def _back_off(x: float, ok: Callable[[float], bool]) -> float:
    """The largest value in (0, x] passing ``ok`` (to about 2^−44 relative), or 0.0.

    Turns a float estimate into a checked value: ``ok`` is the forward bound, assumed
    monotone (true below some point, false above). Downward steps of doubling size find a
    passing value, then bisection closes in; whatever is returned has passed ``ok``."""
    if x > 0 and ok(x):
        return x
    hi, step, lo = x, 2.0**-40, x * (1.0 - 2.0**-40)
    while not (lo > 0 and ok(lo)):
        if not lo > x * 2.0**-1000:
            return 0.0
        hi, step = lo, min(2.0 * step, 0.5)
        lo = x * (1.0 - step) if step < 0.5 else lo / 2.0
    while hi - lo > lo * 2.0**-44:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _check_rho(rho: object) -> float:
    if (isinstance(rho, bool) or not isinstance(rho, int | float)
            or not math.isfinite(float(rho)) or float(rho) < 0):
        raise ParameterError(f"rho (zCDP) must be a finite number >= 0, got {rho!r}")
    return float(rho)


def _delta2_for(target_delta: float, escape: float) -> float:
    """The largest float δ₂ with escape + δ₂ ≤ target_delta in floating point (escape < δ̃)."""
    d2 = target_delta - escape
    while d2 > 0 and escape + d2 > target_delta:
        d2 = math.nextafter(d2, 0.0)
    return d2


#: ρ per ε² of an ε-bounded-range mechanism: ε-BR ⇒ (ε²/8)-zCDP (Cesar & Rogers 2021). Every
#: bounded-range bound and inverse below reads it from here (the tests change it to check
#: that a wrong constant shows).
BR_ZCDP_FACTOR: float = 1.0 / 8.0


def br_zcdp(epsilon: float) -> float:
    """ρ = ε²/8: an ε-bounded-range mechanism is (ε²/8)-zCDP.

    The interior point samples y ∝ exp(ε·depth(y)/2) with a depth of sensitivity 1, so for
    neighbouring inputs the log-ratio ln P(y)/P′(y) varies by at most ε over the outputs: it
    is ε-bounded-range (Durfee & Rogers 2019; Dong, Durfee & Rogers 2020), and an ε-BR
    mechanism is (ε²/8)-zCDP (Cesar & Rogers 2021) — a quarter of the ε²/2 of ε-DP alone.
    The float is rounded up by one ulp, so it is never below the exact ε²/8.
    """
    epsilon = check_epsilon(epsilon)
    return math.nextafter(epsilon * epsilon * BR_ZCDP_FACTOR, math.inf)


def zcdp_to_dp_bun_steinke(rho: float, delta: float) -> float:
    """ε = ρ + 2√(ρ·ln(1/δ)): ρ-zCDP ⇒ (ε, δ)-DP (Bun & Steinke 2016, Prop. 1.3)."""
    rho = _check_rho(rho)
    delta = check_open_unit(delta, "delta")
    return _up(rho + 2.0 * math.sqrt(rho * -math.log(delta)))


def _cks_epsilon_at(rho: float, log_inv_delta: float, alpha: float) -> float:
    """ε_α = αρ + (ln(1/δ) − ln α)/(α − 1) + ln(1 − 1/α) in floating point (an estimate)."""
    return (alpha * rho + (log_inv_delta - math.log(alpha)) / (alpha - 1.0)
            + math.log1p(-1.0 / alpha))


def _minimise_over_order(f: Callable[[float], float]) -> tuple[float, float]:
    """(α, f(α)) with f(α) about minimal over α > 1: a grid in u = ln(α − 1), then golden
    section around the best grid point. Any α it returns is valid for the callers; the search
    only decides how tight the result is."""
    values = [f(1.0 + math.exp(u)) for u in _CKS_U_GRID]
    i = min(range(len(values)), key=values.__getitem__)
    lo = _CKS_U_GRID[max(i - 1, 0)]
    hi = _CKS_U_GRID[min(i + 1, len(_CKS_U_GRID) - 1)]
    best_u, best = _CKS_U_GRID[i], values[i]
    a = hi - _GOLDEN * (hi - lo)
    b = lo + _GOLDEN * (hi - lo)
    fa, fb = f(1.0 + math.exp(a)), f(1.0 + math.exp(b))
    for _ in range(60):
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - _GOLDEN * (hi - lo)
            fa = f(1.0 + math.exp(a))
        else:
            lo, a, fa = a, b, fb
            b = lo + _GOLDEN * (hi - lo)
            fb = f(1.0 + math.exp(b))
    for u, v in ((a, fa), (b, fb)):
        if v < best:
            best_u, best = u, v
    return 1.0 + math.exp(best_u), best


def cks_log_delta(rho: float, epsilon: float, alpha: float) -> decimal.Decimal:
    """ln δ_α(ε) = (α−1)(αρ−ε) − ln(α−1) + α·ln(1 − 1/α), in 60-digit decimal arithmetic.

    δ_α(ε) = exp((α−1)(αρ−ε))/(α−1)·(1 − 1/α)^α is the δ of Canonne, Kamath & Steinke
    (2020, Prop. 12) for a mechanism with Rényi divergence ≤ αρ at order α: every ρ-zCDP
    mechanism is (ε, δ_α(ε))-DP for every α > 1 (ibid., Cor. 13). The floats are converted
    exactly; ``ln`` is correctly rounded, so the error is about 10^−50 of the terms.
    """
    a = decimal.Decimal(alpha)
    r = decimal.Decimal(rho)
    e = decimal.Decimal(epsilon)
    with decimal.localcontext(_DECIMAL):
        am1 = a - 1
        return am1 * (a * r - e) - am1.ln() + a * (am1 / a).ln()


@functools.lru_cache(maxsize=4096, typed=True)  # a plan asks again and again (pure floats)
def zcdp_to_dp_cks_with_order(rho: float, delta: float) -> tuple[float, float]:
    """(ε, α): ρ-zCDP ⇒ (ε, δ)-DP by Canonne, Kamath & Steinke (2020, Cor. 13), at order α.

    Method. For a fixed α > 1, δ_α(ε) (:func:`cks_log_delta`) is strictly decreasing in ε
    and inverts in closed form: ε_α = αρ + (ln(1/δ) − ln α)/(α − 1) + ln(1 − 1/α). Every α
    gives a valid ε_α, so the search over α (:func:`_minimise_over_order`) affects only how
    tight the answer is, never its validity. Safety: the float ε_α (clamped at 0) is then
    checked in 60-digit decimal arithmetic, ln δ_α(ε) ≤ ln δ − 10^−30, and raised in growing
    steps until the check passes; since δ_α is decreasing in ε, raising can only help. So the
    returned ε satisfies δ_α(ε) < δ exactly, whatever the float rounding.
    """
    rho = _check_rho(rho)
    delta = check_open_unit(delta, "delta")
    if rho == 0.0:
        return 0.0, math.inf  # identical output laws: (0, 0)-DP
    log_inv = -math.log(delta)
    alpha, eps = _minimise_over_order(functools.partial(_cks_epsilon_at, rho, log_inv))
    eps = max(0.0, eps)
    with decimal.localcontext(_DECIMAL):
        target = decimal.Decimal(delta).ln() - _LOG_DELTA_SLACK
    step = max(eps, 1e-12) * 2.0**-44
    while cks_log_delta(rho, eps, alpha) > target:
        eps += step
        step *= 2.0
    return eps, alpha


def zcdp_to_dp_cks(rho: float, delta: float) -> float:
    """ε with ρ-zCDP ⇒ (ε, δ)-DP by the Canonne–Kamath–Steinke conversion (2020, Cor. 13):
    δ = inf_{α>1} exp((α−1)(αρ−ε))/(α−1)·(1 − 1/α)^α, inverted for ε safely (see
    :func:`zcdp_to_dp_cks_with_order`). Never larger than :func:`zcdp_to_dp_bun_steinke`."""
    return zcdp_to_dp_cks_with_order(rho, delta)[0]


def _neg_cks_rho_at(epsilon: float, log_inv_delta: float, alpha: float) -> float:
    """−(ε − c_α)/α: for a fixed α, ε_α = αρ + c_α, so the largest ρ at α is (ε − c_α)/α."""
    return -(epsilon - _cks_epsilon_at(0.0, log_inv_delta, alpha)) / alpha


@functools.lru_cache(maxsize=4096, typed=True)  # a plan asks again and again (pure floats)
def _cks_rho_estimate(epsilon: float, log_inv_delta: float) -> float:
    """The largest ρ whose CKS conversion at δ = e^{−log_inv_delta} is ε (float estimate)."""
    neg = _minimise_over_order(functools.partial(_neg_cks_rho_at, epsilon, log_inv_delta))[1]
    return max(0.0, -neg)


def zcdp_budget_rho(epsilon: float, delta: float, *, conversion: str = "cks") -> float:
    """The largest ρ whose conversion (``"cks"`` or ``"bun-steinke"``) is within (ε, δ).

    The inverse of :func:`zcdp_to_dp_cks` / :func:`zcdp_to_dp_bun_steinke`, checked by calling
    the forward conversion: the returned ρ always satisfies conversion(ρ, δ) ≤ ε.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_open_unit(delta, "delta")
    log_inv = -math.log(delta)
    forward: Callable[[float, float], float]
    if conversion == "bun-steinke":
        root = epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))  # √(L+ε) − √L
        rho = root * root
        forward = zcdp_to_dp_bun_steinke
    elif conversion == "cks":
        rho = _cks_rho_estimate(epsilon, log_inv)
        forward = zcdp_to_dp_cks
    else:
        raise ParameterError(f"conversion must be 'cks' or 'bun-steinke', got {conversion!r}")
    return _back_off(rho, lambda r: forward(r, delta) <= epsilon)


# -- composition baseline, bounded range---------------------------------------------------------
def _dp_accounting_pld() -> tuple[Any, Any] | None:
    """dp-accounting's PLD modules, or None when the optional package is not installed."""
    try:
        pld = importlib.import_module("dp_accounting.pld.privacy_loss_distribution")
        common = importlib.import_module("dp_accounting.pld.common")
    except ImportError:
        return None
    return pld, common


#: δ is asked of dp-accounting with this relative margin, to absorb the FFT's round-off
_PLD_DELTA_MARGIN = 1e-6
#: at most this many loss buckets in the composed PLD (coarser buckets are still pessimistic)
_PLD_MAX_BUCKETS = 1_000_000


def composition_pld_pure(epsilon0: float, *, rounds: int, delta: float) -> Guarantee | None:
    """R rounds of an ε₀-DP mechanism by dp-accounting's PLD of the pure ε₀-DP worst case.

    ``from_privacy_parameters((ε₀, 0))`` is randomized response with ε₀ — the dominating
    pair of every ε₀-DP mechanism — rounded pessimistically; its R-fold composition is the
    optimal composition of R ε₀-DP mechanisms (Kairouz, Oh & Viswanath 2015), adaptive or
    not, up to the pessimistic discretisation. Valid for the IP because it is ε₀-DP. (A PLD
    of the Laplace or Gaussian mechanism would NOT be: those are not worst cases.)
    Fixed R only. Returns None when dp-accounting is not installed.
    """
    epsilon0 = check_epsilon(epsilon0, "epsilon0")
    rounds = check_positive_int(rounds, "rounds")
    delta = check_open_unit(delta, "delta")
    mods = _dp_accounting_pld()
    if mods is None:
        return None
    pld, common = mods
    interval = min(1e-4, epsilon0 / 100.0)
    interval = max(interval, 2.0 * rounds * epsilon0 / _PLD_MAX_BUCKETS)
    one = pld.from_privacy_parameters(
        common.DifferentialPrivacyParameters(epsilon0, 0.0),
        value_discretization_interval=interval)
    eps = float(one.self_compose(rounds).get_epsilon_for_delta(delta * (1 - _PLD_DELTA_MARGIN)))
    return Guarantee(_up(eps), delta, ADD_REMOVE,
                     f"optimal composition of {rounds} pure eps0-DP rounds "
                     f"(dp-accounting PLD, randomized-response worst case)")


def composition_br(epsilon0: float, *, rounds: int, delta: float,
                   use_dp_accounting: bool = True) -> Guarantee:
    """The best valid (ε̃, δ̃ ≤ δ) for R calls of the ε₀-bounded-range interior point.

    Candidates: basic composition (R·ε₀, 0); ρ = R·ε₀²/8 zCDP (:func:`br_zcdp`, zCDP adds
    up: Bun & Steinke 2016, Lemma 2.3) converted by Bun–Steinke and by CKS; and, when
    ``use_dp_accounting`` and the package is installed, :func:`composition_pld_pure`. The
    smallest ε̃ wins and the guarantee's ``bound`` names it. ``delta=0`` allows only the pure
    bound. For a fixed number of rounds only (the composition baseline); never for the
    random number of paid rounds of RandMargins.

    The planner passes ``use_dp_accounting=False``: dp-accounting is an optional, dev-only
    cross-check (the tests compare against it), and a plan must be the same whether or not
    it is installed.
    """
    epsilon0 = check_epsilon(epsilon0, "epsilon0")
    rounds = check_positive_int(rounds, "rounds")
    delta = check_delta(delta)
    best = Guarantee(_up(rounds * epsilon0), 0.0, ADD_REMOVE,
                     f"basic composition of {rounds} rounds")
    if delta == 0.0:
        return best
    rho = _up(rounds * br_zcdp(epsilon0))
    what = f"zCDP (eps0^2/8 per round, bounded range) of {rounds} rounds"
    candidates = [
        Guarantee(zcdp_to_dp_bun_steinke(rho, delta), delta, ADD_REMOVE,
                  f"{what}, Bun-Steinke conversion"),
        Guarantee(zcdp_to_dp_cks(rho, delta), delta, ADD_REMOVE, f"{what}, CKS conversion"),
    ]
    if use_dp_accounting:
        pld_bound = composition_pld_pure(epsilon0, rounds=rounds, delta=delta)
        if pld_bound is not None:
            candidates.append(pld_bound)
    for g in candidates:
        if g.epsilon < best.epsilon:
            best = g
    return best


def composition_br_epsilon(eps_total: float, delta_total: float, rounds: int, *,
                           use_dp_accounting: bool = True) -> float:
    """The largest per-round ε₀ (to about 1e-12) with composition_br(ε₀) within (ε̃, δ̃).

    Every value returned has been checked by calling :func:`composition_br`, so
    ``composition_br(ε₀, rounds=R, delta=δ̃).epsilon ≤ ε̃`` holds for it. The planner passes
    ``use_dp_accounting=False`` (plans never depend on the optional dp-accounting).
    """
    eps_total = check_epsilon(eps_total, "epsilon")
    rounds = check_positive_int(rounds, "rounds")
    delta_total = check_delta(delta_total)

    def ok(e0: float, pld: bool) -> bool:
        return composition_br(e0, rounds=rounds, delta=delta_total,
                              use_dp_accounting=pld).epsilon <= eps_total

    def shrink_until_ok(e0: float) -> float:
        return _back_off(e0, lambda e: ok(e, False))

    best = shrink_until_ok(eps_total / rounds)
    if delta_total > 0:
        rho = zcdp_budget_rho(eps_total, delta_total, conversion="cks")
        best = max(best, shrink_until_ok(math.sqrt(rho / BR_ZCDP_FACTOR / rounds)))
    if delta_total > 0 and use_dp_accounting and _dp_accounting_pld() is not None:
        pld_ok = composition_pld_pure(best, rounds=rounds, delta=delta_total)
        if pld_ok is not None and pld_ok.epsilon < eps_total:  # PLD allows a larger ε₀
            lo, hi = best, eps_total
            while hi - lo > 1e-12 * hi:
                mid = 0.5 * (lo + hi)
                if ok(mid, True):
                    lo = mid
                else:
                    hi = mid
            best = lo
    if not best > 0 or not ok(best, use_dp_accounting):
        raise ParameterError("no per-round epsilon meets the requested budget")
    return best


# -- RandMargins, refined theorem, bounded range---------------------------------------------------
def refined_br(epsilon: float, *, k: int, q: float, rounds: int, delta2: float) -> Guarantee:
    """(kε²/8 + ε·√(k·ln(1/δ₂)/2), (1 − q)^k + δ₂)-DP, add/remove (refined, bounded range).

    The supermartingale exp(λL_t − λ(λ+1)·(ε²/8)·K_t), Markov on {K ≤ k} and the escape term
    (1 − q)^k; optimising λ gives the closed form. Proof: docs/privacy.md, "Bounded-range
    accounting". Equal to the Bun–Steinke conversion of ρ = k·ε²/8.
    """
    epsilon, k_eff, rounds = _paid_rounds(epsilon, k, rounds)
    delta2 = check_open_unit(delta2, "delta2")
    c = BR_ZCDP_FACTOR  # 1/8: kcε² + 2ε√(ck·ln(1/δ₂)) = kε²/8 + ε√(k·ln(1/δ₂)/2)
    eps_total = _up(k_eff * epsilon**2 * c
                    + epsilon * math.sqrt(4.0 * c * k_eff * -math.log(delta2)))
    return Guarantee(
        epsilon=eps_total,
        delta=escape_probability(q, k_eff, rounds) + delta2,
        neighbouring=ADD_REMOVE,
        bound=f"refined theorem, bounded-range bound (k={k_eff} paid rounds of {rounds})",
    )


def refined_br_cks(epsilon: float, *, k: int, q: float, rounds: int, delta2: float
                   ) -> Guarantee:
    """(CKS(k·ε²/8, δ₂), (1 − q)^k + δ₂)-DP, add/remove: the CKS conversion on {K ≤ k}.

    ε̃ = :func:`zcdp_to_dp_cks` (k·ε²/8, δ₂); never larger than :func:`refined_br`. Proof
    (CKS's pointwise inequality applied on the event K ≤ k, with the same supermartingale):
    docs/privacy.md, "Bounded-range accounting".
    """
    epsilon, k_eff, rounds = _paid_rounds(epsilon, k, rounds)
    delta2 = check_open_unit(delta2, "delta2")
    rho = _up(k_eff * br_zcdp(epsilon))
    return Guarantee(
        epsilon=zcdp_to_dp_cks(rho, delta2),
        delta=escape_probability(q, k_eff, rounds) + delta2,
        neighbouring=ADD_REMOVE,
        bound=f"refined theorem, bounded-range bound, CKS conversion "
              f"(k={k_eff} paid rounds of {rounds})",
    )


REFINED_KINDS = ("pure", "azuma", "br", "br-cks")


def refined_guarantee(epsilon: float, *, kind: str, k: int, q: float, rounds: int,
                         delta2: float) -> Guarantee:
    """The refined guarantee of one kind (:data:`REFINED_KINDS`); δ₂ unused for pure."""
    if kind == "pure":
        return refined_pure(epsilon, k=k, q=q, rounds=rounds)
    if kind == "azuma":
        return refined_azuma(epsilon, k=k, q=q, rounds=rounds, delta2=delta2)
    if kind == "br":
        return refined_br(epsilon, k=k, q=q, rounds=rounds, delta2=delta2)
    if kind == "br-cks":
        return refined_br_cks(epsilon, k=k, q=q, rounds=rounds, delta2=delta2)
    raise ParameterError(f"kind must be one of {', '.join(REFINED_KINDS)}; got {kind!r}")


def refined_best(epsilon: float, *, q: float, rounds: int, target_delta: float
                    ) -> Guarantee:
    """The smallest ε̃ with δ̃ ≤ target_delta over the pure, Azuma, bounded-range and
    bounded-range-CKS refined bounds, every k and δ split (δ₂ = δ̃ − (1 − q)^k, the best
    split for a given k, lowered to the float below if the sum would round above δ̃). The
    CKS bound is evaluated safely at the k whose float estimate is smallest."""
    return _refined_best_of(REFINED_KINDS, epsilon, q=q, rounds=rounds,
                            target_delta=target_delta)


def _refined_best_of(kinds: tuple[str, ...], epsilon: float, *, q: float, rounds: int,
                     target_delta: float) -> Guarantee:
    """The smallest ε̃ with δ̃ ≤ target_delta over the refined bounds ``kinds``
    (:data:`REFINED_KINDS`), every k and the best δ split for each k."""
    epsilon = check_epsilon(epsilon)
    target_delta = check_open_unit(target_delta, "delta")
    rounds = check_positive_int(rounds, "rounds")
    _check_q(q)
    closed_forms = [kind for kind in ("azuma", "br") if kind in kinds]
    best: Guarantee | None = None
    cks_pick: tuple[float, int, float] | None = None  # (float estimate, k, δ₂)
    for k in range(1, rounds + 1):
        escape = escape_probability(q, k, rounds)
        candidates = []
        if "pure" in kinds and escape <= target_delta:
            candidates.append(refined_pure(epsilon, k=k, q=q, rounds=rounds))
        if escape < target_delta:
            d2 = _delta2_for(target_delta, escape)
            if d2 > 0:
                candidates += [refined_guarantee(epsilon, kind=kind, k=k, q=q,
                                                    rounds=rounds, delta2=d2)
                               for kind in closed_forms]
                if "br-cks" in kinds:
                    est = _minimise_over_order(functools.partial(
                        _cks_epsilon_at, k * epsilon**2 * BR_ZCDP_FACTOR, -math.log(d2)))[1]
                    if cks_pick is None or est < cks_pick[0]:
                        cks_pick = (est, k, d2)
        for g in candidates:
            if best is None or g.epsilon < best.epsilon:
                best = g
    if cks_pick is not None:  # the CKS bound, computed safely, at its best k
        g = refined_br_cks(epsilon, k=cks_pick[1], q=q, rounds=rounds, delta2=cks_pick[2])
        if best is None or g.epsilon < best.epsilon:
            best = g
    if best is None:  # unreachable: k = R always qualifies
        raise ParameterError("no refined bound meets the requested delta")
    return best


class RefinedChoice(NamedTuple):
    """A per-round ε and the refined bound that spends the budget: kind, k and δ₂."""

    epsilon: float
    kind: str
    k: int
    delta2: float


@functools.lru_cache(maxsize=256)
def _cks_budget_rho(eps_total: float, delta_total: float) -> float:
    """:func:`zcdp_budget_rho` (CKS), cached: the planner asks it once per staircase ρ."""
    return zcdp_budget_rho(eps_total, delta_total)


#: the relative slack on the float bounds that end :func:`refined_estimate`'s search over k
#: early: far above the few ulps by which a computed candidate may exceed the computed
#: bound of its exact value, so the early end never drops a candidate the full loop takes
_SEARCH_SLACK = 1e-9
#: the margin, in nats, by which k·ln(1 − q) must exceed ln δ̃ for :func:`_first_k` to skip
#: k: (1 − q)^k is then above δ̃ by a factor e^(10^−6), far beyond pow's and log's rounding
_ESCAPE_SLACK = 1e-6


def _first_k(q: float, delta_total: float, rounds: int) -> int:
    """The first k the search of :func:`refined_estimate` must look at: at every smaller k
    the escape (1 − q)^k is certainly above δ̃ (k·ln(1 − q) > ln δ̃ + :data:`_ESCAPE_SLACK`),
    so no bound takes that k (the pure bound needs escape ≤ δ̃, the others escape < δ̃).
    Never above R (escape 0); 1 (no skip) for a subnormal δ̃, where pow's rounding is
    coarser than the slack."""
    base = 1.0 - q
    if not delta_total >= sys.float_info.min or base == 0.0:
        return 1
    if base == 1.0:  # q below half an ulp of 1: escape 1 until k = R
        return rounds
    log_base = math.log(base)
    level = math.log(delta_total) + _ESCAPE_SLACK
    k = min(max(1, math.ceil(level / log_base)), rounds)
    while k > 1 and (k - 1) * log_base <= level:
        k -= 1
    while k < rounds and k * log_base > level:
        k += 1
    return k


def _later_k_cannot_win(eps_total: float, log_inv0: float, cks_cap: float, k: int,
                        best: float) -> bool:
    """No refined bound at k or any larger k can exceed ``best`` in
    :func:`refined_estimate`'s loop: each bound's per-round ε falls with k and with
    ln(1/δ₂) ≥ ln(1/δ̃) = ``log_inv0`` (δ₂ ≤ δ̃), so its value at (k, log_inv0) bounds it.
    The pure bound ε̃/k and the CKS gate cks_cap/√k are the loop's own expressions
    (monotone in k in floating point); Azuma and bounded range carry :data:`_SEARCH_SLACK`."""
    if eps_total / k > best or cks_cap / math.sqrt(k) > best:
        return False
    c = math.sqrt(2 * k * log_inv0)
    eps_az = 2 * eps_total / (c + math.sqrt(c * c + 2 * k * eps_total))
    root = eps_total / (math.sqrt(log_inv0 + eps_total) + math.sqrt(log_inv0))
    eps_br = math.sqrt(1.0 / BR_ZCDP_FACTOR / k) * root
    return max(eps_az, eps_br) * (1.0 + _SEARCH_SLACK) <= best


def refined_estimate(eps_total: float, delta_total: float, *, q: float, rounds: int
                        ) -> RefinedChoice:
    """The float search of :func:`refined_epsilon`, before the check: the kind, k and δ₂
    of the best refined bound and its per-round ε as a float estimate.

    **Not a guarantee**: the estimate may exceed the largest valid ε by a few ulps. It is
    never below the checked :func:`refined_epsilon` of the same arguments (which backs
    off from it), so the planner uses it to rank the staircase ratios cheaply and bound
    their predictions from below, and plans only with checked values. δ̃ = 0 (pure DP)
    leaves only the pure bound with k = R: (R·ε, 0).

    The search over k = 1…R returns what the full loop returns (the same floats, ties to
    the smaller k) but looks at few k: it starts where the escape (1 − q)^k may first reach
    δ̃ (:func:`_first_k`) and stops once no larger k can win (:func:`_later_k_cannot_win`):
    at R = 8192 (d = 4096) tens of k instead of 8192, per staircase ratio."""
    eps_total = check_epsilon(eps_total, "epsilon")
    delta_total = check_delta(delta_total, "delta")
    rounds = check_positive_int(rounds, "rounds")
    _check_q(q)
    best = RefinedChoice(-1.0, "pure", rounds, 0.0)
    if delta_total == 0.0:  # pure DP: only the pure bound with k = R (no escape, no δ₂)
        return RefinedChoice(eps_total / rounds, "pure", rounds, 0.0)
    # no BR-CKS per-round ε at k paid rounds exceeds cks_cap/√k (δ₂ ≤ δ̃)
    cks_cap = math.sqrt(_cks_budget_rho(eps_total, delta_total) / BR_ZCDP_FACTOR)
    log_inv0 = -math.log(delta_total)
    for k in range(_first_k(q, delta_total, rounds), rounds + 1):
        if best.epsilon > 0 and _later_k_cannot_win(eps_total, log_inv0, cks_cap, k,
                                                    best.epsilon):
            break
        escape = escape_probability(q, k, rounds)
        if escape <= delta_total and eps_total / k > best.epsilon:
            best = RefinedChoice(eps_total / k, "pure", k, 0.0)
        if not escape < delta_total:
            continue
        d2 = _delta2_for(delta_total, escape)
        if not d2 > 0:
            continue
        log_inv = -math.log(d2)
        c = math.sqrt(2 * k * log_inv)  # Azuma: kε²/2 + cε = ε̃
        eps_az = 2 * eps_total / (c + math.sqrt(c * c + 2 * k * eps_total))
        if eps_az > best.epsilon:
            best = RefinedChoice(eps_az, "azuma", k, d2)
        root = eps_total / (math.sqrt(log_inv + eps_total) + math.sqrt(log_inv))
        eps_br = math.sqrt(1.0 / BR_ZCDP_FACTOR / k) * root  # BR: k·ε²/8 = (√(L+ε̃) − √L)²
        if eps_br > best.epsilon:
            best = RefinedChoice(eps_br, "br", k, d2)
        if cks_cap / math.sqrt(k) > best.epsilon:  # CKS at this k could still win
            rho = _cks_rho_estimate(eps_total, log_inv)
            eps_cks = math.sqrt(rho / BR_ZCDP_FACTOR / k)
            if eps_cks > best.epsilon:
                best = RefinedChoice(eps_cks, "br-cks", k, d2)
    if not best.epsilon > 0:
        raise ParameterError("no refined bound meets the requested budget")
    return best


def refined_epsilon(eps_total: float, delta_total: float, *, q: float, rounds: int
                       ) -> RefinedChoice:
    """The largest per-round ε for which some refined bound (pure, Azuma, bounded range, or
    bounded range with CKS), some k and δ split give (ε̃, δ̃) — the inverse of
    :func:`refined_best`, for the planner. The returned choice is checked:
    ``refined_guarantee(choice.epsilon, kind=…, k=…, q=q, rounds=R, delta2=…)`` has
    ε ≤ ε̃ and δ ≤ δ̃ (δ₂ is lowered so that the float sum escape + δ₂ is ≤ δ̃). It is
    :func:`refined_estimate` backed off until that check passes."""
    best = refined_estimate(eps_total, delta_total, q=q, rounds=rounds)
    eps = _back_off(best.epsilon, lambda e: refined_guarantee(
        e, kind=best.kind, k=best.k, q=q, rounds=rounds, delta2=best.delta2
    ).epsilon <= eps_total)
    if not eps > 0:
        raise ParameterError("no refined bound meets the requested budget")
    return best._replace(epsilon=eps)
