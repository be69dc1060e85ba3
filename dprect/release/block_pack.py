"""A streamed block of released cells as the driver keeps it, made where the block is
drawn (issue #42).

A grouped aggregate drawn in the executors (:mod:`dprect.engines.spark.executor_draws`)
hands the driver a block of groups at a time; every output of the release is made from
each block's record rows (:func:`~dprect.release.aggregate_record.record_rows`): the JSON
items of the record's long list (:func:`~dprect.release.record_text.item_lines`: the JSON
output and the ledger's stored copy) and the table rows
(:func:`~dprect.release.aggregate_record.table_block`: the Parquet, CSV or Delta table and
the summary). Made on the driver, that was one thread's work a released cell — most of
it the text of 11 floats a row — while the executors waited (docs/results.md §5.3c).
:class:`BlockPacker` makes both in the task that drew the block, by the same functions, so
the bytes are the same wherever they are made — a block whose cells came as arrays
(:class:`~dprect.core.column_release.ColumnRows`) a field at a time, with no dict a row
(:class:`~dprect.release.aggregate_record.BlockFields`: the same text and batch as its
rows give, by the same definitions), any other from its rows: the text compressed and
the table rows as one Arrow record batch (:func:`~dprect.release.row_spool.pack_block`),
which the driver appends to the record's spool as they come
(:meth:`~dprect.release.row_spool.RowSpool.append`) and the sinks read back: no Python
object a cell on the driver.

A packer is a small frozen value (pickled into the executors' tasks by reference: its
module is imported there); it reads released values and the public plan only
(post-processing, no privacy cost)."""

from __future__ import annotations

from dataclasses import dataclass

from dprect.core.aggregates import DescribeResult
from dprect.core.quantile_release import QuantileResult
from dprect.release.aggregate_record import (
    SHAPES,
    block_fields,
    record_plan,
    record_rows,
    table_block,
)
from dprect.release.record_text import item_lines
from dprect.release.row_spool import pack_block


@dataclass(frozen=True)
class BlockPacker:
    """A block's result (its groups' released cells: a
    :class:`~dprect.core.aggregates.DescribeResult` or a
    :class:`~dprect.core.quantile_release.QuantileResult` of the block's groups) as the
    spool keeps it (module notes), for a run of the mechanism named ``method``;
    ``deflate``: the ledger's gzip level when a ledger will store the record (the text's
    DEFLATE piece made here too, :func:`~dprect.release.row_spool.deflate_piece`), else
    None."""

    method: str
    deflate: int | None = None

    def __call__(self, result: DescribeResult | QuantileResult) -> bytes:
        shape, plan = SHAPES[self.method], record_plan(result)
        fields = block_fields(result)
        if fields is not None:  # cells as arrays: made a field at a time, no dict a row
            return pack_block(len(fields), fields.item_bytes(),
                              fields.table(shape, plan).batch, self.deflate)
        rows = record_rows(result)
        return pack_block(len(rows), item_lines(rows), table_block(rows, shape, plan).batch,
                          self.deflate)


__all__ = ["BlockPacker"]
