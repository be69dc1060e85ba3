"""A block's float field written a field at a time (dprect.release.aggregate_record.
float_text_array, issue #42: Arrow's cast where it writes Python's digits, Python's
``repr`` elsewhere) is each value's text as the record's encoder writes the row's item —
repr of a finite float, "inf"/"-inf", null for NaN — checked against the C encoder's
``json.dumps`` over millions of random bit patterns, the plain range's floats and the
edges; and the split between the ways is the one PLAIN_FLOATS states."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dprect.release import aggregate_record
from dprect.release.aggregate_record import (
    _PROBE,
    EXPONENT_FLOATS,
    ONE_DIGIT_EXPONENTS,
    PLAIN_FLOATS,
    _json_scalar,
    float_text_array,
)


def float_texts(a: np.ndarray) -> list[str]:
    return list(float_text_array(a).to_pylist())


def _encoded(a: np.ndarray) -> list[str]:
    """The C encoder's text of each value as a row's item holds it (one ``json.dumps``
    of the list: the encoder's own float texts)."""
    text = json.dumps([_json_scalar(x) for x in a.tolist()])
    return [] if text == "[]" else text[1:-1].split(", ")


def _check(a: np.ndarray) -> None:
    want = _encoded(a)
    got = float_texts(a)
    if got != want:  # the first few values that differ, by their bits
        bad = [(hex(int(b)), g, w) for b, g, w in zip(a.view(np.uint64).tolist(), got, want,
                                                     strict=True) if g != w][:5]
        raise AssertionError(f"{len(bad)}+ texts differ: {bad}")


FEW = np.array([1.5, -0.0, 0.0, 48.0, 7.25, 1e-300, 5e-324, 79.99999999999999, -2.0,
                1e22, 1e16, 0.1])
ODD = np.array([math.inf, -math.inf, math.nan, -0.0, 0.0])


@pytest.mark.parametrize("n", [0, 1, 7, _PROBE, 5000])
@pytest.mark.parametrize("kind", ["few", "few with non-finite", "many", "many with non-finite",
                                  "many then few", "few then many"])
def test_float_texts_are_the_encoders(n: int, kind: str) -> None:
    """Either way (few distinct values: each written once, by its bits; many: each), the
    encoder's texts."""
    gen = np.random.default_rng(n + len(kind))
    many = gen.normal(size=n) * 10.0 ** gen.integers(-30, 30, n)
    few = gen.choice(FEW, n)
    a = {"few": few, "many": many,
         "few with non-finite": np.where(gen.random(n) < 0.1, gen.choice(ODD, n), few),
         "many with non-finite": np.where(gen.random(n) < 0.1, gen.choice(ODD, n), many),
         "many then few": np.where(np.arange(n) < _PROBE, many, few),
         "few then many": np.where(np.arange(n) < _PROBE, few, many)}[kind]
    _check(a)
    _check(a[::-1])  # a strided view as given


def test_random_bit_patterns() -> None:
    """Every float64 bit pattern alike (NaNs of every payload, subnormals, ±inf, every
    binade): 2·10^6 of them."""
    bits = np.random.default_rng(42).integers(0, 2**64, 2_000_000, dtype=np.uint64,
                                               endpoint=False)
    _check(bits.view(np.float64))


def test_the_plain_range_and_its_edges() -> None:
    """Where the ways meet (PLAIN_FLOATS', EXPONENT_FLOATS' and ONE_DIGIT_EXPONENTS'
    ends, both signs): random significands in every binade from 1e-12 to 1e18, short
    decimals (whose shortest text is a near tie among the candidates), whole numbers,
    and the neighbours of every power of ten there."""
    gen = np.random.default_rng(7)
    n = 1_000_000
    low, high = math.frexp(1e-12)[1], math.frexp(1e18)[1]
    exponents = gen.integers(low + 1022, high + 1023, n, dtype=np.uint64)
    bits = (exponents << np.uint64(52)) | gen.integers(0, 2**52, n, dtype=np.uint64)
    bits |= gen.integers(0, 2, n, dtype=np.uint64) << np.uint64(63)
    spread = bits.view(np.float64)
    places = 10.0 ** gen.integers(0, 8, n)
    decimals = np.round(gen.uniform(-1, 1, n) * 10.0 ** gen.integers(-5, 12, n)
                        * places) / places
    whole = np.floor(gen.uniform(-1, 1, n) * 10.0 ** gen.integers(0, 17, n))
    powers = np.array([float(f"1e{k}") for k in range(-12, 19)])
    edges = np.concatenate([powers, PLAIN_FLOATS, EXPONENT_FLOATS, ONE_DIGIT_EXPONENTS,
                            [2.0**53, 2.0**33, 0.5]])
    edges = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, np.inf)])
    edges = np.concatenate([edges, -edges, [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308,
                                            1.7976931348623157e308, math.inf, -math.inf,
                                            math.nan]])
    for a in (spread, decimals, whole, edges, np.repeat(edges, 4)):  # (the last: by
        _check(a)                                                  # distinct values)


def test_signed_zeros_keep_their_texts() -> None:
    """−0.0 == 0.0 as floats: each keeps its own text."""
    a = np.array([0.0, -0.0] * 400)
    assert float_texts(a) == ["0.0", "-0.0"] * 400  # (few distinct: by the bits)
    assert float_texts(np.arange(800) * np.where(np.arange(800) % 2, -0.0, 0.0)) == \
        ["0.0", "-0.0"] * 400


def test_python_writes_exactly_the_values_outside_the_plain_range(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Python's repr is taken for the values where neither the cast's layout nor its
    mending is repr's (1e-6 ≤ |x| < 1e-4, 1e10 ≤ |x| < 1e16, ±inf, NaN) only, and for
    none of a field of the others: a range set narrower than it can be fails here, one
    set wider fails the text checks above (or, were the layout check to catch it, here:
    every value Python's)."""
    assert aggregate_record._arrow_layout()  # (checked once: before the count)
    taken: list[int] = []
    python = aggregate_record._float_texts

    def counted(a: np.ndarray) -> list[str]:
        taken.append(len(a))
        return python(a)

    monkeypatch.setattr(aggregate_record, "_float_texts", counted)
    inside = np.array([1e-4, -1e-4, 0.0, -0.0, 1.0, 123.25, 9999999999.999998,
                       -9999999999.999998, np.nextafter(1e-6, 0), 1e-9, 1.5e-7, 5e-324,
                       1e16, -1.7976931348623157e308])  # the ranges' ends as literals
    outside = np.array([np.nextafter(1e-4, 0), 1e10, -1e10, 1e15, 9.999999999999998e15,
                        1e-5, 1e-6, -1e-6, math.nan, math.inf, -math.inf])
    assert float_text_array(inside).to_pylist() == _encoded(inside) and taken == []
    mixed = np.concatenate([inside, outside, inside])
    assert float_text_array(mixed).to_pylist() == _encoded(mixed)
    assert taken == [len(outside)]
