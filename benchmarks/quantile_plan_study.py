"""A quantile plan whose entries do not grow with the rows (issue #41, docs/results.md
§5.6b): a simulation of the candidate plans on the 35 real columns of
``benchmarks/bounds.py`` and on the four column shapes of the 10^7-row Spark benchmark,
with the core's own mechanisms and exact samplers (imported, not copied).

Each plan releases the quantiles of one (group, column) at a total ε per column, pure DP:

* ``grid{D}`` — today's mechanism (:func:`dprect.core.quantiles.draws`: the noisy count,
  the small groups' centre, one exponential mechanism per quantile) on a coarser public
  grid ``DecimalGrid(D)``; ``grid5`` is today's default. Its entries are the occupied
  D-digit cells, one pass.
* ``two-{first}-m{margin}-s{share}`` — two reads. Read 1 is today's draws
  (:func:`~dprect.core.quantiles.draws`: count, centre and split included) on the coarse
  grid ``first`` (``dec2``, ``dec3``: ``DecimalGrid(2|3)``; ``bin4``: describe's search
  bins ``FloatBins(4)``, no centre) at ``share``·ε, scoring each coarse *cell* rather
  than its value (its statistics given with at_value = count: lo = the rows before the
  cell, hi = the rows up to its end, so the cell holding the target rank scores 0; read
  1 ships counts only); its drawn cells c_j are kept (internal, not released). Read 2,
  at (1 − share)·ε, counts the ``DecimalGrid(5)`` cells of the window W_j = every float
  of the coarse cells c_j − margin … c_j + margin (a public function of c_j) and, per
  quantile, one exponential mechanism over the window's
  fine cells under the uniform measure, with today's score (the value's rank error, ties
  counted: lo = #{x < v}, hi = #{x ≤ v}, from the window's cells and the rows below the
  window) at (1 − share)·ε/m each — :func:`~dprect.core.quantile_draws.whole_grid` on
  the window's rank frame (:func:`~dprect.core.quantile_centre.window_frame`, shifted to
  the window). Privacy: adaptive sequential composition of read 1 (ε₁, its proof §11a)
  and m exponential mechanisms of sensitivity 1 on a public window (ε₂); docs/results.md
  §5.6b. Entries: read 1's occupied coarse cells + read 2's occupied fine cells in the
  union of the windows + one "rows below" count a window; read 2's are at most
  m·(2·margin + 1)·(fine cells a coarse cell), a public number. Two passes.

Rank error as in ``benchmarks/quantiles_peers.py`` (:func:`dprect.core.quantiles.rank_error`),
median over ``--runs`` seeded runs per (column, quantile, plan, ε); against the real
peers' medians at ε = 1 from ``docs/figures/quantiles_compare.json`` (§5.6) and against
today's ``grid5`` at every ε (ratio (plan + 1/n)/(reference + 1/n)).

Usage: ``python benchmarks/quantile_plan_study.py [--runs 20] [--epsilons 0.5,1,4]``
(the real columns need the data packages of ``benchmarks/requirements-real.txt``);
writes ``docs/figures/quantile_plan_study.json`` and prints the tables of §5.6b.
Seeded (a benchmark, never a release). Nothing is asserted: this is a measurement.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from dprect.core import quantiles as qc
from dprect.core.decimal_grid import DecimalGrid
from dprect.core.quantile_centre import RankFrame, window_frame, window_runs
from dprect.core.quantile_draws import whole_grid
from dprect.core.randomness import RandomSource

REPO = Path(__file__).resolve().parent.parent

QUANTILES = (0.1, 0.5, 0.9)
#: the mixed run of every statistic at the 10^7 shape: p1 … p99 at the quantiles' ε = 0.5
MIXED = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
FINE = 5
FIRSTS = {"dec2": ("decimal", 2), "dec3": ("decimal", 3), "bin4": ("binary", 4)}
COMPARE = REPO / "docs" / "figures" / "quantiles_compare.json"
OUT = REPO / "docs" / "figures" / "quantile_plan_study.json"
_MAX = float(np.finfo(np.float64).max)


def plans(singles: list[int], twos: list[tuple[str, int, str]]) -> list[str]:
    return [f"grid{d}" for d in singles] + [f"two-{f}-m{m}-s{s}" for f, m, s in twos]


def lowest_float(g: Any, c: int) -> float:
    """The smallest float of cell ``c`` of a quantile grid (−inf before the first cell,
    +inf past the last): a public function of the cell index."""
    if c <= 0:
        return -math.inf
    if c >= g.size:
        return math.inf
    if isinstance(g, DecimalGrid):
        if c >= g.zero:  # the positive cells open at their value (the tiny one at 0.0)
            return float(g.values(np.array([c]))[0])
        # a negative cell (−f_{j+1}, −f_j] opens just above the previous cell's value
        return float(np.nextafter(g.values(np.array([c - 1]))[0], math.inf))
    return float(g.bins.lower_value(c))


def fine_window(coarse: Any, fine: DecimalGrid, c: int, margin: int) -> tuple[int, int]:
    """[a, z): the fine cells holding every float of the coarse cells c − margin …
    c + margin (public: a function of the released c)."""
    low, up = lowest_float(coarse, c - margin), lowest_float(coarse, c + margin + 1)

    def cell(v: float) -> int:  # ±inf (and the binary grid's bins past them) at the ends
        return int(fine.encode(np.array([min(max(v, -_MAX), _MAX)]))[0])

    a = cell(low)
    z = max(cell(float(np.nextafter(up, -math.inf))) + 1, a + 1)
    return a, z


class Column:
    """One column's statistics on every grid the plans read (made once, not per run)."""

    def __init__(self, x: np.ndarray, quantiles: tuple[float, ...], eps: float) -> None:
        self.x = np.sort(x)
        self.n = len(x)
        self.quantiles = quantiles
        self.stats: dict[tuple[str, int], qc.QuantileStatistics] = {}
        fine_plan = qc.plan_quantiles(quantiles, eps)
        self.fine = DecimalGrid(FINE)  # the quantiles' default grid (quantile_grid's)
        self.stats5 = self.of(("decimal", FINE), fine_plan)
        self.keys, self.row_lo, self.row_hi, self.incl = qc._cell_ranks(self.stats5,
                                                                        self.fine)

    def of(self, grid: tuple[str, int], plan: qc.QuantilePlan) -> qc.QuantileStatistics:
        if grid not in self.stats:
            self.stats[grid] = qc.quantile_statistics(self.x, plan)
        return self.stats[grid]


