"""The Spark engine's ``collect`` strategy and the ``auto`` choice (issue #15).

``collect`` runs ONE Spark job that ships the positives' raw feature values as Arrow; the
driver encodes (and refines) them with the core's code and answers every window and cut
with NumpyEngine. A seed
must give the identical rectangle on numpy, ``rounds``, ``prefetch`` and ``collect`` — here
at d ∈ {2, 16, 128} on tables dominated by ties (a 95%-zeros grid axis, IntegerRange pixel
columns, exact duplicate rows), for the composition and randmargins methods. ``auto`` picks
``collect`` when positives × dims × 8 bytes × COLLECT_OVERHEAD (plus a constant) fit the
driver budget, else ``pass`` — the same rectangle either way. Features of every Spark
numeric type (float32 shipped as is, the others as Spark's cast to double) give the numpy
engine's rectangle, on grids and on FloatOrder domains. The ``error`` invalid-row policy still
refuses a table with a NaN feature in the collect job, before a budget is reserved.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tie_tables import ties_table as _ties_table

import dprect
from dprect import FloatOrder, Grid, IntegerRange
from dprect.core.errors import InputDataError, ParameterError
from dprect.engines.numpy_engine import NumpyEngine
from dprect.engines.spark.chooser import choose_strategy
from dprect.engines.spark.collect import (
    COLLECT_OVERHEAD,
    TRANSIENT_BYTES,
    collect_bytes,
    shipped_widths,
)
from dprect.engines.spark.engine import SparkEngine
from dprect.engines.spark.fit import prepare_fit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

EPSILON, DELTA = 8.0, 1e-6


def _numpy_fit(X, y, names, domains, seed, **method):
    """``dprect.fit`` on the in-memory table (the reference; seeded-run warnings off)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dprect.fit(X, y, grid=domains, epsilon=EPSILON, delta=DELTA, seed=seed,
                          features=names, **method)


