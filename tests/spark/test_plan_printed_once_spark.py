"""The budget is planned exactly once per run on Spark (issue 11): ``dprect fit --engine
spark`` (both Spark strategy) and ``jobs/fit_rectangle.py`` (with a ledger)."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
import fit_rectangle  # noqa: E402
from pin_data import FEATURES, FIT, GRID, cli_args, write_parquet  # noqa: E402
from plan_spy import count_plans  # noqa: E402

from dprect.app.cli import main  # noqa: E402
from dprect.release.ledger import Ledger  # noqa: E402


@pytest.mark.parametrize("plan", ["prefetch", "rounds"])
def test_cli_spark_plans_once(spark, tmp_path, monkeypatch, plan):
    data = write_parquet(tmp_path)
    calls = count_plans(monkeypatch)
    assert main(cli_args(data, tmp_path / "r.json", "--engine", "spark", "--plan", plan)) == 0
    assert len(calls) == 1


def test_fit_job_plans_once(spark, tmp_path, monkeypatch, capsys):
    data = write_parquet(tmp_path)
    Ledger(tmp_path / "ledger").init()
    argv = ["--set", f"input={data}", "--set", f"features=[{', '.join(FEATURES)}]",
            "--set", "label=label", "--set", f"grid={GRID}",
            "--set", f"epsilon={FIT['epsilon']}", "--set", f"delta={FIT['delta']}",
            "--set", f"seed={FIT['seed']}", "--set", f"output={tmp_path / 'r.json'}",
            "--set", f"plot={tmp_path / 'r.png'}",
            "--set", f"results_table={tmp_path / 'results'}",
            "--set", f"ledger={tmp_path / 'ledger'}", "--set", "dataset=ds"]
    calls = count_plans(monkeypatch)
    assert fit_rectangle.main(argv, spark) == 0, capsys.readouterr().err
    assert len(calls) == 1
