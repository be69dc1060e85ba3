"""Row-local kernels written with numpy and pyarrow only — no other dprect import — so that
the Spark engine can ship this module to executors *by value* (executors need not have
dprect installed) and the in-memory route can call the very same code.

:func:`group_index` — each row's position in a PUBLIC list of group values, −1 for a value
not listed or a null. Numbers are compared as float64 (−0.0 as 0.0, NaN matching nothing),
booleans as booleans, anything else as its text. Nothing here raises for a value: what a
row holds decides only which group it counts in (row-local, so it costs no privacy).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def group_index(array: Any, kind: str, values: Sequence[Any] | None) -> np.ndarray:
    """For each row, the index of its group value in ``values`` (int32), or −1: another
    value or a null. ``kind`` is the column's kind from its type (numeric, boolean, string,
    null)."""
    n = len(array)
    if values is None or kind == "null" or n == 0:
        return np.full(n, -1, dtype=np.int32)
    col = array
    if pa.types.is_dictionary(col.type):
        col = pc.cast(col, col.type.value_type)
    if kind == "numeric":
        col = pc.add(pc.cast(col, pa.float64(), safe=False), 0.0)
        value_set = pa.array([float(v) for v in values], pa.float64())
    elif kind == "boolean":
        value_set = pa.array([bool(v) for v in values], pa.bool_())
    else:
        col = pc.cast(col, pa.string())
        value_set = pa.array([str(v) for v in values], pa.string())
    found = pc.index_in(col, value_set=value_set)
    return np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int32)


__all__ = ["group_index"]
