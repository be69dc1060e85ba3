"""A fit with a PUBLIC class list: one rectangle per class, released for ONE charge.

:func:`run_classes_fit` is :func:`dprect.app.flow.run_fit`'s order for k classes
(:mod:`dprect.core.classes` gives the privacy argument):

1. the public checks and ONE plan (no data) — every class runs this plan;
2. every class's input opened by the engine's route (class c's positives are the rows
   labelled c; every other row is its negative): a refused table ends the run before
   anything is reserved;
3. ONE guarded release (:func:`dprect.release.guarded.release_guarded`) of the plan's
   guarantee (:func:`dprect.core.classes.classes_charge`): reserve once, compute the k
   rectangles (class i with its own noise, from OS entropy; a test seed gives class i
   ``class_seeds(seed)[i]`` on every engine), release the one record
   (:meth:`ClassesResult.to_json`), publish it to every sink — the JSON as recorded, the
   plot with every class (:mod:`dprect.release.class_plot`), one results-table row per
   class under the run id.

The route is any :class:`~dprect.app.flow.EngineRoute`: each class opens it with the
request's :meth:`~dprect.core.request.FitRequest.for_class`. The numpy route
(:func:`numpy_open_classes`) and a route with ``open_classes`` (the Spark route:
:mod:`dprect.engines.spark.classes`) open every class at once on ONE read of the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np

from dprect.app.flow import (
    EngineRoute,
    FitSettings,
    NumpyPrepared,
    NumpyRoute,
    Prepared,
    Reporter,
    failure_line,
    open_run,
    release_or_replay,
    run_fit,
    seeded_run_quietly,
)
from dprect.core.classes import (
    ClassesResult,
    class_labels,
    class_seeds,
    classes_charge,
    is_classes_record,
)
from dprect.core.domains import Domain, resolve_domains
from dprect.core.errors import ParameterError
from dprect.core.expectation import empty_explanation
from dprect.core.labels import resolve_positive_label
from dprect.core.planner import Plan, plan
from dprect.core.reading import select_rows
from dprect.core.request import FitRequest, Source
from dprect.release.guarded import Charge, Outcome, release_guarded
from dprect.release.sinks import PngSink, Release, ResultsTableSink, Sink, publish


@dataclass
class OpenedClasses:
    """Every class's prepared fit, opened together (a context manager, as a route's)."""

    prepared: list[Prepared]

    def __enter__(self) -> OpenedClasses:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def numpy_open_classes(source: Source, domains: list[Domain],
                       requests: Sequence[FitRequest], plan: Plan,
                       progress: Callable[[str], None]) -> OpenedClasses:
    """The numpy route's form for k classes: the file read ONCE, each class's positives
    selected from it as :class:`~dprect.app.flow.NumpyRoute` selects one class's."""
    from dprect.engines.arrow_input import label_kind, label_matches, numeric_column, read_table

    progress(f"reading {source.path} (once for {len(requests)} classes)")
    table = read_table(source.path, [*source.features, source.label], source.format)
    matrix = np.column_stack([numeric_column(table, f, nulls_as_nan=True)
                              for f in source.features])
    kind = label_kind(table, source.label)  # from the schema: no row is looked at
    prepared: list[Prepared] = []
    for request in requests:
        value = resolve_positive_label(request.positive_label, kind, source.label)
        rows = select_rows(matrix, label_matches(table, source.label, value),
                           source.features, invalid_rows=request.invalid_rows)
        prepared.append(NumpyPrepared(rows, domains, list(source.features), plan))
    return OpenedClasses(prepared)


