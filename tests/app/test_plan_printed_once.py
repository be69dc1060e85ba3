"""The budget is planned exactly once per run (issue 11): ``dprect fit`` (numpy engine,
with and without a ledger, and a replay), ``dprect plan`` and :func:`dprect.fit`. The
Spark engine and the fit job: ``tests/spark/test_plan_printed_once_spark.py``."""

from __future__ import annotations

import json

import pytest
from pin_data import FEATURES, FIT, GRID, cli_args, demo_slice, write_parquet
from plan_spy import count_plans

import dprect
from dprect.app.cli import main


def test_cli_numpy_plans_once(tmp_path, monkeypatch, capsys):
    data = write_parquet(tmp_path)
    calls = count_plans(monkeypatch)
    assert main(cli_args(data, tmp_path / "a.json")) == 0
    assert len(calls) == 1 and calls[0]["epsilon"] == FIT["epsilon"]


def test_cli_numpy_ledger_run_and_replay_plan_once(tmp_path, monkeypatch, capsys):
    data = write_parquet(tmp_path)
    assert main(["budget", "init", "--ledger", str(tmp_path / "ledger")]) == 0
    calls = count_plans(monkeypatch)
    ledger = ["--ledger", str(tmp_path / "ledger"), "--dataset", "ds", "--run-id", "r1"]
    for n, out in enumerate(["a.json", "b.json"], start=1):  # a run, then its replay
        assert main(cli_args(data, tmp_path / out, *ledger)) == 0, capsys.readouterr().err
        assert len(calls) == n
    assert "released before" in capsys.readouterr().out
    assert json.loads((tmp_path / "a.json").read_text()) == json.loads(
        (tmp_path / "b.json").read_text())


def test_plan_command_and_api_plan_once(monkeypatch, capsys):
    calls = count_plans(monkeypatch)
    assert main(["plan", "--epsilon", "1", "--delta", "1e-6", "--dims", "2"]) == 0
    assert len(calls) == 1
    X, y = demo_slice()
    with pytest.warns(UserWarning, match="fixed seed"):
        dprect.fit(X[:500], y[:500], grid=GRID, features=FEATURES, **FIT)
    assert len(calls) == 2
