"""The grouped aggregates' plots (dprect/release/aggregate_plot.py, quantile_plot.py): a
mark per group up to MANY_GROUPS groups, the distribution over the groups beyond (a public
threshold on the public number of groups); the quantiles' ladders; drawn from the
released record only, no value in the line the sink prints, and never broken by a
released value."""

from __future__ import annotations

import copy
import io
import json
import re
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dprect.app.cli import main
from dprect.release.aggregate_record import table_rows
from dprect.release.sinks import Release

pytest.importorskip("matplotlib")

from matplotlib.text import Text

from dprect.release.aggregate_plot import (
    MANY_GROUPS,
    DescribePngSink,
    render_describe_figure,
)
from dprect.release.quantile_plot import QuantilesPngSink, quantiles_figure

#: the sink's line: the path, then at most a count out of view — never a value
LINE = re.compile(r"plot written to \S+( \(\d+ (mean|value)\(s\) out of view, "
                  r"(drawn as triangles at the panel's edge|counted in the panels' notes)\))?")


def _run(tmp: Path, statistics: str, plot: bool = True) -> dict:
    """A seeded run of 3 groups (one of 40 rows) on two columns: its record."""
    gen = np.random.default_rng(8)
    rows = 24040
    group = np.r_[np.arange(24000) % 2, np.full(40, 2)]
    pq.write_table(pa.table({"x": gen.normal(50, 10, rows) + 5 * group,
                             "y": gen.exponential(3, rows), "g": group}), tmp / "t.parquet")
    out = tmp / f"{statistics}.json"
    argv = ["aggregate", "--statistics", statistics, "--input", str(tmp / "t.parquet"),
            "--columns", "x,y", "--epsilon", "1", "--group-by", "g", "--groups", "0,1,2",
            "--seed", "2", "--output", str(out), "--quiet"]
    assert main([*argv, *(["--plot", str(tmp / f"{statistics}.png")] if plot else [])]) == 0
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def quantiles(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _run(tmp_path_factory.mktemp("q"), "p10,p25,median,p75,p90", plot=False)


@pytest.fixture(scope="module")
def means(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _run(tmp_path_factory.mktemp("d"), "count,mean", plot=False)


def _widened(record: dict, groups: int) -> dict:
    """``record`` with ``groups`` groups: its first group's rows copied under new names,
    each released value shifted by the group's index (a record as a run of that many
    groups releases it)."""
    wide = copy.deepcopy(record)
    first = [r for r in record["results"] if r["group"] == record["groups"][0]]
    wide["groups"] = [f"g{i}" for i in range(groups)]
    wide["results"] = [
        {k: (v + i if isinstance(v, float) and not k.endswith("rank_error") else v)
         for k, v in {**row, "group": f"g{i}"}.items()}
        for i in range(groups) for row in first]
    return wide


def _gids(fig: Any) -> set[str]:
    return {a.get_gid() for a in fig.findobj() if a.get_gid()}


def test_the_quantiles_ladder_draws_the_released_values(quantiles: dict) -> None:
    fig = quantiles_figure(quantiles)[0]
    ladders: dict[str, list[float]] = {}  # each group's ticks, in the groups' order
    for ax in fig.axes:
        for line in ax.lines:
            if (line.get_gid() or "").startswith("quantiles "):
                ladders.setdefault(line.get_gid(), []).extend(line.get_ydata())
    rows = table_rows(quantiles)
    names = ["p10", "p25", "median", "p75", "p90"]
    # the groups with rows enough: every released quantile, in order, at its group
    big = [r for r in rows if r["column"] == "x" and not r["below_row_need"]]
    assert len(big) == 2 and ladders["quantiles x"] == [r[n] for r in big for n in names]
    small = [r for r in rows if r["below_row_need"]]
    assert len(small) == 2  # group 2 (40 rows), both columns: grey, or out of view
    texts = " ".join(t.get_text() for t in fig.texts + [t for ax in fig.axes
                                                         for t in ax.texts])
    error = big[0]["p10_rank_error"]
    assert error is not None and f"±{error:,.0f}" in texts  # above each ladder
    assert "ranks within" in texts and "level 0.95" in texts


def test_the_switch_to_a_distribution_is_the_public_number_of_groups(
        quantiles: dict, means: dict) -> None:
    """Up to MANY_GROUPS groups a mark per group; one more: histograms, whose bins hold
    every drawn group's released value (out of view ones counted apart)."""
    assert MANY_GROUPS == 60
    at, past = _widened(quantiles, MANY_GROUPS), _widened(quantiles, MANY_GROUPS + 1)
    assert "quantiles x" in _gids(quantiles_figure(at)[0])
    fig = quantiles_figure(past)[0]
    gids = _gids(fig)
    assert "quantiles x" not in gids and {"histogram p10", "histogram p90"} <= gids
    heights = sum(p.get_data().values.sum() for ax in fig.axes[:1] for p in ax.patches
                  if p.get_gid() == "histogram median")
    assert MANY_GROUPS + 1 - 2 <= heights <= MANY_GROUPS + 1  # the view's trim: the ends
    at, past = _widened(means, MANY_GROUPS), _widened(means, MANY_GROUPS + 1)
    assert "means x" in _gids(render_describe_figure(at))
    gids = _gids(render_describe_figure(past))
    assert "means x" not in gids
    assert {"histogram groups with rows enough", "median interval x"} <= gids


@pytest.mark.parametrize("groups", [3, MANY_GROUPS + 1])
def test_the_sinks_write_a_png_and_say_no_value(quantiles: dict, means: dict,
                                                 tmp_path: Path, groups: int) -> None:
    for record, sink in ((quantiles, QuantilesPngSink), (means, DescribePngSink)):
        record = record if groups == 3 else _widened(record, groups)
        path = tmp_path / f"{sink.__name__}.png"
        line = sink("--plot", str(path), title="t").prepare(
            Release(record, "r", datetime.now(UTC)))()
        assert LINE.fullmatch(line), line
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        released = {f"{v:.6g}" for r in record["results"] for v in r.values()
                    if isinstance(v, float) and abs(v) >= 10}
        assert not {t for t in re.findall(r"[-\d.e+]+", line) if t in released}


@pytest.mark.parametrize("groups", [3, MANY_GROUPS + 1])
@pytest.mark.parametrize("value", [1.7e308, -1e308, float("inf"), 1e299])
def test_no_released_quantile_breaks_the_plot(quantiles: dict, groups: int,
                                              value: float) -> None:
    record = _widened(quantiles, groups) if groups > 3 else copy.deepcopy(quantiles)
    record["results"][0].update(p10=-value, median=value, p90=value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig, out = quantiles_figure(record)
        fig.savefig(io.BytesIO(), format="png")
    texts = " ".join(t.get_text() for t in fig.findobj(Text))
    if abs(value) > 1e300:  # never handed to matplotlib: said
        assert "not finite or beyond ±1e+300, not drawn" in texts
    else:  # a group with rows enough sets the view: drawn, or counted out of view
        assert groups == 3 or out >= 1


def test_plot_runs_of_quantiles_and_refusals(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """--plot with quantiles writes the ladders' PNG; with the coverage bounds or a mixed
    run it is refused in one line, exit 2, nothing written."""
    _run(tmp_path, "median,p90")
    assert (tmp_path / "median,p90.png").read_bytes()[:4] == b"\x89PNG"
    printed = capsys.readouterr().out
    assert LINE.fullmatch(next(ln for ln in printed.splitlines() if ln.startswith("plot ")))
    base = ["aggregate", "--input", str(tmp_path / "t.parquet"), "--columns", "x",
            "--epsilon", "1", "--group-by", "g", "--groups", "0,1", "--quiet"]
    for statistics, said in (("coverage", "--plot is an option of the statistics "),
                             ("mean,median", "--plot draws the statistics of a run of one "
                                             "mechanism")):
        out = tmp_path / f"no_{statistics}.json"
        assert main([*base, "--statistics", statistics, "--output", str(out),
                     "--plot", str(tmp_path / "no.png")]) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists() and not (tmp_path / "no.png").exists()
    assert main([*base, "--statistics", "coverage", "--output", str(tmp_path / "c.json"),
                 "--plot", str(tmp_path / "no.png")]) == 2
    assert "'median'" in capsys.readouterr().err  # the quantiles take --plot too


def test_a_plot_of_many_groups_keeps_a_few_values_per_group(quantiles: dict, means: dict,
                                                            monkeypatch) -> None:
    """Issue #42: past MANY_GROUPS the plot is built in one pass over the record's rows (a
    record spooled on disk read once, a block at a time), each panel keeping a few values
    per group, never the rows — and the PNG is byte for byte the one the rows in memory
    make."""
    from dprect.release import aggregate_plot, quantile_plot
    from dprect.release.aggregate_plot import png
    from dprect.release.record_text import item_lines
    from dprect.release.row_spool import RowSpool, pack_block

    kept: list[Any] = []
    for module, name in ((aggregate_plot, "_draw_column_spread"),
                         (quantile_plot, "_draw_spread")):
        real = getattr(module, name)

        def spy(ax, column, items, *rest, real=real):
            kept.extend(items)
            return real(ax, column, items, *rest)

        monkeypatch.setattr(module, name, spy)
    for record, figure in ((means, lambda r: aggregate_plot._describe_figure(
            r, title=None, dpi=60)[0]), (quantiles, lambda r: quantiles_figure(r, dpi=60)[0])):
        wide = _widened(record, 300)
        want = png(figure(wide))
        spool = RowSpool()
        for start in range(0, len(wide["results"]), 128):
            block = wide["results"][start:start + 128]
            spool.append(pack_block(len(block), item_lines(block)))  # the rows read
        reads: list[int] = []
        blocks = spool.blocks
        monkeypatch.setattr(spool, "blocks", lambda reads=reads, blocks=blocks: (
            reads.append(1), blocks())[1])
        kept.clear()
        assert png(figure({**wide, "results": spool})) == want
        assert reads == [1] and len(kept) == 2 * 300
        assert not any(isinstance(k, dict) and {"group", "column"} & set(k) for k in kept)
        spool.close()


def _flagged(record: dict, columns: set[str]) -> dict:
    """:func:`_widened` ``record`` of MANY_GROUPS + 1 groups, every group of ``columns``
    below the plan's row need: its count there that of the run's small group (40 rows;
    the flag is made from the released count and the plan when the rows are read)."""
    out = _widened(record, MANY_GROUPS + 1)
    small = {r["column"]: r for r in table_rows(record) if r["below_row_need"]}
    assert set(small) >= columns
    for row in out["results"]:
        if row["column"] in columns:
            row["count"] = small[row["column"]]["count"]
    assert all(r["below_row_need"] == (r["column"] in columns) for r in table_rows(out))
    return out


def _panel_notes(fig: Any) -> dict[str, str]:
    """Each panel's note (its legend's title), by the panel's column."""
    return {ax.get_title(): ax.get_legend().get_title().get_text() for ax in fig.axes
            if ax.get_legend() is not None}


def test_a_panel_of_flagged_groups_says_it_draws_no_bar(means: dict) -> None:
    """Past MANY_GROUPS, a panel whose groups are all flagged below_row_need has no median
    noise interval and draws no bar: its note and the figure's title say so, instead of
    promising the bar (the title did); with some panels drawing one, the title says where
    drawn."""
    bar = "bar: the median noise interval's width"
    fig = render_describe_figure(_flagged(means, set()))
    assert {"median interval x", "median interval y"} <= _gids(fig)
    assert bar in fig._suptitle.get_text() and "no bar" not in fig._suptitle.get_text()
    assert not any("no bar" in n for n in _panel_notes(fig).values())

    fig = render_describe_figure(_flagged(means, {"x", "y"}))
    assert not any(g.startswith("median interval") for g in _gids(fig))
    title = fig._suptitle.get_text()
    assert "every group below its row need: no bar" in title.splitlines()
    assert "bar:" not in title and "bar (where drawn)" not in title
    notes = _panel_notes(fig)
    assert set(notes) == {"x", "y"}
    assert all("every group below its row need: no bar" in n for n in notes.values())

    fig = render_describe_figure(_flagged(means, {"x"}))
    assert "median interval y" in _gids(fig) and "median interval x" not in _gids(fig)
    title = fig._suptitle.get_text()
    assert "bar (where drawn): the median noise interval's width" in title
    assert "every group below its row need: no bar" not in title
    notes = _panel_notes(fig)
    assert "no bar" in notes["x"] and "no bar" not in notes["y"]


def _long_keys(record: dict, width: int = 160) -> dict:
    """``record`` with its groups renamed to keys of ``width`` characters and more."""
    renamed = {g: f"{g}:" + "k" * width for g in record["groups"]}
    wide = copy.deepcopy(record)
    wide["groups"] = [renamed[g] for g in record["groups"]]
    for row in wide["results"]:
        row["group"] = renamed[row["group"]]
    return wide


def test_long_group_keys_are_cut_in_the_ticks_only(quantiles: dict, means: dict) -> None:
    """Keys of 160 characters (s51-clf item 6): their tick labels did not fit, the
    constrained layout gave up and the labels ran off the figure. Now a tick label is at
    most MAX_KEY_CHARS characters, the last an ellipsis, every label inside the figure;
    the whole keys stay in the record (the JSON and the table)."""
    from dprect.release import aggregate_plot

    for record, figure in ((means, lambda r: render_describe_figure(r)),
                           (quantiles, lambda r: quantiles_figure(r)[0])):
        wide = _long_keys(record)
        fig = figure(wide)
        aggregate_plot.png(fig)  # drawn: the layout is made
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert panels
        for ax in panels:
            for label in ax.get_xticklabels():  # inside the figure: the layout was made
                box = label.get_window_extent()
                assert box.x0 >= 0 and box.y0 >= 0, label.get_text()
            limit = aggregate_plot.MAX_KEY_CHARS
            ticks = [t.get_text() for t in ax.get_xticklabels()]
            assert ticks and all(len(t) <= limit and t.endswith("…") for t in ticks)
            assert [t[:-1] for t in ticks] == [g[:limit - 1] for g in wide["groups"]]
        assert all(len(g) > 160 for g in wide["groups"])  # the record keeps them whole


def test_a_key_of_the_limit_is_shown_whole() -> None:
    from dprect.release.aggregate_plot import MAX_KEY_CHARS, _group_label

    assert _group_label("k" * MAX_KEY_CHARS) == "k" * MAX_KEY_CHARS
    assert _group_label("k" * (MAX_KEY_CHARS + 1)) == "k" * (MAX_KEY_CHARS - 1) + "…"
    assert _group_label(None) == "(all rows)"


def test_a_long_title_is_wrapped_whole_into_the_figure(means: dict) -> None:
    """s51-clf item 5, the aggregates' figure too: a title wider than the figure was cut
    at both edges; now it is broken between words, every character kept."""
    from dprect.release import aggregate_plot

    title = ("the quarterly survey of household spending, second wave, reweighted extract "
             "for the regional offices of the northern districts, with the late returns "
             "of the autumn and the corrections of the statistical office's second audit")
    fig = render_describe_figure(means, title=title)
    aggregate_plot.png(fig)
    box = fig._suptitle.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    assert fig.get_suptitle().replace("\n", " ").startswith(title + ": ")
