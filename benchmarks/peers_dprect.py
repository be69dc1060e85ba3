"""dprect's side of ``benchmarks/peers_real.py``: the same columns, ε and number of runs as
the real peers, each run a DP mean and a DP sum with bounds found privately.

Two routes, chosen by ``--dprect`` (default ``auto``: ``describe`` when this tree has it):

* ``describe`` — ``dprect.describe(column, epsilon=ε)`` (issue #23's DP aggregates with
  bounds aimed at the query): one charge of ε per column releases the bounds, the count,
  the sum and the mean together, so dprect's mean and sum come from ONE ε release where
  every peer is charged ε for each of them separately.
* ``bounds`` — today's ``dprect.bounds`` (``FloatBins(12)``, coverage 0.999, β = 10⁻³,
  pure) at ε/2, then, as ``benchmarks/bounds.py`` does it, a midpoint-centred noisy
  clamped sum over a noisy count at ε/4 each (mean) and a noisy clamped sum at ε/2 (sum),
  Laplace noise from numpy (a benchmark on public data, not a release).

Runs are seeded (one seed per column, ε and run), so dprect's side is reproducible; seeded
runs are not private and are used only on public data.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import numpy as np


def seed_of(*parts: Any) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def has_describe() -> bool:
    import dprect
    return hasattr(dprect, "describe")


def route(requested: str) -> str:
    if requested == "auto":
        return "describe" if has_describe() else "bounds"
    if requested == "describe" and not has_describe():
        raise SystemExit("this tree has no dprect.describe (use --dprect bounds)")
    return requested


def runs_describe(values: np.ndarray, eps: float, seeds: list[int]) -> list[dict[str, Any]]:
    """``dprect.describe(column, epsilon=eps, seed=seed)`` for each seed, through the core
    it calls (:func:`dprect.core.aggregates.run_describe` with the same plan and seeded
    source: the same draws, ``tests/test_peers_bench.py`` checks it) so the column's
    reading and plan are done once, not once per run."""
    from dprect.core.aggregates import plan_describe, run_describe
    from dprect.core.randomness import RandomSource
    x = np.asarray(values, dtype=np.float64)
    cell_values = {(None, 0): x[np.isfinite(x)]}
    plan = plan_describe(eps, 1)
    out = []
    for seed in seeds:
        res = run_describe(plan, cell_values, [None], ["x"], RandomSource(seed=seed))
        cell = res.cells[0][0]
        out.append({"mean": _num(cell.mean), "sum": _num(cell.sum),
                     "lower": _num(cell.lower), "upper": _num(cell.upper)})
    return out


def describe_plan_epsilons(eps: float) -> dict[str, float]:
    """The ε of the issue's clipping check for one column at ``eps``: ε_q, the query's ε
    on the clamped sum (``plan.sum_epsilon``), and ε_b, the bounds' ε per column (centre
    + threshold + steps, ``plan.bounds_epsilon``)."""
    from dprect.core.aggregates import plan_describe
    plan = plan_describe(eps, 1)
    return {"query_sum_epsilon": plan.sum_epsilon, "bounds_epsilon": plan.bounds_epsilon}


def runs_bounds(values: np.ndarray, eps: float, seeds: list[int]) -> list[dict[str, Any]]:
    import dprect
    data = values.reshape(-1, 1)
    n = len(values)
    out: list[dict[str, Any]] = []
    for seed in seeds:
        res = dprect.bounds(data, ["x"], epsilon=eps / 2, delta=0.0, seed=seed)
        lo, hi = float(res.lower[0][0]), float(res.upper[0][0])
        if not (math.isfinite(lo) and math.isfinite(hi)):
            out.append({"mean": None, "sum": None, "lower": None, "upper": None})
            continue
        lo, hi = min(lo, hi), max(lo, hi)
        rng = np.random.default_rng([seed, 23])
        clamped = float(np.clip(values, lo, hi).sum())
        mid = lo / 2 + hi / 2
        e4 = eps / 4
        noisy_count = max(1.0, n + rng.laplace(0.0, 1.0 / e4))
        centred = clamped - n * mid + rng.laplace(0.0, ((hi - lo) / 2) / e4)
        total = clamped + rng.laplace(0.0, max(abs(lo), abs(hi)) / (eps / 2))
        out.append({"mean": mid + centred / noisy_count, "sum": total,
                    "lower": lo, "upper": hi})
    return out


def _num(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def dprect_cells(manifest: dict[str, Any], requested: str = "auto",
                 seed: int = 20140414) -> tuple[str, list[dict[str, Any]]]:
    """(route, one cell per column and ε, in the peer cells' format)."""
    from evidence_common import seeded_runs_allowed

    import dprect
    how = route(requested)
    fn = runs_describe if how == "describe" else runs_bounds
    cells = []
    with seeded_runs_allowed():
        for col in manifest["columns"]:
            values = np.load(col["npy"]).astype(np.float64)
            for eps in manifest["epsilons"]:
                seeds = [seed_of(seed, col["table"], col["column"], eps, r)
                         for r in range(int(manifest["runs"]))]
                import time
                start = time.perf_counter()
                runs = fn(values, float(eps), seeds)
                cell = {"peer": "dprect", "library": f"dprect ({how})",
                        "version": dprect.__version__, "table": col["table"],
                        "column": col["column"], "epsilon": float(eps),
                        "seconds": round(time.perf_counter() - start, 3), "runs": runs}
                if how == "describe":
                    cell["plan"] = describe_plan_epsilons(float(eps))
                cells.append(cell)
    return how, cells
