"""What the Spark benchmarks of grouped aggregates share (describe_spark.py,
aggregate_spark.py, aggregate_spark_groups.py): the cached table, the session with its
plain ``groupBy(g).agg(count, sum, min, max)`` baseline, the CPU and memory readings, and
the timing loop that alternates which run goes first.

The table (:func:`ensure_data`) is generated once and cached under ``benchmarks/output/``
(``describe-{rows}x{columns}x{groups}.parquet``): a group column ``g`` (uniform over the
groups) and float64 columns of four shapes — normal around a group-dependent mean,
lognormal, negative exponential, and a zero-crossing normal.

CPU: a run's CPU seconds are read from /proc for this driver's Python with its worker
processes (:func:`driver_cpu`) and for the session's JVM with its Python workers
(:func:`cluster_cpu`): each process's own CPU plus its reaped children's. A Python worker
that ends between two readings keeps its CPU counted because the session's worker daemon
is spark_daemon.py (:data:`DAEMON_CONF`), which reaps its workers; pyspark's own daemon
lets the kernel reap them and their CPU vanished from the figure (it could come out
negative). Memory: the kernel's high-water marks (:func:`peak_memory`).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "benchmarks" / "output"
CHUNK = 500_000

#: the session settings that make the Python workers' daemon spark_daemon.py (it reaps
#: its ended workers, so their CPU stays in :func:`cluster_cpu`): the daemon module and
#: the workers' path to it (local masters: :func:`cluster_cpu` reads this machine's
#: processes only anyway)
DAEMON_CONF = {"spark.python.daemon.module": "spark_daemon",
               "spark.executorEnv.PYTHONPATH": str(REPO / "benchmarks")}


def ensure_data(rows: int, columns: int, groups: int) -> Path:
    """The cached table (written in chunks; a partial file is never left behind)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    OUTPUT.mkdir(parents=True, exist_ok=True)
    path = OUTPUT / f"describe-{rows}x{columns}x{groups}.parquet"
    if path.exists():
        return path
    tmp = path.with_suffix(".tmp")
    gen = np.random.default_rng(2311)
    shift = gen.normal(0.0, 5.0, (groups, columns))
    writer = None
    try:
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            g = gen.integers(0, groups, n)
            cols: dict[str, Any] = {"g": pa.array(g.astype(np.int64))}
            for j in range(columns):
                kind = j % 4
                if kind == 0:
                    x = gen.normal(50.0 + shift[g, j], 10.0)
                elif kind == 1:
                    x = gen.lognormal(2.0, 1.0, n)
                elif kind == 2:
                    x = -gen.exponential(30.0, n)
                else:
                    x = gen.normal(0.5, 4.0, n)
                cols[f"c{j}"] = pa.array(x)
            table = pa.table(cols)
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table)
        if writer is not None:
            writer.close()
            writer = None
        tmp.rename(path)
    finally:
        if writer is not None:
            writer.close()
        if tmp.exists():
            tmp.unlink()
    return path


def peak_memory(spark: Any) -> dict[str, float]:
    """Peak resident memory (MB) of this Python driver and of the session's JVM (on a
    local master it runs the executors' tasks too; the Python workers are not counted),
    from the kernel's high-water marks (Linux; empty elsewhere)."""
    out: dict[str, float] = {}
    try:
        out["python driver"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                out["JVM"] = int(line.split()[1]) / 1024
    except (OSError, AttributeError, ValueError):
        pass
    return out


def _proc_cpu(pid: int) -> tuple[int, float]:
    """(parent pid, CPU seconds of the process and its reaped children) from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[1]), sum(int(x) for x in fields[11:15]) / tick


def own_cpu(pid: int | None) -> float:
    """The CPU seconds of process ``pid`` itself (user + system, no children; 0 off
    Linux or without a pid): the session's JVM without its Python workers."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int | None, exclude: int | None = None) -> float:
    """CPU seconds of process ``root`` and every process below it, leaving out the
    subtree of ``exclude`` (a reaped process's time is in its parent's children fields),
    or 0 off Linux."""
    if root is None:
        return 0.0
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)], cpu[int(entry.name)] = _proc_cpu(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    total = 0.0
    for pid, seconds in cpu.items():
        p = pid
        while p > 1 and p not in (root, exclude):
            p = parents.get(p, 0)
        if p == root:
            total += seconds
    return total


def cluster_cpu(jvm_pid: int | None) -> float:
    """CPU seconds of the session's JVM and every process below it (the Python
    workers)."""
    return tree_cpu(jvm_pid)


def driver_cpu(jvm_pid: int | None) -> float:
    """CPU seconds of this driver and its own worker processes (the describe run's pool,
    engines/driver_pool.py: its forkserver reaps them), the JVM's subtree left out."""
    if jvm_pid is None or not Path("/proc").is_dir():
        return time.process_time()
    return tree_cpu(os.getpid(), exclude=jvm_pid)


def spark_arguments(ap: argparse.ArgumentParser, *, columns: int, groups: int) -> None:
    """The options every one of these benchmarks takes: the table's size, epsilon, the
    Spark master and the session JVM's heap."""
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--columns", type=int, default=columns)
    ap.add_argument("--groups", type=int, default=groups)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="3g",
                    help="the session JVM's heap (it reads 256 MB row groups on each core)")
    ap.add_argument("--worker-log", type=Path, default=None,
                    help="append each Python worker's state after each task to this file "
                         "(spark_daemon.py: its sampler calls, the compiled samplers "
                         "loaded or not, the task's CPU seconds)")
    ap.add_argument("--worker-profile", type=Path, default=None,
                    help="with --worker-log: run every Python worker's tasks under "
                         "cProfile, each worker's stats dumped to this folder")


