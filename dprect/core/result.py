"""The result of a fit: a rectangle in feature units, its guarantee and its parameters.

Everything in a result is either public (the request, the plan, the version) or the
differentially private output itself. No counts, no data-derived bounds, no timings.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dprect._version import __version__
from dprect.core.accounting import Guarantee, unused_delta
from dprect.core.domains import Domain, domain_from_json
from dprect.core.errors import ParameterError
from dprect.core.randomness import SEEDED_WARNING
from dprect.core.reading import float_table

NON_PRIVATE_LABEL = "NON-PRIVATE: exact bounding box of the data, no privacy guarantee"


def _json_float(x: float) -> float | str:
    """JSON has no infinities: ±inf become the strings "inf" / "-inf"."""
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _from_json_float(x: float | str) -> float:
    return float(x)


#: the result JSON's note on a bounded domain: what happens to values off the bounds
CLAMPING_NOTE = ("values below lower count as the first grid point (bin), values above "
                 "upper as the last; the bounds are public, never taken from the data")


def domain_json(domain: Domain) -> dict[str, Any]:
    """A domain's entry in the result JSON: :meth:`Domain.to_json` plus, for a domain
    with public bounds (a grid or an integer range), a ``"clamping"`` note
    (:data:`CLAMPING_NOTE`). The note is a constant — it says what the encoding does,
    not whether any value was clamped — and :func:`domain_from_json` ignores it."""
    out = domain.to_json()
    if domain.bounds is not None:
        out["clamping"] = CLAMPING_NOTE
    return out


def checked_rows(X: object, features: list[str]) -> np.ndarray:
    """``X`` as the (n, d) float64 rows of a released rectangle's d ``features``, read as
    :func:`dprect.fit` reads a table (:func:`~dprect.core.reading.float_table`); a table
    of another width or dimension is a :class:`ParameterError` naming the features (no
    row count), one that is not a table of numbers an
    :class:`~dprect.core.errors.InputDataError` naming its type."""
    arr = float_table(X, "X", "features")
    if arr.ndim != 2 or arr.shape[1] != len(features):
        got = f"{arr.shape[1]} columns" if arr.ndim == 2 else f"a {arr.ndim}-D array"
        raise ParameterError(
            f"contains needs a 2-D array with {len(features)} columns (the "
            f"features {', '.join(features)}, in that order), got {got}")
    return arr


@dataclass(frozen=True)
class FitResult:
    """A learned rectangle: ``lower[j] ≤ x_j ≤ upper[j]`` for every feature j (exactly:
    grid indices between ``lower_index`` and ``upper_index``; see :meth:`contains`)."""

    features: list[str]
    lower: list[float]
    upper: list[float]
    lower_index: list[int]
    upper_index: list[int]
    domains: list[Domain]
    method: str
    privacy: Guarantee | None
    parameters: dict[str, Any]
    seeded: bool
    version: str = field(default=__version__)

    @property
    def empty(self) -> bool:
        """True when some lower bound exceeds its upper bound (classifies all as 0)."""
        return any(lo > hi for lo, hi in zip(self.lower_index, self.upper_index, strict=True))

    def contains(self, X: np.ndarray) -> np.ndarray:
        """Which rows of ``X`` lie inside the rectangle: a boolean array of shape ``(n,)``.

        ``X`` is an ``(n, d)`` array (or anything :func:`numpy.asarray` turns into one —
        a DataFrame's columns are taken by position, not by name) whose d columns are the
        features in the order of :attr:`features`; another shape is a
        :class:`~dprect.core.errors.ParameterError`.

        A row is inside when, on every feature j, its grid index (the domain's encoding
        of the value) lies between ``lower_index[j]`` and ``upper_index[j]``, both
        inclusive — the same test as the Spark jobs' predicate. In feature units:

        * float order: ``lower[j] <= x <= upper[j]``, both ends inclusive;
        * integer range: ``lower[j] <= floor(x) <= upper[j]``;
        * grid: x falls in one of the bins from ``lower[j]`` to ``upper[j]``. Bins are
          ``[left, right)``, so the value ``upper[j]`` itself belongs to the next bin
          unless it is the grid's upper bound (and, the bin being computed in float64,
          a value exactly on a bin edge may land on either side of it).

        For a grid or an integer range, values outside the public bounds (±inf included)
        are clamped into the end bins: a value below the lower bound is inside on axis j
        whenever ``lower_index[j] == 0``, one above the upper bound whenever
        ``upper_index[j]`` is the last grid point.

        An empty rectangle (:attr:`empty`) contains no row: every entry is False.

        ``X`` is read as :func:`dprect.fit` reads a table (:mod:`dprect.core.reading`):
        numbers and booleans by their dtype, a list of rows, an object array or a
        DataFrame's object column value by value — a string, None or any other value
        that is not a number is NaN, a number beyond float64 ±inf. A row holding a NaN
        is inside no rectangle (the fit leaves such rows out). No value raises an error
        and no message quotes one: only X's shape and type are refused."""
        X = checked_rows(X, self.features)
        inside = ~np.isnan(X).any(axis=1)
        for j, d in enumerate(self.domains):
            column = np.where(np.isnan(X[:, j]), 0.0, X[:, j])  # NaN: no grid index
            idx = d.to_index(d.encode(column))
            inside &= (idx >= np.uint64(self.lower_index[j])) & (
                idx <= np.uint64(self.upper_index[j]))
        return inside

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": self.method,
            "features": list(self.features),
            "lower": [_json_float(x) for x in self.lower],
            "upper": [_json_float(x) for x in self.upper],
            "empty": self.empty,
            "privacy": None if self.privacy is None else self.privacy.to_json(),
            "parameters": self.parameters,
            "grid": {
                "domains": [domain_json(d) for d in self.domains],
                "lower_index": [str(i) for i in self.lower_index],
                "upper_index": [str(i) for i in self.upper_index],
            },
            "seeded": self.seeded,
            "version": self.version,
        }
        if self.privacy is None:
            out["warning"] = NON_PRIVATE_LABEL
        elif self.seeded:
            out["warning"] = SEEDED_WARNING
        return out

    def to_json_string(self) -> str:
        return json.dumps(self.to_json(), indent=2, allow_nan=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FitResult:
        privacy = None if data.get("privacy") is None else Guarantee(**data["privacy"])
        grid = data["grid"]
        return cls(
            features=list(data["features"]),
            lower=[_from_json_float(x) for x in data["lower"]],
            upper=[_from_json_float(x) for x in data["upper"]],
            lower_index=[int(i) for i in grid["lower_index"]],
            upper_index=[int(i) for i in grid["upper_index"]],
            domains=[domain_from_json(d) for d in grid["domains"]],
            method=data["method"],
            privacy=privacy,
            parameters=data["parameters"],
            seeded=bool(data["seeded"]),
            version=data["version"],
        )

    def summary(self) -> str:
        """A short human-readable description."""
        lines = [f"method: {self.method}"]
        if self.privacy is None:
            lines.append(NON_PRIVATE_LABEL)
        else:
            g = self.privacy
            lines.append(f"privacy: ({g.epsilon:.6g}, {g.delta:.3g})-DP, {g.neighbouring} "
                         f"neighbours [{g.bound}]{unused_delta(self.parameters, g)}")
        if self.seeded:
            lines.append("WARNING: seeded run (reproducible, not for production)")
        width = max(len(f) for f in self.features)
        for f, lo, hi in zip(self.features, self.lower, self.upper, strict=True):
            lines.append(f"  {f:<{width}}  [{lo:.6g}, {hi:.6g}]")
        if self.empty:
            lines.append("  (empty rectangle: some lower bound exceeds its upper bound)")
        return "\n".join(lines)


def grouped_json(result: Any, **between: Any) -> dict[str, Any]:
    """The JSON of a grouped aggregate's result (describe's, the quantiles'), in this
    order: its ``columns`` and ``groups``, then ``between`` (the quantiles' statistics),
    its rows as ``results``, its guarantee as ``privacy``, its ``plan`` and whether it was
    ``seeded`` (then also the warning :data:`~dprect.core.randomness.SEEDED_WARNING`)."""
    out: dict[str, Any] = {"columns": list(result.columns), "groups": list(result.groups),
                           **between, "results": result.rows(),
                           "privacy": result.guarantee.to_json(),
                           "plan": result.plan.to_json(), "seeded": result.seeded}
    if result.seeded:
        out["warning"] = SEEDED_WARNING
    return out
