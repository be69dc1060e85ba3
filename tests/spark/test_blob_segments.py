"""The pass's blobs in segments (issue #41; docs/results.md §5.3b): a segment per kernel
column, a variance's three kernel columns (its significands and its squares' two words:
the same keys up to a constant, the same counts) in ONE segment that stores its keys and
counts once; a reader of some columns decompresses only theirs; a range's merge merges
segment by segment, a family whole; and a partition's early sends carry the decimal
grids' growing lists, not the search grid's saturating ones. The merged cells are the
same every way. In-process: no Spark session."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from sorted_lists import summed, to_blob

from dprect.core.decimal_grid import DecimalGrid
from dprect.core.mixed import mixed_spec
from dprect.core.statistic import QUANTILES, QUERY, SEARCH_GRID
from dprect.engines.grouped import grouped_statistics
from dprect.engines.spark import statistics as kernel
from dprect.engines.spark.statistics import (
    BLOB,
    PART,
    from_blob,
    merge_blobs,
    partial_bins,
    real_cells,
    to_cells,
    virtual_columns,
)

GROUPS = 7


def _batches(rows: int, seed: int) -> list[pa.RecordBatch]:
    gen = np.random.default_rng(seed)
    g = gen.integers(0, GROUPS, rows)
    x = gen.normal(50.0, 10.0, rows)
    y = np.round(gen.lognormal(2.0, 1.0, rows), 1)  # ties
    return [pa.RecordBatch.from_pydict({"g": g[a:a + 500], "x": x[a:a + 500],
                                        "y": y[a:a + 500]}) for a in range(0, rows, 500)]


def _pass(spec, columns, batches, ranges=3):
    kern, layout = virtual_columns(spec)
    out = list(partial_bins(iter(batches), columns=columns, group_column="g",
                            group_kind="numeric",
                            group_values=[float(i) for i in range(GROUPS)], groups=GROUPS,
                            ranges=ranges, spec=kern, layout=layout))
    return kern, out


def _merged(out: list[pa.RecordBatch]) -> pa.Table:
    table = pa.Table.from_batches(out)
    parts = table.column(PART).to_pylist()
    return pa.concat_tables([merge_blobs(table.filter(pa.array([p == r for p in parts])))
                             for r in sorted(set(parts))])


def _columns_of(out: list[pa.RecordBatch]) -> list[list[tuple[int, int]]]:
    """Per output batch, its segments' (first kernel column, words)."""
    return [[(s.column, len(s.offsets)) for s in kernel._segments(b.column(1)[0].as_buffer())]
            for b in out]


def _same_cells(a, b) -> None:
    assert a.keys() == b.keys()
    for key, cell in a.items():
        other = b[key]
        for x, y in ((cell.keys, other.keys), (cell.counts, other.counts),
                     (cell.sums, other.sums), (cell.at_value, other.at_value),
                     (cell.squares, other.squares)):
            assert (x is None) == (y is None)
            if x is not None:
                assert [int(v) for v in x] == [int(v) for v in y]


def test_a_variances_three_kernel_columns_travel_as_one_segment() -> None:
    """A column with its squares is three kernel columns; they travel as one segment of
    three sum words (keys and counts once: a third of the entries the three apart have),
    and the merged cells are the numpy primitive's, exactly."""
    spec = QUERY.spec([SEARCH_GRID, SEARCH_GRID], ["variance"])
    batches = _batches(6000, 1)
    kern, out = _pass(spec, ["x", "y"], batches)
    # one segment: the two columns' families (three words each) in one run
    assert {c for batch in _columns_of(out) for c in batch} == {(0, 3)}
    merged = _merged(out)
    got = real_cells(to_cells(merged, kern, GROUPS), spec, GROUPS)
    table = pa.Table.from_batches(batches)
    want = grouped_statistics([table.column(c).to_numpy() for c in ("x", "y")],
                              table.column("g").to_numpy().astype(np.int32), GROUPS, spec)
    _same_cells(got, {k: c for k, c in want.items() if len(c.keys)})
    for blob in merged.column(BLOB):  # keys and counts once for three words' entries
        (seg,) = kernel._segments(blob.as_buffer())
        assert 3 * seg.n == len(from_blob(blob.as_buffer())[0])


def test_ranges_cut_inside_a_family_collect_to_the_numpy_cells() -> None:
    """The driver route's key ranges are cut by cells, so a range may end inside a
    family's first word: the family's later words travel with that range's, past the next
    range's first keys — the collected ranges are read back in key order all the same."""
    spec = QUERY.spec([SEARCH_GRID, SEARCH_GRID], ["variance"])
    batches = _batches(3000, 7)
    kern, out = _pass(spec, ["x", "y"], batches, ranges=20)  # about 2 cells a range
    got = real_cells(to_cells(_merged(out), kern, GROUPS), spec, GROUPS)
    table = pa.Table.from_batches(batches)
    want = grouped_statistics([table.column(c).to_numpy() for c in ("x", "y")],
                              table.column("g").to_numpy().astype(np.int32), GROUPS, spec)
    _same_cells(got, {k: c for k, c in want.items() if len(c.keys)})


