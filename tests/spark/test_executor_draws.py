"""The grouped aggregates drawn in the executors (issue #42,
:mod:`dprect.engines.spark.executor_draws`): on 300 public groups — large ones, small ones
(anchored at the large groups' released means: the two-phase draw; in the column whose
large and middle groups have no values, no anchor: its small cells' ONE pooled centre, from
their histograms summed across the blocks), a run of listed groups
without rows (whole blocks without rows), rows of unlisted and null groups — the executor
route releases, for a seed, exactly the driver route's record for every statistic: the
describe preset (with variance and std), the quantiles, a mixed run (query + quantiles);
the coverage bounds of a seeded run stay on the driver (their groups share one stream),
and an unseeded run draws them in the executors, each group from its own statistics. The
executor route never collects the merged statistics to the driver, and keeps them once."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dprect.app.aggregate_flow import asked_mechanisms, plan_for, run_spec
from dprect.core.randomness import RandomSource
from dprect.core.request import Source
from dprect.core.statistic import COVERAGE, QUERY
from dprect.engines.spark import executor_draws, grouped_route
from dprect.engines.spark.grouped_route import SparkGroupedRoute
from dprect.release.aggregate_record import aggregate_record, mixed_record

COLUMNS = ["x", "y", "ints"]
LISTED = [f"g{i}" for i in range(300)]  # g250 … g299: no rows


def _table(seed: int = 5) -> pa.Table:
    gen = np.random.default_rng(seed)
    # large groups (the plan's own split), middle ones (larger centres), small ones
    # (anchored at the large groups' released means)
    sizes = [3000 if i < 20 else 500 if i < 40 else int(gen.integers(5, 30))
             for i in range(250)]
    g: list[str | None] = [f"g{i}" for i, n in enumerate(sizes) for _ in range(n)]
    g += ["zz"] * 30 + [None] * 5  # unlisted and null groups: dropped
    n = len(g)
    # each group's own location: a group drawn from another's statistics shows
    x = 10.0 * np.array([int(v[1:]) if v and v[0] == "g" else 0 for v in g]) \
        + gen.normal(0.0, 1.0, n)
    x[:3] = [np.nan, np.inf, -0.0]
    # "ints" only in the small groups: a column without an anchor (the pooled split)
    small = np.array([bool(v) and v[0] == "g" and int(v[1:]) >= 40 for v in g])
    return pa.table({"x": x, "y": gen.lognormal(1.0, 1.2, n),
                     "ints": pa.array(gen.integers(-50, 500, n), pa.int64(), mask=~small),
                     "g": pa.array(g, pa.string())})


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("executor_draws") / "t.parquet"
    pq.write_table(_table(), path, row_group_size=20000)
    return path


def _rng(seed: int | None) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=seed)


def _release(spark, path: Path, statistics: str, seed: int | None, executors: bool,
             monkeypatch: pytest.MonkeyPatch, epsilon: float = 2.0) -> dict:
    """The record of a run of ``statistics`` through the Spark route, drawn in the
    executors or on the driver (the route's public threshold moved)."""
    mechanisms, names = asked_mechanisms(statistics)
    plan = plan_for(mechanisms, {"epsilon": epsilon, "columns": COLUMNS}, names)
    spec = run_spec(mechanisms, plan, None, COLUMNS)
    monkeypatch.setattr(executor_draws, "EXECUTOR_CELLS", 1 if executors else 10**12)
    route = SparkGroupedRoute(lambda: (spark, False))
    with route.open(Source(str(path), COLUMNS, group_by="g"), LISTED, spec,
                    lambda _: None) as prepared:
        result = prepared.draw(mechanisms, plan, LISTED, COLUMNS, _rng(seed))
    return mixed_record(result) if len(mechanisms) > 1 else aggregate_record(result, plan)


def _refuse_collect(monkeypatch: pytest.MonkeyPatch) -> None:
    """The executor route must not gather the merged statistics on the driver."""
    def refused(*_a: object, **_k: object) -> None:
        raise AssertionError("the merged statistics were collected to the driver")

    monkeypatch.setattr(grouped_route, "spark_statistics", refused)


@pytest.mark.parametrize("statistics", [
    "bounds,count,sum,mean,variance,std",
    "p10,median,p90",
    "count,mean,p25,median",
])
def test_executor_draws_equal_the_driver_route_for_a_seed(spark, parquet, monkeypatch,
                                                          statistics):
    want = _release(spark, parquet, statistics, 11, False, monkeypatch)
    pooled: list[int] = []
    real = executor_draws.column_centres

    def spy(plan, pools, rng):  # the driver's anchors, or a column's pooled centre
        out = real(plan, pools, rng)
        pooled.extend(j for j, (_, p) in enumerate(out) if p)
        return out

    from dprect.engines.spark.statistics import BLOB

    DataFrame = type(spark.range(1))  # the session's class (classic Spark's own)

    kept: list[list[str]] = []  # the columns of every DataFrame the run persists
    persist = DataFrame.persist

    def recording(df, *args, **kwargs):  # type: ignore[no-untyped-def]
        kept.append(list(df.columns))
        return persist(df, *args, **kwargs)

    with monkeypatch.context() as m:
        _refuse_collect(m)
        m.setattr(executor_draws, "column_centres", spy)
        m.setattr(DataFrame, "persist", recording)
        got = _release(spark, parquet, statistics, 11, True, m)
    # the merged statistics are kept once (describe's phase 1 keeps its draws, not a
    # second copy of the statistics: phase 2 joins the kept blocks again)
    assert [BLOB in columns for columns in kept].count(True) == 1, kept
    if "mean" in statistics:  # "ints" drew its pooled centre from the summed blocks
        assert pooled == [COLUMNS.index("ints")]
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    text = json.dumps(got)
    assert text.count('"group": "g299"') >= len(COLUMNS)  # a listed group without rows
    if "mean" in statistics:  # small groups were drawn in phase 2 (anchored)
        rows = got["results"] if "results" in got else got["parts"]["describe"]["results"]
        assert any(r["below_row_need"] for r in rows)
        assert not all(r["below_row_need"] for r in rows)


def test_a_seeded_coverage_run_stays_on_the_driver():
    assert not executor_draws.executor_route((COVERAGE,), 10**6, 8, seeded=True)
    assert executor_draws.executor_route((COVERAGE,), 10**6, 8, seeded=False)
    assert executor_draws.executor_route((QUERY,), 10**6, 8, seeded=True)
    assert not executor_draws.executor_route((QUERY,), 10, 8, seeded=True)  # few cells


def _clipped(record: dict, table: pa.Table) -> list[tuple[int, int]]:
    """Per (group, column) of a coverage record, the rows below its lower bound and above
    its upper bound."""
    groups = np.asarray(table.column("g").to_pylist(), dtype=object)
    out = []
    for row in record["bounds"]:
        x = np.asarray(table.column(row["column"]).to_numpy(zero_copy_only=False),
                       dtype=np.float64)[groups == row["group"]]
        x = x[np.isfinite(x)]
        lower, upper = float(row["lower"]), float(row["upper"])  # "-inf" / "inf" as written
        out.append((int((x < lower).sum()), int((x > upper).sum())))
    return out


def test_unseeded_coverage_in_the_executors_clips_each_groups_tails(spark, parquet,
                                                                     monkeypatch):
    """An unseeded run draws the coverage bounds in the executors (from OS entropy, so no
    seed to compare with the driver's): every listed group is released, and at a huge ε
    each large group's bounds of ``x`` (its own location, 10·i, spread 1) clip a few rows
    of each side's tail (the target is 2 rows here; 1% of the group's 3,000 at most) — as
    the driver route's do — where bounds drawn from another group's statistics would clip
    nearly all of its rows on one side."""
    with monkeypatch.context() as m:
        _refuse_collect(m)
        got = _release(spark, parquet, "coverage", None, True, m, epsilon=1e4)
    want = _release(spark, parquet, "coverage", None, False, monkeypatch, epsilon=1e4)
    assert got["groups"] == want["groups"] == LISTED
    table = pq.read_table(parquet)
    for route, record in (("driver", want), ("executors", got)):
        large = [(row, c) for row, c in zip(record["bounds"], _clipped(record, table),
                                            strict=True)
                 if row["column"] == "x" and int(row["group"][1:]) < 20]
        assert len(large) == 20, route
        for row, (below, above) in large:
            assert below <= 30 and above <= 30, (route, row, below, above)


def test_a_task_settles_the_workers_heap_first():
    """Each phase's task freezes the worker's heap before its body runs
    (``executor_draws._settled``): the objects alive before the task are out of reach of
    the full ``gc.collect()`` pyspark's daemon runs after every task of a reused worker,
    which otherwise scans them all once a task (0.18 CPU-s a one-block task measured,
    docs/results.md §5.3c); and the collector is paused while the task's body runs
    (restored after); the body's rows pass through unchanged."""
    import gc

    held = [[i] for i in range(3)]  # lists: tracked by the collector
    seen: list[bool] = []
    paused: list[bool] = []

    def body(batches):
        seen.append(any(o is held[0] for o in gc.get_objects()))
        for b in batches:
            paused.append(not gc.isenabled())
            yield b * 2

    assert gc.isenabled()
    try:
        assert any(o is held[0] for o in gc.get_objects())  # tracked before the task
        assert list(executor_draws._settled(iter([1, 2]), body=body)) == [2, 4]
        assert seen == [False]  # frozen: the daemon's collect would not scan it
        assert gc.get_freeze_count() >= len(held)
        assert paused == [True, True]  # the collector paused through the task's blocks
        assert gc.isenabled()  # and restored after
    finally:
        gc.unfreeze()
        gc.enable()


def _small_groups_blocks(groups: int = 120, starts: tuple[int, ...] = (0, 50)):
    """A describe run's Blocks (two columns, the describe kernel alone) and its merged
    blocks: a few rows a group, some groups without rows — every cell pooled."""
    from dprect.core.statistic import SEARCH_GRID
    from dprect.engines.spark import statistics as kernel

    gen = np.random.default_rng(8)
    g = gen.integers(0, groups, 4 * groups)
    g = g[g % 9 != 4]
    batch = pa.RecordBatch.from_pydict({"g": g, "x": gen.normal(50.0, 10.0, len(g)),
                                        "y": -gen.lognormal(2.0, 1.0, len(g))})
    spec = QUERY.spec([SEARCH_GRID, SEARCH_GRID])
    kern, layout = kernel.virtual_columns(spec)
    out = pa.Table.from_batches(list(kernel.partial_bins(
        iter([batch]), columns=["x", "y"], group_column="g", group_kind="numeric",
        group_values=[float(i) for i in range(groups)], groups=groups,
        ranges=len(starts), spec=kern, layout=layout,
        limits=kernel.block_limits(kern, groups, list(starts)))))
    parts = out.column(kernel.PART).to_pylist()
    merged = pa.concat_tables([kernel.merge_blobs(out.filter(pa.array([p == r for p in parts])))
                               for r in sorted(set(parts))])
    return executor_draws.Blocks(kern, spec, groups, list(starts), 2), merged


@pytest.mark.parametrize(("statistics", "arrays"), [
    (("count", "sum", "mean"), True), (("sum",), True), (("count",), False)])
def test_phase_two_decodes_a_block_once(monkeypatch, statistics, arrays):
    """Phase 2 decodes each block once: a plan the column arrays cannot draw (count only:
    no sum noise) is told before the decode (``pooled_block``), so its block is decoded
    for ``finish_small`` only — not first as column arrays, then again; the describe
    preset's and a sum's all-pooled blocks are decoded as column arrays only.
    In-process."""
    import pickle

    from dprect.core import random_jit as jit
    from dprect.core import randomness
    from dprect.core.aggregates import plan_describe
    from dprect.engines.spark.executor_draws import DRAWS, RESULT, query_first, query_second
    from dprect.engines.spark.statistics import BLOB

    monkeypatch.setattr(randomness, "_KERNELS", jit)  # compiled from the first draw
    blocks, merged = _small_groups_blocks()
    plan = plan_describe(1.0, 2, statistics=statistics)
    blob = pickle.dumps(plan)
    decodes: list[str] = []
    for name in ("to_column_arrays", "to_cells"):
        real = getattr(executor_draws, name)
        monkeypatch.setattr(executor_draws, name,
                            lambda *a, _n=name, _f=real, **k: decodes.append(_n) or _f(*a, **k))
    anchors = [(48.0, True), (-7.25, True)]
    for row in range(merged.num_rows):
        batch = merged.slice(row, 1).to_batches()[0]
        (first,) = query_first(iter([batch]), blob, blocks, 0, carry=True)
        draws = pickle.loads(first.column(DRAWS)[0].as_py())
        assert all(c is None for cells in draws.cells for c in cells)  # every cell pooled
        # a streamed run's phase 1 hands the block's statistics on as they came
        # (executor_draws.CARRIED): phase 2 reads its output alone
        assert first.column(BLOB).equals(batch.column(BLOB))
        two = first
        decodes.clear()
        (out,) = query_second(iter([two]), blob, anchors, blocks, 0)
        assert decodes == (["to_column_arrays"] if arrays else ["to_cells"])
        done = pickle.loads(out.column(RESULT)[0].as_py())
        assert len(done) == blocks.size(row)


def _scanned_rows(df) -> list[int]:
    """``df`` run, and the rows each of its plan's cache scans (InMemoryTableScan) read."""
    df.collect()
    found: list[int] = []

    def walk(node) -> None:
        name = node.nodeName()
        if name == "InMemoryTableScan":
            found.append(int(node.metrics().apply("numOutputRows").value()))
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))
        if name.startswith("AdaptiveSparkPlan"):
            walk(node.executedPlan())
        elif "QueryStage" in name:
            walk(node.plan())

    walk(df._jdf.queryExecution().executedPlan())
    return found


