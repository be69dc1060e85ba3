"""The privacy budget ledger: durable, capped, race-free, tamper-evident spending across runs.

A Delta table (written with ``deltalake``) of append-only *events*; every commit adds
exactly one new event:

* ``init`` — the ledger was created (``dprect budget init``); always commit version 0;
* ``reserve`` — a run charges (ε, δ) to a dataset **before** it releases anything, with
  the neighbouring relation its guarantee is stated in;
* ``release`` — the run released its result (the result JSON is stored in the row, which
  makes re-running a finished run id idempotent; a large result is stored as a file the
  row references: "Stored results" below);
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
  :meth:`Ledger.compact` (the state is text lines, see :class:`~.state.State`: the totals of
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
:data:`~.run_index.RUNS_GRACE_S` old: a concurrent writer may be about to commit a
checkpoint naming a file it just wrote; a writer never deletes a run-index file it wrote,
since another writer's identical state names the same file). :meth:`Ledger.compact` (``dprect budget
compact``) also merges every older file into one archive file, so a ledger of any age is a
handful of data files, plus the run index: at most :data:`RUN_BUCKETS` small files (and
those not yet past their grace period). Readers that race a
cleanup re-read once before calling the ledger damaged. Never run Delta's own
OPTIMIZE/VACUUM or log cleanup on a ledger: those commits add no event and read as damage.

**Stored results.** A ``release`` row holds its result's JSON inline up to
:data:`~.stored.INLINE_MAX_CHARS` characters (a rectangle or bounds result is a few kB);
a longer one (a grouped aggregate of 10^5 groups is about 128 MB) is written first as a
gzip file in :data:`~.stored.RESULTS_DIR`, named by the SHA-256 of the JSON, atomically,
and the row holds a small reference (path, SHA-256, length, the result's small top-level
entries and the sizes of its large ones). The choice depends on the released record's
length only (post-processing). Reading the run back (:meth:`Ledger.run`, a retried run
id's previous result, :meth:`Ledger.runs`) re-hashes the file against the reference,
which the chain binds: a missing or edited file is damage (one line), never another
result; ``dprect budget verify`` (:meth:`LedgerLog.verify` with ``full``) checks every
stored result a release row names. The file is written before the row is committed,
so a crash between them leaves an unreferenced file, never a row without its file; such
orphans (and a release that lost a race to another attempt of its run id) are left in
the folder: neither the checkpoints' cleanup nor :meth:`Ledger.compact` removes anything
there. :meth:`Ledger.reserve` checks that the folder is writable before it charges
anything. :meth:`LedgerLog.history` returns the rows as stored (a reference, not the
result).

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

**The modules** (imports point down this list only):

* :mod:`~dprect.release.ledger.errors` — the errors and their one-line messages;
* :mod:`~dprect.release.ledger.caps` — (ε, δ) budgets, caps in a stated neighbouring
  relation, and the image of a charge in another relation;
* :mod:`~dprect.release.ledger.records` — what the ledger reports (runs, reservations,
  a dataset's status);
* :mod:`~dprect.release.ledger.schema` — the event table's schema, events and file names;
* :mod:`~dprect.release.ledger.chain` — the hash chain over the event rows;
* :mod:`~dprect.release.ledger.run_index` — the run index's buckets and files;
* :mod:`~dprect.release.ledger.stored` — large released results stored as files beside
  the ledger, referenced from their ``release`` rows and checked when read back;
* :mod:`~dprect.release.ledger.state` — the state a checkpoint records, and how an event
  is folded into it;
* :mod:`~dprect.release.ledger.log` — reading and verifying the log (fail closed);
* :mod:`~dprect.release.ledger.queries` — spend, cap and runs from a verified read;
* :mod:`~dprect.release.ledger.writes` — creating the ledger, rows and exclusive commits;
* :mod:`~dprect.release.ledger.compaction` — checkpoints and compaction;
* :mod:`~dprect.release.ledger.reservations` — caps set, reserve, release, fail, cancel:
  :class:`Ledger`;
* :mod:`~dprect.release.ledger.fill` — a ledger's history written fast (tests and
  benchmarks only; not imported here).
"""

from __future__ import annotations

from dprect.release.ledger.caps import (
    ADD_REMOVE,
    RELATIONS,
    REPLACE_ONE,
    Budget,
    Cap,
    check_neighbouring,
    relation_image,
)
from dprect.release.ledger.compaction import ARCHIVE_AFTER, CHECKPOINT_EVERY
from dprect.release.ledger.errors import (
    BudgetExceededError,
    LedgerError,
    NoLedgerError,
    one_line,
)
from dprect.release.ledger.log import forget
from dprect.release.ledger.records import DatasetStatus, Reservation, RunRecord
from dprect.release.ledger.reservations import Ledger
from dprect.release.ledger.run_index import DATASET_SPAN, RUN_BUCKETS, RUNS_DIR
from dprect.release.ledger.schema import EVENTS, SCHEMA, TABLE_CONFIGURATION
from dprect.release.ledger.state import Runs

__all__ = [
    "ADD_REMOVE", "ARCHIVE_AFTER", "CHECKPOINT_EVERY", "DATASET_SPAN", "EVENTS", "RELATIONS",
    "REPLACE_ONE", "RUNS_DIR", "RUN_BUCKETS", "SCHEMA", "TABLE_CONFIGURATION", "Budget",
    "BudgetExceededError", "Cap", "DatasetStatus", "Ledger", "LedgerError", "NoLedgerError",
    "Reservation", "RunRecord", "Runs", "check_neighbouring", "forget", "one_line",
    "relation_image",
]
