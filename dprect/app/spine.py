"""The one run flow every product rides: request → public plan → source → engine route →
guarded release → sinks (``dprect fit`` and ``dprect aggregate`` with its presets on either
engine, and their Spark jobs).

A product (:class:`Product`: a fit's rectangle, :mod:`dprect.app.flow`; the grouped
aggregates, :mod:`dprect.app.aggregate_flow`) is built from its checked settings, so its
plan is made — once, from public inputs — before the run starts. :func:`run_release` then
runs, in this order:

1. the public checks: no two outputs, inputs or the ledger at one path; every sink's
   location writable (:meth:`Sink.check`); nothing has been read or reserved yet; a
   warning when a seed is set;
2. the ledger: a missing or damaged ledger, or a run the dataset's cap cannot charge (in
   the plan's neighbouring relation, or on the spend so far: a new charge over the cap)
   ends the run here, before its run id is printed and before the input is read (a run
   that never started has no id to retry);
3. the run id, printed (with a ledger) before the input is read or anything reserved, so
   that a run that dies can be retried; a run id released before is **replayed** — its
   recorded result published again, the input never read, nothing spent — when this run
   asks for the same public request (:func:`public_request`, recorded in the result;
   another is refused, naming what differs);
4. the product's announcement (the plan's guarantee and what it expects) — public inputs
   only;
5. the input, read and its schema checked by the chosen engine's route: a refused table
   ends the run before anything is reserved;
6. the guarded release (:func:`dprect.release.guarded.guarded_release`): reserve the
   product's :class:`~dprect.release.guarded.Charge` once, compute on the engine, release
   into the ledger, then publish to every sink (:func:`dprect.release.sinks.publish`),
   after the product's summary lines.

A failure anywhere writes nothing (a failure after the reservation leaves it charged):
publishing is all or nothing (:func:`dprect.release.sinks.publish` stages every file and
removes them if a write fails), and a run released whose outputs are missing is completed
by a replay of its run id. A
recorded result of another product under the same run id is refused before anything is
published. The flow does not branch on the product or the engine.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol, TypeVar

from dprect.app.failures import describe_failure
from dprect.app.heartbeat import EVERY, Heartbeat
from dprect.core.accounting import Guarantee
from dprect.core.errors import ParameterError
from dprect.core.randomness import SEEDED_WARNING
from dprect.release.guarded import (
    REQUEST_KEY,
    Charge,
    LedgerSettings,
    Outcome,
    check_request,
    guarded_release,
    released_result,
    replay,
    without_request,
)
from dprect.release.row_pass import RowPass
from dprect.release.sinks import Release, Sink, check_distinct, publish, sink_inputs


def silent(message: str) -> None:
    """A progress line nobody asked for."""


def _show(text: str) -> None:
    print(text, flush=True)


@dataclass(frozen=True)
class Reporter:
    """What a run prints: ``say`` the lines every run shows (the run id of a ledger run,
    the plan's announcement, an empty rectangle's explanation, where the result went),
    ``progress`` the steps (the job prints them, the command line does not), ``show`` the
    result's summary. ``name`` spells an option in messages as the front end does
    (``--seed``, ``fit.seed``). ``tick`` takes the heartbeat's line every ``every``
    seconds while the run reads, computes and writes (:mod:`dprect.app.heartbeat`;
    ``None``: no heartbeat, as with ``--quiet``)."""

    say: Callable[[str], None] = _show
    progress: Callable[[str], None] = silent
    show: Callable[[str], None] = _show
    name: Callable[[str], str] = str
    tick: Callable[[str], None] | None = None
    every: float = EVERY


T = TypeVar("T")


def seeded_run_quietly(run: Callable[[], T]) -> T:
    """``run()`` without the seeded-run warning (the front ends print their own line):
    that one warning only, by its message and category; every other warning stays."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=re.escape(SEEDED_WARNING),
                                category=UserWarning)
        return run()


def failure_line(exc: BaseException) -> str:
    """What the command prints for ``exc`` (:func:`dprect.app.failures.describe_failure`),
    which is all a ledger's ``fail`` row may hold: never an exception's own text."""
    return describe_failure(exc)[1]


class Prepared(Protocol):
    """A table read and checked, its engine ready; a context manager that releases what
    the engine holds (cached data, a session it started)."""

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> None: ...


class RunSettings(Protocol):
    """What every product's checked settings hold for the spine: the sinks, the ledger
    (None: none) and the seed (tests only)."""

    @property
    def sinks(self) -> Sequence[Sink]: ...

    @property
    def ledger(self) -> LedgerSettings | None: ...

    @property
    def seed(self) -> int | None: ...


#: a product's summary of a released record (:meth:`Product.summary`): its lines shown,
#: and said, once the record's rows are read
Summary = Callable[[], tuple[list[str], list[str]]]


