"""The randomness source: OS entropy by default, opt-in seeds, exact samplers."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binomtest, chisquare

from dprect import ParameterError, RandomSource


def seeded(seed):
    with pytest.warns(UserWarning, match="NOT private"):
        return RandomSource(seed=seed)


def test_default_source_is_os_entropy_and_unseeded():
    import random

    src = RandomSource()
    assert src.seeded is False
    assert isinstance(src._gen, random.SystemRandom)
    draws = {src.randbelow(2**64) for _ in range(20)}
    assert len(draws) == 20


def test_seed_reproduces_and_warns():
    a, b = seeded(5), seeded(5)
    assert [a.randbelow(1000) for _ in range(50)] == [b.randbelow(1000) for _ in range(50)]
    assert a.seeded


@pytest.mark.parametrize("bad", [-1, 1.5, "7", True])
def test_bad_seed(bad):
    with pytest.raises(ParameterError, match="seed"):
        RandomSource(seed=bad)


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_frequency(gamma):
    src = seeded(11)
    n = 20_000
    hits = sum(src.bernoulli_exp(gamma) for _ in range(n))
    assert binomtest(hits, n, math.exp(-float(gamma))).pvalue > 1e-3


def test_geometric_exp_matches_law_with_power():
    src = seeded(12)
    s, t = 1, 3  # ratio e^{-1/3}
    n = 20_000
    draws = np.array([src.geometric_exp(s, t) for _ in range(n)])
    cells = 15
    obs = np.bincount(np.minimum(draws, cells), minlength=cells + 1)
    r = math.exp(-s / t)
    probs = [(1 - r) * r**g for g in range(cells)] + [r**cells]
    assert chisquare(obs, np.array(probs) * n).pvalue > 1e-3
    r2 = math.exp(-1 / 2.5)
    wrong = [(1 - r2) * r2**g for g in range(cells)] + [r2**cells]
    assert chisquare(obs, np.array(wrong) * n).pvalue < 1e-6


def test_randbelow_handles_huge_ranges():
    src = seeded(3)
    draws = [src.randbelow(2**64 - 2**53 + 2) for _ in range(1000)]
    assert max(draws) > 2**63 and min(draws) >= 0


def test_randbits_range_reproducibility_and_uniformity():
    a, b = seeded(9), seeded(9)
    draws = [a.randbits(3) for _ in range(16_000)]
    assert draws[:50] == [b.randbits(3) for _ in range(50)]
    assert min(draws) == 0 and max(draws) == 7
    assert all(0 <= a.randbits(200) < 2**200 for _ in range(100))
    counts = np.bincount(draws, minlength=8)
    assert chisquare(counts).pvalue > 1e-4  # false failure probability 1e-4
    # power: the same test rejects bits whose top bit is 1 with probability 0.55
    skew = np.array([d | 4 if d < 4 and i % 10 == 0 else d for i, d in enumerate(draws)])
    assert chisquare(np.bincount(skew, minlength=8)).pvalue < 1e-4
    with pytest.raises(ValueError):
        a.randbits(0)
