"""The compiled decimal grid encoding (dprect/engines/decimal_grid_jit.py) gives
DecimalGrid.encode's cells, bit for bit: every power of ten and its neighbours, grid edges
f_j and their neighbours (every edge for 1 and 2 digits, every decade's first, second and
last for 5 and 3), subnormals, ±0.0, the largest floats, NaN, both signs, and random
floats across every exponent; ±∞ (refused by the reference) in the cell reaching them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dprect.core.decimal_grid import DecimalGrid
from dprect.core.quantiles import at_value_counts
from dprect.core.statistic import QUANTILES, SEARCH_GRID, cell_bins
from dprect.engines import decimal_grid_jit
from dprect.engines.decimal_grid_jit import (
    JIT_VALUES,
    compiled_at_value,
    compiled_encode,
    encode,
    encode_at_value,
)
from dprect.engines.grouped import grouped_statistics

pytestmark = pytest.mark.skipif(not decimal_grid_jit.available(),
                                reason="numba not installed")

MAX = np.finfo(np.float64).max


def _around(v: np.ndarray) -> np.ndarray:
    """v, its float neighbours both ways, and all negated."""
    v = np.asarray(v, dtype=np.float64)
    with np.errstate(over="ignore"):
        near = np.concatenate([v, np.nextafter(v, np.inf), np.nextafter(v, -np.inf),
                               np.nextafter(np.nextafter(v, np.inf), np.inf),
                               np.nextafter(np.nextafter(v, -np.inf), -np.inf)])
    near = near[np.isfinite(near)]
    return np.concatenate([near, -near])


def _same(grid: DecimalGrid, x: np.ndarray, shift: int = 0) -> None:
    x = np.asarray(x, dtype=np.float64)
    want = grid.encode(x)
    got = compiled_encode(grid, x, shift)
    assert got is not None and got.dtype == np.int64
    bad = np.flatnonzero(got != want)
    assert len(bad) == 0, (grid.digits, x[bad[:5]], want[bad[:5]], got[bad[:5]])
    both = compiled_at_value(grid, x, shift)
    assert both is not None
    np.testing.assert_array_equal(both[0], want)
    at = at_value_counts(grid, x, want)
    bad = np.flatnonzero(both[1] != at)
    assert len(bad) == 0, (grid.digits, x[bad[:5]], at[bad[:5]])


def _edges(grid: DecimalGrid, j: np.ndarray) -> np.ndarray:
    return grid.values(grid.zero + 1 + np.asarray(j, dtype=np.int64))


def _special() -> np.ndarray:
    tiny = np.array([5e-324, 1e-323, 2.2250738585072009e-308, 2.2250738585072014e-308,
                     1e-310, 1e-320, 1e-300, 1e-305, 9.9999e-301])
    return np.concatenate([[0.0, -0.0, MAX, np.nextafter(MAX, 0.0), 1.0, 0.5, 0.31],
                           tiny, [float(f"1e{k}") for k in range(-330, 309)],
                           [float(f"9.9999e{k}") for k in range(-310, 300)]])


@pytest.mark.parametrize("digits", [1, 2, 3, 5, 8])
def test_powers_of_ten_subnormals_and_extremes(digits: int) -> None:
    _same(DecimalGrid(digits), _around(_special()))


@pytest.mark.parametrize("digits", [1, 2])
def test_every_edge(digits: int) -> None:
    grid = DecimalGrid(digits)
    _same(grid, _around(_edges(grid, np.arange(grid.per_sign))))


@pytest.mark.parametrize("digits", [3, 5])
def test_decade_edges_and_random_edges(digits: int) -> None:
    grid = DecimalGrid(digits)
    starts = np.arange(0, grid.per_sign, grid.per_decade)
    j = np.concatenate([starts, starts + 1, starts + grid.per_decade - 1,
                        np.random.default_rng(digits).integers(0, grid.per_sign, 200_000)])
    _same(grid, _around(_edges(grid, j)))


@pytest.mark.parametrize("shift", [-2, -1, 1, 2])
@pytest.mark.parametrize("digits", [1, 2, 3])
def test_corrections_from_an_estimate_decades_off(digits: int, shift: int) -> None:
    """The corrections alone find the cell, crossing decades down and up: the search
    started |shift| decades off (libm's log10 is too good to miss a decade by itself)."""
    grid = DecimalGrid(digits)
    starts = np.arange(0, grid.per_sign, grid.per_decade)
    j = np.concatenate([starts, starts + grid.per_decade - 1,
                        np.random.default_rng(digits).integers(0, grid.per_sign, 2000)])
    bits = np.random.default_rng(shift + 9).integers(0, 1 << 64, 5000, dtype=np.uint64)
    x = np.concatenate([_around(_edges(grid, j)), _around(_special()),
                        bits.view(np.float64)])
    _same(grid, x[np.isfinite(x)], shift)


@pytest.mark.parametrize("digits", [3, 5])
def test_random_floats_over_every_exponent(digits: int) -> None:
    bits = np.random.default_rng(41 + digits).integers(0, 1 << 64, 2_000_000,
                                                       dtype=np.uint64)
    x = bits.view(np.float64)
    _same(DecimalGrid(digits), x[np.isfinite(x)])


def test_realistic_decimals() -> None:
    rng = np.random.default_rng(7)
    x = np.round(rng.lognormal(3.0, 2.0, 500_000) * rng.choice([-1, 1], 500_000), 2)
    _same(DecimalGrid(5), x)


def test_nan_as_the_reference() -> None:
    grid = DecimalGrid(5)
    x = np.array([np.nan, -np.nan, 1.0, np.nan])
    _same(grid, x)
    assert compiled_encode(grid, x)[0] == grid.per_sign  # type: ignore[index]


def test_infinities_in_the_end_cells() -> None:
    """The reference refuses ±∞ (its corrections do not settle); the kernel puts them in
    the cells reaching them, the same as the largest float's."""
    grid = DecimalGrid(5)
    got = compiled_encode(grid, np.array([np.inf, -np.inf, MAX, -MAX]))
    assert got is not None
    assert got.tolist() == [grid.size - 1, 0, grid.size - 1, 0]
    both = compiled_at_value(grid, np.array([np.inf, -np.inf]))
    assert both is not None and both[1].tolist() == [0, 0]  # not their cell's value
    with pytest.raises(AssertionError), np.errstate(invalid="ignore"):
        grid.encode(np.array([np.inf]))


def test_encode_dispatch_same_either_side_of_the_threshold() -> None:
    grid = DecimalGrid(5)
    x = np.random.default_rng(3).normal(0.0, 1e3, JIT_VALUES + 5)
    x[::7] = np.round(x[::7], 1)  # values at their cell's value
    for n in (0, 10, JIT_VALUES - 1, JIT_VALUES + 5):
        got = encode(grid, x[:n])
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, grid.encode(x[:n]))
        cells, at = encode_at_value(grid, x[:n])
        np.testing.assert_array_equal(cells, got)
        np.testing.assert_array_equal(at, at_value_counts(grid, x[:n], got))
    assert int(at.sum()) > 0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=False), min_size=1,
                max_size=50),
       st.integers(min_value=1, max_value=8))
