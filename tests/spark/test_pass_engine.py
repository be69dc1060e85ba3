"""The ``pass`` strategy's engine against the numpy engine, without Spark (issue #15).

:class:`~dprect.engines.spark.order_pass.PassEngine` answers windows and cuts from order
lists that passes gather; here a pass is the kernel run locally on the table split into
parts (what Spark's partitions do), so the whole exactness argument is exercised: the
prefix property across parts and merges, cuts applied by id, stale lists after a cut the
list does not cover, short lists, thresholds from a sample (too tight on purpose), tiny
budgets that make every order its own pass. Every answer must equal the numpy engine's
on the same rows, for random window/cut sequences (hypothesis) and for whole fits.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")  # the module imports pyspark's cloudpickle

from tie_tables import ties_table

from dprect.core.algorithms import run_plan
from dprect.core.domains import FloatOrder, Grid, IntegerRange
from dprect.core.planner import plan as make_plan
from dprect.core.randomness import RandomSource
from dprect.core.request import FitRequest
from dprect.core.ties import TieBreaker, occurrence_ranks, tie_bits
from dprect.engines.numpy_engine import NumpyEngine
from dprect.engines.spark import pass_kernel as kernel
from dprect.engines.spark.order_pass import ENTRY_BYTES, PassEngine, prefilter
from dprect.engines.spark.prefetch import PrefixSpec, prefetch_specs
from dprect.engines.spark.sql import literal


def _table(n: int, dims: int, seed: int) -> tuple[np.ndarray, list]:
    """The shared tie-heavy table (:func:`tie_tables.ties_table`), with the last axis
    float-order when dims ≥ 3."""
    X, _, domains = ties_table(n, dims, seed)
    if dims >= 3:
        X[:, -1] += np.random.default_rng(seed + 1).normal(0, 0.25, n).round(1)
        domains[-1] = FloatOrder()
    return X, domains


def _local_run(X: np.ndarray, parts: int, bounds: list[int] | None = None,
               used: list[str] | None = None):
    """A pass without Spark: the kernel per part (ids as Spark numbers rows), then the
    merge — split unevenly so parts hold different row counts (or at ``bounds``). With
    ties, first as :class:`~dprect.engines.spark.order_pass.PassRunner` does: each part
    ranks its own rows, and the pass is run again with the global ranks when the merge
    reports a group of identical rows split between parts (``used`` records which)."""
    n, d = X.shape
    if bounds is None:
        cuts = np.sort(np.random.default_rng(n + parts).integers(0, n + 1, parts - 1))
        bounds = [0, *cuts.tolist(), n]

    def kernel_pass(task: kernel.PassTask, merge: bool, ranks) -> pa.RecordBatch:
        outs = []
        for p in range(len(bounds) - 1):
            lo, hi = bounds[p], bounds[p + 1]
            cols = [pa.array(X[lo:hi, j]) for j in range(d)]
            ids = pa.array((np.int64(p) << 33) + np.arange(hi - lo, dtype=np.int64))
            extra = [] if ranks is None else [pa.array(ranks[lo:hi])]
            batch = pa.RecordBatch.from_arrays(
                [*cols, ids, *extra], names=[*map(kernel.feature_column, range(d)),
                                             kernel.ROW_ID, *([kernel.RANK] if extra else [])])
            step = max(1, (hi - lo) // 3)  # several batches per part
            pieces = [batch.slice(i, step) for i in range(0, max(hi - lo, 1), step)]
            outs.extend(kernel.partition_lists(iter(pieces), task))
        if merge:  # a merge stage over two groups of parts, then the driver's merge
            half = len(outs) // 2 or 1
            outs = [next(kernel.merge_lists(iter(g), task)) for g in (outs[:half], outs[half:])
                    if g]
        return next(kernel.merge_lists(iter(outs), task))

    def run(task: kernel.PassTask, merge: bool) -> pa.RecordBatch:
        if task.ties is None:
            return kernel_pass(task, merge, None)
        if used is not None and "window" not in used:
            # partition ranks: the key rows must meet in one merge (as Spark's buckets do)
            got = kernel_pass(replace(task, key_buckets=3), False, None)
            if not (got.column(kernel.ORDER).to_numpy() == kernel.SPLIT).any():
                used.append("partition")
                return got
            used.append("window")
        # the window's ranks: each row's occurrence rank among all rows (as run_pass)
        ranks = occurrence_ranks([dom.encode(X[:, j]) for j, dom in enumerate(task.domains)])
        return kernel_pass(task, merge, ranks)

    return run


def _sample(X: np.ndarray, domains: list, ties: TieBreaker | None, rows: int
            ) -> dict[int, np.ndarray]:
    cols = [d.encode(X[:rows, j]) for j, d in enumerate(domains)]
    if ties is not None and ties.active:
        cols = ties.refine(cols)
    return dict(enumerate(cols))


def _engines(X, domains, ties, schedule, budget, parts, sample_rows, hint_scale,
             monkeypatch, used=None, bounds=None):
    numpy_engine = NumpyEngine([d.encode(X[:, j]) for j, d in enumerate(domains)])
    if ties is not None:
        numpy_engine.set_ties(ties)
    sample = None
    if sample_rows:
        monkeypatch.setattr("dprect.engines.spark.order_pass.sample_rows",
                            lambda dims: sample_rows)
        sample = _sample(X, domains, ties, sample_rows)
    engine = PassEngine(_local_run(X, parts, bounds, used), domains, ties, schedule, budget,
                        partitions=parts, sample=sample,
                        size_hint=max(1, int(len(X) * hint_scale)))
    engine.prepare()
    return numpy_engine, engine


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(0, 600), dims=st.integers(1, 5),
       parts=st.integers(1, 5), budget_entries=st.sampled_from([1, 40, 400, 10**6]),
       sample_rows=st.sampled_from([0, 50]), hint_scale=st.sampled_from([0.2, 1.0, 5.0, 50.0]),
       ops=st.lists(st.tuples(st.integers(0, 4), st.booleans(), st.integers(1, 120),
                              st.integers(1, 60), st.booleans(), st.floats(0, 1)),
                    min_size=1, max_size=25), partition_ranks=st.booleans())
def test_windows_and_cuts_equal_numpy(monkeypatch, seed, n, dims, parts, budget_entries,
                                      sample_rows, hint_scale, ops, partition_ranks):
    X, domains = _table(n + 20, dims, seed)
    X = X[:n]
    ties = TieBreaker.for_domains(domains, [3 if isinstance(d, Grid) else 0 for d in domains])
    schedule = [PrefixSpec(j, s, 1 + (seed + 7 * j) % 40, (j,)) for j in range(dims)
                for s in ("hi", "lo")]
    want, got = _engines(X, domains, ties, schedule, budget_entries * ENTRY_BYTES, parts,
                         sample_rows if n >= sample_rows else 0, hint_scale, monkeypatch,
                         [] if partition_ranks else None)
    for axis, hi, stop, size, do_cut, q in ops:
        axis %= dims
        side = "hi" if hi else "lo"
        a = want.window(axis, side, stop, size)
        b = got.window(axis, side, stop, size)
        assert b.dtype == a.dtype
        assert np.array_equal(np.sort(a), np.sort(b))
        if do_cut and len(a):  # a threshold among the window's values, or just past it
            t = np.sort(a)[int(q * (len(a) - 1))]
            want.cut(axis, side, t)
            got.cut(axis, side, t)


@pytest.mark.parametrize("dims,n,method", [(2, 4000, "randmargins"), (16, 3000, "randmargins"),
                                           (16, 3000, "composition"), (64, 2000, "randmargins")])
@pytest.mark.parametrize("budget_entries", [64, 10**7])
def test_whole_fit_equals_numpy(monkeypatch, dims, n, method, budget_entries):
    X, domains = _table(n, dims, seed=dims)
    req = FitRequest(epsilon=8.0, delta=1e-6, method=method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = make_plan(req, domains=domains)
        ties = plan.chosen.tie_breaker(domains)
        ties = ties if ties is not None and ties.active else None
        schedule = prefetch_specs(plan.chosen, cell_budget=2**62)
        want_engine, engine = _engines(X, domains, ties, schedule,
                                       budget_entries * ENTRY_BYTES, 4, 500, 1.0,
                                       monkeypatch)
        names = [f"x{j}" for j in range(dims)]
        want = run_plan(want_engine, domains, names, plan, RandomSource(seed=3))
        got = run_plan(engine, domains, names, plan, RandomSource(seed=3))
    assert list(got.lower_index) == list(want.lower_index)
    assert list(got.upper_index) == list(want.upper_index)
    if budget_entries > 10**6:  # the budget holds every list: one pass serves every round
        assert engine.passes <= 2
    else:
        assert engine.passes > 2  # a tiny budget really splits the schedule


@pytest.mark.parametrize("grouped", [True, False])
def test_partition_ranks_are_checked(monkeypatch, grouped):
    """Each part ranks its own rows. With every group of identical rows inside one part
    (rows sorted, parts cut between groups) no pass needs the global ranks; with copies in
    several parts the merge reports the split and the pass runs again ranked globally.
    The rectangle is numpy's either way."""
    X, domains = _table(3000, 4, seed=11)
    X[np.random.default_rng(2).random(len(X)) < 0.2] = X[7]  # 20% copies of one row
    codes = np.column_stack([d.encode(X[:, j]) for j, d in enumerate(domains)])
    if grouped:
        X = X[np.lexsort(codes.T[::-1])]
        codes = np.column_stack([d.encode(X[:, j]) for j, d in enumerate(domains)])
    starts = np.flatnonzero(np.r_[True, (codes[1:] != codes[:-1]).any(axis=1)])
    cut = [int(starts[np.searchsorted(starts, q)]) for q in (700, 1500, 2300)]
    bounds = [0, *cut, len(X)] if grouped else [0, 700, 1500, 2300, len(X)]
    req = FitRequest(epsilon=8.0, delta=1e-6, method="randmargins")
    used: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = make_plan(req, domains=domains)
        ties = plan.chosen.tie_breaker(domains)
        assert ties is not None and ties.active
        schedule = prefetch_specs(plan.chosen, cell_budget=2**62)
        want_engine, engine = _engines(X, domains, ties, schedule, 64 * ENTRY_BYTES, 4, 0,
                                       1.0, monkeypatch, used, bounds)
        names = [f"x{j}" for j in range(4)]
        want = run_plan(want_engine, domains, names, plan, RandomSource(seed=5))
        got = run_plan(engine, domains, names, plan, RandomSource(seed=5))
    assert list(got.lower_index) == list(want.lower_index)
    assert list(got.upper_index) == list(want.upper_index)
    assert engine.passes > 2
    if grouped:
        assert used == ["partition"] * engine.passes
    else:
        assert used == ["window"]  # the first pass found the split; later ones skip the check


