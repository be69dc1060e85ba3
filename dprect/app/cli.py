"""The ``dprect`` command line: ``fit``, ``plan``, ``aggregate`` and its presets
``bounds`` and ``describe``, and ``budget init|show|set-cap|compact|verify`` (``dprect
COMMAND --help`` lists each one's options; README.md and docs/operations.md show them in
use).

The parsers are generated: the options the products share (input, format, filter, Delta
snapshot, seed, engine, ledger) and each product's own are rows of
:mod:`dprect.app.options`, the session options (``--master``, ``--remote``) of
:mod:`dprect.app.session_options`, the budget options the fields of the requests
(:mod:`dprect.core.request`), and the product subcommands the product registry
(:mod:`dprect.app.products`). Each product command is a thin adapter to its flow on the
spine (:mod:`dprect.app.spine`): ``fit`` to :func:`dprect.app.classes_flow.run_any_fit`,
``aggregate``, ``bounds`` and ``describe`` to
:func:`dprect.app.aggregate_flow.run_aggregate_flow` — the same flows as the Spark jobs'
(``jobs/``), so both engines write the same outputs, identical for the same seed.

Errors in parameters, paths or the table's schema, and a mistyped command line, end the
command with one line on stderr and exit code 2, with nothing written (no result, no
ledger entry) and nothing charged; Ctrl-C ends it with ``dprect: interrupted`` and 130,
SIGTERM with ``dprect: terminated`` and 143 (:mod:`dprect.release.guarded`); a stdout
closed early (``| head``) drops the rest of the output and lets the run finish; a run
longer than 6 s names its stage on stderr every 6 s, at least every 10 s under load
(:mod:`dprect.app.heartbeat`; not with ``--quiet``). Refusals never depend on the table's
values (only ``--invalid-rows error`` refuses a table for its values, outside the
guarantee). Every output location is checked before the input is read; a run prints its
plan before it reads the input (``--plan-only``: the plan, then stop); with ``--ledger``
it reads the ledger (a run over the cap ends there), prints its run id, then reserves its
(ε, δ) before releasing anything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from dprect._version import __version__
from dprect.app.failures import describe_failure, one_line, os_error_number, sigterm_interrupts
from dprect.app.options import (
    AGGREGATE_COLUMNS,
    AGGREGATE_OUTPUTS,
    AGGREGATE_UNSET,
    BOUNDS_COLUMNS,
    BOUNDS_GRID,
    BOUNDS_OUTPUTS,
    DEFAULT_BOUNDS_GRID,
    DESCRIBE_COLUMNS,
    DESCRIBE_OUTPUTS,
    DESCRIBE_QUERY,
    ENGINE_OPTIONS,
    EXPECTATION_OPTIONS,
    FIT_COLUMNS,
    FIT_GRID,
    FIT_OPTIONS,
    FIT_OUTPUTS,
    FIT_SPARK_OPTIONS,
    GROUP_OPTIONS,
    GROUPS,
    LEDGER_OPTIONS,
    RUN_OPTIONS,
    SELECTION_OPTIONS,
    SOURCE_OPTIONS,
    RunOption,
    comma_entries,
    spark_only_given,
)
from dprect.app.products import COMMANDS
from dprect.app.session_options import (
    add_session_arguments,
    check_session_options,
    chosen,
    session_flags,
)
from dprect.core.domains import check_dims
from dprect.core.errors import DprectError, ParameterError
from dprect.core.labels import LabelText
from dprect.core.leftovers import remove_now
from dprect.core.request import (
    BoundsRequest,
    DescribeRequest,
    FitRequest,
    Neighbouring,
    PlanRequest,
    StatisticsRequest,
    option_specs,
    request_from,
)

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse, as the command line needs it: an error is one line (``dprect fit:
    error: ...`` and where to read the help) and exit code 2, never the usage dump; a
    token that starts with a minus and a digit or a point (``-1e-6``, ``-8:8:65536``,
    ``-.5``) is a value, not an option (no flag of dprect looks like that); an option is
    taken only as spelled in full (``--out`` is not ``--output``: a scheduled command
    line keeps its meaning when a later release adds an option). Subcommand parsers are
    of this class too (``add_subparsers`` makes them with the parent's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> Any:
        if message.startswith("the following arguments are required"):
            # a misspelled option (--output_file) is why --output is missing: name it first
            unknown = self._unknown(getattr(self, "_given", []))
            if unknown:
                message = (f"unrecognized arguments: {' '.join(unknown)}"
                           f"{self._dashed(unknown)}; {message}")
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)} (see "
                              f"{self.prog} --help)\n")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """argparse's, keeping the arguments given (for :meth:`error`)."""
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def _unknown(self, given: list[str]) -> list[str]:
        """The options among ``given`` that this parser does not take (before a ``--``;
        argparse's own reading of what is an option)."""
        tokens = given[:given.index("--")] if "--" in given else given
        unknown = []
        for token in tokens:
            read: Any = self._parse_optional(token)  # a tuple; a list of them from 3.12
            if isinstance(read, list):
                read = read[0] if len(read) == 1 else None
            if read is not None and read[0] is None:
                unknown.append(token)
        return unknown

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        """argparse's, but an unrecognized argument is the error of the (sub)command it
        was given to (``dprect fit: error: unrecognized arguments: ... (see dprect fit
        --help)``), whose help lists what it takes."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            chosen = self._chosen(parsed)
            chosen.error(f"unrecognized arguments: {' '.join(extra)}{chosen._dashed(extra)}")
        return parsed

    def _dashed(self, extra: list[str]) -> str:
        """The hint for options spelled with underscores (``--invalid_rows``, a config
        key's spelling) that this parser takes with dashes: ``(options are spelled with
        dashes: --invalid-rows)``; else nothing."""
        known = {s for a in self._actions for s in a.option_strings}
        meant = [dashed for token in extra if token.startswith("--")
                 and (dashed := token.split("=", 1)[0].replace("_", "-")) in known]
        return f" (options are spelled with dashes: {', '.join(meant)})" if meant else ""

    def _chosen(self, parsed: argparse.Namespace) -> _Parser:
        """The innermost subcommand's parser that ``parsed`` went through."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                sub = action.choices.get(getattr(parsed, action.dest, None) or "")
                if isinstance(sub, _Parser):
                    return sub._chosen(parsed)
        return self


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _count(text: str) -> int:
    """A whole number of rows (``200``, ``1_000_000``, ``1e6``)."""
    try:
        return int(text)
    except ValueError:
        value = _float(text)
        if not value.is_integer():
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        return int(value)


