"""The budget ledger: caps, idempotent run ids, fail-closed charges, race freedom, and
integrity — commit order instead of clocks, no silent gaps, no implicit creation."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ledger_race import race

import dprect.release.ledger.state as state_module
import dprect.release.ledger.writes as writes_module
from dprect.core.errors import ParameterError
from dprect.release.files import failure_reason
from dprect.release.guarded import LedgerSettings, released_result
from dprect.release.ledger import (
    SCHEMA,
    Budget,
    BudgetExceededError,
    Cap,
    Ledger,
    LedgerError,
    NoLedgerError,
)

REQ = {"method": "randmargins", "features": ["a", "b"], "bound": "test bound",
       "neighbouring": "add-remove"}


def new_ledger(path: Path) -> Ledger:
    led = Ledger(path)
    led.init()
    return led


def commit_file(path: Path, version: int) -> Path:
    return Path(path) / "_delta_log" / f"{version:020d}.json"


def log_listing(path: Path) -> list[tuple[str, int]]:
    """(name, size) of every file under the ledger folder: what a refusal must not change."""
    return sorted((str(p.relative_to(path)), p.stat().st_size)
                  for p in Path(path).rglob("*") if p.is_file())


def version_of(led: Ledger, dataset: str, run_id: str, event: str = "reserve") -> int:
    (row,) = [e for e in led.events(dataset) if e["run_id"] == run_id and e["event"] == event]
    return row["version"]


def every_operation(led: Ledger) -> dict[str, object]:
    """Each ledger operation as a thunk (a refused ledger must refuse every one)."""
    return {
        "events": lambda: led.events("ds"),
        "spent": lambda: led.spent("ds"),
        "cap": lambda: led.cap("ds"),
        "runs": lambda: led.runs("ds"),
        "status": lambda: led.status("ds"),
        "verify": led.verify,
        "reserve": lambda: led.reserve("ds", "r-new", epsilon=0.1, delta=1e-9, **REQ),
        "release": lambda: led.release("ds", "r1", {"method": "randmargins"}),
        "fail": lambda: led.fail("ds", "r1", "boom"),
        "set_cap": lambda: led.set_cap("ds", 100.0, 1e-3),
        "released_result": lambda: released_result(LedgerSettings(led.path, "ds", "r1")),
    }


def assert_one_clean_line(message: str) -> None:
    assert "\n" not in message and "\r" not in message, message
    assert "\x1b" not in message, message
    assert "<unknown>" not in message and "Traceback" not in message, message


# -- spending and caps ----------------------------------------------------------------------
def test_spend_is_the_sum_of_reservations(tmp_path):
    led = new_ledger(tmp_path / "ledger")
    assert led.spent("ds") == Budget(0.0, 0.0) and led.cap("ds") is None
    led.reserve("ds", "r1", epsilon=0.5, delta=1e-7, **REQ)
    led.reserve("ds", "r2", epsilon=0.25, delta=2e-7, **REQ)
    led.reserve("other", "r1", epsilon=3.0, delta=1e-6, **REQ)
    spent = led.spent("ds")
    assert spent.epsilon == pytest.approx(0.75) and spent.delta == pytest.approx(3e-7)
    assert [r.status for r in led.runs("ds")] == ["reserved", "reserved"]
    assert led.verify() == 3  # init + three reservations, one commit each


def test_cap_blocks_and_nothing_is_charged(tmp_path):
    led = new_ledger(tmp_path / "ledger")
    led.set_cap("ds", 1.0, 1e-6)
    led.reserve("ds", "r1", epsilon=0.6, delta=1e-7, **REQ)
    before = log_listing(tmp_path / "ledger")
    with pytest.raises(BudgetExceededError, match="cap exceeded for dataset 'ds'"):
        led.reserve("ds", "r2", epsilon=0.6, delta=1e-7, **REQ)
    assert log_listing(tmp_path / "ledger") == before  # a refusal writes nothing
    assert [r.run_id for r in led.runs("ds")] == ["r1"]
    led.reserve("ds", "r3", epsilon=0.4, delta=1e-7, **REQ)  # exactly fills the cap
    # a config cap stricter than the ledger's applies too
    led2 = new_ledger(tmp_path / "ledger2")
    with pytest.raises(BudgetExceededError):
        led2.reserve("ds", "r1", epsilon=2.0, delta=1e-7, cap=Budget(1.0, 1e-6), **REQ)


def test_later_cap_wins_whatever_the_clocks_say(tmp_path, monkeypatch):
    """Admin A's clock runs 2 h ahead of admin B's: A sets ε = 10, then B lowers it to 1.
    B's cap is committed later, so it counts — a reservation of 5 is refused."""
    led = new_ledger(tmp_path / "ledger")
    real_now = writes_module._now
    monkeypatch.setattr(writes_module, "_now", lambda: real_now() + timedelta(hours=2))
    led.set_cap("ds", 10.0, 1e-5)  # admin A, fast clock
    monkeypatch.setattr(writes_module, "_now", real_now)
    led.set_cap("ds", 1.0, 1e-5)  # admin B, later, but its timestamp is 2 h earlier
    caps = [e for e in led.events("ds") if e["event"] == "cap"]
    assert caps[0]["recorded_at"] > caps[1]["recorded_at"]  # the clocks disagree
    assert led.cap("ds") == Cap(1.0, 1e-5)
    before = log_listing(tmp_path / "ledger")
    with pytest.raises(BudgetExceededError, match="cap exceeded"):
        led.reserve("ds", "r1", epsilon=5.0, delta=1e-7, **REQ)
    assert log_listing(tmp_path / "ledger") == before
    assert led.spent("ds") == Budget(0.0, 0.0)


