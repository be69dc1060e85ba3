"""The ``pass`` strategy's keys-only lists, for plans that never cut (issue #22k).

The composition baseline's windows are the first Δ₀ rows of each order of the full
positive set, so a pass serving it lists each order's best keys alone — no row ids, no
positions (:attr:`PassEngine.keys_only`). Here the keys-only engine must answer every
window exactly as the numpy engine and as the engine with ids, on tie-heavy tables with
duplicate rows, on int (grid) and float (FloatOrder, with negatives and ±0.0) axes, with
thresholds from a sample that are too tight, at budgets that split the schedule; whole
composition fits must give the same rectangle in fewer passes; and a cut (which such a
plan never makes) is refused. The Spark tests run the same through ``prepare_fit``, NaN
rows dropped.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")  # the modules import pyspark's cloudpickle

from test_pass_engine import _local_run, _sample
from tie_tables import ties_table

import dprect
from dprect.core.algorithms import run_plan
from dprect.core.domains import FloatOrder
from dprect.core.errors import ParameterError
from dprect.core.planner import plan as make_plan
from dprect.core.randomness import RandomSource
from dprect.core.request import FitRequest
from dprect.core.ties import TieBreaker
from dprect.engines.numpy_engine import NumpyEngine
from dprect.engines.spark import pass_kernel as kernel
from dprect.engines.spark.order_pass import ENTRY_BYTES, KEY_ENTRY_BYTES, PassEngine
from dprect.engines.spark.prefetch import PrefixSpec, never_cuts, prefetch_specs

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # seeded runs


def _table(n: int, dims: int, seed: int) -> tuple[np.ndarray, list]:
    """The tie-heavy table (duplicate rows, a 95%-zeros grid axis, pixel axes) with its last
    axis a FloatOrder of rounded normals: negatives, and some −0.0 beside +0.0."""
    X, _, domains = ties_table(n, dims, seed)
    gen = np.random.default_rng(seed + 1)
    X[:, -1] = gen.normal(0, 2, n).round(1)
    X[gen.random(n) < 0.1, -1] = -0.0
    X[gen.random(n) < 0.1, -1] = 0.0
    domains[-1] = FloatOrder()
    return X, domains


def _engine(X, domains, schedule, budget, *, keys_only, parts=3, sample_rows=0,
            monkeypatch=None) -> PassEngine:
    sample = None
    if sample_rows:
        monkeypatch.setattr("dprect.engines.spark.order_pass.sample_rows",
                            lambda dims: sample_rows)
        sample = _sample(X, domains, None, sample_rows)
    engine = PassEngine(_local_run(X, parts), domains, None, schedule, budget,
                        partitions=parts, sample=sample, size_hint=max(1, len(X)),
                        keys_only=keys_only)
    engine.prepare()
    return engine


def test_packed_keys_round_trip_bit_for_bit():
    floats = np.array([-0.0, 0.0, -1.5, np.inf, -np.inf, 5e-324, np.nan, 1e308])
    back = kernel.unpack_keys(kernel.pack_keys(floats), False)
    assert back.tobytes() == floats.tobytes()
    ints = np.array([-(2**62), -1, 0, 1, 2**62 - 1], dtype=np.int64)
    assert np.array_equal(kernel.unpack_keys(kernel.pack_keys(ints), True), ints)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("budget_entries,sample_rows", [(30, 0), (400, 60), (10**6, 0)])
def test_keys_only_windows_equal_numpy_and_the_ids_lists(monkeypatch, seed, budget_entries,
                                                         sample_rows):
    X, domains = _table(700, 4, seed)
    dims = X.shape[1]
    numpy_engine = NumpyEngine([d.encode(X[:, j]) for j, d in enumerate(domains)])
    schedule = [PrefixSpec(j, s, 5 + (seed + 11 * j) % 50, (j,)) for j in range(dims)
                for s in ("hi", "lo")]
    keys = _engine(X, domains, schedule, budget_entries * KEY_ENTRY_BYTES, keys_only=True,
                   sample_rows=sample_rows, monkeypatch=monkeypatch)
    ids = _engine(X, domains, schedule, budget_entries * KEY_ENTRY_BYTES, keys_only=False,
                  sample_rows=sample_rows, monkeypatch=monkeypatch)
    # the schedule's windows in order, then out of order and longer than listed
    asks = [(s.axis, s.side, s.rows, s.rows) for s in schedule]
    asks += [(j, s, stop, size) for j in range(dims) for s in ("lo", "hi")
             for stop, size in ((1, 1), (90, 40), (800, 800))]
    for axis, side, stop, size in asks:
        want = numpy_engine.window(axis, side, stop, size)
        got = keys.window(axis, side, stop, size)
        assert got.dtype == want.dtype
        assert np.sort(got).tobytes() == np.sort(want).tobytes()
        assert np.sort(ids.window(axis, side, stop, size)).tobytes() == np.sort(got).tobytes()
    assert keys.passes <= ids.passes


@pytest.mark.parametrize("dims,n", [(3, 3000), (24, 2000)])
def test_whole_composition_fit_in_fewer_passes(dims, n):
    X, domains = _table(n, dims, seed=dims)
    req = FitRequest(epsilon=8.0, delta=1e-6, method="composition")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = make_plan(req, domains=domains)
    assert never_cuts(plan.chosen)
    schedule = prefetch_specs(plan.chosen, cell_budget=2**62)
    # a budget that holds a quarter of the lists with ids: several passes, then
    budget = sum(s.rows for s in schedule) * ENTRY_BYTES / 4
    names = [f"x{j}" for j in range(dims)]
    numpy_engine = NumpyEngine([d.encode(X[:, j]) for j, d in enumerate(domains)])
    want = run_plan(numpy_engine, domains, names, plan, RandomSource(seed=5))
    got = {}
    for keys_only in (False, True):
        engine = _engine(X, domains, schedule, budget, keys_only=keys_only, parts=4)
        got[keys_only] = (run_plan(engine, domains, names, plan, RandomSource(seed=5)),
                          engine.passes)
    for result, _ in got.values():
        assert (result.lower_index, result.upper_index) == \
            (want.lower_index, want.upper_index)
    assert got[False][1] >= 4
    assert got[True][1] < got[False][1]
    assert got[True][1] <= 2  # 128 / 40 bytes an entry: the whole schedule in one pass


@pytest.mark.parametrize("n", [0, 1, 7])
def test_keys_only_on_tiny_tables(n):
    X, domains = _table(20, 3, seed=9)
    X = X[:n]
    numpy_engine = NumpyEngine([d.encode(X[:, j]) for j, d in enumerate(domains)])
    schedule = [PrefixSpec(j, s, 4, (j,)) for j in range(3) for s in ("hi", "lo")]
    engine = _engine(X, domains, schedule, 10**6, keys_only=True, parts=2)
    for j in range(3):
        for side in ("hi", "lo"):
            want = numpy_engine.window(j, side, 4, 4)
            got = engine.window(j, side, 4, 4)
            assert got.dtype == want.dtype
            assert np.sort(got).tobytes() == np.sort(want).tobytes()


def test_randmargins_plans_cut():
    _, domains = _table(2000, 3, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = make_plan(FitRequest(epsilon=8.0, delta=1e-6, method="randmargins"),
                         domains=domains)
    assert not never_cuts(plan.chosen)


def test_a_cut_is_refused_and_ties_or_cuts_are_not_keys_only():
    X, domains = _table(300, 3, seed=6)
    schedule = [PrefixSpec(0, "hi", 10, (0,))]
    engine = _engine(X, domains, schedule, 10**6, keys_only=True)
    with pytest.raises(ParameterError, match="never cuts"):
        engine.cut(0, "hi", 3)
    ties = TieBreaker.for_domains(domains, [3, 0, 0])
    with pytest.raises(ParameterError):
        PassEngine(_local_run(X, 2), domains, ties, schedule, 10**6, keys_only=True)
    with pytest.raises(ValueError):
        kernel.PassTask(tuple(domains), None, (kernel.PassOrder(0, True, 5),),
                        ((1, False, 2),), keys_only=True)


def test_keys_only_output_is_smaller_and_grouped_by_order():
    """The kernel's keys-only batch: 12 bytes an entry against 29 and more with ids, each
    order's rows in one run."""
    X, domains = _table(500, 3, seed=7)
    orders = tuple(kernel.PassOrder(j, hi, 40) for j in range(3) for hi in (True, False))
    batch = pa.RecordBatch.from_arrays(
        [*(pa.array(X[:, j]) for j in range(3)), pa.array(np.arange(500, dtype=np.int64))],
        names=[*(kernel.feature_column(j) for j in range(3)), kernel.ROW_ID])
    out = {}
    for keys_only in (False, True):
        task = kernel.PassTask(tuple(domains), None, orders, keys_only=keys_only)
        out[keys_only] = next(kernel.partition_lists(iter([batch]), task))
    assert out[True].num_rows == out[False].num_rows == 1 + 6 * 40
    assert out[True].nbytes * 2 < out[False].nbytes
    runs = list(kernel.key_runs(out[True].column(kernel.ORDER).to_numpy()))
    assert [i for i, _ in runs] == list(range(6))