def test_hypothesis_floats(values: list[float], digits: int) -> None:
    _same(DecimalGrid(digits), np.array(values, dtype=np.float64))


def test_the_numpy_engine_encodes_a_large_column_compiled(monkeypatch) -> None:
    """The grouped path's quantile columns use the kernel from JIT_VALUES values, and
    the cells are the core's reference cells (cell_bins) all the same."""
    calls: list[int] = []

    def spy(grid: DecimalGrid, x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        calls.append(len(x))
        return compiled_at_value(grid, x)

    monkeypatch.setattr(decimal_grid_jit, "compiled_at_value", spy)
    gen = np.random.default_rng(5)
    n = 2 * JIT_VALUES  # a quarter in no listed group
    x = np.round(gen.normal(0, 30, n), 1)
    x[:50] = [0.0, -0.0, 5e-324, -5e-324, 1e300, -1e300, np.nan, np.inf] + [7.0] * 42
    group = gen.integers(-1, 3, n).astype(np.int32)
    spec = QUANTILES.spec([SEARCH_GRID])
    cells = grouped_statistics([x], group, 3, spec)
    assert calls and calls[0] >= JIT_VALUES
    for g in range(3):
        part = x[group == g]
        ref = cell_bins(part[np.isfinite(part)], spec.columns[0])
        got = cells[(g, 0)]
        for a, b in ((got.keys, ref.keys), (got.counts, ref.counts),
                     (got.at_value, ref.at_value)):
            np.testing.assert_array_equal(a, b)
