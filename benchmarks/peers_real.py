"""Private bounds and DP aggregates beside the REAL peer libraries (issue #23, part 3).

Each peer runs its own released library, installed from PyPI into its own virtual
environment under ``.bench-venvs/`` by ``make bench-peers-venvs`` (nothing is downloaded at
run time), and is driven by a runner script in ``benchmarks/peers/`` executed inside that
environment as a subprocess:

* ``google`` — ``python-dp`` 1.1.5 (Google's differential-privacy library):
  ``BoundedMean`` / ``BoundedSum`` with ``dtype="float"``, ``delta=0`` and NO bounds, so
  the library runs its ApproxBounds and splits ε itself (``benchmarks/peers/run_google.py``).
* ``opendp-q0.001`` and ``opendp-q0.01`` — OpenDP 0.16: the lower bound at α and the
  upper at 1 − α by ``make_private_quantile`` (pure DP, unknown n) over a scale-free public
  candidate grid, then ``make_clamp`` >> ``then_sum`` >> ``then_laplace`` and
  ``make_count`` >> ``then_laplace``; mean = noisy sum / noisy count
  (``benchmarks/peers/run_opendp.py``).
* ``tumult`` — Tumult Analytics 0.21 (on its own pyspark 3.5): ``QueryBuilder.get_bounds``
  then ``average`` / ``sum`` with those bounds, pure DP (``PureDPBudget``, ``AddOneRow``)
  (``benchmarks/peers/run_tumult.py``).

Every method gets the same ε per column (0.5, 1 and 4), δ = 0. How each splits it: the
runners' docstrings. The DP mean and the DP sum are two alternative queries, each charged
ε on its own (bounds + that aggregate).

Data: the 35 real columns and 4 heavy-tailed synthetic ones of ``benchmarks/bounds.py``
(its loaders; ``benchmarks/requirements-real.txt``). ``prepare`` writes each column's
finite values to ``benchmarks/output/peers/cache/`` (``.npy`` and ``.parquet``) and a
manifest; a runner appends one JSON line per (peer, column, ε) with every run's released
mean, sum and (where the library exposes them) bounds; ``collect`` gathers the lines into
``docs/figures/bounds_peers.json`` (the peers do not depend on dprect's code: they run
once). ``compare`` runs dprect on the same columns (``benchmarks/peers_dprect.py``) and
writes ``docs/figures/bounds_compare.json``: per column and ε, every method's relative
RMSE of the mean and of the sum, clipped rows per side, bound width, and dprect's ratio to
the best real peer.

Usage: ``python benchmarks/peers_real.py [prepare|run PEER|collect|compare|all]``
(``make bench-peers`` = ``all``: prepare, run each peer whose results are missing, collect,
compare; ``make bench-peers-compare`` = prepare + compare: dprect's side only, against the
committed peer runs). ``--runs`` (100: the committed evidence's count, the same for every
method) and ``--epsilons`` (1, 0.5, 4: the headline first) are public settings.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "peers"))

from peers_layout import (  # noqa: E402
    CACHE,
    MANIFEST,
    OUT,
    PEERS_JSON,
    REPO,
    VENVS,
)

SYNTHETIC_ROWS = 100_000
SEED = 20140414

# runner, its venv, the pip requirement (make bench-peers-venvs installs these)
RUNNERS = {
    "google": ("run_google.py", "pydp", "python-dp==1.1.5"),
    "opendp": ("run_opendp.py", "opendp", "opendp==0.16.*"),
    "tumult": ("run_tumult.py", "tumult", "tmlt.analytics==0.21.*"),
}


def tables() -> list[Any]:
    import bounds as b
    real, missing = b.load_real(None)
    if missing:
        raise SystemExit(f"missing data packages: {', '.join(missing)} "
                         f"(pip install -r {b.REQUIREMENTS})")
    return [*real, b.heavy_tailed(SYNTHETIC_ROWS, SEED)]


def prepare(runs: int, epsilons: list[float]) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    (REPO / CACHE).mkdir(parents=True, exist_ok=True)
    columns = []
    for t in tables():
        for c in t.columns:
            stem = CACHE / f"{t.name}__{c.name}"
            npy, parquet = stem.with_suffix(".npy"), stem.with_suffix(".parquet")
            np.save(REPO / npy, c.values)
            pq.write_table(pa.table({"x": pa.array(c.values, pa.float64())}), REPO / parquet)
            columns.append({"table": t.name, "column": c.name, "n": c.n,
                            "synthetic": t.synthetic, "npy": str(npy),
                            "parquet": str(parquet), "true_sum": float(np.sum(c.values)),
                            "min": float(c.values[0]), "max": float(c.values[-1])})
    manifest = {"runs": runs, "epsilons": epsilons, "columns": columns}
    (REPO / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def run_peer(peer: str) -> int:
    script, venv, _ = RUNNERS[peer]
    python = REPO / VENVS / venv / "bin" / "python"
    if not python.exists():
        print(f"{peer}: no virtual environment at {VENVS / venv} (make bench-peers-venvs)",
              file=sys.stderr)
        return 2
    start = time.perf_counter()
    rc = subprocess.call([str(python), str(Path("benchmarks/peers") / script),
                          "--manifest", str(MANIFEST), "--out", str(OUT / f"{peer}.jsonl")],
                         cwd=REPO)
    print(f"{peer}: exit {rc} after {time.perf_counter() - start:.0f} s")
    return rc


def collect() -> dict[str, Any]:
    """Every runner's JSON lines → ``bounds_peers.json`` (one entry per peer cell). The
    cells already in ``bounds_peers.json`` are kept unless a runner's line replaces them,
    so a fresh clone (no JSON lines) never loses the committed peer runs."""
    from peer_common import key, parse_lines
    manifest = json.loads((REPO / MANIFEST).read_text())
    merged: dict[str, dict[str, Any]] = {}
    if (REPO / PEERS_JSON).exists():
        for c in json.loads((REPO / PEERS_JSON).read_text())["cells"]:
            merged[key(c["peer"], c["table"], c["column"], c["epsilon"])] = c
    for peer in RUNNERS:
        path = REPO / OUT / f"{peer}.jsonl"
        if path.exists():
            for c in parse_lines(path.read_text()):
                merged[key(c["peer"], c["table"], c["column"], c["epsilon"])] = c
    cells = list(merged.values())
    libraries = sorted({(c["peer"], c["library"], c["version"]) for c in cells})
    data = {"runs": manifest["runs"], "epsilons": manifest["epsilons"],
            "libraries": [{"peer": p, "library": lib, "version": v}
                          for p, lib, v in libraries],
            "columns": [{k: c[k] for k in ("table", "column", "n", "synthetic", "min",
                                            "max", "true_sum")}
                        for c in manifest["columns"]],
            "cells": cells}
    (REPO / PEERS_JSON).write_text(json.dumps(data, allow_nan=False) + "\n")
    print(f"{len(cells)} peer cells → {PEERS_JSON}")
    return data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("step", nargs="?", default="all",
                   choices=["prepare", "run", "collect", "compare", "all"])
    p.add_argument("peer", nargs="?", choices=sorted(RUNNERS))
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 0.5, 4.0])
    p.add_argument("--dprect", choices=["auto", "describe", "bounds"], default="auto",
                   help="dprect's route (benchmarks/peers_dprect.py; auto: describe if "
                        "this tree has it)")
    p.add_argument("--dprect-cells", metavar="FILE",
                   help="compare: take dprect's cells from FILE ({route, cells} JSON)")
    p.add_argument("--peers", nargs="+", choices=sorted(RUNNERS), default=list(RUNNERS),
                   help="the peers `all` runs (default every one)")
    args = p.parse_args(argv)
    if args.step in ("prepare", "all"):
        prepare(args.runs, args.epsilons)
    if args.step == "run":
        if not args.peer:
            p.error("run needs a peer")
        return run_peer(args.peer)
    if args.step == "all":
        for peer in args.peers:
            run_peer(peer)
    if args.step in ("collect", "all"):
        collect()
    if args.step in ("compare", "all"):
        from peers_compare import compare
        compare(args.dprect, args.dprect_cells)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
