"""The grouped-aggregate product on the run spine (:mod:`dprect.app.spine`): ``dprect
aggregate --statistics S1,S2,...`` on either engine and ``jobs/aggregate.py`` — any
statistics of the registry (:data:`dprect.core.statistic.STATISTICS`) per public group and
column, drawn by one mechanism, in ONE charge. ``dprect bounds`` (``jobs/private_bounds.py``)
and ``dprect describe`` (``jobs/describe.py``) are its presets: the coverage bounds
(``coverage``) and the query mechanism's count, sum and mean with their bounds
(``bounds,count,sum,mean``), their outputs for a seed the ones they gave as products of
their own (tests/app/test_golden.py). :func:`dprect.aggregate` is the in-memory twin for
Python data (same row rules, same draws for a seed).

:func:`aggregate_settings` checks a front end's values: the statistics (every name in the
registry, all of ONE mechanism: :func:`asked_statistics`), **the plan** (the mechanism's
— :func:`dprect.core.aggregates.plan_describe` or :func:`dprect.core.bounds.plan_bounds`
—, made once, there, from public inputs only), the columns, the group list (a PUBLIC list:
``--groups`` or a file, never read from the data: :mod:`dprect.app.groups`) and the
outputs. On the spine, :class:`AggregateProduct` announces the plan (its mechanism's
printout: the budget split and accuracy statements, or the guarantee and the coverage);
the engine's route reads the table and checks its schema (the one
:class:`~dprect.app.table_product.GroupedRoute`); the charge is the plan's guarantee,
reserved ONCE however many groups (disjoint rows: parallel composition); the compute runs
the engine's one primitive for the mechanism's spec (:meth:`Mechanism.spec`) and the
mechanism's draws from the merged cells on the driver (:meth:`Mechanism.draw`); the
release goes to the result JSON (:mod:`dprect.release.aggregate_record`: the mechanism's
record), with ``--table`` one row per (group, column) as CSV or Delta
(:mod:`dprect.release.aggregate_table`: its columns the statistics' outputs), with
``--plot`` a PNG of the means with their noise's error bars
(:mod:`dprect.release.aggregate_plot`; the query mechanism's count and mean).

Row rules (row-local: neighbouring tables stay neighbouring, no privacy cost): every row
counts; a null, NaN or ±inf value is left out of its column only; a row whose group value
is not in the public list (another value, a null) is dropped and no group outside the list
is reported; a listed group without rows is released all the same (noise only).

The numpy route is :class:`dprect.engines.grouped.NumpyGroupedRoute`; the Spark route,
:class:`dprect.engines.spark.statistics.SparkGroupedRoute`, imports pyspark and is loaded
only when a front end chooses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dprect.app.options import statistics_choices
from dprect.app.spine import Reporter, run_release
from dprect.app.table_product import (
    GroupedPrepared,
    GroupedRoute,
    RecordKind,
    TableProduct,
    group_names,
)
from dprect.app.table_run import checked_seed, table_run
from dprect.core.accounting import Guarantee
from dprect.core.aggregates import STATISTICS as QUERY_STATISTICS
from dprect.core.aggregates import DescribePlan
from dprect.core.bounds import BoundsPlan, BoundsRequest
from dprect.core.domains import Domain, FloatBins, GridArg, resolve_domains
from dprect.core.errors import ParameterError
from dprect.core.randomness import RandomSource
from dprect.core.request import Source, request_from
from dprect.core.statistic import COVERAGE, QUERY, SEARCH_GRID, STATISTICS, Mechanism
from dprect.engines import grouped  # noqa: F401  (registers the mechanisms' plans and draws)
from dprect.release.aggregate_plot import DescribePngSink
from dprect.release.aggregate_record import SHAPES, aggregate_record, summary_lines
from dprect.release.aggregate_table import table_sink
from dprect.release.guarded import LedgerSettings, Outcome
from dprect.release.sinks import Sink

#: ``describe --statistics none``: the bounds alone (aimed at ``--query-epsilon``)
NO_STATISTICS = "none"
#: the options only one mechanism reads: a run of the other refuses them
OWN_OPTIONS = {QUERY.name: ("query_epsilon", "plot"), COVERAGE.name: ("grid", "rows")}


# -- the statistics asked for -------------------------------------------------------------
def _names(value: str | Sequence[str]) -> list[str]:
    """A list of names, or comma-separated text."""
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    return [str(v).strip() for v in value]


def asked_statistics(value: str | Sequence[str] | None, name: Callable[[str], str] = str
                     ) -> tuple[Mechanism, tuple[str, ...]]:
    """``--statistics``: the mechanism and the names asked for — every name in the
    registry (:data:`dprect.core.statistic.STATISTICS`), none twice, all of one
    mechanism (a run draws one mechanism's statistics)."""
    names = [] if value is None else _names(value)
    if not names:
        raise ParameterError(f"{name('statistics')} is required: {statistics_choices()}")
    unknown = [n for n in names if n not in STATISTICS]
    if unknown:
        raise ParameterError(f"{name('statistics')} must be among {', '.join(STATISTICS)}, "
                             f"got {unknown[0]!r}")
    if len(set(names)) != len(names):
        raise ParameterError(f"{name('statistics')} names a statistic twice")
    mechanisms = {STATISTICS[n].mechanism.name: STATISTICS[n].mechanism for n in names}
    if len(mechanisms) > 1:
        raise ParameterError(f"{name('statistics')}: one run draws one mechanism's "
                             f"statistics: {statistics_choices()}")
    return next(iter(mechanisms.values())), tuple(names)


def describe_statistics(value: str | Sequence[str] | None, name: Callable[[str], str] = str
                        ) -> tuple[str, ...]:
    """``describe --statistics``: None → all of count, sum, mean; ``none`` → () (the
    bounds alone); else the named ones (checked by the plan)."""
    if value is None:
        return QUERY_STATISTICS
    names = _names(value)
    if [n.lower() for n in names] == [NO_STATISTICS]:
        return ()
    if not names:
        raise ParameterError(f"{name('statistics')} is empty: name some of "
                             f"{', '.join(QUERY_STATISTICS)}, or {NO_STATISTICS!r}")
    return tuple(names)


# -- each mechanism's plan, as a front end asks for it ------------------------------------
def bounds_domains(grid: GridArg, columns: list[str]) -> list[Domain]:
    """The coverage bounds' domains: :data:`~dprect.app.options.DEFAULT_BOUNDS_GRID`
    when none is given, else as ``--grid`` reads (one spec for all, or ``name=SPEC,...``)."""
    if grid is None or (isinstance(grid, str) and not grid.strip()):
        return [FloatBins() for _ in columns]
    return resolve_domains(grid, columns)


def domains_of(mechanism: Mechanism, grid: GridArg, columns: list[str]) -> list[Domain]:
    """What the engine counts each column on: the coverage bounds' domains
    (:func:`bounds_domains`), the query mechanism's search grid."""
    if mechanism is COVERAGE:
        return bounds_domains(grid, columns)
    return [SEARCH_GRID] * len(columns)


def _columns(values: Mapping[str, Any], name: Callable[[str], str]) -> list[str]:
    columns = values.get("columns")
    if not columns:
        raise ParameterError(f"{name('columns')} is required")
    return list(columns)


def _coverage_plan(values: Mapping[str, Any], statistics: Sequence[str],
                   name: Callable[[str], str]) -> BoundsPlan:
    if values.get("epsilon") is None:
        raise ParameterError("epsilon is required")
    request = request_from(BoundsRequest, {k: v for k, v in values.items() if v is not None})
    columns = _columns(values, name)
    return COVERAGE.plan(request, domains_of(COVERAGE, values.get("grid"), columns),
                         rows=values.get("rows"))


def _query_plan(values: Mapping[str, Any], statistics: Sequence[str],
                name: Callable[[str], str]) -> DescribePlan:
    if values.get("epsilon") is None:
        raise ParameterError(f"{name('epsilon')} is required")
    columns = _columns(values, name)
    return QUERY.plan(values["epsilon"], len(columns), delta=values.get("delta"),
                      neighbouring=values.get("neighbouring"), beta=values.get("beta"),
                      statistics=tuple(s for s in statistics if s != "bounds"),
                      query_epsilon=values.get("query_epsilon"))


def _of(mechanism: str) -> str:
    """The statistics ``mechanism`` draws, as a run names them (from the registry)."""
    return ", ".join(repr(s.name) for s in STATISTICS.values()
                     if s.mechanism.name == mechanism)


def plan_of(mechanism: Mechanism, values: Mapping[str, Any], statistics: Sequence[str],
            name: Callable[[str], str] = str) -> Any:
    """The plan alone (``--plan-only``, and the run's one plan) of ``mechanism`` for the
    ``statistics``: from the budget options, the columns and the mechanism's own options
    (the coverage bounds' ``grid`` and ``rows``; the query's ``query_epsilon``); an option
    of the other mechanism is refused. Nothing is read."""
    for mine, theirs in OWN_OPTIONS.items():
        given = [k for k in theirs if values.get(k) is not None]
        if mine != mechanism.name and given:
            raise ParameterError(f"{name(given[0])} is an option of the statistics "
                                 f"{_of(mine)} only, not of {_of(mechanism.name)}")
    planner = _coverage_plan if mechanism is COVERAGE else _query_plan
    return planner(values, statistics, name)


def plan_lines(mechanism: Mechanism, the_plan: Any, columns: Sequence[str],
               groups: int | None) -> list[str]:
    """What a run prints before it reads the input (public inputs only)."""
    if mechanism is COVERAGE:
        return coverage_lines(the_plan, columns, groups)
    return query_lines(the_plan, columns, groups)


def plan_text(mechanism: Mechanism, the_plan: Any, columns: Sequence[str]) -> str:
    """``--plan-only``: the coverage plan's table, or the query plan's lines."""
    if mechanism is COVERAGE:
        return str(the_plan.table(list(columns)))
    return "\n".join(query_lines(the_plan, columns, None))


def coverage_lines(the_plan: BoundsPlan, columns: Sequence[str], groups: int | None
                   ) -> list[str]:
    """The coverage bounds' printout: the guarantee, charged once however many groups,
    the coverage target, the rows a side clips at least in aim (the floor k_j) and from how
    many rows the share binds (with ``rows``, the share a side may clip there)."""
    g = the_plan.guarantee
    where = f" in each of {groups} listed group(s)" if groups else ""
    lines = [
        f"plan: private bounds for {len(columns)} column(s){where}, "
        f"{the_plan.mechanisms} exponential mechanisms per group (epsilon "
        f"{the_plan.epsilon_each:.4g} each); guarantee ({g.epsilon:.6g}, {g.delta:.3g})-DP, "
        f"{g.neighbouring}, charged once (groups are disjoint: parallel composition)"]
    needed = the_plan.rows_needed()
    j = int(np.argmax(needed))
    text = (f"plan: coverage {the_plan.request.coverage:g} (alpha = "
            f"{float(the_plan.alpha):.4g} clipped per side) from about {needed[j]:,} "
            f"non-null rows per group (column {columns[j]!r}); below that each side aims to "
            f"clip about {the_plan.floor_rows[j]:,} rows")
    share = the_plan.expected_clipped_share()
    if share is not None and the_plan.rows is not None:
        text += f"; at {the_plan.rows:,} rows a side clips at most {max(share):.3%}"
    return [*lines, text]


def query_lines(the_plan: DescribePlan, columns: Sequence[str], groups: int | None
                ) -> list[str]:
    """The query mechanism's printout: what is released, the budget split (evenly over
    the columns; per column the shares of the centre, the two sides, the count and the
    sum), charged once however many groups, then the plan's own printout
    (:meth:`DescribePlan.table`: the split in ε, the clip target and the accuracy
    statements)."""
    g = the_plan.guarantee
    stats = ", ".join(the_plan.statistics) or "bounds alone"
    where = f" in each of {groups} listed group(s)" if groups else ""
    parts = {"centre": the_plan.centre_epsilon,
             "sides": the_plan.side_epsilon,
             "count": the_plan.count_epsilon, "sum": the_plan.sum_epsilon}
    per_column = sum(parts.values())
    split = ", ".join(f"{k} {v / per_column:.0%}" for k, v in parts.items() if v > 0)
    lines = [
        f"plan: DP {stats} for {len(columns)} column(s){where}; guarantee "
        f"({g.epsilon:.6g}, {g.delta:.3g})-DP, {g.neighbouring}, charged once (groups are "
        "disjoint: parallel composition)",
        f"plan: budget split: epsilon {per_column:.6g} per column ({len(columns)} "
        f"column(s), basic composition), of which {split}"]
    return [*lines, *(f"plan: {line}" for line in the_plan.table().splitlines())]


# -- public settings ------------------------------------------------------------------------
@dataclass(frozen=True)
class AggregateSettings:
    """Everything a grouped-aggregate run was asked for, checked: the table, the public
    group values (None: no groups), the mechanism and its plan (made once, from public
    inputs), the columns' domains (what the engine counts on), the sinks, the ledger
    (None: no ledger), the seed (tests only) and the groups file (None: none)."""

    source: Source
    groups: list[str] | None
    mechanism: Mechanism
    plan: Any
    domains: Sequence[Domain]
    sinks: Sequence[Sink]
    ledger: LedgerSettings | None = None
    seed: int | None = None
    groups_file: str | None = None

    @property
    def group_names(self) -> list[str | None]:
        """The groups as the core names them: the listed values, or one unnamed group."""
        return group_names(self.groups)


def aggregate_settings(values: Mapping[str, Any], name: Callable[[str], str] = str,
                       mechanism: Mechanism | None = None) -> AggregateSettings:
    """The settings of a run from a front end's flat values — the command line's parsed
    arguments or the job's config section, both spelled as the config keys: ``input``,
    ``format``, ``where``, ``version``, ``timestamp``, ``columns``, ``group_by``,
    ``groups``, ``groups_file``, ``statistics``, ``epsilon``, ``delta``,
    ``neighbouring``, ``beta``, ``coverage``, ``grid``, ``rows``, ``query_epsilon``,
    ``output``, ``table``, ``plot``, ``ledger``, ``dataset``, ``run_id``, ``cap_epsilon``,
    ``cap_delta``, ``seed``. Each is checked (nothing read); ``name`` spells a key in
    messages. A preset passes its ``mechanism`` (its statistics are then checked by the
    mechanism's plan)."""
    if mechanism is None:
        mechanism, statistics = asked_statistics(values.get("statistics"), name)
    else:
        statistics = tuple(values["statistics"])
    the_plan = plan_of(mechanism, values, statistics, name)
    run = table_run(values, name)
    source = run.source
    sinks: list[Sink] = [run.output]
    if values.get("table") is not None:
        sinks.append(table_sink(name("table"), str(values["table"]), mechanism))
    if values.get("plot") is not None:
        if not {"count", "mean"} <= set(the_plan.statistics):
            raise ParameterError(f"{name('plot')} draws the means with their error bars: "
                                 f"{name('statistics')} must include count and mean")
        sinks.append(DescribePngSink(name("plot"), str(values["plot"]),
                                     title=values.get("dataset") or Path(source.path).name))
    seed = checked_seed(values, name)
    return AggregateSettings(source, run.groups, mechanism, the_plan,
                             domains_of(mechanism, values.get("grid"), source.columns), sinks,
                             run.ledger, seed, values.get("groups_file"))


def bounds_settings(values: Mapping[str, Any], name: Callable[[str], str] = str
                    ) -> AggregateSettings:
    """The ``bounds`` preset: the coverage bounds (``--statistics coverage``)."""
    return aggregate_settings({**values, "statistics": ("coverage",)}, name, COVERAGE)


def describe_settings(values: Mapping[str, Any], name: Callable[[str], str] = str
                      ) -> AggregateSettings:
    """The ``describe`` preset: the query mechanism's bounds with the count, sum and mean
    (or those of ``statistics`` named; ``none``: the bounds alone)."""
    statistics = ("bounds", *describe_statistics(values.get("statistics"), name))
    return aggregate_settings({**values, "statistics": statistics}, name, QUERY)


#: every preset of the product: its command (and job section) → its settings
PRESETS: dict[str, Callable[[Mapping[str, Any], Callable[[str], str]], AggregateSettings]] = {
    "bounds": bounds_settings, "describe": describe_settings}


def preset_plan(command: str, values: Mapping[str, Any], name: Callable[[str], str] = str
                ) -> str:
    """``--plan-only`` of the product (``aggregate``) or a preset: the plan's printout,
    nothing else checked or read."""
    statistics: tuple[str, ...]
    if command == "bounds":
        mechanism, statistics = COVERAGE, ("coverage",)
    elif command == "describe":
        mechanism = QUERY
        statistics = ("bounds", *describe_statistics(values.get("statistics"), name))
    else:
        mechanism, statistics = asked_statistics(values.get("statistics"), name)
    return plan_text(mechanism, plan_of(mechanism, values, statistics, name),
                     list(values["columns"]))


# -- the product on the spine -------------------------------------------------------------
#: what a run of each mechanism is called in its lines: (what, noun, verb)
_WORDS = {COVERAGE.name: ("these bounds are", "the bounds", "bounding"),
          QUERY.name: ("these aggregates are", "the aggregates", "describing")}


class AggregateProduct(TableProduct[AggregateSettings]):
    """A grouped-aggregate run as a grouped-table product of the spine: the plan (the
    settings') printed, the mechanism's statistics counted by the engine, its draws made
    on the driver; a recorded result of another mechanism is refused as another product's
    is."""

    def __init__(self, settings: AggregateSettings) -> None:
        super().__init__(settings)
        name = settings.mechanism.name
        self.what, self.noun, self.verb = _WORDS[name]
        self.kind = RecordKind(name, "aggregate", summary_lines)

    def foreign(self, record: Mapping[str, Any]) -> str | None:
        other = super().foreign(record)
        if other is not None or record.get("method") == self.kind.method:
            return other
        return (f"{SHAPES[str(record.get('method'))].noun}, not "
                f"{SHAPES[self.kind.method].noun}")

    def announce(self) -> list[str]:
        s = self.settings
        return plan_lines(s.mechanism, s.plan, s.source.columns,
                          None if s.groups is None else len(s.groups))

    def open(self, route: GroupedRoute, progress: Callable[[str], None]
             ) -> GroupedPrepared:
        s = self.settings
        return route.open(s.source, s.groups, s.mechanism.spec(s.domains), progress)

    def compute(self, prepared: GroupedPrepared, progress: Callable[[str], None]
                ) -> tuple[Guarantee | None, dict[str, Any]]:
        s = self.settings
        self.working(self.verb, progress)
        result = s.mechanism.draw(s.plan, prepared.statistics(), s.group_names,
                                  s.source.columns, RandomSource(seed=s.seed))
        return result.guarantee, aggregate_record(result, s.plan)


def run_aggregate_flow(settings: AggregateSettings, route: GroupedRoute,
                       report: Reporter | None = None) -> Outcome:
    """One grouped-aggregate release end to end: :func:`~dprect.app.spine.run_release` of
    an :class:`AggregateProduct` (bad parameters, paths, schemas: refused before any
    reservation)."""
    return run_release(AggregateProduct(settings), route, report)


__all__ = [
    "NO_STATISTICS",
    "PRESETS",
    "AggregateProduct",
    "AggregateSettings",
    "aggregate_settings",
    "asked_statistics",
    "bounds_domains",
    "bounds_settings",
    "coverage_lines",
    "describe_settings",
    "describe_statistics",
    "domains_of",
    "plan_lines",
    "plan_of",
    "plan_text",
    "preset_plan",
    "query_lines",
    "run_aggregate_flow",
]
