"""SparkEngine against NumpyEngine: encodings, windows and cuts agree exactly."""

from __future__ import annotations

import numpy as np
import pytest

from dprect import FloatOrder, Grid, IntegerRange
from dprect.engines.numpy_engine import NumpyEngine
from dprect.engines.spark import rounds as spark_rounds
from dprect.engines.spark.engine import PrefixSpec, SparkEngine, law_quantile, sort_value

EDGE_VALUES = np.array([
    -1e308, -7.25, -1.5, -1.4999999999999998, -0.0, 0.0, 5e-324, -5e-324, 0.1, 0.3,
    1.0 / 3.0, 2.4999999999999996, 2.5, 2.5000000000000004, 3.0, 1e15 + 0.5, 1e308,
])


@pytest.mark.parametrize("domain", [
    Grid(-1.5, 2.5, 7), Grid(0.0, 1.0, 2**20), Grid(-1e300, 1e300, 2**40),
    IntegerRange(-3, 4), FloatOrder(),
])
def test_sort_value_is_encode_bit_for_bit(make_frame, domain):
    df = make_frame(EDGE_VALUES[:, None], ["x"])
    got = df.select(sort_value("x", domain).alias("v")).toArrow().column("v")
    got = got.to_numpy(zero_copy_only=False)
    want = domain.encode(EDGE_VALUES)
    assert got.dtype == want.dtype
    assert np.array_equal(got.view(np.int64), want.view(np.int64))  # bits: -0.0 is +0.0


def _data(n: int = 300, seed: int = 0) -> np.ndarray:
    gen = np.random.default_rng(seed)
    X = np.column_stack([
        np.round(gen.normal(size=n), 1),                # heavy ties
        gen.normal(size=n),                              # distinct
        gen.integers(-5, 6, size=n).astype(np.float64),  # integers
    ])
    X[:7, 1] = -0.0
    X[7:12, 1] = 0.0
    X[20:40] = X[0]  # duplicate rows
    return X


DOMAINS = [Grid(-2.0, 2.0, 40), FloatOrder(), IntegerRange(-4, 4)]
NAMES = ["a", "b c", "d.e"]  # a space and a dot: names are quoted

SCRIPT = [  # (axis, side, stop, size, cut threshold index or None)
    (0, "hi", 30, 10, 30), (1, "lo", 100, 25, None), (1, "lo", 60, 60, -0.5),
    (2, "hi", 500, 40, 2), (0, "lo", 3000, 100, 5), (1, "hi", 12, 5, 0.0),
    (2, "lo", 1, 1, -2), (0, "hi", 250, 250, None), (1, "lo", 10**6, 10, None),
]


@pytest.mark.parametrize(("plan", "prefix"), [
    ("rounds", None), ("prefetch", None), ("prefetch", 3), ("prefetch", 40),
])
def test_window_and_cut_match_numpy(make_frame, plan, prefix):
    X = _data()
    ref = NumpyEngine.from_features(X, DOMAINS)
    df = make_frame(X, NAMES, partitions=3)
    with SparkEngine(df, DOMAINS, NAMES, strategy=plan, prefix=prefix) as eng:
        assert eng.dims == 3
        for axis, side, stop, size, cut in SCRIPT:
            want = np.sort(ref.window(axis, side, stop, size))
            got = np.sort(eng.window(axis, side, stop, size))
            assert got.dtype == want.dtype
            assert np.array_equal(got.view(np.int64), want.view(np.int64)), (axis, side, stop)
            if cut is not None:
                ref.cut(axis, side, cut)
                eng.cut(axis, side, cut)
        if plan == "prefetch":
            assert eng.stats["prefetch_jobs"] == 1
            if prefix == 3:
                assert eng.stats["fallbacks"] > 0  # short lists: answered by jobs instead


def test_prefetch_lists_that_miss_a_cut_axis_fall_back(make_frame):
    X = _data(120, seed=3)
    ref = NumpyEngine.from_features(X, DOMAINS)
    specs = [PrefixSpec(0, "hi", 50, (0,)), PrefixSpec(1, "lo", 50, (1,))]
    with SparkEngine(make_frame(X, NAMES), DOMAINS, NAMES, strategy="prefetch",
                     prefix=specs) as eng:
        first = eng.window(0, "hi", 5, 5)  # triggers the prefetch
        assert np.array_equal(np.sort(first), np.sort(ref.window(0, "hi", 5, 5)))
        ref.cut(2, "hi", 1)
        eng.cut(2, "hi", 1)  # after the prefetch; axis 2 is carried by no list
        for axis, side in [(0, "hi"), (1, "lo"), (2, "lo")]:
            assert np.array_equal(np.sort(eng.window(axis, side, 30, 20)),
                                  np.sort(ref.window(axis, side, 30, 20)))
        assert eng.stats["fallbacks"] == 3


