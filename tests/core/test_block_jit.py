"""A block of describe cells drawn in one compiled call (dprect.core.block_jit, through
dprect.core.cell_draws.draw_cells) draws what the cells draw one by one: the same steps
and noises, and the same bits consumed — every source's state after is the same — over
many random cells (short and long tails, heavy ties, empty sides, fresh streams that
make the compiled side ask and pause, a split whose integers do not fit int64, strided
sides, one-word, two-word and Python-only noise scales); and whole describe runs give
the same released rows with the block and cell by cell."""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("numba")

from dprect.core import cell_draws, randomness
from dprect.core import random_jit as jit
from dprect.core.aggregates import plan_describe, run_describe
from dprect.core.cell_draws import CellDraw, draw_cell, draw_cells, noise_value
from dprect.core.describe_stats import (
    BinBlock,
    BinStatistics,
    bin_statistics,
    cell_statistics,
    data_tails,
    joined_tails,
)
from dprect.core.errors import ParameterError
from dprect.core.randomness import JointStreams, RandomSource
from dprect.core.tail_bounds import SEARCH_BITS, CandidateStream


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled samplers from the first draw."""
    monkeypatch.setattr(randomness, "_KERNELS", jit)


@dataclass(frozen=True)
class _Tier:
    target: int
    stride: int
    side_rate: Fraction


TIERS = [_Tier(40, 1, Fraction(0.3)), _Tier(7, 2, Fraction(1, 3)),
         _Tier(1000, 1, Fraction(2.5)),
         _Tier(3, 1, Fraction(1, 2**70))]  # den past 2^62: the sides run in Python
NOISES = [(), ((1, 5),), ((3, 2**70 + 1), (1, 7)),  # a two-word scale, then one word
          ((1, 2**100),),  # past the compiled samplers' 2^96: Python
          (((Fraction(2**30) / Fraction(0.0123)).denominator,  # a sum's: two words
            (Fraction(2**30) / Fraction(0.0123)).numerator),)]


def _tails(gen: random.Random) -> np.ndarray:
    """A side's tail counts: non-increasing, ≥ 0 (suffix sums of counts)."""
    shape = gen.randrange(6)
    n = [0, 1, 3, 20, 120, 400][shape]
    scale = gen.choice([1, 5, 1000, 10**7])
    counts = [gen.randrange(scale + 1) if gen.random() < 0.6 else 0 for _ in range(n)]
    if n and gen.random() < 0.3:  # heavy ties: one step holds most rows
        counts[gen.randrange(n)] += 50 * scale
    return np.cumsum(counts[::-1])[::-1].astype(np.int64) if n else np.zeros(0, np.int64)


def _cells(seed: int, count: int, rows: int) -> list[CellDraw]:
    gen = random.Random(seed)
    out = []
    row = 0
    for _ in range(count):
        centre = gen.choice([0.0, 1.5, -3.25, 1e6, 7.0e-5, -2.0e30])
        lower, upper = CandidateStream(centre, "lower"), CandidateStream(centre, "upper")
        if gen.random() < 0.5:  # candidates made already: no question to the stream
            lower.has(gen.randrange(1, 600))
            upper.has(gen.randrange(1, 600))
        noises = gen.choice(NOISES)
        out.append(CellDraw(_tails(gen), _tails(gen), lower, upper, gen.choice(TIERS),
                            tuple((int(s), int(t)) for s, t in noises), row))
        if gen.random() < 0.4:  # the next cell is the next group's: rows ascend
            row = min(row + 1, rows - 1)
    return out


def _sources(seed: int, rows: int) -> list[RandomSource]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = RandomSource(seed=seed)
    return [RandomSource.stream(s) for s in base.stream_seeds(rows)]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_block_draws_what_its_cells_draw_one_by_one(seed: int) -> None:
    rows = 12
    cells = _cells(seed, 160, rows)
    one, block = _sources(seed, rows), _sources(seed, rows)
    want = []
    for c in _cells(seed, 160, rows):  # fresh streams: as the block's cells found them
        want.append(draw_cell(c, one[c.row]))
    assert JointStreams.possible(block)
    got = draw_cells(cells, block)
    assert got == want
    for a, b in zip(one, block, strict=True):  # the same bits consumed, row by row
        assert a.randbits(64) == b.randbits(64)
        assert np.array_equal(a._state()[1], b._state()[1])
    # the cases reach what they are for: big steps, strided sides, every noise kind
    assert any(kl > 40 or ku > 40 for kl, ku, _ in got)
    assert any(c.tier.stride == 2 for c in cells)
    assert any(len(n) == 2 for _, _, n in got)


