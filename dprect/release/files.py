"""Output files: proven writable before a run reads or reserves anything, written
atomically.

:func:`check_output_path` refuses a location that cannot be written, and proves the one
it accepts: it creates the missing folders of the path and a temporary file where the
output's own temporary file will go (named as :func:`stage_file` names it), then removes
everything it made — a location the operating system would refuse (a folder under a file,
a read-only or pseudo file system, a name too long), an existing output file that is
read-only, or a device, FIFO or socket (or a link to one: :func:`check_not_special`,
which never opens it), is refused before the charge, not after it. :func:`stage_file` writes an
output's bytes to a temporary file beside it and :func:`commit_staged` renames that into
place, so a reader sees the whole file or nothing; :func:`write_atomic` is the two in
one.

Messages name the output, its path and the operating system's reason by its error number
(:func:`os.strerror`), never an exception's own text.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from dprect.core.errors import ParameterError

#: an operating-system error number as delta-rs and Arrow write it in their messages
_ERRNO = re.compile(r"(?:os error|errno) (\d{1,4})\b", re.IGNORECASE)


#: the operating-system errors a Java ``IOException`` names by their words alone (the JDK's
#: native writes throw ``IOException(strerror(errno))``: a full disk is "No space left on
#: device", with no number): matched whole, so no other text can pass
_JAVA_OS_ERRORS = frozenset(os.strerror(n) for n in (
    errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EIO,
    errno.ENAMETOOLONG, errno.EMFILE, errno.ENFILE, errno.ENOENT, errno.ENOTDIR,
    errno.EISDIR))


def _java_classes(java_exc: Any) -> list[str]:
    """A Java object's class and superclasses, by name (py4j calls)."""
    names: list[str] = []
    cls = java_exc.getClass()
    while cls is not None and len(names) < 20:
        names.append(str(cls.getName()))
        cls = cls.getSuperclass()
    return names


def _java_reason(java_exc: Any) -> str | None:
    """Why a Spark (JVM) write failed, from its Java exception's cause chain (a py4j
    ``Py4JJavaError.java_exception``): the words of an operating-system error when an
    ``IOException`` in the chain has exactly those words for its message (a full disk: a
    Hadoop ``FSError`` around ``IOException: No space left on device``), else the first
    Spark error condition (``TASK_WRITE_FAILED``: public, as in
    :mod:`dprect.engines.spark.source`), else the innermost exception's Java class. None
    when the JVM cannot be asked (stopped)."""
    chain: list[Any] = []
    try:
        while java_exc is not None and len(chain) < 20:
            chain.append(java_exc)
            java_exc = java_exc.getCause()
        for link in chain:
            if "java.io.IOException" in _java_classes(link):
                words = str(link.getMessage() or "").strip()
                if words in _JAVA_OS_ERRORS:
                    return words
        for link in chain:
            with contextlib.suppress(Exception):  # not a SparkThrowable
                condition = link.getCondition()
                if condition:
                    return str(condition)
        return str(chain[-1].getClass().getName()) if chain else None
    except Exception:  # a stopped JVM, a broken gateway
        return None


def failure_reason(exc: BaseException) -> str:
    """Why a write failed, from the failure's kind alone (the charter: a message never
    quotes a library's exception text): the operating system's words for its error number
    (:func:`os.strerror`) — an ``OSError``'s ``errno``, else the number a native
    library's message gives (delta-rs: ``(os error 28)``; only the number is read) — for
    a Spark write (a py4j error carrying its Java exception) the reason
    :func:`_java_reason` reads from the Java cause chain, else the exception's class
    name."""
    java_exc = getattr(exc, "java_exception", None)
    if java_exc is not None:
        reason = _java_reason(java_exc)
        if reason:
            return reason
        return type(exc).__name__
    number = exc.errno if isinstance(exc, OSError) else None
    if not number:
        found = _ERRNO.search(str(exc))
        number = int(found.group(1)) if found else None
    if number:
        reason = os.strerror(number)
        if not reason.startswith("Unknown error"):
            return reason
    if isinstance(exc, OSError) and exc.strerror:
        return str(exc.strerror)
    return type(exc).__name__


def _temp_prefix(target: Path) -> str:
    return f".{target.name}."


def _probe(folder: Path, target: Path) -> None:
    """Create and remove a temporary file in ``folder`` named as an output ``target``'s
    own temporary file will be (raises the OSError of a refusal)."""
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".tmp", dir=folder)
    os.close(fd)
    os.unlink(tmp)


