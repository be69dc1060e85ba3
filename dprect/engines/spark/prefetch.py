"""The ``prefetch`` strategy: prefixes of every (axis, side) order gathered in one pass.

:func:`prefetch_specs` turns the public plan into the lists to gather; :func:`gather` runs
the pass; :class:`PrefixList` answers the driver's windows from one list while the cuts
are replayed on it.

The pass (:func:`gather`):

1. (optional) a sample of at most :data:`SAMPLE_ROWS` rows — the first ones Spark
   returns, no full scan (or, for a plain Parquet read, the first ones in its files, read
   by the driver: :mod:`dprect.engines.spark.file_sample`) — sets a *threshold* per
   order: its s-th best value, with s
   chosen from the sample size and a hint n of the number of rows so that about
   :data:`SAMPLE_SAFETY` × K rows lie beyond it;
2. one Spark job keeps the rows beyond any order's threshold (and rows that make the
   input invalid, when checked) with a small column-expression filter, and sends them to
   the driver as Arrow batches, each partition at most its share of
   :data:`DIRECT_CELLS`; the driver keeps the top K of every order with numpy
   (:mod:`dprect.engines.spark.topk`). No Python runs on the executors.
3. only if a partition had more rows than its share (a sample that misled the thresholds,
   or a skewed layout): the pass runs again with the top K taken inside Spark's Python
   workers (``mapInArrow``), partition by partition, so driver memory stays bounded
   whatever the data; the driver merges the partitions' lists.

Exactness. Each order is offered only the rows at or beyond its *own* threshold, and the
top K of an order are taken over those rows (:func:`topk.partition_top`). Without ties
every order's predicate is a plain comparison of a value the pass ships (``x <= t`` on
``lo``, ``x >= t`` on ``hi``, x the float64 ``_x{axis}``), and the top-K kernel evaluates
it on that value as Spark does (:func:`topk.beyond`: t is the order's
:attr:`~dprect.engines.spark.topk.Order.beyond`) — the same predicate on the same float64
values, so the same rows, with no column computed for them in Spark (16 ``CASE WHEN``
terms at d = 8 were about two thirds of the pass's query optimisation, s30). With ties
(predicates on sort values, refined values, coarse bins, which the kernel does not see)
the pass ships, beside the values, one bit per order (packed, :func:`topk.own_sql`) from
the order's own predicate, and an order is offered the rows with its bit. That set is
closed upward in the order, so its merged list is a prefix of the order over *all* rows
(the prefix property of :mod:`dprect.engines.spark.topk`), of length K when at least K
rows lie beyond the threshold and shorter otherwise; rows shipped for other orders lie
behind them in its order but are not its next rows, and never enter it (a sample unlike
the rest of the table, e.g. rows stored sorted by a feature, leaves fewer than K beyond a
threshold). The predicate is the one the pass filters on, on the same values — by value,
by sort value (ties), or on a refined axis by sort value or coarse bin (below) — so this
holds on every axis. The bits (ties only) are packed 32 to a bigint (:func:`topk.own_sql`)
for size: one 8-byte field of Spark's rows and one Arrow column for every 32 orders, where
a boolean per order takes a field (8 bytes) and a column each. What guards the pass
against Catalyst's blow-up is not the packing but a switch: the pass is planned and run
with constraint propagation off
(:func:`~dprect.engines.spark.session.constraints_unpropagated`), so
``Project.getAllValidConstraints`` never runs — it copies the constraints a projection
inherits once per alias of an expression they mention: 2^d copies of the pass's filter
for the d features it ships under aliases, and 2^(orders) times as many with a boolean
per order, an alias of the filter's own comparison (s28: the driver out of heap).
A short list is never mistaken for the whole set: a list is ``complete`` only when it had
no threshold and holds fewer than K rows. Step 2's result is used only when no partition
reached its share, i.e. when it holds every kept row. Values of unrefined axes are
compared as float64 in the pass and encoded on the driver with the core's own
:meth:`~dprect.core.domains.Domain.encode`; encodings are non-decreasing, so a prefix by
value is a prefix by sort value.

Ties (:mod:`dprect.core.ties`). When the engine refines axes (b_j > 0), an axis's order is
the lexicographic (s_j, u) order of its refined sort value r_j, and a prefix by the raw
value is *not* a prefix of it (rows of one grid bin are ordered by u, not by value). So the
pass computes, for every refined carried axis, r_j itself in Spark SQL — each row's
occurrence rank among the rows identical to it (:func:`with_ranks`, a window over the rows
the pass keeps: its filter is on sort values then, so it keeps or drops a group of copies
whole), the row's hash h' once per row in its own projection (:func:`refine`), then r_j
from it — and ships it as an
int64 (up to 2^62: never through a float64), or on a float-order axis as the refined
double (:class:`~dprect.core.ties.RefinedFloat`); the top K of that order are taken by r_j,
and the driver uses r_j as is. A refined grid axis's threshold is a *sort value* T (the
sample's threshold encoded): the rows with s_j ≥ T (hi) or s_j ≤ T (lo) are closed upward
in the (s_j, u) order, so the argument above holds unchanged; on a refined float axis the
rows with a value at or beyond the near end of T's coarse bin are
(:func:`~dprect.core.ties.coarse_range`). Cuts are row-local predicates on
the same refined values the lists carry, so the survivors of a list are still the first
rows of the remaining set. Unrefined axes keep their raw float64 lists (ties among their
rows are broken arbitrarily, which changes no multiset of values).

The sample, the hint, the thresholds and the shares therefore change only the speed (how
many rows are shipped, whether step 3 runs, how often a round falls back to a job), never
an answer; none of them leaves the driver.

The count. Asked (``count``: a pending ``auto`` plan's count of the rows learned from,
:mod:`dprect.engines.spark.fit`), step 2's job also counts the rows learned from, with no
job and no plan node of its own. The filter runs in two steps — the rows learned from
(and rows that make the input invalid), then the rows beyond the thresholds — and the
first also holds :data:`LEARNED_MARK`, a condition always true but nondeterministic: the
optimizer merges no filter above into it nor pushes one below it, so that filter node's
row metric (``numOutputRows``; inside whole-stage code generation, one add a row learned
from) is exactly the rows learned from (:func:`filter_rows`), read after step 2's action,
which reads every partition whole (a partition's rows past its share are dropped above
it). The rows counted do not depend on the sample, the hint or the shares (the
thresholds' filter lies above the count), and step 3, if it runs, adds nothing (only step
2's frame is read). Rows that make the input invalid (``problem``, under ``error``) pass
the marked filter too: its metric is the count only where the pass saw none of them (a
fit stops at the first). Counted only without ties (a refined pass ranks identical rows
with a window: a shuffle above the filter, which would leave the metric in a map stage,
whose re-run tasks count twice — :func:`filter_rows` reads the result stage only) and on a
classic session; else the count is a job of its own — except where the fit's label count
(``labels``, a :class:`LabelCount`) is known and drops no labelled row (``error``: the
labelled rows are the rows learned from): the count is then L itself, ties or not.
(Before, an observed metric — ``DataFrame.observe``, a node outside whole-stage code
generation — counted the rows learned from, or the dropped ones beside the label count:
two mechanisms and one more node for the same rows; issue #43.)

A route taken on an estimate (``labels.rows`` None: the fit ran no label count —
:func:`take_sample`'s numbered rows, or the files' sample, and the table's footers,
:func:`sampled_positives`): the estimate sets the thresholds, less a margin
(:data:`ESTIMATE_SLACK`); where it was still above the rows the pass counted (a layout
whose first rows are not like the rest), the pass runs once more with that count as the
hint, so that no threshold is tighter than the label count's would have been (speed
only, like every hint).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812

from dprect.core.domains import Domain, Side
from dprect.core.margins import MarginLaw
from dprect.core.planner import MethodPlan
from dprect.core.ties import HASH_PRIME, TieBreaker, coarse_range, key_sql, rank_offset_sql
from dprect.engines.spark import topk
from dprect.engines.spark.file_sample import estimated_positives
from dprect.engines.spark.remote import default_parallelism, is_connect, partition_count
from dprect.engines.spark.session import constraints_unpropagated
from dprect.engines.spark.sql import all_of, any_of, as_double, literal
from dprect.engines.spark.strategy import Rows, Strategy

# executors get the kernel's code with the task: they need numpy and pyarrow, not dprect
cloudpickle.register_pickle_by_value(sys.modules[topk.__name__])

#: driver-side budget of prefetched cells (rows × carried columns, summed over orders)
PREFETCH_CELL_BUDGET = 16_000_000
#: the chance, summed over rounds, that a round's block N_t exceeds half its prefix
PREFETCH_MISS = 0.05
#: rows sampled to set thresholds, and the smallest hint n worth sampling for
SAMPLE_ROWS = 10_000
PRUNE_MIN_ROWS = 8 * SAMPLE_ROWS
#: a threshold aims at SAMPLE_SAFETY × K rows beyond it, and sits at sample rank ≥ MIN_RANK
SAMPLE_SAFETY = 4
SAMPLE_MIN_RANK = 16
#: driver-side budget of cells (rows × shipped columns) for step 2 of the pass; each of the P
#: partitions may send DIRECT_CELLS / P of them, or step 3 runs instead
DIRECT_CELLS = 8_000_000
#: monotonically_increasing_id: the partition index above bit 33, the row's number below
_ROW_BITS = 33
#: above this many listed cells, the partitions' lists are merged in Spark before the driver
#: (each partition returns up to this many; a shuffle of them is cheap next to the pass)
MERGE_CELLS = 250_000
#: the column holding a row's tie hash h (:func:`refine`)
HASH_COLUMN = "__h"
#: prefix of the columns holding a refined float axis's order key (:func:`refine`)
KEY_COLUMN = "__k"
#: hashed axes per partial sum of h (:func:`refine`): Spark's SQL parser recurses once per
#: ``+``, and one sum over hundreds of axes can overflow its stack
#: (FAILED_TO_PARSE_TOO_COMPLEX), so wider hashes are summed in parts
HASH_CHUNK = 32
#: the column holding a row's occurrence rank among identical rows (:func:`with_ranks`)
RANK_COLUMN = "__i"
#: a condition always true but nondeterministic: the filter of the rows learned from
#: that counts them in the pass (:func:`filter_rows`) is kept apart by it
LEARNED_MARK = "(spark_partition_id() >= 0)"
#: the column holding a sampled row's ``monotonically_increasing_id`` (:func:`take_sample`)
SAMPLE_ID = "__rid"


def with_ranks(frame: DataFrame, keys: Sequence[str], name: str = RANK_COLUMN
               ) -> DataFrame:
    """``frame`` plus column ``name``: each row's occurrence rank among the rows equal
    on every expression of ``keys`` (the sort values of every axis, and any flag that
    separates rows the rounds never see), ``row_number() − 1`` over a window partitioned
    by them — the copies are identical, so the window's order (none) changes no multiset
    of refined rows (:func:`dprect.core.ties.occurrence_ranks` is the numpy twin). One
    shuffle of ``frame``; the partition keys start with their ``xxhash64``, so the
    window's sort is decided by one long in all but colliding rows."""
    cols = [F.expr(k) for k in keys]
    spec = Window.partitionBy(F.xxhash64(*cols), *cols).orderBy(F.lit(0))
    return frame.withColumn(name, (F.row_number().over(spec) - 1).cast("bigint"))


