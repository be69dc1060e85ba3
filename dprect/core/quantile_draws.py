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

**Compiled.** Where numba is loaded (:func:`dprect.core.randomness.kernels`, once a
process's announced work reaches ``JIT_AFTER`` sampler calls) a cell's laws are drawn in one call of
:func:`dprect.core.random_jit.unimodal_rounds` — the same attempts and rounds on the same
stream — from :func:`laws_tables` (a cell's depth rows in one int64 computation,
:func:`rank_depths`; a law with c·kmax < 1 has one bucket, its table read off its depths
without a sampler; else each law's buckets derived from its depth row as its sampler
derives them, :func:`~dprect.core.interior_point.law_buckets`; a sampler is made only
for depths beyond int64, :func:`compiled_tables`): each law's buckets at the first
precision and the exact intervals of the first uniform's 64 bits on which
``Buckets.decide`` picks each bucket (``Buckets.intervals``: each bucket's
:func:`~dprect.core.interior_point.decision_interval`, which ``decide`` reads); a
uniform outside them (``decide`` would draw more bits) pauses the call, the Python
sampler finishes that law from the drawn bits (:func:`_rounds`), and the call resumes at
the next law. A law whose integers do not fit
(:func:`compiled_tables`) takes the Python path. Which path ran changes neither a draw nor
the stream's state after (tests/core/test_quantile_draws_compiled.py; docs/privacy.md
§11a). A small group's centre and sign are drawn the same way (:func:`draw_one`).
Nothing here reads rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from dprect.core.bounds import MAX_WEIGHTED_ROWS
from dprect.core.decimal_grid import DecimalGrid
from dprect.core.interior_point import (
    FIRST_PRECISION,
    FIRST_UNIFORM_BITS,
    Buckets,
    ExactSampler,
    Pieces,
    law_buckets,
    unimodal_sampler,
)
from dprect.core.quantile_centre import (
    DECAY,
    SIGN_DECADES,
    WINDOW_DECADES,
    ZERO_DECADES,
    Cut,
    RankFrame,
    as_depths,
    cut,
    level_of,
    window,
    window_frame,
)
from dprect.core.randomness import PooledSystemRandom, RandomSource, compiled_status

#: each level's acceptance exp(−DECAY·level) as the integers (a, b) of DECAY·level = a/b
ACCEPT = tuple(((DECAY * d).numerator, (DECAY * d).denominator)
               for d in range(WINDOW_DECADES + 1))


@dataclass(frozen=True)
class _Window:
    """The centre's window a cell's laws are drawn in: the cut pieces ``cut`` of the
    grid ``grid``, the released ``centre`` and ``sign``."""

    grid: DecimalGrid
    centre: int
    sign: int
    cut: Cut


def whole_grid(frame: RankFrame, quantiles: Sequence[Fraction], rates: Sequence[Fraction],
               rng: RandomSource) -> list[int]:
    """Each quantile's cell under the uniform measure over the whole grid, in order: the
    exact sampler on the rank law of q_j (depths on the shared ``frame``) at rate c_j."""
    laws = _Laws(frame.starts, frame.sizes, rank_depths(frame, quantiles), rates,
                 frame.grid_size)
    return _draw_all(laws, None, rng)


def near_centre(frame: RankFrame, quantiles: Sequence[Fraction], rates: Sequence[Fraction],
                grid: DecimalGrid, centre: int, sign: int, rng: RandomSource) -> list[int]:
    """Each quantile's cell under the base measure around the released ``centre`` and
    ``sign``, in order: the rank law cut to the window once, the exact sampler on it, each
    round accepted with probability exp(−DECAY·level) (rejection sampling:
    :func:`~dprect.core.quantile_centre.draw_near`'s draws). ``frame``: the cell's rank
    frame, or that frame restricted to the window
    (:func:`~dprect.core.quantile_centre.window_frame`; the same cut pieces and ranks)."""
    c = cut(frame.starts, frame.sizes, window(grid, centre, sign))
    laws = _Laws(c.starts, c.sizes, rank_depths(frame, quantiles, c.index), rates, c.size)
    return _draw_all(laws, _Window(grid, centre, sign, c), rng)


