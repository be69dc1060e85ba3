"""A design study for issue #23's last open point: the side search as one monotone
exponential mechanism instead of AboveThreshold (nothing here is built into dprect).

    python benchmarks/search_em_study.py [--quick]

**Why.** AboveThreshold (docs/privacy.md §11) splits a side's ε_b into a threshold noise
(ε₁) and step noises (ε₂). A side runs away past its data only through ρ's left tail and
clips too much only through ν's, so at the clipping check's early-stop chance its runaway
chance per side stays near 10⁻⁵ (``benchmarks/runaway_tradeoff.py``; results.md §5.1),
about 0.2 runaways per evidence run of 21,000 sides. Group privacy allows far less
(≈ e^{−(L+1)·ε_b}): a mechanism whose ONE noise serves both tails.

**The candidate mechanism.** Given the centre (public after its draw) and the side's
candidates U_0, U_1, … (the same public grid), draw step k with probability

    P(k) ∝ exp(−ε_b·max(q_k − t, 0) − μ·k)

(q_k the tail count at U_k, t a target in rows, μ > 0 a public decay per step). Adding a
row raises some q_k by one and lowers none, so every exponent moves by 0 or −ε_b in the
same direction (a *monotone* utility of sensitivity 1): the draw is ε_b-DP with the whole
ε_b on one noise (McSherry & Talwar 2007, the monotone case; the candidates are finite).
Beyond the first step k_t whose tail is ≤ t the weights fall by e^{−μ} a step whatever
the data, so a bound K steps past the data (K ≈ 93 for 1000× on the evidence's worst
column) has chance at most e^{−μ·K}/(1 − e^{−μ})·(normaliser share) — 10⁻⁸ at μ = 0.2 —
while a step whose tail is L weighs e^{−ε_b·(L − t)} times its prior: the two tails no
longer share ε_b. The price is the prior's pull inward (μ/ε_b rows a step) and a
geometric spread outward past k_t (mean ≈ 1/μ steps).

**What this prints.** For the evidence's columns (the real tables + heavy-tailed
synthetic ones) and ε ∈ {0.5, 1, 4} (one column's describe plan), per method: the
runaway chance per side, the chance a side clips more than the issue's limit, the mean
rows clipped, and a proxy of the DP mean's relative RMSE — E over both sides' laws of
(clamping bias/n)² + 2·(w/(ε_S·n))² with w the larger half-width about the centre (the
count's noise left out) — all exact sums over the laws in floating point, with the centre
fixed at the median. AboveThreshold's law is the current plan's; the EM gets the same
ε_b = ε₁ + ε₂.
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
EM_VARIANTS = (("em t0 mu.25", 0.0, 0.25), ("em t2 mu.35", 2.0, 0.35),
               ("em t0 mu.35", 0.0, 0.35), ("em t2 mu.5", 2.0, 0.5),
               ("em t4 mu.5", 4.0, 0.5))
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
