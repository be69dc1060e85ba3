"""Native Delta Lake (issue #15): sessions with the delta-spark jars (``make jars``) read
Delta with ``spark.read.format("delta")`` — time travel, partition pruning — and write the
results table with ``format("delta")``; sessions without them keep the delta-rs path, and
both give the same rectangle for a seed.

The native tests need the jars (skipped without them); the fallback ones run either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import dprect
from dprect.core.errors import InputDataError
from dprect.engines.spark import session as session_mod
from dprect.engines.spark import source as source_mod
from dprect.engines.spark.fit import fit_dataframe
from dprect.engines.spark.source import read_source
from dprect.release import results_table as rt

deltalake = pytest.importorskip("deltalake")

ROOT = Path(__file__).resolve().parents[2]
GRID = "0:10:1024"


@pytest.fixture(scope="module")
def native(spark):
    """The shared session, which must have native Delta (skipped without the jars)."""
    if not session_mod.has_delta(spark):
        pytest.skip("no delta-spark jars for this Spark (run `make jars`)")
    return spark


@pytest.fixture(scope="module")
def result() -> dprect.FitResult:
    gen = np.random.default_rng(7)
    X = gen.uniform(0, 10, size=(2_000, 2))
    y = ((X > 2) & (X < 7)).all(axis=1).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dprect.fit(X, y, grid=dprect.Grid(0.0, 10.0, 1024), epsilon=2.0, delta=1e-6,
                          seed=1, features=["a", "b"])


def _row(result: dprect.FitResult, run_id: str) -> pa.Table:
    return rt.result_row(result, run_id=run_id, dataset="native",
                         started_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))


def _engines(path: Path) -> list[str]:
    """The engine of each commit (commitInfo.engineInfo or clientVersion), in order."""
    out = []
    for log in sorted((path / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            info = json.loads(line).get("commitInfo") if line.strip() else None
            if info is not None:
                out.append(str(info.get("engineInfo") or info.get("clientVersion") or ""))
    return out


def _commit_times(path: Path) -> list[int]:
    """Each commit's timestamp (ms), in order."""
    out = []
    for log in sorted((path / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            info = json.loads(line).get("commitInfo") if line.strip() else None
            if info is not None:
                out.append(int(info.get("inCommitTimestamp") or info["timestamp"]))
    return out


def _write_partitioned(spark, path: Path) -> None:
    gen = np.random.default_rng(3)
    rows = [(float(a), float(b), int(a > 3 and b < 6), ("x", "y", "z")[i % 3])
            for i, (a, b) in enumerate(gen.uniform(0, 10, size=(300, 2)))]
    df = spark.createDataFrame(rows, "a double, b double, y int, p string")
    df.repartition(2).write.format("delta").partitionBy("p").save(str(path))


# -- the session -----------------------------------------------------------------------
def test_session_has_delta(native) -> None:
    assert session_mod.delta_jars(), "the jars make jars cached"
    assert source_mod.has_delta_extension(native)
    assert native.conf.get("spark.sql.catalog.spark_catalog") == session_mod.DELTA_CATALOG


def test_delta_jars_from_the_environment(tmp_path, monkeypatch) -> None:
    (tmp_path / "a.jar").write_bytes(b"")
    (tmp_path / "b.jar").write_bytes(b"")
    monkeypatch.setenv(session_mod.DELTA_JARS_ENV, str(tmp_path))
    assert session_mod.delta_jars() == [str(tmp_path / "a.jar"), str(tmp_path / "b.jar")]
    settings: dict[str, str] = {"spark.sql.extensions": "x.Ext"}
    monkeypatch.setattr(session_mod.SparkContext, "_gateway", None)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    session_mod._add_delta(settings, None, True)
    assert settings["spark.jars"].split(",") == session_mod.delta_jars()
    assert settings["spark.sql.extensions"] == f"x.Ext,{session_mod.DELTA_EXTENSION}"
    off: dict[str, str] = {}
    session_mod._add_delta(off, False, True)
    assert off == {}
    monkeypatch.setenv(session_mod.DELTA_JARS_ENV, str(tmp_path / "none"))
    with pytest.raises(RuntimeError, match="make jars"):
        session_mod._add_delta({}, True, True)


# -- reading ---------------------------------------------------------------------------
def test_native_read_time_travel_and_write(native, result, tmp_path) -> None:
    """The results table written natively (two appends), read back natively at each
    version and by delta-rs."""
    path = tmp_path / "results"
    assert rt.delta_session() is not None
    assert rt.append_result(path, _row(result, "r0")) == 0
    assert rt.append_result(path, _row(result, "r1")) == 1
    assert all("Apache-Spark" in e for e in _engines(path)), _engines(path)
    assert rt.has_run(path, "r1") and not rt.has_run(path, "r2")
    rt.check_results_table(path)
    latest = read_source(native, path, format="delta")
    assert sorted(r.run_id for r in latest.select("run_id").collect()) == ["r0", "r1"]
    old = read_source(native, path, version=0)
    assert [r.run_id for r in old.select("run_id").collect()] == ["r0"]
    assert dict(old.dtypes) == {"run_id": "string", "dataset": "string",
                                "features": "array<string>", "lower": "array<double>",
                                "upper": "array<double>", "method": "string",
                                "epsilon": "double", "delta": "double",
                                "neighbouring": "string", "privacy_bound": "string",
                                "parameters": "string", "dprect_version": "string",
                                "started_at": "timestamp"}
    table = rt.read_results(path)  # delta-rs reads Spark's table, schema as before
    assert table.num_rows == 2 and table.column_names == rt.SCHEMA.names
    stamps = _commit_times(path)
    between = datetime.fromtimestamp((stamps[0] + stamps[1]) / 2000, tz=UTC)
    assert [r.run_id for r in read_source(native, path, timestamp=between)
            .select("run_id").collect()] == ["r0"]
    assert read_source(native, path, timestamp=datetime.now(UTC)).count() == 2  # the latest
    with pytest.raises(InputDataError, match="has no version 7"):
        read_source(native, path, version=7)
    with pytest.raises(InputDataError, match="no version at or before"):
        read_source(native, path, timestamp="2001-01-01T00:00:00Z")


def test_native_append_to_a_delta_rs_table(native, result, tmp_path) -> None:
    path = tmp_path / "mixed"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rt, "delta_session", lambda: None)
        assert rt.append_result(path, _row(result, "old")) == 0
    assert rt.append_result(path, _row(result, "new")) == 1
    engines = _engines(path)
    assert "Apache-Spark" not in engines[0] and "Apache-Spark" in engines[1], engines
    assert rt.read_results(path).num_rows == 2


def test_partition_filter_prunes_files(native, tmp_path) -> None:
    path = tmp_path / "parts"
    _write_partitioned(native, path)
    every = read_source(native, path).inputFiles()
    df = read_source(native, path, where="p = 'y'")
    files = df.inputFiles()
    assert files and len(files) < len(every)
    assert all("/p=y/" in f for f in files)
    plan = native._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "simple")
    assert "PartitionFilters: [isnotnull(p" in plan and "= y)" in plan
    assert df.count() == 100


