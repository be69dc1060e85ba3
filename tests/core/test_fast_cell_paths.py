"""The per-cell fast paths of describe's mechanism equal the paths they shortcut (issue #42).

A small cell's work is done on Python numbers where a few dozen numpy calls on tiny arrays
cost more than the arithmetic: the side draw's levels
(:func:`dprect.core.step_exponential._scalar_setup`), the side tails
(:func:`dprect.core.describe_stats._data_tails_scalar`), the exact centred sum
(:func:`dprect.core.describe_stats._centred_sum_scalar`), a centre histogram from sorted
bins, the blocks cut in one pass, candidate streams shared per centre. Each must give the
numpy path's values exactly — for the draws, the same step AND the same random bits
consumed (the generator's state after), on inputs that reach the edges: ties at the
target, a target above every tail, a huge ε (levels capped), tails of one step, strides.
"""

from __future__ import annotations

import random
import warnings
from fractions import Fraction

import numpy as np
import pytest

from dprect.core import describe_stats, step_exponential
from dprect.core.describe_stats import (
    BinStatistics,
    CellStatistics,
    bin_blocks,
    bin_statistics,
    cell_statistics,
    centre_counts_from_bins,
    centred_sum_dyadic,
    data_tails,
    sum_by_key,
)
from dprect.core.randomness import RandomSource
from dprect.core.step_exponential import draw_step
from dprect.core.tail_bounds import CandidateStream, shared_streams


def _seeded(seed: int) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=seed)


def _tail_cases() -> list[tuple[list[int], int, Fraction]]:
    rs = random.Random(42)
    cases: list[tuple[list[int], int, Fraction]] = [
        ([], 3, Fraction(1, 2)), ([0, 0, 0], 3, Fraction(1, 2)), ([5], 0, Fraction(3, 7)),
        ([9, 7, 7, 7, 2, 1, 0], 7, Fraction(1, 5)), ([4, 3, 2, 1], 100, Fraction(2)),
        ([10**6, 10**5, 10**3, 10, 1], 2, Fraction(10**9)),  # huge ε: levels capped
        ([10**6, 10**5, 10**3, 10, 1], 2, Fraction(10**305)),  # γ overflows a float
        ([12, 12, 12, 0, 0, 0, 0], 12, Fraction(1, 3)),
    ]
    for _ in range(200):
        n = rs.randrange(1, 48)
        tails = sorted((rs.randrange(0, 400) for _ in range(n)), reverse=True)
        cases.append((tails, rs.randrange(0, 50),
                      Fraction(rs.randrange(1, 2000), rs.randrange(1, 4000))))
    return cases


@pytest.mark.parametrize("stride", [1, 2])
def test_a_short_sides_draw_is_the_numpy_paths(monkeypatch, stride):
    """draw_step with the Python-number setup draws the step the numpy setup draws, from
    the same bits (the generator's state after is the same), case after case."""
    for i, (tails, target, eps) in enumerate(_tail_cases()):
        centre = [-3.5, 0.0, 1e-300, 2.0**40, 17.25][i % 5]
        side = ("lower", "upper")[i % 2]
        got, states = [], []
        for scalar in (True, False):
            monkeypatch.setattr(step_exponential, "_SCALAR_STEPS", 48 if scalar else -1)
            rng = _seeded(1000 + i)
            stream = CandidateStream(centre, side)
            t = np.asarray(tails, dtype=np.int64)[::stride]
            steps = [draw_step(t, stream, target, eps, rng) for _ in range(3)]
            got.append(steps)
            states.append(rng._gen.getstate())
        assert got[0] == got[1], (tails, target, eps)
        assert states[0] == states[1], (tails, target, eps)


def test_the_scalar_setup_is_taken():
    """The fast path is the one run on a short side (else the test above compares the
    numpy path with itself): its setup exists for short tails, None only past a float."""
    stream = CandidateStream(1.0, "upper")
    assert step_exponential._scalar_setup([5, 3, 1], stream, 1, Fraction(1, 2),
                                           Fraction(1, 2)) is not None
    assert step_exponential._scalar_setup([10**6, 3, 1], stream, 1, Fraction(10**305),
                                           Fraction(1, 2)) is None


