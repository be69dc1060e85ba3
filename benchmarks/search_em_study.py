"""The design study behind issue #23's side draw: the two laws of a side, AboveThreshold
(the search before) and the monotone exponential mechanism (built:
dprect/core/step_exponential.py), on the evidence's columns.

    python benchmarks/search_em_study.py [--quick]

**Why.** AboveThreshold split a side's ε_s into a threshold noise (ε₁ = 0.7·ε_s) and step
noises (ε₂): a side ran past its data only through ρ's left tail and clipped too much only
through ν's, so at the clipping check's early-stop chance its runaway chance per side
stayed near 10⁻⁵ (about 0.2 runaways per evidence run of 21,000 sides; one happened).
The exponential mechanism draws step k with probability ∝ exp(−ε_s·max(q_k − t, 0) − μ·k):
the whole ε_s on one draw, and past the data only the prior decay μ per step is left, so
K steps past the target step have probability ≤ e^{−μK}/(1 − e^{−μ}) (docs/privacy.md
§11, Lemma D3′). Its price: a run of rows beyond an empty gap of G steps is covered only
when ε_s·(rows − t) outweighs μ·G.

**What this prints.** For the evidence's columns (the real tables + the heavy-tailed
synthetic ones) and ε ∈ {0.5, 1, 4} (one column's describe plan), per method: the worst
runaway chance per side (a bound beyond 1000× the column's largest |x|), the worst chance
a side clips more than the issue's limit, the mean rows clipped, and a proxy of the DP
mean's relative RMSE — E over both sides' laws, given no runaway, of (clamping bias/n)² +
2·(w/(ε_S·n))² with w the larger half-width about the centre (the count's noise left
out; it overstates the noise term about 2× against the measured runs, for both laws
alike) — all exact sums over the laws in floating point with the centre fixed at the
median. AboveThreshold at its last constants (ε₁ = 0.7·ε_s, target ⌈0.5/ε_S +
3.375/ε_s⌉); the exponential mechanism at targets ⌈0.5/ε_S + m/ε_s⌉ and decays μ, the
built one "em t2 mu.5" (m = 2, μ = 1/2). A study: nothing is asserted.
"""

from __future__ import annotations

import argparse
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dprect.core import aggregates
from dprect.core.step_exponential import step_law
from dprect.core.tail_bounds import candidates, tail_counts

EPSILONS = (0.5, 1.0, 4.0)
#: (name, target offset in units of 1/ε_b, μ per step)
EM_VARIANTS = (("em t2 mu.5", 2.0, 0.5), ("em t2 mu.25", 2.0, 0.25),
               ("em t2 mu.35", 2.0, 0.35), ("em t0 mu.5", 0.0, 0.5), ("em t4 mu.5", 4.0, 0.5))
RUNAWAY = 1000.0


#: AboveThreshold's split of the sides' ε (the search before this change): ε₁ for the
#: threshold noise ρ ~ DLap(1/ε₁), the rest for the step noises; its target's margin
AT_THRESHOLD_SHARE = 0.7
AT_MARGIN_FACTOR = 3.375


def _dlap_cdf(a: np.ndarray, epsilon: float) -> np.ndarray:
    """P(Z ≤ a) for Z ~ DLap(1/ε) at integer points a."""
    q = math.exp(-epsilon)
    a = np.asarray(a, dtype=np.float64)
    with np.errstate(over="ignore"):
        return np.where(a < 0, np.exp(epsilon * np.minimum(a, 0)) / (1 + q),
                        1 - np.exp(-epsilon * (np.maximum(a, 0) + 1)) / (1 + q))


def at_law(tails: np.ndarray, t: int, e1: float, e2: float) -> np.ndarray:
    """P(stop at k) for AboveThreshold: the first k with q_k + ν_k ≤ t + ρ (the last
    candidate takes the rest), summed over ρ (|ρ| ≤ 60/ε₁ + 60)."""
    span = int(60.0 / e1) + 60
    rho = np.arange(-span, span + 1)
    q1 = math.exp(-e1)
    p_rho = (1 - q1) / (1 + q1) * np.exp(-e1 * np.abs(rho))
    law = np.zeros(len(tails))
    for r, pr in zip(rho, p_rho, strict=True):
        stop = _dlap_cdf(t + r - tails, e2)
        go = np.cumprod(np.r_[1.0, 1.0 - stop[:-1]])
        law += pr * go * stop
    law[-1] += max(0.0, 1.0 - law.sum())
    return law


