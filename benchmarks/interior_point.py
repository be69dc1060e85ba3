"""Time per call of the interior point (IP), exact sampler against the old float sampler.

    python benchmarks/interior_point.py [--repeat 5] [--sizes 101,1000,10000,100000,1000000]

For Δ in --sizes and grids 2^32 and 2^64, draws Δ grid indices (public synthetic data:
uniform on the grid) and ε = 4·ln(m/β)/Δ with β = 1e-6 (the ε at which the planner would
choose this Δ), then times, in the same run and on the same input:

* ``ref``  — ``np.unique(values, return_counts=True)``, which every IP call does anyway;
* ``old``  — the float sampler dprect used before (a copy is kept below as the "before"
  reference: log weights, a 53-bit uniform, inverse CDF; not exact for pieces of
  probability below ~2^-53);
* ``new``  — :func:`dprect.core.interior_point`, the exact sampler.

Prints milliseconds per call (best of --repeat) and the ratios new/ref, old/ref, new/old.
Nothing is asserted: this is a measurement.
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np
from evidence_common import best_of

from dprect import RandomSource, interior_point


# -- the "before" reference: dprect's float sampler up to this change -------------------
def old_interior_point(values: np.ndarray, *, epsilon: float, grid_size: int,
                       rng: RandomSource) -> int:
    """The old IP: pieces by concatenation + argsort, log weights, float inverse CDF."""
    m = grid_size
    v = np.asarray(values).astype(np.uint64)
    uniq, counts = np.unique(v, return_counts=True)
    total = int(counts.sum())
    below_incl = np.cumsum(counts)
    above_incl = total - below_incl + counts
    single_depth = np.minimum(below_incl, above_incl)
    gap_depth = np.minimum(below_incl[:-1], total - below_incl[:-1])
    gap_sizes = uniq[1:] - uniq[:-1] - np.uint64(1)
    has_gap = gap_sizes > 0
    lo, hi = int(uniq[0]), int(uniq[-1])
    outer_starts = [s for s, n in ((0, lo), (hi + 1, m - 1 - hi)) if n > 0]
    outer_sizes = [n for n in (lo, m - 1 - hi) if n > 0]
    starts = np.concatenate([
        uniq, (uniq[:-1] + np.uint64(1))[has_gap], np.asarray(outer_starts, dtype=np.uint64)
    ])
    sizes = np.concatenate([
        np.ones(len(uniq), dtype=np.uint64), gap_sizes[has_gap],
        np.asarray(outer_sizes, dtype=np.uint64),
    ])
    depths = np.concatenate([
        single_depth, gap_depth[has_gap], np.zeros(len(outer_sizes), dtype=np.int64)
    ]).astype(np.int64)
    order = np.argsort(starts, kind="stable")
    starts, sizes, depths = starts[order], sizes[order], depths[order]
    lw = np.log(sizes.astype(np.float64)) + epsilon * depths.astype(np.float64) / 2
    cdf = np.cumsum(np.exp(lw - lw.max()))
    target = rng.uniform() * cdf[-1]
    i = min(int(np.searchsorted(cdf, target, side="right")), len(sizes) - 1)
    return int(starts[i]) + rng.randbelow(int(sizes[i]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="101,1000,10000,100000,1000000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    warnings.simplefilter("ignore")  # seeded: a reproducible benchmark, nothing released
    rng = RandomSource(seed=1)
    gen = np.random.default_rng(0)
    interior_point([0, 1], epsilon=1.0, grid_size=2, rng=rng)  # warm the constant caches
    print(f"{'grid':<6}{'delta':>9}{'ref ms':>10}{'old ms':>10}{'new ms':>10}"
          f"{'new/ref':>9}{'old/ref':>9}{'new/old':>9}")
    for grid_name, m in (("2^32", 2**32), ("2^64", 2**64)):
        for size in sizes:
            values = gen.integers(0, m - 1, size=size, dtype=np.uint64, endpoint=True)
            eps = 4 * math.log(m / 1e-6) / size
            ref = best_of(args.repeat, lambda v=values: np.unique(v, return_counts=True))
            old = best_of(args.repeat, lambda v=values, e=eps, m=m: old_interior_point(
                v, epsilon=e, grid_size=m, rng=rng))
            new = best_of(args.repeat, lambda v=values, e=eps, m=m: interior_point(
                v, epsilon=e, grid_size=m, rng=rng))
            print(f"{grid_name:<6}{size:>9}{ref * 1e3:>10.3f}{old * 1e3:>10.3f}"
                  f"{new * 1e3:>10.3f}{new / ref:>9.1f}{old / ref:>9.1f}{new / old:>9.2f}")


if __name__ == "__main__":
    main()
