"""The quantiles' pooled centre on the Spark engine (issue #41 item 5; docs/privacy.md §11a,
Lemma Q5): on public groups of which most are small — each cell's noisy count below the
plan's ``pool_rows``, so no own centre but ONE centre per column drawn from the pooled
rows of all such cells, summed across the blocks — the executor route (two phases:
the counts and pools, then the pooled cells near their column's centre) releases, for a
seed, exactly the numpy engine's cells, streamed or gathered."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dprect.app.aggregate_flow import asked_mechanisms, plan_for, run_spec
from dprect.core import quantile_release
from dprect.core.randomness import RandomSource
from dprect.core.request import Source
from dprect.engines import grouped
from dprect.engines.grouped import draw_statistics, grouped_statistics
from dprect.engines.spark import executor_draws
from dprect.engines.spark.grouped_route import SparkGroupedRoute

COLUMNS = ["x", "y"]
LISTED = [f"g{i}" for i in range(40)]  # g36 … g39: no rows


def _table() -> dict[str, np.ndarray]:
    gen = np.random.default_rng(48)
    # 4 large groups (own centres), 32 small ones of 250 rows (pooled), 4 without rows
    sizes = [3000 if i < 4 else 250 for i in range(36)]
    g = np.array([f"g{i}" for i, n in enumerate(sizes) for _ in range(n)] + ["zz"] * 20)
    n = len(g)
    x = (gen.poisson(3.0, n) - 2).astype(np.int32)
    y = gen.normal(50.0, 10.0, n)
    y[::97] = np.nan
    return {"x": x, "y": y, "g": g}


def _rng(seed: int) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=seed)


@pytest.mark.parametrize("streamed", [False, True])
def test_pooled_quantiles_equal_numpys_in_the_executors(spark, tmp_path: Path, monkeypatch,
                                                        streamed: bool):
    table = _table()
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table(table), path, row_group_size=5000)
    mechanisms, names = asked_mechanisms("p10,median,p90")
    plan = plan_for(mechanisms, {"epsilon": 0.5, "columns": COLUMNS}, names)
    assert 250 < plan.pool_rows < 3000  # the small groups pool, the large do not
    spec = run_spec(mechanisms, plan, None, COLUMNS)
    index = np.array([LISTED.index(v) if v in LISTED else -1 for v in table["g"]],
                     dtype=np.int32)
    cells = grouped_statistics([table[c] for c in COLUMNS], index, len(LISTED), spec)
    want = draw_statistics(mechanisms, plan, cells, LISTED, COLUMNS, _rng(3)).rows()

    pooled: list[list[int]] = []
    real = quantile_release.pooled_centres

    def spy(plan, pools, rng):  # the columns whose pooled centre the driver drew
        pooled.append(sorted(pools.hists))
        return real(plan, pools, rng)

    monkeypatch.setattr(executor_draws, "EXECUTOR_CELLS", 1)
    monkeypatch.setattr(executor_draws, "pooled_centres", spy)
    route = SparkGroupedRoute(lambda: (spark, False))
    blocks: list = []
    with route.open(Source(str(path), COLUMNS, group_by="g"), LISTED, spec,
                    lambda _: None) as prepared:
        result = prepared.draw(mechanisms, plan, LISTED, COLUMNS, _rng(3),
                               **({"each_block": blocks.append} if streamed else {}))
    got = [row for block in blocks for row in block.rows()] if streamed else result.rows()
    assert pooled == [[0, 1]]  # one pooled centre a column, from every block's pool
    assert got == want
    small = [r for r in got if r["group"] not in LISTED[:4]]
    assert all(r["below_row_need"] for r in small)


def test_numpy_blocks_pool_across_blocks(monkeypatch):
    """The numpy engine's streamed blocks (``QUANTILE_BLOCK_CELLS``) give the gathered
    run's cells: the pools are summed over every block before any pooled cell is drawn."""
    table = _table()
    mechanisms, names = asked_mechanisms("median")
    plan = plan_for(mechanisms, {"epsilon": 0.5, "columns": COLUMNS}, names)
    spec = run_spec(mechanisms, plan, None, COLUMNS)
    index = np.array([LISTED.index(v) if v in LISTED else -1 for v in table["g"]],
                     dtype=np.int32)
    cells = grouped_statistics([table[c] for c in COLUMNS], index, len(LISTED), spec)
    stats = {k: c.quantile_statistics() for k, c in cells.items()}
    whole = quantile_release.release_grouped(plan, stats, LISTED, COLUMNS, _rng(4))
    monkeypatch.setattr(grouped, "QUANTILE_BLOCK_CELLS", 6)  # 3 groups a block
    got: list = []
    draw_statistics(mechanisms, plan, cells, LISTED, COLUMNS, _rng(4),
                    lambda block: got.extend(block.cells))
    assert got == whole.cells


