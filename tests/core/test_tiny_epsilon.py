"""A tiny ε either works with finite outputs or is refused before anything is charged:
below ``MIN_EPSILON`` (core/request.py) every product refuses the request; at 10^-9 a
describe releases finite sums and means inside its bounds (aggregates.released_sum_mean:
exact rationals where a float overflows), a fit or a classes fit is refused by its plan."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dprect
from dprect.core.aggregates import released_sum_mean
from dprect.core.errors import ParameterError
from dprect.core.request import MIN_EPSILON, BoundsRequest, DescribeRequest, FitRequest
from dprect.release.budget import PrivacyBudget

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")

X = np.random.default_rng(0).normal(50, 10, (30, 2))
Y = (X[:, 0] > 50).astype(float)
LARGEST = float(np.finfo(np.float64).max)


def releases(epsilon: float, budget: PrivacyBudget) -> dict[str, object]:
    """Each product of the Python API at ``epsilon`` (a callable each, not yet called)."""
    return {
        "fit": lambda: dprect.fit(X, Y, grid="0:100:64", epsilon=epsilon, delta=1e-6,
                                  seed=1, budget=budget),
        "classes": lambda: dprect.fit(X, Y, grid="0:100:64", classes=[0, 1],
                                      epsilon=epsilon, delta=1e-6, seed=1, budget=budget),
        "bounds": lambda: dprect.bounds(X, epsilon=epsilon, seed=1, budget=budget),
        "describe": lambda: dprect.describe(X, epsilon=epsilon, seed=1, budget=budget),
        # the quantiles took any ε > 0 (5e-324: an internal OverflowError in the plan)
        "quantiles": lambda: dprect.aggregate(X, statistics=["median", "p90"],
                                              epsilon=epsilon, seed=1, budget=budget),
        "mixed": lambda: dprect.aggregate(X, statistics=["mean", "median"],
                                          epsilon=epsilon, seed=1, budget=budget),
        "query_epsilon": lambda: dprect.describe(X, epsilon=1.0, statistics=(), seed=1,
                                                 query_epsilon=epsilon, budget=budget),
        "classifier": lambda: dprect.RectangleClassifier(
            epsilon, 1e-6, classes=[0, 1], grid="0:100:64", random_state=1,
            budget=budget).fit(X, Y),
    }


@pytest.mark.parametrize("epsilon", [1e-300, MIN_EPSILON / 2, 5e-324])
@pytest.mark.parametrize("product", list(releases(1.0, PrivacyBudget())))
def test_below_the_floor_every_product_refuses_and_charges_nothing(product, epsilon):
    budget = PrivacyBudget()
    with pytest.raises(ParameterError, match=r"epsilon must be at least 1e-12"):
        releases(epsilon, budget)[product]()
    assert budget.charges == []


@pytest.mark.parametrize("request_type", [FitRequest, BoundsRequest, DescribeRequest])
def test_the_floor_is_declared_once_in_the_requests(request_type):
    extra = {"delta": 1e-6} if request_type is FitRequest else {}
    assert request_type(epsilon=MIN_EPSILON, **extra).epsilon == MIN_EPSILON
    with pytest.raises(ParameterError, match="epsilon"):
        request_type(epsilon=math.nextafter(MIN_EPSILON, 0.0), **extra)


@pytest.mark.parametrize("epsilon", [1e-9, MIN_EPSILON])
def test_describe_at_a_tiny_epsilon_releases_finite_values(epsilon):
    # at 1e-9 the sides are drawn far out (up to the float range) and the sum's γ·S̃
    # overflowed: seeds 7 and 14 released a sum of ±inf before the exact fallback
    for seed in range(16):
        result = dprect.describe(X, epsilon=epsilon, seed=seed)
        for row in result.rows():
            for key in ("lower", "upper", "count", "sum", "mean"):
                assert math.isfinite(row[key]), (seed, key, row)
            assert row["lower"] <= row["mean"] <= row["upper"]


@pytest.mark.parametrize("epsilon", [1e-9, 1e-300])
def test_fit_and_classes_at_a_tiny_epsilon_are_refused_before_the_charge(epsilon):
    budget = PrivacyBudget()
    for product in ("fit", "classes", "classifier"):
        with pytest.raises(ParameterError, match="epsilon"):
            releases(epsilon, budget)[product]()
    assert budget.charges == []


def test_bounds_at_1e_9_is_released_and_charged():
    budget = PrivacyBudget()
    result = dprect.bounds(X, epsilon=1e-9, seed=1, budget=budget)
    assert len(budget.charges) == 1 and result is not None


def test_the_released_sum_saturates_and_the_mean_stays_in_its_bounds():
    # γ near the float range: γ·S̃ overflows in floats
    total, mean = released_sum_mean(1.0, 1e308, 10, 3, -1e300, 1e300)
    assert total == LARGEST and mean == 1e300
    total, mean = released_sum_mean(1.0, 1e308, -10, 3, -1e300, 1e300)
    assert total == -LARGEST and mean == -1e300
    # S̃ an integer past the float range: float(S̃) raised OverflowError
    total, mean = released_sum_mean(0.5, 1.0, -(10**400), 10**6, -2.0, 3.0)
    assert total == -LARGEST and mean == -2.0
    # p·ñ = +inf and γ·S̃ = -inf in floats (NaN): exactly 0
    assert released_sum_mean(1e300, 1e300, -(10**9), 10**9, -1.0, 2e300) == (0.0, 0.0)
    # the usual case is the float arithmetic, bit for bit
    assert released_sum_mean(2.0, 0.5, 7, 4, 0.0, 10.0) == (2.0 * 4 + 0.5 * 7,
                                                          2.0 + 0.5 * 7 / 4)


@pytest.mark.parametrize("command", [
    ["describe", "--columns", "x,y"],
    ["bounds", "--columns", "x,y"],
    ["fit", "--features", "x,y", "--label", "label", "--delta", "1e-6"],
    ["fit", "--features", "x,y", "--label", "label", "--delta", "1e-6", "--classes", "0,1"],
])
def test_the_cli_refuses_below_the_floor_in_one_line_and_charges_nothing(
        command, tmp_path, capsys):
    import pandas as pd

    from dprect.app.cli import main

    table = tmp_path / "t.csv"
    pd.DataFrame({"x": X[:, 0], "y": X[:, 1], "label": Y}).to_csv(table, index=False)
    ledger = str(tmp_path / "ledger")
    assert main(["budget", "init", "--ledger", ledger]) == 0
    capsys.readouterr()
    out = tmp_path / "out.json"
    code = main([command[0], "--input", str(table), *command[1:], "--epsilon", "1e-300",
                 "--output", str(out), "--ledger", ledger, "--dataset", "t", "--quiet"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.splitlines() == [
        "dprect: error: --epsilon must be at least 1e-12 (no table has the rows to carry "
        "a signal below it), got 1e-300"]
    assert not out.exists()
    assert main(["budget", "show", "--ledger", ledger, "t", "--json"]) == 2
