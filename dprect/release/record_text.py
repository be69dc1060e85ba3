"""A released record's JSON text as the JSON output writes it (issue #42).

A record whose lists all hold at most :data:`COMPACT_ITEMS` items is written as before,
``json.dumps(record, indent=2)``, byte for byte. A larger one (a grouped aggregate of
10^5 groups: 4·10^5 result rows) would take the pure-Python encoder (``indent`` turns
the C encoder off) tens of seconds; it is written with the same layout down to its long
lists, and each item of a long list on one line of its own, compact
(``json.dumps(item)``, the C encoder) — the same JSON value, so every reader parses the
same record. The choice depends on the lengths of released lists only (the public groups
and columns), never on a value."""

from __future__ import annotations

import json
from typing import Any

#: a list with more items than this is written one compact item per line
COMPACT_ITEMS = 1000


def _over(value: list[Any]) -> bool:
    """Whether a list is long: more than :data:`COMPACT_ITEMS` items (public: its
    length)."""
    return len(value) > COMPACT_ITEMS


def _long(value: Any) -> bool:
    """Whether ``value`` is or holds a long list (:func:`_over`)."""
    if isinstance(value, list):
        return _over(value) or any(_long(v) for v in value if isinstance(v, dict | list))
    if isinstance(value, dict):
        return any(_long(v) for v in value.values() if isinstance(v, dict | list))
    return False


def _text(value: Any, level: int) -> str:
    """``value`` as ``json.dumps(value, indent=2)`` lays it out at nesting ``level``,
    except that a long list's items are one compact item per line."""
    pad, inner = "  " * level, "  " * (level + 1)
    if not _long(value):
        return json.dumps(value, indent=2, allow_nan=False).replace("\n", "\n" + pad)
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {_text(v, level + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if _over(value):
        items = [inner + json.dumps(v, allow_nan=False) for v in value]
    else:
        items = [inner + _text(v, level + 1) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + pad + "]"


#: the last long record encoded and its text: the ledger's stored copy of a run's record
#: (:func:`ledger_text`) and its JSON output share one encoding (a released record is
#: never changed); one record's text is kept until the next long record is encoded
_last: list[Any] = [None, ""]


def record_text(record: dict[str, Any]) -> str:
    """The JSON output's text of ``record`` (the module notes), newline-terminated."""
    if _last[0] is record:
        return str(_last[1])
    if not _long(record):
        return json.dumps(record, indent=2, allow_nan=False) + "\n"
    text = _text(record, 0) + "\n"
    _last[:] = [record, text]
    return text


def ledger_text(record: dict[str, Any]) -> str:
    """The JSON text a ledger records of a released record: ``json.dumps(record)`` as
    always, or for a record holding a long list (too large for a ledger row: it is stored
    by reference, :mod:`dprect.release.ledger.stored`) its :func:`record_text`, which the
    JSON output of the run then writes without encoding it again."""
    return record_text(record) if _long(record) else json.dumps(record)


__all__ = ["COMPACT_ITEMS", "ledger_text", "record_text"]
