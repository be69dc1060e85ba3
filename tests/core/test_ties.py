"""Tie-robust RandMargins (docs/algorithm.md §8, docs/privacy.md "Ties").

* the refinement's arithmetic (value part kept, range, no overflow);
* the planner's tie bits and the accountant's q (a wrong constant fails here);
* tie-heavy tables no longer collapse, and forcing the old behaviour (no tie bits) does;
* on a table without ties the tie bits leave the rectangle's law unchanged (two-sample
  test, with a power check that the same test detects a 1.5× larger Δ).
"""

from __future__ import annotations

import dataclasses
import math
import struct
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import ks_2samp

import dprect
from dprect.core.algorithms import run_plan
from dprect.core.domains import FloatBins, FloatOrder, Grid, IntegerRange
from dprect.core.errors import ParameterError
from dprect.core.interior_point import interior_point_failure_bound, interior_point_size
from dprect.core.margins import StaircaseLaw
from dprect.core.planner import Plan
from dprect.core.randomness import RandomSource
from dprect.core.ties import (
    HASH_BITS,
    HASH_PRIME,
    MAX_TIE_BITS,
    TIE_OVERSHOOT,
    RefinedFloat,
    RefinedGrid,
    TieBreaker,
    coarse_range,
    coefficient,
    mixer,
    occurrence_ranks,
    refined,
    refined_size,
    tie_bits,
)
from dprect.engines.numpy_engine import NumpyEngine

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")
G32 = "0:1:4294967296"


# -- the refinement ------------------------------------------------------------------------
def test_refine_keeps_the_value_part_and_range():
    rng = np.random.default_rng(0)
    domains = [Grid(0, 1, 2**42), IntegerRange(0, 16), FloatOrder()]
    cols = [rng.integers(0, 2**42, 1000), rng.integers(0, 17, 1000), rng.normal(size=1000)]
    ties = TieBreaker.for_domains(domains, [MAX_TIE_BITS, 7, 0])
    assert ties.hashed == (0, 1, 2) and ties.floats == (2,)  # every axis is hashed
    h = ties.row_hash(cols)
    keys = np.array([_key(x) for x in cols[2]])  # a float's order key, from its bits
    expected = (coefficient(0) * (cols[0] % HASH_PRIME)
                + coefficient(1) * (cols[1] % HASH_PRIME)
                + coefficient(2) * (keys % HASH_PRIME)) % HASH_PRIME
    assert np.array_equal(h, expected) and h.min() >= 0 and h.max() < HASH_PRIME < 2**HASH_BITS
    out = ties.refine(cols)
    for col, r, b, d in zip(cols[:2], out[:2], (MAX_TIE_BITS, 7), domains[:2], strict=True):
        assert r.dtype == np.int64
        assert np.array_equal(r >> b, col)  # the value part is the grid index
        assert r.min() >= 0 and r.max() < d.size << b
        u = (mixer(domains.index(d)) * h) % HASH_PRIME  # the axis's own tie-breaker
        assert np.array_equal(r & ((1 << b) - 1), u >> (HASH_BITS - b))
    assert out[2] is cols[2]  # an axis without tie bits is returned as given


def _key(x: float) -> int:
    """The signed order key of a float, written out: its bits, the 63 low ones flipped
    when negative."""
    (bits,) = struct.unpack("<q", struct.pack("<d", x))
    return bits ^ (2**63 - 1) if bits < 0 else bits


def test_refinement_orders_by_value_first():
    ties = TieBreaker.for_domains([IntegerRange(0, 16)] * 2, [5, 5])
    cols = [np.array([3, 3, 4, 2]), np.array([0, 9, 1, 16])]
    r = ties.refine(cols)[0]
    assert r[3] < min(r[0], r[1]) and max(r[0], r[1]) < r[2]
    assert r[0] != r[1]  # rows that differ elsewhere are split


def test_no_bits_is_the_identity():
    cols = [np.arange(5), np.arange(5)]
    identity = TieBreaker((0, 0), ())  # every b_j = 0
    assert identity.refine(cols) == cols and not identity.active


def test_refined_grid_reports_value_bounds():
    g = Grid(0.0, 16.0, 16)
    r = RefinedGrid(g, 4)
    assert r.size == 256
    assert r.lower_value(5 * 16 + 15) == g.lower_value(5)
    assert r.upper_value(5 * 16) == g.upper_value(5)
    with pytest.raises(ParameterError):
        RefinedGrid(FloatOrder(), 3)


