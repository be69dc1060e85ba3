"""The aimed quantile box's brake on overshoot past the data (issue #44; docs/privacy.md
§16, Lemmas QB3 and QB3′): the bracket score, its sensitivity as the guarantee check
charges it, and the overshoot bound the plan prints."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from dprect.core.domains import FloatOrder, Grid
from dprect.core.guarantee_check import QUANTILE_AIMED_SHIFTS
from dprect.core.planner import plan
from dprect.core.quantile_box import (
    AIMED_DECAY,
    AIMED_SCORE,
    AIMED_STEPS_PER_OCTAVE,
    CENTRE_REACH_BINADES,
    ZERO_WEIGHT_BITS,
    SideTrace,
    _unweighted,
    _weighted,
    bracket_tails,
    centre_from_counts,
    coarse_bins,
    coarse_shift,
    overshoot_bound,
    run_quantile_box,
    side_candidates,
    stall_bound,
    tiny_centre,
    zero_centre,
)
from dprect.core.randomness import RandomSource
from dprect.core.step_exponential import step_law
from dprect.core.tail_bounds import centre_pieces_from_counts
from dprect.engines.numpy_engine import NumpyEngine

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _cost(q: list[int], t: int) -> list[int]:
    """The bracket score's charge per candidate, from its definition (q_{−1} = +∞)."""
    prev = [None, *q[:-1]]
    return [max(qk - t, 0) + (0 if p is None else max(t - p, 0))
            for qk, p in zip(q, prev, strict=True)]


def _tails(length: int, top: int) -> list[list[int]]:
    """Every non-increasing tail vector of ``length`` counts ≤ ``top`` ending in 0 (a
    side's last candidate, the grid's end, clips nothing)."""
    out = []
    for combo in itertools.combinations_with_replacement(range(top + 1), length - 1):
        out.append([*sorted(combo, reverse=True), 0])
    return out


def test_bracket_tails_are_the_bracket_score() -> None:
    """|q′_k − t| = (q_k − t)⁺ + (t − q_{k−1})⁺: nothing for the step holding the t-th
    row from the outside, and t for every step past the data's last step."""
    for q in _tails(5, 6):
        for t in range(1, 8):
            got = np.abs(bracket_tails(np.array(q), t) - t).tolist()
            assert got == _cost(q, t), (q, t)
    q = np.array([100, 60, 30, 10, 3, 0, 0])
    assert np.abs(bracket_tails(q, 20) - 20).tolist() == [80, 40, 10, 0, 10, 17, 20]


def test_a_row_moves_a_charge_by_the_checked_shift() -> None:
    """Lemma QB3: adding a row raises a prefix q_0 … q_{j−1} of one side's counts by one
    (a row beyond candidate j − 1 and not beyond j), and moves every candidate's charge by
    at most QUANTILE_AIMED_SHIFTS["bracket"] = 1 — attained, so the guarantee check's
    constant is exact: at 0 the check would charge nothing, at 2 twice the true cost. The
    laws of neighbours then differ by at most e^{2a·shift} (2a-DP), checked on the float
    law."""
    shift = QUANTILE_AIMED_SHIFTS[AIMED_SCORE]
    a = 0.7
    worst, worst_ratio = 0, 0.0
    for q in _tails(5, 5):
        for j in range(1, len(q)):  # q_j … stay: the last count (the grid's end) is 0
            nb = [v + 1 if k < j else v for k, v in enumerate(q)]
            for t in range(1, 7):
                moved = [abs(x - y) for x, y in zip(_cost(q, t), _cost(nb, t), strict=True)]
                worst = max(worst, *moved)
                p = step_law(bracket_tails(np.array(q), t), t, a, 8, AIMED_DECAY,
                             two_sided=True)
                r = step_law(bracket_tails(np.array(nb), t), t, a, 8, AIMED_DECAY,
                             two_sided=True)
                worst_ratio = max(worst_ratio, float(np.abs(np.log(p / r)).max()))
    assert worst == shift
    assert worst_ratio <= 2 * shift * a + 1e-9


