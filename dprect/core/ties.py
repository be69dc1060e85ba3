"""Tie-breaking for RandMargins: a refined order in which a cut can split a tie group.

Why (docs/algorithm.md §8). A RandMargins cut is non-strict: it removes every remaining
row whose value is at or beyond the threshold p_t. When the round's window D_t lies inside
one large tie group (a feature with 95% zeros, pixel intensities, counts), the cut removes
the whole group — most of the remaining rows — and later rounds read pads: the rectangle
collapses. Here every row gets a tie-breaker u and axis j is ordered by the pair (x_j, u)
lexicographically, so a cut removes a tie group only down to the threshold's u.

**The refinement.** Let s_j be a row's sort value on axis j (a grid index for the grid
domains). The row's hash is

    h = (Σ_{j ∈ H} a_j · (s_j mod P)) mod P,      P = 2^24 − 3 (prime),

over the *hashed* axes H (those with integer sort values: :class:`~dprect.core.domains.Grid`
and :class:`~dprect.core.domains.IntegerRange`), with fixed public coefficients
a_j = 48271^(j+1) mod P. Axis j's tie-breaker is u_j = (c_j·h) mod P with
c_j = 69621^(j+1) mod P — a bijection of h, different per axis, so that the rows one axis's
cuts remove are not the first rows of every other axis's tie groups. With b_j tie bits,
the refined sort value is

    r_j = s_j · 2^{b_j} + ⌊u_j / 2^{24 − b_j}⌋ ∈ [0, m_j·2^{b_j}),

so axis j's refined grid has m_j·2^{b_j} points and r_j's *value part* ⌊r_j / 2^{b_j}⌋ is
s_j. Axes with b_j = 0 are unchanged. Every term fits a signed 64-bit integer
(a_j, c_j, h < 2^24, s_j mod P < 2^24, fewer than 2^15 axes), so numpy and Spark SQL compute r_j
bit for bit alike (:meth:`TieBreaker.hash_sql`, :meth:`TieBreaker.refined_sql`).

**Privacy** (docs/privacy.md, "Ties"). The refinement is a fixed, row-local, data-independent
map: neighbouring tables map to neighbouring refined tables, and RandMargins on the refined
grid is exactly RandMargins as proved, run on m_j·2^{b_j}-point grids — so the planner sizes
Δ for those grids (the interior point's failure bound m_j·2^{b_j}·e^{−ε⌈Δ/2⌉/2} ≤ β_IP).
The coefficients need no secrecy and no randomness: the guarantee holds for every choice.

**Utility and cost.** Rows that differ on some hashed axis get (pseudo-)independent u_j,
so a tie group of G rows is split into 2^b parts of about G/2^b rows and a cut removes at
most one part beyond its block; with 2^b ≥ 100·R (:func:`tie_bits`) the R cuts together
overshoot by at most about 1% of the positives, whatever the table's size. The price is
b·ln 2 in the interior point's ln(m/β_IP), i.e. a larger Δ. It cannot be avoided: when a
window lies inside a tie group of G rows, the interior point must place its output among
about G/Δ positions of the group, and a Δ sized only for m fails there with probability
about β_IP·G/Δ (measured: 3·10⁻⁴ per call, and empty boxes, on pixel-like tables).
Rows identical on every hashed axis share u: a table dominated by exact duplicates can
still lose a duplicate group to one cut.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dprect.core.domains import Domain, Grid, Side
from dprect.core.errors import ParameterError

#: the hash's prime modulus (2^24 − 3): products a·(s mod P) < 2^48, sums exact in int64
HASH_PRIME = 16_777_213
#: bits of a hash value (h < P < 2^24)
HASH_BITS = 24
#: the multipliers whose powers are the hash's coefficients a_j and the axes' mixers c_j
_BASE = 48_271
_MIX_BASE = 69_621
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


def hashable(domain: Domain) -> bool:
    """Whether the domain's sort values are integers (grid indices) that can be refined."""
    return isinstance(domain, Grid)


def tie_bits(domains: Sequence[Domain], rounds: int) -> tuple[int, ...]:
    """The planner's choice of b_j for R = ``rounds`` cuts: the fewest bits with
    2^{b_j} ≥ R / :data:`TIE_OVERSHOOT` (so the cuts together overshoot tie groups by at
    most 1% of the positives), at most :data:`MAX_TIE_BITS` and with m_j·2^{b_j} ≤ 2^62;
    0 for non-grid axes."""
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ParameterError(f"rounds must be a positive integer, got {rounds!r}")
    want = math.ceil(math.log2(rounds / TIE_OVERSHOOT))
    out = []
    for d in domains:
        if not hashable(d):
            out.append(0)
            continue
        room = 62 - math.ceil(math.log2(d.size))
        out.append(max(0, min(MAX_TIE_BITS, want, room)))
    return tuple(out)


