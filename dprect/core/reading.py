"""How the values of an in-memory table are read: the per-value rule for tables whose type
does not fix the values' type (Python lists, numpy object arrays and pandas or polars
object columns), and the invalid-row policy (:func:`select_rows`).

Such a container's schema says only "any object", so every value is read on its own, the
same way for :func:`dprect.fit` and :func:`dprect.bounds` (issue #21):

* a number (int, float, bool, numpy scalar, Decimal, Fraction, ...) is its float64 value;
  one beyond float64's range (``10**400``) reads as ±inf;
* anything else — a string (even one that spells a number), None, a complex number, a
  nested list — reads as NaN.

NaN and ±inf are invalid values: the fit's row policy drops their rows (or refuses the
table under ``invalid_rows="error"``, the opt-in, data-dependent refusal) and the bounds
leave them out of their column. The rule is row-local and never raises, so no value of a
table whose schema is valid can end a run with an error, and neighbouring tables stay
neighbouring.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np

from dprect.core.errors import InputDataError
from dprect.core.request import FitRequest, InvalidRows


def float_of(value: object) -> float:
    """One value as float64 by the rule above (never raises)."""
    if isinstance(value, str | bytes):
        return math.nan
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:
        try:
            return math.inf if value > 0 else -math.inf  # type: ignore[operator]
        except Exception:  # an object that overflows and cannot compare
            return math.nan
    except Exception:  # not a number: any exception its __float__ raises
        return math.nan


def floats_of(values: object) -> np.ndarray:
    """An object array (any shape) read value by value as float64."""
    arr = np.asarray(values, dtype=object)
    flat = np.fromiter((float_of(v) for v in arr.ravel()), dtype=np.float64, count=arr.size)
    return flat.reshape(arr.shape)


#: what an in-memory table may be, for the refusal of anything else
TABLE_KINDS = "a numpy array, a list of rows, a pandas DataFrame or a pyarrow Table"


def check_table(X: object, what: str = "X", columns: str = "features") -> None:
    """Refuse, by its type alone, an ``X`` that is no in-memory table: None, a number, a
    path (the Python functions read no file), an iterator (read once: nothing would be
    left after its shape is read), a Spark DataFrame (the Spark engine's). One
    :class:`InputDataError` naming the type and what to give instead, where Python or a
    library raised its own error (``'NoneType' object is not iterable``, Spark's
    ``Cannot convert column into bool``) or a misleading one."""
    kind = type(X).__name__
    if type(X).__module__.split(".")[0] == "pyspark":
        raise InputDataError(
            f"{what} is a Spark {kind}: dprect's Python functions read in-memory tables "
            f"({TABLE_KINDS}); on Spark use dprect.engines.spark.fit.fit_dataframe, or the "
            "command line's --engine spark and the jobs")
    if isinstance(X, str | bytes | os.PathLike):
        raise InputDataError(
            f"{what} must be an in-memory table ({TABLE_KINDS}), got a path ({kind}): "
            "read it first (pyarrow.parquet.read_table, pandas.read_csv), or give it to "
            "the command line's --input")
    if X is None or hasattr(X, "__next__") or not (
            hasattr(X, "__iter__") or hasattr(X, "__array__")
            or hasattr(X, "__array_interface__") or hasattr(X, "__getitem__")):
        raise InputDataError(f"{what} must be an in-memory table (rows × {columns}): "
                             f"{TABLE_KINDS}; got {kind}")


def table_rows(X: object, what: str = "X", columns: str = "features") -> np.ndarray:
    """An untyped table (a list of rows, a DataFrame of mixed columns) as an array: numeric
    when numpy reads every value as a number, else an object array of its rows × columns,
    whatever the values are (a value that is itself a list stays one value). The schema of
    a list of rows is its nesting: rows of unequal length are refused, with no count; what
    is no table at all, by :func:`check_table`."""
    check_table(X, what, columns)
    try:
        arr = np.asarray(X)
    except ValueError:  # ragged, or a value that is a sequence
        arr = None
    if arr is not None and arr.ndim != 2 and arr.ndim > 0 and len(arr) == 0:
        return arr  # an empty list: no rows to look at, refused as not 2-D
    if arr is not None and arr.dtype.kind in "biuf" and arr.ndim == 2:
        return arr
    if arr is None or arr.ndim != 2 or arr.dtype.kind not in "biufO":
        rows = list(X)  # type: ignore[call-overload]
        if not all(isinstance(r, list | tuple | np.ndarray) for r in rows) \
                or len({len(r) for r in rows}) > 1:
            raise InputDataError(f"{what} must be a list of equally long rows "
                                 f"(rows × {columns})")
        out = np.empty((len(rows), len(rows[0]) if rows else 0), dtype=object)
        for i, row in enumerate(rows):
            for j, v in enumerate(row):
                out[i, j] = v
        return out
    return np.asarray(X, dtype=object)


def float_table(X: object, what: str = "X", columns: str = "features") -> np.ndarray:
    """X as float64. Its dtype is its schema: numbers and booleans are read, strings and
    other types refused. An object array — and a Python list, whose dtype numpy would
    guess from its values — is read value by value (:func:`floats_of`): a value that is
    not a number becomes NaN and one beyond float64 ±inf (invalid rows for the row
    policy), so no value refuses it. An array-like numpy cannot shape (ragged rows) is an
    :class:`InputDataError` too, never numpy's text."""
    typed = isinstance(X, np.ndarray) or hasattr(X, "dtype")
    try:
        arr = np.asarray(X) if typed else table_rows(X, what, columns)
    except InputDataError:  # a ValueError too: table_rows' own refusal, as it is
        raise
    except ValueError:  # ragged rows of an array-like
        raise InputDataError(f"{what} must be a 2-D array of numbers (rows × {columns})"
                             ) from None
    if arr.dtype.kind == "O":
        return floats_of(arr)  # the per-value rule
    if arr.dtype == np.bool_ or np.issubdtype(arr.dtype, np.integer) \
            or np.issubdtype(arr.dtype, np.floating):
        return arr.astype(np.float64, copy=False)
    raise InputDataError(f"{what} must hold numbers only; its dtype is {arr.dtype}")


def float_matrix(X: object, what: str = "X", columns: str = "features") -> np.ndarray:
    """``X`` as a 2-D float64 array (:func:`float_table`) — the table of
    :func:`dprect.fit`, :func:`dprect.bounds` and a released rectangle's ``contains``;
    refused by its shape and type only, never for a value, with no count in the
    message."""
    arr = float_table(X, what, columns)
    if arr.ndim != 2:
        raise InputDataError(f"{what} must be a 2-D array (rows × {columns}), got {arr.ndim} "
                             f"dimension(s)")
    return arr


def select_rows(X: np.ndarray, positive: np.ndarray, names: Sequence[str] | None = None,
                invalid_rows: InvalidRows | str = FitRequest.invalid_rows) -> np.ndarray:
    """The rows of X (float64, 2-D) where ``positive`` holds, under the invalid-row policy.

    ``drop`` (default): rows with a null, NaN or ±inf feature are left out — row-local, so
    neighbouring tables stay neighbouring and it costs no privacy. ``error``: such a row
    anywhere (any label) refuses the table, naming the feature. That refusal depends on
    the data: it is OUTSIDE the privacy guarantee (opt in only for trusted checks).
    """
    policy = InvalidRows.parse(invalid_rows, "invalid_rows")
    finite = np.isfinite(X)
    if finite.all():
        return X[positive]
    if policy is InvalidRows.DROP:
        return X[positive & finite.all(axis=1)]
    check_invalid_rows(X, names, policy, finite)  # ``error``: a row is not finite, refused
    return X[positive]


def check_invalid_rows(X: np.ndarray, names: Sequence[str] | None,
                       invalid_rows: InvalidRows | str,
                       finite: np.ndarray | None = None) -> None:
    """The ``error`` invalid-rows policy's refusal: a null (NaN in X), NaN or ±inf
    feature in ANY row of X, whatever its label, refuses the table naming the first such
    feature; nothing under ``drop``. Data-dependent, OUTSIDE the privacy guarantee — and
    independent of every draw: a private class selection checks the table with it before
    its draw (docs/privacy.md §18), so whether a run is refused never tells which classes
    the draw kept. ``finite``: ``np.isfinite(X)``, when the caller has it."""
    if InvalidRows.parse(invalid_rows, "invalid_rows") is not InvalidRows.ERROR:
        return
    finite = np.isfinite(X) if finite is None else finite
    if finite.all():
        return
    j = int(np.argmax(~finite.all(axis=0)))
    name = repr(names[j]) if names is not None else f"column {j}"  # as Spark's names it
    raise InputDataError(f"feature {name} has null, NaN or infinite values (refused under "
                         "the 'error' invalid-rows policy; the default 'drop' drops such rows)")


__all__ = ["TABLE_KINDS", "check_invalid_rows", "check_table", "float_matrix", "float_of",
           "float_table", "floats_of", "select_rows", "table_rows"]
