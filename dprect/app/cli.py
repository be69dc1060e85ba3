"""The ``dprect`` command line.

    dprect fit  --input FILE --features a,b --label y --epsilon E --delta D
                [--method auto|randmargins|composition] [--grid SPEC] [--beta B]
                [--seed S] --output result.json
                [--engine numpy|spark] [--format parquet|csv|delta]
                [--plan rounds|prefetch] [--master URL] [--where SQL]
                [--delta-version N | --delta-timestamp TIME]      (Spark engine only)
                [--positive-label VALUE] [--invalid-rows drop|error]
                [--ledger PATH --dataset ID [--run-id ID] [--cap-epsilon E --cap-delta D]]
    dprect plan --epsilon E --delta D (--dims D | --features a,b) [--grid SPEC] [--json]
    dprect budget init --ledger PATH                      (once, before any other use)
    dprect budget show DATASET --ledger PATH [--json]
    dprect budget set-cap DATASET --epsilon E --delta D --ledger PATH

Errors in parameters, paths or the table's schema (a missing column, a column of the
wrong type) end the command with one line on stderr and exit code 2; nothing is written
(no result, no ledger entry). They never depend on the table's values: rows whose label
is not ``--positive-label`` (default 1) — other values, nulls — are negatives, rows with a
null, NaN or ±inf feature are dropped, and a table with no rows or no positives gives an
ordinary (empty) result. Only the opt-in ``--invalid-rows error`` refuses a table for its
values, outside the privacy guarantee. Every output location is checked before the input
is read. With ``--ledger`` the run prints its run id, then reserves its (ε, δ) before
releasing anything (:mod:`dprect.release.guarded`); a cap it would exceed ends it with exit code 2
and nothing released. ``--engine spark`` reads the input with Spark
(Parquet, CSV or Delta) and fits on the Spark engine; pyspark is imported only then. Both
engines write the same result JSON, identical for the same seed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Sequence

from dprect._version import __version__
from dprect.core.accounting import NEIGHBOURING
from dprect.core.errors import DprectError, ParameterError
from dprect.core.planner import ACCOUNTINGS, MARGIN_LAWS, METHODS, SHAPES

EXIT_USAGE = 2
ENGINES = ("numpy", "spark")
SPARK_PLANS = ("rounds", "prefetch")  # dprect.engines.spark.engine.PLANS, without importing pyspark
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
    fit.add_argument("--label", required=True,
                     help="label column (numbers, booleans or strings); the rows whose label "
                          "equals --positive-label are learned from")
    fit.add_argument("--positive-label", default=None, metavar="VALUE",
                     help="label of the positive rows (default 1), read against the label "
                          "column's type: a number, true/false (or yes/no) or a string; "
                          "every other row, null labels included, is a negative")
    add_budget_arguments(fit)
    fit.add_argument("--seed", type=int, default=None,
                     help="FOR TESTS ONLY: makes the noise reproducible (not private)")
    fit.add_argument("--output", required=True, help="where to write the result JSON")
    fit.add_argument("--engine", choices=ENGINES, default="numpy",
                     help="execution engine: numpy (default, in memory) or spark")
    fit.add_argument("--invalid-rows", choices=("drop", "error"), default="drop",
                     help="rows with a null, NaN or infinite feature: drop them (default; "
                          "row-local, costs no privacy) or refuse the table (error: a "
                          "refusal that depends on the data, OUTSIDE the privacy guarantee)")
    budget_opts = fit.add_argument_group("privacy budget ledger")
    budget_opts.add_argument("--ledger", default=None,
                             help="budget ledger (Delta table) that records every release; "
                                  "create it once with `dprect budget init`")
    budget_opts.add_argument("--dataset", default=None, help="dataset id charged in the ledger")
    budget_opts.add_argument("--run-id", default=None,
                             help="idempotency key: a released run id is not run again")
    budget_opts.add_argument("--cap-epsilon", type=_float, default=None,
                             help="cap on the dataset's total epsilon (with --cap-delta)")
    budget_opts.add_argument("--cap-delta", type=_float, default=None,
                             help="cap on the dataset's total delta (with --cap-epsilon)")
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

    bud = sub.add_parser("budget", help="create the ledger; show or cap a dataset's spend")
    bsub = bud.add_subparsers(dest="budget_command", required=True)
    init = bsub.add_parser("init", help="create a budget ledger (once; in a new or empty "
                                        "folder)")
    init.add_argument("--ledger", required=True, help="the ledger's Delta table path")
    show = bsub.add_parser("show", help="spent, cap, remaining and runs of a dataset")
    show.add_argument("dataset")
    show.add_argument("--ledger", required=True, help="the ledger's Delta table path")
    show.add_argument("--json", action="store_true", help="print as JSON")
    cap = bsub.add_parser("set-cap", help="set a dataset's cap (the cap committed last "
                                          "counts)")
    cap.add_argument("dataset")
    cap.add_argument("--epsilon", type=_float, required=True)
    cap.add_argument("--delta", type=_float, required=True)
    cap.add_argument("--ledger", required=True, help="the ledger's Delta table path")
    return parser


def positive_label_arg(args: argparse.Namespace) -> object:
    """``--positive-label`` as text to read against the label column's type (default 1)."""
    from dprect.app.api import LabelText

    return 1 if args.positive_label is None else LabelText(args.positive_label)


