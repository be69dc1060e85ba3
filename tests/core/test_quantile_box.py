"""The quantile box (issue #44): its engine question, its draws, its guarantee and
``auto``'s use of it on a small table (docs/privacy.md §16)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from dprect.core.algorithms import run_plan
from dprect.core.domains import FloatOrder, Grid, IntegerRange
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import GuaranteeCheckError, check_fit_plan
from dprect.core.planner import plan, predicted_at, quantiles_aim
from dprect.core.quantile_box import (
    AIM_MIN_NATS,
    AIM_SIDE_SHARE,
    run_quantile_box,
    side_candidates,
    side_target,
    tail_counts,
    tail_thresholds,
)
from dprect.core.randomness import RandomSource
from dprect.engines.numpy_engine import NumpyEngine, bucket_counts

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _small_table(n: int = 60, d: int = 4, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(5.0, 1.0, size=(n, d))


def test_histogram_counts_between_thresholds() -> None:
    v = np.array([1, 2, 2, 3, 7, 9], dtype=np.int64)
    t = np.array([2, 2, 5, 9], dtype=np.int64)  # ≤2 | (2,2] | (2,5] | (5,9] | >9
    assert bucket_counts(v, t).tolist() == [3, 0, 1, 2, 0]
    with pytest.raises(ParameterError):
        bucket_counts(v, np.array([3, 1], dtype=np.int64))


def test_tail_counts_are_the_clipped_rows() -> None:
    """q_k of each side is exactly #{x < L_k} and #{x > U_k} (brute force)."""
    dom = IntegerRange(0, 99)
    x = np.random.default_rng(0).integers(0, 100, 300)
    eng = NumpyEngine([dom.encode(x.astype(float))])
    lo, hi = side_candidates(dom, 40, "lo"), side_candidates(dom, 40, "hi")
    lo_q, hi_q = tail_counts(eng.histograms([tail_thresholds(dom, lo, hi)])[0], lo, hi)
    assert lo_q.tolist() == [int((x < v).sum()) for v in lo]
    assert hi_q.tolist() == [int((x > v).sum()) for v in hi]
    assert hi[-1] == 99 and lo[-1] == 0 and hi_q[-1] == 0 and lo_q[-1] == 0


@pytest.mark.parametrize("domain", [FloatOrder(), Grid(0.0, 10.0, 1000)])
def test_box_covers_a_small_table_where_the_others_are_empty(domain) -> None:
    """60 positives, d = 4, ε = 4: composition plans windows larger than the table (an
    empty rectangle); auto, at the public N, picks the quantile box, which is not empty
    and leaves most positives inside."""
    X = _small_table()
    doms = [domain] * 4
    p = plan(epsilon=4.0, delta=1e-6, domains=doms, positives=len(X))
    assert p.chosen.method == "quantiles"
    assert predicted_at(p.candidates["composition"], len(X)) >= 0.9 * len(X)
    inside = []
    for seed in range(5):
        res = run_plan(NumpyEngine.from_features(X, doms), doms, ["a", "b", "c", "d"], p,
                       RandomSource(seed))
        assert all(lo <= hi for lo, hi in zip(res.lower_index, res.upper_index, strict=True))
        ok = np.ones(len(X), dtype=bool)
        for j, dom in enumerate(doms):
            idx = dom.to_index(dom.encode(X[:, j]))
            ok &= (idx >= np.uint64(res.lower_index[j])) & (idx <= np.uint64(res.upper_index[j]))
        inside.append(ok.mean())
    assert np.mean(inside) >= 0.6


def test_same_seed_same_box_and_order_free() -> None:
    """The box depends on the multiset of rows only (row order changes nothing)."""
    X = _small_table(200)
    doms = [FloatOrder()] * 4
    args = dict(origin=False, centre_rate=Fraction(1, 4), side_epsilon=Fraction(1, 2),
                target=1, decay=Fraction(1, 2), aimed_rate=Fraction(1, 4))
    a = run_quantile_box(NumpyEngine.from_features(X, doms), doms, rng=RandomSource(7), **args)
    b = run_quantile_box(NumpyEngine.from_features(X[::-1].copy(), doms), doms,
                         rng=RandomSource(7), **args)
    assert a == b


class _Asked:
    """An engine that logs the questions asked (the box asks histograms only)."""

    def __init__(self, engine: NumpyEngine) -> None:
        self.engine, self.log = engine, []

    @property
    def dims(self) -> int:
        return self.engine.dims

    def __getattr__(self, name: str):
        self.log.append(name)
        return getattr(self.engine, name)


