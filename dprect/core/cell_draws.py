"""The draws of describe cells given their statistics and centres: each cell's lower side,
upper side, sum noise and sum-of-squares noise, in that order, from its group's stream
(docs/privacy.md §11, "Draw order"; :func:`dprect.core.aggregates.finish_cell` makes the
released values from them).

:func:`draw_cell` draws one cell on its own; :func:`draw_cells` draws a block's cells,
in the block's order, where the compiled samplers run (:mod:`dprect.core.random_jit`) in
ONE compiled call for the whole block (:func:`dprect.core.block_jit.block_draws`): the
same kernels on the same states in the same order, so the same values and the same bits
consumed as :func:`draw_cell` cell after cell (a draw the block cannot make compiled is
made here, exactly as :func:`draw_cell` makes it, and the block goes on). Nothing here
reads a row; a side reads its tail counts only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from dprect.core.randomness import JointStreams, RandomSource, compiled_status
from dprect.core.records import quick_init
from dprect.core.step_exponential import (
    DECAY,
    MAX_LEVEL,
    SLACK,
    compiled_side_arguments,
    draw_step,
    side_drawn,
)
from dprect.core.tail_bounds import CandidateStream


class SideTier(Protocol):
    """What a cell's side reads of its split (:class:`dprect.core.aggregates.Tier`)."""

    @property
    def target(self) -> int: ...

    @property
    def stride(self) -> int: ...

    @property
    def side_rate(self) -> Fraction: ...


