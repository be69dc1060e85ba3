"""Every class's FIRST pass of the ``pass`` strategy in ONE Spark job (issue #24: Spark, one
pass for all classes).

Opened one by one, k classes on the ``pass`` strategy cost k count jobs, k samples and k
first passes over the same rows. Here (:func:`prepare_pass_classes`, after the classes'
shared tagging and count of :mod:`dprect.engines.spark.class_collect`):

1. each class gets its own :class:`~dprect.engines.spark.order_pass.PassEngine` — the one
   its single fit builds (same domains, ties, schedule, keys-only mode, its count as the
   size hint) with its share of the driver budget — and plans its first pass without
   running it (:meth:`~dprect.engines.spark.order_pass.PassEngine.first_task`);
2. ONE pass runs every class's task on the tagged rows (:func:`run_shared`: the rows of
   some listed class, and under ``drop`` every feature finite — the joint predicate —
   plus the ``error`` policy's flagged rows; each row's class index is one more shipped
   column; rows of no listed class never reach the kernel);
   :mod:`dprect.engines.spark.class_kernel` offers class i's rows to class i's orders
   only, by the single pass's own code, and tags its output rows (lists, summary row:
   rows surviving and the bad flag) with i;
3. the driver splits the result by class and hands each engine its part
   (:meth:`~dprect.engines.spark.order_pass.PassEngine.take`), exactly what
   :func:`~dprect.engines.spark.order_pass.run_pass` would have returned for that task.

Later passes (RandMargins' cuts leave a list short) stay per class: the class's engine
runs them with its own runner on the class's own positives, as today. A plan that never
cuts (composition, keys-only lists) usually needs no later pass: k classes then cost ONE
pass in all.

**Identical rectangles.** Class i's part of the shared pass is its single fit's pass
input: its rows are those whose label equals class i's value (listed values are distinct,
so the ``CASE`` matches at most one class) and, under ``drop``, whose features are all
finite; the flagged rows of the ``error`` policy are in every class's part, as every
single fit reads them (and any one refuses the table before any class is fitted, naming
the feature: the single fit's message). The kernel runs the single pass's code on it; with
ties, each class's identical rows are ranked among that class's rows (a window keyed by
the class too, or each partition's own ranks, checked per class). So every class's lists
are its own pass's lists, its later passes and windows are its own engine's, and with the
same seed every class's rectangle is the numpy engine's (tests/spark/test_classes_spark.py).

**Driver memory.** All k classes' lists are held at once (every class is prepared before
any runs), so each class's engine gets 1/k of the driver budget
(:func:`dprect.engines.spark.fit.prepare_classes`): the shared pass's result is at most the
budget in all. No thresholds' sample is taken (a job per class would undo the sharing;
thresholds are a speed aid only), so the JVM prefilter does not apply to the shared pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812

from dprect.core.domains import Domain
from dprect.core.planner import Plan
from dprect.engines.spark import class_kernel
from dprect.engines.spark import pass_kernel as kernel
from dprect.engines.spark.class_collect import ClassTable
from dprect.engines.spark.engine import SparkEngine
from dprect.engines.spark.order_pass import (
    KEY_BYTES,
    PassSource,
    merge_partitioning,
    pass_engine,
)
from dprect.engines.spark.pass_kernel import PassTask
from dprect.engines.spark.prefetch import never_cuts, prefetch_specs, with_ranks
from dprect.engines.spark.remote import partition_count

cloudpickle.register_pickle_by_value(class_kernel)

__all__ = ["prepare_pass_classes", "run_shared"]

#: the ``pass`` strategy's lists are not capped by prefetch's cell budget (as
#: :data:`dprect.engines.spark.fit.UNLIMITED`)
_UNLIMITED = 2**62


def _ranks(rows: DataFrame, domains: Sequence[Domain]) -> DataFrame:
    """The shared pass input with each row's occurrence rank among the rows identical to
    it in every sort value, the problem flag AND the class
    (:func:`~dprect.engines.spark.order_pass.ranks` with the class as one more key)."""
    keys = [d.sort_sql(kernel.feature_column(j)) for j, d in enumerate(domains)]
    if kernel.BAD in rows.columns:
        keys.append(kernel.BAD)
    keys.append(class_kernel.class_column(len(domains)))
    return with_ranks(rows, keys, kernel.RANK)


def _finish(mine: pa.Table, task: PassTask, merged: bool) -> pa.RecordBatch | pa.Table:
    """One class's rows of the shared result as :func:`~dprect.engines.spark.order_pass.
    run_pass` returns them for ``task``: a keys-only merged result as a table, otherwise
    one batch (merged on the driver when Spark did not)."""
    if not merged:
        return next(kernel.merge_lists(iter(mine.to_batches()), task))
    if task.keys_only:
        return mine
    batches = mine.combine_chunks().to_batches()
    return batches[0] if batches else next(kernel.merge_lists(iter(()), task))


def run_shared(source: PassSource, tasks: Sequence[PassTask], *, merge: bool
               ) -> list[pa.RecordBatch | pa.Table]:
    """ONE pass for every class's task (module notes): per class, the result
    :func:`~dprect.engines.spark.order_pass.run_pass` gives for its task alone.
    ``source``'s last column is the class index; its rows are every class's."""
    tasks = tuple(tasks)
    first = tasks[0]
    rows = source.rows(None)  # no thresholds: no prefilter
    if first.ties is not None and not first.key_buckets:
        rows = _ranks(rows, first.domains)
    schema = class_kernel.class_schema(tasks)
    out = rows.mapInArrow(partial(class_kernel.class_partition_lists, tasks=tasks), schema)
    if merge:  # each class's order rows (each class's bucket keys) meet in one task
        stages, key = merge_partitioning(rows, first.key_buckets,
                                         sum(len(t.orders) for t in tasks))
        out = out.repartition(stages, F.col(class_kernel.CLASS), key) \
            .mapInArrow(partial(class_kernel.class_merge_lists, tasks=tasks), schema)
    table = out.toArrow()
    return [_finish(class_kernel.untagged(table, i), t, merge)
            for i, t in enumerate(tasks)]


def _split(got: pa.RecordBatch | pa.Table) -> bool:
    """Whether a merged result says a group of identical rows spans two partitions."""
    return bool((got.column(kernel.ORDER).to_numpy() == kernel.SPLIT).any())


def prepare_pass_classes(table: ClassTable, counts: Sequence[int], domains: list[Domain],
                         plan: Plan, budget_mb: float,
                         progress: Callable[[str], None] = lambda _: None
                         ) -> list[SparkEngine]:
    """One prepared ``pass`` engine per class of ``table`` (its ``checks``' data is the
    table, cached by the caller), every class's first pass run by ONE shared job (module
    notes); ``budget_mb``: each class's share of the driver budget. Under ``error`` a
    flagged row anywhere refuses the table here, naming the feature."""
    names = table.names
    ties = plan.chosen.tie_breaker(domains)
    active = ties if ties.active else None
    cuts_never = never_cuts(plan.chosen)
    keys_only = cuts_never and active is None
    schedule = prefetch_specs(plan.chosen, cell_budget=_UNLIMITED)
    budget = budget_mb * 2**20
    partitions = partition_count(table.checks[0].df)  # the same table for every class
    parts = [pass_engine(c.df, names, domains, active, schedule, budget,
                         positive=c.positive, problem=c.problem, size_hint=n,
                         keys_only=keys_only, shared_first=True, partitions=partitions)
             for c, n in zip(table.checks, counts, strict=True)]
    firsts = [engine.first_task() for engine, _ in parts]
    tasks = [task for task, _ in firsts]
    merge = any(m for _, m in firsts)
    source = PassSource(table.tagged, (*names, table.cls), table.joint.positive,
                        table.joint.problem)
    progress(f"reading every class's first lists (one pass for {len(tasks)} classes)")
    ranked_by = "partition"
    if active is not None:  # partitions rank their rows while exact (PassRunner)
        runner = parts[0][1]
        keys_fit = KEY_BYTES * sum(counts) <= budget * len(counts) / 2
        got = run_shared(source, [replace(t, key_buckets=runner.buckets) for t in tasks],
                         merge=merge or not keys_fit)
        table.stats["pass_jobs"] += 1
        if any(_split(g) for g in got):
            ranked_by = "window"
            got = run_shared(source, tasks, merge=merge)
            table.stats["pass_jobs"] += 1
    else:
        got = run_shared(source, tasks, merge=merge)
        table.stats["pass_jobs"] += 1
    engines = []
    for (engine, runner), task, mine, c in zip(parts, tasks, got, table.checks, strict=True):
        engine.take(task, mine)
        runner.ranked_by = ranked_by  # speed only: the lists are the same either way
        spark = SparkEngine(c.df, domains, names, strategy="pass", cache=False,
                            positive=c.positive, problem=c.problem,
                            on_problem=c.raise_invalid_feature, ties=active,
                            driver_budget_mb=budget_mb, schedule=schedule,
                            never_cuts=cuts_never, ready_pass=(engine, runner))
        spark.prepare()  # no job: the pass is taken; a flagged row refuses here
        engines.append(spark)
    return engines