def refine(frame: DataFrame, ties: TieBreaker, sorts: Sequence[str], out: dict[int, str],
           keep: Sequence[str] = (), *, fill: bool = False, barrier: bool = False,
           rank: str | None = None) -> DataFrame:
    """``frame`` projected to its columns ``keep`` and, for every axis j in ``out``, axis
    j's refined sort value r_j (:meth:`TieBreaker.refined_sql`) as column ``out[j]``.

    ``sorts[j]`` names the column of ``frame`` holding axis j's unrefined sort value; it
    must exist for every hashed axis and every axis in ``out``. h is computed once per row,
    in its own projection (:data:`HASH_COLUMN`), so the expressions grow with the number of
    axes, not with its square. ``fill``: a null r_j (only rows with a null feature, which
    the pass reports and never lists) becomes 0, so the column stays an int64 in Arrow.

    ``barrier``: for frames that filters are put on (the cuts of window jobs). Catalyst
    pushes a filter through deterministic projections by inlining their expressions, which
    would copy the whole hash into every cut predicate (d terms per cut: d² for a fit). A
    term ``0 * spark_partition_id()`` — always 0, but nondeterministic to the optimizer —
    makes the hash projection one that filters are not pushed through, so a cut stays
    r_j's few operations on the projected h.

    Over more than :data:`HASH_CHUNK` hashed axes, h is parsed in parts: each part is h's
    sum over a run of at most that many axes, reduced mod P (:meth:`TieBreaker.hash_sql`
    of those axes alone), and h is the parts' sum mod P — the same integer, since
    reducing each part mod P does not change the total mod P (every term < 2^48, so no
    sum overflows).

    ``rank``: the column of ``frame`` holding the row's occurrence rank
    (:func:`with_ranks`); h then becomes h' = (h + g(rank)) mod P
    (:func:`dprect.core.ties.rank_offset`). Without it the rows are refined as if no two
    were identical, so a caller whose rows can repeat must give it.
    """
    needed = sorted({*ties.hashed, *out})
    axes = list(ties.hashed)
    ranked = [] if rank is None else [rank]
    if len(axes) <= HASH_CHUNK:
        h = ties.hash_sql(sorts, rank)
    else:
        runs = [tuple(axes[i:i + HASH_CHUNK]) for i in range(0, len(axes), HASH_CHUNK)]
        parts = [f"{HASH_COLUMN}{k}" for k in range(len(runs))]
        frame = frame.selectExpr(
            *keep, *(sorts[j] for j in needed), *ranked,
            *(f"{TieBreaker(ties.bits, run).hash_sql(sorts)} AS {part}"
              for run, part in zip(runs, parts, strict=True)))
        h = f"pmod({' + '.join(parts)}" + \
            ("" if rank is None else f" + {rank_offset_sql(rank)}") + f", {HASH_PRIME})"
    if barrier:
        h = f"({h} + 0 * spark_partition_id())"
    # a refined float axis's order key once per row, beside h (core.ties.key_sql)
    keys = {j: f"{KEY_COLUMN}{j}" for j in out if j in ties.floats and ties.bits[j]}
    hashed = frame.selectExpr(*keep, *(sorts[j] for j in needed), f"{h} AS {HASH_COLUMN}",
                              *(f"{key_sql(sorts[j])} AS {k}" for j, k in keys.items()))
    values = []
    for j, name in out.items():
        r = ties.refined_sql(j, sorts[j], HASH_COLUMN, keys.get(j))
        values.append(f"{f'coalesce({r}, 0)' if fill else r} AS {name}")
    return hashed.selectExpr(*keep, *values)


