"""The budget ledger at 10^4 events: every damage of today fails closed, before and after
the newest checkpoint and after compaction; a forged checkpoint is found; compaction is
not damage and leaves a few files; the 12-way race still admits exactly what the cap
allows.

The 10^4-event ledger is written once per module through the ledger's own rows and
checkpoints (``tests/ledger_fill.fill``) and copied per test (after the
ledger's own cleanup it is a few hundred files)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ledger_fill import fill
from ledger_race import race

import dprect.release.ledger as ledger_module
import dprect.release.ledger.run_index as run_index_module
import dprect.release.ledger.state as state_module
from dprect.release.guarded import LedgerSettings, released_result
from dprect.release.ledger import (
    CHECKPOINT_EVERY,
    SCHEMA,
    Budget,
    BudgetExceededError,
    Ledger,
    LedgerError,
    NoLedgerError,
)

EVENTS = 10_000
REQ = {"method": "randmargins", "features": ["a", "b"], "bound": "test bound",
       "neighbouring": "add-remove"}


def history(n: int, offset: int = 0):
    """n events: runs of 20 datasets, each reserved then released."""
    for i in range(offset, offset + n // 2):
        name = f"d{i % 20}"
        yield {"event": "reserve", "dataset": name, "run_id": f"r{i}", "epsilon": 0.001,
               "delta": 1e-12, "method": "randmargins", "features": '["a", "b"]',
               "bound": "b", "neighbouring": "add-remove"}
        yield {"event": "release", "dataset": name, "run_id": f"r{i}",
               "result": json.dumps({"method": "randmargins", "lower": [i]}),
               "method": "randmargins"}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10^4 events; dataset "ds" (cap ε = 10): r1 reserves 4 early (long before the
    newest checkpoint) and is released; r2 reserves 4 after the newest checkpoint."""
    path = tmp_path_factory.mktemp("scale") / "ledger"
    led = Ledger(path)
    led.init()
    led.set_cap("ds", 10.0, 1e-5)
    led.reserve("ds", "r1", epsilon=4.0, delta=1e-7, **REQ)
    led.release("ds", "r1", {"method": "randmargins", "lower": [1.0]})
    fill(led, history(EVENTS - 10))
    led.reserve("ds", "r2", epsilon=4.0, delta=1e-7, **REQ)
    snap = led._load()
    assert snap.version >= EVENTS - 5 and 0 < snap.since_checkpoint < CHECKPOINT_EVERY
    return path


@pytest.fixture
def led(template: Path, tmp_path: Path) -> Ledger:
    shutil.copytree(template, tmp_path / "ledger")
    return Ledger(tmp_path / "ledger")


def listing(path: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(path)), p.stat().st_size)
                  for p in Path(path).rglob("*") if p.is_file())


def every_operation(led: Ledger) -> dict[str, object]:
    return {
        "status": lambda: led.status("ds"),
        "spent": lambda: led.spent("ds"),
        "verify": led.verify,
        "history": lambda: led.history("ds", since=10**9),
        "reserve": lambda: led.reserve("ds", "r-new", epsilon=0.1, delta=1e-9, **REQ),
        "release": lambda: led.release("ds", "r2", {"method": "randmargins"}),
        "fail": lambda: led.fail("ds", "r2", "boom"),
        "set_cap": lambda: led.set_cap("ds", 100.0, 1e-3),
        "released_result": lambda: released_result(LedgerSettings(led.path, "ds", "r1")),
    }


def assert_refuses_everything(led: Ledger, pattern: str = "is damaged") -> None:
    before = listing(Path(led.path))
    for name, op in every_operation(led).items():
        with pytest.raises(LedgerError, match=pattern) as info:
            op()
        message = str(info.value)
        assert "\n" not in message and "\x1b" not in message, message
        assert "nothing was charged or released" in message, (name, message)
    assert listing(Path(led.path)) == before  # nothing written, nothing charged


def commit(path: Path, version: int) -> Path:
    return Path(path) / "_delta_log" / f"{version:020d}.json"


