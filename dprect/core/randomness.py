"""The single source of randomness of a dprect run.

By default every draw comes from the operating system's entropy pool: ``os.urandom``,
read 64 KiB at a time (:class:`PooledSystemRandom`: the bits of
:class:`random.SystemRandom`, one system call per 64 KiB instead of one per draw; a
forked child never reuses its parent's unread bytes). A seed switches to a Mersenne
Twister (:class:`random.Random`) so that a run can be reproduced exactly — across engines
too (docs/algorithm.md §7) — and it exists *only* for tests and reproducibility: a seeded run is
not private against anybody who knows or can guess the seed, and every result of a seeded
run says so.

Exact discrete samplers live here as well:

* :meth:`RandomSource.bernoulli` — Bernoulli(a/b) for a rational a/b, exactly, as
  ``randbelow(b) < a``.
* :meth:`RandomSource.bernoulli_exp` — Bernoulli(exp(−γ)) for a rational γ ≥ 0, exactly,
  by the alternating-series method of Canonne, Kamath & Steinke, "The Discrete Gaussian
  for Differential Privacy" (NeurIPS 2020), Algorithm 1.
* :meth:`RandomSource.geometric_exp` — the number of failures before a success of
  Bernoulli(1 − exp(−s/t)) trials, exactly, by the same paper's Algorithm 2 (first part):
  draw U uniform on {0, …, t−1} accepted with probability exp(−U/t), V geometric with
  ratio e^{−1}; then ⌊(U + t·V)/s⌋ has P(G = g) = (1 − e^{−s/t})·e^{−g·s/t}.
* :meth:`RandomSource.discrete_laplace` — Z on the integers with
  P(Z = z) = (1 − e^{−s/t})/(1 + e^{−s/t})·e^{−|z|·s/t}, exactly, by the same paper's
  Algorithm 2: G as above, a fair sign B; (B = minus, G = 0) is rejected (so that 0 is not
  counted twice), else ±G is returned. Used by the DP aggregates (:mod:`dprect.core.aggregates`).

The sides' draws of the aggregates' bounds (:mod:`dprect.core.step_exponential`) use
:meth:`RandomSource.geometric_exp`, :meth:`RandomSource.randbelow` and the integer form of
:meth:`RandomSource.bernoulli_exp`.

No floating-point arithmetic enters these samplers, and no Fraction object either: each
Bernoulli(a/b) is ``randbelow(b) < a`` with a/b in lowest terms, reduced by a gcd on
Python integers — the bounds the Fraction form of the same algorithms would pass to
``randbelow``, so the draws (and the random bits consumed) are those of that form,
seed for seed (tests/core/test_sampler_fast_paths.py holds the Fraction form and checks
it), at a fraction of the cost: a describe run draws several per (group, column). Together with
:meth:`RandomSource.randbits` (k exact uniform bits: the digits of a lazily drawn uniform)
they are all the exact interior point (:mod:`dprect.core.interior_point`) draws from;
:meth:`RandomSource.uniform` (a 53-bit float) is used by no mechanism.

**Compiled, on the same bits.** Where numba is installed, the samplers run compiled
(:mod:`dprect.core.random_jit`): the same algorithms on machine integers — int64 below
2^62, two 64-bit words up to 2^127 for a scale's numerator up to 2^96 (a sum's noise) — drawing
from the same stream: a seeded source's Mersenne Twister is CPython's, its state held in
a numpy array (handed to and from a ``random.Random`` when a Python draw needs it), an
unseeded source's pool is the same bytes read at the same position. Arguments past those
bounds run the Python samplers on the same state. Which path ran changes neither a value
nor the bits consumed (tests/core/test_random_jit.py compares them draw for draw), so the
exactness above holds for both: still no float and no rounding in any sampler.
"""

from __future__ import annotations

import math
import os
import random
import sys
import warnings
import weakref
from collections.abc import Callable, Sequence
from fractions import Fraction
from types import FrameType
from typing import Any

import numpy as np

from dprect.core.errors import ParameterError

SEEDED_WARNING = (
    "this run used a fixed seed: its noise is reproducible and therefore NOT private "
    "against anyone who knows the seed. Seeds are for tests and reproducibility only; "
    "never publish a seeded result as differentially private."
)


#: how many times this process read randomness a mechanism may use (see :func:`draws`)
_DRAWS = 0


