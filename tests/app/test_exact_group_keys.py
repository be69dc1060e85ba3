"""Numeric group keys compared in the group column's own type, end to end on the numpy
engine (``dprect aggregate``): int64 ids past 2^53 listed (``--groups``,
``--groups-file``) or found privately (``--select-groups``) are distinct groups whose keys
are printed by their digits in the JSON result and the CSV and Parquet tables; a float32
group column matches a listed ``0.1`` by its nearest float32. Keys that were already
exact are printed as before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")

BIG = 2**60
IDS = [BIG + 1, BIG + 2, BIG + 3]
ROWS = [40, 50, 60]


def _table(tmp_path: Path) -> Path:
    ids = np.repeat(np.array(IDS, dtype=np.int64), ROWS)
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({
        "id": pa.array(ids, pa.int64()),
        "f": pa.array(np.repeat(np.float32([0.1, 0.2, 0.3]), ROWS), pa.float32()),
        "x": np.linspace(0.0, 1.0, len(ids))}), path)
    return path


def _counts(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
            *options: str) -> tuple[dict[str, float], str, list[str]]:
    out, csv, parquet = (tmp_path / "o.json", tmp_path / "o.csv", tmp_path / "o.parquet")
    counts: dict[str, float] = {}
    texts = []
    for table in (csv, parquet):
        code, _, err = run(["aggregate", "--statistics", "count", "--input", str(path),
                            "--columns", "x", "--epsilon", "50", "--seed", "3",
                            *options, "--output", str(out), "--table", str(table),
                            "--quiet"], capsys)
        assert code == 0, err
        result = json.loads(out.read_text())
        counts = {r["group"]: r["count"] for r in result["results"]}
        texts.append(csv.read_text() if table == csv else "")
    groups = pq.read_table(parquet).column("group").to_pylist()
    return counts, texts[0], groups


def test_listed_int64_ids_past_2_53_are_separate_groups(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _table(tmp_path)
    listed = [str(IDS[0]), str(IDS[2]), str(BIG)]  # BIG: no row (its float64 is theirs)
    counts, csv, groups = _counts(path, tmp_path, capsys, "--group-by", "id",
                                  "--groups", ",".join(listed))
    assert list(counts) == listed == groups
    assert abs(counts[listed[0]] - 40) <= 2 and abs(counts[listed[1]] - 60) <= 2
    assert abs(counts[str(BIG)]) <= 2  # no row pooled in from the other ids
    assert f"\n{IDS[0]},x," in csv
    groups_file = tmp_path / "groups.txt"
    groups_file.write_text("\n".join(listed) + "\n")
    assert _counts(path, tmp_path, capsys, "--group-by", "id", "--groups-file",
                   str(groups_file))[0] == counts


def test_keys_found_privately_are_printed_exactly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _table(tmp_path)
    counts, csv, groups = _counts(path, tmp_path, capsys, "--group-by", "id",
                                  "--select-groups", "--selection-epsilon", "1",
                                  "--selection-delta", "1e-6")
    assert sorted(counts) == sorted(str(i) for i in IDS) == sorted(groups)
    for key, rows in zip(IDS, ROWS, strict=True):
        assert abs(counts[str(key)] - rows) <= 2
        assert f"\n{key},x," in csv


def test_a_listed_float_value_matches_a_float32_column(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _table(tmp_path)
    counts = _counts(path, tmp_path, capsys, "--group-by", "f", "--groups", "0.1,0.3,0.4")[0]
    assert list(counts) == ["0.1", "0.3", "0.4"]
    assert abs(counts["0.1"] - 40) <= 2 and abs(counts["0.3"] - 60) <= 2
    assert abs(counts["0.4"]) <= 2
    # the keys of a float32 column found privately: the float64 each widens to, as before
    found = _counts(path, tmp_path, capsys, "--group-by", "f", "--select-groups",
                    "--selection-epsilon", "1", "--selection-delta", "1e-6")[0]
    assert sorted(found) == sorted(repr(float(np.float32(v))) for v in (0.1, 0.2, 0.3))



def test_the_python_api_takes_int64_ids_and_float32_values_exactly() -> None:
    """``dprect.describe`` on an in-memory table: listed Python ints, keys found
    privately and a listed float for a float32 column, as the command line takes them."""
    import dprect

    ids = np.repeat(np.array(IDS, dtype=np.int64), ROWS)
    table = pa.table({"id": pa.array(ids, pa.int64()),
                      "f": pa.array(np.repeat(np.float32([0.1, 0.2, 0.3]), ROWS)),
                      "x": np.linspace(0.0, 1.0, len(ids))})
    listed = dprect.describe(table, ["x"], group_by="id", groups=[IDS[0], IDS[2]],
                             statistics=["count"], epsilon=50.0, seed=3)
    assert listed.groups == [IDS[0], IDS[2]]
    assert abs(listed.cell("x", IDS[0]).count - 40) <= 2
    found = dprect.describe(table, ["x"], group_by="id", select_groups=True,
                            selection_epsilon=1.0, selection_delta=1e-6,
                            statistics=["count"], epsilon=50.0, seed=3)
    assert sorted(found.groups) == sorted(str(i) for i in IDS)
    single = dprect.describe(table, ["x"], group_by="f", groups=[0.1, 0.4],
                             statistics=["count"], epsilon=50.0, seed=3)
    assert abs(single.cell("x", 0.1).count - 40) <= 2
