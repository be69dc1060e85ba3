"""Rows identical on every axis: the occurrence rank (docs/algorithm.md §8, "Duplicates";
docs/privacy.md, "Ties").

* the ranks are exact (each group of c identical rows gets 0, …, c − 1), also when the
  grouping hash collides;
* the refinement is a function of the multiset: shuffled rows give the same refined
  multiset and the same rectangle; adding, removing or replacing one row changes exactly
  one refined row (the stability the proof needs);
* a group of G identical rows is split: a cut removes at most about G/2^b of them, and
  ignoring the rank (every copy rank 0) does not split them;
* the 5%-all-zero-rows table: RandMargins within issue #24's bound of composition, and
  without the rank far outside it.
"""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest

import dprect
import dprect.core.ties as ties_module
from dprect.core.algorithms import run_plan
from dprect.core.domains import FloatOrder, Grid, IntegerRange
from dprect.core.randomness import RandomSource
from dprect.core.ties import (
    HASH_PRIME,
    TieBreaker,
    occurrence_ranks,
    rank_offset,
)
from dprect.engines.numpy_engine import NumpyEngine

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")


def _groups_ok(cols, ranks) -> bool:
    """Every group of identical rows holds the ranks 0, …, c − 1."""
    seen: dict[tuple, list[int]] = {}
    for i, row in enumerate(zip(*(c.tolist() for c in cols), strict=True)):
        seen.setdefault(row, []).append(int(ranks[i]))
    return all(sorted(v) == list(range(len(v))) for v in seen.values())


def test_occurrence_ranks_are_exact(monkeypatch):
    rng = np.random.default_rng(0)
    cols = [rng.integers(0, 3, 3000), rng.integers(0, 2, 3000),
            np.where(rng.random(3000) < 0.5, 0.0, -0.0)]  # −0.0 is +0.0
    ranks = occurrence_ranks(cols)
    assert _groups_ok([cols[0], cols[1], cols[2] + 0.0], ranks)
    assert ranks.max() > 100 and (ranks == 0).sum() == 6  # 3·2 groups (−0.0 = +0.0)
    # every row hashed alike (all collide): the exact split gives the same ranks
    monkeypatch.setattr(ties_module, "row_keys",
                        lambda cols: np.zeros(len(cols[0]), dtype=np.int64))
    assert np.array_equal(occurrence_ranks(cols), ranks)
    distinct = [np.arange(50), np.arange(50) * 2.5]
    assert not occurrence_ranks(distinct).any()  # no copies: every rank 0, h unchanged


def test_rank_offset_values():
    i = np.array([0, 1, 2, 10**9, 2**40])
    w = (i % HASH_PRIME) * 40_692 % HASH_PRIME
    assert np.array_equal(rank_offset(i), w * (w + 3_141_592) % HASH_PRIME)
    assert rank_offset(i)[0] == 0 and (rank_offset(i)[1:] > 0).all()


DOMAINS = [Grid(0.0, 1.0, 64), IntegerRange(0, 16), FloatOrder()]
TIES = TieBreaker.for_domains(DOMAINS, [10, 8, 12])