def test_the_plan_names_its_aimed_score_and_the_check_reads_it() -> None:
    """The plan states the score its sides draw with; a plan naming a score the check does
    not know is refused (it cannot be charged)."""
    import dataclasses

    from dprect.core.guarantee_check import GuaranteeCheckError, check_fit_plan

    doms = [Grid(0.0, 1.0, 4096)] * 2
    q = plan(epsilon=1.0, delta=1e-6, domains=doms, method="quantiles").chosen
    assert q.details["aimed_score"] == "bracket"
    check_fit_plan(q, doms, beta=1e-4, shape="general")
    bad = dataclasses.replace(q, details={**q.details, "aimed_score": "two_sided"})
    with pytest.raises(GuaranteeCheckError):
        check_fit_plan(bad, doms, beta=1e-4, shape="general")


def _overshoots(seeds: int, rate: Fraction, target: int) -> tuple[np.ndarray, int]:
    """Per side of ``seeds`` boxes on uniform rows with hard edges (4,000 rows in
    [300, 700] on the grid 0:1000:4096, the Spark job tests' shape): how many candidate
    steps past the first candidate beyond its last row it landed (≤ 0: not past)."""
    dom = Grid(0.0, 1000.0, 4096)
    x = np.random.default_rng(4).uniform(300.0, 700.0, size=(4000, 1))
    keys = dom.encode(x[:, 0])
    past = []
    for seed in range(seeds):
        trace: list[SideTrace] = []
        run_quantile_box(NumpyEngine.from_features(x, [dom]), [dom], origin=False,
                         centre_rate=Fraction(1), side_epsilon=2 * rate, target=target,
                         rng=RandomSource(seed), aimed_rate=rate, trace=trace)
        for s in trace:
            cands = side_candidates(dom, s.centre, s.side, AIMED_STEPS_PER_OCTAVE)
            last = int(keys.max()) if s.side == "hi" else int(keys.min())
            edge = next(k for k, v in enumerate(cands)
                        if (v >= last if s.side == "hi" else v <= last))
            past.append(s.step - edge)
    return np.array(past), 2 * seeds


def test_the_brake_holds_a_side_at_a_hard_edge() -> None:
    """Lemma QB3′ on the table where the old score ran away (docs/results.md §4.1b: steps
    of 4–7 times t at the data's edge): a side lands more than K steps past the first
    candidate beyond its last row with probability ≤ overshoot_bound(a, t, μ, K). Here
    a·t = 4 nats: the bound is 2.8% at K = 0; 200 sides may exceed it by chance by
    binomial noise only (mean ≤ 5.6, allowed 5.6 + 4·√5.6 ≈ 15). With the score it
    replaced, a·|q_k − t| (every step past the data charged as a step that clips a whole
    step too many), 114 of these 200 sides land past that candidate (measured): the test
    fails without the brake."""
    rate, target = Fraction(1, 20), 80
    past, sides = _overshoots(100, rate, target)
    for k in (0, 1, 3):
        bound = overshoot_bound(rate, target, AIMED_DECAY, k)
        mean = bound * sides
        assert (past > k).sum() <= mean + 4 * np.sqrt(mean) + 1, (k, (past > k).sum(), mean)
    assert overshoot_bound(rate, target, AIMED_DECAY, 0) == pytest.approx(
        np.exp(-4.0 - 0.5) / (1 - np.exp(-0.5)))


def _float_order_sides(seeds: int, rate: Fraction, target: int
                       ) -> tuple[list[float], list[float], list[int], float]:
    """Per side of ``seeds`` boxes on 4,000 rows uniform in [−50, 50]² on the float order
    (no bounds, every row positive): the magnitude of the first candidate beyond the
    side's last row e, of the drawn bound, the steps past e, and the data's largest
    magnitude."""
    dom = FloatOrder()
    x = np.random.default_rng(5).uniform(-50.0, 50.0, size=(4000, 2))
    edge_value = float(np.abs(x).max())
    firsts, bounds, past = [], [], []
    for seed in range(seeds):
        trace: list[SideTrace] = []
        run_quantile_box(NumpyEngine.from_features(x, [dom, dom]), [dom, dom], origin=False,
                         centre_rate=Fraction(1), side_epsilon=2 * rate, target=target,
                         rng=RandomSource(seed), aimed_rate=rate, trace=trace)
        for s in trace:
            keys = dom.to_index(dom.encode(x[:, s.axis])).astype(object)
            cands = side_candidates(dom, s.centre, s.side, AIMED_STEPS_PER_OCTAVE, True)
            last = int(keys.max()) if s.side == "hi" else int(keys.min())
            edge = next(k for k, v in enumerate(cands)
                        if (v >= last if s.side == "hi" else v <= last))
            firsts.append(abs(dom.float_at(cands[edge])))
            bounds.append(abs(dom.float_at(s.bound)))
            past.append(s.step - edge)
    return firsts, bounds, past, edge_value


