"""Private bounds (issue #14): the FloatBins grid, the exponential-mechanism quantiles' exact
law (target t = max(k_j, α·n), badness the distance from t to the range [L(i), L'(i)] of
counts a bound in cell i clips, sensitivity 1) and its privacy, the budget, the coverage
constant, the purposes of the floor k_j and of the range score, runs with groups and seeds."""

from __future__ import annotations

import json
import math
import struct
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from piece_fit import pieces_fit
from scipy.stats import chi2, ncx2
from seeded_source import seeded as quiet_source

from dprect import FloatOrder, IntegerRange, ParameterError, RandomSource
from dprect.core.accounting import (
    add_remove_budget,
    composition_br,
    replace_one,
)
from dprect.core.bounds import (
    BoundsPlan,
    BoundsRequest,
    BoundsResult,
    Histogram,
    bound_pieces,
    coverage_alpha,
    draw_bound,
    histogram,
    plan_bounds,
    run_bounds,
)
from dprect.core.domains import (
    FloatBins,
    Grid,
    domain_from_json,
    parse_domain,
    parse_grid_spec,
    resolve_domains,
)
from dprect.core.interior_point import Pieces, sample_unimodal
from dprect.core.ties import tie_bits


def float_of_bits(pattern: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", pattern))[0]


# == FloatBins =============================================================================
SPECIAL = [-math.inf, -1.7976931348623157e308, -1e300, -2.0, -1.0, -2.2250738585072014e-308,
           -1e-310, -5e-324, -0.0, 0.0, 5e-324, 1e-310, 2.225073858507201e-308,
           2.2250738585072014e-308, 1e-300, 0.5, 1.0, 1.0 + 2**-52, 1.5, 2.0, 3.0, 1e300,
           1.7976931348623157e308, math.inf]


@pytest.mark.parametrize("bits", [1, 4, 12, 20])
def test_floatbins_round_trip_and_order_on_special_values(bits):
    d = FloatBins(bits)
    assert d.size == 2 ** (12 + bits) and d.bounds is None
    idx = d.encode(np.array(SPECIAL))
    assert idx.dtype == np.int64
    assert (np.diff(idx) >= 0).all()  # monotone in the value
    assert int(idx[0]) > 0 and int(idx[-1]) < d.size - 1  # NaN-only bins lie beyond ±inf
    for x, i in zip(SPECIAL, idx.tolist(), strict=True):
        lo, hi = d.lower_value(i), d.upper_value(i)
        assert lo <= x <= hi
        assert d.index_of(lo) == i == d.index_of(hi)
        assert d.to_index(np.array([i], dtype=np.int64))[0] == np.uint64(i)
        assert d.cut_threshold(i, "hi") == i == d.cut_threshold(i, "lo")
    assert d.encode(np.array([-0.0]))[0] == d.encode(np.array([0.0]))[0]
    zero = d.index_of(0.0)
    assert zero == 2 ** (11 + bits) and d.lower_value(zero) == 0.0
    assert d.upper_value(zero - 1) == -5e-324  # -0.0 reads as +0.0: not in bin H − 1
    assert d.lower_value(d.index_of(math.inf)) == math.inf
    assert d.upper_value(d.index_of(-math.inf)) == -math.inf
    assert d.lower_value(0) == -math.inf and d.upper_value(d.size - 1) == math.inf


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2**64 - 1), st.sampled_from([1, 7, 12, 20]))
def test_floatbins_round_trip_on_any_bit_pattern(pattern, bits):
    x = float_of_bits(pattern)
    if math.isnan(x):
        return
    d = FloatBins(bits)
    i = d.index_of(x)
    lo, hi = d.lower_value(i), d.upper_value(i)
    assert lo <= x <= hi
    assert d.index_of(lo) == i == d.index_of(hi)
    # the bins tile the floats: the next float after the bin's largest opens bin i + 1
    if hi < math.inf:
        assert d.index_of(math.nextafter(hi, math.inf)) == i + 1
    if lo > -math.inf:
        assert d.index_of(math.nextafter(lo, -math.inf)) == i - 1
    # the defining formula: FloatOrder's key shifted to the unsigned key, then >> (52 − bits)
    key = FloatOrder.index_of(x) + 2**52 - 1
    assert i == key >> (52 - bits)
    if 2.2250738585072014e-308 <= abs(x) < math.inf and abs(lo) < math.inf \
            and abs(hi) < math.inf:  # a bin of normal floats: relative width ≤ 2^−bits
        assert hi - lo <= min(abs(lo), abs(hi)) * 2.0**-bits


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False), min_size=2, max_size=40))
def test_floatbins_encoding_is_monotone(xs):
    d = FloatBins()
    xs = sorted(xs)
    assert (np.diff(d.encode(np.array(xs))) >= 0).all()


def test_floatbins_parameters_json_and_parsing():
    assert FloatBins() == FloatBins(12) != FloatBins(8)
    assert hash(FloatBins(5)) == hash(FloatBins(5)) and FloatBins() != FloatOrder()
    assert repr(FloatBins(8)) == "FloatBins(bits=8)"
    assert FloatBins(8).to_json() == {"type": "floatbins", "bits": 8}
    for bits in (1, 12, 20):
        assert domain_from_json(FloatBins(bits).to_json()) == FloatBins(bits)
    for bad in (0, 21, -1, True, 3.0, "12"):
        with pytest.raises(ParameterError, match="bits"):
            FloatBins(bad)  # type: ignore[arg-type]
    assert parse_domain("floatbins") == FloatBins()
    assert parse_domain(" floatbins:7 ") == FloatBins(7)
    for bad in ("floatbins:0", "floatbins:21", "floatbins:x", "floatbins:1:2", "floatbins:"):
        with pytest.raises(ParameterError):
            parse_domain(bad)
    assert parse_grid_spec("floatbins:9", ["a", "b"]) == [FloatBins(9), FloatBins(9)]
    assert parse_grid_spec("a=floatbins,b=int:0:9", ["a", "b"]) == [
        FloatBins(), IntegerRange(0, 9)]
    assert resolve_domains("floatbins", ["a"]) == [FloatBins()]
    with pytest.raises(ParameterError, match="no SQL encoding"):
        FloatBins().sort_sql("x")
    with pytest.raises(ParameterError, match="outside"):
        FloatBins(4).lower_value(2**16)


