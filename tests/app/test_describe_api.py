"""dprect.describe / dprect.mean_bounds: the Python function of issue #23 (numpy route)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dprect
from dprect.core.errors import ParameterError


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
    with pytest.raises(ParameterError, match="statistics"):
        dprect.describe(x, epsilon=1.0, statistics=("max",))


def test_aggregate_is_the_general_form_of_both_presets():
    """dprect.aggregate (issue #41): the presets are aggregate with their statistics —
    the same result for a seed — and one run draws one mechanism's statistics."""
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
    with pytest.raises(ParameterError, match="one mechanism"):
        dprect.aggregate(df, ["x"], statistics=["coverage", "mean"], epsilon=1.0)
    with pytest.raises(ParameterError, match="coverage bounds' options"):
        dprect.aggregate(df, ["x"], statistics=["mean"], epsilon=1.0, coverage=0.9)
    with pytest.raises(ParameterError, match="query_epsilon"):
        dprect.aggregate(df, ["x"], statistics=["coverage"], epsilon=1.0, query_epsilon=1.0)
    with pytest.raises(ParameterError, match="statistics must be among"):
        dprect.aggregate(df, ["x"], statistics=["median"], epsilon=1.0)
