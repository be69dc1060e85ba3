"""Worker processes for the driver's share of a describe run.

A describe run's mechanism (:func:`dprect.core.aggregates.describe_blocks`) draws every
public group from its own stream, so blocks of groups can be drawn in any order and in
any process with the same result — for a seed, bit for bit. On a run with many cells the
driver's work (every centre, every cell's statistics given its centre, two outward
searches and two noises per cell) is seconds to minutes of one Python thread; this module
spreads it over the driver's processors (on a local master, the processors the pass used
a moment before).

:func:`block_mapper` gives the ``map`` to run the blocks with and how many blocks to cut:

* builtin ``map`` and one block when the run is small (fewer than
  :data:`PARALLEL_CELLS` cells: starting the workers, ~0.5 s, would cost more than it
  saves),
  or when the driver has one processor;
* otherwise P worker processes (P = the processors this process may run on, at most
  :data:`MAX_PROCESSES`), each a fresh ``python -c`` of
  :mod:`dprect.engines.driver_worker` on the driver's own ``sys.path`` — never a fork of
  the driver, which holds a JVM gateway's threads on Spark, and never an import of the
  driver's ``__main__`` (a user's unguarded script is not run again) — started when the
  run starts (they import the core while a Spark pass reads the rows) and fed
  :data:`BLOCKS_PER_PROCESS` blocks per worker, one at a time, so that uneven blocks
  even out. Their answers are yielded in block order as they come in, lazily as builtin
  ``map``'s: a streamed run hands each released block on (to the record's spool,
  :mod:`dprect.release.row_spool`) while the workers draw the next, and never holds
  every block's cells at once (issue #42).

Everything sent to a worker is a public function of the statistics the core would read
on the driver (a block, its stream seeds, the plan); each worker draws from OS entropy or
from its group's seed, and only the released cells come back. If a worker cannot start
or is lost, the blocks are drawn again on the driver, with the same result for a seed (a
seeded run is reproducible; an unseeded one draws fresh, and nothing of a broken attempt
was released). The choice depends only on the public numbers of groups and columns and
on the machine, never on the data.

:mod:`dprect.engines.progress` tells the run's heartbeat (:mod:`dprect.app.heartbeat`) how
many blocks are done of how many (public numbers); a run that is interrupted or fails kills
its workers at once (no answer is wanted).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

from dprect.core.aggregates import Mapper
from dprect.core.randomness import note_draw
from dprect.engines.driver_worker import BOOT, warm
from dprect.engines.progress import STEP

#: what a worker imports as soon as it starts (the describe mechanism and its core)
WARM_MODULE = "dprect.core.aggregates"
#: runs with fewer cells (groups × columns) than this draw on the driver's own thread
PARALLEL_CELLS = 4096
#: at most this many worker processes
MAX_PROCESSES = 16
#: blocks of groups cut per worker process
BLOCKS_PER_PROCESS = 4
#: how the heartbeat names the blocks done (:mod:`dprect.engines.progress`)
BLOCKS = ("mechanism", "blocks")


def _counted(mapper: Mapper) -> Mapper:
    """``mapper`` (builtin ``map``) counting each result as a block done
    (:func:`dprect.engines.progress.current`)."""

    def run(fn: Callable[..., Any], *iterables: Iterable[Any]) -> Iterator[Any]:
        for value in mapper(fn, *iterables):
            STEP.one()
            yield value

    return run


def driver_processes() -> int:
    """P: the processors this process may run on, capped at :data:`MAX_PROCESSES`."""
    try:
        available = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        available = os.cpu_count() or 1
    return max(1, min(available, MAX_PROCESSES))


class WorkerLostError(Exception):
    """A worker process ended or answered garbage (not an error of the task itself)."""


class _Worker:
    """One ``python -c BOOT`` process (:mod:`dprect.engines.driver_worker`)."""

    def __init__(self) -> None:
        # a process group of its own: a Ctrl-C at the terminal (SIGINT to the foreground
        # group) reaches the driver only, never a worker still starting its interpreter
        # (before BOOT ignores SIGINT, where it would print a traceback); the driver ends
        # its workers itself when it is interrupted
        self.proc = subprocess.Popen([sys.executable, "-c", BOOT], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, process_group=0)
        self._send(list(sys.path))
        # the imports a block needs, made while the driver does other work (a Spark pass)
        self._send((warm, (WARM_MODULE,)))
        self._warming = True

    def _send(self, obj: Any) -> None:
        stdin: IO[bytes] | None = self.proc.stdin
        if stdin is None:
            raise WorkerLostError("no pipe to the worker")
        pickle.dump(obj, stdin, protocol=pickle.HIGHEST_PROTOCOL)
        stdin.flush()

    def _answer(self) -> Any:
        if self.proc.stdout is None:
            raise WorkerLostError("no pipe from the worker")
        return pickle.load(self.proc.stdout)

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
        try:
            if self._warming:  # the imports' answer (a failure shows again in the task)
                self._warming = False
                self._answer()
            note_draw()  # the worker may draw noise for this task
            self._send((fn, args))
            answer = self._answer()
        except (OSError, EOFError, ValueError, pickle.UnpicklingError) as error:
            # ValueError: a pipe closed under the call (the pool was shut down)
            raise WorkerLostError(type(error).__name__) from error
        if not (isinstance(answer, tuple) and len(answer) == 2):
            raise WorkerLostError("the worker answered something else")
        return answer

    def close(self, *, kill: bool = False) -> None:
        """End the worker: close its pipes and wait for it (``kill``: at once — the run
        was interrupted or failed, its task's answer is not wanted)."""
        if kill:
            with suppress(OSError):
                self.proc.kill()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with suppress(OSError, ValueError):
                    pipe.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _PoolMap:
    """``map`` over P worker processes, each fed one task at a time by its own thread
    (the answers come back in order); falls back to the driver's thread if a worker
    cannot start or is lost (module notes). An exception a task raises is raised here,
    as it would be on the driver's thread."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self._workers: list[_Worker] = []

    def start(self) -> None:
        """Start the workers now (they import what a block needs meanwhile); a worker that
        cannot start is left for the first map to report (it then falls back)."""
        try:
            while len(self._workers) < self.processes:
                self._workers.append(_Worker())
        except OSError:
            self.close()

    def __call__(self, fn: Callable[..., Any], *iterables: Iterable[Any]) -> Iterator[Any]:
        """The answers in task order, each yielded as soon as it and those before it are
        in (lazily, as builtin ``map``: the workers draw on while the caller consumes a
        block — a streamed run spools it, issue #42); a task's slot is let go once its
        answer is yielded. A lost worker's blocks not yet yielded are drawn again here."""
        tasks: list[tuple[Any, ...] | None] = list(zip(*iterables, strict=True))
        done = 0
        try:
            for value in self._run(fn, tasks):
                done += 1
                yield value
        except (OSError, WorkerLostError):
            self.close()
            rest = [t for t in tasks[done:] if t is not None]
            STEP.start(len(rest), *BLOCKS)  # drawn again, here
            for task in rest:
                yield fn(*task)
                STEP.one()

    def _run(self, fn: Callable[..., Any], tasks: list[tuple[Any, ...] | None]
             ) -> Iterator[Any]:
        while len(self._workers) < min(self.processes, len(tasks)):
            self._workers.append(_Worker())
        answers: list[tuple[bool, Any] | None] = [None] * len(tasks)
        lost: list[WorkerLostError] = []
        ready = threading.Condition()
        queue = iter(range(len(tasks)))

        def feed(worker: _Worker) -> None:
            while not lost:
                with ready:
                    i = next(queue, None)
                if i is None:
                    return
                task = tasks[i]
                assert task is not None  # let go only once answered
                try:
                    answer = worker.call(fn, task)
                except WorkerLostError as error:
                    with ready:
                        lost.append(error)
                        ready.notify_all()
                    return
                with ready:
                    answers[i] = answer
                    ready.notify_all()
                STEP.one()

        threads = [threading.Thread(target=feed, args=(w,), daemon=True)
                   for w in self._workers]
        for t in threads:
            t.start()
        for i in range(len(tasks)):
            with ready:
                while answers[i] is None and not lost:
                    if not any(t.is_alive() for t in threads):
                        break  # every feeder ended without this answer
                    ready.wait(timeout=1.0)
                answer, answers[i] = answers[i], None
            if answer is None:
                raise lost[0] if lost else WorkerLostError("a task was not answered")
            ok, value = answer
            if not ok:
                raise value
            tasks[i] = None  # answered: its block is let go
            yield value

    def close(self, *, kill: bool = False) -> None:
        workers, self._workers = self._workers, []
        for w in workers:
            w.close(kill=kill)


@contextmanager
def block_mapper(groups: int, columns: int) -> Iterator[tuple[Mapper, int]]:
    """(the ``map`` to draw blocks with, the number of blocks to cut) for a run of
    ``groups`` × ``columns`` cells (module notes); the pool, if any, is shut down on
    exit (killed at once when the run is interrupted or fails)."""
    processes = driver_processes()
    # two rounds map the blocks: the draws, then the small groups' cells
    # (:func:`dprect.core.aggregates.describe_blocks`)
    if processes < 2 or groups < 2 or groups * columns < PARALLEL_CELLS:
        STEP.start(2, *BLOCKS)
        try:
            yield _counted(map), 1
        finally:
            STEP.end()
        return
    pool = _PoolMap(processes)
    # group_blocks' count, in each of the two rounds
    STEP.start(2 * min(processes * BLOCKS_PER_PROCESS, groups), *BLOCKS)
    try:
        pool.start()
        yield pool, processes * BLOCKS_PER_PROCESS
    except BaseException:  # interrupted (SIGINT) or failed: no answer is wanted
        pool.close(kill=True)
        raise
    finally:
        STEP.end()
    pool.close()


__all__ = ["BLOCKS_PER_PROCESS", "MAX_PROCESSES", "PARALLEL_CELLS", "Mapper", "WorkerLostError",
           "block_mapper", "driver_processes"]
