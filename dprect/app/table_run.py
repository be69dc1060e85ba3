"""The front-end values every grouped-table product reads alike (``dprect bounds``,
``dprect describe`` and their jobs): the output JSON, the input table as a
:class:`~dprect.core.request.Source`, the PUBLIC group list (:mod:`dprect.app.groups`),
the ledger, and the seed. Checked in one order, with one spelling of every message, so
the products refuse the same bad value the same way; nothing is read here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dprect.app.groups import group_selection, public_groups
from dprect.core.errors import ParameterError
from dprect.core.group_selection import SelectionPlan
from dprect.core.randomness import check_seed
from dprect.core.request import Source
from dprect.release.guarded import LedgerSettings
from dprect.release.sinks import JsonSink

#: the input formats a grouped-table product reads
FORMATS = ("parquet", "csv", "delta")


@dataclass(frozen=True)
class TableRun:
    """The checked common part of a grouped-table run: the table, the listed groups (None:
    no groups, or groups found privately), the ledger (None: no ledger), the result
    JSON's sink and the private group selection (None: none)."""

    source: Source
    groups: list[str] | None
    ledger: LedgerSettings | None
    output: JsonSink
    selection: SelectionPlan | None = None


def table_run(values: Mapping[str, Any], name: Callable[[str], str] = str) -> TableRun:
    """``output`` (required), ``format``, the table (``input``, ``columns``, ``group_by``,
    ``where``, ``version``, ``timestamp``), the groups (``groups`` or ``groups_file``, or
    ``select_groups`` with ``selection_epsilon``, ``selection_delta``) and the ledger
    keys, checked in that order (a group column also among the columns is refused
    naming both options); ``name`` spells a key in messages."""
    if values.get("output") is None:
        raise ParameterError(f"{name('output')} is required")
    fmt = values.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise ParameterError(f"{name('format')} must be parquet, csv or delta, got {fmt!r}")
    group_by = values.get("group_by")
    if group_by is not None and group_by in list(values["columns"]):
        # said here, where the options' spellings are known (the source's own refusal
        # cannot name them)
        raise ParameterError(f"the group column {group_by!r} ({name('group_by')}) is also "
                             f"listed in {name('columns')}")
    source = Source(str(values["input"]), list(values["columns"]),
                    group_by=values.get("group_by"), format=fmt, where=values.get("where"),
                    version=values.get("version"), timestamp=values.get("timestamp"))
    selection = group_selection(values, name)
    groups = public_groups(source.group_by, values.get("groups"), values.get("groups_file"),
                           name, select=selection is not None, input=source.path)
    ledger = LedgerSettings.build(values.get("ledger"), values.get("dataset"),
                                  values.get("run_id"), values.get("cap_epsilon"),
                                  values.get("cap_delta"),
                                  names_results=values.get("plot") is not None,
                                  name=name)  # its title
    return TableRun(source, groups, ledger, JsonSink(name("output"), str(values["output"])),
                    selection)


def checked_seed(values: Mapping[str, Any], name: Callable[[str], str] = str) -> int | None:
    """``seed``: None, or a non-negative integer (tests only: a seeded run is not
    private)."""
    return check_seed(values.get("seed"), name("seed"))


__all__ = ["FORMATS", "TableRun", "checked_seed", "table_run"]
