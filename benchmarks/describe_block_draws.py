"""Check and measure: describe's per-cell draws as the executors make them (issue #42),
in one process, without Spark.

    python benchmarks/describe_block_draws.py digest [--groups 3000] [--columns 4]
    python benchmarks/describe_block_draws.py time [--groups 100000] [--columns 8]
                                                   [--rows-per-group 10] [--blocks 16]

The table is :func:`spark_bench.ensure_data`'s (about ``--rows-per-group`` rows a group);
it goes through the executor route's pass and merge
(:func:`~dprect.engines.spark.statistics.partial_bins`,
:func:`~dprect.engines.spark.statistics.merge_blobs`, the route's block limits), and the
merged blocks are cached under ``benchmarks/output``. Then each block is drawn as a
Spark task draws it: describe's phase 1
(:func:`~dprect.engines.spark.executor_draws.query_first`), the pools joined and each
column's anchor or pooled centre taken on the driver
(:func:`~dprect.core.aggregates.column_centres`), phase 2
(:func:`~dprect.engines.spark.executor_draws.query_second`).

``digest``: seeded runs (seed 11; the describe preset ``bounds,count,sum,mean``, then
``count,mean,variance``, then ``count``, then ``bounds,sum``), every block, and the
SHA-256 of every released value (each cell's fields by ``repr``), of phase 1's draws
(counts, centres, second streams' seeds; group by group, so the same for any blocks —
from s33-exec; before, block by block) and of the run's source after it (its next 256
bits): run it on the change and on its base and compare the lines.

``time``: from OS entropy (as the product runs), the describe preset; phase 1 of a
warm-up block and of ``--blocks`` blocks spread over the run, their pools joined (the
anchors), phase 2 of the warm-up block; then the ``--blocks`` blocks drawn again and
timed by ``time.process_time`` per phase (each through the route's task wrapper, as a
task runs it: :func:`as_task`), with the block's decode as the phases read it
(:meth:`~dprect.engines.spark.executor_draws.Blocks.column_bins`, or
:meth:`~dprect.engines.spark.executor_draws.Blocks.bins` where it gives None; before
s38-shrink ``Blocks.cells``, a decode the describe phases no longer take) timed apart, and the
driver's part of a block apart too (``driver``: its phase-2 result unpickled and its
cells made, not in the phases), and the task's packing of the block as a streamed run
packs it (``pack``: :class:`~dprect.engines.spark.executor_draws.Packing` of the
product's :class:`~dprect.release.block_pack.BlockPacker` with a ledger's DEFLATE piece,
from s36-tiny; ``--no-pack``: not timed); µs of CPU a cell. ``--pack-base REF``: the
packing of git ``REF``'s ``aggregate_record`` too (``pack_base``, from s37-pack), on the
same blocks, the two alternated block by block (which goes first too), and their bytes
checked equal; each packing runs once untimed on the first block first (a worker's
first packing sets Arrow's cast up, ~0.2 CPU-s once a process). ``--profile N`` profiles
the steps of ``--profile-phase`` (all by default); cProfile's timers inflate the Python
parts 1.5–3× against the compiled ones, so ``--parts`` times the phases' steps apart
unprofiled instead (:data:`PARTS`, from s39-decode: each function's CPU-s by
``time.process_time`` around its calls, inclusive). Nothing is asserted; quote the load
with the figures.
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

from aggregate_pass_profile import block_batch, merged_blobs, run_settings, seed_column  # noqa: E402 (after the BLAS pin)
from spark_bench import OUTPUT, draws_options, end_report, ensure_data  # noqa: E402 (after the BLAS pin)

DIGEST_RUNS = ["bounds,count,sum,mean", "count,mean,variance", "count", "bounds,sum"]

#: ``--parts``: the phases' steps timed apart, unprofiled — (label, module, name), each
#: function where its caller looks it up (a name the module imported, a class's method,
#: or a module's attribute read at call time); times are inclusive (``describe_block``
#: holds the ``count noises``, ``finish_columns`` the five after it), the decode is the
#: phases' own (one a phase). A name a tree lacks is left out
PARTS = [
    ("decode", "dprect.engines.spark.executor_draws", "Blocks.column_bins"),
    ("describe_block", "dprect.engines.spark.executor_draws", "describe_block"),
    ("count noises", "dprect.core.aggregates", "block_noises"),
    ("small_pools", "dprect.engines.spark.executor_draws", "small_pools"),
    ("pooled_block", "dprect.engines.spark.executor_draws", "pooled_block"),
    ("finish_columns", "dprect.engines.spark.executor_draws", "finish_columns"),
    ("cell draws", "dprect.core.column_release", "draw_cell_arrays"),
    ("column statistics", "dprect.core.column_release", "column_statistics"),
    ("tails", "dprect.core.column_release", "joined_tails_of"),
    ("release rows", "dprect.core.column_release", "release_rows_of"),
    ("release", "dprect.core.release_jit", "release_cells"),
]


def prepared(rows: int, columns: int, groups: int, statistics: str, epsilon: float,
             seed: int | None) -> dict[str, Any]:
    """The run's settings, blocks and merged blobs (cached)."""
    from dprect.engines.spark import executor_draws as ed
    from dprect.engines.spark import statistics as st

    path = ensure_data(rows, columns, groups)
    names, group_names, settings = run_settings(path, columns, groups, statistics, epsilon,
                                                seed)
    spec = settings.spec
    kernel, layout = st.virtual_columns(spec)
    # the blocks the product cuts on a classic session (a tree before block_cells: 4,096)
    cells = ed.block_cells(settings.mechanisms, False) if hasattr(ed, "block_cells") \
        else ed.CELLS_PER_BLOCK
    starts = ed.block_starts(groups, len(kernel.columns), 2, *([cells] if cells != 4096
                                                                else []))
    key = f"{rows}x{columns}x{groups}-{'sq' if len(kernel.columns) > columns else 'plain'}"
    key += f"-{cells}" if cells != 4096 else ""
    cache = OUTPUT / f"describe_block_draws-{key}.pkl"
    if cache.exists():
        merged = pickle.loads(cache.read_bytes())
    else:
        merged = merged_blobs(path, names, group_names, starts, kernel, layout)
        cache.write_bytes(pickle.dumps(merged))
    blocks = ed.Blocks(kernel, spec, groups, starts, columns)
    return {"settings": settings, "blocks": blocks, "merged": merged,
            "starts": starts, "names": names, "group_names": group_names}