def test_the_block_stops_for_python_and_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fresh streams make the compiled sides ask and pause; the split past int64 and the
    scale past 2^96 are drawn in Python: every kind of stop is met, and drawn as the
    one-cell path draws it."""
    stops: list[int] = []
    real = cell_draws._Block._in_python

    def spy(self: cell_draws._Block, i: int, ph: int, status: int, out: object) -> int:
        stops.append(status)
        return real(self, i, ph, status, out)

    monkeypatch.setattr(cell_draws._Block, "_in_python", spy)
    rows = 6
    one, block = _sources(9, rows), _sources(9, rows)
    want = [draw_cell(c, one[c.row]) for c in _cells(9, 200, rows)]
    assert draw_cells(_cells(9, 200, rows), block) == want
    assert {jit.ASK, jit.PAUSE, jit.PYTHON} <= set(stops)


def test_an_unseeded_block_shares_one_source() -> None:
    """Groups without a seed share one OS source: the block draws from its pool (and a
    list of distinct unseeded sources is drawn cell by cell)."""
    shared = RandomSource()
    cells = _cells(5, 40, 3)
    assert JointStreams.possible([shared] * 3)
    assert not JointStreams.possible([RandomSource(), RandomSource(), RandomSource()])
    seeded = _sources(2, 3)
    assert JointStreams.possible(seeded)
    assert not JointStreams.possible([*seeded, seeded[0]])  # one seeded source twice
    assert not JointStreams.possible([shared, *seeded]) and not JointStreams.possible(
        [*seeded, shared])
    assert not JointStreams.possible([])
    python = RandomSource()
    python._gen = random.Random(3)  # a generator the compiled samplers do not draw
    assert not JointStreams.possible([python] * 3)
    got = draw_cells(cells, [shared] * 3)
    assert len(got) == 40 and all(len(n) == len(c.noises) for (_, _, n), c in
                                  zip(got, cells, strict=True))


@pytest.mark.parametrize("statistics", [("count", "sum", "mean"), ("count",),
                                        ("mean", "variance", "std")])
def test_a_run_releases_the_same_rows_with_the_block_and_cell_by_cell(
        monkeypatch: pytest.MonkeyPatch, statistics: tuple[str, ...]) -> None:
    gen = np.random.default_rng(3)
    groups = list(range(60))
    values = {(g, j): gen.normal(10.0 * j, 1.0 + g, int(gen.integers(0, 400)))
              for g in groups for j in range(2)}
    values[(4, 1)] = np.round(gen.exponential(3.0, 900))  # heavy ties
    plan = plan_describe(2.0, 2, statistics=statistics)

    def run() -> list[dict[str, object]]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rng = RandomSource(seed=17)
        rows = run_describe(plan, values, groups, ["a", "b"], rng, parts=3).rows()
        return [*rows, {"after": rng.randbits(64)}]

    block = run()
    monkeypatch.setattr(JointStreams, "possible", staticmethod(lambda sources: False))
    assert run() == block


def test_a_block_s_tails_are_each_cell_s_tails() -> None:
    """describe_stats.joined_tails (one compiled call, block_jit.block_tails) gives every
    cell's data_tails: empty cells, one-sided cells, ties, wide spreads."""
    gen = np.random.default_rng(8)
    stats = [cell_statistics(x, c) for x, c in [
        (np.zeros(0), 0.0), (np.full(50, 3.0), 3.0), (gen.normal(0, 1, 300), 0.0),
        (gen.exponential(5.0, 400), 0.0), (-gen.exponential(5.0, 30), 1.0),
        (gen.standard_t(2, 2000) * 1e6, 12.5), (np.round(gen.normal(7, 2, 500)), 7.0)]]
    joined = joined_tails(stats)
    assert joined is not None
    views, (flat, tail_at) = joined
    for cell, (lower, upper) in zip(stats, views, strict=True):
        want_lower, want_upper = data_tails(cell)
        assert lower.tolist() == want_lower.tolist()
        assert upper.tolist() == want_upper.tolist()
    assert tail_at[-1, 2] == len(flat) and any(len(lo) > 5 for lo, _ in views)


