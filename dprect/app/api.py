"""The public entry points: :func:`fit` (in-memory), :func:`fit_engine` (any engine) and
:func:`nonprivate_bounding_box` (a non-private reference).

Each takes a :class:`~dprect.core.request.FitRequest` (or :class:`PlanRequest`), or its
fields as keywords; the defaults and allowed values are :mod:`dprect.core.request`'s. The
budget is planned once (:func:`dprect.core.planner.plan`) and the plan run on an engine
(:func:`run_plan`).
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, Unpack, overload

import numpy as np

from dprect.app.groups import check_no_empty_group
from dprect.core.algorithms import run_nonprivate_bounding_box, run_plan
from dprect.core.contest import Tally
from dprect.core.domains import (
    Domain,
    FloatOrder,
    GridArg,
    check_dims,
    feature_names,
    resolve_domains,
)
from dprect.core.engine import Engine
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.group_selection import SelectedResult, SelectionPlan, select_keys
from dprect.core.labels import (
    LabelText,
    PositiveLabel,
    check_label_value,
    label_key,
    resolve_positive_label,
)
from dprect.core.planner import Plan, plan
from dprect.core.randomness import SEEDED_WARNING, RandomSource, caller_level, check_seed
from dprect.core.reading import (
    check_invalid_rows,
    check_table,
    float_matrix,
    floats_of,
    select_rows,
    table_rows,
)
from dprect.core.request import (
    BudgetOptions,
    FitOptions,
    FitRequest,
    InvalidRows,
    PlanRequest,
    label_beside_classes,
    make_request,
)
from dprect.core.result import FitResult
from dprect.engines.contest_tally import numpy_tally
from dprect.engines.input_errors import missing_columns
from dprect.engines.numpy_engine import NumpyEngine
from dprect.engines.numpy_matrix import MatrixEngine
from dprect.release.budget import PrivacyBudget, charged, record

if TYPE_CHECKING:
    from dprect.core.classes import ClassesResult

#: the name a keyword error of :func:`fit` gives (its public name)
FIT = "dprect.fit"


def label_kind_of_dtype(dtype: np.dtype, column: str = "y") -> str:
    """The :data:`dprect.core.labels.LABEL_KINDS` kind of a numpy label array's dtype (its
    schema): object arrays are ``any`` (each value is compared with the label as Python
    compares them).
    Other dtypes (complex, dates, bytes) are refused."""
    if dtype == np.bool_:
        return "boolean"
    if np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating):
        return "numeric"
    if dtype.kind == "U":
        return "string"
    if dtype.kind == "O":
        return "any"
    raise InputDataError(f"labels {column!r} must be numbers, booleans or strings; "
                         f"their dtype is {dtype}")


#: why a pandas ``object`` label column is read as text, added to a refusal
PANDAS_OBJECT_HINT = ("a pandas object column is read as text, pandas' dtype for it; give "
                      "other labels their own type: y.astype('boolean'), y.astype('Int64')")


def _pandas_object(y: object, dtype: object) -> bool:
    return dtype == np.dtype(object) and type(y).__module__.split(".")[0] == "pandas"


def label_kind(y: object, y_arr: np.ndarray, column: str = "y") -> str:
    """The label kind of ``y`` from its container's type. pandas: an extension dtype keeps
    the type numpy's conversion loses — text (``string``, ``str``, ``string[pyarrow]``) is
    ``string``, ``boolean`` is boolean, the nullable integers and floats are numeric —
    and an ``object`` column is pandas' text column (pandas 2 reads text as ``object``;
    the command line reads the same column as strings), so a pandas column of labels as
    text refuses a numeric positive label, as a numpy string array does. Otherwise
    :func:`label_kind_of_dtype` of the numpy array (a Python list and a numpy object
    array are untyped: ``any``). Read from the container and its dtype, never from a
    value."""
    dtype = getattr(y, "dtype", None)
    if _pandas_object(y, dtype):
        return "string"
    if dtype is not None and not isinstance(dtype, np.dtype):
        name = str(getattr(dtype, "name", ""))
        if name in ("string", "str") or name.startswith(("string[", "large_string[")):
            return "string"
        kind = getattr(dtype, "kind", None)
        if kind == "b":
            return "boolean"
        if kind in ("i", "u", "f"):
            return "numeric"
    return label_kind_of_dtype(y_arr.dtype, column)


def _nullable(dtype: np.dtype) -> str | None:
    """pandas' nullable dtype of a numpy integer or boolean dtype (``int8`` → ``Int8``,
    ``uint64`` → ``UInt64``, ``bool`` → ``boolean``), which can hold a missing value;
    None for any other dtype (floats hold NaN, text and objects None)."""
    if dtype.kind == "b":
        return "boolean"
    if dtype.kind in "iu":
        return ("UInt" if dtype.kind == "u" else "Int") + str(dtype.itemsize * 8)
    return None


def category_values(y: Any) -> Any:
    """A pandas categorical y as a Series of its categories' values (scikit-learn's
    convention: a categorical y's classes are the values of its categories), in their
    type — integer and boolean categories in pandas' nullable dtype, so a missing label
    stays missing (no class) and the labels stay integers; text categories as pandas'
    text column. Any other y is returned as it is. Decided by y's dtype only. Read so by
    :func:`fit` (the positive label, a class list, the classes found privately) and by
    :class:`~dprect.app.classifier.RectangleClassifier`."""
    dtype: Any = getattr(y, "dtype", None)
    if type(dtype).__name__ != "CategoricalDtype" or \
            type(dtype).__module__.split(".")[0] != "pandas":
        return y
    pd: Any = sys.modules["pandas"]  # loaded: y is one of its objects (never imported here)
    categories = dtype.categories
    nullable = _nullable(categories.dtype) if isinstance(categories.dtype, np.dtype) \
        else None
    if nullable is not None:
        categories = categories.astype(nullable)
    codes = np.asarray(pd.Series(y).cat.codes, dtype=np.intp)  # -1: a missing label
    return pd.Series(categories.array.take(codes, allow_fill=True))


def check_classes_of_y(classes: object, y: object, column: str = "y") -> None:
    """Two listed classes that y's labels read as one label (``True`` and ``1`` for
    boolean labels, ``1`` and ``1.0`` for numbers) refused naming y's own kind — from
    y's dtype and the list only, before the list's own check
    (:func:`~dprect.core.labels.check_classes`), which refuses every pair some type of
    label column reads as one and names the first such type it tries (numeric: "a
    numeric column" for a pair of a boolean y). An untyped y (a list, an object array),
    a dtype that holds no labels, and a class that is no label or that y's kind cannot
    hold are left to the checks that refuse them."""
    if not (isinstance(y, np.ndarray) or hasattr(y, "dtype")) \
            or isinstance(classes, str | bytes) or not isinstance(classes, Sequence):
        return
    try:
        rows: Any = getattr(y, "iloc", y)
        head = rows[:0]  # no row: the dtype only (pandas' rows by position)
        kind = label_kind(y, np.asarray(head), column)
        single = _single_labels(y, np.asarray(head))
        values = [check_label_value(v.item() if isinstance(v, np.generic) else v)
                  for v in classes]
    except (InputDataError, ParameterError, TypeError):
        return
    if kind not in ("numeric", "boolean", "string"):
        return
    named: dict[object, str] = {}  # a label of y's kind → the class naming it
    for value in values:
        try:
            read = resolve_positive_label(value, kind, column, single=single)
        except ParameterError:
            continue  # refused as that class's own label, naming the column
        if read is None:
            continue  # past a float32 y's range: no row
        key = label_key(value)
        if named.get(read, key) != key:  # one class twice: the list's own "listed twice"
            raise ParameterError(f"classes {named[read]!r} and {key!r} name the same "
                                 f"label of {column} ({kind} labels); list each label once")
        named[read] = key


def _integral_labels(y: object, y_arr: np.ndarray) -> bool:
    """Whether ``y``'s type holds integers only (numpy's integer dtypes, pandas' nullable
    ``Int64`` and kin): its dtype, never a value."""
    dtype = getattr(y, "dtype", None)
    if dtype is not None and not isinstance(dtype, np.dtype):
        return getattr(dtype, "kind", None) in ("i", "u")
    return y_arr.dtype.kind in ("i", "u")


def _single_labels(y: object, y_arr: np.ndarray) -> bool:
    """Whether ``y``'s labels are float32 (numpy's float32, pandas' ``Float32``): a label
    is then read as its nearest float32 (:func:`resolve_positive_label`); its dtype only."""
    dtype = getattr(y, "dtype", None)
    if dtype is not None and not isinstance(dtype, np.dtype):
        return getattr(dtype, "numpy_dtype", None) == np.float32
    return y_arr.dtype == np.float32


def _equals(v: object, label: object) -> bool:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return False
    try:
        return bool(v == label)
    except (TypeError, ValueError):  # an array inside an object array, ...
        return False


def positive_mask(y: object, positive_label: object = FitRequest.positive_label,
                  column: str = "y") -> np.ndarray:
    """True for the labels equal to ``positive_label`` (:func:`resolve_positive_label`);
    every other value — another label, a null, a NaN — is False. A row-local test that
    never raises for a value; only y's shape and dtype can be refused. A Python list has
    no dtype of its own: its values are compared one by one as Python compares them."""
    label = check_label_value(positive_label)
    typed = isinstance(y, np.ndarray) or hasattr(y, "dtype")  # numpy, pandas: a schema
    y_arr = np.asarray(y) if typed else np.asarray(y, dtype=object)
    if y_arr.ndim != 1:
        raise InputDataError(f"labels must be a 1-D array, got a {y_arr.ndim}-D array")
    try:
        value = resolve_positive_label(label, label_kind(y, y_arr, column), column,
                                       integral=_integral_labels(y, y_arr),
                                       single=_single_labels(y, y_arr))
    except ParameterError as exc:
        if not _pandas_object(y, getattr(y, "dtype", None)):
            raise
        raise ParameterError(f"{exc}; {PANDAS_OBJECT_HINT}") from None
    if value is None:  # past a float32 y's range: no row
        return np.zeros(len(y_arr), dtype=bool)
    if y_arr.dtype.kind == "O":
        return np.fromiter((_equals(v, value) for v in y_arr), dtype=bool, count=len(y_arr))
    if y_arr.dtype == np.bool_:
        return y_arr == bool(value)
    if y_arr.dtype.kind == "U":
        return y_arr == value
    if y_arr.dtype.kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        # an integer dtype's labels compared exactly (a label past its range: no row)
        info = np.iinfo(y_arr.dtype)
        if not info.min <= value <= info.max:
            return np.zeros(len(y_arr), dtype=bool)
        return y_arr == y_arr.dtype.type(value)
    # compared as float64 (as y.astype(float64) == value), cast block by block: no copy
    return np.equal(y_arr, np.float64(value), signature="dd->?")


def _arrow_table(X: object) -> bool:
    """Whether X is a pyarrow Table or RecordBatch (by its type; pyarrow is not imported
    for anything else)."""
    return type(X).__module__.split(".")[0] == "pyarrow" and hasattr(X, "schema") \
        and hasattr(X, "column_names")


def features_matrix(X: object, what: str = "X", columns: str = "features") -> np.ndarray:
    """X as a 2-D float64 array. A pyarrow Table or RecordBatch is read by its schema, as
    :func:`dprect.bounds` and the command line read a table
    (:func:`~dprect.engines.arrow_input.numeric_column`: numbers, decimals and booleans,
    nulls as NaN; a column of another type — text, dates — refused, naming it and its
    type); anything else by :func:`~dprect.core.reading.float_matrix`."""
    if not _arrow_table(X):
        return float_matrix(X, what, columns)
    import pyarrow as pa

    from dprect.engines.arrow_input import numeric_column

    table = X if isinstance(X, pa.Table) else pa.Table.from_batches([X])
    names = feature_names(table.column_names, table.num_columns)  # no name twice
    if not names:
        return np.empty((table.num_rows, 0))
    return np.column_stack([numeric_column(table, n, nulls_as_nan=True) for n in names])


def positive_rows(X: object, y: object, names: Sequence[str] | None = None,
                  invalid_rows: InvalidRows | str = FitRequest.invalid_rows,
                  positive_label: object = FitRequest.positive_label) -> np.ndarray:
    """Check (X, y) and return the positive rows of X as float64.

    Positive rows are those whose label equals ``positive_label`` (default 1; a number, a
    string or a boolean, compared as :func:`resolve_positive_label` says); every other
    row — another label, a null or NaN label — is a negative. Refusals depend only on the
    arrays' shapes and types and on the parameters, never on their values:
    :class:`InputDataError` for X not 2-D, without feature columns or not numeric, y of
    the wrong length, a label dtype that cannot hold the positive label. An empty table,
    or one without positives, gives no rows (the fit then rests on its pads).

    ``invalid_rows``: ``drop`` (default, row-local, inside the guarantee) or ``error``
    (refuse a table with a null, NaN or ±inf feature — a data-dependent refusal, OUTSIDE
    the privacy guarantee; see :func:`select_rows`). Messages carry no counts or values.
    """
    InvalidRows.parse(invalid_rows, "invalid_rows")
    check_label_value(positive_label)
    X_arr = features_matrix(X, "X", "features")
    if X_arr.shape[1] == 0:
        raise InputDataError("X has no feature columns")
    positive = _checked_labels(X_arr, y, positive_label)
    return select_rows(X_arr, positive, names, invalid_rows)


def fit_engine(engine: Engine, domains: list[Domain], features: list[str],
               request: PlanRequest | None = None, *, seed: int | None = None,
               rng: RandomSource | None = None, trace: list[Any] | None = None,
               budget: PrivacyBudget | None = None, tally: Tally | None = None,
               **options: Unpack[BudgetOptions]) -> FitResult:
    """Plan from the budget (a :class:`PlanRequest`, or its fields as keywords), charge the
    plan's guarantee to ``budget`` (if given; refused past its cap before anything is
    computed), run the chosen method on ``engine``, and package the result. ``tally``:
    the table's tally for ``auto``'s contest (:mod:`dprect.core.contest`; without one
    the contest's default choice runs)."""
    the_plan = plan(make_request(PlanRequest, request, options, "dprect.fit_engine"),
                    domains=domains, features=features)
    if rng is None:
        rng = RandomSource(seed=seed)
    elif seed is not None:
        raise ParameterError("give either seed or rng, not both")
    with charged(budget, the_plan.chosen.guarantee, "fit", features) as ticket:
        return record(ticket, run_plan(engine, domains, features, the_plan, rng,
                                       trace=trace, tally=tally))


def column_names(X: object) -> list[str] | None:
    """A table's column names, read by duck typing (pandas and pyarrow are never imported):
    ``column_names`` (a pyarrow Table or RecordBatch), else ``columns`` (a pandas or polars
    DataFrame); None for arrays and lists. Names are read from the schema, not the data."""
    names = getattr(X, "column_names", None)
    if names is None:
        names = getattr(X, "columns", None)
    if names is None or isinstance(names, str | bytes) or callable(names):
        return None
    try:
        return [str(n) for n in names]
    except TypeError:
        return None


def _in_memory(X: object, y: object, grid: GridArg, features: Sequence[str] | None,
               invalid_rows: InvalidRows | str, positive_label: object,
               ) -> tuple[list[str], list[Domain], NumpyEngine | MatrixEngine]:
    """Check (X, y), name the features, resolve their domains and load the positives
    into an engine (shared by :func:`fit` and the bounding box): a numpy matrix is held
    as it is by a :class:`MatrixEngine`, anything else read into a :class:`NumpyEngine`
    (the same answers)."""
    shape = np.shape(X) if isinstance(X, np.ndarray) or hasattr(X, "shape") else None
    if shape is None:
        try:
            shape = table_rows(X).shape
        except InputDataError:  # ragged rows: positive_rows names the problem
            shape = ()
    if len(shape) == 2:
        check_dims(shape[1], "X")  # before its names are listed
    if features is None:
        features = column_names(X)
    names = feature_names(features, shape[1]) if len(shape) == 2 else None
    if _matrix_route(X, invalid_rows):  # X read where it is: no copy (numpy_matrix)
        assert isinstance(X, np.ndarray) and names is not None
        positive = _checked_labels(X, y, positive_label)
        domains = resolve_domains(grid, names)
        return names, domains, MatrixEngine(X, positive, domains)
    X_pos = positive_rows(X, y, names, invalid_rows=invalid_rows,
                          positive_label=positive_label)  # raises unless X is 2-D
    assert names is not None
    domains = resolve_domains(grid, names)
    return names, domains, NumpyEngine.from_features(X_pos, domains)


def _matrix_route(X: object, invalid_rows: InvalidRows | str) -> bool:
    """Whether :func:`_in_memory` can hold X as it is (:class:`MatrixEngine`): a 2-D numpy
    array of numbers or booleans with feature columns, under the ``drop`` policy (the
    engine selects the same rows as :func:`select_rows`). Read from the type only."""
    return (type(X) is np.ndarray and X.ndim == 2 and X.shape[1] > 0
            and X.dtype.kind in "biuf"
            and InvalidRows.parse(invalid_rows, "invalid_rows") is InvalidRows.DROP)


def _checked_labels(X: np.ndarray, y: object, positive_label: object) -> np.ndarray:
    """:func:`positive_rows`' checks of y against a 2-D X, and the positive flags."""
    check_label_value(positive_label)
    typed = isinstance(y, np.ndarray) or hasattr(y, "dtype")
    y_arr = np.asarray(y) if typed else np.asarray(y, dtype=object)
    if y_arr.ndim != 1 or len(y_arr) != len(X):
        raise InputDataError("y must be 1-D with one label per row of X")
    return positive_mask(y if typed else y_arr, positive_label)


@overload
def fit(X: object, y: object, request: FitRequest | None = None, *, grid: GridArg = None,
        features: Sequence[str] | None = None, seed: int | None = None,
        classes: None = None, budget: PrivacyBudget | None = None,
        select_groups: Literal[False] = False, selection_epsilon: None = None,
        selection_delta: None = None, **options: Unpack[FitOptions]) -> FitResult: ...


@overload
def fit(X: object, y: object, request: FitRequest | None = None, *, grid: GridArg = None,
        features: Sequence[str] | None = None, seed: int | None = None,
        classes: Sequence[object], budget: PrivacyBudget | None = None,
        select_groups: Literal[False] = False, selection_epsilon: None = None,
        selection_delta: None = None, **options: Unpack[FitOptions]) -> ClassesResult: ...


@overload
def fit(X: object, y: object, request: FitRequest | None = None, *, grid: GridArg = None,
        features: Sequence[str] | None = None, seed: int | None = None,
        classes: Sequence[object] | None = None, budget: PrivacyBudget | None = None,
        select_groups: Literal[True], selection_epsilon: float | None = None,
        selection_delta: float | None = None, **options: Unpack[FitOptions]
        ) -> SelectedResult: ...


def fit(X: object, y: object, request: FitRequest | None = None, *, grid: GridArg = None,
        features: Sequence[str] | None = None, seed: int | None = None,
        classes: Sequence[object] | None = None, budget: PrivacyBudget | None = None,
        select_groups: bool = False, selection_epsilon: float | None = None,
        selection_delta: float | None = None, **options: Unpack[FitOptions]
        ) -> FitResult | ClassesResult | SelectedResult:
    """Learn an (ε, δ)-DP axis-aligned rectangle around the positive rows of X (or one
    per class of ``classes``, for one charge).

    Parameters
    ----------
    X, y : rows × features array and its labels. Only rows whose label equals
        ``positive_label`` are learned from; every other row (another label, a null or NaN
        label) is a negative. No data (an empty X) or no positive row gives an ordinary
        result — an empty rectangle, as the privacy guarantee requires — not an error.
    request : a :class:`~dprect.core.request.FitRequest`; or give its fields as keywords
        (below; ``epsilon`` and ``delta`` are required, the others default as
        :mod:`dprect.core.request` says).
    grid : per-feature public domains (:class:`~dprect.Grid`, :class:`~dprect.IntegerRange`,
        :class:`~dprect.FloatOrder`), one for all, a list, a ``--grid`` string, or None for
        the float-order domain (no bounds needed).
    features : the features' names (default: a pandas DataFrame's or pyarrow Table's column
        names, else x0, x1, …); an explicit list must have one name per column of X.
    seed : for tests and reproducibility only — a seeded run is not private against anyone
        who knows the seed, and its result says so. Default: OS entropy.
    epsilon, delta : the total budget (ε̃, δ̃).
    method : ``auto`` (the planner picks the smaller predicted error), ``randmargins`` or
        ``composition``.
    beta : failure target of the whole run (any interior-point call missing its input).
    accounting : ``refined`` (docs/privacy.md) or ``paper`` (the paper's statement).
    shape : ``general`` (R = 2d rounds) or ``origin`` (the paper's origin-anchored class).
    margin_law : ``staircase`` or ``laplace``.
    neighbouring : ``add-remove`` or ``replace-one`` (via group privacy).
    positive_label : the label of the positive rows (1 unless given): a number (numeric or
        boolean labels; true is 1), a string (string labels) or a boolean (boolean or
        numeric labels). A label dtype that cannot hold it is refused (from the dtype,
        not the values); a Python list's values are compared one by one.
    invalid_rows : ``drop`` (the default): rows with a null, NaN or ±inf feature are left
        out (row-local, inside the guarantee). ``error`` refuses X if any row has one:
        that refusal depends on the data and is OUTSIDE the privacy guarantee.
    classes : the PUBLIC list of classes (labels compared as ``positive_label`` is; never
        read from the data). Gives a :class:`~dprect.core.classes.ClassesResult`: one
        rectangle per class, each class's negatives every other row (unlisted labels and
        nulls included), all for ONE charge of (ε, δ) — the classes' rows are disjoint,
        so the runs compose in parallel (docs/privacy.md §12); two classes that any
        type of label reads as one (``True`` and ``1``) are refused, naming y's kind
        when y's labels are among them (:func:`check_classes_of_y`). Refused with
        ``positive_label`` given as a keyword (even 1: each class is the positive label of
        its own rectangle), as on the command line and in the fit job.
    budget : a :class:`~dprect.PrivacyBudget` shared across calls: the plan's guarantee
        is charged to it after the input's checks and before any noise is drawn; a
        charge past its cap raises ``BudgetExceededError`` and nothing is computed.
    select_groups, selection_epsilon, selection_delta : find the classes privately
        (``fit --select-groups``, docs/privacy.md §18) — a value of y is a class only if
        its noisy count passes the threshold set by the selection's (ε_s, δ_s); with
        ``classes``, the listed ones are released whatever their rows and only y's other
        values are selected; one rectangle per class, all for ONE charge of (ε + ε_s,
        δ + δ_s). Gives a :class:`~dprect.core.group_selection.SelectedResult` (the
        :class:`~dprect.core.classes.ClassesResult` read through, the run's
        ``guarantee``); the same classes and rectangles as the command line's for a seed
        (:func:`fit_selected_classes`). Refused with ``positive_label`` given as a keyword
        (even 1).

    Errors depend only on the parameters and on X's and y's shapes and types.
    """
    check_seed(seed)  # before any charge (the classes' fits draw their seeds after it)
    y = category_values(y)  # a pandas Categorical y: its categories' values, in their type
    label_given = "positive_label" in options  # a keyword given, even the default 1
    if classes is not None:
        if request is not None:
            raise ParameterError("give classes in the request or as a keyword, not both")
        if label_given:
            raise label_beside_classes()
        check_classes_of_y(classes, y)  # a pair y's kind reads as one, named as y's
        options = {**options, "classes": tuple(classes)}  # type: ignore[typeddict-unknown-key]
    if select_groups or selection_epsilon is not None or selection_delta is not None:
        from dprect.app.flow import fit_selection

        selection = fit_selection({"select_groups": select_groups,
                                   "selection_epsilon": selection_epsilon,
                                   "selection_delta": selection_delta,
                                   "positive_label": options.get("positive_label")},
                                  label_given=label_given)
        assert selection is not None  # else fit_selection refused the options
        req = make_request(FitRequest, request, options, FIT)
        return fit_selected_classes(X, y, req,
                                    selection, grid=grid, features=features, seed=seed,
                                    budget=budget)
    req = make_request(FitRequest, request, options, FIT)
    if req.classes is not None:
        return fit_classes(X, y, req, grid=grid, features=features, seed=seed,
                           budget=budget)
    names, domains, engine = _in_memory(X, y, grid, features, req.invalid_rows,
                                        req.positive_label)
    return fit_engine(engine, domains, names, req.budget(), seed=seed, budget=budget,
                      tally=_table_tally(X, y, req.positive_label, domains))


def _table_tally(X: object, y: object, positive_label: object, domains: list[Domain]
                 ) -> Tally:
    """The tally of (X, y) for ``auto``'s contest (:func:`numpy_tally`), made only when the
    contest runs (X and y were checked by :func:`_in_memory`)."""
    made: list[Tally] = []

    def tally(rects: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]
              ) -> tuple[int, list[tuple[int, int]]]:
        if not made:
            X_arr = X if isinstance(X, np.ndarray) and X.ndim == 2 else features_matrix(
                X, "X", "features")
            X_arr = np.asarray(X_arr, dtype=np.float64)
            made.append(numpy_tally(X_arr, _checked_labels(X_arr, y, positive_label),
                                    domains))
        return made[0](rects)

    return tally


