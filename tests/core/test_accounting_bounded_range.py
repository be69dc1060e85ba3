"""Accounting v2 (issue #12): the bounded-range bounds against independent computations.

Every expected value here is computed in the test itself, by a method other than the
accountant's: closed forms by plain ``math``, the CKS optimum from its stationarity
equation ρ(α − 1)² + ln α = ln(1/δ) (the accountant searches α numerically), CKS's δ in
80-digit decimal arithmetic, and exact privacy profiles of randomized response by a
binomial sum. dp-accounting (a dev dependency) is used only as a cross-check.
"""

from __future__ import annotations

import decimal
import itertools
import math
from fractions import Fraction

import pytest
from randomized_response import rr_delta, rr_epsilon

from dprect import ParameterError
from dprect.core.accounting import (
    REFINED_KINDS,
    br_zcdp,
    cks_log_delta,
    composition_br,
    composition_br_epsilon,
    composition_pld_pure,
    refined_azuma,
    refined_best,
    refined_br,
    refined_br_cks,
    refined_epsilon,
    refined_guarantee,
    refined_pure,
    zcdp_budget_rho,
    zcdp_to_dp_bun_steinke,
    zcdp_to_dp_cks,
    zcdp_to_dp_cks_with_order,
)
from dprect.core.interior_point import interior_point_size

REL = 1e-9


def close(a: float, b: float, rel: float = REL) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.0)


# -- independent reference computations ---------------------------------------------------
def cks_reference(rho: float, delta: float) -> float:
    """inf_α ε_α, ε_α = αρ + (L − ln α)/(α − 1) + ln(1 − 1/α), L = ln(1/δ).

    dε_α/dα = ρ − (L − ln α)/(α − 1)², which is increasing in α: the unique minimiser solves
    ρ(α − 1)² + ln α = L. Found by bisection on α − 1 in log space."""
    L = math.log(1 / delta)

    def g(x: float) -> float:  # x = α − 1
        return rho * x * x + math.log1p(x) - L

    lo, hi = 1e-12, 1.0
    while g(hi) < 0:
        hi *= 2
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if g(mid) < 0:
            lo = mid
        else:
            hi = mid
    a = 1 + math.sqrt(lo * hi)
    return a * rho + (L - math.log(a)) / (a - 1) + math.log1p(-1 / a)


def cks_delta_decimal(rho: float, eps: float, alpha: float) -> decimal.Decimal:
    """exp((α−1)(αρ−ε))/(α−1)·(1 − 1/α)^α at 80 digits, straight from CKS Prop. 12."""
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        a, r, e = decimal.Decimal(alpha), decimal.Decimal(rho), decimal.Decimal(eps)
        return ((a - 1) * (a * r - e)).exp() / (a - 1) * ((1 - 1 / a).ln() * a).exp()


# -- 1. bounded range ⇒ ε²/8 zCDP -------------------------------------------------------------
@pytest.mark.parametrize("eps,expected", [(0.1, 0.00125), (1.0, 0.125), (0.5, 0.03125)])
def test_br_zcdp_is_eps_squared_over_8(eps: float, expected: float) -> None:
    assert close(br_zcdp(eps), expected)
    assert Fraction(br_zcdp(eps)) >= Fraction(eps) ** 2 / 8  # rounded up, never down


# -- 2. zCDP → (ε, δ) conversions -----------------------------------------------------------
@pytest.mark.parametrize("rho,delta", [(0.01, 1e-6), (0.0244, 1e-6), (0.5, 1e-9)])
def test_bun_steinke_hand_values(rho: float, delta: float) -> None:
    assert close(zcdp_to_dp_bun_steinke(rho, delta),
                 rho + 2 * math.sqrt(rho * math.log(1 / delta)))


def test_bun_steinke_hand_value_spelled_out() -> None:
    # ρ = 0.01, δ = 1e-6: 0.01 + 2·√(0.01·13.815510557964274) = 0.7533844377699783
    assert close(zcdp_to_dp_bun_steinke(0.01, 1e-6), 0.7533844377699783)


