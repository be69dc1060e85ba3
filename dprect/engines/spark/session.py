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

Delta Lake: :func:`local_session` configures native Delta (``spark.sql.extensions`` =
:data:`DELTA_EXTENSION`, ``spark.sql.catalog.spark_catalog`` = :data:`DELTA_CATALOG`) when
the delta-spark jars can be loaded: those :func:`delta_jars` finds (``make jars`` caches
them under ``.jars/spark-<major.minor>/delta-<version>/``, or ``$DPRECT_DELTA_JARS``
names them) are added to ``spark.jars`` of a JVM it starts; ``spark.jars.packages``
naming ``io.delta:`` or a running JVM (spark-submit ``--jars``) that already holds the
classes count too. ``delta=False`` (or ``DPRECT_DELTA=off``) keeps a session without
Delta, ``delta=True`` (``DPRECT_DELTA=on``) refuses to start without it.
:func:`has_delta` says whether a session has Delta.

The JVM bin count (issue #41, :mod:`dprect.engines.spark.jvm_bins`): :func:`local_session`
adds the jar ``make setup`` builds, ``.jars/spark-<major.minor>/dprect-bins-<version>.jar``
(:func:`bins_jar`), to ``spark.jars`` of a JVM it starts (and, on a ``local`` master, to
the driver's class path), beside Delta's; ``DPRECT_JVM_BINS=off`` leaves it out.
:func:`has_bins` says, once per session, whether its JVM holds the class at this kernel's
:data:`BINS_VERSION`; without it (no jar, another version, Spark Connect) describe's bins
are counted by the ``mapInArrow`` pass — the same cells, so the same release for a seed.

Spark Connect: :func:`open_session` with ``remote="sc://HOST:PORT"`` returns a Connect
session (:mod:`dprect.engines.spark.remote`), which has no JVM in this process. Its log
levels, quiet loggers, JIT flag and jars are the server's configuration (start the server
with ``SPARK_CONF_DIR`` = conf/spark); :func:`quiet_task_failures` then quiets only the
Python loggers and :func:`compiles_huge_methods` reads the server's Java options.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

from dprect.core.leftovers import remove_at_exit
from dprect.engines.spark.remote import connect_session, is_connect

DEFAULT_MASTER = "local[2]"
LOCAL_SHUFFLE_PARTITIONS = 4

#: Delta Lake's SQL extension and catalog (set by :func:`local_session` when the jars load)
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
#: the jar cache ``make jars`` fills: ``spark-<major.minor>/delta-<version>/*.jar``
JAR_CACHE = Path(__file__).resolve().parents[3] / ".jars"
#: the JVM bin count's class and version (BinsAggregator.VERSION must agree; the jar's
#: name carries it: :func:`bins_jar`); ``DPRECT_JVM_BINS`` = auto (default) | off
BINS_CLASS = "dprect.spark.BinsAggregator"
BINS_VERSION = 2
BINS_ENV = "DPRECT_JVM_BINS"
#: environment: ``DPRECT_DELTA`` = auto (default) | on | off; ``DPRECT_DELTA_JARS`` = jars
#: or folders of jars (``os.pathsep``-separated) used instead of the cache
DELTA_ENV = "DPRECT_DELTA"
DELTA_JARS_ENV = "DPRECT_DELTA_JARS"
#: Delta's snapshot-state partitions on a local master (Delta's default, 50, makes every
#: first read of a small table run 50 tasks)
LOCAL_DELTA_SNAPSHOT_PARTITIONS = 2

#: HotSpot interprets any method above 8,000 bytes of bytecode instead of compiling it.
#: Spark's whole-stage generated code for a wide table passes that (the ``pass`` strategy's
#: prefiltered stage at 32 features: 8,436 bytes, 4x slower than compiled; Spark's other
#: remedy, ``spark.sql.codegen.hugeMethodLimit`` = 8000, falls back to unfused operators
#: and was 1.7x slower than this flag: docs/architecture.md). dprect's sessions and
#: conf/spark/spark-defaults.conf set it.
JIT_OPTION = "-XX:-DontCompileHugeMethods"
#: HotSpot's throughput collector instead of Java 17's default, G1. A dprect job is a
#: batch: what counts is its CPU, not a pause's length, and G1 spends a concurrent-marking
#: thread's CPU whenever the heap's old part passes 45% — which a run that keeps blocks
#: (the many-groups aggregate's merged statistics and staged waves, a quantile box's rows)
#: does again and again; its blocks of ~1–2.4 MB are also G1 "humongous" objects (above
#: half a 1 MB region at a few GB of heap). Measured: the JVM's CPU of a grouped aggregate
#: of 3·10^5 groups, docs/results.md §5.3c (s34). dprect's sessions and
#: conf/spark/spark-defaults.conf set it beside :data:`JIT_OPTION`.
GC_OPTION = "-XX:+UseParallelGC"
#: the Java options a JVM dprect starts gets, driver and executors alike
JAVA_OPTIONS = f"{JIT_OPTION} {GC_OPTION}"
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
EXECUTOR_JAVA_OPTIONS = "spark.executor.extraJavaOptions"

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
    # Delta's writer and its post-commit hooks: a failed write's job abort (ERROR) and a
    # checksum it could not write (WARN), each with a Java stack trace (a full disk)
    "org.apache.spark.sql.delta",
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


def compiles_huge_methods(spark: SparkSession) -> bool:
    """Whether the JVMs that run this session's tasks compile methods of any size
    (:data:`JIT_OPTION`): the driver's own arguments for a ``local`` master (its tasks run
    there), ``spark.executor.extraJavaOptions`` otherwise. A Spark Connect session has no
    JVM here: the server's configuration is read instead (its
    ``spark.driver.extraJavaOptions`` for a ``local`` master). Never runs a job; False
    when neither can be read."""
    if is_connect(spark):
        try:
            local = (spark.conf.get("spark.master", "") or "").startswith("local")
            key = DRIVER_JAVA_OPTIONS if local else EXECUTOR_JAVA_OPTIONS
            return JIT_OPTION in (spark.conf.get(key, "") or "").split()
        except Exception:
            return False
    try:
        conf = spark.sparkContext.getConf()
        if conf.get("spark.master", "").startswith("local"):
            jvm: Any = spark.sparkContext._jvm
            args = jvm.java.lang.management.ManagementFactory.getRuntimeMXBean() \
                .getInputArguments()
            return JIT_OPTION in [str(a) for a in args]
        return JIT_OPTION in (conf.get(EXECUTOR_JAVA_OPTIONS) or "").split()
    except Exception:
        return False


def quiet_task_failures(spark: SparkSession) -> None:
    """Turn off the loggers that echo a failing task's exception: :data:`QUIET_LOGGERS`
    in this session's JVM (log4j2's ``Configurator``, through py4j) and
    :data:`QUIET_PYTHON_LOGGERS` here. Idempotent; the root level is left as it is. When
    log4j2 cannot be reached, the JVM's logging is turned off altogether. A Spark Connect
    session's JVM is the server's: its loggers are the server's log4j2 configuration
    (conf/spark/log4j2.properties), so only the Python loggers are turned off here."""
    from pyspark.logger import PySparkLogger

    for name in QUIET_PYTHON_LOGGERS:
        logger = PySparkLogger.getLogger(name)
        logger.disabled = True
        logger.setLevel(logging.CRITICAL + 1)
    if is_connect(spark):
        return
    try:
        jvm: Any = spark.sparkContext._jvm  # None without a JVM: caught below
        level = jvm.org.apache.logging.log4j.Level.OFF
        configurator = jvm.org.apache.logging.log4j.core.config.Configurator
        for name in QUIET_LOGGERS:
            configurator.setLevel(name, level)
    except Exception:  # not log4j2 core: silence the JVM rather than risk a value
        with contextlib.suppress(Exception):
            spark.sparkContext.setLogLevel("OFF")


def _launch_options(settings: dict[str, str]) -> str | None:
    """For a JVM about to be started by this process (not when spark-submit started it,
    it runs already, or ``SPARK_CONF_DIR`` names a configuration — conf/spark's
    spark-defaults.conf says the same): :data:`JAVA_OPTIONS` (:data:`JIT_OPTION`,
    :data:`GC_OPTION`) for the driver and executors unless their Java options are given,
    and ``-Dlog4j2.configurationFile`` (a private temporary copy of
    :data:`LOG4J2_PROPERTIES`) for the driver unless its options name a log4j
    configuration. Returns the folder to delete once the JVM is up (None: none)."""
    if (os.environ.get("PYSPARK_GATEWAY_PORT") or os.environ.get("SPARK_CONF_DIR")
            or SparkContext._gateway is not None):
        return None
    for key in (DRIVER_JAVA_OPTIONS, EXECUTOR_JAVA_OPTIONS):
        settings.setdefault(key, JAVA_OPTIONS)
    key = DRIVER_JAVA_OPTIONS
    options = settings[key]
    if "log4j" in options:
        return None
    folder = tempfile.mkdtemp(prefix="dprect-log4j2-")
    path = Path(folder) / "log4j2.properties"
    path.write_text(LOG4J2_PROPERTIES)
    settings[key] = f"{options} -Dlog4j2.configurationFile={path.as_uri()}".strip()
    return folder


#: Spark SQL's warehouse folder: Spark's default is ``spark-warehouse/`` in the current
#: folder, made as a session starts its catalog (:func:`_private_warehouse`)
WAREHOUSE = "spark.sql.warehouse.dir"


def _spark_defaults() -> Path | None:
    """The ``spark-defaults.conf`` a JVM started here reads: ``$SPARK_CONF_DIR``'s, else
    ``$SPARK_HOME/conf``'s, else that of pyspark's own Spark home (None: none found)."""
    folder = os.environ.get("SPARK_CONF_DIR")
    if not folder:
        home = os.environ.get("SPARK_HOME")
        if not home:
            import pyspark

            home = str(Path(pyspark.__file__).parent)
        folder = str(Path(home) / "conf")
    path = Path(folder) / "spark-defaults.conf"
    return path if path.is_file() else None


def _defaults_set(key: str) -> bool:
    """Whether the ``spark-defaults.conf`` of :func:`_spark_defaults` sets ``key``
    (Spark's syntax: the key, then whitespace or ``=``, then the value)."""
    path = _spark_defaults()
    if path is None:
        return False
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in path.read_text(encoding="utf-8").splitlines():
            words = line.strip().replace("=", " ", 1).split(None, 1)
            if words and words[0] == key:
                return True
    return False


def _submitted_set(key: str) -> bool:
    """Whether the JVM that runs already (spark-submit's) is configured with ``key``:
    spark-submit hands its ``--conf`` entries and its properties file (``--properties-file``,
    else ``spark-defaults.conf``) to its JVM as system properties, which a new
    ``SparkConf`` reads — and so does a JVM an earlier session of this process started.
    True when the JVM cannot be asked (the setting is then left to Spark)."""
    from pyspark import SparkConf

    try:
        SparkContext._ensure_initialized()
        return bool(SparkConf().contains(key))
    except Exception:
        return True


def _private_warehouse(settings: dict[str, str], is_local: bool) -> None:
    """For a ``local`` session about to start its context (none runs in this process):
    point :data:`WAREHOUSE` at a private temporary folder, removed when the process ends
    (:mod:`dprect.core.leftovers`), unless ``settings`` (the caller's ``conf``) set it,
    or the configuration of the JVM does — spark-defaults.conf for a JVM this process
    is about to start, the JVM's own (:func:`_submitted_set`: spark-submit's ``--conf``
    and properties file) when it runs already, as under spark-submit — so a run leaves no
    ``spark-warehouse/`` in the user's current folder. dprect names every table by its
    path; no table lives there."""
    if (not is_local or WAREHOUSE in settings
            or SparkContext._active_spark_context is not None):
        return
    if os.environ.get("PYSPARK_GATEWAY_PORT") or SparkContext._gateway is not None:
        if _submitted_set(WAREHOUSE):
            return
    elif _defaults_set(WAREHOUSE):
        return
    folder = tempfile.mkdtemp(prefix="dprect-warehouse-")
    remove_at_exit(folder)  # also when the CLI or a job ends with os._exit
    settings[WAREHOUSE] = Path(folder).as_uri()


#: Catalyst's constraint propagation (an optimizer rule set: it infers filters from other
#: filters and never changes a query's result)
CONSTRAINT_PROPAGATION = "spark.sql.constraintPropagation.enabled"


@contextlib.contextmanager
def constraints_unpropagated(spark: SparkSession) -> Iterator[None]:
    """Plan and run the queries inside with Catalyst's constraint propagation off, then
    put the session's own setting back (unset stays unset).

    Constraint propagation only adds or drops redundant filters; results are the same
    with it off. Its cost is exponential where a filter mentions many columns that a
    projection above it aliases: ``Project.getAllValidConstraints`` adds, for every
    alias ``e AS a``, a copy of each constraint mentioning ``e`` with ``a`` in its place,
    so a constraint over d aliased features is copied 2^d times. The prefetch pass's
    filter is one OR over every order's threshold and ships every feature under an
    alias: planning it took 2.2 s at d = 8 and 42.4 s at d = 12 with propagation on,
    5.6 s at d = 12 with it off (s29, loaded machine; docs/results.md §3). Off, no
    constraint is computed (``LogicalPlan.constraints`` is empty), whatever the aliases:
    this switch is the pass's one guard — its per-order bits are packed into bigints
    for size (:func:`~dprect.engines.spark.topk.own_sql`), not to keep them out of the
    constraints.
    The setting is the session's: another thread's query planned meanwhile is planned
    without it too, with the same results."""
    conf = spark.conf
    old = conf.get(CONSTRAINT_PROPAGATION, None)
    conf.set(CONSTRAINT_PROPAGATION, "false")
    try:
        yield
    finally:
        if old is None:
            conf.unset(CONSTRAINT_PROPAGATION)
        else:
            conf.set(CONSTRAINT_PROPAGATION, old)


def spark_minor_version() -> str:
    """The installed pyspark's ``major.minor`` (e.g. ``4.2``)."""
    import pyspark

    return ".".join(pyspark.__version__.split(".")[:2])


def _version_key(folder: Path) -> tuple[int, ...]:
    digits = folder.name.removeprefix("delta-").split(".")
    return tuple(int(d) if d.isdigit() else -1 for d in digits)


def delta_jars() -> list[str]:
    """The delta-spark jars for the installed Spark: those ``$DPRECT_DELTA_JARS`` names
    (jars or folders of jars; missing ones are skipped), else the newest
    ``.jars/spark-<major.minor>/delta-*`` folder ``make jars`` completed; [] when none."""
    named = os.environ.get(DELTA_JARS_ENV, "").strip()
    if named:
        jars: list[str] = []
        for entry in filter(None, named.split(os.pathsep)):
            p = Path(entry)
            if p.is_dir():
                jars.extend(sorted(str(j) for j in p.glob("*.jar")))
            elif p.is_file():
                jars.append(str(p))
        return jars
    base = JAR_CACHE / f"spark-{spark_minor_version()}"
    folders = sorted((f for f in base.glob("delta-*") if (f / ".complete").is_file()),
                     key=_version_key)
    return sorted(str(j) for j in folders[-1].glob("*.jar")) if folders else []


def bins_jar(existing: bool = True) -> Path | None:
    """The JVM bin count's jar, ``.jars/spark-<major.minor>/dprect-bins-<version>.jar``
    (``make setup`` builds it: :func:`dprect.engines.spark.jvm_bins.build_jar`); with
    ``existing``, None when it is not there."""
    jar = JAR_CACHE / f"spark-{spark_minor_version()}" / f"dprect-bins-{BINS_VERSION}.jar"
    return jar if jar.is_file() or not existing else None


def bins_wanted() -> bool:
    """Whether the JVM bin count may run (``DPRECT_JVM_BINS`` is not off)."""
    return os.environ.get(BINS_ENV, "auto").strip().lower() not in ("0", "off", "false", "no")


def _add_bins(settings: dict[str, str], is_local: bool) -> None:
    """Add the JVM bin count's jar (:func:`bins_jar`) to ``settings`` of a JVM this
    process starts: ``spark.jars`` (the executors fetch it) and, on a ``local`` master, the
    driver's class path (its executors share the driver's JVM). Nothing when the jar is
    missing, ``DPRECT_JVM_BINS`` is off or a JVM already runs (spark-submit's: its
    ``--jars`` say; :func:`has_bins` asks it)."""
    jvm_running = bool(os.environ.get("PYSPARK_GATEWAY_PORT")) or SparkContext._gateway is not None
    jar = bins_jar()
    if jar is None or jvm_running or not bins_wanted():
        return
    present = [j for j in settings.get("spark.jars", "").split(",") if j]
    if str(jar) not in present:
        settings["spark.jars"] = ",".join([*present, str(jar)])
    if is_local:
        path = [p for p in settings.get("spark.driver.extraClassPath", "").split(os.pathsep) if p]
        if str(jar) not in path:
            settings["spark.driver.extraClassPath"] = os.pathsep.join([*path, str(jar)])


#: has_bins' answer per session (its JVM's classes do not change while it runs)
_BINS: weakref.WeakKeyDictionary[SparkSession, bool] = weakref.WeakKeyDictionary()


def has_bins(spark: SparkSession) -> bool:
    """Whether ``spark`` counts describe's bins in its JVM: ``DPRECT_JVM_BINS`` is not
    off, it is a classic session (Spark Connect: no JVM here) and its JVM loads
    :data:`BINS_CLASS` at :data:`BINS_VERSION` — the JVM asked once per session. Public:
    the session's configuration only."""
    if not bins_wanted() or is_connect(spark):
        return False
    known = _BINS.get(spark)
    if known is None:
        known = False
        try:
            jvm = spark.sparkContext._jvm
            if jvm is not None and _jvm_has_class(jvm, BINS_CLASS):
                known = int(jvm.dprect.spark.BinsAggregator.version()) == BINS_VERSION
        except Exception:  # a stopped or broken session: the mapInArrow pass
            known = False
        _BINS[spark] = known
    return known


def _delta_mode(delta: bool | None) -> bool | None:
    if delta is not None:
        return bool(delta)
    value = os.environ.get(DELTA_ENV, "auto").strip().lower()
    if value in ("0", "off", "false", "no"):
        return False
    if value in ("1", "on", "true", "yes"):
        return True
    return None


def _jvm_has_class(jvm: Any, name: str) -> bool:
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(name, False, loader)
        return True
    except Exception:
        return False


def _add_delta(settings: dict[str, str], delta: bool | None, is_local: bool) -> None:
    """Add Delta's jars, extension and catalog to ``settings`` when they can load (see the
    module's notes); raise when ``delta`` (or ``DPRECT_DELTA=on``) asks for Delta and
    it cannot."""
    mode = _delta_mode(delta)
    if mode is False:
        return
    jvm_running = bool(os.environ.get("PYSPARK_GATEWAY_PORT")) or SparkContext._gateway is not None
    available = "io.delta:" in settings.get("spark.jars.packages", "")
    if jvm_running:  # spark-submit (or an earlier session) started the JVM: ask it
        try:
            SparkContext._ensure_initialized()
            available = available or _jvm_has_class(SparkContext._jvm, DELTA_EXTENSION)
        except Exception:
            pass
    elif not available:
        jars = delta_jars()
        if jars:
            present = [j for j in settings.get("spark.jars", "").split(",") if j]
            settings["spark.jars"] = ",".join(present + [j for j in jars if j not in present])
            available = True
    if not available:
        if mode:
            raise RuntimeError(
                "Delta was asked for (delta=True or DPRECT_DELTA=on) but no delta-spark jars "
                f"were found for Spark {spark_minor_version()}: run `make jars`, set "
                f"{DELTA_JARS_ENV}, or configure spark.jars.packages")
        return
    extensions = [e for e in settings.get("spark.sql.extensions", "").split(",") if e]
    if DELTA_EXTENSION not in extensions:
        settings["spark.sql.extensions"] = ",".join([*extensions, DELTA_EXTENSION])
    settings.setdefault("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
    if is_local:
        settings.setdefault("spark.databricks.delta.snapshotPartitions",
                            str(LOCAL_DELTA_SNAPSHOT_PARTITIONS))


def has_delta(spark: SparkSession) -> bool:
    """Whether ``spark`` reads and writes Delta natively: its ``spark.sql.extensions``
    holds :data:`DELTA_EXTENSION` and (for a classic session) its JVM can load it."""
    try:
        extensions = spark.conf.get("spark.sql.extensions", "") or ""
    except Exception:
        return False
    if DELTA_EXTENSION not in extensions.split(","):
        return False
    try:
        jvm = spark.sparkContext._jvm
    except Exception:  # Spark Connect: no JVM here; the server's configuration says so
        return True
    return jvm is not None and _jvm_has_class(jvm, DELTA_EXTENSION)


def active_delta_session() -> SparkSession | None:
    """The active (or last instantiated) SparkSession when it has native Delta
    (:func:`has_delta`), else None; a stopped or broken session counts as none."""
    try:
        spark = SparkSession.getActiveSession() or getattr(
            SparkSession, "_instantiatedSession", None)
        return spark if spark is not None and has_delta(spark) else None
    except Exception:  # a stopped or broken session: the caller writes with delta-rs
        return None


def _end_starting_jvms() -> None:
    """End this process's child JVMs that pyspark was starting (Linux ``/proc``; nowhere
    else, nothing is done). An interrupt (Ctrl-C, or SIGTERM raised as one) inside
    pyspark's gateway launch leaves the JVM it started without a Python side: pyspark
    removes the folder the JVM's connection file goes to, the JVM's main thread ends,
    and py4j's server thread keeps it alive — for good (seen in session 40: a SIGTERM one
    second after the run id left a ``SparkSubmit`` JVM running half an hour later)."""
    me = str(os.getpid())
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{entry.name}/stat", encoding="ascii") as stat:
                    parent = stat.read().rsplit(")", 1)[1].split()[1]
                if parent != me:
                    continue
                with open(f"/proc/{entry.name}/cmdline", "rb") as cmd:
                    if b"org.apache.spark.deploy.SparkSubmit" in cmd.read():
                        os.kill(int(entry.name), signal.SIGKILL)


def local_session(master: str | None = None, *, app_name: str = "dprect",
                  shuffle_partitions: int | None = None,
                  conf: Mapping[str, object] | None = None,
                  log_level: str | None = "ERROR",
                  delta: bool | None = None) -> SparkSession:
    """A SparkSession for dprect (``getOrCreate``: an active session is reused).

    Guarantees: master ``master`` (default ``local[2]``); ``spark.ui.enabled=false`` and no
    console progress bars; for ``local`` masters ``spark.sql.shuffle.partitions`` = 4 and
    the driver bound to 127.0.0.1 unless ``SPARK_LOCAL_IP`` says otherwise; for other masters
    Spark's shuffle default unless ``shuffle_partitions`` is given; Python workers run
    ``$PYSPARK_PYTHON`` when set, else this interpreter; ``conf`` entries are applied last
    and win. A reused session keeps its static settings (Spark's rule). The root log
    level is ``log_level``, and failing tasks are never logged with their exception
    (:func:`quiet_task_failures`, whatever the level): ``ERROR`` by default, the level
    of the log4j2 configuration dprect starts a JVM with (a warning is Spark's, for its
    operator, not the user's); Python workers print no warnings
    (``spark.executorEnv.PYTHONWARNINGS=ignore``: their stderr bypasses log4j). A
    ``local`` session it starts (its JVM's or spark-submit's) keeps Spark SQL's warehouse
    in a private temporary folder removed at exit, not ``spark-warehouse/`` in the
    current folder, unless ``conf``, spark-defaults.conf or spark-submit's ``--conf``
    set ``spark.sql.warehouse.dir`` (:func:`_private_warehouse`).
    Delta: configured when its jars load (``delta=None``, the default, unless
    ``DPRECT_DELTA=off``), never (``delta=False``), or required (``delta=True``; a
    ``RuntimeError`` without jars); see the module's notes and :func:`has_delta`.
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
    _add_delta(settings, delta, is_local)
    _add_bins(settings, is_local)
    _private_warehouse(settings, is_local)
    launch_folder = _launch_options(settings)
    builder = SparkSession.builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except BaseException:
        if SparkContext._gateway is None:  # stopped while its JVM was starting
            _end_starting_jvms()
        raise
    finally:
        if launch_folder is not None:  # log4j2 has read it as the JVM started
            shutil.rmtree(launch_folder, ignore_errors=True)
    if log_level:
        session.sparkContext.setLogLevel(log_level)
    quiet_task_failures(session)
    return session


def open_session(master: str | None = None, remote: str | None = None, *,
                 app_name: str = "dprect", shuffle_partitions: int | None = None,
                 conf: Mapping[str, object] | None = None,
                 log_level: str | None = "ERROR") -> SparkSession:
    """A classic session (:func:`local_session` on ``master``) or, when ``remote``
    names a Spark Connect server (``sc://HOST:PORT``), a Connect session to it
    (:func:`~dprect.engines.spark.remote.connect_session`: ``conf`` and
    ``shuffle_partitions`` as runtime settings; the log level, Java options and jars are
    the server's). Both ``master`` and ``remote``: a :class:`ValueError`."""
    if remote:
        if master:
            raise ValueError("give a master URL or a Spark Connect URL (remote), not both")
        session = connect_session(remote, shuffle_partitions=shuffle_partitions, conf=conf)
        quiet_task_failures(session)
        return session
    return local_session(master, app_name=app_name, shuffle_partitions=shuffle_partitions,
                         conf=conf, log_level=log_level)


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
