"""The box's held queries' executor kernel (:mod:`dprect.engines.spark.held_kernel`), run
without Spark on Arrow batches: the packed blocks give back every column bit for bit, at
most ``PACK_BYTES`` each, and a partition's counts row is the numpy engine's counts of
the encoded rows that survive the cuts — the first query's (raw shipped columns) and a
later one's (the held blocks) alike — narrowed and compressed."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from dprect import FloatOrder, Grid
from dprect.engines.numpy_engine import bucket_counts
from dprect.engines.spark import held_kernel
from dprect.engines.spark.held_kernel import (
    BLOCK,
    COUNTS,
    HeldTask,
    count_held,
    count_shipped,
    counts_row,
    pack,
    sum_counts,
    unpack,
)
from dprect.engines.spark.pass_kernel import feature_column


def _columns(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    x0 = rng.normal(0, 3, n).astype(np.float32)  # a FloatType feature: 4 bytes a value
    x1 = np.round(rng.normal(0, 3, n), 1)  # a DoubleType one (ties, -0.0)
    x1[:3] = -0.0
    return [x0, x1]


def _dense(out: list[pa.RecordBatch], widths: list[int]) -> list[list[int]]:
    table = pa.Table.from_batches(out)
    counts = table.filter(pa.compute.equal(table.column("k"), COUNTS))
    assert counts.num_rows == 1  # one counts row a partition
    return [part.tolist() for part in sum_counts(counts, widths)]


def test_counts_rows_narrow_compress_and_sum_exactly() -> None:
    """A counts row takes the least unsigned type holding its largest count (one byte
    here where int64 pairs took 16 a non-zero slot) and the driver's sum is exact
    across rows of different types, up to counts past 2^32."""
    small = [np.zeros(4097, dtype=np.int64) for _ in range(8)]
    for j, axis in enumerate(small):
        axis[1000 + 3 * j:1900:2] = 7
    row = counts_row(small)
    assert row.column(1).to_pylist() == [1]
    assert len(row.column(2)[0].as_py()) < 8 * 4097 // 20
    big = [np.full(4097, 2**40 + 3, dtype=np.int64) for _ in range(8)]
    mid = [np.full(4097, 70_000, dtype=np.int64) for _ in range(8)]
    rows = [counts_row(small), counts_row(big), counts_row(mid)]
    assert [r.column(1)[0].as_py() for r in rows] == [1, 8, 4]
    got = sum_counts(pa.Table.from_batches(rows), [4097] * 8)
    for j in range(8):
        assert got[j].dtype == np.int64
        assert got[j].tolist() == (small[j] + big[j] + mid[j]).tolist()


def test_packed_blocks_give_the_columns_back(monkeypatch) -> None:
    monkeypatch.setattr(held_kernel, "PACK_BYTES", 12 * 7)  # 7 rows of 4 + 8 bytes
    cols = _columns(30, 1)
    blocks = list(pack(cols))
    assert [rows for rows, _ in blocks] == [7, 7, 7, 7, 2]
    assert all(block.size <= 12 * 7 for _, block in blocks)
    back = [unpack(rows, block, [np.float32, np.float64]) for rows, block in blocks]
    for j, col in enumerate(cols):
        got = np.concatenate([b[j] for b in back])
        assert got.dtype == col.dtype and got.tobytes() == col.tobytes()


def test_both_queries_count_as_numpy_with_cuts(monkeypatch) -> None:
    monkeypatch.setattr(held_kernel, "PACK_BYTES", 12 * 16)  # several blocks a batch
    doms = (Grid(-5.0, 5.0, 1000), FloatOrder())
    cols = _columns(100, 2)
    thresholds = (np.array([10, 400, 400, 700], dtype=np.int64),
                  FloatOrder().encode(np.array([-1.0, 0.0, 2.5])))
    cuts = ((0, True, 800), (1, False, -4.0))  # a hi cut on axis 0, a lo cut on axis 1
    v = [d.encode(c) for d, c in zip(doms, cols, strict=True)]
    keep = (v[0] < 800) & (v[1] > -4.0)
    want = [bucket_counts(v[j][keep], thresholds[j]).tolist() for j in range(2)]
    widths = [len(t) + 1 for t in thresholds]
    task = HeldTask(doms, (np.dtype(np.float32), np.dtype(np.float64)), thresholds, cuts,
                    compiled=False)
    batches = [pa.RecordBatch.from_arrays([pa.array(c[s:s + 40]) for c in cols],
                                          names=[feature_column(j) for j in range(2)])
               for s in range(0, 100, 40)]
    out = list(count_shipped(iter(batches), task, hold=True))
    table = pa.Table.from_batches(out)
    blocks = table.filter(pa.compute.equal(table.column("k"), BLOCK))
    assert _dense(out, widths) == want
    assert sum(blocks.column("c").to_pylist()) == 100  # every row held, cut or not
    later = list(count_held(iter(blocks.to_batches(max_chunksize=3)), task))
    assert _dense(later, widths) == want
    no_hold = list(count_shipped(iter(batches), task, hold=False))
    assert len(no_hold) == 1 and _dense(no_hold, widths) == want


def test_one_counter_a_distinct_thresholds_compiled_only_for_many(monkeypatch) -> None:
    """A partition builds one counter per distinct thresholds (the box's first query asks
    every axis the same ones: 1,024 compiled guides a partition cost more than the
    counts at d = 1,024), compiled only from ``GUIDED_THRESHOLDS`` on; numpy's counts."""
    built: list[tuple[int, bool]] = []
    real = held_kernel.counter

    def spy(t, dtype, *, compiled):
        built.append((len(t), compiled))
        return real(t, dtype, compiled=compiled)

    monkeypatch.setattr(held_kernel, "counter", spy)
    many = np.arange(0, 3000, 10, dtype=np.int64)  # 300 thresholds
    few = [np.array([5, 50, 500]), np.array([7, 70])]
    thresholds = [many] * 5 + few + [many.copy()]
    made = held_kernel.counters(thresholds, [np.dtype(np.int64)] * 8, compiled=True)
    assert sorted(built) == [(2, False), (3, False), (300, True)]
    assert made[0] is made[4] is made[7]
    values = np.random.default_rng(3).integers(0, 3000, 500)
    for count, t in zip(made, thresholds, strict=True):
        assert np.asarray(count(values)).tolist() == bucket_counts(values, t).tolist()
    built.clear()
    held_kernel.counters(thresholds, [np.dtype(np.int64)] * 8, compiled=False)
    assert sorted(built) == [(2, False), (3, False), (300, False)]