def test_large_windows_count_then_take_the_cheaper_end(make_frame, monkeypatch):
    monkeypatch.setattr(spark_rounds, "TOP_N_ROWS", 5)  # exercise the >1M-row paths
    X = _data(80, seed=5)
    ref = NumpyEngine.from_features(X, DOMAINS)
    with SparkEngine(make_frame(X, NAMES), DOMAINS, NAMES, strategy="rounds") as eng:
        ref.cut(1, "hi", 1.0)
        eng.cut(1, "hi", 1.0)
        for axis, side, stop, size in [(0, "hi", 50, 20), (0, "lo", 90, 30), (2, "hi", 10**9, 10),
                                       (1, "lo", 8, 4), (1, "hi", 70, 69), (0, "lo", 500, 3)]:
            want = np.sort(ref.window(axis, side, stop, size))
            assert np.array_equal(np.sort(eng.window(axis, side, stop, size)), want)


def test_empty_positives(make_frame):
    X = np.empty((0, 3))
    ref = NumpyEngine.from_features(X, DOMAINS)
    for plan in ("rounds", "prefetch"):
        with SparkEngine(make_frame(X, NAMES), DOMAINS, NAMES, strategy=plan) as eng:
            for axis in range(3):
                got = eng.window(axis, "hi", 10, 5)
                assert len(got) == 0 and got.dtype == ref.window(axis, "hi", 10, 5).dtype


def test_law_quantile_is_the_tail_quantile():
    from dprect.core.margins import LaplaceLaw, StaircaseLaw

    for law in (StaircaseLaw(10, "1/2"), StaircaseLaw(7, "1/100"), LaplaceLaw(5, 1e-3)):
        for miss in (0.5, 1e-2, 1e-5):
            q = law_quantile(law, miss)
            assert law.tail(q + 1) <= miss
            assert q == law.size or law.tail(q) > miss


# -- the prefetch pass: per-partition top-K, pruning by a sample, exact either way ----------
def test_topk_keeps_a_prefix_and_merging_parts_is_exact():
    from dprect.engines.spark import topk

    gen = np.random.default_rng(7)
    x = np.round(gen.normal(size=5000), 1)  # many ties
    other = gen.normal(size=5000)
    for hi in (False, True):
        order = topk.Order(0, hi, 300, (0, 1))
        whole = topk.TopK(order)
        parts = [topk.TopK(order) for _ in range(4)]
        for i, chunk in enumerate(np.array_split(np.arange(5000), 23)):
            whole.add({0: x[chunk], 1: other[chunk]})
            parts[i % 4].add({0: x[chunk], 1: other[chunk]})
        merged = topk.TopK(order)
        for p in parts:
            merged.add(p.result())
        want = np.sort(-x if hi else x)[:300]
        for got in (whole.result(), merged.result()):
            key = -got[0] if hi else got[0]
            assert np.array_equal(np.sort(key), want)  # the same multiset of values
            # rows travel whole: every kept (x, other) pair is a row of the input
            pairs = set(zip(x.tolist(), other.tolist(), strict=True))
            assert all(p in pairs for p in zip(got[0].tolist(), got[1].tolist(), strict=True))


#: DIRECT_CELLS values: the default (rows reach the driver directly), and so small that a
#: partition always exceeds its share (the top-K then runs in Spark's Python workers)
DIRECT, IN_WORKERS = None, 1


def _route(monkeypatch, cells: int | None) -> int:
    """Set the pass's route; return the value stats["direct"] must then have."""
    from dprect.engines.spark import prefetch

    if cells is not None:
        monkeypatch.setattr(prefetch, "DIRECT_CELLS", cells)
    return int(cells is None)


