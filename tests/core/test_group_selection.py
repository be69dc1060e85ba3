"""Groups found privately (dprect/core/group_selection.py, docs/privacy.md §18): the keep
table against the optimal partition selection, its independent check, the exact law of
the draw, and a binomial test (with its power) that a key of one row is kept at a rate of
at most δ."""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from fractions import Fraction

import pytest
from seeded_source import seeded as _seeded
from selection_oracle import expected_kept

from dprect.core import group_selection
from dprect.core.accounting import Guarantee
from dprect.core.group_selection import (
    SELECTION_BITS,
    SelectionPlan,
    composed,
    keep_numerators,
    plan_selection,
    select_keys,
)
from dprect.core.guarantee_check import (
    GuaranteeCheckError,
    check_selected_run,
    check_selection_plan,
)

CASES = [(1.0, 1e-5, "add-remove"), (0.1, 1e-10, "replace-one"), (3.0, 1e-3, "add-remove"),
         (0.5, 0.05, "add-remove")]


def _optimum(eps: Fraction, delta: Fraction, n: int) -> list[Decimal]:
    """π_1 … π_n of DVGM's optimal selection, in 60-digit decimal (written out here)."""
    with decimal.localcontext(decimal.Context(prec=60)):
        e = Decimal(eps.numerator) / Decimal(eps.denominator)
        d = Decimal(delta.numerator) / Decimal(delta.denominator)
        up, down = e.exp(), (-e).exp()
        out, p = [], Decimal(0)
        for _ in range(n):
            p = min(Decimal(1), up * p + d, 1 - down * (1 - p - d))
            out.append(p)
    return out


@pytest.mark.parametrize(("eps", "delta", "relation"), CASES)
def test_the_table_is_the_optimal_selection_from_below(eps: float, delta: float,
                                                       relation: str) -> None:
    plan = plan_selection(eps, delta, relation)
    m = 2 if relation == "replace-one" else 1
    assert (plan.key_epsilon, plan.key_delta) == (Fraction(eps) / m, Fraction(delta) / m)
    best = _optimum(plan.key_epsilon, plan.key_delta, plan.always + 2)
    one = 1 << SELECTION_BITS
    for k in range(1, plan.always + 2):
        with decimal.localcontext(decimal.Context(prec=60)):
            p = Decimal(plan.keep_probability(k).numerator) / Decimal(
                plan.keep_probability(k).denominator)
            assert p <= best[k - 1] + Decimal("1e-50"), k  # never above the optimum
            # below it by at most about 2^-96/delta_1 relative (docs/privacy.md §18)
            slack = best[k - 1] * Decimal(2) ** -90 / Decimal(plan.key_delta.numerator) * \
                plan.key_delta.denominator
            assert best[k - 1] - p <= slack + Decimal("1e-28"), k
    assert plan.keep_probability(1) <= Fraction(delta) / m  # one row: at most δ₁
    assert plan.keep[-1] == one and plan.keep[-2] < one  # surely from N rows
    assert best[plan.always - 2] < 1  # the optimum does not reach 1 earlier either
    assert plan.keep_probability(0) == 0


def test_replace_one_halves_both_per_key() -> None:
    assert plan_selection(0.8, 1e-6, "replace-one").keep == keep_numerators(
        Fraction(0.8) / 2, Fraction(1e-6) / 2)
    assert plan_selection(0.8, 1e-6, "add-remove").keep == keep_numerators(
        Fraction(0.8), Fraction(1e-6))


