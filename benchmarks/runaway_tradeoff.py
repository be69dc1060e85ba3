"""How far AboveThreshold's public constants can push the runaway bound down (issue #23).

    python benchmarks/runaway_tradeoff.py

Issue #23 asks for no bound beyond 1000× a column's largest |x| in any run of its
evidence (21,000 searched sides), and at most 1/(2ε_q) + 20/ε_b clipped rows per side in
≥ 95% of runs. Both are tails of one search (docs/privacy.md §11): a side runs away only
if its threshold noise ρ is far below −t and then K steps past the data (K ≈ r·log2 of
the overshoot factor) all fail, about e^{−ε₁·t}·(K/2)^{−ε₁/ε₂}; it clips more than the
limit L only if a step whose tail count is L stops, about e^{−ε₂·(L − t)} per such step.
With ε₁ + ε₂ fixed one can only be bought with the other.

This prints, per ε of the evidence and for the describe plan's split (one column): the
current constants' two numbers (the plan's own ``overshoot`` and ``early_stop``, exact
sums over ρ in floating point), then over a grid of the threshold's share of the sides'
ε and the target's margin the smallest runaway chance whose early-stop chance at the
limit is at most 1×, 1.5× and 2× the current one; then the same for a variant with
one-sided noises (ρ ≤ 0 and ν ≤ 0, negative geometric laws: the test's privacy proof
shifts ρ one way only — docs/privacy.md §11 would need that proof; nothing here is
built). And the floor any ε_b-DP bound that clips at most L rows with probability 1/2
must pay by group privacy: e^{−(L + 1)·ε_b}/2. Nothing is asserted: a design scan, its
conclusion in docs/results.md §5.1.
"""

from __future__ import annotations

import math

import numpy as np

from dprect.core import aggregates
from dprect.core.tail_bounds import (
    STEPS_PER_OCTAVE,
    early_stop_probability,
    overshoot_probability,
)

#: the overshoot factor measured from the data's last offset: flights sched_arr_time's
#: 1000 × 2,359 over its last offset from the centre (~860), the evidence's worst column
FACTOR = 3000.0
EPSILONS = (0.5, 1.0, 4.0)


def _one_sided_overshoot(t: int, e1: float, e2: float, steps: int) -> float:
    j = np.arange(0, int(80 / e1) + 200)
    p_rho = (1 - math.exp(-e1)) * np.exp(-e1 * j)
    a = t - j
    stop = np.where(a >= 0, 1.0, np.exp(e2 * np.minimum(a, 0)))
    return float(np.sum(p_rho * (1 - stop) ** steps))


def _one_sided_early(t: int, e1: float, e2: float, rows: int) -> float:
    return math.exp(-e2 * (rows - t)) * (1 - math.exp(-e1)) / (1 - math.exp(-e1 - e2))


def _point(eps: float, share: float, margin: float, one_sided: bool
           ) -> tuple[int, float, float, float]:
    """(t, limit, runaway chance, early-stop chance at the limit) of one column."""
    plan = aggregates.plan_describe(eps, 1)
    sides = plan.threshold_epsilon + plan.step_epsilon
    e1, e2 = share * sides, (1 - share) * sides
    t = max(0 if one_sided else 1,
            math.ceil(aggregates.TARGET_FACTOR / plan.sum_epsilon + margin / sides))
    limit = plan.clip_limit
    assert limit is not None
    rows = math.ceil(limit)
    steps = math.ceil(STEPS_PER_OCTAVE * math.log2(FACTOR))
    if one_sided:
        return t, limit, _one_sided_overshoot(t, e1, e2, steps), _one_sided_early(
            t, e1, e2, rows)
    return t, limit, overshoot_probability(t, e1, e2, steps), early_stop_probability(
        t, e1, e2, rows)


def main() -> None:
    shares = np.round(np.arange(0.40, 0.951, 0.025), 3)
    margins = np.arange(0.0, 10.01, 0.25)
    current = {eps: _point(eps, aggregates.THRESHOLD_SHARE, aggregates.MARGIN_FACTOR, False)
               for eps in EPSILONS}
    print(f"overshoot factor {FACTOR:g} (K = {STEPS_PER_OCTAVE}·log2 = "
          f"{math.ceil(STEPS_PER_OCTAVE * math.log2(FACTOR))} steps past the data)")
    for eps, (t, limit, run, early) in current.items():
        plan = aggregates.plan_describe(eps, 1)
        floor = 0.5 * math.exp(-(math.ceil(limit) + 1) * plan.bounds_epsilon)
        print(f"eps {eps:g}: current t {t}, limit {limit:.1f}: runaway {run:.2e} per side "
              f"(x 21,000 sides: {run * 21000:.2f} expected), early stop {early:.2e}; "
              f"group-privacy floor {floor:.1e}")
    for one_sided in (False, True):
        name = "one-sided noises" if one_sided else "two-sided (current law)"
        for allowance in (1.0, 1.5, 2.0):
            best = None
            for share in shares:
                for margin in margins:
                    points = {eps: _point(eps, float(share), float(margin), one_sided)
                              for eps in EPSILONS}
                    if any(points[e][3] > allowance * current[e][3] for e in EPSILONS):
                        continue
                    worst = max(p[2] for p in points.values())
                    if best is None or worst < best[0]:
                        best = (worst, float(share), float(margin))
            if best is None:
                print(f"{name}, early stop <= {allowance:g}x current: none on the grid")
                continue
            worst, share, margin = best
            print(f"{name}, early stop <= {allowance:g}x current: smallest worst runaway "
                  f"{worst:.2e} per side ({worst * 21000:.3f} expected in the evidence) "
                  f"at threshold share {share:g}, margin {margin:g}")


if __name__ == "__main__":
    main()
