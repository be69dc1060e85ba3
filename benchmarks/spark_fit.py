"""Benchmark: the Spark fit against one aggregate scan of the same data.

    make bench-spark        # or: .venv/bin/python benchmarks/spark_fit.py [--rows N]

Generates 10^7 rows × 8 features of public synthetic data as Parquet (with the distributed
generator of ``jobs/generate_synthetic.py``) and keeps it under ``benchmarks/output/``, so
reruns skip that step. Then, in one Spark session on ``local[2]``, it times

1. one aggregate scan: min and max of every feature over the positives (the floor any
   plan that reads the data once must pay),
2. the fit with the ``prefetch`` plan (checks included: it is ``fit_dataframe``),
3. the fit with the ``rounds`` plan,

and prints each as a ratio to the scan. The scan is warmed up once (JIT) and the prefetch
fit once (its first call in a session compiles and JIT-warms the generated code, a fixed
cost of a few seconds that is printed too); then scans and prefetch fits run interleaved
``--repeats`` times and their medians are compared. Target: prefetch within 2× the scan.
Both fits use the same seed, so they must return the identical rectangle (docs/algorithm.md §7);
the benchmark checks that too. A seeded fit is not private: this is a benchmark on synthetic data.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "jobs"))

OUTPUT = REPO / "benchmarks" / "output"
TARGET_RATIO = 2.0


def ensure_data(spark: object, rows: int, dims: int) -> tuple[Path, dict]:
    """The cached data set for (rows, dims), generated when missing or different."""
    from generate_synthetic import OPTIONS, generate

    path = OUTPUT / f"synthetic-{rows}x{dims}"
    truth_path = OUTPUT / f"synthetic-{rows}x{dims}.truth.json"
    if path.is_dir() and truth_path.is_file():
        truth = json.loads(truth_path.read_text())
        if truth.get("rows") == rows and len(truth.get("features", [])) == dims:
            print(f"using cached data {path}", flush=True)
            return path, truth
    cfg = {k: o.default for k, o in OPTIONS.items()}
    cfg.update(output=str(path), truth=str(truth_path), rows=rows, features=dims,
               parts=8, seed=10_000_019)
    print(f"generating {rows:,} rows x {dims} features into {path} (once; cached)",
          flush=True)
    return path, generate(cfg, spark)  # type: ignore[arg-type]


def timed(label: str, fn: object) -> tuple[float, object]:
    print(f"running: {label} ...", flush=True)
    t0 = time.perf_counter()
    value = fn()  # type: ignore[operator]
    seconds = time.perf_counter() - t0
    print(f"  {label}: {seconds:.2f} s", flush=True)
    return seconds, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--dims", type=int, default=8)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeats", type=int, default=3,
                        help="interleaved scan/prefetch pairs; medians are compared")
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F  # noqa: N812

    from dprect.core.domains import Grid
    from dprect.engines.spark.fit import fit_dataframe
    from dprect.engines.spark.session import local_session

    spark = local_session(args.master, app_name="dprect-bench-spark",
                          conf={"spark.driver.memory": "4g"}, log_level="ERROR")
    try:
        path, truth = ensure_data(spark, args.rows, args.dims)
        features, label = truth["features"], truth["label"]
        domains = [Grid(lo, hi, 2**20)
                   for lo, hi in zip(truth["span_lower"], truth["span_upper"], strict=True)]
        df = spark.read.parquet(str(path))

        def scan() -> object:
            aggs = [f(F.col(c)) for c in features for f in (F.min, F.max)]
            return df.where(F.col(label) == 1).agg(*aggs).collect()

        def fit(plan: str) -> object:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return fit_dataframe(df, features=features, label=label, domains=domains,
                                     epsilon=args.epsilon, delta=args.delta,
                                     spark_plan=plan, seed=20261122)

        timed("warm-up scan (not counted)", scan)
        t_cold, _ = timed("first fit in this session, spark_plan=prefetch (JVM warm-up; "
                          "reported, not in the ratio)", lambda: fit("prefetch"))
        scans, fits = [], []
        for rep in range(args.repeats):  # interleaved, so drifts of a shared machine cancel
            scans.append(timed(f"aggregate scan (min/max of every feature over positives) "
                               f"#{rep + 1}", scan)[0])
            t, r_pre = timed(f"fit, spark_plan=prefetch #{rep + 1}", lambda: fit("prefetch"))
            fits.append(t)
        t_scan, t_pre = statistics.median(scans), statistics.median(fits)
        t_rounds, r_rounds = timed("fit, spark_plan=rounds", lambda: fit("rounds"))
    finally:
        spark.stop()

    same = (r_pre.lower_index == r_rounds.lower_index  # type: ignore[attr-defined]
            and r_pre.upper_index == r_rounds.upper_index)  # type: ignore[attr-defined]
    print()
    print(f"data: {args.rows:,} rows x {args.dims} features, Parquet, {args.master}; "
          f"method {r_pre.method}")  # type: ignore[attr-defined]
    print(f"{'step':<22}{'seconds':>10}{'x scan':>10}")
    for name, t in ((f"scan (median of {args.repeats})", t_scan),
                    ("fit prefetch (median)", t_pre), ("fit rounds", t_rounds),
                    ("first fit prefetch", t_cold)):
        print(f"{name:<22}{t:>10.2f}{t / t_scan:>10.2f}")
    verdict = "met" if t_pre <= TARGET_RATIO * t_scan else "MISSED"
    print(f"target prefetch <= {TARGET_RATIO:g}x scan: {verdict}")
    print(f"prefetch and rounds return the identical rectangle: {same}")
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "spark_fit.json").write_text(json.dumps({
        "rows": args.rows, "dims": args.dims, "master": args.master,
        "repeats": args.repeats, "scan_seconds": scans, "prefetch_seconds": fits,
        "rounds_seconds": t_rounds, "first_prefetch_seconds": t_cold,
        "prefetch_ratio": t_pre / t_scan, "rounds_ratio": t_rounds / t_scan,
        "first_prefetch_ratio": t_cold / t_scan,
        "identical": same}, indent=2) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
