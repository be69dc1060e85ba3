"""The Spark executor route's block progress (issue #42,
:mod:`dprect.engines.spark.block_progress`): a seeded describe of many public groups drawn
in the executors, its heartbeat beating after each phase's collect or, for the streamed
last phase, after its blocks are fetched in order (no timing involved), shows on stderr
``mechanism D/2B blocks`` — the blocks counted by the phases' accumulators as their tasks
end, over the public total (2 phases × B blocks, B from the listed groups, the columns and
the session's cores) — in the numpy route's line format."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dprect.app.heartbeat import Heartbeat

GROUPS = 5000  # x 1 column >= EXECUTOR_CELLS: the executor route


def test_a_seeded_executor_run_prints_its_blocks_done_of_the_total(
        spark, tmp_path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from dprect.app import spine
    from dprect.app.cli import main
    from dprect.engines import progress
    from dprect.engines.spark import executor_draws
    from dprect.engines.spark.remote import default_parallelism

    lines: list[str] = []
    made: list[Heartbeat] = []

    class AtEveryCollect(Heartbeat):
        def __init__(self, emit, every):  # type: ignore[no-untyped-def]
            super().__init__(lambda line: (emit(line), lines.append(line)), every,
                             wait=lambda seconds: True)
            made.append(self)

    collect = executor_draws._collect
    phases: list[str | None] = []

    def collected(*args: Any) -> Any:
        table = collect(*args)
        phases.append(progress.current())
        made[-1].beat()
        return table

    arriving = executor_draws._arriving

    def fetched(*args: Any) -> Any:  # a streamed phase: a wave's blocks, as they end
        yield from arriving(*args)
        phases.append(progress.current())
        made[-1].beat()

    monkeypatch.setattr(spine, "Heartbeat", AtEveryCollect)
    monkeypatch.setattr(executor_draws, "_collect", collected)
    monkeypatch.setattr(executor_draws, "_arriving", fetched)
    gen = np.random.default_rng(9)
    group = gen.integers(0, GROUPS, 4 * GROUPS)
    pq.write_table(pa.table({"x": gen.normal(50, 10, len(group)),
                             "g": pa.array([f"g{i}" for i in group])}), tmp_path / "t.parquet")
    (tmp_path / "groups.txt").write_text("".join(f"g{i}\n" for i in range(GROUPS)))
    assert main(["describe", "--engine", "spark", "--input", str(tmp_path / "t.parquet"),
                 "--columns", "x", "--epsilon", "1", "--group-by", "g", "--groups-file",
                 str(tmp_path / "groups.txt"), "--seed", "1",
                 "--output", str(tmp_path / "out.json")]) == 0
    err = capsys.readouterr().err
    blocks = len(executor_draws.block_starts(GROUPS, 1, default_parallelism(spark)))
    assert blocks > 1
    # phase 1 collected: its blocks done of both phases'; phase 2: all
    assert phases == [f"mechanism {blocks}/{2 * blocks} blocks",
                      f"mechanism {2 * blocks}/{2 * blocks} blocks"]
    shown = [ln for ln in lines if "blocks" in ln]
    assert [ln.rsplit(", ", 1)[1] for ln in shown] == phases
    for line in shown:
        assert line.startswith("still running (") and f"dprect: {line}" in err
    assert progress.current() is None  # the step ended with the draws
