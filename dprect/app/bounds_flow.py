"""The private-bounds product on the run spine (:mod:`dprect.app.spine`): ``dprect bounds``
on either engine and ``jobs/private_bounds.py``; :func:`dprect.bounds` is its in-memory
twin for Python data (same row rules, same draws for a seed).

:func:`bounds_settings` checks a front end's values: the columns, the group list (a PUBLIC
list: ``--groups`` or a file, never read from the data: :mod:`dprect.app.groups`), the
domains (default :data:`~dprect.app.options.DEFAULT_BOUNDS_GRID` on every column: no bounds
needed) and **the plan** (:func:`dprect.core.bounds.plan_bounds`, made once, there). On the
spine, :class:`BoundsProduct` announces the plan (its guarantee and what it expects); the
engine's route reads the table and checks its schema (every column numeric, the group
column's type able to hold the listed values: :class:`BoundsRoute`); the charge is the
plan's (ε, δ), reserved ONCE however many groups (the groups are disjoint sets of rows:
parallel composition); the compute counts every histogram on the engine and runs the
mechanism (:func:`dprect.core.bounds.run_bounds`); the release goes to the result JSON and,
with ``--table``, one row per (group, column) as CSV or Delta
(:mod:`dprect.release.bounds_table`).

Row rules (row-local, so neighbouring tables stay neighbouring and they cost no privacy):
every row counts — there is no label; a row whose value in a column is null, NaN or ±inf
is left out of THAT column's histogram only; with a group column, a row whose group value
is not in the public list (another value, a null) is dropped and no group outside the list
is ever reported.

The engine's route is the one every grouped product opens
(:class:`~dprect.app.table_product.GroupedRoute`): the numpy one is
:class:`dprect.engines.grouped.NumpyGroupedRoute`; the Spark one,
:class:`dprect.engines.spark.statistics.SparkGroupedRoute`, imports pyspark and is loaded
only when a front end chooses it. It counts the coverage mechanism's statistics
(:data:`dprect.core.statistic.COVERAGE`: each column's histogram on its domain).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

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
from dprect.core.bounds import BoundsPlan, BoundsRequest, plan_bounds
from dprect.core.domains import Domain, FloatBins, GridArg, resolve_domains
from dprect.core.errors import ParameterError
from dprect.core.randomness import RandomSource
from dprect.core.request import Source, request_from
from dprect.core.statistic import COVERAGE
from dprect.engines.grouped import draw_coverage
from dprect.release.bounds_record import (
    BOUNDS_METHOD,
    bounds_record,
    summary_lines,
)
from dprect.release.bounds_table import table_sink
from dprect.release.guarded import LedgerSettings, Outcome
from dprect.release.sinks import Sink

# -- public settings ------------------------------------------------------------------------


@dataclass(frozen=True)
class BoundsSettings:
    """Everything a bounds run was asked for, checked: the request, the table, the
    domains, the public group values (None: no groups), the sinks, the ledger (None: no
    ledger), the seed (tests only) and the public estimate of the rows (None: none)."""

    request: BoundsRequest
    source: Source
    domains: list[Domain]
    groups: list[str] | None
    sinks: Sequence[Sink]
    ledger: LedgerSettings | None = None
    seed: int | None = None
    rows: int | None = None
    groups_file: str | None = None
    plan: BoundsPlan = field(init=False)

    def __post_init__(self) -> None:
        # the one plan: public inputs only, before any data
        object.__setattr__(self, "plan", plan_bounds(self.request, self.domains,
                                                     rows=self.rows))

    @property
    def group_names(self) -> list[str | None]:
        """The groups as the core names them: the listed values, or one unnamed group."""
        return group_names(self.groups)


def bounds_domains(grid: GridArg, columns: list[str]) -> list[Domain]:
    """The domains of the bounded columns: :data:`~dprect.app.options.DEFAULT_BOUNDS_GRID`
    when none is given, else as ``--grid`` reads (one spec for all, or ``name=SPEC,...``)."""
    if grid is None or (isinstance(grid, str) and not grid.strip()):
        return [FloatBins() for _ in columns]
    return resolve_domains(grid, columns)


def bounds_request(values: Mapping[str, Any]) -> BoundsRequest:
    """The request from flat values (``epsilon`` required; ``delta``, ``coverage``,
    ``beta``, ``neighbouring`` default to :class:`BoundsRequest`'s when absent or None)."""
    if values.get("epsilon") is None:
        raise ParameterError("epsilon is required")
    return request_from(BoundsRequest, {k: v for k, v in values.items() if v is not None})


def bounds_plan(values: Mapping[str, Any], name: Callable[[str], str] = str) -> BoundsPlan:
    """The plan alone (``--plan-only``): from the request, the columns, the grid and the
    rows estimate; nothing else is checked or read."""
    columns = list(values["columns"])
    return plan_bounds(bounds_request(values), bounds_domains(values.get("grid"), columns),
                       rows=values.get("rows"))


def bounds_settings(values: Mapping[str, Any], name: Callable[[str], str] = str
                    ) -> BoundsSettings:
    """The settings of a bounds run from a front end's flat values — the command line's
    parsed arguments or the job's config section, both spelled as the config keys:
    ``input``, ``format``, ``columns``, ``epsilon``, ``delta``, ``coverage``, ``beta``,
    ``neighbouring``, ``grid``, ``group_by``, ``groups``, ``groups_file``, ``rows``,
    ``output``, ``table``, ``ledger``, ``dataset``, ``run_id``, ``cap_epsilon``,
    ``cap_delta``, ``seed``. Each is checked; ``name`` spells a key in messages."""
    request = bounds_request(values)
    run = table_run(values, name)
    source = run.source
    rows = values.get("rows")  # checked by the plan
    sinks: list[Sink] = [run.output]
    if values.get("table") is not None:
        sinks.append(table_sink(name("table"), str(values["table"])))
    seed = checked_seed(values, name)
    return BoundsSettings(request, source, bounds_domains(values.get("grid"), source.columns),
                          run.groups, sinks, run.ledger, seed, rows, values.get("groups_file"))


# -- the product on the spine -------------------------------------------------------------
class BoundsProduct(TableProduct[BoundsSettings]):
    """Private bounds as a grouped-table product of the spine: its plan (the settings')
    printed with the coverage it aims at, the histograms counted on the engine, the
    mechanism run on them by the core."""

    what = "these bounds are"
    noun = "the bounds"
    kind = RecordKind(BOUNDS_METHOD, "bounds", summary_lines)

    def announce(self) -> list[str]:
        return plan_lines(self.settings.plan, self.settings)

    def open(self, route: GroupedRoute, progress: Callable[[str], None]) -> GroupedPrepared:
        s = self.settings
        return route.open(s.source, s.groups, COVERAGE.spec(s.domains), progress)

    def compute(self, prepared: GroupedPrepared, progress: Callable[[str], None]
                ) -> tuple[Guarantee | None, dict[str, Any]]:
        s = self.settings
        self.working("bounding", progress)
        result = draw_coverage(s.plan, prepared.statistics(), s.group_names,
                               s.source.columns, RandomSource(seed=s.seed))
        return result.guarantee, bounds_record(result, s.plan)


def run_bounds_flow(settings: BoundsSettings, route: GroupedRoute,
                    report: Reporter | None = None) -> Outcome:
    """One bounds release end to end: :func:`~dprect.app.spine.run_release` of a
    :class:`BoundsProduct` (a bad parameter, path or schema: refused before any reservation)."""
    return run_release(BoundsProduct(settings), route, report)


def plan_lines(the_plan: BoundsPlan, settings: BoundsSettings) -> list[str]:
    """What a run prints before it reads the input (public inputs only): the guarantee,
    charged once however many groups, the coverage target, the rows a side clips at least
    in aim (the floor k_j) and from how many rows the share binds (with ``rows``, the share
    a side may clip there)."""
    g = the_plan.guarantee
    columns = settings.source.columns
    groups = f" in each of {len(settings.groups)} listed group(s)" if settings.groups else ""
    lines = [
        f"plan: private bounds for {len(columns)} column(s){groups}, "
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


__all__ = ["BoundsProduct", "BoundsSettings", "bounds_domains", "bounds_plan",
           "bounds_request", "bounds_settings", "plan_lines", "run_bounds_flow"]
