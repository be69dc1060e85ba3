"""OpenDP 0.16 (the framework API, ``opendp.prelude``, feature ``contrib``): bounds as two
private quantiles, then a clamped DP sum and a DP count. Runs inside the ``opendp``
virtual environment (``make bench-peers-venvs``); see ``benchmarks/peers_real.py``.

OpenDP has no automatic bounds; its documented way to a data-dependent range is private
quantiles. Per column and run, over vectors of non-NaN floats with the symmetric distance
(unknown n), pure DP (``max_divergence``):

* bounds (ε/2): ``make_private_quantile(..., candidates, α, scale)`` at α and at 1 − α,
  ε/4 each, for α = 0.001 (peer ``opendp-q0.001``) and α = 0.01 (``opendp-q0.01``). The
  candidates are public and scale-free, what a user who does not know the column would
  take: {0} ∪ {±10^(k/100): k = −400..1000} (10⁻⁴ to 10¹⁰, 2.3% apart; 2,803 values).
  Crossed bounds are swapped.
* mean (ε/2): ``make_clamp(bounds) >> then_sum() >> then_laplace(s)`` at ε/4 and
  ``make_count >> then_laplace(s)`` at ε/4; mean = sum / max(1, count) — the split
  OpenDP's own ``dp.mean`` (Polars API: a DP sum over a DP length, half each) uses.
* sum (ε/2, the alternative query): the same clamped sum at ε/2.

Every noise scale is the sensitivity the transformation's own map reports divided by the
ε share, checked against the measurement's map. The data are passed as numpy arrays, and
each (column, ε) releases all its runs through one ``make_composition`` call per stage
(the quantiles, then the aggregates with each run's bounds), so the data cross into the
library twice per cell; the runs are independent releases all the same.
"""

from __future__ import annotations

import importlib.metadata

import numpy as np
from peer_common import (
    Clock,
    append,
    cells,
    done_cells,
    key,
    load_manifest,
    parse_args,
    run_record,
)

ALPHAS = (0.001, 0.01)
_k = np.arange(-400, 1001) / 100.0
CANDIDATES = [float(c) for c in np.concatenate([-(10.0 ** _k)[::-1], [0.0], 10.0 ** _k])]


def calibrated(make, sensitivity: float, epsilon: float):
    """``make(scale)`` with the smallest scale sensitivity/ε·(1 + tiny) whose privacy map
    at d_in = 1 is at most ε."""
    scale = sensitivity / epsilon
    for _ in range(60):
        m = make(scale)
        if m.map(1) <= epsilon:
            return m
        scale *= 1.0 + 1e-9
    raise RuntimeError("could not calibrate a noise scale")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    import opendp.prelude as dp
    dp.enable_features("contrib")
    version = importlib.metadata.version("opendp")
    manifest = load_manifest(args.manifest)
    done = done_cells(args.out)
    runs = int(manifest["runs"])
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance())
    count = dp.t.make_count(*space)

    def quantile(alpha: float, eps: float):
        # the score's sensitivity with unknown n is max(α, 1 − α); the map checks it
        return calibrated(lambda s: dp.m.make_private_quantile(
            *space, dp.max_divergence(), CANDIDATES, alpha, s), 2 * max(alpha, 1 - alpha), eps)

    def clamped_sum(lower: float, upper: float, eps: float):
        t = dp.t.make_clamp(*space, bounds=(lower, upper)) >> dp.t.then_sum()
        return calibrated(lambda s: t >> dp.m.then_laplace(s), float(t.map(1)), eps)

    for cell in cells(manifest):
        for alpha in ALPHAS:
            peer = f"opendp-q{alpha:g}"
            if key(peer, cell.table, cell.column, cell.epsilon) in done:
                continue
            clock = Clock()
            x = np.load(cell.npy).astype(np.float64)
            eps = cell.epsilon
            qs = dp.c.make_composition([quantile(alpha, eps / 4),
                                        quantile(1 - alpha, eps / 4)] * runs)(x)
            pairs = [(min(lo, hi), max(lo, hi)) for lo, hi in zip(qs[0::2], qs[1::2], strict=True)]
            aggregates = []
            for lo, hi in pairs:
                aggregates += [clamped_sum(lo, hi, eps / 4), clamped_sum(lo, hi, eps / 2)]
            c = calibrated(lambda s: count >> dp.m.then_laplace(s), float(count.map(1)),
                           eps / 4)
            got = dp.c.make_composition(aggregates + [c] * runs)(x)
            out = []
            for i, (lo, hi) in enumerate(pairs):
                s_mean, s_sum = got[2 * i], got[2 * i + 1]
                n = got[2 * runs + i]
                out.append(run_record(s_mean / max(1, n), s_sum, lo, hi))
            append(args.out, peer, "opendp", version, cell, out,
                   clock.seconds())
            print(f"{peer} {cell.table}/{cell.column} ε={eps:g} done", flush=True)


if __name__ == "__main__":
    main()
