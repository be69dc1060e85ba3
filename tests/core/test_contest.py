"""``auto``'s contest (issue #44, s34; dprect/core/contest.py, docs/privacy.md §19): its
public gate, its budget and the independent check's entry, the selection's law, the
tally's monotone scores, and the fit's output."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

import dprect
from dprect.core import contest as contest_mod
from dprect.core import guarantee_check as gc_mod
from dprect.core.domains import FloatOrder, Grid, IntegerRange
from dprect.core.errors import InputDataError
from dprect.core.planner import plan
from dprect.core.randomness import RandomSource
from dprect.engines.contest_tally import numpy_tally
from tests.fit_cases import contest_table, json_keys

FLIGHTS = [IntegerRange(0, 2359)] * 6  # flights' shape: six axes of 2,360 integers
N_FLIGHTS = 80_100


def _runs(domains, n, eps=1.0):
    """Whether the contest runs on a counting plan resolved at N = ``n``."""
    p = plan(epsilon=eps, delta=1e-6, domains=domains)
    if p.contest is None:
        return False
    return p.resolved(replace(p.count, noisy=n)).contest_runs


def test_the_gate_fires_on_flights_at_eps_4_only():
    """Computed on the cells where auto's choice is documented (docs/algorithm.md §10):
    flights' shape at ε = 4 (composition kept, b/c = 6.0) runs the contest; at ε ≤ 1
    the default rule already takes the box; the planner tests' uniform tables (2^16 grid
    and float order, d = 8, N = 2·10^4 … 3·10^6) and the Spark sweep's cells (d = 8 ×
    10^7 rows: b/c = 26, past CONTEST_RATIO; d = 32, 128, 1,024: the box) do not."""
    assert _runs(FLIGHTS, N_FLIGHTS, 4.0)
    assert not _runs(FLIGHTS, N_FLIGHTS, 1.0) and not _runs(FLIGHTS, N_FLIGHTS, 0.5)
    for domain in (Grid(-100.0, 100.0, 2**16), FloatOrder()):
        for n in (20_000, 10**5, 3 * 10**6):
            assert not _runs([domain] * 8, n), (domain, n)
    sweep = Grid(-100.0, 100.0, 2**20)
    for d, n in ((8, 3 * 10**6), (32, 1_200_000), (128, 600_000), (1024, 300_000)):
        assert not _runs([sweep] * d, n), d


def test_the_contest_is_planned_only_on_auto_s_counting_route():
    """A public N (§1 (c)), a stated target miss, a forced method or a classes' fit (no
    count) plan no contest: their choices are unchanged."""
    assert plan(epsilon=4.0, delta=1e-6, domains=FLIGHTS).contest is not None
    assert plan(epsilon=4.0, delta=1e-6, domains=FLIGHTS, positives=N_FLIGHTS).contest is None
    assert plan(epsilon=4.0, delta=1e-6, domains=FLIGHTS, target_miss=0.02).contest is None
    assert plan(epsilon=4.0, delta=1e-6, domains=FLIGHTS, auto_count=False).contest is None
    assert plan(epsilon=4.0, delta=1e-6, domains=FLIGHTS,
                method="composition").contest is None


def test_each_gate_bound_decides(monkeypatch):
    """Fails if a gate constant crosses flights at ε = 4: its ratio b/c = 6.0 (≤ 8) and
    the split's price, composition's predicted miss rising by 1.2% of N (≤ 2%)."""
    from dprect.core import planner as planner_mod

    assert _runs(FLIGHTS, N_FLIGHTS, 4.0)
    monkeypatch.setattr(planner_mod, "CONTEST_RATIO", 5.0)
    assert not _runs(FLIGHTS, N_FLIGHTS, 4.0)
    monkeypatch.setattr(planner_mod, "CONTEST_RATIO", contest_mod.CONTEST_RATIO)
    monkeypatch.setattr(planner_mod, "CONTEST_PRICE", 0.01)
    assert not _runs(FLIGHTS, N_FLIGHTS, 4.0)


@pytest.mark.parametrize("neighbouring", ["add-remove", "replace-one"])
def test_the_budget_adds_up_and_the_check_rederives_it(neighbouring):
    """The parts (the count, the negatives' count, the selection, two fits at (ε_f, δ/2))
    sum to at most the stated total, which is at most the request; the check's entry
    re-derives it independently."""
    p = plan(epsilon=4.0, delta=1e-6, domains=FLIGHTS, neighbouring=neighbouring)
    contest, g = p.contest, p.chosen.guarantee
    assert contest is not None
    assert g.epsilon <= 4.0 and g.delta <= 1e-6
    eps_ar = 4.0 if neighbouring == "add-remove" else 2.0
    parts = contest.parts(p.count.epsilon)
    assert math.fsum(e for _, e, _ in parts) <= eps_ar
    assert math.fsum(d for _, _, d in parts) <= 1e-6
    assert contest.select_epsilon <= Fraction(eps_ar) * contest_mod.CONTEST_SELECT_SHARE
    assert contest.negatives.epsilon <= eps_ar * float(contest_mod.CONTEST_NEGATIVES_SHARE) * (
        1 + 1e-12)
    report = p.checks["contest"]
    assert report.epsilon <= g.epsilon * (1 + 1e-12) and report.delta <= g.delta
    assert "monotone selection" in report.route
    if neighbouring == "add-remove":  # replace-one plans at ε/2: no contest at this N
        resolved = p.resolved(replace(p.count, noisy=N_FLIGHTS))
        assert resolved.contest_runs and resolved.check is report


def test_the_check_refuses_a_wrong_constant(monkeypatch):
    """The check's own constant and the plan's parts: a selection charged twice (a
    non-monotone utility), a negatives' count at half its scale or a larger ε_s each
    break the total, and the check refuses."""
    p = plan(epsilon=4.0, delta=1e-6, domains=FLIGHTS)
    contest, g = p.contest, p.chosen.guarantee
    stated = (g.epsilon, g.delta, g.neighbouring)

    def check(c):
        return gc_mod.check_contest_plan(c, p.count.to_json(), FLIGHTS, beta=1e-4,
                                     shape="general", stated=stated)

    check(contest)  # as planned: passes
    with pytest.raises(gc_mod.GuaranteeCheckError):
        check(replace(contest, select_epsilon=contest.select_epsilon * 3))
    with pytest.raises(gc_mod.GuaranteeCheckError):
        check(replace(contest, negatives=replace(contest.negatives,
                                                 scale=contest.negatives.scale / 3)))
    whole = p.candidates["quantiles"]  # a fit at the whole rest, not its half
    whole = replace(whole, details={k: v for k, v in whole.details.items()
                                    if k != "private_count"}, guarantee=replace(
        whole.guarantee, epsilon=whole.guarantee.epsilon - p.count.epsilon), add_remove=None)
    with pytest.raises(gc_mod.GuaranteeCheckError, match="add up to more"):
        check(replace(contest, box=whole))
    monkeypatch.setattr(gc_mod, "CONTEST_SELECT_FACTOR", 3)
    with pytest.raises(gc_mod.GuaranteeCheckError):
        check(contest)


def selection_probability(score_list: list[Fraction], positives: int, negatives: int,
                          epsilon: Fraction) -> list[float]:
    """The law of contest.select, P(j) = e^{−ε_s·s_j/Δ}/Σ_i e^{−ε_s·s_i/Δ}, Δ =
    1/min(ñ⁺, ñ⁻), in floats (the draw is exact); moved here from dprect/core/contest.py,
    which never called it."""
    delta = Fraction(1, min(positives, negatives))
    low = min(score_list)
    logs = [-float(epsilon * (s - low) / delta) for s in score_list]
    total = sum(math.exp(v) for v in logs)
    return [math.exp(v) / total for v in logs]


def test_the_selection_law_is_the_exponential_mechanism():
    """Exact formula: P(j) ∝ exp(−ε_s·s_j/Δ), Δ = 1/min(ñ⁺, ñ⁻); for two candidates
    P(1) = 1/(1 + e^γ), γ = ε_s·(s_1 − s_0)/Δ."""
    s = [Fraction(1, 10), Fraction(3, 10)]
    probs = selection_probability(s, 20, 50, Fraction(1, 4))
    gamma = 0.25 * 0.2 * 20
    assert probs[1] == pytest.approx(1 / (1 + math.exp(gamma)), rel=1e-12)
    assert sum(probs) == pytest.approx(1.0)


def test_the_selection_draws_its_law_with_power():
    """20,000 seeded draws at γ = 1 match P(1) = e^-1/(1 + e^-1) = 0.2689 within 4.5
    standard errors; the same test rejects the law a factor 2 in the exponent would give
    (0.1192: 47 standard errors away) — the test has the power to see a wrong rate."""
    s = [Fraction(0), Fraction(1, 10)]
    eps, n = Fraction(1, 10), 100  # γ = (1/10)·(1/10)·100 = 1
    want = selection_probability(s, n, 1000, eps)[1]
    assert want == pytest.approx(math.exp(-1) / (1 + math.exp(-1)))
    rng = RandomSource(seed=7)
    draws = 20_000
    ones = sum(contest_mod.select(s, n, 1000, eps, rng) for _ in range(draws))
    se = math.sqrt(want * (1 - want) / draws)
    assert abs(ones / draws - want) < 4.5 * se
    wrong = math.exp(-2) / (1 + math.exp(-2))
    assert abs(ones / draws - wrong) > 4.5 * se
    # symmetric scores: a fair coin
    assert 0.45 < sum(contest_mod.select([s[0], s[0]], n, 1000, eps, rng)
                      for _ in range(2000)) / 2000 < 0.55


def test_scores_move_one_way_by_at_most_their_weight():
    """The utility's monotonicity (privacy.md §19, Lemma C1), on the tally itself: adding
    one row (positive or negative, anywhere) raises each rectangle's FN or FP count by 0
    or 1 — never one up and another down — so each score by 0 or its weight."""
    gen = np.random.default_rng(3)
    doms = [IntegerRange(0, 31)] * 2
    X = gen.integers(0, 32, (300, 2)).astype(float)
    y = gen.uniform(size=300) < 0.4
    rects = [((3, 4), (20, 25)), ((0, 10), (31, 18)), ((5, 5), (4, 9))]  # the last empty
    neg0, base = numpy_tally(X, y, doms)(rects)
    for _ in range(50):
        row = gen.integers(0, 32, (1, 2)).astype(float)
        label = bool(gen.uniform() < 0.5)
        neg1, more = numpy_tally(np.vstack([X, row]), np.r_[y, label], doms)(rects)
        assert neg1 - neg0 == (0 if label else 1)
        for (fn0, fp0), (fn1, fp1) in zip(base, more, strict=True):
            assert (fn1 - fn0, fp1 - fp0) in ((0, 0), (1, 0) if label else (0, 1))


_table = contest_table


def _fit(X, y, seed, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dprect.fit(X, y, epsilon=4.0, delta=1e-6, seed=seed,
                          grid=IntegerRange(0, 255), **kw)


@pytest.mark.parametrize(("separable", "winner"), [(False, "quantiles"),
                                                   (True, "composition")])
def test_the_fit_returns_the_rectangle_with_the_smaller_balanced_error(separable, winner):
    """Where the tails hold negatives the box wins; where the classes separate it only
    misses more positives and composition wins. The output names the contest and its
    choice; the other rectangle, the scores and the counts are nowhere in it."""
    X, y = _table(separable)
    r = _fit(X, y, seed=1)
    assert r.parameters["contest"]["runs"] is True
    assert r.method == winner and r.parameters["contest_chose"] == winner
    text = repr(r.to_json())
    for word in ("score", "negatives_noisy", "tally"):
        assert word not in text

    released = {"accounting", "private_count", "private_count_epsilon", "count_share"}
    assert not [k for k in json_keys(r.to_json()) if "count" in k.lower() and k not in released]


def test_bad_input_is_refused_as_before():
    """Refusals come before the contest and read no value: a y of the wrong length, and
    a NaN feature under ``error``; under ``drop`` a NaN row is left out of both counts."""
    X, y = _table(False)
    with pytest.raises(InputDataError, match="one label per row"):
        _fit(X, y[:-1], seed=1)
    X2 = X.copy()
    X2[3, 0] = np.nan
    with pytest.raises(InputDataError, match="null, NaN or infinite"):
        _fit(X2, y, seed=1, invalid_rows="error")
    assert _fit(X2, y, seed=1).parameters["contest"]["runs"] is True


def test_the_in_memory_routes_and_the_file_route_agree(tmp_path):
    """The matrix route, the list route (NumpyEngine) and the numpy file route give the
    identical rectangle and choice for a seed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    X, y = _table(False)
    a = _fit(X, y, seed=2)
    b = _fit(X.tolist(), y.tolist(), seed=2)
    from dprect.core.request import FitRequest, Source
    from dprect.engines.numpy_fit import NumpyRoute

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x0": X[:, 0], "y": y}), path)
    doms = [IntegerRange(0, 255)]
    request = FitRequest(epsilon=4.0, delta=1e-6)
    the_plan = plan(request, domains=doms)
    routes = []
    for rows in ("drop", "error"):  # the matrix engine, and the positives selected
        req = FitRequest(epsilon=4.0, delta=1e-6, invalid_rows=rows)
        prepared = NumpyRoute().open(Source(str(path), ["x0"], label="y"), doms, req,
                                     the_plan, lambda _msg: None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            routes.append(prepared.run(seed=2))

    assert routes[1].parameters["contest_chose"] == a.method
    for r in (b, *routes):
        assert (r.lower_index, r.upper_index, r.method) == (a.lower_index, a.upper_index,
                                                            a.method)
        assert r.parameters["positives_noisy"] == a.parameters["positives_noisy"]


def test_the_plan_prints_the_contest_s_shares():
    """The shares are public plan constants: the plan's table names them, and whether the
    contest runs once the count is drawn."""
    p = plan(epsilon=4.0, delta=1e-6, domains=FLIGHTS)
    line = p.contest_line()
    assert line is not None and line in p.table()
    assert "(1.92, 5e-07)" in line and "scale 25" in line and "epsilon 0.04 by" in line
    assert p.resolved(replace(p.count, noisy=N_FLIGHTS)).contest_line().endswith("runs: yes")
    assert p.resolved(replace(p.count, noisy=5_000)).contest_line().endswith("runs: no")
