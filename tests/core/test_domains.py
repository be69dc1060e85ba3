"""Domains: grid round trips, clamping, the float-order key, --grid parsing."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dprect import FloatBins, FloatOrder, Grid, IntegerRange, ParameterError, parse_grid_spec
from dprect.core.domains import domain_from_json, parse_domain


def test_grid_bins_and_clamping():
    g = Grid(0.0, 10.0, 10)
    x = np.array([-5.0, 0.0, 0.99, 1.0, 5.5, 9.999, 10.0, 1e300, -1e300])
    assert g.encode(x).tolist() == [0, 0, 0, 1, 5, 9, 9, 9, 0]


@settings(max_examples=200, deadline=None)
@given(lower=st.floats(-1e6, 1e6), span=st.floats(1e-3, 1e6), size=st.integers(2, 2**40),
       frac=st.floats(0, 1))
def test_grid_round_trip(lower, span, size, frac):
    """index → bin → a value inside the bin → the same index; bins tile [lower, upper]."""
    assume(span / size >= 4 * math.ulp(abs(lower) + span))
    g = Grid(lower, lower + span, size)
    i = min(size - 1, int(frac * size))
    lo, hi = g.lower_value(i), g.upper_value(i)
    assert lo <= hi
    mid = lo + (hi - lo) / 2
    assert int(g.encode(np.array([mid]))[0]) in (i - 1, i, i + 1)  # float rounding at edges
    assert g.lower_value(0) == g.lower and math.isclose(g.upper_value(size - 1), g.upper)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e9, 1e9), min_size=2, max_size=50))
def test_grid_encoding_is_monotone(xs):
    g = Grid(-1e8, 1e8, 2**30)
    xs = np.sort(np.array(xs))
    assert (np.diff(g.encode(xs)) >= 0).all()


def test_integer_range():
    r = IntegerRange(-3, 4)
    assert r.size == 8
    assert r.encode(np.array([-10.0, -3.0, 0.0, 0.7, 4.0, 99.0])).tolist() == [0, 0, 3, 3, 7, 7]
    assert [r.lower_value(i) for i in (0, 3, 7)] == [-3.0, 0.0, 4.0]
    assert [r.upper_value(i) for i in (0, 3, 7)] == [-3.0, 0.0, 4.0]


def test_float_order_key_orders_every_float():
    special = [-math.inf, -1e308, -1.0, -5e-324, 0.0, 5e-324, 1e-300, 1.0, 2.0, 1e308, math.inf]
    fo = FloatOrder()
    idx = fo.to_index(fo.encode(np.array(special)))
    assert all(int(a) < int(b) for a, b in itertools.pairwise(idx))
    assert int(idx[0]) == 0 and int(idx[-1]) == fo.size - 1
    assert fo.size == 2**64 - 2**53 + 2  # every non-NaN bit pattern, -0.0 included


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False))
def test_float_order_round_trip(x):
    fo = FloatOrder()
    i = int(fo.to_index(fo.encode(np.array([x])))[0])
    assert i == fo.index_of(x)
    back = fo.float_at(i)
    assert back == x and (x != 0.0 or math.copysign(1, back) == 1.0)  # -0.0 reads as +0.0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False), min_size=1, max_size=30),
       st.integers(0, 2**64 - 2**53), st.sampled_from(["hi", "lo"]))
def test_float_order_cut_threshold_matches_index_comparison(xs, p, side):
    """An engine's float comparison with cut_threshold equals the grid-index comparison,
    including the -0.0 grid point, which no data value has."""
    fo = FloatOrder()
    neg_zero = fo.index_of(0.0) - 1  # the grid point of -0.0
    for index in (p, neg_zero):
        vals = fo.encode(np.array(xs))
        idx = fo.to_index(vals)
        t = fo.cut_threshold(index, side)
        by_float = vals >= t if side == "hi" else vals <= t
        by_index = idx >= np.uint64(index) if side == "hi" else idx <= np.uint64(index)
        assert (by_float == by_index).all()


@pytest.mark.parametrize("bad", [(1.0, 1.0, 10), (2.0, 1.0, 10), (0.0, 1.0, 1), (0.0, 1.0, 0),
                                 (0.0, math.inf, 10), (math.nan, 1.0, 10), (0.0, 1.0, 2.5),
                                 (131072.0, 131072.001, 86978756)])
def test_bad_grid_raises_naming_it(bad):
    with pytest.raises(ParameterError, match="grid"):
        Grid(*bad)


def test_bad_integer_range():
    with pytest.raises(ParameterError, match="integer range"):
        IntegerRange(5, 5)
    with pytest.raises(ParameterError, match="integer range"):
        IntegerRange(0.5, 3)  # type: ignore[arg-type]


def test_parse_grid_spec():
    assert parse_grid_spec(None, ["a", "b"]) == [FloatOrder(), FloatOrder()]
    assert parse_grid_spec("0:1:100", ["a", "b"]) == [Grid(0, 1, 100)] * 2
    doms = parse_grid_spec("b=int:0:9, a=float", ["a", "b"])
    assert doms == [FloatOrder(), IntegerRange(0, 9)]
    assert parse_domain("-1.5:2.5:1e6") == Grid(-1.5, 2.5, 10**6)
    for d in (Grid(0, 1, 7), IntegerRange(-2, 2), FloatOrder()):
        assert domain_from_json(d.to_json()) == d


@pytest.mark.parametrize("spec,match", [
    ("0:1", "cannot read grid"), ("a=0:1:10", "no domain for feature"),
    ("a=0:1:10,a=0:1:10,b=float", "twice"), ("c=float,a=float,b=float", "not one of"),
    ("1:0:10", "lower must be < upper"), ("0:1:1", "size"), ("x:y:z", "cannot read grid"),
])
def test_parse_grid_spec_errors(spec, match):
    with pytest.raises(ParameterError, match=match):
        parse_grid_spec(spec, ["a", "b"])


@pytest.mark.filterwarnings("error")
def test_grid_encode_clamps_huge_values_without_warnings():
    """1e308 with a Grid overflows (x − lower)/width to ±inf: it clamps to the end bins, as
    in Spark SQL's double arithmetic, with no numpy RuntimeWarning (warnings are errors
    here). The bins of ordinary values are unchanged."""
    big = np.finfo(np.float64).max
    x = np.array([1e308, -1e308, big, -big, 0.25, 0.5, -0.0, 5e-324])
    for g in (Grid(0.0, 1.0, 2**32), Grid(-1e300, 1e300, 2**40), IntegerRange(-3, 4),
              Grid(1e-300, 2e-300, 1024)):
        with np.errstate(all="raise"):  # any floating-point trouble left would raise
            got = g.encode(x)
        top = g.size - 1
        assert got[:4].tolist() == [top, 0, top, 0]
        inner = np.floor(np.clip((x[4:] - g.lower) / g.width, 0.0, float(top)))
        assert got[4:].tolist() == inner.astype(np.int64).tolist()


def test_sort_sql_text_is_pinned():
    """Each domain writes its own SQL twin of ``encode`` (the Spark engine parses it; the
    Spark tests check it against ``encode`` bit for bit). The text is pinned: literals are
    exact (``repr`` of the double) and names are quoted."""
    assert Grid(-1.5, 2.5, 7).sort_sql("a b") == (
        "CAST(floor(least(greatest(((CAST(`a b` AS DOUBLE) - CAST('-1.5' AS DOUBLE)) / "
        "CAST('0.5714285714285714' AS DOUBLE)), CAST('0.0' AS DOUBLE)), "
        "CAST('6.0' AS DOUBLE))) AS BIGINT)")
    assert IntegerRange(-3, 4).sort_sql("n") == (
        "CAST(floor(least(greatest(((CAST(`n` AS DOUBLE) - CAST('-3.0' AS DOUBLE)) / "
        "CAST('1.0' AS DOUBLE)), CAST('0.0' AS DOUBLE)), CAST('7.0' AS DOUBLE))) AS BIGINT)")
    assert FloatOrder().sort_sql("x`y") == (
        "CAST(CASE WHEN CAST(`x``y` AS DOUBLE) = CAST('0.0' AS DOUBLE) "
        "THEN CAST('0.0' AS DOUBLE) ELSE CAST(`x``y` AS DOUBLE) END AS DOUBLE)")


def test_public_bounds():
    assert Grid(-1.5, 2.5, 7).bounds == (-1.5, 2.5)
    assert IntegerRange(-3, 4).bounds == (-3.0, 4.0)
    assert FloatOrder().bounds is None


def _edge_cases():
    return [Grid(0.0, 20.0, 64), Grid(-1e-3, 7e-3, 1000), IntegerRange(-5, 40), FloatOrder(),
            FloatBins(6)]


@pytest.mark.parametrize("domain", _edge_cases(), ids=repr)
@settings(max_examples=60, deadline=None)
@given(x=st.floats(allow_nan=False))
def test_value_edges_are_exact(domain, x):
    """least_value_from(s) is the least float64 encoding to ≥ s, greatest_value_to(s) the
    greatest encoding to ≤ s — checked at s = the sort value of an arbitrary float, one
    step either side of it, and against the neighbouring floats (exactly at bin edges)."""
    enc = lambda v: domain.encode(np.array([v]))[0]  # noqa: E731
    s0 = enc(x)
    steps = [s0] if isinstance(s0, float) else [s0 - 1, s0, s0 + 1]
    top, bottom = enc(math.inf), enc(-math.inf)
    with np.errstate(over="ignore"):  # nextafter(max float, inf) is inf, as it should be
        _check_edges(domain, enc, steps, top, bottom)


def _check_edges(domain, enc, steps, top, bottom):
    for s in steps:
        e = domain.least_value_from(s)
        if top < s:
            assert e is None
        else:
            assert e is not None and enc(e) >= s
            assert e == -math.inf or enc(np.nextafter(e, -math.inf)) < s
        u = domain.greatest_value_to(s)
        if bottom > s:
            assert u is None
        else:
            assert u is not None and enc(u) <= s
            assert u == math.inf or enc(np.nextafter(u, math.inf)) > s


def test_value_edges_at_the_ends():
    g = Grid(0.0, 20.0, 64)
    assert g.least_value_from(0) == -math.inf  # every value reaches bin 0
    assert g.least_value_from(64) is None  # no value reaches past the last bin
    assert g.greatest_value_to(63) == math.inf
    assert g.greatest_value_to(-1) is None
    assert g.least_value_from(1) == 0.3125  # the edge of bin 1, exactly
    assert FloatOrder().least_value_from(1.5) == 1.5
