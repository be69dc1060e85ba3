"""The golden cases of ``dprect bounds`` and ``dprect describe`` (issue #41, stage 0).

Recorded on main BEFORE the grouped-aggregate seam was built, so the presets of the one
aggregate product can be held to the outputs the two products gave for a seed: the result
JSON, the table CSV and the printed lines (plan and results), on the numpy engine
(tests/app/test_golden.py) and on Spark (tests/spark/test_golden_spark.py), plus the
Python functions ``dprect.bounds`` / ``dprect.describe``.

The input is tests/data/golden/input.csv: 600 rows, a group column ``g`` (a, b, c), a
normal column ``x``, an integer column ``y`` of heavy ties (five values) and an
exponential column ``z`` with blanks. Set ``DPRECT_GOLDEN_WRITE=1`` to re-record (only
when an output is MEANT to change, and say why in the commit).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).resolve().parent / "data" / "golden"
INPUT = GOLDEN / "input.csv"

_GROUPS = ["--group-by", "g", "--groups", "a,b,c,d"]

#: name → (command, arguments after ``--input``); every case is seeded.
CASES: dict[str, tuple[str, list[str]]] = {
    "describe_groups": ("describe", ["--columns", "x,y,z", "--epsilon", "2", *_GROUPS]),
    "describe_count_only": ("describe", ["--columns", "x,z", "--epsilon", "1",
                                         "--statistics", "count"]),
    "describe_sum_replace": ("describe", ["--columns", "x,y", "--epsilon", "3",
                                          "--statistics", "sum,mean", "--beta", "0.01",
                                          "--neighbouring", "replace-one", *_GROUPS]),
    "describe_bounds_only": ("describe", ["--columns", "z", "--epsilon", "1",
                                          "--statistics", "none", "--query-epsilon", "0.5",
                                          *_GROUPS]),
    "describe_ties": ("describe", ["--columns", "y", "--epsilon", "4",
                                   "--statistics", "mean"]),
    "bounds_groups": ("bounds", ["--columns", "x,y,z", "--epsilon", "1", *_GROUPS]),
    "bounds_coverage": ("bounds", ["--columns", "x,z", "--epsilon", "2", "--coverage",
                                   "0.95", "--beta", "0.01", "--rows", "1000"]),
    "bounds_ties_grid": ("bounds", ["--columns", "y,x", "--epsilon", "1", "--grid",
                                    "y=int:0:10,x=-20:80:64", "--neighbouring",
                                    "replace-one", "--delta", "1e-6", *_GROUPS]),
}

SEED = "7"


def _volatile(key: str) -> bool:
    return key in {"run_id", "time", "started", "finished", "created"} or key.endswith(
        "_time")


def stable(obj: Any) -> Any:
    """``obj`` without run ids and times (none is written without a ledger; dropped in
    case one appears)."""
    if isinstance(obj, dict):
        return {k: stable(v) for k, v in obj.items() if not _volatile(k)}
    if isinstance(obj, list):
        return [stable(v) for v in obj]
    return obj


def run_case(name: str, engine: str, tmp: Path, capsys: pytest.CaptureFixture[str]
             ) -> dict[str, Any]:
    """Run one case through the command line: its result JSON, table and printed lines."""
    from cli_run import run

    command, args = CASES[name]
    out, table = tmp / f"{name}.json", tmp / f"{name}.csv"
    code, printed, err = run([command, "--input", str(INPUT), *args, "--seed", SEED,
                              "--engine", engine, "--output", str(out), "--table",
                              str(table)], capsys)
    assert code == 0, err
    return {"result": stable(json.loads(out.read_text())),
            "table": table.read_text().splitlines(),
            "printed": printed.replace(str(tmp), "<tmp>").splitlines()}


def check(path: Path, got: dict[str, Any]) -> None:
    """``got`` equals the recorded fixture at ``path`` (or records it, when asked)."""
    if os.environ.get("DPRECT_GOLDEN_WRITE") == "1":
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        return
    want = json.loads(path.read_text())
    assert got == want