@pytest.mark.parametrize("unsorted", [False, True])
def test_a_block_s_centre_histograms_are_each_cell_s(unsorted: bool) -> None:
    """BinBlock.centre_histograms (one reduction over the block) gives every cell's
    centre_histogram — keys, counts and dtypes — empty and missing cells, one-entry
    cells, and a block with a cell whose bins are not sorted."""
    gen = np.random.default_rng(4)
    bins = {}
    for g in range(40):
        for j in range(3):
            if gen.random() < 0.2:
                continue  # a missing cell
            x = gen.normal(0, 10.0 ** int(gen.integers(0, 6)), int(gen.integers(0, 60)))
            x = np.round(x) if gen.random() < 0.3 else x  # ties
            if len(x):
                bins[(g, j)] = bin_statistics(x, False)
    bins[(3, 1)] = BinStatistics(*(np.zeros(0, dtype=np.int64),) * 3)
    # consecutive cells whose runs meet on one key: two cells, not one run
    bins[(7, 2)] = bin_statistics(np.array([1.0, 2.0, 2.0]), False)
    bins[(8, 0)] = bin_statistics(np.array([2.0, 2.0, 5.0]), False)
    if unsorted:
        b = bins[(5, 0)] = bin_statistics(gen.normal(0, 1e3, 200), False)
        bins[(5, 0)] = BinStatistics(b.bins[::-1].copy(), b.counts[::-1].copy(),
                                     b.sums[::-1].copy())
    block = BinBlock(bins, 40, 3)
    got = block.centre_histograms()
    for g in range(40):
        for j in range(3):
            want = block.centre_histogram(g, j)
            assert [got[g][j][0].tolist(), got[g][j][1].tolist()] == \
                [want[0].tolist(), want[1].tolist()], (g, j)
            assert got[g][j][1].dtype == want[1].dtype
    assert any(len(got[g][j][0]) > 3 for g in range(40) for j in range(3))


def _stream_state(s: CandidateStream) -> tuple:
    return s.count, s._pos, list(s._bins), s._last, s._chunk


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_column_s_cuts_in_one_call_are_each_cell_s_range_cuts(seed: int) -> None:
    """describe_stats._column_cuts (one compiled call, block_jit.column_cuts) gives the
    joined cuts and bases of range_cuts cell after cell, and leaves every candidate
    stream as range_cuts leaves it (the same bins made, the same position): cells with
    their own centre (fresh streams), cells sharing a centre (one stream, reached from
    several ranges), empty cells, ranges on one side of the centre, across zero, far,
    rows on candidates (a range's end on a cut)."""
    from dprect.core import describe_stats as ds

    gen = random.Random(seed)
    centres = [0.0, 1.5, -3.25, 1e6, 7.0e-5, -2.0e30, 2.0**-1074, 12.0]
    spec = []
    for _ in range(120):
        c = gen.choice(centres) if gen.random() < 0.5 else gen.uniform(-1e4, 1e4)
        kind = gen.randrange(7)
        if kind in (5, 6):  # rows on candidates: a range's end bin is a cut's bin
            side = "lower" if kind == 5 else "upper"
            x = np.array([CandidateStream(c, side).value(k) for k in (2, 9, 33)])
        elif kind == 0:
            x = np.zeros(0)
        elif kind == 1:  # around the centre
            x = c + np.random.default_rng(gen.randrange(99)).normal(0, abs(c) + 1, 30)
        elif kind == 2:  # one side only
            x = c + np.abs(np.random.default_rng(gen.randrange(99)).normal(0, 5, 10))
        elif kind == 3:  # across zero, far
            x = np.array([-1e200, -3.0, 0.0, 5e-300, 2e250])
        else:
            x = np.full(4, c)
        spec.append((c, x))

    def column(share: bool) -> tuple[list[ds.BinStatistics], list]:
        made: dict[float, tuple[CandidateStream, CandidateStream]] = {}
        cells, streams = [], []
        for c, x in spec:
            b = bin_statistics(x)
            pair = made.setdefault(c, (CandidateStream(c, "lower"),
                                       CandidateStream(c, "upper"))) if share else \
                (CandidateStream(c, "lower"), CandidateStream(c, "upper"))
            cells.append(b)
            streams.append(pair if len(b.bins) else None)
        return cells, streams

    def runs_of(streams: list) -> np.ndarray:  # each cell's next of another entry
        out = np.full(len(streams), len(streams), dtype=np.int64)
        for g in range(len(streams) - 2, -1, -1):
            out[g] = g + 1 if streams[g + 1] is not streams[g] else out[g + 1]
        return out

    for share, given, runs in ((False, False, False), (True, False, False),
                               (False, True, False), (True, True, False),
                               (False, True, True), (True, True, True)):
        if runs and share:  # long runs of one pair, a few cells without rows in them
            spec = [(12.0 if i % 17 else s[0], s[1]) for i, s in enumerate(spec)]
        cells, ref_streams = column(share)
        want = ds.joint_cuts([ds.range_cuts(c, int(b.bins[0]), int(b.bins[-1]), s)
                              if s is not None else ds.CellCuts(np.zeros(0, np.int64), 0)
                              for (c, _), b, s in zip(spec, cells, ref_streams,
                                                      strict=True)])
        _, streams = column(share)
        sizes = np.array([len(b.bins) for b in cells], dtype=np.int64)
        first_last = ds._first_last(np.concatenate([b.bins for b in cells]), sizes) \
            if given else None  # each cell's first and last bin made at once, or here
        got = ds._column_cuts(cells, streams, first_last,
                              runs_of(streams) if runs else None)
        assert np.array_equal(got.joint, want.joint)
        assert np.array_equal(got.starts, want.starts)
        assert np.array_equal(got.base, want.base)
        for a, b in zip(ref_streams, streams, strict=True):
            if a is not None:
                assert [_stream_state(s) for s in a] == [_stream_state(s) for s in b]