def test_runs_are_listed_in_commit_order_not_clock_order(tmp_path, monkeypatch):
    led = new_ledger(tmp_path / "ledger")
    real_now = writes_module._now
    monkeypatch.setattr(writes_module, "_now", lambda: real_now() + timedelta(hours=2))
    led.reserve("ds", "first", epsilon=0.1, delta=1e-9, **REQ)
    monkeypatch.setattr(writes_module, "_now", real_now)
    led.reserve("ds", "second", epsilon=0.1, delta=1e-9, **REQ)
    runs = led.runs("ds")
    assert [r.run_id for r in runs] == ["first", "second"]
    assert runs[0].reserved_at > runs[1].reserved_at


def test_released_run_id_is_idempotent(tmp_path):
    led = new_ledger(tmp_path / "ledger")
    led.reserve("ds", "r1", epsilon=0.5, delta=1e-7, **REQ)
    result = {"method": "randmargins", "lower": [1.0], "upper": [2.0]}
    assert led.release("ds", "r1", result) == result
    again = led.reserve("ds", "r1", epsilon=0.5, delta=1e-7, **REQ)
    assert again.previous_result == result and not again.new_charge
    assert led.spent("ds").epsilon == pytest.approx(0.5)
    # a second release of the same run id returns the first one's result
    assert led.release("ds", "r1", {"method": "other"}) == result


def test_failed_run_id_is_retried_under_one_charge(tmp_path):
    led = new_ledger(tmp_path / "ledger")
    led.reserve("ds", "r1", epsilon=0.5, delta=1e-7, **REQ)
    led.fail("ds", "r1", "boom")
    assert led.run("ds", "r1").status == "failed"
    retry = led.reserve("ds", "r1", epsilon=0.5, delta=1e-7, **REQ)
    assert not retry.new_charge and retry.previous_result is None
    assert led.spent("ds").epsilon == pytest.approx(0.5)
    with pytest.raises(LedgerError, match="cannot ask for more"):
        led.reserve("ds", "r1", epsilon=0.9, delta=1e-7, **REQ)


