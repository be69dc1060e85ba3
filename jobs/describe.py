"""Release DP count, sum and mean per column and public group of a table on Spark.

    spark-submit jobs/describe.py --config conf/describe.yaml [--set epsilon=0.5 ...]

A thin adapter, the preset ``bounds,count,sum,mean`` of ``jobs/aggregate.py``: the
``describe`` section becomes the settings of the one grouped-aggregate flow
(:func:`dprect.app.aggregate_flow.run_aggregate_flow`), run on the Spark engine
(:class:`dprect.engines.spark.grouped_route.SparkGroupedRoute`), as ``dprect describe --engine
spark`` does. It reads ``describe.input`` (Parquet, CSV or Delta) and writes
``describe.output`` (the result JSON: per group and column the lower and upper bound used,
the count, the sum and the mean; the guarantee; the plan with its budget split and accuracy
statements), and when asked ``describe.table`` (one row per (group, column): CSV for a path
ending in ``.csv``, Parquet for ``.parquet``, else a Delta table) and ``describe.plot`` (a
PNG of each group's mean per column with its noise's error bar). With ``describe.group_by``
the group values are the PUBLIC list ``describe.groups`` (or the file
``describe.groups_file``), never read from the data (or, with ``describe.select_groups:
true`` and ``describe.selection_epsilon``, ``describe.selection_delta``, the keys found
privately: docs/privacy.md §18); the run is charged once however many groups. With
``describe.ledger`` (and ``describe.dataset``) the run spends before it releases
(:mod:`dprect.release.guarded`); ``describe.run_id`` makes it idempotent.

Guarantees and refusals: jobs/aggregate.py's (the one flow's).
"""

from __future__ import annotations

import sys
from typing import Any

from aggregate import table_main
from pyspark.sql import SparkSession

from dprect.app.aggregate_flow import AggregateSettings, describe_settings
from dprect.app.jobs_support import Option, exit_now, table_options, table_settings
from dprect.app.options import DESCRIBE_COLUMNS, DESCRIBE_OUTPUTS, DESCRIBE_QUERY
from dprect.app.table_product import GroupedRoute
from dprect.core.request import DescribeRequest

PROG = "describe"
SECTION = "describe"

OPTIONS: dict[str, Option] = table_options(DESCRIBE_COLUMNS, DescribeRequest,
                                           (*DESCRIBE_QUERY, *DESCRIBE_OUTPUTS))


def settings(cfg: dict[str, Any]) -> AggregateSettings:
    """The run's settings from the ``describe`` section (every check that needs no
    data)."""
    return table_settings(cfg, SECTION, describe_settings)


def main(argv: list[str] | None = None, spark: SparkSession | None = None,
         route: GroupedRoute | None = None) -> int:
    """Entry point; ``spark`` lets tests pass a running session (it is not stopped), and
    ``route`` another engine's route (the tests' numpy one) instead of Spark's."""
    return table_main(PROG, "Release DP count, sum and mean per column and public group "
                            "on Spark.", SECTION, OPTIONS, settings, argv, spark,
                      route)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
