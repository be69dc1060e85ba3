"""A grouped-aggregate release as recorded (``dprect aggregate`` and its presets): the JSON
the ledger holds and the sinks publish (:func:`aggregate_record`), read back into rows
(:func:`table_rows`) and lines (:func:`summary_lines`), from the core's result and public
plan only, so a replay publishes the same outputs.

**One record per mechanism, recognised by its method** (the mechanism's name): its
:class:`RecordShape` says which list holds its rows and how a row reads as a line.
``bounds`` (:data:`~dprect.core.statistic.COVERAGE`): the core's result (the bounds and
their grid indices, the guarantee, the plan) under ``bounds``, the coverage statement
(docs/privacy.md §9) and the ``library_forms``. ``describe``
(:data:`~dprect.core.statistic.QUERY`): the guarantee (``privacy``), the public plan and,
under ``results``, per (group, column) lower, upper, count, sum, mean (None when not
asked) with their noise intervals (``<statistic>_low``/``_high``,
:mod:`dprect.core.intervals`) and the small-group flag, then ``variance`` and ``std`` only
when asked (with their intervals: docs/privacy.md §17); a coverage bound row carries its
``rank_error``. They are the records ``dprect bounds`` and ``dprect
describe`` wrote before they became presets, so every record in a ledger reads as written.

**The small-group flag** (``describe``): ``below_row_need``
(:data:`~dprect.core.intervals.BELOW_ROW_NEED`, the one name of the flag: the quantiles'
rows carry theirs as released under it, a mixed run's row the parts' flags joined by
:func:`~dprect.core.intervals.any_below`) is true when the released
count is below :func:`rows_needed` of the recorded plan — post-processing of a released
value and the public plan, no privacy cost — and null when no count was released. Below
that need the plan no longer promises a centre inside the group's data, so its bounds and
mean may be anywhere (docs/operations.md, "Small groups"). It is in the JSON, the table
and the plot (hollow grey points); :func:`table_rows` derives it again from every record
it reads, so a replay of a record made before the flag existed publishes it too."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dprect.core.aggregates import SPREAD, STATISTICS, Cell, DescribeResult
from dprect.core.bounds import BoundsPlan, BoundsResult
from dprect.core.column_release import ColumnRows
from dprect.core.intervals import (
    BELOW_ROW_NEED,
    FORMER_BELOW_ROW_NEED,
    any_below,
    below_need,
    below_needs,
)
from dprect.core.mixed import MixedResult
from dprect.core.quantile_release import QuantileResult
from dprect.core.statistic import COVERAGE, QUANTILES, QUERY, Mechanism, outputs
from dprect.core.statistic import STATISTICS as STATISTIC_OF
from dprect.release.record_text import (
    BOOL_TEXTS,
    COMPACT_ITEMS,
    item_lines,
    item_pieces,
    joined_items,
    value_texts,
)
from dprect.release.row_spool import RowSpool, row_blocks

#: what the ledger records as the method of a run of each mechanism (its name)
BOUNDS_METHOD = COVERAGE.name
DESCRIBE_METHOD = QUERY.name
#: a record's rows: in memory, or spooled on disk block by block (a streamed run)
Rows = list[dict[str, Any]] | RowSpool


def json_float(value: float) -> float | str | None:
    """A float as a record writes it — strict JSON has no infinity and no NaN: ±inf as
    the strings ``"inf"`` / ``"-inf"`` (a bound at ±inf can be drawn for a group with very
    few rows), NaN as null (None: no number), any other float as itself. The ONE writer
    of a record's floats (:func:`jsonable`, :func:`_json_scalar`; docs/operations.md)."""
    if math.isfinite(value):
        return value
    return None if math.isnan(value) else "inf" if value > 0 else "-inf"


def jsonable(value: Any) -> Any:
    """``value`` with tuples as lists and every float as :func:`json_float` writes it
    (±inf as ``"inf"`` / ``"-inf"``, NaN as null)."""
    if isinstance(value, float):
        return json_float(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def coverage_statement(the_plan: BoundsPlan, columns: Sequence[str], groups: int
                       ) -> dict[str, Any]:
    """What the coverage bounds promise, from the public plan only (docs/privacy.md §9)."""
    plan_json = the_plan.to_json()
    beta = the_plan.request.beta
    return {
        "coverage": the_plan.request.coverage,
        "alpha_per_side": float(the_plan.alpha),
        "beta_per_group": beta,
        "rank_error": dict(zip(columns, plan_json["rank_error"], strict=True)),
        "rows_needed": dict(zip(columns, plan_json["rows_needed"], strict=True)),
        "floor_rows": dict(zip(columns, the_plan.floor_rows, strict=True)),
        "interval_level": the_plan.request.interval_level,
        "rank_error_at_level": dict(zip(columns, the_plan.interval_rank_error, strict=True)),
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
              "check before clamping; with probability at least interval_level, both "
              "sides of column j clip within +-rank_error_at_level[j] rows of their "
              "target max(k_j, alpha*n) (the table's rank_error)"),
    }


def rows_needed(plan: Mapping[str, Any], column: str) -> int:
    """The rows a group needs in ``column`` before the plan's accuracy statements hold
    for its cell, read from the plan as recorded in a describe record (public). The ONE
    place the flag reads the plan's row need: the plan's recorded ``rows_needed`` (one
    number for every column, or a number per column) when it has one, else — a record
    made before the plan stated it — :func:`centre_rows_needed`."""
    recorded = plan.get("rows_needed")
    if isinstance(recorded, Mapping):
        return int(recorded[column])
    if isinstance(recorded, int | float) and not isinstance(recorded, bool):
        return int(recorded)
    return centre_rows_needed(plan)


def centre_rows_needed(plan: Mapping[str, Any]) -> int:
    """The row need of a plan recorded before plans stated ``rows_needed`` (a replay of an
    older ledger record): its centre's, ``centre_rows``
    (:attr:`dprect.core.aggregates.DescribePlan.centre_rows`, the same for every column:
    n >= (4/eps_c)·ln(m/beta), docs/privacy.md §11) — what bounds those plans' cells."""
    return int(plan["centre_rows"])


