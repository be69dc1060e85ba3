"""A released record's JSON text as the JSON output writes it (issue #42).

A record whose lists all hold at most :data:`COMPACT_ITEMS` items is written as before,
``json.dumps(record, indent=2)``, byte for byte. A larger one (a grouped aggregate of
10^5 groups: 4·10^5 result rows) would take the pure-Python encoder (``indent`` turns
the C encoder off) tens of seconds; it is written with the same layout down to its long
lists, and each item of a long list on one line of its own, compact
(``json.dumps(item)``, the C encoder) — the same JSON value, so every reader parses the
same record. The choice depends on the lengths of released lists only (the public groups
and columns), never on a value.

A record whose rows are spooled on disk (:class:`~dprect.release.row_spool.RowSpool`: a
run drawn in the executors) is written by :func:`record_chunks` a block of rows at a time,
the same text as :func:`record_text` gives for the same rows in a list, never held whole
in memory (the JSON output and the ledger's stored copy stream it), and its rows encoded
once, where each block was drawn (:func:`item_lines`, laid out as the record's list
writes them): the record's text is its other entries' around the spool's texts."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dprect.release.row_spool import RowSpool, row_blocks

#: a list with more items than this is written one compact item per line
COMPACT_ITEMS = 1000
#: the nesting level of a record's top-level long list (its ``results``): a spooled
#: block's items are laid out for it (:func:`item_lines`)
LIST_LEVEL = 1


def _item_encoder() -> Callable[[Any], str]:
    """``json.dumps(item, allow_nan=False)`` of a long list's items, by ONE encoder made
    once: each ``json.dumps`` call with an argument makes a ``JSONEncoder`` and its C
    encoder again (about a quarter of the encoding of a record row, issue #42). The C
    encoder of CPython's :mod:`json` with the very settings ``json.dumps`` gives it
    (ASCII strings, ``": "`` and ``", "``, NaN and ±inf refused, an object it cannot
    encode refused by the same ``default``) — only the check for circular containers
    left out (a released record's JSON values hold none); without the C encoder,
    ``json.dumps`` itself."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover (a Python without json's C accelerator)
        return partial(json.dumps, allow_nan=False)
    encode = make(None, _PLAIN.default, json.encoder.encode_basestring_ascii, None,
                  _PLAIN.key_separator, _PLAIN.item_separator, False, False, False)
    return lambda item: "".join(encode(item, 0))


#: the settings ``json.dumps`` gives its encoder (compact items' separators ``": "``
#: and ``", "``), shared by :func:`_item` and :func:`item_template`
_PLAIN = json.JSONEncoder(allow_nan=False)
#: a long list's item as its compact JSON (:func:`_item_encoder`)
_item = _item_encoder()


def item_template(keys: Sequence[str], fixed: Mapping[str, str] | None = None) -> str:
    """The text :func:`_item` gives a row (a flat dict of JSON scalars) with ``keys`` in
    this order, as a ``%``-template with one ``%s`` for each value's text
    (:func:`value_texts`) but those of ``fixed`` (key → its value's text in every row,
    written in): the keys encoded and separated by the same encoder settings, so the
    template filled with the values' texts is ``_item(row)`` byte for byte — a block's
    items made a field at a time (no dict a row, issue #42)."""
    fixed = fixed or {}
    return "{" + _PLAIN.item_separator.join(
        (_item(k) + _PLAIN.key_separator).replace("%", "%%")
        + (fixed[k].replace("%", "%%") if k in fixed else "%s") for k in keys) + "}"


def item_pieces(keys: Sequence[str], fixed: Mapping[str, str] | None = None) -> list[str]:
    """:func:`item_template` cut at its values: the texts before, between and after the
    values' texts (one more than the values), ``fixed`` written in — so the pieces and a
    row's values' texts alternated and joined are the template filled with them, byte for
    byte (:func:`joined_items` joins them so)."""
    fixed = fixed or {}
    pieces: list[str] = []
    current = "{"
    for i, k in enumerate(keys):
        current += (_PLAIN.item_separator if i else "") + _item(k) + _PLAIN.key_separator
        if k in fixed:
            current += fixed[k]
        else:
            pieces.append(current)
            current = ""
    pieces.append(current + "}")
    return pieces


def joined_items(pieces: Sequence[str], texts: Sequence[pa.Array],
                 items: Mapping[int, str] | None = None, level: int = LIST_LEVEL) -> bytes:
    """:func:`join_items` of every row's item — ``pieces`` (:func:`item_pieces`) alternated
    with the row's values' texts and joined, i.e. :func:`item_template` filled with them —
    (``texts``: each value's texts as an Arrow string array, all of one length and no
    null), ASCII-encoded, made in Arrow: each row's item the pieces and its texts joined
    element-wise
    (``binary_join_element_wise``), the list's separator after each, ``items`` (row → its
    item's whole text: a row made apart) put in their rows, and the strings' one data
    buffer read as the list's text less the last separator — the same bytes as
    ``join_items([template % row for row in zip(*texts)]).encode()`` (the lists' Python
    texts) with the rows of ``items`` replaced, with no Python string a row (issue #42)."""
    if len(pieces) != len(texts) + 1 or not texts:
        raise ValueError(f"{len(pieces)} piece(s) for {len(texts)} value(s)")
    n = len(texts[0])
    if any(len(t) != n for t in texts):
        raise ValueError("the values' texts are not of one length")
    if any(t.null_count for t in texts):
        raise ValueError("a value's text is missing")
    if not n:
        return b""
    sep = _item_separator(level)
    wide = any(t.type == pa.large_string() for t in texts)
    kind = pa.large_string() if wide else pa.string()
    args: list[Any] = [pa.scalar(pieces[0], kind)]
    for text, piece in zip(texts, [*pieces[1:-1], pieces[-1] + sep], strict=True):
        args += [text.cast(kind), pa.scalar(piece, kind)]
    lines = pc.binary_join_element_wise(*args, pa.scalar("", kind))
    if items:
        rows = sorted(items)
        mask = np.zeros(n, dtype=bool)
        mask[rows] = True
        lines = pc.replace_with_mask(lines, pa.array(mask),
                                     pa.array([items[r] + sep for r in rows], kind))
    offsets = np.frombuffer(lines.buffers()[1], np.int64 if wide else np.int32)[lines.offset:]
    start, end = int(offsets[0]), int(offsets[n]) - len(sep)
    return lines.buffers()[2].slice(start, end - start).to_pybytes()


#: a JSON boolean's text as the C encoder writes it, by the bool (``False``, ``True``)
BOOL_TEXTS = ("false", "true")


def value_texts(values: Sequence[Any], kind: str = "") -> list[str]:
    """Each of ``values`` (JSON scalars) as :func:`_item` writes it, a field at a time:
    ``kind`` ``"float"`` — every value a finite float: ``float.__repr__``, what CPython's
    C encoder writes for one —, ``"bool"`` — every value a bool —, else each encoded by
    :func:`_item` (a name, a null, ``"inf"``)."""
    if kind == "float":
        return list(map(float.__repr__, values))
    if kind == "bool":
        return list(map(BOOL_TEXTS.__getitem__, values))
    return list(map(_item, values))


def join_items(items: Sequence[str], level: int = LIST_LEVEL) -> str:
    """Items' texts (:func:`_item`'s) laid out as a long list at nesting ``level`` writes
    them (:func:`item_lines`)."""
    return _item_separator(level).join(items)


def _item_separator(level: int) -> str:
    """What stands between two items of a long list at nesting ``level``."""
    return ",\n" + "  " * (level + 1)


def item_lines(rows: Sequence[Any], level: int = LIST_LEVEL) -> str:
    """``rows`` as a long list at nesting ``level`` writes its items (:func:`_item`:
    compact JSON, which escapes every control character, so never a newline inside), one
    a line, each after the one before's comma and the list's indent: a spooled block's
    text, made where the block is drawn (:class:`~dprect.release.block_pack.BlockPacker`)
    for a record's top-level list (:data:`LIST_LEVEL`), the record's text then laid out
    from it without encoding the rows again (``[`` + the text + ``]`` is their JSON)."""
    return join_items([_item(v) for v in rows], level)


def _over(value: list[Any] | RowSpool) -> bool:
    """Whether a list is long: more than :data:`COMPACT_ITEMS` items (public: its
    length)."""
    return len(value) > COMPACT_ITEMS


def _long(value: Any) -> bool:
    """Whether ``value`` is or holds a long list (:func:`_over`)."""
    if isinstance(value, RowSpool):
        return _over(value)  # flat rows: long by their number only
    if isinstance(value, list):
        return _over(value) or any(_long(v) for v in value if isinstance(v, dict | list))
    if isinstance(value, dict):
        return any(_long(v) for v in value.values()
                   if isinstance(v, dict | list | RowSpool))
    return False


def _spooled(value: Any) -> bool:
    """Whether ``value`` holds rows spooled on disk (a top-level entry of a record)."""
    return isinstance(value, dict) and any(isinstance(v, RowSpool) for v in value.values())


def _text(value: Any, level: int) -> str:
    """``value`` as ``json.dumps(value, indent=2)`` lays it out at nesting ``level``,
    except that a long list's items are one compact item per line."""
    return "".join(_chunks(value, level))


def _chunks(value: Any, level: int) -> Iterator[str]:
    """:func:`_text` of ``value`` in pieces: a long list (or spool) a block of items at a
    time (:func:`~dprect.release.row_spool.row_blocks`)."""
    pad, inner = "  " * level, "  " * (level + 1)
    if isinstance(value, RowSpool) and not _over(value):
        value = list(value)  # a short spool reads as the list it holds
    elif _spooled(value) and not _long(value):
        value = {k: list(v) if isinstance(v, RowSpool) else v for k, v in value.items()}
    if not _long(value):
        yield json.dumps(value, indent=2, allow_nan=False).replace("\n", "\n" + pad)
        return
    if isinstance(value, dict):
        sep = "{\n"
        for k, v in value.items():
            yield f"{sep}{inner}{json.dumps(k)}: "
            yield from _chunks(v, level + 1)
            sep = ",\n"
        yield "\n" + pad + "}"
        return
    sep = "[\n"
    if _over(value):
        for text in _block_texts(value, level):
            if text:
                yield sep + inner
                yield text  # as it is: a spooled text may come with its DEFLATE piece
                sep = ",\n"
    else:
        for v in value:
            yield sep + inner
            yield from _chunks(v, level + 1)
            sep = ",\n"
    yield "\n" + pad + "]"


def _block_texts(value: list[Any] | RowSpool, level: int) -> Iterator[str]:
    """A long list's items at nesting ``level`` a block at a time, as :func:`item_lines`
    writes them: a spool's texts as they were made where its blocks were drawn
    (:meth:`~dprect.release.row_spool.RowSpool.item_texts`, laid out for
    :data:`LIST_LEVEL`), else each block (:func:`~dprect.release.row_spool.row_blocks`)
    encoded now."""
    if isinstance(value, RowSpool):
        made, wanted = _item_separator(LIST_LEVEL), _item_separator(level)
        return (t if made == wanted else t.replace(made, wanted)
                for t in value.item_texts())
    return (item_lines(block, level) for block in row_blocks(value))


#: the last long record encoded and its text: the ledger's stored copy of a run's record
#: (:func:`ledger_text`) and its JSON output share one encoding (a released record is
#: never changed); one record's text is kept until the next long record is encoded
_last: list[Any] = [None, ""]


def record_text(record: dict[str, Any]) -> str:
    """The JSON output's text of ``record`` (the module notes), newline-terminated (a
    record of spooled rows: its :func:`record_chunks` joined, and not kept)."""
    if _spooled(record):
        return "".join(record_chunks(record))
    if _last[0] is record:
        return str(_last[1])
    if not _long(record):
        return json.dumps(record, indent=2, allow_nan=False) + "\n"
    text = _text(record, 0) + "\n"
    _last[:] = [record, text]
    return text


def record_chunks(record: dict[str, Any]) -> Iterator[str]:
    """:func:`record_text` of ``record`` in pieces: a record of spooled rows streamed a
    block of rows at a time (never whole in memory; the rows' text as it was spooled, not
    encoded again), any other as its one text."""
    if _spooled(record):
        yield from _chunks(record, 0)
        yield "\n"
        return
    yield record_text(record)


def ledger_chunks(record: dict[str, Any]) -> Iterator[str]:
    """:func:`ledger_text` in pieces: a record of spooled rows streamed
    (:func:`record_chunks`)."""
    if _spooled(record):
        yield from record_chunks(record)
        return
    yield ledger_text(record)


def ledger_text(record: dict[str, Any]) -> str:
    """The JSON text a ledger records of a released record: ``json.dumps(record)`` as
    always, or for a record holding a long list (too large for a ledger row: it is stored
    by reference, :mod:`dprect.release.ledger.stored`) its :func:`record_text`, which the
    JSON output of the run then writes without encoding it again."""
    return record_text(record) if _long(record) else json.dumps(record)


__all__ = ["BOOL_TEXTS", "COMPACT_ITEMS", "LIST_LEVEL", "item_lines",
           "item_pieces", "item_template", "join_items", "joined_items", "ledger_chunks",
           "ledger_text", "record_chunks", "record_text", "value_texts"]
