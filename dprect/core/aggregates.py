"""DP count, sum and mean per (public group, column) with automatic bounds, in one charge
(issue #23; proofs in docs/privacy.md §11).

Per column the budget ε_col = ε/d (d columns, basic composition; δ is not used: every
mechanism here is pure) is split by public constants:

* ``CENTRE_SHARE`` (0.05) to the private centre, ``SIDES_SHARE`` (0.3) to the two
  sides' draws, ε_s (each side one monotone exponential mechanism over its candidate
  steps, :mod:`dprect.core.step_exponential`; the two in parallel), the rest, ε_q (0.65),
  to the query: ``SUM_SHARE`` (0.8) of ε_q to the centred clamped sum and the rest to the
  count (:func:`query_split`). A count-only run draws no sum noise, so the count gets the
  whole ε_q (the bounds, released with it, are a full run's: the same ε and target).
  With statistics=() (bounds alone) the query share goes to the centre and the sides.
  Why 0.3 (past the data a side's law is its prior alone, whatever ε_s): docs/results.md
  §5.1.
* Each side's target t (rows to clip) is ⌈TARGET_FACTOR/ε_sum + MARGIN_FACTOR/ε_s⌉,
  with ε_sum the query's ε on the clamped sum (or the ``query_epsilon`` a caller names):
  the clip that balances clipping bias and noise for a mean or sum is about 1/(2ε) rows
  per side (Amin et al. 2019; Huang, Liang & Yi 2021); the margin (2/ε_s rows) keeps the
  draw's inward pull (μ per step against ε_s per row) from clipping much more.
* One draw per side, the whole ε_s on it: a bound 79 candidate steps past the first step
  clipping ≤ t has probability below 2·10⁻¹⁷ a side, for any data (docs/privacy.md §11;
  :meth:`DescribePlan.runaway`).

**The aggregates** (given the released L ≤ c ≤ U, public). A pivot p between the centre c
and the midpoint (L + U)/2: the minimiser of the mean's predicted variance
2(w(p)/ε_S)² + 2((c − p)/ε_n)² on that segment, in closed form (:func:`choose_pivot`:
post-processing of released values; on a skewed column it moves p off the median by
ε_n²/(ε_n² + ε_S²) of the way to the far bound, cutting the count noise's lever
|mean − p| at a small cost in w — 7–8% less predicted noise than the better end on
College Scorecard earnings at ε = 1); w = max(U − p, p − L) and
γ = w/2^K (K = ``SUM_FRACTION_BITS``), both exact rationals. Each row is first truncated
toward zero to 30 significant bits, x̃ (row-local and public; relative error < 2^−29 per
row; it keeps x in its ``FloatBins(SEARCH_BITS)`` bin, so the clamp at the candidate bounds is
summable per interval between candidates: :mod:`dprect.core.describe_stats`). With
T = Σ clamp(x̃, L, U) − n·p computed exactly, S = ⌊T/γ + 1/2⌋: a row moves T by at most
w = 2^K·γ, and ⌊· + 1/2⌋ is non-decreasing and commutes with integer shifts, so adding or
removing a row moves S by at most 2^K. Released: ñ = n + DLap(1/ε_n) and
S̃ = S + DLap(2^K/ε_S) (exact discrete Laplace; S̃ only when a sum or a mean is asked),
then by post-processing count = max(ñ, 0),
sum = p·count + γ·S̃ and mean = clamp(p + γ·S̃/max(1, ñ), L, U). The rounding moves the
sum by at most γ/2 in all (w·2^−(K+1)), the truncation by less than 2^−29·Σ|x|.

**Guarantee.** Per column: centre ε_c + sides ε_s + count ε_n + sum ε_S = ε_col under
every split a released count may pick (below; up to the 10⁻⁹ shrink; ε_S = 0 and no sum
noise for a count-only run), sequential;
d columns, sequential; public groups hold disjoint rows, so they compose in parallel:
ONE charge of ε whatever the number of groups. Under replace-one neighbours the
add/remove plan spends ε/2 (group privacy). The independent check
(:func:`dprect.core.guarantee_check.check_describe_plan`) re-derives it from the exact
rates the samplers use, every split's, and re-derives the split: the sum noise drawn iff
a sum or a mean is asked, the drawn noises spending the requested ε.

**Small groups** (issue #41; docs/privacy.md §11, "Small groups" and Theorem D′). When a
statistic is asked, each cell's count ñ is released first and picks the split of the rest
(:attr:`DescribePlan.tiers`, :meth:`DescribePlan.tier_index`): the shares above for
ñ ≥ ⌈ln(2/β)/ε_n + r(ε_c)⌉ (r the centre's row need, :func:`centre_rows_at`), then the
centre's ε doubled (up to ``CENTRE_TIERS`` − 1 times, at most ``CENTRE_CAP`` of what the
count leaves; the sides keep ε_s, the sum
takes the rest) for smaller counts by the same rule, and last an anchored split: no
centre draw — the column's anchor, the lower median of the released means of the cells
under the plan's own split (:func:`pool_anchor`) — its sides on every
``SMALL_STRIDE``-th candidate. Adaptive composition: every split spends ε_col with the
count, so the guarantee is the plan's whatever the counts; the anchored centre reads
other groups' releases only (parallel composition). A column with no cell of an own
centre has no anchor (issue #42: every group of ten rows): when its cells' released
counts add up to the centre's need, they take the *pooled* split instead
(:attr:`DescribePlan.pooled`, a function of the column's released counts): ONE centre
for the column drawn from the pooled histogram of those cells at the plan's own ε_c
(:func:`column_centres`) — a row is in one group, so in the pool once, and moves the
pooled depth by at most 1 (docs/privacy.md §11, Lemma D6).

**Phases and draw order** (identical across engines for a seed). The mechanism reads the
rows through sufficient statistics only (:mod:`dprect.core.describe_stats`): first each
cell's centre-grid histogram, then — given every centre — each cell's counts and truncated
sums per interval between candidates. The candidates depend on the released centre, but
every one is a search-bin edge, so both come from one pass's per-search-bin counts and
sums (:class:`~dprect.core.describe_stats.BinStatistics`): an engine reads the rows once,
whatever the number of groups and columns. The draws: one stream per public group —
with a seed, a 128-bit seed per group drawn from the run's source in the public group
order (:meth:`~dprect.core.randomness.RandomSource.stream_seeds`); from OS entropy, the
OS — and within a group's stream, its counts' noises (columns in order), the seed of its
second stream if a cell got a smaller split, its own centres (columns in order), then per
column of the plan's own split the lower side, the upper side and the sum noise (none on
a count-only run), then the sum-of-squares noise only when a variance or a std is asked
(:mod:`dprect.core.variance`, docs/privacy.md §17; :func:`describe_block`).
So the groups can be drawn in blocks, in any order, in other processes
(:func:`describe_blocks` takes the ``map`` to use), with the same result for a seed; then
the driver makes the anchors (and a pooled column's one centre, from the run's source
after the groups' stream seeds) and the blocks draw the smaller splits' cells through the
same ``map``, each group's from its second stream (:func:`finish_small`).
:func:`run_describe` (arrays) and the Spark route feed the same statistics to the same
functions. Within a block the cells of a round are drawn together
(:func:`~dprect.core.cell_draws.draw_cells`: one compiled call where numba is installed,
each cell from its group's stream in the order above — the same draws as cell by cell),
and released together (:func:`_released_many`: the exact sums, released values and
intervals in one compiled call, :mod:`dprect.core.release_jit` — the same values).
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property, partial, wraps
from typing import Any, Protocol, TypeVar, cast

import numpy as np

from dprect.core import crmath
from dprect.core.accounting import Guarantee, add_remove_budget, replace_one
from dprect.core.cell_draws import CellDraw, block_bits, block_noises, draw_cell, draw_cells
from dprect.core.describe_stats import (
    CellStatistics,
    bin_blocks,
    bin_statistics,
    cell_statistics,
    centre_counts,
    centred_sum_dyadic,
    data_tails,
    dyadic,
    joined_tails,
    merge_histograms,
)
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import CheckReport, check_describe_plan
from dprect.core.intervals import BELOW_ROW_NEED, DEFAULT_LEVEL, below_need, query_intervals
from dprect.core.randomness import (
    STREAM_SEED_BITS,
    JointStreams,
    RandomSource,
    expect_draws,
    kernels,
)
from dprect.core.records import quick_init
from dprect.core.request import DescribeRequest, Neighbouring, check_run_epsilon
from dprect.core.result import grouped_json
from dprect.core.statistic import noises_drawn
from dprect.core.step_exponential import DECAY, runaway_bound
from dprect.core.tail_bounds import (
    CENTRE_BITS,
    SIGN_SHARE,
    STEPS_PER_OCTAVE,
    CandidateStream,
    bin_edges,
    candidate_count,
    centre_rates,
    draw_centre_from_counts,
    shared_streams,
)
from dprect.core.validation import repeat_at
from dprect.core.variance import (
    SQUARE_FRACTION_BITS,
    released_squares,
    released_variance,
    spread_intervals,
)

CENTRE_SHARE = 0.05
SIDES_SHARE = 0.3
SUM_SHARE = 0.8  # of the query's share: ε_S; the rest is ε_n
TARGET_FACTOR = 0.5
MARGIN_FACTOR = 2.0
SUM_FRACTION_BITS = 30
STATISTICS = ("count", "sum", "mean")
#: the statistics read from the clamped sum of squares too (:mod:`dprect.core.variance`,
#: docs/privacy.md §17): asked by name only, never a default
SPREAD = ("variance", "std")
#: of the query's share when a variance or a std is asked: ε_Q, to the sum of squares
#: (the same in every split); the count and the sum split the rest as
#: :func:`query_split` says
SQUARES_SHARE = 0.5
#: the statistics that read the noisy clamped sum (the rest of a describe run reads the
#: noisy count only)
SUMMED = ("sum", "mean")
_SHRINK = 1.0 - 1e-9
#: the runaway statement's steps past the first step clipping ≤ t: two octaves of the
#: offset 2^(k/r) and ⌊r·log2(1000)⌋ (the multiplicative reading is only approximate:
#: :meth:`DescribePlan.runaway`)
RUNAWAY_STEPS = (2 * STEPS_PER_OCTAVE, 79)
#: small groups (docs/privacy.md §11, "Small groups"): a cell whose released count is below
#: what the centre's share needs gets that share doubled, up to CENTRE_TIERS − 1 times and
#: to at most CENTRE_CAP of what the count leaves (the sides keep their ε, the sum takes the
#: rest); below the last of those splits its centre is anchored on the large groups'
#: released means (no ε: :func:`pool_anchor`)
CENTRE_TIERS = 4
CENTRE_CAP = 0.5
#: the anchored split's sides draw among every SMALL_STRIDE-th candidate (four a factor of
#: 2): a group too small for its own centre has too few rows a step to outweigh the prior's
#: μ a step on the finer list
SMALL_STRIDE = 2
#: the centre's row need (:func:`centre_rows_at`): the magnitude's median needs
#: n ≥ (CENTRE_ROWS_FACTOR/ε₂)·ln(2h/β), the sign class n ≥ (SIGN_ROWS_FACTOR/ε₁)·ln(2/β)
CENTRE_ROWS_FACTOR = 4.0
SIGN_ROWS_FACTOR = 2.0
#: a smaller split's own centre below 2^-ANCHOR_BITS of its column's anchor is replaced by
#: the anchor (:func:`small_centre`)
ANCHOR_BITS = 6
#: the centre's magnitude grid: the non-negative half of FloatBins(CENTRE_BITS)
_MAGNITUDE_BINS = 1 << (11 + CENTRE_BITS)


def centre_rows_at(centre_epsilon: float, beta: float) -> int:
    """The rows from which a centre drawn at ε_c (sign × magnitude,
    :func:`~dprect.core.tail_bounds.draw_centre_from_counts`) lies, with probability
    ≥ 1 − β, within the group's magnitudes — |c| between the bins of its smallest and
    largest |x| — on a sign class the group's rows take: ⌈max((4/ε₂)·ln(2h/β),
    (2/ε₁)·ln(2/β))⌉, ε₁ = SIGN_SHARE·ε_c, ε₂ = ε_c − ε₁ (the samplers' exact split,
    :func:`~dprect.core.tail_bounds.centre_rates`: the one place it is made), h =
    2^(11 + CENTRE_BITS) the magnitude's bins. Each draw fails with probability ≤ β/2: a
    magnitude bin outside the data has depth 0 and the median's depth ≥ n/2, so
    P(outside) ≤ h·e^{−ε₂·n/4}; a class without rows has score 0 against the other's n,
    so P ≤ e^{−ε₁·n/2} (docs/privacy.md §11, Lemma D2). At the defaults the magnitude's
    term is the larger (with ε₁ = ε_c/5 it is whenever h·β ≥ 2): (5/ε_c)·ln(2^16/β), 5/4
    of the float-order median's."""
    sign_rate, magnitude_rate = centre_rates(Fraction(centre_epsilon) / 2)
    eps_sign, eps_mag = float(2 * sign_rate), float(2 * magnitude_rate)
    return math.ceil(max(CENTRE_ROWS_FACTOR / eps_mag * crmath.log(2 * _MAGNITUDE_BINS / beta),
                         SIGN_ROWS_FACTOR / eps_sign * crmath.log(2 / beta)))