def single(col: Column, digits: int, eps: float, rng: RandomSource
           ) -> tuple[list[float], int]:
    plan = qc.plan_quantiles(col.quantiles, eps, resolution=digits)
    st = col.of(("decimal", digits), plan)
    return qc.release_quantiles(st, plan, rng).tolist(), len(st.keys)


def two_reads(col: Column, first: str, margin: int, share: str, eps: float,
              rng: RandomSource) -> tuple[list[float], int, int]:
    """Read 1 (today's draws on the coarse grid at share·ε), then read 2 (each quantile
    in its window of fine cells at (1 − share)·ε): the released values (sorted), the
    entries both reads ship, and the fine cells the windows span (the public bound's
    part, for the record). ``share`` "a{large}:{small}" is adaptive: a noisy count first
    (``COUNT_SHARE``·ε, today's scale), then read 1 takes ``large`` of the rest (uniform
    over the coarse grid) for a count at or above the split of a plan at that ε (where
    its uniform draws land inside the data), ``small`` (today's small-group draws on the
    coarse grid, its centre and window) below it."""
    kind, res = FIRSTS[first]
    if share.startswith("a"):
        today = qc.plan_quantiles(col.quantiles, eps)
        scale = today.count_scale
        noisy = col.n + rng.discrete_laplace_int(scale.denominator, scale.numerator)
        large, small = (float(v) for v in share[1:].split(":"))
        rest = eps * (1 - qc.COUNT_SHARE)
        big = noisy >= qc.plan_quantiles(col.quantiles, rest * large).split_rows
        s1 = large if big else small
        plan1 = qc.plan_quantiles(col.quantiles, rest * s1, grid=kind, resolution=res,
                               centre=False if big else None)
        eps2 = rest * (1 - s1)
    else:
        plan1 = qc.plan_quantiles(col.quantiles, eps * float(share), grid=kind,
                                  resolution=res)
        eps2 = eps * (1 - float(share))
    st1 = col.of((kind, res), plan1)
    # the bin's score, not its value's: every row of a cell counted as at its value, so
    # lo = #{rows of earlier cells}, hi = #{rows up to the cell's end} and the cell
    # holding the target rank scores 0 (a year column inside one 2-digit cell would
    # otherwise give every cell the same score); read 1 ships counts only
    cells, _ = qc.draws(qc.QuantileStatistics(st1.keys, st1.counts, st1.counts), plan1, rng)
    coarse = qc.quantile_grid(kind, res)
    plan2 = qc.plan_quantiles(col.quantiles, eps2, centre=False)
    out, spans = [], []
    for c, q, rate in zip(cells, plan2.quantiles, plan2.rates, strict=True):
        a, z = fine_window(coarse, col.fine, int(c), margin)
        spans.append((a, z))
        firsts, ends = window_runs(col.keys, [(a, z)])
        f, e = int(firsts[0]), int(ends[0])
        before = np.array([int(col.incl[f - 1]) if f > 0 else 0], dtype=np.int64)
        fr = window_frame([(a, z)], firsts - f, ends - f, col.keys[f:e], col.row_lo[f:e],
                          col.row_hi[f:e], col.incl[f:e], before, col.n, z)
        shifted = RankFrame(fr.starts - np.uint64(a), fr.sizes, fr.lo, fr.hi, col.n, z - a)
        rel = whole_grid(shifted, [q], [rate], rng)[0]
        out.append(float(col.fine.values(np.array([a + rel]))[0]))
    # entries: read 1's cells, read 2's occupied fine cells in the union of the windows
    # and one rows-below count a window
    marks = np.zeros(len(col.keys) + 1, dtype=np.int64)
    for a, z in spans:
        lo_i, hi_i = np.searchsorted(col.keys, [a, z])
        marks[lo_i] += 1
        marks[hi_i] -= 1
    fine_entries = int((np.cumsum(marks)[:-1] > 0).sum())
    width = sum(z - a for a, z in spans)
    return sorted(out), len(st1.keys) + fine_entries + len(spans), width


