"""Private clamping bounds, end to end: the path both front ends on tables take
(``dprect bounds`` on either engine, and ``jobs/private_bounds.py``); :func:`dprect.bounds`
is its in-memory twin for Python data (same row rules, same draws for a seed).

:func:`run_bounds_flow` mirrors the fit flow (:func:`dprect.app.flow.run_fit`), in this
order:

1. the public checks — the columns, the group list (a PUBLIC list: ``--groups`` or a
   file, never read from the data), the domains (default :data:`DEFAULT_BOUNDS_GRID` on
   every column: no bounds needed), **the plan** (:func:`dprect.core.bounds.plan_bounds`,
   made once, here), every output location (:meth:`Sink.check`), no two locations at one
   path; nothing has been read or reserved yet;
2. the run id, printed first (with a ledger);
3. the ledger: a run id released before is **replayed** — its recorded result published
   again, the input never read, nothing spent;
4. the plan, printed (its guarantee and what it expects) — public inputs only;
5. the input, read and its schema checked by the chosen engine (:class:`BoundsRoute`):
   every column numeric, the group column's type able to hold the listed values; a refused
   table ends the run before anything is reserved;
6. the guarded release (:func:`dprect.release.guarded.release_guarded`): reserve the
   plan's (ε, δ) ONCE, however many groups (the groups are disjoint sets of rows: parallel
   composition), compute every histogram on the engine and run the mechanism
   (:func:`dprect.core.bounds.run_bounds`), release into the ledger, then publish to
   every sink (the result JSON, and with ``--table`` one row per (group, column) as CSV
   or Delta).

Row rules (row-local, so neighbouring tables stay neighbouring and they cost no privacy):
every row counts — there is no label; a row whose value in a column is null, NaN or ±inf
is left out of THAT column's histogram only; with a group column, a row whose group value
is not in the public list (another value, a null) is dropped and no group outside the list
is ever reported. Why the list must be public: the set of values present in a column is
itself a fact about the data (one row can add a value), so releasing "the groups found"
would not be differentially private.

A failure anywhere writes nothing (a failure after the reservation leaves it charged).
The numpy route is :class:`NumpyBoundsRoute` (here); the Spark route,
:class:`dprect.engines.spark.bounds.SparkBoundsRoute`, imports pyspark and is loaded only
when a front end chooses it.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from dprect.app.flow import (
    Reporter,
    failure_line,
    open_run,
    release_or_replay,
    seeded_run_quietly,
)
from dprect.core.bounds import (
    BoundsPlan,
    BoundsRequest,
    BoundsResult,
    histogram,
    plan_bounds,
    run_bounds,
)
from dprect.core.domains import Domain, FloatBins, GridArg, resolve_domains
from dprect.core.errors import ParameterError
from dprect.core.randomness import RandomSource
from dprect.core.request import request_from
from dprect.core.validation import repeat_at
from dprect.engines.bounds_input import (
    BoundsSource,
    Histograms,
    group_kind_of_arrow,
    resolve_groups,
)
from dprect.engines.row_kernels import group_index
from dprect.release.files import check_output_path, write_atomic
from dprect.release.guarded import (
    Charge,
    LedgerSettings,
    Outcome,
    release_guarded,
)
from dprect.release.sinks import JsonSink, Release, Sink, Write, publish

#: the default domain of every bounded column: FloatBins(12), a log-scale grid over every
#: float (no bounds needed)
DEFAULT_BOUNDS_GRID = "floatbins:12"
#: what the ledger records as the method of a bounds run
BOUNDS_METHOD = "bounds"
#: the columns of the bounds table (``--table``): one row per (group, column)
TABLE_COLUMNS = ("group", "column", "lower", "upper")


# -- public settings ------------------------------------------------------------------------


@dataclass(frozen=True)
class BoundsSettings:
    """Everything a bounds run was asked for, checked: the request, the table, the
    domains, the public group values (None: no groups), the sinks, the ledger (None: no
    ledger), the seed (tests only) and the public estimate of the rows (None: none)."""

    request: BoundsRequest
    source: BoundsSource
    domains: list[Domain]
    groups: list[str] | None
    sinks: Sequence[Sink]
    ledger: LedgerSettings | None = None
    seed: int | None = None
    rows: int | None = None
    groups_file: str | None = None
    plan: BoundsPlan = field(init=False)

    def __post_init__(self) -> None:
        # the one plan: public inputs only, before any data
        object.__setattr__(self, "plan", plan_bounds(self.request, self.domains,
                                                     rows=self.rows))

    @property
    def group_names(self) -> list[str | None]:
        """The groups as the core names them: the listed values, or one unnamed group."""
        return list(self.groups) if self.groups is not None else [None]


def bounds_domains(grid: GridArg, columns: list[str]) -> list[Domain]:
    """The domains of the bounded columns: :data:`DEFAULT_BOUNDS_GRID` when none is given,
    else as ``--grid`` reads (one spec for all, or ``name=SPEC,...``)."""
    if grid is None or (isinstance(grid, str) and not grid.strip()):
        return [FloatBins() for _ in columns]
    return resolve_domains(grid, columns)


def bounds_request(values: Mapping[str, Any]) -> BoundsRequest:
    """The request from flat values (``epsilon`` required; ``delta``, ``coverage``,
    ``beta``, ``neighbouring`` default to :class:`BoundsRequest`'s when absent or None)."""
    if values.get("epsilon") is None:
        raise ParameterError("epsilon is required")
    return request_from(BoundsRequest, {k: v for k, v in values.items() if v is not None})


def split_groups(text: str | Sequence[Any]) -> list[str]:
    """Group values from ``--groups`` (comma-separated) or a config list, as text."""
    if isinstance(text, str):
        return [t.strip() for t in text.split(",") if t.strip()]
    return [str(v).strip() if not isinstance(v, bool) else str(v).lower() for v in text]


def read_groups_file(path: str) -> list[str]:
    """The group values of a file: one per line, surrounding blanks stripped, blank lines
    skipped (UTF-8)."""
    p = Path(path)
    if not p.is_file():
        raise ParameterError(f"groups file {path!r} does not exist or is not a file")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParameterError(f"cannot read groups file {path!r}: {type(exc).__name__}"
                             ) from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def public_groups(group_by: str | None, groups: str | Sequence[Any] | None,
                  groups_file: str | None, name: Callable[[str], str] = str
                  ) -> list[str] | None:
    """The public list of group values (None without a group column). The list must be
    given — by ``groups`` or ``groups_file``, not both — and is never read from the data:
    the set of values a column holds is itself data-dependent."""
    given = groups is not None and (not isinstance(groups, str) or groups.strip())
    if group_by is None:
        if given or groups_file is not None:
            raise ParameterError(f"{name('groups')} / {name('groups_file')} need "
                                 f"{name('group_by')}")
        return None
    if not str(group_by).strip():
        raise ParameterError(f"{name('group_by')} is an empty column name")
    if given and groups_file is not None:
        raise ParameterError(f"give {name('groups')} or {name('groups_file')}, not both")
    if not given and groups_file is None:
        raise ParameterError(
            f"{name('group_by')} needs the PUBLIC list of group values: {name('groups')} "
            f"v1,v2,... or {name('groups_file')} FILE (the values present in the data are "
            "data-dependent, so they are never read from it)")
    if groups_file is not None:
        values = read_groups_file(groups_file)
        where = f"groups file {groups_file!r}"
    else:
        assert groups is not None
        values = split_groups(groups)
        where = name("groups")
    if not values:
        raise ParameterError(f"the list of group values ({where}) is empty")
    if (i := repeat_at(values)) is not None:
        raise ParameterError(f"group value {values[i]!r} is listed twice")
    return values


def bounds_plan(values: Mapping[str, Any], name: Callable[[str], str] = str) -> BoundsPlan:
    """The plan alone (``--plan-only``): from the request, the columns, the grid and the
    rows estimate; nothing else is checked or read."""
    columns = list(values["columns"])
    return plan_bounds(bounds_request(values), bounds_domains(values.get("grid"), columns),
                       rows=values.get("rows"))


def bounds_settings(values: Mapping[str, Any], name: Callable[[str], str] = str
                    ) -> BoundsSettings:
    """The settings of a bounds run from a front end's flat values — the command line's
    parsed arguments or the job's config section, both spelled as the config keys:
    ``input``, ``format``, ``columns``, ``epsilon``, ``delta``, ``coverage``, ``beta``,
    ``neighbouring``, ``grid``, ``group_by``, ``groups``, ``groups_file``, ``rows``,
    ``output``, ``table``, ``ledger``, ``dataset``, ``run_id``, ``cap_epsilon``,
    ``cap_delta``, ``seed``. Each is checked; ``name`` spells a key in messages."""
    request = bounds_request(values)
    if values.get("output") is None:
        raise ParameterError(f"{name('output')} is required")
    fmt = values.get("format")
    if fmt is not None and fmt not in ("parquet", "csv", "delta"):
        raise ParameterError(f"{name('format')} must be parquet, csv or delta, got {fmt!r}")
    source = BoundsSource(str(values["input"]), list(values["columns"]),
                          values.get("group_by"), fmt, where=values.get("where"),
                          version=values.get("version"), timestamp=values.get("timestamp"))
    groups = public_groups(source.group_by, values.get("groups"), values.get("groups_file"),
                           name)
    rows = values.get("rows")  # checked by the plan
    ledger = LedgerSettings.build(values.get("ledger"), values.get("dataset"),
                                  values.get("run_id"), values.get("cap_epsilon"),
                                  values.get("cap_delta"))
    sinks: list[Sink] = [JsonSink(name("output"), str(values["output"]))]
    if values.get("table") is not None:
        sinks.append(table_sink(name("table"), str(values["table"])))
    seed = values.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ParameterError(f"{name('seed')} must be a non-negative integer, got {seed!r}")
    return BoundsSettings(request, source, bounds_domains(values.get("grid"), source.columns),
                          groups, sinks, ledger, seed, rows, values.get("groups_file"))


# -- routes -----------------------------------------------------------------------------------
class BoundsPrepared(Protocol):
    """A table read and checked, its engine ready; a context manager that releases what
    the engine holds (a session it started)."""

    def histograms(self) -> Histograms:
        """Every (group, column) histogram (the only step that reads the private part)."""
        ...

    def __enter__(self) -> BoundsPrepared: ...

    def __exit__(self, *exc: object) -> None: ...


class BoundsRoute(Protocol):
    """The engine-specific part of a bounds run: read the table, check its schema (the
    columns numeric, the group column able to hold the listed values), ready the engine.
    Nothing is drawn, spent or written here."""

    def open(self, source: BoundsSource, domains: list[Domain], groups: list[str] | None,
             progress: Callable[[str], None]) -> BoundsPrepared:
        ...


class NumpyBoundsPrepared:
    """The columns in memory (float64, nulls as NaN) and each row's group index."""

    def __init__(self, values: list[np.ndarray], group: np.ndarray, groups: int,
                 domains: list[Domain]) -> None:
        self.values = values
        self.group = group
        self.groups = groups
        self.domains = domains

    def histograms(self) -> Histograms:
        """The core's :func:`~dprect.core.bounds.histogram` of each (group, column): the
        rows sorted by group once per column, so many groups cost no more passes."""
        out: Histograms = {}
        listed = self.group >= 0  # rows of unlisted groups: dropped
        for j, (x, domain) in enumerate(zip(self.values, self.domains, strict=True)):
            use = listed & np.isfinite(x)  # null, NaN, ±inf: left out of this column only
            group, values = self.group[use], x[use]
            order = np.argsort(group, kind="stable")
            group, values = group[order], values[order]
            edges = np.searchsorted(group, np.arange(self.groups + 1))
            for g in range(self.groups):
                out[(g, j)] = histogram(values[edges[g]:edges[g + 1]], domain)
        return out

    def __enter__(self) -> NumpyBoundsPrepared:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class NumpyBoundsRoute:
    """Read the table in memory with :mod:`dprect.engines.arrow_input` (Parquet or CSV)
    and check its schema; nothing depends on the rows' values."""

    def open(self, source: BoundsSource, domains: list[Domain], groups: list[str] | None,
             progress: Callable[[str], None]) -> NumpyBoundsPrepared:
        from dprect.engines.arrow_input import numeric_column, read_table

        if source.format == "delta":
            raise ParameterError("Delta input needs the Spark engine (--engine spark)")
        if (source.where, source.version, source.timestamp) != (None, None, None):
            raise ParameterError("a row filter or a Delta snapshot needs the Spark engine "
                                 "(--engine spark)")
        progress(f"reading {source.path}")
        table = read_table(source.path, source.read_columns(), source.format)
        values = [numeric_column(table, c, nulls_as_nan=True) for c in source.columns]
        if source.group_by is None:
            group = np.zeros(table.num_rows, dtype=np.int32)
            count = 1
        else:
            assert groups is not None
            kind = group_kind_of_arrow(table.schema.field(source.group_by).type,
                                       source.group_by)
            resolved = resolve_groups(groups, kind, source.group_by)  # schema + list only
            group = group_index(table.column(source.group_by), kind, resolved)
            count = len(groups)
        return NumpyBoundsPrepared(values, group, count, domains)


# -- the released record -------------------------------------------------------------------
def _jsonable(value: Any) -> Any:
    """``value`` with tuples as lists and ±inf as the strings ``"inf"`` / ``"-inf"`` (a
    bound at ±inf can be drawn for a group with very few rows; strict JSON has no
    infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def coverage_statement(the_plan: BoundsPlan, columns: Sequence[str], groups: int
                       ) -> dict[str, Any]:
    """What the bounds promise, from the public plan only (docs/privacy.md §9)."""
    plan_json = the_plan.to_json()
    beta = the_plan.request.beta
    return {
        "coverage": the_plan.request.coverage,
        "alpha_per_side": float(the_plan.alpha),
        "beta_per_group": beta,
        "rank_error": dict(zip(columns, plan_json["rank_error"], strict=True)),
        "rows_needed": dict(zip(columns, plan_json["rows_needed"], strict=True)),
        "floor_rows": dict(zip(columns, the_plan.floor_rows, strict=True)),
        "statement": (
            f"with probability at least 1 - {beta:g} per group"
            + (f" (all {groups} groups together: at least 1 - {groups * beta:g})"
               if groups > 1 else "")
            + ", each side of column j clips at most max(k_j, alpha*n) + T_j of a group's "
              "n non-null rows, and the bound's grid cell is at or inside the group's "
              f"extreme occupied cell once n >= k_j (alpha = {float(the_plan.alpha):g}, "
              "T_j = rank_error[j], k_j = floor_rows[j] = ceil(T_j) + 1); from "
              "rows_needed[j] = k_j/alpha rows on the share alpha binds, below it each side "
              "aims at k_j rows; below about 2(k_j + T_j) rows lower > upper is possible: "
              "check before clamping"),
    }


def bounds_record(result: BoundsResult, the_plan: BoundsPlan) -> dict[str, Any]:
    """The released JSON: the core's result (per group and column the bounds and their
    grid indices, the guarantee, the plan), the coverage statement and the library forms
    (:meth:`BoundsResult.library_forms`); ±inf written as ``"inf"`` / ``"-inf"``."""
    record = result.to_json()
    record["method"] = BOUNDS_METHOD
    record["coverage"] = coverage_statement(the_plan, result.columns, len(result.groups))
    forms = result.library_forms()
    record["library_forms"] = forms if not result.grouped else \
        {"by_group": {str(g): f for g, f in forms.items()}}
    return _jsonable(record)


def is_bounds_record(record: Mapping[str, Any]) -> bool:
    """Whether a released record holds private clamping bounds (not a fit's rectangle)."""
    return record.get("method") == BOUNDS_METHOD and isinstance(record.get("bounds"), list)


def _number(value: Any) -> float:
    """A recorded bound as a float (``"inf"`` / ``"-inf"`` included)."""
    return float(value)


def table_rows(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per (group, column) — group, column, lower, upper — read from a released
    bounds record (the recorded JSON only)."""
    return [{"group": None if row["group"] is None else str(row["group"]),
             "column": str(row["column"]), "lower": _number(row["lower"]),
             "upper": _number(row["upper"])} for row in record["bounds"]]


def _csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The bounds table as CSV: a header, then one row per (group, column); an ungrouped
    run's group is empty; bounds as Python writes floats (``repr``: exact round trip)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(TABLE_COLUMNS)
    for row in rows:
        writer.writerow(["" if row["group"] is None else row["group"], row["column"],
                         repr(row["lower"]), repr(row["upper"])])
    return buf.getvalue()


@dataclass(frozen=True)
class CsvTableSink:
    """The bounds table as a CSV file (written atomically; a replay rewrites it with the
    same content)."""

    name: str
    path: str

    def check(self) -> None:
        check_output_path(self.path, self.name)

    def prepare(self, release: Release) -> Write:
        text = _csv_text(table_rows(release.record))

        def write() -> str:
            write_atomic(self.path, text)
            return f"bounds table written to {self.path}"

        return write


def _arrow_table(rows: Sequence[Mapping[str, Any]]) -> Any:
    import pyarrow as pa

    schema = pa.schema([("group", pa.string()), ("column", pa.string()),
                        ("lower", pa.float64()), ("upper", pa.float64())])
    return pa.Table.from_pylist([dict(r) for r in rows], schema=schema)


@dataclass(frozen=True)
class DeltaTableSink:
    """The bounds table as a Delta table (a folder), overwritten by each release in one
    commit (a reader sees the old rows or the new ones); the folder must be absent,
    empty, or a Delta table with the bounds table's columns."""

    name: str
    path: str

    def check(self) -> None:
        from dprect.core.extras import require

        require("delta", "the Delta bounds table")
        check_output_path(self.path, self.name, folder=True)
        where = Path(self.path)
        if not where.is_dir() or not any(where.iterdir()):
            return
        from deltalake import DeltaTable

        try:
            names = [f.name for f in DeltaTable(self.path).schema().fields]
        except Exception:
            raise ParameterError(f"{self.name} {self.path!r} is a folder that is not empty "
                                 "and holds no Delta table") from None
        if names != list(TABLE_COLUMNS):
            raise ParameterError(f"{self.name} {self.path!r} is a Delta table with other "
                                 f"columns than the bounds table's ({', '.join(TABLE_COLUMNS)})")

    def prepare(self, release: Release) -> Write:
        data = _arrow_table(table_rows(release.record))

        def write() -> str:
            from deltalake import write_deltalake

            Path(self.path).mkdir(parents=True, exist_ok=True)
            write_deltalake(self.path, data, mode="overwrite")
            return f"bounds table written to {self.path} (Delta)"

        return write


def table_sink(name: str, path: str) -> Sink:
    """``--table``: CSV for a path ending in ``.csv``, else a Delta table (a folder)."""
    if path.lower().endswith(".csv"):
        return CsvTableSink(name, path)
    return DeltaTableSink(name, path)


# -- reporting and the run ------------------------------------------------------------------


def summary_lines(record: Mapping[str, Any]) -> list[str]:
    """The released bounds, one line per (group, column), from the recorded JSON."""
    lines = []
    for row in table_rows(record):
        where = "" if row["group"] is None else f"group {row['group']!r}, "
        lines.append(f"{where}{row['column']}: lower {row['lower']:.6g}, "
                     f"upper {row['upper']:.6g}")
    return lines


def run_bounds_flow(settings: BoundsSettings, route: BoundsRoute,
                    report: Reporter | None = None) -> Outcome:
    """Run one bounds release end to end (the module docstring gives the order and
    guarantees). Raises a :class:`~dprect.core.errors.DprectError` for bad parameters,
    paths or schemas — before anything is reserved or written."""
    from dprect.release.results_table import utc_now

    report = report or Reporter()
    started_at = utc_now()
    source, ledger, the_plan = settings.source, settings.ledger, settings.plan
    run_id = open_run(report, settings.sinks,
                      [(report.name("input"), source.path),
                       (report.name("groups_file"), settings.groups_file)],
                      ledger, settings.seed, "these bounds are")

    def to_sinks(record: dict[str, Any]) -> None:
        if not is_bounds_record(record):
            raise ParameterError(f"run id {run_id} was released by another kind of run (not "
                                 "private bounds); use a new run id")
        release = Release(record, run_id, started_at)
        for line in summary_lines(record):
            report.show(line)
        for line in publish(settings.sinks, release):
            report.say(line)

    def fresh() -> Outcome:
        for line in plan_lines(the_plan, settings):
            report.say(line)
        columns = source.columns
        with route.open(source, settings.domains, settings.groups,
                        report.progress) as prepared:

            def compute() -> tuple[Any, dict[str, Any]]:
                report.progress(f"bounding {len(columns)} column(s) in "
                                f"{len(settings.group_names)} group(s)")
                counts = prepared.histograms()
                result = seeded_run_quietly(lambda: _run(settings, counts))
                return result.guarantee, bounds_record(result, the_plan)

            return release_guarded(ledger, Charge(the_plan.guarantee, BOUNDS_METHOD,
                                                  list(columns)),
                                   compute, to_sinks, what="the bounds",
                                   describe=failure_line)

    return release_or_replay(report, ledger, run_id, to_sinks, fresh,
                             neighbouring=the_plan.guarantee.neighbouring)


def _run(settings: BoundsSettings, counts: Histograms) -> BoundsResult:
    """The mechanism on the histograms (keys by group name, as the core takes them)."""
    names = settings.group_names
    by_name = {(names[g], j): h for (g, j), h in counts.items()}
    return run_bounds(settings.plan, by_name, names, RandomSource(seed=settings.seed),
                      settings.source.columns)


def plan_lines(the_plan: BoundsPlan, settings: BoundsSettings) -> list[str]:
    """What a run prints before it reads the input (public inputs only): the guarantee,
    charged once however many groups, the coverage target, the rows a side clips at least
    in aim (the floor k_j) and from how many rows the share binds (with ``rows``, the share
    a side may clip there)."""
    g = the_plan.guarantee
    columns = settings.source.columns
    groups = f" in each of {len(settings.groups)} listed group(s)" if settings.groups else ""
    lines = [
        f"plan: private bounds for {len(columns)} column(s){groups}, "
        f"{the_plan.mechanisms} exponential mechanisms per group (epsilon "
        f"{the_plan.epsilon_each:.4g} each); guarantee ({g.epsilon:.6g}, {g.delta:.3g})-DP, "
        f"{g.neighbouring}, charged once (groups are disjoint: parallel composition)"]
    needed = the_plan.rows_needed()
    j = int(np.argmax(needed))
    text = (f"plan: coverage {the_plan.request.coverage:g} (alpha = "
            f"{float(the_plan.alpha):.4g} clipped per side) from about {needed[j]:,} "
            f"non-null rows per group (column {columns[j]!r}); below that each side aims to "
            f"clip about {the_plan.floor_rows[j]:,} rows")
    share = the_plan.expected_clipped_share()
    if share is not None and the_plan.rows is not None:
        text += f"; at {the_plan.rows:,} rows a side clips at most {max(share):.3%}"
    return [*lines, text]


__all__ = ["BOUNDS_METHOD", "DEFAULT_BOUNDS_GRID", "TABLE_COLUMNS", "BoundsPrepared",
           "BoundsRoute", "BoundsSettings", "BoundsSource",
           "NumpyBoundsRoute", "bounds_domains", "bounds_plan", "bounds_request",
           "bounds_settings", "group_index", "group_kind_of_arrow", "public_groups",
           "resolve_groups", "run_bounds_flow", "table_rows"]
