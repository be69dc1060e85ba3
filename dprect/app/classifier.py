"""``dprect.RectangleClassifier``: one private rectangle per class as a scikit-learn
classifier (needs the ``sklearn`` extra).

``fit(X, y)`` is :func:`dprect.fit` with ``classes=``: one rectangle per class for ONE
charge of (ε, δ) (docs/privacy.md §12). Predictions use only the released rectangles.

The decision rule (:meth:`RectangleClassifier.decision_function`), per class c and row x,
with every feature's value read as its domain's grid index i_j ∈ [0, m_j) and
normalised to u_j = i_j / m_j (the public grid, so the unit of every axis is the same):

* x inside class c's rectangle: score 1 − w_c, where w_c ∈ (0, 1] is the rectangle's
  mean normalised width (1/d) Σ_j (hi_j − lo_j + 1)/m_j — a row in several rectangles
  goes to the NARROWEST one (the most specific class);
* x outside it: score −dist_c(x), the L1 distance in normalised units from x to the
  rectangle, Σ_j max(lo_j/m_j − u_j, u_j − hi_j/m_j, 0) — a row in no rectangle goes to
  the NEAREST one;
* an empty rectangle: score −(d + 1), below any distance (at most d), so its class is
  predicted only when every class's rectangle is empty (then the first listed class).

``predict`` is the arg-max of the scores (the first class on a tie). There is no
``predict_proba``: the scores are a geometric rule, not probabilities.

``classes``: the PUBLIC list of classes. Without it the classes are read from ``y``
(``numpy.unique``) — the set of labels present is itself a fact about the data, so that
is NOT differentially private; a :class:`PrivacyLeakWarning` says so (as scikit-learn's
own conventions need a classifier that learns its classes from ``y``). With it, labels of
``y`` outside the list are negatives of every class and never refuse the fit.

Input: numpy arrays, pandas DataFrames (column names become ``feature_names_in_`` and the
rectangles' feature names), lists. A NaN or ±inf feature is allowed: such rows are left out
of the fit (row-local, inside the guarantee), and in ``predict`` a NaN value lies in no
rectangle on its axis (it is at distance 1 from any interval on it). No value of X or y
refuses a fit: refusals come from shapes and types only.

``random_state`` seeds the noise for tests only: a seeded fit is NOT private.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from dprect.core.extras import require

require("sklearn", "dprect.RectangleClassifier")

from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402
from sklearn.utils.multiclass import check_classification_targets  # noqa: E402
from sklearn.utils.validation import check_is_fitted, validate_data  # noqa: E402

from dprect.core.classes import ClassesResult  # noqa: E402
from dprect.core.domains import Domain  # noqa: E402
from dprect.core.errors import ParameterError  # noqa: E402
from dprect.core.request import PlanRequest  # noqa: E402


class PrivacyLeakWarning(UserWarning):
    """A step of the classifier reads the data outside the privacy guarantee."""


def _unit(domain: Domain, values: np.ndarray) -> np.ndarray:
    """Each value's grid index over the grid size, in [0, 1); NaN stays NaN."""
    nan = np.isnan(values)
    index = domain.to_index(domain.encode(np.where(nan, 0.0, values))).astype(np.float64)
    out = index / float(domain.size)
    out[nan] = np.nan
    return out


def rectangle_scores(result: ClassesResult, X: np.ndarray) -> np.ndarray:
    """The (n, k) decision scores of the module docstring's rule."""
    n, d = X.shape
    first = result.results[0]
    units = [_unit(dom, X[:, j]) for j, dom in enumerate(first.domains)]
    scores = np.empty((n, len(result.results)))
    for c, r in enumerate(result.results):
        if r.empty:
            scores[:, c] = -(d + 1.0)
            continue
        dist = np.zeros(n)
        width = 0.0
        for j, dom in enumerate(r.domains):
            m = float(dom.size)
            lo, hi = r.lower_index[j] / m, r.upper_index[j] / m
            u = units[j]
            gap = np.maximum(np.maximum(lo - u, u - hi), 0.0)
            dist += np.where(np.isnan(u), 1.0, gap)
            width += (r.upper_index[j] - r.lower_index[j] + 1) / m
        scores[:, c] = np.where(dist > 0, -dist, 1.0 - width / d)
    return scores


