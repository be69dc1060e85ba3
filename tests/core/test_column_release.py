"""Describe's round two of an all-pooled block as column arrays
(dprect.core.column_release.finish_columns) releases what finish_small releases from the
block's objects, cell for cell (every field, by repr), for a seed: blocks of small groups
(every cell pooled) with groups without rows, a column without rows, heavy and spread
groups, a sum-only and a bounds-only plan; seeded and from OS entropy (then the shape and
laws only). A block it cannot carry (a cell of the plan's own split, a variance's squares,
no compiled samplers) gets None and nothing is drawn."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

from dprect.core import aggregates, randomness
from dprect.core import random_jit as jit
from dprect.core.aggregates import describe_block, finish_small, plan_describe
from dprect.core.column_release import finish_columns
from dprect.core.describe_stats import BinBlock, BinStatistics, bin_statistics
from dprect.core.randomness import RandomSource
from tests.column_cells import joined_columns


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled samplers from the first draw."""
    monkeypatch.setattr(randomness, "_KERNELS", jit)


def _bins(seed: int, groups: int, columns: int, rows: int, empty_column: bool
          ) -> dict[tuple[int, int], BinStatistics]:
    """A block's cells: a few rows a group (some groups none), per column a scale."""
    gen = np.random.default_rng(seed)
    out = {}
    for j in range(columns):
        if empty_column and j == columns - 1:
            continue
        shift, scale = gen.normal(0.0, 50.0), [0.01, 1.0, 300.0, 1e6][j % 4]
        for g in range(groups):
            n = int(gen.poisson(rows)) if g % 5 else 0
            if n:
                x = shift + scale * gen.standard_normal(n)
                if g % 11 == 1:
                    x = np.round(x)  # ties
                out[(g, j)] = bin_statistics(x)
    return out


