"""The grouped-aggregate table (``--table``): one row per (group, column) — the group, the
column, then the outputs of the run's mechanism's statistics
(:func:`dprect.core.statistic.outputs`: lower, upper for the coverage bounds; lower,
upper, count, sum, mean for the query mechanism, empty for a statistic not asked for) and
its record's flags (``below_row_need``) — as a CSV file, a Parquet file or a Delta table
(never partitioned: one row group or file holds many groups), rendered from
the released record only (:func:`dprect.release.aggregate_record.table_rows`).

The writers take a :class:`TableLayout` (the table's columns and how its rows are read
from a record); every mechanism's layout is generated from its record shape
(:func:`layout`), so a statistic added to the registry adds its columns here with no
edit."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dprect.core.errors import ParameterError
from dprect.core.statistic import COVERAGE, Mechanism
from dprect.release.aggregate_record import SHAPES, mixed_columns, mixed_method, table_rows
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


def layout(mechanism: Mechanism, statistics: Sequence[str] = ()) -> TableLayout:
    """The table of ``mechanism``'s runs asking for ``statistics`` (an ``on_ask``
    statistic's columns only when asked), from its record shape: group and column as
    text, its flags as booleans, every output float64; named after its method."""
    shape = SHAPES[mechanism.name]
    return TableLayout(tuple((key, "text" if key in ("group", "column") else
                              "bool" if key in shape.flags else "float")
                             for key in shape.table_columns(statistics)),
                       table_rows, f"{mechanism.name} table")


def mixed_layout(mechanisms: Sequence[Mechanism], statistics: Sequence[str] = ()
                 ) -> TableLayout:
    """The table of a run of several ``mechanisms`` asking for ``statistics``
    (docs/privacy.md §11b): group and column, then each mechanism's columns in turn
    (:func:`~dprect.release.aggregate_record.mixed_columns`), kinds as :func:`layout`'s;
    named after the run's method."""
    names = [m.name for m in mechanisms]
    flags = {f for m in names for f in SHAPES[m].flags}
    return TableLayout(tuple((key, "text" if key in ("group", "column") else
                              "bool" if key in flags else "float")
                             for key in mixed_columns(names, statistics)),
                       table_rows, f"{mixed_method(names)} table")


#: the coverage bounds' table (``dprect bounds --table``)
BOUNDS_LAYOUT = layout(COVERAGE)


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


#: rows per row group of a Parquet table file (a reader filtering on group or column skips
#: whole row groups by their statistics; delta-rs' own default for the Delta table)
ROW_GROUP_ROWS = 1 << 20


@dataclass(frozen=True)
class ParquetTableSink:
    """The table as one Parquet file (written atomically, in row groups of
    :data:`ROW_GROUP_ROWS` rows, never partitioned; a replay rewrites it with the same
    rows)."""

    name: str
    path: str
    layout: TableLayout = BOUNDS_LAYOUT

    def check(self) -> None:
        check_output_path(self.path, self.name)

    def prepare(self, release: Release) -> Write:
        import pyarrow.parquet as pq

        buf = io.BytesIO()
        pq.write_table(_arrow_table(self.layout.rows(release.record), self.layout), buf,
                       row_group_size=ROW_GROUP_ROWS)
        return file_write(self.path, buf.getvalue(),
                          f"{self.layout.noun} written to {self.path} (Parquet)")


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


def table_sink(name: str, path: str, mechanism: Mechanism | Sequence[Mechanism] = COVERAGE,
               statistics: Sequence[str] = ()) -> Sink:
    """``--table`` of a run of ``mechanism`` (or of several: :func:`mixed_layout`) asking
    for ``statistics``: CSV for a path ending in ``.csv``, one Parquet file for
    ``.parquet``, else a Delta table (a folder)."""
    if isinstance(mechanism, Mechanism):
        the_layout = layout(mechanism, statistics)
    else:
        parts = tuple(mechanism)
        the_layout = layout(parts[0], statistics) if len(parts) == 1 else \
            mixed_layout(parts, statistics)
    if path.lower().endswith(".csv"):
        return CsvTableSink(name, path, the_layout)
    if path.lower().endswith(".parquet"):
        return ParquetTableSink(name, path, the_layout)
    return DeltaTableSink(name, path, the_layout)


__all__ = ["BOUNDS_LAYOUT", "ROW_GROUP_ROWS", "CsvTableSink", "DeltaTableSink",
           "ParquetTableSink", "TableLayout", "layout", "mixed_layout", "table_sink"]