def test_floatbins_serves_as_a_rectangle_axis():
    """A grid for RandMargins and the baseline: tie bits as a Grid of its size gets
    (issue #24: ties are refined on every domain kind), and a fit on it returns bounds
    that are bin edges and contain what the grid indices say."""
    from dprect import fit, plan

    d = FloatBins()
    same_size = Grid(0, 1, d.size)
    assert tie_bits([d, Grid(0, 1, 100)], 4) == tie_bits([same_size, Grid(0, 1, 100)], 4)
    assert tie_bits([d, Grid(0, 1, 100)], 4)[0] > 0
    p = plan(domains=[d, d], epsilon=2.0, delta=1e-6)
    assert {r.grid_size for r in p.chosen.rounds} == {2**24}
    rng = np.random.default_rng(3)
    X = rng.lognormal(0, 1, size=(3000, 2))
    y = np.ones(3000, dtype=int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fit(X, y, grid="floatbins", epsilon=4.0, delta=1e-6, seed=5)
    assert not res.empty
    for j in range(2):
        assert res.lower[j] == d.lower_value(res.lower_index[j])
        assert res.upper[j] == d.upper_value(res.upper_index[j])
    inside = res.contains(X)
    by_value = ((X >= np.array(res.lower)) & (X <= np.array(res.upper))).all(axis=1)
    assert (inside == by_value).all() and inside.mean() > 0.5


# == request, plan and budget ==============================================================
def test_request_validation_and_alpha():
    assert coverage_alpha(0.999) == Fraction(1, 2000)
    assert coverage_alpha(0.9) == Fraction(1, 20)
    assert coverage_alpha(0.5) == Fraction(1, 4)
    r = BoundsRequest(epsilon=1)
    assert r.epsilon == 1.0 and r.delta == 0.0 and r.neighbouring == "add-remove"
    assert r.alpha == Fraction(1, 2000)
    for kwargs, match in [({"epsilon": 0}, "epsilon"), ({"epsilon": 1, "delta": 1}, "delta"),
                          ({"epsilon": 1, "coverage": 1.0}, "coverage"),
                          ({"epsilon": 1, "coverage": 0.0}, "coverage"),
                          ({"epsilon": 1, "coverage": 1 - 1e-9}, "coverage"),
                          ({"epsilon": 1, "beta": 0.0}, "beta"),
                          ({"epsilon": 1, "neighbouring": "swap"}, "neighbouring")]:
        with pytest.raises(ParameterError, match=match):
            BoundsRequest(**kwargs)


def test_plan_rejects_non_grid_domains_and_bad_rows():
    req = BoundsRequest(epsilon=1)
    with pytest.raises(ParameterError, match="FloatBins"):
        plan_bounds(req, [FloatOrder()])
    with pytest.raises(ParameterError, match="non-empty"):
        plan_bounds(req, [])
    with pytest.raises(ParameterError, match="rows"):
        plan_bounds(req, [FloatBins()], rows=0)
    with pytest.raises(ParameterError, match="BoundsRequest"):
        plan_bounds({"epsilon": 1}, [FloatBins()])  # type: ignore[arg-type]


@pytest.mark.parametrize("eps,delta,neigh,dims", [
    (1.0, 0.0, "add-remove", 1), (1.0, 0.0, "add-remove", 5), (0.3, 1e-6, "add-remove", 8),
    (2.0, 1e-8, "replace-one", 3), (1.0, 0.0, "replace-one", 2), (5.0, 1e-5, "add-remove", 64),
])
def test_guarantee_is_composition_br_of_2d_mechanisms(eps, delta, neigh, dims):
    plan = plan_bounds(BoundsRequest(epsilon=eps, delta=delta, neighbouring=neigh),
                       [FloatBins()] * dims)
    eps_ar, delta_ar = add_remove_budget(eps, delta, neigh)
    g = composition_br(plan.epsilon_each, rounds=2 * dims, delta=delta_ar,
                       use_dp_accounting=False)
    if neigh == "replace-one":
        g = replace_one(g)
    assert (plan.guarantee.epsilon, plan.guarantee.delta) == (g.epsilon, g.delta)
    assert plan.guarantee.neighbouring == neigh and g.bound in plan.guarantee.bound
    assert plan.guarantee.epsilon <= eps and plan.guarantee.delta <= delta
    # ε_each is the largest the budget allows (to the planner's 1e-9 shrink)
    over = composition_br(plan.epsilon_each * (1 + 1e-8), rounds=2 * dims, delta=delta_ar,
                          use_dp_accounting=False)
    assert over.epsilon > eps_ar
    if delta == 0.0:
        assert plan.epsilon_each == pytest.approx(eps_ar / (2 * dims), rel=2e-9)


def test_plan_constants_and_printout():
    plan = plan_bounds(BoundsRequest(epsilon=1.0, coverage=0.999, beta=1e-3),
                       [FloatBins(), IntegerRange(0, 99)], rows=100_000)
    a = Fraction(1, 2000)
    assert plan.alpha == a and plan.mechanisms == 4 and plan.sensitivity == 1
    assert plan.c == Fraction(plan.epsilon_each) / (2 * 2000)
    for d, t in zip(plan.domains, plan.rank_error, strict=True):
        exact = 2 / plan.epsilon_each * math.log(d.size * 4 / 1e-3)
        assert exact <= t <= exact * (1 + 1e-12)
    assert plan.floor_rows == tuple(math.ceil(t) + 1 for t in plan.rank_error)
    share = plan.expected_clipped_share()
    assert share == tuple((max(k, 100_000 / 2000) + t) / 100_000
                          for t, k in zip(plan.rank_error, plan.floor_rows, strict=True))
    assert plan_bounds(BoundsRequest(epsilon=1.0), [FloatBins()]).expected_clipped_share() is None
    assert plan.rows_needed() == tuple(k * 2000 for k in plan.floor_rows)
    text = plan.table(["income", "age"])
    assert "income" in text and "FloatBins(bits=12)" in text and "16,777,216" in text
    assert f"{plan.rank_error[0]:.1f}" in text and f"{share[0]:.4%}" in text
    js = plan.to_json()
    assert js["alpha"] == "1/2000" and js["rank_error"] == list(plan.rank_error)
    assert js["domains"][0] == {"type": "floatbins", "bits": 12}
    json.dumps(js)


# == histograms ============================================================================
def test_histogram():
    d = IntegerRange(0, 9)
    x = np.array([3, 3, 1, 9, 9, 9, 50, -4, np.nan])
    h = histogram(x, d)
    assert h.keys.tolist() == [0, 1, 3, 9] and h.counts.tolist() == [1, 1, 2, 4]
    assert h.total == 8  # NaN skipped; out-of-range values clamped by the domain
    for keys, counts in [([2, 1], [1, 1]), ([1, 1], [1, 1]), ([1], [0]), ([-1], [1]),
                         ([1, 2], [1])]:
        with pytest.raises(ParameterError):
            Histogram(np.array(keys), np.array(counts))


# == the exact law =========================================================================
def definition_badness(values, m, alpha: Fraction, side: str, floor: int = 0
                       ) -> list[Fraction]:
    """Straight from the definition (docs/privacy.md §9, "The score"), exactly: target
    t = max(k, α·n); a bound in cell i clips between L(i) = #{v < i} and L'(i) = #{v ≤ i}
    rows (lower; the upper: G(i) = #{v > i}, G'(i) = #{v ≥ i}), and the badness is the
    distance from t to that range, max(0, L(i) − t, t − L'(i))."""
    v = np.asarray(values, dtype=np.int64)
    t = max(Fraction(floor), alpha * len(v))
    bad = []
    for i in range(m):
        if side == "lower":
            least, most = int((v < i).sum()), int((v <= i).sum())
        else:
            least, most = int((v > i).sum()), int((v >= i).sum())
        bad.append(max(Fraction(0), least - t, t - most))
    return bad


def old_badness(values, m, alpha: Fraction, side: str, floor: int = 0) -> list[Fraction]:
    """The superseded score |C(i) − t|, C(i) = L(i) (lower) or G(i) (upper): the rows the
    released cell edge clips. Kept to show that the tests tell the two apart."""
    v = np.asarray(values, dtype=np.int64)
    t = max(Fraction(floor), alpha * len(v))
    return [abs(int((v < i).sum() if side == "lower" else (v > i).sum()) - t)
            for i in range(m)]


def law_of(bad: list[Fraction], eps_each: float) -> np.ndarray:
    """P(i) ∝ exp(−ε_each·badness(i)/2) (float weights of exact badness)."""
    w = -eps_each * np.array([float(x) for x in bad]) / 2
    p = np.exp(w - w.max())
    return p / p.sum()


def definition_probs(values, m, alpha: Fraction, eps_each: float, side: str,
                     floor: int = 0) -> np.ndarray:
    return law_of(definition_badness(values, m, alpha, side, floor), eps_each)


def old_score_pieces(hist: Histogram, grid_size: int, alpha: Fraction, side: str,
                     epsilon_each: float = 1.0, floor: int = 0) -> Pieces:
    """A local re-implementation of the superseded ``bound_pieces``: badness |C(i) − t|
    (the clipped count C = L or G alone, the cell's own rows ignored), the same pieces
    (each occupied cell, each gap), c = ε_each/(2b). Used to check that the tests would
    catch a revert to it."""
    m, a, b = int(grid_size), alpha.numerator, alpha.denominator
    keys, n = hist.keys.astype(np.int64), hist.total
    edges = sorted({0, m, *keys.tolist(), *(keys + 1).tolist()})
    starts = np.array(edges[:-1], dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum(hist.counts)])
    if side == "lower":
        clipped = cum[np.searchsorted(keys, starts, side="left")]
    else:
        clipped = n - cum[np.searchsorted(keys, starts, side="right")]
    weighted = np.abs(b * clipped - max(b * floor, a * n))
    return Pieces(starts.astype(np.uint64), np.diff(edges).astype(np.uint64),
                  (weighted.max() - weighted).astype(np.int64), epsilon_each / b, m)


