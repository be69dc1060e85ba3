"""Learn a differentially private rectangle from a table on Spark.

    spark-submit jobs/fit_rectangle.py --config conf/local.yaml [--set epsilon=0.5 ...]

Reads ``fit.input`` (Parquet, CSV or Delta; optional ``where`` filter, Delta ``version`` or
``timestamp``) with :func:`dprect.engines.spark.source.read_source`, fits with
:func:`dprect.engines.spark.fit.fit_dataframe`, then writes three outputs:

* ``fit.output`` — the result JSON (:meth:`FitResult.to_json`), written atomically;
* ``fit.results_table`` — one appended row in a Delta table (:mod:`dprect.release.results_table`);
* ``fit.plot`` — a PNG of the rectangle's 2-D projections (:mod:`dprect.release.plotting`), with
  the true rectangle when ``fit.truth`` names a synthetic-data sidecar.

With ``fit.ledger`` (and ``fit.dataset``) the run spends before it releases
(:mod:`dprect.release.guarded`): the plan's (ε, δ) is reserved in the ledger — refused if a cap
(``fit.cap_epsilon``/``fit.cap_delta`` or one set with ``dprect budget set-cap``) would be
exceeded — then the fit runs, the result is recorded in the ledger, and only then are the
outputs written. ``fit.run_id`` makes the run idempotent.

The rows learned from are those whose ``fit.label`` equals ``fit.positive_label``
(default 1); other labels and nulls are negatives, and rows with a null, NaN or ±inf
feature are dropped (``fit.invalid_rows: drop``, the default).

Guarantees: every parameter, the grid and the output locations are checked before Spark
starts and before any data is read; the run id is printed next; the input's schema is
checked before anything is reserved. No refusal depends on the rows' values (a table with
no rows or no positives gives an ordinary, empty result), except under the opt-in
``fit.invalid_rows: error``, which is outside the privacy guarantee. A refused run ends
with one line on stderr and a non-zero exit code (:mod:`dprect.app.jobs_support`), and then
nothing is written — no result file, no PNG, no results-table row. What the job prints
and writes is the private result and public settings only: no counts, no data-derived
bounds, no timings.
"""

from __future__ import annotations

import sys
import warnings
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _common import get_spark
from pyspark.sql import SparkSession

from dprect.app.api import INVALID_ROWS, LabelText, check_label_value, resolve_domains
from dprect.app.jobs_support import (
    SPARK_OPTIONS,
    ConfigError,
    Option,
    build_parser,
    exit_now,
    load_config,
    read_truth,
    run_job,
    section_values,
    step,
)
from dprect.core.accounting import NEIGHBOURING
from dprect.core.domains import Domain
from dprect.core.errors import ParameterError
from dprect.core.planner import ACCOUNTINGS, MARGIN_LAWS, METHODS, SHAPES, Plan, plan
from dprect.core.result import FitResult
from dprect.release.files import check_output_path, write_atomic
from dprect.release.guarded import LedgerSettings, guarded_release, released_result, replay

if TYPE_CHECKING:
    from dprect.engines.spark.fit import PreparedFit

PROG = "fit_rectangle"
SECTION = "fit"

OPTIONS: dict[str, Option] = {
    "input": Option(None, "str", "table to learn from: Parquet/CSV path or Delta table "
                                 "(required)"),
    "format": Option(None, "str", "parquet, csv or delta (default: detected)"),
    "where": Option(None, "str", "optional Spark SQL filter applied when reading"),
    "version": Option(None, "int", "Delta version to read (time travel)"),
    "timestamp": Option(None, "str", "Delta timestamp to read (time travel)"),
    "dataset": Option(None, "str", "dataset id: charged in the ledger, named in the results "
                                   "table (default there: input)"),
    "ledger": Option(None, "str", "privacy budget ledger (Delta table); the run reserves its "
                                  "budget there before releasing anything"),
    "run_id": Option(None, "str", "idempotency key: a released run id is not run again "
                                  "(default: a fresh random id)"),
    "cap_epsilon": Option(None, "float", "cap on the dataset's total epsilon (ledger)"),
    "cap_delta": Option(None, "float", "cap on the dataset's total delta (ledger)"),
    "invalid_rows": Option("drop", "str", "rows with a null/NaN/inf feature: drop (default, "
                                          "row-local, no privacy cost) or error (refuses "
                                          "the table: data-dependent, OUTSIDE the privacy "
                                          "guarantee)"),
    "features": Option(None, "str_list", "feature columns (required)"),
    "label": Option(None, "str", "label column: numbers, booleans or strings (required)"),
    "positive_label": Option(1, "any", "label of the positive rows: a number, true/false or "
                                       "a string (text is read against the column's type; "
                                       "quote yes/no/on/off, which YAML reads as booleans); "
                                       "other labels and nulls are negatives"),
    "grid": Option(None, "any", "public domains: 'float', 'LOWER:UPPER:SIZE', "
                                "'int:L:U', or a mapping feature -> spec (default float)"),
    "epsilon": Option(None, "float", "total epsilon of the run (required)"),
    "delta": Option(None, "float", "total delta of the run (required)"),
    "method": Option("auto", "str", f"one of {', '.join(METHODS)}"),
    "beta": Option(1e-4, "float", "failure target of the whole run"),
    "accounting": Option("refined", "str", f"one of {', '.join(ACCOUNTINGS)}"),
    "shape": Option("general", "str", f"one of {', '.join(SHAPES)}"),
    "margin_law": Option("staircase", "str", f"one of {', '.join(MARGIN_LAWS)}"),
    "neighbouring": Option("add-remove", "str", f"one of {', '.join(NEIGHBOURING)}"),
    "spark_plan": Option(None, "str", "Spark engine plan: prefetch or rounds "
                                      "(default: the engine's)"),
    "seed": Option(None, "int", "FOR TESTS ONLY: reproducible noise, NOT private"),
    "output": Option(None, "str", "result JSON path (required)"),
    "results_table": Option(None, "str", "Delta results table to append to (optional)"),
    "plot": Option(None, "str", "PNG path (optional)"),
    "truth": Option(None, "str", "synthetic-data sidecar JSON; draws the true rectangle"),
}

