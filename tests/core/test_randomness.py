"""The randomness source: OS entropy by default, opt-in seeds, exact samplers."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binomtest, chisquare

from dprect import ParameterError, RandomSource
from dprect.core import randomness


def seeded(seed):
    with pytest.warns(UserWarning, match="NOT private"):
        return RandomSource(seed=seed)


def test_default_source_is_os_entropy_and_unseeded():
    import random

    src = RandomSource()
    assert src.seeded is False
    assert isinstance(src._gen, random.SystemRandom)
    assert isinstance(src._gen, randomness.PooledSystemRandom)
    draws = {src.randbelow(2**64) for _ in range(20)}
    assert len(draws) == 20


class _Counter:
    """os.urandom stand-in: bytes 0, 1, 2, … (mod 256) across calls, and the calls."""

    def __init__(self) -> None:
        self.next = 0
        self.calls: list[int] = []

    def __call__(self, n: int) -> bytes:
        self.calls.append(n)
        out = bytes((self.next + i) % 256 for i in range(n))
        self.next += n
        return out


def test_the_pool_hands_out_os_bytes_in_order_as_system_random_reads_them(monkeypatch):
    """getrandbits(k) is the top k bits of the next ⌈k/8⌉ bytes, big-endian (what
    SystemRandom reads from a fresh os.urandom); the OS is read POOL_BYTES at a time; a
    randbelow(n) takes (n − 1).bit_length() bits and rejects by whole draws;
    randbelow(1) reads nothing."""
    import random

    fake = _Counter()
    monkeypatch.setattr(randomness.os, "urandom", fake)
    monkeypatch.setattr(randomness, "POOL_BYTES", 8)
    gen = randomness.PooledSystemRandom()
    assert gen.getrandbits(8) == 0          # byte 0
    assert gen.getrandbits(3) == 1 >> 5     # byte 1's top 3 bits
    assert gen.getrandbits(12) == ((2 << 8) | 3) >> 4  # bytes 2, 3
    assert gen.getrandbits(0) == 0
    assert gen.getrandbits(16) == (4 << 8) | 5
    assert gen.getrandbits(24) == (8 << 16) | (9 << 8) | 10  # 6, 7 left: a new pool
    assert fake.calls == [8, 8]
    sys_gen = random.SystemRandom()
    monkeypatch.setattr(random, "_urandom", _Counter())
    for k in (1, 7, 8, 9, 33, 64, 65):
        fake2 = _Counter()
        monkeypatch.setattr(randomness.os, "urandom", fake2)
        monkeypatch.setattr(random, "_urandom", _Counter())
        assert randomness.PooledSystemRandom().getrandbits(k) == sys_gen.getrandbits(k), k
    fake3 = _Counter()
    monkeypatch.setattr(randomness.os, "urandom", fake3)
    gen = randomness.PooledSystemRandom()
    assert gen._randbelow(1) == 0 and fake3.calls == []
    # below 5: 3 bits, the top of one byte; bytes 200 … 255 give 6 or 7 (rejected, a
    # whole byte each), byte 256 mod 256 = 0 gives 0: 57 bytes, 8 reads of 8
    fake3.next = 200
    assert gen._randbelow(5) == 0 and fake3.calls == [8] * 8
    # a power of two takes exactly its bits, never a rejection: byte 0x80 below 2 is 1,
    # byte 0xC0 below 4 is 3 (with one bit more both would be rejected)
    gen = randomness.PooledSystemRandom()
    monkeypatch.setattr(randomness.os, "urandom", lambda n: bytes([0x80, 0xC0]) * (n // 2))
    assert gen._randbelow(2) == 1 and gen._randbelow(4) == 3 and gen._at == 2
    with pytest.raises(ValueError):
        gen.getrandbits(-1)


def test_pooled_draws_are_uniform_with_power(monkeypatch):
    """The pool's rejection sampler and bit reads on fixed bytes (a seeded stand-in for
    os.urandom): with OS bytes the three checks would fail by chance in about 1.6e-4 of
    runs (p < 1e-4, plus 6e-5 for the 4-sigma mean), a red CI now and then."""
    import random

    entropy = random.Random(6)
    monkeypatch.setattr(randomness.os, "urandom", entropy.randbytes)
    gen = randomness.PooledSystemRandom()
    n = 30_000
    obs = np.bincount([gen._randbelow(6) for _ in range(n)], minlength=6)
    assert chisquare(obs).pvalue > 1e-4
    # power: the same counts are far from a law that favours 0 by 20%
    skew = np.array([1.2] + [1.0] * 5)
    assert chisquare(obs, skew / skew.sum() * n).pvalue < 1e-6
    bits = np.array([gen.getrandbits(1) for _ in range(n)])
    assert abs(bits.mean() - 0.5) < 4 * math.sqrt(0.25 / n)


def test_a_forked_child_never_reuses_the_parents_pool():
    """After os.fork the child drops the unread bytes (os.register_at_fork), so parent
    and child draw different numbers; without the hook both would read the same pool."""
    import os

    gen = randomness.PooledSystemRandom()
    gen.getrandbits(8)  # the pool is read
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next 64 bits, to the parent
        os.close(r)
        os.write(w, gen.getrandbits(64).to_bytes(8, "big"))
        os._exit(0)
    os.close(w)
    child = int.from_bytes(os.read(r, 8), "big")
    os.close(r)
    os.waitpid(pid, 0)
    assert gen.getrandbits(64) != child
    randomness._forget_pools()  # what the child ran: the pool is gone
    assert gen._pool == b"" and gen._at == 0


def test_streams_follow_a_seed_and_read_the_os_without_one():
    a = seeded(21).stream_seeds(4)
    assert a == seeded(21).stream_seeds(4) and len(set(a)) == 4
    assert all(0 <= s < 2**randomness.STREAM_SEED_BITS for s in a)
    assert seeded(22).stream_seeds(4) != a
    import warnings as w

    with w.catch_warnings():
        w.simplefilter("error")  # a stream of a seeded run does not warn again
        one, two = RandomSource.stream(a[0]), RandomSource.stream(a[0])
    assert one.seeded and [one.randbits(32) for _ in range(5)] == [
        two.randbits(32) for _ in range(5)]
    assert RandomSource().stream_seeds(3) == [None, None, None]
    os_stream = RandomSource.stream(None)
    assert not os_stream.seeded
    assert isinstance(os_stream._gen, randomness.PooledSystemRandom)
    with pytest.raises(ParameterError, match="stream seed"):
        RandomSource.stream(-1)
    with pytest.raises(ValueError):
        seeded(1).stream_seeds(-1)


def test_seed_reproduces_and_warns():
    a, b = seeded(5), seeded(5)
    assert [a.randbelow(1000) for _ in range(50)] == [b.randbelow(1000) for _ in range(50)]
    assert a.seeded


@pytest.mark.parametrize("bad", [-1, 1.5, "7", True])
def test_bad_seed(bad):
    with pytest.raises(ParameterError, match="seed"):
        RandomSource(seed=bad)


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_frequency(gamma):
    src = seeded(11)
    n = 20_000
    hits = sum(src.bernoulli_exp(gamma) for _ in range(n))
    assert binomtest(hits, n, math.exp(-float(gamma))).pvalue > 1e-3


def test_geometric_exp_matches_law_with_power():
    src = seeded(12)
    s, t = 1, 3  # ratio e^{-1/3}
    n = 20_000
    draws = np.array([src.geometric_exp(s, t) for _ in range(n)])
    cells = 15
    obs = np.bincount(np.minimum(draws, cells), minlength=cells + 1)
    r = math.exp(-s / t)
    probs = [(1 - r) * r**g for g in range(cells)] + [r**cells]
    assert chisquare(obs, np.array(probs) * n).pvalue > 1e-3
    r2 = math.exp(-1 / 2.5)
    wrong = [(1 - r2) * r2**g for g in range(cells)] + [r2**cells]
    assert chisquare(obs, np.array(wrong) * n).pvalue < 1e-6


def test_randbelow_handles_huge_ranges():
    src = seeded(3)
    draws = [src.randbelow(2**64 - 2**53 + 2) for _ in range(1000)]
    assert max(draws) > 2**63 and min(draws) >= 0


def test_randbits_range_reproducibility_and_uniformity():
    a, b = seeded(9), seeded(9)
    draws = [a.randbits(3) for _ in range(16_000)]
    assert draws[:50] == [b.randbits(3) for _ in range(50)]
    assert min(draws) == 0 and max(draws) == 7
    assert all(0 <= a.randbits(200) < 2**200 for _ in range(100))
    counts = np.bincount(draws, minlength=8)
    assert chisquare(counts).pvalue > 1e-4  # false failure probability 1e-4
    # power: the same test rejects bits whose top bit is 1 with probability 0.55
    skew = np.array([d | 4 if d < 4 and i % 10 == 0 else d for i, d in enumerate(draws)])
    assert chisquare(np.bincount(skew, minlength=8)).pvalue < 1e-4
    with pytest.raises(ValueError):
        a.randbits(0)


def test_the_compiled_samplers_load_from_the_announced_public_work_only(monkeypatch):
    """:func:`~dprect.core.randomness.kernels` loads the compiled samplers once the work
    announced in the process (:func:`~dprect.core.randomness.expect_draws`: public sizes)
    reaches ``JIT_AFTER`` calls — never from the sampler calls made, whose number depends
    on the data: many calls with nothing announced load nothing."""
    pytest.importorskip("numba")
    monkeypatch.setattr(randomness, "_KERNELS", ())
    monkeypatch.setattr(randomness, "_EXPECTED", 0)
    monkeypatch.setattr(randomness, "JIT_AFTER", 1000)
    src = seeded(1)
    for _ in range(3000):
        src.discrete_laplace_int(1, 3)
    assert randomness.kernels() is None
    randomness.expect_draws(999)
    assert randomness.kernels() is None
    randomness.expect_draws(1)
    assert randomness.kernels() is not None


def test_each_mechanism_announces_its_public_size(monkeypatch):
    """A describe block, the bounds' draws, a block of quantile cells and a fit's
    quantile box each announce their public size × their calls a cell (or an axis)
    before drawing — whatever the rows."""
    import pandas as pd

    import dprect
    from dprect.core import aggregates, bounds, quantile_box, quantile_release
    from dprect.core.quantiles import plan_quantiles

    def announced(run) -> int:
        monkeypatch.setattr(randomness, "_EXPECTED", 0)
        run()
        return randomness._EXPECTED

    gen = np.random.default_rng(5)
    df = pd.DataFrame({"g": gen.choice(["a", "b", "c"], 300), "x": gen.normal(size=300),
                       "y": gen.normal(size=300)})
    with monkeypatch.context() as m:
        m.setattr(randomness, "JIT_AFTER", 10**18)  # announced, never loaded here
        m.setattr(randomness, "_KERNELS", ())
        assert announced(lambda: dprect.describe(
            df, ["x", "y"], group_by="g", groups=["a", "b", "c"], epsilon=1.0,
            seed=1)) == 3 * 2 * aggregates.DRAWS_A_CELL
        assert announced(lambda: dprect.bounds(
            df, ["x", "y"], group_by="g", groups=["a", "b", "c"], epsilon=1.0,
            seed=1)) == 3 * 2 * bounds.DRAWS_A_CELL
        plan = plan_quantiles([0.1, 0.5, 0.9], 1.0, columns=2)
        assert announced(lambda: quantile_release.release_groups(
            plan, {}, [1, 2, 3], 2, RandomSource(1))) == \
            3 * 2 * 3 * quantile_release.DRAWS_A_QUANTILE
        X = gen.normal(size=(40, 5))
        fitted = []
        assert announced(lambda: fitted.append(dprect.fit(
            X, np.ones(40, int), epsilon=1.0, delta=1e-6, seed=1))) == \
            5 * quantile_box.DRAWS_AN_AXIS
        assert fitted[0].method == "quantiles"
