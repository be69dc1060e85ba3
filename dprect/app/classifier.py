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
own conventions need a classifier that learns its classes from ``y``). Such a ``y`` must
hold labels of one kind that sort (numbers, booleans or strings, of a label dtype): a None,
NaN or ±inf label, labels of two kinds (strings and numbers) or another dtype (complex,
bytes, dates) is refused by one :class:`InputDataError` naming y's dtype and its labels'
kinds, never a value; a continuous ``y`` gets scikit-learn's own "Unknown label type"
error. With the list, labels of ``y`` outside it are negatives of every class and never
refuse the fit.

Input: numpy arrays, pandas DataFrames (column names become ``feature_names_in_`` and the
rectangles' feature names), lists — under :func:`dprect.fit`'s rules. X is read as
:func:`dprect.fit` reads it (an untyped table — a list, an object array, a DataFrame's
object column — value by value, :mod:`dprect.core.reading`: a string or None is NaN, a
number beyond float64 ±inf); y keeps its own type (a pandas Series its dtype), which decides
how labels compare with the classes — a pandas Categorical y is read as its categories'
values (scikit-learn's convention), integer and boolean categories in pandas' nullable
dtype —, and the class list gets :func:`dprect.fit`'s check
(:func:`dprect.core.labels.check_classes`). A NaN or ±inf feature is allowed: such rows are
left out of the fit (row-local, inside the guarantee), and in ``predict`` a NaN value lies
in no rectangle on its axis (it is at distance 1 from any interval on it). A NaN, ±inf or
unlisted label is a negative of every class, and an empty X gives empty rectangles. With
``classes`` (or ``select_groups``) no value of X or y refuses a fit, and no message quotes
a value or a count: refusals come from
shapes, types and parameters only. The plan is :func:`dprect.fit`'s, re-derived by the
independent check (:mod:`dprect.core.guarantee_check`) before anything is read.

**Every fit is a release** (docs/privacy.md §14). ``budget=`` (a
:class:`~dprect.release.budget.PrivacyBudget`) is charged the fit's (ε, δ) before any noise
is drawn and refuses a fit past its cap; ``clone`` keeps it by reference, so the fits of
``cross_val_score``, ``GridSearchCV`` and the rest are all charged to it. A fit on data
byte-identical to an earlier released one (kept as a keyed hash in the budget, or in the
estimator without one; a refused or failed fit's is forgotten) warns with
:class:`PrivacyBudgetWarning`, or is refused under ``same_data="refuse"``.

``random_state`` seeds the noise for tests only: a seeded fit is NOT private.
"""

from __future__ import annotations

import math
import numbers
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from dprect.core.extras import require

require("sklearn", "dprect.RectangleClassifier")

from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402
from sklearn.exceptions import DataConversionWarning  # noqa: E402
from sklearn.utils.multiclass import check_classification_targets  # noqa: E402
from sklearn.utils.validation import (  # noqa: E402
    _check_feature_names,
    _check_n_features,
    check_is_fitted,
)

from dprect.core.classes import ClassesResult  # noqa: E402
from dprect.core.domains import Domain  # noqa: E402
from dprect.core.errors import InputDataError, ParameterError  # noqa: E402
from dprect.core.labels import check_classes  # noqa: E402
from dprect.core.request import PlanRequest  # noqa: E402
from dprect.release.budget import (  # noqa: E402
    PrivacyBudget,
    PrivacyBudgetWarning,
    keyed_digest,
)

T = TypeVar("T")


class PrivacyLeakWarning(UserWarning):
    """A step of the classifier reads the data outside the privacy guarantee."""


def _class_array(listed: list[Any]) -> np.ndarray:
    """The listed classes as ``classes_``: numpy's own array when it keeps every class as
    given (all numbers, all strings, all booleans), else an object array (``[1, "a"]``
    would otherwise become two strings)."""
    arr = np.asarray(listed)
    bools = [isinstance(c, bool | np.bool_) for c in listed]
    if arr.dtype.kind == "b" or (arr.dtype.kind in "iuf" and not any(bools)) or (
            arr.dtype.kind == "U" and all(isinstance(c, str) for c in listed)):
        return arr
    out = np.empty(len(listed), dtype=object)
    out[:] = listed
    return out


def _label_dtype(y: Any, y_arr: np.ndarray) -> np.dtype:
    """The numpy dtype of y's labels, from its type: a pandas nullable dtype's own
    (``Int64`` → int64, ``boolean`` → bool; numpy's conversion of a column with a
    missing value gives float64 or object), else the array's."""
    dtype = getattr(y, "dtype", None)
    if dtype is not None and not isinstance(dtype, np.dtype):
        own = getattr(dtype, "numpy_dtype", None)
        if isinstance(own, np.dtype):
            return own
    return y_arr.dtype


def _whole_number(name: str) -> int:
    """A kept class's name (its label's text) as the integer an integer y holds: the
    text itself when it is one, else its float's value (a name of a float label)."""
    try:
        return int(name)
    except ValueError:
        return int(float(name))


def _kept_classes(names: Sequence[str], y: Any) -> np.ndarray:
    """The classes a private selection kept (their names, :func:`label_key` text) as
    labels of y's type (a numeric y's dtype — a pandas ``Int64`` y's int64 too —,
    booleans, strings): ``classes_``, as scikit-learn keeps y's values. An integer y's
    classes are read from their text as integers (never through a float). Read from the
    released names and y's type only."""
    from dprect.app.api import label_kind
    from dprect.core.labels import LabelText, resolve_positive_label

    y_arr = np.asarray(y)
    kind = label_kind(y, y_arr)
    dtype = _label_dtype(y, y_arr)
    if kind == "numeric" and dtype.kind in "iu":
        return np.asarray([_whole_number(n) for n in names], dtype=dtype)
    values = [resolve_positive_label(LabelText(n), kind, "y") for n in names]
    if kind == "numeric" and dtype.kind == "f":
        return np.asarray(values, dtype=np.float64).astype(dtype)
    return _class_array(values) if values else np.asarray([], dtype=dtype)


#: the kinds of label an untyped y can hold, as a refusal names them
_MISSING, _NON_FINITE = "None/NA", "NaN or ±inf"
_OTHER = "objects that are no number, boolean or string"


def _label_word(v: object) -> str:
    """The kind of one label of an untyped y: ``booleans``, ``numbers``, ``strings``, or
    what names no class (a missing value, NaN or ±inf, any other object)."""
    if v is None or type(v).__name__ in ("NAType", "NaTType"):  # pandas' missing values
        return _MISSING
    if isinstance(v, bool | np.bool_):
        return "booleans"
    if isinstance(v, numbers.Integral):
        return "numbers"
    if isinstance(v, numbers.Real):
        return "numbers" if math.isfinite(float(v)) else _NON_FINITE
    if isinstance(v, str):
        return "strings"
    return _OTHER


def _labels_read_from_y(y: Any, y_in: Any) -> np.ndarray:
    """y as the array its classes are read from (``classes=None``: NOT private). Refused
    with one :class:`InputDataError` when its labels name no sorted list of classes: a
    dtype that is no label type (complex, bytes, dates: :func:`dprect.fit`'s rule), a NaN
    or ±inf in a float y, or an untyped y (a list, an object array) holding a missing
    value, NaN, ±inf, another object, or labels of more than one kind (strings and
    numbers). The message names y's dtype and the kinds, never a value. An untyped y of
    numbers or booleans becomes a typed array (scikit-learn reads an object array only
    as strings); a continuous y is left to scikit-learn's own check."""
    from dprect.app.api import label_kind

    typed = isinstance(y, np.ndarray) or hasattr(y, "dtype")
    arr = np.asarray(y_in) if typed else np.asarray(y_in, dtype=object)
    label_kind(y, arr)  # a dtype that holds no labels: fit's refusal
    what = f"dtype {y.dtype}" if typed else f"a {type(y).__name__}"
    head = f"classes read from y: y ({what}) holds"
    public = "the PUBLIC list classes=[...] (the private route)"
    if arr.dtype.kind == "f" and arr.size and not np.isfinite(arr).all():
        raise InputDataError(f"{head} missing, NaN or ±inf labels, which name no class; "
                             f"give {public}: such a label is then a negative of every "
                             "class")
    if arr.dtype.kind != "O":
        return arr
    kinds = set(np.fromiter(map(_label_word, arr), dtype=object, count=len(arr)))
    bad = sorted(kinds & {_MISSING, _NON_FINITE, _OTHER})
    if bad:
        raise InputDataError(f"{head} labels that name no class ({', '.join(bad)}); "
                             f"give {public}: such a label is then a negative of every "
                             "class")
    if len(kinds) > 1:
        raise InputDataError(f"{head} labels of more than one kind "
                             f"({', '.join(sorted(kinds))}), which sort into no one list "
                             f"of classes; give labels of one kind, or {public}")
    if kinds == {"strings"} and typed:
        return arr  # an object array of strings: scikit-learn's own string labels
    return np.asarray(arr.tolist())


def _keep() -> None:
    """What :meth:`RectangleClassifier._check_same_data` returns for data an earlier fit
    was released on: it stays remembered whatever the new fit does."""


def _released(forget: Callable[[], None], run: Callable[[], T]) -> T:
    """``run()`` (a fit); ``forget()`` its data if it raises (refused, or failed: no
    rectangle released, so the same data fitted again is no repeat)."""
    try:
        return run()
    except BaseException:
        forget()
        raise


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
    select_groups, selection_epsilon, selection_delta : find the classes privately
        (:func:`dprect.fit`'s ``select_groups``, docs/privacy.md §18) — a label of y is a
        class only if its noisy count passes the threshold set by the selection's
        (ε_s, δ_s), all for ONE charge of (ε + ε_s, δ + δ_s); with ``classes``, the
        listed ones are classes whatever their rows and only y's other labels are
        selected; no :class:`PrivacyLeakWarning` (the classes are released under the
        guarantee). ``classes_`` are then the listed and kept labels, in y's type (a
        nullable ``Int64`` y's int64: an integer y keeps integer classes).
    random_state : an int seeds the noise (tests only: NOT private); None: OS entropy.
    budget : a :class:`~dprect.PrivacyBudget` every fit is charged to (shared by
        reference across clones); None: no accounting.
    same_data : ``warn`` (default: a :class:`PrivacyBudgetWarning`) or ``refuse`` (a
        :class:`~dprect.core.errors.ParameterError`, nothing charged) when fitted again on
        data byte-identical to an earlier fit's.

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
                 select_groups: bool = False, selection_epsilon: float | None = None,
                 selection_delta: float | None = None,
                 random_state: int | None = None, budget: PrivacyBudget | None = None,
                 same_data: str = "warn") -> None:
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
        self.select_groups = select_groups
        self.selection_epsilon = selection_epsilon
        self.selection_delta = selection_delta
        self.random_state = random_state
        self.budget = budget
        self.same_data = same_data

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN rows are dropped: no value refuses a fit
        tags.input_tags.string = True  # object X is read by value: a string reads as NaN
        tags.non_deterministic = self.random_state is None
        return tags

    def _read(self, X: Any, *, reset: bool) -> np.ndarray:
        """X as float64 by :func:`dprect.fit`'s rule (an untyped table read value by value,
        :mod:`dprect.core.reading`); refused by its shape and type only, with messages
        that quote no value and no count. Sets or checks ``n_features_in_`` and
        ``feature_names_in_``."""
        from dprect.app.api import features_matrix

        if X is None:
            raise InputDataError("X is required (rows × features), got None")
        if hasattr(X, "tocsr") or hasattr(X, "todense"):
            raise InputDataError("sparse input is not supported: give a dense array")
        if getattr(getattr(X, "dtype", None), "kind", None) == "c":
            raise InputDataError("Complex data not supported: X must hold real numbers")
        try:
            arr = features_matrix(X, "X", "features")
        except InputDataError as exc:
            if "dimension" not in str(exc):
                raise
            raise InputDataError(f"{exc}. Reshape your data: X.reshape(-1, 1) for one "
                                 "feature, X.reshape(1, -1) for one row") from None
        if arr.shape[1] == 0:  # scikit-learn's wording, without the row count
            raise InputDataError("Found array with 0 feature(s) (shape=(, 0)) while a "
                                 "minimum of 1 is required (X has no feature columns)")
        _check_feature_names(self, X, reset=reset)
        _check_n_features(self, arr, reset=reset)
        return arr

    @staticmethod
    def _labels(y: Any, rows: int) -> Any:
        """y, 1-D with one label per row, in its own container (a pandas Series keeps its
        dtype, which decides how labels compare: :func:`dprect.app.api.positive_mask`); a
        column vector is raveled with scikit-learn's warning. Never refused for a value."""
        if y is None:
            raise InputDataError("RectangleClassifier requires y to be passed, but the "
                                 "target y is None")
        typed = isinstance(y, np.ndarray) or hasattr(y, "dtype")
        arr = np.asarray(y) if typed else np.asarray(y, dtype=object)
        if arr.ndim == 2 and arr.shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected. "
                          "Please change the shape of y to (n_samples, ), for example "
                          "using ravel().", DataConversionWarning, stacklevel=3)
            y = arr = arr.ravel()
        if arr.ndim != 1 or len(arr) != rows:
            raise InputDataError("y must be 1-D with one label per row of X")
        from dprect.app.api import category_values

        return category_values(y) if typed else arr

    def _check_same_data(self, *arrays: object) -> Callable[[], None]:
        """Warn (or refuse, ``same_data="refuse"``) when this estimator — or any estimator
        sharing its budget — was fitted on byte-identical data before: a keyed hash
        (HMAC-SHA256 under a secret random key, :func:`dprect.release.budget.keyed_digest`)
        of the training set is kept in the budget, or in the estimator without one; no
        value or digest is ever shown. Returns what forgets the data again, called when
        the fit is then refused (a bad parameter, a cap: it released nothing, so the same
        data fitted after it is no repeat)."""
        if isinstance(self.budget, PrivacyBudget):
            budget = self.budget
            digest = budget.digest(*arrays)
            seen = budget.seen(digest)

            def forget() -> None:
                budget.forget(digest)
        else:  # the estimator's own key and digests (plain attributes: it pickles)
            if not isinstance(getattr(self, "_same_data_key", None), bytes):
                self._same_data_key = os.urandom(32)
                self._same_data_digests: set[bytes] = set()
            digest = keyed_digest(self._same_data_key, *arrays)
            seen = digest in self._same_data_digests
            self._same_data_digests.add(digest)

            def forget() -> None:
                self._same_data_digests.discard(digest)
        if not seen:
            return forget
        text = ("RectangleClassifier fitted again on the same data: each fit is a new "
                "(epsilon, delta) release and the costs add up (basic composition)")
        if self.same_data == "refuse":
            raise ParameterError(text + "; refused (same_data='refuse'), nothing charged")
        warnings.warn(text, PrivacyBudgetWarning, stacklevel=3)
        return _keep  # an earlier fit's data: remembered whatever this fit does

    def fit(self, X: Any, y: Any = None) -> RectangleClassifier:
        """Learn one rectangle per class (one charge of (ε, δ), to ``budget`` if given).

        As :func:`dprect.fit` with ``classes=``: X is read by its value rule, y keeps its
        type, the class list is checked the same way, and no value of X or y refuses a
        fit (an empty X gives empty rectangles)."""
        from dprect.app.api import fit

        if self.epsilon is None or self.delta is None:
            raise ParameterError("RectangleClassifier needs epsilon and delta (the budget)")
        if self.budget is not None and not isinstance(self.budget, PrivacyBudget):
            raise ParameterError("budget must be a dprect.PrivacyBudget")
        if self.same_data not in ("warn", "refuse"):
            raise ParameterError(f"same_data must be 'warn' or 'refuse', got "
                                 f"{self.same_data!r}")
        X_arr = self._read(X, reset=True)
        y_in = self._labels(y, len(X_arr))
        names = ([str(n) for n in self.feature_names_in_]
                 if hasattr(self, "feature_names_in_") else None)
        options: dict[str, Any] = dict(
            grid=self.grid, features=names, seed=self.random_state, epsilon=self.epsilon,
            delta=self.delta, method=self.method, beta=self.beta,
            accounting=self.accounting, shape=self.shape, margin_law=self.margin_law,
            neighbouring=self.neighbouring, budget=self.budget)
        if self.select_groups or self.selection_epsilon is not None \
                or self.selection_delta is not None:
            if not self.select_groups:
                raise ParameterError("selection_epsilon and selection_delta need "
                                     "select_groups")
            forget = self._check_same_data(X_arr, y_in)
            listed = None if self.classes is None else self._listed(y_in)
            selected = _released(forget, lambda: fit(
                X_arr, y_in, classes=listed, select_groups=True,
                selection_epsilon=self.selection_epsilon,
                selection_delta=self.selection_delta, **options))
            result = selected.result  # the rectangles (the run's guarantee: selected's)
            classes = _kept_classes(result.classes, y_in)
        elif self.classes is None:
            warnings.warn("RectangleClassifier: classes read from y (the labels present); "
                          "that is NOT differentially private — give the public list "
                          "classes=[...]", PrivacyLeakWarning, stacklevel=2)
            y_arr = _labels_read_from_y(y, y_in)
            check_classification_targets(y_arr)  # a continuous y: scikit-learn's error
            classes = np.unique(y_arr)
            if len(classes) == 0:
                raise ParameterError("classes read from y: y holds no label; give the "
                                     "PUBLIC list classes=[...]")
            forget = self._check_same_data(X_arr, y_arr)
            result = _released(forget, lambda: fit(
                X_arr, np.searchsorted(classes, y_arr),
                classes=list(range(len(classes))), **options))
        else:
            listed = self._listed(y_in)  # fit's check, before anything is charged
            classes = _class_array(listed)
            forget = self._check_same_data(X_arr, y_in)
            result = _released(forget, lambda: fit(X_arr, y_in, classes=listed,
                                                   **options))
        self.classes_, self.result_ = classes, result
        return self

    def _listed(self, y: Any) -> list[Any]:
        """The public class list, checked as :func:`dprect.fit` checks it: a pair y's
        labels read as one refused naming y's kind, then the list's own check."""
        from dprect.app.api import check_classes_of_y

        check_classes_of_y(self.classes, y)
        return check_classes(self.classes)

    def _scores(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "result_")
        if len(self.classes_) == 0:
            raise ParameterError("no class passed the private selection: nothing to "
                                 "predict")
        return rectangle_scores(self.result_, self._read(X, reset=False))

    def decision_function(self, X: Any) -> np.ndarray:
        """(n, k) scores (the rule in the module docstring); (n,) for two classes (the
        second class's score minus the first's), as scikit-learn expects."""
        scores = self._scores(X)
        if len(self.classes_) == 2:
            return scores[:, 1] - scores[:, 0]
        if len(self.classes_) == 1:
            return scores[:, 0]
        return scores

    def predict(self, X: Any) -> np.ndarray:
        """The class of the best score (module docstring: inside and narrowest, else
        nearest)."""
        scores = self._scores(X)
        return self.classes_[np.argmax(scores, axis=1)]


__all__ = ["PrivacyLeakWarning", "RectangleClassifier", "rectangle_scores"]
