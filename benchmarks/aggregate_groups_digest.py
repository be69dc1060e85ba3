"""Check: a digest of every output of seeded grouped-aggregate runs drawn in the
executors (issue #42), to compare a change's outputs with its base's, bit for bit.

    python benchmarks/aggregate_groups_digest.py [--groups 1500] [--out FILE]

Each run (the describe preset; count, mean and variance; two quantiles) is seeded, drawn
in the executors of a local session in blocks of about 256 cells, and written as the
command line writes it: a budget ledger (its stored copy of the record), the JSON output,
a CSV table and a Parquet table. The script prints one SHA-256 per output and run (the
ledger's stored copy by its decompressed text, the Parquet table by its rows), and with
``--out`` writes them as JSON: run it on both trees and compare the files.
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


def _table(groups: int) -> Any:
    import numpy as np
    import pyarrow as pa

    gen = np.random.default_rng(5)
    sizes = gen.integers(0, 30, groups)
    g = np.repeat(np.arange(groups), sizes)
    n = len(g)
    return pa.table({"x": gen.normal(5.0, 2.0, n), "y": gen.lognormal(1.0, 1.0, n),
                     "z": -gen.exponential(30.0, n), "w": gen.normal(0.5, 4.0, n),
                     "g": pa.array([f"g{i}" for i in g], pa.string())})


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=1500)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

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
            pq.write_table(_table(args.groups), where / "t.parquet", row_group_size=5000)
            listed = [f"g{i}" for i in range(args.groups)]
            for k, statistics in enumerate(RUNS):
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
