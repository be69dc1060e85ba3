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
    """The input is unusable by its schema or path: wrong shape, a missing or
    non-numeric column, a label column whose type cannot hold the positive label, an
    unreadable file. (Row values never refuse a run, except under the opt-in ``error``
    invalid-row policy, which is outside the guarantee.)"""
