"""The independent guarantee check (issue #21; docs/privacy.md §10).

* windows are sized for the grid each interior point runs on, for every mix of domain kinds
  (the two example plans of the issue included);
* planner vs check on random plans: every domain kind, d from 1 to 2,048, ε, δ (0 included),
  β, both neighbourings, every method, accounting, margin law and shape — the check
  re-derives every stated guarantee (`make check-plans` runs 10,000 of them);
* breaking a sizing or accounting constant of the planners makes the check refuse, and a
  wrong constant in the check makes it refuse correct plans (each constant mutation-tested);
* a refused plan ends the CLI with one line and exit code 2, before any output or ledger
  entry is written.
"""

from __future__ import annotations

import dataclasses
import decimal
import math
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dprect
from dprect import FloatBins, FloatOrder, Grid, IntegerRange
from dprect.app.cli import main
from dprect.core import accounting, guarantee_check
from dprect.core import bounds as bounds_module
from dprect.core import planner as planner_module
from dprect.core.bounds import BoundsRequest, plan_bounds
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import GuaranteeCheckError, check_bounds_plan, check_fit_plan
from dprect.core.interior_point import interior_point_size
from dprect.core.ties import refined
from dprect.release.ledger import Ledger

_CTX = decimal.Context(prec=60)


def _failure(eps: float, window: int, grid: int) -> Decimal:
    """M·exp(−ε⌈Δ/2⌉/2), written out here once more (in decimal)."""
    with decimal.localcontext(_CTX):
        return Decimal(grid) * (-(Decimal(eps) * ((window + 1) // 2)) / 2).exp()


def _assert_windows_fit(p: dprect.Plan, domains: list) -> None:
    """Every round's failure bound on the grid its interior point runs on is ≤ β_IP."""
    m = p.chosen
    bits = m.tie_breaker(domains).bits
    for r in m.rounds:
        grid = refined(domains[r.axis], bits[r.axis]).size
        assert _failure(m.ip_epsilon, r.ip_size, grid) <= Decimal(m.ip_beta), (r, grid)


# -- the window-sizing defect ---------------------------------------------------------------
def test_the_issues_first_example_sizes_both_axes_for_their_own_grids() -> None:
    for domains in ([FloatBins(4), IntegerRange(0, 65535)],
                    [IntegerRange(0, 65535), FloatBins(4)]):
        p = dprect.plan(domains=domains, epsilon=1, delta=1e-6, method="randmargins")
        _assert_windows_fit(p, domains)
        by_kind = {type(domains[r.axis]).__name__: r.ip_size for r in p.chosen.rounds}
        # the same either order; both kinds now take tie bits (issue #24), so equal sizes
        # mean equal refined grids and one window
        assert by_kind == {"FloatBins": 457, "IntegerRange": 457}


def test_the_issues_second_example_d128() -> None:
    domains = [FloatBins(12)] * 64 + [Grid(0, 1, 2**24)] * 64
    p = dprect.plan(domains=domains, epsilon=1, delta=1e-6, method="randmargins")
    _assert_windows_fit(p, domains)
    assert p.check is not None and p.check.delta <= 1e-6


KINDS = {
    "grid": Grid(0.0, 1.0, 2**16),
    "int": IntegerRange(0, 2**16 - 1),
    "bins": FloatBins(4),  # 2^16 points too: kinds share sizes, not tie bits
    "float": FloatOrder(),
    "small-int": IntegerRange(0, 9),
}


@pytest.mark.parametrize("first", sorted(KINDS))
@pytest.mark.parametrize("second", sorted(KINDS))
def test_every_pair_of_domain_kinds(first: str, second: str) -> None:
    domains = [KINDS[first], KINDS[second], KINDS[first]]
    for method in ("randmargins", "composition"):
        p = dprect.plan(domains=domains, epsilon=2, delta=1e-6, method=method)
        _assert_windows_fit(p, domains)
        # rounds whose interior points run on the same refined grid share one window
        bits = p.chosen.tie_breaker(domains).bits
        window: dict[int, int] = {}
        for r in p.chosen.rounds:
            grid = refined(domains[r.axis], bits[r.axis]).size
            assert window.setdefault(grid, r.ip_size) == r.ip_size


# -- planner vs check on random plans -------------------------------------------------------
def _domain(kind: int, size_bits: int, offset: int) -> dprect.Domain:
    if kind == 0:
        return Grid(-1.0, 1.0, 2**size_bits)
    if kind == 1:
        return IntegerRange(offset, offset + 2**size_bits - 1)
    if kind == 2:
        return FloatBins(1 + size_bits % 20)
    return FloatOrder()


@st.composite
def plan_requests(draw):
    d = draw(st.one_of(st.integers(1, 12), st.integers(13, 200),
                       st.sampled_from([512, 1024, 2048])))
    n_kinds = draw(st.integers(1, 4))
    palette = [_domain(draw(st.integers(0, 3)), draw(st.integers(1, 40)),
                       draw(st.integers(-1000, 1000))) for _ in range(n_kinds)]
    domains = [palette[draw(st.integers(0, n_kinds - 1))] for _ in range(d)]
    eps = draw(st.floats(0.05, 30.0))
    delta = draw(st.sampled_from([0.0, 1e-12, 1e-9, 1e-6, 1e-4, 1e-2]))
    beta = draw(st.sampled_from([1e-6, 1e-4, 1e-2, 0.2]))
    options = {
        "epsilon": eps, "delta": delta, "beta": beta,
        "neighbouring": draw(st.sampled_from(["add-remove", "replace-one"])),
        "method": draw(st.sampled_from(["auto", "randmargins", "composition"])),
        "accounting": draw(st.sampled_from(["refined", "refined", "paper"])),
        "margin_law": draw(st.sampled_from(["staircase", "staircase", "laplace"])),
        "shape": draw(st.sampled_from(["general", "general", "origin"])),
        # features declared continuous (no tie bits): issue #24
        "continuous": [f"x{j}" for j in range(d) if draw(st.integers(0, 3)) == 0],
    }
    return domains, options


def check_random_plan(domains: list, options: dict) -> bool:
    """Plan (which runs the check on the chosen plan), then check every candidate; False
    when the planner refuses the request for its parameters (a plan-time limit)."""
    try:
        p = dprect.plan(domains=domains, **options)
    except GuaranteeCheckError:
        raise
    except ParameterError:
        return False
    assert p.check is not None
    g = p.chosen.guarantee
    assert p.check.epsilon <= g.epsilon and p.check.delta <= g.delta
    assert g.epsilon <= options["epsilon"] and g.delta <= options["delta"]
    for candidate in p.candidates.values():
        check_fit_plan(candidate, domains, beta=options["beta"], shape=options["shape"])
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(plan_requests())
def test_the_check_re_derives_every_random_plan(request) -> None:
    domains, options = request
    check_random_plan(domains, options)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(1, 300), st.sampled_from([FloatBins(12), FloatBins(1), Grid(0, 1, 2**20),
                                              IntegerRange(0, 100)]),
       st.floats(0.05, 30.0), st.sampled_from([0.0, 1e-9, 1e-6]),
       st.sampled_from(["add-remove", "replace-one"]), st.floats(0.5, 0.9999))
def test_the_check_re_derives_every_random_bounds_plan(d, domain, eps, delta, neighbouring,
                                                       coverage) -> None:
    request = BoundsRequest(eps, delta=delta, neighbouring=neighbouring, coverage=coverage)
    plan = plan_bounds(request, [domain] * d)
    assert plan.check is not None
    assert plan.check.epsilon <= plan.guarantee.epsilon <= eps
    assert plan.check.delta <= plan.guarantee.delta <= delta


# -- a wrong constant in a planner: the check refuses ----------------------------------------
G32 = Grid(0.0, 1.0, 2**32)
MIXED = [FloatBins(12)] * 3 + [Grid(0, 1, 2**24)] * 3


def _plans(**options) -> None:
    """A few plans that exercise both methods, both accountings and both relations."""
    for domains, kw in (
        ([G32] * 300, {"delta": 1e-6, "method": "randmargins"}),
        (MIXED, {"delta": 1e-6, "method": "randmargins"}),
        ([G32] * 8, {"delta": 1e-6, "method": "composition"}),
        ([G32] * 4, {"delta": 0.0, "method": "composition"}),
        ([G32] * 4, {"delta": 1e-6, "method": "randmargins", "accounting": "paper"}),
        ([G32] * 8, {"delta": 1e-6, "method": "composition", "neighbouring": "replace-one"}),
    ):
        dprect.plan(domains=domains, epsilon=1.0, **(kw | options))


def test_the_reference_plans_pass() -> None:
    _plans()


def _refused(run, match: str | None = None) -> None:
    with pytest.raises(GuaranteeCheckError, match=match):
        run()


def _with_bits(p: dprect.Plan, axis: int, bits: int):
    """The chosen plan with ``bits`` tie bits on ``axis``'s rounds (windows unchanged)."""
    rounds = tuple(dataclasses.replace(r, tie_bits=bits) if r.axis == axis else r
                   for r in p.chosen.rounds)
    return dataclasses.replace(p.chosen, rounds=rounds)


def test_plans_refining_every_domain_kind_are_accepted() -> None:
    """Issue #24: FloatOrder and FloatBins axes take tie bits; the check takes their grids
    from the domain the rounds run on (the same 2^64 keys on a float axis)."""
    domains = [FloatOrder(), FloatBins(12), IntegerRange(0, 16), FloatOrder()]
    p = dprect.plan(domains=domains, epsilon=2, delta=1e-6, method="randmargins")
    assert all(p.chosen.tie_breaker(domains).bits)
    check_fit_plan(p.chosen, domains, beta=1e-4, shape="general")
    # more tie bits on a float axis do not enlarge its grid: still verified
    check_fit_plan(_with_bits(p, 0, 20), domains, beta=1e-4, shape="general")


def test_floatbins_tie_bits_without_their_window_are_refused() -> None:
    domains = [FloatBins(12)] * 4
    p = dprect.plan(domains=domains, epsilon=2, delta=1e-6, method="randmargins")
    b = p.chosen.tie_breaker(domains).bits[1]
    assert b > 0
    _refused(lambda: check_fit_plan(_with_bits(p, 1, b + 4), domains, beta=1e-4,
                                    shape="general"), "fails more often than beta_IP")


def test_a_declared_axis_that_regains_its_tie_bits_is_refused() -> None:
    """A plan sized for the continuity declaration (no tie bits on x1) but run with tie
    bits on x1 — the engine's refined grid 2^b times larger than the window's — is
    refused."""
    domains = [G32] * 4
    p = dprect.plan(domains=domains, epsilon=2, delta=1e-6, method="randmargins",
                    continuous=["x1", "x2"])
    bits = p.chosen.tie_breaker(domains).bits
    assert bits[1] == 0 < bits[0]
    check_fit_plan(p.chosen, domains, beta=1e-4, shape="general")
    _refused(lambda: check_fit_plan(_with_bits(p, 1, bits[0]), domains, beta=1e-4,
                                    shape="general"), "fails more often than beta_IP")


def test_windows_sized_without_the_tie_bits_are_refused(monkeypatch) -> None:
    monkeypatch.setattr(planner_module, "_ip_grid", lambda domains, axis, _bits:
                        domains[axis].size)  # the defect of issue #21
    _refused(lambda: dprect.plan(domains=MIXED, epsilon=1, delta=1e-6,
                                 method="randmargins"), "fails more often than beta_IP")


@pytest.mark.parametrize("method", ["randmargins", "composition"])
def test_windows_two_points_short_are_refused(monkeypatch, method: str) -> None:
    monkeypatch.setattr(planner_module, "interior_point_size",
                        lambda e, b, m: interior_point_size(e, b, m) - 2)
    _refused(lambda: dprect.plan(domains=[G32] * 8, epsilon=1, delta=1e-6, method=method),
             "fails more often")


def test_a_failure_target_above_beta_over_2r_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(planner_module, "_ip_failure_target", lambda beta, r: beta / r)
    _refused(lambda: dprect.plan(domains=[G32] * 8, epsilon=1, delta=1e-6),
             "failure targets exceed beta")


@pytest.mark.parametrize("d,method", [(300, "randmargins"), (8, "composition")])
def test_a_smaller_bounded_range_constant_is_refused(monkeypatch, d: int, method: str) -> None:
    monkeypatch.setattr(accounting, "BR_ZCDP_FACTOR", 1.0 / 10.0)
    _refused(lambda: dprect.plan(domains=[G32] * d, epsilon=1, delta=1e-6, method=method),
             "no route")


def test_an_understated_escape_probability_is_refused(monkeypatch) -> None:
    right = accounting.escape_probability
    monkeypatch.setattr(accounting, "escape_probability",
                        lambda q, k, rounds: right(q, k, rounds) / 4)
    _refused(lambda: dprect.plan(domains=[G32] * 300, epsilon=1, delta=1e-6,
                                 method="randmargins"), "no route")


def test_an_overstated_margin_ratio_is_refused(monkeypatch) -> None:
    real = planner_module.StaircaseLaw

    class Optimistic(real):  # type: ignore[misc,valid-type]
        @property
        def rho(self) -> float:
            return min(0.999, 1.5 * float(self.rho_fraction))

    monkeypatch.setattr(planner_module, "StaircaseLaw", Optimistic)
    _refused(lambda: dprect.plan(domains=[G32] * 300, epsilon=1, delta=1e-6,
                                 method="randmargins"), "no route")


def test_a_wrong_replace_one_image_is_refused(monkeypatch) -> None:
    right = accounting.replace_one

    def generous(g):
        out = right(g)
        return type(out)(0.75 * out.epsilon, out.delta, out.neighbouring, out.bound)

    monkeypatch.setattr(planner_module, "replace_one", generous)
    _refused(lambda: dprect.plan(domains=[G32] * 8, epsilon=1, delta=1e-6,
                                 neighbouring="replace-one", method="composition"), "no route")


def test_a_wrong_paper_constant_is_refused(monkeypatch) -> None:
    right = accounting.paper_bound

    def half(epsilon, *, delta, rounds):
        g = right(epsilon, delta=delta, rounds=rounds)
        return type(g)(g.epsilon / 2, g.delta, g.neighbouring, g.bound)

    monkeypatch.setattr(planner_module, "paper_bound", half)
    _refused(lambda: dprect.plan(domains=[G32] * 4, epsilon=1, delta=1e-6,
                                 method="randmargins", accounting="paper"), "no route")


def test_bounds_with_a_short_rank_error_are_refused(monkeypatch) -> None:
    monkeypatch.setattr(bounds_module, "_up", lambda x: x / 2)
    _refused(lambda: plan_bounds(BoundsRequest(1.0), [FloatBins(12)] * 3), "rank error")


def test_bounds_with_a_doubled_sampler_rate_are_refused(monkeypatch) -> None:
    c = bounds_module.BoundsPlan.c
    monkeypatch.setattr(bounds_module.BoundsPlan, "c",
                        property(lambda self: 2 * c.fget(self)))  # type: ignore[attr-defined]
    _refused(lambda: plan_bounds(BoundsRequest(1.0), [FloatBins(12)] * 3), "no route")


def test_bounds_with_a_smaller_bounded_range_constant_are_refused(monkeypatch) -> None:
    monkeypatch.setattr(accounting, "BR_ZCDP_FACTOR", 1.0 / 10.0)
    _refused(lambda: plan_bounds(BoundsRequest(1.0, delta=1e-6), [FloatBins(12)] * 30),
             "no route")


# -- a wrong constant in the check: it refuses correct plans ---------------------------------
@pytest.mark.parametrize("name,value", [
    ("BR_ZCDP", Fraction(1, 6)),
    ("PAPER_FACTOR", 71),
    ("PAPER_MAX_LOG_DELTA", -20),
    ("SLACK", Decimal("1e-6")),
])
def test_every_constant_of_the_check_matters_for_rectangles(monkeypatch, name, value) -> None:
    _plans()
    monkeypatch.setattr(guarantee_check, name, value)
    _refused(_plans)


def test_the_bounds_sensitivity_matters(monkeypatch) -> None:
    request = BoundsRequest(1.0)
    plan = plan_bounds(request, [FloatBins(12)] * 2)
    monkeypatch.setattr(guarantee_check, "BOUNDS_SENSITIVITY", 2)
    _refused(lambda: check_bounds_plan(plan))


def test_the_margin_law_ratio_matters(monkeypatch) -> None:
    monkeypatch.setattr(guarantee_check, "_law_ratio", lambda law, window: Decimal("0.001"))
    _refused(lambda: dprect.plan(domains=[G32] * 300, epsilon=1, delta=1e-6,
                                 method="randmargins"), "no route")


# -- what the run states, and a refusal through the CLI --------------------------------------
def test_the_run_json_states_what_the_check_re_derived(tmp_path: Path) -> None:
    X = np.random.default_rng(0).uniform(0, 1, (400, 2))
    r = dprect.fit(X, np.ones(400), epsilon=1, delta=1e-6, seed=1)
    check = r.to_json()["parameters"]["guarantee_check"]
    assert check["product"] == "rectangle" and check["epsilon"] <= r.privacy.epsilon
    b = dprect.bounds(X, epsilon=1, seed=1)
    assert b.to_json()["plan"]["guarantee_check"]["product"] == "bounds"


def test_a_refused_plan_writes_nothing_and_exits_2(monkeypatch, tmp_path: Path, capsys) -> None:
    data = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": np.arange(100.0), "label": np.ones(100, dtype=np.int64)}),
                   data)
    ledger = tmp_path / "ledger"
    assert main(["budget", "init", "--ledger", str(ledger)]) == 0
    capsys.readouterr()
    monkeypatch.setattr(planner_module, "_ip_failure_target", lambda beta, r: beta / r)
    out = tmp_path / "out.json"
    code = main(["fit", "--input", str(data), "--features", "a", "--label", "label",
                 "--epsilon", "1", "--delta", "1e-6", "--output", str(out),
                 "--ledger", str(ledger), "--dataset", "t"])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert err.count("\n") == 1 and "independent guarantee check" in err
    assert Ledger(str(ledger)).events("t") == []  # nothing reserved
    assert "Traceback" not in err


def test_the_float_helpers_round_to_the_safe_side() -> None:
    x = Decimal(1) / Decimal(3)
    assert guarantee_check._float_up(x) >= x
    assert guarantee_check._low(x) < x < guarantee_check._high(x)
    assert math.isclose(float(guarantee_check._high(x)), 1 / 3)


# -- stated floats are never below their exact values (issue #21, item 3) ---------------------
@pytest.mark.parametrize("d", range(1, 22))
def test_pure_statements_are_never_below_their_exact_value(d: int) -> None:
    for eps in (0.3, 1.0, 1.7, 7.0):
        p = dprect.plan(domains=[G32] * d, epsilon=eps, delta=0.0, method="randmargins")
        for c in p.candidates.values():
            exact = Fraction(c.ip_epsilon) * len(c.rounds)
            assert Fraction(c.guarantee.epsilon) >= exact, (d, eps, c.method)


def test_the_azuma_bound_is_never_below_its_exact_value() -> None:
    for eps, k, d2 in ((0.01, 3, 1e-7), (0.3, 40, 1e-9), (1.1, 7, 0.3), (0.05, 1, 1e-12)):
        g = accounting.refined_azuma(eps, k=k, q=0.3, rounds=50, delta2=d2)
        with decimal.localcontext(_CTX):
            e = Decimal(eps)
            exact = k * e * e / 2 + e * (2 * k * -Decimal(d2).ln()).sqrt()
        assert Decimal(g.epsilon) >= exact


# -- the CKS order where ln δ_α is flat (δ near 1) ---------------------------------------------
@pytest.mark.parametrize("delta", [0.999, 0.99999])
@pytest.mark.parametrize("method", ["auto", "randmargins", "composition"])
def test_a_delta_near_one_is_re_derived(delta: float, method: str) -> None:
    """Near δ = 1 the CKS bound is flat in α: the float search's order moved ln δ by
    ~1e-14, above the accountant's own margin, and the check refused a valid plan as a
    dprect bug. The decimal refinement of the order re-derives it."""
    p = dprect.plan(domains=[FloatBins(4)], epsilon=1, delta=delta, method=method)
    assert p.check is not None and p.check.delta <= delta


def test_the_refined_order_is_the_stationary_point() -> None:
    """At the refined α, g(α) = (2α − 1)ρ − ε + ln(1 − 1/α) (the derivative of ln δ_α(ε)
    in α) is zero to the decimal's precision, and ln δ there is no larger than at
    neighbouring orders or at the float search's."""
    with decimal.localcontext(_CTX):
        for rho, eps in ((Decimal("7.879898293714553"), Decimal("0.98")),
                         (Decimal("0.001"), Decimal("0.5")), (Decimal(2), Decimal(40))):
            start = Decimal(guarantee_check._cks_order(rho, eps))
            a = guarantee_check._cks_stationary(rho, eps, start)
            g = (2 * a - 1) * rho - eps + ((a - 1) / a).ln()
            assert abs(g) < Decimal("1e-40"), (rho, eps, g)
            at = guarantee_check._cks_log_delta_exact
            best = at(rho, eps, a)
            assert best <= at(rho, eps, start)
            for nudge in (Decimal("1e-12"), Decimal("-1e-12")):
                assert best <= at(rho, eps, a * (1 + nudge))


def test_no_refinement_refuses_the_flat_case(monkeypatch) -> None:
    """CKS_NEWTON_STEPS is load-bearing: without the refinement the δ = 0.999 plan is
    refused again."""
    monkeypatch.setattr(guarantee_check, "CKS_NEWTON_STEPS", 0)
    with pytest.raises(GuaranteeCheckError):
        dprect.plan(domains=[FloatBins(4)], epsilon=1, delta=0.999, method="randmargins")
