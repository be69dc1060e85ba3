"""An independent re-draw of a describe run for tests (issue #23): the documented draw
order (docs/privacy.md §11, "Draw order") — one stream per group, seeded by the run's
source in the group order; in a group's stream its counts' noises first (columns in
order), the split of each cell picked by its released count, the seed of a second stream
if a cell got a smaller split, its own centres, then per cell of the plan's own split the
lower side, the upper side and the sum noise; then, per column, the anchor (the lower
median of those cells' released means, else of every own centre; in a column with neither,
when the released counts of its cells add up to the plan's ``pool_rows()``, ONE centre
drawn from the run's source on the union of those cells' rows, and the cells take the
plan's pooled split) and each group's cells of smaller splits from its second stream —
with the sorted-array functions of
:mod:`dprect.core.tail_bounds` and the row-by-row truncated sum
(:func:`centred_integer_sum`), not the statistics route. An engine
whose order or truncation differs from the documented one disagrees with it."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dprect.core import tail_bounds
from dprect.core.aggregates import (
    SUM_FRACTION_BITS,
    Cell,
    DescribePlan,
    choose_pivot,
)
from dprect.core.describe_stats import (
    PACKED_BITS,
    BinStatistics,
    CellCuts,
    CellGrid,
    CellStatistics,
    joint_cuts,
    joint_statistics_from_bins,
    truncated_value,
    unpack,
)
from dprect.core.domains import FloatBins
from dprect.core.interior_point import Pieces, sample_unimodal
from dprect.core.intervals import query_intervals
from dprect.core.randomness import RandomSource
from dprect.core.step_exponential import draw_step
from dprect.core.tail_bounds import (
    SEARCH_BITS,
    CandidateStream,
    Side,
    candidates,
    centre_value,
    tail_counts,
)

#: the reference's own split of a centre's rate between its two draws (docs/privacy.md
#: §11, Lemma D2: ε₁ = ε_c/5 to the sign class, ε₂ = 4ε_c/5 to the magnitude), written
#: here again, not read from the product: a wrong ``tail_bounds.SIGN_SHARE`` disagrees
REFERENCE_SIGN_SHARE = Fraction(1, 5)
_HALF = 1 << (11 + tail_bounds.CENTRE_BITS)  # +0.0's bin: the magnitudes' grid


def magnitude_pieces(values: np.ndarray) -> Any:
    """The magnitude's law (the median of |x|) on the non-negative half of the centre
    grid, from the rows themselves (|x| encoded, not the signed histogram folded)."""
    grid = FloatBins(tail_bounds.CENTRE_BITS)
    keys, counts = np.unique(grid.encode(np.abs(np.asarray(values, dtype=np.float64)))
                             - _HALF, return_counts=True)
    return tail_bounds.centre_pieces_from_counts(keys, counts, grid_size=_HALF)


def sign_weights(values: np.ndarray, rate: Fraction) -> tuple[float, float]:
    """P(sign class −), P(+) of a centre at ``rate`` = ε_c/2: ∝ exp(ε₁/2·rows of the
    class), − the rows x < 0 (floats, for tests)."""
    x = np.asarray(values, dtype=np.float64)
    neg = int(np.count_nonzero(x < 0))
    d = float(rate * REFERENCE_SIGN_SHARE) * (len(x) - 2 * neg)  # log P(+)/P(−)
    p_neg = 1.0 / (1.0 + np.exp(d)) if d > -700 else 1.0
    return p_neg, 1.0 - p_neg


def draw_centre(values: np.ndarray, rate: Fraction, rng: RandomSource) -> float:
    """The private centre of a cell's ``values`` at ``rate`` = ε_c/2 (exact): the sign
    class, a two-point law of depths (#{x < 0}, #{x ≥ 0}) at rate ε₁/2, then the
    magnitude's bin ∝ exp(ε₂/2·depth) (:func:`magnitude_pieces`); c = ±m — what the
    product draws from the centre grid's histogram folded
    (``tail_bounds.draw_centre_from_counts``)."""
    x = np.asarray(values, dtype=np.float64)
    neg = int(np.count_nonzero(x < 0))
    sign_rate = rate * REFERENCE_SIGN_SHARE
    classes = Pieces(np.array([0, 1], dtype=np.uint64), np.ones(2, dtype=np.uint64),
                     np.array([neg, len(x) - neg], dtype=np.int64), 1.0, 2)
    positive = sample_unimodal(classes, sign_rate, rng)
    m = centre_value(_HALF + sample_unimodal(magnitude_pieces(x), rate - sign_rate, rng))
    return (m if positive else -m) + 0.0


def exact_step(lower: float, upper: float, pivot: float, sensitivity: int) -> Fraction:
    """γ = w/k exactly, w = max(U − p, p − L) in rationals (so |clamp(x) − p| ≤ k·γ holds
    without rounding). Moved here, with :func:`integer_sum`, from dprect/core/aggregates.py,
    whose release computes both on integers (``_sum_and_step``)."""
    lo, hi, p = Fraction(lower), Fraction(upper), Fraction(pivot)
    return max(hi - p, p - lo, Fraction(0)) / int(sensitivity)


def integer_sum(centred: Fraction, step: Fraction) -> int:
    """S = ⌊T/γ + 1/2⌋ (0 when γ = 0). ⌊· + 1/2⌋ is non-decreasing and commutes with
    adding an integer, so if a row moves T by at most k·γ, S moves by at most k."""
    if step <= 0:
        return 0
    q = centred / step + Fraction(1, 2)
    return q.numerator // q.denominator


def centred_integer_sum(values: np.ndarray, lower: float, upper: float, pivot: float,
                        sensitivity: int = 1 << SUM_FRACTION_BITS) -> int:
    """S = ⌊Σ (clamp(x̃, L, U) − p)/γ + 1/2⌋ computed row by row in rationals (x̃: x
    truncated to 30 significant bits, :func:`~dprect.core.describe_stats.truncated_value`;
    γ = :func:`exact_step`): the direct reference the statistics'
    route (:func:`~dprect.core.describe_stats.centred_sum_at`) equals. Slow: for tests."""
    x = truncated_value(np.asarray(values, dtype=np.float64))
    if not len(x) or upper < lower:
        return 0
    clamped = np.clip(x, lower, upper)  # exact: returns one of the floats
    p = Fraction(pivot)
    total = sum((Fraction(float(v)) - p for v in clamped), Fraction(0))
    return integer_sum(total, exact_step(lower, upper, pivot, sensitivity))


def _float(column: Any) -> np.ndarray:
    out = pc.fill_null(pc.cast(column, pa.float64(), safe=False), float("nan"))
    return np.asarray(out.to_numpy(zero_copy_only=False), dtype=np.float64)


def reference_describe(plan: DescribePlan, table: pa.Table, columns: Sequence[str],
                       group_by: str | None, groups: Sequence[Any] | None,
                       rng: RandomSource) -> list[list[Cell]]:
    """``cells[g][j]`` of a describe run of ``table`` drawn the documented way."""
    if group_by is None:
        member = [np.ones(table.num_rows, dtype=bool)]
    else:
        g = np.array(table.column(group_by).to_pylist(), dtype=object)
        member = [g == v for v in (groups or [])]
    data = []
    for m in member:
        row = []
        for c in columns:
            x = _float(table.column(c))[m]
            row.append(np.sort(x[np.isfinite(x)]))
        data.append(row)
    streams = [RandomSource.stream(s) for s in rng.stream_seeds(len(data))]
    tiers = plan.tiers
    # round one: per group its counts, its second stream's seed (if a cell got a smaller
    # split), its own centres, then the cells of the plan's own split
    counts, picks, centres, resume = [], [], [], []
    for row, r in zip(data, streams, strict=True):
        n = [None if plan.count_scale is None else len(x) + r.discrete_laplace(
            plan.count_scale) for x in row]
        k = [_tier(plan, v) for v in n]
        resume.append(r.randbits(128) if any(k) else None)
        centres.append([None if tiers[i].anchored else draw_centre(x, tiers[i].centre_rate, r)
                        for x, i in zip(row, k, strict=True)])
        counts.append(n)
        picks.append(k)
    out: list[list[Any]] = []
    means: list[list[Any]] = []
    for row, crow, nrow, krow, r in zip(data, centres, counts, picks, streams, strict=True):
        done = [_cell(x, c, tiers[0], n, plan, r) if k == 0 else (None, None)
                for x, c, n, k in zip(row, crow, nrow, krow, strict=True)]
        out.append([c for c, _ in done])
        means.append([m for _, m in done])
    # the anchors: per column the lower median of the own split's released means (its
    # centres without a sum), else of every own centre, else 0
    anchors = []
    for j in range(len(columns)):
        first = sorted((c if m is None else m) for crow, mrow, krow in
                       zip(centres, means, picks, strict=True)
                       if (c := crow[j]) is not None and krow[j] == 0 for m in [mrow[j]])
        pool = first or sorted(c for crow in centres if (c := crow[j]) is not None)
        last = len(tiers) - 1
        members = [g for g in range(len(data)) if picks[g][j] == last and last]
        rows = sum(max(counts[g][j], 0) for g in members)
        if not pool and members and plan.pooled is not None and rows >= plan.pool_rows():
            union = np.sort(np.concatenate([data[g][j] for g in members]))
            anchors.append((draw_centre(union, plan.pooled.centre_rate, rng), True))
        else:
            anchors.append((pool[(len(pool) - 1) // 2] if pool else 0.0, False))
    # round two: each such group's cells of smaller splits from its second stream
    for g, row in enumerate(data):
        if resume[g] is None and not any(picks[g]):
            continue
        r2 = RandomSource.stream(resume[g])
        for j, x in enumerate(row):
            if picks[g][j]:
                own, (a, pooled) = centres[g][j], anchors[j]
                c = a if pooled or own is None or abs(own) < abs(a) * 2.0 ** -6 else own
                tier = plan.pooled if pooled else tiers[picks[g][j]]
                out[g][j] = _cell(x, c, tier, counts[g][j], plan, r2)[0]
    return out


def _tier(plan: DescribePlan, noisy: int | None) -> int:
    if noisy is None:
        return 0
    return next(i for i, t in enumerate(plan.tiers)
                if t.min_count is None or noisy >= t.min_count)


def _cell(x: np.ndarray, c: float, tier: Any, noisy_n: int | None, plan: DescribePlan,
          rng: RandomSource) -> tuple[Cell, float | None]:
    lo, hi = (_side(x, c, side, tier, rng) for side in ("lower", "upper"))
    if not plan.statistics:
        return Cell(lo, hi), None
    assert noisy_n is not None
    k = tier.sum_sensitivity
    if tier.sum_scale is None:  # count only: no sum noise
        n_out = float(max(noisy_n, 0))
        return Cell(lo, hi, n_out, intervals=query_intervals(
            ("count",), plan.interval_level, plan.count_epsilon, 0.0, k, lo, hi, c, 0.0,
            noisy_n, None, n_out, None, None)), None
    p = choose_pivot(lo, c, hi, plan.count_epsilon, tier.sum_epsilon)
    noisy_s = centred_integer_sum(x, lo, hi, p, k) + rng.discrete_laplace(tier.sum_scale)
    gamma = float(max(Fraction(hi) - Fraction(p), Fraction(p) - Fraction(lo)) / k)
    count = max(noisy_n, 0)
    mean = min(max(p + gamma * noisy_s / max(1, noisy_n), lo), hi)
    want = set(plan.statistics)
    total = p * count + gamma * noisy_s
    # the intervals: post-processing of the released values and ñ, S̃ (privacy.md §15), at
    # the cell's split (a public function of its released count)
    spans = query_intervals(plan.statistics, plan.interval_level, plan.count_epsilon,
                            tier.sum_epsilon, k, lo, hi, p, gamma, noisy_n, noisy_s,
                            float(count), total, mean)
    return Cell(lo, hi, float(count) if "count" in want else None,
                total if "sum" in want else None,
                mean if "mean" in want else None, spans), mean


def _side(x: np.ndarray, centre: float, side: str, tier: Any, rng: RandomSource) -> float:
    """One side's bound from the whole candidate array (every ``tier.stride``-th) and its
    tail counts by bisection (not the statistics' lazy stream and interval sums the
    engines read)."""
    cands = candidates(centre, side)  # type: ignore[arg-type]
    s = tier.stride
    k = draw_step(tail_counts(x, cands, side)[::s], _Every(CandidateStream(centre, side), s),  # type: ignore[arg-type]
                  tier.target, tier.side_rate, rng)
    return float(cands[k * s])


class _Every:
    def __init__(self, stream: CandidateStream, s: int) -> None:
        self.stream, self.s = stream, s

    def has(self, k: int) -> bool:
        return self.stream.has(k * self.s)


def centre_outside(x: np.ndarray, centre_epsilon: float) -> float:
    """P(the centre at ``centre_epsilon`` misses x's magnitudes — |c| outside the bins of
    the smallest and largest |x| — or takes a sign class no row of x has): the two draws
    are independent, so 1 − (1 − P(sign))·(1 − P(magnitude)) (floats)."""
    x = np.asarray(x, dtype=np.float64)
    p_neg, p_pos = sign_weights(x, Fraction(centre_epsilon) / 2)
    empty = (p_neg if not (x < 0).any() else 0.0) + (p_pos if (x < 0).all() else 0.0)
    a = np.abs(x)
    grid = FloatBins(tail_bounds.CENTRE_BITS)
    lo, hi = grid.index_of(float(a.min())) - _HALF, grid.index_of(float(a.max())) - _HALF
    pieces = magnitude_pieces(x)
    pieces = Pieces(pieces.starts, pieces.sizes, pieces.depths,
                    float(Fraction(centre_epsilon) * (1 - REFERENCE_SIGN_SHARE)),
                    pieces.grid_size)
    inside = sum(float(pr) for pr, st, sz in zip(pieces.probabilities(), pieces.starts,
                                                 pieces.sizes, strict=True)
                 if lo <= int(st) and int(st) + int(sz) - 1 <= hi)
    return 1.0 - (1.0 - empty) * inside


# -- a cell's tails from its statistics, interval by interval (docs: describe_stats' notes, (b))
def interval_counts(stats: CellStatistics, grid: CellGrid) -> np.ndarray:
    """Rows per interval −nL … nU (index i + nL). Moved here, with :func:`side_tails` and
    :func:`edges_hold`, from dprect/core/describe_stats.py, which reads the tails from the
    statistics alone (``data_tails``)."""
    interval, _ = unpack(stats.keys)
    out = np.zeros(len(grid.lower) + len(grid.upper) + 1, dtype=np.int64)
    np.add.at(out, interval + grid.below, stats.counts)
    return out


def side_tails(counts: np.ndarray, grid: CellGrid, side: Side) -> np.ndarray:
    """The tail count at every candidate of ``side``: #{x < L_k} = #{i ≤ −k − 1} or
    #{x > U_k} = #{i ≥ k + 1} (``counts`` from :func:`interval_counts`)."""
    nl = grid.below
    if side == "lower":  # k = 0 … nL − 1: the intervals −nL … −k − 1
        return np.cumsum(counts[:nl])[::-1].astype(np.int64)
    return np.cumsum(counts[nl + 1:][::-1])[::-1].astype(np.int64)


def edges_hold(grid: CellGrid) -> bool:
    """Whether every lower candidate is the smallest float of its ``FloatBins(SEARCH_BITS)``
    bin and every upper one the largest (the sum's exactness rests on it; a public fact
    about ``tail_bounds.candidates``)."""
    search = FloatBins(SEARCH_BITS)
    lo_bins, up_bins = search.encode(grid.lower), search.encode(grid.upper)
    with np.errstate(over="ignore"):
        below = search.encode(np.nextafter(grid.lower, -np.inf))
        above = search.encode(np.nextafter(grid.upper, np.inf))
    return bool(np.array_equal(below, lo_bins - 1) and np.array_equal(above, up_bins + 1))


def statistics_from_bins(stats: BinStatistics, cuts: CellCuts) -> CellStatistics:
    """The :class:`CellStatistics` of one cell from its :class:`BinStatistics` under its
    centre's ``cuts`` (``cell_cuts`` or ``range_cuts`` over a range holding every bin):
    ``joint_statistics_from_bins`` of that one cell — each bin's counts and sums to its
    (interval, exponent), exactly what ``cell_statistics`` sums row by row. Moved here
    from dprect/core/describe_stats.py (the product reads every cell of a column at once,
    ``statistics_of_cells``)."""
    keys, n, s = joint_statistics_from_bins(np.zeros(len(stats.bins), dtype=np.int64),
                                            stats, joint_cuts([cuts]))
    return CellStatistics(keys & ((1 << PACKED_BITS) - 1), n, s)
