"""Released results too large for a ledger row (issue #42): stored once as a file beside
the ledger, the ``release`` row holding a small reference to it.

**Stored results.** A ``release`` row's ``result`` is the result's JSON text. Past
:data:`INLINE_MAX_CHARS` characters of that text (a grouped aggregate of 10^5 groups is
about 128 MB of JSON) the row instead holds a *reference*: a small JSON object ::

    {"stored": "_dprect_results/<sha256>.json.gz", "sha256": "<sha256>", "bytes": N,
     "format": "dprect stored result 1", "summary": {...}, "sizes": {...}}

where ``<sha256>`` is the SHA-256 of the result's JSON text (UTF-8), ``N`` its length in
bytes, ``summary`` the result's top-level entries whose JSON is at most
:data:`SUMMARY_ITEM_CHARS` characters (method, guarantee, counts, ...) and ``sizes`` the
number of items of every larger list or object (e.g. the groups). The threshold is a
function of the released record's length only, so choosing between the two forms is
post-processing of released output: it reveals nothing the result does not.

The file is gzip-compressed JSON (one gzip member, DEFLATE at :data:`LEVEL`; a streamed
record's blocks deflated where they were drawn, each a piece of the stream:
:class:`_GzipPieces`; deflated by :func:`~dprect.release.deflate.deflater`, ISA-L's
where installed, else zlib's — any gzip reader inflates either), content-addressed (its
name is the SHA-256 of what it holds, so a retried or repeated write of the same result
is the same file; the compressed bytes are not promised — a file whose pieces were
deflated elsewhere, by another library or at another level, reads the same), written
atomically (a temporary name in the folder, fsync, rename, fsync of the folder) and
*before* the row that references it is committed: a crash between the two leaves an
unreferenced file (an orphan, harmless), never a row without its file. The ledger never
rewrites or removes a stored result; compaction does not touch :data:`RESULTS_DIR`.

Reading a reference (:func:`resolve`) reads the file, decompresses it and checks its
SHA-256 and length against the reference — which the hash chain binds to the row — so a
missing, truncated or edited file is :class:`~.errors.DamageError` (the ledger is
damaged: one line), never silently another result. A row's text is a reference only if
it parses as an object whose ``format`` is :data:`FORMAT`; every other text is an inline
result, read as before (older ledgers and small results are unchanged).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import itertools
import json
import os
import struct
import tempfile
import uuid
import zlib
from collections.abc import Iterable
from typing import Any

from dprect.release.deflate import crc32, deflater
from dprect.release.files import failure_reason
from dprect.release.ledger.errors import DamageError, LedgerError
from dprect.release.row_spool import RowSpool

#: a result whose JSON text is longer than this many characters is stored as a file and
#: referenced from its ``release`` row (a rectangle or bounds result is a few kB)
INLINE_MAX_CHARS = 65_536
#: the folder of stored results, inside the ledger's folder (Delta and Spark ignore names
#: starting with an underscore)
RESULTS_DIR = "_dprect_results"
RESULTS_SUFFIX = ".json.gz"
#: the marker that tells a reference from an inline result
FORMAT = "dprect stored result 1"
#: the stored files' gzip level: 1, the fastest — a grouped aggregate's record rows
#: compress about 3.9× at 1 and 4.7× at 6, and level 6 took 8.2 us a record row against
#: 2.8 (375-byte rows, load ~10; the largest part of the driver's CPU a released cell of a
#: 10^6-group run after the JSON encoding, issue #42 — now made in the executors for a
#: streamed run's rows: :func:`~dprect.release.row_spool.deflate_piece`). The level changes
#: the file's bytes only: its name, its reference and what it decompresses to (the
#: result's text, checked by its SHA-256) are the same at every level, and a file stored
#: at another level reads the same
LEVEL = 1
#: a top-level entry of a stored result is copied into the reference's summary when its
#: JSON is at most this long
SUMMARY_ITEM_CHARS = 512


def results_folder(root: str) -> str:
    return os.path.join(root, RESULTS_DIR)


def check_writable(root: str) -> None:
    """Refuse (:class:`LedgerError`, from the path only) a ledger whose results folder
    cannot be written: called before a reservation, so a run never spends budget it
    could not record a large result under."""
    folder = results_folder(root)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=folder)
        os.close(fd)
        os.remove(probe)
    except OSError as exc:
        raise LedgerError(f"cannot write the budget ledger's results folder {folder} "
                          f"({failure_reason(exc)}); nothing was charged") from None


def _summary(result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
    summary: dict[str, Any] = {}
    sizes: dict[str, int] = {}
    for key, value in result.items():
        if isinstance(value, RowSpool) or (isinstance(value, list | dict)
                                           and len(value) > SUMMARY_ITEM_CHARS):
            sizes[key] = len(value)  # its JSON has more characters than items: not
            continue  # serialised again (10^5 groups' rows: seconds, issue #42)
        if len(json.dumps(value)) <= SUMMARY_ITEM_CHARS:
            summary[key] = value
        elif isinstance(value, list | dict):
            sizes[key] = len(value)
    return summary, sizes


def _fsync_folder(folder: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class _GzipPieces:
    """One gzip member (RFC 1952: no name, time 0, :data:`LEVEL`) written to ``fh`` from
    pieces of text, each deflated here — or, a spooled block's items' text
    (:class:`~dprect.release.row_spool.ItemsText`), written as the DEFLATE piece its block
    was packed with where it was drawn (:func:`~dprect.release.row_spool.deflate_piece`:
    no reference before it, ended byte-aligned), after a full flush of this side's
    stream (so nothing after refers to what came before it). The file decompresses to the
    pieces' text whoever deflated them; its bytes are not promised (module notes)."""

    def __init__(self, fh: Any) -> None:
        self.fh = fh
        fh.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00"  # gzip, deflate, no flags, time 0
                 + (b"\x04" if LEVEL == 1 else b"\x02" if LEVEL == 9 else b"\x00")
                 + b"\xff")  # XFL as gzip's own writer sets it; OS unknown
        self.packer = deflater(LEVEL)
        #: the text's CRC-32 and its length in bytes so far (the reference's ``bytes``)
        self.crc, self.size = 0, 0

    def write(self, data: bytes, deflated: bytes | None = None) -> None:
        """``data``, deflated here, or given as its DEFLATE piece (``deflated``)."""
        self.crc = crc32(data, self.crc)
        self.size += len(data)
        if deflated is None:
            self.fh.write(self.packer.compress(data))
            return
        self.fh.write(self.packer.flush(zlib.Z_FULL_FLUSH))
        self.fh.write(deflated)

    def close(self) -> None:
        """The stream's final block and the member's trailer (CRC-32, length mod 2^32)."""
        self.fh.write(self.packer.flush(zlib.Z_FINISH))
        self.fh.write(struct.pack("<II", self.crc, self.size & 0xFFFFFFFF))


