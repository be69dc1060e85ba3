"""A released record's rows kept on disk in blocks, not in the driver's memory (issue #42).

A grouped aggregate drawn in the executors hands its released rows to the driver a block
of groups at a time (:mod:`dprect.engines.spark.executor_draws`); each block's record rows
are appended here (:meth:`RowSpool.append`, pickled then compressed, to a temporary file)
as they arrive,
and the record holds the spool where it held the list of rows. Every reader — the JSON
output, the ledger's stored copy, the table, the summary — then walks the rows a block at
a time (:meth:`RowSpool.blocks`), so the driver holds one block of rows at once, never the
run's. The spool holds released values only (post-processing, no privacy cost); its file
is removed when the spool is closed or collected, and at the latest when the process ends.

A block is stored as its pickle compressed by zstd at level 1 (:data:`CODEC`, Arrow's
codec: pyarrow is a core dependency), behind a 16-byte header (the pickle's size and the
compressed size): a record's rows repeat their keys and column names in every row, so a
10^6-group run's spool in ``TMPDIR`` is about a tenth of the JSON output's size
(docs/results.md §5.3d), a quarter of the bare pickle's; read back, a block is the same rows, so
every output is byte for byte what it was (tests/spark/test_streamed_sinks.py).

The record's JSON text is encoded ONCE: the ledger's stored copy, written first, keeps the
text it encodes in a second file of the spool (:meth:`RowSpool.keep_text`), and the JSON
output then copies that text (:meth:`RowSpool.kept_text`) instead of encoding the rows
again (:mod:`dprect.release.record_text`). That file is compressed too (a zstd stream,
Arrow's default level, 1): it is the JSON output's text.

:func:`row_blocks` reads the rows of a record either way: an in-memory list (a run drawn
on the driver, a replayed record) in slices of :data:`BLOCK_ROWS` rows, or a spool's
blocks as they were drawn."""

from __future__ import annotations

import codecs
import contextlib
import os
import pickle
import struct
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

import pyarrow as pa

#: an in-memory list of rows is read in slices of this many rows (:func:`row_blocks`)
BLOCK_ROWS = 4096
#: each spooled block's codec and level (module notes)
CODEC, LEVEL = "zstd", 1
#: a spooled block's header: the pickle's size, its compressed size, then the size of the
#: block's JSON items' text and its compressed size (0 and 0: no text) (bytes)
HEADER = struct.Struct("<QQQQ")
#: the kept text is read back in pieces of this many bytes
TEXT_PIECE = 1 << 20


def _codec() -> pa.Codec:
    return pa.Codec(CODEC, compression_level=LEVEL)


def _remove(handle: IO[bytes], paths: list[str]) -> None:
    with contextlib.suppress(OSError):
        handle.close()
    for path in paths:
        with contextlib.suppress(OSError):
            os.remove(path)


