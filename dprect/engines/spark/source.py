"""Reading the input table into Spark: Parquet, CSV or Delta.

:func:`read_source` returns a lazy DataFrame; every failure it can see (missing path, not a
Delta table, unreadable file, a bad ``where`` filter, a Delta table the fallback reader
cannot read correctly) is an :class:`~dprect.core.errors.InputDataError` or
:class:`~dprect.core.errors.ParameterError` naming the path and the problem, never a Spark
traceback.

No message carries a value from a row. Spark's own error text can quote one
(``[CAST_INVALID_INPUT] The value '...' cannot be cast``, a file's bytes, a Python
worker's traceback), so :func:`spark_message` keeps Spark's text only for analysis errors
about the schema or the expression (:data:`TEXT_KEPT`) and otherwise names the error
condition, its SQLSTATE, the failing fragment of the expression (literals masked), the
file and a fix. Reading errors are :class:`InputDataError` where they surface: at the
read (a file that is not Parquet), or at the first Spark action, since Spark reads lazily
(callers catch :data:`SPARK_ERRORS` and use :func:`spark_message`).

Delta tables are read natively (``spark.read.format("delta")``) when the session has
Delta (:func:`dprect.engines.spark.session.has_delta`: delta-spark jars loaded and
``spark.sql.extensions`` containing ``DeltaSparkSessionExtension``; sessions from
:func:`~dprect.engines.spark.session.local_session` get it when ``make jars`` has cached
the jars), with time travel through ``versionAsOf`` / ``timestampAsOf`` and partition
filters of ``where`` pruning data files from Delta's log. Otherwise the snapshot is
resolved by ``deltalake`` (delta-rs) and its data files are read by Spark as Parquet, with
the table's own schema and the table root as ``basePath`` so partition columns survive. The
fallback refuses every table it could read wrongly: column mapping, deletion vectors, type
widening or any other reader feature it does not know, data files whose folders do not
spell their partition values, and partition columns of timestamp or binary type.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote, urlparse

from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from dprect.core.errors import InputDataError, ParameterError
from dprect.core.extras import require
from dprect.core.request import Source, check_snapshot
from dprect.engines.file_schemas import (
    DELTA_LOG,
    SPARK_DECIMAL_DIGITS,
    FileSchema,
    FirstFooter,
    check_agreement,
    check_folder,
    check_readable,
    check_types,
    csv_header,
    data_files,
    footer_schema,
    format_by_name,
    holds_delta_log,
    readable_schema,
)
from dprect.engines.input_errors import (
    EXPECTED,
    csv_empty,
    csv_without_rows,
    input_error,
    missing_columns,
    starts_as_parquet,
    unreadable_input,
)
from dprect.engines.spark.remote import is_connect, stop_session

FORMATS = ("parquet", "csv", "delta")
#: how Spark reads a CSV input, as the numpy engine's pyarrow reader does
#: (:data:`dprect.engines.arrow_input.CSV_ROWS`): a header row, types inferred from the
#: rows; ``multiLine``: a record is parsed whole, so a quoted field may hold a line end
#: (line by line, Spark cut such a record into two rows) and a line of spaces is a row
#: (one field), not skipped; ``FAILFAST``: a row with more or fewer fields than the header
#: fails the read (``PERMISSIVE``, Spark's default, filled it with nulls or dropped its
#: extra fields where pyarrow refuses the file). Each file is then read by one task.
CSV_READ: dict[str, Any] = {"header": True, "inferSchema": True, "multiLine": True,
                            "mode": "FAILFAST"}
#: the error conditions of a CSV row Spark cannot parse under ``FAILFAST``
MALFORMED_CSV = ("FAILED_READ_FILE", "MALFORMED_RECORD_IN_PARSING")
#: the error condition of a data file that cannot be opened once listed: Spark names so
#: any ``FileNotFoundException`` of a read (a file removed, replaced by a folder, or not
#: readable by this process), which :func:`read_error` tells by
#: :func:`~dprect.engines.input_errors.unreadable_input`, never as a malformed file
UNOPENED_FILE = ("FAILED_READ_FILE.FILE_NOT_EXIST",)

#: reader features the deltalake fallback reads correctly (they do not change how data
#: files map to rows): timestamps without zone, vacuum-only and checkpoint-format features
FALLBACK_READER_FEATURES = frozenset({"timestampNtz", "vacuumProtocolCheck", "v2Checkpoint"})
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


#: The Spark errors a reading or checking step turns into an :class:`InputDataError`: the
#: converted ones (:class:`PySparkException`) and those pyspark passes on raw
#: (:class:`Py4JJavaError`: a ``SparkException`` such as a file that is not Parquet).
SPARK_ERRORS: tuple[type[BaseException], ...] = (PySparkException, Py4JJavaError)

#: Error conditions whose text :func:`spark_message` keeps (prefixes, matched as a whole
#: condition or its ``.SUBCLASS``), and only on an :class:`AnalysisException`: analysis
#: errors raised before any row is read, naming columns, functions and paths only.
TEXT_KEPT = (
    "UNRESOLVED_COLUMN", "UNRESOLVED_FIELD", "UNRESOLVED_ROUTINE", "AMBIGUOUS_REFERENCE",
    "AMBIGUOUS_COLUMN_OR_FIELD", "PARSE_EMPTY_STATEMENT", "PATH_NOT_FOUND",
)
#: Analysis errors that also print the expression, literals included (Spark prints
#: string literals without their quotes, so they cannot be masked): kept only when the
#: caller vouches that the expression is its own text (``own_expression=True``: a row
#: filter resolved against the schema), since dprect's generated expressions can hold
#: numbers computed from the data. Elsewhere they are named like any other error.
TEXT_KEPT_FOR_OWN_EXPRESSION = ("PARSE_SYNTAX_ERROR", "DATATYPE_MISMATCH", "WRONG_NUM_ARGS")
#: Every other error (casts, arithmetic, ``raise_error``, unreadable files, Python worker
#: failures, ...) runs on rows and can quote one: only its condition is shown.

#: Spark errors about a Parquet column type its reader cannot read (the file is not
#: damaged), met where the input's footer is not read here first (:func:`_declared_schema`:
#: a remote or globbed input)
UNREADABLE_TYPES = ("PARQUET_TYPE_ILLEGAL", "UNSUPPORTED_TIME_TYPE",
                    "DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION")

#: what to do, by condition prefix (the first match wins)
_FIXES = (
    ("CAST_", "a value does not convert to the target type: use try_cast(...) in the "
              "expression to read such values as NULL, or store the column with its type"),
    ("DIVIDE_BY_ZERO", "use try_divide(...) in the expression"),
    ("INTERVAL_DIVIDED_BY_ZERO", "use try_divide(...) in the expression"),
    ("ARITHMETIC_OVERFLOW", "use the try_ form of the operation (try_add, try_multiply, "
                            "...) or a wider type such as DOUBLE"),
    ("BINARY_ARITHMETIC_OVERFLOW", "use the try_ form of the operation or a wider type"),
    ("NUMERIC_VALUE_OUT_OF_RANGE", "use try_cast(...) or a wider type such as DOUBLE"),
    ("INVALID_ARRAY_INDEX", "use try_element_at(...) in the expression"),
    ("CANNOT_PARSE_TIMESTAMP", "use try_to_timestamp(...) in the expression"),
    ("USER_RAISED_EXCEPTION", "raise_error or assert_true in the expression stopped the read"),
    ("FAILED_READ_FILE.FILE_NOT_EXIST", "a data file of the input cannot be opened: it was "
                                        "removed, moved or replaced by a folder after the "
                                        "input was listed, or this process may not read "
                                        "it; check the input's files and run again"),
    ("FAILED_READ_FILE", "a data file of the input cannot be read: check that every file "
                         "is in the format read (parquet, csv or delta) and not damaged"),
    ("PYTHON_", "a Python worker failed; check the Spark Python setup (PYSPARK_PYTHON)"),
)
_DEFAULT_FIX = "check the row filter (where) and the input's column types"
#: what to do when a Spark Connect server stopped answering mid-run (gRPC UNAVAILABLE,
#: after the client's own retries)
_CONNECT_LOST_FIX = ("check that the Spark Connect server runs and is reachable, then run "
                     "again")

_SQL_TOKEN = re.compile(
    r"(?P<ident>`(?:[^`]|``)*`)"
    r"|(?P<string>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<number>(?<![\w.])(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[a-zA-Z]*)")


class SparkErrorInfo(NamedTuple):
    """What may be said of a Spark error: its condition (error class), SQLSTATE, the
    exception's class, the failing fragment of a SQL expression, the file path a read
    failed on, Spark's text when :data:`TEXT_KEPT` allows it (else None), and, for a
    Spark Connect client's error without a condition, its gRPC status (``UNAVAILABLE``:
    the server stopped answering)."""

    condition: str | None
    sql_state: str | None
    kind: str
    fragment: str | None
    path: str | None
    text: str | None
    grpc_status: str | None = None


def _matches(condition: str | None, prefixes: tuple[str, ...]) -> bool:
    return condition is not None and any(
        condition == p or condition.startswith(p + ".") for p in prefixes)


def mask_literals(sql: str) -> str:
    """``sql`` with its string and number literals replaced by ``?`` (quoted names kept)."""
    def repl(m: re.Match[str]) -> str:
        if m.group("ident"):
            return m.group("ident")
        return "'?'" if m.group("string") else "?"
    return _SQL_TOKEN.sub(repl, sql)


def _first_line(text: str) -> str:
    text = str(text).strip()
    for marker in ("\nJVM stacktrace:", "\n\tat ", "\n== SQL", "\n== DataFrame"):
        text = text.split(marker, 1)[0]
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _jvm() -> Any:
    from pyspark import SparkContext

    return SparkContext._jvm


def _java_info(java_exc: Any) -> tuple[str | None, str | None, str, dict, list, str]:
    """Condition, SQLSTATE, class, parameters, query contexts and message of the first
    SparkThrowable in a Java exception's cause chain (or of the exception itself)."""
    from py4j.java_gateway import is_instance_of
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    utils = _jvm().PythonErrorUtils
    top = java_exc
    seen = 0
    while java_exc is not None and seen < 20:
        if is_instance_of(gateway, java_exc, "org.apache.spark.SparkThrowable"):
            condition = utils.getCondition(java_exc)
            if condition:
                contexts = [(q.contextType().toString(), q.fragment())
                            for q in (utils.getQueryContext(java_exc) or [])]
                return (str(condition), utils.getSqlState(java_exc),
                        str(java_exc.getClass().getName()),
                        dict(utils.getMessageParameters(java_exc) or {}), contexts,
                        str(java_exc.getMessage() or ""))
        java_exc = java_exc.getCause()
        seen += 1
    return None, None, str(top.getClass().getName()), {}, [], ""


