"""A public class list beside a private selection of the classes (``fit --classes a,b
--select-groups``, the fit job's same options, ``dprect.fit(classes=[...],
select_groups=True)``; docs/privacy.md §18, Theorem S′): every listed class gets its
rectangle — one of no row included, never through the threshold — and the OTHER values
of the label are selected with the exact law of the selection alone; ONE ledger row (one
charge to a ``PrivacyBudget``) of (ε + ε_s, δ + δ_s), the selection's alone; the plan
states both lists; the command line and the Python API give the same classes and
rectangles for a seed; bad combinations are refused in one line, exit 2, with nothing
written or charged."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run
from selection_oracle import expected_kept

import dprect
from dprect.core.group_selection import plan_selection
from dprect.release.ledger import Ledger

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")
SELECT = ["--select-groups", "--selection-epsilon", "1", "--selection-delta", "0.05"]
#: listed: a large class, a class of ONE row, a class with no row at all
LISTED = ["big0", "one000", "nothere"]
ONES = 300  # labels of one row: one000 … one299
GRID = "0:10:32"
SEED = 7


def _labels() -> list[str]:
    return [f"big{i}" for i in range(3) for _ in range(200)] + \
        [f"one{i:03d}" for i in range(ONES)]


def _write(tmp_path: Path) -> Path:
    labels = _labels()
    x = [float(i % 7) for i in range(len(labels))]
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"lab": labels, "x": x, "y": [v / 2 for v in x]}), path)
    return path


def _expected_kept() -> list[str]:
    """The exact law's oracle over the UNLISTED labels, in the order of their text: each
    kept iff it has at least N rows or ``randbits(96) < P_k``, from the one stream of the
    run's seeded source (tests/core/test_group_selection.py's law)."""
    plan = plan_selection(1.0, 0.05, "add-remove")
    counts = {"big1": 200, "big2": 200, **{f"one{i:03d}": 1 for i in range(1, ONES)}}
    return expected_kept(plan, counts, SEED)


def _fit(data: Path, *extra: str) -> list[str]:
    return ["fit", "--input", str(data), "--features", "x,y", "--label", "lab",
            "--epsilon", "2", "--delta", "1e-6", "--grid", GRID, *extra]


def test_listed_classes_are_released_and_the_others_selected_with_one_ledger_row(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, ledger, out_path = _write(tmp_path), tmp_path / "ledger", tmp_path / "o.json"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    code, out, err = run(_fit(data, "--classes", ",".join(LISTED), *SELECT, "--output",
                              str(out_path), "--ledger", str(ledger), "--dataset", "ds",
                              "--seed", str(SEED)), capsys)
    assert code == 0, err
    kept = _expected_kept()
    assert 3 < len(kept) - 2 < 40  # some one-row labels kept (about 0.05 x 299)
    record = json.loads(out_path.read_text())
    assert record["classes"] == [*LISTED, *kept]  # listed first, each released
    assert record["rectangles"]["nothere"]["empty"]  # a listed class of no row
    assert record["group_selection"]["groups_kept"] == len(kept)
    assert record["group_selection"]["groups_listed"] == 3
    runs = Ledger(str(ledger)).runs("ds")
    assert len(runs) == 1  # ONE row, whatever the numbers of classes
    assert (runs[0].epsilon, runs[0].delta) == (record["privacy"]["epsilon"],
                                                record["privacy"]["delta"])
    stats = record["statistics_privacy"]
    assert runs[0].epsilon == pytest.approx(stats["epsilon"] + 1.0, abs=1e-12)
    assert runs[0].delta == pytest.approx(stats["delta"] + 0.05, rel=1e-12)
    assert "plan: 3 listed class(es) released whatever their rows" in out
    assert f"{len(kept)} class(es) kept by the private selection, beside 3 listed" in out
    assert "plan: the selection, then one rectangle per class on the kept keys only" in out
    # the same rectangles as the public list of every released class, for the seed
    all_path = tmp_path / "all.json"
    code, _, err = run(_fit(data, "--classes", ",".join(record["classes"]), "--output",
                            str(all_path), "--seed", str(SEED)), capsys)
    assert code == 0, err
    assert json.loads(all_path.read_text())["rectangles"] == record["rectangles"]


def test_the_python_api_equals_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, out_path = _write(tmp_path), tmp_path / "o.json"
    code, _, err = run(_fit(data, "--classes", ",".join(LISTED), *SELECT, "--output",
                            str(out_path), "--seed", str(SEED)), capsys)
    assert code == 0, err
    cli = json.loads(out_path.read_text())
    table = pq.read_table(data)
    X = np.column_stack([table.column("x").to_numpy(), table.column("y").to_numpy()])
    budget = dprect.PrivacyBudget()
    got = dprect.fit(X, np.asarray(_labels()), epsilon=2, delta=1e-6, grid=GRID,
                     features=["x", "y"], seed=SEED, budget=budget, classes=LISTED,
                     select_groups=True, selection_epsilon=1.0, selection_delta=0.05)
    api = got.to_json()
    assert api["classes"] == cli["classes"] == [*LISTED, *_expected_kept()]
    assert api["rectangles"] == cli["rectangles"]
    assert api["privacy"] == cli["privacy"]
    assert api["group_selection"] == {k: v for k, v in cli["group_selection"].items()}
    assert [c.guarantee for c in budget.charges] == [got.guarantee]  # ONE charge


def test_a_listed_number_leaves_out_the_value_it_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``1.0`` listed on a numeric label names the label value 1 (read against the
    column's type): 1 is no candidate, so it is released once, as listed."""
    path = tmp_path / "n.parquet"
    labels = [1.0] * 300 + [2.0] * 300
    pq.write_table(pa.table({"lab": labels, "x": [float(i % 9) for i in range(600)],
                             "y": [float(i % 5) for i in range(600)]}), path)
    out_path = tmp_path / "o.json"
    code, _, err = run(_fit(path, "--classes", "1.0", *SELECT, "--output", str(out_path),
                            "--seed", "3"), capsys)
    assert code == 0, err
    record = json.loads(out_path.read_text())
    assert record["classes"] == ["1.0", "2"]
    assert record["group_selection"]["groups_kept"] == 1