def fit_classes(X: object, y: object, request: FitRequest, *, grid: GridArg = None,
                features: Sequence[str] | None = None, seed: int | None = None,
                budget: PrivacyBudget | None = None) -> ClassesResult:
    """One rectangle per class of ``request.classes`` (``fit(..., classes=)``), for ONE
    charge (:mod:`dprect.core.classes`): every class's input checked first, then one
    plan, then class i's rectangle on its positives (the rows labelled i, compared as
    :func:`positive_mask` compares a positive label) with its own noise — a test seed
    gives class i :func:`~dprect.core.classes.class_seeds`' seed i, as every engine does."""
    if request.classes is None:
        raise ParameterError("fit_classes needs a request with classes")
    fitted = _class_fit(X, y, request, None, grid, features, seed, budget)
    assert not isinstance(fitted, SelectedResult)
    return fitted


def _class_fit(X: object, y: object, request: FitRequest, selection: SelectionPlan | None,
               grid: GridArg, features: Sequence[str] | None, seed: int | None,
               budget: PrivacyBudget | None) -> ClassesResult | SelectedResult:
    """The rectangles of the listed classes and, with ``selection``, of those found
    privately among y's other values, as the command line's classes' fit makes them
    (:mod:`dprect.app.classes_flow`): every listed class's checks, the plan and the
    charge's independent check first (no noise); then ONE charge (composed with the
    selection's: :func:`~dprect.app.groups.checked_composition`); then the selection
    (:func:`label_counts` without the listed values, drawn by
    :func:`~dprect.core.classes.select_classes` from the seed's source: at most
    MAX_CLASSES classes in all) and the
    classes' rectangles (:func:`~dprect.core.classes.fit_each_class`)."""
    from dprect.app.groups import checked_composition
    from dprect.core.classes import (
        checked_charge,
        class_labels,
        fit_each_class,
        select_classes,
    )

    check_seed(seed)  # before the charge: class_seeds reads it after
    listed = list(request.classes or ())
    engines: list[NumpyEngine | MatrixEngine] = []
    names: list[str] = []
    domains: list[Domain] = []
    for value in listed:  # every check (shapes, types, labels) before any noise
        names, domains, engine = _in_memory(X, y, grid, features, request.invalid_rows,
                                            value)
        engines.append(engine)
    counts: dict[str, int] = {}
    if selection is not None:
        X_arr = features_matrix(X, "X", "features")
        if X_arr.shape[1] == 0:
            raise InputDataError("X has no feature columns")
        counts = label_counts(y, len(X_arr), listed=listed)
        check_dims(X_arr.shape[1], "X")
        names = feature_names(features if features is not None else column_names(X),
                              X_arr.shape[1])
        # the error policy's refusal over every row, before the charge and the draw: not
        # only the kept classes' (a refusal would tell the draw's outcome), as the engines
        check_invalid_rows(X_arr, names, request.invalid_rows)
        domains = resolve_domains(grid, names)
    the_plan = plan(request.budget(), domains=domains, auto_count=False)  # no count: #24
    guarantee, check = checked_charge(  # before any noise; with a selection: any number
        the_plan, domains, None if selection is not None else len(listed))
    run = guarantee if selection is None \
        else checked_composition(guarantee, selection, len(listed))
    with charged(budget, run, "classes", names) as ticket:  # ONE charge for every class
        if seed is not None:  # once a run, at the caller's line: not once a class
            warnings.warn(SEEDED_WARNING, UserWarning, stacklevel=caller_level())
        kept, past_cap = ([], 0) if selection is None \
            else select_classes(selection, counts, _quiet_source(seed), len(listed))
        values = [*listed, *(LabelText(k) for k in kept)]
        engines += [_in_memory(X, y, grid, names, request.invalid_rows, v)[2]
                    for v in values[len(listed):]]
        fitted = fit_each_class(
            class_labels(values),
            [partial(_seeded_run, e, domains, names, the_plan) for e in engines], seed,
            guarantee, check, the_plan, names)
        if selection is None:
            return record(ticket, fitted)
        return record(ticket, SelectedResult(fitted, selection, len(kept),
                                             fitted.privacy or guarantee, len(listed),
                                             past_cap))


