"""Sample complexity of private rectangles: measurements beside the planner's predictions.

Setting (all public, synthetic): every axis is the grid {0, …, m−1} with m = 2^grid_bits
(default 2^32); the true rectangle is T = [m/4, 3m/4 − 1]^d; positives are drawn
uniformly from the grid points of T. Only positives reach the algorithms, so negatives
are not generated. Methods, all at the same total (ε, δ) (add/remove neighbours):

* ``randmargins-refined`` — RandMargins with the refined accounting (docs/privacy.md §4);
* ``randmargins-paper`` — RandMargins with the paper's accounting and Laplace margins;
* ``composition`` — the composition baseline (paper §1.2);
* ``bounding-box`` — the exact bounding box of the positives (NOT private; a reference).

(a) Misclassified positives at a sample large enough that no margin runs dry: n is
    ``n_factor`` × the largest planned Σ_t (block size) of refined RandMargins and
    composition, and 1.25 × Σ_t E[N_t] for the paper's accounting. Each trial checks
    (trace) that no round used a pad. Mean, sd, quantiles over ``trials`` fresh datasets.
(b) For d ≤ ``search_max_dim``: the smallest n (positives) with error ≤ α in at least a
    fraction ``quantile`` of ``search_trials`` fresh trials (searched from the predicted n
    while n·d ≤ ``search_max_cells``), where

        error(h) = P_{x ~ Uniform(T)}[h(x) = 0]

    is the generalisation error on the positive class, computed exactly (the mass of T
    outside h). Every output is also checked for h ⊄ T (a false-positive region), which
    happens only when an interior-point call fails; such trials are counted.
    For a distribution with positive mass π and negatives outside T, the error of an
    h ⊆ T is π·error(h), and n positives correspond to about n/π samples.
    RandMargins removes what it cuts, so once no margin runs dry its misclassified count
    M does not depend on n and error ≈ M/n. Where the search would exceed its budget
    (the paper's accounting: n ≈ 10^8 and more) n(α) is *derived* from (a) as
    quantile(M)/α, and marked so.

Predictions (planner): misclassified positives Σ_t (E[N_t] − Δ_t/2) (RandMargins) and
R·Δ₀/2 (composition); n(α) ≈ prediction/α. Bounding box: E[misclassified on a fresh
sample of size n] = n·(1 − ((n−1)/(n+1))^d) ≈ 2d, so n(α) solves 1 − ((n−1)/(n+1))^d = α.
Predictions are extended to d = 4096. Cases whose data would exceed ``max_cells``
(rows × features held in memory) are not run and are reported as such.

Writes ``sample_complexity.json`` and ``sample_complexity.png`` (docs/figures/ by
default, benchmarks/output/ with ``--quick``) and prints the fitted growth exponents in d
and the crossover dimension where RandMargins starts to win.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from evidence_common import Stopwatch, machine_info, output_dir, seeded_runs_allowed, write_json
from scipy.stats import gamma as gamma_dist

from dprect.core.algorithms import run_nonprivate_bounding_box, run_plan
from dprect.core.domains import Domain, IntegerRange
from dprect.core.margins import LaplaceLaw, StaircaseLaw
from dprect.core.planner import MethodPlan, Plan, plan
from dprect.core.randomness import RandomSource
from dprect.engines.numpy_engine import NumpyEngine

PRIVATE = ("randmargins-refined", "randmargins-paper", "composition")
METHODS = (*PRIVATE, "bounding-box")
PAPER_N_FACTOR = 1.25


@dataclass(frozen=True)
class Setup:
    """Everything that defines a run (recorded in the JSON)."""

    epsilon: float = 1.0
    delta: float = 1e-6
    beta: float = 1e-4
    grid_bits: int = 32
    dims: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
    trials: int = 10
    n_factor: float = 4.0
    search_max_dim: int = 16
    search_trials: int = 20
    target_error: float = 0.05
    quantile: float = 0.9
    search_precision: float = 1.05
    predict_max_dim: int = 4096
    max_cells: float = 6e8
    search_max_cells: float = 1e8
    seed: int = 20261122

    @property
    def grid_size(self) -> int:
        return 2**self.grid_bits

    @property
    def truth(self) -> tuple[int, int]:
        """Inclusive grid-index bounds of the true rectangle on every axis."""
        m = self.grid_size
        return m // 4, 3 * m // 4 - 1


QUICK = Setup(dims=(1, 2, 4), trials=4, search_max_dim=2, search_trials=6,
              search_precision=1.2, predict_max_dim=256, max_cells=3e6, search_max_cells=3e6)


# -- plans and predictions ----------------------------------------------------------------
def domains_for(setup: Setup, d: int) -> list[Domain]:
    return [IntegerRange(0, setup.grid_size - 1)] * d


def make_plans(setup: Setup, d: int) -> dict[str, Plan]:
    """The planner's plan for each private method at dimension d."""
    common = {"epsilon": setup.epsilon, "delta": setup.delta,
              "domains": domains_for(setup, d), "beta": setup.beta}
    return {
        "randmargins-refined": plan(method="randmargins", accounting="refined", **common),
        "randmargins-paper": plan(method="randmargins", accounting="paper", **common),
        "composition": plan(method="composition", **common),
    }


