"""A private-bounds release as recorded: the JSON the ledger holds and the sinks publish
(:func:`bounds_record`), read back into rows (:func:`table_rows`) and lines
(:func:`summary_lines`). Built from the core's result and plan only
(:mod:`dprect.core.bounds`); the coverage statement is docs/privacy.md §9's."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dprect.core.bounds import BoundsPlan, BoundsResult

#: what the ledger records as the method of a bounds run
BOUNDS_METHOD = "bounds"


def jsonable(value: Any) -> Any:
    """``value`` with tuples as lists and ±inf as the strings ``"inf"`` / ``"-inf"`` (a
    bound at ±inf can be drawn for a group with very few rows; strict JSON has no
    infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def coverage_statement(the_plan: BoundsPlan, columns: Sequence[str], groups: int
                       ) -> dict[str, Any]:
    """What the bounds promise, from the public plan only (docs/privacy.md §9)."""
    plan_json = the_plan.to_json()
    beta = the_plan.request.beta
    return {
        "coverage": the_plan.request.coverage,
        "alpha_per_side": float(the_plan.alpha),
        "beta_per_group": beta,
        "rank_error": dict(zip(columns, plan_json["rank_error"], strict=True)),
        "rows_needed": dict(zip(columns, plan_json["rows_needed"], strict=True)),
        "floor_rows": dict(zip(columns, the_plan.floor_rows, strict=True)),
        "interval_level": the_plan.request.interval_level,
        "rank_error_at_level": dict(zip(columns, the_plan.interval_rank_error, strict=True)),
        "statement": (
            f"with probability at least 1 - {beta:g} per group"
            + (f" (all {groups} groups together: at least 1 - {groups * beta:g})"
               if groups > 1 else "")
            + ", each side of column j clips at most max(k_j, alpha*n) + T_j of a group's "
              "n non-null rows, and the bound's grid cell is at or inside the group's "
              f"extreme occupied cell once n >= k_j (alpha = {float(the_plan.alpha):g}, "
              "T_j = rank_error[j], k_j = floor_rows[j] = ceil(T_j) + 1); from "
              "rows_needed[j] = k_j/alpha rows on the share alpha binds, below it each side "
              "aims at k_j rows; below about 2(k_j + T_j) rows lower > upper is possible: "
              "check before clamping; with probability at least interval_level, both "
              "sides of column j clip within +-rank_error_at_level[j] rows of their "
              "target max(k_j, alpha*n) (the table's rank_error)"),
    }


def bounds_record(result: BoundsResult, the_plan: BoundsPlan) -> dict[str, Any]:
    """The released JSON: the core's result (per group and column the bounds and their
    grid indices, the guarantee, the plan), the coverage statement and the library forms
    (:meth:`BoundsResult.library_forms`); ±inf written as ``"inf"`` / ``"-inf"``."""
    record = result.to_json()
    record["method"] = BOUNDS_METHOD
    record["coverage"] = coverage_statement(the_plan, result.columns, len(result.groups))
    forms = result.library_forms()
    record["library_forms"] = forms if not result.grouped else \
        {"by_group": {str(g): f for g, f in forms.items()}}
    return jsonable(record)


def is_bounds_record(record: Mapping[str, Any]) -> bool:
    """Whether a released record holds private clamping bounds (not a fit's rectangle)."""
    return record.get("method") == BOUNDS_METHOD and isinstance(record.get("bounds"), list)


def _number(value: Any) -> float:
    """A recorded bound as a float (``"inf"`` / ``"-inf"`` included)."""
    return float(value)


def table_rows(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per (group, column) — group, column, lower, upper, rank_error (None in a
    record made before the intervals) — read from a released bounds record (the recorded
    JSON only)."""
    return [{"group": None if row["group"] is None else str(row["group"]),
             "column": str(row["column"]), "lower": _number(row["lower"]),
             "upper": _number(row["upper"]),
             "rank_error": None if row.get("rank_error") is None
             else _number(row["rank_error"])} for row in record["bounds"]]


def summary_lines(record: Mapping[str, Any]) -> list[str]:
    """The released bounds, one line per (group, column), from the recorded JSON."""
    lines = []
    for row in table_rows(record):
        where = "" if row["group"] is None else f"group {row['group']!r}, "
        lines.append(f"{where}{row['column']}: lower {row['lower']:.6g}, "
                     f"upper {row['upper']:.6g}")
    return lines


__all__ = ["BOUNDS_METHOD", "bounds_record", "coverage_statement", "is_bounds_record",
           "jsonable", "summary_lines", "table_rows"]
