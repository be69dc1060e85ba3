"""Benchmark: ``dprect aggregate --engine spark`` asking for EVERY statistic against a plain
``groupBy(g).agg(count, sum, min, max)`` of the same columns, in the same run and session
(issue #41: ≤ 2×; 64 columns × 1,000 public groups on 10^7 rows).

    python benchmarks/aggregate_spark.py [--rows 10000000] [--columns 64] [--groups 1000]
                                         [--pairs 3] [--statistics ...] [--master local[2]]

The statistics default to every one the command takes in one run (``--statistics``'
choices, :func:`dprect.app.options.statistics_choices`): the query's bounds, count, sum,
mean, variance and std (describe's mechanism) and the quantiles p1 … p99 (the quantiles'),
a mixed list drawn in one charge and ONE Spark pass (docs/privacy.md §11b). The run is the
command itself, in this process (:func:`dprect.app.cli.main` with ``--engine spark``: it
reuses this session), writing its JSON record under ``benchmarks/output/`` — plan,
checks, the pass, the draws and the record. The table and the timing loop are
spark_bench.py's (:func:`spark_bench.ensure_data`, cached under ``benchmarks/output/``;
:func:`spark_bench.alternate`). One warm-up
pair is discarded, then ``--pairs`` pairs alternate which goes first; the medians and
their ratio are printed and written to
``benchmarks/output/aggregate_spark-{rows}x{columns}x{groups}.json``, the aggregate run
split into the pass (:func:`dprect.engines.spark.statistics.spark_statistics`, or on a run
of many cells the pass and the draws in the executors,
:func:`dprect.engines.spark.executor_draws.draw_in_executors`, as
:mod:`dprect.engines.spark.grouped_route` calls them) and the rest
(the plan, the draws on the driver, the record), with each run's CPU seconds (driver;
JVM and its Python workers) as describe_spark.py reports them. Noise comes from OS
entropy (nothing is seeded). ``--pass-only`` times the engine's part of the command
instead (the table read and checked, every statistic's counts in the one pass, collected:
what the Spark kernel costs, the driver's draws left out). ``--routes jvm,pass`` times the
aggregate once on each route of describe's bins in every round, beside plain: ``jvm``, the
JVM bin count (:mod:`dprect.engines.spark.jvm_bins`, when the session loads its jar),
``pass``, the ``mapInArrow`` pass (``DPRECT_JVM_BINS=off`` around the run). Nothing is
asserted on times: quote the load with them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from spark_bench import OUTPUT, Cpu, Times, alternate, open_bench, peak_memory, spark_arguments

#: every statistic of one run: describe's mechanism with variance and std, and the
#: quantiles (the --statistics choices, dprect.app.options.statistics_choices)
ALL = ("bounds,count,sum,mean,variance,std,p1,p5,p10,p25,median,p75,p90,p95,p99")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    spark_arguments(ap, columns=64, groups=1000)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--statistics", default=ALL)
    ap.add_argument("--pass-only", action="store_true",
                    help="time the engine's part only (read, checks and the one pass of "
                         "every statistic's counts), not the draws on the driver")
    ap.add_argument("--routes", default="",
                    help="jvm,pass: the aggregate on each route of describe's bins (the "
                         "JVM bin count; the mapInArrow pass), beside plain")
    args = ap.parse_args(argv)

    import dprect.engines.spark.grouped_route as grouped_route
    from dprect.app.aggregate_flow import aggregate_settings
    from dprect.app.cli import main as dprect_main

    bench = open_bench(args, "dprect-bench-aggregate")
    spark, path, columns = bench.spark, bench.path, bench.columns
    passes: list[float] = []

    def timed(real: Callable[..., Any]) -> Callable[..., Any]:
        def run(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return real(*a, **k)
            finally:
                passes.append(time.perf_counter() - t)
        return run

    # the pass collected (few cells), or the pass and the draws in the executors (many
    # cells: executor_draws.executor_route) — what the route calls, by its module's names
    for name in ("spark_statistics", "draw_in_executors"):
        setattr(grouped_route, name, timed(getattr(grouped_route, name)))

    groups = ",".join(str(i) for i in range(args.groups))
    out_dir = tempfile.mkdtemp(prefix="dprect-bench-aggregate-")

    route = grouped_route.SparkGroupedRoute(lambda: (spark, False))

    def engine_part() -> None:
        """What the command's engine does: the table read and checked, every statistic's
        counts in one pass, collected (the draws left out)."""
        settings = aggregate_settings({
            "input": str(path), "columns": columns, "statistics": args.statistics,
            "group_by": "g", "groups": groups.split(","), "epsilon": args.epsilon,
            "output": os.path.join(out_dir, "unused.json")})
        with route.open(settings.source, settings.groups, settings.spec,
                        lambda _: None) as prepared:
            prepared.statistics()

    def aggregate() -> None:
        passes.clear()
        if args.pass_only:
            engine_part()
            return
        record = os.path.join(out_dir, f"run{time.monotonic_ns()}.json")
        code = dprect_main(["aggregate", "--input", str(path), "--columns", ",".join(columns),
                            "--statistics", args.statistics, "--group-by", "g", "--groups",
                            groups, "--epsilon", str(args.epsilon), "--engine", "spark",
                            "--output", record])
        if code != 0:
            raise SystemExit(f"dprect aggregate exited with {code}")
        os.unlink(record)

    from dprect.engines.spark.session import BINS_ENV

    def on_route(route: str) -> Callable[[], None]:
        """The aggregate with describe's bins counted on ``route`` (jvm or pass)."""
        def run() -> None:
            old = os.environ.pop(BINS_ENV, None)
            if route == "pass":
                os.environ[BINS_ENV] = "off"
            try:
                aggregate()
            finally:
                os.environ.pop(BINS_ENV, None)
                if old is not None:
                    os.environ[BINS_ENV] = old
        return run

    routes = [r for r in args.routes.split(",") if r]
    for r in routes:
        if r not in ("jvm", "pass"):
            raise SystemExit(f"unknown route {r!r}: jvm or pass")
    runs: list[tuple[str, Callable[[], None]]] = [("plain", bench.plain)]
    runs += [("aggregate", aggregate)] if not routes else \
        [(f"aggregate-{r}", on_route(r)) for r in routes]
    split: dict[str, list[dict[str, float]]] = {name: [] for name, _ in runs[1:]}
    load = [os.getloadavg()]

    def on_run(name: str, secs: float, _: dict[str, float]) -> None:
        if name in split:
            split[name].append({"pass": sum(passes), "rest": secs - sum(passes)})

    def on_round(r: int, times: Times, cpu: Cpu) -> None:
        load.append(os.getloadavg())
        if r:
            ran = "; ".join(
                f"{name} {times[name][-1]:.1f} s (pass {split[name][-1]['pass']:.1f} s, "
                f"rest {split[name][-1]['rest']:.1f} s), CPU {_cpu(cpu[name][-1])}"
                for name in split)
            print(f"pair {r}: plain {times['plain'][-1]:.1f} s, CPU "
                  f"{_cpu(cpu['plain'][-1])}; {ran}; load {load[-1][0]:.1f}", flush=True)
        else:
            print(f"warm-up pair done; load {load[-1][0]:.1f}", flush=True)

    # pair 0 warms up and is discarded
    times, cpu = alternate(bench, runs, args.pairs + 1, warm_up=True, on_run=on_run,
                           on_round=on_round)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratios = {name: med[name] / med["plain"] for name in split}
    ratio = max(ratios.values())
    peaks = peak_memory(spark)
    out = {"rows": args.rows, "columns": args.columns, "groups": args.groups,
           "statistics": args.statistics, "master": args.master, "pairs": args.pairs,
           "seconds": times, "median_seconds": med, "ratio": ratio, "ratios": ratios,
           "routes": routes,
           "aggregate_split": split if routes else split["aggregate"],
           "cpu_seconds": cpu, "load": load,
           "peak_rss_mb": peaks,
           "acceptance": "aggregate (every statistic) <= 2x the plain groupBy aggregation"}
    out["pass_only"] = args.pass_only
    name = (f"aggregate_spark-{args.rows}x{args.columns}x{args.groups}"
            f"{'-pass' if args.pass_only else ''}"
            f"{'-' + '-'.join(routes) if routes else ''}.json")
    (OUTPUT / name).write_text(json.dumps(out, indent=2) + "\n")
    what = "the engine's part (read, checks, the pass)" if args.pass_only else "aggregate"
    for name, got in ratios.items():
        print(f"{args.rows:,} rows x {args.columns} columns x {args.groups} groups, "
              f"statistics {args.statistics}: plain groupBy.agg median {med['plain']:.1f} s, "
              f"{what} ({name}) median {med[name]:.1f} s, ratio {got:.2f} "
              f"({'meets' if got <= 2 else 'misses'} the 2x acceptance)")
    spark.stop()
    return 0


def _cpu(used: dict[str, float]) -> str:
    """A run's CPU seconds as printed: the JVM's own + its Python workers', the driver's."""
    return (f"{used['jvm']:.1f} + {used['workers']:.1f}, {used['driver']:.1f}")


if __name__ == "__main__":
    sys.exit(main())
