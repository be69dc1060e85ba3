"""The quantile box's off plan cells of docs/results.md §4.1 (issue #44) with many runs, and
the same public inputs on rescaled rows: is a cell's gap the model's or the data's?

Per cell (table, ε) of :data:`CELLS`: the box planned at the table's true N
(``quantiles_predicted``, as ``small_tables.py`` plans it) against its measured FN over
``--runs`` seeded runs (seeds of their own, not ``small_tables.py``'s), with the standard
error; and on a float-order table the same cell on its positives × each of
:data:`SCALES` — the float order, N, d and ε unchanged, so the plan is the same figure,
while the rows sit elsewhere within their binades (docs/algorithm.md §10: the unaimed
box's centre is its coarse bin's first point, and where it splits the rows is the
data's). A spread of the measured miss across the scales wider than the gap says no
public input can place the cell. Digits (a public grid) gets half the runs and no
rescaling (its grid is its domain). Writes ``box_plan_cells.json`` (docs/figures/, or
benchmarks/output/ with ``--quick``: 20 runs).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Any

import numpy as np
from evidence_common import output_dir, write_json
from small_tables import DELTA, _seed, small_tables

import dprect
from dprect.core.algorithms import run_plan
from dprect.core.domains import FloatOrder
from dprect.core.planner import predicted_at
from dprect.core.randomness import RandomSource
from dprect.engines.numpy_engine import NumpyEngine

#: the cells off in s35's run (docs/results.md §4.1)
CELLS = (("iris", 1.0), ("iris", 4.0), ("wine", 4.0), ("breast-cancer-jittered", 0.5),
         ("breast-cancer-jittered", 1.0), ("digits", 4.0))
#: the rescalings of a float-order table's positives (public inputs unchanged)
SCALES = (1.0, 1.37, 3.0)


def cell(table: Any, eps: float, runs: int) -> list[dict[str, Any]]:
    """The cell's rows: per scale the planned and the measured miss (± its se)."""
    pos = table.X[table.y]
    n = len(pos)
    p = dprect.plan(epsilon=eps, delta=DELTA, domains=table.domains, positives=n,
                    method="quantiles")
    planned = predicted_at(p.chosen, n) / n
    grid = not all(isinstance(d, FloatOrder) for d in table.domains)
    out = []
    for scale in (1.0,) if grid else SCALES:
        X = pos * scale
        fn = []
        t0 = time.process_time()
        for trial in range(runs // 2 if grid else runs):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = run_plan(NumpyEngine.from_features(X, table.domains), table.domains,
                               table.features, p,
                               RandomSource(_seed(table.name, eps, "quantiles-s38", scale,
                                                  trial)))
            fn.append(1 - float(res.contains(X).mean()))
        got = np.asarray(fn)
        out.append({"table": table.name, "epsilon": eps, "scale": scale, "runs": len(got),
                    "planned": planned, "fn": float(got.mean()),
                    "se": float(got.std(ddof=1) / np.sqrt(len(got))),
                    "cpu_s": time.process_time() - t0})
        print(out[-1], flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="the folder of box_plan_cells.json")
    ap.add_argument("--runs", type=int, default=1000, help="runs a float-order cell")
    ap.add_argument("--quick", action="store_true", help="20 runs, to benchmarks/output")
    args = ap.parse_args(argv)
    runs = 20 if args.quick else args.runs
    tables = {t.name: t for t in small_tables(sorted({name for name, _ in CELLS}))}
    rows = [r for name, eps in CELLS if name in tables for r in cell(tables[name], eps, runs)]
    write_json(output_dir(args.out, args.quick) / "box_plan_cells.json",
               {"runs": runs, "cells": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