@pytest.mark.parametrize("scale", [(3, 7), (1, 2**70 + 1),
                                   ((Fraction(1) / Fraction(0.0123)).denominator,
                                    (Fraction(1) / Fraction(0.0123)).numerator)])
def test_a_block_s_count_noises_are_each_group_s_draws_in_turn(
        scale: tuple[int, int]) -> None:
    """cell_draws.block_noises (one compiled call, block_jit.block_noises) draws what
    each source's discrete_laplace_int draws, ``per`` in a row, source after source: the
    same values and every source's state after (one-word and two-word scales); None
    where it cannot (a scale past the compiled samplers', sources not joinable)."""
    s, t = scale
    one, block = _sources(4, 9), _sources(4, 9)
    want = [src.discrete_laplace_int(s, t) for src in one for _ in range(3)]
    assert cell_draws.block_noises(block, 3, s, t) == want
    for a, b in zip(one, block, strict=True):
        assert a.randbits(64) == b.randbits(64)
    assert cell_draws.block_noises(_sources(4, 3), 2, 1, 2**100) is None
    assert cell_draws.block_noises([RandomSource(), RandomSource()], 2, s, t) is None
    shared = RandomSource()
    assert len(cell_draws.block_noises([shared] * 4, 2, s, t) or []) == 8


def test_streams_seeded_at_once_are_each_seed_s_stream() -> None:
    """RandomSource.streams seeds a block's group streams in one compiled call, as the
    rows of one array that JointStreams then draws from in place: each source is
    RandomSource.stream of its seed (seeds of one to four words, zero), the block's draws
    and the states after are those of one-by-one streams — also once a source let go of
    its row (its state in a Python generator: the block copies it back); None seeds share
    one OS source; a bad seed is refused as stream refuses it."""
    gen = random.Random(8)
    seeds = [0, 1, 2**32 - 1, 2**32, 2**64 + 5] + [gen.getrandbits(128) for _ in range(19)]
    joint, one = RandomSource.streams(seeds), [RandomSource.stream(s) for s in seeds]
    for a, b in zip(joint, one, strict=True):
        assert np.array_equal(a._state()[1], b._state()[1])
    block = JointStreams(joint)
    assert block.states is joint[0]._home[0]  # drawn in place, not copied
    cells = _cells(6, 120, len(seeds))
    want = [draw_cell(c, one[c.row]) for c in _cells(6, 120, len(seeds))]
    assert draw_cells(cells, joint) == want
    joint[3]._gen.getrandbits(7)  # a draw in Python: the source lets go of its row
    one[3].randbits(7)
    assert JointStreams(joint).states is not joint[0]._home[0]
    cells = _cells(7, 80, len(seeds))
    want = [draw_cell(c, one[c.row]) for c in _cells(7, 80, len(seeds))]
    assert draw_cells(cells, joint) == want
    for a, b in zip(joint, one, strict=True):
        assert a.randbits(64) == b.randbits(64)
    shared = RandomSource.streams([None, None, None])
    assert shared[0] is shared[1] is shared[2] and not shared[0].seeded
    with pytest.raises(ParameterError, match="stream seed"):
        RandomSource.streams([3, -1])