def _missing_folders(target: Path, folder: bool, what: str, shown: str
                     ) -> tuple[Path, list[Path]]:
    """The folder an output is written in (``home``) and its missing folders, deepest
    first; refuses a folder where a file goes, a file where a folder goes, and a file (or
    a dangling link) on the way."""
    if target.is_dir() and not folder:
        raise ParameterError(f"{what} {shown!r} is a folder; give a file path")
    if target.exists() and folder and not target.is_dir():
        raise ParameterError(f"{what} {shown!r} is a file; give a folder path")
    home = (target if folder else target.parent).absolute()
    missing: list[Path] = []
    ancestor = home
    while not ancestor.is_dir():
        if ancestor.exists() or ancestor.is_symlink():
            raise ParameterError(f"{what} {shown!r} cannot be written: {str(ancestor)!r} "
                                 "is not a folder")
        missing.append(ancestor)
        if ancestor == ancestor.parent:
            break
        ancestor = ancestor.parent
    return home, missing


#: the kinds of file an output cannot be: each test of a mode (:func:`os.stat`'s, which
#: follows a link and never opens the file — opening a FIFO waits for a writer) and how a
#: refusal names it
_SPECIAL = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
            (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def special_file(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it is (or links to) a device, a FIFO or a socket — "a
    character device" … — else None (a regular file, a folder, nothing, or a path that
    cannot be looked up: left to the other checks). Read with :func:`os.stat` only:
    nothing is opened."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, a dangling link, a name too long, a NUL
        return None
    return next((kind for test, kind in _SPECIAL if test(mode)), None)


#: why an output cannot be a device, a FIFO or a socket (:func:`check_not_special`)
REPLACED = "the output would replace it, not write to it"


def check_not_special(path: str | os.PathLike[str], what: str, *, folder: bool = False,
                      why: str = REPLACED) -> None:
    """Refuse a location that is a device, a FIFO or a socket, or a link to one
    (``/dev/null``, a ``mkfifo`` path) — decided by :func:`special_file` alone, never
    opened. An output is a new file renamed into place, which would replace the device's
    or pipe's name (``/dev/null`` itself, run as root) and never write to it; the budget
    ledger is a Delta table's folder (:func:`dprect.release.ledger.log.check_ledger_path`
    gives its own ``why``). The message names ``what``, the path, what it is and
    ``why``."""
    kind = special_file(path)
    if kind is not None:
        link = "links to" if Path(path).is_symlink() else "is"
        noun = "folder" if folder else "regular file"
        raise ParameterError(f"{what} {str(path)!r} {link} {kind}, not a {noun}: {why}; "
                             f"give a {'folder' if folder else 'file'} path")


def check_output_path(path: str | os.PathLike[str], what: str, *, folder: bool = False
                      ) -> None:
    """Refuse, before anything is read, reserved or written, an output location that
    cannot be written, and prove the one it accepts. Never a device, a FIFO or a socket,
    nor a link to one (:func:`check_not_special`). For a file (``folder=False``): not a
    folder, nor a path ending as one (``o.json/``, ``o.json/.``), not an existing file
    this process may not write (read-only: the rename that commits the output would
    replace it anyway), and its folder (made if missing) takes the output's temporary
    file; for a folder (a Delta table): not a file, and the folder (made if missing)
    takes a file. Missing folders are created for the proof and removed again (only
    those it made, deepest first), so nothing is left behind. Raises
    :class:`ParameterError` naming ``what``, the path and the operating system's reason."""
    target = Path(path)
    shown = str(path)
    if not shown.strip():
        raise ParameterError(f"{what} is an empty path; give the path to write to")
    if not folder and os.path.basename(shown) in ("", ".", ".."):
        # ``o.json/`` or ``o.json/.``: the probe would read it as ``o.json`` (pathlib
        # drops the ending), but the write opens the path as given and fails after the
        # charge
        raise ParameterError(f"{what} {shown!r} ends as a folder path does ('/', '.' or "
                             "'..'); give a file path")
    check_not_special(path, what, folder=folder)  # before the probe: never opened
    try:
        home, missing = _missing_folders(target, folder, what, shown)
    except OSError as exc:  # e.g. a name too long to look up
        raise ParameterError(f"{what} {shown!r} cannot be written ({failure_reason(exc)})"
                             ) from None
    if not folder and target.is_file() and not os.access(target, os.W_OK):
        # the rename of :func:`commit_staged` would replace it whatever its mode: a file
        # its owner made read-only is refused as its own write would be
        raise ParameterError(f"{what} {shown!r} cannot be written: the file is read-only "
                             f"({os.strerror(errno.EACCES)})")
    made: list[Path] = []
    current = missing[-1].parent if missing else home  # the folder being written in
    try:
        for step in reversed(missing):
            try:
                os.mkdir(step)
                made.append(step)
            except FileExistsError:  # another run made it meanwhile: not ours to remove
                if not step.is_dir():
                    raise
            current = step
        _probe(home, target if not folder else home / "_probe")
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise ParameterError(f"{what} {shown!r} cannot be written: no write permission "
                                 f"in {str(current)!r} ({failure_reason(exc)})") from None
        raise ParameterError(f"{what} {shown!r} cannot be written in {str(current)!r} "
                             f"({failure_reason(exc)})") from None
    finally:
        for step in reversed(made):
            with contextlib.suppress(OSError):  # another writer's file in it: keep it
                os.rmdir(step)


def missing_parents(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The folders that do not exist yet on the way to ``paths`` (each path's own folder
    and its missing ancestors, absolute), deepest first, each once — the folders that
    writing those paths will create (:func:`removed_if_left_empty`)."""
    missing: set[Path] = set()
    for path in paths:
        ancestor = Path(path).absolute().parent
        with contextlib.suppress(OSError):
            while not ancestor.exists() and not ancestor.is_symlink() \
                    and ancestor != ancestor.parent:
                missing.add(ancestor)
                ancestor = ancestor.parent
    return sorted(missing, key=lambda p: (-len(p.parts), str(p)))


def remove_empty_folders(folders: Iterable[Path]) -> None:
    """Remove each of ``folders`` (deepest first, as :func:`missing_parents` lists them)
    that is an empty folder now; one that holds anything — another writer's file, an
    output already written — or is gone stays as it is."""
    for folder in folders:
        with contextlib.suppress(OSError):  # not empty, not a folder, gone: kept
            os.rmdir(folder)


@contextlib.contextmanager
def removed_if_left_empty(paths: Iterable[str | os.PathLike[str]]) -> Iterator[None]:
    """Write ``paths`` inside: if the block fails (an error, or an interrupt), the folders
    that were missing on the way to them before it began (:func:`missing_parents`), and
    only those, are removed when they are empty, deepest first — a failed write leaves no
    folder it made behind, and a folder that was there before, or holds a file, stays."""
    missing = missing_parents(paths)
    try:
        yield
    except BaseException:
        remove_empty_folders(missing)
        raise


#: what a staged file holds: its bytes, its text, or a writer that writes it into the open
#: file a piece at a time (an output streamed from spooled rows, issue #42)
Data = bytes | str | Callable[[BinaryIO], None]


def _umask() -> int:
    """This process's umask: read from ``/proc/self/status`` where there is one (no
    change to the process's state), else set and restored at once."""
    with contextlib.suppress(OSError, ValueError), \
            open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _output_mode(target: Path) -> int:
    """The permissions an output gets: an existing file's own (a rewrite keeps them, as
    writing it in place would), else a new file's under the umask (``0o666 & ~umask``) —
    not the owner-only mode of the temporary file it is written to."""
    with contextlib.suppress(OSError):
        return target.stat().st_mode & 0o7777
    return 0o666 & ~_umask()


def open_staged(path: str | os.PathLike[str]) -> tuple[str, BinaryIO]:
    """A new temporary file in ``path``'s folder (made if missing), open for writing: its
    path (for :func:`close_staged`, then :func:`commit_staged`) and its handle. It has the
    permissions the output will have (:func:`_output_mode`), so the rename that commits it
    gives the output those."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, _output_mode(target))
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    return tmp, os.fdopen(fd, "wb")


def close_staged(tmp: str, fh: BinaryIO, ok: bool = True) -> None:
    """Close a file of :func:`open_staged`: synced to disk, or (``ok`` False, or when
    the sync fails) removed."""
    try:
        with fh:
            if ok:
                fh.flush()
                os.fsync(fh.fileno())
    except BaseException:
        ok = False
        raise
    finally:
        if not ok:
            Path(tmp).unlink(missing_ok=True)


def stage_file(path: str | os.PathLike[str], data: Data) -> str:
    """Write ``data`` to a temporary file in ``path``'s folder (made if missing), synced
    to disk; returns the temporary file's path for :func:`commit_staged`. A writer that
    fails leaves no file."""
    tmp, fh = open_staged(path)
    try:
        if callable(data):
            data(fh)
        else:
            fh.write(data.encode() if isinstance(data, str) else data)
    except BaseException:
        close_staged(tmp, fh, ok=False)
        raise
    close_staged(tmp, fh)
    return tmp


def commit_staged(tmp: str, path: str | os.PathLike[str]) -> None:
    """Rename a staged file into place (one rename in one folder: atomic)."""
    os.replace(tmp, path)


def discard_staged(tmp: str | None) -> None:
    """Remove a staged file that will not be committed (no error if it is gone)."""
    if tmp is not None:
        Path(tmp).unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike[str], data: Data) -> None:
    """Write ``data`` to ``path`` so that ``path`` holds the old content or the whole new
    one, never a part (:func:`stage_file`, then :func:`commit_staged`)."""
    tmp = stage_file(path, data)
    try:
        commit_staged(tmp, path)
    except BaseException:
        discard_staged(tmp)
        raise


__all__ = ["check_not_special", "check_output_path", "close_staged", "commit_staged",
           "discard_staged", "failure_reason", "missing_parents", "open_staged",
           "remove_empty_folders", "removed_if_left_empty", "special_file", "stage_file",
           "write_atomic"]
