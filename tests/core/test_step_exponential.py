"""A side's draw (dprect/core/step_exponential.py; docs/privacy.md §11): its exact sampler
follows its law (with power against a wrong ε or μ), on the window and past it; its law
moves by at most e^ε on monotone neighbours (and by more than e^(ε/2): the constant
matters); the runaway statement holds for any data; the draws do not depend on how much
of the candidate stream exists."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chisquare
from seeded_source import seeded

from dprect.core import step_exponential as se
from dprect.core.errors import ParameterError
from dprect.core.randomness import RandomSource
from dprect.core.tail_bounds import CandidateStream

TAILS = np.array([900, 500, 200, 100, 60, 40, 30, 30, 30, 30, 30, 12, 5, 2, 1, 1])
EPS = Fraction(0.225)
CENTRE = 100.0


def _counts(tails: np.ndarray, target: int, eps: Fraction, draws: int, seed: int,
            bins: int) -> np.ndarray:
    rng = seeded(seed)
    stream = CandidateStream(CENTRE, "upper")
    hits = [se.draw_step(tails, stream, target, eps, rng) for _ in range(draws)]
    return np.bincount(hits, minlength=bins)[:bins]


def _pvalue(obs: np.ndarray, law: np.ndarray) -> float:
    exp = law * obs.sum()
    keep = exp >= 5
    return float(chisquare(np.append(obs[keep], obs[~keep].sum()),
                           np.append(exp[keep], exp[~keep].sum())).pvalue)


@pytest.mark.parametrize("tails,target,eps_matters", [
    (TAILS, 10, True), (np.zeros(0, dtype=np.int64), 3, False),
    (np.array([50, 50, 50, 50, 50, 50, 0, 0, 40]), 5, False)])
def test_draw_follows_its_law_with_power(tails, target, eps_matters):
    bins = 120
    obs = _counts(tails, target, EPS, 12_000, 5, bins)
    assert obs.sum() == 12_000  # nothing lands that far out
    law = se.step_law(tails, target, float(EPS), bins)
    assert _pvalue(obs, law) > 1e-4
    # power: the same draws refute a law with a wrong ε (where the tails make ε matter)
    # or a wrong decay
    if eps_matters:
        assert _pvalue(obs, se.step_law(tails, target, 1.6 * float(EPS), bins)) < 1e-4
    assert _pvalue(obs, se.step_law(tails, target, float(EPS), bins,
                                    decay=se.DECAY * Fraction(3, 2))) < 1e-4


def test_draws_past_the_data_follow_the_law_and_make_few_candidates():
    """On tails that end at step 3 most draws land past the data (the exact far levels):
    the law holds, and the stream is made only a little past the farthest draw."""
    tails = np.array([40, 20, 9])
    stream = CandidateStream(CENTRE, "upper")
    rng = seeded(8)
    draws = [se.draw_step(tails, stream, 4, EPS, rng) for _ in range(8_000)]
    assert np.mean(np.array(draws) >= 3) > 0.7
    assert stream.count < 100  # not 120 steps (60 nats) past the data made up front
    obs = np.bincount(draws, minlength=60)[:60]
    assert _pvalue(obs, se.step_law(tails, 4, float(EPS), 60)) > 1e-4


def test_draws_do_not_depend_on_trailing_zeros_or_the_stream_made():
    grown = CandidateStream(CENTRE, "upper")
    grown.upto(3000)
    for seed in range(30):
        a = se.draw_step(TAILS, CandidateStream(CENTRE, "upper"), 10, EPS, seeded(seed))
        b = se.draw_step(np.r_[TAILS, np.zeros(40, dtype=np.int64)], grown, 10, EPS,
                         seeded(seed))
        assert a == b


def test_a_side_that_ends_in_the_window_draws_only_its_steps():
    """A lower side with a centre near zero ends within the window: the draw stays on it."""
    stream = CandidateStream(1e-300, "lower")
    n = stream.upto(10**6).shape[0]
    rng = seeded(4)
    assert all(0 <= se.draw_step(np.zeros(0, dtype=np.int64), stream, 1, EPS, rng) < n
               for _ in range(300))


def _worst_log_ratio(cases: tuple[tuple[np.ndarray, int], ...], eps: float, n: int = 80,
                     two_sided: bool = False) -> float:
    """The largest |log(P′(k)/P(k))| of step_law at rate ``eps`` over its first ``n``
    steps, each (tails, target) case and each monotone neighbour of its tails: a prefix of
    the steps' tail counts moved by one, up or down (none below 0)."""
    worst = 0.0
    for tails, target in cases:
        base = se.step_law(tails, target, eps, n, two_sided=two_sided)
        for j in range(len(tails) + 2):
            for d in (1, -1):
                padded = np.r_[tails, np.zeros(n - len(tails), dtype=np.int64)]
                nb = np.where(np.arange(n) < j, padded + d, padded)
                if nb.min() < 0:
                    continue
                other = se.step_law(nb, target, eps, n, two_sided=two_sided)
                worst = max(worst, float(np.max(np.abs(np.log(other / base)))))
    return worst


