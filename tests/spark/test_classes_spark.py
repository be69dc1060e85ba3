"""One rectangle per class on Spark: identical to the numpy engine for the same seed.

* :func:`dprect.engines.spark.classes.fit_dataframe_classes` on a DataFrame gives, class
  by class, :func:`dprect.fit` ``(classes=...)``'s rectangles (same seed, same rows);
* ``dprect fit --engine spark --classes`` writes the same class record as the numpy
  engine (the route reads the table once for every class).
"""

from __future__ import annotations

import json
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run

import dprect
from dprect.core.classes import class_seeds
from dprect.core.request import FitRequest
from dprect.engines.spark.classes import fit_dataframe_classes

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")
GRID = "0:10:256"


def rows(n: int = 3000, seed: int = 4) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    y = gen.integers(0, 4, n)  # 0, 1, 2 listed; 3 unlisted (a negative of every class)
    X = np.column_stack([2.0 + 2 * y, 8.0 - 2 * y]) + gen.uniform(-1, 1, (n, 2))
    return X, y


def indices(res) -> list:
    return [(r.lower_index, r.upper_index) for r in res.results]


def test_dataframe_classes_equal_numpy(make_frame):
    X, y = rows()
    request = FitRequest(epsilon=2.0, delta=1e-7, classes=(0, 1, 2))
    on_spark = fit_dataframe_classes(make_frame(X, ["a", "b"], y, partitions=3),
                                     features=["a", "b"], label="y", request=request,
                                     grid=GRID, seed=21)
    local = dprect.fit(X, y, request, grid=GRID, seed=21)
    assert indices(on_spark) == indices(local) and on_spark.classes == ["0", "1", "2"]
    assert on_spark.privacy == local.privacy
    assert not any(r.empty for r in local.results)


def test_cli_spark_classes_equal_numpy(spark, tmp_path, capsys):
    X, y = rows(n=2000, seed=5)
    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "y": y}), tmp_path / "t.parquet")
    out = {}
    for engine in ("numpy", "spark"):
        code, _, err = run(["fit", "--input", str(tmp_path / "t.parquet"), "--features",
                            "a,b", "--label", "y", "--classes", "0,1,2", "--epsilon", "2",
                            "--delta", "1e-7", "--grid", GRID, "--seed", "8", "--engine",
                            engine, "--output", str(tmp_path / f"{engine}.json")], capsys)
        assert code == 0, err
        out[engine] = json.loads((tmp_path / f"{engine}.json").read_text())
    assert out["spark"]["rectangles"] == out["numpy"]["rectangles"]
    assert out["spark"]["classes"] == ["0", "1", "2"]


def spark_jobs(spark, action) -> tuple[int, object]:
    """The Spark jobs ``action()`` starts (counted by the status tracker under a job group
    of its own, named by a fresh uuid: an ``id()`` is reused once its object is freed, and
    a reused name would count an earlier action's jobs too), and its value."""
    sc = spark.sparkContext
    group = f"dprect-classes-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "jobs of a classes' fit")
    try:
        value = action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return len(sc.statusTracker().getJobIdsForGroup(group)), value


def test_classes_share_spark_jobs_whatever_k(spark, make_frame):
    """Two, then five classes on the same table: the same number of Spark jobs (one count,
    one collect; not a job or a pass per class), and every rectangle the numpy engine's."""
    gen = np.random.default_rng(9)
    y = gen.integers(0, 6, 4000)  # 0..4 listed (at most), 5 never: a negative of every class
    X = np.column_stack([1.0 + 1.5 * y, 9.0 - 1.5 * y]) + gen.uniform(-1, 1, (4000, 2))
    df = make_frame(X, ["a", "b"], y, partitions=3).cache()
    df.count()  # the frame's own jobs before counting the fit's
    jobs = {}
    for k in (2, 5):
        request = FitRequest(epsilon=2.0, delta=1e-7, classes=tuple(range(k)))
        jobs[k], on_spark = spark_jobs(spark, lambda request=request: fit_dataframe_classes(
            df, features=["a", "b"], label="y", request=request, grid=GRID, seed=3))
        local = dprect.fit(X, y, request, grid=GRID, seed=3)
        assert indices(on_spark) == indices(local)
        assert not any(r.empty for r in local.results)
    df.unpersist()
    assert jobs[5] == jobs[2] and 1 <= jobs[2] <= 3, jobs