def label_counts(y: object, rows: int, column: str = "y",
                 listed: Sequence[PositiveLabel | LabelText] = ()) -> dict[str, int]:
    """The candidates of a private class selection in ``y``: each label value's rows,
    named as a class is (:func:`~dprect.core.classes.label_candidates`: a numeric label
    as a float, as the engines count a label column). Read as the command line reads a
    label column (pyarrow's ``value_counts``; numbers as float64 — an integer dtype's as
    its exact integers, as :func:`positive_mask` compares them —, pandas' missing values
    as nulls; in a pandas text column a value that is not text is no class, as
    :func:`positive_mask` never matches it); an untyped y (a Python list, a numpy object
    array: no schema says what its labels are) is refused, from its type. The values of
    the ``listed`` classes (a public list beside the selection) are no candidates
    (:func:`~dprect.core.classes.unlisted_candidates`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from dprect.core.classes import label_candidates, unlisted_candidates

    typed = isinstance(y, np.ndarray) or hasattr(y, "dtype")
    y_arr = np.asarray(y) if typed else np.asarray(y, dtype=object)
    if y_arr.ndim != 1 or len(y_arr) != rows:
        raise InputDataError("y must be 1-D with one label per row of X")
    kind = label_kind(y, y_arr, column)
    if kind == "any":
        raise InputDataError("select_groups needs typed labels (a numpy array or a pandas "
                             "Series of numbers, booleans or strings): a list or an object "
                             "array has no type to read its labels by")
    if kind == "string" and y_arr.dtype.kind == "O":  # pandas' text column: a value that
        # is not text equals no class (positive_mask), so it is no candidate — row-local
        y_arr = np.array([v if isinstance(v, str) else None for v in y_arr], dtype=object)
    try:
        col = pa.array(y if hasattr(y, "__arrow_array__") and y_arr.dtype.kind != "O"
                       else y_arr, from_pandas=True)
        if kind == "numeric" and not _integral_labels(y, y_arr):
            col = pc.cast(col, pa.float64(), safe=False)  # labels compare as float64
        elif kind == "string" and not pa.types.is_string(col.type):
            col = pc.cast(col, pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError):
        raise InputDataError(f"labels {column!r} cannot be read as {kind} labels "
                             f"(dtype {y_arr.dtype})") from None
    pairs = [(v["values"], v["counts"]) for v in pc.value_counts(col).to_pylist()]
    return unlisted_candidates(label_candidates(pairs, kind), listed, kind, column)


def _quiet_source(seed: int | None) -> RandomSource:
    """A class's (or the selection's) source in a classes' fit, without its own seeded
    warning: :func:`_class_fit` warns once for the whole run."""
    from dprect.app.spine import seeded_run_quietly

    return seeded_run_quietly(lambda: RandomSource(seed=seed))


def _seeded_run(engine: Engine, domains: list[Domain], names: list[str], the_plan: Plan,
                *, seed: int | None) -> FitResult:
    return run_plan(engine, domains, names, the_plan, _quiet_source(seed))


def fit_selected_classes(X: object, y: object, request: FitRequest,
                         selection: SelectionPlan, *, grid: GridArg = None,
                         features: Sequence[str] | None = None, seed: int | None = None,
                         budget: PrivacyBudget | None = None) -> SelectedResult:
    """One rectangle per class found privately (``fit(..., select_groups=True)``, as
    ``fit --select-groups`` runs it: :mod:`dprect.app.classes_flow`), and one per class
    of ``request.classes`` if listed (released whatever their rows; only y's other
    values are candidates: docs/privacy.md §18, Theorem S′), for ONE charge of the
    classes' fit composed with the selection: the listed classes first, then the kept
    ones in the order of their text, class i with ``class_seeds(seed)[i]`` — so a seed
    gives the command line's classes and rectangles (:func:`_class_fit`)."""
    fitted = _class_fit(X, y, request, selection, grid, features, seed, budget)
    assert isinstance(fitted, SelectedResult)
    return fitted


