"""The bounds table (``--table``): one row per (group, column) — group, column, lower,
upper — as a CSV file or a Delta table, rendered from the released record only
(:func:`dprect.release.bounds_record.table_rows`)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dprect.core.errors import ParameterError
from dprect.release.bounds_record import table_rows
from dprect.release.files import check_output_path, write_atomic
from dprect.release.sinks import Release, Sink, Write

#: the columns of the bounds table (``--table``): one row per (group, column)
TABLE_COLUMNS = ("group", "column", "lower", "upper")


def _csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The bounds table as CSV: a header, then one row per (group, column); an ungrouped
    run's group is empty; bounds as Python writes floats (``repr``: exact round trip)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(TABLE_COLUMNS)
    for row in rows:
        writer.writerow(["" if row["group"] is None else row["group"], row["column"],
                         repr(row["lower"]), repr(row["upper"])])
    return buf.getvalue()


@dataclass(frozen=True)
class CsvTableSink:
    """The bounds table as a CSV file (written atomically; a replay rewrites it with the
    same content)."""

    name: str
    path: str

    def check(self) -> None:
        check_output_path(self.path, self.name)

    def prepare(self, release: Release) -> Write:
        text = _csv_text(table_rows(release.record))

        def write() -> str:
            write_atomic(self.path, text)
            return f"bounds table written to {self.path}"

        return write


def _arrow_table(rows: Sequence[Mapping[str, Any]]) -> Any:
    import pyarrow as pa

    schema = pa.schema([("group", pa.string()), ("column", pa.string()),
                        ("lower", pa.float64()), ("upper", pa.float64())])
    return pa.Table.from_pylist([dict(r) for r in rows], schema=schema)


@dataclass(frozen=True)
class DeltaTableSink:
    """The bounds table as a Delta table (a folder), overwritten by each release in one
    commit (a reader sees the old rows or the new ones); the folder must be absent,
    empty, or a Delta table with the bounds table's columns."""

    name: str
    path: str

    def check(self) -> None:
        from dprect.core.extras import require

        require("delta", "the Delta bounds table")
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
        if names != list(TABLE_COLUMNS):
            raise ParameterError(f"{self.name} {self.path!r} is a Delta table with other "
                                 f"columns than the bounds table's ({', '.join(TABLE_COLUMNS)})")

    def prepare(self, release: Release) -> Write:
        data = _arrow_table(table_rows(release.record))

        def write() -> str:
            from deltalake import write_deltalake

            Path(self.path).mkdir(parents=True, exist_ok=True)
            write_deltalake(self.path, data, mode="overwrite")
            return f"bounds table written to {self.path} (Delta)"

        return write


def table_sink(name: str, path: str) -> Sink:
    """``--table``: CSV for a path ending in ``.csv``, else a Delta table (a folder)."""
    if path.lower().endswith(".csv"):
        return CsvTableSink(name, path)
    return DeltaTableSink(name, path)


__all__ = ["TABLE_COLUMNS", "CsvTableSink", "DeltaTableSink", "table_sink"]
