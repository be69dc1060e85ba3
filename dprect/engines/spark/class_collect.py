"""Every class of a classes' fit from ONE collect job (issue #24: Spark, one pass for all
classes).

Opening k classes one by one costs, per class, a job counting its positives and its
strategy's first job(s) (``collect``: one job; ``pass``: a sample and a pass), so the Spark
jobs grow with k. Here the k classes share them:

1. one aggregation counts every class's rows (one ``count(CASE …)`` per class, in one job;
   a speed aid inside the driver, never output — as a single fit's count);
2. when the strategy is ``collect``, or ``auto`` and every class's positives together fit
   the driver budget (:func:`joint_bytes`), ONE job ships every listed class's rows at
   once — the rows of :func:`~dprect.engines.spark.shipped.shipped_rows` with the class's
   index as one more column, and the ``error`` policy's flag — and the driver splits them
   by class and encodes each class with the ``collect`` strategy's own code
   (:func:`~dprect.engines.spark.collect.encode_collected`), into one
   :class:`~dprect.engines.numpy_engine.NumpyEngine` per class.

So a classes' fit makes two Spark jobs whatever k (:func:`tag_classes` tags the rows with
no job, :func:`count_classes` is job 1, :func:`collect_classes` job 2). The ``pass``
strategy (and ``auto`` over the budget) shares the same tagging and count, then ONE pass
for every class's first lists (:mod:`dprect.engines.spark.class_pass`);
:func:`dprect.engines.spark.fit.prepare_classes` decides.

**Identical rectangles.** Class i's rows here are the rows whose label equals class i's
value (the same :func:`~dprect.engines.spark.checks.label_equals` text a single fit's
:class:`~dprect.engines.spark.checks.TableChecks` writes; listed values are distinct, so a
row belongs to at most one class and the first matching ``WHEN`` is its only match) and,
under ``drop``, whose features are all finite (the same TableChecks predicate, on the
column "in some class" instead of the label) — exactly the positives of class i's own fit.
Their raw values are shipped as :func:`shipped_rows` ships them (one more column does not
change a value's bits) and encoded, refined and loaded by the same code, in the rows'
shipped order; the engine answers multisets, so the order is immaterial. Hence every
class's engine holds the multisets class i's own ``collect`` fit holds, and with the same
seed each class's rectangle is identical to the numpy engine's
(tests/spark/test_classes_spark.py).

**Driver memory.** The joint table's shipped bytes, its collect overhead
(:func:`~dprect.engines.spark.collect.collect_bytes` of all classes' rows), plus one class's
rows copied out of it while that class is encoded: :func:`joint_bytes`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T  # noqa: N812

from dprect.core.algorithms import run_plan
from dprect.core.classes import label_candidates
from dprect.core.domains import Domain
from dprect.core.errors import InputDataError
from dprect.core.labels import LabelText, check_class_pairs
from dprect.core.planner import Plan
from dprect.core.randomness import RandomSource
from dprect.core.request import FitRequest, InvalidRows
from dprect.core.result import FitResult
from dprect.engines.numpy_engine import NumpyEngine
from dprect.engines.prepared import PreparedRun
from dprect.engines.spark.checks import TableChecks, integral_type, label_equals, label_kind
from dprect.engines.spark.chooser import check_budget
from dprect.engines.spark.collect import collect_bytes, encode_collected
from dprect.engines.spark.pass_kernel import BAD, feature_column
from dprect.engines.spark.shipped import shipped_rows, shipped_widths
from dprect.engines.spark.source import SPARK_ERRORS, spark_message
from dprect.engines.spark.sql import as_double, ident

__all__ = ["ClassTable", "CollectedClass", "collect_classes", "count_classes", "fits_budget",
           "joint_bytes", "label_value_counts", "tag_classes"]


class CollectedClass(PreparedRun):
    """One class's positives, collected and encoded on the driver: :meth:`run` fits them
    (as :meth:`dprect.engines.spark.fit.PreparedFit.run`). ``stats``: the Spark jobs the
    classes made together (diagnostics for tests and benchmarks; never part of a result)."""

    def __init__(self, engine: NumpyEngine, domains: list[Domain], features: list[str],
                 plan: Plan, stats: dict[str, int]) -> None:
        super().__init__()
        self.engine = engine
        self.domains = domains
        self.features = features
        self.plan = plan
        self.stats = stats

    def run(self, *, seed: int | None = None, trace: list[Any] | None = None) -> FitResult:
        """The fit (:func:`dprect.core.algorithms.run_plan`); a seed is for tests only."""
        return run_plan(self.engine, self.domains, self.features, self.plan,
                        RandomSource(seed=seed), trace=trace)


def joint_bytes(counts: Sequence[int], dims: int, widths: Sequence[int]) -> int:
    """Driver bytes of the one collect: :func:`collect_bytes` of every class's rows, plus
    the largest class's shipped rows copied out while it is encoded (module notes)."""
    return collect_bytes(sum(counts), dims, widths) + max(counts, default=0) * sum(widths)


