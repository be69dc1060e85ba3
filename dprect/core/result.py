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
from dprect.core.accounting import Guarantee
from dprect.core.domains import Domain, domain_from_json
from dprect.core.randomness import SEEDED_WARNING

NON_PRIVATE_LABEL = "NON-PRIVATE: exact bounding box of the data, no privacy guarantee"


def _json_float(x: float) -> float | str:
    """JSON has no infinities: ±inf become the strings "inf" / "-inf"."""
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _from_json_float(x: float | str) -> float:
    return float(x)


@dataclass(frozen=True)
class FitResult:
    """A learned rectangle: ``lower[j] ≤ x_j ≤ upper[j]`` for every feature j."""

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
        """Boolean mask of the rows of X inside the rectangle (grid semantics: a row is
        inside when each feature's grid index lies between the bounds' indices)."""
        X = np.asarray(X, dtype=np.float64)
        inside = np.ones(len(X), dtype=bool)
        for j, d in enumerate(self.domains):
            idx = d.to_index(d.encode(X[:, j]))
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
                "domains": [d.to_json() for d in self.domains],
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
                         f"neighbours [{g.bound}]")
        if self.seeded:
            lines.append("WARNING: seeded run (reproducible, not for production)")
        width = max(len(f) for f in self.features)
        for f, lo, hi in zip(self.features, self.lower, self.upper, strict=True):
            lines.append(f"  {f:<{width}}  [{lo:.6g}, {hi:.6g}]")
        if self.empty:
            lines.append("  (empty rectangle: some lower bound exceeds its upper bound)")
        return "\n".join(lines)
