"""Every text of a plot is drawn as it is (s50-fitedge's audit): on main matplotlib read a
text holding two ``$`` as mathtext, so a dataset id, a feature name, a positive label, a
public class or group — or a class the private selection released, a value of the data —
such as ``$\\frac{$`` failed the drawing after the charge (exit 1, "internal error", the
ledger charged, nothing written), and ``$x$`` was drawn as a formula. A character no font
has was a two-line matplotlib warning on stderr, naming it, on a successful run."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run

from dprect.release.ledger import Ledger

BAD = "$\\frac{$"  # an unfinished formula: matplotlib's mathtext refused it


@pytest.fixture
def table(tmp_path: Path) -> Path:
    gen = np.random.default_rng(3)
    n = 3000
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": gen.normal(size=n), "b$x": gen.normal(size=n),
                             "lab": gen.choice(np.array(["ok", BAD, "ねこ"]), n)}), path)
    return path


def _charged_and_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                         argv: list[str]) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    dataset = "ds " + BAD
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = run([*argv, "--output", str(out), "--plot", str(png), "--seed",
                            "1", "--quiet", "--ledger", str(ledger), "--dataset", dataset],
                           capsys)
    assert code == 0, err
    assert messages(err) == []
    assert [str(w.message) for w in caught if "Glyph" in str(w.message)] == []
    assert out.exists() and png.read_bytes()[:4] == b"\x89PNG"
    assert [r.status for r in Ledger(str(ledger)).runs(dataset)] == ["released"]


@pytest.mark.parametrize("labels", [["--positive-label", BAD], ["--classes", f"ok,{BAD}"],
                                    ["--select-groups", "--selection-epsilon", "1",
                                     "--selection-delta", "1e-6"]],
                         ids=["positive-label", "classes", "selected"])
def test_a_fit_plot_draws_dollars_as_they_are(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], table: Path,
        labels: list[str]) -> None:
    _charged_and_written(tmp_path, capsys, [
        "fit", "--input", str(table), "--features", "a,b$x", "--label", "lab",
        "--epsilon", "1", "--delta", "1e-6", *labels])


def test_an_aggregate_plot_draws_dollars_as_they_are(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], table: Path) -> None:
    _charged_and_written(tmp_path, capsys, [
        "aggregate", "--input", str(table), "--columns", "a,b$x", "--group-by", "lab",
        "--groups", f"ok,{BAD}", "--statistics", "mean,count", "--epsilon", "1"])


def test_a_formula_is_not_drawn_as_one() -> None:
    from dprect.core.domains import Grid
    from dprect.core.result import FitResult
    from dprect.release.plotting import png_bytes, render_figure

    r = FitResult(["$x$", "b"], [0.1, 0.2], [0.5, 0.6], [10, 20], [49, 59],
                  [Grid(0, 1, 100)] * 2, "composition", None, {}, seeded=False)
    fig = render_figure(r, title="$\\alpha$")
    assert png_bytes(fig)[:4] == b"\x89PNG"
    from matplotlib.text import Text

    drawn = [t for t in fig.findobj(Text) if "$" in t.get_text()]
    assert drawn and all(not t.get_parse_math() for t in drawn)
