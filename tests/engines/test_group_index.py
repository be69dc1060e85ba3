"""The group lookup of dprect.engines.row_kernels (issue #42): integer group values read
off a dense table give Arrow's ``index_in`` indices exactly, and a tuple's lookup is made
once (one slot) while a list's is made every call."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dprect.engines import row_kernels
from dprect.engines.row_kernels import DenseGroups, group_index, group_lookup


def arrow_index(array: pa.Array, values: list[float]) -> list[int]:
    """Arrow's set lookup of the column as group_index compares numbers (the oracle)."""
    col = pc.add(pc.cast(array, pa.float64(), safe=False), 0.0)
    found = pc.index_in(col, value_set=pa.array(values, pa.float64()))
    return pc.fill_null(found, -1).to_pylist()


EDGES = [0.0, -0.0, 0.5, -0.5, float("nan"), float("inf"), float("-inf"), None,
         2.0**53, 2.0**53 + 2, -(2.0**53), 1e300, -1e300, 2.0**52 + 0.5, 3.0000000001]


@pytest.mark.parametrize("values", [
    [float(v) for v in range(1000)],
    [float(v) for v in np.random.default_rng(1).permutation(np.arange(-500, 3000, 3))],
    [2.0**53, 2.0**53 - 5, 0.0, -3.0],          # wide: Arrow's set
    [7.0, 9.0, 2.0**53],                          # wide: Arrow's set
    [-(2.0**53), -(2.0**53) + 4.0, -(2.0**53) + 1.0],
    [1.0, 0.0, -2.0, 5.0],
])
def test_dense_table_gives_arrows_indices(values: list[float]) -> None:
    rng = np.random.default_rng(7)
    lo, hi = min(values) - 10, max(values) + 10
    rows = list(rng.integers(int(max(lo, -2**62)), int(min(hi, 2**62)), 3000).astype(float))
    rows += list(rng.uniform(lo, hi, 500)) + values + EDGES
    array = pa.array(rows, pa.float64())
    expected = arrow_index(array, values)
    assert group_index(array, "numeric", values).tolist() == expected
    assert group_index(array, "numeric", tuple(values)).tolist() == expected
    ints = pa.array([None if v is None or not np.isfinite(v) or abs(v) >= 2**62 else int(v)
                     for v in rows], pa.int64())
    assert group_index(ints, "numeric", tuple(values)).tolist() == arrow_index(ints, values)


def test_dense_table_taken_only_where_exact() -> None:
    assert isinstance(group_lookup("numeric", [3.0, 1.0, 2.0]), DenseGroups)
    table = DenseGroups.of([3.0, 1.0, 2.0])
    assert table is not None and table.table.tolist() == [1, 2, 0]
    for refused in ([1.0, 1.5], [0.0, -0.0], [-0.0], [1.0, float("nan")], [2.0**54],
                    [1.0, 1.0], [0.0, 1e7], []):
        assert DenseGroups.of(refused) is None, refused
    # -0.0 listed: Arrow's set, where a row's 0.0 (the column's −0.0 too) is not it
    assert group_index(pa.array([0.0, -0.0, 1.0]), "numeric", (-0.0, 1.0)).tolist() \
        == [-1, -1, 1]
    # a value listed twice: Arrow's first index, as before
    assert group_index(pa.array([1.0, 2.0]), "numeric", (1.0, 2.0, 1.0)).tolist() == [0, 1]


@pytest.mark.parametrize(("kind", "values", "array"), [
    ("numeric", (5.0, 3.0, 4.0), pa.array([3, 4, 5, 6, None])),
    ("numeric", (0.25, 3.0), pa.array([0.25, 3.0, 1.0])),
    ("string", ("b", "a"), pa.array(["a", "b", "c", None])),
    ("boolean", (True,), pa.array([True, False, None])),
])
def test_a_tuples_lookup_is_made_once(monkeypatch, kind, values, array) -> None:
    """The same tuple: one lookup, kept in the one slot, the same indices; another tuple
    (the next task's unpickled list) replaces it; a list is never kept."""
    monkeypatch.setattr(row_kernels, "_LAST", None)
    made = []
    real = pa.array

    def counting(*a, **k):
        made.append(1)
        return real(*a, **k)

    monkeypatch.setattr(row_kernels.pa, "array", counting)
    of = DenseGroups.of
    monkeypatch.setattr(DenseGroups, "of", staticmethod(lambda v: made.append(1) or of(v)))
    first = group_index(array, kind, values).tolist()
    built = len(made)
    assert built >= 1 and row_kernels._LAST is not None and row_kernels._LAST[0] is values
    for _ in range(3):
        assert group_index(array, kind, values).tolist() == first
    assert len(made) == built  # kept: nothing made again
    other = tuple(list(values))  # equal, not the same object
    assert other is not values
    assert group_index(array, kind, other).tolist() == first
    assert len(made) == 2 * built and row_kernels._LAST[0] is other  # one slot, replaced
    assert group_index(array, kind, list(values)).tolist() == first
    assert group_index(array, kind, list(values)).tolist() == first
    assert len(made) == 4 * built and row_kernels._LAST[0] is other  # a list: not kept
