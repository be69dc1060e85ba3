"""The grouped-aggregate product on the run spine (:mod:`dprect.app.spine`): ``dprect
aggregate --statistics S1,S2,...`` on either engine and ``jobs/aggregate.py`` — any
statistics of the registry (:data:`dprect.core.statistic.STATISTICS`) per public group and
column, drawn by ONE mechanism or by several (each on its declared share of ε:
:data:`MIXED_FRONT`, docs/privacy.md §11b), in ONE charge. ``dprect bounds`` /
``jobs/private_bounds.py`` (``coverage``) and ``dprect describe`` / ``jobs/describe.py``
(``bounds,count,sum,mean``) are its presets (:data:`PRESETS`), their outputs for a seed
those they gave as products of their own (tests/app/test_golden.py); :func:`dprect.aggregate`
runs the same plan and draws on Python data.

:func:`aggregate_settings` checks a front end's values — the statistics (every name in
the registry: :func:`asked_mechanisms`), the run's plan (made once, from public inputs:
:meth:`Mechanism.plan <dprect.core.statistic.Mechanism.plan>`, composed for several by
:func:`mixed_plan_of`),
the table, the PUBLIC group list (:mod:`dprect.app.groups`) and the outputs. On the spine,
:class:`AggregateProduct` announces the plan, opens the engine's one route
(:class:`~dprect.app.table_product.GroupedRoute`: numpy's
:class:`dprect.engines.grouped.NumpyGroupedRoute`, Spark's
:class:`dprect.engines.spark.grouped_route.SparkGroupedRoute`) for the run's spec
(:func:`run_spec`; for several mechanisms each source column counted once per mechanism),
reserves the plan's guarantee ONCE however many groups (disjoint rows: parallel
composition), and draws every cell on the driver (:meth:`Mechanism.draw
<dprect.core.statistic.Mechanism.draw>`; several: :func:`~dprect.core.mixed.draw_mixed`);
the release is the mechanism's record, or a mixed run's
(:mod:`dprect.release.aggregate_record`), with ``--table`` one row per (group, column)
(:mod:`dprect.release.aggregate_table`) and with ``--plot`` the means' PNG
(:mod:`dprect.release.aggregate_plot`) or the quantiles' (:mod:`dprect.release.quantile_plot`);
stdout lists the cells up to :data:`LISTED_CELLS`, beyond it a few summary lines. What
differs between mechanisms at the front ends is one :class:`Front` each (:data:`FRONTS`).

Row rules (row-local: no privacy cost): every row counts; a null, NaN or ±inf value is
left out of its column only; a row of no listed group is dropped and never reported; a
listed group without rows is released all the same (noise only).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from dprect.app.groups import (
    checked_composition,
    group_selection,
    public_groups,
    selected_record,
    selection_lines,
)
from dprect.app.options import comma_entries, statistics_choices
from dprect.app.products import foreign
from dprect.app.spine import Reporter, Summary, run_release
from dprect.app.table_product import GroupedPrepared, GroupedRoute
from dprect.app.table_run import checked_seed, table_run
from dprect.core.accounting import Guarantee, unused_delta
from dprect.core.aggregates import STATISTICS as QUERY_STATISTICS
from dprect.core.aggregates import DescribePlan
from dprect.core.bounds import BoundsPlan, BoundsRequest
from dprect.core.decimal_grid import DecimalGrid
from dprect.core.domains import Domain, FloatBins, GridArg, resolve_domains
from dprect.core.errors import ParameterError
from dprect.core.group_selection import SelectionPlan, composed, select_keys
from dprect.core.intervals import BELOW_ROW_NEED
from dprect.core.mixed import MixedPlan, mixed_spec, plan_mixed
from dprect.core.quantile_release import statistic_names
from dprect.core.quantiles import QuantilePlan
from dprect.core.randomness import RandomSource
from dprect.core.request import Source, check_pure, check_run_epsilon, request_from
from dprect.core.statistic import (
    COVERAGE,
    QUANTILES,
    QUERY,
    SEARCH_GRID,
    STATISTICS,
    Mechanism,
    StatisticsSpec,
    outputs,
)
from dprect.engines import grouped  # noqa: F401  (registers the mechanisms' plans and draws)
from dprect.release.aggregate_plot import AggregatePngSink, DescribePngSink
from dprect.release.aggregate_record import (
    SHAPES,
    Overview,
    aggregate_record,
    cell_count,
    mixed_method,
    mixed_record,
    noun_of,
    streamed_rows,
    summary_lines,
)
from dprect.release.aggregate_table import table_sink
from dprect.release.block_pack import BlockPacker
from dprect.release.guarded import Charge, LedgerSettings, Outcome
from dprect.release.ledger.stored import LEVEL as STORED_LEVEL
from dprect.release.quantile_plot import QuantilesPngSink
from dprect.release.row_pass import RowPass
from dprect.release.row_spool import RowSpool, check_spool_folder
from dprect.release.sinks import Sink

#: ``describe --statistics none``: the bounds alone (aimed at ``--query-epsilon``)
NO_STATISTICS = "none"


# -- the statistics asked for -------------------------------------------------------------
def _names(value: str | Sequence[str]) -> list[str]:
    """A list of names, or comma-separated text."""
    if isinstance(value, str):
        return comma_entries(value, "statistic")
    return [str(v).strip() for v in value]


def asked_mechanisms(value: str | Sequence[str] | None, name: Callable[[str], str] = str
                     ) -> tuple[tuple[Mechanism, ...], tuple[str, ...]]:
    """``statistics``: the mechanisms drawing them (in the registry's order) and the names
    asked for — every name in the registry (:data:`dprect.core.statistic.STATISTICS`),
    none twice."""
    names = [] if value is None else _names(value)
    if not names:
        raise ParameterError(f"{name('statistics')} is required: {statistics_choices()}")
    unknown = [n for n in names if n not in STATISTICS]
    if unknown:
        raise ParameterError(f"{name('statistics')} must be among {', '.join(STATISTICS)}, "
                             f"got {unknown[0]!r}")
    if len(set(names)) != len(names):
        raise ParameterError(f"{name('statistics')} names a statistic twice")
    asked = {STATISTICS[n].mechanism.name for n in names}
    mechanisms = tuple(dict.fromkeys(s.mechanism for s in STATISTICS.values()
                                     if s.mechanism.name in asked))
    for mechanism in mechanisms:
        if mechanism.name not in FRONTS or mechanism.name not in SHAPES:  # not wired yet
            raise ParameterError(f"{name('statistics')}: {', '.join(names)} cannot be run "
                                 "by this command yet (no front end or record for its "
                                 "mechanism)")
    return mechanisms, tuple(names)


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
    check_pure(values.get("delta"), name("delta"), "the count, sum, mean and their bounds")
    if values.get("query_epsilon") is None and set(statistics) <= {"bounds"}:
        # said here, in the front end's words (the core names its parameters:
        # "statistics=()", "query_epsilon")
        raise ParameterError(f"the bounds alone need {name('query_epsilon')}: the epsilon "
                             "your sum or mean will spend per column, which the bounds "
                             "are aimed at")
    return QUERY.plan(values["epsilon"], len(columns), delta=values.get("delta"),
                      neighbouring=values.get("neighbouring"), beta=values.get("beta"),
                      statistics=tuple(s for s in statistics if s != "bounds"),
                      query_epsilon=values.get("query_epsilon"),
                      interval_level=values.get("interval_level"))


def _of(mechanism: str) -> str:
    """The statistics ``mechanism`` draws, as a run names them (from the registry)."""
    return ", ".join(repr(s.name) for s in STATISTICS.values()
                     if s.mechanism.name == mechanism)


def refuse_foreign_options(mechanisms: Sequence[Mechanism], values: Mapping[str, Any],
                           name: Callable[[str], str] = str) -> None:
    """Refuse an option of a mechanism not among ``mechanisms`` (those a run draws)."""
    mine = {m.name for m in mechanisms}
    taken = {k for m in mine for k in FRONTS[m].options}  # an option several fronts read
    for other, front in FRONTS.items():
        given = [k for k in front.options if values.get(k) is not None and k not in taken]
        if other not in mine and given:
            owners = [m for m, f in FRONTS.items() if given[0] in f.options]
            raise ParameterError(f"{name(given[0])} is an option of the statistics "
                                 f"{'; '.join(_of(m) for m in owners)} only, not of "
                                 f"{'; '.join(_of(m) for m in sorted(mine))}")


def plan_of(mechanism: Mechanism, values: Mapping[str, Any], statistics: Sequence[str],
            name: Callable[[str], str] = str) -> Any:
    """The plan alone (``--plan-only``, and the run's one plan) of ``mechanism`` for the
    ``statistics``: from the budget options, the columns and the mechanism's own options
    (the coverage bounds' ``grid`` and ``rows``; the query's ``query_epsilon``); an option
    of the other mechanism is refused. Nothing is read."""
    refuse_foreign_options((mechanism,), values, name)
    return FRONTS[mechanism.name].plan(values, statistics, name)


def mixed_plan_of(mechanisms: Sequence[Mechanism], values: Mapping[str, Any],
                  statistics: Sequence[str], name: Callable[[str], str] = str) -> MixedPlan:
    """The plan of a run of several ``mechanisms``: each planned by its own front on its
    declared share of ``epsilon`` (:func:`dprect.core.mixed.plan_mixed`), pure (``delta``
    is refused), with its own options; an option of a mechanism not asked is refused, and
    so are mechanisms whose outputs collide (the query's and the coverage bounds'
    ``lower``/``upper``). Nothing is read."""
    refuse_foreign_options(mechanisms, values, name)
    seen: set[str] = set()  # one row per (group, column): no output written twice
    for mechanism in mechanisms:
        clash = seen & set(outputs(mechanism))
        if clash:
            raise ParameterError(f"{name('statistics')}: {_of(mechanism.name)} and the "
                                 f"statistics of another mechanism both release "
                                 f"{sorted(clash)[0]!r}: run them separately")
        seen |= set(outputs(mechanism))
    if values.get("epsilon") is None:
        raise ParameterError(f"{name('epsilon')} is required")
    check_pure(values.get("delta"), name("delta"), "the statistics of several mechanisms "
               "(basic composition)")
    epsilon = values["epsilon"]
    if isinstance(epsilon, bool) or not isinstance(epsilon, float | int) \
            or not math.isfinite(epsilon) or epsilon <= 0:
        raise ParameterError(f"{name('epsilon')} must be a positive number")
    # the run's ε at the floor before it is shared (a share of 5e-324 is 0: "got 0.0")
    check_run_epsilon(epsilon, name("epsilon"))

    def one(mechanism: Mechanism, share: float) -> Any:
        mine = [s for s in statistics if STATISTICS[s].mechanism is mechanism]
        return FRONTS[mechanism.name].plan({**values, "epsilon": share, "delta": None},
                                           mine, name)

    return plan_mixed(mechanisms, float(epsilon), one)


def plan_for(mechanisms: Sequence[Mechanism], values: Mapping[str, Any],
             statistics: Sequence[str], name: Callable[[str], str] = str) -> Any:
    """The run's one plan: one mechanism's (:func:`plan_of`), or several's composed on
    their declared shares (:func:`mixed_plan_of`). Nothing is read."""
    if len(mechanisms) == 1:
        return plan_of(mechanisms[0], values, statistics, name)
    return mixed_plan_of(mechanisms, values, statistics, name)


def run_spec(mechanisms: Sequence[Mechanism], the_plan: Any, grid: GridArg,
             columns: list[str]) -> StatisticsSpec:
    """What the engine counts for the run: one mechanism's spec for the statistics its
    plan asks, or for several every part's spec columns in turn
    (:func:`~dprect.core.mixed.mixed_spec`: a source column counted once per mechanism,
    the routes repeating it: :func:`~dprect.core.mixed.repeated`)."""
    if len(mechanisms) == 1:
        return mechanisms[0].spec(domains_of(mechanisms[0], grid, columns),
                                  getattr(the_plan, "statistics", ()))
    return mixed_spec([m.spec(domains_of(m, grid, columns), getattr(p, "statistics", ()))
                       for m, p in zip(mechanisms, the_plan.plans, strict=True)])


def integral_plan(the_plan: Any, integral: Sequence[bool]) -> Any:
    """The run's plan with the declared integrality of its columns (``integral``: the
    prepared table's :meth:`~dprect.app.table_product.GroupedPrepared.integral_columns`,
    schema and format only) on its quantiles — alone or as a mixed run's part — so an
    integer column's quantiles are released as integers (post-processing,
    :func:`~dprect.core.quantiles.snap_integers`); other plans unchanged."""
    if isinstance(the_plan, QuantilePlan):
        return the_plan.with_integral(integral)
    if isinstance(the_plan, MixedPlan):
        return replace(the_plan, plans=tuple(integral_plan(p, integral)
                                             for p in the_plan.plans))
    return the_plan


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
        f"{g.neighbouring}, charged once (groups are disjoint: parallel composition)"
        f"{unused_delta(the_plan.request.delta, g)}"]
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
    the columns; per column the shares of the centre, the two sides, the count, the
    sum and, for a variance or std, the sum of squares), charged once however many
    groups, then the plan's own printout (:meth:`DescribePlan.table`: the split in ε,
    the clip target and the accuracy statements)."""
    g = the_plan.guarantee
    stats = ", ".join(the_plan.statistics) or "bounds alone"
    where = f" in each of {groups} listed group(s)" if groups else ""
    parts = {"centre": the_plan.centre_epsilon,
             "sides": the_plan.side_epsilon,
             "count": the_plan.count_epsilon, "sum": the_plan.sum_epsilon,
             "sum of squares": the_plan.squares_epsilon}
    per_column = sum(parts.values())
    split = ", ".join(f"{k} {100 * v / per_column:.3g}%" for k, v in parts.items() if v > 0)
    lines = [
        f"plan: DP {stats} for {len(columns)} column(s){where}; guarantee "
        f"({g.epsilon:.6g}, {g.delta:.3g})-DP, {g.neighbouring}, charged once (groups are "
        "disjoint: parallel composition)",
        f"plan: budget split: epsilon {per_column:.6g} per column ({len(columns)} "
        f"column(s), basic composition), of which {split}"]
    return [*lines, *(f"plan: {line}" for line in the_plan.table().splitlines())]


