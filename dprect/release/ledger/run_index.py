"""The run index (state format 3; see "Checkpoints" in :mod:`dprect.release.ledger`):
every run of every dataset in one of :data:`RUN_BUCKETS` buckets, a bucket a file of its
own named by the SHA-256 of its text, read on demand and checked against the digest the
verified checkpoint names for it."""

from __future__ import annotations

import functools
import hashlib
import os
import uuid

from dprect.release.ledger.errors import DamageError

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
RUNS_SUFFIX = ".tsv"
#: an unreferenced run-index file is removed only once it is this old: a writer may be
#: about to commit a checkpoint that names it
RUNS_GRACE_S = 600.0


def bucket_of(run_id: str, buckets: int) -> int:
    return int(hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:8], 16) % buckets


@functools.lru_cache(maxsize=65536)
def _span_start(dataset: str) -> int:
    return bucket_of(dataset, RUN_BUCKETS)


def run_bucket(dataset: str, run_id: str) -> int:
    """The run index bucket of ``run_id`` of ``dataset``."""
    return (_span_start(dataset) + bucket_of(run_id, DATASET_SPAN)) % RUN_BUCKETS


def dataset_buckets(dataset: str) -> list[int]:
    start = _span_start(dataset)
    return sorted({(start + i) % RUN_BUCKETS for i in range(DATASET_SPAN)})


#: a bucket in memory: dataset (JSON) → run id (JSON) → the run (canonical JSON)
_Bucket = dict[str, dict[str, str]]


class RunIndex:
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
            hit = self.loaded[k] = {} if digest is None else self.read(digest)
        return hit

    def change(self, k: int) -> _Bucket:
        self.dirty.add(k)
        return self.bucket(k)

    def read(self, digest: str) -> _Bucket:
        """The bucket whose text has SHA-256 ``digest``, read from its file and checked
        (:class:`DamageError` if it is missing, edited or cannot be read)."""
        where = os.path.join(self.root, RUNS_DIR, f"{digest}{RUNS_SUFFIX}")
        try:
            with open(where, "rb") as fh:
                data = fh.read()
        except OSError:
            raise DamageError("a file of its run index is missing") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise DamageError("a file of its run index is not the one its checkpoint "
                              "names (edited or truncated)")
        out: _Bucket = {}
        try:
            for line in data.decode("utf-8").split("\n"):
                dataset, run_id, run = line.split("\t", 2)
                out.setdefault(dataset, {})[run_id] = run
        except ValueError:
            raise DamageError("a file of its run index cannot be read") from None
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
        the cleanup's grace period (:data:`RUNS_GRACE_S`) counts from now."""
        self.settle()
        folder = os.path.join(self.root, RUNS_DIR)
        os.makedirs(folder, exist_ok=True)
        for digest, text in self.unwritten.items():
            where = os.path.join(folder, f"{digest}{RUNS_SUFFIX}")
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