def nonprivate_bounding_box(X: object, y: object, *, grid: GridArg = None,
                            features: Sequence[str] | None = None,
                            positive_label: object = FitRequest.positive_label,
                            invalid_rows: InvalidRows | str = FitRequest.invalid_rows,
                            ) -> FitResult:
    """The exact bounding box of the positives, on the same grid. **NOT private.**"""
    names, domains, engine = _in_memory(X, y, grid, features, invalid_rows, positive_label)
    rect = run_nonprivate_bounding_box(engine, domains)
    lower, upper = rect.to_units(domains)
    params: dict[str, Any] = {"note": "exact bounding box; no noise, no privacy"}
    return FitResult(list(names), lower, upper, list(rect.lo), list(rect.hi), domains,
                     "nonprivate-bounding-box", None, params, seeded=False)


def _group_text(value: object) -> str:
    """A listed group value as text, read against the group column's type as the command
    line reads it (:func:`dprect.engines.bounds_input.resolve_groups`)."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        return repr(float(value))
    if isinstance(value, str | int | np.integer):
        return str(value)
    raise ParameterError(f"a group value must be a string, a number or a boolean, got "
                         f"{type(value).__name__}")


def _data_group_text(value: object) -> str | None:
    """A group value of the data, as text (never raises): null and NaN are no group;
    booleans, floats and the rest are spelled as the listed groups are
    (:func:`_group_text`)."""
    if value is None or (isinstance(value, float | np.floating) and math.isnan(value)):
        return None
    try:
        return _group_text(value)
    except ParameterError:
        return str(value)


def _column_array(values: Any, name: str, *, group: bool) -> Any:
    """One column of an in-memory table as a pyarrow array. A column of Python objects
    (dtype ``object``: its schema fixes no type) is read value by value — a bounded
    column by :mod:`dprect.core.reading`, a group column as text — so no value refuses
    it; a typed column keeps its type (a column of another type than numbers is refused
    by its schema later)."""
    import pyarrow as pa

    try:
        if getattr(getattr(values, "dtype", None), "kind", None) == "O":
            objects = np.asarray(values, dtype=object)
            if group:
                return pa.array([_data_group_text(v) for v in objects], type=pa.string())
            return pa.array(floats_of(objects))
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError,
            UnicodeError) as exc:  # complex numbers: not implemented; a lone surrogate
        # in a text ("\ud800"): no UTF-8 for it
        raise InputDataError(f"column {name!r} cannot be read: {type(exc).__name__}"
                             ) from None


def _bounds_table(data: object, columns: Sequence[str] | None, group_by: object
                  ) -> tuple[Any, list[str], str | None]:
    """``data`` as a pyarrow Table of the bounded columns (and the group column, named
    ``group_by``, or ``__group`` for an array of group values), with the column names.
    Each column keeps its declared type (a pyarrow column's, a pandas or numpy dtype
    read by pyarrow, an integer matrix's), so its integrality is read from its type;
    a column of Python objects and any other matrix are float64.
    A ``group_by`` that is not a name (an array, a list, a pandas Series of one value per
    row) is never compared with a column's name: numpy and pandas compare it element by
    element, and its truth value is an error."""
    import pyarrow as pa

    check_table(data, "data", "columns")
    names = column_names(data)
    named = [group_by] if isinstance(group_by, str) else []  # the group column, by name
    arrays: dict[str, Any] = {}
    if isinstance(data, pa.Table | pa.RecordBatch):
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        wanted = list(columns) if columns is not None else [
            n for n in table.column_names if n not in named]
        arrays = {n: table.column(n) for n in [*wanted, *named] if n in table.column_names}
    elif names is not None and hasattr(data, "__getitem__"):  # pandas, polars
        wanted = list(columns) if columns is not None else [n for n in names if n not in named]
        for n in [*wanted, *named]:
            if n in names:
                arrays[n] = _column_array(data[n], n, group=n in named)
    else:
        X = float_matrix(data, "data", "columns")
        wanted = feature_names(columns, X.shape[1])
        # an integer matrix keeps its type (its columns are declared integral: their
        # quantiles are released as integers); any other is read as floats
        typed = np.asarray(data) if getattr(getattr(data, "dtype", None), "kind", None) \
            in ("i", "u") else X
        arrays = {n: pa.array(typed[:, j]) for j, n in enumerate(wanted)}
        if named:
            raise ParameterError("group_by names a column of a table; for an array give "
                                 "the rows' group values (one per row) instead")
    missing = [n for n in [*wanted, *named] if n not in arrays]
    if missing:
        raise missing_columns(None, missing, names or [])
    group_name: str | None = group_by if isinstance(group_by, str) else None
    if group_by is not None and not isinstance(group_by, str):
        group_name = "__group"
        while group_name in arrays:
            group_name = "_" + group_name
        arrays[group_name] = _column_array(
            group_by if hasattr(group_by, "__arrow_array__") or hasattr(group_by, "dtype")
            else np.asarray(group_by), "group_by", group=True)
    lengths = {len(a) for a in arrays.values()}
    if len(lengths) > 1:
        raise InputDataError("group_by must give one group value per row of data")
    return pa.table(arrays), wanted, group_name


class Grouping:
    """Each row's group in an in-memory grouped table: the index in the PUBLIC list (and
    the list, ``[None]`` without ``group_by``), or — for groups found privately — the
    group column and its kind (and the public list given beside the selection, if any),
    resolved by :meth:`resolve` once the budget is charged; ``kept``: the keys the
    selection kept, once resolved."""

    def __init__(self, group: np.ndarray | None, groups: list[object], column: Any = None,
                 kind: str = "") -> None:
        self.group, self.groups, self.column, self.kind = group, groups, column, kind
        self.kept = 0

    def resolve(self, selection: SelectionPlan | None, rng: RandomSource
                ) -> tuple[np.ndarray, list[object]]:
        """Each row's group index and the groups: the public ones, or the keys
        ``selection`` keeps (:func:`~dprect.core.group_selection.select_keys`, drawn
        from ``rng``; call it after the charge) after the public list given beside it —
        whose keys the selection leaves out (docs/privacy.md §18)."""
        from dprect.engines.bounds_input import integral_arrow, listed_keys, resolve_groups
        from dprect.engines.grouped import key_counts
        from dprect.engines.row_kernels import group_index, single_type

        if selection is None:
            assert self.group is not None
            return self.group, self.groups
        if self.column is None:
            raise ParameterError("select_groups needs group_by")
        texts = [_group_text(v) for v in self.groups]
        # the column's own type: exact integers, float32 (the texts' rounding) or float64
        typed = {"integral": integral_arrow(self.column.type),
                 "single": single_type(self.column.type)}
        listed = listed_keys(texts, self.kind, "group_by", **typed)
        counts = {k: n for k, n in key_counts(self.column, self.kind).items()
                  if k not in listed}
        keys = select_keys(selection, counts, rng)
        self.kept = len(keys)
        index = group_index(self.column, self.kind,
                            resolve_groups([*texts, *keys], self.kind, "group_by", **typed))
        return index, [*self.groups, *keys]


def grouped_columns(data: object, columns: Sequence[str] | None, group_by: object,
                    groups: Sequence[object] | None, noun: str, select: bool = False
                    ) -> tuple[list[str], list[np.ndarray], Grouping]:
    """:func:`typed_grouped_columns` without the columns' integrality."""
    names, values, _, grouping = typed_grouped_columns(data, columns, group_by, groups,
                                                       noun, select)
    return names, values, grouping