def bounds_record(result: BoundsResult, the_plan: BoundsPlan) -> dict[str, Any]:
    """The coverage mechanism's released JSON: the core's result (per group and column
    the bounds and their grid indices, the guarantee, the plan), the coverage statement
    and the library forms (:meth:`BoundsResult.library_forms`); ±inf written as
    ``"inf"`` / ``"-inf"``."""
    record = result.to_json()
    record["method"] = BOUNDS_METHOD
    record["coverage"] = coverage_statement(the_plan, result.columns, len(result.groups))
    forms = result.library_forms()
    record["library_forms"] = forms if not result.grouped else \
        {"by_group": {str(g): f for g, f in forms.items()}}
    return jsonable(record)


def describe_record(result: DescribeResult, rows: Rows | None = None) -> dict[str, Any]:
    """The query mechanism's released JSON: the method, the columns, the public groups,
    the guarantee (``privacy``), the plan (public: the budget split, the targets, the
    accuracy statements), and per (group, column) ``lower``, ``upper``, ``count``,
    ``sum`` and ``mean`` (None for a statistic not asked for) and the small-group flag
    ``below_row_need`` (the module docstring); ±inf written as ``"inf"``/``"-inf"``.
    ``rows``: the rows already made (:func:`record_rows` of each block of a streamed
    run, spooled), else made here from the result's cells."""
    record = _head(result)
    record["results"] = describe_rows(result) if rows is None else rows
    plan = jsonable(record["plan"])
    return {"method": DESCRIBE_METHOD, **{k: v if k == "results" else plan if k == "plan"
                                          else jsonable(v) for k, v in record.items()}}


def _head(result: DescribeResult | QuantileResult) -> dict[str, Any]:
    """A result's ``to_json`` without making its rows (its ``results`` empty, in place)."""
    empty: DescribeResult | QuantileResult = replace(
        result, groups=[], cells=[])  # type: ignore[arg-type]
    head = empty.to_json()
    head["groups"] = list(result.groups)
    return head


def record_plan(result: DescribeResult | QuantileResult) -> Any:
    """The plan as ``result``'s record holds it (:func:`describe_record`,
    :func:`quantiles_record`: its JSON, ±inf as text)."""
    return jsonable(_head(result).get("plan", {}))


def describe_rows(result: DescribeResult) -> list[dict[str, Any]]:
    """The rows of a describe record (:func:`describe_record`) of ``result``'s cells: of
    the run's, or of one block of its groups (a block's rows are the run's rows of its
    groups)."""
    fields = block_fields(result)
    if fields is not None:  # a block's arrays: no Cell a cell
        return fields.rows()
    places, counted, need = _row_plan(result)
    rows = []
    for gi, g in enumerate(result.groups):
        group, cells = _json_scalar(g), result.cells[gi]
        for j, column in enumerate(result.columns):
            out: dict[str, Any] = {"group": group, "column": _json_scalar(column)}
            _cell_fields(out, cells[j], places, counted, need[column])
            rows.append(out)
    return rows


#: an output's place in a cell (:func:`_place`), by the output's key
Places = list[tuple[str, tuple[str | None, int | None]]]


def _row_plan(result: DescribeResult) -> tuple[Places, bool, dict[Any, int]]:
    """What :func:`describe_rows` reads of ``result``'s public plan: each output's place
    in a cell (the rows of :meth:`DescribeResult.rows`, made in one pass: no intermediate
    row a cell): an attribute (the bounds, an asked statistic), an end of an asked
    statistic's interval, or None (not asked); whether a count was released; the row need
    per column (:func:`rows_needed`)."""
    plan = jsonable(result.plan.to_json())
    asked = tuple(result.plan.statistics)
    need = {c: rows_needed(plan, c) for c in result.columns}  # public, per column
    return [(key, _place(key, asked)) for key in outputs(QUERY, asked)], \
        "count" in asked, need


def _cell_fields(row: dict[str, Any], cell: Cell,
                 places: Sequence[tuple[str, tuple[str | None, int | None]]],
                 counted: bool, need: int) -> None:
    """Set ``row``'s statistic fields from one released cell (:func:`describe_rows`'s
    ``places``: an attribute, or an end of its statistic's interval — the first interval
    of a statistic wins) and :data:`BELOW_ROW_NEED` from its count against the column's
    ``need``."""
    spans = {s: (lo, hi) for s, lo, hi in reversed(cell.intervals)}
    for key, (attribute, end) in places:
        if end is None:
            value = None if attribute is None else getattr(cell, attribute)
        else:
            span = spans.get(attribute)  # type: ignore[arg-type]
            value = None if span is None else span[end]
        row[key] = _json_scalar(value)
    row[BELOW_ROW_NEED] = below_need(cell.count if counted else None, need)


def block_fields(result: DescribeResult | QuantileResult) -> BlockFields | None:
    """The record rows of a block whose cells came as arrays
    (:class:`~dprect.core.column_release.ColumnRows`) a field at a time
    (:class:`BlockFields`: :meth:`~dprect.core.column_release.ReleasedColumns.fields`, the
    values its cells hold, in row order); a cell released in Python
    (:attr:`~dprect.core.column_release.ReleasedColumns.python`) takes its row from its
    :class:`~dprect.core.aggregates.Cell` as :func:`describe_rows` makes it. None for any
    other result (its rows: :func:`record_rows`)."""
    if not isinstance(result, DescribeResult) or not isinstance(result.cells, ColumnRows):
        return None
    released = result.cells.released
    places, counted, need = _row_plan(result)
    m, columns = released.groups, len(result.columns)
    assert m == len(result.groups) and columns == released.columns
    arrays = released.fields()

    def in_rows(a: np.ndarray) -> np.ndarray:  # cell order (j·m + g) to row order
        return a.reshape(columns, m).T.ravel()

    fields: dict[str, np.ndarray | None] = {}
    for key, (attribute, end) in places:
        name = None if attribute is None else (
            attribute if end is None else f"{attribute}{('_low', '_high')[end]}")
        a = None if name is None else arrays.get(name)
        fields[key] = None if a is None else in_rows(a)
    below = None
    if counted:
        count = arrays["count"]
        assert count is not None
        below = below_needs(in_rows(count), [need[c] for c in result.columns] * m)
    python: dict[int, dict[str, Any]] = {}
    for c, cell in released.python.items():  # left to Python: its cell's row
        g, j = c % m, c // m
        row = {"group": _json_scalar(result.groups[g]),
               "column": _json_scalar(result.columns[j])}
        _cell_fields(row, cell, places, counted, need[result.columns[j]])
        python[g * columns + j] = row
    return BlockFields(("group", "column", *(k for k, _ in places), BELOW_ROW_NEED),
                       [_json_scalar(g) for g in result.groups],
                       [_json_scalar(c) for c in result.columns], fields, below, python)


