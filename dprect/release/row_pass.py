"""One read of a released record's table rows for every reader of a publication (issue #42).

A grouped aggregate's summary (:func:`~dprect.release.aggregate_record.overview_lines`),
its plot (:func:`~dprect.release.aggregate_plot.column_items`) and its tables
(:mod:`dprect.release.aggregate_table`) each read the record's rows — a record drawn in
the executors holds them spooled on disk (:mod:`dprect.release.row_spool`), where every
read decompresses and unpickles every block and makes its table rows again. A
publication reads them once: each reader is added to the record's :class:`RowPass`
(:attr:`dprect.release.sinks.Release.rows`) before it runs, and :meth:`RowPass.run` hands
each block of :func:`~dprect.release.aggregate_record.table_blocks` to every reader in the
order they were added, one block in memory at a time. A reader must not change a block
(the next reader gets the same rows)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dprect.release.aggregate_record import table_blocks

#: a reader of the pass: called with each block of table rows in record order
Reader = Callable[[Sequence[dict[str, Any]]], None]


class RowPass:
    """The one read of ``record``'s table rows (module notes): :meth:`add` readers, then
    :meth:`run`; a pass with no reader reads nothing."""

    def __init__(self, record: Mapping[str, Any]) -> None:
        self.record = record
        self._readers: list[Reader] = []

    def add(self, reader: Reader) -> None:
        """Hand every block of the next :meth:`run` to ``reader``."""
        self._readers.append(reader)

    def run(self) -> None:
        """Read the rows once, every block to every reader added since the last run (none
        added: nothing is read)."""
        readers, self._readers = self._readers, []
        if not readers:
            return
        for block in table_blocks(self.record):
            for reader in readers:
                reader(block)


__all__ = ["Reader", "RowPass"]