@dataclass(frozen=True)
class Tier:
    """One split of a cell's ε after its count (docs/privacy.md §11, "Small groups"): the
    centre's, the two sides' and the sum's ε, the sides' target, and ``min_count``, the
    least released count that selects it (None: any count the tiers before it leave —
    the last tier). ``centre_epsilon`` 0 is the anchored tier: the centre is a public
    function of the other groups' released values (:func:`pool_anchor`). A ``pooled``
    tier (:attr:`DescribePlan.pooled`) draws ONE centre per column at ``centre_epsilon``
    from the pooled histogram of its cells (:func:`column_centres`; docs/privacy.md §11,
    Lemma D6)."""

    centre_epsilon: float
    side_epsilon: float
    sum_epsilon: float
    target: int
    min_count: int | None = None
    sum_sensitivity: int = 1 << SUM_FRACTION_BITS
    #: the sides draw among every ``stride``-th candidate (0, s, 2s, …) only
    stride: int = 1
    #: one centre per column, drawn from the pooled histogram of the tier's cells
    pooled: bool = False

    @property
    def anchored(self) -> bool:
        return self.centre_epsilon == 0

    @cached_property
    def centre_rate(self) -> Fraction:
        """The centre's two draws' rates together: ε_c/2 (0: anchored, no draw)."""
        return Fraction(self.centre_epsilon) / 2

    @cached_property
    def sign_rate(self) -> Fraction:
        """The centre's sign class, exp(rate·rows of the class): rate = ε₁/2,
        ε₁ = SIGN_SHARE·ε_c (:func:`~dprect.core.tail_bounds.centre_rates`)."""
        return centre_rates(self.centre_rate)[0]

    @cached_property
    def magnitude_rate(self) -> Fraction:
        """The centre's magnitude, exp(rate·depth of |x|): rate = ε₂/2, ε₂ = ε_c − ε₁."""
        return centre_rates(self.centre_rate)[1]

    @cached_property
    def side_rate(self) -> Fraction:
        return Fraction(self.side_epsilon)

    @cached_property
    def sum_scale(self) -> Fraction | None:
        """DLap scale of the integer sum, in units of γ: 2^K/ε_S (None: no sum noise)."""
        return (None if self.sum_epsilon == 0
                else Fraction(self.sum_sensitivity) / Fraction(self.sum_epsilon))

    def to_json(self) -> dict[str, Any]:
        return {"min_count": self.min_count, "centre_epsilon": self.centre_epsilon,
                "anchored_centre": self.anchored, "side_epsilon": self.side_epsilon,
                "sum_epsilon": self.sum_epsilon, "target_rows_per_side": self.target,
                "candidate_stride": self.stride,
                **({"pooled_centre": True} if self.pooled else {})}


@dataclass(frozen=True)
class DescribePlan:
    """Every parameter of a describe run, from public inputs only (no data)."""

    epsilon: float
    delta: float
    neighbouring: str
    columns: int
    statistics: tuple[str, ...]
    centre_epsilon: float
    side_epsilon: float
    count_epsilon: float
    sum_epsilon: float
    target: int
    guarantee: Guarantee
    beta: float = 1e-3
    #: k = 2^K: the integer sum's per-row clip (its sensitivity), read by the sum itself
    sum_sensitivity: int = 1 << SUM_FRACTION_BITS
    #: the least released count that selects the split above (None: no count is drawn
    #: first, one split for every cell), and the splits below it, in decreasing
    #: ``min_count``, the last anchored (docs/privacy.md §11, "Small groups")
    min_count: int | None = None
    small: tuple[Tier, ...] = ()
    check: CheckReport | None = None
    #: the stated level of the released noise intervals (:mod:`dprect.core.intervals`)
    interval_level: float = DEFAULT_LEVEL
    #: ε_Q: the clamped sum of squares' in every split (0: not drawn; only a variance or
    #: a std reads it)
    squares_epsilon: float = 0.0
    #: 2^K: the integer sum of squares' per-row clip (:mod:`dprect.core.variance`)
    squares_sensitivity: int = 1 << SQUARE_FRACTION_BITS
    #: the split the anchored tier's cells of a column take instead when no cell of the
    #: column has an own centre (no anchor) and their released counts reach
    #: :meth:`pool_rows`: one centre for the column from their pooled histogram, at the
    #: plan's own ε_c (None: no count drawn first; docs/privacy.md §11, Lemma D6)
    pooled: Tier | None = None

    @cached_property
    def tiers(self) -> tuple[Tier, ...]:
        """Every split a cell may get, the plan's own first (its fields above)."""
        return (Tier(self.centre_epsilon, self.side_epsilon, self.sum_epsilon, self.target,
                     self.min_count, self.sum_sensitivity), *self.small)

    def tier_index(self, noisy_count: int | None) -> int:
        """The split of a cell whose released count is ``noisy_count`` (None: no count
        drawn, the plan's own): the first tier whose ``min_count`` it reaches — a public
        function of a released value."""
        return self.tier_indices([noisy_count])[0]

    def tier_indices(self, noisy_counts: Iterable[int | None]) -> list[int]:
        """:meth:`tier_index` of each count (a block's cells at once): where every count
        is an int64 (no None, no float: numpy makes them one int64 array) and every
        ``min_count`` an int64 or None, one comparison a tier over the block's counts —
        each count's first tier reached, as the loop below finds it (issue #42: the loop
        cost ~1 µs a cell of phase 1 on the executors); else count by count."""
        mins = [tier.min_count for tier in self.tiers]
        counts = noisy_counts if isinstance(noisy_counts, list) else list(noisy_counts)
        if counts and all(least is None or (type(least) is int
                                            and -(1 << 63) <= least < (1 << 63))
                          for least in mins):
            values = np.array(counts)
            if values.dtype == np.int64 and values.ndim == 1:
                found = np.full(len(values), -1, dtype=np.int64)
                for i, least in enumerate(mins):
                    open_ = found < 0
                    found[open_ if least is None else open_ & (values >= least)] = i
                if (found < 0).any():
                    raise AssertionError("a plan's last tier selects every count")
                return list(found.tolist())
        out = []
        for n in counts:
            if n is None:
                out.append(0)
                continue
            for i, least in enumerate(mins):
                if least is None or n >= least:
                    out.append(i)
                    break
            else:
                raise AssertionError("a plan's last tier selects every count")
        return out

    # the exact rates and scales the samplers use (the check re-derives ε from these;
    # made once per plan, not once per cell): the plan's own split's are its first tier's
    @property
    def centre_rate(self) -> Fraction:
        """The centre's two draws' rates together: ε_c/2 (each score's sensitivity is 1)."""
        return self.tiers[0].centre_rate

    @property
    def side_rate(self) -> Fraction:
        """exp(−rate·clipped rows) in a side's draw: rate = ε_s (sensitivity 1, monotone)."""
        return self.tiers[0].side_rate

    @cached_property
    def count_scale(self) -> Fraction | None:
        return None if self.count_epsilon == 0 else 1 / Fraction(self.count_epsilon)

    @property
    def sum_scale(self) -> Fraction | None:
        """DLap scale of the integer sum, in units of γ: 2^K/ε_S."""
        return self.tiers[0].sum_scale

    @cached_property
    def squares_scale(self) -> Fraction | None:
        """DLap scale of the integer sum of squares, in units of γ₂ = h²/2^K: 2^K/ε_Q."""
        return (None if self.squares_epsilon == 0
                else Fraction(self.squares_sensitivity) / Fraction(self.squares_epsilon))

    @property
    def bounds_epsilon(self) -> float:
        return self.centre_epsilon + self.side_epsilon

    @property
    def centre_rows(self) -> int:
        """From this many rows in a group on, the plan's own centre (ε_c) lies between the
        group's smallest and largest value's bins with probability ≥ 1 − β:
        :func:`centre_rows_at` — n ≥ max((4/ε₂)·ln(2h/β), (2/ε₁)·ln(2/β))."""
        return centre_rows_at(self.centre_epsilon, self.beta)

    def runaway(self, steps: int) -> float:
        """An upper bound, for any data, on the probability that a side's bound lies
        ``steps`` or more candidates past the first candidate clipping ≤ t rows (which
        lies at or before where the data end): e^{−μ·steps}/(1 − e^{−μ}) (Lemma D3′,
        :func:`~dprect.core.step_exponential.runaway_bound`). Counted in candidates, not
        as a factor of the data's offset from the centre: near the centre a candidate is
        a bin edge up to 1/16 of |c| away, so one step can be any factor of a small
        offset (docs/privacy.md §11)."""
        return runaway_bound(int(steps))

    def pool_rows(self) -> int:
        """The least released rows (Σ max(ñ, 0) over a column's cells of the anchored
        tier) from which a column without an anchor draws its pooled centre
        (:func:`column_centres`): ⌈ln(2/β)/ε_n + r(ε_c)⌉ (:func:`centre_rows_at`) at the
        pooled split's ε_c — what one group's released count needs for an own centre at that ε. A
        public function of released counts (accuracy only)."""
        assert self.pooled is not None
        return math.ceil((self.count_error or 0.0)
                         + centre_rows_at(self.pooled.centre_epsilon, self.beta))

    @property
    def own_centre_tier(self) -> Tier:
        """The last split whose centre is drawn from the group's own rows (the smallest
        ``min_count``); below it a cell's centre is anchored."""
        return [t for t in self.tiers if not t.anchored][-1]

    @property
    def rows_needed_by(self) -> dict[str, int]:
        """What each part of a cell needs of a group's rows, per column (the plan is the
        same for every column). Without a count first (bounds alone): ``centre``
        (:attr:`centre_rows`) and ``sides`` = 2·⌈t + 2·ln(S/β)/ε_s⌉ (the dense-tail clip
        bound, :meth:`side_clip_bound`, on each side) below which the two sides together
        may clip every row. With a count (docs/privacy.md §11, "Small groups"): the same
        two for the last split with an own centre, its ``centre`` being that split's
        ``min_count`` — a released count from which the selected split's centre lies in
        the data with probability ≥ 1 − 2β; below it the centre is anchored on the other
        groups' and nothing is promised. The count needs no rows (its error, ln(2/β)/ε_n,
        does not depend on n)."""
        if self.min_count is None:
            return {"centre": self.centre_rows, "sides": 2 * math.ceil(self.side_clip_bound())}
        tier = self.own_centre_tier
        assert tier.min_count is not None
        return {"centre": tier.min_count,
                "sides": 2 * math.ceil(self.side_clip_bound(tier=tier))}

    @property
    def rows_needed(self) -> int:
        """The released count a group needs in every column before the plan's accuracy
        statements hold for its cells: the largest of :attr:`rows_needed_by`. A cell whose
        released count is below it may have bounds and a mean far off (docs/privacy.md
        §11, "Rows needed"); the splits of the tiers above it only lower it."""
        return max(self.rows_needed_by.values())

    @property
    def clip_limit(self) -> float | None:
        """Issue #23's per-side clipping limit 1/(2ε_S) + 20/ε_b (ε_b = the bounds' ε per
        column), or None for bounds alone (no sum)."""
        if self.sum_epsilon == 0:
            return None
        return 1.0 / (2.0 * self.sum_epsilon) + 20.0 / self.bounds_epsilon

    def clip_weight(self, rows: int) -> float:
        """e^{−ε_s·(rows − t)}: a step clipping ``rows`` rows weighs at most this times
        e^{μ·G} of the first step clipping ≤ t (G the steps between them), so a side
        clips more than ``rows`` with probability at most the sum of that over such
        steps (docs/privacy.md §11)."""
        return crmath.exp(-self.side_epsilon * (rows - self.target))

    def side_clip_bound(self, steps: int | None = None, tier: Tier | None = None) -> float:
        """Rows a side clips at most with probability ≥ 1 − β, given a centre inside the
        data and a *dense* tail — one holding at least λ = 2μ/ε_s rows per candidate step
        inside the first step k_t clipping ≤ t (q_k − t ≥ λ·(k_t − k) for k < k_t):
        t + 2·ln(S/β)/ε_s, S the steps that clip more (default: every candidate). Each
        such step weighs e^{−ε_s(q_k − t) + μ(k_t − k)} ≤ e^{−(ε_s/2)(q_k − t)} of step
        k_t (docs/privacy.md §11). A sparser tail (e.g. one row a step) pulls the bound
        inward: every step costs μ against ε_s per row."""
        s = candidate_count() if steps is None else steps
        t = self.tiers[0] if tier is None else tier
        return t.target + 2.0 * crmath.log(s / self.beta) / t.side_epsilon

    @property
    def dense_rows_per_step(self) -> float:
        """λ = 2μ/ε_s: the tail density (rows per candidate step) :meth:`side_clip_bound`
        assumes."""
        return 2.0 * float(DECAY) / self.side_epsilon

    @property
    def count_error(self) -> float | None:
        """ln(2/β)/ε_n: the released count is within this of the true count with
        probability ≥ 1 − β (P(|DLap(1/ε_n)| ≥ z) = 2e^{−ε_n z}/(1 + e^{−ε_n}) for an
        integer z ≥ 1); None without a count."""
        return None if self.count_epsilon == 0 else crmath.log(2 / self.beta) / self.count_epsilon

    def to_json(self) -> dict[str, Any]:
        return {
            "product": "describe",
            "epsilon": self.epsilon, "delta": self.delta, "neighbouring": self.neighbouring,
            "columns": self.columns, "statistics": list(self.statistics),
            "per_column": {
                "centre_epsilon": self.centre_epsilon,
                "side_epsilon": self.side_epsilon,
                "side_decay_per_step": float(DECAY),
                "count_epsilon": self.count_epsilon,
                "sum_epsilon": self.sum_epsilon,
                **({} if self.squares_epsilon == 0 else {
                    "squares_epsilon": self.squares_epsilon,
                    "squares_fraction_bits": SQUARE_FRACTION_BITS}),
                "bounds_epsilon": self.bounds_epsilon,
                "target_rows_per_side": self.target,
                "sum_fraction_bits": SUM_FRACTION_BITS,
            },
            "clip_per_side_bound": self.side_clip_bound(),
            "clip_bound_dense_rows_per_step": self.dense_rows_per_step,
            **({} if self.clip_limit is None else {
                "clip_limit_rows": self.clip_limit,
                "clip_weight_at_clip_limit": self.clip_weight(math.ceil(self.clip_limit))}),
            **({} if self.count_error is None else {"count_error_rows": self.count_error}),
            "centre_rows": self.centre_rows,
            **({} if self.min_count is None else {
                "splits_by_released_count": [t.to_json() for t in self.tiers],
                "pooled_split": None if self.pooled is None else self.pooled.to_json()}),
            "rows_needed": self.rows_needed,
            "rows_needed_by": self.rows_needed_by,
            **({} if self.min_count is None else {
                "ungrouped_anchor_zero_below": self.rows_needed_by["centre"]}),
            "runaway_probability_at_most": {f"{k}_steps": self.runaway(k)
                                            for k in RUNAWAY_STEPS},
            "beta": self.beta,
            "interval_level": self.interval_level,
            "guarantee": self.guarantee.to_json(),
            **({} if self.check is None else {"guarantee_check": self.check.to_json()}),
        }

    def table(self) -> str:
        """The planner's printout: the split and the accuracy statements."""
        g = self.guarantee
        clip = self.side_clip_bound()
        lines = [
            f"describe: {self.columns} column(s), statistics "
            f"{', '.join(self.statistics) or 'none (bounds alone)'}",
            f"per column: centre eps {self.centre_epsilon:.6g} (its sign, "
            f"{float(SIGN_SHARE):g} of it, then the median of |x|: exponential "
            f"mechanisms), sides eps {self.side_epsilon:.6g} (each side one exponential "
            f"mechanism over its steps, prior decay {float(DECAY):g} per step; the two "
            f"sides in parallel)",
            *([] if not self.statistics else [
                f"per column: count eps {self.count_epsilon:.6g}"
                + (" (discrete Laplace); no sum noise is drawn (count only: the count has "
                   "the query's whole share)" if self.sum_scale is None else
                   f", clamped sum eps {self.sum_epsilon:.6g} (discrete Laplace; the sum "
                   f"centred on a pivot p, on a 2^-{SUM_FRACTION_BITS} fixed-point grid of "
                   f"w = max(U - p, p - L))")
                + ("" if self.squares_scale is None else
                   f", clamped sum of squares eps {self.squares_epsilon:.6g} (discrete "
                   f"Laplace; centred on the bounds' midpoint m, on a "
                   f"2^-{SQUARE_FRACTION_BITS} grid of ((U - L)/2)^2; variance and std "
                   f"by post-processing, with their noise intervals)")]),
            f"target: {self.target} clipped row(s) per side; with probability >= "
            f"1 - {self.beta:g} per side a side clips at most {clip:.1f} rows once the "
            f"centre lies in the data's bins and the tail is dense: at least "
            f"{self.dense_rows_per_step:.2g} rows per candidate step (2*mu/eps_s) inside the "
            f"first step clipping <= t (t + 2*ln(S/beta)/eps_s, S = all "
            f"{candidate_count()} candidates); a sparser tail clips more: each step inside "
            f"that first step gains {float(DECAY):g} (mu) in log-weight and loses eps_s per "
            f"row it clips",
            *([] if self.clip_limit is None else [
                f"a step clipping {math.ceil(self.clip_limit)} rows (1/(2 eps_S) + "
                f"20/eps_b) weighs at most {self.clip_weight(math.ceil(self.clip_limit)):.1e}"
                f" x e^({float(DECAY):g}*G) of the first step clipping <= t (G steps "
                f"between them), so it is drawn with at most that probability: a side clips "
                f"more only through such steps"]),
            f"past the data a side's bound lies {RUNAWAY_STEPS[0]} / {RUNAWAY_STEPS[1]} or "
            f"more candidate steps beyond the first step clipping <= t rows (at or before "
            f"where the data end) with probability <= {self.runaway(RUNAWAY_STEPS[0]):.1e}"
            f" / {self.runaway(RUNAWAY_STEPS[1]):.1e} (per side, any data; e^(-mu*K)/"
            f"(1 - e^-mu) for K steps)",
            f"the centre lies within a group's magnitudes (|c| between the bins of its "
            f"smallest and largest |x|, on a sign its rows take) with probability >= 1 - "
            f"{self.beta:g} once the group has {self.centre_rows:,} rows "
            f"(max(4/eps_m * ln(2h/beta), 2/eps_sign * ln(2/beta)))",
            *([] if self.min_count is None else [self._tiers_line()]),
            f"rows needed: {self.rows_needed:,} per group in each column (centre "
            f"{self.rows_needed_by['centre']:,}, sides {self.rows_needed_by['sides']:,}); "
            f"with fewer, the bounds"
            + (" and the mean" if set(SUMMED) & set(self.statistics) else "")
            + " of that group may be far off"
            + ("" if self.min_count is None else
               f"; an ungrouped column below {self.rows_needed_by['centre']:,} released "
               f"rows has no other group to anchor on: its sides search from 0")
            + ("" if "count" in self.statistics else
               f"; no count asked: {BELOW_ROW_NEED} is left empty for every group, none is "
               "flagged (ask for the count too to have the groups below this need "
               "flagged)"),
            *([] if self.count_error is None else [
                f"count: error <= {self.count_error:.1f} rows with probability >= "
                f"1 - {self.beta:g} (ln(2/beta)/eps_n)"
                + ("" if self.sum_scale is None else
                   f"; mean: noise sd about sqrt(2)*w/({self.sum_epsilon:.3g}*n) + "
                   f"sqrt(2)*|mean - p|/({self.count_epsilon:.3g}*n), plus the clipped "
                   f"rows' bias")]),
            f"guarantee ({g.epsilon:.6g}, {g.delta:.3g})-DP, {g.neighbouring} neighbours: "
            f"{g.bound}",
            *([] if self.check is None else [
                f"re-derived by the independent check: ({self.check.epsilon:.6g}, "
                f"{self.check.delta:.3g}) by {self.check.route}"]),
        ]
        return "\n".join(lines)


    def _tiers_line(self) -> str:
        """The printout's line on the splits chosen by a cell's released count."""
        parts = []
        for t in self.tiers:
            when = (f"count >= {t.min_count:,}" if t.min_count is not None
                    else "any smaller count")
            centre = ("centre anchored on the large groups' released means (no eps)"
                      if t.anchored else f"centre eps {t.centre_epsilon:.3g}")
            parts.append(f"{when}: {centre}, sides eps {t.side_epsilon:.3g}"
                         + (f", sum eps {t.sum_epsilon:.3g}" if t.sum_epsilon else "")
                         + f", target {t.target}"
                         + (f", every {t.stride}nd candidate" if t.stride == 2 else
                            f", every {t.stride}th candidate" if t.stride > 2 else ""))
        pooled = self.pooled
        if pooled is not None:
            parts.append(f"a column with no own centre and released counts adding up to "
                         f"{self.pool_rows():,}: one centre pooled over its cells, centre "
                         f"eps {pooled.centre_epsilon:.3g}, sides eps "
                         f"{pooled.side_epsilon:.3g}"
                         + (f", sum eps {pooled.sum_epsilon:.3g}" if pooled.sum_epsilon
                            else ""))
        return ("small groups: each cell's count is drawn first, and its released value "
                "picks the split of the rest (adaptive composition): " + "; ".join(parts))


