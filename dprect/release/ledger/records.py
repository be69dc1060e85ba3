"""What the ledger reports: a run's record, a reservation's outcome, a dataset's status."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dprect.release.ledger.caps import ADD_REMOVE, Budget, Cap


@dataclass(frozen=True)
class RunRecord:
    """What the ledger knows of one run id."""

    run_id: str
    status: str  # "reserved" (running or died), "released", "failed", "cancelled"
    epsilon: float
    delta: float
    method: str
    features: list[str]
    result: dict[str, Any] | None
    reserved_at: datetime | None  # the reserving writer's clock: informational only
    reserved_version: int  # the commit version of the reservation: the order of runs
    neighbouring: str = ADD_REMOVE
    released_version: int | None = None


@dataclass(frozen=True)
class Reservation:
    """The outcome of :meth:`Ledger.reserve`."""

    run_id: str
    new_charge: bool  # False when a failed/crashed run id is retried (charged before)
    previous_result: dict[str, Any] | None  # set when the run id was already released


@dataclass(frozen=True)
class DatasetStatus:
    """What :meth:`Ledger.status` reports of one dataset, read at one ledger version.
    ``spent`` is in ``neighbouring`` (the cap's relation; without a cap add/remove, or
    replace-one once a replace-one run was charged); ``None`` when it is unbounded there.
    ``runs`` is ``None`` unless asked for (``Ledger.status(..., runs=True)``: it reads the
    dataset's whole run index); the runs carry no result (:meth:`Ledger.run` reads one).
    ``known``: whether any event (a cap, a run) names the dataset."""

    spent: Budget | None
    cap: Cap | None
    runs: list[RunRecord] | None
    ledger_version: int
    neighbouring: str = ADD_REMOVE
    known: bool = True
