"""Every run option of every product, declared once.

Where a run reads its table, its test seed, its engine and the budget ledger are the same
options for a fit and for bounds (:data:`RUN_OPTIONS`); what is a product's own — the
features and label of a fit, its outputs and Spark strategy (:data:`FIT_OPTIONS`); the
columns, groups and outputs of bounds (:data:`BOUNDS_OPTIONS`); the columns, statistics,
groups and outputs of describe (:data:`DESCRIBE_OPTIONS`) and of the aggregate they are
presets of (:data:`AGGREGATE_OPTIONS`) — is declared beside them.
:mod:`dprect.app.cli` and :mod:`dprect.app.jobs_support` generate the flags and the config
keys from these tables, as they generate the budget options from the requests
(:func:`dprect.core.request.option_specs`). Where Spark runs (``--master``, ``--remote``)
is :mod:`dprect.app.session_options`'.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from dprect.app.heartbeat import EVERY, PROMISE
from dprect.core.aggregates import SPREAD
from dprect.core.aggregates import STATISTICS as SUMMARY
from dprect.core.errors import ParameterError
from dprect.core.expectation import DEFAULT_TARGET_SHARE
from dprect.core.statistic import STATISTICS
from dprect.core.validation import is_blank


@dataclass(frozen=True)
class RunOption:
    """One shared option: its config key (``name``), its kind (``str``, ``int``,
    ``float``, ``choice``), its help, default and choices. ``flag`` is the command line's
    spelling when it is not ``--name-with-dashes``; ``spark_only`` options are refused
    with the numpy engine and listed under the Spark options on the command line;
    ``cli_only`` options have no config key (a job takes them from its ``spark``
    section). Kinds beyond the plain ones: ``names`` (comma-separated on the command
    line, a list or such a string in a config), ``count`` (a whole number of rows:
    ``1e6`` on the command line), ``spec`` (a grid: text, or in a config a mapping
    column → spec), ``values`` (public group values: text, or a config list), ``flag``
    (true or false: a switch on the command line, a boolean in a config; off unless
    given: its default is always False). ``group`` names the command line's argument
    group (:data:`GROUPS`); ``required`` is the command line's (a job checks its own
    required keys); ``aliases`` are older spellings of the flag, still accepted, as
    ``old_key`` is of the config key. ``help`` is shared by the flag and the config key,
    so it names other options by their flags only where a job can translate them
    (``--x-y`` is the job's ``section.x_y``: :func:`dprect.app.jobs_support.build_parser`);
    a phrase about a command-line-only flag (``--engine``, ``--plan-only``) goes in
    ``cli_note``, which the command line appends (:attr:`cli_help`) and a job does not."""

    name: str
    kind: str
    help: str
    default: Any = None
    choices: tuple[str, ...] | None = None
    required: bool = False
    flag: str | None = None
    spark_only: bool = False
    cli_only: bool = False
    metavar: str | None = None
    group: str | None = None
    aliases: tuple[str, ...] = ()
    old_key: str | None = None
    cli_note: str = ""

    def __post_init__(self) -> None:
        # a switch is off unless it is given: its default is False, not None, on the
        # command line and in a config alike (declared here once, not per flag)
        if self.kind == "flag":
            if self.default not in (None, False):
                raise ValueError(f"the flag {self.name} is off by default")
            object.__setattr__(self, "default", False)

    @property
    def spelled(self) -> str:
        """The command-line flag."""
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def cli_help(self) -> str:
        """The flag's help: :attr:`help`, then the command line's own note and the
        flag's old spellings (a job's config key gets neither)."""
        old = f"({', '.join(self.aliases)}: its old spelling)" if self.aliases else ""
        return " ".join(t for t in (self.help, self.cli_note, old) if t)


FORMATS = ("parquet", "csv", "delta")

#: the table a run reads
SOURCE_OPTIONS = (
    RunOption("input", "str", "the table: a Parquet file or folder, a CSV file, or a Delta "
              "table", required=True, cli_note="(--engine spark)"),
    RunOption("format", "choice", "input format (default: from the path)", choices=FORMATS,
              cli_note="(delta needs --engine spark)"),
    RunOption("where", "str", "Spark SQL row filter on the input, e.g. "
              "\"day >= '2024-01-01'\"", spark_only=True),
    RunOption("version", "int", "read this version of a Delta table (time travel)",
              flag="--delta-version", spark_only=True),
    RunOption("timestamp", "str", "read a Delta table as of this ISO-8601 time (UTC if no "
              "zone)", flag="--delta-timestamp", spark_only=True),
)

#: how a run executes
ENGINE_OPTIONS = (
    RunOption("seed", "int", "FOR TESTS ONLY: makes the noise reproducible (not private)"),
    RunOption("engine", "choice", "execution engine: numpy (in memory) or spark",
              default="numpy", choices=("numpy", "spark"), cli_only=True),
    RunOption("quiet", "flag", "no progress lines: without it a run that takes longer "
              f"than {EVERY:g} s names its current stage every {EVERY:g} s (at least every "
              f"{PROMISE:g} s under load; never a value from the data)"),
)

#: the privacy budget ledger
LEDGER_OPTIONS = (
    RunOption("ledger", "str", "budget ledger (Delta table) that records every release: "
              "the run reserves its budget there before releasing anything; create it once "
              "with `dprect budget init`"),
    RunOption("dataset", "str", "dataset id charged in the ledger (and naming a fit's row "
              "in the results table, or titling an aggregate's plot; default there: the "
              "input)"),
    RunOption("run_id", "str", "idempotency key: a released run id is not run again "
              "(default: a fresh random id)"),
    RunOption("cap_epsilon", "float", "cap on the dataset's total epsilon (with cap delta)"),
    RunOption("cap_delta", "float", "cap on the dataset's total delta (with cap epsilon)"),
)

RUN_OPTIONS = (*SOURCE_OPTIONS, *ENGINE_OPTIONS, *LEDGER_OPTIONS)

#: the Spark engine's strategies (dprect.engines.spark.engine.PLANS; named here without
#: importing pyspark)
SPARK_STRATEGIES = ("auto", "collect", "pass", "prefetch", "rounds")
#: the default domain of every bounded column: FloatBins(12), a log-scale grid over every
#: float (no bounds needed)
DEFAULT_BOUNDS_GRID = "floatbins:12"
#: the titles of the command line's argument groups (``RunOption.group``)
GROUPS = {
    "expectation": "how many positives a run needs (public estimates only; nothing is read "
                   "from the data)",
    "outputs": "more outputs",
    "groups": "groups (a PUBLIC list of group values, never read from the data; or, with "
              "--select-groups, the keys found privately — a fit's classes, the label's values: "
              "docs/privacy.md §18; a public list and --select-groups combine: the listed "
              "groups released whatever their rows, the others found privately)",
}

#: a fit's columns
FIT_COLUMNS = (
    RunOption("features", "names", "comma-separated feature columns", required=True),
    RunOption("label", "str", "label column (numbers, booleans or strings); the rows whose "
              "label equals --positive-label are learned from", required=True),
)

#: a fit's public domains
FIT_GRID = RunOption(
    "grid", "spec", "public domains: 'float' (default: every float, no bounds needed), "
    "'LOWER:UPPER:SIZE' or 'int:LOWER:UPPER' for every feature, or "
    "'name=SPEC,name=SPEC,...'. Values outside LOWER..UPPER are clamped into the end bins "
    "without a warning (a warning would look at the data): take the bounds from public "
    "knowledge, never from the data")

#: the public inputs of a fit's expectation (also ``dprect plan``'s)
EXPECTATION_OPTIONS = (
    RunOption("positives", "count", "your estimate of the number of positive rows (never "
              "read from the data): adds the expected share of them outside the rectangle "
              "at N, and auto compares the methods at N", metavar="N",
              group="expectation"),
    RunOption("target_share", "float", "the share of positives outside the rectangle to "
              "size N for: prints the smallest N with at most this share outside "
              f"(default {DEFAULT_TARGET_SHARE:g})", default=DEFAULT_TARGET_SHARE,
              metavar="S", group="expectation"),
)

#: a fit's outputs
FIT_OUTPUTS = (
    RunOption("output", "str", "where to write the result JSON", required=True),
    RunOption("results_table", "str", "Delta results table to append the result's row to "
              "(named by --dataset, else --input)", metavar="PATH", group="outputs"),
    RunOption("plot", "str", "PNG of the rectangle's 2-D projections", metavar="PNG",
              group="outputs"),
    RunOption("truth", "str", "synthetic-data sidecar JSON: --plot draws its true "
              "rectangle", metavar="SIDECAR", group="outputs"),
)

#: how the Spark engine fits
FIT_SPARK_OPTIONS = (
    RunOption("strategy", "choice", "Spark strategy: auto (default: collect if it fits "
              "--driver-budget-mb, else pass), collect (one job, the positives' values to "
              "the driver), pass (vectorised passes gather every order's list; driver "
              "memory within the budget), prefetch (one filtered scan) or rounds (a job a "
              "round); the rectangle is the same",
              choices=SPARK_STRATEGIES, aliases=("--plan",), old_key="spark_plan",
              spark_only=True),
    RunOption("driver_budget_mb", "float", "driver memory budget (MiB): auto collects when "
              "the positives' values fit it, else the pass strategy keeps its lists within "
              "it (default 1024)", spark_only=True),
)

#: a private selection of the groups (or of a fit's classes), instead of a public list
#: (docs/privacy.md §18): the aggregates' and the classes' fit's, declared once
SELECTION_OPTIONS = (
    RunOption("select_groups", "flag", "find the groups (a fit: its classes, the label's "
              "values) privately (a key of the data is released only if its noisy count "
              "passes the threshold set by --selection-epsilon and --selection-delta; then "
              "the statistics, or one rectangle per class, on the kept keys, all in one "
              "charge); with a public list of groups, the listed ones are released "
              "whatever their rows and only the other keys are selected",
              group="groups"),
    RunOption("selection_epsilon", "float", "the epsilon of --select-groups, charged on "
              "top of --epsilon", metavar="E", group="groups"),
    RunOption("selection_delta", "float", "the delta of --select-groups (> 0: a key of one "
              "row is released with probability at most this), charged on top of the "
              "statistics' delta", metavar="D", group="groups"),
)

FIT_OPTIONS = (*FIT_COLUMNS, FIT_GRID, *EXPECTATION_OPTIONS, *FIT_OUTPUTS,
               *FIT_SPARK_OPTIONS, *SELECTION_OPTIONS)

#: the columns and public groups of bounds
BOUNDS_COLUMNS = (
    RunOption("columns", "names", "comma-separated numeric columns to bound",
              required=True),
)
BOUNDS_GRID = RunOption(
    "grid", "spec", f"public domains (default {DEFAULT_BOUNDS_GRID!r} for every column: no "
    "bounds needed): 'floatbins:BITS', 'LOWER:UPPER:SIZE', 'int:LOWER:UPPER', or "
    "'name=SPEC,name=SPEC,...'")
GROUP_OPTIONS = (
    RunOption("group_by", "str", "the group column: the statistics are released per listed "
              "value of it (or per key kept by --select-groups); rows with another value "
              "(or a null) are dropped and never reported",
              metavar="COL", group="groups"),
    RunOption("groups", "values", "the public group values, comma-separated (read against "
              "the column's type)", metavar="V1,V2,...", group="groups"),
    RunOption("groups_file", "str", "the public group values, one per line (blank lines "
              "skipped)", metavar="FILE", group="groups"),
    *SELECTION_OPTIONS,
)
BOUNDS_OUTPUTS = (
    RunOption("rows", "count", "your public estimate of the number of rows (never read "
              "from the data): the plan adds the share of values it expects outside the "
              "bounds at N", metavar="N"),
    RunOption("output", "str", "where to write the result JSON",
              cli_note="(required unless --plan-only)"),
    RunOption("table", "str", "also write one row per (group, column) — group, column, "
              "lower, upper, rank_error — as CSV (a path ending in .csv), one Parquet "
              "file (.parquet) or a Delta table (a folder)", metavar="PATH"),
)

BOUNDS_OPTIONS = (*BOUNDS_COLUMNS, BOUNDS_GRID, *GROUP_OPTIONS, *BOUNDS_OUTPUTS)

#: the columns of describe (DP count, sum and mean per public group and column)
DESCRIBE_COLUMNS = (
    RunOption("columns", "names", "comma-separated numeric columns to describe",
              required=True),
)
#: what describe releases, and the query its bounds aim at
DESCRIBE_QUERY = (
    RunOption("statistics", "names", "comma-separated statistics among "
              f"{', '.join(SUMMARY + SPREAD)} (default: {', '.join(SUMMARY)}, from one noisy "
              f"count and one noisy clamped sum; {' or '.join(SPREAD)} adds a noisy clamped "
              "sum of squares), or 'none' for the bounds alone (then --query-epsilon is "
              "required)",
              metavar="S1,S2"),
    RunOption("query_epsilon", "float", "the epsilon per column of the sum or mean the "
              "bounds are aimed at (each side clips about 1/(2*query_epsilon) rows; "
              "default: the run's own sum epsilon)", metavar="E"),
)
DESCRIBE_OUTPUTS = (
    BOUNDS_OUTPUTS[1],
    RunOption("table", "str", "also write one row per (group, column) — group, column, "
              "lower, upper, count, sum, mean (and variance, std when asked) with their noise "
              "intervals — as CSV (a path ending in .csv), one Parquet file (.parquet) or a "
              "Delta table (a folder)",
              metavar="PATH",
              group="outputs"),
    RunOption("plot", "str", "PNG of each group's DP mean per column with error bars (the "
              "mean's noise interval at --interval-level, from the plan and the released "
              "values; needs the count and the mean; past 60 groups a histogram of the "
              "groups' means)", metavar="PNG", group="outputs"),
)

DESCRIBE_OPTIONS = (*DESCRIBE_COLUMNS, *DESCRIBE_QUERY, *GROUP_OPTIONS, *DESCRIBE_OUTPUTS)


def statistics_choices() -> str:
    """The statistics a run may ask for, mechanism by mechanism (generated from the
    registry, :data:`dprect.core.statistic.STATISTICS`: a statistic added there is offered
    here): ``'coverage' alone; or any of 'bounds', 'count', ...``."""
    by: dict[str, list[str]] = {}
    for s in STATISTICS.values():
        by.setdefault(s.mechanism.name, []).append(repr(s.name))
    return "; or ".join(f"any of {', '.join(n)}" if len(n) > 1 else f"{n[0]} alone"
                        for n in by.values())


#: the columns and statistics of ``dprect aggregate`` (any statistics of the registry: one
#: mechanism's, or several's in one charge, docs/privacy.md §11b)
AGGREGATE_COLUMNS = (
    RunOption("columns", "names", "comma-separated numeric columns to aggregate",
              required=True),
    RunOption("statistics", "names", "comma-separated statistics, drawn in one charge "
              "(statistics of several mechanisms split epsilon equally, pure; the query's "
              f"and 'coverage' both release lower/upper and are not mixed): "
              f"{statistics_choices()}", required=True,
              metavar="S1,S2"),
)
#: what ``dprect aggregate`` writes besides the result JSON
AGGREGATE_OUTPUTS = (
    BOUNDS_OUTPUTS[1],
    RunOption("table", "str", "also write one row per (group, column) — group, column and "
              "the statistics' outputs — as CSV (a path ending in .csv), one Parquet file "
              "(.parquet) or a Delta table (a folder)", metavar="PATH", group="outputs"),
    RunOption("plot", "str", "PNG of the released statistics of a run of one mechanism: "
              "each group's DP mean per column with its noise interval (needs the count "
              "and the mean), or each group's quantiles as a ladder with their rank error; "
              "past 60 groups their distribution over the groups", metavar="PNG",
              group="outputs"),
)
#: the request fields of ``dprect aggregate`` (and its job) that one mechanism alone reads
#: (the coverage bounds'): left unset unless given — the request's own default fills in —
#: so a run of other statistics refuses one given explicitly instead of ignoring it
#: (:func:`dprect.app.aggregate_flow.refuse_foreign_options`); a default stays silent
AGGREGATE_UNSET = ("coverage",)
#: the options one mechanism reads: the query's aim, the coverage bounds' grid and rows
AGGREGATE_OPTIONS = (*AGGREGATE_COLUMNS, DESCRIBE_QUERY[1], BOUNDS_GRID, BOUNDS_OUTPUTS[0],
                     *GROUP_OPTIONS, *AGGREGATE_OUTPUTS)


#: config keys renamed, old → new (a job still reads the old spelling)
OLD_KEYS = {o.old_key: o.name for o in FIT_OPTIONS if o.old_key is not None}


def spark_only_given(values: dict[str, Any],
                     options: tuple[RunOption, ...] = RUN_OPTIONS) -> str | None:
    """The flag of the first Spark-only option of ``options`` set in ``values`` (None if
    none is)."""
    for option in options:
        if option.spark_only and values.get(option.name) is not None:
            return option.spelled
    return None


class EmptyEntryError(ParameterError, argparse.ArgumentTypeError):
    """An empty entry in a comma-separated list: argparse reports it as the option's
    one-line error (an :class:`argparse.ArgumentTypeError`), anywhere else it is a
    :class:`ParameterError` (exit 2)."""


def comma_entries(text: str, noun: str, where: str = "") -> list[str]:
    """The entries of a comma-separated list option (``--features``, ``--columns``,
    ``--statistics``, ``--classes``, ``--groups``; a job's ``--set columns=x,y``), each
    stripped. An empty or blank entry (``x,,z``, a comma at an end, no entry at all) is
    refused, for every list alike: it was skipped silently by some and read as a value by
    others. The message is ``where`` (a config key; argparse names the option itself)
    and the list's noun only, never an entry."""
    entries = [t.strip() for t in text.split(",")]
    if any(map(is_blank, entries)):
        raise EmptyEntryError(f"{where}an empty {noun} (e.g. 'a,,b', a comma at an end or no "
                              f"entry): list only non-empty ones, comma-separated")
    return entries


__all__ = ["AGGREGATE_COLUMNS", "AGGREGATE_OPTIONS", "AGGREGATE_OUTPUTS", "BOUNDS_OPTIONS",
           "DEFAULT_BOUNDS_GRID", "DESCRIBE_OPTIONS", "ENGINE_OPTIONS", "FIT_OPTIONS",
           "FORMATS", "GROUPS", "LEDGER_OPTIONS", "OLD_KEYS", "RUN_OPTIONS", "SELECTION_OPTIONS",
           "SOURCE_OPTIONS",
           "SPARK_STRATEGIES", "EmptyEntryError", "RunOption", "comma_entries", "spark_only_given",
           "statistics_choices"]
