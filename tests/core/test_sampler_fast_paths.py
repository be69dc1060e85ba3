"""The describe driver's fast paths (issue #23) draw exactly what the slow ones drew:
the integer samplers of dprect.core.randomness against their Fraction form, draw for
draw and bit for bit; the lazy candidates of a side against side_candidates; a side's
draw on the statistics' tail counts against the one on the full tail array."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from describe_reference import interval_counts, side_tails
from seeded_source import seeded

from dprect.core import tail_bounds
from dprect.core.aggregates import plan_describe
from dprect.core.describe_stats import (
    cell_grid,
    cell_statistics,
    data_tails,
)
from dprect.core.domains import FloatBins
from dprect.core.step_exponential import draw_step
from dprect.core.tail_bounds import (
    CandidateStream,
    centre_value,
    side_candidates,
)


class FractionSampler:
    """The samplers as written before the integer paths: every Bernoulli(p) is
    ``randrange(p.denominator) < p.numerator`` on a Fraction (reduced by Fraction)."""

    def __init__(self, seed: int) -> None:
        self.gen = random.Random(seed)

    def bernoulli(self, p: Fraction) -> bool:
        return self.gen.randrange(p.denominator) < p.numerator

    def bernoulli_exp(self, gamma: Fraction) -> bool:
        whole = gamma.numerator // gamma.denominator
        for _ in range(whole):
            if not self._unit(Fraction(1)):
                return False
        return self._unit(gamma - whole)

    def _unit(self, gamma: Fraction) -> bool:
        k = 1
        while self.bernoulli(gamma / k):
            k += 1
        return k % 2 == 1

    def geometric_exp(self, s: int, t: int) -> int:
        while True:
            u = self.gen.randrange(t)
            if self.bernoulli_exp(Fraction(u, t)):
                break
        v = 0
        while self.bernoulli_exp(Fraction(1)):
            v += 1
        return (u + t * v) // s

    def discrete_laplace(self, scale: Fraction) -> int:
        s, t = scale.denominator, scale.numerator
        while True:
            g = self.geometric_exp(s, t)
            negative = self.gen.getrandbits(1) == 1
            if negative and g == 0:
                continue
            return -g if negative else g


    def bernoulli_exp_int(self, n: int, d: int) -> bool:
        whole, frac = divmod(n, d)
        for _ in range(whole):
            k = 1
            while self.gen.randrange(k) < 1:
                k += 1
            if k % 2 == 0:
                return False
        k = 1
        while self.gen.randrange(d * k) < frac:
            k += 1
        return k % 2 == 1


PLAN = plan_describe(1.0, 64)
SCALES = [1 / PLAN.side_rate, PLAN.count_scale, PLAN.sum_scale,
          Fraction(1, 3), Fraction(1), Fraction(2), Fraction(7, 5), Fraction(1, 1000),
          1 / Fraction(0.3)]


@pytest.mark.parametrize("scale", SCALES)
def test_discrete_laplace_is_the_fraction_form_draw_for_draw(scale):
    for seed in range(12):
        ref, fast = FractionSampler(seed), seeded(seed)
        assert [fast.discrete_laplace(scale) for _ in range(40)] == \
            [ref.discrete_laplace(scale) for _ in range(40)]
        assert fast._gen.getstate() == ref.gen.getstate()  # the same bits consumed


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1), Fraction(1, 2), Fraction(6, 4),
                                   Fraction(7, 3), Fraction(2**61 + 1, 2**60), Fraction(5)])
def test_bernoulli_exp_and_geometric_are_the_fraction_form(gamma):
    for seed in range(20):
        ref, fast = FractionSampler(seed), seeded(seed)
        assert [fast.bernoulli_exp(gamma) for _ in range(30)] == \
            [ref.bernoulli_exp(gamma) for _ in range(30)]
        assert [fast.geometric_exp(3, 10) for _ in range(10)] == \
            [ref.geometric_exp(3, 10) for _ in range(10)]
        assert fast._gen.getstate() == ref.gen.getstate()


def _centres() -> list[float]:
    """Every kind of centre: both signs, zero, subnormal, huge, and a spread of the
    centre grid's bins (a centre is always such a bin's smallest float)."""
    picked = [0.0, -0.0, 5e-324, -5e-324, 3e-320, -2.5e-310, 1.0, -1.0, 7.0, -1e-5,
              2.0**-32, -(2.0**-32), 2.0**-33, 1e300, -1e300, 1.7976931348623157e308,
              -1.7976931348623157e308]
    grid = FloatBins(tail_bounds.CENTRE_BITS)
    picked += [centre_value(i) for i in range(1, grid.size - 1, 263)]
    return picked


@pytest.mark.parametrize("side", ["lower", "upper"])
def test_candidate_stream_is_a_prefix_of_side_candidates(side):
    for c in _centres():
        full = side_candidates(c, side)
        whole = CandidateStream(c, side)
        assert np.array_equal(whole.upto(len(full) + 5), full), c  # every candidate
        assert whole.complete and whole.count == len(full)
        for n in (1, 2, 3, 17, 300):
            part = CandidateStream(c, side)
            assert np.array_equal(part.upto(n), full[:n]), (c, n)
            assert part.value(min(n, len(full)) - 1) == full[min(n, len(full)) - 1]
        last = CandidateStream(c, side)
        assert last.has(len(full) - 1) and not last.has(len(full))
        assert last.value(len(full) - 1) == full[-1]


def test_lazy_search_draws_as_the_full_one_and_tails_match():
    gen = np.random.default_rng(5)
    for trial in range(40):
        centre = _centres()[trial % len(_centres())]
        x = np.concatenate([gen.normal(gen.normal(0, 100), gen.uniform(0.1, 50),
                                       int(gen.integers(0, 400))),
                            gen.lognormal(2, 1, int(gen.integers(0, 50)))])
        st = cell_statistics(x, centre)
        grid = cell_grid(centre)
        lower, upper = data_tails(st)
        for tails, side in ((lower, "lower"), (upper, "upper")):
            full = side_tails(interval_counts(st, grid), grid, side)
            assert np.array_equal(full[:len(tails)], tails)
            assert not full[len(tails):].any()
            target = int(gen.integers(1, 60))
            eps = Fraction(float(gen.uniform(0.01, 3.0)))
            for seed in range(3):
                a, b = seeded(100 * trial + seed), seeded(100 * trial + seed)
                whole = CandidateStream(centre, side)
                whole.upto(len(full) + 1)
                want = draw_step(full, whole, target, eps, a)
                got = draw_step(tails, CandidateStream(centre, side), target, eps, b)
                assert got == want
                assert a._gen.getstate() == b._gen.getstate()


def test_a_side_whose_tails_never_reach_zero_draws_on_its_own_steps():
    """Tails that clip rows up to a side's last candidate (a centre near the largest
    float): no step past the data, the window is the side; the draw is one of its steps,
    the same from a fresh stream as from a grown one, and near the end (each step clips
    three rows fewer)."""
    centre = 1e300
    full = side_candidates(centre, "upper")
    tails = 3 * np.arange(len(full), 0, -1, dtype=np.int64)
    for seed in range(5):
        grown = CandidateStream(centre, "upper")
        grown.upto(len(full) + 1)
        want = draw_step(tails, grown, 0, Fraction(1), seeded(seed))
        assert draw_step(tails, CandidateStream(centre, "upper"), 0, Fraction(1),
                         seeded(seed)) == want
        assert len(full) - 8 <= want < len(full)
