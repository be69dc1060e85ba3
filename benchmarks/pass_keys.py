"""The ``pass`` strategy's keys-only lists against its lists with ids, on a composition fit.

One cell of the sweep's public synthetic data (``spark_fit.sweep_data``: float32 features,
30% positives, Grid(2^20) domains, ε = 1, δ = 10^-6, the composition baseline) fitted by
``strategy="pass"`` twice in one session, interleaved: keys only (the default for a plan
that never cuts) and with ids (``never_cuts`` forced False — the code before issue #22k).
The driver budget defaults to the one at which the lists with ids need the same share of
it as at d = 1,024 with the default 1,024 MiB (3.4 GB of lists: 3.14 budgets), so the
passes compare as they would there. Prints passes, fit seconds, the same-rectangle check,
and the Python driver's peak RSS over its RSS before the fit divided by the largest pass's
listed entries (bytes an entry: how :data:`dprect.engines.spark.order_pass.KEY_ENTRY_BYTES`
is checked).

    python benchmarks/pass_keys.py --dims 256 --rows 200000 --mode ids
    python benchmarks/pass_keys.py --dims 256 --rows 200000 --mode keys
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_fit import FIT_SEED, _hwm_kb, _reset_hwm, sweep_data

#: the share of the budget the lists with ids took at d = 1,024 (3.37 GB / 1,024 MiB)
IDS_OVER_BUDGET = 3.14


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--budget-mb", type=float, default=None)
    parser.add_argument("--mode", choices=("keys", "ids", "both"), default="both",
                        help="one mode per process for the memory measure")
    args = parser.parse_args(argv)

    from dprect.core.domains import Grid
    from dprect.core.planner import plan as make_plan
    from dprect.core.request import FitRequest
    from dprect.engines.spark import fit as spark_fit
    from dprect.engines.spark.order_pass import ENTRY_BYTES, KEY_ENTRY_BYTES
    from dprect.engines.spark.prefetch import prefetch_specs
    from dprect.engines.spark.session import local_session

    dims = args.dims
    path = sweep_data(args.rows, dims)
    spark = local_session("local[2]", app_name="dprect-bench-pass-keys",
                          conf={"spark.driver.memory": "4g",
                                "spark.driver.maxResultSize": "2g"}, log_level="ERROR")
    df = spark.read.parquet(str(path))
    features = [f"f{j}" for j in range(dims)]
    grid = [Grid(-100.0, 100.0, 2**20)] * dims
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        the_plan = make_plan(FitRequest(epsilon=1.0, delta=1e-6, method="composition"),
                             domains=grid, features=features)
    listed = sum(s.rows for s in prefetch_specs(the_plan.chosen, cell_budget=2**62))
    budget_mb = args.budget_mb if args.budget_mb is not None else \
        listed * ENTRY_BYTES / IDS_OVER_BUDGET / 2**20
    print(f"d={dims}, n={args.rows:,}: {2 * dims} orders, {listed:,} entries in all; "
          f"budget {budget_mb:.1f} MiB ({listed * ENTRY_BYTES / 2**20:.0f} MiB with ids "
          f"at {ENTRY_BYTES} B, {listed * KEY_ENTRY_BYTES / 2**20:.0f} MiB keys only "
          f"at {KEY_ENTRY_BYTES} B)", flush=True)
    real = spark_fit.never_cuts

    def fit(keys_only: bool) -> tuple[float, int, tuple, float]:
        spark_fit.never_cuts = real if keys_only else (lambda plan: False)  # type: ignore
        before = _rss_kb()
        _reset_hwm()
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with spark_fit.prepare_fit(df, features=features, label="label", grid=grid,
                                       epsilon=1.0, delta=1e-6, method="composition",
                                       strategy="pass", driver_budget_mb=budget_mb
                                       ) as prepared:
                result = prepared.run(seed=FIT_SEED)
                engine = prepared.engine
                assert engine is not None
                passes = engine.stats["passes"]
        seconds = time.perf_counter() - start
        peak = (_hwm_kb() or before) - before
        entries = listed / passes if keys_only else budget_mb * 2**20 / ENTRY_BYTES
        spark_fit.never_cuts = real
        return seconds, passes, (tuple(result.lower_index), tuple(result.upper_index)), \
            peak * 1024 / max(1.0, entries)

    # one mode per process: the first fit's peak RSS is the memory measure (a second fit
    # reuses memory the allocators kept), then the timed fits
    for keys_only in (False, True) if args.mode == "both" else (args.mode == "keys",):
        got = [fit(keys_only) for _ in range(args.repeats)]
        name = "keys only" if keys_only else "with ids "
        times = sorted(g[0] for g in got)
        print(f"  {name}: {got[0][1]} passes, fits {', '.join(f'{g[0]:.1f}' for g in got)} s "
              f"(median {times[len(times) // 2]:.1f}), first fit's driver Python peak over "
              f"its start ≈ {got[0][3]:.0f} B an entry; rectangle hash "
              f"{hash(got[0][2]) & 0xFFFF:04x}, same in every fit: "
              f"{all(g[2] == got[0][2] for g in got)}", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