def test_closed_forms_round_up() -> None:
    """Bun–Steinke and the RandMargins BR bound, evaluated at 60 digits from the exact float
    inputs, are never above what the accountant states (it rounds up)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        for i in range(200):
            rho, delta = 10 ** (-6 + 0.037 * i), 10 ** (-1 - 0.061 * i)
            r, L = decimal.Decimal(rho), -decimal.Decimal(delta).ln()
            assert decimal.Decimal(zcdp_to_dp_bun_steinke(rho, delta)) >= r + 2 * (r * L).sqrt()
            eps, k = 0.001 * (i + 1), 1 + 7 * i
            e = decimal.Decimal(eps)
            exact = k * e * e / 8 + e * (k * L / 2).sqrt()
            got = refined_br(eps, k=k, q=0.5, rounds=10**6, delta2=delta).epsilon
            assert decimal.Decimal(got) >= exact


@pytest.mark.parametrize("rho,delta", [(1e-4, 1e-6), (0.01, 1e-6), (0.0244, 1e-6),
                                       (0.5, 1e-9), (5.0, 1e-3)])
def test_cks_matches_stationarity_solution(rho: float, delta: float) -> None:
    assert close(zcdp_to_dp_cks(rho, delta), cks_reference(rho, delta))
    assert zcdp_to_dp_cks(rho, delta) <= zcdp_to_dp_bun_steinke(rho, delta)


@pytest.mark.parametrize("rho", [1e-8, 1e-5, 1e-3, 0.0174, 0.1, 1.0, 10.0, 300.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-3, 0.1])
def test_cks_inversion_is_safe(rho: float, delta: float) -> None:
    """The returned ε's exact CKS δ (80 digits, at the order the accountant used) is ≤ δ."""
    eps, alpha = zcdp_to_dp_cks_with_order(rho, delta)
    assert cks_delta_decimal(rho, eps, alpha) <= decimal.Decimal(delta)
    # and the accountant's own 60-digit check agrees
    assert cks_log_delta(rho, eps, alpha) < decimal.Decimal(delta).ln()
    # near-optimal: within 1e-9 of the infimum over α (or clamped at 0)
    assert eps >= 0 and (close(eps, cks_reference(rho, delta)) or eps <= 1e-12 or
                         cks_reference(rho, delta) <= 0)


def test_cks_is_monotone() -> None:
    rhos = [10 ** (-6 + 0.25 * i) for i in range(30)]
    eps = [zcdp_to_dp_cks(r, 1e-6) for r in rhos]
    assert all(a < b for a, b in itertools.pairwise(eps))
    deltas = [10 ** (-12 + 0.5 * i) for i in range(22)]
    eps = [zcdp_to_dp_cks(0.02, d) for d in deltas]
    assert all(a > b for a, b in itertools.pairwise(eps))


@pytest.mark.parametrize("conversion,forward", [("cks", zcdp_to_dp_cks),
                                                ("bun-steinke", zcdp_to_dp_bun_steinke)])
def test_zcdp_budget_rho_inverts_safely(conversion: str, forward) -> None:
    for eps, delta in ((1.0, 1e-6), (0.1, 1e-9), (4.0, 1e-3)):
        rho = zcdp_budget_rho(eps, delta, conversion=conversion)
        assert forward(rho, delta) <= eps
        assert forward(rho * (1 + 1e-9), delta) > eps  # and it is the largest, to 1e-9
    # Bun–Steinke inverts in closed form: √ρ = √(L + ε) − √L
    L = math.log(1e6)
    assert close(zcdp_budget_rho(1.0, 1e-6, conversion="bun-steinke"),
                 (math.sqrt(L + 1) - math.sqrt(L)) ** 2)


# -- 3. composition baseline ---------------------------------------------------------------
@pytest.mark.parametrize("eps0,rounds,delta", [(0.11, 16, 1e-6), (0.0276, 256, 1e-6),
                                               (0.05, 1000, 1e-8)])
def test_composition_br_hand_values(eps0: float, rounds: int, delta: float) -> None:
    rho = rounds * eps0**2 / 8
    g = composition_br(eps0, rounds=rounds, delta=delta, use_dp_accounting=False)
    assert close(g.epsilon, min(rounds * eps0, cks_reference(rho, delta)))
    assert g.delta == delta and "CKS conversion" in g.bound and f"of {rounds} rounds" in g.bound
    assert "eps0^2/8 per round, bounded range" in g.bound


def test_composition_br_pure_wins_for_few_rounds_and_delta_zero() -> None:
    g = composition_br(0.5, rounds=2, delta=0.0)
    assert close(g.epsilon, 1.0) and g.delta == 0.0 and "basic composition" in g.bound
    g = composition_br(0.5, rounds=2, delta=1e-6, use_dp_accounting=False)
    assert close(g.epsilon, 1.0) and g.delta == 0.0  # (1.0, 0) beats every zCDP conversion


