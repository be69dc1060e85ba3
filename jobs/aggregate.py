"""Release DP statistics per column and public group of a table on Spark, in one charge.

    spark-submit jobs/aggregate.py --config conf/aggregate.yaml [--set statistics=count,mean ...]

A thin adapter: the ``aggregate`` section becomes the settings of the one grouped-aggregate
flow (:func:`dprect.app.aggregate_flow.run_aggregate_flow`), run on the Spark engine
(:class:`dprect.engines.spark.grouped_route.SparkGroupedRoute`), as ``dprect aggregate
--engine spark`` does. ``aggregate.statistics`` names any statistics of the registry
(:data:`dprect.core.statistic.STATISTICS`; this list is checked against it by
tests/doc_lists.py): <!-- names:statistics-job -->``coverage`` (private clamping bounds;
with ``coverage``, ``grid``, ``rows``), any of ``bounds``, ``count``, ``sum``, ``mean``,
``variance``, ``std`` (with ``query_epsilon`` and ``plot``), any quantiles ``p1``,
``p5``, ``p10``, ``p25``, ``median``, ``p75``, ``p90``, ``p95``, ``p99`` (with
``plot``)<!-- /names:statistics-job --> — or statistics of several mechanisms (e.g.
``[mean, median, p90]``) in one charge and one pass, each on its declared share of
``epsilon`` (pure; no ``delta``, no ``plot``; the query's and ``coverage`` collide and are
not mixed: docs/privacy.md §11b). The record is the
mechanism's, or a mixed run's (method ``describe+quantiles``, the parts under ``parts``).
It reads ``aggregate.input`` (Parquet, CSV or Delta) and writes ``aggregate.output`` (the
result JSON: the mechanism's record), and when asked ``aggregate.table`` (one row per
(group, column): CSV for a path ending in ``.csv``, Parquet for ``.parquet``, else a Delta
table) and ``aggregate.plot`` (a PNG of each group's mean with its noise interval, or of its
quantiles as a ladder with their rank error; past 60 groups their distribution over the
groups). With
``aggregate.group_by`` the group values are the PUBLIC list ``aggregate.groups`` (or the
file ``aggregate.groups_file``), never read from the data (or, with
``aggregate.select_groups: true`` and ``aggregate.selection_epsilon``,
``aggregate.selection_delta``, the keys found privately: docs/privacy.md §18); the run is
charged once however many groups. With ``aggregate.ledger`` (and ``aggregate.dataset``) the
run spends before it releases (:mod:`dprect.release.guarded`); ``aggregate.run_id`` makes
it idempotent. ``jobs/private_bounds.py`` and ``jobs/describe.py`` are its presets
(:func:`table_main`).

Guarantees (the flow's): every parameter, the plan and the output locations are checked
before Spark starts; the plan is printed before the input is read; the input's schema is
checked before anything is reserved; nothing is written on failure. A refused run ends with
one line on stderr and a non-zero exit code (:mod:`dprect.app.jobs_support`). What the job
prints and writes is the private result and public settings only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from _common import Session, product_main
from pyspark.sql import SparkSession

from dprect.app.aggregate_flow import AggregateSettings, aggregate_settings, run_aggregate_flow
from dprect.app.jobs_support import Option, exit_now, table_options, table_settings
from dprect.app.options import AGGREGATE_COLUMNS, AGGREGATE_OPTIONS, AGGREGATE_UNSET
from dprect.app.table_product import GroupedRoute
from dprect.core.request import StatisticsRequest

PROG = "aggregate"
SECTION = "aggregate"

OPTIONS: dict[str, Option] = table_options(
    AGGREGATE_COLUMNS, StatisticsRequest,
    [o for o in AGGREGATE_OPTIONS[len(AGGREGATE_COLUMNS):] if o.group != "groups"],
    AGGREGATE_UNSET)



def settings(cfg: dict[str, Any]) -> AggregateSettings:
    """The run's settings from the ``aggregate`` section (every check that needs no
    data)."""
    return table_settings(cfg, SECTION, aggregate_settings)


def table_main(prog: str, description: str, section: str, options: dict[str, Option],
               settings: Callable[[dict[str, Any]], AggregateSettings],
               argv: Sequence[str] | None, spark: SparkSession | None,
               route: GroupedRoute | None = None) -> int:
    """The job of the aggregate product or of a preset: the ``section`` checked against
    ``options`` into the ``settings``, then the one flow on the Spark engine's route
    (``route``: another engine's, the tests' numpy one, instead)."""

    def engine(session: Session, cfg: dict[str, Any]) -> GroupedRoute:
        if route is not None:
            return route
        from dprect.engines.spark.grouped_route import SparkGroupedRoute

        return SparkGroupedRoute(session)

    return product_main(prog, description, section, options, settings, engine,
                        run_aggregate_flow, argv, spark)


def main(argv: list[str] | None = None, spark: SparkSession | None = None,
         route: GroupedRoute | None = None) -> int:
    """Entry point; ``spark`` lets tests pass a running session (it is not stopped), and
    ``route`` another engine's route (the tests' numpy one) instead of Spark's."""
    return table_main(PROG, "Release DP statistics per column and public group on Spark.",
                      SECTION, OPTIONS, settings, argv, spark, route)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