@dataclass(frozen=True)
class PrefixSpec:
    """What the ``prefetch`` strategy gathers for one (axis, side) order: the first ``rows``
    rows of that order with the sort values of ``columns`` (which must include ``axis``)."""

    axis: int
    side: Side
    rows: int
    columns: tuple[int, ...]


def law_quantile(law: MarginLaw, miss: float) -> int:
    """The smallest n ≥ Δ with P(N > n) ≤ ``miss`` (public: a function of the law only)."""
    lo = law.size
    if law.tail(lo + 1) <= miss:
        return lo
    hi = 2 * lo
    while law.tail(hi + 1) > miss:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # invariant: tail(lo + 1) > miss >= tail(hi + 1)
        mid = (lo + hi) // 2
        if law.tail(mid + 1) > miss:
            lo = mid
        else:
            hi = mid
    return hi


def never_cuts(plan: MethodPlan) -> bool:
    """Whether running ``plan`` never cuts: the composition baseline (no round has a margin
    law; :func:`dprect.core.algorithms.run_composition` takes the first Δ₀ rows of each
    order of the full positive set). Public: the plan alone decides."""
    return plan.method != "randmargins" and all(r.law is None for r in plan.rounds)


def prefetch_specs(plan: MethodPlan, *, miss: float = PREFETCH_MISS,
                   cell_budget: int = PREFETCH_CELL_BUDGET) -> list[PrefixSpec]:
    """Prefix lengths for the ``prefetch`` strategy, from the public plan alone (never data).

    Round t of the schedule gets a prefix of twice the (1 − miss/R) quantile of its margin
    law (half of it may be eaten by earlier cuts), or exactly Δ₀ for the composition
    baseline, which never cuts. Its list carries the sort values of its own axis and of the
    axes cut before it (RandMargins) — all a driver needs to replay the cuts. Lengths are
    then capped so that the lists hold at most ``cell_budget`` values in all (but never
    fewer than Δ rows). A longer or shorter prefix changes the speed only.
    """
    rounds = plan.rounds
    specs: list[PrefixSpec] = []
    cut_axes: list[int] = []
    cols: tuple[int, ...]
    for r in rounds:
        if r.law is None:  # at least one row: the quantile box (Δ = 0) reads no window,
            rows, cols = max(1, r.ip_size), (r.axis,)  # its histograms are jobs of their own
        else:
            rows = 2 * law_quantile(r.law, miss / max(1, len(rounds)))
            cols = tuple(sorted({r.axis, *cut_axes}))
            cut_axes.append(r.axis)
        specs.append(PrefixSpec(r.axis, r.side, rows, cols))
    cells = sum(s.rows * len(s.columns) for s in specs)
    if cells > cell_budget:
        scale = cell_budget / cells
        specs = [PrefixSpec(s.axis, s.side, max(int(s.rows * scale), r.ip_size), s.columns)
                 for s, r in zip(specs, rounds, strict=True)]
    return specs