def test_eps_squared_over_16_is_refuted_by_an_actual_br_mechanism() -> None:
    """The exponential mechanism on two candidates whose sensitivity-1 scores swap is
    randomized response with loss ±ε₀/2: ε₀-bounded range. Its exact R-fold privacy profile
    is a lower bound every valid BR accountant must respect. ε₀²/8 does; ε₀²/16 does not."""
    for rounds, eps0 in ((256, 0.0276), (1000, 0.05), (16, 0.11)):
        exact = rr_epsilon(1e-6, eps0 / 2, rounds)
        assert composition_br(eps0, rounds=rounds, delta=1e-6).epsilon >= exact
        assert refined_br(eps0, k=rounds, q=0.5, rounds=rounds, delta2=1e-6).epsilon >= exact
        assert refined_br_cks(eps0, k=rounds, q=0.5, rounds=rounds,
                              delta2=1e-6).epsilon >= exact
        wrong = zcdp_to_dp_cks(rounds * eps0**2 / 16, 1e-6)  # the "charged ε²/16" variant
        if rounds >= 256:
            assert wrong < exact


def test_composition_br_epsilon_is_the_largest_valid() -> None:
    for rounds in (2, 16, 32, 256, 2048):
        e0 = composition_br_epsilon(1.0, 1e-6, rounds)
        assert composition_br(e0, rounds=rounds, delta=1e-6).epsilon <= 1.0
        assert composition_br(e0 * (1 + 1e-9), rounds=rounds, delta=1e-6).epsilon > 1.0
    e0 = composition_br_epsilon(1.0, 0.0, 10)  # δ = 0: pure only
    assert close(e0, 0.1) and 10 * e0 <= 1.0 + 1e-15


# -- dp-accounting cross-checks --------------------------------------------------------------
def test_cks_sits_between_gaussian_pld_and_rdp_accountant() -> None:
    """For R rounds of ρ₀ = ε₀²/8 zCDP:

    * dp-accounting's RDP accountant (ZCDpEvent, a finite grid of orders, the same CKS
      conversion per order) can only report ε ≥ our continuous infimum;
    * the Gaussian mechanism with the same ρ is ρ-zCDP, so its exact privacy profile
      (dp-accounting's PLD) must lie at or below any valid ρ-zCDP conversion.
    (Using that Gaussian PLD as the bound would NOT be valid: a ρ-zCDP mechanism can be
    worse than the Gaussian at a given (ε, δ).)"""
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pld
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    for eps0, rounds, delta in ((0.11, 16, 1e-6), (0.0276, 256, 1e-6), (0.2, 50, 1e-8)):
        rho0 = eps0**2 / 8
        ours = zcdp_to_dp_cks(rounds * br_zcdp(eps0), delta)
        acc = rdp.RdpAccountant()
        acc.compose(dpa.ZCDpEvent(rho0), rounds)
        assert ours <= acc.get_epsilon(delta) * (1 + 1e-12)
        sigma = 1 / math.sqrt(2 * rho0)  # sensitivity 1: ρ = 1/(2σ²)
        gauss = pld.from_gaussian_mechanism(sigma, value_discretization_interval=1e-4)
        exact_gauss = gauss.self_compose(rounds).get_epsilon_for_delta(delta)
        assert exact_gauss <= ours
        assert ours <= zcdp_to_dp_bun_steinke(rounds * rho0, delta)


def test_pld_pure_is_valid_and_close_to_the_optimal_composition() -> None:
    """dp-accounting's PLD of (ε₀, 0)-DP is pessimistic: its ε is at least the exact optimal
    composition of R ε₀-DP mechanisms (randomized response, Kairouz–Oh–Viswanath), and its
    discretisation costs little."""
    pytest.importorskip("dp_accounting")
    for eps0, rounds in ((0.5, 2), (0.25, 4), (0.1, 16), (0.05, 64)):
        g = composition_pld_pure(eps0, rounds=rounds, delta=1e-6)
        assert g is not None and g.delta == 1e-6 and "dp-accounting" in g.bound
        exact = rr_epsilon(1e-6, eps0, rounds)
        assert rr_delta(g.epsilon, eps0, rounds) <= 1e-6
        assert exact <= g.epsilon <= exact + rounds * min(1e-4, eps0 / 100) + 1e-6


