"""Tie refinement on float-order and FloatBins axes on Spark (issue #24, point 1).

Float-order axes are refined in the low bits of their order keys
(:class:`dprect.core.ties.RefinedFloat`): numpy computes the keys from the bits, the
``rounds`` and ``prefetch`` strategies in Spark SQL (``reflect``), ``collect`` and ``pass``
with the core's numpy code in the driver or the workers. A seed must give the identical
rectangle on numpy and on every Spark strategy, on a small table dominated by ties: a
float-order feature with 95% zeros, a rounded one (heaped), a fine one, and an integer
pixel. The ``pass`` strategy runs with its JVM prefilter forced on, whose bound on a refined
float axis is the coarse bin's end (:func:`dprect.core.ties.coarse_range`). (FloatBins
has no SQL twin and the Spark engine takes no FloatBins rectangle axis, as before; its
refinement is the grid axes' and is tested on numpy, tests/core/test_ties.py.)
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dprect
from dprect import FloatOrder, IntegerRange
from dprect.engines.spark.fit import prepare_fit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _table(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    zeros = np.where(gen.random(n) < 0.95, 0.0, np.abs(gen.normal(2.0, 1.0, n)))
    heaped = np.round(gen.normal(0.0, 1.0, n), 1)
    fine = gen.normal(size=n)
    pixel = gen.integers(0, 17, n).astype(np.float64)
    y = (gen.random(n) < 0.9).astype(int)
    return np.column_stack([zeros, heaped, fine, pixel]), y


def _agree(make_frame, X, y, domains, plans, seed):
    names = [f"x{j}" for j in range(X.shape[1])]
    df = make_frame(X, names, y=y, partitions=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = dprect.plan(domains=domains, epsilon=6.0, delta=1e-6, method="randmargins")
        bits = plan.chosen.tie_breaker(domains).bits
        assert all(bits), bits  # every axis refined: the case under test
        want = dprect.fit(X, y, grid=domains, epsilon=6.0, delta=1e-6,
                          method="randmargins", seed=seed, features=names)
        assert not want.empty
        for strategy in plans:
            with prepare_fit(df, features=names, label="y", grid=domains, epsilon=6.0,
                             delta=1e-6, method="randmargins",
                             strategy=strategy) as prepared:
                got = prepared.run(seed=seed)
            assert got.lower_index == want.lower_index, strategy
            assert got.upper_index == want.upper_index, strategy
            assert got.lower == want.lower and got.upper == want.upper
    return want


def test_float_order_axes_agree_on_every_plan(make_frame, forced_prefilter):
    X, y = _table(2000, seed=3)  # 1,800 positives: the pass samples and filters
    domains = [FloatOrder(), FloatOrder(), FloatOrder(), IntegerRange(0, 16)]
    want = _agree(make_frame, X, y, domains, ("collect", "pass", "prefetch", "rounds"),
                  seed=7)
    assert any(f is not None for f in forced_prefilter)  # the pass did filter
    inside = want.contains(X[y == 1]).mean()
    assert inside > 0.5  # the zeros no longer empty the rectangle

