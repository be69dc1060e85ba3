"""The results table: one appended row per fit, in a Delta table.

A row holds only what a result may publish (:mod:`dprect.core.result`): the run id, the dataset
name the caller chose, the features, the private bounds, the method, the privacy spent,
the public parameters as a JSON string, the dprect version and the run's start time (UTC).
No counts, no data-derived bounds, no durations. There is deliberately no column for
anything else: :func:`result_row` builds a row from a :class:`~dprect.FitResult` and the
caller's public labels only.

Guarantees:

* :func:`check_results_table` refuses, before any fit, a path that holds something other
  than a Delta table with this schema, so a run never spends budget it cannot record.
* :func:`append_result` adds the row in one Delta commit: readers see the table with the
  whole row or without it.
* written natively (``DataFrame.write.format("delta").mode("append")``) when a SparkSession
  with Delta is active (:func:`delta_session`: the Spark jobs and ``--engine spark`` with
  the delta-spark jars, :func:`dprect.engines.spark.session.has_delta`); else from the
  driver with delta-rs (``deltalake``). Both write the same schema and read each other's
  tables. pyspark is never imported here: a session is looked for only when pyspark is
  already loaded.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from dprect.core.errors import InputDataError, ParameterError
from dprect.core.extras import require
from dprect.core.result import FitResult
from dprect.release.delta_output import (
    check_table_properties,
    committed_or_nothing,
    is_delta_folder,
)

SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("features", pa.list_(pa.string()), nullable=False),
    pa.field("lower", pa.list_(pa.float64()), nullable=False),
    pa.field("upper", pa.list_(pa.float64()), nullable=False),
    pa.field("method", pa.string(), nullable=False),
    pa.field("epsilon", pa.float64(), nullable=False),
    pa.field("delta", pa.float64(), nullable=False),
    pa.field("neighbouring", pa.string(), nullable=False),
    pa.field("privacy_bound", pa.string(), nullable=False),
    pa.field("parameters", pa.string(), nullable=False),
    pa.field("dprect_version", pa.string(), nullable=False),
    pa.field("started_at", pa.timestamp("us", tz="UTC"), nullable=False),
])


def new_run_id() -> str:
    """A fresh random run id (32 hex digits; says nothing about the data)."""
    return uuid.uuid4().hex


def result_row(result: FitResult, *, run_id: str, dataset: str, started_at: datetime,
               extra_parameters: dict[str, Any] | None = None) -> pa.Table:
    """The one-row table recording ``result``.

    ``extra_parameters`` are public run settings (input format, Spark strategy, ...) merged
    into the parameters JSON beside the result's own plan. Only private results are
    recorded: a result without a privacy guarantee raises :class:`ParameterError`.
    """
    if result.privacy is None:
        raise ParameterError("only differentially private results go into the results table")
    if started_at.tzinfo is None:
        raise ParameterError("started_at must be timezone-aware")
    params: dict[str, Any] = {
        "plan": result.parameters,
        "grid": [d.to_json() for d in result.domains],
        "seeded": result.seeded,
    }
    if extra_parameters:
        params.update(extra_parameters)
    row = {
        "run_id": [run_id],
        "dataset": [dataset],
        "features": [list(result.features)],
        "lower": [[float(x) for x in result.lower]],
        "upper": [[float(x) for x in result.upper]],
        "method": [result.method],
        "epsilon": [float(result.privacy.epsilon)],
        "delta": [float(result.privacy.delta)],
        "neighbouring": [result.privacy.neighbouring],
        "privacy_bound": [result.privacy.bound],
        "parameters": [json.dumps(params, sort_keys=True, allow_nan=False)],
        "dprect_version": [result.version],
        "started_at": [started_at.astimezone(UTC)],
    }
    return pa.Table.from_pydict(row, schema=SCHEMA)


def delta_session() -> Any | None:
    """The active SparkSession when it has native Delta
    (:func:`dprect.engines.spark.session.active_delta_session`), else None — also when
    pyspark has not been imported (it is not imported here)."""
    if "pyspark.sql" not in sys.modules:
        return None
    from dprect.engines.spark.session import active_delta_session

    return active_delta_session()


def _spark_type(t: pa.DataType) -> str:
    """Spark's simple name of a :data:`SCHEMA` type."""
    if pa.types.is_list(t):
        return f"array<{_spark_type(t.value_type)}>"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return {"string": "string", "double": "double"}[str(t)]


def _native_schema(spark: Any, path: str) -> list[tuple[str, str]]:
    fields = spark.read.format("delta").load(path).schema.fields
    return [(f.name, f.dataType.simpleString()) for f in fields]


