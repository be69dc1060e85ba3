"""The privacy budget ledger: durable, capped, race-free, tamper-evident spending across runs.

A Delta table (written with ``deltalake``) of append-only *events*, exactly one per commit:

* ``init`` — the ledger was created (``dprect budget init``); always commit version 0;
* ``reserve`` — a run charges (ε, δ) to a dataset **before** it releases anything;
* ``release`` — the run released its result (the result JSON is stored in the row, which
  makes re-running a finished run id idempotent);
* ``fail`` — the run stopped with an error before releasing anything;
* ``cap`` — a budget cap (ε, δ) set for a dataset (the one committed last counts).

**Spend.** A dataset's spend is the sum of (ε, δ) over its ``reserve`` rows: basic
composition (Dwork & Roth 2014, Thm 3.16), which holds for any sequence of adaptively
chosen runs. A run id is charged at most once: retries of a failed or crashed run id reuse
its reservation.

**Order.** Events are ordered by the Delta commit version they were written at, never by
a clock: the cap in force is the cap event with the highest version, whatever the clocks
of the machines that wrote it said (``recorded_at`` is informational only).

**Race freedom.** Every write reads the table at some version v, checks what it has to
check against what it read, and commits at exactly version v + 1 with delta-rs's commit
retries switched off (``max_commit_retries=0``). If any other writer committed in between,
the commit fails (Delta's log is put-if-absent per version), and the write re-reads,
re-checks and tries again. So no two runs can both pass a check that only one of them
fits: whichever commits second has read a table that already contains the first.

**Integrity (fail closed on damage).** Each event row records the version it is committed
at (``version``) and a hash chain (``chain`` = SHA-256 over the previous event's chain and
this event's fields). Every read — and so every write, which starts with a read — checks
that the rows' versions are exactly 0, 1, ..., V for the table's version V, one event each,
that version 0 is the only ``init``, that the chain recomputes, and that the schema is the
ledger's. A commit file emptied by a power loss (delta-rs reads it as an empty commit and
the event's row vanishes), a deleted or unreadable commit file, an edited data file, or a
foreign table therefore raises :class:`LedgerError` ("the budget ledger ... is damaged"),
and nothing is charged, released or recorded — it never reads as a smaller spend. (Not
detectable this way: deletion of the newest commit file alone, which looks like a ledger
that never had that event; the ledger folder's permissions and backups must cover it —
docs/operations.md.)

**No implicit creation.** A ledger is created only by :meth:`Ledger.init`
(``dprect budget init``), in a new or empty folder. Every other operation refuses a path
without a ledger (:class:`NoLedgerError`), so a deleted ``_delta_log/`` never reads as a
new, empty ledger with no spend and no cap.

**Fail closed.** A run that dies after reserving stays charged: nothing ever removes a
``reserve`` row (the table is created ``delta.appendOnly``). A run releases only after its
``release`` row is committed (at most one release per run id), and writes its output files
after.

Every :class:`LedgerError` message is a single line without terminal escape codes, even
when it quotes delta-rs (whose errors may carry backtraces and coloured lines).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from dprect._version import __version__
from dprect.core.errors import DprectError, ParameterError
from dprect.core.extras import require
from dprect.core.validation import check_epsilon, check_open_unit

SCHEMA = pa.schema([
    ("event", pa.string()),
    ("dataset", pa.string()),
    ("run_id", pa.string()),
    ("features", pa.string()),
    ("method", pa.string()),
    ("epsilon", pa.float64()),
    ("delta", pa.float64()),
    ("bound", pa.string()),
    ("neighbouring", pa.string()),
    ("result", pa.string()),
    ("message", pa.string()),
    ("recorded_at", pa.timestamp("us", tz="UTC")),
    ("dprect_version", pa.string()),
    ("version", pa.int64()),  # the Delta commit version the event was written at
    ("chain", pa.string()),  # SHA-256 hex over the previous event's chain and this event
])

EVENTS = ("init", "reserve", "release", "fail", "cap")
TABLE_CONFIGURATION = {"delta.appendOnly": "true"}
_TOLERANCE = 1e-12  # relative slack when comparing float sums with a cap
_MAX_ATTEMPTS = 200
_DETAIL_CHARS = 200
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")
_RESTORE = "restore it from a backup (see 'The privacy budget ledger' in docs/operations.md)"


def one_line(text: str, limit: int | None = None) -> str:
    """The first meaningful line of ``text``, without terminal escape codes (delta-rs
    messages can carry native backtraces and coloured continuation lines), optionally
    shortened to ``limit`` characters."""
    text = _ANSI.sub("", str(text)).replace("\r", "\n")
    line = ""
    for candidate in text.splitlines():
        candidate = " ".join(candidate.split())
        if candidate and any(c.isalnum() for c in candidate) and \
                not candidate.lower().startswith(("traceback", "stack backtrace")):
            line = candidate
            break
    line = "".join(c for c in line if c.isprintable()) or "(no message)"
    if limit is not None and len(line) > limit:
        line = line[:limit - 1].rstrip() + "…"
    return line


class LedgerError(DprectError):
    """The ledger cannot be read or written, is damaged, or a request contradicts it.
    The message is always one line without terminal escape codes."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class NoLedgerError(LedgerError):
    """There is no ledger at the path (it was never initialised, or its log is gone)."""


