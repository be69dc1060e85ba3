"""The hash chain over the event rows (see "Integrity" in :mod:`dprect.release.ledger`):
an event's ``chain`` is SHA-256 over the previous event's chain and this event's other
fields (a checkpoint's state bound by its SHA-256), with this process's caches of the
links and states it hashed."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

from dprect.release.ledger.schema import SCHEMA


def _json_default(value: Any) -> str:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    raise TypeError(f"cannot hash a {type(value).__name__}")


#: SHA-256 of the checkpoint states this process hashed last, by the string object (kept
#: referenced, so an id is never reused while it is a key; strings are immutable)
_DIGESTS: OrderedDict[int, tuple[str, str]] = OrderedDict()


def _digest(text: str) -> str:
    """SHA-256 hex of ``text``; a state read from a cached file (the same string object)
    is hashed once per process, not once per operation."""
    hit = _DIGESTS.get(id(text))
    if hit is not None and hit[0] is text:
        _DIGESTS.move_to_end(id(text))
        return hit[1]
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    _DIGESTS[id(text)] = (text, digest)
    while len(_DIGESTS) > 8:
        _DIGESTS.popitem(last=False)
    return digest


def chain_of(previous: str, row: dict[str, Any]) -> str:
    """The chain value of ``row``: SHA-256 of the previous chain and every other field."""
    body = {name: row[name] for name in SCHEMA.names if name != "chain"}
    if row["event"] == "checkpoint" and isinstance(row["result"], str):  # bound by digest
        body["result"] = "sha256:" + _digest(row["result"])
    text = json.dumps([previous, body], default=_json_default, sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: rows whose link to the previous chain value this process checked, by the row object
#: (kept referenced, so an id is never reused while it is a key): a row of a file read
#: again (changed size or modification time: :meth:`Ledger._read`) is a new object
_LINKS: OrderedDict[int, tuple[dict[str, Any], str]] = OrderedDict()
_CACHED_LINKS = 4096


def linked(previous: str, row: dict[str, Any]) -> bool:
    """Whether ``row``'s chain value is the link from ``previous`` (each row object is
    hashed once per process: the reserve and the release of a job share the rows read)."""
    hit = _LINKS.get(id(row))
    if hit is not None and hit[0] is row and hit[1] == previous:
        return True
    if row["chain"] != chain_of(previous, row):
        return False
    _LINKS[id(row)] = (row, previous)
    while len(_LINKS) > _CACHED_LINKS:
        _LINKS.popitem(last=False)
    return True


def forget_hashes() -> None:
    """Empty this process's caches of rows linked and states hashed."""
    _LINKS.clear()
    _DIGESTS.clear()