@pytest.mark.parametrize(("classes", "extra", "message"), [
    ("1,abc", [], "the label column 'lab' is numeric"),  # from the schema
    ("1,2", ["--positive-label", "2"], "give classes or a positive label, not both"),
    ("1,2", ["--selection-delta", "0"], "--selection-delta must be a number in (0, 1)"),
])
def test_bad_combinations_are_refused_with_nothing_written_or_charged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], classes: str,
        extra: list[str], message: str) -> None:
    path = tmp_path / "n.parquet"
    pq.write_table(pa.table({"lab": [1.0, 2.0, 2.0], "x": [1.0, 2.0, 3.0],
                             "y": [1.0, 2.0, 3.0]}), path)
    ledger, out_path, png = tmp_path / "ledger", tmp_path / "o.json", tmp_path / "o.png"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    code, _, err = run(_fit(path, "--classes", classes, *SELECT, *extra, "--output",
                            str(out_path), "--plot", str(png), "--ledger", str(ledger),
                            "--dataset", "ds"), capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not out_path.exists() and not png.exists()
    assert Ledger(str(ledger)).runs("ds") == []


def test_the_classifier_takes_a_public_list_beside_the_selection(tmp_path: Path) -> None:
    """``RectangleClassifier(classes=[...], select_groups=True)``: ``classes_`` are the
    listed classes, then those the selection kept (dprect.fit's), for ONE charge."""
    pytest.importorskip("sklearn")
    labels = np.asarray(_labels())
    X = np.column_stack([np.arange(len(labels)) % 7.0, np.arange(len(labels)) % 3.0])
    budget = dprect.PrivacyBudget()
    clf = dprect.RectangleClassifier(2, 1e-6, classes=LISTED, grid=GRID, random_state=SEED,
                                     budget=budget, select_groups=True,
                                     selection_epsilon=1.0, selection_delta=0.05)
    clf.fit(X, labels)
    assert clf.classes_.tolist() == [*LISTED, *_expected_kept()]
    assert len(budget.charges) == 1