@dataclass(frozen=True)
class BlockFields:
    """A block's record rows (:func:`describe_rows`) kept a field at a time
    (:func:`block_fields`): ``keys``, a row's keys in order; ``groups`` and ``columns``,
    their JSON scalars (row r = g·len(columns) + j); ``fields``, each output's float64
    values in row order as released (±inf and NaN as drawn; None: null in every row);
    ``below``, the small-group flag (None: no count released); ``python``, the whole rows
    of the cells released in Python, by row. Every output of the block is made from it a
    field at a time — :meth:`rows`, :meth:`item_bytes`, :meth:`table` — the same as
    :func:`~dprect.release.record_text.item_lines` and :func:`table_block` of its
    :meth:`rows`, byte for byte, by the same definitions (the keys' order, the scalars'
    JSON :func:`_json_scalar`, the encoder's texts, the table's schema and flag), with no
    dict a row (issue #42)."""

    keys: tuple[str, ...]
    groups: list[Any]
    columns: list[Any]
    fields: dict[str, np.ndarray | None]
    below: np.ndarray | None
    python: dict[int, dict[str, Any]]

    def __len__(self) -> int:
        return len(self.groups) * len(self.columns)

    def _group_of_rows(self, values: list[Any]) -> list[Any]:
        """One value per group repeated for each of its rows."""
        c = len(self.columns)
        return [v for v in values for _ in range(c)]

    def _by_group(self, values: list[Any]) -> pa.StringArray:
        """One string (or None) per group as a string array of the rows (each repeated
        for its group's rows)."""
        c = len(self.columns)
        return pa.array(values, pa.string()).take(np.repeat(np.arange(len(values)), c))

    def _by_column(self, values: list[Any]) -> pa.StringArray:
        """One string per column as a string array of the rows (the columns in turn for
        each group)."""
        return pa.array(values, pa.string()).take(np.tile(np.arange(len(values)),
                                                          len(self.groups)))

    def rows(self) -> list[dict[str, Any]]:
        """The record rows (dicts: a reader of rows, not the packer)."""
        values: list[list[Any] | itertools.repeat[None]] = [
            self._group_of_rows(self.groups), self.columns * len(self.groups)]
        for key in self.keys[2:-1]:
            a = self.fields[key]
            values.append(itertools.repeat(None) if a is None else
                          a.tolist() if np.isfinite(a).all() else
                          [_json_scalar(x) for x in a.tolist()])
        values.append(itertools.repeat(None) if self.below is None else self.below.tolist())
        rows = [dict(zip(self.keys, v, strict=False)) for v in zip(*values, strict=False)]
        for r, row in self.python.items():
            rows[r] = dict(row)
        return rows

    def item_bytes(self) -> bytes:
        """:func:`~dprect.release.record_text.item_lines` of :meth:`rows`, ASCII-encoded,
        made a field at a time in Arrow (issue #42): the groups' and columns' texts
        (:func:`~dprect.release.record_text.value_texts`) each made once and taken for
        their rows, each float field's texts at once (:func:`float_text_array`), the flag's
        ``true``/``false``, a row's item by one template's pieces and its values' texts
        joined (:func:`~dprect.release.record_text.item_pieces`,
        :func:`~dprect.release.record_text.joined_items`; a field null in every row
        written in it), a cell released in Python by its row's own item."""
        texts = [self._by_group(value_texts(self.groups)),
                 self._by_column(value_texts(self.columns))]
        fixed: dict[str, str] = {}
        for key in self.keys[2:-1]:
            a = self.fields[key]
            if a is None:
                fixed[key] = "null"
            else:
                texts.append(float_text_array(a))
        if self.below is None:
            fixed[BELOW_ROW_NEED] = "null"
        else:
            texts.append(pc.if_else(pa.array(self.below, pa.bool_()), *BOOL_TEXTS[::-1]))
        return joined_items(item_pieces(self.keys, fixed), texts,
                            {r: item_lines([row]) for r, row in self.python.items()})

    def table(self, shape: RecordShape, plan: Mapping[str, Any]) -> TableBlock:
        """:func:`table_block` of :meth:`rows` (the same batch), made a column at a time
        from the arrays: an output as :func:`_floats` reads its recorded value (a NaN
        recorded null: :func:`json_float`), the flag derived again from that count
        (:func:`_flag_columns`)."""
        statistics = plan.get("statistics", ())
        keys = outputs(shape.mechanism, statistics)
        n, m = len(self), len(self.groups)
        names = [str(c) for c in self.columns] * m
        columns: list[Any] = [
            self._by_group([None if g is None else str(g) for g in self.groups]),
            self._by_column([str(c) for c in self.columns])]
        for key in keys:
            a = self.fields.get(key)
            if a is None:
                columns.append(_floats([None] * n))
                continue
            mask = np.isnan(a)  # recorded null (json_float), 0.0 under it as _floats has
            values = np.where(mask, 0.0, a) if mask.any() else a
            if self.python:
                values = values.copy()
                for r, row in self.python.items():
                    v = row.get(key)
                    mask[r] = v is None
                    values[r] = 0.0 if v is None else float(v)
            columns.append(pa.array(values, pa.float64(),
                                    mask=mask if mask.any() else None))
        columns += _flag_columns(shape, keys, columns, names, plan, {},
                                 lambda: [None] * n)
        return TableBlock(pa.RecordBatch.from_arrays(columns,
                                                     schema=table_schema(shape, statistics)))


