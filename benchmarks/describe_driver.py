"""Speed of describe's driver: the mechanism per (group, column) cell, from statistics.

    python benchmarks/describe_driver.py [--groups 1000] [--columns 64] [--rows-per-cell 200]
                                         [--profile N]

What a Spark describe run does on its driver after its one pass (issue #23): the pass's
per-search-bin statistics cut into blocks of groups
(:class:`~dprect.core.describe_stats.BinBlock`), and per group every centre, each cell's
statistics given its centre, the two sides' draws and two noises
(:func:`~dprect.core.aggregates.describe_blocks`). The bins are made once in memory (the
core's :func:`~dprect.core.describe_stats.bin_statistics`, not timed) from public synthetic
columns of the four shapes of benchmarks/describe_spark.py. Each repeat runs the
mechanism three ways: seeded on the driver's thread, from OS entropy on the driver's
thread (what a release draws from), and from OS entropy in the worker processes of
:mod:`dprect.engines.driver_pool` (what a large run uses); the seeded run
is repeated in the pool and must give the same cells (a digest of them is printed).
Prints the median milliseconds per cell of each way (wall time: the pool's work is in
other processes). ``--profile N`` runs the seeded way once more under cProfile and
prints its N costliest functions (own time). Nothing is asserted beyond the equal
digests: this is a measurement. ``--rows-per-cell 10000`` is the 10^7-row, 1,000-group
benchmark's cell size, where the centre is nearly uniform (ε_c = 0.05·ε/64 per column)
and each side's draw weighs hundreds of steps.
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

from dprect.core.aggregates import describe_blocks, group_blocks, plan_describe
from dprect.core.describe_stats import bin_blocks, bin_statistics
from dprect.core.randomness import RandomSource
from dprect.engines.driver_pool import block_mapper


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--columns", type=int, default=64)
    ap.add_argument("--rows-per-cell", type=int, default=200)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", type=int, default=0, metavar="N")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # the seeded way is a measurement, never a release
    data = cells(args.groups, args.columns, args.rows_per_cell)
    plan = plan_describe(args.epsilon, args.columns)
    bins = {k: bin_statistics(x) for k, x in data.items()}
    names = [f"c{j}" for j in range(args.columns)]
    groups = list(range(args.groups))
    n = len(data)

    def run(seed: int | None, pooled: bool) -> tuple[float, str]:
        rng = RandomSource(seed=seed)
        t = time.perf_counter()
        if pooled:
            with block_mapper(args.groups, args.columns) as (mapper, parts):
                blocks = bin_blocks(bins, args.columns, group_blocks(args.groups, parts))
                result = describe_blocks(plan, blocks, groups, names, rng, mapper)
        else:
            blocks = bin_blocks(bins, args.columns, group_blocks(args.groups, 1))
            result = describe_blocks(plan, blocks, groups, names, rng)
        seconds = time.perf_counter() - t
        return seconds, hashlib.sha256(repr(result.rows()).encode()).hexdigest()[:16]

    ways = {"seeded, driver": (7, False), "OS entropy, driver": (None, False),
            "OS entropy, pool": (None, True), "seeded, pool": (7, True)}
    times: dict[str, list[float]] = {w: [] for w in ways}
    digests: dict[str, str] = {}
    for _ in range(args.repeat):
        for way, (seed, pooled) in ways.items():
            seconds, digest = run(seed, pooled)
            times[way].append(seconds)
            digests[way] = digest
    with block_mapper(args.groups, args.columns) as (mapper, parts):
        workers = "no pool" if mapper is map else f"{parts} blocks"
    print(f"{args.groups} groups x {args.columns} columns, {args.rows_per_cell} rows per "
          f"cell ({workers}); median of {args.repeat}, ms per cell: "
          + ", ".join(f"{w} {statistics.median(t) / n * 1e3:.3f}" for w, t in times.items())
          + f"; seeded cells digest {digests['seeded, driver']} on the driver, "
          f"{digests['seeded, pool']} in the pool")
    if digests["seeded, driver"] != digests["seeded, pool"]:
        raise SystemExit("the pool drew other cells than the driver for the same seed")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        run(7, False)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)


if __name__ == "__main__":
    main()
