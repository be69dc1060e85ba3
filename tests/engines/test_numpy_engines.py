"""The numpy engines (dprect/engines/): the in-memory engine's windows and cuts, and the
bounds route's histograms — what the Spark engine must equal (tests/spark)."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dprect.core.bounds import histogram
from dprect.core.domains import Domain, FloatBins, FloatOrder, Grid
from dprect.core.reading import select_rows
from dprect.core.request import Source
from dprect.core.statistic import COVERAGE
from dprect.engines import numpy_matrix
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


def _small_passes(monkeypatch) -> None:
    """MatrixEngine's blocks, sample and lists small enough for tiny tables to take
    every path: the lists, a list running short, a materialisation after cuts; full
    blocks (7 rows of 2) compared as rows of 14 values, a shorter last block or
    batch as rows of 2."""
    monkeypatch.setattr(numpy_matrix, "BLOCK_ROWS", 7)
    monkeypatch.setattr(numpy_matrix, "WIDE_VALUES", 14)
    monkeypatch.setattr(numpy_matrix, "SAMPLE_ROWS", 64)
    monkeypatch.setattr(numpy_matrix, "MIN_LIST", 3)
    monkeypatch.setattr(numpy_matrix, "LIST_FACTOR", 2)
    monkeypatch.setattr(numpy_matrix, "PRELIST", 5)


_STEPS = st.lists(st.tuples(st.sampled_from(["window", "cut"]), st.integers(0, 1),
                            st.sampled_from(["hi", "lo"]),
                            st.one_of(st.integers(1, 6), st.integers(1, 60)),
                            st.integers(1, 20), st.sampled_from([-1.5, 0.0, 1.0, 2.5])),
                  min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 400), st.integers(0, 2**32 - 1), _STEPS,
       st.sampled_from(["float32", "float64", "int16"]), st.booleans(), st.booleans(),
       st.booleans(), st.sampled_from([40, 1 << 20]), st.booleans(),
       st.sampled_from([None, "lists", "count"]), st.booleans())
def test_the_matrix_engine_answers_as_the_engine_on_the_selected_rows(
        n, seed, steps, dtype, grid, labelled, batched, cap, jit, counted_first, fortran
        ) -> None:
    """MatrixEngine on X as it is (or on Arrow batches of it, as ``collect`` holds them)
    == NumpyEngine on select_rows(X, positive) encoded: the same multiset for every
    window and the same histograms after any sequence of windows and cuts,
    with ties, ±0.0, NaN and ±inf rows (dropped), negatives, lists that run short and
    lists over the cap (windows then streamed over the blocks); the pass compiled or in
    numpy, made by the count (its lists kept for the windows) or by the first window —
    or a count without lists (the quantile box's), then every window streamed or listed
    at the first."""
    with pytest.MonkeyPatch.context() as mp:
        _small_passes(mp)
        mp.setattr(numpy_matrix, "CANDIDATE_CELLS", cap)
        mp.setattr(numpy_matrix, "JIT_VALUES", 0 if jit else 1 << 62)
        gen = np.random.default_rng(seed)
        X = np.asarray(gen.choice(np.array([0.0, -0.0, 1.0, -1.5, 2.25, 3.0, -7.0, np.nan,
                                            np.inf, 1e30]), size=(n, 2)))
        X[:, 1] += gen.integers(0, 4, n)  # fewer ties on axis 1
        if dtype == "int16":
            X = np.nan_to_num(X, nan=0.0, posinf=5.0).clip(-30, 30).astype(np.int16)
        else:
            X = X.astype(dtype)
        if fortran:  # a column-major matrix: held as it is too
            X = np.asfortranarray(X)
        positive = gen.random(n) < 0.7
        domains = ([Grid(-2.0, 3.0, 10)] * 2 if grid else [FloatOrder(), FloatOrder()])
        if not labelled:  # no labels given: every row is a positive
            positive = np.ones(n, dtype=bool)
        want = NumpyEngine.from_features(select_rows(X.astype(np.float64), positive), domains)
        if batched:  # uneven batches; columns as shipped: float32/64 kept, int as double
            cuts = np.unique(gen.integers(0, n + 1, 3))
            ship = X if X.dtype.kind == "f" else X.astype(np.float64)
            batches = [pa.RecordBatch.from_arrays([pa.array(ship[a:b, j]) for j in range(2)],
                                                  names=["a", "b"])
                       for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
            got = numpy_matrix.MatrixEngine.from_batches(
                batches, positive if labelled else None, domains)
        else:
            got = numpy_matrix.MatrixEngine(X, positive if labelled else None, domains)
        if counted_first:  # auto's count before any window: its pass lists too (or not)
            assert got.remaining(lists=counted_first == "lists") == want.remaining()
        for kind, axis, side, stop, size, t in steps:
            if kind == "cut":
                value = domains[axis].encode(np.array([t]))[0]
                got.cut(axis, side, value)
                want.cut(axis, side, value)
            else:
                assert np.array_equal(np.sort(got.window(axis, side, stop, size)),
                                      np.sort(want.window(axis, side, stop, size)))
        # the quantile box's query (every axis at once) after the last step: a function of
        # the rows and the cuts only (a window changes neither), so the sequences' other
        # examples check it after fewer cuts
        edges = [np.sort(dom.encode(np.array([-1.5, 0.0, 1.0, 2.25, 1e30]))) for dom in domains]
        for g, w in zip(got.histograms(edges), want.histograms(edges), strict=True):
            assert np.array_equal(g, w)
        assert got.remaining() == want.remaining()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 300), st.integers(2, 5), st.integers(0, 2**32 - 1),
       st.sampled_from(["float32", "float64"]), st.booleans(), st.sampled_from([3, 50, 10**6]),
       st.sampled_from([1, 4, 1 << 14]))
def test_the_compiled_pass_lists_the_numpy_passs_entries(n, d, seed, dtype, labelled, cap,
                                                         chunk) -> None:
    """matrix_jit.list_pass == the engine's numpy pass, bit for bit: the same count of
    selected rows (positive, every value finite) and, per column, the same rows and raw
    values at or beyond the thresholds in the same order — or no entries from both past
    the cap (the count still exact); ±0.0, NaN and ±inf rows, thresholds on data values
    (ties), hit rows over several buffers."""
    from dprect.engines import matrix_jit

    gen = np.random.default_rng(seed)
    X = gen.choice(np.array([0.0, -0.0, 1.0, -1.5, 2.25, 3.0, -7.0, np.nan, np.inf, -np.inf,
                             1e30, 0.5]), size=(n, d)).astype(dtype)
    positive = gen.random(n) < 0.6 if labelled else None
    hi = gen.choice(np.array([-1.5, 0.0, 1.0, 3.0, np.inf]), size=d)
    lo = gen.choice(np.array([-np.inf, -7.0, 0.0, 1.0]), size=d)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(numpy_matrix, "BLOCK_ROWS", 16)
        mp.setattr(numpy_matrix, "CANDIDATE_CELLS", cap)
        mp.setattr(matrix_jit, "CHUNK_ROWS", chunk)
        engine = numpy_matrix.MatrixEngine(X, positive, [FloatOrder()] * d)
        want = engine._numpy_pass(hi.astype(dtype), lo.astype(dtype))
        got = matrix_jit.list_pass(X, positive, hi, lo, cap)
    assert got is not None
    assert got[0] == want[0] == len(select_rows(X.astype(np.float64),
                                                np.ones(n, bool) if positive is None
                                                else positive))
    assert (got[1] is None) == (want[1] is None)
    for j in range(d if got[1] is not None else 0):
        rows, raws = numpy_matrix._joined(got[1][j])
        want_rows, want_raws = numpy_matrix._joined(want[1][j])
        assert np.array_equal(rows, want_rows)
        assert raws.tobytes() == want_raws.tobytes()
        assert raws.dtype == want_raws.dtype or not len(raws)  # (no block: float64)


def test_auto_counts_and_lists_in_one_pass_over_the_matrix(monkeypatch) -> None:
    """auto's count then a composition's windows read X once: the pass that counts the
    selected rows (``remaining``, the count auto draws first) also lists the rows the
    windows need (its lists kept), where a count pass and then a list pass read it twice —
    in numpy blocks and compiled alike; the windows are NumpyEngine's."""
    gen = np.random.default_rng(3)
    n = 1 << 18
    X = gen.standard_normal((n, 2))
    X[::97, 1] = np.nan
    positive = gen.random(n) < 0.9
    domains = [FloatOrder(), FloatOrder()]
    want = NumpyEngine.from_features(select_rows(X, positive), domains)
    passes: list[str] = []
    for name in ("_blocks", "spans"):
        owner = numpy_matrix.MatrixEngine if name == "_blocks" else numpy_matrix._Parts
        real = getattr(owner, name)
        monkeypatch.setattr(owner, name, lambda *a, _r=real, _n=name: (passes.append(_n),
                                                                      _r(*a))[1])
    for jit in (False, True):
        monkeypatch.setattr(numpy_matrix, "JIT_VALUES", 0 if jit else 1 << 62)
        passes.clear()
        got = numpy_matrix.MatrixEngine(X, positive, domains)
        assert got.remaining() == want.remaining()
        for axis in range(2):  # Δ₀ = 2,067: the windows of the benchmark's composition
            for side in ("lo", "hi"):
                assert np.array_equal(np.sort(got.window(axis, side, 2067, 2067)),
                                      np.sort(want.window(axis, side, 2067, 2067)))
        assert passes == (["spans"] if jit else ["_blocks"])


def test_the_boxs_count_and_queries_on_batches_list_nothing_and_stack_no_block(
        monkeypatch) -> None:
    """On shipped batches (``collect`` held, the quantile box predicted): the count
    without lists makes no list pass (the selected flags only, column by column), and
    the histogram queries read each column's zero-copy views — no row block stacked —
    compiled in threads or in numpy: the counts of NumpyEngine on the selected rows, bit
    for bit (NaN/±inf rows and negatives dropped, ±0.0, values past the grid)."""
    gen = np.random.default_rng(11)
    n, d = 5000, 5
    X = gen.standard_normal((n, d)).astype(np.float32) * 3
    X[gen.integers(0, n, 40), gen.integers(0, d, 40)] = np.nan
    X[gen.integers(0, n, 9), gen.integers(0, d, 9)] = np.inf
    X[gen.integers(0, n, 9), gen.integers(0, d, 9)] = -0.0
    X[gen.integers(0, n, 9), gen.integers(0, d, 9)] = 1e30
    positive = gen.random(n) < 0.7
    domains: list[Domain] = [Grid(-4.0, 4.0, 64)] * (d - 1) + [FloatOrder()]
    want = NumpyEngine.from_features(select_rows(X.astype(np.float64), positive), domains)
    cuts = [0, 1234, 1300, 4000, n]
    batches = [pa.RecordBatch.from_arrays([pa.array(X[a:b, j]) for j in range(d)],
                                          names=[f"x{j}" for j in range(d)])
               for a, b in itertools.pairwise(cuts)]
    edges = [np.unique(dom.encode(gen.standard_normal(50) * 3)) for dom in domains]
    want_counts = want.histograms(edges)
    stacked: list[int] = []
    real_block = numpy_matrix._Parts.of_batches

    def recording(cls, batches, dims):
        parts = real_block(batches, dims)
        block = parts.block
        parts.block = lambda i: (stacked.append(i), block(i))[1]
        return parts

    monkeypatch.setattr(numpy_matrix._Parts, "of_batches", classmethod(recording))
    monkeypatch.setattr(numpy_matrix.MatrixEngine, "_build_lists",
                        lambda *a, **k: pytest.fail("a list pass for the box's count"))
    for jit in (False, True):
        monkeypatch.setattr(numpy_matrix, "JIT_VALUES", 0 if jit else 1 << 62)
        got = numpy_matrix.MatrixEngine.from_batches(batches, positive, domains)
        assert got.remaining(lists=False) == want.remaining()
        for _ in range(2):  # the box's two queries: the flags kept from the count
            for g, w in zip(got.histograms(edges), want_counts, strict=True):
                assert np.array_equal(g, w)
        assert stacked == []
        assert got._lists is None


def test_a_fit_on_a_float32_matrix_copies_no_column_of_it() -> None:
    """dprect.fit on a numpy matrix holds X where it is (numpy_matrix): the fit allocates
    less than half of X (its lists grow with the plan's windows, not with n), where
    reading X into a float64 copy, selecting its rows and encoding them allocated
    several times X."""
    import tracemalloc

    import dprect

    n = 1 << 21
    X = np.random.default_rng(1).standard_normal((n, 4), dtype=np.float32)
    y = np.ones(n, dtype=np.int8)
    tracemalloc.start()
    try:
        dprect.fit(X, y, epsilon=1.0, delta=1e-6, method="composition", seed=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes // 2


def test_the_matrix_fit_equals_the_copied_fit_for_a_seed() -> None:
    """The same rectangle through MatrixEngine (a numpy matrix) and through NumpyEngine
    (the same rows as a list of rows) for every method, tie bits included."""
    import dprect

    gen = np.random.default_rng(7)
    n = 150_000
    X = gen.standard_normal((n, 3)).astype(np.float32)
    X[::5, 0] = 0.0  # a tie group: RandMargins refines it
    X[::11, 1] = np.nan  # dropped rows
    y = (gen.random(n) < 0.5).astype(np.int8)
    rows = X.astype(np.float64).tolist()
    for method in ("composition", "randmargins"):
        a = dprect.fit(X, y, epsilon=1.0, delta=1e-6, method=method, seed=5)
        b = dprect.fit(np.array(rows, dtype=object), y, epsilon=1.0, delta=1e-6,
                       method=method, seed=5)
        assert (a.lower_index, a.upper_index) == (b.lower_index, b.upper_index)
