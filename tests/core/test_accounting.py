"""The accountant against hand-computed values."""

from __future__ import annotations

import math

import pytest

from dprect import ParameterError
from dprect.core.accounting import (
    ADD_REMOVE,
    Guarantee,
    paper_bound,
    refined_azuma,
    refined_pure,
    replace_one,
)


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)


def test_refined_pure():
    g = refined_pure(0.1, k=5, q=0.5, rounds=20)
    assert close(g.epsilon, 0.5) and close(g.delta, 0.03125)
    assert g.neighbouring == "add-remove" and "pure" in g.bound and "k=5" in g.bound


def test_refined_pure_k_at_least_rounds_is_plain_composition():
    g = refined_pure(0.1, k=50, q=0.3, rounds=8)
    assert close(g.epsilon, 0.8) and g.delta == 0.0


def test_refined_azuma():
    g = refined_azuma(0.1, k=4, q=0.5, rounds=10, delta2=1e-6)
    expected = 4 * 0.01 / 2 + 0.1 * math.sqrt(8 * math.log(1e6))  # 1.0713...
    assert close(g.epsilon, expected) and close(g.delta, 0.0625 + 1e-6)
    assert "Azuma" in g.bound


def test_paper_bound():
    g = paper_bound(0.01, delta=1e-6, rounds=8)
    assert close(g.epsilon, 70 * 0.01 * math.log(1e6)) and close(g.delta, 10e-6)
    assert "paper" in g.bound
    with pytest.raises(ParameterError, match="e\\^-2"):
        paper_bound(0.01, delta=0.2, rounds=8)


def test_replace_one_by_group_privacy():
    eps = 0.5 + 2 * math.sqrt(0.5 * math.log(1e6))
    g = replace_one(Guarantee(eps, 1e-6, ADD_REMOVE, "zCDP composition of 100 rounds"))
    assert close(g.epsilon, 2 * eps) and close(g.delta, (1 + math.exp(eps)) * 1e-6)
    assert g.neighbouring == "replace-one"


@pytest.mark.parametrize("call,match", [
    (lambda: refined_pure(0, k=1, q=0.5, rounds=2), "epsilon"),
    (lambda: refined_pure(1, k=0, q=0.5, rounds=2), "k"),
    (lambda: refined_pure(1, k=1, q=1.5, rounds=2), "q"),
    (lambda: refined_azuma(1, k=1, q=0.5, rounds=2, delta2=0), "delta2"),
])
def test_bad_accounting_parameters(call, match):
    with pytest.raises(ParameterError, match=match):
        call()