def near_window(ranges: Sequence[tuple[int, int]], firsts: np.ndarray, ends: np.ndarray,
                keys: np.ndarray, row_lo: np.ndarray, row_hi: np.ndarray, incl: np.ndarray,
                before: np.ndarray, n: int, quantiles: Sequence[Fraction],
                rates: Sequence[Fraction], grid: DecimalGrid, centre: int, sign: int,
                rng: RandomSource) -> list[int]:
    """:func:`near_centre` on the cell's frame restricted to the centre's window
    ``ranges`` (:func:`~dprect.core.quantile_centre.window_frame`'s arguments: the keys
    inside the window, their ranks, ``before``, the cell's rows ``n``): where the
    compiled samplers are loaded and every b_j·n fits int64 (:func:`rank_depths`'
    condition), the window's cut pieces and every law's depths are made in one compiled
    pass (:func:`dprect.core.random_jit.window_depths`: the window frame's pieces, which
    tile each range, so the cut keeps them all, laid end to end; the same integers as
    ``window_frame``, ``cut`` and ``rank_depths``, tests/core/test_quantile_draws_compiled.py),
    else by those three — then the same draws (docs/privacy.md §11a)."""
    jit = rng._compiled()
    qa, qb, most = _made_once(_quantile_words, quantiles)
    if jit is None or most * max(n, 1) >= MAX_WEIGHTED_ROWS:
        frame = window_frame(ranges, firsts, ends, keys, row_lo, row_hi, incl, before, n,
                             grid.size)
        return near_centre(frame, quantiles, rates, grid, centre, sign, rng)
    a = np.array([r[0] for r in ranges], dtype=np.int64)
    z = np.array([r[1] for r in ranges], dtype=np.int64)
    starts, sizes, depths, kmax, split = jit.window_depths(
        a, z, (np.asarray(ends) - np.asarray(firsts)).astype(np.int64),
        np.asarray(keys, dtype=np.int64), row_lo, row_hi, np.asarray(incl, dtype=np.int64),
        np.asarray(before, dtype=np.int64), qa[:, 0], qb[:, 0], np.int64(n))
    offsets = np.zeros(len(ranges), dtype=np.int64)
    np.cumsum((z - a)[:-1], out=offsets[1:])
    c = Cut(np.arange(len(starts), dtype=np.int64), starts, sizes, tuple(a.tolist()),
            tuple(offsets.tolist()), int((z - a).sum()))
    laws = _Laws(c.starts, c.sizes, depths, rates, c.size, (kmax, split))
    return _draw_all(laws, _Window(grid, centre, sign, c), rng)


def compiled_cell(keys: np.ndarray, counts: np.ndarray, at: np.ndarray, plan: Any,
                  rng: RandomSource) -> tuple[list[int], int] | None:
    """A small group's whole draws (:func:`dprect.core.quantiles.draws`: the noisy count,
    the centre, the sign, each quantile near them) in ONE compiled call
    (:func:`dprect.core.quantile_cell_jit.cell_draws`), as (the quantiles' cells, the
    noisy count) — or None, the source's state as it was before the call (the twister's
    words; the pool's unread bytes and position, ``PooledSystemRandom.give_back``, and
    the pools its refills read made the next refills, ``random_jit.REFILLS``), where the
    Python path draws the cell: numba not loaded, a plan whose constants pass the
    compiled words (:func:`_cell_constants`), a cell past int64's rows, the large groups'
    branch, or a draw the compiled call does not finish (an undecided uniform, ...).
    The same draws and bits either way (the Python path from the same state;
    tests/core/test_quantile_cell_jit.py)."""
    jit = rng._compiled()
    if jit is None:
        return None
    consts = _cell_constants(plan, jit)
    if consts is None:
        return None
    from dprect.core import quantile_cell_jit as cj  # loaded with the compiled samplers

    counts = np.ascontiguousarray(counts, dtype=np.int64)
    n = int(counts.sum())
    if max(n, 1) * consts["most"] >= MAX_WEIGHTED_ROWS or n >= 1 << 60:
        return None
    kind, mt, pool, pos = rng._state()
    if kind == 0:
        saved = mt.copy()
    else:  # the pool's bytes are not copied: only a refill writes them, and it keeps them
        first = int(pos[0])
        jit.REFILLS.log, jit.REFILLS.kept = [], None  # the pools the refills read, in order
    out = np.zeros(consts["m"], dtype=np.int64)
    try:
        status, noisy = cj.cell_draws(
            kind, mt, pool, pos, np.ascontiguousarray(keys, dtype=np.int64), counts,
            np.ascontiguousarray(at, dtype=np.int64), *consts["args"], out)
    finally:
        refills, jit.REFILLS.log = jit.REFILLS.log, None
        kept, jit.REFILLS.kept = jit.REFILLS.kept, None
    rng._settle(kind, pos)
    if status == jit.DONE:
        return out.tolist(), int(noisy)
    # the state before the call: the Python path reads the very words or bytes it read
    if kind == 0:
        mt[:] = saved
    else:
        assert isinstance(rng._py, PooledSystemRandom)
        unread = None  # unrefilled, the pool still holds the bytes the call read
        if refills:  # else its first refill kept them (random_jit._refill)
            assert kept is not None
            unread = np.frombuffer(kept, dtype=np.uint8)[first:]
        rng._py.give_back(first, unread)
        jit.REFILLS.given[:0] = refills or []  # the pools its refills read: the next ones
    return None


