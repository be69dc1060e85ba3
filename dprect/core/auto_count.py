"""``auto``'s private count of the positives (docs/algorithm.md §6, docs/privacy.md §13).

When ``method="auto"`` is asked without a public estimate N of the positives and the
plan's choice depends on N, ``auto`` spends a small public share of ε on a private count
of the positive rows, drawn FIRST, and chooses between RandMargins and the composition
baseline at N = max(noisy count, 1) by the planner's rule (post-processing).

*When the choice depends on N* (a data-independent fact of the plan): RandMargins is
chosen at N only if min(N, S_RM) ≤ (1 − a)·C(N), with C(N) = N·(1 − Π_t(1 − c_t/N)) ≤
min(N, S_C) and C increasing to S_C (S: the large-sample sums, a = AUTO_MARGIN). So for
N ≤ S_RM it never is (N ≤ (1 − a)·N is false), and if it is not chosen at N = ∞ it is
chosen at no N (S_RM > (1 − a)·S_C ≥ (1 − a)·C(N)). Hence the choice depends on N exactly
when RandMargins is chosen at N = ∞: then, and only then, the count is spent.

*The share* :data:`AUTO_COUNT_SHARE` = 1/1000 of the add/remove ε. Its cost: RandMargins'
windows grow by about 1/(1 − 1/1000), 0.1%. Its use: the discrete Laplace noise of scale
b = 1000/ε has standard deviation √2·b ≈ 1414/ε, while the choice flips above N = S_RM,
which was ≥ 4·10^5/ε wherever RandMargins is chosen at N = ∞ in the planner's range
checked (d ∈ [100, 200], ε ∈ [0.5, 4], 2^32 grids declared continuous and the float-order
domain): a relative error of at most about 0.35% at the flip (0.12% at d = 256, where
S_RM ≈ 1.16·10^6/ε on the real-marginals benchmark).

*The mechanism*: the count of the positive rows the fit learns from (label equal to the
positive label, and under ``drop`` every feature finite) has sensitivity 1 under
add/remove (one row more or less changes it by at most 1), so count + DLap(b) is
(1/b, 0)-DP (the discrete Laplace mechanism, Canonne–Kamath–Steinke 2020), drawn exactly
by :meth:`dprect.core.randomness.RandomSource.discrete_laplace`. b is rational: the
share's 1/ε_c rounded UP to a multiple of 2^-10, so 1/b ≤ ε_c. With the method's rounds
planned at (ε − 1/b, δ), basic composition gives (ε, δ) add/remove; a replace-one request
is planned on its add/remove image, as every plan is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dprect.core.randomness import RandomSource

#: the public share of the add/remove ε that ``auto`` spends on the count (module notes)
AUTO_COUNT_SHARE = Fraction(1, 1000)
#: the count's sensitivity under add/remove (one row changes the count by at most 1)
COUNT_SENSITIVITY = 1
_SCALE_GRID = 2**10  # b is rounded up to a multiple of 1/_SCALE_GRID


def float_up(exact: Fraction) -> float:
    """``exact`` rounded up to a float (an ε the accounting adds: never below what is
    spent)."""
    value = float(exact)
    return value if Fraction(value) >= exact else math.nextafter(value, math.inf)


@dataclass(frozen=True)
class PrivateCount:
    """The count step of an ``auto`` plan: its discrete Laplace scale b (rational) and
    the add/remove ε it spends, 1/b; ``noisy``: the released count (None until drawn)."""

    scale: Fraction
    noisy: int | None = None

    @classmethod
    def for_budget(cls, epsilon_add_remove: float,
                   share: Fraction = AUTO_COUNT_SHARE) -> PrivateCount:
        """The count for an add/remove budget ε: b = ⌈(1/(share·ε))·2^10⌉/2^10 ≥
        1/(share·ε), so it spends at most share·ε."""
        target = Fraction(1) / (Fraction(share) * Fraction(epsilon_add_remove))
        scale = Fraction(math.ceil(target * _SCALE_GRID), _SCALE_GRID)
        return cls(scale * COUNT_SENSITIVITY)

    @property
    def epsilon(self) -> float:
        """The add/remove ε it spends, sensitivity/b, rounded up to a float."""
        return float_up(Fraction(COUNT_SENSITIVITY) / self.scale)

    def draw(self, true_count: int, rng: RandomSource) -> PrivateCount:
        """The released count: ``true_count`` + DLap(b), exactly."""
        return PrivateCount(self.scale, int(true_count) + rng.discrete_laplace(self.scale))

    @property
    def positives(self) -> int:
        """The N the choice is made at: max(noisy count, 1) (post-processing)."""
        if self.noisy is None:
            raise ValueError("the count has not been drawn")
        return max(self.noisy, 1)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"epsilon": self.epsilon, "scale": str(self.scale),
                               "mechanism": "discrete Laplace, sensitivity 1, drawn first"}
        if self.noisy is not None:
            out["positives_noisy"] = self.noisy
        return out


__all__ = ["AUTO_COUNT_SHARE", "COUNT_SENSITIVITY", "PrivateCount", "float_up"]
