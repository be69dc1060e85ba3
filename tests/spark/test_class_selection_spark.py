"""The classes found privately on Spark (docs/privacy.md §18): for a seed, ``dprect fit
--select-groups --engine spark`` keeps the same classes and writes the same rectangles as
the numpy engine — the label values are named alike (numbers as doubles, 0.0 and -0.0 one
class, NaN and null no class) and drawn from one stream in the order of their text; a run
keeping no class prepares nothing and releases the same empty record."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")
SELECT = ["--select-groups", "--selection-epsilon", "0.5", "--selection-delta", "1e-3"]


def _records(tmp_path, capsys, data, seed: str, *extra: str) -> dict[str, dict]:
    out = {}
    for engine in ("numpy", "spark"):
        path = tmp_path / f"{engine}.json"
        code, _, err = run(["fit", "--input", str(data), "--features", "a,b", "--label", "y",
                            *SELECT, "--epsilon", "2", "--delta", "1e-7", "--grid",
                            "0:10:64", "--seed", seed, "--engine", engine, "--output",
                            str(path), *extra], capsys)
        assert code == 0, err
        out[engine] = json.loads(path.read_text())
    return out


def test_spark_keeps_the_classes_and_rectangles_numpy_keeps(spark, tmp_path, capsys):
    # 0 and 1: kept surely; 12 labels of 6-14 rows: kept with probabilities in between
    # (at (0.5, 1e-3) p_6 ≈ 0.02 … p_14 ≈ 0.5), so the same seed must draw alike
    labels = [0.0] * 300 + [-0.0] * 100 + [1] * 400
    labels += [float(2 + i) + 0.5 for i in range(12) for _ in range(6 + (i % 9))]
    labels += [float("nan")] * 50 + [None] * 50
    n = len(labels)
    pq.write_table(pa.table({"a": [float(i % 10) for i in range(n)],
                             "b": [float(i % 7) for i in range(n)], "y": labels}),
                   tmp_path / "t.parquet")
    out = _records(tmp_path, capsys, tmp_path / "t.parquet", "8")
    assert out["spark"]["classes"] == out["numpy"]["classes"]
    assert out["spark"]["rectangles"] == out["numpy"]["rectangles"]
    assert out["spark"]["privacy"] == out["numpy"]["privacy"]
    kept = out["numpy"]["classes"]
    assert kept[:2] == ["0", "1"] and "nan" not in kept and 2 < len(kept) < 14


def test_spark_releases_a_public_list_beside_the_selection_as_numpy_does(spark, tmp_path,
                                                                         capsys):
    """``--classes 1.0,99 --select-groups``: the listed classes first (``1.0`` names the
    value 1, read against the numeric column on both engines, so 1 is no candidate; 99
    has no row), then the other values kept, alike on both engines for a seed."""
    labels = [0.0] * 300 + [1] * 400 + [float(2 + i) + 0.5 for i in range(12)
                                         for _ in range(6 + (i % 9))]
    n = len(labels)
    pq.write_table(pa.table({"a": [float(i % 10) for i in range(n)],
                             "b": [float(i % 7) for i in range(n)], "y": labels}),
                   tmp_path / "t.parquet")
    out = _records(tmp_path, capsys, tmp_path / "t.parquet", "8", "--classes", "1.0,99")
    for key in ("classes", "rectangles", "privacy", "group_selection"):
        assert out["spark"][key] == out["numpy"][key], key
    classes = out["numpy"]["classes"]
    assert classes[:3] == ["1.0", "99", "0"] and "1" not in classes
    assert out["numpy"]["group_selection"]["groups_listed"] == 2


def test_spark_keeping_no_class_releases_the_empty_record(spark, tmp_path, capsys):
    pq.write_table(pa.table({"a": [1.0, 2.0], "b": [1.0, 2.0], "y": ["p", "q"]}),
                   tmp_path / "few.parquet")
    out = _records(tmp_path, capsys, tmp_path / "few.parquet", "2")
    assert out["spark"]["classes"] == out["numpy"]["classes"] == []
    assert out["spark"]["rectangles"] == {} and out["spark"]["privacy"] == \
        out["numpy"]["privacy"]


@pytest.mark.parametrize("strategy", ["auto", "prefetch"])
def test_no_progress_line_before_the_charge_tells_how_many_classes_were_kept(
        spark, tmp_path, strategy):
    """The job prints the route's progress lines: before the charge (the compute's
    ``fitting …`` line comes after it) none may name the number of classes kept."""
    from dprect.app.classes_flow import run_classes_fit
    from dprect.app.flow import fit_settings
    from dprect.app.spine import Reporter
    from dprect.engines.spark.fit import SparkRoute

    labels = [f"c{i}" for i in range(7) for _ in range(80)]
    pq.write_table(pa.table({"a": [float(i % 10) for i in range(len(labels))],
                             "b": [float(i % 7) for i in range(len(labels))],
                             "y": labels}), tmp_path / "t.parquet")
    values = {"input": str(tmp_path / "t.parquet"), "features": ["a", "b"], "label": "y",
              "format": "parquet", "where": None, "version": None, "timestamp": None,
              "grid": "0:10:64", "seed": 3, "epsilon": 2.0, "delta": 1e-7,
              "output": str(tmp_path / "o.json"), "plot": None, "results_table": None,
              "truth": None, "dataset": None, "ledger": None, "run_id": None,
              "cap_epsilon": None, "cap_delta": None, "strategy": strategy,
              "select_groups": True, "selection_epsilon": 0.5, "selection_delta": 1e-3}
    lines: list[str] = []
    run_classes_fit(fit_settings(values), SparkRoute(lambda: (spark, False), strategy),
                    Reporter(say=lambda _: None, progress=lines.append,
                             show=lambda _: None))
    assert json.loads((tmp_path / "o.json").read_text())["classes"] == \
        [f"c{i}" for i in range(7)]
    found = lines.index("finding the classes privately")
    before = lines[found:next(i for i, ln in enumerate(lines) if ln.startswith("fitting 7 "))]
    assert len(before) > 1 and not any(re.search(r"\b7\b", ln) for ln in before), before


def test_the_error_policy_refuses_before_the_draw_on_both_engines(spark, tmp_path, capsys):
    """``--invalid-rows error`` with ``--select-groups``: a NaN feature refuses the run on
    both engines for every seed, in the same line — checked over every row before the
    draw, never only on the classes it kept (a seed keeping none released an empty record
    on Spark too, and a refusal told the draw's outcome before the charge)."""
    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0, 3.0, float("nan")], "b": [2.5] * 4,
                             "y": ["k"] * 4}), path)
    for seed in range(8):
        lines = {}
        for engine in ("numpy", "spark"):
            out = tmp_path / f"{engine}{seed}.json"
            code, _, err = run(["fit", "--input", str(path), "--features", "a,b", "--label",
                                "y", "--select-groups", "--selection-epsilon", "1",
                                "--selection-delta", "0.05", "--invalid-rows", "error",
                                "--epsilon", "2", "--delta", "1e-7", "--grid", "0:10:64",
                                "--seed", str(seed), "--engine", engine, "--output",
                                str(out)], capsys)
            assert code == 2 and not out.exists(), (engine, seed, err)
            lines[engine] = err.strip().splitlines()
        assert lines["spark"] == lines["numpy"] == [
            "dprect: error: feature 'a' has null, NaN or infinite values (refused under the "
            "'error' invalid-rows policy; the default 'drop' drops such rows)"], seed
