"""What auto's aimed quantile box would cost and gain as the default (issue #44): on the
Spark fit job's synthetic tables and on §1's sample-complexity setting, ``auto`` as it is
(the aimed box only with a stated ``target_miss``) beside ``auto`` with
``target_miss=0.02`` (the aimed box wherever its aim is affordable: the rule the default
had before commit b655e3f).

Tables (positives uniform inside a true rectangle T, the labels exactly "inside T"):

* ``job-test``: the table of tests/spark/test_jobs.py — ``jobs/generate_synthetic.py`` with
  rows = 20,000, d = 3, seed 5, positive rate 0.4, span [0, 1000], fitted on the grid
  0:1000:4096 at ε = 1, δ = 10⁻⁶ (its fit asserts every bound within 100 units of T's);
  made here with numpy the way ``tests/pin_data.py`` makes the demo's slice (the same T
  from the seed, other rows than Spark's hash);
* ``demo-slice``: ``tests/pin_data.py``'s slice of the demo (conf/local.yaml: d = 4, span
  [−100, 100], grid of 2^20), 20,000 rows;
* ``sample-complexity``: §1's setting, the grid {0, …, 2³² − 1}, T = [2³⁰, 3·2³⁰ − 1]^d,
  positives only, d ∈ {2, 8}, n ∈ {10⁴, 10⁵}.

Per run: FN (positives outside; on §1 the exact mass of T outside), FP (negatives inside),
each side's distance from T's side (> 0 inside T, < 0 past it) in the table's units, and
the volume of the rectangle over T's. Seeded (one seed per table, rule and trial). Writes
``aimed_default.json`` (docs/figures/, or benchmarks/output/ with ``--quick``)."""

from __future__ import annotations

import argparse
import sys
import warnings
import zlib
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from evidence_common import output_dir, write_json

import dprect
from dprect.core.algorithms import run_plan
from dprect.core.domains import Grid
from dprect.core.planner import predicted_at, quantiles_aim
from dprect.core.quantile_box import side_target
from dprect.core.randomness import RandomSource
from dprect.engines.numpy_engine import NumpyEngine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "jobs"))
from _truth import true_rectangle

EPSILON, DELTA = 1.0, 1e-6
RULES: dict[str, dict[str, Any]] = {"auto": {}, "auto-aimed": {"target_miss": 0.02}}


