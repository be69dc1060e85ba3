"""The ``dprect`` command line.

    dprect fit  --input FILE --features a,b --label y --epsilon E --delta D
                [--method auto|randmargins|composition] [--grid SPEC] [--beta B]
                [--seed S] --output result.json
                [--engine numpy|spark] [--format parquet|csv|delta]
                [--plan rounds|prefetch] [--master URL] [--where SQL]
                [--delta-version N | --delta-timestamp TIME]      (Spark engine only)
    dprect plan --epsilon E --delta D (--dims D | --features a,b) [--grid SPEC] [--json]

Errors in parameters or data end the command with one line on stderr and exit code 2;
nothing is written. ``--engine spark`` reads the input with Spark (Parquet, CSV or Delta) and
fits on the Spark engine; pyspark is imported only then. Both engines write the same result
JSON, identical for the same seed.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence

from dprect._version import __version__
from dprect.accounting import NEIGHBOURING
from dprect.errors import DprectError, ParameterError
from dprect.planner import ACCOUNTINGS, MARGIN_LAWS, METHODS, SHAPES

EXIT_USAGE = 2
ENGINES = ("numpy", "spark")
SPARK_PLANS = ("rounds", "prefetch")  # dprect.spark.engine.PLANS, without importing pyspark
SPARK_ONLY = (("plan", "--plan"), ("master", "--master"), ("where", "--where"),
              ("delta_version", "--delta-version"), ("delta_timestamp", "--delta-timestamp"))


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _features(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one feature name")
    return names


def add_budget_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments shared by every command that plans a run."""
    p.add_argument("--epsilon", type=_float, required=True, help="total epsilon of the run")
    p.add_argument("--delta", type=_float, required=True, help="total delta of the run")
    p.add_argument("--method", choices=METHODS, default="auto",
                   help="auto (default: smaller predicted error), randmargins, composition")
    p.add_argument("--grid", default=None,
                   help="domains: 'float' (default), 'LOWER:UPPER:SIZE' or 'int:LOWER:UPPER' "
                        "for every feature, or 'name=SPEC,name=SPEC,...'")
    p.add_argument("--beta", type=_float, default=1e-4,
                   help="failure target of the whole run (default 1e-4)")
    p.add_argument("--accounting", choices=ACCOUNTINGS, default="refined")
    p.add_argument("--shape", choices=SHAPES, default="general")
    p.add_argument("--margin-law", choices=MARGIN_LAWS, default="staircase")
    p.add_argument("--neighbouring", choices=NEIGHBOURING, default="add-remove")


