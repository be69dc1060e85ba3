"""dprect.core.crmath: the correctly rounded exp/exp2/log/log1p/expm1 against a reference
at 80 digits (and mpmath at 300 bits where installed), and exp_array equal to the scalar
exp element by element, in every stage."""

from __future__ import annotations

import decimal
import math
from decimal import Decimal

import numpy as np
import pytest

from dprect.core import crmath

_REF = decimal.Context(prec=80, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
_HUGE = decimal.Context(prec=2000, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def _ref(name: str, x: float) -> float:
    """The exact function at 80 significant digits, rounded once to a double."""
    d = Decimal(x)
    if name == "exp":
        v = _REF.exp(d)
    elif name == "exp2":
        v = _REF.power(Decimal(2), d)
    elif name == "log":
        v = _REF.ln(d)
    elif name == "log1p":
        v = _REF.ln(_HUGE.add(Decimal(1), d))
    else:  # expm1: e^x at 80 + (digits lost to the cancellation) digits
        wide = decimal.Context(prec=80 + max(0, -d.adjusted()), Emax=decimal.MAX_EMAX,
                               Emin=decimal.MIN_EMIN)
        v = wide.subtract(wide.exp(d), Decimal(1))
    return float(v)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.uint64)


def _sample(rng: np.random.Generator, n: int) -> np.ndarray:
    """exp's arguments: uniform over the normal range, near 0, near the table's nodes
    k·ln2/1024 (r ≈ 0) and half-way between them (|r| largest), and the edges."""
    k = rng.integers(-1_040_000, 1_040_000, n // 4)
    nodes = k * (math.log(2) / 1024)
    return np.concatenate([
        rng.uniform(-708.3, 709.7, n // 4), rng.uniform(-2, 2, n // 8),
        rng.uniform(-1e-5, 1e-5, n // 16) * 10.0 ** rng.integers(-12, 0, n // 16),
        nodes, nodes + math.log(2) / 2048 * rng.choice([-1.0, 1.0], len(nodes)),
        rng.uniform(-745.2, -708.3, 200), rng.uniform(709.7, 709.8, 200),
    ])


_EDGES = [0.0, -0.0, 5e-324, -5e-324, 1e-300, -1e-300, 2.0 ** -53, -2.0 ** -53, 2.0 ** -54,
          -2.0 ** -54, 2.0 ** -53 * (1 - 2.0 ** -53), 1.0, -1.0, 0.5, math.log(2),
          709.782712893384, math.nextafter(709.782712893384, math.inf), 709.78, 709.79,
          -708.39, -708.3964185322641, -745.1332191019411, -745.1332191019412, -745.14,
          -744.44007192138126, -1e10, 1e10, math.inf, -math.inf, math.nan]


def test_exp_is_correctly_rounded_at_the_edges_and_on_a_sample() -> None:
    rng = np.random.default_rng(42)
    xs = [*_EDGES, *_sample(rng, 800).tolist()]
    for x in xs:
        got = crmath.exp(x)
        want = math.nan if math.isnan(x) else (
            math.inf if x == math.inf else 0.0 if x == -math.inf else _ref("exp", x))
        assert _bits(np.array([got])) == _bits(np.array([want])), x
    assert crmath.exp(1.0) == math.e and crmath.exp(709.782712893384) < math.inf
    assert crmath.exp(math.nextafter(709.782712893384, math.inf)) == math.inf
    assert crmath.exp(-745.1332191019411) == 5e-324 and crmath.exp(-745.1332191019412) == 0.0


def test_log_log1p_expm1_exp2_are_correctly_rounded() -> None:
    rng = np.random.default_rng(7)
    positive = np.concatenate([10.0 ** rng.uniform(-300, 300, 300), rng.uniform(0.5, 2, 200),
                               1.0 + rng.uniform(-1e-12, 1e-12, 50),
                               [5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                                math.nextafter(1.0, 0.0), math.nextafter(1.0, 2.0), 2.0]])
    for x in positive.tolist():
        assert crmath.log(x) == _ref("log", x), x
    assert crmath.log(1.0) == 0.0 and crmath.log(2.0) == 0.6931471805599453
    assert crmath.log(0.0) == -math.inf and math.isnan(crmath.log(-1.0))
    small = np.concatenate([rng.uniform(-1, 1, 200), rng.uniform(-1e-9, 1e-9, 50),
                            rng.uniform(-2e-10, 2e-10, 50), rng.uniform(-1e-20, 1e-20, 20),
                            [1e-10, -1e-10, math.nextafter(1e-10, 0.0), 1e-300, -1e-300,
                             5e-324, 0.5, -0.5, -0.9999999999999999, 3.0, 700.0]])
    for x in small.tolist():
        assert crmath.log1p(x) == _ref("log1p", x), x
        assert crmath.expm1(x) == _ref("expm1", x), x
    for x in [*rng.uniform(-100, 100, 100).tolist(), -99.9, -40.0, 30.0, 709.0]:
        assert crmath.expm1(x) == _ref("expm1", x), x
    assert crmath.expm1(-100.5) == -1.0 and crmath.expm1(711.0) == math.inf
    assert crmath.log1p(-1.0) == -math.inf and math.isnan(crmath.log1p(-2.0))
    for x in [*rng.uniform(-1070, 1023, 200).tolist(), *(np.arange(-64, 64) / 64).tolist()]:
        assert crmath.exp2(x) == _ref("exp2", x), x
    assert crmath.exp2(-1074.0) == 5e-324 and crmath.exp2(1024.0) == math.inf
    for r in (2, 4, 8, 64):
        steps = crmath.octave_steps(r)
        for i in range(-3 * r, 3 * r):
            assert math.ldexp(steps[i % r], i // r) == crmath.exp2(i / r)


def test_against_mpmath() -> None:
    """An independent reference (mpmath at 300 bits, rounded to nearest by mpf's float) —
    on normal results: mpf's float rounds to 53 bits before a subnormal's rounding (at
    exp(−710.439298934299) it is one subnormal step off; the decimal reference is not)."""
    mpmath = pytest.importorskip("mpmath")
    rng = np.random.default_rng(3)
    with mpmath.workprec(300):
        for x in _sample(rng, 400).tolist():
            if x < -708.39:
                continue
            assert crmath.exp(x) == float(mpmath.exp(mpmath.mpf(x))), x
        for x in (10.0 ** rng.uniform(-300, 300, 200)).tolist():
            assert crmath.log(x) == float(mpmath.log(mpmath.mpf(x))), x
        for x in rng.uniform(-0.9, 3, 100).tolist():
            assert crmath.log1p(x) == float(mpmath.log1p(mpmath.mpf(x))), x
            assert crmath.expm1(x) == float(mpmath.expm1(mpmath.mpf(x))), x


def test_exp_array_is_the_scalar_exp_element_by_element() -> None:
    rng = np.random.default_rng(11)
    x = np.concatenate([_sample(rng, 40_000), np.array(_EDGES)])
    want = np.array([crmath.exp(v) for v in x.tolist()])
    got = crmath.exp_array(x)
    assert got.dtype == np.float64 and got.shape == x.shape
    assert np.array_equal(_bits(got), _bits(want))
    # shapes, an empty array, a scalar, a list, a non-contiguous view
    assert crmath.exp_array(np.zeros((0,))).shape == (0,)
    assert crmath.exp_array(0.5) == crmath.exp(0.5)
    two = x[:600].reshape(20, 30)
    assert np.array_equal(_bits(crmath.exp_array(two)), _bits(want[:600].reshape(20, 30)))
    assert np.array_equal(_bits(crmath.exp_array(x[::7])), _bits(want[::7]))
    assert np.array_equal(crmath.exp_array([0.0, 1.0]), [1.0, math.e])


def test_every_stage_of_exp_array_is_taken_and_exact(monkeypatch) -> None:
    """Stage 2 (double-double) decides ~0.5% of the elements on its own; stage 3 (decimal)
    is rare at the real bounds, so it is forced here by a stage-2 bound of 2^-40 (about
    every stage-2 element, and many subnormal results, then go on to stage 3): the same
    values either way."""
    rng = np.random.default_rng(5)
    x = _sample(rng, 8000)
    want = np.array([crmath.exp(v) for v in x.tolist()])
    main = x[(x >= -708.39) & (x <= 709.78)]
    kf, j, _ = crmath._reduce(main)
    _, ok = crmath._fast(main, kf, j)
    assert 0 < (~ok).sum() < 0.02 * len(main)  # stage 2 taken
    calls: list[float] = []
    real = crmath.exp

    def counted(v: float) -> float:
        calls.append(v)
        return real(v)

    monkeypatch.setattr(crmath, "exp", counted)
    monkeypatch.setattr(crmath, "_SLOW_BOUND", 2.0 ** -40)
    monkeypatch.setattr(crmath, "_KERNEL_FROM", 1 << 62)  # numpy's stages (numba froze
    # the bounds into the compiled ones)
    assert np.array_equal(_bits(crmath.exp_array(x)), _bits(want))
    assert sum(-708.39 <= v <= 709.78 for v in calls) > 10  # stage 3 taken
    assert sum(-745.14 <= v < -708.39 for v in calls) > 10  # and the subnormals' stage 3


def test_the_fast_bound_is_needed(monkeypatch) -> None:
    """Power check of the equality test: with stage 1's bound set below its true error
    (2^-70 instead of 2^-61) some elements are taken as decided that are not, and the
    comparison with the scalar exp catches them (numpy's stages; the compiled ones are
    compared with them below)."""
    rng = np.random.default_rng(13)
    x = rng.uniform(-700, 700, 60_000)
    want = np.array([crmath.exp(v) for v in x.tolist()])
    assert np.array_equal(crmath.exp_array(x), want)
    monkeypatch.setattr(crmath, "_FAST_BOUND", 2.0 ** -70)
    monkeypatch.setattr(crmath, "_KERNEL_FROM", 1 << 62)  # numpy's stages (as above)
    assert not np.array_equal(crmath.exp_array(x), want)


def test_the_bounds_hold_with_a_margin() -> None:
    """Stage 1's value and residual, and stage 2's, are within a quarter of their stated
    relative bound of e^x (reference at 60 digits) on a sample — the Ziv tests' margins."""
    rng = np.random.default_rng(17)
    x = _sample(rng, 3000)
    x = x[(x >= -708.39) & (x <= 709.78)]
    kf, j, e = crmath._reduce(x)
    ctx = decimal.Context(prec=60, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
    for stage, bound in ((crmath._fast_parts(x, kf, j), crmath._FAST_BOUND),
                         (crmath._slow_parts(x, kf, j, *crmath._table()), crmath._SLOW_BOUND)):
        y, res = stage
        worst = 0.0
        for v, k, a, b in zip(x.tolist(), e.tolist(), y.tolist(), res.tolist(), strict=True):
            true = ctx.exp(Decimal(v)) * ctx.power(Decimal(2), -k)
            worst = max(worst, abs(float((Decimal(a) + Decimal(b) - true) / true)))
        assert worst < bound / 4, (bound, math.log2(worst))



def test_the_compiled_stages_give_numpys_bits() -> None:
    """Where numba loads, stages 1 and 2 run compiled (exp_jit.fast_loop): the same values
    as the numpy stages on a million elements (and both the scalar exp's on a sample)."""
    pytest.importorskip("numba")
    if crmath._kernel() is None:
        pytest.skip("numba has no cache location here: the numpy stages only")
    rng = np.random.default_rng(23)
    x = np.concatenate([_sample(rng, 200_000), rng.uniform(-708.39, 709.78, 800_000)])
    compiled = crmath.exp_array(x)
    kept = crmath._KERNEL_FROM
    try:
        crmath._KERNEL_FROM = 1 << 62
        plain = crmath.exp_array(x)
    finally:
        crmath._KERNEL_FROM = kept
    assert np.array_equal(_bits(compiled), _bits(plain))
    some = x[::997]
    assert np.array_equal(_bits(compiled[::997]), _bits([crmath.exp(v) for v in some.tolist()]))
