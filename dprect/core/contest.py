"""``auto``'s contest: a private choice between the old choice and the aimed quantile box by
their measured balanced error (issue #44, s34; docs/algorithm.md §10, docs/privacy.md §19).

The planner predicts only the positives' miss (FN). Where the aimed box trims tails that
hold negatives it wins on the negatives it leaves out (FP), which no public input shows
(flights at ε = 4, docs/results.md §4.1). So, where a public gate says the choice is
worth measuring (:func:`contest_fires`), ``auto`` runs BOTH candidates, each at its
share of the budget, and releases which rectangle to return by an ε_s-DP selection on
the data's error of each:

    score_j = FN_j/ñ⁺ + FP_j/ñ⁻

(FN_j the positives outside rectangle j, FP_j the negatives inside it; ñ⁺ = max(auto's
released count, 1), ñ⁻ = max(count of the negatives + DLap(b⁻), 1), both released).
Given the released rectangles and counts, adding or removing one row raises every score
by 0 or its weight (1/ñ⁺ for a positive, 1/ñ⁻ for a negative), or lowers every score by 0
or its weight — never one up and another down: the utility −score is monotone with
sensitivity Δ = max(1/ñ⁺, 1/ñ⁻), so the exponential mechanism P(j) ∝ exp(−ε_s·score_j/Δ)
is ε_s-DP without McSherry–Talwar's factor 2 (McSherry & Talwar 2007, the monotone case;
privacy.md §19, Lemma C1). With two candidates it is a Bernoulli, drawn EXACTLY by
:func:`select` (rejection from the uniform proposal with the exact Bernoulli(e^−γ) of
:meth:`~dprect.core.randomness.RandomSource.bernoulli_exp`, γ rational).

Only the chosen rectangle and the public fact "the contest ran and chose X" leave the
core; the other rectangle, the scores and both counts never do.

The budget (public plan constants, :func:`contest_split`): the count of the positives
(auto's, already drawn), :data:`CONTEST_NEGATIVES_SHARE` and :data:`CONTEST_SELECT_SHARE`
of the add/remove ε for the negatives' count and the selection, and the two fits each at
half of what is left, (ε_f, δ/2); basic adaptive composition of the five parts gives the
plan's total (privacy.md §19, Theorem C2; re-derived by
:func:`~dprect.core.guarantee_check.check_contest_plan`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

from dprect.core.auto_count import PrivateCount
from dprect.core.randomness import RandomSource

#: the share of the add/remove ε spent on the negatives' count (the weight ñ⁻ of an FP):
#: at ε = 4 its discrete Laplace scale is 25 rows, against thousands of negatives on the
#: tables where the contest fires (module notes; docs/algorithm.md §10)
CONTEST_NEGATIVES_SHARE = Fraction(1, 100)
#: the share of the add/remove ε spent on the selection (ε_s): on flights at ε = 4 the
#: two scores differ by about 0.05 at weight 1/80,100, so ε_s·(s_1 − s_0)/Δ ≈ 160 nats —
#: the better candidate for certain; the selection errs only where the scores are within
#: a few 1/(ε_s·N) of each other, where either choice costs as little
CONTEST_SELECT_SHARE = Fraction(1, 100)
#: the gate's price bound: the split may raise each candidate's predicted miss by at most
#: this share of N (0.01 of balanced error each, half of issue #44's 0.02 tolerance)
CONTEST_PRICE = 0.02
#: the gate's moderation bound: the box is predicted to miss at most this many times the
#: old choice's positives. Not a loss bound (where the classes separate the selection
#: returns the old choice: the box's FP gains nothing and its FN is larger) but the cost's:
#: as N grows the old choice's miss c → 0 while the box's tends to its aim, b/c → ∞, and
#: the old choice keeps its one scan (issue #43's d = 8 route at 10^7 rows: b/c = 27);
#: flights at ε = 4 is at 6.1
CONTEST_RATIO = 8.0


def contest_split(eps_add_remove: float, eps_stated: float, count_epsilon: float
                  ) -> tuple[PrivateCount, Fraction, float]:
    """The contest's public split: the negatives' count (its share of the add/remove ε
    ``eps_add_remove``, scale rounded up as auto's count's: it spends at most its share),
    ε_s (an exact rational, ≤ its share, a multiple of 2^-30) and ε_f, each fit's ε, half
    of what the plan's statement ``eps_stated`` leaves after the count, the negatives'
    count and ε_s, rounded down (the planner then checks the parts' sum)."""
    negatives = PrivateCount.for_budget(eps_add_remove, CONTEST_NEGATIVES_SHARE)
    share = Fraction(eps_add_remove) * CONTEST_SELECT_SHARE
    select = Fraction(math.floor(share * 2**30), 2**30)
    rest = eps_stated - count_epsilon - negatives.epsilon - float(select)
    fit = math.nextafter(rest / 2, 0.0)
    return negatives, select, fit


#: a tally: for rectangles (grid-index lo/hi tuples), the count of the negatives and per
#: rectangle (positives outside, negatives inside) — exact, engine-side; never released
Tally = Callable[[Sequence[tuple[tuple[int, ...], tuple[int, ...]]]],
                 tuple[int, list[tuple[int, int]]]]


def scores(tallied: Sequence[tuple[int, int]], positives: int, negatives: int
           ) -> list[Fraction]:
    """score_j = FN_j/ñ⁺ + FP_j/ñ⁻, exactly (``positives``, ``negatives``: the released
    ñ⁺, ñ⁻, each ≥ 1)."""
    if positives < 1 or negatives < 1:
        raise ValueError("the contest's weights need released counts >= 1")
    return [Fraction(fn, positives) + Fraction(fp, negatives) for fn, fp in tallied]


def select(score_list: Sequence[Fraction], positives: int, negatives: int,
           epsilon: Fraction, rng: RandomSource) -> int:
    """The exponential mechanism on the monotone utility −score (sensitivity
    Δ = 1/min(ñ⁺, ñ⁻)) at ε_s, exactly: propose j uniformly, accept with probability
    exp(−ε_s·(s_j − min_i s_i)/Δ) (:meth:`RandomSource.bernoulli_exp`, exact for a
    rational exponent). The accepted j has P(j) ∝ exp(−ε_s·s_j/Δ); each proposal is
    accepted with probability ≥ 1/len (the best candidate's is 1)."""
    if not score_list:
        raise ValueError("select needs candidates")
    delta = Fraction(1, min(positives, negatives))
    low = min(score_list)
    gammas = [Fraction(epsilon) * (s - low) / delta for s in score_list]
    while True:
        j = rng.randbelow(len(gammas))
        if rng.bernoulli_exp(gammas[j]):
            return j


__all__ = ["CONTEST_NEGATIVES_SHARE", "CONTEST_PRICE", "CONTEST_RATIO",
           "CONTEST_SELECT_SHARE", "Tally", "contest_split", "scores",
           "select"]
