"""The privacy budget ledger: durable, capped, race-free, tamper-evident spending across runs.

A Delta table (written with ``deltalake``) of append-only *events*; every commit adds
exactly one new event:

* ``init`` — the ledger was created (``dprect budget init``); always commit version 0;
* ``reserve`` — a run charges (ε, δ) to a dataset **before** it releases anything, with
  the neighbouring relation its guarantee is stated in;
* ``release`` — the run released its result (the result JSON is stored in the row, which
  makes re-running a finished run id idempotent);
* ``fail`` — the run stopped with an error before releasing anything (the row holds the
  one line the command printed, never an exception's own text: that could quote data);
* ``cancel`` — the run was interrupted (SIGINT) after its reservation and before it drew
  any noise: its charge is withdrawn (:meth:`Ledger.cancel`; the run id may reserve
  again, as a new charge);
* ``cap`` — a budget cap (ε, δ) for a dataset, in a stated neighbouring relation
  (``add-remove`` unless said otherwise; a cap row without one, from an older ledger, is
  add-remove); the one committed last counts;
* ``checkpoint`` — the ledger's state (per dataset: spend, cap, runs) after every event
  before it, written by the ledger itself every :data:`CHECKPOINT_EVERY` events and by
  :meth:`Ledger.compact` (the state is text lines, see :class:`_State`: the totals of
  every dataset and the SHA-256 of every file of the run index, which lives in
  :data:`RUNS_DIR`; the chain hashes the state by its SHA-256).

**Spend.** A dataset's spend is the sum of (ε, δ) over its ``reserve`` rows less those a
``cancel`` row withdrew: basic composition (Dwork & Roth 2014, Thm 3.16), which holds for
any sequence of adaptively chosen runs. A cancelled run drew no noise and released
nothing: its output is a constant ("interrupted"), a 0-DP mechanism, which composition
charges nothing for (docs/privacy.md, "Cancelled reservations"). A run id is charged at
most once at a time: retries of a failed or crashed run id reuse its reservation; a
cancelled run id that runs again reserves anew. A charge withdrawn from a spend that is
unbounded in a relation (replace-one charges under add/remove) leaves it unbounded.

**Neighbouring relations.** Spend and cap are compared in the cap's relation. A
replacement is a removal then an addition, so by group privacy of size 2 an (ε, δ)
add/remove guarantee gives (2ε, (1 + e^ε)·δ) under replace-one
(:func:`dprect.core.accounting.replace_one`): against a replace-one cap an add/remove run
is charged that image. A replace-one guarantee implies nothing under add/remove (adding
a row is not a replacement), so a replace-one run is refused against an add/remove cap
(:meth:`Ledger.check_relation`, called at plan time before any read, and again by
:meth:`Ledger.reserve`), and a dataset holding replace-one charges has no add/remove
spend: an add/remove cap set later admits nothing more. The spend is kept in both
relations (``None`` where it is unbounded).

**Order.** Events are ordered by the Delta commit version they were written at, never by
a clock: the cap in force is the cap event with the highest version, whatever the clocks
of the machines that wrote it said (``recorded_at`` is informational only).

**Race freedom.** Every write reads the table at some version v, checks what it has to
check against what it read, and commits at exactly version v + 1 with delta-rs's commit
retries switched off (``max_commit_retries=0``). If any other writer committed in between,
the commit fails (Delta's log is put-if-absent per version), and the write re-reads,
re-checks and tries again. So no two runs can both pass a check that only one of them
fits: whichever commits second has read a table that already contains the first.
Checkpoints and compaction are commits of the same kind (one new event each).

**Integrity (fail closed on damage).** Each event row records the version it is committed
at (``version``) and a hash chain (``chain`` = SHA-256 over the previous event's chain and
this event's fields). Every operation (every write starts with one) checks:

1. delta-rs reads the table (its last Delta checkpoint and every commit file after it);
2. the data files of the table's snapshot hold the events 0, 1, …, V for the table's
   version V, one event each (from the files' recorded row counts and version ranges),
   and every one of those files exists with the size the log recorded;
3. the commit files present in ``_delta_log/`` are contiguous up to V and none is empty
   (commits older than the ledger's own cleanup horizon are removed by the ledger once a
   Delta checkpoint holds them);
4. the chain recomputes from the anchor (see below) to V, version 0 is the only ``init``,
   a ``checkpoint`` row is the last row of its own checkpoint file, and the schema is the
   ledger's;
5. the newest checkpoint's state equals the previous checkpoint's state with the events
   between them applied (re-derived on every operation and compared as text);
6. every run-index file an operation reads (the buckets its events and its run id touch)
   has the SHA-256 the verified checkpoint names for it (so the run index is covered by
   the chain: a missing, emptied or edited run-index file is damage).

A process keeps the rows of the data files it has read and re-reads (and re-hashes) a
file whenever its size or modification time changed: the ledger never rewrites a file
(every name holds a random part), so an edit by anyone else is read again.

A commit file emptied by a power loss (delta-rs reads it as an empty commit and the
event's row vanishes: step 2 or 3), a deleted, truncated or unreadable commit file
(1, 3), a missing or edited data file (1, 2, 4), a forged checkpoint (4, 5), a missing
or edited run-index file (6) or a foreign
table therefore raises :class:`LedgerError` ("the budget ledger ... is damaged"), and
nothing is charged, released or recorded — it never reads as a smaller spend.

**Checkpoints: what they prove and why a forged one is found.** A checkpoint at version w
is an ordinary event: its row (the state as canonical JSON) is hashed into the chain like
any other, and its content is a deterministic function of the events before it, so anyone
can re-derive it. An operation starts from the *previous* checkpoint c < w: it reads the
rows from the first row of c's checkpoint file through V (at most about
3·:data:`CHECKPOINT_EVERY` rows), takes that first row's chain value as the anchor,
recomputes every link after it, re-derives w's state from c's state and the events
(c, w), and folds the events after w on top; of the run index it reads only the buckets
those events and its own run id touch (checked against c's digests), and re-hashes only
those the events (c, w) changed. So the cost of an operation does not depend on the
ledger's age (only on the runs per bucket: about 10 at 10^4 runs), and:

* a checkpoint whose totals were edited in place breaks the chain at its version (4);
* a checkpoint appended by a foreign writer with made-up totals (correctly chained) does
  not equal the re-derivation from the checkpoint before it (5);
* replacing c's state as well needs the chain rewritten from c's file onward, i.e. a
  writer who recomputes SHA-256 over the events itself. An unkeyed hash chain cannot
  detect such a writer, whether or not there are checkpoints — the folder's permissions
  must exclude it (docs/operations.md). ``dprect budget verify`` checks everything
  from version 0 (every link, every checkpoint re-derived, every run-index file the
  newest two checkpoints name), and :meth:`Ledger.compact` runs that check before it
  rewrites anything;
* a run-index file is found damaged when an operation reads it (step 6) or by ``budget
  verify``; an operation that needs no run record (``status``, ``set-cap``) does not
  read the buckets its events do not touch.

Events before the anchor cannot change what an operation decides (spend and cap come
from the re-derived state), but their files are still part of the table: each must exist
with its recorded size (2), so a deleted or truncated old data file stops every run. An
old event's *content* is re-hashed when it is read (history, a replayed run's result,
``verify``, ``compact``).

(Not detectable this way: deletion of the newest commit file alone, which looks like a
ledger that never had that event; the ledger folder's permissions and backups must cover
it — docs/operations.md.)

**Compaction.** Each checkpoint commit merges the one-event files since the previous
checkpoint into the checkpoint's file (a Delta commit that removes them with
``dataChange=false`` and adds the merged file; appendOnly allows it), writes a Delta
checkpoint, and removes commit files and merged data files older than the previous
checkpoint, and the run-index files that neither checkpoint names (once they are
:data:`_RUNS_GRACE_S` old: a concurrent writer may be about to commit a checkpoint naming a
file it just wrote; a writer never deletes a run-index file it wrote, since another
writer's identical state names the same file). :meth:`Ledger.compact` (``dprect budget
compact``) also merges every older file into one archive file, so a ledger of any age is a
handful of data files, plus the run index: at most :data:`RUN_BUCKETS` small files (and
those not yet past their grace period). Readers that race a
cleanup re-read once before calling the ledger damaged. Never run Delta's own
OPTIMIZE/VACUUM or log cleanup on a ledger: those commits add no event and read as damage.

**No implicit creation.** A ledger is created only by :meth:`Ledger.init`
(``dprect budget init``), in a new or empty folder. Every other operation refuses a path
without a ledger (:class:`NoLedgerError`), so a deleted ``_delta_log/`` never reads as a
new, empty ledger with no spend and no cap.

**Fail closed.** A run that dies after reserving stays charged: nothing ever removes a
``reserve`` row (the table is created ``delta.appendOnly``); only a ``cancel`` row,
written by the interrupted attempt itself when it drew no noise, withdraws a charge. A
run releases only after its ``release`` row is committed (at most one release per run id),
and writes its output files after.

Every :class:`LedgerError` message is a single line without terminal escape codes, even
when it quotes delta-rs (whose errors may carry backtraces and coloured lines).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import random
import re
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from dprect._version import __version__
from dprect.core.errors import DprectError, ParameterError
from dprect.core.extras import require
from dprect.core.request import Neighbouring
from dprect.core.validation import check_delta, check_epsilon

SCHEMA = pa.schema([
    ("event", pa.string()),
    ("dataset", pa.string()),
    ("run_id", pa.string()),
    ("features", pa.string()),
    ("method", pa.string()),
    ("epsilon", pa.float64()),
    ("delta", pa.float64()),
    ("bound", pa.string()),
    ("neighbouring", pa.string()),
    ("result", pa.string()),
    ("message", pa.string()),
    ("recorded_at", pa.timestamp("us", tz="UTC")),
    ("dprect_version", pa.string()),
    ("version", pa.int64()),  # the Delta commit version the event was written at
    ("chain", pa.string()),  # SHA-256 hex over the previous event's chain and this event
])

EVENTS = ("init", "reserve", "release", "fail", "cap", "checkpoint", "cancel")
#: the neighbouring relations a cap is stated in (the request module's spellings)
ADD_REMOVE, REPLACE_ONE = Neighbouring.ADD_REMOVE.value, Neighbouring.REPLACE_ONE.value
RELATIONS = Neighbouring.values()
#: appendOnly: Delta writers refuse deletes and updates. The tombstones of files merged by a
#: checkpoint expire at once, so Delta checkpoints stay as small as the table (the
#: ledger removes those files itself, one checkpoint later: see "Compaction").
TABLE_CONFIGURATION = {"delta.appendOnly": "true",
                       "delta.deletedFileRetentionDuration": "interval 0 seconds"}
#: a checkpoint is written once this many events follow the newest one
CHECKPOINT_EVERY = 32
_DELTA_CHECKPOINT_EVERY = 8  # and a Delta checkpoint every this many commits
#: a checkpoint also merges the older files into one archive once there are more than this
ARCHIVE_AFTER = 48
_TOLERANCE = 1e-12  # relative slack when comparing float sums with a cap
_MAX_ATTEMPTS = 200
_DETAIL_CHARS = 200
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")
_RESTORE = "restore it from a backup (see 'The privacy budget ledger' in docs/operations.md)"
_EVENT_FILE, _CHECKPOINT_FILE, _ARCHIVE_FILE = "event-", "checkpoint-", "archive-"
_COMMIT = re.compile(r"^(\d{20})\.json$")
#: rows of the data files this process read, by (path, size, modification time)
_ROWS: OrderedDict[tuple[str, int, int], list[dict[str, Any]]] = OrderedDict()
_CACHED_FILES = 256


def one_line(text: str, limit: int | None = None) -> str:
    """The first meaningful line of ``text``, without terminal escape codes (delta-rs
    messages can carry native backtraces and coloured continuation lines), optionally
    shortened to ``limit`` characters."""
    text = _ANSI.sub("", str(text)).replace("\r", "\n")
    line = ""
    for candidate in text.splitlines():
        candidate = " ".join(candidate.split())
        if candidate and any(c.isalnum() for c in candidate) and \
                not candidate.lower().startswith(("traceback", "stack backtrace")):
            line = candidate
            break
    line = "".join(c for c in line if c.isprintable()) or "(no message)"
    if limit is not None and len(line) > limit:
        line = line[:limit - 1].rstrip() + "…"
    return line


class LedgerError(DprectError):
    """The ledger cannot be read or written, is damaged, or a request contradicts it.
    The message is always one line without terminal escape codes."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class NoLedgerError(LedgerError):
    """There is no ledger at the path (it was never initialised, or its log is gone)."""