def draws() -> int:
    """A count that grows whenever noise may have been drawn in this process: each read of
    OS entropy into a pool, each seeded source made (a seeded source is counted when made,
    before its first draw), each task handed to a worker process that draws
    (:func:`note_draw`). Read before and after a compute, it tells whether any noise was
    drawn in between (:func:`dprect.release.guarded.guarded_release`: an interrupted run
    that drew none is not charged). It errs one way only: a count that grew may mean no
    draw, a count that did not grow means none."""
    return _DRAWS


def note_draw() -> None:
    """Count a draw that happens elsewhere (a task sent to a worker process)."""
    global _DRAWS
    _DRAWS += 1


#: the bits of each seed :meth:`RandomSource.stream_seeds` draws for a block of work
STREAM_SEED_BITS = 128
#: bytes of OS entropy read per system call by :class:`PooledSystemRandom`
POOL_BYTES = 1 << 16


class PooledSystemRandom(random.SystemRandom):
    """:class:`random.SystemRandom` that reads ``os.urandom`` :data:`POOL_BYTES` at a time
    and hands the bytes out in order: ``getrandbits(k)`` is the top k bits of the next
    ⌈k/8⌉ bytes read big-endian, exactly as ``SystemRandom.getrandbits`` reads a fresh
    ``os.urandom(⌈k/8⌉)`` — the same law (independent uniform bits), without a system
    call per draw (a describe run's driver makes millions of small draws: the call was
    two thirds of its cost). Unread bytes are dropped in a child after ``os.fork``
    (``os.register_at_fork``), so a parent and its child never share a draw. Nothing of
    the pool is ever written anywhere."""

    def __init__(self) -> None:
        super().__init__()
        #: a bytearray: the compiled samplers read (and refill) it through a numpy view
        self._pool = bytearray()
        self._at = 0
        self._viewed: tuple[bytearray, np.ndarray, np.ndarray] | None = None
        _POOLS.add(self)

    def _fresh(self, n: int) -> bytearray:
        """A new pool of at least n bytes: the next bytes given back to the compiled
        samplers' refills (``random_jit.REFILLS.given``, where loaded), else the OS's."""
        refills = getattr(_KERNELS, "REFILLS", None)
        given = refills.given if refills is not None else None
        if given and len(given[0]) >= n:
            return bytearray(given.pop(0))
        return bytearray(os.urandom(max(POOL_BYTES, n)))

    def give_back(self, at: int, unread: np.ndarray | None) -> None:
        """Undo a compiled call's reads of this pool: its bytes from ``at`` on put back
        as they were (``unread``; None: the call did not refill the pool, so they are
        still there) and the position at ``at`` (the pools the call's refills read go to
        ``random_jit.REFILLS.given``: the caller's)."""
        if unread is not None:
            view = np.frombuffer(self._pool, dtype=np.uint8)
            view[at:] = unread
        self._at = at

    def _take(self, n: int) -> bytearray:
        at, end = self._at, self._at + n
        if end > len(self._pool):
            note_draw()  # every first draw of a pool comes here
            self._pool = self._fresh(n)
            at, end = 0, n
        self._at = end
        return self._pool[at:end]

    def getrandbits(self, k: int) -> int:
        at = self._at
        if 0 < k <= 8 and at < len(self._pool):  # one byte (a sign, a coin)
            self._at = at + 1
            return self._pool[at] >> (8 - k)
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        n = (k + 7) // 8
        return int.from_bytes(self._take(n), "big") >> (n * 8 - k) if n else 0

    def _randbelow(self, n: int) -> int:
        """A uniform integer in {0, …, n − 1} (n ≥ 1) by rejection: k = (n − 1).bit_length()
        bits (the fewest that reach n − 1: ``Random._randbelow_with_getrandbits`` takes
        n.bit_length(), one more for a power of two) until they read below n; for n = 1
        the answer is 0 and nothing is read. Inlined on the pool: the exact samplers' one
        primitive, called a few times per step of a search."""
        if n == 1:
            return 0
        k = (n - 1).bit_length()
        size = (k + 7) >> 3
        drop = (size << 3) - k
        while True:
            at = self._at
            end = at + size
            pool = self._pool
            if end > len(pool):
                self._take(size)  # refills
                at, end, pool = 0, size, self._pool
            self._at = end
            r = (pool[at] if size == 1 else int.from_bytes(pool[at:end], "big")) >> drop
            if r < n:
                return r

    def random(self) -> float:
        """53 bits, as ``SystemRandom.random`` takes them from 7 bytes."""
        return (int.from_bytes(self._take(7), "big") >> 3) * 2.0**-53

    def randbytes(self, n: int) -> bytes:
        return bytes(self._take(n))

    def forget(self) -> None:
        """Drop the unread bytes (the next draw reads the OS afresh)."""
        self._pool, self._at = bytearray(), 0

    def view(self) -> tuple[np.ndarray, np.ndarray]:
        """The pool as a uint8 array sharing its bytes, and the read position as a
        one-element int64 array, for a compiled sampler (:mod:`dprect.core.random_jit`;
        it refills the pool in place, so a pool is read there only once it has bytes:
        an empty one is filled here first). :meth:`settle` takes the position back."""
        if not self._pool:  # nothing unread is dropped: the same law, the same bytes
            note_draw()
            self._pool, self._at = self._fresh(POOL_BYTES), 0
        if self._viewed is None or self._viewed[0] is not self._pool:
            self._viewed = (self._pool, np.frombuffer(self._pool, dtype=np.uint8),
                            np.zeros(1, dtype=np.int64))
        self._viewed[2][0] = self._at
        return self._viewed[1], self._viewed[2]

    def settle(self, pos: np.ndarray) -> None:
        """The read position after a compiled sampler read the pool (:meth:`view`)."""
        self._at = int(pos[0])