def block_sum(p: MethodPlan) -> float:
    """Σ_t E[block size]: E[N_t] for RandMargins, Δ₀ for composition."""
    return float(sum(r.ip_size if r.law is None else r.law.mean for r in p.rounds))


def bbox_expected_miss(n: int, d: int) -> float:
    """E[error] of the bounding box of n uniform positives in d dimensions."""
    return -math.expm1(d * math.log1p(-2 / (n + 1)))


def bbox_predicted_n(d: int, alpha: float) -> float:
    """The n with E[error] = α for the bounding box."""
    return 2 / -math.expm1(math.log1p(-alpha) / d) - 1


def error_count_quantile(p: MethodPlan | None, d: int, quantile: float,
                         draws: int = 100_000) -> float:
    """The ``quantile`` of n·error(h) under a simple model of a run (p None: the bounding
    box), for the 90%-of-trials criterion of part (b).

    The rectangle removes M positives (M = Σ_t (N_t − Δ/2), the interior point taken at
    the median of D_t; all rounds share one law here): staircase N_t = Δ(1 + J_t), so
    Σ J_t is negative binomial; the paper's law adds R Laplace(2Δ) shifts (normal
    approximation); composition fixes M. The population mass beyond the cut order
    statistics is then Gamma(M + d) / n (uniform spacings, half a gap per side); the
    bounding box sits on the 2d extreme points, Gamma(2d) / n."""
    if p is None:
        return float(gamma_dist.ppf(quantile, 2 * d))
    gen = np.random.default_rng(0)
    law, rounds = p.rounds[0].law, len(p.rounds)
    if isinstance(law, StaircaseLaw) and all(r.law is law for r in p.rounds):
        jumps = gen.negative_binomial(rounds, 1 - float(law.rho_fraction), draws)
        removed = rounds * law.size / 2 + law.size * jumps
    elif isinstance(law, LaplaceLaw) and all(r.law is law for r in p.rounds):
        removed = p.predicted_misclassified + gen.normal(
            0, law.scale * math.sqrt(2 * rounds), draws)
    else:
        removed = np.full(draws, p.predicted_misclassified)
    return float(np.quantile(gen.gamma(removed + d), quantile))


def paper_utility_bound(p: MethodPlan) -> float:
    """The paper's high-probability count (proof of Lemma 3.3): a_t ≤ 6Δ_t·ln(1/β)."""
    return float(sum(6 * r.ip_size * math.log(1 / p.ip_beta) for r in p.rounds))


def plan_summary(p: MethodPlan) -> dict[str, Any]:
    first = p.rounds[0]
    out: dict[str, Any] = {
        "predicted_misclassified": p.predicted_misclassified,
        "ip_epsilon": p.ip_epsilon, "ip_size": first.ip_size, "rounds": len(p.rounds),
        "block_sum": block_sum(p), "guarantee": p.guarantee.to_json(),
    }
    for key in ("rho", "k", "bound_kind"):
        if key in p.details:
            out[key] = p.details[key]
    if first.law is not None and hasattr(first.law, "mu"):
        out["laplace_mu"] = first.law.mu  # type: ignore[attr-defined]
    return out


def predictions(setup: Setup) -> list[dict[str, Any]]:
    """Planner predictions for d = 1, 2, 4, …, predict_max_dim."""
    rows = []
    d = 1
    while d <= setup.predict_max_dim:
        plans = make_plans(setup, d)
        row: dict[str, Any] = {"d": d}
        for name, p in plans.items():
            summary = plan_summary(p.chosen)
            summary["predicted_n"] = summary["predicted_misclassified"] / setup.target_error
            summary["predicted_n_quantile"] = error_count_quantile(
                p.chosen, d, setup.quantile) / setup.target_error
            row[name] = summary
        row["randmargins-paper"]["paper_utility_bound"] = paper_utility_bound(
            plans["randmargins-paper"].chosen)
        row["bounding-box"] = {
            "predicted_misclassified": 2.0 * d,
            "predicted_n": bbox_predicted_n(d, setup.target_error),
            "predicted_n_quantile": error_count_quantile(None, d, setup.quantile)
            / setup.target_error}
        rows.append(row)
        d *= 2
    return rows


