"""Friendly checks of user-facing parameters (each error names the parameter)."""

from __future__ import annotations

import math
import numbers
import unicodedata
from collections.abc import Hashable, Iterable
from typing import TypeGuard
from urllib.parse import urlparse

from dprect.core.errors import ParameterError


def _is_real(value: object) -> TypeGuard[numbers.Real]:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_epsilon(value: object, name: str = "epsilon") -> float:
    """ε must be a finite real number > 0."""
    if not _is_real(value) or not math.isfinite(float(value)) or float(value) <= 0:
        raise ParameterError(f" must be a finite number > 0, got {value!r}", parameter=name)
    return float(value)


def check_open_unit(value: object, name: str) -> float:
    """A probability strictly inside (0, 1): δ, β, ρ."""
    if not _is_real(value) or not (0.0 < float(value) < 1.0):
        raise ParameterError(f" must be a number in the open interval (0, 1), got {value!r}",
                             parameter=name)
    return float(value)


def check_delta(value: object, name: str = "delta") -> float:
    """A total δ in [0, 1): 0 asks for pure DP (only methods that need no δ can meet it)."""
    if not _is_real(value) or not (0.0 <= float(value) < 1.0):
        raise ParameterError(f" must be a number in [0, 1), got {value!r}", parameter=name)
    return float(value)


def check_positive_int(value: object, name: str, minimum: int = 1) -> int:
    """An integer ≥ ``minimum`` (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < minimum:
        raise ParameterError(f" must be an integer >= {minimum}, got {value!r}",
                             parameter=name)
    return int(value)


#: Spark Connect's default port (a URL ``sc://HOST`` without one)
CONNECT_DEFAULT_PORT = 15002


def connect_url_shown(value: object) -> str:
    """A Spark Connect URL as a message may show it: without its parameters (what
    follows the first ``;``: ``token=...``, ``user_id=...``), which can hold a
    credential — ``'sc://host:15002/;...'``."""
    text = str(value)
    head, cut, _ = text.partition(";")
    return repr(head + (";..." if cut else ""))


def check_connect_url(value: object, name: str = "remote") -> tuple[str, int]:
    """The host and port of a Spark Connect URL ``sc://HOST[:PORT][/;param=value...]``
    (port 1 to 65535, Spark's default 15002 when none is written); a
    :class:`ParameterError` naming ``name`` (``--remote``, ``spark.remote``) for anything
    else — checked from the text alone, before a session is opened or anything read. The
    message shows the URL without its parameters (:func:`connect_url_shown`)."""
    shown = connect_url_shown(value)
    shape = f"{name}: a Spark Connect URL looks like sc://HOST:PORT; got {shown}"
    if not isinstance(value, str):
        raise ParameterError(shape)
    parsed = urlparse(value)
    if parsed.scheme != "sc" or not parsed.hostname:
        raise ParameterError(shape)
    try:
        port = parsed.port
    except ValueError:  # not a number, or outside 0..65535
        port = 0
    if port is None:
        return parsed.hostname, CONNECT_DEFAULT_PORT
    if not 1 <= port <= 65535:
        raise ParameterError(f"{name}: the port of {shown} must be a number from 1 to "
                             "65535")
    return parsed.hostname, port


def is_blank(value: object) -> bool:
    """Whether ``value`` is an empty or blank text: a ``str`` that is nothing but white
    space (:meth:`str.strip`'s; any other type is not blank). The one test of an empty
    entry in a public list — a listed group value (``app.groups.check_no_empty_group``),
    a class or a positive label (``core.labels``), an entry of a comma-separated option
    (``app.options.comma_entries``) — each front refusing it in its own words. Reads the
    public parameter only: an empty CSV cell is null on both engines (no row holds the
    empty text there), and a blank key is no class of a private selection."""
    return isinstance(value, str) and not value.strip()


def repeat_at(items: Iterable[Hashable]) -> int | None:
    """The position of the first item equal to an earlier one, or None when all differ
    (for the one-line "listed twice" refusals of names, columns and groups). A list
    whose items all differ is told by one set of it (C's loop: 10^6 listed groups in
    ~0.05 s against ~0.25 s item by item, issue #42); only a list with a repeat is walked
    for its position."""
    listed = items if isinstance(items, list | tuple) else list(items)
    if len(set(listed)) == len(listed):
        return None
    seen: set[Hashable] = set()
    for i, item in enumerate(listed):
        if item in seen:
            return i
        seen.add(item)
    return None


#: the Unicode categories an id may not hold: control characters (Cc: a newline, a tab,
#: NUL, ESC), format characters (Cf: the bidirectional overrides such as U+202E, zero
#: widths), the line and paragraph separators (Zl, Zp) and lone surrogates (Cs)
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def hidden_character(text: str) -> tuple[int, int] | None:
    """The first character of ``text`` a line cannot show as itself — a control or
    format character, a line or paragraph separator, a lone surrogate (:data:`_HIDDEN`)
    — as its 1-based position and code point, else None."""
    for i, ch in enumerate(text, 1):
        if unicodedata.category(ch) in _HIDDEN:
            return i, ord(ch)
    return None


def line_text(text: str) -> str:
    """``text`` as a printed line shows it: itself when every character shows as itself,
    else its Python literal (``'x\\ny'``, ``'p\\u202eq'``) — a label of the data (a class
    a private selection released) holding a newline would print a line of its own, and
    U+202E would reverse what follows it (the groups' lines print every value so)."""
    return text if hidden_character(text) is None else repr(text)


def check_id_text(value: object, name: str) -> object:
    """Refuse an id (a run id, a dataset id) holding a control or format character
    (:func:`hidden_character`): a ledger row, the results table and every line that
    names the id would carry it — a newline splits a line, U+202E reverses what
    follows. The message names the option, the character's code point and its
    position, never the character itself. Anything but a ``str`` is returned as it is
    (the other checks refuse it)."""
    if isinstance(value, str) and (found := hidden_character(value)) is not None:
        at, code = found
        raise ParameterError(f"{name} holds a control or format character (U+{code:04X}, "
                             f"character {at}); give an id of visible characters")
    return value