@pytest.mark.parametrize(("strategy", "budget"), [("collect", None), ("pass", None),
                                                  ("auto", 0.001)])
def test_classes_every_strategy_equal_numpy(make_frame, strategy, budget):
    """The shared collect (``collect``), the shared first pass (``pass``, and ``auto``
    when the classes exceed the driver budget) give the numpy engine's rectangles, with
    rows holding NaN (dropped by either engine) and a label no class lists."""
    X, y = rows(n=1500, seed=6)
    X[::97, 1] = np.nan
    request = FitRequest(epsilon=2.0, delta=1e-7, classes=(2, 0))
    on_spark = fit_dataframe_classes(make_frame(X, ["a", "b"], y, partitions=2),
                                     features=["a", "b"], label="y", request=request,
                                     grid=GRID, seed=5, strategy=strategy,
                                     driver_budget_mb=budget)
    local = dprect.fit(X, y, request, grid=GRID, seed=5)
    assert indices(on_spark) == indices(local) and on_spark.classes == ["2", "0"]


def test_classes_error_policy_names_the_feature_in_the_shared_collect(make_frame):
    """Under ``error`` a NaN feature anywhere refuses the table in the classes' one collect,
    naming the feature (the single fit's message), before any class is fitted."""
    from dprect.core.errors import InputDataError

    X, y = rows(n=400, seed=7)
    X[5, 1] = np.nan
    request = FitRequest(epsilon=2.0, delta=1e-7, classes=(0, 1), invalid_rows="error")
    with pytest.raises(InputDataError, match="feature 'b' has null, NaN or infinite"):
        fit_dataframe_classes(make_frame(X, ["a", "b"], y), features=["a", "b"], label="y",
                              request=request, grid=GRID, seed=1, strategy="collect")


# -- the pass strategy: every class's first pass in ONE Spark job (class_pass) -------------
def shared(df, request, grid, **kwargs):
    """Every class of ``request`` prepared on ``df`` (prepare_classes, as the route does)."""
    from dprect.core.domains import resolve_domains
    from dprect.core.planner import plan as make_plan
    from dprect.engines.spark.fit import prepare_classes

    names = ["a", "b", "c"][:len(df.columns) - 1]
    doms = resolve_domains(grid, names)
    the_plan = make_plan(request.budget(), domains=doms, auto_count=False)
    return the_plan, prepare_classes(df, features=names, label="y", domains=doms,
                                     requests=[request.for_class(v) for v in request.classes],
                                     plan=the_plan, **kwargs)


def class_rows(n: int, seed: int, ties: bool) -> tuple[np.ndarray, np.ndarray]:
    """Three features, labels 0..5 (5: listed by no class); ``ties``: integer values on
    a few levels (heavy ties on the grid), else continuous ones."""
    gen = np.random.default_rng(seed)
    y = gen.integers(0, 6, n)
    centre = np.column_stack([1.0 + 1.5 * y, 9.0 - 1.5 * y, 5.0 + 0.0 * y])
    X = centre + (gen.integers(-1, 2, (n, 3)) if ties else gen.uniform(-1, 1, (n, 3)))
    return X, y