class Product(Protocol):
    """One kind of release, built from its checked ``settings`` (its plan already made).

    ``what`` names the result in the seeded-run warning ("this result is"), ``noun`` in
    the guarantee check ("the fit")."""

    @property
    def settings(self) -> RunSettings: ...

    @property
    def what(self) -> str: ...

    @property
    def noun(self) -> str: ...

    def inputs(self, name: Callable[[str], str]) -> list[tuple[str, str | None]]:
        """The named paths the run reads (the input, a groups file), for the distinctness
        check."""
        ...

    def charge(self) -> Charge:
        """What the run reserves: the plan's guarantee, method and columns."""
        ...

    def foreign(self, record: Mapping[str, Any]) -> str | None:
        """None for a record of this product, else what the refusal says it is."""
        ...

    def announce(self) -> list[str]:
        """The lines printed before the input is read (public inputs only)."""
        ...

    def open(self, route: Any, progress: Callable[[str], None]) -> Prepared:
        """Read the table and ready the engine through ``route`` (nothing drawn or
        spent)."""
        ...

    def compute(self, prepared: Any, progress: Callable[[str], None]
                ) -> tuple[Guarantee | None, dict[str, Any]]:
        """Draw the noise on the prepared engine: the result's guarantee and its JSON."""
        ...

    def summary(self, record: dict[str, Any], name: Callable[[str], str], rows: RowPass
                ) -> Summary:
        """From the released record only: the summary lines (shown) and the lines every
        run says before publishing (e.g. an empty rectangle's explanation), given once the
        record's rows are read — what it reads of them added to ``rows``, their one read
        the outputs share (:mod:`dprect.release.row_pass`)."""
        ...


#: the settings' fields that are not part of a run's public request: where it publishes
#: (its sinks), where it is charged (the ledger, the run id) and where its input and groups
#: file are read from (the dataset id names the data; a replay may find them moved)
NOT_REQUESTED = frozenset({"sinks", "ledger", "path", "groups_file"})


def _public(value: Any) -> Any:
    """``value`` as JSON: dataclasses by their fields (but :data:`NOT_REQUESTED`), enums by
    their spelling, numbers exactly (a float by its repr), a public parameter object (a
    domain: ``Grid``, ``FloatBins`` …) by its ``to_json()``; a dataclass's function fields
    (a mechanism's code) are left out; anything else by its type."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, enum.Enum):
        return _public(value.value)
    if isinstance(value, float | Fraction):
        return repr(value) if isinstance(value, float) else str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _public(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.name not in NOT_REQUESTED
                and not inspect.isroutine(getattr(value, f.name))}  # code, not a parameter
    if isinstance(value, Mapping):
        return {str(k): _public(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_public(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_public(v) for v in value), key=json.dumps)
    if callable(getattr(value, "to_json", None)):
        return _public(value.to_json())
    return f"<{type(value).__name__}>"


def public_request(settings: Any) -> dict[str, Any]:
    """A run's public request, canonical: every field of its checked ``settings`` (a
    dataclass: the request, the columns, groups, statistics, grid, plan, seed …) but where
    it publishes, is charged and reads (:data:`NOT_REQUESTED`) — public inputs only. A
    released result records it (:data:`~dprect.release.guarded.REQUEST_KEY`) and a replay
    of its run id must ask for the same."""
    made = _public(settings)
    if not isinstance(made, dict):
        raise TypeError("a run's settings are a dataclass")
    return dict(json.loads(json.dumps(made, sort_keys=True)))


def option_names() -> frozenset[str]:
    """Every run option's name (app/options.py's and the requests' fields): what a
    replay's refusal names first among the differences of two public requests."""
    from dprect.app.options import RUN_OPTIONS
    from dprect.app.products import PRODUCTS
    from dprect.core.request import option_specs

    names = {o.name for o in RUN_OPTIONS} | {o.name for p in PRODUCTS.values()
                                             for o in p.options}
    return frozenset(names | {s.name for p in PRODUCTS.values() if p.request is not None
                              for s in option_specs(p.request)})


def in_words(exc: BaseException, name: Callable[[str], str]) -> BaseException:
    """``exc`` as a front end reports it: a core :class:`ParameterError` that names run
    options by their Python names (its ``parameters``, those of :func:`option_names`)
    made again with each option named by ``name`` (``--interval-level``,
    ``aggregate.interval_level``); any other exception as it is. The Python API reports
    the core's own words (its keywords are the Python names)."""
    if not isinstance(exc, ParameterError) or not exc.parameters:
        return exc
    options = option_names()
    return ParameterError(exc.spelled(lambda p: name(p) if p in options else p))


def open_run(report: Reporter, sinks: Sequence[Sink], inputs: Sequence[tuple[str, str | None]],
             ledger: LedgerSettings | None, seed: int | None, what: str) -> str:
    """The public checks every run starts with, and its run id: no two outputs, inputs (a
    plot's truth sidecar among them: :func:`~dprect.release.sinks.sink_inputs`) or the
    ledger at one path, no output inside or around the input's folder (table), the
    ledger or another output (:func:`~dprect.release.sinks.check_distinct`); every sink's
    location writable; with a ledger, the delta extra and the ledger's run id (printed by
    :func:`release_or_replay` once the ledger is read), else a new id; a warning when a
    seed is set (``what``: "this result is", "these bounds are")."""
    from dprect.release.results_table import new_run_id

    check_distinct([(s.name, s.path) for s in sinks], [*inputs, *sink_inputs(sinks)],
                   (report.name("ledger"), None if ledger is None else ledger.path))
    for sink in sinks:
        sink.check()
    if ledger is not None:
        from dprect.core.extras import require

        require("delta", "the budget ledger")
        run_id = ledger.run_id
    else:
        run_id = new_run_id()
        report.progress(f"run id {run_id}")
    if seed is not None:
        report.progress(f"WARNING: {report.name('seed')} is set — reproducible noise for "
                        f"tests only; {what} NOT differentially private")
    return run_id