def _dup_table(seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    n = 4000
    x = rng.random((n, 3))
    x[:, 1] = rng.integers(0, 17, n)
    x[:, 2] = np.round(x[:, 2], 1)
    x[rng.random(n) < 0.3] = x[0]  # copies of one row
    x[rng.random(n) < 0.2] = 0.0  # all-zero rows
    return [d.encode(x[:, j]) for j, d in enumerate(DOMAINS)]


def _multiset(cols) -> Counter:
    return Counter(zip(*(np.asarray(c).tolist() for c in cols), strict=True))


def test_refinement_is_a_function_of_the_multiset():
    cols = _dup_table()
    want = _multiset(TIES.refine(cols))
    perm = np.random.default_rng(2).permutation(len(cols[0]))
    assert _multiset(TIES.refine([c[perm] for c in cols])) == want


def test_one_row_changes_one_refined_row():
    """Add, remove or replace one row: the refined multisets differ by exactly that one
    refined row (added, removed, or one of each) — the 1-stability of privacy.md."""
    cols = _dup_table()
    base = _multiset(TIES.refine(cols))
    zero = [c[:1] * 0 for c in cols]
    copy = [c[1:2] for c in cols]  # a row of the all-zero or copied groups, or another
    for extra in (zero, copy):
        added = _multiset(TIES.refine([np.concatenate([c, e]) for c, e in
                                       zip(cols, extra, strict=True)]))
        assert sum((added - base).values()) == 1 and not base - added
    for at in (0, int(np.flatnonzero(cols[1] == 0)[0]), 7):
        removed = _multiset(TIES.refine([np.delete(c, at) for c in cols]))
        assert sum((base - removed).values()) == 1 and not removed - base
        replaced = [c.copy() for c in cols]
        for c, e in zip(replaced, zero, strict=True):
            c[at] = e[0]
        other = _multiset(TIES.refine(replaced))
        assert sum((base - other).values()) <= 1 and sum((other - base).values()) <= 1


@pytest.mark.parametrize("bits", [6, 10])
def test_a_group_of_identical_rows_is_split(monkeypatch, bits):
    """G identical rows among others: on every refined axis the copies spread over the
    2^b tie-breaker values, so a cut at any threshold removes at most about G/2^b of them
    beyond the rows it must remove; without the rank they share one value (a cut takes
    all G)."""
    g = 4096
    rng = np.random.default_rng(3)
    other = [rng.integers(0, 64, 1000), rng.integers(0, 17, 1000), rng.normal(size=1000)]
    cols = [np.concatenate([np.full(g, c[0]), c]) for c in other]
    ties = TieBreaker.for_domains(DOMAINS, [bits] * 3)
    refined = ties.refine(cols)
    for r in refined:
        counts = np.unique(r[:g], return_counts=True)[1]
        assert len(counts) > 0.9 * 2**bits  # nearly every part is used
        assert counts.max() <= 3 * g / 2**bits + 8  # a cut overshoots by one part at most
    monkeypatch.setattr(ties_module, "occurrence_ranks",
                        lambda c: np.zeros(len(c[0]), dtype=np.int64))
    for r in ties.refine(cols):
        assert len(np.unique(r[:g])) == 1  # the rank ignored: one value for all copies


def _zero_rows(n: int, d: int, seed: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    X[rng.random(n) < 0.05] = 0.0  # 5% of the rows identical, at every axis's minimum
    return X


def _miss(plan, X, domains, seed: int) -> float:
    engine = NumpyEngine.from_features(X, domains)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = run_plan(engine, domains, [f"x{j}" for j in range(X.shape[1])], plan,
                     RandomSource(seed=seed))
    return 1.0 - float(r.contains(X).mean())


def test_all_zero_rows_no_longer_lose_their_group(monkeypatch):
    X = _zero_rows(40_000, 8)
    domains = [Grid(0.0, 1.0, 2**16)] * 8
    rm = dprect.plan(domains=domains, epsilon=4.0, delta=1e-6, method="randmargins")
    comp = dprect.plan(domains=domains, epsilon=4.0, delta=1e-6, method="composition")
    seeds = range(3)
    miss_rm = np.mean([_miss(rm, X, domains, s) for s in seeds])
    miss_comp = np.mean([_miss(comp, X, domains, s) for s in seeds])
    assert miss_rm <= 1.3 * miss_comp + 0.01, (miss_rm, miss_comp)
    monkeypatch.setattr(ties_module, "occurrence_ranks",
                        lambda c: np.zeros(len(c[0]), dtype=np.int64))
    miss_old = np.mean([_miss(rm, X, domains, s) for s in seeds])
    assert miss_old >= 1.3 * miss_comp + 0.03, (miss_old, miss_comp)  # the rank matters


def test_shuffled_rows_give_the_identical_rectangle():
    X = _zero_rows(20_000, 4, seed=5)
    X[:3000] = X[7]  # and a large group of copies of an interior row
    domains = [Grid(0.0, 1.0, 2**12)] * 4
    plan = dprect.plan(domains=domains, epsilon=4.0, delta=1e-6, method="randmargins")
    assert plan.chosen.tie_breaker(domains).active
    perm = np.random.default_rng(6).permutation(len(X))
    for seed in (0, 1):
        results = []
        for rows in (X, X[perm]):
            engine = NumpyEngine.from_features(rows, domains)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results.append(run_plan(engine, domains, ["a", "b", "c", "d"], plan,
                                        RandomSource(seed=seed)))
        assert results[0].lower_index == results[1].lower_index
        assert results[0].upper_index == results[1].upper_index
