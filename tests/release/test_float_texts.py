"""A block's float field written a field at a time (dprect.release.aggregate_record.
float_texts, issue #42) is each value's text as the record's encoder writes the row's
item — repr of a finite float, "inf"/"-inf", null for NaN — whichever way it takes (few
distinct values: each written once; many: value by value), values told apart by bits."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dprect.release.aggregate_record import _PROBE, _json_scalar, float_texts


def _encoded(a: np.ndarray) -> list[str]:
    """The C encoder's text of each value as a row's item holds it."""
    return [json.dumps(_json_scalar(x)) for x in a.tolist()]


FEW = np.array([1.5, -0.0, 0.0, 48.0, 7.25, 1e-300, 5e-324, 79.99999999999999, -2.0,
                1e22, 1e16, 0.1])
ODD = np.array([math.inf, -math.inf, math.nan, -0.0, 0.0])


@pytest.mark.parametrize("n", [0, 1, 7, _PROBE, 5000])
@pytest.mark.parametrize("kind", ["few", "few with non-finite", "many", "many with non-finite",
                                  "many then few", "few then many"])
def test_float_texts_are_the_encoders(n: int, kind: str) -> None:
    gen = np.random.default_rng(n + len(kind))
    many = gen.normal(size=n) * 10.0 ** gen.integers(-30, 30, n)
    few = gen.choice(FEW, n)
    a = {"few": few, "many": many,
         "few with non-finite": np.where(gen.random(n) < 0.1, gen.choice(ODD, n), few),
         "many with non-finite": np.where(gen.random(n) < 0.1, gen.choice(ODD, n), many),
         "many then few": np.where(np.arange(n) < _PROBE, many, few),
         "few then many": np.where(np.arange(n) < _PROBE, few, many)}[kind]
    assert float_texts(a) == _encoded(a)
    assert float_texts(a[::-1]) == _encoded(a[::-1])  # a strided view as given


def test_signed_zeros_keep_their_texts() -> None:
    """−0.0 == 0.0 as floats: values made distinct by value would write one as the
    other."""
    a = np.array([0.0, -0.0] * 400)
    assert float_texts(a) == ["0.0", "-0.0"] * 400
