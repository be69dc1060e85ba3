"""The rectangle PNG (dprect.release.plotting): both rectangles told apart, a zoom to them,
the bounds written as numbers, the same figure for the CLI's and the jobs' sink."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dprect
from dprect.release import plotting
from dprect.release.plotting import format_bound, render_figure, render_png
from dprect.release.sinks import PngSink, Release

pytest.importorskip("matplotlib")
from matplotlib.figure import Figure
from matplotlib.text import Text

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TRUE_LO, TRUE_HI = [2.0, 3.0], [7.0, 6.5]


@pytest.fixture(scope="module")
def result() -> dprect.FitResult:
    gen = np.random.default_rng(4)
    X = gen.uniform(0, 10, size=(20_000, 2))
    y = ((X > TRUE_LO) & (X < TRUE_HI)).all(axis=1).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dprect.fit(X, y, grid=dprect.Grid(0.0, 10.0, 1024), epsilon=1.0, delta=1e-6,
                          seed=1, features=["a", "b"])


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def _patch(fig: Figure, gid: str) -> Any:
    (patch,) = [p for ax in fig.axes for p in ax.patches if p.get_gid() == gid]
    return patch


def _numbers(line: str, feature: str) -> tuple[float, float]:
    match = re.search(rf"{feature} \[(\S+), (\S+)\]", line)
    assert match, (feature, line)
    return float(match.group(1)), float(match.group(2))


def test_learned_and_true_rectangles_are_told_apart(result: dprect.FitResult) -> None:
    fig = render_figure(result, true_lower=TRUE_LO, true_upper=TRUE_HI, title="unit")
    learned, true = _patch(fig, "learned"), _patch(fig, "true")
    assert learned.get_linestyle() == "-" and true.get_linestyle() == "--"
    assert learned.get_edgecolor() != true.get_edgecolor()
    assert not learned.get_fill() and not true.get_fill()  # outlines: neither hides the other
    assert true.get_zorder() > learned.get_zorder()  # the dashed one is drawn on top
    # drawn where the numbers say
    assert learned.get_x() == pytest.approx(result.lower[0])
    assert learned.get_x() + learned.get_width() == pytest.approx(result.upper[0])
    assert true.get_y() == pytest.approx(TRUE_LO[1])
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("learned" in t for t in legend) and any("true" in t for t in legend)


def test_the_view_is_the_union_of_the_rectangles_not_the_grid(
        result: dprect.FitResult) -> None:
    fig = render_figure(result, true_lower=TRUE_LO, true_upper=TRUE_HI)
    (ax,) = fig.axes
    for (lo, hi), j in ((ax.get_xlim(), 0), (ax.get_ylim(), 1)):
        union = (min(result.lower[j], TRUE_LO[j]), max(result.upper[j], TRUE_HI[j]))
        span = union[1] - union[0]
        assert union[0] - 0.15 * span < lo < union[0]  # a small margin
        assert union[1] < hi < union[1] + 0.15 * span
        assert hi - lo < 0.8 * 10.0  # well inside the grid's [0, 10]


def test_the_bounds_are_written_as_numbers(result: dprect.FitResult) -> None:
    fig = render_figure(result, true_lower=TRUE_LO, true_upper=TRUE_HI)
    texts = _texts(fig)
    (learned,) = [t for t in texts if t.startswith("learned (DP): ")]
    (true,) = [t for t in texts if t.startswith("true: ")]
    assert true == "true: a [2, 7]   b [3, 6.5]"
    for j, name in enumerate(result.features):
        lo, hi = _numbers(learned, name)
        assert lo == pytest.approx(result.lower[j], abs=1e-3)
        assert hi == pytest.approx(result.upper[j], abs=1e-3)
    assert any("SEEDED" in t for t in texts)  # the run's status stays in the title
    assert any("grid 0 … 10" in t for t in texts)  # the public grid, in the axis label


def test_render_png_is_a_deterministic_png(result: dprect.FitResult) -> None:
    a = render_png(result, true_lower=TRUE_LO, true_upper=TRUE_HI, title="unit")
    b = render_png(result, true_lower=TRUE_LO, true_upper=TRUE_HI, title="unit")
    assert a[:8] == PNG_MAGIC and a == b


def test_the_sink_draws_the_sidecar_truth_with_numbers(result: dprect.FitResult,
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI and the fit job write through PngSink: the figure it saves carries both
    rectangles' numbers, and the file is a PNG."""
    figures: list[Figure] = []

    def spy(*args: Any, **kwargs: Any) -> Figure:
        figures.append(render_figure(*args, **kwargs))
        return figures[-1]

    monkeypatch.setattr(plotting, "render_figure", spy)
    sidecar = tmp_path / "truth.json"
    sidecar.write_text(json.dumps({"features": ["b", "a"], "true_lower": [3.0, 2.0],
                                   "true_upper": [6.5, 7.0]}))
    sink = PngSink("--plot", str(tmp_path / "r.png"), title="demo", truth=str(sidecar))
    release = Release(result.to_json(), "run", datetime(2026, 1, 2, tzinfo=UTC))
    assert sink.prepare(release)() == f"plot written to {tmp_path / 'r.png'}"
    assert (tmp_path / "r.png").read_bytes()[:8] == PNG_MAGIC
    (fig,) = figures
    texts = _texts(fig)
    assert "true: a [2, 7]   b [3, 6.5]" in texts
    assert any(t.startswith("demo: ") for t in texts)


def test_empty_and_open_rectangles() -> None:
    X = np.linspace(-5, 5, 4000)[:, None]
    y = (np.abs(X[:, 0]) < 2).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=2)  # float order, one feature
    empty = dataclasses.replace(r, lower_index=[5], upper_index=[4])
    texts = _texts(render_figure(empty, true_lower=[-2], true_upper=[2]))
    assert any(t.startswith("learned (DP): empty rectangle") for t in texts)
    assert "true: x0 [-2, 2]" in texts
    open_ = dataclasses.replace(r, lower=[-math.inf], upper=[1.5])
    fig = render_figure(open_)
    assert any(t.startswith("learned (DP): x0 [-inf, 1.5]") for t in _texts(fig))
    assert "open sides" in fig.legends[0].get_texts()[0].get_text()
    lo, hi = fig.axes[0].get_xlim()
    assert math.isfinite(lo) and hi > 1.5
    assert render_png(open_)[:8] == PNG_MAGIC


@pytest.mark.parametrize(("value", "extent", "text"), [
    (2.0, 6.0, "2"), (-56.99024, 128.0, "-56.99"), (57.487297, 128.0, "57.49"),
    (523412.7, 1.2e6, "523413"), (1.23e-5, 1.0, "0"), (1.23e-5, 1e-4, "1.23e-05"),
    (-1e-9, 1e-5, "-1e-09"), (0.0, 3.0, "0"), (-0.00001, 100.0, "0"),
    (1e308, 5.0, "1e+308"), (12345678.9, 1e3, "1.235e+07"),
    (math.inf, 1.0, "inf"), (-math.inf, 1.0, "-inf")])
def test_format_bound(value: float, extent: float, text: str) -> None:
    assert format_bound(value, extent) == text
