"""A classes' fit on the ``pass`` strategy: the shared first pass against one pass per class.

k classes (default 5) of public synthetic data (d = 256 float32 features on Grid(0, 1,
2^20), one more label no class lists), the composition baseline (keys-only lists: one
pass per class covers its whole plan), fitted on Spark twice per repeat in one session,
interleaved: ``shared`` — :func:`dprect.engines.spark.fit.prepare_classes` (one count job
and ONE pass for every class) — and ``per-class`` — the route before issue #24's Spark
point: one :func:`~dprect.engines.spark.fit.prepare_fit` per class on the cached table
(a count job and a pass per class), each class with the same 1/k of the driver budget.
Prints per route the Spark jobs, the passes, the median seconds (preparing and running
every class) and the ratio per-class / shared in the same run, and checks that both
routes give the same rectangles.

    python benchmarks/classes_pass.py --rows 60000 --dims 256 --classes 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path


def write_table(path: Path, rows: int, dims: int, classes: int, seed: int = 24) -> None:
    """Public synthetic rows: label uniform on 0..classes (``classes`` is listed by no
    class), each class's features shifted by its index (float32)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    gen = np.random.default_rng(seed)
    y = gen.integers(0, classes + 1, rows)
    shift = (y / (2.0 * (classes + 1)))[:, None]
    X = (0.25 + shift + 0.2 * gen.random((rows, dims))).astype(np.float32)
    cols = {f"f{j}": X[:, j] for j in range(dims)}
    cols["y"] = y.astype(np.int32)
    pq.write_table(pa.table(cols), path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--budget-mb", type=float, default=256.0)
    args = parser.parse_args(argv)

    from dprect.core.classes import class_seeds
    from dprect.core.domains import Grid
    from dprect.core.planner import plan as make_plan
    from dprect.core.request import FitRequest
    from dprect.engines.spark.fit import prepare_classes, prepare_fit
    from dprect.engines.spark.session import local_session

    warnings.filterwarnings("ignore", message="this run used a fixed seed")
    k, dims = args.classes, args.dims
    names = [f"f{j}" for j in range(dims)]
    doms = [Grid(0.0, 1.0, 2**20)] * dims
    request = FitRequest(epsilon=1.0, delta=1e-6, method="composition",
                         classes=tuple(range(k)))
    the_plan = make_plan(request.budget(), domains=doms, auto_count=False)
    requests = [request.for_class(v) for v in range(k)]
    share = args.budget_mb / k
    seeds = class_seeds(5, k)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "classes.parquet"
        write_table(path, args.rows, dims, k)
        spark = local_session("local[2]", app_name="dprect-classes-pass",
                              shuffle_partitions=4)
        sc = spark.sparkContext
        df = spark.read.parquet(str(path)).cache()
        df.count()

        def shared() -> tuple[list, int]:
            with prepare_classes(df, features=names, label="y", domains=doms,
                                 requests=requests, plan=the_plan, strategy="pass",
                                 driver_budget_mb=args.budget_mb) as done:
                got = [p.run(seed=s) for p, s in zip(done.prepared, seeds, strict=True)]
                return got, sum(p.engine.stats["passes"] for p in done.prepared)

        def per_class() -> tuple[list, int]:
            prepared = [prepare_fit(df, features=names, label="y", grid=doms, request=r,
                                    plan=the_plan, strategy="pass", driver_budget_mb=share)
                        for r in requests]
            try:
                got = [p.run(seed=s) for p, s in zip(prepared, seeds, strict=True)]
                return got, sum(p.engine.stats["passes"] for p in prepared)
            finally:
                for p in prepared:
                    p.close()

        routes = {"shared": shared, "per-class": per_class}
        seconds: dict[str, list[float]] = {r: [] for r in routes}
        jobs: dict[str, int] = {}
        passes: dict[str, int] = {}
        boxes: dict[str, list] = {}
        for rep in range(args.repeats):
            for name, route in routes.items():
                group = f"{name}-{rep}"
                sc.setJobGroup(group, name)
                start = time.perf_counter()
                got, passes[name] = route()
                seconds[name].append(time.perf_counter() - start)
                sc.setLocalProperty("spark.jobGroup.id", None)
                jobs[name] = len(sc.statusTracker().getJobIdsForGroup(group))
                boxes[name] = [(r.lower_index, r.upper_index) for r in got]
        df.unpersist()
        spark.stop()

    same = boxes["shared"] == boxes["per-class"]
    median = {r: statistics.median(v) for r, v in seconds.items()}
    print(f"rows={args.rows} dims={dims} classes={k} budget={args.budget_mb} MiB "
          f"repeats={args.repeats} composition (keys-only) strategy=pass")
    for name in routes:
        print(f"{name:>9}: spark jobs {jobs[name]:3d}  passes {passes[name]:3d}  "
              f"median {median[name]:7.2f} s  ({', '.join(f'{s:.2f}' for s in seconds[name])})")
    print(f"ratio per-class / shared: jobs {jobs['per-class'] / max(1, jobs['shared']):.2f}  "
          f"time {median['per-class'] / median['shared']:.2f}")
    print(f"same rectangles: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
