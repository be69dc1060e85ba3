"""The rectangle on small tables (issue #44): dprect's methods beside per-feature DP-quantile
boxes, with the share of positives outside (FN), of negatives inside (FP) and the balanced
error (FN + FP)/2.

Tables: iris (setosa), wine (class 0), breast cancer, digits, weather, diamonds and flights
(``benchmarks/real_data.py``'s tables and domains; iris and wine on the float order, the
default), and breast cancer and digits jittered (:func:`jittered`: no ties). Methods, at
(ε, δ = 10⁻⁶) for ε ∈ {0.5, 1, 4}: dprect ``composition``,
``quantiles`` (the quantile box, ``dprect/core/quantile_box.py``) and ``auto`` (without a
public N: it draws its private count); the peer: per-feature DP quantiles at α = 0.01 and
0.99, 2d quantiles at ε/(2d) each — ``real_data.Peer``, the re-implementation of OpenDP's
``make_private_quantile`` checked against OpenDP 0.16 there. The box's planned miss is the
planner's ``quantiles_predicted`` at the true N (fine for a benchmark on public data).
Runs are seeded (one seed per table, ε, method and trial). Writes
``small_tables.json`` (docs/figures/, or benchmarks/output/ with ``--quick``) and prints a
table.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
import zlib
from typing import Any

import numpy as np
from evidence_common import output_dir, write_json

import dprect
from dprect.core.domains import FloatOrder, Grid
from dprect.core.planner import predicted_at
from dprect.engines.numpy_engine import NumpyEngine

EPSILONS = (0.5, 1.0, 4.0)
DELTA = 1e-6
METHODS = ("composition", "quantiles", "auto")


def small_tables(names: list[str] | None) -> list[Any]:
    import real_data as rd
    from sklearn import datasets

    out = []
    for name, loader, cls in (("iris", datasets.load_iris, 0), ("wine", datasets.load_wine, 0)):
        raw = loader()
        X = np.asarray(raw.data, dtype=np.float64)
        out.append(rd.Table(name, "scikit-learn", "CC BY 4.0", f"target == {cls}",
                            [f"x{j}" for j in range(X.shape[1])],
                            [FloatOrder()] * X.shape[1], ["float order"] * X.shape[1],
                            X, raw.target == cls))
    for load in (rd.breast_cancer, rd.digits, rd.weather, rd.diamonds, rd.flights):
        try:
            out.append(load())
        except ImportError as exc:  # a table's package is not installed
            print(f"skipped {load.__name__}: {exc}", file=sys.stderr)
    out += [jittered(t) for t in out if t.name in ("breast-cancer", "digits")]
    return [t for t in out if names is None or t.name in names]


def jittered(table: Any) -> Any:
    """The table with its ties broken (seeded, public): digits' pixels v ↦ v + U[0, 1) on
    Grid(0, 17, 2^16); breast cancer's measurements x ↦ x·(1 + U(−½, ½)·10⁻³), still on
    the float order — no two rows share a value."""
    gen = np.random.default_rng(zlib.crc32(table.name.encode()))
    X = table.X.copy()
    if table.name == "digits":
        X = X + gen.uniform(0.0, 1.0, size=X.shape)
        domains = [Grid(0.0, 17.0, 2**16)] * X.shape[1]
    else:
        X = X * (1.0 + gen.uniform(-0.5e-3, 0.5e-3, size=X.shape))
        domains = list(table.domains)
    return dataclasses.replace(table, name=table.name + "-jittered", X=X, domains=domains,
                               domain_notes=["jittered"] * X.shape[1])


def _seed(*parts: object) -> int:
    return zlib.crc32(repr(parts).encode())


def run(tables: list[Any], trials: int) -> list[dict[str, Any]]:
    import real_data as rd

    rows = []
    for t in tables:
        pos, neg = t.X[t.y], t.X[~t.y]
        peer = rd.Peer(t)
        for eps in EPSILONS:
            cell: dict[str, Any] = {"table": t.name, "positives": len(pos),
                                    "dims": int(t.X.shape[1]), "epsilon": eps}
            box_plan = dprect.plan(epsilon=eps, delta=DELTA, domains=t.domains,
                                   method="quantiles")
            cell["planned_quantiles"] = predicted_at(box_plan.chosen, len(pos)) / len(pos)
            for method in METHODS:
                fn, fp, chosen = [], [], []
                for trial in range(trials):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = dprect.fit_engine(NumpyEngine.from_features(pos, t.domains),
                                                t.domains, t.features, epsilon=eps,
                                                delta=DELTA, method=method,
                                                seed=_seed(t.name, eps, method, trial))
                    fn.append(1 - float(res.contains(pos).mean()))
                    fp.append(float(res.contains(neg).mean()) if len(neg) else 0.0)
                    chosen.append(res.method)
                cell[method] = {"fn": float(np.mean(fn)), "fp": float(np.mean(fp)),
                                "balanced": float((np.mean(fn) + np.mean(fp)) / 2),
                                "chosen": sorted(set(chosen))}
            fn, fp = [], []
            for trial in range(trials):
                rng = np.random.default_rng(_seed(t.name, eps, "peer", trial))
                lo, hi = peer.fit(0.01, eps, rng)
                inside = peer.contains(lo, hi)
                fn.append(1 - float(inside[t.y].mean()))
                fp.append(float(inside[~t.y].mean()))
            cell["peer-q0.01"] = {"fn": float(np.mean(fn)), "fp": float(np.mean(fp)),
                                  "balanced": float((np.mean(fn) + np.mean(fp)) / 2)}
            rows.append(cell)
            print(_line(cell), flush=True)
    return rows


def _line(c: dict[str, Any]) -> str:
    parts = [f"{c['table']:<14}{c['positives']:>7}{c['dims']:>4}{c['epsilon']:>5}"]
    for m in (*METHODS, "peer-q0.01"):
        r = c[m]
        parts.append(f"{r['fn']:.3f}/{r['fp']:.3f}/{r['balanced']:.3f}")
    parts.append(f"plan {c['planned_quantiles']:.3f}")
    parts.append(",".join(c["auto"]["chosen"]))
    return "  ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--tables", nargs="*")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    trials = 2 if args.quick else args.trials
    print("table          n+    d  eps   FN/FP/bal: composition | quantiles | auto | "
          "peer-q0.01   box plan   auto chose")
    rows = run(small_tables(args.tables), trials)
    write_json(output_dir(None, args.quick) / "small_tables.json",
               {"trials": trials, "cells": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