#: the magnitudes (at least the first, below the second) whose finite floats both Arrow's
#: float → string cast and Python's ``repr`` write positionally, with the same digits
#: (both the shortest text that reads back as the float, the nearest of those): ``repr``
#: is positional from 1e-4 up to 1e16, Arrow's cast (its ``double-conversion``, as
#: pyarrow sets it) from 1e-6 up to 1e10; there the cast writes a whole number without
#: ``repr``'s ``.0`` (``10`` for ``10.0``; ±0 ``0``/``-0``)
PLAIN_FLOATS = (1e-4, 1e10)
#: the magnitudes (nonzero below the first, finite from the second) that both write with
#: an exponent, the same digits; of those, the cast writes a one-digit exponent (from the
#: first of :data:`ONE_DIGIT_EXPONENTS`, below the second: e-9 to e-7) without the
#: leading zero of ``repr``'s (``1.5e-7`` for ``1.5e-07``; a float's shortest text has
#: the decimal exponent k of 10^k ≤ |x| < 10^(k+1), both powers read as floats)
EXPONENT_FLOATS = (1e-6, 1e16)
ONE_DIGIT_EXPONENTS = (1e-9, 1e-6)


#: :func:`float_text_array` looks at this many first values of a field to choose its way
_PROBE = 256


def float_text_array(values: np.ndarray) -> pa.StringArray:
    """Each float of ``values`` as a record row's item writes it (:func:`_json_scalar`,
    its text :func:`~dprect.release.record_text.value_texts`': a finite float's
    ``repr``, ±inf ``"inf"``/``"-inf"``, NaN null), a field of a block at once as an
    Arrow string array (issue #42): Arrow's cast of every value, its layout made
    ``repr``'s where only the layout differs — ``.0`` added to a whole number of
    :data:`PLAIN_FLOATS`' range (and ±0), a zero put before a one-digit exponent
    (:data:`ONE_DIGIT_EXPONENTS`) —, every other value (1e-6 ≤ |x| < 1e-4, 1e10 ≤ |x| <
    1e16, ±inf, NaN) by Python, value by value (:func:`_float_texts`); all by Python if
    this Arrow's cast is not laid out so (:func:`_arrow_layout`, once a process). A
    field of few distinct values — a block of tiny groups' bounds (a few bins around each
    column's centre), its counts and their intervals (small integers) — has each distinct
    value (told apart by its bits) written once and its text taken for its rows: a field
    whose first :data:`_PROBE` values are at most half distinct. The way taken depends
    on the values but changes no byte
    (tests/release/test_float_texts.py: against ``json.dumps`` of the row's scalar over
    millions of random bit patterns and the edges); post-processing of released
    values."""
    a = np.ascontiguousarray(values, dtype=np.float64)
    if not len(a):
        return pa.array([], pa.string())
    if not _arrow_layout():  # pragma: no cover (an Arrow whose cast is laid out otherwise)
        return pa.array(_float_texts(a), pa.string())
    probe = a[:_PROBE].view(np.int64)
    if len(np.unique(probe)) * 2 > len(probe):
        return _arrow_texts(a)
    codes = pa.array(a.view(np.int64)).dictionary_encode()  # by bits: −0.0 is not 0.0
    return _arrow_texts(codes.dictionary.to_numpy().view(np.float64)).take(codes.indices)


def _arrow_texts(a: np.ndarray) -> pa.StringArray:
    """:func:`float_text_array` of float64 ``a`` (not empty) by Arrow's cast, its layout
    mended (the function's notes): each set of values mended or written by Python made
    apart, then every value's text taken from the cast's or its set's."""
    size = np.abs(a)
    plain = ((size >= PLAIN_FLOATS[0]) & (size < PLAIN_FLOATS[1])) | (a == 0.0)
    exponent = ((size < EXPONENT_FLOATS[0]) & (a != 0.0)) | (
        (size >= EXPONENT_FLOATS[1]) & np.isfinite(a))
    kept = np.where(plain, a, 0.0)  # (a NaN's floor may signal)
    texts = pc.cast(pa.array(a), pa.string())
    parts, index, start = [texts], np.arange(len(a)), len(a)
    for mask, mend in (
            (plain & (kept == np.floor(kept)), _whole),
            ((size >= ONE_DIGIT_EXPONENTS[0]) & (size < ONE_DIGIT_EXPONENTS[1]), _zero_put),
            (~(plain | exponent), None)):
        k = int(np.count_nonzero(mask))
        if not k:
            continue
        if k == len(a) and mend is not None:  # every value: mended as a whole
            return mend(texts)
        made = pa.array(_float_texts(a[mask]), pa.string()) if mend is None \
            else mend(texts.filter(pa.array(mask)))
        index[mask] = np.arange(start, start + k)
        parts.append(made)
        start += k
    return texts if len(parts) == 1 else pa.concat_arrays(parts).take(pa.array(index))


def _whole(texts: pa.StringArray) -> pa.StringArray:
    """The cast's texts of whole numbers with ``repr``'s ``.0``."""
    return pc.binary_join_element_wise(texts, ".0", "")


def _zero_put(texts: pa.StringArray) -> pa.StringArray:
    """The cast's texts of a one-digit negative exponent with ``repr``'s zero before it."""
    return pc.replace_substring(texts, "e-", "e-0")