def test_every_event_is_one_exclusive_commit(tmp_path):
    """init, cap, reserve, release, fail: one row each, at versions 0, 1, 2, ... in order."""
    led = new_ledger(tmp_path / "ledger")
    led.set_cap("ds", 3.0, 1e-5)
    led.reserve("ds", "r1", epsilon=0.5, delta=1e-7, **REQ)
    led.release("ds", "r1", {"method": "randmargins"})
    led.reserve("ds", "r2", epsilon=0.5, delta=1e-7, **REQ)
    led.fail("ds", "r2", "boom")
    events = led.events("ds")
    assert [(e["event"], e["version"]) for e in events] == [
        ("cap", 1), ("reserve", 2), ("release", 3), ("reserve", 4), ("fail", 5)]
    assert led.verify() == 5
    assert len(list((tmp_path / "ledger" / "_delta_log").glob("*.json"))) == 6


# -- creation: explicit, once ------------------------------------------------------------------
def test_missing_ledger_is_refused_and_nothing_is_written(tmp_path):
    path = tmp_path / "nowhere" / "ledger"
    led = Ledger(path)
    expected = (f"no budget ledger at {path}; create it once with "
                f"`dprect budget init --ledger {path}`")
    for name, op in every_operation(led).items():
        with pytest.raises(NoLedgerError) as info:
            op()
        assert str(info.value) == expected, name
    assert not (tmp_path / "nowhere").exists()  # not even the parent folder
    # an existing empty folder is no ledger either
    path.mkdir(parents=True)
    with pytest.raises(NoLedgerError, match="no budget ledger at"):
        led.reserve("ds", "r1", epsilon=0.1, delta=1e-9, **REQ)
    assert list(path.iterdir()) == []


@pytest.mark.parametrize("content", [b"hello\n", b"PAR1" + bytes(16) + b"PAR1", b""])
def test_a_file_is_no_ledger_not_a_damaged_one(tmp_path, content):
    """A ledger path that is a file (a text, a Parquet-looking or an empty file) is named
    as such by every operation, never reported as a damaged ledger to restore."""
    path = tmp_path / "ledger.parquet"
    path.write_bytes(content)
    for name, op in every_operation(Ledger(path)).items():
        with pytest.raises(LedgerError) as info:
            op()
        assert str(info.value) == f"no budget ledger at {path}: it is a file", name
    assert path.read_bytes() == content


