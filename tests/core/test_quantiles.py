"""Private quantiles (dprect/core/quantiles.py; docs/privacy.md §11a): the law, its
privacy ratio, the exact sampler against the law (with power), monotonicity, ties, the
rank bound, the independent check."""

from __future__ import annotations

import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dprect.core import guarantee_check
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import GuaranteeCheckError, check_quantiles_plan
from dprect.core.quantiles import (
    QuantilePlan,
    as_quantile,
    bin_values,
    draws,
    plan_quantiles,
    quantile_law,
    quantile_statistics,
    rank_error,
    release_quantiles,
)
from dprect.core.randomness import RandomSource

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")


def _point_law(values: np.ndarray, plan: QuantilePlan, j: int) -> np.ndarray:
    """The law of draw j on every grid point (a small grid: bits = 1, 8,192 bins)."""
    p = quantile_law(quantile_statistics(values, plan), plan, j)
    per_point = p.probabilities() / p.sizes.astype(float)
    return np.repeat(per_point, p.sizes.astype(np.int64))


def test_bad_input_is_refused() -> None:
    for q in (0, 1, -0.5, 1.5, "x", float("nan")):
        with pytest.raises(ParameterError):
            as_quantile(q)  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        plan_quantiles([], 1.0)
    with pytest.raises(ParameterError):
        plan_quantiles([0.5], 0.0)
    with pytest.raises(ParameterError):
        plan_quantiles([0.5], 1.0, grid="binary", resolution=21)
    assert as_quantile(0.1) == Fraction(1, 10)


def test_each_draw_is_epsilon_each_dp_and_not_half() -> None:
    """Every neighbour (one row added anywhere) moves every bin's probability by at most
    e^{ε_each}; some by more than e^{ε_each/2} (a check charging half would fail)."""
    plan = plan_quantiles([0.25, 0.5, 0.9], 3.0, grid="binary", resolution=1)
    base = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 13.0, 100.0])
    worst = 0.0
    for j in range(3):
        p = _point_law(base, plan, j)
        for extra in (-1e9, 0.5, 2.0, 4.0, 13.0, 50.0, 1e12):
            q = _point_law(np.append(base, extra), plan, j)
            worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(q)))))
    assert worst <= plan.epsilon_each * (1 + 1e-9)
    assert worst > plan.epsilon_each / 2


def test_each_draw_is_drawn_at_its_quantiles_sensitivity() -> None:
    """The rank score of q moves by at most max(q, 1 − q) row (Lemma Q1), and each draw's
    rate is set by it: the median's law uses nearly all of ε_each (a rate set for a
    sensitivity of 1 row spends half of it) and the p10's well above its half, never
    more than ε_each — on additions and removals of one row."""
    qs = [0.1, 0.5]
    plan = plan_quantiles(qs, 2.0, grid="binary", resolution=1)
    assert [float(2 * c * q.denominator) for c, q in zip(plan.rates, plan.quantiles,
                                                          strict=True)] \
        == pytest.approx([plan.epsilon_each / 0.9, plan.epsilon_each / 0.5])
    base = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 13.0, 100.0])
    worst = []
    for j in range(len(qs)):
        p = _point_law(base, plan, j)
        near = [np.append(base, e) for e in (-1e9, 0.5, 2.0, 4.0, 13.0, 50.0, 1e12)] \
            + [np.delete(base, k) for k in range(len(base))]
        worst.append(max(float(np.max(np.abs(np.log(p) - np.log(_point_law(x, plan, j)))))
                         for x in near))
    assert max(worst) <= plan.epsilon_each * (1 + 1e-9)
    assert worst[0] > 0.7 * plan.epsilon_each
    assert worst[1] > 0.9 * plan.epsilon_each


