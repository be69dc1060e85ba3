"""Margin laws: exact ρ, exact samplers (chi-square with power), means."""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chisquare

from dprect import LaplaceLaw, ParameterError, RandomSource, StaircaseLaw


@pytest.fixture
def rng():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=99)


def inf_ratio(law, r_max):
    return min(law.tail(r + law.size) / law.tail(r) for r in range(1, r_max))


@pytest.mark.parametrize("size,rho", [(1, Fraction(1, 2)), (7, Fraction(3, 4)),
                                      (50, Fraction(1, 10)), (13, Fraction(99, 100))])
def test_staircase_tail_ratio_is_exactly_rho(size, rho):
    law = StaircaseLaw(size, rho)
    for r in range(1, 20 * size):
        assert math.isclose(law.tail(r + size) / law.tail(r), float(rho), rel_tol=1e-12)
    assert law.rho <= float(rho) and math.isclose(law.rho, float(rho), rel_tol=1e-9)
    assert math.isclose(law.mean, size / (1 - float(rho)))


def test_laplace_rho_is_inf_of_tail_ratio():
    for size, beta in ((5, 0.1), (40, 1e-3), (200, 1e-6)):
        law = LaplaceLaw(size, beta)
        numeric = inf_ratio(law, law.mu + 60 * law.scale)
        assert law.rho <= numeric * (1 + 1e-12)
        assert math.isclose(law.rho, numeric, rel_tol=1e-6)
        assert math.isclose(law.rho, math.exp(-0.5), rel_tol=1e-9)  # μ ≫ 2Δ here


def test_laplace_mean_matches_tail_sum():
    law = LaplaceLaw(10, 0.05)
    direct = sum(law.tail(r) for r in range(1, law.mu + 200 * law.scale))
    assert math.isclose(law.mean, direct, rel_tol=1e-9)
    assert law.mu == math.ceil(4 * 10 * math.log(1 / 0.05))


def _pmf_from_tail(law, values):
    return np.array([law.tail(v) - law.tail(v + 1) for v in values])


def test_staircase_sampler_matches_law_with_power(rng):
    law = StaircaseLaw(3, Fraction(2, 3))
    n = 20_000
    draws = np.array([law.sample(rng) for _ in range(n)])
    assert (draws % 3 == 0).all() and draws.min() >= 3
    j = draws // 3 - 1
    cells = 12
    obs = np.bincount(np.minimum(j, cells), minlength=cells + 1)
    probs = [(2 / 3) ** k * (1 / 3) for k in range(cells)] + [(2 / 3) ** cells]
    assert chisquare(obs, np.array(probs) * n).pvalue > 1e-3
    wrong = [(0.6) ** k * 0.4 for k in range(cells)] + [0.6 ** cells]
    assert chisquare(obs, np.array(wrong) * n).pvalue < 1e-6
    # empirical tail ratio P(N >= r + Δ)/P(N >= r) ≈ ρ
    for r in (1, 4, 7):
        ratio = (draws >= r + 3).mean() / (draws >= r).mean()
        assert abs(ratio - 2 / 3) < 0.03


def test_laplace_sampler_matches_law_with_power(rng):
    law = LaplaceLaw(4, 0.2)  # μ = 26, scale 8
    n = 20_000
    draws = np.array([law.sample(rng) for _ in range(n)])
    assert draws.min() >= law.size
    edges = list(range(law.size, law.mu + 40, 3))
    def cell_probs(lw):
        p = [lw.tail(a) - lw.tail(b) for a, b in itertools.pairwise(edges)]
        return np.array([*p, lw.tail(edges[-1])])
    obs = np.array([((draws >= a) & (draws < b)).sum()
                    for a, b in itertools.pairwise(edges)]
                   + [(draws >= edges[-1]).sum()])
    assert chisquare(obs, cell_probs(law) * n).pvalue > 1e-3
    wrong = LaplaceLaw(4, 0.2)
    wrong.scale = 12  # a wider Laplace must be rejected
    assert chisquare(obs, cell_probs(wrong) * n).pvalue < 1e-6
    assert abs(draws.mean() - law.mean) < 4 * draws.std() / math.sqrt(n)


@pytest.mark.parametrize("make,match", [
    (lambda: StaircaseLaw(0, Fraction(1, 2)), "size"),
    (lambda: StaircaseLaw(3, Fraction(1)), "rho"), (lambda: StaircaseLaw(3, 0), "rho"),
    (lambda: LaplaceLaw(3, 0.0), "beta"), (lambda: LaplaceLaw(-1, 0.1), "size"),
])
def test_bad_law_parameters(make, match):
    with pytest.raises(ParameterError, match=match):
        make()


def test_law_names_and_summaries():
    staircase, laplace = StaircaseLaw(5, Fraction(3, 4)), LaplaceLaw(5, 0.01)
    assert (staircase.name, staircase.summary) == ("staircase", "staircase rho=3/4")
    assert (laplace.name, laplace.summary) == ("laplace", f"laplace mu={laplace.mu}")
    assert staircase.to_json()["law"] == staircase.name
