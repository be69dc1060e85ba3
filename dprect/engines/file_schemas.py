"""Schema agreement of a multi-file input: every data file of a folder must hold each
column a run reads with one type (Parquet) or at one place of its header (CSV).

Both engines read a folder with ONE schema — pyarrow's dataset and Spark's Parquet reader
take it from one file, Spark's CSV reader takes the names from one file's header and
matches the other files' fields by position. A file that disagrees is then read wrongly
in silence: a renamed column comes back null (its rows dropped), a text column is cast to
numbers (and the cast's error quotes a cell), a CSV file with its columns in another order
feeds one column's values to another. So before anything is reserved,
:func:`check_folder` reads the schema of every data file — Parquet footers
(:func:`parquet_footer`) and CSV header rows, never a row — and refuses the input in one
line naming the column and the two types (or places), schema only. Each footer is read
once: the first file's schema as Spark types it is handed on to the engines
(:data:`FirstFooter`), which type their read from it.

Data files are listed as Spark and pyarrow list them: every file under the folder,
recursively, except names starting with ``_`` or ``.`` (``_SUCCESS``, ``_delta_log``,
``.crc`` files, hidden folders). Paths with a scheme (``s3a://``, ``hdfs://``) are not
listed here: the Spark engine reads their footers through its JVM
(:func:`dprect.engines.spark.source.read_source`; docs/operations.md, "Multi-file inputs").
"""

from __future__ import annotations

import csv
import gzip
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dprect.core.errors import InputDataError
from dprect.engines.input_errors import EXPECTED, csv_name_twice, reading

#: one file's schema: its path relative to the folder and, per column, its type's text
FileSchema = tuple[str, Mapping[str, str]]
#: the most header bytes read from a CSV file (a header is a line of column names)
HEADER_BYTES = 1 << 20


#: the folder of a Delta table's log: a table is a Delta table when it holds one
DELTA_LOG = "_delta_log"


def holds_delta_log(folder: str | os.PathLike[str]) -> bool:
    """Whether the local ``folder`` holds a ``_delta_log`` FOLDER — what makes it a Delta
    table, for both engines (:func:`format_by_name`; the Spark engine asks Hadoop the same
    of a remote path) and for the outputs' folder-table check
    (:mod:`dprect.release.sinks`). A ``_delta_log`` that is a file holds no log: the
    folder is not a Delta table, and the ``_delta_log`` file is skipped as every name
    starting with ``_`` is (:func:`data_files`). A link to a folder counts as the folder
    (:meth:`~pathlib.Path.is_dir` follows it)."""
    return (Path(folder) / DELTA_LOG).is_dir()


def format_by_name(name: str, has_delta_log: bool) -> str:
    """The format of an input read without ``--format``, one rule for both engines:
    ``delta`` for a folder holding a ``_delta_log`` folder (``has_delta_log``:
    :func:`holds_delta_log`; a ``_delta_log`` file does not count), else ``csv`` for a
    name ending in ``.csv`` or ``.csv.gz`` (any case; a trailing ``/`` is not part of the
    name, so ``x.csv/`` is a CSV folder), else ``parquet`` (a file or a folder of files).
    Pure: the caller tells whether the ``_delta_log`` folder is there."""
    if has_delta_log:
        return "delta"
    return "csv" if name.lower().rstrip("/").endswith((".csv", ".csv.gz")) else "parquet"


def data_files(folder: Path) -> list[Path]:
    """The data files of ``folder``, sorted: every file below it whose name and folders
    do not start with ``_`` or ``.``."""
    out: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        out.extend(Path(root) / f for f in files if not f.startswith(("_", ".")))
    return sorted(out)


def type_text(data_type: Any) -> str:
    """An Arrow type as the type a reader gives its column: a dictionary by its values,
    large and view strings and binaries as ``string`` and ``binary``."""
    import pyarrow as pa

    t = data_type.value_type if pa.types.is_dictionary(data_type) else data_type
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    return str(t)


