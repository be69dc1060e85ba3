"""The quantile statistics of the aggregate seam (issue #41): any of the registry's
quantiles (:data:`~dprect.core.statistic.QUANTILE_STATISTICS`: "p1" … "median" … "p99")
per (public group, column), in one charge (docs/privacy.md §11a).

:func:`plan_statistics` turns the asked statistic names into one
:class:`~dprect.core.quantiles.QuantilePlan` over the run's columns (each column ε/k, its
quantiles drawn together; re-derived by ``guarantee_check.check_quantiles_plan`` before
any data is read). :func:`release_grouped` draws every (group, column) from the merged
:class:`~dprect.core.quantiles.QuantileStatistics` an engine primitive computed — one
stream per public group from the run's source, in group order
(:meth:`~dprect.core.randomness.RandomSource.stream_seeds`), and within a group the
columns in order (:func:`~dprect.core.quantiles.draws`: the count, the centre of a
small group, the quantiles in increasing q; then a block's values at once,
:func:`~dprect.core.quantiles.released_cells`) — so a seed gives the same release on every
engine. Nothing here reads rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from dprect.core.accounting import ADD_REMOVE, Guarantee
from dprect.core.errors import ParameterError
from dprect.core.intervals import DEFAULT_LEVEL
from dprect.core.quantiles import (
    QuantileCell,
    QuantilePlan,
    QuantileStatistics,
    draws,
    plan_quantiles,
    released_cells,
)
from dprect.core.randomness import RandomSource, expect_draws
from dprect.core.result import grouped_json
from dprect.core.statistic import QUANTILES, STATISTICS, with_rank_error

#: about how many sampler calls a quantile of a cell makes (~200 a cell of nine,
#: measured): a block announces its cells × quantiles × this (public), so that a process
#: loads the compiled samplers from its blocks' public sizes
#: (:func:`~dprect.core.randomness.expect_draws`)
DRAWS_A_QUANTILE = 22

#: the record/table column of the small-group flag (the noisy count below
#: ``QuantilePlan.rows_needed``)
SMALL = "below_rows_needed"


def plan_statistics(names: Sequence[str], epsilon: float, columns: int, *,
                    neighbouring: str | None = None, beta: float | None = None,
                    interval_level: float | None = None) -> QuantilePlan:
    """The plan of the quantile statistics ``names`` (registry names, any order, each
    once) on ``columns`` columns for a total ``epsilon`` (its quantiles in increasing q:
    :func:`statistic_names`); ``interval_level`` the level of each cell's rank errors
    (default :data:`~dprect.core.intervals.DEFAULT_LEVEL`)."""
    asked = list(dict.fromkeys(names))
    if not asked or any(n not in STATISTICS or STATISTICS[n].mechanism is not QUANTILES
                        for n in asked):
        raise ParameterError("the quantile statistics are "
                             + ", ".join(s.name for s in STATISTICS.values()
                                         if s.mechanism is QUANTILES))
    qs = {n: STATISTICS[n].quantile or Fraction(0) for n in asked}
    by_q = sorted(asked, key=qs.__getitem__)
    return plan_quantiles([qs[n] for n in by_q], epsilon,
                          neighbouring=neighbouring or ADD_REMOVE, columns=columns,
                          beta=beta,
                          interval_level=(DEFAULT_LEVEL if interval_level is None
                                          else interval_level))


def statistic_names(plan: QuantilePlan) -> tuple[str, ...]:
    """The registry's name of each of the plan's quantiles, in the plan's order."""
    by_q = {s.quantile: s.name for s in STATISTICS.values() if s.mechanism is QUANTILES}
    if any(q not in by_q for q in plan.quantiles):
        raise ParameterError("a quantile of this plan is no statistic of the registry")
    return tuple(by_q[q] for q in plan.quantiles)


