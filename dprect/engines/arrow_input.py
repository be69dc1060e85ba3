"""Reading tables for the in-memory engine: Parquet (a file or a directory of files) and
CSV through pyarrow. Only the named columns are read; errors name the file and the column,
never a value."""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from dprect.core.errors import InputDataError
from dprect.engines import row_kernels
from dprect.engines.file_schemas import (
    FirstFooter,
    check_folder,
    check_types,
    csv_header,
    footer_schema,
    format_by_name,
    holds_delta_log,
    parquet_dataset,
    spark_type_name,
)
from dprect.engines.input_errors import (
    EXPECTED,
    blank_csv,
    csv_empty,
    csv_without_rows,
    missing_columns,
    not_label_kind,
    not_numeric,
    reading,
    unreadable_input,
)

FORMATS = ("parquet", "csv")
#: how a CSV cell is read, as Spark's CSV reader reads it: only an empty cell is null
#: (pyarrow's default also reads ``NA``, ``null``, ``N/A``, ``NaN`` ... as null, where Spark
#: reads a word, so a column holding one was numeric here and text on Spark); ``NaN`` is
#: then read as the number NaN, as Spark reads it. An empty cell of a text column is null
#: too, quoted (``""``) or not, as Spark reads it (pyarrow's default keeps "" there: a group
#: or class of the empty text that numpy released and Spark dropped as a null)
CSV_CELLS = pcsv.ConvertOptions(null_values=[""], strings_can_be_null=True)
#: how a CSV file's rows are read, as the Spark engine reads them (its ``multiLine``
#: reading, :func:`dprect.engines.spark.source.read_source`): a quoted field may hold a
#: line end, which is part of its value (pyarrow's default may split such a value where
#: it cuts a large file into blocks); an empty line is skipped; any other row must have as
#: many fields as the header, else the file is refused (:data:`EXPECTED`)
CSV_ROWS = pcsv.ParseOptions(newlines_in_values=True)


#: the numpy engine's refusal of a Delta table (it reads Parquet and CSV only)
DELTA_NEEDS_SPARK = "Delta input needs the Spark engine (--engine spark)"


def detect_format(path: str | os.PathLike[str]) -> str:
    """``delta`` for a folder holding ``_delta_log``, ``csv`` for *.csv / *.csv.gz (a
    trailing ``/`` aside), ``parquet`` otherwise (files or dataset folders): the rule of
    :func:`dprect.engines.file_schemas.format_by_name`, the Spark engine's too."""
    return format_by_name(os.fspath(path), holds_delta_log(path))


def read_table(path: str | os.PathLike[str], columns: list[str], fmt: str | None = None
               ) -> pa.Table:
    """Read ``columns`` of a Parquet or CSV table; errors name the file, the format and
    the column, never a value (:func:`dprect.engines.input_errors.reading`: pyarrow's own
    text, which quotes rows and cells, is never shown). The files of a Parquet folder must
    agree on the columns read (:func:`dprect.engines.file_schemas.check_folder`, from their
    footers), and no column read may be of a type the Spark engine reads otherwise
    (:func:`dprect.engines.file_schemas.check_types`: a duration, a float16, ...), else the
    input is refused before a row is read."""
    p = Path(path)
    if not p.exists():
        raise InputDataError(f"input {str(path)!r} does not exist")
    fmt = fmt or detect_format(p)
    if fmt == "delta":  # its folder's Parquet files include those its log removed
        raise InputDataError(f"input {str(path)!r} is a Delta table (it holds a _delta_log "
                             f"folder): {DELTA_NEEDS_SPARK}")
    if fmt not in FORMATS:
        raise InputDataError(f"unknown input format {fmt!r}; use one of {FORMATS}")
    # a single file read as Parquet by default (its name does not end in .csv) may be a
    # CSV file under another name: the refusal says how to read it as one
    said = (f"{EXPECTED['parquet']}; a CSV file needs --format csv"
            if fmt == "parquet" and not p.is_dir() else None)
    with reading(path, fmt, (pa.ArrowException, OSError, ValueError), columns=columns,
                 problem=lambda _exc: said):
        if fmt == "csv":
            if p.is_dir():
                raise InputDataError(f"input {str(path)!r} is a folder: the numpy engine "
                                     "reads one CSV file (a folder of CSV files needs "
                                     "the Spark engine)")
            if blank_csv(p):  # pyarrow calls it malformed: say what Spark's engine says
                raise csv_empty(path)
            csv_header(p)  # a name given to two fields is refused from the header
            try:
                table = pcsv.read_csv(p, parse_options=CSV_ROWS, convert_options=CSV_CELLS)
            except OSError:  # pyarrow's error for a folder has no class or number of its own
                if not p.is_file():  # gone or replaced since its header was read
                    raise unreadable_input(path, fmt) from None
                raise
            _check_csv_typed(table, str(path))
            table = _csv_types_as_spark(table)
        else:
            first = check_folder(path, p, fmt, columns)
            if first is None and p.is_file():  # its footer, read once: a column named
                first = (p, footer_schema(p))  # twice refused before pyarrow's dataset
            if first is not None:
                check_types(path, first[1], columns)
            dataset = parquet_dataset(p)
            check_types(path, dataset.schema, columns)
            missing = [c for c in columns if c not in dataset.schema.names]
            if missing:
                raise missing_columns(path, missing, dataset.schema.names)
            table = _parquet_types_as_spark(dataset.to_table(columns=columns),
                                            _first_footer(dataset, first))
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise missing_columns(path, missing, table.column_names)
    return table.select(columns)