def check_results_table(path: str | os.PathLike[str], *, spark: Any | None = None) -> None:
    """Raise :class:`InputDataError` unless ``path`` is absent, an empty folder, or a
    Delta table whose schema is :data:`SCHEMA` (so the append after the fit will work).
    Read with ``spark`` (default: :func:`delta_session`) when it has Delta, else delta-rs."""
    spark = spark or delta_session()
    if spark is None:  # delta-rs will write it: say so before any fit
        require("delta", "the Delta results table")
    p = Path(path)
    if not p.exists():
        return
    if not p.is_dir():
        raise InputDataError(f"results table {str(path)!r} is a file, not a Delta table folder")
    if spark is not None:
        if not is_delta_folder(p):
            if any(p.iterdir()):
                raise InputDataError(
                    f"results table {str(path)!r} exists but is not a Delta table; "
                    "choose another path")
            return
        try:
            theirs = _native_schema(spark, str(p.resolve()))
        except Exception as exc:  # any Spark failure: unusable input (names no rows)
            raise InputDataError(f"cannot read results table {str(path)!r} with Spark's "
                                 f"Delta ({type(exc).__name__})") from None
        ours = [(f.name, _spark_type(f.type)) for f in SCHEMA]
    else:
        read, ours = _deltars_schema(p, str(path))
        if read is None:
            return
        theirs = read
    if theirs != ours:
        raise InputDataError(
            f"results table {str(path)!r} has another schema "
            f"(columns {', '.join(n for n, _ in theirs)}); choose another path")
    check_table_properties(p, "results table", overwrite=False)


def _deltars_schema(p: Path, path: str
                    ) -> tuple[list[tuple[str, str]] | None, list[tuple[str, str]]]:
    """(the table's, the results') column names and types read by delta-rs; None for
    the table's when ``p`` is an empty folder."""
    require("delta", "the Delta results table")
    from deltalake import DeltaTable

    ours = [(f.name, _plain(f.type)) for f in SCHEMA]
    if not DeltaTable.is_deltatable(str(p)):
        if any(p.iterdir()):
            raise InputDataError(
                f"results table {path!r} exists but is not a Delta table; "
                "choose another path")
        return None, ours
    try:
        table = DeltaTable(str(p))
        schema = pa.schema(table.schema().to_arrow())
        # what :func:`has_run` reads after the charge (no row read here): a table of a
        # reader feature delta-rs lacks (deletion vectors) is refused now, not then
        table.to_pyarrow_dataset()
    except Exception as exc:  # any delta-rs failure: unusable input, named by its class
        raise InputDataError(f"cannot read results table {path!r} as delta "
                             f"(deltalake error {type(exc).__name__})") from None
    return [(f.name, _plain(f.type)) for f in schema], ours


def _plain(t: pa.DataType) -> str:
    """A type's name with view/large variants folded (delta-rs may read either)."""
    text = str(t).replace("large_", "").replace("_view", "").replace("string_view", "string")
    return text.replace("element: ", "item: ")


def _quoted(path: str) -> str:
    return "delta.`" + path.replace("`", "``") + "`"


def append_result(path: str | os.PathLike[str], row: pa.Table, *,
                  spark: Any | None = None) -> int:
    """Append ``row`` (from :func:`result_row`) in one Delta commit; returns the version.

    Written by ``spark`` (default: :func:`delta_session`) with ``format("delta")`` when
    it has Delta, else by delta-rs. A first commit that fails leaves no folder of files
    behind (:func:`~dprect.release.delta_output.committed_or_nothing`)."""
    if row.schema != SCHEMA:
        raise ParameterError("a results-table row must have the results schema")
    spark = spark or delta_session()
    check_results_table(path, spark=spark)
    with committed_or_nothing(path):  # a failed first commit leaves no folder of files
        Path(path).mkdir(parents=True, exist_ok=True)
        if spark is not None:
            target = str(Path(path).resolve())
            spark.createDataFrame(row).write.format("delta").mode("append").save(target)
            history = spark.sql(f"DESCRIBE HISTORY {_quoted(target)} LIMIT 1").collect()
            return int(history[0]["version"])
        require("delta", "the Delta results table")
        from deltalake import DeltaTable, write_deltalake

        write_deltalake(str(path), row, mode="append")
    return int(DeltaTable(str(path)).version())


def has_run(path: str | os.PathLike[str], run_id: str, *, spark: Any | None = None) -> bool:
    """Whether the results table at ``path`` already holds a row for ``run_id`` (read by
    ``spark``, default :func:`delta_session`, when it has Delta, else by delta-rs)."""
    spark = spark or delta_session()
    if spark is not None:
        if not is_delta_folder(Path(path)):
            return False
        rows = spark.read.format("delta").load(str(Path(path).resolve()))
        return bool(rows.where(rows["run_id"] == run_id).limit(1).count())
    require("delta", "the Delta results table")
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(str(path)):
        return False
    rows = DeltaTable(str(path)).to_pyarrow_table(columns=["run_id"],
                                                 filters=[("run_id", "=", run_id)])
    return rows.num_rows > 0


def read_results(path: str | os.PathLike[str]) -> pa.Table:
    """The whole results table (for reports and tests)."""
    require("delta", "the Delta results table")
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pyarrow_table()


def utc_now() -> datetime:
    """The current time in UTC (a run's start time)."""
    return datetime.now(UTC)


__all__ = ["SCHEMA", "append_result", "check_results_table", "delta_session", "has_run",
           "new_run_id",
           "read_results",
           "result_row", "utc_now"]
