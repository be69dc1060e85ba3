"""A ledger's history written fast — for tests and benchmarks only (moved here from
dprect/release/ledger/fill.py: the package never imported it; benchmarks/ledger.py imports
it as ``tests.ledger_fill``).

:func:`fill` appends many events to a ledger, one Delta commit per event with the ledger's
own rows (:meth:`Ledger._row`: versions and hash chain) and the ledger's own checkpoints
(:meth:`Ledger._checkpoint`, every :data:`~dprect.release.ledger.CHECKPOINT_EVERY`
events), so the result is exactly the table the ordinary writes would leave. It is fast
because the commit files of events that a checkpoint merges are written directly (put if
absent) and their one-event data files are never written (the checkpoint's file holds
their rows). It has none of the writes' checks (caps, run ids) and must never run on a
ledger that anything else writes to.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from dprect.release.ledger.compaction import CHECKPOINT_EVERY
from dprect.release.ledger.log import DataFile
from dprect.release.ledger.reservations import Ledger
from dprect.release.ledger.run_index import RUNS_GRACE_S
from dprect.release.ledger.schema import file_stats
from dprect.release.ledger.state import referenced
from dprect.release.ledger.stored import store


def _commit_file(ledger: Ledger, version: int, add: dict[str, Any]) -> None:
    now = int(time.time() * 1000)
    lines = [{"commitInfo": {"timestamp": now, "operation": "WRITE",
                             "operationParameters": {"mode": "Append"},
                             "clientVersion": "dprect-ledger-fill"}},
             {"add": {"partitionValues": {}, "modificationTime": now, "dataChange": True,
                      **add}}]
    where = os.path.join(ledger.path, "_delta_log", f"{version:020d}.json")
    fd = os.open(where, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # put if absent
    try:
        os.write(fd, "".join(json.dumps(line) + "\n" for line in lines).encode())
    finally:
        os.close(fd)


def fill(ledger: Ledger, events: Iterable[Mapping[str, Any]]) -> int:
    """Append ``events`` (mappings with ``event``, ``dataset`` and the row's other fields,
    e.g. ``run_id``, ``epsilon``, ``delta``, ``method``, ``features`` as JSON text,
    ``bound``, ``neighbouring``, ``result``: a release's result JSON, stored by reference
    past :data:`~.stored.INLINE_MAX_CHARS` as :meth:`Ledger.release` stores it) to
    ``ledger``; return its new version."""
    snap = ledger._load()
    ledger._runs_grace = 0.0  # nothing else writes this ledger: no checkpoint is pending
    previous: int | None = None  # the checkpoint before the newest (the cleanup horizon)
    pending: list[dict[str, Any]] = []
    states: list[str] = []  # the states of the newest two checkpoints it wrote

    def flush(final: bool) -> None:
        written = {}
        for row in pending:
            v = row["version"]
            if final:  # the events after the last checkpoint keep their own files
                action = ledger._write_file("event-", v, [row])
                add = {"path": action.path, "size": action.size, "stats": action.stats}
            else:  # merged by the checkpoint below: the file is never read
                add = {"path": f"event-{v:020d}-{uuid.uuid4().hex}.parquet", "size": 0,
                       "stats": file_stats([row])}
            _commit_file(ledger, v, add)
            written[v] = DataFile(add["path"], add["size"], 1, v, v)
        pending.clear()
        snap.files = [written.get(f.first, f) if f.path == "" else f for f in snap.files]
        snap.table = ledger._open()

    for spec in events:
        fields = dict(spec)
        event, dataset = fields.pop("event"), fields.pop("dataset", None)
        if event == "release" and isinstance(fields.get("result"), str):
            fields["result"] = store(ledger.path, fields["result"])  # as release() does
        row = ledger._row(event, dataset, snap.version + 1, snap.last_chain, **fields)
        pending.append(row)
        snap.state.apply(row)
        snap.rows.append(row)
        snap.files.append(DataFile("", 0, 1, row["version"], row["version"]))
        snap.version += 1
        snap.since_checkpoint += 1
        if snap.since_checkpoint >= CHECKPOINT_EVERY:
            flush(final=False)
            made = ledger._checkpoint(snap, archive=False)
            if made is None:
                raise RuntimeError("another writer committed during fill()")
            previous = snap.checkpoint
            snap.files = list(ledger._files_after)
            snap.version = made.last
            snap.checkpoint, snap.since_checkpoint = made.last, 0
            assert ledger._checkpoint_row is not None
            snap.rows = [ledger._checkpoint_row]
            states = [*states[-1:], ledger._checkpoint_row["result"]]
    flush(final=True)
    table = ledger._open()
    table.create_checkpoint()
    # nothing else writes this ledger: run-index files no kept checkpoint names go now
    ledger._cleanup(table, previous, referenced(states) if len(states) == 2 else None)
    ledger._runs_grace = RUNS_GRACE_S
    return ledger.verify()