def _quantiles_plan(values: Mapping[str, Any], statistics: Sequence[str],
                    name: Callable[[str], str]) -> QuantilePlan:
    if values.get("epsilon") is None:
        raise ParameterError(f"{name('epsilon')} is required")
    check_pure(values.get("delta"), name("delta"), "the quantiles")
    plan: QuantilePlan = QUANTILES.plan(statistics, values["epsilon"],
                                        len(_columns(values, name)),
                                        neighbouring=values.get("neighbouring"),
                                        beta=values.get("beta"),
                                        interval_level=values.get("interval_level"))
    return plan


def quantile_lines(the_plan: QuantilePlan, columns: Sequence[str], groups: int | None
                   ) -> list[str]:
    """The quantiles' printout: what is released, the guarantee charged once however many
    groups, the split per column and the rows a group needs (docs/privacy.md §11a)."""
    g = the_plan.guarantee
    where = f" in each of {groups} listed group(s)" if groups else ""
    per = the_plan.epsilon / len(columns)
    return [
        f"plan: private quantiles {', '.join(statistic_names(the_plan))} for "
        f"{len(columns)} column(s){where}; guarantee ({g.epsilon:.6g}, {g.delta:.3g})-DP, "
        f"{g.neighbouring}, charged once (groups are disjoint: parallel composition)",
        f"plan: epsilon {per:.6g} per column: a noisy count ({the_plan.count_epsilon:.4g}), "
        f"then from {the_plan.split_rows:,} rows each quantile at "
        f"{the_plan.epsilon_each:.4g}, below it a centre ({the_plan.small_centre_epsilon:.4g}) "
        f"and each quantile at {the_plan.small_epsilon_each:.4g} near it"
        + (f"; below {the_plan.pool_rows:,} rows (the row need of an own centre) no own "
           "centre: one centre per column pooled over the rows of all such cells (the "
           "same eps), each quantile near it; when their released rows add up to less "
           f"than {the_plan.pool_rows:,} beside other cells, near the column's anchor on "
           "those cells' released quantiles instead (no eps)" if the_plan.pool_rows
           else ""),
        f"plan: a group needs about {the_plan.rows_needed():,} rows (beta "
        f"{the_plan.beta:g}) for each quantile to lie within its data's range (the more, "
        "the nearer a quantile is to 0 or 1); a cell whose noisy count is below is flagged "
        f"{BELOW_ROW_NEED}, all its quantiles",
        f"plan: rank interval at level {the_plan.interval_level:g}: from "
        f"{the_plan.split_rows:,} rows (noisy) each quantile's ranks lie within "
        f"{the_plan.interval_rank_error:,.1f} rows of the grid's best for q*n (all together; "
        "<name>_rank_error), "
        "below it no unconditional statement (empty)"]