def test_tie_bits_rule():
    b = tie_bits([Grid(0, 1, 2**32), FloatOrder(), FloatBins(12)], 128)
    assert b[0] == b[1] == b[2]  # every kind of axis is refined (issue #24)
    assert 2 ** (b[0] - 1) < 128 / TIE_OVERSHOOT <= 2 ** b[0]  # the fewest bits that do
    assert tie_bits([Grid(0, 1, 2**32), FloatOrder()], 128, continuous={1}) == (b[0], 0)
    assert tie_bits([Grid(0, 1, 2**50)], 2**20) == (62 - 50,)  # the 2^62 refined grid
    assert tie_bits([Grid(0, 1, 4)], 2**30) == (MAX_TIE_BITS,)
    with pytest.raises(ParameterError):
        tie_bits([Grid(0, 1, 4)], 0)


# -- the planner and the accountant ---------------------------------------------------------
@pytest.mark.parametrize("law", ["staircase", "laplace"])
@pytest.mark.parametrize("dims, grid", [(4, "0:1:4294967296"), (64, "int:0:16"), (128, None)])
def test_plans_size_delta_for_the_refined_grid(law, dims, grid):
    """docs/privacy.md, "Ties": Δ is sized for m·2^b, so β_IP bounds the interior point's
    failure on the refined grid, and q = ρ·(1 − β_IP) as without ties."""
    plan = dprect.plan(dims=dims, grid=grid, epsilon=1.0, delta=1e-6, margin_law=law,
                       method="randmargins")
    rm = plan.chosen
    bits = [r.tie_bits for r in rm.rounds]
    assert tuple(bits[::2]) == tie_bits(plan_domains(dims, grid), len(rm.rounds))
    assert min(bits) >= 1
    for r in rm.rounds:
        # a grid axis runs on m·2^b points; a float-order axis keeps its 2^64 keys
        refined_size = r.grid_size if grid is None else r.grid_size << r.tie_bits
        assert interior_point_failure_bound(rm.ip_epsilon, r.ip_size, refined_size) <= rm.ip_beta
        assert r.ip_size == interior_point_size(rm.ip_epsilon, rm.ip_beta, refined_size)
    rho = (StaircaseLaw(1, Fraction(rm.details["rho"])).rho if law == "staircase"
           else float(rm.details["rho"]))
    assert rm.details["q"] == pytest.approx(rho * (1 - rm.ip_beta), rel=1e-12)


def plan_domains(dims, grid):
    from dprect.core.domains import feature_names, resolve_domains

    return resolve_domains(grid, feature_names(None, dims))


def test_composition_and_paper_do_not_refine():
    plan = dprect.plan(dims=8, grid="0:16:17", epsilon=1.0, delta=1e-6)
    assert all(r.tie_bits == 0 for r in plan.candidates["composition"].rounds)
    paper = dprect.plan(dims=8, grid="0:16:17", epsilon=1.0, delta=1e-6,
                        accounting="paper", method="randmargins")
    assert all(r.tie_bits == 0 for r in paper.chosen.rounds)


def test_auto_needs_a_clear_margin():
    for dims in (8, 64, 128, 140, 512):
        plan = dprect.plan(dims=dims, grid=G32, epsilon=1.0, delta=1e-6)
        rm = plan.candidates["randmargins"].predicted_misclassified
        comp = plan.candidates["composition"].predicted_misclassified
        expect = "randmargins" if rm <= 0.9 * comp else "composition"
        assert plan.chosen.method == expect
    # near the crossover RandMargins is predicted (slightly) better, yet not chosen
    plan = dprect.plan(dims=130, grid=G32, epsilon=1.0, delta=1e-6)
    assert (plan.candidates["randmargins"].predicted_misclassified
            < plan.candidates["composition"].predicted_misclassified)
    assert plan.chosen.method == "composition"


# -- tie-heavy tables ---------------------------------------------------------------------
def _without_ties(plan: Plan) -> Plan:
    """The plan with every tie bit zeroed: the behaviour before tie handling."""
    rm = plan.chosen
    rounds = tuple(dataclasses.replace(r, tie_bits=0) for r in rm.rounds)
    return dataclasses.replace(plan, chosen=dataclasses.replace(rm, rounds=rounds))


def _miss(plan: Plan, X: np.ndarray, domains, seed: int) -> float:
    engine = NumpyEngine.from_features(X, domains)
    result = run_plan(engine, domains, [f"x{j}" for j in range(X.shape[1])], plan,
                      RandomSource(seed=seed))
    return 1.0 - float(result.contains(X).mean())


def _zeros_table(n: int, d: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(size=(n, d)), -5.9, 5.9)
    X[:, 0] = np.abs(X[:, 0])  # an amount: 95% zeros, the rest positive
    X[rng.random(n) < 0.95, 0] = 0.0
    return X


