"""No value from a row in any message or log line (issue 10, point 2).

A Parquet table holds a secret string; Spark's own error text quotes it when a row filter
casts it (``[CAST_INVALID_INPUT] The value 'SECRET-…'``), and Spark's task-failure log lines
repeat it. Here: the sanitising function over representative Spark exceptions (real ones,
raised by the shared session), and the CLI and the fit job run end to end in subprocesses
— exit 2, one line on stderr naming the step and the expression, and the secret nowhere
in stdout, stderr or any file the run wrote.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import messages

from dprect.app.jobs_support import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_SPARK, describe_failure
from dprect.core.errors import InputDataError

REPO = Path(__file__).resolve().parents[2]
SECRET = "SECRET-VALUE-42"
#: written by the JVM itself before any Spark code runs (Spark 4.2 adds the module)
JVM_BANNER = re.compile(r"^WARNING: Using incubator modules: ")
#: Spark's start-up lines under its default log4j profile (no SPARK_CONF_DIR): before the
#: session exists, so before any row is read
SPARK_STARTUP = re.compile(r"^(Using Spark's default log4j profile: |\d\d/\d\d/\d\d "
                           r"\d\d:\d\d:\d\d (INFO|WARN) )")


@pytest.fixture(scope="module")
def secret_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """x, y (label) and a string column s whose first value is the secret."""
    path = tmp_path_factory.mktemp("secret") / "t.parquet"
    pq.write_table(pa.table({"x": [0.1, 0.2, 0.3, 0.4], "y": [1, 0, 1, 1],
                             "s": [SECRET, "1", "2", "3"]}), path)
    return path


def _raised(action: Callable[[], object]) -> BaseException:
    try:
        action()
    except BaseException as exc:  # the exception under test
        return exc
    raise AssertionError("no error was raised")


# -- the sanitising function -----------------------------------------------------------------
def test_spark_message_never_carries_a_row_value(spark, secret_table: Path,
                                                 tmp_path: Path) -> None:
    from pyspark.errors import PySparkException

    from dprect.engines.spark.source import spark_error_info, spark_message

    def boom(batches):  # defined here so that the worker gets it by value
        for batch in batches:  # a Python worker failing with a value in its message
            raise ValueError("bad value " + str(batch.column("s")[0]))
            yield batch

    df = spark.read.parquet(str(secret_table))
    not_parquet = tmp_path / "t.csv"
    not_parquet.write_text(f"x,s\n1,{SECRET}\n")
    cases = {  # action -> (condition, words the message must hold)
        "cast": (lambda: df.filter("cast(s as int) > 0").count(),
                 "CAST_INVALID_INPUT", ["`cast(s as int)`", "try_cast"]),
        "cast in a longer expression": (
            lambda: df.selectExpr(f"cast(concat(s, '{SECRET}') as double) AS z").collect(),
            "CAST_INVALID_INPUT", ["concat(s, '?')"]),
        "division by zero": (lambda: df.filter("x / (y - y) > 0").count(),
                             "DIVIDE_BY_ZERO", ["try_divide"]),
        "raise_error": (lambda: df.filter("raise_error(s) IS NULL").collect(),
                        "USER_RAISED_EXCEPTION", []),
        "assert_true": (lambda: df.filter(f"assert_true(s != '{SECRET}') IS NULL").collect(),
                        "USER_RAISED_EXCEPTION", []),
        "python worker": (lambda: df.mapInArrow(boom, df.schema).collect(),
                          "PYTHON_EXCEPTION", []),
        "not a parquet file": (lambda: spark.read.parquet(str(not_parquet)),
                               "FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER", ["t.csv"]),
        # prints the expression with its literal unquoted: named by its condition, unless
        # the caller vouches for the expression (below)
        "type mismatch": (lambda: df.filter(f"array_contains(x, '{SECRET}')").schema,
                          "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", []),
    }
    for name, (action, condition, words) in cases.items():
        exc = _raised(action)
        # Spark's own text quotes the value (or, for the file, its bytes) ...
        leak = {"not a parquet file": "but found [", "division by zero": "/"}.get(name, SECRET)
        assert leak in str(exc), name
        # ... the message does not
        message = spark_message(exc)
        assert SECRET not in message, (name, message)
        assert leak == "/" or leak not in message, (name, message)
        assert "\n" not in message, name
        assert spark_error_info(exc).condition == condition, name
        assert condition in message and "withheld" in message, (name, message)
        for word in words:
            assert word in message, (name, message)

    # analysis errors about the schema keep Spark's text (names, never values) ...
    exc = _raised(lambda: df.filter("nosuch > 1").schema)
    assert isinstance(exc, PySparkException)
    message = spark_message(exc)
    assert message.startswith("[UNRESOLVED_COLUMN.WITH_SUGGESTION]") and "`nosuch`" in message
    assert "`s`, `x`, `y`" in message
    # ... and so do syntax errors and type mismatches in the caller's own expression
    exc = _raised(lambda: df.filter("x > ").schema)
    assert spark_message(exc, own_expression=True).startswith("[PARSE_SYNTAX_ERROR]")
    assert spark_message(exc).startswith("Spark error PARSE_SYNTAX_ERROR")
    exc = _raised(lambda: df.filter("x AND 1").schema)
    assert "(x AND 1)" in spark_message(exc, own_expression=True)
    # something that is not a Spark error at all: its class, nothing else
    assert spark_message(RuntimeError(SECRET)).startswith("Spark failed (RuntimeError)")


def test_masked_fragments_keep_names_and_drop_literals() -> None:
    from dprect.engines.spark.source import mask_literals

    assert mask_literals("cast(s as int) > 0") == "cast(s as int) > ?"
    assert mask_literals("`col 1` < CAST('0.53' AS DOUBLE) AND x2 = \"a\"") == \
        "`col 1` < CAST('?' AS DOUBLE) AND x2 = '?'"
    assert mask_literals("f(1.5e3, .25, 10L, 'it''s')") == "f(?, ?, ?, '?''?')"


def test_read_and_filter_errors_name_the_step_not_the_value(spark, secret_table: Path,
                                                            tmp_path: Path) -> None:
    from dprect.engines.spark.fit import prepare_fit
    from dprect.engines.spark.source import read_source

    df = read_source(spark, secret_table, where="cast(s as int) > 0")  # lazy: no error yet
    with pytest.raises(InputDataError) as caught:
        prepare_fit(df, features=["x"], label="y", epsilon=1.0, delta=1e-6)
    message = str(caught.value)
    assert SECRET not in message
    assert message.startswith("cannot read the input: Spark error CAST_INVALID_INPUT")
    assert "`cast(s as int)`" in message
    # a filter that does not resolve names the filter, with Spark's analysis text
    with pytest.raises(InputDataError, match=r"row filter 'x AND 1' is not valid.*"
                                             r"DATATYPE_MISMATCH"):
        read_source(spark, secret_table, where="x AND 1")


def test_unexpected_errors_print_their_type_only() -> None:
    code, message = describe_failure(ValueError(f"could not convert {SECRET!r}"))
    assert code == EXIT_INTERNAL and SECRET not in message and "ValueError" in message


def test_escaped_spark_errors_are_sanitised(spark, secret_table: Path) -> None:
    df = spark.read.parquet(str(secret_table))
    exc = _raised(lambda: df.filter("cast(s as int) > 0").count())
    code, message = describe_failure(exc)
    assert code == EXIT_SPARK and SECRET not in message
    assert message.startswith("Spark failed: Spark error CAST_INVALID_INPUT")


def test_log_configurations_turn_the_task_failure_loggers_off() -> None:
    from dprect.engines.spark.session import LOG4J2_PROPERTIES, QUIET_LOGGERS

    def levels(text: str) -> dict[str, str]:
        props = dict(ln.split(" = ", 1) for ln in text.splitlines()
                     if " = " in ln and not ln.startswith("#"))
        return {props[k]: props[k[:-len(".name")] + ".level"]
                for k in props if k.startswith("logger.") and k.endswith(".name")}

    shipped = levels((REPO / "conf" / "spark" / "log4j2.properties").read_text())
    generated = levels(LOG4J2_PROPERTIES)
    for name in QUIET_LOGGERS:
        assert shipped.get(name) == "off", name
        assert generated.get(name) == "off", name


def test_sessions_quiet_the_loggers_at_run_time(spark) -> None:
    from dprect.engines.spark.session import QUIET_LOGGERS, QUIET_PYTHON_LOGGERS

    jvm = spark.sparkContext._jvm
    manager = jvm.org.apache.logging.log4j.LogManager
    spark.sparkContext.setLogLevel("INFO")  # a user asking for more keeps them off
    try:
        for name in QUIET_LOGGERS:
            assert manager.getLogger(name).getLevel().toString() == "OFF", name
    finally:
        spark.sparkContext.setLogLevel("ERROR")  # the session's own level (local_session)
    import logging

    for name in QUIET_PYTHON_LOGGERS:
        assert logging.getLogger(name).disabled, name


# -- end to end: the CLI and the fit job ----------------------------------------------------
def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SPARK_CONF_DIR", None)  # no help from conf/spark: dprect itself keeps quiet
    env.pop("DPRECT_DEBUG", None)
    env.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                "SPARK_LOCAL_IP": "127.0.0.1", **extra})
    return env


def _assert_secret_nowhere(done: subprocess.CompletedProcess[str], run_dir: Path) -> None:
    assert SECRET not in done.stdout and SECRET not in done.stderr
    written = [p for p in run_dir.rglob("*") if p.is_file()]
    for path in written:  # logs, derby.log, event logs, anything Spark left behind
        assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.slow
def test_cli_keeps_the_secret_out_of_messages_and_logs(secret_table: Path,
                                                       tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "dprect", "fit", "--engine", "spark", "--master", "local[1]",
         "--input", str(secret_table), "--features", "x", "--label", "y",
         "--where", "cast(s as int) > 0", "--epsilon", "1", "--delta", "1e-6",
         "--output", str(run_dir / "r.json")],
        env=_env(SPARK_LOG_DIR=str(run_dir / "logs")), cwd=run_dir, capture_output=True,
        text=True, timeout=400)
    assert done.returncode == EXIT_BAD_INPUT, done.stdout + done.stderr
    # the heartbeat (a Spark read may take 10 s) is progress, kept in the secret check
    lines = [ln for ln in messages(done.stderr) if not JVM_BANNER.match(ln)]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("dprect: error: cannot read the input: "), lines[0]
    assert "CAST_INVALID_INPUT" in lines[0] and "`cast(s as int)`" in lines[0]
    _assert_secret_nowhere(done, run_dir)
    assert not (run_dir / "r.json").exists()


@pytest.mark.slow
def test_fit_job_keeps_the_secret_out_of_messages_and_logs(secret_table: Path,
                                                           tmp_path: Path) -> None:
    import pyspark

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    config = run_dir / "job.yaml"
    config.write_text("fit:\n  features: [x]\n  label: y\n  epsilon: 1.0\n  delta: 1.0e-6\n")
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    done = subprocess.run(
        [str(submit), "--master", "local[1]", str(REPO / "jobs" / "fit_rectangle.py"),
         "--config", str(config), "--set", f"input={secret_table}",
         "--set", "where=cast(s as int) > 0", "--set", f"output={run_dir / 'r.json'}"],
        env=_env(SPARK_LOG_DIR=str(run_dir / "logs")), cwd=run_dir, capture_output=True,
        text=True, timeout=400)
    assert done.returncode == EXIT_BAD_INPUT, done.stdout + done.stderr
    # Spark's own start-up lines (INFO, default profile) come before the session exists
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()
             and not JVM_BANNER.match(ln) and not SPARK_STARTUP.match(ln)]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("fit_rectangle: error: cannot read the input: "), lines[0]
    assert "CAST_INVALID_INPUT" in lines[0] and "`cast(s as int)`" in lines[0]
    assert "error" not in done.stdout.lower(), done.stdout  # the line went to stderr only
    _assert_secret_nowhere(done, run_dir)
    assert not (run_dir / "r.json").exists()


WORKER_WARNS = """
import sys
from dprect.engines.spark.session import local_session