def test_init_once_in_a_new_or_empty_folder(tmp_path):
    path = tmp_path / "ledger"
    led = new_ledger(path)
    assert led.verify() == 0
    (init,) = pa_rows(path)
    assert init["event"] == "init" and init["version"] == 0
    before = log_listing(path)
    with pytest.raises(LedgerError, match="already exists"):
        led.init()
    assert log_listing(path) == before
    # an existing empty folder is accepted
    (tmp_path / "empty").mkdir()
    assert new_ledger(tmp_path / "empty").verify() == 0
    # a folder with anything in it, or a file, is refused and left alone
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("x")
    with pytest.raises(LedgerError, match="not empty"):
        Ledger(tmp_path / "busy").init()
    assert [p.name for p in (tmp_path / "busy").iterdir()] == ["notes.txt"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(LedgerError, match="is a file"):
        Ledger(tmp_path / "file").init()


def pa_rows(path: Path) -> list[dict]:
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pyarrow_table().to_pylist()


def test_deleted_log_is_never_a_new_ledger(tmp_path):
    """Deleting _delta_log/ must not reset spend and cap: every operation is refused,
    ``init`` on the leftover folder too, and nothing is written."""
    path = tmp_path / "ledger"
    led = new_ledger(path)
    led.set_cap("ds", 1.0, 1e-6)
    led.reserve("ds", "r1", epsilon=0.9, delta=1e-7, **REQ)
    shutil.rmtree(path / "_delta_log")
    before = log_listing(path)
    for name, op in every_operation(led).items():
        with pytest.raises(NoLedgerError, match=r"no budget ledger at .*not empty") as info:
            op()
        assert_one_clean_line(str(info.value))
        assert "nothing was charged or released" in str(info.value), name
    with pytest.raises(LedgerError, match="not empty"):
        led.init()
    assert log_listing(path) == before and not (path / "_delta_log").exists()


# -- damage fails closed -------------------------------------------------------------------------
def damaged_ledger(path: Path) -> Ledger:
    """cap ε = 10; r1 and r2 reserve 4 each (spend 8); r1 released."""
    led = new_ledger(path)
    led.set_cap("ds", 10.0, 1e-5)
    led.reserve("ds", "r1", epsilon=4.0, delta=1e-7, **REQ)
    led.reserve("ds", "r2", epsilon=4.0, delta=1e-7, **REQ)
    led.release("ds", "r1", {"method": "randmargins"})
    return led


def assert_refuses_everything(led: Ledger, pattern: str) -> None:
    path = Path(led.path)
    before = log_listing(path)
    for name, op in every_operation(led).items():
        with pytest.raises(LedgerError, match=pattern) as info:
            op()
        message = str(info.value)
        assert_one_clean_line(message)
        assert "nothing was charged or released" in message, (name, message)
    assert log_listing(path) == before  # nothing written, nothing charged


@pytest.mark.parametrize("which", ["reserve r1", "last commit", "init"])
def test_zero_byte_commit_fails_closed(tmp_path, which):
    """A power loss leaves a commit file of zero bytes; delta-rs reads it as an empty
    commit, which would drop r1's reservation (spend 4 instead of 8: a reservation of 4
    would then pass the cap of 10). Every operation must refuse instead."""
    path = tmp_path / "ledger"
    led = damaged_ledger(path)
    version = {"reserve r1": version_of(led, "ds", "r1"), "last commit": led.verify(),
               "init": 0}[which]
    commit_file(path, version).write_bytes(b"")
    assert_refuses_everything(led, r"budget ledger at .* is damaged")


def test_deleted_middle_commit_fails_closed(tmp_path):
    path = tmp_path / "ledger"
    led = damaged_ledger(path)
    commit_file(path, version_of(led, "ds", "r1")).unlink()
    assert_refuses_everything(led, "is damaged: a commit file is missing")


def test_truncated_commit_json_gives_one_line(tmp_path):
    """delta-rs's error for a half-written commit carries a native backtraces: the
    ledger's message is one line."""
    path = tmp_path / "ledger"
    led = damaged_ledger(path)
    target = commit_file(path, version_of(led, "ds", "r2"))
    target.write_bytes(target.read_bytes()[:40])
    assert_refuses_everything(led, "is damaged")


def test_missing_data_file_gives_one_line(tmp_path):
    """delta-rs's error for a missing data file carries ANSI-coloured lines."""
    path = tmp_path / "ledger"
    led = damaged_ledger(path)
    add = data_file_of(path, version_of(led, "ds", "r1"))
    add.unlink()
    assert_refuses_everything(led, "is damaged")


def data_file_of(path: Path, version: int) -> Path:
    for line in commit_file(path, version).read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            return path / action["add"]["path"]
    raise AssertionError("no add action")


def edit_charge(path: Path, version: int, epsilon: float, *, fix_log: bool) -> None:
    """Rewrite the data file of commit ``version`` with another ε; with ``fix_log`` also
    patch the file size recorded in the commit (a thorough editor)."""
    target = data_file_of(path, version)
    table = pq.read_table(target)
    rows = table.to_pylist()
    rows[0]["epsilon"] = epsilon
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), target)
    if fix_log:
        log = commit_file(path, version)
        actions = [json.loads(line) for line in log.read_text().splitlines()]
        for action in actions:
            if "add" in action:
                action["add"]["size"] = target.stat().st_size
        log.write_text("".join(json.dumps(a) + "\n" for a in actions))


