"""The quantiles on the Spark engine (issue #41): the one ``mapInArrow`` pass counts the
QUANTILES spec — the rows per decimal cell and the rows at each cell's value — cell for
cell as the numpy primitive does, so the released quantiles are identical for a seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from engine_cells import assert_same_cells, both_engines

from dprect.core.quantile_release import plan_statistics
from dprect.core.randomness import RandomSource
from dprect.core.statistic import QUANTILES, SEARCH_GRID
from dprect.engines.grouped import draw_quantiles


def test_spark_quantiles_equal_numpys(spark, tmp_path: Path):
    gen = np.random.default_rng(41)
    n = 4000
    a = np.round(gen.normal(0, 30, n), 1)
    a[::11] = np.nan
    b = np.concatenate([np.full(n // 2, 65_000.0), gen.uniform(0, 5e5, n - n // 2)])
    b[::7] = np.inf
    g = gen.choice(["p", "q", "unlisted"], n)
    listed = ["q", "p", "empty"]
    spec = QUANTILES.spec([SEARCH_GRID] * 2)
    got, want = both_engines(spark, tmp_path / "t.parquet", {"a": a, "b": b, "g": g},
                             ["a", "b"], spec, listed)
    assert_same_cells(got, want)
    assert want[(1, 1)].at_value is not None
    assert int(want[(1, 1)].at_value.sum()) > 0  # the ties at 65,000 are cell values
    plan = plan_statistics(["p10", "median", "p90"], 1.0, 2)
    released = [draw_quantiles(plan, cells, listed, ["a", "b"], RandomSource(7)).rows()
                for cells in (got, want)]
    assert released[0] == released[1]