def test_composition_br_uses_dp_accounting_only_when_tighter() -> None:
    pytest.importorskip("dp_accounting")
    g = composition_br(0.25, rounds=4, delta=1e-6)
    assert "dp-accounting" in g.bound and g.epsilon < 1.0  # PLD beats (1.0, 0) and zCDP
    g = composition_br(0.0276, rounds=256, delta=1e-6)
    assert "CKS conversion" in g.bound  # BR's ε₀²/8 beats the pure-DP worst case


# -- 4. RandMargins, refined theorem v2 -------------------------------------------------------
@pytest.mark.parametrize("eps,k,q,rounds,delta2", [
    (0.1, 4, 0.5, 10, 1e-6), (0.0617, 49, 0.26, 2048, 6.1e-7), (0.02, 300, 0.9, 256, 1e-7)])
def test_refined_br_hand_values(eps: float, k: int, q: float, rounds: int,
                                delta2: float) -> None:
    g = refined_br(eps, k=k, q=q, rounds=rounds, delta2=delta2)
    kk = min(k, rounds)
    expected = kk * eps**2 / 8 + eps * math.sqrt(kk * math.log(1 / delta2) / 2)
    escape = 0.0 if kk >= rounds else (1 - q) ** kk
    assert close(g.epsilon, expected) and close(g.delta, escape + delta2)
    assert g.neighbouring == "add-remove" and "bounded-range" in g.bound
    c = refined_br_cks(eps, k=k, q=q, rounds=rounds, delta2=delta2)
    assert close(c.epsilon, cks_reference(kk * eps**2 / 8, delta2))
    assert c.delta == g.delta and c.epsilon <= g.epsilon and "CKS" in c.bound


def test_refined_br_spelled_out() -> None:
    # ε = 0.1, k = 4, δ₂ = 1e-6: 4·0.01/8 + 0.1·√(4·13.815510557964274/2) = 0.5306521...
    g = refined_br(0.1, k=4, q=0.5, rounds=10, delta2=1e-6)
    assert close(g.epsilon, 0.005 + 0.1 * math.sqrt(2 * 13.815510557964274))
    assert close(g.epsilon, 0.5306521769757)
    # the old Azuma bound at the same point is kε²/2 + ε√(2k ln(1/δ₂)): BR is below it
    assert refined_azuma(0.1, k=4, q=0.5, rounds=10, delta2=1e-6).epsilon > 2 * g.epsilon


@pytest.mark.parametrize("eps,q,rounds", [(0.05, 0.6, 100), (0.01, 0.5, 2048),
                                          (0.2, 0.3, 16)])
def test_refined_best_brute_force(eps: float, q: float, rounds: int) -> None:
    target = 1e-6
    cands: list[float] = []
    for k in range(1, rounds + 1):
        esc = 0.0 if k >= rounds else (1 - q) ** k
        if esc <= target:
            cands.append(eps * k)
        if esc < target:
            L = math.log(1 / (target - esc))
            cands.append(k * eps**2 / 2 + eps * math.sqrt(2 * k * L))
            cands.append(k * eps**2 / 8 + eps * math.sqrt(k * L / 2))
            cands.append(cks_reference(k * eps**2 / 8, target - esc))
    best = refined_best(eps, q=q, rounds=rounds, target_delta=target)
    assert close(best.epsilon, min(cands), 1e-8) and best.delta <= target


def test_refined_epsilon_inverts_refined_best() -> None:
    for q, rounds in ((0.26, 2048), (0.5, 256), (0.01, 16), (0.9, 32)):
        c = refined_epsilon(1.0, 1e-6, q=q, rounds=rounds)
        assert c.kind in REFINED_KINDS
        g = refined_guarantee(c.epsilon, kind=c.kind, k=c.k, q=q, rounds=rounds,
                                 delta2=c.delta2)
        assert g.epsilon <= 1.0 and g.delta <= 1e-6
        fwd = refined_best(c.epsilon, q=q, rounds=rounds, target_delta=1e-6)
        assert fwd.epsilon <= 1.0
        # the largest: a slightly larger per-round ε fits no bound
        assert refined_best(c.epsilon * (1 + 1e-7), q=q, rounds=rounds,
                               target_delta=1e-6).epsilon > 1.0


