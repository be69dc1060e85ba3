"""``dprect fit --ledger`` and ``dprect budget``: spend before release, from the command line.

Numpy engine only (fast). Properties checked:

* ``budget init`` creates the ledger once; every other command refuses a missing ledger
  (never creates one), a deleted ``_delta_log/`` and a damaged one (a zero-byte commit),
  with one line, exit 2, nothing written;
* the cap committed last counts, whatever the writers' clocks say;
* concurrent ``dprect fit`` processes against one cap: exactly as many runs as the cap
  admits are charged and publish, the others end with exit 2 and write nothing;
* a released run id is replayed (same rectangle, nothing spent); a failed or crashed run
  id is retried under its one charge;
* ``budget set-cap`` / ``budget show`` (text and JSON) report spent, cap, remaining, runs;
* bad input ends with one clear line, exit 2, no result file and no ledger row; the
  default ``drop`` policy makes invalid rows irrelevant, values off the grid are clamped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run
from special_paths import KINDS, special

from dprect.app.api import resolve_domains
from dprect.core.planner import plan
from dprect.release.guarded import without_request
from dprect.release.ledger import Ledger

GRID = "0:10:1024"
EPSILON, DELTA = 1.0, 1e-7
N = 2000
#: delta-rs native threads can abort the interpreter's teardown (exit 134); the jobs
#: avoid it with dprect.app.jobs_support.exit_now, ``python -m dprect`` does not (a bug).
ABORT = "terminate called without an active exception"


def charge(epsilon: float = EPSILON, delta: float = DELTA, grid: str = GRID):
    """The (ε, δ) the CLI reserves for a run: the public plan's guarantee."""
    return plan(epsilon=epsilon, delta=delta,
                domains=resolve_domains(grid, ["a", "b"])).chosen.guarantee


