"""Spark Connect: what differs when the session is a client of a remote server.

A Spark Connect session (``SparkSession.builder.remote("sc://HOST:PORT")``, ``dprect fit
--remote``, the jobs' ``spark.remote``) has no JVM in this process: no ``sparkContext``,
no ``_jvm``, no ``DataFrame.rdd``. dprect's engine needs three things it would otherwise
read from the JVM, and gets them here without it:

* :func:`is_connect` — whether a session (or DataFrame) is a Connect client; told from its
  class's module, so pyspark's Connect modules (and gRPC) are imported only by those who
  use them;
* :func:`partition_count` — a DataFrame's number of partitions: ``rdd.getNumPartitions()``
  for a classic session; for Connect one job that yields one row per partition from
  Spark's Python workers (:func:`_one_row`, called for every partition, empty or not), so
  the count is exact and reads no column;
* :func:`default_parallelism` — the cluster's default parallelism
  (``sparkContext.defaultParallelism``); for Connect the server's
  ``spark.default.parallelism`` when it is set, else its ``spark.sql.shuffle.partitions``
  (it only sizes a merge stage: the result does not depend on it).

What needs the JVM on the client moves to the server for Connect: the JIT flag and the
quiet loggers are the Connect server's own configuration (conf/spark/spark-defaults.conf
and log4j2.properties in its ``SPARK_CONF_DIR``), and
:func:`dprect.engines.spark.session.compiles_huge_methods` reads the flag from the
server's configuration. :func:`connect_session` opens a Connect session, with a bounded
retry policy (:mod:`dprect.engines.spark.connect_retry`: a server that stopped answering
ends the run within about a minute), and :func:`stop_session` stops a session a run owns
(a Connect one without waiting on a lost server when the run was interrupted).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from dprect.core.errors import DprectError
from dprect.core.extras import require
from dprect.core.validation import check_connect_url

#: how long :func:`check_reachable` waits (seconds)
CONNECT_TIMEOUT = 10.0
_ONE = pa.schema([pa.field("one", pa.int32(), nullable=False)])


def is_connect(obj: object) -> bool:
    """Whether ``obj`` — a SparkSession or a DataFrame — belongs to a Spark Connect
    client (its class lives under ``pyspark.sql.connect``)."""
    return type(obj).__module__.startswith("pyspark.sql.connect")


def _one_row(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One row for the partition these batches come from (its rows are not read)."""
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pylist([{"one": 1}], schema=_ONE)


def partition_count(df: DataFrame) -> int:
    """The number of partitions of ``df`` (see the module's notes). For Connect, an
    empty projection of ``df`` (no column is read) passes through one Python task per
    partition; its row count is the partition count."""
    if not is_connect(df):
        return int(df.rdd.getNumPartitions())
    return int(df.select().mapInArrow(_one_row, "one int").count())


def default_parallelism(spark: SparkSession) -> int:
    """The session's default parallelism (see the module's notes); at least 1."""
    if not is_connect(spark):
        return max(1, int(spark.sparkContext.defaultParallelism))
    for key in ("spark.default.parallelism", "spark.sql.shuffle.partitions"):
        try:
            value = spark.conf.get(key, None)
        except Exception:  # a server that refuses to show the key
            value = None
        if value and str(value).isdigit():
            return max(1, int(value))
    return 1


def server_address(remote: str) -> tuple[str, int]:
    """The host and port of a Spark Connect URL ``sc://HOST[:PORT][/;param=value...]``
    (Spark's default port 15002); a :class:`ParameterError` for anything else
    (:func:`dprect.core.validation.check_connect_url`)."""
    return check_connect_url(remote)


def check_reachable(remote: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise :class:`DprectError` (one line, exit code 2) unless the server's port accepts a TCP
    connection within ``timeout`` seconds: the Connect client itself retries an
    unreachable server for minutes before it gives up."""
    host, port = server_address(remote)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError:
        raise DprectError(f"no Spark Connect server answers at {host}:{port}") from None


def connect_session(remote: str, *, shuffle_partitions: int | None = None,
                    conf: Mapping[str, object] | None = None) -> SparkSession:
    """A Spark Connect session on the server at ``remote`` (``sc://HOST:PORT``;
    ``getOrCreate``: a session to the same server is reused). Of ``shuffle_partitions``
    and ``conf`` only the runtime settings are applied to the session; static ones (Java
    options, executor memory: what a config written for spark-submit holds) are the
    server's and are skipped without a warning. The application's name is the server's.
    The server is checked first (:func:`check_reachable`); its client retries a server
    that stops answering for about a minute (:func:`~dprect.engines.spark.connect_retry.
    bound_retries`), not pyspark's ten. Needs the ``connect`` extra
    (grpcio and friends)."""
    require("connect", "a Spark Connect session (--remote)")
    check_reachable(remote)
    settings: dict[str, str] = {}
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(int(shuffle_partitions))
    settings.update({str(k): str(v) for k, v in (conf or {}).items()})
    session: Any = SparkSession.builder.remote(remote).getOrCreate()
    from dprect.engines.spark.connect_retry import bound_retries

    bound_retries(session)
    for key, value in settings.items():
        try:
            session.conf.set(key, value)
        except PySparkException as exc:  # a static setting: the server's (it names the key)
            if "CANNOT_MODIFY" not in str(exc.getCondition() or ""):
                raise
    return session


def stop_session(spark: SparkSession) -> None:
    """Stop a session a run owns. A Connect session dprect opened is stopped without
    waiting on a lost server when the run ends by an interrupt or its server was found
    lost (:func:`~dprect.engines.spark.connect_retry.stop_connect_session`)."""
    if is_connect(spark):
        from dprect.engines.spark.connect_retry import stop_connect_session

        stop_connect_session(spark)
    else:
        spark.stop()


__all__ = ["check_reachable", "connect_session", "default_parallelism", "is_connect",
           "partition_count", "server_address", "stop_session"]
