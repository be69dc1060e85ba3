"""The seam of the grouped aggregates (issue #41): what a statistic declares, and the one
shape of the sufficient statistics every engine hands the core.

**Sufficient statistics.** An engine never hands a mechanism rows: for every (public
group g, column j) it hands the column's rows counted per bin of a PUBLIC grid — sorted
unique bin keys, the rows per bin and, where asked, the exact sum per bin of the rows'
truncated significands (:func:`dprect.core.describe_stats.significands`; exact integers
at any row count) — a :class:`CellBins`. What is counted is a :class:`StatisticsSpec`:
per column its grid, whether sums are kept and whether sums of squared significands are
(:class:`ColumnSpec`; the variance's: :mod:`dprect.core.variance`). One engine primitive
computes it for any spec: numpy's
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
    plan (the budget split: :meth:`Mechanism.plan`), the draws (:meth:`Mechanism.draw`:
    each group from its own stream of the run's
    :class:`~dprect.core.randomness.RandomSource`) and the guarantee-check entry
    (:mod:`dprect.core.guarantee_check`);
  * ``draws`` — the noisy values it is released from (its budget weight: a noise drawn
    only when a statistic asked for reads it, e.g. the sum noise only for a sum or a
    mean, so a count-only run spends its query budget on the count);
  * ``outputs`` — the record/table columns it fills (the plot reads these): a
    mechanism's columns are :func:`outputs` — describe's record rows
    (:func:`dprect.release.aggregate_record.describe_rows`) and every mechanism's table
    (:func:`dprect.release.aggregate_table.layout`) are generated from it, and
    ``dprect aggregate --statistics`` takes any name of :data:`STATISTICS`. A released
    count, sum, mean, variance or std is followed by its noise interval, ``<name>_low`` and
    ``<name>_high`` (:func:`with_interval`), a coverage bound pair by ``rank_error``, a
    quantile by ``<name>_rank_error`` (:func:`with_rank_error`)
    (:mod:`dprect.core.intervals`: post-processing at the plan's ``interval_level``).

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

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from dprect.core.bounds import Histogram
from dprect.core.decimal_grid import DecimalGrid
from dprect.core.describe_stats import BinStatistics, bin_squares, significands, sum_by_key
from dprect.core.domains import Domain, FloatBins
from dprect.core.errors import ParameterError
from dprect.core.quantiles import (
    QUANTILE_DIGITS,
    QuantileStatistics,
    as_quantile,
    at_value_counts,
)
from dprect.core.records import quick_init
from dprect.core.tail_bounds import SEARCH_BITS

#: the grid of the query mechanism: every candidate bound is one of its bin edges
SEARCH_GRID = FloatBins(SEARCH_BITS)


@dataclass(frozen=True)
class ColumnSpec:
    """What an engine counts for one column: its rows per bin of ``grid`` (the grid's own
    :meth:`~dprect.core.domains.Domain.encode`) and, with ``sums``, the exact sum of their
    truncated significands per bin; with ``at_value`` (a :class:`DecimalGrid`), the rows
    per bin equal to the bin's value (:meth:`DecimalGrid.values`: what the quantiles
    release; docs/privacy.md §11a) — both a sum per bin of a row's own integer."""

    grid: Domain | DecimalGrid
    sums: bool
    at_value: bool = False
    #: also the exact sum of the squared truncated significands per bin (M² < 2^60, kept
    #: as two summable words of 30 bits: :func:`dprect.core.describe_stats.square_words`)
    squares: bool = False

    def __post_init__(self) -> None:
        if self.at_value and (self.sums or not isinstance(self.grid, DecimalGrid)):
            raise ParameterError("rows at a bin's value are counted on a decimal grid, "
                                 "without sums")


@dataclass(frozen=True)
class StatisticsSpec:
    """What the engine primitive computes: one :class:`ColumnSpec` per column, in the
    columns' order."""

    columns: tuple[ColumnSpec, ...]

    def __post_init__(self) -> None:
        if not self.columns:
            raise ParameterError("a statistics spec needs at least one column")


