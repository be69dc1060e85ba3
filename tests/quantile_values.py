"""A column's values for the compiled quantile draws' tests (tests/core/
test_quantile_draws_compiled.py, test_quantile_cell_jit.py): six shapes — normal, rounded
(ties, both signs and zero), log-normal of either sign, one value repeated, a few values
decades apart, exponential — of a length drawn from ``rows``, all from ``gen``."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import Any

import numpy as np


def random_values(gen: random.Random, rows: Sequence[int]) -> np.ndarray:
    """One column of ``gen.choice(rows)`` values of a shape drawn from ``gen``."""
    n = gen.choice(list(rows))
    shape = gen.randrange(6)
    x = np.random.default_rng(gen.randrange(2**32))
    if shape == 0:
        return x.normal(gen.uniform(-100, 100), gen.uniform(0.01, 50), n)
    if shape == 1:  # ties, both signs and zero
        return np.round(x.normal(0.0, gen.choice([0.5, 3.0, 30.0]), n))
    if shape == 2:
        return x.lognormal(gen.uniform(-5, 5), 2.0, n) * gen.choice([-1, 1])
    if shape == 3:  # one value repeated
        return np.full(n, gen.choice([0.0, -3.25, 7.0, 1e300]))
    if shape == 4:  # far apart: many decades
        return x.choice([-1e200, -1e-5, 0.0, 1e-300, 3.0, 1e250], n)
    return x.exponential(gen.uniform(1e-3, 1e3), n)


def pool_draws(stats: Any, plan: Any, entropy: bytes, kernels: Any,
               monkeypatch: Any) -> list[tuple[Any, int]]:
    """A cell's quantile draws from a pool of OS bytes (``os.urandom`` giving ``entropy``
    from its start at every refill), in Python and then with the compiled samplers
    (``kernels``: :mod:`dprect.core.random_jit`), each with the pool's read position
    after it — the two entries equal where the compiled path reads as Python does."""
    from dprect.core import randomness
    from dprect.core.quantiles import draws
    from dprect.core.randomness import PooledSystemRandom, RandomSource

    out = []
    for loaded in (None, kernels):
        monkeypatch.setattr(randomness, "_KERNELS", loaded)
        monkeypatch.setattr(os, "urandom", lambda n, e=entropy: e[:n])
        source = RandomSource()
        assert isinstance(source._py, PooledSystemRandom)
        out.append((draws(stats, plan, source), source._py._at))
    return out
