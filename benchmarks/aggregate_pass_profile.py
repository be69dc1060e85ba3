"""Profile: the executors' side of ``dprect aggregate --engine spark`` with every statistic,
stage by stage, in one process (issue #41; docs/results.md §5.3b).

    python benchmarks/aggregate_pass_profile.py [--rows 2000000] [--columns 64]
                                                [--groups 1000] [--partitions 2]
                                                [--blocks 4] [--top 0]

What a Spark run's Python workers do, without Spark: the benchmark's table
(:func:`spark_bench.ensure_data`, the same file ``aggregate_spark.py`` reads) cut into
``--partitions`` partitions as ``coalesce(cores)`` cuts it; each partition's Arrow batches
through the pass's ``mapInArrow`` body
(:func:`~dprect.engines.spark.statistics.partial_bins`, the executor route's block limits,
:func:`~dprect.engines.spark.executor_draws.block_starts`), every block's blobs merged
(:func:`~dprect.engines.spark.statistics.merge_blobs`), then ``--blocks`` blocks drawn by
each mechanism's phases as the executors draw them
(:func:`~dprect.engines.spark.executor_draws.query_first`, ``query_second``,
``quantiles_first``, ``quantiles_second``; the draws' CPU then scaled to every block).
Every phase runs under cProfile on the process's CPU clock; the stages are the cumulative
CPU of the functions named in :data:`STAGES` (a stage's time includes the stages it calls:
read them as a tree; a block's pooled quantile cells are drawn near its own pools'
centres: a run's read every block's). Nothing is asserted; quote the load with the
figures. ``--top N`` also prints the N functions of largest own time per phase;
``--digest`` prints a SHA-256 of the pass's and the merge's blobs (the same lists give the
same bytes); ``--warm`` draws one block unprofiled first (numba's kernels loaded: without
it the first block's compiles are in the profile). The quantile laws are counted by the
path they took (:func:`path_counts`).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import os
import pickle
import pstats
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from blas_threads import pin_blas_threads

# numpy's BLAS on one thread, as in Spark's Python workers (blas_threads.py): before
# numpy loads (pyarrow loads it)
pin_blas_threads()

import pyarrow as pa  # noqa: E402 (after the BLAS pin)
import pyarrow.parquet as pq  # noqa: E402 (after the BLAS pin)
from spark_bench import OUTPUT, ensure_data  # noqa: E402 (after the BLAS pin)

#: the statistics of the run: every one (aggregate_spark.py's ALL)
ALL = "bounds,count,sum,mean,variance,std,p1,p5,p10,p25,median,p75,p90,p95,p99"

#: per phase, the stages reported: (label, module file suffix, function name)
STAGES: dict[str, list[tuple[str, str, str]]] = {
    "pass": [
        ("the whole mapInArrow body", "statistics.py", "partial_bins"),
        ("Arrow -> float64 chunks (cast, finite, groups)", "statistics.py", "finite_chunks"),
        ("  group indices", "row_kernels.py", "table_groups"),
        ("  cast to float64", "statistics.py", "as_float64"),
        ("per column's lists", "statistics.py", "column_lists"),
        ("  search grid with sums, compiled (every word a call)", "describe_jit.py",
         "column_words"),
        ("  decimal grid's keys", "statistics.py", "grid_keys"),
        ("  sorted counts", "statistics.py", "chunk_counts"),
        ("    packed sort", "statistics.py", "_packed_count"),
        ("running lists merged", "statistics.py", "_words_into"),
        ("ranges' blobs", "statistics.py", "range_blobs"),
        ("  segments (narrowed, compressed)", "statistics.py", "_segment"),
    ],
    "merge": [
        ("the whole applyInArrow body", "statistics.py", "merge_blobs"),
        ("  a run's segments decoded in place and merged", "statistics.py", "_merge_flat"),
        ("    merged (windows of sorted words, from 8 lists)", "describe_jit.py",
         "_windowed"),
        ("  decompress (a run merged apart)", "statistics.py", "_read"),
        ("  merges (a run merged apart)", "statistics.py", "_merge_words"),
        ("  compress", "statistics.py", "_segment"),
    ],
    "draws": [
        ("describe phase 1", "executor_draws.py", "query_first"),
        ("describe phase 2", "executor_draws.py", "query_second"),
        ("quantiles phase 1", "executor_draws.py", "quantiles_first"),
        ("quantiles phase 2", "executor_draws.py", "quantiles_second"),
        ("  block's cells decoded", "executor_draws.py", "cells"),
        ("  describe cells drawn", "aggregates.py", "describe_block"),
        ("  small groups finished", "aggregates.py", "finish_small"),
        ("  quantiles drawn", "quantile_release.py", "first_phase"),
        ("    a cell's ranks and frame", "quantile_centre.py", "rank_frame"),
        ("    the centre's and the sign's laws", "quantile_centre.py", "rank_pieces"),
        ("    the window's cut", "quantile_centre.py", "cut"),
        ("    a cell's depth rows", "quantile_draws.py", "rank_depths"),
        ("    the compiled tables", "quantile_draws.py", "laws_tables"),
        ("    the compiled rounds", "random_jit.py", "unimodal_rounds"),
        ("    laws finished in Python", "quantile_draws.py", "_rounds"),
        ("    the block's values", "quantiles.py", "released_cells"),
        ("  intervals (query)", "intervals.py", "query_intervals"),
        ("  intervals (variance, std)", "variance.py", "spread_intervals"),
        ("  interval grid points made", "intervals.py", "mixed_quantile"),
    ],
}


def profiled(fn: Callable[[], Any]) -> tuple[Any, pstats.Stats, float]:
    """``fn()`` under cProfile on this process's CPU clock: its result, the stats and the
    CPU seconds it took."""
    prof = cProfile.Profile(time.process_time)
    t = time.process_time()
    prof.enable()
    try:
        out = fn()
    finally:
        prof.disable()
    return out, pstats.Stats(prof), time.process_time() - t


def run_settings(path: Path, columns: int, groups: int, statistics: str, epsilon: float,
                 seed: int | None = None) -> tuple[list[str], list[str], Any]:
    """A run on the benchmark's table ``path`` (:func:`spark_bench.ensure_data`: columns
    c0, c1, …, the group column g of groups 0 … ``groups`` − 1) as the product reads its
    conf (:func:`~dprect.app.aggregate_flow.aggregate_settings`; a seeded run's warning
    hidden): its column names, group names and settings."""
    from dprect.app.aggregate_flow import aggregate_settings

    names = [f"c{j}" for j in range(columns)]
    group_names = [str(i) for i in range(groups)]
    given: dict[str, Any] = {
        "input": str(path), "columns": names, "statistics": statistics, "group_by": "g",
        "groups": group_names, "epsilon": epsilon,
        "output": os.path.join(tempfile.mkdtemp(), "unused.json")}
    if seed is not None:
        given["seed"] = seed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return names, group_names, aggregate_settings(given)


def stage_seconds(stats: pstats.Stats, stages: list[tuple[str, str, str]]
                  ) -> dict[str, float]:
    """Each stage's cumulative CPU seconds (0 for a function not called)."""
    raw: Any = stats.stats  # type: ignore[attr-defined]
    out = {}
    for label, suffix, name in stages:
        total = 0.0
        for (path, _line, func), (_cc, _nc, _tt, ct, _callers) in raw.items():
            if func == name and path.endswith(suffix):
                total += ct
        out[label] = total
    return out