def _first_footer(dataset: Any, first: FirstFooter | None) -> Any:
    """The :func:`~dprect.engines.file_schemas.footer_schema` of ``dataset``'s first
    file: the one :func:`~dprect.engines.file_schemas.check_folder` read (``first``) when
    it is that file, so its footer is not read twice; None for a dataset of no file."""
    if not dataset.files:
        return None
    file = Path(dataset.files[0])
    same = first is not None and first[0].resolve() == file.resolve()
    return first[1] if first is not None and same else footer_schema(file)


def _check_csv_typed(table: pa.Table, path: str) -> None:
    """Refuse a CSV file whose columns have no type because it has no rows (the Spark
    engine's rule, :func:`dprect.engines.spark.source._check_csv_rows`, so both engines agree).

    CSV types are inferred from the rows: a header-only file gives every column the null
    type. Typed inputs (Parquet) keep their schema, and an empty typed table fits like
    any other."""
    if not table.column_names:
        raise csv_empty(path)
    if table.num_rows == 0:
        raise csv_without_rows(path, table.column_names)


def _csv_types_as_spark(table: pa.Table) -> pa.Table:
    """A CSV table's column types as Spark's CSV reader infers them, where pyarrow's
    differ. A column with no values (every cell empty) as text (all nulls): pyarrow infers
    the null type, which a feature reads as all nulls and a label as all negatives, where
    Spark's engine refuses a text feature. A timestamp without a zone as a timestamp in
    UTC: Spark infers ``timestamp`` (in the session's zone), pyarrow one without a zone
    (``timestamp_ntz`` to :func:`spark_type_name`), so a refusal named two types (no
    column of either type is read: features, labels and groups refuse both). A column
    holding bytes that are not UTF-8 as text, each bad sequence one U+FFFD
    (:func:`spark_text`), as Spark decodes the file: pyarrow types such a column binary,
    which a group or label column refused (a refusal made by a row's bytes) and a feature
    refused naming another type than Spark's ``string``."""
    for i, field in enumerate(table.schema):
        if pa.types.is_null(field.type):
            table = table.set_column(i, field.name, pa.nulls(table.num_rows, pa.string()))
        elif pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type):
            table = table.set_column(i, field.name, pa.array(
                spark_text(table.column(i)), pa.string()))
        elif pa.types.is_timestamp(field.type) and field.type.tz is None:
            table = table.set_column(i, field.name, table.column(i).cast(
                pa.timestamp(field.type.unit, tz="UTC")))
    return table


def _parquet_types_as_spark(table: pa.Table, footer: pa.Schema | None) -> pa.Table:
    """A Parquet table's column types as Spark's Parquet reader reads them, where Arrow's
    differ: a column of Arrow's null type (stored as INT32 with the Null annotation) as
    int32 holding nulls — Spark reads it as int, so a label or group column of it is
    numeric on both engines (a word as the positive label or a group value is refused
    alike), where Arrow's null type took any; a legacy INT96 timestamp as one in UTC, as
    ``footer`` (:func:`~dprect.engines.file_schemas.footer_schema`, one file's) types it
    (a refusal names it ``timestamp`` on both engines, not ``timestamp_ntz``)."""
    for i, field in enumerate(table.schema):
        if pa.types.is_null(field.type):
            table = table.set_column(i, field.name, pa.nulls(table.num_rows, pa.int32()))
        elif (footer is not None and field.name in footer.names
              and pa.types.is_timestamp(field.type)
              and footer.field(field.name).type.tz is not None and field.type.tz is None):
            table = table.set_column(i, field.name, table.column(i).cast(
                footer.field(field.name).type))
    return table


def numeric_column(table: pa.Table, name: str, *, nulls_as_nan: bool = False) -> np.ndarray:
    """A column as float64; a non-numeric type is an error naming the column. Nulls are an
    error too, unless ``nulls_as_nan`` (then they become NaN, for a row policy to handle).
    A column of the null type (no values, e.g. a header-only CSV) is all nulls."""
    col = table.column(name)
    if pa.types.is_null(col.type):
        if len(col) and not nulls_as_nan:
            raise InputDataError(f"column {name!r} has null values")
        return np.full(len(col), np.nan)
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)
            or pa.types.is_decimal(col.type) or pa.types.is_boolean(col.type)):
        raise not_numeric(name, spark_type_name(col.type))
    if col.null_count and not nulls_as_nan:
        raise InputDataError(f"column {name!r} has null values")
    # safe=False: an integer beyond ±2^53 is rounded to the nearest double (as Spark's
    # CAST AS DOUBLE does), not refused — a refusal would depend on a row's value
    out = pc.cast(col, pa.float64(), safe=False)
    if col.null_count:
        out = pc.fill_null(out, float("nan"))
    return out.to_numpy(zero_copy_only=False)


