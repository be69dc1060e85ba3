"""The design scan behind issue #23's split of a column's ε (docs/results.md §5.1, "The
split and the restart past zero"): dprect ``describe`` with other public constants, on
the evidence's columns, against the committed real-peer runs.

    python benchmarks/peers_real.py prepare        # the columns' cache and manifest
    python benchmarks/describe_split_scan.py [--seed S] [--epsilon E ...]
        [--set SIDES_SHARE=0.3 --set ZERO_RESTART_BITS=4 ...]

Each ``--set`` replaces one constant for this process only: ``CENTRE_SHARE``,
``SIDES_SHARE``, ``SUM_SHARE``, ``TARGET_FACTOR``, ``MARGIN_FACTOR`` (of
:mod:`dprect.core.aggregates`), ``DECAY`` (the sides' prior μ, a fraction such as 3/4)
and ``ZERO_RESTART_BITS`` (:mod:`dprect.core.tail_bounds`). The runs are seeded as
``benchmarks/peers_dprect.py`` seeds them, from ``--seed`` (the evidence's is 20140414;
another seed is another draw of the same law). Printed per ε: the columns where
dprect's DP mean is at most the best real peer's and within 1.25× of it, the worst ratio,
the clipping check, and the columns above the best peer — the lines of
``benchmarks/peers_compare.py``'s summary. A study on public data: nothing is asserted,
nothing is written.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

SHARE_KEYS = ("CENTRE_SHARE", "SIDES_SHARE", "SUM_SHARE", "TARGET_FACTOR", "MARGIN_FACTOR")


def apply(setting: str) -> None:
    """Set one public constant (``KEY=VALUE``) for this process."""
    from dprect.core import aggregates, step_exponential, tail_bounds
    key, _, value = setting.partition("=")
    if key in SHARE_KEYS:
        setattr(aggregates, key, float(value))
    elif key == "DECAY":
        decay = Fraction(value)
        aggregates.draw_step = functools.partial(step_exponential.draw_step, decay=decay)
        aggregates.DECAY = decay
    elif key == "ZERO_RESTART_BITS":
        tail_bounds.ZERO_RESTART_BITS = int(value)
    else:
        raise SystemExit(f"--set: unknown constant {key!r}")


def scan(seed: int, epsilons: list[float] | None) -> list[dict[str, Any]]:
    """dprect's cells for ``seed`` under this process's constants, compared as
    ``make bench-peers-compare`` compares them (:func:`peers_compare.rows_against_peers`)."""
    import peers_layout as pr
    from peers_compare import rows_against_peers
    from peers_dprect import dprect_cells
    manifest = json.loads((pr.REPO / pr.MANIFEST).read_text())
    if epsilons:
        manifest["epsilons"] = epsilons
    _, cells = dprect_cells(manifest, "describe", seed=seed)
    peers = json.loads((pr.REPO / pr.PEERS_JSON).read_text())["cells"]
    return rows_against_peers(manifest, peers, cells)


def report(rows: list[dict[str, Any]], label: str) -> None:
    from peers_compare import summary, summary_line
    ran = {r["epsilon"] for r in rows if "ratio_mean" in r}
    for s in summary(rows):
        if s["epsilon"] in ran:
            print(f"{label}, {summary_line(s)}")
    for r in rows:
        check = r["methods"].get("dprect", {}).get("clip_check") or {}
        above = r.get("ratio_mean", 0.0) > 1.0 and not r["synthetic"]
        if above or check.get("passes") is False:
            print(f"  ε = {r['epsilon']:g} {r['table']}/{r['column']}: ratio "
                  f"{r['ratio_mean']:.3f}"
                  + ("" if check.get("passes") is not False else
                     f", clipping check ✗ (low {check['share_low']:.0%}, high "
                     f"{check['share_high']:.0%} within {check['limit']:.1f})"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20140414)
    ap.add_argument("--epsilon", type=float, action="append")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    for setting in args.set:
        apply(setting)
    label = " ".join([f"seed {args.seed}", *args.set]) or "defaults"
    report(scan(args.seed, args.epsilon), label)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