@dataclass(frozen=True)
class QuantileResult:
    """Per (group, column): the asked quantiles (``statistics``, increasing q), each
    with its ``<name>_rank_error`` at the plan's ``interval_level`` (None for a small
    group's centred draws), and the small-group flag. ``cells[g][j]``; ``groups`` is
    ``[None]`` for an ungrouped run."""

    columns: list[str]
    groups: list[Any]
    statistics: tuple[str, ...]
    cells: list[list[QuantileCell]]
    plan: QuantilePlan
    seeded: bool = False

    @property
    def guarantee(self) -> Guarantee:
        return self.plan.guarantee

    def rows(self) -> list[dict[str, Any]]:
        """One dict per (group, column) in draw order (a results table)."""
        out = []
        for gi, g in enumerate(self.groups):
            for j, c in enumerate(self.columns):
                cell = self.cells[gi][j]
                row: dict[str, Any] = {"group": g, "column": c}
                for name, value in zip(self.statistics, cell.values, strict=True):
                    row[name] = value
                    row[with_rank_error(name)[1]] = cell.rank_error
                row[SMALL] = cell.small
                out.append(row)
        return out

    def to_json(self) -> dict[str, Any]:
        """The result as JSON-ready values (every result's call: ``to_json``)."""
        return grouped_json(self, statistics=list(self.statistics))

    #: the older name of :meth:`to_json` (kept: callers use it)
    to_dict = to_json


def release_groups(plan: QuantilePlan, cells: Mapping[tuple[int, int], QuantileStatistics],
                   seeds: Sequence[int | None], columns: int) -> list[list[QuantileCell]]:
    """The cells of consecutive groups, group g (local) from its own stream
    ``RandomSource.stream(seeds[g])``, columns in order (``cells`` keyed by the local
    group index; a missing cell has no rows): blocks of groups drawn apart (in executors)
    give the run's cells for a seed."""
    expect_draws(len(seeds) * columns * len(plan.quantiles) * DRAWS_A_QUANTILE)  # public
    none = np.zeros(0, dtype=np.int64)
    empty = QuantileStatistics(none, none, none)
    drawn: list[list[int]] = []
    noisy: list[int | None] = []
    for g, seed in enumerate(seeds):
        stream = RandomSource.stream(seed)
        for j in range(columns):
            cell, count = draws(cells.get((g, j), empty), plan, stream)
            drawn.append(cell)
            noisy.append(count)
    # the block's values in one grid call (an integral column's snapped to integers)
    done = released_cells(plan, drawn, noisy, [j for _ in seeds for j in range(columns)])
    return [done[g * columns:(g + 1) * columns] for g in range(len(seeds))]


def quantile_head(plan: QuantilePlan, group_names: Sequence[Any], columns: Sequence[str],
                  seeded: bool) -> QuantileResult:
    """A run's result without cells (its columns checked against the plan; parameters
    only): what a streamed run returns once its blocks are handed on (issue #42)."""
    statistics = statistic_names(plan)
    if len(columns) != plan.columns:
        raise ParameterError(f"a plan of the quantiles of {plan.columns} column(s) for "
                             f"{len(columns)} column(s)")
    return QuantileResult(list(columns), list(group_names), tuple(statistics), [], plan,
                          seeded)


def release_grouped(plan: QuantilePlan, cells: Mapping[tuple[int, int], QuantileStatistics],
                    group_names: Sequence[Any], columns: Sequence[str], rng: RandomSource
                    ) -> QuantileResult:
    """Every (group, column)'s release (module notes) from the merged statistics
    (group index, column index → its statistics; a missing cell has no rows)."""
    head = quantile_head(plan, group_names, columns, rng.seeded)
    out = release_groups(plan, cells, rng.stream_seeds(len(group_names)), len(columns))
    return replace(head, cells=out)


__all__ = ["SMALL", "QuantileResult", "plan_statistics", "quantile_head", "release_grouped",
           "release_groups", "statistic_names"]
