"""The ledger's event table: its Delta schema, the events, the table's configuration and
the names of its data files (see :mod:`dprect.release.ledger`). Every commit adds one
event row; ``version`` is the commit version, ``chain`` the hash chain
(:mod:`dprect.release.ledger.chain`)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

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

EVENTS = ("init", "reserve", "release", "fail", "cap", "checkpoint", "cancel")


#: appendOnly: Delta writers refuse deletes and updates. The tombstones of files merged by a
#: checkpoint expire at once, so Delta checkpoints stay as small as the table (the
#: ledger removes those files itself, one checkpoint later: see "Compaction").
TABLE_CONFIGURATION = {"delta.appendOnly": "true",
                       "delta.deletedFileRetentionDuration": "interval 0 seconds"}


EVENT_FILE, CHECKPOINT_FILE, ARCHIVE_FILE = "event-", "checkpoint-", "archive-"


def file_stats(rows: list[dict[str, Any]]) -> str:
    versions = [r["version"] for r in rows]
    return json.dumps({"numRecords": len(rows), "minValues": {"version": min(versions)},
                       "maxValues": {"version": max(versions)}, "nullCount": {}})
