"""A streamed block whose cells came as arrays (dprect.core.column_release.ColumnRows)
gets its record rows from the arrays (no Cell a cell: issue #42) — the very rows, key for
key and value for value (by repr and JSON), that the block's Cells give: every plan's
statistics, ±inf and NaN values, cells released in Python among them, group names of
several types; and the cells read as a sequence are ReleasedColumns.rows()."""

from __future__ import annotations

import json
import pickle
from typing import Any

import numpy as np
import pytest

from dprect.core.aggregates import Cell, DescribeResult, plan_describe
from dprect.core.column_release import ColumnRows, ReleasedColumns, released_rows
from dprect.release import aggregate_record
from dprect.release.aggregate_record import record_rows


def _block(seed: int, statistics: tuple[str, ...], groups: int, columns: int
           ) -> ReleasedColumns:
    gen = np.random.default_rng(seed)
    n = groups * columns
    lower = gen.normal(0.0, 10.0, n)
    bounds = np.stack([lower, lower + gen.exponential(5.0, n)], axis=1)
    noisy = gen.integers(-3, 30, n)
    values = gen.normal(0.0, 100.0, (n, 8))
    values[5, 0], values[7, 3], values[9, 1] = np.inf, -np.inf, np.nan
    bounds[2, 1] = np.inf
    python = {4: Cell(1.0, 2.0, 7.0, 3.0, None, (("count", 1.0, 9.0),)),
              11: Cell(-1.0, float("inf")),
              n - 1: Cell(0.5, 0.75, None, 2.0, 1.5, (("mean", -1.0, 4.0),))}
    made = ReleasedColumns(statistics, groups, columns, bounds, noisy, values, python)
    return pickle.loads(pickle.dumps(made))  # as it reaches the driver


@pytest.mark.parametrize("statistics", [("count", "sum", "mean"), ("sum",), ("mean",),
                                        ("count", "mean"), ("count",), ("sum", "count")])
def test_rows_from_the_arrays_are_the_rows_from_the_cells(
        statistics: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    groups, columns = 37, 3
    plan = plan_describe(1.0, columns, statistics=statistics)
    block = _block(len(statistics), statistics, groups, columns)
    names = [str(g) if g % 3 else g for g in range(groups)]
    cols = [f"c{j}" for j in range(columns)]
    want = record_rows(DescribeResult(cols, names, block.rows(), plan.guarantee, plan))
    taken: list[int] = []
    column_rows = aggregate_record._column_rows

    def spied(*a: Any) -> Any:
        taken.append(1)
        return column_rows(*a)

    monkeypatch.setattr(aggregate_record, "_column_rows", spied)
    cells = released_rows(block)
    assert isinstance(cells, ColumnRows) and len(cells) == groups
    got = record_rows(DescribeResult(cols, names, cells, plan.guarantee, plan))
    assert taken == [1]  # the arrays' path, not the cells'
    assert repr(got) == repr(want)  # keys in order, values and their types
    assert json.dumps(got) == json.dumps(want)
    assert len({r["lower"] for r in got}) > 50  # real values


def test_the_cells_read_as_a_sequence_are_the_blocks_cells() -> None:
    block = _block(3, ("count", "sum", "mean"), 9, 2)
    cells = released_rows(block)
    assert repr(list(cells)) == repr(block.rows()) and repr(cells[3]) == repr(block.rows()[3])
    rows = block.rows()
    assert released_rows(rows) is rows  # a list of cells as it is
