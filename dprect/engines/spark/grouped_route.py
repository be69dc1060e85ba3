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

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T  # noqa: N812

from dprect.core.errors import InputDataError, ParameterError
from dprect.core.mixed import repeated
from dprect.core.randomness import RandomSource
from dprect.core.request import Source
from dprect.core.statistic import GroupedStatistics, Mechanism, StatisticsSpec
from dprect.engines.bounds_input import (
    add_key_counts,
    declared_integral,
    listed_keys,
    resolve_groups,
)
from dprect.engines.grouped import draw_statistics, grouped_statistics
from dprect.engines.prepared import PreparedRun
from dprect.engines.spark.checks import integral_type
from dprect.engines.spark.executor_draws import draw_in_executors, executor_route
from dprect.engines.spark.source import (
    SPARK_ERRORS,
    detect_format,
    opened_source,
    spark_message,
)
from dprect.engines.spark.sql import ident
from dprect.engines.spark.statistics import check_grid, check_schema, spark_statistics


class SparkGroupedPrepared(PreparedRun):
    """A checked DataFrame, ready for :meth:`draw` (or :meth:`statistics`); closing it
    runs ``on_close`` (e.g. stops a session started for this run)."""

    def __init__(self, df: DataFrame, source: Source, groups: list[str] | None,
                 spec: StatisticsSpec, on_close: Callable[[], None] | None = None,
                 integral: Sequence[bool] = ()) -> None:
        super().__init__(on_close)
        self.df = df
        self.source = source
        self.groups = groups
        self.spec = spec
        self.integral = list(integral) or [False] * len(source.columns)

    def integral_columns(self) -> list[bool]:
        """Per column read, whether its declared type is integral (never for CSV, whose
        types Spark infers from the values:
        :func:`~dprect.engines.bounds_input.declared_integral`)."""
        return list(self.integral)

    def statistics(self, groups: list[str] | None = None) -> GroupedStatistics:
        """The one pass, for the listed groups or ``groups`` (the keys a private selection
        kept). A selection that kept no key (and no group listed) has no cell: the numpy
        engine's statistics of no group, with no Spark job — the pass has no group to
        lay its cells out by."""
        if groups is not None and not groups:
            empty = [np.empty(0)] * len(self.source.columns)
            return grouped_statistics(repeated(empty, self.spec), np.empty(0, np.int32), 0,
                                      self.spec)
        return spark_statistics(self.df, repeated(self.source.columns, self.spec), self.spec,
                                group_by=self.source.group_by,
                                groups=self.groups if groups is None else groups)

    def draw(self, mechanisms: Sequence[Mechanism], plan: Any, group_names: Sequence[Any],
             columns: Sequence[str], rng: RandomSource, groups: list[str] | None = None,
             drawing: Callable[[], None] = lambda: None,
             each_block: Callable[[Any], None] | None = None,
             pack: Callable[[Any], bytes] | None = None) -> Any:
        """The run's release, for the listed groups or ``groups`` (the keys a private
        selection kept): in the executors on a run of many groups
        (:func:`~dprect.engines.spark.executor_draws.executor_route`: public numbers
        only), else from the collected cells on the driver; the same for a seed.
        ``drawing`` is called when the draws start (after the pass on the driver route;
        at once in the executors, where the pass and the draws run as one). With
        ``each_block``, a run drawn in the executors may stream: each block's result goes
        to it in group order and the result returned holds no cells
        (:func:`~dprect.engines.spark.executor_draws.draw_in_executors`) — with ``pack``,
        each block's ``pack`` made in the executor that drew it."""
        listed = self.groups if groups is None else groups
        if executor_route(mechanisms, len(group_names), len(columns), rng.seeded):
            drawing()
            return draw_in_executors(self.df, repeated(self.source.columns, self.spec),
                                     self.spec, mechanisms, plan, group_names, columns, rng,
                                     group_by=self.source.group_by, groups=listed,
                                     each_block=each_block, pack=pack)
        cells = self.statistics(groups)
        drawing()
        return draw_statistics(mechanisms, plan, cells, group_names, columns, rng)

    def key_counts(self) -> dict[str, int]:
        """The rows of every key of the group column: a ``groupBy`` count in the
        executors (numbers grouped as they are compared: a column of an integer type by
        its exact integers, another as doubles — a float widened exactly), the (key, count)
        pairs collected to the driver, where the selection draws
        (:func:`dprect.core.group_selection.select_keys`)."""
        group_by = self.source.group_by
        if group_by is None:
            raise ParameterError("a group selection needs a group column")
        kind = check_schema(self.df, [], group_by) or "null"
        if kind == "null":
            return {}
        key = f"CAST({ident(group_by)} AS DOUBLE)" if kind == "numeric" \
            and not integral_spark(self.df, group_by) else ident(group_by)
        try:
            rows = self.df.selectExpr(f"{key} AS k").where("k IS NOT NULL") \
                .groupBy("k").count().collect()
        except SPARK_ERRORS as exc:
            raise InputDataError(f"Spark failed while counting the groups: "
                                 f"{spark_message(exc)}") from None
        return add_key_counts({}, [r[0] for r in rows], [r[1] for r in rows], kind)

    def listed_keys(self, groups: list[str]) -> set[str]:
        """The key texts of a public list given with a private selection
        (:func:`~dprect.engines.bounds_input.listed_keys`): the group column's kind from
        the schema, no Spark job."""
        group_by = self.source.group_by
        if group_by is None:
            raise ParameterError("a group selection needs a group column")
        return listed_keys(groups, check_schema(self.df, [], group_by) or "null", group_by,
                           integral=integral_spark(self.df, group_by),
                           single=single_spark(self.df, group_by))


def integral_spark(df: DataFrame, column: str) -> bool:
    """Whether ``df``'s column ``column`` holds integers only (its schema only:
    :func:`~dprect.engines.spark.checks.integral_type`)."""
    return integral_type(df.schema[column].dataType)


def single_spark(df: DataFrame, column: str) -> bool:
    """Whether ``df``'s column ``column`` is a float (float32), whose keys are compared
    as float32 (its schema only: :func:`~dprect.engines.row_kernels.single_key`)."""
    return isinstance(df.schema[column].dataType, T.FloatType)


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
            if source.group_by is not None and groups is not None:  # None: found privately
                resolve_groups(list(groups), kind or "null", source.group_by,
                               integral=integral_spark(df, source.group_by),
                               single=single_spark(df, source.group_by))
            fmt = source.format or detect_format(df.sparkSession, source.path)
            integral = declared_integral(fmt, [integral_spark(df, c)
                                               for c in source.columns])
            return SparkGroupedPrepared(df, source, groups, spec, stop, integral)


def cli_grouped_route(master: str | None = None, remote: str | None = None
                      ) -> SparkGroupedRoute:
    """The Spark route of ``dprect bounds|describe --engine spark --master M | --remote
    URL``."""
    from dprect.engines.spark.cli import cli_session

    return SparkGroupedRoute(lambda: cli_session(master, remote))


__all__ = ["SparkGroupedPrepared", "SparkGroupedRoute", "cli_grouped_route", "integral_spark",
           "single_spark"]
