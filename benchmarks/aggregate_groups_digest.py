"""Check: a digest of every output of seeded grouped-aggregate runs drawn in the
executors (issue #42), to compare a change's outputs with its base's, bit for bit.

    python benchmarks/aggregate_groups_digest.py [--groups 1500] [--tiny] [--out FILE]

Each run (the describe preset; count, mean and variance; two quantiles) is seeded, drawn
in the executors of a local session in blocks of about 256 cells, and written as the
command line writes it: a budget ledger (its stored copy of the record), the JSON output,
a CSV table and a Parquet table. The script prints one SHA-256 per output and run (the
ledger's stored copy by its decompressed text, the Parquet table by its rows), and with
``--out`` writes them as JSON: run it on both trees and compare the files.

``--tiny``: the many-tiny-groups path instead — 12,000 groups (``--groups``) of 1 to 6
rows, the describe preset and the mean alone: every cell takes the pooled split and the
run is large enough that each Python worker loads the compiled samplers
(:func:`~dprect.core.randomness.kernels`, past ``JIT_AFTER`` announced draws), so the
blocks are drawn as column arrays (:func:`~dprect.core.column_release.finish_columns`;
the default table's runs are too small for the compiled samplers and never reach it).
About 2 minutes on local[2].

Recorded on 61d6955 (the same after the #41 twin clean-up), the default runs give:
``bounds,count,sum,mean`` json 36e96790…, csv 004d7fdd…, parquet rows 71e01431…;
``count,mean,variance`` json c46f8620…, csv 3f5ca696…, parquet rows 3232c06d…;
``p25,median`` json 3a49a4c2…, csv a38e8b45…, parquet rows 8dd4e90c… (the ledger's
stored copy is the JSON's bytes). ``--tiny`` (every block of both runs drawn as column
arrays, checked once by a probe in the executors' describe step): ``bounds,count,sum,mean``
json c141ab8d…, csv d29cdf96…, parquet rows 60bcf12e…; ``mean`` json 0cf9934d…,
csv 9bd73a20…, parquet rows 64658729….
"""

from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import json
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

RUNS = ["bounds,count,sum,mean", "count,mean,variance", "p25,median"]
#: --tiny's runs: a pooled split with one noise scale (the sum's; no sum of squares)
TINY_RUNS = ["bounds,count,sum,mean", "mean"]
#: --tiny's default number of groups (each Python worker past JIT_AFTER announced draws)
TINY_GROUPS = 12_000


def _table(groups: int, tiny: bool = False) -> Any:
    import numpy as np
    import pyarrow as pa

    gen = np.random.default_rng(5)
    sizes = gen.integers(1, 7, groups) if tiny else gen.integers(0, 30, groups)
    g = np.repeat(np.arange(groups), sizes)
    n = len(g)
    return pa.table({"x": gen.normal(5.0, 2.0, n), "y": gen.lognormal(1.0, 1.0, n),
                     "z": -gen.exponential(30.0, n), "w": gen.normal(0.5, 4.0, n),
                     "g": pa.array([f"g{i}" for i in g], pa.string())})


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=None,
                    help=f"default 1500 ({TINY_GROUPS:,} with --tiny)")
    ap.add_argument("--tiny", action="store_true",
                    help="many tiny groups: blocks drawn as column arrays (module notes)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.groups is None:
        args.groups = TINY_GROUPS if args.tiny else 1500

    import pyarrow.parquet as pq

    from dprect.app import aggregate_flow
    from dprect.app.aggregate_flow import aggregate_settings, run_aggregate_flow
    from dprect.app.spine import Reporter
    from dprect.engines.spark import executor_draws
    from dprect.engines.spark.grouped_route import SparkGroupedRoute
    from dprect.engines.spark.session import local_session
    from dprect.release.ledger import Ledger

    executor_draws.CELLS_PER_BLOCK = 256
    spark = local_session("local[2]", app_name="dprect-aggregate-groups-digest",
                          conf={"spark.driver.memory": "2g"})
    out: dict[str, dict[str, str]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="digest-") as tmp:
            where = Path(tmp)
            pq.write_table(_table(args.groups, args.tiny), where / "t.parquet",
                           row_group_size=5000)
            listed = [f"g{i}" for i in range(args.groups)]
            for k, statistics in enumerate(TINY_RUNS if args.tiny else RUNS):
                run = where / f"run{k}"
                run.mkdir()
                Ledger(str(run / "ledger")).init()
                settings = aggregate_settings({
                    "input": str(where / "t.parquet"), "columns": ["x", "y", "z", "w"],
                    "group_by": "g", "groups": listed, "statistics": statistics,
                    "epsilon": 2.0, "seed": 11, "output": str(run / "r.json"),
                    "table": str(run / "t.csv"), "ledger": str(run / "ledger"),
                    "dataset": "d", "run_id": "run-1"})
                extra = aggregate_flow.table_sink("--table", str(run / "t.parquet"),
                                                  settings.mechanisms,
                                                  getattr(settings.plan, "statistics", ()))
                settings = type(settings)(**{**settings.__dict__,
                                             "sinks": [*settings.sinks, extra]})
                quiet = Reporter(say=lambda _: None, show=lambda _: None)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    run_aggregate_flow(settings, SparkGroupedRoute(lambda: (spark, False)),
                                       quiet)
                stored = sorted(glob.glob(str(run / "ledger" / "**" / "*.gz"),
                                          recursive=True))
                out[statistics] = {
                    "json": _sha((run / "r.json").read_bytes()),
                    "csv": _sha((run / "t.csv").read_bytes()),
                    "parquet rows": _sha(json.dumps(
                        pq.read_table(run / "t.parquet").to_pylist()).encode()),
                    "ledger stored": _sha(b"".join(gzip.decompress(Path(p).read_bytes())
                                                   for p in stored)),
                    "stored files": str(len(stored))}
                print(statistics, json.dumps(out[statistics]), flush=True)
    finally:
        spark.stop()
    if args.out is not None:
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
