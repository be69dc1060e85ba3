"""Release DP count, sum and mean per column and public group of a table on Spark.

    spark-submit jobs/describe.py --config conf/describe.yaml [--set epsilon=0.5 ...]

A thin adapter: the ``describe`` section becomes the settings of the describe flow
(:func:`dprect.app.describe_flow.run_describe_flow`), run on the Spark engine
(:class:`dprect.engines.spark.describe.SparkDescribeRoute`), as ``dprect describe
--engine spark`` does. It reads ``describe.input`` (Parquet, CSV or Delta) and writes
``describe.output`` (the result JSON: per group and column the lower and upper bound used,
the count, the sum and the mean; the guarantee; the plan with its budget split and
accuracy statements), and when asked ``describe.table`` (one row per (group, column): CSV
for a path ending in ``.csv``, else a Delta table) and ``describe.plot`` (a PNG of each
group's mean per column with its noise's error bar). With ``describe.group_by`` the group
values are the PUBLIC list ``describe.groups`` (or the file ``describe.groups_file``),
never read from the data; the run is charged once however many groups. With
``describe.ledger`` (and ``describe.dataset``) the run spends before it releases
(:mod:`dprect.release.guarded`); ``describe.run_id`` makes it idempotent.

Guarantees (the flow's): every parameter, the plan and the output locations are checked
before Spark starts; the plan is printed before the input is read; the input's schema is
checked before anything is reserved; nothing is written on failure. A refused run ends with
one line on stderr and a non-zero exit code (:mod:`dprect.app.jobs_support`). What the job
prints and writes is the private result and public settings only.
"""

from __future__ import annotations

import sys
from typing import Any

from _common import job_spark
from pyspark.sql import SparkSession

from dprect.app.describe_flow import (
    DescribeRoute,
    DescribeSettings,
    describe_settings,
    run_describe_flow,
)
from dprect.app.jobs_support import (
    ConfigError,
    Option,
    exit_now,
    job_main,
    job_reporter,
    request_options,
    run_options,
    section_values,
)
from dprect.app.options import (
    DESCRIBE_COLUMNS,
    DESCRIBE_OUTPUTS,
    DESCRIBE_QUERY,
    GROUP_OPTIONS,
)
from dprect.core.request import DescribeRequest

PROG = "describe"
SECTION = "describe"

OPTIONS: dict[str, Option] = {
    **run_options(required=("input",)),
    **run_options(("columns",), DESCRIBE_COLUMNS),
    **run_options(options=GROUP_OPTIONS),
    **request_options(DescribeRequest),
    **run_options(options=DESCRIBE_QUERY),
    **run_options(("output",), DESCRIBE_OUTPUTS),
}


def settings(cfg: dict[str, Any]) -> DescribeSettings:
    """The run's settings from the ``describe`` section (every check that needs no
    data)."""
    for key in ("input", "columns", "epsilon", "output"):
        if cfg[key] is None:
            raise ConfigError(f"{SECTION}.{key} is required")
    groups = cfg["groups"]
    if groups is not None and not isinstance(groups, str) and not (
            isinstance(groups, list) and all(isinstance(v, str | int | float | bool)
                                             for v in groups)):
        raise ConfigError(f"{SECTION}.groups must be a list of values or a comma-separated "
                          f"string, got {groups!r}")
    return describe_settings(cfg, lambda key: f"{SECTION}.{key}")


def main(argv: list[str] | None = None, spark: SparkSession | None = None,
         route: DescribeRoute | None = None) -> int:
    """Entry point; ``spark`` lets tests pass a running session (it is not stopped), and
    ``route`` another engine's route (the tests' numpy one) instead of Spark's."""

    def body(doc: dict[str, Any]) -> None:
        cfg = section_values(doc, SECTION, OPTIONS)
        run = settings(cfg)
        chosen = route
        if chosen is None:
            from dprect.engines.spark.describe import SparkDescribeRoute

            chosen = SparkDescribeRoute(lambda: job_spark(doc, PROG, spark))
        run_describe_flow(run, chosen, job_reporter(PROG, SECTION))

    return job_main(PROG, "Release DP count, sum and mean per column and public group on "
                          "Spark.", SECTION, OPTIONS, body, argv)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
