"""``RectangleClassifier(select_groups=True)``'s labels in y's type (s51-clf items 3, 4):

* a pandas Categorical y was refused as "untyped" (its numpy form is an object array);
  now it is read as its categories' values (scikit-learn's convention: ``classes_`` are
  the category values) — the same classes, rectangles and charge as y given as those
  values, for a seed;
* a pandas nullable ``Int64`` y (with a missing label, whose numpy form is float64) gave
  float ``classes_``; they keep the integer type, as scikit-learn keeps y's values.
"""

from __future__ import annotations

import numpy as np
import pytest

import dprect

pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")
pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")

SELECT = {"select_groups": True, "selection_epsilon": 0.5, "selection_delta": 1e-6}
GRID = "0:10:64"


def _data(first: object, second: object) -> tuple[np.ndarray, list[object]]:
    """Two labels of 400 rows each (kept surely at (0.5, 1e-6)) and 5 missing ones."""
    labels = [first] * 400 + [second] * 400 + [None] * 5
    i = np.arange(len(labels))
    X = np.column_stack([np.where(i < 400, 1.0, 6.0) + i % 3, (i % 7) + 0.5])
    return X, labels


def _fit(X: np.ndarray, y: object, budget: dprect.PrivacyBudget | None = None):
    return dprect.RectangleClassifier(2.0, 1e-6, grid=GRID, random_state=3, budget=budget,
                                      **SELECT).fit(X, y)


def test_a_categorical_y_of_strings_is_read_as_its_values():
    X, labels = _data("a", "b")
    budget = dprect.PrivacyBudget()
    clf = _fit(X, pd.Series(pd.Categorical(labels)), budget)
    plain = _fit(X, pd.Series(labels, dtype=object))  # the same labels as text
    assert clf.classes_.tolist() == plain.classes_.tolist() == ["a", "b"]
    assert clf.result_.to_json() == plain.result_.to_json()
    assert len(budget.charges) == 1
    assert clf.predict(X[[0, 500]]).tolist() == ["a", "b"]


def test_a_categorical_y_of_integers_keeps_integer_classes():
    X, labels = _data(1, 7)
    clf = _fit(X, pd.Series(pd.Categorical(labels)))
    assert clf.classes_.dtype.kind == "i" and clf.classes_.tolist() == [1, 7]
    plain = _fit(X, pd.Series(labels, dtype="Int64"))
    assert clf.result_.to_json() == plain.result_.to_json()


@pytest.mark.parametrize("dtype", ["Int64", "Int32", "UInt16"])
def test_a_nullable_integer_y_keeps_integer_classes(dtype: str):
    X, labels = _data(2, 40)
    y = pd.Series(labels, dtype=dtype)
    clf = _fit(X, y)
    assert clf.classes_.dtype == y.dtype.numpy_dtype
    assert clf.classes_.tolist() == [2, 40]
    assert clf.predict(X[[0, 500]]).dtype == y.dtype.numpy_dtype


def test_a_categorical_y_with_the_classes_listed_is_unchanged():
    """With a public list (no selection) a Categorical y already fitted as its values."""
    X, labels = _data("a", "b")
    clf = dprect.RectangleClassifier(2.0, 1e-6, grid=GRID, random_state=3,
                                     classes=["a", "b"]).fit(X, pd.Categorical(labels))
    assert clf.classes_.tolist() == ["a", "b"]
