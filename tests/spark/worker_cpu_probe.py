"""A child process for tests/spark/test_bench_cpu.py: a local session built as the Spark
benchmarks build theirs (spark_bench.DAEMON_CONF: the worker daemon that reaps its
workers), with worker reuse off, so every task's Python worker ends after its task.

It starts the daemon with a first job, reads the CPU of the daemon's subtree
(spark_bench.tree_cpu: live processes plus their reaped children), runs four tasks that
each burn CPU in a busy loop and return their worker's pid and own CPU seconds (the
worker measures itself: os.times, from its fork), waits until those workers have ended,
reads the subtree again and prints one JSON line: the subtree's CPU growth and the
workers' own CPU. No data is read: the tasks compute on their partition index.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from spark_bench import DAEMON_CONF, tree_cpu


def burn(index: int, rows: object) -> list[tuple[int, float]]:
    """Burn ~0.4 s of CPU, then report (pid, this worker process's CPU seconds)."""
    end = time.process_time() + 0.4
    x = index
    while time.process_time() < end:
        x = (x * 1103515245 + 12345) % 2147483648
    t = os.times()
    return [(os.getpid(), t.user + t.system)]


def daemon_pid(jvm: int) -> int:
    """The JVM's child that runs the Python worker daemon."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == jvm and b"daemon" in cmd:
                return int(entry.name)
    raise SystemExit("no worker daemon under the JVM")


def main() -> None:
    from dprect.engines.spark.session import local_session

    conf = {**DAEMON_CONF, "spark.python.worker.reuse": "false"}
    if sys.argv[1:] == ["pyspark"]:
        conf["spark.python.daemon.module"] = "pyspark.daemon"
    spark = local_session("local[2]", app_name="dprect-test-cpu", conf=conf)
    sc = spark.sparkContext
    sc.parallelize(range(4), 4).map(lambda v: v).collect()
    jvm = int(sc._jvm.java.lang.ProcessHandle.current().pid())
    daemon = daemon_pid(jvm)
    before = tree_cpu(daemon)
    workers = sc.parallelize(range(4), 4).mapPartitionsWithIndex(burn).collect()
    deadline = time.monotonic() + 60
    while any(Path(f"/proc/{pid}").exists() for pid, _ in workers):
        if time.monotonic() > deadline:
            raise SystemExit("the workers did not end")
        time.sleep(0.1)
    after = tree_cpu(daemon)
    print(json.dumps({"subtree": after - before, "workers": sum(c for _, c in workers),
                      "distinct_workers": len({pid for pid, _ in workers})}))
    spark.stop()


if __name__ == "__main__":
    main()
