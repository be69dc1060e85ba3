"""The interior-point mechanism: exact distribution, failure bound, Δ, stability, privacy."""

from __future__ import annotations

import math
import warnings
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from piece_fit import pieces_fit
from scipy.stats import chisquare
from seeded_source import seeded as quiet_source

from dprect import ParameterError, RandomSource, interior_point, interior_point_size
from dprect.core.audit import audit_samples, clopper_pearson
from dprect.core.interior_point import (
    ExactSampler,
    _exp_neg_one,
    _exp_neg_table,
    interior_point_failure_bound,
    interior_point_pieces,
)


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


# -- exact sampling (issue 10, point 3) -------------------------------------------------------
class EndOfRangeSource(RandomSource):
    """Draws near the top (or bottom) of their range — a legal outcome of a uniform
    source: the first 2048 random bits are ones and the rest zeros (the lazy uniform is
    U = 1 − 2^−2048 once enough bits are read), randbelow at its top (or bottom), and the
    float uniform at its largest value 1 − 2^−53."""

    ONES = 2048

    def __init__(self, top: bool = True) -> None:
        super().__init__()  # OS entropy, never used
        self.top = top
        self.bits: list[int] = []

    def randbits(self, k):
        ones = max(0, min(k, self.ONES - sum(self.bits)))
        self.bits.append(k)
        return ((1 << ones) - 1) << (k - ones)

    def randbelow(self, n):
        return n - 1 if self.top else 0

    def uniform(self):
        return 1.0 - 2.0**-53


@pytest.mark.parametrize("size,eps,log2_prob", [(200, 1.0, -80), (41, 50.0, -1400)])
@pytest.mark.parametrize("top", [True, False])
def test_a_piece_of_probability_below_2_to_the_minus_60_is_reachable(size, eps, log2_prob, top):
    """Δ equal values at 2^63 on the 2^64 grid: the two outer pieces (depth 0) have
    probability ≈ 2^64·e^{−εΔ/2} < 2^−60 (≈ 2^−80 and 2^−1415 here), and they come last in
    the exact inverse CDF, so U = 1 − 2^−2048 must land in them (then randbelow's top or
    bottom picks the grid's last or first point). The float sampler rounds the cumulative
    weights to 1 and its uniform is at most 1 − 2^−53: it can only return the centre."""
    m, centre = 2**64, 2**63
    values = np.full(size, centre, dtype=np.uint64)
    log2_outer = 64 - eps * size / 2 / math.log(2)  # log2 of their weight / the centre's
    assert log2_outer < log2_prob < -60
    src = EndOfRangeSource(top=top)
    y = interior_point(values, epsilon=eps, grid_size=m, rng=src)
    assert y == (m - 1 if top else 0)
    assert len(src.bits) >= 2  # the first 64 bits could not decide: U was refined


def test_exp_enclosures_bracket_e_to_the_minus_n():
    for p in (128, 256):
        lo1, hi1 = _exp_neg_one(p)
        assert 0 < hi1 - lo1 <= 2
        lo, hi = _exp_neg_table(p)
        with localcontext() as ctx:
            ctx.prec = 200
            for n in (0, 1, 2, 17, 100, len(lo) - 1):
                exact = (Decimal(-n).exp() * Decimal(2) ** p)
                assert lo[n] <= exact <= hi[n], n
                assert hi[n] - lo[n] <= 8  # absolute error a few units of 2^-p


def _bucket_reference(pieces, c):
    """T_n = #grid points with ⌊c·(kmax − depth)⌋ = n, straight from the definition."""
    kmax = int(pieces.depths.max())
    out: dict[int, int] = {}
    for size, depth in zip(pieces.sizes.tolist(), pieces.depths.tolist(), strict=True):
        n = math.floor(c * (kmax - depth))
        out[n] = out.get(n, 0) + size
    return dict(sorted(out.items()))