class BudgetExceededError(LedgerError):
    """The reservation would take the dataset's spend over its cap."""


class _DamageError(Exception):
    """Internal: a verification step failed (the reason is one short line)."""


@dataclass(frozen=True)
class Budget:
    """An (ε, δ) pair: a cap, a spend, or what remains."""

    epsilon: float
    delta: float

    def to_json(self) -> dict[str, float]:
        return {"epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class Cap(Budget):
    """A cap: an (ε, δ) pair and the neighbouring relation it is stated in."""

    neighbouring: str = ADD_REMOVE

    def to_json(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta,
                "neighbouring": self.neighbouring}


@dataclass(frozen=True)
class RunRecord:
    """What the ledger knows of one run id."""

    run_id: str
    status: str  # "reserved" (running or died), "released", "failed", "cancelled"
    epsilon: float
    delta: float
    method: str
    features: list[str]
    result: dict[str, Any] | None
    reserved_at: datetime | None  # the reserving writer's clock: informational only
    reserved_version: int  # the commit version of the reservation: the order of runs
    neighbouring: str = ADD_REMOVE
    released_version: int | None = None


@dataclass(frozen=True)
class Reservation:
    """The outcome of :meth:`Ledger.reserve`."""

    run_id: str
    new_charge: bool  # False when a failed/crashed run id is retried (charged before)
    previous_result: dict[str, Any] | None  # set when the run id was already released

    @property
    def already_released(self) -> bool:
        return self.previous_result is not None


@dataclass(frozen=True)
class DatasetStatus:
    """What :meth:`Ledger.status` reports of one dataset, read at one ledger version.
    ``spent`` is in ``neighbouring`` (the cap's relation; without a cap add/remove, or
    replace-one once a replace-one run was charged); ``None`` when it is unbounded there.
    ``runs`` is ``None`` unless asked for (``Ledger.status(..., runs=True)``: it reads the
    dataset's whole run index); the runs carry no result (:meth:`Ledger.run` reads one).
    ``known``: whether any event (a cap, a run) names the dataset."""

    spent: Budget | None
    cap: Cap | None
    runs: list[RunRecord] | None
    ledger_version: int
    neighbouring: str = ADD_REMOVE
    known: bool = True


# -- the state a checkpoint records ------------------------------------------------------------
def _image(epsilon: float, delta: float, relation: str, target: str) -> tuple[float, float] | None:
    """A run's (ε, δ) stated in ``relation``, in the ``target`` relation (None: none)."""
    if relation == target:
        return epsilon, delta
    if relation == ADD_REMOVE and target == REPLACE_ONE:  # group privacy of size 2
        return 2 * epsilon, (1 + math.exp(epsilon)) * delta
    return None  # replace-one implies nothing under add/remove


#: the run index (state format 3): every run of every dataset sits in one of this many
#: buckets; a bucket is a file of its own in :data:`RUNS_DIR`, named by the SHA-256 of its
#: text, and a checkpoint's state names the digest of every non-empty bucket. So a
#: checkpoint row holds per dataset one line (cap and spend) plus at most this many
#: digests, whatever the number of runs ever charged, and an operation reads and re-hashes
#: only the buckets its events touch (about 10 runs each at 10^4 runs)
RUN_BUCKETS = 1024
#: a dataset's runs fall in this many consecutive buckets (from a hash of its name; the
#: run id's hash picks one of them): ``budget show`` of a dataset reads at most this many
DATASET_SPAN = 64
#: the folder of the run index's files, inside the ledger's folder (Delta and Spark ignore
#: names starting with an underscore)
RUNS_DIR = "_dprect_runs"
_RUNS_SUFFIX = ".tsv"
#: an unreferenced run-index file is removed only once it is this old: a writer may be
#: about to commit a checkpoint that names it
_RUNS_GRACE_S = 600.0
_STATE_HEADER = "dprect ledger state 3"
#: the older state formats (the runs inside the checkpoint row, in buckets per dataset):
#: header → buckets per dataset. Read, re-derived in, and replaced by the next checkpoint.
_OLD_FORMATS = {"dprect ledger state 1": 16, "dprect ledger state 2": 1024}
#: the format checkpoints are written in (tests write the older ones, to read them back)
_WRITE_FORMAT = _STATE_HEADER


def _bucket(run_id: str, buckets: int) -> int:
    return int(hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:8], 16) % buckets


