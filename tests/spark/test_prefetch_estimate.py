"""No round of the labels before the ``prefetch`` pass (issue #43, the d = 8 scan-limit fit).

A pending ``auto`` plan on a table whose Parquet footers say ``auto`` may take ``prefetch``
takes the pass's sample alone (its rows numbered), estimates the positives from it and
the footers, and — where every choice made on that estimate is safe — runs no label count
before the pass: the pass counts the labelled rows itself (the marked filter's metric,
``prefetch.filter_rows``), exactly, so the drawn count and the rectangle are the numpy
engine's. Where the estimate cannot be trusted with a choice (``collect`` on a table
whose rows would not fit, ties below a shuffle), the label count runs as before.
"""

from __future__ import annotations

import math
import warnings
from functools import partial

import numpy as np
import pytest

import dprect
from dprect import Grid

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NAMES = [f"x{j}" for j in range(8)]
GRID = [Grid(-100.0, 100.0, 2**20)] * 8


def _table(n: int = 3000, seed: int = 10) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    X = gen.normal(size=(n, 8))
    X[gen.integers(0, n, size=5), gen.integers(0, 8, size=5)] = np.nan  # dropped rows
    X[7, 3] = np.inf
    y = (gen.uniform(size=n) < 0.7).astype(int)
    return X, y


def _parquet(spark, tmp_path, X, y, partitions=3):
    """The table written as Parquet (``partitions`` files) and read back: a plain read."""
    from pyspark.sql import types as T  # noqa: N812

    fields = [T.StructField(n, T.DoubleType(), True) for n in NAMES]
    fields.append(T.StructField("y", T.IntegerType(), False))
    rows = [(*map(float, r), int(v)) for r, v in zip(X, y, strict=True)]
    path = str(tmp_path / "t.parquet")
    spark.createDataFrame(rows, T.StructType(fields)).repartition(partitions) \
        .write.parquet(path)
    return spark.read.parquet(path)


def test_file_rows_reads_the_footers_of_a_plain_parquet_read(spark, tmp_path, make_frame):
    """The row count of a plain Parquet read (projections kept) from its footers; None for
    a filtered read, an in-memory frame or another format."""
    from dprect.engines.spark.file_rows import file_rows

    X, y = _table(500)
    df = _parquet(spark, tmp_path, X, y)
    assert file_rows(df) == 500
    assert file_rows(df.select("x1", "y")) == 500
    assert file_rows(df.where("x1 > 0")) is None
    assert file_rows(make_frame(X, NAMES, y=y)) is None
    df.write.csv(str(tmp_path / "t.csv"))
    assert file_rows(spark.read.csv(str(tmp_path / "t.csv"))) is None