def _cell_constants(plan: Any, jit: Any) -> dict[str, Any] | None:
    """The arguments of :func:`dprect.core.quantile_cell_jit.cell_draws` that the plan
    fixes (made once a plan: :func:`_made_once`), or None where the compiled call cannot
    draw its cells: no count, not the decimal grid, a small branch without a centre, a
    count scale's numerator from 2^96 or denominator from 2^62, a rate's numerator from
    2^62 or denominator from 2^96, a quantile's denominator from 2^62 (the compiled
    samplers' bounds: the Python path draws such cells)."""
    made: dict[str, Any] | None = _made_once(_made_cell_constants, (plan,), jit)
    return made


def _made_cell_constants(plans: Sequence[Any], jit: Any) -> dict[str, Any] | None:
    """:func:`_cell_constants` of the one plan of ``plans`` (:func:`_made_once`'s shape:
    the objects first)."""
    plan = plans[0]
    from dprect.core import quantile_cell_jit as cj
    from dprect.core.quantile_centre import (
        SIGN_DECADES,
        WINDOW_DECADES,
        ZERO_DECADES,
        _block_runs,
        block_count,
    )

    if not plan.counted or plan.grid != "decimal":
        return None
    small = plan.branch(-1)
    if small is plan or not small.centred:
        return None
    scale = plan.count_scale
    s, t = scale.denominator, scale.numerator
    rates = [small.centre_rate, small.sign_rate, *small.rates]
    if s >= jit.LIMIT or t >= jit.WIDE or any(
            r.numerator >= jit.LIMIT or r.denominator >= jit.WIDE for r in rates):
        return None
    qa, qb, most = _quantile_words(small.quantiles)
    if most >= MAX_WEIGHTED_ROWS:
        return None
    g = DecimalGrid(plan.resolution)  # ``quantiles.quantile_grid``'s decimal grid
    firsts, ids = _block_runs(g)
    consts = np.zeros(15, dtype=np.int64)
    consts[[cj.S, cj.SPLIT_ROWS, cj.PER_SIGN, cj.ZERO, cj.PER_DECADE, cj.SIZE,
            cj.BLOCKS, cj.CENTRE_NUM, cj.SIGN_NUM, cj.BITS, cj.SHARE, cj.WINDOW,
            cj.ZERO_DECADES, cj.SIGN_DECADES]] = (
        s, plan.split_rows, g.per_sign, g.zero, g.per_decade, g.size, block_count(g),
        small.centre_rate.numerator, small.sign_rate.numerator, FIRST_UNIFORM_BITS,
        RARE_BITS, WINDOW_DECADES, ZERO_DECADES, SIGN_DECADES)

    def words(dens: Sequence[int]) -> np.ndarray:
        return np.array([(d >> 64, d & 0xFFFFFFFFFFFFFFFF) for d in dens], dtype=np.uint64)

    lo, hi = _exp_words()
    args = (consts, words([t])[0], words([small.centre_rate.denominator]),
            words([small.sign_rate.denominator]), np.ascontiguousarray(qa[:, 0]),
            np.ascontiguousarray(qb[:, 0]),
            np.array([r.numerator for r in small.rates], dtype=np.int64),
            words([r.denominator for r in small.rates]), np.asarray(firsts, np.int64),
            np.asarray(ids, np.int64), lo, hi, _ACCEPT)
    return {"args": args, "m": len(small.quantiles), "most": most}


