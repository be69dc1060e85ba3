"""The quantile draws of one (group, column), with the per-cell work done once (issue #41;
the mechanism and its proof: :mod:`dprect.core.quantiles`, :mod:`dprect.core.quantile_centre`,
docs/privacy.md §11a).

The m quantiles of a cell are m exact draws from rank laws that share everything but q:
their pieces (each occupied cell, each gap; :func:`~dprect.core.quantile_centre.rank_frame`)
and, for a small group, the centre's window and its cut
(:func:`~dprect.core.quantile_centre.cut`). So the pieces are laid and cut ONCE a cell,
and each quantile only computes its depths b·bad_q on them — the same integers as its
own law (:func:`~dprect.core.quantiles.quantile_law`, then
:func:`~dprect.core.quantile_centre.restrict`): on the cut pieces the restricted depth
max(b·bad) − b·bad_i over the window equals the law's depth minus its minimum over the
window. Each draw is then the same exact sampler
(``interior_point.unimodal_sampler``) on the same pieces and rate, and each rejection
round's level is computed in Python integers
(:func:`~dprect.core.quantile_centre.level_of`) and tested with the same Bernoulli
(exp(−DECAY·level), :meth:`~dprect.core.randomness.RandomSource.bernoulli_exp_ratio`).

The samplers are made ``trusted`` (their O(pieces) checks skipped, the draws the same):
the pieces are built from the cell's :class:`~dprect.core.quantiles.QuantileStatistics`,
checked when made, on which every rank law's depth is unimodal by construction.

Hence for a seed the same random bits are read and the same cells released as by the
laws drawn one by one (:func:`~dprect.core.quantile_centre.draw_near` on each
``quantile_law``) — tests/core/test_quantile_draws.py holds the two draw for draw.
Nothing here reads rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from dprect.core.decimal_grid import DecimalGrid
from dprect.core.interior_point import Pieces, unimodal_sampler
from dprect.core.quantile_centre import (
    DECAY,
    WINDOW_DECADES,
    RankFrame,
    as_depths,
    cut,
    level_of,
    window,
)
from dprect.core.randomness import RandomSource

#: each level's acceptance exp(−DECAY·level) as the integers (a, b) of DECAY·level = a/b
ACCEPT = tuple(((DECAY * d).numerator, (DECAY * d).denominator)
               for d in range(WINDOW_DECADES + 1))


def whole_grid(frame: RankFrame, quantiles: Sequence[Fraction], rates: Sequence[Fraction],
               rng: RandomSource) -> list[int]:
    """Each quantile's cell under the uniform measure over the whole grid, in order: the
    exact sampler on the rank law of q_j (depths on the shared ``frame``) at rate c_j."""
    out = []
    for q, rate in zip(quantiles, rates, strict=True):
        pieces = Pieces(frame.starts, frame.sizes, as_depths(frame.weighted(q)),
                        2.0 * float(rate), frame.grid_size)
        out.append(unimodal_sampler(pieces, rate, trusted=True).sample(rng))
    return out


def near_centre(frame: RankFrame, quantiles: Sequence[Fraction], rates: Sequence[Fraction],
                grid: DecimalGrid, centre: int, sign: int, rng: RandomSource) -> list[int]:
    """Each quantile's cell under the base measure around the released ``centre`` and
    ``sign``, in order: the rank law cut to the window once, the exact sampler on it, each
    round accepted with probability exp(−DECAY·level) (rejection sampling:
    :func:`~dprect.core.quantile_centre.draw_near`'s draws)."""
    c = cut(frame.starts, frame.sizes, window(grid, centre, sign))
    out = []
    for q, rate in zip(quantiles, rates, strict=True):
        pieces = Pieces(c.starts, c.sizes, as_depths(frame.weighted(q, c.index)),
                        2.0 * float(rate), c.size)
        sampler = unimodal_sampler(pieces, rate, trusted=True)
        while True:
            i = c.cell(sampler.sample(rng))
            level = level_of(grid, centre, sign, i)
            if level == 0 or rng.bernoulli_exp_ratio(*ACCEPT[level]):
                out.append(i)
                break
    return out


__all__ = ["ACCEPT", "near_centre", "whole_grid"]