#: Spark SQL's names (``simpleString``) of the Arrow types whose name is one word
_SPARK_NAMES = {"bool": "boolean", "int8": "tinyint", "int16": "smallint", "int32": "int",
                "int64": "bigint", "uint8": "smallint", "uint16": "int", "uint32": "bigint",
                "uint64": "decimal(20,0)", "float": "float", "double": "double",
                "null": "void"}


def spark_type_name(data_type: Any) -> str:
    """An Arrow type by the name Spark's engine gives the column it reads from such a
    Parquet column (its ``simpleString``: ``date``, ``timestamp``, ``timestamp_ntz``,
    ``string``, ``array<bigint>``, ``struct<a:bigint>``), so a refusal that names a
    column's type reads the same on both engines. A type Spark has no name for (a time of
    day, a duration) keeps a short Arrow name (``time``, ``duration``)."""
    import pyarrow as pa

    t = data_type.value_type if pa.types.is_dictionary(data_type) else data_type
    types = pa.types
    if str(t) in _SPARK_NAMES:
        return _SPARK_NAMES[str(t)]
    if types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if types.is_string(t) or types.is_large_string(t) or types.is_string_view(t):
        return "string"
    if (types.is_binary(t) or types.is_large_binary(t) or types.is_binary_view(t)
            or types.is_fixed_size_binary(t)):
        return "binary"
    if types.is_date(t):
        return "date"
    if types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if types.is_time(t):
        return "time"
    if types.is_duration(t):
        return "duration"
    if (types.is_list(t) or types.is_large_list(t) or types.is_fixed_size_list(t)
            or types.is_list_view(t) or types.is_large_list_view(t)):
        return f"array<{spark_type_name(t.value_type)}>"
    if types.is_map(t):
        return f"map<{spark_type_name(t.key_type)},{spark_type_name(t.item_type)}>"
    if types.is_struct(t):
        fields = ",".join(f"{f.name}:{spark_type_name(f.type)}" for f in t)
        return f"struct<{fields}>"
    return str(t)


#: the most digits of a decimal Spark holds (its ``DecimalType.MAX_PRECISION``)
SPARK_DECIMAL_DIGITS = 38
#: how the numpy engine's dataset and :func:`footer_schema` read a Parquet footer: a legacy
#: INT96 timestamp (Spark's and Impala's old files, which Spark reads) as microseconds, so
#: that a ``timestamp[ns]`` is only a column stored in nanoseconds (which Spark cannot read)
INT96_UNIT = "us"


def spark_unreadable(data_type: Any) -> str | None:
    """What to store instead, when Spark's Parquet reader cannot read a column of this
    Arrow type (a file holding one fails to open there, used or not): float16, a timestamp
    stored in nanoseconds (pandas' default), a time of day, a decimal of more than
    :data:`SPARK_DECIMAL_DIGITS` digits, or a list, map or struct holding one. None when
    it reads it."""
    import pyarrow as pa

    types = pa.types
    t = data_type.value_type if types.is_dictionary(data_type) else data_type
    if types.is_float16(t):
        return "store it as float32 or double"
    if types.is_timestamp(t) and t.unit == "ns":
        return "store it in microseconds (timestamp[us]), or as a number"
    if types.is_time(t):
        return "store it as a number (such as seconds since midnight)"
    if types.is_decimal(t) and t.precision > SPARK_DECIMAL_DIGITS:
        return (f"store it as a double or a decimal of at most {SPARK_DECIMAL_DIGITS} "
                "digits")
    children = ([t.field(i).type for i in range(t.num_fields)]
                if types.is_nested(t) else [])
    if any(spark_unreadable(c) is not None for c in children):
        return "store it without the types Spark cannot read, or leave it out of the run"
    return None


