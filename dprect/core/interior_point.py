"""The interior-point (IP) mechanism: the exponential mechanism on depth (docs/algorithm.md §3).

Input: Δ grid indices v_1 … v_Δ of a grid {0, …, m−1} — the real values, plus optionally
``pad_count`` *virtual* copies of one pad index (counted, never materialised). Score of a
grid point y:

    depth(y) = min(#{i : v_i ≤ y}, #{i : v_i ≥ y}).

Replacing one v_i changes every depth by at most 1, so sampling y with probability
∝ exp(ε·depth(y)/2) is ε-differentially private under replace-one neighbours (McSherry &
Talwar 2007, the exponential mechanism with a sensitivity-1 score).

**Guarantee.** ``interior_point`` is ε-DP w.r.t. replacing one of its Δ inputs.

**Failure.** Points above max v have depth 0 (weight 1 each, at most m of them), and the
⌈Δ/2⌉-th smallest value has depth ≥ ⌈Δ/2⌉, so

    P(p > max v) ≤ m·exp(−ε⌈Δ/2⌉/2)   and likewise   P(p < min v) ≤ m·exp(−ε⌈Δ/2⌉/2).

:func:`interior_point_size` returns the smallest Δ making this one-sided bound ≤ β.

**Exact sampling in O(Δ log Δ)** (docs/privacy.md, "Exact sampling of the interior
point"). Depth is constant on O(Δ) pieces (each distinct value, each open gap between
consecutive distinct values, the two outer gaps), computed in integers. The output law is
sampled *exactly* — P(y) = exp(c·depth(y)) / Σ_z exp(c·depth(z)) with c = ε/2 taken as the
exact rational value of the float ε — using only exact uniform integer draws:

1. Let d(y) = depth_max − depth(y) and n(y) = ⌊c·d(y)⌋ (exact rational arithmetic). The
   grid points with n(y) = n form the *bucket* n: at most two runs of consecutive grid
   points (depth is unimodal along the grid), of T_n points in all (an exact integer).
2. Choose a bucket with probability T_n·e^{−n} / Σ_k T_k·e^{−k} by inverse CDF against a
   uniform U drawn lazily as random bits. The cumulative weights are enclosed in
   fixed-point integers with rigorous bounds (e^{−1} from its alternating series, powers
   rounded down for lower and up for upper bounds); a bucket is returned only when U's
   interval lies inside that bucket's interval for every value the bounds allow, and
   otherwise more bits of U are drawn and the bounds recomputed at twice the precision.
   The decision therefore always equals the exact inverse CDF of U.
3. Choose a grid point y uniformly in the bucket (one exact integer draw) and accept it
   with probability e^{−(c·d(y) − n(y))} ∈ (e^{−1}, 1], an exact Bernoulli(exp(−γ)) for a
   rational γ (:meth:`RandomSource.bernoulli_exp`); on rejection start again at 1.

An accepted y has probability ∝ e^{−n(y)}·e^{−(c·d(y) − n(y))} = e^{−c·d(y)} ∝
exp(ε·depth(y)/2): the exact law, at an expected ≤ e attempts. No floating-point number
enters the draw. The float ``Pieces.probabilities`` is kept for tests and audits only.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from dprect.core import crmath
from dprect.core.errors import ParameterError
from dprect.core.randomness import RandomSource
from dprect.core.validation import check_epsilon, check_open_unit, check_positive_int

MAX_GRID_SIZE = 2**64
_MAX_TOTAL = 2**62  # real values + virtual pads: depths are computed in int64

#: fractional bits of the first fixed-point enclosure of the bucket weights, and random
#: bits of the first uniform; both double whenever the decision is ambiguous
FIRST_PRECISION = 128
FIRST_UNIFORM_BITS = 64


@dataclass(frozen=True)
class Pieces:
    """The exponential mechanism's distribution as constant-depth pieces.

    Piece i covers grid points ``starts[i] … starts[i] + sizes[i] − 1`` (uint64, sorted;
    the pieces tile the whole grid), each with depth ``depths[i]`` (int64).
    """

    starts: np.ndarray
    sizes: np.ndarray
    depths: np.ndarray
    epsilon: float
    grid_size: int

    @property
    def log_weights(self) -> np.ndarray:
        """ln(sizes[i]) + ε·depths[i]/2 (floating point: tests and audits only)."""
        return (np.log(self.sizes.astype(np.float64))
                + self.epsilon * self.depths.astype(np.float64) / 2)

    def probabilities(self) -> np.ndarray:
        """Probability of each piece (sums to 1), in floating point (tests and audits)."""
        lw = self.log_weights
        weights = np.exp(lw - lw.max())
        return weights / weights.sum()

    def point_probability(self, y: int) -> float:
        """Probability of grid point y (floating point)."""
        i = int(np.searchsorted(self.starts, np.uint64(y), side="right")) - 1
        if i < 0 or y >= int(self.starts[i]) + int(self.sizes[i]):
            raise ValueError("the grid point is outside the grid")
        return float(self.probabilities()[i]) / int(self.sizes[i])


def _check_grid_size(grid_size: object) -> int:
    if isinstance(grid_size, bool) or not isinstance(grid_size, int | np.integer):
        raise ParameterError(f"grid_size must be an integer, got {grid_size!r}")
    if not 2 <= int(grid_size) <= MAX_GRID_SIZE:
        raise ParameterError(f"grid_size must be between 2 and 2**64, got {grid_size}")
    return int(grid_size)


def _as_indices(values: object, grid_size: int, *, allow_empty: bool) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or (arr.size == 0 and not allow_empty):
        raise ParameterError("values must be a non-empty one-dimensional array of grid indices")
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint64)
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


def _check_pads(pad_count: object, pad_index: object, grid_size: int) -> tuple[int, int]:
    if isinstance(pad_count, bool) or not isinstance(pad_count, int | np.integer) \
            or int(pad_count) < 0:
        raise ParameterError(f"pad_count must be an integer >= 0, got {pad_count!r}")
    if int(pad_count) == 0:
        return 0, 0
    if isinstance(pad_index, bool) or not isinstance(pad_index, int | np.integer) \
            or not 0 <= int(pad_index) < grid_size:
        raise ParameterError(
            f"pad_index must be a grid index in [0, {grid_size}) when pad_count > 0, "
            f"got {pad_index!r}")
    return int(pad_count), int(pad_index)


def interior_point_pieces(values: object, *, epsilon: float, grid_size: int,
                          pad_count: int = 0, pad_index: int | None = None) -> Pieces:
    """The exact piece decomposition of the mechanism's output distribution.

    ``pad_count`` virtual copies of ``pad_index`` are counted with ``values`` (never
    materialised); ``values`` may then be empty.
    """
    epsilon = check_epsilon(epsilon)
    m = _check_grid_size(grid_size)
    pads, pad_at = _check_pads(pad_count, pad_index, m)
    v = _as_indices(values, m, allow_empty=pads > 0)
    if len(v) + pads > _MAX_TOTAL:
        raise ParameterError("the IP takes at most 2**62 values (pads included)")
    if len(v):
        uniq, counts = np.unique(v, return_counts=True)
        counts = counts.astype(np.int64)
    else:
        uniq, counts = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    if pads:
        i = int(np.searchsorted(uniq, np.uint64(pad_at)))
        if i < len(uniq) and int(uniq[i]) == pad_at:
            counts[i] += pads
        else:
            uniq = np.insert(uniq, i, np.uint64(pad_at))
            counts = np.insert(counts, i, np.int64(pads))
    total = int(counts.sum())
    below_incl = np.cumsum(counts)  # #{v <= u_i}
    above_incl = total - below_incl + counts  # #{v >= u_i}
    single_depth = np.minimum(below_incl, above_incl)
    gap_depth = np.minimum(below_incl[:-1], total - below_incl[:-1])
    gap_sizes = uniq[1:] - uniq[:-1] - np.uint64(1)  # exact in uint64

    # interleave value, gap, value, gap, …, value (already in grid order), drop empty gaps
    u = len(uniq)
    starts = np.empty(2 * u - 1, dtype=np.uint64)
    sizes = np.empty(2 * u - 1, dtype=np.uint64)
    depths = np.empty(2 * u - 1, dtype=np.int64)
    starts[0::2], sizes[0::2], depths[0::2] = uniq, 1, single_depth
    starts[1::2], sizes[1::2], depths[1::2] = uniq[:-1] + np.uint64(1), gap_sizes, gap_depth
    if u > 1 and not (gap_sizes > 0).all():
        keep = sizes > 0
        starts, sizes, depths = starts[keep], sizes[keep], depths[keep]
    lo, hi = int(uniq[0]), int(uniq[-1])
    if lo > 0 or hi < m - 1:  # the outer gaps, depth 0
        head = [(0, lo)] if lo > 0 else []
        tail = [(hi + 1, m - 1 - hi)] if hi < m - 1 else []
        starts = np.concatenate([np.array([s for s, _ in head], dtype=np.uint64), starts,
                                 np.array([s for s, _ in tail], dtype=np.uint64)])
        sizes = np.concatenate([np.array([n for _, n in head], dtype=np.uint64), sizes,
                                np.array([n for _, n in tail], dtype=np.uint64)])
        depths = np.concatenate([np.zeros(len(head), dtype=np.int64), depths,
                                 np.zeros(len(tail), dtype=np.int64)])
    return Pieces(starts, sizes, depths, epsilon, m)


# -- exact sampling ------------------------------------------------------------------------
@lru_cache(maxsize=16)
def _exp_neg_one(p: int) -> tuple[int, int]:
    """(lo, hi) with lo ≤ e^{−1}·2^p ≤ hi.

    e^{−1} = Σ_k (−1)^k/k! is an alternating series with decreasing terms (k ≥ 1), so it
    lies between any two consecutive partial sums; sum until a term is below 2^{−p−2}."""
    partial, term, k = Fraction(1), Fraction(1), 0
    while True:
        k += 1
        term /= k
        following = partial - term if k % 2 else partial + term
        if term * 2 ** (p + 2) < 1:
            low, high = min(partial, following), max(partial, following)
            return math.floor(low * 2**p), math.ceil(high * 2**p)
        partial = following


def _bucket_cut(p: int) -> int:
    """The last bucket made explicit at precision p: 2^64·e^{−n} < 2^{−p} beyond it, so
    the rest (bounded, not computed) holds less than 2^{−p} of the weight."""
    return int(0.7 * (p + 70)) + 2


@lru_cache(maxsize=16)
def _exp_neg_table(p: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Fixed-point enclosures lo[n] ≤ e^{−n}·2^p ≤ hi[n] for n = 0 … _bucket_cut(p) + 1.

    lo[n+1] = ⌊lo[n]·lo[1]/2^p⌋ and hi[n+1] = ⌈hi[n]·hi[1]/2^p⌉: a product of lower
    (upper) bounds of positive numbers is a lower (upper) bound, and rounding down (up)
    keeps it one. The absolute error stays a few units of 2^{−p}."""
    lo1, hi1 = _exp_neg_one(p)
    lo, hi = [1 << p], [1 << p]
    for _ in range(_bucket_cut(p) + 1):
        lo.append((lo[-1] * lo1) >> p)
        hi.append(-((-hi[-1] * hi1) >> p))
    return tuple(lo), tuple(hi)