def test_edited_data_file_fails_closed(tmp_path):
    """Lowering a recorded charge by rewriting its data file is detected: by delta-rs
    (the size differs from the log's), or, if the log is patched too, by the hash chain."""
    path = tmp_path / "ledger"
    led = damaged_ledger(path)
    edit_charge(path, version_of(led, "ds", "r2"), 0.001, fix_log=False)
    assert_refuses_everything(led, "is damaged")

    led = damaged_ledger(tmp_path / "ledger2")
    edit_charge(tmp_path / "ledger2", version_of(led, "ds", "r1"), 0.001, fix_log=True)
    assert_refuses_everything(led, "hash chain breaks at commit version")


@pytest.mark.parametrize("how", ["duplicate version", "two events in one commit",
                                 "no version"])
def test_foreign_commits_fail_closed(tmp_path, how):
    """A commit that did not come from the ledger's own exclusive writes (wrong or missing
    version column, several events at once) is refused, not summed."""
    from deltalake import write_deltalake

    path = tmp_path / "ledger"
    led = damaged_ledger(path)
    row = {name: None for name in SCHEMA.names}
    row.update(event="reserve", dataset="ds", run_id="sneaky", epsilon=0.0, delta=0.0,
               version=1, chain="0" * 64)
    rows = {"duplicate version": [row],
            "two events in one commit": [{**row, "version": led.verify() + 1},
                                         {**row, "version": led.verify() + 2}],
            "no version": [{**row, "version": None}]}[how]
    write_deltalake(str(path), pa.Table.from_pylist(rows, schema=SCHEMA), mode="append")
    assert_refuses_everything(led, "is damaged")


def test_not_a_ledger(tmp_path):
    from deltalake import write_deltalake

    write_deltalake(tmp_path / "t", pa.table({"x": [1]}))
    with pytest.raises(LedgerError, match="not a budget ledger"):
        Ledger(tmp_path / "t").spent("ds")
    # a ledger of the previous layout (no version, no chain) is refused, not reinterpreted
    old = pa.schema([f for f in SCHEMA if f.name not in ("version", "chain")])
    write_deltalake(tmp_path / "old", pa.Table.from_pylist([], schema=old))
    with pytest.raises(LedgerError, match="not a budget ledger of this dprect version"):
        Ledger(tmp_path / "old").reserve("ds", "r1", epsilon=0.1, delta=1e-9, **REQ)


def test_ledger_error_messages_are_one_line():
    raw = ("Kernel error: Json error: bad\n   0: <unknown>\n  \x1b[31m↳\x1b[0m No such file\n"
           "stack backtrace:\n  1: x")
    assert str(LedgerError(raw)) == "Kernel error: Json error: bad"
    assert str(LedgerError("\x1b[1m\x1b[31merror\x1b[0m: x")) == "error: x"
    assert str(LedgerError("\n\nTraceback (most recent call last):\nboom")) == "boom"


# -- concurrency ---------------------------------------------------------------------------------
def test_concurrent_reservations_never_overspend(tmp_path):
    """12 processes reserve ε = 1 at once against a ledger cap of 5: exactly 5 are
    admitted, and the ledger they leave verifies (versions 0..6, one event each)."""
    path = str(tmp_path / "ledger")
    led = new_ledger(path)
    led.set_cap("ds", 5.0, 1e-6)
    outcomes = race(path, "ds", REQ)
    assert sorted(outcomes.values()) == ["refused"] * 7 + ["reserved"] * 5, outcomes
    runs = led.runs("ds")
    assert sorted(r.run_id for r in runs) == sorted(
        f"run-{i}" for i, o in outcomes.items() if o == "reserved")
    assert led.spent("ds").epsilon == pytest.approx(5.0)
    assert led.verify() == 6  # init, cap, five reservations


