"""H's compiled search (dprect.core.intervals_jit, issue #42) gives the numpy path's bits:
every miss P(|L + r·Z_n| > h) (exponentials of the main range, of the subnormal band,
the undecided ones made by the caller; numpy's pairwise sum) and every H, resumed
searches included."""

from __future__ import annotations

import numpy as np
import pytest

from dprect.core import crmath
from dprect.core import intervals as iv

pytest.importorskip("numba")
ij = pytest.importorskip("dprect.core.intervals_jit")  # ImportError: no cache location

_ALPHA = 0.0495
#: count rates: the default plan's (183 law values), a small ε (46,709: the pairwise
#: sum's halving several levels deep), a mid one and a large one (a few values)
_RATES = (0.12999999987, 0.0005078124994921875, 0.02, 3.0)


def _numpy_miss(h: float, shifts: np.ndarray, p: np.ndarray, far: float) -> float:
    """mixed_quantile's miss on the numpy path."""
    terms = iv._laplace_miss(h, shifts)
    terms *= p
    return float(terms.sum()) + far


def _numpy_h(r: float, rate: float, alpha: float, monkeypatch: pytest.MonkeyPatch) -> float:
    with monkeypatch.context() as m:
        m.setattr(iv, "_bisection_kernel", lambda: None)
        return iv.mixed_quantile(r, rate, alpha)


def test_the_compiled_miss_is_the_numpy_miss_bit_for_bit() -> None:
    """At random r (10^-4 … 1.6·10^4) and h on each law: the same miss, bit for bit. The
    draws reach the subnormal band and leave some exponentials undecided (made as the
    caller makes them); power: a plain left-to-right sum of the terms differs from
    numpy's pairwise sum on some of them (so a compiled loop summing in order fails)."""
    rs = np.random.default_rng(43)
    tables = (*crmath._table(), crmath._POW2)
    band = undecided = ordered_differs = 0
    for rate in _RATES:
        z, p, far = iv._count_law(rate, _ALPHA)
        n2 = 2 * len(z)
        args, e = np.empty(n2), np.empty(n2)
        live, y = np.empty(n2), np.empty(n2)
        where, pending = np.empty(n2, dtype=np.int64), np.empty(n2, dtype=np.int64)
        ok = np.empty(n2, dtype=bool)
        rounds = 60 if len(z) > 10_000 else 3000
        for _ in range(rounds):
            shifts = float(10 ** rs.uniform(-4, 4.2)) * z
            h = float(rs.choice([0.0, float(shifts[len(shifts) // 2]),
                                 float(rs.uniform(0, 1.2)) * float(shifts[-1])
                                 + float(rs.uniform(0, 10))]))
            left = ij._exponentials(h, shifts, args, e, live, where, y, ok, pending,
                                    *tables)
            band += int(((args >= crmath.EXP_ZERO_BELOW) & (args < crmath._LOW)).sum())
            if left:
                undecided += left
                e[pending[:left]] = crmath.exp_array(args[pending[:left]])
            terms = iv._laplace_miss(h, shifts) * p
            assert ij._miss(h, shifts, p, far, e) == _numpy_miss(h, shifts, p, far), (rate, h)
            ordered_differs += float(np.cumsum(terms)[-1]) != float(terms.sum())
    assert band > 0 and undecided > 0 and ordered_differs > 0


def test_the_compiled_search_is_the_numpy_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """H at grid points of each law (and α's of the plans) by the compiled search equals
    the numpy path's; some searches stop for undecided exponentials and resume."""
    rs = np.random.default_rng(44)
    stops = 0
    real = ij.bisect

    def counted(*a: object) -> int:
        nonlocal stops
        left = real(*a)
        stops += left > 0
        return left

    monkeypatch.setattr(iv, "_bisection_kernel", lambda: counted)
    for rate in _RATES:
        for alpha in (_ALPHA, 0.05, 0.025000000000000022):
            count = 2 if rate < 0.01 else 40
            for i in [0, iv.GRID_POINTS - 1, *rs.integers(0, iv.GRID_POINTS, count)]:
                r = iv._grid_point(int(i))
                assert iv.mixed_quantile(r, rate, alpha) == _numpy_h(r, rate, alpha,
                                                                     monkeypatch), (r, rate)
    assert stops > 0


def test_mixed_quantile_takes_the_compiled_search_where_numba_loads() -> None:
    """Where this module loads, mixed_quantile's search is compiled (no numpy miss)."""
    assert iv._bisection_kernel() is ij.bisect