def _spark_fit(df, names, domains, seed, **options):
    """The same fit on ``df`` (label ``y``) through ``prepare_fit(**options)``: the result
    and the engine (its ``plan`` and ``stats``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with prepare_fit(df, features=names, label="y", grid=domains, epsilon=EPSILON,
                         delta=DELTA, **options) as prepared:
            return prepared.run(seed=seed), prepared.engine


def _frame(spark, X, y, names, partitions=3):
    """Built through Arrow (fast at d = 128)."""
    table = pa.table({**{n: X[:, j] for j, n in enumerate(names)},
                      "y": pa.array(y, pa.int32())})
    return spark.createDataFrame(table.to_pandas()).repartition(partitions)


@pytest.mark.parametrize("dims,n,seeds", [(2, 3000, (1, 2)), (16, 3000, (3,)),
                                          (128, 2000, (4,))])
@pytest.mark.parametrize("method", ["randmargins", "composition"])
def test_every_plan_gives_the_same_rectangle(spark, dims, n, seeds, method):
    X, y, domains = _ties_table(n, dims, seed=dims)
    names = [f"x{j}" for j in range(dims)]
    df = _frame(spark, X, y, names)
    # at d = 128: rounds runs a job per round (one composition case below), and prefetch
    # with randmargins is the slow case this plan replaces (minutes: its lists carry every
    # cut axis), so it is compared on composition only
    plans = {(True, "randmargins"): ("collect", "pass", "prefetch", "rounds"),
             (True, "composition"): ("collect", "pass", "prefetch", "rounds"),
             (False, "randmargins"): ("collect", "pass"),
             (False, "composition"): ("collect", "pass", "prefetch")}[(dims <= 16, method)]
    for seed in seeds:
        want = _numpy_fit(X, y, names, domains, seed, method=method)
        for strategy in plans:
            got, engine = _spark_fit(df, names, domains, seed, method=method,
                                     strategy=strategy)
            stats = engine.stats
            assert got.method == want.method == method
            assert got.lower_index == want.lower_index, (strategy, seed)
            assert got.upper_index == want.upper_index, (strategy, seed)
            if strategy == "collect":  # one job, then the driver only
                assert stats["collect_jobs"] == 1 and stats["window_jobs"] == 0
            if strategy == "pass":  # passes serve the rounds: never a job per round
                assert stats["window_jobs"] == 0
                assert 1 <= stats["passes"] <= 3, stats
        if dims == 2:  # enough positives there for a non-empty box
            assert not want.empty


def test_rounds_at_128_dims_agrees_with_collect(spark):
    """``rounds`` is a job per round: one composition seed at d = 128 (fewer rows)."""
    X, y, domains = _ties_table(600, 128, seed=5)
    names = [f"x{j}" for j in range(128)]
    df = _frame(spark, X, y, names, partitions=2)
    want = _numpy_fit(X, y, names, domains, 6, method="composition")
    for strategy in ("rounds", "collect"):
        got, _ = _spark_fit(df, names, domains, 6, method="composition", strategy=strategy)
        assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)


@pytest.mark.parametrize("chunk", [32, 3])
def test_engine_collect_answers_as_numpy_with_ties(spark, monkeypatch, chunk):
    """Windows and cuts (a cut before the job included) on the refined values; with
    ``chunk`` 3 the hash is summed in parts (as at d > 32), to the same integers."""
    from dprect.core.ties import TieBreaker
    from dprect.engines.spark import prefetch

    monkeypatch.setattr(prefetch, "HASH_CHUNK", chunk)
    X, y, domains = _ties_table(1500, 8, seed=9)
    names = [f"x{j}" for j in range(8)]
    df = _frame(spark, X, y, names)
    ties = TieBreaker.for_domains(domains, (6,) * 8)
    pos = X[y == 1]
    ref = NumpyEngine.from_features(pos, domains)
    ref.set_ties(ties)
    refined = ties.refine([d.encode(pos[:, j]) for j, d in enumerate(domains)])
    pre = NumpyEngine(refined, refined=ties)
    pre.set_ties(ties)  # same ties: a no-op (the columns are not refined twice)
    with SparkEngine(df, domains, names, strategy="collect", positive="y = 1", ties=ties) as eng:
        eng.set_ties(ties)
        first = ref.window(1, "hi", 40, 20)
        ref.cut(1, "hi", first.min())
        pre.cut(1, "hi", first.min())
        eng.cut(1, "hi", first.min())
        for axis, side in [(0, "lo"), (2, "hi"), (3, "lo"), (0, "hi")]:
            want = np.sort(ref.window(axis, side, 50, 25))
            assert np.array_equal(np.sort(eng.window(axis, side, 50, 25)), want)
            assert np.array_equal(np.sort(pre.window(axis, side, 50, 25)), want)
            assert eng.window(axis, side, 50, 25).dtype == np.int64
            ref.cut(axis, side, want[0] if side == "hi" else want[-1])
            eng.cut(axis, side, want[0] if side == "hi" else want[-1])
            pre.cut(axis, side, want[0] if side == "hi" else want[-1])
        assert eng.stats["collect_jobs"] == 1 and eng.stats["window_jobs"] == 0
    with pytest.raises(ParameterError):
        NumpyEngine(refined[:3], refined=ties)


def test_wide_hash_parses(spark):
    """At d = 512 the refined values' hash is one sum over 512 axes: summed in parts, it
    parses (a single 512-term sum overflows Spark's parser) and gives the numpy values."""
    from dprect.core.ties import TieBreaker

    dims = 512
    gen = np.random.default_rng(3)
    X = gen.integers(0, 17, size=(40, dims)).astype(np.float64)
    names = [f"x{j}" for j in range(dims)]
    domains = [IntegerRange(0, 16)] * dims
    ties = TieBreaker.for_domains(domains, (4,) * dims)
    want = ties.refine([d.encode(X[:, j]) for j, d in enumerate(domains)])
    with SparkEngine(_frame(spark, X, np.ones(40, int), names), domains, names,
                     strategy="collect", ties=ties) as eng:
        for axis in (0, 200, 511):
            assert np.array_equal(np.sort(eng.window(axis, "lo", 40, 40)), np.sort(want[axis]))


def test_empty_and_float_order_tables(spark, make_frame):
    from dprect import FloatOrder

    X = np.array([[0.5, -0.0], [1.5, 2.0], [2.5, 0.0]])
    df = make_frame(X, ["a", "b"], y=[1, 1, 0])
    doms = [FloatOrder(), FloatOrder()]
    with SparkEngine(df, doms, ["a", "b"], strategy="collect", positive="y = 1") as eng:
        assert sorted(eng.window(0, "hi", 5, 5)) == [0.5, 1.5]
        assert eng.window(1, "lo", 1, 1).dtype == np.float64
    with SparkEngine(df.limit(0), doms, ["a", "b"], strategy="collect") as eng:
        assert len(eng.window(0, "lo", 3, 3)) == 0


@pytest.mark.parametrize("float32,plan", [(True, "collect"), (False, "pass")])
def test_auto_reads_the_shipped_widths_from_the_schema(spark, float32, plan):
    """A budget that holds 3,000 positives of two float32 features but not of two
    doubles: ``auto`` picks by the schema's widths — and both plans give the numpy
    engine's rectangle."""
    X, y, domains = _ties_table(4000, 2, seed=12)
    names = ["x0", "x1"]
    df = _frame(spark, X, y, names)
    if float32:
        df = df.selectExpr("CAST(x0 AS FLOAT) AS x0", "CAST(x1 AS FLOAT) AS x1", "y")
        X = X.astype(np.float32).astype(np.float64)
    positives = int(np.count_nonzero(y))
    budget = (collect_bytes(positives, 2, [4, 4]) + collect_bytes(positives, 2)) / 2 / 2**20
    # composition: auto's method here before s38-plan44's grid-tie model, which now takes
    # the quantile box (histogram jobs only: the rounds strategy whatever the budget) —
    # the strategy is what this test asks about
    want = _numpy_fit(X, y, names, domains, 13, method="composition")
    got, engine = _spark_fit(df, names, domains, 13, driver_budget_mb=budget,
                             method="composition")
    assert engine.strategy == plan
    assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)


