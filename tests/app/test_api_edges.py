"""Issue 13, deliverable 4 (API): column names from pandas / pyarrow, ``dprect.plan(dims=)``
and δ = 0 where the chosen method needs no δ."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

import dprect
from dprect import FloatOrder, Grid, ParameterError, PlanRequest
from dprect.app.cli import main


def quiet_fit(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dprect.fit(*args, **kwargs)


def _table(n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)), (rng.random(n) < 0.5).astype(int)


NAMES = ["age", "income", "score"]


# -- 1. column names -----------------------------------------------------------------------
def test_pandas_frame_keeps_column_names():
    pd = pytest.importorskip("pandas")
    X, y = _table()
    df = pd.DataFrame(X, columns=NAMES)
    assert quiet_fit(df, y, epsilon=4.0, delta=1e-6, seed=1).features == NAMES
    assert dprect.nonprivate_bounding_box(df, y).features == NAMES
    # a selection of columns, as a user writes it
    assert quiet_fit(df[["score", "age"]], y, epsilon=4.0, delta=1e-6,
                     seed=1).features == ["score", "age"]


def test_pyarrow_table_keeps_column_names():
    pa = pytest.importorskip("pyarrow")
    X, y = _table()
    t = pa.table({n: X[:, j] for j, n in enumerate(NAMES)})
    assert quiet_fit(t, y, epsilon=4.0, delta=1e-6, seed=1).features == NAMES
    assert dprect.nonprivate_bounding_box(t, y).features == NAMES


def test_a_pyarrow_table_is_read_by_its_schema():
    """A pyarrow Table's columns have types, and dprect.fit (and the classifier) read it by
    them, as dprect.bounds and the command line read a table: numbers, decimals and
    booleans as float64 with nulls as NaN (rows dropped as any NaN row is), a text or
    date column refused naming it and its type, before anything is charged. It was read
    as an untyped object array, value by value: every value of a text column NaN, so
    every row was dropped and the fit released an empty rectangle without a word."""
    import decimal

    pa = pytest.importorskip("pyarrow")
    X, y = _table(600)
    X[::7, 1] = np.nan
    typed = pa.table({"age": pa.array(X[:, 0]),
                      "income": pa.array(np.where(np.isnan(X[:, 1]), None, X[:, 1])),
                      "flag": pa.array(X[:, 2] > 0),
                      "score": pa.array([decimal.Decimal(f"{v:.3f}") for v in X[:, 2]])})
    as_numpy = np.column_stack([X[:, 0], X[:, 1], X[:, 2] > 0,
                                [float(f"{v:.3f}") for v in X[:, 2]]])
    for table in (typed, typed.to_batches()[0]):
        got = quiet_fit(table, y, epsilon=4.0, delta=1e-6, seed=3)
        want = quiet_fit(as_numpy, y, epsilon=4.0, delta=1e-6, seed=3,
                         features=["age", "income", "flag", "score"])
        assert got.to_json() == want.to_json()
    budget = dprect.PrivacyBudget(10.0, 1e-3)
    for column, kind in ((pa.array(["north", "south"] * 300), "string"),
                         (pa.array(np.arange(600).astype("datetime64[D]")), "date")):
        table = typed.append_column("region", column)
        with pytest.raises(dprect.InputDataError, match=f"column 'region' must be numeric, "
                                                        f"but its type is {kind}"):
            dprect.fit(table, y, epsilon=1.0, delta=1e-6, budget=budget)
        with pytest.raises(dprect.InputDataError, match="column 'region' must be numeric"):
            dprect.bounds(table, epsilon=1.0, budget=budget)  # as bounds reads it
        with pytest.raises(dprect.InputDataError, match="column 'region' must be numeric"):
            dprect.RectangleClassifier(1.0, 1e-6, classes=[0, 1], budget=budget
                                       ).fit(table, y)
    assert budget.charges == []


class _Column:
    """As a Spark Column: its truth value is an error (pyspark's own text)."""

    def __bool__(self) -> bool:
        raise RuntimeError("Cannot convert column into bool")


class DataFrame:
    """A stand-in of a Spark DataFrame (the module's name is what is read): columns, and
    a Column per name, attribute or item, as pyspark gives them."""

    __module__ = "pyspark.sql.classic.dataframe"
    columns: ClassVar[list[str]] = ["a", "b"]

    def __getitem__(self, name: str | int) -> _Column:
        if isinstance(name, int) and not 0 <= name < len(self.columns):
            raise IndexError(name)  # as pyspark: a column by position, none past the last
        return _Column()

    def __getattr__(self, name: str) -> _Column:
        if name not in self.columns:
            raise AttributeError(name)
        return _Column()


@pytest.mark.parametrize("X, named", [
    (None, "got NoneType"), (5, "got int"), (2.5, "got float"),
    ("people.parquet", "got a path (str)"), (Path("people.parquet"), "got a path"),
    (b"people.parquet", "got a path (bytes)"),
    ((row for row in [[1.0, 2.0]]), "got generator"),
    (DataFrame(), "is a Spark DataFrame.*fit_dataframe")])
def test_what_is_no_in_memory_table_is_refused_naming_its_type(X, named):
    """What is no in-memory table — None, a number, a path (the Python functions read no
    file), an iterator (read once: fit read its shape, then found it empty), a Spark
    DataFrame — is one InputDataError naming its type and what to give instead, before
    any charge, from dprect.fit, the classifier, dprect.bounds and contains alike. Python
    raised "'NoneType' object is not iterable", Spark's Column its truth-value error,
    and a path or a Spark DataFrame was "not a list of equally long rows"."""
    budget = dprect.PrivacyBudget(10.0, 1e-3)
    y = [1]
    fit_result = quiet_fit(np.ones((2, 2)), [1, 0], epsilon=1.0, delta=1e-6)
    calls = [lambda: dprect.fit(X, y, epsilon=1.0, delta=1e-6, budget=budget),
             lambda: dprect.fit(X, y, classes=[1], epsilon=1.0, delta=1e-6, budget=budget),
             lambda: dprect.bounds(X, epsilon=1.0, budget=budget),
             lambda: dprect.describe(X, epsilon=1.0, budget=budget),
             lambda: fit_result.contains(X)]
    if X is not None:  # the classifier's own wording for None stands ("X is required")
        calls.append(lambda: dprect.RectangleClassifier(1.0, 1e-6, classes=[1],
                                                        budget=budget).fit(X, y))
    for call in calls:
        with pytest.raises(dprect.InputDataError, match=named.replace("(", r"\(").replace(
                ")", r"\)")):
            call()
    assert budget.charges == []


def test_explicit_features_win_and_must_match_the_width():
    pd = pytest.importorskip("pandas")
    X, y = _table()
    df = pd.DataFrame(X, columns=NAMES)
    assert quiet_fit(df, y, epsilon=4.0, delta=1e-6, seed=1,
                     features=["a", "b", "c"]).features == ["a", "b", "c"]
    with pytest.raises(ParameterError, match="features has 2 names"):
        dprect.fit(df, y, epsilon=4.0, delta=1e-6, features=["a", "b"])
    with pytest.raises(ParameterError, match="features has 2 names"):
        dprect.nonprivate_bounding_box(df, y, features=["a", "b"])


def test_arrays_still_get_default_names():
    X, y = _table()
    assert quiet_fit(X, y, epsilon=4.0, delta=1e-6, seed=1).features == ["x0", "x1", "x2"]
    assert dprect.nonprivate_bounding_box(X.tolist(), y).features == ["x0", "x1", "x2"]


# -- 2. dprect.plan(dims=...) --------------------------------------------------------------
def test_plan_dims_like_the_cli():
    by_dims = dprect.plan(dims=7, epsilon=1.0, delta=1e-6)
    by_domains = dprect.plan(PlanRequest(epsilon=1.0, delta=1e-6), domains=[FloatOrder()] * 7)
    assert by_dims.to_json() == by_domains.to_json()
    assert by_dims.request["dims"] == 7


def test_plan_dims_with_grid():
    g = Grid(0, 100, 2**10)
    by_dims = dprect.plan(dims=3, grid=g, epsilon=1.0, delta=1e-6)
    assert by_dims.to_json() == dprect.plan(domains=[g] * 3, epsilon=1.0,
                                            delta=1e-6).to_json()
    assert all(r.grid_size == 2**10 for r in by_dims.chosen.rounds)


@pytest.mark.parametrize("kwargs, match", [
    ({}, "give dims"),
    ({"dims": 0}, "dims must be an integer"),
    ({"dims": 2, "domains": [FloatOrder()]}, "does not match"),
    ({"domains": [FloatOrder()], "grid": Grid(0, 1, 16)}, "not both"),
])
def test_plan_dims_refusals(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        dprect.plan(epsilon=1.0, delta=1e-6, **kwargs)


# -- 3. delta = 0 --------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["auto", "randmargins", "composition"])
@pytest.mark.parametrize("margin_law", ["staircase", "laplace"])
def test_plan_with_delta_zero_is_pure(method, margin_law):
    p = dprect.plan(dims=4, epsilon=1.0, delta=0, method=method, margin_law=margin_law,
                    auto_count=False)  # the candidates at the full budget (no count)
    assert set(p.candidates) == {"randmargins", "composition"}
    for c in p.candidates.values():
        assert c.guarantee.delta == 0.0
        assert c.guarantee.epsilon <= 1.0
        assert c.ip_epsilon == pytest.approx(1.0 / 8, rel=1e-6)  # R·ε₀ = ε, R = 8
    assert p.candidates["randmargins"].details["k"] == 8  # pure bound with k = R
    assert p.candidates["randmargins"].details["bound_kind"] == "pure"
    if method == "auto":
        assert p.chosen.predicted_misclassified == min(
            c.predicted_misclassified for c in p.candidates.values())
    else:
        assert p.chosen.method == method


def test_delta_zero_replace_one_is_group_privacy():
    p = dprect.plan(dims=3, epsilon=2.0, delta=0, neighbouring="replace-one",
                    auto_count=False)
    for c in p.candidates.values():
        assert c.guarantee.delta == 0.0
        assert c.guarantee.neighbouring == "replace-one"
        assert c.guarantee.epsilon <= 2.0
        assert c.ip_epsilon == pytest.approx(1.0 / 6, rel=1e-6)  # (2·R·ε₀, 0) with R = 6


def test_paper_accounting_refuses_delta_zero():
    with pytest.raises(ParameterError, match="delta"):
        dprect.plan(dims=3, epsilon=1.0, delta=0, accounting="paper")
    with pytest.raises(ParameterError, match="delta"):
        dprect.plan(dims=3, epsilon=1.0, delta=0, accounting="paper", method="randmargins")
    # the composition baseline needs no δ: the paper's RandMargins is only left out
    p = dprect.plan(dims=3, epsilon=1.0, delta=0, accounting="paper", method="composition")
    assert p.chosen.method == "composition" and p.chosen.guarantee.delta == 0.0
    assert "randmargins" in p.excluded


@pytest.mark.parametrize("bad", [-1e-9, 1.0, float("nan"), True])
def test_delta_outside_zero_one_is_refused(bad):
    with pytest.raises(ParameterError, match="delta"):
        dprect.plan(dims=2, epsilon=1.0, delta=bad)


def test_fit_with_delta_zero():
    X, y = _table()
    r = quiet_fit(X, y, epsilon=4.0, delta=0, seed=3)
    assert r.privacy is not None and r.privacy.delta == 0.0 and r.privacy.epsilon <= 4.0
    assert json.loads(r.to_json_string())["privacy"]["delta"] == 0.0


def test_cli_plan_delta_zero(capsys):
    assert main(["plan", "--delta", "0", "--epsilon", "1", "--dims", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["request"]["delta"] == 0.0
    assert out["plan"]["guarantee"]["delta"] == 0.0
    assert main(["plan", "--delta", "0", "--epsilon", "1", "--dims", "4"]) == 0


def test_a_fractional_positive_label_on_integer_labels_is_refused_before_the_charge():
    """An integer label type (numpy's, pandas' Int64) holds no 1.5: the label is refused
    from the dtype alone, before anything is charged (s39-edges c); a float label array
    takes it, and a whole number (1.0) reads 1 on the integers."""
    import pandas as pd

    gen = np.random.default_rng(1)
    X, y = gen.uniform(0, 1, (400, 2)), np.arange(400) % 2
    grid = [Grid(0, 1, 8)] * 2
    for labels in (y, y.astype(np.int32), pd.Series(y).astype("Int64")):
        budget = dprect.PrivacyBudget(epsilon=10.0, delta=1e-3)
        with pytest.raises(ParameterError, match="holds integers"):
            dprect.fit(X, labels, epsilon=1, delta=1e-6, positive_label=1.5, grid=grid,
                       budget=budget)
        assert budget.charges == []
    with pytest.warns(UserWarning):
        whole = dprect.fit(X, y, epsilon=1, delta=1e-6, positive_label=1.0, grid=grid,
                           seed=2)
        floats = dprect.fit(X, y / 2, epsilon=1, delta=1e-6, positive_label=0.5,
                            grid=grid, seed=2)
    assert (whole.lower, whole.upper) == (floats.lower, floats.upper)


@pytest.mark.parametrize("kwargs, message", [
    ({}, "dprect.fit() missing 2 required keyword arguments: 'epsilon' and 'delta'"),
    ({"epsilon": 1.0}, "dprect.fit() missing 1 required keyword argument: 'delta'"),
    ({"epsilon": 1.0, "delta": 1e-6, "epsilonn": 2.0},
     "dprect.fit() got an unexpected keyword argument 'epsilonn'"),
    ({"epsilon": 1.0, "delta": 1e-6, "classes": [1], "sede": 1},
     "dprect.fit() got an unexpected keyword argument 'sede'"),
    ({"delta": 1e-6, "select_groups": True, "selection_epsilon": 1.0,
      "selection_delta": 1e-6},
     "dprect.fit() missing 1 required keyword argument: 'epsilon'")])
def test_a_missing_or_misspelt_fit_keyword_names_dprect_fit_and_the_keyword(kwargs, message):
    """dprect.fit's keyword mistakes read as dprect.bounds' and dprect.describe's do —
    Python's TypeError naming the function and the keyword — before any charge (main
    named ``FitRequest.__init__()`` and its 'positional' arguments: s44-pyapi2 3)."""
    budget = dprect.PrivacyBudget(10.0, 1e-3)
    X, y = _table(50)
    with pytest.raises(TypeError) as caught:
        dprect.fit(X, y, budget=budget, **kwargs)
    assert str(caught.value) == message
    assert budget.charges == []


def test_the_seeded_warning_names_the_callers_line():
    """The warning that a seeded run is not private points at the user's own call — the
    file and line calling dprect.fit, dprect.describe, dprect.bounds, dprect.aggregate or
    the classifier — not at a line inside dprect (main's pointed into dprect's api.py
    and describe.py: s44-pyapi2 5)."""
    import inspect

    X, y = _table(300)
    frame = np.column_stack([X, np.repeat([0, 1, 2], 100)])
    calls = {
        "fit": lambda: dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=1),
        "classes": lambda: dprect.fit(X, y, classes=[0, 1], epsilon=1.0, delta=1e-6,
                                      seed=1),
        "describe": lambda: dprect.describe(X, epsilon=1.0, seed=1),
        "bounds": lambda: dprect.bounds(X, epsilon=1.0, seed=1),
        "mixed": lambda: dprect.aggregate(frame, statistics=["mean", "median"],
                                          epsilon=1.0, seed=1),
        "classifier": lambda: dprect.RectangleClassifier(1.0, 1e-6, classes=[0, 1],
                                                         random_state=1).fit(X, y)}
    for name, call in calls.items():
        source, first = inspect.getsourcelines(call)
        lines = range(first, first + len(source))  # the call's lines in this file
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        seeded = [w for w in caught if "NOT private" in str(w.message)]
        assert seeded, name
        for w in seeded:
            assert w.filename == __file__ and w.lineno in lines, name