def test_sampled_positives():
    """A short sample is every selected row (exact); a full one scales the rows by its
    share of the rows read in each partition it reached."""
    from dprect.engines.spark import prefetch

    assert prefetch.sampled_positives(np.arange(17, dtype=np.int64), 10**9) == 17
    m = prefetch.SAMPLE_ROWS
    one = np.arange(m, dtype=np.int64) * 4  # every 4th row of partition 0: rows 0 … 4m − 4
    assert prefetch.sampled_positives(one, 1000 * m) == 1000 * m * m // (4 * m - 3) + 1
    two = np.concatenate([one[: m // 2], (1 << 33) + one[: m // 2]])  # two partitions
    assert prefetch.sampled_positives(two, 4 * m) == pytest.approx(m, rel=0.01)


@pytest.mark.parametrize("shape", ["plain", "filtered", "nulls", "shuffled"])
def test_the_prefetch_pass_counts_the_labelled_rows_itself(spark, tmp_path, monkeypatch,
                                                            make_frame, shape):
    """``count_first`` with a label count the pass makes itself (``LabelCount.rows``
    None): the marked filter's metric is the labelled rows of the frame — under a read's
    own filter too, and above the frame's own shuffle (its label conjunct pushed below
    it) — and the rows learned from are those minus the dropped ones, the
    count a job over ``positive`` gives, in the pass's one job. With ties (a window below
    the count) it does not count: :attr:`SparkEngine.counts` says so."""
    from dprect.core.ties import TieBreaker
    from dprect.engines.spark import prefetch
    from dprect.engines.spark.checks import TableChecks
    from dprect.engines.spark.engine import SparkEngine

    monkeypatch.setattr(prefetch, "SAMPLE_ROWS", 60)
    monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(prefetch, "SAMPLE_MIN_RANK", 2)
    X, y = _table(900, seed=23)
    if shape == "nulls":
        X[11, 2] = np.nan  # read back as NaN; nulls below
    df = (make_frame(X, NAMES, y=y, partitions=3) if shape == "shuffled"
          else _parquet(spark, tmp_path, X, y))
    if shape == "filtered":
        df = df.where("x0 > -1.0")
    if shape == "nulls":
        df = df.selectExpr(*[f"CASE WHEN x1 > 1.5 THEN NULL ELSE {n} END AS {n}"
                             if n == "x1" else n for n in NAMES], "y")
    checks = TableChecks(df, NAMES, "y", invalid_rows="drop", positive_label=1)
    learned = df.where(checks.positive).count()
    assert 0 < learned < df.where("y = 1").count()  # some labelled rows are dropped
    for ties in (None, TieBreaker.for_domains(GRID, (4,) + (0,) * 7)):
        with SparkEngine(df, GRID, NAMES, strategy="prefetch", prefix=10, size_hint=900,
                         positive=checks.positive, count_first=True, ties=ties,
                         labels=checks.label_count(None)) as eng:
            eng.prepare()
            assert eng.stats["pruned"] == 1
            assert eng.counts == (ties is None)
            if ties is None:
                assert eng.remaining() == learned


def test_a_hint_above_the_count_gathers_once_more(make_frame, monkeypatch):
    """An estimated hint (the pass counts the labels itself) sets thresholds from the
    estimate less a margin (``ESTIMATE_SLACK``); where that is still above the rows the
    pass counts (a sample whose first rows are not like the rest: here 100× too many),
    its thresholds were tighter than the count's would have been, so the pass gathers
    once more with its count as the hint, and the lists answer as the numpy engine —
    thresholds that tight leave an order fewer rows beyond its own threshold than its
    list's length. The count is the first pass's, exact. An estimate below the count
    gathers once."""
    from dprect.engines.numpy_engine import NumpyEngine
    from dprect.engines.spark import prefetch
    from dprect.engines.spark.checks import TableChecks
    from dprect.engines.spark.engine import SparkEngine

    monkeypatch.setattr(prefetch, "SAMPLE_ROWS", 60)
    monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(prefetch, "SAMPLE_MIN_RANK", 1)
    X, y = _table(900, seed=29)
    df = make_frame(X, NAMES, y=y, partitions=3)
    checks = TableChecks(df, NAMES, "y", invalid_rows="drop", positive_label=1)
    keep = (y == 1) & np.isfinite(X).all(axis=1)
    ref = NumpyEngine.from_features(X[keep], GRID)
    for hint, jobs in [(100 * 900, 2), (600, 1)]:
        with SparkEngine(df, GRID, NAMES, strategy="prefetch", prefix=40, size_hint=hint,
                         positive=checks.positive, count_first=True,
                         labels=checks.label_count(None)) as eng:
            eng.prepare()
            assert eng.stats["prefetch_jobs"] == jobs and eng.stats["pruned"] == 1
            assert eng.remaining() == int(keep.sum())
            for axis, side in [(0, "hi"), (1, "lo"), (5, "hi")]:
                assert np.array_equal(np.sort(eng.window(axis, side, 40, 40)),
                                      np.sort(ref.window(axis, side, 40, 40)))
            assert eng.stats["fallbacks"] == 0


@pytest.fixture
def label_count(monkeypatch) -> list[int]:
    """Every label count job (``count_positives``) recorded; no count job of its own
    allowed (``count_learned``); the pass's sample of 100 rows, pruning from any hint."""
    from dprect.engines.spark import prefetch
    from dprect.engines.spark.checks import TableChecks

    monkeypatch.setattr(prefetch, "SAMPLE_ROWS", 100)
    monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
    jobs: list[int] = []
    real = TableChecks.count_positives

    def counted(self):
        jobs.append(1)
        return real(self)

    def no_job(self):
        raise AssertionError("a count job")

    monkeypatch.setattr(TableChecks, "count_positives", counted)
    monkeypatch.setattr(TableChecks, "count_learned", no_job)
    return jobs


def _fit(df, monkeypatch, *, min_values: int, seed: int = 11):
    """``prepare_fit`` + ``run`` under ``auto`` on ``df``, with ``auto`` taking
    ``prefetch`` above ``min_values`` positive values: the result and the engine."""
    from dprect.engines.spark import chooser
    from dprect.engines.spark.fit import prepare_fit

    monkeypatch.setattr(chooser, "PREFETCH_MIN_VALUES", min_values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with prepare_fit(df, features=NAMES, label="y", grid=GRID, epsilon=1.0,
                         delta=1e-6) as prepared:
            assert prepared.plan.pending
            got = prepared.run(seed=seed)
            return got, prepared.engine


def _same(a, b) -> None:
    assert a.parameters["positives_noisy"] == b.parameters["positives_noisy"]
    assert a.method == b.method
    assert (a.lower_index, a.upper_index) == (b.lower_index, b.upper_index)


def test_no_label_count_before_the_prefetch_pass(spark, tmp_path, monkeypatch, label_count):
    """The estimate says ``prefetch``: no label count job at all — the pass counts the
    labelled rows and the dropped ones in its own job — and the numpy engine's count and
    rectangle."""
    X, y = _table()
    want = dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=11, features=NAMES, grid=GRID)
    got, engine = _fit(_parquet(spark, tmp_path, X, y), monkeypatch, min_values=0)
    assert label_count == []
    assert engine is not None and engine.strategy == "prefetch"
    assert engine.stats["prefetch_jobs"] == 1 and engine.stats["pruned"] == 1
    _same(got, want)


def test_collect_on_the_estimate_only_where_the_table_fits(spark, tmp_path, monkeypatch,
                                                           label_count):
    """The footers' rows say ``auto`` may take ``prefetch``, the estimate says
    ``collect``: taken without a label count where the table's rows themselves fit the
    driver budget (the positives are no more), else the label count decides, as before.
    The numpy engine's count and rectangle either way."""
    from dprect.engines.spark import fit as fit_module

    X, y = _table()
    want = dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=11, features=NAMES, grid=GRID)
    df = _parquet(spark, tmp_path, X, y)
    between = 8 * 2600  # rows × d above it, the estimated positives × d below
    got, engine = _fit(df, monkeypatch, min_values=between)
    assert label_count == [] and engine.strategy == "collect"
    _same(got, want)
    monkeypatch.setattr(fit_module, "collect_fits", lambda *args, **kwargs: False)
    got, engine = _fit(df, monkeypatch, min_values=between)
    assert label_count == [1]
    _same(got, want)


def test_a_plain_frame_counts_its_labels_first(spark, make_frame, monkeypatch, label_count):
    """Without footers (an in-memory frame) nothing is estimated: the label count runs
    beside the sample, as before."""
    X, y = _table()
    want = dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=11, features=NAMES, grid=GRID)
    got, _ = _fit(make_frame(X, NAMES, y=y, partitions=3), monkeypatch, min_values=0)
    assert label_count == [1]
    _same(got, want)


@pytest.mark.parametrize("kind", ["numeric", "string", "boolean", "no checks"])
def test_the_files_sample_is_the_spark_sample_on_one_file(spark, tmp_path, monkeypatch,
                                                           kind):
    """The driver's read of the pass's sample (``file_sample``, no Spark job) on one
    Parquet file read in one split: the same rows, in the same order, as the Spark
    sample's ``limit`` (the first rows learned from: the positive label, every feature
    finite under ``drop``), and the same estimate of the positives. The engine's
    ``presample`` takes either reader's record by one path: the files' read, or the
    Spark sample where the reader answers None or none is given — the same sample and
    estimate, so the same thresholds."""
    from pyspark.sql import types as T  # noqa: N812

    from dprect.engines.spark import prefetch
    from dprect.engines.spark.checks import TableChecks
    from dprect.engines.spark.engine import SparkEngine
    from dprect.engines.spark.file_sample import file_sample
    from dprect.engines.spark.prefetch import PrefixSpec, sampled_positives, take_sample

    monkeypatch.setattr(prefetch, "SAMPLE_ROWS", 100)
    X, y = _table(900, seed=31)
    X[3, 1] = -np.inf
    label: object
    if kind == "string":
        labels, ltype, label = [("yes" if v else "no") for v in y], T.StringType(), "yes"
    elif kind == "boolean":
        labels, ltype, label = [bool(v) for v in y], T.BooleanType(), True
    else:
        labels, ltype, label = [int(v) for v in y], T.IntegerType(), 1
    fields = [T.StructField(n, T.DoubleType(), True) for n in NAMES]
    fields.append(T.StructField("y", ltype, True))
    rows = [(*map(float, r), v) for r, v in zip(X, labels, strict=True)]
    path = str(tmp_path / "one.parquet")
    spark.createDataFrame(rows, T.StructType(fields)).coalesce(1).write.parquet(path)
    df = spark.read.parquet(path)
    assert df.rdd.getNumPartitions() == 1
    checks = TableChecks(df, NAMES, "y", positive_label=label,
                         invalid_rows=None if kind == "no checks" else "drop")
    ids: list[np.ndarray] = []
    want = take_sample(df, {j: n for j, n in enumerate(NAMES)},
                       [PrefixSpec(0, "lo", 1, tuple(range(8)))], positive=checks.positive,
                       ids=ids)
    got = file_sample(df, NAMES, "y", checks.label_kind, checks.positive_label, 100, 900,
                      finite=checks.dropped is not None)
    assert got is not None
    sample = got.values
    for j in range(8):
        np.testing.assert_array_equal(sample[j], want[j])
    assert len(sample[0]) == 100
    finite = bool(np.isfinite(np.stack([sample[j] for j in range(8)])).all())
    assert finite == (kind != "no checks")  # rows 3 and 7 hold ±inf, some rows NaN
    assert got.estimate == sampled_positives(ids[0], 900)
    assert got.estimate < 900  # a full sample: scaled, not every row
    # the engine takes either reader's record the same way: the same sample, estimate
    reader = partial(file_sample, df, NAMES, "y", checks.label_kind, checks.positive_label,
                     finite=checks.dropped is not None)
    taken = []
    for read in (reader, lambda limit, rows: None, None):  # None: the Spark sample
        eng = SparkEngine(df, GRID, NAMES, positive=checks.positive)
        presampled = eng.presample(maybe=True, rows=900, read=read)
        assert presampled is not None
        taken.append((presampled[0], eng.estimate))
    for values, estimate in taken:
        assert estimate == got.estimate
        for j in range(8):
            np.testing.assert_array_equal(values[j], want[j])


def test_the_files_sample_declines_other_frames(spark, tmp_path, make_frame):
    """No driver-side sample (None: the Spark sample runs) for a filtered read, a read
    whose columns are renamed, an in-memory frame, or a column the files lack."""
    from dprect.engines.spark.file_sample import file_sample

    X, y = _table(300)
    df = _parquet(spark, tmp_path, X, y)

    def read(frame, names=NAMES):
        return file_sample(frame, names, "y", "numeric", 1.0, 50, finite=True)

    assert read(df) is not None
    assert read(df.select(*NAMES, "y")) is not None
    assert read(df.where("x0 > 0")) is None
    assert read(df.selectExpr("x1 AS x0", *NAMES[1:], "y")) is None
    assert read(make_frame(X, NAMES, y=y)) is None
    assert read(df.withColumn("z", df.x0), [*NAMES[1:], "z"]) is None


def test_the_sample_is_read_from_the_files(spark, tmp_path, monkeypatch, label_count):
    """A plain Parquet read: the pass's sample is read by the driver (no Spark sample
    job), and the count and rectangle are the numpy engine's — as with the Spark sample,
    which runs where the files cannot answer."""
    from dprect.engines.spark import engine as engine_module
    from dprect.engines.spark import fit as fit_module

    spark_samples: list[int] = []
    real = engine_module.take_sample

    def counted(*args, **kwargs):
        spark_samples.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(engine_module, "take_sample", counted)
    X, y = _table()
    want = dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=11, features=NAMES, grid=GRID)
    df = _parquet(spark, tmp_path, X, y)
    got, engine = _fit(df, monkeypatch, min_values=0)
    assert spark_samples == [] and label_count == []
    assert engine is not None and engine.strategy == "prefetch"
    assert engine.stats["prefetch_jobs"] == 1 and engine.stats["pruned"] == 1
    _same(got, want)
    monkeypatch.setattr(fit_module, "file_sample", lambda *args, **kwargs: None)
    got, engine = _fit(df, monkeypatch, min_values=0)
    assert spark_samples == [1] and label_count == []
    _same(got, want)