def test_a_block_drawn_without_a_stop_is_its_cells_one_by_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A block whose every draw is compiled (every side's candidates made, splits and
    scales the compiled samplers take: no stop for Python) hands out its steps scaled by
    the strides and its noises made from their parts at once: what the cells draw one by
    one, strided sides and two noises among them."""
    def no_stop(*_: object) -> int:
        raise AssertionError("a stop for Python")

    monkeypatch.setattr(cell_draws._Block, "_in_python", no_stop)
    gen = random.Random(12)
    rows = 10

    def cells() -> list[CellDraw]:
        gen.seed(12)
        out = []
        for i in range(150):
            centre = gen.choice([0.0, 1.5, -3.25, 1e6])
            lower, upper = CandidateStream(centre, "lower"), CandidateStream(centre, "upper")
            lower.has(2000)
            upper.has(2000)
            out.append(CellDraw(_tails(gen), _tails(gen), lower, upper,
                                gen.choice(TIERS[:2]),
                                gen.choice([((1, 5),), ((3, 2**70 + 1), (1, 7))]), i % rows))
        return out

    one, block = _sources(13, rows), _sources(13, rows)
    want = [draw_cell(c, one[c.row]) for c in cells()]
    drawn = cells()
    got = draw_cells(drawn, block)
    assert got == want
    assert any(c.tier.stride == 2 and (kl or ku) for c, (kl, ku, _) in zip(drawn, got,
                                                                           strict=True))
    for a, b in zip(one, block, strict=True):
        assert a.randbits(64) == b.randbits(64)


def test_a_block_s_bits_are_each_listed_source_s_randbits() -> None:
    """cell_draws.block_bits (one compiled call, block_jit.block_words) draws what
    randbits(k) draws on each listed source, in the listed order: the same values and
    every source's state after (listed or not; k of one to five words); None where the
    sources are unseeded or not joinable."""
    rows = [5, 0, 3, 8]
    for k in (1, 31, 32, 64, 128, 129):
        one, block = _sources(6, 9), _sources(6, 9)
        assert cell_draws.block_bits(block, rows, k) == [one[r].randbits(k) for r in rows]
        for a, b in zip(one, block, strict=True):
            assert a.randbits(64) == b.randbits(64)
    assert cell_draws.block_bits([RandomSource()] * 3, [0, 1], 128) is None
    assert cell_draws.block_bits([RandomSource(), RandomSource()], [0], 128) is None


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_a_block_of_one_noise_a_cell_makes_its_noises_at_once(
        monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Every cell one noise of a one-word scale (a count, sum or mean run): the block's
    noises are made from their parts as int64 arrays at once (_Block._one_noise) — the
    very integers of noise_value, cell after cell, scales small and near 2^62, sides
    asked and paused among them (fresh streams): what the cells draw one by one, and
    the same bits consumed."""
    made: list[bool] = []
    real = cell_draws._Block._one_noise

    def spy(self: cell_draws._Block) -> np.ndarray | None:
        out = real(self)
        made.append(out is not None)
        return out

    monkeypatch.setattr(cell_draws._Block, "_one_noise", spy)
    scales = [((1, 5),), ((7, 2**61 + 1),), ((3, 10**9),), ((2**40, 3),)]

    def cells() -> list[CellDraw]:
        gen = random.Random(seed)
        out = []
        for i in range(180):
            centre = gen.choice([0.0, 1.5, -3.25, 1e6])
            lower, upper = CandidateStream(centre, "lower"), CandidateStream(centre, "upper")
            if gen.random() < 0.5:
                lower.has(600)
                upper.has(600)
            out.append(CellDraw(_tails(gen), _tails(gen), lower, upper,
                                gen.choice(TIERS[:3]), gen.choice(scales), i % 9))
        return out

    one, block = _sources(seed, 9), _sources(seed, 9)
    want = [draw_cell(c, one[c.row]) for c in cells()]
    got = draw_cells(cells(), block)
    assert got == want
    assert made == [True]
    assert any(abs(n[0]) > 2**40 for _, _, n in got)  # large values made at once too
    for a, b in zip(one, block, strict=True):
        assert a.randbits(64) == b.randbits(64)


