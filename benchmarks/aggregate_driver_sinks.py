"""Measure: the driver's part of a grouped aggregate drawn in the executors (issue #42),
in one process, without Spark — the CPU a released cell costs from the moment its
block's pickled result reaches the driver to the outputs on disk.

    python benchmarks/aggregate_driver_sinks.py [--groups 100000] [--columns 8]
                                                [--block 4096] [--label NAME]

The describe preset (``bounds,count,sum,mean``) end to end through
:func:`~dprect.app.aggregate_flow.run_aggregate_flow` — a fresh budget ledger, the JSON
output and a Parquet ``--table``, as ``aggregate_spark_groups.py`` runs it — on a route
whose draw hands the flow blocks of ``--block`` groups, each the pickled result of an
executor's phase 2 (:class:`~dprect.core.column_release.ReleasedColumns`, its arrays
made up: normal floats, counts in [−3, 30), every cell released by the compiled
release) unpickled and read as the Spark route reads it
(:func:`~dprect.core.column_release.released_rows`) — and, where the flow gives the route
its ``pack`` (the product's block packer), packed as an executor's task packs it, that
CPU timed apart (``executors_cpu_s``, not the driver's). The driver's CPU
(``time.process_time``) is cut into the stages of ``aggregate_groups_profile.py``
(:data:`aggregate_groups_profile.STAGES`, exclusive); the blocks' made-up arrays are
made before the clock starts. Divide by the cells; nothing is asserted; quote the load
(printed). Run it on two trees (before/after) in interleaved pairs."""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from aggregate_groups_profile import STAGES, Timers, install  # noqa: E402

#: the cells made where this route reads a block (the Spark route: executor_draws')
STAGES.append(("cells of a block", "dprect.core.column_release", "released_rows"))


def made_blocks(groups: int, columns: int, block: int, statistics: tuple[str, ...]
                ) -> list[tuple[int, bytes]]:
    """Each block's first group and its pickled phase-2 result (module notes)."""
    import numpy as np

    from dprect.core.column_release import ReleasedColumns

    gen = np.random.default_rng(42)
    out = []
    for start in range(0, groups, block):
        m = min(block, groups - start)
        n = m * columns
        lower = gen.normal(0.0, 10.0, n)
        bounds = np.stack([lower, lower + gen.exponential(5.0, n)], axis=1)
        noisy = gen.integers(-3, 30, n)
        values = gen.normal(0.0, 100.0, (n, 8))
        out.append((start, pickle.dumps(ReleasedColumns(statistics, m, columns, bounds,
                                                        noisy, values, {}))))
    return out


class Prepared:
    """A route's prepared run whose draw streams the made-up blocks (module notes)."""

    def __init__(self, blocks: list[tuple[int, bytes]]) -> None:
        self.blocks = blocks
        #: the CPU of the blocks packed as an executor packs them (``pack``: not the
        #: driver's part, taken off it)
        self.packed = 0.0

    def __enter__(self) -> Prepared:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def draw(self, mechanisms: Any, plan: Any, group_names: Any, columns: Any, rng: Any,
             groups: Any = None, drawing: Any = lambda: None, each_block: Any = None,
             pack: Any = None) -> Any:
        from dprect.core.aggregates import DescribeResult
        from dprect.core.column_release import released_rows

        drawing()
        names, cols = list(group_names), list(columns)
        for start, blob in self.blocks:
            if pack is None:  # the driver makes the block's outputs
                done = pickle.loads(blob)
                each_block(DescribeResult(cols, names[start:start + len(done)],
                                          released_rows(done), plan.guarantee, plan, False))
                continue
            began = time.process_time()  # the executor's task: unpickle, pack
            done = pickle.loads(blob)
            packed = pack(DescribeResult(cols, names[start:start + len(done)],
                                         released_rows(done), plan.guarantee, plan, False))
            self.packed += time.process_time() - began
            each_block(packed)
        return DescribeResult(cols, names, [], plan.guarantee, plan, False)


class Route:
    def __init__(self, blocks: list[tuple[int, bytes]]) -> None:
        self.prepared = Prepared(blocks)

    def open(self, source: Any, groups: Any, spec: Any, progress: Any) -> Prepared:
        return self.prepared


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=100_000)
    ap.add_argument("--columns", type=int, default=8)
    ap.add_argument("--block", type=int, default=4096)
    ap.add_argument("--statistics", default="bounds,count,sum,mean")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprect.app.aggregate_flow import aggregate_settings, run_aggregate_flow
    from dprect.app.spine import Reporter, silent
    from dprect.release.ledger import Ledger

    columns = [f"c{j}" for j in range(args.columns)]
    groups = [str(i) for i in range(args.groups)]
    with tempfile.TemporaryDirectory(prefix="driver-sinks-") as where:
        table = {"g": pa.array([0], pa.int64()), **{c: pa.array([0.0]) for c in columns}}
        pq.write_table(pa.table(table), f"{where}/input.parquet")
        Ledger(f"{where}/ledger").init()
        settings = aggregate_settings({
            "input": f"{where}/input.parquet", "columns": columns, "group_by": "g",
            "groups": groups, "statistics": args.statistics, "epsilon": 1.0,
            "output": f"{where}/result.json", "table": f"{where}/table.parquet",
            "ledger": f"{where}/ledger", "dataset": "bench", "run_id": "run"})
        blocks = made_blocks(args.groups, args.columns, args.block,
                             tuple(settings.plan.statistics))
        timers = Timers()
        install(timers)
        load = [os.getloadavg()[0]]
        cpu0, wall0 = time.process_time(), time.perf_counter()
        route = Route(blocks)
        run_aggregate_flow(settings, route, Reporter(say=silent, show=silent))
        driver, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        executors = route.prepared.packed
        driver -= executors
        load.append(os.getloadavg()[0])
        sizes = {str(p.relative_to(where)): p.stat().st_size
                 for p in sorted(Path(where).rglob("*")) if p.is_file()}
        # each output's bytes (a gzip file's content: its header holds the time)
        digests = {str(p.relative_to(where)): hashlib.sha256(
            gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        ).hexdigest() for p in sorted(Path(where).rglob("*")) if p.is_file()}
    cells = args.groups * args.columns
    stages = dict(sorted(timers.spent.items(), key=lambda kv: -kv[1]))
    stages["other"] = driver - sum(timers.spent.values())
    out = {"groups": args.groups, "columns": args.columns, "cells": cells,
           "block": args.block, "label": args.label, "load": load, "wall_s": wall,
           "driver_cpu_s": driver, "us_a_cell": 1e6 * driver / cells,
           "executors_cpu_s": executors, "executors_us_a_cell": 1e6 * executors / cells,
           "stages_us_a_cell": {k: round(1e6 * v / cells, 3) for k, v in stages.items()},
           "sizes": sizes, "sha256": digests}
    print(json.dumps(out))
    if args.out is not None:
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
