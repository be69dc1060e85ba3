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

``fit --select-groups`` finds the classes privately (docs/privacy.md §18): the label's
values seen in the data are the candidates, counted on the same read
(``route.open_selected_classes``), and the values kept by the aggregates' own selection
(:func:`dprect.core.group_selection.select_keys`, planned by
:func:`dprect.app.groups.group_selection`) are the classes; with a public list
(``--classes a,b --select-groups``) the listed classes are released whatever their rows
and only the other values are candidates (Theorem S′). The selection and the classes'
fit are charged ONCE, composed (ε + ε_s, δ + δ_s) and checked before anything is read
(:func:`dprect.app.groups.checked_composition`); a run keeping no class releases a
record with no class, charged as planned.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from dprect.app.flow import EngineRoute, FitPrepared, FitSettings, run_fit
from dprect.app.groups import checked_composition, selected_record, selection_lines
from dprect.app.products import foreign
from dprect.app.spine import Reporter, Summary, run_release, seeded_run_quietly
from dprect.core.accounting import Guarantee
from dprect.core.classes import (
    ClassesResult,
    checked_charge,
    class_labels,
    fit_each_class,
    select_classes,
    unlisted_candidates,
)
from dprect.core.domains import resolve_domains
from dprect.core.errors import ParameterError
from dprect.core.expectation import empty_explanation
from dprect.core.labels import MAX_CLASSES, LabelText, PositiveLabel, check_class_pairs
from dprect.core.planner import plan
from dprect.core.randomness import RandomSource
from dprect.core.request import FitRequest
from dprect.core.validation import line_text
from dprect.release.guarded import Charge, Outcome
from dprect.release.row_pass import RowPass
from dprect.release.sinks import LABEL, PngSink, ResultsTableSink, Sink, label_entry


