"""The driver's worker processes for describe (engines/driver_pool.py): the same cells as
the driver's own thread, for a seed bit for bit; a pool that breaks falls back to the
driver with the same result; small runs never start one."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from seeded_source import seeded as _seeded

from dprect.core import aggregates
from dprect.core.aggregates import plan_describe, run_describe
from dprect.core.statistic import QUERY, SEARCH_GRID
from dprect.engines import driver_pool
from dprect.engines.grouped import draw_query, grouped_statistics


def _cells(groups: int) -> tuple[list[str], dict[tuple[str, int], np.ndarray]]:
    rs = np.random.default_rng(8)
    names = [f"g{i}" for i in range(groups)]
    return names, {(name, j): rs.lognormal(j, 1.0, 300 + 40 * i)
                   for i, name in enumerate(names) for j in range(3)}


def test_a_pool_draws_what_the_driver_draws(monkeypatch):
    names, vals = _cells(9)
    plan = plan_describe(1.0, 3)
    serial = run_describe(plan, vals, names, ["a", "b", "c"], _seeded(5))
    monkeypatch.setattr(driver_pool, "PARALLEL_CELLS", 1)
    monkeypatch.setattr(driver_pool, "driver_processes", lambda: 2)
    with driver_pool.block_mapper(len(names), 3) as (mapper, parts):
        assert isinstance(mapper, driver_pool._PoolMap)
        assert parts == 2 * driver_pool.BLOCKS_PER_PROCESS
        pooled = run_describe(plan, vals, names, ["a", "b", "c"], _seeded(5), mapper,
                              parts)
        workers = list(mapper._workers)
        assert len(workers) == 2  # the blocks did run in worker processes
    assert pooled.cells == serial.cells
    assert mapper._workers == [] and all(w.proc.returncode == 0 for w in workers)


def _dies_in_a_worker(x: int, driver: int) -> int:
    """x·2 on the driver's thread (process ``driver``); a worker process that runs it is
    lost mid-task."""
    if os.getpid() != driver:
        os._exit(3)
    return 2 * x


def test_a_lost_worker_falls_back_to_the_driver():
    pool = driver_pool._PoolMap(2)
    assert list(pool(_dies_in_a_worker, [1, 2, 3], [os.getpid()] * 3)) == [2, 4, 6]
    assert pool._workers == []  # the workers were let go


def test_a_worker_that_cannot_start_falls_back_to_the_driver(monkeypatch):
    names, vals = _cells(5)
    plan = plan_describe(2.0, 3)
    serial = run_describe(plan, vals, names, ["a", "b", "c"], _seeded(6))
    pool = driver_pool._PoolMap(2)
    monkeypatch.setattr(driver_pool.sys, "executable", "/nonexistent/python")
    again = run_describe(plan, vals, names, ["a", "b", "c"], _seeded(6), pool, parts=3)
    assert again.cells == serial.cells and pool._workers == []


def test_an_error_in_a_task_is_raised_as_on_the_driver(monkeypatch):
    pool = driver_pool._PoolMap(2)
    try:
        with pytest.raises(ZeroDivisionError):
            list(pool(divmod, [1, 2, 3], [1, 0, 1]))
        assert list(pool(divmod, [7, 9], [2, 4])) == [(3, 1), (2, 1)]  # the workers go on
    finally:
        pool.close()


@pytest.mark.parametrize(("groups", "columns", "processes", "pooled"), [
    (1, 10_000, 8, False),      # one group: nothing to spread (a large run)
    (100, 40, 8, False),        # 4,000 cells: below PARALLEL_CELLS
    (1000, 64, 1, False),       # one processor (a large run)
    (1000, 64, 2, True),
])
def test_only_large_runs_start_a_pool(monkeypatch, groups, columns, processes, pooled):
    """A pool only for large runs of several groups, where there are processors."""
    monkeypatch.setattr(driver_pool, "driver_processes", lambda: processes)
    with driver_pool.block_mapper(groups, columns) as (mapper, parts):
        assert isinstance(mapper, driver_pool._PoolMap) == pooled
        assert parts == (processes * driver_pool.BLOCKS_PER_PROCESS if pooled else 1)


def test_the_numpy_engine_uses_the_pool_on_a_large_run(monkeypatch):
    names, vals = _cells(6)
    plan = plan_describe(1.0, 3)
    want = run_describe(plan, vals, names, ["a", "b", "c"], _seeded(2))
    seen = _pooled_with_a_spy(monkeypatch)
    group = np.repeat(np.arange(6), [len(vals[(n, 0)]) for n in names])
    values = [np.concatenate([vals[(n, j)] for n in names]) for j in range(3)]
    cells = grouped_statistics(values, group, 6, QUERY.spec([SEARCH_GRID] * 3))
    got = draw_query(plan, cells, names, ["a", "b", "c"], _seeded(2))
    assert got.cells == want.cells
    assert sum(seen) == 6 and len(seen) == min(6, 2 * driver_pool.BLOCKS_PER_PROCESS)


def _pooled_with_a_spy(monkeypatch) -> list[int]:
    """Every run pooled (2 processes) on a stand-in pool that maps on this thread; the
    returned list gets each block's group count as it is drawn."""
    seen: list[int] = []
    real = aggregates.describe_block

    def spy(plan, block, seeds):
        seen.append(block.groups)
        return real(plan, block, seeds)

    monkeypatch.setattr(driver_pool, "PARALLEL_CELLS", 1)
    monkeypatch.setattr(driver_pool, "driver_processes", lambda: 2)
    monkeypatch.setattr(driver_pool, "_PoolMap", lambda p: _SerialPool())
    monkeypatch.setattr(aggregates, "describe_block", spy)
    return seen


