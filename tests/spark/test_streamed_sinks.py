"""A grouped-aggregate run drawn in the executors streams its released blocks to the
sinks (issue #42, :mod:`dprect.release.row_spool`): with many small blocks, a seeded run
writes the same JSON (byte for byte), CSV (byte for byte) and Parquet (the same table) as
the same run drawn on the driver and gathered; its record's rows are spooled, and the first
block reaches the spool before the driver has fetched the last; a failure after the first
block leaves no output file and no release in the ledger (the run stays charged, as any
failure after the reservation: docs/privacy.md "Spend before release")."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dprect.app import aggregate_flow
from dprect.app.aggregate_flow import aggregate_settings, run_aggregate_flow
from dprect.app.spine import Reporter
from dprect.engines.spark import executor_draws
from dprect.engines.spark.grouped_route import SparkGroupedRoute
from dprect.release.guarded import without_request
from dprect.release.row_spool import RowSpool

COLUMNS = ["x", "y"]
LISTED = [f"g{i}" for i in range(700)]  # 1,400 cells: > COMPACT_ITEMS rows, streamed


def _table() -> pa.Table:
    gen = np.random.default_rng(3)
    sizes = [int(gen.integers(0, 40)) for _ in LISTED]
    g = [name for name, n in zip(LISTED, sizes, strict=True) for _ in range(n)]
    n = len(g)
    return pa.table({"x": gen.normal(5.0, 2.0, n), "y": gen.lognormal(1.0, 1.0, n),
                     "g": pa.array(g, pa.string())})


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("streamed") / "t.parquet"
    pq.write_table(_table(), path, row_group_size=4000)
    return path


def _run(spark: Any, parquet: Path, where: Path, statistics: str, *, executors: bool,
         monkeypatch: pytest.MonkeyPatch, ledger: bool = False,
         wave_blocks: int | None = 8, factor: int = 1) -> Any:
    """A seeded run of ``statistics`` writing the JSON, a CSV and a Parquet table into
    ``where``; in the executors in blocks of 20 groups (40 cells), the last phase drawn
    and streamed in waves of ``wave_blocks`` blocks (None: the route's own), or on the
    driver."""
    monkeypatch.setattr(executor_draws, "EXECUTOR_CELLS", 1 if executors else 10 ** 12)
    monkeypatch.setattr(executor_draws, "CELLS_PER_BLOCK", 40)
    # describe's blocks too (``factor``: describe's own, QUERY_BLOCK_FACTOR times as large)
    monkeypatch.setattr(executor_draws, "QUERY_BLOCK_FACTOR", factor)
    if wave_blocks is not None:
        monkeypatch.setattr(executor_draws, "WAVE_BLOCKS", wave_blocks)
    where.mkdir(exist_ok=True)
    values: dict[str, Any] = {
        "input": str(parquet), "columns": COLUMNS, "group_by": "g", "groups": LISTED,
        "statistics": statistics, "epsilon": 2.0, "seed": 17,
        "output": str(where / "r.json"), "table": str(where / "t.csv")}
    if ledger:
        from dprect.release.ledger import Ledger

        Ledger(str(where / "ledger")).init()
        values.update(ledger=str(where / "ledger"), dataset="d", run_id="run-1")
    settings = aggregate_settings(values)
    parquet_sink = aggregate_flow.table_sink("--table", str(where / "t.parquet"),
                                             settings.mechanisms,
                                             getattr(settings.plan, "statistics", ()))
    settings = type(settings)(**{**settings.__dict__,
                                 "sinks": [*settings.sinks, parquet_sink]})
    quiet = Reporter(say=lambda _: None, show=lambda _: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_aggregate_flow(settings, SparkGroupedRoute(lambda: (spark, False)), quiet)


@pytest.mark.parametrize("statistics", ["count,mean,variance", "p25,median"])
def test_a_streamed_run_writes_the_gathered_runs_outputs(spark, parquet, tmp_path,
                                                         monkeypatch, statistics):
    streamed = _run(spark, parquet, tmp_path / "s", statistics, executors=True,
                    monkeypatch=monkeypatch)
    gathered = _run(spark, parquet, tmp_path / "g", statistics, executors=False,
                    monkeypatch=monkeypatch)
    assert isinstance(streamed.result["results"], RowSpool)  # the rows on disk
    assert streamed.result["results"].block_count >= 35  # 700 groups, <= 20 a block
    assert isinstance(gathered.result["results"], list)
    for name in ("r.json", "t.csv"):
        assert (tmp_path / "s" / name).read_bytes() == (tmp_path / "g" / name).read_bytes()
    assert pq.read_table(tmp_path / "s" / "t.parquet").equals(
        pq.read_table(tmp_path / "g" / "t.parquet"))
    assert len(json.loads((tmp_path / "s" / "r.json").read_text())["results"]) == 1400


def _logical_nodes(df: Any) -> list[str]:
    """The node names of ``df``'s logical plan with the kept DataFrames in it as their
    cache (``InMemoryRelation``; what made a kept one is not walked)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        found.append(str(node.nodeName()))
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().withCachedData())
    return found


