"""The compiled samplers (dprect.core.random_jit) draw what the Python ones draw: the same
values and the same bits consumed, from the same seeded twister or the same pool of OS
bytes — the stream itself draw for draw against ``random.Random`` and
``PooledSystemRandom``, then every sampler on both sides of the compiled path's switch
(one-word, two-word and Python-only arguments), then a side's draw."""

from __future__ import annotations

import math
import os
import random
import warnings
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("numba")

from dprect.core import random_jit as jit
from dprect.core import randomness
from dprect.core.randomness import PooledSystemRandom, RandomSource
from dprect.core.step_exponential import (
    _SLACK_F,
    DECAY,
    MAX_LEVEL,
    SLACK,
    _scalar_setup,
    draw_step,
)

SEEDS = [0, 1, 2, 12345, 2**32 - 1, 2**32, 2**32 + 1, 2**64 + 3, 2**127 + 5, 2**128 - 1]
NO_POOL = np.zeros(1, dtype=np.uint8)
NO_POS = np.zeros(1, dtype=np.int64)
NO_MT = np.zeros(625, dtype=np.uint32)


def near_powers(top: int) -> list[int]:
    """n − 1, n, n + 1 around every power of two up to 2^top (and small n)."""
    out = [1, 2, 3, 5, 7, 10, 1000]
    for j in range(1, top + 1):
        out += [2**j - 1, 2**j, 2**j + 1]
    return out


def twister(seed: int) -> np.ndarray:
    mt = np.zeros(625, dtype=np.uint32)
    words = [(seed >> i) & 0xFFFFFFFF for i in range(0, max(seed.bit_length(), 1), 32)]
    jit.seed_state(mt, np.array(words, dtype=np.uint32))
    return mt