class ScriptedBits(RandomSource):
    """Random bits from a script first, then from a seeded generator; records them."""

    def __init__(self, script, seed):
        super().__init__()
        self._gen = np.random.default_rng(seed)
        self.script = list(script)
        self.drawn: list[tuple[int, int]] = []

    def randbits(self, k):
        value = self.script.pop(0) if self.script else int.from_bytes(
            self._gen.bytes((k + 7) // 8), "big") >> (8 * ((k + 7) // 8) - k)
        self.drawn.append((k, value))
        return value

    def randbelow(self, n):
        raise AssertionError("not used by the bucket choice")


CASES = [  # values, ε, grid: few buckets, many buckets, a tail beyond the first precision
    (np.array([3, 3, 7, 9, 9, 9, 40, 41, 90]), 1.3, 128),
    (np.arange(0, 4000, 7), 0.05, 2**64),
    (np.array([5] * 30 + [2**40] * 30), 20.0, 2**64),
]


@pytest.mark.parametrize("values,eps,m", CASES)
def test_bucket_choice_is_the_exact_inverse_cdf(values, eps, m):
    """For random bits, and for bits forced to straddle every bucket boundary (so the
    first precision cannot decide), the chosen bucket j satisfies X_{j−1} ≤ U·W < X_j for
    EVERY U consistent with the bits drawn, checked at 400 digits against weights
    computed from the definition."""
    pieces = interior_point_pieces(values, epsilon=eps, grid_size=m)
    c = Fraction(eps) / 2
    ref = _bucket_reference(pieces, c)
    assert sum(ref.values()) == m
    with localcontext() as ctx:
        ctx.prec = 400
        weights = [Decimal(t) * Decimal(-n).exp() for n, t in ref.items()]
        total = sum(weights)
        cum = [Decimal(0)]
        for w in weights:
            cum.append(cum[-1] + w)
        ns = list(ref)
        # bits straddling each boundary at the first (64-bit) resolution, then random ones
        scripts = [[min(int(b / total * 2**64), 2**64 - 1)] for b in cum[1:-1]][:60]
        scripts += [[] for _ in range(200)]
        refined = 0
        for i, script in enumerate(scripts):
            src = ScriptedBits(script, seed=i)
            found, j = ExactSampler(pieces, c).choose_bucket(src)
            n = found.ns[j]
            assert found.sizes[j] == ref[n]
            if not src.drawn:  # a single bucket: nothing to choose
                assert len(ref) == 1
                continue
            u = bits = 0
            for k, value in src.drawn:
                u, bits = (u << k) | value, bits + k
            refined += len(src.drawn) > 1
            low = Decimal(u) / Decimal(2) ** bits * total
            high = Decimal(u + 1) / Decimal(2) ** bits * total
            pos = ns.index(n)
            assert cum[pos] <= low and high <= cum[pos + 1], (i, n)
        assert refined >= min(len(ref) - 1, 60) * 0.9  # the straddling scripts did refine


def _gof_pvalue(sampler, values, eps, m, n, seed):
    """Chi-square p-value of n draws of ``sampler`` against the exact piece law of the IP
    at ε (cells: pieces, the ones with expected count < 5 pooled)."""
    pieces = interior_point_pieces(values, epsilon=eps, grid_size=m)
    rng = quiet_source(seed)
    draws = np.array([sampler(values, eps, m, rng) for _ in range(n)], dtype=np.uint64)
    pvalue, expected, _ = pieces_fit(draws, pieces)
    return pvalue, expected


GOF = [  # mixed depths, wide gaps, pieces from singletons to 2^63 points
    (np.array([10, 10, 2**20, 2**30, 2**30 + 5, 2**35, 2**35, 2**39, 2**62]), 0.9, 2**64),
    (np.array([2, 2, 5, 6, 6, 6, 9]), 1.0, 12),
]


@pytest.mark.parametrize("values,eps,m", GOF)
def test_exact_sampler_goodness_of_fit_with_power(values, eps, m):
    """Level α = 1e-3: a correct sampler fails with probability 1e-3 over seeds (the seed
    is fixed, so the test is deterministic). Power: the same test, on the same number of
    draws, rejects a sampler using ε·depth/4 (i.e. ε/2), whose noncentrality parameter
    n·Σ(p′ − p)²/p is checked to be large enough for power > 1 − 1e-6."""
    from scipy.stats import chi2, ncx2

    def right(v, e, mm, rng):
        return interior_point(v, epsilon=e, grid_size=mm, rng=rng)

    def wrong(v, e, mm, rng):  # P(y) ∝ exp(ε·depth/4)
        return interior_point(v, epsilon=e / 2, grid_size=mm, rng=rng)

    n, alpha = 12_000, 1e-3
    p_right, expected = _gof_pvalue(right, values, eps, m, n, seed=11)
    assert p_right > alpha
    # power of the level-α test on these cells (noncentral χ², pooled cells as tested)
    full = interior_point_pieces(values, epsilon=eps, grid_size=m).probabilities()
    wrong_probs = interior_point_pieces(values, epsilon=eps / 2, grid_size=m).probabilities()
    small = full * n < 5
    if small.any():
        full = np.append(full[~small], full[small].sum())
        wrong_probs = np.append(wrong_probs[~small], wrong_probs[small].sum())
    assert np.allclose(full * n, expected)
    lam = n * float((((wrong_probs - full) ** 2) / full).sum())
    df = len(full) - 1
    power = 1 - ncx2.cdf(chi2.ppf(1 - alpha, df), df, lam)
    assert power > 1 - 1e-6, (lam, power)
    p_wrong, _ = _gof_pvalue(wrong, values, eps, m, n, seed=11)
    assert p_wrong < alpha


def test_virtual_pads_equal_materialised_pads():
    gen = np.random.default_rng(5)
    for seed in range(40):
        m = int(gen.choice([50, 2**32, 2**64]))
        real = gen.integers(0, min(m, 2**62), size=int(gen.integers(0, 12)), dtype=np.uint64)
        pads = int(gen.integers(1, 20))
        pad_index = 0 if seed % 2 else m - 1
        eps = float(gen.uniform(0.1, 4))
        materialised = np.concatenate([real, np.full(pads, pad_index, dtype=np.uint64)])
        a = interior_point(materialised, epsilon=eps, grid_size=m, rng=quiet_source(seed))
        b = interior_point(real, epsilon=eps, grid_size=m, rng=quiet_source(seed),
                           pad_count=pads, pad_index=pad_index)
        assert a == b
        pa = interior_point_pieces(materialised, epsilon=eps, grid_size=m)
        pb = interior_point_pieces(real, epsilon=eps, grid_size=m, pad_count=pads,
                                   pad_index=pad_index)
        for field in ("starts", "sizes", "depths"):
            assert np.array_equal(getattr(pa, field), getattr(pb, field))


def test_huge_virtual_pad_count_costs_no_memory(rng):
    p = interior_point(np.array([7, 8, 9]), epsilon=1e-9, grid_size=2**64, rng=rng,
                       pad_count=10**15, pad_index=2**64 - 1)
    assert 0 <= p < 2**64
    assert interior_point([], epsilon=1.0, grid_size=2**64, rng=rng, pad_count=10**6,
                          pad_index=0) == 0


@pytest.mark.parametrize("kwargs,match", [
    ({"pad_count": -1}, "pad_count"), ({"pad_count": 2, "pad_index": None}, "pad_index"),
    ({"pad_count": 2, "pad_index": 64}, "pad_index"), ({"pad_count": 1.5}, "pad_count"),
    ({"values": [], "pad_count": 0}, "values"),
])
def test_bad_pad_parameters(kwargs, match, rng):
    args = {"values": [1, 2, 3], "epsilon": 1.0, "grid_size": 64} | kwargs
    with pytest.raises(ParameterError, match=match):
        interior_point(args.pop("values"), rng=rng, **args)


def test_sparse_buckets_are_the_general_buckets():
    """A law of a few pieces has its buckets found from its pieces
    (``_sparse_buckets``, what ``law_buckets`` takes there): the same Buckets as the
    search over every bucket, integer for integer — rates from below one bucket to past
    the cut-off (n_cut < n_max), plateaus, one-sided laws, object depths, both
    precisions."""
    import random

    from dprect.core import interior_point as ip

    gen = random.Random(35)
    tried = cut_short = 0
    for _ in range(600):
        k = gen.randrange(0, 12)
        top = gen.choice([3, 60, 5000, 2**40])
        rise = sorted(gen.randrange(0, top) for _ in range(gen.randrange(0, k + 1)))
        fall = sorted((gen.randrange(0, top) for _ in range(k - len(rise))), reverse=True)
        depths = [*rise, top, *([top] * gen.randrange(0, 2)), *fall]
        sizes = [gen.choice([1, 2, 7, 2**40]) for _ in depths]
        starts = np.cumsum([0, *sizes[:-1]]).astype(np.uint64)
        m = sum(sizes)
        rate = Fraction(gen.randrange(1, 400), gen.randrange(1, 400) * gen.choice([1, top]))
        num, den = rate.numerator, rate.denominator
        if (num * top) // den == 0:
            continue
        split = depths.index(top)
        for dtype in (np.int64, object):
            d = np.array(depths, dtype=dtype)
            for p in (128, 256):
                sparse = ip._sparse_buckets(starts, d, m, top, split, num, den, p)
                assert sparse == ip._general_buckets(starts, d, m, top, split, num, den, p)
                assert ip.law_buckets(starts, d, m, top, split, num, den, p) == sparse
                tried += 1
                cut_short += (num * top) // den > ip._bucket_cut(p)
    assert tried > 1000 and cut_short > 50  # the cut-off's tail was exercised