def test_describes_larger_blocks_write_the_same_outputs(spark, parquet, tmp_path, monkeypatch):
    """Describe alone cuts its blocks QUERY_BLOCK_FACTOR times as large (here 80 groups,
    9 blocks, in waves of 2, each read where it sits: ``executor_draws._wave``): the same
    outputs, byte for byte, as the gathered run — each group draws from its own stream
    wherever its block's edges fall. The blocks' seeds and names travel in the merge's
    own exchange (``executor_draws.listed_blocks``, by block range), so phase 1 reads the
    kept merged blocks with no join, and phase 2 reads phase 1's kept output alone
    (``executor_draws.CARRIED``: the blocks' statistics and names handed on by phase 1):
    no join of the kept merged blocks, each join a shuffle of every block's statistics,
    and no copy of them staged for the waves (docs/results.md §5.3c, s34-waves, s35)."""
    waves: list[tuple[int, int]] = []
    plans: list[list[str]] = []
    wave = executor_draws._wave
    monkeypatch.setattr(executor_draws, "_wave", lambda source, first, end: (
        waves.append((first, end)), plans.append(_logical_nodes(source)),
        wave(source, first, end))[2])
    firsts: list[list[str]] = []
    blocks = executor_draws.ExecutorDraws._blocks
    monkeypatch.setattr(executor_draws.ExecutorDraws, "_blocks", lambda self, *a: (
        lambda df: (firsts.append(_logical_nodes(df)), df)[1])(blocks(self, *a)))
    large = _run(spark, parquet, tmp_path / "l", "count,mean", executors=True,
                 monkeypatch=monkeypatch, factor=4)
    _run(spark, parquet, tmp_path / "g", "count,mean", executors=False,
         monkeypatch=monkeypatch)
    assert large.result["results"].block_count == 9  # 700 groups, <= 80 a block
    # waves of 2 blocks (8 of 40 cells' results): five
    assert waves == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 9)]
    assert len(firsts) == 1 and len(plans) == 5
    for nodes in [*firsts, *plans]:
        assert "InMemoryRelation" in nodes  # the kept merged blocks; phase 1's output
        assert not [n for n in nodes if "Join" in n]  # read alone: no join
    for name in ("r.json", "t.csv"):
        assert (tmp_path / "l" / name).read_bytes() == (tmp_path / "g" / name).read_bytes()
    assert pq.read_table(tmp_path / "l" / "t.parquet").equals(
        pq.read_table(tmp_path / "g" / "t.parquet"))