def test_classes_pass_keys_only_one_pass_whatever_k(spark, make_frame):
    """Composition (keys-only lists) on ``pass``: ONE counting job and ONE pass job for
    every class whatever k — each class's engine took its only pass from it — the same
    Spark jobs for two classes as for five, and every rectangle the numpy engine's; the
    rows of the unlisted label are negatives of every class (dropping them changes no
    rectangle)."""
    X, y = class_rows(3000, 11, ties=False)
    df = make_frame(X, ["a", "b", "c"], y, partitions=3).cache()
    df.count()
    jobs = {}
    for k in (2, 5):
        request = FitRequest(epsilon=2.0, delta=1e-7, method="composition",
                             classes=tuple(range(k)))

        def fit(request=request, k=k):
            _, prepared = shared(df, request, GRID, strategy="pass", driver_budget_mb=64)
            with prepared:
                engines = [p.engine for p in prepared.prepared]
                assert all(e.implementation._local.keys_only for e in engines)
                # every class's lists are held at once: each gets 1/k of the budget
                assert {e.implementation._local._budget for e in engines} == {64 * 2**20 / k}
                got = [p.run(seed=s) for p, s in zip(
                    prepared.prepared, class_seeds(7, k), strict=True)]
                assert [e.stats["passes"] for e in engines] == [1] * k
                return dict(prepared.stats), got

        jobs[k], (stats, got) = spark_jobs(spark, fit)
        assert stats["count_jobs"] == 1 and stats["pass_jobs"] == 1, stats
        local = dprect.fit(X, y, request, grid=GRID, seed=7)
        listed = y < k
        alone = dprect.fit(X[listed], y[listed], request, grid=GRID, seed=7)
        assert [(r.lower_index, r.upper_index) for r in got] == indices(local) \
            == indices(alone)
        assert not any(r.empty for r in local.results)
    assert df.storageLevel.useMemory  # the caller's cache outlives the closed classes
    df.unpersist()
    assert jobs[5] == jobs[2], jobs


@pytest.mark.parametrize("ties", [True, False])
def test_classes_pass_randmargins_equal_numpy(make_frame, ties):
    """RandMargins (lists with ids, cuts, tie bits) on ``pass`` with dropped NaN and ±inf
    rows: every class's first lists from ONE shared pass — two with heavy ties on the
    grid, whose identical rows span partitions (the window's ranks, keyed by the class)
    — the later passes per class (every class needs one: its cuts make its lists stale),
    and every rectangle the numpy engine's. Without ties (a fine grid, distinct rows)
    the partitions' own ranks are exact: one pass job."""
    X, y = class_rows(4000, 12, ties=ties)
    X[::89, 2] = np.nan
    X[::97, 0] = np.inf
    grid = GRID if ties else "0:10:4096"  # continuous values on a fine grid: distinct rows
    request = FitRequest(epsilon=4.0, delta=1e-7, method="randmargins", classes=(3, 0, 1))
    frame = make_frame(X, ["a", "b", "c"], y, partitions=3)
    the_plan, prepared = shared(frame, request, grid, strategy="pass", driver_budget_mb=1)
    with prepared:
        assert the_plan.chosen.tie_breaker(prepared.prepared[0].domains).active
        got = [p.run(seed=s) for p, s in zip(prepared.prepared, class_seeds(4, 3),
                                              strict=True)]
        passes = [p.engine.stats["passes"] for p in prepared.prepared]
        assert not prepared.prepared[0].engine.implementation._local.keys_only
    assert prepared.stats["pass_jobs"] == (2 if ties else 1), prepared.stats
    assert all(n > 1 for n in passes), passes
    local = dprect.fit(X, y, request, grid=grid, seed=4)
    assert [(r.lower_index, r.upper_index) for r in got] == indices(local)
    assert not any(r.empty for r in local.results)


