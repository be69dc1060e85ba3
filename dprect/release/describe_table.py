"""The describe table (``--table``): one row per (group, column) — group, column, lower,
upper, count, sum, mean (empty for a statistic not asked for) and the small-group flag
``below_row_need`` (:mod:`dprect.release.describe_record`) — as a CSV file or a Delta
table, rendered from the released record only
(:func:`dprect.release.describe_record.table_rows`) by the bounds table's writers
(:mod:`dprect.release.bounds_table`, another :class:`TableLayout`)."""

from __future__ import annotations

from dprect.release.bounds_table import TableLayout, table_sink
from dprect.release.describe_record import BELOW_ROW_NEED, TABLE_KEYS, table_rows
from dprect.release.sinks import Sink

#: the describe table: group and column as text, the flag as a boolean, the rest float64
DESCRIBE_LAYOUT = TableLayout(
    tuple((key, "text" if key in ("group", "column") else
           "bool" if key == BELOW_ROW_NEED else "float") for key in TABLE_KEYS),
    table_rows, "describe table")


def describe_table_sink(name: str, path: str) -> Sink:
    """``--table``: CSV for a path ending in ``.csv``, else a Delta table (a folder)."""
    return table_sink(name, path, DESCRIBE_LAYOUT)


__all__ = ["DESCRIBE_LAYOUT", "describe_table_sink"]
