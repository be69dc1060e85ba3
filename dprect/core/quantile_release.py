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
engine. In two phases (:func:`first_phase`, :func:`second_phase`; docs/privacy.md §11a,
Lemma Q5): every cell as above, then, per column, ONE centre drawn from the run's source
(after the groups' seeds) on the summed rows of its cells whose noisy count is below the
plan's ``pool_rows`` (:func:`pooled_centres`; blocks' pools joined by
:func:`joined_pools`), and those cells' quantiles redrawn near it from their group's
pooled stream (a seed drawn last from the group's own stream). A column whose pooled
cells' released rows Σ max(ñ, 0) fall short of ``pool_rows`` has no reliable pooled
centre: when some cell of the column is not pooled, the pooled cells search near the
column's *anchor* instead (:func:`anchor_centre`, the lower median of the other cells'
released bins' blocks; no draw, no ε: docs/privacy.md §11a, Lemma Q6). Where no cell is
pooled nothing is drawn in phase 2: the release is phase 1's, bit for bit. Nothing here
reads rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from dprect.core.accounting import ADD_REMOVE, Guarantee
from dprect.core.decimal_grid import DecimalGrid
from dprect.core.errors import ParameterError
from dprect.core.intervals import BELOW_ROW_NEED, DEFAULT_LEVEL
from dprect.core.quantile_centre import blocks, signs
from dprect.core.quantiles import (
    QuantileCell,
    QuantilePlan,
    QuantileStatistics,
    draws,
    draws_near,
    plan_quantiles,
    pool_histogram,
    pooled_centre,
    quantile_grid,
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
    group's centred draws), and the small-group flag
    (:data:`~dprect.core.intervals.BELOW_ROW_NEED`). ``cells[g][j]``; ``groups`` is
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
                row[BELOW_ROW_NEED] = cell.small
                out.append(row)
        return out

    def to_json(self) -> dict[str, Any]:
        """The result as JSON-ready values (every result's call: ``to_json``)."""
        return grouped_json(self, statistics=list(self.statistics))

    #: the older name of :meth:`to_json` (kept: callers use it)
    to_dict = to_json


def signed_blocks(plan: QuantilePlan, bins: np.ndarray) -> np.ndarray:
    """Each grid cell's (block, sign) of the centre grid
    (:func:`~dprect.core.quantile_centre.blocks`, :func:`~dprect.core.quantile_centre.signs`)
    as one sortable key, int64: −block on the negative side, 0 for zero's two cells,
    +block on the positive side — the signed order of the values (a cell of a larger
    index has a key at least as large), one key a (block, sign) a cell can have."""
    g = quantile_grid(plan.grid, plan.resolution)
    assert isinstance(g, DecimalGrid)
    i = np.asarray(bins, dtype=np.int64)
    return ((signs(g, i) - 1) * blocks(g, i)).astype(np.int64)


def anchor_centre(keys: np.ndarray, counts: np.ndarray) -> tuple[int, int]:
    """The anchor (block, sign) of a column from its :class:`QuantilePools` ``anchors``
    histogram (sorted signed keys, :func:`signed_blocks`; their cells): the key of the
    lower median of the cells, element ⌊(N − 1)/2⌋ of the N keys in increasing order —
    exact, and the same whatever the blocks the histogram was summed from — as (|key|,
    sign): 0 for a negative key, 1 for 0, 2 for a positive one."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total < 1:
        raise ParameterError("an anchor needs at least one cell")
    at = int(np.searchsorted(np.cumsum(counts), (total - 1) // 2, side="right"))
    key = int(np.asarray(keys, dtype=np.int64)[at])
    return abs(key), 1 + (key > 0) - (key < 0)


@dataclass
class QuantilePools:
    """What a column's pooled cells search near, over the groups of some blocks
    (:func:`first_phase`; joined by :func:`joined_pools`): per column with pooled cells
    (those whose noisy count is below ``QuantilePlan.pool_rows``) the summed histogram of
    their rows (:func:`~dprect.core.quantiles.pool_histogram`) in ``hists`` and their
    released rows Σ max(ñ, 0) in ``rows``; per column with cells drawn without the pool
    (a noisy count of at least ``pool_rows``) the histogram of each such cell's *middle
    bin* — the lower median of its m drawn bins, bin ⌊(m − 1)/2⌋ in grid order, a
    mechanism's output whose value the cell releases — by its signed block
    (:func:`signed_blocks`) in ``anchors`` (sorted keys, cells). Every part sums, so the
    pools of any blocks join exactly to the run's."""

    hists: dict[int, tuple[np.ndarray, np.ndarray]]
    rows: dict[int, int]
    anchors: dict[int, tuple[np.ndarray, np.ndarray]]


@dataclass
class QuantileFirst:
    """Phase 1 of a block of consecutive groups (:func:`first_phase`): every cell drawn
    as without pooling (``drawn``, ``noisy``, group-major), the cells to pool (those whose
    noisy count is below ``QuantilePlan.pool_rows``: ``(group, column)`` local), each such
    group's pooled stream seed (drawn last from its own stream) and the block's
    :class:`QuantilePools`."""

    drawn: np.ndarray  # int64 (cells, m): a block's cells kept compact until phase 2
    noisy: list[int | None]
    pooled: list[tuple[int, int]]
    seeds: dict[int, int | None]
    pools: QuantilePools


def first_phase(plan: QuantilePlan, cells: Mapping[tuple[int, int], QuantileStatistics],
                seeds: Sequence[int | None], columns: int) -> QuantileFirst:
    """Phase 1 of the groups ``seeds`` (module notes): group g (local) from its own
    stream ``RandomSource.stream(seeds[g])``, columns in order, each cell's draws as
    :func:`~dprect.core.quantiles.draws` makes them (so a cell that is not pooled, and every
    cell of a group without a pooled one, is what it was without pooling, bit for bit); a
    cell whose noisy count is below the plan's ``pool_rows`` is marked pooled — its own
    centre and quantiles are NOT released, :func:`second_phase` replaces them — and such a
    group draws one stream seed last from its own stream for its pooled cells' draws.
    The block's pools (:class:`QuantilePools`) read released counts and drawn bins only,
    besides the pooled cells' histograms."""
    expect_draws(len(seeds) * columns * len(plan.quantiles) * DRAWS_A_QUANTILE)  # public
    empty = _empty()
    drawn: list[list[int]] = []
    first = QuantileFirst(np.zeros((0, len(plan.quantiles)), dtype=np.int64), [], [], {},
                          QuantilePools({}, {}, {}))
    parts: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    rows: dict[int, int] = {}
    for g, seed in enumerate(seeds):
        stream = RandomSource.stream(seed)
        for j in range(columns):
            stats = cells.get((g, j), empty)
            cell, count = draws(stats, plan, stream)
            drawn.append(cell)
            first.noisy.append(count)
            if plan.pooled(count):
                assert count is not None
                first.pooled.append((g, j))
                parts.setdefault(j, []).append((stats.keys, stats.counts))
                rows[j] = rows.get(j, 0) + max(count, 0)
        if first.pooled and first.pooled[-1][0] == g:
            first.seeds[g] = stream.stream_seeds(1)[0]
    first.drawn = np.array(drawn, dtype=np.int64).reshape(len(drawn), len(plan.quantiles))
    first.pools = QuantilePools({j: pool_histogram(p) for j, p in sorted(parts.items())},
                                dict(sorted(rows.items())),
                                _anchor_pools(plan, first.drawn, first.noisy, columns))
    return first


def _anchor_pools(plan: QuantilePlan, drawn: np.ndarray, noisy: Sequence[int | None],
                  columns: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per column, the histogram of the signed blocks of the middle bins of the cells
    drawn without the pool (:class:`QuantilePools`); none on a plan that pools nothing."""
    if not plan.pool_rows or not len(drawn) or not columns:
        return {}
    kept = np.array([n is not None and not plan.pooled(n) for n in noisy], dtype=bool)
    if not kept.any():
        return {}
    middle = np.sort(drawn, axis=1)[:, (drawn.shape[1] - 1) // 2]
    keys = signed_blocks(plan, middle[kept])
    where = (np.arange(len(drawn)) % columns)[kept]
    out = {}
    for j in np.unique(where).tolist():
        found, counts = np.unique(keys[where == j], return_counts=True)
        out[int(j)] = (found.astype(np.int64), counts.astype(np.int64))
    return out


def _empty() -> QuantileStatistics:
    none = np.zeros(0, dtype=np.int64)
    return QuantileStatistics(none, none, none)


def joined_pools(parts: Sequence[QuantilePools]) -> QuantilePools:
    """The pools of blocks joined (every part summed, column by column): the run's."""
    hist_cols = sorted({j for p in parts for j in p.hists})
    anchor_cols = sorted({j for p in parts for j in p.anchors})
    return QuantilePools(
        {j: pool_histogram([p.hists[j] for p in parts if j in p.hists]) for j in hist_cols},
        {j: sum(p.rows.get(j, 0) for p in parts) for j in hist_cols},
        {j: pool_histogram([p.anchors[j] for p in parts if j in p.anchors])
         for j in anchor_cols})


def pooled_centres(plan: QuantilePlan, pools: QuantilePools, rng: RandomSource
                   ) -> dict[int, tuple[int, int]]:
    """Each column with pooled cells' ONE centre (block, sign), columns in order
    (docs/privacy.md §11a, Lemmas Q5 and Q6): when the pooled cells' released rows reach
    the plan's ``pool_rows``, or no cell of the column was drawn without the pool, drawn
    from the run's source ``rng`` (:func:`~dprect.core.quantiles.pooled_centre`); else the
    column's anchor (:func:`anchor_centre` of its cells drawn without the pool), with no
    draw — so an anchored column takes nothing from ``rng``. Which it is depends on
    released counts only; every engine calls this one function on the joined pools."""
    out = {}
    for j in sorted(pools.hists):
        if pools.rows.get(j, 0) < plan.pool_rows and j in pools.anchors:
            out[j] = anchor_centre(*pools.anchors[j])
        else:
            out[j] = pooled_centre(plan, *pools.hists[j], rng)
    return out


def second_phase(plan: QuantilePlan, cells: Mapping[tuple[int, int], QuantileStatistics],
                 first: QuantileFirst, centres: Mapping[int, tuple[int, int]], columns: int
                 ) -> list[list[QuantileCell]]:
    """Phase 2 of a block: each pooled cell's quantiles drawn near its column's pooled
    centre (:func:`~dprect.core.quantiles.draws_near`) from its group's pooled stream, its
    group's pooled cells in column order; then the block's released cells."""
    empty = _empty()
    drawn = first.drawn.copy() if first.pooled else first.drawn
    streams: dict[int, RandomSource] = {}
    for g, j in first.pooled:
        if g not in streams:
            streams[g] = RandomSource.stream(first.seeds[g])
        drawn[g * columns + j] = draws_near(cells.get((g, j), empty), plan, *centres[j],
                                            streams[g])
    groups = len(drawn) // columns if columns else 0
    # the block's values in one grid call (an integral column's snapped to integers)
    done = released_cells(plan, drawn, first.noisy,
                          [j for _ in range(groups) for j in range(columns)])
    return [done[g * columns:(g + 1) * columns] for g in range(groups)]


def release_groups(plan: QuantilePlan, cells: Mapping[tuple[int, int], QuantileStatistics],
                   seeds: Sequence[int | None], columns: int, rng: RandomSource
                   ) -> list[list[QuantileCell]]:
    """The cells of the groups ``seeds`` in both phases (:func:`first_phase`, the pooled
    centres from the run's source ``rng`` after the groups' seeds, :func:`second_phase`)."""
    first = first_phase(plan, cells, seeds, columns)
    centres = pooled_centres(plan, first.pools, rng)
    return second_phase(plan, cells, first, centres, columns)


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
    out = release_groups(plan, cells, rng.stream_seeds(len(group_names)), len(columns), rng)
    return replace(head, cells=out)


__all__ = ["QuantileFirst", "QuantilePools", "QuantileResult", "anchor_centre",
           "first_phase", "joined_pools", "plan_statistics", "pooled_centres",
           "quantile_head", "release_grouped", "release_groups", "second_phase",
           "signed_blocks", "statistic_names"]
