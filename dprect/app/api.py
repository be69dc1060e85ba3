"""The public entry points: :func:`fit` (in-memory), :func:`fit_engine` (any engine) and
:func:`nonprivate_bounding_box` (a non-private reference)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dprect.core.accounting import ADD_REMOVE
from dprect.core.algorithms import run_composition, run_nonprivate_bounding_box, run_randmargins
from dprect.core.domains import Domain, FloatOrder, parse_grid_spec
from dprect.core.engine import Engine
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.planner import Plan, plan
from dprect.core.randomness import RandomSource
from dprect.core.result import FitResult
from dprect.engines.numpy_engine import NumpyEngine

GridArg = Domain | Sequence[Domain] | str | None


def resolve_domains(grid: GridArg, features: list[str]) -> list[Domain]:
    """Domains for ``features`` from a Domain (same for all), a list (one per feature), a
    ``--grid`` string, or None (the float-order domain for all)."""
    if grid is None or isinstance(grid, str):
        return parse_grid_spec(grid, features)
    if isinstance(grid, Domain):
        return [grid for _ in features]
    domains = list(grid)
    if len(domains) != len(features):
        raise ParameterError(
            f"grid has {len(domains)} domains but there are {len(features)} features")
    for i, d in enumerate(domains):
        if not isinstance(d, Domain):
            raise ParameterError(f"grid[{i}] must be a Domain, got {d!r}")
    return domains


def feature_names(features: Sequence[str] | None, dims: int) -> list[str]:
    """Feature names (x0, x1, … by default); duplicates are refused."""
    if features is None:
        return [f"x{j}" for j in range(dims)]
    names = [str(f) for f in features]
    if len(names) != dims:
        raise ParameterError(f"features has {len(names)} names but X has {dims} columns")
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ParameterError(f"feature {n!r} is named twice")
        seen.add(n)
    return names


INVALID_ROWS = ("drop", "error")
#: what a label column can hold, read from its type (its schema), never from its values
LABEL_KINDS = ("numeric", "boolean", "string", "null", "any")
_TRUE_WORDS = frozenset({"1", "true", "t", "yes", "y"})
_FALSE_WORDS = frozenset({"0", "false", "f", "no", "n"})


@dataclass(frozen=True)
class LabelText:
    """A positive label given as text (the command line, a config string): it is read
    against the label column's type by :func:`resolve_positive_label` — ``yes``/``true``
    is 1 for a numeric column and true for a boolean one; a string column takes the text
    as it is."""

    text: str


def check_invalid_rows(invalid_rows: object) -> str:
    """The invalid-row policy: ``drop`` (row-local, inside the guarantee) or ``error``."""
    if invalid_rows not in INVALID_ROWS:
        raise ParameterError(f"invalid_rows must be one of {', '.join(INVALID_ROWS)}; "
                             f"got {invalid_rows!r}")
    return str(invalid_rows)


def check_label_value(value: object) -> bool | int | float | str | LabelText:
    """A positive label must be a number, a string or a boolean (or :class:`LabelText`);
    a number must be finite. Checked without any data."""
    if isinstance(value, LabelText | bool | str):
        return value
    if isinstance(value, numbers.Real):
        if not math.isfinite(float(value)):
            raise ParameterError(f"the positive label must be finite, got {value!r}")
        return value  # type: ignore[return-value]
    raise ParameterError("the positive label must be a number, a string or a boolean, "
                         f"got {type(value).__name__}")


def _describe(value: object) -> str:
    kind = ("a boolean" if isinstance(value, bool) else "a string" if isinstance(value, str)
            else "a number")
    return f"{value!r} ({kind})"


def resolve_positive_label(value: object, kind: str, column: str) -> bool | float | str | None:
    """The positive label as a value comparable with a label column of ``kind`` (one of
    :data:`LABEL_KINDS`, from the column's *type*): a float for a numeric column (labels
    are compared as float64), a bool for a boolean one, a str for a string one. None for
    a column of the null type (it holds no value, so no row is positive).

    Compatible pairs: numeric column and a number or a boolean (true is 1); boolean column
    and a boolean, or the number 0 or 1; string column and a string. Text
    (:class:`LabelText`) is parsed against the column's type. Anything else is refused
    with :class:`ParameterError` — a decision from the schema and the parameter only.
    """
    value = check_label_value(value)
    spelling = "positive label (--positive-label / positive_label)"
    if kind == "null":
        return None
    if isinstance(value, LabelText):
        text = value.text.strip()
        word = text.lower()
        if kind in ("string", "any"):
            return value.text
        if kind == "boolean":
            if word in _TRUE_WORDS:
                return True
            if word in _FALSE_WORDS:
                return False
            raise ParameterError(
                f"the label column {column!r} is boolean: the {spelling} must be true or "
                f"false (or yes/no, 1/0), got {value.text!r}")
        if word in _TRUE_WORDS - {"1"}:
            return 1.0
        if word in _FALSE_WORDS - {"0"}:
            return 0.0
        try:
            number = float(text)
        except ValueError:
            raise ParameterError(
                f"the label column {column!r} is numeric: the {spelling} must be a number "
                f"(or true/false), got {value.text!r}") from None
        if not math.isfinite(number):
            raise ParameterError(f"the {spelling} must be finite, got {value.text!r}")
        return number
    if kind == "any":
        return value
    if kind == "numeric":
        if isinstance(value, str):
            raise ParameterError(
                f"the label column {column!r} is numeric, but the {spelling} is "
                f"{_describe(value)}; give a number")
        return float(value)
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if not isinstance(value, str) and float(value) in (0.0, 1.0):
            return float(value) == 1.0
        raise ParameterError(
            f"the label column {column!r} is boolean, but the {spelling} is "
            f"{_describe(value)}; give true or false")
    if kind == "string":
        if isinstance(value, str):
            return value
        raise ParameterError(
            f"the label column {column!r} holds strings, but the {spelling} is "
            f"{_describe(value)}; give the label as a string")
    raise ParameterError(f"unknown label column kind {kind!r}")


def label_kind_of_dtype(dtype: np.dtype, column: str = "y") -> str:
    """The :data:`LABEL_KINDS` kind of a numpy label array's dtype (its schema): object
    arrays are ``any`` (each value is compared with the label as Python compares them).
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