@functools.cache
def _arrow_layout() -> bool:
    """Whether this Arrow's cast, mended by :func:`_arrow_texts`, writes ``repr``'s text
    for every power of ten a float holds, its neighbours and a 17-digit value in each
    decade, both signs (once a process; public values only): the layout's rules are the
    cast's, not the data's."""
    powers = np.array([float(f"1e{k}") for k in range(-323, 309)])
    a = np.concatenate([powers, np.nextafter(powers, 0), np.nextafter(powers, np.inf),
                        powers * 1.2345678901234567, [0.0, 5e-324]])
    a = np.concatenate([a, -a])
    return bool(_arrow_texts(a).to_pylist() == _float_texts(a))


def _float_texts(a: np.ndarray) -> list[str]:
    """Each float of ``a`` (float64) written by Python, value by value: a finite one's
    ``repr``, else its :func:`_json_scalar`'s text."""
    if np.isfinite(a).all():
        return value_texts(a.tolist(), "float")
    return value_texts([_json_scalar(x) for x in a.tolist()])


def _place(key: str, asked: Sequence[str]) -> tuple[str | None, int | None]:
    """Where :meth:`~dprect.core.aggregates.DescribeResult.rows` takes output ``key``
    of a cell from: (attribute, None) — the bounds, an asked statistic's value — or
    (statistic, 0 | 1) — the low or high end of an asked statistic's interval — or
    (None, None): a statistic not asked (None)."""
    if key in ("lower", "upper") or key in asked:
        return key, None
    for end, suffix in enumerate(("_low", "_high")):
        if key.endswith(suffix) and key[:-len(suffix)] in asked:
            return key[:-len(suffix)], end
    return None, None


def _json_scalar(value: Any) -> Any:
    """:func:`jsonable` of one value of a result row (a float, None, a name: the fast
    path for the 10^5-group records, issue #42)."""
    if type(value) is float:
        return json_float(value)
    return value if value is None or type(value) in (str, int, bool) else jsonable(value)


def quantiles_record(result: QuantileResult, rows: Rows | None = None) -> dict[str, Any]:
    """The quantiles' released JSON: the method, the core's result (the columns, the
    groups, the statistics, per (group, column) the quantiles and the released flag
    ``below_row_need``, the guarantee, the plan; docs/privacy.md §11a). ``rows`` as
    :func:`describe_record`'s."""
    record = _head(result)
    record["results"] = jsonable(result.rows()) if rows is None else rows
    return {"method": QUANTILES.name, **{k: v if k == "results" else jsonable(v)
                                         for k, v in record.items()}}


def record_rows(result: DescribeResult | QuantileResult) -> list[dict[str, Any]]:
    """The record rows of ``result``'s cells (a run's, or one block's: streamed runs
    spool them block by block, :class:`~dprect.release.row_spool.RowSpool`), as
    :func:`aggregate_record` writes them."""
    if isinstance(result, QuantileResult):
        rows: list[dict[str, Any]] = jsonable(result.rows())
        return rows
    return describe_rows(result)


def streamed_rows(spool: RowSpool) -> Rows | None:
    """The rows a run streamed into ``spool`` (:func:`record_rows` of each block): None
    when nothing was streamed (the run's result holds its cells), the spool, or a short
    spool's rows as a list (at most :data:`~dprect.release.record_text.COMPACT_ITEMS`: a
    record written as before, with no spool in it; the spool closed)."""
    if not spool.block_count:
        return None
    if len(spool) > COMPACT_ITEMS:
        return spool
    rows = list(spool)
    spool.close()
    return rows


def aggregate_record(result: BoundsResult | DescribeResult | QuantileResult, the_plan: Any,
                     rows: Rows | None = None) -> dict[str, Any]:
    """The released JSON of a run's result, in its mechanism's record (module notes);
    ``rows``: a streamed run's rows, made block by block (:func:`record_rows`) — the
    result then holds no cells (not for the coverage bounds, never streamed)."""
    if isinstance(result, BoundsResult):
        assert rows is None, "the coverage bounds are never streamed"
        return bounds_record(result, the_plan)
    if isinstance(result, QuantileResult):
        return quantiles_record(result, rows)
    return describe_record(result, rows)


def mixed_columns(mechanisms: Sequence[str], statistics: Sequence[str] = ()
                  ) -> tuple[str, ...]:
    """A mixed run's row keys (generated from the registry): group, column, then each
    mechanism's outputs (:func:`~dprect.core.statistic.outputs` for the run's
    ``statistics``), in the run's order, then their flags, each once (the parts' flags
    joined: :func:`_merged_rows`)."""
    shapes = [SHAPES[m] for m in mechanisms]
    return ("group", "column", *(k for s in shapes for k in outputs(s.mechanism, statistics)),
            *dict.fromkeys(f for s in shapes for f in s.flags))


def mixed_method(mechanisms: Sequence[str]) -> str:
    """The method a run of several mechanisms records (and the ledger charges): their
    names joined by ``+``, in the run's order."""
    return "+".join(mechanisms)


