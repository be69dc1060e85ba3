"""The quantile box: the rectangle's third method, per-feature private bounds of the positive
rows aimed at a target of clipped rows (issue #44; proof in docs/privacy.md §16).

RandMargins and the composition baseline are sized for a high-probability guarantee: each
side gives up about Δ/2 rows before its interior point, with Δ ≈ (4/ε)·ln(m/β). With few
positives for the dimension their rectangle is empty. A side aimed at a target t of
clipped rows by describe's step mechanism (:mod:`dprect.core.step_exponential`,
docs/privacy.md §11) degrades gracefully instead: it gives up about t plus a few times
1/ε rows, never a worst-case Δ. Per axis j, on its public grid {0, …, m − 1} (grid
indices: the feature's public grid or the float order's 2^64 keys):

1. **Centre** (general shape). The axis's grid is cut into B ≤ 2^:data:`CENTRE_BITS`
   public coarse bins of 2^s points (s = max(0, bitlen(m − 1) − CENTRE_BITS); for the
   float order 2^52 keys, one binade); bin b is drawn with probability
   ∝ exp(ε·depth(b)), depth(b) = min(#{x in bins ≤ b}, #{x in bins ≥ b}) — the
   interior point's depth mechanism on the coarse grid; adding a row raises every depth
   by 0 or 1 (a monotone score), so at rate ε (not ε/2) it is ε-DP and ε-bounded-range
   under add/remove (:func:`~dprect.core.interior_point.sample_unimodal`, exact). The
   centre c = b·2^s. The origin-anchored shape has the public centre c = 0 and no draw.
   An aimed box (step 3) on the float order draws b ∝ π(b)·exp(ε·depth(b)), the bin
   holding 0.0 weighted π = 2^:data:`ZERO_WEIGHT_BITS` (a public base measure: the same
   charge, Lemma QB1′), so that on data around zero, whose depth is flat over the empty
   binades between the smallest rows of each sign, c is −0.0 and its sides walk few
   magnitude points (step 2) to the data.
2. **Sides.** The candidates are public functions of c: U_0 = c and U_k = c + o_k on the
   hi side, L_0 = c and L_k = c − o_k on the lo side, o_k the distinct values of
   ⌊2^(s + i/r)⌋ (i = 0, 1, …; r = :data:`STEPS_PER_OCTAVE`), cut at the grid's end
   (whose index is the last candidate). A side draws its step k with probability
   ∝ exp(−ε·max(q_k − t, 0) − μ·k) (:func:`~dprect.core.step_exponential.draw_step`,
   exact), q_k = #{x > U_k} (hi) or #{x < L_k} (lo), t the side's target of clipped rows
   (:func:`side_target`), μ = :data:`~dprect.core.step_exponential.DECAY`. Adding a row
   raises some q_k of ONE side by one (a row > c is in hi tails only, < c in lo tails
   only, = c in none), so the pair is ε-DP and ε-bounded-range (parallel composition on
   disjoint rows; docs/privacy.md §11, Lemma D3). On the float order an aimed side's
   candidates also hold public magnitude points (:func:`magnitude_points`): an offset
   counts keys there, and one step of a ~2^62-key offset (from a tiny centre, or across
   zero) jumped ~190 binades past the data; they are few towards zero and step a binade
   next to ±1, so that a side from a centre among the tiny floats reaches data around
   zero in few steps (Lemma QB4), and the centre keeps its own finer steps within
   :data:`CENTRE_REACH_BINADES` of it. An unaimed side keeps the centre's offsets alone,
   except from a centre among the tiny floats, |c| < 2^−:data:`TINY_BINADES`
   (:func:`tiny_centre`; standardised features, whose plain centre lands there): it
   walks c, the magnitude points beyond c and the grid's end — 14–19 steps to data at
   ±1 to ±4 where the centre's offsets took 26–31, each costing μ (Lemma QB4's count at
   t = 0). Public functions of c: the proof is unchanged.
3. **Aimed sides** (t > 0) draw with the *bracket score* at the rate a = ε/2:
   ∝ exp(−a·((q_k − t)⁺ + (t − q_{k−1})⁺) − μ_a·k) (q_{−1} = +∞; :func:`bracket_tails`),
   which charges nothing to the step holding the t-th row from the outside, the rows
   clipped beyond t to a step inside it, and the rows the previous candidate clipped
   short of t to a step past it — so every step past the data's last step costs a·t.
   A row moves each log-weight by at most a (docs/privacy.md §16, Lemma QB3): 2a-DP,
   2a-bounded-range, the pair ε. **The brake**: a side lands more than K steps past the
   first candidate beyond its last row with probability ≤ e^{−a·t−μ_a(K+1)}/(1 − e^{−μ_a})
   (:func:`overshoot_bound`, Lemma QB3′), where the score −a·|q_k − t| it replaces charged
   every step past the data the same a·t as a step that clips a whole step's rows too
   many, so at a hard edge only the prior held it back (docs/results.md §4.1b).

The rectangle is [L, U] on every axis; the rows it leaves out on axis j are exactly
q_lo + q_hi. Per axis two mechanisms (one for the origin shape): R = 2d (d) ε-bounded-range
mechanisms in all, composed by the planner as it composes the composition baseline's R
rounds (:func:`~dprect.core.accounting.composition_br`). Nothing here cuts a row.

**The engine's part** (:meth:`dprect.core.engine.Engine.histograms`): the counts of the
positives between public sort-value thresholds, every axis in one query (one pass over the
rows): first the coarse bins' ends of every axis (the centres), then every axis's sides'
candidates, public functions of its centre. The core draws everything — axis j from its
own stream (:func:`run_quantile_box`) — so every engine gives the identical box for a seed,
in two passes (one for the origin shape, which has no centre to draw).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from dprect.core import crmath
from dprect.core.domains import Domain, FloatOrder, Side
from dprect.core.engine import Engine
from dprect.core.errors import ParameterError
from dprect.core.interior_point import Pieces, sample_unimodal
from dprect.core.randomness import RandomSource, expect_draws
from dprect.core.step_exponential import DECAY, draw_step
from dprect.core.tail_bounds import centre_pieces_from_counts

#: about how many sampler calls an axis of the box makes (its centre and two sides:
#: measured ~144 at d = 1,024): a box announces its axes × this (public), so that a
#: process loads the compiled samplers from the fit's public size
#: (:func:`~dprect.core.randomness.expect_draws`)
DRAWS_AN_AXIS = 145
#: the centre's coarse grid: at most 2^CENTRE_BITS bins of 2^s grid points (a grid of up
#: to 2^16 points is its own coarse grid; the float order's bins are one binade, 2^52 keys)
CENTRE_BITS = 12
#: the float order's magnitude points (:func:`magnitude_offsets`) step r times per octave of
#: the binades from ±1 from one binade out; towards zero only up to 2^MAGNITUDE_FINE_OCTAVES
#: binades from ±1 (|x| ≥ 2^−16), then once per octave (2^−32, 2^−64, …, 2^−1024, 0):
#: a side crossing the ~2,000 binades between the smallest rows of each sign walks 6
#: steps a sign beyond 2^−16 instead of ~24 (docs/privacy.md §16, Lemma QB4)
MAGNITUDE_FINE_OCTAVES = 4
#: an aimed float-order side keeps its centre's own offsets at least this many binades
#: from the centre (beyond the Voronoi split with ±1): the magnitude points step a whole
#: binade next to ±1, too coarse for data within a binade or two of ±1 around a centre
#: there
CENTRE_REACH_BINADES = 2
#: an unaimed float-order side whose centre C has |C| < 2^−TINY_BINADES (:func:`tiny_centre`:
#: beyond the magnitude points' fine steps, 2^MAGNITUDE_FINE_OCTAVES binades from ±1)
#: walks the magnitude points alone, as an aimed side from the zero centre does: on data
#: around zero (standardised features) its plain centre lands among the tiny floats, and
#: its own offsets, counting keys, took 26–31 steps to data at ±1 (14–19 this way), each
#: costing μ — at N = 50 more than staying at C, so the box was empty (docs/algorithm.md
#: §10, docs/privacy.md §16 Lemma QB4)
TINY_BINADES = 1 << MAGNITUDE_FINE_OCTAVES
#: an aimed float-order box's centre: the coarse bin holding 0.0 (bins are binades; its
#: first point is −0.0, :func:`zero_centre`) carries the public base weight
#: 2^ZERO_WEIGHT_BITS, every other bin 1 — an exponential mechanism with a public base
#: measure, charged as the plain one (docs/privacy.md §16, Lemma QB1′). On data around zero
#: the depth is flat over the ~2,000 empty binades between the smallest rows of each sign;
#: with the weight C lands on the zero bin except with probability ≤ (B − 1)/2^22 < 2^−10
#: there (B = 4,095 bins), and a side from 0 walks ≤ 34 magnitude points to ±53 (Lemma
#: QB4) where one from a centre among the tiny floats walked up to 91. Elsewhere the
#: weight is worth ZERO_WEIGHT_BITS·ln 2 = 15.2 nats: the zero bin wins only where its
#: depth is within 15.2/ε₀ rows of the deepest bin's — data on both sides of 0
ZERO_WEIGHT_BITS = 22
#: the sides' offsets start 2^FINE_BITS times finer than a coarse bin (a bound inside the
#: centre's own bin)
FINE_BITS = 4
#: candidate offsets 2^(s − FINE_BITS + i/r): r steps per factor of 2 of the offset
STEPS_PER_OCTAVE = 2
#: r of an aimed side (target t > 0): finer steps, so that a bound aimed inside the data
#: is not one √2 jump of the offset from the rows it should clip (a monotone side keeps
#: r = 2: each step costs μ of prior, and with few rows the finer steps pull it inward)
AIMED_STEPS_PER_OCTAVE = 4
#: α, the default aim of a side: ⌊α·N⌋ clipped rows (the per-feature quantile box at
#: q = α and 1 − α of practice, docs/results.md §4.1: on classes that overlap, the tails
#: a side gives up hold more negatives than positives); applied when affordable
#: (:func:`side_target`)
AIM_SIDE_SHARE = Fraction(1, 50)
#: the default aims' total: a side's share is min(α, AIM_TOTAL_SHARE/R) (R sides), so
#: that the rows given up by design, at most 1 − (1 − 2·AIM_TOTAL_SHARE/R)^d ≤ 22% of N
#: at independent features, do not grow with d (2% a side at d ≤ 6)
AIM_TOTAL_SHARE = Fraction(1, 4)
#: the default aim is applied only when a side that clips none of its target rows is
#: charged at least this many nats, (ε_s/2)·t ≥ AIM_MIN_NATS: below it the aimed score
#: tells a bound at the target from one past the data hardly better than the prior
#: does, and only halves the side's rate (a small table keeps the monotone score at
#: t = 0). Measured (docs/results.md §4.1): breast cancer at ε = 4 (0.71 nats) aimed
#: missed 37% of its positives where the monotone box misses 5%; weather at ε = 0.5
#: (1.1 nats, 0.8–1.2 at auto's count) aimed has balanced error 0.21 against 0.43
AIM_MIN_NATS = Fraction(3, 4)
#: μ of an aimed side: describe's 1/2 whatever ε_s. Past the data every step is charged
#: a·t ≥ AIM_MIN_NATS, which at a small ε_s is not far above the prior's mass there,
#: Σ e^{−μk} ≈ 1/μ: with μ = ε_s (the monotone side's) a side lands past the data in a
#: good share of runs (weather at ε = 0.5: every side of a run at the data's end)
AIMED_DECAY = DECAY
#: the aimed sides' score, named in the plan for the guarantee check: "bracket", the
#: step holding the t-th row free (:func:`bracket_tails`; docs/privacy.md §16, Lemma QB3)
AIMED_SCORE = "bracket"


def coarse_shift(domain: Domain) -> int:
    """s: the centre's coarse bins hold 2^s grid points."""
    return max(0, (int(domain.size) - 1).bit_length() - CENTRE_BITS)