_PLAN_KEYS = ("accounting", "shape", "margin_law", "neighbouring")


def _grid_spec(grid: Any, features: list[str]) -> str | None:
    """The ``--grid`` spelling of the config's ``grid`` (string, or feature -> spec)."""
    if grid is None or isinstance(grid, str):
        return grid
    if isinstance(grid, dict):
        return ",".join(f"{name}={spec}" for name, spec in grid.items())
    raise ConfigError(f"fit.grid must be a string or a mapping feature -> spec, got {grid!r}")


def positive_label(cfg: dict[str, Any]) -> object:
    """``fit.positive_label``: a YAML number or boolean as it is; a string is text, read
    against the label column's type (``"1"`` is 1 for a numeric column)."""
    value = cfg["positive_label"]
    return LabelText(value) if isinstance(value, str) else value


def check_settings(cfg: dict[str, Any]) -> tuple[list[Domain], Plan, LedgerSettings | None]:
    """Every check that needs no data: required keys, names, grid, budget and plan, ledger
    options, output locations (each must be writable: a file path that is not a folder, a
    results table that is a folder, in a folder that exists or can be created). Returns
    the domains, the (public) plan and the ledger settings. Raises a :class:`DprectError`
    naming the problem."""
    for key in ("input", "features", "label", "epsilon", "delta", "output"):
        if cfg[key] is None:
            raise ConfigError(f"fit.{key} is required")
    features: list[str] = cfg["features"]
    if len(set(features)) != len(features):
        raise ConfigError("fit.features names a column twice")
    if cfg["label"] in features:
        raise ConfigError(f"the label column {cfg['label']!r} is also listed as a feature")
    if cfg["invalid_rows"] not in INVALID_ROWS:
        raise ConfigError(f"fit.invalid_rows must be one of {', '.join(INVALID_ROWS)}, "
                          f"got {cfg['invalid_rows']!r}")
    if cfg["positive_label"] is None:
        raise ConfigError("fit.positive_label must be a number, true/false or a string, "
                          "got null")
    try:
        check_label_value(cfg["positive_label"])
    except ParameterError as exc:
        raise ConfigError(f"fit.positive_label: {exc}") from None
    domains = resolve_domains(_grid_spec(cfg["grid"], features), features)
    the_plan = plan(epsilon=cfg["epsilon"], delta=cfg["delta"], domains=domains,
                    beta=cfg["beta"], method=cfg["method"], **{k: cfg[k] for k in _PLAN_KEYS})
    settings = LedgerSettings.build(cfg["ledger"], cfg["dataset"], cfg["run_id"],
                                    cfg["cap_epsilon"], cfg["cap_delta"])
    outputs = [cfg["output"], cfg["plot"], cfg["results_table"], cfg["ledger"]]
    named = [p for p in outputs if p is not None]
    if len({str(Path(p).resolve()) for p in named}) != len(named):
        raise ConfigError("fit.output, fit.plot, fit.results_table and fit.ledger must be "
                          "different paths")
    for key in ("output", "plot"):
        if cfg[key] is not None:
            check_output_path(cfg[key], f"fit.{key}")
    if cfg["results_table"] is not None:
        from dprect.release.results_table import check_results_table

        check_output_path(cfg["results_table"], "fit.results_table", folder=True)
        check_results_table(cfg["results_table"])
    return domains, the_plan, settings


