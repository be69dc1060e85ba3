"""Speed of the quantiles' draws per (group, column) cell, from statistics (issue #41 (a)).

    python benchmarks/quantile_draws.py [--groups 20] [--columns 64] [--rows-per-cell 2000]
                                        [--epsilon 0.5] [--profile N] [--compiled]

What a run of every quantile (p1 … p99) does per cell after its pass, on the shape of
``make bench-aggregate-spark`` (64 columns, 1,000 groups on 2·10^6 rows: 2,000 rows a
cell; the quantiles' share of ε = 1 is 0.5 in the mixed run of every statistic, so every
group is below the plan's split and drawn near its centre): the cells'
:class:`~dprect.core.quantiles.QuantileStatistics` made once in memory (not timed) from
the four column shapes of benchmarks/describe_spark.py, then
:func:`~dprect.core.quantile_release.release_groups`, seeded, one stream per group.
Prints the CPU milliseconds per cell (process time: the machine is shared) and a digest
of the released cells (the same digest on any version that draws the same values).
``--profile N`` runs it once more under cProfile and prints its N costliest functions
(cumulative). ``--compiled`` loads the compiled samplers before the first draw, after one
untimed group (numba's cache loaded or filled); without it they load at the run's start
when its announced calls (cells × quantiles × ``DRAWS_A_QUANTILE``) reach
``randomness.JIT_AFTER`` — the default 1,280 cells of nine quantiles do, the load then
timed. Nothing is asserted: this is a measurement.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pstats
import time
import warnings

import numpy as np

from dprect.core import randomness
from dprect.core.quantile_release import plan_statistics, release_groups
from dprect.core.quantiles import QuantileStatistics, quantile_statistics
from dprect.core.randomness import RandomSource

NAMES = ("p1", "p5", "p10", "p25", "median", "p75", "p90", "p95", "p99")


def _cells(plan, groups: int, columns: int, rows: int) -> dict[tuple[int, int],
                                                              QuantileStatistics]:
    gen = np.random.default_rng(2311)
    out = {}
    for g in range(groups):
        for j in range(columns):
            kind = j % 4
            x = (gen.normal(50.0 + gen.normal(0.0, 5.0), 10.0, rows) if kind == 0
                 else gen.lognormal(2.0, 1.0, rows) if kind == 1
                 else -gen.exponential(30.0, rows) if kind == 2
                 else gen.normal(0.5, 4.0, rows))
            out[(g, j)] = quantile_statistics(x, plan)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=20)
    ap.add_argument("--columns", type=int, default=64)
    ap.add_argument("--rows-per-cell", type=int, default=2000)
    ap.add_argument("--epsilon", type=float, default=0.5,
                    help="the quantiles' ε of the whole run (all columns)")
    ap.add_argument("--profile", type=int, default=0)
    ap.add_argument("--compiled", action="store_true",
                    help="the compiled samplers from the first draw (numba)")
    args = ap.parse_args()
    plan = plan_statistics(list(NAMES), args.epsilon, args.columns)
    cells = _cells(plan, args.groups, args.columns, args.rows_per_cell)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seeds = RandomSource(seed=7).stream_seeds(args.groups)
        rng = RandomSource(seed=8)  # the pooled centres' source (a benchmark: seeded)
    if args.compiled:
        randomness.JIT_AFTER = 0
        first = {key: cell for key, cell in cells.items() if key[0] == 0}
        release_groups(plan, first, seeds[:1], args.columns, rng)  # numba loaded, not timed
    start = time.process_time()
    out = release_groups(plan, cells, seeds, args.columns, rng)
    cpu = time.process_time() - start
    n = args.groups * args.columns
    digest = hashlib.sha256(repr([[c.values for c in row] for row in out]).encode())
    print(f"{n} cells ({args.rows_per_cell} rows each, split_rows {plan.split_rows}): "
          f"{1000 * cpu / n:.2f} CPU ms a cell; digest {digest.hexdigest()[:16]}")
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(release_groups, plan, cells, seeds, args.columns)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(args.profile)


if __name__ == "__main__":
    main()