def test_one_word_noises_are_noise_value_s_integers() -> None:
    """cell_draws.one_word_noises (uint64 arithmetic on the draws' parts) gives
    noise_value's integers for one-word scales, signs and large V included, and None
    where U + t·V or the quotient would leave its words (then made one by one)."""
    gen = random.Random(31)
    for s, t in ((1, 5), (3, 2**61 + 1), (7, 10**9), (2**40, 3), (1, 2**62 - 1)):
        u = [gen.randrange(t) for _ in range(300)]
        v = [gen.choice([0, 1, 2, gen.randrange(50)]) for _ in range(300)]
        neg = [gen.randrange(2) for _ in range(300)]
        got = cell_draws.one_word_noises(
            np.array(u, dtype=np.uint64), np.array(v, dtype=np.uint64),
            np.array(neg, dtype=np.uint64), np.uint64(s), np.uint64(t))
        want = [noise_value(0, a, b, c, s, t) for a, b, c in zip(u, v, neg, strict=True)]
        fits = all(a + t * b < 2**64 and (a + t * b) // s < 2**63
                   for a, b in zip(u, v, strict=True))
        assert (got is not None and got.tolist() == want) if fits else got is None
    # U + t·V past 2^64, and a quotient past 2^63: None
    big = cell_draws.one_word_noises(np.array([5], np.uint64), np.array([8], np.uint64),
                                     np.array([0], np.uint64), np.uint64(1),
                                     np.uint64(2**61 + 1))
    assert big is None
    half = cell_draws.one_word_noises(np.array([0], np.uint64), np.array([4], np.uint64),
                                      np.array([1], np.uint64), np.uint64(1),
                                      np.uint64(2**61 + 1))
    assert half is None  # 2^63 + 4: the quotient leaves int64


def _column_block(seed: int, groups: int, columns: int) -> tuple[list, dict, dict]:
    """Random cells of ``groups`` × ``columns`` as column arrays' parts: each cell's
    values (none, a few, past the insertion size of 32 bins, one side, across zero, far,
    ties, on candidates), its bins, and each column's centre."""
    gen = random.Random(seed)
    centres = [gen.choice([0.0, 1.5, -3.25, 1e6, 7.0e-5, 12.0]) for _ in range(columns)]
    values, bins = {}, {}
    for j in range(columns):
        c = centres[j]
        for g in range(groups):
            kind = gen.randrange(8)
            rs = np.random.default_rng(gen.randrange(10**6))
            if kind == 0:
                continue
            if kind == 1:  # many distinct bins: the kernel's merge sort
                x = c + rs.normal(0, abs(c) + 10, 400) * rs.lognormal(0, 3, 400)
            elif kind == 2:  # one side
                x = c + np.abs(rs.normal(0, 5, 10))
            elif kind == 3:  # across zero, far, subnormal
                x = np.array([-1e200, -3.0, -0.0, 0.0, 5e-300, 2e250, -5e-324])
            elif kind == 4:  # ties
                x = np.full(6, c)
            elif kind == 5:  # on candidates
                x = np.array([CandidateStream(c, "lower").value(k) for k in (1, 4, 9)]
                             + [CandidateStream(c, "upper").value(k) for k in (2, 3)])
            else:  # a few around the centre
                x = c + rs.normal(0, abs(c) + 1, 10)
            values[(g, j)] = x
            bins[(g, j)] = bin_statistics(x)
    return centres, values, bins


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_a_blocks_column_statistics_compiled_are_numpys_and_each_cells(seed: int) -> None:
    """describe_stats.column_statistics with its keys made and summed compiled
    (block_jit.column_entries) gives the very arrays of the numpy path (one search a
    column, sum_by_key), and each cell's statistics are statistics_of_cells' of that
    cell — keys, counts and sums: a wrong exponent, interval, sort or merge of equal keys
    fails here (cells past 32 bins take the kernel's merge sort, the rest insertion)."""
    from dprect.core import describe_stats as ds
    from dprect.core.tail_bounds import shared_streams

    groups, columns = 37, 3
    centres, _, cells = _column_block(seed, groups, columns)
    none = np.zeros(0, dtype=np.int64)
    parts = [cells.get((g, j), BinStatistics(none, none, none))
             for j in range(columns) for g in range(groups)]
    at = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p.bins) for p in parts], out=at[1:])
    arrays = [np.concatenate([getattr(p, f) for p in parts]).astype(np.int64)
              for f in ("bins", "counts", "sums")]
    assert max(len(p.bins) for p in parts) > 32 and min(len(p.bins) for p in parts) == 0
    pairs = [shared_streams(c) for c in centres]
    compiled = ds.column_statistics(*arrays, at, groups, pairs)
    numpy = ds.column_statistics(*arrays, at, groups, pairs, compiled_entries=False)
    for a, b in zip(compiled, numpy, strict=True):
        assert a.dtype == b.dtype == np.int64 and np.array_equal(a, b)
    keys, counts, sums, starts = compiled
    want = ds.statistics_of_cells(cells, {(g, j): centres[j] for g in range(groups)
                                          for j in range(columns)}, groups, columns)
    for j in range(columns):
        for g in range(groups):
            c = j * groups + g
            a, z = int(starts[c]), int(starts[c + 1])
            if (g, j) not in want:
                assert a == z
                continue
            assert np.array_equal(keys[a:z], want[(g, j)].keys)
            assert np.array_equal(counts[a:z], want[(g, j)].counts)
            assert np.array_equal(sums[a:z], want[(g, j)].sums)


