"""Tie-breaking (dprect.core.ties) on Spark: both plans answer on the refined sort values.

RandMargins with tie bits refines every grid axis's sort values by a per-row hash before
the first round (``Engine.set_ties``). The Spark engine must answer every window and cut
on those refined values exactly as NumpyEngine does — the ``rounds`` strategy on its encoded
rows, the ``prefetch`` strategy from lists that are prefixes of the *refined* orders, gathered
by the one pass — so a seed gives the identical rectangle on numpy, ``rounds`` and
``prefetch``, on tables dominated by ties: a feature with 95% zeros, pixel-like columns,
exact duplicate rows, beside a float-order axis (never refined).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dprect
from dprect import FloatOrder, Grid, IntegerRange
from dprect.core.errors import ParameterError
from dprect.core.ties import TieBreaker
from dprect.engines.numpy_engine import NumpyEngine
from dprect.engines.spark.engine import SparkEngine
from dprect.engines.spark.fit import prepare_fit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

STRATEGIES = ("rounds", "prefetch")


def _heavy_ties(n: int, pixels: int, seed: int) -> tuple[np.ndarray, np.ndarray, list]:
    """A zero-heavy feature, ``pixels`` pixel columns on 0…16, a rounded float-order
    feature; about 30% of the rows are exact copies of 20 rows."""
    gen = np.random.default_rng(seed)
    zeros = np.where(gen.random(n) < 0.95, 0.0, gen.uniform(0.1, 19.0, n))
    pix = gen.integers(0, 17, size=(n, pixels)).astype(np.float64)
    pix[gen.random((n, pixels)) < 0.5] = 0.0  # dark pixels
    rounded = np.round(gen.normal(2.0, 1.0, n), 1)
    X = np.column_stack([zeros, pix, rounded])
    dup = gen.random(n) < 0.3
    X[dup] = X[gen.integers(0, min(20, n), int(dup.sum()))]
    y = (gen.random(n) < 0.85).astype(int)
    domains = [Grid(0.0, 20.0, 64), *[IntegerRange(0, 16)] * pixels, FloatOrder()]
    return X, y, domains


def _fit_everywhere(make_frame, X, y, domains, *, method, seeds, epsilon=4.0, partitions=3):
    """Fit on numpy, Spark ``rounds`` and Spark ``prefetch`` for every seed; assert the
    rectangles are identical and that ``prefetch`` made exactly one pass per fit."""
    names = [f"x{j}" for j in range(X.shape[1])]
    df = make_frame(X, names, y=y, partitions=partitions)
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = dprect.plan(domains=domains, epsilon=epsilon, delta=1e-6, method=method)
        for seed in seeds:
            want = dprect.fit(X, y, grid=domains, epsilon=epsilon, delta=1e-6, method=method,
                              seed=seed, features=names)
            for strategy in STRATEGIES:
                with prepare_fit(df, features=names, label="y", grid=domains,
                                 epsilon=epsilon, delta=1e-6, method=method,
                                 strategy=strategy) as prepared:
                    got = prepared.run(seed=seed)
                    stats = dict(prepared.engine.stats)
                assert got.lower_index == want.lower_index, (strategy, seed)
                assert got.upper_index == want.upper_index, (strategy, seed)
                assert got.lower == want.lower and got.upper == want.upper
                # auto's count may move its choice off the plan's at no N (the aimed
                # box, docs/algorithm.md §10): the engines agree on what ran
                assert got.method == want.method and want.method in plan.candidates
                if strategy == "prefetch" and got.method != "quantiles":  # the box: its
                    # two histogram jobs (test_quantile_box_spark) instead of the prefetch
                    assert stats["prefetch_jobs"] == 1  # the ties add no second pass
            results.append(want)
    return plan, results


@pytest.mark.parametrize(("method", "seeds"), [("randmargins", (0, 1, 2)), ("auto", (3, 4))])
def test_fits_agree_on_heavy_ties(make_frame, method, seeds):
    X, y, domains = _heavy_ties(3000, pixels=2, seed=5)
    plan, results = _fit_everywhere(make_frame, X, y, domains, method=method, seeds=seeds)
    if plan.chosen.method == "randmargins":
        assert plan.chosen.tie_breaker(domains).active  # the case under test
        assert any(not r.empty for r in results)


def test_fits_agree_on_duplicate_rows(make_frame):
    """Every row a copy of one of 12: rows identical on every hashed axis share u."""
    X, y, domains = _heavy_ties(12, pixels=3, seed=7)
    gen = np.random.default_rng(8)
    pick = gen.integers(0, 12, 2500)
    X, y = X[pick], (gen.random(2500) < 0.9).astype(int)
    plan, _ = _fit_everywhere(make_frame, X, y, domains, method="randmargins", seeds=(5, 6),
                              epsilon=8.0, partitions=2)
    assert plan.chosen.tie_breaker(domains).active


def test_fits_agree_in_16_dimensions(make_frame):
    X, y, domains = _heavy_ties(2000, pixels=14, seed=9)
    assert len(domains) == 16
    plan, _ = _fit_everywhere(make_frame, X, y, domains, method="randmargins", seeds=(11,),
                              epsilon=8.0)
    assert plan.chosen.tie_breaker(domains).active


# -- the engine: windows and cuts on refined values ------------------------------------------
#: a 95%-zero coarse grid (other values spread inside its bins), a pixel, a float-order
#: axis, a grid of 2^40 points with 20 tie bits (refined values up to 2^60: exact only as
#: int64, never through a float64), a pixel that is hashed but not refined
ENGINE_DOMAINS = [Grid(0.0, 20.0, 8), IntegerRange(0, 16), FloatOrder(),
                  Grid(-1e6, 1e6, 2**40), IntegerRange(0, 16)]
ENGINE_NAMES = ["zero", "pix a", "f.x", "wide", "pix_b"]
ENGINE_TIES = TieBreaker.for_domains(ENGINE_DOMAINS, [8, 12, 0, 20, 0])
ENGINE_SCRIPT = [  # (axis, side, stop, size): then a cut at the window's median
    (0, "hi", 60, 20), (1, "lo", 200, 50), (2, "hi", 40, 40), (3, "lo", 100, 30),
    (4, "hi", 30, 10), (0, "lo", 500, 100), (1, "hi", 80, 80), (3, "hi", 300, 100),
    (2, "lo", 10, 5), (4, "lo", 2000, 50), (0, "hi", 5000, 30),
]


def _engine_data(n: int = 1500, seed: int = 21) -> np.ndarray:
    gen = np.random.default_rng(seed)
    X = np.column_stack([
        np.where(gen.random(n) < 0.95, 0.0, gen.uniform(0.1, 19.9, n)),
        gen.integers(0, 17, n).astype(np.float64),
        np.round(gen.normal(size=n), 1),
        np.round(gen.uniform(-1e6, 1e6, n), -5),  # 21 values, each a large tie group
        np.where(gen.random(n) < 0.7, 0.0, gen.integers(0, 17, n)).astype(np.float64),
    ])
    X[100:400] = X[0]  # exact duplicates
    return X


def _replay(eng, ref) -> None:
    """Run ENGINE_SCRIPT on both engines, comparing every window bit for bit."""
    for axis, side, stop, size in ENGINE_SCRIPT:
        want = np.sort(ref.window(axis, side, stop, size))
        got = np.sort(eng.window(axis, side, stop, size))
        assert got.dtype == want.dtype
        assert np.array_equal(got.view(np.int64), want.view(np.int64)), (axis, side, stop)
        if len(want):
            t = want[len(want) // 2]
            ref.cut(axis, side, t)
            eng.cut(axis, side, t)


@pytest.mark.parametrize("variant", ["rounds", "prefetch", "short-lists", "in-workers"])
def test_windows_and_cuts_match_numpy_after_set_ties(make_frame, monkeypatch, variant):
    from dprect.engines.spark import prefetch

    X = _engine_data()
    ref = NumpyEngine.from_features(X, ENGINE_DOMAINS)
    ref.set_ties(ENGINE_TIES)
    refined = ENGINE_TIES.refine([d.encode(X[:, j]) for j, d in enumerate(ENGINE_DOMAINS)])
    assert int(refined[3].max()) > 2**53  # float64 could not tell these values apart
    options: dict = {"strategy": "rounds" if variant == "rounds" else "prefetch"}
    if variant == "short-lists":  # lists pruned by sample thresholds (aimed at about K rows,
        # so a list often ends inside the threshold's bin), too short: fallbacks
        monkeypatch.setattr(prefetch, "SAMPLE_ROWS", 300)
        monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
        monkeypatch.setattr(prefetch, "SAMPLE_MIN_RANK", 2)
        monkeypatch.setattr(prefetch, "SAMPLE_SAFETY", 1)
        options.update(prefix=40, size_hint=len(X))
    if variant == "in-workers":  # the top K in Spark's Python workers, merged in Spark
        monkeypatch.setattr(prefetch, "DIRECT_CELLS", 1)
        monkeypatch.setattr(prefetch, "MERGE_CELLS", 10)
        options.update(prefix=300)
    df = make_frame(X, ENGINE_NAMES, partitions=3)
    with SparkEngine(df, ENGINE_DOMAINS, ENGINE_NAMES, **options) as eng:
        eng.set_ties(ENGINE_TIES)  # before prepare: accepted
        _replay(eng, ref)
        if variant != "rounds":
            assert eng.stats["prefetch_jobs"] == 1
        if variant == "short-lists":
            assert eng.stats["pruned"] == 1 and eng.stats["fallbacks"] > 0
        if variant == "in-workers":
            assert eng.stats["direct"] == 0


def test_set_ties_rules(make_frame):
    X = _engine_data(200, seed=3)
    df = make_frame(X, ENGINE_NAMES)
    other = TieBreaker.for_domains(ENGINE_DOMAINS, [1, 0, 0, 0, 0])
    for plan in STRATEGIES:
        # the constructor's ties: set_ties with them is a no-op, even after the pass
        with SparkEngine(df, ENGINE_DOMAINS, ENGINE_NAMES, strategy=plan,
                         ties=ENGINE_TIES) as eng:
            eng.prepare()
            eng.set_ties(ENGINE_TIES)
            with pytest.raises(ParameterError):
                eng.set_ties(other)
            with pytest.raises(ParameterError):
                eng.set_ties(TieBreaker((0,) * len(ENGINE_DOMAINS), ()))
        # no ties: inactive ones are the same; active ones only before prepare()
        with SparkEngine(df, ENGINE_DOMAINS, ENGINE_NAMES, strategy=plan) as eng:
            eng.prepare()
            eng.set_ties(TieBreaker((0,) * len(ENGINE_DOMAINS), ()))
            with pytest.raises(ParameterError):
                eng.set_ties(ENGINE_TIES)
        with SparkEngine(df, ENGINE_DOMAINS, ENGINE_NAMES, strategy=plan) as eng:
            eng.cut(0, "hi", 3)  # a cut recorded on unrefined values
            with pytest.raises(ParameterError):
                eng.set_ties(ENGINE_TIES)
        with (SparkEngine(df, ENGINE_DOMAINS, ENGINE_NAMES, strategy=plan) as eng,
              pytest.raises(ParameterError)):
            eng.set_ties(TieBreaker((0,) * 2, ()))  # wrong number of axes
    with pytest.raises(ParameterError):
        SparkEngine(df, ENGINE_DOMAINS, ENGINE_NAMES, ties=TieBreaker((0,) * 3, ()))


@pytest.mark.parametrize("in_workers", [False, True])
def test_prefetch_lists_are_prefixes_of_the_refined_orders(make_frame, monkeypatch,
                                                           in_workers):
    """A threshold placed at the K-th best *raw* value lands inside a grid bin whose rows
    spread over many raw values; the list must still be the first K rows of the refined
    (value, u) order, which takes that bin's rows by u, not by raw value."""
    from dprect.engines.spark import prefetch
    from dprect.engines.spark.engine import PrefixSpec

    X = _engine_data()
    monkeypatch.setattr(prefetch, "SAMPLE_ROWS", len(X))  # the sample is the whole table
    monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(prefetch, "SAMPLE_MIN_RANK", 2)
    monkeypatch.setattr(prefetch, "SAMPLE_SAFETY", 1)  # threshold: the K-th best raw value
    if in_workers:
        monkeypatch.setattr(prefetch, "DIRECT_CELLS", 1)
    specs = [PrefixSpec(0, "hi", 40, (0,)), PrefixSpec(3, "lo", 30, (3, 0))]
    refined = ENGINE_TIES.refine([d.encode(X[:, j]) for j, d in enumerate(ENGINE_DOMAINS)])
    df = make_frame(X, ENGINE_NAMES, partitions=3)
    with SparkEngine(df, ENGINE_DOMAINS, ENGINE_NAMES, strategy="prefetch", prefix=specs,
                     size_hint=len(X), ties=ENGINE_TIES) as eng:
        eng.prepare()
        assert eng.stats["pruned"] == 1 and eng.stats["direct"] == int(not in_workers)
        for spec in specs:
            listed = eng.implementation.lists[(spec.axis, spec.side)]
            order = np.argsort(refined[spec.axis], kind="stable")
            if spec.side == "hi":
                order = order[::-1]
            want = refined[spec.axis][order[:spec.rows]]
            assert np.array_equal(listed.columns[spec.axis], want), spec
            for c in spec.columns:  # every carried column in the engine's (refined) values
                assert np.isin(listed.columns[c], refined[c]).all()


@pytest.mark.parametrize("in_workers", [False, True])
def test_problem_rows_are_reported_by_the_refined_pass(make_frame, monkeypatch, in_workers):
    """A null in a refined (hashed) column: the pass reports the row; the refined columns
    stay int64 (a null r_j would turn them into float64 in Arrow)."""
    from pyspark.sql import functions as F  # noqa: N812

    from dprect.engines.spark import prefetch

    if in_workers:
        monkeypatch.setattr(prefetch, "DIRECT_CELLS", 1)
    X = _engine_data(300, seed=4)
    X[7, 0] = 19.95  # the one row made null below
    df = make_frame(X, ENGINE_NAMES, partitions=2)
    df = df.withColumn("zero", F.when(F.col("zero") > 19.9, F.lit(None))
                       .otherwise(F.col("zero")))
    seen = []
    with SparkEngine(df, ENGINE_DOMAINS, ENGINE_NAMES, strategy="prefetch", problem="zero IS NULL",
                     on_problem=lambda: seen.append(True), ties=ENGINE_TIES) as eng:
        eng.prepare()
        assert seen == [True]
        for (axis, _side), listed in eng.implementation.lists.items():
            if ENGINE_TIES.bits[axis]:
                assert listed.columns[axis].dtype == np.int64
