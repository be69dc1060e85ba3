"""``auto``'s private count on Spark (issue #24): the count of the rows learned from is the
numpy engine's (positives only, rows with an invalid feature dropped), drawn first, so for
a seed every strategy releases the same count and the same rectangle as :func:`dprect.fit`
— when the count confirms the plan's N = ∞ choice and when it does not. The engine is
readied only after the count, for the method chosen: one strategy first job, never one
for the method not chosen."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

import dprect
from dprect.core.auto_count import PrivateCount
from dprect.core.errors import InputDataError
from dprect.engines.spark.fit import fit_dataframe, prepare_fit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

D = 128  # float-order domain: auto picks RandMargins at N = ∞, so it counts


def _table(n: int = 600, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    X = gen.normal(size=(n, D))
    X[gen.integers(0, n, size=7), gen.integers(0, D, size=7)] = np.nan  # dropped rows
    y = (gen.uniform(size=n) < 0.7).astype(int)
    return X, y


def _frame(make_frame, seed: int):
    """The test table (:func:`_table`) as a Spark frame of 3 partitions."""
    X, y = _table(seed=seed)
    names = [f"x{j}" for j in range(D)]
    return X, y, names, make_frame(X, names, y=y, partitions=3)


def _no_count_job(monkeypatch) -> None:
    """Make any count job of its own (``TableChecks.count_learned``) fail the test."""
    from dprect.engines.spark.checks import TableChecks

    def no_job(self):
        raise AssertionError("a count job")

    monkeypatch.setattr(TableChecks, "count_learned", no_job)


def _both(make_frame, X, y, seed, strategies=("collect", "pass")):
    names = [f"x{j}" for j in range(D)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=seed, features=names)
        df = make_frame(X, names, y=y, partitions=3)
        got = [fit_dataframe(df, features=names, label="y", epsilon=1.0, delta=1e-6,
                             seed=seed, strategy=s) for s in strategies]
    return want, got


def _same(a, b) -> None:
    assert a.parameters["positives_noisy"] == b.parameters["positives_noisy"]
    assert a.method == b.method
    assert (a.lower_index, a.upper_index) == (b.lower_index, b.upper_index)


@pytest.mark.parametrize(("seed", "strategies"), [(1, ("collect", "pass")),
                                                  (2, ("collect",))])
def test_the_count_and_the_rectangle_match_numpy(make_frame, seed, strategies):
    """At the small count (RandMargins at N = ∞) composition would be nearly empty, so the
    quantile box runs (issue #44): every engine answers its histograms after the count."""
    X, y = _table()
    want, got = _both(make_frame, X, y, seed, strategies)
    assert want.method == "quantiles"
    learned = int(((y == 1) & np.isfinite(X).all(axis=1)).sum())
    assert abs(want.parameters["positives_noisy"] - learned) < 20_000  # scale 1000
    for g in got:
        _same(g, want)


def _count_far_above(monkeypatch) -> None:
    """Every drawn count pushed 10^12 above its draw (the plan's N = ∞ choice), with the
    quantile box's default aim off: at such a count the aimed box would run (issue #44),
    and these tests are about the engines readying RandMargins after the count."""
    from dprect.core import quantile_box

    monkeypatch.setattr(quantile_box, "AIM_SIDE_SHARE", Fraction(0))
    real = PrivateCount.draw

    def far(self, true_count, rng):
        drawn = real(self, true_count, rng)
        return PrivateCount(drawn.scale, drawn.noisy + 10**12)

    monkeypatch.setattr(PrivateCount, "draw", far)


@pytest.mark.parametrize("strategy", ["collect", "pass"])
def test_randmargins_chosen_at_a_large_count_matches_numpy(make_frame, monkeypatch, strategy):
    """The plan's N = ∞ choice: a count pushed far above RandMargins' need makes every
    engine run RandMargins on the same stream, numpy's count and rectangle. ``collect``:
    the collected rows refined on the driver, in place, after the count; ``pass`` counts
    with the first pass of composition (the choice at the label count), and a drawn
    count that chooses RandMargins closes that engine and readies RandMargins' (its tie
    refinement): a counting pass of the other method is not used."""
    _count_far_above(monkeypatch)
    X, y = _table(seed=4)
    want, got = _both(make_frame, X, y, 5, strategies=(strategy,))
    assert want.method == "randmargins"
    for g in got:
        _same(g, want)


def test_no_job_for_the_method_not_chosen(make_frame):
    """A pending plan spends no strategy job on the method the count does not choose:
    ``collect`` collects once, before the reservation, unrefined (the count is its rows);
    ``pass`` runs no pass before the count. Under ``error`` a table with an invalid
    feature is still refused by ``prepare_fit``, before any reservation."""
    X, y, names, df = _frame(make_frame, seed=6)
    want = dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=7, features=names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with prepare_fit(df, features=names, label="y", epsilon=1.0, delta=1e-6,
                         strategy="collect") as prepared:
            assert prepared.plan.pending and prepared.engine is not None
            assert prepared.engine.stats["collect_jobs"] == 1
            got = prepared.run(seed=7)
            assert prepared.engine.stats["collect_jobs"] == 1
        _same(got, want)
        with prepare_fit(df, features=names, label="y", epsilon=1.0, delta=1e-6,
                         strategy="pass") as prepared:
            assert prepared.plan.pending and prepared.engine is None
            got = prepared.run(seed=7)
            # the box, predicted at the label count: counted by one aggregation, then its
            # two histogram jobs — no pass at all (issue #43)
            assert prepared.engine is not None and prepared.engine.stats["passes"] == 0
            assert prepared.engine.strategy == "rounds"
            assert prepared.engine.stats["window_jobs"] == 2
        _same(got, want)
        assert want.method == "quantiles"  # the small count: the box (issue #44)
        for strategy in ("collect", "pass"):
            with pytest.raises(InputDataError, match="x"):
                prepare_fit(df, features=names, label="y", epsilon=1.0, delta=1e-6,
                            strategy=strategy, invalid_rows="error")


def test_the_pass_counts_without_a_count_job(make_frame, monkeypatch):
    """``pass`` on a pending plan: the first pass of the method predicted at the label
    count (RandMargins: the label count and the drawn count both pushed far above — a
    predicted box asks no window, so it counts by one aggregation, test above) reads
    every row, so its summary is the count of the rows learned from — no count job
    (``count_learned`` is never called) — and that engine, its first pass run, answers
    the rounds: the numpy engine's count and rectangle."""
    from dprect.engines.spark.checks import TableChecks

    _count_far_above(monkeypatch)
    labels = TableChecks.count_positives
    monkeypatch.setattr(TableChecks, "count_positives", lambda self: labels(self) + 10**12)
    _no_count_job(monkeypatch)
    X, y, names, df = _frame(make_frame, seed=8)
    want = dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=9, features=names)
    with prepare_fit(df, features=names, label="y", epsilon=1.0, delta=1e-6,
                     strategy="pass") as prepared:
        assert prepared.plan.pending and prepared.engine is None
        got = prepared.run(seed=9)
        assert prepared.engine is not None and prepared.engine.stats["passes"] >= 1
    assert want.method == "randmargins"
    _same(got, want)


