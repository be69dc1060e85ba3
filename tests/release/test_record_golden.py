"""The released record of a seeded many-group describe run, as the outputs write it, is the
one recorded before the release layer was made fast (issue #42): the record
(:func:`~dprect.release.aggregate_record.aggregate_record`), the JSON file as parsed, the
CSV table's bytes and the summary lines — their SHA-256 in
tests/data/golden/describe_record.json, recorded from this branch's base (b467677) before
the change. A record of fewer than :data:`~dprect.release.sinks.COMPACT_ITEMS` items per
list keeps its JSON file byte for byte (``json.dumps(record, indent=2)``).

Set ``DPRECT_GOLDEN_WRITE=1`` to re-record (only when an output is MEANT to change)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from dprect.core.randomness import RandomSource
from dprect.core.statistic import QUERY
from dprect.engines.grouped import grouped_statistics
from dprect.release.aggregate_record import aggregate_record, overview_lines, summary_lines
from dprect.release.aggregate_table import table_sink
from dprect.release.sinks import JsonSink, Release

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "engines"))
from test_many_groups_golden import COLUMNS, GROUPS, _plans, _table  # noqa: E402

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "golden" / "describe_record.json"


def _record(name: str, seed: int) -> dict[str, Any]:
    plan = _plans()[name]
    values, group = _table(empty=plan.squares_scale is None)
    spec = QUERY.spec([None] * COLUMNS, plan.statistics)  # type: ignore[list-item]
    cells = grouped_statistics(values, group, GROUPS, spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        rng = RandomSource(seed=seed)
    result = QUERY.draw(plan, cells, [f"g{g}" for g in range(GROUPS)], ["a", "b", "c"],
                        rng)
    return aggregate_record(result, plan)


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


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


@pytest.mark.parametrize("name,seed", [("default", 11), ("spread", 12), ("bounds", 13)])
def test_a_seeded_many_group_record_is_the_recorded_one(name, seed, tmp_path):
    got = _outputs(_record(name, seed), tmp_path)
    if os.environ.get("DPRECT_GOLDEN_WRITE"):
        recorded = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        GOLDEN.write_text(json.dumps({**recorded, name: got}, indent=1, sort_keys=True)
                          + "\n")
    assert got == json.loads(GOLDEN.read_text())[name]
