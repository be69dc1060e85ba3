"""The quantile box (issue #44) gives the identical rectangle for a seed on numpy and on
every Spark strategy: its one engine question, the histogram of the positives between
public thresholds, is answered by the numpy engine's own code (on the driver for
``collect``, on each partition otherwise)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dprect
from dprect import FloatOrder, Grid, IntegerRange
from dprect.core.errors import ParameterError
from dprect.engines.numpy_engine import bucket_counts
from dprect.engines.spark.engine import SparkEngine
from dprect.engines.spark.fit import fit_dataframe

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_histograms_match_numpy_in_one_job(make_frame) -> None:
    """Every axis's histogram in one query: the numpy engine's counts, and one Spark job
    for all the axes (no job on the collected rows)."""
    rng = np.random.default_rng(5)
    X = np.round(rng.normal(0, 3, size=(300, 3)), 1)
    X[:7] = -0.0  # −0.0 and ties
    dom = FloatOrder()
    cuts = [np.array([-5.0, -0.0, 0.0, 0.0, 1.5, 4.0]), np.array([0.5]),
            np.array([-1.0, 2.0, 2.0])]
    want = [bucket_counts(dom.encode(X[:, j]), dom.encode(c)).tolist()
            for j, c in enumerate(cuts)]
    df = make_frame(X, ["a", "b", "c"], partitions=3)
    for strategy in ("rounds", "collect", "prefetch", "pass"):
        eng = SparkEngine(df, [dom] * 3, ["a", "b", "c"], strategy=strategy)
        eng.prepare()
        jobs = eng.stats["window_jobs"]
        got = eng.histograms([dom.encode(c) for c in cuts])
        assert [h.tolist() for h in got] == want
        assert eng.stats["window_jobs"] - jobs == (0 if strategy == "collect" else 1)


@pytest.mark.parametrize("kind", ["float", "grid", "int", "zero"])
def test_same_box_on_every_engine(make_frame, kind) -> None:
    """The same box for a seed on numpy and every Spark strategy; ``zero``: standardised
    rows around zero on the float order, where the unaimed centre lands among the tiny
    floats and its sides walk the magnitude points alone (s34-zero)."""
    rng = np.random.default_rng(11)
    X = np.round(rng.normal(0 if kind == "zero" else 4, 1.5, size=(160, 3)), 2)
    y = (rng.random(160) < 0.4).astype(int)
    dom = {"float": FloatOrder(), "grid": Grid(-2.0, 10.0, 300),
           "int": IntegerRange(-2, 12), "zero": FloatOrder()}[kind]
    names = ["x0", "x1", "x2"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.fit(X, y, grid=dom, epsilon=2.0, delta=1e-6, method="quantiles",
                          seed=3, features=names)
        df = make_frame(X, names, y=y, partitions=2)
        for strategy in ("rounds", "prefetch", "collect", "pass"):
            got = fit_dataframe(df, features=names, label="y", grid=dom, epsilon=2.0,
                                delta=1e-6, method="quantiles", seed=3, strategy=strategy)
            assert got.method == "quantiles"
            assert (got.lower_index, got.upper_index) == (want.lower_index,
                                                          want.upper_index)
            assert (got.lower, got.upper) == (want.lower, want.upper)


@pytest.mark.parametrize("kind", ["grid", "float"])
def test_same_aimed_box_on_every_engine(make_frame, kind) -> None:
    """auto at its private count, a miss target stated, runs the box with its sides aimed
    (t = ⌊N/50⌋ > 0: the two-sided score, four steps an octave): the same count, the same
    draws, the same box on numpy and on Spark — on the float order with rows around zero
    too, where the aimed sides' candidates hold the magnitude points (docs/privacy.md §16,
    Lemma QB4)."""
    from dprect.core.planner import plan, quantiles_aim

    rng = np.random.default_rng(12)
    X = np.round(rng.normal(4 if kind == "grid" else 0, 1.5, size=(700, 3)), 2)
    y = (rng.random(700) < 0.4).astype(int)
    dom = Grid(-2.0, 10.0, 3000) if kind == "grid" else FloatOrder()
    names = ["x0", "x1", "x2"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.fit(X, y, grid=dom, epsilon=4.0, delta=1e-6, seed=5, features=names,
                          target_miss=0.02)
        n = want.to_json()["parameters"]["positives_noisy"]
        box = plan(epsilon=4.0, delta=1e-6, domains=[dom] * 3, positives=n, target_miss=0.02)
        assert want.method == "quantiles" and quantiles_aim(box.candidates["quantiles"], n) > 0
        df = make_frame(X, names, y=y, partitions=2)
        for strategy in ("rounds", "collect"):
            got = fit_dataframe(df, features=names, label="y", grid=dom, epsilon=4.0,
                                delta=1e-6, seed=5, strategy=strategy, target_miss=0.02)
            assert got.method == "quantiles"
            assert (got.lower_index, got.upper_index) == (want.lower_index,
                                                          want.upper_index)


@pytest.mark.parametrize("strategy", ["prefetch", "pass", "collect"])
def test_the_box_is_two_jobs_on_spark(make_frame, strategy) -> None:
    """The box on Spark reads the rows in two histogram jobs (one for every axis's
    centre, one for every axis's sides) and runs no strategy's first pass for windows it
    never asks (``collect``: its one job, then the driver), the same box as numpy; the
    engine then names the strategy that ran (``rounds``'s jobs for ``prefetch`` and
    ``pass``)."""
    from dprect.engines.spark.fit import prepare_fit

    rng = np.random.default_rng(13)
    X = np.round(rng.normal(4, 1.5, size=(400, 4)), 2)
    y = (rng.random(400) < 0.5).astype(int)
    dom = Grid(-2.0, 10.0, 3000)
    names = [f"x{j}" for j in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.fit(X, y, grid=dom, epsilon=2.0, delta=1e-6, method="quantiles",
                          seed=4, features=names)
        df = make_frame(X, names, y=y, partitions=2)
        with prepare_fit(df, features=names, label="y", grid=dom, epsilon=2.0, delta=1e-6,
                         method="quantiles", strategy=strategy) as prepared:
            got = prepared.run(seed=4)
            stats = dict(prepared.engine.stats)
            ran = prepared.engine.strategy, type(prepared.engine.implementation).__name__
    assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)
    assert stats["prefetch_jobs"] == 0 and stats["passes"] == 0
    if strategy == "collect":
        assert stats["collect_jobs"] == 1 and stats["window_jobs"] == 0
        assert ran == ("collect", "CollectStrategy")
    else:  # the engine names the strategy that ran, not the one asked
        assert stats["window_jobs"] == 2 and stats["collect_jobs"] == 0
        assert ran == ("rounds", "RoundsStrategy")



def test_a_histogram_job_ships_one_compressed_counts_row_a_partition(make_frame,
                                                                     monkeypatch) -> None:
    """The histogram job's partitions send the driver one row each, their dense counts
    narrowed and compressed (issue #43: at d = 1,024 the dense int64 counts were 1.5 GB
    to the driver, their non-zero pairs still 83 MB from 6 partitions of 131,072 rows):
    40 rows on 3 partitions, 2 axes of 1,000 thresholds — 3 rows, far fewer bytes than
    the 48,048 of dense int64 counts or the 16 a non-zero slot of (slot, count) pairs —
    and the numpy engine's counts."""
    from pyspark.sql.classic.dataframe import DataFrame

    shipped: list[tuple[int, int]] = []
    real = DataFrame.toArrow

    def counted(self):
        table = real(self)
        shipped.append((table.num_rows, sum(len(b) for b in table.column("b").to_pylist())))
        return table

    monkeypatch.setattr(DataFrame, "toArrow", counted)
    X = np.random.default_rng(9).normal(0, 1, size=(40, 2))
    dom = Grid(-100.0, 100.0, 2**20)
    cuts = [np.arange(0, 2**20, 2**20 // 1000)[:1000]] * 2
    want = [bucket_counts(dom.encode(X[:, j]), c).tolist() for j, c in enumerate(cuts)]
    df = make_frame(X, ["a", "b"], partitions=3)
    eng = SparkEngine(df, [dom] * 2, ["a", "b"], strategy="rounds")
    eng.prepare()
    shipped.clear()
    got = eng.histograms(cuts)
    assert [h.tolist() for h in got] == want
    assert len(shipped) == 1 and shipped[0][0] == 3
    assert shipped[0][1] < 2 * 40 * 16


def test_a_query_answered_ahead_counts_the_rows_and_is_kept_once(make_frame) -> None:
    """``count_ahead`` (issue #43: the box's centres' query run as ``auto``'s count): one
    job answers the query and returns the rows learned from (positives with finite
    features: NaN rows dropped) — its first axis's total; the first ``histograms`` asking
    the same thresholds is answered from it without a job, any other query (or the same
    one again) by a job of its own: the numpy engine's counts every time."""
    from dprect.core.quantile_box import centre_query
    from dprect.engines.spark.checks import TableChecks

    rng = np.random.default_rng(21)
    X = np.round(rng.normal(4, 1.5, size=(200, 3)), 2)
    X[:5, 1] = np.nan
    y = (rng.random(200) < 0.6).astype(int)
    dom = Grid(-2.0, 10.0, 3000)
    keep = (y == 1) & np.isfinite(X).all(axis=1)
    df = make_frame(X, ["a", "b", "c"], y=y, partitions=3)

    def numpy_counts(cuts):
        return [bucket_counts(dom.encode(X[keep, j]), c).tolist() for j, c in enumerate(cuts)]

    first = centre_query([dom] * 3)
    other = [np.array([10, 500, 2000])] * 3

    def engine():
        eng = SparkEngine(df, [dom] * 3, ["a", "b", "c"], strategy="rounds", cache=False,
                          positive=TableChecks(df, ["a", "b", "c"], "y", invalid_rows="drop",
                                                   positive_label=1).positive)
        eng.prepare()
        return eng

    eng = engine()
    assert eng.count_ahead(first) == int(keep.sum())
    assert eng.stats["window_jobs"] == 1
    assert [h.tolist() for h in eng.histograms(first)] == numpy_counts(first)
    assert eng.stats["window_jobs"] == 1  # answered ahead: no job
    assert [h.tolist() for h in eng.histograms(first)] == numpy_counts(first)
    assert eng.stats["window_jobs"] == 2  # kept once
    eng = engine()
    eng.count_ahead(first)  # then another query first: it runs, the kept counts dropped
    assert [h.tolist() for h in eng.histograms(other)] == numpy_counts(other)
    assert [h.tolist() for h in eng.histograms(first)] == numpy_counts(first)
    assert eng.stats["window_jobs"] == 3
    with pytest.raises(ParameterError, match="before"):
        eng.count_ahead(first)


@pytest.mark.parametrize("shape", ["general", "origin"])
def test_the_box_holds_the_rows_between_its_two_queries(make_frame, monkeypatch,
                                                        shape) -> None:
    """The box's two histogram jobs on Spark (issue #43): the first persists the rows
    learned from (their feature columns) in the executors and the second reads them from
    there, not the table again; the held rows are released when the fit closes. The
    origin shape asks one query: nothing held. The numpy engine's box either way."""
    from dprect.engines.spark import rounds
    from dprect.engines.spark.fit import prepare_fit

    held: list[bool] = []
    real = rounds.RoundsStrategy.histograms

    def spy(self, thresholds, **kwargs):
        answer = real(self, thresholds, **kwargs)
        held.append(self._held is not None and self._held.storageLevel.useMemory)
        return answer

    monkeypatch.setattr(rounds.RoundsStrategy, "histograms", spy)
    rng = np.random.default_rng(23)
    X = np.round(rng.normal(4, 1.5, size=(300, 3)), 2)
    X[:4, 2] = np.nan
    y = (rng.random(300) < 0.5).astype(int)
    dom = Grid(-2.0, 10.0, 3000)
    names = ["x0", "x1", "x2"]
    opts = {"shape": "origin"} if shape == "origin" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.fit(X, y, grid=dom, epsilon=2.0, delta=1e-6, method="quantiles",
                          seed=6, features=names, **opts)
        df = make_frame(X, names, y=y, partitions=3)
        with prepare_fit(df, features=names, label="y", grid=dom, epsilon=2.0, delta=1e-6,
                         method="quantiles", strategy="pass", **opts) as prepared:
            got = prepared.run(seed=6)
            kept = prepared.engine.implementation._held
    assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)
    if shape == "origin":
        assert held == [False] and kept is None
    else:
        assert held == [True, True]
        assert not kept.storageLevel.useMemory and not kept.storageLevel.useDisk


def test_the_held_rows_are_packed_raw_values_and_count_as_numpy(spark, monkeypatch) -> None:
    """The held queries on raw rows (issue #43, :mod:`dprect.engines.spark.held_kernel`):
    a FloatType, a LongType and a DoubleType feature (shipped as float32, as Spark's
    double, as they are), encoded in the Python worker, and a query after cuts — the
    numpy engine's counts every time; what the first job holds is the packed blocks (one
    binary value a block of rows: a batch's, here one a partition), and the later
    queries read those, not the table."""
    from pyspark.sql import types as T  # noqa: N812

    from dprect.engines.numpy_engine import NumpyEngine
    rng = np.random.default_rng(29)
    n = 240
    x = rng.normal(2, 2, n).astype(np.float32)
    k = rng.integers(-3, 9, n)
    z = np.round(rng.normal(0, 1, n), 1)
    z[:4] = -0.0
    y = rng.random(n) < 0.7
    rows = [(float(a), int(b), float(c), int(d)) for a, b, c, d in zip(x, k, z, y, strict=True)]
    schema = T.StructType([T.StructField("x", T.FloatType(), False),
                           T.StructField("k", T.LongType(), False),
                           T.StructField("z", T.DoubleType(), False),
                           T.StructField("y", T.IntegerType(), False)])
    df = spark.createDataFrame(rows, schema).repartition(3)
    doms = [Grid(-4.0, 8.0, 500), IntegerRange(-3, 9), FloatOrder()]
    local = NumpyEngine([d.encode(c[y]) for d, c in zip(
        doms, [x.astype(np.float64), k.astype(np.float64), z], strict=True)])
    eng = SparkEngine(df, doms, ["x", "k", "z"], strategy="pass", positive="y = 1",
                      histograms_only=True, hold=True, cache=False)
    eng.prepare()
    assert eng.implementation.packed
    queries = [[np.array([10, 200, 200, 480]), np.array([0, 4, 5]),
                FloatOrder().encode(np.array([-1.0, 0.0, 0.5]))],
               [np.array([150, 250]), np.array([2, 3, 4]), FloatOrder().encode(np.array([0.0]))]]
    assert [h.tolist() for h in eng.histograms(queries[0])] == \
        [h.tolist() for h in local.histograms(queries[0])]
    held = eng.implementation._held
    assert held.columns == ["k", "c", "b"] and held.storageLevel.useMemory
    blocks = held.where("k = 1").select("c").toPandas()["c"]
    assert blocks.sum() == int(y.sum()) and len(blocks) == 3
    for axis, side, t in [(0, "hi", 300), (2, "lo", FloatOrder().encode(np.array([-2.0]))[0])]:
        eng.cut(axis, side, t)
        local.cut(axis, side, t)
    from pyspark.sql.classic.dataframe import DataFrame

    plans: list[str] = []
    real = DataFrame.toArrow

    def spy(self):
        plans.append(self._jdf.queryExecution().optimizedPlan().toString())
        return real(self)

    monkeypatch.setattr(DataFrame, "toArrow", spy)
    assert [h.tolist() for h in eng.histograms(queries[1])] == \
        [h.tolist() for h in local.histograms(queries[1])]
    assert len(plans) == 1 and "InMemoryRelation" in plans[0] and "LocalRelation" not in plans[0]
    eng.close()
    assert not held.storageLevel.useMemory
