"""DP aggregates as a product on the run spine (:mod:`dprect.app.spine`): ``dprect describe``
on either engine and ``jobs/describe.py`` — per public group and column a DP count, sum and
mean, with bounds found privately and aimed at the query, in ONE charge
(:mod:`dprect.core.aggregates`; :func:`dprect.describe` is the in-memory twin for Python
data: same row rules, same draws for a seed).

:func:`describe_settings` checks a front end's values: the columns, the group list (a
PUBLIC list: ``--groups`` or a file, never read from the data: :mod:`dprect.app.groups`),
the statistics and **the plan** (:func:`dprect.core.aggregates.plan_describe`, made once,
there, from public inputs only). On the spine, :class:`DescribeProduct` announces the plan
(the budget split per column, the guarantee and the accuracy statements); the engine's
route reads the table and checks its schema (the one
:class:`~dprect.app.table_product.GroupedRoute`); the charge is the
plan's guarantee, reserved ONCE however many groups (the groups are disjoint sets of
rows: parallel composition); the compute counts the query mechanism's statistics on the
engine (:data:`dprect.core.statistic.QUERY`: rows and exact sums per search bin) and
draws every cell from them on the driver (:func:`dprect.engines.grouped.draw_query`);
the release goes to the result JSON
(:mod:`dprect.release.describe_record`), with ``--table`` one row per (group, column) as
CSV or Delta (:mod:`dprect.release.describe_table`), with ``--plot`` a PNG of the means
with their noise's error bars (:mod:`dprect.release.describe_plot`).

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
from dprect.core.aggregates import STATISTICS, DescribePlan, plan_describe
from dprect.core.errors import ParameterError
from dprect.core.randomness import RandomSource
from dprect.core.request import Source
from dprect.core.statistic import QUERY, SEARCH_GRID
from dprect.engines.grouped import draw_query
from dprect.release.describe_plot import DescribePngSink
from dprect.release.describe_record import (
    DESCRIBE_METHOD,
    describe_record,
    summary_lines,
)
from dprect.release.describe_table import describe_table_sink
from dprect.release.guarded import LedgerSettings, Outcome
from dprect.release.sinks import Sink

#: ``--statistics none``: the bounds alone (aimed at ``--query-epsilon``)
NO_STATISTICS = "none"


# -- public settings ------------------------------------------------------------------------
@dataclass(frozen=True)
class DescribeSettings:
    """Everything a describe run was asked for, checked: the table, the public group
    values (None: no groups), the plan (made once, from public inputs), the sinks, the
    ledger (None: no ledger), the seed (tests only) and the groups file (None: none)."""

    source: Source
    groups: list[str] | None
    plan: DescribePlan
    sinks: Sequence[Sink]
    ledger: LedgerSettings | None = None
    seed: int | None = None
    groups_file: str | None = None

    @property
    def group_names(self) -> list[str | None]:
        """The groups as the core names them: the listed values, or one unnamed group."""
        return group_names(self.groups)


def describe_statistics(value: str | Sequence[str] | None, name: Callable[[str], str] = str
                        ) -> tuple[str, ...]:
    """The statistics asked for: None → all of count, sum, mean; ``none`` → () (the
    bounds alone); else the named ones (a list or comma-separated text; checked by the
    plan)."""
    if value is None:
        return STATISTICS
    names = ([t.strip() for t in value.split(",") if t.strip()] if isinstance(value, str)
             else [str(v).strip() for v in value])
    if [n.lower() for n in names] == [NO_STATISTICS]:
        return ()
    if not names:
        raise ParameterError(f"{name('statistics')} is empty: name some of "
                             f"{', '.join(STATISTICS)}, or {NO_STATISTICS!r}")
    return tuple(names)


def describe_plan(values: Mapping[str, Any], name: Callable[[str], str] = str
                  ) -> DescribePlan:
    """The plan alone (``--plan-only``, and the run's one plan): from ``epsilon``,
    ``delta``, ``neighbouring``, ``beta``, the number of ``columns``, ``statistics`` and
    ``query_epsilon``; nothing is read."""
    if values.get("epsilon") is None:
        raise ParameterError(f"{name('epsilon')} is required")
    columns = values.get("columns")
    if not columns:
        raise ParameterError(f"{name('columns')} is required")
    return plan_describe(values["epsilon"], len(list(columns)), delta=values.get("delta"),
                         neighbouring=values.get("neighbouring"), beta=values.get("beta"),
                         statistics=describe_statistics(values.get("statistics"), name),
                         query_epsilon=values.get("query_epsilon"))


def describe_settings(values: Mapping[str, Any], name: Callable[[str], str] = str
                      ) -> DescribeSettings:
    """The settings of a describe run from a front end's flat values — the command line's
    parsed arguments or the job's config section, both spelled as the config keys:
    ``input``, ``format``, ``where``, ``version``, ``timestamp``, ``columns``,
    ``group_by``, ``groups``, ``groups_file``, ``epsilon``, ``delta``, ``neighbouring``,
    ``beta``, ``statistics``, ``query_epsilon``, ``output``, ``table``, ``plot``,
    ``ledger``, ``dataset``, ``run_id``, ``cap_epsilon``, ``cap_delta``, ``seed``. Each is
    checked (nothing read); ``name`` spells a key in messages."""
    the_plan = describe_plan(values, name)
    run = table_run(values, name)
    source = run.source
    sinks: list[Sink] = [run.output]
    if values.get("table") is not None:
        sinks.append(describe_table_sink(name("table"), str(values["table"])))
    if values.get("plot") is not None:
        if not {"count", "mean"} <= set(the_plan.statistics):
            raise ParameterError(f"{name('plot')} draws the means with their error bars: "
                                 f"{name('statistics')} must include count and mean")
        sinks.append(DescribePngSink(name("plot"), str(values["plot"]),
                                     title=values.get("dataset") or Path(source.path).name))
    return DescribeSettings(source, run.groups, the_plan, sinks, run.ledger,
                            checked_seed(values, name), values.get("groups_file"))


# -- the product on the spine -------------------------------------------------------------
class DescribeProduct(TableProduct[DescribeSettings]):
    """DP aggregates as a grouped-table product of the spine: the plan (the settings')
    printed with its budget split; the engine draws every (group, column) in the public
    order."""

    what = "these aggregates are"
    noun = "the aggregates"
    kind = RecordKind(DESCRIBE_METHOD, "describe", summary_lines)

    def announce(self) -> list[str]:
        s = self.settings
        return plan_lines(s.plan, s.source.columns, None if s.groups is None else len(s.groups))

    def open(self, route: GroupedRoute, progress: Callable[[str], None]
             ) -> GroupedPrepared:
        s = self.settings
        return route.open(s.source, s.groups, QUERY.spec([SEARCH_GRID] * len(s.source.columns)),
                          progress)

    def compute(self, prepared: GroupedPrepared, progress: Callable[[str], None]
                ) -> tuple[Guarantee | None, dict[str, Any]]:
        s = self.settings
        self.working("describing", progress)
        result = draw_query(s.plan, prepared.statistics(), s.group_names, s.source.columns,
                            RandomSource(seed=s.seed))
        return result.guarantee, describe_record(result)


def run_describe_flow(settings: DescribeSettings, route: GroupedRoute,
                      report: Reporter | None = None) -> Outcome:
    """One describe release end to end: :func:`~dprect.app.spine.run_release` of a
    :class:`DescribeProduct` (bad parameters, paths, schemas: refused before any reservation)."""
    return run_release(DescribeProduct(settings), route, report)


def plan_lines(the_plan: DescribePlan, columns: Sequence[str], groups: int | None
               ) -> list[str]:
    """What a run prints before it reads the input (public inputs only): what is
    released, the budget split (evenly over the columns; per column the shares of the
    centre, the two sides, the count and the sum), charged once however many groups, then
    the plan's own printout (:meth:`DescribePlan.table`: the split in ε, the clip target
    and the accuracy statements)."""
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


__all__ = ["NO_STATISTICS", "DescribeProduct",
           "DescribeSettings", "describe_plan", "describe_settings", "describe_statistics",
           "plan_lines", "run_describe_flow"]