def _check_outputs(args: argparse.Namespace) -> None:
    """Every output location, before anything is read or reserved (paths only)."""
    from pathlib import Path

    from dprect.release.files import check_output_path

    check_output_path(args.output, "--output")
    out = Path(args.output).absolute()
    for flag, other in (("--input", args.input), ("--ledger", args.ledger)):
        if other is not None and Path(other).absolute() == out:
            raise ParameterError(f"--output and {flag} are the same path")


def _cmd_fit(args: argparse.Namespace) -> int:
    """Parameters, plan (public) and output paths → read and check the schema → reserve →
    compute → release → publish."""
    from dprect.app.api import resolve_domains
    from dprect.core.planner import plan
    from dprect.core.result import FitResult
    from dprect.release.guarded import LedgerSettings, guarded_release, released_result, replay

    if args.label in args.features:
        raise ParameterError(f"the label column {args.label!r} is also listed as a feature")
    if len(set(args.features)) != len(args.features):
        raise ParameterError("a feature is listed twice in --features")
    if args.engine == "numpy":
        for attr, flag in SPARK_ONLY:
            if getattr(args, attr) is not None:
                raise ParameterError(f"{flag} needs --engine spark")
        if args.format == "delta":
            raise ParameterError("--format delta needs --engine spark")
    settings = LedgerSettings.build(args.ledger, args.dataset, args.run_id,
                                    args.cap_epsilon, args.cap_delta)
    domains = resolve_domains(args.grid, args.features)  # grid errors before any reading
    the_plan = plan(domains=domains, **plan_kwargs(args))  # public: before any data
    _check_outputs(args)  # before the ledger is read, the input opened or budget reserved
    if settings is not None:  # printed first, so that a run that dies can be retried
        print(f"run id {settings.run_id} (dataset {settings.dataset!r}, ledger "
              f"{settings.path})", flush=True)
    previous = released_result(settings)
    if settings is not None and previous is not None:  # finished before: re-publish only
        outcome = replay(settings, previous, lambda js: _publish(args.output, js))
    elif args.engine == "numpy":
        compute = _numpy_compute(args, domains, the_plan)
        outcome = guarded_release(settings, the_plan, args.features, compute,
                                  lambda js: _publish(args.output, js))
    else:
        from dprect.engines.spark.cli import spark_fit  # pyspark is imported only here

        outcome = spark_fit(args, domains, the_plan, settings, plan_kwargs(args),
                            lambda js: _publish(args.output, js))
    print(FitResult.from_json(outcome.result).summary())
    if outcome.replayed:
        print(f"run id {outcome.run_id} was released before: its recorded result was "
              "written again and nothing was spent")
    print(f"result written to {args.output}")
    return 0


def _publish(path: str, result: dict) -> None:
    from dprect.release.files import write_atomic

    write_atomic(path, json.dumps(result, indent=2, allow_nan=False) + "\n")


def _quiet_rng(seed: int | None):
    from dprect.core.randomness import RandomSource

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded warning is printed with the result
        return RandomSource(seed=seed)