@pytest.mark.parametrize(("grid", "resolution"), [("binary", 1), ("decimal", 2)])
def test_sampler_follows_the_law_with_power(grid: str, resolution: int) -> None:
    """The exact sampler's draws against the law (χ² over pieces), and the same draws
    against the law at a 1.5× ε, which the test must reject (power)."""
    plan = plan_quantiles([0.3], 6.0, grid=grid, resolution=resolution, centre=False)
    values = np.array([1.0, 1.0, 1.5, 2.0, 3.0, 3.0, 3.0, 7.0, 9.0, 30.0])
    st = quantile_statistics(values, plan)
    pieces = quantile_law(st, plan, 0)
    rng = RandomSource(7)
    n = 4000
    idx = np.array([draws(st, plan, rng)[0][0] for _ in range(n)])
    piece = np.searchsorted(pieces.starts.astype(np.int64), idx, side="right") - 1
    observed = np.bincount(piece, minlength=len(pieces.sizes))

    def pvalue(probs: np.ndarray) -> float:
        big = probs * n >= 5
        obs = np.append(observed[big], observed[~big].sum())
        exp = np.append(probs[big] * n, probs[~big].sum() * n)
        keep = exp > 0
        return float(stats.chisquare(obs[keep], exp[keep] * obs.sum() / exp[keep].sum()).pvalue)

    assert pvalue(pieces.probabilities()) > 1e-4
    wrong = dataclasses.replace(plan, epsilon_each=plan.epsilon_each * 1.5)
    assert pvalue(quantile_law(st, wrong, 0).probabilities()) < 1e-6


def test_released_quantiles_are_monotone_and_accurate() -> None:
    rng = np.random.default_rng(3)
    x = np.sort(rng.lognormal(3, 2, 20000))
    plan = plan_quantiles([0.9, 0.1, 0.5, 0.25], 1.0)
    st = quantile_statistics(x, plan)
    src = RandomSource(11)
    for _ in range(20):
        got = release_quantiles(st, plan, src)
        assert np.all(np.diff(got) >= 0)
        for v, q in zip(got, plan.quantiles, strict=True):
            assert rank_error(x, v, float(q)) <= plan.rank_bound(1e-6) / len(x)


def test_close_quantiles_never_cross() -> None:
    """Three close quantiles on a small, noisy cell: independent draws cross often, the
    released values never do (the sort)."""
    x = np.arange(1.0, 301.0)
    plan = plan_quantiles([0.49, 0.5, 0.51], 0.9)
    st = quantile_statistics(x, plan)
    src = RandomSource(4)
    for _ in range(50):
        assert np.all(np.diff(release_quantiles(st, plan, src)) >= 0)


def test_ties_diffprivlib_107() -> None:
    """800,000 copies of 65,000 and 200,000 uniform in [0, 500,000]: no crash, and the
    p10 and the median are 65,000 exactly (a rank inside its run of ties), the p90 within
    the rank bound."""
    rng = np.random.default_rng(107)
    x = np.sort(np.concatenate([np.full(800_000, 65_000.0), rng.uniform(0, 500_000, 200_000)]))
    plan = plan_quantiles([0.1, 0.5, 0.9], 1.0)
    st = quantile_statistics(x, plan)
    src = RandomSource(5)
    for _ in range(5):
        p10, med, p90 = release_quantiles(st, plan, src)
        assert p10 == med == 65_000.0
        assert rank_error(x, p90, 0.9) <= plan.rank_bound(1e-6) / len(x)


def test_rank_bound_holds_on_the_exact_law() -> None:
    """P(bad > T) from the exact law stays below β/m at T = (2/ε_each)·ln(m·M/β) and
    is not negligible at T/4 (the table exercises the tail)."""
    beta = 1e-3
    plan = plan_quantiles([0.5], 0.05, grid="binary", resolution=1)
    x = np.arange(1, 2001, dtype=float)  # 2,000 rows over ~11 binades, 2 bins each
    pieces = quantile_law(quantile_statistics(x, plan), plan, 0)
    bad = (pieces.depths.max() - pieces.depths) / 2  # b = 2: depths in half rows
    probs = pieces.probabilities()
    t = plan.rank_bound(beta)
    assert probs[bad > t].sum() <= beta
    assert probs[bad > t / 4].sum() > beta * 1e-6  # the bound is not vacuous here


def test_the_score_is_the_released_values_rank_error() -> None:
    """b·bad(i)/(b·n) equals rank_error(x, v_i, q) for every bin's value v_i, on data with
    ties on both sides of zero, at bin values (integers) and inside bins (decimals)."""
    rng = np.random.default_rng(4)
    x = np.sort(np.concatenate([np.full(50, -2.0), np.full(30, 0.0), np.full(40, 7.0),
                                rng.integers(-40, 40, 200).astype(float),
                                np.round(rng.normal(0, 20, 200), 2)]))
    for (grid, res), q in itertools.product((("binary", 6), ("decimal", 2)),
                                           (0.1, 0.37, 0.5, 0.9)):
        plan = plan_quantiles([q], 1.0, grid=grid, resolution=res)
        pieces = quantile_law(quantile_statistics(x, plan), plan, 0)
        b = plan.quantiles[0].denominator
        bad = (pieces.depths.max() - pieces.depths) / (b * len(x))
        # one bin of every piece: its first
        values = bin_values(plan, pieces.starts.astype(np.int64))
        finite = np.isfinite(values)
        got = np.array([rank_error(x, v, q) for v in values[finite]])
        np.testing.assert_allclose(bad[finite], got, atol=1e-12)