_POOLS: weakref.WeakSet[PooledSystemRandom] = weakref.WeakSet()


def _forget_pools() -> None:
    for pool in list(_POOLS):
        pool.forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


#: the folder of the dprect package (its frames are not the caller a warning names)
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def caller_level() -> int:
    """The ``stacklevel`` that makes a warning issued by the function calling this name
    the first frame outside the dprect package — the user's line calling ``dprect.fit``
    or ``dprect.describe``, however deep inside dprect the warning is raised (Python
    3.11 has no ``skip_file_prefixes``). 2 (the warning's own caller) when every frame is
    dprect's (the command line)."""
    frame: FrameType | None = sys._getframe(2)  # the caller of the function that warns
    level = 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return 2 if frame is None else level


def check_seed(seed: object, name: str = "seed") -> int | None:
    """A run's test seed: None (OS entropy) or a non-negative integer, else one
    :class:`ParameterError` (from the option alone). Every front checks it before its
    charge — a seed refused after the charge would cost a budget for nothing."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)
                             or seed < 0):
        raise ParameterError(f"{name} must be a non-negative integer, got {seed!r}")
    return seed


class RandomSource:
    """All randomness of one run, drawn in a fixed order.

    ``RandomSource()`` draws from OS entropy; ``RandomSource(seed=s)`` is reproducible and
    warns (``seeded`` is then True).

    Where numba is installed the exact samplers run compiled
    (:mod:`dprect.core.random_jit`) on the same bits: a seeded source then keeps its
    Mersenne Twister's state in a numpy array (``random.Random(seed)``'s state, made and
    advanced by the compiled twister), and :attr:`_gen` gives it back as a
    ``random.Random`` on demand (then the array is made again from it at the next
    compiled draw); an unseeded source's pool is read in place. Which path draws changes
    neither the values nor the bits consumed.
    """

    def __init__(self, seed: int | None = None) -> None:
        seed = check_seed(seed)
        if seed is None:
            self._init_os()
        else:
            self._init_seeded(seed)
            warnings.warn(SEEDED_WARNING, UserWarning, stacklevel=caller_level())

    #: (the joint array, this source's row index, the row) when :meth:`streams` made it
    #: as a row of one array: :class:`JointStreams` draws in place while it still holds it
    _home: tuple[np.ndarray, int, np.ndarray] | None = None

    def _init_os(self) -> None:
        self._py: random.Random | None = PooledSystemRandom()
        self._mt: np.ndarray | None = None
        self.seeded = False
        self._bind()

    def _init_seeded(self, seed: int) -> None:
        """The state of ``random.Random(seed)``: in an array for the compiled samplers
        where numba is installed, else the generator itself."""
        jit = kernels()
        if jit is None:
            self._py, self._mt = random.Random(seed), None
        else:
            self._py, self._mt = None, np.zeros(625, dtype=np.uint32)
            jit.seed_state(self._mt, np.array(_seed_words(seed), dtype=np.uint32))
        note_draw()  # counted when made (its draws are not counted one by one)
        self.seeded = True
        self._bind()

    # -- the generator's state: Python's or the compiled samplers' ---------------------
    @property
    def _gen(self) -> random.Random:
        """The Python generator, holding the source's current state (a seeded source's
        array state is handed back to a ``random.Random`` first)."""
        if self._mt is not None:
            gen = random.Random()
            gen.setstate((3, (*self._mt.tolist(),), None))
            self._py, self._mt = gen, None
            self._bind()
        assert self._py is not None
        return self._py

    @_gen.setter
    def _gen(self, gen: Any) -> None:
        """Draw from ``gen`` from now on (a test's scripted generator): the Python path,
        the compiled samplers only on a ``random.Random`` or a
        :class:`PooledSystemRandom` (:meth:`_compiled`)."""
        self._py, self._mt = gen, None
        if isinstance(gen, random.Random):
            self._bind()

    def _compiled(self) -> Any:
        """The compiled samplers (:func:`kernels`) where this source's stream is one they
        draw (a seeded twister, or a pool of OS bytes), else None: the Python path."""
        jit = kernels()
        py = type(self._py)
        if jit is None or not (self._mt is not None or (
                py is random.Random if self.seeded else py is PooledSystemRandom)):
            return None
        return jit

    def _bind(self) -> None:
        """The primitive draws of the Python samplers, on whichever holds the state."""
        if self._mt is None:
            assert self._py is not None
            self._below = _below_of(self._py)
            self._getrandbits = self._py.getrandbits
        else:
            self._below = self._mt_below
            self._getrandbits = self._mt_getrandbits

    def _mt_below(self, n: int) -> int:
        """randbelow(n) on the array state: CPython's ``_randbelow_with_getrandbits``."""
        from dprect.core import random_jit as jit  # loaded: it made the array state

        assert self._mt is not None
        if n < jit.LIMIT:
            return int(jit.below(0, self._mt, _NO_POOL, _NO_POS, n))
        k = n.bit_length()
        r = self._mt_getrandbits(k)
        while r >= n:
            r = self._mt_getrandbits(k)
        return r

    def _mt_getrandbits(self, k: int) -> int:
        """getrandbits(k) on the array state."""
        from dprect.core import random_jit as jit  # loaded: it made the array state

        assert self._mt is not None
        if k <= 64:
            return int(jit.bits(0, self._mt, _NO_POOL, _NO_POS, k))
        words = np.zeros((k + 31) // 32, dtype=np.uint32)
        jit.fill_words(self._mt, k, words)
        return int.from_bytes(words.astype("<u4").tobytes(), "little")

    def _state(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """(kind, twister state, pool, position) for a compiled sampler: kind 0 with the
        seeded source's state (made from the Python generator's if that holds it), kind
        1 with the pool's bytes and read position. :meth:`_settle` after the call."""
        if self.seeded:
            if self._mt is None:
                assert self._py is not None
                self._mt = np.array(self._py.getstate()[1], dtype=np.uint32)
                self._py = None
                self._bind()
            return 0, self._mt, _NO_POOL, _NO_POS
        assert isinstance(self._py, PooledSystemRandom)
        note_draw()  # the compiled sampler may refill the pool
        pool, pos = self._py.view()
        return 1, _NO_MT, pool, pos

    def _settle(self, kind: int, pos: np.ndarray) -> None:
        if kind == 1:
            assert isinstance(self._py, PooledSystemRandom)
            self._py.settle(pos)

    def _run(self, kernel: Any, *args: Any) -> Any:
        """One compiled kernel on this source's state (drawn from, then settled)."""
        kind, mt, pool, pos = self._state()
        out = kernel(kind, mt, pool, pos, *args)
        self._settle(kind, pos)
        return out

    # -- independent streams ---------------------------------------------------------
    def stream_seeds(self, n: int) -> list[int | None]:
        """What :meth:`stream` needs to make n independent sources for blocks of work
        that may run in any order or in other processes (a describe run's groups): with
        a seed, n seeds of :data:`STREAM_SEED_BITS` bits drawn from this source in order
        (so the blocks' draws follow from the run's seed, wherever they run); from OS
        entropy, n × None — each stream reads the OS itself and nothing is drawn here."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError("stream_seeds needs n >= 0 (an internal invariant)")
        if not self.seeded:
            return [None] * n
        getrandbits = self._getrandbits
        return [getrandbits(STREAM_SEED_BITS) for _ in range(n)]

    @classmethod
    def streams(cls, seeds: Sequence[int | None]) -> list[RandomSource]:
        """The sources of many blocks of work, ``seeds[i]`` → :meth:`stream` ``(seeds[i])``
        (the same generators), except that the None entries share ONE OS source (no draw
        of one is reproduced, so sharing changes no law: a describe block's groups). Where
        the compiled samplers are loaded, the seeded ones are seeded in one compiled call
        (:func:`~dprect.core.random_jit.seed_states`) as the rows of one array, which
        :class:`JointStreams` then draws from in place (issue #42: a stream a group)."""
        for seed in seeds:
            if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)
                                     or seed < 0):
                raise ParameterError("a stream seed must be a non-negative integer, got "
                                     f"{seed!r}")
        jit = kernels()
        given = [s for s in seeds if s is not None]
        if jit is None or len(given) != len(seeds) or not seeds:
            shared: list[RandomSource] = []
            out = []
            for seed in seeds:
                if seed is None and not shared:
                    shared.append(cls())
                out.append(shared[0] if seed is None else cls.stream(seed))
            return out
        words = [_seed_words(s) for s in given]
        at = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum([len(w) for w in words], out=at[1:])
        states = np.zeros((len(words), 625), dtype=np.uint32)
        jit.seed_states(states, np.array([x for w in words for x in w], dtype=np.uint32), at)
        sources = []
        for r, row in enumerate(states):
            source = cls.__new__(cls)
            source._py, source._mt, source.seeded = None, row, True
            source._home = (states, r, row)
            source._bind()
            note_draw()  # counted when made, as _init_seeded counts it
            sources.append(source)
        return sources

    @classmethod
    def stream(cls, seed: int | None) -> RandomSource:
        """The source of one block of work from its :meth:`stream_seeds` entry: OS
        entropy for None, else a generator seeded with it (``seeded``, without a second
        warning: the run's own source warned when it was seeded)."""
        if seed is None:
            return cls()
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ParameterError(f"a stream seed must be a non-negative integer, got {seed!r}")
        # what cls(seed=seed) makes, without its warning (a describe run makes one per
        # group: catching the warning each time cost more than the stream's draws)
        source = cls.__new__(cls)
        source._init_seeded(seed)
        return source

    # -- primitive draws -------------------------------------------------------------
    def randbelow(self, n: int) -> int:
        """A uniform integer in {0, …, n−1}; exact for any n ≥ 1 (arbitrary precision)."""
        if n < 1:
            raise ValueError("randbelow needs n >= 1 (an internal invariant)")
        return self._below(n)  # gen.randrange(n)'s draws (_below_of)

    def randbits(self, k: int) -> int:
        """k independent uniform random bits as an integer in {0, …, 2^k − 1}; exact."""
        if k < 1:
            raise ValueError("randbits needs k >= 1 (an internal invariant)")
        return self._getrandbits(k)

    def uniform(self) -> float:
        """A uniform float in [0, 1) with 53 random bits (not used by any mechanism)."""
        return self._gen.random()

    # -- exact samplers --------------------------------------------------------------
    def bernoulli(self, p: Fraction) -> bool:
        """True with probability exactly ``p`` (a rational in [0, 1])."""
        p = Fraction(p)
        if not 0 <= p <= 1:
            raise ValueError("bernoulli needs p in [0, 1] (an internal invariant)")
        return self.randbelow(p.denominator) < p.numerator

    def bernoulli_exp(self, gamma: Fraction) -> bool:
        """True with probability exactly exp(−γ), for rational γ ≥ 0 (CKS 2020, Alg. 1):
        exp(−γ) = exp(−1)^⌊γ⌋·exp(−(γ − ⌊γ⌋)), and for γ' in [0, 1] the first k with
        Bernoulli(γ'/k) = 0 is odd with probability exp(−γ'). Each Bernoulli(a/b) is
        ``randbelow(b) < a`` with a/b in lowest terms (:func:`_bernoulli_exp_reduced`:
        integers and a gcd, no Fraction objects)."""
        gamma = Fraction(gamma)
        if gamma < 0:
            raise ValueError("bernoulli_exp needs gamma >= 0 (an internal invariant)")
        return self._exp_reduced(gamma.numerator, gamma.denominator)

    def bernoulli_exp_ratio(self, a: int, b: int) -> bool:
        """:meth:`bernoulli_exp` of γ = a/b (integers a ≥ 0, b ≥ 1), with the same draws
        as ``bernoulli_exp(Fraction(a, b))`` (reduced by a gcd here), without making the
        Fraction — for the exact samplers' inner loops."""
        if a < 0 or b < 1:
            raise ValueError("bernoulli_exp_ratio needs a >= 0, b >= 1 (an internal invariant)")
        g = math.gcd(a, b)
        return self._exp_reduced(a // g, b // g)

    def _exp_reduced(self, a: int, b: int) -> bool:
        """:func:`_bernoulli_exp_reduced` of a/b, compiled where numba is installed and
        a, b < 2^62 (:mod:`dprect.core.random_jit`; the same draws)."""
        jit = self._compiled()
        if jit is not None and a < jit.LIMIT and b < jit.LIMIT:
            return compiled_status(self._run(jit.bernoulli_exp_reduced, a, b), jit) == 1
        return _bernoulli_exp_reduced(self._below, a, b)

    def geometric_exp(self, s: int, t: int) -> int:
        """G ≥ 0 with P(G = g) = (1 − e^{−s/t})·e^{−g·s/t}, exactly (CKS 2020, Alg. 2)."""
        if s < 1 or t < 1:
            raise ValueError("geometric_exp needs s, t >= 1 (an internal invariant)")
        jit = self._compiled()
        if jit is not None and s < jit.LIMIT and t < jit.WIDE:
            if t < jit.LIMIT:
                u, v, status = self._run(jit.geometric_exp, s, t)
            else:
                uh, ul, v, status = self._run(jit.geometric_exp2, *_words(t))
                u = int(uh) << 64 | int(ul)
            compiled_status(status, jit)
            return (int(u) + t * int(v)) // s
        return _geometric_exp(self._below, s, t)

    def discrete_laplace(self, scale: Fraction) -> int:
        """Z ∈ ℤ with P(Z = z) ∝ exp(−|z|/scale), exactly, for a rational ``scale`` > 0
        (CKS 2020, Algorithm 2, with scale = t/s): a draw G of :meth:`geometric_exp` and a
        fair sign; the pair (negative, 0) is rejected, so P(Z = z) = P(G = |z|)/2 for
        z ≠ 0 and P(G = 0) for z = 0, divided by the acceptance probability — the
        two-sided geometric law."""
        scale = Fraction(scale)
        if scale <= 0:
            raise ValueError("discrete_laplace needs scale > 0 (an internal invariant)")
        return self.discrete_laplace_int(scale.denominator, scale.numerator)

    def discrete_laplace_int(self, s: int, t: int) -> int:
        """:meth:`discrete_laplace` at scale = t/s for integers s, t ≥ 1 (the rate s/t;
        a scale's ``denominator`` and ``numerator``), for callers that draw many times at
        one scale. The draws depend on s and t, not only on their ratio: give them in
        lowest terms for the draws of :meth:`discrete_laplace`."""
        if s < 1 or t < 1:
            raise ValueError("discrete_laplace_int needs s, t >= 1 (an internal invariant)")
        jit = self._compiled()
        if jit is not None and s < jit.LIMIT and t < jit.WIDE:
            if t < jit.LIMIT:
                u, v, negative, status = self._run(jit.discrete_laplace, s, t)
            else:
                uh, ul, v, negative, status = self._run(jit.discrete_laplace2, s, *_words(t))
                u = int(uh) << 64 | int(ul)
            compiled_status(status, jit)
            g = (int(u) + t * int(v)) // s
            return -g if negative else g
        randrange, getrandbits = self._below, self._getrandbits
        while True:
            g = _geometric_exp(randrange, s, t)
            negative = getrandbits(1) == 1  # randbits(1)
            if negative and g == 0:
                continue
            return -g if negative else g

    def _bernoulli_exp_int(self, n: int, d: int) -> bool:
        """True with probability exactly exp(−n/d) (integers n ≥ 0, d ≥ 1): the method of
        :meth:`bernoulli_exp` with Bernoulli(γ/k) drawn as ``randbelow(d·k) < n'``
        (γ = n'/d the fractional part), no Fraction objects."""
        jit = self._compiled()
        if jit is not None and n < jit.LIMIT and d < jit.LIMIT:
            return compiled_status(self._run(jit.bernoulli_exp_int, n, d), jit) == 1
        return _bernoulli_exp_int(self._below, n, d)

    def geometric(self, p: Fraction) -> int:
        """Number of successes of Bernoulli(p) trials before the first failure, exactly:
        P(J ≥ j) = p^j."""
        j = 0
        while self.bernoulli(p):
            j += 1
        return j


class JointStreams:
    """Several sources drawn from by one compiled call (a block of describe cells:
    :mod:`dprect.core.cell_draws`): seeded sources' Mersenne Twister states as the rows
    of one array (each source then holds its row: its own draws, compiled or Python,
    advance that very row), or ONE unseeded source's pool for every row (a block's
    groups without a seed share one OS source: :func:`dprect.core.aggregates.
    describe_block`). :meth:`run` calls a kernel as ``kernel(kind, states, pool, pos,
    *args)``, row r drawing from ``sources[r]``; between two calls a source may draw
    on its own (:meth:`adopt` it after, in case it let go of its row)."""

    def __init__(self, sources: list[RandomSource]) -> None:
        self.sources = sources
        self.kind = 0 if sources[0].seeded else 1
        self.states = (np.empty((len(sources), 625), dtype=np.uint32) if self.kind == 0
                       else _NO_MT.reshape(1, 625))
        self._rows: list[np.ndarray] = []
        if self.kind == 0:
            home = _home_array(sources)
            if home is not None:  # the sources hold the rows of one array, in order
                self.states, self._rows = home, [s._home[2] for s in sources]  # type: ignore[index]
                return
            self._rows = [self.states[r] for r in range(len(sources))]
            for r in range(len(sources)):
                self.adopt(r)

    @staticmethod
    def possible(sources: list[RandomSource]) -> bool:
        """Whether :class:`JointStreams` serves ``sources``: every one drawn compiled
        (:meth:`RandomSource._compiled`), and either all seeded and distinct or all one
        unseeded source."""
        if not sources:
            return False
        first = sources[0]
        if not first.seeded:  # one source for every row: asked once whether compiled
            return all(s is first for s in sources) and first._compiled() is not None
        return all(s.seeded for s in sources) and \
            len({id(s) for s in sources}) == len(sources) and \
            not any(s._compiled() is None for s in sources)

    def adopt(self, r: int) -> None:
        """Row r holds ``sources[r]``'s current state, and the source draws from it."""
        if self.kind != 0:
            return
        source, row = self.sources[r], self._rows[r]
        if source._mt is not row:
            row[:] = source._state()[1]
            source._mt = row

    def run(self, kernel: Any, *args: Any) -> Any:
        """``kernel`` on the joined states (drawn from, then settled)."""
        if self.kind == 0:
            return kernel(0, self.states, _NO_POOL, _NO_POS, *args)
        kind, _, pool, pos = self.sources[0]._state()
        out = kernel(kind, self.states, pool, pos, *args)
        self.sources[0]._settle(kind, pos)
        return out


def _home_array(sources: list[RandomSource]) -> np.ndarray | None:
    """The array whose row r ``sources[r]`` draws from, for every r (:meth:`RandomSource.
    streams` made them so and none has let go of its row), else None."""
    first = sources[0]._home
    if first is None or first[0].shape[0] != len(sources):
        return None
    base = first[0]
    for r, source in enumerate(sources):
        home = source._home
        if home is None or home[0] is not base or home[1] != r or source._mt is not home[2]:
            return None
    return base


def _seed_words(seed: int) -> list[int]:
    """The 32-bit words of a seed, least significant first: ``random.Random(seed)``'s
    key (``init_by_array``)."""
    return [(seed >> i) & 0xFFFFFFFF for i in range(0, max(seed.bit_length(), 1), 32)]


_NO_POOL = np.zeros(1, dtype=np.uint8)  # the pool argument of a seeded source's call
_NO_POS = np.zeros(1, dtype=np.int64)
_NO_MT = np.zeros(625, dtype=np.uint32)  # the twister argument of an unseeded one's

#: the compiled samplers (:mod:`dprect.core.random_jit`), None without numba, or not
#: looked up yet (the empty tuple)
_KERNELS: Any = ()
#: the sampler calls a process's announced work (:func:`expect_draws`) must reach before
#: it loads the compiled samplers (about 15 a describe cell: some 10^4 cells): importing
#: numba and loading the kernels costs about a second, about what the compiled draws save
#: on 2·10^4 cells — a run of a few cells (a fit, a small describe) never pays it
JIT_AFTER = 200_000
#: the sampler calls this process's work has announced so far (public sizes only)
_EXPECTED = 0


def expect_draws(calls: int) -> None:
    """Announce work about to be drawn in this process: about ``calls`` sampler calls,
    an estimate from PUBLIC sizes only — a block's groups × columns × its mechanism's
    calls a cell (``DRAWS_A_CELL`` of :mod:`~dprect.core.aggregates`,
    :mod:`~dprect.core.bounds`; ``DRAWS_A_QUANTILE`` of
    :mod:`~dprect.core.quantile_release`) — called before the block's sources are made.
    :func:`kernels` loads the compiled samplers once the announced calls reach
    :data:`JIT_AFTER`: when they load depends on the run's public shape, never on how
    many draws the data made (only speed depends on it: the same draws either way)."""
    global _EXPECTED
    _EXPECTED += calls


def kernels() -> Any:
    """:mod:`dprect.core.random_jit` once this process's announced work
    (:func:`expect_draws`) reaches :data:`JIT_AFTER` sampler calls (imported then, its
    kernels loaded from numba's cache, or compiled), None before, or where numba is not
    installed — then the samplers run in Python, with the same draws (a source switches
    between the two on the same stream)."""
    global _KERNELS
    if _KERNELS == ():
        if _EXPECTED < JIT_AFTER:
            return None
        try:
            from dprect.core import random_jit
        except ImportError:
            _KERNELS = None
        else:
            _KERNELS = random_jit
    return _KERNELS


def _words(t: int) -> tuple[np.uint64, np.uint64]:
    """t < 2^128 as its (high, low) 64-bit words, for a compiled two-word sampler."""
    return np.uint64(t >> 64), np.uint64(t & 0xFFFFFFFFFFFFFFFF)


def compiled_status(status: int, jit: Any) -> int:
    """A compiled sampler's or round's status (DONE, PAUSE, or a 0/1 result), or an
    internal error for its BOUND (a loop past
    round 2^62: probability below 1/(2^62 − 1)!, :mod:`dprect.core.random_jit`)."""
    if status == jit.BOUND:
        raise AssertionError("a compiled sampler ran past its int64 bound "
                             "(cannot happen: probability below 1/(2^62 - 1)!)")
    return int(status)


def _below_of(gen: random.Random) -> Callable[[int], int]:
    """``gen.randrange`` for the exact samplers' uniform draws on {0, …, n − 1}, n ≥ 1
    (every caller's n is ≥ 1). For n ≥ 1 the standard ``randrange(n)`` only checks its
    argument and returns ``gen._randbelow(n)``, so where the generator keeps the standard
    ``randrange`` that method is used directly: the same getrandbits calls, hence the same
    values for a seed (tests/core/test_randomness.py compares the two), without the
    checks — about a third of the cost of a draw on a describe run's driver."""
    below = getattr(gen, "_randbelow", None)
    if type(gen).randrange is random.Random.randrange and callable(below):
        return below
    return gen.randrange


def _exp_units(randrange: Callable[[int], int], whole: int) -> bool:
    """Bernoulli(exp(−whole)) as ``whole`` units of exp(−1) in a row: per unit K, the
    first k with Bernoulli(1/k) = ``randrange(k) < 1`` false, is odd with probability
    exp(−1); the first even K ends the draw (False)."""
    for _ in range(whole):
        k = 1
        while randrange(k) < 1:
            k += 1
        if k % 2 == 0:
            return False
    return True


def _bernoulli_exp_reduced(randrange: Callable[[int], int], a: int, b: int) -> bool:
    """:meth:`RandomSource.bernoulli_exp` of γ = a/b (a ≥ 0, b ≥ 1, gcd(a, b) = 1) with
    the same ``randrange`` calls: each Bernoulli(γ'/k) of the Fraction path is
    ``randbelow(den) < num`` for γ'/k in lowest terms (0 as 0/1), reduced here by a gcd."""
    whole = a // b
    if not _exp_units(randrange, whole):
        return False
    a -= whole * b  # the fractional part, still in lowest terms over b
    k = 1
    while True:
        bk = b * k
        g = math.gcd(a, bk)
        if not randrange(bk // g) < a // g:
            return k % 2 == 1
        k += 1


def _geometric_exp(randrange: Callable[[int], int], s: int, t: int) -> int:
    """:meth:`RandomSource.geometric_exp`: U uniform on {0, …, t − 1} accepted with
    probability exp(−U/t) (U/t in lowest terms), V the number of successes of
    Bernoulli(exp(−1)) before a failure; ⌊(U + t·V)/s⌋."""
    while True:
        u = randrange(t)
        g = math.gcd(u, t)
        if _bernoulli_exp_reduced(randrange, u // g, t // g):
            break
    v = 0
    while _bernoulli_exp_reduced(randrange, 1, 1):
        v += 1
    return (u + t * v) // s


def _bernoulli_exp_int(randrange: Callable[[int], int], n: int, d: int) -> bool:
    """:meth:`RandomSource._bernoulli_exp_int`: exp(−1) per whole unit (K = the first k
    with Bernoulli(1/k) = 0, odd with probability exp(−1)), then the fractional part
    n'/d with Bernoulli(n'/(d·k)) drawn as ``randbelow(d·k) < n'``."""
    whole, frac = divmod(n, d)
    if not _exp_units(randrange, whole):
        return False
    k = 1
    while randrange(d * k) < frac:
        k += 1
    return k % 2 == 1
