"""The stored results' DEFLATE compressor (dprect/release/deflate.py, issue #42): ISA-L's
where installed, else zlib's — either way pieces deflated apart join into one stream that
any inflater reads as the pieces' text, and a stored result made with either library is
the same reference and reads back the same record."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import dprect.release.ledger.stored as stored_module
from dprect.release import deflate as deflate_module
from dprect.release.row_spool import deflate_piece


def _libraries() -> list[ModuleType]:
    found = [zlib]
    try:
        from isal import isal_zlib
    except ImportError:
        return found
    return [*found, isal_zlib]


@pytest.fixture(params=_libraries(), ids=lambda m: m.__name__)
def library(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Each installed library as :func:`deflater`'s."""
    module: ModuleType = request.param
    monkeypatch.setattr(deflate_module, "_library", module)
    monkeypatch.setattr(deflate_module, "TOP_LEVEL", 9 if module is zlib else 3)
    return module


def _texts(seed: int) -> list[bytes]:
    """Record-like ASCII texts of several sizes (empty, one byte, a block's worth)."""
    gen = np.random.default_rng(seed)
    out = [b"", b"x"]
    for n in (10, 1000, 20_000):
        values = gen.normal(0.0, 1e3, n)
        out.append("\n".join(f'{{"group":"g{i}","mean":{v!r}}},' for i, v in
                             enumerate(values)).encode("ascii"))
    return out


def test_pieces_made_apart_join_into_one_stream_of_their_text(library: ModuleType) -> None:
    """Every level 0–9: each text's piece, joined with the others and ended by an empty
    final block, inflates (the standard library's zlib) to the texts joined — pieces of
    one library or of both mixed."""
    texts = _texts(1)
    for level in range(10):
        pieces = [deflate_piece(t, level) for t in texts]
        end = deflate_module.deflater(level).flush(zlib.Z_FINISH)  # an empty final block
        stream = b"".join(pieces) + end
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        assert inflater.decompress(stream) == b"".join(texts)
        assert inflater.eof and not inflater.unused_data
        # a piece of the standard library's between this library's
        mixed = [*pieces[:2], _zlib_piece(texts[2], level), *pieces[3:]]
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        assert inflater.decompress(b"".join(mixed) + end) \
            == b"".join(texts)


def _zlib_piece(data: bytes, level: int) -> bytes:
    packer = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, zlib.DEF_MEM_LEVEL, 0)
    return packer.compress(data) + packer.flush(zlib.Z_SYNC_FLUSH)


def test_the_library_and_its_levels() -> None:
    """ISA-L where importable (its levels 0–3), else zlib; a level outside 0–9 refused."""
    try:
        import isal  # noqa: F401
        assert (deflate_module.LIBRARY, deflate_module.TOP_LEVEL) == ("isal", 3)
    except ImportError:
        assert (deflate_module.LIBRARY, deflate_module.TOP_LEVEL) == ("zlib", 9)
    for level in (-1, 10):
        with pytest.raises(ValueError, match="0 to 9"):
            deflate_module.deflater(level)


def test_a_stored_result_is_the_same_whichever_library_deflates(
        tmp_path: Path, library: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large result stored with this library: the same reference (name, SHA-256,
    length) as with the standard library's zlib, and the file decompresses (``gzip``)
    and resolves to the same record."""
    monkeypatch.setattr(stored_module, "INLINE_MAX_CHARS", 1000)
    rows = [{"group": f"g{i}", "column": "x", "mean": -i / 7} for i in range(3000)]
    result = {"method": "describe", "results": rows}
    text = json.dumps(result)
    ref = stored_module.store(str(tmp_path), text, result)
    (path,) = (tmp_path / stored_module.RESULTS_DIR).glob("*.json.gz")
    assert gzip.decompress(path.read_bytes()) == text.encode()
    assert stored_module.resolve(str(tmp_path), ref) == result
    monkeypatch.setattr(deflate_module, "_library", zlib)
    monkeypatch.setattr(deflate_module, "TOP_LEVEL", 9)
    other = tmp_path / "zlib"
    other.mkdir()
    assert stored_module.store(str(other), text, result) == ref
