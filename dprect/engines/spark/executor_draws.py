"""The grouped aggregates' draws in the executors (issue #42): on a run of many public
groups the mechanisms run where the groups' statistics are, and only released cells reach
the driver.

**The route.** The pass (:func:`~dprect.engines.spark.statistics.counting_pass`) counts the
rows as on the driver route, but its key ranges are BLOCKS of consecutive public groups
(:func:`~dprect.core.aggregates.group_blocks`; every column's cells of a block in one
range: :func:`~dprect.engines.spark.statistics.block_limits`), so the merge task of a
range holds every cell of its block; the merge's exchange puts the blocks in partitions by
block range (:mod:`~dprect.engines.spark.block_ranges`: runs of consecutive blocks, never
across a wave), the merged blocks are kept (persisted) and each block is drawn by one
task (``mapInArrow``) with the core's own functions — nothing of the mechanisms is
written twice:

* describe's (:data:`~dprect.core.statistic.QUERY`) in two phases, as
  :func:`~dprect.core.aggregates.describe_blocks` runs them: phase 1, each block's
  :func:`~dprect.core.aggregates.describe_block` (the counts, the centres, the cells of the
  plan's own split) and its small pools (:func:`~dprect.core.aggregates.small_pools`: the
  anchor pools and, per column, the summed centre-grid histogram of its anchored cells);
  the driver joins the pools in block order (the histograms summed across blocks,
  :meth:`~dprect.core.aggregates.SmallPools.joined`) — the one thing that grows with the
  groups on the driver: 8 bytes per released own centre and mean, per cell, and one
  histogram per column — and takes each column's anchor, or, in a column without one,
  draws its pooled centre from the run's source as the driver route does
  (:func:`~dprect.core.aggregates.column_centres`); phase 2, each block's
  :func:`~dprect.core.aggregates.finish_small` (the small groups' cells around those);
* the quantiles' (:data:`~dprect.core.statistic.QUANTILES`: each group from its own
  stream) in two phases the same way: phase 1, each block's
  :func:`~dprect.core.quantile_release.first_phase` (every cell, and its
  :class:`~dprect.core.quantile_release.QuantilePools`: per column the summed histogram
  and released rows of its cells whose noisy count is below the plan's ``pool_rows``,
  and the anchor's histogram of the other cells' middle bins); the driver joins the
  pools and makes each such column's ONE centre — drawn from the run's source, or, for a
  column whose pooled released rows fall short of ``pool_rows``, its anchor with no draw
  (:func:`~dprect.core.quantile_release.pooled_centres`); phase 2, each block's
  :func:`~dprect.core.quantile_release.second_phase` (the pooled cells near it;
  docs/privacy.md §11a, Lemmas Q5 and Q6);
* the coverage bounds' (:data:`~dprect.core.statistic.COVERAGE`) in one phase
  (:func:`~dprect.core.bounds.draw_groups`) on an UNSEEDED run only: their draws read one
  stream for every group in turn (a draw's rejection sampling reads a data-dependent
  number of bits), so a seeded run's groups depend on the groups before them and are
  drawn on the driver, as before; from OS entropy every group's draws are independent
  of the others' wherever they run, so the law is the same.

Seeds: a seeded run's per-group stream seeds are drawn on the driver in the public order
(:meth:`~dprect.core.randomness.RandomSource.stream_seeds`, as the driver route draws
them), packed 16 bytes a group, and reach their block (:func:`listed_blocks`): on a
streamed run of one mechanism (the product's) in the merge's own exchange — one row a
block, unioned with the pass's rows and merged into its block's row, so every block has a
row and phase 1 reads the kept merged blocks as they are, with no join (they are drawn
then before the pass, the run's first draws either way) — else joined to the kept merged
blocks; an unseeded run ships none (each group reads the OS). So for a seed every
released cell equals the driver route's, bit for bit (tests/spark/test_executor_draws.py,
tests/spark/test_streamed_sinks.py). A run of several mechanisms draws each part from its
own stream (:func:`~dprect.core.mixed.draw_parts`) from the same kept blocks.

**What reaches the driver**: the per-column small pools (describe's, the quantiles'
pooled histograms), then each
block's released cells (pickled, in block order; describe's all-pooled blocks as column
arrays, :class:`~dprect.core.column_release.ReleasedColumns`, whose cells the driver
makes) — or, given the product's ``pack``, each block's result packed in its task
(:class:`Packing`: the record text and table rows the sinks read, so the driver makes
nothing a cell; the block's group names travel with its row, :data:`NAMES`). A run of one
mechanism of
:data:`STREAMED` given ``each_block`` (the product's runs: issue #42) draws its last phase
in waves of :data:`WAVE_BLOCKS` blocks, one task a block, and reads each block's result as
its task ends (:func:`_arriving`; a wave read where its blocks sit, :func:`_wave`),
handing each on in block order — the product spools its
record rows to disk with their JSON text (:mod:`dprect.release.row_spool`) and every sink
reads them back a block at a time — so the driver holds at most a wave's blocks, not the
run's cells, and its per-block work runs beside the executors' draws, not after them
(before: the phase drawn whole, then one job a block, :data:`FETCH_BLOCKS`, fetched in turn
by ``toLocalIterator`` while the executors stood idle; docs/results.md §5.3c — still the
route of a Spark Connect session, which has no JVM handle to read a job as it runs);
otherwise (the coverage bounds, a mixed run, a caller without ``each_block``) the blocks
are collected and the run's result made as on the driver route. The merged statistics (a
histogram of hundreds of bins per cell) never reach the driver.

**Progress**: every phase's blocks are counted as their tasks end (a Spark accumulator
per phase, :mod:`dprect.engines.spark.block_progress`), so the heartbeat prints
``mechanism D/T blocks`` as on the numpy route — public numbers only.

**The choice** (:func:`executor_route`) depends on public numbers only: the number of
listed groups times the number of columns (at least :data:`EXECUTOR_CELLS`), and whether
a seeded run asks for the coverage bounds; never on the data. The blocks' number is a
function of the groups, the columns and the session's cores. The executors need dprect
installed (the cluster image has it; a local master's workers import the driver's): the
draws import the core there.
"""

from __future__ import annotations

import gc
import itertools
import pickle
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812

