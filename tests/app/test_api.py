"""dprect.fit: results, reproducibility, and every bad parameter → a ValueError naming it."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import dprect
from dprect import FitResult, FloatOrder, Grid, InputDataError, ParameterError
from tests.fit_cases import json_keys


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
    # composition: its bounds never leave the positives' range (auto would run the aimed
    # quantile box here, issue #44, whose bounds may reach past the data by design)
    r = quiet_fit(X, y, grid=Grid(-1, 1, 2**16), epsilon=1.0, delta=1e-6, seed=1,
                  features=["a", "b", "c"], method="composition")
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

    all_keys = set(json_keys(js))
    assert "accounting" in all_keys  # the walk sees nested keys
    # auto's private count is a DP release (docs/privacy.md §13): its keys are allowed, and
    # so is the public share of ε it was drawn at (the quantile box's plan)
    released = {"accounting", "private_count", "private_count_epsilon", "count_share"}
    for word in ("count", "rows", "n_pos", "time", "duration", "seconds", "elapsed"):
        assert not [k for k in all_keys if word in k.lower() and k not in released], word


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
    ({"delta": -1e-9}, ParameterError, "delta"),  # δ = 0 is pure DP (accepted)
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
    """Only shapes and types are refused (and, opt-in, invalid rows under ``error``)."""
    X, y = data
    nan_row = np.where(np.arange(len(X))[:, None] == 5, np.nan, X)
    inf_row = np.where(np.arange(len(X))[:, None] == 5, np.inf, X)
    cases = [
        (X[:, 0], y, {}, "2-D"),
        (X, y[:-1], {}, "one label per row"),
        (X, y.reshape(-1, 1), {}, "one label per row"),
        (np.empty((10, 0)), np.zeros(10), {}, "no feature columns"),
        (nan_row, y, {"invalid_rows": "error"}, "feature 'x0' has null, NaN"),
        (inf_row, y, {"invalid_rows": "error"}, "NaN or infinite"),
        (np.array([["a", "b"]]), [1], {}, "numbers only"),
        (X, y.astype(complex), {}, "dtype"),
    ]
    for Xb, yb, kw, match in cases:
        with pytest.raises(InputDataError, match=match):
            dprect.fit(Xb, yb, epsilon=1.0, delta=1e-6, **kw)
    with pytest.raises(ParameterError, match="invalid_rows"):
        dprect.fit(X, y, epsilon=1.0, delta=1e-6, invalid_rows="ignore")


def test_values_are_never_refused(data):
    """Other labels, NaN and None labels are negatives; invalid feature rows are dropped
    by default; no rows, or no positives, give an ordinary empty rectangle."""
    X, y = data
    want = quiet_fit(X, y, grid=Grid(-1, 1, 1024), epsilon=1.0, delta=1e-6, seed=8)
    odd = np.where(np.arange(len(y)) % 7 == 3, 2.0, y.astype(float))
    odd[np.arange(len(y)) % 11 == 4] = np.nan
    positives = odd == 1.0
    X_dirty = np.vstack([X, [[np.nan, 0.0, 0.0], [0.9, np.inf, 0.0]]])
    y_dirty = np.concatenate([positives.astype(float), [1.0, 1.0]])
    a = quiet_fit(X_dirty, y_dirty, grid=Grid(-1, 1, 1024), epsilon=1.0, delta=1e-6, seed=8)
    b = quiet_fit(X, odd, grid=Grid(-1, 1, 1024), epsilon=1.0, delta=1e-6, seed=8)
    assert (a.lower_index, a.upper_index) == (b.lower_index, b.upper_index)
    assert a.to_json().keys() == want.to_json().keys()
    as_objects = [None if np.isnan(v) else v for v in odd]  # a list: compared one by one
    c = quiet_fit(X, as_objects, grid=Grid(-1, 1, 1024), epsilon=1.0, delta=1e-6, seed=8)
    assert (c.lower_index, c.upper_index) == (b.lower_index, b.upper_index)
    for Xe, ye in [(np.empty((0, 3)), np.empty(0)), (X, np.zeros(len(X))), (X, ["x"] * len(X))]:
        r = quiet_fit(Xe, ye, epsilon=1.0, delta=1e-6, seed=1)  # auto: the box (#44)
        assert r.to_json().keys() == want.to_json().keys()
        r = quiet_fit(Xe, ye, epsilon=1.0, delta=1e-6, seed=1, method="composition")
        assert r.empty


def test_positive_label_strings_booleans_and_nulls(data):
    X, y = data
    grid = Grid(-1, 1, 1024)
    want = quiet_fit(X, y, grid=grid, epsilon=1.0, delta=1e-6, seed=6)
    nulls = np.arange(len(y)) % 9 == 0
    spelled = {
        "churned": np.array(["churned" if v else "stayed" for v in y]),
        True: np.array(y, dtype=bool),
        7: np.where(y == 1, 7, 3),
    }
    for label, labels in spelled.items():
        got = quiet_fit(X, labels, grid=grid, epsilon=1.0, delta=1e-6, seed=6,
                        positive_label=label)
        assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)
    # nulls count as negatives, whatever the spelling
    ref = quiet_fit(X, np.where(nulls, 0, y), grid=grid, epsilon=1.0, delta=1e-6, seed=6)
    with_nulls = [
        (np.array([None if z else ("yes" if v else "no") for v, z in zip(y, nulls,
                                                                           strict=True)],
                  dtype=object), "yes"),
        (np.where(nulls, np.nan, y.astype(float)), 1),
        ([None if z else bool(v) for v, z in zip(y, nulls, strict=True)], True),
    ]
    for labels, label in with_nulls:
        got = quiet_fit(X, labels, grid=grid, epsilon=1.0, delta=1e-6, seed=6,
                        positive_label=label)
        assert (got.lower_index, got.upper_index) == (ref.lower_index, ref.upper_index)
    # a boolean column takes 1 (the default) as true; a numeric one takes true as 1
    got = quiet_fit(X, y.astype(float), grid=grid, epsilon=1.0, delta=1e-6, seed=6,
                    positive_label=True)
    assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)


@pytest.mark.parametrize(("labels", "label", "match"), [
    (np.array(["a", "b"]), 1, "holds strings"),
    (np.array([1, 0]), "1", "is numeric"),
    (np.array([True, False]), 2, "is boolean"),
    (np.array([True, False]), "yes", "is boolean"),
    (np.array([1, 0]), float("nan"), "finite"),
    (np.array([1, 0]), [1], "number, a string or a boolean"),
])
def test_positive_label_type_mismatch_is_refused(labels, label, match):
    with pytest.raises(ParameterError, match=match):
        dprect.fit(np.zeros((2, 1)), labels, epsilon=1.0, delta=1e-6, positive_label=label)


def test_label_text_is_read_against_the_column_type():
    from dprect.app.api import LabelText, resolve_positive_label

    assert resolve_positive_label(LabelText("yes"), "numeric", "y") == 1.0
    assert resolve_positive_label(LabelText(" 2.5 "), "numeric", "y") == 2.5
    assert resolve_positive_label(LabelText("TRUE"), "boolean", "y") is True
    assert resolve_positive_label(LabelText("0"), "boolean", "y") is False
    assert resolve_positive_label(LabelText("1"), "string", "y") == "1"
    assert resolve_positive_label(LabelText("x"), "null", "y") is None
    with pytest.raises(ParameterError, match="must be a number"):
        resolve_positive_label(LabelText("maybe"), "numeric", "y")
    with pytest.raises(ParameterError, match="true or false"):
        resolve_positive_label(LabelText("maybe"), "boolean", "y")


def test_positive_rows_defaults_to_drop():
    from dprect.app.api import positive_rows

    X = np.array([[1.0, 2.0], [np.nan, 1.0], [3.0, 4.0]])
    assert positive_rows(X, [1, 1, 0]).tolist() == [[1.0, 2.0]]
    with pytest.raises(InputDataError, match="'error' invalid-rows policy"):
        positive_rows(X, [1, 1, 0], invalid_rows="error")
