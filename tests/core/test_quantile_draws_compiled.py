"""The quantiles' draws compiled (:func:`dprect.core.random_jit.unimodal_rounds`, fed by
:func:`dprect.core.quantile_draws.compiled_tables`) are the Python draws, draw for draw:
for a seed (and for a pool of OS bytes) the same cells, the same noisy count and the same
stream state after, over many random cells — ties, one row, no row, huge counts (int64
and beyond), the centre's window cut, rejected rounds at levels > 0, the whole grid with
many buckets, the binary grid — and when the compiled rounds pause on an undecided
uniform and the Python sampler finishes the law. The tables' decision intervals are
``Buckets.decide``, and both the decision's definition (exhaustively at a few bits; the
tables' prefix of them), the
one-bucket shortcut the general buckets; and the comparison has power: a wrong
acceptance constant in the compiled path is seen."""

from __future__ import annotations

import dataclasses
import random
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

from dprect.core import interior_point, quantile_draws, randomness
from dprect.core import random_jit as jit
from dprect.core.interior_point import Buckets, Pieces, unimodal_sampler
from dprect.core.quantile_centre import (
    as_depths,
    blocks,
    cut,
    rank_frame,
    window,
    window_frame,
    window_runs,
)
from dprect.core.quantiles import (
    QuantilePlan,
    QuantileStatistics,
    _cell_ranks,
    draws,
    plan_quantiles,
    quantile_grid,
    quantile_statistics,
)
from dprect.core.randomness import RandomSource
from tests.quantile_values import pool_draws, random_values