def _column(df: DataFrame, stem: str) -> str:
    """A column name ``df`` does not have (the class index's and its flag's)."""
    taken = set(df.columns)
    name = stem
    while name in taken:
        name = "_" + name
    return name


@dataclass
class ClassTable:
    """The table tagged with each row's class (module notes): ``tagged`` is the table with
    column ``cls`` (the index of the listed class whose value the label equals, −1 for
    none) and ``inside`` (``cls`` ≥ 0); ``joint``: the rows learned from by SOME class —
    in a class and, under ``drop``, every feature finite — and the ``error`` policy's
    problem rows, as one :class:`~dprect.engines.spark.checks.TableChecks`; ``checks``:
    each class's own checks (its single fit's); ``stats``: the Spark jobs the classes
    made together (diagnostics for tests and benchmarks; never part of a result)."""

    tagged: DataFrame
    cls: str
    names: list[str]
    joint: TableChecks
    checks: list[TableChecks]
    stats: dict[str, int] = field(default_factory=dict)


def tag_classes(df: DataFrame, names: list[str], label: str,
                requests: Sequence[FitRequest]) -> ClassTable | None:
    """``df`` tagged with the classes of ``requests`` (one per class, as
    ``FitRequest.for_class`` makes them), or None when two requests name the same label
    value. The schema checks of every class are made here, with no job."""
    checks = [TableChecks(df, names, label, invalid_rows=r.invalid_rows,
                          positive_label=r.positive_label) for r in requests]
    kind = label_kind(df.schema[label].dataType, label)
    # two classes the column's type reads as one, refused naming its kind (schema and list
    # only, before any job)
    label_type = df.schema[label].dataType
    check_class_pairs([r.positive_label for r in requests], kind, label,
                      integral=integral_type(label_type),
                      single=isinstance(label_type, T.FloatType))
    values = [c.positive_label for c in checks]
    if len(set(map(repr, values))) != len(values):
        return None
    cls, inside = _column(df, "_dprect_class"), _column(df, "_dprect_in_class")
    case = " ".join(f"WHEN {label_equals(label, kind, v)} THEN {i}"
                    for i, v in enumerate(values))
    tagged = df.selectExpr("*", f"CASE {case} ELSE -1 END AS {ident(cls)}").selectExpr(
        "*", f"{ident(cls)} >= 0 AS {ident(inside)}")
    # the rows learned from: "in some class" and, under drop, every feature finite — the
    # single fit's own predicate, on the column "in some class" instead of the label
    joint = TableChecks(tagged, names, inside, invalid_rows=requests[0].invalid_rows,
                        positive_label=True)
    return ClassTable(tagged, cls, list(names), joint, checks,
                      {"count_jobs": 0, "collect_jobs": 0, "pass_jobs": 0})