def run_plan(col: Column, name: str, eps: float, runs: int, seed: int
             ) -> tuple[list[list[float]], list[int], list[int]]:
    rng = RandomSource(seed)  # seeded: a benchmark, reproducible (never a release)
    got, entries, widths = [], [], []
    for _ in range(runs):
        if name.startswith("grid"):
            v, ent = single(col, int(name[4:]), eps, rng)
            w = 0
        else:
            _, first, m, s = name.split("-")
            v, ent, w = two_reads(col, first, int(m[1:]), s[1:], eps, rng)
        got.append(v)
        entries.append(ent)
        widths.append(w)
    return got, entries, widths


def real_columns() -> list[tuple[str, np.ndarray]]:
    sys.path.insert(0, str(REPO / "benchmarks"))  # §5.6's loader of the 35 columns
    from quantiles_peers import columns
    return columns()


def shape_columns(rows: int, seed: int = 2311) -> list[tuple[str, np.ndarray]]:
    """One cell of each of describe_spark.py's four column shapes (spark_bench.ensure_data,
    group shift 0) at ``rows`` rows: the 10^7 shape's 10^4 rows a (group, column)."""
    gen = np.random.default_rng(seed)
    return [("normal(50,10)", gen.normal(50.0, 10.0, rows)),
            ("lognormal(2,1)", gen.lognormal(2.0, 1.0, rows)),
            ("-exponential(30)", -gen.exponential(30.0, rows)),
            ("normal(0.5,4)", gen.normal(0.5, 4.0, rows))]


