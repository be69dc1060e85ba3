"""``describe`` on Spark (issue #23): the one-pass route equals the numpy route exactly.

* :class:`~dprect.engines.spark.grouped_route.SparkGroupedRoute` on Parquet gives, for a seed,
  every field of :func:`dprect.describe`'s result on the same rows — with string groups
  (one listed group without rows, an unlisted group and null groups dropped), nulls, NaN,
  ±inf, −0.0, a subnormal, a huge value, a column of one sign (negative and positive), a
  zero-crossing column and an integer column;
* the same with a numeric group column and no group column;
* the pass's per-bin statistics equal the core's
  :func:`~dprect.core.describe_stats.bin_statistics` of each cell, and, given the same
  centres, give each cell's :func:`~dprect.core.describe_stats.cell_statistics` (so a
  change of the truncation or of the intervals on one engine only fails here), and a
  Spark run's draws follow the documented order (the independent re-draw of
  tests/core/test_describe_stats.py reproduces the Spark result).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from describe_reference import reference_describe
from sorted_lists import to_blob

import dprect
from dprect.core.aggregates import DescribeResult, plan_describe
from dprect.core.describe_stats import (
    bin_statistics,
    cell_statistics,
    centre_counts,
    statistics_of_cells,
)
from dprect.core.randomness import RandomSource
from dprect.core.request import Source
from dprect.core.statistic import QUERY, SEARCH_GRID
from dprect.core.tail_bounds import draw_centre_from_counts
from dprect.engines.grouped import draw_query
from dprect.engines.spark.grouped_route import SparkGroupedRoute
from dprect.engines.spark.statistics import spark_statistics

COLUMNS = ["x", "neg", "pos", "cross", "ints"]
SPEC = QUERY.spec([SEARCH_GRID] * len(COLUMNS))
LISTED = ["a", "b", "empty"]


def _seeded(seed: int) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed=seed)


def _table(n: int = 4000, seed: int = 3) -> pa.Table:
    gen = np.random.default_rng(seed)
    x = gen.normal(10.0, 2.0, n)
    x[:6] = [np.nan, np.inf, -np.inf, -0.0, 5e-324, 1e300]
    xs: list[float | None] = list(x)
    xs[6] = None
    g: list[str | None] = list(gen.choice(["a", "b", "zz"], n, p=[0.5, 0.4, 0.1]))
    g[7] = None
    return pa.table({
        "x": pa.array(xs, pa.float64()),
        "neg": pa.array(-gen.exponential(30.0, n)),
        "pos": pa.array(gen.lognormal(2.0, 1.5, n)),
        "cross": pa.array(gen.normal(0.3, 4.0, n)),
        "ints": pa.array(gen.integers(-1000, 5000, n), pa.int64()),
        "g": pa.array(g, pa.string()),
        "h": pa.array(gen.integers(0, 3, n).astype(np.float64)),
    })


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pa.Table]:
    d = tmp_path_factory.mktemp("describe_spark")
    table = _table()
    pq.write_table(table, d / "t.parquet", row_group_size=1000)  # several partitions
    return d / "t.parquet", table


def _route(spark: object) -> SparkGroupedRoute:
    return SparkGroupedRoute(lambda: (spark, False))


def _spark_run(spark: object, path: Path, group_by: str | None, groups: list[str] | None,
               names: list[object], seed: int, epsilon: float = 2.0):
    plan = plan_describe(epsilon, len(COLUMNS))
    source = Source(str(path), COLUMNS, group_by=group_by)
    with _route(spark).open(source, groups, SPEC, lambda _: None) as prepared:
        return draw_query(plan, prepared.statistics(), names, COLUMNS, _seeded(seed))


def _spark_equals_numpy_and_reference(spark: object, path: Path, table: pa.Table,
                                      listed: list[str], seed: int) -> DescribeResult:
    """The Spark driver route's seeded run of ``table`` (grouped by "g" over ``listed``,
    ε = 5) after asserting its cells equal the numpy engine's and the independent
    re-draw's for the same seed."""
    got = _spark_run(spark, path, "g", listed, listed, seed=seed, epsilon=5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.describe(table, COLUMNS, group_by="g", groups=listed, epsilon=5.0,
                               seed=seed)
    assert got.cells == want.cells
    assert reference_describe(got.plan, table, COLUMNS, "g", listed, _seeded(seed)) \
        == got.cells
    return got


def test_spark_equals_numpy_for_a_seed_with_groups(spark, parquet):
    path, table = parquet
    got = _spark_run(spark, path, "g", LISTED, LISTED, seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.describe(table, COLUMNS, group_by="g", groups=LISTED, epsilon=2.0,
                               seed=7)
    assert got.cells == want.cells  # every field, bit for bit
    assert got.to_dict() == want.to_dict()
    empty = got.cell("x", "empty")
    assert empty.count is not None  # the listed group without rows is released
    # the independent re-draw (documented order, direct truncated sum) agrees
    assert reference_describe(got.plan, table, COLUMNS, "g", LISTED, _seeded(7)) == got.cells


def test_spark_equals_numpy_numeric_groups_and_ungrouped(spark, parquet):
    path, table = parquet
    got = _spark_run(spark, path, "h", ["0", "2"], [0.0, 2.0], seed=5, epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.describe(table, COLUMNS, group_by="h", groups=[0.0, 2.0],
                               epsilon=1.0, seed=5)
        plain = dprect.describe(table, COLUMNS, epsilon=1.0, seed=8)
    assert got.cells == want.cells
    assert _spark_run(spark, path, None, None, [None], seed=8, epsilon=1.0).cells \
        == plain.cells


def test_small_groups_spark_equals_numpy_for_a_seed(spark, tmp_path: Path):
    """Groups of 0 to 3,000 rows, whose released counts pick every split of the plan
    (docs/privacy.md §11, "Small groups": the own split, the larger centres, the anchored
    one drawn after the anchors from each group's second stream): the Spark route gives
    numpy's cells bit for bit, and the independent re-draw agrees."""
    gen = np.random.default_rng(11)
    sizes = {"s20": 20, "s300": 300, "s600": 600, "s1000": 1000, "s3000": 3000}
    g = np.concatenate([[k] * n for k, n in sizes.items()])
    n = len(g)
    table = pa.table({"x": gen.gamma(0.6, 30.0, n) - 12.0,
                      "neg": -gen.exponential(30.0, n),
                      "pos": gen.uniform(200.0, 2600.0, n),
                      "cross": gen.normal(0.3, 4.0, n),
                      "ints": pa.array(gen.integers(-1000, 5000, n), pa.int64()),
                      "g": pa.array(list(g), pa.string())})
    path = tmp_path / "small.parquet"
    pq.write_table(table, path, row_group_size=1500)
    listed = [*sizes, "none"]
    got = _spark_equals_numpy_and_reference(spark, path, table, listed, seed=21)
    # the released counts picked every split (tiers as stated in the plan)
    bars = [t.min_count for t in got.plan.tiers]
    picked = {got.plan.tier_index(int(c.count)) for row in got.cells for c in row
              if c.count is not None}
    assert len(picked) >= len(bars) - 1, (picked, bars)


def test_tiny_groups_pooled_centre_spark_equals_numpy_for_a_seed(spark, tmp_path: Path):
    """300 groups of 12 rows: no column has an anchor, so every column's cells take the
    pooled split (docs/privacy.md §11, Lemma D6: one centre per column from the pooled
    histogram, drawn from the run's source after the groups' stream seeds). The Spark
    driver route gives numpy's cells bit for bit, the independent re-draw agrees, and
    the means are near the truth (an anchor of 0 gave about 1e-10)."""
    gen = np.random.default_rng(12)
    listed = [f"t{i}" for i in range(300)]
    g = np.repeat(listed, 12)
    n = len(g)
    table = pa.table({"x": gen.normal(50.0, 5.0, n), "neg": -gen.exponential(30.0, n) - 100,
                      "pos": gen.uniform(200.0, 2600.0, n),
                      "cross": gen.normal(1000.0, 4.0, n),
                      "ints": pa.array(gen.integers(4000, 5000, n), pa.int64()),
                      "g": pa.array(list(g), pa.string())})
    path = tmp_path / "tiny.parquet"
    pq.write_table(table, path, row_group_size=1000)
    got = _spark_equals_numpy_and_reference(spark, path, table, listed, seed=23)
    for j, c in enumerate(COLUMNS):
        x = np.asarray(table.column(c).to_numpy(), dtype=np.float64)
        errs = [abs(row[j].mean - x[g == name].mean()) / abs(x[g == name].mean())
                for name, row in zip(listed, got.cells, strict=True)]
        assert float(np.median(errs)) < 0.2, c


def test_the_pass_statistics_are_the_cores(spark, parquet):
    path, table = parquet
    plan = plan_describe(2.0, len(COLUMNS))
    g = np.array(table.column("g").to_pylist(), dtype=object)
    cells = {}
    for gi, name in enumerate(["a", "b"]):
        for j, c in enumerate(COLUMNS):
            x = np.array(table.column(c).to_pylist(), dtype=object)[g == name]
            x = np.array([v for v in x if v is not None], dtype=np.float64)
            cells[(gi, j)] = x[np.isfinite(x)]
    df = spark.read.parquet(str(path))
    got = {key: c.bin_statistics() for key, c in
           spark_statistics(df, COLUMNS, SPEC, group_by="g", groups=["a", "b"]).items()
           if len(c.keys)}
    assert set(got) == set(cells)
    for key, x in cells.items():
        want = bin_statistics(x)
        for field in ("bins", "counts", "sums"):
            assert np.array_equal(getattr(got[key], field), getattr(want, field)), field
    rng = _seeded(1)
    centres = {k: draw_centre_from_counts(*centre_counts(v), plan.tiers[0].sign_rate,
                                         plan.tiers[0].magnitude_rate, rng)
               for k, v in sorted(cells.items())}
    stats = statistics_of_cells(got, centres, 2, len(COLUMNS))
    for key, x in cells.items():
        want_stats = cell_statistics(x, centres[key])
        assert np.array_equal(stats[key].keys, want_stats.keys)
        assert np.array_equal(stats[key].counts, want_stats.counts)
        assert np.array_equal(stats[key].sums, want_stats.sums)


_LOAD_WITHOUT_DPRECT = """
import pickle, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "dprect" or name.startswith("dprect."):
            raise ImportError("dprect is not installed here")
sys.meta_path.insert(0, Block())
import numpy as np
import pyarrow as pa
body, from_blob = pickle.loads(sys.stdin.buffer.read())
many = 70_000  # a chunk large enough to try the compiled step: dprect is not there
out = list(body(iter([pa.RecordBatch.from_pylist(
    [{"x": 1.5, "g": "a"}, {"x": -2.0, "g": "b"}, {"x": None, "g": "a"}]),
    pa.RecordBatch.from_pydict({"x": np.arange(many) / 7.0, "g": ["b"] * many})])))
sys.stdout.write(str(sum(int(from_blob(b)[1].sum())
                         for batch in out for b in batch.column("_b").to_pylist())))
"""


def test_the_kernel_runs_where_dprect_is_not_installed():
    """The kernel and the core functions it calls travel by value (no cached function
    pickled by reference): executors need numpy and pyarrow, not dprect (nor numba: the
    compiled step is used only where dprect is installed)."""
    import subprocess
    import sys
    from functools import partial

    from pyspark import cloudpickle

    from dprect.engines.spark.statistics import from_blob, partial_bins

    body = partial(partial_bins, columns=["x"], group_column="g", group_kind="string",
                   group_values=["a", "b"], groups=2, ranges=3,
                   spec=QUERY.spec([SEARCH_GRID]))
    done = subprocess.run([sys.executable, "-c", _LOAD_WITHOUT_DPRECT],
                          input=cloudpickle.dumps((body, from_blob)), capture_output=True,
                          cwd="/",
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()[-500:]
    assert done.stdout.decode() == str(2 + 70_000)  # the finite values of listed groups


def test_a_plan_or_group_names_that_do_not_fit_are_refused_before_any_draw(spark, parquet):
    from dprect.core.errors import InputDataError, ParameterError

    path, _ = parquet
    with _route(spark).open(Source(str(path), COLUMNS, group_by="g"), LISTED, SPEC,
                            lambda _: None) as prepared:
        cells = prepared.statistics()
        with pytest.raises(ParameterError, match="plan"):
            draw_query(plan_describe(1.0, 2), cells, LISTED, COLUMNS, _seeded(1))
        with pytest.raises(ParameterError, match="group name"):
            draw_query(plan_describe(1.0, len(COLUMNS)), cells, LISTED[:2], COLUMNS,
                       _seeded(1))
    with pytest.raises(InputDataError, match="numeric"):
        _route(spark).open(Source(str(path), ["x", "g"], group_by="h"), ["0"],
                           QUERY.spec([SEARCH_GRID] * 2), lambda _: None)
    with pytest.raises(ParameterError, match="numeric"):
        _route(spark).open(Source(str(path), ["x"], group_by="h"), ["east"],
                           QUERY.spec([SEARCH_GRID]), lambda _: None)


def test_the_job_on_spark_writes_the_numpy_commands_result(spark, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]):
    """jobs/describe.py through SparkGroupedRoute == ``dprect describe`` (numpy engine)."""
    import describe as job
    from cli_run import job_argv, run

    repo = Path(__file__).resolve().parents[2]
    gen = np.random.default_rng(12)
    n = 3000
    pq.write_table(pa.table({**{f"f{j}": gen.normal(j - 1.5, 2.0, n) for j in range(4)},
                             "label": gen.integers(0, 2, n)}), tmp_path / "demo.parquet")
    argv = job_argv(repo / "conf" / "describe.yaml", f"input={tmp_path / 'demo.parquet'}",
                    f"output={tmp_path / 'job.json'}", f"table={tmp_path / 'job.csv'}",
                    f"plot={tmp_path / 'job.png'}", "seed=4")
    assert job.main(argv, spark=spark) == 0
    code, _, err = run(["describe", "--input", str(tmp_path / "demo.parquet"), "--columns",
                        "f0,f1,f2,f3", "--group-by", "label", "--groups", "0,1",
                        "--epsilon", "1", "--seed", "4", "--output",
                        str(tmp_path / "cli.json")], capsys)
    assert code == 0, err
    assert (tmp_path / "job.json").read_text() == (tmp_path / "cli.json").read_text()


def test_the_kernel_sums_are_exact_past_the_int64_wrap():
    """A (group, column, bin) of 2^33 rows or more sums its significands past int64
    (issue #40: the kernel's running totals, the blobs and the range merge wrapped at
    about 8.6·10^9 rows). Partial lists near the wrap, as a partition's chunks and the
    partitions hand them, through the kernel's own functions: the exact integer."""
    from dprect.engines.spark import statistics as kernel

    n, part = 1 << 32, (1 << 32) * ((1 << 30) - 1)  # 2^32 rows at the largest |M|
    keys = np.arange(2000, dtype=np.int64)  # enough entries for the compiled merge
    counts = np.full(2000, n, dtype=np.int64)
    sums = np.full(2000, part, dtype=np.int64)
    sums[1::2] *= -1
    total = None
    for _ in range(3):  # a partition's running total over three chunks
        total = kernel._words_into(total, (keys, counts, [sums]))
    assert total is not None
    want = [3 * int(v) for v in sums]
    assert total[1].tolist() == [3 * n] * 2000 and [int(v) for v in total[2][0]] == want
    # the blob carries it exactly, and merging partitions' blobs stays exact
    k, c, s = kernel.from_blob(to_blob(total[0], total[1], total[2][0]).buffers()[2])
    assert k.tolist() == keys.tolist() and c.tolist() == [3 * n] * 2000
    assert [int(v) for v in s] == want
    blob = to_blob(total[0], total[1], total[2][0])
    merged = kernel.merge_blobs(pa.table({kernel.PART: pa.array([0, 0], pa.int32()),
                                          kernel.BLOB: pa.concat_arrays([blob, blob])}))
    _, c2, s2 = kernel.from_blob(merged.column(kernel.BLOB)[0].as_buffer())
    assert c2.tolist() == [6 * n] * 2000 and [int(v) for v in s2] == [2 * v for v in want]