def job_table(rows: int, dims: int, seed: int, rate: float, lower: float, upper: float
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, T's lower, T's upper) as the generator makes them: positives uniform in T,
    negatives uniform on the span except on one random axis, where they lie outside T."""
    tl, tu = (np.array(v) for v in true_rectangle(dims, lower, upper, seed))
    rng = np.random.default_rng(seed)
    positive = rng.random(rows) < rate
    bad_axis = rng.integers(0, dims, rows)
    X = np.empty((rows, dims))
    for j in range(dims):
        u = rng.random(rows)
        left, right = tl[j] - lower, upper - tu[j]
        v = u * (left + right)
        outside = np.where(v < left, lower + v, upper - (v - left))
        X[:, j] = np.where(positive, tl[j] + u * (tu[j] - tl[j]),
                           np.where(bad_axis == j, outside, lower + u * (upper - lower)))
    return X, positive, tl, tu


def _runs(name: str, X: np.ndarray, y: np.ndarray, tl: np.ndarray, tu: np.ndarray,
          domains: list[Grid], trials: int, exact: bool = False) -> dict[str, Any]:
    """Every rule's runs on one table; ``exact``: §1's integer grid, where FN is T's exact
    mass outside the box (and a side's width counts its end point)."""
    pos, neg = X[y], X[~y]
    features = [f"f{j}" for j in range(X.shape[1])]
    out: dict[str, Any] = {"positives": int(y.sum()), "dims": int(X.shape[1])}
    for rule, extra in RULES.items():
        plan = dprect.plan(epsilon=EPSILON, delta=DELTA, domains=domains, method="auto",
                           **extra)
        box = plan.candidates["quantiles"]
        n = len(pos)
        side_eps = float(Fraction(box.details["side_epsilon"]))
        t = side_target(float(box.details.get("target_miss") or 0.0), n, len(box.rounds),
                        Fraction(box.details["side_epsilon"]))
        fn, fp, dist, volume, chosen = [], [], [], [], []
        for trial in range(trials):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = run_plan(NumpyEngine.from_features(pos, domains), domains, features,
                               plan, RandomSource(zlib.crc32(repr((name, rule, trial))
                                                             .encode())))
            lo, hi = np.array(res.lower, dtype=float), np.array(res.upper, dtype=float)
            one = 1.0 if exact else 0.0
            if exact:  # §1: T's exact mass outside the integer box
                inner = np.clip(np.minimum(hi, tu) - np.maximum(lo, tl) + 1, 0, None)
                fn.append(1 - float(np.prod(inner / (tu - tl + 1))))
            else:
                fn.append(1 - float(res.contains(pos).mean()))
            fp.append(float(res.contains(neg).mean()) if len(neg) else 0.0)
            dist += [*(lo - tl), *(tu - hi)]
            volume.append(float(np.prod((hi - lo + one) / (tu - tl + one))))
            chosen.append(res.method)
        d = np.array(dist)
        past = -d[d < 0]
        out[rule] = {
            "chosen": sorted(set(chosen)), "fn": float(np.mean(fn)), "fp": float(np.mean(fp)),
            "balanced": float((np.mean(fn) + np.mean(fp)) / 2),
            "fn_max": float(np.max(fn)), "sides": len(d), "sides_past": len(past),
            "past_mean": float(past.mean()) if len(past) else 0.0,
            "past_max": float(past.max()) if len(past) else 0.0,
            "past_100_units": int((past >= 100).sum()),
            "inside_max": float(d.max()), "volume_mean": float(np.mean(volume)),
            "volume_max": float(np.max(volume)),
            "box_plan": {"side_target": t, "side_epsilon": side_eps,
                         "aim_nats": side_eps / 2 * t,
                         "predicted_miss_at_n": predicted_at(box, n) / n,
                         "aim_share": quantiles_aim(box, n) / n},
            "composition_predicted_at_n": predicted_at(plan.candidates["composition"], n) / n,
        }
        r = out[rule]
        print(f"{name:<22}{rule:<11}{','.join(r['chosen']):<12} FN {r['fn']:.3f} "
              f"FP {r['fp']:.4f} bal {r['balanced']:.3f}  sides past T {r['sides_past']}/"
              f"{r['sides']} (mean {r['past_mean']:.3g}, max "
              f"{r['past_max']:.3g} units)  inside max {r['inside_max']:.3g}"
              f"  volume/T {r['volume_mean']:.2f} (max {r['volume_max']:.2f})  box: t={t} "
              f"eps_s={side_eps:.3f} a*t={side_eps / 2 * t:.1f} nats, planned miss "
              f"{r['box_plan']['predicted_miss_at_n']:.3f}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    trials = 2 if args.quick else args.trials
    cells: dict[str, Any] = {}
    X, y, tl, tu = job_table(20_000, 3, 5, 0.4, 0.0, 1000.0)
    cells["job-test"] = _runs("job-test", X, y, tl, tu, [Grid(0.0, 1000.0, 4096)] * 3,
                              trials)
    X, y, tl, tu = job_table(20_000, 4, 20261122, 0.3, -100.0, 100.0)
    cells["demo-slice"] = _runs("demo-slice", X, y, tl, tu,
                                [Grid(-100.0, 100.0, 1 << 20)] * 4, trials)
    lo, hi = 2**30, 3 * 2**30 - 1
    for d in (2, 8):
        for n in (10**4, 10**5):
            rng = np.random.default_rng(d * 7 + n)
            X = rng.integers(lo, hi + 1, size=(n, d)).astype(np.float64)
            cells[f"sample-complexity d={d} n={n}"] = _runs(
                f"sample d={d} n={n}", X, np.ones(n, dtype=bool), np.full(d, float(lo)),
                np.full(d, float(hi)), [Grid(0.0, 2.0**32 - 1, 2**32)] * d, trials,
                exact=True)
    write_json(output_dir(None, args.quick) / "aimed_default.json",
               {"trials": trials, "epsilon": EPSILON, "delta": DELTA, "cells": cells})
    return 0


if __name__ == "__main__":
    sys.exit(main())
