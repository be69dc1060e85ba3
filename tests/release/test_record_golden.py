"""The released record of a seeded many-group describe run, as the outputs write it, is the
one recorded before the release layer was made fast (issue #42): the record
(:func:`~dprect.release.aggregate_record.aggregate_record`), the JSON file as parsed, the
CSV table's bytes and the summary lines — their SHA-256 in
tests/data/golden/describe_record.json, recorded from this branch's base (b467677) before
the change, with the large-record path (:data:`~dprect.release.record_text.COMPACT_ITEMS`)
off and on, and with its rows spooled on disk as a streamed run's are
(:class:`~dprect.release.row_spool.RowSpool`, issue #42). A record of no more than
:data:`~dprect.release.record_text.COMPACT_ITEMS` items per list keeps its JSON file byte
for byte (``json.dumps(record, indent=2)``). The "default" and "spread" digests were
re-recorded once when the plan gained its pooled split (issue #41/#42, docs/privacy.md
§11, Lemma D6: the record's plan and check route state it); their released rows did not
change (tests/engines/test_many_groups_golden.py compares them with the 895d51f record:
every column of these runs has an anchor, so none takes the pooled split). Their csv,
json and record digests were re-recorded again when the mean's interval was rounded
outward (session 48: only the mean, variance and std ends moved, each one float or more
outward; the summary and overview lines unchanged).

Set ``DPRECT_GOLDEN_WRITE=1`` to re-record (only when an output is MEANT to change)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from dprect.core.statistic import QUERY
from dprect.release import record_text as text_module
from dprect.release.aggregate_record import aggregate_record, overview_lines, summary_lines
from dprect.release.aggregate_table import table_sink
from dprect.release.record_text import record_text
from dprect.release.sinks import JsonSink, Release

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "engines"))
from test_many_groups_golden import _drawn, _plans

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "golden" / "describe_record.json"


def _record(name: str, seed: int) -> dict[str, Any]:
    plan = _plans()[name]
    return aggregate_record(_drawn(plan, seed), plan)


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False,
                      default=list)  # a spool of rows as the list it holds


def _outputs(record: dict[str, Any], where: Path) -> dict[str, str]:
    release = Release(record, "run", datetime(2026, 1, 1, tzinfo=UTC))
    JsonSink("--output", str(where / "r.json")).prepare(release)()
    table_sink("--table", str(where / "t.csv"), QUERY,
               record["plan"]["statistics"]).prepare(release)()
    return {"record": _sha(_canonical(record)),
            "json": _sha(_canonical(json.loads((where / "r.json").read_text()))),
            "csv": _sha((where / "t.csv").read_bytes()),
            "summary": _sha("\n".join(summary_lines(record))),
            "overview": _sha("\n".join(overview_lines(record)))}


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("name,seed", [("default", 11), ("spread", 12), ("bounds", 13)])
def test_a_seeded_many_group_record_is_the_recorded_one(name, seed, large, tmp_path,
                                                        monkeypatch):
    """``large``: the 720-row record is written and read as a 10^5-group one is (its
    long lists one compact item per line)."""
    if large:
        monkeypatch.setattr(text_module, "COMPACT_ITEMS", 100)
    record = _record(name, seed)
    got = _outputs(record, tmp_path)
    text = (tmp_path / "r.json").read_text()
    assert (text == json.dumps(record, indent=2, allow_nan=False) + "\n") is not large
    if large:  # a row a line: a reader can stream it
        assert sum(line.startswith('    {"group": ') for line in text.splitlines()) == \
            len(record["results"])
    if os.environ.get("DPRECT_GOLDEN_WRITE") and not large:
        recorded = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        GOLDEN.write_text(json.dumps({**recorded, name: got}, indent=1, sort_keys=True)
                          + "\n")
    assert got == json.loads(GOLDEN.read_text())[name]


def _nested(n: int) -> dict[str, Any]:
    rows = [{"group": f"g{i}", "x": i / 7, "y": None, "z": "inf", "f": i % 2 == 0}
            for i in range(n)]
    return {"method": "a+b", "plan": {"shares": [0.5, 0.5], "x": {"y": []}},
            "parts": {"a": {"results": rows, "groups": [r["group"] for r in rows]},
                      "b": {"results": rows[:3]}},
            "results": rows, "empty": {}, "none": None}


@pytest.mark.parametrize("n", [0, 3, 1000])
def test_a_record_of_short_lists_is_written_as_before_byte_for_byte(n):
    record = _nested(n)
    assert record_text(record) == json.dumps(record, indent=2, allow_nan=False) + "\n"


def test_a_record_of_long_lists_is_the_same_json_one_item_per_line():
    record = _nested(1001)
    text = record_text(record)
    assert json.loads(text) == record
    lines = text.splitlines()
    assert len(lines) < 4 * 1001 + 50  # the rows are not spread one value a line
    assert lines[0] == "{" and lines[1] == '  "method": "a+b",'
    assert '      "results": [' in lines and lines.count(
        "        " + json.dumps(record["results"][5]) + ",") == 1
    with pytest.raises(ValueError):  # strict JSON still: no NaN
        record_text({**record, "results": [*record["results"], {"x": float("nan")}]})


@pytest.mark.parametrize("name,seed", [("default", 11), ("spread", 12)])
def test_a_record_of_spooled_rows_writes_the_recorded_outputs(name, seed, tmp_path,
                                                             monkeypatch):
    """The record of a streamed run — its blocks appended to a spool on disk
    (:class:`~dprect.release.row_spool.RowSpool`), each packed from that block's cells
    alone as a task packs it (:class:`~dprect.release.block_pack.BlockPacker`: its rows'
    JSON items and table batch) — writes the golden outputs: the JSON byte for byte as
    the in-memory record's, the CSV, the summary."""
    from dataclasses import replace

    from dprect.release.block_pack import BlockPacker
    from dprect.release.row_spool import RowSpool

    monkeypatch.setattr(text_module, "COMPACT_ITEMS", 100)
    plan = _plans()[name]
    result = _drawn(plan, seed)
    spool = RowSpool()
    pack = BlockPacker(QUERY.name)
    for start in range(0, len(result.groups), 7):  # blocks of 7 groups
        spool.append(pack(replace(result, groups=result.groups[start:start + 7],
                                  cells=result.cells[start:start + 7])))
    assert spool.block_count > 1
    record = aggregate_record(replace(result, cells=[]), plan, spool)
    assert record["results"] is spool
    memory = _record(name, seed)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    got = _outputs(record, tmp_path / "a")
    assert got == _outputs(memory, tmp_path / "b")
    assert got == json.loads(GOLDEN.read_text())[name]
    assert (tmp_path / "a" / "r.json").read_bytes() == (tmp_path / "b" / "r.json").read_bytes()


