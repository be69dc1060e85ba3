"""Speed of describe's driver: the mechanism per (group, column) cell, from statistics.

    python benchmarks/describe_driver.py [--groups 1000] [--columns 64] [--rows-per-cell 200]
                                         [--profile N]

What a Spark describe run does on its driver after its one pass (issue #23):
phase 1, every cell's private centre from its centre-grid histogram
(:func:`dprect.core.aggregates.draw_centres`); phase 2, every cell's two outward searches,
count noise and sum noise from its per-interval statistics
(:func:`~dprect.core.aggregates.describe_from_statistics`). The statistics are made once
in memory (the numpy route's functions, not timed) from public synthetic columns of the
four shapes of benchmarks/describe_spark.py. Each repeat re-runs both phases from the same
seed (the same draws every time); prints the median milliseconds per cell of each phase
and a digest of the released cells (equal across code changes that keep the draws).
Between the two phases a Spark run also makes each cell's cuts
(:func:`~dprect.core.describe_stats.range_cuts` over its bins' range): timed here
as "cuts" (not part of the digest). ``--profile N`` runs one more repeat under cProfile and
prints its N costliest functions (own time).
Times are this process's CPU seconds (``time.process_time``: the driver is one Python
thread, and CPU time moves less than wall time on a shared machine). Nothing is asserted:
this is a measurement. ``--rows-per-cell 10000`` is the 10^7-row,
1,000-group benchmark's cell size, where the searches walk far (the centre is nearly
uniform at ε_c = 0.1·ε/64 per column), so the per-step exact test dominates.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pstats
import statistics
import time
import warnings

import numpy as np

from dprect.core.aggregates import (
    DescribePlan,
    DescribeResult,
    describe_from_statistics,
    draw_centres,
    plan_describe,
)
from dprect.core.describe_stats import (
    CellStatistics,
    cell_statistics,
    centre_counts,
    range_cuts,
    search_range,
)
from dprect.core.randomness import RandomSource


def cells(groups: int, columns: int, rows: int) -> dict[tuple[int, int], np.ndarray]:
    gen = np.random.default_rng(2311)
    shift = gen.normal(0.0, 5.0, (groups, columns))
    out = {}
    for g in range(groups):
        for j in range(columns):
            kind = j % 4
            out[(g, j)] = (gen.normal(50.0 + shift[g, j], 10.0, rows) if kind == 0
                           else gen.lognormal(2.0, 1.0, rows) if kind == 1
                           else -gen.exponential(30.0, rows) if kind == 2
                           else gen.normal(0.5, 4.0, rows))
    return out


def one_run(plan: DescribePlan, hist: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]],
            stats: dict[tuple[int, int], CellStatistics] | None,
            ranges: dict[tuple[int, int], tuple[int, int]], groups: int, names: list[str],
            seed: int = 7
            ) -> tuple[tuple[float, float, float], dict[tuple[int, int], float],
                       DescribeResult | None]:
    """The driver's three phases from ``seed``: (seconds per phase, centres, result)."""
    rng = RandomSource(seed=seed)
    t0 = time.process_time()
    centres = draw_centres(plan, hist, groups, rng)
    t1 = time.process_time()
    for k, (lo, hi) in ranges.items():
        range_cuts(centres[k], lo, hi)
    t2 = time.process_time()
    result = None
    if stats is not None:
        result = describe_from_statistics(plan, centres, stats, list(range(groups)), names,
                                          rng)
    t3 = time.process_time()
    return (t1 - t0, t2 - t1, t3 - t2), centres, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--columns", type=int, default=64)
    ap.add_argument("--rows-per-cell", type=int, default=200)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", type=int, default=0, metavar="N")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # seeded: a measurement, never a release
    data = cells(args.groups, args.columns, args.rows_per_cell)
    plan = plan_describe(args.epsilon, args.columns)
    hist = {k: centre_counts(x) for k, x in data.items()}
    ranges = {k: search_range(keys) for k, (keys, _) in hist.items()}
    names = [f"c{j}" for j in range(args.columns)]
    n = len(data)
    # the same centres every repeat (same seed): the statistics are made once, untimed
    _, centres, _ = one_run(plan, hist, None, {}, args.groups, names)
    stats = {k: cell_statistics(x, centres[k]) for k, x in data.items()}
    times: list[tuple[float, float, float]] = []
    digest = ""
    for _ in range(args.repeat):
        t, _, result = one_run(plan, hist, stats, ranges, args.groups, names)
        times.append(t)
        assert result is not None
        digest = hashlib.sha256(repr(result.rows()).encode()).hexdigest()[:16]
    p1, pc, p2 = (statistics.median(t[i] for t in times) / n * 1e3 for i in range(3))
    print(f"{args.groups} groups x {args.columns} columns, {args.rows_per_cell} rows per "
          f"cell: centres {p1:.3f} ms/cell, cuts {pc:.3f} ms/cell, searches + noise "
          f"{p2:.3f} ms/cell, driver {p1 + pc + p2:.3f} ms/cell, {n * (p1 + pc + p2) / 1e3:.1f}"
          f" s in all (median of {args.repeat}); cells digest {digest}")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        one_run(plan, hist, stats, ranges, args.groups, names)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)


if __name__ == "__main__":
    main()