class PrefixList:
    """One prefetched order: rows in order from its side, and which survive the cuts."""

    def __init__(self, spec: PrefixSpec, columns: dict[int, np.ndarray], complete: bool,
                 applied: int = 0) -> None:
        self.spec = spec
        self.columns = columns
        self.complete = complete  # the list held every row remaining when it was fetched
        self.mask = np.ones(len(columns[spec.axis]), dtype=bool)
        self.applied = applied  # cuts already reflected in the list / mask
        self.usable = True

    def survivors(self, cuts: list[tuple[int, Side, int | float]]) -> np.ndarray | None:
        """Sort values on the list's axis of the listed rows surviving ``cuts``, in order;
        None when a cut's axis is not carried (the list cannot answer any more)."""
        for axis, side, t in cuts[self.applied:]:
            col = self.columns.get(axis)
            if col is None:
                self.usable = False
                break
            self.mask &= (col < t) if side == "hi" else (col > t)
        self.applied = len(cuts)
        if not self.usable:
            return None
        return self.columns[self.spec.axis][self.mask]


@dataclass
class Gathered:
    """The outcome of :func:`gather`: a list per order, and whether a bad row was seen."""

    lists: dict[tuple[int, Side], PrefixList]
    bad: bool
    pruned: bool
    direct: bool  # step 2 of the pass sufficed (no Python on the executors)
    #: the rows learned from, counted by the pass (``gather``'s ``count``); None: not counted
    learned: int | None = None


def _unknown() -> int | None:
    """No count: the pass did not count."""
    return None


def _ran_rows(ran: list[DataFrame]) -> int | None:
    """The rows learned from, counted by the marked filter of the frame step 2 ran
    (:func:`filter_rows`); None before it ran."""
    return filter_rows(ran[0]) if ran else None