def release_or_replay(report: Reporter, ledger: LedgerSettings | None, run_id: str,
                      to_sinks: Callable[[dict[str, Any]], None],
                      fresh: Callable[[], Outcome], *,
                      guarantee: Guarantee | None = None,
                      features: Sequence[str] | None = None,
                      foreign: Callable[[dict[str, Any]], str | None] | None = None,
                      request: dict[str, Any] | None = None,
                      options: Collection[str] = ()) -> Outcome:
    """The end every run shares: a run id the ledger released before is replayed (its
    recorded result published again through ``to_sinks``; the input never read, nothing
    spent), otherwise ``fresh()`` reads, reserves, computes and releases; then one line
    saying which happened. With ``guarantee`` (the plan's) a run the dataset's cap cannot
    charge — in its relation, or as a new charge on the spend so far — is refused first,
    before any read or reservation (the reservation checks again), and so is a released
    run id whose recorded charge or columns differ from this run's (``features``; one
    ``foreign`` names another kind of run's is left to ``to_sinks`` to refuse as such), or
    whose recorded public ``request`` (:func:`public_request`) differs from this run's (the
    refusal names what differs, the ``options``' names first).
    A ledger run's id is printed once the ledger has been read (a missing or damaged
    ledger, or that refusal, ends a run that never started: it has no id to retry) and
    before anything else, so a run that dies later can be retried under it."""
    previous = released_result(ledger, guarantee, features, foreign, request, options)
    if ledger is not None:
        report.say(f"run id {run_id} (dataset {ledger.dataset!r}, ledger {ledger.path})")
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


def run_release(product: Product, route: Any, report: Reporter | None = None) -> Outcome:
    """Run one release of ``product`` end to end on ``route``'s engine (the module
    docstring gives the order and guarantees). A ledger run is named by its settings' run
    id, any other by a fresh one. With ``report.tick`` a heartbeat names the run's stage
    every ``report.every`` seconds from the ledger's check to the last output. Raises a
    :class:`~dprect.core.errors.DprectError` for bad parameters, paths or schemas —
    before anything is reserved or written."""
    from dprect.release.results_table import utc_now

    report = report or Reporter()
    started_at = utc_now()
    beat = None if report.tick is None else Heartbeat(report.tick, report.every)
    progress = report.progress if beat is None else beat.tracking(report.progress)
    settings, charge = product.settings, product.charge()
    ledger = settings.ledger
    if beat is not None and ledger is not None:
        beat.stage("checking the budget ledger")
    run_id = open_run(report, settings.sinks, product.inputs(report.name), ledger,
                      settings.seed, product.what)

    request, options = public_request(settings), option_names()

    def to_sinks(recorded: dict[str, Any]) -> None:
        record = without_request(recorded)
        other = product.foreign(record)
        if other is not None:
            raise ParameterError(f"run id {run_id} was released by another kind of run "
                                 f"({other}); use a new run id")
        # the ledger may hand back another attempt's result (it released in between)
        check_request(run_id, recorded, request, options)
        if beat is not None:
            beat.stage("writing the outputs")
        release = Release(record, run_id, started_at)
        summary = product.summary(record, report.name, release.rows)

        def show() -> None:  # once the rows are read, before anything is written
            shown, said = summary()
            for line in shown:
                report.show(line)
            for line in said:
                report.say(line)

        for line in publish(settings.sinks, release, show):
            report.say(line)

    def computed(prepared: Any) -> tuple[Guarantee | None, dict[str, Any]]:
        guarantee, result = product.compute(prepared, progress)
        return guarantee, {**result, REQUEST_KEY: request}  # what a replay must ask for

    def fresh() -> Outcome:
        for line in product.announce():
            report.say(line)
        if beat is not None:
            beat.stage("reading the input")
        with product.open(route, progress) as prepared:
            return guarded_release(
                ledger, charge,
                lambda: seeded_run_quietly(lambda: computed(prepared)),
                to_sinks, what=product.noun, describe=failure_line)

    with beat if beat is not None else nullcontext():
        outcome = release_or_replay(report, ledger, run_id, to_sinks, fresh,
                                    guarantee=charge.guarantee, features=charge.features,
                                    foreign=product.foreign, request=request,
                                    options=options)
    return dataclasses.replace(outcome, result=without_request(outcome.result))


__all__ = ["Prepared", "Product", "Reporter", "RunSettings", "Summary", "failure_line",
           "in_words", "open_run", "public_request", "release_or_replay", "run_release",
           "seeded_run_quietly", "silent"]
