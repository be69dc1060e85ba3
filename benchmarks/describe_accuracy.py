"""DP mean accuracy of ``dprect.describe``'s mechanism (issue #23) beside the re-implemented
Google ApproxBounds + BoundedMean peer of benchmarks/bounds.py, numpy only.

Per column (the 35 real columns of benchmarks/bounds.py, plus its heavy-tailed synthetic
ones) and ε per column (default 1, pure DP): dprect runs
:func:`dprect.core.aggregates.describe_cell` (centre, each side one monotone exponential
mechanism over its outward steps, then count and clamped sum with exact discrete Laplace
noise, ``trials`` seeded runs);
the Google peer runs ``benchmarks.bounds.Google`` (ApproxBounds) at ε/2 and then its
midpoint-centred mean at ε/2 (Laplace noise, half on the sum and half on the count, as
BoundedMean does), ``trials`` runs of the bounds × ``noise_draws`` noise pairs. Reported
per column: relative RMSE of the mean (RMSE/|true mean|) for both and their ratio, dprect's
clipped rows per side (the largest over runs and the share of runs within
1/(2ε_q) + 20/ε_b), and whether any bound exceeds 1000× the column's largest |x|.
A tuning tool: the real-library comparison is the benchmark of issue #23, part B.
Runs are seeded (public data, not a release). Needs the tables of
benchmarks/requirements-real.txt. ``--set NAME=VALUE`` overrides a constant for a side run.

Last run (100 runs per column, the committed constants), real columns: at ε = 1 dprect's
relative RMSE ≤ the Google peer's in 35 of 35 (worst ratio 1.00, median 0.60); at
ε = 0.5 in 34 of 35 (worst 1.18); at ε = 4 in 30 of 35 (worst 1.20); clipped rows per side
within 1/(2ε_q) + 20/ε_b in ≥ 97% of runs on every real column; no bound beyond 1000× a
column's largest |x|.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bounds import Google, heavy_tailed, load_real

from dprect.core import aggregates
from dprect.core.randomness import RandomSource


def google_mean_rmse(col: object, eps: float, trials: int, draws: int,
                     rng: np.random.Generator) -> float:
    g = Google(col)
    v = col.values  # type: ignore[attr-defined]
    mu = float(np.mean(v))
    errs = []
    for _ in range(trials):
        lo, hi, _failed = g.bounds(eps / 2, rng)
        lo, hi = min(lo, hi), max(lo, hi)
        mid, half = lo / 2 + hi / 2, hi / 2 - lo / 2
        centred = float(np.sum(np.clip(v, lo, hi) - mid))
        eq = eps / 2
        s = centred + rng.laplace(0, max(half, 0.0) / (eq / 2) if half > 0 else 1e-300,
                                  draws)
        n = len(v) + rng.laplace(0, 1 / (eq / 2), draws)
        est = np.clip(mid + s / np.maximum(1.0, n), lo, hi)
        errs.append(np.mean((est - mu) ** 2))
    return math.sqrt(float(np.mean(errs))) / abs(mu)


def dprect_runs(col: object, eps: float, trials: int, seed: int) -> dict[str, float]:
    v = col.values  # type: ignore[attr-defined]
    mu = float(np.mean(v))
    plan = aggregates.plan_describe(eps, 1)
    sq, clips, runaway = [], [], 0
    big = float(np.max(np.abs(v)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rng = RandomSource(seed=seed)
    for _ in range(trials):
        cell = aggregates.describe_cell(v, plan, rng)
        assert cell.mean is not None
        sq.append((cell.mean - mu) ** 2)
        clips += [int(np.sum(v < cell.lower)), int(np.sum(v > cell.upper))]
        runaway += max(abs(cell.lower), abs(cell.upper)) > 1000 * big
    limit = 1 / (2 * (plan.count_epsilon + plan.sum_epsilon)) + 20 / plan.bounds_epsilon
    return {"rmse": math.sqrt(float(np.mean(sq))) / abs(mu), "max_clip": max(clips),
            "median_clip": float(np.median(clips)),
            "within": float(np.mean([c <= limit for c in clips])), "runaway": runaway}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--synthetic", action="store_true", help="add heavy-tailed columns")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override a constant of dprect.core.aggregates or "
                         "dprect.core.tail_bounds for a side run (tuning)")
    ap.add_argument("--only", default=None, help="comma-separated table.column names")
    args = ap.parse_args(argv)
    from dprect.core import tail_bounds
    for item in args.set:
        name, value = item.split("=", 1)
        mod = aggregates if hasattr(aggregates, name) else tail_bounds
        setattr(mod, name, type(getattr(mod, name))(value))
        tail_bounds._candidates_cached.cache_clear()
    only = set(args.only.split(",")) if args.only else None
    tables, missing = load_real(None)
    if missing:
        print("missing tables:", ", ".join(missing), file=sys.stderr)
    if args.synthetic:
        tables.append(heavy_tailed(100_000, 20140414))
    rng = np.random.default_rng(7)
    rows, wins, worst = [], 0, 0.0
    print(f"{'column':<28}{'n':>9}{'google':>11}{'dprect':>11}{'ratio':>8}"
          f"{'clip med':>9}{'clip max':>9}{'within':>8}")
    for t in tables:
        for i, col in enumerate(t.columns):
            if only is not None and f"{t.name}.{col.name}" not in only:
                continue
            g = google_mean_rmse(col, args.epsilon, args.trials, args.draws, rng)
            d = dprect_runs(col, args.epsilon, args.trials, 1000 + i)
            ratio = d["rmse"] / g if g > 0 else math.inf
            real = not t.synthetic
            if real:
                wins += ratio <= 1.0
                worst = max(worst, ratio)
            name = f"{t.name}.{col.name}"
            rows.append({"column": name, "n": col.n, "google": g, **d, "ratio": ratio,
                         "real": real})
            print(f"{name:<28}{col.n:>9,}{g:>11.3g}{d['rmse']:>11.3g}{ratio:>8.2f}"
                  f"{d['median_clip']:>9.0f}{d['max_clip']:>9}{d['within']:>8.2f}"
                  + ("  RUNAWAY" if d["runaway"] else ""))
    n_real = sum(r["real"] for r in rows)
    print(f"\nreal columns: dprect <= google in {wins} of {n_real}; worst ratio {worst:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"epsilon": args.epsilon, "trials": args.trials,
                                         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