def _clean(gen: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    X = gen.uniform(0, 10, (n, 2))
    y = ((X > 2) & (X < 7)).all(axis=1).astype(np.int64)
    return {"a": X[:, 0], "b": X[:, 1], "label": y}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Small Parquet tables: a good one and one per kind of bad input."""
    d = tmp_path_factory.mktemp("budget_cli")
    cols = _clean(np.random.default_rng(1), N)
    pq.write_table(pa.table(cols), d / "good.parquet")

    def with_a(values: list) -> pa.Table:
        return pa.table({"a": pa.array(values, pa.float64()), "b": cols["b"],
                         "label": cols["label"]})

    a = list(cols["a"])
    pq.write_table(with_a([*a[:5], None, *a[6:]]), d / "null.parquet")
    pq.write_table(with_a([*a[:5], float("nan"), *a[6:]]), d / "nan.parquet")
    pq.write_table(with_a([*a[:5], float("inf"), *a[6:]]), d / "posinf.parquet")
    pq.write_table(with_a([*a[:5], float("-inf"), *a[6:]]), d / "neginf.parquet")
    label = cols["label"].copy()
    label[3] = 2
    pq.write_table(pa.table({**cols, "label": label}), d / "label2.parquet")
    label_null = pa.array([None if i == 3 else int(v) for i, v in enumerate(cols["label"])],
                          pa.int64())
    pq.write_table(pa.table({**cols, "label": label_null}), d / "label_null.parquet")
    pq.write_table(pa.table({**cols, "label": np.zeros(N, np.int64)}), d / "no_pos.parquet")
    pq.write_table(pa.table({k: v[:0] for k, v in cols.items()}), d / "empty.parquet")
    return d




def fit_argv(data: Path, tmp: Path, *extra: str, table: str = "good.parquet",
             output: str = "result.json") -> list[str]:
    return ["fit", "--input", str(data / table), "--features", "a,b", "--label", "label",
            "--epsilon", str(EPSILON), "--delta", str(DELTA), "--grid", GRID,
            "--output", str(tmp / output), "--ledger", str(tmp / "ledger"),
            "--dataset", "ds", *extra]


def show(tmp: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    code, out, err = run(["budget", "show", "ds", "--ledger", str(tmp / "ledger"),
                          "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(autouse=True)
def ledger(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Every test gets an initialised ledger at tmp_path/ledger (``dprect budget init``)."""
    path = tmp_path / "ledger"
    code, out, err = run(["budget", "init", "--ledger", str(path)], capsys)
    assert code == 0 and "budget ledger created" in out, err
    return path


def reserves(ledger: Ledger, run_id: str | None = None) -> list[dict]:
    return [e for e in ledger.events("ds") if e["event"] == "reserve"
            and (run_id is None or e["run_id"] == run_id)]


# -- concurrency ----------------------------------------------------------------------------
def test_concurrent_fits_never_overspend_the_cap(data: Path, tmp_path: Path, ledger: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """12 processes at once, a cap that admits 5: 5 publish, 7 are refused and write
    nothing; the ledger they leave verifies (one event per commit, no gap)."""
    procs = []
    for i in range(12):
        argv = [sys.executable, "-m", "dprect", *fit_argv(
            data, tmp_path, "--run-id", f"run-{i}", "--cap-epsilon", "5",
            "--cap-delta", "1e-5", output=f"out-{i}.json")]
        procs.append(subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    try:
        done = [(p.wait(timeout=180), *p.communicate()) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    # Known bug (see ABORT): the process may abort in interpreter teardown after doing its
    # work; everything else is checked first, then such a run is reported as xfail.
    aborted = {i for i, (code, _, err) in enumerate(done)
               if code in (-6, 134) and ABORT in err}
    ok = {i for i in range(12) if (tmp_path / f"out-{i}.json").exists()}
    refused = set(range(12)) - ok
    assert len(ok) == 5 and len(refused) == 7, done
    for i in refused:
        code, _, err = done[i]
        # a run that waits 10 s on the busy ledger says so: a progress line, not an error
        lines = [ln for ln in messages(err) if ABORT not in ln]
        assert code == 2 or i in aborted, done[i]
        assert len(lines) == 1, err
        assert lines[0].startswith("dprect: error: ") and "cap exceeded" in lines[0], err
    for i in ok:
        assert done[i][0] == 0 or i in aborted, done[i]
        js = json.loads((tmp_path / f"out-{i}.json").read_text())
        assert js["features"] == ["a", "b"] and len(js["lower"]) == 2
    assert not list(tmp_path.glob(".*.tmp"))

    g = charge()
    runs = Ledger(ledger).runs("ds")
    assert sorted(r.run_id for r in runs) == sorted(f"run-{i}" for i in ok)
    assert all(r.status == "released" for r in runs)
    assert len(reserves(Ledger(ledger))) == 5
    assert Ledger(ledger).verify() == 10  # init + 5 reservations + 5 releases
    # each publisher wrote exactly what the ledger recorded for its run id
    for r in runs:
        i = int(r.run_id.split("-")[1])
        assert without_request(r.result) == json.loads((tmp_path / f"out-{i}.json").read_text())
    report = show(tmp_path, capsys)
    assert report["spent"]["epsilon"] == pytest.approx(5 * g.epsilon)
    assert report["spent"]["epsilon"] <= 5.0 * (1 + 1e-12)
    assert report["spent"]["delta"] == pytest.approx(5 * g.delta, abs=1e-18)
    assert len(report["runs"]) == 5
    if aborted:
        pytest.xfail(f"known bug: {len(aborted)} `python -m dprect` process(es) aborted "
                     f"with SIGABRT ({ABORT!r}) at interpreter exit")


# -- idempotency ----------------------------------------------------------------------------
def test_released_run_id_is_replayed_without_spending(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(fit_argv(data, tmp_path, "--run-id", "r1", output="first.json"),
                         capsys)
    assert code == 0, err
    assert "released before" not in out
    before = show(tmp_path, capsys)
    assert before["spent"]["epsilon"] == pytest.approx(charge().epsilon)

    code, out, err = run(fit_argv(data, tmp_path, "--run-id", "r1", output="second.json"),
                         capsys)
    assert code == 0, err
    assert "run id r1 was released before" in out and "nothing was spent" in out
    first = json.loads((tmp_path / "first.json").read_text())
    second = json.loads((tmp_path / "second.json").read_text())
    # no seed: only a replay of the recorded result gives the same noisy rectangle
    assert second["lower"] == first["lower"] and second["upper"] == first["upper"]
    assert second == first and not first.get("seeded")
    assert show(tmp_path, capsys) == before
    led = Ledger(tmp_path / "ledger")
    assert len(reserves(led, "r1")) == 1
    assert len([e for e in led.events("ds") if e["event"] == "release"]) == 1


@pytest.mark.parametrize("how", ["failed", "crashed"])
def test_failed_or_crashed_run_id_is_retried_under_one_charge(
        how: str, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g = charge()
    led = Ledger(tmp_path / "ledger")
    led.reserve("ds", "r-retry", epsilon=g.epsilon, delta=g.delta, method="composition",
                features=["a", "b"], bound=g.bound, neighbouring=g.neighbouring)
    if how == "failed":
        led.fail("ds", "r-retry", "RuntimeError: simulated")
    assert led.run("ds", "r-retry").status == ("failed" if how == "failed" else "reserved")

    code, out, err = run(fit_argv(data, tmp_path, "--run-id", "r-retry"), capsys)
    assert code == 0, err
    assert "released before" not in out
    result = json.loads((tmp_path / "result.json").read_text())
    record = led.run("ds", "r-retry")
    assert record.status == "released" and without_request(record.result) == result
    assert len(reserves(led)) == 1  # charged once
    report = show(tmp_path, capsys)
    assert report["spent"]["epsilon"] == pytest.approx(g.epsilon)
    assert [r["run_id"] for r in report["runs"]] == ["r-retry"]


def test_retry_cannot_ask_for_more_than_was_charged(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    led = Ledger(tmp_path / "ledger")
    led.reserve("ds", "r-small", epsilon=0.25, delta=1e-8, method="composition",
                features=["a", "b"], bound="b", neighbouring="add-remove")
    led.fail("ds", "r-small", "boom")
    code, _, err = run(fit_argv(data, tmp_path, "--run-id", "r-small"), capsys)
    assert code == 2 and "cannot ask for more" in err, err
    assert not (tmp_path / "result.json").exists()
    assert len(reserves(led)) == 1 and led.spent("ds").epsilon == 0.25
    assert led.run("ds", "r-small").status == "failed"


# -- budget set-cap / show ------------------------------------------------------------------
def test_set_cap_and_show(data: Path, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "ledger")
    # a dataset the ledger never heard of (a typo?) is not shown as an unspent one
    for extra in ([], ["--json"]):
        code, out, err = run(["budget", "show", "ds", "--ledger", path, *extra], capsys)
        assert code == 2 and out == "", (out, err)
        assert err.count("\n") == 1 and "dataset 'ds' has no cap and no run" in err

    code, out, err = run(["budget", "set-cap", "ds", "--epsilon", "3", "--delta", "1e-5",
                          "--ledger", path], capsys)
    assert code == 0, err
    assert "epsilon=3" in out and "delta=1e-05" in out
    code, _, err = run(fit_argv(data, tmp_path, "--run-id", "r1"), capsys)
    assert code == 0, err

    g = charge()
    code, out, err = run(["budget", "show", "ds", "--ledger", path], capsys)
    assert code == 0, err
    assert f"spent epsilon={g.epsilon:g}, delta={g.delta:g}" in out
    assert "over 1 charged run(s)" in out
    assert (f"cap: epsilon=3, delta=1e-05 (add-remove); remaining epsilon={3 - g.epsilon:g}, "
            f"delta={1e-5 - g.delta:g}") in out
    run_lines = [ln.split() for ln in out.splitlines() if ln.startswith("  ")]
    assert len(run_lines) == 1 and run_lines[0][:2] == ["r1", "released"]

    report = show(tmp_path, capsys)
    assert report["dataset"] == "ds"
    assert report["spent"]["epsilon"] == pytest.approx(g.epsilon)
    assert report["cap"] == {"epsilon": 3.0, "delta": 1e-5, "neighbouring": "add-remove"}
    assert report["remaining"]["epsilon"] == pytest.approx(3 - g.epsilon)
    assert report["remaining"]["delta"] == pytest.approx(1e-5 - g.delta)
    (entry,) = report["runs"]
    assert entry["run_id"] == "r1" and entry["status"] == "released"
    assert entry["features"] == ["a", "b"] and entry["epsilon"] == pytest.approx(g.epsilon)

    # the latest cap counts, even below the spend: remaining is 0 and every run is refused
    code, _, err = run(["budget", "set-cap", "ds", "--epsilon", "0.5", "--delta", "1e-5",
                        "--ledger", path], capsys)
    assert code == 0, err
    report = show(tmp_path, capsys)
    assert report["cap"] == {"epsilon": 0.5, "delta": 1e-5, "neighbouring": "add-remove"}
    assert report["remaining"]["epsilon"] == 0.0
    code, _, err = run(fit_argv(data, tmp_path, "--run-id", "r2", output="r2.json"), capsys)
    assert code == 2 and "cap exceeded" in err, err
    assert not (tmp_path / "r2.json").exists()
    assert len(show(tmp_path, capsys)["runs"]) == 1

    # a bad cap is refused and not recorded
    code, _, err = run(["budget", "set-cap", "ds", "--epsilon", "-1", "--delta", "1e-5",
                        "--ledger", path], capsys)
    assert code == 2 and err.startswith("dprect: error: ") and "epsilon" in err, err
    assert show(tmp_path, capsys)["cap"] == {"epsilon": 0.5, "delta": 1e-5,
                                             "neighbouring": "add-remove"}


# -- the ledger's life: init once, never implicitly, refuse damage ---------------------------
def files_under(path: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(path)), p.stat().st_size)
                  for p in path.rglob("*") if p.is_file())


def one_error_line(err: str) -> str:
    lines = messages(err)
    assert len(lines) == 1 and lines[0].startswith("dprect: error: "), err
    assert "\x1b" not in err and "Traceback" not in err, err
    return lines[0]


def ledger_commands(path: Path) -> dict[str, list[str]]:
    """Every budget command but init, on ``path``."""
    return {
        "show": ["budget", "show", "ds", "--ledger", str(path)],
        "show --json": ["budget", "show", "ds", "--ledger", str(path), "--json"],
        "set-cap": ["budget", "set-cap", "ds", "--epsilon", "100", "--delta", "1e-3",
                    "--ledger", str(path)],
    }


def test_a_run_over_the_cap_is_refused_before_its_input_is_read(
        data: Path, tmp_path: Path, ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Over the cap, a run ends at the ledger's check: its input (here a damaged file,
    which would be refused otherwise) is never read, no run id is announced, nothing is
    written or recorded; the same run under a cap it fits reads the input (and is refused
    for it), and a retry of a run id charged before is not refused for the cap."""
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(b"not parquet")
    code, _, err = run(["budget", "set-cap", "ds", "--epsilon", "0.5", "--delta", "1e-5",
                        "--ledger", str(ledger)], capsys)
    assert code == 0, err
    before = Ledger(ledger).events("ds")
    argv = fit_argv(data, tmp_path, "--run-id", "r1")
    argv[argv.index("--input") + 1] = str(damaged)
    code, out, err = run(argv, capsys)
    assert code == 2 and "cap exceeded" in one_error_line(err), err
    assert "run id" not in out and not (tmp_path / "result.json").exists()
    assert Ledger(ledger).events("ds") == before
    code, _, err = run([*argv, "--cap-epsilon", "0.5", "--cap-delta", "1e-5"], capsys)
    assert code == 2 and "cap exceeded" in one_error_line(err), err  # a config cap too
    code, _, err = run(["budget", "set-cap", "ds", "--epsilon", "3", "--delta", "1e-5",
                        "--ledger", str(ledger)], capsys)
    assert code == 0, err
    code, out, err = run(argv, capsys)
    assert code == 2 and "cannot read" in one_error_line(err), err  # read: under the cap
    assert "run id r1" in out and Ledger(ledger).events("ds")[-1]["event"] == "cap"
    # a run id reserved before (it died) retries under its charge whatever the cap says
    Ledger(ledger).reserve("ds", "r2", epsilon=EPSILON, delta=DELTA, method="m",
                           features=["a", "b"], bound="bound", neighbouring="add-remove")
    code, _, err = run(["budget", "set-cap", "ds", "--epsilon", "0.5", "--delta", "1e-5",
                        "--ledger", str(ledger)], capsys)
    assert code == 0, err
    argv[argv.index("r1")] = "r2"
    code, out, err = run(argv, capsys)
    assert code == 2 and "cannot read" in one_error_line(err), err
    assert "run id r2" in out


def test_budget_init_once(tmp_path: Path, ledger: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    assert Ledger(ledger).verify() == 0  # the fixture's `budget init`: version 0, one event
    before = files_under(ledger)
    code, _, err = run(["budget", "init", "--ledger", str(ledger)], capsys)
    assert code == 2 and "already exists" in one_error_line(err), err
    assert files_under(ledger) == before
    leftover = tmp_path / "leftover"
    leftover.mkdir()
    (leftover / "part-0.parquet").write_bytes(b"x")
    code, _, err = run(["budget", "init", "--ledger", str(leftover)], capsys)
    assert code == 2 and "not empty" in one_error_line(err), err
    assert [p.name for p in leftover.iterdir()] == ["part-0.parquet"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_ledger_at_a_device_fifo_or_socket_is_refused_in_one_line(
        kind: str, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--ledger`` at a device, a FIFO or a socket, or a link to one: delta-rs failed to
    read it and every command called the ledger "damaged" and asked for a backup (``budget
    init``: "it is a file"). Refused in one line naming the option, the path and what it
    is, exit 2, by every budget command and by a run before its input is read (here a
    damaged file, refused otherwise) — decided from ``os.stat`` alone: the FIFO is never
    opened (that would block), nothing is written and no run id is printed."""
    import stat

    home = tmp_path / "special"
    home.mkdir()
    path, said = special(kind, home)
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(b"not parquet")
    run_argv = fit_argv(data, tmp_path, "--run-id", "r1")
    run_argv[run_argv.index("--input") + 1] = str(damaged)
    run_argv[run_argv.index("--ledger") + 1] = str(path)
    commands = {**ledger_commands(path), "init": ["budget", "init", "--ledger", str(path)],
                "verify": ["budget", "verify", "--ledger", str(path)],
                "compact": ["budget", "compact", "--ledger", str(path)], "fit": run_argv,
                "describe": ["describe", "--input", str(damaged), "--columns", "a",
                             "--epsilon", "1", "--output", str(tmp_path / "d.json"),
                             "--ledger", str(path), "--dataset", "ds"]}
    before = files_under(tmp_path)
    mode = path.lstat().st_mode
    for name, argv in commands.items():
        code, out, err = run(argv, capsys)
        assert code == 2 and out == "", (name, code, out, err)
        assert one_error_line(err) == (
            f"dprect: error: --ledger {str(path)!r} {said}, not a folder: a budget ledger "
            "is a Delta table's folder; give a folder path"), (name, err)
        assert files_under(tmp_path) == before and path.lstat().st_mode == mode, name
    if kind == "fifo":
        assert stat.S_ISFIFO(path.lstat().st_mode)
    assert Ledger(tmp_path / "ledger").events("ds") == []


@pytest.mark.parametrize("kind", ["fifo", "socket", "link to /dev/null"])
def test_a_device_fifo_or_socket_in_the_ledgers_log_is_refused_in_one_line(
        kind: str, data: Path, tmp_path: Path, ledger: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """An entry of a real ledger's ``_delta_log`` that is a FIFO, a socket or a link to a
    device, named as the next commit: delta-rs opened it — a FIFO blocked every command
    for ever (here: the time-out), a device failed with the library's text. Refused in
    one line naming the option and the entry, exit 2, before anything is read or
    reserved, from the log's listing and ``os.stat`` alone; nothing written."""
    code, _, err = run(fit_argv(data, tmp_path, "--run-id", "r1"), capsys)
    assert code == 0, err
    events = len(Ledger(ledger).events("ds"))
    log = ledger / "_delta_log"
    last = max(int(p.name[:20]) for p in log.glob("*.json"))
    home = tmp_path / "made"
    home.mkdir()
    made, said = special(kind, home)
    entry = log / f"{last + 1:020d}.json"
    os.replace(made, entry)
    run_argv = fit_argv(data, tmp_path, "--run-id", "r2", output="second.json")
    for argv in (run_argv, ["budget", "show", "ds", "--ledger", str(ledger)],
                 ["budget", "verify", "--ledger", str(ledger)]):
        done = subprocess.run([sys.executable, "-m", "dprect", *argv], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and done.stdout == "", (argv, done.stderr)
        assert one_error_line(done.stderr) == (
            f"dprect: error: --ledger {str(ledger)!r} holds {str(entry)!r}, which {said}, "
            "not a regular file: a budget ledger's _delta_log holds its log's files only; "
            "remove it, or restore the ledger from a backup"), argv
    assert not (tmp_path / "second.json").exists()
    entry.unlink()
    assert len(Ledger(ledger).events("ds")) == events


def test_missing_ledger_is_refused_and_never_created(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "no-such" / "ledger"
    expected = (f"dprect: error: no budget ledger at {path}; create it once with "
                f"`dprect budget init --ledger {path}`")
    for name, argv in ledger_commands(path).items():
        code, _, err = run(argv, capsys)
        assert code == 2 and one_error_line(err) == expected, (name, err)
    argv = fit_argv(data, tmp_path, "--run-id", "r1")
    argv[argv.index("--ledger") + 1] = str(path)
    code, out, err = run(argv, capsys)
    assert code == 2 and one_error_line(err) == expected, err
    assert "result written" not in out and not (tmp_path / "result.json").exists()
    assert "run id" not in out  # a run that never started announces no id to retry
    assert not (tmp_path / "no-such").exists()


def test_deleted_log_is_refused_not_a_new_ledger(
        data: Path, tmp_path: Path, ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """After one charged run, _delta_log/ is deleted: spend and cap must not reset to a
    fresh ledger's. Every command is refused, `budget init` on the leftovers too."""
    code, _, err = run(["budget", "set-cap", "ds", "--epsilon", "1.5", "--delta", "1e-5",
                        "--ledger", str(ledger)], capsys)
    assert code == 0, err
    code, _, err = run(fit_argv(data, tmp_path, "--run-id", "r1", output="r1.json"), capsys)
    assert code == 0, err
    shutil.rmtree(ledger / "_delta_log")
    before = files_under(ledger)
    for name, argv in {**ledger_commands(ledger),
                       "init": ["budget", "init", "--ledger", str(ledger)],
                       "fit": fit_argv(data, tmp_path, "--run-id", "r2")}.items():
        code, out, err = run(argv, capsys)
        line = one_error_line(err)
        assert code == 2 and str(ledger) in line and "not empty" in line, (name, err)
        assert "result written" not in out
    assert not (tmp_path / "result.json").exists()
    assert files_under(ledger) == before and not (ledger / "_delta_log").exists()


def test_zero_byte_commit_is_refused(data: Path, tmp_path: Path, ledger: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A reservation's commit file truncated to zero bytes (power loss): delta-rs reads an
    empty commit, the reservation would vanish and the cap (which admits one run) would
    let a second run through. Every command fails closed with one line, exit 2."""
    g = charge()
    code, _, err = run(["budget", "set-cap", "ds", "--epsilon", str(1.5 * g.epsilon),
                        "--delta", "1e-5", "--ledger", str(ledger)], capsys)
    assert code == 0, err
    code, _, err = run(fit_argv(data, tmp_path, "--run-id", "r1", output="r1.json"), capsys)
    assert code == 0, err
    (version,) = [e["version"] for e in reserves(Ledger(ledger), "r1")]
    (ledger / "_delta_log" / f"{version:020d}.json").write_bytes(b"")
    before = files_under(ledger)
    for name, argv in {**ledger_commands(ledger),
                       "fit": fit_argv(data, tmp_path, "--run-id", "r2"),
                       "fit replay": fit_argv(data, tmp_path, "--run-id", "r1",
                                              output="again.json")}.items():
        code, out, err = run(argv, capsys)
        line = one_error_line(err)
        assert code == 2, (name, err)
        assert f"budget ledger at {ledger} is damaged" in line, (name, line)
        assert "nothing was charged or released" in line, (name, line)
        assert "result written" not in out
    assert not (tmp_path / "result.json").exists() and not (tmp_path / "again.json").exists()
    assert files_under(ledger) == before


def test_the_cap_committed_last_counts_whatever_the_clocks(
        data: Path, tmp_path: Path, ledger: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An admin whose clock runs 2 h fast raises the cap; a second admin lowers it later
    (with an earlier timestamp): the lower cap counts and the run is refused."""
    import dprect.release.ledger.writes as ledger_writes

    real_now = ledger_writes._now
    monkeypatch.setattr(ledger_writes, "_now", lambda: real_now() + timedelta(hours=2))
    code, _, err = run(["budget", "set-cap", "ds", "--epsilon", "10", "--delta", "1e-5",
                        "--ledger", str(ledger)], capsys)
    assert code == 0, err
    monkeypatch.setattr(ledger_writes, "_now", real_now)
    code, _, err = run(["budget", "set-cap", "ds", "--epsilon", "0.5", "--delta", "1e-5",
                        "--ledger", str(ledger)], capsys)
    assert code == 0, err
    assert show(tmp_path, capsys)["cap"] == {"epsilon": 0.5, "delta": 1e-5,
                                             "neighbouring": "add-remove"}
    code, _, err = run(fit_argv(data, tmp_path, "--run-id", "r1"), capsys)
    assert code == 2 and "cap exceeded" in one_error_line(err), err
    assert not (tmp_path / "result.json").exists() and reserves(Ledger(ledger)) == []


# -- bad input: exit 2, one clear line, no output, no ledger row -----------------------------
BAD = {
    # case: (table, extra arguments, pattern the message must match)
    "null feature, --invalid-rows error": (
        "null.parquet", ["--invalid-rows", "error"], r"feature '?a'? .*(null|NaN)"),
    "NaN feature, --invalid-rows error": (
        "nan.parquet", ["--invalid-rows", "error"], r"feature '?a'? .*NaN"),
    "+inf feature, --invalid-rows error": (
        "posinf.parquet", ["--invalid-rows", "error"], r"feature '?a'? .*infinite"),
    "-inf feature, --invalid-rows error": (
        "neginf.parquet", ["--invalid-rows", "error"], r"feature '?a'? .*infinite"),
    "duplicate feature": ("good.parquet", ["--features", "a,a"], r"listed twice"),
    "no feature names": ("good.parquet", ["--features", ","],
                         r"argument --features: an empty name"),
    "grid size < 2": ("good.parquet", ["--grid", "0:1:1"], r"grid size must be .*got 1"),
    "cap exceeded": ("good.parquet", ["--cap-epsilon", "0.5", "--cap-delta", "1e-5"],
                     r"privacy budget cap exceeded for dataset 'ds'.*nothing was released"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_exit_2_no_output_no_ledger_row(
        case: str, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table, extra, pattern = BAD[case]
    code, out, err = run(fit_argv(data, tmp_path, *extra, table=table), capsys)
    assert code == 2, (code, out, err)
    lines = messages(err)
    if case == "no feature names":  # argparse: usage, then one error line
        assert lines[-1].startswith("dprect fit: error: "), err
    else:
        assert len(lines) == 1 and lines[0].startswith("dprect: error: "), err
    assert re.search(pattern, lines[-1]), lines[-1]
    assert "Traceback" not in err and "result written" not in out
    assert not (tmp_path / "result.json").exists()
    assert not list(tmp_path.glob(".*.tmp"))
    assert Ledger(tmp_path / "ledger").events("ds") == []


#: tables that were refused for their values before issue 10 (point 1): a refusal that
#: depends on the rows is not private, so they are ordinary runs now — charged like any other
VALUE_DEPENDENT = {"label 2": "label2.parquet", "label null": "label_null.parquet",
                   "zero rows": "empty.parquet", "zero positives": "no_pos.parquet"}


@pytest.mark.parametrize("case", list(VALUE_DEPENDENT))
def test_tables_once_refused_for_their_values_are_ordinary_charged_runs(
        case: str, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(fit_argv(data, tmp_path, table=VALUE_DEPENDENT[case]), capsys)
    assert code == 0, (code, out, err)
    assert (tmp_path / "result.json").exists()
    assert len(reserves(Ledger(tmp_path / "ledger"))) == 1
    assert show(tmp_path, capsys)["spent"]["epsilon"] == pytest.approx(charge().epsilon)


# -- the default drop policy, and values off the grid ----------------------------------------
def test_drop_policy_ignores_invalid_rows(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Rows with a null, NaN or ±inf feature are dropped: the result (same seed) is the one
    of the table without them, though they are positives far from the others."""
    cols = _clean(np.random.default_rng(4), N)
    clean = pa.table(cols)
    bad_a = [None, float("nan"), float("inf"), float("-inf"), 5.0, 5.0, 5.0, 5.0]
    bad_b = [9.9, 0.1, 9.9, 0.1, None, float("nan"), float("inf"), float("-inf")]
    dirty_rows = pa.table({"a": pa.array(bad_a, pa.float64()),
                           "b": pa.array(bad_b, pa.float64()),
                           "label": pa.array([1] * 8, pa.int64())})
    # invalid rows spread through the table, in 40 copies each: they would move the bounds
    pieces, step = [], N // 40
    for k in range(40):
        pieces += [clean.slice(k * step, step), dirty_rows]
    dirty = pa.concat_tables(pieces)
    pq.write_table(clean, tmp_path / "clean.parquet")
    pq.write_table(dirty, tmp_path / "dirty.parquet")

    results = {}
    for name in ("clean", "dirty"):
        argv = ["fit", "--input", str(tmp_path / f"{name}.parquet"), "--features", "a,b",
                "--label", "label", "--epsilon", "1", "--delta", "1e-7", "--grid", GRID,
                "--seed", "11", "--output", str(tmp_path / f"{name}.json"),
                "--ledger", str(tmp_path / "ledger"), "--dataset", "ds"]
        code, _, err = run(argv, capsys)
        assert code == 0, err
        results[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert results["dirty"]["lower"] == results["clean"]["lower"]
    assert results["dirty"]["upper"] == results["clean"]["upper"]
    assert len(reserves(Ledger(tmp_path / "ledger"))) == 2  # both runs were charged

    # the same dirty table is refused under --invalid-rows error
    code, _, err = run(["fit", "--input", str(tmp_path / "dirty.parquet"), "--features",
                        "a,b", "--label", "label", "--epsilon", "1", "--delta", "1e-7",
                        "--invalid-rows", "error", "--output", str(tmp_path / "x.json")],
                       capsys)
    assert code == 2 and "NaN or infinite" in err, err


def test_values_off_the_grid_are_clamped(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    gen = np.random.default_rng(5)
    a = gen.uniform(-50, 60, N)  # most of it outside the grid 0..10
    b = gen.uniform(-50, 60, N)
    y = np.ones(N, np.int64)
    pq.write_table(pa.table({"a": a, "b": b, "label": y}), tmp_path / "wide.parquet")
    code, _, err = run(["fit", "--input", str(tmp_path / "wide.parquet"), "--features",
                        "a,b", "--label", "label", "--epsilon", "1", "--delta", "1e-7",
                        "--grid", GRID, "--seed", "2", "--output", str(tmp_path / "r.json"),
                        "--ledger", str(tmp_path / "ledger"), "--dataset", "ds"], capsys)
    assert code == 0, err
    js = json.loads((tmp_path / "r.json").read_text())
    for lo, hi in zip(js["lower"], js["upper"], strict=True):
        assert 0.0 <= lo <= 10.0 and 0.0 <= hi <= 10.0
    # the clamped data piles up at both grid ends: the rectangle spans (nearly) all of it
    assert max(js["lower"]) < 1.0 and min(js["upper"]) > 9.0
    assert len(reserves(Ledger(tmp_path / "ledger"))) == 1


# -- caps state their neighbouring relation (issue #21) ----------------------------------------
def test_caps_state_their_relation(data: Path, tmp_path: Path, ledger: Path,
                                   capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A replace-one run against an add/remove cap is refused with one line before the
    input is read or anything reserved; an add/remove run against a replace-one cap is
    charged its image (2ε, (1 + e^ε)δ); the cap event records the relation."""
    import math

    import dprect.engines.grouped as routes

    code, out, err = run(["budget", "set-cap", "ds", "--epsilon", "10", "--delta", "1e-5",
                          "--ledger", str(ledger)], capsys)
    assert code == 0 and "(add-remove neighbours)" in out, err
    (cap_row,) = [e for e in Ledger(ledger).events("ds") if e["event"] == "cap"]
    assert cap_row["neighbouring"] == "add-remove"

    def no_read(*args, **kwargs):
        raise AssertionError("the input was read")

    for name in dir(routes):  # every in-memory route the aggregate flow could open
        if name.endswith("Route") and hasattr(getattr(routes, name), "open"):
            monkeypatch.setattr(getattr(routes, name), "open", no_read)
    code, out, err = run(["bounds", "--input", str(data / "good.parquet"), "--columns", "a,b",
                          "--epsilon", "1", "--delta", "1e-7", "--neighbouring",
                          "replace-one", "--output", str(tmp_path / "b.json"), "--ledger",
                          str(ledger), "--dataset", "ds"], capsys)
    line = one_error_line(err)
    assert code == 2 and "implies nothing under add-remove" in line, err
    assert "--neighbouring replace-one" in line
    assert not (tmp_path / "b.json").exists() and reserves(Ledger(ledger)) == []
    monkeypatch.undo()

    code, out, err = run(["budget", "set-cap", "ds", "--epsilon", "10", "--delta", "1e-5",
                          "--neighbouring", "replace-one", "--ledger", str(ledger)], capsys)
    assert code == 0 and "(replace-one neighbours)" in out, err
    code, _, err = run(fit_argv(data, tmp_path, "--run-id", "r1"), capsys)
    assert code == 0, err
    g = charge()
    assert g.neighbouring == "add-remove"
    report = show(tmp_path, capsys)
    assert report["neighbouring"] == "replace-one"
    assert report["cap"] == {"epsilon": 10.0, "delta": 1e-5, "neighbouring": "replace-one"}
    assert report["spent"]["epsilon"] == pytest.approx(2 * g.epsilon)
    assert report["spent"]["delta"] == pytest.approx((1 + math.exp(g.epsilon)) * g.delta)
    # a replace-one run is charged as stated against the replace-one cap
    code, _, err = run(["bounds", "--input", str(data / "good.parquet"), "--columns", "a,b",
                        "--epsilon", "1", "--delta", "1e-7", "--neighbouring", "replace-one",
                        "--output", str(tmp_path / "b.json"), "--ledger", str(ledger),
                        "--dataset", "ds", "--run-id", "b1"], capsys)
    assert code == 0, err
    report = show(tmp_path, capsys)
    assert report["spent"]["epsilon"] == pytest.approx(2 * g.epsilon + 1.0)


def test_show_since_compact_and_verify(data: Path, tmp_path: Path, ledger: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    for run_id in ("a", "b", "c"):
        code, _, err = run(fit_argv(data, tmp_path, "--run-id", run_id,
                                    output=f"{run_id}.json"), capsys)
        assert code == 0, err
    versions = {r["run_id"]: r["reserved_version"] for r in show(tmp_path, capsys)["runs"]}
    code, out, err = run(["budget", "show", "ds", "--ledger", str(ledger), "--json",
                          "--since", str(versions["b"])], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert [r["run_id"] for r in report["runs"]] == ["b", "c"] and report["charged_runs"] == 3
    assert report["spent"]["epsilon"] == pytest.approx(3 * charge().epsilon)
    code, out, err = run(["budget", "show", "ds", "--ledger", str(ledger), "--json",
                          "--since", "2999-01-01"], capsys)
    assert code == 0 and json.loads(out)["runs"] == [], err
    code, _, err = run(["budget", "show", "ds", "--ledger", str(ledger), "--since", "soon"],
                       capsys)
    assert code == 2 and "--since must be" in one_error_line(err)
    before = show(tmp_path, capsys)
    code, out, err = run(["budget", "compact", "--ledger", str(ledger)], capsys)
    assert code == 0 and "verified and compacted" in out, err
    code, out, err = run(["budget", "verify", "--ledger", str(ledger)], capsys)
    assert code == 0 and "verified" in out, err
    after = show(tmp_path, capsys)
    assert after["runs"] == before["runs"] and after["spent"] == before["spent"]
    # a replay after compaction still publishes the recorded result, spending nothing
    code, out, err = run(fit_argv(data, tmp_path, "--run-id", "a", output="a2.json"), capsys)
    assert code == 0 and "released before" in out, err
    assert json.loads((tmp_path / "a2.json").read_text()) == \
        json.loads((tmp_path / "a.json").read_text())


# -- a pure-DP cap ----------------------------------------------------------------------------
PAPER = ("--method", "randmargins", "--accounting", "paper")  # a charge with delta > 0


@pytest.mark.parametrize("where", ["ledger", "run"])
def test_a_pure_dp_cap_admits_only_pure_runs(data: Path, tmp_path: Path, where: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A cap with delta 0 (`set-cap --delta 0`, or `--cap-delta 0` on the run) is accepted
    and enforced: a run whose plan spends delta > 0 is refused (exit 2, nothing written or
    reserved); a pure run is charged."""
    path = str(tmp_path / "ledger")
    if where == "ledger":
        code, out, err = run(["budget", "set-cap", "ds", "--epsilon", "5", "--delta", "0",
                              "--ledger", path], capsys)
        assert code == 0 and "delta=0" in out, err
        cap: tuple[str, ...] = ()
    else:
        cap = ("--cap-epsilon", "5", "--cap-delta", "0")
    code, _, err = run(fit_argv(data, tmp_path, *PAPER, *cap), capsys)
    assert code == 2 and "privacy budget cap exceeded" in err, err
    assert not (tmp_path / "result.json").exists()
    assert reserves(Ledger(path)) == []
    code, _, err = run(fit_argv(data, tmp_path, *cap), capsys)
    assert code == 0, err
    assert Ledger(path).spent("ds").delta == 0.0 and len(reserves(Ledger(path))) == 1


# -- an interrupted run ---------------------------------------------------------------------
def _interrupted(tmp_path: Path, run_id: str, draw: bool, seed: int | None = None) -> None:
    from dprect.core.randomness import RandomSource
    from dprect.release.guarded import Charge, LedgerSettings, guarded_release

    g = charge()

    def compute():
        with warnings.catch_warnings():  # the seeded-run warning
            warnings.simplefilter("ignore", UserWarning)
            rng = RandomSource(seed=seed) if seed is not None else RandomSource()
        if draw:
            rng.randbits(8)
        raise KeyboardInterrupt

    settings = LedgerSettings.build(str(tmp_path / "ledger"), "ds", run_id)
    with pytest.raises(KeyboardInterrupt):
        guarded_release(settings, Charge(g, "composition", ["a", "b"]), compute,
                        lambda record: None)


def test_an_interrupt_before_any_noise_cancels_the_reservation(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SIGINT after the reservation and before any draw: the charge is withdrawn (a
    ``cancel`` event; spend back to zero), `budget show` lists the run as cancelled and
    charges nothing for it, and the run id runs again under a new charge."""
    led = Ledger(tmp_path / "ledger")
    _interrupted(tmp_path, "r1", draw=False)
    assert led.run("ds", "r1").status == "cancelled"
    assert led.spent("ds") is not None and led.spent("ds").epsilon == 0.0
    report = show(tmp_path, capsys)
    assert report["charged_runs"] == 0 and report["spent"]["epsilon"] == 0.0
    assert [r["status"] for r in report["runs"]] == ["cancelled"]
    with pytest.raises(Exception, match="was cancelled"):
        led.release("ds", "r1", {"x": 1})  # nothing may be released under it
    code, _, err = run(fit_argv(data, tmp_path, "--run-id", "r1"), capsys)
    assert code == 0, err
    assert led.run("ds", "r1").status == "released"
    assert led.spent("ds").epsilon == pytest.approx(charge().epsilon)
    assert len(reserves(led, "r1")) == 2
    led.verify(full=True)


@pytest.mark.parametrize("seed", [None, 7])
def test_an_interrupt_once_noise_may_be_drawn_stays_charged(tmp_path: Path,
                                                            seed: int | None) -> None:
    """SIGINT after a draw (from OS entropy), or once a seeded source exists (counted
    when made): the run is recorded failed and stays charged."""
    led = Ledger(tmp_path / "ledger")
    _interrupted(tmp_path, "r1", draw=seed is None, seed=seed)
    assert led.run("ds", "r1").status == "failed"
    assert led.spent("ds").epsilon == pytest.approx(charge().epsilon)


def test_an_error_raised_while_an_interrupt_is_handled_is_an_interrupt(
        tmp_path: Path) -> None:
    """pyspark turns a Ctrl-C during a collect into the job's cancellation error (raised in
    the clean-up of the KeyboardInterrupt, then re-raised by dprect ``from None``): that is
    still an interrupt — cancelled when nothing was drawn — and a plain error is not."""
    from dprect.core.errors import InputDataError
    from dprect.release.guarded import Charge, LedgerSettings, guarded_release, interrupted

    def cancelled_job():
        try:
            try:
                raise KeyboardInterrupt
            finally:
                raise RuntimeError("SPARK_JOB_CANCELLED")
        except RuntimeError:
            raise InputDataError("Spark failed while counting") from None

    with pytest.raises(InputDataError) as caught:
        cancelled_job()
    assert interrupted(caught.value) and not interrupted(InputDataError("x"))
    led = Ledger(tmp_path / "ledger")
    settings = LedgerSettings.build(str(tmp_path / "ledger"), "ds", "r1")
    with pytest.raises(InputDataError):
        guarded_release(settings, Charge(charge(), "composition", ["a", "b"]),
                        cancelled_job, lambda record: None)
    assert led.run("ds", "r1").status == "cancelled"


@pytest.mark.parametrize("kind", ["fit", "bounds"])
def test_a_delta_the_guarantee_does_not_use_is_said_and_not_charged(
        data: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A fit or bounds given a δ that gains nothing over the pure bound (here 1e-300)
    runs at (ε, 0): the printout says the δ given is not used, and the ledger charges δ
    0 — the guarantee (s39-edges a). A δ the guarantee uses is charged, not flagged."""
    ledger = tmp_path / "ledger"

    def argv(delta: str) -> list[str]:
        common = ["--epsilon", "1", "--delta", delta, "--ledger", str(ledger), "--dataset",
                  "ds", "--run-id", delta, "--output", str(tmp_path / f"{delta}.json")]
        if kind == "fit":
            return ["fit", "--input", str(data / "good.parquet"), "--features", "a,b",
                    "--label", "label", "--method", "composition", "--grid", GRID, *common]
        return ["bounds", "--input", str(data / "good.parquet"), "--columns", "a,b",
                *common]

    code, out, err = run(argv("1e-300"), capsys)
    assert code == 0, err
    assert "the delta given (1e-300) is not used and not charged" in out, out
    assert Ledger(str(ledger)).status("ds").spent.delta == 0.0
    code, out, err = run(argv("0.01"), capsys)
    assert code == 0 and "is not used" not in out, out
    assert Ledger(str(ledger)).status("ds").spent.delta == 0.01
