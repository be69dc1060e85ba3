"""Private clamping bounds on Spark: the one-pass histograms, the engines' identity, the
job.

* the kernel's numpy encodings are the core's, bit for bit (FloatBins at several widths,
  Grid, IntegerRange), and its group matching is the numpy route's;
* ``dprect bounds --engine spark`` writes exactly the numpy engine's result for a seed, on
  Parquet, CSV and Delta input (nulls, NaN, ±inf, decimals, huge integers, −0.0, unlisted
  and null groups included);
* a grouped run's number of Spark jobs does not depend on the number of groups;
* ``jobs/private_bounds.py`` through its entry point: the numpy engine's result, its
  options in ``--help``, the example config, and bad input → one line, exit 2, nothing
  written.
"""

from __future__ import annotations

import json
import math
import uuid
from decimal import Decimal
from pathlib import Path

import numpy as np
import private_bounds
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
import yaml
from cli_run import run

from dprect.app.jobs_support import load_config, section_values
from dprect.core.bounds import histogram
from dprect.core.domains import FloatBins, Grid, IntegerRange
from dprect.core.statistic import COVERAGE
from dprect.engines.bounds_input import resolve_groups
from dprect.engines.row_kernels import group_index, table_groups
from dprect.engines.spark import statistics as spark_statistics
from dprect.engines.spark.statistics import partial_bins, to_cells


def kernel_cells(batches, columns, domains, group_column=None, group_kind="",
                 group_values=None, groups=1):
    """The one kernel's output for a partition, decoded as the driver decodes it."""
    spec = COVERAGE.spec(domains)
    out = list(partial_bins(batches, columns=columns, group_column=group_column,
                            group_kind=group_kind, group_values=group_values,
                            groups=groups, ranges=1, spec=spec))
    return to_cells(pa.Table.from_batches(out), spec, groups) if out else {}

REPO = Path(__file__).resolve().parents[2]

N = 3000
SEED = 11
COMMON = ["--epsilon", "4", "--coverage", "0.9", "--seed", str(SEED)]


def _table(n: int = N, seed: int = 0, groups: int | None = None) -> pa.Table:
    gen = np.random.default_rng(seed)
    x = gen.normal(10.0, 2.0, n)
    x[:6] = [np.nan, np.inf, -np.inf, -0.0, 5e-324, 1e308]
    x_list: list[float | None] = list(x)
    x_list[6] = None
    big = gen.integers(-2**62, 2**62, n)
    big[:3] = [2**53 + 1, -(2**53) - 1, 0]
    g: list[object]
    if groups is None:
        g = list(gen.choice(["a", "b", "zz"], n, p=[0.45, 0.45, 0.10]))
        g[7] = None
        g_arr = pa.array(g, pa.string())
    else:
        g_arr = pa.array(gen.integers(0, groups, n))
    return pa.table({
        "x": pa.array(x_list, pa.float64()),
        "big": pa.array(big, pa.int64()),
        "dec": pa.array([Decimal(f"{v:.3f}") for v in gen.uniform(-50, 50, n)],
                        pa.decimal128(10, 3)),
        "g": g_arr,
    })


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from deltalake import write_deltalake

    d = tmp_path_factory.mktemp("bounds_spark")
    table = _table()
    pq.write_table(table, d / "t.parquet")
    write_deltalake(str(d / "t_delta"), table)
    # CSV: no NaN/inf spellings (Spark's CSV reader would read the column as strings)
    csv_table = table.set_column(0, "x", pa.array(
        [None if v is None or not math.isfinite(v) else v for v in
         table.column("x").to_pylist()], pa.float64()))
    pcsv.write_csv(csv_table.select(["x", "big", "g"]), d / "t.csv")
    return d




# -- the kernel -----------------------------------------------------------------------------
SPECIAL = np.array([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -1e-300, 1.0, -1.0,
                    1.5, 3.141592653589793, 1e15, -1e15, 2.0**53 + 2, 1.7976931348623157e308,
                    -1.7976931348623157e308, np.inf, -np.inf, 1e-5, 123456.789, -0.001])


