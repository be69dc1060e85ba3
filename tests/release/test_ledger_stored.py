"""Large released results in the ledger (issue #42): past ``INLINE_MAX_CHARS`` characters
of JSON a result is stored once as a file beside the ledger and its ``release`` row holds
a reference (dprect/release/ledger/stored.py).

* a large result is stored by reference (a small row, one file named by its SHA-256) and
  read back identical (``Ledger.run``, ``Ledger.runs``, a retried run id's previous
  result, ``released_result``, a guarded release replayed), also after compaction;
* a missing, truncated or edited stored file is damage: one line, never another result;
  through the command line exit code 2 and nothing written; ``budget verify`` checks
  every stored result;
* a small result stays inline, byte for byte the JSON it always was, and no file is made;
* a results folder that cannot be written refuses the reservation, nothing charged;
* a crash between the file and the row leaves the file only (an orphan), and the retried
  release reuses it.

The threshold is lowered by monkeypatching the module constant, so the results stay small.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from cli_run import messages, run
from golden_cases import INPUT, SEED

import dprect.release.ledger.stored as stored_module
from dprect.core.accounting import Guarantee
from dprect.release.guarded import (
    Charge,
    LedgerSettings,
    guarded_release,
    released_result,
    without_request,
)
from dprect.release.ledger import Ledger, LedgerError

REQ = {"method": "describe", "features": ["x"], "bound": "test bound",
       "neighbouring": "add-remove"}
LIMIT = 2_000


def big_result(groups: int = 200) -> dict[str, object]:
    return {"method": "describe", "guarantee": {"epsilon": 1.0, "delta": 0.0},
            "groups": [{"key": f"g{i}", "count": i + 0.25, "mean": -i / 3}
                       for i in range(groups)]}


@pytest.fixture
def low_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stored_module, "INLINE_MAX_CHARS", LIMIT)


def released(tmp_path: Path, result: dict[str, object], run_id: str = "r1") -> Ledger:
    led = Ledger(tmp_path / "ledger")
    led.init()
    led.reserve("ds", run_id, epsilon=1.0, delta=0.0, **REQ)
    assert led.release("ds", run_id, result) == result
    return led


def release_row(led: Ledger, run_id: str = "r1") -> dict[str, object]:
    (row,) = [e for e in led.events("ds") if e["event"] == "release"
              and e["run_id"] == run_id]
    return row


def stored_files(led: Ledger) -> list[Path]:
    folder = Path(led.path) / stored_module.RESULTS_DIR
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".")) \
        if folder.is_dir() else []


def test_a_large_result_is_stored_by_reference_and_read_back_identical(
        tmp_path: Path, low_threshold: None) -> None:
    result = big_result()
    text = json.dumps(result)
    assert len(text) > LIMIT
    led = released(tmp_path, result)
    row = release_row(led)
    assert isinstance(row["result"], str) and len(row["result"]) < LIMIT
    ref = json.loads(row["result"])
    (path,) = stored_files(led)
    assert ref["stored"] == f"{stored_module.RESULTS_DIR}/{path.name}"
    assert path.name == f"{ref['sha256']}.json.gz" and ref["bytes"] == len(text)
    assert gzip.decompress(path.read_bytes()) == text.encode("utf-8")
    # deflated at the fastest level (the gzip header's XFL byte: 4; issue #42)
    assert stored_module.LEVEL == 1 and path.read_bytes()[8] == 4
    assert ref["summary"] == {"method": "describe", "guarantee": result["guarantee"]}
    assert ref["sizes"] == {"groups": 200}
    record = Ledger(led.path).run("ds", "r1")
    assert record is not None and record.status == "released" and record.result == result
    assert [r.result for r in Ledger(led.path).runs("ds")] == [result]
    led.compact()  # compaction keeps the stored file and the reference
    assert stored_files(led) == [path]
    record = Ledger(led.path).run("ds", "r1")
    assert record is not None and record.result == result


def test_a_retried_released_run_id_returns_the_identical_stored_result(
        tmp_path: Path, low_threshold: None) -> None:
    result = big_result()
    led = released(tmp_path, result)
    assert json.loads(release_row(led)["result"])["format"] == stored_module.FORMAT
    again = Ledger(led.path).reserve("ds", "r1", epsilon=1.0, delta=0.0, **REQ)
    assert again.previous_result == result and not again.new_charge
    settings = LedgerSettings(led.path, "ds", "r1")
    assert released_result(settings) == result
    published: list[dict[str, object]] = []
    charge = Charge(Guarantee(1.0, 0.0, "add-remove", "test bound"), "describe", ["x"])

    def compute() -> tuple[Guarantee, dict[str, object]]:
        raise AssertionError("a released run id must not compute again")

    outcome = guarded_release(settings, charge, compute, published.append)
    assert outcome.replayed and outcome.result == result and published == [result]
    assert Ledger(led.path).spent("ds").epsilon == pytest.approx(1.0)  # charged once
    assert release_row(Ledger(led.path))["result"] == release_row(led)["result"]


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:40])


def _edit(path: Path) -> None:  # a valid gzip file of another result
    other = json.dumps(big_result(201)).encode("utf-8")
    path.write_bytes(gzip.compress(other, mtime=0))


def _not_gzip(path: Path) -> None:
    path.write_bytes(b"not a gzip file at all")


@pytest.mark.parametrize("damage", [Path.unlink, _truncate, _edit, _not_gzip],
                         ids=["missing", "truncated", "edited", "not-gzip"])
def test_a_missing_or_corrupt_stored_result_is_damage_in_one_line(
        tmp_path: Path, low_threshold: None, damage) -> None:
    led = released(tmp_path, big_result())
    (path,) = stored_files(led)
    damage(path)
    fresh = Ledger(led.path)
    calls = {
        "run": lambda: fresh.run("ds", "r1"),
        "runs": lambda: fresh.runs("ds"),
        "reserve": lambda: fresh.reserve("ds", "r1", epsilon=1.0, delta=0.0, **REQ),
        "release": lambda: fresh.release("ds", "r1", big_result()),
        "released_result": lambda: released_result(LedgerSettings(led.path, "ds", "r1")),
        "verify": lambda: fresh.verify(full=True),
    }
    for name, call in calls.items():
        with pytest.raises(LedgerError) as info:
            call()
        message = str(info.value)
        assert "\n" not in message and "Traceback" not in message, name
        assert "is damaged" in message and "_dprect_results/" in message, (name, message)
    assert len(fresh.events("ds")) == 2  # nothing charged or released again
    assert fresh.verify() >= 2  # the quick check reads no stored result


def test_budget_verify_checks_every_stored_result(
        tmp_path: Path, low_threshold: None, capsys: pytest.CaptureFixture[str]) -> None:
    led = released(tmp_path, big_result())
    code, out, err = run(["budget", "verify", "--ledger", led.path], capsys)
    assert code == 0 and "verified" in out, err
    (path,) = stored_files(led)
    _truncate(path)
    code, out, err = run(["budget", "verify", "--ledger", led.path], capsys)
    assert code == 2, (out, err)
    lines = messages(err)
    assert len(lines) == 1 and "is damaged" in lines[0] and path.name in lines[0], err


def test_small_results_stay_inline_unchanged(tmp_path: Path) -> None:
    result = {"method": "randmargins", "rectangle": [[0.0, 1.0], [2.5, 3.5]]}
    led = released(tmp_path, result)
    assert release_row(led)["result"] == json.dumps(result)  # the row as it always was
    assert stored_files(led) == []
    record = Ledger(led.path).run("ds", "r1")
    assert record is not None and record.result == result


def test_an_inline_result_shaped_like_a_reference_is_still_inline(tmp_path: Path) -> None:
    result = {"stored": "elsewhere", "sha256": "0" * 64, "bytes": 3}
    led = released(tmp_path, result)
    assert release_row(led)["result"] == json.dumps(result)
    record = Ledger(led.path).run("ds", "r1")
    assert record is not None and record.result == result


def test_an_unwritable_results_folder_refuses_the_reservation(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger")
    led.init()
    (tmp_path / "ledger" / stored_module.RESULTS_DIR).write_text("a file, not a folder")
    with pytest.raises(LedgerError) as info:
        led.reserve("ds", "r1", epsilon=1.0, delta=0.0, **REQ)
    assert "results folder" in str(info.value) and "nothing was charged" in str(info.value)
    assert "\n" not in str(info.value)
    assert led.events("ds") == [] and led.run("ds", "r1") is None


def test_a_crash_between_the_file_and_the_row_leaves_an_orphan_file_only(
        tmp_path: Path, low_threshold: None, monkeypatch: pytest.MonkeyPatch) -> None:
    led = Ledger(tmp_path / "ledger")
    led.init()
    led.reserve("ds", "r1", epsilon=1.0, delta=0.0, **REQ)
    result = big_result()

    def crash(*args: object, **kwargs: object) -> bool:
        raise KeyboardInterrupt  # the process dies before the row commits

    with monkeypatch.context() as m:
        m.setattr(Ledger, "_transact", crash)
        with pytest.raises(KeyboardInterrupt):
            led.release("ds", "r1", result)
    (orphan,) = stored_files(led)
    record = Ledger(led.path).run("ds", "r1")
    assert record is not None and record.status == "reserved"  # no release row
    assert Ledger(led.path).release("ds", "r1", result) == result  # the retry
    assert stored_files(led) == [orphan]  # the same file, now referenced
    record = Ledger(led.path).run("ds", "r1")
    assert record is not None and record.result == result


def test_the_command_line_stores_replays_and_refuses_a_missing_stored_result(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stored_module, "INLINE_MAX_CHARS", 200)
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    common = ["aggregate", "--input", str(INPUT), "--columns", "x,y", "--statistics",
              "count,mean", "--group-by", "g", "--groups", "a,b,c", "--epsilon", "1",
              "--seed", SEED, "--ledger", str(ledger), "--dataset", "ds", "--run-id", "r1"]
    code, _, err = run([*common, "--output", str(tmp_path / "a.json")], capsys)
    assert code == 0, err
    led = Ledger(ledger)
    (path,) = stored_files(led)
    assert json.loads(release_row(led)["result"])["stored"].endswith(path.name)
    code, out, err = run([*common, "--output", str(tmp_path / "b.json")], capsys)
    assert code == 0 and "released before" in out, err
    assert (tmp_path / "b.json").read_text() == (tmp_path / "a.json").read_text()
    path.unlink()
    code, out, err = run([*common, "--output", str(tmp_path / "c.json")], capsys)
    assert code == 2, (out, err)
    lines = messages(err)
    assert len(lines) == 1 and "is damaged" in lines[0] and "Traceback" not in err, err
    assert not (tmp_path / "c.json").exists()


def test_a_record_of_spooled_rows_is_stored_as_its_rows_in_a_list(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record whose rows are spooled on disk (a streamed run, issue #42) is hashed and
    compressed on the way to its file, never joined in memory: the same reference, the
    same file's content and the same result read back as the record of the same rows in a
    list (whose text is the one JSON written at once)."""
    from dprect.release import record_text as text_module
    from dprect.release.row_spool import RowSpool, pack_block

    monkeypatch.setattr(text_module, "COMPACT_ITEMS", 10)
    monkeypatch.setattr(stored_module, "INLINE_MAX_CHARS", LIMIT)
    rows = [{"group": f"g{i}", "column": "x", "mean": -i / 3, "count": i + 0.25}
            for i in range(700)]
    spool = RowSpool()
    for start in range(0, 700, 64):
        block = rows[start:start + 64]
        spool.append(pack_block(len(block), text_module.item_lines(block)))
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    listed = {"method": "describe", "results": rows, "privacy": {"epsilon": 1.0}}
    spooled = {**listed, "results": spool}
    joined = list(text_module.ledger_chunks(spooled))
    assert len(joined) > 2  # in pieces
    assert "".join(joined) == text_module.ledger_text(listed)
    ref_a = stored_module.store(str(a), text_module.ledger_chunks(spooled), spooled)
    ref_b = stored_module.store(str(b), text_module.ledger_text(listed), listed)
    assert ref_a == ref_b and json.loads(ref_a)["sizes"] == {"results": 700}
    assert stored_module.resolve(str(a), ref_a) == listed
    small = {"method": "describe", "results": rows[:3]}  # inline, as before
    assert stored_module.store(str(a), iter(["{", json.dumps(small)[1:]]), small) == \
        json.dumps(small)


