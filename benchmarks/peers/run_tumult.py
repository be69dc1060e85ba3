"""Tumult Analytics 0.21 (``tmlt.analytics``, on the pyspark 3.5 it installs): the
library's own data-dependent bounds, then its average and sum with them. Runs inside the
``tumult`` virtual environment (``make bench-peers-venvs``); see
``benchmarks/peers_real.py``.

Per column and ε, pure DP (``PureDPBudget``), ``protected_change=AddOneRow()``:

* bounds (ε/2): ``QueryBuilder(...).get_bounds("x")`` — Tumult's documented way to get
  bounds for "other aggregations";
* mean (ε/2): ``.average("x", low, high)`` with those bounds, default mechanism (Laplace
  under pure DP; the library splits the ε between its sum and its count);
* sum (ε/2, the alternative query): ``.sum("x", low, high)``.

Speed. A Spark query costs seconds, so the ``runs`` repetitions are drawn as ``runs``
PUBLIC GROUPS of one query rather than as ``runs`` queries: the session's private table is
the column repeated once per repetition, tagged ``rep`` = 0..runs−1, and each query is
grouped by ``rep`` with ``KeySet.from_dict({"rep": [...]})``. Under ``AddOneRow`` a row of
the table is in one group, so Tumult gives each group exactly the noise of the ungrouped
query at the same ε (parallel composition); group ``r`` therefore IS repetition ``r`` of
the ungrouped query on the column. (The replicated table is a device of the benchmark,
not a privacy claim about it: the session's budget is infinite.) Bounds differ between
repetitions, so the average and the sum are asked once per distinct bound pair, grouped
over the repetitions that drew it. One Session (one Spark DataFrame) per column serves all
its ε. ``get_bounds`` returns Tumult's bounds, which are recorded.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections import defaultdict
from typing import Any

from peer_common import Cell, Clock, append, done_cells, key, load_manifest, parse_args, run_record


def spark_session() -> Any:
    """Local Spark whose Python workers are this environment's (Tumult's UDFs)."""
    import sys

    from pyspark.sql import SparkSession
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return (SparkSession.builder.master(os.environ.get("PEERS_SPARK_MASTER", "local[2]"))
            .appName("dprect-peers-tumult")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.sql.warehouse.dir",
                    os.path.abspath("benchmarks/output/peers/spark-warehouse"))
            .config("spark.driver.memory", os.environ.get("PEERS_SPARK_MEMORY", "2g"))
            .getOrCreate())


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    from pyspark.sql import functions as sf
    from tmlt.analytics import AddOneRow, KeySet, PureDPBudget, QueryBuilder, Session

    version = importlib.metadata.version("tmlt.analytics")
    manifest = load_manifest(args.manifest)
    done = done_cells(args.out)
    runs = int(manifest["runs"])
    epsilons = [float(e) for e in manifest["epsilons"]]
    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")
    reps = list(range(runs))
    for col in manifest["columns"]:
        todo = [e for e in epsilons
                if key("tumult", col["table"], col["column"], e) not in done]
        if not todo:
            continue
        clock = Clock()
        frame = (spark.read.parquet(col["parquet"])
                 .crossJoin(spark.range(runs).withColumnRenamed("id", "rep"))
                 .select("rep", sf.col("x").cast("double").alias("x"))
                 .cache())
        frame.count()
        session = Session.from_dataframe(privacy_budget=PureDPBudget(float("inf")),
                                         source_id="column", dataframe=frame,
                                         protected_change=AddOneRow())
        setup = clock.seconds()
        for i, eps in enumerate(todo):
            cell_clock = Clock()
            half = PureDPBudget(eps / 2)
            everyone = KeySet.from_dict({"rep": reps})
            b = session.evaluate(QueryBuilder("column").groupby(everyone).get_bounds("x"),
                                 half).collect()
            bounds = {int(r["rep"]): (float(r["x_lower_bound"]), float(r["x_upper_bound"]))
                      for r in b}
            by_pair: dict[tuple[float, float], list[int]] = defaultdict(list)
            for r in reps:
                by_pair[bounds[r]].append(r)
            mean: dict[int, Any] = {}
            total: dict[int, Any] = {}
            for (lo, hi), members in by_pair.items():
                keys = KeySet.from_dict({"rep": members})
                for name, target in (("average", mean), ("sum", total)):
                    q = getattr(QueryBuilder("column").groupby(keys), name)("x", lo, hi,
                                                                              name="v")
                    for row in session.evaluate(q, half).collect():
                        target[int(row["rep"])] = row["v"]
            out = [run_record(mean.get(r), total.get(r), *bounds[r]) for r in reps]
            cell = Cell(col["table"], col["column"], eps, col["npy"], col["parquet"],
                        col["n"])
            append(args.out, "tumult", "tmlt.analytics", version, cell, out,
                   cell_clock.seconds() + (setup if i == 0 else 0.0))
            print(f"tumult {col['table']}/{col['column']} ε={eps:g} done "
                  f"({len(by_pair)} bound pairs, {cell_clock.seconds():.0f} s)", flush=True)
        frame.unpersist()


if __name__ == "__main__":
    main()
