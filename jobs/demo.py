"""`make demo`: learn a private rectangle from generated data and show it beside the truth.

Interim version on the in-memory numpy engine (the Spark job replaces it).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

import dprect


def main() -> int:
    gen = np.random.default_rng(20261122)  # generates PUBLIC synthetic data only
    n, d = 1_000_000, 4
    true_lower = np.array([-2.0, 0.5, 10.0, -50.0])
    true_upper = np.array([3.0, 2.5, 30.0, 50.0])
    width = true_upper - true_lower
    span_lo, span_hi = true_lower - width, true_upper + width
    X = gen.uniform(span_lo, span_hi, size=(n, d))
    y = ((X >= true_lower) & (X <= true_upper)).all(axis=1).astype(np.int8)
    features = [f"f{j}" for j in range(d)]
    grid = [dprect.Grid(float(lo), float(hi), 2**20)
            for lo, hi in zip(span_lo, span_hi, strict=True)]
    print(f"generated {n:,} rows x {d} features "
          f"({int(y.sum()):,} positives; public synthetic data)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = dprect.fit(X, y, grid=grid, epsilon=1.0, delta=1e-6, features=features)
    print(result.summary())
    print(f"\n{'feature':<8}{'true lower':>12}{'learned':>12}{'true upper':>12}{'learned':>12}")
    for j, f in enumerate(features):
        print(f"{f:<8}{true_lower[j]:>12.4f}{result.lower[j]:>12.4f}"
              f"{true_upper[j]:>12.4f}{result.upper[j]:>12.4f}")
    inside = result.contains(X)
    print(f"\nmisclassified positives (non-private evaluation on synthetic data): "
          f"{int((y.astype(bool) & ~inside).sum()):,}; false positives: "
          f"{int((~y.astype(bool) & inside).sum()):,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