def test_the_stored_copy_and_the_json_output_lay_out_the_spooled_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A spooled record's rows are encoded ONCE, where their blocks were packed: the
    ledger's stored copy and the JSON output both lay the record's text out around the
    spooled items' texts (byte for byte the text of the same rows in a list) with no row
    encoded again; a record with other entries around the same spool too."""
    from dprect.release import record_text as text_module
    from dprect.release.row_spool import RowSpool, pack_block

    monkeypatch.setattr(text_module, "COMPACT_ITEMS", 10)
    monkeypatch.setattr(stored_module, "INLINE_MAX_CHARS", LIMIT)
    rows = [{"group": f"g{i}", "column": "x", "mean": -i / 7} for i in range(500)]
    spool = RowSpool()
    for start in range(0, 500, 64):
        block = rows[start:start + 64]
        spool.append(pack_block(len(block), text_module.item_lines(block)))
    listed = {"method": "describe", "results": rows, "privacy": {"epsilon": 1.0}}
    spooled = {**listed, "results": spool}
    expected = text_module.record_text(listed)
    other = {**spooled, "privacy": {"epsilon": 2.0}}
    other_text = text_module.record_text({**listed, "privacy": {"epsilon": 2.0}})
    monkeypatch.setattr(text_module, "_item", lambda *a: pytest.fail("encoded again"))
    ref = stored_module.store(str(tmp_path), text_module.ledger_chunks(spooled), spooled)
    assert "".join(text_module.record_chunks(spooled)) == expected
    (path,) = (tmp_path / stored_module.RESULTS_DIR).glob("*.json.gz")
    assert gzip.decompress(path.read_bytes()).decode() == expected
    assert json.loads(ref)["bytes"] == len(expected.encode())
    assert "".join(text_module.record_chunks(other)) == other_text
    spool.close()


def test_deflate_pieces_made_where_blocks_were_packed_are_stored_as_they_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A spooled record whose blocks were packed with their text's DEFLATE piece at the
    stored copy's level (a ledger run: the executors deflate, issue #42): the stored file
    holds each piece byte for byte (the driver deflates only the text around them), is
    one gzip member any reader takes (``gzip.decompress``, ``gzip.open`` in ``check``),
    and decompresses to the record's text — the same reference as the record of the same
    rows in a list; pieces at another level are not used (deflated again)."""
    from dprect.release import record_text as text_module
    from dprect.release.row_spool import RowSpool, deflate_piece, pack_block

    monkeypatch.setattr(text_module, "COMPACT_ITEMS", 10)
    monkeypatch.setattr(stored_module, "INLINE_MAX_CHARS", LIMIT)
    rows = [{"group": f"g{i}", "column": "x", "mean": -i / 3, "count": i + 0.25}
            for i in range(700)]
    listed = {"method": "describe", "results": rows, "privacy": {"epsilon": 1.0}}
    refs = []
    for level in (stored_module.LEVEL, 6):
        spool = RowSpool()
        texts = []
        for start in range(0, 700, 64):
            block = rows[start:start + 64]
            texts.append(text_module.item_lines(block))
            spool.append(pack_block(len(block), texts[-1], deflate=level))
        where = tmp_path / str(level)
        where.mkdir()
        spooled = {**listed, "results": spool}
        refs.append(stored_module.store(str(where), text_module.ledger_chunks(spooled),
                                        spooled))
        (path,) = (where / stored_module.RESULTS_DIR).glob("*.json.gz")
        packed = path.read_bytes()
        assert packed[:2] == b"\x1f\x8b" and packed[8] == 4  # gzip, XFL of level 1
        used = [deflate_piece(t.encode(), level) in packed for t in texts]
        assert all(used) if level == stored_module.LEVEL else not any(used)
        assert gzip.decompress(packed) == text_module.ledger_text(listed).encode()
        stored_module.check(str(where), refs[-1])
        assert stored_module.resolve(str(where), refs[-1]) == listed
        spool.close()
    assert refs[0] == refs[1] == stored_module.store(
        str(tmp_path), text_module.ledger_text(listed), listed)


