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


def main() -> None:
    """Run pyspark's daemon with ended workers reaped (its module's ``signal`` wrapped)."""
    import pyspark.daemon as daemon

    daemon.signal = _Signals(signal)  # type: ignore[assignment]
    daemon.manager()


if __name__ == "__main__":
    main()