def draw_one(pieces: Pieces, rate: Fraction, rng: RandomSource) -> int:
    """``interior_point.sample_unimodal(pieces, rate, rng)``'s draw and bits, compiled
    where :func:`whole_grid`'s draws are: a small group's centre and sign (the pieces
    ``trusted``, as the quantiles': built from the cell's checked statistics)."""
    depths = pieces.depths.reshape(1, -1) if pieces.depths.dtype == np.int64 \
        else [pieces.depths]
    return _draw_all(_Laws(pieces.starts, pieces.sizes, depths, [rate],
                           pieces.grid_size), None, rng)[0]


def rank_depths(frame: RankFrame, quantiles: Sequence[Fraction],
                index: np.ndarray | None = None) -> Any:
    """Each quantile's depths on the frame's pieces (or the pieces ``index``): row j is
    ``as_depths(frame.weighted(q_j, index))`` — in ONE int64 computation of shape
    (m, pieces) where every b_j·n stays in int64 (the condition under which
    ``weighted`` computes in int64: the same integers, by the same operations), else a
    list of each quantile's own rows (Python integers beyond int64)."""
    a, b, most = _made_once(_quantile_words, quantiles)
    if most * max(frame.n, 1) >= MAX_WEIGHTED_ROWS:
        return [as_depths(frame.weighted(q, index)) for q in quantiles]
    lo, hi = (frame.lo, frame.hi) if index is None else (frame.lo[index], frame.hi[index])
    t = a * np.int64(frame.n)  # a·n < b·n < 2^62: exact in int64
    weighted = lo * b  # max(0, b·lo − a·n, a·n − b·hi), in place on two arrays
    weighted -= t
    above = hi * b
    np.subtract(t, above, out=above)
    np.maximum(weighted, above, out=weighted)
    np.maximum(weighted, 0, out=weighted)
    return np.subtract(weighted.max(axis=1, keepdims=True), weighted, out=weighted)


