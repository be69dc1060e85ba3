"""Describe with many public groups on the numpy engine (issue #42): wall time of a whole
``dprect describe`` run and the mechanism's time per (group, column).

    python benchmarks/describe_many_groups.py [--groups 100000] [--columns 4]
        [--sample-groups 10000] [--all-small] [--no-command]
        [--json benchmarks/output/describe_many_groups.json]

The input is public synthetic data made here (cached under benchmarks/output/): group
sizes lognormal (median 12 rows, mean ~20; 5% of the groups empty, ten of 20,000 rows), so
most cells are small and take the small-groups splits (docs/privacy.md §11), about
2·10^6 rows for 10^5 groups; four float columns of realistic spread — normal about a
per-group location with 2% nulls, lognormal scaled per group, rounded exponential (heavy
ties), Student t (2) far from zero.

Measured, in this order:

1. **reference** — a plain numpy group-by reduce of the same columns (one stable sort of
   the rows by group, then ``np.add.reduceat`` of the finite values and their counts):
   the floor any exact grouped primitive pays;
2. **statistics** — the numpy engine's primitive
   :func:`dprect.engines.grouped.grouped_statistics` (every (group, column)'s counts and
   exact sums per search bin);
3. **mechanism per cell** — the QUERY draw (describe's mechanism,
   :meth:`~dprect.core.statistic.Mechanism.draw` with builtin ``map``: one core) on the
   first ``--sample-groups`` groups' statistics, seeded: CPU milliseconds per (group,
   column) (``time.process_time``; the machine's other load does not count) — where
   numba is installed this includes the draws in Python until the blocks announced
   ``JIT_AFTER`` sampler calls and the load of the compiled samplers
   (:mod:`dprect.core.random_jit`);
4. **the command** — ``dprect describe --engine numpy --seed 1`` on the whole table as a
   subprocess (what a user runs: reading, the plan and its check, the statistics, the
   mechanism in the driver's worker processes, the outputs): wall seconds, the CPU
   seconds of the process and its workers, and the peak resident memory of its largest
   process (``ru_maxrss``: the driver).

The load average is recorded with the numbers: on a shared machine the wall time is
CPU time divided by the share of the cores the run got. Nothing is asserted: this is a
measurement (tests/engines/test_many_groups_golden.py holds the outputs).

Accuracy (issue #41/#42: the small groups' pooled centres, docs/privacy.md §11): from the
sampled draw of step 3, per column, the released means' relative error |mean − true|/|true|
(median, and the share within 10%) over the cells whose released count is below the
plan's row need, and over the others. ``--all-small`` caps every group at 100 rows (no
group reaches the row need, so no column has an anchor: the pooled split's case).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dprect.core.aggregates import plan_describe  # noqa: E402
from dprect.core.randomness import RandomSource  # noqa: E402
from dprect.core.statistic import QUERY  # noqa: E402
from dprect.engines.grouped import grouped_statistics  # noqa: E402

OUTPUT = REPO / "benchmarks" / "output"
COLUMNS = ("a", "b", "c", "d")
EPSILON = 4.0


def make_table(groups: int, seed: int = 7, all_small: bool = False
               ) -> tuple[list[np.ndarray], np.ndarray]:
    """The synthetic columns (float64, nulls as NaN) and each row's group index
    (``all_small``: every group capped at 100 rows)."""
    gen = np.random.default_rng(seed)
    sizes = np.maximum(0, np.round(gen.lognormal(2.5, 1.0, groups))).astype(np.int64)
    sizes[gen.random(groups) < 0.05] = 0
    sizes[:10] = 20000
    if all_small:
        sizes = np.minimum(sizes, 100)
    group = np.repeat(np.arange(groups, dtype=np.int64), sizes)
    n = len(group)
    a = gen.normal(0, 100, groups)[group] + gen.normal(0, 10, n)
    a[gen.random(n) < 0.02] = np.nan
    b = np.exp(gen.normal(3, 1.5, n)) * (1 + group % 7)
    c = np.round(gen.exponential(30, n))
    d = gen.standard_t(2, n) * 1000 + 5e5
    return [a, b, c, d], group


def write_input(groups: int) -> tuple[Path, Path]:
    """The table as Parquet (group names g0, g1, …) and the public group list, cached."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    OUTPUT.mkdir(parents=True, exist_ok=True)
    path = OUTPUT / f"many_groups_{groups}.parquet"
    listed = OUTPUT / f"many_groups_{groups}.groups"
    if not path.exists() or not listed.exists():
        values, group = make_table(groups)
        names = np.char.add("g", group.astype(str))
        pq.write_table(pa.table({"grp": pa.array(names),
                                 **dict(zip(COLUMNS, values, strict=True))}), path)
        listed.write_text("\n".join(f"g{i}" for i in range(groups)) + "\n")
    return path, listed


