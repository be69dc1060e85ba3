"""How many positives a run needs: a plan's expectation at an estimated number N of positives.

Public inputs only: the plan (made from the request and the domains), a target share and,
optionally, the user's own estimate N of the number of positive rows. Never the table's
real count — a count read from the data and printed would be a release outside the
privacy guarantee (docs/privacy.md); the only data-dependent thing a run prints is the
released rectangle, and :func:`empty_explanation` reads nothing else.

The model
---------
A plan predicts the positives its rounds leave outside the rectangle
(``MethodPlan.predicted_misclassified``, docs/algorithm.md §6): about E[N_t] − Δ_t/2 per
RandMargins round (a round removes its block of N_t points beyond an interior point near
the middle of its Δ_t-point window) and Δ₀/2 per composition round. Once the sample is
large enough that no margin runs dry, that count does not depend on N, so the share of
the N positives outside the rectangle is at most about

    share(N) = min(1, predicted / N),

and the smallest N for a target share α is N(α) = ⌈predicted / α⌉. "At most about": on
the sample-complexity benchmark (docs/results.md, "(a) Misclassified positives at a large
sample"; docs/figures/sample_complexity.json) the measured count over the planned one is
0.977–1.021 for RandMargins (refined accounting), 0.993–1.003 for the paper's
accounting, and 0.928–0.992 for composition, whose cuts are never removed and so overlap
on a finite sample (a point outside two cuts counts once). The smallest n found there
with error ≤ 5% in 90% of trials is 1.00–1.09 × N(5%) for both methods (d ≤ 16): the
90%-of-trials criterion asks a little more than the mean.

Below about the plan's Σ_t E[N_t] positives the margins run dry: the rounds cut into
their pads and the rectangle is empty or nearly so (a share of 100%). What helps then: more
positives, a larger ε, coarser or narrower domains (a smaller Δ), fewer features (fewer
rounds) — each lowers the prediction, hence N(α).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dprect.core.validation import check_open_unit, check_positive_int

#: the default target: at most 5% of the positives outside the rectangle
DEFAULT_TARGET_SHARE = 0.05


def share_outside(predicted: float, positives: int) -> float:
    """The expected share of ``positives`` positives outside the rectangle:
    min(1, predicted / positives)."""
    n = check_positive_int(positives, "positives")
    return min(1.0, max(0.0, float(predicted)) / n)


def positives_needed(predicted: float, target_share: float = DEFAULT_TARGET_SHARE) -> int:
    """The smallest N with predicted / N ≤ ``target_share`` (at least 1)."""
    alpha = check_open_unit(target_share, "target_share")
    ratio = max(0.0, float(predicted)) / alpha
    if math.isinf(ratio) and math.isfinite(predicted):  # past float64 (a tiny target)
        return math.ceil(Fraction(predicted) / Fraction(alpha))
    return max(1, math.ceil(ratio * (1 - 1e-12)))  # 13503 / 0.05 is 270060, not 270061


#: counts of rows from here up print in scientific notation (:func:`count_text`): no table
#: holds 10^15 positives, and an N past it (a tiny target share, a tiny ε) is a plan's
#: "not reachable", not a figure to read digit by digit
LARGE_COUNT = 10**15


def count_text(count: float, *, up: bool = False) -> str:
    """A count of rows as the plan's text prints it: with thousands separators below
    :data:`LARGE_COUNT` (``1,234,567``), else three significant digits in scientific
    notation (``1.86e+301``), rounded up with ``up`` (a number of rows *needed* is never
    shown below itself). The JSON record keeps the exact number."""
    if isinstance(count, float) and not math.isfinite(count):
        return str(count)
    n = math.ceil(count) if up else round(count)
    if n < LARGE_COUNT:
        return f"{n:,}"
    exponent = len(str(n)) - 1
    scale = 10 ** (exponent - 2)
    mantissa = -(-n // scale) if up else (2 * n + scale) // (2 * scale)  # 3 digits
    if mantissa >= 1000:  # rounded up to the next power of ten
        mantissa, exponent = mantissa // 10, exponent + 1
    digits = f"{mantissa // 100}.{mantissa % 100:02d}".rstrip("0").rstrip(".")
    return f"{digits}e+{exponent:02d}"


def percent(share: float) -> str:
    """A share as a short percentage: ``5%``, ``2.68%``, ``100%``."""
    return f"{100 * share:.3g}%"


@dataclass(frozen=True)
class Expectation:
    """One method's expectation: positives outside the rectangle, the N it needs for the
    target share, and the share at the estimate N (None without one)."""

    method: str
    outside: float
    target_share: float
    positives_needed: int
    positives: int | None = None

    @property
    def share(self) -> float | None:
        """The expected share outside at the estimated N (None without an estimate)."""
        return None if self.positives is None else share_outside(self.outside, self.positives)

    def to_json(self) -> dict[str, Any]:
        return {"outside": self.outside, "positives_needed": self.positives_needed,
                "share": self.share}

    def sentence(self) -> str:
        """One line: what the plan expects and the N it needs (the fit prints it)."""
        text = (f"the plan ({self.method}) expects about {count_text(self.outside)} "
                f"positives outside the rectangle; for at most {percent(self.target_share)} "
                f"outside it needs about N >= {count_text(self.positives_needed, up=True)} "
                f"positives")
        share = self.share
        if share is not None and self.positives is not None:
            text += (f"; at the estimated {count_text(self.positives)} positives that is "
                     f"{'100% (expect an empty rectangle)' if share >= 1 else percent(share)}")
        return text


@dataclass(frozen=True)
class Sizing:
    """The public inputs of an expectation: the user's estimate of the number of positive
    rows (None: no estimate) and the target share of positives outside the rectangle."""

    positives: int | None = None
    target_share: float = DEFAULT_TARGET_SHARE

    def __post_init__(self) -> None:
        if self.positives is not None:
            object.__setattr__(self, "positives",
                               check_positive_int(self.positives, "positives"))
        object.__setattr__(self, "target_share",
                           check_open_unit(self.target_share, "target_share"))

    def expect(self, method: str, predicted: float) -> Expectation:
        """The expectation of a method predicted to leave ``predicted`` positives out."""
        return Expectation(method, float(predicted), self.target_share,
                           positives_needed(predicted, self.target_share), self.positives)

    def to_json(self, predictions: Mapping[str, float]) -> dict[str, Any]:
        """The estimate, the target and each method's expectation (a plan's JSON)."""
        return {"positives": self.positives, "target_share": self.target_share,
                "methods": {name: self.expect(name, p).to_json()
                            for name, p in predictions.items()}}

    def table(self, predictions: Mapping[str, float], chosen: str) -> list[str]:
        """The lines a plan's table adds: each method's expected count outside, the N it
        needs and the share at the estimate."""
        target = percent(self.target_share)
        head = (f"{'method':<13} {'outside (expected)':>19}"  # a space before each column
                f" {f'N for <= {target} outside':>23}")
        if self.positives is not None:
            head += f" {f'share at N = {count_text(self.positives)}':>23}"
        lines = [head, "-" * len(head)]
        for name, predicted in predictions.items():
            e = self.expect(name, predicted)
            mark = "*" if name == chosen else " "
            row = (f"{mark}{name:<12} {count_text(e.outside):>19}"
                   f" {count_text(e.positives_needed, up=True):>23}")
            if e.share is not None:
                row += f" {percent(e.share):>23}"
            lines.append(row)
        lines.append("N = positive rows; outside = the positives the plan expects outside "
                     "the rectangle, about outside/N of them (up to 100%): with fewer than "
                     "the N shown expect a poor or empty rectangle")
        return lines


def empty_explanation(expected: Expectation, name: Callable[[str], str] = str) -> list[str]:
    """Two lines for a released rectangle that is empty (some lower bound above its upper
    bound — read from the released result only): what the plan expected, and what to
    change. ``name`` spells an option as the front end does (``--epsilon``,
    ``fit.epsilon``)."""
    return [
        f"the rectangle is empty: its plan ({expected.method}) expected about "
        f"{count_text(expected.outside)} positives outside it and needs about "
        f"N >= {count_text(expected.positives_needed, up=True)} positive rows for at most "
        f"{percent(expected.target_share)} outside; an empty rectangle usually means "
        "fewer than that",
        f"to need fewer: a larger {name('epsilon')}, coarser or narrower domains "
        f"({name('grid')}) or fewer {name('features')}; or fit on more positive rows "
        "(`dprect plan` shows the N each choice needs)",
    ]


__all__ = ["DEFAULT_TARGET_SHARE", "LARGE_COUNT", "Expectation", "Sizing", "count_text",
           "empty_explanation", "percent", "positives_needed", "share_outside"]