def measure(cols: list[tuple[str, np.ndarray]], names: list[str], quantiles: tuple[float, ...],
            epsilons: list[float], runs: int) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for eps in epsilons:
        rows = []
        for i, (cname, x) in enumerate(cols):
            col = Column(x, quantiles, eps)
            row: dict[str, Any] = {"column": cname, "n": col.n}
            for k, name in enumerate(names):
                got, ent, wid = run_plan(col, name, eps, runs, 1000 + 97 * i + k)
                row[name] = {
                    "rank_error": [float(np.median([qc.rank_error(col.x, r[j], q)
                                                    for r in got]))
                                   for j, q in enumerate(quantiles)],
                    "entries": float(np.mean(ent)), "entries_max": int(max(ent)),
                    "window_cells": float(np.mean(wid))}
            rows.append(row)
            print(f"eps={eps:g} {cname:<28} n={col.n:>7} "
                  + " ".join(f"{nm}:{row[nm]['entries']:.0f}" for nm in names), flush=True)
        table[f"{eps:g}"] = rows
    return table


def summary(table: dict[str, Any], names: list[str], quantiles: tuple[float, ...]
            ) -> dict[str, Any]:
    """Per plan and ε: columns at most today's (grid5) and worst ratio per quantile; at
    ε = 1 the same against the best real peer (§5.6's medians); entries (median, max)."""
    peers: dict[str, list[float]] = {}
    if COMPARE.exists() and quantiles == QUANTILES:
        saved = json.loads(COMPARE.read_text())
        peers = {r["column"]: [min(r[p][j] for p in saved["peers"]) for j in range(3)]
                 for r in saved["columns"]}
    out: dict[str, Any] = {}
    for eps, rows in table.items():
        for name in names:
            s: dict[str, Any] = {"entries_median": float(np.median([r[name]["entries"]
                                                                     for r in rows])),
                                 "entries_max": int(max(r[name]["entries_max"] for r in rows))}
            refs = {"today": {r["column"]: r["grid5"]["rank_error"] for r in rows}}
            if eps == "1" and peers:
                refs["peer"] = peers
            for ref, by_col in refs.items():
                for j, q in enumerate(quantiles):
                    wins, worst, worst_col = 0, 0.0, ""
                    for r in rows:
                        if r["column"] not in by_col:
                            continue
                        mine, best, n = r[name]["rank_error"][j], by_col[r["column"]][j], r["n"]
                        wins += mine <= best
                        ratio = (mine + 1 / n) / (best + 1 / n)
                        if ratio > worst:
                            worst, worst_col = ratio, r["column"]
                    s[f"vs_{ref}_q{q:g}"] = [wins, len(rows), round(worst, 3), worst_col]
            out[f"{name} eps={eps}"] = s
    return out


