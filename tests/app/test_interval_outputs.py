"""The noise intervals as released (issue #41; dprect/core/intervals.py): the level is one
option of both products (Python, command line), recorded in the plan; the intervals are in
the rows, the JSON and the table; a bad level is one line and exit 2, nothing written."""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_run import run

import dprect


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    gen = np.random.default_rng(4)
    return pd.DataFrame({"x": gen.normal(100.0, 15.0, 4000), "y": gen.exponential(3.0, 4000),
                         "g": gen.choice(["a", "b"], 4000)})


def _describe(frame: pd.DataFrame, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dprect.describe(frame, ["x", "y"], group_by="g", groups=["a", "b"],
                               epsilon=1.0, seed=5, **kw)


def test_python_level_sets_every_interval_and_is_recorded(frame):
    wide, narrow = _describe(frame), _describe(frame, interval_level=0.5)
    assert wide.plan.interval_level == 0.95 and narrow.plan.interval_level == 0.5
    assert narrow.to_dict()["plan"]["interval_level"] == 0.5
    for w, n in zip(wide.rows(), narrow.rows(), strict=True):
        for s in ("count", "sum", "mean"):
            assert w[s] == n[s]  # the same draws: the level is post-processing
            assert w[f"{s}_low"] <= n[f"{s}_low"] <= n[s] <= n[f"{s}_high"] <= w[f"{s}_high"]
            assert w[f"{s}_high"] - w[f"{s}_low"] > n[f"{s}_high"] - n[f"{s}_low"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b95 = dprect.bounds(frame, ["x"], epsilon=1.0, seed=5)
        b50 = dprect.bounds(frame, ["x"], epsilon=1.0, seed=5, interval_level=0.5)
    assert (b95.lower, b95.upper) == (b50.lower, b50.upper)
    assert b95.rows()[0]["rank_error"] > b50.rows()[0]["rank_error"] > 0


def test_cli_level_reaches_json_and_table(frame, tmp_path: Path, capsys):
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    out, table = tmp_path / "r.json", tmp_path / "t.csv"
    code, _printed, err = run(["describe", "--input", str(data), "--columns", "x,y",
                               "--epsilon", "1", "--seed", "3", "--interval-level", "0.9",
                               "--output", str(out), "--table", str(table)], capsys)
    assert code == 0, err
    record = json.loads(out.read_text())
    assert record["plan"]["interval_level"] == 0.9
    with open(table, newline="") as f:
        rows = list(csv.DictReader(f))
    for row, got in zip(rows, record["results"], strict=True):
        for s in ("count", "sum", "mean"):
            assert float(row[f"{s}_low"]) == got[f"{s}_low"] <= got[s] <= got[f"{s}_high"]
    bout = tmp_path / "b.json"
    code, _printed, err = run(["bounds", "--input", str(data), "--columns", "x",
                               "--epsilon", "1", "--seed", "3", "--interval-level", "0.9",
                               "--output", str(bout)], capsys)
    assert code == 0, err
    brecord = json.loads(bout.read_text())
    assert brecord["plan"]["interval_level"] == 0.9
    assert brecord["bounds"][0]["rank_error"] == brecord["coverage"]["rank_error_at_level"]["x"]


@pytest.mark.parametrize("level", ["1", "0", "1.5", "nan"])
def test_a_bad_level_is_one_line_and_nothing_written(frame, tmp_path: Path, capsys, level):
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "r.json"
    for command in ("describe", "bounds"):
        code, _printed, err = run([command, "--input", str(data), "--columns", "x",
                                   "--epsilon", "1", "--interval-level", level,
                                   "--output", str(out)], capsys)
        assert code == 2
        assert "interval_level" in err or "interval-level" in err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert not out.exists()


def test_quantiles_take_the_level_on_python_and_cli(frame, tmp_path: Path, capsys):
    """interval_level reaches the quantiles' rank errors from Python and from
    ``dprect aggregate --interval-level`` (not silently left at the default): recorded in
    the plan, in the JSON rows and the table, the values unchanged by it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q95 = dprect.aggregate(frame, ["x"], statistics=["median"], epsilon=1.0, seed=5)
        q90 = dprect.aggregate(frame, ["x"], statistics=["median"], epsilon=1.0, seed=5,
                               interval_level=0.9)
    assert q95.plan.interval_level == 0.95 and q90.plan.interval_level == 0.9
    (r95,), (r90,) = q95.rows(), q90.rows()
    assert r95["median"] == r90["median"]
    assert r95["median_rank_error"] > r90["median_rank_error"] == q90.plan.interval_rank_error
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    out, table = tmp_path / "q.json", tmp_path / "q.csv"
    code, _printed, err = run(["aggregate", "--input", str(data), "--columns", "x",
                               "--statistics", "median", "--epsilon", "1", "--seed", "5",
                               "--interval-level", "0.9", "--output", str(out),
                               "--table", str(table)], capsys)
    assert code == 0, err
    record = json.loads(out.read_text())
    assert record["plan"]["interval_level"] == 0.9
    (row,) = record["results"]
    assert row["median_rank_error"] == record["plan"]["rank_error_at_level"] \
        == pytest.approx(r90["median_rank_error"], rel=1e-12)
    with open(table, newline="") as f:
        (trow,) = list(csv.DictReader(f))
    assert float(trow["median_rank_error"]) == row["median_rank_error"]
    assert trow["p10_rank_error"] == ""  # not asked: empty


def test_the_plot_bars_are_the_mean_intervals(frame):
    """The plot's bar of each mean runs from its released mean_low to mean_high."""
    pytest.importorskip("matplotlib")
    from dprect.release.aggregate_plot import render_describe_figure
    from dprect.release.aggregate_record import describe_record, table_rows

    record = describe_record(_describe(frame))
    fig = render_describe_figure(record)
    rows = table_rows(record)
    for ax in fig.axes:
        for container in ax.containers:
            want = [(r["mean_low"], r["mean_high"]) for r in rows
                    if r["column"] == ax.get_title()]
            assert want
            segments = container.lines[2][0].get_segments()
            got = [v for seg in segments for v in (float(seg[0][1]), float(seg[1][1]))]
            assert got == pytest.approx([v for pair in want for v in pair], rel=1e-12)


def test_the_plot_title_names_the_bars_it_draws(frame):
    """The bars are the released noise intervals at the run's level, and the title says
    so (it read '± the noise's sd' while the bars were 95% intervals, about twice as
    wide); a record made before the intervals keeps its sd bars and their wording."""
    pytest.importorskip("matplotlib")
    from dprect.release.aggregate_plot import render_describe_figure
    from dprect.release.aggregate_record import describe_record

    record = describe_record(_describe(frame, interval_level=0.8))
    title = render_describe_figure(record).get_suptitle()
    assert "noise interval at level 0.8" in title and "sd" not in title
    older = json.loads(json.dumps(record))
    del older["plan"]["interval_level"]
    for row in older["results"]:
        for key in [k for k in row if k.endswith(("_low", "_high"))]:
            del row[key]
    title = render_describe_figure(older).get_suptitle()
    assert "± the noise's sd" in title and "interval" not in title
