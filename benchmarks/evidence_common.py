"""Helpers shared by the evidence benchmarks (sample complexity, privacy audit, bounds and
the real-peer comparison).

Nothing here is private machinery: it only records where a run happened, silences the
seeded-run warning (every benchmark run is seeded on purpose, for reproducibility, and
works on public synthetic data), and writes JSON and figures.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display on CI or servers

import numpy as np

import dprect
from dprect.core.randomness import SEEDED_WARNING

REPO = Path(__file__).resolve().parent.parent
FIGURES = REPO / "docs" / "figures"
QUICK_OUTPUT = REPO / "benchmarks" / "output"


@contextmanager
def seeded_runs_allowed() -> Iterator[None]:
    """Silence dprect's seeded-run warning (benchmarks are seeded on purpose)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=re.escape(SEEDED_WARNING))
        yield


def machine_info() -> dict[str, Any]:
    """Where the numbers came from."""
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "system": platform.system(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "dprect": dprect.__version__,
    }
    try:
        with open("/proc/meminfo") as fh:
            kib = int(fh.readline().split()[1])
        info["memory_gib"] = round(kib / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return info


def output_dir(requested: str | None, quick: bool) -> Path:
    """``requested``, else docs/figures (full runs) or benchmarks/output (quick runs)."""
    path = Path(requested) if requested else (QUICK_OUTPUT if quick else FIGURES)
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON (no NaN: missing values are null)."""
    path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")


class Stopwatch:
    """Wall-clock seconds since creation."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def seconds(self) -> float:
        return round(time.perf_counter() - self._start, 2)


def best_of(repeat: int, fn) -> float:
    """The fastest of ``repeat`` timed calls of ``fn`` (seconds)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def finite(obj: Any) -> Any:
    """JSON-safe copy, floats to 7 significant digits: a non-finite float (an error beyond
    a double's range) → null."""
    if isinstance(obj, float):
        return float(f"{obj:.7g}") if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    return obj


def fmt(x: float | None, digits: int = 3) -> str:
    """A number for a printed table: "—" for none, "inf" past a double's range."""
    if x is None:
        return "—"
    if not math.isfinite(x):
        return "inf"
    return f"{x:.{digits}g}"