@dataclass(frozen=True)
class LabelCount:
    """The fit's label count, for the pass's count of the rows learned from (module
    notes, "The count"): ``rows``, the exact number of rows with the positive label — a
    job over the same table before the pass
    (:meth:`~dprect.engines.spark.checks.TableChecks.count_positives`), or None: the fit
    ran none (its route taken on an estimate) — and ``dropped`` (SQL text), which of those
    rows are not learned from (None: every one is;
    :meth:`~dprect.engines.spark.checks.TableChecks.label_count` builds it from the same
    predicates as the rows learned from)."""

    rows: int | None
    dropped: str | None = None

    @property
    def learned(self) -> int | None:
        """The rows learned from where the label count alone gives them: L itself when it
        is known and drops no labelled row; else None (the pass counts them)."""
        return self.rows if self.dropped is None else None


def _given(rows: int) -> int | None:
    """A count known before the pass (:attr:`LabelCount.learned`)."""
    return rows


def filter_rows(frame: DataFrame, mark: str = LEARNED_MARK) -> int | None:
    """After an action on ``frame``: the rows that passed the one filter of its executed
    plan whose condition holds ``mark`` (its ``numOutputRows`` metric), or None when no
    single such filter ran (another plan shape, Spark Connect: the count is then a job).

    The filter is the rows learned from (``positive AND mark``, :func:`gather`): ``mark``
    is always true but nondeterministic, so the optimizer neither merges the filters above
    it into it nor pushes them below it (a deterministic filter under it, a read's own,
    may take its deterministic conjuncts: the rows out of the node are the same), and its
    count is the table's rows learned from. Exact: only a node of the action's result
    stage is read (the plan is walked down to its exchanges, not below: :func:`gather`
    uses it only without ties, whose window would put a shuffle above it; a shuffle of
    the table's own lies below it, where the optimizer may push those conjuncts), and
    Spark applies a result task's metric updates once per partition, retried or
    speculative tasks included; inside whole-stage code generation it costs one add a
    row that passes."""
    if is_connect(frame):
        return None
    needle = mark.lower()
    found: list[int] = []
    stack = [frame._jdf.queryExecution().executedPlan()]
    while stack:  # the result stage only: never below an exchange (a map stage)
        node = stack.pop()
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            stack.append(node.executedPlan())
            continue
        if name == "ResultQueryStageExec":
            stack.append(node.plan())
            continue
        if "Exchange" in name or name.endswith("QueryStageExec"):
            continue
        if name == "FilterExec" and needle in node.condition().sql().lower():
            found.append(int(node.metrics().apply("numOutputRows").value()))
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return found[0] if len(found) == 1 else None


def thresholds(sample: dict[int, np.ndarray], specs: Sequence[PrefixSpec],
               hint: int) -> list[float | None]:
    """Per spec, the value beyond which about SAMPLE_SAFETY × K of ``hint`` rows should
    lie (the sample's s-th best, s = max(MIN_RANK, ⌈safety · K · m / hint⌉)); None when the
    sample cannot place it (then every row is offered to that order)."""
    out: list[float | None] = []
    for s in specs:
        x = sample[s.axis]
        m = len(x)
        rank = max(SAMPLE_MIN_RANK, math.ceil(SAMPLE_SAFETY * s.rows * m / max(hint, 1)))
        if m < SAMPLE_ROWS or rank >= m:
            out.append(None)
        elif s.side == "lo":
            out.append(float(np.partition(x, rank - 1)[rank - 1]))
        else:
            out.append(float(np.partition(x, m - rank)[m - rank]))
    return out


def take_sample(data: DataFrame, value: dict[int, str], specs: Sequence[PrefixSpec], *,
                positive: str | None = None, ids: list[np.ndarray] | None = None
                ) -> dict[int, np.ndarray]:
    """Step 1's job: up to :data:`SAMPLE_ROWS` rows of ``positive`` — the first ones Spark
    returns (a ``limit``: it reads the first partition, more only if that one has too few)
    — with the values of every column the specs carry. ``ids``: also each sampled row's
    ``monotonically_increasing_id`` among ``data``'s rows (numbered before the filter:
    how far into its partition the sample read), appended as one array, for
    :func:`sampled_positives`."""
    carried = sorted({c for s in specs for c in s.columns})
    numbered = data if ids is None else data.withColumn(SAMPLE_ID,
                                                        F.monotonically_increasing_id())
    rows = numbered if positive is None else numbered.where(positive)
    extra = [] if ids is None else [SAMPLE_ID]
    got = rows.selectExpr(*[value[c] for c in carried], *extra).limit(SAMPLE_ROWS).collect()
    if ids is not None:
        ids.append(np.array([r[-1] for r in got], dtype=np.int64))
        got = [r[:-1] for r in got]
    arr = np.array([tuple(r) for r in got], dtype=np.float64).reshape(len(got), len(carried))
    return {c: arr[:, i] for i, c in enumerate(carried)}