def reference_reduce(values: list[np.ndarray], group: np.ndarray, groups: int
                     ) -> float:
    """Seconds of a plain numpy group-by: per column the finite values' count and sum per
    group (one stable sort by group, ``np.add.reduceat``)."""
    t = time.perf_counter()
    order = np.argsort(group, kind="stable")
    g = group[order]
    for x in values:
        xs = x[order]
        ok = np.isfinite(xs)
        cuts = np.searchsorted(g, np.arange(groups + 1))
        starts = np.minimum(cuts[:-1], max(len(xs) - 1, 0))
        np.add.reduceat(np.where(ok, xs, 0.0), starts)
        np.add.reduceat(ok.astype(np.int64), starts)
    return time.perf_counter() - t


def mechanism_per_cell(cells: dict[tuple[int, int], Any], sample: int, columns: int
                       ) -> tuple[float, int, Any]:
    """CPU ms per cell of the QUERY draw on the first ``sample`` groups, on this core (and
    the drawn result)."""
    from dprect.engines import grouped

    plan = plan_describe(EPSILON, columns)
    part = {k: c for k, c in cells.items() if k[0] < sample}
    names = [f"g{g}" for g in range(sample)]
    keep = grouped.block_mapper

    class _OneCore:
        def __init__(self, *_: Any) -> None:
            pass

        def __enter__(self) -> tuple[Any, int]:
            return map, 1

        def __exit__(self, *_: Any) -> None:
            return None

    grouped.block_mapper = _OneCore  # type: ignore[assignment]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            rng = RandomSource(seed=1)
        t = time.process_time()
        result = QUERY.draw(plan, part, names, list(COLUMNS[:columns]), rng)
        cpu = time.process_time() - t
    finally:
        grouped.block_mapper = keep
    return cpu / len(part) * 1e3, len(part), result


def mean_accuracy(result: Any, values: list[np.ndarray], group: np.ndarray, sample: int
                  ) -> dict[str, Any]:
    """Per column, the released means' relative error on the sampled groups (cells with
    rows only), split by the released count against the plan's row need."""
    need = result.plan.rows_needed
    in_sample = group < sample
    out: dict[str, Any] = {"rows_needed": need}
    for j, x in enumerate(values):
        keep = in_sample & np.isfinite(x)
        rows = np.bincount(group[keep], minlength=sample)
        sums = np.bincount(group[keep], weights=x[keep], minlength=sample)
        col: dict[str, Any] = {}
        for label, small in (("below_row_need", True), ("at_row_need", False)):
            errs = [abs(c.mean - sums[g] / rows[g]) / abs(sums[g] / rows[g])
                    for g in range(sample) if rows[g] and sums[g]
                    for c in [result.cells[g][j]] if (c.count < need) == small]
            col[label] = ({"cells": len(errs), "median_relative_error":
                           float(np.median(errs)), "within_10pct":
                           float(np.mean(np.array(errs) <= 0.1))} if errs else {"cells": 0})
        out[COLUMNS[j]] = col
    return out


