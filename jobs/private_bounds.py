"""Release private clamping bounds for the columns of a table on Spark.

    spark-submit jobs/private_bounds.py --config conf/private_bounds.yaml [--set epsilon=0.5 ...]

A thin adapter, the preset ``coverage`` of ``jobs/aggregate.py``: the ``bounds`` section
becomes the settings of the one grouped-aggregate flow
(:func:`dprect.app.aggregate_flow.run_aggregate_flow`), run on the Spark engine
(:class:`dprect.engines.spark.grouped_route.SparkGroupedRoute`), as ``dprect bounds --engine
spark`` does. It reads ``bounds.input`` (Parquet, CSV or Delta) and writes
``bounds.output`` (the result JSON: per group and column the lower and upper bound, the
guarantee, the plan, the coverage statement and the bounds in the forms OpenDP, Tumult
Analytics and diffprivlib take) and, when asked, ``bounds.table`` (one row per (group,
column): CSV for a path ending in ``.csv``, Parquet for ``.parquet``, else a Delta
table). All groups and columns are
counted in one Spark pass. With ``bounds.group_by`` the group values are the PUBLIC list
``bounds.groups`` (or the file ``bounds.groups_file``), never read from the data (or, with
``bounds.select_groups: true`` and ``bounds.selection_epsilon``,
``bounds.selection_delta``, the keys found privately: docs/privacy.md §18); the run is
charged once. With ``bounds.ledger`` (and ``bounds.dataset``) the run spends before it
releases (:mod:`dprect.release.guarded`); ``bounds.run_id`` makes it idempotent.

Guarantees and refusals: jobs/aggregate.py's (the one flow's).
"""

from __future__ import annotations

import sys
from typing import Any

from aggregate import table_main
from pyspark.sql import SparkSession

from dprect.app.aggregate_flow import AggregateSettings, bounds_settings
from dprect.app.jobs_support import Option, exit_now, table_options, table_settings
from dprect.app.options import BOUNDS_COLUMNS, BOUNDS_GRID, BOUNDS_OUTPUTS
from dprect.core.request import BoundsRequest

PROG = "private_bounds"
SECTION = "bounds"

OPTIONS: dict[str, Option] = table_options(BOUNDS_COLUMNS, BoundsRequest,
                                           (BOUNDS_GRID, *BOUNDS_OUTPUTS))


def settings(cfg: dict[str, Any]) -> AggregateSettings:
    """The run's settings from the ``bounds`` section (every check that needs no data)."""
    return table_settings(cfg, SECTION, bounds_settings)


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    """Entry point; ``spark`` lets tests pass a running session (it is not stopped)."""
    return table_main(PROG, "Release private clamping bounds on Spark.", SECTION, OPTIONS,
                      settings, argv, spark)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