def test_a_family_whole_in_one_blob_and_apart_in_another_merges_exactly() -> None:
    """A range's merge given a family as one segment from one blob and as three from
    another sums each word exactly as the sort does."""
    rs = np.random.default_rng(3)
    offsets = (0, 10_000, 20_000)

    def family(size):
        k = np.unique(rs.integers(0, 9_000, size)).astype(np.int64)
        n = rs.integers(1, 50, len(k)).astype(np.int64)
        return k, n, [rs.integers(-(1 << 35), 1 << 35, len(k)) for _ in offsets]

    a, b = family(3000), family(2000)
    limits = [np.array([0, 30_000])] * 3
    whole = list(kernel.range_blobs([a], limits, 1, [kernel.Family(0, offsets, 0)]))
    apart = list(kernel.range_blobs([(b[0] + off, b[1], [b[2][i]]) for i, off in
                                     enumerate(offsets)], limits, 1))
    assert _columns_of(whole) == [[(0, 3)]] and _columns_of(apart) == [[(0, 1), (1, 1),
                                                                         (2, 1)]]
    merged = merge_blobs(pa.Table.from_batches([*whole, *apart]))
    got = from_blob(merged.column(BLOB)[0].as_buffer())
    want = [summed([(a[0] + off, a[1], a[2][i]), (b[0] + off, b[1], b[2][i])])
            for i, off in enumerate(offsets)]
    for x, y in zip(got, kernel._joined(want), strict=True):
        assert [int(v) for v in x] == [int(v) for v in y]


def test_a_reader_of_some_columns_decompresses_only_theirs(monkeypatch) -> None:
    """A block read by one mechanism of a mixed run (a key range) decompresses only the
    segments with keys there: the query's run (its columns with their squares) for
    describe's phases, the quantiles' for theirs — the same lists as the whole blob's cut
    there."""
    spec = mixed_spec([QUERY.spec([SEARCH_GRID, SEARCH_GRID], ["variance"]),
                       QUANTILES.spec([DecimalGrid(5), DecimalGrid(5)])])
    kern, out = _pass(spec, ["x", "y", "x", "y"], _batches(4000, 2), ranges=1)
    blob = _merged(out).column(BLOB)[0].as_buffer()
    whole = from_blob(blob)
    base = kernel.key_bases(kern, GROUPS)
    opened: list[int] = []
    real = kernel._Segment.rows
    monkeypatch.setattr(kernel._Segment, "rows",
                        lambda self: (opened.append(self.column), real(self))[1])
    assert [s.column for s in kernel._segments(blob)] == [0, 6]  # the two mechanisms' runs
    for (first, end), columns in (((0, 6), [0]), ((6, 8), [6]), ((3, 4), [0]), ((7, 8), [6])):
        opened.clear()
        keys = (int(base[first]), int(base[end]))
        got = from_blob(blob, keys)
        assert opened == columns
        cut = (whole[0] >= keys[0]) & (whole[0] < keys[1])
        for x, y in zip(got, (w[cut] for w in whole), strict=True):
            assert [int(v) for v in x] == [int(v) for v in y]


def test_early_sends_carry_the_decimal_grids_lists_only(monkeypatch) -> None:
    """Lists sent on whenever they hold HELD_ENTRIES: the quantiles' decimal-grid lists
    (about an entry a value) go, the query's search-grid lists (a few bins a cell, here
    far below half of it) keep summing and leave once, at the end — and the merged cells
    are those of one send at the end, exactly."""
    spec = mixed_spec([QUERY.spec([SEARCH_GRID, SEARCH_GRID], ["variance"]),
                       QUANTILES.spec([DecimalGrid(5), DecimalGrid(5)])])
    columns = ["x", "y", "x", "y"]
    batches = _batches(6000, 4)
    kern, once = _pass(spec, columns, batches)
    monkeypatch.setattr(kernel, "CHUNK_VALUES", 4 * 500)  # a chunk a batch
    monkeypatch.setattr(kernel, "HELD_ENTRIES", 6000)
    kern, often = _pass(spec, columns, batches)
    def sends(out):
        sent = [c for batch in _columns_of(out) for c, _ in batch]
        return {c: sent.count(c) for c in (0, 6)}

    one, many = sends(once), sends(often)
    assert many[6] > one[6]  # the quantiles' run, many times
    assert many[0] == one[0]  # the query's, once a range
    _same_cells(to_cells(_merged(once), kern, GROUPS), to_cells(_merged(often), kern, GROUPS))


