"""The seam of the grouped aggregates (issue #41): what a statistic declares, and the one
shape of the sufficient statistics every engine hands the core.

**Sufficient statistics.** An engine never hands a mechanism rows: for every (public
group g, column j) it hands the column's rows counted per bin of a PUBLIC grid — sorted
unique bin keys, the rows per bin and, where asked, the exact sum per bin of the rows'
truncated significands (:func:`dprect.core.describe_stats.significands`; exact integers
at any row count) — a :class:`CellBins`. What is counted is a :class:`StatisticsSpec`:
per column its grid and whether sums are kept (:class:`ColumnSpec`; a later statistic may
add sums of squares here). One engine primitive computes it for any spec: numpy's
:func:`dprect.engines.numpy_statistics.grouped_statistics`, Spark's one ``mapInArrow``
pass :func:`dprect.engines.spark.statistics.spark_statistics`; both equal, cell for cell,
the reference reduction :func:`cell_bins` of the cell's finite values. Row rules are the
engines': a null, NaN or ±inf value is left out of its column only; a row of no listed
group is dropped (row-local: no privacy cost).

**Statistics.** A :class:`Statistic` declares
  * ``name`` — its name in ``--statistics`` and in the record;
  * ``mechanism`` — the :class:`Mechanism` that draws it. Statistics drawn together (from
    one noisy count and one noisy clamped sum, with bounds aimed at them) share a
    mechanism: the mechanism owns the sufficient statistics (:meth:`Mechanism.spec`), the
    plan (the budget split), the draws (each group from its own stream of the run's
    :class:`~dprect.core.randomness.RandomSource`) and the guarantee-check entry
    (:mod:`dprect.core.guarantee_check`);
  * ``draws`` — the noisy values it is released from (its budget weight: a noise drawn
    only when a statistic asked for reads it, e.g. the sum noise only for a sum or a
    mean, so a count-only run spends its query budget on the count);
  * ``outputs`` — the record/table columns it fills (the plot reads these): a
    mechanism's columns are :func:`outputs` — describe's record rows
    (:data:`dprect.release.describe_record.ROW_KEYS`) and bounds' table
    (:data:`dprect.release.bounds_table.BOUNDS_LAYOUT`) are generated from it.

The built-in mechanisms are :data:`QUERY` (describe's: a centre, two sides searched
outward and aimed at the query, a count and a clamped sum; docs/privacy.md §11) and
:data:`COVERAGE` (bounds': four exponential mechanisms per group over a histogram on the
column's domain; §9). count, sum, mean and the query-aimed bounds are QUERY's statistics;
the coverage bounds are COVERAGE's. A new statistic (a quantile, a variance) is a new
:class:`Statistic` — on an existing mechanism when it reads the noises it draws (a
variance from a sum of squares the spec adds), or on a mechanism of its own (quantiles
read the counts per search bin) — with its guarantee-check entry and its test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dprect.core.bounds import Histogram
from dprect.core.describe_stats import BinStatistics, significands, sum_by_key
from dprect.core.domains import Domain, FloatBins
from dprect.core.errors import ParameterError
from dprect.core.tail_bounds import SEARCH_BITS

#: the grid of the query mechanism: every candidate bound is one of its bin edges
SEARCH_GRID = FloatBins(SEARCH_BITS)


@dataclass(frozen=True)
class ColumnSpec:
    """What an engine counts for one column: its rows per bin of ``grid`` (the grid's own
    :meth:`~dprect.core.domains.Domain.encode`) and, with ``sums``, the exact sum of their
    truncated significands per bin."""

    grid: Domain
    sums: bool


@dataclass(frozen=True)
class StatisticsSpec:
    """What the engine primitive computes: one :class:`ColumnSpec` per column, in the
    columns' order."""

    columns: tuple[ColumnSpec, ...]

    def __post_init__(self) -> None:
        if not self.columns:
            raise ParameterError("a statistics spec needs at least one column")


@dataclass(frozen=True)
class CellBins:
    """One (group, column)'s merged sufficient statistics: sorted unique int64 bin
    ``keys`` of the column's grid, the int64 rows per bin (each ≥ 1) and, when the spec
    keeps them, the exact sums per bin (int64, or Python integers past int64)."""

    keys: np.ndarray
    counts: np.ndarray
    sums: np.ndarray | None = None

    def histogram(self) -> Histogram:
        """The counts, as the coverage mechanism reads them."""
        return Histogram(self.keys, self.counts)

    def bin_statistics(self) -> BinStatistics:
        """The counts and sums, as the query mechanism reads them."""
        if self.sums is None:
            raise ParameterError("these statistics were counted without sums")
        return BinStatistics(self.keys, self.counts, self.sums)


