"""The Spark kernels' dense reduction (dprect.engines.row_kernels.sum_by_digits): the same
unique keys, counts and exact int64 sums as sorting, in key order, and a refusal (None)
where a table would be too large or a float64 partial sum might not be exact."""

from __future__ import annotations

import numpy as np

from dprect.core.describe_stats import sum_by_key
from dprect.engines.row_kernels import sum_by_digits


def test_dense_reduction_equals_sorting_exactly():
    rs = np.random.default_rng(3)
    n = 200_000
    g = rs.integers(0, 40, n)
    k = rs.integers(-300, 500, n)
    # values at the edge of the allowed range: a sum in float64 of whole values would
    # round (n * 2^31 > 2^53 is not reached, but 2^31-sized terms lose low bits past 2^53
    # only in a naive split, so the low halves must be summed apart)
    v = rs.integers(-(2**31) + 1, 2**31, n)
    got = sum_by_digits([g, k], [v, -v], 10**6)
    assert got is not None
    (gg, kk), counts, (s, minus) = got
    keys, n_want, s_want = sum_by_key(g * 1000 + k, v)
    assert np.array_equal(gg * 1000 + kk, keys)  # key order, unique
    assert np.array_equal(counts, n_want)
    assert np.array_equal(s, s_want)
    assert np.array_equal(minus, -s_want)


def test_dense_reduction_declines_where_it_cannot_be_exact_or_small():
    g = np.array([0, 1, 2])
    k = np.array([0, 10**6, 5])
    assert sum_by_digits([g, k], [], 10**6) is None  # box of 3·(10^6 + 1) cells
    assert sum_by_digits([g, g], [np.array([1, 2**31, 3])], 100) is None
    assert sum_by_digits([g, g], [np.array([1, -(2**31), 3])], 100) is None
    assert sum_by_digits([g[:0], g[:0]], [], 100) is None
    (a, b), n, _ = sum_by_digits([g, g], [np.array([1, 2**31 - 1, 3])], 100)
    assert a.tolist() == b.tolist() == [0, 1, 2] and n.tolist() == [1, 1, 1]


def test_dense_sums_stay_exact_past_2_to_the_53():
    """5·10^6 rows of 2^31 − 1 in one cell sum past 2^53, where float64 sums of the whole
    values round: the split into 16-bit halves keeps them exact."""
    n = 5_000_000
    v = np.full(n, 2**31 - 1, dtype=np.int64)
    v[::3] = 2**31 - 7
    got = sum_by_digits([np.zeros(n, dtype=np.int64)], [v], 10)
    assert got is not None
    assert int(got[2][0][0]) == sum(int(x) * c for x, c in
                                     zip(*np.unique(v, return_counts=True), strict=True))
