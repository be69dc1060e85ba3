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

    .venv/bin/python benchmarks/spark_fit.py --sweep [--prefetch-timeout S]

The high-dimension sweep (issue #15): d ∈ {8, 32, 128} at 10^6 rows and d = 1024 at
2·10^5 rows (public synthetic data, 30% positives inside a hidden box, float32 features
written once with numpy into ``benchmarks/output/sweep-*.parquet``; Grid domains of 2^20
points, the planner's method). Each (d, plan) runs in a fresh process with its own
local[2] session: a warm-up scan, the timed aggregate scan (min/max of every feature over
the positives), for ``collect`` also ``approxQuantile`` (2 per feature, relative error
0.01: the non-private reference), then ONE fit (``fit_dataframe``, checks included)
with ``spark_plan=collect`` or ``prefetch``; a prefetch fit still running after
``--prefetch-timeout`` seconds is stopped and reported as such. Peak driver RSS is the
kernel's high-water mark (``VmHWM``, reset just before the fit through
``/proc/PID/clear_refs``) of the Python driver and of the driver JVM. Writes
``benchmarks/output/spark_sweep.json`` and prints the table of docs/architecture.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import threading
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


#: (dims, rows) of the sweep, and its time limits (seconds)
SWEEP = ((8, 1_000_000), (32, 1_000_000), (128, 1_000_000), (1024, 200_000))
SWEEP_RATE = 0.3
SWEEP_SEED = 20261123
PROCESS_TIMEOUT = 300


def sweep_data(rows: int, dims: int) -> Path:
    """The sweep's Parquet file for (rows, dims), written once with numpy (float32 features
    in [−100, 100]; a row is positive with probability 0.3 and then uniform in a hidden
    box, else uniform anywhere)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = OUTPUT / f"sweep-{rows}x{dims}.parquet"
    if path.is_file():
        return path
    OUTPUT.mkdir(parents=True, exist_ok=True)
    print(f"writing {rows:,} rows x {dims} features into {path} (once; cached)", flush=True)
    gen = np.random.default_rng(SWEEP_SEED + dims)
    lo = gen.uniform(-80.0, 0.0, dims)
    hi = lo + gen.uniform(40.0, 80.0, dims)
    names = [f"f{j}" for j in range(dims)]
    schema = pa.schema([*(pa.field(n, pa.float32(), False) for n in names),
                        pa.field("label", pa.int32(), False)])
    chunk = max(1, 2**22 // dims)  # about 16 MB of floats per row group
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema, compression="snappy") as writer:
        for start in range(0, rows, chunk):
            m = min(chunk, rows - start)
            positive = gen.random(m) < SWEEP_RATE
            u = gen.random((m, dims), dtype=np.float32)
            X = np.where(positive[:, None], lo + u * (hi - lo), -100.0 + 200.0 * u)
            writer.write_table(pa.table(
                [*(pa.array(X[:, j].astype(np.float32)) for j in range(dims)),
                 pa.array(positive.astype(np.int32))], schema=schema))
    tmp.rename(path)
    return path


def _hwm_kb(pid: int | str = "self") -> int | None:
    """The process's peak resident set (VmHWM, kB), or None if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_hwm(pid: int | str = "self") -> None:
    """Reset the process's VmHWM to its current RSS (Linux ≥ 4.0; ignored elsewhere)."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def _jvm_pid() -> int | None:
    """The driver JVM: the java child process of this Python driver."""
    me = str(os.getpid())
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me and b"java" in cmd:
            return int(proc.name)
    return None


def sweep_one(dims: int, rows: int, plan: str, master: str, timeout: float) -> None:
    """One (d, plan) of the sweep in this process; prints one JSON line."""
    from dprect.core.domains import Grid
    from dprect.engines.spark.fit import fit_dataframe
    from dprect.engines.spark.session import local_session

    path = sweep_data(rows, dims)
    spark = local_session(master, app_name="dprect-bench-sweep",
                          conf={"spark.driver.memory": "4g",
                                "spark.driver.maxResultSize": "2g"}, log_level="ERROR")
    features = [f"f{j}" for j in range(dims)]
    df = spark.read.parquet(str(path))
    positives = df.where("label = 1")
    aggs = [f"{f}({c})" for c in features for f in ("min", "max")]
    out: dict = {"dims": dims, "rows": rows, "plan": plan}

    def scan() -> object:
        return positives.selectExpr(*aggs).collect()

    scan()  # warm-up (JIT)
    if plan == "collect":  # the reference of both plans' ratios
        out["scan"], _ = timed(f"d={dims}: aggregate scan", scan)
        out["approx_quantile"], _ = timed(
            f"d={dims}: approxQuantile (2 per feature)",
            lambda: positives.approxQuantile(features, [0.05, 0.95], 0.01))
    jvm = _jvm_pid()
    _reset_hwm()
    if jvm is not None:
        _reset_hwm(jvm)
    box: dict = {}

    def fit() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                box["result"] = fit_dataframe(df, features=features, label="label",
                                              domains=[Grid(-100.0, 100.0, 2**20)] * dims,
                                              epsilon=1.0, delta=1e-6, spark_plan=plan,
                                              seed=20261122)
            except Exception as exc:  # reported in the table as failed
                box["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"

    print(f"running: d={dims}: fit, spark_plan={plan} ...", flush=True)
    t0 = time.perf_counter()
    worker = threading.Thread(target=fit, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        out.update(fit=None, timeout=timeout)
        print("RESULT " + json.dumps(out), flush=True)
        os._exit(0)  # the parent ends the process group (and the JVM)
    out["fit"] = time.perf_counter() - t0
    if "error" in box:
        out.update(fit=None, error=box["error"])
        print("RESULT " + json.dumps(out), flush=True)
        os._exit(0)
    result = box["result"]
    out.update(method=result.method, lower_index=[int(v) for v in result.lower_index],
               upper_index=[int(v) for v in result.upper_index],
               driver_python_peak_mb=(_hwm_kb() or 0) / 1024,
               driver_jvm_peak_mb=(_hwm_kb(jvm) or 0) / 1024 if jvm else None,
               ru_maxrss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(f"  d={dims}: fit {plan}: {out['fit']:.2f} s", flush=True)
    print("RESULT " + json.dumps(out), flush=True)
    spark.stop()


def run_sweep(master: str, prefetch_timeout: float, only: list[int] | None = None) -> int:
    """Every (d, plan) of :data:`SWEEP` in its own process (``only``: just those d, the
    others kept from the previous sweep's JSON); the table and the JSON."""
    rows_out = []
    saved = OUTPUT / "spark_sweep.json"
    if only and saved.is_file():
        rows_out = [r for r in json.loads(saved.read_text())["runs"] if r["dims"] not in only]
    started = time.perf_counter()
    for dims, rows in SWEEP:
        if only and dims not in only:
            continue
        sweep_data(rows, dims)
        for plan in ("collect", "prefetch"):
            limit = prefetch_timeout if plan == "prefetch" else PROCESS_TIMEOUT
            cmd = [sys.executable, __file__, "--sweep-one", f"{dims},{rows},{plan}",
                   "--master", master, "--fit-timeout", str(limit)]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                                    start_new_session=True)
            got = None
            try:
                stdout, _ = proc.communicate(timeout=PROCESS_TIMEOUT + limit)
            except subprocess.TimeoutExpired:
                stdout = ""
            finally:
                # the child, its JVM and Python workers: the process group we started
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            for line in stdout.splitlines():
                if line.startswith("RESULT "):
                    got = json.loads(line[len("RESULT "):])
                else:
                    print(line, flush=True)
            rows_out.append(got or {"dims": dims, "rows": rows, "plan": plan, "fit": None,
                                    "failed": True})
    total = time.perf_counter() - started
    by = {(r["dims"], r["plan"]): r for r in rows_out}
    print()
    print(f"sweep on {master}, total {total:.0f} s")
    header = ("| d | rows | positives ≈ | scan s | approxQuantile s (× scan) | collect fit s "
              "(× scan) | prefetch fit s (× scan) | same box | collect peak RSS MB "
              "(Python / JVM) |")
    print(header)
    print("|---" * 9 + "|")
    for dims, rows in SWEEP:
        c, p = by[(dims, "collect")], by[(dims, "prefetch")]
        scan = c.get("scan") or float("nan")

        def cell(t: float | None, ref: float = scan, row: dict = p) -> str:
            if t is None:
                return (f"> {row['timeout']:.0f} (stopped)" if row.get("timeout")
                        else "failed")
            return f"{t:.1f} ({t / ref:.1f}×)"

        same = ("—" if c.get("fit") is None or p.get("fit") is None else
                str(c["lower_index"] == p["lower_index"]
                    and c["upper_index"] == p["upper_index"]).lower())
        rss = (f"{c['driver_python_peak_mb']:.0f} / {c['driver_jvm_peak_mb']:.0f}"
               if c.get("fit") is not None and c.get("driver_jvm_peak_mb") else "—")
        print(f"| {dims} | {rows:,} | {int(rows * SWEEP_RATE):,} | {scan:.1f} | "
              f"{cell(c.get('approx_quantile'), row=c)} | {cell(c.get('fit'), row=c)} | "
              f"{cell(p.get('fit'))} | {same} | {rss} |")
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "spark_sweep.json").write_text(json.dumps(
        {"master": master, "total_seconds": total, "runs": rows_out}, indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--dims", type=int, default=8)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeats", type=int, default=3,
                        help="interleaved scan/prefetch pairs; medians are compared")
    parser.add_argument("--sweep", action="store_true",
                        help="the high-dimension sweep (collect vs prefetch, see above)")
    parser.add_argument("--prefetch-timeout", type=float, default=45.0,
                        help="sweep: stop a prefetch fit after this many seconds")
    parser.add_argument("--sweep-dims", default=None,
                        help="sweep: rerun only these d (comma-separated), keep the rest")
    parser.add_argument("--sweep-one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--fit-timeout", type=float, default=PROCESS_TIMEOUT,
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sweep_one:
        d, n, plan = args.sweep_one.split(",")
        sweep_one(int(d), int(n), plan, args.master, args.fit_timeout)
        return 0
    if args.sweep:
        only = [int(d) for d in args.sweep_dims.split(",")] if args.sweep_dims else None
        return run_sweep(args.master, args.prefetch_timeout, only)

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
