"""Writing the ledger: creating it (``dprect budget init``), an event row with its chain
value, a data file, and the exclusive commit at exactly the version read + 1 (see "Race
freedom" and "No implicit creation" in :mod:`dprect.release.ledger`)."""

from __future__ import annotations

import contextlib
import os
import random
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from dprect._version import __version__
from dprect.release.delta_output import native_stderr_dropped
from dprect.release.files import failure_reason
from dprect.release.ledger.chain import chain_of
from dprect.release.ledger.errors import RESTORE, LedgerError
from dprect.release.ledger.log import Snapshot
from dprect.release.ledger.queries import LedgerQueries
from dprect.release.ledger.schema import SCHEMA, TABLE_CONFIGURATION, file_stats

MAX_ATTEMPTS = 200

#: what the ledger holds after the write of an event's row failed (the row is one data
#: file and one commit: neither, or a data file no commit names, is written)
AFTER_FAILED_WRITE = {
    "reserve": "nothing was charged",
    "release": "the run stays charged (reserved) and nothing was released; once the "
               "ledger can be written, re-running the same run id runs it again under "
               "that charge",
    "fail": "the run stays charged (reserved)",
    "cancel": "the run stays charged (reserved)",
    "cap": "the cap was not changed",
}


def _now() -> datetime:
    return datetime.now(UTC)


class LedgerWrites(LedgerQueries):
    """The ledger's writes: create it, and commit rows at exactly the version read + 1."""

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
                f"deleted or damaged, {RESTORE}; a new ledger would start from zero spend)")
        row = self._row("init", None, 0, "", message="ledger created")
        try:
            where.mkdir(parents=True, exist_ok=True)
            with native_stderr_dropped():
                write_deltalake(self.path, pa.Table.from_pylist([row], schema=SCHEMA),
                                mode="error", configuration=TABLE_CONFIGURATION,
                                commit_properties=CommitProperties(max_commit_retries=0))
        except Exception as exc:
            text = str(exc).lower()
            if "already exists" in text or type(exc).__name__ == "CommitFailedError":
                raise LedgerError(f"a budget ledger already exists at {self.path} (created "
                                  "at the same time by another process)") from None
            raise LedgerError(f"cannot create the budget ledger at {self.path}: "
                              f"{failure_reason(exc)}") from None

    # -- writing ------------------------------------------------------------------------
    def _row(self, event: str, dataset: str | None, version: int, previous: str,
             **fields: Any) -> dict[str, Any]:
        row: dict[str, Any] = {name: None for name in SCHEMA.names}
        row.update(event=event, dataset=dataset, recorded_at=_now(),
                   dprect_version=__version__, version=version)
        row.update(fields)
        # hash what will be read back (timestamps normalised to UTC microseconds)
        row = pa.Table.from_pylist([row], schema=SCHEMA).to_pylist()[0]
        row["chain"] = chain_of(previous, row)
        return row

    def _write_file(self, prefix: str, version: int, rows: list[dict[str, Any]]) -> Any:
        """Write ``rows`` as one Parquet file of the table; its add action."""
        import pyarrow.parquet as pq
        from deltalake.transaction import AddAction

        name = f"{prefix}{version:020d}-{uuid.uuid4().hex}.parquet"
        where = os.path.join(self.path, name)
        try:
            pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), where,
                           row_group_size=4096)
        except BaseException:  # a full disk, an interrupt: no part of the file stays
            self._discard(name)
            raise
        return AddAction(name, os.path.getsize(where), {}, int(time.time() * 1000), True,
                         file_stats(rows))

    def _transact(self, snap: Snapshot, actions: list[Any], event: str | None = None
                  ) -> bool:
        """Commit ``actions`` at exactly ``snap.version + 1``; False if another writer
        committed that version first (nothing is retried by delta-rs). A commit that
        fails otherwise is a :class:`LedgerError` saying what it leaves
        (:meth:`write_failed`, by the ``event`` committed)."""
        from deltalake import CommitProperties, PostCommitHookProperties
        from deltalake.exceptions import CommitFailedError

        try:
            with native_stderr_dropped():  # a failing native write's panic lines
                snap.table.create_write_transaction(
                    actions, mode="append", schema=SCHEMA,
                    commit_properties=CommitProperties(max_commit_retries=0),
                    post_commithook_properties=PostCommitHookProperties(
                        create_checkpoint=False, cleanup_expired_logs=False))
        except CommitFailedError:
            return False
        except Exception as exc:
            raise self.write_failed(event, exc) from None
        return True

    def write_failed(self, event: str | None, exc: BaseException) -> LedgerError:
        """The one line of a failed write of an ``event`` row (its data file or its
        commit): the path, the operating system's reason (:func:`failure_reason`: a full
        disk is "No space left on device"), and what the failure leaves
        (:data:`AFTER_FAILED_WRITE`) — never the library's text."""
        return LedgerError(f"cannot write the budget ledger at {self.path} "
                           f"({failure_reason(exc)}); "
                           f"{AFTER_FAILED_WRITE.get(event or '', 'nothing was released')}")

    def _discard(self, name: str) -> None:
        with contextlib.suppress(OSError):
            os.remove(os.path.join(self.path, name))

    def _retry(self, attempt: int) -> None:
        if attempt >= MAX_ATTEMPTS:
            raise LedgerError(f"the ledger at {self.path} is too busy: gave up after "
                              f"{MAX_ATTEMPTS} conflicting commits")
        time.sleep(random.uniform(0.005, 0.05) * min(attempt, 10))
