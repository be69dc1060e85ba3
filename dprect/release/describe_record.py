"""A describe release as recorded (DP count, sum and mean per public group and column:
:mod:`dprect.core.aggregates`): the JSON the ledger holds and the sinks publish
(:func:`describe_record`), read back into rows (:func:`table_rows`) and lines
(:func:`summary_lines`). Built from the core's result (which carries its public plan)
only; every sink renders from the recorded JSON, so a replay publishes the same outputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dprect.core.aggregates import STATISTICS, DescribeResult
from dprect.release.bounds_record import jsonable

#: what the ledger records as the method of a describe run
DESCRIBE_METHOD = "describe"
#: what a result row holds for one (group, column), in this order
ROW_KEYS = ("group", "column", "lower", "upper", *STATISTICS)


def describe_record(result: DescribeResult) -> dict[str, Any]:
    """The released JSON: the method, the columns, the public groups, the guarantee
    (``privacy``), the plan (public: the budget split, the targets, the accuracy
    statements), and per (group, column) ``lower``, ``upper``, ``count``, ``sum`` and
    ``mean`` (None for a statistic not asked for); ±inf written as ``"inf"``/``"-inf"``."""
    record = result.to_dict()
    rows = [{key: row.get(key) for key in ROW_KEYS} for row in result.rows()]
    return jsonable({"method": DESCRIBE_METHOD, **record, "results": rows})


def is_describe_record(record: Mapping[str, Any]) -> bool:
    """Whether a released record holds a describe run's aggregates (not a rectangle, not
    private bounds)."""
    return record.get("method") == DESCRIBE_METHOD and isinstance(record.get("results"), list)


def _number(value: Any) -> float | None:
    """A recorded number as a float (``"inf"``/``"-inf"`` included; None stays None)."""
    return None if value is None else float(value)


def table_rows(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per (group, column) — group, column, lower, upper, count, sum, mean — read
    from a released describe record (the recorded JSON only)."""
    return [{"group": None if row["group"] is None else str(row["group"]),
             "column": str(row["column"]),
             **{key: _number(row.get(key)) for key in ROW_KEYS[2:]}}
            for row in record["results"]]


def summary_lines(record: Mapping[str, Any]) -> list[str]:
    """The released aggregates, one line per (group, column), from the recorded JSON."""
    lines = []
    for row in table_rows(record):
        where = "" if row["group"] is None else f"group {row['group']!r}, "
        stats = "".join(f"{key} {row[key]:.6g}, " for key in STATISTICS
                        if row[key] is not None)
        lines.append(f"{where}{row['column']}: {stats}bounds [{row['lower']:.6g}, "
                     f"{row['upper']:.6g}]")
    return lines


__all__ = ["DESCRIBE_METHOD", "ROW_KEYS", "describe_record", "is_describe_record",
           "summary_lines", "table_rows"]