class _Laws:
    """The laws of one cell's draws, sharing the pieces ``starts`` and ``sizes`` of a
    grid of ``size`` points: law j has the depths ``depths[j]`` (an (m, pieces) int64
    array, or m rows of any integer dtype) and the exact rate ``rates[j]``. Its exact
    sampler (``unimodal_sampler``, ``trusted``) is made only where the Python path
    draws it (:meth:`sampler`): the compiled tables of one-bucket laws are read off the
    depths (:func:`_one_bucket_tables`). ``peaks``: each law's largest depth and its
    first piece, where made already (int64 arrays; else read off the depths)."""

    def __init__(self, starts: np.ndarray, sizes: np.ndarray, depths: Any,
                 rates: Sequence[Fraction], size: int,
                 peaks: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.starts, self.sizes, self.depths, self.size = starts, sizes, depths, size
        self.rates = list(rates)
        self._peaks = peaks
        self._samplers: dict[int, ExactSampler] = {}

    def peaks(self) -> tuple[np.ndarray, np.ndarray]:
        """Each law's largest depth and its first piece (int64 depth rows only)."""
        if self._peaks is None:
            self._peaks = (self.depths.max(axis=1), self.depths.argmax(axis=1))
        return self._peaks

    def __len__(self) -> int:
        return len(self.rates)

    def sampler(self, j: int) -> ExactSampler:
        """Law j's exact sampler (made once)."""
        if j not in self._samplers:
            rate = self.rates[j]
            self._samplers[j] = unimodal_sampler(
                Pieces(self.starts, self.sizes, self.depths[j], 2.0 * float(rate),
                       self.size), rate, trusted=True)
        return self._samplers[j]


def _rounds(sampler: ExactSampler, near: _Window | None, rng: RandomSource,
            u: int | None = None) -> int:
    """One law's draw in Python: the exact sampler's draw (on the whole grid), or its
    rounds, each accepted with probability exp(−DECAY·level) (in the window); ``u``: the
    first attempt's first uniform, drawn already (by the compiled rounds)."""
    while True:
        y = sampler.sample(rng, u)
        u = None
        if near is None:
            return y
        i = near.cut.cell(y)
        level = level_of(near.grid, near.centre, near.sign, i)
        if level == 0 or rng.bernoulli_exp_ratio(*ACCEPT[level]):
            return i


def _draw_all(laws: _Laws, near: _Window | None, rng: RandomSource) -> list[int]:
    """Every law's draw, in order: in one compiled call where numba is loaded and the
    integers fit (:func:`laws_tables`; :func:`dprect.core.random_jit.unimodal_rounds`),
    a law it pauses on finished by :func:`_rounds` from the drawn bits and the calls
    resumed after it — else by :func:`_rounds`. The same draws and bits either way."""
    if not len(laws):
        return []
    jit = rng._compiled()
    tables = None if jit is None else laws_tables(laws, jit)
    if tables is None:
        return [_rounds(laws.sampler(j), near, rng) for j in range(len(laws))]
    out = np.zeros(len(laws), dtype=np.int64)
    window_args = _window_args(near)
    first = 0
    while first < len(laws):
        status, law, u = rng._run(jit.unimodal_rounds, first, *tables, *window_args, out)
        if status == jit.DONE:
            break
        if status == jit.FAULT:
            raise AssertionError("quantile draws: a point outside its bucket or window")
        compiled_status(status, jit)  # PAUSE here (BOUND raises)
        out[law] = _rounds(laws.sampler(int(law)), near, rng, int(u))
        first = int(law) + 1
    return out.tolist()


#: the compiled tables hold the buckets of all but about 2^−RARE_BITS of a law's weight
#: (``Buckets.intervals``): an attempt past them is finished in Python (the same draw)
RARE_BITS = 24

#: the rounds' acceptance as (a, b) rows, and the window arguments of an uncentred call
_ACCEPT = np.array(ACCEPT, dtype=np.int64)
_NO_WINDOW = (False, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
              np.zeros(7, dtype=np.int64), _ACCEPT)


def _window_args(near: _Window | None) -> tuple[Any, ...]:
    """:func:`dprect.core.random_jit.unimodal_rounds`'s window arguments (centred,
    firsts, offsets, grid, accept)."""
    if near is None:
        return _NO_WINDOW
    g = near.grid
    consts = np.array([g.per_sign, g.zero, g.per_decade, near.centre, near.sign,
                       ZERO_DECADES, SIGN_DECADES], dtype=np.int64)
    return (True, np.array(near.cut.firsts, dtype=np.int64),
            np.array(near.cut.offsets, dtype=np.int64), consts, _ACCEPT)


def laws_tables(laws: _Laws, jit: Any) -> tuple[Any, ...] | None:
    """:func:`compiled_tables` of the laws ``laws``: read off their depths where every
    law has one bucket (:func:`_one_bucket_tables`), else from their int64 depth rows
    (:func:`_depth_tables`), else (depths beyond int64) from their samplers."""
    fast = _one_bucket_tables(laws, jit)
    if fast is not None:
        return fast
    depths = laws.depths
    if not isinstance(depths, np.ndarray) or depths.dtype != np.int64:
        return compiled_tables([laws.sampler(j) for j in range(len(laws))], laws.starts,
                               laws.size, jit)
    return _depth_tables(laws, depths, jit)


def _depth_tables(laws: _Laws, depths: np.ndarray, jit: Any) -> tuple[Any, ...] | None:
    """:func:`compiled_tables` of ``laws`` (int64 depths, one row a law) without their
    samplers, in ONE compiled call (:func:`dprect.core.quantile_jit.laws_tables`: each
    law's kmax and split, its buckets by the samplers' derivation and the tables'
    assembly, on machine words — the arrays of :func:`_python_depth_tables`,
    tests/core/test_quantile_jit.py); None where :func:`compiled_tables` gives None (a
    grid of ``jit.LIMIT`` points or more, a rate past the compiled words). A law whose
    buckets do not tile the grid goes to the Python derivation, which raises."""
    words = _made_once(_rate_words, laws.rates, jit)
    if laws.size >= jit.LIMIT or words is None:
        return None
    from dprect.core import quantile_jit  # loaded with the compiled samplers (numba)

    lo, hi = _exp_words()
    starts = laws.starts.astype(np.int64)
    status, table, rows, intervals = quantile_jit.laws_tables(
        starts, depths, words[0], words[2], np.int64(laws.size), lo, hi,
        FIRST_UNIFORM_BITS, RARE_BITS)
    if status != quantile_jit.DONE:
        return _python_depth_tables(laws, depths, jit)
    return starts, depths, table, words[2], rows, intervals, FIRST_UNIFORM_BITS


@lru_cache(maxsize=1)
def _exp_words() -> tuple[np.ndarray, np.ndarray]:
    """The first precision's exp(−n) enclosures as words (made once a process)."""
    from dprect.core import quantile_jit

    return quantile_jit.exp_tables()


def _python_depth_tables(laws: _Laws, depths: np.ndarray, jit: Any
                         ) -> tuple[Any, ...] | None:
    """:func:`_depth_tables` in Python integers (the reference): each law's kmax and
    split (its first deepest piece) taken for every row at once, its buckets by the
    samplers' own derivation (:func:`~dprect.core.interior_point.law_buckets`), the
    tables by the same assembly (:func:`_tables`) — the arrays of
    :func:`compiled_tables` (tests/core/test_quantile_draws_compiled.py)."""
    if laws.size >= jit.LIMIT or _made_once(_rate_words, laws.rates, jit) is None:
        return None
    kmax, split = (x.tolist() for x in laws.peaks())
    found = [(k, r.numerator, r.denominator,
              law_buckets(laws.starts, depths[j], laws.size, k, split[j], r.numerator,
                          r.denominator, FIRST_PRECISION))
             for j, (k, r) in enumerate(zip(kmax, laws.rates, strict=True))]
    return _tables(found, laws.starts, depths)


def _one_bucket_tables(laws: _Laws, jit: Any) -> tuple[Any, ...] | None:
    """:func:`compiled_tables` of ``laws`` where each has c·kmax < 1 (num·kmax < den,
    i.e. kmax ≤ ⌊(den − 1)/num⌋: ``ExactSampler.n_max`` = 0, so its buckets are
    ``interior_point._one_bucket``'s — bucket 0 holding the whole grid of ``size`` points
    as the run (0, size, size), single, no interval) and its integers fit as
    :func:`compiled_tables` requires; None otherwise (then :func:`laws_tables` goes
    on). The same arrays, without the samplers
    (tests/core/test_quantile_draws_compiled.py)."""
    depths = laws.depths
    if not isinstance(depths, np.ndarray) or depths.dtype != np.int64 \
            or laws.size >= jit.LIMIT:
        return None
    words = _made_once(_rate_words, laws.rates, jit)
    if words is None:
        return None
    nums, most, dens = words
    kmax = laws.peaks()[0]
    if not (kmax <= most).all():
        return None
    m = len(nums)
    table = np.zeros((m + 1, 5), dtype=np.int64)
    table[:m, 0] = kmax
    table[:m, 1] = nums
    table[:m, 2] = 1  # single
    table[:, 3] = np.arange(m + 1)  # law j's bucket row is j (one row a law)
    rows = np.empty((m, 5), dtype=np.int64)
    rows[:] = (0, laws.size, 0, laws.size, laws.size)  # (n, size, run)
    return (laws.starts.astype(np.int64), depths, table, dens, rows,
            np.zeros((0, 3), dtype=np.uint64), FIRST_UNIFORM_BITS)


#: what :func:`_made_once` made, by the identities of the objects it was made from
_MADE: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = {}


def _made_once(make: Any, fractions: Sequence[Any], *args: Any) -> Any:
    """``make(fractions, *args)``, made once for the same objects (a plan's quantiles and
    rates, or a plan: made once, a few a process; the objects are kept, so their
    identities are not reused)."""
    key = (make, *map(id, fractions), *args)
    hit = _MADE.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], fractions, strict=True)):
        return hit[1]
    if len(_MADE) >= 256:
        _MADE.clear()
    made = make(fractions, *args)
    _MADE[key] = (tuple(fractions), made)
    return made