def mixed_lines(the_plan: MixedPlan, columns: Sequence[str], groups: int | None
                ) -> list[str]:
    """A run of several mechanisms' printout: each part's own printout (its plan on its
    share), then the composition (docs/privacy.md §11b): the shares, the declared
    weights, the run's guarantee charged once."""
    lines = [line for m, p in zip(the_plan.mechanisms, the_plan.plans, strict=True)
             for line in FRONTS[m].lines(p, columns, groups)]
    g = the_plan.guarantee
    parts = ", ".join(f"{m} {p.guarantee.epsilon:.6g}" for m, p in
                      zip(the_plan.mechanisms, the_plan.plans, strict=True))
    weights = ":".join(str(w) for w in the_plan.weights)
    return [*lines,
            f"plan: composition of {len(the_plan.mechanisms)} mechanisms on declared "
            f"shares (weights {weights}) of epsilon {the_plan.epsilon:.6g}: {parts}; "
            f"guarantee ({g.epsilon:.6g}, {g.delta:.3g})-DP, {g.neighbouring} (basic "
            "composition of pure mechanisms), charged once"]


@dataclass(frozen=True)
class Front:
    """How the front ends run a mechanism: its plan from their flat values (``plan``), its
    printout before the input is read (``lines``) and with ``--plan-only``
    (``plan_only``), the options only it reads (a run of another refuses them) and what
    its runs are called (``words``: the seeded run's "these … are", the failure's noun, the
    progress verb). A new mechanism is one row of :data:`FRONTS`."""

    plan: Callable[[Mapping[str, Any], Sequence[str], Callable[[str], str]], Any]
    lines: Callable[[Any, Sequence[str], int | None], list[str]]
    plan_only: Callable[[Any, Sequence[str]], str]
    options: tuple[str, ...]
    words: tuple[str, str, str]


