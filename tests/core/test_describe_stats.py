"""The sufficient statistics of describe (issue #23, dprect.core.describe_stats): what the
mechanism reads, summable across row sets, exact, and the same draws as the documented
order with the row-by-row truncated sum."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest
from describe_reference import (
    centred_integer_sum,
    edges_hold,
    exact_step,
    integer_sum,
    interval_counts,
    reference_describe,
    side_tails,
    statistics_from_bins,
)

from dprect.core import aggregates, describe_stats
from dprect.core.aggregates import plan_describe
from dprect.core.describe_stats import (
    bin_blocks,
    bin_statistics,
    cell_cuts,
    cell_grid,
    cell_statistics,
    centre_counts,
    range_cuts,
    row_intervals,
    truncated,
    truncated_value,
)
from dprect.core.domains import FloatBins
from dprect.core.randomness import RandomSource
from dprect.core.tail_bounds import CENTRE_BITS, SEARCH_BITS, tail_counts

#: the candidates' grid and its size; _bins(n): n bins of FloatBins(12) at SEARCH_BITS
SEARCH = FloatBins(SEARCH_BITS)
SIZE = SEARCH.size


def _bins(n: int) -> int:
    return max(1, n >> (12 - SEARCH_BITS))

K = 1 << aggregates.SUM_FRACTION_BITS
CENTRES = [0.0, 1.0, -2.5, 7.0, -1e-5, 3e-320, 1e300, -1e300]


def _seeded(seed: int) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=seed)


def _columns() -> list[np.ndarray]:
    rs = np.random.default_rng(8)
    return [rs.normal(5, 3, 3000), rs.lognormal(0, 2, 2000), -rs.exponential(2, 2000),
            np.array([0.0, -0.0, 5e-324, -5e-324, 1e-310, 3.0, 1e308, -1e308])]


def _bits(n: int, seed: int) -> np.ndarray:
    """Random finite floats over every binade and both signs (subnormals included)."""
    b = np.random.default_rng(seed).integers(0, 2**63, n, dtype=np.uint64)
    b |= np.random.default_rng(seed + 1).integers(0, 2, n, dtype=np.uint64) << np.uint64(63)
    x = b.view(np.float64)
    return x[np.isfinite(x)]


def test_truncation_keeps_the_search_bin_and_30_bits():
    x = _bits(200_000, 1)
    t = truncated_value(x)
    grid = SEARCH
    assert np.array_equal(grid.encode(t), grid.encode(x))
    assert np.all(np.abs(t) <= np.abs(x))
    normal = np.abs(x) >= np.finfo(np.float64).tiny
    assert np.all(np.abs(x - t)[normal] < np.abs(x[normal]) * 2.0**-29)
    assert not np.array_equal(t, x)  # it does drop bits
    e, m = truncated(x[:2000])
    for v, ei, mi in zip(t[:2000].tolist(), e.tolist(), m.tolist(), strict=True):
        assert abs(mi) < 2**30
        assert Fraction(v) == mi * Fraction(2) ** (ei - describe_stats.EXPONENT_BIAS)


@pytest.mark.parametrize("centre", CENTRES)
def test_candidates_are_bin_edges_and_tails_come_from_the_statistics(centre):
    grid = cell_grid(centre)
    assert edges_hold(grid)  # the sum's exactness rests on it
    for x in _columns():
        st = cell_statistics(x, centre)
        counts = interval_counts(st, grid)
        xs = np.sort(x)
        assert np.array_equal(side_tails(counts, grid, "lower"),
                              tail_counts(xs, grid.lower, "lower"))
        assert np.array_equal(side_tails(counts, grid, "upper"),
                              tail_counts(xs, grid.upper, "upper"))
        assert st.rows == len(x)


def test_trimmed_cuts_give_the_same_intervals():
    for x in _columns():
        for c in (0.0, 7.0):
            keys = centre_counts(x)[0]  # the centre bins' range, in search bins
            shift = SEARCH_BITS - CENTRE_BITS
            lo, hi = int(keys[0]) << shift, ((int(keys[-1]) + 1) << shift) - 1
            cell = np.zeros(len(x), dtype=np.int64)
            full = row_intervals(x, cell, [cell_cuts(cell_grid(c))])
            trimmed = cell_cuts(cell_grid(c), lo, hi)
            assert len(trimmed.cuts) < len(cell_cuts(cell_grid(c)).cuts)
            assert np.array_equal(row_intervals(x, cell, [trimmed]), full)
    # several cells at once: each row under its own cell's cuts
    a, b = _columns()[:2]
    both = row_intervals(np.r_[a, b], np.r_[np.zeros(len(a), int), np.ones(len(b), int)],
                         [cell_cuts(cell_grid(0.0)), cell_cuts(cell_grid(7.0))])
    assert np.array_equal(both[:len(a)], row_intervals(a, np.zeros(len(a), int),
                                                       [cell_cuts(cell_grid(0.0))]))
    assert np.array_equal(both[len(a):], row_intervals(b, np.zeros(len(b), int),
                                                       [cell_cuts(cell_grid(7.0))]))


def test_range_cuts_are_the_trimmed_cuts_of_the_whole_grid():
    """The Spark kernel's cuts (made only up to a cell's range) equal cell_cuts of the
    whole grid, base and cuts, for centres in every binade and of both signs and ranges
    around them, inside them and far from them (a wrong count of the candidates skipped
    shifts the base and fails here)."""
    rs = np.random.default_rng(5)
    centres = [*CENTRES, *_bits(40, 9).tolist()]
    for c in centres:
        grid = cell_grid(c)
        cb = int(SEARCH.encode(np.array([c]))[0])
        ranges = [(cb, cb), (cb - _bins(3000), cb + _bins(3000)), (cb + 1, cb + _bins(40_000)),
                  (cb - _bins(90_000), cb - _bins(5)), (0, SIZE - 1)]
        ranges += [tuple(sorted(rs.integers(0, SIZE, 2).tolist())) for _ in range(4)]
        if len(grid.cuts):
            k = int(rs.integers(0, len(grid.cuts)))
            far = int(grid.cuts[min(k + 9, len(grid.cuts) - 1)])
            ranges += [(int(grid.cuts[k]), int(grid.cuts[k])), (int(grid.cuts[k]) - 1, far)]
        for lo, hi in ranges:
            lo, hi = max(lo, 0), min(hi, SIZE - 1)
            if hi < lo:
                continue
            want = cell_cuts(grid, lo, hi)
            got = describe_stats.range_cuts(c, lo, hi)
            assert got.base == want.base, (c, lo, hi)
            assert np.array_equal(got.cuts, want.cuts), (c, lo, hi)


@pytest.mark.parametrize("centre", [0.0, 1.0, -2.5, 7.0])
def test_sum_from_statistics_is_the_direct_exact_sum(centre):
    grid = cell_grid(centre)
    for x in _columns():
        st = cell_statistics(x, centre)
        for kl, ku in ((0, 0), (5, 40), (60, 3), (len(grid.lower) - 1, len(grid.upper) - 1)):
            lo, hi = float(grid.lower[kl]), float(grid.upper[ku])
            for p in (lo / 2 + hi / 2, min(max(centre, lo), hi)):
                direct = sum((Fraction(float(v)) - Fraction(p)
                              for v in np.clip(truncated_value(x), lo, hi)), Fraction(0))
                assert describe_stats.centred_sum_at(st, kl, ku, float(grid.lower[kl]),
                                                     float(grid.upper[ku]), p) == direct
                assert integer_sum(direct, exact_step(lo, hi, p, K)) == \
                    centred_integer_sum(x, lo, hi, p, K)


def test_integer_sum_sensitivity_on_adversarial_rows():
    rs = np.random.default_rng(2)
    base = np.r_[rs.normal(0, 1, 50), 1e308, -1e308]
    for lo, hi in ((-1.0, 3.0), (-1e308, 1e308), (2.0**-1074, 2.0**-1073), (-5.0, -5.0)):
        for p in (lo, hi, lo / 2 + hi / 2, lo / 4 + 3 * (hi / 4)):
            s0 = centred_integer_sum(base, lo, hi, p, K)
            moved = []
            for extra in (lo, hi, np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf),
                          p, 1e308, -1e308, 0.0, 5e-324):
                moved.append(abs(centred_integer_sum(np.r_[base, extra], lo, hi, p, K)
                                 - s0))
            assert max(moved) <= K
            if hi > lo and p in (lo, hi):  # a row at the far bound moves S by the full 2^K
                assert max(moved) >= K - 1


def test_run_describe_follows_the_documented_draw_order_and_truncation():
    rs = np.random.default_rng(1)
    n = 2500
    g = rs.choice(["a", "b"], n)
    table = pa.table({"x": rs.normal(10, 2, n), "y": rs.exponential(3, n) - 1.0, "g": g})
    plan = plan_describe(2.0, 2)
    vals = {(name, j): table.column(c).to_numpy()[g == name]
            for name in ("a", "b") for j, c in enumerate(["x", "y"])}
    got = aggregates.run_describe(plan, vals, ["a", "b", "c"], ["x", "y"], _seeded(9))
    want = reference_describe(plan, table, ["x", "y"], "g", ["a", "b", "c"], _seeded(9))
    assert got.cells == want
    # the order matters: in each group's stream, drawing cell by cell (centre, sides,
    # noise) instead of the group's centres first gives other draws; so does one stream
    # for every group
    streams = [RandomSource.stream(s) for s in _seeded(9).stream_seeds(3)]
    per_cell = [[aggregates.describe_cell(vals.get((name, j), np.zeros(0)), plan, r)
                 for j in range(2)] for name, r in zip(("a", "b", "c"), streams, strict=True)]
    assert per_cell != got.cells
    rng = _seeded(9)
    one_stream = aggregates.describe_blocks(
        plan, bin_blocks({(g, j): bin_statistics(x[np.isfinite(x)])
                          for g, name in enumerate(("a", "b", "c")) for j in range(2)
                          if len(x := np.asarray(vals.get((name, j), ()), dtype=float))
                          and np.isfinite(x).any()}, 2, [range(3)]),
        ["a", "b", "c"], ["x", "y"], rng)
    assert one_stream.cells == got.cells
    shared = _seeded(9)
    assert [[aggregates.describe_cell(vals.get((name, j), np.zeros(0)), plan, shared)
             for j in range(2)] for name in ("a", "b", "c")] != got.cells


def test_the_blocks_and_their_order_do_not_change_a_seeded_run():
    """One stream per group: any cut into blocks, drawn in any order, gives the same
    cells bit for bit (what lets worker processes draw them, engines/driver_pool.py)."""
    rs = np.random.default_rng(4)
    names = [f"g{i}" for i in range(7)]
    vals = {(name, j): rs.normal(3.0 * i, 1.0 + j, 200 + 50 * i)
            for i, name in enumerate(names) for j in range(2)}
    plan = plan_describe(1.0, 2)
    whole = aggregates.run_describe(plan, vals, names, ["x", "y"], _seeded(3))
    for parts in (2, 3, 7):
        cut = aggregates.run_describe(plan, vals, names, ["x", "y"], _seeded(3), parts=parts)
        assert cut.cells == whole.cells, parts

    def backwards(fn, blocks, seeds):  # draws the last block first
        done = [fn(b, s) for b, s in reversed(list(zip(blocks, seeds, strict=True)))]
        return done[::-1]

    assert aggregates.run_describe(plan, vals, names, ["x", "y"], _seeded(3), backwards,
                                   parts=3).cells == whole.cells
    other = aggregates.run_describe(plan, vals, names, ["x", "y"], _seeded(4), parts=3)
    assert other.cells != whole.cells


def _step_float(lower: float, upper: float, pivot: float, sensitivity: int) -> float:
    """γ = max(U − p, p − L)/k as a float (0 when it overflows)."""
    try:
        return float(exact_step(lower, upper, pivot, sensitivity))
    except OverflowError:
        return 0.0


def test_integer_sum_and_step_on_integers_are_the_rational_ones():
    """The driver's S and γ (aggregates._sum_and_step: integers, no Fractions) equal
    integer_sum(centred_sum_at(…), exact_step(…)) and exact_step's float for bounds and pivots of
    every magnitude (subnormal to the largest floats: the step's float overflows to 0)."""
    rs = np.random.default_rng(12)
    for centre in CENTRES:
        grid = cell_grid(centre)
        for x in _columns():
            st = cell_statistics(x, centre)
            picks = [(0, 0), (len(grid.lower) - 1, len(grid.upper) - 1)]
            picks += [(int(rs.integers(0, len(grid.lower))), int(rs.integers(0, len(grid.upper))))
                      for _ in range(6)]
            for kl, ku in picks:
                lo, hi = float(grid.lower[kl]), float(grid.upper[ku])
                for p in (lo / 2 + hi / 2, min(max(centre, lo), hi), lo, hi):
                    want = integer_sum(describe_stats.centred_sum_at(st, kl, ku, lo, hi, p),
                                       exact_step(lo, hi, p, K))
                    got, gamma = aggregates._sum_and_step(st, kl, ku, lo, hi, p, K)
                    assert got == want, (centre, kl, ku, p)
                    assert gamma == _step_float(lo, hi, p, K), (lo, hi, p)


def test_bins_while_is_exact_whatever_the_guess():
    """CandidateStream.bins_while's target only speeds up the search: far-off, infinite
    or NaN guesses give the bins of the whole side's candidates while ``keep`` holds
    (range_cuts' own guess: test_range_cuts_are_the_trimmed_cuts_of_the_whole_grid)."""
    from dprect.core.tail_bounds import CandidateStream, side_candidates

    rs = np.random.default_rng(3)
    for c in [*CENTRES, *_bits(25, 4).tolist()]:
        for side in ("lower", "upper"):
            every = SEARCH.encode(side_candidates(c, side))
            out = 1 if side == "upper" else -1  # b: the search ends near the centre too
            near = [int(every[min(i, len(every) - 1)]) + d * out
                    for i in (0, 1, 2, 9) for d in (0, 1)]
            for b in [*near, *rs.integers(0, SIZE, 3).tolist()]:
                keep = (lambda x, b=b: x < b) if side == "upper" else (lambda x, b=b: x > b)
                held = np.array([keep(int(v)) for v in every] + [False])
                want = every[:int(np.argmin(held))]
                for guess in (0.0, -1e300, 1e300, np.inf, -np.inf, np.nan, c, -c):
                    got = CandidateStream(c, side).bins_while(keep, guess)
                    assert np.array_equal(got, want), (c, side, b, guess)


def test_a_stream_advanced_by_bins_while_reads_on_as_a_fresh_one():
    """range_cuts' streams keep the candidates bins_while made; the cell's searches read
    on from them: every prefix, every value and the side's end are a fresh stream's
    (a stream kept one bin too many or too few, or resumed at another point, fails); and
    a stream grown before (shared by cells of one centre) gives bins_while's bins too."""
    from dprect.core.tail_bounds import CandidateStream

    rs = np.random.default_rng(5)
    for c in [*CENTRES, *_bits(20, 6).tolist()]:
        for side in ("lower", "upper"):
            fresh = CandidateStream(c, side)
            every = fresh.upto(10**6)
            for b in [*rs.integers(0, SIZE, 4).tolist(), int(every[min(3, len(every) - 1)])]:
                keep = (lambda x, b=b: x < b) if side == "upper" else (lambda x, b=b: x > b)
                stream = CandidateStream(c, side)
                made = stream.bins_while(keep)
                assert stream.count == max(1, len(made))
                for n in (1, len(made), len(made) + 1, len(made) + 7, 10**6):
                    got = stream.upto(n)
                    assert np.array_equal(got, every[:n]), (c, side, b, n)
                assert stream.complete and stream.count == len(every)
                k = len(every) - 1
                assert stream.value(k) == CandidateStream(c, side).value(k)
                # a grown (shared) stream reads the same bins from the ones it made
                assert np.array_equal(stream.bins_while(keep), made), (c, side, b)
                part = CandidateStream(c, side)
                part.upto(max(2, len(made) // 2))
                assert np.array_equal(part.bins_while(keep), made), (c, side, b)


def test_a_search_bin_holds_one_exponent():
    """bin_exponents reads each FloatBins(SEARCH_BITS) bin's e = max(E, 1): the e that
    truncated gives every row of the bin (every binade, both signs, subnormals, ±0)."""
    x = np.r_[_bits(200_000, 11), 0.0, -0.0, 5e-324, -5e-324, 1.7e308, -1.7e308]
    e, _ = truncated(x)
    assert np.array_equal(describe_stats.bin_exponents(SEARCH.encode(x)), e)


def test_the_statistics_from_search_bins_are_the_rows():
    """One pass's per-bin counts and sums give, under any centre's cuts (whole or trimmed
    to the bins' range), the cell's statistics row by row, and its centre histogram; a
    wrong exponent, interval or coarsening fails here."""
    for x in [*_columns(), np.r_[_columns()[0], _bits(5000, 21)]]:
        bins = describe_stats.bin_statistics(x)
        keys, counts = describe_stats.centre_counts_from_bins(bins.bins, bins.counts)
        want_keys, want_counts = centre_counts(x)
        assert np.array_equal(keys, want_keys) and np.array_equal(counts, want_counts)
        lo, hi = int(bins.bins[0]), int(bins.bins[-1])
        for c in [*CENTRES, float(np.median(x)), float(x.max()), float(x.min())]:
            want = cell_statistics(x, c)
            for cuts in (cell_cuts(cell_grid(c)), range_cuts(c, lo, hi)):
                got = statistics_from_bins(bins, cuts)
                assert np.array_equal(got.keys, want.keys), c
                assert np.array_equal(got.counts, want.counts), c
                assert np.array_equal(got.sums, want.sums), c


def test_statistics_of_cells_keeps_each_cell_apart():
    """Every cell's statistics from the joined search, cells without rows left out."""
    cols = _columns()
    bins = {(0, 0): describe_stats.bin_statistics(cols[0]),
            (1, 0): describe_stats.bin_statistics(cols[1]),
            (1, 1): describe_stats.bin_statistics(cols[2])}
    values = {(0, 0): cols[0], (1, 0): cols[1], (1, 1): cols[2]}
    centres = {(0, 0): 5.0, (1, 0): 0.5, (0, 1): 1.0, (1, 1): -3.0}
    got = describe_stats.statistics_of_cells(bins, centres, 2, 2)
    assert set(got) == set(values)
    for key, x in values.items():
        want = cell_statistics(x, centres[key])
        assert np.array_equal(got[key].keys, want.keys)
        assert np.array_equal(got[key].counts, want.counts)
        assert np.array_equal(got[key].sums, want.sums)


# -- exact sums at any count (issue #40: int64 wrapped at about 8.6·10^9 rows a key) ----------
_BIG_M = (1 << 30) - 1  # the largest |M| a row has
_N = 1 << 32  # rows of one partial: its Σ M < 2^62, two of them < 2^63, three past it
_PART = _N * _BIG_M


@pytest.mark.parametrize("sign", [1, -1])
def test_sum_by_key_is_exact_past_the_int64_wrap(sign):
    """Partial sums of 2^32 rows each at the largest significand, as partitions or bins
    hand them: three of one key sum past 2^63 (int64 wrapped), and come out as the exact
    integer; a key below the wrap keeps its int64."""
    keys = np.array([7, 9, 7, 7], dtype=np.int64)
    counts = np.array([_N, 1, _N, _N], dtype=np.int64)
    sums = np.array([sign * _PART, -5, sign * _PART, sign * _PART], dtype=np.int64)
    k, n, s = describe_stats.sum_by_key(keys, sums, counts)
    assert k.tolist() == [7, 9] and n.tolist() == [3 * _N, 1]
    assert int(s[0]) == sign * 3 * _PART and abs(int(s[0])) >= 1 << 63  # past int64
    assert int(s[1]) == -5
    # wide sums merged again (object sums in, as a later merge gets them): still exact
    _, n2, s2 = describe_stats.sum_by_key(np.r_[k, k], np.r_[s, s], np.r_[n, n])
    assert [int(v) for v in s2] == [sign * 6 * _PART, -10] and n2.tolist() == [6 * _N, 2]
    # below the wrap nothing changes: int64 sums
    _, n3, s3 = describe_stats.sum_by_key(keys[:2], sums[:2], counts[:2])
    assert n3.tolist() == [_N, 1] and s3.dtype == np.int64 and s3.tolist() == [sign * _PART, -5]


def test_bins_to_cells_are_exact_past_the_wrap():
    """statistics_from_bins (a cell's bins summed by interval and exponent) past 2^63, and
    the clamped sum read from them."""
    # three adjacent search bins of one binade, in one interval (no cut between them)
    first = int(FloatBins(SEARCH_BITS).encode(np.array([2.0]))[0])
    bins = np.arange(first, first + 3, dtype=np.int64)
    assert len(set(describe_stats.bin_exponents(bins).tolist())) == 1
    stats = describe_stats.BinStatistics(bins, np.array([_N] * 3), np.array([_PART] * 3))
    cell = statistics_from_bins(
        stats, describe_stats.CellCuts(np.zeros(0, dtype=np.int64), 0))
    assert cell.counts.tolist() == [3 * _N] and int(cell.sums[0]) == 3 * _PART
    # the clamped sum with every row between the bounds: Σ M·2^(e − bias) − n·p, exactly
    (_, e), = zip(*describe_stats.unpack(cell.keys), strict=True)
    total = describe_stats.centred_sum_at(cell, 10**6, 10**6, -1e300, 1e300, 0.5)
    want = Fraction(3 * _PART) * Fraction(2) ** (int(e) - describe_stats.EXPONENT_BIAS) \
        - Fraction(3 * _N, 2)
    assert total == want


def test_sum_words_round_trip():
    """A sum as two int64 words and back, past int64 too (the Spark blobs' form)."""
    values = np.array([0, -1, 5, -(1 << 62), (1 << 62) + 3, 3 * _PART, -3 * _PART],
                      dtype=object)
    hi, lo = describe_stats.sum_words(values)
    assert hi.dtype == lo.dtype == np.int64 and (lo >= 0).all() and (lo < 2**32).all()
    counts = np.array([1, 1, 1, _N, _N, 3 * _N, 3 * _N])
    assert [int(v) for v in describe_stats.words_sum(hi, lo, counts)] == values.tolist()
    small = values[:3].astype(np.int64)
    back = describe_stats.words_sum(*describe_stats.sum_words(small), np.ones(3))
    assert back.dtype == np.int64 and back.tolist() == small.tolist()


def test_a_column_without_rows_in_any_group_of_a_block_gets_no_statistics():
    """A block of groups none of which has rows in a column (a block of empty listed
    groups, drawn by a worker; issue #41 routes every engine through the bins): that
    column's cells are empty, the others' are made as usual (it raised before)."""
    from dprect.core.describe_stats import statistics_of_cells

    x = np.array([1.0, 2.0, 2.0, 7.5])
    bins = {(0, 0): bin_statistics(x)}
    centres = {(g, j): 2.0 for g in range(2) for j in range(2)}
    out = statistics_of_cells(bins, centres, 2, 2)
    assert set(out) == {(0, 0)}
    want = cell_statistics(x, 2.0)
    assert np.array_equal(out[(0, 0)].counts, want.counts)


def test_from_words_joins_in_int64_where_it_fits_and_exactly_past_it() -> None:
    """Σ M² from its two word sums: the same Python integers whether the words are joined
    in int64 (each word sum in range) or one at a time (past it, or object sums)."""
    from dprect.core.describe_stats import SQUARE_WORD, from_words

    gen = np.random.default_rng(12)
    hi = gen.integers(0, 2**32, 500).astype(np.int64)
    lo = gen.integers(0, 2**62, 500).astype(np.int64)
    edge = (2**63 - 1) >> SQUARE_WORD  # the largest hi joined in int64 with lo below 2^30
    for h, v in ((hi, lo), (hi[:0], lo[:0]), (np.array([2**32, 5]), np.array([0, 2**62])),
                 (np.array([edge, 0]), np.array([2**30 - 1, 0])),
                 (np.array([edge, 0]), np.array([2**30, 0])), (np.array([-1]), np.array([3])),
                 (np.array([2**40, 1], dtype=object), np.array([2**70, 3], dtype=object)),
                 (np.array([2**64 - 1, 7], dtype=np.uint64), np.array([-5, 2**31 - 1],
                                                                      dtype=np.int32))):
        got = from_words(h, v)
        assert got.dtype == object and all(type(x) is int for x in got)
        assert got.tolist() == [(int(a) << SQUARE_WORD) + int(b) for a, b in zip(h, v, strict=True)]
