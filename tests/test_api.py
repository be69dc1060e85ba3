"""dprect.fit: results, reproducibility, and every bad parameter → a ValueError naming it."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import dprect
from dprect import FitResult, FloatOrder, Grid, InputDataError, ParameterError


@pytest.fixture(scope="module")
def data():
    gen = np.random.default_rng(0)
    X = gen.uniform(-1, 1, (20_000, 3))
    y = (np.abs(X) < 0.5).all(axis=1).astype(int)
    return X, y


def quiet_fit(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dprect.fit(*args, **kwargs)


def test_fit_result_fields_and_json_round_trip(data):
    X, y = data
    r = quiet_fit(X, y, grid=Grid(-1, 1, 2**16), epsilon=1.0, delta=1e-6, seed=1,
                  features=["a", "b", "c"])
    js = json.loads(r.to_json_string())
    for key in ("method", "features", "lower", "upper", "privacy", "parameters", "version",
                "seeded", "warning"):
        assert key in js
    assert set(js["privacy"]) == {"epsilon", "delta", "neighbouring", "bound"}
    assert js["privacy"]["epsilon"] <= 1.0 and js["privacy"]["delta"] <= 1e-6
    assert js["seeded"] is True and "NOT private" in js["warning"]
    assert FitResult.from_json(js) == r
    assert all(-0.5 - 1e-3 <= lo and hi <= 0.5 + 1e-3 for lo, hi in zip(r.lower, r.upper,
                                                                       strict=True))


def test_output_holds_no_data_dependent_fields(data):
    X, y = data
    js = quiet_fit(X, y, epsilon=1.0, delta=1e-6, seed=2).to_json()

    def keys(node):
        if isinstance(node, dict):
            for k, v in node.items():
                yield k
                yield from keys(v)
        elif isinstance(node, list):
            for v in node:
                yield from keys(v)

    all_keys = set(keys(js))
    assert "accounting" in all_keys  # the walk sees nested keys
    for word in ("count", "rows", "n_pos", "time", "duration", "seconds", "elapsed"):
        assert not [k for k in all_keys if word in k.lower() and k != "accounting"], word


def test_seeded_warns_and_unseeded_does_not(data):
    X, y = data
    with pytest.warns(UserWarning, match="NOT private"):
        dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = dprect.fit(X, y, epsilon=1.0, delta=1e-6)
    assert r.seeded is False and "warning" not in r.to_json()


def test_same_seed_same_result(data):
    X, y = data
    a = quiet_fit(X, y, epsilon=1.0, delta=1e-6, seed=9)
    b = quiet_fit(X, y, epsilon=1.0, delta=1e-6, seed=9)
    assert a == b


def test_float_order_infinite_bounds_serialise(data):
    X, _ = data
    r = quiet_fit(X, np.zeros(len(X), dtype=int), epsilon=1.0, delta=1e-6, seed=4,
                  grid=FloatOrder())
    js = json.loads(r.to_json_string())  # strict JSON even when a bound is ±inf
    back = FitResult.from_json(js)
    assert [math.isinf(v) for v in back.lower] == [math.isinf(v) for v in r.lower]


def test_contains_matches_grid_semantics(data):
    X, y = data
    r = quiet_fit(X, y, grid=Grid(-1, 1, 1000), epsilon=2.0, delta=1e-6, seed=5)
    inside = r.contains(X)
    lo, hi = np.array(r.lower), np.array(r.upper)
    assert ((X >= lo - 1e-9) & (X <= hi + 1e-9)).all(axis=1)[inside].all()


BAD = [
    ({"epsilon": 0.0}, ParameterError, "epsilon"),
    ({"epsilon": -1.0}, ParameterError, "epsilon"),
    ({"epsilon": math.inf}, ParameterError, "epsilon"),
    ({"delta": 0.0}, ParameterError, "delta"),
    ({"delta": 1.0}, ParameterError, "delta"),
    ({"delta": -0.1}, ParameterError, "delta"),
    ({"beta": 0.0}, ParameterError, "beta"),
    ({"beta": 1.0}, ParameterError, "beta"),
    ({"grid": "1:1:10"}, ParameterError, "grid"),
    ({"grid": "2:1:10"}, ParameterError, "grid"),
    ({"grid": [Grid(0, 1, 10)]}, ParameterError, "grid"),
    ({"method": "best"}, ParameterError, "method"),
    ({"seed": -3}, ParameterError, "seed"),
    ({"features": ["a", "a", "b"]}, ParameterError, "named twice"),
]


@pytest.mark.parametrize("kwargs,exc,match", BAD)
def test_bad_parameters_raise_value_error_naming_it(data, kwargs, exc, match):
    X, y = data
    args = {"epsilon": 1.0, "delta": 1e-6} | kwargs
    with pytest.raises(exc, match=match) as info:
        dprect.fit(X, y, **args)
    assert isinstance(info.value, ValueError)


def test_bad_data_raises_naming_it(data):
    X, y = data
    cases = [
        (X[:, 0], y, "2-D"),
        (X, y[:-1], "one label per row"),
        (X, y.reshape(-1, 1), "one label per row"),
        (np.empty((10, 0)), np.zeros(10), "no feature columns"),
        (np.where(np.arange(len(X))[:, None] == 5, np.nan, X), y, "feature x0 has null, NaN"),
        (np.where(np.arange(len(X))[:, None] == 5, np.inf, X), y, "NaN or infinite"),
        (X, np.where(np.arange(len(y)) == 3, 2, y), "labels must be 0 or 1"),
        (X, np.where(np.arange(len(y)) == 3, np.nan, y), "labels must be 0 or 1"),
        (np.array([["a", "b"]]), [1], "numbers only"),
    ]
    for Xb, yb, match in cases:
        with pytest.raises(InputDataError, match=match):
            dprect.fit(Xb, yb, epsilon=1.0, delta=1e-6)
