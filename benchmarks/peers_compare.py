"""The comparison of ``benchmarks/peers_real.py``: per column and ε, every method's relative
RMSE of the DP mean and of the DP sum over its runs, clipped rows per side and bound width
(where the method exposes its bounds), and dprect's ratio to the best REAL peer.

Definitions (one column, one ε, runs r = 1..R with released mean m_r and sum s_r):

* relative RMSE of the mean: sqrt(mean_r (m_r − μ)²) / |μ|, μ the column's true mean;
  of the sum likewise with the true sum. A run the library could not release (an error,
  ``null``) counts as a release of 0 (relative error 1) and as a failure.
* clipped rows per side: #{x < L_r} and #{x > U_r}, averaged over runs; the width
  U_r − L_r, its median over runs.
* best peer: the smallest relative RMSE of the mean among the peers that ran (google,
  opendp-q0.001, opendp-q0.01, tumult) — with ``tumult-reimpl``
  (``benchmarks/peers_standin.py``) in the real Tumult's place when its runs are
  missing; ratio = dprect's / the best peer's.
* the issue's clipping check (dprect's cells, from their plan's ε): per side, the share of
  runs whose clipped rows are at most 1/(2ε_q) + 20/ε_b, with ε_q the query's ε on the
  clamped sum (``plan.sum_epsilon``) and ε_b the bounds' ε per column (centre +
  threshold + steps, ``plan.bounds_epsilon``); it passes when both sides' shares are
  ≥ 0.95 (checked on columns with more than 1,000 rows) and no run has a bound beyond
  1000× the column's largest |x|.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from evidence_common import finite, fmt

PEER_ORDER = ("google", "opendp-q0.001", "opendp-q0.01", "tumult")
STANDIN = "tumult-reimpl"  # only where the real Tumult's runs are missing
DPRECT = "dprect"


def relative_rmse(released: list[float | None], truth: float) -> float:
    """sqrt(mean((x − truth)²)) / |truth|, a missing release counting as 0; computed
    without overflow (inf only when a release is not finite)."""
    x = np.array([0.0 if v is None else float(v) for v in released], dtype=np.float64)
    if not len(x):
        return math.nan
    err = np.abs(x - truth)
    if not np.isfinite(err).all():
        return math.inf
    top = float(err.max())
    if top == 0.0:
        return 0.0
    rmse = top * math.sqrt(float(np.mean((err / top) ** 2)))
    return rmse / abs(truth) if truth != 0 else math.inf


def clipped_per_side(sorted_values: np.ndarray, lower: float, upper: float
                     ) -> tuple[int, int]:
    """(#{x < lower}, #{x > upper}) of a sorted column."""
    below = int(np.searchsorted(sorted_values, lower, side="left"))
    above = len(sorted_values) - int(np.searchsorted(sorted_values, upper, side="right"))
    return below, above


CLIP_CHECK_ROWS = 1000  # the check applies to columns with more rows than this
CLIP_CHECK_SHARE = 0.95


def clip_limit(query_sum_epsilon: float, bounds_epsilon: float) -> float:
    """The issue's per-side limit 1/(2ε_q) + 20/ε_b (module docstring)."""
    return 1.0 / (2.0 * query_sum_epsilon) + 20.0 / bounds_epsilon


def clip_check(sides: np.ndarray, n: int, runaway: int, query_sum_epsilon: float,
               bounds_epsilon: float) -> dict[str, Any]:
    """``sides``: one (below, above) row per run. The share of runs within the limit per
    side, and whether the check passes (None when the column has ≤ 1,000 rows)."""
    limit = clip_limit(query_sum_epsilon, bounds_epsilon)
    low = float(np.mean(sides[:, 0] <= limit))
    high = float(np.mean(sides[:, 1] <= limit))
    applies = n > CLIP_CHECK_ROWS
    return {"limit": limit, "query_sum_epsilon": query_sum_epsilon,
            "bounds_epsilon": bounds_epsilon, "share_low": low, "share_high": high,
            "passes": (min(low, high) >= CLIP_CHECK_SHARE and runaway == 0)
            if applies else None}


def summarise(cell: dict[str, Any], values: np.ndarray, true_sum: float) -> dict[str, Any]:
    """One method's runs on one column at one ε → its metrics."""
    runs = cell["runs"]
    n = len(values)
    mean = true_sum / n
    out: dict[str, Any] = {
        "runs": len(runs),
        "failures": sum(r["mean"] is None or r["sum"] is None for r in runs),
        "rel_rmse_mean": relative_rmse([r["mean"] for r in runs], mean),
        "rel_rmse_sum": relative_rmse([r["sum"] for r in runs], true_sum),
        "seconds": cell.get("seconds"),
    }
    bounded = [r for r in runs if r["lower"] is not None and r["upper"] is not None]
    if bounded:
        sides = np.array([clipped_per_side(values, r["lower"], r["upper"]) for r in bounded])
        widths = np.array([r["upper"] - r["lower"] for r in bounded])
        scale = max(abs(float(values[0])), abs(float(values[-1])))
        out.update({
            "clipped_low_mean": float(sides[:, 0].mean()),
            "clipped_high_mean": float(sides[:, 1].mean()),
            "clipped_side_max": int(sides.max()),
            "width_median": float(np.median(widths)),
            "runaway": int(sum(max(abs(r["lower"]), abs(r["upper"])) > 1000 * scale
                               for r in bounded)),
        })
        plan = cell.get("plan")
        if plan is not None:
            out["clip_check"] = clip_check(sides, n, out["runaway"],
                                           plan["query_sum_epsilon"], plan["bounds_epsilon"])
    return out


def compare_cells(columns: list[dict[str, Any]], cells: list[dict[str, Any]],
                  load: Any) -> list[dict[str, Any]]:
    """Per (column, ε): every method's metrics, the best real peer and dprect's ratio.
    ``load(column_record)`` returns the column's sorted values."""
    by = {(c["peer"], c["table"], c["column"], float(c["epsilon"])): c for c in cells}
    epsilons = sorted({float(c["epsilon"]) for c in cells})
    rows = []
    for col in columns:
        values = np.sort(load(col))
        for eps in epsilons:
            methods = {}
            for m in (DPRECT, *PEER_ORDER, STANDIN):
                cell = by.get((m, col["table"], col["column"], eps))
                if cell is not None and not (m == STANDIN and "tumult" in methods):
                    methods[m] = summarise(cell, values, col["true_sum"])
            if not methods:
                continue
            row: dict[str, Any] = {"table": col["table"], "column": col["column"],
                                   "synthetic": col.get("synthetic", False), "n": col["n"],
                                   "epsilon": eps, "methods": methods}
            peers = [m for m in (*PEER_ORDER, STANDIN) if m in methods]
            if peers:
                best = min(peers, key=lambda m: methods[m]["rel_rmse_mean"])
                best_sum = min(peers, key=lambda m: methods[m]["rel_rmse_sum"])
                row["best_peer_mean"], row["best_peer_sum"] = best, best_sum
                if DPRECT in methods:
                    row["ratio_mean"] = ratio(methods[DPRECT]["rel_rmse_mean"],
                                              methods[best]["rel_rmse_mean"])
                    row["ratio_sum"] = ratio(methods[DPRECT]["rel_rmse_sum"],
                                             methods[best_sum]["rel_rmse_sum"])
            rows.append(row)
    return rows


def ratio(a: float, b: float) -> float:
    if b == 0:
        return math.inf if a > 0 else 1.0
    return a / b


def summary(rows: list[dict[str, Any]], synthetic: bool = False) -> list[dict[str, Any]]:
    """Per ε: in how many columns dprect's DP mean (and sum) is at most the best real
    peer's, the median and the worst ratio."""
    out = []
    for eps in sorted({r["epsilon"] for r in rows}):
        rs = [r for r in rows if r["epsilon"] == eps and r["synthetic"] == synthetic
              and "ratio_mean" in r]
        if not rs:
            continue
        worst = max(rs, key=lambda r: r["ratio_mean"])
        checks = [r["methods"][DPRECT]["clip_check"] for r in rs
                  if "clip_check" in r["methods"].get(DPRECT, {})]
        applied = [c for c in checks if c["passes"] is not None]
        out.append({"epsilon": eps, "columns": len(rs),
                    "clip_check_columns": len(applied),
                    "clip_check_passes": sum(bool(c["passes"]) for c in applied),
                    "clip_limit": checks[0]["limit"] if checks else None,
                    "at_most_best_mean": sum(r["ratio_mean"] <= 1 for r in rs),
                    "at_most_best_sum": sum(r["ratio_sum"] <= 1 for r in rs),
                    "within_1.25_mean": sum(r["ratio_mean"] <= 1.25 for r in rs),
                    "median_ratio_mean": float(np.median([r["ratio_mean"] for r in rs])),
                    "worst_ratio_mean": worst["ratio_mean"],
                    "worst_column": f"{worst['table']}/{worst['column']}",
                    "best_peer_counts": {p: sum(r["best_peer_mean"] == p for r in rs)
                                         for p in (*PEER_ORDER, STANDIN)}})
    return out


def print_table(rows: list[dict[str, Any]], eps: float) -> None:
    print(f"\nε = {eps:g} per column, pure: relative RMSE of the DP mean; ratio = dprect / "
          "best real peer; clipped rows per side (low/high, mean over runs)")
    names = (DPRECT, *PEER_ORDER, STANDIN)
    print(f"{'column':<28}" + "".join(f"{n:>14}" for n in names) + f"{'ratio':>8}"
          f"{'dprect clip':>16}{'tumult clip':>16}")
    for r in rows:
        if r["epsilon"] != eps:
            continue
        ms = r["methods"]
        vals = "".join(f"{fmt(ms[n]['rel_rmse_mean'], 3) if n in ms else '—':>14}"
                       for n in names)

        def clip(m: str, ms: dict[str, Any] = ms) -> str:
            s = ms.get(m, {})
            if "clipped_low_mean" not in s:
                return "—"
            return f"{s['clipped_low_mean']:.0f}/{s['clipped_high_mean']:.0f}"
        print(f"{r['table'] + '/' + r['column']:<28}{vals}"
              f"{fmt(r.get('ratio_mean'), 3):>8}{clip(DPRECT):>16}{clip('tumult'):>16}")


def mechanism_fingerprint() -> str:
    """A hash of dprect's core sources: a cached run of dprect's side is reused only
    while the mechanism that drew it is unchanged."""
    import hashlib

    import dprect
    core = Path(dprect.__file__).resolve().parent / "core"
    h = hashlib.sha256()
    for f in sorted(core.glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def dprect_side(manifest: dict[str, Any], requested: str) -> tuple[str, list[dict[str, Any]]]:
    """dprect's cells, reused from ``benchmarks/output/peers/dprect_<route>.json`` when
    that file holds the same runs and ε (dprect is seeded: a re-run gives the same cells),
    else computed and written there."""
    import peers_layout as pr
    from peers_dprect import dprect_cells, route
    how = route(requested)
    cache = pr.REPO / pr.OUT / f"dprect_{how}.json"
    code = mechanism_fingerprint()
    if cache.exists():
        saved = json.loads(cache.read_text())
        if (saved.get("route") == how and saved.get("runs") == manifest["runs"]
                and saved.get("epsilons") == manifest["epsilons"]
                and saved.get("code") == code):
            return how, saved["cells"]
    how, cells = dprect_cells(manifest, how)
    cache.write_text(json.dumps({"route": how, "runs": manifest["runs"],
                                 "epsilons": manifest["epsilons"], "code": code,
                                 "cells": cells}))
    return how, cells


def compare(requested: str = "auto", dprect_file: str | None = None) -> dict[str, Any]:
    """Run dprect on the manifest's columns (or take its cells from ``dprect_file``, a
    ``{"route", "cells"}`` JSON), compare with the collected peers, write
    ``docs/figures/bounds_compare.json`` and print the tables."""
    import peers_layout as pr
    repo = pr.REPO
    manifest = json.loads((repo / pr.MANIFEST).read_text())
    peers = json.loads((repo / pr.PEERS_JSON).read_text())
    if dprect_file:
        saved = json.loads(Path(dprect_file).read_text())
        how, mine = saved["route"], saved["cells"]
    else:
        how, mine = dprect_side(manifest, requested)
    rows = rows_against_peers(manifest, peers["cells"], mine)
    data = {"dprect_route": how, "runs": manifest["runs"], "epsilons": manifest["epsilons"],
            "libraries": peers["libraries"], "summary_real": summary(rows),
            "summary_synthetic": summary(rows, synthetic=True), "rows": rows}
    Path(repo / pr.COMPARE_JSON).write_text(json.dumps(finite(data), indent=1) + "\n")
    for eps in manifest["epsilons"]:
        print_table(rows, float(eps))
    for s in data["summary_real"]:
        print(f"real columns, {summary_line(s)}")
    return data


def rows_against_peers(manifest: dict[str, Any], peer_cells: list[dict[str, Any]],
                       mine: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`compare_cells` of dprect's cells ``mine`` against the peers' cells and the
    Tumult re-implementation (used per cell only where the real Tumult's is missing), on
    the manifest's columns: what :func:`compare` writes, and what
    ``benchmarks/describe_split_scan.py`` reads for other constants."""
    import peers_layout as pr
    from peers_standin import standin_cells
    return compare_cells(manifest["columns"], [*peer_cells, *mine, *standin_cells(manifest)],
                         lambda c: np.load(pr.REPO / c["npy"]))


def summary_line(s: dict[str, Any]) -> str:
    """One ε of :func:`summary` as a line."""
    return (f"ε = {s['epsilon']:g}: dprect ≤ best peer in {s['at_most_best_mean']}/"
            f"{s['columns']} (sum {s['at_most_best_sum']}), ≤ 1.25× in "
            f"{s['within_1.25_mean']}, median ratio {fmt(s['median_ratio_mean'])}, worst "
            f"{fmt(s['worst_ratio_mean'])} ({s['worst_column']}); best peer: "
            f"{s['best_peer_counts']}; clipping check passes on {s['clip_check_passes']}/"
            f"{s['clip_check_columns']} columns")


SHORT = {DPRECT: "dprect", "google": "google", "opendp-q0.001": "opendp q.001",
         "opendp-q0.01": "opendp q.01", "tumult": "tumult", STANDIN: "tumult (re-impl.)"}


def markdown(data: dict[str, Any], eps: float) -> str:
    """The per-column table at ``eps`` (relative RMSE of the DP mean, ratio, clipped rows
    per side) and the summary lines, as Markdown for docs/results.md §5. A value from
    fewer runs than the protocol's (``data["runs"]``: a peer cell kept from an earlier,
    shorter run) is marked with its run count, e.g. ``0.0123 (20)``."""
    rows = [r for r in data["rows"] if r["epsilon"] == eps]
    names = [m for m in (DPRECT, *PEER_ORDER, STANDIN)
             if any(m in r["methods"] for r in rows)]
    head = ["column", *(SHORT[m] for m in names), "ratio", "dprect clipped low/high",
            "dprect width"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" + "---:|" * (len(head) - 1)]
    for r in rows:
        ms = r["methods"]
        d = ms.get(DPRECT, {})
        clip = (f"{d['clipped_low_mean']:.0f} / {d['clipped_high_mean']:.0f}"
                if "clipped_low_mean" in d else "—")
        cells = [_with_runs(ms[m], data["runs"]) if m in ms else "—" for m in names]
        best = r.get("best_peer_mean")
        if best in names:
            i = names.index(best)
            cells[i] = f"**{cells[i]}**"
        lines.append(f"| {r['table']}/{r['column']} | " + " | ".join(cells) +
                     f" | {fmt(r.get('ratio_mean'))} | {clip} | "
                     f"{fmt(d.get('width_median'))} |")
    return "\n".join(lines)


def _with_runs(method: dict[str, Any], runs: int) -> str:
    """A method's relative RMSE of the mean, with its run count when below ``runs``."""
    text = fmt(method["rel_rmse_mean"])
    return text if method["runs"] >= runs else f"{text} ({method['runs']})"


def clip_markdown(data: dict[str, Any]) -> str:
    """The clipping check per column (rows) and ε (columns) as Markdown: each side's share
    of runs within 1/(2ε_q) + 20/ε_b, the mean clipped rows low/high, ✓ when it passes
    (— for a column of at most 1,000 rows or without dprect's plan)."""
    epsilons = sorted({r["epsilon"] for r in data["rows"]})
    lim = {e: next((r["methods"][DPRECT]["clip_check"]["limit"] for r in data["rows"]
                    if r["epsilon"] == e and "clip_check" in r["methods"].get(DPRECT, {})),
                   None) for e in epsilons}
    head = ["column", "n", *(f"ε = {e:g} (limit {lim[e]:.1f})" if lim[e] else f"ε = {e:g}"
                            for e in epsilons)]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    keys = []
    for r in data["rows"]:
        k = (r["table"], r["column"])
        if k not in keys:
            keys.append(k)
    for t, c in keys:
        cells = []
        n = 0
        for e in epsilons:
            r = next((r for r in data["rows"] if (r["table"], r["column"], r["epsilon"])
                      == (t, c, e)), None)
            d = {} if r is None else r["methods"].get(DPRECT, {})
            n = r["n"] if r else n
            ch = d.get("clip_check")
            if ch is None:
                cells.append("—")
                continue
            mark = {True: "✓", False: "✗", None: "—"}[ch["passes"]]
            cells.append(f"{d['clipped_low_mean']:.0f} / {d['clipped_high_mean']:.0f} "
                         f"({min(ch['share_low'], ch['share_high']):.0%}) {mark}")
        lines.append(f"| {t}/{c} | {n:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    doc = json.loads(Path(sys.argv[1]).read_text())
    if len(sys.argv) > 2 and sys.argv[2] == "clip":
        print(clip_markdown(doc))
    else:
        print(markdown(doc, float(sys.argv[2]) if len(sys.argv) > 2 else 1.0))