def test_a_stored_result_summarises_a_long_list_without_serialising_it(tmp_path):
    """A stored result's reference gives the size of a list too long for its summary
    without encoding it again (the list below cannot be encoded at all)."""
    from dprect.release.ledger.stored import SUMMARY_ITEM_CHARS, reference, store

    long = [object()] * (SUMMARY_ITEM_CHARS + 1)
    text = store(str(tmp_path), "x" * 70_000, {"method": "m", "results": long})
    ref = reference(text)
    assert ref is not None and ref["sizes"] == {"results": SUMMARY_ITEM_CHARS + 1}
    assert ref["summary"] == {"method": "m"}


def test_a_long_record_is_encoded_once_for_the_ledger_and_the_json_output(tmp_path,
                                                                           monkeypatch):
    """Under a ledger a long record's stored copy is the JSON output's text, encoded once
    (:func:`~dprect.release.record_text.ledger_text`); both read back as the record."""
    import gzip

    from dprect.core.accounting import Guarantee
    from dprect.release.guarded import Charge, LedgerSettings, guarded_release
    from dprect.release.ledger import Ledger
    from dprect.release.sinks import publish

    record = _nested(1001)
    calls: list[int] = []
    encode = text_module._text
    monkeypatch.setattr(text_module, "_text", lambda v, level: (
        calls.append(level) if level == 0 else None) or encode(v, level))
    led = Ledger(tmp_path / "ledger")
    led.init()
    guarantee = Guarantee(1.0, 0.0, "add-remove", "test bound")
    out = tmp_path / "r.json"
    outcome = guarded_release(
        LedgerSettings(led.path, "ds", "r1"), Charge(guarantee, "a+b", ["x"]),
        lambda: (guarantee, record),
        lambda r: publish([JsonSink("--output", str(out))],
                          Release(r, "r1", datetime(2026, 1, 1, tzinfo=UTC))))
    assert outcome.result == record and calls == [0]  # one encoding for both
    (stored,) = (Path(led.path) / "_dprect_results").glob("*.json.gz")
    assert gzip.decompress(stored.read_bytes()).decode() == out.read_text()
    assert json.loads(out.read_text()) == record
    assert Ledger(led.path).run("ds", "r1").result == record


def test_a_long_lists_item_is_json_dumps_text_by_one_encoder(monkeypatch):
    """A long list's items are written by one encoder made once (issue #42): the text
    ``json.dumps(item, allow_nan=False)`` gives for rows, names, numbers (a numpy float, a
    float's shortest repr, ±0.0), nested and non-ASCII values; NaN and ±inf are refused
    as ``json.dumps`` refuses them, an object JSON has no form for too. No encoder is made
    per item."""
    import numpy as np

    items: list[Any] = [
        {"group": "g1", "column": "x", "lower": -0.0, "upper": 1e300, "count": 3.0,
         "mean": 0.1 + 0.2, "variance": None, "below_row_need": True},
        "g\u00e9 \u2603 \"q\"\n", 7, True, None, np.float64(2.5) / 3, [1, [2.0, {"a": "b"}]],
        {"k": {"nested": [None, False]}}, float(2**53 + 1), -123456789.125]
    for item in items:
        assert text_module._item(item) == json.dumps(item, allow_nan=False)
    for bad in (float("nan"), {"x": float("inf")}, [float("-inf")], {"x": object()}):
        with pytest.raises((ValueError, TypeError)) as got:
            text_module._item(bad)
        with pytest.raises(got.type):
            json.dumps(bad, allow_nan=False)
    made: list[int] = []
    real = json.JSONEncoder.__init__

    def counted(self, *args, **kwargs):
        made.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(json.JSONEncoder, "__init__", counted)
    record = {"results": [{"group": f"g{i}", "mean": i / 7} for i in range(1500)]}
    text = record_text(record)
    assert json.loads(text) == record and not made
