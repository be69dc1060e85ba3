"""A SparkSession configured for dprect.

:func:`local_session` builds (or reuses) a session with settings that suit dprect's small
driver-side jobs: two local cores by default, few shuffle partitions, no web UI, no console
progress bars, quiet logs, and Python workers on the interpreter named by
``PYSPARK_PYTHON`` (or the running one when it is unset).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
LOCAL_SHUFFLE_PARTITIONS = 4


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
    and win. A reused session keeps its static settings (Spark's rule).
    """
    master = master or DEFAULT_MASTER
    python = os.environ.get("PYSPARK_PYTHON") or sys.executable
    os.environ.setdefault("PYSPARK_PYTHON", python)
    settings: dict[str, str] = {
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.pyspark.python": python,
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
    builder = SparkSession.builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if log_level:
        session.sparkContext.setLogLevel(log_level)
    return session