@pytest.mark.parametrize("origin", [False, True])
def test_the_box_is_two_histogram_queries_of_every_axis(origin: bool) -> None:
    """The whole box in two engine questions (one for the origin shape), each of every
    axis at once — one pass over the rows each (issue #43) — and no window or cut."""
    X = _small_table(300, 5)
    doms = [FloatOrder()] * 5
    eng = _Asked(NumpyEngine.from_features(X, doms))
    run_quantile_box(eng, doms, origin=origin, centre_rate=Fraction(1, 4),  # type: ignore[arg-type]
                     side_epsilon=Fraction(1, 2), target=3, rng=RandomSource(2),
                     aimed_rate=Fraction(1, 4))
    assert eng.log == ["histograms"] * (1 if origin else 2)


@pytest.mark.parametrize("target", [0, 4])
def test_an_axis_draws_from_its_own_stream(target: int) -> None:
    """Axis j's centre and sides come from the j-th of the run's streams: for a seed, an
    axis's bounds do not depend on the other axes' rows (drawn from one stream in turn,
    the draws an exact sampler takes for one axis would move every later axis's)."""
    gen = np.random.default_rng(8)
    X = gen.normal(5.0, 1.0, size=(400, 3))
    doms = [Grid(0.0, 10.0, 5000)] * 3
    args = dict(origin=False, centre_rate=Fraction(1, 2), side_epsilon=Fraction(1),
                target=target, decay=Fraction(1, 2), aimed_rate=Fraction(1, 2))
    for seed in range(4):
        lo, hi = run_quantile_box(NumpyEngine.from_features(X, doms), doms,
                                  rng=RandomSource(seed), **args)
        for other in range(4):
            Y = X.copy()
            Y[:, :2] = gen.normal(3.0 + other, 0.5 + other, size=(400, 2))
            lo2, hi2 = run_quantile_box(NumpyEngine.from_features(Y, doms), doms,
                                        rng=RandomSource(seed), **args)
            assert (lo2[2], hi2[2]) == (lo[2], hi[2])


def test_target_trades_positives_for_a_tighter_box() -> None:
    X = _small_table(2000, 2)
    doms = [Grid(0.0, 10.0, 1000)] * 2
    width = {}
    for target in (0, 100):
        lows, highs = [], []
        for seed in range(6):
            lo, hi = run_quantile_box(NumpyEngine.from_features(X, doms), doms, origin=False,
                                      centre_rate=Fraction(1, 2), side_epsilon=Fraction(1),
                                      target=target, rng=RandomSource(seed),
                                      decay=Fraction(1, 2), aimed_rate=Fraction(1, 2))
            lows.append(lo[0])
            highs.append(hi[0])
        width[target] = np.mean(highs) - np.mean(lows)
    assert width[100] < width[0]


def test_plan_is_checked_and_a_wrong_rate_is_refused() -> None:
    """The check re-derives the box from the rates the sampler uses: doubling the
    centre's rate (a monotone depth mechanism at rate c is c-DP under add/remove), the
    sides' ε or the aimed sides' rate a (charged 2a, Lemma QB2′: a check charging a would
    pass the doubled one) breaks the stated guarantee, and the check refuses."""
    doms = [FloatOrder()] * 3
    p = plan(epsilon=1.0, delta=1e-6, domains=doms, method="quantiles")
    q = p.chosen
    assert q.method == "quantiles" and p.check is not None
    check_fit_plan(q, doms, beta=1e-4, shape="general")
    assert Fraction(q.details["aimed_rate"]) == Fraction(q.details["side_epsilon"]) / 2
    for key in ("centre_rate", "side_epsilon", "aimed_rate"):
        bad = dataclasses.replace(q, details={**q.details,
                                              key: str(2 * Fraction(q.details[key]))})
        with pytest.raises(GuaranteeCheckError):
            check_fit_plan(bad, doms, beta=1e-4, shape="general")
    origin = plan(epsilon=1.0, delta=1e-6, domains=doms, method="quantiles", shape="origin")
    assert origin.chosen.details["centre_rate"] is None
    with pytest.raises(GuaranteeCheckError):  # a centre the origin shape does not draw
        check_fit_plan(q, doms, beta=1e-4, shape="origin")