#: every mechanism's front, by its name
FRONTS: dict[str, Front] = {
    COVERAGE.name: Front(_coverage_plan, coverage_lines, lambda p, c: str(p.table(list(c))),
                         ("coverage", "grid", "rows"),
                         ("these bounds are", "the bounds", "bounding")),
    QUERY.name: Front(_query_plan, query_lines,
                      lambda p, c: "\n".join(query_lines(p, c, None)),
                      ("query_epsilon", "plot"),
                      ("these aggregates are", "the aggregates", "describing")),
    QUANTILES.name: Front(_quantiles_plan, quantile_lines,
                          lambda p, c: "\n".join(quantile_lines(p, c, None)), ("plot",),
                          ("these quantiles are", "the quantiles", "drawing the quantiles of")),
}

#: the front of a run of several mechanisms (its plan composes theirs: :func:`plan_for`)
MIXED_FRONT = Front(lambda values, statistics, name: mixed_plan_of(
                        asked_mechanisms(statistics, name)[0], values, statistics, name),
                    mixed_lines, lambda p, c: "\n".join(mixed_lines(p, c, None)), (),
                    ("these statistics are", "the statistics", "drawing the statistics of"))


def front_of(mechanisms: Sequence[Mechanism]) -> Front:
    """The front of a run of ``mechanisms``: the one mechanism's, or :data:`MIXED_FRONT`."""
    return FRONTS[mechanisms[0].name] if len(mechanisms) == 1 else MIXED_FRONT


