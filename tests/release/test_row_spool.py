"""The row spool (dprect/release/row_spool.py): a streamed run's released rows on disk, a
block at a time — read back as appended, each block compressed (zstd level 1), so the
temporary file is a fraction of the rows' pickle (issue #42: the spool went to TMPDIR at
about the JSON output's size)."""

from __future__ import annotations

import math
import os
import pickle
from typing import Any

import numpy as np

from dprect.release.row_spool import HEADER, RowSpool, row_blocks


def _rows(start: int, n: int, seed: int) -> list[dict[str, Any]]:
    """Rows shaped as describe's record rows (a group, a column, released floats: noisy
    values and the public bounds they sit in)."""
    gen = np.random.default_rng(seed)
    noisy = gen.normal(50.0, 10.0, (n, 3))
    return [{"group": f"g{start + i}", "column": "a", "lower": 42.0, "upper": 68.0,
             "count": float(round(noisy[i, 0])), "count_low": 0.0, "count_high": 6.0,
             "sum": float(noisy[i, 1]), "sum_low": 0.0, "sum_high": 1020.0,
             "mean": float(noisy[i, 2]), "mean_low": 42.0, "mean_high": 68.0,
             "below_row_need": bool(i % 3)} for i in range(n)]


def test_the_spool_reads_back_every_block_as_appended() -> None:
    """Every block comes back equal, in order (the values' types and bits too: −0.0, nan,
    inf, None, integers past int64); its length is the rows', its blocks the appends'."""
    odd = [{"group": None, "column": "b", "sum": -0.0, "mean": math.nan, "upper": math.inf,
            "count": 2**70, "lower": -1e-310}]
    blocks = [_rows(0, 1000, 1), odd, [], _rows(1000, 7, 2)]
    spool = RowSpool()
    try:
        for block in blocks:
            spool.append(block)
        assert len(spool) == 1008 and spool.block_count == 4
        want = [pickle.dumps(b) for b in blocks]  # nan, −0.0: bit for bit
        for _ in range(2):  # each reader walks the blocks again
            assert [pickle.dumps(b) for b in spool.blocks()] == want
        assert [pickle.dumps(b) for b in row_blocks(spool)] == want
        assert list(spool)[:3] == blocks[0][:3]
    finally:
        spool.close()
    assert not os.path.exists(spool.path)


def test_the_spool_on_disk_is_a_fraction_of_the_rows_pickle() -> None:
    """Describe's rows, 8 blocks of 4,096: the spool's file is under a third of the bare
    pickles' bytes (measured: about a quarter at level 1; the bare pickle, before, was all
    of it), and each block is its header and its compressed pickle."""
    spool = RowSpool()
    try:
        blocks = [_rows(4096 * b, 4096, b) for b in range(8)]
        for block in blocks:
            spool.append(block)
        spool._file.flush()
        bare = sum(len(pickle.dumps(b, protocol=pickle.HIGHEST_PROTOCOL)) for b in blocks)
        on_disk = os.path.getsize(spool.path)
        assert on_disk < bare / 3, (on_disk, bare)
        with open(spool.path, "rb") as fh:
            first, packed, text, _ = HEADER.unpack(fh.read(HEADER.size))
        assert first == len(pickle.dumps(blocks[0], protocol=pickle.HIGHEST_PROTOCOL))
        assert packed < first / 3 and text == 0  # no items text given
    finally:
        spool.close()


def test_the_kept_text_is_compressed_and_read_back_whole(monkeypatch) -> None:
    """The record's JSON text kept beside the rows (``keep_text``, a ledger run's) is
    stored compressed — under a third of its UTF-8 bytes — and read back as the same text,
    a character cut by the read's pieces included."""
    import json

    from dprect.release import row_spool

    monkeypatch.setattr(row_spool, "TEXT_PIECE", 1001)  # pieces that cut characters
    rows = _rows(0, 3000, 4)
    for row in rows[::7]:
        row["group"] = "grüße-é-" + row["group"]
    text = json.dumps({"results": rows}, indent=2, ensure_ascii=False)
    head = {"method": "describe"}
    spool = RowSpool()
    try:
        pieces = [text[i:i + 4096] for i in range(0, len(text), 4096)]
        assert list(spool.keep_text(head, iter(pieces))) == pieces  # passed on as they go
        kept = spool.kept_text(head)
        assert kept is not None and "".join(kept) == text
        assert spool.kept_text({"method": "other"}) is None
        assert os.path.getsize(spool._paths[1]) < len(text.encode()) / 3
    finally:
        spool.close()


def test_items_text_made_as_blocks_arrive_lays_out_the_same_record_text() -> None:
    """A streamed run spools each block with its items' JSON text, made as the block
    arrives (``item_lines``), and the record's text (the JSON output, the ledger's copy)
    is laid out from it: the same text, byte for byte, as the rows encoded after the run
    and as the in-memory record's — strings with newlines and non-ASCII text, −0.0, huge
    integers and an empty block included; a spool where a block with rows came without
    its text encodes the rows as before."""
    from dprect.release.record_text import item_lines, record_chunks, record_text

    odd = [{"group": "a\nb\u00e9\"", "column": "c\td", "sum": -0.0, "count": 2**70,
            "lower": -1e-310, "nested": {"k": [1, None, "x\ny"]}}]
    blocks = [_rows(0, 700, 1), odd, [], _rows(700, 400, 2)]
    head = {"method": "m", "privacy": {"epsilon": 1.0}}
    want = record_text({**head, "results": [r for b in blocks for r in b]})
    texts, plain, mixed = RowSpool(), RowSpool(), RowSpool()
    try:
        for i, block in enumerate(blocks):
            texts.append(block, item_lines(block))
            plain.append(block)
            mixed.append(block, item_lines(block) if i else None)
        assert "\n" not in item_lines(odd)  # one item a line
        assert texts.item_texts() is not None
        assert plain.item_texts() is None and mixed.item_texts() is None
        for spool in (texts, plain, mixed):
            assert "".join(record_chunks({**head, "results": spool})) == want
            assert [pickle.dumps(b) for b in spool.blocks()] == \
                [pickle.dumps(b) for b in blocks]
    finally:
        for spool in (texts, plain, mixed):
            spool.close()