def _equals(v: object, label: object) -> bool:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return False
    try:
        return bool(v == label)
    except (TypeError, ValueError):  # an array inside an object array, ...
        return False


def positive_mask(y: object, positive_label: object = 1, column: str = "y") -> np.ndarray:
    """True for the labels equal to ``positive_label`` (:func:`resolve_positive_label`);
    every other value — another label, a null, a NaN — is False. A row-local test that
    never raises for a value; only y's shape and dtype can be refused. A Python list has
    no dtype of its own: its values are compared one by one as Python compares them."""
    label = check_label_value(positive_label)
    typed = isinstance(y, np.ndarray) or hasattr(y, "dtype")  # numpy, pandas: a schema
    y_arr = np.asarray(y) if typed else np.asarray(y, dtype=object)
    if y_arr.ndim != 1:
        raise InputDataError(f"labels must be a 1-D array, got shape {y_arr.shape}")
    value = resolve_positive_label(label, label_kind_of_dtype(y_arr.dtype, column), column)
    if y_arr.dtype.kind == "O":
        return np.fromiter((_equals(v, value) for v in y_arr), dtype=bool, count=len(y_arr))
    if y_arr.dtype == np.bool_:
        return y_arr == bool(value)
    if y_arr.dtype.kind == "U":
        return y_arr == value
    return y_arr.astype(np.float64) == value


def _features_array(X: object) -> np.ndarray:
    """X as float64. Its dtype is its schema: numbers and booleans are read, strings and
    other types refused. An object array — and a Python list, whose dtype numpy would
    guess from its values — is converted value by value: a value that is not a number
    becomes NaN (an invalid row for the row policy), so no value refuses it."""
    typed = isinstance(X, np.ndarray) or hasattr(X, "dtype")
    arr = np.asarray(X)
    if not typed and arr.dtype.kind not in "biuf":
        arr = np.asarray(X, dtype=object)
    if arr.dtype.kind == "O":
        def number(v: object) -> float:
            try:
                out = float(v)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return math.nan
            return math.nan if isinstance(v, str) else out

        flat = np.fromiter((number(v) for v in arr.ravel()), dtype=np.float64,
                           count=arr.size)
        return flat.reshape(arr.shape)
    if arr.dtype == np.bool_ or np.issubdtype(arr.dtype, np.integer) \
            or np.issubdtype(arr.dtype, np.floating):
        return arr.astype(np.float64, copy=False)
    raise InputDataError(f"X must hold numbers only; its dtype is {arr.dtype}")


