"""The Spark engine of ``dprect fit --engine spark`` (kept out of the pyspark-free core):
the session the command line fits in. The fit itself is :func:`dprect.app.flow.run_fit`
through :class:`~dprect.engines.spark.fit.SparkRoute`."""

from __future__ import annotations

from pyspark import SparkContext
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from dprect.core.errors import DprectError
from dprect.engines.spark.fit import SparkRoute
from dprect.engines.spark.session import local_session


def cli_session(master: str | None) -> tuple[SparkSession, bool]:
    """A session for one command, and whether the command owns it (and stops it): a
    session this process already runs (tests, notebooks) is used and left running;
    otherwise a local one on ``master`` (default local[2]) is started."""
    owned = (SparkSession.getActiveSession() is None
             and SparkContext._active_spark_context is None)
    try:
        return local_session(master, app_name="dprect-fit"), owned
    except PySparkException as exc:
        raise DprectError(f"cannot start Spark (master {master or 'local[2]'}): "
                          f"{str(exc).strip().splitlines()[0]}") from None


def cli_route(master: str | None, spark_plan: str | None,
              driver_budget_mb: float | None = None) -> SparkRoute:
    """The Spark route of ``dprect fit --engine spark --master M --plan P
    --driver-budget-mb B``."""
    return SparkRoute(lambda: cli_session(master), spark_plan, driver_budget_mb)