def _names(text: str) -> list[str]:
    """``--features``, ``--columns``, ``--statistics``: names (:func:`comma_entries`)."""
    return comma_entries(text, "name")


def _labels(text: str) -> list[LabelText]:
    """``--classes a,b,c``: each class as text, read against the label column's type."""
    return [LabelText(t) for t in comma_entries(text, "class")]


def _values(text: str) -> list[str]:
    """``--groups a,b``: the group values as text, read against the column's type."""
    return comma_entries(text, "value")


def flag(key: str) -> str:
    """The flag of an option or config key (``results_table`` → ``--results-table``)."""
    return "--" + key.replace("_", "-")


def add_request_arguments(p: argparse.ArgumentParser,
                          kind: type[Any] = PlanRequest, unset: Sequence[str] = ()) -> None:
    """The options of a request (:func:`dprect.core.request.option_specs`): choices,
    defaults and help are the request's; those named in ``unset`` are None unless given
    (the request's default then fills in; the help still names it)."""
    for spec in option_specs(kind):
        if spec.name in unset:
            p.add_argument(flag(spec.name), type=_float, default=None,
                           help=f"{spec.help} (default {spec.plain_default})")
            continue
        if spec.kind == "label":  # text, read against the label column's type
            p.add_argument(flag(spec.name), type=LabelText, default=None, metavar="VALUE",
                           help=f"{spec.help} (default {spec.plain_default})")
        elif spec.kind == "labels":  # comma-separated text, each read as a label is
            p.add_argument(flag(spec.name), type=_labels, default=None, metavar="A,B,...",
                           help=spec.help)
        elif spec.kind == "names":  # comma-separated feature names
            p.add_argument(flag(spec.name), type=_names, default=None,
                           metavar="NAME,NAME", help=f"{spec.help} (default none)")
        elif spec.required:
            p.add_argument(flag(spec.name), type=_float, required=True, help=spec.help)
        elif spec.choices:
            p.add_argument(flag(spec.name), choices=spec.choices, default=spec.plain_default,
                           help=f"{spec.help} (default {spec.plain_default})")
        else:
            p.add_argument(flag(spec.name), type=_float, default=spec.plain_default,
                           help=f"{spec.help} (default {spec.plain_default})")