def store(root: str, text: str | Iterable[str], result: dict[str, Any] | None = None
          ) -> str:
    """The text a ``release`` row records for a result whose JSON is ``text`` (``result``:
    that result, if the caller holds it, else ``text`` is parsed for the summary):
    ``text`` itself up to :data:`INLINE_MAX_CHARS` characters, else a reference to the
    file it is written to (put if absent, atomically, before the caller commits the
    row). ``text`` may come in pieces (a record of spooled rows, issue #42): past
    :data:`INLINE_MAX_CHARS` characters they are compressed and hashed on the way to the
    file, never joined in memory; the choice and the file are the same as for the
    joined text."""
    pieces = iter([text] if isinstance(text, str) else text)
    head: list[str] = []
    size = 0
    for piece in pieces:
        head.append(piece)
        size += len(piece)
        if size > INLINE_MAX_CHARS:
            break
    else:
        return "".join(head)
    folder = results_folder(root)
    try:
        os.makedirs(folder, exist_ok=True)
        part = os.path.join(folder, f".part-{uuid.uuid4().hex}")
        try:
            sha = hashlib.sha256()
            with open(part, "wb") as fh:
                gz = _GzipPieces(fh)
                for piece in itertools.chain(head, pieces):
                    data = piece.encode("utf-8")
                    sha.update(data)
                    gz.write(data, getattr(piece, "deflated", None)
                             if getattr(piece, "level", None) == LEVEL else None)
                gz.close()
                fh.flush()
                os.fsync(fh.fileno())
            del head
            digest, length = sha.hexdigest(), gz.size
            relative = f"{RESULTS_DIR}/{digest}{RESULTS_SUFFIX}"
            where = os.path.join(root, relative)
            if not os.path.exists(where):  # the same result stored before: the same file
                os.replace(part, where)
        finally:
            with contextlib.suppress(OSError):
                os.remove(part)
        _fsync_folder(folder)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise LedgerError(f"cannot write the released result to the budget ledger's "
                          f"results folder {folder} ({reason}); nothing was released"
                          ) from None
    if result is None:
        assert isinstance(text, str), "a result in pieces comes with its record"
        result = json.loads(text)
    summary, sizes = _summary(result)
    return json.dumps({"stored": relative, "sha256": digest, "bytes": length,
                       "format": FORMAT, "summary": summary, "sizes": sizes})


