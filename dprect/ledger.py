"""The privacy budget ledger: durable, capped, race-free spending across runs.

A Delta table (written with ``deltalake``) of append-only *events*, one row each:

* ``reserve`` — a run charges (ε, δ) to a dataset **before** it releases anything;
* ``release`` — the run released its result (the result JSON is stored in the row, which
  makes re-running a finished run id idempotent);
* ``fail`` — the run stopped with an error before releasing anything;
* ``cap`` — a budget cap (ε, δ) set for a dataset (the latest one counts).

**Spend.** A dataset's spend is the sum of (ε, δ) over its ``reserve`` rows: basic
composition (Dwork & Roth 2014, Thm 3.16), which holds for any sequence of adaptively
chosen runs. A run id is charged at most once: retries of a failed or crashed run id reuse
its reservation.

**Race freedom.** A reservation reads the table at some version v, checks the cap against
the spend it sees, and commits at exactly version v + 1 with delta-rs's commit retries
switched off (``max_commit_retries=0``). If any other writer committed in between, the
commit fails (Delta's log is put-if-absent per version), and the reservation re-reads,
re-checks and tries again. So no two runs can both pass a check that only one of them
fits: whichever commits second has read a table that already contains the first.

**Fail closed.** A run that dies after reserving stays charged: nothing ever removes a
``reserve`` row. A run releases only after its ``release`` row is committed (also
conflict-checked: at most one release per run id), and writes its output files after.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from dprect._version import __version__
from dprect.errors import DprectError, ParameterError
from dprect.validation import check_epsilon, check_open_unit

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
])

EVENTS = ("reserve", "release", "fail", "cap")
_TOLERANCE = 1e-12  # relative slack when comparing float sums with a cap
_MAX_ATTEMPTS = 200


class LedgerError(DprectError):
    """The ledger cannot be read or written, or a request contradicts it."""


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
    reserved_at: datetime | None


@dataclass(frozen=True)
class Reservation:
    """The outcome of :meth:`Ledger.reserve`."""

    run_id: str
    new_charge: bool  # False when a failed/crashed run id is retried (charged before)
    previous_result: dict[str, Any] | None  # set when the run id was already released

    @property
    def already_released(self) -> bool:
        return self.previous_result is not None


def _now() -> datetime:
    return datetime.now(UTC)


def _check_name(value: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(f"{what} must be a non-empty string, got {value!r}")
    return value


class Ledger:
    """A budget ledger stored as a Delta table at ``path`` (created on first write)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)

    # -- reading ------------------------------------------------------------------------
    def _table(self):
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(self.path)
        except TableNotFoundError:
            return None
        except Exception as exc:  # corrupt log, permissions, ...
            raise LedgerError(f"cannot read the ledger at {self.path!r}: {exc}") from None

    def _rows(self, table, dataset: str) -> list[dict[str, Any]]:
        if table is None:
            return []
        if [f.name for f in table.schema().fields] != SCHEMA.names:
            raise LedgerError(f"{self.path!r} is a Delta table but not a dprect ledger")
        data = table.to_pyarrow_table(filters=[("dataset", "=", dataset)])
        return data.to_pylist()

    def events(self, dataset: str) -> list[dict[str, Any]]:
        """Every event row of ``dataset`` (oldest first within a commit order)."""
        return self._rows(self._table(), _check_name(dataset, "dataset"))

    # -- summaries ----------------------------------------------------------------------
    @staticmethod
    def _spent(rows: Iterable[dict[str, Any]]) -> Budget:
        charged = [r for r in rows if r["event"] == "reserve"]
        return Budget(math.fsum(r["epsilon"] for r in charged),
                      math.fsum(r["delta"] for r in charged))

    @staticmethod
    def _cap(rows: list[dict[str, Any]]) -> Budget | None:
        caps = [r for r in rows if r["event"] == "cap"]
        if not caps:
            return None
        latest = max(caps, key=lambda r: r["recorded_at"])
        return Budget(latest["epsilon"], latest["delta"])

    def spent(self, dataset: str) -> Budget:
        return self._spent(self.events(dataset))

    def cap(self, dataset: str) -> Budget | None:
        return self._cap(self.events(dataset))

    def runs(self, dataset: str) -> list[RunRecord]:
        return _runs(self.events(dataset))

    def run(self, dataset: str, run_id: str) -> RunRecord | None:
        return _find_run(self.events(dataset), run_id)

    # -- writing ------------------------------------------------------------------------
    def _append(self, table, rows: list[dict[str, Any]], *, exclusive: bool) -> bool:
        """Append rows; with ``exclusive`` commit exactly on top of ``table``'s version or
        return False (somebody else committed first)."""
        from deltalake import CommitProperties, write_deltalake
        from deltalake.exceptions import CommitFailedError

        batch = pa.Table.from_pylist(rows, schema=SCHEMA)
        try:
            if table is None:
                Path(self.path).mkdir(parents=True, exist_ok=True)
                write_deltalake(self.path, batch, mode="error")
            else:
                props = CommitProperties(max_commit_retries=0 if exclusive else None)
                write_deltalake(table, batch, mode="append", commit_properties=props)
        except CommitFailedError:
            return False
        except Exception as exc:
            if table is None and "already exists" in str(exc).lower():
                return False  # another writer created the table first
            raise LedgerError(f"cannot write the ledger at {self.path!r}: {exc}") from None
        return True

    def _row(self, event: str, dataset: str, **fields: Any) -> dict[str, Any]:
        row = {name: None for name in SCHEMA.names}
        row.update(event=event, dataset=dataset, recorded_at=_now(),
                   dprect_version=__version__)
        row.update(fields)
        return row

    def _retry(self, attempt: int) -> None:
        if attempt >= _MAX_ATTEMPTS:
            raise LedgerError(f"the ledger at {self.path!r} is too busy: gave up after "
                              f"{_MAX_ATTEMPTS} conflicting commits")
        time.sleep(random.uniform(0.005, 0.05) * min(attempt, 10))

    def set_cap(self, dataset: str, epsilon: float, delta: float) -> Budget:
        """Record a cap for ``dataset`` (the latest cap counts; it may be below the spend,
        which then blocks every further run)."""
        _check_name(dataset, "dataset")
        cap = Budget(check_epsilon(epsilon, "cap epsilon"), check_open_unit(delta, "cap delta"))
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            table = self._table()
            if self._append(table, [self._row("cap", dataset, epsilon=cap.epsilon,
                                              delta=cap.delta)], exclusive=False):
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
        """
        _check_name(dataset, "dataset")
        _check_name(run_id, "run id")
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            table = self._table()
            rows = self._rows(table, dataset)
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
            row = self._row("reserve", dataset, run_id=run_id, epsilon=float(epsilon),
                            delta=float(delta), method=method, bound=bound,
                            neighbouring=neighbouring, features=json.dumps(features))
            if self._append(table, [row], exclusive=True):
                return Reservation(run_id, True, None)
            self._retry(attempt)
        raise AssertionError("unreachable")

    def release(self, dataset: str, run_id: str, result: dict[str, Any]) -> dict[str, Any]:
        """Record the release of ``run_id`` with its result. If another attempt of the
        same run id released first, its result is returned and this one must be dropped."""
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            table = self._table()
            record = _find_run(self._rows(table, dataset), run_id)
            if record is None:
                raise LedgerError(f"run id {run_id!r} has no reservation in {self.path!r}")
            if record.status == "released":
                assert record.result is not None
                return record.result
            row = self._row("release", dataset, run_id=run_id, result=json.dumps(result),
                            method=result.get("method"))
            if self._append(table, [row], exclusive=True):
                return result
            self._retry(attempt)
        raise AssertionError("unreachable")

    def fail(self, dataset: str, run_id: str, message: str) -> None:
        """Record that ``run_id`` stopped before releasing anything (it stays charged)."""
        table = self._table()
        self._append(table, [self._row("fail", dataset, run_id=run_id,
                                       message=message[:2000])], exclusive=False)


def _stricter(a: Budget | None, b: Budget | None) -> Budget | None:
    if a is None or b is None:
        return a or b
    return Budget(min(a.epsilon, b.epsilon), min(a.delta, b.delta))


def _find_run(rows: list[dict[str, Any]], run_id: str) -> RunRecord | None:
    """What ``rows`` say of one run id (None if it was never reserved)."""
    return next((r for r in _runs(rows) if r.run_id == run_id), None)


def _runs(rows: list[dict[str, Any]]) -> list[RunRecord]:
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
            reserved_at=reserve["recorded_at"]))
    out.sort(key=lambda r: (r.reserved_at or datetime.min.replace(tzinfo=UTC), r.run_id))
    return out