def test_the_fetch_of_a_session_without_a_jvm_handle_writes_the_same_outputs(
        spark, parquet, tmp_path, monkeypatch):
    """A Spark Connect session has no JVM handle to read a job's results as they come
    (executor_draws._stream): its last phase is drawn whole, kept, and fetched a block at a
    time (``toLocalIterator``) — the same outputs, byte for byte, as the waves'."""
    waves = _run(spark, parquet, tmp_path / "w", "count,mean", executors=True,
                 monkeypatch=monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(executor_draws, "is_connect", lambda _: True)
        m.setattr(executor_draws, "_arrow_batches", None)  # never read
        fetched = _run(spark, parquet, tmp_path / "f", "count,mean", executors=True,
                       monkeypatch=monkeypatch)
    assert isinstance(fetched.result["results"], RowSpool)
    assert waves.result["results"].block_count == fetched.result["results"].block_count
    for name in ("r.json", "t.csv"):
        assert (tmp_path / "w" / name).read_bytes() == (tmp_path / "f" / name).read_bytes()


def test_the_driver_makes_no_row_of_a_block_packed_in_the_executors(spark, parquet, tmp_path,
                                                                    monkeypatch):
    """Each block is packed in the task that drew it (its record text, its table batch
    and, under a ledger, its text's DEFLATE piece: executor_draws.Packing): on the driver
    nothing packs a block, encodes a row or deflates a block's text — every such call
    fails here (the executors' Python workers import their own, unpatched modules) — and
    the outputs are the gathered run's, the stored copy the JSON output's bytes (then the
    run's public request, which a replay compares)."""
    import gzip

    import dprect.release.ledger.stored as stored
    from dprect.release import block_pack, record_text

    gathered = tmp_path / "g"
    _run(spark, parquet, gathered, "count,mean", executors=False, monkeypatch=monkeypatch)
    fail = lambda *_: pytest.fail("made on the driver")  # noqa: E731
    monkeypatch.setattr(block_pack.BlockPacker, "__call__", fail)
    monkeypatch.setattr(record_text, "_item", fail)
    compress = stored.zlib.compressobj

    def driver_side(*args: Any) -> Any:  # the stored copy's own compressor: the text
        real = compress(*args)  # around the blocks only, never a row

        class Counted:
            def compress(self, data: bytes) -> bytes:
                assert b'"column": ' not in data
                return real.compress(data)

            def flush(self, *mode: int) -> bytes:
                return real.flush(*mode)

        return Counted()

    monkeypatch.setattr(stored.zlib, "compressobj", driver_side)
    streamed = _run(spark, parquet, tmp_path / "s", "count,mean", executors=True,
                    monkeypatch=monkeypatch, ledger=True)
    assert isinstance(streamed.result["results"], RowSpool)
    for name in ("r.json", "t.csv"):
        assert (tmp_path / "s" / name).read_bytes() == (gathered / name).read_bytes()
    assert pq.read_table(tmp_path / "s" / "t.parquet").equals(
        pq.read_table(gathered / "t.parquet"))
    (path,) = (tmp_path / "s" / "ledger").glob("_dprect_results/*.json.gz")
    written = (tmp_path / "s" / "r.json").read_bytes()
    stored_copy = gzip.decompress(path.read_bytes())  # the output's bytes, then the request
    assert written.endswith(b"\n}\n") and stored_copy.startswith(written[:-3] + b",\n")
    assert without_request(json.loads(stored_copy)) == json.loads(written)


def _spy_batches(monkeypatch: pytest.MonkeyPatch, seen: list[int]) -> None:
    """Record each Arrow batch's rows as it reaches the driver from the streamed phase
    (executor_draws._arrow_batches: a task's result as the task ends)."""
    arrow_batches = executor_draws._arrow_batches

    def counting(df: Any) -> Any:
        for batch in arrow_batches(df):
            seen.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(executor_draws, "_arrow_batches", counting)


def test_the_first_block_reaches_the_spool_before_the_last_is_fetched(spark, parquet,
                                                                      tmp_path, monkeypatch):
    """A spy on the blocks the driver receives from Spark and on the spool: when the
    first block is spooled, at most the first wave of blocks (4 of 35) has reached the
    driver — a route that gathered every block first fails here."""
    fetched: list[int] = []
    at_first: list[int] = []
    _spy_batches(monkeypatch, fetched)
    append = RowSpool.append

    def spy(self: RowSpool, *args: Any) -> None:
        if not at_first:
            at_first.append(len(fetched))
        append(self, *args)

    monkeypatch.setattr(RowSpool, "append", spy)
    _run(spark, parquet, tmp_path / "s", "count,mean", executors=True,
         monkeypatch=monkeypatch, wave_blocks=4)
    assert sum(fetched) == 35
    assert at_first and 1 <= at_first[0] <= 4


def test_each_task_result_is_one_block(spark, parquet, tmp_path, monkeypatch):
    """The route's own waves: every task result the driver receives (an Arrow batch, as
    its task ends) holds one block, so a task result is one block's cells whatever the
    number of groups — under Spark's direct result size at CELLS_PER_BLOCK, where a range
    of 16 blocks went through the block manager and was lost there by a 1 GiB local
    session (executor_draws.WAVE_BLOCKS; docs/results.md §5.3c)."""
    seen: list[int] = []
    _spy_batches(monkeypatch, seen)
    _run(spark, parquet, tmp_path / "s", "count,mean", executors=True,
         monkeypatch=monkeypatch, wave_blocks=None)
    assert seen == [1] * 35  # 700 groups in blocks of 20: one batch a block


def test_blocks_arriving_out_of_order_are_handed_on_in_order(monkeypatch):
    """The driver's reorder (executor_draws._arriving): blocks reach it in the order their
    tasks end; each is handed on once it and every block before it have arrived, and a
    wave that ends with a block missing fails in one line."""
    import pickle

    from dprect.core.errors import InputDataError

    order = [3, 1, 2, 5, 4, 6]

    def batches(_: Any) -> Any:
        for b in order:
            yield pa.RecordBatch.from_arrays(
                [pa.array([b], pa.int32()), pa.array([pickle.dumps(f"block {b}")])],
                names=[executor_draws.PART, executor_draws.RESULT])

    class Frame:
        def select(self, *_: str) -> Frame:
            return self

    monkeypatch.setattr(executor_draws, "_arrow_batches", batches)
    got = list(executor_draws._arriving(Frame(), executor_draws.RESULT, 1, 7))
    assert got == [(b, f"block {b}") for b in range(1, 7)]
    order.remove(4)
    with pytest.raises(InputDataError, match="3 of 6 blocks"):
        list(executor_draws._arriving(Frame(), executor_draws.RESULT, 1, 7))


def test_a_failure_after_the_first_block_writes_nothing(spark, parquet, tmp_path,
                                                        monkeypatch):
    from dprect.release.ledger import Ledger

    made = RowSpool.append
    calls: list[int] = []

    def failing(self: RowSpool, block: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise MemoryError  # a failure after the first block was spooled
        return made(self, block)

    monkeypatch.setattr(RowSpool, "append", failing)
    with pytest.raises(MemoryError):
        _run(spark, parquet, tmp_path / "s", "count,mean", executors=True,
             monkeypatch=monkeypatch, ledger=True)
    assert len(calls) == 2
    written = sorted(p.name for p in (tmp_path / "s").iterdir())
    assert written == ["ledger"]  # no output, no staged temporary
    assert not list((tmp_path / "s" / "ledger").glob("_dprect_results/*.json.gz"))
    run = Ledger(str(tmp_path / "s" / "ledger")).run("d", "run-1")
    assert run is not None and run.status == "failed" and run.result is None