def log_versions(path: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in (Path(path) / "_delta_log").glob("*.json"))


def file_holding(led: Ledger, version: int) -> Path:
    (f,) = [f for f in led._load().files if f.first <= version <= f.last]
    return Path(led.path) / f.path


def version_of(led: Ledger, run_id: str) -> int:
    record = led.run("ds", run_id)
    assert record is not None
    return record.reserved_version


def rewrite(target: Path, epsilon: float) -> None:
    """Lower every ε in a data file (a different size, as an editor's rewrite has)."""
    rows = pq.read_table(target).to_pylist()
    for row in rows:
        if row["epsilon"] is not None:
            row["epsilon"] = epsilon
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), target, compression="none")


# -- the ledger at 10^4 events reads right --------------------------------------------------
def test_state_at_scale_matches_a_full_replay(led: Ledger):
    snap = led._load()
    newest = snap.checkpoint
    assert newest is not None and version_of(led, "r1") < newest < version_of(led, "r2")
    # the checkpoint row holds totals and bucket digests, not the ~5,000 runs (~850 kB)
    (state,) = [r["result"] for r in snap.rows if r["version"] == newest]
    assert state.startswith("dprect ledger state 3\n") and len(state) < 100_000
    assert state.count("\n") <= 1 + 21 + ledger_module.RUN_BUCKETS
    status = led.status("ds", runs=True)
    assert status.spent == Budget(8.0, 2e-7) and status.cap == ledger_module.Cap(10.0, 1e-5)
    assert [(r.run_id, r.status) for r in status.runs] == [("r1", "released"),
                                                            ("r2", "reserved")]
    assert led.run("ds", "r1").result == {"method": "randmargins", "lower": [1.0]}
    d3 = led.status("d3", runs=True)
    assert len(d3.runs) == len([i for i in range((EVENTS - 10) // 2) if i % 20 == 3])
    assert d3.spent.epsilon == pytest.approx(0.001 * len(d3.runs))
    assert led.verify(full=True) == snap.version  # every link, every checkpoint
    # a reservation over the cap is refused, one within it admitted
    with pytest.raises(BudgetExceededError):
        led.reserve("ds", "r3", epsilon=2.5, delta=1e-9, **REQ)
    led.reserve("ds", "r3", epsilon=2.0, delta=1e-9, **REQ)
    assert led.spent("ds").epsilon == pytest.approx(10.0)
    # the history after a version reads from the index of files, not the log
    assert [e["run_id"] for e in led.history("ds", since=snap.version + 1)] == ["r3"]


# -- damage after the newest checkpoint (the events an operation re-hashes) -------------
def test_after_checkpoint_zero_byte_newest_commit(led: Ledger):
    commit(led.path, led.verify()).write_bytes(b"")
    assert_refuses_everything(led)


def test_after_checkpoint_truncated_commit(led: Ledger):
    target = commit(led.path, version_of(led, "r2"))
    target.write_bytes(target.read_bytes()[:40])
    assert_refuses_everything(led)


def test_after_checkpoint_edited_data_file(led: Ledger, tmp_path: Path):
    rewrite(file_holding(led, version_of(led, "r2")), 0.001)
    assert_refuses_everything(led)


def test_after_checkpoint_edited_data_file_and_log(led: Ledger):
    """A thorough editor patches the size in the commit too: the hash chain finds it."""
    version = version_of(led, "r2")
    target = file_holding(led, version)
    rewrite(target, 0.001)
    log = commit(led.path, version)
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            action["add"]["size"] = target.stat().st_size
    log.write_text("".join(json.dumps(a) + "\n" for a in actions))
    assert_refuses_everything(led, "hash chain breaks at commit version")


def test_after_checkpoint_missing_data_file(led: Ledger):
    file_holding(led, version_of(led, "r2")).unlink()
    assert_refuses_everything(led)


# -- damage before the newest checkpoint ---------------------------------------------------
def test_before_checkpoint_zero_byte_or_deleted_commit(led: Ledger):
    """Commit files the ledger still keeps before its newest checkpoint: emptied or
    deleted, every operation refuses."""
    newest = led._load().checkpoint
    kept = [v for v in log_versions(led.path) if v < newest]
    assert kept  # the ledger keeps the commits back to the previous checkpoint
    commit(led.path, kept[len(kept) // 2]).write_bytes(b"")
    assert_refuses_everything(led, "commit file is empty")
    commit(led.path, kept[len(kept) // 2]).unlink()
    assert_refuses_everything(led, "commit file is missing")


def test_before_checkpoint_damaged_delta_checkpoint(led: Ledger):
    log = Path(led.path) / "_delta_log"
    last = json.loads((log / "_last_checkpoint").read_text())["version"]
    (log / f"{last:020d}.checkpoint.parquet").write_bytes(b"")
    assert_refuses_everything(led)


def test_before_checkpoint_edited_or_missing_old_file(led: Ledger):
    """r1's reservation lies far before the newest checkpoint: its file (merged into a
    checkpoint's long ago) edited — any rewrite changes its size — or deleted: refused."""
    target = file_holding(led, version_of(led, "r1"))
    original = target.read_bytes()
    rewrite(target, 0.001)
    assert_refuses_everything(led, "data file is not the one its log recorded")
    target.write_bytes(original)
    assert led.spent("ds") == Budget(8.0, 2e-7)  # restored: the ledger reads again
    target.unlink()
    assert_refuses_everything(led, "a file its log refers to is missing")


def test_forged_checkpoint_is_found(led: Ledger, monkeypatch: pytest.MonkeyPatch):
    """A writer appends a correctly chained checkpoint whose state lowers ds's spend: it
    does not equal the re-derivation from the checkpoint before it."""
    snap = led._load()
    real_text = state_module.State.text

    def forged(self):
        lines = real_text(self).split("\n")
        (i,) = [i for i, line in enumerate(lines) if line.startswith('"ds"\th\t')]
        cap, spent = json.loads(lines[i].split("\t", 2)[2])
        assert spent["add-remove"][0] == pytest.approx(8.0)
        spent["add-remove"] = [0.0, 0.0]
        lines[i] = '"ds"\th\t' + state_module._canonical([cap, spent])
        return "\n".join(lines)

    monkeypatch.setattr(state_module.State, "text", forged)
    assert led._checkpoint(snap, archive=False, maintain=False) is not None
    monkeypatch.setattr(state_module.State, "text", real_text)
    assert_refuses_everything(led, "does not equal the events before it")


def test_foreign_commit_and_deleted_log(led: Ledger):
    from deltalake import write_deltalake

    row = {name: None for name in SCHEMA.names}
    row.update(event="reserve", dataset="ds", run_id="sneaky", epsilon=0.0, delta=0.0,
               version=1, chain="0" * 64)
    write_deltalake(led.path, pa.Table.from_pylist([row], schema=SCHEMA), mode="append")
    assert_refuses_everything(led)
    shutil.rmtree(Path(led.path) / "_delta_log")
    with pytest.raises(NoLedgerError, match="not empty"):
        led.status("ds")


# -- compaction -----------------------------------------------------------------------------
def test_compaction_is_not_damage_and_leaves_a_few_files(led: Ledger):
    before = led.status("ds", runs=True)
    d7 = led.status("d7", runs=True)
    assert len(led._load().files) > 5
    led.compact()
    files = listing(Path(led.path))
    assert len([f for f, _ in files if f.endswith(".parquet") and "/" not in f]) <= 4
    assert len([f for f, _ in files if f.startswith("_delta_log/")]) <= 4
    after = led.status("ds", runs=True)
    assert (after.spent, after.cap, after.runs) == (before.spent, before.cap, before.runs)
    assert led.status("d7", runs=True).runs == d7.runs
    assert led.verify(full=True) == after.ledger_version
    assert led.run("ds", "r1").result == {"method": "randmargins", "lower": [1.0]}
    led.release("ds", "r2", {"method": "randmargins"})  # the ledger goes on
    fill(led, history(3 * CHECKPOINT_EVERY, offset=10**6))
    assert led.status("ds", runs=True).runs[-1].status == "released"


def test_damage_after_compaction_fails_closed(led: Ledger, tmp_path: Path):
    led.compact()
    led.reserve("ds", "r3", epsilon=0.5, delta=1e-9, **REQ)
    pristine = tmp_path / "pristine"
    shutil.copytree(led.path, pristine)
    archive = next(Path(led.path).glob("archive-*.parquet"))
    rewrite(archive, 0.001)
    assert_refuses_everything(led, "data file is not the one its log recorded")
    archive.unlink()
    assert_refuses_everything(led, "a file its log refers to is missing")
    for how in ("zero-byte newest commit", "Delta checkpoint emptied"):
        shutil.rmtree(led.path)
        shutil.copytree(pristine, led.path)
        if how == "zero-byte newest commit":
            commit(led.path, led.verify()).write_bytes(b"")
        else:
            log = Path(led.path) / "_delta_log"
            last = json.loads((log / "_last_checkpoint").read_text())["version"]
            (log / f"{last:020d}.checkpoint.parquet").write_bytes(b"")
        assert_refuses_everything(led)


# -- the race at 10^4 events ----------------------------------------------------------------
def test_concurrent_reservations_at_scale(led: Ledger):
    """12 processes reserve ε = 1 at once against a cap of 5 on a 10^4-event ledger
    (checkpoints are written while they race): exactly 5 are admitted."""
    led.set_cap("race", 5.0, 1e-6)
    outcomes = race(led.path, "race", REQ)
    assert sorted(outcomes.values()) == ["refused"] * 7 + ["reserved"] * 5, outcomes
    status = led.status("race", runs=True)
    assert sorted(r.run_id for r in status.runs) == sorted(
        f"run-{i}" for i, o in outcomes.items() if o == "reserved")
    assert status.spent.epsilon == pytest.approx(5.0)
    led.verify(full=True)


# -- the run index's files ------------------------------------------------------------------
def run_index_file(led: Ledger, dataset: str, run_id: str) -> Path:
    """The run-index file that the newest checkpoint names for ``run_id``'s bucket."""
    newest = [r for r in led._load().rows if r["event"] == "checkpoint"][-1]["result"]
    k = run_index_module.run_bucket(dataset, run_id)
    (digest,) = [line.split("\t")[1] for line in newest.split("\n")
                 if line.startswith(f"{k}\t")]
    return Path(led.path) / ledger_module.RUNS_DIR / f"{digest}{run_index_module.RUNS_SUFFIX}"


@pytest.mark.parametrize("how", ["edited", "emptied", "deleted"])
def test_damaged_run_index_file_fails_closed(led: Ledger, how: str):
    """r1's bucket file (named by the newest checkpoint) edited, emptied or deleted: every
    operation that needs r1's run record, ``budget show`` and ``budget verify`` refuse
    with one line, and nothing is written."""
    target = run_index_file(led, "ds", "r1")
    text = target.read_text()
    assert '"r1"' in text
    if how == "edited":  # r1 looks unreleased: a replay would charge it again
        target.write_text(text.replace('"released"', '"reserved"', 1))
    elif how == "emptied":
        target.write_bytes(b"")
    else:
        target.unlink()
    before = listing(Path(led.path))
    for op in (lambda: led.run("ds", "r1"),
               lambda: led.reserve("ds", "r1", epsilon=4.0, delta=1e-7, **REQ),
               lambda: led.release("ds", "r1", {"method": "randmargins"}),
               lambda: released_result(LedgerSettings(led.path, "ds", "r1")),
               lambda: led.status("ds", runs=True),
               lambda: led.verify(full=True)):
        with pytest.raises(LedgerError, match="run index") as info:
            op()
        assert "\n" not in str(info.value)
        assert "nothing was charged or released" in str(info.value)
    assert listing(Path(led.path)) == before