class RefinedGrid(Domain):
    """Axis j's refined grid: m·2^b points, point r standing for grid index r >> b."""

    def __init__(self, base: Domain, bits: int) -> None:
        if not hashable(base) or not 0 < bits <= MAX_TIE_BITS:
            raise ParameterError(f"cannot refine {base!r} by {bits} bits")
        self.base = base
        self.bits = int(bits)
        self.size = base.size << self.bits
        if self.size > _MAX_REFINED_GRID:
            raise ParameterError(f"refined grid of {self.size} points is too large")

    def value_index(self, index: int) -> int:
        """The base grid index of refined point ``index``."""
        return int(index) >> self.bits

    def encode(self, x: np.ndarray) -> np.ndarray:
        raise ParameterError("a refined grid encodes whole rows (TieBreaker.refine)")

    def sort_sql(self, column: str) -> str:
        raise ParameterError("a refined grid encodes whole rows (TieBreaker.refined_sql)")

    @property
    def bounds(self) -> tuple[float, float] | None:
        return self.base.bounds

    def to_index(self, sort_values: np.ndarray) -> np.ndarray:
        return np.asarray(sort_values, dtype=np.int64).astype(np.uint64)

    def cut_threshold(self, index: int, side: Side) -> int:
        return int(index)

    def lower_value(self, index: int) -> float:
        return self.base.lower_value(self.value_index(index))

    def upper_value(self, index: int) -> float:
        return self.base.upper_value(self.value_index(index))

    def to_json(self) -> dict[str, Any]:
        return {"type": "refined", "base": self.base.to_json(), "bits": self.bits}

    def __repr__(self) -> str:
        return f"RefinedGrid({self.base!r}, bits={self.bits})"


def refined(domain: Domain, bits: int) -> Domain:
    """The domain the interior point and the cuts use on an axis with ``bits`` tie bits."""
    return domain if bits == 0 else RefinedGrid(domain, bits)


@dataclass(frozen=True)
class TieBreaker:
    """The refinement of every axis: ``bits[j]`` tie bits (0: unchanged), the hash over the
    axes in ``hashed`` (module notes)."""

    bits: tuple[int, ...]
    hashed: tuple[int, ...]

    @classmethod
    def for_domains(cls, domains: Sequence[Domain], bits: Sequence[int]) -> TieBreaker:
        if len(bits) != len(domains):
            raise ParameterError(f"{len(bits)} tie bit counts for {len(domains)} axes")
        for j, (d, b) in enumerate(zip(domains, bits, strict=True)):
            if b and not hashable(d):
                raise ParameterError(f"axis {j}: only grid axes take tie bits")
            if not 0 <= b <= MAX_TIE_BITS:
                raise ParameterError(f"axis {j}: tie bits must be in [0, {MAX_TIE_BITS}]")
        hashed = tuple(j for j, d in enumerate(domains) if hashable(d))
        return cls(tuple(int(b) for b in bits), hashed if any(bits) else ())

    @property
    def active(self) -> bool:
        """Whether any axis is refined."""
        return any(self.bits)

    def row_hash(self, columns: Sequence[np.ndarray]) -> np.ndarray:
        """h per row from the rows' (unrefined) sort values, int64 in [0, P)."""
        n = len(columns[0]) if columns else 0
        total = np.zeros(n, dtype=np.int64)
        for j in self.hashed:
            s = np.asarray(columns[j], dtype=np.int64)
            total += coefficient(j) * (s % HASH_PRIME)
        return total % HASH_PRIME

    def refine(self, columns: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Every axis's refined sort values r_j (unrefined axes returned as given)."""
        if not self.active:
            return list(columns)
        h = self.row_hash(columns)
        out = []
        for j, (col, b) in enumerate(zip(columns, self.bits, strict=True)):
            if b == 0:
                out.append(col)
            else:
                s = np.asarray(col, dtype=np.int64)
                u = (mixer(j) * h) % HASH_PRIME
                out.append((s << b) + (u >> (HASH_BITS - b)))
        return out

    def hash_sql(self, sort_exprs: Sequence[str]) -> str:
        """h as Spark SQL (BIGINT) from every axis's unrefined sort-value expression: the
        same integers as :meth:`row_hash` (no overflow: see the module notes)."""
        terms = [f"{coefficient(j)} * pmod({sort_exprs[j]}, {HASH_PRIME})" for j in self.hashed]
        if not terms:
            return "CAST(0 AS BIGINT)"
        return f"pmod({' + '.join(terms)}, {HASH_PRIME})"

    def refined_sql(self, axis: int, sort_expr: str, hash_expr: str) -> str:
        """r_j as Spark SQL from the axis's sort-value expression and h's (a column name)."""
        b = self.bits[axis]
        if b == 0:
            return sort_expr
        u = f"pmod({mixer(axis)} * {hash_expr}, {HASH_PRIME})"
        return f"(({sort_expr}) * {1 << b} + shiftright({u}, {HASH_BITS - b}))"

    def to_json(self) -> dict[str, Any]:
        return {"bits": list(self.bits), "hash": {"prime": HASH_PRIME, "base": _BASE,
                                                  "mix_base": _MIX_BASE,
                                                  "axes": list(self.hashed)}}


def no_ties(dims: int) -> TieBreaker:
    """The identity refinement (every b_j = 0)."""
    return TieBreaker((0,) * dims, ())
