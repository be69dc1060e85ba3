"""describe's compiled per-row step (engines/spark/describe_jit.py) gives the numpy step's
lists exactly: every (group, search bin) with its row count and significand sum, on
values of both signs, subnormals, −0.0, the largest floats and many binades; too wide a
table is declined (None); the kernel uses it for large chunks only, and not when the
installed module is another version."""

from __future__ import annotations

import numpy as np
import pytest

from dprect.core.describe_stats import DROPPED_BITS, significands
from dprect.core.domains import FloatBins
from dprect.engines.spark import describe as spark_describe
from dprect.engines.spark import describe_jit
from dprect.engines.spark.bounds import chunk_counts

GRID = FloatBins(spark_describe.SEARCH_BITS)
SPECIALS = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -2.2250738585072014e-308,
            2.225073858507201e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1.0,
            -1.0, 0.1, -3.0e-7]


def _numpy_lists(x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, ...]:
    gg, b, n, s = chunk_counts(g, GRID.encode(x), significands(x.view(np.int64)))
    assert s is not None
    order = np.lexsort((b, gg))
    return gg[order], b[order], n[order], s[order]


def _compiled(x: np.ndarray, g: np.ndarray, groups: int, limit: int = 1 << 22):
    return describe_jit.column_bins(x, g, groups, GRID.shift, GRID.size // 2,
                                    DROPPED_BITS, limit)


@pytest.mark.parametrize("shape", ["normal", "cross", "binades", "negative", "one value"])
def test_the_compiled_step_equals_the_numpy_step(shape):
    rs = np.random.default_rng(len(shape))
    n = 30_000
    x = {"normal": rs.normal(50.0, 10.0, n),
         "cross": rs.normal(0.5, 4.0, n),
         "binades": rs.normal(0.0, 1.0, n) * 10.0 ** rs.integers(-12, 12, n),
         "negative": -rs.exponential(30.0, n),
         "one value": np.full(n, 7.25)}[shape]
    if shape != "one value":
        x[:len(SPECIALS)] = SPECIALS
    groups = 37
    g = rs.integers(0, groups, n).astype(np.int32)
    got = _compiled(x, g, groups)
    assert got is not None
    want = _numpy_lists(x, g)
    for name, a, b in zip(("group", "bin", "count", "sum"), got, want, strict=True):
        assert np.array_equal(a, b), name
        assert a.dtype.kind == b.dtype.kind, name


def test_a_table_too_wide_is_declined_and_the_kernel_counts_with_numpy(monkeypatch):
    rs = np.random.default_rng(4)
    x = rs.normal(0.0, 1.0, 5000) * 10.0 ** rs.integers(-300, 300, 5000)
    g = rs.integers(0, 100, 5000).astype(np.int32)
    assert _compiled(x, g, 100, limit=1000) is None
    monkeypatch.setattr(spark_describe, "JIT_ROWS", 1)
    monkeypatch.setattr(spark_describe, "JIT_CELLS", 1000)
    got = spark_describe.column_lists(g, x, 100)
    order = np.lexsort((got[1], got[0]))
    for a, b in zip((v[order] for v in got), _numpy_lists(x, g), strict=True):
        assert np.array_equal(a, b)


def test_the_kernel_uses_the_compiled_step_for_large_chunks_of_its_own_version(monkeypatch):
    calls: list[int] = []
    real = describe_jit.column_bins

    def spy(values, *args):
        calls.append(len(values))
        return real(values, *args)

    monkeypatch.setattr(describe_jit, "column_bins", spy)
    rs = np.random.default_rng(5)
    small, large = rs.normal(size=100), rs.normal(size=spark_describe.JIT_ROWS)
    for x in (small, large):
        g = rs.integers(0, 3, len(x)).astype(np.int32)
        got = spark_describe.column_lists(g, x, 3)  # in any order
        order = np.lexsort((got[1], got[0]))
        for a, b in zip((v[order] for v in got), _numpy_lists(x, g), strict=True):
            assert np.array_equal(a, b)
    assert calls == [spark_describe.JIT_ROWS]
    monkeypatch.setattr(describe_jit, "VERSION", spark_describe.JIT_VERSION + 1)
    g = rs.integers(0, 3, len(large)).astype(np.int32)
    spark_describe.column_lists(g, large, 3)
    assert calls == [spark_describe.JIT_ROWS]  # another version: not called
