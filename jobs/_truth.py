"""The synthetic data's true rectangle, drawn from a public seed (no Spark needed): shared
by ``generate_synthetic.py`` and the tests' in-memory slice of the demo data."""

from __future__ import annotations

import random


def true_rectangle(dims: int, lower: float, upper: float, seed: int
                   ) -> tuple[list[float], list[float]]:
    """A true rectangle drawn from the seed: on each axis 30-60 % of the span, placed
    at least 10 % of the span away from both ends (so negatives exist on both sides)."""
    gen = random.Random(seed)
    span = upper - lower
    lo, hi = [], []
    for _ in range(dims):
        width = gen.uniform(0.3, 0.6) * span
        start = lower + 0.1 * span + gen.uniform(0.0, 0.8 * span - width)
        lo.append(round(start, 6))
        hi.append(round(start + width, 6))
    return lo, hi