def test_law_is_eps_private_on_monotone_neighbours():
    """Adding a row raises the tail counts of a prefix of the steps by one: every step's
    probability moves by at most e^ε, and by more than e^(ε/2) somewhere (the monotone
    mechanism spends its whole ε: a check charging ε/2 would fail)."""
    eps = 0.4
    worst = _worst_log_ratio(((TAILS, 4), (np.array([12, 12, 12, 3, 3, 0, 0, 2]), 4)), eps)
    assert worst <= eps + 1e-9
    assert worst > 0.5 * eps


@pytest.mark.parametrize("seed", range(5))
def test_runaway_bound_holds_for_any_tails(seed):
    gen = np.random.default_rng(seed)
    tails = np.sort(gen.integers(0, 400, gen.integers(1, 60)))[::-1]
    target = int(gen.integers(0, 30))
    law = se.step_law(tails, target, 0.3, 400)
    k_t = int(np.argmax(np.r_[tails, 0] <= target))
    for steps in (4, 16, 40):
        assert law[k_t + steps:].sum() <= se.runaway_bound(steps) * (1 + 1e-9)
    # and it is the law's own tail on data that ends at the first step
    flat = se.step_law(np.zeros(0), 0, 0.3, 400)
    assert flat[16:].sum() == pytest.approx(se.runaway_bound(16) * (1 - math.exp(-0.5)),
                                            rel=1e-6)


def test_lands_near_the_target_and_never_deep_inside():
    tails = np.array([1000, 500, 200, 100, 50, 5, 0, 0, 0])
    rng = seeded(3)
    s = np.array([se.draw_step(tails, CandidateStream(CENTRE, "upper"), 5, Fraction(2),
                               rng) for _ in range(400)])
    # the first step clipping ≤ 5 is 5 (probability 1 − e^-1/2 = 0.39); inward steps clip
    # ≥ 45 more rows (e^-90); 5 … 10 hold 1 − e^-3 = 0.95
    assert s.min() >= 5 and np.mean(s == 5) > 0.3 and np.mean(s <= 10) > 0.9


def test_bad_parameters_are_refused():
    with pytest.raises(ParameterError):
        se.draw_step(TAILS, CandidateStream(CENTRE, "upper"), 3, Fraction(0), seeded(1))
    with pytest.raises(ParameterError):
        se.draw_step(TAILS, CandidateStream(CENTRE, "upper"), 3, EPS, seeded(1),
                     decay=Fraction(-1, 2))


@pytest.mark.parametrize("eps", [Fraction(10**9), Fraction(1e300),
                                 Fraction(1.7976931348623157e308)])
