"""Spend before release: the one order in which every job publishes a result.

:func:`guarded_release` runs every product's release (a fit's rectangle, private bounds)
under a budget ledger (:mod:`dprect.release.ledger`), the same way:

1. **reserve** the plan's (ε, δ) — a :class:`Charge` — for (dataset, run id) — refused,
   with nothing computed or written, if it would exceed the cap; a run id that was already
   released returns its recorded result instead and spends nothing;
2. **compute** the result (the only step that touches the data's private part);
3. **release**: commit the result into the ledger (at most one release per run id; a
   large result is written first as a file the row references,
   :mod:`dprect.release.ledger.stored`, whose folder the reservation checked writable);
4. **publish**: write the output files from the recorded result (each atomically).

A failure in step 2 is recorded as ``fail`` (the run stays charged, fail closed) and
re-raised — except an interrupt (SIGINT, :class:`KeyboardInterrupt`, or SIGTERM, which the
front ends raise as its subclass :class:`dprect.app.failures.Terminated`) that came before
any noise was drawn (:func:`dprect.core.randomness.draws` did not move) in the attempt
that made the charge: its reservation is cancelled (:meth:`Ledger.cancel`, docs/privacy.md
"Cancelled reservations"), since nothing it did can be released. The ledger row for the
failure or the cancellation is written with SIGINT and SIGTERM held off, so a second
Ctrl-C does not cut it short. The ``fail`` row holds the line the command prints for that
error (the caller's ``describe``: :func:`dprect.app.failures.describe_failure`'s message), never the
exception's own text, which could quote data; without a ``describe`` only the error's
type is recorded. A process killed anywhere between 1 and 3 leaves a charged reservation and no
output at all; killed during 4, the ledger holds the result and re-running the same run id
re-publishes it (idempotently) without spending again. Without a ledger the steps are
simply compute → publish.

The plan is made before any data is touched, so the charge is known before the compute;
the result's own guarantee must equal it. Nothing here knows a product: a release is a
:class:`Charge` and a compute that returns its guarantee and its result JSON
(:mod:`dprect.app.spine` builds both from a product).
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dprect.core.accounting import Guarantee
from dprect.core.errors import ParameterError
from dprect.core.randomness import draws
from dprect.core.validation import check_id_text
from dprect.release.ledger import Budget, Ledger, LedgerError
from dprect.release.ledger.log import check_ledger_path


@dataclass(frozen=True)
class LedgerSettings:
    """Where and under which name a run is charged."""

    path: str
    dataset: str
    run_id: str
    cap: Budget | None = None

    @classmethod
    def build(cls, path: str | None, dataset: str | None, run_id: str | None,
              cap_epsilon: float | None = None, cap_delta: float | None = None,
              *, names_results: bool = False,
              name: Callable[[str], str] = str) -> LedgerSettings | None:
        """Validate the ledger options (None when no ledger is configured). Without a
        ledger a dataset id is refused unless it may name results elsewhere
        (``names_results``: a fit's, naming its row in a results table — a fit's config
        keeps it for that — or an aggregate's plot, titled by it) — elsewhere it would be
        ignored. A dataset id or run id holding a control or format character is refused
        first, its option spelled by ``name`` (:func:`~dprect.core.validation.check_id_text`),
        before the ledger is read."""
        check_id_text(dataset, name("dataset"))
        check_id_text(run_id, name("run_id"))
        if path is None:
            if dataset is not None and not names_results:
                raise ParameterError("a dataset id names the dataset a ledger charges: "
                                     "give a ledger path (--ledger) too, or leave it out")
            if run_id is None and cap_epsilon is None and cap_delta is None:
                return None
            raise ParameterError("a run id or a cap needs a ledger path (--ledger)")
        if not dataset:
            raise ParameterError("a ledger needs a dataset id (--dataset)")
        check_ledger_path(path, name("ledger"))  # before any input is read or Spark starts
        if (cap_epsilon is None) != (cap_delta is None):
            raise ParameterError("give both cap epsilon and cap delta, or neither")
        cap = None
        if cap_epsilon is not None and cap_delta is not None:
            from dprect.core.validation import check_delta, check_epsilon

            cap = Budget(check_epsilon(cap_epsilon, "cap epsilon"),
                         check_delta(cap_delta, "cap delta"))
        if run_id is None:
            from uuid import uuid4

            run_id = uuid4().hex
        return cls(str(path), dataset, run_id, cap)


@dataclass(frozen=True)
class Outcome:
    """What a guarded run did."""

    result: dict[str, Any]
    run_id: str | None
    replayed: bool  # True: the run id had been released before; nothing was computed


def _other_release(record: Any, guarantee: Guarantee, features: Sequence[str] | None
                   ) -> str | None:
    """What differs between the released ``record`` of a run id and this run — its
    (ε, δ), neighbouring relation and columns, all public parameters — else None."""
    said = []
    if not (math.isclose(record.epsilon, guarantee.epsilon, rel_tol=1e-9)
            and math.isclose(record.delta, guarantee.delta, rel_tol=1e-9, abs_tol=0.0)
            and record.neighbouring == guarantee.neighbouring):
        said.append(f"(epsilon, delta) ({record.epsilon:g}, {record.delta:g}) "
                    f"{record.neighbouring}, this run ({guarantee.epsilon:g}, "
                    f"{guarantee.delta:g}) {guarantee.neighbouring}")
    if features is not None and list(record.features) != list(features):
        said.append(f"columns {', '.join(record.features)}, this run {', '.join(features)}")
    return "; ".join(said) or None


#: the key of a released result that holds the run's public request
#: (:func:`dprect.app.spine.public_request`), compared when its run id is replayed; a
#: result recorded without it (an older ledger's) is compared by :func:`_other_release`
REQUEST_KEY = "public_request"


def without_request(record: dict[str, Any]) -> dict[str, Any]:
    """A recorded result as its outputs show it: without the public request it records."""
    return ({k: v for k, v in record.items() if k != REQUEST_KEY}
            if REQUEST_KEY in record else record)


def _request_lines(recorded: Any, asked: Any, path: str,
                   said: list[tuple[str, str]]) -> None:
    """The leaves where two public requests differ: their paths, each with its ``recorded,
    this run asked`` (public values only). A leaf recorded as an object's type name
    (``"<FloatBins>"``, ``"<function>"``: a request recorded before objects were recorded
    by their public parameters) where this run has no text there is not compared: that
    row's plan, recorded with it, still is."""
    if _type_name(recorded) and not isinstance(asked, str):
        return
    if isinstance(recorded, dict) and isinstance(asked, dict):
        for key in sorted(set(recorded) | set(asked)):
            _request_lines(recorded.get(key), asked.get(key),
                           f"{path}.{key}" if path else str(key), said)
        return
    if recorded == asked:
        return
    if (isinstance(recorded, list) and isinstance(asked, list)
            and len(recorded) == len(asked)
            and any(isinstance(v, dict) for v in (*recorded, *asked))):
        for i, (r, a) in enumerate(zip(recorded, asked, strict=True)):
            _request_lines(r, a, f"{path}[{i}]", said)
        return

    def shown(value: Any) -> str:
        text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        return text if len(text) <= 60 else text[:57] + "..."

    said.append((path, f"{shown(recorded)}, this run {shown(asked)}"))


def _type_name(value: Any) -> bool:
    """Whether ``value`` is an object recorded by its type's name (``"<Grid>"``)."""
    return (isinstance(value, str) and value.startswith("<") and value.endswith(">")
            and value[1:-1].isidentifier())


def _option_name(path: str, options: Collection[str]) -> str | None:
    """A difference's path said by the last option it passes through and the names after
    it (``plan.statistics``: ``statistics``; ``spec.columns[0].grid.bits``: ``grid.bits``),
    or None where it passes through no option (a value derived from them)."""
    names = [name.split("[", 1)[0] for name in path.split(".")]
    for at in range(len(names) - 1, -1, -1):
        if names[at] in options:
            return ".".join(names[at:])
    return None


def _other_request(result: dict[str, Any] | None, request: dict[str, Any] | None,
                   options: Collection[str] = ()) -> str | None:
    """What differs between the public request recorded in a released ``result`` and this
    run's ``request`` — None when they are equal, or when either is missing (a result
    recorded before requests were: :func:`_other_release` compares it). At most three
    differences are named, those of ``options`` (the options' names) first."""
    recorded = None if result is None else result.get(REQUEST_KEY)
    if request is None or not isinstance(recorded, dict):
        return None
    found: list[tuple[str, str]] = []
    _request_lines(recorded, request, "", found)
    # the options asked first, by their names (a path through an option's name); then the
    # rest, derived from them (a plan's budget split), by their paths
    named = [(_option_name(path, options), path, values) for path, values in found]
    said: list[str] = []
    for option, path, values in sorted(named, key=lambda f: f[0] is None):
        line = f"{option or path} {values}"
        if line not in said:  # one option in two places (the request and its plan)
            said.append(line)
    if not said:
        return None
    more = len(said) - 3
    return "; ".join(said[:3]) + (f"; and {more} more" if more > 0 else "")


def _released_other(run_id: str, other: str) -> ParameterError:
    return ParameterError(f"run id {run_id} was released with other parameters ({other}); "
                          "use a new run id, or the released run's parameters to publish "
                          "its result again")


def check_request(run_id: str, result: dict[str, Any], request: dict[str, Any] | None,
                  options: Collection[str] = ()) -> None:
    """Refuse to publish a released ``result`` that records another public request than
    this run's ``request`` (as :func:`released_result` does at plan time). This is the
    check made again where a result comes back from the ledger itself: another attempt of
    the run id may release between the plan-time check and the reservation (the
    reservation hands back its result) or while this attempt computes (the release does)."""
    other = _other_request(result, request, options)
    if other is not None:
        raise _released_other(run_id, other)


def released_result(settings: LedgerSettings | None, guarantee: Guarantee | None = None,
                    features: Sequence[str] | None = None,
                    foreign: Callable[[dict[str, Any]], str | None] | None = None,
                    request: dict[str, Any] | None = None,
                    options: Collection[str] = ()) -> dict[str, Any] | None:
    """The recorded result of an already released run id (None otherwise): lets a job
    re-publish a finished run without reading its input again — the same run: with
    ``guarantee`` (the plan's) and ``features`` (its columns), a released run id whose
    charge or columns differ is refused (its result is not this run's), and so is one whose
    recorded public ``request`` (:data:`REQUEST_KEY`) differs from this run's (the
    differences named, ``options``' first) — unless
    ``foreign`` names it another kind of run's, which the caller refuses as such when it
    publishes it. Otherwise, with
    ``guarantee`` (the plan's), a run the dataset's cap cannot charge is refused here, at
    plan time, before any read or reservation: one whose relation the cap cannot charge
    (:meth:`Ledger.check_relation`) and, for a new charge (not the retry of a run id
    reserved before, which is charged already), one the caps cannot take
    (:meth:`Ledger.check_charge`, which makes the relation's check too: one read of the
    ledger for both)."""
    if settings is None:
        return None
    ledger = Ledger(settings.path)
    record = ledger.run(settings.dataset, settings.run_id)
    if record is not None and record.status == "released":
        kind = None if foreign is None or record.result is None else foreign(record.result)
        other = (None if guarantee is None or kind is not None
                 else _other_release(record, guarantee, features))
        if other is None and kind is None:
            other = _other_request(record.result, request, options)
        if other is not None:
            raise _released_other(settings.run_id, other)
        return record.result
    if guarantee is not None and (record is None or record.status == "cancelled"):
        ledger.check_charge(settings.dataset, epsilon=guarantee.epsilon,
                            delta=guarantee.delta, neighbouring=guarantee.neighbouring,
                            cap=settings.cap)  # the relation's refusal included
    elif guarantee is not None:
        ledger.check_relation(settings.dataset, guarantee.neighbouring, settings.cap)
    return None


def replay(settings: LedgerSettings, result: dict[str, Any],
           publish: Callable[[dict[str, Any]], None]) -> Outcome:
    """Re-publish a released run's recorded result; nothing is computed or spent."""
    publish(result)
    return Outcome(result, settings.run_id, True)


@dataclass(frozen=True)
class Charge:
    """What a run reserves before it computes: the plan's guarantee (its (ε, δ), bound and
    neighbouring relation), the name the ledger records as its method, and the columns."""

    guarantee: Guarantee
    method: str
    features: list[str]


def interrupt_in(exc: BaseException) -> KeyboardInterrupt | None:
    """The interrupt ``exc`` is, or was raised while handling — SIGINT's
    :class:`KeyboardInterrupt`, or SIGTERM's subclass of it
    (:class:`dprect.app.failures.Terminated`) — else None. A library that cleans up after
    an interrupt (py4j closing its connection, pyspark cancelling its jobs) may raise its
    own error in its place."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is an interrupt or was raised while one was handled
    (:func:`interrupt_in`)."""
    return interrupt_in(exc) is not None


#: the signals held off while a ledger row is written: a Ctrl-C (SIGINT) and a
#: scheduler's stop (SIGTERM, which a run turns into an interrupt)
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _signals_held() -> Iterator[None]:
    """:data:`HELD_SIGNALS` ignored inside (on the main thread; elsewhere nothing
    changes), their handlers restored after: a ledger row being written is not cut short
    by a second Ctrl-C or a SIGTERM."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = [(s, signal.signal(s, signal.SIG_IGN)) for s in HELD_SIGNALS]
    try:
        yield
    finally:
        for s, handler in previous:
            signal.signal(s, signal.SIG_DFL if handler is None else handler)


def _type_only(exc: BaseException) -> str:
    return f"{type(exc).__name__} (its message is not recorded)"


def guarded_release(settings: LedgerSettings | None, charge: Charge,
                    compute: Callable[[], tuple[Guarantee | None, dict[str, Any]]],
                    publish: Callable[[dict[str, Any]], None], *,
                    what: str = "the result",
                    describe: Callable[[BaseException], str] = _type_only) -> Outcome:
    """Reserve ``charge`` → compute (its guarantee and its JSON) → release → publish (see
    the module docstring). Under a ledger the computed guarantee must equal the charge's
    (``what`` names the result in that error); a failure is recorded as ``describe``
    says it (the printed line, never the exception's text)."""
    if settings is None:
        result = compute()[1]
        publish(result)
        return Outcome(result, None, False)
    ledger = Ledger(settings.path)
    g = charge.guarantee
    reservation = ledger.reserve(
        settings.dataset, settings.run_id, epsilon=g.epsilon, delta=g.delta,
        method=charge.method, features=list(charge.features), bound=g.bound,
        neighbouring=g.neighbouring, cap=settings.cap)
    if reservation.previous_result is not None:
        publish(reservation.previous_result)
        return Outcome(reservation.previous_result, settings.run_id, True)
    drawn = draws()
    try:
        guarantee, ours = compute()
        if guarantee != g:
            raise AssertionError(f"{what}'s guarantee differs from the reserved plan")
    except BaseException as exc:
        stop = interrupt_in(exc)
        with _signals_held(), contextlib.suppress(LedgerError):
            # a ledger that cannot take the row (a full disk) keeps the run reserved —
            # charged, as a killed run's — and the run's own error is the one reported
            if not (stop is not None and reservation.new_charge and draws() == drawn
                    and ledger.cancel(settings.dataset, settings.run_id)):
                ledger.fail(settings.dataset, settings.run_id,
                            describe(exc if stop is None else stop))
        raise
    recorded = ledger.release(settings.dataset, settings.run_id, ours)
    publish(recorded)  # another attempt of this run id may have released first: use its
    return Outcome(recorded, settings.run_id, recorded != ours)