def draws_options(ap: argparse.ArgumentParser) -> None:
    """The options a per-block draws script (describe_block_draws.py,
    every_block_draws.py) ends with: ``--label``, ``--profile N``, ``--sort``, ``--out``
    (read by :func:`end_report`)."""
    ap.add_argument("--label", default="")
    ap.add_argument("--profile", type=int, default=0,
                    help="profile the timed blocks (cProfile) and print N functions")
    ap.add_argument("--sort", default="tottime")
    ap.add_argument("--out", type=Path, default=None)


def end_report(report: dict[str, Any], args: argparse.Namespace,
               profile: Callable[[], cProfile.Profile | None] = lambda: None) -> int:
    """A timing run's end (:func:`draws_options`): ``report`` printed as one JSON line,
    then ``profile()``'s stats (None: not profiled) sorted by ``--sort``, its first
    ``--profile`` functions printed, and ``report`` written to ``--out``; 0."""
    print(json.dumps(report), flush=True)
    prof = profile()
    if prof is not None:
        pstats.Stats(prof).sort_stats(args.sort).print_stats(args.profile)
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


@dataclass
class Bench:
    """The cached table read in a local session, the columns, the JVM's pid (None where
    it cannot be read: the CPU readings then fall back to this process's) and the
    session's cores."""

    spark: Any
    path: Path
    columns: list[str]
    df: Any
    jvm_pid: int | None
    cores: int

    def cpu_now(self) -> tuple[float, float, float]:
        """(this driver's CPU seconds with its worker processes', the JVM's and its
        workers', the JVM's own)."""
        return driver_cpu(self.jvm_pid), cluster_cpu(self.jvm_pid), own_cpu(self.jvm_pid)

    def plain(self, *, collect: bool = True) -> None:
        """The baseline: ``groupBy(g).agg(count, sum, min, max)`` of every column,
        collected, or (``collect=False``) written to Spark's ``noop`` sink (computed in
        full, nothing gathered on the driver)."""
        from pyspark.sql import functions as F  # noqa: N812

        aggs = [f(c) for c in self.columns for f in (F.count, F.sum, F.min, F.max)]
        grouped = self.df.groupBy("g").agg(*aggs)
        if collect:
            grouped.collect()
        else:
            grouped.write.format("noop").mode("overwrite").save()


def open_bench(args: argparse.Namespace, app_name: str,
               extra: dict[str, str] | None = None) -> Bench:
    """The table of ``args`` (:func:`spark_arguments`), cached, read in a new local
    session (with the settings ``extra`` besides)."""
    from dprect.engines.spark.session import local_session

    path = ensure_data(args.rows, args.columns, args.groups)
    conf: dict[str, str] = {"spark.driver.memory": args.driver_memory}
    if args.master.startswith("local"):  # the daemon's file is on this machine only
        conf.update(DAEMON_CONF)
    if getattr(args, "worker_log", None) is not None:
        conf["spark.executorEnv.DPRECT_BENCH_WORKER_LOG"] = str(args.worker_log.resolve())
    if getattr(args, "worker_profile", None) is not None:
        args.worker_profile.mkdir(parents=True, exist_ok=True)
        conf["spark.executorEnv.DPRECT_BENCH_WORKER_PROFILE"] = str(
            args.worker_profile.resolve())
    conf.update(extra or {})
    spark = local_session(args.master, app_name=app_name, conf=conf)
    try:
        jvm_pid: int | None = int(spark.sparkContext._jvm.java.lang.ProcessHandle
                                  .current().pid())
        cluster_cpu(jvm_pid)
    except (OSError, AttributeError, ValueError):
        jvm_pid = None
    return Bench(spark, path, [f"c{j}" for j in range(args.columns)],
                 spark.read.parquet(str(path)), jvm_pid,
                 max(1, int(spark.sparkContext.defaultParallelism)))


Times = dict[str, list[float]]
Cpu = dict[str, list[dict[str, float]]]


def alternate(bench: Bench, runs: list[tuple[str, Callable[[], None]]], rounds: int, *,
              warm_up: bool = False,
              on_run: Callable[[str, float, dict[str, float]], None] | None = None,
              on_round: Callable[[int, Times, Cpu], None] | None = None
              ) -> tuple[Times, Cpu]:
    """Time each named run ``rounds`` times, alternating which goes first (the given
    order in even rounds); round 0 only warms up when ``warm_up`` (neither timed nor
    passed on). Returns the wall seconds and the CPU seconds (``driver``, ``cluster``)
    of each run (and the cluster's split: ``jvm``, the JVM itself, ``workers``, its Python
    workers); ``on_run(name, seconds, cpu)`` sees each timed run (it may add to its
    ``cpu`` entry), ``on_round(r, times, cpu)`` the end of each round."""
    times: Times = {name: [] for name, _ in runs}
    cpu: Cpu = {name: [] for name, _ in runs}
    for r in range(rounds):
        for name, fn in (runs if r % 2 == 0 else runs[::-1]):
            t, c = time.perf_counter(), bench.cpu_now()
            fn()
            secs = time.perf_counter() - t
            c2 = bench.cpu_now()
            if warm_up and not r:
                continue
            # the cluster's CPU split: the JVM itself, and its Python workers
            used = {"driver": c2[0] - c[0], "cluster": c2[1] - c[1], "jvm": c2[2] - c[2],
                    "workers": (c2[1] - c[1]) - (c2[2] - c[2])}
            times[name].append(secs)
            cpu[name].append(used)
            if on_run is not None:
                on_run(name, secs, used)
        if on_round is not None:
            on_round(r, times, cpu)
    return times, cpu
