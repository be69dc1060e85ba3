"""One fit, end to end: the path every front end takes (``dprect fit`` on either engine,
``jobs/fit_rectangle.py``).

:func:`run_fit` runs, in this order:

1. the public checks — the domains of the features, **the plan** (made here, once, and
   handed to the engine), every output location (:meth:`Sink.check`), no two locations
   at one path; nothing has been read or reserved yet;
2. the run id, printed first (with a ledger), so that a run that dies can be retried;
3. the ledger: a run id released before is **replayed** — its recorded result published
   again, the input never read, nothing spent (a missing or damaged ledger ends the run
   here);
4. the plan's expectation, printed (:mod:`dprect.core.expectation`): the positives it
   expects outside the rectangle and the N positive rows it needs for the target share
   (with the settings' public estimate of N, the share at N) — public inputs only;
5. the input, read and its schema checked by the chosen engine (:class:`EngineRoute`):
   a refused table ends the run before anything is reserved;
6. the guarded release (:func:`dprect.release.guarded.guarded_release`): reserve the
   plan's (ε, δ), compute on the engine, release into the ledger, then publish to every
   sink (:func:`dprect.release.sinks.publish`). A released rectangle that is empty (read
   from the released result only) explains itself in two lines: what its plan expected
   and what to change (:func:`dprect.core.expectation.empty_explanation`).

A failure anywhere writes nothing (a failure after the reservation leaves it charged).
The flow does not branch on the engine: a route reads the table and readies its engine
(:class:`NumpyRoute` here; :class:`dprect.engines.spark.fit.SparkRoute`, which imports
pyspark, only when a front end chooses it).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from dprect.app.failures import describe_failure
from dprect.core.algorithms import run_plan
from dprect.core.domains import Domain, GridArg, resolve_domains
from dprect.core.errors import ParameterError
from dprect.core.expectation import (
    DEFAULT_TARGET_SHARE,
    Expectation,
    Sizing,
    empty_explanation,
)
from dprect.core.labels import resolve_positive_label
from dprect.core.planner import Plan, plan
from dprect.core.randomness import SEEDED_WARNING, RandomSource
from dprect.core.reading import select_rows
from dprect.core.request import FitRequest, Source, request_from
from dprect.core.result import FitResult
from dprect.release.guarded import (
    LedgerSettings,
    Outcome,
    guarded_release,
    released_result,
    replay,
)
from dprect.release.sinks import Release, Sink, check_distinct, output_sinks, publish


class Prepared(Protocol):
    """A table read and checked, its engine ready; a context manager that releases what
    the engine holds (cached data, a session it started)."""

    def run(self, *, seed: int | None = None) -> FitResult:
        """Draw the noise and learn (a seed is for tests only)."""
        ...

    def __enter__(self) -> Prepared: ...

    def __exit__(self, *exc: object) -> None: ...


class EngineRoute(Protocol):
    """The engine-specific part of a fit: read the table, check its schema, ready the
    engine for the plan. Nothing is drawn, spent or written here."""

    def open(self, source: Source, domains: list[Domain], request: FitRequest, plan: Plan,
             progress: Callable[[str], None]) -> Prepared:
        ...


def _quiet(message: str) -> None:
    """A progress line nobody asked for."""


def _show(text: str) -> None:
    print(text, flush=True)


@dataclass(frozen=True)
class Reporter:
    """What a run prints: ``say`` the lines every run shows (the run id of a ledger run,
    the plan's expectation, an empty rectangle's explanation, where the result went),
    ``progress`` the steps (the job prints them, the command
    line does not), ``show`` the result's summary. ``name`` spells an option in
    messages as the front end does (``--seed``, ``fit.seed``)."""

    say: Callable[[str], None] = _show
    progress: Callable[[str], None] = _quiet
    show: Callable[[str], None] = _show
    name: Callable[[str], str] = str


T = TypeVar("T")


def seeded_run_quietly(run: Callable[[], T]) -> T:
    """``run()`` without the seeded-run warning (the front ends print their own line):
    that one warning only, by its message and category; every other warning stays."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=re.escape(SEEDED_WARNING),
                                category=UserWarning)
        return run()


@dataclass(frozen=True)
class FitSettings:
    """Everything a fit was asked for, checked: the request, the table, the grid, the
    ledger (None: no ledger), the sinks, the seed (tests only), and the public inputs of
    the plan's expectation: an estimate of the positive rows (None: none) and the target
    share of positives outside the rectangle."""

    request: FitRequest
    source: Source
    grid: GridArg
    sinks: Sequence[Sink]
    ledger: LedgerSettings | None = None
    seed: int | None = None
    positives: int | None = None
    target_share: float = DEFAULT_TARGET_SHARE


