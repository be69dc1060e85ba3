"""The ledger's charges: set a cap, reserve (ε, δ) for a run before it releases anything,
record its release, its failure, or the cancel of an interrupted reservation — each one
event committed at exactly the version its checks read + 1, re-read and re-checked after
any conflict (see "Race freedom", "Spend" and "Fail closed" in
:mod:`dprect.release.ledger`). :class:`Ledger` is the whole ledger."""

from __future__ import annotations

import json
from typing import Any

from dprect.core.errors import ParameterError
from dprect.core.validation import check_delta, check_epsilon
from dprect.release.ledger.caps import (
    ADD_REMOVE,
    TOLERANCE,
    Budget,
    Cap,
    as_cap,
    check_neighbouring,
    relation_image,
)
from dprect.release.ledger.compaction import (
    CHECKPOINT_EVERY,
    DELTA_CHECKPOINT_EVERY,
    LedgerCompaction,
)
from dprect.release.ledger.errors import (
    BudgetExceededError,
    LedgerError,
    check_name,
    check_new_name,
    one_line,
)
from dprect.release.ledger.log import DataFile, Snapshot
from dprect.release.ledger.records import Reservation
from dprect.release.ledger.schema import EVENT_FILE
from dprect.release.ledger.state import DatasetState
from dprect.release.ledger.stored import check_writable, store
from dprect.release.ledger.writes import MAX_ATTEMPTS
from dprect.release.record_text import ledger_chunks


