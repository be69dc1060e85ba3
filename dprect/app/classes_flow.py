"""A fit with a PUBLIC class list on the run spine (:mod:`dprect.app.spine`): one rectangle
per class, released for ONE charge (:mod:`dprect.core.classes` gives the privacy
argument, docs/privacy.md §12).

:class:`ClassesProduct` makes ONE plan (no data) that every class runs; opens every class
through the engine's route before anything is reserved (class c's positives are the rows
labelled c; every other row is its negative) — on ONE read of the table
(``route.open_classes``: :meth:`dprect.engines.numpy_fit.NumpyRoute.open_classes`,
:meth:`dprect.engines.spark.fit.SparkRoute.open_classes`), or class by class with
``route.open`` for a route without it; charges the plan's guarantee once
(:func:`dprect.core.classes.classes_charge`, re-derived by the independent check when the
product is made, before anything is read: :func:`dprect.core.classes.checked_charge`);
computes the k rectangles (class i with its own noise, from OS entropy; a test seed gives
class i ``class_seeds(seed)[i]`` on every engine) into one record
(:meth:`ClassesResult.to_json`), published to every sink — the JSON as recorded, the
plot with every class (:mod:`dprect.release.class_plot`), one
results-table row per class under the run id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from dprect.app.flow import EngineRoute, FitPrepared, FitSettings, run_fit
from dprect.app.products import foreign
from dprect.app.spine import Reporter, run_release
from dprect.core.accounting import Guarantee
from dprect.core.classes import (
    ClassesResult,
    checked_charge,
    class_labels,
    class_seeds,
)
from dprect.core.domains import resolve_domains
from dprect.core.expectation import empty_explanation
from dprect.core.planner import plan
from dprect.release.guarded import Charge, Outcome
from dprect.release.sinks import LABEL, PngSink, ResultsTableSink, Sink, label_entry


class OpenedClasses:
    """Every class's prepared fit, opened together; closing closes each (an ExitStack)."""

    def __init__(self) -> None:
        self.stack = ExitStack()
        self.prepared: list[FitPrepared] = []

    def __enter__(self) -> OpenedClasses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()


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


class ClassesProduct:
    """One rectangle per listed class as a product of the spine."""

    what = "this result is"
    noun = "the classes' fit"

    def __init__(self, settings: FitSettings) -> None:
        request = settings.request
        assert request.classes is not None
        self.values = list(request.classes)
        self.names = class_labels(self.values)
        self.settings = dataclasses.replace(settings, sinks=classes_sinks(settings.sinks))
        self.domains = resolve_domains(settings.grid, settings.source.features)
        self.plan = plan(request, domains=self.domains, positives=settings.positives,
                         target_share=settings.target_share,
                         features=settings.source.features,
                         auto_count=False)  # one plan for every class; no private count
        # the one charge, re-derived by the independent check before any data is read
        self.guarantee, self.check = checked_charge(self.plan, self.domains,
                                                    len(self.values))

    def inputs(self, name: Callable[[str], str]) -> list[tuple[str, str | None]]:
        return [(name("input"), self.settings.source.path)]

    def charge(self) -> Charge:
        return Charge(self.guarantee, self.plan.chosen.method,
                      list(self.settings.source.features))

    def foreign(self, record: Mapping[str, Any]) -> str | None:
        return foreign("classes", record)

    def announce(self) -> list[str]:
        return [self.plan.expectation().sentence() + " (for each class)"]

    def open(self, route: EngineRoute, progress: Callable[[str], None]) -> OpenedClasses:
        s = self.settings
        requests = [s.request.for_class(value) for value in self.values]
        opened = OpenedClasses()
        with ExitStack() as failing:  # closes what was opened if a later class fails
            failing.push(opened)
            together = getattr(route, "open_classes", None)  # one read for every class
            if together is not None:  # every schema check before the reservation
                opened.prepared = list(opened.stack.enter_context(together(
                    s.source, self.domains, requests, self.plan, progress)).prepared)
            else:
                for one in requests:
                    opened.prepared.append(opened.stack.enter_context(
                        route.open(s.source, self.domains, one, self.plan, progress)))
            failing.pop_all()
        return opened

    def compute(self, prepared: OpenedClasses, progress: Callable[[str], None]
                ) -> tuple[Guarantee | None, dict[str, Any]]:
        request = self.settings.request
        progress(f"fitting {len(self.values)} classes × {len(self.domains)} features "
                 f"(epsilon={request.epsilon:g}, delta={request.delta:g}, "
                 f"method={request.method}, one charge)")
        seeds = class_seeds(self.settings.seed, len(self.values))
        results = [p.run(seed=seed) for p, seed in zip(prepared.prepared, seeds, strict=True)]
        fitted = ClassesResult(self.names, results, self.check.to_json())
        named = label_entry(self.settings.source.label)  # each class is a value of it
        return fitted.privacy, {**fitted.to_json(), LABEL: named}

    def summary(self, record: dict[str, Any], name: Callable[[str], str]
                ) -> tuple[list[str], list[str]]:
        result = ClassesResult.from_json(record)
        said: list[str] = []
        for c, r in zip(result.classes, result.results, strict=True):
            if r.empty:  # read from the released result only
                said.append(f"class {c}: empty rectangle")
                said.extend(empty_explanation(self.plan.expectation(), name))
        return [result.summary()], said


def run_classes_fit(settings: FitSettings, route: EngineRoute,
                    report: Reporter | None = None) -> Outcome:
    """Run a fit of ``settings.request.classes`` end to end on the spine."""
    return run_release(ClassesProduct(settings), route, report)


def run_any_fit(settings: FitSettings, route: EngineRoute, report: Reporter | None = None
                ) -> Outcome:
    """What the front ends run: :func:`run_classes_fit` for a request with a class list,
    else the one-rectangle :func:`dprect.app.flow.run_fit`."""
    if settings.request.classes is not None:
        return run_classes_fit(settings, route, report)
    return run_fit(settings, route, report)


__all__ = ["ClassesProduct", "classes_sinks", "run_any_fit", "run_classes_fit"]