def fit_settings(values: Mapping[str, Any], name: Callable[[str], str] = str) -> FitSettings:
    """The settings of a fit from a front end's flat values — the command line's parsed
    arguments or the job's config section, both spelled as the config keys: the request
    fields (:mod:`dprect.core.request`), ``input``, ``features``, ``label``, ``format``,
    ``where``, ``version``, ``timestamp``, ``grid``, ``seed``, the outputs ``output``,
    ``plot``, ``truth``, ``results_table`` (under ``dataset``), the ledger ``ledger``,
    ``dataset``, ``run_id``, ``cap_epsilon``, ``cap_delta``, ``spark_plan`` (recorded
    in the results table), and the optional ``positives`` and ``target_share`` (the
    expectation's public inputs). Each is checked; ``name`` spells a key in messages."""
    request = request_from(FitRequest, values)
    target_share = values.get("target_share")
    sizing = Sizing(values.get("positives"),
                    DEFAULT_TARGET_SHARE if target_share is None else target_share)
    source = Source(values["input"], values["features"], values["label"],
                    format=values["format"], where=values["where"],
                    version=values["version"], timestamp=values["timestamp"])
    ledger = LedgerSettings.build(values["ledger"], values["dataset"], values["run_id"],
                                  values["cap_epsilon"], values["cap_delta"])
    sinks = output_sinks(name, output=values["output"], plot=values["plot"],
                         results_table=values["results_table"], truth=values["truth"],
                         dataset=values["dataset"], input_path=source.path,
                         input_settings={"input": source.settings(),
                                         "spark_plan": values["spark_plan"]})
    return FitSettings(request, source, values["grid"], sinks, ledger, values["seed"],
                       sizing.positives, sizing.target_share)


def failure_line(exc: BaseException) -> str:
    """What the command prints for ``exc`` (:func:`dprect.app.failures.describe_failure`),
    which is all a ledger's ``fail`` row may hold: never an exception's own text."""
    return describe_failure(exc)[1]


def open_run(report: Reporter, sinks: Sequence[Sink], inputs: Sequence[tuple[str, str | None]],
             ledger: LedgerSettings | None, seed: int | None, what: str) -> str:
    """The public checks every run starts with, and its run id: no two outputs, inputs or
    the ledger at one path; every sink's location writable; with a ledger, the delta extra
    and the ledger's run id (printed first, so a run that dies can be retried), else a new
    id; a warning when a seed is set (``what``: "this result is", "these bounds are")."""
    from dprect.release.results_table import new_run_id

    check_distinct([*((s.name, s.path) for s in sinks), *inputs,
                    (report.name("ledger"), None if ledger is None else ledger.path)])
    for sink in sinks:
        sink.check()
    if ledger is not None:
        from dprect.core.extras import require

        require("delta", "the budget ledger")  # before the run id is printed
        run_id = ledger.run_id
        report.say(f"run id {run_id} (dataset {ledger.dataset!r}, ledger {ledger.path})")
    else:
        run_id = new_run_id()
        report.progress(f"run id {run_id}")
    if seed is not None:
        report.progress(f"WARNING: {report.name('seed')} is set — reproducible noise for "
                        f"tests only; {what} NOT differentially private")
    return run_id


