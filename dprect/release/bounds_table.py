"""The bounds table (``--table``): one row per (group, column) — group, column, lower,
upper — as a CSV file or a Delta table, rendered from the released record only
(:func:`dprect.release.bounds_record.table_rows`).

The writers take a :class:`TableLayout` (the table's columns and how its rows are read
from a record), so every product's table of one row per (group, column) is written by the
same code: the describe table (:mod:`dprect.release.describe_table`) is another layout."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dprect.core.errors import ParameterError
from dprect.core.statistic import COVERAGE, outputs
from dprect.release.bounds_record import table_rows
from dprect.release.files import check_output_path
from dprect.release.sinks import Release, Sink, Write, file_write

Rows = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class TableLayout:
    """A table of one row per (group, column): its columns in order with their kind
    (``text``, ``float`` or ``bool``; None is an empty CSV cell and a Delta null), the rows read
    from a released record, and its name in messages."""

    columns: tuple[tuple[str, str], ...]
    rows: Callable[[Mapping[str, Any]], list[dict[str, Any]]]
    noun: str

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)


#: the bounds table (``--table``): one row per (group, column)
BOUNDS_LAYOUT = TableLayout((("group", "text"), ("column", "text"),
                             *((key, "float") for key in outputs(COVERAGE))),
                            table_rows, "bounds table")
#: the columns of the bounds table
TABLE_COLUMNS = BOUNDS_LAYOUT.names


def _cell(value: Any, kind: str) -> str:
    """A CSV cell: empty for None, a float as Python writes it (``repr``: exact round
    trip, ``inf``/``-inf``), a flag as ``true``/``false``, text as it is."""
    if value is None:
        return ""
    if kind == "bool":
        return "true" if value else "false"
    return repr(float(value)) if kind == "float" else str(value)


def _csv_text(rows: Rows, layout: TableLayout) -> str:
    """The table as CSV: a header, then one row per (group, column); an ungrouped run's
    group is empty."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(layout.names)
    for row in rows:
        writer.writerow([_cell(row[name], kind) for name, kind in layout.columns])
    return buf.getvalue()


@dataclass(frozen=True)
class CsvTableSink:
    """The table as a CSV file (written atomically; a replay rewrites it with the same
    content)."""

    name: str
    path: str
    layout: TableLayout = BOUNDS_LAYOUT

    def check(self) -> None:
        check_output_path(self.path, self.name)

    def prepare(self, release: Release) -> Write:
        text = _csv_text(self.layout.rows(release.record), self.layout)
        return file_write(self.path, text, f"{self.layout.noun} written to {self.path}")


def _arrow_table(rows: Rows, layout: TableLayout) -> Any:
    import pyarrow as pa

    types = {"text": pa.string(), "float": pa.float64(), "bool": pa.bool_()}
    schema = pa.schema([(name, types[kind]) for name, kind in layout.columns])
    return pa.Table.from_pylist([dict(r) for r in rows], schema=schema)


@dataclass(frozen=True)
class DeltaTableSink:
    """The table as a Delta table (a folder), overwritten by each release in one commit
    (a reader sees the old rows or the new ones); the folder must be absent, empty, or a
    Delta table with the layout's columns."""

    name: str
    path: str
    layout: TableLayout = BOUNDS_LAYOUT

    def check(self) -> None:
        from dprect.core.extras import require

        require("delta", f"the Delta {self.layout.noun}")
        check_output_path(self.path, self.name, folder=True)
        where = Path(self.path)
        if not where.is_dir() or not any(where.iterdir()):
            return
        from deltalake import DeltaTable

        try:
            names = [f.name for f in DeltaTable(self.path).schema().fields]
        except Exception:
            raise ParameterError(f"{self.name} {self.path!r} is a folder that is not empty "
                                 "and holds no Delta table") from None
        if names != list(self.layout.names):
            raise ParameterError(f"{self.name} {self.path!r} is a Delta table with other "
                                 f"columns than the {self.layout.noun}'s "
                                 f"({', '.join(self.layout.names)})")

    def prepare(self, release: Release) -> Write:
        data = _arrow_table(self.layout.rows(release.record), self.layout)

        def write() -> str:
            from deltalake import write_deltalake

            Path(self.path).mkdir(parents=True, exist_ok=True)
            write_deltalake(self.path, data, mode="overwrite")
            return f"{self.layout.noun} written to {self.path} (Delta)"

        return Write(write)


def table_sink(name: str, path: str, layout: TableLayout = BOUNDS_LAYOUT) -> Sink:
    """``--table``: CSV for a path ending in ``.csv``, else a Delta table (a folder)."""
    if path.lower().endswith(".csv"):
        return CsvTableSink(name, path, layout)
    return DeltaTableSink(name, path, layout)


__all__ = ["BOUNDS_LAYOUT", "TABLE_COLUMNS", "CsvTableSink", "DeltaTableSink", "TableLayout",
           "table_sink"]