@pytest.mark.parametrize("domain", [FloatBins(1), FloatBins(), FloatBins(20),
                                    Grid(-100.0, 100.0, 1000), Grid(0.5, 1.5, 2**20),
                                    IntegerRange(-5, 5)])
def test_the_kernel_counts_the_cores_histogram(domain) -> None:
    """The executors' kernel encodes with the domain's own encoder (shipped by value):
    its counts are the core's histogram of the same values, key for key."""
    gen = np.random.default_rng(3)
    x = np.concatenate([SPECIAL, gen.normal(0, 50, 2000), gen.standard_cauchy(2000) * 1e6,
                        np.ldexp(gen.uniform(-1, 1, 500), gen.integers(-1070, 1020, 500))])
    batch = pa.RecordBatch.from_arrays([pa.array(x)], names=["x"])
    out = kernel_cells(iter([batch]), ["x"], [domain])[(0, 0)]
    core = histogram(x[np.isfinite(x)], domain)
    assert np.array_equal(out.keys, np.asarray(core.keys, dtype=np.int64))
    assert np.array_equal(out.counts, np.asarray(core.counts))
    assert out.sums is None  # counts only: the coverage mechanism's spec


@pytest.mark.parametrize(("array", "groups"), [
    (pa.array(["a", None, "b", "", "zz", "a"]), ["a", "b", ""]),
    (pa.array([1, 2, None, -3, 2**53 + 1, 0]), ["2", "-3", "0", "9007199254740992"]),
    (pa.array([0.0, -0.0, float("nan"), None, 1.5, 2.0]), ["0", "1.5", "2"]),
    (pa.array([True, False, None, True]), ["yes", "false"]),
    (pa.array(["a", "b", "a"]).dictionary_encode(), ["b"]),
    (pa.array([None, None], pa.null()), ["a"]),
])
def test_kernel_group_matching_is_the_numpy_routes(array, groups) -> None:
    """One function serves both routes (shipped to executors by value), and it matches a
    plain Python reading of the rule (numbers in the column's type: an integer type's as
    exact integers — 2^53 + 1 is not 2^53 —, others as float64 with −0.0 = 0.0, NaN and
    nulls in no group; booleans as booleans, the rest as text)."""
    import math

    from dprect.engines.bounds_input import group_kind_of_arrow, integral_arrow
    assert spark_statistics.table_groups is table_groups  # the numpy route's group_index inside
    kind = group_kind_of_arrow(array.type, "g")
    integral = integral_arrow(array.type)
    values = resolve_groups(groups, kind, "g", integral=integral)

    def reference(v):
        if v is None or values is None or kind == "null":
            return -1
        if kind == "numeric" and integral:
            return next((i for i, g in enumerate(values) if g == v), -1)
        if kind == "numeric":
            x = float(v) + 0.0
            return next((i for i, g in enumerate(values)
                         if not math.isnan(x) and float(g) == x), -1)
        if kind == "boolean":
            return next((i for i, g in enumerate(values) if bool(g) == v), -1)
        return next((i for i, g in enumerate(values) if str(g) == str(v)), -1)

    expected = [reference(v) for v in array.to_pylist()]
    assert group_index(array, kind, values).tolist() == expected
    table = pa.table({"g": array})
    assert table_groups(table, "g", kind, values).tolist() == expected
    assert table_groups(table, None, kind, values).tolist() == [0] * len(array)


