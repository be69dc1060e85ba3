"""Plan-time limits through the command line (issue 10, point 9): a budget whose plan
would need an interior point above MAX_IP_SIZE (ε = 1e-12 once tried to allocate 6 PiB of
pads; ε = 1e-6 grew to 20 GB) ends `dprect plan` and `dprect fit` with exit code 2 and
one line naming epsilon — quickly, before any data is read or budget reserved, and with
nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]


def dprect(*args: str, cwd: Path) -> tuple[int, str, str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dprect", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - t0


def snapshot(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size
            for p in sorted(folder.rglob("*")) if p.is_file()}


def check_refused(code: int, out: str, err: str, secs: float, epsilon: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2, (code, out, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"epsilon={epsilon}" in lines[0] and "MAX_IP_SIZE" in lines[0]
    assert "raise epsilon" in lines[0].lower()
    assert secs < 30  # interpreter start-up included; the old failure took minutes or OOM


@pytest.fixture(scope="module")
def tiny_table(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("limits")
    gen = np.random.default_rng(0)
    x = gen.uniform(0, 1, (20, 2))
    pq.write_table(pa.table({"a": x[:, 0], "b": x[:, 1], "label": np.arange(20) % 2}),
                   folder / "tiny.parquet")
    return folder / "tiny.parquet"


@pytest.mark.parametrize("epsilon", ["1e-12", "1e-06"])
@pytest.mark.parametrize("method", ["auto", "randmargins", "composition"])
def test_plan_command_refuses(tmp_path, epsilon, method):
    before = snapshot(tmp_path)
    result = dprect("plan", "--epsilon", epsilon, "--delta", "1e-6", "--dims", "3",
                    "--grid", "0:1:4294967296", "--method", method, cwd=tmp_path)
    check_refused(*result, epsilon=epsilon)
    assert result[1] == ""  # no table printed
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("epsilon", ["1e-12", "1e-06"])
def test_fit_command_refuses_before_reading_or_writing(tiny_table, tmp_path, epsilon):
    out = tmp_path / "result.json"
    before = snapshot(tmp_path)
    result = dprect("fit", "--input", str(tiny_table), "--features", "a,b", "--label",
                    "label", "--epsilon", epsilon, "--delta", "1e-6", "--engine", "numpy",
                    "--output", str(out), "--seed", "1", cwd=tmp_path)
    check_refused(*result, epsilon=epsilon)
    assert not out.exists() and snapshot(tmp_path) == before


def test_fit_with_a_ledger_reserves_nothing(tiny_table, tmp_path):
    ledger = tmp_path / "ledger"
    code, _, err, _ = dprect("budget", "init", "--ledger", str(ledger), cwd=tmp_path)
    assert code == 0, err
    before = snapshot(tmp_path)
    result = dprect("fit", "--input", str(tiny_table), "--features", "a,b", "--label",
                    "label", "--epsilon", "1e-12", "--delta", "1e-6", "--output",
                    str(tmp_path / "result.json"), "--ledger", str(ledger), "--dataset", "ds",
                    "--cap-epsilon", "1", "--cap-delta", "1e-5", cwd=tmp_path)
    check_refused(*result, epsilon="1e-12")
    assert "run id" not in result[1]  # refused before a run began
    assert snapshot(tmp_path) == before  # the ledger gained no commit