# -- Spark: through prepare_fit ----------------------------------------------------------

def _frame(spark, X, y, names, partitions):
    table = pa.table({**{n: X[:, j] for j, n in enumerate(names)},
                      "y": pa.array(y, pa.int32())})
    return spark.createDataFrame(table.to_pandas()).repartition(partitions)


def test_spark_composition_fit_keys_only(spark, monkeypatch):
    """A composition fit by the ``pass`` strategy with a small budget: keys only, the
    numpy engine's rectangle (NaN rows dropped by both), and fewer passes than the same
    fit listing ids (forced by making the plan look like one that cuts)."""
    from dprect.engines.spark import fit as spark_fit

    dims, n = 8, 3000
    X, domains = _table(n, dims, seed=12)
    y = (np.random.default_rng(13).random(n) < 0.8).astype(int)
    X[np.random.default_rng(14).random(n) < 0.02, 2] = np.nan
    names = [f"x{j}" for j in range(dims)]
    df = _frame(spark, X, y, names, partitions=3)
    keep = ~np.isnan(X).any(axis=1)
    opts = dict(epsilon=8.0, delta=1e-6, method="composition", invalid_rows="drop")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.fit(X[keep], y[keep], grid=domains, features=names, seed=3, **opts)
    got = {}
    for keys_only in (True, False):
        if not keys_only:
            monkeypatch.setattr(spark_fit, "never_cuts", lambda plan: False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with spark_fit.prepare_fit(df, features=names, label="y", grid=domains,
                                       strategy="pass", driver_budget_mb=0.1,
                                       **opts) as prepared:
                result = prepared.run(seed=3)
                engine = prepared.engine
                assert engine is not None
                assert getattr(engine.implementation, "keys_only", None) is keys_only
                got[keys_only] = (result, engine.stats["passes"])
    for result, _ in got.values():
        assert (result.lower_index, result.upper_index) == \
            (want.lower_index, want.upper_index)
    assert got[False][1] >= 3
    assert got[True][1] < got[False][1]
