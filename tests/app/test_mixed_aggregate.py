"""Statistics of several mechanisms in one charge and one engine pass (issue #41;
docs/privacy.md §11b): the declared split, its independent check, the one pass, each
mechanism's own stream, the merged record, and bad input refused with nothing charged."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

import dprect
from dprect.app.aggregate_flow import (
    asked_mechanisms,
    mixed_plan_of,
    plan_of,
)
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import GuaranteeCheckError, check_mixed_plan
from dprect.core.mixed import MixedResult, mixed_spec, plan_mixed, shares
from dprect.core.randomness import RandomSource
from dprect.core.statistic import QUANTILES, QUERY, SEARCH_GRID
from dprect.engines.grouped import grouped_statistics
from dprect.release.aggregate_record import SHAPES, mixed_columns, mixed_record

ASKED = ["mean", "median", "p90"]


def _table(n: int = 4000):
    pd = pytest.importorskip("pandas")
    gen = np.random.default_rng(5)
    return pd.DataFrame({"a": np.round(gen.lognormal(3, 1, n), 2),
                         "b": np.round(gen.normal(0, 5, n), 1),
                         "g": gen.choice(["x", "y", "z"], n)})


def _plan(epsilon: float = 1.0):
    mechanisms, names = asked_mechanisms(ASKED)
    return mechanisms, names, mixed_plan_of(mechanisms, {"columns": ["a", "b"],
                                                         "epsilon": epsilon}, names)


def test_each_mechanism_is_planned_on_its_declared_share():
    """Equal weights: each part is planned on exactly ε/2 (the largest float not above),
    the shares never sum past ε, and the composed guarantee is (ε, 0)."""
    for eps in (1.0, 0.3, 2.0 / 3.0, 7.1):
        got = shares(eps, (1, 1, 1))
        assert all(Fraction(s) <= Fraction(eps) / 3 < Fraction(s) * (1 + Fraction(1, 2**50))
                   for s in got)
        assert sum(map(Fraction, got)) <= Fraction(eps)
    mechanisms, _, plan = _plan(1.0)
    assert [m.name for m in mechanisms] == [QUERY.name, QUANTILES.name]
    assert plan.weights == (QUERY.weight, QUANTILES.weight) == (1, 1)
    assert plan.plans[0].epsilon == plan.plans[1].epsilon == 0.5
    assert plan.guarantee.epsilon == 1.0 and plan.guarantee.delta == 0.0
    assert sum(p.guarantee.epsilon for p in plan.plans) <= 1.0
    assert plan.check is not None and plan.check.epsilon <= 1.0
    assert set(plan.check.details["parts"]) == {"describe", "quantiles"}


def test_the_check_refuses_a_part_past_its_share():
    """A wrong split constant (a part given more than ε·w/Σw) is refused by the check,
    and so is a part whose own entry fails or a sum past the run's ε."""
    mechanisms, _, plan = _plan(1.0)

    def greedy(mechanism, share):  # the split constant off: 0.6 instead of 0.5
        mine = ["mean"] if mechanism is QUERY else ["median", "p90"]
        return plan_of(mechanism, {"columns": ["a", "b"], "epsilon": share * 1.2}, mine)

    with pytest.raises(GuaranteeCheckError, match="more than its declared share"):
        plan_mixed(mechanisms, 1.0, greedy)
    # weights that do not match the plans, and a run ε below the parts' sum
    with pytest.raises(GuaranteeCheckError):
        check_mixed_plan(dataclasses.replace(plan, weights=(1,)))
    with pytest.raises(GuaranteeCheckError, match="more than its declared share"):
        check_mixed_plan(dataclasses.replace(plan, weights=(1, 3)))
    with pytest.raises(GuaranteeCheckError):
        check_mixed_plan(dataclasses.replace(plan, epsilon=0.9))
    check_mixed_plan(plan)  # the plan as made passes


def test_a_mixed_run_is_each_mechanism_on_its_share_from_one_pass():
    """The mixed run's parts equal single-mechanism runs on ε/2 seeded with the run's
    stream seeds (so the one pass counts each mechanism's cells as its own run would),
    and a single-mechanism run is unchanged (it never takes the mixed path)."""
    df = _table()
    with pytest.warns(UserWarning):
        mixed = dprect.aggregate(df, ["a", "b"], statistics=ASKED, epsilon=2.0,
                                 group_by="g", groups=["x", "y", "q"], seed=9)
    assert isinstance(mixed, MixedResult)
    with pytest.warns(UserWarning):
        seeds = RandomSource(seed=9).stream_seeds(2)
    alone = {}
    for mechanism, names, seed in ((QUERY, ["mean"], seeds[0]),
                                   (QUANTILES, ["median", "p90"], seeds[1])):
        with pytest.warns(UserWarning):
            alone[mechanism.name] = dprect.aggregate(
                df, ["a", "b"], statistics=names, epsilon=1.0, group_by="g",
                groups=["x", "y", "q"], seed=seed)
    assert mixed.result("describe").to_dict()["results"] == \
        alone["describe"].to_dict()["results"]
    assert mixed.result("quantiles").to_dict()["results"] == \
        alone["quantiles"].to_dict()["results"]