def reference(text: str) -> dict[str, Any] | None:
    """The reference ``text`` holds, or None when it is an inline result."""
    if not text.startswith('{"stored": '):  # inline results are never parsed twice
        return None
    try:
        ref = json.loads(text)
    except ValueError:
        return None
    if not isinstance(ref, dict) or ref.get("format") != FORMAT:
        return None
    return ref


def _checked_path(ref: dict[str, Any]) -> str:
    relative, digest = ref.get("stored"), ref.get("sha256")
    if not isinstance(relative, str) or not isinstance(digest, str) or \
            relative != f"{RESULTS_DIR}/{digest}{RESULTS_SUFFIX}":
        raise DamageError("a release row's stored-result reference is malformed")
    return relative


def check(root: str, text: str) -> None:
    """Check the stored file a reference ``text`` names (nothing for an inline result)
    without holding the result in memory: it is read in chunks, decompressed and hashed
    (:class:`DamageError` as :func:`resolve` raises it). ``dprect budget verify``."""
    ref = reference(text)
    if ref is None:
        return
    relative = _checked_path(ref)
    sha, size = hashlib.sha256(), 0
    try:
        with gzip.open(os.path.join(root, relative), "rb") as fh:
            while chunk := fh.read(1 << 20):
                sha.update(chunk)
                size += len(chunk)
    except FileNotFoundError:
        raise DamageError(f"the stored result {relative} is missing") from None
    except (OSError, EOFError, zlib.error):
        raise DamageError(f"the stored result {relative} cannot be read (truncated or "
                          f"edited)") from None
    if size != ref.get("bytes") or sha.hexdigest() != ref["sha256"]:
        raise DamageError(f"the stored result {relative} is not the one its release row "
                          f"names (edited?)")


def resolve(root: str, text: str) -> dict[str, Any]:
    """The result a ``release`` row's ``text`` records: the inline JSON, or the stored
    file a reference names, checked against the reference's SHA-256 and length
    (:class:`DamageError` if it is missing or is not that result)."""
    ref = reference(text)
    if ref is None:
        result: dict[str, Any] = json.loads(text)
        return result
    relative, digest = _checked_path(ref), ref["sha256"]
    try:
        with open(os.path.join(root, relative), "rb") as fh:
            packed = fh.read()
    except OSError:
        raise DamageError(f"the stored result {relative} is missing") from None
    try:
        data = gzip.decompress(packed)
    except (OSError, EOFError, zlib.error):
        raise DamageError(f"the stored result {relative} cannot be read (truncated or "
                          f"edited)") from None
    if len(data) != ref.get("bytes") or hashlib.sha256(data).hexdigest() != digest:
        raise DamageError(f"the stored result {relative} is not the one its release row "
                          f"names (edited?)")
    try:
        stored: dict[str, Any] = json.loads(data.decode("utf-8"))
    except ValueError:
        raise DamageError(f"the stored result {relative} cannot be read") from None
    return stored
