"""The quantiles on the Spark engine (issue #41): the one ``mapInArrow`` pass counts the
QUANTILES spec — the rows per decimal cell and the rows at each cell's value — cell for
cell as the numpy primitive does, so the released quantiles are identical for a seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dprect.core.quantile_release import plan_statistics
from dprect.core.randomness import RandomSource
from dprect.core.statistic import QUANTILES, SEARCH_GRID
from dprect.engines.grouped import draw_quantiles, grouped_statistics
from dprect.engines.spark.statistics import spark_statistics


def test_spark_quantiles_equal_numpys(spark, tmp_path: Path):
    gen = np.random.default_rng(41)
    n = 4000
    a = np.round(gen.normal(0, 30, n), 1)
    a[::11] = np.nan
    b = np.concatenate([np.full(n // 2, 65_000.0), gen.uniform(0, 5e5, n - n // 2)])
    b[::7] = np.inf
    g = gen.choice(["p", "q", "unlisted"], n)
    pq.write_table(pa.table({"a": a, "b": b, "g": g}), tmp_path / "t.parquet")
    listed = ["q", "p", "empty"]
    spec = QUANTILES.spec([SEARCH_GRID] * 2)
    df = spark.read.parquet(str(tmp_path / "t.parquet")).repartition(3)
    got = spark_statistics(df, ["a", "b"], spec, group_by="g", groups=listed)
    index = np.array([listed.index(v) if v in listed else -1 for v in g], dtype=np.int32)
    want = grouped_statistics([a, b], index, len(listed), spec)
    assert set(got) == set(want)
    for key, cell in want.items():
        other = got[key]
        assert other.keys.tolist() == cell.keys.tolist(), key
        assert other.counts.tolist() == cell.counts.tolist(), key
        assert other.at_value is not None and cell.at_value is not None
        assert other.at_value.tolist() == cell.at_value.tolist(), key
    assert int(want[(1, 1)].at_value.sum()) > 0  # the ties at 65,000 are cell values
    plan = plan_statistics(["p10", "median", "p90"], 1.0, 2)
    released = [draw_quantiles(plan, cells, listed, ["a", "b"], RandomSource(7)).rows()
                for cells in (got, want)]
    assert released[0] == released[1]
