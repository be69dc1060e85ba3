"""Reading the input table into Spark: Parquet, CSV or Delta.

:func:`read_source` returns a lazy DataFrame; every failure it can see (missing path, not a
Delta table, unreadable file, a bad ``where`` filter, a Delta table the fallback reader
cannot read correctly) is an :class:`~dprect.errors.InputDataError` or
:class:`~dprect.errors.ParameterError` naming the path and the problem, never a Spark
traceback.

Delta tables are read natively when the session has the Delta extension (delta-spark jars
on the classpath and ``spark.sql.extensions`` containing ``DeltaSparkSessionExtension``),
with time travel through ``versionAsOf`` / ``timestampAsOf``. Otherwise the snapshot is
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
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from dprect.errors import InputDataError, ParameterError

FORMATS = ("parquet", "csv", "delta")

#: reader features the deltalake fallback reads correctly (they do not change how data
#: files map to rows): timestamps without zone, vacuum-only and checkpoint-format features
FALLBACK_READER_FEATURES = frozenset({"timestampNtz", "vacuumProtocolCheck", "v2Checkpoint"})
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def spark_message(exc: BaseException) -> str:
    """The first line of a Spark/Py4J error, without the JVM stack trace."""
    text = str(exc).strip()
    for marker in ("\nJVM stacktrace:", "\n\tat "):
        text = text.split(marker, 1)[0]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else type(exc).__name__
    return first if len(first) <= 500 else first[:497] + "..."


def _is_local(path: str) -> bool:
    scheme = urlparse(path).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def _local_path(path: str) -> Path:
    parsed = urlparse(path)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(path)


def _exists(spark: SparkSession, path: str, child: str | None = None) -> bool | None:
    """Whether ``path`` (or ``path/child``) exists; None when it cannot be told."""
    if _is_local(path):
        p = _local_path(path)
        return (p / child).exists() if child else p.exists()
    try:  # remote file systems: ask Hadoop through the JVM (classic sessions only)
        jvm = spark._jvm  # type: ignore[attr-defined]
        target = path.rstrip("/") + ("/" + child if child else "")
        hpath = jvm.org.apache.hadoop.fs.Path(target)
        fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
        return bool(fs.exists(hpath))
    except Exception:
        return None


def detect_format(spark: SparkSession, path: str) -> str:
    """``delta`` for a folder holding ``_delta_log``, ``csv`` for *.csv / *.csv.gz,
    ``parquet`` otherwise (a file or a folder of files)."""
    if _exists(spark, path, "_delta_log"):
        return "delta"
    name = path.lower().rstrip("/")
    return "csv" if name.endswith((".csv", ".csv.gz")) else "parquet"


def has_delta_extension(spark: SparkSession) -> bool:
    """True when the session is configured with Delta's SQL extension."""
    try:
        extensions = spark.conf.get("spark.sql.extensions", "") or ""
    except Exception:
        return False
    return "DeltaSparkSessionExtension" in extensions