class Ledger(LedgerCompaction):
    """A budget ledger stored as a Delta table at ``path``; create it once with
    :meth:`init` (``dprect budget init``)."""

    def _commit(self, snap: Snapshot, event: str, dataset: str, **fields: Any) -> bool:
        """Append one event at exactly ``snap.version + 1``; False if another writer
        committed that version first (the caller re-reads and tries again). After a
        successful commit a checkpoint is written when one is due."""
        row = self._row(event, dataset, snap.version + 1, snap.last_chain, **fields)
        try:
            action = self._write_file(EVENT_FILE, row["version"], [row])
        except OSError as exc:  # e.g. a full disk: one line, what it leaves
            raise self.write_failed(event, exc) from None
        if not self._transact(snap, [action], event):
            self._discard(action.path)
            return False
        if (row["version"] % DELTA_CHECKPOINT_EVERY == 0
                and snap.since_checkpoint + 1 < CHECKPOINT_EVERY):
            try:  # keeps the log a reader replays short
                from deltalake import DeltaTable

                DeltaTable(self.path, version=row["version"]).create_checkpoint()
            except Exception:  # an optimisation only
                pass
        if snap.since_checkpoint + 1 >= CHECKPOINT_EVERY:
            try:
                snap.state.apply(row)
                snap.rows.append(row)
                snap.files.append(DataFile(action.path, action.size, 1, row["version"],
                                           row["version"]))
                snap.version += 1
                snap.since_checkpoint += 1
                snap.table.load_as_version(snap.version)
                self._checkpoint(snap, archive=False)
            except Exception:
                pass  # checkpoints (a half-written checkpoint file is never referenced)
        return True

    def set_cap(self, dataset: str, epsilon: float, delta: float,
                neighbouring: str | None = None) -> Cap:
        """Record a cap for ``dataset`` in ``neighbouring`` (default add-remove). The cap
        committed last counts (commit order, not clock order); it may be below the spend,
        which then blocks every further run. A cap with δ = 0 is a pure-DP cap: it admits
        only runs with δ = 0."""
        check_new_name(dataset, "dataset")
        cap = Cap(check_epsilon(epsilon, "cap epsilon"), check_delta(delta, "cap delta"),
                  check_neighbouring(neighbouring))
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if self._commit(self._load(), "cap", dataset, epsilon=cap.epsilon,
                            delta=cap.delta, neighbouring=cap.neighbouring):
                return cap
            self._retry(attempt)
        raise AssertionError("unreachable")

    @staticmethod
    def _refuse_relation(dataset: str, neighbouring: str, cap: Cap) -> None:
        if relation_image(1.0, 0.0, neighbouring, cap.neighbouring) is None:
            raise ParameterError(
                f"the cap of dataset {dataset!r} is stated under {cap.neighbouring} "
                f"neighbours, and a {neighbouring} guarantee implies nothing under "
                f"{cap.neighbouring}: run with neighbouring {cap.neighbouring}, or set a "
                f"{neighbouring} cap (`dprect budget set-cap --neighbouring {neighbouring}`)")

    def check_relation(self, dataset: str, neighbouring: str,
                       cap: Budget | None = None) -> None:
        """Refuse (:class:`ParameterError`, parameters only) a run stated in
        ``neighbouring`` that the dataset's cap — or ``cap`` (a config cap, add/remove
        unless it is a :class:`Cap`) — cannot charge: called at plan time, before any read
        or reservation."""
        neighbouring = check_neighbouring(neighbouring)
        for c in (self.cap(check_name(dataset, "dataset")), as_cap(cap)):
            if c is not None:
                self._refuse_relation(dataset, neighbouring, c)

    def check_charge(self, dataset: str, *, epsilon: float, delta: float,
                     neighbouring: str, cap: Budget | None = None) -> None:
        """Refuse a new charge of (ε, δ), stated in ``neighbouring``, that the dataset's
        cap or ``cap`` cannot take on the ledger as it stands — :meth:`check_relation`'s
        refusal first (:class:`ParameterError`), then the check :meth:`reserve` makes
        (:class:`BudgetExceededError`), both on one read of the ledger — made at plan time
        so that a run refused for its budget reads no input. Ledger state and parameters
        only; :meth:`reserve` checks again at the version it commits."""
        neighbouring = check_neighbouring(neighbouring)
        ds = self._load().state.of(check_name(dataset, "dataset"))
        for c in (self._cap_of(ds), as_cap(cap)):  # as check_relation, on this one read
            if c is not None:
                self._refuse_relation(dataset, neighbouring, c)
        self._check_caps(dataset, ds, cap, epsilon, delta, neighbouring)

    def _check_caps(self, dataset: str, ds: DatasetState, cap: Budget | None,
                    epsilon: float, delta: float, neighbouring: str) -> None:
        for c in (self._cap_of(ds), as_cap(cap)):
            if c is not None:
                self._check_cap(dataset, ds, c, epsilon, delta, neighbouring)

    def reserve(self, dataset: str, run_id: str, *, epsilon: float, delta: float,
                method: str, features: list[str], bound: str, neighbouring: str,
                cap: Budget | None = None) -> Reservation:
        """Charge (ε, δ), stated in ``neighbouring``, to ``dataset`` for ``run_id``
        before anything is released.

        * a run id already released → its recorded result, nothing charged;
        * a run id reserved before (failed or died) → retried under the same charge, if
          the request is not larger than what was charged; a cancelled one (its charge
          withdrawn, :meth:`cancel`) is charged anew;
        * otherwise the charge is committed only if spend + request ≤ each cap, in that
          cap's relation (the ledger's cap, and ``cap``: a config cap, add/remove unless
          it is a :class:`Cap`), else :class:`BudgetExceededError`; a run whose relation
          a cap cannot charge is refused (:meth:`check_relation`).

        The check and the commit see the same verified version of the ledger (exclusive
        commit at that version + 1, re-checked after any conflict)."""
        check_new_name(dataset, "dataset")
        check_new_name(run_id, "run id")
        neighbouring = check_neighbouring(neighbouring)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            snap = self._load()
            previous = self._run(snap, dataset, run_id)
            if previous is not None and previous.status == "released":
                return Reservation(run_id, False, previous.result)
            if attempt == 1:  # where a large result will be stored: before any charge
                check_writable(self.path)
            if previous is not None and previous.status != "cancelled":
                if epsilon > previous.epsilon * (1 + TOLERANCE) or \
                        delta > previous.delta * (1 + TOLERANCE):
                    raise LedgerError(
                        f"run id {run_id!r} was charged ({previous.epsilon:g}, "
                        f"{previous.delta:g}); a retry cannot ask for more "
                        f"({epsilon:g}, {delta:g}) — use a new run id")
                return Reservation(run_id, False, None)
            self._check_caps(dataset, snap.state.of(dataset), cap, epsilon, delta,
                             neighbouring)
            if self._commit(snap, "reserve", dataset, run_id=run_id, epsilon=float(epsilon),
                            delta=float(delta), method=method, bound=bound,
                            neighbouring=neighbouring, features=json.dumps(features)):
                return Reservation(run_id, True, None)
            self._retry(attempt)
        raise AssertionError("unreachable")

    def _check_cap(self, dataset: str, ds: DatasetState, cap: Cap, epsilon: float,
                   delta: float, neighbouring: str) -> None:
        self._refuse_relation(dataset, neighbouring, cap)
        image = relation_image(epsilon, delta, neighbouring, cap.neighbouring)
        assert image is not None
        spent = self._spent_in(ds, cap.neighbouring)
        if spent is None:
            raise BudgetExceededError(
                f"privacy budget cap exceeded for dataset {dataset!r}: it holds "
                f"replace-one charges, which bound nothing under the {cap.neighbouring} "
                f"cap; nothing was released")
        new_eps, new_delta = spent.epsilon + image[0], spent.delta + image[1]
        if new_eps > cap.epsilon * (1 + TOLERANCE) or \
                new_delta > cap.delta * (1 + TOLERANCE):
            raise BudgetExceededError(
                f"privacy budget cap exceeded for dataset {dataset!r}: spent "
                f"(epsilon={spent.epsilon:g}, delta={spent.delta:g}) + this run "
                f"({image[0]:g}, {image[1]:g}) > cap ({cap.epsilon:g}, {cap.delta:g}"
                f"{'' if cap.neighbouring == ADD_REMOVE else ', ' + cap.neighbouring}); "
                f"nothing was released")

    def release(self, dataset: str, run_id: str, result: dict[str, Any]) -> dict[str, Any]:
        """Record the release of ``run_id`` with its result: inline in the ``release``
        row, or, past :data:`~.stored.INLINE_MAX_CHARS` characters of JSON, written first
        as a stored-result file the row references (:mod:`~.stored`). If another attempt
        of the same run id released first, its result is returned and this one must be
        dropped."""
        text: str | None = None
        for attempt in range(1, MAX_ATTEMPTS + 1):
            snap = self._load()
            record = self._run(snap, dataset, run_id)
            if record is None:
                raise LedgerError(f"run id {run_id!r} has no reservation in {self.path}")
            if record.status == "released":
                assert record.result is not None
                return record.result
            if record.status == "cancelled":
                raise LedgerError(f"run id {run_id!r} was cancelled (interrupted before it "
                                  f"drew noise): its charge was withdrawn, so nothing may be "
                                  f"released under it; run it again")
            if text is None:  # the file (if any) is written once, before any commit
                text = store(self.path, ledger_chunks(result), result)
            if self._commit(snap, "release", dataset, run_id=run_id,
                            result=text, method=result.get("method")):
                return result
            self._retry(attempt)
        raise AssertionError("unreachable")

    def cancel(self, dataset: str, run_id: str) -> bool:
        """Withdraw the charge of ``run_id``: for an attempt that reserved it (a new
        charge, :attr:`Reservation.new_charge`) and was interrupted before it drew any
        noise — nothing it did depended on the data's private part beyond what a 0-DP
        constant output reveals (docs/privacy.md, "Cancelled reservations"). Only a run
        still ``reserved`` is cancelled (a ``failed`` or released one, or one another
        attempt of the run id moved on, stays as it is); returns whether it was. Never
        call it once noise may have been drawn: the run must then stay charged
        (:meth:`fail`)."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            snap = self._load()
            record = self._run(snap, check_name(dataset, "dataset"), run_id)
            if record is None or record.status != "reserved":
                return False
            if self._commit(snap, "cancel", dataset, run_id=run_id,
                            message="interrupted before any noise was drawn"):
                return True
            self._retry(attempt)
        raise AssertionError("unreachable")

    def fail(self, dataset: str, run_id: str, message: str) -> None:
        """Record that ``run_id`` stopped before releasing anything (it stays charged).
        ``message`` must be what the command printed (never an exception's own text,
        which could quote data: :func:`dprect.release.guarded.guarded_release`)."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if self._commit(self._load(), "fail", dataset, run_id=run_id,
                            message=one_line(message, 2000)):
                return
            self._retry(attempt)
        raise AssertionError("unreachable")