def cell_text(cell: Any) -> str:
    return repr((cell.lower, cell.upper, cell.count, cell.sum, cell.mean, cell.intervals,
                 getattr(cell, "variance", None), getattr(cell, "std", None)))


def released_rows(done: Any) -> Any:
    """A block's released cells as the driver reads them (a tree before the column
    arrays has no ``column_release``: its blocks are the cells already)."""
    try:
        from dprect.core.column_release import released_rows as rows
    except ImportError:
        return done
    return rows(done)


def run_all(run: dict[str, Any], rng: Any) -> tuple[list[Any], list[Any], Any]:
    """Every block's phase 1, the anchors, every block's phase 2 (block order)."""
    from dprect.engines.spark import executor_draws as ed

    settings, blocks, merged = run["settings"], run["blocks"], run["merged"]
    plan = settings.plan
    blob = pickle.dumps(plan)
    edges = blocks.edges
    seeds = rng.stream_seeds(blocks.groups)
    firsts = []
    for r in range(len(edges) - 1):
        (out,) = ed.query_first(iter([block_batch(merged, r, seed_column(seeds, edges[r],
                                                                    edges[r + 1]))]),
                                blob, blocks, 0)
        firsts.append(out)
    pools = ed.SmallPools.joined([pickle.loads(f.column(ed.POOLS)[0].as_py())
                                  for f in firsts])
    anchors = ed.column_centres(plan, pools, rng)
    done = []
    for r, f in enumerate(firsts):
        (out,) = ed.query_second(iter([block_batch(merged, r, {ed.DRAWS: f.column(ed.DRAWS)})]),
                                 blob, anchors, blocks, 0)
        done.append(released_rows(pickle.loads(out.column(ed.RESULT)[0].as_py())))
    return firsts, done, anchors