ANCHORED = [f"a{i}" for i in range(18)]  # a16, a17: no rows


def _anchored_table() -> dict[str, np.ndarray]:
    """4 groups of 5,000 rows (no own centre: above the split) and 12 of 30: in ``x`` only
    a4 has values (a5 … a15 null there), so ``x``'s pool holds ~30 released rows, below
    ``pool_rows``: anchored (Lemma Q6, no draw); ``y``'s pool, ~360 rows, draws its
    centre from the run's source — one column of each kind, in column order."""
    gen = np.random.default_rng(49)
    sizes = [5000 if i < 4 else 30 for i in range(16)]
    g = np.array([f"a{i}" for i, n in enumerate(sizes) for _ in range(n)])
    x = gen.uniform(200, 1000, len(g)).round()
    x[np.isin(g, [f"a{i}" for i in range(5, 16)])] = np.nan
    y = gen.uniform(200, 1000, len(g)).round()
    return {"x": x, "y": y, "g": g}


@pytest.mark.parametrize("streamed", [False, True])
def test_anchored_quantiles_equal_numpys_in_the_executors(spark, tmp_path: Path,
                                                          monkeypatch, streamed: bool):
    """A column anchored (no draw) beside a pooled one (a draw): the executor route's
    cells, streamed or gathered, are the numpy engine's for a seed, gathered or in
    blocks of 3 groups (``QUANTILE_BLOCK_CELLS``)."""
    table = _anchored_table()
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table(table), path, row_group_size=5000)
    mechanisms, names = asked_mechanisms("p10,median,p90")
    plan = plan_for(mechanisms, {"epsilon": 2.0, "columns": COLUMNS}, names)
    assert 30 < plan.pool_rows < 360 and plan.split_rows < 5000
    spec = run_spec(mechanisms, plan, None, COLUMNS)
    index = np.array([ANCHORED.index(v) for v in table["g"]], dtype=np.int32)
    cells = grouped_statistics([table[c] for c in COLUMNS], index, len(ANCHORED), spec)
    want = draw_statistics(mechanisms, plan, cells, ANCHORED, COLUMNS, _rng(6)).rows()
    monkeypatch.setattr(grouped, "QUANTILE_BLOCK_CELLS", 6)  # 3 groups a block
    blocks_np: list = []
    draw_statistics(mechanisms, plan, cells, ANCHORED, COLUMNS, _rng(6),
                    lambda block: blocks_np.extend(block.rows()))
    assert blocks_np == want

    made: list[dict[int, int]] = []
    real = quantile_release.pooled_centres

    def spy(plan, pools, rng):  # the joined pools' released rows the driver saw
        made.append(dict(pools.rows))
        return real(plan, pools, rng)

    monkeypatch.setattr(executor_draws, "EXECUTOR_CELLS", 1)
    monkeypatch.setattr(executor_draws, "pooled_centres", spy)
    route = SparkGroupedRoute(lambda: (spark, False))
    blocks: list = []
    with route.open(Source(str(path), COLUMNS, group_by="g"), ANCHORED, spec,
                    lambda _: None) as prepared:
        result = prepared.draw(mechanisms, plan, ANCHORED, COLUMNS, _rng(6),
                               **({"each_block": blocks.append} if streamed else {}))
    got = [row for block in blocks for row in block.rows()] if streamed else result.rows()
    (rows,) = made
    assert rows[0] < plan.pool_rows <= rows[1]  # x anchored, y drawn
    assert got == want
    tiny = next(r for r in got if r["group"] == "a4" and r["column"] == "x")
    x = table["x"][table["g"] == "a4"]
    assert x.min() / 10 <= tiny["median"] <= x.max() * 10
