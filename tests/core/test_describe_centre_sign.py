"""Describe's centre as sign × magnitude (issue #41; docs/privacy.md §11, Lemma D2): the
folded histogram, the sign draw's exact law, the row need of a centre drawn at ε_c in two
draws, the guarantee check's entry for the sign draw, and a small symmetric column."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from describe_reference import centre_outside, draw_centre
from scipy.stats import chisquare

from dprect.core import aggregates, tail_bounds
from dprect.core.aggregates import plan_describe
from dprect.core.describe_stats import centre_counts
from dprect.core.domains import FloatBins
from dprect.core.guarantee_check import GuaranteeCheckError, check_describe_plan
from dprect.core.interior_point import sample_unimodal
from dprect.core.randomness import RandomSource

GRID = FloatBins(tail_bounds.CENTRE_BITS)
HALF = GRID.size >> 1


def seeded(seed: int) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=seed)


def test_the_folded_histogram_is_the_histogram_of_the_magnitudes():
    """FloatBins' encode is symmetric (key(−x) = 2H − 1 − key(x), −0.0 on +0.0's bin),
    so the signed histogram folded is |x|'s, bin for bin — zeros of both signs,
    subnormals, the largest floats and the infinities included; the negatives counted are
    the rows x < 0 (−0.0 is not one)."""
    gen = np.random.default_rng(1)
    tiny = np.finfo(np.float64).smallest_subnormal
    big = np.finfo(np.float64).max
    x = np.concatenate([gen.normal(0.0, 1.0, 300), gen.lognormal(0.0, 30.0, 50)
                        * gen.choice([-1.0, 1.0], 50), [0.0, -0.0, -0.0, tiny, -tiny,
                                                        big, -big, np.inf, -np.inf]])
    negative, mags, counts = tail_bounds.magnitude_counts(*centre_counts(x))
    want_keys, want_counts = np.unique(GRID.encode(np.abs(x)) - HALF, return_counts=True)
    assert negative == int(np.count_nonzero(x < 0))
    assert mags.tolist() == want_keys.tolist()
    assert counts.tolist() == want_counts.tolist()
    for v in (1.0, 3.5e-300, tiny, big, np.inf):
        assert GRID.index_of(-v) == 2 * HALF - 1 - GRID.index_of(v)
    assert GRID.index_of(-0.0) == GRID.index_of(0.0) == HALF


def test_the_product_draws_the_references_centre_for_a_seed():
    """The product's centre from the folded histogram equals, draw for draw, the
    reference's from the rows (tests/describe_reference.py: its own share 1/5, the sign
    first, then |x|'s median): a wrong ``SIGN_SHARE`` or draw order disagrees. A centre
    of magnitude 0 is +0.0 on either sign."""
    gen = np.random.default_rng(2)
    p = plan_describe(1.0, 1)
    for t, x in enumerate([gen.normal(0.0, 1.0, 40), gen.normal(-3.0, 1.0, 25),
                           np.zeros(30), np.concatenate([np.zeros(20), -np.ones(3)]),
                           gen.standard_cauchy(15)]):
        for tier in p.tiers[:-1]:
            a, b = seeded(t), seeded(t)
            for _ in range(5):
                got = tail_bounds.draw_centre_from_counts(
                    *centre_counts(x), tier.sign_rate, tier.magnitude_rate, a)
                want = draw_centre(x, tier.centre_rate, b)
                assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want)
    rng = seeded(0)
    zeros = [tail_bounds.draw_centre_from_counts(*centre_counts(np.zeros(9)),
                                                 Fraction(1, 100), Fraction(10), rng)
             for _ in range(20)]
    assert all(c == 0.0 and math.copysign(1.0, c) == 1.0 for c in zeros)
    with pytest.raises(Exception, match="strictly increasing"):
        tail_bounds.draw_centre_from_counts(np.array([5, 3]), np.array([1, 1]),
                                            Fraction(1), Fraction(1), seeded(0))


def _signs(neg: int, pos: int, rates: tuple[Fraction, Fraction], draws: int) -> int:
    """How many of ``draws`` centres are negative on a histogram of ``neg`` rows at −1
    and ``pos`` at +1."""
    x = np.concatenate([-np.ones(neg), np.ones(pos)])
    keys, counts = centre_counts(x)
    rng = seeded(11)
    return sum(tail_bounds.draw_centre_from_counts(keys, counts, *rates, rng) < 0
               for _ in range(draws))


def test_the_sign_draw_has_its_exact_law():
    """The sign class is drawn with P(−) = 1/(1 + e^{(ε₁/2)·(#{x ≥ 0} − #{x < 0})}),
    ε₁ = ε_c/5 (χ² on 4,000 draws, p > 10⁻³). Power: the same draws reject the law of
    the share before (1/4), of the nearest other small share (1/6), of 1/2 and of a sign
    drawn at the whole ε_c at p < 10⁻⁶ (8 more rows on one side than the other: near
    where a share's law moves most with it; 1/4 is ~8 standard errors away)."""
    eps_c = Fraction(2)
    tier_rates = tail_bounds.centre_rates(eps_c / 2)
    assert tier_rates == (Fraction(1, 5), Fraction(4, 5))
    neg, pos, draws = 2, 10, 4000
    got = _signs(neg, pos, tier_rates, draws)

    def pvalue(share: Fraction) -> float:
        p_neg = 1.0 / (1.0 + math.exp(float(eps_c * share / 2) * (pos - neg)))
        return float(chisquare([got, draws - got],
                               [draws * p_neg, draws * (1 - p_neg)]).pvalue)

    assert pvalue(Fraction(1, 5)) > 1e-3
    assert pvalue(Fraction(1, 4)) < 1e-6
    assert pvalue(Fraction(1, 6)) < 1e-6
    assert pvalue(Fraction(1, 2)) < 1e-6
    assert pvalue(Fraction(1)) < 1e-6


def test_the_sign_draw_is_exact_on_a_two_point_law():
    """The sign draw is the exact unimodal sampler on two points of depths (#neg, #pos):
    with equal counts the two classes are equally likely, exactly (the same seeded bits
    decide either way)."""
    from dprect.core.interior_point import Pieces
    classes = Pieces(np.array([0, 1], dtype=np.uint64), np.ones(2, dtype=np.uint64),
                     np.array([7, 7], dtype=np.int64), 1.0, 2)
    rng = seeded(3)
    got = sum(sample_unimodal(classes, Fraction(1, 8), rng) for _ in range(2000))
    assert chisquare([got, 2000 - got]).pvalue > 1e-3


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_the_row_need_holds_and_is_tight_for_a_magnitude_at_four_fifths(epsilon):
    """centre_rows_at(ε_c): on r rows the centre (the reference's exact law, its own
    share 1/5) misses the data's magnitudes or sign with probability ≤ β, on data in two
    bins (where the bound h·e^{−ε₂n/4} is nearly tight), wide data and one-signed data;
    on 0.8·r rows it does not (P > β). A threshold computed for a median at the whole
    ε_c (the thresholds before the sign draw: 4/5 of r), a wrong ``CENTRE_ROWS_FACTOR``
    or ``SIGN_SHARE`` fails here (the share before, 1/4, needs 16/15 of r: its 0.8·r
    fails too); at this β the magnitude's term binds, so a wrong ``SIGN_ROWS_FACTOR`` is
    the next test's."""
    p = plan_describe(epsilon, 1)
    for tier in p.tiers[:-1]:
        r = aggregates.centre_rows_at(tier.centre_epsilon, p.beta)
        eps2 = tier.centre_epsilon * 4 / 5
        h = 1 << (11 + tail_bounds.CENTRE_BITS)
        assert r == math.ceil(max(4 / eps2 * math.log(2 * h / p.beta),
                                  2 / (tier.centre_epsilon / 5) * math.log(2 / p.beta)))
        gen = np.random.default_rng(5)
        for x in (two_bins(r), gen.lognormal(0.0, 8.0, r) * gen.choice([-1.0, 1.0], r),
                  -gen.uniform(1e9, 1e9 + 3e7, r)):
            assert centre_outside(x, tier.centre_epsilon) <= p.beta
        assert centre_outside(two_bins(int(0.8 * r)), tier.centre_epsilon) > p.beta
        # the plan's least counts are that row need plus the count's error
        assert p.count_error is not None
        assert tier.min_count == math.ceil(p.count_error + r)


def test_the_row_need_holds_and_is_tight_where_the_sign_binds():
    """Below β = 2/h = 2^−14 the sign's term (2/ε₁)·ln(2/β) is the larger
    (docs/privacy.md §11, the centre): at β = 10⁻⁶ it sets r(ε_c) for every split with an
    own centre. On r one-signed rows — where the sign draw can miss: the class without
    rows — the centre misses with probability ≤ β on the exact law, and on 0.8·r it
    misses with more. The test above runs at the default β, where the magnitude's term
    binds, so a wrong ``SIGN_ROWS_FACTOR`` (or the sign's ln(2/β)) is seen here only."""
    beta = 1e-6
    p = plan_describe(1.0, 1, beta=beta)
    h = 1 << (11 + tail_bounds.CENTRE_BITS)
    for tier in p.tiers[:-1]:
        eps1 = tier.centre_epsilon / 5
        sign = 2 / eps1 * math.log(2 / beta)
        assert sign > 4 / (tier.centre_epsilon - eps1) * math.log(2 * h / beta)
        r = aggregates.centre_rows_at(tier.centre_epsilon, beta)
        assert r == math.ceil(sign)
        gen = np.random.default_rng(7)
        assert centre_outside(-gen.uniform(1e9, 1e9 + 3e7, r), tier.centre_epsilon) <= beta
        assert centre_outside(-gen.uniform(1e9, 1e9 + 3e7, int(0.8 * r)),
                              tier.centre_epsilon) > beta


def two_bins(n: int) -> np.ndarray:
    """n rows, half in each of two bins of the centre grid: the median's depth is n/2
    and every bin outside has depth 0 (the bound h·e^{−ε₂n/4} is nearly tight)."""
    return np.repeat([1000.5, 1100.5], [n // 2, n - n // 2])


def test_the_check_re_derives_the_sign_draws_share():
    """The guarantee check reads the sign and magnitude rates the sampler is given and
    states each draw's ε (the sign's ε_c/5); a sign drawn at 1% more is refused, and so
    is an own centre that draws one of the two and not the other."""
    p = plan_describe(1.0, 2)
    report = check_describe_plan(p)
    first = report.details["per_column"]
    assert first["centre: sign"] == pytest.approx(p.centre_epsilon / 5, rel=1e-9)
    assert first["centre: magnitude"] == pytest.approx(p.centre_epsilon * 4 / 5, rel=1e-9)
    for split, tier in zip(report.details["splits_by_released_count"],
                           [*p.tiers, p.pooled], strict=True):
        assert split["centre: sign"] == pytest.approx(tier.centre_epsilon / 5, rel=1e-9)
    # the rates the samplers are given (a split's ``sign_rate`` / ``magnitude_rate``),
    # patched where the splits read them; the row needs keep the true split
    def more(tier: aggregates.Tier) -> tuple[Fraction, Fraction]:
        sign, magnitude = tail_bounds.centre_rates(tier.centre_rate)
        return sign * Fraction(101, 100), magnitude

    def unsigned(tier: aggregates.Tier) -> tuple[Fraction, Fraction]:
        return Fraction(0), tier.centre_rate

    for patched in (more, unsigned):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(aggregates.Tier, "sign_rate",
                       property(lambda t, f=patched: f(t)[0]))  # type: ignore[misc]
            mp.setattr(aggregates.Tier, "magnitude_rate",
                       property(lambda t, f=patched: f(t)[1]))  # type: ignore[misc]
            with pytest.raises(GuaranteeCheckError):
                plan_describe(1.0, 2)


def test_a_small_symmetric_column_gets_a_centre_within_its_magnitudes():
    """N(0, 1), n = 500, ε = 1 (a split with an own centre, ε_c = 0.4): over 40 seeded
    runs of the cell's count then centre, every centre's magnitude lies between the bins
    of the data's smallest and largest |x| (the exact law misses with probability < 10⁻⁴
    a run). Power: the float-order median's law (the centre before issue #41's fix) on
    the same runs lands below the data's magnitudes (~2^−56 … 2^−799) in most of them."""
    x = np.random.default_rng(41).normal(0.0, 1.0, 500)
    p = plan_describe(1.0, 1, statistics=("count", "sum", "mean"))
    a = np.abs(x)
    low = GRID.lower_value(GRID.index_of(float(a.min())))
    inside_new = inside_old = 0
    old_pieces = tail_bounds.centre_pieces(x)
    for t in range(40):
        rng = seeded(100 + t)
        noisy = aggregates._noisy_count(p, len(x), rng)
        tier = p.tiers[p.tier_index(noisy)]
        assert not tier.anchored
        c = tail_bounds.draw_centre_from_counts(*centre_counts(x), tier.sign_rate,
                                                tier.magnitude_rate, rng)
        inside_new += low <= abs(c) <= a.max()
        old = tail_bounds.centre_value(sample_unimodal(old_pieces, tier.centre_rate,
                                                       seeded(100 + t)))
        inside_old += low <= abs(old) <= a.max()
    assert centre_outside(x, p.tiers[3].centre_epsilon) < 1e-4
    assert inside_new == 40
    assert inside_old <= 10