class _SerialPool:
    """A stand-in pool that maps on this thread (the spy must see every block)."""

    def start(self) -> None:
        pass

    def __call__(self, fn, *iterables):
        return list(map(fn, *iterables))

    def close(self) -> None:
        pass


def test_an_unguarded_script_runs_once(tmp_path):
    """The workers never import the driver's __main__: a script without an
    ``if __name__ == "__main__"`` guard is not run again by each worker."""
    import subprocess
    import sys

    marks = tmp_path / "runs.txt"
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from dprect.engines import driver_pool\n"
        f"open({str(marks)!r}, 'a').write('ran\\n')\n"
        "pool = driver_pool._PoolMap(2)\n"
        "print(list(pool(pow, [2, 3, 4], [2, 2, 2])), len(pool._workers))\n"
        "pool.close()\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[4, 9, 16] 2"
    assert marks.read_text() == "ran\n"


def test_the_python_api_uses_the_pool_on_a_large_run(monkeypatch):
    import pyarrow as pa

    import dprect

    rs = np.random.default_rng(9)
    table = pa.table({"x": rs.normal(5.0, 2.0, 3000), "y": rs.exponential(2.0, 3000),
                      "g": rs.choice(["a", "b", "c", "d"], 3000)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.describe(table, ["x", "y"], group_by="g", groups=["a", "b", "c", "d"],
                               epsilon=1.0, seed=4)
    seen = _pooled_with_a_spy(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = dprect.describe(table, ["x", "y"], group_by="g", groups=["a", "b", "c", "d"],
                              epsilon=1.0, seed=4)
    assert got.cells == want.cells and seen == [1, 1, 1, 1]


class _LazyPool(_SerialPool):
    """A stand-in pool that maps on this thread lazily, as the real pool answers."""

    def __call__(self, fn, *iterables):
        return map(fn, *iterables)


def test_a_streamed_run_hands_a_block_on_before_the_last_is_drawn(monkeypatch):
    """Issue #42: a numpy run streamed to the sinks (``each_block``) gets its first block
    before the last block's cells are finished, and the blocks together are the gathered
    run's cells (fails when the route gathers every block first)."""
    from dprect.engines.grouped import draw_statistics

    names, vals = _cells(6)
    plan = plan_describe(1.0, 3)
    group = np.repeat(np.arange(6), [len(vals[(n, 0)]) for n in names])
    values = [np.concatenate([vals[(n, j)] for n in names]) for j in range(3)]
    cells = grouped_statistics(values, group, 6, QUERY.spec([SEARCH_GRID] * 3))
    want = draw_query(plan, cells, names, ["a", "b", "c"], _seeded(2))
    events: list[str] = []
    real = aggregates.finish_small

    def spy(*args):
        events.append("drawn")
        return real(*args)

    monkeypatch.setattr(driver_pool, "PARALLEL_CELLS", 1)
    monkeypatch.setattr(driver_pool, "driver_processes", lambda: 2)
    monkeypatch.setattr(driver_pool, "_PoolMap", lambda p: _LazyPool())
    monkeypatch.setattr(aggregates, "finish_small", spy)
    got: list = []

    def spool(block):
        events.append("spooled")
        got.extend(block.cells)

    head = draw_statistics([QUERY], plan, cells, names, ["a", "b", "c"], _seeded(2), spool)
    assert head.cells == [] and head.groups == want.groups
    assert got == want.cells
    assert events.count("drawn") == 6 and events.count("spooled") == 6
    assert events.index("spooled") < len(events) - 1 - events[::-1].index("drawn")


def _after(i: int, last: int, flag: str) -> bool:
    """Task ``i``; the last one waits (at most a minute) for ``flag`` to exist, made by
    the caller once it holds the first answer, and says whether it saw it."""
    import pathlib
    import time

    if i != last:
        return True
    for _ in range(600):
        if pathlib.Path(flag).exists():
            return True
        time.sleep(0.1)
    return False


def test_the_pool_yields_an_answer_before_the_last_task_is_done(tmp_path):
    """The pool's answers are read as they come in, in order (issue #42): the caller
    holds the first answer while the last task still runs (a pool that gathered every
    answer first would make the last task wait in vain)."""
    flag = str(tmp_path / "first")
    pool = driver_pool._PoolMap(2)
    try:
        answers = pool(_after, [0, 1, 2], [2] * 3, [flag] * 3)
        assert next(answers) is True
        open(flag, "w").close()
        assert list(answers) == [True, True]
    finally:
        pool.close()