@dataclass(frozen=True)
class Buckets:
    """The buckets n = 0 … n_cut made explicit at precision p (nonempty ones only), their
    cumulative weight enclosures in units of 2^{−p}, and a bound on the rest (the tail)."""

    ns: tuple[int, ...]
    sizes: tuple[int, ...]  # T_n
    runs: tuple[tuple[int, int, int], ...]  # (left start, left length, right start)
    x_lo: tuple[int, ...]  # x_lo[j] ≤ 2^p·Σ_{i ≤ j} T_i·e^{−n_i} ≤ x_hi[j]
    x_hi: tuple[int, ...]
    w_lo: int  # w_lo ≤ 2^p·(total weight) ≤ w_hi
    w_hi: int

    def decide(self, u: int, bits: int) -> int | None:
        """The bucket j with X_{j−1} ≤ U·W < X_j for every U in [u/2^bits, (u+1)/2^bits)
        and every weight the enclosures allow — or None if there is no such j: the j
        whose :func:`decision_interval` holds u. Its ends hi_j do not decrease with j
        (x_lo does not), and a j < k with hi_j ≥ u cannot exist when u ≥ lo_k: it would
        give (u + 1)·W_hi ≤ x_lo[j]·2^bits ≤ x_hi[k−1]·2^bits ≤ u·W_lo. So the first j
        with hi_j ≥ u is the only candidate — found by a binary search on x_lo, as
        hi_j ≥ u iff x_lo[j] ≥ ⌈(u + 1)·W_hi / 2^bits⌉ (a speed aid: the interval
        decides); none past the last enclosure (U·W may lie in the tail)."""
        j = bisect.bisect_left(self.x_lo, -((-(u + 1) * self.w_hi) >> bits))
        if j == len(self.x_lo):
            return None
        lo, hi = decision_interval(self, j, bits)
        return j if lo <= u <= hi else None

    @property
    def single(self) -> bool:
        """One bucket and no tail: nothing to choose (no bit is drawn)."""
        return len(self.ns) == 1 and self.w_lo == self.w_hi

    def intervals(self, bits: int, share: int | None = None) -> list[tuple[int, int, int]]:
        """:meth:`decide` at ``bits`` bits as (lo, hi, j), each bucket's
        :func:`decision_interval`: ``decide(u, bits)`` is j for lo ≤ u ≤ hi, None for a u
        in no interval (sorted, disjoint, non-empty; for a compiled sampler,
        :func:`dprect.core.random_jit.unimodal_rounds`). With ``share``, only the buckets
        up to the first j with x_lo[j] ≥ W_lo·(1 − 2^−share) (those after it weigh about
        2^−share of the whole or less: a compiled sampler hands a u past them to the
        Python one, which decides it)."""
        last = len(self.x_lo) if share is None else \
            bisect.bisect_left(self.x_lo, self.w_lo - (self.w_lo >> share)) + 1
        out = []
        for j in range(min(last, len(self.x_lo))):
            lo, hi = decision_interval(self, j, bits)
            if lo <= hi:
                out.append((lo, hi, j))
        return out


