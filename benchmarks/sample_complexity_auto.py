"""§1's cells where ``auto`` at a public N = n takes the quantile box (issue #44): the box
beside composition on exactly the datasets and seeds of ``sample_complexity.py``.

§1 (docs/results.md §1) runs forced methods, and its ``auto`` choices are taken at N = ∞,
where the box is no candidate. A fit that knows N (a public estimate, or auto's private
count) may take the aimed box there (``planner._safe_choice``); this script measures, on
each of §1's cells (d, n) where ``dprect.plan(..., positives=n)`` now chooses it, the
box against composition on §1's own metric:

* (a) the large-sample n of d (``sample_complexity.large_sizes``): misclassified
  positives, mean ± sd over the harness's ``trials`` datasets (key ``(1, d, 0, t)``,
  composition's seed ``seed + 1`` as there; the box ``seed + 3``);
* (b) a method's n(0.05) from §1's table (b) (``--cell d:method:n``, default the
  documented ones): error ≤ 0.05 in how many of the harness's ``search_trials`` datasets
  of that method at that n (key ``(2, d, METHODS.index(method), n, t)``; all trials run,
  no early stop), composition and the box on the same datasets, and their mean
  misclassified count.

Also per method: the trials whose rectangle leaves T (a side past T's, possible for the box:
its sides land up to one step past a hard edge) and the farthest such side, in T's width.

Writes ``sample_complexity_auto.json`` (docs/figures/, or benchmarks/output/ with
``--quick``: one trial)."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

import numpy as np
from evidence_common import Stopwatch, output_dir, seeded_runs_allowed, write_json
from sample_complexity import (
    METHODS,
    Outcome,
    Setup,
    domains_for,
    large_sizes,
    leaves_truth,
    make_plans,
    misclassified,
    miss_rate,
    positives,
    stats,
    trial_rngs,
)

from dprect.core.algorithms import run_plan
from dprect.core.planner import Plan, plan, predicted_at
from dprect.core.randomness import RandomSource
from dprect.engines.numpy_engine import NumpyEngine

#: §1's table (b) (docs/results.md, run of the accounting v2 + tie bits): n(0.05) of
#: composition and of RandMargins (refined) at d = 2 … 16 (d = 1: auto takes the box there
#: already before issue #44's allowance)
N05 = {2: {"composition": 22_367, "randmargins-refined": 27_000},
       4: {"composition": 72_000, "randmargins-refined": 89_461},
       8: {"composition": 204_224, "randmargins-refined": 272_298},
       16: {"composition": 590_000, "randmargins-refined": 770_000}}
LARGE_DIMS = (2, 4, 8, 16, 32, 64)


def auto_plan(setup: Setup, d: int, n: int) -> Plan:
    """``auto`` at the public N = n with §1's budget, domains and β."""
    return plan(epsilon=setup.epsilon, delta=setup.delta, domains=domains_for(setup, d),
                beta=setup.beta, positives=n)