def sampled_positives(ids: np.ndarray, rows: int) -> int:
    """About how many of a table's ``rows`` rows the sample's filter selects, from the
    sampled rows' ids (:func:`take_sample`): all of them, exactly, when the sample is
    short of :data:`SAMPLE_ROWS` (the ``limit`` then read every partition); else ``rows``
    × the sample's share of the rows it read — in each partition it reached, up to its
    last sampled row. A speed aid inside the driver (the route, the method guessed, the
    thresholds' hint: :func:`~dprect.engines.spark.fit.prepare_fit`): a layout whose
    first rows are not like the rest misleads it, and that changes the speed only."""
    if len(ids) < SAMPLE_ROWS:
        return len(ids)
    parts = ids >> _ROW_BITS
    last = np.zeros(int(parts.max()) + 1, dtype=np.int64)
    np.maximum.at(last, parts, (ids & ((1 << _ROW_BITS) - 1)) + 1)
    return estimated_positives(len(ids), int(last.sum()), rows, SAMPLE_ROWS)


def gather(data: DataFrame, value: dict[int, str], domains: Sequence[Domain],
           specs: Sequence[PrefixSpec], *, positive: str | None = None,
           problem: str | None = None, size_hint: int | None = None,
           sample: dict[int, np.ndarray] | None = None,
           partitions: int | None = None, ties: TieBreaker | None = None,
           sort: dict[int, str] | None = None, count: bool = False,
           labels: LabelCount | None = None) -> Gathered:
    """Run the pass over ``data`` (see the module notes) and build the lists.

    Expressions are Spark SQL text (:mod:`dprect.engines.spark.sql`). ``value[c]``: feature c as a
    double; ``positive``: the rows to learn from (None: every row); ``problem``: rows that
    make the input invalid (reported, never listed); ``size_hint``: about how many positive
    rows there are (None: no thresholds); ``sample``: :func:`take_sample`'s result, taken
    here when needed and not given; ``partitions``: ``data``'s partition count, if known.
    ``ties``: the engine's refinement (None or inactive: none), with ``sort[j]`` axis j's
    sort-value SQL (:meth:`Domain.sort_sql <dprect.core.domains.Domain.sort_sql>`) for every
    axis; the lists then carry refined sort values on the refined axes (module notes).
    ``count``: also count the rows learned from (:attr:`Gathered.learned`; None when it
    could not; ``labels``: the fit's label count, which may give it: module notes, "The
    count").
    """
    carried = sorted({c for s in specs for c in s.columns})
    if ties is not None and not ties.active:
        ties = None
    if ties is not None and sort is None:
        raise ValueError("refined lists need every axis's sort-value SQL")
    refined = [c for c in carried if ties is not None and ties.bits[c]]
    # refined grid axes carry int64 values, refined float axes doubles (core.ties)
    integers = [c for c in refined if ties is not None and c not in ties.floats]
    named = [(value[c], topk.value_column(c)) for c in carried if c not in refined]
    cuts: list[float | None] = [None] * len(specs)
    if size_hint is not None and size_hint >= PRUNE_MIN_ROWS:
        if sample is None:
            sample = take_sample(data, value, specs, positive=positive)
        cuts = thresholds(sample, specs, size_hint)
    bounds = [t for t in cuts if t is not None]
    pruned = len(bounds) == len(cuts)
    # the kept rows: problem OR (positive AND beyond), filtered in two steps — the rows
    # learned from (with the problem rows), then beyond the thresholds — so that the
    # count, when asked, is the first filter's own (module notes, "The count")
    first = [] if positive is None else [positive]
    own = [] if not pruned else [_beyond(s, t, value, domains, sort, refined, ties)
                                 for s, t in zip(specs, bounds, strict=True)]
    then = [any_of(own)] if own else []
    # each order is offered only the rows beyond its own threshold (module notes): without
    # ties every predicate compares a shipped value, and the kernel evaluates it
    # (topk.beyond); else the pass ships the predicates as packed bits
    plain = ties is None and pruned
    if not plain:
        named += topk.own_sql(own)
    if problem is not None:
        first = [any_of([problem, all_of(first)])] if first else []
        then = [any_of([problem, *then])] if then else []
        named.insert(0, (f"coalesce({problem}, false)", topk.BAD))
    cols = [f"{expr} AS {name}" for expr, name in named]
    learned: Callable[[], int | None] = _unknown
    ran: list[DataFrame] = []  # the frame step 2's action ran (its filters' metrics)
    marked = False  # the first filter counts the rows learned from (filter_rows)
    if count and labels is not None and labels.learned is not None:
        learned = partial(_given, labels.learned)  # L itself: every labelled row learned from
    elif count and ties is None and not is_connect(data):
        first = [all_of([*first, LEARNED_MARK])]
        learned = partial(_ran_rows, ran)
        marked = True
    rows = data.where(all_of(first)) if first else data
    rows = rows.where(all_of(then)) if then else rows
    if ties is None:
        passed = rows.selectExpr(*cols)
    else:  # the hash once per row, then r_j of every refined carried axis (module notes)
        assert sort is not None
        # ranks among identical rows: the filter above keeps or drops a group of them
        # whole (every predicate of it is on sort values: _beyond), so ranking the kept
        # rows ranks them among all positives; problem rows rank apart (_bad)
        sorts = [f"_s{j}" for j in range(len(domains))]
        staged = with_ranks(rows.selectExpr(*cols, *(f"{sort[j]} AS {sorts[j]}"
                                                     for j in range(len(domains)))),
                            [*sorts, *([topk.BAD] if problem is not None else [])])
        passed = refine(staged, ties, sorts, {c: topk.value_column(c) for c in refined},
                        [name for _, name in named], fill=True, rank=RANK_COLUMN)
    orders = [topk.Order(s.axis, s.side == "hi", s.rows, s.columns,
                         beyond=t if plain else None) for s, t in zip(specs, cuts, strict=True)]
    if partitions is None:
        partitions = partition_count(data)
    # the pass's filter mentions every shipped feature: planned without constraint
    # propagation, which would copy it 2^d times (constraints_unpropagated)
    with constraints_unpropagated(data.sparkSession):
        table = _collect_within_shares(passed, partitions, DIRECT_CELLS, ran=ran)
        direct = table is not None
        if table is not None:
            final = next(topk.partition_top(iter(table.to_batches()), orders, carried,
                                            integers))
        else:
            final = _top_in_workers(passed, orders, carried, integers,
                                    merge=sum(s.rows * len(s.columns) for s in specs)
                                    > MERGE_CELLS)
    tags = final.column(topk.ORDER).to_numpy()
    bad = bool(final.column(topk.BAD).to_numpy(zero_copy_only=False)[tags == topk.SUMMARY]
               .any())
    values = {c: final.column(topk.value_column(c)).to_numpy(zero_copy_only=False)
              for c in carried}
    lists: dict[tuple[int, Side], PrefixList] = {}
    for i, s in enumerate(specs):
        idx = np.flatnonzero(tags == i)
        encoded = {c: values[c][idx] if c in refined else domains[c].encode(values[c][idx])
                   for c in s.columns}
        order = np.argsort(encoded[s.axis], kind="stable")
        if s.side == "hi":
            order = order[::-1]
        lists[(s.axis, s.side)] = PrefixList(
            s, {c: v[order] for c, v in encoded.items()},
            complete=not pruned and len(idx) < s.rows)
    # problem rows pass the marked filter too: its count only where the pass saw none
    return Gathered(lists, bad, pruned, direct,
                    None if marked and bad and problem is not None else learned())


