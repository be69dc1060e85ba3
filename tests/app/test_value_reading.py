"""One per-value reading rule for fit and bounds, and no error from any value (issue #21).

Lists, numpy object arrays and pandas object columns are read value by value
(:mod:`dprect.core.reading`): numbers as float64 (±inf beyond its range), anything else as
NaN. No value of a table whose schema is valid ends a run with an exception other than
:class:`DprectError` — in fact with none at all — and a group of any size is bounded.
"""

from __future__ import annotations

import math
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dprect
from dprect.core import bounds as bounds_module
from dprect.core.bounds import BoundsRequest, Histogram, draw_bound, plan_bounds
from dprect.core.errors import DprectError
from dprect.core.randomness import RandomSource
from dprect.core.reading import float_of, floats_of

FIT = {"epsilon": 1.0, "delta": 1e-6, "seed": 1}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded-run warning
        yield


@pytest.mark.parametrize("value,expected", [
    (1, 1.0), (2.5, 2.5), (True, 1.0), (np.int64(7), 7.0), (Decimal("0.5"), 0.5),
    (Fraction(1, 4), 0.25), (10**400, math.inf), (-(10**400), -math.inf),
    (Fraction(10**400, 3), math.inf), (2**64, float(2**64)),
])
def test_numbers_read_as_their_float64_value(value, expected) -> None:
    assert float_of(value) == expected


@pytest.mark.parametrize("value", ["2.5", "x", b"1", None, 1 + 2j, [1.0], {"a": 1}, object(),
                                   float("nan")])
def test_anything_else_reads_as_nan(value) -> None:
    assert math.isnan(float_of(value))


def test_an_object_whose_float_raises_anything_reads_as_nan() -> None:
    class Weird:
        def __float__(self) -> float:
            raise RuntimeError("no")

    assert math.isnan(float_of(Weird()))


def test_the_issues_examples_run() -> None:
    r = dprect.fit([[0.5, 1.0], [10**400, 2.0]], [1, 1], **FIT)
    assert len(r.lower) == 2
    b = dprect.bounds([[0.5], [10**400]], epsilon=1, seed=1)
    assert len(b.lower[0]) == 1


def _stray(values: list) -> pd.DataFrame:
    return pd.DataFrame({"a": pd.Series(values, dtype=object),
                         "b": np.arange(len(values), dtype=np.float64)})


@pytest.mark.parametrize("stray", ["x", 2**64, 10**400, None, 1 + 2j, Decimal("3")])
def test_fit_and_bounds_read_a_pandas_object_column_alike(stray) -> None:
    values = [float(i) for i in range(300)]
    values[17] = stray
    df = _stray(values)
    # the same rule for both products: the column's float64 values
    expected = floats_of(np.asarray(values, dtype=object))
    fit = dprect.fit(df, np.ones(len(df)), **FIT)
    assert len(fit.lower) == 2
    bnd = dprect.bounds(df, epsilon=1, seed=1)
    same = dprect.bounds(pd.DataFrame({"a": expected, "b": df["b"].to_numpy()}),
                         epsilon=1, seed=1)
    assert bnd.lower == same.lower and bnd.upper == same.upper
    arr = np.asarray(df, dtype=object)
    assert dprect.bounds(arr, epsilon=1, seed=1).lower == same.lower


def test_an_object_group_column_is_read_as_text() -> None:
    df = pd.DataFrame({"a": np.arange(200.0),
                       "g": pd.Series([1, "1", None, "x"] * 50, dtype=object)})
    r = dprect.bounds(df, ["a"], group_by="g", groups=["1", "x"], epsilon=1, seed=1)
    assert r.groups == ["1", "x"]


VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**500), 10**500),
    st.text(max_size=3), st.none(), st.booleans(), st.complex_numbers(),
    st.decimals(allow_nan=False), st.fractions(), st.lists(st.integers(), max_size=2),
)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(VALUES, VALUES), min_size=1, max_size=12),
       st.sampled_from(["list", "object-array", "pandas"]))
def test_no_value_raises_anything(rows, container) -> None:
    if container == "list":
        X: object = [list(r) for r in rows]
    elif container == "object-array":
        X = np.empty((len(rows), 2), dtype=object)
        for i, r in enumerate(rows):
            X[i, 0], X[i, 1] = r
    else:
        X = pd.DataFrame({"a": pd.Series([r[0] for r in rows], dtype=object),
                          "b": pd.Series([r[1] for r in rows], dtype=object)})
    y = [1] * len(rows)
    try:
        dprect.fit(X, y, **FIT)
        dprect.bounds(X, epsilon=1, seed=1)
    except DprectError as exc:  # allowed by the API, though none is expected
        pytest.fail(f"a value refused the table: {exc}")


# -- a group of any size ------------------------------------------------------------------
def test_a_group_beyond_int64_weights_is_bounded_with_the_same_law(monkeypatch) -> None:
    plan = plan_bounds(BoundsRequest(1.0), [dprect.FloatBins(12)])
    hist = Histogram(np.array([5, 4000, 9000], dtype=np.int64),
                     np.array([3000, 50_000, 700], dtype=np.int64))
    narrow = [draw_bound(hist, plan, 0, side, RandomSource(seed=s))
              for s in range(30) for side in ("lower", "upper")]
    monkeypatch.setattr(bounds_module, "MAX_WEIGHTED_ROWS", 1)  # force exact Python ints
    wide = [draw_bound(hist, plan, 0, side, RandomSource(seed=s))
            for s in range(30) for side in ("lower", "upper")]
    assert wide == narrow


def test_a_huge_group_is_bounded_without_a_refusal() -> None:
    plan = plan_bounds(BoundsRequest(1.0), [dprect.FloatBins(12)])
    hist = Histogram(np.array([5, 4000, 9000], dtype=np.int64),
                     np.array([2**61, 2**61, 2**60], dtype=np.int64))
    for side in ("lower", "upper"):
        i = draw_bound(hist, plan, 0, side, RandomSource(seed=3))
        assert 0 <= i < plan.domains[0].size
