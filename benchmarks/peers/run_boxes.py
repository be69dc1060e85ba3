"""The REAL peer libraries' per-feature private boxes for the small-tables benchmark (issue
#44; driven by ``benchmarks/small_tables.py``, one process per library inside its own
virtual environment: ``opendp`` 0.16, ``diffprivlib`` 0.6.6, ``pydp`` = python-dp 1.1.5).

A box is, per feature of the positive rows, a private α-quantile as its lower bound and a
private (1 − α)-quantile as its upper bound; the 2d quantiles share ε by basic composition
(ε/(2d) each), as each library offers one quantile per call:

* ``opendp``: ``make_private_quantile`` (pure DP, ``max_divergence``; unknown n: the
  symmetric distance) over public candidates; its noise scale is the smallest whose own
  privacy map gives ≤ ε/(2d).
* ``diffprivlib``: ``tools.quantile(x, [α, 1 − α], epsilon=ε/d, bounds=...)`` (the
  library splits its ε evenly over the quantiles it is asked for: ε/(2d) each), a fresh
  ``BudgetAccountant`` per call.
* ``pydp``: ``Percentile(epsilon=ε/(2d), percentile=q, lower_bound, upper_bound)``.

Public inputs, from the benchmark's domains: on a grid the features are its indices, the
candidates every index and the bounds [0, size − 1]; on the float order (no public range)
the values themselves, the scale-free candidates {0} ∪ {±10^(k/100): k = −400..400} and
the bounds [−10⁴, 10⁴] they span. A crossed pair (lower > upper) is kept: that axis, and
so the box, is empty (what the library released); a call the library could not answer
(it raised) is null, and its run's box is counted as empty.

Usage: ``python run_boxes.py PEER MANIFEST OUT`` (JSON in, JSON out). The manifest:
``{"alpha", "runs", "epsilons": [...], "tables": [{"name", "features": [{"npy", "lower",
"upper", "candidates"}]}]}`` (``candidates``: an ``.npy`` path); the output:
``{"library", "version", "boxes": {table: {str(ε): [{"lo": [...], "hi": [...]}, ...]}}}``.
numpy and the standard library only besides the peer (dprect is not installed there).
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

LIBRARIES = {"opendp": "opendp", "diffprivlib": "diffprivlib", "pydp": "python-dp"}


def opendp_pair() -> Callable[[np.ndarray, dict[str, Any], float, float], tuple[float, float]]:
    import opendp.prelude as dp
    dp.enable_features("contrib")
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance())
    made: dict[tuple[str, float, float], Any] = {}

    def measurement(cands: list[float], key: str, alpha: float, eps: float) -> Any:
        if (key, alpha, eps) not in made:  # the smallest scale whose map(1) ≤ ε
            scale = 2 * max(alpha, 1 - alpha) / eps
            for _ in range(60):
                m = dp.m.make_private_quantile(*space, dp.max_divergence(), cands, alpha,
                                               scale)
                if m.map(1) <= eps:
                    made[(key, alpha, eps)] = m
                    break
                scale *= 1.0 + 1e-9
            else:
                raise RuntimeError("could not calibrate")
        return made[(key, alpha, eps)]

    def pair(x: np.ndarray, feature: dict[str, Any], alpha: float, eps_q: float
             ) -> tuple[float, float]:
        cands = [float(c) for c in np.load(feature["candidates"])]
        key = feature["candidates"]
        lo = measurement(cands, key, alpha, eps_q)(x.tolist())
        hi = measurement(cands, key, 1 - alpha, eps_q)(x.tolist())
        return float(lo), float(hi)

    return pair


def diffprivlib_pair() -> Callable[[np.ndarray, dict[str, Any], float, float],
                                   tuple[float, float]]:
    from diffprivlib import BudgetAccountant
    from diffprivlib.tools import quantile

    def pair(x: np.ndarray, feature: dict[str, Any], alpha: float, eps_q: float
             ) -> tuple[float, float]:
        lo, hi = quantile(x, [alpha, 1 - alpha], epsilon=2 * eps_q,
                          bounds=(feature["lower"], feature["upper"]),
                          accountant=BudgetAccountant())
        return float(lo), float(hi)

    return pair


def pydp_pair() -> Callable[[np.ndarray, dict[str, Any], float, float], tuple[float, float]]:
    from pydp.algorithms.laplacian import Percentile

    def one(x: list[float], feature: dict[str, Any], q: float, eps_q: float) -> float:
        return float(Percentile(epsilon=eps_q, percentile=q, lower_bound=feature["lower"],
                                upper_bound=feature["upper"], dtype="float").quick_result(x))

    def pair(x: np.ndarray, feature: dict[str, Any], alpha: float, eps_q: float
             ) -> tuple[float, float]:
        values = x.tolist()
        return one(values, feature, alpha, eps_q), one(values, feature, 1 - alpha, eps_q)

    return pair


def released(pair: Callable[[np.ndarray, dict[str, Any], float, float], tuple[float, float]],
             x: np.ndarray, feature: dict[str, Any], alpha: float, eps_q: float
             ) -> tuple[float | None, float | None]:
    """A feature's pair, or (None, None) where the library raised (diffprivlib's
    exponential mechanism overflows to NaN probabilities on tens of thousands of rows):
    counted downstream as a failed run, whose box is empty."""
    try:
        return pair(x, feature, alpha, eps_q)
    except (RuntimeError, ValueError, OverflowError):
        return None, None


def main() -> None:
    peer, manifest_path, out_path = sys.argv[1:4]
    manifest = json.loads(Path(manifest_path).read_text())
    pair = {"opendp": opendp_pair, "diffprivlib": diffprivlib_pair, "pydp": pydp_pair}[peer]()
    alpha, runs = float(manifest["alpha"]), int(manifest["runs"])
    boxes: dict[str, dict[str, list[dict[str, list[float]]]]] = {}
    for table in manifest["tables"]:
        feats = table["features"]
        cols = [np.load(f["npy"]).astype(np.float64) for f in feats]
        per_eps: dict[str, list[dict[str, list[float]]]] = {}
        for eps in manifest["epsilons"]:
            eps_q = float(eps) / (2 * len(feats))
            out = []
            for _ in range(runs):
                got = [released(pair, x, f, alpha, eps_q)
                       for x, f in zip(cols, feats, strict=True)]
                out.append({"lo": [g[0] for g in got], "hi": [g[1] for g in got]})
            per_eps[str(float(eps))] = out
        boxes[table["name"]] = per_eps
        print(f"{peer} {table['name']} done", flush=True)
    Path(out_path).write_text(json.dumps({
        "library": LIBRARIES[peer], "version": importlib.metadata.version(LIBRARIES[peer]),
        "boxes": boxes}))


if __name__ == "__main__":
    main()