def test_classes_pass_error_policy_refuses_in_the_shared_pass(make_frame):
    """Under ``error`` a NaN feature in a row of NO listed class still refuses the table
    in the shared pass (as every single fit would), naming the feature."""
    from dprect.core.errors import InputDataError

    X, y = rows(n=400, seed=8)
    X[np.flatnonzero(y == 3)[0], 0] = np.nan
    request = FitRequest(epsilon=2.0, delta=1e-7, classes=(0, 1), invalid_rows="error")
    with pytest.raises(InputDataError, match="feature 'a' has null, NaN or infinite"):
        fit_dataframe_classes(make_frame(X, ["a", "b"], y), features=["a", "b"], label="y",
                              request=request, grid=GRID, seed=1, strategy="pass")


def test_classes_pass_first_lists_are_each_class_own(make_frame):
    """The shared first pass gives every class the lists its own single fit's first pass
    gathers, key for key — with identical rows shared BY two classes (their ranks must be
    counted within each class: the window is keyed by the class too)."""
    from dprect.engines.spark.fit import prepare_fit

    gen = np.random.default_rng(30)
    y = gen.integers(0, 3, 1500)
    X = np.column_stack([1.0 + y, 6.0 - y]) + gen.integers(-1, 2, (1500, 2))  # overlaps
    request = FitRequest(epsilon=3.0, delta=1e-7, method="randmargins", classes=(0, 1))
    frame = make_frame(X, ["a", "b"], y, partitions=3)
    the_plan, prepared = shared(frame, request, GRID, strategy="pass", driver_budget_mb=2)
    with prepared:
        assert prepared.stats["pass_jobs"] == 2  # ties span partitions: the window's ranks
        for p, value in zip(prepared.prepared, request.classes, strict=True):
            alone = prepare_fit(frame, features=["a", "b"], label="y", grid=GRID,
                                request=request.for_class(value), plan=the_plan,
                                strategy="pass", driver_budget_mb=1)
            with alone:
                mine = p.engine.implementation._local._lists
                own = alone.engine.implementation._local._lists
                assert mine.keys() == own.keys()
                for order, lst in own.items():
                    assert np.array_equal(mine[order].keys, lst.keys), order


def ledger_rows(path) -> list[str]:
    """The ledger's event rows of dataset ``d``, without what differs between any two runs
    (times, versions, the hash chain)."""
    from dprect.release.ledger import Ledger

    drop = {"recorded_at", "version", "chain"}
    return [json.dumps({k: v for k, v in e.items() if k not in drop}, sort_keys=True,
                       default=str) for e in Ledger(str(path)).events("d")]