def test_auto_chooses_by_the_driver_budget(spark):
    assert collect_bytes(1000, 16) == 1000 * 16 * 8 * COLLECT_OVERHEAD + TRANSIENT_BYTES
    # a float32 feature ships 4 bytes (JVM and Python Arrow) instead of 8: a tighter bound
    assert collect_bytes(1000, 2, [4, 8]) == 1000 * (3 * 12 + 16) + TRANSIENT_BYTES
    assert collect_bytes(1000, 2, [4, 8]) < collect_bytes(1000, 2)
    budget_mb = collect_bytes(1000, 16) / 2**20
    assert choose_strategy(1000, 16, budget_mb) == "collect"  # exactly at the budget
    assert choose_strategy(1001, 16, budget_mb) == "pass"
    assert choose_strategy(None, 16) == "pass"  # no count: the bounded-memory plan
    assert choose_strategy(10**6, 32) == "collect"  # default budget: 1024 MiB
    assert choose_strategy(10**7, 32) == "pass"
    # float32 features ship half the bytes: 1.2·10^6 positives × 32 fit the default budget
    assert choose_strategy(1_200_000, 32) == "pass"
    assert choose_strategy(1_200_000, 32, widths=[4] * 32) == "collect"
    # few features and many positives: prefetch's JVM filter, given a budget for its lists
    assert choose_strategy(5 * 10**6, 8) == "prefetch"
    assert choose_strategy(10**6, 8) == "collect"  # 8·10^6 values: below PREFETCH_MIN_VALUES
    assert choose_strategy(5 * 10**6, 16) == "pass"  # more than PREFETCH_MAX_DIMS features
    assert choose_strategy(5 * 10**6, 8, 256) == "pass"  # a budget below PREFETCH_DRIVER_MB
    for bad in (-1, float("nan"), float("inf"), True, "1"):
        with pytest.raises(ParameterError, match="driver_budget_mb"):
            choose_strategy(10, 2, bad)  # type: ignore[arg-type]

    X, y, domains = _ties_table(3000, 8, seed=11)
    names = [f"x{j}" for j in range(8)]
    df = _frame(spark, X, y, names)
    got = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for budget, chosen in ((None, "collect"), (1e-4, "pass")):
            with prepare_fit(df, features=names, label="y", grid=domains, epsilon=EPSILON,
                             delta=DELTA, method="randmargins",
                             driver_budget_mb=budget) as prepared:
                assert prepared.engine.strategy == chosen
                got[chosen] = prepared.run(seed=12)
        with pytest.raises(ParameterError, match="driver_budget_mb"):
            prepare_fit(df, features=names, label="y", grid=domains, epsilon=EPSILON,
                        delta=DELTA, driver_budget_mb=-5)
    assert got["collect"].lower_index == got["pass"].lower_index
    assert got["collect"].upper_index == got["pass"].upper_index


