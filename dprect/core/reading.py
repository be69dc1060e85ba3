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
    j = int(np.argmax(~finite.all(axis=0)))
    name = names[j] if names is not None else f"column {j}"
    raise InputDataError(f"feature {name} has null, NaN or infinite values (refused under "
                         "the 'error' invalid-rows policy; the default 'drop' drops such rows)")


__all__ = ["float_of", "floats_of", "select_rows"]
