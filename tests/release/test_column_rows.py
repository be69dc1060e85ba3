"""A streamed block whose cells came as arrays (dprect.core.column_release.ColumnRows)
gets its record rows from the arrays (no Cell a cell: issue #42) — the very rows, key for
key and value for value (by repr and JSON), that the block's Cells give: every plan's
statistics, ±inf and NaN values, cells released in Python among them, group names of
several types; and the cells read as a sequence are ReleasedColumns.rows()."""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterable, Sequence
from itertools import repeat
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
    fields_of = aggregate_record.block_fields

    def spied(*a: Any) -> Any:
        made = fields_of(*a)
        taken.append(made is not None)
        return made

    monkeypatch.setattr(aggregate_record, "block_fields", spied)
    cells = released_rows(block)
    assert isinstance(cells, ColumnRows) and len(cells) == groups
    got = record_rows(DescribeResult(cols, names, cells, plan.guarantee, plan))
    assert taken == [True]  # the arrays' path, not the cells'
    assert repr(got) == repr(want)  # keys in order, values and their types
    assert json.dumps(got) == json.dumps(want)
    assert len({r["lower"] for r in got}) > 50  # real values


def test_the_cells_read_as_a_sequence_are_the_blocks_cells() -> None:
    block = _block(3, ("count", "sum", "mean"), 9, 2)
    cells = released_rows(block)
    assert repr(list(cells)) == repr(block.rows()) and repr(cells[3]) == repr(block.rows()[3])
    rows = block.rows()
    assert released_rows(rows) is rows  # a list of cells as it is


@pytest.mark.parametrize("statistics", [("count", "sum", "mean"), ("sum",), ("mean",),
                                        ("count",), ("sum", "count")])
