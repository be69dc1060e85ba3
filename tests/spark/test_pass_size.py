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

from dprect.core.statistic import QUANTILES, QUERY, SEARCH_GRID
from dprect.engines.spark import statistics as kernel
from dprect.engines.spark.statistics import (
    PART,
    from_blob,
    merge_blobs,
    partial_bins,
    to_blob,
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


def _kernel(batches, spec, monkeypatch=None, held=None) -> tuple[int, dict]:
    if held is not None:
        monkeypatch.setattr(kernel, "HELD_ENTRIES", held)
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