# -- neighbouring relations of caps and charges (issue #21) -------------------------------------
def test_replace_one_cap_charges_the_image_of_add_remove_runs(tmp_path):
    """Against a replace-one cap an add/remove (ε, δ) run counts (2ε, (1 + e^ε)δ)."""
    import math

    led = new_ledger(tmp_path / "ledger")
    led.set_cap("ds", 3.0, 1e-5, "replace-one")
    assert led.cap("ds") == Cap(3.0, 1e-5, "replace-one")
    led.reserve("ds", "r1", epsilon=1.0, delta=1e-7, **REQ)  # add-remove
    status = led.status("ds")
    assert status.neighbouring == "replace-one"
    assert status.spent.epsilon == pytest.approx(2.0)
    assert status.spent.delta == pytest.approx((1 + math.e) * 1e-7)
    # 2 + 2·0.6 > 3: refused in the cap's relation (in add/remove it would fit)
    with pytest.raises(BudgetExceededError, match="cap exceeded"):
        led.reserve("ds", "r2", epsilon=0.6, delta=1e-9, **REQ)
    led.reserve("ds", "r3", epsilon=0.4, delta=1e-9, **{**REQ, "neighbouring": "replace-one"})
    assert led.spent("ds").epsilon == pytest.approx(2.4)
    assert led.spent("ds", "add-remove") is None  # a replace-one charge bounds nothing there


def test_replace_one_run_is_refused_against_an_add_remove_cap(tmp_path):
    led = new_ledger(tmp_path / "ledger")
    led.set_cap("ds", 10.0, 1e-5)  # add-remove by default
    before = log_listing(tmp_path / "ledger")
    replace_one = {**REQ, "neighbouring": "replace-one"}
    with pytest.raises(ParameterError, match="implies nothing under add-remove"):
        led.check_relation("ds", "replace-one")
    with pytest.raises(ParameterError, match="implies nothing under add-remove"):
        led.reserve("ds", "r1", epsilon=0.1, delta=1e-9, **replace_one)
    assert log_listing(tmp_path / "ledger") == before
    led.check_relation("ds", "add-remove")  # fine
    # a config cap (add-remove unless stated) refuses it too, on a dataset without a cap
    with pytest.raises(ParameterError, match="implies nothing"):
        led.reserve("other", "r1", epsilon=0.1, delta=1e-9, cap=Budget(1.0, 1e-6),
                    **replace_one)
    # an add/remove cap set after replace-one charges admits nothing more
    led.reserve("x", "r1", epsilon=0.1, delta=1e-9, **replace_one)
    led.set_cap("x", 100.0, 1e-3)
    with pytest.raises(BudgetExceededError, match="bound nothing"):
        led.reserve("x", "r2", epsilon=0.1, delta=1e-9, **REQ)


def test_a_cap_row_without_a_relation_is_add_remove(tmp_path):
    """Ledgers written before caps stated their relation: the cap row's neighbouring is
    null, and it reads as add-remove."""
    from ledger_fill import fill

    led = new_ledger(tmp_path / "ledger")
    fill(led, [{"event": "cap", "dataset": "ds", "epsilon": 2.0, "delta": 1e-6}])
    (row,) = [e for e in led.events("ds") if e["event"] == "cap"]
    assert row["neighbouring"] is None
    assert led.cap("ds") == Cap(2.0, 1e-6, "add-remove")
    with pytest.raises(ParameterError):
        led.check_relation("ds", "replace-one")


