"""Rows identical on every axis on Spark: the occurrence rank (issue #24, point 1).

Every Spark strategy refines with each row's rank among the positives identical to it in
every axis's sort value — ``rounds`` and ``prefetch`` by a window in SQL, ``pass`` in each
partition, checked by row keys, or by the same window when copies span partitions,
``collect`` on the driver with the core's numpy code —
so a seed gives the identical rectangle on numpy and on every strategy (``rounds`` with
exact copies: tests/spark/test_ties_spark.py), on a table where
a third of the rows are copies (some identical only in sort value: raw values that differ
inside one grid cell), with the prefetch pass pruned and the pass prefiltered, so that
their filters must keep every group of copies whole. And the window works at d = 1,024.
"""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest

import dprect
from dprect import FloatOrder, Grid, IntegerRange
from dprect.core.ties import TieBreaker
from dprect.engines.spark.fit import prepare_fit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _table(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    X = np.column_stack([gen.random(n), gen.integers(0, 17, n).astype(np.float64),
                         np.round(gen.normal(size=n), 2)])
    copies = gen.random(n) < 0.3  # copies of row 0, its first value jittered in its cell
    X[copies] = X[0]
    X[copies, 0] = (np.floor(X[0, 0] * 16) + gen.uniform(0.01, 0.99, copies.sum())) / 16
    X[gen.random(n) < 0.1] = 0.0  # all-zero rows
    return X, (gen.random(n) < 0.9).astype(int)


@pytest.mark.parametrize("partitions,key_check", [(3, "spark"), (1, "driver")])
def test_every_strategy_agrees_on_duplicate_rows(make_frame, forced_prefilter, monkeypatch,
                                                 partitions, key_check):
    """(The pass's row-key check in Spark's merge stage, or with the lists on the driver.)"""
    from dprect.engines.spark import order_pass, prefetch

    monkeypatch.setattr(order_pass, "KEY_BYTES", 10**12 if key_check == "spark" else 1)
    monkeypatch.setattr(prefetch, "SAMPLE_ROWS", 300)  # the prefetch pass prunes too
    monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(prefetch, "SAMPLE_SAFETY", 1)
    X, y = _table(2000, seed=4)
    domains = [Grid(0.0, 1.0, 16), IntegerRange(0, 16), FloatOrder()]
    names = ["a", "b", "c"]
    df = make_frame(X, names, y=y, partitions=partitions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = dprect.plan(domains=domains, epsilon=6.0, delta=1e-6, method="randmargins")
        assert all(plan.chosen.tie_breaker(domains).bits)
        for seed in (3,):
            want = dprect.fit(X, y, grid=domains, epsilon=6.0, delta=1e-6,
                              method="randmargins", seed=seed, features=names)
            # rounds ranks by the same window as prefetch; with exact copies it is
            # compared in tests/spark/test_ties_spark.py (test_fits_agree_on_duplicate_rows)
            for strategy in ("collect", "pass", "prefetch"):
                with prepare_fit(df, features=names, label="y", grid=domains,
                                 epsilon=6.0, delta=1e-6, method="randmargins",
                                 strategy=strategy) as prepared:
                    got = prepared.run(seed=seed)
                    stats = dict(prepared.engine.stats)
                assert got.lower_index == want.lower_index, strategy
                assert got.upper_index == want.upper_index, strategy
                if strategy == "prefetch":
                    assert stats["pruned"] == 1
                if strategy == "pass":  # copies in several partitions need the window
                    assert stats["window_ranks"] == int(partitions > 1)
    assert any(f is not None for f in forced_prefilter)  # the pass did filter


def test_ranks_and_refinement_at_1024_axes(spark):
    """The window partitions by 1,024 sort values: the refined rows (the multiset) are
    numpy's, and the ranks of a group are 0, …, c − 1."""
    from dprect.engines.spark.prefetch import RANK_COLUMN, refine, with_ranks

    d = 1024
    gen = np.random.default_rng(9)
    distinct = gen.integers(0, 4, size=(5, d))
    X = distinct[gen.integers(0, 5, 60)]
    domains = [IntegerRange(0, 3)] * d
    ties = TieBreaker.for_domains(domains, [4] * d)
    names = [f"x{j}" for j in range(d)]
    df = spark.createDataFrame([tuple(int(v) for v in row) for row in X], names)
    sorts = [f"_s{j}" for j in range(d)]
    encoded = df.selectExpr(*[f"{dom.sort_sql(n)} AS {s}"
                              for dom, n, s in zip(domains, names, sorts, strict=True)])
    out = {j: f"r{j}" for j in (0, 1, 517, d - 1)}
    ranked = with_ranks(encoded, sorts)
    got = refine(ranked, ties, sorts, out, [RANK_COLUMN, sorts[0], sorts[1]],
                 rank=RANK_COLUMN).collect()
    groups: dict[tuple, list[int]] = {}
    for row in got:
        groups.setdefault((row[sorts[0]], row[sorts[1]], row["r517"] >> 4),
                          []).append(row[RANK_COLUMN])
    assert all(sorted(v) == list(range(len(v))) for v in groups.values())
    assert max(len(v) for v in groups.values()) > 5
    want = ties.refine([X[:, j] for j in range(d)])
    assert Counter(tuple(int(r[f"r{j}"]) for j in out) for r in got) == \
        Counter(zip(*(want[j].tolist() for j in out), strict=True))
