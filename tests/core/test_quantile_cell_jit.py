"""A small group's whole quantile draws in one compiled call
(:func:`dprect.core.quantile_cell_jit.cell_draws`, through
:func:`dprect.core.quantile_draws.compiled_cell`) are the Python draws
(:func:`dprect.core.quantiles.draws` without the compiled samplers), draw for draw and
with the same stream state after: over many random cells (ties, both signs, far
decades, one row, no row) at several ε, from a seed and from a pool of OS bytes; each
step against its reference (the window of every centre and sign, the centre's and the
sign's rank laws); a call that stops (a pause, the large groups' branch) leaves the
source as it was, so the Python path draws the same cell; and a wrong constant in the
compiled path is seen."""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

from dprect.core import quantile_draws, randomness
from dprect.core import random_jit as jit
from dprect.core.quantile_centre import (
    block_count,
    block_rows,
    centre_pieces,
    sign_pieces,
    sign_rows,
    window,
)
from dprect.core.quantiles import (
    QuantileStatistics,
    draws,
    plan_quantiles,
    quantile_grid,
    quantile_statistics,
)
from dprect.core.randomness import RandomSource
from tests.quantile_values import pool_draws, random_values

QS = [0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99]
EPSILONS = [0.5 / 64, 0.125 / 8, 0.05, 1.0]


def _cj() -> Any:
    from dprect.core import quantile_cell_jit

    return quantile_cell_jit


#: the columns' lengths this file draws from
ROWS = [0, 1, 2, 3, 7, 40, 300, 2000, 10000]