def piece_point_probs(pieces: Pieces) -> np.ndarray:
    out = np.zeros(pieces.grid_size)
    for s, n, p in zip(pieces.starts.tolist(), pieces.sizes.tolist(), pieces.probabilities(),
                       strict=True):
        out[s:s + n] = p / n
    return out


def hist_of(values) -> Histogram:
    keys, counts = np.unique(np.asarray(values, dtype=np.int64), return_counts=True)
    return Histogram(keys, counts)


CASES = [([3, 3, 3, 7, 9], 12), ([0], 2), ([5, 5], 6), ([0, 11, 4, 4, 8, 1], 12), ([], 7),
         (list(range(20)) * 2 + [25] * 9, 30), ([29] * 4, 30),
         # heavy ties: every row in one cell; many rows in both extreme cells (at the grid's
         # ends); a heavy lowest cell inside the grid; a heavy highest cell before a gap
         ([4] * 25, 9), ([0] * 12 + [3, 5] + [9] * 10, 10), ([1] * 30 + [2, 4, 4], 7),
         ([2, 3] + [6] * 15, 9)]
ALPHAS = [Fraction(1, 4), Fraction(1, 20), Fraction(1, 2000), Fraction(499, 1000)]
FLOORS = [0, 3, 7, 60]  # none; above α·n for most tables; above n


def expand(pieces: Pieces) -> np.ndarray:
    """Each grid point's depth."""
    return np.repeat(pieces.depths, pieces.sizes.astype(np.int64))


@pytest.mark.parametrize("values,m", CASES)
@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("side", ["lower", "upper"])
@pytest.mark.parametrize("floor", FLOORS)
def test_pieces_equal_the_definition(values, m, alpha, side, floor):
    """The pieces' depths are exactly D − b·badness (α = a/b) of the range score computed
    point by point, and their law is exp(−ε_each·badness/2) normalised."""
    eps_each = 0.9
    pieces = bound_pieces(hist_of(values), m, alpha, side, eps_each, floor)
    assert pieces.sizes.sum() == m and (pieces.depths >= 0).all()
    assert pieces.epsilon == pytest.approx(eps_each / alpha.denominator)  # 2c, c = ε/(2b)
    bad = definition_badness(values, m, alpha, side, floor)
    weighted = [alpha.denominator * x for x in bad]
    assert all(w.denominator == 1 for w in weighted)  # b·badness is an integer
    assert expand(pieces).tolist() == [int(max(weighted) - w) for w in weighted]
    expected = law_of(bad, eps_each)
    np.testing.assert_allclose(piece_point_probs(pieces), expected, rtol=1e-9, atol=1e-300)
    if floor > alpha * len(values) + 1 and len(set(values)) > 1:  # the floor changes the law
        assert np.abs(expected - definition_probs(values, m, alpha, eps_each, side)).max() \
            > 1e-3


def test_range_score_is_not_the_clipped_count_on_ties():
    """The superseded score |C − t| (re-implemented in :func:`old_score_pieces`, checked here
    against its definition) differs from the range score by at most 1 on tables without
    ties, and changes the law by far on every table with a cell of many rows: the tests
    above would catch a revert."""
    eps_each = 0.9
    for values, m in CASES:
        counts = np.unique(values, return_counts=True)[1] if values else np.zeros(0)
        gap = 0.0
        for alpha in ALPHAS:
            for floor in FLOORS:
                for side in ("lower", "upper"):
                    new = definition_badness(values, m, alpha, side, floor)
                    old = old_badness(values, m, alpha, side, floor)
                    assert all(x <= y for x, y in zip(new, old, strict=True))
                    old_pieces = old_score_pieces(hist_of(values), m, alpha, side, eps_each,
                                                  floor)
                    old_law = piece_point_probs(old_pieces)
                    np.testing.assert_allclose(old_law, law_of(old, eps_each), rtol=1e-9,
                                               atol=1e-300)
                    if not len(counts) or counts.max() == 1:
                        assert all(y - x <= 1 for x, y in zip(new, old, strict=True))
                    gap = max(gap, float(np.abs(law_of(new, eps_each) - old_law).max()))
        if len(counts) and counts.max() >= 4:
            assert gap > 0.1, values


