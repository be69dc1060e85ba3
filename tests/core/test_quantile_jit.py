"""A cell's laws' sampler tables compiled (:func:`dprect.core.quantile_jit.laws_tables`)
are the Python assembly's (:func:`dprect.core.quantile_draws._tables` of each law's
:func:`~dprect.core.interior_point.law_buckets`), array for array: over random unimodal
laws of one bucket, of a few and of the whole cut (c·kmax past 140), few pieces and many,
grids up to ~10^9 points, rates whose denominators pass 2^62 and 2^64 — and a wrong
constant in the compiled derivation (the exp table's entries, the share, the ceiling of
the lower end) is seen."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

from dprect.core import quantile_draws
from dprect.core.interior_point import FIRST_PRECISION, law_buckets


def _random_laws(gen: random.Random) -> tuple[np.ndarray, np.ndarray, list[Fraction], int]:
    """Laws sharing one set of pieces: a few to a few hundred pieces, sizes 1 … 10^8,
    each law's depths unimodal (its peak anywhere, plateaus and ties), rates from
    one bucket to past the cut."""
    pieces = gen.choice([1, 2, 3, 5, 9, 40, 64, 65, 200, 700])
    sizes = [gen.choice([1, 1, 2, gen.randrange(1, 10**3), gen.randrange(1, 10**8)])
             for _ in range(pieces)]
    m = sum(sizes)
    starts = np.cumsum([0, *sizes[:-1]]).astype(np.uint64)
    top = gen.choice([0, 1, 7, 10**3, 10**6, 10**12, 2**61])
    rows = []
    for _ in range(gen.randrange(1, 10)):
        peak = gen.randrange(pieces)
        rise = sorted(gen.randrange(0, top + 1) for _ in range(peak))
        fall = sorted((gen.randrange(0, top + 1) for _ in range(pieces - peak - 1)),
                      reverse=True)
        if gen.random() < 0.3:  # ties: a plateau at the top
            rise = [top if gen.random() < 0.5 else x for x in rise]
        rows.append([*sorted(rise), top, *fall])
    depths = np.array(rows, dtype=np.int64)
    rates = []
    for _ in rows:
        kind = gen.randrange(5)
        if kind == 0:  # one bucket
            rates.append(Fraction(1, max(top, 1) + gen.randrange(1, 10)))
        elif kind == 1:  # a few buckets
            rates.append(Fraction(gen.randrange(1, 50), max(top, 1) * gen.randrange(1, 4)))
        elif kind == 2:  # past the cut
            rates.append(Fraction(gen.randrange(1, 1000), gen.randrange(1, 100)))
        elif kind == 3:  # a float's rate: the denominator a large power of two
            rates.append(Fraction(gen.uniform(1e-9, 1.0)) / (2 * gen.randrange(1, 101)))
        else:  # a denominator past 2^64
            rates.append(Fraction(gen.randrange(1, 2**61), gen.randrange(2**64, 2**95)))
    return starts, depths, rates, m


def _python(starts: np.ndarray, depths: np.ndarray, rates: list[Fraction], m: int
            ) -> tuple[Any, ...]:
    found = []
    for j, r in enumerate(rates):
        row = depths[j]
        found.append((int(row.max()), r.numerator, r.denominator,
                      law_buckets(starts, row, m, int(row.max()), int(row.argmax()),
                                  r.numerator, r.denominator, FIRST_PRECISION)))
    return quantile_draws._tables(found, starts, depths)


def _compiled(starts: np.ndarray, depths: np.ndarray, rates: list[Fraction], m: int,
              **change: Any) -> tuple[Any, ...]:
    from dprect.core import quantile_jit

    lo, hi = quantile_jit.exp_tables()
    if "lo" in change:
        lo = change["lo"](lo)
    nums = np.array([r.numerator for r in rates], dtype=np.int64)
    dens = np.array([(r.denominator >> 64, r.denominator & (2**64 - 1)) for r in rates],
                    dtype=np.uint64)
    status, laws, rows, intervals = quantile_jit.laws_tables(
        starts.astype(np.int64), depths, nums, dens, np.int64(m), lo, hi, 64,
        change.get("share", quantile_draws.RARE_BITS))
    assert status == quantile_jit.DONE
    return laws, rows, intervals


def _equal(got: tuple[Any, ...], want: tuple[Any, ...]) -> bool:
    return all(np.array_equal(a, b) and a.dtype == b.dtype
               for a, b in zip(got, (want[2], want[4], want[5]), strict=True))


def test_the_compiled_tables_are_the_python_tables() -> None:
    """1,500 random sets of laws: the same laws, rows and intervals, integer for integer
    (and every kind of law met: one bucket, several, the cut, intervals kept)."""
    gen = random.Random(41)
    kinds = {"single": 0, "several": 0, "cut": 0}
    for k in range(1500):
        starts, depths, rates, m = _random_laws(gen)
        want = _python(starts, depths, rates, m)
        got = _compiled(starts, depths, rates, m)
        assert _equal(got, want), k
        for j, r in enumerate(rates):
            n_max = r.numerator * int(depths[j].max()) // r.denominator
            kinds["single" if n_max == 0 else "cut" if n_max > 140 else "several"] += 1
    assert min(kinds.values()) > 300, kinds


def test_a_wrong_constant_is_seen() -> None:
    """The comparison has power: an exp-table entry 2^−14 off, the share one bit off —
    each changes some table."""
    gen = random.Random(42)
    cases = [_random_laws(gen) for _ in range(300)]

    def one_off(t: np.ndarray) -> np.ndarray:
        t = t.copy()
        t[1, 1] += np.uint64(1 << 50)  # e^−1·2^128 plus 2^114
        return t

    for change in ({"lo": one_off}, {"share": quantile_draws.RARE_BITS - 1}):
        assert not all(_equal(_compiled(*c, **change), _python(*c)) for c in cases), change
