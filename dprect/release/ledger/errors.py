"""The ledger's errors and its one-line messages (see "Integrity" and the last paragraph
of :mod:`dprect.release.ledger`): every :class:`LedgerError` is a single line without
terminal escape codes; :class:`DamageError` is a failed verification step, turned into
"the budget ledger ... is damaged" by the reader."""

from __future__ import annotations

import re

from dprect.core.errors import DprectError, ParameterError
from dprect.core.validation import check_id_text

_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")
RESTORE = "restore it from a backup (see 'The privacy budget ledger' in docs/operations.md)"


def one_line(text: str, limit: int | None = None) -> str:
    """The first meaningful line of ``text``, without terminal escape codes (delta-rs
    messages can carry native backtraces and coloured continuation lines), optionally
    shortened to ``limit`` characters."""
    text = _ANSI.sub("", str(text)).replace("\r", "\n")
    line = ""
    for candidate in text.splitlines():
        candidate = " ".join(candidate.split())
        if candidate and any(c.isalnum() for c in candidate) and \
                not candidate.lower().startswith(("traceback", "stack backtrace")):
            line = candidate
            break
    line = "".join(c for c in line if c.isprintable()) or "(no message)"
    if limit is not None and len(line) > limit:
        line = line[:limit - 1].rstrip() + "…"
    return line


class LedgerError(DprectError):
    """The ledger cannot be read or written, is damaged, or a request contradicts it.
    The message is always one line without terminal escape codes."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class NoLedgerError(LedgerError):
    """There is no ledger at the path (it was never initialised, or its log is gone)."""


class BudgetExceededError(LedgerError):
    """The reservation would take the dataset's spend over its cap."""


class DamageError(Exception):
    """Internal: a verification step failed (the reason is one short line)."""


def check_name(value: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(f"{what} must be a non-empty string, got {value!r}")
    return value


def check_new_name(value: str, what: str) -> str:
    """:func:`check_name` for a name the ledger is about to record (a reservation's
    dataset and run id, a cap's dataset): also refused when it holds a control or
    format character (:func:`dprect.core.validation.check_id_text`), before the ledger
    is read. A name already recorded is still read as it is."""
    check_id_text(value, what)
    return check_name(value, what)
