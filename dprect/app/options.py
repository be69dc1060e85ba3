"""The run options every product shares, declared once.

Where a run reads its table, its test seed, its engine and the budget ledger are the same
options for a fit and for bounds, on the command line and in a job's config
section. They are declared here, once; :mod:`dprect.app.cli` and
:mod:`dprect.app.jobs_support` generate their flags and config keys from these tables, as
they generate the budget options from the requests
(:func:`dprect.core.request.option_specs`). Where Spark runs (``--master``,
``--remote``) is :mod:`dprect.app.session_options`'. A product adds only what is its own
(the features and label of a fit, the columns and groups of bounds, their outputs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunOption:
    """One shared option: its config key (``name``), its kind (``str``, ``int``,
    ``float``, ``choice``), its help, default and choices. ``flag`` is the command line's
    spelling when it is not ``--name-with-dashes``; ``spark_only`` options are refused
    with the numpy engine and listed under the Spark options on the command line;
    ``cli_only`` options have no config key (a job takes them from its ``spark``
    section)."""

    name: str
    kind: str
    help: str
    default: Any = None
    choices: tuple[str, ...] | None = None
    required: bool = False
    flag: str | None = None
    spark_only: bool = False
    cli_only: bool = False

    @property
    def spelled(self) -> str:
        """The command-line flag."""
        return self.flag or "--" + self.name.replace("_", "-")


FORMATS = ("parquet", "csv", "delta")

#: the table a run reads
SOURCE_OPTIONS = (
    RunOption("input", "str", "the table: a Parquet file or folder, a CSV file, or a Delta "
              "table (--engine spark)", required=True),
    RunOption("format", "choice", "input format (default: from the path; delta needs "
              "--engine spark)", choices=FORMATS),
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
)

#: the privacy budget ledger
LEDGER_OPTIONS = (
    RunOption("ledger", "str", "budget ledger (Delta table) that records every release: "
              "the run reserves its budget there before releasing anything; create it once "
              "with `dprect budget init`"),
    RunOption("dataset", "str", "dataset id charged in the ledger (and naming a fit's row "
              "in the results table; default there: the input)"),
    RunOption("run_id", "str", "idempotency key: a released run id is not run again "
              "(default: a fresh random id)"),
    RunOption("cap_epsilon", "float", "cap on the dataset's total epsilon (with cap delta)"),
    RunOption("cap_delta", "float", "cap on the dataset's total delta (with cap epsilon)"),
)

RUN_OPTIONS = (*SOURCE_OPTIONS, *ENGINE_OPTIONS, *LEDGER_OPTIONS)


def spark_only_given(values: dict[str, Any]) -> str | None:
    """The flag of the first Spark-only option set in ``values`` (None if none is)."""
    for option in RUN_OPTIONS:
        if option.spark_only and values.get(option.name) is not None:
            return option.spelled
    return None


__all__ = ["ENGINE_OPTIONS", "FORMATS", "LEDGER_OPTIONS", "RUN_OPTIONS", "SOURCE_OPTIONS",
           "RunOption", "spark_only_given"]
