"""benchmarks/spark_daemon.py without Spark: the SIGCHLD handler that keeps an ended
child's CPU in its parent's children times (what pyspark's SIG_IGN loses), and the
worker log's line (tests/spark/test_bench_cpu.py runs the daemon in a session)."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
import spark_daemon

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _burn_child() -> int:
    """Fork a child that burns ~0.3 s of CPU and exits; its pid."""
    pid = os.fork()
    if pid == 0:
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        os._exit(0)
    return pid


def _children_cpu_after_child(handler: object) -> float:
    """The children CPU this process gained from one burning child under ``handler``."""
    old = signal.signal(signal.SIGCHLD, handler)
    try:
        before = os.times()
        pid = _burn_child()
        deadline = time.monotonic() + 60
        # wait for the child to be gone: reaped by the handler (or auto-reaped by SIG_IGN)
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        after = os.times()
    finally:
        signal.signal(signal.SIGCHLD, old)
    return (after.children_user + after.children_system
            - before.children_user - before.children_system)


def test_reaped_child_cpu_lands_in_the_parent():
    assert _children_cpu_after_child(spark_daemon.reap_children) >= 0.25


def test_ignored_sigchld_loses_the_child_cpu():
    """Why the daemon exists: under SIG_IGN the kernel reaps the child and counts it
    nowhere."""
    assert _children_cpu_after_child(signal.SIG_IGN) < 0.05


def test_the_wrapped_signal_module_swaps_only_sigchld_ignore():
    calls = []

    class Fake:
        SIGCHLD, SIG_IGN, SIGHUP = signal.SIGCHLD, signal.SIG_IGN, signal.SIGHUP

        @staticmethod
        def signal(number, handler):
            calls.append((number, handler))

    wrapped = spark_daemon._Signals(Fake)  # type: ignore[arg-type]
    wrapped.signal(signal.SIGCHLD, signal.SIG_IGN)
    wrapped.signal(signal.SIGHUP, signal.SIG_IGN)
    wrapped.signal(signal.SIGCHLD, signal.SIG_DFL)
    assert calls == [(signal.SIGCHLD, spark_daemon.reap_children),
                     (signal.SIGHUP, signal.SIG_IGN), (signal.SIGCHLD, signal.SIG_DFL)]
    assert wrapped.SIGHUP == signal.SIGHUP


@pytest.mark.filterwarnings("ignore:this run used a fixed seed")
def test_worker_log_counts_compiled_kernel_calls(tmp_path, monkeypatch):
    from dprect.core.randomness import RandomSource

    monkeypatch.setattr(RandomSource, "_run", RandomSource._run)  # restored after
    monkeypatch.setattr(spark_daemon, "_COMPILED_CALLS", [0])
    path = tmp_path / "workers.jsonl"

    def task(sock, authenticated):
        source = RandomSource(7)
        for _ in range(3):
            source._run(lambda kind, mt, pool, pos: 0)
        return 0

    run = spark_daemon._logged(task, str(path))
    assert run(None, False) == 0
    assert run(None, True) == 0
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(x["tasks"], x["compiled_calls"]) for x in lines] == [(1, 3), (2, 6)]
    assert lines[0]["pid"] == os.getpid() and isinstance(lines[0]["asked"], int)


def test_the_cluster_cpu_split_keeps_a_childs_cpu_out_of_the_parents_own():
    """spark_bench.own_cpu (the JVM's own CPU, the benchmarks' split of the cluster's CPU
    into the JVM and its Python workers) counts this process only: a reaped child's CPU
    grows the subtree (tree_cpu) and not own_cpu."""
    import spark_bench

    me = os.getpid()
    own, tree = spark_bench.own_cpu(me), spark_bench.tree_cpu(me)
    assert 0 < own <= tree
    pid = _burn_child()
    os.waitpid(pid, 0)
    assert spark_bench.tree_cpu(me) - tree >= 0.25
    assert spark_bench.own_cpu(me) - own < 0.2
    assert spark_bench.own_cpu(None) == 0.0