def plan_kwargs(args: argparse.Namespace) -> dict:
    return {"epsilon": args.epsilon, "delta": args.delta, "method": args.method,
            "beta": args.beta, "accounting": args.accounting, "shape": args.shape,
            "margin_law": args.margin_law, "neighbouring": args.neighbouring}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dprect", description="Differentially private axis-aligned rectangles.")
    parser.add_argument("--version", action="version", version=f"dprect {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    fit = sub.add_parser("fit", help="learn a private rectangle from a table")
    fit.add_argument("--input", required=True,
                     help="Parquet file/folder, CSV file, or Delta table (--engine spark)")
    fit.add_argument("--format", choices=("parquet", "csv", "delta"), default=None,
                     help="input format (default: from the path; delta needs --engine spark)")
    fit.add_argument("--features", type=_features, required=True,
                     help="comma-separated feature columns")
    fit.add_argument("--label", required=True, help="0/1 label column")
    add_budget_arguments(fit)
    fit.add_argument("--seed", type=int, default=None,
                     help="FOR TESTS ONLY: makes the noise reproducible (not private)")
    fit.add_argument("--output", required=True, help="where to write the result JSON")
    fit.add_argument("--engine", choices=ENGINES, default="numpy",
                     help="execution engine: numpy (default, in memory) or spark")
    spark = fit.add_argument_group("Spark engine options (--engine spark)")
    spark.add_argument("--plan", choices=SPARK_PLANS, default=None,
                       help="Spark plan: prefetch (default, one scan) or rounds (a job a round)")
    spark.add_argument("--master", default=None,
                       help="Spark master URL (default local[2])")
    spark.add_argument("--where", default=None,
                       help="Spark SQL row filter on the input, e.g. \"day >= '2024-01-01'\"")
    spark.add_argument("--delta-version", type=int, default=None,
                       help="read this version of a Delta table (time travel)")
    spark.add_argument("--delta-timestamp", default=None,
                       help="read a Delta table as of this ISO-8601 time (UTC if no zone)")

    pl = sub.add_parser("plan", help="show what the planner would choose for a budget")
    dims = pl.add_mutually_exclusive_group(required=True)
    dims.add_argument("--dims", type=int, help="number of features")
    dims.add_argument("--features", type=_features, help="comma-separated feature names")
    add_budget_arguments(pl)
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    return parser


def _cmd_fit(args: argparse.Namespace) -> int:
    from dprect.api import fit, positive_rows, resolve_domains
    from dprect.io import numeric_column, read_table, write_atomic

    if args.label in args.features:
        raise ParameterError(f"the label column {args.label!r} is also listed as a feature")
    if len(set(args.features)) != len(args.features):
        raise ParameterError("a feature is listed twice in --features")
    resolve_domains(args.grid, args.features)  # grid errors before any reading
    if args.engine == "spark":
        return _cmd_fit_spark(args)
    for attr, flag in SPARK_ONLY:
        if getattr(args, attr) is not None:
            raise ParameterError(f"{flag} needs --engine spark")
    if args.format == "delta":
        raise ParameterError("--format delta needs --engine spark")
    table = read_table(args.input, [*args.features, args.label], args.format)
    X = [numeric_column(table, f) for f in args.features]
    y = numeric_column(table, args.label)
    import numpy as np

    X_arr = np.column_stack(X) if X else np.empty((len(y), 0))
    positive_rows(X_arr, y, args.features)  # validate before spending anything
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded warning is printed below instead
        result = fit(X_arr, y, grid=args.grid, seed=args.seed, features=args.features,
                     **plan_kwargs(args))
    write_atomic(args.output, result.to_json_string() + "\n")
    print(result.summary())
    print(f"result written to {args.output}")
    return 0


def _cmd_fit_spark(args: argparse.Namespace) -> int:
    """``fit --engine spark``: read with Spark, fit on the Spark engine, same JSON."""
    from dprect.api import resolve_domains
    from dprect.io import write_atomic
    from dprect.planner import plan

    if args.delta_version is not None and args.delta_timestamp is not None:
        raise ParameterError("give --delta-version or --delta-timestamp, not both")
    if args.delta_version is not None and args.delta_version < 0:
        raise ParameterError(f"--delta-version must be >= 0, got {args.delta_version}")
    plan(domains=resolve_domains(args.grid, args.features), **plan_kwargs(args))  # no Spark yet

    from pyspark import SparkContext
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    from dprect.spark.fit import fit_dataframe
    from dprect.spark.session import local_session
    from dprect.spark.source import read_source

    # a session this process already runs (tests, notebooks) is used, and left running
    owned = (SparkSession.getActiveSession() is None
             and SparkContext._active_spark_context is None)
    try:
        spark = local_session(args.master, app_name="dprect-fit")
    except PySparkException as exc:
        raise DprectError(f"cannot start Spark (master {args.master or 'local[2]'}): "
                          f"{str(exc).strip().splitlines()[0]}") from None
    try:
        df = read_source(spark, args.input, format=args.format, where=args.where,
                         version=args.delta_version, timestamp=args.delta_timestamp)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the seeded warning is printed below instead
            result = fit_dataframe(df, features=args.features, label=args.label,
                                   domains=args.grid, seed=args.seed, spark_plan=args.plan,
                                   **plan_kwargs(args))
    finally:
        if owned:
            spark.stop()
    write_atomic(args.output, result.to_json_string() + "\n")
    print(result.summary())
    print(f"result written to {args.output}")
    return 0


def _cmd_plan(args: argparse.Namespace) -> int:
    from dprect.api import resolve_domains
    from dprect.planner import plan

    if args.dims is not None and args.dims < 1:
        raise ParameterError(f"--dims must be >= 1, got {args.dims}")
    names = args.features or [f"x{j}" for j in range(args.dims)]
    domains = resolve_domains(args.grid, names)
    the_plan = plan(domains=domains, **plan_kwargs(args))
    if args.json:
        print(json.dumps(the_plan.to_json(), indent=2))
    else:
        print(the_plan.table())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "fit":
            return _cmd_fit(args)
        return _cmd_plan(args)
    except DprectError as exc:
        print(f"dprect: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"dprect: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