@quick_init
@dataclass(frozen=True)
class CellBins:
    """One (group, column)'s merged sufficient statistics: sorted unique int64 bin
    ``keys`` of the column's grid, the int64 rows per bin (each ≥ 1) and, when the spec
    keeps them, the exact sums per bin (int64, or Python integers past int64) and the
    exact sums of squared significands per bin (``squares``: Python integers, an object
    array; :func:`dprect.core.describe_stats.bin_squares`)."""

    keys: np.ndarray
    counts: np.ndarray
    sums: np.ndarray | None = None
    #: with the spec's ``at_value``: the int64 rows per bin equal to the bin's value
    at_value: np.ndarray | None = None
    squares: np.ndarray | None = None

    def histogram(self) -> Histogram:
        """The counts, as the coverage mechanism reads them."""
        return Histogram(self.keys, self.counts)

    def bin_statistics(self) -> BinStatistics:
        """The counts and sums, as the query mechanism reads them."""
        if self.sums is None:
            raise ParameterError("these statistics were counted without sums")
        return BinStatistics(self.keys, self.counts, self.sums, self.squares)

    def quantile_statistics(self) -> QuantileStatistics:
        """The counts and the rows at each bin's value, as the quantiles read them."""
        if self.at_value is None:
            raise ParameterError("these statistics were counted without the rows at each "
                                 "bin's value")
        return QuantileStatistics(self.keys, self.counts, self.at_value)


#: a run's statistics: (group index, column index) → its cell; a cell missing has no rows
GroupedStatistics = dict[tuple[int, int], CellBins]


def cell_bins(values: np.ndarray, spec: ColumnSpec) -> CellBins:
    """The reference reduction of one cell's finite ``values`` (float64) under ``spec``:
    what every engine primitive must hand the core for the cell."""
    x = np.ascontiguousarray(values, dtype=np.float64)
    keys = spec.grid.encode(x).astype(np.int64)
    if spec.at_value:
        assert isinstance(spec.grid, DecimalGrid)
        k, n, at = sum_by_key(keys, at_value_counts(spec.grid, x, keys))
        return CellBins(k, n, None, at.astype(np.int64))
    if spec.sums:
        m = significands(x.view(np.int64))
        k, n, s = sum_by_key(keys, m)
        return CellBins(k, n, s, squares=bin_squares(keys, m) if spec.squares else None)
    k, n = np.unique(keys, return_counts=True)
    return CellBins(k, n.astype(np.int64))


def complete(found: Mapping[tuple[int, int], CellBins], spec: StatisticsSpec, groups: int
             ) -> GroupedStatistics:
    """``found`` with an empty cell (as :func:`cell_bins` of no values) for every
    (group, column) it lacks — made once per distinct column spec (equal specs give equal
    empty cells; a block of 64 equal columns read in the executors made 64)."""
    out: GroupedStatistics = {}
    empties: dict[Any, CellBins] = {}
    for j, column in enumerate(spec.columns):
        try:
            empty = empties[column]
        except KeyError:
            empty = empties[column] = cell_bins(np.zeros(0), column)
        except TypeError:  # an unhashable grid: made for this column alone
            empty = cell_bins(np.zeros(0), column)
        for g in range(groups):
            out[(g, j)] = found.get((g, j)) or empty
    return out


