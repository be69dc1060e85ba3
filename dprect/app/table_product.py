"""What every grouped-table product does alike on the run spine (:mod:`dprect.app.spine`):
private bounds (:class:`dprect.app.bounds_flow.BoundsProduct`) and DP aggregates
(:class:`dprect.app.describe_flow.DescribeProduct`).

Both read one table with a PUBLIC group list and make their plan once, from public
inputs. So both read the same paths (the input and the groups file), reserve the plan's
guarantee ONCE however many groups (the groups are disjoint sets of rows: parallel
composition) under their method over their columns, refuse a recorded result of another
product by what it is not, and summarise a released record from the record alone. A
product states only what differs: its method, its record, its plan's printout, how its
engine's route is opened and what it computes there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from dprect.app.products import foreign
from dprect.app.spine import Prepared, RunSettings
from dprect.core.accounting import Guarantee
from dprect.core.request import Source
from dprect.core.statistic import GroupedStatistics, StatisticsSpec
from dprect.release.guarded import Charge


class GroupedPrepared(Prepared, Protocol):
    """A table read and checked, its engine ready; a context manager that releases what
    the engine holds (a session it started)."""

    def statistics(self) -> GroupedStatistics:
        """Every (group, column)'s merged statistics under the route's spec (the only
        step that reads the private part)."""
        ...


class GroupedRoute(Protocol):
    """An engine's part of a grouped run (every grouped product's one route): read the
    table, check its schema (the columns numeric, the group column able to hold the
    listed values) and the spec's grids, ready the engine's grouped-statistics primitive
    (:mod:`dprect.engines.grouped`, :mod:`dprect.engines.spark.statistics`). Nothing is
    drawn, spent or written here, and no refusal depends on a value."""

    def open(self, source: Source, groups: list[str] | None, spec: StatisticsSpec,
             progress: Callable[[str], None]) -> GroupedPrepared:
        ...


class TablePlan(Protocol):
    """A grouped-table product's plan, as the charge sees it."""

    @property
    def guarantee(self) -> Guarantee: ...


class TableSettings(RunSettings, Protocol):
    """A grouped-table product's checked settings: the table, the public group values
    (None: no groups), the groups file (None: none) and the plan."""

    @property
    def source(self) -> Source: ...

    @property
    def groups(self) -> list[str] | None: ...

    @property
    def groups_file(self) -> str | None: ...

    @property
    def plan(self) -> TablePlan: ...


def group_names(groups: list[str] | None) -> list[str | None]:
    """The groups as the core names them: the listed values, or one unnamed group."""
    return list(groups) if groups is not None else [None]


S = TypeVar("S", bound=TableSettings)

#: with more listed groups than this, stdout shows one summary line instead of a line per
#: (group, column): the full result is in the outputs (a public threshold on a public count)
LISTED_GROUPS = 50


class RecordKind(NamedTuple):
    """What a grouped-table product's released record is: the ledger's ``method`` of its
    runs, the product's name in the registry (:mod:`dprect.app.products`: a recorded
    result of another product is refused by it) and how a record is summarised (from the
    record alone)."""

    method: str
    product: str
    summary: Callable[[Mapping[str, Any]], list[str]]


class TableProduct(Generic[S]):
    """The shared half of a grouped-table product, built from its checked settings (its
    plan already made). A subclass names ``what`` and ``noun`` (as
    :class:`~dprect.app.spine.Product` does) and its :class:`RecordKind` ``kind``, and
    implements the steps that differ (``announce``, ``open``, ``compute``)."""

    what: str
    noun: str
    kind: RecordKind

    def __init__(self, settings: S) -> None:
        self.settings = settings

    def inputs(self, name: Callable[[str], str]) -> list[tuple[str, str | None]]:
        return [(name("input"), self.settings.source.path),
                (name("groups_file"), self.settings.groups_file)]

    def charge(self) -> Charge:
        """The plan's guarantee, once: the same whatever the number of groups."""
        return Charge(self.settings.plan.guarantee, self.kind.method,
                      list(self.settings.source.columns))

    def foreign(self, record: Mapping[str, Any]) -> str | None:
        return foreign(self.kind.product, record)

    def working(self, verb: str, progress: Callable[[str], None]) -> None:
        """The progress line of the compute: ``verb`` so many columns in so many groups."""
        progress(f"{verb} {len(self.settings.source.columns)} column(s) in "
                 f"{len(group_names(self.settings.groups))} group(s)")

    def summary(self, record: dict[str, Any], name: Callable[[str], str]
                ) -> tuple[list[str], list[str]]:
        """A line per (group, column) of the record, or, with more than
        :data:`LISTED_GROUPS` listed groups, one line counting them (the outputs, named
        after it, hold every cell)."""
        groups = len(group_names(self.settings.groups))
        if groups <= LISTED_GROUPS:
            return self.kind.summary(record), []
        columns = len(self.settings.source.columns)
        return [f"{groups} groups x {columns} column(s) = {groups * columns} cells released "
                f"(more than {LISTED_GROUPS} groups: not listed here; every cell is in the "
                f"outputs below)"], []


__all__ = ["LISTED_GROUPS", "RecordKind", "TablePlan", "TableProduct", "TableSettings",
           "group_names"]