def unlike_type(data_type: Any) -> str | None:
    """Why the two engines would not read a Parquet column of this Arrow type alike, as a
    refusal's words (None: they do). A duration is stored as int64 with its unit in Arrow's
    schema metadata only, so Spark's reader reads it as bigint, a number without its unit,
    where Arrow's is a duration; a type of :func:`spark_unreadable` Spark reads not at all."""
    import pyarrow as pa

    t = data_type.value_type if pa.types.is_dictionary(data_type) else data_type
    if pa.types.is_duration(t):
        return ("which Spark's Parquet reader reads as bigint, without its unit: store it "
                "as a number (an integer or a double in a unit you name)")
    fix = spark_unreadable(t)
    return None if fix is None else f"which Spark's Parquet reader cannot read: {fix}"


def check_unique(path: str | os.PathLike[str], names: Sequence[str]) -> None:
    """Refuse a Parquet input ``path`` whose footer's column ``names`` give one name to
    more than one column (no reader takes such a file, pyarrow's dataset nor Spark), on
    either engine, in one line naming the column and how many
    (:func:`~dprect.engines.input_errors.repeated_column`). A CSV header's names are
    checked from the header (:func:`check_unique_names`)."""
    from dprect.engines.input_errors import repeated_column

    names = list(names)
    for name in dict.fromkeys(names):
        if (times := names.count(name)) > 1:
            raise repeated_column(path, name, times)


def check_types(path: str | os.PathLike[str], schema: Any, columns: Sequence[str]) -> None:
    """Refuse a Parquet input ``path`` (its Arrow ``schema``, from a footer) that gives
    one name to two columns (:func:`check_unique`), and a run that reads a column of it
    whose type the engines do not read alike (:func:`unlike_type`), on either engine,
    in one line naming the column and its type (Arrow's name: Spark has none for it):
    whatever the column's use (a feature, a column to aggregate, a label, a group column),
    before a row is read. Columns the run does not read may be of any type (the Spark
    engine leaves them out of its read: :func:`readable_schema`)."""
    from dprect.engines.input_errors import type_not_read

    check_unique(path, schema.names)
    for name in columns:
        if name in schema.names:
            data_type = schema.field(name).type
            why = unlike_type(data_type)
            if why is not None:  # Arrow's name, but float16's common one
                raise type_not_read(path, name, str(data_type).replace("halffloat",
                                                                        "float16"), why)


def footer_schema(file: Path) -> Any:
    """The Arrow schema of a Parquet file's footer as Spark types its columns where
    Arrow's reading differs: a legacy INT96 timestamp as a timestamp in UTC, in
    :data:`INT96_UNIT` (Spark reads INT96 as ``timestamp``, Arrow as nanoseconds without
    a zone)."""
    return _spark_footer(_open_footer(file))