def _check_epsilon(x: object, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x) \
            or not x > 0:
        raise ParameterError(f" must be a finite number > 0, got {x!r}", parameter=name)
    return float(x)


def plan_describe(epsilon: float, columns: int, *, delta: float | None = None,
                  neighbouring: str | None = None,
                  statistics: Sequence[str] = STATISTICS,
                  query_epsilon: float | None = None, beta: float | None = None,
                  interval_level: float | None = None) -> DescribePlan:
    """The plan of a describe run (nothing here looks at data). ``delta``, ``beta`` and
    ``neighbouring`` default as :class:`~dprect.core.request.DescribeRequest` says.
    ``statistics=()`` spends the whole budget on the bounds; its target is then set by
    ``query_epsilon`` (the ε the caller's own sum or mean will spend per column;
    required). ``query_epsilon`` with statistics overrides the ε_S the target is aimed
    at."""
    eps = _check_epsilon(epsilon, "epsilon")
    given: dict[str, Any] = {k: v for k, v in (("delta", delta), ("beta", beta),
                                               ("neighbouring", neighbouring),
                                               ("interval_level", interval_level))
                             if v is not None}
    request = DescribeRequest(eps, **given)
    delta, beta, nb = request.delta, request.beta, request.neighbouring
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ParameterError(f"columns must be an integer >= 1, got {columns!r}")
    if isinstance(statistics, str):
        statistics = (statistics,)
    stats = tuple(statistics)
    for s in stats:
        if s not in STATISTICS + SPREAD:
            raise ParameterError(f" must be among {', '.join(STATISTICS + SPREAD)}, "
                                 f"got {s!r}", parameter="statistics")
    if len(set(stats)) != len(stats):
        raise ParameterError("a statistic is named twice")
    eps_ar, _ = add_remove_budget(eps, float(delta), nb)
    eps_col = eps_ar / columns * _SHRINK
    if stats:
        eps_c, eps_sides = CENTRE_SHARE * eps_col, SIDES_SHARE * eps_col
        eps_q = eps_col - eps_c - eps_sides
        # the sum of squares' share first (only when a variance or std reads it; the same
        # in every split), then the count and the sum split the rest as before
        eps_v = SQUARES_SHARE * eps_q if "sumsq" in noises_drawn(stats) else 0.0
        eps_n, eps_s = query_split(eps_q - eps_v, stats)
    else:
        eps_c = CENTRE_SHARE / (CENTRE_SHARE + SIDES_SHARE) * eps_col
        eps_sides = eps_col - eps_c
        eps_q = eps_s = eps_n = eps_v = 0.0
    # the sides aim at the sum's ε of the default split (a count-only run's bounds are
    # those of a full run), or at the caller's query_epsilon
    aim = query_epsilon if query_epsilon is not None else (SUM_SHARE * eps_q if stats
                                                           else None)
    if aim is None:
        raise ParameterError("bounds alone (statistics=()) need query_epsilon: the "
                             "epsilon your sum or mean will spend per column")
    aim = _check_epsilon(aim, "query_epsilon")
    if query_epsilon is not None:  # the caller's: at least MIN_EPSILON, as a run's ε
        check_run_epsilon(aim, "query_epsilon")
    target = _target(aim, eps_sides)
    min_count: int | None = None
    small: tuple[Tier, ...] = ()
    pooled: Tier | None = None
    if stats:
        min_count, small, pooled = _small_group_tiers(
            eps_col - eps_n - eps_v, eps_c, eps_sides, eps_s, crmath.log(2 / beta) / eps_n,
            beta, query_epsilon, aim)
    splits = [(eps_c, eps_sides, eps_s), *((t.centre_epsilon, t.side_epsilon, t.sum_epsilon)
                                           for t in (*small, *([pooled] if pooled else [])))]
    exact = columns * max(Fraction(eps_n) + Fraction(eps_v) + sum(Fraction(e) for e in split)
                          for split in splits)
    # stated rounded up by a relative 2^-46, as the accountant states its floats (the
    # check pushes its own value up by 10^-40; the 10^-9 shrink leaves the room)
    total = math.nextafter(float(exact) * (1.0 + 2.0**-46), math.inf)
    if total > eps_ar:
        raise AssertionError("describe planner produced a budget above the request")
    drawn = ("" if not stats else " + count" if eps_s == 0 else " + count + sum"
             + (" + sum of squares" if eps_v else ""))
    how = (f"basic composition of {columns} column(s) x (centre + two sides in "
           f"parallel{drawn}); groups in parallel")
    if small:
        how = (f"basic composition of {columns} column(s) x (count first, then by its "
               f"released value one of {len(small) + 1} splits of centre + two sides in "
               f"parallel{drawn.replace(' + count', '')}); groups in parallel")
    g = Guarantee(total, 0.0, "add-remove", how)
    if nb is Neighbouring.REPLACE_ONE:
        g = replace_one(g)
        if g.epsilon > eps:
            raise AssertionError("describe planner produced a guarantee above the budget")
    unchecked = DescribePlan(epsilon=eps, delta=float(delta), neighbouring=nb.value,
                             columns=columns, statistics=stats, centre_epsilon=eps_c,
                             side_epsilon=eps_sides,
                             count_epsilon=eps_n, sum_epsilon=eps_s, target=target,
                             guarantee=g, beta=beta, min_count=min_count, small=small,
                             pooled=pooled,
                             interval_level=request.interval_level, squares_epsilon=eps_v)
    return dataclasses.replace(unchecked, check=check_describe_plan(unchecked))