def label_value_counts(df: DataFrame, names: list[str], label: str,
                       invalid_rows: InvalidRows | str | None = None
                       ) -> tuple[dict[str, int], str]:
    """The candidates of a private class selection (docs/privacy.md §18): ONE job
    counting the rows of each label value (numbers as labels compare: doubles, an integer
    type's exact integers), named
    by :func:`~dprect.core.classes.label_candidates` as the numpy engine names them, and
    the label's kind (from the schema). The schema checks of a class's fit are made
    first, with no job (any class's: a label kind reads the text ``1``); under the
    ``error`` ``invalid_rows`` policy, its check over every row then, one job
    (:meth:`~dprect.engines.spark.checks.TableChecks.check_features`) — before the draw
    these counts feed, as the numpy engine's
    (:func:`~dprect.core.reading.check_invalid_rows`)."""
    TableChecks(df, names, label, invalid_rows=invalid_rows,
                positive_label=LabelText("1")).check_features()
    kind = label_kind(df.schema[label].dataType, label)
    if kind == "null":
        return {}, kind
    # numbers counted as they compare: doubles, an integer type's as its exact integers
    value = as_double(label) if kind == "numeric" \
        and not integral_type(df.schema[label].dataType) else ident(label)
    try:
        got = df.selectExpr(f"{value} AS k").groupBy("k").count().collect()
    except SPARK_ERRORS as exc:
        raise InputDataError(f"cannot read the input: {spark_message(exc)}") from None
    return label_candidates(((row["k"], int(row["count"])) for row in got), kind), kind


def count_classes(table: ClassTable, progress: Callable[[str], None] = lambda _: None
                  ) -> list[int]:
    """ONE job: every class's number of rows with its label (each single fit's
    ``count_positives``; a speed and memory aid inside the driver, never output)."""
    k = len(table.checks)
    progress(f"counting the rows of {k} classes (one job)")
    try:
        row = table.tagged.selectExpr(*[
            f"count(CASE WHEN {ident(table.cls)} = {i} THEN 1 END) AS c{i}"
            for i in range(k)]).collect()[0]
    except SPARK_ERRORS as exc:
        raise InputDataError(f"cannot read the input: {spark_message(exc)}") from None
    table.stats["count_jobs"] += 1
    return [int(row[f"c{i}"]) for i in range(k)]


def fits_budget(table: ClassTable, counts: Sequence[int], driver_budget_mb: float | None
                ) -> bool:
    """Whether every class's rows, collected together, fit the driver budget
    (:func:`joint_bytes`; from the schema and the counts, inside the driver)."""
    widths = shipped_widths(table.tagged, table.names)
    return joint_bytes(counts, len(table.names), widths) <= \
        check_budget(driver_budget_mb) * 2**20


def collect_classes(table: ClassTable, domains: list[Domain], plan: Plan,
                    progress: Callable[[str], None] = lambda _: None
                    ) -> list[CollectedClass]:
    """Every class of ``table`` from ONE collect job (module notes); nothing is left in
    Spark."""
    names, cls, joint = table.names, table.cls, table.joint
    stats = table.stats
    try:
        progress(f"collecting every class's rows (one job for {len(table.checks)} classes)")
        got = shipped_rows(table.tagged, [*names, cls], joint.positive, joint.problem).toArrow()
        stats["collect_jobs"] += 1
    except SPARK_ERRORS as exc:
        raise InputDataError(f"cannot read the input: {spark_message(exc)}") from None
    if joint.problem is not None:
        flags = got.column(BAD).to_numpy(zero_copy_only=False).astype(bool)
        if flags.any():
            joint.raise_invalid_feature()
        got = got.drop_columns([BAD])
    index = feature_column(len(names))
    of_class = got.column(index).to_numpy(zero_copy_only=False)
    got = got.drop_columns([index])
    ties = plan.chosen.tie_breaker(domains)
    active = ties if ties.active else None  # as the engine keeps them (SparkEngine)
    out = []
    for i in range(len(table.checks)):
        rows: pa.Table = got.filter(pa.array(of_class == i))
        _, engine = encode_collected(rows, domains, flagged=False, ties=active)
        del rows
        out.append(CollectedClass(engine, domains, list(names), plan, stats))
    del got
    return out
