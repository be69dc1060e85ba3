"""dprect on Apache Spark: the Spark engine, Spark input and a DataFrame front end.

Everything that imports pyspark lives in this package; the private core never does.
Names are loaded lazily so that ``import dprect.spark`` stays cheap:

* :class:`~dprect.spark.engine.SparkEngine` — the core's engine interface on a DataFrame;
* :func:`~dprect.spark.fit.fit_dataframe`, :func:`~dprect.spark.fit.validate_dataframe`;
* :func:`~dprect.spark.source.read_source` — Parquet, CSV or Delta input;
* :func:`~dprect.spark.session.local_session` — a sensibly configured SparkSession.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "SparkEngine": "dprect.spark.engine",
    "PLANS": "dprect.spark.engine",
    "DEFAULT_PLAN": "dprect.spark.engine",
    "sort_value": "dprect.spark.engine",
    "fit_dataframe": "dprect.spark.fit",
    "validate_dataframe": "dprect.spark.fit",
    "read_source": "dprect.spark.source",
    "local_session": "dprect.spark.session",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'dprect.spark' has no attribute {name!r}")
