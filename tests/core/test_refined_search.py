"""The refined search's early start and end (:func:`~dprect.core.accounting.refined_estimate`,
s51-plan): the same choice, float for float, as the full loop over k = 1…R it replaced
(kept as the reference: tests/refined_full_loop.py); the same plans at d = 1 and 4096."""

from __future__ import annotations

import functools
import itertools

import pytest
from refined_full_loop import full_loop_estimate

from dprect import Grid, plan
from dprect.core import accounting
from dprect.core import planner as planner_module
from dprect.core.accounting import refined_estimate
from dprect.core.errors import ParameterError


def _outcome(search, eps, delta, q, rounds):
    try:
        return search(eps, delta, q=q, rounds=rounds)
    except ParameterError as exc:
        return str(exc)


BETA_IP = 1e-4 / 16  # a plan's β/(2R) at R = 8: q = ρ(1 − β_IP)
QS = (1.0, 0.99 * (1 - BETA_IP), 0.5, 0.37, 0.28 * (1 - BETA_IP), 0.01 * (1 - BETA_IP),
      1e-9, 1e-17)  # 1 − 1e-17 == 1.0: the escape is 1 until k = R


@pytest.mark.parametrize("rounds", [1, 2, 3, 64, 8192])
def test_the_search_gives_the_full_loops_choice(rounds):
    """R = 2 is d = 1, R = 8192 is d = 4096 (MAX_DIMS); ε from 1e-6 to 1e3, δ̃ from the
    smallest subnormal (no early start) to 0.999 and 0 (pure)."""
    for eps, delta, q in itertools.product(
            (1e-6, 1e-3, 0.1, 1.0, 10.0, 1e3),
            (0.0, 5e-324, 1e-300, 1e-12, 1e-6, 1e-2, 0.5, 0.999), QS):
        want = _outcome(full_loop_estimate, eps, delta, q, rounds)
        assert _outcome(refined_estimate, eps, delta, q, rounds) == want, (eps, delta, q)


def test_the_search_follows_the_br_constant(monkeypatch):
    """The early end reads BR_ZCDP_FACTOR as the loop does (a test elsewhere changes it)."""
    monkeypatch.setattr(accounting, "BR_ZCDP_FACTOR", 0.5)
    for eps, delta, q in itertools.product((0.1, 1.0, 10.0), (1e-12, 1e-6), QS[1:6]):
        assert (refined_estimate(eps, delta, q=q, rounds=8192)
                == full_loop_estimate(eps, delta, q=q, rounds=8192))


@pytest.fixture
def full_loop_planner(monkeypatch):
    """Plan with the reference search (cached: plans differing only in N ask alike)."""
    def use():
        ref = functools.lru_cache(maxsize=None)(
            lambda e, d, q, r: full_loop_estimate(e, d, q=q, rounds=r))
        search = functools.wraps(full_loop_estimate)(
            lambda e, d, *, q, rounds: ref(e, d, q, rounds))
        monkeypatch.setattr(accounting, "refined_estimate", search)
        monkeypatch.setattr(planner_module, "refined_estimate", search)
    return use


G16 = Grid(0.0, 1.0, 2**16)


@pytest.mark.parametrize("d,eps,delta", [
    (1, 1.0, 1e-6), (1, 1e-6, 1e-6), (1, 1e3, 1e-300), (1, 0.1, 0.5), (1, 1.0, 0.0),
    (4096, 1.0, 1e-6), (4096, 1e-6, 1e-6),  # the second refused: over the limits
    pytest.param(4096, 1e3, 1e-300, marks=pytest.mark.slow),
    pytest.param(4096, 10.0, 1e-12, marks=pytest.mark.slow),
])
def test_plans_are_those_of_the_full_loop(full_loop_planner, d, eps, delta):
    """Every planned quantity (the JSON record and the table) is the full loop's, at the
    smallest and largest d, with and without a public N (auto's choice)."""
    kinds = [dict(dims=d), dict(domains=[G16] * d)]
    cases = ([(kw, n) for kw in kinds for n in (None, 1, 10**6, 10**15)] if d == 1
             else [(kinds[0], None), (kinds[0], 10**15), (kinds[1], 10**6)])

    def plans():
        out = []
        for kw, n in cases:
            try:
                p = plan(epsilon=eps, delta=delta, positives=n, **kw)
            except ParameterError as exc:
                out.append(str(exc))
            else:
                out.append((p.to_json(), p.table()))
        return out

    new = plans()
    full_loop_planner()
    assert plans() == new