class OpenedClasses:
    """Every class's prepared fit, opened together, and the classes' names (the listed
    ones, or those a private selection kept); closing closes each (an ExitStack)."""

    def __init__(self, names: Sequence[str] = ()) -> None:
        self.stack = ExitStack()
        self.prepared: list[FitPrepared] = []
        self.names = list(names)
        #: classes a private selection kept past :data:`MAX_CLASSES` (not fitted)
        self.past_cap = 0

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
            out.append(ClassesPngSink(s.name, s.path, title=s.title, truth=s.truth,
                                      truth_name=s.truth_name))
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
        self.selection = settings.selection
        assert request.classes is not None or self.selection is not None
        #: the public classes (released whatever their rows; a private selection, if any,
        #: finds the others)
        self.values: list[PositiveLabel | LabelText] = list(request.classes or ())
        self.names = class_labels(self.values)
        self.settings = dataclasses.replace(settings, sinks=classes_sinks(settings.sinks))
        self.domains = resolve_domains(settings.grid, settings.source.features)
        self.plan = plan(request, domains=self.domains, positives=settings.positives,
                         target_share=settings.target_share,
                         features=settings.source.features,
                         auto_count=False)  # one plan for every class; no private count
        # the one charge, re-derived by the independent check before any data is read
        # (with a selection: for any number of classes, composed with the selection's)
        self.guarantee, self.check = checked_charge(
            self.plan, self.domains, None if self.selection is not None else len(self.values))
        self.run_guarantee = self.guarantee if self.selection is None \
            else checked_composition(self.guarantee, self.selection, len(self.values))

    def inputs(self, name: Callable[[str], str]) -> list[tuple[str, str | None]]:
        return [(name("input"), self.settings.source.path)]

    def charge(self) -> Charge:
        return Charge(self.run_guarantee, self.plan.chosen.method,
                      list(self.settings.source.features))

    def foreign(self, record: Mapping[str, Any]) -> str | None:
        return foreign("classes", record)

    def announce(self) -> list[str]:
        said = [self.plan.expectation().sentence() + " (for each class)"]
        if self.selection is None:
            return said
        return [*said, *selection_lines(self.guarantee, self.selection,
                                        "one rectangle per class", len(self.values),
                                        "class(es)"),
                f"plan: at most {MAX_CLASSES} classes a run: past it the first kept in the "
                "order of their text (post-processing of the selection: no privacy spent)"]

    def open(self, route: EngineRoute, progress: Callable[[str], None]) -> OpenedClasses:
        s = self.settings
        if self.selection is not None:
            return self._open_selected(route, progress)
        requests = [s.request.for_class(value) for value in self.values]
        opened = OpenedClasses(self.names)
        with ExitStack() as failing:  # closes what was opened if a later class fails
            failing.push(opened)
            together = getattr(route, "open_classes", None)  # one read for every class
            if together is not None:  # every schema check before the reservation
                opened.prepared = list(opened.stack.enter_context(together(
                    s.source, self.domains, requests, self.plan, progress)).prepared)
            else:  # the column's kind unknown here: refuse a pair any kind reads as one
                check_class_pairs(self.values)
                for one in requests:
                    opened.prepared.append(opened.stack.enter_context(
                        route.open(s.source, self.domains, one, self.plan, progress)))
            failing.pop_all()
        return opened

    def _open_selected(self, route: EngineRoute, progress: Callable[[str], None]
                       ) -> OpenedClasses:
        """The classes found privately (docs/privacy.md §18), on ONE read: the route
        counts each label value's rows (every schema check first) and gives the label's
        kind, this draws the kept values among those not listed (:func:`select_classes`
        over :func:`unlisted_candidates`, at most MAX_CLASSES classes in all; one stream of
        the run's source: a seed keeps the same classes on every engine), and the route
        prepares the listed classes, then each kept one, as ``open_classes`` does. Nothing
        is released before the charge. The ``error`` invalid-rows policy is checked over
        every row before the draw (the route's ``invalid_rows``): it ran only on the
        classes' requests, so with no class listed a draw keeping none skipped it and a
        refusal told, uncharged and repeatably, that the draw had kept one."""
        s, selection = self.settings, self.selection
        assert selection is not None
        opened = OpenedClasses()
        rng = seeded_run_quietly(lambda: RandomSource(seed=s.seed))  # the front end warns

        def choose(counts: Mapping[str, int], kind: str) -> list[FitRequest]:
            progress("finding the classes privately")
            others = unlisted_candidates(counts, self.values, kind, s.source.fit_label)
            kept, opened.past_cap = select_classes(selection, others, rng, len(self.values))
            opened.names = [*self.names, *kept]
            return [s.request.for_class(v)
                    for v in [*self.values, *(LabelText(k) for k in kept)]]

        opener = getattr(route, "open_selected_classes", None)
        if opener is None:
            raise ParameterError("this engine cannot find the classes privately "
                                 "(--select-groups): use the numpy or Spark engine")
        with ExitStack() as failing:
            failing.push(opened)
            opened.prepared = list(opened.stack.enter_context(opener(
                s.source, self.domains, choose, self.plan, progress,
                invalid_rows=s.request.invalid_rows)).prepared)  # checked before the draw
            failing.pop_all()
        return opened

    def compute(self, prepared: OpenedClasses, progress: Callable[[str], None]
                ) -> tuple[Guarantee | None, dict[str, Any]]:
        request, names = self.settings.request, prepared.names
        progress(f"fitting {len(names)} classes × {len(self.domains)} features "
                 f"(epsilon={request.epsilon:g}, delta={request.delta:g}, "
                 f"method={request.method}, one charge)")
        fitted = fit_each_class(names, [p.run for p in prepared.prepared],
                                self.settings.seed, self.guarantee, self.check, self.plan,
                                self.settings.source.features)
        named = label_entry(self.settings.source.label)  # each class is a value of it
        record = {**fitted.to_json(), LABEL: named}
        if self.selection is None:
            return fitted.privacy, record
        listed = len(self.values)
        return selected_record(record, fitted.privacy or self.guarantee, self.selection,
                               len(names) - listed, listed, prepared.past_cap)

    def summary(self, record: dict[str, Any], name: Callable[[str], str], rows: RowPass
                ) -> Summary:
        return lambda: self._summary(record, name)  # no rows to read

    def _summary(self, record: dict[str, Any], name: Callable[[str], str]
                 ) -> tuple[list[str], list[str]]:
        result = ClassesResult.from_json(record)
        chosen = record.get("group_selection", {})
        kept, listed = chosen.get("groups_kept"), chosen.get("groups_listed")
        head = [result.summary()]
        if kept:  # none kept (and none listed): the summary says so
            head.append(f"{kept} class(es) kept by the private selection"
                        + (f", beside {listed} listed" if listed else ""))
        if chosen.get("groups_past_cap"):
            head.append(f"{chosen['groups_past_cap']} more class(es) kept past the cap of "
                        f"{MAX_CLASSES} classes a run: not fitted (the first kept in the "
                        "order of their text are)")
        said: list[str] = []
        for c, r in zip(result.classes, result.results, strict=True):
            if r.empty:  # read from the released result only
                said.append(f"class {line_text(c)}: empty rectangle")
                said.extend(empty_explanation(self.plan.expectation(), name))
        return head, said


def run_classes_fit(settings: FitSettings, route: EngineRoute,
                    report: Reporter | None = None) -> Outcome:
    """Run a fit of ``settings.request.classes`` end to end on the spine."""
    return run_release(ClassesProduct(settings), route, report)


def run_any_fit(settings: FitSettings, route: EngineRoute, report: Reporter | None = None
                ) -> Outcome:
    """What the front ends run: :func:`run_classes_fit` for a request with a class list
    or classes found privately, else the one-rectangle :func:`dprect.app.flow.run_fit`."""
    if settings.request.classes is not None or settings.selection is not None:
        return run_classes_fit(settings, route, report)
    return run_fit(settings, route, report)


__all__ = ["ClassesProduct", "classes_sinks", "run_any_fit", "run_classes_fit"]
