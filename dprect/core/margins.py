"""Margin laws: the law of N_t, the size of the block B_t of round t (docs/algorithm.md §4).

The privacy proof (docs/privacy.md §4, step 4) uses one number of the law:

    ρ = inf_{r ≥ 1} P(N ≥ r + Δ) / P(N ≥ r),

the chance that a point inside B_t lies in B_t \\ D_t (and is therefore removed unless the
IP fails). The utility is driven by E[N]: a round misclassifies at most N_t − 1 remaining
positives, about N_t − Δ/2 for a median-like interior point.

Two laws, both with exact samplers (no floating point in the draws):

* :class:`StaircaseLaw` (default): N = Δ·(1 + J), P(J ≥ j) = ρ^j, ρ = a/b rational.
  P(N ≥ r + Δ) = ρ·P(N ≥ r) for every r ≥ 1, so its ratio is exactly ρ, and
  E[N] = Δ/(1 − ρ) is the smallest mean of any law with N ≥ Δ and ratio ρ.
* :class:`LaplaceLaw` (the paper's, Algorithm 1): N = max(Δ, μ + ⌈w⌉),
  w ~ Laplace(0, 2Δ), μ = ⌈4Δ·ln(1/β)⌉ (the paper's μ rounded up to an integer so that
  N can be drawn exactly). ⌈w⌉ is 1 + G with probability ½ and −G' otherwise, G, G'
  geometric with ratio e^{−1/(2Δ)}, drawn exactly. Its survival function is log-concave,
  so ρ = min(e^{−1/2}, P(N ≥ 2Δ)).

Every ρ reported here is rounded *down* by one part in 10^12: a smaller ρ can only make
the accountant more conservative.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from fractions import Fraction
from typing import Any

from dprect.core import crmath
from dprect.core.randomness import RandomSource
from dprect.core.validation import check_open_unit, check_positive_int

_SAFETY = 1.0 - 1e-12


class MarginLaw(ABC):
    """The law of the block size N ≥ Δ of one round."""

    #: the law's name in a request and in JSON (``margin_law``)
    name: str
    #: the interior-point input size Δ
    size: int

    @property
    @abstractmethod
    def rho(self) -> float:
        """ρ = inf_{r≥1} P(N ≥ r + Δ)/P(N ≥ r) (rounded down)."""

    @property
    @abstractmethod
    def mean(self) -> float:
        """E[N]."""

    @abstractmethod
    def tail(self, r: int) -> float:
        """P(N ≥ r)."""

    @abstractmethod
    def sample(self, rng: RandomSource) -> int:
        """One exact draw of N."""

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """Public parameters of the law."""

    @property
    @abstractmethod
    def summary(self) -> str:
        """The law and its defining parameter in a few characters (the plan's table)."""

    @property
    def expected_misclassified(self) -> float:
        """Predicted misclassified positives of one round: E[N] − Δ/2."""
        return self.mean - self.size / 2


class StaircaseLaw(MarginLaw):
    """N = Δ·(1 + J) with P(J ≥ j) = ρ^j; ρ a rational in (0, 1)."""

    name = "staircase"

    def __init__(self, size: int, rho: Fraction | float | str) -> None:
        self.size = check_positive_int(size, "size")
        r = Fraction(rho).limit_denominator(10**6) if isinstance(rho, float) else Fraction(rho)
        check_open_unit(float(r), "rho")
        self._rho = r

    @property
    def rho_fraction(self) -> Fraction:
        return self._rho

    @property
    def rho(self) -> float:
        return float(self._rho) * _SAFETY

    @property
    def mean(self) -> float:
        return self.size / (1.0 - float(self._rho))

    def tail(self, r: int) -> float:
        if r <= self.size:
            return 1.0
        return float(self._rho) ** (math.ceil(r / self.size) - 1)

    def sample(self, rng: RandomSource) -> int:
        return self.size * (1 + rng.geometric(self._rho))

    def to_json(self) -> dict[str, Any]:
        return {"law": self.name, "size": self.size, "rho": str(self._rho)}

    @property
    def summary(self) -> str:
        return f"{self.name} rho={self._rho}"


class LaplaceLaw(MarginLaw):
    """The paper's law: N = max(Δ, μ + ⌈w⌉), w ~ Laplace(0, 2Δ), μ = ⌈4Δ·ln(1/β)⌉."""

    name = "laplace"

    def __init__(self, size: int, beta: float) -> None:
        self.size = check_positive_int(size, "size")
        self.beta = check_open_unit(beta, "beta")
        self.scale = 2 * self.size  # b = 2Δ
        self.mu = math.ceil(4 * self.size * crmath.log(1 / self.beta))

    def _shift_tail(self, k: int) -> float:
        """T(k) = P(⌈w⌉ ≥ k)."""
        b = self.scale
        if k >= 1:
            return 0.5 * math.exp(-(k - 1) / b)
        return 1.0 - 0.5 * math.exp((k - 1) / b)

    def tail(self, r: int) -> float:
        if r <= self.size:
            return 1.0
        return self._shift_tail(r - self.mu)

    @property
    def rho(self) -> float:
        return min(math.exp(-0.5), self.tail(2 * self.size)) * _SAFETY

    @property
    def mean(self) -> float:
        # E[N] = Δ + Σ_{r > Δ} P(N ≥ r) = Δ + Σ_{k ≥ Δ+1−μ} T(k), summed in closed form.
        b = self.scale
        ratio = math.exp(-1 / b)
        k0 = self.size + 1 - self.mu
        total = 0.0
        if k0 <= 0:  # k = k0 … 0: T(k) = 1 − ½e^{(k−1)/b}
            count = 1 - k0
            geo = math.exp((k0 - 1) / b) * (1 - math.exp(count / b)) / (1 - math.exp(1 / b))
            total += count - 0.5 * geo
            first = 1
        else:
            first = k0
        total += 0.5 * ratio ** (first - 1) / (1 - ratio)  # k ≥ first ≥ 1
        return self.size + total

    def sample(self, rng: RandomSource) -> int:
        g = rng.geometric_exp(1, self.scale)  # P(G = g) ∝ e^{-g/(2Δ)}
        shift = 1 + g if rng.bernoulli(Fraction(1, 2)) else -g
        return max(self.size, self.mu + shift)

    def to_json(self) -> dict[str, Any]:
        return {"law": self.name, "size": self.size, "mu": self.mu, "scale": self.scale,
                "beta": self.beta}

    @property
    def summary(self) -> str:
        return f"{self.name} mu={self.mu}"
