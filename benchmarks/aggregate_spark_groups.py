"""Benchmark: a grouped aggregate of MANY public groups on Spark, drawn in the executors
(issue #42, :mod:`dprect.engines.spark.executor_draws`), against a plain
``groupBy(g).agg(count, sum, min, max)`` of the same columns in the same run and session;
with the driver's peak memory (the acceptance: 10^6 groups × 8 columns × 10^7 rows on
local[2], ≤ 3× the plain aggregation, the driver ≤ 2 GiB).

The table is :func:`spark_bench.ensure_data`'s (cached under ``benchmarks/output/``: a
group column ``g`` uniform over the groups, float64 columns of four shapes). Each repeat
times, alternating which goes first:

* ``plain``: ``groupBy(g).agg(count, sum, min, max)`` of every column, written to Spark's
  ``noop`` sink (computed in full, nothing gathered on the driver: the stricter
  baseline);
* ``aggregate``: the run's compute as the product does it (``prepared.draw`` of the
  statistics asked — the describe preset by default — then the record the ledger keeps
  and the sinks render from, :func:`~dprect.release.aggregate_record.aggregate_record`),
  drawn in the executors (the route's public choice at this many cells) from OS entropy.

CPU: this driver's and the session's (the JVM with its Python workers) CPU seconds per
run, from /proc (spark_bench.py's accounting); on a shared machine the wall times move
with the load, and cluster CPU / cores + driver CPU estimates each run on an idle one.

Memory: the peak resident memory of this Python driver (``ru_maxrss``; the record of
every released cell is built here) and of the session's JVM (``VmHWM``; on a local master
the JVM is the driver AND runs the executors' tasks, so its peak is an upper bound of the
JVM driver's; the Python workers are not counted). Results go to
``benchmarks/output/aggregate_spark_groups-{rows}x{columns}x{groups}.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from spark_bench import (  # noqa: E402
    OUTPUT,
    Cpu,
    Times,
    alternate,
    open_bench,
    peak_memory,
    spark_arguments,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    spark_arguments(ap, columns=8, groups=1_000_000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--statistics", default="bounds,count,sum,mean")
    args = ap.parse_args(argv)

    from dprect.app.aggregate_flow import asked_mechanisms, plan_for, run_spec
    from dprect.core.randomness import RandomSource
    from dprect.core.request import Source
    from dprect.engines.spark.executor_draws import executor_route
    from dprect.engines.spark.grouped_route import SparkGroupedRoute
    from dprect.release.aggregate_record import aggregate_record, mixed_record

    bench = open_bench(args, "dprect-bench-aggregate-groups")
    spark, path, columns = bench.spark, bench.path, bench.columns
    mechanisms, names = asked_mechanisms(args.statistics)
    plan = plan_for(mechanisms, {"epsilon": args.epsilon, "columns": columns}, names)
    spec = run_spec(mechanisms, plan, None, columns)
    groups = [str(i) for i in range(args.groups)]
    route = SparkGroupedRoute(lambda: (spark, False))
    executors = executor_route(mechanisms, len(groups), len(columns), seeded=False)

    def aggregate() -> None:
        source = Source(str(path), columns, group_by="g")
        with route.open(source, groups, spec, lambda _: None) as prepared:
            result = prepared.draw(mechanisms, plan, groups, columns, RandomSource())
        record = (mixed_record(result) if len(mechanisms) > 1
                  else aggregate_record(result, plan))
        del record, result

    def on_round(r: int, times: Times, cpu: Cpu) -> None:
        print(f"repeat {r + 1}: plain {times['plain'][-1]:.1f} s, aggregate "
              f"{times['aggregate'][-1]:.1f} s; CPU s " + json.dumps(
                  {k: {p: round(x, 1) for p, x in v[-1].items()} for k, v in cpu.items()}),
              flush=True)

    cores = bench.cores
    times, cpu = alternate(bench, [("plain", lambda: bench.plain(collect=False)),
                                   ("aggregate", aggregate)],
                           args.repeats, on_round=on_round)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["aggregate"] / med["plain"]
    # on an idle machine: the cluster's CPU spread over its cores, plus the driver's
    idle = {k: statistics.median(c["cluster"] / cores + c["driver"] for c in v)
            for k, v in cpu.items()}
    peaks = peak_memory(spark)
    out = {"rows": args.rows, "columns": args.columns, "groups": args.groups,
           "statistics": args.statistics, "master": args.master,
           "driver_memory": args.driver_memory, "executor_route": executors,
           "repeats": args.repeats, "seconds": times, "median_seconds": med,
           "ratio": ratio, "peak_rss_mb": peaks, "cpu_seconds": cpu, "cores": cores,
           "idle_estimate_seconds": idle,
           "idle_estimate_ratio": idle["aggregate"] / idle["plain"],
           "acceptance": "aggregate <= 3x the plain groupBy aggregation, driver <= 2 GiB"}
    OUTPUT.mkdir(parents=True, exist_ok=True)
    name = f"aggregate_spark_groups-{args.rows}x{args.columns}x{args.groups}.json"
    (OUTPUT / name).write_text(json.dumps(out, indent=2) + "\n")
    print(f"{args.rows:,} rows x {args.columns} columns x {args.groups:,} groups "
          f"({args.statistics}; {'executor' if executors else 'driver'} route): plain "
          f"groupBy.agg {med['plain']:.1f} s, aggregate {med['aggregate']:.1f} s, ratio "
          f"{ratio:.2f}; idle-machine estimate (cluster CPU / {cores} + driver CPU) "
          f"{idle['plain']:.1f} s and {idle['aggregate']:.1f} s, ratio "
          f"{idle['aggregate'] / idle['plain']:.2f}; peak RSS: "
          + ", ".join(f"{k} {v:,.0f} MB" for k, v in peaks.items()))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