@dataclass(frozen=True)
class Mechanism:
    """A mechanism the statistics are drawn by: ``name`` (the guarantee check's product,
    :mod:`dprect.core.guarantee_check`), ``spec`` (a column's domain → what the engine
    counts for it), the noises it can draw (``noises``; empty: a search only) and its
    public ``weight``: in a run of several mechanisms it gets ε·weight/Σweights of the
    run's ε (:func:`dprect.core.mixed.shares`; docs/privacy.md §11b)."""

    name: str
    column_spec: Callable[[Domain], ColumnSpec]
    noises: tuple[str, ...] = ()
    weight: int = 1

    def spec(self, domains: Sequence[Domain], statistics: Sequence[str] = ()
             ) -> StatisticsSpec:
        """The engine's spec for a run over columns on ``domains`` asking for
        ``statistics``: the sums of squares are counted only when a statistic asked
        reads the ``sumsq`` noise (a variance or a standard deviation)."""
        squares = "sumsq" in noises_drawn([s for s in statistics if s in STATISTICS])
        return StatisticsSpec(tuple(dataclasses.replace(self.column_spec(d),
                                                        squares=squares)
                                    if squares else self.column_spec(d)
                                    for d in domains))

    def plan(self, *args: Any, **kwargs: Any) -> Any:
        """The mechanism's plan, from public inputs only (its planner's arguments:
        :func:`~dprect.core.aggregates.plan_describe`'s for :data:`QUERY`,
        :func:`~dprect.core.bounds.plan_bounds`' for :data:`COVERAGE`)."""
        return self._runs().plan(*args, **kwargs)

    def draw(self, plan: Any, cells: GroupedStatistics, group_names: Sequence[Any],
             columns: Sequence[str], rng: Any) -> Any:
        """The mechanism's release of every (group, column) from the engine's merged
        ``cells`` under its :meth:`spec`, drawn on the driver from ``rng``: a route is
        spec → the engine's primitive → this."""
        return self._runs().draw(plan, cells, group_names, columns, rng)

    def _runs(self) -> MechanismRuns:
        runs = RUNS.get(self.name)
        if runs is None:
            raise ParameterError(f"the {self.name!r} mechanism has no plan and draw "
                                 "registered (register_runs)")
        return runs


class MechanismRuns(NamedTuple):
    """How a mechanism plans and draws (:meth:`Mechanism.plan`, :meth:`Mechanism.draw`)."""

    plan: Callable[..., Any]
    draw: Callable[..., Any]


#: each mechanism's plan and draw, by its name: registered by the module that draws it
#: from merged cells on the driver for every engine (:mod:`dprect.engines.grouped`; the
#: draws need the driver's worker pool, so they cannot live in the core)
RUNS: dict[str, MechanismRuns] = {}


def register_runs(mechanism: Mechanism, plan: Callable[..., Any], draw: Callable[..., Any]
                  ) -> None:
    """Make ``plan`` and ``draw`` ``mechanism``'s (:meth:`Mechanism.plan`,
    :meth:`Mechanism.draw`)."""
    RUNS[mechanism.name] = MechanismRuns(plan, draw)


#: describe's: the centre, the two sides aimed at the query, the count and the clamped sum,
#: all from the rows per search bin and their exact sums (docs/privacy.md §11)
QUERY = Mechanism("describe", lambda _domain: ColumnSpec(SEARCH_GRID, True),
                  ("count", "sum", "sumsq"))
#: bounds': four exponential mechanisms per group over the column's histogram (§9)
COVERAGE = Mechanism("bounds", lambda domain: ColumnSpec(domain, False))
#: the quantiles': exponential mechanisms over the decimal grid's cells, from the rows per
#: cell and the rows at each cell's value (docs/privacy.md §11a; :mod:`dprect.core.quantiles`)
QUANTILES = Mechanism("quantiles", lambda _domain: ColumnSpec(
    DecimalGrid(QUANTILE_DIGITS), False, True))


@dataclass(frozen=True)
class Statistic:
    """A statistic (module notes): released by ``mechanism`` from the noises ``draws``,
    into the record/table columns ``outputs``."""

    name: str
    mechanism: Mechanism
    draws: tuple[str, ...]
    outputs: tuple[str, ...]
    #: a quantile statistic's q (an exact rational in (0, 1)); None for the others
    quantile: Fraction | None = None
    #: its columns are in a run's record and table only when it is asked for (a
    #: statistic added later, so the outputs of the runs that do not ask for it stay
    #: as they were); False: always there, empty when not asked
    on_ask: bool = False


def _quantile(name: str, q: str) -> Statistic:
    """The quantile statistic ``name`` at q: its value, then its rank interval's half
    width ``<name>_rank_error`` (:func:`with_rank_error`)."""
    return Statistic(name, QUANTILES, (), with_rank_error(name), as_quantile(q))


