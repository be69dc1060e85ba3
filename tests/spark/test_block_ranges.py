"""The merge by block range (issue #42, :mod:`dprect.engines.spark.block_ranges`):
the partition of a block is a public function of its number — non-decreasing (runs of
consecutive blocks), each wave's blocks on that wave's own m partitions, at least the
session's partitions target where there are blocks for it — and Spark's column computes
the same partition as the Python one; the merge of a block's rows
(:func:`~dprect.engines.spark.statistics.merge_block`) sums its partial lists as the hash
merge does and keeps its listed row's seeds and names, a block of no rows a null blob."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from sorted_lists import to_blob

from dprect.engines.spark.block_ranges import PARTITIONS_PER_CORE, BlockRanges
from dprect.engines.spark.statistics import (
    BLOB,
    PART,
    RANGE,
    merge_blobs,
    merge_block,
)

SHAPES = [(1, 1, 1), (5, 64, 2), (49, 64, 2), (147, 64, 2), (489, 64, 2), (100, 16, 2),
          (4883, 64, 2), (9, 2, 2), (30, 7, 3), (1000, 256, 50), (64, 64, 2)]


@pytest.mark.parametrize(("blocks", "wave", "cores"), SHAPES)
def test_a_blocks_partition_keeps_runs_within_its_wave(blocks, wave, cores):
    ranges = BlockRanges.of(blocks, wave, cores)
    m, size = ranges.per_wave, ranges.size
    parts = [ranges.partition(b) for b in range(blocks)]
    assert all(a <= b for a, b in itertools.pairwise(parts))  # runs of consecutive blocks
    assert all(0 <= p < ranges.partitions for p in parts)
    for b, p in enumerate(parts):
        w = b // wave
        assert w * m <= p < (w + 1) * m  # wave w's own partitions
    assert max(parts.count(p) for p in set(parts)) <= size
    used = len(set(parts))
    # as many partitions as the target asks, where there are blocks (and waves) for it
    assert used >= min(blocks, PARTITIONS_PER_CORE * cores) // 2
    assert m <= min(wave, blocks)


def test_sparks_partition_column_is_the_python_one(spark):
    for blocks, wave, cores in SHAPES:
        ranges = BlockRanges.of(blocks, wave, cores)
        df = spark.createDataFrame(pa.table({PART: pa.array(range(blocks), pa.int32())}))
        got = df.select(PART, ranges.column(PART).alias("p")).toArrow().sort_by(PART)
        assert got.column("p").type == pa.int32()
        assert got.column("p").to_pylist() == [ranges.partition(b) for b in range(blocks)]


def test_bad_ranges_are_refused():
    with pytest.raises(ValueError):
        BlockRanges.of(0, 64, 2)


def _blob(seed: int) -> bytes:
    gen = np.random.default_rng(seed)
    keys = np.unique(gen.integers(0, 500, 60))
    return to_blob(keys, gen.integers(1, 9, len(keys)),
                   gen.integers(-1000, 1000, len(keys))).to_pylist()[0]


def test_a_blocks_merge_sums_its_rows_and_keeps_its_listed_columns():
    """Two partial rows and the listed row of block 3 (in any order): the same blob as the
    hash merge's of the two, the listed row's names and seeds; a block with its listed
    row alone: a null blob and its names; without listed columns, the blob alone."""
    a, b = _blob(1), _blob(2)
    rows = pa.table({PART: pa.array([3, 3, 3], pa.int32()),
                     BLOB: pa.array([a, None, b], pa.binary()),
                     "_n": pa.array([None, b"names", None], pa.binary()),
                     "_s": pa.array([None, b"seeds", None], pa.binary()),
                     RANGE: pa.array([1, 1, 1], pa.int32())})
    out = merge_block(rows)
    want = merge_blobs(pa.table({PART: pa.array([3, 3], pa.int32()),
                                 BLOB: pa.array([a, b], pa.binary())}))
    assert out.column_names == [PART, BLOB, "_n", "_s"]
    assert out.to_pylist() == [{PART: 3, BLOB: want.column(BLOB)[0].as_py(),
                                "_n": b"names", "_s": b"seeds"}]
    alone = merge_block(rows.filter(pa.array([False, True, False])))
    assert alone.to_pylist() == [{PART: 3, BLOB: None, "_n": b"names", "_s": b"seeds"}]
    plain = merge_block(rows.select([PART, BLOB, RANGE]).filter(pa.array([True, False, True])))
    assert plain.to_pylist() == want.to_pylist()