def test_bad_rows_are_reported_and_never_listed():
    X, domains = _table(500, 3, seed=1)
    bad = np.zeros(len(X), dtype=bool)
    bad[::7] = True
    X_bad = X.copy()
    X_bad[bad, 1] = np.nan
    task = kernel.PassTask(tuple(domains), None, (kernel.PassOrder(1, True, 10**6),))
    batch = pa.RecordBatch.from_arrays(
        [*(pa.array(X_bad[:, j]) for j in range(3)),
         pa.array(np.arange(len(X), dtype=np.int64)), pa.array(bad)],
        names=[*map(kernel.feature_column, range(3)), kernel.ROW_ID, kernel.BAD])
    out = next(kernel.partition_lists(iter([batch]), task))
    tags = out.column(kernel.ORDER).to_numpy()
    assert out.column(kernel.BAD).to_numpy(zero_copy_only=False)[tags == kernel.SUMMARY].all()
    listed = out.column(kernel.ROW_ID).to_numpy()[tags == 0]
    assert set(listed) == set(np.flatnonzero(~bad))


def test_tie_bits_come_from_the_core():
    """The kernel refines with the TieBreaker it is given: same values as the numpy
    engine's set_ties, including r_j above 2^53 (int64 keys never pass through float64)."""
    gen = np.random.default_rng(5)
    domains = [Grid(0.0, 1.0, 2**40), IntegerRange(0, 3)]
    bits = tie_bits(domains, 100)
    ties = TieBreaker.for_domains(domains, bits)
    X = np.column_stack([gen.random(300), gen.integers(0, 4, 300).astype(float)])
    task = kernel.PassTask(tuple(domains), ties, (kernel.PassOrder(0, True, 300),))
    batch = pa.RecordBatch.from_arrays([pa.array(X[:, 0]), pa.array(X[:, 1])],
                                       names=[kernel.feature_column(0),
                                              kernel.feature_column(1)])
    got = kernel.sort_values(batch, task, None)
    want = ties.refine([d.encode(X[:, j]) for j, d in enumerate(domains)])
    assert np.array_equal(got[0], want[0]) and got[0].dtype == np.int64
    assert int(got[0].max()) > 2**53