def _beyond(spec: PrefixSpec, t: float, value: dict[int, str], domains: Sequence[Domain],
            sort: dict[int, str] | None, refined: Sequence[int],
            ties: TieBreaker | None = None) -> str:
    """The rows at or beyond threshold ``t`` (a raw value from the sample) in ``spec``'s
    order: by value, or on a refined axis — and on every axis when the engine has ties,
    so that rows identical in sort values are kept or dropped together — by sort value
    (closed upward in (s_j, u), and in the value order); on
    a refined float axis by value beyond the end of ``t``'s coarse bin (every row whose
    refined value can be at or beyond a refined value of that bin)."""
    op = "<=" if spec.side == "lo" else ">="
    if spec.axis not in refined and ties is None:
        return f"{value[spec.axis]} {op} {literal(t)}"
    assert sort is not None
    if math.isnan(t):  # only from rows the pass reports as invalid: prune nothing
        return "true"
    if spec.axis not in refined:  # with ties, by sort value: duplicates stay together
        s = domains[spec.axis].encode(np.array([t], dtype=np.float64))[0]
        bound = int(s) if np.asarray(s).dtype.kind == "i" else float(s)
        return f"{sort[spec.axis]} {op} {literal(bound)}"
    if ties is not None and spec.axis in ties.floats:
        low, high = coarse_range(float(domains[spec.axis].encode(np.array([t]))[0]),
                                 ties.bits[spec.axis])
        return f"{value[spec.axis]} {op} {literal(low if spec.side == 'hi' else high)}"
    bound = int(domains[spec.axis].encode(np.array([t], dtype=np.float64))[0])
    return f"{sort[spec.axis]} {op} {literal(bound)}"


