"""numba's disk cache kept no older than the source: the one place every compiled kernel is made.

numba keys a cached function on the stamp of ITS OWN source file only (numba/numba#8396):
a kernel that calls, and inlines, a function of another module — or reads another
module's constant, which numba freezes into the machine code — keeps its cached code when
only that other module changes. After a checkout that edits only a callee, a process would
load the old code. (An installation's upgrade rewrites every file; a development checkout
does not.)

So a kernel is compiled here (:func:`cached_njit`): ``numba.njit(cache=True)``, and before
its first load, once per process and cache directory, the directory's fingerprint is
checked: the SHA-256 of every ``.py`` file of the kernel's top-level package (its path
relative to the package and its bytes, in sorted order) — every module a kernel can read.
Where the fingerprint stored in the cache directory (``<package>.jit-fingerprint``)
differs, the cached ``.nbi``/``.nbc`` files there of the kernel's source directory's
modules (``<module>.<function>-<line>.pyXY[.n].nbc``: the name starts with the module's
file stem) are removed, and then the new fingerprint is written (atomically, by rename) —
so no process that sees the new fingerprint can find code cached from older sources. numba
loads lazily, on a kernel's first call, so the check made at decoration comes first. Where
that cannot be done (the directory or its files cannot be written, the package is not a
directory on disk — a zip — or numba no longer exposes the cache's location) the
kernel is refused a cache: :func:`cached_njit` raises RuntimeError, the error numba
raises where it has no cache location, and each caller keeps its own answer to that
(``engines/jit.py`` compiles for the process only; ``random_jit.py`` leaves the Python
samplers in place). Any edit to the package recompiles its kernels once (the next
process); docs/architecture.md. Not covered: a process started before an edit that
compiles a new signature after it (a long-lived worker across a checkout) still writes
code of the sources it loaded; such processes are restarted with the checkout.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

#: the cache directory's record of the sources its files were compiled from
STAMP = "{package}.jit-fingerprint"

_lock = threading.Lock()
#: per cache directory, this process's answer: its files are fresh (or could not be made so)
_checked: dict[str, bool] = {}


@cache
def source_fingerprint(package: str) -> str | None:
    """The SHA-256 (hex) of every ``.py`` file under the imported top-level ``package``
    (a plain module: its one file) — each file's path relative to the package, a NUL, its
    length, a NUL and its bytes, in sorted order; None where the sources are not plain
    files on disk (a zip)."""
    module = sys.modules.get(package)
    if module is None:
        return None
    roots = [Path(p) for p in getattr(module, "__path__", ())]
    files: list[tuple[str, Path]] = []
    if roots:
        for root in roots:
            if not root.is_dir():
                return None
            files += [(str(f.relative_to(root)), f) for f in root.rglob("*.py")]
    else:
        file = getattr(module, "__file__", None)
        if file is None or not Path(file).is_file():
            return None
        files.append((Path(file).name, Path(file)))
    digest = hashlib.sha256()
    try:
        for name, path in sorted(files):
            data = path.read_bytes()
            digest.update(b"%s\0%d\0" % (name.encode(), len(data)))
            digest.update(data)
    except OSError:
        return None
    return digest.hexdigest()


def _renew(cache_dir: Path, source_dir: Path, package: str) -> bool:
    """True once ``cache_dir`` holds no file compiled from sources other than the
    package's present ones: its stored fingerprint is the present one, or the cached
    files of ``source_dir``'s modules were removed and then the present fingerprint
    stored; False where that cannot be done (module notes)."""
    fingerprint = source_fingerprint(package)
    if fingerprint is None:
        return False
    stamp = cache_dir / STAMP.format(package=package)
    try:
        if stamp.read_text(encoding="ascii") == fingerprint:
            return True
    except (OSError, UnicodeDecodeError):
        pass
    try:
        stems = {p.stem for p in source_dir.glob("*.py")}
        for entry in cache_dir.iterdir():
            if entry.suffix in (".nbi", ".nbc") and entry.name.split(".", 1)[0] in stems:
                entry.unlink(missing_ok=True)
        written = cache_dir / f"{stamp.name}.{os.getpid()}.{threading.get_ident()}"
        written.write_text(fingerprint, encoding="ascii")
        os.replace(written, stamp)
    except OSError:
        return False
    return True


def cached_njit(fn: Callable[..., Any], **options: Any) -> Any:
    """``numba.njit(cache=True, **options)(fn)`` whose cache directory was checked, once
    in this process, to hold nothing compiled from older sources of ``fn``'s package
    (module notes); RuntimeError where numba has no cache location for it or the check
    cannot be made — the caller then compiles without the cache or not at all."""
    import numba

    dispatcher = numba.njit(cache=True, **options)(fn)
    cache_dir = getattr(getattr(dispatcher, "_cache", None), "cache_path", None)
    if not isinstance(cache_dir, str):
        raise RuntimeError("numba's cache location is not known: no cache")
    with _lock:
        if cache_dir not in _checked:
            source_dir = Path(inspect.getfile(fn)).resolve().parent
            package = fn.__module__.partition(".")[0]
            _checked[cache_dir] = _renew(Path(cache_dir), source_dir, package)
        fresh = _checked[cache_dir]
    if not fresh:
        raise RuntimeError("numba's cache cannot be kept fresh here: no cache")
    return dispatcher


__all__ = ["STAMP", "cached_njit", "source_fingerprint"]