def test_one_pass_counts_a_column_once_per_mechanism():
    gen = np.random.default_rng(1)
    x = gen.normal(size=500)
    group = gen.integers(-1, 2, 500)
    specs = [QUERY.spec([SEARCH_GRID]), QUANTILES.spec([SEARCH_GRID])]
    both = grouped_statistics([x, x], group, 2, mixed_spec(specs))
    for j, spec in enumerate(specs):
        own = grouped_statistics([x], group, 2, spec)
        for g in range(2):
            a, b = both[(g, j)], own[(g, 0)]
            assert np.array_equal(a.keys, b.keys) and np.array_equal(a.counts, b.counts)


def test_the_record_has_one_row_per_cell_with_every_asked_statistic():
    df = _table(1500)
    with pytest.warns(UserWarning):
        result = dprect.aggregate(df, ["a", "b"], statistics=ASKED, epsilon=1.0,
                                  group_by="g", groups=["x", "y"], seed=2)
    record = mixed_record(result)
    assert record["method"] == "describe+quantiles"
    assert record["privacy"]["epsilon"] == 1.0 and record["privacy"]["delta"] == 0.0
    rows = record["results"]
    assert [(r["group"], r["column"]) for r in rows] == [
        ("x", "a"), ("x", "b"), ("y", "a"), ("y", "b")]
    keys = mixed_columns(["describe", "quantiles"])
    assert keys == ("group", "column", *SHAPES["describe"].columns[2:-1],
                    *SHAPES["quantiles"].columns[2:-1], "below_row_need")  # one flag
    for row in rows:
        assert tuple(row) == keys
        assert all(row[k] is not None for k in ("mean", "median", "p90", "lower", "upper"))
        assert row["count"] is None and row["p10"] is None  # not asked


@pytest.mark.parametrize("statistics, groups", [
    (["mean", "median"], ["x", "y"]),
    (["count", "variance", "p90"], ["x", "y", "absent"]),  # on_ask; a group with no rows
    (["coverage", "median", "p10"], ["z"]),
    (["std", "p99"], None),  # ungrouped
])
def test_the_python_rows_are_the_records_rows(statistics, groups):
    """``MixedResult.rows()`` has the keys of the released record's rows
    (:func:`mixed_columns`, in order: a statistic not asked is None) and, for a seed, the
    same values. Main's rows held only the asked statistics' keys."""
    df = _table(600)
    grouping = {} if groups is None else dict(group_by="g", groups=groups)
    with pytest.warns(UserWarning):
        result = dprect.aggregate(df, ["a", "b"], statistics=statistics, epsilon=1.0,
                                  seed=4, **grouping)
    assert isinstance(result, MixedResult)
    record = mixed_record(result)["results"]
    rows = result.rows()
    assert [list(r) for r in rows] == [list(r) for r in record]
    assert rows == record
    assert all(r["p5"] is None and r["p5_rank_error"] is None for r in rows)  # not asked


@pytest.mark.parametrize("bad, match", [
    (dict(delta=1e-6), "pure"),
    (dict(coverage=0.9), "coverage"),
    (dict(grid="float"), "grid"),
    (dict(statistics=["median", "mean", "coverage"]), "both release"),
    (dict(epsilon=-1.0), "epsilon"),
])
def test_bad_input_is_refused_before_anything_is_charged(bad, match):
    df = _table(300)
    budget = dprect.PrivacyBudget(epsilon=10.0, delta=1e-6)
    kwargs = {"statistics": ASKED, "epsilon": 1.0, **bad}
    with pytest.raises(ParameterError, match=match):
        dprect.aggregate(df, ["a"], budget=budget, **kwargs)
    assert budget.charges == []


def test_an_asked_mechanisms_option_is_accepted_and_charged_once():
    df = _table(800)
    budget = dprect.PrivacyBudget(epsilon=10.0, delta=1e-6)
    with pytest.warns(UserWarning):
        dprect.aggregate(df, ["a"], statistics=ASKED, epsilon=1.0, query_epsilon=0.5,
                         budget=budget, seed=1)
    assert len(budget.charges) == 1 and budget.spent().epsilon == 1.0


def test_the_command_line_asks_one_or_several_mechanisms():
    assert asked_mechanisms("mean,median")[0] == (QUERY, QUANTILES)
    assert asked_mechanisms("median,p90")[0] == (QUANTILES,)


def test_a_ledger_backed_budget_is_charged_once_for_a_mixed_run(tmp_path, capsys):
    from cli_run import run

    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    budget = dprect.PrivacyBudget.ledger(str(ledger), "ds")
    with pytest.warns(UserWarning):
        result = dprect.aggregate(_table(600), ["a", "b"], statistics=ASKED, epsilon=1.0,
                                  budget=budget, seed=4)
    assert isinstance(result, MixedResult)
    spent = budget.spent()
    assert spent is not None and (spent.epsilon, spent.delta) == (1.0, 0.0)  # once