def mixed_names(record: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The mechanisms of a released mixed record (its method, with each part's own record
    under ``parts`` and the merged rows under ``results``), None for any other record."""
    method, parts = record.get("method"), record.get("parts")
    if not isinstance(method, str) or "+" not in method or not isinstance(parts, Mapping) \
            or not isinstance(record.get("results"), list):
        return None
    names = tuple(method.split("+"))
    if len(names) < 2 or any(n not in SHAPES or not isinstance(parts.get(n), Mapping)
                             or shape_of(parts[n]) is not SHAPES[n] for n in names):
        return None
    return names


def _recorded_statistics(parts: Mapping[str, Any], names: Sequence[str]) -> tuple[str, ...]:
    """Every statistic the parts' recorded plans name (public)."""
    return tuple(str(s) for m in names
                 for s in (parts[m].get("plan") or {}).get("statistics", ()))


def _merged_rows(parts: Mapping[str, Any], names: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (group, column) with every part's outputs and the flag
    (:func:`mixed_columns`), read from the parts' records: true where any part flags the
    cell (:func:`~dprect.core.intervals.any_below` of the parts' flags; each part's own
    stays in its record)."""
    merged: dict[tuple[Any, str], dict[str, Any]] = {}
    flags: dict[tuple[Any, str], list[Any]] = {}
    for m in names:
        for row in table_rows(parts[m]):
            cell = (row["group"], row["column"])
            merged.setdefault(cell, {}).update(row)
            if SHAPES[m].flags:
                flags.setdefault(cell, []).append(row[BELOW_ROW_NEED])
    for cell, flagged in flags.items():
        merged[cell][BELOW_ROW_NEED] = any_below(flagged)
    keys = mixed_columns(names, _recorded_statistics(parts, names))
    return [{k: row.get(k) for k in keys} for row in merged.values()]


def mixed_record(result: MixedResult) -> dict[str, Any]:
    """A run of several mechanisms' released JSON (docs/privacy.md §11b): the method
    (:func:`mixed_method`), the plan (shares, check), the guarantee, each mechanism's own
    record under ``parts`` and, under ``results``, one row per (group, column) with every
    mechanism's outputs and flags (:func:`mixed_columns`; a statistic not asked stays
    None)."""
    names = result.plan.mechanisms
    parts = jsonable({m: aggregate_record(r, p) for m, r, p in zip(
        names, result.results, result.plan.plans, strict=True)})
    return jsonable({"method": mixed_method(names), "plan": result.plan.to_json(),
                     "privacy": result.guarantee.to_json(), "parts": parts,
                     "results": _merged_rows(parts, names)})


def noun_of(method: str) -> str:
    """What a record of ``method`` is, in messages (a mechanism's noun, or the parts' of
    a mixed run)."""
    if method in SHAPES:
        return SHAPES[method].noun
    return "statistics of several mechanisms (" + " + ".join(
        SHAPES[m].noun if m in SHAPES else m for m in method.split("+")) + ")"


def _bounds_line(row: Mapping[str, Any], plan: Mapping[str, Any]) -> str:
    return f"lower {row['lower']:.6g}, upper {row['upper']:.6g}"


def _describe_line(row: Mapping[str, Any], plan: Mapping[str, Any]) -> str:
    stats = "".join(f"{key} {row[key]:.6g}, " for key in STATISTICS + SPREAD
                    if row.get(key) is not None)
    few = (f" — {BELOW_ROW_NEED}: fewer than the {rows_needed(plan, row['column']):,}"
           " rows the plan needs, bounds and mean may be far off"
           if row[BELOW_ROW_NEED] else "")
    return f"{stats}bounds [{row['lower']:.6g}, {row['upper']:.6g}]{few}"


def _rank_text(error: Any) -> str:
    """A quantile's rank interval in the summary: ``(rank +-T rows)``, or nothing."""
    return "" if error is None else f" (rank +-{float(error):,.1f} rows)"


def _quantiles_line(row: Mapping[str, Any], plan: Mapping[str, Any]) -> str:
    values = ", ".join(f"{s.name} {row[s.name]:.6g}" + _rank_text(row.get(s.outputs[1]))
                       for s in STATISTIC_OF.values()
                       if s.mechanism is QUANTILES and row.get(s.name) is not None)
    few = (f" — {BELOW_ROW_NEED}: fewer than the {int(plan['rows_needed']):,} rows the "
           "plan needs, the values may be far off" if row[BELOW_ROW_NEED] else "")
    return values + few


@dataclass(frozen=True)
class RecordShape:
    """A mechanism's record (module notes): its name in messages (``noun``), the list
    that holds its rows (``rows``), the flags a table row adds after the outputs
    (``flags``), and a row's text in the summary (``line``: the row, the recorded plan)."""

    mechanism: Mechanism
    noun: str
    rows: str
    flags: tuple[str, ...]
    line: Callable[[Mapping[str, Any], Mapping[str, Any]], str]

    @property
    def columns(self) -> tuple[str, ...]:
        """A table row's keys: group, column, the mechanism's outputs, the flags (of a
        run asking for no ``on_ask`` statistic: :meth:`table_columns`)."""
        return self.table_columns(())

    def table_columns(self, statistics: Sequence[str]) -> tuple[str, ...]:
        """A table row's keys in a run asking for ``statistics``: group, column, the
        mechanism's outputs (:func:`~dprect.core.statistic.outputs`), the flags."""
        return ("group", "column", *outputs(self.mechanism, statistics), *self.flags)


#: every mechanism's record, by the method it records (its name)
SHAPES: dict[str, RecordShape] = {s.mechanism.name: s for s in (
    RecordShape(COVERAGE, "private bounds", "bounds", (), _bounds_line),
    RecordShape(QUERY, "DP aggregates (describe)", "results", (BELOW_ROW_NEED,),
                _describe_line),
    RecordShape(QUANTILES, "private quantiles", "results", (BELOW_ROW_NEED,),
                _quantiles_line),
)}


def shape_of(record: Mapping[str, Any]) -> RecordShape | None:
    """The shape of a released grouped-aggregate record (its method's, when its rows are
    there), None for any other record (a fit's, a classes')."""
    shape = SHAPES.get(str(record.get("method")))
    return shape if shape is not None and isinstance(record.get(shape.rows),
                                                      list | RowSpool) else None


def is_aggregate_record(record: Mapping[str, Any]) -> bool:
    """Whether a released record is a grouped aggregate's (not a rectangle): one
    mechanism's, or a mixed run's (:func:`mixed_names`)."""
    return shape_of(record) is not None or mixed_names(record) is not None


class TableBlock(Sequence[dict[str, Any]]):
    """A block of table rows kept as the Arrow record batch it was made as (a spooled
    block's, made where it was drawn: :class:`~dprect.release.block_pack.BlockPacker`):
    a reader that takes the batch (the Parquet and Delta tables, the summary) reads
    :attr:`batch`; read as a sequence, its rows as :func:`table_block` makes them (made
    at the first read, ``to_pylist``: the same values, None for a null)."""

    def __init__(self, batch: Any) -> None:
        self.batch = batch
        self._rows: list[dict[str, Any]] | None = None

    def _made(self) -> list[dict[str, Any]]:
        if self._rows is None:
            self._rows = self.batch.to_pylist()
        return self._rows

    def __len__(self) -> int:
        return int(self.batch.num_rows)

    def __getitem__(self, i: Any) -> Any:
        return self._made()[i]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._made())


