"""RandMargins audited on domino-style neighbours: the empirical ε never exceeds the claim.

Data (a 16-point grid per axis): on each axis a short "ladder" — five points at 14 and six
at 3 — above a mass of points at 0. The neighbour S' adds x' = (8, 8), which lands in the
middle of the first window D_t of each axis and moves its median, so it changes the hi
round of axis 0 and, through the cuts (a removed or kept x'), the rounds after it: the
domino effect the paper's §1.2 describes. Outputs are whole rectangles; the audit
(:func:`dprect.core.audit.audit_samples`) chooses the worst event on held-out samples and bounds
ε with Clopper–Pearson at 95% confidence, subtracting the claimed δ.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

from dprect import IntegerRange, RandomSource, plan
from dprect.core.accounting import refined_pure
from dprect.core.algorithms import run_randmargins
from dprect.core.audit import audit_samples
from dprect.core.interior_point import interior_point_failure_bound, interior_point_size
from dprect.core.margins import StaircaseLaw
from dprect.core.planner import MethodPlan, RoundPlan, schedule
from dprect.engines.numpy_engine import NumpyEngine

M = 16
DOMAINS = [IntegerRange(0, M - 1)] * 2
S = np.array([[14, 0]] * 5 + [[3, 0]] * 6 + [[0, 14]] * 5 + [[0, 3]] * 6 + [[0, 0]] * 200,
             dtype=float)
S_PRIME = np.vstack([S, [[8, 8]]])
RUNS = 5_000


def outputs(method_plan: MethodPlan, X: np.ndarray, seed: int) -> list[tuple[int, ...]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rng = RandomSource(seed=seed)
    out = []
    for _ in range(RUNS):
        rect = run_randmargins(NumpyEngine.from_features(X, DOMAINS), DOMAINS, method_plan, rng)
        out.append((*rect.lo, *rect.hi))
    return out


def hand_plan(rho: Fraction, k: int, shape: str, eps: float = 2.0) -> MethodPlan:
    """Per-round ε, staircase ρ, claiming the refined theorem's pure bound for ``k``."""
    ip_beta = 0.01
    size = interior_point_size(eps, ip_beta, M)
    q = StaircaseLaw(size, rho).rho * (1 - interior_point_failure_bound(eps, size, M))
    order = schedule(2, shape)
    rounds = tuple(RoundPlan(a, s, M, size, StaircaseLaw(size, rho)) for a, s in order)
    return MethodPlan("randmargins", "refined", eps, ip_beta, rounds,
                      refined_pure(eps, k=k, q=q, rounds=len(order)))


STRATEGIES = {
    "k=R (plain composition), origin": lambda: hand_plan(Fraction(1, 2), 2, "origin"),
    "k=1 < R (refined), general": lambda: hand_plan(Fraction(9, 10), 1, "general"),
    "planner (2, 0.05), general": lambda: plan(
        epsilon=2.0, delta=0.05, domains=DOMAINS, method="randmargins", beta=0.05).chosen,
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(STRATEGIES))
def test_domino_neighbours_never_exceed_reported_epsilon(name):
    p = STRATEGIES[name]()
    a, b = outputs(p, S, 1), outputs(p, S_PRIME, 2)
    claimed = p.guarantee
    result = audit_samples(a, b, delta=claimed.delta, confidence=0.95)
    assert result.epsilon_lower <= claimed.epsilon, (result, claimed)
    if name.startswith("k=R"):
        # not vacuous: without δ the neighbours are clearly told apart
        assert audit_samples(a, b, confidence=0.95).epsilon_lower > 0.5