@pytest.mark.parametrize("aimed", [True, False])
def test_the_box_draws_at_the_rates_the_check_charges(monkeypatch: pytest.MonkeyPatch,
                                                      aimed: bool) -> None:
    """The check reads the plan's rates (above); the run must draw with those very rates:
    every centre at ``centre_rate`` (Lemma QB1), an aimed side at ``aimed_rate`` = ε_s/2
    (the bracket score moves both ways: Lemma QB3 charges 2a), an unaimed one at
    ``side_epsilon`` (Lemma QB2). Drawing an aimed side at ε_s, or a centre at 2c, would
    spend twice what the check charged."""
    from dprect.core import quantile_box

    seen: dict[str, list[Fraction]] = {"centre": [], "side": []}
    centre, step = quantile_box.centre_from_counts, quantile_box.draw_step

    def spy_centre(counts, domain, rate, rng, favour_zero=False):  # type: ignore[no-untyped-def]
        seen["centre"].append(Fraction(rate))
        return centre(counts, domain, rate, rng, favour_zero)

    def spy_step(tails, stream, target, epsilon, rng, decay, **kw):  # type: ignore[no-untyped-def]
        seen["side"].append(Fraction(epsilon))
        return step(tails, stream, target, epsilon, rng, decay, **kw)

    monkeypatch.setattr(quantile_box, "centre_from_counts", spy_centre)
    monkeypatch.setattr(quantile_box, "draw_step", spy_step)
    X = np.random.default_rng(4).normal(5.0, 1.0, size=(2000, 2))
    doms = [Grid(0.0, 10.0, 1000)] * 2
    p = plan(epsilon=4.0, delta=1e-6, domains=doms, method="quantiles",
             positives=len(X) if aimed else None)
    d = p.chosen.details
    assert (side_target(0.0, len(X) if aimed else None, 4, Fraction(d["side_epsilon"]))
            > 0) == aimed
    run_plan(NumpyEngine.from_features(X, doms), doms, ["a", "b"], p, RandomSource(1))
    assert seen["centre"] == [Fraction(d["centre_rate"])] * 2
    side = Fraction(d["aimed_rate"] if aimed else d["side_epsilon"])
    assert seen["side"] == [side] * 4
    assert 2 * Fraction(d["aimed_rate"]) <= Fraction(d["side_epsilon"])  # the pair: ε_s


def test_quantiles_guarantee_is_the_composition_of_its_mechanisms() -> None:
    doms = [IntegerRange(0, 16)] * 8
    p = plan(epsilon=1.0, delta=1e-6, domains=doms, method="quantiles")
    comp = plan(epsilon=1.0, delta=1e-6, domains=doms, method="composition")
    assert p.chosen.ip_epsilon == comp.chosen.ip_epsilon  # R = 2d mechanisms, same ε₀
    assert p.chosen.guarantee.epsilon <= 1.0


def test_auto_runs_the_aimed_box_on_a_large_table_and_the_old_choice_without_n() -> None:
    """At flights' N and d the box aims at ⌊N/50⌋ rows a side and is predicted to miss
    more positives than composition (7.5% against 4.6%) but no more than composition plus
    that aim: auto runs it with a stated miss target, and — MOVED in s32 (issue #44's
    default allowance, planner.box_excess_allowed) — by default too: its excess, 2.8% of
    N, is within min(composition's miss, 4% of N). On flights itself at ε = 1 the box's
    balanced error is 0.458 against composition's 0.490 (docs/results.md §4.1: the positives
    it gives up lie in tails that hold more of the negatives). At ε = 4 composition's
    predicted miss (1.2%) is below the excess (6.2%) and auto keeps composition. Without N
    (no count: a classes' fit) the box is no candidate."""
    from dprect.core.planner import AUTO_BOX_EXCESS, AUTO_BOX_RELATIVE, box_excess_allowed

    doms = [IntegerRange(0, 2359)] * 6
    default = plan(epsilon=1.0, delta=1e-6, domains=doms, positives=80_100)
    assert default.chosen.method == "quantiles"
    assert "exceeds the other choice's by at most min(that choice's miss, 4% of N)" \
        in default.table()
    q, comp = default.candidates["quantiles"], default.candidates["composition"]
    excess = predicted_at(q, 80_100) - predicted_at(comp, 80_100)
    assert 0 < excess <= min(AUTO_BOX_RELATIVE * predicted_at(comp, 80_100),
                             AUTO_BOX_EXCESS * 80_100)
    assert box_excess_allowed(q, predicted_at(comp, 80_100), 80_100)
    strong = plan(epsilon=4.0, delta=1e-6, domains=doms, positives=80_100)
    assert strong.chosen.method == "composition"
    p = plan(epsilon=1.0, delta=1e-6, domains=doms, positives=80_100, target_miss=0.02)
    assert p.chosen.method == "quantiles"
    assert "aims at 1,602 clipped rows" in p.table()
    q, comp = p.candidates["quantiles"], p.candidates["composition"]
    assert predicted_at(comp, 80_100) < predicted_at(q, 80_100)  # not on the miss alone
    assert predicted_at(q, 80_100) <= predicted_at(comp, 80_100) + quantiles_aim(q, 80_100)
    assert plan(epsilon=1.0, delta=1e-6, domains=doms, auto_count=False
                ).chosen.method == "composition"