@pytest.mark.parametrize("plan,budget,flat", [("collect", None, False), ("auto", None, False),
                                              ("auto", 1e-4, False), ("collect", None, True),
                                              ("pass", None, False), ("pass", 1e-4, True)])
def test_error_policy_refuses_a_nan_feature(spark, make_frame, monkeypatch, plan, budget,
                                            flat):
    """``flat``: the checks as one ``forall`` (as above FLAT_CHECKS features)."""
    from dprect.engines.spark import checks

    if flat:
        monkeypatch.setattr(checks, "FLAT_CHECKS", 1)
    X = np.array([[1.0, 1.0], [2.0, np.nan], [3.0, 3.0], [4.0, 4.0]])
    df = make_frame(X, ["a", "b"], y=[1, 0, 1, 1])  # the NaN is on a negative row
    with pytest.raises(InputDataError, match="feature 'b' has null, NaN or infinite"):
        prepare_fit(df, features=["a", "b"], label="y", grid="0:8:16", epsilon=1.0,
                    delta=1e-6, invalid_rows="error", strategy=plan,
                    driver_budget_mb=budget)
    with warnings.catch_warnings():  # the default policy drops it: an ordinary fit
        warnings.simplefilter("ignore")
        with prepare_fit(df, features=["a", "b"], label="y", grid="0:8:16", epsilon=1.0,
                         delta=1e-6, strategy=plan, driver_budget_mb=budget) as prepared:
            prepared.run(seed=1)
    # drop: rows with a NaN, an infinity or a null feature are left out, the others kept
    rows = [(1.0, 1.0, 1), (2.0, float("nan"), 1), (3.0, None, 1), (float("inf"), 4.0, 1),
            (5.0, 5.0, 1), (6.0, 6.0, 0)]
    frame = spark.createDataFrame(rows, "a double, b double, y int")
    with SparkEngine(frame, [IntegerRange(0, 8)] * 2, ["a", "b"], strategy="collect",
                     positive=checks.TableChecks(frame, ["a", "b"], "y", invalid_rows="drop",
                                                 positive_label=1).positive) as eng:
        assert sorted(eng.window(0, "lo", 9, 9)) == [1, 5]


def test_cli_error_policy_reserves_nothing(spark, tmp_path):
    """``dprect fit --engine spark`` (auto plan, default budget) with a ledger: the NaN
    refuses the table, exit code 2, and the ledger holds no event for the dataset."""
    from dprect.app.cli import main
    from dprect.release.ledger import Ledger

    data = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0, 3.0], "b": [1.0, np.nan, 3.0],
                             "label": [1, 1, 0]}), data)
    Ledger(tmp_path / "ledger").init()
    code = main(["fit", "--input", str(data), "--features", "a,b", "--label", "label",
                 "--grid=0:8:16", "--epsilon", "1", "--delta", "1e-6", "--seed", "1",
                 "--output", str(tmp_path / "r.json"), "--engine", "spark",
                 "--invalid-rows", "error", "--driver-budget-mb", "64",
                 "--ledger", str(tmp_path / "ledger"), "--dataset", "ds"])
    assert code == 2
    assert Ledger(tmp_path / "ledger").events("ds") == []
    assert not (tmp_path / "r.json").exists()


def _mixed_table(spark, n: int, seed: int):
    """Features of every shipped path: float32 and float64 (shipped as they are), int32,
    int64 (with values beyond 2^53, rounded to the nearest double by Spark's cast as by
    numpy), decimal and boolean (Spark's cast to double); returns the DataFrame and the
    float64 matrix the numpy engine reads for it."""
    from decimal import Decimal

    from pyspark.sql import types as T  # noqa: N812

    gen = np.random.default_rng(seed)
    f32 = gen.normal(0.0, 3.0, n).astype(np.float32)
    f32[gen.random(n) < 0.1] = np.float32(1e-40)  # float32 subnormals: exact as doubles
    f32[gen.random(n) < 0.1] = np.float32(-0.0)
    f64 = gen.normal(0.0, 3.0, n)
    f64[gen.random(n) < 0.2] = 0.5  # a tie group
    i32 = gen.integers(-20, 20, n)
    i64 = gen.integers(0, 50, n) + np.where(gen.random(n) < 0.3, 2**53 + 1, 0)
    dec = [Decimal(int(v)).scaleb(-3) for v in gen.integers(-9999, 9999, n)]
    flag = gen.random(n) < 0.4
    y = (gen.random(n) < 0.85).astype(int)
    schema = T.StructType([T.StructField("f32", T.FloatType()),
                           T.StructField("f64", T.DoubleType()),
                           T.StructField("i32", T.IntegerType()),
                           T.StructField("i64", T.LongType()),
                           T.StructField("dec", T.DecimalType(10, 3)),
                           T.StructField("flag", T.BooleanType()),
                           T.StructField("y", T.IntegerType())])
    rows = [(float(f32[i]), float(f64[i]), int(i32[i]), int(i64[i]), dec[i], bool(flag[i]),
             int(y[i])) for i in range(n)]
    df = spark.createDataFrame(rows, schema).repartition(3)
    X = np.column_stack([f32.astype(np.float64), f64, i32.astype(np.float64),
                         np.array([float(int(v)) for v in i64]),
                         np.array([float(d) for d in dec]), flag.astype(np.float64)])
    return df, X, y


