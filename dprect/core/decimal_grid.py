"""A public grid of short decimals over every float (issue #41's quantiles; docs/privacy.md
§11a): the candidates a released quantile can take when real columns hold values typed
with a few decimals (0.31 carats, 29.92 inHg), which no binary bin edge equals.

**The values.** With D = ``digits`` and the decades k = K_MIN … K_MAX (K_MIN = −300 − D + 1,
K_MAX = 300 − D), the positive values are f(m, k) = m·10^k for every integer m in
[10^(D−1), 10^D): every decimal with at most D significant digits between 10^−300 and
10^300. f is computed as m·10^k (k ≥ 0) or m/10^(−k) (k < 0) from the correctly rounded
float of 10^|k|: for |k| ≤ 22 both operands are exact, so f is the correctly rounded
decimal — the very float a parser gives for "0.31" — and beyond that it is within an ulp
or so of it; either way f is a public constant, strictly increasing (consecutive values
differ by a relative 10^−D, far above the rounding).

**The cells, in the order of the values** (index i = 0 … 2P + 1, P = (K_MAX − K_MIN + 1)·
9·10^(D−1) values per sign): the negative cells (−f_{j+1}, −f_j] for j = P − 1 … 0 (the
first reaching −∞), the negative tiny cell (−f_0, 0) , the positive tiny cell [0, f_0) and
the positive cells [f_j, f_{j+1}) (the last reaching +∞). Each cell's *value* is its float of
smallest magnitude: f_j, −f_j, 0.0, and −5·10⁻³²⁴ for the negative tiny cell. A float's cell
is a function of the float alone (:meth:`DecimalGrid.encode`: an estimate from log10, then
corrected against f itself, so exact); −0.0 reads as +0.0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dprect.core.errors import ParameterError

_TINY_NEGATIVE = -math.ulp(0.0)  # −5e−324, the negative float of smallest magnitude
#: the correctly rounded float of 10^k, k = 0 … 329 (f and the estimate divide or multiply by it)
POW10 = np.array([float(f"1e{k}") for k in range(0, 330)], dtype=np.float64)


class DecimalGrid:
    """Decimals of ``digits`` significant digits between 10^−300 and 10^300, both signs,
    and zero (module docstring)."""

    def __init__(self, digits: int = 5) -> None:
        if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 8:
            raise ParameterError("a decimal grid's digits must be an integer in 1..8")
        self.digits = digits
        self.low_m = 10 ** (digits - 1)
        self.per_decade = 9 * self.low_m
        self.k_min = -300 - digits + 1
        self.k_max = 300 - digits
        self.per_sign = (self.k_max - self.k_min + 1) * self.per_decade
        #: index of the positive tiny cell [0, f_0), whose value is 0.0
        self.zero = self.per_sign + 1
        self.size = 2 * self.per_sign + 2

    def to_json(self) -> dict[str, Any]:
        """Its public parameters (what a run's recorded request holds)."""
        return {"type": "decimal", "digits": self.digits}

    # -- f_j, the positive values, j = 0 … P − 1
    def _f(self, j: np.ndarray) -> np.ndarray:
        j = np.asarray(j, dtype=np.int64)
        k = self.k_min + j // self.per_decade
        m = (self.low_m + j % self.per_decade).astype(np.float64)
        with np.errstate(over="ignore"):
            return np.where(k >= 0, m * POW10[np.abs(k)], m / POW10[np.abs(k)])

    def _magnitude_index(self, a: np.ndarray) -> np.ndarray:
        """For magnitudes a ≥ f_0: the largest j with f_j ≤ a (exact)."""
        with np.errstate(divide="ignore"):
            e = np.floor(np.log10(a)).astype(np.int64)
        k = np.clip(e - self.digits + 1, self.k_min, self.k_max)
        with np.errstate(over="ignore"):
            scaled = np.where(k >= 0, a / POW10[np.abs(k)], a * POW10[np.abs(k)])
        m = np.clip(np.floor(scaled).astype(np.int64), self.low_m, 10 * self.low_m - 1)
        j = np.clip((k - self.k_min) * self.per_decade + (m - self.low_m), 0,
                    self.per_sign - 1)
        for _ in range(4):  # the estimate is off by at most one or two: correct it on f
            down = self._f(j) > a
            up = (j + 1 < self.per_sign) & (self._f(np.minimum(j + 1, self.per_sign - 1))
                                            <= a)
            if not (down.any() or up.any()):
                return j
            j = j - down + up
        raise AssertionError("decimal grid index did not settle")  # cannot happen

    def encode(self, x: np.ndarray) -> np.ndarray:
        """The cell index of every (non-NaN) float."""
        x = np.asarray(x, dtype=np.float64)
        a = np.abs(x)
        f0 = float(self._f(np.zeros(1, dtype=np.int64))[0])
        big = a >= f0
        j = np.zeros(x.shape, dtype=np.int64)
        if big.any():
            j[big] = self._magnitude_index(a[big])
        return np.where(x >= 0,
                        np.where(big, self.zero + 1 + j, self.zero),
                        np.where(big, self.per_sign - 1 - j, self.per_sign)).astype(np.int64)

    def values(self, index: np.ndarray) -> np.ndarray:
        """Each cell's value (its float of smallest magnitude)."""
        i = np.asarray(index, dtype=np.int64)
        if len(i) and (i.min() < 0 or i.max() >= self.size):
            raise ParameterError("a decimal grid index lies outside the grid")
        pos = self._f(np.clip(i - self.zero - 1, 0, self.per_sign - 1))
        neg = -self._f(np.clip(self.per_sign - 1 - i, 0, self.per_sign - 1))
        return np.where(i > self.zero, pos,
                        np.where(i == self.zero, 0.0,
                                 np.where(i == self.per_sign, _TINY_NEGATIVE, neg)))

    def negative(self, index: np.ndarray) -> np.ndarray:
        """Whether each cell holds negative floats (its rows lie below its value)."""
        return np.asarray(index, dtype=np.int64) < self.zero


__all__ = ["POW10", "DecimalGrid"]