def _utc_timestamp(timestamp: str | dt.datetime | dt.date) -> dt.datetime:
    """A zone-aware timestamp; a date is its midnight and a zone-less value is UTC."""
    if isinstance(timestamp, dt.datetime):
        value = timestamp
    elif isinstance(timestamp, dt.date):
        value = dt.datetime(timestamp.year, timestamp.month, timestamp.day)
    elif isinstance(timestamp, str):
        text = timestamp.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ParameterError(
                f"Delta timestamp {timestamp!r} is not an ISO-8601 date or time "
                "(e.g. 2024-05-01T12:00:00Z)") from None
    else:
        raise ParameterError(f"Delta timestamp must be a string or datetime, got {timestamp!r}")
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def read_source(spark: SparkSession, path: str | os.PathLike[str], *,
                format: str | None = None, where: str | None = None,
                version: int | None = None,
                timestamp: str | dt.datetime | dt.date | None = None) -> DataFrame:
    """The table at ``path`` as a DataFrame, filtered by ``where`` when given.

    ``format``: ``parquet``, ``csv`` (header row, inferred types) or ``delta``; inferred
    when None (:func:`detect_format`). ``where``: a Spark SQL row filter such as a
    partition predicate (``"day >= '2024-01-01'"``). ``version`` / ``timestamp``: Delta
    time travel (at most one; a zone-less timestamp is UTC; the snapshot is the last
    commit at or before it).

    Guarantees: the rows and columns are those of the table (for Delta: of the requested
    snapshot, partition columns included, with the table's own types) or an error naming
    the problem is raised — :class:`InputDataError` for the data, :class:`ParameterError`
    for the arguments. Nothing is read wrongly in silence.
    """
    text = os.fspath(path)
    if format is not None and format not in FORMATS:
        raise ParameterError(f"format must be one of {', '.join(FORMATS)}; got {format!r}")
    if version is not None and timestamp is not None:
        raise ParameterError("give a Delta version or a timestamp, not both")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)
                                or version < 0):
        raise ParameterError(f"Delta version must be an integer >= 0, got {version!r}")
    globbed = any(ch in text for ch in "*?[{")  # Spark expands glob patterns itself
    exists = None if globbed else _exists(spark, text)
    if exists is False:
        raise InputDataError(f"input {text!r} does not exist")
    fmt = format or detect_format(spark, text)
    if fmt != "delta" and (version is not None or timestamp is not None):
        raise ParameterError(
            f"a Delta version or timestamp was given, but {text!r} is read as {fmt}")
    if fmt == "delta":
        when = _utc_timestamp(timestamp) if timestamp is not None else None
        if has_delta_extension(spark):
            df = _read_delta_native(spark, text, version, when)
        else:
            df = _read_delta_fallback(spark, text, version, when)
    else:
        try:
            if fmt == "csv":
                df = spark.read.csv(text, header=True, inferSchema=True)
            else:
                df = spark.read.parquet(text)
        except PySparkException as exc:
            raise InputDataError(f"cannot read {text!r} as {fmt}: {spark_message(exc)}") from None
    if where is not None and where.strip():
        try:
            df = df.filter(where)
            df.schema  # noqa: B018 — resolve now, so a bad filter fails here
        except PySparkException as exc:
            raise InputDataError(
                f"the row filter {where!r} is not valid for {text!r}: {spark_message(exc)}"
            ) from None
    return df


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
    except PySparkException as exc:
        msg = spark_message(exc)
        if "not a Delta table" in msg or "DELTA_MISSING_DELTA_TABLE" in msg:
            raise InputDataError(f"{path!r} is not a Delta table: {msg}") from None
        raise InputDataError(f"cannot read Delta table {path!r}: {msg}") from None


# -- Delta, through deltalake ----------------------------------------------------------
def _open_delta(path: str, version: int | None, when: dt.datetime | None) -> Any:
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError, TableNotFoundError

    at = (f" at version {version}" if version is not None
          else f" at {when.isoformat()}" if when is not None else "")
    try:
        table = DeltaTable(path, version=version) if version is not None else DeltaTable(path)
        if when is not None:
            table.load_as_version(when)
            _check_not_before_first_commit(table, path, when)
    except TableNotFoundError as exc:
        raise InputDataError(
            f"{path!r} is not a Delta table (no readable _delta_log): {exc}") from None
    except (DeltaError, OSError, ValueError) as exc:
        if isinstance(exc, InputDataError):
            raise
        raise InputDataError(f"cannot open Delta table {path!r}{at}: {exc}") from None
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
        if not local.is_dir() or not (local / "_delta_log").is_dir():
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
        if not ok:
            raise InputDataError(
                f"Delta table {path!r}: data file {rel!r} does not sit in folders spelling "
                f"its partition values {parts!r}; the deltalake fallback cannot read it")
        files.append(f"{root}/{rel}")
    if not files:
        return spark.createDataFrame([], schema)
    try:
        return spark.read.schema(schema).option("basePath", root).parquet(*files)
    except PySparkException as exc:
        raise InputDataError(
            f"cannot read the data files of Delta table {path!r}: {spark_message(exc)}"
        ) from None
