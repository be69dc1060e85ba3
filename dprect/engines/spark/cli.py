"""The Spark engine of ``dprect fit --engine spark`` (kept out of the pyspark-free core):
the session the command line fits in. The fit itself is :func:`dprect.app.flow.run_fit`
through :class:`~dprect.engines.spark.fit.SparkRoute`."""

from __future__ import annotations

from pyspark import SparkContext
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from dprect.core.errors import DprectError
from dprect.core.validation import connect_url_shown
from dprect.engines.spark.fit import SparkRoute
from dprect.engines.spark.session import open_session


def cli_session(master: str | None, remote: str | None = None
                ) -> tuple[SparkSession, bool]:
    """A session for one command, and whether the command owns it (and stops it). With
    ``remote`` (``--remote sc://HOST:PORT``): a Spark Connect session to that server, which
    the command owns. Otherwise a session this process already runs (tests, notebooks) is
    used and left running, or a local one on ``master`` (default local[2]) is started."""
    if remote:
        where = f"Spark Connect server {connect_url_shown(remote)}"
        owned = True
    else:
        where = f"master {master or 'local[2]'}"
        owned = (SparkSession.getActiveSession() is None
                 and SparkContext._active_spark_context is None)
    try:
        return open_session(master, remote, app_name="dprect-fit"), owned
    except PySparkException as exc:  # its condition (an identifier), never its text
        raise DprectError(f"cannot start Spark ({where}): "
                          f"{exc.getCondition() or type(exc).__name__}") from None
    except ValueError as exc:
        raise DprectError(f"cannot start Spark ({where}): "
                          f"{str(exc).strip().splitlines()[0]}") from None


def cli_route(strategy: str | None, driver_budget_mb: float | None = None, *,
              master: str | None = None, remote: str | None = None) -> SparkRoute:
    """The Spark route of ``dprect fit --engine spark --master M | --remote URL --strategy S
    --driver-budget-mb B``."""
    return SparkRoute(lambda: cli_session(master, remote), strategy, driver_budget_mb)