def test_pieces_floor_examples_and_validation():
    """Hand-checked: 4 rows at 1, 3, 5, 7 on a grid of 9, α = 1/4 (α·n = 1). Without a floor
    the lower bound aims at 1 clipped row: badness 0 where [L, L'] ∋ 1, i.e. the cells 1
    ([0, 1]), 2 ([1, 1]) and 3 ([1, 2]); with k = 3 at 3 rows (cells 5, 6, 7); with
    k = 10 > n at all 4 (badness 6 on the cells 7 and 8, where L' = 4). Ties: 4 rows at 2
    and one at 6 (α·n = 5/4): only the cell 2 ([0, 4]) has badness 0 — the old score
    |L − t| gave the cells 0, 1, 2 the same badness 5/4 (the upper side: the mirror table)."""
    hist = hist_of([1, 3, 5, 7])
    best = {0: {1, 2, 3}, 3: {5, 6, 7}, 10: {7, 8}}
    for k, cells in best.items():
        probs = piece_point_probs(bound_pieces(hist, 9, Fraction(1, 4), "lower", 1.0, k))
        assert set(np.flatnonzero(probs == probs.max()).tolist()) == cells
        # the upper side is the mirror image (the values are symmetric about 4)
        up = piece_point_probs(bound_pieces(hist, 9, Fraction(1, 4), "upper", 1.0, k))
        np.testing.assert_allclose(up, probs[::-1], rtol=1e-12)
    tied = hist_of([2, 2, 2, 2, 6])
    for side, table, cell in (("lower", tied, 2), ("upper", hist_of([2, 6, 6, 6, 6]), 6)):
        depth = expand(bound_pieces(table, 9, Fraction(1, 4), side, 1.0))
        assert np.flatnonzero(depth == depth.max()).tolist() == [cell]
    low = expand(bound_pieces(tied, 9, Fraction(1, 4), "lower", 1.0))
    assert low[2] - low[0] == low[2] - low[1] == 5  # b·(5/4 − 0), b = 4
    old = expand(old_score_pieces(tied, 9, Fraction(1, 4), "lower", 1.0))
    assert old[0] == old[1] == old[2] == old.max()
    for bad in (-1, True, 2.5, "3"):
        with pytest.raises(ParameterError, match="floor"):
            bound_pieces(hist, 9, Fraction(1, 4), "lower", 1.0, bad)  # type: ignore[arg-type]
    # a floor beyond int64 weights is computed in exact integers, not refused (issue #21)
    wide = bound_pieces(hist, 9, Fraction(1, 4), "lower", 1.0, 2**61)
    assert wide.depths.dtype == object and all(type(v) is int for v in wide.depths)


def _gof(draw, pieces: Pieces, n: int) -> tuple[float, np.ndarray, np.ndarray]:
    return pieces_fit(np.array([draw() for _ in range(n)], dtype=np.uint64), pieces)


def _pool(p: np.ndarray, small: np.ndarray) -> np.ndarray:
    return np.append(p[~small], p[small].sum()) if small.any() else p


SMALL_TIES = np.array([2, 2, 5, 6, 6, 6, 9, 9, 9, 9, 12, 13, 17])
HEAVY_ENDS = np.array([3] * 10 + [4, 6, 6, 9] + [15] * 6)  # each extreme cell holds > t rows
FLOAT_GAPS = FloatBins().encode(np.array([0.5, 0.7, 0.7, 1.0, 3.0, 3.1, 3.1, 3.1, 1e3, 2e3,
                                          2e3]))
FLOAT_ZEROS = FloatBins().encode(np.array([0.0] * 150 + [0.5, 0.7, 0.7, 1.0, 3.0, 3.1, 1e3,
                                                         2e3, 2e3, 5e3]))
GOF = [  # (values, m, α, ε, floor, test against the old score |C − t| too)
    # a small grid with ties; a FloatBins grid with gaps of millions of bins; each with and
    # without a floor above α·n; tie-heavy tables whose extreme cells hold more than t rows
    (SMALL_TIES, 20, Fraction(1, 10), 1.0, 0, True),
    (SMALL_TIES, 20, Fraction(1, 10), 1.0, 4, False),
    (FLOAT_GAPS, 2**24, Fraction(1, 4), 0.8, 0, False),
    (FLOAT_GAPS, 2**24, Fraction(1, 4), 0.8, 6, False),
    (HEAVY_ENDS, 20, Fraction(1, 10), 1.0, 4, True),
    (FLOAT_ZEROS, 2**24, Fraction(1, 4), 0.8, 50, True),  # 150 zeros, t = 50 > α·n = 40
]


@pytest.mark.parametrize("values,m,alpha,eps,floor,ties", GOF)
@pytest.mark.parametrize("side", ["lower", "upper"])
def test_sampler_matches_the_exact_law_with_power(values, m, alpha, eps, floor, ties, side):
    """Chi-square at level 1e-3 on the pieces (seeded, so deterministic) with the exact
    c = ε/(2b); power: the same test rejects a sampler at 2·c (a mechanism that forgot the
    /2 of exp(−ε·badness/2)), with a floor a sampler of the floor-less law, and on the
    tie-heavy tables a sampler of the old score |C − t| (a revert of the range score);
    each alternative's noncentrality is checked to give power > 1 − 1e-6."""
    n, level = 8_000, 1e-3
    hist = hist_of(values)
    pieces = bound_pieces(hist, m, alpha, side, eps, floor)
    c = Fraction(eps) / (2 * alpha.denominator)
    rng = quiet_source(21)
    p_right, _expected, small = _gof(lambda: sample_unimodal(pieces, c, rng), pieces, n)
    assert p_right > level
    full = _pool(pieces.probabilities(), small)
    df = len(full) - 1
    wrongs = [(bound_pieces(hist, m, alpha, side, 2 * eps, floor), pieces, 2 * c)]
    if floor:
        floorless = bound_pieces(hist, m, alpha, side, eps)
        assert (floorless.starts == pieces.starts).all()  # the same cells, another law
        wrongs.append((floorless, floorless, c))
    if ties:
        old = old_score_pieces(hist, m, alpha, side, eps, floor)
        assert (old.starts == pieces.starts).all()
        wrongs.append((old, old, c))
    for wrong_pieces, drawn, wrong_c in wrongs:
        wrong = _pool(wrong_pieces.probabilities(), small)
        lam = n * float((((wrong - full) ** 2) / full).sum())
        assert 1 - ncx2.cdf(chi2.ppf(1 - level, df), df, lam) > 1 - 1e-6
        wrong_rng = quiet_source(21)
        p_wrong, _, _ = _gof(lambda d=drawn, w=wrong_c, r=wrong_rng: sample_unimodal(d, w, r),
                             pieces, n)
        assert p_wrong < level


