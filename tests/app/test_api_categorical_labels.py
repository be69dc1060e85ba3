"""``dprect.fit`` reads a pandas Categorical y as its categories' values, as the classifier
does (s51-labels item 2, the helper moved down to ``dprect.app.api.category_values``): with
``select_groups=True`` it was refused as "untyped" (its numpy form is an object array); now
it finds the same classes, rectangles and charge as y given as those values, for a seed —
text categories as text, integer ones as integers."""

from __future__ import annotations

import numpy as np
import pytest

import dprect

pd = pytest.importorskip("pandas")
pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")

SELECT = {"select_groups": True, "selection_epsilon": 0.5, "selection_delta": 1e-6}
GRID = "0:10:64"


def _data(first: object, second: object) -> tuple[np.ndarray, list[object]]:
    """Two labels of 400 rows each (kept surely at (0.5, 1e-6)) and 5 missing ones."""
    labels = [first] * 400 + [second] * 400 + [None] * 5
    i = np.arange(len(labels))
    X = np.column_stack([np.where(i < 400, 1.0, 6.0) + i % 3, (i % 7) + 0.5])
    return X, labels


def _fit(X: np.ndarray, y: object, budget: dprect.PrivacyBudget | None = None, **kw):
    return dprect.fit(X, y, grid=GRID, epsilon=2.0, delta=1e-6, seed=3, budget=budget,
                      **kw)


@pytest.mark.parametrize(("pair", "plain_dtype"), [(("a", "b"), object), ((1, 7), "Int64")])
def test_a_categorical_y_selects_its_values(pair: tuple[object, object],
                                            plain_dtype: object):
    X, labels = _data(*pair)
    budget = dprect.PrivacyBudget()
    got = _fit(X, pd.Series(pd.Categorical(labels)), budget, **SELECT)
    plain = _fit(X, pd.Series(labels, dtype=plain_dtype), **SELECT)
    assert sorted(got.classes) == sorted(plain.classes) == sorted(str(v) for v in pair)
    assert got.to_json() == plain.to_json()
    assert len(budget.charges) == 1


def test_a_categorical_y_reads_its_values_for_a_label_and_a_list():
    X, labels = _data(1, 7)
    cat = pd.Categorical(labels)  # a bare Categorical as well as a Series of one
    one = _fit(X, cat, positive_label=7)
    assert one.to_json() == _fit(X, pd.Series(labels, dtype="Int64"),
                                 positive_label=7).to_json()
    with pytest.raises(dprect.ParameterError, match=r"y \(numeric labels\)"):
        _fit(X, pd.Series(cat), classes=[1, 1.0, True])


def test_a_categorical_y_of_text_refuses_a_numeric_label():
    """Text categories are text labels: the default positive label 1 is refused (from the
    dtype), as for y given as its text — it matched no row, silently, as an untyped y."""
    X, labels = _data("a", "b")
    with pytest.raises(dprect.ParameterError, match="holds strings"):
        _fit(X, pd.Categorical(labels))
    assert _fit(X, pd.Categorical(labels), positive_label="b").to_json() == \
        _fit(X, pd.Series(labels, dtype=object), positive_label="b").to_json()
