"""Tie-breaking for RandMargins: a refined order in which a cut can split a tie group.

Why (docs/algorithm.md §8). A RandMargins cut is non-strict: it removes every remaining
row whose value is at or beyond the threshold p_t. When the round's window D_t lies inside
one large tie group (a feature with 95% zeros, pixel intensities, counts), the cut removes
the whole group — most of the remaining rows — and later rounds read pads: the rectangle
collapses. Here every row gets a tie-breaker u and axis j is ordered by the pair (x_j, u)
lexicographically, so a cut removes a tie group only down to the threshold's u.

**The refinement.** Let s_j be a row's sort value on axis j: a grid index on
:class:`Grid`, :class:`IntegerRange` and :class:`FloatBins` axes; on a
:class:`FloatOrder` axis the value, hashed and refined through its signed 64-bit order key
k_j (the bit pattern, 63 low bits flipped when negative: :func:`float_keys`). The row's
hash is

    h = (Σ_j a_j · (s_j mod P)) mod P,      P = 2^24 − 3 (prime),

over every axis (k_j in place of s_j on float axes), with fixed public coefficients
a_j = 48271^(j+1) mod P. Axis j's tie-breaker is u_j = (c_j·h) mod P with
c_j = 69621^(j+1) mod P — a bijection of h, different per axis, so that the rows one axis's
cuts remove are not the first rows of every other axis's tie groups. With b_j tie bits,
a grid axis's refined sort value is

    r_j = s_j · 2^{b_j} + ⌊u_j / 2^{24 − b_j}⌋ ∈ [0, m_j·2^{b_j}),

so its refined grid (:class:`RefinedGrid`) has m_j·2^{b_j} points and r_j's *value part*
⌊r_j / 2^{b_j}⌋ is s_j. A float axis has no room above its 64 key bits, and needs none: its
refined value is the float whose key is ⌊k_j / 2^{b_j}⌋·2^{b_j} + ⌊u_j / 2^{24 − b_j}⌋
(clamped to the keys of ±inf; −0.0's key −1 moved to −2), a point of the same grid of
2^64 keys (:class:`RefinedFloat`), whose value part is the *coarse bin* of 2^{b_j} keys
sharing the high bits, released as the bin's first or last float. Axes with b_j = 0 are
unchanged. Every term fits a signed 64-bit integer (a_j, c_j, h < 2^24, s_j mod P < 2^24,
fewer than 2^15 axes), so numpy and Spark SQL compute r_j bit for bit alike
(:meth:`TieBreaker.hash_sql`, :meth:`TieBreaker.refined_sql`; a float's bits through
``reflect`` of ``java.lang.Double``).

**Duplicates.** Rows identical on every axis have the same h, hence the same u_j: a table
dominated by exact copies (5% all-zero rows) would lose a whole group of copies to one
cut. So the i-th copy of a row (i = 0, 1, …: its *occurrence rank* among the rows equal
to it in every axis's sort value, :func:`occurrence_ranks`) is refined with

    h' = (h + g(i)) mod P,    g(i) = w·(w + 3141592) mod P,  w = (i mod P)·40692 mod P

(:func:`rank_offset`; g(0) = 0, so a row without an earlier copy keeps h, and a table
without duplicates is refined exactly as before). The copies are identical, so which copy
gets which rank changes nothing: the refined rows depend on the *multiset* of rows, never
on their order. Spark computes i as ``row_number() − 1`` over a window partitioned by
every axis's sort value (:func:`dprect.engines.spark.prefetch.with_ranks`), or — the
``pass`` strategy — with :func:`occurrence_ranks` in each partition, checked by
:func:`row_keys` to be global (:class:`dprect.engines.spark.order_pass.PassRunner`); the sum
stays below 2^59 in int64, and :func:`rank_offset_sql` is the SQL twin.

**Privacy** (docs/privacy.md, "Ties"). The refinement is a fixed, data-independent and
stable map of the multiset of rows (adding or removing a row adds or removes exactly one
refined row), so RandMargins on the refined grids of M_j points (m_j·2^{b_j}, or m_j on a
float axis) is RandMargins as proved; the planner sizes Δ for those grids. Any public b_j
keeps the guarantee: declaring a feature continuous (b_j = 0) is a utility assumption only.

**Utility and cost** (docs/algorithm.md §8). A tie group of G rows is split into 2^b parts
of about G/2^b rows (copies by their ranks), so with 2^b ≥ 100·R (:func:`tie_bits`) the R
cuts overshoot by at most about 1% of the positives; the price is b·ln 2 in the interior
point's ln(m/β_IP). A float axis's tie bits cost no Δ, but the b low key bits of its
released bounds (relative 2^(b−52)).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dprect.core.domains import Domain, FloatBins, FloatOrder, Grid, IntegerRange, Side
from dprect.core.errors import ParameterError

#: the hash's prime modulus (2^24 − 3): products a·(s mod P) < 2^48, sums exact in int64
HASH_PRIME = 16_777_213
#: bits of a hash value (h < P < 2^24)
HASH_BITS = 24
#: the multipliers whose powers are the hash's coefficients a_j and the axes' mixers c_j
_BASE = 48_271
_MIX_BASE = 69_621
#: the occurrence rank's scrambler (:func:`rank_offset`): fixed, public constants
_RANK_MULT = 40_692
_RANK_SHIFT = 3_141_592
#: the most tie bits on an axis
MAX_TIE_BITS = 20
#: the share of the positives all cuts together may overshoot tie groups by: 2^b ≥ R/share
TIE_OVERSHOOT = 0.01
_MAX_REFINED_GRID = 2**62


def coefficient(axis: int) -> int:
    """a_j = 48271^(j+1) mod P: fixed, public, nonzero."""
    return pow(_BASE, axis + 1, HASH_PRIME)


def mixer(axis: int) -> int:
    """c_j = 69621^(j+1) mod P: fixed, public, nonzero (so u_j = c_j·h mod P is a
    bijection of h)."""
    return pow(_MIX_BASE, axis + 1, HASH_PRIME)


def rank_offset(ranks: np.ndarray) -> np.ndarray:
    """g(i) = w·(w + 3141592) mod P with w = (i mod P)·40692 mod P: the hash's offset
    for the i-th copy of a row (module notes, "Duplicates"). g(0) = 0, so a row without
    an identical earlier copy keeps h; g is quadratic in i, so the copies' tie-breakers
    c_j·(h + g(i)) spread over the top bits whatever c_j (a complete Gauss sum has
    modulus √P for every nonzero leading coefficient). Every product < 2^50: int64."""
    w = (np.asarray(ranks, dtype=np.int64) % HASH_PRIME) * _RANK_MULT % HASH_PRIME
    return w * (w + _RANK_SHIFT) % HASH_PRIME


def rank_offset_sql(rank_expr: str) -> str:
    """:func:`rank_offset` in Spark SQL (BIGINT): the same integers."""
    w = f"pmod(pmod(CAST({rank_expr} AS BIGINT), {HASH_PRIME}) * {_RANK_MULT}, {HASH_PRIME})"
    return f"pmod({w} * ({w} + {_RANK_SHIFT}), {HASH_PRIME})"


def occurrence_ranks(columns: Sequence[np.ndarray], keys: np.ndarray | None = None
                     ) -> np.ndarray:
    """Each row's occurrence rank among the rows identical to it on every axis (sort
    values compared exactly; a float's −0.0 equal to +0.0): the copies of a row of
    multiplicity c get the ranks 0, …, c − 1 (in row order: the copies are identical, so
    which copy gets which rank changes no multiset of refined rows).

    Rows are grouped by a 64-bit hash of all their values (wrapping int64 arithmetic), and
    each group of two or more is checked value by value against its first row; a group
    that is not made of identical rows (a hash collision) is split exactly
    (:func:`_exact_ranks`). So the ranks are exact whatever the hash; it only makes the
    common case one sort of n keys. ``keys``: :func:`row_keys` of ``columns`` when the
    caller has them already."""
    n = len(columns[0]) if columns else 0
    ranks = np.zeros(n, dtype=np.int64)
    if n < 2:
        return ranks
    # one column's int64 image at a time: no copy of the table (``keys``: the caller's)
    key = row_keys(columns) if keys is None else keys
    sk = np.sort(key)  # distinct keys, distinct rows: no copies (a plain sort is 7× faster)
    if not (sk[1:] == sk[:-1]).any():
        return ranks
    order = np.argsort(key, kind="stable")
    sk = key[order]
    start = np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1])))
    sizes = np.diff(np.append(start, n))
    multi = sizes > 1
    if not multi.any():
        return ranks
    first = np.repeat(start, sizes)  # per sorted position: its group's first position
    cand = np.flatnonzero(np.repeat(multi, sizes))  # sorted positions in groups ≥ 2
    rows, heads = order[cand], order[first[cand]]
    same = np.ones(len(cand), dtype=bool)
    for c in columns:
        same &= _bits(c[rows]) == _bits(c[heads])
    ranks[rows] = cand - first[cand]
    if not same.all():  # a collision: split the impure groups exactly
        bad_groups = np.unique(first[cand][~same])
        members = order[np.flatnonzero(np.isin(first, bad_groups))]
        members.sort()
        ranks[members] = _exact_ranks(np.stack([_bits(c[members]) for c in columns], axis=1))
    return ranks


def _bits(column: np.ndarray) -> np.ndarray:
    """A column's values as int64 that are equal exactly when the values are (floats by
    their bit pattern after adding +0.0, which turns −0.0 into +0.0)."""
    c = np.asarray(column)
    if c.dtype.kind == "f":
        return (c.astype(np.float64) + 0.0).view(np.int64)
    return c.astype(np.int64, copy=False)


_KEY_MULT = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15 as a signed int64


def row_keys(columns: Sequence[np.ndarray]) -> np.ndarray:
    """A 64-bit hash of each row's values (wrapping int64): identical rows (in the sense of
    :func:`occurrence_ranks`: floats by their bits, −0.0 as +0.0) get equal keys, so rows
    with distinct keys are never identical — the converse needs a check of the values.
    The Spark ``pass`` strategy compares these keys across partitions to learn whether a
    partition's own ranks are the global ones
    (:func:`dprect.engines.spark.pass_kernel.partition_lists`)."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    with np.errstate(over="ignore"):
        for c in columns:
            key ^= _bits(c)
            key *= _KEY_MULT
            key ^= key >> 29
    return key