def run_command(path: Path, listed: Path, columns: int) -> dict[str, float]:
    """Wall and CPU seconds of ``dprect describe`` on the table (a subprocess), and the
    peak resident memory of its largest process (the driver; its workers are smaller)."""
    out = OUTPUT / "many_groups_result.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dprect", "describe", "--input", str(path),
                    "--columns", ",".join(COLUMNS[:columns]), "--epsilon", str(EPSILON),
                    "--group-by", "grp", "--groups-file", str(listed), "--seed", "1",
                    "--engine", "numpy", "--quiet", "--output", str(out)],
                   check=True, cwd=REPO, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # ru_maxrss of the children: the largest waited-for process, in KiB on Linux
    return {"wall_seconds": wall, "cpu_seconds": cpu, "peak_rss_mb": after.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=100_000)
    ap.add_argument("--columns", type=int, default=4, choices=range(1, 5))
    ap.add_argument("--sample-groups", type=int, default=10_000)
    ap.add_argument("--no-command", action="store_true", help="skip the CLI run")
    ap.add_argument("--all-small", action="store_true",
                    help="every group capped at 100 rows: all below the row need")
    ap.add_argument("--json", type=Path, default=OUTPUT / "describe_many_groups.json")
    args = ap.parse_args()
    values, group = make_table(args.groups, all_small=args.all_small)
    values = values[:args.columns]
    out: dict[str, Any] = {"groups": args.groups, "columns": args.columns,
                           "all_small": args.all_small,
                           "rows": len(group), "epsilon": EPSILON,
                           "load_average_before": os.getloadavg()[0]}
    out["reference_groupby_seconds"] = reference_reduce(values, group, args.groups)
    plan = plan_describe(EPSILON, args.columns)
    spec = QUERY.spec([None] * args.columns, plan.statistics)  # type: ignore[list-item]
    t, c = time.perf_counter(), time.process_time()
    cells = grouped_statistics(values, group, args.groups, spec)
    out["statistics_seconds"] = time.perf_counter() - t
    out["statistics_cpu_seconds"] = time.process_time() - c
    sample = min(args.sample_groups, args.groups)
    per_cell, sampled, drawn = mechanism_per_cell(cells, sample, args.columns)
    out["mechanism_cpu_ms_per_cell"] = per_cell
    out["mechanism_cells_sampled"] = sampled
    out["mean_accuracy"] = mean_accuracy(drawn, values, group, sample)
    del cells
    if not args.no_command:
        if args.all_small:
            raise SystemExit("--all-small measures the mechanism only: add --no-command")
        path, listed = write_input(args.groups)
        out["command"] = run_command(path, listed, args.columns)
    out["load_average_after"] = os.getloadavg()[0]
    print(f"{args.groups:,} groups x {args.columns} column(s), {len(group):,} rows "
          f"(load average {out['load_average_before']:.1f} on {os.cpu_count()} cores)")
    print(f"reference numpy group-by reduce: {out['reference_groupby_seconds']:.2f} s")
    print(f"statistics (grouped_statistics): {out['statistics_seconds']:.2f} s wall, "
          f"{out['statistics_cpu_seconds']:.2f} s CPU")
    print(f"mechanism: {per_cell:.3f} ms CPU per (group, column), one core "
          f"({sampled:,} cells sampled)")
    for name, col in out["mean_accuracy"].items():
        if name == "rows_needed":
            continue
        print(f"column {name}: " + "; ".join(
            f"{label.replace('_', ' ')}: {acc['cells']:,} cells" + (
                f", median relative error of the mean {acc['median_relative_error']:.3g}, "
                f"{acc['within_10pct']:.0%} within 10%" if acc["cells"] else "")
            for label, acc in col.items()))
    if "command" in out:
        cmd = out["command"]
        print(f"dprect describe --engine numpy: {cmd['wall_seconds']:.1f} s wall, "
              f"{cmd['cpu_seconds']:.1f} s CPU (process and workers), peak RSS "
              f"{cmd['peak_rss_mb']:,.0f} MB")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