def test_the_default_aim_only_where_affordable() -> None:
    """t = ⌊N/50⌋ a side where (ε_s/2)·t ≥ 3/4 nat, else 0 (a small table keeps the
    monotone score at its full rate); the request's target_miss·N/R when larger."""
    assert AIM_SIDE_SHARE == Fraction(1, 50) and AIM_MIN_NATS == Fraction(3, 4)
    assert side_target(0.0, 1707, 12, Fraction(1, 15)) == 34  # (1/30)·34 ≥ 3/4
    assert side_target(0.0, 1707, 12, Fraction(1, 40)) == 0   # (1/80)·34 < 3/4
    assert side_target(0.0, 100, 8, Fraction(3, 4)) == 2  # (3/8)·2 = 3/4
    assert side_target(0.0, 100, 8, Fraction(1, 2)) == 0  # (1/4)·2 < 3/4
    assert side_target(0.0, 99, 8, Fraction(1)) == 0  # t = 1: 1/2 < 3/4
    assert side_target(0.24, 1707, 12, Fraction(1, 40)) == 34  # asked: ⌊0.24·1707/12⌋
    assert side_target(0.6, 1707, 12, Fraction(1, 15)) == 85
    assert side_target(0.0, None, 12, Fraction(1)) == 0


def test_a_box_without_n_does_not_aim_and_is_predicted_so() -> None:
    """A forced box without N runs every side at t = 0: its prediction at some N is the
    unaimed one, and with N the aim (and the aimed prediction) applies."""
    doms = [IntegerRange(0, 2359)] * 6
    bare = plan(epsilon=1.0, delta=1e-6, domains=doms, method="quantiles").chosen
    at_n = plan(epsilon=1.0, delta=1e-6, domains=doms, method="quantiles",
                positives=80_100).chosen
    assert quantiles_aim(bare, 80_100) == 0 and quantiles_aim(at_n, 80_100) > 0.1 * 80_100
    assert predicted_at(bare, 80_100) < 0.5 * predicted_at(at_n, 80_100)


def test_target_miss_needs_n() -> None:
    with pytest.raises(ParameterError):
        plan(epsilon=1.0, delta=1e-6, domains=[FloatOrder()], method="quantiles",
             target_miss=0.05)
    with pytest.raises(ParameterError):
        plan(epsilon=1.0, delta=1e-6, domains=[FloatOrder()], target_miss=1.5)
    p = plan(epsilon=1.0, delta=1e-6, domains=[FloatOrder()], method="quantiles",
             target_miss=0.05, positives=1000)
    assert p.chosen.details["target_miss"] == 0.05