def _target(aim: float, side_epsilon: float) -> int:
    """t = ⌈TARGET_FACTOR/ε_sum + MARGIN_FACTOR/ε_s⌉ (the module docstring)."""
    return max(1, math.ceil(TARGET_FACTOR / aim + MARGIN_FACTOR / side_epsilon))


def _small_group_tiers(rest: float, eps_c: float, eps_sides: float, eps_s: float,
                       count_error: float, beta: float, query_epsilon: float | None,
                       aim: float) -> tuple[int, tuple[Tier, ...], Tier]:
    """(the plan's own split's ``min_count``, the splits below it, the pooled split) for a
    plan whose count is drawn first (docs/privacy.md §11, "Small groups"); ``rest`` =
    ε_col − ε_n.

    Split k ≥ 1 gives the centre ε_c·2^k, at most ``CENTRE_CAP``·rest (k < CENTRE_TIERS;
    a split whose least count is not below the one before — the cap repeating a value, or
    a huge ε — ends the list); the sides keep the plan's own ε_s (a small group has few
    rows a candidate step, and each step costs the prior's μ) and the sum takes what the
    centre leaves (the sides take it all on a count-only plan); the last split anchors
    the centre (ε 0), its sides draw among every ``SMALL_STRIDE``-th candidate; the pooled
    split is the anchored one with the plan's own ε_c given to one centre per column
    (:attr:`DescribePlan.pooled`). Split k is selected
    by a released count ñ ≥ ⌈ln(2/β)/ε_n + r(ε_c,k)⌉ (r: :func:`centre_rows_at`): then,
    with probability ≥ 1 − β, n ≥ r(ε_c,k) and its centre lies within the data's
    magnitudes with probability ≥ 1 − β. The sides aim at the split's own sum ε
    (or the caller's ``query_epsilon``; a count-only plan keeps the plan's ``aim``)."""
    def tier(centre: float, pooled: bool = False) -> Tier:
        left = rest - centre
        side = eps_sides if eps_s else left
        summed = left - side if eps_s else 0.0
        if eps_s and not summed > 0:  # the cap leaves the sum its share: cannot happen
            raise AssertionError("a small group's split leaves the sum no epsilon")
        goal = query_epsilon if query_epsilon is not None else summed if eps_s else aim
        rows = (math.ceil(count_error + centre_rows_at(centre, beta))
                if centre and not pooled else None)
        return Tier(centre, side, summed, _target(goal, side), rows,
                    stride=SMALL_STRIDE if pooled or not centre else 1, pooled=pooled)

    own = math.ceil(count_error + centre_rows_at(eps_c, beta))
    out, last = [], own
    for k in range(1, CENTRE_TIERS):
        split = tier(min(eps_c * 2.0**k, CENTRE_CAP * rest))
        assert split.min_count is not None
        if split.min_count >= last:  # the cap, or a huge ε: no smaller count to serve
            break
        out.append(split)
        last = split.min_count
    out.append(tier(0.0))
    return own, tuple(out), tier(eps_c, pooled=True)


def query_split(query_epsilon: float, statistics: Sequence[str]) -> tuple[float, float]:
    """(ε_n, ε_S): the query's ε per column between the count's noise and the sum's. The
    sum noise is drawn only when a sum or a mean is released (both read it; the sum and
    the mean read the count too): then ε_S = ``SUM_SHARE``·ε_q and ε_n the rest. A
    count-only run draws no sum noise, so the count gets the whole ε_q (it was 20% of it,
    the sum's 80% spent on nothing released: issue #40)."""
    if "sum" not in noises_drawn(statistics):  # :mod:`dprect.core.statistic`'s draws
        return query_epsilon, 0.0
    eps_s = SUM_SHARE * query_epsilon
    return query_epsilon - eps_s, eps_s


# -- one (group, column) ----------------------------------------------------------------------
@quick_init
@dataclass(frozen=True)
class Cell:
    """What is released for one (group, column)."""

    lower: float
    upper: float
    count: float | None = None
    sum: float | None = None
    mean: float | None = None
    #: (statistic, low, high): each released statistic's noise interval at the plan's
    #: level (:func:`dprect.core.intervals.query_intervals`)
    intervals: tuple[tuple[str, float, float], ...] = ()
    #: the clamped values' variance and standard deviation, when asked (their intervals
    #: are in ``intervals``: :func:`dprect.core.variance.spread_intervals`)
    variance: float | None = None
    std: float | None = None

    def interval(self, statistic: str) -> tuple[float, float] | None:
        """The noise interval of ``statistic`` (None when it was not released)."""
        return next(((lo, hi) for s, lo, hi in self.intervals if s == statistic), None)


def choose_pivot(lower: float, centre: float, upper: float, count_epsilon: float,
                 sum_epsilon: float) -> float:
    """The pivot p the sum is centred on, from released values only (post-processing):
    the p between the centre c and the midpoint m that minimises the predicted variance
    of the mean, V(p) = 2(w(p)/ε_S)² + 2((c − p)/ε_n)² with w(p) = max(U − p, p − L) the
    sum's per-row range (the median c stands in for the unknown mean, so c − p is the
    count noise's lever). Between c and m the farther bound stays the same one (U when
    c ≤ m), so V is a quadratic there with its minimum at
    p* = c + (U − c)·ε_n²/(ε_n² + ε_S²) (L in place of U when c > m), clamped to [c, m];
    p* never does worse than either end (m, or c on a skewed column, where it removes
    most of the lever |mean − p|), and it moves p off the median towards the far bound by
    the share ε_n²/(ε_n² + ε_S²) of the way (1/17 at the default split)."""
    # Python floats (a bound may come as a numpy float: the same double), whose
    # arithmetic overflows to ±inf silently, as numpy's does under errstate("ignore")
    lower, centre, upper = float(lower), float(centre), float(upper)
    mid = lower / 2 + upper / 2
    c = min(max(centre, lower), upper)

    def cost(p: float) -> float:  # the root of it; inf when it overflows
        w = max(upper - p, p - lower)
        try:
            return math.hypot(w / sum_epsilon, (c - p) / count_epsilon)
        except OverflowError:
            return math.inf

    share = pivot_share(count_epsilon, sum_epsilon)
    far = upper if c <= mid else lower
    step = (far / 2 - c / 2) * (2.0 * share)
    best = min(c, mid, key=cost)
    if math.isfinite(step):
        p_star = min(max(c + step, min(c, mid)), max(c, mid))
        if cost(p_star) < cost(best):
            best = p_star
    return best


def pivot_share(count_epsilon: float, sum_epsilon: float) -> float:
    """ε_n²/(ε_n² + ε_S²): the share of the way from the centre to the far bound that
    :func:`choose_pivot` moves p (public: the plan's ε only; the compiled pivots of a block,
    :func:`dprect.core.release_jit.pivot_block`, take it from here)."""
    try:
        return count_epsilon**2 / (count_epsilon**2 + sum_epsilon**2)
    except (OverflowError, ZeroDivisionError):  # a huge or tiny ε: the same share
        ratio = sum_epsilon / count_epsilon
        return 1.0 / (1.0 + ratio * ratio)


# -- the run, block by block (the draw order is the module docstring's) ------------------------
#: about how many sampler calls a describe cell makes (measured: 11 to 14 with 20 to 2,000
#: rows a cell): a block announces its cells × this (public), so that a process loads the
#: compiled samplers from its blocks' public sizes (:func:`~dprect.core.randomness.expect_draws`)
DRAWS_A_CELL = 15