def add_run_arguments(p: Any, options: Sequence[RunOption], spark: Any = None) -> None:
    """Run options (:mod:`dprect.app.options`) as flags; Spark-only ones go to the
    ``spark`` argument group when one is given, the others to their own group
    (``RunOption.group``, created once per parser) or to ``p``."""
    types: dict[str, Any] = {"int": int, "float": _float, "str": str, "names": _names,
                             "count": _count, "spec": str, "values": _values}
    made: dict[str, Any] = p.__dict__.setdefault("_dprect_groups", {})
    for o in options:
        if o.spark_only and spark is not None:
            target = spark
        elif o.group is not None:
            target = made.get(o.group) or made.setdefault(
                o.group, p.add_argument_group(GROUPS[o.group]))
        else:
            target = p
        kwargs: dict[str, Any] = {"dest": o.name, "default": o.default, "help": o.cli_help}
        if o.kind == "flag":
            kwargs["action"] = "store_true"
        elif o.choices:
            kwargs["choices"] = o.choices
        else:
            kwargs["type"] = types[o.kind]
        if o.required:
            kwargs["required"] = True
        if o.metavar is not None:
            kwargs["metavar"] = o.metavar
        target.add_argument(o.spelled, *o.aliases, **kwargs)


def _refuse_spark_only(args: argparse.Namespace, own: Sequence[tuple[str, str]] = (),
                       options: tuple[RunOption, ...] = RUN_OPTIONS) -> None:
    """With the numpy engine: a Spark-only option, or Delta input, is a parameter error."""
    if args.engine != "numpy":
        return
    spelled = spark_only_given(vars(args), options) or next(
        (flag for attr, flag in own if getattr(args, attr) is not None), None)
    if spelled is not None:
        raise ParameterError(f"{spelled} needs --engine spark")
    if args.format == "delta":
        raise ParameterError("--format delta needs --engine spark")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dprect",
        description="Differentially private axis-aligned rectangles, clamping bounds and "
                    "grouped aggregates (count, sum, mean, variance, quantiles) with "
                    "their noise intervals.")
    parser.add_argument("--version", action="version", version=f"dprect {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:  # the registry's products with a command (app/products.py)
        _PRODUCT_COMMANDS[name][0](sub)

    pl = sub.add_parser(
        "plan", help="show what the planner would choose for a budget, and how many "
                     "positives it needs",
        description="Show what the planner would choose for a budget, without touching "
                    "data: each method's per-round epsilon, interior-point size, margin "
                    "law, predicted misclassified positives and guarantee; then the "
                    "positives each method expects outside the rectangle, the smallest "
                    "number N of positive rows for at most --target-share of them outside "
                    "(default 5%), and with --positives N the expected share outside at "
                    "your estimate N.")
    dims = pl.add_mutually_exclusive_group(required=True)
    dims.add_argument("--dims", type=int, help="number of features")
    dims.add_argument("--features", type=_names, help="comma-separated feature names")
    add_request_arguments(pl)
    add_run_arguments(pl, (FIT_GRID,))
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    add_run_arguments(pl, EXPECTATION_OPTIONS)

    bud = sub.add_parser("budget", help="create the ledger; show or cap a dataset's spend")
    bsub = bud.add_subparsers(dest="budget_command", required=True)
    init = bsub.add_parser("init", help="create a budget ledger (once; in a new or empty "
                                        "folder)")
    init.add_argument("--ledger", required=True, help="the ledger's Delta table path")
    show = bsub.add_parser("show", help="spent, cap, remaining and runs of a dataset")
    show.add_argument("dataset")
    show.add_argument("--ledger", required=True, help="the ledger's Delta table path")
    show.add_argument("--since", default=None,
                      help="list only the runs reserved at or after this commit version "
                           "(an integer) or this time (ISO 8601, the reserving writer's "
                           "clock: informational); read from the ledger's run index, "
                           "not from the whole log")
    show.add_argument("--json", action="store_true", help="print as JSON")
    cap = bsub.add_parser("set-cap", help="set a dataset's cap (the cap committed last "
                                          "counts)")
    cap.add_argument("dataset")
    cap.add_argument("--epsilon", type=_float, required=True)
    cap.add_argument("--delta", type=_float, required=True)
    cap.add_argument("--neighbouring", choices=Neighbouring.values(),
                     default=Neighbouring.ADD_REMOVE.value,
                     help="the neighbouring relation the cap is stated in (default "
                          "add-remove): runs are charged in it (an add/remove run's (e, d) "
                          "counts as (2e, (1+exp(e))d) against a replace-one cap; a "
                          "replace-one run is refused against an add/remove cap)")
    cap.add_argument("--ledger", required=True, help="the ledger's Delta table path")
    compact = bsub.add_parser("compact", help="verify the whole ledger, then merge its "
                                              "files into a few (safe while runs charge it)")
    compact.add_argument("--ledger", required=True, help="the ledger's Delta table path")
    verify = bsub.add_parser("verify", help="check every event of the ledger from version 0")
    verify.add_argument("--ledger", required=True, help="the ledger's Delta table path")
    return parser


def _table_parser(sub: Any, command: str, request: type[Any], columns: Sequence[RunOption],
                  middle: Sequence[RunOption], outputs: Sequence[RunOption],
                  plan_only: str, unset: Sequence[str] = (), **texts: str) -> None:
    """A grouped-table product's subcommand (``bounds``, ``describe``): the source, its
    ``columns``, the ``request``'s budget options, the product's ``middle`` options, the
    groups, its ``outputs``, the engine and session, ``--plan-only`` (``plan_only``: what
    it prints) and the ledger, in that order; ``texts`` are the parser's help and
    description; ``unset``: the request options left None unless given
    (:func:`add_request_arguments`)."""
    p = sub.add_parser(command, **texts)
    spark = p.add_argument_group("Spark engine options (--engine spark)")
    add_run_arguments(p, SOURCE_OPTIONS, spark)
    add_run_arguments(p, columns)
    add_request_arguments(p, request, unset)
    add_run_arguments(p, (*middle, *GROUP_OPTIONS, *outputs))
    add_run_arguments(p, ENGINE_OPTIONS, spark)
    add_session_arguments(spark)
    p.add_argument("--plan-only", action="store_true",
                   help=f"print the plan ({plan_only}) and stop: nothing is read, reserved "
                        "or written")
    add_run_arguments(p.add_argument_group("privacy budget ledger"), LEDGER_OPTIONS)


def _aggregate_parser(sub: Any) -> None:
    """``dprect aggregate``: any statistics of one mechanism per column and public group
    (:mod:`dprect.app.aggregate_flow`; ``--statistics`` generated from the registry)."""
    _table_parser(
        sub, "aggregate", StatisticsRequest, AGGREGATE_COLUMNS,
        (DESCRIBE_QUERY[1], BOUNDS_GRID, BOUNDS_OUTPUTS[0]), AGGREGATE_OUTPUTS,
        "the mechanism's plan: its guarantee, budget split and what it promises",
        unset=AGGREGATE_UNSET,
        help="any DP statistics of one mechanism per column (and per listed group), in "
             "one charge (bounds and describe are its presets)",
        description="Release the statistics named by --statistics for each column (and "
                    "each group of a public list), all drawn by one mechanism in one "
                    "charge: the coverage bounds (--coverage, --grid, --rows), or a count, "
                    "sum and mean with bounds found privately and aimed at the query "
                    "(--query-epsilon, --plot), or quantiles (--plot). Every row counts; "
                    "a row with a null, NaN "
                    "or infinite value in a column is left out of that column only. The "
                    "plan is printed before the input is read.")


def _bounds_parser(sub: Any) -> None:
    """``dprect bounds``: private clamping bounds, the preset ``aggregate --statistics
    coverage`` (:mod:`dprect.app.aggregate_flow`; its
    defaults are :class:`dprect.core.bounds.BoundsRequest`'s, named in the help)."""
    _table_parser(
        sub, "bounds", BoundsRequest, BOUNDS_COLUMNS, (BOUNDS_GRID,), BOUNDS_OUTPUTS,
        "its guarantee and what it expects",
        help="private clamping bounds per column (and per listed group)",
        description="Release differentially private clamping bounds: for each column (and "
                    "each group of a public list) a lower and an upper bound that cover "
                    "about --coverage of its values. No bounds are needed in advance "
                    f"(default grid {DEFAULT_BOUNDS_GRID!r}: a log-scale grid over every "
                    "float). Every row counts; a row with a null, NaN or infinite value in "
                    "a column is left out of that column only. The plan is printed before "
                    "the input is read.")


def _cmd_aggregate(args: argparse.Namespace) -> int:
    """``dprect aggregate`` or a preset (``bounds``, ``describe``): with ``--plan-only``
    print the plan (public inputs only: nothing is read, reserved or written); else check
    the options into the settings of the one aggregate flow
    (:func:`dprect.app.aggregate_flow.run_aggregate_flow`) and run them on the chosen
    engine's route."""
    from dprect.app.aggregate_flow import aggregate_settings, preset_plan, run_aggregate_flow
    from dprect.engines.grouped import NumpyGroupedRoute

    _refuse_spark_only(args, session_flags())
    check_session_options(args, flag)
    values = dict(vars(args))
    if args.plan_only:
        print(preset_plan(args.command, values, flag))
        return 0
    checked = aggregate_settings(values, flag, args.command)
    if args.engine == "numpy":
        route: Any = NumpyGroupedRoute()
    else:  # pyspark is imported only here
        from dprect.engines.spark.grouped_route import cli_grouped_route

        route = cli_grouped_route(**chosen(args))
    run_aggregate_flow(checked, route, _reporter(args))
    return 0


def _reporter(args: argparse.Namespace) -> Any:
    """What a run prints (:class:`dprect.app.spine.Reporter`): options spelled as flags,
    the heartbeat on stderr unless ``--quiet``."""
    from dprect.app.heartbeat import StreamLines
    from dprect.app.spine import Reporter

    # the heartbeat's lines on stderr: stdout holds the result
    return Reporter(name=flag, tick=None if args.quiet else StreamLines("stderr", "dprect: "))


def _describe_parser(sub: Any) -> None:
    """``dprect describe``: DP count, sum and mean per column and public group
    (the preset ``aggregate --statistics bounds,count,sum,mean``:
    :mod:`dprect.app.aggregate_flow`; the budget options are
    :class:`dprect.core.request.DescribeRequest`'s)."""
    _table_parser(
        sub, "describe", DescribeRequest, DESCRIBE_COLUMNS, DESCRIBE_QUERY, DESCRIBE_OUTPUTS,
        "the budget split, the guarantee and the accuracy statements",
        help="DP count, sum and mean per column (and per listed group), with private "
             "bounds, in one charge",
        description="Release a differentially private count, sum and mean for each column "
                    "(and each group of a public list), with the clamping bounds found "
                    "privately and aimed at the query: no bounds are needed in advance. "
                    "Every row counts; a row with a null, NaN or infinite value in a column "
                    "is left out of that column only. The plan — the budget split and what "
                    "it promises — is printed before the input is read; the run is charged "
                    "once however many groups.")


def _cmd_fit(args: argparse.Namespace) -> int:
    """``dprect fit``: the options become the fit's settings, then the one fit flow
    (:func:`dprect.app.flow.run_fit`) runs on the chosen engine."""
    from dprect.app.classes_flow import run_any_fit
    from dprect.app.flow import fit_settings
    from dprect.engines.numpy_fit import NumpyRoute

    _refuse_spark_only(args, session_flags(), (*RUN_OPTIONS, *FIT_OPTIONS))
    check_session_options(args, flag)
    settings = fit_settings(vars(args), flag)  # positive_label None: not given
    if args.engine == "numpy":
        route: Any = NumpyRoute()
    else:
        from dprect.engines.spark.cli import cli_route  # pyspark is imported only here

        route = cli_route(args.strategy, args.driver_budget_mb, **chosen(args))
    run_any_fit(settings, route, _reporter(args))  # one rectangle, or one per class
    return 0


def _cmd_budget(args: argparse.Namespace) -> int:
    from dprect.release.ledger import Ledger
    from dprect.release.ledger.log import check_ledger_path

    check_ledger_path(args.ledger, "--ledger")  # a device, FIFO or socket: never opened
    ledger = Ledger(args.ledger)
    if args.budget_command == "init":
        ledger.init()
        print(f"budget ledger created at {args.ledger}; only the jobs and administrators "
              "that charge it may write there, and it must never be deleted or edited by "
              "hand (docs/operations.md)")
        return 0
    if args.budget_command == "set-cap":
        new_cap = ledger.set_cap(args.dataset, args.epsilon, args.delta, args.neighbouring)
        print(f"cap for {args.dataset!r} set to epsilon={new_cap.epsilon:g}, "
              f"delta={new_cap.delta:g} ({new_cap.neighbouring} neighbours)")
        return 0
    if args.budget_command == "compact":
        version = ledger.compact()
        print(f"budget ledger at {args.ledger} verified and compacted (checkpoint at commit "
              f"version {version})")
        return 0
    if args.budget_command == "verify":
        version = ledger.verify(full=True)
        print(f"budget ledger at {args.ledger} verified: commit versions 0..{version}, every "
              "link of the hash chain and every checkpoint")
        return 0
    since = _since(args.since)
    status = ledger.status(args.dataset, runs=True)  # one verified read, at one version
    if not status.known:
        raise ParameterError(f"dataset {args.dataset!r} has no cap and no run in the budget "
                             f"ledger at {args.ledger} (`dprect budget set-cap` or a run "
                             "with --dataset names it)")
    spent, cap = status.spent, status.cap
    charged = [r for r in status.runs or [] if r.status != "cancelled"]
    runs = [r for r in status.runs or [] if since is None or (
        r.reserved_version >= since if isinstance(since, int)
        else r.reserved_at is not None and r.reserved_at >= since)]
    remaining = None if cap is None or spent is None else {
        "epsilon": max(0.0, cap.epsilon - spent.epsilon),
        "delta": max(0.0, cap.delta - spent.delta)}
    if cap is not None and spent is None:
        remaining = {"epsilon": 0.0, "delta": 0.0}
    report = {
        "dataset": args.dataset, "neighbouring": status.neighbouring,
        "spent": None if spent is None else spent.to_json(),
        "cap": None if cap is None else cap.to_json(), "remaining": remaining,
        "composition": "basic (sum of the charged runs' epsilon and delta)",
        "charged_runs": len(charged), "ledger_version": status.ledger_version,
        "runs": [{"run_id": r.run_id, "status": r.status, "epsilon": r.epsilon,
                  "delta": r.delta, "neighbouring": r.neighbouring, "method": r.method,
                  "features": r.features, "reserved_version": r.reserved_version,
                  "reserved_at": None if r.reserved_at is None else r.reserved_at.isoformat()}
                 for r in runs],
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    if spent is None:
        print(f"dataset {args.dataset}: spent is unbounded under add-remove neighbours (it "
              f"holds replace-one charges; {len(charged)} charged run(s))")
    else:
        print(f"dataset {args.dataset}: spent epsilon={spent.epsilon:g}, delta={spent.delta:g} "
              f"(basic composition over {len(charged)} charged run(s), "
              f"{status.neighbouring} neighbours)")
    if cap is None or remaining is None:
        print("cap: none set")
    else:
        print(f"cap: epsilon={cap.epsilon:g}, delta={cap.delta:g} ({cap.neighbouring}); "
              f"remaining epsilon={remaining['epsilon']:g}, delta={remaining['delta']:g}")
    for r in runs:
        print(f"  {r.run_id}  {r.status:<9} epsilon={r.epsilon:g} delta={r.delta:g} "
              f"{r.method} [{', '.join(r.features)}]")
    return 0


def _since(text: str | None) -> int | datetime | None:
    """``--since``: a commit version (an integer) or an ISO 8601 time (UTC if no zone)."""
    if text is None:
        return None
    if text.strip().isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ParameterError(f"--since must be a commit version or an ISO 8601 time, got "
                             f"{text!r}") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _cmd_plan(args: argparse.Namespace) -> int:
    from dprect.app.api import resolve_domains
    from dprect.core.planner import plan

    if args.dims is not None and args.dims < 1:
        raise ParameterError(f"--dims must be >= 1, got {args.dims}")
    check_dims(args.dims if args.features is None else len(args.features),
               "--dims" if args.features is None else "--features")
    names = args.features or [f"x{j}" for j in range(args.dims)]
    domains = resolve_domains(args.grid, names)
    the_plan = plan(request_from(PlanRequest, vars(args)), domains=domains,
                    positives=args.positives, target_share=args.target_share,
                    features=names)
    from dprect.core.crossover import crossover_lines

    line, crossing = crossover_lines(request_from(PlanRequest, vars(args)), domains)
    if args.json:
        print(json.dumps({**the_plan.to_json(), "crossover": crossing}, indent=2))
    else:
        print(the_plan.table())
        print(line)
    return 0


class _PipeSafe:
    """Standard output that a reader may close early (``dprect ... | head -1``): once a
    write or a flush meets a closed pipe, the rest of the output goes to ``os.devnull``
    and the run goes on — its files and ledger entry are written as without the pipe,
    and it exits with its usual code. Every other attribute is the stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _drop(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            self._drop()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._drop()
            self._stream.flush()  # what was buffered goes to os.devnull

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def run() -> None:
    """Console-script entry point: :func:`main` with a standard output a reader may close
    early (:class:`_PipeSafe`), then end the process with its exit code without the
    interpreter's teardown, where delta-rs's native threads can, rarely, abort the
    process and replace the exit code with 134 (see ``jobs_support.exit_now``)."""
    sys.stdout = _PipeSafe(sys.stdout)
    code = main()
    remove_now()  # os._exit skips atexit: the temporary folders a library was given
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every way it ends is an exit code and at most one line on stderr
    (an argparse error: 2; an interrupt, SIGINT: ``dprect: interrupted`` and 130, SIGTERM:
    ``dprect: terminated`` and 143 — also when a library raised its own error while it
    cleaned up after the interrupt)."""
    try:
        with sigterm_interrupts():
            return _main(argv)
    except KeyboardInterrupt as exc:
        return _interrupted(exc)


def _interrupted(exc: KeyboardInterrupt) -> int:
    """The line and the exit code of an interrupt (SIGINT, or SIGTERM's
    :class:`~dprect.app.failures.Terminated`)."""
    code, message = describe_failure(exc)
    print(f"dprect: {message}", file=sys.stderr, flush=True)
    return code



def _fit_parser(sub: Any) -> None:
    """``dprect fit``: one private rectangle (:mod:`dprect.app.flow`)."""
    fit = sub.add_parser("fit", help="learn a private rectangle from a table")
    spark = fit.add_argument_group("Spark engine options (--engine spark)")
    add_run_arguments(fit, SOURCE_OPTIONS, spark)
    add_run_arguments(fit, FIT_COLUMNS)
    add_request_arguments(fit, FitRequest)
    add_run_arguments(fit, (FIT_GRID, FIT_OUTPUTS[0]))
    add_run_arguments(fit, ENGINE_OPTIONS, spark)
    add_run_arguments(fit, EXPECTATION_OPTIONS)
    add_run_arguments(fit, FIT_OUTPUTS[1:])
    add_run_arguments(fit, SELECTION_OPTIONS)  # the classes found privately (§18)
    add_run_arguments(fit.add_argument_group("privacy budget ledger"), LEDGER_OPTIONS)
    add_run_arguments(fit, FIT_SPARK_OPTIONS, spark)
    add_session_arguments(spark)


#: each registry product's subcommand: its parser and its command
_PRODUCT_COMMANDS: dict[str, tuple[Callable[[Any], None],
                                   Callable[[argparse.Namespace], int]]] = {
    "fit": (_fit_parser, _cmd_fit),
    "aggregate": (_aggregate_parser, _cmd_aggregate),
    "bounds": (_bounds_parser, _cmd_aggregate),
    "describe": (_describe_parser, _cmd_aggregate),
}


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "engine", "numpy") == "spark":
        from dprect.app.jobs_support import quiet_library_logs

        quiet_library_logs()
    try:
        if args.command in COMMANDS:
            return _PRODUCT_COMMANDS[args.command][1](args)
        if args.command == "budget":
            return _cmd_budget(args)
        return _cmd_plan(args)
    except Exception as exc:
        from dprect.release.guarded import interrupt_in

        stop = interrupt_in(exc)
        if stop is not None:  # raised while a library cleaned up after a Ctrl-C
            return _interrupted(stop)
        # parameters, schema, paths: one line; an OS error by its number and path, never
        # its text (describe_failure's line for both)
        if isinstance(exc, DprectError) or os_error_number(exc) is not None:
            from dprect.app.spine import in_words  # a core refusal names the flag

            print(f"dprect: error: {describe_failure(in_words(exc, flag))[1]}",
                  file=sys.stderr)
            return EXIT_USAGE
        if os.environ.get("DPRECT_DEBUG"):  # Spark or internal: by class or type only
            import traceback

            traceback.print_exc()
        code, message = describe_failure(exc)
        print(f"dprect: error: {message}", file=sys.stderr)
        return code