def _collect_within_shares(passed: DataFrame, partitions: int, cells: int, *,
                           ran: list[DataFrame] | None = None) -> pa.Table | None:
    """Step 2: every row of ``passed`` as one Arrow table, or None when one of its
    ``partitions`` has more than its share of ``cells`` (rows past the share are never
    shipped). ``ran``: the frame whose action ran is appended to it (every partition
    read whole either way: its filters' metrics count every row, :func:`filter_rows`).

    A row's number within its partition is the low bits of ``monotonically_increasing_id``,
    evaluated after the filter that made ``passed``; rows numbered up to the share pass, so a
    partition returning share + 1 rows may have had more.
    """
    share = max(1, cells // ((len(passed.columns) + 1) * max(1, partitions)))
    frame = (passed.selectExpr("*", f"monotonically_increasing_id() AS {topk.ROW_ID}")
             .where(f"({topk.ROW_ID} & {(1 << _ROW_BITS) - 1}) <= {share}"))
    table = frame.toArrow()
    if ran is not None:
        ran.append(frame)
    ids = table.column(topk.ROW_ID).to_numpy()
    if len(ids) and np.unique(ids >> _ROW_BITS, return_counts=True)[1].max() > share:
        return None
    return table


def _top_in_workers(passed: DataFrame, orders: list[topk.Order], carried: list[int],
                    integers: list[int], merge: bool) -> pa.RecordBatch:
    """Step 3: the top K of every order per partition in Spark's Python workers, then
    (``merge``: when lists are long) once more per order in Spark, then on the driver.
    ``integers``: the carried columns that are int64 (refined sort values)."""
    schema = topk.output_schema(carried, integers)
    out = passed.mapInArrow(partial(topk.partition_top, orders=orders, carried=carried,
                                    integers=integers), schema)
    if merge:
        parallelism = default_parallelism(passed.sparkSession)
        out = out.repartition(max(1, min(parallelism, len(orders))), topk.ORDER).mapInArrow(
            partial(topk.merge_top, orders=orders, carried=carried, integers=integers),
            schema)
    table = out.toArrow()
    return next(topk.merge_top(iter(table.to_batches()), orders, carried, integers))


#: an estimated hint (the fit counted no labels first) is divided by this before it sets
#: thresholds: the sample's estimate errs by about 1% on a table whose first rows are
#: like the rest, so the thresholds are then no tighter than the exact count's
ESTIMATE_SLACK = 1.1


def _misled(got: Gathered, hint: int | None) -> bool:
    """Whether a pruned pass's thresholds came from a hint above the rows it counted:
    tighter than the count would have set (an estimate misled by the table's layout)."""
    return (got.pruned and got.learned is not None and hint is not None
            and hint > got.learned)


class PrefetchStrategy:
    """The ``prefetch`` strategy (:mod:`dprect.engines.spark.strategy`): :func:`gather`'s
    one pass at :meth:`prepare`; a round is answered from its order's list when at least
    ``stop`` listed rows survive the cuts (or the list held every remaining row), else by
    ``fallback`` (a :class:`~dprect.engines.spark.rounds.RoundsStrategy`: one job).
    ``sample`` and ``partitions``: taken beforehand (the engine's ``presample``; None: by
    the pass when it needs them). ``count``: the pass also counts the rows learned from
    (:meth:`learned`, when it could: module notes, "The count"; ``labels``: the fit's
    label count, which may give it)."""

    def __init__(self, rows: Rows, specs: Sequence[PrefixSpec], fallback: Strategy, *,
                 sample: dict[int, np.ndarray] | None = None,
                 partitions: int | None = None, count: bool = False,
                 labels: LabelCount | None = None) -> None:
        self.rows = rows
        self.specs = list(specs)
        self.fallback = fallback
        self.sample = sample
        self.partitions = partitions
        self.count = count
        self.labels = labels
        self.lists: dict[tuple[int, Side], PrefixList] | None = None
        self._learned: int | None = None

    def values(self) -> dict[int, str]:
        """Each feature as a double (SQL text)."""
        return {j: as_double(n) for j, n in enumerate(self.rows.names)}

    def prepare(self) -> bool:
        r = self.rows
        hint = r.size_hint
        estimated = self.labels is not None and self.labels.rows is None
        if estimated and hint is not None:  # an estimate: thresholds a margin looser
            hint = math.floor(hint / ESTIMATE_SLACK)
        run = partial(gather, r.data, self.values(), r.domains, self.specs,
                      positive=r.positive, problem=r.problem, sample=self.sample,
                      partitions=self.partitions, ties=r.ties, sort=r.sorts)
        got = run(size_hint=hint, count=self.count, labels=self.labels)
        r.stats["prefetch_jobs"] += 1
        if estimated and _misled(got, hint):
            # the thresholds came from an estimate above the rows the pass counted:
            # once more with the count as the hint, so that no threshold is tighter
            # than the label count's would have been
            assert got.learned is not None
            again = run(size_hint=got.learned)
            r.stats["prefetch_jobs"] += 1
            got = Gathered(again.lists, got.bad or again.bad, again.pruned, again.direct,
                           got.learned)
        r.stats["pruned"] = int(got.pruned)
        r.stats["direct"] = int(got.direct)
        self.lists = got.lists
        self._learned = got.learned
        return got.bad

    def learned(self) -> int | None:
        """The rows learned from, counted by the pass (``count``); None: not counted."""
        return self._learned

    def window(self, axis: int, side: Side, first: int, stop: int) -> np.ndarray:
        assert self.lists is not None
        pre = self.lists.get((axis, side))
        if pre is not None and pre.usable:
            values = pre.survivors(self.rows.cuts)
            if values is not None and (len(values) >= stop or pre.complete):
                return np.array(values[first:stop], dtype=self.rows.dtypes[axis])
        self.rows.stats["fallbacks"] += 1
        return self.fallback.window(axis, side, first, stop)

    def cut(self, axis: int, side: Side, threshold: int | float) -> None:
        """Nothing to do: the lists read the recorded cuts as they answer."""

    def close(self) -> None:
        self.fallback.close()