#: the Arrow type of a table column of each kind (:func:`table_schema`)
_KINDS = {"text": pa.string(), "float": pa.float64(), "bool": pa.bool_()}


def table_schema(shape: RecordShape, statistics: Sequence[str] = ()) -> pa.Schema:
    """The Arrow schema of the table rows of a record of ``shape`` asking for
    ``statistics`` (:meth:`RecordShape.table_columns`): group and column as strings, the
    flags as booleans, every output float64."""
    return pa.schema([(key, _KINDS["text" if key in ("group", "column") else
                                   "bool" if key in shape.flags else "float"])
                      for key in shape.table_columns(statistics)])


def _released_flag(row: Mapping[str, Any]) -> Any:
    """A recorded quantiles row's released small-group flag: under
    :data:`~dprect.core.intervals.BELOW_ROW_NEED`, or its former name in a record made
    before the flag had one name (read only: every table and line names it
    ``below_row_need``)."""
    return row.get(BELOW_ROW_NEED, row.get(FORMER_BELOW_ROW_NEED))


def _floats(values: list[Any]) -> pa.Array:
    """A table column of recorded numbers: each a float (a recorded ``"inf"``/``"-inf"``
    or integer as ``float`` reads it) or None (a null)."""
    try:
        array = pa.array(values)
    except (pa.ArrowException, OverflowError):
        array = None
    if array is None or array.type not in (pa.float64(), pa.null()):
        array = pa.array([v if v is None or type(v) is float else float(v) for v in values],
                         pa.float64())
    return array.cast(pa.float64())


def table_block(rows: Sequence[Mapping[str, Any]], shape: RecordShape,
                plan: Mapping[str, Any], need: dict[str, int] | None = None
                ) -> TableBlock:
    """The table rows of a block of a record's rows (:func:`table_rows`' rows: group and
    column as text, each output a float — a recorded ``"inf"``/``"-inf"`` too — or None,
    then the flags: the small-group flag derived again from the released count and the
    recorded ``plan``, the quantiles' as released), made a column at a time as one Arrow
    batch of :func:`table_schema` (:class:`TableBlock`). ``need``: the plan's row need
    per column read so far (filled here; public)."""
    statistics = plan.get("statistics", ())
    keys = outputs(shape.mechanism, statistics)
    need = {} if need is None else need
    columns: list[Any] = [
        pa.array([None if r["group"] is None else str(r["group"]) for r in rows], pa.string()),
        pa.array(names := [str(r["column"]) for r in rows], pa.string())]
    columns += [_floats([r.get(key) for r in rows]) for key in keys]
    columns += _flag_columns(shape, keys, columns, names, plan, need,
                             lambda: [_released_flag(r) for r in rows])
    return TableBlock(pa.RecordBatch.from_arrays(columns,
                                                 schema=table_schema(shape, statistics)))


def _flag_columns(shape: RecordShape, keys: Sequence[str], columns: Sequence[pa.Array],
                  names: Sequence[str], plan: Mapping[str, Any], need: dict[str, int],
                  small: Callable[[], list[Any]]) -> list[pa.Array]:
    """A table block's flag columns (:func:`table_block`, :meth:`BlockFields.table`), after
    its group, column (row by row: ``names``) and outputs' ``columns`` (``keys``): the
    quantiles' flag as released (``small``: its rows' values), the small-group flag
    derived again from the released count and the recorded ``plan`` (count < the
    column's :func:`rows_needed`; null where no count was released; ``need``: the row
    need per column read so far, filled here)."""
    out = []
    for _ in shape.flags:  # its one flag, if any (BELOW_ROW_NEED)
        if shape.mechanism is QUANTILES:  # the quantiles' flag is released as drawn
            out.append(pa.array(small(), pa.bool_()))
        elif "count" not in keys:
            out.append(pa.nulls(len(names), pa.bool_()))
        else:
            for name in dict.fromkeys(names):
                if name not in need:
                    need[name] = rows_needed(plan, name)
            count = columns[2 + list(keys).index("count")]
            nulls = count.is_null().to_numpy(zero_copy_only=False) if count.null_count \
                else None  # no count released: a null flag
            out.append(pa.array(below_needs(count.to_numpy(zero_copy_only=False),
                                            [need[n] for n in names]),
                                pa.bool_(), mask=nulls))
    return out


def table_blocks(record: Mapping[str, Any]) -> Iterator[Sequence[dict[str, Any]]]:
    """:func:`table_rows` a block of rows at a time (a record's rows spooled on disk are
    read a block at a time: :func:`~dprect.release.row_spool.row_blocks`; a spool's
    blocks as the table batches they were spooled with, :class:`TableBlock`)."""
    names = mixed_names(record)
    if names is not None:
        yield _merged_rows(record["parts"], names)
        return
    shape = shape_of(record)
    assert shape is not None, "not a grouped-aggregate record"
    rows = record[shape.rows]
    batches = rows.table_batches() if isinstance(rows, RowSpool) else None
    if batches is not None:
        for batch in batches:
            if batch is not None:
                yield TableBlock(batch)
        return
    plan = record.get("plan", {})
    need: dict[str, int] = {}  # the plan's row need per column (public), read once
    for block in row_blocks(rows):
        if block:
            yield table_block(block, shape, plan, need)