def read_input(cfg: dict[str, Any], domains: list[Domain], spark: SparkSession) -> PreparedFit:
    """Read and check the table and gather what the fit needs (invalid rows dropped or
    refused); nothing is drawn, spent or written here, so bad input ends the job before
    the ledger is touched."""
    from dprect.engines.spark.fit import prepare_fit
    from dprect.engines.spark.source import read_source

    step(PROG, f"reading {cfg['input']}")
    df = read_source(spark, cfg["input"], format=cfg["format"], where=cfg["where"],
                     version=cfg["version"], timestamp=cfg["timestamp"])
    step(PROG, "checking the input and reading what the fit needs")
    return prepare_fit(df, features=cfg["features"], label=cfg["label"],
                       domains=domains, epsilon=cfg["epsilon"], delta=cfg["delta"],
                       method=cfg["method"], beta=cfg["beta"], spark_plan=cfg["spark_plan"],
                       invalid_rows=cfg["invalid_rows"], positive_label=positive_label(cfg),
                       **{k: cfg[k] for k in _PLAN_KEYS})


def fit(cfg: dict[str, Any], domains: list[Domain], prepared: PreparedFit) -> FitResult:
    """Fit on a checked table; nothing is written here."""
    step(PROG, f"fitting {len(domains)} features (epsilon={cfg['epsilon']:g}, "
               f"delta={cfg['delta']:g}, method={cfg['method']})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded warning is printed by the job instead
        return prepared.run(seed=cfg["seed"])


def write_outputs(cfg: dict[str, Any], result: FitResult, started_at: datetime,
                  run_id: str) -> None:
    """Render everything in memory first, then write the JSON, the PNG and the row (once
    per run id: re-publishing a released run does not add a second row)."""
    from dprect.release.results_table import append_result, has_run, result_row

    payload = result.to_json_string() + "\n"
    png = None
    if cfg["plot"] is not None:
        from dprect.release.plotting import render_png

        truth = read_truth(cfg["truth"], result.features)
        png = render_png(result, true_lower=truth[0] if truth else None,
                         true_upper=truth[1] if truth else None,
                         title=cfg["dataset"] or Path(cfg["input"]).name)
    row = None
    if cfg["results_table"] is not None and not has_run(cfg["results_table"], run_id):
        extra = {"input": {k: cfg[k] for k in ("format", "where", "version", "timestamp")},
                 "spark_plan": cfg["spark_plan"]}
        row = result_row(result, run_id=run_id, dataset=cfg["dataset"] or cfg["input"],
                         started_at=started_at, extra_parameters=extra)
    write_atomic(cfg["output"], payload)
    step(PROG, f"result written to {cfg['output']}")
    if png is not None:
        write_atomic(cfg["plot"], png)
        step(PROG, f"plot written to {cfg['plot']}")
    if row is not None:
        version = append_result(cfg["results_table"], row)
        step(PROG, f"row appended to results table {cfg['results_table']} "
                   f"(Delta version {version})")


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    """Entry point; ``spark`` lets tests pass a running session (it is not stopped)."""
    from dprect.release.results_table import new_run_id, utc_now

    started_at = utc_now()
    parser = build_parser(PROG, "Learn a differentially private rectangle on Spark.",
                          SECTION, OPTIONS)
    args = parser.parse_args(argv)

    def body() -> int:
        doc = load_config(args.config, args.overrides, section=SECTION)
        cfg = section_values(doc, SECTION, OPTIONS)
        domains, the_plan, settings = check_settings(cfg)
        run_id = settings.run_id if settings is not None else new_run_id()
        if settings is not None:  # printed first, so that a run that dies can be retried
            step(PROG, f"run id {run_id} (dataset {settings.dataset!r}, ledger "
                       f"{settings.path})")
        else:
            step(PROG, f"run id {run_id}")
        if cfg["seed"] is not None:
            step(PROG, "WARNING: fit.seed is set — reproducible noise for tests only; "
                       "this result is NOT differentially private")

        def publish(recorded: dict[str, Any]) -> None:
            result = FitResult.from_json(recorded)
            print(result.summary(), flush=True)
            write_outputs(cfg, result, started_at, run_id)

        previous = released_result(settings)
        if settings is not None and previous is not None:
            outcome = replay(settings, previous, publish)  # no Spark, no input read
        else:
            session, owned = get_spark(section_values(doc, "spark", SPARK_OPTIONS), PROG,
                                       spark)
            try:
                with read_input(cfg, domains, session) as prepared:
                    outcome = guarded_release(settings, the_plan, cfg["features"],
                                              lambda: fit(cfg, domains, prepared), publish)
            finally:
                if owned:
                    session.stop()
        if outcome.replayed:
            step(PROG, f"run id {run_id} was released before: its recorded result was "
                       "published again and nothing was spent")
        elif settings is not None:
            step(PROG, f"charged to dataset {settings.dataset!r} in ledger {settings.path} "
                       f"(run id {run_id})")
        return 0

    return run_job(PROG, body)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