@pytest.mark.parametrize("hint", [1, 300, 10**7])  # right, and badly wrong either way
@pytest.mark.parametrize("sorted_rows", [False, True])  # a sample that is not representative
@pytest.mark.parametrize("cells", [DIRECT, IN_WORKERS])
def test_pruned_prefetch_is_exact_whatever_the_sample(make_frame, monkeypatch, hint,
                                                      sorted_rows, cells):
    from dprect.engines.spark import prefetch

    direct = _route(monkeypatch, cells)
    monkeypatch.setattr(prefetch, "SAMPLE_ROWS", 60)
    monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(prefetch, "SAMPLE_MIN_RANK", 2)
    X = _data(300, seed=11)
    if sorted_rows:
        X = X[np.argsort(X[:, 0], kind="stable")]
    ref = NumpyEngine.from_features(X, DOMAINS)
    df = make_frame(X, NAMES, partitions=1 if sorted_rows else 3)
    with SparkEngine(df, DOMAINS, NAMES, strategy="prefetch", prefix=25, size_hint=hint) as eng:
        for axis, side, stop, size, cut in SCRIPT:
            want = np.sort(ref.window(axis, side, stop, size))
            got = np.sort(eng.window(axis, side, stop, size))
            assert np.array_equal(got.view(np.int64), want.view(np.int64)), (axis, side, stop)
            if cut is not None:
                ref.cut(axis, side, cut)
                eng.cut(axis, side, cut)
        # a hint of 1 row asks for more sample ranks than the sample has: no pruning
        assert eng.stats["pruned"] == (hint > 1) and eng.stats["prefetch_jobs"] == 1
        assert eng.stats["direct"] == direct


def test_prefetch_merges_in_spark_when_lists_are_large(make_frame, monkeypatch):
    from dprect.engines.spark import prefetch

    assert _route(monkeypatch, IN_WORKERS) == 0
    monkeypatch.setattr(prefetch, "MERGE_CELLS", 10)  # force the merge stage
    X = _data(200, seed=13)
    ref = NumpyEngine.from_features(X, DOMAINS)
    with SparkEngine(make_frame(X, NAMES, partitions=4), DOMAINS, NAMES, strategy="prefetch",
                     prefix=30) as eng:
        for axis, side in [(0, "hi"), (1, "lo"), (2, "hi")]:
            assert np.array_equal(np.sort(eng.window(axis, side, 30, 30)),
                                  np.sort(ref.window(axis, side, 30, 30)))
        assert eng.stats["fallbacks"] == 0 and eng.stats["direct"] == 0


def test_direct_pass_ships_each_partition_up_to_its_share(spark):
    from dprect.engines.spark import prefetch

    df = spark.range(0, 30, numPartitions=3)  # 10 rows in each partition; 1 column + _id
    whole = prefetch._collect_within_shares(df, 3, cells=10 * 2 * 3)  # share: 10 rows
    assert whole is not None
    assert sorted(whole.column("id").to_pylist()) == list(range(30))
    assert prefetch._collect_within_shares(df, 3, cells=9 * 2 * 3) is None  # share: 9


@pytest.mark.parametrize("cells", [DIRECT, IN_WORKERS])
def test_problem_rows_are_reported_by_the_pass(make_frame, monkeypatch, cells):
    _route(monkeypatch, cells)
    X = _data(50, seed=17)
    df = make_frame(X, NAMES)
    seen = []
    for plan in PLANS_UNDER_TEST:
        with SparkEngine(df, DOMAINS, NAMES, strategy=plan, problem="a > 1.5",
                         on_problem=lambda p=plan: seen.append(p)) as eng:
            eng.prepare()
        with SparkEngine(df, DOMAINS, NAMES, strategy=plan, problem="a > 99.0",
                         on_problem=lambda: seen.append("wrong")) as eng:
            eng.prepare()
    assert seen == list(PLANS_UNDER_TEST)


PLANS_UNDER_TEST = ("rounds", "prefetch")