def _exact_ranks(matrix: np.ndarray) -> np.ndarray:
    """Occurrence ranks of the rows of an int64 matrix, by exact row comparison."""
    _, inverse = np.unique(matrix, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    si = inverse[order]
    start = np.flatnonzero(np.concatenate(([True], si[1:] != si[:-1])))
    sizes = np.diff(np.append(start, len(si)))
    out = np.empty(len(si), dtype=np.int64)
    out[order] = np.arange(len(si)) - np.repeat(start, sizes)
    return out


def hashable(domain: Domain) -> bool:
    """Whether the refinement knows the domain: every kind the package defines (the grid
    indices of :class:`Grid`, :class:`IntegerRange` and :class:`FloatBins`, and the float
    values of :class:`FloatOrder`, hashed by their 64-bit order keys)."""
    return isinstance(domain, Grid | FloatBins | FloatOrder)


def float_keyed(domain: Domain) -> bool:
    """Whether the axis's sort values are float64 (:class:`FloatOrder`): hashed by their
    signed order key, refined in the key's low bits (module notes)."""
    known = _FLOAT_KEYED.get(type(domain))  # the planner asks per round: skip ABC checks
    return isinstance(domain, FloatOrder) if known is None else known


_FLOAT_KEYED = {FloatOrder: True, Grid: False, IntegerRange: False, FloatBins: False}


# -- the order keys of float sort values (FloatOrder): numpy and their SQL twins ----------
_LOW63 = 0x7FFF_FFFF_FFFF_FFFF
#: the order keys of −inf, +inf and −0.0 (FloatOrder's grid runs from the first to the second)
KEY_NEG_INF = -0x7FF0_0000_0000_0001
KEY_POS_INF = 0x7FF0_0000_0000_0000
_KEY_NEG_ZERO = -1


def float_keys(values: np.ndarray) -> np.ndarray:
    """The signed 64-bit order keys of float64 sort values (−0.0 never occurs: FloatOrder
    reads it as +0.0): the bit pattern, with the 63 low bits flipped when negative."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    return np.where(bits < 0, bits ^ np.int64(_LOW63), bits)


def floats_of_keys(keys: np.ndarray) -> np.ndarray:
    """The float64 values of order keys (the inverse of :func:`float_keys`)."""
    k = np.asarray(keys, dtype=np.int64)
    return np.where(k < 0, k ^ np.int64(_LOW63), k).view(np.float64)


def key_sql(expr: str) -> str:
    """The order key of a DOUBLE sort value as a BIGINT, in Spark SQL: the bit pattern
    read by ``java.lang.Double.doubleToLongBits`` (through ``reflect``, whose answer is
    its decimal text), with the 63 low bits flipped when negative — :func:`float_keys`."""
    return _flip(f"CAST(reflect('java.lang.Double', 'doubleToLongBits', {expr}) AS BIGINT)")


def _flip(x: str) -> str:
    """x ^ ((x >> 63) & (2^63 − 1)) in Spark SQL: the 63 low bits of a BIGINT flipped when
    it is negative (the arithmetic shift is −1 exactly then); its own inverse."""
    return f"({x} ^ (shiftright({x}, 63) & {_LOW63}))"


def _float_sql(key: str) -> str:
    """The DOUBLE of a BIGINT order key in Spark SQL (:func:`floats_of_keys`):
    ``Double.longBitsToDouble``'s text, which Java guarantees to read back as the same
    double."""
    return f"CAST(reflect('java.lang.Double', 'longBitsToDouble', {_flip(key)}) AS DOUBLE)"


def _coarse_keys(key: int, bits: int) -> tuple[int, int]:
    """The first and the last order key of the coarse bin of ``key`` (the keys that agree
    with it but for the ``bits`` low bits), capped at ±inf's keys, −0.0's key excluded."""
    low = max((key >> bits) << bits, KEY_NEG_INF)
    high = min(((key >> bits) << bits) + (1 << bits) - 1, KEY_POS_INF)
    return low, high - 1 if high == _KEY_NEG_ZERO else high


def coarse_range(value: float, bits: int) -> tuple[float, float]:
    """The smallest and the largest float of the coarse bin of the float sort value
    ``value`` on a float axis with ``bits`` tie bits: every float whose refined value can
    be at or beyond ``value``'s from one side lies beyond the first, resp. the last."""
    key = int(float_keys(np.array([value]))[0])
    first, last = floats_of_keys(np.array(_coarse_keys(key, bits)))
    return float(first), float(last)


def tie_bits(domains: Sequence[Domain], rounds: int,
             continuous: Collection[int] = ()) -> tuple[int, ...]:
    """The planner's choice of b_j for R = ``rounds`` cuts: the fewest bits with
    2^{b_j} ≥ R / :data:`TIE_OVERSHOOT` (so the cuts together overshoot tie groups by at
    most 1% of the positives), at most :data:`MAX_TIE_BITS` and, on a grid axis, with
    m_j·2^{b_j} ≤ 2^62; 0 for the axes in ``continuous`` (declared free of ties by the
    user: a utility assumption, never a privacy one — docs/privacy.md, "Ties")."""
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ParameterError(f"rounds must be a positive integer, got {rounds!r}")
    # ⌈log₂ x⌉ exactly, as integers (no libm log2, whose last bit may depend on the CPU)
    want = (math.ceil(rounds / TIE_OVERSHOOT) - 1).bit_length()
    out = []
    for j, d in enumerate(domains):
        if not hashable(d) or j in continuous:
            out.append(0)
            continue
        room = MAX_TIE_BITS if float_keyed(d) else 62 - (int(d.size) - 1).bit_length()
        out.append(max(0, min(MAX_TIE_BITS, want, room)))
    return tuple(out)


class RefinedGrid(Domain):
    """Axis j's refined grid (grid and FloatBins axes): m·2^b points, point r standing for
    grid index r >> b."""

    def __init__(self, base: Domain, bits: int) -> None:
        if not hashable(base) or float_keyed(base) or not 0 < bits <= MAX_TIE_BITS:
            raise ParameterError(f"cannot refine {base!r} by {bits} bits")
        self.base = base
        self.bits = int(bits)
        self.size = base.size << self.bits
        if self.size > _MAX_REFINED_GRID:
            raise ParameterError(f"refined grid of {self.size} points is too large")

    def value_index(self, index: int, side: Side = "lo") -> int:
        """The base grid index of refined point ``index`` (either side)."""
        return int(index) >> self.bits

    def encode(self, x: np.ndarray) -> np.ndarray:
        raise ParameterError("a refined grid encodes whole rows (TieBreaker.refine)")

    def sort_sql(self, column: str) -> str:
        raise ParameterError("a refined grid encodes whole rows (TieBreaker.refined_sql)")

    @property
    def bounds(self) -> tuple[float, float] | None:
        return self.base.bounds

    def lower_value(self, index: int) -> float:
        return self.base.lower_value(self.value_index(index))

    def upper_value(self, index: int) -> float:
        return self.base.upper_value(self.value_index(index))

    def to_json(self) -> dict[str, Any]:
        return {"type": "refined", "base": self.base.to_json(), "bits": self.bits}

    def __repr__(self) -> str:
        return f"RefinedGrid({self.base!r}, bits={self.bits})"


class RefinedFloat(FloatOrder):
    """A float-order axis refined by b tie bits: the same grid of float64 order keys
    (m ≈ 2^64 points, so no larger interior-point window), a row's refined value being the
    float whose key is its own key with the b low bits replaced by its tie-breaker.

    The *value part* of refined point ``index`` is its coarse bin — the 2^b consecutive
    keys sharing the high bits — reported as the bin's first float (a lower bound) or its
    last (an upper bound), so a rectangle side is exact to 2^b keys of the float order
    (a relative 2^(b−52) of a normal value: 2^−32 at 20 bits)."""

    def __init__(self, bits: int) -> None:
        if not 0 < bits <= MAX_TIE_BITS:
            raise ParameterError(f"cannot refine a float axis by {bits} bits")
        self.bits = int(bits)

    def value_index(self, index: int, side: Side) -> int:
        """The base (FloatOrder) index of the first (lo) or last (hi) float of the coarse
        bin of refined point ``index``."""
        key = int(index) + KEY_NEG_INF
        low, high = _coarse_keys(key, self.bits)
        return (low if side == "lo" else high) - KEY_NEG_INF

    def encode(self, x: np.ndarray) -> np.ndarray:
        raise ParameterError("a refined float axis encodes whole rows (TieBreaker.refine)")

    def to_json(self) -> dict[str, Any]:
        return {"type": "refined", "base": FloatOrder().to_json(), "bits": self.bits}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RefinedFloat) and other.bits == self.bits

    def __hash__(self) -> int:
        return hash(("RefinedFloat", self.bits))

    def __repr__(self) -> str:
        return f"RefinedFloat(bits={self.bits})"


