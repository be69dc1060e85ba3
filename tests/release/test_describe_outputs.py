"""The describe release's outputs (dprect/release/describe_*.py): the record, the table
through the bounds table's writers (the bounds table unchanged), and the PNG's error bars,
which must bound the spread of the released means and be drawn from the record only."""

from __future__ import annotations

import math
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from dprect.core.aggregates import plan_describe, run_describe
from dprect.core.randomness import RandomSource
from dprect.release.bounds_table import TABLE_COLUMNS, table_sink
from dprect.release.describe_plot import mean_noise_sd, render_describe_figure
from dprect.release.describe_record import describe_record, is_describe_record, table_rows
from dprect.release.describe_table import describe_table_sink
from dprect.release.sinks import Release


def _quiet_run(plan, values, groups, names, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return run_describe(plan, values, groups, names, RandomSource(seed=seed))


def test_the_error_bar_bounds_the_spread_of_the_released_mean() -> None:
    """Over 200 seeds on one table, the released mean's standard deviation is at most the
    bar (its median over the runs), and the bar is not vacuous (within 6x of it)."""
    x = np.random.default_rng(0).normal(100.0, 10.0, 2000)
    plan = plan_describe(1.0, 1)
    means, bars = [], []
    for seed in range(200):
        cell = _quiet_run(plan, {(None, 0): x}, [None], ["x"], seed).cells[0][0]
        means.append(cell.mean)
        bars.append(mean_noise_sd(cell.lower, cell.upper, cell.mean, cell.count,
                                  plan.sum_epsilon, plan.count_epsilon))
    spread, bar = float(np.std(means)), float(np.median(bars))
    assert spread <= bar <= 6 * spread, (spread, bar)


def test_the_bar_is_the_documented_bound() -> None:
    # √2·hypot((U − L)/ε_S, max(mean − L, U − mean)/ε_n)/max(1, count)
    assert mean_noise_sd(0.0, 10.0, 2.0, 100.0, 0.5, 0.25) == pytest.approx(
        math.sqrt(2) * math.hypot(10.0 / 0.5, 8.0 / 0.25) / 100.0)
    assert mean_noise_sd(0.0, 10.0, 5.0, 0.0, 1.0, 1.0) == mean_noise_sd(
        0.0, 10.0, 5.0, 1.0, 1.0, 1.0)  # a released count below 1 reads as 1


@pytest.fixture(scope="module")
def record() -> dict:
    gen = np.random.default_rng(1)
    plan = plan_describe(2.0, 2, statistics=("count", "mean"))
    values = {("a", 0): gen.normal(5, 1, 3000), ("a", 1): gen.normal(-5, 1, 3000),
              ("b", 0): gen.normal(7, 1, 3000), ("b", 1): gen.normal(1, 1, 3000),
              ("c", 0): gen.normal(7, 1, 20)}  # c: few rows; c's column 1: none
    return describe_record(_quiet_run(plan, values, ["a", "b", "c"], ["x", "y"], 3))


def test_the_record_and_its_rows(record: dict) -> None:
    assert is_describe_record(record) and record["method"] == "describe"
    assert not is_describe_record({**record, "method": "bounds"})
    rows = table_rows(record)
    assert [(r["group"], r["column"]) for r in rows] == [
        (g, c) for g in "abc" for c in "xy"]
    assert all(r["sum"] is None and r["mean"] is not None for r in rows)
    assert record["plan"]["statistics"] == ["count", "mean"]


def test_the_table_shares_the_bounds_writers_and_leaves_bounds_unchanged(
        record: dict, tmp_path: Path) -> None:
    release = Release(record, "r", datetime.now(UTC))
    sink = describe_table_sink("--table", str(tmp_path / "d.csv"))
    sink.prepare(release)()
    lines = (tmp_path / "d.csv").read_text().splitlines()
    assert lines[0] == "group,column,lower,upper,count,sum,mean,below_row_need"
    assert len(lines) == 7
    assert lines[1].split(",")[5] == ""  # sum not asked: an empty cell
    # the flag column: the few-row group c (both columns) is below the row need
    assert [line.split(",")[7] for line in lines[1:]] == ["false"] * 4 + ["true"] * 2
    bounds = {"method": "bounds", "bounds": [{"group": None, "column": "x", "lower": 1.0,
                                              "upper": float("inf")}]}
    bounds_release = Release(bounds, "r", datetime.now(UTC))
    table_sink("--table", str(tmp_path / "b.csv")).prepare(bounds_release)()
    assert (tmp_path / "b.csv").read_text() == "group,column,lower,upper\n,x,1.0,inf\n"
    assert TABLE_COLUMNS == ("group", "column", "lower", "upper")


def test_the_plot_draws_the_released_means_only(record: dict) -> None:
    pytest.importorskip("matplotlib")
    fig = render_describe_figure(record)
    drawn = {}
    for ax in fig.axes:
        for container in ax.containers:
            line = container.lines[0]
            drawn[line.get_gid() or ax.get_title()] = list(line.get_ydata())
    rows = table_rows(record)
    assert drawn["means x"] == [r["mean"] for r in rows if r["column"] == "x"
                                and r["group"] != "c"]
    # c: below the row need — hollow grey in view, or a triangle at the edge out of view
    marks = [(x, line.get_gid()) for ax in fig.axes for line in ax.lines
             if (line.get_gid() or "").startswith("out of view")
             for x in line.get_xdata()]
    assert (drawn.get("means x (few rows)") == [rows[4]["mean"]]
            or (2, "out of view x") in marks)
    assert drawn["means y"] == [rows[1]["mean"], rows[3]["mean"]]