def test_the_brake_holds_on_the_float_order() -> None:
    """Lemma QB3′ on the float order, where a step is measured in keys: before the
    magnitude points (``quantile_box.magnitude_points``) a side from a centre among the
    tiny floats, or one crossing zero, saw the data's binades as a sliver of an offset of
    ~2^62 keys, and its first candidate past the data, one step of 2^(1/4) of that offset,
    was ~10^58–10^117 (docs/results.md §4.1b): the lemma held in steps and said nothing
    in values. Now (1) that candidate lies within a factor 2 of the data's edge on every
    side (deterministic), and (2) a side's bound is more than 4× past the edge only when
    it lands more than one step past it, which Lemma QB3′ bounds by
    overshoot_bound(a, t, μ, 1) = 1.7% at a·t = 4 nats: 200 sides, mean ≤ 3.4, allowed
    3.4 + 4·√3.4 + 1 ≈ 11.8. Power: a violation rate of 15% (30 expected) exceeds that
    with probability > 0.9999 (binomial); measured before the fix, 134 of these 200 sides
    had a first candidate past the data more than 2× out and 130 a bound past 4× (yet only
    one side more than one step past e: the lemma held in steps)."""
    rate, target = Fraction(1, 20), 80
    firsts, bounds, past, edge = _float_order_sides(50, rate, target)
    sides = len(bounds)
    assert sides == 200
    assert max(firsts) <= 2 * edge, sorted(firsts)[-3:]
    mean = overshoot_bound(rate, target, AIMED_DECAY, 1) * sides
    far = sum(1 for b in bounds if b > 4 * edge)
    assert far <= mean + 4 * np.sqrt(mean) + 1, (far, mean)
    assert far <= sum(1 for p in past if p > 1)  # a bound past 4x is > 1 step past e


def _steps_to(dom: FloatOrder, centre: int, side: str, value: float) -> int:
    """The index of the first candidate of an aimed float-order side at or past ``value``."""
    cands = side_candidates(dom, centre, side, AIMED_STEPS_PER_OCTAVE, True)  # type: ignore[arg-type]
    key = dom.index_of(value)
    return next(k for k, v in enumerate(cands) if (v >= key if side == "hi" else v <= key))


def test_a_side_walks_from_the_tiny_floats_to_the_data_in_few_steps() -> None:
    """docs/privacy.md §16, Lemma QB4 (docs/results.md §4.1b, "small tables around zero"):
    on data around zero the centre's depth is flat over the ~2,000 empty binades between
    the smallest rows of each sign, so it lands among the tiny floats. From every such
    centre (every coarse bin with |c| < 50/64) an aimed side reaches ±50 in at most 92
    candidate steps (measured 91; before the magnitude points were thinned towards zero
    and from one binade, 141), so at the brief's table (2,000 rows in [−50, 50]^8, ε = 1:
    a = 0.054, t = 31, a side's 1,000 rows) Lemma QB4 bounds the chance that a side stays
    short of its data by stall_bound(a, 31, 1000, 92) < 1% (with 141 steps the bound is
    e^{18}: vacuous, and measured every box was empty)."""
    dom = FloatOrder()
    shift = coarse_shift(dom)
    worst = 0
    for b in range(coarse_bins(dom)):
        c = b << shift
        if abs(dom.float_at(c)) < 50.0 / 64:
            worst = max(worst, _steps_to(dom, c, "hi", 50.0), _steps_to(dom, c, "lo", -50.0))
    assert worst <= 92, worst
    box = plan(epsilon=1.0, delta=1e-6, domains=[dom] * 8, method="quantiles").chosen
    a = Fraction(box.details["aimed_rate"])
    assert stall_bound(a, 31, 1000, worst, AIMED_DECAY) < 0.01
    assert stall_bound(a, 31, 1000, 141, AIMED_DECAY) > 1.0