from dprect.core.aggregates import (
    Cell,
    DescribePlan,
    DescribeResult,
    SmallPools,
    checked_names,
    column_centres,
    describe_block,
    finish_small,
    group_blocks,
    small_pools,
)
from dprect.core.bounds import bounds_result, checked_bounds, draw_groups
from dprect.core.column_block import ColumnBins, ColumnBlock
from dprect.core.column_release import (
    ReleasedColumns,
    finish_columns,
    pooled_block,
    released_rows,
)
from dprect.core.describe_stats import BinBlock, BinStatistics
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.mixed import draw_parts
from dprect.core.quantile_release import (
    QuantilePools,
    QuantileResult,
    first_phase,
    joined_pools,
    pooled_centres,
    second_phase,
    statistic_names,
)
from dprect.core.randomness import STREAM_SEED_BITS, RandomSource
from dprect.core.statistic import (
    COVERAGE,
    QUANTILES,
    QUERY,
    GroupedStatistics,
    Mechanism,
    StatisticsSpec,
    complete,
)
from dprect.engines.spark.block_progress import counted, drawing_blocks
from dprect.engines.spark.block_ranges import BlockRanges
from dprect.engines.spark.remote import default_parallelism, is_connect
from dprect.engines.spark.source import SPARK_ERRORS, spark_message
from dprect.engines.spark.statistics import (
    BLOB,
    PART,
    counting_pass,
    real_cells,
    to_cells,
    to_column_arrays,
    virtual_columns,
)

#: runs of at least this many cells (listed groups × columns) draw in the executors
EXECUTOR_CELLS = 4096
#: a block holds about this many cells (groups × kernel columns), at most
CELLS_PER_BLOCK = 4096
#: a run of describe alone on a classic session cuts blocks this many times as large
#: (:func:`block_cells`): its tasks' fixed costs a block — the phases' numpy calls a
#: column, the block's streams, the task's Arrow in and out — weigh ~2 µs a cell at 4,096
#: cells (docs/results.md §5.3c, s33-exec); its released block (~0.75 MB at 4,096 cells)
#: then passes Spark's 1 MB direct task result and goes through the block manager, so a
#: Spark Connect session (one block a fetch: :data:`FETCH_BLOCKS`) keeps the small blocks
QUERY_BLOCK_FACTOR = 4
#: and there are at least this many blocks per core of the session (uneven blocks even out)
BLOCKS_PER_CORE = 4
#: a streamed run on a Spark Connect session (no JVM handle: :func:`_in_order`) fetches its
#: released blocks to the driver about this many at a time: one,
#: so a fetch's task result is one block's pickled cells (about 0.15 KB a describe cell,
#: 0.6 MB at CELLS_PER_BLOCK kernel cells of 8 columns), under Spark's 1 MB
#: ``spark.task.maxDirectResultSize`` — sent back with the task's status. A range of 16
#: blocks (about 10 MB, whatever the number of groups) went through the block manager, and
#: with ``--driver-memory 1g`` a local session lost the first range's result there
#: (TaskResultLost; docs/results.md §5.3c)
FETCH_BLOCKS = 1
#: a streamed run (classic session) draws its last phase and hands the released blocks to
#: the driver in WAVES of at most this many blocks: one Spark job a wave, one task a block,
#: each block's result read by the driver as its task ends (:func:`_arriving`) while the
#: wave's other blocks are drawn. A job's task results count towards
#: ``spark.driver.maxResultSize`` (1 GiB by default): 256 blocks are about 190 MB (0.75 MB a
#: block of 4,096 describe cells), and the driver holds at most a wave's blocks (those that
#: arrive before their turn; in practice a few, as tasks start in block order)
WAVE_BLOCKS = 256
SEEDS = "_s"
DRAWS = "_d"
POOLS = "_a"
RESULT = "_r"
NAMES = "_n"
RESULT_SCHEMA = f"{PART} int, {RESULT} binary"
SEED_BYTES = STREAM_SEED_BITS // 8


def executor_route(mechanisms: Sequence[Mechanism], groups: int, columns: int,
                   seeded: bool) -> bool:
    """Whether a run draws in the executors (module notes): public numbers only."""
    if groups < 2 or groups * columns < EXECUTOR_CELLS:
        return False
    return not (seeded and any(m is COVERAGE for m in mechanisms))


def block_cells(mechanisms: Sequence[Mechanism], connect: bool) -> int:
    """The most cells a block holds: :data:`CELLS_PER_BLOCK`, times
    :data:`QUERY_BLOCK_FACTOR` for a run of describe alone on a classic session. Public:
    the run's mechanisms and session only."""
    alone = all(m is QUERY for m in mechanisms) and not connect
    return CELLS_PER_BLOCK * (QUERY_BLOCK_FACTOR if alone else 1)


