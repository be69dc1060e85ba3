"""The numpy engines (dprect/engines/): the in-memory engine's windows and cuts, and the
bounds route's histograms — what the Spark engine must equal (tests/spark)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from dprect.core.bounds import histogram
from dprect.core.domains import FloatBins, Grid
from dprect.core.request import Source
from dprect.core.statistic import COVERAGE
from dprect.engines.grouped import NumpyGroupedRoute
from dprect.engines.numpy_engine import NumpyEngine


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 15), min_size=0, max_size=60), st.integers(1, 200),
       st.integers(1, 30), st.sampled_from(["hi", "lo"]))
def test_numpy_engine_window_is_the_sorted_slice(vals, stop, size, side):
    col = np.array(vals, dtype=np.int64)
    eng = NumpyEngine([col])
    ordered = np.sort(col)[::-1] if side == "hi" else np.sort(col)
    expected = sorted(ordered[max(0, stop - size):stop].tolist())
    assert sorted(eng.window(0, side, stop, size).tolist()) == expected


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=40),
       st.integers(0, 9), st.sampled_from(["hi", "lo"]), st.integers(0, 1))
def test_numpy_engine_cut_is_row_local(rows, t, side, axis):
    arr = np.array(rows, dtype=np.int64)
    eng = NumpyEngine([arr[:, 0], arr[:, 1]])
    eng.cut(axis, side, t)
    keep = arr[:, axis] < t if side == "hi" else arr[:, axis] > t
    other = 1 - axis
    expected = sorted(arr[keep, other].tolist())
    assert sorted(eng.window(other, "lo", len(rows), len(rows)).tolist()) == expected


def test_the_bounds_route_counts_each_listed_group_with_the_cores_histogram(tmp_path
                                                                            ) -> None:
    """Rows of an unlisted group or with a null group are dropped; a null, NaN or ±inf
    value leaves its column only; each (group, column) histogram is the core's."""
    gen = np.random.default_rng(5)
    n = 400
    x = gen.normal(0, 10, n)
    x[::17] = np.nan
    x[::29] = np.inf
    z = gen.integers(-3, 3, n).astype(float)
    g = gen.choice(["a", "b", "c", None], n)
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": x, "z": z, "g": pa.array(list(g), pa.string())}), path)
    domains = [FloatBins(), Grid(-3.0, 3.0, 6)]
    source = Source(str(path), ["x", "z"], group_by="g")
    with NumpyGroupedRoute().open(source, ["b", "a"], COVERAGE.spec(domains),
                                  lambda _: None) as prepared:
        got = {cell: c.histogram() for cell, c in prepared.statistics().items()}
    assert set(got) == {(gi, j) for gi in range(2) for j in range(2)}
    for gi, name in enumerate(["b", "a"]):
        rows = np.array([v == name for v in g])
        for j, (col, domain) in enumerate(zip([x, z], domains, strict=True)):
            keep = rows & np.isfinite(col)
            want = histogram(col[keep], domain)
            assert np.array_equal(got[(gi, j)].keys, want.keys)
            assert np.array_equal(got[(gi, j)].counts, want.counts)
