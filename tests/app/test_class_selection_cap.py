"""At most MAX_CLASSES classes a run when a private selection finds them (docs/privacy.md
§18, "At most MAX_CLASSES classes"): the selection's kept values past the cap (less the
public classes listed beside it) are left out — the first kept in the order of their
text are fitted — on the command line and in Python alike; the record states how many
were left out and the charge is the one planned. The cap is lowered here (a run of 257
classes would fit 257 rectangles); the released list is a function of the selection's
output and the public list only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

import dprect
from dprect.app import classes_flow
from dprect.core import classes
from dprect.release.ledger import Ledger

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")
SELECT = ["--select-groups", "--selection-epsilon", "0.5", "--selection-delta", "1e-6"]
CAP = 3
#: five classes of 400 rows each (kept surely: N = 51 at (0.5, 1e-6)), in text order
KEPT = ["a", "b", "c", "d", "e"]


def _table(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    labels = [k for k in reversed(KEPT) for _ in range(400)]
    x = np.array([1.0 + (i % 7) for i in range(len(labels))])
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"lab": labels, "x": x, "y": x / 2}), path)
    return path, np.column_stack([x, x / 2]), np.array(labels)


@pytest.fixture()
def capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(classes, "MAX_CLASSES", CAP)
    monkeypatch.setattr(classes_flow, "MAX_CLASSES", CAP)


@pytest.mark.parametrize("listed", [[], ["zz"]])
def test_the_selection_releases_at_most_max_classes_the_first_in_text_order(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], capped: None,
        listed: list[str]) -> None:
    data, X, y = _table(tmp_path)
    ledger, out_path = tmp_path / "ledger", tmp_path / "o.json"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    extra = ["--classes", ",".join(listed)] if listed else []
    code, out, err = run(["fit", "--input", str(data), "--features", "x,y", "--label", "lab",
                          "--epsilon", "2", "--delta", "1e-6", "--grid", "0:10:64",
                          *SELECT, *extra, "--output", str(out_path), "--ledger",
                          str(ledger), "--dataset", "ds", "--seed", "4"], capsys)
    assert code == 0, err
    room = CAP - len(listed)
    record = json.loads(out_path.read_text())
    assert record["classes"] == [*listed, *KEPT[:room]]
    assert set(record["rectangles"]) == set(record["classes"])
    chosen = record["group_selection"]
    assert chosen["groups_kept"] == room and chosen["groups_past_cap"] == len(KEPT) - room
    assert f"plan: at most {CAP} classes a run" in out
    assert f"{len(KEPT) - room} more class(es) kept past the cap of {CAP}" in out
    runs = Ledger(str(ledger)).runs("ds")
    assert len(runs) == 1 and runs[0].epsilon == record["privacy"]["epsilon"]
    api = dprect.fit(X, y, epsilon=2, delta=1e-6, grid="0:10:64", features=["x", "y"],
                     seed=4, classes=listed or None, select_groups=True,
                     selection_epsilon=0.5, selection_delta=1e-6).to_json()
    assert api["classes"] == record["classes"]
    assert api["rectangles"] == record["rectangles"]
    assert api["group_selection"] == chosen


def test_below_the_cap_the_record_states_no_class_left_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, _, _ = _table(tmp_path)
    out_path = tmp_path / "o.json"
    code, out, err = run(["fit", "--input", str(data), "--features", "x,y", "--label", "lab",
                          "--epsilon", "2", "--delta", "1e-6", "--grid", "0:10:64",
                          *SELECT, "--output", str(out_path), "--seed", "4"], capsys)
    assert code == 0, err
    record = json.loads(out_path.read_text())
    assert record["classes"] == KEPT
    assert "groups_past_cap" not in record["group_selection"]
    assert "past the cap" not in out