@pytest.mark.parametrize("n", [1, 2, 300])
def test_a_segment_of_few_entries_and_zero_rows_reads_back(n) -> None:
    """One entry (no steps stored), all-zero sums (no bytes), negative and past-int64
    sums: every segment reads back exactly."""
    keys = np.arange(5, 5 + 3 * n, 3, dtype=np.int64)
    for sums in (np.zeros(n, np.int64), -np.arange(n, dtype=np.int64) * (1 << 40),
                 np.array([(1 << 70) - i for i in range(n)], dtype=object)):
        counts = np.full(n, 1 << 34 if sums.dtype == object else 2, dtype=np.int64)
        k, c, s = from_blob(to_blob(keys, counts, sums)[0].as_py())
        assert k.tolist() == keys.tolist() and c.tolist() == counts.tolist()
        assert [int(v) for v in s] == [int(v) for v in sums]


def test_many_sends_merge_decoded_in_place_to_the_same_bytes(monkeypatch) -> None:
    """A range's many partial blobs (a send a chunk: more than 8) are decoded run by run
    into one flat list each and merged there (``_merge_flat``; no concatenation of
    decoded parts): the merged blobs are the same
    bytes as each segment decoded apart and merged by ``_merge_words``, and their cells
    those of one send at the end."""
    spec = mixed_spec([QUERY.spec([SEARCH_GRID, SEARCH_GRID], ["variance"]),
                       QUANTILES.spec([DecimalGrid(5), DecimalGrid(5)])])
    columns = ["x", "y", "x", "y"]
    batches = _batches(12000, 9)
    kern, once = _pass(spec, columns, batches, ranges=2)
    monkeypatch.setattr(kernel, "CHUNK_VALUES", 4 * 500)
    monkeypatch.setattr(kernel, "HELD_ENTRIES", 600)
    monkeypatch.setattr(kernel, "KEPT_ENTRIES", 300)
    kern, often = _pass(spec, columns, batches, ranges=2)
    assert max(_columns_of(often).count(c) for c in _columns_of(often)) >= 1
    assert len(often) >= 2 * 8
    calls: list[int] = []
    real = kernel._merge_flat
    monkeypatch.setattr(kernel, "_merge_flat",
                        lambda run: (calls.append(len(run)), real(run))[1])
    flat = _merged(often)
    assert calls and max(calls) > 8
    monkeypatch.setattr(kernel, "_merge_flat", lambda run: None)  # each segment apart
    apart = _merged(often)
    assert flat.column(BLOB).to_pylist() == apart.column(BLOB).to_pylist()
    _same_cells(to_cells(flat, kern, GROUPS), to_cells(_merged(once), kern, GROUPS))


@pytest.mark.parametrize("high", [1 << 40, 1 << 70])
def test_sums_with_a_high_word_merge_decoded_in_place_or_apart(high) -> None:
    """Sums past 2^32 (a high word: joined in int64, merged in place) and past int64
    (Python integers, over counts past 2^33 rows: ``_merge_flat`` declines, each segment
    merged apart by the sort) over many blobs of one range: the exact sums and counts."""
    keys = np.arange(0, 60, 3, dtype=np.int64)
    rows = 1 << (28 if high < 1 << 62 else 34)
    blobs = []
    for i in range(10):
        sums = np.array([high + i * 7 + j for j in range(len(keys))], dtype=object)
        counts = np.full(len(keys), rows + i, dtype=np.int64)
        if high < 1 << 62:
            sums = sums.astype(np.int64)
        blobs.append(to_blob(keys[i % 3:], counts[i % 3:], sums[i % 3:])[0].as_py())
    table = pa.table({PART: pa.array([0] * len(blobs), pa.int32()),
                      BLOB: pa.array(blobs, pa.binary())})
    k, c, s = from_blob(merge_blobs(table).column(BLOB)[0].as_py())
    assert k.tolist() == keys.tolist()
    for at, key in enumerate(keys.tolist()):
        have = [i for i in range(10) if key >= 3 * (i % 3)]
        assert int(c[at]) == sum(rows + i for i in have)
        assert int(s[at]) == sum(high + i * 7 + key // 3 for i in have)


def test_every_ranges_step_bounds_at_once_are_each_ranges_own() -> None:
    """Issue #42: range_blobs takes each range's least and largest step after its first
    for every range of a family at once (_range_bounds: one reduceat of each over a copy
    with the ranges' first steps neutral) — the same as _bounds of each range's steps,
    on ranges of none, one and many entries, entries before the first range and after
    the last, steps of both signs (so the narrowed rows, hence the blobs, are the same)."""
    rs = np.random.default_rng(42)
    for _ in range(400):
        n = int(rs.integers(1, 80))
        steps = rs.integers(-300, 70_000, n)
        steps[0] = 0
        edges = np.sort(rs.integers(0, n + 1, int(rs.integers(2, 14))))
        want = [kernel._bounds(steps[a + 1:z]) for a, z in itertools.pairwise(edges)]
        assert kernel._range_bounds(steps, edges) == want
