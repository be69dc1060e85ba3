"""The JVM bin count (issue #41, :mod:`dprect.engines.spark.jvm_bins`): on a classic
session that loads the jar ``make setup`` builds, describe's search bins are counted in
the JVM and handed to the same merge, blocks and draws as the ``mapInArrow`` pass's. On a
table with wide tails (1e-300 … 1e300 of both signs, ±0.0, subnormals, the extreme
normals, ±inf, NaN, nulls), a float32, a boolean and an int64 column past 2^53, rows of
unlisted and null groups and a listed group without rows, its cells equal the pass's and
the numpy engine's, and the released record for a seed is the same on either route —
the describe preset (with variance and std), a mixed run with quantiles (describe's columns
counted in the JVM, the quantiles' by ``mapInArrow``) and the bounds preset, drawn on the
driver and in the executors. A session whose JVM lacks the kernel at this version takes the
pass, says so nowhere and prints no value; a session started without the jar gets no
jar settings."""

from __future__ import annotations

import warnings
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from engine_cells import assert_same_cells

from dprect.app.aggregate_flow import asked_mechanisms, plan_for, run_spec
from dprect.core.mixed import mixed_spec, repeated
from dprect.core.randomness import RandomSource
from dprect.core.request import Source
from dprect.core.statistic import QUANTILES, QUERY, SEARCH_GRID
from dprect.engines.grouped import grouped_statistics
from dprect.engines.spark import executor_draws, jvm_bins, session, statistics
from dprect.engines.spark.grouped_route import SparkGroupedRoute
from dprect.release.aggregate_record import aggregate_record, mixed_record

pytestmark = pytest.mark.skipif(session.bins_jar() is None,
                                reason="no JVM bin count jar (make setup builds it; javac)")

COLUMNS = ["wide", "edges", "f32", "flag", "big"]
LISTED = ["0", "1", "2", "3", "4", "9"]  # 9: no rows
#: a value that would show in a message that quoted a row
SENTINEL = 7331.0625


def _table(n: int = 6000) -> pa.Table:
    gen = np.random.default_rng(41)
    g = gen.integers(0, 5, n)
    g[gen.random(n) < 0.03] = -1  # not listed: dropped
    g[gen.random(n) < 0.02] = 77
    sign = np.where(gen.random(n) < 0.5, -1.0, 1.0)
    wide = sign * 10.0 ** gen.uniform(-300, 300, n)
    wide[5] = SENTINEL
    edges = np.array([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308,
                      -2.2250738585072014e-308, 1.7976931348623157e308,
                      -1.7976931348623157e308, np.inf, -np.inf, np.nan])
    subnormal = gen.integers(1, 1 << 52, n, dtype=np.int64).view(np.float64) * sign
    pick = gen.random(n)
    edge = np.where(pick < 0.3, gen.normal(0.0, 3.0, n),
                    np.where(pick < 0.6, subnormal, edges[gen.integers(0, len(edges), n)]))
    big = gen.integers(-(1 << 62), 1 << 62, n, dtype=np.int64)  # rounded to float64
    return pa.table({
        "g": pa.array(g, pa.int64(), mask=gen.random(n) < 0.01),
        "wide": pa.array(wide),
        "edges": pa.array(edge, mask=gen.random(n) < 0.05),
        "f32": pa.array(gen.normal(50.0, 10.0, n).astype(np.float32)),
        "flag": pa.array(gen.random(n) < 0.3, mask=gen.random(n) < 0.1),
        "big": pa.array(big, pa.int64()),
    })


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("jvm_bins") / "t.parquet"
    pq.write_table(_table(), path)
    return path


