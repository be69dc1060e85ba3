"""The Spark engine's route of a grouped-aggregate run (``dprect aggregate|bounds|describe
--engine spark``, ``jobs/aggregate.py``, ``jobs/private_bounds.py``, ``jobs/describe.py``):
:class:`SparkGroupedRoute` reads the table and checks its schema and grids with no Spark
job; the prepared run's :meth:`~SparkGroupedPrepared.draw` then releases the cells — on
a run of many groups drawn in the executors
(:func:`~dprect.engines.spark.executor_draws.draw_in_executors`), else from the pass's
cells collected to the driver (:func:`~dprect.engines.spark.statistics.spark_statistics`,
then :func:`~dprect.engines.grouped.draw_statistics`); the choice is public
(:func:`~dprect.engines.spark.executor_draws.executor_route`) and the result for a seed the
same."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from dprect.core.mixed import repeated
from dprect.core.randomness import RandomSource
from dprect.core.request import Source
from dprect.core.statistic import GroupedStatistics, Mechanism, StatisticsSpec
from dprect.engines.bounds_input import resolve_groups
from dprect.engines.grouped import draw_statistics
from dprect.engines.prepared import PreparedRun
from dprect.engines.spark.executor_draws import draw_in_executors, executor_route
from dprect.engines.spark.source import opened_source
from dprect.engines.spark.statistics import check_grid, check_schema, spark_statistics


class SparkGroupedPrepared(PreparedRun):
    """A checked DataFrame, ready for :meth:`statistics`; closing it runs ``on_close``
    (e.g. stops a session started for this run)."""

    def __init__(self, df: DataFrame, source: Source, groups: list[str] | None,
                 spec: StatisticsSpec, on_close: Callable[[], None] | None = None) -> None:
        super().__init__(on_close)
        self.df = df
        self.source = source
        self.groups = groups
        self.spec = spec

    def statistics(self) -> GroupedStatistics:
        return spark_statistics(self.df, repeated(self.source.columns, self.spec), self.spec,
                                group_by=self.source.group_by, groups=self.groups)

    def draw(self, mechanisms: Sequence[Mechanism], plan: Any, group_names: Sequence[Any],
             columns: Sequence[str], rng: RandomSource) -> Any:
        """The run's release: in the executors on a run of many groups
        (:func:`~dprect.engines.spark.executor_draws.executor_route`: public numbers
        only), else from the collected cells on the driver; the same for a seed."""
        if executor_route(mechanisms, len(group_names), len(columns), rng.seeded):
            return draw_in_executors(self.df, repeated(self.source.columns, self.spec),
                                     self.spec, mechanisms, plan, group_names, columns, rng,
                                     group_by=self.source.group_by, groups=self.groups)
        return draw_statistics(mechanisms, plan, self.statistics(), group_names, columns,
                               rng)


class SparkGroupedRoute:
    """The Spark engine's part of a grouped run: start or reuse a session (``session``
    returns it and whether this run owns it), read the table, check its schema — every
    column numeric, the group column able to hold the listed values — and the spec's
    grids, with no Spark job beyond what reading needs. A session the run owns is stopped
    when the prepared run closes, or at once if reading fails."""

    def __init__(self, session: Callable[[], tuple[SparkSession, bool]]) -> None:
        self.session = session

    def open(self, source: Source, groups: list[str] | None, spec: StatisticsSpec,
             progress: Callable[[str], None]) -> SparkGroupedPrepared:
        with opened_source(self.session, source, progress) as (df, stop):
            for c in spec.columns:
                check_grid(c.grid)
            kind = check_schema(df, source.columns, source.group_by)
            if source.group_by is not None:
                resolve_groups(list(groups or []), kind or "null", source.group_by)
            return SparkGroupedPrepared(df, source, groups, spec, stop)


def cli_grouped_route(master: str | None = None, remote: str | None = None
                      ) -> SparkGroupedRoute:
    """The Spark route of ``dprect bounds|describe --engine spark --master M | --remote
    URL``."""
    from dprect.engines.spark.cli import cli_session

    return SparkGroupedRoute(lambda: cli_session(master, remote))


__all__ = ["SparkGroupedPrepared", "SparkGroupedRoute", "cli_grouped_route"]