def test_a_list_cut_short_by_a_threshold_is_never_complete(monkeypatch):
    """A misleading hint puts the threshold at the sample's 16th best row, so the pass
    lists 16 rows where K = 100: the list is a prefix, not the whole set, and a window
    past it gathers again (without a threshold) instead of returning 16 values."""
    X = np.arange(1000, dtype=np.float64)[:, None]
    domains = [IntegerRange(0, 999)]
    monkeypatch.setattr("dprect.engines.spark.order_pass.sample_rows", lambda dims: 1000)
    engine = PassEngine(_local_run(X, 3), domains, None, [PrefixSpec(0, "hi", 100, (0,))],
                        10**9, partitions=3, sample={0: domains[0].encode(X[:, 0])},
                        size_hint=10**6)
    engine.prepare()
    assert engine.passes == 1
    got = engine.window(0, "hi", 50, 50)
    assert sorted(got.tolist()) == list(range(950, 1000))
    assert engine.passes == 2


def test_prefilter_at_the_ends_of_a_domain():
    """The prefilter's SQL where a threshold reaches past a domain's ends: an order that
    keeps every value means no filter at all; an order no value can reach adds no term
    (none left: no row needs Python); otherwise the raw edge, exactly."""
    domains = (Grid(0.0, 20.0, 64), IntegerRange(0, 16))
    hi_all = kernel.PassOrder(0, True, 5, 0)  # κ = −v ≤ 0: v ≥ 0, every value
    lo_none = kernel.PassOrder(0, False, 5, -1)  # v ≤ −1: no value
    hi_top = kernel.PassOrder(1, True, 5, -16)  # v ≥ 16: x ≥ 16.0
    assert prefilter(kernel.PassTask(domains, None, (hi_all, hi_top))) is None
    assert prefilter(kernel.PassTask(domains, None, (lo_none,))) == "false"
    x1 = f"CAST({kernel.feature_column(1)} AS DOUBLE)"
    assert prefilter(kernel.PassTask(domains, None, (lo_none, hi_top))) == \
        f"({x1} - {literal(16.0)}) >= 0"
    assert prefilter(kernel.PassTask(domains, None, (hi_top, kernel.PassOrder(1, False, 5, 3)))) \
        == f"greatest(({x1} - {literal(16.0)}), ({literal(3.9999999999999996)} - {x1})) >= 0"


def test_a_prefiltered_pass_input_keeps_every_flagged_row(make_frame):
    """The prefilter narrows the positives only: a row the problem predicate flags reaches
    the kernel whatever the filter says (so the ``error`` policy still sees it)."""
    from dprect.engines.spark.order_pass import PassSource

    X = np.array([[1.0, 2.0], [np.nan, 0.0], [5.0, 6.0], [7.0, np.inf]])
    df = make_frame(X, ["a", "b"], y=[1, 0, 1, 1])
    problem = "NOT (abs(a) < CAST('inf' AS DOUBLE) AND abs(b) < CAST('inf' AS DOUBLE))"
    source = PassSource(df, ("a", "b"), "y = 1", problem)
    everything = source.rows(None).collect()
    assert len(everything) == 4 and sum(r[kernel.BAD] for r in everything) == 2
    flagged = source.rows("false").collect()
    assert len(flagged) == 2 and all(r[kernel.BAD] for r in flagged)
    kept = source.rows("a >= 5").collect()  # the flagged rows and the positive (5, 6)
    assert sorted(r[kernel.feature_column(0)] for r in kept if not r[kernel.BAD]) == [5.0]
    assert sum(r[kernel.BAD] for r in kept) == 2