def test_the_plan_prints_the_target_and_the_widening() -> None:
    """Item 3 of issue #44: the target in rows per side at N; for an unaimed box (t = 0)
    the predicted FP-side widening, the prior's mean overshoot e^−μ/(1 − e^−μ) steps of
    2^(1/r) each; an aimed side is charged past the data instead. At the user's N the
    expectation table shows the box's prediction at N (its aim included)."""
    from dprect.core.quantile_box import STEPS_PER_OCTAVE, overshoot_steps

    p = plan(epsilon=1.0, delta=1e-6, domains=[FloatOrder()] * 4, method="quantiles",
             target_miss=0.05, positives=3000)
    text = p.table()
    assert "each of its 8 sides aims at 60 clipped rows (at N = 3,000; the larger" in text
    assert "an aimed side is charged" in text and "farther" not in text
    share = predicted_at(p.chosen, 3000) / 3000
    assert p.expectation().share == pytest.approx(share) and share > 0.05
    p = plan(epsilon=1.0, delta=1e-6, domains=[FloatOrder()] * 4, method="quantiles",
             target_miss=0.5, positives=3000)
    assert "each of its 8 sides aims at 187 clipped rows" in p.table()
    p = plan(epsilon=1.0, delta=1e-6, domains=[FloatOrder()] * 4, method="quantiles",
             positives=100)  # t = 2 would cost (ε_s/2)·2 < 3/4 nat: no aim
    text = p.table()
    assert "the aim 0.02*N where affordable is not affordable" in text
    mu = Fraction(p.chosen.details["decay"])
    steps = overshoot_steps(mu)
    assert steps == pytest.approx(np.exp(-float(mu)) / (1 - np.exp(-float(mu))))
    wide = 2 ** (steps / STEPS_PER_OCTAVE) - 1
    assert f"about {100 * wide:.0f}% farther" in text
    assert "quantiles:" not in plan(epsilon=1.0, delta=1e-6, domains=[FloatOrder()] * 4,
                                    method="composition").table()


@pytest.mark.parametrize(("n", "d", "epsilon"), [
    (400, 3, 2.0), (60, 2, 4.0),
    (100, 2, 1.0)])
def test_the_planned_miss_is_calibrated_on_a_normal_table(n: int, d: int,
                                                          epsilon: float) -> None:
    """Item 3 of #44's acceptance on the model's own ground: the planner's predicted
    share outside (quantiles_predicted at the true N) within 25% of the measured mean, or
    within 0.02, over 40 seeded runs on normal positives on a public grid. Seeded, so the
    measured mean is one fixed number (0.007, 0.025, 0.057 here; over 400 seeds 0.008,
    0.027, 0.059). Planned 0.010, 0.023, 0.052 with the grid's end in the model
    (GRID_ROOM_SIGMAS: at μ = ε_s = 1/4 the prior's mass past the data pulls a side
    outward until the grid ends, here 7σ past the mean); without it 0.006, 0.019, 0.033,
    the third off (a power check: over 200 other samples of the table × 4 seeds the third
    measured 0.0587 ± 0.0033, so the model was off, not this sample). The old model (rows
    spread evenly over 12 steps, the sides' clips summed) planned 0.138 for the third."""
    X = np.random.default_rng(1).normal(3.0, 1.0, size=(n, d))
    doms = [Grid(-10, 10, 4000)] * d
    p = plan(epsilon=epsilon, delta=1e-6, domains=doms, method="quantiles")
    fn = [1 - run_plan(NumpyEngine.from_features(X, doms), doms, [f"x{j}" for j in range(d)],
                       p, RandomSource(seed=s)).contains(X).mean() for s in range(40)]
    measured, planned = float(np.mean(fn)), predicted_at(p.chosen, n) / n
    assert abs(planned - measured) <= max(0.02, 0.25 * measured), (planned, measured)


@pytest.mark.parametrize(("n", "d", "epsilon"), [
    (3000, 4, 1.0),
    pytest.param(20000, 6, 1.0, marks=pytest.mark.xfail(strict=True, reason=(
        "under the bracket score (s25-brake) the plan is 0.074, the measured mean 0.120 "
        "(0.111 / 0.120 under the score |q - t|): a side clips 307 rows on average, the "
        "model says 264 (t = 400), and the axes' clips overlap less than on the real "
        "tables (the bracket's clip within its step varies with each axis's phase): "
        "w = 0.8 would fit this cell and put six of the nine aimed real cells of "
        "docs/results.md 4.1 off. Partly the steps' phase (this fixed scale is one; "
        "with the data's scale spread over an octave the mean is 0.097-0.106), partly "
        "the model: an open calibration point"))),
    (1700, 6, 0.5), (1700, 6, 1.0)])
