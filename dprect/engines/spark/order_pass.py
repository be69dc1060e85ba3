"""The ``pass`` strategy: the rounds' order lists gathered by vectorised passes, never a job per
round, with driver memory bounded by a public budget whatever the table's size.

A pass is ONE Spark job: the positive rows' raw feature values go through Spark's Python
workers (``mapInArrow``), where :mod:`dprect.engines.spark.pass_kernel` turns them into
sort values with the core's own code, applies the cuts made so far (row-locally, as
arrays: no SQL predicate grows with the rounds), and keeps, for every (axis, side) order
the pass serves, its best K rows as (row id, key) pairs — a row listed in many orders costs
one id and one key per order, never its d values. The partitions' lists are merged in
Spark (when they could exceed the budget) and then on the driver.

:class:`PassEngine` answers the core's windows and cuts from those lists:

* a cut on order (a, s) at t removes the listed rows beyond t by id — from every list at
  once, since ids are shared within a pass — provided the list *covers* t (every row of
  the remaining set beyond t is listed); otherwise the lists are stale;
* a window of order (a, s) up to rank ``stop`` is answered when the list is complete or at
  least ``stop`` of its rows survive; the first ``stop`` survivors are then the first
  ``stop`` rows of the remaining set (every unlisted remaining row has a key ≥ every
  listed key: the prefix property of the kernel), so the multiset of values is exact;
* otherwise (a short list, stale lists, or an order this pass did not serve) ONE new pass
  serves that order and the orders after it in the schedule, on the rows that survive
  every cut so far.

Which orders a pass serves, their lengths K (from the public plan:
:func:`dprect.engines.spark.prefetch.prefetch_specs`) and the budget change the number of
passes, never an answer. For a plan that never cuts (the composition baseline: no round
has a margin law), ``keys_only`` lists each order's best K keys alone — no row ids, no
positions, no removal by id; an entry then costs :data:`KEY_ENTRY_BYTES` instead of
:data:`ENTRY_BYTES`, so a pass serves about three times as many orders — and a cut is
refused (it cannot come from such a plan). Optional thresholds from a sample of the
positives (the first :data:`SAMPLE_ROWS` Spark returns) keep the shipped lists near K rows
each, and let the JVM drop the rows beyond every order's reach before they cross to Python
(:func:`prefilter`, on the raw values); a threshold that was too tight makes a list
short, which costs a pass, not exactness (a list cut by a threshold is never taken for
complete, and a list found short is gathered again without one). The sample, the size
hint and the budget stay inside the driver (docs/privacy.md §8).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812

from dprect.core.domains import Domain, Side
from dprect.core.errors import ParameterError
from dprect.core.ties import TieBreaker, coarse_range
from dprect.engines.spark import by_value  # noqa: F401  (registers the core's modules)
from dprect.engines.spark import pass_kernel as kernel
from dprect.engines.spark.pass_kernel import PassOrder, PassTask
from dprect.engines.spark.prefetch import PrefixSpec, with_ranks
from dprect.engines.spark.remote import default_parallelism, partition_count
from dprect.engines.spark.session import compiles_huge_methods
from dprect.engines.spark.shipped import shipped_rows
from dprect.engines.spark.sql import as_double, literal
from dprect.engines.spark.strategy import Rows

# executors get the kernel and the objects a task carries (domains, ties: by_value) by
# value: they need numpy and pyarrow, not dprect
cloudpickle.register_pickle_by_value(sys.modules[kernel.__name__])

#: driver bytes per listed entry: the Arrow result (tag, id, two keys, flag: 29 bytes),
#: the driver's merge of it (skipped when Spark merged), the ids' sort and inverse, the
#: sorted keys and positions (measured ≈ 90 at d = 1024: docs/architecture.md)
ENTRY_BYTES = 128
#: driver bytes per listed entry of a keys-only pass: the Arrow result (tag, packed key,
#: flag: 12 bytes), the sorted keys per order (8), the runs' transients: measured ≈ 33
#: (the driver's peak over the fit's start, fixed costs included, per listed entry) at
#: d = 256 by benchmarks/pass_keys.py, against ≈ 141 for ENTRY_BYTES's entries there
KEY_ENTRY_BYTES = 40
#: positives sampled for the thresholds (at most SAMPLE_CELLS values in all: rows are
#: collected as Python objects, ~50 bytes a value), the smallest size hint worth sampling
#: for, and how many times K rows a threshold aims to keep
SAMPLE_ROWS = 10_000
SAMPLE_CELLS = 1 << 20
SAMPLE_SAFETY = 2.0
SAMPLE_MIN_RANK = 16
#: thresholds are sampled for the JVM's prefilter alone (see :func:`pass_engine`; the
#: merge case samples anyway, and then the prefilter applies) when it is expected to keep
#: at most this share of the rows — and only where the JVM compiles huge methods
#: (:func:`~dprect.engines.spark.session.compiles_huge_methods`): the prefiltered stage's
#: generated code passes HotSpot's 8,000-byte limit at about 32 features, and interpreted
#: it ran 4× slower (measured at 1.6·10^7 rows × 32: 21 s against 6 s compiled)
PREFILTER_MAX_SHARE = 0.5
#: passes a window may trigger before the engine gives up (each one at least doubles the
#: short order's length, or drops its threshold: two always suffice)
MAX_PASSES_PER_WINDOW = 3
#: driver bytes per positive row when the partitions' row keys are checked on the driver
#: (:class:`PassRunner`): the keys as received, pooled per bucket, and their sort
KEY_BYTES = 24


@dataclass
class OrderList:
    """One order's listed rows: keys ascending (best first), their compact positions (None
    in a keys-only pass: no cut ever removes a listed row), and ``floor``: every unlisted
    row of the remaining set (as of the pass) has a key ≥ floor (None: the list holds
    every such row — complete)."""

    hi: bool
    keys: np.ndarray
    pos: np.ndarray | None
    floor: int | float | None

    @property
    def complete(self) -> bool:
        return self.floor is None

    def values(self) -> np.ndarray:
        return kernel.order_key(self.keys, self.hi)


def prefilter(task: PassTask, values: Sequence[str] | None = None) -> str | None:
    """SQL on the raw feature values (``values[j]``: axis j's value as a double; None: the
    pass input's ``CAST(_x{j} AS DOUBLE)``): true for the rows beyond some order's
    threshold — a superset of every row the kernel can list, so filtering by it in the
    JVM changes no list (None when an order keeps every row, or has no threshold).

    Order o on axis j with key threshold T keeps rows with κ ≤ T. Integer keys: hi keeps
    r ≥ −T, lo keeps r ≤ T, and r = s·2^b + u with 0 ≤ u < 2^b, so those rows have sort
    value s ≥ S = (−T) >> b, resp. s ≤ S = T >> b (floor shifts); float keys: s ≥ S = −T,
    resp. s ≤ S = T, or on a refined float axis S the first, resp. last, float of the
    coarse bin of −T, resp. T (:func:`~dprect.core.ties.coarse_range`). Every encoding
    is monotone in the raw value x, so s ≥ S exactly when x ≥ e = :meth:`Domain.least_value_from(S)
    <dprect.core.domains.Domain.least_value_from>`, and s ≤ S exactly when x ≤ u =
    ``greatest_value_to(S)`` — the filter compares raw doubles, no sort value is computed
    in SQL. The test is one ``greatest`` of differences x − e and u − x ≥ 0 (not an OR of
    comparisons, which Catalyst's constraint propagation handles badly at high d): a
    difference of doubles is 0 only for equal values and keeps its sign when it
    overflows; a NaN (from ∞ − ∞, or a NaN row) is the greatest value in Spark's order,
    so such rows are kept — a superset still."""
    if not task.orders or any(o.threshold is None for o in task.orders):
        return None
    terms = []
    for o in task.orders:
        t = o.threshold
        assert t is not None
        domain = task.domains[o.axis]
        x = f"CAST({kernel.feature_column(o.axis)} AS DOUBLE)" if values is None \
            else values[o.axis]
        if task.key_is_int(o.axis):
            bits = task.ties.bits[o.axis] if task.ties is not None else 0
            bound: int | float = (-int(t)) >> bits if o.hi else int(t) >> bits
        else:
            bound = -float(t) if o.hi else float(t)
            if task.ties is not None and o.axis in task.ties.floats and task.ties.bits[o.axis]:
                low, high = coarse_range(bound, task.ties.bits[o.axis])  # r_j's coarse bin
                bound = low if o.hi else high
        edge = domain.least_value_from(bound) if o.hi else domain.greatest_value_to(bound)
        if edge is None:
            continue  # no value is beyond this threshold: the order lists nothing
        if math.isinf(edge) and (edge < 0) == o.hi:
            return None  # every value is beyond it: no filter
        terms.append(f"({x} - {literal(edge)})" if o.hi else f"({literal(edge)} - {x})")
    if not terms:
        return "false"
    return f"greatest({', '.join(terms)}) >= 0" if len(terms) > 1 else f"{terms[0]} >= 0"


@dataclass(frozen=True)
class PassSource:
    """What every pass reads: the table, its feature columns, and the positive and
    problem predicates (:func:`~dprect.engines.spark.shipped.shipped_rows`)."""

    data: DataFrame
    names: tuple[str, ...]
    positive: str | None
    problem: str | None

    def rows(self, keep: str | None) -> DataFrame:
        """The pass input (``_id``, ``_x{j}``, optional ``_bad``) of the rows where ``keep``
        (SQL on the table's own columns; None: every row) holds or ``problem`` flags.
        ``keep`` filters the table BEFORE the renaming projection: a filter above it
        makes Catalyst's constraint propagation double its constraint set per renamed
        column (the driver JVM ran out of heap at 1,024 features)."""
        data = self.data
        if keep is not None:
            if self.problem is not None:
                keep = f"(coalesce({self.problem}, false) OR coalesce({keep}, false))"
            data = data.where(keep)
        return shipped_rows(data, self.names, self.positive, self.problem) \
            .selectExpr("*", f"monotonically_increasing_id() AS {kernel.ROW_ID}")


def order_list(order: PassOrder, keys: np.ndarray, pos: np.ndarray | None) -> OrderList:
    """An order's list from its gathered ``keys`` (ascending) and positions: its floor is
    the last key when the list is full (K keys), else the order's threshold (a list cut by
    a threshold is never complete), else None (every remaining row is listed)."""
    if len(keys) >= order.rows:
        floor: int | float | None = keys[-1]
    elif order.threshold is not None:
        floor = order.threshold
    else:
        floor = None
    return OrderList(order.hi, keys, pos, floor)


def merge_partitioning(rows: DataFrame, key_buckets: int, orders: int) -> tuple[int, Column]:
    """(partitions, key) of a pass's merge stage: each order's rows, and each bucket's key
    rows (when the partitions rank their own rows), meet in one task."""
    parallelism = default_parallelism(rows.sparkSession)
    tag = F.col(kernel.ORDER)
    if key_buckets:
        return max(parallelism, key_buckets), \
            F.when(tag == kernel.KEYS, F.col(kernel.ROW_ID)).otherwise(-1 - tag)
    return max(1, min(parallelism, orders)), tag


def run_pass(source: PassSource, task: PassTask, *, merge: bool, filtered: bool = True
             ) -> pa.RecordBatch | pa.Table:
    """One pass: the rows :func:`prefilter` keeps (every row when not ``filtered``: the
    summary rows then count every row learned from), and every flagged row, the
    partitions' lists (and key rows, when the partitions rank their own rows), merged in
    Spark when ``merge``, then on the driver. With ties and no key buckets, the input gets
    the window's ranks (:func:`ranks`). A keys-only task merged in Spark comes back as the
    Arrow table of the merge stage's output, unconcatenated (each order's rows lie
    together within it: no copy of the whole result on the driver)."""
    rows = source.rows(prefilter(task, [as_double(n) for n in source.names])
                       if filtered else None)
    if task.ties is not None and not task.key_buckets:
        rows = ranks(rows, task.domains)
    out = rows.mapInArrow(partial(kernel.partition_lists, task=task), task.schema)
    if merge:  # each order's rows (each bucket's keys) meet in one task
        stages, key = merge_partitioning(rows, task.key_buckets, len(task.orders))
        out = out.repartition(stages, key) \
            .mapInArrow(partial(kernel.merge_lists, task=task), task.schema)
        if task.keys_only:
            return out.toArrow()
        table = out.toArrow().combine_chunks()
        batches = table.to_batches()
        return batches[0] if batches else next(kernel.merge_lists(iter(()), task))
    table = out.toArrow()
    return next(kernel.merge_lists(iter(table.to_batches()), task))


class PassRunner:
    """Runs a fit's passes on ``source``, ranking identical rows the cheap way while it is
    exact: each partition ranks its own rows and the merge stage checks, by row keys, that
    no group of identical rows spans two partitions — then the partitions' ranks are the
    global ones (docs/architecture.md, "Identical rows in a pass"). A pass that finds such
    a group is run again with the window's ranks (:func:`ranks`: one shuffle of the rows),
    and so is every later pass. Either way the lists are the same; which way ran is a
    speed matter inside the driver (:attr:`ranked_by`), never output."""

    def __init__(self, source: PassSource, buckets: int, *, size_hint: int | None = None,
                 budget_bytes: float = 0.0, count_first: bool = False) -> None:
        self.source = source
        self.buckets = max(1, int(buckets))
        self.ranked_by = "partition"
        # the first pass reads every row (no prefilter): its summary counts the rows
        # learned from (PassEngine.learned)
        self._unfiltered = count_first
        # the key rows may come to the driver with the lists (no merge stage) when the
        # positives' keys fit half the budget (the hint: inside the driver, speed only)
        self._keys_fit = size_hint is not None and \
            KEY_BYTES * size_hint <= budget_bytes / 2

    def __call__(self, task: PassTask, merge: bool) -> pa.RecordBatch | pa.Table:
        filtered, self._unfiltered = not self._unfiltered, False
        if task.ties is not None and self.ranked_by == "partition":
            batch = run_pass(self.source, replace(task, key_buckets=self.buckets),
                             merge=merge or not self._keys_fit, filtered=filtered)
            if not (batch.column(kernel.ORDER).to_numpy() == kernel.SPLIT).any():
                return batch
            self.ranked_by = "window"
        return run_pass(self.source, task, merge=merge, filtered=filtered)


def ranks(rows: DataFrame, domains: Sequence[Domain]) -> DataFrame:
    """The pass input with :data:`~dprect.engines.spark.pass_kernel.RANK`: each row's
    occurrence rank among the rows equal to it in every axis's sort value (and in the
    problem flag), for the kernel's refinement. :func:`prefilter` keeps or drops such rows
    together (it is a test of sort values against bounds, written on the raw values), so
    ranking the rows a pass reads ranks them among all positives."""
    keys = [d.sort_sql(kernel.feature_column(j)) for j, d in enumerate(domains)]
    if kernel.BAD in rows.columns:
        keys.append(kernel.BAD)
    return with_ranks(rows, keys, kernel.RANK)


class PassEngine:
    """The engine interface answered from order lists gathered by passes (module notes).

    ``run``: runs one pass for a task and returns the merged batch (:func:`run_pass`, or a
    local stand-in in tests); ``schedule``: the plan's orders in round order with their
    lengths (``rows``; ``columns`` are ignored); ``budget_bytes``: the driver's budget for
    the lists of one pass (orders are served in schedule order until it is spent, at least
    one per pass); ``partitions``: the input's partition count (merge in Spark when the
    partitions' lists could exceed half the budget); ``sample``: the sort values (refined)
    of a sample of the positives per axis, and ``size_hint`` about how many positives
    there are — both optional, speed only. ``keys_only``: the plan never cuts (module
    notes); the lists then hold keys alone, and :meth:`cut` is refused.
    """

    def __init__(self, run: Callable[[PassTask, bool], pa.RecordBatch | pa.Table],
                 domains: Sequence[Domain], ties: TieBreaker | None,
                 schedule: Sequence[PrefixSpec], budget_bytes: float, *,
                 partitions: int = 1, sample: dict[int, np.ndarray] | None = None,
                 size_hint: int | None = None, keys_only: bool = False) -> None:
        self._run = run
        self._domains = tuple(domains)
        self._ties = ties if ties is not None and ties.active else None
        if keys_only and self._ties is not None:
            raise ParameterError("keys-only pass lists are for plans without cuts or ties")
        self.keys_only = keys_only
        self._entry = KEY_ENTRY_BYTES if keys_only else ENTRY_BYTES
        self._schedule = [(s.axis, s.side, int(s.rows)) for s in schedule]
        self._budget = max(0.0, float(budget_bytes))
        self._partitions = max(1, int(partitions))
        self._sample = sample
        self._hint = size_hint
        self._dtypes = [d.sort_dtype for d in self._domains]
        self._cuts: list[tuple[int, bool, int | float]] = []
        self._lists: dict[tuple[int, Side], OrderList] = {}
        self._removed = np.zeros(0, dtype=bool)
        self._stale = True
        self._at = 0  # schedule position of the last pass's first order
        self._scale = 1  # list lengths × this: doubled whenever a list ran short
        # at most this many rows remain (the hint, then the last pass's count of rows
        # surviving the cuts): no list is longer, so a pass may serve more orders (speed
        # only; inside the driver, like the hint)
        self._bound = size_hint
        self.bad = False
        self.passes = 0
        #: the first pass read every row (set by :func:`pass_engine`'s ``count_first``)
        self.counted_all = False

    @property
    def dims(self) -> int:
        return len(self._domains)

    # -- the engine interface ----------------------------------------------------------
    def set_ties(self, ties: TieBreaker) -> None:
        """The passes refine with the ties given at construction; the same ties again are
        a no-op, others an error (the lists already hold refined keys)."""
        if (ties if ties.active else None) != self._ties:
            raise ParameterError("the pass engine's ties are fixed when it is built")

    @property
    def learned(self) -> int | None:
        """After a first pass that read every row (its runner's ``count_first``) and
        before any cut: the rows it counted (its summary rows: every unflagged row learned
        from, exact); else None."""
        if self.passes != 1 or self._cuts or not self.counted_all:
            return None
        return self._bound

    def prepare(self) -> None:
        """The first pass (from the schedule's first order): reports bad rows."""
        if self.passes == 0:
            task, merge = self.first_task()
            self.take(task, self._run(task, merge))

    def window(self, axis: int, side: Side, stop: int, size: int) -> np.ndarray:
        first = max(0, stop - size)
        exact = False
        for _ in range(MAX_PASSES_PER_WINDOW + 1):
            lst = None if self._stale else self._lists.get((axis, side))
            if lst is not None:
                alive = None if lst.pos is None else ~self._removed[lst.pos]
                count = len(lst.keys) if alive is None else int(np.count_nonzero(alive))
                if lst.complete or count >= stop:
                    values = lst.values() if alive is None else lst.values()[alive]
                    return np.asarray(values[first:stop], dtype=self._dtypes[axis])
                exact = True  # short: gather this order again, without a threshold
                self._scale *= 2  # and the next orders' lists longer: cuts ate them
            self._gather(axis, side, need=stop, exact=exact)
        raise RuntimeError("the pass plan could not list enough rows")  # unreachable

    def cut(self, axis: int, side: Side, threshold: int | float) -> None:
        if self.keys_only:
            raise ParameterError("a keys-only pass engine serves a plan that never cuts; "
                                 "it cannot apply a cut")
        hi = side == "hi"
        self._cuts.append((axis, hi, threshold))
        lst = None if self._stale else self._lists.get((axis, side))
        if lst is None or lst.pos is None:
            self._stale = True
            return
        c = -threshold if hi else threshold  # the cut removes the rows with key ≤ c
        if lst.floor is not None and not c < lst.floor:
            self._stale = True  # unlisted rows may be removed too: gather again
            return
        self._removed[lst.pos[:int(np.searchsorted(lst.keys, c, side="right"))]] = True

    # -- passes ------------------------------------------------------------------------
    def _start(self, axis: int, side: Side) -> int:
        for at in (*range(self._at, len(self._schedule)), *range(self._at)):
            a, s, _ = self._schedule[at]
            if a == axis and s == side:
                return at
        return -1

    def _orders(self, axis: int, side: Side, need: int, exact: bool) -> list[PassOrder]:
        """The orders of the next pass: the asked one first, then the schedule's next ones
        while the budget lasts (each order once)."""
        at = self._start(axis, side)
        tail = self._schedule[at:] if at >= 0 else [(axis, side, max(1, need))]
        if at >= 0:
            self._at = at
        room = self._budget / self._entry
        # rows left: the last pass's count less the rows its lists saw cut since (exact
        # while the lists are not stale, an upper bound otherwise)
        bound = None if self._bound is None else \
            self._bound - int(np.count_nonzero(self._removed))
        orders: list[PassOrder] = []
        seen: set[tuple[int, str]] = set()
        for a, s, rows in tail:
            if (a, s) in seen:
                continue
            asked = (a, s) == (axis, side)
            k = rows * self._scale
            if asked:  # whatever the budget: the window must be answerable
                k = max(min(k, int(room)), rows, 2 * need)
            cost = k if bound is None else min(k, max(bound, 1))
            if orders and cost > room:
                break
            seen.add((a, s))
            room -= cost
            orders.append(PassOrder(a, s == "hi", k,
                                    None if asked and exact else self._threshold(a, s, k)))
        return orders

    def _threshold(self, axis: int, side: Side, rows: int) -> int | float | None:
        """A key threshold expected to keep about SAMPLE_SAFETY × ``rows`` remaining rows
        (None when the sample cannot place one)."""
        if self._sample is None or not self._hint:
            return None
        keep = kernel.surviving(self._sample, self._cuts, len(self._sample[axis]))
        keys = kernel.order_key(self._sample[axis][keep], side == "hi")
        m = len(self._sample[axis])
        rank = max(SAMPLE_MIN_RANK, math.ceil(SAMPLE_SAFETY * rows * m / self._hint))
        if m < sample_rows(self.dims) or rank >= len(keys):
            return None
        t = np.partition(keys, rank - 1)[rank - 1]
        return int(t) if keys.dtype.kind == "i" else float(t)

    def first_task(self) -> tuple[PassTask, bool]:
        """The first pass's task and whether its lists are merged in Spark, not run: a
        classes' fit runs every class's first task in ONE job
        (:mod:`dprect.engines.spark.class_pass`) and hands each class its part
        (:meth:`take`). Nothing changes until :meth:`take`."""
        first = self._schedule[0] if self._schedule else (0, "hi", 1)
        return self._next_task(first[0], first[1], need=0, exact=False)

    def _next_task(self, axis: int, side: Side, need: int, exact: bool
                   ) -> tuple[PassTask, bool]:
        orders = self._orders(axis, side, need, exact)
        task = PassTask(self._domains, self._ties, tuple(orders), tuple(self._cuts),
                        keys_only=self.keys_only)
        return task, self._partitions * sum(o.rows for o in orders) * self._entry > \
            self._budget / 2

    def _gather(self, axis: int, side: Side, need: int, exact: bool) -> None:
        task, merge = self._next_task(axis, side, need, exact)
        self.take(task, self._run(task, merge))

    def take(self, task: PassTask, got: pa.RecordBatch | pa.Table) -> None:
        """The lists of a pass run for ``task`` (a task of this engine's, e.g. from
        :meth:`first_task`): ``got`` is :func:`run_pass`'s result for it."""
        orders = task.orders
        self.passes += 1
        if self.keys_only:
            self._take_keys(orders, got)
            return
        batch = got
        assert isinstance(batch, pa.RecordBatch)  # run_pass's result for a task with ids
        tags = batch.column(kernel.ORDER).to_numpy()
        flags = np.asarray(batch.column(kernel.BAD).to_numpy(zero_copy_only=False), dtype=bool)
        self.bad = self.bad or bool(flags[tags == kernel.SUMMARY].any())
        ids = batch.column(kernel.ROW_ID).to_numpy()
        # the rows that survived the cuts (summary rows): cuts only shrink that set
        self._bound = int(ids[tags == kernel.SUMMARY].sum())
        ints = batch.column(kernel.INT_KEY).to_numpy()
        floats = batch.column(kernel.FLOAT_KEY).to_numpy()
        listed = tags >= 0  # order rows (not the summary, key or split rows)
        _, compact = np.unique(ids[listed], return_inverse=True)
        pos = np.full(len(tags), -1, dtype=np.int64)
        pos[listed] = compact
        lists: dict[tuple[int, Side], OrderList] = {}
        listed_rows = dict(kernel.order_rows(tags))
        for i, o in enumerate(orders):
            rows = listed_rows.get(i, np.zeros(0, dtype=np.int64))
            keys = (ints if self._dtypes[o.axis].kind == "i" else floats)[rows]
            order = np.argsort(keys, kind="stable")
            keys, where = keys[order], pos[rows][order]
            lists[(o.axis, "hi" if o.hi else "lo")] = order_list(o, keys, where)
        self._lists = lists
        self._removed = np.zeros(int(compact.max()) + 1 if len(compact) else 0, dtype=bool)
        self._stale = False

    def _take_keys(self, orders: Sequence[PassOrder], got: pa.RecordBatch | pa.Table
                   ) -> None:
        """A keys-only pass's lists: every order's keys, gathered run by run from the
        result's batches (:func:`~dprect.engines.spark.pass_kernel.key_runs`) and sorted;
        no ids, no positions."""
        batches = [got] if isinstance(got, pa.RecordBatch) else got.to_batches()
        pieces: dict[int, list[np.ndarray]] = {}
        remaining = 0
        for batch in batches:
            if batch.num_rows == 0:
                continue
            tags = batch.column(kernel.ORDER).to_numpy()
            packed = batch.column(kernel.KEY).to_numpy()
            summary = tags == kernel.SUMMARY
            flags = np.asarray(batch.column(kernel.BAD).to_numpy(zero_copy_only=False),
                               dtype=bool)
            self.bad = self.bad or bool(flags[summary].any())
            remaining += int(packed[summary].sum())
            for i, run in kernel.key_runs(tags):
                pieces.setdefault(i, []).append(packed[run])
        self._bound = remaining
        lists: dict[tuple[int, Side], OrderList] = {}
        for i, o in enumerate(orders):
            got_keys = pieces.pop(i, [])
            raw = np.concatenate(got_keys) if len(got_keys) > 1 else \
                got_keys[0] if got_keys else np.zeros(0, dtype=np.int64)
            keys = np.sort(kernel.unpack_keys(raw, self._dtypes[o.axis].kind == "i"))
            lists[(o.axis, "hi" if o.hi else "lo")] = order_list(o, keys, None)
        self._lists = lists
        self._removed = np.zeros(0, dtype=bool)
        self._stale = False


def sample_rows(dims: int) -> int:
    """Rows of the thresholds' sample at ``dims`` features: :data:`SAMPLE_ROWS`, fewer when
    that would exceed :data:`SAMPLE_CELLS` values (at least 1,000)."""
    return max(1000, min(SAMPLE_ROWS, SAMPLE_CELLS // max(1, dims)))


def take_pass_sample(rows: DataFrame, domains: Sequence[Domain], ties: TieBreaker | None
                     ) -> dict[int, np.ndarray]:
    """Sort values (refined) per axis of the first :func:`sample_rows` good rows Spark
    returns from the pass input. A ``limit`` collected as rows reads the first partitions
    only (collected as Arrow, Spark would gather every partition's first rows through a
    shuffle: several times slower at d = 128)."""
    if kernel.BAD in rows.columns:
        rows = rows.where(f"NOT {kernel.BAD}")
    names = [kernel.feature_column(j) for j in range(len(domains))]
    got = rows.select(*names).limit(sample_rows(len(names))).collect()
    values = np.array([tuple(r) for r in got], dtype=np.float64).reshape(len(got), len(names))
    batch = pa.RecordBatch.from_arrays([pa.array(values[:, j]) for j in range(len(names))],
                                       names=names)
    every = PassTask(tuple(domains), ties if ties is not None and ties.active else None,
                     tuple(PassOrder(j, False, 1) for j in range(len(domains))))
    return kernel.sort_values(batch, every, None)


def pass_engine(data: DataFrame, names: Sequence[str], domains: Sequence[Domain],
                ties: TieBreaker | None, schedule: Sequence[PrefixSpec], budget_bytes: float,
                *, positive: str | None, problem: str | None, size_hint: int | None,
                keys_only: bool = False, shared_first: bool = False,
                partitions: int | None = None, count_first: bool = False
                ) -> tuple[PassEngine, PassRunner]:
    """The ``pass`` strategy's engine on ``data``, its first pass run (bad rows reported in
    :attr:`PassEngine.bad`), and the runner of its passes (``keys_only``: the plan never
    cuts, :class:`PassEngine`). ``shared_first``: another job runs the first pass (a
    classes' fit, :mod:`dprect.engines.spark.class_pass`, hands it to
    :meth:`PassEngine.take`): no first pass here, and no thresholds' sample — a sample
    job per class would undo the sharing, and thresholds are a speed aid only.
    ``partitions``: ``data``'s partition count when the caller knows it (on a cached
    table with a shuffle, counting them may run a job). ``count_first``: the first pass
    reads every row, without the JVM's prefilter, so that it counts the rows learned from
    (:attr:`PassEngine.learned`: ``auto``'s count without a job of its own)."""
    source = PassSource(data, tuple(names), positive, problem)
    rows = shipped_rows(data, names, positive, problem)
    if partitions is None:
        partitions = partition_count(data)
    sample = None
    # thresholds pay when the partitions' lists would need Spark's merge stage, or when
    # they would let the JVM's prefilter drop most rows (the public lengths against the
    # hint: about SAMPLE_SAFETY × K rows beyond each order's threshold)
    listed = partitions * sum(s.rows for s in schedule) * \
        (KEY_ENTRY_BYTES if keys_only else ENTRY_BYTES)
    if not shared_first and size_hint is not None and size_hint >= 8 * sample_rows(len(names)):
        missed = math.prod(max(0.0, 1.0 - SAMPLE_SAFETY * s.rows / size_hint)
                           for s in schedule)
        prefilter_pays = missed >= 1 - PREFILTER_MAX_SHARE and \
            compiles_huge_methods(data.sparkSession)
        if listed > budget_bytes / 2 or prefilter_pays:
            sample = take_pass_sample(rows, domains, ties)
    runner = PassRunner(source, 2 * default_parallelism(data.sparkSession),
                        size_hint=size_hint, budget_bytes=budget_bytes,
                        count_first=count_first and not shared_first)
    engine = PassEngine(runner, domains, ties, schedule, budget_bytes,
                        partitions=partitions, sample=sample, size_hint=size_hint,
                        keys_only=keys_only)
    engine.counted_all = count_first and not shared_first
    if not shared_first:
        engine.prepare()
    return engine, runner


class PassStrategy:
    """The ``pass`` strategy (:mod:`dprect.engines.spark.strategy`): :func:`pass_engine`'s
    first pass at :meth:`prepare`, later passes when a round needs them, every window and
    cut answered on the driver within ``budget_bytes``; ``keys_only``: the plan never
    cuts (:class:`PassEngine`); ``ready``: an engine whose first pass was already taken
    (a classes' shared first pass, :mod:`dprect.engines.spark.class_pass`) and its runner,
    used instead of building one."""

    def __init__(self, rows: Rows, schedule: Sequence[PrefixSpec], budget_bytes: float,
                 keys_only: bool = False,
                 ready: tuple[PassEngine, PassRunner] | None = None,
                 count_first: bool = False) -> None:
        self.rows = rows
        self.schedule = list(schedule)
        self.budget_bytes = budget_bytes
        self.keys_only = keys_only
        self.count_first = count_first
        self._ready = ready
        self._local: PassEngine | None = None
        self._runner: PassRunner | None = None

    def prepare(self) -> bool:
        r = self.rows
        if self._ready is not None:
            engine, self._runner = self._ready
            engine.prepare()  # a no-op once its first pass is taken
        else:
            engine, self._runner = pass_engine(
                r.data, r.names, r.domains, r.ties, self.schedule, self.budget_bytes,
                positive=r.positive, problem=r.problem, size_hint=r.size_hint,
                keys_only=self.keys_only, count_first=self.count_first)
        for axis, side, t in r.cuts:  # cuts recorded before the pass
            engine.cut(axis, side, t)
        self._local = engine
        self._count()
        return engine.bad

    def learned(self) -> int | None:
        """The rows learned from, counted by a first pass that read every row
        (:attr:`PassEngine.learned`); None otherwise."""
        return None if self._local is None else self._local.learned

    def window(self, axis: int, side: Side, first: int, stop: int) -> np.ndarray:
        assert self._local is not None
        got = self._local.window(axis, side, stop, stop - first)
        self._count()
        return got

    def _count(self) -> None:
        """The stats: passes run, and whether identical rows needed the window's ranks
        (speed only)."""
        assert self._local is not None and self._runner is not None
        self.rows.stats["passes"] = self._local.passes
        if self.rows.ties is not None and self.rows.ties.active:
            self.rows.stats["window_ranks"] = int(self._runner.ranked_by == "window")

    def cut(self, axis: int, side: Side, threshold: int | float) -> None:
        if self._local is not None:
            self._local.cut(axis, side, threshold)

    def close(self) -> None:
        """Nothing is held in Spark."""

