"""Output files: checked before a run reads or reserves anything, written atomically.

:func:`check_output_path` refuses a location that cannot be written (by its path only);
:func:`write_atomic` writes to a temporary file in the target folder and renames it into
place, so a reader sees the whole file or nothing.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from dprect.core.errors import ParameterError


def check_output_path(path: str | os.PathLike[str], what: str, *, folder: bool = False
                      ) -> None:
    """Refuse, before anything is read, reserved or written, an output location that
    cannot be written: for a file (``folder=False``) a path that is a folder; for a folder
    (a Delta table) a path that is a file; and a path whose nearest existing ancestor is
    not a writable folder (missing folders are created when the output is written).
    Raises :class:`ParameterError` naming ``what`` and the path. Nothing is created."""
    target = Path(path)
    shown = str(path)
    if not shown.strip():
        raise ParameterError(f"{what} is an empty path")
    if target.exists():
        if folder and not target.is_dir():
            raise ParameterError(f"{what} {shown!r} is a file; give a folder path")
        if not folder and target.is_dir():
            raise ParameterError(f"{what} {shown!r} is a folder; give a file path")
        where = target if folder else target.parent
        if not os.access(where, os.W_OK | os.X_OK):
            raise ParameterError(f"{what} {shown!r} cannot be written: no write permission "
                                 f"in {str(where)!r}")
        return
    ancestor = target.absolute().parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ParameterError(f"{what} {shown!r} cannot be written: {str(ancestor)!r} is "
                             "not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ParameterError(f"{what} {shown!r} cannot be written: no write permission in "
                             f"{str(ancestor)!r}")


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write ``data`` to ``path`` so that ``path`` holds the old content or the whole new
    one, never a part (temporary file in the same folder, fsync, rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
