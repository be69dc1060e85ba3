"""numba on demand: a plain-Python kernel compiled once per process, or None without numba.

numba is an optional dependency (the ``spark`` extra); every compiled kernel has a numpy
twin that gives the same answers, so a caller asks :func:`compile_kernel` and runs the
numpy steps when it returns None. The compiled code is cached on disk by numba
(``cache=True``: compiled once per installation, loaded in a fraction of a second by every
later process; the cache is emptied first where any source of the package changed since it
was written: :mod:`dprect.core.jit_cache`, as numba checks a kernel's own file only), for
the process only where no cache location can be written or kept fresh (a read-only
installation). numba is imported on the first call only, so a caller decides when a task
is large enough to pay for loading it (about 0.4 s).

A kernel may call other plain-Python functions of its module (a step several kernels
share: ``calls``). numba types a global name as it finds it in the function's globals when
it compiles, and cannot call a plain function: each called function is compiled first (a
kernel itself) and the kernel is compiled over its module's globals with the compiled
ones in their place — its module is left as it is, so the plain functions still run, and
are tested, in Python.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import Any

from dprect.core.jit_cache import cached_njit

_compiled: dict[tuple[str, str], Callable[..., Any] | None] = {}


def compile_kernel(fn: Callable[..., Any], calls: Sequence[Callable[..., Any]] = ()
                   ) -> Callable[..., Any] | None:
    """``fn`` compiled by numba without the GIL on first use in this process (loaded from
    numba's on-disk cache, or compiled and cached there), or None where numba is not
    installed; the plain-Python functions ``calls`` that ``fn`` calls by their global
    names are compiled first and ``fn`` calls them compiled (module notes)."""
    key = (fn.__module__, fn.__name__)
    if key not in _compiled:
        try:
            import numba
        except ImportError:
            _compiled[key] = None
            return None
        steps = {step.__name__: compile_kernel(step) for step in calls}
        if steps:  # the same code over its globals with the compiled steps in their place
            plain = fn
            fn = types.FunctionType(plain.__code__, {**plain.__globals__, **steps},
                                    plain.__name__, plain.__defaults__, plain.__closure__)
            fn.__qualname__, fn.__doc__ = plain.__qualname__, plain.__doc__
        try:  # cached on disk, the cache checked against the package's sources
            _compiled[key] = cached_njit(fn, nogil=True)
        except Exception:  # no cache location that can be kept fresh: this process only
            _compiled[key] = numba.njit(cache=False, nogil=True)(fn)
    return _compiled[key]


__all__ = ["compile_kernel"]
