"""The Spark benchmarks' CPU figure keeps the CPU of a Python worker that ends during a run
(benchmarks/spark_daemon.py, spark_bench.DAEMON_CONF; docs/results.md §5.3b).

pyspark's own daemon ignores SIGCHLD, so an ended worker is reaped by the kernel and its
CPU is added to no process: the benchmarks' sum over the JVM's subtree lost it (once a
negative figure). The probe (tests/spark/worker_cpu_probe.py, in a child process: its own
session, worker reuse off) runs four tasks whose workers each burn CPU, measure their own
CPU and end; the daemon's subtree must have grown by at least what they measured. With
pyspark's daemon the growth is ~0 against ~2 s measured (checked by hand: the probe's
``pyspark`` argument).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("worker_cpu_probe.py")


def test_ended_workers_cpu_is_counted():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "benchmarks")])
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    out = subprocess.run([sys.executable, str(PROBE)], env=env, capture_output=True,
                         text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["distinct_workers"] == 4          # one worker a task, each one ended
    assert figures["workers"] >= 4 * 0.4            # each burnt its busy loop
    assert figures["subtree"] >= figures["workers"]
