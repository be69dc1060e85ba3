"""dprect.describe / dprect.mean_bounds: the Python function of issue #23 (numpy route)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dprect
from dprect.core.errors import ParameterError
from dprect.core.request import DescribeRequest


def _frame() -> pd.DataFrame:
    rs = np.random.default_rng(4)
    n = 6000
    g = rs.choice(["east", "west", "north"], n)
    x = np.where(g == "east", rs.normal(50, 5, n), rs.normal(20, 3, n))
    y = rs.exponential(2.0, n)
    y[::97] = np.nan
    return pd.DataFrame({"g": g, "x": x, "y": y})


def test_describe_grouped_one_charge_and_accuracy():
    df = _frame()
    with pytest.warns(UserWarning, match="NOT private"):
        res = dprect.describe(df, ["x", "y"], groups=["east", "west", "south"],
                              group_by="g", epsilon=2.0, seed=5)
    assert res.groups == ["east", "west", "south"] and res.columns == ["x", "y"]
    east = res.cell("x", "east")
    truth = df.loc[df.g == "east", "x"]
    assert east.lower <= truth.mean() <= east.upper
    assert abs(east.mean - truth.mean()) < 0.5
    assert abs(east.count - len(truth)) < 60
    assert res.cell("x", "south").count is not None  # listed, no rows: released anyway
    assert res.guarantee.epsilon <= 2.0 and res.guarantee.delta == 0.0
    d = res.to_dict()
    assert d["plan"]["product"] == "describe" and len(d["results"]) == 6
    # north is not listed: nothing about it is released
    assert "north" not in str(d["results"])
    # the charge does not depend on the number of groups
    with pytest.warns(UserWarning):
        one = dprect.describe(df, ["x", "y"], groups=["east"], group_by="g",
                              epsilon=2.0, seed=5)
    assert one.guarantee == res.guarantee


def test_mean_bounds_and_refusals():
    x = np.random.default_rng(2).normal(0, 1, (5000, 1))
    with pytest.warns(UserWarning):
        res = dprect.mean_bounds(x, epsilon=0.5, query_epsilon=0.5, seed=1)
    c = res.cells[0][0]
    assert c.mean is None and -10 < c.lower < -1 and 1 < c.upper < 10
    with pytest.raises(ParameterError):
        dprect.describe(x, epsilon=0.0)
    with pytest.raises(ParameterError, match="groups"):
        dprect.describe(_frame(), ["x"], group_by="g", epsilon=1.0)
    for empty in ("", " "):  # as the command line's 'a,,b' (s39-edges b)
        with pytest.raises(ParameterError, match="empty group value"):
            dprect.describe(_frame(), ["x"], group_by="g", groups=["east", empty],
                            epsilon=1.0)
    with pytest.raises(ParameterError, match="statistics"):
        dprect.describe(x, epsilon=1.0, statistics=("max",))


@pytest.mark.parametrize("delta", [1e-6, 0.5, float("nan")])
def test_a_delta_is_refused_before_the_charge_as_no_mechanism_uses_it(delta):
    """Every mechanism of describe is pure: a δ > 0 would be neither used nor charged
    (the ledger charges the guarantee's δ, 0), so it is refused rather than accepted as
    if spent — by the API, the front ends' plan and the typed request alike; 0 runs."""
    x = np.random.default_rng(2).normal(0, 1, (500, 1))
    budget = dprect.PrivacyBudget(epsilon=10.0, delta=1e-3)
    for call in (lambda: dprect.describe(x, epsilon=1.0, delta=delta, budget=budget),
                 lambda: dprect.aggregate(x, statistics=["count"], epsilon=1.0,
                                          delta=delta, budget=budget)):
        with pytest.raises(ParameterError, match="delta"):
            call()
    assert budget.charges == []
    with pytest.raises(ParameterError, match="delta"):
        DescribeRequest(1.0, delta=delta)
    assert DescribeRequest(1.0, delta=0).delta == 0.0


def test_aggregate_is_the_general_form_of_both_presets():
    """dprect.aggregate (issue #41): the presets are aggregate with their statistics —
    the same result for a seed — and mechanisms whose outputs collide are not mixed."""
    df = _frame()
    with pytest.warns(UserWarning):
        preset = dprect.describe(df, ["x"], epsilon=1.0, statistics=("mean",), seed=3)
    with pytest.warns(UserWarning):
        general = dprect.aggregate(df, ["x"], statistics=["bounds", "mean"], epsilon=1.0,
                                   seed=3)
    assert general.to_dict() == preset.to_dict()
    with pytest.warns(UserWarning):
        covered = dprect.aggregate(df, ["x", "y"], statistics="coverage", epsilon=1.0,
                                   coverage=0.99, seed=3)
    with pytest.warns(UserWarning):
        bounded = dprect.bounds(df, ["x", "y"], epsilon=1.0, coverage=0.99, seed=3)
    assert covered.to_json() == bounded.to_json()
    with pytest.raises(ParameterError, match="both release 'lower'"):
        dprect.aggregate(df, ["x"], statistics=["coverage", "mean"], epsilon=1.0)
    with pytest.raises(ParameterError, match="coverage bounds' options"):
        dprect.aggregate(df, ["x"], statistics=["mean"], epsilon=1.0, coverage=0.9)
    with pytest.raises(ParameterError, match="query_epsilon"):
        dprect.aggregate(df, ["x"], statistics=["coverage"], epsilon=1.0, query_epsilon=1.0)
    with pytest.raises(ParameterError, match="statistics must be among"):
        dprect.aggregate(df, ["x"], statistics=["p42"], epsilon=1.0)


def test_every_parameter_of_a_preset_is_aggregates_with_its_default():
    """describe and bounds hand every parameter but their statistics on to aggregate by
    name (issue #41: one preset helper, no forwarding list to keep in step): each of
    their parameters is one of aggregate's, of the same kind and default, and a preset
    with every option given is aggregate with them, for a seed."""
    import inspect

    from dprect.app.describe import aggregate, bounds, describe

    general = inspect.signature(aggregate).parameters
    for preset in (describe, bounds):
        for name, p in inspect.signature(preset).parameters.items():
            if name == "statistics":
                continue
            assert name in general, (preset.__name__, name)
            assert (p.kind, p.default) == (general[name].kind, general[name].default), name
    df = _frame()
    options = {"epsilon": 1.0, "group_by": "g", "groups": ["east", "west"], "seed": 7,
               "neighbouring": "replace-one", "beta": 0.01, "interval_level": 0.9,
               "select_groups": True, "selection_epsilon": 0.5, "selection_delta": 1e-6}
    with pytest.warns(UserWarning):
        preset = dprect.describe(df, ["x"], statistics="mean", query_epsilon=0.5, **options)
    with pytest.warns(UserWarning):
        same = dprect.aggregate(df, ["x"], statistics=["bounds", "mean"], query_epsilon=0.5,
                                **options)
    assert preset.to_dict() == same.to_dict()
    with pytest.warns(UserWarning):
        preset = dprect.bounds(df, ["y"], coverage=0.99, rows=6000, **options)
    with pytest.warns(UserWarning):
        same = dprect.aggregate(df, ["y"], statistics="coverage", coverage=0.99, rows=6000,
                                **options)
    assert preset.to_dict() == same.to_dict()


def _record(result) -> dict:
    """A result's whole record (the results' types name it to_json or to_dict)."""
    return result.to_json() if hasattr(result, "to_json") else result.to_dict()


@pytest.mark.parametrize("statistics", [("coverage",), ("bounds", "mean"), ("median",),
                                        ("mean", "median")])
def test_group_by_as_one_value_per_row_beside_a_table(statistics):
    """``group_by`` may give the rows' group values instead of a column's name (the
    docstrings' "or one group value per row"). Beside a pandas DataFrame or a pyarrow
    Table such an array, Series or list was compared with each column's name (element by
    element, and the comparison's truth value raised numpy's or pandas' ValueError), so
    only a bare array of data took it. Now every form gives the result of naming the
    column, for a seed — for each product (one mechanism, quantiles, a mixed list)."""
    import pyarrow as pa

    df = _frame().iloc[:1500]
    kwargs = dict(statistics=statistics, epsilon=2.0, groups=["east", "west"], seed=3)
    with pytest.warns(UserWarning, match="NOT private"):
        named = dprect.aggregate(df, ["x", "y"], group_by="g", **kwargs)
    per_row = [df["g"], df["g"].to_numpy(), df["g"].tolist(), pa.array(df["g"])]
    for data in (df[["x", "y"]], pa.Table.from_pandas(df[["x", "y"]])):
        for groups in per_row:
            with pytest.warns(UserWarning, match="NOT private"):
                got = dprect.aggregate(data, ["x", "y"], group_by=groups, **kwargs)
            assert _record(got) == _record(named), (type(data), type(groups))
    with pytest.raises(dprect.InputDataError, match="one group value per row"):
        dprect.aggregate(df[["x", "y"]], group_by=df["g"].to_numpy()[:-1], **kwargs)


def _small_groups() -> pd.DataFrame:
    """~500 rows a group in two columns: at ε = 1 the plan needs ~567 (s44-pyapi2 1)."""
    rs = np.random.default_rng(0)
    n = 1000
    return pd.DataFrame({"g": np.repeat(["a", "b"], n // 2), "x": rs.normal(10, 1, n),
                         "y": rs.normal(-3, 2, n)})


def test_python_rows_carry_the_small_group_flag_the_record_carries():
    """``DescribeResult.rows()`` flags a cell whose released count is below the plan's
    rows_needed exactly as the CLI's record does (the same rule, from the released count
    and the public plan): main's Python rows had no flag, so a half-empty group's bounds
    and mean ≈ 0 read as an answer. A count-less run (bounds alone) flags nothing (None);
    a mixed run's describe part carries it too, and its rows the parts' flags joined."""
    from dprect.release.aggregate_record import describe_record, mixed_record

    df = _small_groups()
    flagged = 0
    for seed in range(4):
        with pytest.warns(UserWarning):
            res = dprect.describe(df, ["x", "y"], group_by="g", groups=["a", "b"],
                                  epsilon=1.0, seed=seed)
        need = res.plan.rows_needed
        assert need > 500  # the plan needs more than a group has
        rows = res.rows()
        assert [r["below_row_need"] for r in rows] == \
            [r["below_row_need"] for r in describe_record(res)["results"]]
        for r in rows:
            assert r["below_row_need"] is (r["count"] < need)
        flagged += sum(r["below_row_need"] for r in rows)
    assert flagged > 0
    with pytest.warns(UserWarning):
        alone = dprect.mean_bounds(df, ["x"], epsilon=1.0, query_epsilon=1.0, seed=1)
    assert [r["below_row_need"] for r in alone.rows()] == [None]
    with pytest.warns(UserWarning):
        mixed = dprect.aggregate(df, ["x", "y"], statistics=["mean", "median"],
                                 group_by="g", groups=["a", "b"], epsilon=1.0, seed=2)
    part = mixed.result("describe").rows()
    record = mixed_record(mixed)
    assert [r["below_row_need"] for r in part] == \
        [r["below_row_need"] for r in record["parts"]["describe"]["results"]]
    # the run's row: flagged where any part flags it (the describe part asked no count)
    assert [r["below_row_need"] for r in record["results"]] == \
        [r["below_row_need"] for r in mixed.result("quantiles").rows()] == \
        [r["below_row_need"] for r in mixed.rows()]


@pytest.mark.parametrize("statistics", [("coverage",), ("bounds", "mean"), ("median",),
                                        ("mean", "median")])
def test_every_aggregate_result_has_to_json_and_rows(statistics):
    """One call shape for every sibling result (s44-pyapi2 2): main's DescribeResult and
    QuantileResult had ``to_dict`` but no ``to_json``, MixedResult no ``rows()``. The rows
    are one per (group, column) in draw order; a mixed run's merge its parts' rows."""
    df = _small_groups()
    with pytest.warns(UserWarning):
        res = dprect.aggregate(df, ["x", "y"], statistics=list(statistics), group_by="g",
                               groups=["a", "b"], epsilon=1.0, seed=3)
    record = res.to_json()
    assert record["privacy"] == res.guarantee.to_json()
    rows = res.rows()
    assert [(r["group"], r["column"]) for r in rows] == \
        [("a", "x"), ("a", "y"), ("b", "x"), ("b", "y")]
    if hasattr(res, "results"):  # a mixed run: every part's outputs, one flag of theirs
        for part in res.results:
            for mine, theirs in zip(rows, part.rows(), strict=True):
                assert {k: mine[k] for k in theirs if k != "below_row_need"} == \
                    {k: v for k, v in theirs.items() if k != "below_row_need"}
        parts = [p.rows() for p in res.results]
        assert [r["below_row_need"] for r in rows] == [
            any(f for f in flags if f is not None) if any(f is not None for f in flags)
            else None for flags in zip(*([r["below_row_need"] for r in p] for p in parts),
                                       strict=True)]
        assert list(rows[0])[-1] == "below_row_need"
    with pytest.warns(UserWarning):
        selected = dprect.aggregate(df, ["x"], statistics=list(statistics), group_by="g",
                                    select_groups=True, selection_epsilon=1.0,
                                    selection_delta=1e-6, epsilon=1.0, seed=3)
    assert "group_selection" in selected.to_json()
    assert isinstance(selected.rows(), list)


@pytest.mark.parametrize("statistics", [["count", "mean"], ["median"], ["coverage"]])
def test_a_column_arrow_has_no_array_of_is_refused_as_input_data(statistics) -> None:
    """A pandas column of complex numbers escaped as pyarrow's ArrowNotImplementedError
    ("Unsupported numpy type 15"), not a dprect error; it is refused naming the column and
    the exception's class only, before anything is charged (the values are not read)."""
    from dprect.core.errors import InputDataError

    budget = dprect.PrivacyBudget(epsilon=10.0, delta=1e-6)
    data = pd.DataFrame({"x": np.full(50, 7777.25 + 1j), "y": np.arange(50.0)})
    with pytest.raises(InputDataError) as caught:
        dprect.aggregate(data, ["x", "y"], statistics=statistics, epsilon=1.0, budget=budget)
    assert str(caught.value) == "column 'x' cannot be read: ArrowNotImplementedError"
    assert budget.charges == []


@pytest.mark.parametrize("dtype", [object, "string"])
def test_a_text_with_a_lone_surrogate_is_refused_as_input_data(dtype) -> None:
    """A group column holding ``"\\ud800"`` (text no UTF-8 can hold) escaped as Python's
    UnicodeEncodeError from pyarrow; it is refused naming the column and the exception's
    class only, before anything is charged."""
    from dprect.core.errors import InputDataError

    budget = dprect.PrivacyBudget(epsilon=10.0, delta=1e-6)
    data = pd.DataFrame({"x": np.arange(60.0),
                         "g": pd.Series(["\ud800k" if i % 2 else "ok" for i in range(60)],
                                        dtype=dtype)})
    with pytest.raises(InputDataError) as caught:
        dprect.aggregate(data, ["x"], statistics=["count"], epsilon=1.0, budget=budget,
                         group_by="g", select_groups=True, selection_epsilon=1.0,
                         selection_delta=1e-6)
    assert str(caught.value) == "column 'g' cannot be read: UnicodeEncodeError"
    assert budget.charges == []
