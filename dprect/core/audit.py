"""Empirical privacy audits: statistically valid lower bounds on ε from samples.

A mechanism M is (ε, δ)-DP only if, for neighbours S, S' and every event E,
P(M(S) ∈ E) ≤ e^ε·P(M(S') ∈ E) + δ. From n_a runs on S and n_b runs on S' we get a
Clopper–Pearson lower confidence bound p_a⁻ on P(M(S) ∈ E) and an upper bound p_b⁺ on
P(M(S') ∈ E); then with confidence ≥ 1 − α (α split between the two bounds)

    ε ≥ ln((p_a⁻ − δ) / p_b⁺).

The event is chosen on one half of the samples and evaluated on the other, so the
selection does not bias the bound (a held-out test; Jagielski et al. 2020 and Nasr et al.
2021 audit in the same way). A bound above the claimed ε refutes the claim (up to α).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from dprect.core.extras import require


def clopper_pearson(count: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper–Pearson bounds (lower, upper), each holding w.p. ≥ 1 − alpha."""
    require("audit")
    from scipy.stats import beta as beta_dist

    if n <= 0 or not 0 <= count <= n:
        raise ValueError("need 0 <= count <= n and n > 0")
    lower = 0.0 if count == 0 else float(beta_dist.ppf(alpha, count, n - count + 1))
    upper = 1.0 if count == n else float(beta_dist.ppf(1 - alpha, count + 1, n - count))
    return lower, upper


def epsilon_lower_bound(count_a: int, n_a: int, count_b: int, n_b: int, *,
                        delta: float = 0.0, confidence: float = 0.95) -> float:
    """ε ≥ ln((p_a⁻ − δ)/p_b⁺) with the stated confidence (0 when nothing is shown)."""
    alpha = (1 - confidence) / 2
    p_a, _ = clopper_pearson(count_a, n_a, alpha)
    _, p_b = clopper_pearson(count_b, n_b, alpha)
    if p_a - delta <= 0 or p_b <= 0:
        return 0.0
    return max(0.0, math.log((p_a - delta) / p_b))


@dataclass(frozen=True)
class AuditResult:
    """The held-out lower bound on ε and the event that produced it."""

    epsilon_lower: float
    event: frozenset
    direction: str  # "a>b" (P_a(E) large vs P_b(E)) or "b>a"
    count_a: int
    count_b: int
    n_a: int
    n_b: int
    confidence: float


def _candidate_events(counts_a: Counter, counts_b: Counter, n_a: int, n_b: int
                      ) -> list[frozenset]:
    """Nested events: outcomes sorted by smoothed likelihood ratio, top-1, top-2, …"""
    outcomes = set(counts_a) | set(counts_b)
    ratio = {o: ((counts_a[o] + 0.5) / n_a) / ((counts_b[o] + 0.5) / n_b) for o in outcomes}
    ranked = sorted(outcomes, key=lambda o: (-ratio[o], repr(o)))
    events, acc = [], []
    for o in ranked[: 200]:
        acc.append(o)
        events.append(frozenset(acc))
    return events


def audit_samples(samples_a: Sequence[Hashable], samples_b: Sequence[Hashable], *,
                  delta: float = 0.0, confidence: float = 0.95) -> AuditResult:
    """Worst-event ε lower bound from outputs on S (a) and S' (b), both directions.

    Each sample list is split in half: the first halves choose, per direction, the event
    with the best lower bound among nested likelihood-ratio events; the second halves
    evaluate it. The two directions share the confidence by a union bound.
    """
    half_a, half_b = len(samples_a) // 2, len(samples_b) // 2
    if half_a < 1 or half_b < 1:
        raise ValueError("need at least two samples on each side")
    sel_a, ev_a = Counter(samples_a[:half_a]), Counter(samples_a[half_a:])
    sel_b, ev_b = Counter(samples_b[:half_b]), Counter(samples_b[half_b:])
    n_ev_a, n_ev_b = len(samples_a) - half_a, len(samples_b) - half_b
    per_direction = 1 - (1 - confidence) / 2
    best: AuditResult | None = None
    for direction, (sa, sb, ea, eb, na, nb, nsa, nsb) in {
        "a>b": (sel_a, sel_b, ev_a, ev_b, n_ev_a, n_ev_b, half_a, half_b),
        "b>a": (sel_b, sel_a, ev_b, ev_a, n_ev_b, n_ev_a, half_b, half_a),
    }.items():
        events = _candidate_events(sa, sb, nsa, nsb)
        chosen = max(events, key=lambda e: epsilon_lower_bound(
            sum(sa[o] for o in e), nsa, sum(sb[o] for o in e), nsb,
            delta=delta, confidence=per_direction))
        ca, cb = sum(ea[o] for o in chosen), sum(eb[o] for o in chosen)
        lb = epsilon_lower_bound(ca, na, cb, nb, delta=delta, confidence=per_direction)
        if direction == "b>a":
            result = AuditResult(lb, chosen, direction, cb, ca, nb, na, confidence)
        else:
            result = AuditResult(lb, chosen, direction, ca, cb, na, nb, confidence)
        if best is None or result.epsilon_lower > best.epsilon_lower:
            best = result
    assert best is not None
    return best
