"""Numeric group keys compared in the group column's own type on Spark as on numpy: int64
ids past 2^53 (listed, or found privately by a ``groupBy`` count that keeps the longs)
are separate groups printed by their digits, a listed ``0.1`` matches a float32 column's
float32(0.1) — and for a seed the JSON result and the CSV table are byte-identical on
both engines, whether describe's bins are counted in the JVM (its group keys: a long's own
value) or by the ``mapInArrow`` pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

from dprect.engines.spark import session, statistics

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")

BIG = 2**60
IDS = [BIG + 1, BIG + 2, BIG + 3]
ROWS = [40, 50, 60]


def _table(tmp_path: Path) -> Path:
    ids = np.repeat(np.array(IDS, dtype=np.int64), ROWS)
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({
        "id": pa.array(ids, pa.int64()),
        "f": pa.array(np.repeat(np.float32([0.1, 0.2, 0.3]), ROWS), pa.float32()),
        "x": np.linspace(0.0, 1.0, len(ids))}), path)
    return path


@pytest.fixture
def jvm_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each pass that counted in the JVM appends 1 (the route's call spied on)."""
    calls: list[int] = []
    real = statistics.merged_cells

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(statistics, "merged_cells", spy)
    return calls


@pytest.mark.parametrize("statistics_asked", ["count,mean", "count,median"])
@pytest.mark.parametrize(("column", "groups"), [
    ("id", ["--groups", f"{IDS[0]},{IDS[2]},{BIG}"]),
    ("id", ["--select-groups", "--selection-epsilon", "1", "--selection-delta", "1e-6"]),
    ("f", ["--groups", "0.1,0.3,0.4"]),
])
def test_both_engines_release_the_same_exact_keys(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str], jvm_calls: list[int],
        column: str, groups: list[str], statistics_asked: str) -> None:
    path = _table(tmp_path)
    outputs = {}
    for engine in ("numpy", "spark"):
        out, table = tmp_path / f"{engine}.json", tmp_path / f"{engine}.csv"
        code, _, err = run(["aggregate", "--statistics", statistics_asked, "--input",
                            str(path), "--columns", "x", "--epsilon", "50", "--seed", "4",
                            "--group-by", column, *groups, "--engine", engine,
                            "--output", str(out), "--table", str(table), "--quiet"], capsys)
        assert code == 0, err
        outputs[engine] = (out.read_bytes(), table.read_bytes())
    assert outputs["spark"] == outputs["numpy"]
    csv = outputs["numpy"][1].decode()
    rows = {line.split(",")[0]: float(line.split(",")[4])
            for line in csv.splitlines()[1:]}
    if column == "f":
        assert abs(rows["0.1"] - 40) <= 2 and abs(rows["0.4"]) <= 2
    else:
        assert abs(rows[str(IDS[0])] - 40) <= 2 and abs(rows[str(IDS[2])] - 60) <= 2
        assert abs(rows.get(str(BIG), 0.0)) <= 2
    if statistics_asked == "count,mean" and session.bins_jar() is not None:
        assert jvm_calls  # describe's bins counted in the JVM, its keys the longs


def test_a_listed_integer_past_the_long_range_takes_the_pass(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        jvm_calls: list[int]) -> None:
    """An integer no long holds (listed for an int64 column: a group without rows) has
    no JVM key: the run takes the ``mapInArrow`` pass — from the list and the schema —
    and releases what the numpy engine releases."""
    path = _table(tmp_path)
    outputs = {}
    for engine in ("numpy", "spark"):
        out = tmp_path / f"{engine}.json"
        code, _, err = run(["aggregate", "--statistics", "count,mean", "--input", str(path),
                            "--columns", "x", "--epsilon", "50", "--seed", "4",
                            "--group-by", "id", "--groups", f"{IDS[1]},{2**70}",
                            "--engine", engine, "--output", str(out), "--quiet"], capsys)
        assert code == 0, err
        outputs[engine] = out.read_bytes()
    assert outputs["spark"] == outputs["numpy"] and not jvm_calls
    counts = {r["group"]: r["count"] for r in json.loads(outputs["numpy"])["results"]}
    assert abs(counts[str(IDS[1])] - 50) <= 2 and abs(counts[str(2**70)]) <= 2


#: labels: BIG+1 and BIG+2 are one float64 (2^60), BIG+1001 another (2^60 + 1024)
LABELS = [BIG + 1, BIG + 2, BIG + 1001]


