"""A public synthetic table dominated by ties, shared by the Spark engine's tests."""

from __future__ import annotations

import numpy as np

from dprect import Grid, IntegerRange


def ties_table(n: int, dims: int, seed: int) -> tuple[np.ndarray, np.ndarray, list]:
    """Axis 0: 95% zeros on a grid; the other axes: pixel intensities 0…16 (half dark);
    about 30% of the rows are exact copies of 20 rows; about 85% positives. Returns the
    features, the labels and the domains."""
    gen = np.random.default_rng(seed)
    zeros = np.where(gen.random(n) < 0.95, 0.0, gen.uniform(0.1, 19.0, n))
    pix = gen.integers(0, 17, size=(n, dims - 1)).astype(np.float64)
    pix[gen.random((n, dims - 1)) < 0.5] = 0.0
    X = np.column_stack([zeros, pix])
    dup = gen.random(n) < 0.3
    X[dup] = X[gen.integers(0, min(20, n), int(dup.sum()))]
    y = (gen.random(n) < 0.85).astype(int)
    return X, y, [Grid(0.0, 20.0, 64), *[IntegerRange(0, 16)] * (dims - 1)]
