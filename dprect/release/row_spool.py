"""A released record's rows kept on disk in blocks, not in the driver's memory (issue #42).

A grouped aggregate drawn in the executors hands its released rows to the driver a block
of groups at a time (:mod:`dprect.engines.spark.executor_draws`), each block already made
into what every output reads (:func:`pack_block`, by
:class:`~dprect.release.block_pack.BlockPacker` in the task that drew it): its record
rows' JSON items as the record's long list writes them
(:func:`~dprect.release.record_text.item_lines`) and its table rows as one Arrow record
batch (:func:`~dprect.release.aggregate_record.table_block`). The driver appends those
bytes to a temporary file as they come (:meth:`RowSpool.append`: nothing encoded,
compressed or made a cell on the driver), and the record holds the spool where it held
the list of rows. Every reader then walks the blocks: the JSON output and the ledger's
stored copy lay the record's text out around the items' texts
(:meth:`RowSpool.item_texts`), the table and the summary read the batches
(:meth:`RowSpool.table_batches`), and a reader of the rows themselves gets each block's
items parsed (:meth:`RowSpool.blocks`: the rows are JSON values, so the same rows) — the
driver holds one block at once, never the run's. The spool holds released values only
(post-processing, no privacy cost); its file is removed when the spool is closed or
collected, and at the latest when the process ends.

A block is its 48-byte :data:`HEADER`, its items' text compressed by LZ4 (:data:`CODEC`,
Arrow's LZ4 frame codec at its level 1: pyarrow is a core dependency), its batch as an
Arrow IPC stream with LZ4-compressed buffers and, when a ledger will store the record,
its text's DEFLATE piece (:func:`deflate_piece`: the stored copy's gzip writes it as it
is, so the driver deflates none of the rows): a 10^6-group run's spool in ``TMPDIR`` is
about half the JSON output's size (~150 bytes a 320-byte record row with its table row,
~70 more for the DEFLATE piece; zstd level 1, the codec before s39-pack, took ~85 for
the two, at about 1.6× LZ4's CPU to compress in the tasks and 2.2× to decompress on the
driver, which reads the text twice — the larger blocks cost the JVM that carries them
to the driver ~3 CPU-s at 8·10^6 cells: docs/results.md §5.3c); read back, every output is
byte for byte what the same rows in a list give (tests/spark/test_streamed_sinks.py,
tests/release/test_row_spool.py).

:func:`row_blocks` reads the rows of a record either way: an in-memory list (a run drawn
on the driver, a replayed record) in slices of :data:`BLOCK_ROWS` rows, or a spool's
blocks as they were drawn."""

from __future__ import annotations

import contextlib
import json
import os
import struct
import tempfile
import weakref
import zlib
from collections.abc import Iterator, Sequence
from typing import IO, Any

import pyarrow as pa

from dprect.core.errors import ParameterError
from dprect.release.deflate import deflater

#: an in-memory list of rows is read in slices of this many rows (:func:`row_blocks`)
BLOCK_ROWS = 4096
#: each spooled block's codec and level (module notes): the text's and the IPC
#: buffers' (Arrow's ``"lz4"``: the LZ4 frame format, in both)
CODEC, LEVEL = "lz4", 1
#: a spooled block's header: its rows, the size of its JSON items' text and its compressed
#: size, the size of its table rows' Arrow IPC stream (0: none), the size of its text's
#: deflate piece (0: none) (bytes), that piece's level (-1: none)
HEADER = struct.Struct("<QQQQQq")


def _codec() -> pa.Codec:
    return pa.Codec(CODEC, compression_level=LEVEL)


def _remove(handle: IO[bytes], path: str) -> None:
    with contextlib.suppress(OSError):
        handle.close()
    with contextlib.suppress(OSError):
        os.remove(path)


class ItemsText(str):
    """A spooled block's items' text with, where its block was packed with one, its
    DEFLATE piece (:attr:`deflated`: :func:`deflate_piece` at :attr:`level`), which the
    ledger's stored copy writes as it is (:func:`~dprect.release.ledger.stored.store`)."""

    deflated: bytes | None = None
    level: int | None = None


def deflate_piece(data: bytes, level: int) -> bytes:
    """``data`` as a piece of a DEFLATE stream that any piece may precede or follow: a raw
    stream at ``level`` (a zlib level, as ``gzip`` takes it) with no reference to anything
    before it, ended by a sync flush (byte-aligned, not final): pieces made apart — in
    several tasks — joined make one stream (the ``pigz`` layout), which the stored copy
    ends (:func:`~dprect.release.ledger.stored.store`). Deflated by
    :func:`~dprect.release.deflate.deflater` (ISA-L's where installed: the same text
    inflated, other compressed bytes)."""
    packer = deflater(level)
    return packer.compress(data) + packer.flush(zlib.Z_SYNC_FLUSH)


def pack_block(rows: int, text: str | bytes, table: pa.RecordBatch | None = None,
               deflate: int | None = None) -> bytes:
    """One block as the spool keeps it (module notes), made where the block is drawn (an
    executor's task, :class:`~dprect.release.block_pack.BlockPacker`): the :data:`HEADER`
    (its ``rows``, the text's size and compressed size, the table's size), its JSON items'
    ``text`` (:func:`~dprect.release.record_text.item_lines`: one compact item a line,
    ASCII; or those bytes, ASCII-encoded: other bytes refused) compressed, and its table
    rows as one Arrow record batch in an IPC stream (its buffers compressed; ``table``
    None: none); with ``deflate`` (a gzip level: a ledger's stored copy will hold the
    text), the text's :func:`deflate_piece` too."""
    codec = _codec()
    raw = text if isinstance(text, bytes) else text.encode("ascii")
    if not raw.isascii():
        raise ValueError("a block's items' text is not ASCII")
    packed = codec.compress(raw, asbytes=True) if raw else b""
    ipc = b""
    if table is not None:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema,
                               options=pa.ipc.IpcWriteOptions(compression=CODEC)) as out:
            out.write_batch(table)
        ipc = sink.getvalue().to_pybytes()
    piece = deflate_piece(raw, deflate) if deflate is not None and raw else b""
    level = deflate if piece else -1
    return b"".join((HEADER.pack(rows, len(raw), len(packed), len(ipc), len(piece), level),
                     packed, ipc, piece))