def refined(domain: Domain, bits: int) -> Domain:
    """The domain the interior point and the cuts use on an axis with ``bits`` tie bits:
    the axis's own (b = 0), its refined grid of m·2^b points, or — float-order axes — the
    same 2^64-key grid with the b low key bits breaking ties (:class:`RefinedFloat`)."""
    if bits == 0:
        return domain
    return RefinedFloat(bits) if float_keyed(domain) else RefinedGrid(domain, bits)


def refined_size(domain: Domain, bits: int) -> int:
    """``refined(domain, bits).size`` without building the domain (the planner asks it
    for every round of every candidate): m·2^b on a grid axis, m on a float-order one."""
    return domain.size if bits == 0 or float_keyed(domain) else domain.size << bits


def value_part(domain: Domain, index: int, side: Side) -> int:
    """A rectangle side's base grid index from a point of the grid the rounds ran on
    (the identity on an unrefined domain)."""
    if isinstance(domain, RefinedGrid | RefinedFloat):
        return domain.value_index(index, side)
    return int(index)


@dataclass(frozen=True)
class TieBreaker:
    """The refinement of every axis: ``bits[j]`` tie bits (0: unchanged), the hash over the
    axes in ``hashed``, of which those in ``floats`` hold float sort values (hashed and
    refined through their order keys; module notes)."""

    bits: tuple[int, ...]
    hashed: tuple[int, ...]
    floats: tuple[int, ...] = ()

    @classmethod
    def for_domains(cls, domains: Sequence[Domain], bits: Sequence[int]) -> TieBreaker:
        if len(bits) != len(domains):
            raise ParameterError(f"{len(bits)} tie bit counts for {len(domains)} axes")
        for j, (d, b) in enumerate(zip(domains, bits, strict=True)):
            if b and not hashable(d):
                raise ParameterError(f"axis {j}: {d!r} takes no tie bits")
            if not 0 <= b <= MAX_TIE_BITS:
                raise ParameterError(f"axis {j}: tie bits must be in [0, {MAX_TIE_BITS}]")
        if not any(bits):
            return cls(tuple(int(b) for b in bits), ())
        hashed = tuple(j for j, d in enumerate(domains) if hashable(d))
        floats = tuple(j for j in hashed if float_keyed(domains[j]))
        return cls(tuple(int(b) for b in bits), hashed, floats)

    @property
    def active(self) -> bool:
        """Whether any axis is refined."""
        return any(self.bits)

    def row_hash(self, columns: Sequence[np.ndarray],
                 ranks: np.ndarray | None = None) -> np.ndarray:
        """h per row from the rows' (unrefined) sort values, int64 in [0, P); with
        ``ranks`` (occurrence ranks, :func:`occurrence_ranks`), h' = (h + g(i)) mod P
        (:func:`rank_offset`)."""
        n = len(columns[0]) if columns else 0
        total = np.zeros(n, dtype=np.int64)
        for j in self.hashed:
            s = float_keys(columns[j]) if j in self.floats \
                else np.asarray(columns[j], dtype=np.int64)
            total += coefficient(j) * (s % HASH_PRIME)
        if ranks is not None:
            total += rank_offset(ranks)
        return total % HASH_PRIME

    def refine(self, columns: Sequence[np.ndarray],
               ranks: np.ndarray | None = None) -> list[np.ndarray]:
        """Every axis's refined sort values r_j (unrefined axes returned as given).

        ``columns`` are the sort values of the WHOLE multiset of rows the rounds run on,
        unless ``ranks`` gives each row's occurrence rank in that multiset
        (:func:`occurrence_ranks`): a caller refining part of the rows (a block, a
        partition) must pass the ranks computed over all of them."""
        if not self.active:
            return list(columns)
        if ranks is None:
            ranks = occurrence_ranks(columns)
        h = self.row_hash(columns, ranks)
        out = []
        for j, (col, b) in enumerate(zip(columns, self.bits, strict=True)):
            if b == 0:
                out.append(col)
                continue
            u = ((mixer(j) * h) % HASH_PRIME) >> (HASH_BITS - b)
            if j in self.floats:
                key = ((float_keys(col) >> b) << b) + u
                np.clip(key, KEY_NEG_INF, KEY_POS_INF, out=key)
                key[key == _KEY_NEG_ZERO] -= 1
                out.append(floats_of_keys(key))
            else:
                out.append((np.asarray(col, dtype=np.int64) << b) + u)
        return out

    def hash_sql(self, sort_exprs: Sequence[str], rank_expr: str | None = None) -> str:
        """h as Spark SQL (BIGINT) from every axis's unrefined sort-value expression: the
        same integers as :meth:`row_hash` (no overflow: see the module notes); with
        ``rank_expr`` (the row's occurrence rank), h'."""
        terms = [f"{coefficient(j)} * pmod("
                 f"{key_sql(sort_exprs[j]) if j in self.floats else sort_exprs[j]}, "
                 f"{HASH_PRIME})" for j in self.hashed]
        if rank_expr is not None:
            terms.append(rank_offset_sql(rank_expr))
        if not terms:
            return "CAST(0 AS BIGINT)"
        return f"pmod({' + '.join(terms)}, {HASH_PRIME})"

    def refined_sql(self, axis: int, sort_expr: str, hash_expr: str,
                    key_expr: str | None = None) -> str:
        """r_j as Spark SQL from the axis's sort-value expression and h's (a column name):
        the same BIGINT, or DOUBLE on a float axis, as :meth:`refine`. On a float axis
        ``key_expr`` may name a column holding the sort value's order key
        (:func:`key_sql`), computed once in an earlier projection."""
        b = self.bits[axis]
        if b == 0:
            return sort_expr
        u = f"shiftright(pmod({mixer(axis)} * {hash_expr}, {HASH_PRIME}), {HASH_BITS - b})"
        if axis not in self.floats:
            return f"(({sort_expr}) * {1 << b} + {u})"
        key = key_sql(sort_expr) if key_expr is None else key_expr
        moved = f"(shiftleft(shiftright({key}, {b}), {b}) + {u})"
        clipped = f"least(greatest({moved}, {KEY_NEG_INF}), {KEY_POS_INF})"
        # −0.0's key −1 becomes −2 (the largest negative subnormal), as in refine
        return _float_sql(f"({clipped} - CAST({clipped} = {_KEY_NEG_ZERO} AS BIGINT))")

    def to_json(self) -> dict[str, Any]:
        return {"bits": list(self.bits), "hash": {"prime": HASH_PRIME, "base": _BASE,
                                                  "mix_base": _MIX_BASE,
                                                  "rank": [_RANK_MULT, _RANK_SHIFT],
                                                  "axes": list(self.hashed),
                                                  "float_axes": list(self.floats)}}

