"""Spark plumbing shared by the jobs: the session, a product job's entry point and the
rectangle as a Spark predicate.

The jobs import this module as ``_common`` (``spark-submit jobs/x.py`` puts ``jobs/`` first
on ``sys.path``; the tests do the same). Configuration and exit codes live in the
pyspark-free :mod:`dprect.app.jobs_support`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from pyspark import SparkConf, SparkContext
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from dprect.app.jobs_support import (
    SPARK_OPTIONS,
    Schema,
    check_config_apart,
    job_main,
    job_reporter,
    section_values,
)
from dprect.app.session_options import check_session_options
from dprect.app.spine import Reporter, RunSettings
from dprect.core.result import FitResult
from dprect.engines.spark.engine import sort_value
from dprect.engines.spark.remote import stop_session
from dprect.engines.spark.session import DEFAULT_MASTER, local_session, open_session


def get_spark(spark_cfg: Mapping[str, Any], app_name: str,
              spark: SparkSession | None = None) -> tuple[SparkSession, bool]:
    """The job's SparkSession and whether the job owns it (and must stop it).

    A session passed in (tests) is used as it is. With ``spark.remote`` (a Spark Connect
    URL, ``sc://HOST:PORT``) the job is a Connect client of that server (run it with
    ``python``; no local JVM is started) and ``spark.conf`` entries are runtime
    settings of its session. Otherwise the master is spark-submit's ``--master`` when it
    gave one, else ``spark.master`` from the config, else ``local[2]``; the session is
    :func:`dprect.engines.spark.session.local_session`'s (no UI, no progress bars) with
    the config's ``spark.conf`` entries on top. A ``spark.remote`` that is not a Spark
    Connect URL is refused naming it (:func:`check_session_options`).
    """
    check_session_options(spark_cfg, _spark_key)
    if spark is not None:
        return spark, False
    name = spark_cfg.get("app_name") or app_name
    if spark_cfg.get("remote"):
        return open_session(remote=spark_cfg["remote"], app_name=name,
                            conf=spark_cfg.get("conf") or {}), True
    submitted = None
    if os.environ.get("PYSPARK_GATEWAY_PORT"):  # started by spark-submit: JVM is up
        SparkContext._ensure_initialized()  # so SparkConf sees spark-submit's properties
        submitted = SparkConf().get("spark.master")
    master = submitted or spark_cfg.get("master") or DEFAULT_MASTER
    session = local_session(master, app_name=name,
                            conf=spark_cfg.get("conf") or {},
                            log_level=spark_cfg.get("log_level"))
    return session, True


def _spark_key(key: str) -> str:
    """The config key of a session option (``remote`` → ``spark.remote``)."""
    return f"spark.{key}"


def job_spark(doc: Mapping[str, Any], app_name: str, spark: SparkSession | None = None
              ) -> tuple[SparkSession, bool]:
    """:func:`get_spark` with the config document's ``spark`` section."""
    return get_spark(section_values(doc, "spark", SPARK_OPTIONS), app_name, spark)


@contextmanager
def spark_session(doc: Mapping[str, Any], app_name: str, spark: SparkSession | None = None
                  ) -> Iterator[SparkSession]:
    """The job's session (:func:`job_spark`) for a ``with`` block; stopped at its end
    when the job started it."""
    session, owned = job_spark(doc, app_name, spark)
    try:
        yield session
    finally:
        if owned:
            stop_session(session)


S = TypeVar("S", bound=RunSettings)  # its sinks checked apart from --config
R = TypeVar("R")
Session = Callable[[], tuple[SparkSession, bool]]


def product_main(prog: str, description: str, section: str, options: Schema,
                 settings: Callable[[dict[str, Any]], S],
                 route: Callable[[Session, dict[str, Any]], R],
                 run: Callable[[S, R, Reporter], object],
                 argv: Sequence[str] | None, spark: SparkSession | None) -> int:
    """A product job's whole entry point (fit, bounds, describe): the job's ``section``
    checked against ``options`` into the product's ``settings`` (every check that needs
    no data), then ``run`` on the engine route ``route(session, section)`` makes, where
    ``session`` opens the job's session (:func:`job_spark`; ``spark``, a running session
    the tests pass, is used and not stopped); progress as ``[prog] ...``
    (:func:`job_reporter`), every failure one line on stderr and an exit code
    (:func:`dprect.app.jobs_support.job_main`). An output at the job's own ``--config``
    file is refused once the settings are checked, before the run starts
    (:func:`~dprect.app.jobs_support.check_config_apart`)."""

    def body(doc: dict[str, Any], config: str | None) -> None:
        cfg = section_values(doc, section, options)
        check_session_options(section_values(doc, "spark", SPARK_OPTIONS), _spark_key)
        checked = settings(cfg)
        check_config_apart(config, [(s.name, s.path) for s in checked.sinks])
        run(checked, route(lambda: job_spark(doc, prog, spark), cfg),
            job_reporter(prog, section, bool(cfg.get("quiet"))))

    return job_main(prog, description, section, options, body, argv)


def inside_rectangle(result: FitResult) -> Column:
    """True for rows inside ``result``'s rectangle, with the grid semantics of
    :meth:`FitResult.contains` (each feature's grid index between the bounds' indices)."""
    cond = F.lit(not result.empty)
    for name, domain, lo, hi in zip(result.features, result.domains, result.lower_index,
                                    result.upper_index, strict=True):
        v = sort_value(name, domain)
        # index >= lo  <=>  v >= cut_threshold(lo, "hi");  index <= hi  <=>  v <= (hi, "lo")
        cond = cond & (v >= F.lit(domain.cut_threshold(lo, "hi"))) & (
            v <= F.lit(domain.cut_threshold(hi, "lo")))
    return cond
