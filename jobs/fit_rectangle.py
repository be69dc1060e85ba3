"""Learn a differentially private rectangle from a table on Spark.

    spark-submit jobs/fit_rectangle.py --config conf/local.yaml [--set epsilon=0.5 ...]

A thin adapter: the ``fit`` section becomes the fit's settings and the one fit flow
(:func:`dprect.app.flow.run_fit`) runs it on the Spark engine
(:class:`dprect.engines.spark.fit.SparkRoute`), as ``dprect fit --engine spark`` does. It
reads ``fit.input`` (Parquet, CSV or Delta; optional ``where`` filter, Delta ``version``
or ``timestamp``) and writes ``fit.output`` (the result JSON), and when asked
``fit.results_table`` (one row in a Delta table) and ``fit.plot`` (a PNG, with the true
rectangle when ``fit.truth`` names a synthetic-data sidecar). With ``fit.ledger`` (and
``fit.dataset``) the run spends before it releases (:mod:`dprect.release.guarded`);
``fit.run_id`` makes it idempotent. The budget keys, their defaults and allowed values
are :mod:`dprect.core.request`'s. Before it reads the input the job prints the plan's
expectation (the positives it needs for at most ``fit.target_share`` of them outside the
rectangle; with ``fit.positives``, a public estimate, the share at it), and an empty
released rectangle explains itself (:mod:`dprect.core.expectation`).

Guarantees (the flow's): every parameter, the grid, the plan and the output locations
are checked before Spark starts; the run id is printed next; the input's schema is
checked before anything is reserved; nothing is written on failure. A refused run ends
with one line on stderr and a non-zero exit code (:mod:`dprect.app.jobs_support`). What
the job prints and writes is the private result and public settings only.
"""

from __future__ import annotations

import sys
from typing import Any

from _common import Session, product_main
from pyspark.sql import SparkSession

from dprect.app.classes_flow import run_any_fit
from dprect.app.flow import FitSettings, fit_settings
from dprect.app.jobs_support import (
    Option,
    config_grid,
    config_label,
    config_labels,
    exit_now,
    request_options,
    require_keys,
    run_options,
)
from dprect.app.options import (
    EXPECTATION_OPTIONS,
    FIT_COLUMNS,
    FIT_GRID,
    FIT_OUTPUTS,
    FIT_SPARK_OPTIONS,
    SELECTION_OPTIONS,
)

PROG = "fit_rectangle"
SECTION = "fit"

OPTIONS: dict[str, Option] = {
    **run_options(required=("input",)),
    **run_options(("features", "label", "output"), FIT_COLUMNS),
    **run_options(options=(FIT_GRID,)),
    **request_options(),
    **run_options(("output",), (*EXPECTATION_OPTIONS, *FIT_OUTPUTS, *FIT_SPARK_OPTIONS)),
    **run_options(options=SELECTION_OPTIONS),  # the classes found privately (§18)
}


def settings(cfg: dict[str, Any]) -> FitSettings:
    """The fit's settings from the ``fit`` section (every check that needs no data)."""
    require_keys(cfg, SECTION, ("input", "features", "label", "epsilon", "delta", "output"))
    return fit_settings({**cfg, "grid": config_grid(cfg["grid"], SECTION, "feature"),
                         "positive_label": config_label(cfg["positive_label"]),
                         "classes": config_labels(cfg["classes"], f"{SECTION}.classes")},
                        lambda key: f"{SECTION}.{key}")


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    """Entry point; ``spark`` lets tests pass a running session (it is not stopped)."""
    from dprect.engines.spark.fit import SparkRoute

    def engine(session: Session, cfg: dict[str, Any]) -> SparkRoute:
        return SparkRoute(session, cfg["strategy"], cfg["driver_budget_mb"])

    # one rectangle or one per class
    return product_main(PROG, "Learn a differentially private rectangle on Spark.", SECTION,
                        OPTIONS, settings, engine, run_any_fit, argv, spark)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