def path_counts() -> dict[str, int]:
    """Counts, from now on in this process, of the quantile laws by the path they take
    (:mod:`dprect.core.quantile_draws`): ``one_bucket`` laws whose compiled table is read
    off their depths, ``sampler_tables`` laws tabled from their samplers (several
    buckets), ``python`` laws drawn wholly in Python with numba loaded (no table: an
    integer past the compiled bounds; before numba loads nothing is counted),
    ``paused`` laws the compiled rounds handed to Python on an undecided uniform (the
    same draws on every path)."""
    from dprect.core import quantile_draws as qd

    counts: dict[str, int] = {"one_bucket": 0, "sampler_tables": 0, "python": 0,
                              "paused": 0}
    tables, one, rounds = qd.laws_tables, qd._one_bucket_tables, qd._rounds
    shortcut = [False]

    def laws_tables(laws: Any, jit: Any) -> Any:
        shortcut[0] = False
        made = tables(laws, jit)
        path = "python" if made is None else "one_bucket" if shortcut[0] \
            else "sampler_tables"
        counts[path] += len(laws)
        return made

    def one_bucket(laws: Any, jit: Any) -> Any:
        made = one(laws, jit)
        shortcut[0] = made is not None
        return made

    def finish(sampler: Any, near: Any, rng: Any, u: int | None = None) -> int:
        counts["paused"] += u is not None
        return rounds(sampler, near, rng, u)

    qd.laws_tables, qd._one_bucket_tables, qd._rounds = laws_tables, one_bucket, finish
    return counts


