"""The sum's and the mean's noise intervals are the formulas docs/privacy.md §15 states,
computed here from the text alone — its constants written out (SPLIT = 0.01, the 3γ/2
term, the grid 10^-4·2^(i/64) over 27 octaves), H by its definition over Z_n's law, not
by the code's functions — and compared with dprect/core/intervals.py's for a few plans
(a default-like one, with k = 2^30, and two with a small k, where γ is a visible share of
the half-width). A changed SPLIT, a changed 3γ/2 term or another grid fails here: no other
test reads them from outside the code.

The formulas (§15; α = 1 − λ, s = w/ε_S = γ·k/ε_S, γ = w/k):
  count quantile q(α): the smallest integer q ≥ 0 with P(|Z_n| > q) ≤ α, where
      P(|Z_n| ≥ z) = 2e^{−ε_n z}/(1 + e^{−ε_n}) for integers z ≥ 1;
  H_β(r): the smallest h with P(|L + r·Z_n| > h) ≤ β, L ~ Laplace(1); read at the first
      grid point ≥ |r| (H_β(10^-4) below the grid; r·q(β(1 − SPLIT)) + ln(1/(β·SPLIT))
      above it);
  sum, ñ > 0: R ± (s·H_{α₁}(|p|/s) + 3γ/2), α₁ = α(1 − SPLIT);
  sum, ñ ≤ 0: [min(0, q(α₂)·L), max(0, q(α₂)·U)], α₂ = α·SPLIT;
  mean, ñ > 0: A₀ = [L − p, U − p], A_{k+1} = A_k ∩ [(G − h_k)/ñ, (G + h_k)/ñ],
      h_k = s·H_α(m_k/s) + 3γ/2, m_k = max |a| on A_k, G = γ·S̃; at most 12 rounds;
      [p + min A, p + max A]; ñ ≤ 0: [L, U].
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction

import pytest

from dprect.core.intervals import (
    grid_points,
    mean_interval,
    mixed_quantile_at,
    sum_interval,
)

#: docs/privacy.md §15's constants, written out (not imported)
SPLIT = 0.01
GRID = [1e-4 * 2.0 ** (i / 64) for i in range(64 * 27)]
ROUNDS = 12
#: the code's H is within 10^-12 above its own bisection and counts Z_n's far tail
#: (≤ 10^-9·α) as a miss; changing SPLIT from 0.01 to 0.02 moves H by ~3·10^-3 relative
CLOSE = 1e-8


def tail(rate: float, z: int) -> float:
    """P(|Z_n| ≥ z) for Z_n ~ DLap(rate), as §15 states it."""
    return 1.0 if z <= 0 else 2.0 * math.exp(-rate * z) / (1.0 + math.exp(-rate))


def count_q(rate: float, alpha: float) -> int:
    """The smallest integer q ≥ 0 with P(|Z_n| > q) = P(|Z_n| ≥ q + 1) ≤ α, by counting up."""
    q = 0
    while tail(rate, q + 1) > alpha:
        q += 1
    return q


def laplace_miss(h: float, c: float) -> float:
    """P(|L + c| > h), L ~ Laplace(1), c ≥ 0 (§15, Lemma I2's two branches)."""
    if c <= h:
        return 0.5 * math.exp(-(h - c)) + 0.5 * math.exp(-(h + c))
    return 1.0 - 0.5 * math.exp(-(c - h)) + 0.5 * math.exp(-(h + c))


def exact_h(r: float, rate: float, beta: float) -> float:
    """H_β(r): the smallest h with P(|L + r·Z_n| > h) ≤ β, over Z_n's law
    P(|Z_n| = z) = tail(z) − tail(z + 1), its far tail (≤ 10^-15·β) counted as a miss;
    by bisection to 10^-14 relative."""
    top = count_q(rate, beta * 1e-15)
    law = [(z, tail(rate, z) - tail(rate, z + 1)) for z in range(top + 1)]
    far = tail(rate, top + 1)

    def miss(h: float) -> float:
        return math.fsum(p * laplace_miss(h, abs(r) * z) for z, p in law) + far

    lo, hi = 0.0, 1.0
    while miss(hi) > beta:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-14 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if miss(mid) > beta else (lo, mid)
    return hi


def read_h(r: float, rate: float, beta: float) -> float:
    """H_β as the intervals read it: at the first grid point ≥ |r|; H_β(10^-4) below the
    grid; the discrete regime's bound above it."""
    r = abs(r)
    if r > GRID[-1]:
        return r * count_q(rate, beta * (1.0 - SPLIT)) + math.log(1.0 / (beta * SPLIT))
    return exact_h(next(g for g in GRID if g >= r), rate, beta)


@dataclass(frozen=True)
class Plan:
    """What a cell's intervals read of its plan and release: ε_n, ε_S, k, the level, the
    released bounds and the pivot."""

    count_epsilon: float
    sum_epsilon: float
    k: int
    level: float
    lower: float
    upper: float
    pivot: float

    @property
    def gamma(self) -> float:  # γ = w/k, w = max(U − p, p − L)
        return max(self.upper - self.pivot, self.pivot - self.lower) / self.k

    @property
    def s(self) -> float:
        return self.gamma * self.k / self.sum_epsilon

    def code_sum(self, noisy_count: int, noisy_sum: int) -> tuple[float, float]:
        total = self.pivot * max(noisy_count, 0) + self.gamma * noisy_sum
        return sum_interval(total, noisy_count, self.pivot, self.gamma, self.sum_epsilon,
                            self.k, self.count_epsilon, self.lower, self.upper, self.level)

    def doc_sum(self, noisy_count: int, noisy_sum: int) -> tuple[float, float]:
        alpha = 1.0 - self.level
        if noisy_count <= 0:
            q2 = count_q(self.count_epsilon, alpha * SPLIT)
            return min(0.0, q2 * self.lower), max(0.0, q2 * self.upper)
        total = self.pivot * noisy_count + self.gamma * noisy_sum
        h = (self.s * read_h(self.pivot / self.s, self.count_epsilon, alpha * (1 - SPLIT))
             + 3 * self.gamma / 2)
        return total - h, total + h

    def code_mean(self, noisy_count: int, noisy_sum: int) -> tuple[float, float]:
        mean = self.pivot + self.gamma * noisy_sum / max(noisy_count, 1)
        return mean_interval(mean, noisy_count, noisy_sum, self.pivot, self.gamma,
                             self.sum_epsilon, self.k, self.count_epsilon, self.lower,
                             self.upper, self.level)

    def doc_mean(self, noisy_count: int, noisy_sum: int) -> tuple[float, float]:
        if noisy_count <= 0:
            return self.lower, self.upper
        alpha, g, n = 1.0 - self.level, self.gamma * noisy_sum, float(noisy_count)
        lo, hi = self.lower - self.pivot, self.upper - self.pivot
        for _ in range(ROUNDS):
            m = max(abs(lo), abs(hi))
            h = self.s * read_h(m / self.s, self.count_epsilon, alpha) + 3 * self.gamma / 2
            new = max(lo, (g - h) / n), min(hi, (g + h) / n)
            assert new[0] <= new[1]  # the cases below hold their target
            if new == (lo, hi):
                break
            lo, hi = new
        return self.pivot + lo, self.pivot + hi


#: a default-like plan (ε = 1 on one column: ε_n = 0.13, k = 2^30), and two with a small
#: k, where 3γ/2 is a visible share of the half-width
PLANS = {
    "default": Plan(0.13, 0.87, 1 << 30, 0.95, -3.0, 5.0, 1.0),
    "far from zero": Plan(0.13, 0.87, 1 << 30, 0.95, 1e6, 1e6 + 2.0, 1e6 + 1.0),
    "small k": Plan(0.5, 1.0, 2, 0.9, 0.0, 10.0, 4.0),
    "k = 1": Plan(0.05, 2.0, 1, 0.99, -1.0, 1.0, 0.0),
}
#: (ñ, S̃) per plan: a few released noisy counts and sums
RELEASES = {
    "default": [(500, 60 << 30), (37, -(3 << 28)), (2, 1 << 29)],
    "far from zero": [(500, 100 << 30), (40, -(7 << 27))],
    "small k": [(40, 7), (6, -2), (300, 55)],
    "k = 1": [(20, 3), (90, -11), (400, 0)],
}


def _close(got: tuple[float, float], want: tuple[float, float], scale: float) -> bool:
    return all(abs(a - b) <= CLOSE * scale for a, b in zip(got, want, strict=True))


@pytest.mark.parametrize("name", sorted(PLANS))
def test_the_sum_interval_is_the_documented_formula(name: str) -> None:
    plan = PLANS[name]
    for noisy_count, noisy_sum in RELEASES[name]:
        got, want = plan.code_sum(noisy_count, noisy_sum), plan.doc_sum(noisy_count, noisy_sum)
        half = (want[1] - want[0]) / 2
        assert _close(got, want, half), (name, noisy_count, got, want)
        # the 3γ/2 term is visible here: a half-width without it, or with γ for it, fails
        if plan.k <= 2:
            assert plan.gamma / 2 > 100 * CLOSE * half
    for noisy_count in (0, -4):  # c = 0: the count quantile at α·SPLIT
        got, want = plan.code_sum(noisy_count, 5), plan.doc_sum(noisy_count, 5)
        assert got == want, (name, noisy_count, got, want)


def test_the_sums_far_from_zero_are_read_above_the_grid() -> None:
    """|p|/s past the grid's last point: the discrete regime's bound, where SPLIT enters
    twice (q at α₁(1 − SPLIT), ln(1/(α₁·SPLIT)))."""
    plan = PLANS["far from zero"]
    assert plan.pivot / plan.s > GRID[-1]
    assert PLANS["default"].pivot / PLANS["default"].s < GRID[-1]


@pytest.mark.parametrize("name", sorted(PLANS))
def test_the_mean_interval_is_the_documented_formula(name: str) -> None:
    plan = PLANS[name]
    for noisy_count, noisy_sum in RELEASES[name]:
        got, want = plan.code_mean(noisy_count, noisy_sum), plan.doc_mean(noisy_count,
                                                                            noisy_sum)
        assert _close(got, want, plan.upper - plan.lower), (name, noisy_count, got, want)
        assert plan.lower <= got[0] <= got[1] <= plan.upper
    assert plan.code_mean(0, 3) == plan.doc_mean(0, 3) == (plan.lower, plan.upper)


def _exact_hull(plan: Plan, noisy_count: int, noisy_sum: int
                ) -> tuple[Fraction, Fraction] | None:
    """The mean's hull computed EXACTLY (Fractions) from the floats the code starts from —
    γ, s = γ·k/ε_S, H's values (the code's grid and table: :func:`mixed_quantile_at` at
    the first grid point ≥ the exact |a|/s), ñ, p, L, U —, in at most 12 rounds; None
    when a round empties the set."""
    alpha = 1.0 - plan.level
    gamma, s = Fraction(plan.gamma), Fraction(plan.s)
    lower, upper, p = Fraction(plan.lower), Fraction(plan.upper), Fraction(plan.pivot)
    g, n = gamma * noisy_sum, Fraction(noisy_count)
    points = [Fraction(x) for x in grid_points().tolist()]
    lo, hi = lower - p, upper - p
    for _ in range(ROUNDS):
        r = max(abs(lo), abs(hi)) / s
        # |a|/s ≤ w·ε_S/w = ε_S: the grid (up to ~1.3·10^4) holds it; H at its first
        # point ≥ r (r ≤ the first point: that point's)
        assert r <= points[-1]
        at = next(x for x in points if x >= r)
        v = Fraction(mixed_quantile_at(float(at), plan.count_epsilon, alpha))
        h = s * v + Fraction(3, 2) * gamma
        new = max(lo, (g - h) / n), min(hi, (g + h) / n)
        if new[0] > new[1]:
            return None
        if new == (lo, hi):
            break
        lo, hi = new
    return max(lower, p + lo), min(upper, p + hi)


def test_the_mean_interval_holds_the_exact_hull() -> None:
    """Each end of the released mean's interval is rounded outward (every float operation
    moved one float out: docs/privacy.md §15, Mean), so it holds the hull computed
    exactly from the same floats; computed to nearest, an end lay an ulp or two inside it
    in about half the cells."""
    gen = random.Random(20261203)
    checked = 0
    for _ in range(300):
        lower = gen.uniform(-50, 50)
        upper = lower + gen.choice([1e-3, 0.7, 3.0, 90.0, 1e4])
        plan = Plan(gen.choice([0.05, 0.13, 0.6]), gen.choice([0.3, 0.87, 2.0]),
                    1 << gen.choice([0, 1, 3, 10, 30]), gen.choice([0.9, 0.95]), lower,
                    upper, gen.uniform(lower, upper))
        noisy_count = gen.choice([3, 40, 700, 25_000])
        truth = gen.uniform(plan.lower, plan.upper) - plan.pivot  # a* for S̃ ≈ a*·n/γ
        noisy_sum = round(truth * noisy_count / plan.gamma) + gen.randint(-3, 3) * plan.k
        exact = _exact_hull(plan, noisy_count, noisy_sum)
        if exact is None:
            continue
        low, high = plan.code_mean(noisy_count, noisy_sum)
        assert Fraction(low) <= exact[0] and exact[1] <= Fraction(high), (plan, noisy_count,
                                                                          noisy_sum)
        checked += 1
    assert checked > 250