def test_refined_guarantee_dispatch() -> None:
    args = {"k": 5, "q": 0.5, "rounds": 20, "delta2": 1e-6}
    assert refined_guarantee(0.1, kind="pure", **args) == refined_pure(
        0.1, k=5, q=0.5, rounds=20)
    assert refined_guarantee(0.1, kind="br", **args) == refined_br(0.1, **args)
    with pytest.raises(ParameterError, match="kind"):
        refined_guarantee(0.1, kind="pld", **args)


# -- planner-level effect ((ε, δ) = (1, 1e-6), 2^32 grids, β = 1e-4) ------------------------
M, BETA = 2**32, 1e-4


@pytest.mark.parametrize("d,target,today", [(8, 12_300, 17_848), (16, 37_900, 68_848)])
def test_composition_prediction_meets_issue_targets(d: int, target: int, today: int) -> None:
    rounds = 2 * d
    e0 = composition_br_epsilon(1.0, 1e-6, rounds) * (1 - 1e-9)
    assert composition_br(e0, rounds=rounds, delta=1e-6).epsilon <= 1.0
    predicted = rounds * interior_point_size(e0, BETA / (2 * rounds), M) / 2
    assert predicted <= target < today


@pytest.mark.parametrize("d,target", [(128, 752_000), (1024, 6_050_000)])
def test_randmargins_prediction_meets_issue_targets(d: int, target: int) -> None:
    """The planner's staircase search (a local copy: ρ ∈ {1/100, …, 99/100}, per-round ε
    shrunk by 1e-9, prediction R·(E[N] − Δ/2)) with the v2 accountant."""
    rounds = 2 * d
    ip_beta = BETA / (2 * rounds)
    best = math.inf
    for i in range(1, 100):
        rho = i / 100
        q = rho * (1 - 1e-12) * (1 - ip_beta)
        c = refined_epsilon(1.0, 1e-6, q=q, rounds=rounds)
        eps = c.epsilon * (1 - 1e-9)
        g = refined_guarantee(eps, kind=c.kind, k=c.k, q=q, rounds=rounds, delta2=c.delta2)
        assert g.epsilon <= 1.0 and g.delta <= 1e-6 * (1 + 1e-12)
        size = interior_point_size(eps, ip_beta, M)
        best = min(best, rounds * (size / (1 - rho) - size / 2))
    assert best <= target


# -- validation ------------------------------------------------------------------------------
@pytest.mark.parametrize("call,match", [
    (lambda: br_zcdp(0), "epsilon"),
    (lambda: zcdp_to_dp_cks(-1.0, 1e-6), "rho"),
    (lambda: zcdp_to_dp_cks(0.1, 0.0), "delta"),
    (lambda: zcdp_to_dp_bun_steinke(0.1, 1.0), "delta"),
    (lambda: zcdp_budget_rho(1.0, 1e-6, conversion="pld"), "conversion"),
    (lambda: composition_br(0.1, rounds=0, delta=1e-6), "rounds"),
    (lambda: composition_br(0.1, rounds=4, delta=-1e-6), "delta"),
    (lambda: refined_br(0.1, k=0, q=0.5, rounds=4, delta2=1e-6), "k"),
    (lambda: refined_br_cks(0.1, k=2, q=0.0, rounds=4, delta2=1e-6), "q"),
    (lambda: refined_best(0.1, q=1.5, rounds=4, target_delta=1e-6), "q"),
])
def test_parameter_errors(call, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        call()


def test_zero_rho_is_free() -> None:
    assert zcdp_to_dp_cks(0.0, 1e-6) == 0.0 and zcdp_to_dp_bun_steinke(0.0, 1e-6) == 0.0


@pytest.mark.parametrize("eps_total,delta_total", [(0.5, 1e-6), (1.0, 1e-6), (4.0, 1e-6),
                                                   (1.0, 1e-9)])
def test_dp_accounting_never_allows_a_larger_eps0_at_planning_budgets(eps_total, delta_total):
    """Why the planner can ignore dp-accounting (plans must not depend on an optional
    package): at the budgets users plan with, its randomized-response PLD never allows a
    per-round ε₀ more than 0.01% above the closed-form bounds, for R = 2 … 64 rounds."""
    pytest.importorskip("dp_accounting")
    for rounds in (2, 4, 8, 16, 32, 64):
        ours = composition_br_epsilon(eps_total, delta_total, rounds, use_dp_accounting=False)
        with_pld = composition_br_epsilon(eps_total, delta_total, rounds,
                                          use_dp_accounting=True)
        assert with_pld <= ours * 1.0001, rounds
