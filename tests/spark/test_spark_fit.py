"""fit_dataframe / validate_dataframe: a bad schema is a DprectError naming the problem;
row values are refused only under the opt-in ``error`` policy."""

from __future__ import annotations

import warnings
from decimal import Decimal

import numpy as np
import pytest

import dprect
from dprect.core.errors import DprectError, InputDataError, ParameterError
from dprect.engines.spark.fit import fit_dataframe, prepare_fit, validate_dataframe

BUDGET = {"epsilon": 2.0, "delta": 1e-6}


def _fit(df, features=("a", "b"), label="y", **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_dataframe(df, features=list(features), label=label,
                             **{"seed": 1, **BUDGET, **kw})


@pytest.fixture(scope="module")
def table(spark):
    rows = [(0.5, 1.0, 1, "s", 1.0), (1.5, -2.0, 0, "t", 0.0), (2.5, 3.0, 1, "u", 1.0)]
    return spark.createDataFrame(rows, "a double, b double, y int, s string, yd double")


@pytest.mark.parametrize(("make", "features", "label", "words"), [
    (lambda t: t, ("a", "nope"), "y", ["nope"]),
    (lambda t: t, ("a", "b"), "missing_label", ["missing_label"]),
    (lambda t: t, ("a", "s"), "y", ["'s'", "numeric", "string"]),
    (lambda t: t, ("a", "b"), "s", ["'s'", "holds strings", "positive label"]),
    (lambda t: t.selectExpr("a", "b", "CAST('2024-01-01' AS DATE) AS y"), ("a", "b"), "y",
     ["'y'", "numbers, booleans or strings", "date"]),
])
def test_bad_schema_is_a_clear_error(table, make, features, label, words):
    """Schema problems are refused by every entry point, before any Spark job."""
    df = make(table)
    with pytest.raises(DprectError) as info:
        validate_dataframe(df, list(features), label)
    for w in words:
        assert w in str(info.value)
    with pytest.raises(DprectError) as info:
        _fit(df, features, label)
    assert "Traceback" not in str(info.value) and "JVM" not in str(info.value)


@pytest.mark.parametrize(("make", "words"), [
    (lambda t: t.selectExpr("CAST('NaN' AS DOUBLE) AS a", "b", "y"), ["'a'", "NaN"]),
    (lambda t: t.selectExpr("a", "CAST('-Infinity' AS DOUBLE) AS b", "y"),
     ["'b'", "infinite"]),
    (lambda t: t.selectExpr("a", "CAST(NULL AS DOUBLE) AS b", "y"), ["'b'", "null"]),
])
def test_invalid_features_are_refused_only_when_asked(table, make, words):
    """The opt-in ``error`` policy (and validate_dataframe) refuses a null, NaN or ±inf
    feature — outside the guarantee; the default ``drop`` policy drops the row."""
    df = make(table)
    with pytest.raises(InputDataError) as info:
        validate_dataframe(df, ["a", "b"], "y")
    for w in words:
        assert w in str(info.value)
    with pytest.raises(InputDataError):
        _fit(df, invalid_rows="error")
    assert _fit(df).features == ["a", "b"]


@pytest.mark.parametrize("make", [
    lambda t: t.selectExpr("a", "b", "CAST(2 AS INT) AS y"),
    lambda t: t.selectExpr("a", "b", "CAST(yd + 0.5 AS DOUBLE) AS y"),
    lambda t: t.selectExpr("a", "b", "CAST(NULL AS INT) AS y"),
    lambda t: t.filter("a > 100"),
])
def test_label_values_and_empty_tables_are_not_refused(table, make):
    """Other labels and nulls are negatives; an empty table is an ordinary input (the
    composition baseline's rectangle of no positives is empty; auto runs the quantile box
    there, issue #44)."""
    df = make(table)
    validate_dataframe(df, ["a", "b"], "y")
    assert _fit(df, method="composition").empty


def test_bad_parameters_before_any_job(table):
    with pytest.raises(ParameterError, match="also listed as a feature"):
        _fit(table, ("a", "y"), "y")
    with pytest.raises(ParameterError, match="named twice"):
        _fit(table, ("a", "a"), "y")
    with pytest.raises(ParameterError, match="strategy"):
        _fit(table, strategy="fast")
    with pytest.raises(ParameterError, match="epsilon"):
        _fit(table, epsilon=-1.0)
    with pytest.raises(ParameterError, match="grid"):
        _fit(table, grid="0:1")


def test_other_numeric_types_and_labels(spark):
    """Integer, decimal and float features; boolean and decimal labels; same as numpy."""
    df = spark.createDataFrame(
        [(1, Decimal("2.5"), 1.25, True), (3, Decimal("-1"), 0.5, False),
         (2, Decimal("0"), -3.0, True)],
        "i int, d decimal(10,3), f float, lab boolean")
    X = np.array([[1, 2.5, 1.25], [3, -1.0, 0.5], [2, 0.0, -3.0]])
    grid = [dprect.IntegerRange(0, 5), dprect.Grid(-4.0, 4.0, 16), dprect.FloatOrder()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.fit(X, [1, 0, 1], grid=grid, features=["i", "d", "f"], seed=3, **BUDGET)
    got = _fit(df, ("i", "d", "f"), "lab", grid=grid, seed=3)
    assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)
    result_json = got.to_json()
    assert result_json["features"] == ["i", "d", "f"]


def test_grid_string_and_column_names_with_dots(spark):
    df = spark.createDataFrame([(0.5, 1), (0.7, 1), (0.1, 0)], "`a.b` double, `the y` int")
    r = _fit(df, ("a.b",), "the y", grid="0:1:10")
    assert r.features == ["a.b"] and len(r.lower_index) == 1


def _prepare(df, features, label="y", **kw):
    return prepare_fit(df, features=list(features), label=label, **{**BUDGET, **kw})


@pytest.mark.parametrize("plan", ["prefetch", "rounds"])
def test_messages_carry_no_counts_or_values(spark, plan):
    rows = [(7.25 if i % 3 == 2 else float(i), i % 2) for i in range(2000)]
    df = spark.createDataFrame(rows, "a double, y int").selectExpr(
        "CASE WHEN a = 7.25 THEN CAST('NaN' AS DOUBLE) ELSE a END AS a", "y")
    for check in (lambda: validate_dataframe(df, ["a"], "y"),
                  lambda: _prepare(df, ["a"], strategy=plan, invalid_rows="error")):
        with pytest.raises(InputDataError) as info:
            check()
        text = str(info.value)
        assert "NaN" in text and "666" not in text and "7" not in text


@pytest.mark.parametrize("plan", ["prefetch", "rounds"])
def test_prepare_fit_invalid_row_policy(spark, plan):
    rows = [(1.0, 1.0, 1), (float("nan"), 2.0, 1), (3.0, None, 1), (4.0, float("inf"), 0),
            (5.0, 5.0, 0)]
    df = spark.createDataFrame(rows, "a double, b double, y int")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.fit([[1.0, 1.0], [5.0, 5.0]], [1, 0], grid="0:8:16", seed=2, **BUDGET)
        with _prepare(df, ("a", "b"), grid="0:8:16", strategy=plan) as prepared:
            got = prepared.run(seed=2)  # the drop policy: rows 2 and 3 are left out
    assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)
    with pytest.raises(InputDataError, match="feature 'a' has null, NaN or infinite"):
        _prepare(df, ("a", "b"), invalid_rows="error", strategy=plan)
    with pytest.raises(ParameterError, match="invalid_rows"):
        _prepare(df, ("a", "b"), invalid_rows="ignore", strategy=plan)
    # no positive row left, or none at all: an ordinary (empty) result, not an error
    for frame in (df.filter("y = 0 OR isnan(a)"), df.filter("y = 0")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with _prepare(frame, ("a", "b"), grid="0:8:16", strategy=plan,
                          method="composition") as prepared:
                assert prepared.run(seed=2).empty
    validate_dataframe(df.filter("y = 0 AND b < 10"), ["a", "b"], "y")  # no positives: fine


@pytest.mark.parametrize("df, named", [
    (None, "got NoneType"), ([[1.0, 1]], "got list"),
    (np.ones((3, 2)), "got numpy.ndarray")])
def test_what_is_no_spark_dataframe_is_refused_naming_its_type(df, named):
    """The Spark entries given an in-memory table (a pandas DataFrame above all) refuse it
    in one line naming its type and pointing at dprect.fit, before any job and with no
    session — main's first schema read raised Python's AttributeError ('no attribute
    schema'; s44-pyapi2 4)."""
    import pandas as pd

    cases = [(pd.DataFrame({"a": [1.0], "y": [1]}), "got pandas.DataFrame"), (df, named)]
    for table, words in cases:
        calls = [lambda t=table: fit_dataframe(t, features=["a"], label="y", epsilon=1.0,
                                               delta=1e-6),
                 lambda t=table: prepare_fit(t, features=["a"], label="y", epsilon=1.0,
                                             delta=1e-6),
                 lambda t=table: validate_dataframe(t, ["a"], "y")]
        for call in calls:
            with pytest.raises(InputDataError, match=words) as caught:
                call()
            text = str(caught.value)
            assert "\n" not in text and "use dprect.fit" in text
