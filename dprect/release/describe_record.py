"""A describe release as recorded (DP count, sum and mean per public group and column:
:mod:`dprect.core.aggregates`): the JSON the ledger holds and the sinks publish
(:func:`describe_record`), read back into rows (:func:`table_rows`) and lines
(:func:`summary_lines`). Built from the core's result (which carries its public plan)
only; every sink renders from the recorded JSON, so a replay publishes the same outputs.

**The small-group flag.** Each released (group, column) says whether its group was below
the rows the plan states its centre needs: ``below_row_need`` is true when the released
count is below :func:`rows_needed` of the plan as recorded — post-processing of a released
value and the public plan, so it costs no privacy — and null when no count was released
(``--statistics`` without count). Below that need the plan no longer promises a centre
inside the group's data, so its bounds and mean may be anywhere (docs/operations.md,
"Small groups"). It is in the JSON, the ``--table`` (a column) and the plot (hollow grey
points); :func:`table_rows` derives it again from every record it reads, so a replay of a
record made before the flag existed publishes it too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dprect.core.aggregates import STATISTICS, DescribeResult
from dprect.core.statistic import QUERY, outputs
from dprect.release.bounds_record import jsonable

#: what the ledger records as the method of a describe run
DESCRIBE_METHOD = "describe"
#: what a result row holds for one (group, column), in this order: the query mechanism's
#: statistics' outputs (:mod:`dprect.core.statistic`)
ROW_KEYS = ("group", "column", *outputs(QUERY))
#: the small-group flag of each released (group, column) (the module docstring)
BELOW_ROW_NEED = "below_row_need"
#: a row of the describe table: the released values, then the flag
TABLE_KEYS = (*ROW_KEYS, BELOW_ROW_NEED)


def rows_needed(plan: Mapping[str, Any], column: str) -> int:
    """The rows a group needs in ``column`` before the plan's accuracy statements hold
    for its cell, read from the plan as recorded in a describe record (public). The ONE
    place the flag reads the plan's row need: the plan's recorded ``rows_needed`` (one
    number for every column, or a number per column) when it has one, else — a record
    made before the plan stated it — :func:`centre_rows_needed`."""
    recorded = plan.get("rows_needed")
    if isinstance(recorded, Mapping):
        return int(recorded[column])
    if isinstance(recorded, int | float) and not isinstance(recorded, bool):
        return int(recorded)
    return centre_rows_needed(plan)


def centre_rows_needed(plan: Mapping[str, Any]) -> int:
    """The row need of a plan recorded before plans stated ``rows_needed`` (a replay of an
    older ledger record): its centre's, ``centre_rows``
    (:attr:`dprect.core.aggregates.DescribePlan.centre_rows`, the same for every column:
    n >= (4/eps_c)·ln(m/beta), docs/privacy.md §11) — what bounds those plans' cells."""
    return int(plan["centre_rows"])


def below_row_need(count: float | None, plan: Mapping[str, Any], column: str
                   ) -> bool | None:
    """Whether a released ``count`` is below the plan's row need for ``column``
    (:func:`rows_needed`); None when no count was released. Post-processing only."""
    if count is None:
        return None
    return bool(float(count) < rows_needed(plan, column))


def describe_record(result: DescribeResult) -> dict[str, Any]:
    """The released JSON: the method, the columns, the public groups, the guarantee
    (``privacy``), the plan (public: the budget split, the targets, the accuracy
    statements), and per (group, column) ``lower``, ``upper``, ``count``, ``sum`` and
    ``mean`` (None for a statistic not asked for) and the small-group flag
    ``below_row_need`` (the module docstring); ±inf written as ``"inf"``/``"-inf"``."""
    record = result.to_dict()
    plan = record["plan"]
    rows = [{**{key: row.get(key) for key in ROW_KEYS},
             BELOW_ROW_NEED: below_row_need(row.get("count"), plan, str(row["column"]))}
            for row in result.rows()]
    return jsonable({"method": DESCRIBE_METHOD, **record, "results": rows})


def is_describe_record(record: Mapping[str, Any]) -> bool:
    """Whether a released record holds a describe run's aggregates (not a rectangle, not
    private bounds)."""
    return record.get("method") == DESCRIBE_METHOD and isinstance(record.get("results"), list)


def _number(value: Any) -> float | None:
    """A recorded number as a float (``"inf"``/``"-inf"`` included; None stays None)."""
    return None if value is None else float(value)


def table_rows(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per (group, column) — group, column, lower, upper, count, sum, mean and
    the small-group flag (derived again from the released count and the recorded plan) —
    read from a released describe record (the recorded JSON only)."""
    plan = record["plan"]
    rows = []
    for row in record["results"]:
        column = str(row["column"])
        count = _number(row.get("count"))
        rows.append({"group": None if row["group"] is None else str(row["group"]),
                     "column": column,
                     **{key: _number(row.get(key)) for key in ROW_KEYS[2:]},
                     BELOW_ROW_NEED: below_row_need(count, plan, column)})
    return rows


def summary_lines(record: Mapping[str, Any]) -> list[str]:
    """The released aggregates, one line per (group, column), from the recorded JSON."""
    lines = []
    for row in table_rows(record):
        where = "" if row["group"] is None else f"group {row['group']!r}, "
        stats = "".join(f"{key} {row[key]:.6g}, " for key in STATISTICS
                        if row[key] is not None)
        few = (f" — below_row_need: fewer than the {rows_needed(record['plan'], row['column']):,}"
               " rows the plan needs, bounds and mean may be far off"
               if row[BELOW_ROW_NEED] else "")
        lines.append(f"{where}{row['column']}: {stats}bounds [{row['lower']:.6g}, "
                     f"{row['upper']:.6g}]{few}")
    return lines


__all__ = ["BELOW_ROW_NEED", "DESCRIBE_METHOD", "ROW_KEYS", "TABLE_KEYS", "below_row_need",
           "centre_rows_needed", "describe_record", "is_describe_record", "rows_needed",
           "summary_lines", "table_rows"]