@pytest.mark.parametrize("options", [
    ["--positive-label", str(LABELS[0])],
    ["--classes", f"{LABELS[0]},{LABELS[2]}"],
    ["--select-groups", "--selection-epsilon", "0.5", "--selection-delta", "1e-6"],
    ["--classes", str(LABELS[1]), "--select-groups", "--selection-epsilon", "0.5",
     "--selection-delta", "1e-6"],
])
def test_int64_labels_past_2_53_fit_alike_on_both_engines(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        options: list[str]) -> None:
    """A label (or class) of an int64 column names its own rows only, on both engines —
    the Spark fit's SQL test, its file sample and its label count compare the longs as
    the numpy engine does — and the records are byte-identical for a seed."""
    n = 2000
    rng = np.random.default_rng(1)
    path = tmp_path / "l.parquet"
    pq.write_table(pa.table({
        "a": np.concatenate([rng.uniform(2 * i, 2 * i + 1, n) for i in range(3)]),
        "id": pa.array(np.repeat(np.array(LABELS, dtype=np.int64), n), pa.int64())}), path)
    outputs = {}
    for engine in ("numpy", "spark"):
        out = tmp_path / f"{engine}.json"
        code, _, err = run(["fit", "--input", str(path), "--features", "a", "--label", "id",
                            "--epsilon", "1", "--delta", "1e-6", "--grid", "0:8:1024",
                            "--seed", "1", "--engine", engine, "--output", str(out),
                            "--quiet", *options], capsys)
        assert code == 0, err
        outputs[engine] = out.read_bytes()
    assert outputs["spark"] == outputs["numpy"]
    got = json.loads(outputs["numpy"])
    first = got["rectangles"][str(LABELS[0])] if "rectangles" in got else got
    if "classes" not in got or str(LABELS[0]) in got["classes"]:
        assert first["upper"][0] <= 1.5  # LABELS[1]'s rows (up to 3) not pooled in
    if "--select-groups" in options:
        assert sorted(got["classes"]) == sorted(str(v) for v in LABELS)


@pytest.mark.parametrize("options", [
    ["--positive-label", "0.2"],
    ["--classes", "0.1,0.3"],
    ["--classes", "0.1", "--select-groups", "--selection-epsilon", "0.5",
     "--selection-delta", "1e-6"],
])
def test_float32_labels_take_their_nearest_float32_on_both_engines(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        options: list[str]) -> None:
    """A label (or class) of a float32 column is read as its nearest float32, as a group
    value is (s51-labels): ``0.2`` names the rows of float32(0.2), which as float64 it
    never matched (an empty rectangle); byte-identical records for a seed; a class listed
    beside the selection is not found a second time under its float32's own name."""
    n = 2000
    rng = np.random.default_rng(1)
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({
        "a": np.concatenate([rng.uniform(2 * i, 2 * i + 1, n) for i in range(3)]),
        "f": pa.array(np.repeat(np.float32([0.1, 0.2, 0.3]), n), pa.float32())}), path)
    outputs = {}
    for engine in ("numpy", "spark"):
        out = tmp_path / f"{engine}.json"
        code, _, err = run(["fit", "--input", str(path), "--features", "a", "--label", "f",
                            "--epsilon", "1", "--delta", "1e-6", "--grid", "0:8:1024",
                            "--seed", "1", "--engine", engine, "--output", str(out),
                            "--quiet", *options], capsys)
        assert code == 0, err
        outputs[engine] = out.read_bytes()
    assert outputs["spark"] == outputs["numpy"]
    got = json.loads(outputs["numpy"])
    if "rectangles" not in got:
        assert 1.5 <= got["lower"][0] and got["upper"][0] <= 3.5  # float32(0.2)'s rows
        return
    first = got["rectangles"]["0.1"]
    assert 0.5 <= first["upper"][0] <= 1.5  # float32(0.1)'s rows, not an empty rectangle
    assert len(got["classes"]) == 3 if "--select-groups" in options \
        else got["classes"] == ["0.1", "0.3"]


def test_two_classes_of_one_float32_are_refused_on_both_engines(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``0.1`` and ``0.10000000149011612`` are one float32: refused in one line naming
    the column's kind, exit 2, nothing written (schema and list only)."""
    path = _table(tmp_path)
    for engine in ("numpy", "spark"):
        out = tmp_path / f"{engine}.json"
        code, _, err = run(["fit", "--input", str(path), "--features", "x", "--label", "f",
                            "--classes", "0.1,0.10000000149011612", "--epsilon", "1",
                            "--delta", "1e-6", "--grid", "0:1:64", "--engine", engine,
                            "--output", str(out)], capsys)
        assert code == 2 and "Traceback" not in err, err
        assert "float32" in err.strip().splitlines()[-1] and not out.exists()
