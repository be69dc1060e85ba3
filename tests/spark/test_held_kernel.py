"""The box's held queries' executor kernel (:mod:`dprect.engines.spark.held_kernel`), run
without Spark on Arrow batches: the packed blocks give back every column bit for bit, at
most ``PACK_BYTES`` each, and a partition's pairs are the numpy engine's counts of the
encoded rows that survive the cuts — the first query's (raw shipped columns) and a later
one's (the held blocks) alike."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from dprect import FloatOrder, Grid
from dprect.engines.numpy_engine import bucket_counts
from dprect.engines.spark import held_kernel
from dprect.engines.spark.held_kernel import HeldTask, count_held, count_shipped, pack, unpack
from dprect.engines.spark.pass_kernel import feature_column


def _columns(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    x0 = rng.normal(0, 3, n).astype(np.float32)  # a FloatType feature: 4 bytes a value
    x1 = np.round(rng.normal(0, 3, n), 1)  # a DoubleType one (ties, -0.0)
    x1[:3] = -0.0
    return [x0, x1]


def _dense(pairs: list[pa.RecordBatch], widths: list[int]) -> list[list[int]]:
    total = np.zeros(sum(widths), dtype=np.int64)
    for batch in pairs:
        assert batch.column(2).null_count == batch.num_rows  # pairs only: no block
        np.add.at(total, batch.column(0).to_numpy(), batch.column(1).to_numpy())
    return [part.tolist() for part in np.split(total, np.cumsum(widths)[:-1])]


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
    blocks = pa.Table.from_batches(out).filter(pa.compute.is_valid(
        pa.Table.from_batches(out).column("b")))
    pairs = [b for b in out if b.column(2).null_count == b.num_rows and b.num_rows]
    assert _dense(pairs, widths) == want
    assert sum(blocks.column("c").to_pylist()) == 100  # every row held, cut or not
    assert set(blocks.column("s").to_pylist()) == {-1}
    later = list(count_held(iter(blocks.to_batches(max_chunksize=3)), task))
    assert _dense(later, widths) == want
    no_hold = list(count_shipped(iter(batches), task, hold=False))
    assert len(no_hold) == 1 and _dense(no_hold, widths) == want
