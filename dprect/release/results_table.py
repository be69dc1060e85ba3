"""The results table: one appended row per fit, in a Delta table written with ``deltalake``.

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
* no pyspark import: the table is written from the driver with delta-rs.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from dprect.core.errors import InputDataError, ParameterError
from dprect.core.extras import require
from dprect.core.result import FitResult

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

    ``extra_parameters`` are public run settings (input format, Spark plan, ...) merged
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


def check_results_table(path: str | os.PathLike[str]) -> None:
    """Raise :class:`InputDataError` unless ``path`` is absent, an empty folder, or a
    Delta table whose schema is :data:`SCHEMA` (so the append after the fit will work)."""
    require("delta", "the Delta results table")
    from deltalake import DeltaTable

    p = Path(path)
    if not p.exists():
        return
    if not p.is_dir():
        raise InputDataError(f"results table {str(path)!r} is a file, not a Delta table folder")
    if not DeltaTable.is_deltatable(str(p)):
        if any(p.iterdir()):
            raise InputDataError(
                f"results table {str(path)!r} exists but is not a Delta table; "
                "choose another path")
        return
    try:
        schema = pa.schema(DeltaTable(str(p)).schema().to_arrow())
    except Exception as exc:  # any delta-rs failure: unusable input
        raise InputDataError(f"cannot read results table {str(path)!r}: {exc}") from None
    theirs = [(f.name, _plain(f.type)) for f in schema]
    ours = [(f.name, _plain(f.type)) for f in SCHEMA]
    if theirs != ours:
        raise InputDataError(
            f"results table {str(path)!r} has another schema "
            f"(columns {', '.join(n for n, _ in theirs)}); choose another path")


def _plain(t: pa.DataType) -> str:
    """A type's name with view/large variants folded (delta-rs may read either)."""
    text = str(t).replace("large_", "").replace("_view", "").replace("string_view", "string")
    return text.replace("element: ", "item: ")


def append_result(path: str | os.PathLike[str], row: pa.Table) -> int:
    """Append ``row`` (from :func:`result_row`) in one Delta commit; returns the version."""
    require("delta", "the Delta results table")
    from deltalake import DeltaTable, write_deltalake

    if row.schema != SCHEMA:
        raise ParameterError("a results-table row must have the results schema")
    check_results_table(path)
    Path(path).mkdir(parents=True, exist_ok=True)
    write_deltalake(str(path), row, mode="append")
    return int(DeltaTable(str(path)).version())


def has_run(path: str | os.PathLike[str], run_id: str) -> bool:
    """Whether the results table at ``path`` already holds a row for ``run_id``."""
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


__all__ = ["SCHEMA", "append_result", "check_results_table", "has_run", "new_run_id",
           "read_results",
           "result_row", "utc_now"]