MIXED = ["f32", "f64", "i32", "i64", "dec", "flag"]


def test_collect_reads_every_type_as_the_numpy_engine(spark):
    """The driver's columns are bit for bit the numpy engine's encoding of the same rows:
    float32 shipped as float32 and widened, other types through Spark's cast."""
    from dprect import FloatOrder

    df, X, y = _mixed_table(spark, 400, seed=21)
    assert shipped_widths(df, MIXED) == [4, 8, 8, 8, 8, 8]
    pos = X[y == 1]
    doms = [FloatOrder()] * len(MIXED)
    with SparkEngine(df, doms, MIXED, strategy="collect", positive="y = 1") as eng:
        for j, d in enumerate(doms):
            got = np.sort(eng.window(j, "lo", len(pos), len(pos)))
            want = np.sort(d.encode(pos[:, j]))
            assert got.dtype == want.dtype == np.float64
            assert np.array_equal(got.view(np.int64), want.view(np.int64)), MIXED[j]


@pytest.mark.parametrize("method,grid", [("randmargins", "grids"), ("composition", "grids"),
                                         ("composition", None), ("randmargins", None)])
def test_collect_mixed_types_gives_the_numpy_rectangle(spark, method, grid):
    """Mixed Spark feature types, on grids (randmargins refines them: ties active) and on
    FloatOrder domains (None): the collect plan's rectangle is dprect.fit's."""
    df, X, y = _mixed_table(spark, 2500, seed=22)
    domains = None if grid is None else [Grid(-10.0, 10.0, 2**16), Grid(-10.0, 10.0, 256),
                                         IntegerRange(-20, 20), Grid(0.0, 2.0**54, 2**20),
                                         Grid(-10.0, 10.0, 2**10), IntegerRange(0, 1)]
    want = _numpy_fit(X, y, MIXED, domains, 7, method=method)
    got, engine = _spark_fit(df, MIXED, domains, 7, method=method, strategy="collect")
    stats = engine.stats
    assert stats["collect_jobs"] == 1 and stats["window_jobs"] == 0
    assert got.method == want.method == method
    assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)


def test_pass_plan_within_a_tiny_budget_merges_in_spark(spark):
    """A budget far below the lists: every pass serves one or two orders and merges the
    partitions' lists in Spark (the merge stage) — still the numpy engine's rectangle."""
    X, y, domains = _ties_table(3000, 6, seed=8)
    names = [f"x{j}" for j in range(6)]
    df = _frame(spark, X, y, names, partitions=4)
    want = _numpy_fit(X, y, names, domains, 9, method="randmargins")
    got, engine = _spark_fit(df, names, domains, 9, method="randmargins", strategy="pass",
                             driver_budget_mb=0.05)
    assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)
    assert engine.stats["passes"] > 3


@pytest.mark.parametrize("method", ["randmargins", "composition"])
def test_pass_plan_prefilter_in_the_jvm(spark, forced_prefilter, method):
    """With thresholds from a sample (made to apply at this size), every pass filters the
    rows in the JVM by one ``greatest`` over the orders' raw-value edges before Python
    sees them: a superset of what the kernel lists, so still the numpy engine's
    rectangle."""
    X, y, domains = _ties_table(4000, 6, seed=21)
    X[:, 1] = np.round(np.random.default_rng(3).normal(5, 2, len(X)), 2)  # a FloatOrder axis
    domains = [*domains[:1], FloatOrder(), *domains[2:]]
    names = [f"x{j}" for j in range(6)]
    df = _frame(spark, X, y, names, partitions=3)
    want = _numpy_fit(X, y, names, domains, 22, method=method)
    got, _ = _spark_fit(df, names, domains, 22, method=method, strategy="pass")
    assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)
    assert any(f not in (None, "false") for f in forced_prefilter)


