"""A chi-square goodness-of-fit test of draws from a piecewise-constant law (the exact
samplers' :class:`~dprect.core.interior_point.Pieces`): each draw is counted in its piece,
and the pieces expected to hold fewer than 5 draws are pooled into one cell."""

from __future__ import annotations

import numpy as np
from scipy.stats import chisquare

from dprect.core.interior_point import Pieces


def pieces_fit(draws: np.ndarray, pieces: Pieces) -> tuple[float, np.ndarray, np.ndarray]:
    """The p-value of ``draws`` (grid points) against ``pieces``' law, the expected count
    of every cell before pooling, and which pieces were pooled."""
    n = len(draws)
    cell = np.searchsorted(pieces.starts, np.asarray(draws, dtype=np.uint64),
                           side="right") - 1
    observed = np.bincount(cell, minlength=len(pieces.starts)).astype(float)
    expected = pieces.probabilities() * n
    small = expected < 5
    if small.any():
        observed = np.append(observed[~small], observed[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    return chisquare(observed, expected).pvalue, expected, small
