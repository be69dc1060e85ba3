"""The small groups' quantiles (docs/privacy.md §11a, "Small groups";
:mod:`dprect.core.quantile_centre`): the centre's law is ε_c-DP, the windowed draw under
the decaying base measure follows its law exactly (χ², with power against the law
without the decay), the plan's check re-derives both splits and refuses a wrong
constant, and a group of 300 rows gets its p10 and p90 near its data where the uniform
measure over the whole grid sends them anywhere."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dprect.core import guarantee_check, randomness
from dprect.core.guarantee_check import GuaranteeCheckError, check_quantiles_plan
from dprect.core.interior_point import sample_unimodal
from dprect.core.quantile_centre import (
    DECAY,
    WINDOW_DECADES,
    block_count,
    block_levels,
    block_rows,
    blocks,
    centre_pieces,
    draw_near,
    levels,
    measure_mass,
    rank_frame,
    restrict,
    sign_pieces,
    sign_rows,
    signs,
    window,
)
from dprect.core.quantile_draws import near_centre
from dprect.core.quantiles import (
    _cell_rows,
    _ranks,
    draws,
    plan_quantiles,
    quantile_grid,
    quantile_law,
    quantile_statistics,
    release_cell,
)
from dprect.core.randomness import RandomSource

GRID = quantile_grid("decimal", 5)


def test_blocks_and_window_follow_the_magnitudes() -> None:
    x = np.array([-1e300, -12.0, -1.0, -5e-324, 0.0, 1e-300, 1.0, 12.0, 1e300])
    b = blocks(GRID, GRID.encode(x))
    assert b[3] == b[4] == 0  # zero's block
    assert b[1] == b[7] and b[2] == b[6] and b[1] == b[2] + 1  # one block per decade
    centre = int(b[7])  # the decade [10, 100)
    ranges = window(GRID, centre, 1)  # the median's sign class: zero (no side favoured)
    inside = [any(a <= i < z for a, z in ranges) for i in GRID.encode(x).tolist()]
    assert inside == [False, True, True, True, True, False, True, True, False]
    probe = GRID.encode(np.array([15.0, -15.0, 1.5, 1e5, 0.0, -1e3, 1e3]))
    assert levels(GRID, centre, 1, probe).tolist() == [0, 0, 1, 4, 2, 2, 2]
    assert levels(GRID, centre, 2, probe).tolist() == [0, 2, 1, 4, 2, 4, 2]  # positive
    ranges = window(GRID, centre, 2)
    assert [any(a <= i < z for a, z in ranges) for i in probe.tolist()] == \
        [True, True, True, True, True, True, True]
    assert not any(a <= int(GRID.encode(np.array([-1e4]))[0]) < z for a, z in ranges)
    assert int(block_levels(GRID, centre, np.array([centre + WINDOW_DECADES]))[0]) \
        == WINDOW_DECADES


def test_block_and_sign_rows_are_the_counts_summed_per_key() -> None:
    """The centre's and the sign's rows per block and per class, read off the sorted
    keys' cumulative counts (:func:`block_rows`, :func:`sign_rows`), are the counts summed
    key by key into each key's block and class — on keys at every run's edge (the grid's
    ends, each sign's last decade, zero's two cells), one key, none, and wide random
    cells; a run cut one cell off (an edge misplaced) fails it."""
    gen = np.random.default_rng(5)
    edges = [0, 1, GRID.per_decade - 1, GRID.per_decade, GRID.per_sign - 1, GRID.per_sign,
             GRID.zero, GRID.zero + 1, GRID.zero + GRID.per_decade,
             GRID.zero + 1 + GRID.per_decade, GRID.size - 1]
    cells = [np.array([k]) for k in edges] + [np.array(edges)]
    for _ in range(400):
        near = gen.choice(edges, size=int(gen.integers(0, 4)))
        spread = gen.integers(0, GRID.size, int(gen.integers(1, 60)))
        decade = GRID.zero + 1 + 7 * GRID.per_decade + gen.integers(0, 3 * GRID.per_decade, 30)
        cells.append(np.unique(np.concatenate([near, spread, decade])))
    for keys in cells:
        keys = np.asarray(keys, dtype=np.int64)
        counts = gen.integers(1, 1000, len(keys)).astype(np.int64)
        per_block = np.zeros(block_count(GRID), dtype=np.int64)
        np.add.at(per_block, blocks(GRID, keys), counts)
        per_sign = np.zeros(3, dtype=np.int64)
        np.add.at(per_sign, signs(GRID, keys), counts)
        incl = np.cumsum(counts)
        assert block_rows(GRID, keys, incl).tolist() == per_block.tolist()
        assert sign_rows(GRID, keys, incl).tolist() == per_sign.tolist()
    none = np.zeros(0, dtype=np.int64)
    assert not block_rows(GRID, none, none).any() and not sign_rows(GRID, none, none).any()


def test_centre_law_is_centre_epsilon_dp() -> None:
    """The centre's float law on a table and on one-row neighbours: the worst log-ratio is
    within ε_c and above 0.9·ε_c: the score moves by at most a half row (Lemma Q1 at
    q = 1/2), so the rate ε_c/2 per half row spends all of ε_c (ε_c/4, a rate for a
    sensitivity of 1 row, spent half) and no more."""
    eps = 0.8
    base = np.array([0.3, 1.0, 2.0, 2.0, 30.0, 45.0, 700.0, -5.0])

    def law(x: np.ndarray) -> np.ndarray:
        st = quantile_statistics(x, plan_quantiles([0.5], 1.0))
        p = centre_pieces(GRID, st.keys, st.counts, eps)
        # per block (the pieces tile the blocks; split them to single blocks)
        out = np.zeros(GRID.per_sign // GRID.per_decade + 1)
        probs = p.probabilities()
        for s, z, pr in zip(p.starts.tolist(), p.sizes.tolist(), probs, strict=True):
            out[s:s + z] = pr / z
        return out

    p = law(base)
    worst = 0.0
    for extra in (-1e9, 0.0, 0.5, 3.0, 40.0, 1e12):
        q = law(np.append(base, extra))
        worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(q)))))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.9 * eps  # the rate ε_c/2 per half row, not halved


def test_sign_law_is_its_epsilon_dp() -> None:
    """The sign's float law (three classes) on a table and its one-row neighbours: the
    worst log-ratio is within its ε and above half of it (the rate ε/2 per half row, not
    halved)."""
    eps = 0.6
    base = np.array([-3.0, -1.0, 0.0, 2.0, 5.0, 9.0])

    def law(x: np.ndarray) -> np.ndarray:
        st = quantile_statistics(x, plan_quantiles([0.5], 1.0))
        p = sign_pieces(GRID, st.keys, st.counts, eps)
        out = np.zeros(3)
        for s, z, pr in zip(p.starts.tolist(), p.sizes.tolist(), p.probabilities(),
                            strict=True):
            out[s:s + z] = pr / z
        return out

    p = law(base)
    worst = max(float(np.max(np.abs(np.log(p) - np.log(law(np.append(base, e))))))
                for e in (-7.0, 0.0, 4.0))
    assert eps / 2 < worst <= eps * (1 + 1e-9)


def _law_by_block(pieces, ranges, offsets, centre: int, sign: int, decay: float) -> dict:
    """The windowed draw's law per (sign, block), in floating point."""
    probs: dict[tuple[int, int], float] = {}
    logw = []
    cats = []
    rate = pieces.epsilon / 2
    for s, z, d in zip(pieces.starts.tolist(), pieces.sizes.tolist(),
                       pieces.depths.tolist(), strict=True):
        y = s
        while y < s + z:  # split the piece at its ranges and decades
            r = int(np.searchsorted(offsets, y, side="right")) - 1
            i = ranges[r][0] + (y - offsets[r])
            b = int(blocks(GRID, np.array([i]))[0])
            end = min(s + z, offsets[r] + ranges[r][1] - ranges[r][0])
            if b > 0:  # to the end of this decade
                if i > GRID.zero:
                    stop = GRID.zero + 1 + b * GRID.per_decade
                else:
                    stop = GRID.per_sign - (b - 1) * GRID.per_decade
                end = min(end, y + (stop - i))
            lv = int(levels(GRID, centre, sign, np.array([i]))[0])
            logw.append(math.log(end - y) + rate * d - decay * lv)
            cats.append((int(i > GRID.zero) - int(i < GRID.per_sign), b))
            y = end
    w = np.exp(np.array(logw) - max(logw))
    w /= w.sum()
    for c, p in zip(cats, w, strict=True):
        probs[c] = probs.get(c, 0.0) + float(p)
    return probs


