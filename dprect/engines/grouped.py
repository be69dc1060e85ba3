"""The numpy engine's grouped-statistics primitive (issue #41) and the driver's draws from
merged statistics, shared by every engine.

:func:`grouped_statistics` is the numpy engine's one primitive: columns (float64, nulls as
NaN), each row's index in the PUBLIC group list and a
:class:`~dprect.core.statistic.StatisticsSpec` → every (group, column)'s
:class:`~dprect.core.statistic.CellBins` (:func:`~dprect.core.statistic.cell_bins`, the
core's reference reduction, of the cell's finite values; the rows sorted by group once,
so many groups cost one sort). The Spark engine's twin-free counterpart is
:func:`dprect.engines.spark.statistics.spark_statistics` (one ``mapInArrow`` pass, the
same cells). :class:`NumpyGroupedRoute` reads a table in memory for it
(:func:`read_grouped`: Parquet or CSV, schema checked).

The mechanisms then run on the driver from the merged cells — the same code whichever
engine counted them, so for a seed the result is the same on every engine:
:func:`draw_query` (describe's mechanism, in blocks of groups drawn by worker processes
on a large run: :mod:`dprect.engines.driver_pool`), :func:`draw_coverage` (bounds') and
:func:`draw_quantiles` (the quantiles'), registered here as the mechanisms' draws with
their planners
(:func:`~dprect.core.statistic.register_runs`), so a route is the mechanism's spec → the
engine's primitive → :meth:`Mechanism.draw <dprect.core.statistic.Mechanism.draw>`.

Row rules, every engine's: every row counts; a null, NaN or ±inf value is left out of its
column only; a row of no listed group is dropped and never reported; a listed group
without rows is released all the same. They are row-local, so neighbouring tables stay
neighbouring and they cost no privacy. Nothing here depends on the rows' values but the
statistics handed on.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dprect.core.aggregates import (
    DescribePlan,
    DescribeResult,
    describe_stream,
    group_blocks,
    plan_describe,
)
from dprect.core.bounds import BoundsPlan, BoundsResult, plan_bounds, run_bounds
from dprect.core.decimal_grid import DecimalGrid
from dprect.core.describe_stats import (
    bin_blocks,
    from_words,
    significands,
    square_words,
    sum_by_key,
)
from dprect.core.errors import ParameterError
from dprect.core.mixed import draw_mixed, repeated
from dprect.core.quantile_release import (
    QuantileFirst,
    QuantileResult,
    first_phase,
    joined_pools,
    plan_statistics,
    pooled_centres,
    quantile_head,
    second_phase,
)
from dprect.core.quantiles import QuantilePlan
from dprect.core.randomness import RandomSource
from dprect.core.request import Source
from dprect.core.statistic import (
    COVERAGE,
    QUANTILES,
    QUERY,
    CellBins,
    ColumnSpec,
    GroupedStatistics,
    Mechanism,
    StatisticsSpec,
    cell_bins,
    register_runs,
)
from dprect.engines import decimal_grid_jit
from dprect.engines.bounds_input import (
    add_key_counts,
    declared_integral,
    group_kind_of_arrow,
    integral_arrow,
    listed_keys,
    resolve_groups,
)
from dprect.engines.driver_pool import block_mapper
from dprect.engines.prepared import PreparedRun
from dprect.engines.progress import counted_cells, counting
from dprect.engines.row_kernels import group_index, single_type


def grouped_statistics(values: Sequence[np.ndarray], group: np.ndarray, groups: int,
                       spec: StatisticsSpec) -> GroupedStatistics:
    """Every (group index, column index)'s cell under ``spec`` (module notes):
    ``values[j]`` is column j as float64 (nulls as NaN), ``group[i]`` row i's index in the
    public list of ``groups`` groups (−1: no listed group, dropped). Every cell is
    present (an empty one: no rows), equal to :func:`~dprect.core.statistic.cell_bins` of
    its finite values.

    One reduction per column over every group at once (:func:`_column_cells`: the rows'
    bin keys made once, each row keyed by (group, bin) as one int64, one
    :func:`~dprect.core.describe_stats.sum_by_key` — the reference's own exact
    reduction — and the cells cut out of its sorted result), not one
    :func:`cell_bins` per cell: 10^5 groups cost a sort of the rows, not 10^5 Python
    calls per column (issue #42)."""
    if len(values) != len(spec.columns):
        raise ParameterError(f"{len(values)} column(s) for a spec of {len(spec.columns)}")
    group = np.asarray(group, dtype=np.int64)
    out: GroupedStatistics = {}
    with counting(groups * len(spec.columns), "", "cells") as tick:  # for the heartbeat
        for j, (column, column_spec) in enumerate(zip(values, spec.columns, strict=True)):
            x = np.asarray(column, dtype=np.float64)
            cells = _column_cells(x, group, groups, column_spec)
            if cells is None:  # a grid too wide to key (group, bin) in one int64
                cells = _column_cells_by_group(x, group, groups, column_spec)
            for g, cell in enumerate(cells):
                out[(g, j)] = cell
                tick()
    return out


def _column_cells_by_group(x: np.ndarray, group: np.ndarray, groups: int,
                           spec: ColumnSpec) -> list[CellBins]:
    """Every group's cell of one column by :func:`cell_bins`, one call per group (the
    reference: a grid whose (group, bin) keys do not fit an int64)."""
    order = np.argsort(group, kind="stable")
    cuts = np.searchsorted(group[order], np.arange(groups + 1))
    xs = x[order]
    out = []
    for g in range(groups):
        part = xs[cuts[g]:cuts[g + 1]]
        out.append(cell_bins(part[np.isfinite(part)], spec))
    return out


#: (group, bin) keys up to this: group·span + bin fits an int64 with room
_JOINT_LIMIT = 1 << 62


def _column_cells(x: np.ndarray, group: np.ndarray, groups: int, spec: ColumnSpec
                  ) -> list[CellBins] | None:
    """Every group's cell of one column (what :func:`cell_bins` gives for each group's
    finite values), from one reduction: each kept row keyed by group·span + (bin − least
    bin), reduced by :func:`sum_by_key` (sorted: by group, then by bin), and each group's
    run of that result its cell (views). None when the joint key would not fit."""
    keep = np.isfinite(x) & (group >= 0) & (group < groups)
    xs, gs = x[keep], group[keep]
    at_rows = None
    if spec.at_value:  # a decimal grid: its cells and the rows at their value in one loop
        assert isinstance(spec.grid, DecimalGrid)
        keys, at_rows = decimal_grid_jit.encode_at_value(spec.grid, xs)
    elif isinstance(spec.grid, DecimalGrid):
        keys = decimal_grid_jit.encode(spec.grid, xs)
    else:
        keys = spec.grid.encode(np.ascontiguousarray(xs)).astype(np.int64)
    least = int(keys.min()) if len(keys) else 0
    span = (int(keys.max()) - least + 1) if len(keys) else 1
    if span * max(groups, 1) >= _JOINT_LIMIT:
        return None
    joint = gs * span + (keys - least)
    squares = None
    if at_rows is not None:
        k, n, at = sum_by_key(joint, at_rows)
        sums, extra = None, at.astype(np.int64)
    elif spec.sums:
        m = significands(xs.view(np.int64))
        k, n, sums = sum_by_key(joint, m)
        extra = None
        if spec.squares:
            hi, lo = square_words(m)
            squares = from_words(sum_by_key(joint, hi)[2], sum_by_key(joint, lo)[2])
    else:
        k, n = np.unique(joint, return_counts=True)
        n = n.astype(np.int64)
        sums = extra = None
    owner = k // span
    bins = k - owner * span + least
    cuts = np.searchsorted(owner, np.arange(groups + 1)).tolist()
    empty = cell_bins(np.zeros(0), spec)
    out = []
    for a, b in itertools.pairwise(cuts):
        if a == b:
            out.append(empty)
            continue
        out.append(CellBins(bins[a:b], n[a:b], None if sums is None else sums[a:b],
                            None if extra is None else extra[a:b],
                            None if squares is None else squares[a:b]))
    return out


def read_grouped(source: Source, groups: list[str] | None, progress: Callable[[str], None]
                 ) -> tuple[list[np.ndarray], np.ndarray, int, list[bool]]:
    """A grouped table read in memory with :mod:`dprect.engines.arrow_input` (Parquet or
    CSV), its schema checked (every column numeric, the group column able to hold the
    listed values): each column as float64 (nulls as NaN), each row's index in the public
    group list (−1: a row of no listed group), the number of groups and each column's
    declared integrality (:func:`~dprect.engines.bounds_input.declared_integral`);
    nothing depends on the rows' values."""
    values, column, kind, integral = read_group_column(source, progress)
    if column is None:
        return (values, np.zeros(len(values[0]) if values else 0, dtype=np.int32), 1,
                integral)
    assert groups is not None
    resolved = resolve_groups(groups, kind, str(source.group_by),  # schema + list only
                              integral=integral_arrow(column.type),
                              single=single_type(column.type))
    return values, group_index(column, kind, resolved), len(groups), integral


def read_group_column(source: Source, progress: Callable[[str], None]
                      ) -> tuple[list[np.ndarray], Any, str, list[bool]]:
    """The table of :func:`read_grouped` before any group list: the columns as float64,
    the group column (None without one), its kind from its type and each column's
    declared integrality (its schema and the input's format only)."""
    from dprect.engines.arrow_input import (
        DELTA_NEEDS_SPARK,
        detect_format,
        numeric_column,
        read_table,
    )

    if source.format == "delta":
        raise ParameterError(DELTA_NEEDS_SPARK)
    if (source.where, source.version, source.timestamp) != (None, None, None):
        raise ParameterError("a row filter or a Delta snapshot needs the Spark engine "
                             "(--engine spark)")
    progress(f"reading {source.path}")
    table = read_table(source.path, source.read_columns(), source.format)
    values = [numeric_column(table, c, nulls_as_nan=True) for c in source.columns]
    integral = declared_integral(source.format or detect_format(source.path),
                                 [integral_arrow(table.schema.field(c).type)
                                  for c in source.columns])
    if source.group_by is None:
        return values, None, "", integral
    kind = group_kind_of_arrow(table.schema.field(source.group_by).type, source.group_by)
    return values, table.column(source.group_by), kind, integral


def key_counts(column: Any, kind: str) -> dict[str, int]:
    """The rows of each key of an Arrow group ``column`` of ``kind`` (one
    ``value_counts``; numbers counted as they are compared — a column of an integer type
    as its exact integers, another as float64 (a float32 widened exactly) —, nulls and
    non-finite numbers left out: :func:`~dprect.engines.bounds_input.key_text`; text whose
    bytes are not UTF-8 read as Spark reads it:
    :func:`~dprect.engines.arrow_input.python_values`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from dprect.engines.arrow_input import python_values

    if kind == "null" or len(column) == 0:
        return {}
    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(col.type):
        col = pc.cast(col, col.type.value_type)
    if kind == "numeric" and not integral_arrow(col.type):
        col = pc.cast(col, pa.float64(), safe=False)
    elif kind not in ("boolean", "numeric"):
        col = pc.cast(col, pa.string())
    counted = pc.value_counts(col)
    return add_key_counts({}, python_values(counted.field("values")),
                          counted.field("counts").to_pylist(), kind)


class NumpyGroupedPrepared(PreparedRun):
    """The columns in memory (float64, nulls as NaN) and each row's group index; for
    groups found privately the group column and its kind, indexed once the keys are
    drawn (:meth:`statistics` with ``groups``)."""

    def __init__(self, values: list[np.ndarray], group: np.ndarray, groups: int,
                 spec: StatisticsSpec, column: Any = None, kind: str = "",
                 integral: Sequence[bool] = ()) -> None:
        super().__init__()
        self.values = values
        self.integral = list(integral) or [False] * len(values)
        self.group = group
        self.groups = groups
        self.spec = spec
        self.column = column
        self.kind = kind

    def key_counts(self) -> dict[str, int]:
        if self.column is None:
            raise ParameterError("a group selection needs a group column")
        return key_counts(self.column, self.kind)

    def listed_keys(self, groups: list[str]) -> set[str]:
        """The key texts of a public list given with a private selection
        (:func:`~dprect.engines.bounds_input.listed_keys`; schema and list only)."""
        integral = self.column is not None and integral_arrow(self.column.type)
        single = self.column is not None and single_type(self.column.type)
        return listed_keys(groups, self.kind, "group", integral=integral, single=single)

    def integral_columns(self) -> list[bool]:
        """Per column read, whether its declared type is integral (never for CSV:
        :func:`~dprect.engines.bounds_input.declared_integral`)."""
        return list(self.integral)

    def statistics(self, groups: list[str] | None = None) -> GroupedStatistics:
        group, count = self.group, self.groups
        if groups is not None:  # the keys a private selection kept (their own texts)
            if self.column is None:
                raise ParameterError("a group selection needs a group column")
            resolved = resolve_groups(groups, self.kind, "group",
                                      integral=integral_arrow(self.column.type),
                                      single=single_type(self.column.type))
            group, count = group_index(self.column, self.kind, resolved), len(groups)
        return grouped_statistics(repeated(self.values, self.spec), group, count, self.spec)

    def draw(self, mechanisms: Sequence[Mechanism], plan: Any, group_names: Sequence[Any],
             columns: Sequence[str], rng: RandomSource, groups: list[str] | None = None,
             drawing: Callable[[], None] = lambda: None,
             each_block: Callable[[Any], None] | None = None,
             pack: Callable[[Any], bytes] | None = None) -> Any:
        """The run's release: :func:`draw_statistics` of :meth:`statistics` (for
        ``groups``, the keys a private selection kept; ``drawing`` called between), streamed
        to ``each_block`` where :func:`draw_statistics` can (each block's result: the
        blocks are drawn in this process's pool, ``pack`` is not used)."""
        cells = self.statistics(groups)
        drawing()
        return draw_statistics(mechanisms, plan, cells, group_names, columns, rng, each_block)


class NumpyGroupedRoute:
    """Read the table in memory (:func:`read_grouped`) and check its schema; nothing
    drawn, spent or written, no refusal that depends on a value. Without a group list on
    a grouped table the groups are found privately: the group column is kept for
    :meth:`NumpyGroupedPrepared.key_counts`."""

    def open(self, source: Source, groups: list[str] | None, spec: StatisticsSpec,
             progress: Callable[[str], None]) -> NumpyGroupedPrepared:
        if source.group_by is not None and groups is None:
            values, column, kind, integral = read_group_column(source, progress)
            n = len(values[0]) if values else 0
            return NumpyGroupedPrepared(values, np.full(n, -1, dtype=np.int32), 0, spec,
                                        column, kind, integral)
        values, group, count, integral = read_grouped(source, groups, progress)
        return NumpyGroupedPrepared(values, group, count, spec, integral=integral)


def _fits(cells: Mapping[tuple[int, int], Any], group_names: Sequence[Any],
          columns: Sequence[str]) -> None:
    """Refuse cells of more groups or columns than named (parameters only)."""
    groups = 1 + max((g for g, _ in cells), default=-1)
    width = 1 + max((j for _, j in cells), default=-1)
    if groups > len(group_names) or width > len(columns):
        raise ParameterError(f"{len(group_names)} group name(s) and {len(columns)} column "
                             f"name(s) for cells of {groups} group(s) and {width} "
                             f"column(s)")


def draw_query(plan: DescribePlan, cells: Mapping[tuple[int, int], Any],
               group_names: Sequence[Any], columns: Sequence[str], rng: RandomSource
               ) -> DescribeResult:
    """Describe's mechanism on merged cells (group index, column index → a
    :class:`~dprect.core.statistic.CellBins` with sums; missing: no rows), the groups cut
    into blocks drawn through worker processes on a large run (the same result for a
    seed whatever the blocks: :func:`~dprect.core.aggregates.describe_stream`): the
    blocks of :func:`stream_query`, gathered."""
    drawn: list[list[Any]] = []
    head = stream_query(plan, cells, group_names, columns, rng,
                        lambda block: drawn.extend(block.cells))
    return replace(head, cells=drawn)


def stream_query(plan: DescribePlan, cells: Mapping[tuple[int, int], Any],
                 group_names: Sequence[Any], columns: Sequence[str], rng: RandomSource,
                 each_block: Callable[[DescribeResult], None]) -> DescribeResult:
    """:func:`draw_query`, each block of groups handed to ``each_block`` (a result of the
    block's groups and cells) in group order as it is drawn — the pool's answers read as
    they come (:mod:`dprect.engines.driver_pool`), so a streamed run's sinks get the
    first block before the last is drawn and the driver never holds every released cell
    (issue #42); returns the run's result without cells (its groups, guarantee, plan).
    Cells that do not fit the names (a group or column index beyond them) are refused."""
    _fits(cells, group_names, columns)
    if plan.squares_scale is not None and any(
            cell.squares is None for cell in cells.values()):  # before any draw
        raise ParameterError("a variance or std needs statistics counted with squares "
                             "(the mechanism's spec for the statistics asked)")
    bins = {key: cell.bin_statistics() for key, cell in cells.items() if len(cell.keys)}
    with block_mapper(len(group_names), len(columns)) as (mapper, parts):
        blocks = bin_blocks(bins, len(columns), group_blocks(len(group_names), parts))
        del bins
        group_list, cols, done = describe_stream(plan, blocks, list(group_names),
                                                 list(columns), rng, mapper)
        start = 0
        for rows in done:
            each_block(DescribeResult(cols, group_list[start:start + len(rows)], rows,
                                      plan.guarantee, plan, rng.seeded))
            start += len(rows)
    return DescribeResult(cols, group_list, [], plan.guarantee, plan, rng.seeded)


def draw_quantiles(plan: QuantilePlan, cells: Mapping[tuple[int, int], Any],
                   group_names: Sequence[Any], columns: Sequence[str], rng: RandomSource
                   ) -> QuantileResult:
    """The quantiles' mechanism on merged cells (counted with the rows at each cell's
    value: :data:`~dprect.core.statistic.QUANTILES`' spec): the blocks of
    :func:`stream_quantiles`, gathered."""
    drawn: list[list[Any]] = []
    head = stream_quantiles(plan, cells, group_names, columns, rng,
                            lambda block: drawn.extend(block.cells))
    return replace(head, cells=drawn)


#: a streamed quantiles run draws this many (group, column) cells per block, at least
#: one group (a public function of the numbers of groups and columns)
QUANTILE_BLOCK_CELLS = 4096


def stream_quantiles(plan: QuantilePlan, cells: Mapping[tuple[int, int], Any],
                     group_names: Sequence[Any], columns: Sequence[str], rng: RandomSource,
                     each_block: Callable[[QuantileResult], None]) -> QuantileResult:
    """The quantiles' mechanism, each block of groups (:data:`QUANTILE_BLOCK_CELLS` cells)
    handed to ``each_block`` in group order as it is drawn (issue #42): every group from
    its own stream, its seed from ``rng`` in group order
    (:func:`~dprect.core.quantile_release.release_groups`, as the executors draw blocks),
    so the cells are :func:`~dprect.core.quantile_release.release_grouped`'s for a seed;
    each cell counted for the heartbeat as it is reached. Returns the run's result
    without cells."""
    _fits(cells, group_names, columns)
    head = quantile_head(plan, group_names, columns, rng.seeded)  # parameters checked
    groups, width = len(group_names), len(columns)
    seeds = rng.stream_seeds(groups)
    step = max(1, QUANTILE_BLOCK_CELLS // max(width, 1))
    def block_stats(start: int, stop: int, source: Mapping[tuple[int, int], Any]
                    ) -> dict[tuple[int, int], Any]:
        return {(g - start, j): cell.quantile_statistics()
                for g in range(start, stop) for j in range(width)
                if (cell := source.get((g, j))) is not None}

    firsts: list[QuantileFirst | None] = []
    with counted_cells(cells, groups * width) as counted:  # heartbeat
        for start in range(0, groups, step):  # phase 1: counts, own centres, pools
            stop = min(start + step, groups)
            firsts.append(first_phase(plan, block_stats(start, stop, counted),
                                      seeds[start:stop], width))
    # the pooled centres from the run's source, after the seeds, or anchored (as the
    # executors: quantile_release.pooled_centres)
    centres = pooled_centres(plan, joined_pools([f.pools for f in firsts if f]), rng)
    for k, start in enumerate(range(0, groups, step)):  # phase 2: the pooled cells
        stop = min(start + step, groups)
        first, firsts[k] = firsts[k], None  # phase 1 of the block let go once drawn
        assert first is not None
        stats = block_stats(start, stop, cells) if first.pooled else {}
        each_block(replace(head, groups=list(group_names[start:stop]),
                           cells=second_phase(plan, stats, first, centres, width)))
    return head


def draw_coverage(plan: BoundsPlan, cells: Mapping[tuple[int, int], Any],
                  group_names: Sequence[Any], columns: Sequence[str], rng: RandomSource
                  ) -> BoundsResult:
    """Bounds' mechanism on merged cells (every (group index, column index) present),
    each cell counted for the heartbeat as the mechanism reaches it."""
    _fits(cells, group_names, columns)
    by_name = {(group_names[g], j): cell.histogram() for (g, j), cell in cells.items()}
    with counted_cells(by_name, len(group_names) * len(columns)) as counted:  # heartbeat
        return run_bounds(plan, counted, list(group_names), rng, list(columns))


def draw_statistics(mechanisms: Sequence[Mechanism], plan: Any,
                    cells: GroupedStatistics, group_names: Sequence[Any],
                    columns: Sequence[str], rng: RandomSource,
                    each_block: Callable[[Any], None] | None = None) -> Any:
    """A run's release from the engine's merged ``cells`` on the driver: one mechanism's
    result (:meth:`Mechanism.draw <dprect.core.statistic.Mechanism.draw>`), or several's
    (:func:`~dprect.core.mixed.draw_mixed`, each from its slice and its own stream) — the
    prepared runs' :meth:`draw` of the numpy engine, and of Spark's when the draws do not
    run in the executors (:mod:`dprect.engines.spark.executor_draws`). With
    ``each_block``, a run of describe's mechanism or the quantiles' alone is streamed
    (:func:`stream_query`, :func:`stream_quantiles`: each block's result handed on in
    group order, the result returned without cells); other runs are drawn whole
    (``each_block`` not called)."""
    if len(mechanisms) > 1:
        return draw_mixed(plan, mechanisms, cells, group_names, columns, rng)
    if each_block is not None and mechanisms[0].name == QUERY.name:
        return stream_query(plan, cells, group_names, columns, rng, each_block)
    if each_block is not None and mechanisms[0].name == QUANTILES.name:
        return stream_quantiles(plan, cells, group_names, columns, rng, each_block)
    return mechanisms[0].draw(plan, cells, group_names, columns, rng)


#: the mechanisms' plans and draws (:meth:`~dprect.core.statistic.Mechanism.plan`,
#: :meth:`~dprect.core.statistic.Mechanism.draw`): the core's planners, the draws above
register_runs(QUERY, plan_describe, draw_query)
register_runs(COVERAGE, plan_bounds, draw_coverage)
register_runs(QUANTILES, plan_statistics, draw_quantiles)


__all__ = ["QUANTILE_BLOCK_CELLS", "NumpyGroupedPrepared", "NumpyGroupedRoute",
           "draw_coverage", "draw_quantiles", "draw_query", "draw_statistics",
           "grouped_statistics", "key_counts", "read_group_column", "read_grouped",
           "stream_quantiles", "stream_query"]