def as_task(phase: Any, b: Any, *args: Any) -> list[Any]:
    """``phase`` over the one batch ``b`` as a Spark task runs it: through the route's
    task wrapper (``_settled``: the worker's heap frozen, and from s33-exec the collector
    paused for the task) where the tree has one."""
    settled = getattr(ed_module(), "_settled", None)
    if settled is None:
        return list(phase(iter([b]), *args))
    try:
        return list(settled(iter([b]), body=lambda batches: phase(batches, *args)))
    finally:
        import gc

        gc.unfreeze()


def packing_of(run: dict[str, Any]) -> Any:
    """The product's packing of a streamed block (:class:`~dprect.engines.spark.
    executor_draws.Packing` of :class:`~dprect.release.block_pack.BlockPacker`, with a
    ledger's DEFLATE piece as ``dprect aggregate`` with a ledger makes it)."""
    from dprect.engines.spark import executor_draws as ed
    from dprect.release.block_pack import BlockPacker
    from dprect.release.ledger.stored import LEVEL

    settings = run["settings"]
    return ed.Packing(BlockPacker(settings.mechanisms[0].name, LEVEL), tuple(run["names"]),
                      False)


def base_packing(run: dict[str, Any], ref: str) -> Any:
    """:func:`packing_of` with git ``ref``'s ``dprect/release/aggregate_record.py`` (its
    ``block_fields``, item lines and table; the rest of this tree), loaded as a module of
    its own: the old packing beside the new in one process."""
    import importlib.util
    import subprocess

    from dprect.engines.spark import executor_draws as ed
    from dprect.release.ledger.stored import LEVEL
    from dprect.release.row_spool import pack_block

    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(["git", "show", f"{ref}:dprect/release/aggregate_record.py"],
                            cwd=root, check=True, capture_output=True, text=True).stdout
    name = "base_aggregate_record"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    base = importlib.util.module_from_spec(spec)
    sys.modules[name] = base
    exec(compile(source, f"{ref}:aggregate_record.py", "exec"), base.__dict__)
    method = run["settings"].mechanisms[0].name

    def pack(result: Any) -> bytes:
        fields = base.block_fields(result)
        text = fields.item_bytes() if hasattr(fields, "item_bytes") \
            else fields.item_lines()  # a tree before item_bytes
        return pack_block(len(fields), text,
                          fields.table(base.SHAPES[method], base.record_plan(result)).batch,
                          LEVEL)

    return ed.Packing(pack, tuple(run["names"]), False)


def pa_names(names: list[str]) -> Any:
    """A block's group names as its row's :data:`~dprect.engines.spark.executor_draws.
    NAMES` column."""
    import pyarrow as pa

    return pa.array([pickle.dumps(list(names))], pa.binary())


def timed_parts(spent: dict[str, dict[str, float]], step: list[str]) -> None:
    """Each of :data:`PARTS` wrapped (for the rest of the process) to add its CPU time
    (``time.process_time``) to ``spent[step[0]][label]``: the step running when it is
    called (``step[0]``, set by the caller)."""
    import importlib

    def wrapped(fn: Any, label: str) -> Any:
        def part(*args: Any, **kwargs: Any) -> Any:
            t = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                got = spent.setdefault(step[0], {})
                got[label] = got.get(label, 0.0) + time.process_time() - t
        return part

    for label, module, name in PARTS:
        owner: Any = importlib.import_module(module)
        *path, attr = name.split(".")
        for p in path:
            owner = getattr(owner, p)
        fn = getattr(owner, attr, None)
        if fn is not None:
            setattr(owner, attr, wrapped(fn, label))


def ed_module() -> Any:
    from dprect.engines.spark import executor_draws as ed

    return ed


