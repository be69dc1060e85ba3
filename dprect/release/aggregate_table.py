"""The grouped-aggregate table (``--table``): one row per (group, column) — the group, the
column, then the outputs of the run's mechanism's statistics
(:func:`dprect.core.statistic.outputs`: lower, upper for the coverage bounds; lower,
upper, count, sum, mean for the query mechanism, empty for a statistic not asked for) and
its record's flags (``below_row_need``) — as a CSV file, a Parquet file or a Delta table
(never partitioned: one row group or file holds many groups), rendered from
the released record only, a block of rows at a time
(:func:`dprect.release.aggregate_record.table_blocks`: a record of spooled rows is never
held whole in memory, issue #42), from the one read of the rows every output of the
release shares (:mod:`dprect.release.row_pass`): the file writers are fed a block at a
time (:class:`CsvFeed`, :class:`ParquetFeed`), and a Delta table's rows wait in a
compressed Arrow stream for its commit.

The writers take a :class:`TableLayout` (the table's columns); every mechanism's layout
is generated from its record shape (:func:`layout`), so a statistic added to the
registry adds its columns here with no edit."""

from __future__ import annotations

import csv
import io
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from dprect.core.errors import ParameterError
from dprect.core.statistic import COVERAGE, Mechanism
from dprect.release.aggregate_record import SHAPES, TableBlock, mixed_columns, mixed_method
from dprect.release.delta_output import check_table_properties, committed_or_nothing
from dprect.release.files import check_output_path
from dprect.release.sinks import Feed, Release, Sink, Write, file_write

Rows = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class TableLayout:
    """A table of one row per (group, column): its columns in order with their kind
    (``text``, ``float`` or ``bool``; None is an empty CSV cell and a Delta null) and its
    name in messages. Its rows are the record's table rows
    (:func:`~dprect.release.aggregate_record.table_blocks`), read once for every output
    (:attr:`~dprect.release.sinks.Release.rows`)."""

    columns: tuple[tuple[str, str], ...]
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
                       f"{mechanism.name} table")


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
                       f"{mixed_method(names)} table")


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


def _cells(row: Mapping[str, Any], columns: tuple[tuple[str, str], ...]) -> list[Any]:
    """A row's CSV cells (:func:`_cell`), where the csv writer already writes a value so
    — None as an empty cell, a float as its ``repr``, a str as it is — passing it on (the
    rows of 10^5 groups: issue #42)."""
    return [value if value is None or (kind != "bool" and type(value) is (
                float if kind == "float" else str)) else _cell(value, kind)
            for value, kind in ((row[name], kind) for name, kind in columns)]


class CsvFeed:
    """The table as CSV into ``fh``, fed a block of rows at a time (a :class:`Feed`): a
    header, then one row per (group, column); an ungrouped run's group is empty."""

    def __init__(self, layout: TableLayout, fh: BinaryIO) -> None:
        self.columns = layout.columns
        self.text = io.TextIOWrapper(fh, encoding="utf-8", newline="", write_through=True)
        self.writer = csv.writer(self.text, lineterminator="\n")
        self.writer.writerow(layout.names)

    def __call__(self, rows: Rows) -> None:
        self.writer.writerows(_cells(row, self.columns) for row in rows)

    def close(self) -> None:
        self.text.flush()
        self.text.detach()  # the staging file is closed by its owner


#: rows per row group of a Parquet table file (a reader filtering on group or column skips
#: whole row groups by their statistics; delta-rs' own default for the Delta table)
ROW_GROUP_ROWS = 1 << 20


def _plain_type(t: Any) -> Any:
    """An Arrow type as the table's writer reads it (delta-rs reads a text column back as
    ``large_string`` or ``string_view``: the same column as a ``string``)."""
    import pyarrow as pa

    return pa.string() if t in (pa.large_string(), pa.string_view()) else t


def arrow_schema(layout: TableLayout) -> Any:
    """The table's Arrow schema: text as strings, floats as float64, flags as booleans."""
    import pyarrow as pa

    types = {"text": pa.string(), "float": pa.float64(), "bool": pa.bool_()}
    return pa.schema([(name, types[kind]) for name, kind in layout.columns])


def _batch(rows: Rows, schema: Any) -> Any:
    """A block of rows as one Arrow record batch of the table's ``schema``: a spooled
    block's own batch (:class:`~dprect.release.aggregate_record.TableBlock`, made where it
    was drawn), else made from the rows (a row that is a dict as it is: copying each made
    the batch about four times as long, issue #42)."""
    import pyarrow as pa

    if isinstance(rows, TableBlock) and rows.batch.schema.equals(schema):
        return rows.batch
    return pa.RecordBatch.from_pylist([r if type(r) is dict else dict(r) for r in rows],
                                      schema=schema)


class ParquetFeed:
    """The table as one Parquet file into ``fh``, fed a block of rows at a time (a
    :class:`Feed`): the rows gathered into row groups of :data:`ROW_GROUP_ROWS` rows (as
    one ``write_table`` of every row cuts them), one row group in memory at a time."""

    def __init__(self, layout: TableLayout, fh: BinaryIO) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.schema = arrow_schema(layout)
        self.writer = pq.ParquetWriter(fh, self.schema)
        self.held = pa.Table.from_batches([], schema=self.schema)

    def __call__(self, rows: Rows) -> None:
        import pyarrow as pa

        if not rows:
            return
        batch = pa.Table.from_batches([_batch(rows, self.schema)])
        self.held = pa.concat_tables([self.held, batch])
        while self.held.num_rows >= ROW_GROUP_ROWS:
            self.writer.write_table(self.held.slice(0, ROW_GROUP_ROWS),
                                    row_group_size=ROW_GROUP_ROWS)
            self.held = self.held.slice(ROW_GROUP_ROWS)

    def close(self) -> None:
        if self.held.num_rows:
            self.writer.write_table(self.held, row_group_size=ROW_GROUP_ROWS)
        self.writer.close()


