"""Check and measure: the executors' draws of EVERY statistic on large groups (issue #41;
docs/results.md §5.3b), in one process, without Spark.

    python benchmarks/every_block_draws.py digest [--rows 10000000] [--columns 8]
                                                  [--groups 1000] [--blocks 0]
    python benchmarks/every_block_draws.py time [--blocks 2] [--repeat 3] [--profile N]

The acceptance's shape is 64 columns × 1,000 public groups on 10^7 rows (10^4 rows a
cell); here fewer columns at the same ε a column (``--epsilon`` defaults to
columns/64: the 64-column run's ε = 1), so every cell gets the 64-column run's budget and
rows, and the run's blocks hold about as many cells (``block_starts`` cuts by cells).
The table is :func:`spark_bench.ensure_data`'s; it goes through the executor route's pass
and merge (:func:`~dprect.engines.spark.statistics.partial_bins`,
:func:`~dprect.engines.spark.statistics.merge_blobs`), the merged blocks cached under
``benchmarks/output``. Each part of the mixed run (describe's, then the quantiles') is
drawn per block as a Spark task draws it: describe's phase 1
(:func:`~dprect.engines.spark.executor_draws.query_first`), the pools joined and the
anchors taken (:func:`~dprect.core.aggregates.column_centres`), phase 2
(:func:`~dprect.engines.spark.executor_draws.query_second`); the quantiles' likewise
(:func:`~dprect.engines.spark.executor_draws.quantiles_first`, the pooled centres,
``quantiles_second``).

``digest`` (``make check-every-draws``): seeded (seed 11; each part's stream and its
groups' stream seeds drawn as :func:`~dprect.core.mixed.draw_parts` and the executor
route draw them), every block (or the first ``--blocks``; describe's phase 1 always draws
every block: its anchors read them all), the SHA-256 of every released value (each
describe cell's fields by ``repr``, each quantile cell's values, rank error and flag) and
the next bits of each part's stream after it: run it on the change and on its base and
compare the lines. The compiled samplers load from the first draw (``expect_draws``).

``time`` (``make bench-every-draws``): from OS entropy (as the product runs); every
block's phase 1 (the anchors), then ``--blocks`` blocks drawn ``--repeat`` times, each
phase timed by ``time.process_time`` (the least of the repeats a block; the quantiles'
phase with its block's decode), µs of CPU a cell per phase;
``--profile N`` draws them once more under cProfile and prints N functions. Nothing is
asserted; quote the load with the figures.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import os
import pickle
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from blas_threads import pin_blas_threads

pin_blas_threads()  # one BLAS thread as in Spark's Python workers: before numpy loads

from aggregate_pass_profile import ALL, block_batch, merged_blobs, run_settings, seed_column  # noqa: E402 (after the BLAS pin)
from spark_bench import OUTPUT, draws_options, end_report, ensure_data  # noqa: E402 (after the BLAS pin)


def prepared(args: argparse.Namespace, seed: int | None) -> dict[str, Any]:
    """The run's settings, blocks and merged blobs (cached)."""
    from dprect.engines.spark import executor_draws as ed
    from dprect.engines.spark import statistics as st

    path = ensure_data(args.rows, args.columns, args.groups)
    names, group_names, settings = run_settings(path, args.columns, args.groups,
                                                args.statistics, args.epsilon, seed)
    spec = settings.spec
    kernel, layout = st.virtual_columns(spec)
    starts = ed.block_starts(args.groups, len(kernel.columns), 2)
    source = [c for _ in range(len(spec.columns) // len(names)) for c in names]
    tag = hashlib.sha256(f"{args.statistics}|{args.epsilon!r}".encode()).hexdigest()[:8]
    cache = OUTPUT / f"every_block_draws-{args.rows}x{args.columns}x{args.groups}-{tag}.pkl"
    if cache.exists():
        merged = pickle.loads(cache.read_bytes())
    else:
        merged = merged_blobs(path, source, group_names, starts, kernel, layout)
        cache.write_bytes(pickle.dumps(merged))
    blocks = ed.Blocks(kernel, spec, args.groups, starts, args.columns)
    return {"settings": settings, "blocks": blocks, "merged": merged}


def describe_text(cell: Any) -> str:
    return repr((cell.lower, cell.upper, cell.count, cell.sum, cell.mean, cell.intervals,
                 cell.variance, cell.std))


def quantile_text(cell: Any) -> str:
    return repr((cell.values, cell.small, cell.rank_error))


class Run:
    """One mixed run's parts drawn block by block (module notes)."""

    def __init__(self, run: dict[str, Any]) -> None:
        from dprect.core.mixed import MixedPlan

        settings = run["settings"]
        self.blocks, self.merged = run["blocks"], run["merged"]
        plan = settings.plan
        self.plans = plan.plans if isinstance(plan, MixedPlan) else (plan,)
        self.mechanisms = settings.mechanisms
        self.blobs = [pickle.dumps(p) for p in self.plans]
        self.n_blocks = len(self.blocks.edges) - 1

    def first(self, part: int, r: int, seeds: list[int] | None) -> Any:
        from dprect.engines.spark import executor_draws as ed

        e = self.blocks.edges
        (out,) = ed.query_first(iter([block_batch(self.merged, r, seed_column(seeds, e[r],
                                                                           e[r + 1]))]),
                                self.blobs[part], self.blocks, part)
        return out

    def anchors(self, part: int, firsts: list[Any], rng: Any) -> Any:
        from dprect.engines.spark import executor_draws as ed

        pools = ed.SmallPools.joined([pickle.loads(f.column(ed.POOLS)[0].as_py())
                                      for f in firsts])
        return ed.column_centres(self.plans[part], pools, rng)

    def second(self, part: int, r: int, first: Any, anchors: Any) -> Any:
        from dprect.core.column_release import released_rows
        from dprect.engines.spark import executor_draws as ed

        (out,) = ed.query_second(iter([block_batch(self.merged, r,
                                             {ed.DRAWS: first.column(ed.DRAWS)})]),
                                 self.blobs[part], anchors, self.blocks, part)
        return released_rows(pickle.loads(out.column(ed.RESULT)[0].as_py()))

    def quantiles_first(self, part: int, r: int, seeds: list[int] | None) -> Any:
        from dprect.engines.spark import executor_draws as ed

        e = self.blocks.edges
        (out,) = ed.quantiles_first(iter([block_batch(self.merged, r, seed_column(seeds, e[r],
                                                                               e[r + 1]))]),
                                    self.blobs[part], self.blocks, part)
        return out

    def quantile_centres(self, part: int, firsts: list[Any], rng: Any) -> Any:
        from dprect.engines.spark import executor_draws as ed

        pools = ed.joined_pools([pickle.loads(f.column(ed.POOLS)[0].as_py())
                                 for f in firsts])
        return ed.pooled_centres(self.plans[part], pools, rng)

    def quantiles_second(self, part: int, r: int, first: Any, centres: Any) -> Any:
        from dprect.engines.spark import executor_draws as ed

        (out,) = ed.quantiles_second(iter([block_batch(self.merged, r,
                                                 {ed.DRAWS: first.column(ed.DRAWS)})]),
                                     self.blobs[part], centres, self.blocks, part)
        return pickle.loads(out.column(ed.RESULT)[0].as_py())

    def quantiles(self, part: int, r: int, seeds: list[int] | None) -> Any:
        """A block's quantiles in both phases, its pooled cells near the centres of its
        own pools (timing only: a run's centres read every block's pools)."""
        from dprect.core.randomness import RandomSource

        first = self.quantiles_first(part, r, seeds)
        return self.quantiles_second(part, r, first,
                                     self.quantile_centres(part, [first], RandomSource()))


def digest(args: argparse.Namespace) -> int:
    from dprect.core import randomness
    from dprect.core.randomness import RandomSource
    from dprect.core.statistic import QUANTILES, QUERY

    randomness.expect_draws(randomness.JIT_AFTER)  # compiled from the first draw
    run = Run(prepared(args, 11))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rng = RandomSource(seed=11)
    part_seeds = rng.stream_seeds(len(run.mechanisms))
    out: dict[str, Any] = {}
    chosen = range(args.blocks or run.n_blocks)
    for part, m in enumerate(run.mechanisms):
        stream = RandomSource.stream(part_seeds[part])
        seeds = stream.stream_seeds(run.blocks.groups)
        h = hashlib.sha256()
        cells = 0
        t = time.process_time()
        if m is QUERY:
            firsts = [run.first(part, r, seeds) for r in range(run.n_blocks)]
            anchors = run.anchors(part, firsts, stream)
            h.update(repr(anchors).encode())
            for r in chosen:
                for row in run.second(part, r, firsts[r], anchors):
                    for cell in row:
                        h.update(describe_text(cell).encode())
                        cells += 1
        elif m is QUANTILES:  # phase 1 of every block: the pools read them all
            qfirsts = [run.quantiles_first(part, r, seeds) for r in range(run.n_blocks)]
            centres = run.quantile_centres(part, qfirsts, stream)
            h.update(repr(centres).encode())
            for r in chosen:
                for row in run.quantiles_second(part, r, qfirsts[r], centres):
                    for cell in row:
                        h.update(quantile_text(cell).encode())
                        cells += 1
        else:
            continue
        out[m.name] = {"cells": cells, "released": h.hexdigest()[:16],
                       "stream after": hex(stream.randbits(256))[:18],
                       "cpu_s": round(time.process_time() - t, 2)}
        print(m.name, json.dumps(out[m.name]), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    return 0


def timed(args: argparse.Namespace) -> int:
    from dprect.core import randomness
    from dprect.core.randomness import RandomSource
    from dprect.core.statistic import QUANTILES, QUERY

    run = Run(prepared(args, None))
    load = [os.getloadavg()[0]]
    randomness.expect_draws(randomness.JIT_AFTER)  # compiled from the first draw
    step = max(1, run.n_blocks // (args.blocks + 1))
    chosen = list(range(step, run.n_blocks, step))[:args.blocks]
    rng = RandomSource()
    firsts: dict[int, list[Any]] = {}
    anchors: dict[int, Any] = {}
    for part, m in enumerate(run.mechanisms):  # untimed: anchors, and one warm-up block
        if m is QUERY:
            firsts[part] = [run.first(part, r, None) for r in range(run.n_blocks)]
            anchors[part] = run.anchors(part, firsts[part], rng)
            run.second(part, 0, firsts[part][0], anchors[part])
        elif m is QUANTILES:
            run.quantiles(part, 0, None)
    best: dict[str, list[float]] = {}

    def one_pass() -> dict[str, list[float]]:
        spent: dict[str, list[float]] = {}
        for part, m in enumerate(run.mechanisms):
            for at, r in enumerate(chosen):
                if m is QUERY:
                    t = time.process_time()
                    f = run.first(part, r, None)
                    spent.setdefault("describe phase 1", [0.0] * len(chosen))[at] += \
                        time.process_time() - t
                    t = time.process_time()
                    run.second(part, r, f, anchors[part])
                    spent.setdefault("describe phase 2", [0.0] * len(chosen))[at] += \
                        time.process_time() - t
                elif m is QUANTILES:
                    t = time.process_time()
                    run.quantiles(part, r, None)
                    spent.setdefault("quantiles", [0.0] * len(chosen))[at] += \
                        time.process_time() - t
        return spent

    for _ in range(args.repeat):
        for k, v in one_pass().items():
            best[k] = v if k not in best else [min(a, b) for a, b in zip(best[k], v,
                                                                          strict=True)]
    load.append(os.getloadavg()[0])
    cells = sum(run.blocks.size(r) for r in chosen) * args.columns
    per = {k: round(sum(v) / cells * 1e6, 1) for k, v in best.items()}
    per["all"] = round(sum(per.values()), 1)
    report = {"rows": args.rows, "groups": args.groups, "columns": args.columns,
              "epsilon": args.epsilon, "statistics": args.statistics,
              "blocks": run.n_blocks, "blocks_timed": chosen, "cells_timed": cells,
              "us_cpu_a_cell": per, "cpu_s_a_block": {k: [round(x, 3) for x in v]
                                                      for k, v in best.items()},
              "load": load, "label": args.label}

    def profile() -> cProfile.Profile | None:  # one more pass, profiled
        if not args.profile:
            return None
        prof = cProfile.Profile(time.process_time)
        prof.enable()
        one_pass()
        prof.disable()
        return prof

    return end_report(report, args, profile)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["digest", "time"])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--columns", type=int, default=8)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--statistics", default=ALL)
    ap.add_argument("--epsilon", type=float, default=None,
                    help="the run's ε (default columns/64: each column the 64-column "
                         "run's share of ε = 1)")
    ap.add_argument("--blocks", type=int, default=None,
                    help="digest: the quantiles' blocks drawn (0: every block); time: "
                         "blocks timed (2)")
    ap.add_argument("--repeat", type=int, default=3)
    draws_options(ap)
    args = ap.parse_args(argv)
    if args.epsilon is None:
        args.epsilon = args.columns / 64
    if args.mode == "digest":
        args.blocks = args.blocks or 0
        return digest(args)
    args.blocks = args.blocks or 2
    return timed(args)


if __name__ == "__main__":
    sys.exit(main())
