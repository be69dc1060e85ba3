"""A seeded :class:`~dprect.core.randomness.RandomSource` for tests: reproducible noise
(a seed is for tests only: the source warns that its noise is not private, and this one
silences that warning; tests/core/test_randomness.py asserts it)."""

from __future__ import annotations

import warnings

from dprect.core.randomness import RandomSource


def seeded(seed: int) -> RandomSource:
    """``RandomSource(seed=seed)`` without its warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=seed)
