"""The decimal grid of the quantiles (dprect/core/decimal_grid.py; docs/privacy.md §11a)."""

from __future__ import annotations

import numpy as np
import pytest

from dprect.core.decimal_grid import DecimalGrid
from dprect.core.errors import ParameterError


def _floats() -> np.ndarray:
    rng = np.random.default_rng(0)
    wide = rng.normal(0, 1, 20000) * 10.0 ** rng.integers(-310, 308, 20000)
    typed = np.array([float(f"{m}e{e}") for m, e in zip(rng.integers(-99999, 99999, 3000),
                                                       rng.integers(-30, 25, 3000),
                                                       strict=True)])
    edge = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-300, -1e-300, 9.999e299, 1e300,
                     np.finfo(float).max, -np.finfo(float).max, 0.31, -2.0, 2007.0])
    return np.concatenate([wide, typed, edge, np.nextafter(typed, np.inf),
                           np.nextafter(typed, -np.inf)])


@pytest.mark.parametrize("digits", [2, 5])
def test_a_floats_value_is_its_cells_smallest_magnitude(digits: int) -> None:
    """v(cell(x)) ≤ x < v(next cell) for x ≥ 0, and v(previous) < x ≤ v(cell(x)) for
    x < 0: every float lies in the cell whose value it is or lies beyond, from zero."""
    g = DecimalGrid(digits)
    x = _floats()
    i = g.encode(x)
    v = g.values(i)
    up = g.values(np.minimum(i + 1, g.size - 1))
    down = g.values(np.maximum(i - 1, 0))
    neg = g.negative(i)
    assert np.array_equal(neg, x < 0)
    pos_ok = (v <= x) & ((x < up) | (i == g.size - 1))
    neg_ok = (x <= v) & ((down < x) | (i == 0))
    assert np.all(np.where(neg, neg_ok, pos_ok))


def test_values_increase_and_typed_decimals_are_values() -> None:
    g2 = DecimalGrid(2)
    assert np.all(np.diff(g2.values(np.arange(g2.size))) > 0)
    g = DecimalGrid(5)
    sample = g.values(np.arange(0, g.size, 101))
    assert np.all(np.diff(sample) > 0)
    typed = np.array([0.31, 1013.2, -29.921, -2.0, 2007.0, 65000.0, 1.08e-5, 99999.0,
                      -0.0001])
    assert np.array_equal(g.values(g.encode(typed)), typed)


def test_every_typed_short_decimal_is_a_value() -> None:
    """Decimals of ≤ 5 significant digits as a parser reads them ("0.31", "1013.2"),
    across 10^−17 … 10^22 (|k| ≤ 22), are cell values exactly: f is correctly rounded there."""
    rng = np.random.default_rng(5)
    m = rng.integers(1, 100_000, 50_000)
    e = rng.integers(-17, 18, 50_000)
    typed = np.array([float(f"{a}e{b}") for a, b in zip(m, e, strict=True)])
    typed = np.concatenate([typed, -typed])
    g = DecimalGrid(5)
    assert np.array_equal(g.values(g.encode(typed)), typed)


def test_bad_digits_refused() -> None:
    for d in (0, 9, True, 2.0):
        with pytest.raises(ParameterError):
            DecimalGrid(d)  # type: ignore[arg-type]