def predicted_crossover(setup: Setup) -> int | None:
    """Smallest d (≤ predict_max_dim) from which the planner predicts RandMargins
    (refined) below composition at every larger power of two and at d itself."""
    def wins(d: int) -> bool:
        plans = make_plans(setup, d)
        return (plans["randmargins-refined"].chosen.predicted_misclassified
                < plans["composition"].chosen.predicted_misclassified)

    powers = [2**i for i in range(int(math.log2(setup.predict_max_dim)) + 1)]
    flags = [wins(d) for d in powers]
    if not flags[-1]:
        return None
    i = len(flags) - 1
    while i > 0 and flags[i - 1]:
        i -= 1
    if i == 0:
        return 1
    lo, hi = powers[i - 1], powers[i]  # loses at lo, wins at hi
    for d in range(lo + 1, hi):
        if wins(d):
            return d
    return hi


# -- data, runs and errors ----------------------------------------------------------------
def trial_rngs(setup: Setup, *key: int) -> tuple[np.random.Generator, int]:
    """An independent data generator and algorithm seed for one trial."""
    data, algo = np.random.SeedSequence([setup.seed, *key]).spawn(2)
    return np.random.default_rng(data), int(algo.generate_state(1, dtype=np.uint32)[0])


def positives(setup: Setup, gen: np.random.Generator, n: int, d: int) -> list[np.ndarray]:
    """n positives uniform on the grid points of T, one column per feature (sort values =
    grid indices, exactly what IntegerRange encodes integer features to)."""
    lo, hi = setup.truth
    dtype = np.uint32 if setup.grid_size <= 2**32 else np.int64
    return [gen.integers(lo, hi + 1, size=n, dtype=dtype) for _ in range(d)]


@dataclass(frozen=True)
class Outcome:
    """One run: the rectangle's grid-index bounds and whether a round used pads."""

    lo: tuple[int, ...]
    hi: tuple[int, ...]
    pads_used: bool


def run_method(setup: Setup, method: str, plans: dict[str, Plan], columns: list[np.ndarray],
               seed: int, *, trace: bool = False) -> Outcome:
    """Run one method on the positives through dprect's numpy engine."""
    d = len(columns)
    domains = domains_for(setup, d)
    engine = NumpyEngine(columns)
    if method == "bounding-box":
        rect = run_nonprivate_bounding_box(engine, domains)
        return Outcome(rect.lo, rect.hi, False)
    rounds: list | None = [] if trace else None
    result = run_plan(engine, domains, [f"x{j}" for j in range(d)], plans[method],
                      RandomSource(seed=seed), trace=rounds)
    planned = plans[method].chosen.rounds
    pads = any(t.real_points < r.ip_size for t, r in zip(rounds or [], planned, strict=False))
    return Outcome(tuple(result.lower_index), tuple(result.upper_index), pads)


def miss_rate(setup: Setup, out: Outcome) -> float:
    """error(h) = P_{x ~ Uniform(T)}[x ∉ h], exactly."""
    t_lo, t_hi = setup.truth
    width = t_hi - t_lo + 1
    log_inside = 0.0
    for lo, hi in zip(out.lo, out.hi, strict=True):
        overlap = min(hi, t_hi) - max(lo, t_lo) + 1
        if overlap <= 0:
            return 1.0
        log_inside += math.log(overlap / width)
    return -math.expm1(log_inside)


def leaves_truth(setup: Setup, out: Outcome) -> bool:
    """True when h is non-empty and sticks out of T (a false-positive region)."""
    t_lo, t_hi = setup.truth
    if any(lo > hi for lo, hi in zip(out.lo, out.hi, strict=True)):
        return False
    return any(lo < t_lo or hi > t_hi for lo, hi in zip(out.lo, out.hi, strict=True))


def misclassified(columns: list[np.ndarray], out: Outcome) -> int:
    """Positives of the sample outside h."""
    inside = np.ones(len(columns[0]), dtype=bool)
    scratch = np.empty_like(inside)
    for col, lo, hi in zip(columns, out.lo, out.hi, strict=True):
        inside &= np.greater_equal(col, lo, out=scratch)
        inside &= np.less_equal(col, hi, out=scratch)
    return int(len(inside) - np.count_nonzero(inside))


