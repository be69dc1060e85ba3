"""What FitResult documents: contains() (inclusive grid indices, clamping, the empty
rectangle, the shape it takes) and the result JSON's "clamping" note on bounded domains."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from dprect import FitResult, FloatOrder, Grid, IntegerRange
from dprect.core.classes import ClassesResult, NoClass
from dprect.core.domains import Domain, domain_from_json
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.result import CLAMPING_NOTE, domain_json

README = Path(__file__).resolve().parent.parent / "README.md"


def _box(domain: Domain, lo_index: int, hi_index: int) -> FitResult:
    """A one-feature result with the given grid indices (as a fit would build it)."""
    return FitResult(features=["x"], lower=[domain.lower_value(lo_index)],
                     upper=[domain.upper_value(hi_index)], lower_index=[lo_index],
                     upper_index=[hi_index], domains=[domain], method="composition",
                     privacy=None, parameters={}, seeded=True)


def _inside(result: FitResult, values: list[float]) -> list[bool]:
    return result.contains(np.array(values, dtype=np.float64)[:, None]).tolist()


def test_float_order_bounds_are_inclusive() -> None:
    r = _box(FloatOrder(), FloatOrder.index_of(1.5), FloatOrder.index_of(4.0))
    assert (r.lower, r.upper) == ([1.5], [4.0])
    below, above = np.nextafter(1.5, -math.inf), np.nextafter(4.0, math.inf)
    assert _inside(r, [1.5, 4.0, 2.0, below, above]) == [True, True, True, False, False]


def test_integer_range_bounds_are_inclusive_integers_and_clamp() -> None:
    r = _box(IntegerRange(0, 10), 2, 5)
    assert (r.lower, r.upper) == ([2.0], [5.0])
    assert _inside(r, [2, 5, 5.9, 1.99, 6, -50, 50]) == [True, True, True, False, False,
                                                        False, False]
    whole = _box(IntegerRange(0, 10), 0, 10)  # the end points take every clamped value
    assert _inside(whole, [-50, 50, -math.inf, math.inf]) == [True] * 4


def test_grid_bins_are_inclusive_by_index_and_clamp() -> None:
    g = Grid(0.0, 10.0, 10)  # bins of width 1: [0, 1), [1, 2), …, [9, 10]
    r = _box(g, 2, 4)
    assert (r.lower, r.upper) == ([2.0], [5.0])
    # lower edge in, the bins' insides in, the upper edge 5.0 starts the next bin
    assert _inside(r, [2.0, 4.999, 3.0, 1.999, 5.0]) == [True, True, True, False, False]
    low_end, high_end = _box(g, 0, 3), _box(g, 7, 9)
    assert _inside(low_end, [-1e6, -math.inf, 0.0]) == [True, True, True]
    assert _inside(high_end, [10.0, 1e6, math.inf, 1e308]) == [True, True, True, True]
    assert _inside(r, [-1e6, 1e6]) == [False, False]


def test_an_empty_rectangle_contains_nothing() -> None:
    r = _box(Grid(0.0, 10.0, 10), 5, 4)
    assert r.empty
    assert _inside(r, [4.5, 5.5, -1.0, 11.0]) == [False] * 4
    assert r.contains(np.empty((0, 1))).shape == (0,)


def test_contains_takes_the_features_columns_in_order() -> None:
    g = Grid(0.0, 10.0, 10)
    r = FitResult(features=["a", "b"], lower=[2.0, 6.0], upper=[4.0, 8.0],
                  lower_index=[2, 6], upper_index=[3, 7], domains=[g, g],
                  method="composition", privacy=None, parameters={}, seeded=True)
    X = np.array([[3.0, 7.0], [7.0, 3.0]])
    out = r.contains(X)
    assert out.dtype == bool and out.tolist() == [True, False]
    assert r.contains(X.tolist()).tolist() == [True, False]  # array-like
    for bad in (X[:, :1], np.ones((2, 3)), X[0]):
        with pytest.raises(ParameterError, match="2 columns") as info:
            r.contains(bad)
        assert "(2," not in str(info.value)  # says nothing about the number of rows


def test_contains_reads_rows_as_the_fit_reads_them() -> None:
    """contains() reads X as dprect.fit reads a table (dprect.core.reading): a string,
    None or another value that is not a number, in a list of rows or an object column, is
    NaN, and a row holding a NaN is inside no rectangle (the fit leaves such rows out). It
    used np.asarray(X, float64): a string raised numpy's ValueError quoting the value
    ("could not convert string to float: '...'"), 10**400 an OverflowError, ragged rows
    numpy's text, and a NaN row's answer rested on numpy's cast of NaN to an integer
    (platform-defined, with a RuntimeWarning)."""
    pd = pytest.importorskip("pandas")
    g = Grid(0.0, 10.0, 10)
    r = FitResult(features=["a", "b"], lower=[0.0, 0.0], upper=[10.0, 10.0],
                  lower_index=[0, 0], upper_index=[9, 9], domains=[g, g],
                  method="composition", privacy=None, parameters={}, seeded=True)
    secret = "secret-7731"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy cast warning for a NaN either
        assert r.contains([[3.0, 7.0], [3.0, secret], [None, 7.0], [10**400, 7.0]]
                          ).tolist() == [True, False, False, True]
        frame = pd.DataFrame({"a": [3.0, 3.0], "b": [7.0, secret]}, dtype=object)
        assert r.contains(frame).tolist() == [True, False]
        assert r.contains(np.array([[math.nan, 7.0], [3.0, math.nan]])).tolist() == [
            False, False]
    for bad in ([[3.0, secret], [1.0]], np.array([["3", secret]])):
        with pytest.raises(InputDataError) as info:  # the table's shape or type
            r.contains(bad)
        assert secret not in str(info.value)
    none = ClassesResult([], [], none=NoClass(None, ["a", "b"], "composition", True, "0"))
    assert none.contains([[3.0, 7.0]]).shape == (1, 0)  # a selection that kept no class
    with pytest.raises(ParameterError, match="2 columns"):
        none.contains([[3.0]])
    both = ClassesResult(["p", "q"], [r, r])
    assert both.contains([[3.0, secret], [3.0, 7.0]]).tolist() == [[False, False],
                                                                 [True, True]]


def test_contains_is_documented() -> None:
    doc = FitResult.contains.__doc__ or ""
    for phrase in ("shape ``(n,)``", "both\n        inclusive", "clamped", "features",
                   "empty rectangle"):
        assert phrase in doc, phrase
    readme = README.read_text(encoding="utf-8")
    assert "result.contains(X)" in readme and "An empty rectangle contains nothing" in readme


def test_bounded_domains_carry_a_constant_clamping_note() -> None:
    for d in (Grid(0.0, 100.0, 2**20), IntegerRange(0, 120)):
        js = domain_json(d)
        assert js == {**d.to_json(), "clamping": CLAMPING_NOTE}  # additive
        assert domain_from_json(js) == d
    assert domain_json(FloatOrder()) == FloatOrder().to_json()  # nothing to clamp
    assert "below lower" in CLAMPING_NOTE and "above upper" in CLAMPING_NOTE


def test_result_json_holds_the_note_and_round_trips() -> None:
    r = FitResult(features=["a", "b", "c"], lower=[2.0, 3.0, 1.0], upper=[5.0, 4.0, 2.0],
                  lower_index=[2, 3, FloatOrder.index_of(1.0)],
                  upper_index=[4, 3, FloatOrder.index_of(2.0)],
                  domains=[Grid(0.0, 10.0, 10), IntegerRange(0, 9), FloatOrder()],
                  method="composition", privacy=None, parameters={}, seeded=True)
    js = json.loads(r.to_json_string())
    notes = [d.get("clamping") for d in js["grid"]["domains"]]
    assert notes == [CLAMPING_NOTE, CLAMPING_NOTE, None]
    back = FitResult.from_json(js)
    assert back == r and back.to_json() == r.to_json()


def test_readme_explains_clamping_where_grid_appears() -> None:
    readme = README.read_text(encoding="utf-8")
    start = readme.index("Values outside a grid's bounds are clamped")
    bullet = readme[start:readme.index("\n* ", start)]
    for phrase in ("Grid(0, 100, 2**20)", "thousands", "last bin", "public knowledge",
                   "FloatOrder()", "needs no", '"clamping"'):
        assert phrase in bullet, phrase
