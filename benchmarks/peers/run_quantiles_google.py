"""Google's python-dp 1.1.5 ``Percentile`` for the quantile benchmark (issue #41; driven by
``benchmarks/quantiles_peers.py`` inside the ``pydp`` virtual environment,
``make bench-peers-venvs``).

One percentile per object, as the library offers: m quantiles at a per-column ε are m
objects at ε/m each (basic composition, the same total charge as dprect's). The library
needs public bounds: the range of the scale-free grid OpenDP gets, [−10¹⁰, 10¹⁰] (a user
who does not know the column), ``dtype="float"``.

Usage: ``python run_quantiles_google.py MANIFEST OUT`` (JSON in, JSON out).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

BOUND = 1e10


def main() -> None:
    manifest = json.loads(Path(sys.argv[1]).read_text())
    from pydp.algorithms.laplacian import Percentile
    qs, runs, eps = manifest["quantiles"], int(manifest["runs"]), float(manifest["epsilon"])
    out = {}
    for col in manifest["columns"]:
        x = np.load(col["npy"]).astype(np.float64).tolist()
        rows = []
        for _ in range(runs):
            rows.append([float(Percentile(epsilon=eps / len(qs), percentile=q,
                                          lower_bound=-BOUND, upper_bound=BOUND,
                                          dtype="float").quick_result(x)) for q in qs])
        out[col["name"]] = rows
        print(f"google {col['name']} done", flush=True)
    Path(sys.argv[2]).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