def digest(args: argparse.Namespace) -> int:
    from dprect.core import randomness
    from dprect.core.randomness import RandomSource
    from dprect.engines.spark import executor_draws as ed

    # the compiled samplers from the first draw (a worker's past its first few blocks);
    # the Python path's equality is the tests' (tests/core/test_random_jit.py and others)
    randomness.expect_draws(randomness.JIT_AFTER)
    out = {}
    for statistics in DIGEST_RUNS:
        run = prepared(args.groups * args.rows_per_group, args.columns, args.groups,
                       statistics, args.epsilon, 11)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rng = RandomSource(seed=11)
        firsts, done, anchors = run_all(run, rng)
        h1 = hashlib.sha256()
        for f in firsts:  # group by group: the same text however the groups are blocked
            d = pickle.loads(f.column(ed.DRAWS)[0].as_py())
            for row in zip(d.tiers, d.centres, d.counts, d.resume, d.means, strict=True):
                h1.update(repr(row).encode())
        h2 = hashlib.sha256()
        cells = 0
        for rows in done:
            for row in rows:
                for cell in row:
                    h2.update(cell_text(cell).encode())
                    cells += 1
        out[statistics] = {"cells": cells, "phase1": h1.hexdigest()[:16],
                           "released": h2.hexdigest()[:16], "anchors": repr(anchors),
                           "source after": hex(rng.randbits(256))[:18]}
        print(statistics, json.dumps(out[statistics]), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    return 0


def timed(args: argparse.Namespace) -> int:
    from dprect.core import randomness
    from dprect.core.randomness import RandomSource
    from dprect.engines.spark import executor_draws as ed

    run = prepared(args.groups * args.rows_per_group, args.columns, args.groups,
                   args.statistics, args.epsilon, None)
    settings, blocks, merged = run["settings"], run["blocks"], run["merged"]
    plan = settings.plan
    blob = pickle.dumps(plan)
    rng = RandomSource()
    load = [os.getloadavg()[0]]
    randomness.expect_draws(randomness.JIT_AFTER)  # compiled from the first draw
    n_blocks = len(blocks.edges) - 1
    step = max(1, n_blocks // (args.blocks + 1))
    chosen = list(range(step, n_blocks, step))[:args.blocks]
    # the anchors (or pooled centres) from the timed blocks' and a warm-up block's pools
    # (a whole run's would take every block: the draws' cost is alike)
    t = time.process_time()
    firsts = [ed.query_first(iter([block_batch(merged, r)]), blob, blocks, 0).__next__()
              for r in [0, *chosen]]
    pools = ed.SmallPools.joined([pickle.loads(f.column(ed.POOLS)[0].as_py())
                                  for f in firsts[:args.pool_blocks or None]])
    anchors = ed.column_centres(plan, pools, rng)
    list(ed.query_second(iter([block_batch(merged, 0, {ed.DRAWS: firsts[0].column(ed.DRAWS)})]),
                         blob, anchors, blocks, 0))  # warm: phase 2 once
    whole = time.process_time() - t
    spent = {"decode": 0.0, "phase1": 0.0, "phase2": 0.0, "driver": 0.0, "pack": 0.0,
             "pack_base": 0.0}
    cells = 0
    prof = cProfile.Profile(time.process_time) if args.profile else None
    ran: set[str] = set()  # the steps profiled that ran (none: no stats to print)
    profiled = {"all": {"decode", "phase1", "phase2", "driver", "pack"}}.get(
        args.profile_phase, {args.profile_phase})
    parts: dict[str, dict[str, float]] = {}
    running = [""]  # the step running, for --parts
    if args.parts:
        timed_parts(parts, running)

    def step(name: str, body: Any, *args: Any) -> Any:
        running[0] = name
        on = prof is not None and name in profiled
        if on:
            ran.add(name)
            prof.enable()
        t = time.process_time()
        got = body(*args)
        spent[name] += time.process_time() - t
        if on:
            prof.disable()
        return got

    packing = packing_of(run) if args.pack else None
    base = base_packing(run, args.pack_base) if args.pack and args.pack_base else None
    for i, r in enumerate(chosen):
        cells += blocks.size(r) * args.columns
        b = block_batch(merged, r)
        step("decode", lambda b: blocks.column_bins(b, 0, 0) or blocks.bins(b, 0, 0), b)
        (f,) = step("phase1", as_task, ed.query_first, b, blob, blocks, 0)
        b2 = block_batch(merged, r, {ed.DRAWS: f.column(ed.DRAWS)})
        (out,) = step("phase2", as_task, ed.query_second, b2, blob, anchors, blocks, 0)
        # the driver's part when nothing packs: the block unpickled, its cells
        result = out.column(ed.RESULT)[0].as_py()
        step("driver", lambda raw: released_rows(pickle.loads(raw)), result)
        if packing is not None:  # the task's packing of the block (Packing.describe)
            done = pickle.loads(result)
            a, z = blocks.edges[r], blocks.edges[r + 1]
            named = block_batch(merged, r, {ed.NAMES: pa_names(run["group_names"][a:z])})
            if i == 0:  # warm: each packing once (Arrow's first cast sets itself up)
                for p in (packing, base):
                    if p is not None:
                        p.describe(named, 0, plan, done)
            if base is None:
                step("pack", packing.describe, named, 0, plan, done)
                continue
            order = [("pack", packing), ("pack_base", base)][::1 if i % 2 else -1]
            made = [step(k, p.describe, named, 0, plan, done) for k, p in order]
            if made[0] != made[1]:
                raise SystemExit(f"block {r}: the packings' bytes differ")
    load.append(os.getloadavg()[0])
    per = {k: round(v / cells * 1e6, 2) for k, v in spent.items()}
    per["phases, decodes included"] = round(per["phase1"] + per["phase2"], 2)
    if args.pack:
        per["phases and pack"] = round(per["phase1"] + per["phase2"] + per["pack"], 2)
    else:  # not timed
        del per["pack"]
    if not args.pack_base:
        del per["pack_base"]
    report: dict[str, Any] = {
        "groups": args.groups, "columns": args.columns, "rows_per_group": args.rows_per_group,
        "statistics": args.statistics, "blocks": n_blocks, "blocks_timed": len(chosen),
        "cells_timed": cells, "warm_up_cpu_s": round(whole, 2), "anchors": repr(anchors),
        "us_cpu_a_cell": per, "load": load, "label": args.label}
    if args.parts:  # the phases' steps (PARTS), µs of CPU a cell; the rest unnamed
        report["us_cpu_a_cell_parts"] = {
            k: {label: round(v / cells * 1e6, 3) for label, v in got.items()}
            for k, got in parts.items() if k in ("phase1", "phase2")}
    return end_report(report, args, lambda: prof if ran else None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["digest", "time"])
    ap.add_argument("--groups", type=int, default=None)
    ap.add_argument("--columns", type=int, default=None)
    ap.add_argument("--rows-per-group", type=int, default=10)
    ap.add_argument("--statistics", default="bounds,count,sum,mean")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--blocks", type=int, default=16)
    ap.add_argument("--pool-blocks", type=int, default=0,
                    help="join the pools of this many blocks only (0: every phase-1 "
                         "block drawn; 1: one block's, as aggregate_pass_profile.py does)")
    ap.add_argument("--pack", action=argparse.BooleanOptionalAction, default=True,
                    help="time the task's packing of each timed block too (``pack``: "
                         "BlockPacker with a ledger's DEFLATE piece)")
    ap.add_argument("--pack-base", default="",
                    help="a git ref: its aggregate_record's packing timed too, alternated "
                         "with this tree's on the same blocks (``pack_base``)")
    ap.add_argument("--parts", action="store_true",
                    help="time the phases' steps apart too (PARTS: µs of CPU a cell, "
                         "unprofiled, inclusive)")
    ap.add_argument("--profile-phase", default="all",
                    choices=["all", "decode", "phase1", "phase2", "driver", "pack"],
                    help="the step(s) profiled with --profile")
    draws_options(ap)
    args = ap.parse_args(argv)
    if args.mode == "digest":
        args.groups = args.groups or 3000
        args.columns = args.columns or 4
        return digest(args)
    args.groups = args.groups or 100_000
    args.columns = args.columns or 8
    return timed(args)


if __name__ == "__main__":
    sys.exit(main())