class BudgetExceededError(LedgerError):
    """The reservation would take the dataset's spend over its cap."""


@dataclass(frozen=True)
class Budget:
    """An (ε, δ) pair: a cap, a spend, or what remains."""

    epsilon: float
    delta: float

    def to_json(self) -> dict[str, float]:
        return {"epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class RunRecord:
    """What the ledger knows of one run id."""

    run_id: str
    status: str  # "reserved" (running or died), "released", "failed"
    epsilon: float
    delta: float
    method: str
    features: list[str]
    result: dict[str, Any] | None
    reserved_at: datetime | None  # the reserving writer's clock: informational only
    reserved_version: int  # the commit version of the reservation: the order of runs


@dataclass(frozen=True)
class Reservation:
    """The outcome of :meth:`Ledger.reserve`."""

    run_id: str
    new_charge: bool  # False when a failed/crashed run id is retried (charged before)
    previous_result: dict[str, Any] | None  # set when the run id was already released

    @property
    def already_released(self) -> bool:
        return self.previous_result is not None


@dataclass(frozen=True)
class DatasetStatus:
    """What :meth:`Ledger.status` reports of one dataset, read at one ledger version."""

    spent: Budget
    cap: Budget | None
    runs: list[RunRecord]
    ledger_version: int


@dataclass(frozen=True)
class _Snapshot:
    """A verified read of the whole ledger at one Delta version."""

    table: Any  # deltalake.DeltaTable, loaded at ``version``
    version: int
    rows: list[dict[str, Any]]  # every event, in version order (rows[v]["version"] == v)

    def of(self, dataset: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["dataset"] == dataset]


def _now() -> datetime:
    return datetime.now(UTC)


def _check_name(value: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _json_default(value: Any) -> str:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    raise TypeError(f"cannot hash a {type(value).__name__}")


def _chain(previous: str, row: dict[str, Any]) -> str:
    """The chain value of ``row``: SHA-256 of the previous chain and every other field."""
    body = {name: row[name] for name in SCHEMA.names if name != "chain"}
    text = json.dumps([previous, body], default=_json_default, sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _delta_reason(exc: BaseException) -> str:
    """A short, one-line description of why delta-rs could not read the table."""
    text = str(exc)
    if "contiguous commit files" in text:
        return "a commit file is missing from its _delta_log"
    if "No table metadata or protocol" in text:
        return "its first commit file is empty or unreadable"
    if "Json error" in text or "json" in type(exc).__name__.lower():
        return "a commit file is not valid JSON (truncated or edited)"
    if isinstance(exc, FileNotFoundError) or "no such file" in text.lower():
        return "a file its log refers to is missing"
    if "magic bytes" in text.lower():
        return "a data file is not the one its log recorded (edited or truncated)"
    return one_line(text, _DETAIL_CHARS)


class Ledger:
    """A budget ledger stored as a Delta table at ``path``; create it once with
    :meth:`init` (``dprect budget init``)."""

    def __init__(self, path: str | Path) -> None:
        require("delta", "the budget ledger")
        self.path = str(path)

    # -- messages -----------------------------------------------------------------------
    def _missing(self) -> NoLedgerError:
        return NoLedgerError(f"no budget ledger at {self.path}; create it once with "
                             f"`dprect budget init --ledger {self.path}`")

    def _damaged(self, reason: str) -> LedgerError:
        return LedgerError(f"the budget ledger at {self.path} is damaged: {reason}; nothing "
                           f"was charged or released — {_RESTORE}")

    # -- creating -----------------------------------------------------------------------
    def init(self) -> None:
        """Create the ledger: commit version 0, an ``init`` event, in a new or empty folder.

        Refused (nothing written) if ``path`` is a file, or a folder that is not empty —
        which covers an existing ledger and the files left behind when a ledger's
        ``_delta_log/`` was deleted (such a ledger must be restored, not re-created: a new
        one would start from zero spend)."""
        from deltalake import CommitProperties, DeltaTable, write_deltalake

        where = Path(self.path)
        if where.exists() and not where.is_dir():
            raise LedgerError(f"cannot create a budget ledger at {self.path}: it is a file")
        if where.is_dir() and any(where.iterdir()):
            try:
                DeltaTable(self.path)
                exists = True
            except Exception:
                exists = False
            if exists:
                raise LedgerError(f"a budget ledger (or another Delta table) already exists "
                                  f"at {self.path}; nothing was changed")
            raise LedgerError(
                f"cannot create a budget ledger at {self.path}: the folder is not empty and "
                f"holds no readable ledger (if it held a ledger whose _delta_log was "
                f"deleted or damaged, {_RESTORE}; a new ledger would start from zero spend)")
        row = self._row("init", None, 0, "", message="ledger created")
        try:
            where.mkdir(parents=True, exist_ok=True)
            write_deltalake(self.path, pa.Table.from_pylist([row], schema=SCHEMA),
                            mode="error", configuration=TABLE_CONFIGURATION,
                            commit_properties=CommitProperties(max_commit_retries=0))
        except Exception as exc:
            text = str(exc).lower()
            if "already exists" in text or type(exc).__name__ == "CommitFailedError":
                raise LedgerError(f"a budget ledger already exists at {self.path} (created "
                                  "at the same time by another process)") from None
            raise LedgerError(f"cannot create the budget ledger at {self.path}: "
                              f"{one_line(str(exc), _DETAIL_CHARS)}") from None

    # -- reading ------------------------------------------------------------------------
    def _open(self):
        """The Delta table at ``path``; :class:`NoLedgerError` if there is none."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(self.path)
        except TableNotFoundError:
            where = Path(self.path)
            if where.is_file():
                raise LedgerError(f"no budget ledger at {self.path}: it is a file") from None
            if where.is_dir() and any(where.iterdir()):
                raise NoLedgerError(
                    f"no budget ledger at {self.path}, but the folder is not empty (was its "
                    f"_delta_log deleted?): treated as damaged, nothing was charged or "
                    f"released — {_RESTORE}") from None
            raise self._missing() from None
        except Exception as exc:  # an empty, truncated or missing commit file, ...
            raise self._damaged(_delta_reason(exc)) from None

    def _load(self) -> _Snapshot:
        """Read and verify the whole ledger (see "Integrity" in the module docstring)."""
        table = self._open()
        try:
            version = table.version()
            names = [f.name for f in table.schema().fields]
            if names != SCHEMA.names:
                raise LedgerError(f"{self.path} is a Delta table but not a budget ledger of "
                                  f"this dprect version (its columns differ)")
            data = table.to_pyarrow_table()
        except LedgerError:
            raise
        except Exception as exc:
            raise self._damaged(_delta_reason(exc)) from None
        if not data.schema.equals(SCHEMA):
            raise self._damaged("its column types are not the ledger's")
        rows = sorted(data.to_pylist(),
                      key=lambda r: -1 if r["version"] is None else r["version"])
        self._verify(rows, version)
        return _Snapshot(table, version, rows)

    def _verify(self, rows: list[dict[str, Any]], version: int) -> None:
        recorded = [r["version"] for r in rows]
        if None in recorded:
            raise self._damaged("an event has no commit version")
        if recorded != list(range(version + 1)):
            seen = set(recorded)
            missing = next((v for v in range(version + 1) if v not in seen), None)
            if missing is not None:
                raise self._damaged(f"commit version {missing} has no event (an empty, "
                                    f"truncated or edited commit file?)")
            if len(seen) != len(recorded):
                dup = next(v for v in recorded if recorded.count(v) > 1)
                raise self._damaged(f"more than one event at commit version {dup}")
            raise self._damaged(f"an event claims a version after the log's last "
                                f"({version})")
        previous = ""
        for row in rows:
            if row["event"] not in EVENTS or (row["event"] == "init") != (row["version"] == 0):
                raise self._damaged(f"commit version {row['version']} holds an unexpected "
                                    f"event")
            if row["chain"] != _chain(previous, row):
                raise self._damaged(f"the hash chain breaks at commit version "
                                    f"{row['version']} (an edited file?)")
            previous = row["chain"]

    def verify(self) -> int:
        """Check the whole ledger (see "Integrity"); return its Delta version."""
        return self._load().version

    def events(self, dataset: str) -> list[dict[str, Any]]:
        """Every event row of ``dataset``, in commit order."""
        return self._load().of(_check_name(dataset, "dataset"))

    # -- summaries ----------------------------------------------------------------------
    @staticmethod
    def _spent(rows: Iterable[dict[str, Any]]) -> Budget:
        charged = [r for r in rows if r["event"] == "reserve"]
        return Budget(math.fsum(r["epsilon"] for r in charged),
                      math.fsum(r["delta"] for r in charged))

    @staticmethod
    def _cap(rows: list[dict[str, Any]]) -> Budget | None:
        """The cap committed last (highest version; clocks play no part)."""
        caps = [r for r in rows if r["event"] == "cap"]
        if not caps:
            return None
        latest = max(caps, key=lambda r: r["version"])
        return Budget(latest["epsilon"], latest["delta"])

    def status(self, dataset: str) -> DatasetStatus:
        """Spend, cap and runs of ``dataset`` from one verified read of the ledger."""
        snap = self._load()
        rows = snap.of(_check_name(dataset, "dataset"))
        return DatasetStatus(self._spent(rows), self._cap(rows), _runs(rows), snap.version)

    def spent(self, dataset: str) -> Budget:
        return self._spent(self.events(dataset))

    def cap(self, dataset: str) -> Budget | None:
        return self._cap(self.events(dataset))

    def runs(self, dataset: str) -> list[RunRecord]:
        return _runs(self.events(dataset))

    def run(self, dataset: str, run_id: str) -> RunRecord | None:
        return _find_run(self.events(dataset), run_id)

    # -- writing ------------------------------------------------------------------------
    def _row(self, event: str, dataset: str | None, version: int, previous: str,
             **fields: Any) -> dict[str, Any]:
        row: dict[str, Any] = {name: None for name in SCHEMA.names}
        row.update(event=event, dataset=dataset, recorded_at=_now(),
                   dprect_version=__version__, version=version)
        row.update(fields)
        # hash what will be read back (timestamps normalised to UTC microseconds)
        row = pa.Table.from_pylist([row], schema=SCHEMA).to_pylist()[0]
        row["chain"] = _chain(previous, row)
        return row

    def _commit(self, snap: _Snapshot, event: str, dataset: str, **fields: Any) -> bool:
        """Append one event at exactly ``snap.version + 1``; False if another writer
        committed that version first (the caller re-reads and tries again)."""
        from deltalake import CommitProperties, write_deltalake
        from deltalake.exceptions import CommitFailedError

        previous = snap.rows[-1]["chain"]
        row = self._row(event, dataset, snap.version + 1, previous, **fields)
        try:
            write_deltalake(snap.table, pa.Table.from_pylist([row], schema=SCHEMA),
                            mode="append",
                            commit_properties=CommitProperties(max_commit_retries=0))
        except CommitFailedError:
            return False
        except Exception as exc:
            raise LedgerError(f"cannot write the budget ledger at {self.path} "
                              f"({one_line(str(exc), _DETAIL_CHARS)}); nothing was "
                              f"released") from None
        return True

    def _retry(self, attempt: int) -> None:
        if attempt >= _MAX_ATTEMPTS:
            raise LedgerError(f"the ledger at {self.path} is too busy: gave up after "
                              f"{_MAX_ATTEMPTS} conflicting commits")
        time.sleep(random.uniform(0.005, 0.05) * min(attempt, 10))

    def set_cap(self, dataset: str, epsilon: float, delta: float) -> Budget:
        """Record a cap for ``dataset``. The cap committed last counts (commit order, not
        clock order); it may be below the spend, which then blocks every further run."""
        _check_name(dataset, "dataset")
        cap = Budget(check_epsilon(epsilon, "cap epsilon"), check_open_unit(delta, "cap delta"))
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            if self._commit(self._load(), "cap", dataset, epsilon=cap.epsilon,
                            delta=cap.delta):
                return cap
            self._retry(attempt)
        raise AssertionError("unreachable")

    def reserve(self, dataset: str, run_id: str, *, epsilon: float, delta: float,
                method: str, features: list[str], bound: str, neighbouring: str,
                cap: Budget | None = None) -> Reservation:
        """Charge (ε, δ) to ``dataset`` for ``run_id`` before anything is released.

        * a run id already released → its recorded result, nothing charged;
        * a run id reserved before (failed or died) → retried under the same charge, if
          the request is not larger than what was charged;
        * otherwise the charge is committed only if spend + request ≤ the effective cap
          (the stricter of ``cap`` and the ledger's cap), else :class:`BudgetExceededError`.

        The check and the commit see the same verified version of the ledger (exclusive
        commit at that version + 1, re-checked after any conflict)."""
        _check_name(dataset, "dataset")
        _check_name(run_id, "run id")
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            snap = self._load()
            rows = snap.of(dataset)
            previous = _find_run(rows, run_id)
            if previous is not None:
                if previous.status == "released":
                    return Reservation(run_id, False, previous.result)
                if epsilon > previous.epsilon * (1 + _TOLERANCE) or \
                        delta > previous.delta * (1 + _TOLERANCE):
                    raise LedgerError(
                        f"run id {run_id!r} was charged ({previous.epsilon:g}, "
                        f"{previous.delta:g}); a retry cannot ask for more "
                        f"({epsilon:g}, {delta:g}) — use a new run id")
                return Reservation(run_id, False, None)
            effective = _stricter(cap, self._cap(rows))
            spent = self._spent(rows)
            if effective is not None:
                new_eps, new_delta = spent.epsilon + epsilon, spent.delta + delta
                if new_eps > effective.epsilon * (1 + _TOLERANCE) or \
                        new_delta > effective.delta * (1 + _TOLERANCE):
                    raise BudgetExceededError(
                        f"privacy budget cap exceeded for dataset {dataset!r}: spent "
                        f"(epsilon={spent.epsilon:g}, delta={spent.delta:g}) + this run "
                        f"({epsilon:g}, {delta:g}) > cap ({effective.epsilon:g}, "
                        f"{effective.delta:g}); nothing was released")
            if self._commit(snap, "reserve", dataset, run_id=run_id, epsilon=float(epsilon),
                            delta=float(delta), method=method, bound=bound,
                            neighbouring=neighbouring, features=json.dumps(features)):
                return Reservation(run_id, True, None)
            self._retry(attempt)
        raise AssertionError("unreachable")

    def release(self, dataset: str, run_id: str, result: dict[str, Any]) -> dict[str, Any]:
        """Record the release of ``run_id`` with its result. If another attempt of the
        same run id released first, its result is returned and this one must be dropped."""
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            snap = self._load()
            record = _find_run(snap.of(dataset), run_id)
            if record is None:
                raise LedgerError(f"run id {run_id!r} has no reservation in {self.path}")
            if record.status == "released":
                assert record.result is not None
                return record.result
            if self._commit(snap, "release", dataset, run_id=run_id,
                            result=json.dumps(result), method=result.get("method")):
                return result
            self._retry(attempt)
        raise AssertionError("unreachable")

    def fail(self, dataset: str, run_id: str, message: str) -> None:
        """Record that ``run_id`` stopped before releasing anything (it stays charged)."""
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            if self._commit(self._load(), "fail", dataset, run_id=run_id,
                            message=message[:2000]):
                return
            self._retry(attempt)
        raise AssertionError("unreachable")


def _stricter(a: Budget | None, b: Budget | None) -> Budget | None:
    if a is None or b is None:
        return a or b
    return Budget(min(a.epsilon, b.epsilon), min(a.delta, b.delta))


def _find_run(rows: list[dict[str, Any]], run_id: str) -> RunRecord | None:
    """What ``rows`` say of one run id (None if it was never reserved)."""
    return next((r for r in _runs(rows) if r.run_id == run_id), None)


def _runs(rows: list[dict[str, Any]]) -> list[RunRecord]:
    """The runs of ``rows`` (in version order), in the order they were reserved."""
    by_id: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["run_id"] is not None:
            by_id.setdefault(r["run_id"], []).append(r)
    out = []
    for run_id, events in by_id.items():
        reserve = next((e for e in events if e["event"] == "reserve"), None)
        if reserve is None:
            continue
        release = next((e for e in events if e["event"] == "release"), None)
        status = "released" if release else (
            "failed" if any(e["event"] == "fail" for e in events) else "reserved")
        out.append(RunRecord(
            run_id=run_id, status=status, epsilon=reserve["epsilon"],
            delta=reserve["delta"], method=reserve["method"],
            features=json.loads(reserve["features"] or "[]"),
            result=json.loads(release["result"]) if release else None,
            reserved_at=reserve["recorded_at"], reserved_version=reserve["version"]))
    out.sort(key=lambda r: r.reserved_version)
    return out
