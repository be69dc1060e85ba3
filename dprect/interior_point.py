"""The interior-point (IP) mechanism: the exponential mechanism on depth (design note §3).

Input: Δ grid indices v_1 … v_Δ of a grid {0, …, m−1}. Score of a grid point y:

    depth(y) = min(#{i : v_i ≤ y}, #{i : v_i ≥ y}).

Replacing one v_i changes every depth by at most 1, so sampling y with probability
∝ exp(ε·depth(y)/2) is ε-differentially private under replace-one neighbours (McSherry &
Talwar 2007, the exponential mechanism with a sensitivity-1 score).

**Guarantee.** ``interior_point`` is ε-DP w.r.t. replacing one of its Δ inputs.

**Failure.** Points above max v have depth 0 (weight 1 each, at most m of them), and the
⌈Δ/2⌉-th smallest value has depth ≥ ⌈Δ/2⌉, so

    P(p > max v) ≤ m·exp(−ε⌈Δ/2⌉/2)   and likewise   P(p < min v) ≤ m·exp(−ε⌈Δ/2⌉/2).

:func:`interior_point_size` returns the smallest Δ making this one-sided bound ≤ β.

**Sampling in O(Δ log Δ).** Depth is constant on O(Δ) pieces: each distinct value (a
singleton), each open gap between consecutive distinct values, and the two outer gaps
(depth 0). A piece's weight is (#grid points in it)·exp(ε·depth/2); all weights are kept
in log space, so Δ up to 10^6 and grids up to 2^64 neither overflow nor lose the small
pieces. A piece is chosen by inverse CDF after log-sum-exp, then a grid point uniformly
inside it with an exact integer draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dprect.errors import ParameterError
from dprect.randomness import RandomSource
from dprect.validation import check_epsilon, check_open_unit, check_positive_int

MAX_GRID_SIZE = 2**64


@dataclass(frozen=True)
class Pieces:
    """The exponential mechanism's distribution as constant-depth pieces.

    Piece i covers grid points ``starts[i] … starts[i] + sizes[i] − 1`` (uint64, sorted),
    each with depth ``depths[i]``; ``log_weights[i]`` = ln(sizes[i]) + ε·depths[i]/2.
    """

    starts: np.ndarray
    sizes: np.ndarray
    depths: np.ndarray
    log_weights: np.ndarray

    def probabilities(self) -> np.ndarray:
        """Probability of each piece (sums to 1)."""
        shifted = self.log_weights - self.log_weights.max()
        weights = np.exp(shifted)
        return weights / weights.sum()

    def point_probability(self, y: int) -> float:
        """Probability of grid point y."""
        i = int(np.searchsorted(self.starts, np.uint64(y), side="right")) - 1
        if i < 0 or y >= int(self.starts[i]) + int(self.sizes[i]):
            raise ValueError(f"grid point {y} is outside the grid")
        return float(self.probabilities()[i]) / int(self.sizes[i])


def _check_grid_size(grid_size: object) -> int:
    if isinstance(grid_size, bool) or not isinstance(grid_size, int | np.integer):
        raise ParameterError(f"grid_size must be an integer, got {grid_size!r}")
    if not 2 <= int(grid_size) <= MAX_GRID_SIZE:
        raise ParameterError(f"grid_size must be between 2 and 2**64, got {grid_size}")
    return int(grid_size)


def _as_indices(values: object, grid_size: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError("values must be a non-empty one-dimensional array of grid indices")
    if arr.dtype.kind == "u":
        out = arr.astype(np.uint64)
    elif arr.dtype.kind == "i":
        if (arr < 0).any():
            raise ParameterError("values must be grid indices >= 0")
        out = arr.astype(np.uint64)
    elif arr.dtype.kind == "O":
        ints = [int(v) for v in arr]
        if min(ints) < 0:
            raise ParameterError("values must be grid indices >= 0")
        if max(ints) >= grid_size:
            raise ParameterError(f"values must be grid indices < grid_size={grid_size}")
        out = np.array(ints, dtype=np.uint64)
    else:
        raise ParameterError(f"values must be integer grid indices, got dtype {arr.dtype}")
    if grid_size < MAX_GRID_SIZE and int(out.max()) >= grid_size:
        raise ParameterError(f"values must be grid indices < grid_size={grid_size}")
    return out


def interior_point_pieces(values: object, *, epsilon: float, grid_size: int) -> Pieces:
    """The exact piece decomposition of the mechanism's output distribution."""
    epsilon = check_epsilon(epsilon)
    m = _check_grid_size(grid_size)
    v = _as_indices(values, m)
    uniq, counts = np.unique(v, return_counts=True)
    total = int(counts.sum())
    below_incl = np.cumsum(counts)  # #{v <= u_i}
    above_incl = total - below_incl + counts  # #{v >= u_i}
    single_depth = np.minimum(below_incl, above_incl)
    gap_depth = np.minimum(below_incl[:-1], total - below_incl[:-1])
    gap_sizes = uniq[1:] - uniq[:-1] - np.uint64(1)  # exact in uint64
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
    log_sizes = np.log(sizes.astype(np.float64))
    return Pieces(starts, sizes, depths, log_sizes + epsilon * depths.astype(np.float64) / 2)


def interior_point(
    values: object, *, epsilon: float, grid_size: int, rng: RandomSource
) -> int:
    """An ε-DP interior point of ``values`` (grid indices) on the grid {0, …, grid_size−1}.

    Returns a grid index. ε-DP under replacing one value; one-sided failure probability
    ≤ grid_size·exp(−ε⌈Δ/2⌉/2) (see the module docstring).
    """
    pieces = interior_point_pieces(values, epsilon=epsilon, grid_size=grid_size)
    lw = pieces.log_weights
    cdf = np.cumsum(np.exp(lw - lw.max()))
    target = rng.uniform() * cdf[-1]
    i = int(np.searchsorted(cdf, target, side="right"))
    i = min(i, len(pieces.sizes) - 1)
    return int(pieces.starts[i]) + rng.randbelow(int(pieces.sizes[i]))


def interior_point_failure_bound(epsilon: float, size: int, grid_size: int) -> float:
    """One-sided failure bound m·exp(−ε⌈Δ/2⌉/2) of the IP on Δ = ``size`` inputs."""
    epsilon = check_epsilon(epsilon)
    size = check_positive_int(size, "size")
    m = _check_grid_size(grid_size)
    return min(1.0, math.exp(math.log(m) - epsilon * math.ceil(size / 2) / 2))


def interior_point_size(epsilon: float, beta: float, grid_size: int) -> int:
    """The smallest Δ with m·exp(−ε⌈Δ/2⌉/2) ≤ β (design note §3): about (4/ε)·ln(m/β).

    Since only ⌈Δ/2⌉ matters the answer is odd: Δ = 2h − 1 with h = ⌈2·ln(m/β)/ε⌉.
    """
    epsilon = check_epsilon(epsilon)
    beta = check_open_unit(beta, "beta")
    m = _check_grid_size(grid_size)
    x = 2.0 * (math.log(m) - math.log(beta)) / epsilon
    h = max(1, math.ceil(x * (1.0 + 1e-12)))  # rounding can only make Δ larger (safer)
    while interior_point_failure_bound(epsilon, 2 * h - 1, m) > beta:
        h += 1
    return 2 * h - 1
