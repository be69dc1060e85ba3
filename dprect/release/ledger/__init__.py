"""The privacy budget ledger: durable, capped, race-free, tamper-evident spending across runs.

A Delta table (written with ``deltalake``) of append-only *events*, one new event per
commit: ``init`` (commit version 0, ``dprect budget init``), ``reserve`` (a run charges
(ε, δ) to a dataset **before** it releases anything, in its guarantee's neighbouring
relation), ``release`` (the run's result JSON, which makes re-running a released run id
idempotent; a large result stored as a file the row references: "Stored results" in
:mod:`~.stored`),
``fail`` (the one line the command printed, never an exception's text), ``cancel`` (a run
interrupted after its reservation and before it drew any noise: its charge withdrawn,
:meth:`Ledger.cancel`), ``cap`` (the one committed last counts) and ``checkpoint`` (the
state after every event before it, every :data:`CHECKPOINT_EVERY` events and by
:meth:`Ledger.compact`; the run index's files, in :data:`RUNS_DIR`, named by their
SHA-256 in it). docs/operations.md ("The privacy budget ledger") states every rule below
in full, with the measurements.

**Spend.** The sum of (ε, δ) over a dataset's ``reserve`` rows less the cancelled ones:
basic composition (Dwork & Roth 2014, Thm 3.16), for any adaptively chosen sequence of
runs; a cancelled run released a constant, a 0-DP output (docs/privacy.md, "Cancelled
reservations"). A run id is charged at most once at a time.

**Neighbouring relations.** Spend and cap
are compared in the cap's relation: an (ε, δ) add/remove charge counts as
(2ε, (1 + e^ε)·δ) under replace-one (group privacy of size 2,
:func:`dprect.core.accounting.replace_one`); a replace-one charge bounds nothing under
add/remove, so it is refused against an add/remove cap (:meth:`Ledger.check_relation`)
and leaves the add/remove spend unbounded (``None``).

**Order and race freedom.** Events are ordered by their Delta commit version, never by a
clock. Every write reads version v, checks against what it read, and commits at exactly
v + 1 with delta-rs's commit retries off; a writer that lost the race re-reads, re-checks
and tries again, so no two runs both pass a check only one of them fits.

**Integrity (fail closed).** Each row records its version and a SHA-256 hash chain. Every
operation checks: (1) delta-rs reads the table; (2) the snapshot's data files hold the
events 0 … V one each, every file with its recorded size; (3) the commit files are
contiguous up to V and none is empty; (4) the chain recomputes from the anchor, version 0
is the only ``init`` and the schema is the ledger's; (5) the newest checkpoint equals the
previous one with the events between them applied; (6) every run-index file it reads has
the digest the checkpoint names. Any damage raises :class:`LedgerError` ("the budget
ledger ... is damaged") and nothing is charged, released or recorded — never a smaller
spend. An unkeyed chain cannot detect a writer who rewrites it from a checkpoint on, nor
the deletion of the newest commit file alone: the folder's permissions and backups must
exclude those (docs/operations.md).

**Checkpoints.** A checkpoint is an ordinary chained event whose content is a
deterministic function of the events before it. An operation takes the previous
checkpoint's first row as the anchor, re-derives the newest checkpoint from it (an edited
one breaks the chain, a forged one differs from the re-derivation), and reads at most
about 3·:data:`CHECKPOINT_EVERY` rows and the run-index buckets its events and run id
touch, whatever the ledger's age; ``dprect budget verify`` checks everything from
version 0.

**Compaction.** Each checkpoint merges the one-event files since the previous one, writes
a Delta checkpoint and removes what is older than the previous checkpoint (run-index
files only past :data:`~.run_index.RUNS_GRACE_S`); :meth:`Ledger.compact` merges every
older file into one archive. Never run Delta's own OPTIMIZE/VACUUM or log cleanup on a
ledger: those commits add no event and read as damage.

**No implicit creation; fail closed.** Only :meth:`Ledger.init` creates a ledger, in a
new or empty folder; every other operation refuses a path without one
(:class:`NoLedgerError`). A run that dies after reserving stays charged (the table is
``delta.appendOnly``; only the interrupted attempt's own ``cancel`` withdraws a charge); a
run releases only after its ``release`` row is committed, and writes its outputs after.
Every :class:`LedgerError` message is one line without terminal escape codes.

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
  :class:`Ledger` (a history written fast for tests and benchmarks:
  tests/ledger_fill.py).
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
