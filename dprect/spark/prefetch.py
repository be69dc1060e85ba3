"""The ``prefetch`` plan: prefixes of every (axis, side) order gathered in one pass.

:func:`prefetch_specs` turns the public plan into the lists to gather; :func:`gather` runs
the pass; :class:`PrefixList` answers the driver's windows from one list while the cuts
are replayed on it.

The pass (:func:`gather`):

1. (optional) a sample of at most :data:`SAMPLE_ROWS` rows — the first ones Spark
   returns, no full scan — sets a *threshold* per order: its s-th best value, with s
   chosen from the sample size and a hint n of the number of rows so that about
   :data:`SAMPLE_SAFETY` × K rows lie beyond it;
2. one Spark job: rows beyond any order's threshold (and rows that make the input
   invalid, when checked) go to Spark's Python workers, which keep the top K of every order
   with numpy (:mod:`dprect.spark.topk`); the driver merges the partitions' lists.

Exactness. Every row strictly better than an order's threshold is offered to that order,
so its merged list is a prefix of the order over *all* rows (the prefix property of
:mod:`dprect.spark.topk`), of length K when at least K rows lie beyond the threshold and
shorter otherwise. A short list is never mistaken for the whole set: a list is
``complete`` only when it had no threshold and holds fewer than K rows. Values are
compared as float64 in the pass and encoded on the driver with the core's own
:meth:`~dprect.domains.Domain.encode`; encodings are non-decreasing, so a prefix by value
is a prefix by sort value. The sample, the hint and the thresholds therefore change only
the speed (how many rows cross to Python, how often a round falls back to a job), never
an answer; none of them leaves the driver.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial, reduce

import numpy as np
from pyspark import cloudpickle
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812

from dprect.domains import Domain, Side
from dprect.margins import MarginLaw
from dprect.planner import MethodPlan
from dprect.spark import topk

# executors get the kernel's code with the task: they need numpy and pyarrow, not dprect
cloudpickle.register_pickle_by_value(sys.modules[topk.__name__])

#: driver-side budget of prefetched cells (rows × carried columns, summed over orders)
PREFETCH_CELL_BUDGET = 16_000_000
#: the chance, summed over rounds, that a round's block N_t exceeds half its prefix
PREFETCH_MISS = 0.05
#: rows sampled to set thresholds, and the smallest hint n worth sampling for
SAMPLE_ROWS = 20_000
PRUNE_MIN_ROWS = 8 * SAMPLE_ROWS
#: a threshold aims at SAMPLE_SAFETY × K rows beyond it, and sits at sample rank ≥ MIN_RANK
SAMPLE_SAFETY = 4
SAMPLE_MIN_RANK = 32
#: above this many listed cells, the partitions' lists are merged in Spark before the driver
#: (each partition returns up to this many; a shuffle of them is cheap next to the pass)
MERGE_CELLS = 250_000


@dataclass(frozen=True)
class PrefixSpec:
    """What the ``prefetch`` plan gathers for one (axis, side) order: the first ``rows``
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


def prefetch_specs(plan: MethodPlan, dims: int, *, miss: float = PREFETCH_MISS,
                   cell_budget: int = PREFETCH_CELL_BUDGET) -> list[PrefixSpec]:
    """Prefix lengths for the ``prefetch`` plan, from the public plan alone (never data).

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
    for r in rounds:
        if r.law is None:
            rows, cols = r.ip_size, (r.axis,)
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


def gather(data: DataFrame, value: dict[int, Column], domains: Sequence[Domain],
           specs: Sequence[PrefixSpec], *, positive: Column | None = None,
           problem: Column | None = None, size_hint: int | None = None) -> Gathered:
    """Run the pass over ``data`` (see the module notes) and build the lists.

    ``value[c]``: feature c as a double column; ``positive``: the rows to learn from (None:
    every row); ``problem``: rows that make the input invalid (reported, never listed);
    ``size_hint``: about how many positive rows there are (None: no sample, no pruning).
    """
    carried = sorted({c for s in specs for c in s.columns})
    rows = data if positive is None else data.where(positive)
    cuts: list[float | None] = [None] * len(specs)
    if size_hint is not None and size_hint >= PRUNE_MIN_ROWS:
        picked = rows.select(*[value[c].alias(topk.value_column(c)) for c in carried])
        sample = picked.limit(SAMPLE_ROWS).collect()
        arr = np.array([tuple(r) for r in sample], dtype=np.float64).reshape(
            len(sample), len(carried))
        cuts = thresholds({c: arr[:, i] for i, c in enumerate(carried)}, specs, size_hint)
    pruned = all(t is not None for t in cuts)
    keep = positive
    if pruned:
        beyond = reduce(lambda a, b: a | b, [
            (value[s.axis] <= F.lit(t)) if s.side == "lo" else (value[s.axis] >= F.lit(t))
            for s, t in zip(specs, cuts, strict=True)])
        keep = beyond if keep is None else keep & beyond
    cols = [value[c].alias(topk.value_column(c)) for c in carried]
    if problem is not None:
        keep = problem if keep is None else problem | keep
        cols.insert(0, F.coalesce(problem, F.lit(False)).alias(topk.BAD))
    passed = data if keep is None else data.where(keep)
    orders = [topk.Order(s.axis, s.side == "hi", s.rows, s.columns) for s in specs]
    schema = topk.output_schema(carried)
    out = passed.select(*cols).mapInArrow(
        partial(topk.partition_top, orders=orders, carried=carried), schema)
    if sum(s.rows * len(s.columns) for s in specs) > MERGE_CELLS:
        parallelism = data.sparkSession.sparkContext.defaultParallelism
        out = out.repartition(max(1, min(parallelism, len(orders))), topk.ORDER).mapInArrow(
            partial(topk.merge_top, orders=orders, carried=carried), schema)
    table = out.toArrow()
    final = next(topk.merge_top(iter(table.to_batches()), orders, carried))
    tags = final.column(topk.ORDER).to_numpy()
    bad = bool(final.column(topk.BAD).to_numpy(zero_copy_only=False)[tags == topk.SUMMARY]
               .any())
    values = {c: final.column(topk.value_column(c)).to_numpy(zero_copy_only=False)
              for c in carried}
    lists: dict[tuple[int, Side], PrefixList] = {}
    for i, s in enumerate(specs):
        idx = np.flatnonzero(tags == i)
        encoded = {c: domains[c].encode(values[c][idx]) for c in s.columns}
        order = np.argsort(encoded[s.axis], kind="stable")
        if s.side == "hi":
            order = order[::-1]
        lists[(s.axis, s.side)] = PrefixList(
            s, {c: v[order] for c, v in encoded.items()},
            complete=not pruned and len(idx) < s.rows)
    return Gathered(lists, bad, pruned)