def test_a_block_of_arrays_packs_to_the_bytes_of_its_rows_with_no_row_dict(
        statistics: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """The packer's text and table of a block of arrays, made a field at a time
    (BlockFields), are byte for byte item_lines and table_block of the block's rows —
    ±inf and NaN, cells released in Python, groups of several types among them — and the
    packer makes no row dict of such a block (issue #42)."""
    from dprect.release.aggregate_record import (
        SHAPES,
        BlockFields,
        block_fields,
        record_plan,
        table_block,
    )
    from dprect.release.block_pack import BlockPacker
    from dprect.release.record_text import item_lines
    from dprect.release.row_spool import pack_block

    groups, columns = 41, 3
    plan = plan_describe(1.0, columns, statistics=statistics)
    block = _block(7 + len(statistics), statistics, groups, columns)
    names: list[Any] = [str(g) if g % 3 else g for g in range(groups)]
    names[5], names[6] = None, "q%s\"\u00e9"
    cols = ["c0", "c%1", "c\u00e92"]
    result = DescribeResult(cols, names, released_rows(block), plan.guarantee, plan)
    fields = block_fields(result)
    assert isinstance(fields, BlockFields) and len(fields) == groups * columns
    rows = fields.rows()
    assert repr(rows) == repr(record_rows(
        DescribeResult(cols, names, block.rows(), plan.guarantee, plan)))
    shape, recorded = SHAPES["describe"], record_plan(result)
    assert fields.item_bytes().decode("ascii") == item_lines(rows)
    want = table_block(rows, shape, recorded).batch
    got = fields.table(shape, recorded).batch
    assert got.schema == want.schema and got.equals(want)
    assert got.to_pylist() == want.to_pylist()
    for deflate in (None, 1):
        wanted = pack_block(len(rows), item_lines(rows), want, deflate)

        def no_rows(*a: Any) -> Any:
            raise AssertionError("a row dict made while packing a block of arrays")

        with monkeypatch.context() as patch:
            patch.setattr(BlockFields, "rows", no_rows)
            patch.setattr(aggregate_record, "record_rows", no_rows)
            patch.setattr(aggregate_record, "describe_rows", no_rows)
            from dprect.release import block_pack
            patch.setattr(block_pack, "record_rows", no_rows)
            packed = BlockPacker("describe", deflate)(result)
        assert packed == wanted


def test_an_item_template_gives_the_encoders_text() -> None:
    """item_template filled with value_texts is the C encoder's compact item of the row,
    a % in a key or a fixed text kept as it is."""
    from dprect.release.record_text import item_lines, item_template, value_texts

    row = {"g%s": "a%d", "x": 1.5, "y%": None, "f": True, "z": -0.0}
    texts = [value_texts([row["g%s"]])[0], value_texts([row["x"]], "float")[0],
             value_texts([row["f"]], "bool")[0], value_texts([row["z"]], "float")[0]]
    template = item_template(list(row), {"y%": "null"})
    assert template % tuple(texts) == item_lines([row])


def fill_items(pieces: Sequence[str], texts: Sequence[Sequence[str]]) -> list[str]:
    """The reference for record_text.joined_items: each row's item, ``pieces``
    (item_pieces) alternated with the row's values' texts (``texts``: one list a value,
    the rows in order, all of one length) and joined — ``[template % row for row in
    zip(*texts)]`` for the same keys' item_template, in Python strings."""
    if len(pieces) != len(texts) + 1 or not texts:
        raise ValueError(f"{len(pieces)} piece(s) for {len(texts)} value(s)")
    if len({len(t) for t in texts}) != 1:
        raise ValueError("the values' texts are not of one length")
    parts: list[Iterable[str]] = [repeat(pieces[0])]
    for text, piece in zip(texts, pieces[1:], strict=True):
        parts += [text, repeat(piece)]
    return list(map("".join, zip(*parts, strict=False)))  # the texts end it (checked)


@pytest.mark.parametrize("fixed", [{}, {"y%": "null"}, {"g%s": '"a%%d"', "z": "null"},
                                   {"x": "1.5", "f": "true", "z": "-0.0"}])
def test_filled_pieces_are_the_filled_template(fixed: dict[str, str]) -> None:
    """fill_items of item_pieces is item_template filled row by row (issue #42: a block's
    items made with no template parsed a row) and the encoder's compact items, with a % in
    a key or a text, fixed fields first, between and last; texts of unequal lengths or a
    piece too few refused."""
    from dprect.release.record_text import (
        item_lines,
        item_pieces,
        item_template,
        value_texts,
    )

    keys = ["g%s", "x", "y%", "f", "z"]
    rows = [{"g%s": f"a%d{i}", "x": 1.5 * i, "y%": None, "f": i % 2 == 0, "z": -0.0 * i}
            for i in range(7)]
    for row in rows:  # the fixed fields hold their fixed value in every row
        row.update({k: {"null": None, "true": True, "1.5": 1.5, "-0.0": -0.0,
                        '"a%%d"': "a%%d"}[v] for k, v in fixed.items()})
    texts = [value_texts([row[k] for row in rows]) for k in keys if k not in fixed]
    pieces = item_pieces(keys, fixed)
    assert len(pieces) == len(texts) + 1
    template = item_template(keys, fixed)
    got = fill_items(pieces, texts)
    assert got == [template % values for values in zip(*texts, strict=True)]
    assert got == [item_lines([row]) for row in rows]
    with pytest.raises(ValueError):
        fill_items(pieces, [*texts[:-1], texts[-1][:-1]])
    with pytest.raises(ValueError):
        fill_items(pieces[1:], texts)


@pytest.mark.parametrize("fixed", [{}, {"y%": "null"}, {"g%s": '"a%%d"', "z": "null"}])
@pytest.mark.parametrize("n", [0, 1, 7, 3000])
@pytest.mark.parametrize("level", [1, 2])
def test_joined_items_are_the_joined_filled_items(fixed: dict[str, str], n: int,
                                                  level: int) -> None:
    """joined_items (Arrow: no string a row) gives the bytes of join_items of fill_items —
    every row's pieces and texts, the separator of the list's level, rows made apart put
    in their places (first, middle, last) — and refuses texts of unequal lengths, a piece
    too few or a missing text (issue #42)."""
    import pyarrow as pa

    from dprect.release.record_text import (
        item_lines,
        item_pieces,
        join_items,
        joined_items,
        value_texts,
    )

    keys = ["g%s", "x", "y%", "f", "z"]
    rows = [{"g%s": f"a%d{i}\u00e9", "x": 1.5 * i, "y%": None, "f": i % 2 == 0,
             "z": -0.0 * i} for i in range(n)]
    texts = [value_texts([row[k] for row in rows]) for k in keys if k not in fixed]
    pieces = item_pieces(keys, fixed)
    arrays = [pa.array(t, pa.string()) for t in texts]
    want = fill_items(pieces, texts) if n else []
    made = {r: item_lines([{"other": r}]) for r in {0, n // 2, n - 1} if n}
    for r, item in made.items():
        want[r] = item
    got = joined_items(pieces, arrays, made, level)
    assert got == join_items(want, level).encode("ascii")
    assert got == joined_items(pieces, [a.cast(pa.large_string()) for a in arrays], made,
                               level)
    if n > 1:
        assert joined_items(pieces, [a.slice(1) for a in arrays], level=level) == \
            join_items(fill_items(pieces, [t[1:] for t in texts]), level).encode()
        with pytest.raises(ValueError, match="one length"):
            joined_items(pieces, [*arrays[:-1], arrays[-1][:-1]])
        with pytest.raises(ValueError, match="missing"):
            joined_items(pieces, [*arrays[:-1], pa.array([None] * n, pa.string())])
    with pytest.raises(ValueError, match="piece"):
        joined_items(pieces[1:], arrays)


def test_a_nan_is_recorded_null_in_the_json_the_lines_and_the_table() -> None:
    """A released NaN (the block's values[9, 1]) is written as JSON null — by the record's
    one float writer (json_float: jsonable and the rows' scalars alike), in the rows made
    from the arrays and from the cells, their item lines and the table (a null, not the
    ``"-inf"`` a NaN was written as before) — while ±inf stay ``"inf"``/``"-inf"``."""
    from dprect.release.aggregate_record import (
        SHAPES,
        block_fields,
        json_float,
        jsonable,
        record_plan,
    )

    assert json_float(float("nan")) is None
    assert jsonable({"a": [float("nan"), float("inf"), -float("inf"), 1.5]}) == \
        {"a": [None, "inf", "-inf", 1.5]}
    statistics = ("count", "sum", "mean")
    groups, columns = 37, 3
    plan = plan_describe(1.0, columns, statistics=statistics)
    block = _block(len(statistics), statistics, groups, columns)
    cols = [f"c{j}" for j in range(columns)]
    names = list(range(groups))
    result = DescribeResult(cols, names, released_rows(block), plan.guarantee, plan)
    fields = block_fields(result)
    assert fields is not None
    key = next(k for k in fields.keys[2:-1] if fields.fields[k] is not None
               and np.isnan(fields.fields[k]).any())  # type: ignore[union-attr]
    a = fields.fields[key]
    assert a is not None
    r = int(np.flatnonzero(np.isnan(a))[0])
    for rows in (fields.rows(), record_rows(
            DescribeResult(cols, names, block.rows(), plan.guarantee, plan))):
        assert rows[r][key] is None
    assert "NaN" not in fields.item_bytes().decode("ascii")
    assert json.loads("[" + fields.item_bytes().decode("ascii") + "]")[r][key] is None
    table = fields.table(SHAPES["describe"], record_plan(result)).batch
    assert table.column(table.schema.get_field_index(key))[r].as_py() is None
