"""Design study (issue #41): describe's sides on small columns that straddle zero.

A study script, not a release path: the product's outputs do not change. It runs one
ungrouped (group, column) cell through the core's own functions —
:func:`dprect.core.aggregates.describe_cell`'s steps: the noisy count, the split it selects
(:meth:`DescribePlan.tier_index`), a centre, then :func:`~dprect.core.aggregates.finish_cell`
(the lower side, the upper side, the sum noise) — with the centre (or the split's candidate
stride) chosen by one of these variants:

``base``
    the product before issue #41's sign × magnitude centre (s39-sign): the median's
    exponential mechanism on ``FloatBins(4)`` in float order at the split's ε_c, on a plan
    whose splits' least counts are the float-order median's (:func:`base_plan`:
    ⌈E + (4/ε_c)·ln(2^16/β)⌉), or the anchor 0.0 on the anchored split (an ungrouped
    column has no other group to anchor on).
``product``
    the product as built (s39-sign): :func:`~dprect.core.aggregates.describe_cell`'s steps
    with :func:`~dprect.core.tail_bounds.draw_centre_from_counts` — variant A with the
    magnitude drawn on the non-negative half of the grid (2^15 bins, not A's 2^16 with the
    negative half at depth 0) — on the product's plan (least counts of a median at ¾ε_c).
``A`` (sign × magnitude centre)
    the split's ε_c in two draws, both by the core's exact sampler
    (:func:`~dprect.core.interior_point.sample_unimodal`): the sign class s ∈ {−, +} with
    probability ∝ exp(ε₁·#{x of sign s}/2) (``SIGN_PART``·ε_c; a row changes one count by
    1), then the median of the magnitudes |x| on the same ``FloatBins(4)`` grid
    (:func:`~dprect.core.tail_bounds.centre_pieces_from_counts` on the histogram of |x|;
    depth min(#{|x| ≤ bin}, #{|x| ≥ bin}), sensitivity 1) at the rest; centre = s·m. The
    tiny-magnitude bins between the data of both signs have depth 0 for |x| (no |x| lies
    there), where in float order they all have depth ≈ n/2: the plateau that draws the
    product's centre to ~2^−500 is gone. The anchored split keeps the anchor.
``C8``, ``C4`` (a coarser stride from a floor centre)
    the product's centre, but a cell whose centre lies below the smallest offset
    2^MIN_OFFSET_EXPONENT in magnitude (0 included: the anchored split) draws its sides
    among every 8th (4th) candidate (:class:`Tier`'s ``stride``; a public function of the
    released centre): the ~32 octaves from 2^−32 to the data's scale cost μ·32 (μ·64)
    instead of μ·256 — and the prior's decay past the data weakens alike (e^−μ an octave
    at stride 8: Lemma D3′'s runaway statement is counted in steps).
``AC4``
    A, and C4's stride for a centre still below 2^−32 (the anchored split's 0.0).
``A3``
    A, and an ungrouped column (no other group to anchor on) has no anchored split: the
    last split with an own centre (the largest ε_c, ``CENTRE_CAP`` of what the count
    leaves) takes every released count below it — public, since whether a run is grouped
    is public; the split stays a function of the released count — its magnitude drawn on
    ``FloatBins(1)`` (two bins a binade: 2^13 bins outside the data to outweigh, not 2^16).

Metrics per configuration (``trials`` seeded runs): the share of runs whose bounds clip
more than half of the rows; the mean's RMSE over σ (the columns centred at 0 have no
relative error; each run's error capped at ``ERROR_CAP``, and the share of runs
whose error passes 1000·σ); the median |centre| and the share of runs whose sides both stopped at
their first candidate (step 0). Usage::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/describe_zero_study.py cause --trials 5
    PYTHONPATH=$PWD .venv/bin/python benchmarks/describe_zero_study.py map [--trials 20]
    PYTHONPATH=$PWD .venv/bin/python benchmarks/describe_zero_study.py large
    PYTHONPATH=$PWD .venv/bin/python benchmarks/describe_zero_study.py real --variants base,product
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bounds import heavy_tailed, load_real

from dprect.core import aggregates
from dprect.core.describe_stats import cell_statistics, centre_counts
from dprect.core.domains import FloatBins
from dprect.core.interior_point import Pieces, sample_unimodal
from dprect.core.randomness import RandomSource
from dprect.core.tail_bounds import (
    CENTRE_BITS,
    MIN_OFFSET_EXPONENT,
    CandidateStream,
    centre_pieces_from_counts,
    centre_value,
    draw_centre_from_counts,
)

#: variant A's share of ε_c for the sign class (the rest draws the magnitude)
SIGN_PART = 0.25
VARIANTS = ("base", "product", "A", "C8", "C4", "AC4", "A3")
#: a run's error |mean − truth|/scale is capped here before the RMSE (a side drawn out to
#: ~10^300 would overflow it); ``runaway`` counts the runs whose error passes 1000
ERROR_CAP = 1e6
_MAX_FLOAT = float(np.finfo(np.float64).max)
_FLOOR = math.ldexp(1.0, MIN_OFFSET_EXPONENT)


def magnitude_centre(x: np.ndarray, epsilon: float, rng: RandomSource,
                     bits: int = CENTRE_BITS) -> float:
    """Variant A's centre: a sign drawn ∝ exp(ε₁·rows of that sign/2), then the median
    of |x| by the exponential mechanism on ``FloatBins(bits)`` (the centre grid's by
    default; A3's small cells: two bins a binade, 2^13 bins), ε₁ + ε₂ = ``epsilon``."""
    e_sign = Fraction(epsilon) * Fraction(SIGN_PART).limit_denominator(1 << 20)
    e_mag = Fraction(epsilon) - e_sign
    negative = int(np.count_nonzero(x < 0))
    signs = Pieces(np.array([0, 1], dtype=np.uint64), np.array([1, 1], dtype=np.uint64),
                   np.array([negative, len(x) - negative], dtype=np.int64),
                   float(e_sign), 2)
    sign = -1.0 if sample_unimodal(signs, e_sign / 2, rng) == 0 else 1.0
    grid = FloatBins(bits)
    keys, counts = np.unique(grid.encode(np.abs(x)), return_counts=True)
    drawn = sample_unimodal(centre_pieces_from_counts(keys, counts, grid_size=grid.size),
                            e_mag / 2, rng, trusted=True)
    m = min(grid.lower_value(int(drawn)), _MAX_FLOAT)
    return sign * abs(m)


def base_plan(plan: aggregates.DescribePlan) -> aggregates.DescribePlan:
    """``plan`` with the least counts of the float-order median (before s39-sign): each
    split with an own centre selected from ⌈E + (4/ε_c)·ln(2^16/β)⌉ (E the count's error
    bound); the rest of the plan unchanged."""
    def least(eps_c: float) -> int:
        return math.ceil((plan.count_error or 0.0) + 4.0 / eps_c
                         * math.log((1 << (12 + CENTRE_BITS)) / plan.beta))
    small = tuple(t if t.min_count is None else dataclasses.replace(
        t, min_count=least(t.centre_epsilon)) for t in plan.small)
    return dataclasses.replace(plan, min_count=least(plan.centre_epsilon), small=small)


def base_centre(x: np.ndarray, tier: aggregates.Tier, rng: RandomSource) -> float:
    """The float-order median's centre at the split's ε_c (before s39-sign)."""
    drawn = sample_unimodal(centre_pieces_from_counts(*centre_counts(x)), tier.centre_rate,
                            rng, trusted=True)
    return centre_value(drawn)


def side_step(stream: CandidateStream, bound: float) -> int:
    """The drawn step of a side: the index of ``bound`` among its candidates."""
    k = 0
    while stream.has(k) and stream.value(k) != bound:
        k += 1
    return k


def cause(trials: int) -> list[dict[str, object]]:
    """The product on N(0, 1), ε = 1: where the centre lands (log2 |c|), each side's
    drawn step and the first step k_t whose tail is ≤ t, beside the scores that decide
    between step 0 and k_t: ε_s·(q_0 − t) against μ·k_t."""
    plan = base_plan(aggregates.plan_describe(1.0, 1, statistics=("count", "sum", "mean")))
    rows = []
    for n in (200, 500, 800, 900, 1000, 2000):
        x = np.random.default_rng([n, 41]).normal(0.0, 1.0, n)
        for t in range(trials):
            rng = RandomSource(seed=t)
            noisy = aggregates._noisy_count(plan, len(x), rng)
            tier = plan.tiers[plan.tier_index(noisy)]
            cell, c, _ = run_cell(x, plan, RandomSource(seed=t), "base")
            out: dict[str, object] = {"n": n, "tier": plan.tier_index(noisy),
                                      "log2c": math.log2(abs(c)) if c else None}
            for side, bound in (("upper", cell.upper), ("lower", cell.lower)):
                s = CandidateStream(c, side)  # type: ignore[arg-type]
                k = 0
                while s.has(k):
                    v = s.value(k)
                    q = int(np.sum(x > v) if side == "upper" else np.sum(x < v))
                    if k == 0:
                        q0 = q
                    if q <= tier.target:
                        break
                    k += 1
                out[side] = {"step": side_step(s, bound) // tier.stride,
                             "k_t": k // tier.stride,
                             "eps_gap": round(tier.side_epsilon * (q0 - tier.target), 1),
                             "mu_k_t": k // tier.stride / 2}
            rows.append(out)
            print(json.dumps(out), flush=True)
    return rows


def run_cell(x: np.ndarray, plan: aggregates.DescribePlan, rng: RandomSource,
             variant: str) -> tuple[aggregates.Cell, float, bool]:
    """One cell under ``variant``: (cell, centre, both sides at their first candidate)."""
    noisy = aggregates._noisy_count(plan, len(x), rng)
    tier = plan.tiers[plan.tier_index(noisy)]
    bits = CENTRE_BITS
    if tier.anchored and variant == "A3":  # no other group to anchor on: the last
        tier, bits = plan.tiers[-2], 1  # split with an own centre takes every count
    if tier.anchored:
        centre = 0.0
    elif variant.startswith("A"):
        centre = magnitude_centre(x, tier.centre_epsilon, rng, bits)
    elif variant == "product":
        centre = draw_centre_from_counts(*centre_counts(x), tier.sign_rate,
                                         tier.magnitude_rate, rng)
    else:
        centre = base_centre(x, tier, rng)
    if "C" in variant and abs(centre) < _FLOOR:
        tier = dataclasses.replace(tier, stride=int(variant[-1]))
    cell = aggregates.finish_cell(plan, tier, centre, cell_statistics(x, centre), noisy,
                                  rng)
    first = (cell.lower == CandidateStream(centre, "lower").value(0)
             and cell.upper == CandidateStream(centre, "upper").value(0))
    return cell, centre, first


def measure(x: np.ndarray, truth: float, scale: float, epsilon: float, variant: str,
            trials: int, seed: int) -> dict[str, float]:
    plan = aggregates.plan_describe(epsilon, 1, statistics=("count", "sum", "mean"))
    if variant != "product":  # the study's variants were measured on the base plan
        plan = base_plan(plan)
    clipped, sq, centres, firsts, runaway = 0, [], [], 0, 0
    for t in range(trials):
        rng = RandomSource(seed=seed * 1000 + t)
        cell, c, first = run_cell(x, plan, rng, variant)
        share = float(np.mean((x < cell.lower) | (x > cell.upper)))
        clipped += share > 0.5
        assert cell.mean is not None
        sq.append(min(abs(cell.mean - truth) / scale, ERROR_CAP) ** 2)
        runaway += abs(cell.mean - truth) > 1000 * scale
        centres.append(abs(c))
        firsts += first
    return {"clip50": clipped / trials, "rmse": math.sqrt(float(np.mean(sq))),
            "runaway": runaway / trials,
            "centre": float(np.median(centres)), "first": firsts / trials}


def failure_map(trials: int, variants: tuple[str, ...]) -> list[dict[str, object]]:
    rows = []
    for n in (100, 200, 500, 1000, 2000):
        for sigma in (1e-6, 1.0, 1e6):
            for loc in (0.0, 0.5, 3.0):
                x = np.random.default_rng([n, int(loc * 10), 41]).normal(loc, 1.0, n) * sigma
                for eps in (0.5, 1.0, 4.0):
                    row: dict[str, object] = {"n": n, "sigma": sigma, "loc": loc,
                                              "eps": eps}
                    for v in variants:
                        row[v] = measure(x, float(np.mean(x)), sigma, eps, v, trials,
                                         seed=n + int(eps * 10))
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    return rows


def large(trials: int, variants: tuple[str, ...]) -> list[dict[str, object]]:
    """Large columns keep their accuracy: the describe accuracy benchmark's heavy-tailed
    shapes (benchmarks/bounds.py; the real tables need benchmarks/requirements-real.txt)
    and normal columns of 10^5 rows; relative RMSE (over |mean|) at ε = 0.5, 1, 4."""
    cols = [(c.name, np.asarray(c.values, dtype=np.float64))
            for c in heavy_tailed(100_000, 0).columns]
    g = np.random.default_rng(7)
    cols += [("N(3,1)", g.normal(3.0, 1.0, 100_000)),
             ("N(0.5,1)e6", g.normal(0.5, 1.0, 100_000) * 1e6),
             ("N(-3,1)e-6", g.normal(-3.0, 1.0, 100_000) * 1e-6)]
    return [relative_row({"column": name, "eps": eps}, x, eps, variants, trials)
            for name, x in cols for eps in (0.5, 1.0, 4.0)]


def relative_row(row: dict[str, object], x: np.ndarray, eps: float,
                 variants: tuple[str, ...], trials: int) -> dict[str, object]:
    """``row`` with, per variant, the mean's relative RMSE (over |mean|) and clip share
    on column ``x`` at ``eps`` (printed as it is made)."""
    mu = float(np.mean(x))
    for v in variants:
        r = measure(x, mu, abs(mu), eps, v, trials, seed=int(eps * 10))
        row[v] = {"rel_rmse": r["rmse"], "clip50": r["clip50"]}
    print(json.dumps(row), flush=True)
    return row


def real(trials: int, variants: tuple[str, ...], only: tuple[str, ...] = ()
         ) -> list[dict[str, object]]:
    """§5.1's real columns (benchmarks/bounds.py ``load_real``: flights, weather,
    diamonds, scorecard), each one ungrouped cell: the relative RMSE of the mean (over
    |mean|; a column of mean 0 is left out) at ε = 0.5, 1, 4; ``only``: the
    ``table.column:eps`` cells to run (empty: all)."""
    tables, _ = load_real(None)
    rows = []
    for table in tables:
        for col in table.columns:
            x = np.asarray(col.values, dtype=np.float64)
            if float(np.mean(x)) == 0.0:
                continue
            for eps in (0.5, 1.0, 4.0):
                if only and f"{table.name}.{col.name}:{eps:g}" not in only:
                    continue
                rows.append(relative_row({"table": table.name, "column": col.name,
                                          "rows": len(x), "eps": eps}, x, eps, variants,
                                         trials))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("cause", "map", "large", "real"))
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", default="", help="real: table.column:eps cells, comma-separated")
    args = ap.parse_args()
    variants = tuple(args.variants.split(","))
    warnings.simplefilter("ignore")  # seeded sources warn: a study, not a release
    start = time.process_time()
    if args.what == "cause":
        rows = cause(args.trials)
    else:
        only = tuple(c for c in args.only.split(",") if c)
        rows = (real(args.trials, variants, only) if args.what == "real" else
                {"map": failure_map, "large": large}[args.what](args.trials, variants))
    print(f"# cpu {time.process_time() - start:.1f} s", flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