class _ArrowFeed:
    """The table's Arrow record batches, one per non-empty block of rows, into a
    zstd-compressed Arrow stream (a Delta table's rows held for its commit)."""

    def __init__(self, layout: TableLayout, fh: BinaryIO) -> None:
        import pyarrow as pa

        self.schema = arrow_schema(layout)
        self.writer = pa.ipc.new_stream(fh, self.schema,
                                        options=pa.ipc.IpcWriteOptions(compression="zstd"))

    def __call__(self, rows: Rows) -> None:
        if rows:
            self.writer.write_batch(_batch(rows, self.schema))

    def close(self) -> None:
        self.writer.close()


@dataclass(frozen=True)
class FileTableSink:
    """The table as one file, written atomically a block of rows at a time (a replay
    rewrites it with the same rows): CSV (:class:`CsvFeed`) or Parquet
    (:class:`ParquetFeed`, in row groups of :data:`ROW_GROUP_ROWS` rows, never
    partitioned), named by ``kind`` in its line."""

    name: str
    path: str
    layout: TableLayout = BOUNDS_LAYOUT
    kind: str = "CSV"

    def check(self) -> None:
        check_output_path(self.path, self.name)

    def prepare(self, release: Release) -> Write:
        layout, feed = self.layout, FILE_FEEDS[self.kind]
        suffix = "" if self.kind == "CSV" else f" ({self.kind})"
        return file_write(self.path, None, f"{layout.noun} written to {self.path}{suffix}",
                          release.rows, lambda fh: feed(layout, fh))


#: how a :class:`FileTableSink` of each kind writes its file
FILE_FEEDS: dict[str, Callable[[TableLayout, BinaryIO], Feed]] = {
    "CSV": CsvFeed, "Parquet": ParquetFeed}


@dataclass(frozen=True)
class DeltaTableSink:
    """The table as a Delta table (a folder), overwritten by each release in one commit
    (a reader sees the old rows or the new ones); the folder must be absent, empty, or a
    Delta table with the layout's columns, each of its type and nullable (a table of the
    same names whose column is NOT NULL, or of another type, is refused before the
    charge: its commit would fail, or cast the floats)."""

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
        import pyarrow as pa
        from deltalake import DeltaTable

        try:
            theirs = pa.schema(DeltaTable(self.path).schema().to_arrow())
        except Exception:
            raise ParameterError(f"{self.name} {self.path!r} is a folder that is not empty "
                                 "and holds no Delta table") from None
        if theirs.names != list(self.layout.names):
            raise ParameterError(f"{self.name} {self.path!r} is a Delta table with other "
                                 f"columns than the {self.layout.noun}'s "
                                 f"({', '.join(self.layout.names)})")
        ours = arrow_schema(self.layout)
        # the same names are not enough: a column of another type would be cast to it
        # (floats written as text) or refuse the commit, and a NOT NULL column refuses an
        # empty cell — after the charge (a Delta schema is public, never a row)
        other = next((f for f, o in zip(theirs, ours, strict=True)
                      if _plain_type(f.type) != o.type or not f.nullable), None)
        if other is not None:
            raise ParameterError(
                f"{self.name} {self.path!r} is a Delta table whose column {other.name!r} is "
                f"{'NOT NULL ' if not other.nullable else ''}{_plain_type(other.type)}, "
                f"not the {self.layout.noun}'s nullable "
                f"{ours.field(other.name).type}; choose another path")
        check_table_properties(self.path, self.name, overwrite=True)

    def prepare(self, release: Release) -> Write:
        """The rows from the record's one read go to a compressed Arrow stream in a
        temporary file (``write_deltalake`` pulls its batches in its own commit, after
        that read), which the commit reads back a batch at a time and removes."""
        layout = self.layout
        held: list[tuple[str, BinaryIO, Feed]] = []

        def begin() -> None:
            fd, tmp = tempfile.mkstemp(prefix="dprect-delta-", suffix=".arrows")
            fh = os.fdopen(fd, "wb")
            held.append((tmp, fh, _ArrowFeed(layout, fh)))
            release.rows.add(held[-1][2])

        def write() -> str:
            import pyarrow as pa
            from deltalake import write_deltalake

            tmp, fh, feed = held[-1]
            feed.close()
            fh.close()
            # a failed first commit leaves no folder of files (delta_output)
            with committed_or_nothing(self.path), pa.OSFile(tmp, "rb") as source:
                Path(self.path).mkdir(parents=True, exist_ok=True)
                write_deltalake(self.path, pa.ipc.open_stream(source),  # a batch at a time
                                mode="overwrite")
            discard()
            return f"{self.layout.noun} written to {self.path} (Delta)"

        def discard() -> None:
            while held:
                tmp, fh, _ = held.pop()
                fh.close()
                Path(tmp).unlink(missing_ok=True)

        return Write(write, discard=discard, begin=begin, rows=release.rows)


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
        return FileTableSink(name, path, the_layout, "CSV")
    if path.lower().endswith(".parquet"):
        return FileTableSink(name, path, the_layout, "Parquet")
    return DeltaTableSink(name, path, the_layout)


__all__ = ["BOUNDS_LAYOUT", "FILE_FEEDS", "ROW_GROUP_ROWS", "CsvFeed", "DeltaTableSink",
           "FileTableSink", "ParquetFeed", "TableLayout", "arrow_schema", "layout",
           "mixed_layout",
           "table_sink"]