def test_a_small_table_around_zero_on_the_float_order_is_not_empty() -> None:
    """The brief's case (docs/results.md §4.1b): 2,000 positives uniform in [−50, 50]^8, no
    bounds (the float order), ε = 1, auto with its private count — it takes the aimed box
    (t = 31 a side). Before, every side stayed among the tiny floats at its centre and
    each of these six boxes was empty (FN 100%); now every box holds at least 90% of the
    rows (measured: all of them) and no bound lies beyond 2^64."""
    from dprect.core.algorithms import run_plan

    dom = FloatOrder()
    doms = [dom] * 8
    x = np.random.default_rng(2000).uniform(-50.0, 50.0, size=(2000, 8))
    the_plan = plan(epsilon=1.0, delta=1e-6, domains=doms, method="auto")
    for seed in range(6):
        res = run_plan(NumpyEngine.from_features(x, doms), doms,
                       [f"f{j}" for j in range(8)], the_plan, RandomSource(seed))
        assert res.method == "quantiles"
        assert res.contains(x).mean() >= 0.9, (seed, res.lower, res.upper)
        assert max(map(abs, [*res.lower, *res.upper])) < 2.0 ** 64


def test_a_centre_keeps_its_own_steps_near_one() -> None:
    """The magnitude points step a whole binade next to ±1 (fewer steps to walk), so a
    centre at 0.5 keeps its own offsets out to 2 binades (CENTRE_REACH_BINADES): data
    around 1 then has bounds finer than 2 (N(1, 0.05) at n = 10⁴: the box 1.2× the data's
    span, where the magnitude points alone gave 2.2×)."""
    dom = FloatOrder()
    cands = side_candidates(dom, dom.index_of(0.5), "hi", AIMED_STEPS_PER_OCTAVE, True)
    values = [dom.float_at(v) for v in cands]
    assert sum(1 for v in values if 1.0 < v < 2.0) >= 3  # none with the Voronoi split alone
    assert CENTRE_REACH_BINADES == 2


def _centre_law(counts: np.ndarray, rate: Fraction, favour_zero: bool) -> np.ndarray:
    """The aimed float-order centre's law over the coarse bins, in floats, read from the
    stretched pieces the sampler draws from (quantile_box._weighted: the zero bin's
    piece grows by π − 1 points of its depth, every later piece moves up as much, and
    _unweighted maps a draw back)."""
    dom = FloatOrder()
    bins = coarse_bins(dom)
    keys = np.flatnonzero(counts)
    pieces = centre_pieces_from_counts(keys, counts[keys], grid_size=bins)
    zero = zero_centre() >> coarse_shift(dom)
    weight = 1 << ZERO_WEIGHT_BITS if favour_zero else 1
    stretched = _weighted(pieces, zero, weight)
    assert stretched.grid_size == bins + weight - 1
    logw = np.empty(bins)
    for start, size, depth in zip(stretched.starts.tolist(), stretched.sizes.tolist(),
                                  stretched.depths.tolist(), strict=True):
        first, last = _unweighted(start, zero, weight), _unweighted(start + size - 1, zero,
                                                                    weight)
        logw[first:last + 1] = float(rate) * depth  # every bin of the piece, once ...
        if first <= zero <= last:  # ... but the zero bin, ``weight`` times
            copies = sum(1 for y in (zero, zero + weight - 1) if start <= y < start + size)
            assert copies == 2 and _unweighted(zero + weight, zero, weight) == zero + 1
            logw[zero] += math.log(weight)
    p = np.exp(logw - logw.max())
    return p / p.sum()


def _float_order_counts(x: np.ndarray) -> np.ndarray:
    """The centre's histogram: rows per coarse bin (binade) of the float order."""
    dom = FloatOrder()
    bins = dom.to_index(dom.encode(x)).astype(np.uint64) >> np.uint64(coarse_shift(dom))
    return np.bincount(bins, minlength=coarse_bins(dom)).astype(np.int64)