spark = local_session("local[1]", log_level="INFO")
df = spark.read.parquet(sys.argv[1])

def warn(batches):
    import warnings
    for batch in batches:  # a Python worker warning with a value in its text
        warnings.warn("value " + str(batch.column("s")[0]))
        yield batch

print("rows", len(df.mapInArrow(warn, df.schema).collect()))
spark.stop()
"""


@pytest.mark.slow
def test_python_workers_print_no_warnings(secret_table: Path, tmp_path: Path) -> None:
    """A worker's stderr reaches the executor's stderr without log4j: no warnings there."""
    script = tmp_path / "warns.py"
    script.write_text(WORKER_WARNS)
    done = subprocess.run([sys.executable, str(script), str(secret_table)], env=_env(),
                          cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0 and "rows 4" in done.stdout, done.stdout + done.stderr
    assert SECRET not in done.stdout + done.stderr


def test_a_lost_connect_server_is_named_with_its_fix_not_the_row_filters() -> None:
    """A Spark Connect server that stops mid-run surfaces, after the client's retries, as a
    gRPC UNAVAILABLE error without a condition: named as the lost server with what to do
    about it (not "check the row filter"), its text (the gRPC details) withheld."""
    import grpc
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    from dprect.engines.spark.source import spark_message

    lost = SparkConnectGrpcException(message=f"failed to connect {SECRET}",
                                     grpc_status_code=grpc.StatusCode.UNAVAILABLE)
    line = spark_message(lost)
    assert line.startswith("the Spark Connect server stopped answering (gRPC status "
                           "UNAVAILABLE)"), line
    assert "server runs and is reachable" in line and "row filter" not in line
    code, reported = describe_failure(lost)
    assert code == EXIT_SPARK and reported == f"Spark failed: {line}"
    other = SparkConnectGrpcException(message=SECRET,
                                      grpc_status_code=grpc.StatusCode.INTERNAL)
    assert "gRPC status INTERNAL" in spark_message(other)
    for text in (line, spark_message(other)):
        assert SECRET not in text
