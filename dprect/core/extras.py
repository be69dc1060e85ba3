"""Optional dependencies ("extras"): which modules each one provides, and one clear error
when a feature is used without its extra.

A core install (``pip install dprect``) is numpy + pyarrow: the Python API, the numpy
engine and ``dprect fit``/``dprect plan`` on Parquet or CSV. Everything else is an extra
of ``pyproject.toml``, imported only where it is used, after :func:`require` has checked
that it is there::

    require("spark", "the Spark engine")
    # MissingExtraError: the Spark engine needs the 'spark' extra: pip install 'dprect[spark]'

:class:`MissingExtraError` is a :class:`~dprect.core.errors.DprectError` (the CLI prints it
as one line and exits with code 2) and an :class:`ImportError`. Only the standard library
is imported here, so every layer may use it.
"""

from __future__ import annotations

import importlib.util

from dprect.core.errors import DprectError

#: extra → (the top-level modules it installs, what needs it). Kept in step with
#: ``[project.optional-dependencies]`` (tests/test_packaging.py checks).
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "spark": (("pyspark", "pandas", "numba", "isal"), "the Spark engine"),
    "connect": (("grpc", "grpc_status", "google.rpc", "zstandard"),
                "a Spark Connect session"),
    "delta": (("deltalake",), "Delta tables (the budget ledger, the results table, Delta input)"),
    "plot": (("matplotlib",), "the rectangle plot"),
    "jobs": (("yaml",), "the Spark jobs' YAML configuration"),
    "audit": (("scipy",), "the privacy audit"),
    "sklearn": (("sklearn",), "the scikit-learn classifier (dprect.RectangleClassifier)"),
}


class MissingExtraError(DprectError, ImportError):
    """A feature was used without the optional dependency that it needs."""

    def __init__(self, message: str, extra: str, module: str) -> None:
        super().__init__(message)
        self.extra = extra
        self.module = module


def missing(extra: str) -> str | None:
    """The first module of ``extra`` that cannot be imported here, or None (nothing is
    imported to tell)."""
    for module in EXTRAS[extra][0]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken or half-imported module
            found = False
        if not found:
            return module
    return None


def require(extra: str, what: str | None = None) -> None:
    """Raise :class:`MissingExtraError` naming ``extra`` unless its modules are installed.

    ``what`` names the feature in the message (default: the extra's own description)."""
    module = missing(extra)
    if module is not None:
        feature = EXTRAS[extra][1] if what is None else what
        raise MissingExtraError(
            f"{feature} needs the {extra!r} extra: pip install 'dprect[{extra}]'",
            extra, module)


__all__ = ["EXTRAS", "MissingExtraError", "missing", "require"]