def select_rows(X: np.ndarray, positive: np.ndarray, names: Sequence[str] | None = None,
                invalid_rows: str = "drop") -> np.ndarray:
    """The rows of X (float64, 2-D) where ``positive`` holds, under the invalid-row policy.

    ``drop`` (default): rows with a null, NaN or ±inf feature are left out — row-local, so
    neighbouring tables stay neighbouring and it costs no privacy. ``error``: such a row
    anywhere (any label) refuses the table, naming the feature. That refusal depends on
    the data: it is OUTSIDE the privacy guarantee (opt in only for trusted checks).
    """
    check_invalid_rows(invalid_rows)
    finite = np.isfinite(X)
    if finite.all():
        return X[positive]
    if invalid_rows == "drop":
        return X[positive & finite.all(axis=1)]
    j = int(np.argmax(~finite.all(axis=0)))
    name = names[j] if names is not None else f"column {j}"
    raise InputDataError(f"feature {name} has null, NaN or infinite values (refused under "
                         "the 'error' invalid-rows policy; the default 'drop' drops such rows)")


def positive_rows(X: object, y: object, names: Sequence[str] | None = None,
                  invalid_rows: str = "drop", positive_label: object = 1) -> np.ndarray:
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
    check_invalid_rows(invalid_rows)
    check_label_value(positive_label)
    try:
        X_arr = _features_array(X)
    except ValueError as exc:  # ragged rows
        raise InputDataError(f"X must be a 2-D array of numbers: {exc}") from None
    if X_arr.ndim != 2:
        raise InputDataError(f"X must be a 2-D array (rows × features), got shape {X_arr.shape}")
    if X_arr.shape[1] == 0:
        raise InputDataError("X has no feature columns")
    typed = isinstance(y, np.ndarray) or hasattr(y, "dtype")
    y_arr = np.asarray(y) if typed else np.asarray(y, dtype=object)
    if y_arr.ndim != 1 or len(y_arr) != len(X_arr):
        raise InputDataError(
            f"y must be 1-D with one label per row of X ({len(X_arr)}), got shape {y_arr.shape}")
    positive = positive_mask(y if typed else y_arr, positive_label)
    return select_rows(X_arr, positive, names, invalid_rows)


def fit_engine(
    engine: Engine,
    domains: list[Domain],
    features: list[str],
    *,
    epsilon: float,
    delta: float,
    method: str = "auto",
    beta: float = 1e-4,
    accounting: str = "refined",
    shape: str = "general",
    margin_law: str = "staircase",
    neighbouring: str = ADD_REMOVE,
    seed: int | None = None,
    rng: RandomSource | None = None,
    trace: list | None = None,
) -> FitResult:
    """Plan from the budget, run the chosen method on ``engine``, and package the result."""
    the_plan = plan(epsilon=epsilon, delta=delta, domains=domains, beta=beta, method=method,
                    accounting=accounting, shape=shape, margin_law=margin_law,
                    neighbouring=neighbouring)
    if rng is None:
        rng = RandomSource(seed=seed)
    elif seed is not None:
        raise ParameterError("give either seed or rng, not both")
    return run_plan(engine, domains, features, the_plan, rng, trace=trace)


def run_plan(engine: Engine, domains: list[Domain], features: list[str], the_plan: Plan,
             rng: RandomSource, trace: list | None = None) -> FitResult:
    """Run an already-made plan on an engine."""
    chosen = the_plan.chosen
    if chosen.method == "randmargins":
        rect = run_randmargins(engine, domains, chosen, rng, trace=trace)
    else:
        rect = run_composition(engine, domains, chosen, rng, trace=trace)
    lower, upper = rect.to_units(domains)
    return FitResult(
        features=list(features), lower=lower, upper=upper,
        lower_index=list(rect.lo), upper_index=list(rect.hi), domains=list(domains),
        method=chosen.method, privacy=chosen.guarantee,
        parameters=the_plan.to_json(), seeded=rng.seeded,
    )


