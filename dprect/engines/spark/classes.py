"""One rectangle per class on Spark: the input read ONCE, and the classes' Spark jobs shared.

:func:`dprect.engines.spark.fit.open_classes` (``SparkRoute.open_classes``) is the Spark
route's form of opening k classes for the classes' fit (:mod:`dprect.app.classes_flow`),
and :func:`fit_dataframe_classes` the same on a DataFrame; both go through
:func:`dprect.engines.spark.fit.prepare_classes`:

* with the ``collect`` strategy, or ``auto`` when every class's positives together fit the
  driver budget, TWO Spark jobs serve every class whatever k — one counting each class's
  rows, one collecting every listed class's rows with their class index — and the driver
  splits and encodes them class by class
  (:mod:`dprect.engines.spark.class_collect`);
* with ``pass``, or ``auto`` over that budget (unless some class would take
  ``prefetch``), the rows are cached once, the same job counts every class, and ONE pass
  gathers every class's first lists — each class's orders in one task, each row tagged
  with its class index (:mod:`dprect.engines.spark.class_pass`); a class's later passes
  (RandMargins' cuts leaving a list short) run on its own positives, as a single fit's
  do. A keys-only plan (composition) usually needs no later pass: k classes, one pass;
* otherwise (``prefetch``, ``rounds``, or ``auto`` choosing ``prefetch``) the rows are
  cached once and each class is prepared on them (:func:`~dprect.engines.spark.fit.
  prepare_fit` with the class as the positive label): the file is scanned once, but each
  class's engine makes its own count and pass or jobs over the cached rows — a shared
  first job for ``prefetch`` would need its own kernel (its prefix lists carry the cut
  columns, and a short list falls back to a per-class job), not written.

Every class is prepared before any runs, so every class's lists (or rows) are held at
once: each class's engine gets 1/k of the driver budget.

Every class runs the same plan with its own noise (its ``run`` with its seed), so with the
same seeds each class's rectangle is the numpy engine's, bit for bit, on either path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dprect.core.classes import ClassesResult, checked_charge, class_labels, class_seeds
from dprect.core.domains import GridArg, check_dims, feature_names, resolve_domains
from dprect.core.errors import ParameterError
from dprect.core.planner import plan as make_plan
from dprect.core.request import FitRequest
from dprect.engines.spark.fit import prepare_classes

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
    check_dims(len(features), "features")
    names = feature_names(list(features), len(features))
    doms = resolve_domains(grid, names)
    the_plan = make_plan(request.budget(), domains=doms, auto_count=False)
    values = list(request.classes)
    _, check = checked_charge(the_plan, doms, len(values))  # before the table is read
    with prepare_classes(df, features=names, label=label, domains=doms,
                         requests=[request.for_class(v) for v in values], plan=the_plan,
                         strategy=strategy, driver_budget_mb=driver_budget_mb) as prepared:
        results = [p.run(seed=s) for p, s in zip(prepared.prepared,
                                                 class_seeds(seed, len(values)), strict=True)]
    return ClassesResult(class_labels(values), results, check.to_json())


__all__ = ["fit_dataframe_classes"]