def test_the_compiled_column_statistics_decline_what_int64_cannot_hold() -> None:
    """block_jit.column_entries declines (status 1) a key of EXACT_ROWS rows or more
    and a packed key past PACKED_BITS; column_statistics then takes the numpy path,
    whose sums past int64 are the exact integers."""
    from dprect.core import block_jit
    from dprect.core import describe_stats as ds
    from dprect.core.tail_bounds import shared_streams

    x = np.array([2.0, 2.0])
    b = bin_statistics(x)
    big = 1 << 32
    bins = np.repeat(b.bins, 3).astype(np.int64)[:3]
    counts = np.array([big] * 3, dtype=np.int64)
    sums = np.array([((1 << 30) - 1) * big] * 3, dtype=np.int64)
    at = np.array([0, 3], dtype=np.int64)
    pair = shared_streams(2.0)
    keys, n, s, starts = ds.column_statistics(bins, counts, sums, at, 1, [pair])
    assert n.tolist() == [3 * big] and int(s[0]) == 3 * ((1 << 30) - 1) * big
    assert starts.tolist() == [0, 1] and len(keys) == 1
    cuts = ds._column_cuts((), [pair], ds._first_last(bins, np.array([3])))
    made = block_jit.column_entries(bins, counts, sums, np.array([3]), cuts.joint,
                                    cuts.starts, cuts.base, ds._ZERO_BIN, SEARCH_BITS,
                                    2 * ds._SEARCH_GRID.size, ds._INTERVAL_OFFSET,
                                    ds._EXPONENT_BITS, ds.PACKED_BITS, ds.EXACT_ROWS)
    assert made[4] == 1
    far = block_jit.column_entries(bins[:1], counts[:1] // big, sums[:1] // big,
                                   np.array([1]), cuts.joint, cuts.starts,
                                   cuts.base + (1 << 20), ds._ZERO_BIN, SEARCH_BITS,
                                   2 * ds._SEARCH_GRID.size, ds._INTERVAL_OFFSET,
                                   ds._EXPONENT_BITS, ds.PACKED_BITS, ds.EXACT_ROWS)
    assert far[4] == 1
    near = block_jit.column_entries(bins[:1], counts[:1] // big, sums[:1] // big,
                                    np.array([1]), cuts.joint, cuts.starts, cuts.base,
                                    ds._ZERO_BIN, SEARCH_BITS, 2 * ds._SEARCH_GRID.size,
                                    ds._INTERVAL_OFFSET, ds._EXPONENT_BITS,
                                    ds.PACKED_BITS, ds.EXACT_ROWS)
    assert near[4] == 0 and near[3].tolist() == [1]


def test_wide_noise_values_are_noise_value_or_stop_where_int64_cannot_hold() -> None:
    """block_jit.wide_noise_values gives noise_value's integer of every draw (two-word
    and one-word scales, rates near 2^62 and tiny, U near t, V of 0 to 2^64 − 1, both
    signs) until a draw whose U + t·V reaches 2^128 or whose value is past int64: it
    stops exactly there. A wrong carry, normalisation or quotient digit fails here."""
    from dprect.core import block_jit

    gen = random.Random(17)
    cases = []
    for _ in range(30000):
        s = gen.choice([1, 3, (1 << 62) - 1, gen.randrange(1, 1 << 62),
                        1170935901945393, gen.randrange(1, 1 << 20), 1 << 61])
        t = gen.choice([1 << 84, gen.randrange(1 << 62, 1 << 96), (1 << 96) - 1,
                        gen.randrange(1, 1 << 64), 1 << 62, (1 << 64) + 1])
        v = gen.choice([0, 1, 9, gen.randrange(0, 1 << 10), gen.randrange(0, 1 << 64),
                        (1 << 64) - 1])
        u = gen.choice([gen.randrange(0, t), t - 1, 0])
        cases.append((s, t, u, v, gen.randrange(2)))
    kinds_of = {k: i for i, k in enumerate(sorted({(s, t) for s, t, *_ in cases}))}
    rate = np.array([s for s, _ in kinds_of], dtype=np.int64)
    high = np.array([t >> 64 for _, t in kinds_of], dtype=np.uint64)
    low = np.array([t & (2**64 - 1) for _, t in kinds_of], dtype=np.uint64)
    shift = np.array([64 - s.bit_length() for s, _ in kinds_of], dtype=np.int64)
    z = np.array([[u >> 64, u & (2**64 - 1), v, neg] for _, _, u, v, neg in cases],
                 dtype=np.uint64)
    kinds = np.array([kinds_of[(s, t)] for s, t, *_ in cases], dtype=np.int64)
    out = np.zeros(len(cases), dtype=np.int64)
    i, made, stops = 0, 0, 0
    while i < len(cases):
        m = block_jit.wide_noise_values(z[i:], kinds[i:], rate, high, low, shift, out[i:])
        for j in range(i, i + m):
            s, t, u, v, neg = cases[j]
            assert int(out[j]) == noise_value(u >> 64, u & (2**64 - 1), v, neg, s, t)
        made += m
        if i + m < len(cases):
            s, t, u, v, neg = cases[i + m]
            value = noise_value(u >> 64, u & (2**64 - 1), v, neg, s, t)
            assert u + t * v >= 1 << 128 or not -(1 << 63) < value < 1 << 63
            stops += 1
        i += m + 1
    assert made > 10000 and stops > 1000  # both kinds of draw were met