def test_a_streamed_runs_json_is_encoded_once_and_written_byte_for_byte(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A numpy describe of 1,200 cells (its rows spooled, issue #42) under a ledger: each
    row is encoded once (its block's items, as the block is spooled; the stored copy and
    the JSON output lay the record out around them), the JSON output is byte for byte the
    one the same seeded run writes without a ledger, and the stored copy holds those
    bytes (and after them the run's public request, which a replay compares)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprect.release import record_text as text_module

    groups = [f"g{i:03d}" for i in range(600)]
    data = tmp_path / "t.parquet"
    pq.write_table(pa.table({"g": [g for g in groups for _ in range(3)],
                             "x": [float(i % 11) for i in range(1800)],
                             "y": [float(i % 5) for i in range(1800)]}), data)
    encodings: list[int] = []
    item = text_module._item

    def counted(value: object) -> str:
        if isinstance(value, dict) and "lower" in value:  # a record row
            encodings.append(1)
        return item(value)

    monkeypatch.setattr(text_module, "_item", counted)
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    common = ["describe", "--input", str(data), "--columns", "x,y", "--group-by", "g",
              "--groups", ",".join(groups), "--epsilon", "1", "--seed", SEED, "--quiet"]
    code, _, err = run([*common, "--output", str(tmp_path / "a.json"), "--ledger",
                        str(ledger), "--dataset", "ds"], capsys)
    assert code == 0, err
    assert len(encodings) == 1200  # each row once: the outputs laid out around them
    code, _, err = run([*common, "--output", str(tmp_path / "b.json")], capsys)
    assert code == 0, err
    written = (tmp_path / "a.json").read_bytes()
    assert written == (tmp_path / "b.json").read_bytes()
    (path,) = stored_files(Ledger(ledger))
    stored = gzip.decompress(path.read_bytes())  # the output's bytes, then the request
    assert written.endswith(b"\n}\n") and stored.startswith(written[:-3] + b",\n")
    assert without_request(json.loads(stored)) == json.loads(written)
