"""numba, where installed: one way to compile the project's optional kernels.

Every compiled kernel (:mod:`dprect.core.at_most_jit`,
:mod:`dprect.engines.spark.describe_jit`) is plain Python that numba compiles in
``nopython`` mode without the GIL, cached on disk beside its module so that later
processes load it in a fraction of a second; where that cache cannot be written (a
read-only installation) it is compiled for the process only. numba is imported on the
first call, so importing a kernel's module costs nothing until it is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def njit(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """``fn`` compiled by numba (cached on disk where a cache can be written), or None
    where numba is not installed."""
    try:
        import numba
    except ImportError:
        return None
    try:
        compiled: Callable[..., Any] = numba.njit(cache=True, nogil=True)(fn)
    except Exception:  # no writable cache location: compile for this process only
        compiled = numba.njit(cache=False, nogil=True)(fn)
    return compiled


__all__ = ["njit"]