def test_windowed_draw_follows_its_law_with_power() -> None:
    x = np.array([3.0, 5.0, 8.0, 8.0, 12.0, 40.0])
    plan = plan_quantiles([0.5], 0.02, centre=False)
    st = quantile_statistics(x, plan)
    pieces = quantile_law(st, plan, 0)
    centre = int(blocks(GRID, GRID.encode(np.array([8.0])))[0])
    sign = 2  # positive
    ranges = window(GRID, centre, sign)
    cut, offsets = restrict(pieces, ranges)
    rng = RandomSource(9)
    n = 3000
    drawn = [draw_near(pieces, plan.rates[0], GRID, centre, sign, rng) for _ in range(n)]
    got: dict[tuple[int, int], int] = {}
    for i in drawn:
        b = int(blocks(GRID, np.array([i]))[0])
        key = (int(i > GRID.zero) - int(i < GRID.per_sign), b)
        got[key] = got.get(key, 0) + 1

    def pvalue(law: dict) -> float:
        keys = sorted(set(law) | set(got))
        obs = np.array([got.get(k, 0) for k in keys], dtype=float)
        exp = np.array([law.get(k, 0.0) for k in keys]) * n
        assert (exp[obs > 0] > 0).all()  # nothing drawn outside the law's support
        return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)

    assert pvalue(_law_by_block(cut, ranges, offsets, centre, sign, float(DECAY))) > 1e-4
    assert pvalue(_law_by_block(cut, ranges, offsets, centre, sign, 0.0)) < 1e-6  # power