class RowSpool:
    """Released rows appended a block at a time to a temporary file (module notes); its
    length is the number of rows, its iteration the rows in the order appended."""

    def __init__(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="dprect-rows-", suffix=".blocks")
        self._file = os.fdopen(fd, "w+b")
        self._rows = 0
        self._blocks = 0
        #: whether every block came with its table rows (:meth:`table_batches`)
        self._tables = True
        self._finalizer = weakref.finalize(self, _remove, self._file, self.path)

    def append(self, block: bytes) -> None:
        """Add one block after the others: :func:`pack_block`'s bytes, as they are (made
        where the block was drawn; the driver neither encodes nor compresses them)."""
        rows, _, packed, ipc, piece, _ = HEADER.unpack_from(block)
        if len(block) != HEADER.size + packed + ipc + piece:
            raise ValueError("a spooled block is not pack_block's bytes")
        self._file.write(block)
        self._rows += rows
        self._blocks += 1
        self._tables = self._tables and (ipc > 0 or not rows)

    def __len__(self) -> int:
        return self._rows

    @property
    def block_count(self) -> int:
        """How many blocks were appended."""
        return self._blocks

    def blocks(self) -> Iterator[list[dict[str, Any]]]:
        """The record rows, one appended block at a time (one block in memory at once):
        its JSON items parsed (the rows are JSON values: the same rows, key for key)."""
        for text in self.item_texts():
            yield json.loads("[" + text + "]")

    def item_texts(self) -> Iterator[ItemsText]:
        """Each block's JSON items' text (as :func:`~dprect.release.record_text.item_lines`
        lays out a record's list: one compact item a line), one block at a time, with its
        DEFLATE piece where it was packed with one (:class:`ItemsText`)."""
        codec = _codec()
        for size, text, _, piece, level in self._read(tables=False, pieces=True):
            out = ItemsText(codec.decompress(text, decompressed_size=size, asbytes=True)
                            .decode("ascii") if size else "")
            if piece:
                out.deflated, out.level = piece, level
            yield out

    def table_batches(self) -> Iterator[pa.RecordBatch | None] | None:
        """Each block's table rows as its Arrow record batch (None for a block without
        rows), one block at a time; None unless every block with rows came with them."""
        if not self._tables:
            return None
        return (pa.ipc.open_stream(ipc).read_next_batch() if ipc else None
                for _, _, ipc, _, _ in self._read(text=False))

    def _read(self, text: bool = True, tables: bool = True, pieces: bool = False
              ) -> Iterator[tuple[int, bytes, bytes, bytes, int | None]]:
        """Each block's (text size, compressed text, table IPC bytes, deflate piece, its
        level): the parts not asked for skipped (empty)."""
        self._file.flush()
        with open(self.path, "rb") as fh:
            for _ in range(self._blocks):
                _, size, packed, ipc, piece, level = HEADER.unpack(fh.read(HEADER.size))
                parts = []
                for length, wanted in ((packed, text), (ipc, tables), (piece, pieces)):
                    if wanted:
                        parts.append(fh.read(length))
                    else:
                        fh.seek(length, os.SEEK_CUR)
                        parts.append(b"")
                yield size, parts[0], parts[1], parts[2], level

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for block in self.blocks():
            yield from block

    def close(self) -> None:
        """Remove the file (the spool is empty and unreadable after)."""
        self._finalizer()


def check_spool_folder() -> None:
    """Refuse, before anything is read or reserved, a run whose temporary folder
    (:func:`tempfile.gettempdir`: ``TMPDIR``, else ``/tmp``, ...) cannot take a file: a
    grouped run's :class:`RowSpool` is made there once the budget is reserved (and a Delta
    ``--table``'s rows are staged there), so a folder found unusable only then would leave
    the run charged with nothing released. The check makes and removes a file named as the
    spool's; its message is the folder and the operating system's reason."""
    from dprect.release.files import failure_reason

    folder = tempfile.tempdir or os.environ.get("TMPDIR") or "the system's"
    try:
        folder = tempfile.gettempdir()
        fd, path = tempfile.mkstemp(prefix="dprect-rows-", suffix=".blocks")
    except OSError as exc:
        raise ParameterError(f"the temporary folder {folder!r} cannot take a file "
                             f"({failure_reason(exc)}): a grouped run spools its released "
                             "rows there; set TMPDIR to a writable folder (nothing was read "
                             "or charged)") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.remove(path)


def row_blocks(rows: Sequence[dict[str, Any]] | RowSpool) -> Iterator[list[dict[str, Any]]]:
    """The rows of a record a block at a time: a spool's blocks, or slices of a list of
    :data:`BLOCK_ROWS` rows."""
    if isinstance(rows, RowSpool):
        yield from rows.blocks()
        return
    for start in range(0, len(rows), BLOCK_ROWS):
        yield list(rows[start:start + BLOCK_ROWS])


__all__ = ["BLOCK_ROWS", "CODEC", "HEADER", "LEVEL", "ItemsText", "RowSpool",
           "check_spool_folder", "deflate_piece", "pack_block", "row_blocks"]