# -- the fail row holds the printed line, never the exception's text (issue #21) --------------
def test_fail_row_holds_the_printed_line_not_the_data(tmp_path):
    from dprect.app.failures import describe_failure
    from dprect.app.spine import failure_line
    from dprect.core.accounting import Guarantee
    from dprect.release.guarded import Charge, guarded_release

    secret = "row 1234: salary=98765.43"
    charge = Charge(Guarantee(0.5, 1e-7, "add-remove", "test"), "randmargins", ["a"])
    settings = LedgerSettings(str(tmp_path / "ledger"), "ds", "r1")
    new_ledger(tmp_path / "ledger")

    def compute():
        raise ValueError(secret)

    with pytest.raises(ValueError):
        guarded_release(settings, charge, compute, lambda r: None, describe=failure_line)
    (fail,) = [e for e in Ledger(settings.path).events("ds") if e["event"] == "fail"]
    assert fail["message"] == describe_failure(ValueError(secret))[1]
    assert "salary" not in fail["message"] and "1234" not in fail["message"]
    assert fail["message"].startswith("internal error (ValueError)")
    # without a describe only the type is recorded
    settings2 = LedgerSettings(settings.path, "ds", "r2")
    with pytest.raises(ValueError):
        guarded_release(settings2, charge, compute, lambda r: None)
    (fail2,) = [e for e in Ledger(settings.path).events("ds")
                if e["event"] == "fail" and e["run_id"] == "r2"]
    assert "salary" not in fail2["message"] and fail2["message"].startswith("ValueError")


# -- checkpoints on a small ledger ---------------------------------------------------------------
def test_checkpoints_are_written_and_reads_start_from_them(tmp_path):
    """After CHECKPOINT_EVERY events a checkpoint event is committed; reads verify from the
    previous checkpoint and give the same spend as a full replay."""
    from dprect.release.ledger import CHECKPOINT_EVERY

    led = new_ledger(tmp_path / "ledger")
    for i in range(2 * CHECKPOINT_EVERY + 3):
        led.reserve("ds", f"r{i}", epsilon=0.01, delta=1e-10, **REQ)
    snap = led._load()
    assert snap.checkpoint is not None and snap.since_checkpoint < CHECKPOINT_EVERY
    assert led.verify(full=True) == snap.version
    assert led.spent("ds").epsilon == pytest.approx(0.01 * (2 * CHECKPOINT_EVERY + 3))
    assert len(led.runs("ds")) == 2 * CHECKPOINT_EVERY + 3


def _reserves(n: int, offset: int = 0):
    for i in range(offset, offset + n):
        yield {"event": "reserve", "dataset": f"d{i % 3}", "run_id": f"r{i}",
               "epsilon": 0.01, "delta": 1e-10, "method": "randmargins",
               "features": '["a"]', "bound": "b", "neighbouring": "add-remove"}



def test_status_reads_no_run_index(tmp_path, monkeypatch):
    """status (spend and cap) never reads a dataset's run index; runs=True does."""
    from ledger_fill import fill

    led = new_ledger(tmp_path / "ledger")
    led.set_cap("d0", 5.0, 1e-6)
    fill(led, _reserves(100))

    def refuse(self):
        raise AssertionError("the whole run index was read")

    monkeypatch.setattr(state_module.DatasetState, "runs", refuse)
    status = led.status("d0")
    assert status.runs is None and status.cap == Cap(5.0, 1e-6)
    assert status.spent.epsilon == pytest.approx(0.01 * 34)
    with pytest.raises(AssertionError, match="run index"):
        led.status("d0", runs=True)


