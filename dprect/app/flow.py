"""The fit product on the run spine (:mod:`dprect.app.spine`): ``dprect fit`` on either
engine and ``jobs/fit_rectangle.py``.

:func:`fit_settings` checks a front end's values; :class:`FitProduct` makes the domains
and **the plan** (once, public inputs only) and says what the spine runs in its order:
the announcement is the plan's expectation (:mod:`dprect.core.expectation`: the positives
it expects outside the rectangle and the N positive rows it needs for the target share —
with the settings' public estimate of N, the share at N); the engine's route reads the
table (:class:`dprect.engines.numpy_fit.NumpyRoute`, or
:class:`dprect.engines.spark.fit.SparkRoute`, which imports pyspark, only when a front end
chooses it); the charge is the plan's chosen method's guarantee; after the release the
result's summary is shown and a released rectangle that is empty (read from the released
result only) explains itself in two lines: what its plan expected and what to change
(:func:`dprect.core.expectation.empty_explanation`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dprect.app.groups import group_selection
from dprect.app.products import foreign
from dprect.app.spine import Prepared, Reporter, Summary, run_release
from dprect.app.table_run import checked_seed
from dprect.core.accounting import Guarantee
from dprect.core.domains import Domain, GridArg, check_dims, resolve_domains
from dprect.core.errors import ParameterError
from dprect.core.expectation import (
    DEFAULT_TARGET_SHARE,
    Expectation,
    Sizing,
    empty_explanation,
)
from dprect.core.group_selection import SelectionPlan
from dprect.core.planner import Plan, plan
from dprect.core.request import (
    FitRequest,
    Source,
    is_default_label,
    label_beside_classes,
    request_from,
)
from dprect.core.result import FitResult
from dprect.release.guarded import Charge, LedgerSettings, Outcome
from dprect.release.row_pass import RowPass
from dprect.release.sinks import LABEL, Sink, label_entry, output_sinks


class FitPrepared(Prepared, Protocol):
    """A fit's table read and checked, its engine ready."""

    def run(self, *, seed: int | None = None) -> FitResult:
        """Draw the noise and learn (a seed is for tests only)."""
        ...


class EngineRoute(Protocol):
    """The engine-specific part of a fit: read the table, check its schema, ready the
    engine for the plan. Nothing is drawn, spent or written here."""

    def open(self, source: Source, domains: list[Domain], request: FitRequest, plan: Plan,
             progress: Callable[[str], None]) -> FitPrepared:
        ...


@dataclass(frozen=True)
class FitSettings:
    """Everything a fit was asked for, checked: the request, the table, the grid, the
    ledger (None: no ledger), the sinks, the seed (tests only), and the public inputs of
    the plan's expectation: an estimate of the positive rows (None: none) and the target
    share of positives outside the rectangle; and the private selection of the classes
    (None: none — a public class list or one rectangle; docs/privacy.md §18)."""

    request: FitRequest
    source: Source
    grid: GridArg
    sinks: Sequence[Sink]
    ledger: LedgerSettings | None = None
    seed: int | None = None
    positives: int | None = None
    target_share: float = DEFAULT_TARGET_SHARE
    selection: SelectionPlan | None = None


def fit_settings(values: Mapping[str, Any], name: Callable[[str], str] = str) -> FitSettings:
    """The settings of a fit from a front end's flat values — the command line's parsed
    arguments or the job's config section, both spelled as the config keys: the request
    fields (:mod:`dprect.core.request`), ``input``, ``features``, ``label``, ``format``,
    ``where``, ``version``, ``timestamp``, ``grid``, ``seed``, the outputs ``output``,
    ``plot``, ``truth``, ``results_table`` (under ``dataset``), the ledger ``ledger``,
    ``dataset``, ``run_id``, ``cap_epsilon``, ``cap_delta``, ``strategy`` (recorded
    in the results table), and the optional ``positives`` and ``target_share`` (the
    expectation's public inputs), and ``select_groups`` with ``selection_epsilon`` and
    ``selection_delta`` (one rectangle per class found privately: :func:`fit_selection`).
    Each is checked; ``name`` spells a key in messages. ``positive_label`` is None (or
    absent) unless the front was given one — the request's default then fills in — and a
    label given is refused beside a class list or the selection even when it equals the
    default (``--positive-label 1``, ``fit.positive_label: 1``): both fronts know it."""
    given = values.get("positive_label") is not None
    values = {k: v for k, v in values.items() if k != "positive_label" or given}
    request = request_from(FitRequest, values)
    if given and request.classes is not None:  # the request's refusal, whatever the value
        raise label_beside_classes()
    selection = fit_selection(values, name, label_given=given)
    target_share = values.get("target_share")
    sizing = Sizing(values.get("positives"),
                    DEFAULT_TARGET_SHARE if target_share is None else target_share)
    source = Source(values["input"], values["features"], values["label"],
                    format=values["format"], where=values["where"],
                    version=values["version"], timestamp=values["timestamp"])
    check_dims(len(source.features), name("features"))
    ledger = LedgerSettings.build(values["ledger"], values["dataset"], values["run_id"],
                                  values["cap_epsilon"], values["cap_delta"],
                                  names_results=True, name=name)  # its results table's row too
    if values["truth"] is not None and (request.classes is not None
                                        or selection is not None):
        raise ParameterError(f"{name('truth')} draws the true rectangle of one fit: a "
                             f"classes' plot draws none, so leave {name('truth')} out")
    sinks = output_sinks(name, output=values["output"], plot=values["plot"],
                         results_table=values["results_table"], truth=values["truth"],
                         dataset=values["dataset"], input_path=source.path,
                         input_settings={"input": source.settings(),
                                         "strategy": values["strategy"]},
                         features=source.features)
    return FitSettings(request, source, values["grid"], sinks, ledger,
                       checked_seed(values, name),
                       sizing.positives, sizing.target_share, selection)


