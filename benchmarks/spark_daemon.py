"""pyspark's worker daemon with its workers' CPU kept: the Spark benchmarks' daemon
(``spark.python.daemon.module``, set by :func:`spark_bench.open_bench`).

Why: pyspark's daemon (``pyspark/daemon.py``, ``manager``) forks one Python worker per
connection and sets ``SIGCHLD`` to ``SIG_IGN``, so the kernel reaps an ending worker
itself and adds its CPU to nobody: it is not in the daemon's ``cutime``/``cstime``
(``/proc/<pid>/stat`` fields 16–17 count only children a ``wait`` reaped). A CPU figure
summed over the processes alive under the JVM before and after a run
(:func:`spark_bench.tree_cpu`) then loses the whole CPU of every worker that ends during
the run — without worker reuse every task's, with reuse those Spark ends when idle or
killed — and can come out negative (a worker counted before the run, gone after it).

This module runs the same ``manager`` with one change: where it would ignore
``SIGCHLD`` it installs a handler that reaps every ended child with ``waitpid``, so each
worker's user and system CPU lands in the daemon's ``cutime``/``cstime`` and
``tree_cpu`` of the JVM's subtree only grows (before = live workers' CPU + reaped ones',
after ≥ before; a worker's CPU moves from its own entry to its parent's, never lost).
Nothing else changes: the forked worker still sets ``SIGCHLD`` back to ``SIG_DFL``
before its first task (``pyspark.daemon.worker``), Python retries the daemon's ``poll``
and ``accept`` after the handler (PEP 475), and the handler reads no data.

``DPRECT_BENCH_WORKER_LOG`` (a file path, optional; spark_bench.py's ``--worker-log``):
after each task a worker appends one JSON line there — its pid, its task count, its
sampler calls its blocks announced so far (``dprect.core.randomness._EXPECTED``: the
compiled samplers load from ``JIT_AFTER``),
whether it has loaded the compiled samplers (``randomness.kernels``), how many compiled
kernel calls its sources made (``RandomSource._run``, counted by a wrapper this module
puts on it in the worker) and whether numba is imported — so a benchmark can tell
whether the executors' draws ran compiled — and the task's CPU seconds in the worker
(``cpu_s``) and its end (``end_s``, epoch seconds), and the CPU seconds and number of
the full collections (``gc_s``, ``gc_calls``: so far, the last one after the task
before) pyspark's daemon runs between a reused worker's tasks; ``DPRECT_BENCH_WORKER_PROFILE`` (a
folder, with the log) runs every task under cProfile and dumps each worker's summed stats
there (spark_bench.py's ``--worker-profile``). Only
counts of this benchmark's own work, written to the benchmark's file; nothing is logged
without the variable.
"""

from __future__ import annotations

import os
import signal
from types import FrameType, ModuleType
from typing import Any


def reap_children(signal_number: int = 0, frame: FrameType | None = None) -> None:
    """Wait for every child that has ended (never blocks): the kernel adds each one's CPU
    to this process's children times."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


class _Signals:
    """``signal`` as pyspark's daemon sees it: ``signal.signal(SIGCHLD, SIG_IGN)`` becomes
    :func:`reap_children`; every other name and call is the real module's."""

    def __init__(self, real: ModuleType) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def signal(self, number: int, handler: Any) -> Any:
        if number == self._real.SIGCHLD and handler == self._real.SIG_IGN:
            handler = reap_children
        return self._real.signal(number, handler)


_COMPILED_CALLS = [0]
#: this worker's full collections between its tasks (pyspark's daemon runs
#: ``gc.collect()`` after every task of a reused worker): [CPU seconds, calls]
_COLLECTED = [0.0, 0]


class _TimedGC:
    """``gc`` as pyspark's daemon sees it: ``collect`` timed into :data:`_COLLECTED`
    (CPU seconds of this process); every other name is the real module's."""

    def __getattr__(self, name: str) -> Any:
        import gc

        return getattr(gc, name)

    def collect(self, *args: Any) -> int:
        import gc
        import time

        started = time.process_time()
        found = gc.collect(*args)
        _COLLECTED[0] += time.process_time() - started
        _COLLECTED[1] += 1
        return found


def count_compiled_calls() -> None:
    """Wrap ``RandomSource._run`` (one compiled kernel on a source's state) in this
    process so :data:`_COMPILED_CALLS` counts its calls (once a process)."""
    from dprect.core.randomness import RandomSource

    real = RandomSource._run
    if getattr(real, "_counted", False):
        return

    def run(self: Any, kernel: Any, *args: Any) -> Any:
        _COMPILED_CALLS[0] += 1
        return real(self, kernel, *args)

    run._counted = True  # type: ignore[attr-defined]
    RandomSource._run = run  # type: ignore[method-assign]


def worker_state(tasks: int) -> dict[str, Any]:
    """This worker's state after ``tasks`` tasks: the compiled samplers' (see above)."""
    import sys

    randomness = sys.modules.get("dprect.core.randomness")
    loaded = randomness is not None and getattr(randomness, "_KERNELS", ()) not in ((), None)
    return {"pid": os.getpid(), "tasks": tasks,
            "asked": None if randomness is None else int(randomness._EXPECTED),
            "compiled": loaded, "compiled_calls": _COMPILED_CALLS[0],
            "numba": "numba" in sys.modules,
            "gc_s": round(_COLLECTED[0], 4), "gc_calls": _COLLECTED[1]}


def _logged(work: Any, path: str, profile: str | None = None) -> Any:
    """``pyspark.daemon.worker`` that appends :func:`worker_state` to ``path`` after each
    task, with the task's CPU seconds in this worker (``cpu_s``: the whole task as the
    worker runs it — reading the command, the Arrow streams, the UDF, the reply); with
    ``profile`` (a folder, ``DPRECT_BENCH_WORKER_PROFILE``) every task also runs under
    one cProfile per worker, its stats (summed over the worker's tasks) dumped to
    ``profile/worker-<pid>.prof`` after each task."""
    import json
    import time

    tasks = 0
    profiler: Any = None

    def run(sock: Any, authenticated: bool) -> int:
        nonlocal tasks, profiler
        count_compiled_calls()
        started = time.process_time()
        if profile:
            import cProfile

            profiler = profiler or cProfile.Profile(time.process_time)
            code = int(profiler.runcall(work, sock, authenticated))
        else:
            code = int(work(sock, authenticated))
        spent = time.process_time() - started
        tasks += 1
        if profile:
            profiler.dump_stats(os.path.join(profile, f"worker-{os.getpid()}.prof"))
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({**worker_state(tasks), "cpu_s": round(spent, 5),
                                  "end_s": round(time.time(), 3)}) + "\n")
        return code

    return run


def main() -> None:
    """Run pyspark's daemon with ended workers reaped (its module's ``signal`` wrapped),
    and its workers' state logged where ``DPRECT_BENCH_WORKER_LOG`` asks."""
    import pyspark.daemon as daemon

    daemon.signal = _Signals(signal)  # type: ignore[assignment]
    path = os.environ.get("DPRECT_BENCH_WORKER_LOG")
    if path:
        daemon.gc = _TimedGC()  # type: ignore[assignment]
        daemon.worker = _logged(daemon.worker, path,
                                os.environ.get("DPRECT_BENCH_WORKER_PROFILE"))
    daemon.manager()


if __name__ == "__main__":
    main()