def method_of(mechanisms: Sequence[Mechanism]) -> str:
    """What the ledger charges a run of ``mechanisms`` as and its record's method: the
    mechanism's name, or several's joined
    (:func:`~dprect.release.aggregate_record.mixed_method`)."""
    return mixed_method([m.name for m in mechanisms])


# -- public settings ------------------------------------------------------------------------
@dataclass(frozen=True)
class AggregateSettings:
    """Everything a grouped-aggregate run was asked for, checked: the table, the public
    group values (None: no groups), the mechanisms (one, or several in one charge:
    docs/privacy.md §11b) and the run's plan (made once, from public inputs), the spec
    the engine counts (:func:`run_spec`), the sinks, the ledger
    (None: no ledger), the seed (tests only), the groups file (None: none) and the
    private group selection (None: a public list or no groups; docs/privacy.md §18)."""

    source: Source
    groups: list[str] | None
    mechanisms: tuple[Mechanism, ...]
    plan: Any
    spec: StatisticsSpec
    sinks: Sequence[Sink]
    ledger: LedgerSettings | None = None
    seed: int | None = None
    groups_file: str | None = None
    selection: SelectionPlan | None = None

    @property
    def guarantee(self) -> Guarantee:
        """The run's guarantee: the plan's, or after a private group selection the two
        composed (:func:`~dprect.core.group_selection.composed`)."""
        if self.selection is None:
            return self.plan.guarantee
        return composed(self.plan.guarantee, self.selection)

    @property
    def domains(self) -> list[Domain | DecimalGrid]:
        """What the engine counts each spec column on (a mixed run's: every part's in
        turn)."""
        return [c.grid for c in self.spec.columns]

    @property
    def group_names(self) -> list[str | None]:
        """The groups as the core names them: the listed values, or one unnamed group
        (groups found privately are named by the run: :meth:`AggregateProduct.compute`)."""
        return list(self.groups) if self.groups is not None else [None]