# -- (a) misclassified positives at a large sample ------------------------------------------
def nice_ceil(x: float) -> int:
    """x rounded up to two significant digits."""
    if x <= 100:
        return max(1, math.ceil(x))
    scale = 10 ** (math.floor(math.log10(x)) - 1)
    return int(math.ceil(x / scale) * scale)


def stats(values: list[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=np.float64)
    return {"mean": float(a.mean()), "sd": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
            "min": float(a.min()), "q10": float(np.quantile(a, 0.1)),
            "median": float(np.median(a)), "q90": float(np.quantile(a, 0.9)),
            "max": float(a.max()), "trials": len(a)}


def nice_floor(x: float) -> int:
    """x rounded down to two significant digits."""
    scale = 10 ** max(0, math.floor(math.log10(x)) - 1)
    return int(x // scale * scale)


def large_sizes(setup: Setup, plans: dict[str, Plan], d: int) -> dict[str, int]:
    """The sample size of part (a) for each method (see the module docstring). When
    ``n_factor`` × the block sum does not fit in ``max_cells``, the largest n that fits,
    as long as it still keeps RandMargins' margins from running dry."""
    refined = block_sum(plans["randmargins-refined"].chosen)
    main = nice_ceil(setup.n_factor * max(refined, block_sum(plans["composition"].chosen)))
    fits = nice_floor(setup.max_cells / d)
    if main > fits >= PAPER_N_FACTOR * refined:
        main = fits
    paper = nice_ceil(PAPER_N_FACTOR * block_sum(plans["randmargins-paper"].chosen))
    return {"randmargins-refined": main, "composition": main, "bounding-box": main,
            "randmargins-paper": paper}


def composition_at(p: MethodPlan, n: int, d: int) -> float:
    """E[misclassified] of composition on n uniform positives: each axis loses about
    Σ (its rounds' Δ₀/2) of n, independently across axes (rounds overlap; nothing is
    removed), so E = n·(1 − Π_j (1 − c_j/n))."""
    per_axis = [0.0] * d
    for r in p.rounds:
        per_axis[r.axis] += r.predicted_misclassified
    return n * -math.expm1(sum(math.log1p(-c / n) for c in per_axis))


def without_overlap(measured: float, n: int, d: int) -> float:
    """Invert :func:`composition_at` (equal axes): the count the same cuts would give on
    an unbounded sample, d·c = n·d·(1 − (1 − M/n)^{1/d})."""
    return n * d * -math.expm1(math.log1p(-measured / n) / d)


def measure_large(setup: Setup, d: int, plans: dict[str, Plan]) -> dict[str, Any]:
    """Part (a) at dimension d."""
    sizes = large_sizes(setup, plans, d)
    groups = [("randmargins-refined", "composition", "bounding-box"), ("randmargins-paper",)]
    out: dict[str, Any] = {}
    for g, group in enumerate(groups):
        n = sizes[group[0]]
        if n * d > setup.max_cells:
            for method in group:
                out[method] = {"n": n, "measured": False,
                               "reason": f"needs {n:,} positives x {d} features = "
                                         f"{n * d:.3g} cells > max_cells {setup.max_cells:.3g}"}
            continue
        clock = Stopwatch()
        rows: dict[str, list[dict[str, Any]]] = {m: [] for m in group}
        for t in range(setup.trials):
            gen, seed = trial_rngs(setup, 1, d, g, t)
            columns = positives(setup, gen, n, d)
            for i, method in enumerate(group):
                res = run_method(setup, method, plans, columns, seed + i, trace=True)
                rows[method].append({"misclassified": misclassified(columns, res),
                                     "error": miss_rate(setup, res), "pads": res.pads_used,
                                     "leaves_truth": leaves_truth(setup, res)})
            del columns
        for method in group:
            r = rows[method]
            out[method] = {
                "n": n, "measured": True, "seconds_all_group": clock.seconds(),
                "misclassified": stats([x["misclassified"] for x in r]),
                "fresh_sample_misclassified": stats([x["error"] * n for x in r]),
                "error": stats([x["error"] for x in r]),
                "trials_with_pads": sum(x["pads"] for x in r),
                "trials_leaving_truth": sum(x["leaves_truth"] for x in r),
            }
    comp = out["composition"]
    if comp["measured"]:
        comp["predicted_at_n"] = composition_at(plans["composition"].chosen, comp["n"], d)
        comp["misclassified_without_overlap"] = without_overlap(
            comp["misclassified"]["mean"], comp["n"], d)
    bbox = out["bounding-box"]
    if bbox["measured"]:
        bbox["predicted_at_n"] = bbox["n"] * bbox_expected_miss(bbox["n"], d)
    return out


# -- (b) the smallest n reaching error ≤ α -------------------------------------------------
def evaluate_n(setup: Setup, d: int, method: str, plans: dict[str, Plan], n: int
               ) -> dict[str, Any]:
    """Fresh trials at n positives until "error ≤ α in ≥ quantile of ``search_trials``
    trials" is decided: trials stop once enough successes, or too many failures, are in
    (the verdict is the one all ``search_trials`` trials would give)."""
    need = math.ceil(setup.quantile * setup.search_trials - 1e-9)
    errors, leaving = [], 0
    for t in range(setup.search_trials):
        gen, seed = trial_rngs(setup, 2, d, METHODS.index(method), n, t)
        columns = positives(setup, gen, n, d)
        res = run_method(setup, method, plans, columns, seed)
        del columns
        errors.append(miss_rate(setup, res))
        leaving += leaves_truth(setup, res)
        successes = sum(e <= setup.target_error for e in errors)
        if successes >= need or len(errors) - successes > setup.search_trials - need:
            break
    e = np.asarray(errors)
    return {"n": n, "passed": bool(successes >= need), "trials_run": len(e),
            "successes": int(successes), "error_median": float(np.median(e)),
            "error_max": float(e.max()), "trials_leaving_truth": leaving}


def bracket_search(passes: Callable[[int], bool], start: int, limit: int, precision: float,
                   step: float = 1.25) -> tuple[int | None, int]:
    """Smallest passing n: bracket from ``start`` (a prediction) in geometric steps, then
    bisect in log scale to ``precision``. Returns (n_min, or None if it lies beyond
    ``limit``; the largest failing n seen, 0 if none)."""
    n = min(max(1, start), limit)
    lo, hi = (0, n) if passes(n) else (n, 0)
    while hi == 0:
        if lo >= limit:
            return None, lo
        n = min(max(lo + 1, round(lo * step)), limit)
        if passes(n):
            hi = n
        else:
            lo = n
    while lo == 0 and hi > 1:
        n = max(1, min(hi - 1, round(hi / step)))
        if passes(n):
            hi = n
        else:
            lo = n
    while lo > 0 and hi > lo + 1 and hi / lo > precision:
        n = round(math.sqrt(lo * hi))
        if passes(n):
            hi = n
        else:
            lo = n
    return hi, lo


def search_smallest_n(setup: Setup, d: int, method: str, plans: dict[str, Plan],
                      start: float) -> dict[str, Any]:
    """Part (b) for one method at dimension d."""
    clock = Stopwatch()
    seen: dict[int, dict[str, Any]] = {}

    def passes(n: int) -> bool:
        if n not in seen:
            seen[n] = evaluate_n(setup, d, method, plans, n)
        return seen[n]["passed"]

    limit = int(setup.search_max_cells // d)
    if nice_ceil(start) > limit:  # the prediction alone is already beyond the budget
        return {"n_min": None, "n_largest_failing": None, "beyond_budget": True,
                "limit": limit, "seconds": 0.0, "evaluations": []}
    n_min, n_fail = bracket_search(passes, nice_ceil(start), limit, setup.search_precision)
    return {"n_min": n_min, "n_largest_failing": n_fail, "beyond_budget": n_min is None,
            "limit": limit, "seconds": clock.seconds(),
            "evaluations": [seen[k] for k in sorted(seen)]}


def derived_n(setup: Setup, entry: dict[str, Any]) -> float | None:
    """n(α) from part (a) for RandMargins: quantile(M)/α (M does not depend on n)."""
    if not entry.get("measured"):
        return None
    counts = entry["misclassified"]
    q = counts["q90"] if setup.quantile == 0.9 else counts["max"]
    return q / setup.target_error


def search_start(setup: Setup, method: str, plans: dict[str, Plan], d: int) -> float:
    """Where the search starts: the prediction of n."""
    p = None if method == "bounding-box" else plans[method].chosen
    return error_count_quantile(p, d, setup.quantile) / setup.target_error


# -- summary: exponents, crossover, agreement -----------------------------------------------
def slope(ds: list[int], values: list[float | None]) -> float | None:
    """Least-squares slope of log(value) against log(d) (None if < 2 usable points)."""
    pts = [(d, v) for d, v in zip(ds, values, strict=True) if v is not None and v > 0]
    if len(pts) < 2:
        return None
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def measured_count(entry: dict[str, Any], method: str) -> float | None:
    """The (a) count plotted and fitted: in-sample misclassified positives, except for the
    bounding box, which misclassifies none of its own sample: its fresh-sample count."""
    if not entry.get("measured"):
        return None
    key = "fresh_sample_misclassified" if method == "bounding-box" else "misclassified"
    return entry[key]["mean"]


def first_win(dims: list[int], ours: dict[int, float | None],
              theirs: dict[int, float | None]) -> int | None:
    """The smallest measured d from which ``ours`` < ``theirs`` at every measured d."""
    wins = [d for d in dims if None not in (ours[d], theirs[d]) and ours[d] < theirs[d]]
    return next((d for d in dims if all(e in wins for e in dims if e >= d)), None)


def summarize(setup: Setup, large: dict[int, dict[str, Any]], search: dict[int, dict[str, Any]],
              preds: list[dict[str, Any]], crossover: int | None) -> dict[str, Any]:
    """Growth exponents, crossovers and measured/predicted ratios."""
    dims = sorted(large)
    by_d = {row["d"]: row for row in preds}
    exponents: dict[str, Any] = {}
    for method in METHODS:
        measured = [measured_count(large[d][method], method) for d in dims]
        predicted = [by_d[d][method]["predicted_misclassified"] for d in dims]
        tail = [d for d in by_d if d >= 256]
        sdims = sorted(search)
        exponents[method] = {
            "misclassified_measured": slope(dims, measured),
            "misclassified_predicted_same_d": slope(dims, predicted),
            "misclassified_predicted_256_to_max": slope(
                tail, [by_d[d][method]["predicted_misclassified"] for d in tail]),
            "n_min_measured": slope(sdims, [search[d][method]["n_min"] for d in sdims]),
            "n_predicted_same_d": slope(sdims, [by_d[d][method]["predicted_n"] for d in sdims]),
        }
    ratios = {method: {d: (measured_count(large[d][method], method) or math.nan)
                       / by_d[d][method]["predicted_misclassified"] for d in dims}
              for method in METHODS}
    rm = {d: measured_count(large[d]["randmargins-refined"], "randmargins-refined")
          for d in dims}
    raw = {d: measured_count(large[d]["composition"], "composition") for d in dims}
    unbounded = {d: large[d]["composition"].get("misclassified_without_overlap") for d in dims}
    return {"exponents": exponents, "crossover_predicted": crossover,
            "crossover_measured": first_win(dims, rm, raw),
            "crossover_measured_without_overlap": first_win(dims, rm, unbounded),
            "measured_over_predicted": {m: {str(d): (None if math.isnan(v) else v)
                                            for d, v in r.items()} for m, r in ratios.items()}}


# -- figure ------------------------------------------------------------------------------
STYLE = {"randmargins-refined": ("C0", "o"), "randmargins-paper": ("C3", "s"),
         "composition": ("C1", "^"), "bounding-box": ("C2", "D")}


def _panel_counts(ax: Any, result: dict[str, Any]) -> None:
    """(a) misclassified positives: planner lines, measured mean ± sd."""
    preds, large = result["predictions"], result["large_sample"]
    for method in METHODS:
        colour, marker = STYLE[method]
        ax.plot([row["d"] for row in preds],
                [row[method]["predicted_misclassified"] for row in preds], "-", color=colour,
                alpha=0.6, label=f"{method} (predicted)")
        pts = [(int(d), e[method]) for d, e in large.items() if e[method].get("measured")]
        key = "fresh_sample_misclassified" if method == "bounding-box" else "misclassified"
        if pts:
            ax.errorbar([d for d, _ in pts], [e[key]["mean"] for _, e in pts],
                        yerr=[e[key]["sd"] for _, e in pts], fmt=marker, color=colour,
                        capsize=3, label=f"{method} (measured"
                        + (", fresh sample)" if method == "bounding-box" else ")"))
    setup = result["setup"]
    ax.set_title("(a) misclassified positives at a large sample\n"
                 f"(ε, δ) = ({setup['epsilon']:g}, {setup['delta']:g}), grid "
                 f"2^{setup['grid_bits']}, mean ± sd over {setup['trials']} trials")
    ax.set_ylabel("misclassified positives")


def _panel_sizes(ax: Any, result: dict[str, Any]) -> None:
    """(b) n(α): mean and quantile predictions, measured searches, derived values."""
    preds, search, setup = result["predictions"], result["smallest_n"], result["setup"]
    pd = [row["d"] for row in preds]
    for method in METHODS:
        colour, marker = STYLE[method]
        ax.plot(pd, [row[method]["predicted_n"] for row in preds], "-", color=colour,
                alpha=0.6, label=f"{method} (predicted, mean)")
        if method != "randmargins-paper":  # its quantile line sits on its mean line
            ax.plot(pd, [row[method]["predicted_n_quantile"] for row in preds], "--",
                    color=colour, alpha=0.6,
                    label=f"{method} (predicted, {setup['quantile']:.0%} quantile)")
        found = [(int(d), e[method]) for d, e in search.items() if e[method]["n_min"]]
        if found:
            below = [r["n_min"] - (r["n_largest_failing"] or 0) for _, r in found]
            ax.errorbar([d for d, _ in found], [r["n_min"] for _, r in found],
                        yerr=[below, [0] * len(found)], fmt=marker, color=colour, capsize=3,
                        label=f"{method} (measured)")
        derived = [(int(d), e[method]["derived_n"]) for d, e in search.items()
                   if e[method].get("derived_n")]
        if derived:
            ax.plot([d for d, _ in derived], [v for _, v in derived], marker, color=colour,
                    mfc="none", label=f"{method} (derived from (a))")
    ax.set_title(f"(b) smallest n with error ≤ {setup['target_error']:g} in ≥ "
                 f"{setup['quantile']:.0%} of {setup['search_trials']} trials\n"
                 "(bar: down to the largest failing n)")
    ax.set_ylabel("positives n")


def _panel_ratio(ax: Any, result: dict[str, Any]) -> None:
    """(c) RandMargins (refined) / composition: predicted, measured, without overlap."""
    preds, large = result["predictions"], result["large_sample"]
    ax.plot([row["d"] for row in preds],
            [row["randmargins-refined"]["predicted_misclassified"]
             / row["composition"]["predicted_misclassified"] for row in preds],
            "-", color="C0", alpha=0.6, label="predicted (planner)")
    pts = [(int(d), e) for d, e in large.items() if e["composition"].get("measured")]
    rm = [e["randmargins-refined"]["misclassified"]["mean"] for _, e in pts]
    ax.plot([d for d, _ in pts], [r / e["composition"]["misclassified"]["mean"]
                                  for r, (_, e) in zip(rm, pts, strict=True)],
            "o", color="C0", label="measured, at the benchmark's n")
    ax.plot([d for d, _ in pts], [r / e["composition"]["misclassified_without_overlap"]
                                  for r, (_, e) in zip(rm, pts, strict=True)],
            "o", color="C0", mfc="none", label="measured, composition without overlap")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_title("(c) misclassified: RandMargins (refined) / composition\n"
                 "(below 1: RandMargins wins)")
    ax.set_ylabel("ratio")


def plot(result: dict[str, Any], path: Path) -> None:
    """The figure of a run (or of its JSON): panels (a), (b), (c), log-log."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(19, 5.6))
    _panel_counts(axes[0], result)
    _panel_sizes(axes[1], result)
    _panel_ratio(axes[2], result)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("dimension d")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2 if ax is not axes[2] else 1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- main --------------------------------------------------------------------------------
def print_report(setup: Setup, large: dict[int, dict[str, Any]],
                 search: dict[int, dict[str, Any]], preds: list[dict[str, Any]],
                 summary: dict[str, Any]) -> None:
    """The tables and the headline numbers, on stdout."""
    print("\n(a) misclassified positives (mean ± sd) vs planner prediction")
    print(f"{'d':>5} {'method':<21}{'n':>13}{'measured':>22}{'predicted':>14}{'ratio':>8}")
    by_pred = summary["measured_over_predicted"]
    for d in sorted(large):
        for method in METHODS:
            e = large[d][method]
            if not e.get("measured"):
                print(f"{d:>5} {method:<21}{e['n']:>13,}   not run: {e['reason']}")
                continue
            key = "fresh_sample_misclassified" if method == "bounding-box" else "misclassified"
            s = e[key]
            ratio = by_pred[method][str(d)]
            pred = s["mean"] / ratio if ratio else math.nan
            print(f"{d:>5} {method:<21}{e['n']:>13,}{s['mean']:>14,.0f} ± {s['sd']:<6,.0f}"
                  f"{pred:>14,.0f}{ratio:>8.3f}")
    if search:
        print(f"\n(b) smallest n with error ≤ {setup.target_error} in ≥ {setup.quantile:.0%}"
              " of trials, beside the predicted n")
        by_d = {row["d"]: row for row in preds}
        for d in sorted(search):
            for method in METHODS:
                r, p = search[d][method], by_d[d][method]
                if not r["beyond_budget"]:
                    txt = f"{r['n_min']:,} (fails at {r['n_largest_failing']:,})"
                elif r.get("derived_n"):
                    txt = f"~{r['derived_n']:,.0f} (derived from (a))"
                else:
                    txt = "beyond the search budget"
                pred = p.get("predicted_n_quantile", p["predicted_n"])
                print(f"{d:>5} {method:<21}{txt:<36} predicted {pred:,.0f}")
    print("\ngrowth exponents in d (least-squares slope on log-log):")
    for method, ex in summary["exponents"].items():
        parts = [f"{k}={v:.3f}" for k, v in ex.items() if v is not None]
        print(f"  {method:<21}" + ", ".join(parts))
    print(f"crossover (RandMargins refined < composition): predicted d = "
          f"{summary['crossover_predicted']}; measured (among the measured d) = "
          f"{summary['crossover_measured']} at the benchmark's n, "
          f"{summary['crossover_measured_without_overlap']} against composition's count "
          "without overlap")


def parse_args(argv: list[str] | None) -> tuple[Setup, argparse.Namespace]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small smoke run (seconds)")
    ap.add_argument("--epsilon", type=float)
    ap.add_argument("--delta", type=float)
    ap.add_argument("--beta", type=float, help="failure target of a whole run")
    ap.add_argument("--grid-bits", type=int)
    ap.add_argument("--dims", help="comma-separated dimensions for (a)")
    ap.add_argument("--trials", type=int)
    ap.add_argument("--search-trials", type=int)
    ap.add_argument("--search-max-dim", type=int, help="largest d for (b); 0 skips (b)")
    ap.add_argument("--target-error", type=float)
    ap.add_argument("--predict-max-dim", type=int)
    ap.add_argument("--max-cells", type=float, help="largest rows x features held in memory")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--out-dir", help="default docs/figures (benchmarks/output with --quick)")
    ap.add_argument("--replot", metavar="JSON",
                    help="only redraw the figure of an earlier run's JSON (beside it)")
    args = ap.parse_args(argv)
    setup = QUICK if args.quick else Setup()
    changes = {k: v for k, v in {
        "epsilon": args.epsilon, "delta": args.delta, "beta": args.beta,
        "grid_bits": args.grid_bits, "trials": args.trials,
        "search_trials": args.search_trials, "search_max_dim": args.search_max_dim,
        "target_error": args.target_error, "predict_max_dim": args.predict_max_dim,
        "max_cells": args.max_cells, "seed": args.seed,
        "dims": tuple(int(x) for x in args.dims.split(",")) if args.dims else None,
    }.items() if v is not None}
    return replace(setup, **changes), args


def run(setup: Setup, out: Path) -> dict[str, Any]:
    """Measure (a) and (b), predict, summarise, and write JSON and PNG under ``out``."""
    clock = Stopwatch()
    large, search = {}, {}
    with seeded_runs_allowed():
        for d in setup.dims:
            plans = make_plans(setup, d)
            large[d] = measure_large(setup, d, plans)
            print(f"(a) d={d} done at {clock.seconds()} s", flush=True)
            if d <= setup.search_max_dim:
                search[d] = {m: search_smallest_n(setup, d, m, plans,
                                                  search_start(setup, m, plans, d))
                             for m in METHODS}
                for m in ("randmargins-refined", "randmargins-paper"):
                    if search[d][m]["beyond_budget"]:
                        search[d][m]["derived_n"] = derived_n(setup, large[d][m])
                print(f"(b) d={d} done at {clock.seconds()} s", flush=True)
    preds = predictions(setup)
    summary = summarize(setup, large, search, preds, predicted_crossover(setup))
    result = {"setup": {**asdict(setup), "dims": list(setup.dims)}, "machine": machine_info(),
              "command": " ".join(["python", *sys.argv]), "seconds": clock.seconds(),
              "large_sample": {str(d): v for d, v in large.items()},
              "smallest_n": {str(d): v for d, v in search.items()},
              "predictions": preds, "summary": summary}
    write_json(out / "sample_complexity.json", result)
    plot(result, out / "sample_complexity.png")
    print_report(setup, large, search, preds, summary)
    print(f"\nwrote {out / 'sample_complexity.json'} and {out / 'sample_complexity.png'} "
          f"in {clock.seconds()} s")
    return result


def main(argv: list[str] | None = None) -> int:
    setup, args = parse_args(argv)
    if args.replot:
        source = Path(args.replot)
        plot(json.loads(source.read_text()), source.with_suffix(".png"))
        return 0
    run(setup, output_dir(args.out_dir, args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
