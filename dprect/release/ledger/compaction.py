"""Checkpoints and compaction (see "Checkpoints" and "Compaction" in
:mod:`dprect.release.ledger`): a checkpoint commit merges the one-event files since the
previous checkpoint into the checkpoint's file (and, past :data:`ARCHIVE_AFTER` files or
for ``dprect budget compact``, every older file into one archive), writes a Delta
checkpoint, and removes what no reader at a version at or after the previous checkpoint
needs, with the run-index files neither checkpoint names."""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from typing import Any

import pyarrow as pa

from dprect.release.files import failure_reason
from dprect.release.ledger.errors import LedgerError
from dprect.release.ledger.log import DataFile, Snapshot, delta_reason
from dprect.release.ledger.run_index import RUNS_DIR, RUNS_SUFFIX
from dprect.release.ledger.schema import (
    ARCHIVE_FILE,
    CHECKPOINT_FILE,
    EVENT_FILE,
    SCHEMA,
)
from dprect.release.ledger.state import STATE_HEADER, referenced
from dprect.release.ledger.writes import MAX_ATTEMPTS, LedgerWrites

#: a checkpoint is written once this many events follow the newest one
CHECKPOINT_EVERY = 32
DELTA_CHECKPOINT_EVERY = 8  # and a Delta checkpoint every this many commits
#: a checkpoint also merges the older files into one archive once there are more than this
ARCHIVE_AFTER = 48


