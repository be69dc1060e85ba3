"""``dprect.describe``: DP count, sum and mean per public group and column, with bounds found
privately and aimed at the query (issue #23; the mechanism is
:mod:`dprect.core.aggregates` over :mod:`dprect.core.tail_bounds`), in one charge.

The numpy route of :func:`aggregate` and its presets: the columns are read into memory
(nulls, NaN and ±inf are left out of their column only), each row is assigned its index
in the PUBLIC group list (rows of other groups are dropped, never reported), the
mechanism's plan is the command's (:func:`dprect.app.aggregate_flow.plan_of`), the numpy
engine's one primitive counts the mechanism's statistics
(:func:`dprect.engines.grouped.grouped_statistics`) and the mechanism draws every
(group, column) in the public order from them (:meth:`Mechanism.draw
<dprect.core.statistic.Mechanism.draw>`) — the command's route, one implementation.
The data's schema (column names and types) decides every refusal; no value does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from dprect.core.accounting import Guarantee
from dprect.core.aggregates import STATISTICS, DescribeResult
from dprect.core.bounds import BoundsResult
from dprect.core.domains import GridArg
from dprect.core.errors import ParameterError
from dprect.core.group_selection import SelectedResult, SelectionPlan, composed, plan_selection
from dprect.core.mixed import MixedResult, draw_mixed
from dprect.core.quantile_release import QuantileResult
from dprect.core.randomness import RandomSource
from dprect.core.request import Neighbouring, check_pure
from dprect.core.statistic import COVERAGE, QUANTILES, SEARCH_GRID, Mechanism
from dprect.core.statistic import STATISTICS as STATISTIC_OF
from dprect.engines.grouped import grouped_statistics
from dprect.release.budget import PrivacyBudget, charged, record

if TYPE_CHECKING:
    from dprect.app.api import Grouping


def describe(data: object, columns: Sequence[str] | None = None, *,
             epsilon: float, delta: float | None = None, group_by: object = None,
             groups: Sequence[object] | None = None,
             statistics: Sequence[str] = STATISTICS, seed: int | None = None,
             neighbouring: str | None = None, beta: float | None = None,
             query_epsilon: float | None = None,
             budget: PrivacyBudget | None = None,
             interval_level: float | None = None, select_groups: bool = False,
             selection_epsilon: float | None = None,
             selection_delta: float | None = None) -> DescribeResult | SelectedResult:
    """DP count, sum and mean per (public group, column), with private bounds aimed at
    the query, for one charge of ``epsilon`` (:mod:`dprect.core.aggregates`).

    Parameters
    ----------
    data : a pyarrow Table, a pandas (or polars) DataFrame, or a rows × columns array.
    columns : the columns to describe (default: every column but ``group_by``).
    groups : the PUBLIC list of group values (never read from the data); with
        ``group_by``. Rows of other groups are dropped and never reported; a listed
        group without rows is released all the same.
    group_by : the group column's name (a table), or one group value per row.
    epsilon, delta : the total budget, spent once however many groups. Every mechanism is
        pure: the guarantee is (ε, 0); δ is 0 or None (a δ > 0 is refused: it would be
        neither used nor charged).
    statistics : any of "count", "sum", "mean" (default all three, released from one noisy
        count and one noisy clamped sum; "count" alone draws no sum noise and gives the
        count the sum's share too); ``()`` for bounds alone, aimed at a query
        spending ``query_epsilon`` per column (the whole budget then goes to the bounds).
    seed : for tests only — a seeded result is not private and says so.
    neighbouring : ``add-remove`` (default) or ``replace-one``.
    beta : failure probability of the plan's accuracy statements (default 10⁻³).
    (Defaults are :class:`~dprect.core.request.DescribeRequest`'s.)
    query_epsilon : the ε the sum or mean spends per column, which sets each side's
        target of clipped rows (default: the plan's own sum ε).
    budget : a :class:`~dprect.PrivacyBudget`: the plan's guarantee is charged to it before
        any noise is drawn (refused past its cap, nothing computed).
    interval_level : the stated level of each statistic's noise interval (default 0.95;
        post-processing, no budget: :mod:`dprect.core.intervals`).

    Returns a :class:`~dprect.core.aggregates.DescribeResult`: ``cells[g][j]`` (lower,
    upper, count, sum, mean), ``rows()``, ``plan`` (public; ``plan.table()`` is the
    printout with the accuracy statements), ``guarantee``, ``to_json()``.
    """
    return _preset(("bounds", *_names(statistics)), DescribeResult, locals())


def aggregate(data: object, columns: Sequence[str] | None = None, *,
              statistics: Sequence[str], epsilon: float, delta: float | None = None,
              group_by: object = None, groups: Sequence[object] | None = None,
              seed: int | None = None, neighbouring: str | None = None,
              beta: float | None = None, budget: PrivacyBudget | None = None,
              query_epsilon: float | None = None, coverage: float | None = None,
              grid: GridArg = None, rows: int | None = None,
              interval_level: float | None = None, select_groups: bool = False,
              selection_epsilon: float | None = None, selection_delta: float | None = None
              ) -> BoundsResult | DescribeResult | QuantileResult | MixedResult | SelectedResult:
    """Any list of statistics per (public group, column) for one charge of ``epsilon``
    (issue #41; the statistics are :mod:`dprect.core.statistic`'s): ``"coverage"`` —
    bounds covering about ``coverage`` of each column's values (:func:`dprect.bounds`'s,
    with ``grid`` and ``rows``) — or any of ``"bounds"``, ``"count"``, ``"sum"``,
    ``"mean"`` — drawn together from one noisy count and one noisy clamped sum with the
    clamping bounds aimed at them (:func:`describe`'s, with ``query_epsilon``; the bounds
    are always released with them) — or any quantiles of the registry (``"p1"``, ``"p5"``,
    ``"p10"``, ``"p25"``, ``"median"``, ``"p75"``, ``"p90"``, ``"p95"``, ``"p99"``), drawn
    together per (group, column), pure (ε, 0)-DP (:mod:`dprect.core.quantile_release`;
    each row also flags a cell whose noisy count is below the plan's ``rows_needed``; a
    column whose type is integral — an integer dtype, a pyarrow integer or decimal of
    scale 0, never read from the values — has its quantiles released as integers, as
    ``dprect aggregate`` does for a Parquet integer column). Statistics of several
    mechanisms (e.g. ``["mean", "median", "p90"]``) are drawn in ONE charge of
    ``epsilon`` and one pass over the data, each mechanism on its declared share of
    ``epsilon`` (equal shares today; pure: ``delta`` is refused; the query's and
    the coverage bounds' ``lower``/``upper`` collide, so those two are not mixed;
    docs/privacy.md §11b); an option of a mechanism not asked is refused.
    :func:`dprect.bounds` and :func:`describe` are its presets (``["coverage"]`` and
    ``["bounds", "count", "sum", "mean"]``). The other parameters are theirs;
    ``interval_level`` is also the level of each quantile's ``<name>_rank_error``
    (docs/privacy.md §15). Returns a
    :class:`~dprect.core.bounds.BoundsResult`, a
    :class:`~dprect.core.aggregates.DescribeResult`, a
    :class:`~dprect.core.quantile_release.QuantileResult`, or for several mechanisms a
    :class:`~dprect.core.mixed.MixedResult` (each one's result; its record, one row per
    (group, column) with every asked statistic's outputs:
    :func:`dprect.release.aggregate_record.mixed_record`).

    ``select_groups=True`` (with ``group_by``) finds the groups privately:
    a key of the group column is kept only if its noisy count passes the threshold set by
    ``selection_epsilon`` and ``selection_delta`` (docs/privacy.md §18); the statistics
    are then drawn on the kept keys, all for ONE charge of (ε + selection ε, δ + selection
    δ). With ``groups`` too, the listed groups are released whatever their rows (first;
    no δ spent on them) and the selection runs over the other keys only (docs/privacy.md
    §18, Theorem S′). The result is then a
    :class:`~dprect.core.group_selection.SelectedResult` (the statistics' result read
    through, the run's ``guarantee``)."""
    from dprect.app.aggregate_flow import asked_mechanisms, domains_of, plan_of
    from dprect.app.api import grouped_columns

    selection = _selection(select_groups, selection_epsilon, selection_delta, neighbouring)
    mechanisms, asked = asked_mechanisms(statistics)
    if len(mechanisms) > 1:
        return _mixed(data, columns, mechanisms, asked, epsilon=epsilon, delta=delta,
                      group_by=group_by, groups=groups, seed=seed,
                      neighbouring=neighbouring, beta=beta, budget=budget,
                      query_epsilon=query_epsilon, coverage=coverage, grid=grid, rows=rows,
                      interval_level=interval_level, selection=selection)
    if _quantiles_asked(statistics):
        if (query_epsilon, coverage, grid, rows) != (None,) * 4:
            raise ParameterError("query_epsilon, coverage, grid and rows are not the "
                                 "quantiles' options")
        return _quantiles(data, columns, statistics, epsilon=epsilon, delta=delta,
                          group_by=group_by, groups=groups, seed=seed,
                          neighbouring=neighbouring, beta=beta, budget=budget,
                          interval_level=interval_level, selection=selection)
    mechanism = mechanisms[0]
    if mechanism is not COVERAGE and coverage is not None:
        raise ParameterError("coverage, grid and rows are the coverage bounds' options")
    what = "column to bound" if mechanism is COVERAGE else "column to describe"
    names, values, grouping = grouped_columns(data, columns, group_by, groups, what,
                                              selection is not None)
    the_plan = plan_of(mechanism, {"columns": names, "epsilon": epsilon, "delta": delta,
                                   "coverage": coverage, "beta": beta,
                                   "neighbouring": neighbouring, "grid": grid, "rows": rows,
                                   "query_epsilon": query_epsilon,
                                   "interval_level": interval_level}, asked)
    rng = RandomSource(seed=seed)
    with charged(budget, _run_guarantee(the_plan.guarantee, selection), mechanism.name,
                 names) as ticket:
        group, group_list = grouping.resolve(selection, rng)
        cells = grouped_statistics(values, group, len(group_list),
                                   mechanism.spec(domains_of(mechanism, grid, names),
                                                  getattr(the_plan, "statistics", ())))
        return record(ticket, _selected(mechanism.draw(the_plan, cells, group_list, names,
                                                       rng), selection, grouping))


_R = TypeVar("_R")


def _preset(statistics: tuple[str, ...], kind: type[_R], given: dict[str, Any]
            ) -> _R | SelectedResult:
    """A preset of :func:`aggregate` (:func:`describe`, :func:`bounds`): its own
    ``statistics`` with every other parameter its caller was ``given`` (the caller's
    ``locals()`` on entry: its parameters, each one of :func:`aggregate`'s by name and
    default — tests/app/test_describe_api.py), and its result type (or a selection's)."""
    options = {name: value for name, value in given.items() if name != "statistics"}
    result = aggregate(statistics=statistics, **options)
    if not isinstance(result, kind | SelectedResult):
        raise AssertionError(f"the {statistics} preset gave a {type(result).__name__}")
    return result


def _mixed(data: object, columns: Sequence[str] | None, mechanisms: Sequence[Mechanism],
           asked: Sequence[str], *, epsilon: float, delta: float | None,
           group_by: object, groups: Sequence[object] | None, seed: int | None,
           neighbouring: str | None, beta: float | None, budget: PrivacyBudget | None,
           query_epsilon: float | None, coverage: float | None, grid: GridArg,
           rows: int | None, interval_level: float | None,
           selection: SelectionPlan | None = None) -> MixedResult | SelectedResult:
    """:func:`aggregate` of statistics of several mechanisms (docs/privacy.md §11b): each
    mechanism planned on its declared share of ``epsilon`` and the composed guarantee
    re-derived (:func:`dprect.core.mixed.plan_mixed`), charged ONCE, the cells counted in
    ONE pass of the numpy primitive over every mechanism's spec columns
    (:func:`~dprect.core.mixed.mixed_spec`), each mechanism drawn from its slice with its
    own stream (:func:`~dprect.core.mixed.draw_mixed`). The quantiles of a column whose
    declared type is integral are released as integers, as the command line's
    (:func:`~dprect.app.aggregate_flow.integral_plan`)."""
    from dprect.app.aggregate_flow import integral_plan, mixed_plan_of, run_spec
    from dprect.app.api import typed_grouped_columns

    if COVERAGE not in mechanisms and coverage is not None:
        raise ParameterError("coverage, grid and rows are the coverage bounds' options")
    names, values, integral, grouping = typed_grouped_columns(
        data, columns, group_by, groups, "column to summarise", selection is not None)
    the_plan = integral_plan(mixed_plan_of(mechanisms, {
        "columns": names, "epsilon": epsilon, "delta": delta, "coverage": coverage,
        "beta": beta, "neighbouring": neighbouring, "grid": grid, "rows": rows,
        "query_epsilon": query_epsilon, "interval_level": interval_level}, asked), integral)
    spec = run_spec(mechanisms, the_plan, grid, names)
    rng = RandomSource(seed=seed)
    with charged(budget, _run_guarantee(the_plan.guarantee, selection),
                 "+".join(the_plan.mechanisms), names) as ticket:
        group, group_list = grouping.resolve(selection, rng)
        cells = grouped_statistics([v for _ in mechanisms for v in values], group,
                                   len(group_list), spec)
        return record(ticket, _selected(draw_mixed(the_plan, mechanisms, cells, group_list,
                                                   names, rng), selection, grouping))


def _selection(select: bool, epsilon: float | None, delta: float | None,
               neighbouring: str | None) -> SelectionPlan | None:
    """The private group selection asked for (planned and checked), or None."""
    if not select:
        if epsilon is not None or delta is not None:
            raise ParameterError("selection_epsilon and selection_delta need "
                                 "select_groups=True")
        return None
    return plan_selection(epsilon, delta, neighbouring or Neighbouring.ADD_REMOVE)


def _run_guarantee(statistics: Guarantee, selection: SelectionPlan | None) -> Guarantee:
    """What a run charges: the statistics' guarantee, after a selection the two composed."""
    return statistics if selection is None else composed(statistics, selection)


def _selected(result: Any, selection: SelectionPlan | None, grouping: Grouping) -> Any:
    """The result, or after a selection the result with the run's guarantee (the keys
    the selection kept, the public groups listed beside it)."""
    if selection is None:
        return result
    return SelectedResult(result, selection, grouping.kept, listed=len(grouping.groups))


def _names(statistics: str | Sequence[str]) -> tuple[str, ...]:
    """The statistics asked: one name, or a sequence of them."""
    return (statistics,) if isinstance(statistics, str) else tuple(statistics)


def _quantiles_asked(statistics: str | Sequence[str]) -> bool:
    """Whether every asked statistic is a quantile (a mixed list is refused by the
    generic path: one run draws one mechanism's statistics)."""
    names = _names(statistics)
    return bool(names) and all(n in STATISTIC_OF and STATISTIC_OF[n].mechanism is QUANTILES
                               for n in names)


def _quantiles(data: object, columns: Sequence[str] | None, statistics: str | Sequence[str],
               *, epsilon: float, delta: float | None, group_by: object,
               groups: Sequence[object] | None, seed: int | None,
               neighbouring: str | None, beta: float | None,
               budget: PrivacyBudget | None, interval_level: float | None = None,
               selection: SelectionPlan | None = None) -> QuantileResult | SelectedResult:
    """:func:`aggregate`'s quantiles (:mod:`dprect.core.quantile_release`): planned and
    checked before the engine counts, counted by the numpy engine's primitive on the
    :data:`~dprect.core.statistic.QUANTILES` spec, charged like describe. A column whose
    DECLARED type is integral (an integer dtype or pyarrow type, a decimal of scale 0:
    :func:`~dprect.app.api.typed_grouped_columns`, never its values) has its quantiles
    released as integers (:func:`~dprect.core.quantiles.snap_integers`, post-processing),
    as the command line's and the jobs'."""
    from dprect.app.api import typed_grouped_columns

    asked = _names(statistics)
    if len(set(asked)) != len(asked):
        raise ParameterError("statistics names a statistic twice")
    check_pure(delta, "delta", "the quantiles")
    if not isinstance(epsilon, float | int) or isinstance(epsilon, bool):
        raise ParameterError("epsilon must be a number")
    names, values, integral, grouping = typed_grouped_columns(
        data, columns, group_by, groups, "column to summarise", selection is not None)
    the_plan = QUANTILES.plan(asked, epsilon, len(names), neighbouring=neighbouring,
                              beta=beta, interval_level=interval_level
                              ).with_integral(integral)
    rng = RandomSource(seed=seed)
    with charged(budget, _run_guarantee(the_plan.guarantee, selection), QUANTILES.name,
                 names) as ticket:
        group, group_list = grouping.resolve(selection, rng)
        cells = grouped_statistics(values, group, len(group_list),
                                   QUANTILES.spec([SEARCH_GRID] * len(names)))
        return record(ticket, _selected(QUANTILES.draw(the_plan, cells, group_list, names,
                                                       rng), selection, grouping))


def bounds(data: object, columns: Sequence[str] | None = None, *, epsilon: float,
           delta: float | None = None, coverage: float | None = None,
           beta: float | None = None, neighbouring: str | None = None, grid: GridArg = None,
           group_by: object = None, groups: Sequence[object] | None = None,
           rows: int | None = None, seed: int | None = None,
           budget: PrivacyBudget | None = None,
           interval_level: float | None = None, select_groups: bool = False,
           selection_epsilon: float | None = None,
           selection_delta: float | None = None) -> BoundsResult | SelectedResult:
    """Private clamping bounds: per column (and per listed group) a lower and an upper
    bound that cover about ``coverage`` of its values (:mod:`dprect.core.bounds`).

    Parameters
    ----------
    data : a pyarrow Table, a pandas (or polars) DataFrame, or a rows × columns array.
        Every row counts (there is no label); a null, NaN or ±inf value is left out of its
        column only.
    columns : the columns to bound (default: every column but ``group_by``); for an array,
        the names of its columns (default x0, x1, …).
    epsilon, delta : the total budget, spent once however many groups (δ defaults to 0).
    coverage : the share of each column's values the bounds aim to cover (each side clips
        about (1 − coverage)/2; default 0.999).
    beta : failure probability of the coverage statement (per group; default 10⁻³).
    neighbouring : ``add-remove`` (default) or ``replace-one``.
    (Defaults are :class:`~dprect.core.bounds.BoundsRequest`'s.)
    grid : public domains, as in :func:`fit` (default ``FloatBins(12)`` on every column: a
        log-scale grid over every float, no bounds needed).
    group_by : the group column's name (a table), or one group value per row.
    groups : the PUBLIC list of group values (strings, numbers or booleans, read against
        the group column's type) — required with ``group_by`` and never read from the
        data, since the set of values a column holds is itself data-dependent. Rows of
        other groups (or with a null group) are dropped and never reported.
    rows : your public estimate of a group's row count (only the plan's printout uses it).
    seed : for tests only — a seeded result is not private and says so.
    budget : a :class:`~dprect.PrivacyBudget`: the plan's guarantee is charged to it before
        any noise is drawn (refused past its cap, nothing computed).
    interval_level : the level of each bound's ``rank_error`` (default 0.95).

    Returns a :class:`~dprect.core.bounds.BoundsResult` (``lower[g][j]``,
    ``upper[g][j]``, ``guarantee``, ``library_forms()``, ``to_json()``). Errors depend
    only on the parameters and on the data's schema (column names and types).
    """
    return _preset(("coverage",), BoundsResult, locals())


def mean_bounds(data: object, columns: Sequence[str] | None = None, *,
                group_by: object = None, groups: Sequence[object] | None = None,
                epsilon: float, query_epsilon: float, seed: int | None = None,
                neighbouring: str | None = None,
                budget: PrivacyBudget | None = None) -> DescribeResult:
    """Bounds alone, aimed at a DP mean or sum the caller runs at ``query_epsilon`` per
    column: ``describe(..., statistics=())`` with all of ``epsilon`` on the bounds.
    ``cells[g][j].lower``/``.upper``."""
    result = describe(data, columns, group_by=group_by, groups=groups, epsilon=epsilon,
                      statistics=(), seed=seed, neighbouring=neighbouring,
                      query_epsilon=query_epsilon, budget=budget)
    assert isinstance(result, DescribeResult)  # no selection here
    return result


__all__ = ["aggregate", "bounds", "describe", "mean_bounds"]
