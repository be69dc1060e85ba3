"""The Spark pass encodes a decimal grid compiled on a large chunk (issue #41:
:func:`dprect.engines.spark.statistics.grid_keys` calls
:mod:`dprect.engines.decimal_grid_jit`), cell for cell as the numpy reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from engine_cells import assert_same_cells, both_engines

from dprect.core.decimal_grid import DecimalGrid
from dprect.core.quantiles import at_value_counts
from dprect.core.statistic import QUANTILES, SEARCH_GRID
from dprect.engines import decimal_grid_jit
from dprect.engines.spark import statistics
from dprect.engines.spark.statistics import JIT_ROWS, grid_keys

pytestmark = pytest.mark.skipif(not decimal_grid_jit.available(),
                                reason="numba not installed")


def test_grid_keys_compiled_from_jit_rows(monkeypatch):
    calls: list[int] = []
    for name in ("compiled_encode", "compiled_at_value"):
        original = getattr(decimal_grid_jit, name)

        def spy(grid: DecimalGrid, x: np.ndarray, run=original) -> object:
            calls.append(len(x))
            return run(grid, x)

        monkeypatch.setattr(decimal_grid_jit, name, spy)
    grid = DecimalGrid(5)
    x = np.round(np.random.default_rng(9).lognormal(2.0, 3.0, JIT_ROWS), 2)
    for n in (10, JIT_ROWS):
        got, none = grid_keys(grid, x[:n])
        assert got.dtype == np.int64 and none is None
        np.testing.assert_array_equal(got, grid.encode(x[:n]))
        cells, at = grid_keys(grid, x[:n], at_value=True)
        np.testing.assert_array_equal(cells, got)
        np.testing.assert_array_equal(at, at_value_counts(grid, x[:n], got))
    assert calls == [JIT_ROWS, JIT_ROWS]
    assert int(at.sum()) > 0  # two-decimal values are their cells' values
    monkeypatch.setattr(statistics, "DECIMAL_JIT_VERSION", -1)  # another dprect: numpy
    np.testing.assert_array_equal(grid_keys(grid, x)[0], grid.encode(x))
    assert calls == [JIT_ROWS, JIT_ROWS]


def test_spark_compiled_cells_equal_the_reference(spark, tmp_path: Path, monkeypatch):
    """Chunks of at least JIT_ROWS rows on the executors (compiled) against the numpy
    primitive held to the reference encoding on the driver."""
    monkeypatch.setattr(decimal_grid_jit, "JIT_VALUES", 1 << 62)
    gen = np.random.default_rng(44)
    n = 3 * JIT_ROWS
    a = np.round(gen.normal(0, 30, n), 1)
    a[::13] = np.nan
    a[:6] = [0.0, -0.0, 5e-324, -5e-324, 1e300, -1e300]
    g = gen.choice(["p", "q"], n)
    spec = QUANTILES.spec([SEARCH_GRID])
    got, want = both_engines(spark, tmp_path / "t.parquet", {"a": a, "g": g}, ["a"], spec,
                             ["q", "p"], partitions=1)
    assert_same_cells(got, want)
