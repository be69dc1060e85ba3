"""Benchmark: ``describe`` on Spark (bounds + count, sum, mean per public group and column,
:mod:`dprect.engines.spark.statistics`) against a plain
``groupBy(g).agg(count, sum, min, max)`` of the same columns, in the same run and session
(issue #23's acceptance: 64 columns × 1,000 public groups on 10^7 rows, ≤ 2×).

The table is :func:`spark_bench.ensure_data`'s (cached under ``benchmarks/output/``
as ``describe-{rows}x{columns}x{groups}.parquet``: a group column ``g`` uniform over the
groups, float64 columns of four shapes). Each repeat times the plain
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
P = 1 when the run is too small for them). A Python worker that ends between two
readings keeps its CPU in the cluster's figure: the session's worker daemon is
spark_daemon.py, which reaps its workers (pyspark's own lets the kernel reap them and
their CPU vanished: totals below the sum of their phases, negative deltas — the figures
recorded before that change are lower bounds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from spark_bench import OUTPUT, Cpu, Times, alternate, open_bench, peak_memory, spark_arguments


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    spark_arguments(ap, columns=64, groups=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if args.repeats < 3:
        ap.error("--repeats must be at least 3 (a median)")

    import dprect.engines.grouped as grouped
    import dprect.engines.spark.grouped_route as grouped_route
    from dprect.core.aggregates import plan_describe
    from dprect.core.randomness import RandomSource
    from dprect.core.request import Source
    from dprect.core.statistic import QUERY, SEARCH_GRID
    from dprect.engines.driver_pool import PARALLEL_CELLS, driver_processes

    bench = open_bench(args, "dprect-bench-describe")
    spark, path, columns = bench.spark, bench.path, bench.columns
    phases: dict[str, float] = {}
    cpu_phases: dict[str, float] = {}

    def timed_phase(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*a: Any, **k: Any) -> Any:
            t, c = time.perf_counter(), bench.cpu_now()
            try:
                return fn(*a, **k)
            finally:
                phases[name] = time.perf_counter() - t
                c2 = bench.cpu_now()
                cpu_phases[name + " driver"] = c2[0] - c[0]
                cpu_phases[name + " cluster"] = c2[1] - c[1]
        return run

    grouped_route.spark_statistics = timed_phase(  # type: ignore[assignment]
        "pass", grouped_route.spark_statistics)
    grouped.describe_blocks = timed_phase(  # type: ignore[assignment]
        "mechanism", grouped.describe_blocks)

    plan = plan_describe(args.epsilon, len(columns))
    groups = [str(i) for i in range(args.groups)]
    route = grouped_route.SparkGroupedRoute(lambda: (spark, False))
    spec = QUERY.spec([SEARCH_GRID] * len(columns))

    def describe() -> None:
        source = Source(str(path), columns, group_by="g")
        with route.open(source, groups, spec, lambda _: None) as prepared:
            grouped.draw_query(plan, prepared.statistics(), list(range(args.groups)),
                               columns, RandomSource())

    idle: dict[str, list[float]] = {"plain": [], "describe": []}
    cores = bench.cores
    processes = (driver_processes() if args.groups >= 2
                 and args.groups * args.columns >= PARALLEL_CELLS else 1)
    split: list[dict[str, float]] = []

    def on_run(name: str, secs: float, used: dict[str, float]) -> None:
        # on an idle machine: the JVM's and workers' CPU spread over the cores, the
        # driver's over its worker processes
        idle[name].append(used["cluster"] / cores + used["driver"] / processes)
        if name == "describe":
            used.update(cpu_phases)
            split.append({**phases, "rest": secs - phases["pass"] - phases["mechanism"]})

    def on_round(r: int, times: Times, cpu: Cpu) -> None:
        parts = ", ".join(f"{k} {v:.1f} s" for k, v in split[-1].items())
        print(f"repeat {r + 1}: plain {times['plain'][-1]:.1f} s, describe "
              f"{times['describe'][-1]:.1f} s ({parts}); CPU s: plain "
              + json.dumps({k: round(v, 1) for k, v in cpu["plain"][-1].items()})
              + ", describe "
              + json.dumps({k: round(v, 1) for k, v in cpu["describe"][-1].items()})
              + f"; idle-machine estimate plain {idle['plain'][-1]:.1f} s, describe "
              f"{idle['describe'][-1]:.1f} s", flush=True)

    times, cpu = alternate(bench, [("plain", bench.plain), ("describe", describe)],
                           args.repeats, on_run=on_run, on_round=on_round)
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