def aggregate_settings(values: Mapping[str, Any], name: Callable[[str], str] = str,
                       command: str = "aggregate") -> AggregateSettings:
    """The settings of a run from a front end's flat values — the command line's parsed
    arguments or the job's config section, both spelled as the config keys: ``input``,
    ``format``, ``where``, ``version``, ``timestamp``, ``columns``, ``group_by``,
    ``groups``, ``groups_file``, ``statistics``, ``epsilon``, ``delta``,
    ``neighbouring``, ``beta``, ``coverage``, ``grid``, ``rows``, ``query_epsilon``,
    ``interval_level``, ``output``, ``table``, ``plot``, ``ledger``, ``dataset``,
    ``run_id``, ``cap_epsilon``, ``cap_delta``, ``seed``. Each is checked (nothing
    read); ``name`` spells a key in messages; ``command`` names a preset
    (:data:`PRESETS`) to run instead."""
    mechanisms, statistics = asked(command, values, name)
    the_plan = plan_for(mechanisms, values, statistics, name)
    run = table_run(values, name)
    source = run.source
    sinks: list[Sink] = [run.output]
    if values.get("table") is not None:
        sinks.append(table_sink(name("table"), str(values["table"]), mechanisms,
                                getattr(the_plan, "statistics", ())))
    if values.get("plot") is not None:
        sinks.append(plot_sink(mechanisms, the_plan, values, name, source))
    seed = checked_seed(values, name)
    settings = AggregateSettings(source, run.groups, mechanisms, the_plan,
                                 run_spec(mechanisms, the_plan, values.get("grid"),
                                          source.columns), sinks,
                                 run.ledger, seed, values.get("groups_file"), run.selection)
    if run.selection is not None:  # re-derived before anything is read
        checked_composition(the_plan.guarantee, run.selection, len(run.groups or ()))
    return settings


def plot_sink(mechanisms: Sequence[Mechanism], the_plan: Any, values: Mapping[str, Any],
              name: Callable[[str], str], source: Source) -> AggregatePngSink:
    """``--plot`` of a run of one mechanism: the means with their noise intervals (the
    query's, with count and mean: :class:`DescribePngSink`) or the quantiles' ladders
    (:class:`QuantilesPngSink`); a mixed run's is refused (the coverage bounds' by
    :func:`refuse_foreign_options`)."""
    if len(mechanisms) > 1:
        raise ParameterError(f"{name('plot')} draws the statistics of a run of one "
                             f"mechanism: leave it out of a run of several")
    title = values.get("dataset") or Path(source.path).name
    if mechanisms[0] is QUANTILES:
        return QuantilesPngSink(name("plot"), str(values["plot"]), title=title)
    if not {"count", "mean"} <= set(the_plan.statistics):
        raise ParameterError(f"{name('plot')} draws the means with their error bars: "
                             f"{name('statistics')} must include count and mean")
    return DescribePngSink(name("plot"), str(values["plot"]), title=title)


#: every preset of the product: its command (and job section) → its mechanism and how its
#: statistics read from its own ``statistics`` (``describe``'s: count, sum, mean or none)
PRESETS: dict[str, tuple[Mechanism, Callable[[Any, Callable[[str], str]], tuple[str, ...]]]] = {
    "bounds": (COVERAGE, lambda _value, _name: ("coverage",)),
    "describe": (QUERY, lambda value, name: ("bounds", *describe_statistics(value, name))),
}


def asked(command: str, values: Mapping[str, Any], name: Callable[[str], str] = str
          ) -> tuple[tuple[Mechanism, ...], tuple[str, ...]]:
    """The mechanisms and statistics of a run of ``command``: a preset's (its statistics
    then checked by the mechanism's plan), or ``aggregate``'s ``--statistics`` (one
    mechanism's, or several's in one charge: :func:`asked_mechanisms`)."""
    if command in PRESETS:
        mechanism, statistics = PRESETS[command]
        return (mechanism,), statistics(values.get("statistics"), name)
    return asked_mechanisms(values.get("statistics"), name)


def bounds_settings(values: Mapping[str, Any], name: Callable[[str], str] = str
                    ) -> AggregateSettings:
    """The ``bounds`` preset: the coverage bounds (``--statistics coverage``)."""
    return aggregate_settings(values, name, "bounds")