def spark_error_info(exc: BaseException, *, own_expression: bool = False) -> SparkErrorInfo:
    """The publishable facts of a Spark error (see :class:`SparkErrorInfo`); for
    ``own_expression`` see :data:`TEXT_KEPT_FOR_OWN_EXPRESSION`. Never raises: what
    cannot be asked of a stopped JVM is left out."""
    condition = state = None
    kind = type(exc).__name__
    params: dict = {}
    contexts: list[tuple[str, str]] = []
    message = ""
    grpc_status = None
    try:
        if isinstance(exc, Py4JJavaError) and getattr(exc, "java_exception", None) is not None:
            condition, state, kind, params, contexts, message = _java_info(exc.java_exception)
        elif isinstance(exc, PySparkException):
            condition = exc.getCondition()
            state = exc.getSqlState()
            params = dict(exc.getMessageParameters() or {})
            contexts = [(str(q.contextType().name), q.fragment())
                        for q in exc.getQueryContext()]
            message = str(exc)
            if condition is None and hasattr(exc, "getGrpcStatusCode"):  # Connect's
                grpc_status = str(exc.getGrpcStatusCode().name)
    except Exception:  # a stopped JVM, a broken gateway: say less
        pass
    fragment = None
    for ctype, frag in contexts:
        if frag and "SQL" in str(ctype).upper():
            fragment = _short(" ".join(mask_literals(str(frag)).split()), 200)
            break
    path = None
    if _matches(condition, ("FAILED_READ_FILE",)) and params.get("path"):
        path = str(params["path"])
    text = None
    kept = TEXT_KEPT + (TEXT_KEPT_FOR_OWN_EXPRESSION if own_expression else ())
    if isinstance(exc, AnalysisException) and _matches(condition, kept):
        text = _short(_first_line(message), 500) or None
    return SparkErrorInfo(condition, state, kind, fragment, path, text, grpc_status)