def test_the_zero_bin_weight_puts_a_centre_around_zero_at_zero() -> None:
    """docs/privacy.md §16, Lemma QB1′: an aimed float-order box draws its centre
    ∝ π(b)·e^{c·depth(b)}, the bin holding 0.0 weighted π = 2^ZERO_WEIGHT_BITS (the exact
    sampler on a grid where that bin is repeated, quantile_box._weighted). On 1,000 rows
    uniform in [−50, 50] the depth is flat over the ~2,000 empty binades between the
    smallest rows of each sign: with the weight the centre is the zero bin except with
    probability < 2^−10 (without it, about 1/2,000: the centre among the tiny floats,
    a walk of up to 91 steps and, measured, every box at 1,000–1,500 rows empty). The
    weight is not so large that it moves a centre off data that do not straddle 0: on
    rows of [1, 2]·10⁻³⁰ at 900 rows (the fewest an aimed box at d = 8, ε = 1 gets, where
    a·t ≥ 3/4) the zero bin has probability < 10⁻⁹ (its depth 0 against ~450)."""
    rate = Fraction(7951837150352203, 72057594037927936)  # ε₀ of d = 8, ε = 1 (the plan's)
    dom = FloatOrder()
    zero = zero_centre() >> coarse_shift(dom)
    around = _float_order_counts(np.random.default_rng(3).uniform(-50.0, 50.0, 1000))
    assert _centre_law(around, rate, True)[zero] > 1 - 2.0 ** -10
    assert _centre_law(around, rate, False)[zero] < 0.01
    tiny = _float_order_counts(np.random.default_rng(3).uniform(1.0, 2.0, 900) * 1e-30)
    assert _centre_law(tiny, rate, True)[zero] < 1e-9
    # the sampler draws that law: 20 seeded centres, every one the zero bin
    got = {centre_from_counts(around, dom, rate, RandomSource(seed), favour_zero=True)
           for seed in range(20)}
    assert got == {zero_centre()}


def test_a_centre_base_measure_keeps_the_centre_rate() -> None:
    """Lemma QB1′: a public base measure π leaves the centre c-DP (c-bounded-range) under
    add/remove — a row moves every depth by 0 or +1, every log-weight ln π(b) + c·depth(b)
    by a shift in {0, c}. Checked on the law of every bin for a table and each of 40
    neighbours with a row added at random (the largest log-ratio is at most c, and is
    attained: the guarantee check's charge c per centre is exact)."""
    rate = Fraction(1, 4)
    rng = np.random.default_rng(8)
    x = rng.uniform(-2.0, 2.0, 60)
    base = np.log(_centre_law(_float_order_counts(x), rate, True))
    worst = 0.0
    for row in rng.normal(0.0, 3.0, 40):
        other = np.log(_centre_law(_float_order_counts(np.append(x, row)), rate, True))
        worst = max(worst, float(np.max(np.abs(other - base))))
    assert worst <= float(rate) + 1e-9
    assert worst > float(rate) / 2


def test_a_side_walks_from_the_zero_centre_to_the_data_in_few_steps() -> None:
    """Lemma QB4 from the zero bin's centre (−0.0): its own offsets count keys through
    the subnormals and the tiny binades (~50 steps to 2^−512), so it keeps none of them
    and walks the magnitude points alone — an octave of binades apart below 2^−16 — to
    ±53.02 in 34 steps (hi) and 33 (lo), where from a centre among the tiny floats it
    took up to 91. At 1,000 rows in [−50, 50]^8, ε = 1 (a = 0.055, t = 15, a side's
    500 rows) Lemma QB4 bounds a side's chance of stalling short of its data by < 10⁻³
    (with 91 steps the bound is e^{19}: vacuous, and measured every box was empty), and
    at 900 rows, the fewest an aimed box gets there (t = 14), by < 1%."""
    dom = FloatOrder()
    hi = _steps_to(dom, zero_centre(), "hi", 50.0)
    lo = _steps_to(dom, zero_centre(), "lo", -50.0)
    assert max(hi, lo) <= 34, (hi, lo)
    box = plan(epsilon=1.0, delta=1e-6, domains=[dom] * 8, method="quantiles").chosen
    a = Fraction(box.details["aimed_rate"])
    assert stall_bound(a, 15, 500, 34, AIMED_DECAY) < 1e-3
    assert stall_bound(a, 14, 450, 34, AIMED_DECAY) < 0.01
    assert stall_bound(a, 15, 500, 91, AIMED_DECAY) > 1.0