class LedgerCompaction(LedgerWrites):
    """The ledger's checkpoints and compaction."""

    def _checkpoint(self, snap: Snapshot, *, archive: bool, maintain: bool = True
                    ) -> DataFile | None:
        """Commit a checkpoint at ``snap.version + 1``: one file holding the events since
        the newest checkpoint and the checkpoint row (the state after them), replacing
        their one-event files; with ``archive`` every older file is merged into one
        archive file too. Then a Delta checkpoint at that version, and the cleanup of what
        no reader at a version ≥ the previous checkpoint needs (``maintain``). Returns the
        checkpoint's file; None if another writer committed first."""
        from deltalake.transaction import RemoveAction

        newest = snap.checkpoint
        tail = [f for f in snap.files if newest is None or f.first > newest]
        tail_rows = [r for r in snap.rows if newest is None or r["version"] > newest]
        w = snap.version + 1
        # written in format 3 (a ledger's older format is replaced here); the run index's
        # changed buckets get their files first (a reader of this checkpoint needs them)
        row = self._row("checkpoint", None, w, snap.last_chain, result=snap.state.text(),
                        message=f"state after commit versions 0..{w - 1}")
        self._checkpoint_row = row
        try:
            if row["result"].split("\n", 1)[0] == STATE_HEADER:
                snap.state.index.write()
        except OSError as exc:
            raise LedgerError(f"cannot write the budget ledger's run index at {self.path} "
                              f"({failure_reason(exc)})") from None
        actions = [self._write_file(CHECKPOINT_FILE, w, [*tail_rows, row])]
        merged = list(tail)
        keep = {f.path for f in snap.files if f.checkpoint and f.last == newest}
        old = [f for f in snap.files if f not in tail and f.path not in keep]
        merge_old = len(old) > 1 or bool(old and not old[0].path.startswith(ARCHIVE_FILE))
        if (archive and merge_old) or len(old) > ARCHIVE_AFTER:
            actions.append(self._archive(w, old))
            merged += old
        now = int(time.time() * 1000)
        actions += [RemoveAction(f.path, False, now, f.size) for f in merged]
        if not self._transact(snap, actions):
            for a in actions:
                if not isinstance(a, RemoveAction):
                    self._discard(a.path)
            return None
        if maintain:
            try:
                from deltalake import DeltaTable

                table = DeltaTable(self.path, version=w)
                table.create_checkpoint()
                horizon = w if archive else newest
                keep = referenced([row["result"], *(
                    r["result"] for r in snap.rows if r["event"] == "checkpoint"
                    and horizon is not None and r["version"] >= horizon)])
                self._cleanup(table, horizon, keep)
            except Exception:
                pass  # an optimisation only: the checkpoint is committed
        first = actions[0]
        made = DataFile(first.path, first.size, len(tail_rows) + 1,
                        tail_rows[0]["version"] if tail_rows else w, w)
        kept = [f for f in snap.files if f not in merged]
        if len(actions) > 1 and not isinstance(actions[1], RemoveAction):
            kept.append(DataFile(actions[1].path, actions[1].size, sum(f.rows for f in old),
                                 min(f.first for f in old), max(f.last for f in old)))
        self._files_after = sorted([*kept, made], key=lambda f: f.first)
        return made

    def _archive(self, version: int, files: list[DataFile]) -> Any:
        """One archive file with the rows of ``files`` (merged as Arrow tables); its add
        action."""
        import pyarrow.parquet as pq
        from deltalake.transaction import AddAction

        try:
            data = pa.concat_tables([
                pq.read_table(os.path.join(self.path, f.path), schema=SCHEMA)
                for f in files]).sort_by("version")
        except Exception as exc:
            raise LedgerError(f"cannot compact the budget ledger at {self.path}: "
                              f"{delta_reason(exc)}") from None
        name = f"{ARCHIVE_FILE}{version:020d}-{uuid.uuid4().hex}.parquet"
        where = os.path.join(self.path, name)
        pq.write_table(data, where, row_group_size=4096)
        versions = data.column("version")
        stats = json.dumps({"numRecords": data.num_rows,
                            "minValues": {"version": versions[0].as_py()},
                            "maxValues": {"version": versions[-1].as_py()},
                            "nullCount": {}})
        return AddAction(name, os.path.getsize(where), {}, int(time.time() * 1000), True,
                         stats)

    def _cleanup(self, table: Any, horizon: int | None, keep: set[str] | None = None
                 ) -> None:
        """Remove commit files, Delta checkpoints and data files no reader at a version
        ≥ ``horizon`` needs (a Delta checkpoint at or after it holds the table), and, when
        ``keep`` is given (the run-index digests the checkpoints at versions ≥ ``horizon``
        name), every other run-index file older than ``self._runs_grace`` seconds."""
        if horizon is None:
            return
        active = {str(p) for p in pa.table(table.get_add_actions()).column("path").to_pylist()}
        log = os.path.join(self.path, "_delta_log")
        last = _read_last_checkpoint(log)
        if last is None or last < horizon:
            return
        for name in os.listdir(log):
            digits = name.split(".", 1)[0]
            if digits.isdigit() and len(digits) == 20 and int(digits) < horizon and \
                    (name.endswith(".json") or name.endswith(".checkpoint.parquet")):
                self._discard(os.path.join("_delta_log", name))
        for name in os.listdir(self.path):
            if not name.endswith(".parquet") or name in active:
                continue
            written = _version_of_name(name)
            if written is None or written < horizon:
                self._discard(name)
        if keep is None:
            return
        now = time.time()
        with contextlib.suppress(OSError), os.scandir(os.path.join(self.path, RUNS_DIR)
                                                      ) as entries:
            for entry in entries:
                if entry.name.removesuffix(RUNS_SUFFIX) not in keep:
                    with contextlib.suppress(OSError):
                        if now - entry.stat().st_mtime >= self._runs_grace:
                            os.remove(entry.path)

    def compact(self) -> int:
        """``dprect budget compact``: verify everything from version 0, then commit a
        checkpoint that merges every file into three (the archive, the previous
        checkpoint's, the new one's) and remove what the table no longer references.
        Safe while other runs charge the ledger (an exclusive commit like any other;
        readers that race the cleanup re-read). Returns the new version."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            snap = self._load(full=True)
            if snap.checkpoint is None or snap.since_checkpoint:
                if self._checkpoint(snap, archive=False) is None:
                    self._retry(attempt)
                    continue
                snap = self._load()  # the files merged below were verified just now
            if self._checkpoint(snap, archive=True) is not None:
                return snap.version + 1
            self._retry(attempt)
        raise AssertionError("unreachable")


def _version_of_name(name: str) -> int | None:
    for prefix in (EVENT_FILE, CHECKPOINT_FILE, ARCHIVE_FILE):
        if name.startswith(prefix):
            digits = name[len(prefix):len(prefix) + 20]
            return int(digits) if digits.isdigit() else None
    return None  # delta-rs's own names (the init event, older ledgers' events)


def _read_last_checkpoint(log: str) -> int | None:
    try:
        with open(os.path.join(log, "_last_checkpoint"), encoding="utf-8") as fh:
            return int(json.load(fh)["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
