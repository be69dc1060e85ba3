"""A Spark Connect client run as a child process by tests/spark/test_connect.py:

    python connect_client.py sc://HOST:PORT TABLE.parquet OUT.json

A user's own ``SparkSession.builder.remote(...)`` session, handed to dprect's Python API:
the fit on every Spark strategy, the bounds' one pass, and what the engine reads without a
JVM (partitions, the JIT flag from the server's configuration). Writes what it saw as
JSON. Fit arguments are those of :data:`FIT` (the test runs the same on the classic
session)."""

from __future__ import annotations

import json
import sys
import warnings

FIT = {"features": ["a", "b"], "label": "y", "grid": "-3:3:64", "epsilon": 4.0,
       "delta": 1e-6, "seed": 5}
STRATEGIES = ("collect", "pass", "prefetch")  # rounds runs no Connect-specific code
BOUNDS = {"columns": ["a", "b"], "group_by": "part", "groups": ["even", "odd"]}


def main(url: str, table: str, out: str) -> None:
    warnings.simplefilter("ignore")
    from pyspark.sql import SparkSession

    from dprect.core.domains import FloatBins
    from dprect.core.statistic import COVERAGE
    from dprect.engines.spark.fit import fit_dataframe
    from dprect.engines.spark.remote import is_connect, partition_count
    from dprect.engines.spark.session import compiles_huge_methods
    from dprect.engines.spark.statistics import spark_statistics

    spark = SparkSession.builder.remote(url).getOrCreate()
    df = spark.read.parquet(table)
    report = {
        "connect": is_connect(spark) and is_connect(df),
        "partitions": partition_count(df),
        "partitions_of_8": partition_count(df.repartition(8)),
        "compiles_huge_methods": compiles_huge_methods(spark),
        "fits": {plan: fit_dataframe(df, strategy=plan, **FIT).to_json()
                 for plan in STRATEGIES},
    }
    domains = [FloatBins(12)] * len(BOUNDS["columns"])
    histograms = spark_statistics(df, BOUNDS["columns"], COVERAGE.spec(domains),
                                  group_by="part", groups=BOUNDS["groups"])
    report["histograms"] = {f"{g},{c}": [h.keys.tolist(), h.counts.tolist()]
                            for (g, c), h in sorted(histograms.items())}
    spark.stop()
    with open(out, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main(*sys.argv[1:4])
