"""``dprect.describe``: DP count, sum and mean per public group and column, with bounds found
privately and aimed at the query (issue #23; the mechanism is
:mod:`dprect.core.aggregates` over :mod:`dprect.core.tail_bounds`), in one charge.

The numpy route: the columns are read into memory (nulls, NaN and ±inf are left out of
their column only), each row is assigned its index in the PUBLIC group list (rows of other
groups are dropped, never reported), the numpy engine's one primitive counts the query
mechanism's statistics (:func:`dprect.engines.grouped.grouped_statistics`) and the core
draws every (group, column) in the public order from them
(:func:`dprect.engines.grouped.draw_query`) — the command's route, one implementation.
The data's schema (column names and types) decides every refusal; no value does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dprect.core.aggregates import STATISTICS, DescribeResult, plan_describe
from dprect.core.bounds import BoundsResult
from dprect.core.domains import GridArg
from dprect.core.errors import ParameterError
from dprect.core.randomness import RandomSource
from dprect.core.statistic import COVERAGE, QUERY, SEARCH_GRID, GroupedStatistics
from dprect.core.statistic import STATISTICS as STATISTIC_OF
from dprect.engines.grouped import draw_query, grouped_statistics
from dprect.release.budget import PrivacyBudget, charged, record


def _prepare(data: object, columns: Sequence[str] | None, groups: Sequence[object] | None,
             group_by: object) -> tuple[list[str], list[Any], GroupedStatistics]:
    """The columns' names, the public groups and each (group, column)'s statistics for
    the query mechanism, by the numpy route's row rules."""
    from dprect.app.api import grouped_columns

    names, values, group, group_list = grouped_columns(data, columns, group_by, groups,
                                                       "column to describe")
    spec = QUERY.spec([SEARCH_GRID] * len(names))
    return names, group_list, grouped_statistics(values, group, len(group_list), spec)