def table_rows(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per (group, column) — group, column, the mechanism's outputs and flags
    (the small-group flag derived again from the released count and the recorded plan) —
    read from a released record (the recorded JSON only); a mixed record's rows hold
    every part's (:func:`mixed_columns`). All of them in memory: the sinks of a large
    record read :func:`table_blocks` instead."""
    return [row for block in table_blocks(record) for row in block]


def summary_lines(record: Mapping[str, Any]) -> list[str]:
    """The released values, one line per (group, column), from the recorded JSON (a mixed
    record's line: each part's text in turn, ``; ``-separated)."""
    names = mixed_names(record)
    if names is not None:
        texts: dict[tuple[Any, str], list[str]] = {}
        for m in names:
            part = record["parts"][m]
            for row in table_rows(part):
                texts.setdefault((row["group"], row["column"]), []).append(
                    SHAPES[m].line(row, part.get("plan", {})))
        return [("" if g is None else f"group {g!r}, ") + f"{c}: {'; '.join(t)}"
                for (g, c), t in texts.items()]
    shape = shape_of(record)
    assert shape is not None, "not a grouped-aggregate record"
    plan = record.get("plan", {})
    return [("" if row["group"] is None else f"group {row['group']!r}, ")
            + f"{row['column']}: {shape.line(row, plan)}" for row in table_rows(record)]


def cell_count(record: Mapping[str, Any]) -> int:
    """How many (group, column) cells a released record holds (its rows' count: the
    public numbers of groups times columns), without reading them."""
    if mixed_names(record) is not None:
        return len(record["results"])
    shape = shape_of(record)
    assert shape is not None, "not a grouped-aggregate record"
    return len(record[shape.rows])


def released_statistics(record: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]
                        ) -> tuple[str, ...]:
    """The statistics a released record holds, by their registry names in the registry's
    order: those of the record's mechanism(s) whose first output its first row
    (``rows``: :func:`table_rows` of it) holds — a statistic not asked is None there."""
    names = mixed_names(record)
    methods = set(names) if names is not None else {str(record.get("method"))}
    first = rows[0] if rows else {}
    return tuple(s.name for s in STATISTIC_OF.values()
                 if s.mechanism.name in methods and first.get(s.outputs[0]) is not None)


class Overview:
    """:func:`overview_lines` taken a block of table rows at a time (a reader of the
    record's one read, :mod:`dprect.release.row_pass`): fed every block of
    :func:`table_blocks` in order, then :meth:`lines`."""

    def __init__(self, record: Mapping[str, Any]) -> None:
        self.record = record
        self.first: list[dict[str, Any]] | None = None  # the first block's first row
        self.groups: dict[Any, None] = {}
        self.columns: dict[Any, None] = {}
        self.cells = 0
        self.marked = {BELOW_ROW_NEED: 0}

    def take(self, block: Sequence[dict[str, Any]]) -> None:
        self.cells += len(block)
        if isinstance(block, TableBlock):  # its batch's columns, not a dict a row
            batch = block.batch
            if self.first is None:
                self.first = batch.slice(0, 1).to_pylist()
            for name, seen in (("group", self.groups), ("column", self.columns)):
                seen.update(dict.fromkeys(batch.column(name).unique().to_pylist()))
            for flag in self.marked:
                if flag in batch.schema.names:
                    self.marked[flag] += int(pc.sum(batch.column(flag)).as_py() or 0)
            return
        if self.first is None:
            self.first = list(block[:1])
        for row in block:
            self.groups[row["group"]] = None
            self.columns[row["column"]] = None
            for flag in self.marked:
                if row.get(flag):
                    self.marked[flag] += 1

    def lines(self) -> list[str]:
        """A release too large to list a line per cell, in a few lines from the recorded
        JSON alone (a replay prints the same): how many groups, columns and cells, which
        statistics, the guarantee charged once (with a private group selection, how many
        keys it kept), and how many cells each small-group flag released marks (a count
        of released flags: post-processing). Every number is the public shape of the run
        or counts released values; none is read from the data."""
        record, first, cells = self.record, self.first or [], self.cells
        g = record.get("privacy", {})
        lines = [f"released {cells:,} cells: {len(self.groups):,} group(s) x "
                 f"{len(self.columns):,} column(s), statistics "
                 f"{', '.join(released_statistics(record, first))}",
                 f"guarantee ({float(g.get('epsilon', math.nan)):.6g}, "
                 f"{float(g.get('delta', math.nan)):.3g})-DP, {g.get('neighbouring')}, "
                 "charged once for every group (disjoint rows: parallel composition)"]
        selection = record.get("group_selection")
        if isinstance(selection, Mapping):  # the keys found privately (docs/privacy.md §18)
            listed = int(selection.get("groups_listed", 0))
            beside = f", beside {listed:,} listed group(s) released whatever their rows" \
                if listed else ""
            lines.append(f"groups found privately: {int(selection['groups_kept']):,} kept "
                         f"by the selection{beside} (its cost is in the guarantee above)")
        for flag in self.marked:
            if first and first[0].get(flag) is not None:  # None: not released (no count)
                lines.append(f"{self.marked[flag]:,} of {cells:,} cells flagged {flag} "
                             "(fewer rows released than the plan needs: their values may "
                             "be far off)")
        return lines


def overview_lines(record: Mapping[str, Any]) -> list[str]:
    """:meth:`Overview.lines` of ``record``, its rows read here (once)."""
    overview = Overview(record)
    for block in table_blocks(record):
        overview.take(block)
    return overview.lines()


__all__ = [
    "BELOW_ROW_NEED",
    "BOUNDS_METHOD",
    "DESCRIBE_METHOD",
    "SHAPES",
    "BlockFields",
    "Overview",
    "RecordShape",
    "TableBlock",
    "aggregate_record",
    "block_fields",
    "bounds_record",
    "cell_count",
    "centre_rows_needed",
    "coverage_statement",
    "describe_record",
    "describe_rows",
    "float_text_array",
    "is_aggregate_record",
    "json_float",
    "jsonable",
    "mixed_columns",
    "mixed_method",
    "mixed_names",
    "mixed_record",
    "noun_of",
    "overview_lines",
    "record_plan",
    "record_rows",
    "released_statistics",
    "rows_needed",
    "shape_of",
    "streamed_rows",
    "summary_lines",
    "table_block",
    "table_blocks",
    "table_rows",
    "table_schema",
]