# -- the delta-rs fallback -------------------------------------------------------------
def test_fallback_reads_the_same_rows(native, tmp_path, monkeypatch) -> None:
    path = tmp_path / "parts"
    _write_partitioned(native, path)
    got = sorted(read_source(native, path, where="p = 'x'").collect())
    monkeypatch.setattr(source_mod, "has_delta_extension", lambda spark: False)
    assert sorted(read_source(native, path, where="p = 'x'").collect()) == got


@pytest.mark.filterwarnings("ignore:this run used a fixed seed")
def test_same_rectangle_native_and_delta_rs(native, tmp_path, monkeypatch) -> None:
    path = tmp_path / "parts"
    _write_partitioned(native, path)

    def fit() -> dprect.FitResult:
        df = read_source(native, path, where="p <> 'z'")
        return fit_dataframe(df, features=["a", "b"], label="y", grid=GRID, epsilon=4.0,
                             delta=1e-6, seed=11)

    first = fit()
    monkeypatch.setattr(source_mod, "has_delta_extension", lambda spark: False)
    second = fit()
    assert first.to_json() == second.to_json()
    assert not first.empty


FALLBACK_SCRIPT = textwrap.dedent("""
    import json, sys
    from datetime import UTC, datetime
    import pyarrow as pa
    from dprect.engines.spark.session import has_delta, local_session
    from dprect.engines.spark.source import read_source
    from dprect.release import results_table as rt
    spark = local_session("local[1]")
    path = sys.argv[1]
    out = {"has_delta": has_delta(spark), "session": rt.delta_session() is not None,
           "rows": read_source(spark, path, format="delta").count(),
           "v0": read_source(spark, path, version=0).count()}
    row = pa.Table.from_pylist([{**rt.read_results(path).to_pylist()[0], "run_id": "rs"}],
                               schema=rt.SCHEMA)
    out["version"] = rt.append_result(path, row)
    print(json.dumps(out))
""")


def test_session_without_delta_uses_delta_rs(native, result, tmp_path) -> None:
    """A fresh process with DPRECT_DELTA=off: no Delta in the session, the table (written
    natively here) read and appended through delta-rs."""
    path = tmp_path / "results"
    rt.append_result(path, _row(result, "r0"))
    rt.append_result(path, _row(result, "r1"))
    env = {**os.environ, "DPRECT_DELTA": "off", "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    proc = subprocess.run([sys.executable, "-c", FALLBACK_SCRIPT, str(path)], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"has_delta": False, "session": False, "rows": 2, "v0": 1, "version": 2}
    assert "Apache-Spark" not in _engines(path)[-1]
    assert sorted(r.run_id for r in read_source(native, path).collect()) == ["r0", "r1", "rs"]