def with_rank_error(name: str) -> tuple[str, str]:
    """A quantile's outputs: the value, then ``<name>_rank_error`` — T_λ in rows: with
    probability ≥ the plan's ``interval_level`` the value's ranks lie within OPT + T_λ of
    q·n for every quantile of the cell together; empty for a small group's centred draws
    (:attr:`dprect.core.quantiles.QuantilePlan.interval_rank_error`, docs/privacy.md §15)."""
    return name, f"{name}_rank_error"


def with_interval(name: str) -> tuple[str, str, str]:
    """A statistic's outputs with its noise interval: the value, then ``<name>_low`` and
    ``<name>_high`` (:mod:`dprect.core.intervals`, at the plan's ``interval_level``)."""
    return name, f"{name}_low", f"{name}_high"


COUNT = Statistic("count", QUERY, ("count",), with_interval("count"))
SUM = Statistic("sum", QUERY, ("count", "sum"), with_interval("sum"))
MEAN = Statistic("mean", QUERY, ("count", "sum"), with_interval("mean"))
#: the bounds a query run always releases (its clamping bounds)
QUERY_BOUNDS = Statistic("bounds", QUERY, (), ("lower", "upper"))
#: the coverage bounds, with ``rank_error``: the rows each side may clip beyond (or fall
#: short of) its target at the plan's ``interval_level`` (:func:`dprect.core.intervals.rank_error`)
COVERAGE_BOUNDS = Statistic("coverage", COVERAGE, (), ("lower", "upper", "rank_error"))
#: the variance and the standard deviation of the clamped values: post-processing of the
#: noisy count, clamped sum and clamped sum of squares about the bounds' midpoint
#: (:mod:`dprect.core.variance`, docs/privacy.md §17), each with its noise interval
VARIANCE = Statistic("variance", QUERY, ("count", "sum", "sumsq"), with_interval("variance"),
                     on_ask=True)
STD = Statistic("std", QUERY, ("count", "sum", "sumsq"), with_interval("std"), on_ask=True)
#: the quantiles (any of them in one charge per column: docs/privacy.md §11a)
QUANTILE_STATISTICS = tuple(_quantile(n, q) for n, q in (
    ("p1", "1/100"), ("p5", "1/20"), ("p10", "1/10"), ("p25", "1/4"), ("median", "1/2"),
    ("p75", "3/4"), ("p90", "9/10"), ("p95", "19/20"), ("p99", "99/100")))

#: every statistic, by name, in the order of their output columns
STATISTICS: dict[str, Statistic] = {s.name: s for s in (QUERY_BOUNDS, COUNT, SUM, MEAN,
                                                        VARIANCE, STD, COVERAGE_BOUNDS,
                                                        *QUANTILE_STATISTICS)}


def outputs(mechanism: Mechanism, asked: Sequence[str] = ()) -> tuple[str, ...]:
    """The record/table columns of a (group, column) of ``mechanism``'s run asking for
    the statistics ``asked``, after the group and the column: every output of its
    statistics, in :data:`STATISTICS`' order (a statistic not asked for leaves its
    columns empty; an ``on_ask`` one has them only when asked)."""
    return tuple(o for s in STATISTICS.values() if s.mechanism is mechanism
                 and (not s.on_ask or s.name in asked) for o in s.outputs)


def noises_drawn(names: Sequence[str]) -> tuple[str, ...]:
    """The noises a run asking for the statistics ``names`` draws, in the mechanism's
    order: those one of them is released from (a noise no asked statistic reads is not
    drawn, and its share goes to the ones that are)."""
    asked = [STATISTICS[n] for n in names]
    read = {d for s in asked for d in s.draws}
    order = asked[0].mechanism.noises if asked else ()
    return tuple(n for n in order if n in read)


__all__ = ["COUNT", "COVERAGE", "COVERAGE_BOUNDS", "MEAN", "QUANTILES",
           "QUANTILE_STATISTICS", "QUERY", "QUERY_BOUNDS", "RUNS", "SEARCH_GRID",
           "STATISTICS", "STD", "SUM", "VARIANCE", "CellBins", "ColumnSpec",
           "GroupedStatistics", "Mechanism", "MechanismRuns", "Statistic", "StatisticsSpec",
           "cell_bins", "complete", "noises_drawn", "outputs", "register_runs",
           "with_interval", "with_rank_error"]
