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
* ``aggregate``: the run as the command line does it, end to end
  (:func:`~dprect.app.aggregate_flow.run_aggregate_flow` of the statistics asked — the
  describe preset's by default — into a fresh budget ledger, with the JSON output and a
  Parquet ``--table``, in a temporary folder under ``benchmarks/output/``), drawn in the
  executors (the route's public choice at this many cells) from OS entropy; a run of one
  mechanism there streams its released blocks to the ledger and the sinks (issue #42,
  :mod:`dprect.release.row_spool`). (Before the streaming, the script timed the draw and
  the record only, without the ledger and the outputs.)

CPU: this driver's and the session's (the JVM with its Python workers) CPU seconds per
run, from /proc (spark_bench.py's accounting); on a shared machine the wall times move
with the load, and cluster CPU / cores + driver CPU estimates each run on an idle one.

Memory: the peak resident memory of this Python driver (``ru_maxrss``; where the
released cells reach the ledger and the sinks) and of the session's JVM (``VmHWM``; on a
local master the JVM is the driver AND runs the executors' tasks, so its peak is an upper
bound of the JVM driver's; the Python workers are not counted). Results go to
``benchmarks/output/aggregate_spark_groups-{rows}x{columns}x{groups}.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
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

    from dprect.app.aggregate_flow import (
        aggregate_settings,
        asked_mechanisms,
        run_aggregate_flow,
    )
    from dprect.app.spine import Reporter, silent
    from dprect.engines.spark.executor_draws import executor_route
    from dprect.engines.spark.grouped_route import SparkGroupedRoute
    from dprect.release.ledger import Ledger

    bench = open_bench(args, "dprect-bench-aggregate-groups")
    spark, path, columns = bench.spark, bench.path, bench.columns
    mechanisms, _ = asked_mechanisms(args.statistics)
    groups = [str(i) for i in range(args.groups)]
    route = SparkGroupedRoute(lambda: (spark, False))
    executors = executor_route(mechanisms, len(groups), len(columns), seeded=False)

    def aggregate() -> None:
        with tempfile.TemporaryDirectory(prefix="aggregate-run-", dir=OUTPUT) as where:
            Ledger(f"{where}/ledger").init()
            settings = aggregate_settings({
                "input": str(path), "columns": columns, "group_by": "g", "groups": groups,
                "statistics": args.statistics, "epsilon": args.epsilon,
                "output": f"{where}/result.json", "table": f"{where}/table.parquet",
                "ledger": f"{where}/ledger", "dataset": "bench", "run_id": "run"})
            run_aggregate_flow(settings, route, Reporter(say=silent, show=silent))

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
           "outputs": "budget ledger, JSON output, Parquet table",
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