@pytest.mark.parametrize("cells", [DIRECT, IN_WORKERS])
@pytest.mark.parametrize("problem", [None, "a > 1.5", "a > 100.0"])
def test_the_prefetch_pass_counts_every_row_learned_from(make_frame, monkeypatch, cells,
                                                         problem):
    """``count_first``: the pruned pass (it ships far fewer rows than it reads) counts
    every row ``positive`` selects — not the rows it keeps — in the same job, the count a
    job over the same predicate gives (issue #43); step 3 adds nothing to it; its windows
    are still the numpy engine's (problem rows, reported, are never listed: not compared).
    Problem rows pass the counting filter too: where the pass sees one (``a > 1.5``; a fit
    stops there) it does not count; where it sees none, its count is exact.
    With ties (a window below the count) it does not count: :attr:`SparkEngine.counts`
    says so, :meth:`SparkEngine.remaining` refuses, and the fit counts with a job."""
    from dprect.core.errors import ParameterError
    from dprect.core.ties import TieBreaker
    from dprect.engines.spark import prefetch

    direct = _route(monkeypatch, cells)
    monkeypatch.setattr(prefetch, "SAMPLE_ROWS", 60)
    monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(prefetch, "SAMPLE_MIN_RANK", 2)
    X = _data(300, seed=19)
    X[5, 1] = np.nan  # a positive that the predicate drops
    df = make_frame(X, NAMES, partitions=3)
    positive = "(a > -1.0) AND (abs(`b c`) < 'Infinity')"
    learned = int(((X[:, 0] > -1.0) & (np.abs(X[:, 1]) < np.inf)).sum())
    assert learned == df.where(positive).count() and learned < len(X)
    keep = (X[:, 0] > -1.0) & np.isfinite(X[:, 1])
    ref = NumpyEngine.from_features(X[keep], DOMAINS)
    with SparkEngine(df, DOMAINS, NAMES, strategy="prefetch", prefix=10, size_hint=len(X),
                     positive=positive, problem=problem, count_first=True,
                     on_problem=lambda: None) as eng:
        assert not eng.counts  # nothing counted before the pass
        eng.prepare()
        assert eng.stats["pruned"] == 1 and eng.stats["direct"] == direct
        seen = problem is not None and bool((X[:, 0] > float(problem.split()[-1])).any())
        assert eng.counts == (not seen)
        if not seen:
            assert eng.remaining() == learned
        for axis, side in [] if seen else [(0, "hi"), (1, "lo"), (2, "hi")]:
            assert np.array_equal(np.sort(eng.window(axis, side, 10, 10)),
                                  np.sort(ref.window(axis, side, 10, 10)))
    ties = TieBreaker.for_domains(DOMAINS, (4, 0, 0))
    with SparkEngine(df, DOMAINS, NAMES, strategy="prefetch", prefix=10, size_hint=len(X),
                     positive=positive, count_first=True, ties=ties) as eng:
        eng.prepare()
        assert not eng.counts
        with pytest.raises(ParameterError):
            eng.remaining()


@pytest.mark.parametrize("policy", ["drop", "error"])
def test_the_prefetch_pass_counts_from_the_label_count(make_frame, monkeypatch, policy):
    """``count_first`` with the fit's label count (``labels``, issue #43): under ``drop``
    the rows learned from (the labelled rows less those with a NaN or ±inf feature, the
    count a job over ``positive`` gives) are counted by the pass's first filter itself —
    its own row metric (``filter_rows``), inside whole-stage code generation: no observed
    node (``CollectMetrics``) in the pass, as there was (it counted the dropped rows
    beside the label count). Under ``error`` the label count is the count, read from no
    metric (ties too). With ties under ``drop`` nothing is counted. The windows stay the
    numpy engine's."""
    from dprect.core.ties import TieBreaker
    from dprect.engines.spark import prefetch
    from dprect.engines.spark.checks import TableChecks

    monkeypatch.setattr(prefetch, "SAMPLE_ROWS", 60)
    monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(prefetch, "SAMPLE_MIN_RANK", 2)
    read: list[tuple[str, int | None]] = []
    real = prefetch.filter_rows

    def spy(frame, mark=prefetch.LEARNED_MARK):
        got = real(frame, mark)
        read.append((frame._jdf.queryExecution().executedPlan().toString(), got))
        return got

    monkeypatch.setattr(prefetch, "filter_rows", spy)
    X = _data(600, seed=23)
    y = (np.arange(600) % 3 != 0).astype(int)
    if policy == "drop":
        X[[4, 7, 9], [1, 0, 2]] = [np.nan, np.inf, -np.inf]  # 4 and 7 labelled, 9 not
    df = make_frame(X, NAMES, y=y, partitions=3)
    checks = TableChecks(df, NAMES, "y", invalid_rows=policy, positive_label=1)
    keep = (y == 1) & np.isfinite(X).all(axis=1)
    assert int(keep.sum()) == df.where(checks.positive).count()
    labels = checks.label_count(checks.count_positives())
    assert labels.rows == int((y == 1).sum())
    ref = NumpyEngine.from_features(X[keep], DOMAINS)
    for ties in (None, TieBreaker.for_domains(DOMAINS, (4, 0, 0))):
        read.clear()
        with SparkEngine(df, DOMAINS, NAMES, strategy="prefetch", prefix=10,
                         size_hint=len(X), positive=checks.positive, problem=checks.problem,
                         count_first=True, labels=labels, ties=ties,
                         on_problem=checks.raise_invalid_feature) as eng:
            eng.prepare()
            assert eng.stats["pruned"] == 1
            if policy == "drop" and ties is not None:  # a window above: not counted
                assert read == [] and not eng.counts
                continue
            assert eng.remaining() == int(keep.sum())
            if ties is None:
                for axis, side in [(0, "hi"), (1, "lo"), (2, "hi")]:
                    assert np.array_equal(np.sort(eng.window(axis, side, 10, 10)),
                                          np.sort(ref.window(axis, side, 10, 10)))
        if policy == "error":
            assert read == []
        else:  # the first filter's own count, in a pass with no observed node
            assert len(read) == 1 and read[0][1] == int(keep.sum())
            assert "CollectMetrics" not in read[0][0]


