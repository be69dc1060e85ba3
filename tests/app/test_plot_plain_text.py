"""A plot draws every text as it is written. A group or class name holding ``$`` (``a$b``,
``$\\frac{$``: a key found privately, or a public one), or a ``--dataset`` title holding
it, was read by matplotlib as mathtext: the drawing raised ValueError after the release
was charged — "no output was written (ValueError); the result is released", the class
plot an internal error (exit 1) — and a replay of the run id failed alike, so the plot
could never be delivered. Now every plotter renders inside
:func:`dprect.release.plotting.plain_text`; a text without ``$`` is drawn as before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.cli_run import run

pytest.importorskip("matplotlib")

#: names matplotlib's mathtext cannot parse (an unclosed brace; a lone superscript)
NAMES = ("a$b", "$\\frac{$", "x_$^$")


def _table(tmp_path: Path, column: str) -> Path:
    gen = np.random.default_rng(3)
    n = 900
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": gen.normal(size=n), "z": gen.normal(size=n),
                             column: np.array(NAMES)[gen.integers(0, 3, n)]}), path)
    return path


@pytest.mark.parametrize("statistics", ["count,mean", "median,p90"])
@pytest.mark.parametrize("groups", [["--groups", ",".join(NAMES)],
                                    ["--select-groups", "--selection-epsilon", "1",
                                     "--selection-delta", "1e-6"]],
                         ids=["listed", "selected"])
def test_an_aggregate_plot_of_groups_named_with_a_dollar_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], statistics: str,
        groups: list[str]) -> None:
    data, out, plot = _table(tmp_path, "g"), tmp_path / "o.json", tmp_path / "p.png"
    code, _, err = run(["aggregate", "--input", str(data), "--columns", "x",
                        "--statistics", statistics, "--epsilon", "1", "--group-by", "g",
                        *groups, "--dataset", "sales$\\frac{$", "--seed", "1", "--quiet",
                        "--output", str(out), "--plot", str(plot)], capsys)
    assert code == 0, err
    assert out.exists() and plot.read_bytes().startswith(b"\x89PNG")


def test_a_class_plot_of_classes_named_with_a_dollar_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, out, plot = _table(tmp_path, "y"), tmp_path / "o.json", tmp_path / "p.png"
    code, _, err = run(["fit", "--input", str(data), "--features", "x,z", "--label", "y",
                        "--classes", ",".join(NAMES), "--epsilon", "1", "--delta", "1e-6",
                        "--grid=-4:4:16", "--seed", "1", "--quiet", "--output", str(out),
                        "--plot", str(plot)], capsys)
    assert code == 0, err
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_a_fit_plot_titled_with_a_dollar_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, out, plot = _table(tmp_path, "y"), tmp_path / "o.json", tmp_path / "p.png"
    code, _, err = run(["fit", "--input", str(data), "--features", "x,z", "--label", "y",
                        "--positive-label", NAMES[0], "--epsilon", "1", "--delta", "1e-6",
                        "--grid=-4:4:16", "--seed", "1", "--quiet", "--dataset",
                        "$\\frac{$", "--output", str(out), "--plot", str(plot)], capsys)
    assert code == 0, err
    assert plot.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("statistics", ["count,mean", "median,p90"])
def test_a_text_without_a_dollar_is_drawn_as_before(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, statistics: str) -> None:
    """Plain text changes nothing where mathtext had nothing to parse: the same bytes as
    a plot drawn under matplotlib's own settings."""
    import contextlib

    from dprect.release import aggregate_plot

    gen = np.random.default_rng(4)
    data = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": gen.normal(size=600),
                             "g": np.array(["north", "south"])[gen.integers(0, 2, 600)]}),
                   data)
    plots = []
    for plain in (True, False):
        if not plain:
            monkeypatch.setattr(aggregate_plot, "plain_text", contextlib.nullcontext)
        plot = tmp_path / f"p{plain}.png"
        code, _, err = run(["aggregate", "--input", str(data), "--columns", "x",
                            "--statistics", statistics, "--epsilon", "1", "--group-by",
                            "g", "--groups", "north,south", "--seed", "1", "--quiet",
                            "--output", str(tmp_path / f"o{plain}.json"), "--plot",
                            str(plot)], capsys)
        assert code == 0, err
        plots.append(plot.read_bytes())
    assert plots[0] == plots[1]


def test_the_drawing_warns_nothing_on_names_the_font_cannot_draw(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Keys found privately holding a terminal escape and a NUL: matplotlib warned
    ``Glyph 27 (\\x1b) missing from font(s) DejaVu Sans`` with the raw character, and its
    renderer's source line, on stderr of a run that succeeded."""
    import warnings

    gen = np.random.default_rng(5)
    keys = np.array(["\x1b[31mred", "a\x00b", "plain"], dtype=object)
    data, out, plot = tmp_path / "t.parquet", tmp_path / "o.json", tmp_path / "p.png"
    pq.write_table(pa.table({"x": gen.normal(size=600),
                             "g": pa.array(list(keys[gen.integers(0, 3, 600)]))}), data)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        code, _, err = run(["aggregate", "--input", str(data), "--columns", "x",
                            "--statistics", "count,mean", "--epsilon", "1", "--group-by",
                            "g", "--select-groups", "--selection-epsilon", "1",
                            "--selection-delta", "1e-6", "--seed", "1", "--quiet",
                            "--output", str(out), "--plot", str(plot)], capsys)
    assert code == 0 and err == "", err
    assert len(json.loads(out.read_text())["groups"]) == 3
    drawn = [str(w.message) for w in seen if "seed" not in str(w.message)]
    assert drawn == []
