"""One side's bound: the monotone exponential mechanism over the side's candidate steps,
with a public prior that decays by a fixed factor per step (issue #23; proof in
docs/privacy.md §11, Lemmas D3 and D3′).

Given the centre (public once drawn) a side has finitely many public candidates
k = 0, 1, …, N − 1, outward (:class:`~dprect.core.tail_bounds.CandidateStream`), and a
tail count q_k = the rows a bound at candidate k clips, non-increasing in k and 0 past the
data. Step k is drawn with probability

    P(k) = w_k / Σ_j w_j,    w_k = exp(−ε·max(q_k − t, 0) − μ·k),

t the public target of clipped rows, ε the side's ε and μ = ``DECAY`` per step. Adding a
row raises some q_k by one and lowers none, so every log-weight moves by 0 or −ε, all the
same way: the normaliser moves by a factor in [e^−ε, 1] and each w_k by one in [e^−ε, 1],
so every P(k) by a factor in [e^−ε, e^ε] — ε-DP with the whole ε on one draw (the
monotone case of McSherry & Talwar 2007; the prior is public and N finite).

**Why a prior.** Past the data every q_k is 0 and only μ tells the steps apart: a bound
K steps past the first step k_t whose tail is ≤ t has probability at most
Σ_{k ≥ k_t + K} e^{−μk} / w_{k_t} = e^{−μK}/(1 − e^{−μ}) whatever the data
(:func:`runaway_bound`; 1.8·10⁻¹⁷ for K = 79 steps at μ = 1/2 — counted in candidate steps:
a step is a factor 2^(1/8) of the offset before its bin rounding only, so near the centre,
where a candidate is an edge of the centre's 1/16-binade bin, or across a side's zero
restart, K steps are no fixed factor of the data's offset; docs/privacy.md §11, Lemma D3′).
AboveThreshold, the previous
search, split ε between a threshold noise and step noises and ran away through the
threshold's tail (about 10⁻⁵ a side, docs/results.md §5.1). The price of the prior: a
stretch of G steps with no rows costs μ·G, so rows beyond a gap of G steps are covered
only when ε·(rows − t) outweighs it.

**Exact draw** (:func:`draw_step`; no floating-point number decides a draw). With
γ_k = ε·max(q_k − t, 0) + μ·k exactly rational, k* a step of least γ (found in floating
point) and D_k = γ_k − γ_{k*} + η > 0 (η = ``SLACK``, 2^−20, far above any float error
here), each step gets a level b_k with μ·b_k ≤ D_k < μ·(b_k + 1) + 10⁻⁶: for the data's
steps b_k = max(0, ⌊D̃_k/μ·(1 − 10⁻¹²) − 10⁻⁹⌋) from the floating-point D̃_k (rounded down
by more than its error), and for the steps past the data's last row (every q = 0, D_k =
μk + const) exactly ⌊D_k/μ⌋, one step to a level. Then repeat: draw ℓ with P(ℓ) =
(1 − e^{−μ})·e^{−μℓ} (:meth:`~dprect.core.randomness.RandomSource.geometric_exp`), draw u
uniform in {0, …, C − 1} (C ≥ every level's size) and go on only if u < |S_ℓ| (S_ℓ the
steps of level ℓ: the data's in step order, then the one past it), take k = the u-th of
S_ℓ, and accept it with probability exp(−(D_k − μℓ)) (the integer form of
:meth:`~dprect.core.randomness.RandomSource.bernoulli_exp`, exact on the rational). Step k
is returned in one round with probability (1 − e^{−μ})·e^{−μ·b_k}·(1/C)·e^{−(D_k − μ·b_k)}
∝ e^{−D_k} ∝ w_k: exactly P(k). A step past the data is made (its candidate) only when a
round draws it, so the draws depend on the tail counts up to the last nonzero one and on
the side's candidates, not on how many of them the stream has made: every engine draws
the same steps for a seed. Where numba is loaded (:func:`dprect.core.randomness.kernels`)
a one-sided draw runs in one compiled call (:func:`dprect.core.random_jit.side_draw`: the
levels' floats operation for operation, the rounds on the same stream), a two-sided one's
rounds likewise; a round it cannot finish exactly in int64 is finished here: the same steps.

**Memory whatever ε.** The proof needs only μ·b_k ≤ D_k, so a data step's level is capped
at :data:`MAX_LEVEL` and the levels holding data steps are a sparse map (level → its steps):
O(steps) memory, where a dense count per level needs D_k/μ ≈ 2ε·rows entries (36 TiB at
ε = 10^9). A target t above every tail count is taken as the largest (every a_k = 0 either
way), so a tiny ε's huge t stays an int64.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any, NamedTuple, Protocol

import numpy as np

from dprect.core import crmath
from dprect.core.errors import ParameterError
from dprect.core.randomness import RandomSource, compiled_status
from dprect.core.tail_bounds import CandidateStream

#: μ, the prior's decay per step: e^{−μ} = 0.61 a step, a mean spread of
#: e^{−μ}/(1 − e^{−μ}) ≈ 1.5 steps past the target step; a bound 79 or more candidate steps
#: past it (about ten octaves of offset far from the centre) has probability ≤ 1.8·10⁻¹⁷
#: (docs/privacy.md §11, Lemma D3′)
DECAY = Fraction(1, 2)

#: η, the slack added to every D_k = γ_k − γ_{k*} + η (k* is found in floating point,
#: so an exact γ_k may lie a float error below γ_{k*}); far above any float error here
SLACK = Fraction(1, 1 << 20)
_SLACK_F = float(SLACK)

#: the largest level a data step is given: any b_k ≤ D_k/μ keeps the draw exact (module
#: docstring), and a level this deep is drawn with probability e^{−μ·2^60}, never; it keeps
#: a huge ε's levels within int64
MAX_LEVEL = 1 << 60
_MAX_LEVEL_F = float(MAX_LEVEL)
#: D̃/μ is shrunk by this factor before its floor (1 − 10⁻¹², as a float)
_SHRINK = 1.0 - 1e-12


def runaway_bound(steps: int, decay: Fraction = DECAY) -> float:
    """P(the drawn step lies ``steps`` or more past the first step whose tail is ≤ t)
    ≤ e^{−μ·steps}/(1 − e^{−μ}), for any data (module docstring)."""
    mu = float(decay)
    return crmath.exp(-mu * steps) / -crmath.expm1(-mu)


def step_law(tails: np.ndarray, target: int, epsilon: float, count: int,
             decay: Fraction = DECAY, *, two_sided: bool = False) -> np.ndarray:
    """P(k) for k < ``count`` (tails beyond ``len(tails)`` are 0), in floating point: for
    tests and printouts, not for draws."""
    q = np.zeros(count)
    q[:min(len(tails), count)] = np.asarray(tails, dtype=np.float64)[:count]
    bad = np.abs(q - target) if two_sided else np.maximum(q - target, 0.0)
    logw = -epsilon * bad - float(decay) * np.arange(count)
    w = np.exp(logw - logw.max())
    return w / w.sum()


class Steps(Protocol):
    """A side's candidates as :func:`draw_step` reads them: whether step k exists
    (:class:`~dprect.core.tail_bounds.CandidateStream`, or the quantile box's finite
    list, :mod:`dprect.core.quantile_box`)."""

    def has(self, k: int) -> bool: ...


def draw_step(tails: np.ndarray, stream: Steps | CandidateStream, target: int,
              epsilon: Fraction, rng: RandomSource, decay: Fraction = DECAY, *,
              two_sided: bool = False) -> int:
    """The side's step (module docstring), with ``tails[k]`` the tail count at candidate
    k for k < len(tails) and 0 beyond; ``stream`` gives the candidates (its count bounds
    the steps). Exact; the same draws for a seed on every engine, whatever the stream
    has made already and however many trailing zeros ``tails`` holds.

    ``two_sided``: the score is −ε·|q_k − t| − μ·k instead (the quantile box's sides aimed
    at a target, docs/privacy.md §16, Lemma QB2′): a step past its target is charged for
    the rows it fails to clip too, so past the data every step has |0 − t| = t. Not
    monotone: a row moves each log-weight by a shift in [−ε, ε], so the draw at rate ε
    is 2ε-DP and 2ε-bounded-range — the caller passes half its ε. The same exact draw:
    only a_k = |q_k − t| (and t on every far step) changes."""
    eps = epsilon if type(epsilon) is Fraction else Fraction(epsilon)
    mu = decay if type(decay) is Fraction else Fraction(decay)
    if eps <= 0 or mu <= 0:
        raise ParameterError("the side's epsilon and decay must be > 0")
    tails = np.asarray(tails, dtype=np.int64)
    jit = rng._compiled()
    if jit is not None and not two_sided:
        drawn = _compiled_side(tails, stream, int(target), eps, mu, rng, jit)
        if drawn is not None:
            return drawn
    if not two_sided and len(tails) <= _SCALAR_STEPS:
        setup = _scalar_setup(tails.tolist(), stream, int(target), eps, mu)
        if setup is not None:
            return _draw(setup, stream, mu, rng)
    # one-sided: any t ≥ every tail gives every a_k = 0: capped so, a tiny ε's huge t
    # fits an int64 (two-sided: t ≤ N, the caller's target of rows, is not capped)
    t = int(target) if two_sided else min(int(target), int(tails.max(initial=0)))
    far_a = t if two_sided else 0  # a_k on every step past the data (q = 0)
    nonzero = np.flatnonzero(tails)
    known = int(nonzero[-1]) + 1 if len(nonzero) else 0  # trailing zeros change nothing
    if known and not stream.has(known - 1):  # cannot happen: tails are the candidates'
        raise AssertionError("more tail counts than the side has candidates")
    # the data's steps k < known ("near"), in floating point; every step past them has
    # q = 0 ("far": γ_k = μk), handled exactly below and made only when drawn
    a = np.abs(tails[:known] - t) if two_sided else np.maximum(tails[:known] - t, 0)
    eps_f, mu_f = float(eps), float(mu)
    steps = np.arange(known, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        gamma_f = eps_f * a.astype(np.float64) + mu_f * steps
        far_gamma = eps_f * far_a + mu_f * known
        if not (np.isfinite(gamma_f).all() and math.isfinite(far_gamma)):
            # a huge ε: the same order, scaled by 1/ε
            gamma_f = a.astype(np.float64) + (mu_f / eps_f) * steps
            far_gamma = far_a + (mu_f / eps_f) * known
    k_min = int(np.argmin(gamma_f)) if known else 0
    # a side whose candidates end with the data's steps (its last candidate at the
    # largest float, the data reaching it) has no far step: none may be the reference,
    # or every draw would land on a missing step and be rejected (a near-endless loop)
    far = not known or stream.has(known)
    if far and (not known or far_gamma < gamma_f[k_min]):
        k_min = known  # the first far step: γ = μ·known
    a_min = int(a[k_min]) if k_min < known else far_a
    # D̃_k = γ̃_k − γ̃_{k*} + η from the exact integer differences; its level rounds
    # D̃/μ down by a little more than any float error, so that μ·level ≤ D_k exactly
    # (capped at MAX_LEVEL, still ≤ D_k/μ: D̃ may overflow to inf at a huge ε)
    with np.errstate(over="ignore", invalid="ignore"):
        d_f = eps_f * (a - a_min).astype(np.float64) + mu_f * (steps - k_min) + _SLACK_F
        floor = np.floor(d_f / mu_f * (1.0 - 1e-12) - 1e-9)
    levels = np.clip(floor, 0.0, float(MAX_LEVEL)).astype(np.int64)
    # the levels that hold data steps, sparse: memory O(steps) whatever ε (a dense
    # count per level would need D_k/μ entries, ε·rows of them)
    order = np.argsort(levels, kind="stable")
    held, starts, sizes = np.unique(levels[order], return_index=True, return_counts=True)
    den, e_num, m_num, h_num = _integers(eps, mu)
    base = h_num - (e_num * a_min + m_num * k_min)
    sizes_list = sizes.tolist()
    held_list = held.tolist()
    where = dict(zip(held_list, zip(starts.tolist(), sizes_list, strict=True), strict=True))
    return _draw(_Setup(a.tolist(), order.tolist(), where, held_list, sizes_list, known,
                        far, base, den, e_num, m_num, far_a), stream, mu, rng)


class _Setup(NamedTuple):
    """What the draw's loop reads (module docstring, "Exact draw"): the data steps'
    clipped rows above t (``a``), the steps in level order, each held level's (start,
    size) in that order, the held levels and their sizes, the number of data steps,
    whether the side has steps past them, the exact integers D_k·den =
    e·a_k + m·k + base, and a_k past the data."""

    a: list[int]
    order: list[int]
    where: dict[int, tuple[int, int]]
    held: list[int]
    sizes: list[int]
    known: int
    far: bool
    base: int
    den: int
    e_num: int
    m_num: int
    #: a_k on every step past the data (0 one-sided; t two-sided)
    far_a: int = 0


def _integers(eps: Fraction, mu: Fraction) -> tuple[int, int, int, int]:
    """(den, e, m, h): ε = e/den, μ = m/den, η = h/den over their least common
    denominator (one per plan's rates, not one per draw)."""
    return _integers_of(eps.numerator, eps.denominator, mu.numerator, mu.denominator)


@lru_cache(maxsize=256)
def _integers_of(e: int, e_den: int, m: int, m_den: int) -> tuple[int, int, int, int]:
    """:func:`_integers` keyed by the integers (hashing a Fraction costs more)."""
    den = math.lcm(e_den, m_den, SLACK.denominator)
    return (den, e * (den // e_den), m * (den // m_den),
            SLACK.numerator * (den // SLACK.denominator))


#: a side with at most this many tail counts has its levels made on Python floats and
#: integers (:func:`_scalar_setup`: the very floats of the numpy path, element for
#: element; a few dozen numpy calls on tiny arrays cost more than the arithmetic)
_SCALAR_STEPS = 48


def _scalar_setup(tails: list[int], stream: Steps | CandidateStream, target: int,
                  eps: Fraction, mu: Fraction) -> _Setup | None:
    """The setup of :func:`draw_step` for a short list of tail counts, on Python numbers:
    each float operation is the numpy path's, in the same order (IEEE double, one
    rounding each), so the levels — hence the draws — are identical. None when a float
    is not finite (a huge ε): the numpy path handles that."""
    t = min(target, max(tails, default=0))
    known = 0
    for i in range(len(tails) - 1, -1, -1):
        if tails[i]:
            known = i + 1
            break
    if known and not stream.has(known - 1):  # cannot happen: tails are the candidates'
        raise AssertionError("more tail counts than the side has candidates")
    a = [q - t if q > t else 0 for q in tails[:known]]
    eps_f, mu_f = float(eps), float(mu)
    # float · int rounds the int to a float first: the numpy path's astype(float64)
    gamma = [eps_f * ak + mu_f * k for k, ak in enumerate(a)]
    if known and max(gamma) == math.inf:  # no NaN: every term is ≥ 0
        return None
    far_gamma = mu_f * known
    k_min = min(range(known), key=gamma.__getitem__) if known else 0
    far = not known or stream.has(known)
    if far and (not known or far_gamma < gamma[k_min]):
        k_min = known
    a_min = a[k_min] if k_min < known else 0
    km = float(k_min)
    # level = clip(floor(r), 0, MAX_LEVEL): int(r) is floor(r) for r > 0 and every
    # r ≤ 0 gives 0; r ≥ 2^60 (inf included) gives MAX_LEVEL, as np.clip does
    top = _MAX_LEVEL_F
    levels = []
    for k, ak in enumerate(a):
        r = (eps_f * (ak - a_min) + mu_f * (k - km) + _SLACK_F) / mu_f * _SHRINK - 1e-9
        levels.append(MAX_LEVEL if r >= top else int(r) if r > 0 else 0)
    order = sorted(range(known), key=levels.__getitem__)
    where: dict[int, tuple[int, int]] = {}
    held: list[int] = []
    sizes: list[int] = []
    for pos, k in enumerate(order):
        level = levels[k]
        if held and held[-1] == level:
            sizes[-1] += 1
        else:
            held.append(level)
            sizes.append(1)
            where[level] = (pos, 0)
    for level, size in zip(held, sizes, strict=True):
        where[level] = (where[level][0], size)
    den, e_num, m_num, h_num = _integers(eps, mu)
    base = h_num - (e_num * a_min + m_num * k_min)
    return _Setup(a, order, where, held, sizes, known, far, base, den, e_num, m_num)


def _draw(setup: _Setup, stream: Steps | CandidateStream, mu: Fraction,
          rng: RandomSource) -> int:
    """The draw's loop (module docstring, "Exact draw") on a :class:`_Setup`."""
    a, order, where = setup.a, setup.order, setup.where
    den, e_num, m_num, base, far = setup.den, setup.e_num, setup.m_num, setup.base, setup.far
    # a far step's D_k is μk + (e·a_far + base)/den > 0, its level k + ⌊(e·a_far +
    # base)/m⌋ exactly: one to a level, from the first far step's on
    far_a = setup.far_a
    shift = (e_num * far_a + base) // m_num
    far_from = setup.known + shift
    if far and far_from < 0:  # cannot happen: D_k > 0 for every step
        raise AssertionError("a step past the data below the least log-weight")
    # C: a level's data steps, plus its one far step from far_from on (if the side has
    # far steps)
    cap = max(max(setup.sizes, default=0),
              1 + max((z for h, z in zip(setup.held, setup.sizes, strict=True)
                       if h >= far_from), default=0) if far else 1)
    below = rng.randbelow
    mu_num, mu_den = mu.numerator, mu.denominator
    jit = rng._compiled()
    if jit is not None and _fits(setup, mu_num, mu_den, cap, shift, jit):
        return _draw_compiled(setup, stream, rng, jit, shift, far_from, cap, mu_num,
                              mu_den)

    while True:
        level = rng.geometric_exp(mu_num, mu_den)
        start, size = where.get(level, (0, 0))
        u = below(cap)
        if u < size:
            k = order[start + u]
            q = a[k]
        elif far and u == size and level >= far_from and stream.has(level - shift):
            k, q = level - shift, far_a  # the level's far step (≥ known), if it exists
        else:
            continue
        if _accepts(rng, e_num * q + m_num * k + base - level * m_num, den):
            return k


def _accepts(rng: RandomSource, num: int, den: int) -> bool:
    """A round's acceptance of its step k at level ℓ: Bernoulli(exp(−(D_k − μℓ))), with
    ``num`` = (D_k − μℓ)·den = e·q_k + m·k + base − ℓ·m exactly."""
    if num < 0:  # cannot happen: the levels are floors of D_k to within 10⁻⁶
        raise AssertionError("a step's level exceeds its exact log-weight")
    return rng._bernoulli_exp_int(num, den)


def _fits(setup: _Setup, mu_num: int, mu_den: int, cap: int, shift: int, jit: Any
          ) -> bool:
    """Whether the compiled rounds (:func:`dprect.core.random_jit.side_rounds`) may run
    this side: every integer they are given below 2^62."""
    lim = jit.LIMIT
    return (setup.den < lim and mu_den < lim and 0 < mu_num < lim
            and abs(setup.e_num) < lim and abs(setup.m_num) < lim and abs(setup.base) < lim
            and cap < lim and abs(shift) < lim and abs(setup.known + shift) < lim
            and (not setup.held or setup.held[-1] < lim))


def _draw_compiled(setup: _Setup, stream: Steps | CandidateStream, rng: RandomSource,
                   jit: Any, shift: int, far_from: int, cap: int, mu_num: int,
                   mu_den: int) -> int:
    """:func:`_draw`'s loop on a :class:`_Setup`, its rounds compiled (:func:`_rounds`)."""
    where = setup.where
    return _rounds(np.array(setup.a, dtype=np.int64), np.array(setup.order, dtype=np.int64),
                   np.array(setup.held, dtype=np.int64),
                   np.array([where[h][0] for h in setup.held], dtype=np.int64),
                   np.array(setup.sizes, dtype=np.int64), setup.known, setup.far,
                   setup.far_a, setup.base, setup.den, setup.e_num, setup.m_num, stream,
                   rng, jit, shift, far_from, cap, mu_num, mu_den)


def _rounds(a: np.ndarray, order: np.ndarray, held: np.ndarray, starts: np.ndarray,
            sizes: np.ndarray, known: int, far: bool, far_a: int, base: int, den: int,
            e_num: int, m_num: int, stream: Steps | CandidateStream, rng: RandomSource,
            jit: Any, shift: int, far_from: int, cap: int, mu_num: int, mu_den: int,
            paused: tuple[int, int] | None = None) -> int:
    """:func:`_draw`'s loop, its rounds compiled (:func:`dprect.core.random_jit.
    side_rounds`, the same draws from the same stream): a round the compiled code cannot
    finish (a far step the stream has not made yet, or an exact (D_k − μℓ)·den it cannot
    prove in int64) is finished here, as :func:`_draw` finishes it, and the rounds go on
    compiled. The arrays are the setup's, each held level's start in ``order`` in
    ``starts``; ``paused``: a round (k, ℓ) to finish first."""
    far_num = e_num * far_a + base - m_num * shift  # (D_k − μℓ)·den of a far step
    if not 0 <= far_num < jit.LIMIT:
        far_num = -1
    has_upto = int(getattr(stream, "count", 0))
    while True:
        if paused is None:
            status, k, level = rng._run(
                jit.side_rounds, held, starts, sizes, order, a, far, far_from,
                shift, cap, mu_num, mu_den, e_num, m_num, base, den, has_upto, far_num)
            if status == jit.DONE:
                return int(k)
            compiled_status(status, jit)  # PAUSE here, or BOUND: raises
            paused = (int(k), int(level))
        k, level = paused
        paused = None
        if k >= known:  # a far step: the round goes on only if it exists
            if not stream.has(k):
                continue
            q = far_a
        else:
            q = int(a[k])
        if _accepts(rng, e_num * q + m_num * k + base - level * m_num, den):
            return k


@lru_cache(maxsize=256)
def _floats(e: int, e_den: int, m: int, m_den: int) -> tuple[float, float]:
    """float(ε), float(μ) keyed by their integers (a Fraction's float costs a division)."""
    return float(Fraction(e, e_den)), float(Fraction(m, m_den))


def _compiled_side(tails: np.ndarray, stream: Steps | CandidateStream, target: int,
                   eps: Fraction, mu: Fraction, rng: RandomSource, jit: Any) -> int | None:
    """A one-sided :func:`draw_step` in one compiled call
    (:func:`dprect.core.random_jit.side_draw`: :func:`_scalar_setup`'s floats, operation
    for operation, for any number of steps, then the rounds), or None — nothing drawn —
    where a float is not finite or an integer does not fit int64 (the Python path then
    draws). A paused round is finished here and the rounds go on (:func:`_rounds`)."""
    args = compiled_side_arguments(eps, mu, jit)
    if args is None:
        return None
    eps_f, mu_f, e_num, m_num, h_num, den, mu_num, mu_den = args
    has_upto = int(getattr(stream, "count", 0))
    target = min(target, jit.LIMIT)
    hint = -1
    while True:
        (status, k, level, known, base, shift, far, a, order, held, starts,
         sizes) = rng._run(jit.side_draw, tails, target, eps_f, mu_f, _SLACK_F,
                           MAX_LEVEL, hint, has_upto, e_num, m_num, h_num, den,
                           mu_num, mu_den)
        if status == jit.ASK:
            hint = int(stream.has(int(known)))
            continue
        if status == jit.PYTHON:
            return None
        return side_drawn(status, k, level, known, base, shift, far, a, order, held,
                          starts, sizes, stream, has_upto, eps, mu, rng, jit)


def side_drawn(status: int, k: int, level: int, known: int, base: int, shift: int,
               far: bool, a: np.ndarray, order: np.ndarray, held: np.ndarray,
               starts: np.ndarray, sizes: np.ndarray, stream: Steps | CandidateStream,
               has_upto: int, eps: Fraction, mu: Fraction, rng: RandomSource, jit: Any
               ) -> int:
    """The step of a side from what :func:`dprect.core.random_jit.side_draw` returned
    with status ``DONE`` or ``PAUSE`` (a round to finish in Python, then the rounds go
    on: :func:`_rounds`), ``has_upto`` the stream's candidate count it was given; BOUND
    raises. Shared by :func:`_compiled_side` and a block of cells' draws
    (:mod:`dprect.core.cell_draws`)."""
    if known > has_upto and not stream.has(known - 1):  # cannot happen (as _draw_step)
        raise AssertionError("more tail counts than the side has candidates")
    if status == jit.DONE:
        return int(k)
    compiled_status(status, jit)  # PAUSE here, or BOUND: raises
    den, e_num, m_num, _ = _integers(eps, mu)
    known, base, shift = int(known), int(base), int(shift)
    return _rounds(a, order, held, starts, sizes, known, bool(far), 0, base, den,
                   e_num, m_num, stream, rng, jit, shift, known + shift, 0, mu.numerator,
                   mu.denominator, paused=(int(k), int(level)))


def compiled_side_arguments(eps: Fraction, mu: Fraction, jit: Any
                            ) -> tuple[float, float, int, int, int, int, int, int] | None:
    """What :func:`dprect.core.random_jit.side_draw` is given for a side at rate ``eps``
    and decay ``mu`` besides its tails: (float ε, float μ, e, m, h, den, μ's numerator,
    μ's denominator), or None where an integer does not fit (the Python path draws)."""
    den, e_num, m_num, h_num = _integers(eps, mu)
    mu_num, mu_den = mu.numerator, mu.denominator
    lim = jit.LIMIT
    if not (den < lim and mu_den < lim and 0 < mu_num < lim and e_num < lim
            and m_num < lim):
        return None
    eps_f, mu_f = _floats(eps.numerator, eps.denominator, mu_num, mu_den)
    return eps_f, mu_f, e_num, m_num, h_num, den, mu_num, mu_den


__all__ = ["DECAY", "MAX_LEVEL", "Steps", "draw_step", "runaway_bound", "step_law"]