@pytest.mark.parametrize("old", ["dprect ledger state 1", "dprect ledger state 2"])
def test_checkpoints_of_older_state_formats_are_read_and_replaced(tmp_path, monkeypatch,
                                                                   old):
    """A ledger whose checkpoints hold the runs inline (state format 1: 16 buckets per
    dataset; format 2: 1,024) is verified, finds its run ids (a retry is not charged
    again), and its next checkpoint is format 3 (the run index in files), read again."""
    from ledger_fill import fill

    from dprect.release.ledger import CHECKPOINT_EVERY, RUNS_DIR

    led = new_ledger(tmp_path / "ledger")
    monkeypatch.setattr(state_module, "_WRITE_FORMAT", old)
    fill(led, _reserves(3 * CHECKPOINT_EVERY))
    monkeypatch.undo()
    assert not (tmp_path / "ledger" / RUNS_DIR).exists()
    rows = led._load(full=True).rows
    assert {r["result"].split("\n", 1)[0] for r in rows if r["event"] == "checkpoint"} == {old}
    spent = led.spent("d0")
    assert not led.reserve("d0", "r3", epsilon=0.01, delta=1e-10, **REQ).new_charge
    assert led.spent("d0") == spent
    for offset in (10**6, 2 * 10**6):  # the format-3 checkpoint is re-derived from an old one
        fill(led, _reserves(CHECKPOINT_EVERY, offset=offset))
        snap = led._load()
        newest = [r for r in snap.rows if r["event"] == "checkpoint"][-1]
        assert newest["result"].startswith("dprect ledger state 3\n")
        assert led.verify(full=True) == snap.version
        assert not led.reserve("d0", "r6", epsilon=0.01, delta=1e-10, **REQ).new_charge
        assert led.run("d1", "r7").status == "reserved"
        assert len(led.runs("d2")) == CHECKPOINT_EVERY + (offset // 10**6) * (
            CHECKPOINT_EVERY // 3 + 1)


def test_a_failed_ledger_write_names_the_failure_kind_never_its_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write the Delta library refuses is reported from the failure's kind alone (an
    OSError's strerror, else the class name): the library's text, which could quote
    anything, never reaches the message (the charter; tests/test_no_library_text.py)."""
    import deltalake

    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("row 7777.25 SECRET_KEY_123")

    monkeypatch.setattr(deltalake, "write_deltalake", refuse)
    with pytest.raises(LedgerError) as caught:
        Ledger(str(tmp_path / "ledger")).init()
    assert str(caught.value).endswith(": RuntimeError"), str(caught.value)
    assert "7777" not in str(caught.value) and "SECRET" not in str(caught.value)
    assert failure_reason(PermissionError(13, "Permission denied", "x")) == \
        "Permission denied"
    assert failure_reason(OSError("no errno 7777.25")) == "OSError"


# -- a huge epsilon (s50-aggedge) -----------------------------------------------------------
@pytest.mark.parametrize("delta", [0.0, 1e-7])
def test_a_reserved_run_of_a_huge_epsilon_leaves_the_ledger_usable(tmp_path, delta) -> None:
    """An add/remove run's replace-one image (group privacy: 2ε, (1 + e^ε)·δ) called
    ``math.exp(ε)``, which raised OverflowError from ε ~ 709.78 — at every load of the
    ledger once such a run was reserved (``--epsilon 1000`` for a test run): every later
    run on any dataset, ``budget show`` and ``budget verify`` ended "internal error
    (OverflowError)". Its image is now 0 for a pure run and infinite where e^ε overflows."""
    led = new_ledger(tmp_path / "ledger")
    led.reserve("ds", "huge", epsilon=1000.0, delta=delta, **REQ)
    led.release("ds", "huge", {"method": "randmargins"})
    led.reserve("other", "r1", epsilon=0.5, delta=1e-7, **REQ)
    again = Ledger(tmp_path / "ledger")
    assert again.spent("ds") == Budget(1000.0, delta)
    assert again.spent("ds", "replace-one") == Budget(2000.0, 0.0 if delta == 0 else
                                                      float("inf"))
    assert again.spent("other") == Budget(0.5, 1e-7)
    assert again.verify() >= 0
    # a replace-one cap refuses a next run (ε spent; with δ > 0, δ too), in its own words
    cap = Cap(1e9, 0.5, "replace-one") if delta else Cap(100.0, 0.5, "replace-one")
    with pytest.raises(BudgetExceededError, match="cap exceeded"):
        again.reserve("ds", "r2", epsilon=0.1, delta=0.0, cap=cap, **REQ)