def test_a_huge_epsilon_draws_its_law_in_bounded_memory(eps):
    """At a huge ε the data steps' levels D_k/μ reach ε·rows (a dense count per level was
    a 36 TiB bincount at ε = 1e9, and an int64 overflow at 1e300): the levels are kept
    sparse and capped (MAX_LEVEL), so the draw's memory does not grow with ε, and it
    still follows its law — the prior from the first step within the target, every step
    that clips more having weight e^−ε·(excess) ≈ 0 — with power against a wrong decay."""
    import tracemalloc

    tails = TAILS * 1_000_000  # tails of up to 9·10^8 rows
    target = 10
    stream = CandidateStream(CENTRE, "upper")
    rng = seeded(3)
    tracemalloc.start()
    try:
        draws = [se.draw_step(tails, stream, target, eps, rng) for _ in range(3_000)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20
    first = int(np.flatnonzero(tails <= target)[0]) if (tails <= target).any() else len(tails)
    assert min(draws) >= first  # nothing that clips more than the target
    bins = first + 60
    obs = np.bincount(draws, minlength=bins)[:bins]
    law = se.step_law(tails, target, 1e6, bins)  # e^−1e6 per excess row: ≈ 0, as e^−ε
    assert _pvalue(obs, law) > 1e-4
    assert _pvalue(obs, se.step_law(tails, target, 1e6, bins,
                                    decay=se.DECAY * Fraction(3, 2))) < 1e-4


def test_a_tiny_epsilon_huge_target_fits():
    """A target beyond int64 (a tiny ε's) clips nothing, as a target at the largest tail."""
    a = [se.draw_step(TAILS, CandidateStream(CENTRE, "upper"), 10**30, EPS, seeded(s))
         for s in range(20)]
    b = [se.draw_step(TAILS, CandidateStream(CENTRE, "upper"), int(TAILS.max()), EPS,
                      seeded(s)) for s in range(20)]
    assert a == b


class _CountingSource:
    """A seeded RandomSource that fails after ``limit`` level draws (the rejection loop's
    iterations): a count, not a time."""

    def __init__(self, limit: int) -> None:

        self._rng, self.left = RandomSource(seed=0), limit

    def geometric_exp(self, s: int, t: int) -> int:
        self.left -= 1
        if self.left < 0:
            raise AssertionError("the step sampler's loop did not end")
        return self._rng.geometric_exp(s, t)

    def __getattr__(self, name: str):
        return getattr(self._rng, name)


@pytest.mark.parametrize("epsilon", [100.0, 1e6])
def test_a_side_without_far_steps_is_drawn_from_its_own_steps(epsilon):
    """Rows at ±(largest float): the lower side's candidates end with the data's steps
    (every one clips the rows at -max), so there is no far step. The sampler took the
    missing first far step as its reference (its γ = μ·known below every data step's
    ε·a_k) and rejected every draw landing there: at ε = 100 a describe never ended."""
    from dprect.core.aggregates import describe_cell, plan_describe
    from dprect.core.tail_bounds import CandidateStream

    big = float(np.finfo(np.float64).max)
    values = np.array([big, -big] * 100)
    plan = plan_describe(epsilon, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cell = describe_cell(values, plan, _CountingSource(100_000))  # type: ignore[arg-type]
    assert cell.lower <= cell.mean <= cell.upper
    # and the step drawn is one the side has
    tails = np.full(50, 100, dtype=np.int64)
    stream = CandidateStream(-big / 2, "lower")
    while stream.has(len(tails)):
        tails = np.full(len(tails) * 2, 100, dtype=np.int64)
    n = next(i for i in range(len(tails) + 1) if not stream.has(i))
    k = se.draw_step(tails[:n], stream, 1, Fraction(epsilon),
                     _CountingSource(100_000))  # type: ignore[arg-type]
    assert 0 <= k < n


def test_aimed_draw_follows_its_law_with_power():
    """The aimed score −ε·|q_k − t| − μ·k (the quantile box's sides, docs/privacy.md §16):
    the exact draw follows its law, on the data's steps and past them (every far step
    charged ε·t), and the same draws refute the monotone law."""
    bins = 120
    rng = seeded(12)
    stream = CandidateStream(CENTRE, "upper")
    hits = [se.draw_step(TAILS, stream, 60, EPS, rng, two_sided=True) for _ in range(12_000)]
    obs = np.bincount(hits, minlength=bins)[:bins]
    assert obs.sum() == 12_000
    assert _pvalue(obs, se.step_law(TAILS, 60, float(EPS), bins, two_sided=True)) > 1e-4
    assert _pvalue(obs, se.step_law(TAILS, 60, float(EPS), bins)) < 1e-4


def test_aimed_law_moves_by_twice_its_rate_on_neighbours():
    """Lemma QB2′: adding or removing a row moves every |q_k − t| by at most one, both ways,
    so every step's probability moves by at most e^(2ε) at the rate ε — and by more than
    e^(1.5ε) somewhere: the aimed pair costs twice its rate, which is why the box draws it
    at ε_s/2 and the guarantee check charges 2·aimed_rate."""
    eps = 0.4
    worst = _worst_log_ratio(((TAILS, 60), (np.array([12, 12, 12, 3, 3, 0, 0, 2]), 4)), eps,
                             two_sided=True)
    assert worst <= 2 * eps + 1e-9
    assert worst > 1.5 * eps