def label_kind(table: pa.Table, name: str) -> str:
    """What label column ``name`` can hold, from its type only (see
    :data:`dprect.core.labels.LABEL_KINDS`): numeric, boolean, string, or null (a column of the
    null type). Any other type is refused, naming the column and its type."""
    return value_kind(table.schema.field(name).type, name, "label")


def value_kind(data_type: pa.DataType, name: str, role: str) -> str:
    """The kind of values (numeric, boolean, string, null) an Arrow type holds, for a
    column used as ``role`` (label, group); another type is refused, naming the column."""
    t = data_type.value_type if pa.types.is_dictionary(data_type) else data_type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "numeric"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_null(t):
        return "null"
    raise not_label_kind(role, name, spark_type_name(t))


#: the error handler (:func:`codecs.register_error`) that decodes bytes as Java's UTF-8
#: decoder does, which Spark's readers use: each sequence that is not UTF-8 one U+FFFD
#: (:func:`_java_replacement`)
JAVA_UTF8 = "dprect.java-utf8"


def _java_replacement(exc: UnicodeError) -> tuple[str, int]:
    """One U+FFFD for the bad sequence where ``exc`` was raised, as long as Java's decoder
    takes it: Python's ``replace`` (the longest start of a sequence, else one byte), but a
    surrogate's three-byte form (``ED A0..BF`` and a continuation byte) is one sequence to
    Java, and three to Python (``ED A0..BF`` without one: two bytes, one sequence)."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    data, start, end = exc.object, exc.start, exc.end
    if data[start] == 0xED and start + 1 < len(data) and 0xA0 <= data[start + 1] <= 0xBF:
        third = start + 2 < len(data) and 0x80 <= data[start + 2] <= 0xBF
        end = start + 3 if third else start + 2
    return "\ufffd", end


codecs.register_error(JAVA_UTF8, _java_replacement)


def spark_text(raw: pa.Array | pa.ChunkedArray) -> list[str | None]:
    """Binary values (or text, as its bytes) as Spark reads them as text: each sequence
    that is not UTF-8 one U+FFFD (:data:`JAVA_UTF8`); nulls as None."""
    if not (pa.types.is_binary(raw.type) or pa.types.is_large_binary(raw.type)):
        raw = pc.cast(pc.cast(raw, pa.large_string()), pa.large_binary())
    return [None if v is None else v.decode("utf-8", JAVA_UTF8) for v in raw.to_pylist()]


def python_values(values: pa.Array) -> list[Any]:
    """An Arrow array's values as Python objects (a key's or a label's distinct values),
    text read as Spark reads a string's bytes: each sequence that is not UTF-8 (a Parquet
    string column can hold such bytes; pyarrow reads them unchecked) one U+FFFD
    (:func:`spark_text`), where ``to_pylist`` raised UnicodeDecodeError once the budget
    was reserved."""
    t = values.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_string_view(t)):
        return values.to_pylist()
    return spark_text(values)


def label_matches(table: pa.Table, name: str, value: bool | float | str | None
                  ) -> np.ndarray:
    """True for the rows whose label equals ``value`` — a value made comparable with the
    column by :func:`dprect.core.labels.resolve_positive_label` (None: no row); nulls and every
    other value are False. Row-local; never raises for a value. Numbers are compared in
    the column's own type, as the Spark engine compares them: an int ``value`` with a
    column of an integer type exactly (:func:`~dprect.engines.row_kernels.group_index`'s
    rule), others as float64."""
    col = table.column(name)
    if value is None or pa.types.is_null(col.type):
        return np.zeros(len(col), dtype=bool)
    if pa.types.is_dictionary(col.type):
        col = pc.cast(col, col.type.value_type)
    if isinstance(value, bool) and pa.types.is_boolean(col.type):
        hit = pc.equal(col, pa.scalar(value))
    elif isinstance(value, str):
        hit = pc.equal(col, pa.scalar(value, col.type))
    elif isinstance(value, int) and not isinstance(value, bool) \
            and row_kernels.integer_type(col.type):
        return row_kernels.group_index(col.combine_chunks() if isinstance(
            col, pa.ChunkedArray) else col, "numeric", [value]) == 0
    else:
        hit = pc.equal(pc.cast(col, pa.float64(), safe=False),
                       pa.scalar(float(value), pa.float64()))
    return pc.fill_null(hit, False).to_numpy(zero_copy_only=False).astype(bool)