def decision_interval(found: Buckets, j: int, bits: int) -> tuple[int, int]:
    """(lo, hi): the ``bits``-bit uniforms u on which bucket j is decided
    (:meth:`Buckets.decide`), lo ≤ u ≤ hi (none when lo > hi) — the one derivation, read
    by ``decide`` and by the compiled sampler's table (:meth:`Buckets.intervals`).

    Bucket j is decided on u iff every U in [u/2^bits, (u+1)/2^bits) and every weight
    the enclosures allow have X_{j−1} ≤ U·W < X_j: (u + 1)·W_hi ≤ x_lo[j]·2^bits, i.e.
    u ≤ ⌊x_lo[j]·2^bits / W_hi⌋ − 1 = hi (capped at 2^bits − 1, the largest u), and
    u·W_lo ≥ x_hi[j−1]·2^bits, i.e. u ≥ ⌈x_hi[j−1]·2^bits / W_lo⌉ = lo (j = 0: no lower
    condition, lo = 0)."""
    lo = -((-found.x_hi[j - 1] << bits) // found.w_lo) if j else 0
    hi = min((found.x_lo[j] << bits) // found.w_hi - 1, (1 << bits) - 1)
    return lo, hi


def law_buckets(starts: np.ndarray, depths: np.ndarray, m: int, kmax: int, split: int,
                num: int, den: int, p: int) -> Buckets:
    """The buckets at precision p of the law y ∝ exp(c·depth(y)), c = num/den (reduced),
    on the pieces ``starts`` (uint64) with ``depths`` (unimodal, int64 or Python
    integers) of a grid of m points, ``kmax`` the largest depth and ``split`` its first
    piece (module docstring, steps 1–2): :meth:`ExactSampler.buckets`' one derivation,
    also read by a caller that has these numbers without a sampler (the quantiles'
    compiled tables, :mod:`dprect.core.quantile_draws`).

    Where c·kmax < 1 every point is in bucket 0: :func:`_one_bucket`; a law of a few
    pieces (a small group's centre and sign) has its buckets found in Python integers
    from its pieces, :func:`_sparse_buckets` — the same buckets either way."""
    if (num * kmax) // den == 0:
        return _one_bucket(m, p)
    if len(depths) <= SPARSE_PIECES:
        return _sparse_buckets(starts, depths, m, kmax, split, num, den, p)
    return _general_buckets(starts, depths, m, kmax, split, num, den, p)


#: :func:`law_buckets` finds the buckets of a law of at most this many pieces in Python
#: integers, only those a piece falls in (numpy's calls cost more on so few)
SPARSE_PIECES = 64


def _sparse_buckets(starts: np.ndarray, depths: np.ndarray, m: int, kmax: int, split: int,
                    num: int, den: int, p: int) -> Buckets:
    """:func:`_general_buckets` searching only the buckets that hold a piece: bucket n
    holds the points of the pieces with ⌊c·(kmax − depth)⌋ = n (docs/privacy.md §2,
    "Exact sampling of the interior point", step 1), so a bucket no piece's n falls in
    is empty — the one the general loop skips (size 0) — and adds nothing to the
    enclosures. Each occupied bucket's thresholds t[n], t[n + 1], searches and positions
    are the general computation's (bisections on the two monotone halves, in Python
    integers), its enclosure terms added in increasing n as there: the same
    :class:`Buckets`, integer for integer (tests/core/test_interior_point.py)."""
    n_max = (num * kmax) // den
    n_cut = min(n_max, _bucket_cut(p))
    d = depths.tolist()
    at = starts.tolist()
    count = len(d)
    left = d[: split + 1]  # non-decreasing
    fall = [-x for x in d[split + 1:]]  # the non-increasing right half, negated

    def position(i: int) -> int:  # _positions: the start of piece i (i = count: m)
        return m if i == count else at[min(i, count - 1)]

    def bounds(n: int) -> tuple[int, int]:  # positions of the searches at t[n]
        t = _threshold(n, kmax, num, den)
        return (position(bisect.bisect_right(left, t)),
                position(bisect.bisect_left(fall, -t) + split + 1))

    occupied = sorted({(num * (kmax - x)) // den for x in d})
    return _enclosed(((n, *bounds(n + 1), *bounds(n)) for n in occupied if n <= n_cut),
                     m, n_cut, n_max, p)


def _enclosed(found: Iterable[tuple[int, int, int, int, int]], m: int, n_cut: int,
              n_max: int, p: int) -> Buckets:
    """The :class:`Buckets` at precision p from each candidate bucket n ≤ ``n_cut``, in
    increasing n, as (n, the start of its left run, the start of its right run's end,
    its left run's end, its right run's start) — the positions of the searches at
    t[n + 1] and t[n]; an empty bucket (size 0) is skipped, the enclosures summed
    (docs/privacy.md §2, "Exact sampling of the interior point", step 2): the one
    assembly of :func:`_general_buckets` and :func:`_sparse_buckets`."""
    lo_tab, hi_tab = _exp_neg_table(p)
    ns, sizes, runs, x_lo, x_hi = [], [], [], [], []
    acc_lo = acc_hi = explicit = 0
    for n, left_start, right_end, left_end, right_start in found:
        left_len = left_end - left_start
        size = left_len + right_end - right_start
        if size == 0:
            continue
        explicit += size
        acc_lo += size * lo_tab[n]
        acc_hi += size * hi_tab[n]
        ns.append(n)
        sizes.append(size)
        runs.append((left_start, left_len, right_start))
        x_lo.append(acc_lo)
        x_hi.append(acc_hi)
    tail = m - explicit  # grid points of the buckets n > n_cut: weight ≤ e^{-n_cut-1}
    if n_cut == n_max and tail != 0:
        raise AssertionError("interior point: the buckets do not tile the grid")
    return Buckets(tuple(ns), tuple(sizes), tuple(runs), tuple(x_lo), tuple(x_hi),
                   acc_lo, acc_hi + tail * hi_tab[n_cut + 1])


def _one_bucket(m: int, p: int) -> Buckets:
    """:func:`_general_buckets` where c·kmax < 1: every point is in bucket 0 (weight e^0,
    2^p in fixed point), no tail; its run (0, m, m) maps r to the point r, as the general
    computation's run does (the whole grid as one run split at a piece's start P:
    (0, P, P)) — without its arrays."""
    whole = m << p
    return Buckets((0,), (m,), ((0, m, m),), (whole,), (whole,), whole, whole)


def _general_buckets(starts: np.ndarray, depths: np.ndarray, m: int, kmax: int, split: int,
                     num: int, den: int, p: int) -> Buckets:
    """:func:`law_buckets` from the depths: the thresholds of each bucket searched on the
    rising and the falling side, the enclosures summed."""
    n_max = (num * kmax) // den  # ⌊c·kmax⌋
    n_cut = min(n_max, _bucket_cut(p))
    t = np.array([_threshold(n, kmax, num, den) for n in range(n_cut + 2)],
                 dtype=depths.dtype)
    left = depths[: split + 1]  # non-decreasing
    right = depths[split + 1:]  # non-increasing
    i_left = np.searchsorted(left, t, side="right")  # pieces with depth ≤ t
    j_right = np.searchsorted(-right, -t, side="left") + (split + 1)  # depth > t
    pos_left = _positions(starts, m, i_left)
    pos_right = _positions(starts, m, j_right)
    return _enclosed(((n, pos_left[n + 1], pos_right[n + 1], pos_left[n], pos_right[n])
                      for n in range(n_cut + 1)), m, n_cut, n_max, p)


def _threshold(n: int, kmax: int, num: int, den: int) -> int:
    """t[n] = kmax − ⌈n/c⌉ (c = num/den), capped below at −1 (no depth): bucket n holds
    the depths in (t[n + 1], t[n]] (d = kmax − depth has ⌊c·d⌋ = n iff
    ⌈n/c⌉ ≤ d < ⌈(n + 1)/c⌉)."""
    return kmax - min(-((-n * den) // num), kmax + 1)


def _positions(starts: np.ndarray, m: int, indices: np.ndarray) -> list[int]:
    """Grid position of the start of each piece index (index = #pieces → m)."""
    n = len(starts)
    out = starts[np.minimum(indices, n - 1)].tolist()
    return [m if i == n else s for i, s in zip(indices.tolist(), out, strict=True)]


class ExactSampler:
    """Exact sampler of y ∝ exp(c·depth(y)) on the pieces (module docstring)."""

    def __init__(self, pieces: Pieces, c: Fraction) -> None:
        self.starts = pieces.starts
        self.depths = pieces.depths
        self.m = pieces.grid_size
        self.c = c
        #: the rate c = num/den (reduced)
        self.num, self.den = c.numerator, c.denominator
        self.kmax = int(self.depths.max())
        self.split = int(np.argmax(self.depths))  # depth rises up to here, then falls
        self.n_max = (c.numerator * self.kmax) // c.denominator  # ⌊c·kmax⌋
        self._cache: dict[int, Buckets] = {}

    def buckets(self, p: int) -> Buckets:
        """The buckets at precision p (computed once; :func:`law_buckets`)."""
        if p not in self._cache:
            self._cache[p] = law_buckets(self.starts, self.depths, self.m, self.kmax,
                                         self.split, self.num, self.den, p)
        return self._cache[p]

    def choose_bucket(self, rng: RandomSource, u: int | None = None
                      ) -> tuple[Buckets, int]:
        """Bucket j with probability T_j·e^{−n_j} / Σ_k T_k·e^{−n_k}, exactly; ``u``: the
        first uniform's bits, drawn already (by a compiled sampler that could not
        decide on them)."""
        p, bits = FIRST_PRECISION, FIRST_UNIFORM_BITS
        found = self.buckets(p)
        if u is None:
            if found.single:
                return found, 0  # a single bucket and no tail: nothing to choose
            u = rng.randbits(bits)
        while True:
            j = found.decide(u, bits)
            if j is not None:
                return found, j
            u = (u << bits) | rng.randbits(bits)  # refine U and the weights together
            bits, p = 2 * bits, 2 * p
            found = self.buckets(p)

    def sample(self, rng: RandomSource, u: int | None = None) -> int:
        """One exact draw; ``u``: its first attempt's first uniform, drawn already
        (:meth:`choose_bucket`)."""
        while True:
            found, j = self.choose_bucket(rng, u)
            u = None
            left_start, left_len, right_start = found.runs[j]
            r = rng.randbelow(found.sizes[j])
            y = left_start + r if r < left_len else right_start + (r - left_len)
            i = int(np.searchsorted(self.starts, np.uint64(y), side="right")) - 1
            # γ = c·(kmax − depth) − n = a/den in integers (c = num/den): the draws of
            # bernoulli_exp(Fraction(a, den)), without making the Fraction
            a = self.num * (self.kmax - int(self.depths[i])) - found.ns[j] * self.den
            if not 0 <= a < self.den:
                raise AssertionError("interior point: a point outside its bucket")
            if rng.bernoulli_exp_ratio(a, self.den):
                return y


def sample_unimodal(pieces: Pieces, c: Fraction, rng: RandomSource, *,
                    trusted: bool = False) -> int:
    """A grid point y drawn with probability exactly exp(c·depth(y)) / Σ_z exp(c·depth(z)).

    The exact sampler of the interior point (module docstring, steps 1–3), opened to any
    exponential mechanism whose score is a *unimodal* integer depth on pieces — the private
    quantiles of :mod:`dprect.core.bounds` use it. ``pieces`` must tile the grid
    {0, …, grid_size − 1} in order with non-empty pieces and int64 depths ≥ 0 (or an
    object array of Python ints, for depths beyond int64) that are
    non-decreasing up to their first maximum and non-increasing after it; ``c`` > 0 is an
    exact rational (the float ``pieces.epsilon`` is not read: it serves the float
    :meth:`Pieces.probabilities` of tests and audits only). The requirements are checked in
    O(#pieces); a violation is a :class:`ParameterError` (they hold by construction for
    the callers, whatever the data). ``trusted=True`` skips the O(#pieces) checks of the
    pieces (not of ``c``), for a caller that has checked what it built them from — the
    describe driver's centres, :func:`~dprect.core.tail_bounds.draw_centre_from_counts`,
    one draw per (group, column); the draw is the same.
    """
    return unimodal_sampler(pieces, c, trusted=trusted).sample(rng)


def unimodal_sampler(pieces: Pieces, c: Fraction, *, trusted: bool = False
                     ) -> ExactSampler:
    """:func:`sample_unimodal`'s checks, then its sampler, for a caller that draws the
    same law many times (``.sample(rng)``: each draw exact and independent; the buckets
    are computed once) — the quantiles' rejection rounds (:mod:`dprect.core.quantile_centre`)."""
    if not isinstance(c, Fraction) or c <= 0:
        raise ParameterError(f"c must be a rational > 0, got {c!r}")
    if trusted:
        return ExactSampler(pieces, c)
    m = _check_grid_size(pieces.grid_size)
    starts = np.asarray(pieces.starts)
    sizes = np.asarray(pieces.sizes)
    depths = np.asarray(pieces.depths)
    exact_ints = depths.dtype == object and all(type(v) is int for v in depths)
    if (starts.dtype != np.uint64 or sizes.dtype != np.uint64
            or not (depths.dtype == np.int64 or exact_ints)
            or starts.ndim != 1 or not len(starts) == len(sizes) == len(depths)
            or len(starts) == 0):
        raise ParameterError("pieces must hold equally long uint64 starts and sizes and "
                             "int64 (or Python int) depths")
    if int(starts[0]) != 0 or (sizes == 0).any() \
            or int(starts[-1]) + int(sizes[-1]) != m \
            or not (starts[1:] == starts[:-1] + sizes[:-1]).all():
        raise ParameterError("pieces must tile the grid in order, each non-empty")
    if (depths < 0).any():
        raise ParameterError("piece depths must be >= 0")
    top = int(np.argmax(depths))
    if (np.diff(depths[: top + 1]) < 0).any() or (np.diff(depths[top:]) > 0).any():
        raise ParameterError("piece depths must be unimodal along the grid")
    return ExactSampler(pieces, c)


def interior_point(
    values: object, *, epsilon: float, grid_size: int, rng: RandomSource,
    pad_count: int = 0, pad_index: int | None = None,
) -> int:
    """An ε-DP interior point of ``values`` (grid indices) on the grid {0, …, grid_size−1}.

    ``pad_count`` virtual copies of the grid index ``pad_index`` join the input (counted,
    never materialised; ``values`` may then be empty). Returns a grid index drawn with
    probability exactly ∝ exp(ε·depth/2), ε being the exact value of the float. ε-DP under
    replacing one input; one-sided failure probability ≤ grid_size·exp(−ε⌈Δ/2⌉/2) with
    Δ = len(values) + pad_count (see the module docstring).
    """
    pieces = interior_point_pieces(values, epsilon=epsilon, grid_size=grid_size,
                                   pad_count=pad_count, pad_index=pad_index)
    return ExactSampler(pieces, Fraction(pieces.epsilon) / 2).sample(rng)


def interior_point_failure_bound(epsilon: float, size: int, grid_size: int) -> float:
    """One-sided failure bound m·exp(−ε⌈Δ/2⌉/2) of the IP on Δ = ``size`` inputs."""
    epsilon = check_epsilon(epsilon)
    size = check_positive_int(size, "size")
    m = _check_grid_size(grid_size)
    return min(1.0, crmath.exp(crmath.log(m) - epsilon * math.ceil(size / 2) / 2))


def interior_point_size(epsilon: float, beta: float, grid_size: int) -> int:
    """The smallest Δ with m·exp(−ε⌈Δ/2⌉/2) ≤ β (docs/algorithm.md §3): about (4/ε)·ln(m/β).

    Since only ⌈Δ/2⌉ matters the answer is odd: Δ = 2h − 1 with h = ⌈2·ln(m/β)/ε⌉.
    """
    epsilon = check_epsilon(epsilon)
    beta = check_open_unit(beta, "beta")
    m = _check_grid_size(grid_size)
    x = 2.0 * (crmath.log(m) - crmath.log(beta)) / epsilon
    if not math.isfinite(x * (1.0 + 1e-12)):
        raise ParameterError(f"epsilon={epsilon!r} is too small: the interior point's input "
                             f"size overflows")
    h = max(1, math.ceil(x * (1.0 + 1e-12)))  # rounding can only make Δ larger (safer)
    while interior_point_failure_bound(epsilon, 2 * h - 1, m) > beta:
        h += 1
    return 2 * h - 1
