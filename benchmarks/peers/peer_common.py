"""What every peer runner shares (numpy and the standard library only: a runner executes in
its peer's own virtual environment, where dprect is not installed).

A runner reads the manifest written by ``benchmarks/peers_real.py`` (the columns, as
``.npy`` and ``.parquet`` files; the ε values; the number of runs), releases a DP mean and
a DP sum of every column ``runs`` times per ε with its library, and appends one JSON line
per (table, column, ε) to its output file as soon as that cell is done, so a run that is
stopped keeps what it finished and a re-run skips it (``done_cells``).

A line: ``{"peer", "library", "version", "table", "column", "epsilon", "seconds",
"runs": [{"mean", "sum", "lower", "upper"}, ...]}`` — ``lower``/``upper`` are the bounds
the library used, or ``null`` where the library does not expose them; a released value
the library could not produce (an error) is ``null`` and counted as a failure downstream.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RUN_KEYS = ("mean", "sum", "lower", "upper")


@dataclass(frozen=True)
class Cell:
    table: str
    column: str
    epsilon: float
    npy: str
    parquet: str
    n: int


def parse_args(description: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--manifest", required=True, help="the manifest JSON of peers_real.py")
    p.add_argument("--out", required=True, help="JSON-lines output (appended; resumed)")
    return p.parse_args()


def load_manifest(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def cells(manifest: dict[str, Any]) -> Iterator[Cell]:
    """Every (column, ε), ε in the manifest's order outermost (the headline ε first)."""
    for eps in manifest["epsilons"]:
        for c in manifest["columns"]:
            yield Cell(c["table"], c["column"], float(eps), c["npy"], c["parquet"], c["n"])


def key(peer: str, table: str, column: str, epsilon: float) -> str:
    return f"{peer}/{table}/{column}/{epsilon:g}"


def done_cells(out: str) -> set[str]:
    """Keys (peer/table/column/ε) of the cells already in ``out`` (a truncated last
    line is ignored)."""
    path = Path(out)
    if not path.exists():
        return set()
    keys = set()
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        keys.add(key(row["peer"], row["table"], row["column"],
                     row["epsilon"]))
    return keys


def number(x: Any) -> float | None:
    """A released value as a JSON number, or None (not produced, or not finite)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def run_record(mean: Any, total: Any, lower: Any = None, upper: Any = None
               ) -> dict[str, float | None]:
    return {"mean": number(mean), "sum": number(total), "lower": number(lower),
            "upper": number(upper)}


def append(out: str, peer: str, library: str, version: str, cell: Cell,
           runs: list[dict[str, float | None]], seconds: float) -> None:
    row = {"peer": peer, "library": library, "version": version, "table": cell.table,
           "column": cell.column, "epsilon": cell.epsilon, "seconds": round(seconds, 3),
           "runs": runs}
    with open(out, "a") as fh:
        fh.write(json.dumps(row, allow_nan=False) + "\n")


class Clock:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self.start


def parse_lines(text: str) -> list[dict[str, Any]]:
    """The cells of a runner's output, checked: one per (peer, table, column, ε) — a later
    line for the same cell replaces an earlier one — each run with exactly ``RUN_KEYS``,
    numbers or null. A truncated last line (a stopped run) is skipped."""
    rows: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        for field in ("peer", "library", "version", "table", "column", "epsilon", "runs"):
            if field not in row:
                raise ValueError(f"a peer line without {field!r}")
        for run in row["runs"]:
            if set(run) != set(RUN_KEYS):
                raise ValueError(f"a run with keys {sorted(run)}, not {list(RUN_KEYS)}")
            for k in RUN_KEYS:
                if run[k] is not None and not isinstance(run[k], int | float):
                    raise ValueError(f"a run's {k} is not a number")
        rows[key(row["peer"], row["table"], row["column"], row["epsilon"])] = row
    return list(rows.values())
