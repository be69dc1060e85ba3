"""One rectangle per class on Spark: the input read ONCE for every class.

:func:`open_classes` is the Spark route's form of opening k classes for the classes' fit
(:mod:`dprect.app.classes_flow`): one session, one read of the source
(:func:`~dprect.engines.spark.source.read_source`), the rows kept in Spark's cache, then
each class prepared on that one cached DataFrame (:func:`~dprect.engines.spark.fit.
prepare_fit` with the class as the positive label: its schema checks, its positives'
count and its engine's first pass). So the input file is scanned once, not k times; each
class's engine still makes its own pass(es) over the cached rows — a single pass that
feeds every class's engine would need the engine's scan to route rows by class, which it
does not (yet) do.

Every class runs the same plan with its own noise (:meth:`PreparedFit.run` with its seed),
so with the same seeds each class's rectangle is the numpy engine's, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from dprect.core.classes import ClassesResult, class_labels, class_seeds, classes_charge
from dprect.core.domains import GridArg, feature_names, resolve_domains
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.planner import Plan
from dprect.core.planner import plan as make_plan
from dprect.core.request import FitRequest, Source
from dprect.engines.spark.fit import PreparedFit, prepare_fit
from dprect.engines.spark.source import SPARK_ERRORS, read_source, spark_message

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from dprect.core.domains import Domain
    from dprect.engines.spark.fit import SparkRoute


class PreparedClasses:
    """The k prepared classes (in order) on one cached DataFrame; closing releases every
    class's engine, the cache, then (if owned) the session."""

    def __init__(self, prepared: list[PreparedFit], cached: DataFrame | None,
                 on_close: Callable[[], None] | None) -> None:
        self.prepared = prepared
        self.cached = cached
        self.on_close = on_close

    def close(self) -> None:
        try:
            for p in reversed(self.prepared):
                p.close()
            if self.cached is not None:
                self.cached.unpersist()
        finally:
            if self.on_close is not None:
                self.on_close()

    def __enter__(self) -> PreparedClasses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_classes(route: SparkRoute, source: Source, domains: list[Domain],
                 requests: Sequence[FitRequest], plan: Plan,
                 progress: Callable[[str], None]) -> PreparedClasses:
    """Read ``source`` once and prepare one fit per request (one per class) on it; on
    any failure everything opened so far is released (and an owned session stopped)."""
    spark: SparkSession
    spark, owned = route.session()
    done = PreparedClasses([], None, spark.stop if owned else None)
    try:
        progress(f"reading {source.path} (once for {len(requests)} classes)")
        df = read_source(spark, source.path, format=source.format, where=source.where,
                         version=source.version, timestamp=source.timestamp)
        done.cached = df.cache()
        for i, request in enumerate(requests):
            progress(f"checking the input and reading what class {i + 1} of "
                     f"{len(requests)} needs")
            done.prepared.append(prepare_fit(
                done.cached, features=source.features, label=source.label,
                domains=domains, request=request, plan=plan, spark_plan=route.spark_plan,
                driver_budget_mb=route.driver_budget_mb))
    except SPARK_ERRORS as exc:
        done.close()
        raise InputDataError(f"cannot read the input: {spark_message(exc)}") from None
    except BaseException:
        done.close()
        raise
    return done


def fit_dataframe_classes(df: DataFrame, *, features: Sequence[str], label: str,
                          request: FitRequest, domains: GridArg = None,
                          spark_plan: str | None = None, seed: int | None = None,
                          driver_budget_mb: float | None = None) -> ClassesResult:
    """:func:`dprect.fit` with ``classes=`` on a Spark DataFrame: ``request.classes`` (a
    :class:`~dprect.core.request.FitRequest` with a PUBLIC class list), one plan, ``df``
    cached once, one rectangle per class for ONE charge (:mod:`dprect.core.classes`).
    The same seed gives the same rectangles as :func:`dprect.fit` on the same rows."""
    if request.classes is None:
        raise ParameterError("fit_dataframe_classes needs a request with classes")
    names = feature_names(list(features), len(features))
    doms = resolve_domains(domains, names)
    the_plan = make_plan(request.budget(), domains=doms)
    classes_charge(the_plan.chosen.guarantee)
    values = list(request.classes)
    cached = df.cache()
    prepared: list[PreparedFit] = []
    try:
        for value in values:
            prepared.append(prepare_fit(cached, features=names, label=label, domains=doms,
                                        request=request.for_class(value), plan=the_plan,
                                        spark_plan=spark_plan,
                                        driver_budget_mb=driver_budget_mb))
        results = [p.run(seed=s) for p, s in zip(prepared, class_seeds(seed, len(values)),
                                                 strict=True)]
    finally:
        PreparedClasses(prepared, cached, None).close()
    return ClassesResult(class_labels(values), results)


__all__ = ["PreparedClasses", "fit_dataframe_classes", "open_classes"]
