"""A SparkSession configured for dprect.

:func:`local_session` builds (or reuses) a session with settings that suit dprect's small
driver-side jobs: two local cores by default, few shuffle partitions, no web UI, no console
progress bars, quiet logs, and Python workers on the interpreter named by
``PYSPARK_PYTHON`` (or the running one when it is unset).

No log line echoes a row. Spark reports a failing task with its exception, and that text
can quote a value (``[CAST_INVALID_INPUT] The value '...'``, a Python worker's
traceback). :func:`quiet_task_failures` turns the loggers that do so (:data:`QUIET_LOGGERS`)
off in the driver's JVM — which holds the executors of a ``local`` master — and pyspark's
Python loggers of query errors (:data:`QUIET_PYTHON_LOGGERS`); the failure still reaches
the caller, as one line without the value (:func:`dprect.engines.spark.source.spark_message`).
:func:`local_session` calls it on every session it returns. A JVM that
:func:`local_session` starts itself (the ``dprect`` CLI, a script; not spark-submit) also
starts with :data:`LOG4J2_PROPERTIES` unless ``SPARK_CONF_DIR`` names a configuration,
so even its start-up is quiet. Executors in other JVMs (a standalone or YARN cluster) log
through their own configuration: give them ``conf/spark/log4j2.properties`` (the
``SPARK_CONF_DIR`` of the workers, as docker-compose.yml does).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
LOCAL_SHUFFLE_PARTITIONS = 4

#: JVM loggers that report failing tasks or jobs with the exception's text (which can
#: quote a row's value): always off. Keep conf/spark/log4j2.properties in step.
QUIET_LOGGERS = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.scheduler.TaskSchedulerImpl",
    "org.apache.spark.scheduler.DAGScheduler",
    "org.apache.spark.scheduler.TaskResultGetter",
    "org.apache.spark.api.python",
    "org.apache.spark.sql.execution.python",
    "org.apache.spark.sql.execution.datasources",
    "org.apache.spark.util.Utils",
)
#: pyspark's Python loggers that print a query error's full message (values included)
#: as it is raised
QUIET_PYTHON_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")

#: the log4j2 configuration of a JVM started by :func:`local_session`: errors only, on
#: stderr, and the loggers of :data:`QUIET_LOGGERS` off
LOG4J2_PROPERTIES = "\n".join([
    "# dprect: written by dprect.engines.spark.session for a JVM it starts itself",
    "rootLogger.level = error",
    "rootLogger.appenderRef.stderr.ref = console",
    "appender.console.type = Console",
    "appender.console.name = console",
    "appender.console.target = SYSTEM_ERR",
    "appender.console.layout.type = PatternLayout",
    "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex",
    *(f"logger.quiet{i}.name = {name}\nlogger.quiet{i}.level = off"
      for i, name in enumerate(QUIET_LOGGERS)),
    # a JVM started by pyspark is a "pyspark shell" whose default level is that of its
    # main class's logger: keep it the root's, so Spark neither changes the level nor
    # announces it on start-up
    "logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer",
    "logger.gateway.level = error",
    "logger.hadoop.name = org.apache.hadoop.util.NativeCodeLoader",
    "logger.hadoop.level = error",
]) + "\n"


def quiet_task_failures(spark: SparkSession) -> None:
    """Turn off the loggers that echo a failing task's exception: :data:`QUIET_LOGGERS`
    in this session's JVM (log4j2's ``Configurator``, through py4j) and
    :data:`QUIET_PYTHON_LOGGERS` here. Idempotent; the root level is left as it is. When
    log4j2 cannot be reached, the JVM's logging is turned off altogether."""
    from pyspark.logger import PySparkLogger

    for name in QUIET_PYTHON_LOGGERS:
        logger = PySparkLogger.getLogger(name)
        logger.disabled = True
        logger.setLevel(logging.CRITICAL + 1)
    try:
        jvm: Any = spark.sparkContext._jvm  # None without a JVM: caught below
        level = jvm.org.apache.logging.log4j.Level.OFF
        configurator = jvm.org.apache.logging.log4j.core.config.Configurator
        for name in QUIET_LOGGERS:
            configurator.setLevel(name, level)
    except Exception:  # not log4j2 core: silence the JVM rather than risk a value
        with contextlib.suppress(Exception):
            spark.sparkContext.setLogLevel("OFF")


