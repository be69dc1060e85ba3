"""How far the Spark executor route's draws have got (issue #42): blocks done of all, for
the heartbeat (:mod:`dprect.app.heartbeat`), when the blocks are drawn in the executors
(:mod:`dprect.engines.spark.executor_draws`) and not in this process.

Each phase of a mechanism in the executors is one ``mapInArrow`` over the run's blocks
(describe's two: its first draws and its small groups' cells; the quantiles' and the
coverage bounds' one), and each block's task yields ONE row for it, whatever the data
hold. :func:`counted` wraps a phase's body so that every row it yields adds one to a
Spark accumulator of that phase, created here on the driver; the accumulator's updates
reach the driver as each task ends, and the heartbeat's thread reads them
(:func:`dprect.engines.progress.polled`): ``mechanism D/T blocks``, with

    T = phases × blocks,   D = Σ_phases min(blocks, the phase's rows yielded),

the same line as the numpy route's (:data:`dprect.engines.driver_pool.BLOCKS`, printed by
:func:`dprect.engines.progress.current`: one formatter). Both numbers are public: the
blocks are cut from the number of listed groups, the columns and the session's cores
(:func:`~dprect.engines.spark.executor_draws.block_starts`), a block counts once its task
has drawn it, whatever its rows; a phase's count is capped at the blocks (a task run again
— a lost executor, speculation — adds its rows again), so the count never passes the total.

A Spark Connect session has no accumulators (no ``sparkContext`` in the client): its runs
draw the same, with no block count (the heartbeat names the stage only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from pyspark.sql import SparkSession

from dprect.core.statistic import COVERAGE, QUANTILES, QUERY
from dprect.engines.driver_pool import BLOCKS
from dprect.engines.progress import polled
from dprect.engines.spark.remote import is_connect

#: the phases (``mapInArrow`` passes over every block) of each mechanism in the executors
PHASES = {QUERY.name: 2, QUANTILES.name: 1, COVERAGE.name: 1}


class BlockCount:
    """The blocks done of one mechanism's draws: one accumulator per phase started
    (:meth:`counted`), each capped at ``blocks``."""

    def __init__(self, session: SparkSession, blocks: int) -> None:
        self.context = None if is_connect(session) else session.sparkContext
        self.blocks = blocks
        self.phases: list[Any] = []

    def done(self) -> int:
        return sum(min(self.blocks, int(phase.value)) for phase in self.phases)

    def counted(self, body: Callable[[Iterator[Any]], Iterator[Any]]
                ) -> Callable[[Iterator[Any]], Iterator[Any]]:
        """``body`` counting the rows (blocks) it yields in a new phase's accumulator."""
        if self.context is None:
            return body
        phase = self.context.accumulator(0)
        self.phases.append(phase)
        return partial(_counting, body=body, phase=phase)


def _counting(batches: Iterator[Any], body: Callable[[Iterator[Any]], Iterator[Any]],
              phase: Any) -> Iterator[Any]:
    """In the executors: ``body``'s batches, each of its rows (a block drawn) counted."""
    for out in body(batches):
        phase.add(out.num_rows)
        yield out


#: the count of the mechanism drawing now in the executors (one at a time in a process)
_NOW: list[BlockCount] = []


@contextmanager
def drawing_blocks(session: SparkSession, blocks: int, mechanism: str) -> Iterator[None]:
    """``mechanism``'s draws over ``blocks`` blocks in the executors: the step the
    heartbeat shows (``mechanism D/T blocks``, module notes) while they run; a Spark
    Connect session shows none."""
    count = BlockCount(session, blocks)
    if count.context is None:
        yield
        return
    _NOW.append(count)
    try:
        with polled(PHASES[mechanism] * blocks, *BLOCKS, count.done):
            yield
    finally:
        _NOW.remove(count)


def counted(body: Callable[[Iterator[Any]], Iterator[Any]]
            ) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A phase's body (for ``mapInArrow``), its blocks counted in the draws running now
    (:func:`drawing_blocks`); unchanged outside them."""
    return _NOW[-1].counted(body) if _NOW else body


__all__ = ["PHASES", "BlockCount", "counted", "drawing_blocks"]
