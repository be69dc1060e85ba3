"""The one engine route of every grouped-aggregate run (``dprect aggregate`` and its presets
``bounds`` and ``describe``: :mod:`dprect.app.aggregate_flow`), as the product on the run
spine (:mod:`dprect.app.spine`) sees it: open the table for a
:class:`~dprect.core.statistic.StatisticsSpec` (read, schema checked, nothing drawn), then
the engine's one primitive (:meth:`GroupedPrepared.statistics`). The numpy engine's is
:class:`dprect.engines.grouped.NumpyGroupedRoute`, Spark's
:class:`dprect.engines.spark.grouped_route.SparkGroupedRoute`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from dprect.app.spine import Prepared
from dprect.core.randomness import RandomSource
from dprect.core.request import Source
from dprect.core.statistic import GroupedStatistics, Mechanism, StatisticsSpec


class GroupedPrepared(Prepared, Protocol):
    """A table read and checked, its engine ready; a context manager that releases what
    the engine holds (a session it started)."""

    def statistics(self, groups: list[str] | None = None) -> GroupedStatistics:
        """Every (group, column)'s merged statistics under the route's spec (a step that
        reads the private part), for the listed groups — or ``groups``, the keys a
        private selection kept (docs/privacy.md §18)."""
        ...

    def integral_columns(self) -> list[bool]:
        """Per column of the run, whether its DECLARED type is integral (an integer
        type, a decimal of scale 0; never a CSV column, whose types are inferred from its
        values): the schema and the input's format only, no row."""
        ...

    def key_counts(self) -> dict[str, int]:
        """The rows of every key of the group column (its text:
        :func:`dprect.engines.bounds_input.key_text`; nulls and non-finite numbers are no
        key) — the private input of a group selection, never printed."""
        ...

    def listed_keys(self, groups: list[str]) -> set[str]:
        """The key texts of a public list given with a private selection (the keys the
        selection leaves out: docs/privacy.md §18), read against the group column's type;
        a listed value the column cannot hold is refused (schema and list only)."""
        ...

    def draw(self, mechanisms: Sequence[Mechanism], plan: Any, group_names: Sequence[Any],
             columns: Sequence[str], rng: RandomSource, groups: list[str] | None = None,
             drawing: Callable[[], None] = lambda: None,
             each_block: Callable[[Any], None] | None = None,
             pack: Callable[[Any], bytes] | None = None) -> Any:
        """The run's release from the statistics under the route's spec (for the listed
        groups, or ``groups`` as :meth:`statistics` reads it; ``drawing`` is called as the
        draws start, for a progress line): the mechanism's result, or a mixed run's
        (:func:`dprect.engines.grouped.draw_statistics` on the driver; on Spark, for many
        groups, drawn in the executors where the groups' statistics are:
        :mod:`dprect.engines.spark.executor_draws`). The same result for a seed either
        way. With ``each_block`` a route may stream: hand each block's result (its
        groups' cells) to it in group order and return the result without cells; a
        route that does not stream never calls it. With ``pack`` too, a route may hand
        on ``pack`` of each block's result instead (its bytes), made where the block is
        drawn (Spark's executors)."""
        ...


class GroupedRoute(Protocol):
    """An engine's part of a grouped run (every grouped product's one route): read the
    table, check its schema (the columns numeric, the group column able to hold the
    listed values) and the spec's grids, ready the engine's grouped-statistics primitive
    (:mod:`dprect.engines.grouped`, :mod:`dprect.engines.spark.statistics`). Nothing is
    drawn, spent or written here, and no refusal depends on a value."""

    def open(self, source: Source, groups: list[str] | None, spec: StatisticsSpec,
             progress: Callable[[str], None]) -> GroupedPrepared:
        """``groups`` None with a group column: the groups are found privately later
        (:meth:`GroupedPrepared.key_counts`; a public list given with the selection is
        checked by :meth:`GroupedPrepared.listed_keys`)."""
        ...


__all__ = ["GroupedPrepared", "GroupedRoute"]