@pytest.fixture
def jvm_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each pass that counted in the JVM appends 1 (the route's call spied on)."""
    calls: list[int] = []
    real = statistics.merged_cells

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(statistics, "merged_cells", spy)
    return calls


def _numpy_cells(table: pa.Table, spec: Any, group_by: str | None) -> Any:
    """The numpy engine's cells of ``table`` for :data:`LISTED` (or ungrouped)."""
    values = [statistics.as_float64(table.column(c).combine_chunks())
              for c in repeated(COLUMNS, spec)]
    if group_by is None:
        return grouped_statistics(values, np.zeros(table.num_rows, np.int32), 1, spec)
    g = table.column(group_by).to_pylist()
    index = np.array([LISTED.index(str(v)) if v is not None and str(v) in LISTED else -1
                      for v in g], dtype=np.int32)
    return grouped_statistics(values, index, len(LISTED), spec)


def _spec(asked: str) -> Any:
    """describe's spec of ``asked`` (a mixed run's: with the quantiles' columns after)."""
    query = QUERY.spec([SEARCH_GRID] * len(COLUMNS), tuple(asked.split(",")))
    if "median" not in asked:
        return query
    return mixed_spec([query, QUANTILES.spec([SEARCH_GRID] * len(COLUMNS))])


@pytest.mark.parametrize("asked", ["count", "count,variance", "count,variance,median"])
@pytest.mark.parametrize("group_by", ["g", None])
def test_the_jvm_cells_equal_the_pass_and_numpy(spark, parquet, monkeypatch, jvm_calls,
                                                asked, group_by):
    df = spark.read.parquet(str(parquet)).repartition(3)
    spec = _spec(asked)
    names = repeated(COLUMNS, spec)
    listed = LISTED if group_by else None
    got = statistics.spark_statistics(df, names, spec, group_by=group_by, groups=listed)
    assert jvm_calls == [1]  # describe's columns; a mixed run's quantiles: mapInArrow
    monkeypatch.setenv(session.BINS_ENV, "off")
    fallback = statistics.spark_statistics(df, names, spec, group_by=group_by,
                                           groups=listed)
    assert jvm_calls == [1]  # the mapInArrow pass
    assert_same_cells(got, fallback)
    assert_same_cells(got, _numpy_cells(pq.read_table(parquet), spec, group_by))
    if group_by:
        assert got[(5, 0)].counts.size == 0  # the listed group without rows
    assert any(c.counts.size for c in got.values())


def _release(spark: Any, path: Path, asked: str, executors: bool,
             monkeypatch: pytest.MonkeyPatch) -> dict:
    """The record of a seeded run of ``asked`` through the Spark route, drawn in the
    executors or on the driver."""
    mechanisms, names = asked_mechanisms(asked)
    plan = plan_for(mechanisms, {"epsilon": 2.0, "columns": COLUMNS}, names)
    spec = run_spec(mechanisms, plan, None, COLUMNS)
    monkeypatch.setattr(executor_draws, "EXECUTOR_CELLS", 1 if executors else 10**12)
    route = SparkGroupedRoute(lambda: (spark, False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rng = RandomSource(seed=20261130)
    with route.open(Source(str(path), COLUMNS, group_by="g"), LISTED, spec,
                    lambda _: None) as prepared:
        result = prepared.draw(mechanisms, plan, LISTED, COLUMNS, rng)
    return mixed_record(result) if len(mechanisms) > 1 else aggregate_record(result, plan)


@pytest.mark.parametrize("asked,jvm", [("bounds,count,sum,mean", True),
                                       ("bounds,count,mean,variance,std", True),
                                       ("count,mean,p25,median", True),
                                       ("coverage", False)])
@pytest.mark.parametrize("executors", [False, True])
def test_a_seed_releases_the_same_record_on_either_route(spark, parquet, monkeypatch,
                                                         jvm_calls, asked, jvm, executors):
    got = _release(spark, parquet, asked, executors, monkeypatch)
    assert len(jvm_calls) == (1 if jvm else 0)  # the bounds preset: not describe's bins
    monkeypatch.setenv(session.BINS_ENV, "off")
    want = _release(spark, parquet, asked, executors, monkeypatch)
    assert len(jvm_calls) == (1 if jvm else 0)
    assert got == want


def test_a_jvm_without_this_kernel_version_takes_the_pass_silently(
        spark, parquet, monkeypatch, jvm_calls, capfd):
    df = spark.read.parquet(str(parquet))
    spec = QUERY.spec([SEARCH_GRID] * len(COLUMNS), ("count",))
    assert session.has_bins(spark)
    monkeypatch.setattr(session, "BINS_VERSION", session.BINS_VERSION + 1)
    monkeypatch.setattr(session, "_BINS", weakref.WeakKeyDictionary())
    assert not session.has_bins(spark)
    capfd.readouterr()
    got = statistics.spark_statistics(df, COLUMNS, spec, group_by="g", groups=LISTED)
    out, err = capfd.readouterr()
    assert jvm_calls == []
    assert_same_cells(got, _numpy_cells(pq.read_table(parquet), spec, "g"))
    assert "7331" not in out + err and "jvm" not in (out + err).lower()


def test_a_decimal_or_string_input_takes_the_pass(spark, monkeypatch, jvm_calls):
    df = spark.createDataFrame([("a", 1.5), ("b", 2.5)], "g string, x double")
    spec = QUERY.spec([SEARCH_GRID], ("count",))
    assert not statistics.jvm_route(df, spec, ["x"], "g", "string")
    dec = spark.createDataFrame([(1, 1.5)], "g int, x double").selectExpr(
        "g", "CAST(x AS DECIMAL(10, 2)) AS x")
    assert not statistics.jvm_route(dec, spec, ["x"], "g", "numeric")
    assert statistics.jvm_route(dec.selectExpr("g", "CAST(x AS DOUBLE) AS x"), spec, ["x"],
                                "g", "numeric")


def test_many_public_groups_or_columns_take_the_pass(spark, jvm_calls):
    """Past MAX_GROUPS listed groups the JVM's dense tables would hold under MERGE_BINS
    bins a group and its hashed tails grow with the groups, and past MAX_COLUMNS its
    tables' worst case grows with the columns: the pass counts them, the same cells (the
    route decided from the list's length and the spec alone)."""
    assert jvm_bins.MAX_GROUPS == jvm_bins.DENSE_CELLS // jvm_bins.MERGE_BINS == 1024
    assert jvm_bins.MAX_COLUMNS == 64
    df = spark.createDataFrame([(1, 1.5), (2, 2.5)], "g int, x double")
    spec = QUERY.spec([SEARCH_GRID], ("count",))
    assert statistics.jvm_route(df, spec, ["x"], "g", "numeric", jvm_bins.MAX_GROUPS)
    assert not statistics.jvm_route(df, spec, ["x"], "g", "numeric",
                                    jvm_bins.MAX_GROUPS + 1)
    names = [f"x{j}" for j in range(jvm_bins.MAX_COLUMNS + 1)]
    wide = df.selectExpr("g", *[f"x AS {n}" for n in names])
    many = QUERY.spec([SEARCH_GRID] * len(names), ("count",))
    fewer = QUERY.spec([SEARCH_GRID] * jvm_bins.MAX_COLUMNS, ("count",))
    assert statistics.jvm_route(wide, fewer, names[:-1], "g", "numeric", 2)
    assert not statistics.jvm_route(wide, many, names, "g", "numeric", 2)
    listed = [str(g) for g in range(jvm_bins.MAX_GROUPS + 1)]
    got = statistics.spark_statistics(df, ["x"], spec, group_by="g", groups=listed)
    assert jvm_calls == []
    assert len(got) == len(listed)  # every (group, column) cell, from the pass


def test_a_session_is_started_with_the_jar_only_when_it_is_there(monkeypatch, tmp_path):
    from pyspark import SparkContext

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setattr(SparkContext, "_gateway", None)  # as if no JVM ran yet
    monkeypatch.setattr(session, "JAR_CACHE", tmp_path)
    settings: dict[str, str] = {"spark.jars": "/x/delta.jar"}
    session._add_bins(settings, True)
    assert settings == {"spark.jars": "/x/delta.jar"}  # no jar: nothing added
    jar = tmp_path / f"spark-{session.spark_minor_version()}" / \
        f"dprect-bins-{session.BINS_VERSION}.jar"
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"")
    session._add_bins(settings, True)
    assert settings == {"spark.jars": f"/x/delta.jar,{jar}",
                        "spark.driver.extraClassPath": str(jar)}
    cluster: dict[str, str] = {}
    session._add_bins(cluster, False)
    assert cluster == {"spark.jars": str(jar)}
    monkeypatch.setenv(session.BINS_ENV, "off")
    off: dict[str, str] = {}
    session._add_bins(off, True)
    assert off == {}