QS = [0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of the compiled rounds' calls, of the laws a pause handed to Python and of
    the cells drawn whole in one compiled call (:mod:`dprect.core.quantile_cell_jit`)."""
    from dprect.core import quantile_cell_jit

    seen = {"compiled": 0, "paused": 0, "cells": 0}
    rounds, finish = jit.unimodal_rounds, quantile_draws._rounds
    cell = quantile_cell_jit.cell_draws

    def whole(*args: Any) -> Any:
        out = cell(*args)
        seen["cells"] += int(out[0]) == jit.DONE
        return out

    monkeypatch.setattr(quantile_cell_jit, "cell_draws", whole)

    def counted(*args: Any) -> Any:
        seen["compiled"] += 1
        return rounds(*args)

    def python(sampler: Any, near: Any, rng: RandomSource, u: int | None = None) -> int:
        seen["paused"] += u is not None
        return finish(sampler, near, rng, u)

    monkeypatch.setattr(jit, "unimodal_rounds", counted)
    monkeypatch.setattr(quantile_draws, "_rounds", python)
    return seen


def _both(stats: QuantileStatistics, plan: QuantilePlan, seed: int,
          monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], int | None]:
    """The cell drawn on the Python path and on the compiled one from the same seed:
    the same draws and the same twister state after."""
    monkeypatch.setattr(randomness, "_KERNELS", None)
    ref = RandomSource.stream(seed)
    want = draws(stats, plan, ref)
    monkeypatch.setattr(randomness, "_KERNELS", jit)
    fast = RandomSource.stream(seed)
    got = draws(stats, plan, fast)
    assert got == want, seed
    assert fast._gen.getstate() == ref._gen.getstate(), seed
    return got


#: the columns' lengths this file draws from
ROWS = [1, 2, 3, 7, 40, 300, 2000]


@pytest.mark.parametrize("epsilon", [0.5 / 64, 0.05, 1.0, 40.0])
def test_compiled_draws_are_the_python_draws(epsilon: float, calls: dict[str, int],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Many random cells at each ε, on the centred and the whole-grid splits: draw for
    draw, stream state after; the compiled rounds ran on each cell."""
    gen = random.Random(int(epsilon * 1e6))
    plan = plan_quantiles(QS, epsilon)
    for k in range(40):
        _both(quantile_statistics(random_values(gen, ROWS), plan), plan, 1000 * k + 7,
              monkeypatch)
    assert calls["compiled"] + calls["cells"] >= 40


def test_compiled_draws_reject_rounds_in_the_window(calls: dict[str, int],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Small groups drawn near their centre: rounds at levels 1 … 4 are rejected and
    redrawn (counted on the Python reference), the same on both paths."""
    levels: list[int] = []
    level_of = quantile_draws.level_of

    def seen(*args: Any) -> int:
        levels.append(level_of(*args))
        return levels[-1]

    monkeypatch.setattr(quantile_draws, "level_of", seen)
    plan = plan_quantiles(QS, 0.5 / 64)
    x = np.random.default_rng(3)
    for k, values in enumerate([x.normal(50.0, 10.0, 2000), x.lognormal(2.0, 1.0, 300),
                                -x.exponential(30.0, 2000), x.normal(0.5, 4.0, 50)]):
        assert plan.branch(len(values)).centred
        _both(quantile_statistics(values, plan), plan, 50 + k, monkeypatch)
    assert {1, 2, 3, 4} <= set(levels)  # the Python path's rounds: each level was met
    assert calls["cells"] == 4  # each cell's draws in one compiled call


def test_compiled_draws_on_empty_huge_and_binary_cells(calls: dict[str, int],
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """No row; counts of 2^40 rows (int64 depths: compiled) and of 2^60 (depths beyond
    int64: the Python path inside a compiled run); plans without a centre, on the
    binary grid."""
    none = np.zeros(0, dtype=np.int64)
    for plan in (plan_quantiles(QS, 1.0), plan_quantiles(QS, 20.0, centre=False),
                 plan_quantiles([0.5], 1.0, centre=False),
                 plan_quantiles(QS, 2.0, grid="binary")):
        _both(QuantileStatistics(none, none, none), plan, 9, monkeypatch)
        st = quantile_statistics(np.array([3.0, 5.0, -1.0, 5.0, 0.0]), plan)
        for shift in (40, 60):
            big = dataclasses.replace(st, counts=st.counts << shift,
                                      at_value=st.at_value << shift)
            before = calls["compiled"]
            _both(big, plan, shift, monkeypatch)
            if shift == 40 and plan.grid == "decimal":
                assert calls["compiled"] > before


def test_a_pause_is_finished_in_python(calls: dict[str, int],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled rounds given narrower decision intervals than ``decide``'s (the
    samplers' tables and the compiled tables, :mod:`dprect.core.quantile_jit`) pause on
    the uniforms outside them; the Python sampler finishes the law from the drawn bits
    (more bits, the point, its Bernoulli, the rest of the rounds): the same draws."""
    from dprect.core import quantile_jit

    intervals = Buckets.intervals
    tables = quantile_jit.laws_tables

    def narrow(self: Buckets, bits: int, share: int | None = None
               ) -> list[tuple[int, int, int]]:
        return [(lo, lo + (hi - lo) // 3, j) for lo, hi, j in intervals(self, bits, share)]

    def narrow_tables(*args: Any) -> Any:
        status, laws, rows, found = tables(*args)
        found = found.copy()
        found[:, 1] = found[:, 0] + (found[:, 1] - found[:, 0]) // np.uint64(3)
        return status, laws, rows, found

    monkeypatch.setattr(Buckets, "intervals", narrow)
    monkeypatch.setattr(quantile_jit, "laws_tables", narrow_tables)
    gen = random.Random(17)
    for epsilon in (40.0, 3000.0 / 64, 1.0):  # many buckets on the whole grid
        plan = plan_quantiles(QS, epsilon)
        for k in range(10):
            _both(quantile_statistics(random_values(gen, ROWS), plan), plan, k, monkeypatch)
    assert calls["paused"] > 10


def test_compiled_draws_read_the_pool_as_python_does(monkeypatch: pytest.MonkeyPatch
                                                     ) -> None:
    """An unseeded source: the same OS bytes (a fixed pool) give the same draws and the
    same read position on both paths."""
    plan = plan_quantiles(QS, 0.5 / 64)
    plan_big = plan_quantiles(QS, 40.0)
    gen = random.Random(5)
    for k in range(10):
        p = plan if k % 2 else plan_big
        stats = quantile_statistics(random_values(gen, ROWS), p)
        out = pool_draws(stats, p, random.Random(k).randbytes(1 << 16), jit, monkeypatch)
        assert out[0] == out[1]


def test_a_wrong_constant_in_the_compiled_path_is_seen(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """The comparison's power: level 1 accepted with exp(−3) instead of exp(−3/2) in the
    compiled rounds changes the draws."""
    wrong = quantile_draws._ACCEPT.copy()
    wrong[1] = (3, 1)
    monkeypatch.setattr(quantile_draws, "_ACCEPT", wrong)
    monkeypatch.setattr(quantile_draws, "_NO_WINDOW", (*quantile_draws._NO_WINDOW[:4], wrong))
    plan = plan_quantiles(QS, 0.5 / 64)
    x = np.random.default_rng(8)
    stats = quantile_statistics(x.normal(50.0, 10.0, 2000), plan)
    with pytest.raises(AssertionError):
        for seed in range(5):
            _both(stats, plan, seed, monkeypatch)


def _random_sampler(gen: random.Random) -> Any:
    """A unimodal law of many buckets (c·kmax up to a few hundred) on a grid of up to
    10^9 points."""
    k = gen.randrange(1, 12)
    sizes = [gen.choice([1, 2, gen.randrange(1, 10**8)]) for _ in range(2 * k + 1)]
    rise = sorted(gen.randrange(0, 10**4) for _ in range(k))
    fall = sorted((gen.randrange(0, 10**4) for _ in range(k)), reverse=True)
    depths = [*rise, 10 ** 4, *fall]
    starts = np.cumsum([0, *sizes[:-1]]).astype(np.uint64)
    pieces = Pieces(starts, np.array(sizes, np.uint64), np.array(depths, np.int64), 1.0,
                    sum(sizes))
    return unimodal_sampler(pieces, Fraction(gen.randrange(1, 400), gen.randrange(1, 10**4)))


def _defined(found: Buckets, u: int, bits: int) -> int | None:
    """``decide``'s definition read bucket by bucket, not through
    :func:`~dprect.core.interior_point.decision_interval` (which ``decide`` and the
    tables both read): the j such that every U in [u/2^bits, (u+1)/2^bits) and every
    weight the enclosures allow have X_{j−1} ≤ U·W < X_j, i.e. (u + 1)·W_hi ≤
    x_lo[j]·2^bits and u·W_lo ≥ x_hi[j−1]·2^bits (j = 0: no lower condition); None if
    no j (at most one can)."""
    fits = [j for j in range(len(found.x_lo))
            if (u + 1) * found.w_hi <= found.x_lo[j] << bits
            and (j == 0 or u * found.w_lo >= found.x_hi[j - 1] << bits)]
    assert len(fits) <= 1
    return fits[0] if fits else None


def test_the_decision_intervals_are_decide() -> None:
    """``Buckets.intervals(bits)`` maps u as ``decide(u, bits)`` does, and both as the
    definition of the decision (:func:`_defined`): every u at 10 bits, and at 64 bits
    each interval's ends and their neighbours and random u."""
    gen = random.Random(3)
    for _ in range(60):
        found = _random_sampler(gen).buckets(128)
        for bits in (10, 64):
            table = found.intervals(bits)
            got = {}
            for lo, hi, j in table:
                for u in (lo, hi, (lo + hi) // 2):
                    got[u] = j
            if bits == 10:
                us = range(1 << bits)
            else:
                us = [u for lo, hi, _ in table for u in (lo - 1, hi + 1)
                      if 0 <= u < 1 << bits]
                us += [gen.randrange(1 << bits) for _ in range(200)] + list(got)
            for u in us:
                inside = [j for lo, hi, j in table if lo <= u <= hi]
                assert len(inside) <= 1
                want = _defined(found, u, bits)
                assert (inside[0] if inside else None) == want, (u, bits)
                assert found.decide(u, bits) == want, (u, bits)
            # the compiled tables' share: a prefix, all but ~2^-share of the weight
            for share in (1, 4, 24):
                part = found.intervals(bits, share)
                assert part == table[:len(part)]
                if part != table:
                    assert (1 << bits) - part[-1][1] <= (1 << bits) >> (share - 1)


def test_the_one_bucket_shortcut_is_the_general_buckets() -> None:
    """c·kmax < 1: the shortcut's bucket is the general computation's, and its run maps
    every r to the same point."""
    gen = random.Random(4)
    for _ in range(100):
        k = gen.randrange(0, 5)
        sizes = [gen.randrange(2, 6) for _ in range(2 * k + 1)]
        rise = sorted(gen.randrange(0, 50) for _ in range(k))
        fall = sorted((gen.randrange(0, 50) for _ in range(k)), reverse=True)
        depths = [*rise, 50, *fall]
        starts = np.cumsum([0, *sizes[:-1]]).astype(np.uint64)
        pieces = Pieces(starts, np.array(sizes, np.uint64), np.array(depths, np.int64),
                        1.0, sum(sizes))
        sampler = unimodal_sampler(pieces, Fraction(1, gen.randrange(51, 200)))
        assert sampler.n_max == 0
        for p in (128, 256):
            short = interior_point._one_bucket(sampler.m, p)
            full = interior_point._general_buckets(sampler.starts, sampler.depths, sampler.m,
                                                   sampler.kmax, sampler.split, sampler.num,
                                                   sampler.den, p)
            assert dataclasses.replace(short, runs=full.runs) == full
            (a, b, c), (d, e, f) = short.runs[0], full.runs[0]
            assert [a + r if r < b else c + r - b for r in range(sum(sizes))] == \
                [d + r if r < e else f + r - e for r in range(sum(sizes))]
        assert sampler.buckets(128) == interior_point._one_bucket(sampler.m, 128)


def test_out_of_range_laws_take_the_python_path() -> None:
    """A rate's denominator from 2^96, or a grid of 2^62 points: no tables."""
    pieces = Pieces(np.zeros(1, np.uint64), np.array([10], np.uint64),
                    np.zeros(1, np.int64), 1.0, 10)
    ok = unimodal_sampler(pieces, Fraction(1, 2**95))
    assert quantile_draws.compiled_tables([ok], pieces.starts, 10, jit) is not None
    wide = unimodal_sampler(pieces, Fraction(1, 2**96))
    assert quantile_draws.compiled_tables([wide], pieces.starts, 10, jit) is None
    assert quantile_draws.compiled_tables([ok], pieces.starts, jit.LIMIT, jit) is None


def _random_frame(gen: random.Random, edges: bool = False) -> Any:
    """A random cell's rank frame on the decimal grid (ties, both signs, far decades);
    ``edges``: values at powers of ten (a decade's first cell: pieces that start or end
    where a window's range does)."""
    plan = plan_quantiles(QS, 1.0)
    values = random_values(gen, ROWS)
    if edges:
        values = np.array([gen.choice([-1, 1]) * 10.0 ** gen.randrange(-3, 4)
                           * gen.choice([1.0, 1.0, 9.9999]) for _ in range(gen.randrange(1, 30))])
    stats = quantile_statistics(values, plan)
    g = quantile_grid(plan.grid, plan.resolution)
    return rank_frame(*_cell_ranks(stats, g), g.size), g


def test_the_laws_read_off_the_depths_are_the_samplers_tables() -> None:
    """A cell's laws built at once (:func:`quantile_draws.rank_depths`, one (m, pieces)
    int64 computation; :func:`quantile_draws.laws_tables`, the one-bucket tables read off
    the depths, the samplers made only on demand) give, array for array, what each law's
    own sampler and :func:`quantile_draws.compiled_tables` give — on the whole grid and
    cut to a window, at rates with one bucket and with many (each law's buckets by
    ``interior_point.law_buckets`` on its depth row, no sampler made); and a law of one
    more depth unit than c·kmax < 1 allows leaves the shortcut."""
    gen = random.Random(11)
    shortcuts = 0
    for k in range(60):
        frame, g = _random_frame(gen)
        qs = [Fraction(q).limit_denominator(100) for q in QS]
        index = None
        starts, sizes, size = frame.starts, frame.sizes, frame.grid_size
        if k % 2:  # cut to a centre's window
            c = cut(frame.starts, frame.sizes, window(g, gen.randrange(1, 601),
                                                     gen.choice([0, 1, 2])))
            index, starts, sizes, size = c.index, c.starts, c.sizes, c.size
        eps = gen.choice([1e-6, 0.5 / 64, 2.0])
        rates = [Fraction(eps) / (2 * q.denominator) for q in qs]
        depths = quantile_draws.rank_depths(frame, qs, index)
        samplers = []
        for j, (q, rate) in enumerate(zip(qs, rates, strict=True)):
            row = as_depths(frame.weighted(q, index))
            assert row.dtype == depths.dtype == np.int64
            assert np.array_equal(depths[j], row)
            samplers.append(unimodal_sampler(Pieces(starts, sizes, row, 1.0, size), rate,
                                             trusted=True))
        laws = quantile_draws._Laws(starts, sizes, depths, rates, size)
        shortcuts += quantile_draws._one_bucket_tables(laws, jit) is not None
        want = quantile_draws.compiled_tables(samplers, starts, size, jit)
        got = quantile_draws.laws_tables(laws, jit)
        assert want is not None and got is not None
        for a, b in zip(got, want, strict=True):
            assert np.array_equal(np.asarray(a), np.asarray(b)), k
            assert np.asarray(a).dtype == np.asarray(b).dtype
        # no sampler was made for the tables (several buckets: law_buckets on the rows)
        assert not laws._samplers
        # the lazy samplers are the laws' own
        assert laws.sampler(0).buckets(128) == samplers[0].buckets(128)
    assert 10 <= shortcuts < 60  # both the shortcut and the samplers' tables were met
    # the shortcut's bound is c·kmax < 1 exactly: at num·kmax = den it must step aside
    pieces = Pieces(np.array([0, 3], np.uint64), np.array([3, 4], np.uint64),
                    np.array([[0, 7]], np.int64), 1.0, 7)
    at = quantile_draws._Laws(pieces.starts, pieces.sizes, pieces.depths,
                              [Fraction(1, 7)], 7)
    below = quantile_draws._Laws(pieces.starts, pieces.sizes, pieces.depths,
                                 [Fraction(1, 8)], 7)
    assert quantile_draws._one_bucket_tables(at, jit) is None
    assert quantile_draws._one_bucket_tables(below, jit) is not None


def test_the_window_frame_cut_is_the_frames_cut() -> None:
    """The frame restricted to a window from its keys only
    (:func:`quantile_centre.window_frame` of :func:`quantile_centre.window_runs`) cut to
    the window gives the cell's whole frame cut to it: the same pieces, ranks and rows —
    on random cells and windows (far from the data: empty runs; at the data's edges;
    around it; keys on a range's first and last cell), so the draws read the same depths
    (``rank_depths``); and the compiled pass of :func:`quantile_draws.near_window`
    (:func:`random_jit.window_depths`) makes those cut pieces and depths."""
    gen = random.Random(13)
    plan = plan_quantiles(QS, 1.0)
    g = quantile_grid(plan.grid, plan.resolution)
    qs = [Fraction(q).limit_denominator(100) for q in QS]
    seen = set()
    for k in range(200):
        values = random_values(gen, ROWS)
        if k % 3 == 1:  # powers of ten: keys on a decade's first cell
            values = np.array([gen.choice([-1, 1]) * 10.0 ** gen.randrange(-3, 4)
                               * gen.choice([1.0, 1.0, 9.9999])
                               for _ in range(gen.randrange(1, 30))])
        stats = quantile_statistics(values, plan)
        keys = np.asarray(stats.keys, dtype=np.int64)
        whole = rank_frame(*_cell_ranks(stats, g), g.size)
        centre = gen.randrange(0, 601) if k % 2 else \
            int(blocks(g, keys[len(keys) // 2:len(keys) // 2 + 1])[0]) + gen.randrange(-5, 6)
        ranges = window(g, min(max(centre, 0), 600), gen.choice([0, 1, 2]))
        if k % 5 == 4:  # a range ending just after a key, one starting on a key
            ranges = [(int(keys[0]), int(keys[0]) + 1), (int(keys[-1]) + 2, g.size)] \
                if keys[-1] + 2 < g.size else ranges
        firsts, ends = window_runs(keys, ranges)
        seen.update((int(f == e), int(f == 0), int(e == len(keys)))
                    for f, e in zip(firsts, ends, strict=True))
        inside = np.concatenate([np.arange(f, e) for f, e in zip(firsts, ends, strict=True)])
        _, lo, hi, incl = _cell_ranks(stats, g)
        before = np.where(firsts > 0, incl[np.maximum(firsts - 1, 0)], 0)
        part = window_frame(ranges, firsts, ends, keys[inside], lo[inside], hi[inside],
                            incl[inside], before, int(incl[-1]), g.size)
        a, b = cut(whole.starts, whole.sizes, ranges), cut(part.starts, part.sizes, ranges)
        assert (a.starts.tolist(), a.sizes.tolist(), a.firsts, a.offsets, a.size) == \
            (b.starts.tolist(), b.sizes.tolist(), b.firsts, b.offsets, b.size)
        assert whole.lo[a.index].tolist() == part.lo[b.index].tolist()
        assert whole.hi[a.index].tolist() == part.hi[b.index].tolist()
        assert whole.n == part.n
        depths = quantile_draws.rank_depths(whole, qs, a.index)
        assert np.array_equal(depths, quantile_draws.rank_depths(part, qs, b.index))
        # the compiled pass (near_window's): the same cut pieces and depths in one call
        qa, qb, _ = quantile_draws._quantile_words(qs)
        starts, sizes, got, kmax, split = jit.window_depths(
            np.array([r[0] for r in ranges], np.int64), np.array([r[1] for r in ranges],
                                                                  np.int64),
            (ends - firsts).astype(np.int64), keys[inside], lo[inside], hi[inside],
            incl[inside], before.astype(np.int64), qa[:, 0], qb[:, 0], np.int64(whole.n))
        assert starts.dtype == sizes.dtype == np.uint64 and got.dtype == np.int64
        assert (starts.tolist(), sizes.tolist()) == (a.starts.tolist(), a.sizes.tolist())
        assert np.array_equal(got, depths)
        assert (kmax.tolist(), split.tolist()) == (depths.max(axis=1).tolist(),
                                                   depths.argmax(axis=1).tolist())
    assert {(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, 0)} <= seen  # empty, first, last, inner


def _cut_reference(starts: np.ndarray, sizes: np.ndarray,
                   ranges: list[tuple[int, int]]) -> tuple[Any, ...]:
    """:func:`quantile_centre.cut` range by range (its definition, in Python integers)."""
    pieces = [(int(s), int(s) + int(z)) for s, z in zip(starts, sizes, strict=True)]
    index, out_s, out_z, offsets, at = [], [], [], [], 0
    for a, b in ranges:
        offsets.append(at)
        for i, (s, e) in enumerate(pieces):
            if e > a and s < b:
                index.append(i)
                out_s.append(max(s, a) - a + at)
                out_z.append(min(e, b) - max(s, a))
        at += b - a
    return index, out_s, out_z, tuple(a for a, _ in ranges), tuple(offsets), at


def test_the_window_cut_is_its_definition() -> None:
    """:func:`quantile_centre.cut` (every range at once) keeps, clips and moves the same
    pieces as the range-by-range definition, on random cells and windows."""
    gen = random.Random(12)
    for k in range(120):
        frame, g = _random_frame(gen, edges=k % 2 == 1)
        centre = gen.randrange(0, 601) if k % 2 == 0 else 300 + gen.randrange(-8, 9)
        ranges = window(g, centre, gen.choice([0, 1, 2]))
        c = cut(frame.starts, frame.sizes, ranges)
        want = _cut_reference(frame.starts, frame.sizes, ranges)
        got = (c.index.tolist(), c.starts.tolist(), c.sizes.tolist(), c.firsts, c.offsets,
               c.size)
        assert got == want
        assert c.starts.dtype == c.sizes.dtype == np.uint64
