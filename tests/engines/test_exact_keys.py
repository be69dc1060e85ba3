"""Numeric group keys compared in the group column's own type (dprect/engines/row_kernels.py
``group_index``, dprect/engines/bounds_input.py ``resolve_groups``/``key_text``,
dprect/engines/grouped.py ``key_counts``): a column of an integer type by its exact
integers — int64 ids past 2^53 (snowflake-style) stay distinct groups and their keys are
printed by their digits —, a float32 column by the listed value's nearest float32 (``0.1``
names the rows of float32(0.1)); a float64 column as before."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from dprect.core.errors import ParameterError
from dprect.engines.bounds_input import key_text, listed_keys, resolve_groups
from dprect.engines.grouped import key_counts
from dprect.engines.row_kernels import group_index

#: snowflake-style ids: distinct int64 values that one float64 cannot tell apart
BIG = 2**60
IDS = [BIG + 1, BIG + 2, BIG + 3]


def _listed(values: list[str], column: pa.Array) -> list[object] | None:
    t = column.type
    return resolve_groups(values, "numeric", "id", integral=pa.types.is_integer(t)
                          or pa.types.is_decimal(t), single=pa.types.is_float32(t))


@pytest.mark.parametrize("as_tuple", [False, True])
def test_int64_ids_past_2_53_are_distinct_groups(as_tuple: bool) -> None:
    column = pa.array([IDS[0], IDS[1], None, IDS[2], IDS[1], BIG], pa.int64())
    listed = _listed([str(v) for v in IDS], column)
    assert listed == IDS and all(type(v) is int for v in listed)
    values = tuple(listed) if as_tuple else listed
    assert group_index(column, "numeric", values).tolist() == [0, 1, -1, 2, 1, -1]
    # a dictionary column, and a narrow list (the dense table) next to a wide one
    assert group_index(column.dictionary_encode(), "numeric", values).tolist() \
        == [0, 1, -1, 2, 1, -1]
    assert group_index(column, "numeric", [BIG, BIG + 2]).tolist() == [-1, 1, -1, -1, 1, 0]


def test_integer_texts_read_exactly_and_out_of_range_values_match_no_row() -> None:
    column = pa.array([5, 1000, 2**63 - 1, -(2**63)], pa.int64())
    listed = _listed(["5.0", "1e3", str(2**63 - 1), str(-(2**63)), str(2**63), "1e60"],
                     column)
    assert listed[:5] == [5, 1000, 2**63 - 1, -(2**63), 2**63]
    assert group_index(column, "numeric", listed).tolist() == [0, 1, 2, 3]
    # an int8 column: 300 is no int8, kept as a group no row holds
    small = pa.array([44, -1, None], pa.int8())
    assert group_index(small, "numeric", _listed(["300", "-1", "44"], small)).tolist() \
        == [2, 1, -1]
    # uint64 and decimal(20, 0) (Spark's reading of uint64) past int64's range
    top = 2**64 - 1
    wide = pa.array([top, 3], pa.uint64())
    assert group_index(wide, "numeric", _listed(["3", str(top), "-3"], wide)).tolist() \
        == [1, 0]
    dec = pa.array([Decimal(top), Decimal(3)], pa.decimal128(20, 0))
    assert group_index(dec, "numeric", _listed([str(top - 1), str(top)], dec)).tolist() \
        == [1, -1]


def test_two_texts_of_one_integer_or_one_float32_are_refused() -> None:
    with pytest.raises(ParameterError, match="name the same value of column 'id'"):
        resolve_groups(["7", "7.0"], "numeric", "id", integral=True)
    with pytest.raises(ParameterError, match="holds integers"):
        resolve_groups(["7", "7.5"], "numeric", "id", integral=True)
    with pytest.raises(ParameterError, match="name the same value of column 'id'"):
        resolve_groups(["0.1", "0.10000000149011612"], "numeric", "id", single=True)
    # distinct as integers, one float64: two groups of an integer column
    assert resolve_groups([str(IDS[0]), str(IDS[1])], "numeric", "id", integral=True) \
        == IDS[:2]


def test_a_float32_column_matches_the_listed_values_nearest_float32() -> None:
    column = pa.array(np.float32([0.1, 0.2, 0.1, 3e38]), pa.float32())
    listed = _listed(["0.1", "0.3", "1e39"], column)
    assert listed[0] == float(np.float32(0.1))
    assert group_index(column, "numeric", listed).tolist() == [0, -1, 0, -1]
    # a value past float32's range matches no row, not a row's inf
    inf = pa.array(np.float32([np.inf, 0.1]), pa.float32())
    assert group_index(inf, "numeric", listed).tolist() == [-1, 0]
    # float64 columns: compared as float64, as before (0.1 is not float32(0.1))
    doubles = pa.array([0.1, float(np.float32(0.1))], pa.float64())
    assert group_index(doubles, "numeric", [0.1]).tolist() == [0, -1]


def test_found_keys_are_counted_and_printed_exactly() -> None:
    column = pa.array([IDS[0], IDS[1], IDS[1], None, 3], pa.int64())
    counts = key_counts(column, "numeric")
    assert counts == {str(IDS[0]): 1, str(IDS[1]): 2, "3": 1}
    # each key's text reads back as its very value and group
    listed = _listed(list(counts), column)
    assert group_index(column, "numeric", listed).tolist() == [0, 1, 1, -1, 2]
    assert listed_keys([str(IDS[2]), "3.0"], "numeric", "id", integral=True) \
        == {str(IDS[2]), "3"}
    dec = pa.array([Decimal(2**64 - 1)], pa.decimal128(20, 0))
    assert key_counts(dec, "numeric") == {str(2**64 - 1): 1}
    # floats as before: a float32 key as the float64 it widens to
    assert key_counts(pa.array(np.float32([0.5, 0.1]), pa.float32()), "numeric") \
        == {"0.5": 1, "0.10000000149011612": 1}
    assert key_text(2.0**60, "numeric") == "1.152921504606847e+18"
    assert key_text(IDS[0], "numeric") == str(IDS[0])