def side_terms(x: np.ndarray, cands: np.ndarray, side: str
               ) -> tuple[np.ndarray, np.ndarray]:
    """(rows clipped, clamping error of the sum) at each candidate."""
    tails = tail_counts(x, cands, side)  # type: ignore[arg-type]
    csum = np.r_[0.0, np.cumsum(x)]
    n = len(x)
    if side == "upper":
        idx = n - tails
        err = (csum[n] - csum[idx]) - tails * cands  # Σ_{x>U}(x − U) ≥ 0
    else:
        idx = tails
        err = tails * cands - csum[idx]  # Σ_{x<L}(L − x) ≥ 0
    return tails.astype(np.float64), err


def study(x: np.ndarray, eps: float) -> dict[str, tuple[float, float, float, float]]:
    x = np.sort(x[np.isfinite(x)])
    n, truth = len(x), float(np.mean(x))
    plan = aggregates.plan_describe(eps, 1)
    eb = plan.side_epsilon
    e1, e2 = AT_THRESHOLD_SHARE * eb, (1 - AT_THRESHOLD_SHARE) * eb
    at_target = math.ceil(0.5 / plan.sum_epsilon + AT_MARGIN_FACTOR / eb)
    limit = plan.clip_limit
    assert limit is not None
    centre = float(np.median(x))
    big = RUNAWAY * float(np.max(np.abs(x)))
    laws: dict[str, dict[str, tuple]] = {}
    for side in ("lower", "upper"):
        cands = candidates(centre, side)  # type: ignore[arg-type]
        rows, err = side_terms(x, cands, side)
        half = np.abs(cands - centre)
        far = np.abs(cands) > big
        laws.setdefault("at", {})[side] = (at_law(rows, at_target, e1, e2), rows, err,
                                           half, far)
        for name, off, mu in EM_VARIANTS:
            t = math.ceil(0.5 / plan.sum_epsilon + off / eb)
            law = step_law(rows, t, eb, len(rows), decay=Fraction(mu).limit_denominator())
            laws.setdefault(name, {})[side] = (law, rows, err, half, far)
    out = {}
    for name, sides in laws.items():
        (pl, rl, el, hl, fl), (pu, ru, eu, hu, fu) = sides["lower"], sides["upper"]
        runaway = max(float(pl[fl].sum()), float(pu[fu].sum()))
        # the RMSE proxy given no runaway (a runaway's width would swamp any average)
        pl, pu = np.where(fl, 0.0, pl), np.where(fu, 0.0, pu)
        pl, pu = pl / pl.sum(), pu / pu.sum()
        over = max(float(pl[rl > limit].sum()), float(pu[ru > limit].sum()))
        clipped = 0.5 * (float(pl @ rl) + float(pu @ ru))
        # E[bias²] with independent sides: bias = (e_lower − e_upper)/n
        b2 = (float(pu @ eu**2) + float(pl @ el**2) - 2 * float(pu @ eu) * float(pl @ el))
        kl, ku = pl > 1e-15, pu > 1e-15  # the laws' support, for the pairwise width
        w2 = float(pl[kl] @ np.maximum(hl[kl][:, None], hu[ku][None, :]) ** 2 @ pu[ku])
        mse = b2 / n**2 + 2 * w2 / (plan.sum_epsilon * n) ** 2
        out[name] = (runaway, over, clipped, math.sqrt(mse) / abs(truth))
    return out


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--quick", action="store_true", help="a few columns only")
    opts = args.parse_args(argv)
    import bounds as b
    real, missing = b.load_real(None)
    tables = [*real, b.heavy_tailed(100_000, 20140414)]
    if missing:
        print("missing:", ", ".join(missing))
    cols = [(t.name, c.name, np.asarray(c.values, dtype=np.float64))
            for t in tables for c in t.columns]
    if opts.quick:
        keep = {"sched_arr_time", "dep_delay", "price", "pareto", "outliers", "air_time"}
        cols = [c for c in cols if c[1] in keep]
    names = ["at", *[v[0] for v in EM_VARIANTS]]
    for eps in EPSILONS:
        print(f"\n## eps {eps}: per method [worst runaway/side, worst P(clip > limit), "
              f"RMSE ratio to AT: median, max, count ≤ 1.0]")
        rows = {name: [] for name in names}
        for tname, cname, x in cols:
            res = study(x, eps)
            for name in names:
                rows[name].append(res[name])
            print(f"{tname}/{cname}: " + "  ".join(
                f"{name}: ra {r[0]:.0e} ov {r[1]:.3f} clip {r[2]:.0f} rmse {r[3]:.3g}"
                for name, r in res.items()))
        base = np.array([r[3] for r in rows["at"]])
        for name in names:
            arr = np.array(rows[name])
            ratio = arr[:, 3] / base
            print(f"  {name:12s} runaway {arr[:, 0].max():.1e}  over-limit "
                  f"{arr[:, 1].max():.3f}  rmse/AT median {np.median(ratio):.3f} "
                  f"max {ratio.max():.3f}  ≤1: {(ratio <= 1.0).sum()}/{len(ratio)}")
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
