"""The rectangle on small standardised tables (issue #44, s34-zero): positives around zero.

Standardised features (mean 0, sd 1) are what many users feed a model. On the float order
(no public bounds) the unaimed quantile box's centre on such data lands among the tiny
floats: the depth mechanism's depth is flat over the ~2,000 empty binades between the
smallest rows of each sign. This runs ``small_tables.py``'s harness (dprect's columns,
the REAL peers' per-feature DP-quantile boxes, FN, FP, the balanced error and issue #44's
verdict per cell) on synthetic tables: positives of three standardised shapes —
normal(0, 1), uniform(−√3, √3) and a skewed one (lognormal(0, 0.75), standardised by its
own mean and sd) — at N ∈ {50, 100, 200} and d ∈ {4, 10}, every axis independent; the
negatives 2N rows of the same shape at twice the scale (a class around the positives'
core: the box's FP is the share of them inside). ε ∈ {0.5, 1, 4}, δ = 10⁻⁶, seeded.
The peers' boxes are cached in benchmarks/output/standardised_peers/ (they do not depend
on dprect's code). Writes ``standardised_small.json`` (docs/figures/, or
benchmarks/output/ with ``--quick``) and prints ``small_tables.py``'s line per cell.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import small_tables as st
from evidence_common import output_dir, write_json

from dprect.core.domains import FloatOrder

SIZES = (50, 100, 200)
DIMS = (4, 10)


def _shape(name: str, rows: int, d: int, g: np.random.Generator) -> np.ndarray:
    if name == "normal":
        return g.normal(0.0, 1.0, (rows, d))
    if name == "uniform":
        return g.uniform(-np.sqrt(3.0), np.sqrt(3.0), (rows, d))
    x = g.lognormal(0.0, 0.75, (rows, d))  # skewed; standardised by its law's moments
    mean, var = np.exp(0.75**2 / 2), (np.exp(0.75**2) - 1) * np.exp(0.75**2)
    return (x - mean) / np.sqrt(var)


def tables(sizes: tuple[int, ...], dims: tuple[int, ...]) -> list[Any]:
    import real_data as rd

    out = []
    for shape in ("normal", "uniform", "skewed"):
        for n in sizes:
            for d in dims:
                g = np.random.default_rng(st._seed(shape, n, d))
                pos, neg = _shape(shape, n, d, g), 2.0 * _shape(shape, 2 * n, d, g)
                X = np.vstack([pos, neg])
                y = np.arange(3 * n) < n
                out.append(rd.Table(f"{shape}-{n}x{d}", "synthetic", "-",
                                    "the first N rows", [f"x{j}" for j in range(d)],
                                    [FloatOrder()] * d, ["float order"] * d, X, y,
                                    synthetic=True))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--venv", action="append", default=[], metavar="PEER=PATH")
    args = ap.parse_args(argv)
    venvs = {k: Path(v) for k, v in (item.split("=", 1) for item in args.venv)}
    st.CACHE = st.HERE / "output" / "standardised_peers"
    sizes, dims = ((50,), (4,)) if args.quick else (SIZES, DIMS)
    trials = 2 if args.quick else args.trials
    rows = st.run(tables(sizes, dims), trials, venvs)
    passed = sum(bool(r.get("pass")) for r in rows)
    print(f"auto passes issue #44's acceptance in {passed} of {len(rows)} cells",
          file=sys.stderr)
    write_json(output_dir(args.out, args.quick) / "standardised_small.json",
               {"trials": trials, "cells": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