def test_the_files_sample_never_scans_the_table(spark, tmp_path, monkeypatch):
    """The driver reads at most READ_CELLS values: where the positives come late it
    gives None (the Spark sample finds them), and batches shrink with the width."""
    import pyarrow.parquet as pq  # the read imports it inside: patched there (below)

    from dprect.engines.spark import file_sample as module
    from dprect.engines.spark.file_rows import plain_parquet_files

    X, y = _table(900, seed=5)
    y[:] = 0
    y[850:] = 1  # the positives stored last
    df = _parquet(spark, tmp_path, X, y, partitions=1)
    monkeypatch.setattr(module, "BATCH_CELLS", 9 * 100)  # 100 rows of 8 + the label
    monkeypatch.setattr(module, "READ_CELLS", 9 * 1000)
    got = module.file_sample(df, NAMES, "y", "numeric", 1.0, 20, 900, finite=False)
    (path,) = plain_parquet_files(df) or []
    stored = pq.read_table(path, columns=["y"])
    read = int(np.flatnonzero(stored.column("y").to_numpy() == 1)[19]) + 1  # 20th positive
    assert read > 850  # the positives come late, and are read
    assert got is not None and len(got.values[0]) == 20
    assert got.estimate == math.ceil(900 * 20 / read)
    monkeypatch.setattr(module, "READ_CELLS", 9 * 800)  # the positives lie past it
    assert module.file_sample(df, NAMES, "y", "numeric", 1.0, 20, finite=False) is None
    seen: list[int] = []

    class Spy(pq.ParquetFile):
        def iter_batches(self, batch_size=65536, **kwargs):
            seen.append(batch_size)
            return super().iter_batches(batch_size=batch_size, **kwargs)

    monkeypatch.setattr(pq, "ParquetFile", Spy)
    monkeypatch.setattr(module, "READ_CELLS", 9 * 1000)
    module.file_sample(df, NAMES[:2], "y", "numeric", 1.0, 20, finite=False)
    assert seen == [300]  # 900 values a batch over 3 columns