def fit_selection(values: Mapping[str, Any], name: Callable[[str], str] = str,
                  label_given: bool | None = None) -> SelectionPlan | None:
    """The private selection of a fit's classes (``select_groups``: the label's values
    kept by :func:`~dprect.app.groups.group_selection`'s selection, one rectangle each;
    beside a public class list, the values not listed: docs/privacy.md §18), or None.
    Refused with a positive label given (every class found is the positive label of its
    own rectangle) — from the options alone: ``label_given`` says whether it was (the
    fronts know, :func:`fit_settings`); None: read from the value, any label but the
    default itself (:func:`~dprect.core.request.is_default_label`; the Python API's)."""
    selection = group_selection(values, name)
    if selection is None:
        return None
    given = values.get("positive_label")
    if label_given is None:
        label_given = given is not None and not is_default_label(given)
    if label_given:  # as beside a class list
        raise ParameterError(f"{name('select_groups')} fits one rectangle per class found: "
                             f"leave out {name('positive_label')}")
    return selection


class FitProduct:
    """A fit's rectangle as a product of the spine: its settings, its domains and its plan
    (made here, once: public inputs only, before any data)."""

    what = "this result is"
    noun = "the fit"

    def __init__(self, settings: FitSettings) -> None:
        self.settings = settings
        self.domains = resolve_domains(settings.grid, settings.source.features)
        self.plan = plan(settings.request, domains=self.domains,
                         positives=settings.positives, target_share=settings.target_share,
                         features=settings.source.features)  # the one plan: public, no data

    def inputs(self, name: Callable[[str], str]) -> list[tuple[str, str | None]]:
        return [(name("input"), self.settings.source.path)]

    def charge(self) -> Charge:
        chosen = self.plan.chosen
        # a counting auto plan chooses after the reservation (its release records which)
        method = "auto" if self.plan.pending else chosen.method
        return Charge(chosen.guarantee, method, list(self.settings.source.features))

    def foreign(self, record: Mapping[str, Any]) -> str | None:
        return foreign("fit", record)

    def announce(self) -> list[str]:
        said = [self.plan.expectation().sentence()]  # the plan's, before any data
        count = self.plan.count_line()  # auto's private count, if it will spend one
        return said if count is None else [*said, count.strip()]

    def open(self, route: EngineRoute, progress: Callable[[str], None]) -> FitPrepared:
        return route.open(self.settings.source, self.domains, self.settings.request,
                          self.plan, progress)

    def compute(self, prepared: FitPrepared, progress: Callable[[str], None]
                ) -> tuple[Guarantee | None, dict[str, Any]]:
        request = self.settings.request
        progress(f"fitting {len(self.domains)} features (epsilon={request.epsilon:g}, "
                 f"delta={request.delta:g}, method={request.method})")
        fitted = prepared.run(seed=self.settings.seed)
        named = label_entry(self.settings.source.label, request.positive_label)
        return fitted.privacy, {**fitted.to_json(), LABEL: named}  # what it is around

    def summary(self, record: dict[str, Any], name: Callable[[str], str], rows: RowPass
                ) -> Summary:
        result = FitResult.from_json(record)  # no rows to read
        said = (empty_explanation(_expected_of(record, self.plan), name)
                if result.empty else [])  # read from the released result only
        return lambda: ([result.summary()], list(said))


def run_fit(settings: FitSettings, route: EngineRoute, report: Reporter | None = None
            ) -> Outcome:
    """Run one fit end to end on the spine (:func:`dprect.app.spine.run_release`). Raises
    a :class:`~dprect.core.errors.DprectError` for bad parameters, paths or schemas —
    before anything is reserved or written."""
    return run_release(FitProduct(settings), route, report)


def _expected_of(record: Mapping[str, Any], the_plan: Plan) -> Expectation:
    """The expectation of the plan a released record was made with (its recorded method
    and prediction: a replay's record may predate this run's settings), under this run's
    public sizing; the run's own plan's if the record does not name them."""
    params = record.get("parameters") or {}
    chosen = params.get("chosen")
    predicted = (params.get("predictions") or {}).get(chosen)
    if not isinstance(chosen, str) or not isinstance(predicted, int | float):
        return the_plan.expectation()
    return the_plan.sizing.expect(chosen, predicted)


__all__ = ["EngineRoute", "FitPrepared", "FitProduct", "FitSettings", "fit_settings",
           "run_fit"]