def _python(stats: QuantileStatistics, plan: Any, source: RandomSource,
            monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(randomness, "_KERNELS", None)
    try:
        return draws(stats, plan, source)
    finally:
        monkeypatch.setattr(randomness, "_KERNELS", jit)


def test_the_window_of_every_centre_and_sign() -> None:
    """``window_ranges`` is ``quantile_centre.window`` for every centre block and sign."""
    plan = plan_quantiles(QS, 1.0)
    consts = quantile_draws._cell_constants(plan, jit)
    assert consts is not None
    g = quantile_grid(plan.grid, plan.resolution)
    for centre in range(block_count(g)):
        for sign in range(3):
            a, z = _cj().window_ranges(consts["args"][0], centre, sign)
            assert list(zip(a.tolist(), z.tolist(), strict=True)) == window(g, centre, sign)


def test_the_centre_and_sign_laws_are_the_rank_pieces() -> None:
    """``half_law`` of the rows per block (per class) is ``centre_pieces``'
    (``sign_pieces``') starts and depths — random cells, and no row."""
    plan = plan_quantiles(QS, 1.0)
    g = quantile_grid(plan.grid, plan.resolution)
    gen = random.Random(8)
    for _ in range(300):
        st = quantile_statistics(random_values(gen, ROWS), plan)
        incl = np.cumsum(st.counts)
        for rows, m, ref in ((block_rows(g, st.keys, incl), block_count(g),
                              centre_pieces(g, st.keys, st.counts, 1.0)),
                             (sign_rows(g, st.keys, incl), 3,
                              sign_pieces(g, st.keys, st.counts, 1.0))):
            starts, depths = _cj().half_law(rows, m)
            assert np.array_equal(starts, ref.starts.astype(np.int64))
            assert np.array_equal(depths[0], ref.depths)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_a_compiled_cell_is_the_python_cell(epsilon: float,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Random cells from a seed: the same draws and twister state after; most cells
    drawn whole by the compiled call."""
    gen = random.Random(int(epsilon * 1e6) + 1)
    plan = plan_quantiles(QS, epsilon)
    whole = 0
    for k in range(60):
        st = quantile_statistics(random_values(gen, ROWS), plan)
        ref = RandomSource.stream(1000 * k + 3)
        want = _python(st, plan, ref, monkeypatch)
        fast = RandomSource.stream(1000 * k + 3)
        whole += quantile_draws.compiled_cell(st.keys, st.counts, st.at_value, plan,
                                              RandomSource.stream(1000 * k + 3)) is not None
        assert draws(st, plan, fast) == want, k
        assert fast.randbits(64) == ref.randbits(64), k
    assert whole >= 20


def test_a_compiled_cell_reads_the_pool_as_python_does(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """From a pool of OS bytes (a fixed one): the same draws and read position."""
    gen = random.Random(5)
    for k in range(30):
        plan = plan_quantiles(QS, EPSILONS[k % len(EPSILONS)])
        st = quantile_statistics(random_values(gen, ROWS), plan)
        out = pool_draws(st, plan, random.Random(k).randbytes(1 << 17), jit, monkeypatch)
        assert out[0] == out[1], k


def _os_bytes(entropy: bytes) -> Any:
    """A stand-in for ``os.urandom`` handing out ``entropy`` in order (each call the
    next n bytes): the bytes a refill reads depend on how many were read before."""
    at = [0]

    def urandom(n: int) -> bytes:
        out = entropy[at[0]:at[0] + n]
        at[0] += n
        assert len(out) == n
        return out

    return urandom


def _stopped_and_python(source: str, cells: int, monkeypatch: pytest.MonkeyPatch
                        ) -> tuple[list[bool], int]:
    """Per random cell, whether a compiled call that read its bits and then stopped (as
    on a pause) and the Python path after it give the Python path's cell and stream,
    from the same OS bytes (each run's ``os.urandom`` the same stand-in); and how many
    calls stopped."""
    cj = _cj()
    real = cj.cell_draws
    stopped = []

    def stop(*args: Any) -> Any:
        real(*args)  # every bit read
        stopped.append(1)
        return jit.PAUSE, 0

    if source == "small pool":
        monkeypatch.setattr(randomness, "POOL_BYTES", 64)
    gen = random.Random(6)
    plan = plan_quantiles(QS, 0.125 / 8)
    same = []
    for k in range(cells):
        st = quantile_statistics(random_values(gen, ROWS), plan)
        entropy = random.Random(k).randbytes(1 << 22)
        runs = []
        for stopping in (False, True):
            monkeypatch.setattr(os, "urandom", _os_bytes(entropy))
            src = RandomSource.stream(k) if source == "seeded" else RandomSource()
            if stopping:
                monkeypatch.setattr(cj, "cell_draws", stop)
                got = draws(st, plan, src)
                monkeypatch.setattr(cj, "cell_draws", real)
            else:
                got = _python(st, plan, src, monkeypatch)
            runs.append((got, src.randbits(64)))
        same.append(runs[0] == runs[1])
    return same, len(stopped)


@pytest.mark.parametrize("source", ["seeded", "pool", "small pool"])
def test_a_stopped_call_leaves_the_source_as_it_was(source: str,
                                                    monkeypatch: pytest.MonkeyPatch
                                                    ) -> None:
    """A compiled call that read its bits and then stopped puts the source back: the
    Python path then draws the reference's cell and stream. From a pool of 64 bytes the
    call refills it many times: the pools it read are the next refills' (``give_back``),
    so the Python path reads the same bytes in the same order (without them it would
    read the OS's next ones: the comparison fails)."""
    same, stopped = _stopped_and_python(source, 20, monkeypatch)
    assert all(same), same
    assert stopped >= 15


def test_a_stopped_call_puts_back_the_bytes_its_first_refill_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No copy of the pool is made before a call: a refill is its only write, and the
    call's first refill keeps the pool's old bytes (``REFILLS.kept``). A stopped call
    that refilled leaves the pool's bytes from its start position as they were, the
    position there, and its refills' pools given back; and the comparison has power —
    with the kept bytes not put back (the redo reads the refills' bytes there) the
    Python path's draws differ."""
    cj = _cj()
    real = cj.cell_draws
    monkeypatch.setattr(randomness, "POOL_BYTES", 64)
    monkeypatch.setattr(cj, "cell_draws", lambda *a: (real(*a), (jit.PAUSE, 0))[1])
    monkeypatch.setattr(randomness, "_KERNELS", jit)
    plan = plan_quantiles(QS, 0.125 / 8)
    st = quantile_statistics(np.round(np.random.default_rng(3).normal(0.0, 3.0, 300)), plan)
    src = RandomSource()
    src.randbits(40)  # the call starts inside the pool
    first = src._py._at
    before = bytes(src._py._pool)
    assert quantile_draws.compiled_cell(st.keys, st.counts, st.at_value, plan, src) is None
    assert len(jit.REFILLS.given) >= 2  # the call refilled the pool (kept its bytes)
    assert bytes(src._py._pool)[first:] == before[first:] and src._py._at == first
    assert jit.REFILLS.kept is None and jit.REFILLS.log is None
    jit.REFILLS.given.clear()
    monkeypatch.undo()

    position_only = randomness.PooledSystemRandom.give_back

    def dropped(self: Any, at: int, unread: Any) -> None:
        position_only(self, at, None)

    monkeypatch.setattr(randomness.PooledSystemRandom, "give_back", dropped)
    same, stopped = _stopped_and_python("small pool", 20, monkeypatch)
    assert stopped >= 15 and not all(same), same
    jit.REFILLS.given.clear()


def test_a_wrong_constant_in_the_compiled_cell_is_seen(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """The comparison has power: the opposite sign's extra distance one decade short in
    the compiled call changes some cell's draws."""
    plan = plan_quantiles(QS, 0.5 / 64)
    consts = quantile_draws._cell_constants(plan, jit)
    assert consts is not None
    wrong = consts["args"][0].copy()
    wrong[_cj().SIGN_DECADES] -= 1
    changed = {**consts, "args": (wrong, *consts["args"][1:])}
    gen = random.Random(9)
    cells = [quantile_statistics(np.round(np.random.default_rng(k).normal(
        0.0, gen.choice([0.5, 3.0]), 300)), plan) for k in range(30)]
    monkeypatch.setattr(randomness, "_KERNELS", jit)
    monkeypatch.setattr(quantile_draws, "_cell_constants", lambda p, j: changed)
    seen = [draws(st, plan, RandomSource.stream(k)) for k, st in enumerate(cells)]
    monkeypatch.undo()
    monkeypatch.setattr(randomness, "_KERNELS", jit)
    assert seen != [draws(st, plan, RandomSource.stream(k)) for k, st in enumerate(cells)]