def test_the_aimed_plan_is_calibrated_on_shared_tails(n: int, d: int,
                                                      epsilon: float) -> None:
    """The aimed box's prediction (its sides at ⌊N/50⌋ rows, the axes' clips combined as
    M^(1−w)·I^w, w = AIMED_OVERLAP + (1 − AIMED_OVERLAP)·e^(−a·t/AIMED_NOISE_NATS)) within
    25% or 0.02 of the measured mean over 20 seeded runs, on normal positives whose features
    share a factor (ρ = 0.8: their tails hold largely the same rows, as on the real tables
    of docs/results.md §4.1): measured 0.089 and 0.120, planned 0.069 and 0.074 under the
    bracket score (the second an open point, strict xfail; before it, 0.110 / 0.097 and
    0.120 / 0.111). With w = 1 (the axes independent, the unaimed model's rule) the plan was
    0.13 and 0.21 and the second failed; on independent features the aimed plan under-
    predicts (0.138 and 0.174 measured): a limit of a model that no public parameter can
    tell the overlap to. At weather's N and d and ε ≤ 1 the aim is a few nats (a·t = 1.1,
    2.2): the sides' noise sets their clips, independent across the axes (measured 0.192 and
    0.123, planned 0.182 and 0.116 under the bracket score; 0.199 / 0.217 and 0.149 / 0.153
    before it); a constant w (no AIMED_NOISE_NATS term) planned 0.138 and 0.110 then and
    failed both."""
    g = np.random.default_rng(1)
    X = 3.0 + 0.8 * g.normal(size=(n, 1)) + 0.6 * g.normal(size=(n, d))
    doms = [Grid(-10, 10, 4000)] * d
    p = plan(epsilon=epsilon, delta=1e-6, domains=doms, method="quantiles", positives=n)
    assert quantiles_aim(p.chosen, n) > 0
    fn = [1 - run_plan(NumpyEngine.from_features(X, doms), doms, [f"x{j}" for j in range(d)],
                       p, RandomSource(seed=s)).contains(X).mean() for s in range(20)]
    measured, planned = float(np.mean(fn)), predicted_at(p.chosen, n) / n
    assert abs(planned - measured) <= max(0.02, 0.25 * measured), (planned, measured)


def test_the_float_order_prediction_is_stated_as_a_range() -> None:
    """docs/results.md §4.1b, point (b): on the float order the box's prediction is
    data-blind — the same plan (12.2% at 2,000 rows, d = 8, ε = 1) measured 0% on
    [−50, 50]^8 (a hard edge: the step holding a side's t-th row reaches past it), 12%
    on [0, 50]^8 and 19% on normal(0, 1)^8, and no one figure is within 0.02 of both
    ends. So the plan states a range, 0 to the independent union of the axes' clips
    (19.2% there), and says why; a public grid (whose range gives the model the data's
    scale) keeps its one figure. Measured here: each table's mean miss over 4 seeds lies
    in the range (one run may fall outside: the range is of the expected miss; single
    runs measured 12–21% on [0, 50]^8), and the tables' means more than 0.1·N apart (so
    no single figure would do)."""
    from dprect.core.planner import quantiles_predicted, quantiles_range

    dom = FloatOrder()
    doms = [dom] * 8
    n = 2000
    box = plan(epsilon=1.0, delta=1e-6, domains=doms, method="quantiles", positives=n)
    lo, hi = quantiles_range(box.chosen, n)  # type: ignore[misc]
    assert lo == 0.0
    assert hi == quantiles_predicted(box.chosen, n, independent=True)
    line = plan(epsilon=1.0, delta=1e-6, domains=doms, method="auto",
                positives=n).quantiles_line()
    assert line is not None and f"to {100 * hi / n:.3g}%" in line and "is a range" in line
    grid = plan(epsilon=1.0, delta=1e-6, domains=[Grid(0.0, 1.0, 4096)] * 8,
                method="auto", positives=n)
    assert quantiles_range(grid.candidates["quantiles"], n) is None
    assert "is a range" not in (grid.quantiles_line() or "")
    gen = np.random.default_rng(7)
    means = []
    for x in (gen.uniform(-50.0, 50.0, (n, 8)), gen.uniform(0.0, 50.0, (n, 8)),
              gen.normal(0.0, 1.0, (n, 8))):
        miss = [float(1 - run_plan(NumpyEngine.from_features(x, doms), doms,
                                   [f"f{j}" for j in range(8)], box,
                                   RandomSource(seed)).contains(x).mean()) * n
                for seed in range(4)]
        means.append(float(np.mean(miss)))
    assert all(lo <= m <= hi for m in means), (means, hi)
    assert max(means) - min(means) > 0.1 * n, means