def test_check_rederives_both_splits_and_refuses_wrong_constants(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_quantiles([0.1, 0.5, 0.9], 1.0, columns=2)
    assert plan.counted and not plan.centred and plan.branch(0).centred
    assert plan.check is not None and plan.check.epsilon <= 1.0
    assert plan.check.epsilon > 0.99  # both splits spend the column's ε
    for field, factor in (("small_epsilon_each", 1.01), ("small_centre_epsilon", 1.05),
                          ("count_epsilon", 1.2), ("epsilon_each", 1.01)):
        wrong = dataclasses.replace(plan, **{field: getattr(plan, field) * factor})
        with pytest.raises(GuaranteeCheckError):
            check_quantiles_plan(wrong)
    with pytest.raises(GuaranteeCheckError):  # more columns than the budget was split for
        check_quantiles_plan(dataclasses.replace(plan, columns=3))
    monkeypatch.setattr(guarantee_check, "QUANTILE_SENSITIVITY", 2)
    with pytest.raises(GuaranteeCheckError):
        check_quantiles_plan(plan)


def test_rows_needed_is_stated_and_the_split_follows_the_count() -> None:
    plan = plan_quantiles([0.1, 0.5, 0.9], 1.0)
    assert plan.split_rows > 0 and plan.rows_needed() > 0
    assert plan.to_json()["rows_needed"] == plan.rows_needed()
    assert plan.branch(plan.split_rows) is plan
    small = plan.branch(plan.split_rows - 1)
    assert small.centred and small.epsilon_each == plan.small_epsilon_each


@pytest.mark.parametrize("compiled", [False, True])
def test_a_cells_split_is_picked_by_its_released_count(
        compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Theorem Q's adaptive split (docs/privacy.md §11a, step 2): a cell's draws after its
    count are those of the split its NOISY count n̂ picks, never the true n's — on
    groups of split_rows − 1 and split_rows rows, where the noise moves many seeds across
    the split. The reference draws the count itself, picks the split by n̂ here, and
    draws that split's quantiles without a count from the same stream; the release's
    rank error follows the same split. On the Python path and on the compiled one."""

    if compiled:
        jit = pytest.importorskip("dprect.core.random_jit")
        monkeypatch.setattr(randomness, "_KERNELS", jit)
    else:
        monkeypatch.setattr(randomness, "_KERNELS", None)
    plan = plan_quantiles([0.1, 0.5, 0.9], 1.0)
    large = dataclasses.replace(plan, count_epsilon=0.0)
    small = dataclasses.replace(plan, count_epsilon=0.0, split_rows=0,
                                centre_epsilon=plan.small_centre_epsilon,
                                epsilon_each=plan.small_epsilon_each)
    assert not large.centred and small.centred and not large.counted
    scale = plan.count_scale
    crossed = set()
    for n in (plan.split_rows - 1, plan.split_rows):
        x = np.random.default_rng(n).lognormal(3, 1, n)
        st = quantile_statistics(x, plan)
        for seed in range(12):
            got, noisy = draws(st, plan, RandomSource(seed))
            ref = RandomSource(seed)
            want_noisy = n + ref.discrete_laplace_int(scale.denominator, scale.numerator)
            picked_small = want_noisy < plan.split_rows
            want, none = draws(st, small if picked_small else large, ref)
            assert none is None and (got, noisy) == (want, want_noisy), (n, seed)
            cell = release_cell(st, plan, RandomSource(seed))
            assert (cell.rank_error is None) is picked_small
            crossed.add((n < plan.split_rows, picked_small))
    # power: both splits drawn, and in both directions against the true count's
    assert (True, False) in crossed and (False, True) in crossed


#: the centre's block draw takes this share of a small group's ε_c, the sign the rest
#: (docs/privacy.md §11a, step 3: "(4/5)·ε_c/4 per half row", "the other fifth"), written
#: here again, not read from ``quantile_centre.SIGN_PART``
REFERENCE_BLOCK_PART = Fraction(4, 5)


def test_a_small_groups_centre_and_sign_take_the_documented_shares(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A small group's draws are, bit for bit, a reference's: its count, then the centre's
    block at (4/5)·ε_c/2 and the sign class at (1/5)·ε_c/2 per half row (the exact sampler
    on the rank laws), then the quantiles in that window (:func:`near_centre`), on seeds
    of a column of both signs over many decades; a reference with the shares 3/4 and 1/4
    differs on some seed (power). A wrong ``SIGN_PART`` — which the check, the centre's
    row need and the laws' own tests all follow — fails here."""

    monkeypatch.setattr(randomness, "_KERNELS", None)
    plan = plan_quantiles([0.1, 0.5, 0.9], 1.0)
    small = plan.branch(-1)
    eps_c, scale = Fraction(small.centre_epsilon), plan.count_scale
    gen = np.random.default_rng(11)
    x = gen.lognormal(0.0, 5.0, 60) * gen.choice([-1.0, 1.0], 60)
    st = quantile_statistics(x, plan)
    keys, incl = _cell_rows(st, GRID)
    frame = rank_frame(*_ranks(GRID, keys, st.counts, st.at_value, incl), GRID.size)

    def reference(seed: int, block_part: Fraction) -> list[int]:
        rng = RandomSource(seed)
        assert len(x) + rng.discrete_laplace_int(scale.denominator, scale.numerator) \
            < plan.split_rows  # the small split
        centre = sample_unimodal(centre_pieces(GRID, keys, st.counts, 1.0, incl),
                                 eps_c * block_part / 2, rng)
        sign = sample_unimodal(sign_pieces(GRID, keys, st.counts, 1.0, incl),
                               eps_c * (1 - block_part) / 2, rng)
        return near_centre(frame, small.quantiles, small.rates, GRID, centre, sign, rng)

    differs = False
    for seed in range(10):
        got, _ = draws(st, plan, RandomSource(seed))
        assert got == reference(seed, REFERENCE_BLOCK_PART), seed
        differs |= got != reference(seed, Fraction(3, 4))
    assert differs


def test_the_measures_mass_is_the_documented_one() -> None:
    """Theorem Q″'s M_c (:func:`measure_mass`, in the rank bound T′ of a small group):
    with the base measure's documented decay λ = 3/2 a decade and a window of 4 decades
    (docs/privacy.md §11a, step 4), a centre at zero's block leaves every other cell two
    decades away, so M_c = 2 + (M − 2)·e^{−2λ} ≈ 5.4·10⁶, and a decade's centre gets its
    own block, two blocks at each level 1 … 4 and zero's two cells at level 2,
    2·per_decade·(1 + 2·Σ e^{−λl}) + 2·e^{−2λ} ≈ 2.8·10⁵ — the largest being zero's. A
    wrong ``DECAY`` (which the windowed draw and its law's test both read) fails here."""
    lam, window_decades = 1.5, 4
    zero = 2 + (GRID.size - 2) * math.exp(-2 * lam)
    decade = 2 * GRID.per_decade * (1 + 2 * sum(math.exp(-lam * level)
                                                for level in range(1, window_decades + 1))) \
        + 2 * math.exp(-2 * lam)
    assert measure_mass(GRID) == pytest.approx(zero, rel=1e-12)
    assert 5.3e6 < zero < 5.5e6 and 2.7e5 < decade < 2.9e5
    mid = block_count(GRID) // 2  # a positive decade far from both ends and from zero
    lv = block_levels(GRID, mid, np.arange(block_count(GRID)))
    sizes = np.where(np.arange(block_count(GRID)) == 0, 2.0, 2.0 * GRID.per_decade)
    inside = lv <= window_decades
    assert float((sizes[inside] * np.exp(-lam * lv[inside])).sum()) == \
        pytest.approx(decade, rel=1e-12)


def test_small_groups_land_near_their_data() -> None:
    """300 rows of a log-normal column at ε = 1: with the centre every released value
    lies within the window's decades of the data's scale (|v| ≤ 10^4·max|x|) over 30
    seeds; the uniform measure over the whole grid (the mechanism before) sends some
    beyond it (power)."""
    x = np.random.default_rng(5).lognormal(3, 1, 300)
    lo, hi = -(10.0 ** WINDOW_DECADES) * x.max(), 10.0 ** WINDOW_DECADES * x.max()
    for centre, expect_near in ((None, True), (False, False)):
        plan = plan_quantiles([0.1, 0.5, 0.9], 1.0, centre=centre)
        st = quantile_statistics(x, plan)
        near = []
        for seed in range(30):
            cell = release_cell(st, plan, RandomSource(seed))
            near.append(all(lo <= v <= hi for v in cell.values))
            assert cell.small is (True if centre is None else None)
        assert all(near) is expect_near


def test_a_few_keys_law_is_the_frames_law() -> None:
    """``rank_pieces`` of a few occupied cells (the centre's blocks, the sign's classes:
    made in Python integers) gives the frame's pieces and depths, array for array — keys
    at the grid's ends, adjacent keys (no gap), ties in the ranks, one key, every q."""
    import random
    from fractions import Fraction

    from dprect.core import quantile_centre as qc

    gen = random.Random(35)
    made = 0
    for _ in range(400):
        m = gen.choice([3, 7, 601, 10**8])
        u = gen.randrange(1, min(m, qc.FEW_KEYS) + 1)
        keys = np.array(sorted(gen.sample(range(m), u)) if m < 100 else
                        sorted({gen.choice([0, 1, 2, m - 2, m - 1, gen.randrange(m)])
                                for _ in range(u)}), dtype=np.int64)
        counts = np.array([gen.choice([1, 2, 5, 10**6]) for _ in keys], dtype=np.int64)
        incl = np.cumsum(counts)
        at = np.array([gen.randrange(0, c + 1) for c in counts.tolist()], dtype=np.int64)
        row_lo, row_hi = incl - counts, incl - counts + at
        q = Fraction(gen.randrange(0, 101), 100)
        got = qc.rank_pieces(keys, row_lo, row_hi, incl, m, q, 0.5)
        frame = qc.rank_frame(keys, row_lo, row_hi, incl, m)
        want = qc.as_depths(frame.weighted(q))
        assert got.starts.dtype == got.sizes.dtype == np.uint64
        assert got.depths.dtype == np.int64
        assert got.starts.tolist() == frame.starts.tolist()
        assert got.sizes.tolist() == frame.sizes.tolist()
        assert got.depths.tolist() == want.tolist()
        assert (got.epsilon, got.grid_size) == (0.5, m)
        made += 1
    assert made == 400
