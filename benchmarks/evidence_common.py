"""Helpers shared by the evidence benchmarks (sample complexity, privacy audit, bounds and
the real-peer comparison).

Nothing here is private machinery: it only records where a run happened, silences the
seeded-run warning (every benchmark run is seeded on purpose, for reproducibility, and
works on public synthetic data), and writes JSON and figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

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


def evidence_options(ap: argparse.ArgumentParser, *, quick: str, trials: str,
                     synthetic: str, opendp: str) -> None:
    """The options every real-table evidence script takes (bounds.py, real_data.py), in
    its own words (``quick``, ``trials``, ``synthetic``, ``opendp``: their helps):
    ``--quick``, ``--trials``, ``--tables``, ``--no-synthetic``, ``--entropy``,
    ``--check-opendp``, ``--out-dir`` (:func:`evidence_setup`, :func:`output_dir`)."""
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--trials", type=int, help=trials)
    ap.add_argument("--tables", help="comma-separated real tables to run (default: all)")
    ap.add_argument("--no-synthetic", action="store_true", help=synthetic)
    ap.add_argument("--entropy", action="store_true",
                    help="unseeded runs (operating-system entropy) instead of fixed seeds")
    ap.add_argument("--check-opendp", action="store_true", help=opendp)
    ap.add_argument("--out-dir", help="default docs/figures (benchmarks/output with --quick)")


S = TypeVar("S")


def evidence_setup(args: argparse.Namespace, quick: S, full: S) -> S:
    """The run's setup (a dataclass with ``trials`` and ``entropy``) from
    :func:`evidence_options`: ``quick`` with ``--quick``, else ``full``, with
    ``--trials`` and ``--entropy`` applied."""
    setup = quick if args.quick else full
    if args.trials:
        setup = dataclasses.replace(setup, trials=args.trials)  # type: ignore[type-var]
    if args.entropy:
        setup = dataclasses.replace(setup, entropy=True)  # type: ignore[type-var]
    return setup


T = TypeVar("T")


def evidence_tables(args: argparse.Namespace,
                    load_real: Callable[[list[str] | None], tuple[list[T], list[str]]],
                    requirements: str) -> tuple[list[T], list[str]] | None:
    """The real tables ``--tables`` names (all by default) as the script's ``load_real``
    loads them, and what it could not (each said on stderr, with the ``requirements``
    file that installs it); None — the run ends with exit 2 — when one is missing
    outside ``--quick``."""
    real, missing = load_real(args.tables.split(",") if args.tables else None)
    for m in missing:
        print(f"skipped {m} (pip install -r {requirements})", file=sys.stderr)
    if missing and not args.quick:
        print(f"missing table packages: pip install -r {requirements}", file=sys.stderr)
        return None
    return real, missing


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

