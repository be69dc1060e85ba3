"""The JVM options dprect's sessions start with: HotSpot's huge-method flag
(:data:`dprect.engines.spark.session.JIT_OPTION`) and the throughput collector
(:data:`~dprect.engines.spark.session.GC_OPTION`) for the driver and executors, beside the
log configuration, never over options a caller gave; conf/spark says the same for
spark-submit; and the pass plan's check that the tasks' JVMs have it."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

from pyspark import SparkContext

from dprect.engines.spark import session as S  # noqa: N812

REPO = Path(__file__).resolve().parents[2]


def _launch(monkeypatch, settings):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.setattr(SparkContext, "_gateway", None)  # as before a JVM starts
    folder = S._launch_options(settings)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
    return folder


def test_a_jvm_dprect_starts_compiles_huge_methods(monkeypatch):
    settings: dict[str, str] = {}
    assert _launch(monkeypatch, settings) is not None
    assert settings[S.EXECUTOR_JAVA_OPTIONS] == S.JAVA_OPTIONS
    assert S.JAVA_OPTIONS.split() == [S.JIT_OPTION, S.GC_OPTION]
    driver = settings[S.DRIVER_JAVA_OPTIONS].split()
    assert driver[:2] == [S.JIT_OPTION, S.GC_OPTION]
    assert driver[2].startswith("-Dlog4j2.configurationFile=")


def test_options_a_caller_gave_are_kept(monkeypatch):
    settings = {S.EXECUTOR_JAVA_OPTIONS: "-Xss4m", S.DRIVER_JAVA_OPTIONS: "-Xss8m"}
    _launch(monkeypatch, settings)
    assert settings[S.EXECUTOR_JAVA_OPTIONS] == "-Xss4m"
    assert settings[S.DRIVER_JAVA_OPTIONS].split()[0] == "-Xss8m"
    assert S.JIT_OPTION not in settings[S.DRIVER_JAVA_OPTIONS]
    assert S.GC_OPTION not in settings[S.DRIVER_JAVA_OPTIONS]


def test_a_configuration_folder_is_left_to_itself(monkeypatch):
    monkeypatch.setenv("SPARK_CONF_DIR", str(REPO / "conf" / "spark"))
    settings: dict[str, str] = {}
    assert S._launch_options(settings) is None and settings == {}


def test_conf_spark_sets_the_flag_for_spark_submit():
    lines = (REPO / "conf" / "spark" / "spark-defaults.conf").read_text().splitlines()
    entries = dict(line.split(None, 1) for line in lines if line.strip()
                   and not line.startswith("#"))
    for key in (S.DRIVER_JAVA_OPTIONS, S.EXECUTOR_JAVA_OPTIONS):
        assert S.JIT_OPTION in entries[key].split()
        assert S.GC_OPTION in entries[key].split()


def test_compiles_huge_methods(spark):
    assert S.compiles_huge_methods(spark)  # the test session: a JVM dprect started

    def fake(master, options):
        values = {"spark.master": master, S.EXECUTOR_JAVA_OPTIONS: options}
        conf = SimpleNamespace(get=lambda key, default=None: values.get(key, default))
        return SimpleNamespace(sparkContext=SimpleNamespace(getConf=lambda: conf))

    assert S.compiles_huge_methods(fake("spark://m:7077", f"-Xss4m {S.JIT_OPTION}"))
    assert not S.compiles_huge_methods(fake("spark://m:7077", "-Xss4m"))
    assert not S.compiles_huge_methods(fake("yarn", None))


def _warehouse(monkeypatch, settings, is_local=True):
    """``settings`` after :func:`~dprect.engines.spark.session._private_warehouse`, as
    before a JVM starts; the temporary folder it made (if any) removed."""
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setattr(SparkContext, "_gateway", None)  # as before a JVM starts
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    S._private_warehouse(settings, is_local)
    given = settings.get(S.WAREHOUSE)
    if given and given.startswith("file:") and "dprect-warehouse-" in given:
        shutil.rmtree(Path(given.removeprefix("file://")), ignore_errors=True)
    return settings


def test_a_local_jvm_dprect_starts_keeps_its_warehouse_out_of_the_current_folder(
        monkeypatch, tmp_path):
    """Without a setting, a private temporary folder (Spark's default is
    ``spark-warehouse/`` in the current folder); the caller's ``conf`` and
    spark-defaults.conf win; a cluster's master, spark-submit's JVM or a running one are
    left as they are; a JVM that runs already (spark-submit's) is asked for its own
    configuration (its ``--conf`` and properties file)."""
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))  # no spark-defaults.conf there
    made = _warehouse(monkeypatch, {})[S.WAREHOUSE]
    assert made.startswith("file:///") and "dprect-warehouse-" in made
    assert not made.startswith(Path.cwd().as_uri())

    assert _warehouse(monkeypatch, {S.WAREHOUSE: "/data/wh"}) == {S.WAREHOUSE: "/data/wh"}
    assert _warehouse(monkeypatch, {}, is_local=False) == {}
    (tmp_path / "spark-defaults.conf").write_text(f"# a comment\n{S.WAREHOUSE}  /data/wh\n")
    assert _warehouse(monkeypatch, {}) == {}
    (tmp_path / "spark-defaults.conf").write_text(f"{S.WAREHOUSE}=/data/wh\n")
    assert _warehouse(monkeypatch, {}) == {}
    (tmp_path / "spark-defaults.conf").unlink()

    def submitted(given: bool) -> dict[str, str]:  # spark-submit's JVM, with its conf
        monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
        monkeypatch.setattr(SparkContext, "_active_spark_context", None)
        monkeypatch.setattr(S, "_submitted_set", lambda key: given and key == S.WAREHOUSE)
        settings: dict[str, str] = {}
        S._private_warehouse(settings, True)
        if settings:
            shutil.rmtree(Path(settings[S.WAREHOUSE].removeprefix("file://")))
        return settings

    assert submitted(True) == {}
    assert "dprect-warehouse-" in submitted(False)[S.WAREHOUSE]
    monkeypatch.setattr(SparkContext, "_active_spark_context", object())  # one runs
    settings: dict[str, str] = {}
    S._private_warehouse(settings, True)
    assert settings == {}


def test_the_session_s_log_level_is_error_by_default():
    """The level dprect's log4j2 configuration starts a JVM with; a WARN level set after
    start-up printed Spark's warnings on the command line (session 42)."""
    import inspect

    from dprect.app.jobs_support import SPARK_OPTIONS

    for function in (S.local_session, S.open_session):
        assert inspect.signature(function).parameters["log_level"].default == "ERROR"
    assert SPARK_OPTIONS["log_level"].default == "ERROR"  # the jobs' spark.log_level
    assert "rootLogger.level = error" in S.LOG4J2_PROPERTIES.splitlines()
