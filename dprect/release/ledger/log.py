"""Reading and verifying the ledger's log (steps 1-6 of "Integrity" in
:mod:`dprect.release.ledger`): the Delta table's files, the rows from the anchor, the
chain, the checkpoints re-derived; the snapshot every operation starts from, and the
history of a dataset's events. A damaged log raises :class:`LedgerError` (fail closed)."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from dprect.core.errors import ParameterError
from dprect.core.extras import require
from dprect.release.files import check_not_special, special_file
from dprect.release.ledger.chain import forget_hashes, linked
from dprect.release.ledger.errors import (
    RESTORE,
    DamageError,
    LedgerError,
    NoLedgerError,
    check_name,
)
from dprect.release.ledger.run_index import RUNS_GRACE_S
from dprect.release.ledger.schema import ARCHIVE_FILE, CHECKPOINT_FILE, EVENTS, SCHEMA
from dprect.release.ledger.state import State, referenced
from dprect.release.ledger.stored import check as check_stored

_COMMIT = re.compile(r"^(\d{20})\.json$")
#: rows of the data files this process read, by (path, size, modification time)
_ROWS: OrderedDict[tuple[str, int, int], list[dict[str, Any]]] = OrderedDict()
_CACHED_FILES = 256


# -- the files of a snapshot -------------------------------------------------------------------
@dataclass(frozen=True)
class DataFile:
    path: str
    size: int
    rows: int
    first: int  # the lowest event version in the file
    last: int  # the highest

    @property
    def checkpoint(self) -> bool:
        return self.path.startswith(CHECKPOINT_FILE)


@dataclass
class Snapshot:
    """A verified read of the ledger at one Delta version: the state after every event,
    the rows read (from the anchor to the end), and the files of the snapshot."""

    table: Any  # deltalake.DeltaTable, loaded at ``version``
    version: int
    state: State
    rows: list[dict[str, Any]]  # the rows read, in version order, ending at ``version``
    files: list[DataFile]
    checkpoint: int | None  # the newest checkpoint's version
    since_checkpoint: int  # events after it

    @property
    def last_chain(self) -> str:
        return self.rows[-1]["chain"]


def delta_reason(exc: BaseException) -> str:
    """A short, one-line description of why delta-rs could not read the table: one of a
    few fixed phrases (the text is only matched, never shown), else the error's class."""
    text = str(exc)
    if "contiguous commit files" in text:
        return "a commit file is missing from its _delta_log"
    if "No table metadata or protocol" in text:
        return "its first commit file is empty or unreadable"
    if "Json error" in text or "json" in type(exc).__name__.lower():
        return "a commit file is not valid JSON (truncated or edited)"
    if isinstance(exc, FileNotFoundError) or "no such file" in text.lower() \
            or "not found" in text.lower():
        return "a file its log refers to is missing"
    if "magic bytes" in text.lower() or "parquet" in text.lower():
        return "a data file is not the one its log recorded (edited or truncated)"
    # delta-rs's text can quote a commit file or a row: only its class is named
    return f"delta-rs cannot read it ({type(exc).__name__})"


def forget() -> None:
    """Empty this process's caches of files read, rows linked and states hashed (as a new
    process starts: benchmarks time the operations of a new job with it)."""
    _ROWS.clear()
    forget_hashes()


#: why the budget ledger cannot be a device, a FIFO or a socket (:func:`check_ledger_path`)
NOT_A_LEDGER = "a budget ledger is a Delta table's folder"


def check_ledger_path(path: str | os.PathLike[str], what: str = "the budget ledger") -> None:
    """Refuse a ledger path that is a device, a FIFO or a socket, or a link to one
    (``/dev/null``, a ``mkfifo`` path), in one line naming ``what`` (the option: ``--ledger``,
    ``fit.ledger``), the path and what it is — the outputs' rule
    (:func:`dprect.release.files.check_not_special`), from :func:`os.stat` alone: the path is
    never opened (a FIFO would block), so the refusal comes before any input is read and
    before anything is reserved or written. Without it delta-rs failed to read it and the
    run called the ledger "damaged" and asked for a backup.

    The entries of its ``_delta_log`` folder, which delta-rs reads, are held to the rule
    too (:func:`check_log_entries`)."""
    check_not_special(path, what, folder=True, why=NOT_A_LEDGER)
    check_log_entries(path, what)


