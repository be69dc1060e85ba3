"""Speed of the in-memory fit against one pass of X.min(0) and X.max(0).

    python benchmarks/core_fit.py [--rows 1000000] [--dims 16] [--repeat 3]

Generates n positives × d features (public synthetic data), then times, in the same run:
the reference (X.min(0) and X.max(0) over the same array), and dprect.fit with the
planner's choice ('auto'), forced 'randmargins' and forced 'composition', each on a 2^32
grid and on the float-order domain. Prints each as a ratio to the reference (best of
--repeat runs). Nothing is asserted: this is a measurement.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from evidence_common import best_of

import dprect


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dims", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    gen = np.random.default_rng(0)
    X = gen.uniform(0.0, 1.0, size=(args.rows, args.dims))
    y = np.ones(args.rows, dtype=np.int8)
    ref = best_of(args.repeat, lambda: (X.min(0), X.max(0)))
    print(f"{args.rows:,} positives x {args.dims} features; reference X.min(0)+X.max(0): "
          f"{ref * 1e3:.1f} ms")
    print(f"{'grid':<8}{'method':<14}{'seconds':>9}{'ratio':>9}")
    warnings.simplefilter("ignore")  # the fits below are seeded: reproducible benchmarks
    for grid_name, grid in (("2^32", dprect.Grid(0.0, 1.0, 2**32)), ("float", None)):
        for method in ("auto", "randmargins", "composition"):
            secs = best_of(args.repeat, lambda grid=grid, method=method: dprect.fit(
                X, y, grid=grid, epsilon=1.0, delta=1e-6, method=method, seed=1))
            print(f"{grid_name:<8}{method:<14}{secs:>9.3f}{secs / ref:>9.1f}")


if __name__ == "__main__":
    main()