class RowSpool:
    """Released rows appended a block at a time to a temporary file (module notes); its
    length is the number of rows, its iteration the rows in the order appended."""

    def __init__(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="dprect-rows-", suffix=".pickle")
        self._file = os.fdopen(fd, "w+b")
        self._rows = 0
        self._blocks = 0
        #: whether every block with rows came with its items' text (:meth:`item_texts`)
        self._texts = True
        self._paths = [self.path]
        #: the record's other entries the kept text was written with (:meth:`keep_text`)
        self._text_of: dict[str, Any] | None = None
        self._finalizer = weakref.finalize(self, _remove, self._file, self._paths)

    def append(self, rows: Sequence[dict[str, Any]], items: str | None = None) -> None:
        """Add one block of rows after the others (pickled, compressed: module notes),
        with, optionally, their JSON text as the record's long list writes its items
        (``items``: each row's compact JSON, one a line; made as the block arrives, so
        the record's text is not encoded after the run: :meth:`item_texts`)."""
        codec = _codec()
        raw = pickle.dumps(list(rows), protocol=pickle.HIGHEST_PROTOCOL)
        packed = codec.compress(raw, asbytes=True)
        text = b"" if items is None else items.encode("ascii")
        packed_text = codec.compress(text, asbytes=True) if text else b""
        self._file.write(HEADER.pack(len(raw), len(packed), len(text), len(packed_text)))
        self._file.write(packed)
        self._file.write(packed_text)
        self._rows += len(rows)
        self._blocks += 1
        self._texts = self._texts and (items is not None or not rows)

    def __len__(self) -> int:
        return self._rows

    @property
    def block_count(self) -> int:
        """How many blocks were appended."""
        return self._blocks

    def blocks(self) -> Iterator[list[dict[str, Any]]]:
        """The rows, one appended block at a time (one block in memory at once)."""
        codec = _codec()
        for size, packed, _, _ in self._read():
            yield pickle.loads(codec.decompress(packed, decompressed_size=size,
                                                asbytes=True))

    def item_texts(self) -> Iterator[str] | None:
        """Each block's JSON items' text as :meth:`append` was given it (one compact item a
        line), one block at a time; None unless every block with rows was given one."""
        if not self._texts:
            return None
        codec = _codec()
        return (codec.decompress(text, decompressed_size=size, asbytes=True).decode("ascii")
                if size else "" for _, _, size, text in self._read(text=True))

    def _read(self, text: bool = False) -> Iterator[tuple[int, bytes, int, bytes]]:
        """Each block's (pickle size, compressed pickle, text size, compressed text):
        the pickle read unless ``text``, the text only if ``text`` (the other skipped)."""
        self._file.flush()
        with open(self.path, "rb") as fh:
            for _ in range(self._blocks):
                size, packed, text_size, packed_text = HEADER.unpack(fh.read(HEADER.size))
                if text:
                    fh.seek(packed, os.SEEK_CUR)
                    yield size, b"", text_size, fh.read(packed_text)
                else:
                    pickled = fh.read(packed)
                    fh.seek(packed_text, os.SEEK_CUR)
                    yield size, pickled, text_size, b""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for block in self.blocks():
            yield from block

    def keep_text(self, head: dict[str, Any], pieces: Iterable[str]) -> Iterator[str]:
        """``pieces`` (the JSON text of the record holding these rows, whose other entries
        are ``head``) passed on, and written to a file of the spool as they go: once all
        are, :meth:`kept_text` gives them again for that record."""
        self._text_of = None
        if len(self._paths) == 1:
            fd, path = tempfile.mkstemp(prefix="dprect-text-", suffix=".json.zst")
            os.close(fd)
            self._paths.append(path)
        with pa.CompressedOutputStream(self._paths[1], CODEC) as fh:  # Arrow's level: 1
            for piece in pieces:
                fh.write(piece.encode("utf-8"))
                yield piece
        self._text_of = dict(head)

    def kept_text(self, head: dict[str, Any]) -> Iterator[str] | None:
        """The text :meth:`keep_text` kept for the record whose other entries are
        ``head``, in pieces; None when none was kept for it."""
        if self._text_of is None or self._text_of != head:
            return None
        return self._read_text(self._paths[1])

    @staticmethod
    def _read_text(path: str) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")()  # a piece may end mid-character
        with pa.CompressedInputStream(path, CODEC) as fh:
            while piece := fh.read(TEXT_PIECE):
                if text := decoder.decode(piece):
                    yield text
        if rest := decoder.decode(b"", final=True):
            yield rest

    def close(self) -> None:
        """Remove the file (the spool is empty and unreadable after)."""
        self._finalizer()


def row_blocks(rows: Sequence[dict[str, Any]] | RowSpool) -> Iterator[list[dict[str, Any]]]:
    """The rows of a record a block at a time: a spool's blocks, or slices of a list of
    :data:`BLOCK_ROWS` rows."""
    if isinstance(rows, RowSpool):
        yield from rows.blocks()
        return
    for start in range(0, len(rows), BLOCK_ROWS):
        yield list(rows[start:start + BLOCK_ROWS])


__all__ = ["BLOCK_ROWS", "CODEC", "HEADER", "LEVEL", "RowSpool", "row_blocks"]
