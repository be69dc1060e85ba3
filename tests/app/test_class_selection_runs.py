"""The classes found privately (``fit --select-groups``, docs/privacy.md §18): the label's
values kept by the aggregates' partition selection are the classes; the plan states the
selection; the ledger charges ONE row of (ε + ε_s, δ + δ_s); bad options are refused
before anything is read, written or charged (a public list beside it:
tests/app/test_class_lists_combined.py); a run keeping no class releases a
record with no class (the plot says so, the results table gets no row), charged as
planned; a label value's text is printed only when its class is released."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

import dprect
from dprect.core.classes import ClassesResult, label_candidates
from dprect.release.ledger import Ledger

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")
SELECT = ["--select-groups", "--selection-epsilon", "0.5", "--selection-delta", "1e-6"]
#: labels of one row each (kept with probability 1e-6): never printed
HIDDEN = "hiddenlabel"
GRID = "0:10:64"


def _table(tmp_path: Path) -> Path:
    """Classes ``a`` and ``b`` of 400 rows (kept surely: N = 51 at (0.5, 1e-6)), 30
    labels of one row, and a null label."""
    labels: list[str | None] = ["a"] * 400 + ["b"] * 400
    labels += [f"{HIDDEN}{i}" for i in range(30)] + [None]
    x = [1.0 + (i % 3) if i < 400 else 6.0 + (i % 3) for i in range(len(labels))]
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"lab": labels, "x": x, "y": [v / 2 for v in x]}), path)
    return path


def _fit(data: Path, *extra: str) -> list[str]:
    return ["fit", "--input", str(data), "--features", "x,y", "--label", "lab",
            "--epsilon", "2", "--delta", "1e-6", "--grid", GRID, *extra]


def test_the_plan_states_the_selection_and_the_ledger_charges_one_composed_row(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, ledger, out_path = _table(tmp_path), tmp_path / "ledger", tmp_path / "o.json"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    code, out, err = run(_fit(data, *SELECT, "--output", str(out_path), "--ledger",
                              str(ledger), "--dataset", "ds", "--seed", "4"), capsys)
    assert code == 0, err
    assert "plan: groups found privately (optimal partition selection, (0.5, 1e-06)-DP" \
        in out and "surely from 51 rows" in out
    assert "plan: the selection, then one rectangle per class on the kept keys only" in out
    record = json.loads(out_path.read_text())
    assert record["classes"] == ["a", "b"] and set(record["rectangles"]) == {"a", "b"}
    assert record["group_selection"]["groups_kept"] == 2
    runs = Ledger(str(ledger)).runs("ds")
    assert len(runs) == 1
    stats = record["statistics_privacy"]
    assert (runs[0].epsilon, runs[0].delta) == (record["privacy"]["epsilon"],
                                                record["privacy"]["delta"])
    assert runs[0].epsilon >= stats["epsilon"] + 0.5
    assert runs[0].epsilon == pytest.approx(stats["epsilon"] + 0.5, abs=1e-12)
    assert runs[0].delta == pytest.approx(stats["delta"] + 1e-6, rel=1e-12)
    assert "2 class(es) kept by the private selection" in out
    assert HIDDEN not in out + err


def test_the_kept_classes_fit_as_the_same_public_list_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers name their class as the command line does (1.0 → ``1``, 2.5 → ``2.5``):
    the selection's run fits each kept class exactly as ``--classes`` of those names."""
    path = tmp_path / "n.parquet"
    labels = [1.0] * 300 + [2.5] * 300 + [-0.0] * 150 + [0.0] * 150 + [7.0, float("nan")]
    pq.write_table(pa.table({"lab": labels, "x": [float(i % 9) for i in range(len(labels))],
                             "y": [float(i % 5) for i in range(len(labels))]}), path)
    got = {}
    for how in (SELECT, ["--classes", "0,1,2.5"]):
        out_path = tmp_path / f"{how[0]}.json"
        code, _, err = run(_fit(path, *how, "--output", str(out_path), "--seed", "9"),
                           capsys)
        assert code == 0, err
        got[how[0]] = json.loads(out_path.read_text())
    selected, listed = got["--select-groups"], got["--classes"]
    assert selected["classes"] == ["0", "1", "2.5"]  # 0.0 and -0.0: one class of 300
    assert selected["rectangles"] == listed["rectangles"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--positive-label", "a"], "--select-groups fits one rectangle per class found"),
    # s39-edges2: '1' (the default's value, given) was accepted here, refused with --classes
    (["--positive-label", "1"], "--select-groups fits one rectangle per class found"),
    (["--selection-delta", "0"], "--selection-delta must be a number in (0, 1)"),
])
def test_refused_before_anything_is_read_written_or_charged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
        message: str) -> None:
    ledger, out_path = tmp_path / "ledger", tmp_path / "o.json"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    code, _, err = run(_fit(tmp_path / "absent.parquet", *SELECT, *extra, "--output",
                            str(out_path), "--plot", str(tmp_path / "o.png"), "--ledger",
                            str(ledger), "--dataset", "ds"), capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not out_path.exists() and not (tmp_path / "o.png").exists()
    assert Ledger(str(ledger)).runs("ds") == []


def test_selection_options_need_select_groups(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(_fit(_table(tmp_path), "--classes", "a", "--selection-epsilon", "1",
                            "--output", str(tmp_path / "o.json")), capsys)
    assert code == 2 and "--selection-epsilon needs --select-groups" in err, err
    assert not (tmp_path / "o.json").exists()


def test_no_class_kept_releases_an_empty_result_charged_as_planned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "few.parquet"
    pq.write_table(pa.table({"lab": ["p", "q", "q"], "x": [1.0, 2.0, 3.0],
                             "y": [1.0, 2.0, 3.0]}), data)
    ledger, out_path, png = tmp_path / "ledger", tmp_path / "o.json", tmp_path / "o.png"
    table = tmp_path / "results"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    code, out, err = run(_fit(data, *SELECT, "--output", str(out_path), "--plot", str(png),
                              "--results-table", str(table), "--ledger", str(ledger),
                              "--dataset", "ds", "--seed", "2"), capsys)
    assert code == 0, err
    record = json.loads(out_path.read_text())
    assert record["classes"] == [] and record["rectangles"] == {}
    assert record["group_selection"]["groups_kept"] == 0
    assert "no class passed the private selection" in out
    assert png.read_bytes().startswith(b"\x89PNG") and not table.exists()
    assert f"no class released: no row appended to results table {table}" in out
    result = ClassesResult.from_json(record)  # reads back, with what a class would state
    assert result.classes == [] and result.features == ["x", "y"] and result.seeded
    runs = Ledger(str(ledger)).runs("ds")
    assert len(runs) == 1 and runs[0].status == "released"
    assert runs[0].epsilon == record["privacy"]["epsilon"] >= \
        record["statistics_privacy"]["epsilon"] + 0.5


def test_label_candidates_name_values_as_classes_and_leave_out_non_labels() -> None:
    assert label_candidates([(1.0, 2), (-0.0, 1), (0.0, 4), (float("nan"), 3),
                             (float("inf"), 1), (None, 5), (2.5, 1)], "numeric") == \
        {"1": 2, "0": 5, "2.5": 1}
    assert label_candidates([(True, 2), (False, 1), (None, 1)], "boolean") == \
        {"true": 2, "false": 1}
    assert label_candidates([(" a", 1), ("a", 2)], "string") == {" a": 1, "a": 2}
    assert label_candidates([(None, 3)], "null") == {}


def test_a_blank_label_is_no_candidate_so_a_kept_one_never_refuses_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An empty or blank text can be no class (a listed one is refused), so it is no
    candidate: were it one, the selection keeping it (400 rows: surely) made the run
    refuse after the draw and before the charge — whether a blank label passed the
    threshold shown for nothing, as often as asked (docs/privacy.md §18)."""
    assert label_candidates([("", 400), (" ", 3), ("\t", 2), ("a", 1)], "string") == \
        {"a": 1}
    data = tmp_path / "blank.parquet"
    labels = ["a"] * 400 + [""] * 400 + [" "] * 400
    x = [1.0 + (i % 3) for i in range(len(labels))]
    pq.write_table(pa.table({"lab": labels, "x": x, "y": [v / 2 for v in x]}), data)
    ledger, out_path = tmp_path / "ledger", tmp_path / "o.json"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    code, _out, err = run(_fit(data, *SELECT, "--output", str(out_path), "--ledger",
                               str(ledger), "--dataset", "ds", "--seed", "3"), capsys)
    assert code == 0, err
    record = json.loads(out_path.read_text())
    assert record["classes"] == ["a"] and record["group_selection"]["groups_kept"] == 1
    assert len(Ledger(str(ledger)).runs("ds")) == 1
    got = dprect.fit(np.column_stack([x, [v / 2 for v in x]]), np.array(labels),
                     epsilon=2, delta=1e-6, grid=GRID, seed=3, select_groups=True,
                     selection_epsilon=0.5, selection_delta=1e-6)  # the Python API's too
    assert got.classes == ["a"]


#: (ε_s, δ_s) at which a class of 4 rows is kept with probability about 1/2 or more, so the
#: seeds below draw both outcomes
LOOSE = ["--select-groups", "--selection-epsilon", "1", "--selection-delta", "0.05"]
SEEDS = range(8)


def _one_nan_table(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """One label value ``a`` of 4 rows, one of them with a NaN feature: the table, its
    features and its labels."""
    x = np.array([1.0, 2.0, 3.0, np.nan])
    X = np.column_stack([x, np.full(4, 2.5)])
    labels = np.array(["a"] * 4)
    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"lab": labels, "x": X[:, 0], "y": X[:, 1]}), path)
    return path, X, labels


def test_the_error_policy_refuses_before_the_draw_whatever_it_keeps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--invalid-rows error`` with ``--select-groups`` and no class listed: the check
    ran on the classes' requests only, after the draw, so a seed keeping no class released
    an empty record and one keeping ``a`` was refused — before the reservation, so every
    rerun showed the draw's outcome for nothing (its frequency: the class's row count).
    The check now reads every row before the draw: every seed is refused alike, in one
    line, nothing reserved or written; the Python API refuses before its charge."""
    data, X, labels = _one_nan_table(tmp_path)
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    said = ("dprect: error: feature 'x' has null, NaN or infinite values (refused under the "
            "'error' invalid-rows policy; the default 'drop' drops such rows)")
    for seed in SEEDS:
        out_path = tmp_path / f"o{seed}.json"
        code, out, err = run(_fit(data, *LOOSE, "--invalid-rows", "error", "--output",
                                  str(out_path), "--ledger", str(ledger), "--dataset", "ds",
                                  "--seed", str(seed)), capsys)
        assert (code, err.strip().splitlines()) == (2, [said]), (seed, out, err)
        assert not out_path.exists()
        budget = dprect.PrivacyBudget()
        with pytest.raises(dprect.InputDataError, match=r"^feature 'x' has null"):
            dprect.fit(X, labels, epsilon=2, delta=1e-6, grid=GRID, seed=seed,
                       select_groups=True, selection_epsilon=1, selection_delta=0.05,
                       invalid_rows="error", features=["x", "y"], budget=budget)
        assert budget.charges == [], seed
    assert Ledger(str(ledger)).events("ds") == []
    # the same seeds under the default drop policy do draw both outcomes (the test's
    # premise): some keep ``a``, some keep nothing
    kept = set()
    for seed in SEEDS:
        out_path = tmp_path / f"d{seed}.json"
        code, _, err = run(_fit(data, *LOOSE, "--output", str(out_path), "--seed",
                                str(seed)), capsys)
        assert code == 0, err
        kept.add(tuple(json.loads(out_path.read_text())["classes"]))
    assert kept == {(), ("a",)}