# -- numpy and Spark: identical -------------------------------------------------------------
@pytest.mark.parametrize(("name", "fmt", "columns"), [
    ("t.parquet", "parquet", "x,big,dec"),
    ("t.csv", "csv", "x,big"),
    ("t_delta", "delta", "x,big,dec"),
])
def test_spark_equals_numpy_for_a_seed(spark, data: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str], name: str,
                                       fmt: str, columns: str) -> None:
    groups = ["--group-by", "g", "--groups", "a,b,absent"]
    numpy_input = "t.csv" if fmt == "csv" else "t.parquet"
    code, _, err = run(["bounds", "--input", str(data / numpy_input), "--columns", columns,
                        *groups, *COMMON, "--output", str(tmp_path / "numpy.json"),
                        "--table", str(tmp_path / "numpy.csv")], capsys)
    assert code == 0, err
    code, out, err = run(["bounds", "--input", str(data / name), "--format", fmt,
                          "--columns", columns, *groups, *COMMON, "--engine", "spark",
                          "--output", str(tmp_path / "spark.json"),
                          "--table", str(tmp_path / "spark.csv")], capsys)
    assert code == 0, err
    assert (tmp_path / "spark.json").read_text() == (tmp_path / "numpy.json").read_text()
    assert (tmp_path / "spark.csv").read_text() == (tmp_path / "numpy.csv").read_text()
    js = json.loads((tmp_path / "spark.json").read_text())
    assert js["groups"] == ["a", "b", "absent"] and "zz" not in out