class RectangleClassifier(ClassifierMixin, BaseEstimator):
    """One (ε, δ)-DP axis-aligned rectangle per class (module docstring: the rule).

    Parameters
    ----------
    epsilon, delta : the total budget of one fit (all classes: one charge); required
        (``fit`` refuses None, as :func:`dprect.fit` needs both).
    classes : the PUBLIC list of classes (recommended); None reads them from ``y``
        (NOT private: a :class:`PrivacyLeakWarning`).
    grid : the features' public domains as :func:`dprect.fit` takes them (None: the
        float order, no bounds needed).
    method, beta, accounting, shape, margin_law, neighbouring : as :func:`dprect.fit`.
    random_state : an int seeds the noise (tests only: NOT private); None: OS entropy.

    Attributes
    ----------
    classes_ : the classes, in the order of the scores' columns.
    result_ : the :class:`~dprect.core.classes.ClassesResult` (the rectangles).
    n_features_in_, feature_names_in_ : as scikit-learn sets them.
    """

    def __init__(self, epsilon: float | None = None, delta: float | None = None, *,
                 classes: Sequence[Any] | None = None, grid: Any = None,
                 method: str = PlanRequest.method.value, beta: float = PlanRequest.beta,
                 accounting: str = PlanRequest.accounting.value,
                 shape: str = PlanRequest.shape.value,
                 margin_law: str = PlanRequest.margin_law.value,
                 neighbouring: str = PlanRequest.neighbouring.value,
                 random_state: int | None = None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.grid = grid
        self.method = method
        self.beta = beta
        self.accounting = accounting
        self.shape = shape
        self.margin_law = margin_law
        self.neighbouring = neighbouring
        self.random_state = random_state

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN rows are dropped: no value refuses a fit
        tags.non_deterministic = self.random_state is None
        return tags

    def _read(self, X: Any, *, reset: bool) -> np.ndarray:
        return np.asarray(validate_data(self, X, reset=reset, dtype=np.float64,
                                        ensure_all_finite=False), dtype=np.float64)

    def fit(self, X: Any, y: Any) -> RectangleClassifier:
        """Learn one rectangle per class (one charge of (ε, δ))."""
        from dprect.app.api import fit, positive_mask

        if self.epsilon is None or self.delta is None:
            raise ParameterError("RectangleClassifier needs epsilon and delta (the budget)")
        X_arr, y_arr = validate_data(self, X, y, dtype=np.float64, ensure_all_finite=False,
                                     y_numeric=False)
        X_arr = np.asarray(X_arr, dtype=np.float64)
        y_arr = np.asarray(y_arr)
        if self.classes is None:
            warnings.warn("RectangleClassifier: classes read from y (the labels present); "
                          "that is NOT differentially private — give the public list "
                          "classes=[...]", PrivacyLeakWarning, stacklevel=2)
            check_classification_targets(y_arr)
            self.classes_ = np.unique(y_arr)
            code = np.searchsorted(self.classes_, y_arr)
        else:
            listed = list(self.classes)
            self.classes_ = np.asarray(listed)
            code = np.full(len(y_arr), -1)
            for i, c in enumerate(listed):  # another label: every class's negative
                code[positive_mask(y_arr, c.item() if isinstance(c, np.generic) else c)
                     & (code < 0)] = i
        names = ([str(n) for n in self.feature_names_in_]
                 if hasattr(self, "feature_names_in_") else None)
        self.result_ = fit(
            X_arr, code, grid=self.grid, features=names, seed=self.random_state,
            classes=list(range(len(self.classes_))), epsilon=self.epsilon,
            delta=self.delta, method=self.method, beta=self.beta,
            accounting=self.accounting, shape=self.shape, margin_law=self.margin_law,
            neighbouring=self.neighbouring)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """(n, k) scores (the rule in the module docstring); (n,) for two classes (the
        second class's score minus the first's), as scikit-learn expects."""
        check_is_fitted(self, "result_")
        scores = rectangle_scores(self.result_, self._read(X, reset=False))
        if len(self.classes_) == 2:
            return scores[:, 1] - scores[:, 0]
        if len(self.classes_) == 1:
            return scores[:, 0]
        return scores

    def predict(self, X: Any) -> np.ndarray:
        """The class of the best score (module docstring: inside and narrowest, else
        nearest)."""
        check_is_fitted(self, "result_")
        scores = rectangle_scores(self.result_, self._read(X, reset=False))
        return self.classes_[np.argmax(scores, axis=1)]


__all__ = ["PrivacyLeakWarning", "RectangleClassifier", "rectangle_scores"]
