"""Error types of dprect.

Every error a user can cause is a :class:`ValueError` subclass whose message names the
offending parameter, column or file, so callers (and the CLI, which turns them into one
line and a non-zero exit code) never have to read a traceback.
"""

from __future__ import annotations

from collections.abc import Callable


class DprectError(ValueError):
    """Base class of the errors dprect raises for bad parameters or bad input."""


class ParameterError(DprectError):
    """A parameter (ε, δ, β, a grid, a seed, a method name, ...) is invalid.

    With ``parameter`` (the Python name of the option it refuses, ``interval_level``) the
    message is that name followed by ``message``; a front end spells the name in its own
    words (:meth:`spelled`: ``--interval-level``, ``aggregate.interval_level``). A
    ``message`` that names other options is a tuple of its pieces, text and option names
    in turn (``(" needs N: give ", "positives", " ...")``)."""

    def __init__(self, message: str | tuple[str, ...], *,
                 parameter: str | None = None) -> None:
        self.parameter, self.detail = parameter, message
        super().__init__(self.spelled(str))

    def __reduce__(self) -> tuple[object, ...]:  # keyword-only: pickled by hand
        return _parameter_error, (type(self), self.detail, self.parameter)

    @property
    def parameters(self) -> tuple[str, ...]:
        """Every option the message names: ``parameter`` first, then the message's."""
        named = self.detail[1::2] if isinstance(self.detail, tuple) else ()
        return (*(() if self.parameter is None else (self.parameter,)), *named)

    def spelled(self, name: Callable[[str], str]) -> str:
        """The message with every option it names (:attr:`parameters`) named by ``name``."""
        pieces = self.detail if isinstance(self.detail, tuple) else (self.detail,)
        text = "".join(name(p) if i % 2 else p for i, p in enumerate(pieces))
        return text if self.parameter is None else name(self.parameter) + text


def _parameter_error(kind: type[ParameterError], message: str | tuple[str, ...],
                     parameter: str | None) -> ParameterError:
    return kind(message, parameter=parameter)


class InputDataError(DprectError):
    """The input is unusable by its schema or path: wrong shape, a missing or
    non-numeric column, a label column whose type cannot hold the positive label, an
    unreadable file. (Row values never refuse a run, except under the opt-in ``error``
    invalid-row policy, which is outside the guarantee.)"""