def check_log_entries(path: str | os.PathLike[str], what: str = "the budget ledger"
                      ) -> None:
    """Refuse a ledger whose ``_delta_log`` (the folder, or an entry of it) is a device, a
    FIFO or a socket, or a link to one, in one line naming ``what`` (the option) and the
    entry's path, before anything is read or reserved: reading a FIFO blocks for ever,
    and a device fails inside delta-rs with its own text. From the folder's listing
    (:func:`os.scandir`: each entry's type as the listing gives it, no read) and, for an
    entry that is no plain file or folder, :func:`os.stat` alone — nothing is opened, and
    a ledger of many commits costs one listing. A missing or unlistable ``_delta_log`` is
    left to the ledger's reading (no ledger, or a damaged one)."""
    log = os.path.join(os.fspath(path), "_delta_log")
    entries = [log]
    try:
        with os.scandir(log) as listing:
            entries += [e.path for e in listing if not (e.is_file(follow_symlinks=False)
                                                        or e.is_dir(follow_symlinks=False))]
    except (OSError, ValueError):  # missing, not a folder, not readable
        pass
    for entry in entries:
        kind = special_file(entry)
        if kind is not None:
            link = "links to" if os.path.islink(entry) else "is"
            raise ParameterError(
                f"{what} {os.fspath(path)!r} holds {entry!r}, which {link} {kind}, not a "
                "regular file: a budget ledger's _delta_log holds its log's files only; "
                "remove it, or restore the ledger from a backup")


