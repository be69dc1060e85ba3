"""Two listed classes that y's labels read as one are refused naming y's own kind
(s51-clf item 2): for a boolean y, ``classes=[True, 1]`` was refused as "the same label
of a numeric column" (the list's own check names the first type of column it tries).
Now ``dprect.fit`` and ``RectangleClassifier`` say "boolean" — from y's dtype and the
list only, before anything is charged; a y of another kind keeps the list's check."""

from __future__ import annotations

import numpy as np
import pytest

import dprect

GRID = "0:1:64"


def _rows() -> np.ndarray:
    return np.random.default_rng(0).uniform(0, 1, (40, 2))


def _boolean_ys() -> list[object]:
    ys: list[object] = [np.array([True, False] * 20)]
    pd = pytest.importorskip("pandas")
    ys.append(pd.Series([True, False, None] * 13 + [True], dtype="boolean"))
    return ys


@pytest.mark.parametrize("classes", [[True, 1], [0, False], ["x", 1.0, True]])
def test_a_boolean_y_names_its_kind(classes: list[object]) -> None:
    for y in _boolean_ys():
        budget = dprect.PrivacyBudget()
        with pytest.raises(dprect.ParameterError) as info:
            dprect.fit(_rows(), y, classes=classes, grid=GRID, epsilon=1.0, delta=1e-6,
                       budget=budget)
        text = str(info.value)
        assert "boolean labels" in text and "numeric" not in text and "\n" not in text
        assert budget.charges == []


def test_the_classifier_names_a_boolean_ys_kind() -> None:
    pytest.importorskip("sklearn")
    budget = dprect.PrivacyBudget()
    clf = dprect.RectangleClassifier(1.0, 1e-6, classes=[True, 1], grid=GRID, budget=budget)
    with pytest.raises(dprect.ParameterError, match=r"y \(boolean labels\)"):
        clf.fit(_rows(), np.array([True, False] * 20))
    assert budget.charges == [] and not hasattr(clf, "result_")


def test_other_pairs_keep_the_lists_own_words() -> None:
    """A class listed twice stays "listed twice"; on a numeric y a pair is named
    numeric; an untyped y (a list) keeps the list's own check."""
    X = _rows()
    with pytest.raises(dprect.ParameterError, match="listed twice"):
        dprect.fit(X, np.arange(40), classes=[1, 1.0], grid=GRID, epsilon=1.0, delta=1e-6)
    with pytest.raises(dprect.ParameterError, match=r"y \(numeric labels\)"):
        dprect.fit(X, np.arange(40), classes=[1, True], grid=GRID, epsilon=1.0, delta=1e-6)
    with pytest.raises(dprect.ParameterError, match="numeric column"):
        dprect.fit(X, [True, False] * 20, classes=[True, 1], grid=GRID, epsilon=1.0,
                   delta=1e-6)