def typed_grouped_columns(data: object, columns: Sequence[str] | None, group_by: object,
                          groups: Sequence[object] | None, noun: str, select: bool = False
                          ) -> tuple[list[str], list[np.ndarray], list[bool], Grouping]:
    """An in-memory table read for a product over groups (bounds, describe): the
    column names, each column as float64 (nulls as NaN), per column whether its DECLARED
    type is integral (:func:`~dprect.engines.bounds_input.integral_arrow` of its type in
    :func:`_bounds_table`: an integer dtype or type, a decimal of scale 0 — never read
    from the values; a column of Python objects is not) and its :class:`Grouping` — each
    row's index in the PUBLIC group list (−1: a row of no listed group, dropped) with the
    groups as the core names them (``[None]`` without ``group_by``), or with ``select``
    the group column, for a private selection after the charge (beside ``groups``, a
    public list released whatever its rows, if given). ``noun`` names a
    column in messages ("column to bound"). Refusals depend on the parameters and the
    schema only."""
    from dprect.engines.arrow_input import numeric_column
    from dprect.engines.bounds_input import group_kind_of_arrow, integral_arrow, resolve_groups
    from dprect.engines.row_kernels import group_index, single_type

    listed: list[object] | None = None
    if select:
        if group_by is None:
            raise ParameterError("select_groups needs group_by")
    elif group_by is None and groups is not None:
        raise ParameterError("groups needs group_by")
    if group_by is not None and (groups is not None or not select):
        if groups is None or isinstance(groups, str | bytes):
            raise ParameterError("group_by needs groups: the PUBLIC list of group values "
                                 "(never read from the data), or select_groups=True")
        listed = list(groups)
        if not listed:
            raise ParameterError("groups is empty")
        texts = [_group_text(v) for v in listed]
        check_no_empty_group(texts, "groups")
        if len(set(texts)) != len(texts):
            raise ParameterError("a group value is listed twice")
    if columns is not None and isinstance(columns, str):
        columns = [columns]
    table, names, group_name = _bounds_table(data, columns, group_by)
    if not names:
        raise ParameterError(f"give at least one {noun}")
    feature_names(names, len(names))  # no name twice
    if group_name is not None and group_name in names:
        raise ParameterError(f"the group column {group_name!r} is also a {noun}")
    values = [numeric_column(table, n, nulls_as_nan=True) for n in names]
    typed = [integral_arrow(table.schema.field(n).type) for n in names]
    if group_name is None:
        return names, values, typed, Grouping(np.zeros(table.num_rows, dtype=np.int32),
                                              [None])
    label = group_by if isinstance(group_by, str) else "group_by"
    kind = group_kind_of_arrow(table.schema.field(group_name).type, label)
    integral = integral_arrow(table.schema.field(group_name).type)
    single = single_type(table.schema.field(group_name).type)
    if select:  # the public list beside the selection checked now, before the charge
        resolve_groups([_group_text(v) for v in listed or ()], kind, label,
                       integral=integral, single=single)
        return names, values, typed, Grouping(None, list(listed or ()),
                                              table.column(group_name), kind)
    assert listed is not None
    resolved = resolve_groups([_group_text(v) for v in listed], kind, label,
                              integral=integral, single=single)
    return names, values, typed, Grouping(
        group_index(table.column(group_name), kind, resolved), listed)


__all__ = [
    "FloatOrder",
    "LabelText",
    "column_names",
    "fit",
    "fit_classes",
    "fit_engine",
    "fit_selected_classes",
    "label_counts",
    "nonprivate_bounding_box",
    "positive_mask",
    "positive_rows",
    "resolve_positive_label",
    "run_plan",
]