def describe(data: object, columns: Sequence[str] | None = None, *,
             epsilon: float, delta: float | None = None, group_by: object = None,
             groups: Sequence[object] | None = None,
             statistics: Sequence[str] = STATISTICS, seed: int | None = None,
             neighbouring: str | None = None, beta: float | None = None,
             query_epsilon: float | None = None,
             budget: PrivacyBudget | None = None) -> DescribeResult:
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
        pure: the guarantee is (ε, 0) and δ is not used.
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

    Returns a :class:`~dprect.core.aggregates.DescribeResult`: ``cells[g][j]`` (lower,
    upper, count, sum, mean), ``rows()``, ``plan`` (public; ``plan.table()`` is the
    printout with the accuracy statements), ``guarantee``, ``to_dict()``.
    """
    if isinstance(statistics, str):
        statistics = (statistics,)
    result = aggregate(data, columns, statistics=("bounds", *statistics), epsilon=epsilon,
                       delta=delta, group_by=group_by, groups=groups, seed=seed,
                       neighbouring=neighbouring, beta=beta, query_epsilon=query_epsilon,
                       budget=budget)
    assert isinstance(result, DescribeResult)
    return result


def aggregate(data: object, columns: Sequence[str] | None = None, *,
              statistics: Sequence[str], epsilon: float, delta: float | None = None,
              group_by: object = None, groups: Sequence[object] | None = None,
              seed: int | None = None, neighbouring: str | None = None,
              beta: float | None = None, budget: PrivacyBudget | None = None,
              query_epsilon: float | None = None, coverage: float | None = None,
              grid: GridArg = None, rows: int | None = None) -> BoundsResult | DescribeResult:
    """Any list of statistics per (public group, column) for one charge of ``epsilon``
    (issue #41; the statistics are :mod:`dprect.core.statistic`'s): ``"coverage"`` —
    bounds covering about ``coverage`` of each column's values (:func:`dprect.bounds`'s,
    with ``grid`` and ``rows``) — or any of ``"bounds"``, ``"count"``, ``"sum"``,
    ``"mean"`` — drawn together from one noisy count and one noisy clamped sum with the
    clamping bounds aimed at them (:func:`describe`'s, with ``query_epsilon``; the bounds
    are always released with them). One run draws one mechanism's statistics; an option
    of the other mechanism is refused. :func:`dprect.bounds` and :func:`describe` are its
    presets (``["coverage"]`` and ``["bounds", "count", "sum", "mean"]``). The other
    parameters are theirs. Returns a :class:`~dprect.core.bounds.BoundsResult` or a
    :class:`~dprect.core.aggregates.DescribeResult`."""
    asked = (statistics,) if isinstance(statistics, str) else tuple(statistics)
    if not asked or any(s not in STATISTIC_OF for s in asked):
        raise ParameterError(f"statistics must be among {', '.join(STATISTIC_OF)}, got "
                             f"{', '.join(map(repr, asked)) or 'none'}")
    if len({STATISTIC_OF[s].mechanism.name for s in asked}) > 1:
        raise ParameterError("one run draws one mechanism's statistics: 'coverage' alone, "
                             "or any of 'bounds', 'count', 'sum', 'mean'")
    if STATISTIC_OF[asked[0]].mechanism is COVERAGE:
        if query_epsilon is not None:
            raise ParameterError("query_epsilon aims the bounds of a count, sum or mean; "
                                 "the coverage bounds take coverage")
        from dprect.app.api import coverage_bounds

        return coverage_bounds(data, columns, epsilon=epsilon, delta=delta,
                               coverage=coverage, beta=beta, neighbouring=neighbouring,
                               grid=grid, group_by=group_by, groups=groups, rows=rows,
                               seed=seed, budget=budget)
    if (coverage, grid, rows) != (None, None, None):
        raise ParameterError("coverage, grid and rows are the coverage bounds' options")
    names, group_list, cells = _prepare(data, columns, groups, group_by)
    plan = plan_describe(epsilon, len(names), delta=delta, neighbouring=neighbouring,
                         beta=beta, statistics=tuple(s for s in asked if s != "bounds"),
                         query_epsilon=query_epsilon)
    rng = RandomSource(seed=seed)
    with charged(budget, plan.guarantee, "describe", names) as ticket:
        return record(ticket, draw_query(plan, cells, group_list, names, rng))


def bounds(data: object, columns: Sequence[str] | None = None, *, epsilon: float,
           delta: float | None = None, coverage: float | None = None,
           beta: float | None = None, neighbouring: str | None = None, grid: GridArg = None,
           group_by: object = None, groups: Sequence[object] | None = None,
           rows: int | None = None, seed: int | None = None,
           budget: PrivacyBudget | None = None) -> BoundsResult:
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

    Returns a :class:`~dprect.core.bounds.BoundsResult` (``lower[g][j]``,
    ``upper[g][j]``, ``guarantee``, ``library_forms()``, ``to_json()``). Errors depend
    only on the parameters and on the data's schema (column names and types).
    """
    result = aggregate(data, columns, statistics=("coverage",), epsilon=epsilon, delta=delta,
                       coverage=coverage, beta=beta, neighbouring=neighbouring, grid=grid,
                       group_by=group_by, groups=groups, rows=rows, seed=seed,
                       budget=budget)
    assert isinstance(result, BoundsResult)
    return result


def mean_bounds(data: object, columns: Sequence[str] | None = None, *,
                group_by: object = None, groups: Sequence[object] | None = None,
                epsilon: float, query_epsilon: float, seed: int | None = None,
                neighbouring: str | None = None,
                budget: PrivacyBudget | None = None) -> DescribeResult:
    """Bounds alone, aimed at a DP mean or sum the caller runs at ``query_epsilon`` per
    column: ``describe(..., statistics=())`` with all of ``epsilon`` on the bounds.
    ``cells[g][j].lower``/``.upper``."""
    return describe(data, columns, group_by=group_by, groups=groups, epsilon=epsilon,
                    statistics=(),
                    seed=seed, neighbouring=neighbouring, query_epsilon=query_epsilon,
                    budget=budget)


__all__ = ["aggregate", "bounds", "describe", "mean_bounds"]
