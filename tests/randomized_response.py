"""The exact (ε, δ) curve of R-fold randomized response, the worst case a composition of
R ε-bounded-range (or ε-DP) rounds can reach: the reference the accounting tests and the
evidence tests compare the accountant's bounds with."""

from __future__ import annotations

import math


def rr_delta(eps_g: float, e: float, rounds: int) -> float:
    """Exact δ(ε_g) of R-fold randomized response whose privacy loss is ±e per round."""
    p = 1 / (1 + math.exp(-e))
    lp, lq = math.log(p), math.log1p(-p)
    total = 0.0
    for i in range(rounds + 1):
        loss = (rounds - 2 * i) * e
        if loss > eps_g:
            lw = (math.lgamma(rounds + 1) - math.lgamma(i + 1) - math.lgamma(rounds - i + 1)
                  + (rounds - i) * lp + i * lq)
            total += math.exp(lw) * -math.expm1(eps_g - loss)
    return total


def rr_epsilon(delta: float, e: float, rounds: int) -> float:
    """The exact ε of R-fold randomized response (loss ±e) at δ (bisection, to 1e-12)."""
    lo, hi = 0.0, rounds * e
    while hi - lo > 1e-12:
        mid = (lo + hi) / 2
        if rr_delta(mid, e, rounds) <= delta:
            hi = mid
        else:
            lo = mid
    return hi
