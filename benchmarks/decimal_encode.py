"""The quantiles' decimal grid encoding: the numpy reference (``DecimalGrid.encode``)
against the compiled kernel (``dprect.engines.decimal_grid_jit``), values per second on
the same realistic column in the same run (issue #41).

The column: 10^7 prices-like floats, lognormal (median e^3 ≈ 20, σ = 2) rounded to two
decimals, a tenth of them negated — the short decimals the grid is built for. Both encode
it in chunks of 2^19 values (a Spark chunk of 64 columns, ``CHUNK_VALUES`` / 64), timed
by the process CPU clock and the wall clock; numba's load (or compile) is timed apart,
before. The cells are checked equal. Then the same with the quantiles' at-value counts
(what the pass computes per chunk: the reference's ``encode`` and ``at_value_counts``
against the kernel's one loop, :func:`compiled_at_value`). Prints one line per encoder and
writes
``benchmarks/output/decimal_encode-{rows}.json``.

    python benchmarks/decimal_encode.py [--rows 10000000] [--digits 5]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from dprect.core.decimal_grid import DecimalGrid
from dprect.core.quantiles import at_value_counts
from dprect.engines.decimal_grid_jit import compiled_at_value, compiled_encode

CHUNK = 1 << 19


def column(rows: int) -> np.ndarray:
    gen = np.random.default_rng(41)
    x = np.round(gen.lognormal(3.0, 2.0, rows), 2)
    x[gen.random(rows) < 0.1] *= -1.0
    return x


def _timed(fn, x: np.ndarray) -> tuple[np.ndarray, float, float]:
    out = np.empty(len(x), dtype=np.int64)
    wall, cpu = time.perf_counter(), time.process_time()
    for a in range(0, len(x), CHUNK):
        out[a:a + CHUNK] = fn(x[a:a + CHUNK])
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--digits", type=int, default=5)
    args = parser.parse_args()
    grid = DecimalGrid(args.digits)
    x = column(args.rows)
    load = time.perf_counter()
    if compiled_encode(grid, x[:10]) is None:
        raise SystemExit("numba is not installed")
    load = time.perf_counter() - load
    want, ref_wall, ref_cpu = _timed(grid.encode, x)
    got, jit_wall, jit_cpu = _timed(lambda c: compiled_encode(grid, c), x)
    same = bool(np.array_equal(want, got))

    def ref_at(c: np.ndarray) -> np.ndarray:
        return at_value_counts(grid, c, grid.encode(c))

    def jit_at(c: np.ndarray) -> np.ndarray:
        both = compiled_at_value(grid, c)
        assert both is not None
        return both[1]

    want_at, ref_at_wall, ref_at_cpu = _timed(ref_at, x)
    got_at, jit_at_wall, jit_at_cpu = _timed(jit_at, x)
    same = same and bool(np.array_equal(want_at, got_at))
    out = {"rows": args.rows, "digits": args.digits, "chunk": CHUNK, "same_cells": same,
           "numba_load_s": round(load, 3), "load_average": os.getloadavg()[0],
           "reference": {"wall_s": ref_wall, "cpu_s": ref_cpu,
                         "values_per_s": args.rows / ref_cpu},
           "compiled": {"wall_s": jit_wall, "cpu_s": jit_cpu,
                        "values_per_s": args.rows / jit_cpu},
           "reference_with_at_value": {"wall_s": ref_at_wall, "cpu_s": ref_at_cpu,
                                       "values_per_s": args.rows / ref_at_cpu},
           "compiled_with_at_value": {"wall_s": jit_at_wall, "cpu_s": jit_at_cpu,
                                      "values_per_s": args.rows / jit_at_cpu},
           "speedup_cpu": ref_cpu / jit_cpu,
           "speedup_cpu_with_at_value": ref_at_cpu / jit_at_cpu}
    for name in ("reference", "compiled", "reference_with_at_value",
                 "compiled_with_at_value"):
        r = out[name]
        print(f"{name:23s} {r['cpu_s']:7.2f} s CPU {r['wall_s']:7.2f} s wall  "
              f"{r['values_per_s'] / 1e6:7.2f} M values/s (CPU)  "
              f"{1e9 * r['cpu_s'] / args.rows:7.1f} ns a value")
    print(f"same cells: {same}; {out['speedup_cpu']:.1f}x in CPU "
          f"({out['speedup_cpu_with_at_value']:.1f}x with the at-value counts); "
          f"numba load {load:.2f} s; "
          f"load average {out['load_average']:.1f}")
    path = Path(__file__).resolve().parent / "output" / f"decimal_encode-{args.rows}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