def partitions(path: Path, parts: int) -> list[list[pa.RecordBatch]]:
    """The table's batches cut into ``parts`` runs of row groups (coalesce's shape)."""
    f = pq.ParquetFile(path)
    groups = list(range(f.num_row_groups))
    cut = [groups[i * len(groups) // parts:(i + 1) * len(groups) // parts]
           for i in range(parts)]
    return [list(f.read_row_groups(g).to_batches(max_chunksize=10_000)) for g in cut if g]


def by_block(partials: Any) -> dict[int, list[Any]]:
    """The pass's partial batches gathered by block (the shuffle's key): each block's blobs
    in the order the partitions made them."""
    by_range: dict[int, list[Any]] = {}
    for batches in partials:
        for b in batches:
            by_range.setdefault(b.column(0)[0].as_py(), []).append(b.column(1)[0])
    return by_range


def merged_block(r: int, blobs: list[Any]) -> Any:
    """One block's partial blobs merged as the merge's group does (one Arrow table)."""
    from dprect.engines.spark import statistics as st

    return st.merge_blobs(pa.table({st.PART: pa.array([r] * len(blobs), pa.int32()),
                                    st.BLOB: pa.array([x.as_py() for x in blobs],
                                                      pa.binary())}))


def merged_blobs(path: Path, source: list[str], group_names: list[str], starts: list[int],
                 kernel: Any, layout: Any) -> dict[int, bytes]:
    """The run's pass over two partitions and its merge, in one process: each block's
    merged blob, by block (the draws benchmarks' input)."""
    from dprect.engines.spark import statistics as st

    limits = st.block_limits(kernel, len(group_names), starts)
    values = st.resolve_groups(group_names, "numeric", "g")
    partials = (st.partial_bins(iter(batches), source, "g", "numeric", values,
                                len(group_names), len(starts), kernel, layout, limits)
                for batches in partitions(path, 2))
    return {r: merged_block(r, v).column(st.BLOB)[0].as_py()
            for r, v in by_block(partials).items()}


def block_batch(merged: dict[int, bytes], r: int, extra: dict[str, Any] | None = None
                ) -> Any:
    """Block ``r``'s merged blob as the draws' one-row input batch (plus ``extra``
    columns)."""
    from dprect.engines.spark import statistics as st

    cols: dict[str, Any] = {st.PART: pa.array([r], pa.int32()),
                            st.BLOB: pa.array([merged.get(r)], pa.binary())}
    cols.update(extra or {})
    return pa.table(cols).to_batches()[0]


def seed_column(seeds: list[int | None] | None, a: int, z: int) -> dict[str, Any]:
    """Groups ``a`` to ``z``'s stream seeds as the draws' seed column (none unseeded)."""
    from dprect.engines.spark import executor_draws as ed

    if seeds is None or seeds[0] is None:
        return {}
    raw = b"".join(int(s or 0).to_bytes(ed.SEED_BYTES, "big") for s in seeds[a:z])
    return {ed.SEEDS: pa.array([raw], pa.binary())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--columns", type=int, default=64)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--blocks", type=int, default=4, help="blocks drawn (0: no draws)")
    ap.add_argument("--statistics", default=ALL)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--top", type=int, default=0)
    ap.add_argument("--label", default="")
    ap.add_argument("--warm", action="store_true",
                    help="draw one block unprofiled first (numba loaded, caches warm)")
    ap.add_argument("--digest", action="store_true",
                    help="also print a SHA-256 of the pass's blobs (every partition's, in "
                         "order) and of the merged blocks' (two trees giving the same "
                         "lists give the same bytes)")
    args = ap.parse_args(argv)

    from dprect.core.mixed import MixedPlan
    from dprect.core.randomness import RandomSource
    from dprect.core.statistic import QUANTILES, QUERY
    from dprect.engines.spark import executor_draws as ed
    from dprect.engines.spark import statistics as st

    path = ensure_data(args.rows, args.columns, args.groups)
    columns, groups, settings = run_settings(path, args.columns, args.groups,
                                             args.statistics, args.epsilon)
    spec = settings.spec
    source_columns = [c for _ in range(len(spec.columns) // len(columns)) for c in columns]
    kernel, layout = st.virtual_columns(spec)
    starts = ed.block_starts(args.groups, len(kernel.columns), args.partitions)
    limits = st.block_limits(kernel, args.groups, starts)
    values = tuple(st.resolve_groups(groups, "numeric", "g") or ())  # as partial_pass
    load = [os.getloadavg()[0]]
    report: dict[str, Any] = {"rows": args.rows, "columns": args.columns,
                              "groups": args.groups, "partitions": args.partitions,
                              "statistics": args.statistics,
                              "kernel_columns": len(kernel.columns), "blocks": len(starts)}

    parts = partitions(path, args.partitions)

    def run_pass() -> list[list[Any]]:
        return [list(st.partial_bins(iter(batches), source_columns, "g", "numeric", values,
                                     args.groups, len(starts), kernel, layout, limits))
                for batches in parts]

    out, stats, cpu = profiled(run_pass)
    report["pass"] = {"cpu": cpu, "stages": stage_seconds(stats, STAGES["pass"])}
    pass_stats = stats
    by_range = by_block(out)
    report["pass"]["blob_bytes"] = sum(len(x.as_buffer()) for v in by_range.values()
                                       for x in v)
    if args.digest:
        report["pass"]["digest"] = hashlib.sha256(b"".join(
            b.column(1)[0].as_py() for batches in out for b in batches)).hexdigest()
    del out

    def run_merge() -> dict[int, Any]:
        return {r: merged_block(r, v) for r, v in by_range.items()}

    merged, stats, cpu = profiled(run_merge)
    report["merge"] = {"cpu": cpu, "stages": stage_seconds(stats, STAGES["merge"])}
    merge_stats = stats
    if args.digest:
        report["merge"]["digest"] = hashlib.sha256(b"".join(
            x.as_py() for r in sorted(merged) for x in merged[r].column(st.BLOB))).hexdigest()
    load.append(os.getloadavg()[0])

    draw_stats = None
    if args.blocks:
        chosen = sorted(merged)[:args.blocks]
        blocks = ed.Blocks(kernel, spec, args.groups, starts, len(columns))
        plan = settings.plan
        plans = plan.plans if isinstance(plan, MixedPlan) else (plan,)
        mechanisms = settings.mechanisms

        def batch_of(r: int, extra: dict[str, Any] | None = None) -> Iterator[Any]:
            cols = {st.PART: pa.array([r], pa.int32()), st.BLOB: merged[r].column(st.BLOB)}
            cols.update(extra or {})
            return iter(pa.table(cols).to_batches())

        def run_draws(chosen: list[int] = chosen) -> list[float]:
            spent = [0.0] * len(chosen)
            for part, (m, p) in enumerate(zip(mechanisms, plans, strict=True)):
                blob = pickle.dumps(p)
                for at, r in enumerate(chosen):
                    t = time.process_time()
                    if m is QUERY:
                        (first,) = ed.query_first(batch_of(r), blob, blocks, part)
                        pools = pickle.loads(first.column(ed.POOLS)[0].as_py())
                        anchors = ed.column_centres(p, ed.SmallPools.joined([pools]),
                                                    RandomSource())
                        list(ed.query_second(batch_of(r, {ed.DRAWS: first.column(ed.DRAWS)}),
                                             blob, anchors, blocks, part))
                    elif m is QUANTILES:
                        (qf,) = ed.quantiles_first(batch_of(r), blob, blocks, part)
                        centres = ed.pooled_centres(  # the block's own pools: timing only
                            pickle.loads(blob),
                            pickle.loads(qf.column(ed.POOLS)[0].as_py()), RandomSource())
                        list(ed.quantiles_second(batch_of(r, {ed.DRAWS: qf.column(ed.DRAWS)}),
                                                 blob, centres, blocks, part))
                    spent[at] += time.process_time() - t
            return spent

        paths = path_counts()
        if args.warm:  # one block first, unprofiled: numba's kernels and caches loaded
            run_draws(sorted(merged)[-1:])
            paths.update(dict.fromkeys(paths, 0))
        _, stats, cpu = profiled(run_draws)
        # then as a reused worker draws them: other blocks, unprofiled, caches warm
        later = sorted(merged)[args.blocks:2 * args.blocks]
        warm = run_draws(later) if later else []
        scale = len(starts) / len(chosen)
        report["draws"] = {"cpu": cpu, "blocks_drawn": len(chosen), "scale": scale,
                           "cpu_all_blocks": cpu * scale,
                           "warm_cpu_per_block": warm,
                           "warm_cpu_all_blocks": sum(warm) / max(1, len(warm)) * len(starts),
                           "stages": stage_seconds(stats, STAGES["draws"]),
                           "quantile_paths": dict(paths)}
        draw_stats = stats
    load.append(os.getloadavg()[0])
    report["load"] = load

    for phase in ("pass", "merge", "draws"):
        if phase not in report:
            continue
        r = report[phase]
        extra = f" (x{r['scale']:.1f} for every block: {r['cpu_all_blocks']:.1f} s; " \
            f"unprofiled, warm: {r['warm_cpu_per_block']} s a block, every block " \
            f"{r['warm_cpu_all_blocks']:.1f} s)" if phase == "draws" else ""
        print(f"{phase}: {r['cpu']:.2f} CPU-s{extra}")
        if "digest" in r:
            print(f"  digest of its blobs: {r['digest']}")
        if "quantile_paths" in r:
            print(f"  the quantiles' laws by path (profiled blocks): {r['quantile_paths']}")
        for label, secs in r["stages"].items():
            print(f"  {label:<50} {secs:8.2f}")
    print(f"blob bytes after the pass: {report['pass']['blob_bytes']:,}; load {load}")
    if args.top:
        for phase, s in (("pass", pass_stats), ("merge", merge_stats), ("draws", draw_stats)):
            if s is not None:
                print(f"--- {phase}: top {args.top} by own time")
                s.sort_stats("tottime").print_stats(args.top)
    name = f"aggregate_pass_profile-{args.rows}x{args.columns}x{args.groups}{args.label}.json"
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / name).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