class CellBlock(Protocol):
    """What the mechanism reads of consecutive public groups (every column): an engine's
    sufficient statistics, never rows. ``groups`` is the number of groups in the block;
    indices below are local to it."""

    @property
    def groups(self) -> int:
        """The number of groups in the block."""
        ...

    def centre_histogram(self, group: int, column: int) -> tuple[np.ndarray, np.ndarray]:
        """The cell's centre-grid histogram: sorted keys and counts (empty: no rows)."""
        ...

    def centre_histograms(self) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        """Every cell's :meth:`centre_histogram`, ``[group][column]``."""
        ...

    def cell_rows(self) -> list[int]:
        """Every cell's rows (its centre histogram's total), groups then columns."""
        ...

    def pooled_histograms(self, groups: Mapping[int, Sequence[int]]
                          ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Per column j of ``groups``, the sum (:func:`merge_histograms`) of the centre
        histograms of its cells of the groups ``groups[j]``."""
        ...

    def statistics(self, centres: Sequence[Sequence[float]]) -> list[list[CellStatistics]]:
        """Every cell's statistics given its released centre, ``[group][column]``."""
        ...

    def statistics_at(self, centres: Mapping[tuple[int, int], float]
                      ) -> dict[tuple[int, int], CellStatistics]:
        """The statistics of the cells named, ``(group, column)`` → centre."""
        ...


@dataclass(frozen=True)
class BlockDraws:
    """What :func:`describe_block` draws of a block's groups (``[group][column]``, groups
    local): every cell of the plan's own split (``cells``; None for a cell of a smaller
    split, drawn later by :func:`finish_small`), each cell's split (index into
    :attr:`DescribePlan.tiers`), its own released centre (None: anchored), its released
    count ñ (None: none drawn, a bounds-alone plan) and, per group with a cell of a
    smaller split, the seed of the stream those cells are drawn from (None: OS entropy,
    or no such cell)."""

    cells: list[list[Cell | None]]
    tiers: list[list[int]]
    centres: list[list[float | None]]
    counts: list[list[int | None]]
    resume: list[int | None]
    #: the mean of each cell drawn here, asked or not (None: no sum noise)
    means: list[list[float | None]]
    #: per column with a cell of the anchored split here: the sum of those cells'
    #: centre-grid histograms (sorted keys, counts), the pool a column without an anchor
    #: draws its one centre from (:func:`column_centres`)
    pooled: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


_F = TypeVar("_F", bound=Callable[..., Any])


def collector_paused(fn: _F) -> _F:
    """``fn`` run with Python's cyclic garbage collector paused (restored after, as it
    was): a block of cells makes some ten small objects a cell (tuples, cells, views),
    and each full collection the allocations set off walks every live object of the
    process — a run's statistics and the cells released so far — about a third of a
    block's CPU on a many-groups run (issue #42; docs/results.md §3). Nothing is
    collected later than the block's end, and reference counting frees what has no
    cycle as before; the values are the same (the collector frees memory, it draws
    nothing)."""
    @wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was:
                gc.enable()
    return cast(_F, run)


@collector_paused
def describe_block(plan: DescribePlan, block: CellBlock, seeds: Sequence[int | None]
                   ) -> BlockDraws:
    """Round one of ``block`` (docs/privacy.md §11, "Draw order"): group g (local) draws
    from its own stream ``RandomSource.stream(seeds[g])`` — first its counts' noises
    (columns in order; none on a bounds-alone plan), each cell's split then a public
    function of its released count (:meth:`DescribePlan.tier_index`); then, if a cell got
    a smaller split than the plan's own, the 128-bit seed of the group's second stream;
    then its centres (columns in order; none for an anchored cell); then per column of
    the plan's own split the lower side, the upper side and the sum noise. The cells'
    statistics given the centres are made between the two (for the whole block at once:
    no draw depends on another group's). The cells of smaller splits are left to
    :func:`finish_small`. Module-level, its arguments picklable: a worker process can
    run it."""
    if len(seeds) != block.groups:
        raise ParameterError(f"{len(seeds)} stream seed(s) for a block of {block.groups} "
                             f"group(s)")
    expect_draws(block.groups * plan.columns * DRAWS_A_CELL)  # public: before the sources
    # groups without a seed read OS entropy: one source serves them all (no draw of one
    # is reproduced, so sharing changes no law; it reads the OS only when drawn from)
    streams = RandomSource.streams(seeds)
    tiers = plan.tiers
    columns, scale = plan.columns, plan.count_scale
    # the draws of each group's stream in order: its counts' noises (columns in order;
    # none on a bounds-alone plan), its second stream's seed, its centres. Each group
    # draws from its own stream (or all from one OS source, whose draws are never
    # reproduced), so they are made phase by phase across the block: the same draws.
    # Every group's counts' noises in one compiled call where it can, else one by one.
    drawn = (None if scale is None else
             block_noises(streams, columns, scale.denominator, scale.numerator))
    rows = block.cell_rows()
    noisy: list[int | None] = (
        [_noisy_count(plan, n, streams[i // columns]) for i, n in enumerate(rows)]
        if drawn is None else [n + z for n, z in zip(rows, drawn, strict=True)])
    flat = plan.tier_indices(noisy)
    counts = [noisy[g * columns:(g + 1) * columns] for g in range(block.groups)]
    picks = [flat[g * columns:(g + 1) * columns] for g in range(block.groups)]
    later = [g for g, picked in enumerate(picks) if any(picked) and streams[g].seeded]
    second = block_bits(streams, later, STREAM_SEED_BITS) if later else []
    if second is None:  # not joinable: one by one
        second = [streams[g].randbits(STREAM_SEED_BITS) for g in later]
    resume: list[int | None] = [None] * block.groups
    for g, seed in zip(later, second, strict=True):
        resume[g] = seed
    anchored = [t.anchored for t in tiers]
    cells: list[list[Cell | None]]
    means: list[list[float | None]]
    if _anchored_only(flat, anchored):
        # every cell of an anchored smaller split (a block of tiny groups): no centre, no
        # cell of the plan's own split — nothing drawn below but the pools; the lists of
        # the general case below made a group at a time, not a cell
        centres: list[list[float | None]] = [[None] * columns for _ in range(block.groups)]
        cells = [[None] * columns for _ in range(block.groups)]
        means = [[None] * columns for _ in range(block.groups)]
    else:
        centres = [[None if anchored[k] else
                    draw_centre_from_counts(*block.centre_histogram(g, j),
                                            tiers[k].sign_rate, tiers[k].magnitude_rate,
                                            rng)
                    for j, k in enumerate(picked)]
                   for g, (rng, picked) in enumerate(zip(streams, picks, strict=True))]
        own = {(g, j): c for g, (row, krow) in enumerate(zip(centres, picks, strict=True))
               for j, (c, k) in enumerate(zip(row, krow, strict=True))
               if not k and c is not None}
        stats = block.statistics_at(own)
        # the plan's own split's cells, groups then columns in order, each from its
        # group's stream: drawn together (:func:`_finish_many`)
        finished = iter(_finish_many(plan, [(g, tiers[0], own[(g, j)], stats[(g, j)], n)
                                            for g, (nrow, krow) in enumerate(
                                                zip(counts, picks, strict=True))
                                            for j, (n, k) in enumerate(zip(nrow, krow,
                                                                           strict=True))
                                            if not k], streams))
        done = [[(None, None) if k else next(finished) for k in krow] for krow in picks]
        cells = [[c for c, _ in row] for row in done]
        means = [[m for _, m in row] for row in done]
    last = len(tiers) - 1
    pooled: dict[int, list[int]] = {}  # column → its groups of the anchored split
    if plan.pooled is not None and last:
        at_last = np.flatnonzero(np.asarray(flat, dtype=np.int64) == last)  # cells, in order
        for j in range(columns):
            of_j = at_last[at_last % columns == j] // columns  # its groups, ascending
            if len(of_j):
                pooled[j] = of_j.tolist()
    pools = block.pooled_histograms(pooled)
    return BlockDraws(cells, picks, centres, counts, resume, means, pools)


def _anchored_only(flat: Sequence[int], anchored: Sequence[bool]) -> bool:
    """Whether every cell of a block (its splits ``flat``, indices into the plan's tiers)
    takes an anchored smaller split: then round one draws no centre and no cell of the
    plan's own split for it (:func:`describe_block` makes its lists a group at a time).
    Public: the splits are functions of released counts."""
    return all(k and anchored[k] for k in set(flat))


def _noisy_count(plan: DescribePlan, rows: int, rng: RandomSource) -> int | None:
    """ñ = n + DLap(1/ε_n), or None on a plan without a count (bounds alone)."""
    scale = plan.count_scale
    if scale is None:
        return None
    # the scale's lowest terms (a Fraction's): discrete_laplace's very draws, without
    # re-making the Fraction per cell
    return rows + rng.discrete_laplace_int(scale.denominator, scale.numerator)


def anchor_pools(draws: Sequence[BlockDraws], columns: int
                 ) -> list[tuple[list[float], list[float]]]:
    """Per column, what its anchor is the lower median of (:func:`pool_anchor`), over
    the groups of ``draws`` in order: the released means of the column's cells under the
    plan's own split (their released centres without a sum noise), and every released own
    centre. Pools of consecutive blocks concatenate to the pools of their union, so blocks
    drawn apart (in executors) join them in the public group order. A block without a
    centre (every cell of an anchored split: a block of tiny groups) adds nothing to
    either pool and is passed over, told by one list comparison a group (its centres'
    rows against a row of None: ~0.005 µs a cell, where the walk below is ~0.05)."""
    nothing = [None] * columns
    drawn = [d for d in draws
             if not all(map(operator.eq, d.centres, itertools.repeat(nothing)))]
    out = []
    for j in range(columns):
        first: list[float] = []
        centres: list[float] = []
        for d in drawn:
            for krow, crow, mrow in zip(d.tiers, d.centres, d.means, strict=True):
                c, m = crow[j], mrow[j]
                if krow[j] == 0 and c is not None:
                    first.append(c if m is None else m)
                if c is not None:
                    centres.append(c)
        out.append((first, centres))
    return out


def pool_anchor(first: Sequence[float], centres: Sequence[float]) -> float:
    """A column's anchor, the centre of its cells of smaller splits, from its pools
    (:func:`anchor_pools`, every group in public order): the lower median of ``first``,
    the released means of the column's cells under the plan's own split (shrinking a
    group too small for its own centre towards the typical group; without a sum noise, a
    count-only plan, their released centres); with no cell of the plan's own split, of
    ``centres``, every released own centre; 0.0 when there is none. A public function of
    released values (docs/privacy.md §11, "Small groups")."""
    pool = sorted(first) or sorted(centres)
    return pool[(len(pool) - 1) // 2] if pool else 0.0


@dataclass
class SmallPools:
    """What the centres of a column's small cells are made from, over the groups of some
    blocks in public order (:func:`small_pools`): per column, the anchor's pools
    (:func:`anchor_pools`), the summed centre-grid histogram of its cells of the anchored
    split and their released rows Σ max(ñ, 0). Pools of consecutive blocks join
    (:meth:`joined`) to the pools of their union — the histograms summed across blocks —
    so blocks drawn apart (in executors) join them in block order."""

    first: list[list[float]]
    centres: list[list[float]]
    hists: dict[int, tuple[np.ndarray, np.ndarray]]
    rows: dict[int, int]

    @staticmethod
    def joined(parts: Sequence[SmallPools]) -> SmallPools:
        """The pools of the union of ``parts`` (consecutive blocks, in block order): the
        pools' lists concatenated, each column's histograms summed in one
        :func:`merge_histograms`, the released rows added — one pass over every part,
        where joining them pairwise copied the growing lists once per block."""
        columns = len(parts[0].first) if parts else 0
        keys = sorted({j for part in parts for j in part.hists})
        return SmallPools(
            [[v for part in parts for v in part.first[j]] for j in range(columns)],
            [[v for part in parts for v in part.centres[j]] for j in range(columns)],
            {j: merge_histograms([part.hists[j] for part in parts if j in part.hists])
             for j in keys},
            {j: sum(part.rows.get(j, 0) for part in parts) for j in keys})


def _pooled_rows(draws: BlockDraws, last: int) -> dict[int, int]:
    """Per column with pooled cells in ``draws``, Σ max(ñ, 0) over its cells of the
    anchored split (split ``last``): on int64 arrays where every ñ is an int64 — the
    columns summed in int64 where no column's sum can pass it (every clipped count at
    most (2^63 − 1) / the groups: exact), else each column's values as Python integers —
    else cell by cell."""
    if not draws.pooled:
        return {}
    try:
        counts = np.array(draws.counts, dtype=np.int64)
    except (TypeError, OverflowError, ValueError):  # a None (no count) or past int64
        return {j: sum(max(nrow[j] or 0, 0)
                       for krow, nrow in zip(draws.tiers, draws.counts, strict=True)
                       if krow[j] == last)
                for j in draws.pooled}
    tiers = np.array(draws.tiers, dtype=np.int64)
    kept = np.where(tiers == last, np.maximum(counts, 0), 0)  # 0: a cell of another split
    if int(kept.max(initial=0)) > np.iinfo(np.int64).max // max(len(kept), 1):
        return {j: sum(kept[:, j].tolist()) for j in draws.pooled}
    sums = kept.sum(axis=0).tolist()
    return {j: sums[j] for j in draws.pooled}


def small_pools(plan: DescribePlan, draws: Sequence[BlockDraws]) -> SmallPools:
    """The :class:`SmallPools` of ``draws`` (blocks in public order): released values
    and the anchored split's summed histograms only."""
    columns, last = plan.columns, len(plan.tiers) - 1
    parts = [SmallPools([[] for _ in range(columns)], [[] for _ in range(columns)], {}, {})]
    for d in draws:
        pools = anchor_pools([d], columns)
        rows = _pooled_rows(d, last)
        parts.append(SmallPools([list(f) for f, _ in pools], [list(c) for _, c in pools],
                                dict(d.pooled), rows))
    return SmallPools.joined(parts)


def column_centres(plan: DescribePlan, pools: SmallPools, rng: RandomSource
                   ) -> list[tuple[float, bool]]:
    """Per column, the centre of its cells of the anchored split and whether they take the
    pooled split (docs/privacy.md §11, Lemma D6): the column's anchor
    (:func:`pool_anchor`) when some cell of it has an own centre; else, when those cells'
    released rows reach :meth:`DescribePlan.pool_rows`, ONE draw from ``rng`` (the run's
    source, after the groups' stream seeds; columns in order) by the centre's exponential
    mechanism at the pooled split's ε_c on their pooled histogram — a row is in one group,
    so in the pool once, and moves every pooled depth by at most 1; else 0.0 (the anchor
    of a column without any). Which it is depends on released counts only."""
    out = []
    for j, (first, centres) in enumerate(zip(pools.first, pools.centres, strict=True)):
        tier = plan.pooled
        if (first or centres or tier is None or j not in pools.hists
                or pools.rows[j] < plan.pool_rows()):
            out.append((pool_anchor(first, centres), False))
        else:
            out.append((draw_centre_from_counts(*pools.hists[j], tier.sign_rate,
                                                tier.magnitude_rate, rng), True))
    return out


def small_centre(own: float | None, anchor: float) -> float:
    """The centre a cell of a smaller split searches from: the anchor when it has none of
    its own, or when its own lies below 2^−ANCHOR_BITS of the anchor's magnitude (a centre
    that small sits in the plateau of bins near zero between the data of both signs —
    every one as deep as the rows on the smaller side — and its sides would pay μ per
    step for more than ANCHOR_BITS octaves to reach the other groups' scale); else its
    own. Post-processing of released centres (docs/privacy.md §11, "Small groups")."""
    if own is None or abs(own) < math.ldexp(abs(anchor), -ANCHOR_BITS):
        return float(anchor)
    return float(own)


@collector_paused
def finish_small(plan: DescribePlan, anchors: Sequence[tuple[float, bool]],
                 block: CellBlock | None, draws: BlockDraws) -> list[list[Cell]]:
    """Round two of the block: each group with cells of smaller splits draws them from its
    second stream (``draws.resume``), columns in order — the lower side, the upper side
    and the sum noise — around :func:`small_centre` of the column's anchor, or, in a
    column whose cells take the pooled split (:func:`column_centres`), under that split
    around the column's pooled centre. ``block`` may be None when the block has no such
    cell (nothing to send to a worker). Module-level, its arguments picklable: a worker
    process can run it."""
    tiers = plan.tiers
    wanted = {(g, j): anchors[j][0] if anchors[j][1] else
              small_centre(draws.centres[g][j], anchors[j][0])
              for g, row in enumerate(draws.cells) for j, cell in enumerate(row)
              if cell is None}
    if not wanted:
        return [[c for c in row if c is not None] for row in draws.cells]
    if block is None:
        raise ParameterError("a block with cells of smaller splits needs its statistics")
    stats = block.statistics_at(wanted)
    # each group with such cells draws them from its second stream; groups without a
    # seed share one OS source, as in round one (no draw of one is reproduced, so
    # sharing changes no law)
    later = [g for g, row in enumerate(draws.cells) if any(cell is None for cell in row)]
    sources = RandomSource.streams([draws.resume[g] for g in later])
    work: list[tuple[int, Tier, float, CellStatistics, int | None]] = []
    for i, g in enumerate(later):
        for j, cell in enumerate(draws.cells[g]):
            if cell is None:
                tier = plan.pooled if anchors[j][1] else tiers[draws.tiers[g][j]]
                assert tier is not None
                work.append((i, tier, wanted[(g, j)], stats[(g, j)], draws.counts[g][j]))
    finished = iter(_finish_many(plan, work, sources))
    return [[next(finished)[0] if cell is None else cell for cell in row]
            for row in draws.cells]


#: map(function, iterable) → results in order: builtin ``map``, or a process pool's
Mapper = Callable[..., Iterable[Any]]


def group_blocks(groups: int, parts: int) -> list[range]:
    """``groups`` consecutive public groups cut into at most ``parts`` blocks of nearly
    equal size (a public function of the two counts)."""
    parts = max(1, min(int(parts), groups))
    size, extra = divmod(groups, parts)
    out, start = [], 0
    for i in range(parts):
        stop = start + size + (1 if i < extra else 0)
        out.append(range(start, stop))
        start = stop
    return [r for r in out if len(r)]


def describe_blocks(plan: DescribePlan, blocks: Sequence[CellBlock], groups: Sequence[Any],
                    columns: Sequence[str], rng: RandomSource, mapper: Mapper = map
                    ) -> DescribeResult:
    """The run over ``blocks`` of consecutive groups (together every listed group, in the
    public order): :func:`describe_stream`'s blocks of cells, gathered."""
    group_list, cols, done = describe_stream(plan, blocks, groups, columns, rng, mapper)
    cells = [row for rows in done for row in rows]
    return DescribeResult(cols, group_list, cells, plan.guarantee, plan, rng.seeded)


def describe_stream(plan: DescribePlan, blocks: Sequence[CellBlock], groups: Sequence[Any],
                    columns: Sequence[str], rng: RandomSource, mapper: Mapper = map
                    ) -> tuple[list[Any], list[str], Iterator[list[list[Cell]]]]:
    """(the groups, the columns, each block's rows of cells in block order, lazily) of the
    run over ``blocks`` of consecutive groups (together every listed group, in the public
    order): one stream seed per group from ``rng`` in group order
    (:meth:`RandomSource.stream_seeds`), then :func:`describe_block` on each block through
    ``mapper`` — ``map``, or a process pool's: the result is the same either way, for a
    seed bit for bit, as no draw depends on where or in which order the blocks run; then
    each column's anchor or pooled centre (:func:`column_centres`, a pooled one from
    ``rng``), all before this returns; then :func:`finish_small` on each block through
    the same ``mapper``, as the returned iterator is read — a block's round-one draws let
    go once its cells are out, so a streamed run (issue #42) holds round one's draws and
    the blocks not yet read, never every finished cell."""
    group_list, cols = checked_names(plan, groups, columns)
    if sum(b.groups for b in blocks) != len(group_list):
        raise ParameterError(f"blocks of {sum(b.groups for b in blocks)} group(s) for "
                             f"{len(group_list)} listed group(s)")
    seeds = rng.stream_seeds(len(group_list))
    cuts = np.cumsum([0] + [b.groups for b in blocks]).tolist()
    work = [seeds[a:b] for a, b in itertools.pairwise(cuts)]
    draws: list[BlockDraws] = list(mapper(partial(describe_block, plan), blocks, work))
    del seeds, work
    anchors = column_centres(plan, small_pools(plan, draws), rng)
    # round two, through the same mapper: a block without a small split's cell is not sent
    pending = [b if any(c is None for row in d.cells for c in row) else None
               for b, d in zip(blocks, draws, strict=True)]
    done = mapper(partial(finish_small, plan, anchors), pending, _handed(draws))
    return group_list, cols, iter(done)


def _handed(items: list[Any]) -> Iterator[Any]:
    """``items`` in order, each slot let go (None) as its item is handed on."""
    for i, item in enumerate(items):
        items[i] = None
        yield item


def finish_cell(plan: DescribePlan, tier: Tier, centre: float, stats: CellStatistics,
                noisy_n: int | None, rng: RandomSource) -> Cell:
    """One cell from its statistics given its centre, under its split ``tier`` and its
    released count ``noisy_n`` (drawn first; None on a bounds-alone plan): the lower side,
    the upper side, the sum noise, the sum-of-squares noise (in that order; no sum noise
    on a count-only plan, no squares noise unless a variance or std is asked: §17)."""
    return _finish(plan, tier, centre, stats, noisy_n, rng)[0]


def _finish(plan: DescribePlan, tier: Tier, centre: float, stats: CellStatistics,
            noisy_n: int | None, rng: RandomSource) -> tuple[Cell, float | None]:
    """:func:`finish_cell`, and the cell's mean whether asked or not (None without sum
    noise): post-processing of its released count and sum."""
    cell = _cell_draw(plan, tier, centre, stats, 0)
    return _released(plan, cell, centre, stats, noisy_n, *draw_cell(cell, rng))


def _finish_many(plan: DescribePlan, work: Sequence[tuple[int, Tier, float, CellStatistics,
                                                          int | None]],
                 sources: list[RandomSource]) -> list[tuple[Cell, float | None]]:
    """:func:`_finish` of each ``(row, tier, centre, statistics, ñ)`` in order, the cell
    drawing from ``sources[row]``: the block's draws made together
    (:func:`~dprect.core.cell_draws.draw_cells`: one compiled call where the samplers
    run compiled; the same draws as cell after cell), then each cell released."""
    joined = (joined_tails([stats for _, _, _, stats, _ in work])
              if work and JointStreams.possible(sources) else None)
    scales: dict[int, tuple[tuple[int, int], ...]] = {}  # per split: a few a block
    for _, tier, _, _, _ in work:
        if id(tier) not in scales:
            scales[id(tier)] = _noise_scales(plan, tier)
    cells = [_cell_draw(plan, tier, centre, stats, row,
                        None if joined is None else joined[0][i], scales[id(tier)])
             for i, (row, tier, centre, stats, _) in enumerate(work)]
    drawn = draw_cells(cells, sources, None if joined is None else joined[1])
    return _released_many(plan, cells, work, drawn)


#: a noisy count or sum noise the compiled release takes: |v| < 2^62 (S + noise fits)
_RELEASE_LIMIT = 1 << 62


def _released_many(plan: DescribePlan, cells: Sequence[CellDraw],
                   work: Sequence[tuple[int, Tier, float, CellStatistics, int | None]],
                   drawn: Sequence[tuple[int, int, list[int]]]
                   ) -> list[tuple[Cell, float | None]]:
    """:func:`_released` of each cell in order. Where the compiled samplers run
    (:func:`~dprect.core.randomness.kernels`) and a cell draws its sum noise alone (a
    count, sum or mean run: no sum of squares), its exact sum, step, released sum and
    mean and its intervals are made for the whole block in one compiled call
    (:func:`dprect.core.release_jit.release_cells`: the same values, bit for bit); the
    bounds and the pivot are made here as :func:`_released` makes them, and a cell the
    compiled call cannot make exactly (its module notes) is released by
    :func:`_released`."""
    if not (plan.statistics and plan.squares_scale is None and kernels() is not None
            and any(len(c.noises) == 1 for c in cells)):
        return [_released(plan, cell, centre, stats, noisy_n, *d)
                for cell, (_, _, centre, stats, noisy_n), d in zip(cells, work, drawn,
                                                                    strict=True)]
    from dprect.core import release_jit  # loaded with the compiled samplers (numba)

    made = _release_columns(plan, cells, work, drawn)
    if made is None:
        made = _release_rows(plan, cells, work, drawn)
    keys, counts, sums, at, ints, given, sides = made
    f = _bounds_and_pivots(plan, sides, given, ints[:, 4] >= 0)
    status, values = release_jit.release_cells(
        keys, counts, sums, at, ints[:, 0].copy(), ints[:, 1].copy(), f, ints[:, 2].copy(),
        ints[:, 3].copy(), given[:, 2].copy(), ints[:, 4].copy(), plan.count_epsilon,
        plan.interval_level, "sum" in plan.statistics, "mean" in plan.statistics)
    # the released cells made a column at a time, then the cells the compiled call left
    # to Python released as _released releases them
    n = len(cells)
    means = values[:, 1].tolist()
    made_cells = released_cells(plan.statistics, f, ints[:, 2], values)
    out: list[tuple[Cell, float | None]] = list(zip(made_cells, means, strict=True))
    for i in np.flatnonzero(status != release_jit.DONE).tolist():
        _, _, centre, stats, noisy_n = work[i]
        out[i] = _released(plan, cells[i], centre, stats, noisy_n, *drawn[i])
    assert len(out) == n
    return out


def released_cells(statistics: Sequence[str], bounds: np.ndarray, noisy_n: np.ndarray,
                   values: np.ndarray) -> list[Cell]:
    """The :class:`Cell` of every cell the compiled release made
    (:func:`dprect.core.release_jit.release_cells`' ``values``; ``bounds`` its (L, U, …)
    rows, ``noisy_n`` the released counts ñ) for a plan asking ``statistics``: made a
    column at a time (each field's values as one list, the cells by one map over them);
    a cell the compiled call left to Python gets a value here that its caller replaces."""
    want = set(statistics)
    has_count, has_sum, has_mean = "count" in want, "sum" in want, "mean" in want
    # each asked interval's columns of the values (count, sum, mean: query_intervals')
    spans = [(name, 2 + 2 * q) for name in statistics
             for q, known in enumerate(("count", "sum", "mean")) if name == known]
    none = itertools.repeat(None)
    count_of: Iterable[float | None] = (
        np.maximum(noisy_n, 0).astype(np.float64).tolist() if has_count else none)
    intervals = zip(*[zip(itertools.repeat(name), values[:, q].tolist(),
                          values[:, q + 1].tolist()) for name, q in spans],
                    strict=True) if spans \
        else itertools.repeat(())
    return list(map(Cell, bounds[:, 0].tolist(), bounds[:, 1].tolist(), count_of,
                    values[:, 0].tolist() if has_sum else none,
                    values[:, 1].tolist() if has_mean else none, intervals))


#: what the compiled release reads of a block's cells: their statistics joined (keys,
#: counts, sums) and where each starts, the integers (kl, ku, ñ, noise, K; K = −1: the
#: cell released in Python), the floats (centre, pivot share, ε_S) and the sides' bins
_ReleaseArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                       np.ndarray, np.ndarray]


def _split_of(plan: DescribePlan, tier: Tier) -> tuple[int, float, float]:
    """(K with k = 2^K, −1 where k is not a power of two in range; ε_S; the pivot's
    share) of a split: what the compiled release reads of it."""
    k, limit = tier.sum_sensitivity, _RELEASE_LIMIT
    return (k.bit_length() - 1 if 0 < k < limit and not k & (k - 1) else -1,
            tier.sum_epsilon, pivot_share(plan.count_epsilon, tier.sum_epsilon))


def _release_rows(plan: DescribePlan, cells: Sequence[CellDraw],
                  work: Sequence[tuple[int, Tier, float, CellStatistics, int | None]],
                  drawn: Sequence[tuple[int, int, list[int]]]) -> _ReleaseArrays:
    """:data:`_ReleaseArrays` of a block, cell after cell (any cells: integers past
    int64 too); :func:`_release_columns` makes the same arrays column by column."""
    sides: list[tuple[int, int]] = []  # the lower and upper sides' bins
    given: list[tuple[float, float, float]] = []  # centre, pivot_share, ε_S
    ints: list[tuple[int, int, int, int, int]] = []  # steps, ñ, noise, K (−1: Python)
    parts: list[CellStatistics] = []
    # per split (a few a block): K with k = 2^K (−1: k not a power of two in range), ε_S
    # and the pivot's share
    splits: dict[int, tuple[int, float, float]] = {}
    empty_stats, limit, i64 = CellStatistics.empty(), _RELEASE_LIMIT, np.dtype(np.int64)
    for cell, (_, tier, centre, stats, noisy_n), (a, b, noises) in zip(cells, work, drawn,
                                                                       strict=True):
        split = splits.get(id(tier))
        if split is None:
            split = splits[id(tier)] = _split_of(plan, tier)
        if split[0] < 0 or len(noises) != 1 or noisy_n is None \
                or not -limit < noises[0] < limit or not -limit < noisy_n < limit \
                or not stats.keys.dtype == stats.counts.dtype == stats.sums.dtype == i64:
            parts.append(empty_stats)
            sides.append((0, 0))  # a bin of the grid (NaN-only: ±inf), never read
            given.append((0.0, 0.0, 1.0))
            ints.append((0, 0, 0, 0, -1))
            continue
        parts.append(stats)
        sides.append((cell.lower.bin_at(a), cell.upper.bin_at(b)))
        given.append((centre, split[2], split[1]))
        ints.append((a, b, noisy_n, noises[0], split[0]))
    at = np.zeros(len(cells) + 1, dtype=np.int64)
    np.cumsum([len(p.keys) for p in parts], out=at[1:])
    empty = np.zeros(0, dtype=np.int64)
    keys = np.concatenate([empty] + [p.keys for p in parts])
    counts = np.concatenate([empty] + [p.counts for p in parts])
    sums = np.concatenate([empty] + [p.sums for p in parts])
    return (keys, counts, sums, at, np.array(ints, dtype=np.int64).reshape(-1, 5),
            np.array(given, dtype=np.float64).reshape(-1, 3),
            np.array(sides, dtype=np.int64).reshape(-1, 2))


def _side_bins(streams: list[CandidateStream], steps: np.ndarray) -> np.ndarray:
    """``[s.bin_at(k) for s, k in zip(streams, steps)]`` as int64: a block's cells share
    a few streams (a column's anchored cells one), so each stream is grown once to its
    farthest step and its made bins read at every step of its cells (the same bins:
    :meth:`~dprect.core.tail_bounds.CandidateStream.bin_at` reads the made list)."""
    # the streams told apart by identity, at once (CPython's id is the object's address,
    # an unsigned word: uint64 holds any)
    ids = np.fromiter(map(id, streams), dtype=np.uint64, count=len(streams))
    _, firsts, which = np.unique(ids, return_index=True, return_inverse=True)
    if 4 * len(firsts) > len(streams) or (len(steps) and int(steps.min()) < 0):
        return np.array([s.bin_at(k) for s, k in zip(streams, steps.tolist(), strict=True)],
                        dtype=np.int64)
    return grouped_side_bins([streams[f] for f in firsts.tolist()], which, steps)


def grouped_side_bins(streams: Sequence[CandidateStream], which: np.ndarray,
                      steps: np.ndarray) -> np.ndarray:
    """``[streams[w].bin_at(k) for w, k in zip(which, steps)]`` as int64, every step
    ≥ 0: each stream grown once to its farthest step and its made bins read at every
    step of its cells (:func:`_side_bins` once it has told the streams apart; a caller
    that knows each cell's stream — a column's one pooled pair — gives ``which``
    itself). A stream no cell reads is not grown."""
    out = np.zeros(len(which), dtype=np.int64)
    # each stream's cells as one slice of the cells ordered by stream (one sort, not a
    # pass over every cell per stream)
    order = np.argsort(which, kind="stable")
    ends = np.cumsum(np.bincount(which, minlength=len(streams)))
    for u, stream in enumerate(streams):
        at = order[ends[u - 1] if u else 0:ends[u]]
        if not len(at):
            continue
        mine = steps[at]
        stream.bin_at(int(mine.max()))  # made that far (an IndexError past its last)
        out[at] = stream.made()[mine]
    return out


def _release_columns(plan: DescribePlan, cells: Sequence[CellDraw],
                     work: Sequence[tuple[int, Tier, float, CellStatistics, int | None]],
                     drawn: Sequence[tuple[int, int, list[int]]]) -> _ReleaseArrays | None:
    """:func:`_release_rows`'s arrays made a column at a time (each a pass over the
    block's cells, not a loop of a dozen steps a cell), or None where an integer does
    not fit int64 or the joined statistics are not int64 (then :func:`_release_rows`
    makes them, cell after cell). The same arrays: a cell the compiled release cannot
    make (:func:`_release_rows`'s test, here on the arrays) gets the same placeholder
    row and no statistics."""
    n = len(cells)
    tiers: dict[int, Tier] = {}
    index: dict[int, int] = {}
    for w in work:  # the block's splits (a few), in order of first use
        if id(w[1]) not in index:
            index[id(w[1])] = len(index)
            tiers[id(w[1])] = w[1]
    of = np.fromiter((index[id(w[1])] for w in work), dtype=np.int64, count=n)
    split = [_split_of(plan, t) for t in tiers.values()]
    k_bits = np.array([s[0] for s in split], dtype=np.int64)[of]
    try:
        noise = np.array([d[2][0] if len(d[2]) == 1 else 0 for d in drawn], dtype=np.int64)
        noisy = np.array([0 if w[4] is None else w[4] for w in work], dtype=np.int64)
        steps = np.array([(d[0], d[1]) for d in drawn], dtype=np.int64).reshape(-1, 2)
    except OverflowError:  # an integer past int64: cell after cell
        return None
    limit = _RELEASE_LIMIT
    one = np.fromiter((len(d[2]) == 1 for d in drawn), dtype=bool, count=n)
    has_n = np.fromiter((w[4] is not None for w in work), dtype=bool, count=n)
    good = ((k_bits >= 0) & one & has_n & (-limit < noise) & (noise < limit)
            & (-limit < noisy) & (noisy < limit))
    stats = [w[3] for w in work]
    if not good.all():
        empty_stats = CellStatistics.empty()
        stats = [s if ok else empty_stats for s, ok in zip(stats, good.tolist(), strict=True)]
    at = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter((len(s.keys) for s in stats), dtype=np.int64, count=n),
              out=at[1:])
    empty = np.zeros(0, dtype=np.int64)
    keys = np.concatenate([empty] + [s.keys for s in stats])
    counts = np.concatenate([empty] + [s.counts for s in stats])
    sums = np.concatenate([empty] + [s.sums for s in stats])
    i64 = np.dtype(np.int64)
    if not keys.dtype == counts.dtype == sums.dtype == i64:
        return None
    centre = np.fromiter((w[2] for w in work), dtype=np.float64, count=n)
    ints, given, sides = release_rows_of(
        good, steps, noisy, noise, k_bits, centre,
        np.array([s[2] for s in split], dtype=np.float64)[of],
        np.array([s[1] for s in split], dtype=np.float64)[of],
        lambda ok, low, high: (_side_bins([cells[i].lower for i in ok.tolist()], low),
                               _side_bins([cells[i].upper for i in ok.tolist()], high)))
    return keys, counts, sums, at, ints, given, sides


def release_rows_of(good: np.ndarray, steps: np.ndarray, noisy: np.ndarray, noise: np.ndarray,
                    k_bits: np.ndarray, centre: np.ndarray, share: np.ndarray,
                    eps_s: np.ndarray,
                    side_bins: Callable[[np.ndarray, np.ndarray, np.ndarray],
                                        tuple[np.ndarray, np.ndarray]]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The integers (kl, ku, ñ, noise, K), floats (centre, pivot share, ε_S) and sides'
    bins of :data:`_ReleaseArrays` from per-cell arrays: a ``good`` cell's own values
    (its sides' bins read off its streams, ``side_bins(cells, lower steps, upper
    steps)`` = the bins of those cells' lower and upper streams at those steps:
    :func:`_side_bins`, :func:`grouped_side_bins`), any other the placeholder row the
    compiled release leaves to Python (K = −1)."""
    n = len(good)
    ints = np.zeros((n, 5), dtype=np.int64)
    ints[:, 4] = -1
    given = np.zeros((n, 3), dtype=np.float64)
    given[:, 2] = 1.0
    sides = np.zeros((n, 2), dtype=np.int64)
    if good.any():
        ok = np.flatnonzero(good)
        ints[ok, 0], ints[ok, 1] = steps[ok, 0], steps[ok, 1]
        ints[ok, 2], ints[ok, 3], ints[ok, 4] = noisy[ok], noise[ok], k_bits[ok]
        given[ok, 0], given[ok, 1], given[ok, 2] = centre[ok], share[ok], eps_s[ok]
        sides[ok, 0], sides[ok, 1] = side_bins(ok, steps[ok, 0], steps[ok, 1])
    return ints, given, sides


def _bounds_and_pivots(plan: DescribePlan, sides: np.ndarray, given: np.ndarray,
                       wanted: np.ndarray) -> np.ndarray:
    """(L, U, p) of a block's cells as rows of floats: L and U the edges of the sides'
    bins (:func:`~dprect.core.tail_bounds.bin_edges`: ``CandidateStream.value``'s floats),
    p :func:`choose_pivot` of each ``wanted`` cell — compiled
    (:func:`~dprect.core.release_jit.pivot_block`, from ``given`` = (centre, share, ε_S)),
    and by ``choose_pivot`` itself for a cell the compiled code leaves to it: once for
    each distinct (L, c, U, ε_S) of those cells (:func:`_python_pivots`)."""
    from dprect.core import release_jit  # loaded with the compiled samplers (numba)

    out = np.empty((len(sides), 3), dtype=np.float64)
    out[:, 0] = bin_edges(sides[:, 0], upper=False)
    out[:, 1] = bin_edges(sides[:, 1], upper=True)
    lower, upper = out[:, 0].copy(), out[:, 1].copy()
    centre, eps_s = given[:, 0].copy(), given[:, 2].copy()
    pivot, ok = np.zeros(len(sides), dtype=np.float64), np.zeros(len(sides), dtype=np.int64)
    release_jit.pivot_block(lower, upper, centre, given[:, 1].copy(), plan.count_epsilon,
                            eps_s, pivot, ok)
    left = np.flatnonzero(wanted & (ok == 0))
    if len(left):
        pivot[left] = _python_pivots(np.stack([lower[left], centre[left], upper[left],
                                               eps_s[left]], axis=1), plan.count_epsilon)
    out[:, 2] = pivot
    return out


def _python_pivots(args: np.ndarray, count_epsilon: float) -> np.ndarray:
    """:func:`choose_pivot` ``(L, c, U, ε_n, ε_S)`` of each row (L, c, U, ε_S) of ``args``
    (float64), made once for each distinct row: a pure function of its five floats, so
    rows of the same bits (±0 and every NaN kept apart: the rows are compared by their
    bits) get the same pivot. The pivots the compiled code leaves to Python are those
    whose two candidate costs are too close to order without CPython's ``math.hypot``
    (:func:`~dprect.core.release_jit.pivot_block`) — on a block of tiny groups, cells
    with the same bounds around a centre near their midpoint: about 7% of a block's
    cells, of a few dozen distinct rows (issue #42)."""
    _, first, inverse = np.unique(np.ascontiguousarray(args).view(np.int64), axis=0,
                                  return_index=True, return_inverse=True)
    made = np.array([choose_pivot(lo, c, hi, count_epsilon, e)
                     for lo, c, hi, e in args[first].tolist()], dtype=np.float64)
    return made[inverse.reshape(-1)]


def _cell_draw(plan: DescribePlan, tier: Tier, centre: float, stats: CellStatistics,
               row: int, tails: tuple[np.ndarray, np.ndarray] | None = None,
               scales: tuple[tuple[int, int], ...] | None = None) -> CellDraw:
    """What the cell draws from (:class:`~dprect.core.cell_draws.CellDraw`): its sides'
    tail counts (``tails`` when made already: :func:`data_tails`) and streams, and its
    noises' scales (``scales`` when made already: :func:`_noise_scales`)."""
    lower_tails, upper_tails = data_tails(stats) if tails is None else tails
    made = stats.streams  # the candidates the statistics made, if any, read on
    lower, upper = (made if made is not None and made[0].centre == centre
                    else shared_streams(centre))
    return CellDraw(lower_tails, upper_tails, lower, upper, tier,
                    _noise_scales(plan, tier) if scales is None else scales, row)


def _noise_scales(plan: DescribePlan, tier: Tier) -> tuple[tuple[int, int], ...]:
    """The (s, t) of each noise a cell of split ``tier`` draws, DLap at scale t/s, in
    order: the sum's (none on a bounds-alone or count-only plan), then the sum of
    squares' (only when a variance or std is asked: §17). Public: the plan's alone."""
    noises: list[tuple[int, int]] = []
    sum_scale = tier.sum_scale
    if plan.statistics and sum_scale is not None:
        noises.append((sum_scale.denominator, sum_scale.numerator))
        squares = plan.squares_scale
        if squares is not None:
            noises.append((squares.denominator, squares.numerator))
    return tuple(noises)


def _released(plan: DescribePlan, cell: CellDraw, centre: float, stats: CellStatistics,
              noisy_n: int | None, kl: int, ku: int, noises: list[int]
              ) -> tuple[Cell, float | None]:
    """The cell released from its draws: the sides' steps ``kl``, ``ku`` and its noises
    (:func:`_cell_draw`'s, in order); post-processing only."""
    tier = cell.tier
    assert isinstance(tier, Tier)
    lo, hi = cell.lower.value(kl), cell.upper.value(ku)
    if not plan.statistics:
        return Cell(lo, hi), None
    assert noisy_n is not None
    if not noises:  # count only: no sum noise is drawn
        count_only = float(max(noisy_n, 0))
        return Cell(lo, hi, count_only, intervals=query_intervals(
            ("count",), plan.interval_level, plan.count_epsilon, tier.sum_epsilon,
            tier.sum_sensitivity, lo, hi, centre, 0.0, noisy_n, None, count_only, None,
            None)), None
    pivot = choose_pivot(lo, centre, hi, plan.count_epsilon, tier.sum_epsilon)
    s_int, gamma = _sum_and_step(stats, kl, ku, lo, hi, pivot, tier.sum_sensitivity)
    noisy_s = s_int + noises[0]
    count = max(noisy_n, 0)
    total, mean = released_sum_mean(pivot, gamma, noisy_s, noisy_n, lo, hi)
    want = set(plan.statistics)
    spread: tuple[float | None, float | None] = (None, None)
    spread_spans: tuple[tuple[str, float, float], ...] = ()
    if plan.squares_scale is not None:  # after the sum noise: a variance or std asked
        q_int = released_squares(stats, kl, ku, lo, hi, plan.squares_sensitivity)
        noisy_q = q_int + noises[1]
        spread = released_variance(noisy_q, noisy_n, mean, lo, hi, plan.squares_sensitivity)
        spread_spans = spread_intervals(
            plan.statistics, plan.interval_level, noisy_q, noisy_n, noisy_s, mean, pivot,
            gamma, plan.count_epsilon, tier.sum_epsilon, tier.sum_sensitivity,
            plan.squares_epsilon, lo, hi, plan.squares_sensitivity)
    # the cell's split is a public function of its released count: its sum's ε and clip
    # are public, so the intervals stay post-processing (docs/privacy.md §15, §17)
    spans = query_intervals(plan.statistics, plan.interval_level, plan.count_epsilon,
                            tier.sum_epsilon, tier.sum_sensitivity, lo, hi, pivot, gamma,
                            noisy_n, noisy_s, float(count), total, mean) + spread_spans
    return Cell(lo, hi, float(count) if "count" in want else None,
                total if "sum" in want else None, mean if "mean" in want else None,
                spans, spread[0] if "variance" in want else None,
                spread[1] if "std" in want else None), mean


def released_sum_mean(pivot: float, gamma: float, noisy_s: int, noisy_n: int,
                      lower: float, upper: float) -> tuple[float, float]:
    """The released sum p·max(ñ, 0) + γ·S̃ and mean min(max(p + γ·S̃/max(1, ñ), L), U)
    of a cell (post-processing of the noisy count ñ and noisy sum S̃: privacy.md §11).

    In floats when every step stays finite (the usual case, bit for bit as before).
    When one overflows — γ near the float range after a side drawn far out, or S̃ a huge
    integer at a small ε (float(S̃) raises past 1.8·10^308) —, both are computed exactly
    as rationals instead: the mean is then clamped into [L, U] (finite), and the sum is
    rounded to the nearest float, saturating at ±(largest float) when its exact value
    lies beyond the float range; never ±inf or NaN, never an exception."""
    try:
        centred = gamma * noisy_s
        total = pivot * max(noisy_n, 0) + centred
        mean = pivot + centred / max(1, noisy_n)
    except OverflowError:
        total = mean = math.nan
    if not (math.isfinite(total) and math.isfinite(mean)):
        exact = Fraction(gamma) * noisy_s
        total = _saturated(Fraction(pivot) * max(noisy_n, 0) + exact)
        mean = _saturated(Fraction(pivot) + exact / max(1, noisy_n))
    return total, min(max(mean, lower), upper)


def _saturated(q: Fraction) -> float:
    """The float nearest the rational ``q``, or ±(the largest float) beyond the range."""
    try:
        x = float(q)
    except OverflowError:
        x = math.inf if q > 0 else -math.inf
    return x if math.isfinite(x) else math.copysign(_LARGEST, x)


_LARGEST = float(np.finfo(np.float64).max)


def _sum_and_step(stats: CellStatistics, lower_step: int, upper_step: int, lower: float,
                  upper: float, pivot: float, sensitivity: int) -> tuple[int, float]:
    """(S, γ as a float): S = ⌊T/γ + 1/2⌋ (0 when γ = 0) for T = ``centred_sum_at(…)`` and
    γ = w/k exactly, w = max(U − p, p − L, 0) (so |clamp(x) − p| ≤ k·γ holds without
    rounding; ⌊· + 1/2⌋ is non-decreasing and commutes with adding an integer, so a row
    that moves T by at most k·γ moves S by at most k), and float(γ) (0 when that
    overflows) — the rationals' values (tests/describe_reference.py's ``exact_step`` and
    ``integer_sum``), computed on integers: T = acc·2^base
    and w = max(U − p, p − L, 0) = W·2^e are dyadic, so S = ⌊T·k/w + 1/2⌋ =
    ⌊(2·num + den)/(2·den)⌋ with T·k/w = num/den, and float(w/k) is the correctly
    rounded quotient of two integers (as Fraction's float is). No Fraction objects: the
    driver makes one per cell."""
    acc, base = centred_sum_dyadic(stats, lower_step, upper_step, lower, upper, pivot)
    (lm, le), (um, ue), (pm, pe) = dyadic(lower), dyadic(upper), dyadic(pivot)
    e = min(le, ue, pe)
    lo_i, hi_i, p_i = lm << (le - e), um << (ue - e), pm << (pe - e)
    w = max(hi_i - p_i, p_i - lo_i, 0)  # w·2^e
    if w == 0:
        return 0, 0.0
    k = int(sensitivity)
    shift = base - e  # T·k/w = acc·k·2^shift / w
    num, den = (acc * k << shift, w) if shift >= 0 else (acc * k, w << -shift)
    s_int = (2 * num + den) // (2 * den)
    try:
        gamma = (w << e) / k if e >= 0 else w / (k << -e)
    except OverflowError:
        gamma = 0.0
    return s_int, gamma


def describe_cell(values: np.ndarray, plan: DescribePlan, rng: RandomSource,
                  anchor: float = 0.0) -> Cell:
    """One (group, column) from its finite values, all from ``rng``: the count's noise,
    then (by its released value, :meth:`DescribePlan.tier_index`) the centre — or
    ``anchor`` on an anchored split (a one-cell run has no other group: 0.0 unless a
    caller gives a public value) —, the lower side, the upper side, the sum noise."""
    x = np.asarray(values, dtype=np.float64)
    noisy = _noisy_count(plan, len(x), rng)
    tier = plan.tiers[plan.tier_index(noisy)]
    centre = (float(anchor) if tier.anchored else
              draw_centre_from_counts(*centre_counts(x), tier.sign_rate,
                                      tier.magnitude_rate, rng))
    return finish_cell(plan, tier, centre, cell_statistics(x, centre), noisy, rng)


def checked_names(plan: DescribePlan, groups: Sequence[Any], columns: Sequence[str]
                  ) -> tuple[list[Any], list[str]]:
    if not isinstance(plan, DescribePlan):
        raise ParameterError(f"plan must be a DescribePlan, got {type(plan).__name__}")
    cols = [str(c) for c in columns]
    if len(cols) != plan.columns:
        raise ParameterError(f"{len(cols)} column names for a plan of {plan.columns}")
    group_list = list(groups)  # [None] when ungrouped; [] when a private selection kept none
    if (i := repeat_at(group_list)) is not None:
        raise ParameterError(f"group {group_list[i]!r} is listed twice")
    return group_list, cols



@dataclass(frozen=True)
class DescribeResult:
    """Per (group, column): lower, upper and the asked statistics; what was clipped is
    not released. ``cells[g][j]``; ``groups`` is ``[None]`` for an ungrouped run."""

    columns: list[str]
    groups: list[Any]
    cells: Sequence[list[Cell]]
    guarantee: Guarantee
    plan: DescribePlan
    seeded: bool = False
    _rows: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per (group, column) in draw order (a results table): the bounds, each
        asked statistic with its interval, and the small-group flag
        :data:`BELOW_ROW_NEED` — the released count below the plan's
        :attr:`~DescribePlan.rows_needed` (:func:`~dprect.core.intervals.below_need`, the
        rule the record and the table use; None when no count was released)."""
        counted = "count" in self.plan.statistics
        need = self.plan.rows_needed  # public: the plan's, as its record states it
        out = []
        for gi, g in enumerate(self.groups):
            for j, c in enumerate(self.columns):
                cell = self.cells[gi][j]
                row: dict[str, Any] = {"group": g, "column": c, "lower": cell.lower,
                                       "upper": cell.upper}
                for s in self.plan.statistics:
                    row[s] = getattr(cell, s)
                    span = cell.interval(s)
                    row[f"{s}_low"], row[f"{s}_high"] = span if span else (None, None)
                row[BELOW_ROW_NEED] = below_need(cell.count if counted else None, need)
                out.append(row)
        return out

    def cell(self, column: str, group: Any = None) -> Cell:
        if column not in self.columns or group not in self.groups:
            raise ParameterError(f"no result for column {column!r}, group {group!r}")
        return self.cells[self.groups.index(group)][self.columns.index(column)]

    def to_json(self) -> dict[str, Any]:
        """The result as JSON-ready values (every result's call: ``to_json``)."""
        return grouped_json(self)

    #: the older name of :meth:`to_json` (kept: callers use it)
    to_dict = to_json


def run_describe(plan: DescribePlan, values: Mapping[tuple[Any, int], np.ndarray],
                 groups: Sequence[Any], columns: Sequence[str], rng: RandomSource,
                 mapper: Mapper = map, parts: int = 1) -> DescribeResult:
    """Every (group, column) of a run from arrays. ``values[(group, j)]``: column j's
    values in ``group`` (any order; non-finite ones are left out; a missing entry is no
    rows). ``groups``: the PUBLIC list, in draw order ([None] when ungrouped); entries for
    other groups are ignored. The arrays are reduced to the statistics every engine
    computes (:func:`~dprect.core.describe_stats.bin_statistics`, the
    :data:`~dprect.core.statistic.QUERY` mechanism's), then drawn in ``parts`` blocks of
    groups through ``mapper`` (:func:`describe_blocks`: the same result for any
    ``parts`` and mapper) — one path for arrays and engines alike."""
    group_list, cols = checked_names(plan, groups, columns)
    bins = {}
    for gi, g in enumerate(group_list):
        for j in range(len(cols)):
            x = values.get((g, j))
            if x is None:
                continue
            x = np.asarray(x, dtype=np.float64).ravel()
            x = x[np.isfinite(x)]
            if len(x):
                bins[(gi, j)] = bin_statistics(x, plan.squares_scale is not None)
    blocks = bin_blocks(bins, len(cols), group_blocks(len(group_list), parts))
    return describe_blocks(plan, blocks, group_list, cols, rng, mapper)


__all__ = [
    "ANCHOR_BITS",
    "CENTRE_CAP",
    "CENTRE_ROWS_FACTOR",
    "CENTRE_SHARE",
    "CENTRE_TIERS",
    "RUNAWAY_STEPS",
    "SIDES_SHARE",
    "SMALL_STRIDE",
    "SPREAD",
    "SQUARES_SHARE",
    "STATISTICS",
    "SUMMED",
    "SUM_FRACTION_BITS",
    "SUM_SHARE",
    "TARGET_FACTOR",
    "BlockDraws",
    "Cell",
    "CellBlock",
    "DescribePlan",
    "DescribeResult",
    "Mapper",
    "SmallPools",
    "Tier",
    "anchor_pools",
    "centre_rows_at",
    "checked_names",
    "choose_pivot",
    "column_centres",
    "describe_block",
    "describe_blocks",
    "describe_cell",
    "describe_stream",
    "finish_cell",
    "finish_small",
    "group_blocks",
    "grouped_side_bins",
    "merge_histograms",
    "pivot_share",
    "plan_describe",
    "pool_anchor",
    "query_split",
    "release_rows_of",
    "released_cells",
    "run_describe",
    "small_centre",
    "small_pools",
]
