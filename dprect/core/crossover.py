"""The crossover: from which dimension RandMargins is predicted to beat the baseline.

``dprect plan`` prints it for the request's budget and grids, with and without the
continuity declaration (issue #24): the smallest d at which the planner predicts fewer
misclassified positives for RandMargins (refined accounting) than for the composition
baseline, on a table whose axes repeat the request's domains (axis j has domain
``domains[j mod len(domains)]``), once with no feature declared continuous (every axis
takes tie bits) and once with every feature declared (none does). Nothing here looks at
data: it is a property of the public request, like the plan itself.

The prediction ratio falls with d (RandMargins' per-round ε stays about constant, the
baseline's falls like 1/√R: docs/algorithm.md §6), so the first d is found by doubling d
until RandMargins wins, then bisection (about 2·log₂ d plans); None when it does not win
up to :data:`MAX_CROSSOVER_DIMS`.
"""

from __future__ import annotations

from collections.abc import Sequence

from dprect.core.domains import Domain
from dprect.core.planner import predictions
from dprect.core.request import PlanRequest

#: the largest dimension searched (the predictions at d = 1024 take about 0.2 s); the
#: predictions are the planner's own (:func:`dprect.core.planner.predictions`), made
#: without a plan: the run's budget is still planned once
MAX_CROSSOVER_DIMS = 1024


def _wins(request: PlanRequest, domains: Sequence[Domain], dims: int, declared: bool) -> bool:
    axes = [domains[j % len(domains)] for j in range(dims)]
    got = predictions(request, axes, frozenset(range(dims)) if declared else frozenset())
    if "randmargins" not in got:
        return False
    return "composition" not in got or got["randmargins"] < got["composition"]


def crossover(request: PlanRequest, domains: Sequence[Domain], *, declared: bool,
              limit: int = MAX_CROSSOVER_DIMS) -> int | None:
    """The smallest d ≤ ``limit`` at which RandMargins is predicted better than the
    baseline for ``request``'s budget on ``domains`` repeated, with every feature
    (``declared``) or none declared continuous; None if none ≤ ``limit``."""
    lo, hi = 0, 1  # RandMargins loses at lo (or lo = 0); galloping up to a d where it wins
    while not _wins(request, domains, hi, declared):
        if hi >= limit:
            return None
        lo, hi = hi, min(2 * hi, limit)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _wins(request, domains, mid, declared) else (mid, hi)
    return hi


def crossover_lines(request: PlanRequest, domains: Sequence[Domain]) -> tuple[str, dict]:
    """The plan printout's crossover line and its JSON (both settings)."""
    none = crossover(request, domains, declared=False)
    every = crossover(request, domains, declared=True)

    def txt(d: int | None) -> str:
        return f"d = {d}" if d is not None else f"no d <= {MAX_CROSSOVER_DIMS}"

    line = (f"crossover (RandMargins predicted better than composition, these grids "
            f"repeated): {txt(none)} without the continuity declaration, {txt(every)} with "
            f"every feature declared continuous (--continuous)")
    return line, {"without_declaration": none, "every_feature_declared": every,
                  "searched_up_to": MAX_CROSSOVER_DIMS}