def _quiet_launch_options(settings: dict[str, str]) -> str | None:
    """For a JVM about to be started by this process: add ``-Dlog4j2.configurationFile``
    (a private temporary copy of :data:`LOG4J2_PROPERTIES`) to the driver's Java options
    and return the folder to delete once the JVM is up; None when the JVM is not ours to
    configure (spark-submit started it, it runs already, ``SPARK_CONF_DIR`` is set, or the
    Java options name a log4j configuration)."""
    if (os.environ.get("PYSPARK_GATEWAY_PORT") or os.environ.get("SPARK_CONF_DIR")
            or SparkContext._gateway is not None):
        return None
    key = "spark.driver.extraJavaOptions"
    options = settings.get(key, "")
    if "log4j" in options:
        return None
    folder = tempfile.mkdtemp(prefix="dprect-log4j2-")
    path = Path(folder) / "log4j2.properties"
    path.write_text(LOG4J2_PROPERTIES)
    settings[key] = f"{options} -Dlog4j2.configurationFile={path.as_uri()}".strip()
    return folder


def local_session(master: str | None = None, *, app_name: str = "dprect",
                  shuffle_partitions: int | None = None,
                  conf: Mapping[str, object] | None = None,
                  log_level: str | None = "WARN") -> SparkSession:
    """A SparkSession for dprect (``getOrCreate``: an active session is reused).

    Guarantees: master ``master`` (default ``local[2]``); ``spark.ui.enabled=false`` and no
    console progress bars; for ``local`` masters ``spark.sql.shuffle.partitions`` = 4 and
    the driver bound to 127.0.0.1 unless ``SPARK_LOCAL_IP`` says otherwise; for other masters
    Spark's shuffle default unless ``shuffle_partitions`` is given; Python workers run
    ``$PYSPARK_PYTHON`` when set, else this interpreter; ``conf`` entries are applied last
    and win. A reused session keeps its static settings (Spark's rule). The root log
    level is ``log_level``, and failing tasks are never logged with their exception
    (:func:`quiet_task_failures`, whatever the level); Python workers print no warnings
    (``spark.executorEnv.PYTHONWARNINGS=ignore``: their stderr bypasses log4j).
    """
    master = master or DEFAULT_MASTER
    python = os.environ.get("PYSPARK_PYTHON") or sys.executable
    os.environ.setdefault("PYSPARK_PYTHON", python)
    settings: dict[str, str] = {
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.pyspark.python": python,
        # a Python worker's warnings go to the executor's stderr unfiltered: none at all
        "spark.executorEnv.PYTHONWARNINGS": "ignore",
    }
    is_local = master.startswith("local")
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(int(shuffle_partitions))
    elif is_local:
        settings["spark.sql.shuffle.partitions"] = str(LOCAL_SHUFFLE_PARTITIONS)
    if is_local and not os.environ.get("SPARK_LOCAL_IP"):
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    for key, value in (conf or {}).items():
        settings[str(key)] = str(value)
    launch_folder = _quiet_launch_options(settings)
    builder = SparkSession.builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    finally:
        if launch_folder is not None:  # log4j2 has read it as the JVM started
            shutil.rmtree(launch_folder, ignore_errors=True)
    if log_level:
        session.sparkContext.setLogLevel(log_level)
    quiet_task_failures(session)
    return session


def print_on_jvm_stderr(line: str) -> bool:
    """Print ``line`` on the stderr of spark-submit's JVM through py4j (which starts no
    JVM when ``PYSPARK_GATEWAY_PORT`` is set); False when it cannot. Used by
    :func:`dprect.app.failures.report_error`: under spark-submit the Python driver's own
    stderr is merged into spark-submit's stdout."""
    try:
        from pyspark import SparkContext

        SparkContext._ensure_initialized()
        jvm: Any = SparkContext._jvm
        err = jvm.java.lang.System.err
        err.println(line)
        err.flush()
        return True
    except Exception:
        return False
