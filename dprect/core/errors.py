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
    words (:meth:`spelled`: ``--interval-level``, ``aggregate.interval_level``)."""

    def __init__(self, message: str, *, parameter: str | None = None) -> None:
        self.parameter, self.detail = parameter, message
        super().__init__(message if parameter is None else parameter + message)

    def __reduce__(self) -> tuple[object, ...]:  # keyword-only: pickled by hand
        return _parameter_error, (self.detail, self.parameter)

    def spelled(self, name: Callable[[str], str]) -> str:
        """The message with its parameter named by ``name`` (its own text without one)."""
        return str(self) if self.parameter is None else name(self.parameter) + self.detail


def _parameter_error(message: str, parameter: str | None) -> ParameterError:
    return ParameterError(message, parameter=parameter)


class InputDataError(DprectError):
    """The input is unusable by its schema or path: wrong shape, a missing or
    non-numeric column, a label column whose type cannot hold the positive label, an
    unreadable file. (Row values never refuse a run, except under the opt-in ``error``
    invalid-row policy, which is outside the guarantee.)"""