def _open_footer(file: Path) -> Any:
    """A Parquet file opened for its footer (read here, once), INT96 in :data:`INT96_UNIT`."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(file, coerce_int96_timestamp_unit=INT96_UNIT)


def _spark_footer(footer: Any) -> Any:
    """:func:`footer_schema` of an opened file (:func:`_open_footer`)."""
    import pyarrow as pa

    legacy = {footer.schema.column(i).path for i in range(len(footer.schema))
              if footer.schema.column(i).physical_type == "INT96"}
    schema = footer.schema_arrow
    return pa.schema([f.with_type(pa.timestamp(INT96_UNIT, tz="UTC")) if f.name in legacy
                      else f for f in schema], metadata=schema.metadata)


def parquet_dataset(local: Path) -> Any:
    """A local Parquet file or folder as the numpy engine reads it: a pyarrow dataset with
    Hive partitions, an INT96 timestamp read in :data:`INT96_UNIT`."""
    import pyarrow.dataset as ds

    return ds.dataset(local, partitioning="hive",
                      format=ds.ParquetFileFormat(coerce_int96_timestamp_unit=INT96_UNIT))


def readable_schema(schema: Any) -> Any:
    """``schema`` without the columns Spark's Parquet reader cannot read
    (:func:`spark_unreadable`); None when it reads every one."""
    import pyarrow as pa

    kept = [f for f in schema if spark_unreadable(f.type) is None]
    return None if len(kept) == len(schema) else pa.schema(kept)


#: what to do about a file of a Parquet folder that is not Parquet (:func:`folder_schemas`)
NOT_IN_FOLDER = ("every data file of a Parquet folder must be Parquet: move this one out "
                 "of the folder, or start its name with _ or . (such files are skipped)")


def parquet_schema(file: Path, fix: str | None = None) -> dict[str, str]:
    """A Parquet file's columns and their types, from its footer only; a file that is not
    Parquet (or is damaged) is refused naming it, then ``fix`` when given."""
    return parquet_footer(file, fix)[0]


def parquet_footer(file: Path, fix: str | None = None) -> tuple[dict[str, str], Any]:
    """:func:`parquet_schema` and :func:`footer_schema` of a Parquet file, from one read
    of its footer. The types of the first are Arrow's default reading of the footer (as
    :func:`pyarrow.parquet.read_schema` gives them: INT96 in nanoseconds), those of the
    second as Spark types the columns."""
    import pyarrow as pa

    said = None if fix is None else f"{EXPECTED['parquet']}; {fix}"
    with reading(file, "parquet", (pa.ArrowException, OSError, ValueError),
                 problem=lambda _exc: said):
        footer = _open_footer(file)
        read = footer.schema.to_arrow_schema()  # Arrow's default reading: INT96 in ns
        spark = _spark_footer(footer)
    return {f.name: type_text(f.type) for f in read}, spark


def _folder_fix(file: Path) -> str:
    """What to do about a file of a Parquet folder that is not Parquet — a README, a CSV
    file beside the Parquet ones (a folder of CSV files: ``--format csv`` on the Spark
    engine)."""
    csv = file.name.lower().endswith((".csv", ".csv.gz"))
    return (f"{NOT_IN_FOLDER}; a folder of CSV files needs --format csv (on the Spark "
            "engine)" if csv else NOT_IN_FOLDER)


def csv_header(file: Path) -> dict[str, str]:
    """A CSV file's header row: each column's place (``header field N``), from the first
    line only (gzip-compressed for ``*.gz``). A header that gives one name to two fields
    is refused (:func:`check_unique_names`), on both engines: every CSV input they read
    from this machine has its header read here first."""
    with reading(file, "csv", (OSError, UnicodeDecodeError, csv.Error, EOFError)):
        opener = gzip.open if file.name.lower().endswith(".gz") else open
        with opener(file, "rb") as f:
            head = f.readline(HEADER_BYTES)
        line = head.decode("utf-8-sig")
        names = next(csv.reader(io.StringIO(line)), [])
    check_unique_names(file, names)
    return {name: f"header field {i + 1}" for i, name in reversed(list(enumerate(names)))}


def check_unique_names(file: Path, names: Sequence[str]) -> None:
    """Refuse a CSV header (``names``, in order) that gives one name to two fields, names
    compared ignoring case as Spark's CSV reader compares them (it renames such columns by
    their place, ``a`` and ``A`` to ``a0`` and ``A2``, where pyarrow keeps both ``a``):
    one line naming the file, the two fields and the name, from the header alone. An
    empty name is no name (Spark calls its field ``_cN``)."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if not name:
            continue
        first = seen.setdefault(name.lower(), i)
        if first != i:
            raise csv_name_twice(file, names[first], name, first + 1, i + 1)


def folder_schemas(folder: Path, fmt: str) -> list[FileSchema]:
    """The schema of every data file of ``folder`` (:func:`data_files`) read as ``fmt``
    (``parquet``: footers; ``csv``: header rows)."""
    return _folder_schemas(folder, fmt)[0]


#: the first data file of a local Parquet folder and its :func:`footer_schema`, handed on
#: by :func:`check_folder` so that the engines do not read that footer again
FirstFooter = tuple[Path, Any]


