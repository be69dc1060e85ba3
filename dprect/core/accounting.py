"""Privacy accounting: the bounds dprect can state for a run (design note §5).

Every function returns a :class:`Guarantee` — (ε̃, δ̃), the neighbouring relation and the
*name of the bound used* — so a result always says why its numbers hold. Proofs are in
``docs/privacy.md``.

RandMargins, refined theorem (design note §5). The IP is ε-DP (replace-one) on inputs of
size Δ with one-sided failure ≤ β_IP; the margin law has ratio ρ; q = ρ·(1 − β_IP). For
every integer k ≥ 1 and δ₂ ∈ (0, 1), R rounds are, under add/remove neighbours,

* (k·ε, (1 − q)^k)-DP                                      — :func:`refined_pure`
* (k·ε²/2 + ε·√(2k·ln(1/δ₂)), (1 − q)^k + δ₂)-DP           — :func:`refined_azuma`

and if k ≥ R the (1 − q)^k term is 0 (at most R rounds can be paid).

RandMargins, the paper's statement (Sadigurschi & Stemmer 2021, Lemma 3.2 with Claim 3.1
and the proof of (iii)): at most 35·ln(1/δ) paid rounds except with probability δ, each
costing 2ε: ε̃ = 70·ε·ln(1/δ), δ̃ = (R + 2)·δ — :func:`paper_bound`. Valid only with the
paper's Laplace margin law, β < 1/4 and δ < e^{−2}.

Composition baseline (paper §1.2): R rounds of an ε₀-DP IP — (R·ε₀, 0) by basic
composition (:func:`composition_pure`), or ρ_z = R·ε₀²/2 zCDP (Bun & Steinke 2016,
Prop. 1.4 and Lemma 2.3) converted to (ρ_z + 2√(ρ_z·ln(1/δ)), δ)-DP (ibid., Prop. 1.3)
(:func:`composition_zcdp`).

Replace-one neighbours follow from add/remove by group privacy of size 2:
(ε, δ) ↦ (2ε, (1 + e^ε)·δ) — :func:`replace_one`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from dprect.core.errors import ParameterError
from dprect.core.validation import check_epsilon, check_open_unit, check_positive_int

ADD_REMOVE = "add-remove"
REPLACE_ONE = "replace-one"
NEIGHBOURING = (ADD_REMOVE, REPLACE_ONE)


@dataclass(frozen=True)
class Guarantee:
    """An (ε, δ)-DP statement and the bound that proves it."""

    epsilon: float
    delta: float
    neighbouring: str
    bound: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _check_q(q: float) -> float:
    if not 0.0 < q <= 1.0:
        raise ParameterError(f"q = rho*(1-beta_ip) must be in (0, 1], got {q!r}")
    return float(q)


def escape_probability(q: float, k: int, rounds: int) -> float:
    """(1 − q)^k, the chance of more than k paid rounds; 0 when k ≥ R."""
    if k >= rounds:
        return 0.0
    return (1.0 - _check_q(q)) ** k


def refined_pure(epsilon: float, *, k: int, q: float, rounds: int) -> Guarantee:
    """(k·ε, (1 − q)^k)-DP, add/remove (refined theorem, first bound)."""
    epsilon = check_epsilon(epsilon)
    k = check_positive_int(k, "k")
    rounds = check_positive_int(rounds, "rounds")
    k_eff = min(k, rounds)
    return Guarantee(
        epsilon=k_eff * epsilon,
        delta=escape_probability(q, k_eff, rounds),
        neighbouring=ADD_REMOVE,
        bound=f"refined theorem, pure bound (k={k_eff} paid rounds of {rounds})",
    )


def refined_azuma(
    epsilon: float, *, k: int, q: float, rounds: int, delta2: float
) -> Guarantee:
    """(kε²/2 + ε√(2k·ln(1/δ₂)), (1 − q)^k + δ₂)-DP, add/remove (refined, second bound)."""
    epsilon = check_epsilon(epsilon)
    k = check_positive_int(k, "k")
    rounds = check_positive_int(rounds, "rounds")
    delta2 = check_open_unit(delta2, "delta2")
    k_eff = min(k, rounds)
    eps_total = k_eff * epsilon**2 / 2 + epsilon * math.sqrt(2 * k_eff * math.log(1 / delta2))
    return Guarantee(
        epsilon=eps_total,
        delta=escape_probability(q, k_eff, rounds) + delta2,
        neighbouring=ADD_REMOVE,
        bound=f"refined theorem, Azuma bound (k={k_eff} paid rounds of {rounds})",
    )


def refined_best(
    epsilon: float, *, q: float, rounds: int, target_delta: float
) -> Guarantee:
    """The smallest ε̃ over both refined bounds, every k and δ₂, with δ̃ ≤ target_delta."""
    epsilon = check_epsilon(epsilon)
    target_delta = check_open_unit(target_delta, "delta")
    rounds = check_positive_int(rounds, "rounds")
    best: Guarantee | None = None
    for k in range(1, rounds + 1):
        escape = escape_probability(q, k, rounds)
        candidates = []
        if escape <= target_delta:
            candidates.append(refined_pure(epsilon, k=k, q=q, rounds=rounds))
        if escape < target_delta:
            candidates.append(
                refined_azuma(epsilon, k=k, q=q, rounds=rounds, delta2=target_delta - escape)
            )
        for g in candidates:
            if best is None or g.epsilon < best.epsilon:
                best = g
    if best is None:  # unreachable: k = R always qualifies
        raise ParameterError("no refined bound meets the requested delta")
    return best


def paper_bound(epsilon: float, *, delta: float, rounds: int) -> Guarantee:
    """The paper's statement: (70·ε·ln(1/δ), (R + 2)·δ), δ < e^{−2}."""
    epsilon = check_epsilon(epsilon)
    delta = check_open_unit(delta, "delta")
    rounds = check_positive_int(rounds, "rounds")
    if delta >= math.exp(-2):
        raise ParameterError(f"the paper's accounting needs delta < e^-2, got {delta}")
    return Guarantee(
        epsilon=70 * epsilon * math.log(1 / delta),
        delta=(rounds + 2) * delta,
        neighbouring=ADD_REMOVE,
        bound="paper (Sadigurschi & Stemmer 2021, Lemma 3.2: 35 ln(1/delta) paid rounds)",
    )