@functools.lru_cache(maxsize=65536)
def _span_start(dataset: str) -> int:
    return _bucket(dataset, RUN_BUCKETS)


def _run_bucket(dataset: str, run_id: str) -> int:
    """The run index bucket of ``run_id`` of ``dataset``."""
    return (_span_start(dataset) + _bucket(run_id, DATASET_SPAN)) % RUN_BUCKETS


def _dataset_buckets(dataset: str) -> list[int]:
    start = _span_start(dataset)
    return sorted({(start + i) % RUN_BUCKETS for i in range(DATASET_SPAN)})


@contextlib.contextmanager
def _readable() -> Iterator[None]:
    """Parsing a part of a checkpoint's state read on demand (after the chain and the
    newest checkpoint were verified): a part that cannot be parsed is damage, one line."""
    try:
        yield
    except (ValueError, KeyError, TypeError, IndexError, AssertionError):
        raise LedgerError(f"the budget ledger is damaged: a checkpoint's state cannot be "
                          f"read; nothing was charged or released — {_RESTORE}") from None


Runs = dict[str, dict[str, Any]]  # run id → run (short keys: see _State.apply)
#: a bucket in memory: dataset (JSON) → run id (JSON) → the run (canonical JSON)
_Bucket = dict[str, dict[str, str]]


