"""The interior-point mechanism: exact distribution, failure bound, Δ, stability, privacy."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import chisquare

from dprect import ParameterError, RandomSource, interior_point, interior_point_size
from dprect.audit import audit_samples, clopper_pearson
from dprect.interior_point import interior_point_failure_bound, interior_point_pieces


@pytest.fixture
def rng():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=12345)


def exact_point_probs(values, epsilon, m):
    pieces = interior_point_pieces(np.asarray(values, dtype=np.uint64), epsilon=epsilon,
                                   grid_size=m)
    out = np.zeros(m)
    for s, n, p in zip(pieces.starts.tolist(), pieces.sizes.tolist(), pieces.probabilities(),
                       strict=True):
        out[s:s + n] = p / n
    return out


def brute_force_probs(values, epsilon, m):
    """Straight from the definition: P(y) ∝ exp(ε·min(#{v ≤ y}, #{v ≥ y})/2)."""
    v = np.asarray(values)
    depth = np.array([min((v <= y).sum(), (v >= y).sum()) for y in range(m)], dtype=float)
    w = np.exp(epsilon * depth / 2)
    return w / w.sum()


@pytest.mark.parametrize("values,eps,m", [
    ([3, 3, 3, 7, 9], 1.0, 12), ([0], 0.5, 2), ([5, 5], 2.0, 6), ([0, 11, 4, 4, 8, 1], 0.7, 12),
    ([10, 10, 10, 10], 3.0, 11),
])
def test_pieces_equal_definition(values, eps, m):
    assert np.allclose(exact_point_probs(values, eps, m), brute_force_probs(values, eps, m),
                       rtol=1e-12, atol=0)


def test_sampled_distribution_matches_exact_chi_square(rng):
    values, eps, m, n = [2, 2, 5, 6, 6, 6, 9], 1.0, 12, 30_000
    draws = np.array([interior_point(values, epsilon=eps, grid_size=m, rng=rng)
                      for _ in range(n)])
    observed = np.bincount(draws, minlength=m)
    expected = exact_point_probs(values, eps, m) * n
    assert chisquare(observed, expected).pvalue > 1e-3
    # power: the same sample is clearly rejected against the law at a wrong ε
    for wrong in (0.7 * eps, 1.4 * eps):
        wrong_expected = exact_point_probs(values, wrong, m) * n
        assert chisquare(observed, wrong_expected).pvalue < 1e-6


def test_failure_bound_holds_exactly_on_many_inputs():
    gen = np.random.default_rng(7)
    for _ in range(300):
        m = int(gen.integers(2, 200))
        eps = float(gen.uniform(0.1, 3))
        size = int(gen.integers(1, 40))
        values = gen.integers(0, m, size=size)
        probs = exact_point_probs(values, eps, m)
        bound = interior_point_failure_bound(eps, size, m)
        assert probs[values.max() + 1:].sum() <= bound * (1 + 1e-9)
        assert probs[:values.min()].sum() <= bound * (1 + 1e-9)


def test_failure_rate_sampled_stays_under_bound(rng):
    eps, beta, m = 1.0, 0.2, 64
    size = interior_point_size(eps, beta, m)
    values = np.arange(size)  # distinct values packed at the bottom: the worst for hi failure
    n = 20_000
    fails = sum(interior_point(values, epsilon=eps, grid_size=m, rng=rng) > size - 1
                for _ in range(n))
    lower, _ = clopper_pearson(fails, n, 1e-4)
    assert lower <= beta
    exact = exact_point_probs(values, eps, m)[size:].sum()
    low, high = clopper_pearson(fails, n, 1e-4)
    assert low <= exact <= high  # and the sampler hits the exact failure probability


@pytest.mark.parametrize("eps,beta,m", [(1.0, 1e-6, 2**32), (0.1, 0.01, 2), (2.5, 0.3, 100),
                                        (1.0, 1e-9, 2**64), (0.01, 1e-5, 1000)])
def test_interior_point_size_is_smallest(eps, beta, m):
    size = interior_point_size(eps, beta, m)
    assert size % 2 == 1
    assert interior_point_failure_bound(eps, size, m) <= beta
    if size > 1:
        assert interior_point_failure_bound(eps, size - 1, m) > beta
    assert abs(size - (4 / eps) * math.log(m / beta)) <= 2 + 1e-9 * size


def test_stable_for_large_inputs_and_grids(rng):
    gen = np.random.default_rng(3)
    big = 2**64
    values = gen.integers(0, 2**63, size=1_000_000, dtype=np.uint64) * np.uint64(2)
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # underflow is benign
        for eps in (0.01, 1.0, 50.0):
            p = interior_point(values, epsilon=eps, grid_size=big, rng=rng)
            assert 0 <= p < big
            if eps >= 1.0:
                assert int(values.min()) <= p <= int(values.max())
        clustered = np.full(1_000_000, 2**64 - 5, dtype=np.uint64)
        clustered[:10] = 3
        p = interior_point(clustered, epsilon=1.0, grid_size=big, rng=rng)
        assert p == 2**64 - 5


@pytest.mark.parametrize("kwargs,match", [
    ({"epsilon": 0.0}, "epsilon"), ({"epsilon": -1.0}, "epsilon"), ({"epsilon": math.nan},
                                                                     "epsilon"),
    ({"grid_size": 1}, "grid_size"), ({"grid_size": 2**64 + 1}, "grid_size"),
    ({"values": []}, "values"), ({"values": [[1, 2]]}, "values"), ({"values": [-1]}, "values"),
    ({"values": [64]}, "values"), ({"values": [0.5]}, "values"),
])
def test_bad_parameters(kwargs, match, rng):
    args = {"values": [1, 2, 3], "epsilon": 1.0, "grid_size": 64} | kwargs
    with pytest.raises(ParameterError, match=match):
        interior_point(args.pop("values"), rng=rng, **args)


@pytest.mark.parametrize("args,match", [((0, 0.1, 10), "epsilon"), ((1, 0, 10), "beta"),
                                        ((1, 1, 10), "beta"), ((1, 0.1, 1), "grid_size")])
def test_bad_size_parameters(args, match):
    with pytest.raises(ParameterError, match=match):
        interior_point_size(*args)


# -- privacy, tested empirically ----------------------------------------------------------
# Replace-one neighbours found by exhaustive search over small grids (see docs/privacy.md):
# S = {0, 0} and S' = {0, 31} on a 32-point grid. The worst event {0} has exact privacy loss
# ln(32·e^ε/(e^ε + 31)) = 0.948·ε at ε = 1, so a sound and powerful audit lands in
# (0.8ε, ε].
NEIGHBOURS = (np.array([0, 0]), np.array([0, 31]), 32)


def _draws(values, eps, m, n, rng):
    return [interior_point(values, epsilon=eps, grid_size=m, rng=rng) for _ in range(n)]


@pytest.mark.slow
def test_ip_empirical_epsilon_is_within_claim_and_test_has_power(rng):
    s, s_prime, m = NEIGHBOURS
    eps = 1.0
    exact = exact_point_probs(s, eps, m)[0] / exact_point_probs(s_prime, eps, m)[0]
    assert 0.9 * eps < math.log(exact) <= eps
    n = 100_000
    result = audit_samples(_draws(s, eps, m, n, rng), _draws(s_prime, eps, m, n, rng),
                           confidence=0.95)
    assert result.epsilon_lower <= eps
    assert result.epsilon_lower > 0.8 * eps, result


def test_ip_audit_detects_a_mechanism_run_at_twice_its_claim(rng):
    s, s_prime, m = NEIGHBOURS
    claimed = 1.0
    n = 20_000
    result = audit_samples(_draws(s, 2 * claimed, m, n, rng),
                           _draws(s_prime, 2 * claimed, m, n, rng), confidence=0.95)
    assert result.epsilon_lower > claimed