def test_a_blocks_noises_compiled_are_the_python_integers(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """_Block._noise_values made compiled (wide_noise_values) and as Python integers
    (the compiled call declined): the same values, cell for cell, on blocks of two-word
    and one-word scales."""
    from dprect.core import block_jit

    for seed in (1, 2):
        rows = 8
        cells = [c for c in _cells(seed, 200, rows)
                 if len(c.noises) == 1 and c.noises[0][1] < jit.WIDE]  # compiled scales
        assert {c.noises[0][1] < jit.LIMIT for c in cells} == {True, False}
        block = cell_draws._Block(cells, _sources(seed, rows), block_jit, None)
        block._run()
        made: list[int] = []

        def spy(*a: object, real: object = block_jit.wide_noise_values,
                made: list[int] = made) -> int:
            made.append(real(*a))  # type: ignore[operator]
            return made[-1]

        monkeypatch.setattr(block_jit, "wide_noise_values", spy)
        got = block._noise_values()
        assert made == [len(cells)]  # the compiled call made every value
        monkeypatch.setattr(block_jit, "wide_noise_values", lambda *a: 0)
        want = block._noise_values()
        monkeypatch.undo()
        assert got == want and len(got) == len(cells)


@pytest.mark.parametrize("spread", [50, 10**5, 2**62])
def test_merged_histograms_compiled_and_sorted_are_unique_and_add_at(
        spread: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """describe_stats.merge_histograms — summed over a dense span compiled
    (block_jit.dense_histogram) where the keys lie close, else by one stable sort, and
    the sort alone (no compiled samplers) — gives what np.unique and np.add.at give:
    the sorted keys of positive sums and those int64 sums (keys of zero or negative sum
    left out, int64 wrapping alike), over parts of repeated and far-apart keys."""
    from dprect.core import describe_stats as ds

    gen = np.random.default_rng(spread % 1000)
    for _ in range(20):
        parts = []
        for _ in range(int(gen.integers(0, 6))):
            size = int(gen.integers(0, 300))
            keys = gen.integers(-spread, spread, size, dtype=np.int64)
            counts = gen.integers(-3, 40, size, dtype=np.int64)
            counts[:2] = 2**62  # sums past int64 wrap, as add.at wraps them
            parts.append((keys, counts))
        keys = np.concatenate([np.zeros(0, dtype=np.int64)] + [k for k, _ in parts])
        counts = np.concatenate([np.zeros(0, dtype=np.int64)] + [c for _, c in parts])
        unique, where = np.unique(keys, return_inverse=True)
        summed = np.zeros(len(unique), dtype=np.int64)
        np.add.at(summed, where, counts)
        want = (unique[summed > 0], summed[summed > 0])
        monkeypatch.setattr(ds, "kernels", lambda: jit)
        got = ds.merge_histograms(parts)
        monkeypatch.setattr(ds, "kernels", lambda: None)
        sorted_only = ds.merge_histograms(parts)
        monkeypatch.undo()
        for made in (got, sorted_only):
            assert all(a.dtype == np.int64 for a in made)
            assert np.array_equal(made[0], want[0]) and np.array_equal(made[1], want[1])