def _rate_words(rates: Sequence[Fraction], jit: Any) -> Any:
    """For the rates num_j/den_j: (the nums as int64, ⌊(den_j − 1)/num_j⌋ capped at
    2^63 − 1 as int64 — the largest kmax with num·kmax < den —, the dens' two words as
    uint64), or None where a num reaches ``jit.LIMIT`` or a den ``jit.WIDE``
    (:func:`compiled_tables`' bounds)."""
    nums = [r.numerator for r in rates]
    dens = [r.denominator for r in rates]
    if not all(n < jit.LIMIT and d < jit.WIDE for n, d in zip(nums, dens, strict=True)):
        return None
    return (np.array(nums, dtype=np.int64),
            np.array([min((d - 1) // n, 2**63 - 1) for n, d in zip(nums, dens, strict=True)],
                     dtype=np.int64),
            np.array([(d >> 64, d & 0xFFFFFFFFFFFFFFFF) for d in dens], dtype=np.uint64))


def _quantile_words(quantiles: Sequence[Fraction]) -> tuple[np.ndarray, np.ndarray, int]:
    """The quantiles q_j = a_j/b_j as (a, b) int64 columns and the largest b (Python
    integer: the int64 bound of :func:`rank_depths` is checked on it exactly)."""
    b = [q.denominator for q in quantiles]
    if max(b) >= MAX_WEIGHTED_ROWS:  # no int64 computation: rank_depths goes by rows
        return np.zeros((0, 1), np.int64), np.zeros((0, 1), np.int64), max(b)
    return (np.array([q.numerator for q in quantiles], dtype=np.int64)[:, None],
            np.array(b, dtype=np.int64)[:, None], max(b))


def compiled_tables(samplers: list[ExactSampler], starts: np.ndarray, size: int,
                    jit: Any) -> tuple[Any, ...] | None:
    """What :func:`dprect.core.random_jit.unimodal_rounds` reads of the laws ``samplers``
    (sharing the pieces ``starts`` of a grid of ``size`` points): (starts, depths, laws,
    dens, rows, intervals, bits) — each law's buckets at the first precision and the
    intervals of its decision on the first uniform's bits (``Buckets.intervals``) — or
    None where an integer does not fit its word: a grid of 2^62 points or more, depths
    beyond int64, a rate's numerator from 2^62 or its denominator from 2^96 (then the
    Python path, the same draws). In range every integer of the compiled draw is below
    2^63: points and bucket sizes below the grid's size, kmax − depth ≤ kmax, n ≤ the
    buckets' cut (140 at the first precision) and γ·den = num·(kmax − depth) − n·den
    on two words."""
    if size >= jit.LIMIT:
        return None
    for s in samplers:
        if s.depths.dtype == object or s.num >= jit.LIMIT or s.den >= jit.WIDE:
            return None
    depths = np.stack([s.depths for s in samplers]) if len(samplers) > 1 \
        else samplers[0].depths.reshape(1, -1)
    return _tables([(s.kmax, s.num, s.den, s.buckets(FIRST_PRECISION)) for s in samplers],
                   starts, depths)


def _tables(found: Sequence[tuple[int, int, int, Buckets]], starts: np.ndarray,
            depths: np.ndarray) -> tuple[Any, ...]:
    """:func:`compiled_tables`' arrays from each law's (kmax, num, den, buckets at
    ``FIRST_PRECISION``) and the laws' depth rows: the one assembly of the tables."""
    laws: list[tuple[int, ...]] = []
    dens: list[tuple[int, int]] = []
    rows: list[tuple[int, ...]] = []
    intervals: list[tuple[int, int, int]] = []
    for kmax, num, den, buckets in found:
        laws.append((kmax, num, int(buckets.single), len(rows), len(intervals)))
        dens.append((den >> 64, den & 0xFFFFFFFFFFFFFFFF))
        if not buckets.single:
            at = len(rows)
            table = buckets.intervals(FIRST_UNIFORM_BITS, RARE_BITS)
            intervals += [(lo, hi, at + j) for lo, hi, j in table]
            used = table[-1][2] + 1 if table else 0
        else:
            used = 1
        rows += [(n, z, *run) for n, z, run in zip(buckets.ns[:used], buckets.sizes[:used],
                                                     buckets.runs[:used], strict=True)]
    laws.append((0, 0, 0, len(rows), len(intervals)))
    return (starts.astype(np.int64), depths.astype(np.int64, copy=False),
            np.array(laws, dtype=np.int64), np.array(dens, dtype=np.uint64),
            np.array(rows, dtype=np.int64).reshape(-1, 5),
            np.array(intervals, dtype=np.uint64).reshape(-1, 3), FIRST_UNIFORM_BITS)

__all__ = ["ACCEPT", "compiled_cell", "compiled_tables", "draw_one", "laws_tables", "near_centre",
           "near_window", "rank_depths", "whole_grid"]