def _in_memory(X: object, y: object, grid: GridArg, features: Sequence[str] | None,
               positive_label: object = 1, invalid_rows: str = "drop",
               ) -> tuple[list[str], list[Domain], NumpyEngine]:
    """Check (X, y), name the features, resolve their domains and load the positives
    into a :class:`NumpyEngine` (shared by :func:`fit` and the bounding box)."""
    check_invalid_rows(invalid_rows)
    check_label_value(positive_label)
    shape = np.shape(X) if isinstance(X, np.ndarray) or hasattr(X, "shape") else None
    if shape is None:
        try:
            shape = np.asarray(X, dtype=object).shape
        except ValueError:  # ragged rows: positive_rows names the problem
            shape = ()
    names = feature_names(features, shape[1]) if len(shape) == 2 else None
    X_pos = positive_rows(X, y, names, invalid_rows=invalid_rows,
                          positive_label=positive_label)  # raises unless X is 2-D
    assert names is not None
    domains = resolve_domains(grid, names)
    return names, domains, NumpyEngine.from_features(X_pos, domains)


def fit(
    X: object,
    y: object,
    *,
    grid: GridArg = None,
    epsilon: float,
    delta: float,
    method: str = "auto",
    beta: float = 1e-4,
    seed: int | None = None,
    features: Sequence[str] | None = None,
    accounting: str = "refined",
    shape: str = "general",
    margin_law: str = "staircase",
    neighbouring: str = ADD_REMOVE,
    positive_label: object = 1,
    invalid_rows: str = "drop",
) -> FitResult:
    """Learn an (ε, δ)-DP axis-aligned rectangle around the positive rows of X.

    Parameters
    ----------
    X, y : rows × features array and its labels. Only rows whose label equals
        ``positive_label`` are learned from; every other row (another label, a null or NaN
        label) is a negative. No data (an empty X) or no positive row gives an ordinary
        result — an empty rectangle, as the privacy guarantee requires — not an error.
    grid : per-feature public domains (:class:`~dprect.Grid`, :class:`~dprect.IntegerRange`,
        :class:`~dprect.FloatOrder`), one for all, a list, a ``--grid`` string, or None for
        the float-order domain (no bounds needed).
    epsilon, delta : the total budget (ε̃, δ̃).
    method : ``auto`` (the planner picks the smaller predicted error), ``randmargins`` or
        ``composition``.
    beta : failure target of the whole run (any interior-point call missing its input).
    seed : for tests and reproducibility only — a seeded run is not private against anyone
        who knows the seed, and its result says so. Default: OS entropy.
    accounting : ``refined`` (design note §5) or ``paper`` (the paper's statement).
    shape : ``general`` (R = 2d rounds) or ``origin`` (the paper's origin-anchored class).
    neighbouring : ``add-remove`` (default) or ``replace-one`` (via group privacy).
    positive_label : the label of the positive rows (default 1): a number (numeric or
        boolean labels; true is 1), a string (string labels) or a boolean (boolean or
        numeric labels). A label dtype that cannot hold it is refused (from the dtype,
        not the values); a Python list's values are compared one by one.
    invalid_rows : ``drop`` (default): rows with a null, NaN or ±inf feature are left out
        (row-local, inside the guarantee). ``error`` refuses X if any row has one: that
        refusal depends on the data and is OUTSIDE the privacy guarantee.

    Errors depend only on the parameters and on X's and y's shapes and types.
    """
    names, domains, engine = _in_memory(X, y, grid, features, positive_label, invalid_rows)
    return fit_engine(engine, domains, names, epsilon=epsilon, delta=delta, method=method,
                      beta=beta, accounting=accounting, shape=shape, margin_law=margin_law,
                      neighbouring=neighbouring, seed=seed)


def nonprivate_bounding_box(X: object, y: object, *, grid: GridArg = None,
                            features: Sequence[str] | None = None,
                            positive_label: object = 1,
                            invalid_rows: str = "drop") -> FitResult:
    """The exact bounding box of the positives, on the same grid. **NOT private.**"""
    names, domains, engine = _in_memory(X, y, grid, features, positive_label, invalid_rows)
    rect = run_nonprivate_bounding_box(engine, domains)
    lower, upper = rect.to_units(domains)
    params: dict[str, Any] = {"note": "exact bounding box; no noise, no privacy"}
    return FitResult(list(names), lower, upper, list(rect.lo), list(rect.hi), domains,
                     "nonprivate-bounding-box", None, params, seeded=False)


__all__ = ["FloatOrder", "LabelText", "fit", "fit_engine", "nonprivate_bounding_box",
           "positive_mask", "positive_rows", "resolve_positive_label", "run_plan"]
