"""The planner: budgets respected, predictions monotone, auto picks the smaller."""

from __future__ import annotations

import itertools

import pytest

from dprect import FloatOrder, Grid, IntegerRange, ParameterError, plan
from dprect.margins import LaplaceLaw, StaircaseLaw

G32 = Grid(0.0, 1.0, 2**32)


@pytest.mark.parametrize("d", [1, 4, 32, 128])
def test_prediction_falls_as_epsilon_grows(d):
    preds = {m: [] for m in ("randmargins", "composition")}
    for eps in (0.25, 0.5, 1.0, 2.0, 4.0):
        p = plan(epsilon=eps, delta=1e-6, domains=[G32] * d)
        for m in preds:
            preds[m].append(p.candidates[m].predicted_misclassified)
    for series in preds.values():
        assert all(a > b for a, b in itertools.pairwise(series))


@pytest.mark.parametrize("d", [1, 2, 16, 64, 256])
@pytest.mark.parametrize("neighbouring", ["add-remove", "replace-one"])
def test_guarantee_within_budget_and_auto_picks_smaller(d, neighbouring):
    p = plan(epsilon=1.0, delta=1e-6, domains=[G32] * d, neighbouring=neighbouring)
    for c in p.candidates.values():
        assert c.guarantee.epsilon <= 1.0 and c.guarantee.delta <= 1e-6
        assert c.guarantee.neighbouring == neighbouring
        assert len(c.rounds) == 2 * d
    best = min(p.candidates.values(), key=lambda c: c.predicted_misclassified)
    assert p.chosen is best


def test_randmargins_wins_in_high_dimension_as_the_design_note_says():
    """Design note §6: ratio ≈ 1.0 at d = 64, 0.74 at 128, 0.37 at 512, 0.26 at 1024."""
    ratios = {}
    for d in (16, 64, 128, 512, 1024):
        p = plan(epsilon=1.0, delta=1e-6, domains=[G32] * d)
        ratios[d] = (p.candidates["randmargins"].predicted_misclassified
                     / p.candidates["composition"].predicted_misclassified)
    assert ratios[16] > 1.0 and abs(ratios[64] - 1.0) < 0.05
    for d, note in ((128, 0.74), (512, 0.37), (1024, 0.26)):
        assert abs(ratios[d] - note) < 0.1 * note
    assert plan(epsilon=1.0, delta=1e-6, domains=[G32] * 1024).chosen.method == "randmargins"
    assert plan(epsilon=1.0, delta=1e-6, domains=[G32] * 4).chosen.method == "composition"


def test_forced_method_and_staircase_details():
    p = plan(epsilon=1.0, delta=1e-6, domains=[G32] * 4, method="randmargins")
    assert p.chosen.method == "randmargins"
    law = p.chosen.rounds[0].law
    assert isinstance(law, StaircaseLaw)
    assert p.chosen.details["k"] >= 1
    split = p.chosen.details["delta_split"]
    assert split["escape"] + split["azuma"] <= 1e-6


def test_paper_accounting_uses_laplace_law_and_paper_bound():
    p = plan(epsilon=1.0, delta=1e-6, domains=[G32] * 3, method="randmargins",
             accounting="paper")
    c = p.chosen
    assert isinstance(c.rounds[0].law, LaplaceLaw)
    assert "paper" in c.guarantee.bound
    assert c.guarantee.epsilon <= 1.0 and c.guarantee.delta <= 1e-6
    # the paper's accounting is far more expensive than the refined one
    refined = plan(epsilon=1.0, delta=1e-6, domains=[G32] * 3, method="randmargins")
    assert c.predicted_misclassified > 10 * refined.chosen.predicted_misclassified


def test_origin_shape_has_d_hi_rounds():
    p = plan(epsilon=1.0, delta=1e-6, domains=[G32] * 5, shape="origin")
    assert [r.side for r in p.chosen.rounds] == ["hi"] * 5


def test_mixed_domains_get_their_own_ip_size():
    p = plan(epsilon=1.0, delta=1e-6, domains=[IntegerRange(0, 9), FloatOrder()])
    sizes = {r.axis: r.ip_size for r in p.chosen.rounds}
    assert sizes[0] < sizes[1]


def test_plan_json_and_table_have_no_surprises():
    p = plan(epsilon=1.0, delta=1e-6, domains=[G32] * 2)
    js = p.to_json()
    assert set(js) == {"request", "chosen", "plan", "predictions"}
    assert "chosen" in p.table()


@pytest.mark.parametrize("kwargs,match", [
    ({"epsilon": 0}, "epsilon"), ({"epsilon": -1}, "epsilon"), ({"delta": 0}, "delta"),
    ({"delta": 1}, "delta"), ({"beta": 0}, "beta"), ({"beta": 1.5}, "beta"),
    ({"method": "magic"}, "method"), ({"domains": []}, "domains"),
    ({"domains": ["0:1:10"]}, "domains"), ({"shape": "circle"}, "shape"),
    ({"neighbouring": "swap"}, "neighbouring"), ({"accounting": "vibes"}, "accounting"),
])
def test_bad_plan_parameters(kwargs, match):
    args = {"epsilon": 1.0, "delta": 1e-6, "domains": [G32]} | kwargs
    with pytest.raises(ParameterError, match=match):
        plan(**args)