def describe_settings(values: Mapping[str, Any], name: Callable[[str], str] = str
                      ) -> AggregateSettings:
    """The ``describe`` preset: the query mechanism's bounds with the count, sum and mean
    (or those of ``statistics`` named; ``none``: the bounds alone)."""
    return aggregate_settings(values, name, "describe")


def preset_plan(command: str, values: Mapping[str, Any], name: Callable[[str], str] = str
                ) -> str:
    """``--plan-only`` of ``aggregate`` or a preset: the plan's printout, nothing else
    checked or read."""
    mechanisms, statistics = asked(command, values, name)
    the_plan = plan_for(mechanisms, values, statistics, name)
    text = front_of(mechanisms).plan_only(the_plan, list(values["columns"]))
    selection = group_selection(values, name)
    if selection is None:
        return text
    listed = public_groups(values.get("group_by"), values.get("groups"),
                           values.get("groups_file"), name, select=True,
                           input=values.get("input"))  # a public list
    return "\n".join([text, *selection_lines(the_plan.guarantee, selection,
                                              listed=len(listed or ()))])


# -- the product on the spine -------------------------------------------------------------
#: with more (group, column) cells than this, stdout shows a few summary lines
#: (:func:`~dprect.release.aggregate_record.overview_lines`) instead of a line per cell:
#: the full result is in the outputs (a public threshold on the public groups × columns)
LISTED_CELLS = 50


class AggregateProduct:
    """A grouped-aggregate run as a product of the spine (:class:`~dprect.app.spine.Product`),
    built from its checked settings (its plan already made): it reads the input and the
    groups file, reserves the plan's guarantee ONCE however many groups (disjoint rows:
    parallel composition) under the mechanism's method over the columns, prints the plan,
    counts the mechanism's statistics on the engine and draws them on the driver, and
    summarises a released record from the record alone. A recorded result of another
    product, or of the other mechanism, is refused by what it is."""

    def __init__(self, settings: AggregateSettings) -> None:
        self.settings = settings
        self.front = front_of(settings.mechanisms)
        self.method = method_of(settings.mechanisms)
        self.what, self.noun, self.verb = self.front.words
        #: the key texts of a public list given with a private selection (:meth:`open`)
        self.listed_keys: set[str] = set()

    def inputs(self, name: Callable[[str], str]) -> list[tuple[str, str | None]]:
        return [(name("input"), self.settings.source.path),
                (name("groups_file"), self.settings.groups_file)]

    def charge(self) -> Charge:
        """The run's guarantee (the plan's, with a private group selection composed),
        once: the same whatever the number of groups."""
        s = self.settings
        return Charge(s.guarantee, self.method, list(s.source.columns))

    def foreign(self, record: Mapping[str, Any]) -> str | None:
        other, own = foreign("aggregate", record), self.method
        if other is not None or record.get("method") == own:
            return other
        return f"{noun_of(str(record.get('method')))}, not {noun_of(own)}"

    def announce(self) -> list[str]:
        s = self.settings
        lines = self.front.lines(s.plan, s.source.columns,
                                 None if s.groups is None else len(s.groups))
        if s.selection is None:
            return lines
        return [*lines, *selection_lines(s.plan.guarantee, s.selection,
                                         listed=len(s.groups or ()))]

    def open(self, route: GroupedRoute, progress: Callable[[str], None]
             ) -> GroupedPrepared:
        s = self.settings
        if s.selection is None:
            return route.open(s.source, s.groups, s.spec, progress)
        prepared = route.open(s.source, None, s.spec, progress)  # the keys found later
        if s.groups is not None:  # a public list beside the selection: checked now
            try:
                self.listed_keys = prepared.listed_keys(s.groups)
            except BaseException as exc:
                prepared.__exit__(type(exc), exc, exc.__traceback__)  # what it holds
                raise
        return prepared

    def compute(self, prepared: GroupedPrepared, progress: Callable[[str], None]
                ) -> tuple[Guarantee | None, dict[str, Any]]:
        s = self.settings
        rng = RandomSource(seed=s.seed)
        names: list[Any] = s.group_names
        kept: list[str] = []
        if s.selection is not None:  # the keys first, from one stream of rng (§18)
            progress("finding the groups privately")
            # a listed key is released whatever its rows, never through the threshold:
            # the selection runs over the other keys only (docs/privacy.md §18)
            counts = {k: n for k, n in prepared.key_counts().items()
                      if k not in self.listed_keys}
            kept = select_keys(s.selection, counts, rng)
            names = [*(s.groups or ()), *kept]
        shape = f"{len(s.source.columns)} column(s) in {len(names)} group(s)"
        progress(f"counting {shape}")  # the engine's pass: a stage of its own
        # several mechanisms: each part from its slice, its own stream (§11b); on Spark
        # with many groups, drawn in the executors (engines/spark/executor_draws.py),
        # whose blocks of released cells are packed there and spooled as they reach the
        # driver
        # the declared integer columns' quantiles snapped (schema only: never CSV's)
        plan = integral_plan(s.plan, prepared.integral_columns())
        spool = RowSpool()
        packer = BlockPacker(s.mechanisms[0].name,  # with a ledger, its stored copy's
                             None if s.ledger is None else STORED_LEVEL)  # DEFLATE too
        try:
            result = prepared.draw(s.mechanisms, plan, names, s.source.columns, rng,
                                   None if s.selection is None else names,
                                   lambda: progress(f"{self.verb} {shape}"),
                                   lambda block: _spool_block(spool, packer, block),
                                   pack=packer)
        except BaseException:
            spool.close()
            raise
        if len(s.mechanisms) > 1:
            guarantee, record = result.guarantee, mixed_record(result)
        else:
            guarantee, record = result.guarantee, aggregate_record(
                result, plan, streamed_rows(spool))
        if not spool.block_count:
            spool.close()
        if s.selection is None:
            return guarantee, record
        return selected_record(record, guarantee, s.selection, len(kept),
                               len(s.groups or ()))

    def summary(self, record: dict[str, Any], name: Callable[[str], str], rows: RowPass
                ) -> Summary:
        """A line per (group, column) of the record, or, with more than
        :data:`LISTED_CELLS` cells (groups × columns: public, or the groups kept by a
        private selection: released), a few lines whatever the number of groups — the
        cells, the statistics, the charge
        (:class:`~dprect.release.aggregate_record.Overview`, from the rows' one read) and
        which outputs hold every cell (their lines follow)."""
        if record.get("group_selection", {}).get("groups_kept") == 0 \
                and not record["group_selection"].get("groups_listed"):
            return lambda: (["no group passed the private selection: no group is "
                             "released"], [])
        if cell_count(record) <= LISTED_CELLS:
            return lambda: (summary_lines(record), [])
        overview = Overview(record)
        rows.add(overview.take)
        holders = [f"{s.name} {s.path}" for s in self.settings.sinks
                   if not isinstance(s, AggregatePngSink)]
        return lambda: ([*overview.lines(),
                         f"not listed here (more than {LISTED_CELLS} cells): every cell is "
                         f"in {' and '.join(holders)}"], [])