def test_draw_bound_uses_the_plan_c_and_floor_exactly():
    plan = plan_bounds(BoundsRequest(epsilon=1.3, coverage=0.8), [IntegerRange(0, 9)])
    assert plan.alpha == Fraction(1, 10) and plan.sensitivity == 1
    assert plan.c == Fraction(plan.epsilon_each) / 20
    k = plan.floor_rows[0]
    assert k == math.ceil(2 / plan.epsilon_each * math.log(10 * 2 / 1e-3)) + 1
    hist = hist_of([1, 1, 4, 8])  # n = 4 < k: the floor binds
    for side in ("lower", "upper"):
        pieces = bound_pieces(hist, 10, plan.alpha, side, plan.epsilon_each, k)
        floorless = bound_pieces(hist, 10, plan.alpha, side, plan.epsilon_each)
        assert (pieces.depths != floorless.depths).any()
        for seed in range(20):
            a, b = quiet_source(seed), quiet_source(seed)
            assert draw_bound(hist, plan, 0, side, a) == sample_unimodal(pieces, plan.c, b)
        assert pieces.epsilon == pytest.approx(2 * float(plan.c))


def test_sample_unimodal_refuses_bad_pieces():
    good = Pieces(np.array([0, 3], dtype=np.uint64), np.array([3, 2], dtype=np.uint64),
                  np.array([1, 0], dtype=np.int64), 1.0, 5)
    rng = quiet_source(1)
    assert 0 <= sample_unimodal(good, Fraction(1, 2), rng) < 5
    bad = [
        Pieces(good.starts, good.sizes, np.array([-1, 0], dtype=np.int64), 1.0, 5),
        Pieces(good.starts, np.array([3, 3], dtype=np.uint64), good.depths, 1.0, 5),
        Pieces(np.array([0, 2, 3], dtype=np.uint64), np.array([2, 1, 2], dtype=np.uint64),
               np.array([1, 0, 1], dtype=np.int64), 1.0, 5),  # not unimodal
    ]
    for p in bad:
        with pytest.raises(ParameterError):
            sample_unimodal(p, Fraction(1, 2), rng)
    with pytest.raises(ParameterError, match="rational"):
        sample_unimodal(good, 0.5, rng)  # type: ignore[arg-type]


# == privacy: the sensitivity ==============================================================
@pytest.mark.parametrize("alpha", [Fraction(1, 4), Fraction(1, 20), Fraction(1, 2000),
                                   Fraction(2, 5)])
@pytest.mark.parametrize("floor", [0, 1, 2, 3, 12])
def test_neighbouring_histograms_log_ratios_within_epsilon_each(alpha, floor):
    """Every add/remove neighbour of small tables — many of them tie-heavy (all rows in one
    cell, heavy extreme cells) — with the floor k (Lemma B1: the target max(k, α·n) moves
    with n — it crosses from k to α·n within these tables for α = 2/5, k = 2, 3 — and k = 12
    lies above every n): the range score's badness, computed from its definition, moves by
    at most 1 (exactly 1 somewhere when a floor is set); |ln P(i)/P'(i)| ≤ ε_each for every
    i (ε-DP) and the log-ratios vary by ≤ ε_each over i (ε-bounded range); the worst case
    comes within a factor 3 of ε_each (the bound is not vacuous)."""
    eps_each, m = 0.7, 6
    rng = np.random.default_rng(0)
    skew = np.array([0.55, 0.05, 0.05, 0.05, 0.05, 0.25])  # heavy extreme cells
    tables = [[], [0], [5], [2, 2], [0, 5, 5], [1, 2, 3, 4, 4, 5, 0, 0, 3],
              [0] * 9, [5] * 8, [3] * 7, [0] * 5 + [5] * 5, [2] * 7 + [3],
              [0] * 6 + [1], [5] * 6 + [4], [3] * 4 + [0, 5], [1, 1, 1, 4, 4, 4]] + [
        rng.integers(0, m, size=rng.integers(1, 10)).tolist() for _ in range(15)] + [
        rng.choice(m, size=rng.integers(2, 11), p=skew).tolist() for _ in range(10)]
    worst, worst_bad = 0.0, Fraction(0)
    for values in tables:
        neighbours = [[*values, v] for v in range(m)]
        neighbours += [values[:k] + values[k + 1:] for k in range(len(values))]
        for side in ("lower", "upper"):
            bad = definition_badness(values, m, alpha, side, floor)
            lp = np.log(piece_point_probs(bound_pieces(hist_of(values), m, alpha, side,
                                                       eps_each, floor)))
            for other in neighbours:
                other_bad = definition_badness(other, m, alpha, side, floor)
                worst_bad = max(worst_bad, *(abs(x - y) for x, y in zip(bad, other_bad,
                                                                        strict=True)))
                lq = np.log(piece_point_probs(bound_pieces(hist_of(other), m, alpha, side,
                                                           eps_each, floor)))
                diff = lp - lq
                assert np.abs(diff).max() <= eps_each * (1 + 1e-9)
                assert diff.max() - diff.min() <= eps_each * (1 + 1e-9)
                worst = max(worst, float(np.abs(diff).max()))
    # ≤ 1 (Lemma B1), reached when the floor holds the target still; without a floor the
    # target moves by α with every row, and the badness by at most 1 − α
    assert worst_bad == (1 if floor else 1 - alpha)
    assert worst >= eps_each / 3