def _pixel_table(n: int, d: int, seed: int = 2) -> np.ndarray:
    """Pixel-like: per-column zero share from 40% to 100%, non-zero values mostly low."""
    rng = np.random.default_rng(seed)
    zero = np.linspace(0.4, 1.0, d)
    values = np.minimum(16, rng.geometric(0.35, size=(n, d)))
    return np.where(rng.random((n, d)) < zero, 0, values).astype(float)


@pytest.mark.parametrize("table", ["zeros", "pixels", "float-zeros"])
def test_ties_do_not_collapse(table):
    if table == "zeros":
        X, domains, eps = _zeros_table(60_000, 8), [Grid(-6, 6, 2**20)] * 8, 4.0
    elif table == "float-zeros":  # the default domain (issue #24)
        X, domains, eps = _zeros_table(60_000, 8), [FloatOrder()] * 8, 4.0
    else:
        X, domains, eps = _pixel_table(60_000, 16), [IntegerRange(0, 16)] * 16, 4.0
    rm = dprect.plan(domains=domains, epsilon=eps, delta=1e-6, method="randmargins")
    comp = dprect.plan(domains=domains, epsilon=eps, delta=1e-6, method="composition")
    seeds = range(3)
    miss_rm = np.mean([_miss(rm, X, domains, s) for s in seeds])
    miss_comp = np.mean([_miss(comp, X, domains, s) for s in seeds])
    miss_old = np.mean([_miss(_without_ties(rm), X, domains, s) for s in seeds])
    assert miss_rm <= 1.2 * miss_comp + 0.01, (miss_rm, miss_comp)
    assert miss_old >= 0.5, miss_old  # what happened before: the fit collapses


# -- no ties: nothing changes beyond the plan ------------------------------------------------
def _bounds_sample(plan: Plan, X: np.ndarray, domains, seeds) -> np.ndarray:
    out = []
    for s in seeds:
        engine = NumpyEngine.from_features(X, domains)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = run_plan(engine, domains, ["a", "b"], plan, RandomSource(seed=s))
        out.append(r.lower_index + r.upper_index)
    return np.array(out, dtype=np.float64)


def test_without_ties_the_law_is_unchanged():
    """Continuous data on a fine grid (no two rows share a grid index): the rectangle's law
    with the plan's tie bits equals its law with none (same Δ, same laws), by a two-sample
    KS test on every bound; the same test at the same size detects Δ × 1.5 (power check)."""
    rng = np.random.default_rng(7)
    domains = [Grid(-8, 8, 2**32)] * 2
    X = rng.normal(size=(3000, 2))
    assert all(len(np.unique(domains[j].encode(X[:, j]))) == len(X) for j in range(2))
    plan = dprect.plan(domains=domains, epsilon=2.0, delta=1e-6, method="randmargins")
    assert min(r.tie_bits for r in plan.chosen.rounds) > 0
    runs = 300
    with_bits = _bounds_sample(plan, X, domains, range(runs))
    without = _bounds_sample(_without_ties(plan), X, domains, range(runs, 2 * runs))
    p_same = min(ks_2samp(with_bits[:, k], without[:, k]).pvalue for k in range(4))
    assert p_same > 0.001 / 4, p_same  # Bonferroni over the four bounds

    wider = _without_ties(plan)
    rounds = tuple(dataclasses.replace(r, ip_size=math.ceil(1.5 * r.ip_size) | 1,
                                       law=StaircaseLaw(math.ceil(1.5 * r.ip_size) | 1,
                                                        r.law.rho_fraction))
                   for r in wider.chosen.rounds)
    wider = dataclasses.replace(wider, chosen=dataclasses.replace(wider.chosen, rounds=rounds))
    changed = _bounds_sample(wider, X, domains, range(2 * runs, 3 * runs))
    p_power = min(ks_2samp(without[:, k], changed[:, k]).pvalue for k in range(4))
    assert p_power < 0.001 / 4, p_power


