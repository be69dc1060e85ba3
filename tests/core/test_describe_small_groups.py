"""Small groups in describe (issue #41, point 5; docs/privacy.md §11, "Small groups").

Each cell's count is released first and its value picks the split of the rest of the
column's ε: the plan's own split for large groups, the centre's share doubled for counts
below what the centre needs, and an anchored split (the centre from the other groups'
released means) below that. These tests check the splits and the counts that pick them
against the exact law of the centre, the independent check against a wrong split, the
draws against the independent re-draw, and the accuracy the splits are for: groups of a
few dozen to a few thousand rows get means near the truth and no runaway bounds. A column
with no cell of an own centre (no anchor: every group tiny, issue #42) takes the pooled
split instead: ONE centre drawn from its cells' pooled histogram (Lemma D6).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest
from describe_reference import centre_outside, magnitude_pieces, reference_describe, sign_weights

from dprect.core import aggregates
from dprect.core.aggregates import BlockDraws, plan_describe, run_describe
from dprect.core.guarantee_check import GuaranteeCheckError, check_describe_plan
from dprect.core.randomness import RandomSource


def _seeded(seed: int) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=seed)


@pytest.mark.parametrize("stats", [aggregates.STATISTICS, ("count",), ("mean",)])
def test_the_splits_and_the_counts_that_pick_them(stats):
    """The plan's own split is the large groups' (the shares of before); below it the
    centre's share doubles, capped, with least counts strictly decreasing; the last split
    is anchored and takes every smaller count. Every split spends the column's ε with the
    count's, and a count picks a split by its value alone (a monotone step function)."""
    p = plan_describe(1.0, 2, statistics=stats)
    eps_col = 0.5
    tiers = p.tiers
    assert tiers[0].centre_epsilon == pytest.approx(aggregates.CENTRE_SHARE * eps_col)
    assert tiers[0].side_epsilon == pytest.approx(aggregates.SIDES_SHARE * eps_col)
    assert (tiers[0].centre_epsilon, tiers[0].side_epsilon, tiers[0].sum_epsilon,
            tiers[0].target) == (p.centre_epsilon, p.side_epsilon, p.sum_epsilon, p.target)
    bars = [t.min_count for t in tiers]
    assert bars[-1] is None and tiers[-1].anchored and tiers[-1].stride == 2
    assert all(a > b for a, b in itertools.pairwise(bars[:-1]))  # type: ignore[operator]
    rest = eps_col - p.count_epsilon
    for k, t in enumerate(tiers[:-1]):
        assert not t.anchored and t.stride == 1
        assert t.centre_epsilon == pytest.approx(
            min(tiers[0].centre_epsilon * 2**k, aggregates.CENTRE_CAP * rest))
    for t in tiers:
        assert p.count_epsilon + t.centre_epsilon + t.side_epsilon + t.sum_epsilon \
            == pytest.approx(eps_col, rel=1e-8)
        if p.sum_epsilon:  # the sides keep their share, the sum pays for the centre
            assert t.side_epsilon == p.side_epsilon and t.sum_epsilon > 0
    picked = [p.tier_index(n) for n in range(-50, bars[0] + 50)]
    assert picked == sorted(picked, reverse=True)  # smaller counts, later splits
    assert p.tier_index(bars[0]) == 0 and p.tier_index(bars[0] - 1) == 1
    assert p.tier_index(-10**9) == len(tiers) - 1
    # the plan states them (JSON and printout)
    assert len(p.to_json()["splits_by_released_count"]) == len(tiers)
    assert "small groups: each cell's count is drawn first" in p.table()
    # a bounds-alone plan has no count to pick by: one split
    alone = plan_describe(1.0, 1, statistics=(), query_epsilon=0.5)
    assert len(alone.tiers) == 1 and alone.min_count is None and alone.tier_index(None) == 0


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_a_split_s_least_count_is_what_its_centre_needs(epsilon):
    """A released count at a split's least count M means, with probability ≥ 1 − β, at
    least M − ln(2/β)/ε_n rows; on that many rows the split's centre lies in the data's
    bins with probability ≥ 1 − β (exact law, data narrow and wide). With a third of them
    it does not (P(outside) > 100β): the least counts are not loose. A wrong
    CENTRE_ROWS_FACTOR or a least count without the count's error fails here."""
    p = plan_describe(epsilon, 1)
    assert p.count_error is not None
    for t in p.tiers[:-1]:
        assert t.min_count is not None
        rows = t.min_count - math.ceil(p.count_error)
        assert rows >= aggregates.centre_rows_at(t.centre_epsilon, p.beta) - 1
        narrow = np.random.default_rng(5).uniform(1e9, 1e9 + 3e7, rows)
        wide = np.random.default_rng(6).lognormal(0.0, 8.0, rows)
        for x in (narrow, wide):
            assert centre_outside(x, t.centre_epsilon) <= p.beta
        few = np.random.default_rng(3).uniform(100.0, 200.0, max(1, rows // 3))
        assert centre_outside(few, t.centre_epsilon) > 100 * p.beta


def test_the_check_re_derives_every_split():
    """The independent check refuses a plan whose smaller split spends 1% more in any
    mechanism, leaves a share unspent, picks splits without a count, or whose least
    counts do not decrease."""
    p = plan_describe(1.0, 2)
    assert p.check is not None and "splits by its released value" in p.check.route
    small = list(p.small)

    def with_split(i: int, **change: object) -> aggregates.DescribePlan:
        tiers = list(small)
        tiers[i] = dataclasses.replace(tiers[i], **change)  # type: ignore[arg-type]
        return dataclasses.replace(p, small=tuple(tiers), check=None)

    for i, t in enumerate(small):
        for name in ("side_epsilon", "sum_epsilon") + (("centre_epsilon",)
                                                       if not t.anchored else ()):
            with pytest.raises(GuaranteeCheckError):
                check_describe_plan(with_split(i, **{name: getattr(t, name) * 1.01}))
        with pytest.raises(GuaranteeCheckError, match="less than the requested"):
            check_describe_plan(with_split(i, side_epsilon=t.side_epsilon * 0.5))
    with pytest.raises(GuaranteeCheckError, match="do not decrease"):
        check_describe_plan(with_split(0, min_count=p.min_count))
    with pytest.raises(GuaranteeCheckError, match="chosen by a released count"):
        check_describe_plan(with_split(len(small) - 1, min_count=1))
    alone = plan_describe(1.0, 2, statistics=(), query_epsilon=0.5)
    with pytest.raises(GuaranteeCheckError, match="chosen by a released count"):
        check_describe_plan(dataclasses.replace(alone, min_count=10**6, small=small[-1:],
                                                check=None))
    assert check_describe_plan(dataclasses.replace(p, check=None)).epsilon == p.check.epsilon


def _groups(seed: int = 1) -> tuple[dict, list[str], list[str]]:
    """Groups of 0 to 20,000 rows, a column straddling zero with a heavy right tail
    (delays), one of one sign (distances) and a constant one."""
    gen = np.random.default_rng(seed)
    sizes = {"none": 0, "g25": 25, "g300": 300, "g400": 400, "g600": 600, "g1000": 1000,
             "g1500": 1500, "g3000": 3000, "g20k": 20_000}
    vals = {}
    for name, n in sizes.items():
        delay = np.round(gen.gamma(0.6, 30.0, n) - 12.0)
        distance = np.round(gen.uniform(200.0, 2600.0, n))
        vals[(name, 0)], vals[(name, 1)] = delay, distance
        vals[(name, 2)] = np.full(n, 4983.0)
    return vals, list(sizes), ["delay", "distance", "constant"]


def test_small_groups_get_means_near_the_truth_and_no_runaway():
    """On groups of 25 to 20,000 rows (ε = 1 per column), over 12 seeded runs: no bound
    beyond 1000× a column's largest |x|, every mean inside its bounds, and the means of the
    groups of 25 rows on within 50% of the truth in RMS, and of 300 rows on within 5% on
    the columns of one sign (before the small splits a
    centre that missed the data sent such groups' means to 1e287 or collapsed their bounds
    to ±2.6e-10: issue #41). Power: the relative errors the plan's own split alone gives on
    these groups exceed the limit (checked below on the same runs)."""
    vals, names, cols = _groups()
    plan = plan_describe(3.0, 3)
    err: dict[tuple[str, int], list[float]] = {}
    for seed in range(12):
        res = run_describe(plan, vals, names, cols, _seeded(100 + seed))
        for gi, g in enumerate(names):
            for j in range(3):
                c = res.cells[gi][j]
                assert c.mean is not None and c.lower <= c.mean <= c.upper
                big = max(float(np.max(np.abs(vals[(h, j)]))) for h in names if
                          len(vals[(h, j)]))
                assert max(abs(c.lower), abs(c.upper)) <= 1000 * big
                if len(vals[(g, j)]):
                    truth = float(np.mean(vals[(g, j)]))
                    err.setdefault((g, j), []).append((c.mean - truth) / truth)
    rel = {k: math.sqrt(float(np.mean(np.square(v)))) for k, v in err.items()}
    for g in ("g300", "g600", "g1000", "g3000", "g20k"):
        # the delays' mean is small beside their spread (4.8 against a tail to 187)
        assert rel[(g, 0)] < 0.6, (g, rel[(g, 0)])
        for j in (1, 2):
            assert rel[(g, j)] < 0.05, (g, j, rel[(g, j)])
    for j in (0, 1, 2):  # even 25 rows are placed by the anchor
        assert rel[("g25", j)] < 0.5


def test_the_plans_own_split_alone_fails_the_small_groups():
    """The power of the test above: drawn under the plan's own split only (what every
    group got before), the same groups of 300 to 1,000 rows miss by far more."""
    vals, names, cols = _groups()
    plan = plan_describe(3.0, 3)
    alone = dataclasses.replace(plan, min_count=None, small=())
    worst = 0.0
    for seed in range(12):
        res = run_describe(alone, vals, names, cols, _seeded(100 + seed))
        for gi, g in enumerate(names):
            if g in ("g300", "g600"):
                for j in range(3):
                    truth = float(np.mean(vals[(g, j)]))
                    worst = max(worst, abs(res.cells[gi][j].mean - truth) / truth)
    assert worst > 10.0


def test_small_splits_follow_the_documented_draw_order():
    """The independent re-draw (row by row, the documented order: counts, second-stream
    seed, own centres, the plan's own split's cells, then the anchors and the small
    splits' cells from each group's second stream) gives the same cells, and the run's
    cells span every split."""
    vals, names, cols = _groups(2)
    plan = plan_describe(3.0, 3)
    got = run_describe(plan, vals, names, cols, _seeded(9))
    table_rows = {c: np.concatenate([vals[(g, j)] for g in names]) for j, c in
                  enumerate(cols)}
    group = np.concatenate([[g] * len(vals[(g, 0)]) for g in names])
    table = pa.table({**table_rows, "g": group})
    want = reference_describe(plan, table, cols, "g", names, _seeded(9))
    assert got.cells == want
    rng = _seeded(9)
    seeds = rng.stream_seeds(len(names))
    picked = set()
    for g, s in zip(names, seeds, strict=True):
        r = RandomSource.stream(s)
        for j in range(3):
            picked.add(plan.tier_index(len(vals[(g, j)]) + r.discrete_laplace(
                plan.count_scale)))
    assert picked == set(range(len(plan.tiers)))


def _anchors(draws: list[BlockDraws]) -> list[float]:
    """Each column's anchor over ``draws`` (one column), as the product makes it."""
    return [aggregates.pool_anchor(f, c) for f, c in aggregates.anchor_pools(draws, 1)]


def test_the_anchor_is_the_median_of_the_large_groups_released_means():
    """Post-processing of released values only: the lower median of the means of the
    plan's own split's cells (centres when no sum is drawn, every own centre when no
    group is large, 0 when none); a small split's own centre far below the anchor's
    magnitude (the plateau near zero) is replaced by it."""
    d = BlockDraws(cells=[[None], [None], [None], [None]], tiers=[[0], [0], [2], [4]],
                   centres=[[1.0], [3.0], [0.5], [None]], counts=[[9], [9], [1], [0]],
                   resume=[None] * 4, means=[[10.0], [30.0], [None], [None]])
    assert aggregates.pool_anchor([], []) == 0.0
    assert _anchors([d]) == [10.0]
    no_sum = dataclasses.replace(d, means=[[None]] * 4)
    assert _anchors([no_sum]) == [1.0]
    small = dataclasses.replace(d, tiers=[[1], [1], [2], [4]])
    assert _anchors([small]) == [1.0]  # lower median of 0.5, 1, 3
    none = dataclasses.replace(d, tiers=[[4]] * 4, centres=[[None]] * 4)
    assert _anchors([none]) == [0.0]
    assert aggregates.small_centre(None, -7.0) == -7.0
    assert aggregates.small_centre(1e-10, -7.0) == -7.0  # in the plateau near zero
    assert aggregates.small_centre(-0.2, -7.0) == -0.2  # 2^-6 of 7 is 0.11
    assert aggregates.small_centre(0.1, -7.0) == -7.0


def test_a_block_without_centres_adds_nothing_and_one_with_any_centre_counts():
    """anchor_pools passes over a block whose every centre is None (a block of tiny
    groups) — the same pools as with it — and walks every block with a centre, however
    few and whatever its value: 0.0, -0.0 and NaN (false or unequal to themselves) and a
    centre in the last column of the last group."""
    nan = float("nan")
    empty = BlockDraws(cells=[[None, None]] * 3, tiers=[[4, 4]] * 3,
                       centres=[[None, None]] * 3, counts=[[1, 1]] * 3,
                       resume=[None] * 3, means=[[None, None]] * 3)
    for centres, want in (([[0.0, None], [None, None]], [([0.0], [0.0]), ([], [])]),
                          ([[None, None], [None, -0.0]], [([], []), ([-0.0], [-0.0])]),
                          ([[None, None], [nan, None]], [([], [nan]), ([], [])])):
        d = BlockDraws(cells=[[None, None]] * 2, tiers=[[0, 1], [1, 0]],
                       centres=centres, counts=[[9, 9]] * 2, resume=[None] * 2,
                       means=[[None, None]] * 2)
        for blocks in ([d], [empty, d], [d, empty, empty]):
            got = aggregates.anchor_pools(blocks, 2)
            assert repr(got) == repr(want)  # NaN and -0.0 told apart by their text
    assert aggregates.anchor_pools([empty], 2) == [([], []), ([], [])]


def test_the_pools_sum_the_anchored_cells_bins_and_released_counts():
    """The pooled split's pool is the bin-wise sum of the anchored split's cells'
    histograms (no other cell's) and its rows the sum of their released counts (negative
    ones as 0); pools of consecutive blocks join to the pools of their union."""
    p = plan_describe(1.0, 1)
    last = len(p.tiers) - 1
    h = (np.array([3, 7]), np.array([2, 5]))
    d = BlockDraws(cells=[[None], [None], [None]], tiers=[[0], [last], [last]],
                   centres=[[1.0], [None], [None]], counts=[[2000], [40], [-3]],
                   resume=[None] * 3, means=[[10.0], [None], [None]], pooled={0: h})
    e = dataclasses.replace(d, tiers=[[last]] * 3, counts=[[5], [1], [0]],
                            pooled={0: (np.array([1, 7]), np.array([4, 1]))})
    one = aggregates.small_pools(p, [d])
    assert one.rows == {0: 40} and one.first == [[10.0]] and one.centres == [[1.0]]
    both = aggregates.small_pools(p, [d, e])
    assert both.rows == {0: 46} and both.first == [[10.0]]
    keys, counts = both.hists[0]
    assert keys.tolist() == [1, 3, 7] and counts.tolist() == [4, 2, 6]
    assert both.hists[0][1].sum() == one.hists[0][1].sum() + 5


def test_a_pooled_centre_costs_each_row_the_centre_epsilon_once(monkeypatch):
    """Lemma D6 (docs/privacy.md §11): a column without an anchor draws ONE centre by the
    centre's exponential mechanism on the union of its anchored cells' rows; a row added
    to one group moves every pooled depth by at most 1, so the exact law of the pooled
    draw — its sign's and its magnitude's, Lemma D2 — moves by at most e^{ε_c} (and by
    more than e^{ε_c/4}: not far below the bound).
    The independent check charges the pooled split's centre ε_c once per row
    (``DESCRIBE_POOLS_PER_ROW`` = 1): with 2 it refuses the plan, with 0 it finds the
    budget unspent; a pooled split's centre raised by 1% is refused."""
    from dprect.core import guarantee_check
    from dprect.core.domains import FloatBins
    from dprect.core.interior_point import Pieces
    from dprect.core.tail_bounds import CENTRE_BITS

    p = plan_describe(1.0, 1)
    tier = p.pooled
    assert tier is not None and tier.pooled and tier.centre_epsilon == p.centre_epsilon
    assert tier.min_count is None and tier.stride == aggregates.SMALL_STRIDE
    assert p.count_epsilon + tier.centre_epsilon + tier.side_epsilon + tier.sum_epsilon \
        == pytest.approx(1.0, rel=1e-8)
    eps = tier.centre_epsilon * 40  # a larger ε: the ratio is far from 1, still exact
    gen = np.random.default_rng(4)
    groups = [np.round(gen.normal(m, 5.0, 9)) for m in (100.0, 130.0, 160.0)]
    pool = np.sort(np.concatenate(groups))
    grid = FloatBins(CENTRE_BITS)
    half = grid.size >> 1

    def law(x: np.ndarray) -> tuple[tuple[float, float], Pieces]:
        m = magnitude_pieces(x)  # the sign × magnitude law at ε (Lemma D2)
        return sign_weights(x, Fraction(eps) / 2), Pieces(
            m.starts, m.sizes, m.depths, eps * 4 / 5, m.grid_size)

    worst = 0.0
    for extra in (-50.0, 101.0, 131.0, 400.0):
        more = np.sort(np.append(pool, extra))
        (sa, a), (sb, b) = law(pool), law(more)
        points = {int(x) for x in a.starts} | {int(x) for x in b.starts}
        points |= {grid.index_of(abs(float(v))) - half for v in more}
        for y in sorted(points):
            for k in (0, 1):
                worst = max(worst, abs(math.log(sa[k] * a.point_probability(y)
                                                / (sb[k] * b.point_probability(y)))))
    assert worst <= eps * (1 + 1e-9)
    assert worst > eps / 4
    report = check_describe_plan(dataclasses.replace(p, check=None))
    splits = report.details["splits_by_released_count"]
    assert len(splits) == len(p.tiers) + 1
    assert splits[-1]["centre: sign"] + splits[-1]["centre: magnitude"] == pytest.approx(
        tier.centre_epsilon, rel=1e-9)
    assert splits[-1]["centre: sign"] == pytest.approx(tier.centre_epsilon / 5, rel=1e-9)
    with pytest.raises(GuaranteeCheckError):
        check_describe_plan(dataclasses.replace(p, check=None, pooled=dataclasses.replace(
            tier, centre_epsilon=tier.centre_epsilon * 1.01)))
    with pytest.raises(GuaranteeCheckError, match="not marked pooled"):
        check_describe_plan(dataclasses.replace(p, check=None, pooled=dataclasses.replace(
            tier, pooled=False)))
    monkeypatch.setattr(guarantee_check, "DESCRIBE_POOLS_PER_ROW", 2)
    with pytest.raises(GuaranteeCheckError):
        check_describe_plan(dataclasses.replace(p, check=None))
    monkeypatch.setattr(guarantee_check, "DESCRIBE_POOLS_PER_ROW", 0)
    with pytest.raises(GuaranteeCheckError, match="less than the requested"):
        check_describe_plan(dataclasses.replace(p, check=None))


def _tiny(groups: int = 400) -> tuple[dict, list[str]]:
    gen = np.random.default_rng(8)
    names = [f"g{i}" for i in range(groups)]
    vals = {}
    for g in names:
        vals[(g, 0)] = np.round(gen.uniform(900.0, 1100.0, 10))
        vals[(g, 1)] = -np.round(gen.uniform(40.0, 60.0, 10), 1)
    return vals, names


def test_a_column_of_tiny_groups_gets_means_near_the_truth():
    """Issue #42's scale: 400 groups of 10 rows, every one below the row need, so no
    column has an anchor. Their cells take the pooled split: one centre per column from the
    pooled histogram, so the sides start inside the data and the means land near the truth
    (median relative error below 20%; with the anchor of 0, before, the released means
    were about 1e-10: error 1), every mean inside its bounds and no bound beyond 1000× the
    column's largest |x|; a column of negative values too. The draws are the independent
    re-draw's."""
    vals, names = _tiny()
    plan = plan_describe(2.0, 2)
    for seed in range(2):
        res = run_describe(plan, vals, names, ["a", "b"], _seeded(40 + seed))
        for j in range(2):
            big = max(float(np.max(np.abs(vals[(g, j)]))) for g in names)
            errs = []
            for gi, g in enumerate(names):
                c = res.cells[gi][j]
                assert c.mean is not None and c.lower <= c.mean <= c.upper
                assert max(abs(c.lower), abs(c.upper)) <= 1000 * big
                truth = float(np.mean(vals[(g, j)]))
                errs.append(abs(c.mean - truth) / abs(truth))
            assert float(np.median(errs)) < 0.2, (seed, j, float(np.median(errs)))
    table = pa.table({"a": np.concatenate([vals[(g, 0)] for g in names]),
                      "b": np.concatenate([vals[(g, 1)] for g in names]),
                      "g": np.repeat(names, 10)})
    assert reference_describe(plan, table, ["a", "b"], "g", names, _seeded(40)) == \
        run_describe(plan, vals, names, ["a", "b"], _seeded(40)).cells


def test_a_column_with_an_anchor_or_a_small_pool_is_drawn_as_before(monkeypatch):
    """The pooled split is taken only by a column without an anchor whose cells' released
    rows reach the need: with one large group in the column, or with too few tiny groups,
    no pooled centre is drawn (the draws are those of the anchored split)."""
    drawn: list[int] = []
    real = aggregates.column_centres

    def spy(plan, pools, rng):
        out = real(plan, pools, rng)
        drawn.extend(j for j, (_, pooled) in enumerate(out) if pooled)
        return out

    monkeypatch.setattr(aggregates, "column_centres", spy)
    vals, names = _tiny()
    plan = plan_describe(2.0, 2)
    run_describe(plan, vals, names, ["a", "b"], _seeded(3))
    assert drawn == [0, 1]
    drawn.clear()
    big = {**vals, ("big", 0): np.full(5000, 1000.0)}
    run_describe(plan, big, [*names, "big"], ["a", "b"], _seeded(3))
    assert drawn == [1]  # column a has the large group's anchor
    drawn.clear()
    run_describe(plan, vals, names[:20], ["a", "b"], _seeded(3))
    assert drawn == []  # 200 rows: below the pooled centre's need