#: a run's statistics: (group index, column index) → its cell; a cell missing has no rows
GroupedStatistics = dict[tuple[int, int], CellBins]


def cell_bins(values: np.ndarray, spec: ColumnSpec) -> CellBins:
    """The reference reduction of one cell's finite ``values`` (float64) under ``spec``:
    what every engine primitive must hand the core for the cell."""
    x = np.ascontiguousarray(values, dtype=np.float64)
    keys = spec.grid.encode(x).astype(np.int64)
    if spec.sums:
        k, n, s = sum_by_key(keys, significands(x.view(np.int64)))
        return CellBins(k, n, s)
    k, n = np.unique(keys, return_counts=True)
    return CellBins(k, n.astype(np.int64))


def complete(found: Mapping[tuple[int, int], CellBins], spec: StatisticsSpec, groups: int
             ) -> GroupedStatistics:
    """``found`` with an empty cell (as :func:`cell_bins` of no values) for every
    (group, column) it lacks."""
    out: GroupedStatistics = {}
    for j, column in enumerate(spec.columns):
        empty = cell_bins(np.zeros(0), column)
        for g in range(groups):
            out[(g, j)] = found.get((g, j)) or empty
    return out


@dataclass(frozen=True)
class Mechanism:
    """A mechanism the statistics are drawn by: ``name`` (the guarantee check's product,
    :mod:`dprect.core.guarantee_check`), ``spec`` (a column's domain → what the engine
    counts for it) and the noises it can draw (``noises``; empty: a search only)."""

    name: str
    column_spec: Callable[[Domain], ColumnSpec]
    noises: tuple[str, ...] = ()

    def spec(self, domains: Sequence[Domain]) -> StatisticsSpec:
        """The engine's spec for a run over columns on ``domains``."""
        return StatisticsSpec(tuple(self.column_spec(d) for d in domains))


#: describe's: the centre, the two sides aimed at the query, the count and the clamped sum,
#: all from the rows per search bin and their exact sums (docs/privacy.md §11)
QUERY = Mechanism("describe", lambda _domain: ColumnSpec(SEARCH_GRID, True),
                  ("count", "sum"))
#: bounds': four exponential mechanisms per group over the column's histogram (§9)
COVERAGE = Mechanism("bounds", lambda domain: ColumnSpec(domain, False))


@dataclass(frozen=True)
class Statistic:
    """A statistic (module notes): released by ``mechanism`` from the noises ``draws``,
    into the record/table columns ``outputs``."""

    name: str
    mechanism: Mechanism
    draws: tuple[str, ...]
    outputs: tuple[str, ...]


COUNT = Statistic("count", QUERY, ("count",), ("count",))
SUM = Statistic("sum", QUERY, ("count", "sum"), ("sum",))
MEAN = Statistic("mean", QUERY, ("count", "sum"), ("mean",))
#: the bounds a query run always releases (its clamping bounds)
QUERY_BOUNDS = Statistic("bounds", QUERY, (), ("lower", "upper"))
COVERAGE_BOUNDS = Statistic("coverage", COVERAGE, (), ("lower", "upper"))

#: every statistic, by name, in the order of their output columns
STATISTICS: dict[str, Statistic] = {s.name: s for s in (QUERY_BOUNDS, COUNT, SUM, MEAN,
                                                        COVERAGE_BOUNDS)}


def outputs(mechanism: Mechanism) -> tuple[str, ...]:
    """The record/table columns of a (group, column) of ``mechanism``'s run, after the
    group and the column: every output of its statistics, in :data:`STATISTICS`' order
    (a statistic not asked for leaves its columns empty)."""
    return tuple(o for s in STATISTICS.values() if s.mechanism is mechanism
                 for o in s.outputs)


def noises_drawn(names: Sequence[str]) -> tuple[str, ...]:
    """The noises a run asking for the statistics ``names`` draws, in the mechanism's
    order: those one of them is released from (a noise no asked statistic reads is not
    drawn, and its share goes to the ones that are)."""
    asked = [STATISTICS[n] for n in names]
    read = {d for s in asked for d in s.draws}
    order = asked[0].mechanism.noises if asked else ()
    return tuple(n for n in order if n in read)


__all__ = ["COUNT", "COVERAGE", "COVERAGE_BOUNDS", "MEAN", "QUERY", "QUERY_BOUNDS",
           "SEARCH_GRID", "STATISTICS", "SUM", "CellBins", "ColumnSpec",
           "GroupedStatistics", "Mechanism", "Statistic", "StatisticsSpec", "cell_bins",
           "complete", "noises_drawn", "outputs"]
