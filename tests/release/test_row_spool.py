"""The row spool (dprect/release/row_spool.py): a streamed run's released rows on disk, a
block at a time, each as it was packed where it was drawn (its JSON items' text and its
table batch, compressed: ``pack_block``) — read back as the same rows, texts and batches,
the file a fraction of the rows' pickle (issue #42: the spool went to TMPDIR at about the
JSON output's size)."""

from __future__ import annotations

import os
import pickle
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from dprect.release.record_text import item_lines, record_chunks, record_text
from dprect.release.row_spool import HEADER, RowSpool, pack_block, row_blocks


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


def _packed(rows: list[dict[str, Any]], table: bool = True) -> bytes:
    """A block as a task packs it: its items' text and (``table``) a batch of its rows."""
    batch = pa.RecordBatch.from_pylist(rows) if table and rows else None
    return pack_block(len(rows), item_lines(rows), batch)


#: a block of record rows with the values a JSON record holds at its edges: −0.0, a
#: bound at ±inf as text, None, an integer past int64, a subnormal, text with newlines,
#: quotes and non-ASCII characters, a nested value
ODD = [{"group": "a\nb\u00e9\"", "column": "c\td", "sum": -0.0, "mean": None,
        "upper": "inf", "count": 2**70, "lower": -1e-310, "nested": {"k": [1, None, "x\ny"]}}]


def test_the_spool_reads_back_every_block_as_appended() -> None:
    """Every block comes back equal, in order (the values' types and bits too: −0.0, a
    subnormal, integers past int64), as rows (its items parsed), as its items' text and
    as its batch; its length is the rows', its blocks the appends'."""
    blocks = [_rows(0, 1000, 1), ODD, [], _rows(1000, 7, 2)]
    spool = RowSpool()
    try:
        for i, block in enumerate(blocks):
            spool.append(_packed(block, table=i != 1))
        assert len(spool) == 1008 and spool.block_count == 4
        want = [pickle.dumps(b) for b in blocks]  # −0.0, subnormals: bit for bit
        for _ in range(2):  # each reader walks the blocks again
            assert [pickle.dumps(b) for b in spool.blocks()] == want
        assert [pickle.dumps(b) for b in row_blocks(spool)] == want
        assert list(spool)[:3] == blocks[0][:3]
        assert list(spool.item_texts()) == [item_lines(b) for b in blocks]
        assert spool.table_batches() is None  # a block with rows came without its batch
    finally:
        spool.close()
    assert not os.path.exists(spool.path)
    batched = RowSpool()
    try:
        for block in (blocks[0], [], blocks[3]):
            batched.append(_packed(block))
        batches = batched.table_batches()
        assert batches is not None
        got = list(batches)
        assert got[1] is None and [b.to_pylist() for b in (got[0], got[2])] == \
            [blocks[0], blocks[3]]
    finally:
        batched.close()


def test_a_block_is_taken_as_packed_and_nothing_else() -> None:
    """The driver appends a packed block's bytes as they are; bytes that are not one
    packed block (cut short, or two blocks) are refused before anything is written."""
    block = _packed(_rows(0, 10, 1))
    spool = RowSpool()
    try:
        for bad in (block[:-1], block + block):
            with pytest.raises(ValueError, match="pack_block"):
                spool.append(bad)
        spool.append(block)
        spool._file.flush()
        assert spool.block_count == 1 and os.path.getsize(spool.path) == len(block)
    finally:
        spool.close()


def test_a_block_text_as_bytes_packs_as_its_text_and_must_be_ascii() -> None:
    """pack_block takes the items' text as ASCII bytes too (the packer's, made in Arrow):
    the same block as from the text; bytes that are not ASCII refused, as a text that is
    not is (issue #42)."""
    text = item_lines(_rows(0, 10, 1))
    for deflate in (None, 1):
        assert pack_block(10, text.encode("ascii"), None, deflate) == \
            pack_block(10, text, None, deflate)
    with pytest.raises(ValueError, match="ASCII"):
        pack_block(1, '{"group": "\u00e9"}'.encode())
    with pytest.raises(UnicodeEncodeError):
        pack_block(1, '{"group": "\u00e9"}')


def test_the_spool_on_disk_is_a_fraction_of_the_rows_pickle() -> None:
    """Describe's rows, 8 blocks of 4,096: the spool's file — each block its header, its
    compressed text and its batch — is under two thirds of the bare pickles' bytes (the
    bare pickle, before, was all of it; LZ4 since s39-pack, ~0.58 here, zstd's under
    half), the text under a fifth of its size."""
    spool = RowSpool()
    try:
        blocks = [_rows(4096 * b, 4096, b) for b in range(8)]
        for block in blocks:
            spool.append(_packed(block))
        spool._file.flush()
        bare = sum(len(pickle.dumps(b, protocol=pickle.HIGHEST_PROTOCOL)) for b in blocks)
        on_disk = os.path.getsize(spool.path)
        assert on_disk < bare * 2 / 3, (on_disk, bare)
        with open(spool.path, "rb") as fh:
            rows, text, packed, table, _, _ = HEADER.unpack(fh.read(HEADER.size))
        assert rows == 4096 and text == len(item_lines(blocks[0]))
        assert packed < text / 5 and table > 0
    finally:
        spool.close()


def test_items_text_made_where_blocks_are_drawn_lays_out_the_same_record_text() -> None:
    """A streamed run's blocks come with their items' JSON text, laid out as the record's
    list writes them, and the record's text (the JSON output, the ledger's copy) is laid
    out around it: the same text, byte for byte, as the in-memory record's — odd values
    and an empty block included; each item on a line of its own."""
    blocks = [_rows(0, 700, 1), ODD, [], _rows(700, 400, 2)]
    head = {"method": "m", "privacy": {"epsilon": 1.0}}
    want = record_text({**head, "results": [r for b in blocks for r in b]})
    spool = RowSpool()
    try:
        for block in blocks:
            spool.append(_packed(block, table=block is not ODD))  # text only: no batch
        assert "\n" not in item_lines(ODD)  # one item a line
        assert "".join(record_chunks({**head, "results": spool})) == want
        assert "".join(record_chunks({"a": {"b": 1}, "results": spool, "z": [1]})) == \
            record_text({"a": {"b": 1}, "results": [r for b in blocks for r in b],
                         "z": [1]})
    finally:
        spool.close()