def test_a_wave_reads_its_own_blocks_only(spark):
    """The merge puts each block in its partition by block range
    (:class:`~dprect.engines.spark.block_ranges.BlockRanges`: runs of consecutive blocks,
    never across a wave), so a wave (``executor_draws._wave``) over the kept blocks skips
    the other waves' cached batches — it scans its own blocks' rows, where the same
    ``where`` on blocks kept by a hash of the block (the merge's exchange before) scans
    every row, once a wave (docs/results.md §5.3c) — and cuts them one a partition by
    their place in the wave, with no sampling job (no range partitioning in its plan).
    The same rows."""
    from pyspark.sql import functions as F  # noqa: N812

    from dprect.engines.spark.block_ranges import BlockRanges
    from dprect.engines.spark.statistics import PART, RANGE

    blocks, step = 100, 16
    ranges = BlockRanges.of(blocks, step, 2)
    assert (ranges.waves, ranges.per_wave, ranges.partitions) == (7, 2, 14)
    rows = spark.createDataFrame([(b, bytes(100)) for b in range(blocks)],
                                 f"{PART} int, _b binary")
    by_range = rows.withColumn(RANGE, ranges.column(PART)) \
        .repartitionById(ranges.partitions, RANGE).drop(RANGE).persist()
    by_hash = rows.repartition(7, PART).persist()
    try:
        placed = by_range.select(PART, F.spark_partition_id().alias("p")).collect()
        assert sorted(r[0] for r in placed) == list(range(blocks))
        assert all(r[1] == ranges.partition(r[0]) for r in placed)
        waves: dict[int, set[int]] = {}
        for r in placed:
            waves.setdefault(r[1], set()).add(r[0] // step)
        assert all(len(w) == 1 for w in waves.values())  # a partition, one wave
        wave = executor_draws._wave(by_range, 2 * step, 3 * step)
        assert _scanned_rows(wave) == [step]
        assert _scanned_rows(executor_draws._wave(by_hash, 2 * step, 3 * step)) == [blocks]
        got = wave.select(PART, F.spark_partition_id().alias("p")).collect()
        assert sorted((r[1], r[0]) for r in got) == [(i, 2 * step + i) for i in range(step)]
        plan = wave._jdf.queryExecution().executedPlan().toString().lower()
        assert "rangepartitioning" not in plan and "shufflepartitionidpassthrough" in plan
        last = executor_draws._wave(by_range, 6 * step, blocks)  # a short last wave
        assert sorted(r[0] for r in last.collect()) == list(range(6 * step, blocks))
        assert last.rdd.getNumPartitions() == blocks - 6 * step
    finally:
        for df in (by_range, by_hash):
            df.unpersist()