def coarse_bins(domain: Domain) -> int:
    """B, the number of coarse bins: ⌈m / 2^s⌉."""
    return ((int(domain.size) - 1) >> coarse_shift(domain)) + 1


@lru_cache(maxsize=64)
def _coarse_thresholds(domain: Domain) -> np.ndarray:
    s, bins = coarse_shift(domain), coarse_bins(domain)
    out = _sort_thresholds(domain, [((b + 1) << s) - 1 for b in range(bins - 1)])
    out.setflags(write=False)
    return out


def _sort_thresholds(domain: Domain, indices: Sequence[int]) -> np.ndarray:
    """The sort values t_i with (sort value ≤ t_i ⇔ grid index ≤ indices[i]): the lo-side
    cut thresholds (:meth:`Domain.cut_threshold`), in the engine's dtype."""
    return np.array([domain.cut_threshold(int(i), "lo") for i in indices],
                    dtype=domain.sort_dtype)


def offsets(domain: Domain, room: int, r: int = STEPS_PER_OCTAVE) -> list[int]:
    """o_1 < o_2 < …: the distinct ⌊2^(s + i/r)⌋ below ``room`` (public;
    :func:`grid_offsets` of the domain's size)."""
    return grid_offsets(int(domain.size), room, r)


def grid_offsets(grid_size: int, room: int, r: int = STEPS_PER_OCTAVE) -> list[int]:
    """:func:`offsets` on a grid of ``grid_size`` points: the distinct ⌊2^(s + i/r)⌋ below
    ``room``, s = max(0, bitlen(m − 1) − :data:`CENTRE_BITS` − :data:`FINE_BITS`)."""
    s = max(0, (int(grid_size) - 1).bit_length() - CENTRE_BITS - FINE_BITS)
    steps = crmath.octave_steps(r)  # 2^(j/r) correctly rounded: the same bits anywhere
    out: list[int] = []
    i = 0
    while True:
        o = int(math.ldexp(steps[i % r], s + i // r))
        if o >= room:
            return out
        if not out or o > out[-1]:
            out.append(o)
        i += 1


def side_candidates(domain: Domain, centre: int, side: Side,
                    r: int = STEPS_PER_OCTAVE, magnitudes: bool = False,
                    alone: bool = False) -> list[int]:
    """The side's candidate bounds (grid indices), outward from ``centre``: c, c ± o_k
    inside the grid, then the grid's end (public; r steps per octave); with
    ``magnitudes`` (an aimed side) on the float order merged with the public magnitude
    points beyond c (:func:`magnitude_points`). An unaimed side keeps the centre's offsets
    alone: on a small table its centre often lies far from the data, and the merged
    list's extra steps (each costing the prior μ) held its sides at the centre (iris at
    ε = 1: 80% of the positives out, against 20% with bounds far past the data) — except
    from a centre among the tiny floats (``alone``, :func:`tiny_centre`), where it walks
    c, the magnitude points beyond c and the grid's end, as an aimed side from the zero
    centre does (s34-zero: standardised features)."""
    m = int(domain.size)
    if side == "hi":
        room = m - 1 - centre
        out = [centre] + [centre + o for o in offsets(domain, room, r)] + (
            [m - 1] if room > 0 else [])
    else:
        out = [centre] + [centre - o for o in offsets(domain, centre, r)] + (
            [0] if centre > 0 else [])
    if not magnitudes or not isinstance(domain, FloatOrder):
        return out
    # the float order: every point from its nearest anchor, c or ±1 (a Voronoi split of the
    # keys), so that the steps are the finer of the two lists wherever they lie and a side
    # walks no more steps than one list would (each step costs the prior μ) — except that
    # c keeps its own points within CENTRE_REACH_BINADES of it; 0 and the grid's end stay
    if centre == zero_centre() or alone:
        # the zero bin's centre (−0.0), or an unaimed side's tiny centre: its own offsets
        # count keys through the subnormals and the tiny binades (~50 steps to 2^−512);
        # the magnitude points there are an octave of binades apart (Lemma QB4: ≤ 34
        # steps from 0 to ±53)
        out = out[:1] + out[-1:]
    units = (FloatOrder.index_of(1.0), FloatOrder.index_of(-1.0))
    keep_always = {FloatOrder.index_of(0.0), 0, m - 1, centre}
    reach = CENTRE_REACH_BINADES << coarse_shift(domain)

    def unit_gap(p: int) -> int:
        return max(min(abs(p - u) for u in units), reach)

    points = magnitude_points(r)
    if side == "hi":
        beyond = points[bisect.bisect_right(points, centre):]
    else:
        beyond = points[:bisect.bisect_left(points, centre)]
    merged = {p for p in out if p in keep_always or abs(p - centre) <= unit_gap(p)}
    merged.update(p for p in beyond if p in keep_always or unit_gap(p) < abs(p - centre))
    return sorted(merged, reverse=side == "lo")


def magnitude_offsets(r: int, inward: bool) -> list[int]:
    """The magnitude points' offsets from ±1 in keys (2^52 keys a binade, the float order's
    coarse bin): ⌊2^(52 + i/r)⌋, i = 0, 1, … — one binade, then r steps per octave of the
    binades — below 2^64; ``inward`` (towards zero) those up to 2^(52 +
    :data:`MAGNITUDE_FINE_OCTAVES`), then 2^(52 + k), one per octave. Public."""
    base = coarse_shift(FloatOrder())
    fine = r * MAGNITUDE_FINE_OCTAVES if inward else r * (64 - base)
    steps = crmath.octave_steps(r)  # 2^(j/r) correctly rounded: the same bits anywhere
    out = [int(math.ldexp(steps[i % r], base + i // r)) for i in range(fine)]
    return out + [1 << k for k in range(base + fine // r, 64)]


@lru_cache(maxsize=8)
def magnitude_points(r: int = STEPS_PER_OCTAVE) -> tuple[int, ...]:
    """The float order's public magnitude points (grid indices, ascending): 0.0, ±1 and
    key(±1) ± o_k (:func:`magnitude_offsets`), i.e. the floats ±2^(±e) for e = 2^(i/r)
    binades, i = 0, 1, … (one binade, then r per octave of the binades from ±1) outwards
    to the ends, and towards zero only out to 16 binades (|x| ≥ 2^−16), then e = 32, 64,
    …, 1,024 and 0. On the float order an offset from the centre is counted in keys, about
    2^52 × the binades between: from a centre among the tiny floats, or across zero
    (where the keys of every float between the data's smallest magnitude and zero lie),
    the data's binades are a sliver of an offset ~2^62 keys, and one step of 2^(1/r) of
    it jumps ~190 binades (a bound 10^117 past data in [−50, 50], docs/results.md §4.1b).
    The magnitude points are a step of at most a factor 2^(1/r) of the binades between
    |x| and 1 (or one binade) wherever the data lie within 2^±16 — past data up to 2^5.3
    in magnitude the first of them lies within a factor 2 — whatever the centre
    (docs/privacy.md §16). Why so few: each step costs an aimed side the prior's
    μ_a = 1/2, and on data around zero its centre lies among the tiny floats (the
    centre's depth is flat over the empty binades between the smallest rows of each
    sign): from 1/16 of a binade and r per octave towards zero too, a side walked up to
    141 steps to data at ±50 (70 nats) — more than a small table's aim charges for
    staying at its centre, so the box was empty (2,000 rows in [−50, 50]^8 at ε = 1:
    a·(N/2 − t) = 52 nats). Now at most 91 (Lemma QB4, :func:`stall_bound`)."""
    fo = FloatOrder()
    m = int(fo.size)
    zero = fo.index_of(0.0)
    inward, outward = magnitude_offsets(r, True), magnitude_offsets(r, False)
    out = {zero}
    for anchor, lo_end, hi_end in ((fo.index_of(1.0), zero, m - 1),
                                   (fo.index_of(-1.0), 0, zero - 1)):
        up, down = (outward, inward) if anchor > zero else (inward, outward)
        out.update(anchor + o for o in up if o < hi_end - anchor)
        out.update(anchor - o for o in down if o < anchor - lo_end)
        out.add(anchor)
    return tuple(sorted(out))


@dataclass(frozen=True)
class _Steps:
    """A side's finite candidate list for :func:`draw_step` (only ``has`` is read)."""

    count: int

    def has(self, k: int) -> bool:
        return 0 <= k < self.count


def side_target(target_miss: float, positives: int | None, sides: int,
                side_epsilon: Fraction | float) -> int:
    """t: each side's target of clipped rows, the larger of the request's
    ⌊target_miss·N/sides⌋ and the default aim ⌊α_R·N⌋, α_R = min(:data:`AIM_SIDE_SHARE`,
    :data:`AIM_TOTAL_SHARE`/sides), where (ε_s/2)·⌊α_R·N⌋ ≥ :data:`AIM_MIN_NATS`; 0
    without N. Public: the request's share, the
    plan's ε_s and a public (or released) N. A side with t > 0 draws with the aimed
    score (:func:`run_quantile_box`)."""
    if positives is None:
        return 0
    n = max(int(positives), 0)
    asked = math.floor(float(target_miss) * n / sides) if target_miss else 0
    aim = math.floor(min(AIM_SIDE_SHARE, AIM_TOTAL_SHARE / sides) * n)
    if Fraction(side_epsilon) * aim < 2 * AIM_MIN_NATS:
        aim = 0
    return max(0, asked, aim)


def bracket_tails(q: np.ndarray, target: int) -> np.ndarray:
    """q′: the tail counts an aimed side's draw reads (the bracket score, docs/privacy.md
    §16, Lemma QB3), so that |q′_k − t| = (q_k − t)⁺ + (t − q_{k−1})⁺ with q_{−1} = +∞:
    q′_k = q_k where q_k ≥ t, q_{k−1} where q_{k−1} ≤ t, else t. Candidate k is charged
    nothing when its step, the grid points (L_{k−1}, … ] … up to U_k, holds the t-th row
    from the outside (q_k ≤ t ≤ q_{k−1}); a step inside it is charged the rows it clips
    beyond t, a step past it the rows the previous candidate already clipped short of t.
    Past the data's last row every step is charged t (q_{k−1} = 0), so the data's last
    step beats every step past the data by a·q_{k−1}, and the step holding the t-th row by
    a·t: the brake on overshoot past a hard edge (Lemma QB3′). Non-increasing, ≤ q_{k−1};
    one more entry than q's nonzero ones at most (a public grid's last candidate clips
    none)."""
    q = np.asarray(q, dtype=np.int64)
    t = int(target)
    prev = np.concatenate([[t], q[:-1]])  # q_{−1} = +∞ acts as t: no charge
    out = np.where(q >= t, q, np.minimum(prev, t))
    return out.astype(np.int64)


def overshoot_bound(aimed_rate: Fraction | float, target: int,
                    decay: Fraction | float = DECAY, steps: int = 0) -> float:
    """P(an aimed side lands more than ``steps`` candidate steps past the first candidate
    beyond its data's last row) ≤ e^{−a·t − μ·(steps + 1)}/(1 − e^{−μ}), for any data
    (docs/privacy.md §16, Lemma QB3′): the bracket score charges every step past that
    candidate a·t, the step holding the t-th row nothing. That first candidate itself lies
    at most one step (a factor 2^(1/:data:`AIMED_STEPS_PER_OCTAVE`) of the offset from the
    centre) past the last row. Public: the plan's a, μ and t."""
    a, mu = float(aimed_rate), float(decay)
    return math.exp(-a * int(target) - mu * (steps + 1)) / -math.expm1(-mu)


def stall_bound(aimed_rate: Fraction | float, target: int, rows: int, steps: int,
                decay: Fraction | float = DECAY) -> float:
    """P(an aimed side lands short of its data: on a candidate that clips all ``rows`` rows
    of its side) ≤ e^{μ·k_t − a·(rows − t)}/(1 − e^{−μ}), k_t ≤ ``steps`` the step holding
    the side's t-th row from the outside (docs/privacy.md §16, Lemma QB4): each such
    candidate k is charged a·(rows − t) and weighs e^{−a·(rows − t) − μk}, the step
    holding the t-th row is charged nothing. The walk from the centre to the data, in
    candidate steps, is what the float order's magnitude points keep short."""
    a, mu = float(aimed_rate), float(decay)
    log_ratio = mu * int(steps) - a * (int(rows) - int(target))
    return math.exp(min(log_ratio, 700.0)) / -math.expm1(-mu)


def tiny_centre(domain: Domain, centre: int) -> bool:
    """Whether ``centre`` (a grid index) lies among the float order's tiny floats,
    |C| < 2^−:data:`TINY_BINADES` (−0.0 included): from there an unaimed side walks the
    magnitude points alone (:func:`side_candidates` with ``alone``). A function of C and
    the domain only, as every candidate list is (docs/privacy.md §16, Lemma QB2)."""
    return isinstance(domain, FloatOrder) and (
        FloatOrder.index_of(-(2.0 ** -TINY_BINADES)) < centre
        < FloatOrder.index_of(2.0 ** -TINY_BINADES))


def zero_centre() -> int:
    """The first grid point of the float order's coarse bin holding 0.0: −0.0 (the bins
    are binades, offset by one key; no data value is −0.0, so its rows are the negatives
    and the positives). Public."""
    fo = FloatOrder()
    s = coarse_shift(fo)
    return (FloatOrder.index_of(0.0) >> s) << s


def _weighted(pieces: Pieces, point: int, weight: int) -> Pieces:
    """``pieces`` with grid point ``point`` repeated ``weight`` times: the piece holding it
    grows by weight − 1 and every later piece moves up as much — the law
    ∝ π(y)·exp(c·depth(y)) with π(point) = weight, π = 1 elsewhere, as an exponential
    mechanism on the stretched grid (:func:`_unweighted` maps a draw back)."""
    i = int(np.searchsorted(pieces.starts, np.uint64(point), side="right")) - 1
    extra = np.uint64(weight - 1)
    sizes = pieces.sizes.copy()
    starts = pieces.starts.copy()
    sizes[i] += extra
    starts[i + 1:] += extra
    return Pieces(starts, sizes, pieces.depths, pieces.epsilon,
                  int(pieces.grid_size) + weight - 1)


def _unweighted(y: int, point: int, weight: int) -> int:
    """A draw on :func:`_weighted`'s stretched grid, back on the grid: the ``weight``
    copies of ``point`` are ``point``."""
    return y if y < point else point if y < point + weight else y - (weight - 1)


def centre_from_counts(counts: np.ndarray, domain: Domain, rate: Fraction,
                       rng: RandomSource, favour_zero: bool = False) -> int:
    """The centre of an axis (a grid index: its coarse bin's first point), drawn
    ∝ exp(rate·depth) on the coarse bins from their histogram ``counts`` (the engine's
    answer to the axis's coarse thresholds, :func:`coarse_thresholds`); with
    ``favour_zero`` (an aimed box on the float order) ∝ π(b)·exp(rate·depth(b)), the bin
    holding 0.0 weighted π = 2^:data:`ZERO_WEIGHT_BITS` (public; Lemma QB1′)."""
    counts = np.asarray(counts, dtype=np.int64)
    keys = np.flatnonzero(counts)
    pieces = centre_pieces_from_counts(keys, counts[keys], grid_size=coarse_bins(domain))
    s = coarse_shift(domain)
    if not (favour_zero and isinstance(domain, FloatOrder)):
        return int(sample_unimodal(pieces, rate, rng)) << s
    zero, weight = zero_centre() >> s, 1 << ZERO_WEIGHT_BITS
    y = int(sample_unimodal(_weighted(pieces, zero, weight), rate, rng))
    return _unweighted(y, zero, weight) << s


def coarse_thresholds(domain: Domain) -> np.ndarray:
    """The coarse bins' ends as sort-value thresholds (the centre's histogram query)."""
    return _coarse_thresholds(domain)


def centre_query(domains: Sequence[Domain]) -> list[np.ndarray]:
    """The box's first histogram query (every axis's :func:`coarse_thresholds`, the
    centres'): a function of the public domains only, so it is known before ``auto``'s
    private count and an engine may answer it in the count's own pass (the count is any
    axis's total: every row lies in exactly one bin; issue #43)."""
    return [coarse_thresholds(dom) for dom in domains]


def tail_thresholds(domain: Domain, lo: list[int] | None, hi: list[int]) -> np.ndarray:
    """The sides' histogram query: the thresholds L_K − 1 < … < L_1 − 1 < U_0 < U_1 < …
    (ascending; lo q_k = #{x < L_k} = #{x ≤ L_k − 1}, hi q_k = #{x > U_k})."""
    lo_cuts = [] if lo is None else [v - 1 for v in reversed(lo) if v > 0]
    return _sort_thresholds(domain, lo_cuts + hi)


def tail_counts(counts: np.ndarray, lo: list[int] | None, hi: list[int]
                ) -> tuple[np.ndarray | None, np.ndarray]:
    """q_k of each side from the histogram ``counts`` of :func:`tail_thresholds`."""
    n_lo = 0 if lo is None else sum(1 for v in lo if v > 0)
    below = np.cumsum(np.asarray(counts, dtype=np.int64))  # below[i] = #{x ≤ threshold i}
    total = int(below[-1])
    hi_q = total - below[n_lo:n_lo + len(hi)]
    if lo is None:
        return None, hi_q
    lo_q = np.zeros(len(lo), dtype=np.int64)
    positive = [k for k, v in enumerate(lo) if v > 0]  # L_k > 0, in k order
    lo_q[positive] = below[:n_lo][::-1]
    return lo_q, hi_q


@dataclass(frozen=True)
class SideTrace:
    """One side's internals (tests and benchmarks only: data-dependent)."""

    axis: int
    side: Side
    centre: int
    step: int
    bound: int
    clipped: int


def run_quantile_box(engine: Engine, domains: list[Domain], *, origin: bool,
                     centre_rate: Fraction, side_epsilon: Fraction, target: int,
                     rng: RandomSource, decay: Fraction = DECAY,
                     aimed_rate: Fraction | None = None, aimed_decay: Fraction = DECAY,
                     trace: list[SideTrace] | None = None
                     ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The box (lo, hi) in grid indices (module docstring), in two histogram queries
    of every axis at once (:meth:`~dprect.core.engine.Engine.histograms`: one pass over
    the rows each): the coarse bins of every axis, then every axis's centre; the sides'
    candidates of every axis, then every axis's lo and hi side. Axis j draws from its own
    stream, ``RandomSource.stream(seeds[j])`` of ``rng.stream_seeds(d)``: its centre,
    its lo side, its hi side — so no axis's draws depend on the order the axes are
    served. With a target t > 0 the sides draw with the bracket score
    −a·((q_k − t)⁺ + (t − q_{k−1})⁺) − μ·k (:func:`bracket_tails`) at the rate
    a = ``aimed_rate`` (the plan's ε_s/2: the pair is ε_s-DP, docs/privacy.md §16,
    Lemma QB3) and the prior's decay ``aimed_decay``
    (:data:`AIMED_DECAY`), on :data:`AIMED_STEPS_PER_OCTAVE` steps per octave; with
    t = 0 the monotone score at ε_s and decay ``decay``."""
    if centre_rate <= 0 or side_epsilon <= 0 or target < 0:
        raise ParameterError("the quantile box needs rates > 0 and a target >= 0")
    aimed = target > 0
    if aimed and (aimed_rate is None or aimed_rate <= 0):
        raise ParameterError("a quantile box with a target needs its aimed rate > 0")
    rate = Fraction(aimed_rate) if aimed else Fraction(side_epsilon)  # type: ignore[arg-type]
    expect_draws(len(domains) * DRAWS_AN_AXIS)  # public: before the axes' sources
    streams = [RandomSource.stream(s) for s in rng.stream_seeds(len(domains))]
    if origin:
        centres = [0] * len(domains)
    else:
        coarse = engine.histograms(centre_query(domains))
        centres = [centre_from_counts(coarse[j], dom, centre_rate, streams[j], aimed)
                   for j, dom in enumerate(domains)]
    r = AIMED_STEPS_PER_OCTAVE if aimed else STEPS_PER_OCTAVE
    # an unaimed float-order side from a centre among the tiny floats walks the magnitude
    # points alone (a public function of C; docs/privacy.md §16, Lemma QB4)
    alone = [not aimed and not origin and tiny_centre(dom, c)
             for dom, c in zip(domains, centres, strict=True)]
    his = [side_candidates(dom, c, "hi", r, aimed or a, a)
           for dom, c, a in zip(domains, centres, alone, strict=True)]
    los = [None if origin else side_candidates(dom, c, "lo", r, aimed or a, a)
           for dom, c, a in zip(domains, centres, alone, strict=True)]
    fine = engine.histograms([tail_thresholds(dom, lo, hi)
                              for dom, lo, hi in zip(domains, los, his, strict=True)])
    lows, highs = [], []
    for j in range(len(domains)):
        lo_q, hi_q = tail_counts(fine[j], los[j], his[j])
        bound = {}
        for side, cands, q in (("lo", los[j], lo_q), ("hi", his[j], hi_q)):
            if cands is None or q is None:
                continue
            k = draw_step(bracket_tails(q, target) if aimed else q, _Steps(len(cands)),
                          target, rate, streams[j], aimed_decay if aimed else decay,
                          two_sided=aimed)
            bound[side] = cands[k]
            if trace is not None:
                trace.append(SideTrace(j, side, centres[j], k, cands[k],  # type: ignore[arg-type]
                                       int(q[k])))
        lows.append(bound.get("lo", 0))
        highs.append(bound["hi"])
    return tuple(lows), tuple(highs)


# -- the planner's expectation ------------------------------------------------------------
#: the model's candidate steps (:func:`predicted_clip`), in steps of 2^(1/r) of the
#: offset from the centre relative to the rows' scale σ: from σ/2^INSIDE_OCTAVES (a
#: side's innermost steps hold nearly all its rows) to σ·2^OUTSIDE_OCTAVES (past the
#: data: only the prior's mass, which the grid's end cuts somewhere)
INSIDE_OCTAVES = 2
OUTSIDE_OCTAVES = 8
#: the phases of the candidate steps against σ the model averages over (public offsets
#: against an unknown scale: any phase is as likely)
PHASES = 4
#: the model's room past the centre on a public grid, in the rows' scale σ: a grid chosen
#: to hold the data is taken to end about this many σ past the centre, where the steps end
#: (past the data a side draws from the prior's mass, which the grid's end cuts: at
#: μ = ε_s = 1/4 a grid ending 7σ past the mean leaves 1.21 rows a side clipped of 50,
#: one 10× wider 0.86, the model with no end 0.86 — docs/results.md §4.1's calibration).
#: The float order (:class:`~dprect.core.domains.FloatOrder`) keeps
#: :data:`OUTSIDE_OCTAVES` of room: its keys run far past any data
GRID_ROOM_SIGMAS = 5.0
#: the model's data width in coarse bins (:func:`predicted_axis_clip`'s centre): a binade
#: of the float order; a grid of fewer bins is all data
DATA_BINS = 16
#: where the unaimed float-order model (:func:`empty_bin_reach`) puts the data, seen from a
#: centre in an empty coarse bin: 1.0, the magnitude points' anchor (public; the data's
#: place is not). From a far bin the data's few binades are a sliver of the offset, so the
#: model moves little with it: at iris' inputs at ε = 0.5 (N = 50, ε_s = 0.081) an axis
#: clips 11.7, 11.9, 12.1, 12.6 and 13.7 rows for data at 0.3, 1, 1.5, 5 and 1,000
#: (docs/algorithm.md §10)
STAND_IN = 1.0


@lru_cache(maxsize=4)
def empty_bin_reach(r: int = STEPS_PER_OCTAVE) -> tuple[np.ndarray, np.ndarray]:
    """(k_d, K) over the float order's empty coarse bins, every bin but the
    :data:`DATA_BINS` centred on :data:`STAND_IN`'s: a centre C = b·2^s there has every
    row on one side, and that side's candidate list (:func:`side_candidates`, exactly as
    an unaimed run makes it: C's own offsets, or the magnitude points from a tiny centre)
    has k_d candidates short of the data (C first: each clips every row) and K in all
    (the grid's end last). Public: a function of the domain and r only (the mechanism's
    own candidates; the data stood in by :data:`STAND_IN`); cached per process."""
    fo = FloatOrder()
    s, bins = coarse_shift(fo), coarse_bins(fo)
    key = int(fo.index_of(STAND_IN))
    b0 = key >> s
    short, total = [], []
    for b in range(bins):
        if b0 - DATA_BINS // 2 <= b < b0 + DATA_BINS // 2:
            continue
        c = b << s
        side: Side = "hi" if b < b0 else "lo"
        alone = tiny_centre(fo, c)
        cands = side_candidates(fo, c, side, r, alone, alone)
        past = [(v >= key) if side == "hi" else (v <= key) for v in cands]
        short.append(past.index(True) if True in past else len(cands))
        total.append(len(cands))
    return (np.asarray(short, dtype=np.float64), np.asarray(total, dtype=np.float64))


def overshoot_steps(decay: Fraction = DECAY) -> float:
    """The prior's mean overshoot past a side's target step, e^−μ/(1 − e^−μ) steps (the
    law past the data is geometric, Lemma D3′)."""
    mu = float(decay)
    return math.exp(-mu) / -math.expm1(-mu)


def widening(decay: Fraction = DECAY) -> float:
    """The expected relative widening of a side past its target step: the mean overshoot
    (:func:`overshoot_steps`), each step a factor 2^(1/r) of the offset from the centre."""
    return 2.0 ** min(overshoot_steps(decay) / STEPS_PER_OCTAVE, 1000.0) - 1.0  # finite


def quantile_decay(side_epsilon: Fraction) -> Fraction:
    """μ, the sides' prior decay per step: min(1/2, ε_s) — describe's 1/2, or less at a
    small ε_s so that one step costs at most what one more clipped row costs (a weaker
    pull towards the centre: with few rows per step the side then covers them rather
    than stop at the centre). Public: a function of the plan's ε_s only."""
    return min(DECAY, Fraction(side_epsilon))


#: the data's centre against C's grid point, in cells: uniform on (−½, ½), PHASES values
_SHIFTS = (np.arange(PHASES) + 0.5) / PHASES - 0.5


def predicted_clip(side_epsilon: float, rows: float, target: float,
                   decay: float = float(DECAY), aimed_rate: float | None = None,
                   room: float | None = None, grid: int | None = None) -> float:
    """A side's expected clipped rows with ``rows`` rows on it (a model, docs/algorithm.md
    §10, calibrated in docs/results.md §4.1): the rows' offsets from the centre are
    half-normal, |Z|·σ, so a candidate at offset σ·z leaves q(z) = rows·erfc(z/√2) rows
    beyond it; the candidates are the side's: C itself (z = 0, q = rows: the first of
    :func:`side_candidates`), then the steps z_i = 2^((i + φ)/r) (r =
    :data:`STEPS_PER_OCTAVE`, i from −r·:data:`INSIDE_OCTAVES` to r·:data:`OUTSIDE_OCTAVES`),
    C one step inside the first (without C, a side of a few rows — for which staying at C
    is about as cheap as covering them — measured 1.2–1.4 times the model on the model's
    own ground: docs/algorithm.md §10, benchmarks/box_model_shapes.py); the
    draw's law is ∝ exp(−ε·(q_i − t)⁺ − μ·i) and its mean clip, averaged over
    :data:`PHASES` phases φ, at most the side's rows. Its consequence: a side settles where
    one more step outward would add fewer than about μ/ε clipped rows — a thin tail of a
    few rows — whatever its count, where the old model spread the rows evenly. An aimed
    side (t > 0): the bracket score's law ∝ exp(−a·((q_i − t)⁺ + (t − q_{i−1})⁺) − μ·i)
    (:func:`bracket_tails`), a = ``aimed_rate``, on :data:`AIMED_STEPS_PER_OCTAVE` steps
    per octave (C's q_{−1} is +∞: no charge; the next step's is all the side's rows).
    ``room``: the grid's end in σ (None: no end within the modelled steps): the steps at
    or past it are cut and the end is the last candidate (:data:`GRID_ROOM_SIGMAS`).
    ``grid``: the public grid's size m (None: a continuum, the float order). On a grid the
    candidates are grid points and the rows grid values (ties; docs/algorithm.md §10): the
    side's steps are the mechanism's own offsets o = ⌊2^(s + i/r)⌋ cells
    (:func:`grid_offsets`, each once), a cell w·2^(φ/r) σ wide (w = :func:`grid_cell`: the
    phase φ is the unknown scale, as on the continuum, whose steps are these at w → 0),
    those from σ/2^INSIDE_OCTAVES to the room; a row lies on the grid point nearest to
    it and the data's centre u cells from C, u uniform on (−½, ½) (:data:`PHASES`
    values: where the data lie against the grid is not public), so q_o = rows·
    erfc((o + ½ − u)·w_φ/√2) — C itself keeps the rows on its own point (a row = C is in
    neither side's tails): q_C = rows·erfc((½ − u)·w_φ/√2), not all the side's rows."""
    if rows <= 0:
        return 0.0
    aimed = target > 0 and aimed_rate is not None
    r = AIMED_STEPS_PER_OCTAVE if aimed else STEPS_PER_OCTAVE
    mu, eps = float(decay), float(side_epsilon)
    rate = float(aimed_rate) if aimed and aimed_rate is not None else None
    steps = np.arange(-INSIDE_OCTAVES * r, OUTSIDE_OCTAVES * r + 1, dtype=np.float64)
    total = 0.0
    for phase in range(PHASES):
        z = np.exp2((steps + phase / PHASES) / r)
        at = steps
        if room is not None:  # the grid's end: the last candidate, one step past the rest
            inside = z < room
            at = np.append(steps[inside], steps[inside][-1] + 1 if inside.any() else 0.0)
            z = np.append(z[inside], room)
        start = at[0]
        if grid is not None:  # the mechanism's own steps, in cells of w·2^(φ/r) σ
            cell = 2.0 ** ((round(r * math.log2(grid_cell(grid))) + phase / PHASES) / r)
            ladder = np.asarray(grid_offsets(grid, int(grid), r), dtype=np.float64)
            z = ladder * cell
            inner = (z >= 2.0 ** -INSIDE_OCTAVES) & (z < (np.inf if room is None else room))
            # C, the steps, then the grid's end (at the room); a tie stays inside a bound
            edges = np.concatenate([[0.5], ladder[inner] + 0.5,
                                    [] if room is None else [room / cell]])
            at = start - 1.0 + np.arange(len(edges), dtype=np.float64)
            total += sum(_side_law(rows * _erfc((edges - u) * cell), at, rows, target, eps,
                                   mu, rate) for u in _SHIFTS) / PHASES
            continue
        # C itself, the side's first candidate (side_candidates' k = 0), one step inside
        # the first offset: it clips every row of the side
        q = np.concatenate([[rows], rows * _erfc(z)])
        at = np.concatenate([[start - 1.0], at])
        total += _side_law(q, at, rows, target, eps, mu, rate)
    return float(min(rows, total / PHASES))


def grid_cell(grid_size: int) -> float:
    """w: a public grid's point spacing in the model's σ, 2·:data:`GRID_ROOM_SIGMAS`/(m − 1)
    — the model's own assumption that the grid ends :data:`GRID_ROOM_SIGMAS` σ past a
    centre in its middle, so its m − 1 cells span 2·GRID_ROOM_SIGMAS σ (public: m only;
    docs/algorithm.md §10). 17 points (digits' pixels): 0.625σ, where a side's first
    offsets and the rows' ties are whole cells; 1,901 (weather's): 0.005σ, a continuum.
    :func:`predicted_clip` snaps it to its steps' lattice, 2^(round(r·log₂ w)/r), so that
    a fine grid's steps are the continuum's."""
    return 2.0 * GRID_ROOM_SIGMAS / max(int(grid_size) - 1, 1)


def _erfc(z: np.ndarray) -> np.ndarray:
    """erfc(z/√2) elementwise: the share of a half-normal's rows beyond z σ."""
    return np.array([math.erfc(float(v) / math.sqrt(2.0)) for v in z])


def _side_law(q: np.ndarray, at: np.ndarray, rows: float, target: float, eps: float,
              mu: float, aimed_rate: float | None) -> float:
    """A side's mean clip over its candidates (tail counts ``q``, step indices ``at``):
    ∝ exp(−ε·(q − t)⁺ − μ·k), or the bracket score's exp(−a·((q_k − t)⁺ +
    (t − q_{k−1})⁺) − μ·k) with q_{−1} = ``rows`` (Lemma QB3) at a = ``aimed_rate``."""
    if aimed_rate is not None:  # the bracket score: the step holding the t-th row is free
        prev = np.concatenate([[rows], q[:-1]])
        bad = aimed_rate * (np.maximum(q - target, 0.0) + np.maximum(target - prev, 0.0))
    else:
        bad = eps * np.maximum(q - target, 0.0)
    logw = -bad - mu * (at - at[0])
    w = np.exp(logw - logw.max())
    return float((w * q).sum() / w.sum())


def side_steps(grid_size: int, r: int = STEPS_PER_OCTAVE) -> int:
    """S: the number of a side's candidate offsets across the whole grid, r per octave
    from the finest offset 2^(s − FINE_BITS) to the grid's size (public)."""
    s = max(0, (int(grid_size) - 1).bit_length() - CENTRE_BITS - FINE_BITS)
    return max(1, r * ((int(grid_size) - 1).bit_length() - s))


@lru_cache(maxsize=256)
def predicted_axis_clip(side_epsilon: float, rows: float, target: float, decay: float,
                        grid_size: int, aimed_rate: float | None = None,
                        float_order: bool = False) -> float:
    """One axis's expected clipped rows (general shape; a model, docs/algorithm.md §10):

    * the centre lands in the data with probability G/(G + B − W): the data on
      W = min(B, :data:`DATA_BINS`) of the B coarse bins with a triangular depth rising to
      rows/2, G = Σ exp(ε·depth), each empty bin weight 1. Then each side holds rows/2
      and clips :func:`predicted_clip`, on a public grid with its end
      :data:`GRID_ROOM_SIGMAS` σ past the centre, its points (the mechanism's whole-cell
      steps) and its ties (a bound keeps the rows on its point; :func:`grid_cell`)
      (``float_order``, the axis's domain is the float order: no end, a continuum);
    * otherwise every row lies on one side, K = S − 2r candidate steps out
      (:func:`side_steps`) and J = r steps before the grid's end: the side clips them all
      (weight e^{−ε(rows − t)⁺}·Σ_{k<K} e^{−μk}) or none (Σ_{K≤k<K+J} e^{−μk}); an
      aimed side (t > 0, rate a): e^{−a·|rows − t|}·Σ_{k<K} e^{−μk} against
      e^{−a·t}·Σ_{K≤k<K+J} e^{−μk}, on its finer steps;
    * except an unaimed side on the float order (s35): there the centre lands off the data
      in most runs of a small table (every empty bin weighs 1, the data's bins
      e^{ε·depth}), uniformly over the empty bins, and the distance from C to the data
      runs from one to ~3,000 binades — not one K for all. The branch is the mean over
      the empty bins b of the clip from C = b·2^s with that bin's own candidate list
      (:func:`empty_bin_reach`: k_d candidates short of the data at :data:`STAND_IN`, K in
      all): rows·S₁/(S₁ + S₂), S₁ = e^{−ε(rows − t)⁺}·Σ_{k<k_d} e^{−μk},
      S₂ = Σ_{k_d≤k<K} e^{−μk}. At iris' inputs at ε = 0.5 (N = 50, ε_s = 0.081) 11.9 rows
      an axis where the one K gave 24.7; the mechanism's clip from the empty bins on
      iris' own rows is 12.1–12.7 (docs/algorithm.md §10)."""
    if rows <= 0:
        return 0.0
    aimed = target > 0 and aimed_rate is not None
    eps, mu = float(side_epsilon), float(decay)
    r = AIMED_STEPS_PER_OCTAVE if aimed else STEPS_PER_OCTAVE
    m = int(grid_size)
    bins = ((m - 1) >> max(0, (m - 1).bit_length() - CENTRE_BITS)) + 1
    w = min(bins, DATA_BINS)
    depth = (rows / 2) * (1 - np.abs(2 * np.arange(w) / max(w - 1, 1) - 1)) if w > 1 else \
        np.array([rows / 2])
    top = float((eps * depth).max())
    log_good = top + math.log(float(np.exp(eps * depth - top).sum()))
    empty = bins - w
    p_good = 1.0 if empty <= 0 else 1.0 / (1.0 + empty * math.exp(-min(log_good, 700.0)))
    room = None if float_order else GRID_ROOM_SIGMAS
    good = 2 * predicted_clip(eps, rows / 2, target, mu, aimed_rate, room,
                              None if float_order else m)
    if float_order and not aimed:  # the centre's law is uniform on the empty bins
        short, total = empty_bin_reach(r)
        # Σ_{k<k_d} e^{−ε(rows − t)⁺ − μk} against Σ_{k_d≤k<K} e^{−μk}, per bin, in logs
        log_stay = -eps * max(rows - target, 0.0) + np.log(-np.expm1(-mu * short))
        log_cover = -mu * short + np.log(-np.expm1(-mu * np.maximum(total - short, 1e-300)))
        bad = rows * float(np.mean(1.0 / (1.0 + np.exp(np.minimum(log_cover - log_stay,
                                                                   700.0)))))
        return float(min(rows, p_good * good + (1 - p_good) * bad))
    k = max(1, side_steps(m, r) - 2 * r)
    # in logs (a large t underflows both): Σ_{k'<K} e^{−μk'}·(1 − e^{−μ}), then the J
    # steps past the data
    log_past = -mu * k + math.log(-math.expm1(-mu * r))
    log_all = math.log(-math.expm1(-mu * k))
    if aimed:
        a = float(aimed_rate)  # type: ignore[arg-type]
        log_past -= a * target
        log_all -= a * abs(rows - target)
    else:
        log_all -= eps * max(rows - target, 0.0)
    bad = rows / (1.0 + math.exp(min(log_past - log_all, 700.0)))
    return float(min(rows, p_good * good + (1 - p_good) * bad))


__all__ = [
    "AIMED_DECAY",
    "AIMED_SCORE",
    "AIMED_STEPS_PER_OCTAVE",
    "AIM_MIN_NATS",
    "AIM_SIDE_SHARE",
    "AIM_TOTAL_SHARE",
    "CENTRE_BITS",
    "CENTRE_REACH_BINADES",
    "DATA_BINS",
    "FINE_BITS",
    "GRID_ROOM_SIGMAS",
    "INSIDE_OCTAVES",
    "MAGNITUDE_FINE_OCTAVES",
    "OUTSIDE_OCTAVES",
    "PHASES",
    "STAND_IN",
    "STEPS_PER_OCTAVE",
    "TINY_BINADES",
    "ZERO_WEIGHT_BITS",
    "SideTrace",
    "bracket_tails",
    "centre_from_counts",
    "centre_query",
    "coarse_bins",
    "coarse_shift",
    "coarse_thresholds",
    "empty_bin_reach",
    "grid_cell",
    "grid_offsets",
    "magnitude_offsets",
    "magnitude_points",
    "offsets",
    "overshoot_bound",
    "overshoot_steps",
    "predicted_axis_clip",
    "predicted_clip",
    "quantile_decay",
    "run_quantile_box",
    "side_candidates",
    "side_steps",
    "side_target",
    "stall_bound",
    "tail_counts",
    "tail_thresholds",
    "tiny_centre",
    "widening",
    "zero_centre",
]
