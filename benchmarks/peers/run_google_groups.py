"""Google's ``BoundedMean`` (python-dp, ``pydp.algorithms.laplacian``) per group, with NO
bounds given, so the library runs its own ApproxBounds on each group (``dtype="float"``,
``delta=0``: pure ε-DP, ε split by the library). Runs inside the ``pydp`` virtual
environment; called by ``benchmarks/describe_groups.py``, which writes the groups' values.

Reads a JSON manifest ``{"runs", "epsilon", "cells": [{"key", "npy"}]}`` and prints one JSON
object: key → the released means (null where the library raised: ApproxBounds found no
bin). Each cell's entries are added once and its summary merged into a fresh algorithm
per run (``serialize``/``merge``, the library's distributed path; every bit of noise is
drawn by ``result``, so each run is an independent release), as ``run_google.py`` does.
"""

from __future__ import annotations

import json
import sys

import numpy as np


def main() -> None:
    from pydp.algorithms.laplacian import BoundedMean

    with open(sys.argv[1]) as f:
        manifest = json.load(f)
    eps, runs = float(manifest["epsilon"]), int(manifest["runs"])
    out = {}
    for cell in manifest["cells"]:
        values = np.load(cell["npy"]).astype(np.float64).tolist()
        algo = BoundedMean(epsilon=1.0, delta=0.0, dtype="float")
        algo.add_entries(values)
        summary = algo.serialize()
        means = []
        for _ in range(runs):
            fresh = BoundedMean(epsilon=eps, delta=0.0, dtype="float")
            fresh.merge(summary)
            try:
                means.append(float(fresh.result()))
            except Exception:  # the library's error: no bounds found (a tiny group)
                means.append(None)
        out[cell["key"]] = means
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
