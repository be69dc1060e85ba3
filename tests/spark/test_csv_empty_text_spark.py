"""An empty CSV cell of a text column is null on both engines (docs/operations.md, "CSV"):
its rows are in no group, so the keys a private selection counts, and a run's groups, are
the same on numpy and Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run

from dprect.core.domains import FloatBins
from dprect.core.request import Source
from dprect.core.statistic import COVERAGE
from dprect.engines.grouped import NumpyGroupedRoute


def _csv(tmp_path: Path) -> Path:
    """Keys 'a' (300 rows), the empty cell unquoted (300) and quoted (300), '  ' (300)."""
    lines = ["g,x"]
    for i in range(300):
        lines += [f"a,{i}.5", f",{i}.25", f'"",{i}.75', f"  ,{i}"]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_empty_text_cells_are_no_key_on_either_engine(spark, tmp_path: Path) -> None:
    from dprect.engines.spark.grouped_route import SparkGroupedRoute

    source = Source(str(_csv(tmp_path)), ["x"], group_by="g", format="csv")
    spec = COVERAGE.spec([FloatBins()], ())
    with NumpyGroupedRoute().open(source, None, spec, lambda _: None) as prepared:
        numpy_counts = prepared.key_counts()
    with SparkGroupedRoute(lambda: (spark, False)).open(
            source, None, spec, lambda _: None) as prepared:
        spark_counts = prepared.key_counts()
    assert numpy_counts == spark_counts
    assert sorted(numpy_counts) == ["  ", "a"]


@pytest.mark.parametrize("engine", ["numpy", "spark"])
def test_a_selected_run_releases_no_empty_group(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str) -> None:
    out = tmp_path / f"{engine}.json"
    code, _, err = run(["aggregate", "--input", str(_csv(tmp_path)), "--columns", "x",
                        "--statistics", "count", "--epsilon", "1", "--group-by", "g",
                        "--select-groups", "--selection-epsilon", "1",
                        "--selection-delta", "1e-6", "--seed", "3", "--engine", engine,
                        "--output", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert "" not in json.loads(out.read_text())["groups"]