def test_auto_route_is_neither_printed_nor_recorded(spark, tmp_path, capsys):
    """Under ``auto`` the classes' route (one collect, or the shared pass) follows the
    classes' row counts against the driver budget (docs/privacy.md §8: "neither printed
    nor recorded"). Two runs on the same table, one whose budget holds every class and one
    whose budget holds none, take different routes; their progress lines, result JSON and
    results-table row must not tell which (the run id aside)."""
    from dprect.core.domains import resolve_domains
    from dprect.core.planner import plan as make_plan
    from dprect.engines.spark import fit as spark_fit

    taken = []
    collect, shared_pass = spark_fit.collect_classes, spark_fit.prepare_pass_classes

    def spy_collect(*args, **kwargs):
        taken.append("collect")
        return collect(*args, **kwargs)

    def spy_pass(*args, **kwargs):
        taken.append("pass")
        return shared_pass(*args, **kwargs)

    X, y = rows(n=1200, seed=7)
    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "y": y}), tmp_path / "t.parquet")
    said, records, table_rows, ledgers = {}, {}, {}, {}
    names = ["a", "b"]
    domains = resolve_domains(GRID, names)
    request = FitRequest(epsilon=2.0, delta=1e-7, classes=(0, 1, 2))
    requests = [request.for_class(v) for v in (0, 1, 2)]
    the_plan = make_plan(request.budget(), domains=domains, auto_count=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(spark_fit, "collect_classes", spy_collect)
        mp.setattr(spark_fit, "prepare_pass_classes", spy_pass)
        for budget in ("512", "0.001"):
            out = tmp_path / f"{budget}.json"
            results = tmp_path / f"{budget}-results"
            assert run(["budget", "init", "--ledger", str(tmp_path / f"{budget}-ledger")],
                       capsys)[0] == 0
            code, stdout, err = run([
                "fit", "--input", str(tmp_path / "t.parquet"), "--features", "a,b",
                "--label", "y", "--classes", "0,1,2", "--epsilon", "2", "--delta", "1e-7",
                "--grid", GRID, "--seed", "8", "--engine", "spark", "--run-id", "r1",
                "--driver-budget-mb", budget, "--output", str(out),
                "--results-table", str(results), "--dataset", "d",
                "--ledger", str(tmp_path / f"{budget}-ledger")], capsys)
            assert code == 0, err
            said[budget] = [line for line in messages(stdout + err)  # heartbeat aside
                            if budget not in line]
            # the progress lines (the job prints them; the command line does not)
            with spark_fit.prepare_classes(
                    spark.read.parquet(str(tmp_path / "t.parquet")), features=names,
                    label="y", domains=domains, requests=requests, plan=the_plan,
                    strategy=None, driver_budget_mb=float(budget),
                    progress=said[budget].append):
                pass
            records[budget] = json.loads(out.read_text())
            table_rows[budget] = sorted(
                json.dumps({k: v for k, v in r.items() if k != "started_at"},
                           sort_keys=True, default=str)
                for r in pq.read_table(results).to_pylist())
            ledgers[budget] = ledger_rows(tmp_path / f"{budget}-ledger")
    assert taken == ["collect", "collect", "pass", "pass"]  # two routes were taken
    assert said["512"] == said["0.001"]
    assert records["512"] == records["0.001"]
    assert table_rows["512"] == table_rows["0.001"]
    assert ledgers["512"] == ledgers["0.001"]


def test_a_mutated_classes_composition_is_refused_before_the_frame_is_read(
        make_frame, monkeypatch):
    """The DataFrame route has the classes' charge re-derived too (docs/privacy.md §12):
    with the replace-one factor 2 dropped, the independent check refuses the run before
    any Spark job."""
    from dprect.core import classes as classes_module
    from dprect.core.guarantee_check import GuaranteeCheckError

    X, y = rows(n=300, seed=2)
    df = make_frame(X, ["a", "b"], y)
    request = FitRequest(epsilon=2.0, delta=1e-7, classes=(0, 1),
                         neighbouring="replace-one")
    monkeypatch.setattr(classes_module, "REPLACE_STEPS", 1)
    with pytest.raises(GuaranteeCheckError, match="classes plan"):
        fit_dataframe_classes(df, features=["a", "b"], label="y", request=request,
                              grid=GRID, seed=1)


def test_cli_spark_names_a_boolean_label_columns_kind(spark, tmp_path, capsys):
    """``--classes yes,true`` on a boolean label column, Spark engine: refused naming the
    column's kind (boolean, from its schema), one line, exit 2, no ledger row (s51-labels)."""
    from dprect.release.ledger import Ledger

    X, _ = rows(n=200, seed=5)
    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "y": [True, False] * 100}),
                   tmp_path / "t.parquet")
    led = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(led)], capsys)[0] == 0
    code, _, err = run(["fit", "--input", str(tmp_path / "t.parquet"), "--features", "a,b",
                        "--label", "y", "--classes", "yes,true", "--epsilon", "2",
                        "--delta", "1e-7", "--grid", GRID, "--engine", "spark",
                        "--ledger", str(led), "--dataset", "ds",
                        "--output", str(tmp_path / "r.json")], capsys)
    assert code == 2 and "Traceback" not in err, err
    line = messages(err)[-1]
    assert "boolean column" in line and "numeric" not in line, line
    assert Ledger(str(led)).events("ds") == [] and not (tmp_path / "r.json").exists()