def seeded(seed: int) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=seed)


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled samplers from the first draw (not after randomness.JIT_AFTER)."""
    monkeypatch.setattr(randomness, "_KERNELS", jit)


def python_source(seed: int | None, monkeypatch: pytest.MonkeyPatch) -> RandomSource:
    """A source made and run without the compiled samplers."""
    monkeypatch.setattr(randomness, "_KERNELS", None)
    source = seeded(seed) if seed is not None else RandomSource()
    return source


def test_the_compiled_bit_length_is_ints() -> None:
    """_bit_length (every randbelow's k) is int.bit_length on 0 … 2^64 − 1: each power of
    two and its neighbours, the ends and random widths, as uint64 and int64."""
    gen = random.Random(5)
    values = [0, 2**64 - 1, *(2**k + d for k in range(64) for d in (-1, 0, 1)
                              if 0 <= 2**k + d < 2**64),
              *(gen.getrandbits(gen.randint(1, 64)) for _ in range(5000))]
    for v in values:
        assert jit._bit_length(np.uint64(v)) == v.bit_length()
        if v < 2**63:
            assert jit._bit_length(np.int64(v)) == v.bit_length()


def test_the_compiled_gcd_is_maths() -> None:
    """_gcd (binary since s39-sampler: every Bernoulli round's a/(b·k) in lowest terms,
    each geometric draw's U/t) is math.gcd on 0 … 2^64 − 1, as int64 and uint64 alike
    (its type kept): zeros, ones, equal pairs, powers of two against odd and even
    numbers (a count's scale numerator is one), multiples, and random widths."""
    gen = random.Random(6)
    values = [0, 1, 2, 3, 2**62 - 1, 2**62, 2**63 - 1, 2**63, 2**64 - 1,
              *(2**k for k in range(64)), *(3 * 2**k for k in range(62))]
    pairs = [(a, b) for a in values for b in values]
    for _ in range(20000):
        a, b = gen.getrandbits(gen.randint(1, 64)), gen.getrandbits(gen.randint(1, 64))
        pairs += [(a, b), (a, a * 7 % 2**64), (a, b << gen.randrange(8) & (2**64 - 1))]
    for a, b in pairs:
        want = math.gcd(a, b)
        got = jit._gcd(np.uint64(a), np.uint64(b))
        assert got == want and isinstance(got, np.uint64 | int), (a, b, got)
        if a < 2**63 and b < 2**63:
            assert jit._gcd(np.int64(a), np.int64(b)) == want, (a, b)
    assert {str(sig.return_type) for sig in jit._gcd.nopython_signatures} >= {"int64", "uint64"}


def test_the_compiled_stable_order_is_numpys_merge_sort() -> None:
    """_stable_order (a side's levels ordered: by insertion up to _INSERTION keys since
    s39-sampler) is ``np.argsort(kind="mergesort")`` — the one stable order — on every
    length around the switch, with many ties, all equal, sorted either way, and keys up
    to MAX_LEVEL and int64's ends."""
    gen = np.random.default_rng(7)
    arrays = [np.zeros(0, dtype=np.int64)]
    for n in [*range(1, jit._INSERTION + 3), 40, 100, 1000]:
        arrays += [gen.integers(0, 4, n), gen.integers(0, MAX_LEVEL + 1, n),
                   np.full(n, 5), np.arange(n), np.arange(n)[::-1].copy(),
                   gen.integers(-2**63, 2**63 - 1, n, endpoint=True)]
    for keys in arrays:
        keys = np.asarray(keys, dtype=np.int64)
        got = jit._stable_order(keys)
        assert got.dtype == np.int64
        assert np.array_equal(got, np.argsort(keys, kind="mergesort")), keys


# -- the stream ------------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_the_compiled_twister_is_seeded_as_random_random(seed: int) -> None:
    assert tuple(twister(seed).tolist()) == random.Random(seed).getstate()[1]


@pytest.mark.parametrize("seed", SEEDS[:6])
def test_the_compiled_twister_draws_random_randoms_bits_draw_for_draw(seed: int) -> None:
    mt, ref = twister(seed), random.Random(seed)
    gen = random.Random(seed + 1)
    for _ in range(400):  # past a twist (624 words) several times
        k = gen.choice([1, 2, 7, 8, 9, 31, 32, 33, 47, 63, 64])
        assert int(jit.bits(0, mt, NO_POOL, NO_POS, k)) == ref.getrandbits(k)
    for n in near_powers(62):
        assert int(jit.below(0, mt, NO_POOL, NO_POS, n)) == ref._randbelow(n), n
    for k in (65, 96, 100, 128, 129, 300):
        words = np.zeros((k + 31) // 32, dtype=np.uint32)
        jit.fill_words(mt, k, words)
        assert int.from_bytes(words.astype("<u4").tobytes(), "little") == ref.getrandbits(k)
    assert tuple(mt.tolist()) == ref.getstate()[1]


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_the_two_word_randbelow_draws_random_randoms_bits(seed: int) -> None:
    mt, ref = twister(seed), random.Random(seed)
    for n in near_powers(126):
        h, lo = jit._below2(0, mt, NO_POOL, NO_POS, np.uint64(n >> 64),
                            np.uint64(n & (2**64 - 1)))
        assert int(h) << 64 | int(lo) == ref._randbelow(n), n
    assert tuple(mt.tolist()) == ref.getstate()[1]


class FakeEntropy:
    """os.urandom replaced by a seeded byte stream: both pools read the same bytes."""

    def __init__(self, seed: int) -> None:
        self.gen = random.Random(seed)
        self.calls = 0

    def __call__(self, n: int) -> bytes:
        self.calls += 1
        return self.gen.randbytes(n)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_compiled_pool_reads_the_python_pools_bytes(monkeypatch: pytest.MonkeyPatch,
                                                        seed: int) -> None:
    monkeypatch.setattr(randomness, "POOL_BYTES", 64)  # many draws cross a pool's end
    fast, ref = PooledSystemRandom(), PooledSystemRandom()
    entropy = [FakeEntropy(seed), FakeEntropy(seed)]
    gen = random.Random(seed)
    ops = ([("bits", gen.choice([1, 3, 8, 9, 16, 33, 63, 64])) for _ in range(200)]
           + [("below", n) for n in near_powers(62)]
           + [("wide", n) for n in near_powers(126)])
    gen.shuffle(ops)
    for op, x in ops:
        monkeypatch.setattr(os, "urandom", entropy[0])
        pool, pos = fast.view()
        if op == "bits":
            got = int(jit.bits(1, NO_MT, pool, pos, x))
        elif op == "below":
            got = int(jit.below(1, NO_MT, pool, pos, x))
        else:
            h, lo = jit._below2(1, NO_MT, pool, pos, np.uint64(x >> 64),
                                np.uint64(x & (2**64 - 1)))
            got = int(h) << 64 | int(lo)
        fast.settle(pos)
        monkeypatch.setattr(os, "urandom", entropy[1])
        want = ref.getrandbits(x) if op == "bits" else ref._randbelow(x)
        assert got == want, (op, x)
        assert fast._at == ref._at and bytes(fast._pool) == bytes(ref._pool)
    assert entropy[0].calls == entropy[1].calls > 10  # refilled in place, as often


# -- the samplers on both sides of the switch --------------------------------------------

SCALES = [(1, 1), (1, 2), (3, 7), (2**40 + 1, 2**52 + 3), (2**61 - 1, 2**61 + 1),
          # two words: t from 2^62 up to 2^96 (a sum's noise: t about 2^85)
          (1170935901945393, 2417851639229258349412352), (3, 2**62), (2**61, 2**95 + 7),
          (5, 3**60),
          # Python only: s or t past the compiled path's bounds
          (2**62 + 1, 5), (1, 2**96), (7, 2**100 + 1)]


@pytest.mark.parametrize(("s", "t"), SCALES)
def test_discrete_laplace_and_geometric_draw_the_same_values_and_bits(
        monkeypatch: pytest.MonkeyPatch, s: int, t: int) -> None:
    for seed in (0, 1, 2**100 + 7):
        fast = seeded(seed)
        assert fast._mt is not None  # the compiled state
        fast_draws = [fast.discrete_laplace_int(s, t) for _ in range(60)]
        fast_draws += [fast.geometric_exp(s, t) for _ in range(30)]
        with monkeypatch.context() as m:
            ref = python_source(seed, m)
            assert ref._mt is None
            ref_draws = [ref.discrete_laplace_int(s, t) for _ in range(60)]
            ref_draws += [ref.geometric_exp(s, t) for _ in range(30)]
        assert fast_draws == ref_draws
        assert fast._gen.getstate() == ref._gen.getstate()  # the same bits consumed


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(7, 2),
                                   Fraction(2**61 - 1, 2**61), Fraction(5, 2**70 + 1),
                                   Fraction(2**70 + 1, 2**69), Fraction(9, 2**62 + 3)])
def test_bernoulli_exp_draws_the_same_values_and_bits(monkeypatch: pytest.MonkeyPatch,
                                                      gamma: Fraction) -> None:
    fast = seeded(3)
    got = [fast.bernoulli_exp(gamma) for _ in range(200)]
    got += [fast._bernoulli_exp_int(gamma.numerator, gamma.denominator) for _ in range(200)]
    with monkeypatch.context() as m:
        ref = python_source(3, m)
        want = [ref.bernoulli_exp(gamma) for _ in range(200)]
        want += [ref._bernoulli_exp_int(gamma.numerator, gamma.denominator)
                 for _ in range(200)]
    assert got == want
    assert fast._gen.getstate() == ref._gen.getstate()


def test_a_source_handed_back_and_forth_keeps_one_stream(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Python draws (through ``_gen``) between compiled ones continue the same stream."""
    fast = seeded(11)
    got = []
    for i in range(20):
        got.append(fast.discrete_laplace_int(3, 2**70 + i))
        got.append(fast._gen.getrandbits(40))  # the Python generator takes the state
        got.append(fast.randbelow(2**64 + i))
        got.append(fast.randbits(130))
    with monkeypatch.context() as m:
        ref = python_source(11, m)
        want = []
        for i in range(20):
            want.append(ref.discrete_laplace_int(3, 2**70 + i))
            want.append(ref._gen.getrandbits(40))
            want.append(ref.randbelow(2**64 + i))
            want.append(ref.randbits(130))
    assert got == want
    assert fast.stream_seeds(3) == ref.stream_seeds(3)


@pytest.mark.parametrize(("s", "t"), SCALES[:9])
def test_the_unseeded_samplers_read_the_same_pool_bytes(monkeypatch: pytest.MonkeyPatch,
                                                        s: int, t: int) -> None:
    monkeypatch.setattr(randomness, "POOL_BYTES", 256)  # refilled during the draws
    monkeypatch.setattr(os, "urandom", FakeEntropy(5))
    fast = RandomSource()
    got = [fast.discrete_laplace_int(s, t) for _ in range(80)]
    got += [fast._bernoulli_exp_int(t, s) for _ in range(40)]
    with monkeypatch.context() as m:
        m.setattr(os, "urandom", FakeEntropy(5))
        ref = python_source(None, m)
        want = [ref.discrete_laplace_int(s, t) for _ in range(80)]
        want += [ref._bernoulli_exp_int(t, s) for _ in range(40)]
    assert got == want
    assert fast._gen._at == ref._gen._at


# -- a side's draw ------------------------------------------------------------------------

class Candidates:
    """A side's candidates: ``count`` of them (``has`` as the quantile box's list)."""

    def __init__(self, count: int) -> None:
        self.count = count

    def has(self, k: int) -> bool:
        return 0 <= k < self.count


class Lazy:
    """Candidates made on demand (no ``count``: every far step asks ``has``)."""

    def __init__(self, count: int) -> None:
        self.limit = count

    def has(self, k: int) -> bool:
        return 0 <= k < self.limit


@pytest.mark.parametrize("seed", range(6))
def test_a_sides_draw_is_the_python_draw(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    gen = np.random.default_rng(seed)
    cases = []
    for _ in range(60):
        n = int(gen.integers(0, 80))
        tails = np.sort(gen.integers(0, 10**int(gen.integers(1, 7)), n))[::-1].copy()
        tails[int(gen.integers(0, n + 1)):] = 0
        # 1e300: a float past the range, the Python (numpy) path draws
        eps = Fraction(float(gen.choice([1e-3, 0.05, 0.5, 0.7, 3.0, 1e4, 1e300])))
        count = n + int(gen.integers(0, 30)) + (1 if not n else 0)
        target = int(gen.integers(0, 50))
        two = bool(gen.integers(0, 2))
        stream = Candidates(count) if gen.integers(0, 2) else Lazy(count)
        cases.append((tails, stream, target, eps, two))
    fast = seeded(seed)
    got = [draw_step(t, s, q, e, fast, two_sided=two) for t, s, q, e, two in cases]
    with monkeypatch.context() as m:
        ref = python_source(seed, m)
        want = [draw_step(t, s, q, e, ref, two_sided=two) for t, s, q, e, two in cases]
    assert got == want
    assert fast._gen.getstate() == ref._gen.getstate()


@pytest.mark.parametrize("eps", [Fraction(1, 2), Fraction(1, 4), Fraction(3, 8),
                                 Fraction(0.05), Fraction(7.3), Fraction(1e-6)])
def test_the_compiled_setup_gives_the_python_setups_levels(eps: Fraction) -> None:
    """The levels, their order and sizes, k* and a_{k*}: :func:`_scalar_setup`'s, for
    tails of any length — with rational ε/μ whose D_k/μ land on integers, where the
    floor's shrink decides the level."""
    gen = np.random.default_rng(int(eps * 1000) % 2**32)
    for _ in range(300):
        n = int(gen.integers(0, 120))
        tails = np.sort(gen.integers(0, 10**int(gen.integers(1, 8)), n))[::-1].copy()
        tails[int(gen.integers(0, n + 1)):] = 0
        target = int(gen.integers(0, 5000))
        stream = Candidates(n + int(gen.integers(0, 3)))
        want = _scalar_setup(tails.tolist(), stream, target, eps, DECAY)
        known = want.known if want is not None else 0
        status, known, k_min, a_min, a, order, held, starts, sizes = jit.side_setup(
            tails, target, float(eps), float(DECAY), _SLACK_F, MAX_LEVEL,
            int(stream.has(known)), stream.count)
        assert want is not None and status == 0
        assert (known, a.tolist(), order.tolist()) == (want.known, want.a, want.order)
        assert (held.tolist(), sizes.tolist()) == (want.held, want.sizes)
        assert starts.tolist() == [want.where[h][0] for h in want.held]
        # the same k*, a_{k*} up to a tie of equal γ (then the same base: γ·den)
        assert int(a_min) * want.e_num + int(k_min) * want.m_num == _h(want) - want.base


def _h(setup: object) -> int:
    """η·den of a setup (its base is η·den − (e·a_{k*} + m·k*))."""
    den = setup.den  # type: ignore[attr-defined]
    return SLACK.numerator * (den // SLACK.denominator)


def test_no_cache_location_means_the_python_samplers(monkeypatch: pytest.MonkeyPatch
                                                     ) -> None:
    """Where numba cannot cache (a read-only installation), the module is not used: an
    ImportError, on which randomness.kernels() answers None (the Python samplers)."""
    def no_locator(**_: object) -> object:
        raise RuntimeError("cannot cache function 'f': no locator available")

    with monkeypatch.context() as m:
        m.setattr(jit.numba, "njit", no_locator)
        with pytest.raises(ImportError):
            jit._jit(lambda: 0)
    real = __import__

    def refusing(name: str, *args: object, **kwargs: object) -> object:
        if name == "dprect.core" and "random_jit" in (args[2] if len(args) > 2 else ()):
            raise ImportError("no cache location for the compiled samplers")
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(randomness, "_KERNELS", ())
    monkeypatch.setattr(randomness, "JIT_AFTER", 0)
    monkeypatch.setattr("builtins.__import__", refusing)
    assert randomness.kernels() is None
    source = seeded(1)
    assert source._mt is None  # the Python generator
    assert source.discrete_laplace_int(3, 7) == seeded_python_draw(1)


def seeded_python_draw(seed: int) -> int:
    """The first discrete_laplace_int(3, 7) of a seed, drawn on random.Random directly."""
    gen = random.Random(seed)
    below = randomness._below_of(gen)
    while True:
        g = randomness._geometric_exp(below, 3, 7)
        if gen.getrandbits(1) == 1:
            if g:
                return -g
        else:
            return g


def test_the_compiled_tails_are_the_numpy_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cell's tail counts per side (describe_stats.data_tails), compiled, equal the
    numpy path's (and the Python-integer path's on a small cell), for cells of a few to
    thousands of entries reaching far out on both sides."""
    from dprect.core import describe_stats
    from dprect.core.describe_stats import cell_statistics, data_tails

    gen = np.random.default_rng(8)
    cells = [describe_stats.CellStatistics.empty()]
    for n in (1, 3, 40, 300, 5000):
        for centre, spread in ((0.0, 1.0), (5.0, 1e3), (-2.0, 1e-3), (1e12, 1e15)):
            x = np.concatenate([gen.normal(centre, spread, n),
                                gen.standard_t(1, n // 3 + 1) * spread])
            cells.append(cell_statistics(x, centre))
    for stats in cells:
        got = data_tails(stats)  # compiled (the fixture)
        with monkeypatch.context() as m:
            m.setattr(randomness, "_KERNELS", None)
            small = data_tails(stats)
            m.setattr(describe_stats, "_SCALAR_ENTRIES", -1)
            numpy_path = data_tails(stats)
        for g, s, w in zip(got, small, numpy_path, strict=True):
            assert g.dtype == w.dtype == np.int64
            assert g.tolist() == s.tolist() == w.tolist()
    assert max(len(t) for stats in cells for t in data_tails(stats)) > 256


def test_the_two_word_arithmetic_is_pythons() -> None:
    """gcd and exact division on two 64-bit words (the geometric draw of a scale up to
    2^96) against Python integers: powers of two, small and large divisors."""
    gen = random.Random(4)

    def words(x: int) -> tuple[np.uint64, np.uint64]:
        return np.uint64(x >> 64), np.uint64(x & (2**64 - 1))

    def join(h: object, lo: object) -> int:
        return int(h) << 64 | int(lo)  # type: ignore[call-overload]

    cases = []
    for _ in range(300):
        g = gen.choice([1, 2**gen.randrange(90), gen.randrange(1, 2**32),
                        gen.randrange(2**32, 2**60) * 2**gen.randrange(30)])
        top = max(1, (2**96 - 1) // g)
        a, b = g * gen.randrange(0, top), g * gen.randrange(1, top)
        cases.append((a, b))
    cases += [(0, 2**81), (2**80, 2**81), (3 * 2**70, 2**81), (2**95 + 7, 2**95 + 7)]
    for a, b in cases:
        g = join(*jit._gcd2(*words(a), *words(b)))
        assert g == math.gcd(a, b), (a, b)
        assert join(*jit._div2(*words(a), *words(g))) == a // g
        assert join(*jit._div2(*words(b), *words(g))) == b // g


def test_a_source_given_another_generator_draws_from_it_in_python() -> None:
    """A source whose generator is replaced (a test's scripted bits) draws from that
    generator by the Python samplers, never from a stale compiled state."""
    source = RandomSource()
    source._gen = random.Random(3)  # unseeded source, a twister: not the pool's kind
    assert source._compiled() is None
    ref = random.Random(3)
    below = randomness._below_of(ref)
    got = [source.discrete_laplace_int(2, 5) for _ in range(20)]
    want = []
    while len(want) < 20:
        g = randomness._geometric_exp(below, 2, 5)
        negative = ref.getrandbits(1) == 1
        if not (negative and g == 0):
            want.append(-g if negative else g)
    assert got == want
    seeded_source = seeded(4)
    seeded_source._gen = random.Random(9)
    assert seeded_source._mt is None and seeded_source._compiled() is jit
    assert seeded_source.geometric_exp(1, 2) == RandomSource.stream(9).geometric_exp(1, 2)