def test_prefilter_keeps_every_row_an_order_can_list(spark):
    """``prefilter``'s SQL against the kernel's own test (κ ≤ T on the refined keys): every
    row some order can list passes it, on grid (refined), integer and float-order axes
    with thresholds at tie groups; and it is a real filter (rows beyond no threshold
    fail it)."""
    from dprect.core.ties import TieBreaker
    from dprect.engines.spark import order_pass
    from dprect.engines.spark import pass_kernel as kernel

    gen = np.random.default_rng(31)
    n = 3000
    X = np.column_stack([np.round(gen.uniform(0, 20, n), 1), gen.integers(0, 17, n),
                         np.round(gen.normal(0, 3, n), 2)]).astype(np.float64)
    domains = [Grid(0.0, 20.0, 64), IntegerRange(0, 16), FloatOrder()]
    ties = TieBreaker.for_domains(domains, [7, 5, 0])
    every = kernel.PassTask(tuple(domains), ties,
                            tuple(kernel.PassOrder(j, False, 1) for j in range(3)))
    batch = pa.RecordBatch.from_arrays([pa.array(X[:, j]) for j in range(3)],
                                       names=[kernel.feature_column(j) for j in range(3)])
    keys = kernel.sort_values(batch, every, None)
    orders = []
    for j in range(3):
        for hi in (True, False):
            k = kernel.order_key(keys[j], hi)
            t = np.sort(k)[n // 20]  # a threshold at a value shared by a tie group
            orders.append(kernel.PassOrder(j, hi, 10**6, int(t) if k.dtype.kind == "i"
                                           else float(t)))
    task = kernel.PassTask(tuple(domains), ties, tuple(orders))
    listable = np.zeros(n, dtype=bool)
    for o in orders:
        listable |= kernel.order_key(keys[o.axis], o.hi) <= o.threshold
    df = spark.createDataFrame(pa.table({**{kernel.feature_column(j): X[:, j]
                                            for j in range(3)},
                                         "i": np.arange(n)}).to_pandas())
    kept = np.zeros(n, dtype=bool)
    kept[[r["i"] for r in df.where(order_pass.prefilter(task)).select("i").collect()]] = True
    assert not np.any(listable & ~kept)  # a superset of what the kernel may list
    assert kept.sum() < n  # and a real filter


def test_a_plan_that_never_cuts_is_answered_on_the_shipped_rows(spark, monkeypatch):
    """Composition (no tie bits, never cuts) on ``collect``: the driver holds the shipped
    Arrow batches as they are (MatrixEngine: no encoded columns) once that bound is the
    smaller, and ``auto`` takes ``collect`` within a budget between the held bound and the
    encoded one — with the numpy engine's rectangle. RandMargins (tie bits) keeps the
    encoded columns."""
    from dprect.engines.numpy_matrix import MatrixEngine
    from dprect.engines.spark import collect

    # d = 128, 6·10^5 float32 positives: pass under the encoded bound, collect when held
    assert choose_strategy(600_000, 128, widths=[4] * 128) == "pass"
    assert choose_strategy(600_000, 128, widths=[4] * 128, held=True) == "collect"
    monkeypatch.setattr(collect, "LIST_BYTES", 1000)  # small lists: held from a few rows
    X, y, domains = _ties_table(3000, 3, seed=21)
    names = ["x0", "x1", "x2"]
    df = _frame(spark, X, y, names)
    positives = int(np.count_nonzero(y))
    held = collect.collect_bytes(positives, 3, held=True)
    assert held < collect.collect_bytes(positives, 3)
    budget = (held + collect.collect_bytes(positives, 3)) / 2 / 2**20
    for method, kind in (("composition", MatrixEngine), ("randmargins", NumpyEngine)):
        want = _numpy_fit(X, y, names, domains, 22, method=method)
        got, engine = _spark_fit(df, names, domains, 22, method=method,
                                 driver_budget_mb=budget if method == "composition" else None)
        assert engine.strategy == "collect"
        assert isinstance(engine.implementation._local, kind)
        assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)
