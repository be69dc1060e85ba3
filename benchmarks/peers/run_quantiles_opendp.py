"""OpenDP 0.16's ``make_private_quantile`` for the quantile benchmark (issue #41; driven by
``benchmarks/quantiles_peers.py`` inside the ``opendp`` virtual environment,
``make bench-peers-venvs``).

One quantile per call, as the library offers: m quantiles at a per-column ε are m calls at
ε/m each (basic composition — the same charge dprect's m draws make, so the comparison is
at equal total ε; OpenDP has no joint quantile mechanism), pure DP (``max_divergence``),
unknown n (symmetric distance). The candidates are what a user who does not know the
column would give: the scale-free public grid {0} ∪ {±10^(k/100): k = −400..1000}
(10⁻⁴ to 10¹⁰, 2.3% apart; 2,803 values), the same as ``run_opendp.py``'s. The noise scale
is calibrated against the measurement's own privacy map.

Usage: ``python run_quantiles_opendp.py MANIFEST OUT`` (JSON in, JSON out).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

_k = np.arange(-400, 1001) / 100.0
CANDIDATES = [float(c) for c in np.concatenate([-(10.0 ** _k)[::-1], [0.0], 10.0 ** _k])]


def main() -> None:
    manifest = json.loads(Path(sys.argv[1]).read_text())
    import opendp.prelude as dp
    dp.enable_features("contrib")
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance())

    def quantile(alpha: float, eps: float):  # the smallest scale whose map(1) ≤ ε
        scale = 2 * max(alpha, 1 - alpha) / eps
        for _ in range(60):
            m = dp.m.make_private_quantile(*space, dp.max_divergence(), CANDIDATES, alpha,
                                           scale)
            if m.map(1) <= eps:
                return m
            scale *= 1.0 + 1e-9
        raise RuntimeError("could not calibrate")

    qs, runs, eps = manifest["quantiles"], int(manifest["runs"]), float(manifest["epsilon"])
    meas = [quantile(q, eps / len(qs)) for q in qs]
    out = {}
    for col in manifest["columns"]:
        x = np.load(col["npy"]).astype(np.float64)
        got = dp.c.make_composition(meas * runs)(x)
        out[col["name"]] = [list(map(float, got[r * len(qs):(r + 1) * len(qs)]))
                            for r in range(runs)]
        print(f"opendp {col['name']} done", flush=True)
    Path(sys.argv[2]).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