@pytest.mark.parametrize("far", [False, True])
def test_the_prefetch_pass_counts_without_a_count_job(make_frame, monkeypatch, far):
    """``auto`` taking ``prefetch`` on a pending plan (issue #43: the d = 8 scan-limit
    fit): the pass's sample is taken beside the label count, before the run (once), and
    the first pass of the method predicted at the label count — pruned by that sample —
    counts the rows learned from in its own job: no count job (``count_learned`` is never
    called). That engine answers the rounds when the count chooses its method; a count
    that chooses another (``far``: pushed far above) closes it and readies the chosen
    method's, with the sample already taken. Either way the numpy engine's count and
    rectangle."""
    from dprect import Grid
    from dprect.engines.spark import chooser, engine, prefetch
    samples = []

    def counted_sample(*args, **kwargs):
        samples.append(1)
        return prefetch.take_sample(*args, **kwargs)

    if far:
        _count_far_above(monkeypatch)
    else:
        _no_count_job(monkeypatch)
    monkeypatch.setattr(chooser, "PREFETCH_MIN_VALUES", 0)  # prefetch on a small table
    monkeypatch.setattr(engine, "take_sample", counted_sample)
    monkeypatch.setattr(prefetch, "SAMPLE_ROWS", 100)
    monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
    gen = np.random.default_rng(10)
    X = gen.normal(size=(3000, 8))
    X[gen.integers(0, 3000, size=5), gen.integers(0, 8, size=5)] = np.nan  # dropped rows
    y = (gen.uniform(size=3000) < 0.7).astype(int)
    names = [f"x{j}" for j in range(8)]
    grid = [Grid(-100.0, 100.0, 2**20)] * 8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=11, features=names, grid=grid)
        df = make_frame(X, names, y=y, partitions=3)
        with prepare_fit(df, features=names, label="y", grid=grid, epsilon=1.0,
                         delta=1e-6) as prepared:
            assert prepared.plan.pending and prepared.engine is None and samples == [1]
            got = prepared.run(seed=11)
            assert prepared.engine is not None and prepared.engine.strategy == "prefetch"
            assert samples == [1]  # composition's lists at 10^12 (far) are not pruned
            assert prepared.engine.stats["pruned"] == (not far)
    assert (want.method == "quantiles") != far  # far: composition, not the guess
    _same(got, want)


