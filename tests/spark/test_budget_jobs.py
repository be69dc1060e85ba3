"""The fit job under a budget ledger: fail closed when killed, idempotent retries, and bad
input that spends nothing.

* killed right after its reservation (fault injection by a test-only entry,
  ``tests/spark/fault_fit_job.py``) or in the middle of a Spark stage,
  the job leaves its reservation charged and nothing else: no result, no PNG, no temporary
  file, no results-table row;
* re-running the killed run id completes it under the same charge, with one results-table
  row; running it once more replays the recorded result and spends nothing;
* bad input ends the job with exit 2 before anything is reserved or written;
* a missing ledger (never initialised, or its ``_delta_log/`` deleted) or a damaged one (a
  zero-byte commit) ends the job with exit 2 and one line before Spark reads anything, and
  nothing is written — the job never creates a ledger.

The kill tests run ``jobs/fit_rectangle.py`` in its own process group (driver and JVM) and
SIGKILL the whole group; the other runs call ``main(argv, spark)`` with the shared session.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

import fit_rectangle  # noqa: E402

from dprect.app.api import resolve_domains  # noqa: E402
from dprect.app.jobs_support import EXIT_BAD_INPUT  # noqa: E402
from dprect.core.planner import plan  # noqa: E402
from dprect.release.guarded import without_request  # noqa: E402
from dprect.release.ledger import Budget, Ledger  # noqa: E402
from dprect.release.results_table import read_results  # noqa: E402

#: the test-only entry that pauses the job after its reservation (see its docstring)
FAULT_JOB = Path(__file__).resolve().parent / "fault_fit_job.py"
PAUSE_MARKER = "dprect-fault: paused after reserve"  # as fault_fit_job.PAUSE_MARKER
FEATURES = ["f0", "f1", "f2"]
GRID = "0:1000:4096"
EPSILON, DELTA = 1.0, 1e-6
DATASET = "ds"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BIG_ROWS = 2_000_000  # the fit takes several seconds, so a kill lands inside a Spark stage


def charge() -> Budget:
    """What the job reserves: the public plan's guarantee."""
    g = plan(epsilon=EPSILON, delta=DELTA,
             domains=resolve_domains(GRID, FEATURES)).chosen.guarantee
    return Budget(g.epsilon, g.delta)


def write_table(path: Path, n: int, seed: int, *, label=None, row_group_size=None) -> Path:
    gen = np.random.default_rng(seed)
    X = gen.uniform(0, 1000, (n, 3))
    y = ((X > 200) & (X < 700)).all(axis=1).astype(np.int32) if label is None else label
    cols = {f: X[:, j] for j, f in enumerate(FEATURES)}
    pq.write_table(pa.table({**cols, "label": y}), path, row_group_size=row_group_size)
    return path


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("budget_jobs")
    n = 2000
    return {
        "good": write_table(d / "good.parquet", n, 1),
        "no_positives": write_table(d / "no_pos.parquet", n, 2,
                                    label=np.zeros(n, np.int32)),
        "label_not_01": write_table(d / "label2.parquet", n, 3,
                                    label=(np.arange(n) % 3).astype(np.int32)),
    }


@pytest.fixture(scope="module")
def big_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_table(tmp_path_factory.mktemp("budget_big") / "big.parquet", BIG_ROWS, 7,
                       row_group_size=250_000)


def job_config(tmp: Path, table: Path, run_id: str, *, init_ledger: bool = True,
               **fit: object) -> Path:
    """A YAML config: ledger in tmp/ledger (initialised with ``Ledger.init``, as
    ``dprect budget init`` does, unless ``init_ledger`` is False), every output in tmp/out
    (created empty)."""
    out = tmp / "out"
    out.mkdir(exist_ok=True)
    if init_ledger and not (tmp / "ledger").exists():
        Ledger(tmp / "ledger").init()
    doc = {
        "spark": {"master": "local[2]", "log_level": "ERROR",
                  "conf": {"spark.local.dir": str(tmp / "spark-local")}},
        "fit": {"input": str(table), "features": FEATURES, "label": "label", "grid": GRID,
                "epsilon": EPSILON, "delta": DELTA, "ledger": str(tmp / "ledger"),
                "dataset": DATASET, "run_id": run_id, "output": str(out / "result.json"),
                "plot": str(out / "rect.png"), "results_table": str(out / "results"),
                **fit},
    }
    path = tmp / "job.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