@pytest.mark.parametrize("in_workers", [False, True])
@pytest.mark.parametrize("bits", [None, (4, 0, 0), (0, 4, 0)],
                         ids=["untied", "refined", "tied-unrefined"])
def test_prefetch_lists_hold_only_rows_beyond_their_own_threshold(make_frame, monkeypatch,
                                                                  bits, in_workers):
    """A table stored sorted by a feature: the sample (its first rows) puts that axis's
    ``lo`` threshold where far fewer rows than the list's length lie beyond it. The rows
    shipped for the other orders lie behind them in that order but are not its next
    rows, so each order is offered only the rows beyond its own threshold (the pass's
    per-order mask, ``topk.OWN``) — a shorter prefix, a window past it falling back to a
    job — and answers as the numpy engine: on an untied axis (by value), on a refined
    one (by refined sort value) and on a tied, unrefined one (by sort value). Before, the
    list was filled with those rows: the windows differed. ``in_workers``: the same with
    the top K taken in Spark's Python workers (step 3)."""
    from dprect.core.ties import TieBreaker
    from dprect.engines.spark import prefetch

    monkeypatch.setattr(prefetch, "SAMPLE_ROWS", 200)
    monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
    if in_workers:
        monkeypatch.setattr(prefetch, "DIRECT_CELLS", 1)
    X = np.round(np.random.default_rng(31).normal(size=(6000, 3)), 2)  # ties
    X = X[np.argsort(X[:, 0], kind="stable")]  # the first rows hold the smallest x0
    doms = [FloatOrder()] * 3
    ties = None if bits is None else TieBreaker.for_domains(doms, bits)
    df = make_frame(X, ["a", "b", "c"])  # not repartitioned: stored in that order
    ref = NumpyEngine.from_features(X, doms)
    if ties is not None:
        ref.set_ties(ties)
    with SparkEngine(df, doms, ["a", "b", "c"], strategy="prefetch", prefix=100,
                     size_hint=len(X), ties=ties) as eng:
        for axis, side in [(0, "lo"), (0, "hi"), (1, "lo"), (2, "hi")]:
            want = np.sort(ref.window(axis, side, 100, 100))
            got = np.sort(eng.window(axis, side, 100, 100))
            assert got.dtype == want.dtype
            assert np.array_equal(got.view(np.int64), want.view(np.int64)), (axis, side)
        assert eng.stats["pruned"] == 1 and eng.stats["prefetch_jobs"] == 1
        assert eng.stats["direct"] == int(not in_workers)
        assert eng.stats["fallbacks"] >= 1  # (0, lo): its list is short