def _round_one(plan: aggregates.DescribePlan, bins: dict[tuple[int, int], BinStatistics],
               groups: int, columns: int, seed: int | None
               ) -> tuple[aggregates.BlockDraws, list[tuple[float, bool]]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rng = RandomSource(seed=seed) if seed is not None else RandomSource()
    seeds = rng.stream_seeds(groups) if seed is not None else [None] * groups
    draws = describe_block(plan, BinBlock(bins, groups, columns), seeds)
    # each column's pooled centre (a run's is drawn from every block's pools: one
    # block's rows are too few here), one of them 0.0
    anchors = [(c, True) for c in (48.0, 0.0, -3.25, 1.0e6, 7.0e-5)[:columns]]
    return draws, anchors


def _text(cells: list[list[aggregates.Cell]]) -> list[str]:
    return [repr(c) for row in cells for c in row]


@pytest.mark.parametrize(("seed", "statistics", "empty_column"), [
    (1, ("count", "sum", "mean"), False), (2, ("count", "sum", "mean"), True),
    (3, ("sum",), False), (4, ("mean",), True), (5, ("count", "mean"), False)])
def test_column_arrays_release_what_the_objects_release(seed: int, statistics: tuple[str, ...],
                                                        empty_column: bool) -> None:
    groups, columns = 97, 4
    plan = plan_describe(1.0, columns, statistics=statistics)
    bins = _bins(seed, groups, columns, 3, empty_column)
    draws, anchors = _round_one(plan, bins, groups, columns, seed)
    assert all(c is None for row in draws.cells for c in row)  # every cell pooled
    want = finish_small(plan, anchors, BinBlock(bins, groups, columns), draws)
    made = finish_columns(plan, anchors, joined_columns(bins, groups, columns), draws)
    assert made is not None
    got = pickle.loads(pickle.dumps(made)).rows()  # as it reaches the driver
    assert _text(got) == _text(want)
    assert len({(c.lower, c.upper) for row in got for c in row}) > 10  # real draws


def test_an_unseeded_block_releases_every_cell() -> None:
    groups, columns = 64, 3
    plan = plan_describe(1.0, columns)
    bins = _bins(9, groups, columns, 3, False)
    draws, anchors = _round_one(plan, bins, groups, columns, None)
    made = finish_columns(plan, anchors, joined_columns(bins, groups, columns), draws)
    assert made is not None and len(made) == groups
    got = made.rows()
    assert all(len(row) == columns and all(c.lower <= c.upper for c in row) for row in got)


def test_a_block_the_arrays_cannot_carry_is_left_to_finish_small(
        monkeypatch: pytest.MonkeyPatch) -> None:
    groups, columns = 40, 2
    bins = _bins(4, groups, columns, 3, False)
    for statistics in (("count", "mean", "variance"), ("count",)):  # squares; no sum noise
        plan = plan_describe(1.0, columns, statistics=statistics)
        draws, anchors = _round_one(plan, bins, groups, columns, 4)
        assert finish_columns(plan, anchors, joined_columns(bins, groups, columns), draws) is None
    plan = plan_describe(1.0, columns)
    draws, anchors = _round_one(plan, bins, groups, columns, 4)
    # a column whose cells search from their own centres (an anchor, not pooled)
    assert finish_columns(plan, [(a, False) for a, _ in anchors],
                          joined_columns(bins, groups, columns), draws) is None
    monkeypatch.setattr(randomness, "_KERNELS", None)  # no compiled samplers
    monkeypatch.setattr(randomness, "kernels", lambda: None)
    monkeypatch.setattr("dprect.core.column_release.kernels", lambda: None)
    assert finish_columns(plan, anchors, joined_columns(bins, groups, columns), draws) is None


def test_statistics_past_int64_are_left_to_finish_small(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """Where a key's rows reach EXACT_ROWS given the centres, its sum is a Python integer
    (an object array the compiled release cannot read): finish_columns returns None
    before drawing anything, and finish_small then releases what it releases alone."""
    from dprect.core import describe_stats

    groups, columns = 40, 2
    plan = plan_describe(1.0, columns)
    bins = _bins(4, groups, columns, 3, False)
    draws, anchors = _round_one(plan, bins, groups, columns, 4)
    monkeypatch.setattr(describe_stats, "EXACT_ROWS", 2)  # a key of 2 rows: a Python int
    want = finish_small(plan, anchors, BinBlock(bins, groups, columns), draws)
    assert finish_columns(plan, anchors, joined_columns(bins, groups, columns), draws) is None
    got = finish_small(plan, anchors, BinBlock(bins, groups, columns), draws)
    assert _text(got) == _text(want)


@pytest.mark.parametrize(("seed", "rows"), [(1, 3), (2, 1500), (3, 8000)])
def test_round_one_reads_the_same_from_column_arrays(seed: int, rows: int) -> None:
    """describe_block of a ColumnBlock (the column arrays) draws what it draws from the
    BinBlock of the same cells — counts, splits, centres, second seeds, the own split's
    cells, means and each column's pooled histogram — for small groups (pooled), middling
    ones and groups large enough for centres of their own (the own split's statistics
    made for those cells alone)."""
    from dprect.core.column_block import ColumnBlock

    groups, columns = 30, 3
    plan = plan_describe(1.0, columns)
    bins = _bins(seed, groups, columns, rows, seed == 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seeds = RandomSource(seed=seed).stream_seeds(groups)
    want = describe_block(plan, BinBlock(bins, groups, columns), seeds)
    got = describe_block(plan, ColumnBlock(joined_columns(bins, groups, columns)), seeds)
    for name in ("cells", "tiers", "centres", "counts", "resume", "means"):
        assert repr(getattr(got, name)) == repr(getattr(want, name)), name
    assert got.pooled.keys() == want.pooled.keys()
    for j, (keys, counts) in want.pooled.items():
        assert got.pooled[j][0].tolist() == keys.tolist()
        assert got.pooled[j][1].tolist() == counts.tolist()
    if rows == 8000:  # some cells of the plan's own split, released here
        assert any(c is not None for row in got.cells for c in row)
    if rows == 1500:  # centres of their own, cells of smaller splits
        assert any(c is not None for row in got.centres for c in row)
    if rows == 3:
        assert got.pooled and all(c is None for row in got.cells for c in row)


def test_cells_the_compiled_release_leaves_to_python_are_released_alike(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With the compiled release's integer limit lowered (both routes read their own
    copy), the cells whose ñ or sum noise passes it are cut out of the arrays and
    released in Python (ReleasedColumns.python): the same cells as finish_small's."""
    from dprect.core import column_release

    groups, columns = 97, 3
    plan = plan_describe(1.0, columns)
    bins = _bins(6, groups, columns, 3, False)
    draws, anchors = _round_one(plan, bins, groups, columns, 6)
    limit = 1 << 33  # about a third of the sum noises (scale ~2^30 / 0.13) pass it
    monkeypatch.setattr(aggregates, "_RELEASE_LIMIT", limit)
    monkeypatch.setattr(column_release, "_RELEASE_LIMIT", limit)
    want = finish_small(plan, anchors, BinBlock(bins, groups, columns), draws)
    made = finish_columns(plan, anchors, joined_columns(bins, groups, columns), draws)
    assert made is not None
    assert 0 < len(made.python) < groups * columns
    assert _text(pickle.loads(pickle.dumps(made)).rows()) == _text(want)


def test_a_blocks_pooled_rows_are_the_clipped_counts_of_its_pooled_cells() -> None:
    """small_pools' rows per column: Σ max(ñ, 0) over the column's cells of the anchored
    split — on arrays, and cell by cell where a count is missing (a bounds-alone plan) or
    past int64; exact where the counts fit int64 but a column's sum would not."""
    from dprect.core.aggregates import BlockDraws, _pooled_rows

    empty = (np.zeros(0, dtype=np.int64),) * 2
    tiers = [[4, 0], [4, 4], [1, 4], [4, 4]]
    big = (1 << 63) // 3 + 1  # three of them pass int64 (column 1's pooled cells)
    for counts, want in (([[5, 9], [-3, 2], [7, 1 << 70], [2, 8]], {0: 7, 1: 10 + (1 << 70)}),
                         ([[5, 9], [-3, 2], [7, 11], [2, 8]], {0: 7, 1: 21}),
                         ([[big, big], [-3, big], [big, big], [1, big]],
                          {0: big + 1, 1: 3 * big}),
                         ([[None, None]] * 4, {0: 0, 1: 0})):
        draws = BlockDraws([[None, None]] * 4, tiers, [[None, None]] * 4, counts,
                           [None] * 4, [[None, None]] * 4, {0: empty, 1: empty})
        assert _pooled_rows(draws, 4) == want


def test_a_blocks_tiers_at_once_are_each_counts_first_tier_reached() -> None:
    """DescribePlan.tier_indices on a block's int64 counts at once (one comparison a
    tier) picks each count's first tier whose min_count it reaches, as count by count;
    a block with a None, a float or a count past int64 takes the loop, the same."""
    plan = plan_describe(1.0, 3)
    mins = [t.min_count for t in plan.tiers]
    assert len(mins) > 2 and mins[-1] is None and all(isinstance(m, int) for m in mins[:-1])

    def first(n):
        return 0 if n is None else next(i for i, m in enumerate(mins) if m is None or n >= m)

    gen = np.random.default_rng(3)
    edges = [m for m in mins if m is not None]
    counts = [int(v) for v in gen.integers(-50, 2 * max(edges), 5000)]
    counts += [e + d for e in edges for d in (-1, 0, 1)]
    assert plan.tier_indices(counts) == [first(n) for n in counts]
    assert len(set(plan.tier_indices(counts))) == len(mins)  # every tier reached
    for odd in ([*counts[:50], None], [*counts[:50], 1 << 70]):
        assert plan.tier_indices(odd) == [first(n) for n in odd]
    assert plan.tier_indices(iter(counts[:9])) == [first(n) for n in counts[:9]]
    assert plan.tier_indices([]) == []


def test_the_callers_pooled_answer_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller that asked pooled_block before the decode passes its answer down
    (``pooled=``): finish_columns does not ask again and draws the same cells; a refusal
    passed down draws nothing; without an answer it asks once itself."""
    from dprect.core import column_release

    groups, columns = 31, 3
    plan = plan_describe(1.0, columns)
    bins = _bins(11, groups, columns, 3, False)
    draws, anchors = _round_one(plan, bins, groups, columns, 11)
    asked: list[bool] = []
    real = column_release.pooled_block

    def spied(*a: object) -> bool:
        asked.append(True)
        return real(*a)  # type: ignore[arg-type]

    monkeypatch.setattr(column_release, "pooled_block", spied)
    want = finish_columns(plan, anchors, joined_columns(bins, groups, columns), draws)
    assert want is not None and asked == [True]
    got = finish_columns(plan, anchors, joined_columns(bins, groups, columns), draws, pooled=True)
    assert got is not None and asked == [True]
    assert _text(got.rows()) == _text(want.rows())
    assert finish_columns(plan, anchors, joined_columns(bins, groups, columns), draws,
                          pooled=False) is None and asked == [True]


def test_a_columns_side_bins_are_each_cells_bin_at() -> None:
    """column_release._pair_bins (each column's cells read off its one pair of streams
    at once: aggregates.grouped_side_bins) gives each cell's bin_at of its own stream
    at its step — steps far past what the stream has made, two columns sharing one
    pair, a column no cell reads (its streams not grown), few cells (_side_bins then
    reads cell by cell) — and grows each stream as _side_bins grows it; a negative step
    raises bin_at's IndexError, as _side_bins does."""
    from dprect.core.column_release import _pair_bins
    from dprect.core.tail_bounds import CandidateStream

    def pairs() -> list[tuple[CandidateStream, CandidateStream]]:
        a = (CandidateStream(48.0, "lower"), CandidateStream(48.0, "upper"))
        b = (CandidateStream(-3.25, "lower"), CandidateStream(-3.25, "upper"))
        c = (CandidateStream(7.0, "lower"), CandidateStream(7.0, "upper"))
        return [a, b, a, c]

    gen = np.random.default_rng(3)
    column = gen.choice([0, 1, 2], 500).astype(np.int64)  # column 3: no cell
    low, high = gen.integers(0, 60, 500), gen.integers(0, 3, 500)
    low[7] = 700  # far past the first candidates made
    for cells in (500, 6):  # _side_bins' grouped read, and its read cell by cell
        got_pairs, want_pairs, one_pairs = pairs(), pairs(), pairs()
        c, lo, hi = column[:cells], low[:cells], high[:cells]
        got = _pair_bins(got_pairs, c, lo, hi)
        want = (aggregates._side_bins([want_pairs[j][0] for j in c.tolist()], lo),
                aggregates._side_bins([want_pairs[j][1] for j in c.tolist()], hi))
        one = ([one_pairs[j][0].bin_at(int(k)) for j, k in zip(c, lo, strict=True)],
               [one_pairs[j][1].bin_at(int(k)) for j, k in zip(c, hi, strict=True)])
        assert got[0].tolist() == want[0].tolist() == one[0]
        assert got[1].tolist() == want[1].tolist() == one[1]
        for g, w in zip(got_pairs, want_pairs, strict=True):  # grown as _side_bins grows
            assert [s.count for s in g] == [s.count for s in w]
        assert got_pairs[3][0].count == CandidateStream(7.0, "lower").count
    low[3] = -1  # no candidate: bin_at's IndexError, as _side_bins raises it
    with pytest.raises(IndexError):
        _pair_bins(pairs(), column, low, high)
