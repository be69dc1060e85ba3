"""The raw DEFLATE compressor of the stored results' gzip files (issue #42).

A grouped aggregate's stored copy (:mod:`dprect.release.ledger.stored`) is one gzip member
whose DEFLATE stream (RFC 1951) is made in pieces — a streamed run's in the executors'
tasks, a block's items' text at a time (:func:`~dprect.release.row_spool.deflate_piece`),
the text around them on the driver. Any inflater reads any conforming stream, so which
library deflates changes the compressed bytes only: the file decompresses to the same
text, which its reference checks by SHA-256 and length (the stored file's bytes are not
promised: :mod:`~dprect.release.ledger.stored`'s notes), and readers are unchanged.

:func:`deflater` is ISA-L's (the ``isal`` package's ``isal_zlib``, the same interface as
the standard library's ``zlib``) where it is installed — the ``spark`` extra brings it, for
the executors pack the blocks — else ``zlib``'s. ISA-L has levels 0–3 against zlib's
0–9: a zlib ``level`` is taken as ISA-L's ``min(level, 3)``, so the stored copy's level
1 (:data:`~dprect.release.ledger.stored.LEVEL`) is ISA-L's 1, the level whose ratio is
zlib 1's. Measured on a 10^6-group run's block texts (docs/results.md §5.3c, s38-cell42):
ISA-L's level 1 deflates a record row in about a third of zlib 1's CPU at about its
ratio. Released text only (post-processing, no privacy cost).
"""

from __future__ import annotations

import importlib
import zlib
from types import ModuleType
from typing import Any


def _load() -> ModuleType:
    """ISA-L's ``isal_zlib`` where installed, else the standard library's ``zlib``."""
    try:
        return importlib.import_module("isal.isal_zlib")
    except ImportError:  # pragma: no cover - depends on the environment
        return zlib


_library = _load()

#: which library :func:`deflater` uses: ``"isal"`` or ``"zlib"``
LIBRARY = "zlib" if _library is zlib else "isal"
#: the CRC-32 of the gzip trailer (RFC 1952; the same value from either library: ISA-L's
#: about 3.5× faster, 0.02 against 0.07 µs a 300-byte record row)
crc32 = _library.crc32
#: the highest level of :data:`LIBRARY` (a higher zlib level is taken as this one)
TOP_LEVEL = 9 if _library is zlib else 3


def deflater(level: int) -> Any:
    """A raw DEFLATE compressor (no zlib or gzip wrapper, the default window and memory)
    at zlib ``level`` (0–9; ISA-L's ``min(level, 3)``: module notes), with ``compress``
    and ``flush`` as ``zlib``'s compressobj (``zlib.Z_SYNC_FLUSH``, ``Z_FULL_FLUSH`` and
    ``Z_FINISH``: the same values in both libraries)."""
    if not 0 <= level <= 9:
        raise ValueError("a DEFLATE level is 0 to 9")
    return _library.compressobj(min(level, TOP_LEVEL), zlib.DEFLATED, -zlib.MAX_WBITS,
                                zlib.DEF_MEM_LEVEL, 0)


__all__ = ["LIBRARY", "TOP_LEVEL", "crc32", "deflater"]
