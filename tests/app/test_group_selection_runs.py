"""Groups found privately on the command line, in a job and in the Python API
(docs/privacy.md §18): the plan states the threshold, P(keep | k rows) and the
composition; the ledger charges ONE row of (ε + ε_s, δ + δ_s) whatever the number of keys;
bad combinations are refused before anything is read or charged; no key's text is printed
but the released ones'. A public list given beside the selection:
tests/app/test_group_lists_combined.py."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import job_argv, run

import dprect
from dprect.core.group_selection import SelectedResult
from dprect.release.ledger import Ledger

REPO = Path(__file__).resolve().parents[2]
SELECT = ["--group-by", "k", "--select-groups", "--selection-epsilon", "0.5",
          "--selection-delta", "1e-6"]
#: the keys of one row (a key of the table's text that must never be printed)
HIDDEN = "hiddenkey"


def _table(tmp_path: Path, big: int = 70) -> Path:
    """``big`` keys of 300 rows (kept surely: N = 51 at (0.5, 1e-6)) and 40 keys of one
    row named ``hiddenkey…`` (each kept with probability 1e-6)."""
    keys = [f"big{i:02d}" for i in range(big) for _ in range(300)]
    keys += [f"{HIDDEN}{i}" for i in range(40)]
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"k": keys, "x": [float(i % 97) for i in range(len(keys))]}),
                   path)
    return path


def test_plan_only_states_the_threshold_the_keep_law_and_the_composition(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["describe", "--input", str(tmp_path / "absent.parquet"),
                          "--columns", "x", "--epsilon", "1", *SELECT, "--plan-only"],
                         capsys)
    assert code == 0, err
    lines = out.splitlines()
    selection = next(ln for ln in lines if ln.startswith("plan: groups found privately"))
    assert "(0.5, 1e-06)-DP" in selection and "surely from 51 rows" in selection
    assert "1: 1e-06" in selection and "a key of 1 row with probability 1e-06" in selection
    assert lines[-1].startswith("plan: the selection, then the statistics") and \
        "guarantee (1.5, 1e-06)-DP" in lines[-1] and "charged once" in lines[-1]


def test_one_ledger_row_of_both_budgets_whatever_the_number_of_keys(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _table(tmp_path)
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    out_path = tmp_path / "o.json"
    code, out, err = run(["aggregate", "--statistics", "count,mean", "--input", str(data),
                          "--columns", "x", "--epsilon", "1", *SELECT, "--output",
                          str(out_path), "--ledger", str(ledger), "--dataset", "ds",
                          "--seed", "4", "--quiet"], capsys)
    assert code == 0, err
    record = json.loads(out_path.read_text())
    assert record["groups"] == [f"big{i:02d}" for i in range(70)]  # 1-row keys dropped
    assert record["group_selection"]["groups_kept"] == 70
    assert record["group_selection"]["always_kept_from_rows"] == 51
    runs = Ledger(str(ledger)).runs("ds")
    assert len(runs) == 1
    stats = record["statistics_privacy"]
    assert (runs[0].epsilon, runs[0].delta) == (record["privacy"]["epsilon"], 1e-6)
    assert runs[0].epsilon == pytest.approx(stats["epsilon"] + 0.5, abs=1e-12)
    assert runs[0].epsilon >= stats["epsilon"] + 0.5
    # more than LISTED_CELLS: a few summary lines; no hidden key printed anywhere
    assert "released 70 cells: 70 group(s) x 1 column(s), statistics bounds, count, mean" \
        in out
    assert "groups found privately: 70 kept by the selection" in out
    assert HIDDEN not in out + err


def test_the_printed_lines_name_only_released_keys(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _table(tmp_path, big=3)
    code, out, err = run(["describe", "--input", str(data), "--columns", "x", "--epsilon",
                          "1", *SELECT, "--output", str(tmp_path / "o.json"), "--seed", "1"],
                         capsys)
    assert code == 0, err
    assert "group 'big00', x:" in out and "group 'big02', x:" in out
    assert HIDDEN not in out + err


@pytest.mark.parametrize(("extra", "message"), [
    (["--groups", "big00", "--groups-file", "listed.txt"], "not both"),
    (["--selection-delta", "0"], "--selection-delta must be a number in (0, 1)"),
])
def test_bad_combinations_are_refused_before_anything_is_read_or_charged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
        message: str) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    out_path = tmp_path / "o.json"
    code, _, err = run(["describe", "--input", str(tmp_path / "absent.parquet"),
                        "--columns", "x", "--epsilon", "1", *SELECT, *extra, "--output",
                        str(out_path), "--ledger", str(ledger), "--dataset", "ds"], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not out_path.exists() and Ledger(str(ledger)).runs("ds") == []


def test_selection_options_need_select_groups(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["bounds", "--input", str(_table(tmp_path)), "--columns", "x",
                        "--epsilon", "1", "--group-by", "k", "--groups", "big00",
                        "--selection-epsilon", "1", "--output", str(tmp_path / "o.json")],
                       capsys)
    assert code == 2 and "--selection-epsilon needs --select-groups" in err, err


def test_no_key_kept_releases_an_empty_result(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "few.parquet"
    pq.write_table(pa.table({"k": ["a", "b", "c"], "x": [1.0, 2.0, 3.0]}), data)
    out_path, table = tmp_path / "o.json", tmp_path / "o.csv"
    code, out, err = run(["bounds", "--input", str(data), "--columns", "x", "--epsilon",
                          "1", *SELECT, "--output", str(out_path), "--table", str(table),
                          "--seed", "2"], capsys)
    assert code == 0, err
    assert json.loads(out_path.read_text())["groups"] == []
    assert "no group passed the private selection" in out
    assert table.read_text().splitlines() == ["group,column,lower,upper,rank_error"]


def test_the_job_and_the_command_keep_the_same_keys(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "jobs"))
    import describe as job

    from dprect.engines.grouped import NumpyGroupedRoute

    data = _table(tmp_path, big=3)
    argv = job_argv(REPO / "conf" / "describe.yaml", f"input={data}", "columns=[x]",
                    "group_by=k", "groups=null", "table=null", "plot=null",
                    "select_groups=true", "selection_epsilon=0.5", "selection_delta=1e-6",
                    "epsilon=1", f"output={tmp_path / 'job.json'}", "seed=3")
    assert job.main(argv, route=NumpyGroupedRoute()) == 0
    code, _, err = run(["describe", "--input", str(data), "--columns", "x", "--epsilon",
                        "1", *SELECT, "--output", str(tmp_path / "cli.json"), "--seed",
                        "3"], capsys)
    assert code == 0, err
    assert (tmp_path / "job.json").read_text() == (tmp_path / "cli.json").read_text()


def test_the_python_api_charges_the_composed_guarantee_once(tmp_path: Path) -> None:
    table = pq.read_table(_table(tmp_path, big=3))
    budget = dprect.PrivacyBudget()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = dprect.describe(table, ["x"], epsilon=1.0, group_by="k",
                                 select_groups=True, selection_epsilon=0.5,
                                 selection_delta=1e-6, seed=3, budget=budget)
    assert isinstance(result, SelectedResult)
    assert result.groups == ["big00", "big01", "big02"]
    assert len(budget.charges) == 1
    charged = budget.charges[0].guarantee
    assert charged == result.guarantee
    assert (charged.epsilon, charged.delta) == (result.result.guarantee.epsilon + 0.5, 1e-6)
    assert result.to_dict()["group_selection"]["groups_kept"] == 3
    with pytest.raises(ValueError, match="groups is empty"):
        dprect.describe(table, ["x"], epsilon=1.0, group_by="k", groups=[],
                        select_groups=True, selection_epsilon=0.5, selection_delta=1e-6)