def _numpy_compute(args: argparse.Namespace, domains: list, the_plan):
    """Read the table in memory and check its schema; return the compute step of the run.
    Nothing here depends on the rows' values: other labels and nulls are negatives, rows
    with an invalid feature are dropped (unless ``--invalid-rows error``), and no rows or
    no positives make an ordinary run."""
    import numpy as np

    from dprect.app.api import resolve_positive_label, run_plan, select_rows
    from dprect.engines.arrow_input import label_kind, label_matches, numeric_column, read_table
    from dprect.engines.numpy_engine import NumpyEngine

    table = read_table(args.input, [*args.features, args.label], args.format)
    columns = [numeric_column(table, f, nulls_as_nan=True) for f in args.features]
    value = resolve_positive_label(positive_label_arg(args), label_kind(table, args.label),
                                   args.label)  # from the schema: no row is looked at
    X = np.column_stack(columns)
    X_pos = select_rows(X, label_matches(table, args.label, value), args.features,
                        invalid_rows=args.invalid_rows)

    def compute():
        engine = NumpyEngine.from_features(X_pos, domains)
        return run_plan(engine, domains, args.features, the_plan, _quiet_rng(args.seed))

    return compute


def _cmd_budget(args: argparse.Namespace) -> int:
    from dprect.release.ledger import Ledger

    ledger = Ledger(args.ledger)
    if args.budget_command == "init":
        ledger.init()
        print(f"budget ledger created at {args.ledger}; only the jobs and administrators "
              "that charge it may write there, and it must never be deleted or edited by "
              "hand (docs/operations.md)")
        return 0
    if args.budget_command == "set-cap":
        cap = ledger.set_cap(args.dataset, args.epsilon, args.delta)
        print(f"cap for {args.dataset!r} set to epsilon={cap.epsilon:g}, delta={cap.delta:g}")
        return 0
    status = ledger.status(args.dataset)  # one verified read: all three at one version
    spent, cap, runs = status.spent, status.cap, status.runs
    remaining = None if cap is None else {
        "epsilon": max(0.0, cap.epsilon - spent.epsilon),
        "delta": max(0.0, cap.delta - spent.delta)}
    report = {
        "dataset": args.dataset, "spent": spent.to_json(),
        "cap": None if cap is None else cap.to_json(), "remaining": remaining,
        "composition": "basic (sum of the charged runs' epsilon and delta)",
        "runs": [{"run_id": r.run_id, "status": r.status, "epsilon": r.epsilon,
                  "delta": r.delta, "method": r.method, "features": r.features,
                  "reserved_at": None if r.reserved_at is None else r.reserved_at.isoformat()}
                 for r in runs],
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"dataset {args.dataset}: spent epsilon={spent.epsilon:g}, delta={spent.delta:g} "
          f"(basic composition over {len(runs)} charged run(s))")
    if cap is None:
        print("cap: none set")
    else:
        print(f"cap: epsilon={cap.epsilon:g}, delta={cap.delta:g}; remaining "
              f"epsilon={remaining['epsilon']:g}, delta={remaining['delta']:g}")
    for r in runs:
        print(f"  {r.run_id}  {r.status:<9} epsilon={r.epsilon:g} delta={r.delta:g} "
              f"{r.method} [{', '.join(r.features)}]")
    return 0


def _cmd_plan(args: argparse.Namespace) -> int:
    from dprect.app.api import resolve_domains
    from dprect.core.planner import plan

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


def run() -> None:
    """Console-script entry point: :func:`main`, then end the process with its exit code
    without the interpreter's teardown, where delta-rs's native threads can, rarely, abort
    the process and replace the exit code with 134 (see ``jobs_support.exit_now``)."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "fit":
            return _cmd_fit(args)
        if args.command == "budget":
            return _cmd_budget(args)
        return _cmd_plan(args)
    except (DprectError, OSError) as exc:  # parameters, schema, paths: named, one line
        print(f"dprect: error: {_first_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # Spark or internal: named by class or type, never by text
        from dprect.app.jobs_support import describe_failure

        if os.environ.get("DPRECT_DEBUG"):
            import traceback

            traceback.print_exc()
        code, message = describe_failure(exc)
        print(f"dprect: error: {message}", file=sys.stderr)
        return code


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "(no message)")