def test_the_unaimed_plan_cannot_see_where_its_centre_splits_the_rows() -> None:
    """Why five unaimed small-table cells of docs/results.md §4.1 are off (issue #44, s34;
    benchmarks/box_model_shapes.py, docs/algorithm.md §10): at iris' public inputs (N = 50,
    d = 4, ε = 4, the float order) the plan is 11.8%, and the same plan measures 2.6% on
    rows inside one binade and 38% on rows over two to four binades (here, 20 seeded runs
    each; 1.7% and 24% on the benchmark's samples, 100 runs). The model gives each side of
    an axis N/2 rows; the centre is its coarse bin's first point (on the float order a
    binade's lowest float), so every row of the centre's binade lies on its hi side — on
    one-binade data the lo side holds none — and a side's clip is not linear in its rows.
    Where the centre splits the rows depends on where the data lie within their binades,
    which no public input tells: no one figure is within 25% of both. Asserted: the two
    shapes' misses on either side of the plan's 25% band, and the one-binade rows all on
    the hi side of every axis in every run."""
    from dprect.core.algorithms import run_quantiles
    from dprect.core.quantile_box import SideTrace

    n, d = 50, 4
    doms = [FloatOrder()] * d
    box = plan(epsilon=4.0, delta=1e-6, domains=doms, method="quantiles", positives=n).chosen
    planned = predicted_at(box, n) / n
    gen = np.random.default_rng(11)
    measured, below = {}, {}
    for name, X in (("one binade", gen.normal(100.0, 5.0, (n, d))),
                    ("two to four", gen.normal(3.0, 1.0, (n, d)))):
        idx = np.stack([dom.to_index(dom.encode(X[:, j])) for j, dom in enumerate(doms)], 1)
        fn, lo_rows = [], 0
        for s in range(20):
            trace: list[SideTrace] = []
            res = run_quantiles(NumpyEngine.from_features(X, doms), doms, box,
                                RandomSource(seed=s), n, trace=trace)
            ok = (idx >= np.array(res.lo, dtype=np.uint64)) & (
                idx <= np.array(res.hi, dtype=np.uint64))
            fn.append(1.0 - ok.all(axis=1).mean())
            lo_rows += sum(int((idx[:, x.axis] < np.uint64(x.centre)).sum())
                           for x in trace if x.side == "lo")
        measured[name], below[name] = float(np.mean(fn)), lo_rows
    assert below["one binade"] == 0 < below["two to four"]
    assert measured["one binade"] < 0.75 * planned < 1.25 * planned < measured["two to four"], (
        planned, measured)


@pytest.mark.parametrize(("epsilon", "old"), [(0.31, 1.80), (0.56, 2.06)])
def test_the_side_model_counts_the_centre_as_a_candidate(epsilon: float, old: float) -> None:
    """A side's model on its own ground (the origin shape's one side, 5 rows |Z|·σ on a
    fine grid, σ spread over an octave; 1,000 seeded runs): the side's first candidate is
    C itself, which clips every row (side_candidates' k = 0), and for a side of a few rows
    staying there is about as cheap as covering them. Without that candidate the model
    (predicted_clip) said 1.80 and 2.06 rows at ε_s = 0.31 and 0.56 where the mechanism
    clips 2.61 and 2.83 (31% and 27% under; benchmarks/box_model_shapes.py: 1.2–1.4 times
    at 5 rows at every ε_s); with it 2.21 and 2.48, within 20%. (The rest of the gap is
    the inner steps between C and σ/4, as many as σ has finest offsets: the data's scale.)"""
    from dprect.core.algorithms import run_quantiles
    from dprect.core.quantile_box import predicted_clip

    dom, n = IntegerRange(0, 2**24 - 1), 5
    box = plan(epsilon=epsilon, delta=1e-6, domains=[dom], shape="origin",
               method="quantiles").chosen
    side_eps = float(Fraction(box.details["side_epsilon"]))
    gen, clips = np.random.default_rng(105), []
    for s in range(1000):
        X = np.floor(np.abs(gen.normal(size=(n, 1))) * 2.0 ** (10 + gen.uniform()))
        res = run_quantiles(NumpyEngine.from_features(X, [dom]), [dom], box,
                            RandomSource(seed=s), None)
        clips.append(int((X[:, 0] > res.hi[0]).sum()))
    measured = float(np.mean(clips))
    model = predicted_clip(side_eps, n, 0, float(Fraction(box.details["decay"])))
    assert abs(model - measured) <= 0.2 * measured, (model, measured)
    assert abs(old - measured) > 0.2 * measured  # the model without C, for the record