def run_fit(settings: FitSettings, route: EngineRoute, report: Reporter | None = None
            ) -> Outcome:
    """Run one fit end to end (the module docstring gives the order and guarantees). A
    ledger run is named by its settings' run id, any other by a fresh one. Raises a
    :class:`~dprect.core.errors.DprectError` for bad parameters, paths or schemas —
    before anything is reserved or written."""
    from dprect.release.results_table import utc_now

    report = report or Reporter()
    started_at = utc_now()
    request, source, ledger = settings.request, settings.source, settings.ledger
    domains = resolve_domains(settings.grid, source.features)
    the_plan = plan(request, domains=domains, positives=settings.positives,
                    target_share=settings.target_share,
                    features=source.features)  # the one plan: public, no data
    run_id = open_run(report, settings.sinks, [(report.name("input"), source.path)], ledger,
                      settings.seed, "this result is")

    def to_sinks(record: dict[str, Any]) -> None:
        if record.get("method") == "bounds":  # a `dprect bounds` run under this id
            raise ParameterError(f"run id {run_id} was released by another kind of run "
                                 "(private bounds, not a rectangle); use a new run id")
        release = Release(record, run_id, started_at)
        report.show(release.result.summary())
        if release.result.empty:  # read from the released result only
            for line in empty_explanation(_expected_of(release.record, the_plan),
                                          report.name):
                report.say(line)
        for line in publish(settings.sinks, release):
            report.say(line)

    def fresh() -> Outcome:
        report.say(the_plan.expectation().sentence())  # the plan's, before any data
        with route.open(source, domains, request, the_plan, report.progress) as prepared:

            def compute() -> FitResult:
                report.progress(f"fitting {len(domains)} features (epsilon="
                                f"{request.epsilon:g}, delta={request.delta:g}, "
                                f"method={request.method})")
                return seeded_run_quietly(lambda: prepared.run(seed=settings.seed))

            return guarded_release(ledger, the_plan, source.features, compute, to_sinks,
                                   describe=failure_line)

    return release_or_replay(report, ledger, run_id, to_sinks, fresh,
                             neighbouring=the_plan.chosen.guarantee.neighbouring)


def release_or_replay(report: Reporter, ledger: LedgerSettings | None, run_id: str,
                      to_sinks: Callable[[dict[str, Any]], None],
                      fresh: Callable[[], Outcome], *,
                      neighbouring: str | None = None) -> Outcome:
    """The end every run shares: a run id the ledger released before is replayed (its
    recorded result published again through ``to_sinks``; the input never read, nothing
    spent), otherwise ``fresh()`` reads, reserves, computes and releases; then one line
    saying which happened. With ``neighbouring`` (the plan's relation) a run the dataset's
    cap cannot charge in that relation is refused first, before any read or reservation."""
    previous = released_result(ledger, neighbouring)
    if ledger is not None and previous is not None:
        outcome = replay(ledger, previous, to_sinks)  # the input is never read
    else:
        outcome = fresh()
    if outcome.replayed:
        report.say(f"run id {run_id} was released before: its recorded result was "
                   "published again and nothing was spent")
    elif ledger is not None:
        report.progress(f"charged to dataset {ledger.dataset!r} in ledger {ledger.path} "
                        f"(run id {run_id})")
    return outcome


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


# -- the numpy engine's route -------------------------------------------------------------
class NumpyPrepared:
    """The positive rows in memory (float64), fitted on a :class:`NumpyEngine`."""

    def __init__(self, rows: np.ndarray, domains: list[Domain], features: list[str],
                 plan: Plan) -> None:
        self.rows = rows
        self.domains = domains
        self.features = features
        self.plan = plan

    def run(self, *, seed: int | None = None) -> FitResult:
        from dprect.engines.numpy_engine import NumpyEngine

        engine = NumpyEngine.from_features(self.rows, self.domains)
        return run_plan(engine, self.domains, self.features, self.plan,
                        RandomSource(seed=seed))

    def __enter__(self) -> NumpyPrepared:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class NumpyRoute:
    """Read the table in memory with :mod:`dprect.engines.arrow_input` (Parquet or CSV)
    and check its schema. Nothing depends on the rows' values: other labels and nulls are
    negatives, rows with an invalid feature are dropped (unless ``invalid_rows`` is
    ``error``), and no rows or no positives make an ordinary run."""

    def open(self, source: Source, domains: list[Domain], request: FitRequest, plan: Plan,
             progress: Callable[[str], None]) -> NumpyPrepared:
        from dprect.engines.arrow_input import (
            label_kind,
            label_matches,
            numeric_column,
            read_table,
        )

        progress(f"reading {source.path}")
        table = read_table(source.path, [*source.features, source.label], source.format)
        columns = [numeric_column(table, f, nulls_as_nan=True) for f in source.features]
        value = resolve_positive_label(request.positive_label,
                                       label_kind(table, source.label),
                                       source.label)  # from the schema: no row is looked at
        rows = select_rows(np.column_stack(columns),
                           label_matches(table, source.label, value), source.features,
                           invalid_rows=request.invalid_rows)
        return NumpyPrepared(rows, domains, list(source.features), plan)


__all__ = ["EngineRoute", "FitSettings", "NumpyRoute", "Prepared", "Reporter", "fit_settings",
           "open_run", "release_or_replay", "run_fit", "seeded_run_quietly"]
