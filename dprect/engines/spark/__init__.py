"""dprect on Apache Spark: the Spark engine, Spark input and a DataFrame front end.

Everything that imports pyspark lives in this package; the private core never does.
Names are loaded lazily so that ``import dprect.engines.spark`` stays cheap:

* :class:`~dprect.engines.spark.engine.SparkEngine` — the core's engine interface on a DataFrame;
* :func:`~dprect.engines.spark.fit.fit_dataframe`,
  :func:`~dprect.engines.spark.fit.validate_dataframe`;
* :func:`~dprect.engines.spark.source.read_source` — Parquet, CSV or Delta input;
* :func:`~dprect.engines.spark.session.local_session` — a sensibly configured SparkSession;
* :func:`~dprect.engines.spark.statistics.spark_statistics`,
  :class:`~dprect.engines.spark.grouped_route.SparkGroupedRoute` — the grouped products' one
  pass (bounds, describe).

Without the ``spark`` extra (pyspark, pandas), importing anything here raises
:class:`~dprect.core.extras.MissingExtraError`, which names the extra to install.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from dprect.core.extras import require

require("spark")  # before any module of this package imports pyspark

_EXPORTS = {
    "SparkEngine": "dprect.engines.spark.engine",
    "STRATEGIES": "dprect.engines.spark.engine",
    "DEFAULT_STRATEGY": "dprect.engines.spark.engine",
    "sort_value": "dprect.engines.spark.engine",
    "fit_dataframe": "dprect.engines.spark.fit",
    "validate_dataframe": "dprect.engines.spark.fit",
    "read_source": "dprect.engines.spark.source",
    "local_session": "dprect.engines.spark.session",
    "spark_statistics": "dprect.engines.spark.statistics",
    "SparkGroupedRoute": "dprect.engines.spark.grouped_route",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'dprect.engines.spark' has no attribute {name!r}")