def test_ungrouped_spark_equals_numpy(spark, data: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    for engine in ("numpy", "spark"):
        code, _, err = run(["bounds", "--input", str(data / "t.parquet"), "--columns",
                            "x,dec", "--grid", "x=floatbins:8,dec=-100:100:4096", *COMMON,
                            "--engine", engine, "--output", str(tmp_path / f"{engine}.json")],
                           capsys)
        assert code == 0, err
    assert (tmp_path / "spark.json").read_text() == (tmp_path / "numpy.json").read_text()


def test_a_row_filter_and_a_delta_snapshot_are_read_as_for_a_fit(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--where`` and ``--delta-version`` (the shared source options): Spark's bounds of
    version 0 filtered equal the numpy engine's bounds of the same rows."""
    from deltalake import write_deltalake

    first, later = _table(seed=3), _table(seed=4)
    write_deltalake(str(tmp_path / "d"), first)
    write_deltalake(str(tmp_path / "d"), later, mode="append")  # version 1
    kept = first.filter(pc.greater(first.column("big"), 0))
    pq.write_table(kept, tmp_path / "kept.parquet")
    argv = ["bounds", "--columns", "x,dec", "--group-by", "g", "--groups", "a,b", *COMMON]
    code, _, err = run([*argv, "--input", str(tmp_path / "kept.parquet"),
                        "--output", str(tmp_path / "numpy.json")], capsys)
    assert code == 0, err
    code, _, err = run([*argv, "--input", str(tmp_path / "d"), "--engine", "spark",
                        "--where", "big > 0", "--delta-version", "0",
                        "--output", str(tmp_path / "spark.json")], capsys)
    assert code == 0, err
    assert (tmp_path / "spark.json").read_text() == (tmp_path / "numpy.json").read_text()
    code, _, err = run([*argv, "--input", str(tmp_path / "kept.parquet"), "--where", "big > 0",
                        "--output", str(tmp_path / "refused.json")], capsys)
    assert code == 2 and "--where needs --engine spark" in err
    assert not (tmp_path / "refused.json").exists()


# -- Spark jobs -----------------------------------------------------------------------------
def _jobs_of_a_run(spark, argv: list[str], capsys: pytest.CaptureFixture[str]) -> int:
    sc = spark.sparkContext
    group = f"bounds-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "dprect bounds job count")
    try:
        code, _, err = run(argv, capsys)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    assert code == 0, err
    return len(sc.statusTracker().getJobIdsForGroup(group))


def test_job_count_does_not_depend_on_the_number_of_groups(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    counts = {}
    for groups in (2, 20):
        path = tmp_path / f"g{groups}.parquet"
        pq.write_table(_table(2000, seed=groups, groups=groups), path)
        listed = ",".join(str(i) for i in range(groups))
        counts[groups] = _jobs_of_a_run(spark, [
            "bounds", "--input", str(path), "--columns", "x,big,dec", "--group-by", "g",
            "--groups", listed, *COMMON, "--engine", "spark",
            "--output", str(tmp_path / f"g{groups}.json")], capsys)
        js = json.loads((tmp_path / f"g{groups}.json").read_text())
        assert len(js["bounds"]) == 3 * groups
    assert counts[2] == counts[20], counts
    assert 1 <= counts[2] <= 4, counts  # the pass and its aggregation (and reading)


# -- the job --------------------------------------------------------------------------------
def _job_config(tmp_path: Path, data: Path, **bounds: object) -> Path:
    section = {"input": str(data / "t.parquet"), "format": "parquet",
               "columns": ["x", "big"], "group_by": "g", "groups": ["a", "b"],
               "epsilon": 4.0, "coverage": 0.9, "seed": SEED,
               "output": str(tmp_path / "job.json"), "table": str(tmp_path / "job.csv")}
    section.update(bounds)
    path = tmp_path / "bounds.yaml"
    path.write_text(yaml.safe_dump({"bounds": section}))
    return path


def test_job_entry_point_gives_the_numpy_result(spark, data: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    config = _job_config(tmp_path, data)
    capsys.readouterr()
    assert private_bounds.main(["--config", str(config), "--set", "rows=1000"], spark) == 0
    out = capsys.readouterr().out
    assert "[private_bounds] plan: " in out and "bounds table written" in out
    code, _, err = run(["bounds", "--input", str(data / "t.parquet"), "--columns", "x,big",
                        "--group-by", "g", "--groups", "a,b", "--rows", "1000", *COMMON,
                        "--output", str(tmp_path / "numpy.json")], capsys)
    assert code == 0, err
    assert (tmp_path / "job.json").read_text() == (tmp_path / "numpy.json").read_text()
    assert (tmp_path / "job.csv").read_text().startswith("group,column,lower,upper,rank_error\n")


@pytest.mark.parametrize(("overrides", "message"), [
    (["--set", "columns=[x, nope]"], "no column"),
    (["--set", "groups=null"], "PUBLIC list"),
    (["--set", "epsilom=1"], "unknown key bounds.epsilom"),
    (["--set", "columns=[x]", "--set", "group_by=big", "--set", "groups=[1, 2.5]"],
     "the group column 'big' holds integers: group value '2.5' is not one"),
    (["--set", "coverage=2"], "coverage"),
    (["--set", "grid=float"], "FloatBins"),
])
def test_job_bad_input_one_line_exit_2_nothing_written(
        spark, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        overrides: list[str], message: str) -> None:
    config = _job_config(tmp_path, data)
    capsys.readouterr()
    assert private_bounds.main(["--config", str(config), *overrides], spark) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("private_bounds: error: "), err
    assert message in lines[0], err
    assert not (tmp_path / "job.json").exists() and not (tmp_path / "job.csv").exists()


def test_job_help_lists_every_key(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        private_bounds.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for key in private_bounds.OPTIONS:
        assert f"bounds.{key} " in out, key


def test_example_config_is_valid() -> None:
    doc = load_config(REPO / "conf" / "private_bounds.yaml", [], section="bounds")
    cfg = section_values(doc, "bounds", private_bounds.OPTIONS)
    settings = private_bounds.settings(cfg)
    assert settings.groups == ["0", "1"] and settings.source.group_by == "label"
    local = load_config(REPO / "conf" / "local.yaml", [], section="generate")
    assert cfg["input"] == local["generate"]["output"]
    assert cfg["columns"] == local["fit"]["features"]


def test_the_kernels_read_a_partition_in_chunks_as_a_whole(monkeypatch) -> None:
    """finite_chunks buffers batches to at least chunk_rows rows and leaves out, per column,
    the rows outside the groups and the non-finite values; the histogram kernel counts the
    same with chunks of a few rows as in one chunk."""
    from dprect.core.domains import Grid

    spark_bounds = spark_statistics

    gen = np.random.default_rng(5)
    a = gen.normal(size=9)
    a[[1, 6]] = np.nan
    b = gen.integers(0, 4, size=9).astype(float)
    b[3] = np.inf
    g = ["p", "q", "p", "r", "q", "p", "p", "q", "p"]  # "r": no listed group
    table = pa.table({"a": a, "b": b, "g": g})
    batches = [table.slice(0, 3), table.slice(3, 0), table.slice(3, 4), table.slice(7, 2)]
    batches = [t.to_batches()[0] if t.num_rows else pa.RecordBatch.from_pylist(
        [], schema=table.schema) for t in batches]
    got = list(spark_bounds.finite_chunks(iter(batches), 5, ["a", "b"], "g", "string",
                                          ["p", "q"]))
    assert [j for j, _, _ in got] == [0, 1, 0, 1]  # two chunks: 7 rows, then 2
    whole = list(spark_bounds.finite_chunks(iter([table.to_batches()[0]]), 100,
                                            ["a", "b"], "g", "string", ["p", "q"]))
    for j in (0, 1):
        joined = np.concatenate([x for k, _, x in got if k == j])
        assert joined.tolist() == next(x for k, _, x in whole if k == j).tolist()
        col = a if j == 0 else b
        keep = np.isfinite(col) & np.isin(g, ["p", "q"])
        assert joined.tolist() == col[keep].tolist()
    # a column named twice (a mixed run's, once per mechanism): read once a chunk, the
    # same rows and values under each of its indices
    twice = list(spark_bounds.finite_chunks(iter(batches), 5, ["a", "b", "a"], "g",
                                            "string", ["p", "q"]))
    assert [j for j, _, _ in twice] == [0, 1, 2, 0, 1, 2]
    for at in (0, 3):
        for j in (0, 1):
            assert twice[at + j][1].tolist() == got[at // 3 * 2 + j][1].tolist()
            assert twice[at + j][2].tolist() == got[at // 3 * 2 + j][2].tolist()
        assert twice[at + 2][1].tolist() == got[at // 3 * 2][1].tolist()
        assert twice[at + 2][2].tolist() == got[at // 3 * 2][2].tolist()
    domains = [Grid(-4.0, 4.0, 64), Grid(0.0, 4.0, 8)]

    def histogram(values: int) -> list:
        monkeypatch.setattr(spark_bounds, "CHUNK_VALUES", values)
        cells = kernel_cells(iter(batches), ["a", "b"], domains, "g", "string", ["p", "q"],
                             groups=2)
        return sorted((cell, c.keys.tolist(), c.counts.tolist())
                      for cell, c in cells.items())

    assert histogram(4) == histogram(10**6)



def test_finite_chunks_lets_a_column_go_at_its_last_name() -> None:
    """A column named twice is read once a chunk (its second name yields the same arrays)
    and kept until then, but no column's arrays are held past its last name: a chunk's
    columns are not all kept to the chunk's end (a chunk is CHUNK_VALUES values)."""
    import gc
    import weakref

    nan = float("nan")
    table = pa.table({"a": [1.0, nan, 2.0, 3.0], "b": [nan, 4.0, 5.0, 6.0],
                      "c": [7.0, 8.0, nan, 9.0], "g": ["p", "q", "p", "r"]})
    chunks = spark_statistics.finite_chunks(iter(table.to_batches()), 100,
                                            ["a", "b", "a", "c"], "g", "string", ["p", "q"])
    # every column leaves rows out (a NaN, group "r"): its arrays are copies, held by
    # nothing but finite_chunks once the kernel lets them go
    seen: dict[int, weakref.ref] = {}
    for j, group, x in chunks:
        if j == 2:
            assert seen[0]() is x  # "a" again: the arrays read for its first name
        seen[j] = weakref.ref(x)
        del group, x
        gc.collect()
        alive = {k for k, ref in seen.items() if ref() is not None}
        assert alive == {0: {0}, 1: {0}, 2: set(), 3: set()}[j], (j, alive)
    assert sorted(seen) == [0, 1, 2, 3]
