"""Shared pieces of the fit's tests: the contest's one-axis table and a walk over an
output's JSON keys (the no-data-field tests)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np


def contest_table(separable: bool, seed: int = 0, n_pos: int = 5000, n_neg: int = 20_000,
                  nan_rows: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """One axis of 0..255: positives around 128; negatives overlapping their tails, or
    (``separable``) only at the axis's ends, where neither rectangle of ``auto``'s contest
    reaches. ``nan_rows``: rows whose feature is NaN (dropped by the fit)."""
    g = np.random.default_rng(seed)
    pos = np.clip(np.rint(g.normal(128, 25, (n_pos, 1))), 0, 255)
    if separable:
        neg = np.r_[g.integers(0, 6, n_neg // 2), g.integers(250, 256, n_neg // 2)]
        neg = neg.astype(float).reshape(-1, 1)
    else:
        neg = np.clip(np.rint(g.normal(128, 60, (n_neg, 1))), 0, 255)
    X = np.vstack([pos, neg])
    if nan_rows:
        X[list(nan_rows)] = np.nan
    return X, np.r_[np.ones(n_pos, int), np.zeros(n_neg, int)]


def json_keys(node: Any) -> Iterator[str]:
    """Every key of a JSON-like tree, nested ones included."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from json_keys(v)
    elif isinstance(node, list):
        for v in node:
            yield from json_keys(v)
