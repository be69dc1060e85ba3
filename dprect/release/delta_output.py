"""A Delta output's commit, all or nothing on the file system as in the table.

A Delta write puts its data files in the table's folder, then commits them in
``_delta_log/``; a write that fails before its commit (a full disk: session 40's audit as
a non-root user) leaves data files no commit names. Delta readers ignore them, but a
table's FIRST commit that fails leaves a folder holding Parquet files and no log — which
dprect's own check of a Delta output refuses ("a folder that is not empty and holds no
Delta table"), so the replay that should complete the release (docs/operations.md,
"Completing a release") was refused. :func:`committed_or_nothing` removes what such a
failed first write left. A failed commit to an existing table leaves its unnamed files
(harmless to every reader; Delta's ``VACUUM`` removes them).

delta-rs, on a write that fails that way, also lets a native thread panic, which Rust
prints on the process's stderr (file descriptor 2) — three lines and a backtrace note
beside the run's one line. :func:`native_stderr_dropped` points descriptor 2 at
``/dev/null`` for the duration of a native write; Python's own error reporting is not
inside it (the run's line is written after the write has failed).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from dprect.core.errors import ParameterError


def is_delta_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds a Delta table: a ``_delta_log/`` with a commit file."""
    log = Path(path) / "_delta_log"
    return log.is_dir() and any(log.glob("*.json"))


#: the table property prefix of a Delta table's CHECK constraints
_CONSTRAINT = "delta.constraints."


def check_table_properties(path: str | os.PathLike[str], what: str, *,
                           overwrite: bool) -> None:
    """Refuse, before the charge, an existing Delta table at ``path`` whose properties
    would refuse the release's commit after it: CHECK constraints
    (``delta.constraints.<name>``: whether a release's rows break one depends on the
    released values, so such a table is refused whatever they are), and for an
    ``overwrite`` a table made append-only (``delta.appendOnly``: no overwrite ever
    commits, nor would the replay). Read with delta-rs from the table's metadata
    (public: the output table's own properties, never a row of the input); not a Delta
    table, or no delta-rs: nothing to read here (the other checks say what the path
    is)."""
    try:
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(str(path)):
            return
        configuration = DeltaTable(str(path)).metadata().configuration or {}
    except Exception:  # no delta-rs, or a table it cannot read: the other checks say so
        return
    names = sorted(k[len(_CONSTRAINT):] for k in configuration if k.startswith(_CONSTRAINT))
    if names:
        raise ParameterError(f"{what} {str(path)!r} is a Delta table with CHECK "
                             f"constraints ({', '.join(names)}): a release its rows break "
                             "could not be written after the charge; choose another path")
    if overwrite and str(configuration.get("delta.appendOnly", "")).lower() == "true":
        raise ParameterError(f"{what} {str(path)!r} is an append-only Delta table "
                             "(delta.appendOnly): the release overwrites its table; "
                             "choose another path")


@contextlib.contextmanager
def native_stderr_dropped() -> Iterator[None]:
    """Inside, file descriptor 2 (what native code writes to) is ``/dev/null``; it is
    restored after, however the block ends. Where it cannot be redirected, nothing
    changes."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 2)
        finally:
            os.close(null)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _empty(path: Path) -> None:
    """Remove everything inside the folder ``path`` (a failed first write's files)."""
    for entry in path.iterdir():
        with contextlib.suppress(OSError):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()


@contextlib.contextmanager
def committed_or_nothing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Run a Delta write of the table at ``path`` (native noise dropped:
    :func:`native_stderr_dropped`). If the folder was absent or empty and the write
    fails, what it left is removed — the folder too when the write made it — unless a
    commit is there after all (another writer's first commit: then nothing is touched)."""
    where = Path(path)
    made = not where.exists()
    fresh = made or (where.is_dir() and not any(where.iterdir()))
    try:
        with native_stderr_dropped():
            yield
    except BaseException:
        if fresh and where.is_dir() and not is_delta_folder(where):
            _empty(where)
            if made:
                with contextlib.suppress(OSError):
                    where.rmdir()
        raise


__all__ = ["check_table_properties", "committed_or_nothing", "is_delta_folder",
           "native_stderr_dropped"]