def test_a_table_of_1000_rows_around_zero_on_the_float_order_is_not_empty() -> None:
    """The brief's case at 1,000 and 1,500 rows (docs/results.md §4.1b): uniform in
    [−50, 50]^8 and normal(0, 1)^8, no bounds, ε = 1, auto with its private count (it
    takes the aimed box, t = 15 / 23 a side). Before the zero bin's weight every box of
    these was empty (FN 100%, 98% for normal(0, 1) at 1,500); now the uniform boxes hold
    every row and the normal ones at least 70% (measured 16–17% out over 8 seeds, the
    aims' union at t/N = 1/64 being 22%). Rows at 10⁻³⁰ keep their centre on their data:
    every bound within 2^8 of their edge."""
    from dprect.core.algorithms import run_plan

    dom = FloatOrder()
    doms = [dom] * 8
    feats = [f"f{j}" for j in range(8)]
    the_plan = plan(epsilon=1.0, delta=1e-6, domains=doms, method="auto")
    gen = np.random.default_rng(1000)
    for n, x, least in ((1000, gen.uniform(-50.0, 50.0, (1000, 8)), 0.99),
                        (1500, gen.uniform(-50.0, 50.0, (1500, 8)), 0.99),
                        (1000, gen.normal(0.0, 1.0, (1000, 8)), 0.7),
                        (1000, gen.uniform(1.0, 2.0, (1000, 8)) * 1e-30, 0.99)):
        for seed in range(3):
            res = run_plan(NumpyEngine.from_features(x, doms), doms, feats, the_plan,
                           RandomSource(seed))
            assert res.method == "quantiles"
            assert res.contains(x).mean() >= least, (n, seed, res.lower, res.upper)
        if x.max() < 1e-20:
            edge = float(np.abs(x).max())
            assert max(map(abs, [*res.lower, *res.upper])) <= 256 * edge


def test_an_unaimed_small_table_around_zero_is_not_empty() -> None:
    """Standardised features (issue #44, s34-zero; docs/algorithm.md §10): 50 positives
    normal(0, 1)^4 on the float order, the unaimed box (t = 0 at N = 50). Its centre lands
    among the tiny floats (the depth is flat over the empty binades between the smallest
    rows of each sign). Before, a side walked the centre's own offsets, 26–31 steps of μ
    to the data, and stayed at C: 96% out at ε = 4 and 100% at ε = 1 (20 seeds each,
    every box empty at ε = 1). Now a side from a tiny centre walks the magnitude points
    alone (14–19 steps; Lemma QB4): measured 14% out at ε = 4, 52–66% at ε = 1."""
    from dprect.core.algorithms import run_quantiles

    dom = FloatOrder()
    doms = [dom] * 4
    x = np.random.default_rng(50).normal(0.0, 1.0, size=(50, 4))
    idx = np.stack([dom.to_index(dom.encode(x[:, j])) for j in range(4)], axis=1)
    for eps, most in ((4.0, 0.35), (1.0, 0.85)):
        box = plan(epsilon=eps, delta=1e-6, domains=doms, positives=50,
                   method="quantiles").chosen
        fn, tiny = [], []
        for seed in range(12):
            trace: list[SideTrace] = []
            res = run_quantiles(NumpyEngine.from_features(x, doms), doms, box,
                                RandomSource(seed), 50, trace=trace)
            inside = (idx >= np.array(res.lo, dtype=np.uint64)) & (
                idx <= np.array(res.hi, dtype=np.uint64))
            fn.append(1.0 - float(inside.all(axis=1).mean()))
            tiny += [tiny_centre(dom, s.centre) for s in trace]
        assert np.mean(tiny) > 0.9  # the centres: among the tiny floats
        assert float(np.mean(fn)) <= most, (eps, fn)


def test_a_tiny_centre_walks_the_magnitude_points_alone() -> None:
    """From a centre among the tiny floats an unaimed side's candidates are c, the
    magnitude points beyond c and the grid's end: 14–19 steps to ±1 and ±4 where the
    centre's own offsets took 26–31; a centre at or above 2^−16 keeps its own offsets
    (data of a small scale keep their steps), and an aimed side's list is unchanged."""
    dom = FloatOrder()

    def steps(c: int, side: str, value: float, **kw: bool) -> int:
        cands = side_candidates(dom, c, side, 2, **kw)  # type: ignore[arg-type]
        t = FloatOrder.index_of(value)
        return next(k for k, v in enumerate(cands) if (v >= t if side == "hi" else v <= t))

    s = coarse_shift(dom)
    for v in (1e-300, 1e-100, 2.0 ** -17, -1e-10, -1e-300):
        c = (FloatOrder.index_of(v) >> s) << s
        assert tiny_centre(dom, c)
        own = [steps(c, sd, val) for sd, val in (("hi", 1.0), ("lo", -1.0))]
        walk = [steps(c, sd, val, magnitudes=True, alone=True)
                for sd, val in (("hi", 4.0), ("lo", -4.0))]
        assert max(walk) <= 19 and min(own) >= 18, (v, own, walk)
    big = (FloatOrder.index_of(2.0 ** -15) >> s) << s
    assert not tiny_centre(dom, big) and not tiny_centre(Grid(-1.0, 1.0, 1000), 500)