def _spool_block(spool: RowSpool, packer: BlockPacker, block: Any) -> None:
    """A streamed block spooled as it arrives, beside the draws of the next, not after
    the run: its bytes as the route made them where it drew the block (``pack``: in the
    executors), or a block's result packed here (:class:`~dprect.release.block_pack.
    BlockPacker`: its record rows' JSON items and table rows)."""
    spool.append(block if isinstance(block, bytes) else packer(block))


def run_aggregate_flow(settings: AggregateSettings, route: GroupedRoute,
                       report: Reporter | None = None) -> Outcome:
    """One grouped-aggregate release end to end: :func:`~dprect.app.spine.run_release` of
    an :class:`AggregateProduct` (bad parameters, paths, schemas: refused before any
    reservation; so is a temporary folder the run's spool cannot be made in:
    :func:`~dprect.release.row_spool.check_spool_folder`). A replay is checked too: it
    makes no spool, but a Delta ``--table`` it publishes again is staged in that folder
    (:class:`~dprect.release.aggregate_table.DeltaTableSink`), so a replay let through
    would fail there and be told to re-run — into the same failure."""
    check_spool_folder()
    return run_release(AggregateProduct(settings), route, report)


__all__ = ["FRONTS", "LISTED_CELLS", "MIXED_FRONT", "NO_STATISTICS", "PRESETS",
           "AggregateProduct", "AggregateSettings", "Front", "aggregate_settings", "asked",
           "asked_mechanisms", "bounds_domains", "bounds_settings", "coverage_lines",
           "describe_settings", "describe_statistics", "domains_of", "front_of", "integral_plan",
           "method_of", "mixed_lines", "mixed_plan_of", "plan_for", "plan_of", "plot_sink",
           "preset_plan", "query_lines", "refuse_foreign_options", "run_aggregate_flow",
           "run_spec"]