def _run(setup: Setup, p: Plan, columns: list[np.ndarray], seed: int) -> Outcome:
    d = len(columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_plan(NumpyEngine(columns), domains_for(setup, d),
                       [f"x{j}" for j in range(d)], p, RandomSource(seed=seed))
    return Outcome(tuple(res.lower_index), tuple(res.upper_index), False)


def past_truth(setup: Setup, out: Outcome) -> float:
    """The farthest a side lies past T's side, in T's width (0: every side inside T;
    §1 has no negatives, so a side past T costs nothing there but would on a table with
    negatives beyond T)."""
    t_lo, t_hi = setup.truth
    width = t_hi - t_lo + 1
    past = [max(0, t_lo - lo, hi - t_hi) for lo, hi in zip(out.lo, out.hi, strict=True)]
    return max(past) / width


def cell(setup: Setup, d: int, n: int, datasets: list[tuple[Any, ...]], kind: str
         ) -> dict[str, Any] | None:
    """Composition and auto's box at (d, n) on ``datasets`` ((data key, comp seed, box
    seed) each); None where auto does not take the box there."""
    chosen = auto_plan(setup, d, n)
    out: dict[str, Any] = {"d": d, "n": n, "kind": kind, "auto_chooses": chosen.chosen.method}
    if chosen.chosen.method != "quantiles":
        return out
    comp = make_plans(setup, d)["composition"]
    out["planned_share"] = {"composition": predicted_at(comp.chosen, n) / n,
                            "quantiles": predicted_at(chosen.chosen, n) / n}
    rows: dict[str, list[dict[str, float]]] = {"composition": [], "quantiles": []}
    for key, comp_seed, box_seed in datasets:
        gen, _ = trial_rngs(setup, *key)
        columns = positives(setup, gen, n, d)
        for name, p, seed in (("composition", comp, comp_seed),
                              ("quantiles", chosen, box_seed)):
            res = _run(setup, p, columns, seed)
            rows[name].append({"misclassified": misclassified(columns, res),
                               "error": miss_rate(setup, res),
                               "leaves_truth": leaves_truth(setup, res),
                               "past_truth": past_truth(setup, res)})
        del columns
    for name, r in rows.items():
        err = [x["error"] for x in r]
        out[name] = {"misclassified": stats([x["misclassified"] for x in r]),
                     "error": stats(err),
                     "passes_0.05": int(sum(e <= setup.target_error for e in err)),
                     "trials_leaving_truth": int(sum(x["leaves_truth"] for x in r)),
                     "past_truth_max": max(x["past_truth"] for x in r),
                     "trials": len(r)}
    return out


def large_cells(setup: Setup, dims: tuple[int, ...]) -> list[dict[str, Any]]:
    out = []
    for d in dims:
        n = large_sizes(setup, make_plans(setup, d), d)["composition"]
        sets = []
        for t in range(setup.trials):
            _, seed = trial_rngs(setup, 1, d, 0, t)
            sets.append(((1, d, 0, t), seed + 1, seed + 3))
        got = cell(setup, d, n, sets, "a")
        print(_line(got), flush=True)
        out.append(got)
    return out


def search_cells(setup: Setup, cells: list[tuple[int, str, int]]) -> list[dict[str, Any]]:
    out = []
    for d, method, n in cells:
        sets = []
        for t in range(setup.search_trials):
            key = (2, d, METHODS.index(method), n, t)
            _, seed = trial_rngs(setup, *key)
            sets.append((key, seed, seed + 3))
        got = cell(setup, d, n, sets, f"b:{method}")
        if got is not None:
            got["n_of"] = method
        print(_line(got), flush=True)
        out.append(got)
    return out


def _line(c: dict[str, Any] | None) -> str:
    if c is None:
        return ""
    head = f"{c['kind']:<24} d={c['d']:<3} n={c['n']:>9,} auto={c['auto_chooses']}"
    if "quantiles" not in c:
        return head
    parts = [head]
    for name in ("composition", "quantiles"):
        r = c[name]
        parts.append(f"{name}: {r['misclassified']['mean']:,.0f} ± {r['misclassified']['sd']:,.0f}"
                     f" ({100 * r['error']['mean']:.2f}%, ≤0.05 in {r['passes_0.05']}/"
                     f"{r['trials']}; planned {100 * c['planned_share'][name]:.1f}%; past T "
                     f"in {r['trials_leaving_truth']}, ≤ {r['past_truth_max']:.4f} of T)")
    return "  ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default=",".join(map(str, LARGE_DIMS)),
                    help="dimensions of part (a)'s large-sample cells")
    ap.add_argument("--no-search", action="store_true", help="skip part (b)'s n(0.05) cells")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    setup = Setup()
    if args.quick:
        setup = Setup(trials=1, search_trials=1)
    dims = tuple(int(x) for x in args.dims.split(",") if x)
    clock = Stopwatch()
    with seeded_runs_allowed():
        large = large_cells(setup, dims)
        search = [] if args.no_search else search_cells(
            setup, [(d, m, n) for d, by in N05.items() for m, n in by.items()])
    write_json(output_dir(args.out, args.quick) / "sample_complexity_auto.json",
               {"setup": {"trials": setup.trials, "search_trials": setup.search_trials,
                          "seed": setup.seed, "epsilon": setup.epsilon,
                          "delta": setup.delta, "beta": setup.beta},
                "seconds": clock.seconds(), "large_sample": large, "smallest_n": search})
    return 0


if __name__ == "__main__":
    sys.exit(main())
