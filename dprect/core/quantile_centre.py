"""Quantiles of small groups: a private centre, a base measure that decays away from it,
and a noisy count that flags the cells below the plan's ``rows_needed`` (issue #41,
point 5; proof in docs/privacy.md §11a, "Small groups").

With a uniform base measure over the decimal grid's M = 108,000,002 cells, the cells
outside the data outweigh a group of a few hundred rows (a p10 has bad = q·n there, so it
needs q·n ≳ (2/ε_each)·ln M rows): a p10 or p90 of such a group could land anywhere up to
±10³⁰⁰. This module gives each (group, column) three draws before its quantiles, all from
the cell statistics the quantiles already read:

1. **Centre** (ε_c). The grid's cells fall in B = 2·K + 1 public *blocks* in grid order —
   the K decades of each sign (a decade: the 9·10^(D−1) cells m·10^k, m in [10^(D−1),
   10^D), of one k) and one block for the two cells at zero (:func:`blocks`). The
   exponential mechanism for the median over the blocks: block b with probability
   ∝ exp(−ε_c·bad(b)/2), bad(b) = dist(n/2, [#{x in blocks < b}, #{x in blocks ≤ b}])
   (sensitivity 1, Lemma Q1's argument with whole blocks; B = 1,201 candidates, so it
   lands among the data's blocks from about (4/ε_c)·ln(B/β) rows). It is Lemma Q2's
   draw on the block grid with q = 1/2, drawn exactly by the same sampler
   (:func:`centre_pieces`).
2. **Count** (ε_n). n̂ = n + Z, Z two-sided geometric of scale 1/ε_n (exact,
   :meth:`~dprect.core.randomness.RandomSource.discrete_laplace`); only the flag
   n̂ < ``rows_needed`` is released (post-processing).
3. **Each quantile** draws cell i with probability ∝ μ_c(i)·exp(−ε_each·bad_q(i)/2),
   μ_c(i) = exp(−λ·min(d(i, c), L)) — a base measure that is a public function of the
   drawn centre, so the draw stays ε_each-DP (the exponential mechanism with any
   data-independent base measure; adaptive composition). d counts decades: |k(i) − k(c)|
   on c's sign, that plus ``SIGN_DECADES`` on the other sign, ``ZERO_DECADES`` between
   the zero block and any other (:func:`levels`); λ = ``DECAY`` per decade, capped at
   L = ``CAP_DECADES`` so that far from the centre the weight is a constant e^{−λL}
   (the rejection below stays bounded). The cells beyond L decades weigh M·e^{−λL} in
   all, about 2·10³ cells of the centre's own decade, where they weighed 10⁸.

**Exact draw** (:func:`draw_near`): repeat — draw i from the uniform-measure law (the
exact sampler of §2, ``interior_point.unimodal_sampler``, made once and reused), accept
with probability exp(−λ·min(d(i, c), L)) (:meth:`RandomSource.bernoulli_exp` on the
exact rational λ·level) — the accepted i has probability exactly ∝ μ_c(i)·exp(−ε_each·bad/2)
(rejection sampling), and at least one round in e^{λL} is accepted whatever the data.

Nothing here reads rows; the draws are the same on every engine for a seed (they read the
merged statistics only, in a fixed order: the centre, the count, then the quantiles).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np

from dprect.core.decimal_grid import DecimalGrid
from dprect.core.interior_point import Pieces, unimodal_sampler
from dprect.core.randomness import RandomSource

#: the base measure's decay per decade from the centre (nats), exact
DECAY = Fraction(3, 2)
#: the window: the cells within this many decades of the centre are the candidates
#: (so at least one rejection round in e^{DECAY·WINDOW_DECADES} = e^6 is accepted)
WINDOW_DECADES = 4
#: the zero block and any other block are this many decades apart
ZERO_DECADES = 2


def decades(grid: DecimalGrid) -> int:
    """K, the decades of each sign."""
    return grid.per_sign // grid.per_decade


def block_count(grid: DecimalGrid) -> int:
    """B = K + 1 magnitude blocks: zero's, then the decades."""
    return decades(grid) + 1


def blocks(grid: DecimalGrid, index: np.ndarray) -> np.ndarray:
    """Each cell's magnitude block: 0 for the two cells at zero, 1 + k for a cell of
    either sign in decade k (its magnitude index j // per_decade)."""
    i = np.asarray(index, dtype=np.int64)
    neg = (grid.per_sign - 1 - i) // grid.per_decade
    pos = (i - grid.zero - 1) // grid.per_decade
    return np.where(i < grid.per_sign, 1 + neg,
                    np.where(i <= grid.zero, 0, 1 + pos)).astype(np.int64)


def block_levels(grid: DecimalGrid, centre: int, block: np.ndarray) -> np.ndarray:
    """d(block, centre): the decades between each magnitude block and the centre block
    (module docstring, step 3): |b − c|, and ``ZERO_DECADES`` between zero's block and
    any other."""
    b = np.asarray(block, dtype=np.int64)
    d = np.where((b == 0) | (centre == 0), ZERO_DECADES, np.abs(b - centre))
    return np.where(b == centre, 0, d).astype(np.int64)


def levels(grid: DecimalGrid, centre: int, index: np.ndarray) -> np.ndarray:
    """d(i, c) for each cell index i."""
    return block_levels(grid, centre, blocks(grid, index))