def _cells() -> list[CellStatistics]:
    gen = np.random.default_rng(3)
    out = []
    for n, centre in [(1, 0.0), (2, 5.0), (7, -3.0), (30, 100.0), (60, 1e-3), (5, 1e12),
                      (40, -2.5), (3, 0.0)]:
        x = np.concatenate([gen.normal(centre, 1 + abs(centre) / 3, n),
                            gen.integers(-5, 5, n // 2 + 1).astype(float)])
        out.append(cell_statistics(x, centre))
    out.append(CellStatistics.empty())
    return out


def test_a_small_cells_tails_and_sum_are_the_numpy_paths(monkeypatch):
    """data_tails and centred_sum_dyadic on Python integers equal the numpy path on the
    same statistics, every cell, every pair of steps and pivot tried."""
    for stats in _cells():
        fast_tails = data_tails(stats)
        fast_sums = [centred_sum_dyadic(stats, a, b, lo, hi, p)
                     for a, b, lo, hi, p in [(0, 0, -1.0, 1.0, 0.0), (2, 5, -7.5, 30.0, 0.25),
                                             (40, 1, -1e9, 3.0, -2.0), (1, 1, 0.0, 0.0, 0.0)]]
        monkeypatch.setattr(describe_stats, "_SCALAR_ENTRIES", -1)
        slow_tails = data_tails(stats)
        slow_sums = [centred_sum_dyadic(stats, a, b, lo, hi, p)
                     for a, b, lo, hi, p in [(0, 0, -1.0, 1.0, 0.0), (2, 5, -7.5, 30.0, 0.25),
                                             (40, 1, -1e9, 3.0, -2.0), (1, 1, 0.0, 0.0, 0.0)]]
        monkeypatch.setattr(describe_stats, "_SCALAR_ENTRIES", 64)
        for f, s in zip(fast_tails, slow_tails, strict=True):
            assert f.dtype == s.dtype == np.int64 and f.tolist() == s.tolist()
        assert fast_sums == slow_sums
    assert describe_stats._data_tails_scalar([], []) is not None


def test_a_centre_histogram_from_sorted_bins_is_the_sorted_reduction():
    """centre_counts_from_bins (sorted bins: no sort) equals sum_by_key of the shifted
    bins, and unsorted bins still take the sort."""
    gen = np.random.default_rng(9)
    for _ in range(50):
        x = gen.normal(gen.normal(0, 50), 10, gen.integers(1, 80))
        b = bin_statistics(x)
        shift = describe_stats.SEARCH_BITS - describe_stats.CENTRE_BITS
        keys, _, want = sum_by_key(b.bins >> shift, b.counts)
        got_keys, got = centre_counts_from_bins(b.bins, b.counts)
        assert got_keys.tolist() == keys.tolist() and got.tolist() == want.tolist()
        back_keys, back = centre_counts_from_bins(b.bins[::-1], b.counts[::-1])
        assert back_keys.tolist() == keys.tolist() and back.tolist() == want.tolist()


def test_blocks_cut_in_one_pass_hold_the_same_cells():
    """bin_blocks gives each block exactly its groups' cells (local indices), for blocks
    in order and for blocks out of order."""
    none = BinStatistics(*(np.zeros(0, dtype=np.int64),) * 3)
    bins = {(g, j): none for g in range(0, 50, 3) for j in range(2)}
    for ranges in ([range(0, 17), range(17, 40), range(40, 50)],
                   [range(30, 50), range(0, 30)]):
        blocks = bin_blocks(bins, 2, ranges)
        for r, block in zip(ranges, blocks, strict=True):
            assert block.groups == len(r)
            assert set(block.bins) == {(g - r.start, j) for g, j in bins if g in r}


def test_shared_streams_are_one_per_centre_and_read_as_fresh_ones():
    """A centre's shared streams are the same objects for every reader, −0.0 apart from
    0.0, and a shared stream grown by one reader gives another what a fresh one would."""
    lower, upper = shared_streams(3.25)
    assert shared_streams(3.25) == (lower, upper)
    assert shared_streams(-0.0)[0] is not shared_streams(0.0)[0]
    upper.upto(40)  # grown by one reader
    edge = int(describe_stats._SEARCH_GRID.encode(np.array([90.0]))[0])

    def keep(b: int) -> bool:
        return b < edge

    assert upper.bins_while(keep).tolist() == \
        CandidateStream(3.25, "upper").bins_while(keep).tolist()


def test_a_block_sent_to_a_worker_holds_the_same_cells():
    """A BinBlock pickled (what a worker process is sent: its cells' arrays joined) and
    loaded has every cell's bins, counts and sums, with their dtypes, in the same order;
    a block with squares (object arrays) goes as it is."""
    import pickle

    gen = np.random.default_rng(4)
    for squares in (False, True):
        bins = {(g, j): bin_statistics(gen.normal(g, 3.0, int(gen.integers(1, 30))), squares)
                for g in range(0, 40, 3) for j in range(2)}
        block = bin_blocks(bins, 2, [range(0, 40)])[0]
        back = pickle.loads(pickle.dumps(block, protocol=pickle.HIGHEST_PROTOCOL))
        assert (back.groups, back.columns) == (block.groups, block.columns)
        assert list(back.bins) == list(block.bins)
        for key, cell in block.bins.items():
            got = back.bins[key]
            for name in ("bins", "counts", "sums", "squares"):
                a, b = getattr(cell, name), getattr(got, name)
                assert (a is None) == (b is None)
                if a is not None:
                    assert a.dtype == b.dtype and a.tolist() == b.tolist(), (key, name)