def _folder_schemas(folder: Path, fmt: str) -> tuple[list[FileSchema], FirstFooter | None]:
    """:func:`folder_schemas`, and for a Parquet folder with a data file its first file's
    :func:`footer_schema` (from the same read of its footer)."""
    files = data_files(folder)
    if fmt != "parquet":
        return [(f.relative_to(folder).as_posix(), csv_header(f)) for f in files], None
    schemas: list[FileSchema] = []
    first: FirstFooter | None = None
    for f in files:
        types, spark = parquet_footer(f, _folder_fix(f))
        if first is None:
            first = (f, spark)
        schemas.append((f.relative_to(folder).as_posix(), types))
    return schemas, first


def _in(kind: str | None, file: str) -> str:
    return f"absent from {file!r}" if kind is None else f"{kind} in {file!r}"


def check_agreement(path: str, schemas: Sequence[FileSchema], columns: Sequence[str]
                    ) -> None:
    """Refuse ``schemas`` (one per file of the input ``path``) when two files disagree on
    a column of ``columns``: one holds it and another does not, or they give it two types
    (places). A column no file holds is left alone (a partition column, or a missing
    column refused later by name). One line naming the column and the two types."""
    for name in columns:
        held = [(file, s.get(name)) for file, s in schemas]
        if all(kind is None for _, kind in held):
            continue
        first_file, first = next((f, k) for f, k in held if k is not None)
        for file, kind in held:
            if kind != first:
                raise InputDataError(
                    f"the files of {path!r} disagree on column {name!r}: it is "
                    f"{_in(first, first_file)} but {_in(kind, file)}; every file of a "
                    "multi-file input must hold the columns read, with one type (in a CSV "
                    "folder, at one place of the header)")


def check_readable(files: Sequence[Path]) -> None:
    """Read the footer of every Parquet data file of ``files`` (a Delta snapshot's, on
    this machine): one that is not Parquet, or is damaged, is refused naming the file,
    before anything is reserved — not after, when the rows are read. Their schemas are not
    compared: a Delta table's log holds its one schema, and a file written before a column
    was added is read with nulls for it, as Delta reads it."""
    for file in files:
        parquet_schema(file)


def check_folder(path: str | os.PathLike[str], local: Path, fmt: str,
                 columns: Sequence[str]) -> FirstFooter | None:
    """:func:`check_agreement` for the input ``path`` when it is a local folder of
    ``fmt`` (``parquet`` or ``csv``) files (``local`` its place on this machine); a single
    file, or another format, is left alone. A folder with no data file is refused as
    such (a wrong path, or a table not written yet), on both engines alike: pyarrow read
    it as a table without columns, Spark as a schema it cannot infer.

    Returns, for a Parquet folder, its first data file and that file's
    :func:`footer_schema` (:data:`FirstFooter`, from the footer read here), so an engine
    that types its read from one footer need not read it again; None otherwise."""
    if fmt in ("parquet", "csv") and local.is_dir():
        schemas, first = _folder_schemas(local, fmt)
        if not schemas:
            raise InputDataError(
                f"input {os.fspath(path)!r} is a folder with no data files (files whose "
                "names start with _ or . are skipped): give the table's file or the "
                "folder that holds its files")
        check_agreement(os.fspath(path), schemas, columns)
        return first
    return None


__all__ = ["DELTA_LOG", "INT96_UNIT", "NOT_IN_FOLDER", "SPARK_DECIMAL_DIGITS", "FileSchema",
           "FirstFooter", "check_agreement", "check_folder", "check_readable", "check_types",
           "check_unique", "check_unique_names",
           "csv_header", "data_files", "folder_schemas", "footer_schema", "format_by_name",
           "holds_delta_log", "parquet_dataset", "parquet_footer", "parquet_schema",
           "readable_schema", "spark_type_name", "spark_unreadable", "type_text",
           "unlike_type"]
