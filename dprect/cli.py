"""The ``dprect`` command line.

    dprect fit  --input FILE --features a,b --label y --epsilon E --delta D
                [--method auto|randmargins|composition] [--grid SPEC] [--beta B]
                [--seed S] --output result.json
    dprect plan --epsilon E --delta D (--dims D | --features a,b) [--grid SPEC] [--json]

Errors in parameters or data end the command with one line on stderr and exit code 2;
nothing is written.
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
    fit.add_argument("--input", required=True, help="Parquet file/folder or CSV file")
    fit.add_argument("--format", choices=("parquet", "csv"), default=None,
                     help="input format (default: from the file name)")
    fit.add_argument("--features", type=_features, required=True,
                     help="comma-separated feature columns")
    fit.add_argument("--label", required=True, help="0/1 label column")
    add_budget_arguments(fit)
    fit.add_argument("--seed", type=int, default=None,
                     help="FOR TESTS ONLY: makes the noise reproducible (not private)")
    fit.add_argument("--output", required=True, help="where to write the result JSON")
    fit.add_argument("--engine", choices=("numpy",), default="numpy",
                     help="execution engine (numpy: in memory)")

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
