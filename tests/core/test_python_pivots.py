"""The pivots a block leaves to Python (dprect.core.aggregates._python_pivots, issue #42)
are choose_pivot's, bit for bit, made once for each distinct row: rows are told apart by
their bits (±0, NaN), and every repeat of a row gets its first copy's pivot."""

from __future__ import annotations

import math
import random

import numpy as np

from dprect.core import aggregates


def _rows(gen: random.Random, n: int) -> list[tuple[float, float, float, float]]:
    """Cells as a block of tiny groups leaves them (few bounds around one centre, near
    their midpoint), with signed zeros, infinities, NaN and random others, repeated."""
    base = [(20.0, 50.0, 79.99999999999999, 0.065), (4.5, 7.25, 9.999999999999998, 0.065),
            (-0.0, -0.0, -0.0, 0.42), (0.0, 0.0, 0.0, 0.42), (-0.0, 0.0, 0.0, 0.42),
            (0.0, -0.0, 1.0, 1.0), (-1.0, -0.0, 0.0, 1.0), (-math.inf, 1.0, 2.0, 1.0),
            (1.0, math.nan, 2.0, 1.0), (2.0**-1070, 2.0**-1060, 2.0**-1050, 3.7)]
    for _ in range(40):
        lo = gen.uniform(-100, 100)
        hi = lo + gen.uniform(0, 100)
        base.append((lo, gen.choice([lo / 2 + hi / 2, gen.uniform(lo, hi)]), hi,
                     gen.choice([0.065, 0.42, 1e-9])))
    return [gen.choice(base) for _ in range(n)]


def test_python_pivots_are_choose_pivot_of_each_row() -> None:
    gen = random.Random(3)
    for count_eps in (0.01624999998375, 0.18, 1.0):
        rows = _rows(gen, 3000)
        got = aggregates._python_pivots(np.array(rows, dtype=np.float64), count_eps)
        assert got.dtype == np.float64 and got.shape == (len(rows),)
        for (lo, c, hi, e), p in zip(rows, got.tolist(), strict=True):
            assert p.hex() == aggregates.choose_pivot(lo, c, hi, count_eps, e).hex()


def test_rows_equal_as_floats_but_not_in_bits_are_apart() -> None:
    """(−0, −0, −0) and (0, 0, 0) compare equal as floats; their pivots differ in sign:
    rows deduplicated by value would give one the other's."""
    rows = np.array([(-0.0, -0.0, -0.0, 0.42), (0.0, 0.0, 0.0, 0.42)] * 3)
    got = aggregates._python_pivots(rows, 0.18)
    assert [math.copysign(1.0, p) for p in got.tolist()] == [-1.0, 1.0] * 3