def report(result: dict[str, Any]) -> None:
    """The markdown tables of docs/results.md §5.6b from a saved result."""
    names = result["plans"]

    def cells(summ: dict[str, Any], key: str, ref: str, qs: tuple[float, ...]) -> str:
        s = summ[key]
        return " | ".join(f"{s[f'vs_{ref}_q{q:g}'][0]}/{s[f'vs_{ref}_q{q:g}'][1]}, "
                          f"{s[f'vs_{ref}_q{q:g}'][2]:.3g}×" for q in qs)

    def median_error(rows: list[dict[str, Any]], name: str) -> str:
        return " / ".join(f"{100 * float(np.median([r[name]['rank_error'][j] for r in rows])):.3f}"
                          for j in range(3))

    if "real" in result:
        print("\n| plan | entries a column (median, max) | vs peers ε = 1: p10 | median | p90 |")
        print("|---|---|---|---|---|")
        for name in names:
            s = result["real_summary"][f"{name} eps=1"]
            print(f"| {name} | {s['entries_median']:.0f}, {s['entries_max']} | "
                  + cells(result["real_summary"], f"{name} eps=1", "peer", QUANTILES) + " |")
        for eps in result["real"]:
            print(f"\nε = {eps}: | plan | vs today p10 | median | p90 | median rank error % "
                  "(p10 / p50 / p90, over columns) |")
            print("|---|---|---|---|---|")
            for name in names:
                print(f"| {name} | " + cells(result["real_summary"], f"{name} eps={eps}",
                                             "today", QUANTILES)
                      + f" | {median_error(result['real'][eps], name)} |")
    for key, qs in (("shape", QUANTILES), ("shape_growth", QUANTILES),
                    ("shape_mixed", tuple(MIXED))):
        rows = next(iter(result[key].values()))
        print(f"\n{key} ({rows[0]['n']} rows a cell): | plan | "
              + " | ".join(r["column"] for r in rows) + " | rank error % (p10 / p50 / p90, "
              "median over shapes) |")
        for name in names:
            err = median_error(rows, name) if qs == QUANTILES else " / ".join(
                f"{100 * float(np.median([r[name]['rank_error'][j] for r in rows])):.3f}"
                for j in (2, 4, 6))
            print(f"| {name} | " + " | ".join(
                f"{r[name]['entries']:.0f} (≤ {r[name]['entries_max']})" for r in rows)
                + f" | {err} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--epsilons", default="0.5,1,4")
    ap.add_argument("--singles", default="5,4,3,2", help="coarser grids alone (digits)")
    ap.add_argument("--twos", help="two-read plans: first-margin-share, comma-separated",
                    default="dec2-0-0.1,dec2-1-0.1,dec2-1-0.25,dec2-1-0.5,dec2-1-a0.1:0.5,"
                    "dec3-1-0.1,bin4-1-0.1,bin4-1-0.25,bin4-1-a0.1:0.5")
    ap.add_argument("--shape-rows", type=int, default=10_000)
    ap.add_argument("--growth-rows", type=int, default=100_000,
                    help="the shapes again at this many rows a cell (entries' growth)")
    ap.add_argument("--skip-real", action="store_true")
    ap.add_argument("--report", action="store_true",
                    help="only print the tables of the saved docs/figures result")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", message="this run used a fixed seed")
    if args.report:
        report(json.loads(OUT.read_text()))
        return 0
    singles = [int(d) for d in args.singles.split(",") if d]
    if 5 not in singles:
        singles.insert(0, 5)  # today's plan is every comparison's reference
    twos = [(f, int(m), s) for f, m, s in
            (t.split("-") for t in args.twos.split(",") if t)]
    names = plans(singles, twos)
    epsilons = [float(e) for e in args.epsilons.split(",")]
    t0 = time.process_time()
    result: dict[str, Any] = {"runs": args.runs, "plans": names, "quantiles": list(QUANTILES)}
    shapes = shape_columns(args.shape_rows)
    result["shape"] = measure(shapes, names, QUANTILES, [1.0], args.runs)
    result["shape_mixed"] = measure(shapes, names, MIXED, [0.5], args.runs)
    result["shape_summary"] = summary(result["shape"], names, QUANTILES)
    big = shape_columns(args.growth_rows)
    result["shape_growth"] = measure(big, names, QUANTILES, [1.0], max(args.runs // 4, 1))
    result["shape_growth_summary"] = summary(result["shape_growth"], names, QUANTILES)
    result["shape_mixed_summary"] = summary(result["shape_mixed"], names, MIXED)
    if not args.skip_real:
        result["real"] = measure(real_columns(), names, QUANTILES, epsilons, args.runs)
        result["real_summary"] = summary(result["real"], names, QUANTILES)
    result["cpu_seconds"] = round(time.process_time() - t0, 1)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    for key in ("shape_summary", "shape_growth_summary", "shape_mixed_summary",
                "real_summary"):
        if key in result:
            print(key)
            for name, s in result[key].items():
                print(f"  {name:<28} " + json.dumps(s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

