"""The pass's size on the quantiles' cells (issue #41 (b); docs/results.md §5.3b): the
decimal grid makes nearly every value a cell of its own, so the blobs travel compressed
(keys as differences: far below the 32 raw bytes an entry) and exactly, and a
partition's running lists are sent on once they hold ``HELD_ENTRIES`` entries — the
merged lists, hence the cells, are the same. In-process: no Spark session."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from engine_cells import assert_same_cells, both_engines
from sorted_lists import summed, to_blob

from dprect.core.statistic import QUANTILES, QUERY, SEARCH_GRID
from dprect.engines.spark import statistics as kernel
from dprect.engines.spark.statistics import (
    PART,
    from_blob,
    merge_blobs,
    partial_bins,
    to_cells,
)


def _batches(rows: int, groups: int, seed: int) -> list[pa.RecordBatch]:
    gen = np.random.default_rng(seed)
    g = gen.integers(0, groups, rows)
    x = gen.normal(50.0, 10.0, rows)
    y = np.round(gen.lognormal(2.0, 1.0, rows), 1)  # ties
    half = rows // 2
    return [pa.RecordBatch.from_pydict({"g": g[a:z], "x": x[a:z], "y": y[a:z]})
            for a, z in ((0, half), (half, rows))]


def _merged(out: list[pa.RecordBatch]) -> pa.Table:
    """Each range's rows summed by :func:`merge_blobs`, as the merge tasks do."""
    table = pa.Table.from_batches(out)
    parts = table.column(PART).to_pylist()
    merged = [merge_blobs(table.filter(pa.array([p == r for p in parts])))
              for r in sorted(set(parts))]
    return pa.concat_tables(merged)


def _mixed_pass(batches, spec, groups: int, starts: list[int]):
    """(the kernel spec, the merged blocks) of a mixed run's pass over ``batches``'
    columns x, y (the query's, then the quantiles'), cut into blocks at ``starts``."""
    kern, layout = kernel.virtual_columns(spec)
    out = list(partial_bins(iter(batches), columns=["x", "y", "x", "y"], group_column="g",
                            group_kind="numeric",
                            group_values=[float(i) for i in range(groups)],
                            groups=groups, ranges=len(starts), spec=kern, layout=layout,
                            limits=kernel.block_limits(kern, groups, starts)))
    return kern, _merged(out)