class _Strided:
    """Every ``stride``-th candidate of a side's stream, as :func:`draw_step` reads it."""

    def __init__(self, stream: CandidateStream, stride: int) -> None:
        self.stream, self.stride = stream, stride

    def has(self, k: int) -> bool:
        return self.stream.has(k * self.stride)

    @property
    def count(self) -> int:
        """The steps made so far (k·stride below the stream's made candidates): every
        k below it exists, as :attr:`CandidateStream.count` tells for the stream."""
        return -(-self.stream.count // self.stride)


def side_step(tails: np.ndarray, stream: CandidateStream, tier: SideTier,
              rng: RandomSource) -> int:
    """A side's drawn candidate (an index into ``stream``) under ``tier``: one monotone
    exponential mechanism over the candidates 0, s, 2s, … (s = ``tier.stride``), their
    tail counts ``tails[::s]`` (:func:`~dprect.core.step_exponential.draw_step`)."""
    s = tier.stride
    if s == 1:
        return draw_step(tails, stream, tier.target, tier.side_rate, rng)
    return s * draw_step(np.asarray(tails)[::s], _Strided(stream, s),
                         tier.target, tier.side_rate, rng)


@quick_init
@dataclass(frozen=True)
class CellDraw:
    """What a cell draws from: its sides' tail counts and candidate streams, its split,
    and the (s, t) of each noise it draws (DLap at scale t/s, a scale's denominator and
    numerator), in order; ``row``: its group's index into the sources."""

    lower_tails: np.ndarray
    upper_tails: np.ndarray
    lower: CandidateStream
    upper: CandidateStream
    tier: SideTier
    noises: tuple[tuple[int, int], ...]
    row: int


def draw_cell(cell: CellDraw, rng: RandomSource) -> tuple[int, int, list[int]]:
    """(the lower side's step, the upper side's, the noises) of one cell, in that order."""
    kl = side_step(cell.lower_tails, cell.lower, cell.tier, rng)
    ku = side_step(cell.upper_tails, cell.upper, cell.tier, rng)
    return kl, ku, [rng.discrete_laplace_int(s, t) for s, t in cell.noises]


def noise_value(uh: int, ul: int, v: int, negative: int, s: int, t: int) -> int:
    """A compiled discrete Laplace draw at scale t/s from its parts (U's two words, V,
    the sign): ±⌊(U + t·V)/s⌋, as :meth:`~dprect.core.randomness.RandomSource.
    discrete_laplace_int` makes it."""
    g = ((uh << 64 | ul) + t * v) // s
    return -g if negative else g


def block_noises(sources: list[RandomSource], per: int, s: int, t: int
                 ) -> list[int] | None:
    """``per`` draws of DLap at scale t/s from each source in turn — what
    ``[src.discrete_laplace_int(s, t) for src in sources for _ in range(per)]`` draws,
    the same values and bits — in one compiled call
    (:func:`dprect.core.block_jit.block_noises`), or None where that call cannot make
    them as that one would (the sources not joinable, :meth:`~dprect.core.randomness.
    JointStreams.possible`, or s and t past the compiled samplers' integers): the
    caller then draws them one by one."""
    if not sources or not JointStreams.possible(sources):
        return None
    from dprect.core import block_jit  # loaded with the compiled samplers (numba)
    from dprect.core import random_jit as jit

    if not (s < jit.LIMIT and t < jit.WIDE):
        return None
    out = np.zeros((len(sources) * per, 4), dtype=np.uint64)
    joint = JointStreams(sources)
    made, status = joint.run(block_jit.block_noises, per, s, np.uint64(t >> 64),
                             np.uint64(t & (2**64 - 1)), t >= jit.LIMIT, out)
    if made < len(out):
        compiled_status(int(status), jit)  # raises: BOUND
    if t < jit.LIMIT:  # one word (a count's scale): the values at once where they fit
        at_once = one_word_noises(out[:, 1], out[:, 2], out[:, 3], np.uint64(s),
                                  np.uint64(t))
        if at_once is not None:
            return at_once.tolist()
    return [noise_value(uh, ul, v, negative, s, t) for uh, ul, v, negative in out.tolist()]


def one_word_noises(u: np.ndarray, v: np.ndarray, negative: np.ndarray, s: Any, t: Any
                    ) -> np.ndarray | None:
    """:func:`noise_value` of many draws of one-word scales (t < 2^62, U < t: U's high
    word 0) as int64, from their parts as uint64 arrays (``s`` and ``t`` arrays or
    scalars, uint64): ±⌊(U + t·V)/s⌋ computed in uint64 where U + t·V < 2^64 and the
    quotient < 2^63 for every draw — then the very integers of ``noise_value`` — else
    None (the caller makes them one by one)."""
    top = np.uint64(2**64 - 1)
    if not (v <= (top - u) // t).all():  # U + t·V past 2^64
        return None
    g = (u + t * v) // s
    if not (g < np.uint64(2**63)).all():
        return None
    signed = g.astype(np.int64)
    return np.where(negative != 0, -signed, signed)


def block_bits(sources: list[RandomSource], rows: Sequence[int], k: int
               ) -> list[int] | None:
    """``[sources[r].randbits(k) for r in rows]`` — the same values and bits, ``rows``
    distinct — in one compiled call (:func:`dprect.core.block_jit.block_words`) where the
    sources are seeded and joinable (:meth:`~dprect.core.randomness.JointStreams.
    possible`), else None: the caller draws them one by one (a describe block's second
    streams' seeds)."""
    if not sources or not sources[0].seeded or not JointStreams.possible(sources):
        return None
    from dprect.core import block_jit  # loaded with the compiled samplers (numba)

    joint = JointStreams(sources)
    out = np.zeros((len(rows), (k + 31) // 32), dtype=np.uint32)
    block_jit.block_words(joint.states, np.array(rows, dtype=np.int64).reshape(-1), k, out)
    data, size = out.astype("<u4").tobytes(), out.shape[1] * 4
    return [int.from_bytes(data[i * size:(i + 1) * size], "little") for i in range(len(rows))]


def draw_cells(cells: Sequence[CellDraw], sources: list[RandomSource],
               joined: tuple[np.ndarray, np.ndarray] | None = None
               ) -> list[tuple[int, int, list[int]]]:
    """:func:`draw_cell` of every cell in order, cell i from ``sources[cells[i].row]``:
    in one compiled call for the block where the sources allow it
    (:meth:`~dprect.core.randomness.JointStreams.possible`), else cell by cell. The
    same values and the same bits consumed either way. ``joined``: the cells' tails
    side by side and where each starts, as
    :func:`~dprect.core.describe_stats.joined_tails` makes them (the cells' own tails
    views of them), or None."""
    if not cells or any(len(c.noises) > 2 for c in cells) \
            or not JointStreams.possible(sources):
        return [draw_cell(c, sources[c.row]) for c in cells]
    from dprect.core import block_jit  # loaded with the compiled samplers (numba)
    return _Block(cells, sources, block_jit, joined).draw()


class _Block:
    """One block's arrays for :func:`dprect.core.block_jit.block_draws`, and the draws
    it leaves to Python."""

    def __init__(self, cells: Sequence[CellDraw], sources: list[RandomSource],
                 block_jit: Any, joined: tuple[np.ndarray, np.ndarray] | None) -> None:
        # the cells' kinds: (split, noise scales), a few per block (the plan's splits)
        tiers: dict[tuple[int, tuple[tuple[int, int], ...]], int] = {}
        # each cell's kind (numbered in order of first use) in one pass, each kind's
        # first cell after
        of = [tiers.setdefault((id(c.tier), c.noises), len(tiers)) for c in cells]
        tier_of = np.array(of, dtype=np.int64)
        firsts = [cells[i] for i in np.unique(tier_of, return_index=True)[1].tolist()]
        n = len(cells)
        if joined is None:  # the cells' tails side by side (each side read strided)
            ends = np.cumsum([len(t) for c in cells for t in (c.lower_tails, c.upper_tails)],
                             dtype=np.int64)
            tail_at = np.zeros((n, 3), dtype=np.int64)
            tail_at[:, 1] = ends[0::2]
            tail_at[:, 2] = ends[1::2]
            tail_at[1:, 0] = ends[1::2][:-1]
            tails = np.concatenate(
                [np.zeros(0, dtype=np.int64)]
                + [np.asarray(t, dtype=np.int64) for c in cells
                   for t in (c.lower_tails, c.upper_tails)])
            joined = tails, tail_at
        # each side's candidates made so far
        made = np.array([(c.lower.count, c.upper.count) for c in cells],
                        dtype=np.int64).reshape(n, 2)
        self._setup(cells, sources, block_jit, firsts, tier_of,
                    np.array([c.row for c in cells], dtype=np.int64), joined, made)

    @classmethod
    def of_arrays(cls, cells: Sequence[CellDraw], sources: list[RandomSource],
                  block_jit: Any, kinds: Sequence[CellDraw], tier_of: np.ndarray,
                  rows: np.ndarray, joined: tuple[np.ndarray, np.ndarray], made: np.ndarray
                  ) -> _Block:
        """The block of ``cells`` given as arrays (no cell read unless a draw is left to
        Python or a side read past its candidates made: :meth:`_check_reach`): each
        kind's first cell (``kinds``: split and noise scales), each cell's kind, source
        row, tails (``joined``) and sides' candidates made (``made``, n × 2), what
        :meth:`__init__` reads off the cells."""
        block = cls.__new__(cls)
        block._setup(cells, sources, block_jit, kinds, tier_of, rows, joined, made)
        return block

    def _setup(self, cells: Sequence[CellDraw], sources: list[RandomSource], block_jit: Any,
               firsts: Sequence[CellDraw], tier_of: np.ndarray, rows: np.ndarray,
               joined: tuple[np.ndarray, np.ndarray], made: np.ndarray) -> None:
        from dprect.core import random_jit as jit

        self.cells, self.jit, self.kernel = cells, jit, block_jit.block_draws
        self.block_jit = block_jit
        self.phases = block_jit.PHASES
        self.joint = JointStreams(sources)
        self.tier_of = tier_of
        self.kind_noises = [c.noises for c in firsts]
        kinds = [c.tier for c in firsts]
        self.noise_count = np.array([len(c.noises) for c in firsts], dtype=np.int64)
        n, m = len(tier_of), len(kinds)
        self.targets = np.array([min(int(t.target), jit.LIMIT) for t in kinds],
                                dtype=np.int64)
        self.side_ok = np.zeros(m, dtype=np.int64)
        self.eps_f = np.zeros(m)
        self.mu_f = np.zeros(m)
        self.ints = np.zeros((m, 6), dtype=np.int64)
        for r, t in enumerate(kinds):
            args = compiled_side_arguments(t.side_rate, DECAY, jit)
            if args is not None:
                self.side_ok[r] = 1
                self.eps_f[r], self.mu_f[r] = args[0], args[1]
                self.ints[r] = args[2:]
        self.noise_kind = np.zeros((m, 2), dtype=np.int64)
        self.noise_s = np.zeros((m, 2), dtype=np.int64)
        self.noise_th = np.zeros((m, 2), dtype=np.uint64)
        self.noise_tl = np.zeros((m, 2), dtype=np.uint64)
        for r, c in enumerate(firsts):
            for q, (rate, scale) in enumerate(c.noises):
                self.noise_kind[r, q] = (3 if not (rate < jit.LIMIT and scale < jit.WIDE)
                                         else 1 if scale < jit.LIMIT else 2)
                if self.noise_kind[r, q] != 3:
                    self.noise_s[r, q] = rate
                    self.noise_th[r, q] = scale >> 64
                    self.noise_tl[r, q] = scale & (2**64 - 1)
        self.rows = rows
        self.strides = np.array([t.stride for t in kinds], dtype=np.int64)
        self.tails, self.tail_at = joined
        # each side's steps made (:attr:`_Strided.count`: ⌈made / stride⌉), at once
        self.has_upto = -(-made // self.strides[self.tier_of][:, None])
        self.steps = np.zeros((n, 2, 2), dtype=np.int64)
        self.noises = np.zeros((n, 2, 4), dtype=np.uint64)

    @staticmethod
    def _steps(cell: CellDraw, side: int) -> Any:
        stream = cell.upper if side else cell.lower
        s = cell.tier.stride
        return stream if s == 1 else _Strided(stream, s)

    def draw(self) -> list[tuple[int, int, list[int]]]:
        """Every cell's (lower step, upper step, noises): the block's compiled call, run
        again from the next phase after each draw it leaves to Python."""
        return self._made(self._run())

    def draw_one_noise(self) -> tuple[np.ndarray, list[int]]:
        """:meth:`draw` of a block whose every cell draws ONE noise, as arrays: the steps
        (n × 2, int64) and the noises (Python integers) — the same draws and values,
        no tuple or list a cell."""
        done = self._run()
        python = sorted({i for i, _ in done})
        self._check_reach(python)
        ks = self.steps[:, :, 0] * self.strides[self.tier_of][:, None]
        made = self._one_noise()
        values = made.tolist() if made is not None else self._noise_values()
        for i in python:  # a few cells: their rows as lists, not the block's
            kl, ku, drawn = self._cell(i, self.steps[i].tolist(), self.noises[i].tolist(),
                                       self.has_upto[i].tolist(), done)
            ks[i, 0], ks[i, 1] = kl, ku
            values[i] = drawn[0]
        return ks, values

    def _noise_values(self) -> list[int]:
        """:func:`noise_value` of every cell's first noise: in one compiled call where
        every kind's noise is drawn compiled and every value fits int64
        (:func:`dprect.core.block_jit.wide_noise_values`: ±⌊(U + t·V)/s⌋ on two words,
        exact), else at once on Python integers (object arrays: U = high·2^64 + low,
        the very integers); a draw made in Python (its kind's scale past the compiled
        samplers: s = 0 here) gets a value never read."""
        kinds = self.tier_of
        rate = self.noise_s[:, 0]
        if ((self.noise_kind[:, 0] == 1) | (self.noise_kind[:, 0] == 2)).all() \
                and (rate > 0).all():
            shift = np.array([64 - r.bit_length() for r in rate.tolist()], dtype=np.int64)
            out = np.zeros(len(kinds), dtype=np.int64)
            if self.block_jit.wide_noise_values(
                    self.noises[:, 0], kinds, rate, self.noise_th[:, 0],
                    self.noise_tl[:, 0], shift, out) == len(kinds):
                return list(out.tolist())
        scale = np.array([int(h) << 64 | int(low) for h, low in
                          zip(self.noise_th[:, 0].tolist(), self.noise_tl[:, 0].tolist(),
                              strict=True)] or [0], dtype=object)[kinds]
        rate = np.maximum(self.noise_s[:, 0], 1).astype(object)[kinds]
        z = self.noises[:, 0]
        u = z[:, 0].astype(object) * (1 << 64) + z[:, 1].astype(object)
        g = (u + scale * z[:, 2].astype(object)) // rate
        return list(np.where(z[:, 3] != 0, -g, g).tolist())

    def _run(self) -> dict[tuple[int, int], int]:
        """The block's compiled call, run again from the next phase after each draw it
        leaves to Python; those draws, (cell, phase) → value."""
        done: dict[tuple[int, int], int] = {}  # draws made in Python: (cell, phase) → value
        start, phase = 0, 0
        n = len(self.tier_of)
        while start < n:
            out = self.joint.run(
                self.kernel, start, phase, self.rows, self.tier_of, self.tails,
                self.tail_at, self.has_upto, self.strides, self.targets, self.side_ok,
                self.eps_f, self.mu_f, float(SLACK), MAX_LEVEL, self.ints,
                self.noise_kind, self.noise_s, self.noise_th, self.noise_tl, self.steps,
                self.noises)
            i, ph, status = int(out[0]), int(out[1]), int(out[2])
            if i >= n:
                break
            done[(i, ph)] = self._in_python(i, ph, status, out)
            start, phase = (i, ph + 1) if ph + 1 < self.phases else (i + 1, 0)
        return done

    def _check_reach(self, python: list[int]) -> None:
        """The sides the block drew whole that read past their candidates made before
        asked for them (:meth:`_cell`'s check, the same calls; the candidates a side
        makes do not depend on when)."""
        over = np.asarray((self.steps[:, :, 1] > self.has_upto).any(axis=1))
        over[python] = False
        for i in np.flatnonzero(over).tolist():
            cell = self.cells[i]
            for ph in (0, 1):
                known = int(self.steps[i, ph, 1])
                if known > self.has_upto[i, ph] and not self._steps(cell, ph).has(known - 1):
                    raise AssertionError("more tail counts than the side has candidates")

    def _made(self, done: dict[tuple[int, int], int]) -> list[tuple[int, int, list[int]]]:
        """What :meth:`_cell` makes of every cell: for the cells the block drew whole, the
        sides that read past their candidates made before asked for them (:meth:`_cell`'s
        check, the same calls; the candidates a side makes do not depend on when), the
        steps scaled by the strides at once and the noises made from their parts; a cell
        with a draw made in Python (``done``) by :meth:`_cell` itself."""
        python = sorted({i for i, _ in done})
        self._check_reach(python)
        ks = self.steps[:, :, 0] * self.strides[self.tier_of][:, None]
        noises = self.noises.tolist() if python else []
        made = self._one_noise()
        if made is not None:  # one noise a cell, every value made at once
            out = list(zip(ks[:, 0].tolist(), ks[:, 1].tolist(),
                           [[v] for v in made.tolist()], strict=True))
        else:
            noises = noises or self.noises.tolist()
            out = [(k[0], k[1], [noise_value(z[q][0], z[q][1], z[q][2], z[q][3], rate,
                                             scale)
                                 for q, (rate, scale) in enumerate(self.kind_noises[kind])])
                   for kind, k, z in zip(self.tier_of.tolist(), ks.tolist(), noises,
                                         strict=True)]
        if python:  # Python ints, made at once
            steps, upto = self.steps.tolist(), self.has_upto.tolist()
            for i in python:
                out[i] = self._cell(i, steps[i], noises[i], upto[i], done)
        return out

    def _one_noise(self) -> np.ndarray | None:
        """:func:`noise_value` of every cell's one noise as int64, where every cell draws
        one noise of a one-word scale (t < 2^62: U = the low word) and every
        U + t·V and its quotient fit (checked on the arrays: then the very integers of
        ``noise_value``); else None (made cell by cell). A cell whose draw was made in
        Python gets a value never read."""
        kinds = self.tier_of
        if not (self.noise_count[kinds] == 1).all() or not (self.noise_kind[kinds, 0] == 1).all():
            return None
        return one_word_noises(self.noises[:, 0, 1], self.noises[:, 0, 2],
                               self.noises[:, 0, 3], self.noise_s[kinds, 0].astype(np.uint64),
                               self.noise_tl[kinds, 0])

    def _in_python(self, i: int, ph: int, status: int, out: Any) -> int:
        """The draw the block stopped at, made as :func:`draw_cell` makes it, on the
        cell's source (then handed back to the block)."""
        cell, jit = self.cells[i], self.jit
        rng = self.joint.sources[cell.row]
        try:
            if ph >= 2:
                if status == jit.BOUND:
                    compiled_status(status, jit)  # raises
                s, t = cell.noises[ph - 2]
                return rng.discrete_laplace_int(s, t)
            tails = cell.upper_tails if ph else cell.lower_tails
            stream = cell.upper if ph else cell.lower
            if status in (jit.ASK, jit.PYTHON):  # nothing drawn: the one-cell path
                return side_step(tails, stream, cell.tier, rng)
            steps = self._steps(cell, ph)
            k, level, known, base, shift, far, a, order, held, starts, sizes = out[3:]
            k = side_drawn(status, k, level, known, base, shift, far, a, order, held,
                           starts, sizes, steps, int(self.has_upto[i, ph]),
                           cell.tier.side_rate, DECAY, rng, jit)
            return k * cell.tier.stride
        finally:
            self.joint.adopt(cell.row)

    def _cell(self, i: int, steps: list[list[int]], noises: list[list[int]],
              upto: list[int], done: dict[tuple[int, int], int]
              ) -> tuple[int, int, list[int]]:
        """Cell i's draws: the block's (its rows of ``steps`` and ``noises``; ``upto``
        its sides' candidates made before), or the ones made in Python (``done``)."""
        cell = self.cells[i]
        s = cell.tier.stride
        sides = []
        for ph in (0, 1):
            if (i, ph) in done:
                sides.append(done[(i, ph)])
                continue
            k, known = steps[ph]
            if known > upto[ph] and not self._steps(cell, ph).has(known - 1):
                raise AssertionError("more tail counts than the side has candidates")
            sides.append(k * s)
        out = []
        for q, (rate, scale) in enumerate(cell.noises):
            if (i, q + 2) in done:
                out.append(done[(i, q + 2)])
                continue
            uh, ul, v, negative = noises[q]
            out.append(noise_value(uh, ul, v, negative, rate, scale))
        return sides[0], sides[1], out


def draw_cell_arrays(cells: Sequence[CellDraw], sources: list[RandomSource],
                     kinds: Sequence[CellDraw], tier_of: np.ndarray, rows: np.ndarray,
                     joined: tuple[np.ndarray, np.ndarray], made: np.ndarray
                     ) -> tuple[np.ndarray, list[int]]:
    """:func:`draw_cells` of a block given as arrays, every cell drawing ONE noise: each
    kind's first cell (``kinds``), each cell's kind (``tier_of``), its source's row
    (``rows``), the cells' tails side by side (``joined``, as
    :func:`~dprect.core.describe_stats.joined_tails_of` makes them) and each cell's
    sides' candidates made so far (``made``, n × 2); ``cells[i]`` is read only for a
    draw left to Python or a side that read past ``made`` (its reach checked:
    :meth:`_Block._check_reach`) — a sequence that makes cell i when asked. The steps (n × 2) and
    the noises: the same values and bits consumed as :func:`draw_cells`, in one compiled
    call; the sources must be joinable (:meth:`~dprect.core.randomness.JointStreams.
    possible`) and the compiled samplers loaded."""
    from dprect.core import block_jit  # loaded with the compiled samplers (numba)

    if not all(len(c.noises) == 1 for c in kinds):
        raise ValueError("every cell of an array block draws one noise")
    return _Block.of_arrays(cells, sources, block_jit, kinds, tier_of, rows, joined,
                            made).draw_one_noise()


__all__ = ["CellDraw", "SideTier", "block_bits", "block_noises", "draw_cell",
           "draw_cell_arrays", "draw_cells", "noise_value", "one_word_noises", "side_step"]