def test_the_check_refuses_a_wrong_count_of_keys_per_neighbour(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace-one changes two keys: a table built at the full (ε, δ) per key is refused."""
    monkeypatch.setitem(group_selection.KEYS_CHANGED, "replace-one", 1)
    with pytest.raises(GuaranteeCheckError, match="group selection"):
        plan_selection(0.8, 1e-6, "replace-one")


def test_the_check_refuses_an_exp_bound_on_the_wrong_side(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group_selection, "EXP_MARGIN", Fraction(-1, 10**6))
    with pytest.raises(GuaranteeCheckError, match="exceeds e\\^eps"):
        plan_selection(1.0, 1e-5, "add-remove")


def test_the_check_refuses_a_table_above_delta_or_not_reaching_one() -> None:
    plan = plan_selection(1.0, 1e-5, "add-remove")
    one = 1 << SELECTION_BITS
    raised = (plan.keep[0] + (one >> 40), *plan.keep[1:])
    jump = (plan.keep[0], one)  # 1 at two rows: far above e^eps * p_1 + delta
    falls = (plan.keep[1], plan.keep[0], *plan.keep[2:])
    for keep in (raised, plan.keep[:-1], jump, falls):
        bad = SelectionPlan(plan.epsilon, plan.delta, plan.neighbouring, plan.key_epsilon,
                            plan.key_delta, keep)
        with pytest.raises(GuaranteeCheckError):
            check_selection_plan(bad)
    assert check_selection_plan(plan).delta == 1e-5


def test_the_run_composes_selection_then_statistics() -> None:
    selection = plan_selection(0.5, 1e-6, "add-remove")
    stats = Guarantee(1.0, 0.0, "add-remove", "some statistics")
    run = composed(stats, selection)
    assert (run.epsilon, run.delta) == (1.5, 1e-6)
    check_selected_run(stats, selection, run)
    for wrong in (Guarantee(1.4, 1e-6, "add-remove", ""),
                  Guarantee(1.5, 0.0, "add-remove", ""),
                  Guarantee(1.5, 1e-6, "replace-one", "")):
        with pytest.raises(GuaranteeCheckError):
            check_selected_run(stats, selection, wrong)
    with pytest.raises(ValueError, match="one neighbouring relation"):
        composed(Guarantee(1.0, 0.0, "replace-one", ""), selection)


def test_public_groups_listed_beside_the_selection_cost_nothing() -> None:
    """docs/privacy.md §18, Theorem S′: the run's charge is the same for any number of
    public groups listed beside the selection (LISTED_GROUP_COST = (0, 0)); the check
    still refuses a run stated below the composition, and a listed count that is no
    count."""
    from dprect.core import guarantee_check

    assert guarantee_check.LISTED_GROUP_COST == (0, 0)
    selection = plan_selection(0.5, 1e-6, "add-remove")
    stats = Guarantee(1.0, 0.0, "add-remove", "some statistics")
    run = composed(stats, selection)
    for listed in (0, 1, 10**6):
        check_selected_run(stats, selection, run, listed)
        with pytest.raises(GuaranteeCheckError):
            check_selected_run(stats, selection, Guarantee(1.5, 0.0, "add-remove", ""),
                               listed)
    for bad in (-1, True, 2.0):
        with pytest.raises(GuaranteeCheckError):
            check_selected_run(stats, selection, run, bad)  # type: ignore[arg-type]


def test_the_draw_is_randbits_below_the_table_exact_law() -> None:
    """The kept keys are exactly those with randbits(B) < P_k, in the order of the keys'
    text, from one stream of the run's source: the law of a key of k rows is P_k/2^B."""
    plan = plan_selection(0.5, 0.05, "add-remove")
    counts = {f"k{i:03d}": 1 + i % (plan.always + 3) for i in range(300)}
    kept = select_keys(plan, dict(reversed(counts.items())), _seeded(11))
    expected = expected_kept(plan, counts, 11)
    assert kept == expected
    assert all(counts[k] >= 1 for k in kept)
    big = [k for k, n in counts.items() if n >= plan.always]
    assert set(big) <= set(kept)


class _Bits:
    """A stream whose ``randbits`` answers are given: the draws' edges, exactly."""

    def __init__(self, answers: list[int]) -> None:
        self.answers = answers

    def randbits(self, k: int) -> int:
        assert k == SELECTION_BITS
        return self.answers.pop(0)


def test_a_key_is_kept_iff_its_draw_is_strictly_below_the_table_and_never_without_rows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The law is exactly P_k/2^B: a draw equal to P_k drops the key (``<=`` would keep it
    with probability (P_k + 1)/2^B, above p_1 ≤ δ₁ where P_1 is δ₁'s numerator), one below
    keeps it; a key of no row is never kept (p_0 = 0: a key the data does not hold is never
    released), whatever the draw."""
    plan = plan_selection(1.0, 0.05, "add-remove")
    assert plan.keep_probability(1) == Fraction(0.05)  # P_1 = δ·2^96 exactly: the edge
    counts = {"a": 1, "b": 2, "c": 0}
    for answers, kept in (([plan.keep[0], plan.keep[1], 0], []),
                          ([plan.keep[0] - 1, plan.keep[1] - 1, 0], ["a", "b"])):
        stream = _Bits(list(answers))
        monkeypatch.setattr(group_selection.RandomSource, "stream",
                            staticmethod(lambda _seed, s=stream: s))
        assert select_keys(plan, counts, _seeded(1)) == kept


def test_a_key_of_one_row_is_kept_at_a_rate_of_at_most_delta_with_power() -> None:
    """40,000 keys of one row at δ = 0.05: the kept count stays below δn + 5σ; the same
    test rejects a mechanism keeping them at 1.3δ (its power)."""
    delta, n = 0.05, 40_000
    limit = delta * n + 5 * math.sqrt(n * delta * (1 - delta))
    counts = {f"key{i:05d}": 1 for i in range(n)}
    plan = plan_selection(1.0, delta, "add-remove")
    assert plan.keep_probability(1) == Fraction(delta)  # δ·2^96 is an integer here
    kept = len(select_keys(plan, counts, _seeded(5)))
    assert kept <= limit
    assert kept >= delta * n - 5 * math.sqrt(n * delta * (1 - delta))  # not trivially 0
    loose = SelectionPlan(plan.epsilon, plan.delta, plan.neighbouring, plan.key_epsilon,
                          plan.key_delta,
                          (int(1.3 * delta * (1 << SELECTION_BITS)), *plan.keep[1:]))
    assert len(select_keys(loose, counts, _seeded(5))) > limit


def test_the_keys_kept_do_not_depend_on_the_counts_order() -> None:
    plan = plan_selection(1.0, 1e-3, "add-remove")
    counts = {f"g{i}": i % 15 + 1 for i in range(200)}
    a = select_keys(plan, counts, _seeded(2))
    b = select_keys(plan, dict(sorted(counts.items(), key=lambda kv: -kv[1])), _seeded(2))
    assert a == b and a == sorted(a)


@pytest.mark.parametrize(("eps", "delta"), [(None, 1e-5), (1.0, None), (1.0, 0.0),
                                            (1.0, 1.0), (0.0, 1e-5), (1e-9, 1e-30)])
def test_bad_selection_budgets_are_refused_from_the_parameters(eps: object,
                                                               delta: object) -> None:
    with pytest.raises(ValueError, match="selection"):
        plan_selection(eps, delta, "add-remove")


@pytest.mark.parametrize("epsilon", [3e6, 1e9, 1e300])
def test_a_huge_selection_epsilon_is_planned_and_checked(epsilon) -> None:
    """Decimal's exp overflowed from a per-key ε of ~2.3e6, in the plan and in its
    independent check: ``--selection-epsilon 1e9`` ended "internal error (Overflow)",
    exit 1. e^{±ε} is now bounded at ε = 1000 on the safe sides, and the table is the one
    of any ε past ~135 (a key of one row kept with probability δ, then surely from 3 rows
    here) — the same as 1000's, which worked before."""
    from dprect.core.group_selection import keep_numerators, plan_selection

    plan = plan_selection(epsilon, 1e-6, "add-remove")
    assert plan.check is not None and plan.check.epsilon >= epsilon
    assert plan.keep == keep_numerators(Fraction(1000), plan.key_delta) \
        == keep_numerators(Fraction(150), plan.key_delta)
    halves = plan_selection(epsilon, 1e-6, "replace-one")  # two keys: (ε, δ)/2 each
    assert halves.keep == keep_numerators(Fraction(1000), halves.key_delta)