def classes_sinks(sinks: Sequence[Sink]) -> list[Sink]:
    """The fit's sinks for a class record: the JSON as it is; the plot and the results
    table as their class forms (:mod:`dprect.release.class_sinks`)."""
    from dprect.release.class_sinks import ClassesPngSink, ClassesTableSink

    out: list[Sink] = []
    for s in sinks:
        if isinstance(s, PngSink):
            out.append(ClassesPngSink(s.name, s.path, title=s.title, truth=s.truth))
        elif isinstance(s, ResultsTableSink):
            out.append(ClassesTableSink(s.name, s.path, s.dataset, s.extra_parameters))
        else:
            out.append(s)
    return out


def run_classes_fit(settings: FitSettings, route: EngineRoute,
                    report: Reporter | None = None) -> Outcome:
    """Run a fit of ``settings.request.classes`` end to end (the module docstring)."""
    from dprect.release.results_table import utc_now

    report = report or Reporter()
    started_at = utc_now()
    request, source, ledger = settings.request, settings.source, settings.ledger
    assert request.classes is not None
    values = list(request.classes)
    names = class_labels(values)
    domains = resolve_domains(settings.grid, source.features)
    the_plan = plan(request, domains=domains, positives=settings.positives,
                    target_share=settings.target_share)  # one plan for every class
    charge = Charge(classes_charge(the_plan.chosen.guarantee), the_plan.chosen.method,
                    list(source.features))
    sinks = classes_sinks(settings.sinks)
    run_id = open_run(report, sinks, [(report.name("input"), source.path)], ledger,
                      settings.seed, "this result is")

    def to_sinks(record: dict[str, Any]) -> None:
        if not is_classes_record(record):
            raise ParameterError(f"run id {run_id} was released by another kind of run "
                                 "(not one rectangle per class); use a new run id")
        result = ClassesResult.from_json(record)
        report.show(result.summary())
        for c, r in zip(result.classes, result.results, strict=True):
            if r.empty:  # read from the released result only
                report.say(f"class {c}: empty rectangle")
                for line in empty_explanation(the_plan.expectation(), report.name):
                    report.say(line)
        for line in publish(sinks, Release(record, run_id, started_at)):
            report.say(line)

    def fresh() -> Outcome:
        report.say(the_plan.expectation().sentence() + " (for each class)")
        with ExitStack() as stack:
            opened: list[Prepared] = []
            requests = [request.for_class(value) for value in values]
            together = getattr(route, "open_classes", None)  # one read for every class
            if together is None and isinstance(route, NumpyRoute):
                together = numpy_open_classes
            if together is not None:  # every schema check before the reservation
                opened = list(stack.enter_context(together(
                    source, domains, requests, the_plan, report.progress)).prepared)
            else:
                for one in requests:
                    opened.append(stack.enter_context(
                        route.open(source, domains, one, the_plan, report.progress)))
            seeds = class_seeds(settings.seed, len(values))

            def compute() -> tuple[Any, dict[str, Any]]:
                report.progress(f"fitting {len(values)} classes × {len(domains)} features "
                                f"(epsilon={request.epsilon:g}, delta={request.delta:g}, "
                                f"method={request.method}, one charge)")
                results = [seeded_run_quietly(lambda p=p, s=s: p.run(seed=s))  # type: ignore[misc]
                           for p, s in zip(opened, seeds, strict=True)]
                fitted = ClassesResult(names, results)
                return fitted.privacy, fitted.to_json()

            return release_guarded(ledger, charge, compute, to_sinks,
                                   what="the classes' fit", describe=failure_line)

    return release_or_replay(report, ledger, run_id, to_sinks, fresh,
                             neighbouring=the_plan.chosen.guarantee.neighbouring)


def run_any_fit(settings: FitSettings, route: EngineRoute, report: Reporter | None = None
                ) -> Outcome:
    """What the front ends run: :func:`run_classes_fit` for a request with a class list,
    else the one-rectangle :func:`dprect.app.flow.run_fit`."""
    if settings.request.classes is not None:
        return run_classes_fit(settings, route, report)
    return run_fit(settings, route, report)


__all__ = ["classes_sinks", "run_any_fit", "run_classes_fit"]
