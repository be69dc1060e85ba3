"""RandMargins, the composition baseline and the bounding box on synthetic data."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
from seeded_source import seeded as quiet_rng

from dprect import FloatOrder, Grid, IntegerRange, nonprivate_bounding_box, plan
from dprect.core.algorithms import run_composition, run_randmargins
from dprect.core.interior_point import interior_point
from dprect.core.margins import StaircaseLaw
from dprect.engines.numpy_engine import NumpyEngine


def synthetic(seed, n, d, positive_rate=0.3):
    """Uniform rows in [0, 1]^d; positives = inside a random true box (continuous: no ties)."""
    gen = np.random.default_rng(seed)
    side = positive_rate ** (1 / d)
    lo = gen.uniform(0, 1 - side, d)
    hi = lo + side
    X = gen.uniform(0, 1, (n, d))
    y = ((X >= lo) & (X <= hi)).all(axis=1)
    return X, y, lo, hi


def run(method, X_pos, domains, seed, eps=1.0, delta=1e-6, beta=1e-4, **kw):
    p = plan(epsilon=eps, delta=delta, domains=domains, beta=beta, method=method, **kw).chosen
    engine = NumpyEngine.from_features(X_pos, domains)
    trace = []
    runner = run_randmargins if method == "randmargins" else run_composition
    rect = runner(engine, domains, p, quiet_rng(seed), trace=trace)
    return rect, trace, p


def index_box(domains, X_pos):
    idx = np.column_stack([d.to_index(d.encode(X_pos[:, j])) for j, d in enumerate(domains)])
    return idx


@pytest.mark.parametrize("method", ["randmargins", "composition"])
@pytest.mark.parametrize("d,domain", [(1, Grid(0, 1, 2**32)), (3, Grid(0, 1, 2**32)),
                                      (6, FloatOrder())])
def test_rectangle_inside_truth_and_error_bounded(method, d, domain):
    domains = [domain] * d
    for seed in range(6):
        X, y, _, _ = synthetic(seed, 60_000, d)
        X_pos = X[y]
        rect, trace, p = run(method, X_pos, domains, seed)
        assert len(trace) == 2 * d
        if any(t.failed for t in trace):
            continue
        idx = index_box(domains, X_pos)
        lo, hi = np.array(rect.lo, dtype=object), np.array(rect.hi, dtype=object)
        # inside the positives' bounding box (hence inside the true rectangle), per axis
        for j in range(d):
            assert int(idx[:, j].min()) <= rect.lo[j] or rect.lo[j] > rect.hi[j]
            assert rect.hi[j] <= int(idx[:, j].max()) or rect.lo[j] > rect.hi[j]
        inside = np.ones(len(X_pos), dtype=bool)
        for j in range(d):
            inside &= (idx[:, j] >= np.uint64(lo[j])) & (idx[:, j] <= np.uint64(hi[j]))
        missed = int((~inside).sum())
        assert missed <= sum(t.block_size - 1 for t in trace)
        for t, r in zip(trace, p.rounds, strict=True):
            assert t.block_size >= r.ip_size


def test_randmargins_beats_its_bound_and_prediction_is_right_order():
    X, y, _, _ = synthetic(1, 400_000, 4)
    X_pos = X[y]
    domains = [Grid(0, 1, 2**32)] * 4
    misses = []
    for seed in range(5):
        rect, _, p = run("randmargins", X_pos, domains, seed)
        idx = index_box(domains, X_pos)
        inside = np.ones(len(X_pos), dtype=bool)
        for j in range(4):
            inside &= (idx[:, j] >= np.uint64(rect.lo[j])) & (idx[:, j] <= np.uint64(rect.hi[j]))
        misses.append(int((~inside).sum()))
    predicted = p.predicted_misclassified
    assert 0.5 * predicted < np.mean(misses) < 1.5 * predicted


def test_remaining_set_runs_dry_gives_a_rectangle_not_an_error():
    X = np.array([[0.5, 0.5], [0.51, 0.49]])
    domains = [Grid(0, 1, 1024)] * 2
    _, trace, _ = run("randmargins", X, domains, 0)
    assert all(t.real_points <= 2 for t in trace)
    assert any(t.real_points == 0 for t in trace)  # later rounds see only pads


def test_no_positives_gives_an_empty_rectangle():
    X = np.empty((0, 3))
    domains = [IntegerRange(0, 99)] * 3
    for method in ("randmargins", "composition"):
        rect, _, _ = run(method, X, domains, 0)
        assert any(lo > hi for lo, hi in zip(rect.lo, rect.hi, strict=True))


def test_origin_shape_keeps_lower_bounds_at_grid_start():
    X, y, _, _ = synthetic(2, 20_000, 3)
    domains = [Grid(0, 1, 2**20)] * 3
    rect, trace, _ = run("randmargins", X[y], domains, 0, shape="origin")
    assert rect.lo == (0, 0, 0) and [t.side for t in trace] == ["hi"] * 3


def test_same_seed_same_rectangle_different_seed_different():
    X, y, _, _ = synthetic(3, 30_000, 2)
    domains = [FloatOrder()] * 2
    a, _, _ = run("randmargins", X[y], domains, 7)
    b, _, _ = run("randmargins", X[y], domains, 7)
    c, _, _ = run("randmargins", X[y], domains, 8)
    assert a == b and a != c


def test_nonprivate_bounding_box_is_exact():
    X, y, _, _ = synthetic(4, 10_000, 3)
    res = nonprivate_bounding_box(X, y, grid=FloatOrder())
    assert res.privacy is None and "NON-PRIVATE" in res.to_json()["warning"]
    assert np.allclose(res.lower, X[y].min(axis=0)) and np.allclose(res.upper, X[y].max(axis=0))


# -- the window's position and virtual pads (issue 10, points 4 and 9) ------------------------
def _naive_refined(idx: np.ndarray, bits: list[int]) -> np.ndarray:
    """The refined sort values of docs/algorithm.md §8, written out from the formula:
    h = (Σ_j a_j·(s_j mod P)) mod P, h' = (h + g(k)) mod P for the k-th copy of the row
    (g(k) = w·(w + 3141592) mod P, w = (k mod P)·40692 mod P), u_j = (c_j·h') mod P,
    r_j = s_j·2^b + ⌊u_j/2^(24−b)⌋, with P = 2^24 − 3, a_j = 48271^(j+1) mod P,
    c_j = 69621^(j+1) mod P (Python integers)."""
    P = 2**24 - 3
    out = np.zeros(idx.shape, dtype=np.int64)
    copies: dict[tuple[int, ...], int] = {}
    for i, row in enumerate(idx.tolist()):
        k = copies.get(tuple(row), 0)
        copies[tuple(row)] = k + 1
        w = (k % P) * 40692 % P
        h = (sum(pow(48271, j + 1, P) * (s % P) for j, s in enumerate(row))
             + w * (w + 3141592)) % P
        for j, s in enumerate(row):
            u = (pow(69621, j + 1, P) * h) % P
            out[i, j] = (s << bits[j]) + (u >> (24 - bits[j])) if bits[j] else s
    return out


def reference_randmargins(idx: np.ndarray, domains, the_plan, rng):
    """RandMargins straight from docs/algorithm.md §2 and §8, naively: refine every axis
    by its tie bits, sort the remaining positives on the round's axis from its side, append
    MATERIALISED pads at the far end of the refined grid, B_t = the first N_t, D_t = the
    LAST Δ of B_t, p_t = IP(D_t) on the refined grid, remove y_j ≥ p_t (hi) or y_j ≤ p_t
    (lo), report p_t's value part. ``idx``: grid indices (rows × features)."""
    bits = [0] * idx.shape[1]
    for r in the_plan.rounds:
        bits[r.axis] = r.tie_bits
    ref = _naive_refined(idx.astype(np.int64), bits)
    remaining = np.ones(len(idx), dtype=bool)
    found = {}
    for r in the_plan.rounds:
        m = domains[r.axis].size << r.tie_bits
        block = r.law.sample(rng)
        col = ref[remaining, r.axis]
        ordered = np.sort(col)[::-1] if r.side == "hi" else np.sort(col)
        pad = 0 if r.side == "hi" else m - 1
        b_t = np.concatenate([ordered[:block],
                              np.full(max(0, block - len(ordered)), pad, dtype=np.int64)])
        d_t = b_t[len(b_t) - r.ip_size:]
        assert len(b_t) == block and len(d_t) == r.ip_size
        p = interior_point(d_t.astype(np.uint64), epsilon=the_plan.ip_epsilon, grid_size=m,
                           rng=rng)
        remaining &= (ref[:, r.axis] < p) if r.side == "hi" else (ref[:, r.axis] > p)
        found[(r.axis, r.side)] = p >> r.tie_bits
    dims = idx.shape[1]
    return (tuple(found.get((j, "lo"), 0) for j in range(dims)),
            tuple(found.get((j, "hi"), domains[j].size - 1) for j in range(dims)))


class RecordingEngine(NumpyEngine):
    """A NumpyEngine that records every ``window`` call."""

    def __init__(self, columns):
        super().__init__(columns)
        self.calls: list[tuple[int, str, int, int]] = []

    def window(self, axis, side, stop, size):
        self.calls.append((axis, side, stop, size))
        return super().window(axis, side, stop, size)


def _small_case(seed):
    """Small Δ (large ε, small grids) so that N_t > Δ, ties and exhausted sets are common."""
    gen = np.random.default_rng(seed)
    domains = [IntegerRange(0, 63), IntegerRange(0, 255)]
    n = int(gen.choice([3, 40, 400]))
    X = np.column_stack([gen.integers(0, 64, n), gen.integers(0, 256, n)]).astype(float)
    planned = plan(epsilon=30.0, delta=1e-6, domains=domains, beta=0.2,
                   method="randmargins").chosen
    # the planner picks ρ = 1/100 here (N_t = Δ mostly); ρ = 1/2 makes N_t > Δ common
    rounds = tuple(dataclasses.replace(r, law=StaircaseLaw(r.ip_size, Fraction(1, 2)))
                   for r in planned.rounds)
    return X, domains, dataclasses.replace(planned, rounds=rounds)


def test_randmargins_equals_the_naive_reference_exactly():
    """Same seed → the same rectangle as the naive reference, over many seeds and data
    sets. Taking D_t as the FIRST Δ points of B_t (or materialising pads differently from
    virtual ones, or cutting strictly) changes the IP's input and the rectangle."""
    deep = padded = 0
    for seed in range(120):
        X, domains, the_plan = _small_case(seed)
        assert the_plan.rounds[0].ip_size < 40
        idx = np.column_stack([d.to_index(d.encode(X[:, j])) for j, d in enumerate(domains)])
        engine = NumpyEngine.from_features(X, domains)
        trace = []
        got = run_randmargins(engine, domains, the_plan, quiet_rng(seed), trace=trace)
        assert (got.lo, got.hi) == reference_randmargins(idx, domains, the_plan,
                                                         quiet_rng(seed)), seed
        deep += sum(t.block_size > t_plan.ip_size and t.real_points > 0
                    for t, t_plan in zip(trace, the_plan.rounds, strict=True))
        padded += sum(0 < t.real_points < t_plan.ip_size
                      for t, t_plan in zip(trace, the_plan.rounds, strict=True))
    assert deep >= 50 and padded >= 20  # both situations the test is about occur often


def test_every_window_is_ranks_n_minus_delta_to_n():
    """The engine is asked for ranks [N_t − Δ, N_t) of the remaining set in every round."""
    deep = 0
    for seed in range(30):
        X, domains, the_plan = _small_case(seed)
        engine = RecordingEngine([d.encode(X[:, j]) for j, d in enumerate(domains)])
        trace = []
        run_randmargins(engine, domains, the_plan, quiet_rng(seed), trace=trace)
        expected = [(r.axis, r.side, t.block_size, r.ip_size)
                    for r, t in zip(the_plan.rounds, trace, strict=True)]
        assert engine.calls == expected
        deep += sum(t.block_size > r.ip_size for r, t in zip(the_plan.rounds, trace, strict=True))
    assert deep >= 10  # N_t > Δ: the first and the last Δ points of B_t differ