class LedgerLog:
    """The reading half of a budget ledger stored as a Delta table at ``path``
    (:class:`dprect.release.ledger.Ledger` is the whole ledger): open, verify, history."""

    def __init__(self, path: str | Path) -> None:
        if not str(path).strip():  # the current folder: refused before it is looked at
            raise ParameterError("the budget ledger's path is empty; give the ledger's "
                                 "folder (made once by `dprect budget init --ledger PATH`)")
        check_ledger_path(path)  # a device, FIFO or socket: never opened
        require("delta", "the budget ledger")
        self.path = str(path)
        self._checkpoint_row: dict[str, Any] | None = None  # the last one written
        self._files_after: list[DataFile] = []  # the table's files after it
        self._table: Any = None  # the Delta table as last read (reused while unchanged)
        self._seen: dict[int, tuple[int, int]] = {}  # its commit files' sizes and times
        self._runs_grace = RUNS_GRACE_S  # see _cleanup

    # -- messages -----------------------------------------------------------------------
    def _missing(self) -> NoLedgerError:
        return NoLedgerError(f"no budget ledger at {self.path}; create it once with "
                             f"`dprect budget init --ledger {self.path}`")

    def _damaged(self, reason: str) -> LedgerError:
        return LedgerError(f"the budget ledger at {self.path} is damaged: {reason}; nothing "
                           f"was charged or released — {RESTORE}")


    # -- reading ------------------------------------------------------------------------
    def _open(self):
        """The Delta table at ``path``; :class:`NoLedgerError` if there is none."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        if self._table is not None and self._seen == self._commit_files(self._seen):
            try:  # every commit file it read is unchanged: read only the new ones
                self._table.update_incremental()
                return self._table
            except Exception:  # read afresh below, which reports it
                pass
        self._table = None
        try:
            self._table = DeltaTable(self.path)
            return self._table
        except TableNotFoundError:
            where = Path(self.path)
            if where.is_file():
                raise LedgerError(f"no budget ledger at {self.path}: it is a file") from None
            if where.is_dir() and any(where.iterdir()):
                raise NoLedgerError(
                    f"no budget ledger at {self.path}, but the folder is not empty (was its "
                    f"_delta_log deleted?): treated as damaged, nothing was charged or "
                    f"released — {RESTORE}") from None
            raise self._missing() from None
        except Exception as exc:  # an empty, truncated or missing commit file, ...
            if Path(self.path).is_file():  # delta-rs may raise anything for a file
                raise LedgerError(f"no budget ledger at {self.path}: it is a file") from None
            raise DamageError(delta_reason(exc)) from None

    def _commit_files(self, only: Iterable[int] | None = None
                      ) -> dict[int, tuple[int, int]]:
        """Version → (size, modification time) of the commit files in ``_delta_log/``
        (only the versions in ``only``, when given)."""
        log = os.path.join(self.path, "_delta_log")
        wanted = None if only is None else set(only)
        out: dict[int, tuple[int, int]] = {}
        try:
            with os.scandir(log) as entries:
                for entry in entries:
                    match = _COMMIT.match(entry.name)
                    if match and (wanted is None or int(match.group(1)) in wanted):
                        info = entry.stat()
                        out[int(match.group(1))] = (info.st_size, info.st_mtime_ns)
        except OSError:
            return {}
        return out

    def _load(self, *, full: bool = False) -> Snapshot:
        """Read and verify the ledger (see "Integrity" in the module docstring). A read
        that fails is tried once more after a short pause (a checkpoint's cleanup may have
        removed files between the log's read and the files' read) before the ledger is
        called damaged."""
        for attempt in (1, 2, 3):
            try:
                return self._load_once(full)
            except DamageError as exc:
                self._table = None  # read afresh
                if attempt == 3:
                    raise self._damaged(str(exc)) from None
                time.sleep(0.02 * attempt)
        raise AssertionError("unreachable")

    def _files(self, table: Any, version: int) -> list[DataFile]:
        """The snapshot's data files, checked to hold versions 0..V one event each, each
        present with its recorded size (step 2), and the log's commit files (step 3)."""
        adds = pa.table(table.get_add_actions(flatten=True))
        need = ["path", "size_bytes", "num_records", "min.version", "max.version"]
        if any(name not in adds.column_names for name in need):
            raise DamageError("its data files carry no version statistics")
        cols = [adds.column(name).to_pylist() for name in need]
        files = sorted((DataFile(*values) for values in zip(*cols, strict=True)),
                       key=lambda f: (-1 if f.first is None else f.first))
        expected = 0
        for f in files:
            if f.first is None or f.last is None or f.rows is None:
                raise DamageError("an event has no commit version")
            if f.first != expected:
                if f.first > expected:
                    raise DamageError(f"commit version {expected} has no event (an empty, "
                                      f"truncated or edited commit file?)")
                raise DamageError(f"more than one event at commit version {f.first}")
            if f.rows != f.last - f.first + 1:
                raise DamageError(f"the events of versions {f.first}..{f.last} are not one "
                                  f"per version")
            expected = f.last + 1
        if expected != version + 1:
            if expected > version + 1:
                raise DamageError(f"an event claims a version after the log's last ({version})")
            raise DamageError(f"commit version {expected} has no event (an empty, truncated or "
                              f"edited commit file?)")
        for f in files:
            try:
                size = os.stat(os.path.join(self.path, f.path)).st_size
            except OSError:
                raise DamageError("a file its log refers to is missing") from None
            if size != f.size:
                raise DamageError("a data file is not the one its log recorded (edited or "
                                  "truncated)")
        present = {v: k for v, k in self._commit_files().items() if v <= version}
        if version not in present or len(present) != version - min(present) + 1:
            raise DamageError("a commit file is missing from its _delta_log")
        if any(size == 0 for size, _ in present.values()):
            raise DamageError("a commit file is empty (truncated by a power loss?)")
        self._seen = present  # what the next read compares before it reuses the table
        return files

    def _read(self, files: list[DataFile]) -> list[dict[str, Any]]:
        """The rows of ``files``, in version order. A file this process read before is
        taken from :data:`_ROWS` if its size and modification time are unchanged (the
        ledger never rewrites a file: every name holds a random part; a rewrite by anyone
        else changes the modification time, and the file is read, and re-hashed, again)."""
        import pyarrow.parquet as pq

        rows: list[dict[str, Any]] = []
        for f in files:
            where = os.path.join(self.path, f.path)
            try:
                info = os.stat(where)
                key = (os.path.abspath(where), info.st_size, info.st_mtime_ns)
                cached = _ROWS.get(key)
                if cached is None:
                    table = pq.ParquetFile(where).read(use_threads=False)
                    if not table.schema.equals(SCHEMA):
                        raise DamageError("its column types are not the ledger's")
                    cached = table.to_pylist()
                    _ROWS[key] = cached
                    while len(_ROWS) > _CACHED_FILES:
                        _ROWS.popitem(last=False)
                else:
                    _ROWS.move_to_end(key)
            except DamageError:
                raise
            except Exception as exc:
                raise DamageError(delta_reason(exc)) from None
            rows += cached
        rows.sort(key=lambda r: -1 if r["version"] is None else r["version"])
        return rows

    def _load_once(self, full: bool) -> Snapshot:
        table = self._open()
        try:
            version = table.version()
            names = [f.name for f in table.schema().fields]
        except Exception as exc:
            raise DamageError(delta_reason(exc)) from None
        if names != SCHEMA.names:
            raise LedgerError(f"{self.path} is a Delta table but not a budget ledger of "
                              f"this dprect version (its columns differ)")
        try:
            files = self._files(table, version)
        except DamageError:
            raise
        except Exception as exc:
            raise DamageError(delta_reason(exc)) from None
        checkpoints = [f for f in files if f.checkpoint]
        if full or not checkpoints or len(checkpoints) == 1:
            chosen, start = files, None
        else:
            start = checkpoints[-2]
            chosen = [f for f in files if f.last >= start.first]
        rows = self._read(chosen)
        state, newest, after = self._verify(rows, version, files, start)
        if full:  # step 6 for every run-index file the newest two checkpoints name
            named = [r["result"] for r in rows if r["event"] == "checkpoint"][-2:]
            for digest in sorted(referenced(named)):
                state.index.read(digest)
        return Snapshot(table, version, state, rows, files, newest, after)

    def _verify(self, rows: list[dict[str, Any]], version: int, files: list[DataFile],
                start: DataFile | None) -> tuple[State, int | None, int]:
        """Steps 4 and 5 on the rows read (from version ``start.first``, or 0)."""
        first = 0 if start is None else start.first
        recorded = [r["version"] for r in rows]
        if recorded != list(range(first, version + 1)):
            raise DamageError("the events read are not one per commit version")
        ends = {f.last for f in files if f.checkpoint}
        archived = [(f.first, f.last) for f in files if f.path.startswith(ARCHIVE_FILE)]
        state = State(self.path)
        previous = "" if start is None else rows[0]["chain"]
        anchored = start is not None  # the first row read is the anchor
        base: int | None = None  # the checkpoint the state was started from
        newest: int | None = None
        after = 0
        for row in rows:
            v, event = row["version"], row["event"]
            placed = v in ends or any(a <= v <= b for a, b in archived)
            if event not in EVENTS or (event == "init") != (v == 0) or \
                    (event == "checkpoint" and not placed) or \
                    (event != "checkpoint" and v in ends):
                raise DamageError(f"commit version {v} holds an unexpected event")
            if anchored:
                anchored = False
            else:
                if not linked(previous, row):
                    raise DamageError(f"the hash chain breaks at commit version {v} (an "
                                      f"edited file?)")
            previous = row["chain"]
            if event == "checkpoint":
                if start is not None and base is None:
                    try:  # the previous checkpoint: the state we start from
                        state = State.parse(row["result"], self.path)
                    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
                        raise DamageError(f"the checkpoint at commit version {v} cannot be "
                                          f"read") from None
                    base = v
                elif not state.equals(row["result"]):
                    raise DamageError(f"the checkpoint at commit version {v} does not equal "
                                      f"the events before it (a forged checkpoint?)")
                newest, after = v, 0
                continue
            if start is not None and base is None:
                continue  # before the previous checkpoint: chained, not folded
            state.apply(row)
            after += 1
        if start is not None and base is None:
            raise DamageError("the checkpoint file holds no checkpoint")
        return state, newest, after

    def verify(self, *, full: bool = False) -> int:
        """Check the ledger (see "Integrity"); return its Delta version. ``full``: from
        version 0, every link and every checkpoint, and every stored result a release
        row references (``dprect budget verify``; see "Stored results")."""
        snap = self._load(full=full)
        if full:
            try:
                for row in snap.rows:
                    if row["event"] == "release" and row["result"] is not None:
                        check_stored(self.path, row["result"])
            except DamageError as exc:
                raise self._damaged(str(exc)) from None
        return snap.version

    def history(self, dataset: str, since: int = 0) -> list[dict[str, Any]]:
        """The event rows of ``dataset`` at commit versions ≥ ``since``, in commit order:
        reads only the files holding those versions (and the row before, whose chain value
        anchors the links it re-hashes)."""
        check_name(dataset, "dataset")
        snap = self._load()
        since = max(0, int(since))
        chosen = [f for f in snap.files if f.last >= since - 1]
        rows = [r for r in self._read(chosen) if r["version"] >= since - 1]
        try:
            previous = ""
            for i, row in enumerate(rows):
                if (i > 0 or row["version"] == 0) and not linked(previous, row):
                    raise DamageError(f"the hash chain breaks at commit version "
                                      f"{row['version']} (an edited file?)")
                previous = row["chain"]
        except DamageError as exc:
            raise self._damaged(str(exc)) from None
        return [dict(r) for r in rows if r["version"] >= since and r["dataset"] == dataset]

    def events(self, dataset: str) -> list[dict[str, Any]]:
        """Every event row of ``dataset``, in commit order (reads the whole log)."""
        return self.history(dataset, 0)

    @contextlib.contextmanager
    def _index(self) -> Iterator[None]:
        """A run-index file read after the verified read (on demand) that is missing or
        is not the one the checkpoint names: the ledger is damaged (one line)."""
        try:
            yield
        except DamageError as exc:
            raise self._damaged(str(exc)) from None