def composition_pure(epsilon: float, *, rounds: int) -> Guarantee:
    """Basic composition of R ε₀-DP rounds: (R·ε₀, 0)."""
    epsilon = check_epsilon(epsilon)
    rounds = check_positive_int(rounds, "rounds")
    return Guarantee(rounds * epsilon, 0.0, ADD_REMOVE, f"basic composition of {rounds} rounds")


def composition_zcdp(epsilon: float, *, rounds: int, delta: float) -> Guarantee:
    """R ε₀-DP rounds as ρ_z = R·ε₀²/2 zCDP → (ρ_z + 2√(ρ_z·ln(1/δ)), δ)."""
    epsilon = check_epsilon(epsilon)
    rounds = check_positive_int(rounds, "rounds")
    delta = check_open_unit(delta, "delta")
    rho_z = rounds * epsilon**2 / 2
    return Guarantee(
        rho_z + 2 * math.sqrt(rho_z * math.log(1 / delta)),
        delta,
        ADD_REMOVE,
        f"zCDP composition of {rounds} rounds (rho={rho_z:.6g})",
    )


def replace_one(g: Guarantee) -> Guarantee:
    """Group privacy of size 2: add/remove (ε, δ) ⇒ replace-one (2ε, (1 + e^ε)·δ)."""
    if g.neighbouring != ADD_REMOVE:
        raise ParameterError("replace_one expects an add/remove guarantee")
    return Guarantee(
        2 * g.epsilon,
        (1 + math.exp(g.epsilon)) * g.delta,
        REPLACE_ONE,
        g.bound + "; replace-one by group privacy (2eps, (1+e^eps)delta)",
    )


def add_remove_budget(epsilon: float, delta: float, neighbouring: str) -> tuple[float, float]:
    """The add/remove budget whose replace-one image is (ε, δ) (identity for add/remove)."""
    if neighbouring == ADD_REMOVE:
        return epsilon, delta
    if neighbouring != REPLACE_ONE:
        raise ParameterError(f"neighbouring must be one of {NEIGHBOURING}, got {neighbouring!r}")
    eps = epsilon / 2
    return eps, delta / (1 + math.exp(eps))