def block_starts(groups: int, kernel_columns: int, cores: int,
                 cells: int | None = None) -> list[int]:
    """The first group of each block: at least :data:`BLOCKS_PER_CORE` blocks a core, at
    most ``cells`` (:data:`CELLS_PER_BLOCK`) cells a block
    (:func:`~dprect.core.aggregates.group_blocks`)."""
    most = CELLS_PER_BLOCK if cells is None else cells
    parts = max(BLOCKS_PER_CORE * cores, -(-groups * kernel_columns // most))
    return [b.start for b in group_blocks(groups, parts)]


# -- the executors' side (pickled by reference: dprect is imported there) ----------------------
class Blocks:
    """What a block's task needs to read its cells: the kernel's and the run's specs, the
    number of groups, the blocks' starts (then the end) and the run's columns per part.
    The specs travel as plain pickles (their grids' classes by reference, so the core's
    own classes on the executor: a grid pickled by value would be another class)."""

    def __init__(self, kernel: StatisticsSpec, spec: StatisticsSpec, groups: int,
                 starts: Sequence[int], columns: int) -> None:
        self._specs = pickle.dumps((kernel, spec))
        self.groups = groups
        self.edges = [*starts, groups]
        self.columns = columns

    @cached_property
    def kernel(self) -> StatisticsSpec:
        return self.specs[0]

    @cached_property
    def spec(self) -> StatisticsSpec:
        return self.specs[1]

    @cached_property
    def specs(self) -> tuple[StatisticsSpec, StatisticsSpec]:
        kernel, spec = pickle.loads(self._specs)
        return kernel, spec

    def size(self, block: int) -> int:
        return self.edges[block + 1] - self.edges[block]

    def cells(self, batch: Any, row: int, part: int) -> GroupedStatistics:
        """Part ``part``'s cells of the block in ``batch``'s row (groups local, every
        cell present): only that part's kernel columns are read into cells
        (:func:`~dprect.engines.spark.statistics.to_cells` of their columns; the same
        cells as :func:`~dprect.core.mixed.part_cells` of them all), the block's groups'
        edges only (work of the block's size, whatever the run's groups)."""
        first, end = self.part_columns(part)
        kernel = StatisticsSpec(self.kernel.columns[first:end])
        spec = StatisticsSpec(self.spec.columns[part * self.columns:
                                                (part + 1) * self.columns])
        n = self.size(batch.column(PART)[row].as_py())
        return real_cells(complete(self._found(batch, row, part), kernel, n), spec, n)

    def _found(self, batch: Any, row: int, part: int) -> GroupedStatistics:
        """The cells of part ``part``'s kernel columns that the block in ``batch``'s row
        holds (groups local; none where the block has no rows): the decode both
        :meth:`cells` and :meth:`bins` read."""
        if not batch.column(BLOB)[row].is_valid:  # no rows in the block
            return {}
        block = batch.column(PART)[row].as_py()
        start, n = self.edges[block], self.size(block)
        one = pa.table({PART: batch.column(PART).slice(row, 1),
                        BLOB: batch.column(BLOB).slice(row, 1)})
        return {(g - start, j): c for (g, j), c in
                to_cells(one, self.kernel, self.groups, self.part_columns(part),
                         (start, start + n)).items()}

    def bins(self, batch: Any, row: int, part: int) -> dict[tuple[int, int], BinStatistics]:
        """Part ``part``'s cells of the block WITH rows as describe reads them (the
        :class:`~dprect.core.describe_stats.BinStatistics` of :meth:`cells`' cells that
        have keys, groups local): where no column of the part keeps squares, made in
        one pass over the decoded cells — the kernel's columns are the part's, and the
        cells :meth:`cells` adds (empty) are the ones left out here — else from
        :meth:`cells`. The same statistics either way (the same arrays)."""
        first, end = self.part_columns(part)
        columns = self.spec.columns[part * self.columns:(part + 1) * self.columns]
        read = self.cells if any(c.squares for c in columns) or end - first != len(columns) \
            else self._found
        return {k: c.bin_statistics() for k, c in read(batch, row, part).items()
                if len(c.keys)}

    def column_bins(self, batch: Any, row: int, part: int) -> ColumnBins | None:
        """:meth:`bins`' cells as column arrays
        (:class:`~dprect.core.column_block.ColumnBins`, from the decode's own arrays:
        :func:`~dprect.engines.spark.statistics.to_column_arrays`), or None where a
        column of the part keeps squares or no sums (then :meth:`bins`)."""
        first, end = self.part_columns(part)
        columns = self.spec.columns[part * self.columns:(part + 1) * self.columns]
        if any(c.squares or not c.sums for c in columns) or end - first != len(columns):
            return None
        block = batch.column(PART)[row].as_py()
        start, n = self.edges[block], self.size(block)
        if not batch.column(BLOB)[row].is_valid:  # no rows in the block
            empty = np.zeros(0, dtype=np.int64)
            return ColumnBins(empty, empty, empty, np.zeros(n * len(columns) + 1,
                                                            dtype=np.int64), n, len(columns))
        one = pa.table({PART: batch.column(PART).slice(row, 1),
                        BLOB: batch.column(BLOB).slice(row, 1)})
        bins, counts, sums, at = to_column_arrays(one, self.kernel, self.groups,
                                                  (first, end), (start, start + n))
        return ColumnBins(bins, counts, sums, at, n, len(columns))

    def part_columns(self, part: int) -> tuple[int, int]:
        """The kernel columns [first, end) of part ``part``'s columns (a column with
        squares has three: :func:`~dprect.engines.spark.statistics.virtual_columns`)."""
        return self.part_ranges[part]

    @cached_property
    def part_ranges(self) -> tuple[tuple[int, int], ...]:
        """:meth:`part_columns` of every part, from one layout of the run's spec (read
        once per task, not once per block row)."""
        _, layout = virtual_columns(self.spec)
        ends = [0] * (-(-len(self.spec.columns) // self.columns))
        for j, _ in layout:
            ends[j // self.columns] += 1
        starts = [sum(ends[:p]) for p in range(len(ends))]
        return tuple((a, a + n) for a, n in zip(starts, ends, strict=True))


def _seeds(batch: Any, row: int, n: int) -> list[int | None]:
    """The block's stream seeds (16 bytes a group), or n × None (OS entropy)."""
    if SEEDS not in batch.schema.names:
        return [None] * n
    raw = batch.column(SEEDS)[row].as_py()
    return [int.from_bytes(raw[i:i + SEED_BYTES], "big")
            for i in range(0, n * SEED_BYTES, SEED_BYTES)]


#: the columns of a block's row that describe's phase 1 hands on to phase 2 as they came
#: on a streamed run (:func:`query_first`): the block's merged statistics and, on a
#: packed run, its group names. Phase 2 then reads phase 1's kept output alone: before,
#: it joined the kept merged blocks again (and the names after), each join one more
#: shuffle of every block's statistics (~115 MB at 3·10^5 groups × 8 columns;
#: docs/results.md §5.3c). A gathered run (a mixed one: the kept merged blocks serve its
#: other mechanisms) still joins, so it keeps one copy of the statistics, not two
CARRIED = (BLOB, NAMES)


def _out(block: int, **blobs: bytes) -> Any:
    return pa.RecordBatch.from_arrays(
        [pa.array([block], pa.int32()), *(pa.array([b], pa.binary()) for b in blobs.values())],
        names=[PART, *blobs])


def query_first(batches: Iterator[Any], plan: bytes, blocks: Blocks, part: int,
                carry: bool = False) -> Iterator[Any]:
    """Phase 1 of describe per block: :func:`~dprect.core.aggregates.describe_block` from
    the block's seeds and its small pools (:func:`~dprect.core.aggregates.small_pools`);
    with ``carry`` (a streamed run), the block's :data:`CARRIED` columns handed on as they
    came (its merged statistics, its group names), so phase 2 reads phase 1's kept output
    alone, else phase 2 joins the kept merged blocks again. The block's
    cells are read as column arrays (:meth:`Blocks.column_bins`,
    :class:`~dprect.core.column_block.ColumnBlock`) where no column keeps squares, else
    as :meth:`Blocks.bins`' cells: the same values."""
    the_plan: DescribePlan = pickle.loads(plan)
    for batch in batches:
        carried = [c for c in CARRIED if carry and c in batch.schema.names]
        for row in range(batch.num_rows):
            block = batch.column(PART)[row].as_py()
            n = blocks.size(block)
            arrays = blocks.column_bins(batch, row, part)
            cells = (BinBlock(blocks.bins(batch, row, part), n, blocks.columns)
                     if arrays is None else ColumnBlock(arrays))
            draws = describe_block(the_plan, cells, _seeds(batch, row, n))
            pools = small_pools(the_plan, [draws])
            out = _out(block, **{DRAWS: pickle.dumps(draws), POOLS: pickle.dumps(pools)})
            yield pa.RecordBatch.from_arrays(
                [*out.columns, *(batch.column(c).slice(row, 1) for c in carried)],
                names=[*out.schema.names, *carried])


@dataclass(frozen=True)
class TwoPhases:
    """A two-phase grouped mechanism as :meth:`ExecutorDraws._two_phases` runs it:
    ``first`` (phase 1's task body), ``second`` (phase 2's task body given the columns'
    pooled centres), ``centres`` (the centres from phase 1's pools, one a block, drawn
    on the driver from the run's source), ``rows`` (a block's released rows from its
    phase 2 result) and ``result`` (the product's result of some groups' rows)."""

    first: Callable[..., Iterator[Any]]
    second: Callable[[Any], Callable[..., Iterator[Any]]]
    centres: Callable[[list[Any]], Any]
    rows: Callable[[Any], Sequence[Any]]
    result: Callable[[list[Any], Sequence[Any]], Any]


@dataclass(frozen=True)
class Packing:
    """How a streamed run's block leaves its task (issue #42): ``pack`` (the product's,
    :class:`~dprect.release.block_pack.BlockPacker`: the block's record text and table
    rows) of the block's result — the run's ``columns``, the block's group names (its
    row's :data:`NAMES`: :meth:`ExecutorDraws._blocks`) and its released cells — made in
    the task, so the driver spools those bytes as they come and makes nothing a cell."""

    pack: Callable[[Any], bytes]
    columns: tuple[str, ...]
    seeded: bool

    def describe(self, batch: Any, row: int, plan: DescribePlan,
                 done: ReleasedColumns | list[list[Cell]]) -> bytes:
        """Describe's block result (the driver's, :meth:`ExecutorDraws.query`) packed."""
        return self.pack(DescribeResult(list(self.columns), _names(batch, row),
                                        released_rows(done), plan.guarantee, plan,
                                        self.seeded))

    def quantiles(self, batch: Any, row: int, plan: Any, rows: list[Any]) -> bytes:
        """The quantiles' block result (the driver's, :meth:`ExecutorDraws.quantiles`)
        packed."""
        return self.pack(QuantileResult(list(self.columns), _names(batch, row),
                                        tuple(statistic_names(plan)), rows, plan,
                                        self.seeded))


def _names(batch: Any, row: int) -> list[Any]:
    """A block's group names, as its row carries them (:data:`NAMES`)."""
    names: list[Any] = pickle.loads(batch.column(NAMES)[row].as_py())
    return names


def _result(done: Any) -> bytes:
    """A block's result as it leaves its task when nothing packs it: pickled."""
    return pickle.dumps(done)


def query_second(batches: Iterator[Any], plan: bytes,
                 anchors: Sequence[tuple[float, bool]], blocks: Blocks, part: int,
                 packing: Packing | None = None) -> Iterator[Any]:
    """Phase 2 of describe per block: :func:`~dprect.core.aggregates.finish_small` at the
    run's anchors (or pooled centres); the block's released cells. A block whose every
    cell takes the pooled split (the many-small-groups run) is drawn as column arrays from
    the decode on (:meth:`Blocks.column_bins`,
    :func:`~dprect.core.column_release.finish_columns`: the same cells, bit for bit) and
    its cells leave as arrays (:class:`~dprect.core.column_release.ReleasedColumns`, made
    into cells on the driver: :func:`~dprect.core.column_release.released_rows`). With
    ``packing``, the block's result leaves packed (:meth:`Packing.describe`)."""
    the_plan: DescribePlan = pickle.loads(plan)
    for batch in batches:
        for row in range(batch.num_rows):
            block = batch.column(PART)[row].as_py()
            draws = pickle.loads(batch.column(DRAWS)[row].as_py())
            small = not all(map(all, draws.cells))  # a cell left to round two (None)
            done: ReleasedColumns | list[list[Cell]] | None = None
            # the column arrays' case, decided before the decode (a block it is not is
            # decoded once, for finish_small)
            if small and pooled_block(the_plan, anchors, draws, blocks.columns):
                arrays = blocks.column_bins(batch, row, part)
                if arrays is not None:
                    done = finish_columns(the_plan, anchors, arrays, draws, pooled=True)
            if done is None:
                cell_block = None
                if small:
                    cell_block = BinBlock(blocks.bins(batch, row, part), blocks.size(block),
                                          blocks.columns)
                done = finish_small(the_plan, anchors, cell_block, draws)
            yield _out(block, **{RESULT: _result(done) if packing is None
                                 else packing.describe(batch, row, the_plan, done)})


def quantiles_first(batches: Iterator[Any], plan: bytes, blocks: Blocks, part: int,
                    carry: bool = False) -> Iterator[Any]:
    """Phase 1 of the quantiles per block, as describe's (:func:`query_first`): each
    group from its own stream (:func:`~dprect.core.quantile_release.first_phase`), the
    block's draws (:data:`DRAWS`) and its pools (:data:`POOLS`: the block's
    :class:`~dprect.core.quantile_release.QuantilePools` — the pooled cells' histograms
    and released rows, the anchor's histogram of the other cells' middle bins); with
    ``carry``, the block's :data:`CARRIED` columns handed on as they came."""
    the_plan = pickle.loads(plan)
    for batch in batches:
        carried = [c for c in CARRIED if carry and c in batch.schema.names]
        for row in range(batch.num_rows):
            block = batch.column(PART)[row].as_py()
            n = blocks.size(block)
            stats = {k: c.quantile_statistics()
                     for k, c in blocks.cells(batch, row, part).items()}
            first = first_phase(the_plan, stats, _seeds(batch, row, n), blocks.columns)
            pools, first.pools = first.pools, QuantilePools({}, {}, {})
            out = _out(block, **{DRAWS: pickle.dumps(first), POOLS: pickle.dumps(pools)})
            yield pa.RecordBatch.from_arrays(
                [*out.columns, *(batch.column(c).slice(row, 1) for c in carried)],
                names=[*out.schema.names, *carried])


def quantiles_second(batches: Iterator[Any], plan: bytes,
                     centres: dict[int, tuple[int, int]], blocks: Blocks, part: int,
                     packing: Packing | None = None) -> Iterator[Any]:
    """Phase 2 of the quantiles per block: the pooled cells drawn near their column's
    pooled centre (:func:`~dprect.core.quantile_release.second_phase`; a block without
    pooled cells decodes nothing); with ``packing``, packed (:meth:`Packing.quantiles`)."""
    the_plan = pickle.loads(plan)
    for batch in batches:
        for row in range(batch.num_rows):
            block = batch.column(PART)[row].as_py()
            first = pickle.loads(batch.column(DRAWS)[row].as_py())
            stats = ({k: c.quantile_statistics()
                      for k, c in blocks.cells(batch, row, part).items()}
                     if first.pooled else {})
            done = second_phase(the_plan, stats, first, centres, blocks.columns)
            yield _out(block, **{RESULT: _result(done) if packing is None
                                 else packing.quantiles(batch, row, the_plan, done)})


def coverage_block(batches: Iterator[Any], plan: bytes, blocks: Blocks, part: int
                   ) -> Iterator[Any]:
    """The coverage bounds of each block's groups from OS entropy
    (:func:`~dprect.core.bounds.draw_groups`; unseeded runs only: module notes)."""
    the_plan = pickle.loads(plan)
    for batch in batches:
        for row in range(batch.num_rows):
            block = batch.column(PART)[row].as_py()
            hists = {k: c.histogram() for k, c in blocks.cells(batch, row, part).items()}
            done = draw_groups(the_plan, hists, range(blocks.size(block)), RandomSource())
            yield _out(block, **{RESULT: pickle.dumps(done)})


# -- the driver's side -------------------------------------------------------------------------
def _collect(df: DataFrame, *columns: str) -> Any:
    """The rows of ``df`` (``columns``), sorted by block; a Spark failure as one line."""
    try:
        table = df.select(PART, *columns).toArrow()
    except SPARK_ERRORS as exc:
        raise InputDataError(f"Spark failed while drawing: {spark_message(exc)}") from None
    return table.sort_by(PART)


def _unpersist(df: DataFrame) -> None:
    """Drop a kept DataFrame; a session already gone (the run failed or was interrupted)
    keeps nothing, and the run's own error is the one reported."""
    with suppress(*SPARK_ERRORS):
        df.unpersist()


def _run(df: DataFrame, body: Callable[..., Iterator[Any]], schema: str) -> DataFrame:
    """One phase over the blocks, its blocks counted for the heartbeat
    (:mod:`dprect.engines.spark.block_progress`), each task's worker heap settled first
    (:func:`_settled`)."""
    return df.mapInArrow(counted(partial(_settled, body=body)), schema)


def _wave(source: DataFrame, first: int, end: int) -> DataFrame:
    """Blocks ``first`` … ``end`` − 1 of ``source`` (a row per block), one a partition
    (partition i holds block ``first`` + i: ``repartitionById``, so no sampling job as a
    range repartition runs). ``source`` kept and partitioned by block range
    (:mod:`~dprect.engines.spark.block_ranges`: each kept partition's batches carry
    their blocks' least and largest number), the ``where`` skips the other waves' batches
    (``spark.sql.inMemoryColumnarStorage.partitionPruning``, on by default): the waves
    read and move each block once in all. Before, ``source`` was staged once more cut by
    wave (a range repartition) and each wave cut again by range, each a sampling job
    (docs/results.md §5.3c). The rows are the same; where they sit changes nothing a
    block's task draws."""
    block = F.col(PART)
    return source.where((block >= first) & (block < end)) \
        .repartitionById(end - first, (block - F.lit(first)).cast("int"))


def _settled(batches: Iterator[Any], body: Callable[..., Iterator[Any]]) -> Iterator[Any]:
    """In the executors: ``body`` over ``batches`` after ``gc.freeze()``. pyspark's worker
    daemon runs a FULL ``gc.collect()`` after every task of a reused worker
    (``pyspark/daemon.py``), whose cost grows with every object the worker holds — its
    modules, numba's compiled samplers, pyarrow — about 0.18 CPU-s a task measured here,
    whatever the task's size; the streamed waves' one-block tasks (196 at 10^5 groups ×
    8 columns, 1,954 at 10^6) paid it once a block, 35 of the Python workers' CPU-s in a
    run (docs/results.md §5.3c). Freezing at the task's start (after the daemon's last
    collect, so only reachable objects are left) moves what the worker held into the
    permanent generation: the next collect scans only what the task made. Objects are
    still freed by their reference counts; what freezing gives up is collecting a cycle
    among objects the worker held across tasks (its modules and caches, which live as
    long as it does). Then the collector is PAUSED for the task (restored after, as it
    was; the daemon's full collect after the task finds any cycle the task left): a
    block's steps outside the core's own paused ones — phase 2's unpickling of phase 1's
    draws, the decode, the result's pickle — allocate ~10^4 objects a block, and the
    collections they set off cost ~0.8 µs a cell in the unpickling alone (1.8 against
    17.6 ms a block of 16,328 cells, docs/results.md §5.3c, s33-exec). No value changes:
    the draws are the same, bit for bit."""
    gc.freeze()
    was = gc.isenabled()
    gc.disable()
    try:
        yield from body(batches)
    finally:
        if was:
            gc.enable()


def _blocks_of(table: Any, column: str) -> list[Any]:
    return [pickle.loads(b.as_py()) for b in table.column(column)]


#: what a streamed run hands on per block: the block's result (its groups' cells only)
EachBlock = Callable[[Any], None]


def _in_order(df: DataFrame, column: str, blocks: int,
              load: Callable[[bytes], Any] = pickle.loads) -> Iterator[tuple[int, Any]]:
    """Each of the ``blocks`` blocks' ``column`` (unpickled) in block order, fetched to
    the driver one range of :data:`FETCH_BLOCKS` blocks at a time (range r: blocks
    r·FETCH_BLOCKS … by ``repartitionById``, no sampling job; then ``toLocalIterator``:
    one job per range, in order), so the driver holds a range's blocks, never the run's;
    a block that arrived before its turn waits for it. ``df`` must be kept (persisted):
    each range's job reads it. A Spark failure as one line."""
    ranges = max(1, -(-blocks // FETCH_BLOCKS))
    try:
        rows = df.select(PART, column) \
            .repartitionById(ranges, F.expr(f"CAST(`{PART}` DIV {FETCH_BLOCKS} AS INT)")) \
            .sortWithinPartitions(PART).toLocalIterator()
        yield from _block_order(((int(row[0]), bytes(row[1])) for row in rows), 0, load)
    except SPARK_ERRORS as exc:
        raise InputDataError(f"Spark failed while drawing: {spark_message(exc)}") from None


def _block_order(arrived: Iterator[tuple[int, bytes]], first: int,
                 load: Callable[[bytes], Any] = pickle.loads) -> Iterator[tuple[int, Any]]:
    """The (block, pickled result) pairs of ``arrived``, in any order, handed on
    unpickled (``load``: a packed block's bytes as they are) in block order from block
    ``first``: a block that arrived before its turn waits for it."""
    held: dict[int, bytes] = {}
    turn = first
    for block, blob in arrived:
        held[block] = blob
        while turn in held:
            yield turn, load(held.pop(turn))
            turn += 1


def _arrow_batches(df: DataFrame) -> Iterator[Any]:
    """``df``'s Arrow record batches as its tasks end, in the order they end: the JVM's
    own Arrow collect (``collectAsArrowToPython``, what ``toArrow`` runs: it writes each
    task's batches to the driver's socket as the task ends), read as it arrives instead of
    gathered first; the trailing batch order is not needed (each batch carries its
    blocks). The job's failure is raised when the stream ends (the JVM's serving thread
    joined); a reader that stops early (the consumer failed) closes the socket, which
    fails the job at its next result, and that job error is not reported over the
    consumer's own."""
    from pyspark.sql.pandas.serializers import ArrowCollectSerializer
    from pyspark.traceback_utils import SCCallSiteSync
    from pyspark.util import _load_from_socket

    with SCCallSiteSync(df.sparkSession.sparkContext):
        port, secret, server = df._jdf.collectAsArrowToPython()
    finished = False
    try:
        with _load_from_socket((port, secret), ArrowCollectSerializer()) as stream:
            for batch in stream:
                if isinstance(batch, pa.RecordBatch):
                    yield batch
        finished = True
    finally:
        if finished:
            server.getResult()  # the job's own error, if any
        else:
            with suppress(*SPARK_ERRORS):
                server.getResult()


def _arriving(df: DataFrame, column: str, first: int, end: int,
              load: Callable[[bytes], Any] = pickle.loads) -> Iterator[tuple[int, Any]]:
    """Blocks ``first`` … ``end - 1``'s ``column`` (unpickled) in block order, each as
    soon as it and every block before it have reached the driver (:func:`_arrow_batches`:
    as their tasks end); a block that arrived before its turn waits for it. A Spark
    failure as one line."""
    turn = first
    try:
        for turn, done in _block_order(
                ((int(block), blob) for batch in _arrow_batches(df.select(PART, column))
                 for block, blob in zip(batch.column(0).to_pylist(),
                                        batch.column(1).to_pylist(), strict=True)), first,
                load):
            yield turn, done
            turn += 1
    except SPARK_ERRORS as exc:
        raise InputDataError(f"Spark failed while drawing: {spark_message(exc)}") from None
    if turn != end:  # every block yields one row (module notes)
        raise InputDataError(f"Spark returned {turn - first} of {end - first} blocks")


def listed_blocks(session: Any, edges: Sequence[int], rng: RandomSource,
                  groups: Sequence[Any] | None = None) -> DataFrame:
    """A row per block (``edges``: the blocks' first groups, then the end): its number
    (:data:`PART`), on a seeded run its groups' stream seeds (:data:`SEEDS`, 16 bytes a
    group, drawn here from ``rng`` in the public group order as
    :meth:`RandomSource.stream_seeds` draws them) and, given ``groups``, its group names
    (:data:`NAMES`: the list of its public names, pickled). Public names and seeds only."""
    columns = {PART: pa.array(range(len(edges) - 1), pa.int32())}
    if groups is not None:
        columns[NAMES] = pa.array([pickle.dumps(list(groups[a:z]))
                                   for a, z in itertools.pairwise(edges)], pa.binary())
    if rng.seeded:
        seeds = rng.stream_seeds(edges[-1])
        columns[SEEDS] = pa.array(
            [b"".join(int(s or 0).to_bytes(SEED_BYTES, "big") for s in seeds[a:z])
             for a, z in itertools.pairwise(edges)], pa.binary())
        del seeds
    return session.createDataFrame(pa.table(columns))


class ExecutorDraws:
    """One run's draws in the executors (module notes): the pass's merged blocks kept, with
    their seeds joined per part — or, on a streamed run (``listed``), carried in the
    merged rows themselves (:func:`listed_blocks`, merged with the blocks by
    :func:`~dprect.engines.spark.statistics.counting_pass`) — and each mechanism's phases
    over them."""

    def __init__(self, merged: DataFrame, blocks: Blocks,
                 ranges: BlockRanges | None = None, listed: bool = False) -> None:
        self.merged = merged.persist(StorageLevel.MEMORY_AND_DISK)
        self.blocks = blocks
        #: where the blocks sit (:mod:`~dprect.engines.spark.block_ranges`): the waves of
        #: a streamed run (:meth:`_stream`); None: :data:`WAVE_BLOCKS` a wave
        self.ranges = ranges
        #: the merged rows carry every block's seeds (and names, on a packed run) drawn
        #: from the run's source (:func:`draw_in_executors`): :meth:`_blocks` is them
        self.listed = listed

    def close(self) -> None:
        _unpersist(self.merged)

    def _blocks(self, rng: RandomSource, groups: Sequence[Any] | None = None
                ) -> DataFrame:
        """Every block (one without rows too: its groups are released all the same) with
        its merged statistics and, on a seeded run, its groups' stream seeds, drawn here in
        the public group order as :meth:`RandomSource.stream_seeds` draws them; given
        ``groups``, each block's group names too (:data:`NAMES`: the list of its public
        names, pickled), for a block packed in its task (:class:`Packing`) — in the one
        join with the merged blocks (:func:`listed_blocks`). On a run whose merged rows
        carry them already (``listed``: the one mechanism of a streamed run, ``rng`` its
        source, drawn from before the pass), the kept merged blocks themselves."""
        if self.listed:
            return self.merged
        listed = listed_blocks(self.merged.sparkSession, self.blocks.edges, rng, groups)
        return listed.join(self.merged, PART, "left")

    def query(self, plan: DescribePlan, part: int, groups: list[Any], columns: list[str],
              rng: RandomSource, each_block: EachBlock | None = None,
              pack: Callable[[Any], bytes] | None = None) -> DescribeResult:
        group_list, cols = checked_names(plan, groups, columns)

        def result(names: list[Any], cells: Sequence[Any]) -> DescribeResult:
            return DescribeResult(cols, names, cells, plan.guarantee, plan, rng.seeded)

        def anchors(parts: list[Any]) -> Any:
            return column_centres(plan, SmallPools.joined(parts), rng)

        return self._two_phases(
            TwoPhases(query_first, lambda found: partial(query_second, anchors=found),
                      anchors, released_rows, result),
            plan, part, group_list, cols, rng, each_block, pack)

    def quantiles(self, plan: Any, part: int, groups: list[Any], columns: list[str],
                  rng: RandomSource, each_block: EachBlock | None = None,
                  pack: Callable[[Any], bytes] | None = None) -> QuantileResult:
        statistics = tuple(statistic_names(plan))
        if len(columns) != plan.columns:
            raise ParameterError(f"a plan of the quantiles of {plan.columns} column(s) for "
                                 f"{len(columns)} column(s)")

        def result(names: list[Any], cells: Sequence[Any]) -> QuantileResult:
            return QuantileResult(list(columns), names, statistics, list(cells), plan,
                                  rng.seeded)

        def centres(parts: list[Any]) -> Any:
            # the run's source, after the seeds
            return pooled_centres(plan, joined_pools(parts), rng)

        return self._two_phases(
            TwoPhases(quantiles_first,
                      lambda found: partial(quantiles_second, centres=found), centres,
                      list, result),
            plan, part, list(groups), list(columns), rng, each_block, pack)

    def _two_phases(self, phases: TwoPhases, plan: Any, part: int, groups: list[Any],
                    columns: list[str], rng: RandomSource, each_block: EachBlock | None,
                    pack: Callable[[Any], bytes] | None) -> Any:
        """A grouped mechanism drawn in two phases where the groups are (docs/privacy.md
        §11 Lemma D5, §11a Lemma Q5): phase 1 draws each block's counts and own cells and
        hands on its small cells' pools; the driver joins the pools (one row a block) and
        draws the columns' pooled centres from the run's source; phase 2 draws each block's
        small cells near them and releases the block. Streamed (``each_block``) or
        gathered, packed in the task when ``pack`` is given (:class:`Packing`)."""
        blob = pickle.dumps(plan)
        carry = each_block is not None  # one mechanism, streamed (draw_in_executors)
        to_pack = carry and pack is not None
        # phase 1's draws kept; on a streamed run with the blocks' statistics (and names)
        # it hands on (CARRIED), so phase 2 reads them with no join and the kept merged
        # blocks go; else not the statistics: phase 2 joins the kept merged blocks again,
        # so the run keeps one copy of them (self.merged), not two
        carried = (f", {BLOB} binary" + (f", {NAMES} binary" if to_pack else "")
                   if carry else "")
        first = _run(self._blocks(rng, groups if to_pack else None),
                     partial(phases.first, plan=blob, blocks=self.blocks, part=part,
                             carry=carry),
                     f"{PART} int, {DRAWS} binary, {POOLS} binary{carried}"
                     ).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            parts = _blocks_of(_collect(first, POOLS), POOLS)
            assert parts  # every run has a block
            centres = phases.centres(parts)
            del parts
            if carry:  # the kept blocks are in phase 1's kept output now
                second_input = first.select(PART, DRAWS, BLOB,
                                            *([NAMES] if to_pack else []))
                _unpersist(self.merged)
            else:
                second_input = first.select(PART, DRAWS).join(
                    self.merged.select(PART, BLOB), PART, "left")
            body = partial(phases.second(centres), plan=blob, blocks=self.blocks,
                           part=part)
            if each_block is not None and pack is not None:  # streamed, packed there
                self._stream(second_input,
                             partial(body, packing=Packing(pack, tuple(columns),
                                                           rng.seeded)),
                             lambda start, packed: each_block(packed), load=bytes)
                return phases.result(groups, [])
            if each_block is not None:  # streamed: each block's result handed on
                self._stream(second_input, body, lambda start, done: each_block(
                    phases.result(groups[start:start + len(done)], phases.rows(done))))
                return phases.result(groups, [])
            done = _run(second_input, body, RESULT_SCHEMA)
            cells = [row for block in _blocks_of(_collect(done, RESULT), RESULT)
                     for row in phases.rows(block)]
        finally:
            _unpersist(first)
        return phases.result(groups, cells)

    def _stream(self, source: DataFrame, body: Callable[..., Iterator[Any]],
                each: Callable[[int, Any], None],
                load: Callable[[bytes], Any] = pickle.loads) -> None:
        """The last phase (``body`` over ``source``, a row per block) drawn and each
        block's released cells handed, in block order, to ``each`` (the block's first
        group, its cells). On a classic session, in waves of :data:`WAVE_BLOCKS` blocks
        (:attr:`ranges`' wave): each wave's blocks are read from ``source`` where they
        sit — kept, partitioned by block range
        (:mod:`~dprect.engines.spark.block_ranges`), so a wave's ``where`` skips the
        other waves' kept batches — cut one a partition by their place in the wave
        (``repartitionById``: no sampling job) and drawn by one job whose blocks reach the
        driver as their tasks end (:func:`_arriving`), so the driver's sinks work beside
        the executors' draws instead of after them (docs/results.md §5.3c). A Spark
        Connect session (no JVM handle): the phase drawn in full and kept, then fetched a
        range at a time (:func:`_in_order`). ``load``: a block's result from its bytes
        (unpickled, or a packed block's bytes as they are)."""
        blocks = len(self.blocks.edges) - 1
        if is_connect(source):
            kept = _run(source, body, RESULT_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
            try:
                for block, cells in _in_order(kept, RESULT, blocks, load):
                    each(self.blocks.edges[block], cells)
            finally:
                _unpersist(kept)
            return
        step = WAVE_BLOCKS if self.ranges is None else self.ranges.wave
        for first in range(0, blocks, step):
            end = min(blocks, first + step)
            for block, cells in _arriving(_run(_wave(source, first, end), body,
                                               RESULT_SCHEMA), RESULT, first, end, load):
                each(self.blocks.edges[block], cells)

    def coverage(self, plan: Any, part: int, groups: list[Any], columns: list[str],
                 rng: RandomSource) -> Any:
        if rng.seeded:  # module notes: a seeded run's groups share one stream
            raise ParameterError("a seeded run draws the coverage bounds on the driver")
        cols, group_list = checked_bounds(plan, groups, columns)
        done = _run(self._blocks(rng), partial(coverage_block, plan=pickle.dumps(plan),
                                              blocks=self.blocks, part=part),
                         f"{PART} int, {RESULT} binary")
        drawn: tuple[list[Any], ...] = ([], [], [], [])
        for block in _blocks_of(_collect(done, RESULT), RESULT):
            for into, rows in zip(drawn, block, strict=True):
                into.extend(rows)
        lower, upper, lower_index, upper_index = drawn
        return bounds_result(plan, cols, group_list, (lower, upper, lower_index, upper_index),
                             False)

    def draw(self, mechanism: Mechanism, plan: Any, part: int, groups: list[Any],
             columns: list[str], rng: RandomSource, each_block: EachBlock | None = None,
             pack: Callable[[Any], bytes] | None = None) -> Any:
        """``mechanism``'s release of part ``part`` (0 for a run of one mechanism); with
        ``each_block``, streamed where the mechanism can be (:data:`STREAMED`), each
        block's ``pack`` made in its task if given (:class:`Packing`)."""
        runs = {QUERY.name: self.query, QUANTILES.name: self.quantiles,
                COVERAGE.name: self.coverage}
        if mechanism.name not in runs:
            raise ParameterError(f"the {mechanism.name!r} mechanism has no draw in the "
                                 "executors")
        with drawing_blocks(self.merged.sparkSession, len(self.blocks.edges) - 1,
                            mechanism.name):
            if each_block is not None and mechanism.name == QUERY.name:
                return self.query(plan, part, groups, columns, rng, each_block, pack)
            if each_block is not None and mechanism.name == QUANTILES.name:
                return self.quantiles(plan, part, groups, columns, rng, each_block, pack)
            return runs[mechanism.name](plan, part, groups, columns, rng)


#: the mechanisms whose released blocks a run of one mechanism streams to the driver's
#: sinks (``each_block``); the coverage bounds' and a mixed run's cells are gathered
STREAMED = frozenset({QUERY.name, QUANTILES.name})


def draw_in_executors(df: DataFrame, source_columns: Sequence[str], spec: StatisticsSpec,
                      mechanisms: Sequence[Mechanism], plan: Any, group_names: Sequence[Any],
                      columns: Sequence[str], rng: RandomSource, *, group_by: str | None,
                      groups: Sequence[str] | None, each_block: EachBlock | None = None,
                      pack: Callable[[Any], bytes] | None = None) -> Any:
    """The run's release drawn in the executors (module notes): ``source_columns`` as the
    spec counts them (a mixed spec's repeated), the result of one mechanism or of several
    (:func:`~dprect.core.mixed.draw_parts`), equal for a seed to the driver route's. With
    ``each_block``, a run of one mechanism of :data:`STREAMED` hands each block's result
    (its groups' cells) to it in group order as the blocks reach the driver, and returns
    its result without cells (the run's groups, guarantee and plan); with ``pack``, each
    block's ``pack`` of its result, made in the task that drew it (:class:`Packing`)."""
    cores = default_parallelism(df.sparkSession)
    count = len(group_names)
    kernel_columns = len(spec.columns) + 2 * sum(1 for c in spec.columns if c.squares)
    cells = block_cells(mechanisms, is_connect(df))
    starts = block_starts(count, kernel_columns, cores, cells)
    # a wave of blocks holds about WAVE_BLOCKS blocks of CELLS_PER_BLOCK cells' results
    wave = max(1, WAVE_BLOCKS * CELLS_PER_BLOCK // cells)
    ranges = BlockRanges.of(len(starts), wave, cores)
    # a streamed run's one mechanism reads its blocks' seeds (and names) from the merged
    # rows: drawn now from the run's source, its first draws as on the driver route
    streamed = each_block is not None and len(mechanisms) == 1 \
        and mechanisms[0].name in STREAMED
    listed = listed_blocks(df.sparkSession, [*starts, count], rng,
                           group_names if pack is not None else None) if streamed else None
    merged, kernel, _ = counting_pass(df, source_columns, spec, group_by=group_by,
                                      groups=groups, blocks=starts, cores=cores,
                                      ranges=ranges, listed=listed)
    run = ExecutorDraws(merged, Blocks(kernel, spec, count, starts, len(columns)), ranges,
                        listed=streamed)
    names, cols = list(group_names), list(columns)
    try:
        if len(mechanisms) > 1:
            return draw_parts(plan, mechanisms, rng, lambda i, m, p, stream: run.draw(
                m, p, i, names, cols, stream))
        return run.draw(mechanisms[0], plan, 0, names, cols, rng, each_block, pack)
    finally:
        run.close()


__all__ = ["BLOCKS_PER_CORE", "CELLS_PER_BLOCK", "EXECUTOR_CELLS", "FETCH_BLOCKS",
           "QUERY_BLOCK_FACTOR", "STREAMED", "WAVE_BLOCKS",
           "Blocks", "EachBlock", "ExecutorDraws", "Packing", "block_cells", "block_starts",
           "coverage_block",
           "draw_in_executors", "executor_route", "listed_blocks", "quantiles_first",
           "quantiles_second",
           "query_first", "query_second"]