def test_the_box_predicted_counts_its_collected_rows_without_lists(make_frame, monkeypatch):
    """``auto`` on a pending plan whose label count predicts the quantile box (issue #43:
    the d = 128 scan-limit fit): the box's engine collects and holds the shipped rows
    (MatrixEngine), and its count of the rows learned from lists nothing for windows the
    box never asks (the selected flags only, kept for its histogram queries) — the numpy
    engine's count and rectangle."""
    from dprect.engines import numpy_matrix
    from dprect.engines.spark import collect

    monkeypatch.setattr(numpy_matrix, "PRELIST", 5)  # a count's pass would list here
    monkeypatch.setattr(collect, "LIST_BYTES", 1000)  # held from a few rows
    X, y = _table(seed=12)
    names = [f"x{j}" for j in range(D)]
    ones = int(np.count_nonzero(y))
    held = collect.collect_bytes(ones, D, held=True)
    budget = (held + collect.collect_bytes(ones, D)) / 2 / 2**20  # collect only if held
    want = dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=13, features=names)
    df = make_frame(X, names, y=y, partitions=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with prepare_fit(df, features=names, label="y", epsilon=1.0, delta=1e-6,
                         driver_budget_mb=budget) as prepared:
            assert prepared.plan.pending and prepared.engine is None
            got = prepared.run(seed=13)
            assert prepared.engine is not None and prepared.engine.strategy == "collect"
            local = prepared.engine.implementation._local
            assert isinstance(local, numpy_matrix.MatrixEngine)
            assert local._lists is None and local._chosen is not None
    assert want.method == "quantiles"
    _same(got, want)


def test_the_box_predicted_on_pass_is_counted_by_its_first_histogram_job(make_frame,
                                                                         monkeypatch):
    """``auto`` on a pending plan whose label count predicts the quantile box on ``pass``
    (issue #43: the d = 1,024 scan-limit fit): the centres' histogram query has public
    thresholds, so its job counts the rows learned from (its first axis's total) — no
    count job (``count_learned`` is never called) — and its counts answer the box's first
    query: two histogram jobs in all, no pass; the numpy engine's count and rectangle."""
    _no_count_job(monkeypatch)
    X, y, names, df = _frame(make_frame, seed=6)
    want = dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=7, features=names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with prepare_fit(df, features=names, label="y", epsilon=1.0, delta=1e-6,
                         strategy="pass") as prepared:
            assert prepared.plan.pending and prepared.engine is None
            got = prepared.run(seed=7)
            assert prepared.engine is not None and prepared.engine.strategy == "rounds"
            assert prepared.engine.stats["window_jobs"] == 2
            assert prepared.engine.stats["passes"] == 0
    assert want.method == "quantiles"
    _same(got, want)


def test_a_count_that_fails_leaves_no_rows_held(make_frame, monkeypatch):
    """If the box's count fails after its first histogram job held the positives (here a
    failure injected right after that job), the counting engine is closed on the way
    out: no rows stay persisted in the session, and the failure reaches the caller."""
    from dprect.engines.spark.engine import SparkEngine

    answer = SparkEngine.count_ahead

    def then_fail(self, first):
        answer(self, first)
        raise RuntimeError("injected after the count's job")

    monkeypatch.setattr(SparkEngine, "count_ahead", then_fail)
    _, _, names, df = _frame(make_frame, seed=6)
    persisted = df.sparkSession.sparkContext._jsc.getPersistentRDDs()
    before = persisted.size()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with prepare_fit(df, features=names, label="y", epsilon=1.0, delta=1e-6,
                         strategy="pass") as prepared:
            with pytest.raises(RuntimeError, match="injected"):
                prepared.run(seed=7)
            assert df.sparkSession.sparkContext._jsc.getPersistentRDDs().size() == before
