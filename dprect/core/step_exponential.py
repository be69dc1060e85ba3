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
(:func:`runaway_bound`; 1.8·10⁻¹⁷ for 1000× at μ = 1/2). AboveThreshold, the previous
search, split ε between a threshold noise and step noises and ran away through the
threshold's tail (about 10⁻⁵ a side, docs/results.md §5.1). The price of the prior: a
stretch of G steps with no rows costs μ·G, so rows beyond a gap of G steps are covered
only when ε·(rows − t) outweighs it.

**Exact draw** (:func:`draw_step`; no floating-point number decides a draw). With
γ_k = ε·max(q_k − t, 0) + μ·k exactly rational, k* a step of least γ (found in floating
point) and D_k = γ_k − γ_{k*} + μ > 0, each step gets a level b_k = max(0, ⌊D̃_k/μ⌋ − 1)
from the floating-point D̃_k (within 10⁻⁶ of D_k), so 0 ≤ D_k − μ·b_k ≤ 2μ exactly. Then
repeat: draw ℓ with P(ℓ) = (1 − e^{−μ})·e^{−μℓ}
(:meth:`~dprect.core.randomness.RandomSource.geometric_exp`), draw u uniform in
{0, …, C − 1} (C ≥ every level's size) and go on only if u < |S_ℓ| (S_ℓ the steps of
level ℓ, in step order), take k = the u-th of S_ℓ, and accept it with probability
exp(−(D_k − μℓ)) (the integer form of
:meth:`~dprect.core.randomness.RandomSource.bernoulli_exp`, exact on the rational). Step k
is returned in one round with probability (1 − e^{−μ})·e^{−μ·b_k}·(1/C)·e^{−(D_k − μ·b_k)}
∝ e^{−D_k} ∝ w_k: exactly P(k). Steps are made up to ``WINDOW_LEVELS`` nats past the
data; the steps beyond (every q = 0, γ_k = μk: one or two to a level) are made only when a
round's level reaches theirs (probability below e^{−60}). The draws depend on the tail
counts up to the last nonzero one and on the side's candidates, not on how many of them
the stream has made: every engine draws the same steps for a seed.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dprect.core.errors import ParameterError
from dprect.core.randomness import RandomSource
from dprect.core.tail_bounds import CandidateStream

#: μ, the prior's decay per step: e^{−μ} = 0.61 a step, 1/(1 − e^{−μ}) ≈ 2.5 steps of
#: spread past the target step; a bound 1000× the data's reach past it (79 steps at 8
#: an octave) has probability ≤ 1.8·10⁻¹⁷ (docs/privacy.md §11)
DECAY = Fraction(1, 2)
#: the steps past the data made up front: those within this many nats (e^{−60}) of the
#: data's last; the rest only if a draw's level reaches them
WINDOW_LEVELS = 60


def runaway_bound(steps: int, decay: Fraction = DECAY) -> float:
    """P(the drawn step lies ``steps`` or more past the first step whose tail is ≤ t)
    ≤ e^{−μ·steps}/(1 − e^{−μ}), for any data (module docstring)."""
    mu = float(decay)
    return math.exp(-mu * steps) / -math.expm1(-mu)


def step_law(tails: np.ndarray, target: int, epsilon: float, count: int,
             decay: Fraction = DECAY) -> np.ndarray:
    """P(k) for k < ``count`` (tails beyond ``len(tails)`` are 0), in floating point: for
    tests and printouts, not for draws."""
    q = np.zeros(count)
    q[:min(len(tails), count)] = np.asarray(tails, dtype=np.float64)[:count]
    logw = -epsilon * np.maximum(q - target, 0.0) - float(decay) * np.arange(count)
    w = np.exp(logw - logw.max())
    return w / w.sum()


