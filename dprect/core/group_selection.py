"""Groups found privately: which keys of a group column a grouped run releases, when no
public list of them exists (issue #42; the proof is docs/privacy.md §18).

**The mechanism** is the optimal partition selection of Desfontaines, Voss, Gipson and
Mandayam ("Differentially private partition selection", PoPETs 2022). Every row is in
one group, so a neighbour (add/remove one row) changes ONE key's row count by one. A key
seen in the data with k rows is kept, independently of every other key, with probability
p_k, where (per key, at (ε₁, δ₁))

    p_0 = 0,   p_k = min(1, e^{ε₁}·p_{k−1} + δ₁, 1 − e^{−ε₁}·(1 − p_{k−1} − δ₁))

— the largest keep probabilities for which a Bernoulli(p_k) on a key's count is
(ε₁, δ₁)-DP under a ±1 change of that count (DVGM Theorem 1: the four constraints
p_k ≤ e^ε·p_{k−1} + δ, 1 − p_{k−1} ≤ e^ε·(1 − p_k) + δ and their mirror images, which a
non-decreasing p meets). In particular p_1 ≤ δ₁ (a key with one row, absent from the
neighbour, shows with probability at most δ₁), p grows geometrically (×e^{ε₁}) from
there, then approaches 1 geometrically (1 − p shrinks ×e^{−ε₁}) and reaches it: every
key of at least N rows (:attr:`SelectionPlan.always`) is kept. It is the truncated-geometric
threshold in another spelling: keep iff k + Z ≥ N for a noise Z with
P(Z ≥ N − k) = p_k.

**Exact rationals, exact draws.** The table is computed once, on integers: each p_k is a
dyadic rational P_k/2^B (B = :data:`SELECTION_BITS`), the recursion run with a rational
lower bound of e^{ε₁} and a rational upper bound of e^{−ε₁} (Decimal exp, pushed out by
:data:`EXP_MARGIN`), each value rounded DOWN to the grid and kept non-decreasing. Every
constraint bounds p_k from above given p_{k−1}, so a smaller p_k meets it and each later
step is bounded from the value actually used: the table is (ε₁, δ₁)-DP exactly, and
below the optimum by at most about 2^{−B}/δ₁ relative. A key is kept iff
``randbits(B) < P_k`` — probability P_k/2^B exactly; no float enters a draw.

**The budget.** ``selection_epsilon`` and ``selection_delta`` are the selection's
stated (ε_s, δ_s) in the run's relation. Under add/remove a neighbour changes one key:
(ε₁, δ₁) = (ε_s, δ_s). Under replace-one it changes two keys by one row each
(:data:`KEYS_CHANGED`); the two decisions are independent, so at (ε_s/2, δ_s/2) each the
selection is (ε_s, δ_s)-DP by basic composition.

**The run.** Selection, then the statistics on the kept keys: for every set S of keys,
the statistics over the groups S are (ε, δ)-DP (groups disjoint: parallel composition;
a row of a key not in S is dropped, row-local), so by adaptive composition the run is
(ε + ε_s, δ + δ_s)-DP (:func:`composed`), charged ONCE whatever the number of keys.
Only keys seen in the data are candidates (a key with no row has p_0 = 0), so a released
key always holds at least one row. The keys are drawn in the order of their text
(:func:`select_keys`) from one stream of the run's source, so a seed gives the same keys
on every engine. :func:`dprect.core.guarantee_check.check_selection_plan` re-derives the
table's constraints and the composition before anything is read.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from dprect.core.accounting import Guarantee
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import CheckReport, check_selection_plan
from dprect.core.randomness import RandomSource
from dprect.core.request import Neighbouring, check_run_epsilon

#: the keep probabilities are multiples of 2^−SELECTION_BITS (drawn as randbits < P_k)
SELECTION_BITS = 96
#: relative margin by which e^{ε₁} is bounded from below and e^{−ε₁} from above (far
#: above Decimal's 10^−49 rounding and the check's slack, far below any utility effect)
EXP_MARGIN = Fraction(1, 10**30)
#: keys one neighbouring step changes (by one row each), per relation
KEYS_CHANGED = {"add-remove": 1, "replace-one": 2}
#: the most rows a key may need to be kept surely (the table's length): a smaller
#: ε_s or δ_s is refused, from the parameters alone
MAX_ALWAYS = 200_000
#: the bound a selection's guarantee states
SELECTION_BOUND = "optimal partition selection (Desfontaines et al. 2022), exact dyadic table"


#: ε past which e^{±ε} is bounded at this ε: A/one ≤ e^{1000} ≤ e^{ε} and
#: B/one ≥ e^{−1000} ≥ e^{−ε} still hold, on the same sides, and the table is the same for
#: any ε past ~135 at 96 bits (B = 1, and A·p ≥ one² from p = 1); Decimal's exp
#: overflowed from ε ~ 2.3e6 (``--selection-epsilon 1e9``: an internal error, exit 1)
EXP_CAP = Fraction(1000)


def _exp_bounds(epsilon: Fraction, one: int) -> tuple[int, int]:
    """(A, B) with A/one ≤ e^{ε} and B/one ≥ e^{−ε}, A ≥ one ≥ B (integers); ε taken at
    most :data:`EXP_CAP`."""
    epsilon = min(epsilon, EXP_CAP)
    with decimal.localcontext(decimal.Context(prec=60)):
        x = Decimal(epsilon.numerator) / Decimal(epsilon.denominator)
        up, down = x.exp(), (-x).exp()
    grow = Fraction(up) * (1 - EXP_MARGIN) * one
    shrink = Fraction(down) * (1 + EXP_MARGIN) * one
    return max(one, math.floor(grow)), min(one, math.ceil(shrink))


def keep_numerators(epsilon: Fraction, delta: Fraction, bits: int = SELECTION_BITS,
                    limit: int = MAX_ALWAYS) -> tuple[int, ...]:
    """P_1, …, P_N (P_N = 2^bits, the first that is) of the per-key mechanism at
    (ε₁, δ₁) = (``epsilon``, ``delta``): p_k = P_k/2^bits (module notes)."""
    if epsilon <= 0 or not 0 < delta < 1:
        raise ParameterError("a group selection needs epsilon > 0 and delta in (0, 1)")
    one = 1 << bits
    grow, shrink = _exp_bounds(epsilon, one)
    dn, dd = delta.numerator, delta.denominator
    out: list[int] = []
    p = 0
    while p < one:
        if len(out) >= limit:
            raise ParameterError(f"a private group selection at this selection epsilon and "
                                 f"delta keeps a key surely only from more than {limit:,} "
                                 "rows: give a larger selection epsilon or delta")
        # p_k ≤ e^ε·p + δ, with A/one ≤ e^ε: floor(A·p/one + δ·one)
        first = (grow * p * dd + dn * one * one) // (one * dd)
        # p_k ≤ 1 − e^{−ε}(1 − p − δ), with B/one ≥ e^{−ε} when 1 − p − δ > 0
        rest = one * dd - p * dd - dn * one  # (1 − p − δ)·one·dd
        second = one if rest <= 0 else one - (-(-shrink * rest // (one * dd)))
        p = max(p, min(one, first, second))
        out.append(p)
    return tuple(out)


@dataclass(frozen=True)
class SelectionPlan:
    """A private group selection's public plan: the stated (ε_s, δ_s) in
    ``neighbouring``, the per-key (ε₁, δ₁), the keep table ``keep`` (P_1 … P_N over
    2^``bits``) and the check's report (set by :func:`plan_selection`)."""

    epsilon: float
    delta: float
    neighbouring: str
    key_epsilon: Fraction
    key_delta: Fraction
    keep: tuple[int, ...]
    bits: int = SELECTION_BITS
    check: CheckReport | None = None

    @property
    def always(self) -> int:
        """N: every key with at least this many rows is kept."""
        return len(self.keep)

    def keep_probability(self, rows: int) -> Fraction:
        """p_k: the exact probability that a key of ``rows`` rows is kept (0 for none)."""
        if rows <= 0:
            return Fraction(0)
        if rows >= self.always:
            return Fraction(1)
        return Fraction(self.keep[rows - 1], 1 << self.bits)

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(self.epsilon, self.delta, self.neighbouring, SELECTION_BOUND)

    def expected_kept(self, sizes: Sequence[int]) -> float:
        """The expected number of keys kept among keys of these row counts."""
        return float(sum(self.keep_probability(int(k)) for k in sizes))

    def lines(self) -> list[str]:
        """The plan's printout: the threshold, p_k for a few k, the guarantee."""
        shown = sorted({k for k in (1, 2, 3, 5, 10, 20, 50, 100, 200, 500)
                        if k < self.always} | {max(1, self.always // 2)})
        probs = ", ".join(f"{k}: {float(self.keep_probability(k)):.3g}" for k in shown)
        return [f"plan: groups found privately (optimal partition selection, "
                f"({self.epsilon:.6g}, {self.delta:.3g})-DP, {self.neighbouring}): only keys "
                f"present in the data are candidates; a key of k rows is kept with "
                f"probability p_k (k {probs}), surely from {self.always:,} rows; a key of "
                f"1 row with probability {float(self.keep_probability(1)):.3g} <= "
                f"{self.delta:.3g}"]

    def to_json(self) -> dict[str, Any]:
        return {"mechanism": "optimal partition selection (Desfontaines et al. 2022)",
                "epsilon": self.epsilon, "delta": self.delta,
                "neighbouring": self.neighbouring, "always_kept_from_rows": self.always,
                "keep_probability_1_row": float(self.keep_probability(1)),
                "check": None if self.check is None else self.check.to_json()}


def check_selection_budget(epsilon: object, delta: object,
                           names: tuple[str, str] = ("selection_epsilon", "selection_delta")
                           ) -> tuple[float, float]:
    """The selection's (ε_s, δ_s): ε_s a run's ε, δ_s in (0, 1)."""
    if epsilon is None or delta is None:
        raise ParameterError(f"a private group selection needs {names[0]} and {names[1]} "
                             "(delta > 0: a key with few rows may show)")
    eps = check_run_epsilon(epsilon, names[0])
    if isinstance(delta, bool) or not isinstance(delta, int | float) \
            or not 0.0 < float(delta) < 1.0:
        raise ParameterError(f"{names[1]} must be a number in (0, 1), got {delta!r}")
    return eps, float(delta)


def plan_selection(epsilon: object, delta: object, neighbouring: str,
                   names: tuple[str, str] = ("selection_epsilon", "selection_delta")
                   ) -> SelectionPlan:
    """The plan of a private group selection stating (ε_s, δ_s) under ``neighbouring``
    (module notes), checked by :func:`~dprect.core.guarantee_check.check_selection_plan`."""
    eps, dlt = check_selection_budget(epsilon, delta, names)
    relation = Neighbouring.parse(neighbouring, "neighbouring").value
    steps = KEYS_CHANGED[relation]
    key_eps, key_delta = Fraction(eps) / steps, Fraction(dlt) / steps
    plan = SelectionPlan(eps, dlt, relation, key_eps, key_delta,
                         keep_numerators(key_eps, key_delta))
    return SelectionPlan(eps, dlt, relation, key_eps, key_delta, plan.keep,
                         check=check_selection_plan(plan))


def select_keys(plan: SelectionPlan, counts: Mapping[str, int], rng: RandomSource
                ) -> list[str]:
    """The kept keys, in the order of their text: each key of ``counts`` (key text →
    rows, every count ≥ 1: only keys seen in the data) kept with probability p_k by
    ``randbits(B) < P_k`` from ONE stream of ``rng`` (one stream seed drawn from it,
    whatever the number of keys), so a seed gives the same keys on every engine."""
    stream = RandomSource.stream(rng.stream_seeds(1)[0])
    kept = []
    for key in sorted(counts):
        rows = int(counts[key])
        if rows >= plan.always or (
                rows >= 1 and stream.randbits(plan.bits) < plan.keep[rows - 1]):
            kept.append(key)
    return kept


def composed(statistics: Guarantee, selection: SelectionPlan) -> Guarantee:
    """The run's guarantee: the selection, then the statistics on the kept keys
    (adaptive composition, module notes), each sum rounded up to a float."""
    if statistics.neighbouring != selection.neighbouring:
        raise ParameterError("the group selection and the statistics must state one "
                             "neighbouring relation")

    def up(a: float, b: float) -> float:
        exact = Fraction(a) + Fraction(b)
        f = float(exact)
        return math.nextafter(f, math.inf) if Fraction(f) < exact else f

    return Guarantee(up(statistics.epsilon, selection.epsilon),
                     up(statistics.delta, selection.delta), statistics.neighbouring,
                     f"{statistics.bound}; after a private group selection "
                     f"({selection.epsilon:.6g}, {selection.delta:.3g}) (adaptive "
                     "composition)")


def selection_json(selection: SelectionPlan, kept: int, listed: int = 0, past_cap: int = 0
                   ) -> dict[str, Any]:
    """A released record's ``group_selection``: the selection's plan, the number of keys
    released from it (``groups_kept``) and, when not 0, the number of public keys beside
    it (``groups_listed``) and of keys it kept past a cap on the number released
    (``groups_past_cap``, not released: docs/privacy.md §18)."""
    return {**selection.to_json(), "groups_kept": kept,
            **({"groups_listed": listed} if listed else {}),
            **({"groups_past_cap": past_cap} if past_cap else {})}


class SelectedResult:
    """A run's result after a private group selection (the Python API's): the statistics'
    own result (its attributes read through), the selection's plan, the kept keys' number
    and the run's composed ``guarantee``; its JSON is the result's with the run's
    ``privacy``, the statistics' own (``statistics_privacy``) and the ``group_selection``."""

    def __init__(self, result: Any, selection: SelectionPlan, kept: int,
                 statistics: Guarantee | None = None, listed: int = 0,
                 past_cap: int = 0) -> None:
        self.result, self.selection, self.kept = result, selection, kept
        #: public groups released beside the selection (docs/privacy.md §18)
        self.listed = listed
        #: keys the selection kept past a cap on the number released (a classes' fit:
        #: :func:`~dprect.core.classes.select_classes`)
        self.past_cap = past_cap
        #: the statistics' own guarantee (default: the result's ``guarantee``; a classes'
        #: fit gives its per-class charge, stated even when no class is kept)
        self.statistics = result.guarantee if statistics is None else statistics
        self.guarantee = composed(self.statistics, selection)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["result"], name)

    def to_json(self) -> dict[str, Any]:
        inner = self.result.to_json()
        return {**inner, "privacy": self.guarantee.to_json(),
                "statistics_privacy": self.statistics.to_json(),
                "group_selection": selection_json(self.selection, self.kept, self.listed,
                                                  self.past_cap)}

    to_dict = to_json


__all__ = ["EXP_MARGIN", "KEYS_CHANGED", "MAX_ALWAYS", "SELECTION_BITS", "SELECTION_BOUND",
           "SelectedResult", "SelectionPlan", "check_selection_budget", "composed",
           "keep_numerators", "plan_selection", "select_keys", "selection_json"]