def spark_fix(condition: str | None, grpc_status: str | None = None) -> str:
    """What to do about an error of this condition (a line of advice); a Spark Connect
    server that stopped answering (``grpc_status`` UNAVAILABLE) is not the input's."""
    if grpc_status == "UNAVAILABLE":
        return _CONNECT_LOST_FIX
    for prefix, fix in _FIXES:
        if condition is not None and condition.startswith(prefix):
            return fix
    return _DEFAULT_FIX


def spark_message(exc: BaseException, *, own_expression: bool = False) -> str:
    """One line on a Spark/Py4J error that carries no value from a row.

    Analysis errors of :data:`TEXT_KEPT` keep the first line of Spark's text (an unknown
    column, a missing path); with ``own_expression`` (the caller's own expression text was
    analysed, and nothing else) so do those of :data:`TEXT_KEPT_FOR_OWN_EXPRESSION` (a
    syntax error, a type mismatch in the expression). Any other error is named by its
    condition and SQLSTATE (public; its message parameters are not), with the failing
    fragment of the SQL expression (literals masked), the file a read failed on, and a
    fix — e.g. ``Spark error CAST_INVALID_INPUT (SQLSTATE 22018) in `cast(s as int)`;
    Spark's message is withheld as it can quote values from rows; fix: ...``. Without a
    condition the Java or Python exception class is named instead.
    """
    info = spark_error_info(exc, own_expression=own_expression)
    if info.text:
        return info.text
    return (f"{spark_problem(info)}; Spark's message is withheld as it can quote values "
            f"from rows; fix: {spark_fix(info.condition, info.grpc_status)}")


def spark_problem(info: SparkErrorInfo) -> str:
    """A Spark error named by its public facts (:class:`SparkErrorInfo`, without its
    text): the condition and SQLSTATE, the failing fragment (literals masked), the file."""
    if info.grpc_status == "UNAVAILABLE":
        head = "the Spark Connect server stopped answering (gRPC status UNAVAILABLE)"
    elif info.grpc_status is not None:
        head = f"Spark failed ({info.kind}, gRPC status {info.grpc_status})"
    else:
        head = (f"Spark error {info.condition}" if info.condition
                else f"Spark failed ({info.kind})")
    if info.sql_state:
        head += f" (SQLSTATE {info.sql_state})"
    if info.fragment:
        head += f" in `{info.fragment}`"
    if info.path:
        head += f" on file {info.path!r}"
    return head


