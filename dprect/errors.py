"""Error types of dprect.

Every error a user can cause is a :class:`ValueError` subclass whose message names the
offending parameter, column or file, so callers (and the CLI, which turns them into one
line and a non-zero exit code) never have to read a traceback.
"""

from __future__ import annotations


class DprectError(ValueError):
    """Base class of the errors dprect raises for bad parameters or bad input."""


class ParameterError(DprectError):
    """A parameter (ε, δ, β, a grid, a seed, a method name, ...) is invalid."""


class InputDataError(DprectError):
    """The input data is unusable: wrong shape, missing or non-numeric column, NaN or
    infinite feature values, labels other than 0/1, unreadable file."""
