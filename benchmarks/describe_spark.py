"""Benchmark: ``describe`` on Spark (bounds + count, sum, mean per public group and column,
:mod:`dprect.engines.spark.statistics`) against a plain
``groupBy(g).agg(count, sum, min, max)`` of the same columns, in the same run and session
(issue #23's acceptance: 64 columns × 1,000 public groups on 10^7 rows, ≤ 2×).

The table is generated once and cached under ``benchmarks/output/``
(``describe-{rows}x{columns}x{groups}.parquet``): a group column ``g`` (uniform over the
groups) and float64 columns of four shapes — normal around a group-dependent mean,
lognormal, negative exponential, and a zero-crossing normal. Each repeat times the plain
aggregation and the describe run (alternating which goes first); the medians of ≥ 3
repeats and their ratio are printed and written to
``benchmarks/output/describe_spark-{rows}x{columns}x{groups}.json``
with the describe run split into the pass (the per-search-bin counts and sums of every
cell, collected), the mechanism (the driver's: per group the centres, each cell's
statistics given its centre, the searches and the noise, in worker processes on this
many cells, engines/driver_pool.py) and the rest (reading the schema, the result).
Noise comes from OS entropy (nothing is seeded).

``--rows`` (e.g. 10^6) gives a quicker run; ``--master`` the Spark master (local[2]);
``--driver-memory`` the JVM's heap (3g: the generated file's row groups are 500,000 rows,
~256 MB, and each core reads one; 1g ran out of heap). The
peak resident memory of the Python driver and of the session's JVM is reported too, and
the CPU seconds of each run (this driver's Python with its worker processes; the JVM
with its Python workers, from /proc): on a shared machine the wall times move with the
load, and cluster CPU / cores + driver CPU / P estimates each run's wall time on an idle
one (the tasks spread over the cores, the driver's share over its P worker processes:
P = 1 when the run is too small for them). The cluster's CPU is a
lower bound: a Python worker that exits between two readings takes the CPU it used since
the last one with it unless its parent reaps it (a run's total can then fall below the
sum of its phases; a phase's delta can even be negative).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "benchmarks" / "output"
CHUNK = 500_000


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--columns", type=int, default=64)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="3g",
                    help="the session JVM's heap (it reads 256 MB row groups on each core)")
    args = ap.parse_args(argv)
    if args.repeats < 3:
        ap.error("--repeats must be at least 3 (a median)")

    from pyspark.sql import functions as F  # noqa: N812

    import dprect.engines.grouped as grouped
    import dprect.engines.spark.grouped_route as grouped_route
    from dprect.core.aggregates import plan_describe
    from dprect.core.randomness import RandomSource
    from dprect.core.request import Source
    from dprect.core.statistic import QUERY, SEARCH_GRID
    from dprect.engines.driver_pool import PARALLEL_CELLS, driver_processes
    from dprect.engines.spark.session import local_session

    path = ensure_data(args.rows, args.columns, args.groups)
    columns = [f"c{j}" for j in range(args.columns)]
    spark = local_session(args.master, app_name="dprect-bench-describe",
                          conf={"spark.driver.memory": args.driver_memory})
    df = spark.read.parquet(str(path))

    phases: dict[str, float] = {}
    cpu_phases: dict[str, float] = {}
    try:
        jvm_pid: int | None = int(spark.sparkContext._jvm.java.lang.ProcessHandle
                                  .current().pid())
        cluster_cpu(jvm_pid)
    except (OSError, AttributeError, ValueError):
        jvm_pid = None

    def cpu_now() -> tuple[float, float]:
        """(this driver's CPU seconds with its worker processes', the JVM's and its
        workers')."""
        return driver_cpu(jvm_pid), cluster_cpu(jvm_pid)

    def timed_phase(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*a: Any, **k: Any) -> Any:
            t, c = time.perf_counter(), cpu_now()
            try:
                return fn(*a, **k)
            finally:
                phases[name] = time.perf_counter() - t
                c2 = cpu_now()
                cpu_phases[name + " driver"] = c2[0] - c[0]
                cpu_phases[name + " cluster"] = c2[1] - c[1]
        return run

    grouped_route.spark_statistics = timed_phase(  # type: ignore[assignment]
        "pass", grouped_route.spark_statistics)
    grouped.describe_blocks = timed_phase(  # type: ignore[assignment]
        "mechanism", grouped.describe_blocks)

    def plain() -> None:
        aggs = [f(c) for c in columns for f in (F.count, F.sum, F.min, F.max)]
        df.groupBy("g").agg(*aggs).collect()

    plan = plan_describe(args.epsilon, len(columns))
    groups = [str(i) for i in range(args.groups)]
    route = grouped_route.SparkGroupedRoute(lambda: (spark, False))
    spec = QUERY.spec([SEARCH_GRID] * len(columns))

    def describe() -> None:
        source = Source(str(path), columns, group_by="g")
        with route.open(source, groups, spec, lambda _: None) as prepared:
            grouped.draw_query(plan, prepared.statistics(), list(range(args.groups)),
                               columns, RandomSource())

    times: dict[str, list[float]] = {"plain": [], "describe": []}
    cpu: dict[str, list[dict[str, float]]] = {"plain": [], "describe": []}
    idle: dict[str, list[float]] = {"plain": [], "describe": []}
    cores = max(1, int(spark.sparkContext.defaultParallelism))
    processes = (driver_processes() if args.groups >= 2
                 and args.groups * args.columns >= PARALLEL_CELLS else 1)
    split: list[dict[str, float]] = []
    for r in range(args.repeats):
        order = [("plain", plain), ("describe", describe)]
        for name, fn in (order if r % 2 == 0 else order[::-1]):
            t, c = time.perf_counter(), cpu_now()
            fn()
            times[name].append(time.perf_counter() - t)
            c2 = cpu_now()
            used = {"driver": c2[0] - c[0], "cluster": c2[1] - c[1]}
            cpu[name].append({**used, **(cpu_phases if name == "describe" else {})})
            # on an idle machine: the JVM's and workers' CPU spread over the cores, the
            # driver's over its worker processes
            idle[name].append(used["cluster"] / cores + used["driver"] / processes)
            if name == "describe":
                total = times[name][-1]
                split.append({**phases,
                              "rest": total - phases["pass"] - phases["mechanism"]})
        parts = ", ".join(f"{k} {v:.1f} s" for k, v in split[-1].items())
        print(f"repeat {r + 1}: plain {times['plain'][-1]:.1f} s, describe "
              f"{times['describe'][-1]:.1f} s ({parts}); CPU s: plain "
              + json.dumps({k: round(v, 1) for k, v in cpu["plain"][-1].items()})
              + ", describe "
              + json.dumps({k: round(v, 1) for k, v in cpu["describe"][-1].items()})
              + f"; idle-machine estimate plain {idle['plain'][-1]:.1f} s, describe "
              f"{idle['describe'][-1]:.1f} s", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["describe"] / med["plain"]
    idle_med = {k: statistics.median(v) for k, v in idle.items()}
    peaks = peak_memory(spark)
    out = {"rows": args.rows, "columns": args.columns, "groups": args.groups,
           "master": args.master, "driver_memory": args.driver_memory,
           "repeats": args.repeats, "seconds": times,
           "median_seconds": med, "ratio": ratio, "describe_split": split,
           "peak_rss_mb": peaks, "cpu_seconds": cpu, "cores": cores,
           "driver_processes": processes,
           "idle_estimate_seconds": idle, "idle_estimate_median": idle_med,
           "idle_estimate_ratio": idle_med["describe"] / idle_med["plain"],
           "acceptance": "describe <= 2x the plain groupBy aggregation"}
    name = f"describe_spark-{args.rows}x{args.columns}x{args.groups}.json"
    (OUTPUT / name).write_text(json.dumps(out, indent=2) + "\n")
    print(f"{args.rows:,} rows x {args.columns} columns x {args.groups} groups: plain "
          f"groupBy.agg median {med['plain']:.1f} s, describe median {med['describe']:.1f} s,"
          f" ratio {ratio:.2f} ({'meets' if ratio <= 2 else 'misses'} the 2x acceptance);"
          f" peak RSS: " + ", ".join(f"{k} {v:,.0f} MB" for k, v in peaks.items())
          + f"; idle-machine estimate (cluster CPU / {cores} + driver CPU / {processes}): plain "
          f"{idle_med['plain']:.1f} s, describe {idle_med['describe']:.1f} s, ratio "
          f"{idle_med['describe'] / idle_med['plain']:.2f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