# -- every domain kind (issue #24) ------------------------------------------------------------
def test_float_refinement_keeps_the_coarse_bin_and_splits_ties():
    rng = np.random.default_rng(3)
    x = np.concatenate([np.zeros(500), rng.normal(size=300), [np.inf, -np.inf, 5e-324,
                                                              -5e-324, 1e308, -1e308]])
    other = rng.integers(0, 17, len(x))
    domains = [FloatOrder(), IntegerRange(0, 16)]
    cols = [domains[0].encode(x), other]
    for b in (1, 9, MAX_TIE_BITS):
        ties = TieBreaker.for_domains(domains, [b, 0])
        r = ties.refine(cols)[0]
        assert r.dtype == np.float64 and not np.isnan(r).any()
        assert not np.any((r == 0.0) & np.signbit(r))  # never −0.0
        keys, rkeys = (np.array([_key(float(v)) for v in a]) for a in (cols[0], r))
        assert np.array_equal(rkeys >> b, keys >> b)  # the coarse bin is the row's own
        # the refined float's key is the row's key with the low bits replaced by u
        h = ties.row_hash(cols, occurrence_ranks(cols))  # zeros repeat: ranks count
        u = ((mixer(0) * h) % HASH_PRIME) >> (HASH_BITS - b)
        inner = (np.abs(x) < 1e300) & (x != -5e-324)  # clamps only at ±inf and −0.0
        assert np.array_equal(rkeys[inner], ((keys[inner] >> b) << b) + u[inner])
        assert np.isinf(r[x == np.inf]).all() and np.isinf(r[x == -np.inf]).all()
        zeros = r[:500]
        assert len(np.unique(zeros)) > min(2**b, 17) // 2  # the zeros' tie group is split
        dom = RefinedFloat(b)
        assert dom.size == FloatOrder.size  # no larger grid: no larger window
        idx = dom.to_index(r)
        for i in rng.choice(len(x), 40, replace=False):
            lo, hi = dom.value_index(int(idx[i]), "lo"), dom.value_index(int(idx[i]), "hi")
            assert FloatOrder.float_at(lo) <= x[i] <= FloatOrder.float_at(hi)
            first, last = coarse_range(float(r[i]), b)
            assert (first, last) == (FloatOrder.float_at(lo), FloatOrder.float_at(hi))


def test_float_bins_are_refined_like_grids():
    rng = np.random.default_rng(4)
    dom = FloatBins(12)
    cols = [dom.encode(np.where(rng.random(400) < 0.9, 0.0, rng.normal(size=400))),
            rng.integers(0, 17, 400)]
    ties = TieBreaker.for_domains([dom, IntegerRange(0, 16)], [10, 0])
    r = ties.refine(cols)[0]
    assert r.dtype == np.int64 and np.array_equal(r >> 10, cols[0])
    assert refined(dom, 10).size == dom.size << 10 and refined(dom, 0) is dom
    for d in (dom, FloatOrder(), Grid(0, 1, 2**32), IntegerRange(0, 16)):
        for b in (0, 1, 15):  # the planner's shortcut is the domain's size
            assert refined_size(d, b) == refined(d, b).size


def test_the_continuity_declaration_only_drops_tie_bits():
    """``continuous`` names axes that take no tie bits; the rest of the plan's shape and
    its guarantee are unchanged, the declared grid axes get smaller windows."""
    domains = [Grid(0, 1, 2**32), Grid(0, 1, 2**32), FloatOrder()]
    names = ["a", "b", "c"]
    full = dprect.plan(domains=domains, features=names, epsilon=2.0, delta=1e-6,
                       method="randmargins")
    part = dprect.plan(domains=domains, features=names, epsilon=2.0, delta=1e-6,
                       method="randmargins", continuous=["b", "c"])
    bits = part.chosen.tie_breaker(domains).bits
    assert bits[0] == full.chosen.tie_breaker(domains).bits[0] > 0 and bits[1:] == (0, 0)
    size = {r.axis: r.ip_size for r in part.chosen.rounds}
    assert size[1] < size[0]  # the declared grid axis: a window for 2^32 points, not 2^(32+b)
    assert part.chosen.guarantee.epsilon <= 2.0 and part.check is not None
    assert part.request["continuous"] == ["b", "c"]
    with pytest.raises(ParameterError, match="not one of the features"):
        dprect.plan(domains=domains, features=names, epsilon=2.0, delta=1e-6,
                    continuous=["d"])
    with pytest.raises(ParameterError, match="twice"):
        dprect.plan(domains=domains, features=names, epsilon=2.0, delta=1e-6,
                    continuous="a,a")


def test_a_false_declaration_costs_utility_not_privacy():
    """Declaring a 95%-zeros column continuous brings the collapse back (the declaration is
    a utility assumption): the plan, hence the guarantee, is the planner's as ever."""
    X = _zeros_table(40_000, 4)
    domains = [Grid(-6, 6, 2**20)] * 4
    honest = dprect.plan(domains=domains, epsilon=4.0, delta=1e-6, method="randmargins")
    wrong = dprect.plan(domains=domains, epsilon=4.0, delta=1e-6, method="randmargins",
                        continuous=["x0"])
    assert wrong.chosen.guarantee.epsilon <= 4.0 and wrong.check is not None
    assert np.mean([_miss(wrong, X, domains, s) for s in range(2)]) >= 0.3
    assert np.mean([_miss(honest, X, domains, s) for s in range(2)]) < 0.15