def test_packed_own_bits_offer_each_order_its_own_rows(make_frame):
    """``topk.own_sql`` packs 40 predicates into two bigint columns (bits 0…31 and 0…7,
    bit 31 included) and ``partition_top`` offers order i exactly the rows of predicate
    i (row i: ``x = i``; a null predicate counts as false), however many rows the other
    orders have."""
    from dprect.engines.spark import topk

    df = make_frame(np.arange(40, dtype=np.float64)[:, None], ["x"])
    preds = [f"x = {i}" for i in range(39)] + ["CAST(NULL AS BOOLEAN)"]
    packed = topk.own_sql(preds)
    assert [name for _, name in packed] == ["_w0", "_w1"]
    table = df.selectExpr("x AS _x0", *(f"{e} AS {n}" for e, n in packed)).toArrow()
    assert table.column("_w0").type == table.column("_w1").type  # int64
    orders = [topk.Order(0, False, 5, (0,)) for _ in preds]
    out = next(topk.partition_top(iter(table.to_batches()), orders, [0]))
    tags = out.column(topk.ORDER).to_numpy()
    values = out.column(topk.value_column(0)).to_numpy()
    for i in range(39):
        assert values[tags == i].tolist() == [float(i)]
    assert not (tags == 39).any()


def test_the_kernels_own_threshold_predicate_is_sparks(spark):
    """Without ties the pass ships no per-order bits: the top-K kernel evaluates each
    order's own predicate (``x >= t`` on ``hi``, ``x <= t`` on ``lo``) on the shipped
    float64 values itself (``topk.beyond``). It must hold on exactly the rows Spark's
    comparison does — NaN equal to NaN and above every number, −0.0 equal to 0.0, a
    null never — for every threshold, NaN and ±0.0 included."""
    from pyspark.sql import types as T  # noqa: N812

    from dprect.core.sql_text import literal
    from dprect.engines.spark import topk

    values = [float("nan"), -0.0, 0.0, 1.5, -1.5, float("inf"), float("-inf"), None, 2.0]
    df = spark.createDataFrame([(v,) for v in values],
                               T.StructType([T.StructField("x", T.DoubleType(), True)]))
    for t in [float("nan"), -0.0, 0.0, 1.5, float("inf"), float("-inf")]:
        for hi in (False, True):
            op = ">=" if hi else "<="
            table = df.selectExpr("x AS _x0", f"coalesce(x {op} {literal(t)}, false) AS want"
                                  ).toArrow()
            got = topk.beyond(table.column("_x0").combine_chunks(), t, hi)
            want = table.column("want").to_numpy(zero_copy_only=False)
            assert got.tolist() == want.tolist(), (t, op)


@pytest.mark.parametrize("bits", [None, (0, 4, 0)], ids=["untied", "tied"])
def test_an_untied_pass_ships_no_per_order_bits(make_frame, monkeypatch, bits):
    """The untied pass's query computes no per-order bits (``_w0``: one ``CASE WHEN``
    per order, most of the query's optimisation at d = 8) — the kernel evaluates the
    predicates (``topk.beyond``); the tied pass still ships them (its predicates are on
    sort values). Both answer as the numpy engine."""
    from dprect.core.ties import TieBreaker
    from dprect.engines.spark import prefetch

    monkeypatch.setattr(prefetch, "SAMPLE_ROWS", 200)
    monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
    shipped: list[list[str]] = []
    real = prefetch._collect_within_shares

    def spy(passed, *args, **kwargs):
        shipped.append(list(passed.columns))
        return real(passed, *args, **kwargs)

    monkeypatch.setattr(prefetch, "_collect_within_shares", spy)
    X = np.round(np.random.default_rng(37).normal(size=(3000, 3)), 2)
    doms = [FloatOrder()] * 3
    ties = None if bits is None else TieBreaker.for_domains(doms, bits)
    df = make_frame(X, ["a", "b", "c"], partitions=2)
    ref = NumpyEngine.from_features(X, doms)
    if ties is not None:
        ref.set_ties(ties)
    with SparkEngine(df, doms, ["a", "b", "c"], strategy="prefetch", prefix=50,
                     size_hint=len(X), ties=ties) as eng:
        for axis, side in [(0, "lo"), (1, "hi"), (2, "lo")]:
            want = np.sort(ref.window(axis, side, 50, 50))
            assert np.array_equal(np.sort(eng.window(axis, side, 50, 50)), want)
        assert eng.stats["pruned"] == 1 and eng.stats["fallbacks"] == 0
    assert len(shipped) == 1
    assert ("_w0" in shipped[0]) == (ties is not None)
