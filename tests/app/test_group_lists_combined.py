"""A public group list given beside a private selection (``--groups a,b,c
--select-groups``, the job's and the Python API's same options; docs/privacy.md §18,
Theorem S′): every listed group is released — an empty one and a listed key of one row
included, never through the threshold — and the OTHER keys of the data are selected
privately with the exact law of the selection alone (a one-row unlisted key kept iff
``randbits(96) < P_1``, P_1/2^96 <= δ_s); one charge of (ε + ε_s, δ + δ_s) to the
accountant and ONE ledger row, whatever the numbers of listed and selected groups; the
plan states both lists."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run
from selection_oracle import expected_kept

import dprect
from dprect.core.group_selection import plan_selection
from dprect.release.ledger import Ledger

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")
#: listed: a large key, a key of ONE row, a key with no row at all
LISTED = ["big00", "one000", "nothere"]
ONES = 400  # keys of one row: one000 … one399


def _table() -> pa.Table:
    keys = [f"big{i:02d}" for i in range(3) for _ in range(300)]
    keys += [f"one{i:03d}" for i in range(ONES)]
    return pa.table({"k": keys, "x": [float(i % 97) for i in range(len(keys))]})


def _expected_kept(seed: int, epsilon: float, delta: float) -> list[str]:
    """The exact law's oracle: the UNLISTED keys in the order of their text, each kept iff
    it has at least N rows or ``randbits(B) < P_k``, from the one stream of the run's
    seeded source (tests/core/test_group_selection.py's law, on the unlisted keys only)."""
    plan = plan_selection(epsilon, delta, "add-remove")
    counts = {"big01": 300, "big02": 300, **{f"one{i:03d}": 1 for i in range(1, ONES)}}
    return expected_kept(plan, counts, seed)


def test_listed_groups_are_released_and_the_others_selected_by_the_exact_law() -> None:
    budget = dprect.PrivacyBudget()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = dprect.describe(_table(), ["x"], epsilon=1.0, group_by="k", groups=LISTED,
                                 select_groups=True, selection_epsilon=1.0,
                                 selection_delta=0.05, seed=7, budget=budget)
    plan = plan_selection(1.0, 0.05, "add-remove")
    assert plan.keep_probability(1) == pytest.approx(0.05, rel=1e-12)  # P_1/2^96 <= δ
    kept = _expected_kept(7, 1.0, 0.05)
    assert 5 < len(kept) - 2 < 60  # some one-row keys kept (about 0.05 x 399): not vacuous
    assert result.groups == [*LISTED, *kept]  # listed first, each released
    assert "one000" not in kept and "big00" not in kept  # a listed key takes no draw
    rows = {r["group"]: r for r in result.to_dict()["results"]}
    assert set(rows) == {*LISTED, *kept}  # the empty listed group has its cell too
    selection = result.to_dict()["group_selection"]
    assert (selection["groups_kept"], selection["groups_listed"]) == (len(kept), 3)
    assert [c.guarantee for c in budget.charges] == [result.guarantee]  # ONE charge
    assert result.guarantee.epsilon == pytest.approx(
        result.result.guarantee.epsilon + 1.0, abs=1e-12)
    assert result.guarantee.delta == pytest.approx(0.05, rel=1e-12)


def test_one_ledger_row_for_public_selected_or_both(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(_table(), path)
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    select = ["--select-groups", "--selection-epsilon", "1", "--selection-delta", "0.05"]
    listed = ["--groups", ",".join(LISTED)]
    records, outs = {}, {}
    for name, extra in (("public", listed), ("selected", select), ("both", listed + select)):
        out_path = tmp_path / f"{name}.json"
        code, out, err = run(["describe", "--input", str(path), "--columns", "x",
                              "--epsilon", "1", "--group-by", "k", *extra, "--seed", "7",
                              "--output", str(out_path), "--ledger", str(ledger),
                              "--dataset", name, "--quiet"], capsys)
        assert code == 0, err
        records[name], outs[name] = json.loads(out_path.read_text()), out
        runs = Ledger(str(ledger)).runs(name)
        assert len(runs) == 1  # ONE row, whatever the number of groups
        assert (runs[0].epsilon, runs[0].delta) == (records[name]["privacy"]["epsilon"],
                                                    records[name]["privacy"]["delta"])
    both, selected = records["both"], records["selected"]
    assert both["groups"] == [*LISTED, *_expected_kept(7, 1.0, 0.05)]
    assert both["privacy"] == selected["privacy"]  # the listed groups add nothing
    assert both["statistics_privacy"] == records["public"]["privacy"]
    assert both["privacy"]["delta"] == pytest.approx(0.05, rel=1e-12)
    assert "plan: 3 listed group(s) released whatever their rows (public: no selection, " \
        "no delta spent on them); every OTHER key of the data found privately" in outs["both"]
    assert "plan: groups found privately" in outs["both"]


def test_a_listed_value_the_column_cannot_hold_is_refused_before_the_charge(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "n.parquet"
    pq.write_table(pa.table({"k": [1, 2, 2], "x": [1.0, 2.0, 3.0]}), path)
    ledger, out_path = tmp_path / "ledger", tmp_path / "o.json"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    code, _, err = run(["describe", "--input", str(path), "--columns", "x", "--epsilon",
                        "1", "--group-by", "k", "--groups", "1,abc", "--select-groups",
                        "--selection-epsilon", "1", "--selection-delta", "0.05",
                        "--output", str(out_path), "--ledger", str(ledger), "--dataset",
                        "ds"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "'abc'" in err, err
    assert not out_path.exists() and Ledger(str(ledger)).runs("ds") == []


def test_plan_only_states_both_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    code, out, err = run(["describe", "--input", str(tmp_path / "absent.parquet"),
                          "--columns", "x", "--epsilon", "1", "--group-by", "k", "--groups",
                          ",".join(LISTED), "--select-groups", "--selection-epsilon", "1",
                          "--selection-delta", "0.05", "--plan-only"], capsys)
    assert code == 0, err
    assert "plan: groups found privately" in out
    assert "plan: 3 listed group(s) released whatever their rows" in out
