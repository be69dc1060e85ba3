"""A stand-in for a peer library that could not run here: Tumult Analytics' ``get_bounds``
as re-implemented in ``benchmarks/bounds.py`` (class ``Tumult``: symmetric (−2^k, 2^k), k
by AboveThreshold on the 95% prefix count), with the same per-column protocol as the real
runners: bounds at ε/2; mean at ε/2 as a midpoint-centred noisy clamped sum over a noisy
count (ε/4 each); sum at ε/2 (Σ clamp + Laplace(max(|L|, |U|)/(ε/2))). Laplace noise from
numpy, seeded (a benchmark on public data). Used only where the real library's runs are
missing, and labelled ``tumult-reimpl``.
"""

from __future__ import annotations

import time
import zlib
from typing import Any

import numpy as np

STANDIN = "tumult-reimpl"


def standin_cells(manifest: dict[str, Any], seed: int = 20140414) -> list[dict[str, Any]]:
    import bounds as b
    cells = []
    for col in manifest["columns"]:
        values = np.sort(np.load(col["npy"]).astype(np.float64))
        column = b.Column(col["column"], values)
        mech = b.Tumult(column)
        n = len(values)
        for eps in manifest["epsilons"]:
            start = time.perf_counter()
            tag = zlib.crc32(f"{col['table']}/{col['column']}/{eps}".encode())
            rng = np.random.default_rng([seed, tag, 23])
            runs = []
            for _ in range(int(manifest["runs"])):
                lo, hi, _failed = mech.bounds(float(eps) / 2, rng)
                clamped = column.clamp_stats(lo, hi)[2]
                mid = lo / 2 + hi / 2
                e4 = float(eps) / 4
                count = max(1.0, n + rng.laplace(0.0, 1.0 / e4))
                centred = clamped - n * mid + rng.laplace(0.0, ((hi - lo) / 2) / e4)
                total = clamped + rng.laplace(0.0, max(abs(lo), abs(hi)) / (2 * e4))
                runs.append({"mean": mid + centred / count, "sum": total, "lower": lo,
                             "upper": hi})
            cells.append({"peer": STANDIN, "library": "re-implementation (bounds.py)",
                          "version": "-", "table": col["table"], "column": col["column"],
                          "epsilon": float(eps),
                          "seconds": round(time.perf_counter() - start, 3), "runs": runs})
    return cells
