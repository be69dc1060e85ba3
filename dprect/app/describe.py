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
from dprect.core.randomness import RandomSource
from dprect.core.statistic import QUERY, SEARCH_GRID, GroupedStatistics
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
    names, group_list, cells = _prepare(data, columns, groups, group_by)
    plan = plan_describe(epsilon, len(names), delta=delta, neighbouring=neighbouring,
                         beta=beta, statistics=tuple(statistics),
                         query_epsilon=query_epsilon)
    rng = RandomSource(seed=seed)
    with charged(budget, plan.guarantee, "describe", names) as ticket:
        return record(ticket, draw_query(plan, cells, group_list, names, rng))


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


__all__ = ["describe", "mean_bounds"]
