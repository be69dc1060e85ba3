"""Shared fixtures of the Spark tests: one local SparkSession for the whole run.

The session is local[2] with 4 shuffle partitions and no UI, built by
:func:`dprect.engines.spark.session.local_session`; test files anywhere under ``tests/spark`` reuse
it through the ``spark`` fixture. Without Java the Spark tests are skipped. Every test
under ``tests/spark`` carries the ``spark`` marker (tests/conftest.py; ``make test-core``
runs ``pytest -m "not spark"``).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from connect_server import ConnectServer

pytest.importorskip("pyspark")


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """The session-wide SparkSession (local[2], shuffle partitions 4, UI disabled)."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("the Spark tests need Java 17")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from dprect.engines.spark.session import local_session

    session = local_session("local[2]", app_name="dprect-tests", shuffle_partitions=4,
                            conf={"spark.sql.session.timeZone": "UTC"})
    yield session
    session.stop()


def _frame(spark, X, names, y=None, label="y", partitions=None):
    """A DataFrame of double feature columns (and an int label column when y is given)."""
    import numpy as np
    from pyspark.sql import types as T  # noqa: N812

    fields = [T.StructField(n, T.DoubleType(), False) for n in names]
    rows = [tuple(float(v) for v in row) for row in np.asarray(X, dtype=np.float64)]
    if y is not None:
        fields.append(T.StructField(label, T.IntegerType(), False))
        rows = [(*r, int(v)) for r, v in zip(rows, y, strict=True)]
    df = spark.createDataFrame(rows, T.StructType(fields))
    return df.repartition(partitions) if partitions else df


@pytest.fixture(scope="session")
def make_frame(spark):
    """``make_frame(X, names, y=None, label="y", partitions=None)`` → a DataFrame of double
    features (and an int label column when ``y`` is given), repartitioned when asked."""
    return lambda *args, **kwargs: _frame(spark, *args, **kwargs)


@pytest.fixture
def forced_prefilter(monkeypatch):
    """Make the ``pass`` strategy sample thresholds and filter in the JVM on a small table
    (200 sampled rows, at any share, thresholds at a quarter of the usual reach: tight
    enough to bite, so some lists run short and are gathered again — exact either way).
    Returns the list of the prefilter SQL each pass used (None: no filter)."""
    from dprect.engines.spark import order_pass

    monkeypatch.setattr(order_pass, "sample_rows", lambda dims: 200)
    monkeypatch.setattr(order_pass, "PREFILTER_MAX_SHARE", 1.0)
    monkeypatch.setattr(order_pass, "SAMPLE_SAFETY", 0.25)
    filters: list[str | None] = []
    real = order_pass.prefilter

    def spy(task, values=None):
        filters.append(real(task, values))
        return filters[-1]

    monkeypatch.setattr(order_pass, "prefilter", spy)
    return filters


def skip_without_connect() -> None:
    """Skip a test that starts a Spark Connect server unless Java and the ``connect``
    extra are there."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("the Spark Connect tests need Java 17")
    from dprect.core.extras import missing

    if missing("connect") is not None:
        pytest.skip("the Spark Connect tests need the 'connect' extra")


@pytest.fixture
def own_connect_server(tmp_path: Path) -> Iterator[ConnectServer]:
    """A Spark Connect server of one test's own (a test may kill it:
    :meth:`ConnectServer.kill`), stopped at the test's end; :attr:`ConnectServer.url`
    is its URL. Skipped as :func:`connect_url` is."""
    skip_without_connect()
    from connect_server import ConnectServer

    server = ConnectServer(tmp_path / "own-server.log")
    with server:
        yield server


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``sc://127.0.0.1:PORT`` of a local Spark Connect server started once for the run
    from the pip-installed Spark (tests/spark/connect_server.py), stopped at its end.
    Skipped without Java or the ``connect`` extra (:func:`skip_without_connect`)."""
    skip_without_connect()
    from connect_server import ConnectServer

    log = tmp_path_factory.mktemp("connect-server") / "server.log"
    with ConnectServer(log) as url:
        yield url
