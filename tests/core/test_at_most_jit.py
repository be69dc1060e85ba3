"""The compiled step tests (dprect.core.at_most_jit) read the pool's bytes exactly as the
Python loop does: the same index, the same byte after, for any bytes and any rate —
across refills of the pool and draws wider than 64 bits, which it hands back."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from dprect.core import at_most_jit, randomness
from dprect.core.randomness import PooledSystemRandom, _first_at_most, _first_at_most_pooled

pytest.importorskip("numba")


class _Bytes:
    """A seeded os.urandom stand-in (the same bytes for two pools made alike)."""

    def __init__(self, seed: int) -> None:
        self.gen = random.Random(seed)

    def __call__(self, n: int) -> bytes:
        return self.gen.randbytes(n)


def _pair(monkeypatch, seed: int, pool_bytes: int) -> tuple[PooledSystemRandom,
                                                            PooledSystemRandom]:
    monkeypatch.setattr(randomness, "POOL_BYTES", pool_bytes)
    a, b = PooledSystemRandom(), PooledSystemRandom()
    fa, fb = _Bytes(seed), _Bytes(seed)
    a_take, b_take = a._take, b._take

    def take_a(n: int) -> bytes:
        monkeypatch.setattr(randomness.os, "urandom", fa)
        return a_take(n)

    def take_b(n: int) -> bytes:
        monkeypatch.setattr(randomness.os, "urandom", fb)
        return b_take(n)

    a._take, b._take = take_a, take_b  # type: ignore[method-assign]
    return a, b


RATES = [Fraction(1, 1), Fraction(7, 3), Fraction(0.3 * 0.45 / 64), Fraction(0.0675),
         Fraction(2.5), Fraction(1, 10**6), Fraction(0.54)]


@pytest.mark.parametrize("pool_bytes", [7, 64, 1 << 16])
def test_the_compiled_loop_reads_the_bytes_the_python_loop_reads(monkeypatch, pool_bytes):
    assert randomness.compile_step_tests()
    gen = random.Random(pool_bytes)
    stops = 0
    for case in range(400):
        rate = RATES[case % len(RATES)]
        n, d = rate.numerator, rate.denominator
        a, b = _pair(monkeypatch, 1000 + case, pool_bytes)
        length = gen.choice([1, 3, 16, 64, 300])
        base = gen.choice([-20000, -300, -40, -5, 0, 3])
        levels = [base + gen.randrange(-30, 40) for _ in range(length)]
        for _ in range(3):  # a few searches in a row on the same pools
            want = _first_at_most(a.getrandbits, a._randbelow, levels, n, d)
            got = _first_at_most_pooled(b, levels, n, d)
            assert got == want, (case, rate, levels[:5])
            assert (b._pool, b._at) == (a._pool, a._at), (case, rate, want, levels[:5])
            stops += want >= 0
    assert stops > 100  # both outcomes occur
    assert stops < 3 * 400


@pytest.mark.parametrize("rate", [Fraction(1, 3 << 62), Fraction(2, 3), Fraction(1 << 63, 1)])
def test_a_rate_the_loop_does_not_take_runs_in_python(monkeypatch, rate):
    """A denominator ≥ 2^63 or not a power of two, or a numerator ≥ 2^63."""
    assert at_most_jit.rate_shift(rate.numerator, rate.denominator) is None
    a, b = _pair(monkeypatch, 5, 1 << 16)
    levels = [-3, 0, 2, 5]
    assert (_first_at_most_pooled(b, levels, rate.numerator, rate.denominator)
            == _first_at_most(a.getrandbits, a._randbelow, levels, rate.numerator,
                              rate.denominator))
    assert b._at == a._at


@pytest.mark.parametrize("rate", [Fraction(0.3 * 0.45 / 64), Fraction(5, 2)])
def test_huge_levels_hand_back_or_agree(monkeypatch, rate):
    """m·n beyond 2^64 is split exactly in two halves; a whole part beyond 2^63 (at the
    rate 5/2) is handed back to Python. Both agree with the Python loop byte for byte."""
    assert randomness.compile_step_tests()
    n, d = rate.numerator, rate.denominator
    for seed, levels in enumerate([[-(1 << 40), -(1 << 62), 7], [-(1 << 62)] * 3 + [-1],
                                   [(1 << 62), -5], [-(10**15)] * 40 + [0],
                                   [-(1 << 70), 3]]):  # beyond int64: Python throughout
        a, b = _pair(monkeypatch, 50 + seed, 1 << 16)
        assert (_first_at_most_pooled(b, levels, n, d)
                == _first_at_most(a.getrandbits, a._randbelow, levels, n, d))
        assert (b._pool, b._at) == (a._pool, a._at)


def test_draw_sizes_reach_eight_bytes():
    """The realistic rate's denominator is 2^61 or more: its uniform draws take 8 bytes,
    so the byte-exact test above covers the uint64 reads."""
    d = Fraction(0.3 * 0.45 / 64).denominator
    assert d >= 1 << 56


def test_only_a_call_turns_it_on(monkeypatch):
    monkeypatch.setattr(randomness, "_COMPILED", [])
    src = randomness.RandomSource()
    calls = []
    monkeypatch.setattr(randomness, "_first_at_most_pooled",
                        lambda *args: calls.append(args) or -1)
    src.first_at_most([0], 1, 1)
    assert not calls
    assert randomness.compile_step_tests()
    src.first_at_most([0], 1, 1)
    assert len(calls) == 1
    seeded = randomness.RandomSource.__new__(randomness.RandomSource)
    seeded._gen = random.Random(1)
    seeded._below = randomness._below_of(seeded._gen)
    seeded.first_at_most([0], 1, 1)  # a seeded source keeps the Python loop
    assert len(calls) == 1


def test_the_exponent_split_is_exact():
    """⌊m·n/2^e⌋ and m·n mod 2^e from two 64-bit halves equal Python's integers, and a
    whole part of 2^63 or more is refused (hand-back), never wrapped."""
    gen = random.Random(11)
    for _ in range(3000):
        e = gen.choice([0, 1, 31, 32, 33, 52, 61, 62, 63])
        n = gen.randrange(1, 1 << gen.choice([1, 20, 53, 63]))
        level = gen.randrange(-(1 << 62), 1 << 62) >> gen.randrange(0, 62)
        m = level + 1 if level >= 0 else -level - 1
        whole, frac, ok = at_most_jit._exponent(level, np.uint64(n), e)
        want_whole, want_frac = divmod(m * n, 1 << e)
        assert ok == (want_whole < 1 << 63), (level, n, e)
        if ok:
            assert (int(whole), int(frac)) == (want_whole, want_frac), (level, n, e)


def test_the_rate_shift():
    assert at_most_jit.rate_shift(3, 1) == 0
    assert at_most_jit.rate_shift(3, 1 << 61) == 61
    assert at_most_jit.rate_shift(3, 6) is None
    assert at_most_jit.rate_shift(0, 1) is None