class _RunIndex:
    """Bucket → its runs. A bucket's file is text lines ``dataset TAB run id TAB run``
    (each canonical JSON, so no raw tab or newline inside; sorted), so a bucket is read by
    splitting lines and only the runs looked up are decoded. A bucket named by the
    verified checkpoint is read from its file on first use and checked against its digest
    (a missing, emptied or edited file is damage); a changed bucket is re-joined and
    re-hashed once, when the
    state's text is made (:meth:`settle`), and its file written with the checkpoint."""

    def __init__(self, root: str, digests: dict[int, str] | None = None) -> None:
        self.root = root
        self.digests = dict(digests or {})  # bucket → the digest of its text (settled)
        self.loaded: dict[int, _Bucket] = {}
        self.dirty: set[int] = set()
        self.unwritten: dict[str, str] = {}  # digest → text of settled buckets

    def bucket(self, k: int) -> _Bucket:
        hit = self.loaded.get(k)
        if hit is None:
            digest = self.digests.get(k)
            hit = self.loaded[k] = {} if digest is None else self._read(digest)
        return hit

    def change(self, k: int) -> _Bucket:
        self.dirty.add(k)
        return self.bucket(k)

    def _read(self, digest: str) -> _Bucket:
        where = os.path.join(self.root, RUNS_DIR, f"{digest}{_RUNS_SUFFIX}")
        try:
            with open(where, "rb") as fh:
                data = fh.read()
        except OSError:
            raise _DamageError("a file of its run index is missing") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise _DamageError("a file of its run index is not the one its checkpoint "
                               "names (edited or truncated)")
        out: _Bucket = {}
        try:
            for line in data.decode("utf-8").split("\n"):
                dataset, run_id, run = line.split("\t", 2)
                out.setdefault(dataset, {})[run_id] = run
        except ValueError:
            raise _DamageError("a file of its run index cannot be read") from None
        return out

    def settle(self) -> dict[int, str]:
        """Hash the changed buckets; the digest of every non-empty bucket."""
        for k in self.dirty:
            old = self.digests.pop(k, None)
            if old is not None:
                self.unwritten.pop(old, None)
            bucket = self.loaded[k]
            if bucket:
                text = "\n".join(f"{d}\t{r}\t{bucket[d][r]}" for d in sorted(bucket)
                                 for r in sorted(bucket[d]))
                digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
                self.digests[k], self.unwritten[digest] = digest, text
        self.dirty.clear()
        return self.digests

    def write(self) -> None:
        """Give every settled bucket a file (before the checkpoint naming it commits).
        Put if absent (a name is its content's hash): a file present is only touched, so
        the cleanup's grace period (:data:`_RUNS_GRACE_S`) counts from now."""
        self.settle()
        folder = os.path.join(self.root, RUNS_DIR)
        os.makedirs(folder, exist_ok=True)
        for digest, text in self.unwritten.items():
            where = os.path.join(folder, f"{digest}{_RUNS_SUFFIX}")
            try:
                os.utime(where)
                continue
            except OSError:
                pass
            part = os.path.join(folder, f".part-{uuid.uuid4().hex}")
            with open(part, "wb") as fh:
                fh.write(text.encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(part, where)
        self.unwritten.clear()


class _DatasetState:
    """One dataset's cap and spend (its line of a checkpoint's state, parsed on first
    use) and its runs (in the state's shared run index)."""

    def __init__(self, name: str, index: _RunIndex, head: str | None = None) -> None:
        self.name, self.index, self.key = name, index, _name_json(name)
        self.head_text = head  # JSON [cap, spent]; None once changed
        self._cap: list[Any] | None = None  # [epsilon, delta, relation]
        self._spent: dict[str, list[float] | None] = {ADD_REMOVE: [0.0, 0.0],
                                                      REPLACE_ONE: [0.0, 0.0]}
        self._head_parsed = head is None

    def _head(self) -> None:
        if not self._head_parsed:
            assert self.head_text is not None
            with _readable():
                self._cap, self._spent = json.loads(self.head_text)
                assert isinstance(self._spent, dict)
            self._head_parsed = True

    def head(self) -> str:
        if self.head_text is None:
            self.head_text = _canonical([self.cap, self.spent])
        return self.head_text

    @property
    def cap(self) -> list[Any] | None:
        self._head()
        return self._cap

    @cap.setter
    def cap(self, value: list[Any] | None) -> None:
        self._head()
        self._cap, self.head_text = value, None

    @property
    def spent(self) -> dict[str, list[float] | None]:
        self._head()
        return self._spent

    def add_spent(self, target: str, value: list[float] | None) -> None:
        self._head()
        self._spent[target], self.head_text = value, None

    def get(self, run_id: str) -> dict[str, Any] | None:
        """The run (a new dict: change it with :meth:`put`), None if there is none."""
        bucket = self.index.bucket(_run_bucket(self.name, run_id))
        text = bucket.get(self.key, {}).get(json.dumps(run_id))
        if text is None:
            return None
        with _readable():
            run = json.loads(text)
            assert isinstance(run, dict)
        return run

    def put(self, run_id: str, run: dict[str, Any]) -> None:
        self.index.change(_run_bucket(self.name, run_id)).setdefault(self.key, {})[
            json.dumps(run_id)] = _canonical(run)

    def runs(self) -> Runs:
        """Every run of the dataset (reads its :data:`DATASET_SPAN` buckets)."""
        out: Runs = {}
        with _readable():
            for k in _dataset_buckets(self.name):
                for run_id, text in self.index.bucket(k).get(self.key, {}).items():
                    out[json.loads(run_id)] = json.loads(text)
        return out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


@functools.lru_cache(maxsize=65536)
def _name_json(name: str) -> str:
    return json.dumps(name)


@functools.lru_cache(maxsize=65536)
def _name_of(name_json: str) -> str:
    name = json.loads(name_json)
    if not isinstance(name, str):
        raise ValueError("a dataset name is not a string")
    return name


def _referenced(texts: Iterable[str]) -> set[str]:
    """The run-index digests that the states ``texts`` (format 3) name."""
    out: set[str] = set()
    for text in texts:
        if text.startswith(_STATE_HEADER + "\n"):
            out.update(line.split("\t", 1)[1] for line in text.split("\n")[1:]
                       if line and not line.startswith('"'))
    return out


class _State:
    """Every dataset's spend (in both relations), cap and runs after a prefix of events.

    Its text (a checkpoint row's ``result``, format 3) is a header line, then per dataset
    (in name order) a line ``name (JSON) TAB h TAB [cap, spent] (JSON)``, then per
    non-empty run bucket (in order) a line ``bucket TAB SHA-256 of the bucket's file``.
    A re-derived state is written out the same way and compared as text, so two states
    are equal exactly when their totals are and every bucket's content is (by its hash).
    Formats 1 and 2 held the runs inline (per dataset, in 16 or 1,024 buckets of its
    own); a state parsed from them holds every run in memory and can write them back."""

    def __init__(self, root: str, datasets: dict[str, _DatasetState] | None = None,
                 index: _RunIndex | None = None) -> None:
        self.index = index or _RunIndex(root)
        self.datasets = datasets or {}

    @classmethod
    def parse(cls, text: str, root: str) -> _State:
        header, _, body = text.partition("\n")
        state = cls(root)
        lines = body.split("\n") if body else []
        if header == _STATE_HEADER:
            for line in lines:
                if line.startswith('"'):
                    name_json, key, head = line.split("\t", 2)
                    if key != "h":
                        raise ValueError("a dataset's line holds no totals")
                    name = _name_of(name_json)
                    state.datasets[name] = _DatasetState(name, state.index, head)
                else:
                    k, digest = line.split("\t")
                    state.index.digests[int(k)] = digest
            return state
        if header not in _OLD_FORMATS:
            raise ValueError("a checkpoint of an unknown format")
        for line in lines:
            if not line:
                continue  # format 2 separates the datasets' blocks by an empty line
            name_json, key, rest = line.split("\t", 2)
            name = _name_of(name_json)
            if key == "h":
                state.datasets[name] = _DatasetState(name, state.index, rest)
                continue
            ds = state.datasets[name]  # a block starts with its totals
            runs = json.loads(rest)
            if not isinstance(runs, dict):
                raise ValueError("a run bucket is not an object")
            for run_id, run in runs.items():
                ds.put(run_id, run)
        return state

    def text(self, header: str | None = None) -> str:
        """The state in format ``header`` (default: the format checkpoints are written
        in); format 3 settles the run index (the changed buckets' digests)."""
        header = header or _WRITE_FORMAT
        names = sorted(self.datasets)
        if header == _STATE_HEADER:
            digests = self.index.settle()
            return "\n".join([header, *(
                f"{_name_json(n)}\th\t{self.datasets[n].head()}" for n in names), *(
                f"{k}\t{digests[k]}" for k in sorted(digests))])
        buckets = _OLD_FORMATS[header]
        blocks = [header]
        for name in names:
            ds, nj = self.datasets[name], _name_json(name)
            groups: dict[int, Runs] = {}
            for run_id, run in ds.runs().items():
                groups.setdefault(_bucket(run_id, buckets), {})[run_id] = run
            blocks.append("\n".join([f"{nj}\th\t{ds.head()}", *(
                f"{nj}\t{k}\t{_canonical(groups[k])}" for k in sorted(groups))]))
        return ("\n" if buckets == _OLD_FORMATS["dprect ledger state 1"] else "\n\n"
                ).join(blocks)

    def equals(self, text: str) -> bool:
        """Whether ``text`` (a checkpoint's) records this state (compared in the
        checkpoint's own format, named by its header)."""
        header = text.split("\n", 1)[0]
        if header != _STATE_HEADER and header not in _OLD_FORMATS:
            return False
        return self.text(header) == text

    def of(self, dataset: str) -> _DatasetState:
        return self.datasets.get(dataset) or _DatasetState(dataset, self.index)

    def apply(self, row: dict[str, Any]) -> None:
        """Fold one event into the state (the same rules the reads always used)."""
        event, name = row["event"], row["dataset"]
        if event in ("init", "checkpoint") or name is None:
            return
        ds = self.datasets.get(name)
        if ds is None:
            ds = self.datasets[name] = _DatasetState(name, self.index)
        if event == "cap":
            ds.cap = [row["epsilon"], row["delta"], row["neighbouring"] or ADD_REMOVE]
            return
        run_id = row["run_id"]
        if run_id is None:
            return
        run = ds.get(run_id)
        if event == "reserve":
            relation = row["neighbouring"] or ADD_REMOVE
            for target in RELATIONS:
                total = ds.spent[target]
                image = _image(row["epsilon"], row["delta"], relation, target)
                ds.add_spent(target, None if total is None or image is None else
                             [total[0] + image[0], total[1] + image[1]])
            if run is None or run["s"] == "cancelled":
                at = row["recorded_at"]
                ds.put(run_id, {
                    "s": "reserved", "e": row["epsilon"], "d": row["delta"], "n": relation,
                    "v": row["version"], "m": row["method"],
                    "f": json.loads(row["features"] or "[]"), "r": None,
                    "t": None if at is None else at.isoformat()})
        elif run is not None:
            if event == "release" and run["s"] != "released":
                ds.put(run_id, {**run, "s": "released", "r": row["version"]})
            elif event == "fail" and run["s"] == "reserved":
                ds.put(run_id, {**run, "s": "failed"})
            elif event == "cancel" and run["s"] == "reserved":
                for target in RELATIONS:  # withdraw exactly what its reserve row added
                    total = ds.spent[target]
                    image = _image(run["e"], run["d"], run["n"], target)
                    ds.add_spent(target, None if total is None or image is None else
                                 [max(0.0, total[0] - image[0]),
                                  max(0.0, total[1] - image[1])])
                ds.put(run_id, {**run, "s": "cancelled"})


def _record(run_id: str, run: dict[str, Any], result: dict[str, Any] | None = None
            ) -> RunRecord:
    at = run["t"]
    return RunRecord(run_id=run_id, status=run["s"], epsilon=run["e"], delta=run["d"],
                     method=run["m"], features=list(run["f"]), result=result,
                     reserved_at=None if at is None else datetime.fromisoformat(at),
                     reserved_version=run["v"], neighbouring=run["n"],
                     released_version=run["r"])


# -- the files of a snapshot -------------------------------------------------------------------
@dataclass(frozen=True)
class _File:
    path: str
    size: int
    rows: int
    first: int  # the lowest event version in the file
    last: int  # the highest

    @property
    def checkpoint(self) -> bool:
        return self.path.startswith(_CHECKPOINT_FILE)


@dataclass
class _Snapshot:
    """A verified read of the ledger at one Delta version: the state after every event,
    the rows read (from the anchor to the end), and the files of the snapshot."""

    table: Any  # deltalake.DeltaTable, loaded at ``version``
    version: int
    state: _State
    rows: list[dict[str, Any]]  # the rows read, in version order, ending at ``version``
    files: list[_File]
    checkpoint: int | None  # the newest checkpoint's version
    since_checkpoint: int  # events after it

    @property
    def last_chain(self) -> str:
        return self.rows[-1]["chain"]


def _now() -> datetime:
    return datetime.now(UTC)


def _check_name(value: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(f"{what} must be a non-empty string, got {value!r}")
    return value


def check_neighbouring(value: str | None) -> str:
    """A neighbouring relation's name (None: add-remove)."""
    if value is None:
        return ADD_REMOVE
    if value not in RELATIONS:
        raise ParameterError(f"neighbouring must be one of {', '.join(RELATIONS)}, got "
                             f"{value!r}")
    return value


def _json_default(value: Any) -> str:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    raise TypeError(f"cannot hash a {type(value).__name__}")


#: SHA-256 of the checkpoint states this process hashed last, by the string object (kept
#: referenced, so an id is never reused while it is a key; strings are immutable)
_DIGESTS: OrderedDict[int, tuple[str, str]] = OrderedDict()


def _digest(text: str) -> str:
    """SHA-256 hex of ``text``; a state read from a cached file (the same string object)
    is hashed once per process, not once per operation."""
    hit = _DIGESTS.get(id(text))
    if hit is not None and hit[0] is text:
        _DIGESTS.move_to_end(id(text))
        return hit[1]
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    _DIGESTS[id(text)] = (text, digest)
    while len(_DIGESTS) > 8:
        _DIGESTS.popitem(last=False)
    return digest


def _chain(previous: str, row: dict[str, Any]) -> str:
    """The chain value of ``row``: SHA-256 of the previous chain and every other field."""
    body = {name: row[name] for name in SCHEMA.names if name != "chain"}
    if row["event"] == "checkpoint" and isinstance(row["result"], str):  # bound by digest
        body["result"] = "sha256:" + _digest(row["result"])
    text = json.dumps([previous, body], default=_json_default, sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: rows whose link to the previous chain value this process checked, by the row object
#: (kept referenced, so an id is never reused while it is a key): a row of a file read
#: again (changed size or modification time: :meth:`Ledger._read`) is a new object
_LINKS: OrderedDict[int, tuple[dict[str, Any], str]] = OrderedDict()
_CACHED_LINKS = 4096


def _linked(previous: str, row: dict[str, Any]) -> bool:
    """Whether ``row``'s chain value is the link from ``previous`` (each row object is
    hashed once per process: the reserve and the release of a job share the rows read)."""
    hit = _LINKS.get(id(row))
    if hit is not None and hit[0] is row and hit[1] == previous:
        return True
    if row["chain"] != _chain(previous, row):
        return False
    _LINKS[id(row)] = (row, previous)
    while len(_LINKS) > _CACHED_LINKS:
        _LINKS.popitem(last=False)
    return True


def forget() -> None:
    """Empty this process's caches of files read, rows linked and states hashed (as a new
    process starts: benchmarks time the operations of a new job with it)."""
    _ROWS.clear()
    _LINKS.clear()
    _DIGESTS.clear()


def _delta_reason(exc: BaseException) -> str:
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


def _stats(rows: list[dict[str, Any]]) -> str:
    versions = [r["version"] for r in rows]
    return json.dumps({"numRecords": len(rows), "minValues": {"version": min(versions)},
                       "maxValues": {"version": max(versions)}, "nullCount": {}})


class Ledger:
    """A budget ledger stored as a Delta table at ``path``; create it once with
    :meth:`init` (``dprect budget init``)."""

    def __init__(self, path: str | Path) -> None:
        require("delta", "the budget ledger")
        self.path = str(path)
        self._checkpoint_row: dict[str, Any] | None = None  # the last one written
        self._files_after: list[_File] = []  # the table's files after it
        self._table: Any = None  # the Delta table as last read (reused while unchanged)
        self._seen: dict[int, tuple[int, int]] = {}  # its commit files' sizes and times
        self._runs_grace = _RUNS_GRACE_S  # see _cleanup

    # -- messages -----------------------------------------------------------------------
    def _missing(self) -> NoLedgerError:
        return NoLedgerError(f"no budget ledger at {self.path}; create it once with "
                             f"`dprect budget init --ledger {self.path}`")

    def _damaged(self, reason: str) -> LedgerError:
        return LedgerError(f"the budget ledger at {self.path} is damaged: {reason}; nothing "
                           f"was charged or released — {_RESTORE}")

    # -- creating -----------------------------------------------------------------------
    def init(self) -> None:
        """Create the ledger: commit version 0, an ``init`` event, in a new or empty folder.

        Refused (nothing written) if ``path`` is a file, or a folder that is not empty —
        which covers an existing ledger and the files left behind when a ledger's
        ``_delta_log/`` was deleted (such a ledger must be restored, not re-created: a new
        one would start from zero spend)."""
        from deltalake import CommitProperties, DeltaTable, write_deltalake

        where = Path(self.path)
        if where.exists() and not where.is_dir():
            raise LedgerError(f"cannot create a budget ledger at {self.path}: it is a file")
        if where.is_dir() and any(where.iterdir()):
            try:
                DeltaTable(self.path)
                exists = True
            except Exception:
                exists = False
            if exists:
                raise LedgerError(f"a budget ledger (or another Delta table) already exists "
                                  f"at {self.path}; nothing was changed")
            raise LedgerError(
                f"cannot create a budget ledger at {self.path}: the folder is not empty and "
                f"holds no readable ledger (if it held a ledger whose _delta_log was "
                f"deleted or damaged, {_RESTORE}; a new ledger would start from zero spend)")
        row = self._row("init", None, 0, "", message="ledger created")
        try:
            where.mkdir(parents=True, exist_ok=True)
            write_deltalake(self.path, pa.Table.from_pylist([row], schema=SCHEMA),
                            mode="error", configuration=TABLE_CONFIGURATION,
                            commit_properties=CommitProperties(max_commit_retries=0))
        except Exception as exc:
            text = str(exc).lower()
            if "already exists" in text or type(exc).__name__ == "CommitFailedError":
                raise LedgerError(f"a budget ledger already exists at {self.path} (created "
                                  "at the same time by another process)") from None
            raise LedgerError(f"cannot create the budget ledger at {self.path}: "
                              f"{one_line(str(exc), _DETAIL_CHARS)}") from None

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
                    f"released — {_RESTORE}") from None
            raise self._missing() from None
        except Exception as exc:  # an empty, truncated or missing commit file, ...
            raise _DamageError(_delta_reason(exc)) from None

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

    def _load(self, *, full: bool = False) -> _Snapshot:
        """Read and verify the ledger (see "Integrity" in the module docstring). A read
        that fails is tried once more after a short pause (a checkpoint's cleanup may have
        removed files between the log's read and the files' read) before the ledger is
        called damaged."""
        for attempt in (1, 2, 3):
            try:
                return self._load_once(full)
            except _DamageError as exc:
                self._table = None  # read afresh
                if attempt == 3:
                    raise self._damaged(str(exc)) from None
                time.sleep(0.02 * attempt)
        raise AssertionError("unreachable")

    def _files(self, table: Any, version: int) -> list[_File]:
        """The snapshot's data files, checked to hold versions 0..V one event each, each
        present with its recorded size (step 2), and the log's commit files (step 3)."""
        adds = pa.table(table.get_add_actions(flatten=True))
        need = ["path", "size_bytes", "num_records", "min.version", "max.version"]
        if any(name not in adds.column_names for name in need):
            raise _DamageError("its data files carry no version statistics")
        cols = [adds.column(name).to_pylist() for name in need]
        files = sorted((_File(*values) for values in zip(*cols, strict=True)),
                       key=lambda f: (-1 if f.first is None else f.first))
        expected = 0
        for f in files:
            if f.first is None or f.last is None or f.rows is None:
                raise _DamageError("an event has no commit version")
            if f.first != expected:
                if f.first > expected:
                    raise _DamageError(f"commit version {expected} has no event (an empty, "
                                   f"truncated or edited commit file?)")
                raise _DamageError(f"more than one event at commit version {f.first}")
            if f.rows != f.last - f.first + 1:
                raise _DamageError(f"the events of versions {f.first}..{f.last} are not one "
                               f"per version")
            expected = f.last + 1
        if expected != version + 1:
            if expected > version + 1:
                raise _DamageError(f"an event claims a version after the log's last ({version})")
            raise _DamageError(f"commit version {expected} has no event (an empty, truncated or "
                           f"edited commit file?)")
        for f in files:
            try:
                size = os.stat(os.path.join(self.path, f.path)).st_size
            except OSError:
                raise _DamageError("a file its log refers to is missing") from None
            if size != f.size:
                raise _DamageError("a data file is not the one its log recorded (edited or "
                               "truncated)")
        present = {v: k for v, k in self._commit_files().items() if v <= version}
        if version not in present or len(present) != version - min(present) + 1:
            raise _DamageError("a commit file is missing from its _delta_log")
        if any(size == 0 for size, _ in present.values()):
            raise _DamageError("a commit file is empty (truncated by a power loss?)")
        self._seen = present  # what the next read compares before it reuses the table
        return files

    def _read(self, files: list[_File]) -> list[dict[str, Any]]:
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
                        raise _DamageError("its column types are not the ledger's")
                    cached = table.to_pylist()
                    _ROWS[key] = cached
                    while len(_ROWS) > _CACHED_FILES:
                        _ROWS.popitem(last=False)
                else:
                    _ROWS.move_to_end(key)
            except _DamageError:
                raise
            except Exception as exc:
                raise _DamageError(_delta_reason(exc)) from None
            rows += cached
        rows.sort(key=lambda r: -1 if r["version"] is None else r["version"])
        return rows

    def _load_once(self, full: bool) -> _Snapshot:
        table = self._open()
        try:
            version = table.version()
            names = [f.name for f in table.schema().fields]
        except Exception as exc:
            raise _DamageError(_delta_reason(exc)) from None
        if names != SCHEMA.names:
            raise LedgerError(f"{self.path} is a Delta table but not a budget ledger of "
                              f"this dprect version (its columns differ)")
        try:
            files = self._files(table, version)
        except _DamageError:
            raise
        except Exception as exc:
            raise _DamageError(_delta_reason(exc)) from None
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
            for digest in sorted(_referenced(named)):
                state.index._read(digest)
        return _Snapshot(table, version, state, rows, files, newest, after)

    def _verify(self, rows: list[dict[str, Any]], version: int, files: list[_File],
                start: _File | None) -> tuple[_State, int | None, int]:
        """Steps 4 and 5 on the rows read (from version ``start.first``, or 0)."""
        first = 0 if start is None else start.first
        recorded = [r["version"] for r in rows]
        if recorded != list(range(first, version + 1)):
            raise _DamageError("the events read are not one per commit version")
        ends = {f.last for f in files if f.checkpoint}
        archived = [(f.first, f.last) for f in files if f.path.startswith(_ARCHIVE_FILE)]
        state = _State(self.path)
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
                raise _DamageError(f"commit version {v} holds an unexpected event")
            if anchored:
                anchored = False
            else:
                if not _linked(previous, row):
                    raise _DamageError(f"the hash chain breaks at commit version {v} (an "
                                   f"edited file?)")
            previous = row["chain"]
            if event == "checkpoint":
                if start is not None and base is None:
                    try:  # the previous checkpoint: the state we start from
                        state = _State.parse(row["result"], self.path)
                    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
                        raise _DamageError(f"the checkpoint at commit version {v} cannot be "
                                       f"read") from None
                    base = v
                elif not state.equals(row["result"]):
                    raise _DamageError(f"the checkpoint at commit version {v} does not equal "
                                   f"the events before it (a forged checkpoint?)")
                newest, after = v, 0
                continue
            if start is not None and base is None:
                continue  # before the previous checkpoint: chained, not folded
            state.apply(row)
            after += 1
        if start is not None and base is None:
            raise _DamageError("the checkpoint file holds no checkpoint")
        return state, newest, after

    def verify(self, *, full: bool = False) -> int:
        """Check the ledger (see "Integrity"); return its Delta version. ``full``: from
        version 0, every link and every checkpoint (``dprect budget verify``)."""
        return self._load(full=full).version

    def history(self, dataset: str, since: int = 0) -> list[dict[str, Any]]:
        """The event rows of ``dataset`` at commit versions ≥ ``since``, in commit order:
        reads only the files holding those versions (and the row before, whose chain value
        anchors the links it re-hashes)."""
        _check_name(dataset, "dataset")
        snap = self._load()
        since = max(0, int(since))
        chosen = [f for f in snap.files if f.last >= since - 1]
        rows = [r for r in self._read(chosen) if r["version"] >= since - 1]
        try:
            previous = ""
            for i, row in enumerate(rows):
                if (i > 0 or row["version"] == 0) and not _linked(previous, row):
                    raise _DamageError(f"the hash chain breaks at commit version "
                                       f"{row['version']} (an edited file?)")
                previous = row["chain"]
        except _DamageError as exc:
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
        except _DamageError as exc:
            raise self._damaged(str(exc)) from None

    # -- summaries ----------------------------------------------------------------------
    @staticmethod
    def _relation(ds: _DatasetState) -> str:
        if ds.cap is not None:
            return ds.cap[2]
        return ADD_REMOVE if ds.spent[ADD_REMOVE] is not None else REPLACE_ONE

    @staticmethod
    def _spent_in(ds: _DatasetState, relation: str) -> Budget | None:
        total = ds.spent[relation]
        return None if total is None else Budget(total[0], total[1])

    @staticmethod
    def _cap_of(ds: _DatasetState) -> Cap | None:
        return None if ds.cap is None else Cap(ds.cap[0], ds.cap[1], ds.cap[2])

    def status(self, dataset: str, *, runs: bool = False) -> DatasetStatus:
        """Spend and cap of ``dataset`` from one verified read of the ledger; with
        ``runs`` also its runs (which reads the dataset's whole run index; without it no
        run bucket is parsed)."""
        snap = self._load()
        ds = snap.state.of(_check_name(dataset, "dataset"))
        relation = self._relation(ds)
        with self._index():
            records = None if not runs else sorted(
                (_record(k, v) for k, v in ds.runs().items()),
                key=lambda r: r.reserved_version)
        return DatasetStatus(self._spent_in(ds, relation), self._cap_of(ds), records,
                             snap.version, relation, dataset in snap.state.datasets)

    def datasets(self) -> list[str]:
        """The datasets the ledger has events for."""
        return sorted(self._load().state.datasets)

    def spent(self, dataset: str, neighbouring: str | None = None) -> Budget | None:
        """The spend in ``neighbouring`` (default: the relation :meth:`status` uses)."""
        ds = self._load().state.of(_check_name(dataset, "dataset"))
        return self._spent_in(ds, neighbouring or self._relation(ds))

    def cap(self, dataset: str) -> Cap | None:
        return self._cap_of(self._load().state.of(_check_name(dataset, "dataset")))

    def runs(self, dataset: str) -> list[RunRecord]:
        """Every run of ``dataset`` with its result (reads the whole log)."""
        rows = self.events(dataset)
        results = {r["run_id"]: json.loads(r["result"]) for r in rows
                   if r["event"] == "release" and r["result"] is not None}
        records = self.status(dataset, runs=True).runs or []
        return [RunRecord(**{**r.__dict__, "result": results.get(r.run_id)})
                for r in records]

    def run(self, dataset: str, run_id: str) -> RunRecord | None:
        snap = self._load()
        return self._run(snap, _check_name(dataset, "dataset"), run_id)

    def _run(self, snap: _Snapshot, dataset: str, run_id: str) -> RunRecord | None:
        """One run, with its released result (read from its release row)."""
        with self._index():
            run = snap.state.of(dataset).get(run_id)
        if run is None:
            return None
        result = None
        if run["r"] is not None:
            result = json.loads(self._row_at(snap, run["r"])["result"])
        return _record(run_id, run, result)

    def _row_at(self, snap: _Snapshot, version: int) -> dict[str, Any]:
        """The verified row at ``version`` (re-hashed against the row before it)."""
        for row in snap.rows:
            if row["version"] == version:
                return row
        chosen = [f for f in snap.files if f.first <= version and f.last >= version - 1]
        rows = [r for r in self._read(chosen) if version - 1 <= r["version"] <= version]
        if [r["version"] for r in rows] != [version - 1, version] or \
                rows[1]["chain"] != _chain(rows[0]["chain"], rows[1]):
            raise self._damaged(f"the hash chain breaks at commit version {version} (an "
                                f"edited file?)")
        return rows[1]

    # -- writing ------------------------------------------------------------------------
    def _row(self, event: str, dataset: str | None, version: int, previous: str,
             **fields: Any) -> dict[str, Any]:
        row: dict[str, Any] = {name: None for name in SCHEMA.names}
        row.update(event=event, dataset=dataset, recorded_at=_now(),
                   dprect_version=__version__, version=version)
        row.update(fields)
        # hash what will be read back (timestamps normalised to UTC microseconds)
        row = pa.Table.from_pylist([row], schema=SCHEMA).to_pylist()[0]
        row["chain"] = _chain(previous, row)
        return row

    def _write_file(self, prefix: str, version: int, rows: list[dict[str, Any]]) -> Any:
        """Write ``rows`` as one Parquet file of the table; its add action."""
        import pyarrow.parquet as pq
        from deltalake.transaction import AddAction

        name = f"{prefix}{version:020d}-{uuid.uuid4().hex}.parquet"
        where = os.path.join(self.path, name)
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), where,
                       row_group_size=4096)
        return AddAction(name, os.path.getsize(where), {}, int(time.time() * 1000), True,
                         _stats(rows))

    def _transact(self, snap: _Snapshot, actions: list[Any]) -> bool:
        """Commit ``actions`` at exactly ``snap.version + 1``; False if another writer
        committed that version first (nothing is retried by delta-rs)."""
        from deltalake import CommitProperties, PostCommitHookProperties
        from deltalake.exceptions import CommitFailedError

        try:
            snap.table.create_write_transaction(
                actions, mode="append", schema=SCHEMA,
                commit_properties=CommitProperties(max_commit_retries=0),
                post_commithook_properties=PostCommitHookProperties(
                    create_checkpoint=False, cleanup_expired_logs=False))
        except CommitFailedError:
            return False
        except Exception as exc:
            raise LedgerError(f"cannot write the budget ledger at {self.path} "
                              f"({one_line(str(exc), _DETAIL_CHARS)}); nothing was "
                              f"released") from None
        return True

    def _commit(self, snap: _Snapshot, event: str, dataset: str, **fields: Any) -> bool:
        """Append one event at exactly ``snap.version + 1``; False if another writer
        committed that version first (the caller re-reads and tries again). After a
        successful commit a checkpoint is written when one is due."""
        row = self._row(event, dataset, snap.version + 1, snap.last_chain, **fields)
        action = self._write_file(_EVENT_FILE, row["version"], [row])
        if not self._transact(snap, [action]):
            self._discard(action.path)
            return False
        if (row["version"] % _DELTA_CHECKPOINT_EVERY == 0
                and snap.since_checkpoint + 1 < CHECKPOINT_EVERY):
            try:  # keeps the log a reader replays short
                from deltalake import DeltaTable

                DeltaTable(self.path, version=row["version"]).create_checkpoint()
            except Exception:  # an optimisation only
                pass
        if snap.since_checkpoint + 1 >= CHECKPOINT_EVERY:
            try:
                snap.state.apply(row)
                snap.rows.append(row)
                snap.files.append(_File(action.path, action.size, 1, row["version"],
                                        row["version"]))
                snap.version += 1
                snap.since_checkpoint += 1
                snap.table.load_as_version(snap.version)
                self._checkpoint(snap, archive=False)
            except Exception:
                pass  # checkpoints (a half-written checkpoint file is never referenced)
        return True

    def _discard(self, name: str) -> None:
        with contextlib.suppress(OSError):
            os.remove(os.path.join(self.path, name))

    def _checkpoint(self, snap: _Snapshot, *, archive: bool, maintain: bool = True
                    ) -> _File | None:
        """Commit a checkpoint at ``snap.version + 1``: one file holding the events since
        the newest checkpoint and the checkpoint row (the state after them), replacing
        their one-event files; with ``archive`` every older file is merged into one
        archive file too. Then a Delta checkpoint at that version, and the cleanup of what
        no reader at a version ≥ the previous checkpoint needs (``maintain``). Returns the
        checkpoint's file; None if another writer committed first."""
        from deltalake.transaction import RemoveAction

        newest = snap.checkpoint
        tail = [f for f in snap.files if newest is None or f.first > newest]
        tail_rows = [r for r in snap.rows if newest is None or r["version"] > newest]
        w = snap.version + 1
        # written in format 3 (a ledger's older format is replaced here); the run index's
        # changed buckets get their files first (a reader of this checkpoint needs them)
        row = self._row("checkpoint", None, w, snap.last_chain, result=snap.state.text(),
                        message=f"state after commit versions 0..{w - 1}")
        self._checkpoint_row = row
        try:
            if row["result"].split("\n", 1)[0] == _STATE_HEADER:
                snap.state.index.write()
        except OSError as exc:
            raise LedgerError(f"cannot write the budget ledger's run index at {self.path} "
                              f"({one_line(str(exc), _DETAIL_CHARS)})") from None
        actions = [self._write_file(_CHECKPOINT_FILE, w, [*tail_rows, row])]
        merged = list(tail)
        keep = {f.path for f in snap.files if f.checkpoint and f.last == newest}
        old = [f for f in snap.files if f not in tail and f.path not in keep]
        merge_old = len(old) > 1 or bool(old and not old[0].path.startswith(_ARCHIVE_FILE))
        if (archive and merge_old) or len(old) > ARCHIVE_AFTER:
            actions.append(self._archive(w, old))
            merged += old
        now = int(time.time() * 1000)
        actions += [RemoveAction(f.path, False, now, f.size) for f in merged]
        if not self._transact(snap, actions):
            for a in actions:
                if not isinstance(a, RemoveAction):
                    self._discard(a.path)
            return None
        if maintain:
            try:
                from deltalake import DeltaTable

                table = DeltaTable(self.path, version=w)
                table.create_checkpoint()
                horizon = w if archive else newest
                keep = _referenced([row["result"], *(
                    r["result"] for r in snap.rows if r["event"] == "checkpoint"
                    and horizon is not None and r["version"] >= horizon)])
                self._cleanup(table, horizon, keep)
            except Exception:
                pass  # an optimisation only: the checkpoint is committed
        first = actions[0]
        made = _File(first.path, first.size, len(tail_rows) + 1,
                     tail_rows[0]["version"] if tail_rows else w, w)
        kept = [f for f in snap.files if f not in merged]
        if len(actions) > 1 and not isinstance(actions[1], RemoveAction):
            kept.append(_File(actions[1].path, actions[1].size, sum(f.rows for f in old),
                              min(f.first for f in old), max(f.last for f in old)))
        self._files_after = sorted([*kept, made], key=lambda f: f.first)
        return made

    def _archive(self, version: int, files: list[_File]) -> Any:
        """One archive file with the rows of ``files`` (merged as Arrow tables); its add
        action."""
        import pyarrow.parquet as pq
        from deltalake.transaction import AddAction

        try:
            data = pa.concat_tables([
                pq.read_table(os.path.join(self.path, f.path), schema=SCHEMA)
                for f in files]).sort_by("version")
        except Exception as exc:
            raise LedgerError(f"cannot compact the budget ledger at {self.path}: "
                              f"{_delta_reason(exc)}") from None
        name = f"{_ARCHIVE_FILE}{version:020d}-{uuid.uuid4().hex}.parquet"
        where = os.path.join(self.path, name)
        pq.write_table(data, where, row_group_size=4096)
        versions = data.column("version")
        stats = json.dumps({"numRecords": data.num_rows,
                            "minValues": {"version": versions[0].as_py()},
                            "maxValues": {"version": versions[-1].as_py()},
                            "nullCount": {}})
        return AddAction(name, os.path.getsize(where), {}, int(time.time() * 1000), True,
                         stats)

    def _cleanup(self, table: Any, horizon: int | None, keep: set[str] | None = None
                 ) -> None:
        """Remove commit files, Delta checkpoints and data files no reader at a version
        ≥ ``horizon`` needs (a Delta checkpoint at or after it holds the table), and, when
        ``keep`` is given (the run-index digests the checkpoints at versions ≥ ``horizon``
        name), every other run-index file older than ``self._runs_grace`` seconds."""
        if horizon is None:
            return
        active = {str(p) for p in pa.table(table.get_add_actions()).column("path").to_pylist()}
        log = os.path.join(self.path, "_delta_log")
        last = _read_last_checkpoint(log)
        if last is None or last < horizon:
            return
        for name in os.listdir(log):
            digits = name.split(".", 1)[0]
            if digits.isdigit() and len(digits) == 20 and int(digits) < horizon and \
                    (name.endswith(".json") or name.endswith(".checkpoint.parquet")):
                self._discard(os.path.join("_delta_log", name))
        for name in os.listdir(self.path):
            if not name.endswith(".parquet") or name in active:
                continue
            written = _version_of_name(name)
            if written is None or written < horizon:
                self._discard(name)
        if keep is None:
            return
        now = time.time()
        with contextlib.suppress(OSError), os.scandir(os.path.join(self.path, RUNS_DIR)
                                                      ) as entries:
            for entry in entries:
                if entry.name.removesuffix(_RUNS_SUFFIX) not in keep:
                    with contextlib.suppress(OSError):
                        if now - entry.stat().st_mtime >= self._runs_grace:
                            os.remove(entry.path)

    def _retry(self, attempt: int) -> None:
        if attempt >= _MAX_ATTEMPTS:
            raise LedgerError(f"the ledger at {self.path} is too busy: gave up after "
                              f"{_MAX_ATTEMPTS} conflicting commits")
        time.sleep(random.uniform(0.005, 0.05) * min(attempt, 10))

    def compact(self) -> int:
        """``dprect budget compact``: verify everything from version 0, then commit a
        checkpoint that merges every file into three (the archive, the previous
        checkpoint's, the new one's) and remove what the table no longer references.
        Safe while other runs charge the ledger (an exclusive commit like any other;
        readers that race the cleanup re-read). Returns the new version."""
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            snap = self._load(full=True)
            if snap.checkpoint is None or snap.since_checkpoint:
                if self._checkpoint(snap, archive=False) is None:
                    self._retry(attempt)
                    continue
                snap = self._load()  # the files merged below were verified just now
            if self._checkpoint(snap, archive=True) is not None:
                return snap.version + 1
            self._retry(attempt)
        raise AssertionError("unreachable")

    def set_cap(self, dataset: str, epsilon: float, delta: float,
                neighbouring: str | None = None) -> Cap:
        """Record a cap for ``dataset`` in ``neighbouring`` (default add-remove). The cap
        committed last counts (commit order, not clock order); it may be below the spend,
        which then blocks every further run. A cap with δ = 0 is a pure-DP cap: it admits
        only runs with δ = 0."""
        _check_name(dataset, "dataset")
        cap = Cap(check_epsilon(epsilon, "cap epsilon"), check_delta(delta, "cap delta"),
                  check_neighbouring(neighbouring))
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            if self._commit(self._load(), "cap", dataset, epsilon=cap.epsilon,
                            delta=cap.delta, neighbouring=cap.neighbouring):
                return cap
            self._retry(attempt)
        raise AssertionError("unreachable")

    @staticmethod
    def _refuse_relation(dataset: str, neighbouring: str, cap: Cap) -> None:
        if _image(1.0, 0.0, neighbouring, cap.neighbouring) is None:
            raise ParameterError(
                f"the cap of dataset {dataset!r} is stated under {cap.neighbouring} "
                f"neighbours, and a {neighbouring} guarantee implies nothing under "
                f"{cap.neighbouring}: run with neighbouring {cap.neighbouring}, or set a "
                f"{neighbouring} cap (`dprect budget set-cap --neighbouring {neighbouring}`)")

    def check_relation(self, dataset: str, neighbouring: str,
                       cap: Budget | None = None) -> None:
        """Refuse (:class:`ParameterError`, parameters only) a run stated in
        ``neighbouring`` that the dataset's cap — or ``cap`` (a config cap, add/remove
        unless it is a :class:`Cap`) — cannot charge: called at plan time, before any read
        or reservation."""
        neighbouring = check_neighbouring(neighbouring)
        for c in (self.cap(_check_name(dataset, "dataset")), _as_cap(cap)):
            if c is not None:
                self._refuse_relation(dataset, neighbouring, c)

    def reserve(self, dataset: str, run_id: str, *, epsilon: float, delta: float,
                method: str, features: list[str], bound: str, neighbouring: str,
                cap: Budget | None = None) -> Reservation:
        """Charge (ε, δ), stated in ``neighbouring``, to ``dataset`` for ``run_id``
        before anything is released.

        * a run id already released → its recorded result, nothing charged;
        * a run id reserved before (failed or died) → retried under the same charge, if
          the request is not larger than what was charged; a cancelled one (its charge
          withdrawn, :meth:`cancel`) is charged anew;
        * otherwise the charge is committed only if spend + request ≤ each cap, in that
          cap's relation (the ledger's cap, and ``cap``: a config cap, add/remove unless
          it is a :class:`Cap`), else :class:`BudgetExceededError`; a run whose relation
          a cap cannot charge is refused (:meth:`check_relation`).

        The check and the commit see the same verified version of the ledger (exclusive
        commit at that version + 1, re-checked after any conflict)."""
        _check_name(dataset, "dataset")
        _check_name(run_id, "run id")
        neighbouring = check_neighbouring(neighbouring)
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            snap = self._load()
            previous = self._run(snap, dataset, run_id)
            if previous is not None and previous.status != "cancelled":
                if previous.status == "released":
                    return Reservation(run_id, False, previous.result)
                if epsilon > previous.epsilon * (1 + _TOLERANCE) or \
                        delta > previous.delta * (1 + _TOLERANCE):
                    raise LedgerError(
                        f"run id {run_id!r} was charged ({previous.epsilon:g}, "
                        f"{previous.delta:g}); a retry cannot ask for more "
                        f"({epsilon:g}, {delta:g}) — use a new run id")
                return Reservation(run_id, False, None)
            ds = snap.state.of(dataset)
            for c in (self._cap_of(ds), _as_cap(cap)):
                if c is not None:
                    self._check_cap(dataset, ds, c, epsilon, delta, neighbouring)
            if self._commit(snap, "reserve", dataset, run_id=run_id, epsilon=float(epsilon),
                            delta=float(delta), method=method, bound=bound,
                            neighbouring=neighbouring, features=json.dumps(features)):
                return Reservation(run_id, True, None)
            self._retry(attempt)
        raise AssertionError("unreachable")

    def _check_cap(self, dataset: str, ds: _DatasetState, cap: Cap, epsilon: float,
                   delta: float, neighbouring: str) -> None:
        self._refuse_relation(dataset, neighbouring, cap)
        image = _image(epsilon, delta, neighbouring, cap.neighbouring)
        assert image is not None
        spent = self._spent_in(ds, cap.neighbouring)
        if spent is None:
            raise BudgetExceededError(
                f"privacy budget cap exceeded for dataset {dataset!r}: it holds "
                f"replace-one charges, which bound nothing under the {cap.neighbouring} "
                f"cap; nothing was released")
        new_eps, new_delta = spent.epsilon + image[0], spent.delta + image[1]
        if new_eps > cap.epsilon * (1 + _TOLERANCE) or \
                new_delta > cap.delta * (1 + _TOLERANCE):
            raise BudgetExceededError(
                f"privacy budget cap exceeded for dataset {dataset!r}: spent "
                f"(epsilon={spent.epsilon:g}, delta={spent.delta:g}) + this run "
                f"({image[0]:g}, {image[1]:g}) > cap ({cap.epsilon:g}, {cap.delta:g}"
                f"{'' if cap.neighbouring == ADD_REMOVE else ', ' + cap.neighbouring}); "
                f"nothing was released")

    def release(self, dataset: str, run_id: str, result: dict[str, Any]) -> dict[str, Any]:
        """Record the release of ``run_id`` with its result. If another attempt of the
        same run id released first, its result is returned and this one must be dropped."""
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            snap = self._load()
            record = self._run(snap, dataset, run_id)
            if record is None:
                raise LedgerError(f"run id {run_id!r} has no reservation in {self.path}")
            if record.status == "released":
                assert record.result is not None
                return record.result
            if record.status == "cancelled":
                raise LedgerError(f"run id {run_id!r} was cancelled (interrupted before it "
                                  f"drew noise): its charge was withdrawn, so nothing may be "
                                  f"released under it; run it again")
            if self._commit(snap, "release", dataset, run_id=run_id,
                            result=json.dumps(result), method=result.get("method")):
                return result
            self._retry(attempt)
        raise AssertionError("unreachable")

    def cancel(self, dataset: str, run_id: str) -> bool:
        """Withdraw the charge of ``run_id``: for an attempt that reserved it (a new
        charge, :attr:`Reservation.new_charge`) and was interrupted before it drew any
        noise — nothing it did depended on the data's private part beyond what a 0-DP
        constant output reveals (docs/privacy.md, "Cancelled reservations"). Only a run
        still ``reserved`` is cancelled (a ``failed`` or released one, or one another
        attempt of the run id moved on, stays as it is); returns whether it was. Never
        call it once noise may have been drawn: the run must then stay charged
        (:meth:`fail`)."""
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            snap = self._load()
            record = self._run(snap, _check_name(dataset, "dataset"), run_id)
            if record is None or record.status != "reserved":
                return False
            if self._commit(snap, "cancel", dataset, run_id=run_id,
                            message="interrupted before any noise was drawn"):
                return True
            self._retry(attempt)
        raise AssertionError("unreachable")

    def fail(self, dataset: str, run_id: str, message: str) -> None:
        """Record that ``run_id`` stopped before releasing anything (it stays charged).
        ``message`` must be what the command printed (never an exception's own text,
        which could quote data: :func:`dprect.release.guarded.guarded_release`)."""
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            if self._commit(self._load(), "fail", dataset, run_id=run_id,
                            message=one_line(message, 2000)):
                return
            self._retry(attempt)
        raise AssertionError("unreachable")


def _as_cap(cap: Budget | None) -> Cap | None:
    if cap is None or isinstance(cap, Cap):
        return cap
    return Cap(cap.epsilon, cap.delta, ADD_REMOVE)


def _version_of_name(name: str) -> int | None:
    for prefix in (_EVENT_FILE, _CHECKPOINT_FILE, _ARCHIVE_FILE):
        if name.startswith(prefix):
            digits = name[len(prefix):len(prefix) + 20]
            return int(digits) if digits.isdigit() else None
    return None  # delta-rs's own names (the init event, older ledgers' events)


def _read_last_checkpoint(log: str) -> int | None:
    try:
        with open(os.path.join(log, "_last_checkpoint"), encoding="utf-8") as fh:
            return int(json.load(fh)["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
