"""Planner vs the independent guarantee check on many random plans (issue #21).

    python benchmarks/guarantee_check.py [--plans 10000] [--seed 0] [--output PATH]

Draws random requests — mixes of every domain kind (Grid, IntegerRange, FloatBins and
FloatOrder of random sizes), d from 1 to 2,048, ε in [0.05, 30], δ (0 included), β, both
neighbouring relations, every method, accounting, margin law and shape — plans each one
(``dprect.plan`` runs the check on the chosen plan) and checks every candidate as well
(:func:`dprect.core.guarantee_check.check_fit_plan`), plus as many random private-bounds
plans. Counts the plans the check verified, the requests the planner refused for their
parameters (plan-time limits; no plan to check), and the plans the check refused (a bug:
the run exits 1). Writes the counts and the routes that verified to ``--output``
(default docs/figures/guarantee_check.json). The test suite runs a sample of the same
kind of requests (tests/core/test_guarantee_check.py); this is the full count.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

import dprect
from dprect.core.bounds import BoundsRequest, plan_bounds
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import GuaranteeCheckError, check_fit_plan

DOCS = Path(__file__).resolve().parent.parent / "docs" / "figures" / "guarantee_check.json"


def _domain(gen: np.random.Generator) -> dprect.Domain:
    kind = int(gen.integers(4))
    bits = int(gen.integers(1, 41))
    if kind == 0:
        return dprect.Grid(-1.0, 1.0, 2**bits)
    if kind == 1:
        lo = int(gen.integers(-1000, 1001))
        return dprect.IntegerRange(lo, lo + 2**bits - 1)
    if kind == 2:
        return dprect.FloatBins(1 + bits % 20)
    return dprect.FloatOrder()


def _dims(gen: np.random.Generator) -> int:
    u = gen.random()
    if u < 0.70:
        return int(gen.integers(1, 13))
    if u < 0.96:
        return int(gen.integers(13, 201))
    return int(gen.choice([512, 1024, 2048]))


def _pick(gen: np.random.Generator, options: list):
    return options[int(gen.integers(len(options)))]


def fit_request(gen: np.random.Generator) -> tuple[list, dict]:
    palette = [_domain(gen) for _ in range(int(gen.integers(1, 5)))]
    domains = [_pick(gen, palette) for _ in range(_dims(gen))]
    options = {
        "epsilon": float(np.exp(gen.uniform(np.log(0.05), np.log(30.0)))),
        "delta": _pick(gen, [0.0, 1e-12, 1e-9, 1e-6, 1e-4, 1e-2]),
        "beta": _pick(gen, [1e-6, 1e-4, 1e-2, 0.2]),
        "neighbouring": _pick(gen, ["add-remove", "replace-one"]),
        "method": _pick(gen, ["auto", "randmargins", "composition"]),
        "accounting": _pick(gen, ["refined", "refined", "paper"]),
        "margin_law": _pick(gen, ["staircase", "staircase", "laplace"]),
        "shape": _pick(gen, ["general", "general", "origin"]),
    }
    return domains, options


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plans", type=int, default=10_000, help="fit plans to verify")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", type=Path, default=DOCS)
    args = ap.parse_args()
    gen = np.random.default_rng(args.seed)
    counts: collections.Counter[str] = collections.Counter()
    routes: collections.Counter[str] = collections.Counter()
    refused: list[dict] = []
    t0 = time.perf_counter()
    requests = 0
    while counts["fit plans verified"] + len(refused) < args.plans:
        requests += 1
        domains, options = fit_request(gen)
        _bounds_plan(gen, options, counts, refused)
        try:
            p = dprect.plan(domains=domains, **options)
        except GuaranteeCheckError as exc:
            refused.append({"request": options, "dims": len(domains), "error": str(exc)})
            continue
        except ParameterError:
            counts["fit requests refused for their parameters (no plan)"] += 1
            continue
        counts["fit plans verified"] += 1
        assert p.check is not None
        routes[re.sub(r"\d+", "N", p.check.route.split(";")[0])] += 1
        for candidate in p.candidates.values():
            try:
                check_fit_plan(candidate, domains, beta=options["beta"],
                               shape=options["shape"])
                counts["fit candidates verified"] += 1
            except GuaranteeCheckError as exc:
                refused.append({"request": options, "candidate": candidate.method,
                                "error": str(exc)})
        if counts["fit plans verified"] % 1000 == 0:
            print(f"{counts['fit plans verified']:,} plans, {time.perf_counter() - t0:.0f} s, "
                  f"{len(refused)} refused", flush=True)
    out = {"fit plans wanted": args.plans, "requests drawn": requests, "seed": args.seed,
           **counts,
           "plans refused by the check": len(refused), "refused": refused[:20],
           "routes of the chosen plans": dict(routes.most_common()),
           "seconds": round(time.perf_counter() - t0, 1)}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "refused"}, indent=1))
    return 1 if refused else 0


def _bounds_plan(gen: np.random.Generator, options: dict, counts: collections.Counter[str],
                 refused: list[dict]) -> None:
    """One random private-bounds plan at the request's budget, through the check."""
    d = int(gen.integers(1, 300))
    request = BoundsRequest(options["epsilon"], delta=options["delta"],
                            neighbouring=options["neighbouring"],
                            coverage=float(gen.uniform(0.5, 0.9999)))
    try:
        plan_bounds(request, [dprect.FloatBins(int(gen.integers(1, 21)))] * d)
        counts["bounds plans verified"] += 1
    except GuaranteeCheckError as exc:
        refused.append({"bounds": request.to_json(), "error": str(exc)})


if __name__ == "__main__":
    sys.exit(main())
