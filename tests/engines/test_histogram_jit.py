"""The compiled histogram query (dprect/engines/histogram_jit.py) gives numpy's counts
(bucket_counts), bit for bit: ties at a threshold, repeated thresholds, −0.0 against
+0.0, infinite thresholds, values past either end, buckets of the guide holding one
threshold (the branch-free path) or many (the binary search)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dprect.core.domains import FloatOrder, Grid
from dprect.core.errors import ParameterError
from dprect.core.quantile_box import coarse_thresholds, side_candidates, tail_thresholds
from dprect.engines import histogram_jit
from dprect.engines.numpy_engine import bucket_counts, counter

pytestmark = pytest.mark.skipif(not histogram_jit.available(), reason="numba not installed")

FLOATS = [-np.inf, -1e300, -2.5, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1e-300, 0.5, 1.0, 1.0,
          3.0, 1e300, np.inf]


def _both(values: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(thresholds, dtype=values.dtype)
    return bucket_counts(values, t), counter(t, values.dtype, compiled=True)(
        values)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(FLOATS[1:-1]), max_size=60),
       st.lists(st.sampled_from(FLOATS), max_size=12))
def test_floats_as_numpy(values: list[float], cuts: list[float]) -> None:
    want, got = _both(np.array(values, dtype=np.float64), np.sort(np.array(cuts)))
    assert got.tolist() == want.tolist()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1), max_size=60),
       st.lists(st.integers(-2**63, 2**63 - 1), max_size=12), st.integers(0, 40))
@example(values=[2**63 - 2**47 + 1], cuts=[0, 2**63 - 2**47], dense=0)  # top bucket
@example(values=[2**63 - 1, -2**63], cuts=[-2**63, 2**63 - 1], dense=0)     # whole range
def test_integers_as_numpy(values: list[int], cuts: list[int], dense: int) -> None:
    """Wide keys, and ``dense`` thresholds packed into one bucket of the guide."""
    t = np.sort(np.array(cuts + list(range(7, 7 + dense)), dtype=np.int64))
    v = np.array(values + list(range(0, 60)), dtype=np.int64)
    want, got = _both(v, t)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("domain", [FloatOrder(), Grid(-3.0, 3.0, 1 << 20)])
def test_the_box_queries_as_numpy(domain) -> None:
    """The box's own queries: the coarse bins (one threshold a bucket at most on the
    float order) and the sides' candidates (many in the buckets near the centre)."""
    gen = np.random.default_rng(4)
    values = domain.encode(np.concatenate([gen.standard_normal(20_000),
                                           np.zeros(50), -np.zeros(50)]))
    centre = int(domain.to_index(domain.encode(np.array([0.1])))[0])
    for cuts in (coarse_thresholds(domain),
                 tail_thresholds(domain, side_candidates(domain, centre, "lo", 4),
                                 side_candidates(domain, centre, "hi", 4))):
        want, got = _both(values, cuts)
        assert got.tolist() == want.tolist()


def test_decreasing_thresholds_are_refused() -> None:
    for compiled in (True, False):
        with pytest.raises(ParameterError):
            counter(np.array([2.0, 1.0]), np.dtype(np.float64),
                                  compiled=compiled)