def draw_step(tails: np.ndarray, stream: CandidateStream, target: int,
              epsilon: Fraction, rng: RandomSource, decay: Fraction = DECAY) -> int:
    """The side's step (module docstring), with ``tails[k]`` the tail count at candidate
    k for k < len(tails) and 0 beyond; ``stream`` gives the candidates (its count bounds
    the steps). Exact; the same draws for a seed on every engine, whatever the stream
    has made already and however many trailing zeros ``tails`` holds."""
    eps, mu = Fraction(epsilon), Fraction(decay)
    if eps <= 0 or mu <= 0:
        raise ParameterError("the side's epsilon and decay must be > 0")
    t = int(target)
    tails = np.asarray(tails, dtype=np.int64)
    nonzero = np.flatnonzero(tails)
    known = int(nonzero[-1]) + 1 if len(nonzero) else 0  # trailing zeros change nothing
    # the steps made up front: the data's, then WINDOW_LEVELS levels' worth past them
    end = known + math.ceil(WINDOW_LEVELS / mu) + 2
    if not stream.has(end - 1):
        end = stream.count
    near = min(known, end)
    a = np.zeros(end, dtype=np.int64)
    a[:near] = np.maximum(np.asarray(tails[:near], dtype=np.int64) - t, 0)
    eps_f, mu_f = float(eps), float(mu)
    gamma_f = eps_f * a.astype(np.float64) + mu_f * np.arange(end, dtype=np.float64)
    k_min = int(np.argmin(gamma_f))
    a_min = int(a[k_min])
    # D̃_k from the exact integer differences (small terms, no cancellation of large ones)
    d_f = (eps_f * (a - a_min).astype(np.float64)
           + mu_f * (np.arange(end, dtype=np.float64) - k_min) + mu_f)
    # levels of width μ: b_k = max(0, ⌊D̃_k/μ⌋ − 1), D̃_k = γ̃_k − γ̃_{k*} + μ
    levels = np.maximum(np.floor(d_f / mu_f) - 1.0, 0.0
                        ).astype(np.int64)
    order = np.argsort(levels, kind="stable").tolist()
    sizes = np.bincount(levels)
    starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    top = len(sizes)
    # steps past the window (q = 0, γ = μk) exist: ⌈1/μ⌉ + 1 at most to a level, from the
    # level of step ``end`` on; C bounds every level's size, near and far together
    more = stream.has(end)
    far = _Far(stream, end, eps_f * float(-a_min) - mu_f * k_min + mu_f, mu_f)
    far_from = far.level(end) if more else top
    per_far = 2  # a level is μ wide and past the window the steps are μ apart
    cap = max(int(sizes.max()), per_far + int(sizes[far_from:].max(initial=0)) if more
              else 0)
    # D_k − μℓ = (num_k − ℓ·m)/den exactly, with ε = e/den and μ = m/den
    den = math.lcm(eps.denominator, mu.denominator)
    e_num, m_num = eps.numerator * (den // eps.denominator), mu.numerator * (
        den // mu.denominator)
    base = m_num - (e_num * int(a[k_min]) + m_num * k_min)  # (μ − γ_{k*})·den
    below = rng.randbelow

    while True:
        level = rng.geometric_exp(mu.numerator, mu.denominator)
        size = starts[level + 1] - starts[level] if level < top else 0
        u = below(cap)
        if u < size:
            k = order[starts[level] + u]
        elif level >= far_from:
            members = far.members(level)
            if u >= size + len(members):
                continue
            k = members[u - size]
        else:
            continue
        q = int(a[k]) if k < end else 0
        num = e_num * q + m_num * k + base - level * m_num
        if num < 0:  # cannot happen: the levels are floors of D_k to within 10⁻⁶
            raise AssertionError("a step's level exceeds its exact log-weight")
        if rng._bernoulli_exp_int(num, den):
            return k


class _Far:
    """The steps past the window: q = 0, so D_k = μk + offset with offset =
    −ε·a_{k*} − μk* + μ; each gets the level ⌊D̃_k/μ⌋ − 1 from this one float formula
    (within 10⁻⁶ of the exact value, as the window's): one or two steps to a level."""

    def __init__(self, stream: CandidateStream, end: int, offset: float, mu_f: float
                 ) -> None:
        self.stream, self.end, self.offset, self.mu_f = stream, end, offset, mu_f

    def level(self, k: int) -> int:
        return max(math.floor((self.offset + self.mu_f * k) / self.mu_f) - 1, 0)

    def members(self, level: int) -> list[int]:
        """The steps ≥ end at ``level``, in step order (made as needed)."""
        out = []
        centre = level - self.offset / self.mu_f
        k = max(self.end, math.floor(centre) - 2)
        while k <= centre + 4 and self.stream.has(k):
            if self.level(k) == level:
                out.append(k)
            k += 1
        return out


__all__ = ["DECAY", "WINDOW_LEVELS", "draw_step", "runaway_bound", "step_law"]