def _is_local(path: str) -> bool:
    scheme = urlparse(path).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def _local_path(path: str) -> Path:
    parsed = urlparse(path)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(path)


def _exists(spark: SparkSession, path: str) -> bool | None:
    """Whether ``path`` exists; None when it cannot be told."""
    if _is_local(path):
        return _local_path(path).exists()
    try:  # remote file systems: ask Hadoop through the JVM (classic sessions only)
        jvm: Any = spark._jvm
        hpath = jvm.org.apache.hadoop.fs.Path(path)
        fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
        return bool(fs.exists(hpath))
    except Exception:
        return None


def _delta_log_folder(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` holds a ``_delta_log`` folder: a local path by
    :func:`dprect.engines.file_schemas.holds_delta_log` (the numpy engine's test), a
    remote one by asking Hadoop whether ``path/_delta_log`` is a directory (classic
    sessions only; False when it cannot be told). A ``_delta_log`` FILE is no log, on
    either engine."""
    if _is_local(path):
        return holds_delta_log(_local_path(path))
    try:
        jvm: Any = spark._jvm
        hpath = jvm.org.apache.hadoop.fs.Path(path.rstrip("/") + "/" + DELTA_LOG)
        fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
        return bool(fs.exists(hpath)) and bool(fs.getFileStatus(hpath).isDirectory())
    except Exception:
        return False


def detect_format(spark: SparkSession, path: str) -> str:
    """``delta`` for a folder holding a ``_delta_log`` folder (a ``_delta_log`` file does
    not count), ``csv`` for *.csv / *.csv.gz (a trailing ``/`` aside), ``parquet``
    otherwise (a file or a folder of files): the rule of
    :func:`dprect.engines.file_schemas.format_by_name`, the numpy engine's too."""
    return format_by_name(path, _delta_log_folder(spark, path))


def has_delta_extension(spark: SparkSession) -> bool:
    """True when the session reads Delta natively
    (:func:`dprect.engines.spark.session.has_delta`)."""
    from dprect.engines.spark.session import has_delta

    return has_delta(spark)


def read_source(spark: SparkSession, path: str | os.PathLike[str], *,
                format: str | None = None, where: str | None = None,
                version: int | None = None,
                timestamp: str | dt.datetime | dt.date | None = None,
                columns: Sequence[str] = ()) -> DataFrame:
    """The table at ``path`` as a DataFrame, filtered by ``where`` when given.

    ``format``: ``parquet``, ``csv`` (header row, inferred types) or ``delta``; inferred
    when None (:func:`detect_format`). ``where``: a Spark SQL row filter such as a
    partition predicate (``"day >= '2024-01-01'"``). ``version`` / ``timestamp``: Delta
    time travel (at most one; a zone-less timestamp is UTC; the snapshot is the last
    commit at or before it). ``columns``: the columns the run reads; the files of a local
    Parquet or CSV folder must agree on them (:func:`dprect.engines.file_schemas.check_folder`:
    every file's footer or header row is read on the driver, no row), so must those of a
    Parquet folder elsewhere (:func:`_hadoop_parquet_schemas`), and every data file
    of a local Delta snapshot must have a readable footer, else the input is refused here,
    before anything is reserved.

    Guarantees: the rows and columns are those of the table (for Delta: of the requested
    snapshot, partition columns included, with the table's own types) or an error naming
    the problem is raised — :class:`InputDataError` for the data, :class:`ParameterError`
    for the arguments. Nothing is read wrongly in silence.
    """
    text = os.fspath(path)
    if is_connect(spark) and not urlparse(text).scheme:
        # a Connect server resolves a relative path against its own working folder: make
        # it this process's, as for a classic session (the server must see the path)
        text = os.path.abspath(text)
    if format is not None and format not in FORMATS:
        raise ParameterError(f"format must be one of {', '.join(FORMATS)}; got {format!r}")
    when = check_snapshot(version, timestamp)
    globbed = any(ch in text for ch in "*?[{")  # Spark expands glob patterns itself
    exists = None if globbed else _exists(spark, text)
    if exists is False:
        raise InputDataError(f"input {text!r} does not exist")
    fmt = format or detect_format(spark, text)
    if fmt != "delta" and (version is not None or timestamp is not None):
        raise ParameterError(
            f"a Delta version or timestamp was given, but {text!r} is read as {fmt}")
    if fmt == "delta":
        if has_delta_extension(spark):
            df = _read_delta_native(spark, text, version, when)
        else:
            df = _read_delta_fallback(spark, text, version, when)
        if columns and _is_local(text) and _local_path(text).is_dir():
            _check_data_files(df, text)
    else:
        first = None
        if columns and not globbed and _is_local(text):
            first = check_folder(text, _local_path(text), fmt, columns)
        if fmt == "csv" and not globbed and _is_local(text) and _local_path(text).is_file():
            csv_header(_local_path(text))  # a name given to two fields: refused (a folder's
            # headers are read by check_folder)
        if columns and not globbed and not _is_local(text) and fmt == "parquet":
            check_agreement(text, _hadoop_parquet_schemas(spark, text, columns), columns)
        declared = (_declared_schema(spark, text, columns, first)
                    if fmt == "parquet" and not globbed and _is_local(text) else None)
        try:
            if fmt == "csv":
                df = spark.read.csv(text, **CSV_READ)
            elif declared is not None:
                df = spark.read.schema(declared).parquet(text)
            else:
                df = spark.read.parquet(text)
        except SPARK_ERRORS as exc:
            raise read_error(text, fmt, exc) from None
        if fmt == "csv":
            if (_is_local(text) and starts_as_parquet(_local_path(text))
                    and not set(columns) <= set(df.columns)):
                # Spark reads a Parquet file as CSV without failing (its bytes as a header
                # with no column read): say what it looks like, as the numpy engine does
                raise input_error(text, fmt, columns=columns)
            _check_csv_rows(df, text, columns)
    missing = [c for c in columns if c not in df.columns]
    if missing:  # said here, where the path is known (the schema checks say "the input")
        raise missing_columns(text, missing, df.columns)
    if where is not None and where.strip():
        try:
            df = df.filter(where)
            df.schema  # noqa: B018 — resolve now, so a bad filter fails here
        except SPARK_ERRORS as exc:
            raise InputDataError(
                f"the row filter {where!r} is not valid for {text!r}: "
                f"{spark_message(exc, own_expression=True)}") from None
    return df


def _hadoop_parquet_schemas(spark: SparkSession, path: str, columns: Sequence[str]
                            ) -> list[FileSchema]:
    """The types of ``columns`` in every data file of a Parquet folder that is not on this
    machine (``s3a://``, ``hdfs://``, ...), read by the driver's JVM: the folder listed
    through Hadoop's file system (names starting with ``_`` or ``.`` left out, as Spark
    does) and each file's footer read with parquet-mr's ``ParquetFileReader`` — no row,
    no Spark job. Types are parquet-mr's (``DOUBLE``, ``BINARY (STRING)``). Empty (nothing
    checked) for a single file, a path the file system cannot list (Spark's read then
    says why), or a session without a JVM here (Spark Connect)."""
    if is_connect(spark):
        return []
    jvm: Any = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    try:
        root = jvm.org.apache.hadoop.fs.Path(path)
        fs = root.getFileSystem(conf)
        if not fs.getFileStatus(root).isDirectory():
            return []
        prefix = str(fs.makeQualified(root).toString()).rstrip("/") + "/"
        found = fs.listFiles(root, True)
        files = []
        while found.hasNext():
            file = found.next().getPath()
            rel = str(file.toString()).removeprefix(prefix)
            if not any(part.startswith(("_", ".")) for part in rel.split("/")):
                files.append((rel, file))
    except SPARK_ERRORS:  # not listable here: Spark's own read says why
        return []
    parquet = jvm.org.apache.parquet.hadoop
    out: list[FileSchema] = []
    for rel, file in sorted(files, key=lambda f: f[0]):
        try:
            reader = parquet.ParquetFileReader.open(
                parquet.util.HadoopInputFile.fromPath(file, conf))
            try:
                schema = reader.getFooter().getFileMetaData().getSchema()
            finally:
                reader.close()
            types = {}
            for name in columns:
                if schema.containsField(name):
                    field = schema.getType(name)
                    types[name] = _parquet_type_text(field)
        except SPARK_ERRORS:
            raise input_error(f"{prefix}{rel}", "parquet") from None
        out.append((rel, types))
    return out


def _parquet_type_text(field: Any) -> str:
    """A parquet-mr field's type: its primitive type and logical annotation, or group."""
    if not field.isPrimitive():
        return "group"
    text = str(field.asPrimitiveType().getPrimitiveTypeName().name())
    logical = field.getLogicalTypeAnnotation()
    return text if logical is None else f"{text} ({logical.toString()})"


def _declared_schema(spark: SparkSession, path: str, columns: Sequence[str],
                     first: FirstFooter | None = None) -> StructType | None:
    """How a local Parquet input is read: from one data file's footer (no row), a column
    read of a type the engines do not read alike is refused
    (:func:`dprect.engines.file_schemas.check_types`, the numpy engine's check), and when
    the input holds columns Spark's reader cannot read (float16, a timestamp in
    nanoseconds: :func:`~dprect.engines.file_schemas.spark_unreadable`), none of them
    read, the schema Spark reads it with: every other column, typed as Spark types it
    (:func:`_spark_schema`), so the unread ones are skipped as the numpy engine skips them.
    None: Spark infers the schema itself (no such column, or a footer that cannot be
    read here — Spark's read then says why). ``first``: the folder's first data file and
    its footer's schema as :func:`~dprect.engines.file_schemas.check_folder` read it, so
    that footer is not read again."""
    import pyarrow as pa

    if first is not None:
        schema = first[1]
    else:
        local = _local_path(path)
        file = local if local.is_file() else next(iter(data_files(local)), None)
        if file is None:
            return None
        try:
            schema = footer_schema(file)
        except (pa.ArrowException, OSError, ValueError):
            return None
    check_types(path, schema, columns)
    kept = readable_schema(schema)
    return None if kept is None else _spark_schema(spark, kept)


def _spark_schema(spark: SparkSession, schema: Any) -> StructType | None:
    """The Spark schema of a Parquet file of the Arrow ``schema``, as Spark's reader
    types it: an empty file of that schema is written to a temporary folder and its
    schema read by Spark (its footer; no row, no job), so each column keeps the type
    Spark gives it in the input. None when Spark cannot read that file (a Spark Connect
    server on another machine)."""
    import tempfile

    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory(prefix="dprect-schema-") as folder:
        file = os.path.join(folder, "schema.parquet")
        pq.write_table(schema.empty_table(), file)
        try:
            return spark.read.parquet(file).schema
        except SPARK_ERRORS:
            return None


def _check_data_files(df: DataFrame, path: str) -> None:
    """Every data file of a local Delta snapshot (``df.inputFiles()``: from its log, no
    row read) has a readable Parquet footer (:func:`dprect.engines.file_schemas.check_readable`),
    so a damaged file is refused before anything is reserved."""
    try:
        files = df.inputFiles()
    except SPARK_ERRORS as exc:
        raise read_error(path, "delta", exc) from None
    check_readable([_local_path(f) for f in files if _is_local(f)])


def read_error(path: str, fmt: str, exc: BaseException) -> InputDataError:
    """The error for a table Spark cannot read as ``fmt`` (a file that is not Parquet,
    a damaged file, ...): :func:`dprect.engines.input_errors.input_error` naming the path,
    the format, the Spark error's public facts (:func:`spark_problem`) and the fix, never
    the file's content (Spark's own text can quote its bytes)."""
    info = spark_error_info(exc)
    if _matches(info.condition, UNOPENED_FILE):
        return unreadable_input(path, fmt)
    if info.text:  # an analysis error about the schema or the path (TEXT_KEPT)
        return input_error(path, fmt, problem=info.text)
    if _matches(info.condition, UNREADABLE_TYPES):  # a type, not a damaged file
        return input_error(path, fmt, problem=(
            f"it holds a column of a Parquet type Spark cannot read ({spark_problem(info)}), "
            "such as float16, a timestamp stored in nanoseconds, a time of day or a decimal "
            f"of more than {SPARK_DECIMAL_DIGITS} digits: store such a column as another "
            "type (float32 or double, a timestamp in microseconds, a number)"))
    hint = f"; fix: {spark_fix(info.condition, info.grpc_status)}"
    if fmt == "parquet" and _matches(info.condition, ("FAILED_READ_FILE",)):
        hint = ("; a CSV file needs the csv format (--format csv, or format: csv in a "
                "job's config)" if path.lower().rstrip("/").endswith((".csv", ".csv.gz"))
                else "; give its format (parquet, csv or delta)")
    return input_error(path, fmt, problem=f"{EXPECTED.get(fmt, 'it cannot be read')} "
                                          f"({spark_problem(info)}){hint}")


def _check_csv_rows(df: DataFrame, path: str, columns: Sequence[str]) -> None:
    """Refuse, before anything is reserved, a CSV input that is not well formed or has no
    rows, as the numpy engine refuses it (:mod:`dprect.engines.arrow_input`).

    One job parses every row (:data:`CSV_READ`: ``FAILFAST``, ``multiLine``, so a row
    with more or fewer fields than the header fails it whichever columns are read): such
    a row refuses the input in the numpy engine's words (:func:`input_error`), never the
    row or its place. A file that cannot be opened by then (removed or replaced by a folder
    after the schema was read, not readable by this process: :data:`UNOPENED_FILE`; a path
    gone, which a Spark Connect server finds when it resolves the read again for the
    schema) is refused as such (:func:`~dprect.engines.input_errors.unreadable_input`),
    not said to be malformed, nor left to end the run as a Spark failure. A file holding only
    its header (its columns have no type: CSV types are inferred from the rows) is
    refused saying so; typed inputs (Parquet, Delta) carry
    their schema and are never looked at here. Whether a CSV input is refused depends on
    its rows, as its types do (docs/operations.md, "CSV")."""
    try:
        fields = df.schema.fields  # Spark Connect resolves the read again: files listed
        rows = df.count() if fields else 0
    except SPARK_ERRORS as exc:
        condition = spark_error_info(exc).condition
        if _matches(condition, (*UNOPENED_FILE, "PATH_NOT_FOUND")):  # read, then gone
            raise unreadable_input(path, "csv") from None
        if _matches(condition, MALFORMED_CSV):
            raise input_error(path, "csv", columns=columns) from None
        raise read_error(path, "csv", exc) from None
    if not fields:
        raise csv_empty(path)
    if not rows:
        raise csv_without_rows(path, [f.name for f in fields])


# -- Delta, native ---------------------------------------------------------------------
def _read_delta_native(spark: SparkSession, path: str, version: int | None,
                       when: dt.datetime | None) -> DataFrame:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    if when is not None:
        reader = reader.option("timestampAsOf", when.isoformat())
    try:
        return reader.load(path)
    except SPARK_ERRORS as exc:
        condition = spark_error_info(exc).condition
        if _matches(condition, ("DELTA_MISSING_DELTA_TABLE", "DELTA_TABLE_NOT_FOUND")):
            raise InputDataError(f"{path!r} is not a Delta table ({condition})") from None
        if version is not None and _matches(condition, (
                "DELTA_VERSION_NOT_FOUND", "DELTA_CANNOT_TIME_TRAVEL_VIEWS",
                "DELTA_VERSION_INVALID")):
            raise InputDataError(f"Delta table {path!r} has no version {version} "
                                 f"(Spark error {condition})") from None
        if when is not None and _matches(condition, ("DELTA_TIMESTAMP_GREATER_THAN_COMMIT",)):
            # Delta refuses a time after the last commit; the snapshot at that time is
            # the last commit at or before it (as the fallback reads it)
            at = _last_version_at(spark, path, when)
            if at is not None:
                return _read_delta_native(spark, path, at, None)
        if when is not None and condition is not None and "TIMESTAMP" in condition:
            raise InputDataError(
                f"Delta table {path!r} has no version at or before {when.isoformat()} "
                f"(Spark error {condition})") from None
        raise read_error(path, "delta", exc) from None


def _last_version_at(spark: SparkSession, path: str, when: dt.datetime) -> int | None:
    """The last version of the Delta table at ``path`` committed at or before ``when``
    (from its history); None when it cannot be told."""
    quoted = "delta.`" + path.replace("`", "``") + "`"
    limit = int(when.timestamp() * 1_000_000)
    try:
        rows = (spark.sql(f"DESCRIBE HISTORY {quoted}")
                .selectExpr("version", "unix_micros(timestamp) AS us")
                .where(f"us <= {limit}").selectExpr("max(version) AS v").collect())
    except SPARK_ERRORS:
        return None
    return None if not rows or rows[0]["v"] is None else int(rows[0]["v"])


# -- Delta, through deltalake ----------------------------------------------------------
def _open_delta(path: str, version: int | None, when: dt.datetime | None) -> Any:
    require("delta", "Delta input without Spark's Delta extension")
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError, TableNotFoundError

    at = (f" at version {version}" if version is not None
          else f" at {when.isoformat()}" if when is not None else "")
    try:
        table = DeltaTable(path, version=version) if version is not None else DeltaTable(path)
        if when is not None:
            table.load_as_version(when)
            _check_not_before_first_commit(table, path, when)
    except TableNotFoundError:
        raise InputDataError(
            f"{path!r} is not a Delta table (no readable _delta_log)") from None
    except (DeltaError, OSError, ValueError) as exc:
        if isinstance(exc, InputDataError):
            raise
        # delta-rs's text can quote a commit file, whose statistics hold column minima
        # and maxima: the error is named by its class only
        raise input_error(path, "delta", problem=(
            f"{EXPECTED['delta']}{at} (deltalake error {type(exc).__name__})")) from None
    return table


def _check_not_before_first_commit(table: Any, path: str, when: dt.datetime) -> None:
    """delta-rs maps a time before the first commit to version 0; Delta refuses it.

    The history is read from a fresh handle: delta-rs 1.6 numbers the history of a
    time-travelled handle wrongly."""
    from deltalake import DeltaTable

    loaded = table.version()
    for entry in DeltaTable(table.table_uri).history():
        if entry.get("version") == loaded and entry.get("timestamp") is not None:
            commit = dt.datetime.fromtimestamp(entry["timestamp"] / 1000, tz=dt.UTC)
            if commit > when:
                raise InputDataError(
                    f"Delta table {path!r} has no version at or before {when.isoformat()} "
                    f"(its first available commit is at {commit.isoformat()})")
            return


def check_fallback_readable(protocol: Any, configuration: dict[str, Any], path: str) -> None:
    """Refuse a Delta table whose protocol or configuration needs a reader feature the
    Parquet fallback does not implement (naming the feature)."""
    reader = int(protocol.min_reader_version)
    features = list(protocol.reader_features or [])
    hint = ("; configure the session with delta-spark (spark.sql.extensions="
            "io.delta.sql.DeltaSparkSessionExtension) to read it natively")
    if str(configuration.get("delta.columnMapping.mode", "none")).lower() != "none":
        raise InputDataError(
            f"Delta table {path!r} uses column mapping (delta.columnMapping.mode="
            f"{configuration['delta.columnMapping.mode']}), which the deltalake fallback "
            f"cannot read correctly{hint}")
    if "deletionVectors" in features or str(
            configuration.get("delta.enableDeletionVectors", "false")).lower() == "true":
        raise InputDataError(
            f"Delta table {path!r} uses deletion vectors, which the deltalake fallback "
            f"cannot read correctly{hint}")
    if reader == 2:
        raise InputDataError(
            f"Delta table {path!r} needs reader version 2 (column mapping), which the "
            f"deltalake fallback cannot read correctly{hint}")
    if reader > 3:
        raise InputDataError(
            f"Delta table {path!r} needs reader version {reader}, which the deltalake "
            f"fallback does not know{hint}")
    unknown = sorted(f for f in features if f not in FALLBACK_READER_FEATURES)
    if reader == 3 and unknown:
        raise InputDataError(
            f"Delta table {path!r} uses reader feature(s) {', '.join(unknown)}, which the "
            f"deltalake fallback cannot read correctly{hint}")


def _partition_text_matches(text: str, value: Any) -> bool:
    """Whether a folder's (unescaped) partition text spells the log's typed value."""
    if value is None:
        return text == _HIVE_NULL
    if text == _HIVE_NULL:
        return False
    try:
        if isinstance(value, bool):
            return text.lower() == str(value).lower()
        if isinstance(value, int):
            return int(text) == value
        if isinstance(value, float):
            return float(text) == value
        if isinstance(value, Decimal):
            return Decimal(text) == value
        if isinstance(value, str):
            return text == value
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return dt.date.fromisoformat(text) == value
    except (ValueError, InvalidOperation):
        return False
    return False  # timestamps, binary, anything else: refused


def _read_delta_fallback(spark: SparkSession, path: str, version: int | None,
                         when: dt.datetime | None) -> DataFrame:
    import pyarrow as pa

    if _is_local(path):
        local = _local_path(path)
        if not local.is_dir() or not holds_delta_log(local):
            raise InputDataError(f"{path!r} is not a Delta table (no _delta_log folder)")
        root = str(local.resolve())
    else:
        root = path.rstrip("/")
    table = _open_delta(root, version, when)
    meta = table.metadata()
    check_fallback_readable(table.protocol(), dict(meta.configuration or {}), path)
    schema = StructType.fromJson(json.loads(table.schema().to_json()))
    part_cols = list(meta.partition_columns or [])
    for name in part_cols:
        ftype = schema[name].dataType.typeName()
        if ftype in ("timestamp", "timestamp_ntz", "binary"):
            raise InputDataError(
                f"Delta table {path!r} is partitioned by {name!r} of type {ftype}, which the "
                "deltalake fallback cannot read correctly")
    adds = pa.table(table.get_add_actions(flatten=False))
    rel_paths = [unquote(p) for p in adds.column("path").to_pylist()]
    values = (adds.column("partition").to_pylist() if part_cols and adds.num_rows
              else [{} for _ in rel_paths])
    files = []
    for rel, parts in zip(rel_paths, values, strict=True):
        if urlparse(rel).scheme or rel.startswith("/"):
            raise InputDataError(
                f"Delta table {path!r} lists a data file outside its folder ({rel!r}); "
                "the deltalake fallback cannot read it")
        folders = rel.split("/")[:-1]
        ok = len(folders) == len(part_cols)
        for folder, name in zip(folders, part_cols, strict=False):
            key, sep, raw = folder.partition("=")
            ok = ok and sep == "=" and key == name and _partition_text_matches(
                unquote(raw), (parts or {}).get(name))
        if not ok:  # the values themselves are data: only the columns are named
            raise InputDataError(
                f"Delta table {path!r}: a data file does not sit in folders spelling its "
                f"partition values (partition columns {', '.join(map(repr, part_cols))}); "
                "the deltalake fallback cannot read it")
        files.append(f"{root}/{rel}")
    if not files:
        return spark.createDataFrame([], schema)
    try:
        return spark.read.schema(schema).option("basePath", root).parquet(*files)
    except SPARK_ERRORS as exc:
        raise read_error(path, "delta", exc) from None


@contextmanager
def opened_source(session: Callable[[], tuple[SparkSession, bool]], source: Source,
                  progress: Callable[[str], None]
                  ) -> Iterator[tuple[DataFrame, Callable[[], None] | None]]:
    """A route's start: the session (``session`` returns it and whether this run owns
    it) and ``source`` read lazily (:func:`read_source`). Yields the DataFrame and what
    closes the run (stopping a session the run owns: :func:`~dprect.engines.spark.remote.
    stop_session`; None otherwise); a failure inside the block stops an owned session at
    once and is re-raised."""
    spark, owned = session()
    try:
        progress(f"reading {source.path}")
        yield (read_source(spark, source.path, format=source.format, where=source.where,
                           version=source.version, timestamp=source.timestamp,
                           columns=source.read_columns()),
               (lambda: stop_session(spark)) if owned else None)
    except BaseException:
        if owned:
            stop_session(spark)
        raise