def centre_pieces(grid: DecimalGrid, keys: np.ndarray, counts: np.ndarray, epsilon: float
                  ) -> Pieces:
    """The centre's law on the blocks (step 1) as pieces: the cells' rows summed per block,
    then the rank law of q = 1/2 with every row of a block counted as at its value
    (:func:`~dprect.core.quantiles.rank_pieces`; depths in half rows, drawn at the rate
    ε_c/4); ``epsilon`` (ε_c) sets only the float law ``Pieces.probabilities`` (tests and
    audits)."""
    from dprect.core.quantiles import rank_pieces

    b = blocks(grid, np.asarray(keys, dtype=np.int64))
    ub, inverse = np.unique(b, return_inverse=True)
    rows = np.zeros(len(ub), dtype=np.int64)
    np.add.at(rows, inverse, np.asarray(counts, dtype=np.int64))
    incl = np.cumsum(rows)
    return rank_pieces(ub, incl - rows, incl, incl, block_count(grid), Fraction(1, 2),
                       epsilon / 2)


def window(grid: DecimalGrid, centre: int) -> list[tuple[int, int]]:
    """The cells within ``WINDOW_DECADES`` of the centre block (level ≤ it), as sorted
    disjoint index ranges [start, stop) of the grid: a run of decades on each sign and
    zero's two cells."""
    inside = np.flatnonzero(block_levels(grid, centre, np.arange(block_count(grid)))
                            <= WINDOW_DECADES)
    spans: list[tuple[int, int]] = []
    for b in inside.tolist():
        if b == 0:
            spans.append((grid.per_sign, grid.zero + 1))
            continue
        neg_hi = grid.per_sign - (b - 1) * grid.per_decade  # decade b − 1, negative side
        spans.append((neg_hi - grid.per_decade, neg_hi))
        lo = grid.zero + 1 + (b - 1) * grid.per_decade
        spans.append((lo, lo + grid.per_decade))
    out: list[tuple[int, int]] = []
    for a, z in sorted(spans):
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], z)
        else:
            out.append((a, z))
    return out


def restrict(pieces: Pieces, ranges: list[tuple[int, int]]) -> tuple[Pieces, np.ndarray]:
    """The pieces cut to the cells of ``ranges`` (sorted, disjoint) and laid end to end
    (a unimodal depth stays unimodal on any ordered subset), with each range's offset in
    the compressed grid (to map a drawn point back)."""
    starts = pieces.starts.astype(np.int64)
    ends = starts + pieces.sizes.astype(np.int64)
    s_out, z_out, d_out = [], [], []
    offsets = np.zeros(len(ranges), dtype=np.int64)
    at = 0
    for r, (a, b) in enumerate(ranges):
        offsets[r] = at
        lo = int(np.searchsorted(ends, a, side="right"))
        hi = int(np.searchsorted(starts, b, side="left"))
        s = np.maximum(starts[lo:hi], a)
        e = np.minimum(ends[lo:hi], b)
        s_out.append(s - a + at)
        z_out.append(e - s)
        d_out.append(pieces.depths[lo:hi])
        at += b - a
    depths = np.concatenate(d_out)
    if depths.dtype != object:
        depths = depths.astype(np.int64)
    depths = depths - depths.min()
    out = Pieces(np.concatenate(s_out).astype(np.uint64),
                 np.concatenate(z_out).astype(np.uint64), depths, pieces.epsilon, at)
    return out, offsets


def draw_near(pieces: Pieces, rate: Fraction, grid: DecimalGrid, centre: int,
              rng: RandomSource) -> int:
    """One quantile's cell (step 3): the uniform-measure law restricted to the centre's
    :func:`window`, drawn exactly (``interior_point.unimodal_sampler``, made once), each
    draw accepted with probability exp(−DECAY·level) (module docstring)."""
    ranges = window(grid, centre)
    cut, offsets = restrict(pieces, ranges)
    sampler = unimodal_sampler(cut, rate)
    firsts = np.array([a for a, _ in ranges], dtype=np.int64)
    while True:
        y = sampler.sample(rng)
        r = int(np.searchsorted(offsets, y, side="right")) - 1
        i = int(firsts[r] + (y - offsets[r]))
        level = int(levels(grid, centre, np.array([i], dtype=np.int64))[0])
        if level == 0 or rng.bernoulli_exp(DECAY * level):
            return i


@lru_cache(maxsize=8)
def measure_mass(grid: DecimalGrid) -> float:
    """max over centres c of Σ_i μ_c(i) (in cells of weight 1): the effective size of the
    grid in the rank bound (docs/privacy.md §11a, Theorem Q″), in floating point."""
    sizes = np.full(block_count(grid), 2.0 * grid.per_decade)
    sizes[0] = 2.0
    best = 0.0
    all_blocks = np.arange(block_count(grid))
    for c in range(block_count(grid)):
        lv = block_levels(grid, c, all_blocks)
        inside = lv <= WINDOW_DECADES
        best = max(best, float((sizes[inside] * np.exp(-float(DECAY) * lv[inside])).sum()))
    return best


__all__ = ["DECAY", "WINDOW_DECADES", "ZERO_DECADES",
           "block_count", "block_levels", "blocks", "centre_pieces", "decades", "draw_near",
           "levels", "measure_mass", "restrict", "window"]