def test_negative_ties_are_released_exactly() -> None:
    """A median inside a run of −2 (the bin's value on the negative side is its largest
    float, −2 itself): released exactly."""
    x = np.sort(np.concatenate([np.full(3000, -2.0), np.arange(-1000.0, -500.0),
                                np.arange(500.0, 1000.0)]))
    plan = plan_quantiles([0.5], 1.0)
    st = quantile_statistics(x, plan)
    src = RandomSource(2)
    assert all(release_quantiles(st, plan, src)[0] == -2.0 for _ in range(10))


def test_empty_group_draws_without_error() -> None:
    plan = plan_quantiles([0.5], 1.0)
    got = release_quantiles(quantile_statistics(np.zeros(0), plan), plan,
                            RandomSource(1))
    assert got.shape == (1,) and math.isfinite(got[0])


def test_check_rederives_and_refuses_wrong_constants(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_quantiles([0.1, 0.5, 0.9], 1.0)
    assert plan.check is not None and plan.check.epsilon <= 1.0
    # a rate 1% too high (ε_each raised): refused
    with pytest.raises(GuaranteeCheckError):
        check_quantiles_plan(dataclasses.replace(plan, epsilon_each=plan.epsilon_each * 1.01))
    # the sampler's rate without the 1/b of the rational quantile (c = ε/2): refused
    no_b = type("P", (), {"quantiles": plan.quantiles, "epsilon": 1.0,
                          "neighbouring": "add-remove", "columns": 1, "counted": False,
                          "centred": False,
                          "rates": tuple(Fraction(plan.epsilon_each) / 2
                                         for _ in plan.quantiles)})()
    with pytest.raises(GuaranteeCheckError):
        check_quantiles_plan(no_b)
    # a plan without a count (no centre; the binary grid) is its m draws alone, each
    # 2·c_j·b_j: the check re-derives the whole ε and refuses ε_each 1% too high
    for whole in (plan_quantiles([0.1, 0.5, 0.9], 1.0, centre=False),
                  plan_quantiles([0.1, 0.5, 0.9], 1.0, grid="binary")):
        assert not whole.counted and whole.check is not None
        assert 0.99 < whole.check.epsilon <= 1.0
        with pytest.raises(GuaranteeCheckError):
            check_quantiles_plan(dataclasses.replace(whole,
                                                     epsilon_each=whole.epsilon_each * 1.01))
    # rates set for a score of sensitivity min(q, 1 − q) (the p10's at a tenth of a row,
    # 9 times the product's): refused, as is one at 1/2 row for every quantile (the
    # median's sensitivity given to the p10 and p90)
    for units in (lambda q: min(q.numerator, q.denominator - q.numerator),
                  lambda q: Fraction(q.denominator, 2)):
        low = type("P", (), {"quantiles": plan.quantiles, "epsilon": 1.0,
                             "neighbouring": "add-remove", "columns": 1, "counted": False,
                             "centred": False,
                             "rates": tuple(Fraction(plan.epsilon_each) / (2 * units(q))
                                            for q in plan.quantiles)})()
        with pytest.raises(GuaranteeCheckError):
            check_quantiles_plan(low)
    # the check's own sensitivity constant doubled: the same plan is refused
    monkeypatch.setattr(guarantee_check, "QUANTILE_SENSITIVITY", 2)
    with pytest.raises(GuaranteeCheckError):
        check_quantiles_plan(plan)


def test_groups_beyond_int64_depths_draw_exactly() -> None:
    """b·n ≥ 2^62 (q = 1/10, 2^60 rows in one bin): the depths are exact Python integers
    and the draws land where the rank error is 0: the p10 on 3, the median (rank 2^60, the
    boundary between the two runs) on any value in [3, 5]."""
    plan = plan_quantiles([0.1, 0.5], 1.0)
    st = quantile_statistics(np.array([3.0, 5.0]), plan)
    big = dataclasses.replace(st, counts=st.counts * (1 << 60), at_value=st.at_value * (1 << 60))
    got = release_quantiles(big, plan, RandomSource(3))
    assert got[0] == 3.0 and 3.0 <= got[1] <= 5.0