# == coverage: the constant T_j ============================================================
def law_and_badness(hist: Histogram, plan: BoundsPlan, side: str
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """One bound's exact (float) law per piece and, per piece, the rows its cell edge clips
    C (L or G), the most a bound in the cell clips (L' or G') and the range score
    max(0, C − t, t − most), with t = max(k, α·n) computed here from the documented T_j
    (not read from the plan)."""
    d = plan.domains[0]
    T = 2 / plan.epsilon_each * math.log(d.size * plan.mechanisms / plan.request.beta)
    k = math.ceil(T * (1 + 1e-12)) + 1
    assert plan.floor_rows[0] == k
    pieces = bound_pieces(hist, d.size, plan.alpha, side, plan.epsilon_each, k)
    starts = pieces.starts.astype(np.int64)
    cum = np.concatenate([[0], np.cumsum(hist.counts)])
    below = cum[np.searchsorted(hist.keys, starts, side="left")]  # #{idx < i}
    upto = cum[np.searchsorted(hist.keys, starts, side="right")]  # #{idx ≤ i}
    n = hist.total
    clipped, most = (below, upto) if side == "lower" else (n - upto, n - below)
    t = max(k, float(plan.alpha) * n)
    bad = np.maximum(0.0, np.maximum(clipped - t, t - most))
    return pieces.probabilities(), clipped, most, bad, t


def spread_table(n: int, start: int) -> Histogram:
    return Histogram(np.arange(start, start + n), np.ones(n, dtype=np.int64))


def gapped_table(n_low: int, n_high: int, low: int, high: int) -> Histogram:
    keys = np.concatenate([np.arange(low, low + n_low), np.arange(high, high + n_high)])
    return Histogram(keys, np.ones(len(keys), dtype=np.int64))


def _tied(rows: int, cells: int = 64) -> np.ndarray:
    """``rows`` rows in min(rows, cells) cells, as evenly as possible (ties everywhere)."""
    return np.array([len(p) for p in np.array_split(np.arange(rows), min(rows, cells))],
                    dtype=np.int64)


def heavy_table(n: int, heavy: int, at: int, side: str) -> Histogram:
    """n rows: ``heavy`` of them in the cell ``at``, the group's lowest (side "lower") or
    highest ("upper") occupied cell, the others in up to 64 cells next to it."""
    rest = _tied(n - heavy) if n > heavy else np.zeros(0, dtype=np.int64)
    if side == "lower":
        return Histogram(np.arange(at, at + len(rest) + 1), np.concatenate([[heavy], rest]))
    return Histogram(np.arange(at - len(rest), at + 1), np.concatenate([rest, [heavy]]))


def heavy_gapped_table(n_out: int, n: int, low: int, high: int, side: str) -> Histogram:
    """n_out rows on the target's side in one cell, a gap, the others in up to 64 cells
    (the tie-heavy variant of :func:`gapped_table`)."""
    rest = _tied(n - n_out)
    if side == "lower":
        return Histogram(np.concatenate([[low], np.arange(high, high + len(rest))]),
                         np.concatenate([[n_out], rest]))
    return Histogram(np.concatenate([np.arange(low, low + len(rest)), [high]]),
                     np.concatenate([rest, [n_out]]))


@pytest.mark.parametrize("eps,beta,coverage", [(0.05, 1e-3, 0.9), (0.2, 0.1, 0.9),
                                               (1.0, 1e-3, 0.9), (1.0, 1e-3, 0.999)])
def test_coverage_constant_holds_and_is_not_loose_by_two(eps, beta, coverage):
    """Exactly computed from the law (Theorem C): on tables of every size — below, around
    and above the floor k and the rows needed k/α — with and without heavy ties (the
    extreme cell holding 30% or all of the rows, the rows beyond a gap in one cell), the
    range score exceeds OPT + T with probability ≤ β/(2d) per mechanism, where OPT = 0 for
    n ≥ k and OPT = t − n below; for n ≥ k, the clipped count C exceeds t + T (no tie term)
    and the bound's cell lies beyond the group's extreme occupied cell (L' = 0) each with
    probability ≤ β/(2d); for n < k, L' < n − T as rarely. At T/2 some table exceeds β/(2d)
    by far (a T too small by 2 — e.g. T = (1/ε)·ln(2md/β) — would fail the first check),
    and at T/4 some table almost always."""
    d = FloatBins()
    plan = plan_bounds(BoundsRequest(epsilon=eps, coverage=coverage, beta=beta), [d])
    T, a = plan.rank_error[0], float(plan.alpha)
    assert 2 / plan.epsilon_each * math.log(d.size * 2 / beta) <= T
    assert T <= 2 / plan.epsilon_each * math.log(d.size * 2 / beta) * (1 + 1e-12)
    k = plan.floor_rows[0]
    top = 4 * (k + T) / a
    sizes = sorted({*range(1, 40), *range(int(k) - 30, int(k) + 30, 3),
                    *np.geomspace(40, top, 40).astype(int).tolist(),
                    *(int((f * T + k) / a) + j for f in (0.0, 0.25, 0.5, 1.0)
                      for j in range(-60, 60, 7))})
    sizes = [n for n in sizes if 0 < n <= min(top, 200_000)]
    assert min(sizes) < k < k / a < max(sizes)
    worst = {1.0: 0.0, 0.5: 0.0, 0.25: 0.0}
    over_clipped = outside = 0.0
    heavy_seen = 0
    mid, gap = d.index_of(1.0), 8_000_000
    for n in sizes:
        target = max(k, a * n)
        tables = [(spread_table(n, mid), ("lower", "upper")),
                  (Histogram(np.array([mid]), np.array([n])), ("lower", "upper"))]
        for side in ("lower", "upper"):
            tables.append((heavy_table(n, max(1, 3 * n // 10), mid, side), (side,)))
        for f in worst:  # the target's side ends just beyond target + f·T, then a gap
            n_out = int(target + f * T) + 1
            if n > 2 * n_out:
                tables.append((gapped_table(n_out, n - n_out, mid - gap, mid), ("lower",)))
                tables.append((gapped_table(n - n_out, n_out, mid - gap, mid), ("upper",)))
                for side in ("lower", "upper"):
                    tables.append((heavy_gapped_table(n_out, n, mid - gap, mid, side),
                                   (side,)))
        for hist, sides in tables:
            heavy_seen += int(hist.counts.max() > target)
            for side in sides:
                probs, clipped, most, bad, t = law_and_badness(hist, plan, side)
                opt = float(bad.min())
                assert opt == pytest.approx(0.0 if n >= k else t - n, abs=1e-9)
                for f in worst:
                    worst[f] = max(worst[f], float(probs[bad > opt + f * T].sum()))
                if n >= k:  # OPT = 0: C ≤ t + T, L' ≥ t − T ≥ 1
                    over_clipped = max(over_clipped, float(probs[clipped > t + T].sum()))
                    outside = max(outside, float(probs[most < 1].sum()))
                else:  # fewer rows than k: OPT = t − n, so only L' ≥ n − T
                    assert probs[most < n - T].sum() <= plan.failure_each
    assert heavy_seen > len(sizes)  # extreme cells holding more than t rows were tested
    assert worst[1.0] <= plan.failure_each
    assert over_clipped <= plan.failure_each and outside <= plan.failure_each
    assert worst[0.5] > max(2 * plan.failure_each, 0.1)
    assert worst[0.25] > 0.9


@pytest.mark.parametrize("n", [20_000, 2_000])  # α·n above the floor k; below it
def test_coverage_sampled_clipped_count_exceeds_target_plus_t_rarely(n):
    """Sampled runs at a small ε: a table whose target count t = max(k, α·n) sits just below
    a gap of 3 million bins. With t + T/4 + 1 rows below the gap the lower bound clips more
    than t + T/4 rows in most runs; with t + T + 1 it never clips more than t + T in the
    same number of runs (the guarantee allows a share β/2), and its cell's range never
    ends below t − T (L' ≥ t − T); the upper bound likewise."""
    d = FloatBins()
    plan = plan_bounds(BoundsRequest(epsilon=0.2, coverage=0.9, beta=1e-3), [d])
    T, a, k = plan.rank_error[0], float(plan.alpha), plan.floor_rows[0]
    target = max(k, a * n)
    assert (target == k) == (n == 2_000)
    runs = 300
    mid = d.index_of(1.0)
    for t, expect_often in ((T / 4, True), (T, False)):
        n_low = int(target + t) + 1
        hist = gapped_table(n_low, n - n_low, mid - 3_000_000, mid)
        rng = quiet_source(77)
        res = run_bounds(plan, {(g, 0): hist for g in range(runs)}, list(range(runs)), rng,
                         ["x"])
        cum = np.concatenate([[0], np.cumsum(hist.counts)])
        lower = np.array([r[0] for r in res.lower_index])
        clipped = cum[np.searchsorted(hist.keys, lower, side="left")]  # L
        most = cum[np.searchsorted(hist.keys, lower, side="right")]  # L'
        share = float((clipped > target + t).mean())
        if expect_often:
            assert share > 0.5
        else:
            assert share == 0.0 and (most >= target - T).all()
        upper = np.array([r[0] for r in res.upper_index])
        clipped_hi = n - cum[np.searchsorted(hist.keys, upper, side="right")]  # G
        most_hi = n - cum[np.searchsorted(hist.keys, upper, side="left")]  # G'
        assert (clipped_hi <= target + T).all() and (most_hi >= target - T).all()  # OPT = 0


def test_floor_keeps_a_small_groups_bounds_within_its_data(monkeypatch):
    """The floor's purpose (docs/privacy.md §9, "Small groups"): 2,000 lognormal rows on
    FloatBins at ε = 1, coverage 0.999 (α·n = 1 ≪ T ≈ 97, so the floor k binds). With the
    floor every side clips at least one row (the bound lies within the data) in (nearly)
    every run, and at most k + T (no tie term) in every run; with the floor removed from the
    plan most runs put
    a bound more than 10^6 times beyond the data's largest value, and no side clips
    anything."""
    x = np.random.default_rng(11).lognormal(0, 1, 2_000)
    d = FloatBins()
    hist = histogram(x, d)
    runs = 200
    groups = list(range(runs))

    def clipped(plan: BoundsPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        res = run_bounds(plan, {(g, 0): hist for g in groups}, groups, quiet_source(5),
                         ["x"])
        lo = np.array([r[0] for r in res.lower])
        hi = np.array([r[0] for r in res.upper])
        below = (x[None, :] < lo[:, None]).sum(axis=1)
        above = (x[None, :] > hi[:, None]).sum(axis=1)
        return lo, hi, below, above

    plan = plan_bounds(BoundsRequest(epsilon=1.0, coverage=0.999), [d], rows=len(x))
    k, T = plan.floor_rows[0], plan.rank_error[0]
    assert k > float(plan.alpha) * len(x) and plan.rows_needed()[0] > len(x)
    lo, hi, below, above = clipped(plan)
    inside = (below >= 1) & (above >= 1) & (lo <= hi)
    assert inside.mean() >= 0.95
    assert (below <= k + T).all() and (above <= k + T).all()

    monkeypatch.setattr(BoundsPlan, "floor_rows",
                        property(lambda self: (0,) * len(self.domains)))
    floorless = plan_bounds(BoundsRequest(epsilon=1.0, coverage=0.999), [d])
    assert floorless.floor_rows == (0,)
    lo, hi, below, above = clipped(floorless)
    far = np.maximum(np.abs(lo), np.abs(hi)) > 1e6 * x.max()
    assert far.mean() > 0.5
    assert ((below >= 1) & (above >= 1)).mean() < 0.1


def test_range_score_keeps_a_shared_minimum_in_its_cell(monkeypatch):
    """The range score's purpose (docs/privacy.md §9, "The score"): 5,000 rows on FloatBins
    at ε = 1, coverage 0.999 (t = k ≈ 201 rows per side), a column whose minimum 0 is
    shared by 30% of the rows (the others lognormal) and a month column (integers 1..12,
    about 417 rows each): the extreme cells hold more than t rows. With the range score the
    lower bound is the minimum's cell, i.e. exactly its edge 0.0 / 1.0 (clipping no row),
    and the months' upper bound the cell of 12, in (nearly) every run; no bound lies
    beyond 10^6 × the data's scale. With the old score |L − t| (re-implemented and patched
    in) the minimum's cell has the badness t of every empty cell below it: the lower bound
    lies below the data in (nearly) every run, on a negative float spread over ~2^23 cells,
    so beyond 10^6 × the data's scale in a large share of runs (about half: the other half
    are negative floats of magnitude below that), and the months' upper bound, spread over
    the cells above 12, beyond it in most runs; most runs have some bound beyond it."""
    rng = np.random.default_rng(4)
    n, runs = 5_000, 300
    zeros = rng.lognormal(1, 1, n)
    zeros[rng.permutation(n)[: 3 * n // 10]] = 0.0
    months = rng.integers(1, 13, n).astype(float)
    d = FloatBins()
    columns = [zeros, months]
    hists = [histogram(x, d) for x in columns]
    plan = plan_bounds(BoundsRequest(epsilon=1.0, coverage=0.999), [d, d], rows=n)
    t = max(plan.floor_rows[0], float(plan.alpha) * n)
    assert all(int(h.counts[0]) > t and int(h.counts[-1]) > 0 for h in hists)
    assert int(hists[1].counts[-1]) > t  # 12 is shared too
    groups = list(range(runs))

    def draw() -> BoundsResult:
        return run_bounds(plan, {(g, j): hists[j] for g in groups for j in range(2)}, groups,
                          quiet_source(3), ["zeros", "month"])

    def far(res: BoundsResult) -> np.ndarray:  # [run, column, side]
        scale = np.array([np.abs(x).max() for x in columns])
        lo, hi = np.array(res.lower), np.array(res.upper)
        return np.stack([np.abs(lo) > 1e6 * scale, np.abs(hi) > 1e6 * scale], axis=2)

    min_cell = [d.index_of(float(x.min())) for x in columns]
    assert [d.lower_value(i) for i in min_cell] == [0.0, 1.0]
    res = draw()
    lo_idx, hi_idx = np.array(res.lower_index), np.array(res.upper_index)
    lo = np.array(res.lower)
    for j, x in enumerate(columns):
        at_min = lo_idx[:, j] == min_cell[j]
        assert at_min.mean() >= 0.95
        assert (lo[at_min, j] == x.min()).all()  # the cell's edge: the exact minimum
        assert ((x[None, :] < lo[:, j, None]).sum(axis=1)[at_min] == 0).all()  # clips none
    assert (hi_idx[:, 1] == d.index_of(12.0)).mean() >= 0.95
    assert not far(res).any()

    monkeypatch.setattr("dprect.core.bounds.bound_pieces", old_score_pieces)
    old = draw()
    lo_idx, lo = np.array(old.lower_index), np.array(old.lower)
    old_far = far(old)
    for j, x in enumerate(columns):
        assert (lo_idx[:, j] == min_cell[j]).mean() <= 0.05
        assert (lo[:, j] < x.min()).mean() >= 0.95  # beyond the data
        assert old_far[:, j, 0].mean() > 0.2
    assert old_far[:, 1, 1].mean() > 0.9  # the months' upper bound
    assert old_far.any(axis=(1, 2)).mean() > 0.9


# == runs ==================================================================================
def _histograms(groups, columns, rng):
    out = {}
    for g in groups:
        for j in range(columns):
            out[(g, j)] = histogram(rng.normal(j, 1 + j, size=int(rng.integers(2000, 4000))),
                                    FloatBins())
    return out


def test_run_shapes_rows_json_and_library_forms():
    plan = plan_bounds(BoundsRequest(epsilon=2.0, coverage=0.99), [FloatBins()] * 2)
    hists = _histograms([None], 2, np.random.default_rng(1))
    res = run_bounds(plan, hists, [None], quiet_source(3), ["a", "b"])
    assert isinstance(res, BoundsResult) and res.groups == [None] and res.seeded
    assert not res.grouped
    for j, d in enumerate(plan.domains):
        assert res.lower[0][j] == d.lower_value(res.lower_index[0][j])
        assert res.upper[0][j] == d.upper_value(res.upper_index[0][j])
    assert res.rows() == [{"group": None, "column": c, "lower": res.lower[0][j],
                           "upper": res.upper[0][j],
                           "rank_error": plan.interval_rank_error[j]}
                          for j, c in enumerate(["a", "b"])]
    js = res.to_json()
    assert js["privacy"] == plan.guarantee.to_json() and js["seeded"] and "warning" in js
    assert js["plan"] == plan.to_json() and len(js["bounds"]) == 2
    json.dumps(js)
    forms = res.library_forms()
    lo, hi = res.lower[0], res.upper[0]
    assert forms["opendp"] == {"a": (lo[0], hi[0]), "b": (lo[1], hi[1])}
    assert forms["tumult"]["b"] == {"low": lo[1], "high": hi[1]}
    assert forms["diffprivlib"] == {"bounds": (lo, hi)}
    with pytest.raises(ParameterError, match="group"):
        res.library_forms("nope")


def test_grouped_run_same_guarantee_order_and_empty_groups():
    """The guarantee does not depend on the groups (parallel composition); the draws are
    made group by group, column by column, lower then upper; a group with no rows (no
    histogram) is drawn like any other; histograms of unlisted groups are ignored."""
    domains = [FloatBins(), Grid(-5, 5, 64)]
    plan = plan_bounds(BoundsRequest(epsilon=1.0, delta=1e-7), domains)
    rng_data = np.random.default_rng(2)
    groups = ["b", "a", 3]
    hists = {(g, j): histogram(rng_data.normal(0, 2, size=3000), d)
             for g in ("b", "a") for j, d in enumerate(domains)}
    hists[("unlisted", 0)] = Histogram(np.array([1]), np.array([5]))
    grouped = run_bounds(plan, hists, groups, quiet_source(9), ["x", "y"])
    single = run_bounds(plan, {(None, k[1]): v for k, v in hists.items() if k[0] == "b"},
                        [None], quiet_source(9), ["x", "y"])
    assert grouped.guarantee == single.guarantee == plan.guarantee
    assert grouped.grouped and grouped.groups == groups
    # the first group's draws come first: identical to the ungrouped run on its data
    assert grouped.lower_index[0] == single.lower_index[0]
    assert grouped.upper_index[0] == single.upper_index[0]
    # the documented order, drawn by hand
    rng = quiet_source(9)
    empty = Histogram.empty()
    for gi, g in enumerate(groups):
        for j in range(2):
            h = hists.get((g, j), empty)
            assert draw_bound(h, plan, j, "lower", rng) == grouped.lower_index[gi][j]
            assert draw_bound(h, plan, j, "upper", rng) == grouped.upper_index[gi][j]
    forms = grouped.library_forms()
    assert set(forms) == set(groups) and forms[3] == grouped.library_forms(3)
    with pytest.raises(ParameterError):
        run_bounds(plan, hists, ["a", "a"], quiet_source(1), ["x", "y"])
    # no group (a private selection that kept none, docs/privacy.md §18): nothing drawn
    none = run_bounds(plan, hists, [], quiet_source(1), ["x", "y"])
    assert none.groups == [] and none.lower == [] and none.guarantee == plan.guarantee
    with pytest.raises(ParameterError, match="column"):
        run_bounds(plan, hists, groups, quiet_source(1), ["x"])


def test_empty_group_law_is_uniform_and_draws():
    m = 10
    for side in ("lower", "upper"):
        for floor in (0, 5):
            pieces = bound_pieces(Histogram.empty(), m, Fraction(1, 20), side, 1.0, floor)
            assert pieces.sizes.tolist() == [m] and pieces.depths.tolist() == [0]
    plan = plan_bounds(BoundsRequest(epsilon=1.0), [FloatBins()])
    res = run_bounds(plan, {}, [None], quiet_source(2), ["x"])
    assert 0 <= res.lower_index[0][0] < 2**24 and 0 <= res.upper_index[0][0] < 2**24


def test_seeded_runs_reproduce_and_unseeded_are_marked():
    plan = plan_bounds(BoundsRequest(epsilon=1.0, coverage=0.95), [FloatBins()] * 3)
    hists = _histograms([None], 3, np.random.default_rng(5))
    one = run_bounds(plan, hists, [None], quiet_source(42), list("abc"))
    two = run_bounds(plan, hists, [None], quiet_source(42), list("abc"))
    other = run_bounds(plan, hists, [None], quiet_source(43), list("abc"))
    assert one == two
    assert (one.lower_index, one.upper_index) != (other.lower_index, other.upper_index)
    fresh = run_bounds(plan, hists, [None], RandomSource(), list("abc"))
    assert not fresh.seeded and "warning" not in fresh.to_json()


def test_bounds_cover_about_the_requested_share_on_real_sized_data():
    """At 10^6 rows the coverage guarantee is tight: each side clips at most max(k, α·n) + T
    rows (no tie term) and at least max(k, α·n) − T less the ties in the bound's cell (here
    α·n = 500 > k: the share, not the floor, sets the target)."""
    rng = np.random.default_rng(8)
    n = 1_000_000
    x = rng.lognormal(3, 2, n)
    plan = plan_bounds(BoundsRequest(epsilon=1.0, coverage=0.999), [FloatBins()], rows=n)
    res = run_bounds(plan, {(None, 0): histogram(x, FloatBins())}, [None], quiet_source(6),
                     ["x"])
    below = int((x < res.lower[0][0]).sum())
    above = int((x > res.upper[0][0]).sum())
    T, an = plan.rank_error[0], max(plan.floor_rows[0], n / 2000)
    assert an == n / 2000
    ties = int(np.unique(FloatBins().encode(x), return_counts=True)[1].max())
    assert an - T - ties <= below <= an + T and an - T - ties <= above <= an + T