def _kernel(batches, spec, monkeypatch=None, held=None) -> tuple[int, dict]:
    if held is not None:  # every list sent on, the search grid's too
        monkeypatch.setattr(kernel, "HELD_ENTRIES", held)
        monkeypatch.setattr(kernel, "KEPT_ENTRIES", held // 2)
    out = list(partial_bins(iter(batches), columns=["x", "y"], group_column="g",
                            group_kind="numeric", group_values=[float(i) for i in range(7)],
                            groups=7, ranges=3, spec=spec))
    return len(out), to_cells(_merged(out), spec, 7)


def test_blobs_are_compressed_and_exact() -> None:
    """Quantile-like lists (sorted keys a few cells apart, counts mostly 1): under 4
    bytes an entry where the raw lists take 32; sums past int64 and negative ones, an
    empty blob and one entry come back exactly."""
    gen = np.random.default_rng(3)
    keys = np.cumsum(gen.integers(1, 400, 200_000)).astype(np.int64)
    counts = np.where(gen.random(200_000) < 0.9, 1, gen.integers(2, 9, 200_000))
    at = (gen.random(200_000) < 0.05).astype(np.int64)
    blob = to_blob(keys, counts.astype(np.int64), at)
    assert len(blob[0].as_py()) < 4 * len(keys)
    k, n, s = from_blob(blob[0].as_py())
    assert k.tolist() == keys.tolist() and n.tolist() == counts.tolist()
    assert s.tolist() == at.tolist()
    big = np.array([2**62, -(2**62) - 5, 7], dtype=object)
    for lists in ((np.array([3, 9, 2**61]), np.array([1, 2**40, 3]), big),
                  (np.zeros(0, np.int64),) * 3, (np.array([5]), np.array([1]), np.array([0]))):
        k, n, s = from_blob(to_blob(*(np.asarray(a, np.int64) for a in lists[:2]),
                                    lists[2])[0].as_py())
        assert k.tolist() == list(lists[0]) and n.tolist() == list(lists[1])
        assert [int(v) for v in s] == [int(v) for v in lists[2]]


@pytest.mark.parametrize("mechanism", [QUANTILES, QUERY])
def test_lists_sent_early_merge_to_the_same_cells(monkeypatch, mechanism) -> None:
    """A partition whose lists are sent on every 50 entries gives more rows,
    and after the ranges' merge exactly the cells of one sent at the end."""
    batches = _batches(4000, 7, 5)
    spec = mechanism.spec([SEARCH_GRID, SEARCH_GRID])
    rows_once, once = _kernel(batches, spec)
    rows_often, often = _kernel(batches, spec, monkeypatch, held=50)
    assert rows_often > rows_once
    assert once.keys() == often.keys() and len(once) == 14
    for key, cell in once.items():
        other = often[key]
        assert cell.keys.tolist() == other.keys.tolist()
        assert cell.counts.tolist() == other.counts.tolist()
        for a, b in ((cell.sums, other.sums), (cell.at_value, other.at_value)):
            assert (a is None) == (b is None)
            if a is not None:
                assert [int(v) for v in a] == [int(v) for v in b]


def test_the_pass_with_lists_sent_early_hands_the_numpy_cells(spark, tmp_path, monkeypatch
                                                              ) -> None:
    """Through Spark (the kernel pickled by value with the constant as set): lists sent
    on every 50 entries, the quantiles' and describe's cells of every group still equal
    the numpy primitive's, exactly."""
    monkeypatch.setattr(kernel, "HELD_ENTRIES", 50)
    monkeypatch.setattr(kernel, "KEPT_ENTRIES", 25)
    gen = np.random.default_rng(8)
    n = 6000
    table = {"x": gen.normal(50.0, 10.0, n), "y": np.round(gen.lognormal(2.0, 1.0, n), 1),
             "g": np.array([f"g{i}" for i in gen.integers(0, 9, n)])}
    listed = [f"g{i}" for i in range(8)]  # g8's rows dropped
    for mechanism in (QUANTILES, QUERY):
        spec = mechanism.spec([SEARCH_GRID, SEARCH_GRID])
        got, want = both_engines(spark, tmp_path / f"{mechanism.name}.parquet", table,
                                 ["x", "y"], spec, listed)
        assert_same_cells(got, want)


def test_blob_rows_travel_in_their_least_type_exactly() -> None:
    """Each of a blob's rows is stored in the least integer type holding it (a byte for
    counts of ones and at-value rows: the codec reads about a third of the raw bytes),
    and every type's edges come back exactly, past int64 sums too."""
    keys = np.array([3, 4, 9, 300], dtype=np.int64)  # steps 3, 1, 5, 291: two bytes
    blob = to_blob(keys, np.ones(4, np.int64), np.array([0, 1, 1, 0], np.int64))
    (seg,) = kernel._segments(blob[0].as_py())
    # bytes a value: key steps 2, counts 1, the sums' high word none (zeros), low word 1
    assert [0 if k is None else k.itemsize for k in seg.kinds] == [2, 1, 0, 1]
    edges = [0, 1, 127, 128, 255, 256, 32767, 32768, 65535, 65536, 2**31 - 1, 2**31,
             2**32 - 1, 2**32, 2**62]
    for signs in (1, -1):
        for top in edges:
            vals = np.array(sorted({0, signs * top, signs * (top // 2)}), dtype=np.int64)
            ks = np.cumsum(np.abs(vals) + 1).astype(np.int64)
            sums = np.array([int(v) * 3 for v in vals], dtype=object)
            k, n, s = from_blob(to_blob(ks, np.abs(vals) + 1, sums)[0].as_py())
            assert k.tolist() == ks.tolist() and n.tolist() == (np.abs(vals) + 1).tolist()
            assert [int(v) for v in s] == [int(v) for v in sums]


def test_at_value_rows_are_counted_by_one_sort_of_packed_words(monkeypatch) -> None:
    """A decimal-grid chunk's pairs with their at-value rows (0 or 1 each) are counted
    by sorting (group, key, bit) packed into one int64 (no argsort): the same sorted
    pairs, counts and at-value sums as counting each pair's rows directly."""
    gen = np.random.default_rng(4)
    group = gen.integers(0, 50, 40_000).astype(np.int32)
    keys = gen.integers(10**7, 10**7 + 3000, 40_000).astype(np.int64)
    bits = (gen.random(40_000) < 0.3).astype(np.int64)
    pairs: dict[tuple[int, int], list[int]] = {}
    for a, b, c in zip(group.tolist(), keys.tolist(), bits.tolist(), strict=True):
        pairs.setdefault((a, b), []).append(c)
    want = sorted(pairs)

    def no_argsort(*_a, **_k):
        raise AssertionError("argsort called")

    monkeypatch.setattr(kernel.np, "argsort", no_argsort)
    g, k, n, s = kernel._count(group, keys, bits)
    monkeypatch.undo()
    assert list(zip(g.tolist(), k.tolist(), strict=True)) == want
    assert n.tolist() == [len(pairs[p]) for p in want]
    assert s is not None and s.tolist() == [sum(pairs[p]) for p in want]
    assert g.dtype == np.int32 and k.dtype == np.int64 == n.dtype == s.dtype


def test_a_range_merge_merges_sorted_lists_without_sorting(monkeypatch) -> None:
    """A range's merge task sums its partitions' lists (each sorted, unique) in linear
    merges, not by sorting their concatenation: the same lists as that sort."""
    if kernel._jit() is None:
        pytest.skip("numba is not installed: the merge sorts")
    gen = np.random.default_rng(6)
    parts = []
    for size in (5000, 1, 0, 3000, 7000):
        k = np.unique(gen.integers(0, 20_000, size)).astype(np.int64)
        parts.append((k, gen.integers(1, 5, len(k)).astype(np.int64),
                      gen.integers(-2**40, 2**40, len(k)).astype(np.int64)))
    want = summed(parts)
    table = pa.table({PART: pa.array([2] * len(parts), pa.int32()),
                      kernel.BLOB: pa.concat_arrays([to_blob(*p) for p in parts])})

    def no_sort(_parts):
        raise AssertionError("the merge sorted")

    monkeypatch.setattr(kernel, "_sum_words", no_sort)
    out = merge_blobs(table)
    assert out.column(PART).to_pylist() == [2]
    got = from_blob(out.column(kernel.BLOB)[0].as_buffer())
    for a, b in zip(got, want, strict=True):
        assert [int(v) for v in a] == [int(v) for v in b]


def test_a_blocks_part_reads_its_own_columns_only(monkeypatch) -> None:
    """The executors read a block's cells one mechanism at a time: only that part's
    kernel columns (the query's with its two square words, the quantiles') are made
    cells, and they are the cells the whole block's decode gives that part. The run's
    layout (``virtual_columns`` of its spec) is worked out once, not once a block row."""
    from dprect.core.decimal_grid import DecimalGrid
    from dprect.core.mixed import mixed_spec, part_cells
    from dprect.core.statistic import complete
    from dprect.engines.spark import executor_draws
    from dprect.engines.spark.executor_draws import Blocks

    layouts = []
    monkeypatch.setattr(executor_draws, "virtual_columns",
                        lambda s: layouts.append(s) or kernel.virtual_columns(s))

    batches = _batches(6000, 7, 9)
    spec = mixed_spec([QUERY.spec([SEARCH_GRID, SEARCH_GRID], ["variance"]),
                       QUANTILES.spec([DecimalGrid(5), DecimalGrid(5)])])
    starts = [0, 3, 5]
    kern, merged = _mixed_pass(batches, spec, 7, starts)
    blocks = Blocks(kern, spec, 7, starts, 2)
    assert [blocks.part_columns(p) for p in (0, 1)] == [(0, 6), (6, 8)]
    for row in range(merged.num_rows):
        batch = merged.slice(row, 1).to_batches()[0]
        block = batch.column(PART)[0].as_py()
        start, n = starts[block], blocks.size(block)
        whole = {(g - start, j): c for (g, j), c in to_cells(batch, kern, 7).items()}
        every = kernel.real_cells(complete(whole, kern, n), spec, n)
        for part in (0, 1):
            want = part_cells(every, part, 2)
            got = blocks.cells(batch, 0, part)
            assert got.keys() == want.keys() and len(got) == 2 * n
            for key, cell in want.items():
                other = got[key]
                for a, b in ((cell.keys, other.keys), (cell.counts, other.counts),
                             (cell.sums, other.sums), (cell.at_value, other.at_value),
                             (cell.squares, other.squares)):
                    assert (a is None) == (b is None)
                    if a is not None:
                        assert [int(v) for v in a] == [int(v) for v in b]
    assert len(layouts) == 1 and len(layouts[0].columns) == len(spec.columns)


def test_a_blocks_cells_search_its_own_groups_edges_only(monkeypatch) -> None:
    """A block's cells are found among its own groups' cell edges only — work of the
    block's size, not of the run's groups (at 10^6 groups every block made and searched
    8·10^6 edges, once a phase: issue #42) — and they are the cells the whole decode gives
    those groups (with a quantiles' at-value column and a variance's square words): the
    cells the decode of every group's edges gives."""
    from dprect.core.decimal_grid import DecimalGrid
    from dprect.core.mixed import mixed_spec

    groups = 400
    gen = np.random.default_rng(12)
    g = gen.integers(0, groups, 9000)
    batches = [pa.RecordBatch.from_pydict({"g": g, "x": gen.normal(50.0, 10.0, len(g)),
                                           "y": np.round(gen.lognormal(2.0, 1.0, len(g)),
                                                         1)})]
    spec = mixed_spec([QUERY.spec([SEARCH_GRID, SEARCH_GRID], ["variance"]),
                       QUANTILES.spec([DecimalGrid(5), DecimalGrid(5)])])
    starts = [0, 9, 150, 393]
    kern, merged = _mixed_pass(batches, spec, groups, starts)
    searched: list[int] = []
    real = np.searchsorted

    def spy(a, v, *args, **kwargs):
        searched.append(np.size(v))
        return real(a, v, *args, **kwargs)

    edges = [*starts, groups]
    for row in range(merged.num_rows):
        batch = merged.slice(row, 1).to_batches()[0]
        block = batch.column(PART)[0].as_py()
        first, end = edges[block], edges[block + 1]
        whole = to_cells(batch, kern, groups)  # every group's edges searched
        searched.clear()
        monkeypatch.setattr(np, "searchsorted", spy)
        got = to_cells(batch, kern, groups, block=(first, end))
        monkeypatch.setattr(np, "searchsorted", real)
        assert searched and max(searched) <= (end - first + 1) * len(kern.columns)
        assert whole and got.keys() == whole.keys()
        assert all(first <= g < end for g, _ in got)
        for key, cell in whole.items():
            other = got[key]
            for a, b in ((cell.keys, other.keys), (cell.counts, other.counts),
                         (cell.sums, other.sums), (cell.at_value, other.at_value)):
                assert (a is None) == (b is None)
                if a is not None:
                    assert [int(v) for v in a] == [int(v) for v in b]


def _describe_blocks(seed: int, squares: bool):
    """A mixed run's Blocks (describe's query — mean, or variance with its squares — beside
    the quantiles, on two columns of 60 groups, some without rows, in three blocks) and its
    merged table, from the seed's rows."""
    from dprect.core.decimal_grid import DecimalGrid
    from dprect.core.mixed import mixed_spec
    from dprect.engines.spark.executor_draws import Blocks

    groups = 60
    gen = np.random.default_rng(seed)
    g = gen.integers(0, groups, 3000)
    g = g[g % 7 != 3]  # some groups without rows
    batches = [pa.RecordBatch.from_pydict({"g": g, "x": gen.normal(50.0, 10.0, len(g)),
                                           "y": -gen.lognormal(2.0, 1.0, len(g))})]
    spec = mixed_spec([QUERY.spec([SEARCH_GRID, SEARCH_GRID],
                                  ["variance"] if squares else ["mean"]),
                       QUANTILES.spec([DecimalGrid(5), DecimalGrid(5)])])
    starts = [0, 17, 40]
    kern, merged = _mixed_pass(batches, spec, groups, starts)
    return Blocks(kern, spec, groups, starts, 2), merged


@pytest.mark.parametrize("squares", [False, True])
def test_a_blocks_describe_bins_are_its_cells_with_rows(squares: bool) -> None:
    """Blocks.bins — describe's statistics of a block's cells, read in one pass over the
    decoded cells where no column keeps squares — are the BinStatistics of the cells
    Blocks.cells gives that have rows, the same arrays (describe's part of a mixed run
    beside the quantiles'); with a variance's square words, Blocks.cells' own."""
    blocks, merged = _describe_blocks(3, squares)
    for row in range(merged.num_rows):
        batch = merged.slice(row, 1).to_batches()[0]
        want = {k: c.bin_statistics() for k, c in blocks.cells(batch, 0, 0).items()
                if len(c.keys)}
        got = blocks.bins(batch, 0, 0)
        assert got.keys() == want.keys() and 0 < len(got) < 2 * blocks.size(row)
        for key, b in want.items():
            other = got[key]
            for x, y in ((b.bins, other.bins), (b.counts, other.counts),
                         (b.sums, other.sums), (b.squares, other.squares)):
                assert (x is None) == (y is None)
                if x is not None:
                    assert x.dtype == y.dtype and [int(v) for v in x] == [int(v) for v in y]


@pytest.mark.parametrize("squares", [False, True])
def test_a_blocks_column_bins_are_its_describe_bins_joined(squares: bool) -> None:
    """Blocks.column_bins — a block's describe statistics as column arrays, the decode's
    own (cell c = j·m + g) — holds, cell for cell, the arrays of Blocks.bins (an empty
    range for a cell without rows); None with a variance's squares (then Blocks.bins)."""
    blocks, merged = _describe_blocks(5, squares)
    for row in range(merged.num_rows):
        batch = merged.slice(row, 1).to_batches()[0]
        got = blocks.column_bins(batch, 0, 0)
        if squares:
            assert got is None
            continue
        assert got is not None
        m = blocks.size(row)
        assert (got.groups, got.columns, len(got.at)) == (m, 2, 2 * m + 1)
        want = blocks.bins(batch, 0, 0)
        assert len(want) > m // 2
        for j in range(2):
            for group in range(m):
                a, z = int(got.at[j * m + group]), int(got.at[j * m + group + 1])
                cell = want.get((group, j))
                if cell is None:
                    assert a == z
                    continue
                for x, y in ((cell.bins, got.bins), (cell.counts, got.counts),
                             (cell.sums, got.sums)):
                    assert y.dtype == np.int64 and y[a:z].tolist() == [int(v) for v in x]
        assert int(got.at[-1]) == len(got.bins) == sum(len(c.bins) for c in want.values())
