"""The refined search as it was before s51-plan, every k = 1…R: the reference that
tests/core/test_refined_search.py compares :func:`~dprect.core.accounting.refined_estimate`
with, and benchmarks/planner_speed.py times as "before"."""

from __future__ import annotations

import math

from dprect.core import accounting
from dprect.core.accounting import (
    RefinedChoice,
    _check_q,
    _cks_budget_rho,
    _cks_rho_estimate,
    _delta2_for,
    escape_probability,
)
from dprect.core.errors import ParameterError
from dprect.core.validation import check_delta, check_epsilon, check_positive_int


def full_loop_estimate(eps_total: float, delta_total: float, *, q: float, rounds: int
                       ) -> RefinedChoice:
    """refined_estimate as it was before s51-plan: every k = 1…R (the reference)."""
    eps_total = check_epsilon(eps_total, "epsilon")
    delta_total = check_delta(delta_total, "delta")
    rounds = check_positive_int(rounds, "rounds")
    _check_q(q)
    factor = accounting.BR_ZCDP_FACTOR
    best = RefinedChoice(-1.0, "pure", rounds, 0.0)
    if delta_total == 0.0:
        return RefinedChoice(eps_total / rounds, "pure", rounds, 0.0)
    cks_cap = math.sqrt(_cks_budget_rho(eps_total, delta_total) / factor)
    for k in range(1, rounds + 1):
        escape = escape_probability(q, k, rounds)
        if escape <= delta_total and eps_total / k > best.epsilon:
            best = RefinedChoice(eps_total / k, "pure", k, 0.0)
        if not escape < delta_total:
            continue
        d2 = _delta2_for(delta_total, escape)
        if not d2 > 0:
            continue
        log_inv = -math.log(d2)
        c = math.sqrt(2 * k * log_inv)
        eps_az = 2 * eps_total / (c + math.sqrt(c * c + 2 * k * eps_total))
        if eps_az > best.epsilon:
            best = RefinedChoice(eps_az, "azuma", k, d2)
        root = eps_total / (math.sqrt(log_inv + eps_total) + math.sqrt(log_inv))
        eps_br = math.sqrt(1.0 / factor / k) * root
        if eps_br > best.epsilon:
            best = RefinedChoice(eps_br, "br", k, d2)
        if cks_cap / math.sqrt(k) > best.epsilon:
            rho = _cks_rho_estimate(eps_total, log_inv)
            eps_cks = math.sqrt(rho / factor / k)
            if eps_cks > best.epsilon:
                best = RefinedChoice(eps_cks, "br-cks", k, d2)
    if not best.epsilon > 0:
        raise ParameterError("no refined bound meets the requested budget")
    return best
