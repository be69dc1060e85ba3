"""One rectangle per class on Spark: the input read ONCE for every class.

:func:`dprect.engines.spark.fit.open_classes` (``SparkRoute.open_classes``) is the Spark
route's form of opening k classes for the classes' fit
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

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dprect.core.classes import ClassesResult, class_labels, class_seeds, classes_charge
from dprect.core.domains import GridArg, feature_names, resolve_domains
from dprect.core.errors import ParameterError
from dprect.core.planner import plan as make_plan
from dprect.core.request import FitRequest
from dprect.engines.spark.fit import PreparedClasses, PreparedFit, prepare_fit

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def fit_dataframe_classes(df: DataFrame, *, features: Sequence[str], label: str,
                          request: FitRequest, grid: GridArg = None,
                          strategy: str | None = None, seed: int | None = None,
                          driver_budget_mb: float | None = None) -> ClassesResult:
    """:func:`dprect.fit` with ``classes=`` on a Spark DataFrame: ``request.classes`` (a
    :class:`~dprect.core.request.FitRequest` with a PUBLIC class list), one plan, ``df``
    cached once, one rectangle per class for ONE charge (:mod:`dprect.core.classes`).
    The same seed gives the same rectangles as :func:`dprect.fit` on the same rows."""
    if request.classes is None:
        raise ParameterError("fit_dataframe_classes needs a request with classes")
    names = feature_names(list(features), len(features))
    doms = resolve_domains(grid, names)
    the_plan = make_plan(request.budget(), domains=doms)
    classes_charge(the_plan.chosen.guarantee)
    values = list(request.classes)
    cached = df.cache()
    prepared: list[PreparedFit] = []
    try:
        for value in values:
            prepared.append(prepare_fit(cached, features=names, label=label, grid=doms,
                                        request=request.for_class(value), plan=the_plan,
                                        strategy=strategy,
                                        driver_budget_mb=driver_budget_mb))
        results = [p.run(seed=s) for p, s in zip(prepared, class_seeds(seed, len(values)),
                                                 strict=True)]
    finally:
        PreparedClasses(prepared, cached, None).close()
    return ClassesResult(class_labels(values), results)


__all__ = ["fit_dataframe_classes"]