def test_the_unaimed_float_order_model_averages_the_empty_bins() -> None:
    """Where an unaimed box's centre lands off its data (issue #44, s35; docs/algorithm.md
    §10): at iris' public inputs at ε = 0.5 (N = 50, d = 4, the float order, ε_s = 0.081)
    the centre lands in the data's binade in ~1% of the runs; otherwise every row lies on
    one side, and the side stays at C (clipping all 50) or walks to the data by the
    weights of its own candidates from C. The centre's law is uniform on the empty bins,
    so the model (predicted_axis_clip) averages that choice over every empty bin's own
    candidate list (empty_bin_reach) — 11.9 rows an axis — where it took one distance,
    S − 2r steps, for all (24.7 rows: iris planned 93.4% and measured 64.8%). Asserted on
    one-binade rows (seeded, 200 runs): the mean clip an axis within 25% of the model,
    and the old figure not."""
    from dprect.core.algorithms import run_quantiles
    from dprect.core.quantile_box import empty_bin_reach, predicted_axis_clip

    n, d = 50, 4
    doms = [FloatOrder()] * d
    box = plan(epsilon=0.5, delta=1e-6, domains=doms, method="quantiles", positives=n).chosen
    eps = float(Fraction(box.details["side_epsilon"]))
    model = predicted_axis_clip(eps, n, 0, float(Fraction(box.details["decay"])),
                                FloatOrder.size, float(Fraction(box.details["aimed_rate"])),
                                float_order=True)
    short, total = empty_bin_reach()
    assert len(short) > 4000 and (short >= 1).all() and (short < total).all()
    X = np.random.default_rng(7).normal(5.0, 0.4, (n, d))
    idx = np.stack([dom.to_index(dom.encode(X[:, j])) for j, dom in enumerate(doms)], 1)
    clips = []
    for s in range(200):
        res = run_quantiles(NumpyEngine.from_features(X, doms), doms, box,
                            RandomSource(seed=s), n)
        ok = (idx >= np.array(res.lo, dtype=np.uint64)) & (
            idx <= np.array(res.hi, dtype=np.uint64))
        clips.append((~ok).sum(axis=0).mean())
    measured = float(np.mean(clips))
    assert abs(model - measured) <= 0.25 * measured, (model, measured)
    assert abs(24.7 - measured) > 0.25 * measured  # the one-distance branch, for the record


@pytest.mark.parametrize(("m", "epsilon", "old"), [(9, 4.0, 0.159), (17, 1.0, 0.529)])
def test_the_grid_model_keeps_ties_inside_a_bound(m: int, epsilon: float, old: float) -> None:
    """A coarse public grid (issue #44, s38; docs/algorithm.md §10): a side's candidates
    are grid points and the rows grid values, so a bound on a value keeps every row tied
    with it (the centre's own point is in neither side's tails) and the side's steps are
    the mechanism's whole-cell offsets, not the continuum's. On the model's own ground —
    N = 178 rows a grid of m points, d = 16, each axis normal with σ = (m − 1)/10 cells
    (the grid ends GRID_ROOM_SIGMAS σ past its middle) rounded to the grid, its centre
    uniform within a cell (seeded, 100 runs) — the plan is within 25% or 0.02 of the
    measured miss (planned 0.086 and 0.334, measured 0.103 and 0.378; over 200 other
    samples 0.102 ± 0.003 and 0.368 ± 0.010); the continuum's model planned 0.159 and
    0.529 (off), and GRID_ROOM_SIGMAS = 4 or 7 is off on the 9-point grid, 3 or 7 on
    the 17-point one (a constant the test depends on)."""
    n, d = 178, 16
    doms = [IntegerRange(0, m - 1)] * d
    p = plan(epsilon=epsilon, delta=1e-6, domains=doms, method="quantiles", positives=n)
    gen, fn = np.random.default_rng(44), []
    for s in range(100):
        centre = (m - 1) // 2 + gen.uniform(-0.5, 0.5, d)
        X = np.clip(np.rint(centre + (m - 1) / 10 * gen.standard_normal((n, d))), 0, m - 1)
        res = run_plan(NumpyEngine.from_features(X, doms), doms,
                       [f"x{j}" for j in range(d)], p, RandomSource(seed=s))
        fn.append(1 - res.contains(X).mean())
    measured, planned = float(np.mean(fn)), predicted_at(p.chosen, n) / n
    assert abs(planned - measured) <= max(0.02, 0.25 * measured), (planned, measured)
    assert abs(old - measured) > max(0.02, 0.25 * measured)  # the continuum's, for the record