# -- a job in its own process group -----------------------------------------------------------
def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state, ppid, pgrp, ...
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(entry.name))
    return pids


class Job:
    """``python jobs/fit_rectangle.py --config CFG`` (or another ``script`` taking the
    same arguments) in a new session; stdout is collected line by line in the
    background, stderr goes to a file. Its ``TMPDIR`` is a folder of its own that
    :meth:`cleanup` removes: a killed job cannot remove the temporary folders it made
    (its Spark SQL warehouse, ``dprect-warehouse-*``), which each run of the suite left
    in /tmp."""

    def __init__(self, tmp: Path, config: Path,
                 script: Path = REPO / "jobs" / "fit_rectangle.py") -> None:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
        self.tmpdir = tmp / "job-tmp"
        self.tmpdir.mkdir(exist_ok=True)
        environ.update({"PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
                        "PYTHONUNBUFFERED": "1", "TMPDIR": str(self.tmpdir)})
        self.stderr_path = tmp / "job.stderr"
        self._stderr = self.stderr_path.open("w")
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, str(script), "--config", str(config)],
            cwd=tmp, env=environ, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
            start_new_session=True)
        self.pgid = self.proc.pid  # the session leader's pid is the group id
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def diagnostics(self) -> str:
        return f"stdout:\n{self.output}\nstderr:\n{self.stderr_path.read_text()[-3000:]}"

    def wait_for(self, text: str, timeout: float) -> None:
        """Block until a stdout line contains ``text``; fail if the job ends or times out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in ln for ln in self.lines):
                return
            if self.proc.poll() is not None:
                self._reader.join(timeout=5)
                if any(text in ln for ln in self.lines):
                    return
                pytest.fail(f"the job ended (exit {self.proc.returncode}) before printing "
                            f"{text!r}\n{self.diagnostics()}")
            time.sleep(0.05)
        pytest.fail(f"no {text!r} after {timeout:.0f} s\n{self.diagnostics()}")

    def kill(self) -> list[int]:
        """SIGKILL the whole group (driver and JVM); return the pids it had."""
        members = _group_members(self.pgid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        return members

    def cleanup(self) -> None:
        if _group_members(self.pgid) or self.proc.poll() is None:
            self.kill()
        self._reader.join(timeout=10)
        self._stderr.close()
        shutil.rmtree(self.tmpdir, ignore_errors=True)


def kill_and_check_group(job: Job) -> None:
    members = job.kill()
    assert job.proc.returncode == -signal.SIGKILL
    assert len(members) >= 2, "expected the driver and its JVM in the job's process group"
    deadline = time.monotonic() + 15
    while _group_members(job.pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _group_members(job.pgid) == [], "a process of the killed job survived"
    job._reader.join(timeout=10)


def assert_nothing_published(tmp: Path) -> None:
    out = tmp / "out"
    left = sorted(p.name for p in out.iterdir())
    assert left == [], f"the killed job left files in its output folder: {left}"


def assert_charged_not_released(tmp: Path, run_id: str) -> None:
    ledger = Ledger(tmp / "ledger")
    record = ledger.run(DATASET, run_id)
    assert record is not None and record.status == "reserved" and record.result is None
    assert ledger.spent(DATASET) == charge()
    kinds = sorted(e["event"] for e in ledger.events(DATASET))
    assert kinds == ["reserve"]


# -- killed after the reservation -----------------------------------------------------------
@pytest.mark.slow
def test_killed_after_reserve_stays_charged_and_publishes_nothing(
        tables: dict[str, Path], tmp_path: Path) -> None:
    config = job_config(tmp_path, tables["good"], "crash-after-reserve")
    job = Job(tmp_path, config, script=FAULT_JOB)
    try:
        job.wait_for(PAUSE_MARKER, timeout=240)
        kill_and_check_group(job)
    finally:
        job.cleanup()
    assert not any("] fitting " in ln for ln in job.lines), job.output  # compute never ran
    assert_charged_not_released(tmp_path, "crash-after-reserve")
    assert_nothing_published(tmp_path)  # no JSON, no PNG, no .tmp, no results table


# -- killed inside a Spark stage, then retried ------------------------------------------------
@pytest.mark.slow
def test_killed_during_fit_fails_closed_and_retry_completes_once(
        spark, big_table: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = "killed-mid-fit"
    # the rounds plan runs Spark jobs after the reservation (prefetch reads the table
    # before it, then fits on the driver), so the kill lands inside a Spark stage
    config = job_config(tmp_path, big_table, run_id, strategy="rounds")
    job = Job(tmp_path, config)
    try:
        job.wait_for("] fitting ", timeout=300)
        time.sleep(1.5)
        kill_and_check_group(job)
    finally:
        job.cleanup()
    if any("result written" in ln for ln in job.lines):
        pytest.fail("the fit finished before the kill: make the table bigger\n"
                    + job.diagnostics())
    assert_charged_not_released(tmp_path, run_id)
    assert_nothing_published(tmp_path)
    out = tmp_path / "out"

    # retry the died run id to completion: one charge, one row
    capsys.readouterr()
    assert fit_rectangle.main(["--config", str(config)], spark) == 0
    printed = capsys.readouterr().out
    assert f"charged to dataset '{DATASET}'" in printed and "released before" not in printed
    result = json.loads((out / "result.json").read_text())
    assert result["features"] == FEATURES
    assert (out / "rect.png").read_bytes()[:8] == PNG_MAGIC
    ledger = Ledger(tmp_path / "ledger")
    record = ledger.run(DATASET, run_id)
    assert record.status == "released" and without_request(record.result) == result
    assert ledger.spent(DATASET) == charge()  # charged once
    kinds = sorted(e["event"] for e in ledger.events(DATASET))
    assert kinds == ["release", "reserve"]
    rows = read_results(out / "results").to_pylist()
    assert [r["run_id"] for r in rows] == [run_id]
    assert rows[0]["lower"] == result["lower"] and rows[0]["upper"] == result["upper"]

    # once more: the recorded result is published again, nothing is spent or appended
    (out / "result.json").unlink()
    (out / "rect.png").unlink()
    assert fit_rectangle.main(["--config", str(config)], spark) == 0
    printed = capsys.readouterr().out
    assert f"run id {run_id} was released before" in printed and "nothing was spent" in printed
    assert json.loads((out / "result.json").read_text()) == result
    assert (out / "rect.png").read_bytes()[:8] == PNG_MAGIC
    assert [r["run_id"] for r in read_results(out / "results").to_pylist()] == [run_id]
    assert ledger.spent(DATASET) == charge()
    assert sorted(e["event"] for e in ledger.events(DATASET)) == ["release", "reserve"]
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


# -- bad input: exit 2, nothing reserved, nothing written ---------------------------------------
BAD = {
    "missing column": ("good", {"features": ["f0", "nope", "f2"]}, r"no column.*'nope'"),
    "null feature, invalid_rows error": ("nulls", {"invalid_rows": "error"},
                                         r"feature 'f1' .*null"),
    # two classes a boolean label column reads as one, named by the column's kind from its
    # schema (was "a numeric column": the list's check ran before the schema was read)
    "boolean label, classes yes,true": ("boolean", {"classes": "yes,true"},
                                        r"'yes' and 'true' .*'label' \(a boolean column\)"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_spends_and_writes_nothing(
        case: str, spark, tables: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    key, fit, pattern = BAD[case]
    if key == "nulls":
        gen = np.random.default_rng(4)
        X = gen.uniform(0, 1000, (200, 3))
        f1 = pa.array([None if i == 17 else v for i, v in enumerate(X[:, 1])], pa.float64())
        pq.write_table(pa.table({"f0": X[:, 0], "f1": f1, "f2": X[:, 2],
                                 "label": (np.arange(200) % 2).astype(np.int32)}),
                       tmp_path / "nulls.parquet")
        table = tmp_path / "nulls.parquet"
    elif key == "boolean":
        X = np.random.default_rng(4).uniform(0, 1000, (200, 3))
        pq.write_table(pa.table({"f0": X[:, 0], "f1": X[:, 1], "f2": X[:, 2],
                                 "label": np.arange(200) % 2 == 0}),
                       tmp_path / "boolean.parquet")
        table = tmp_path / "boolean.parquet"
    else:
        table = tables[key]
    config = job_config(tmp_path, table, f"bad-{key}", **fit)
    capsys.readouterr()
    code = fit_rectangle.main(["--config", str(config)], spark)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == EXIT_BAD_INPUT, err
    assert len(lines) == 1 and lines[0].startswith("fit_rectangle: error: "), err
    assert re.search(pattern, lines[0]), lines[0]
    assert Ledger(tmp_path / "ledger").events(DATASET) == []
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == []  # no JSON/PNG/table


@pytest.mark.parametrize("state", ["missing", "deleted log", "zero-byte commit"])
def test_missing_or_damaged_ledger_ends_the_job_before_anything(
        state: str, spark, tables: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger"
    config = job_config(tmp_path, tables["good"], "r-ledger", init_ledger=state != "missing")
    if state != "missing":
        Ledger(ledger).reserve(DATASET, "earlier", epsilon=0.5, delta=1e-8,
                               method="composition", features=FEATURES, bound="b",
                               neighbouring="add-remove")
    if state == "deleted log":
        shutil.rmtree(ledger / "_delta_log")
    elif state == "zero-byte commit":
        (ledger / "_delta_log" / f"{1:020d}.json").write_bytes(b"")
    before = sorted(p.name for p in ledger.rglob("*")) if ledger.exists() else None
    capsys.readouterr()
    code = fit_rectangle.main(["--config", str(config)], spark)
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert code == EXIT_BAD_INPUT, captured
    assert len(lines) == 1 and lines[0].startswith("fit_rectangle: error: "), captured.err
    expected = {"missing": f"no budget ledger at {ledger}; create it once with "
                           f"`dprect budget init --ledger {ledger}`",
                "deleted log": f"no budget ledger at {ledger}, but the folder is not empty",
                "zero-byte commit": f"the budget ledger at {ledger} is damaged"}[state]
    assert expected in lines[0], lines[0]
    assert "\x1b" not in captured.err and "reading " not in captured.out, captured
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == []
    after = sorted(p.name for p in ledger.rglob("*")) if ledger.exists() else None
    assert after == before  # never created, never written


@pytest.mark.parametrize("key", ["no_positives", "label_not_01"])
def test_tables_once_refused_for_their_values_are_ordinary_charged_runs(
        key: str, spark, tables: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """No positives, or labels other than 0/1, were refused before issue 10 (point 1): a
    refusal that depends on the rows is not private, so they are ordinary runs, charged
    like any other."""
    config = job_config(tmp_path, tables[key], f"ordinary-{key}")
    capsys.readouterr()
    assert fit_rectangle.main(["--config", str(config)], spark) == 0, capsys.readouterr()
    assert (tmp_path / "out" / "result.json").exists()
    assert Ledger(tmp_path / "ledger").spent(DATASET) == charge()


def test_bad_input_messages_carry_no_counts(spark, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The job promises to print no counts: a refused table (the opt-in
    ``invalid_rows: error``) must not reveal how many rows were bad (here 666 of 2000 have
    a null feature). (Regression: the first Spark validation printed "has 666 other
    value(s), e.g. 2".)"""
    n, bad = 2000, np.arange(2000) % 3 == 2
    gen = np.random.default_rng(5)
    X = gen.uniform(0, 1000, (n, 3))
    f1 = pa.array([None if b else v for b, v in zip(bad, X[:, 1], strict=True)], pa.float64())
    table = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"f0": X[:, 0], "f1": f1, "f2": X[:, 2],
                             "label": (np.arange(n) % 2).astype(np.int32)}), table)
    config = job_config(tmp_path, table, "bad-count", invalid_rows="error")
    capsys.readouterr()
    assert fit_rectangle.main(["--config", str(config)], spark) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "f1" in err
    assert str(int(bad.sum())) not in err and "e.g." not in err, err
    assert Ledger(tmp_path / "ledger").events(DATASET) == []


@pytest.mark.parametrize("text", ["fit: [unclosed", "fit:\n  epsilon: one\n", "- just a list\n"],
                         ids=["not YAML", "wrong type", "not a mapping"])
def test_unreadable_config_ends_the_job_before_anything_is_written(tmp_path, capsys, text):
    """A config the job cannot use: exit 2, one line, no output and no ledger."""
    config = tmp_path / "job.yaml"
    config.write_text(text)
    out = tmp_path / "out"
    code = fit_rectangle.main(["--config", str(config),
                               "--set", f"fit.ledger={out / 'ledger'}",
                               "--set", f"fit.output={out / 'result.json'}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_BAD_INPUT
    assert len(err) == 1 and err[0].startswith("fit_rectangle: error:"), err
    assert not out.exists()
