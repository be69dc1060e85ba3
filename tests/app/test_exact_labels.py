"""Numeric labels compared in the label column's own type (dprect/core/labels.py
``resolve_positive_label``, dprect/engines/arrow_input.py ``label_matches``,
dprect/app/api.py ``positive_mask`` and ``label_counts``, dprect/core/classes.py
``label_candidates``): an int64 label past 2^53 names its own rows only (``--positive-label``,
``--classes``, classes found by ``--select-groups``, named by their digits); listed text
classes are told apart in the column's type too (the engines check their pairs against the
schema: s51-labels), a Python list's values still as float64s (no schema)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

import dprect
from dprect.core.errors import ParameterError
from dprect.core.labels import LabelText, check_class_pairs, check_classes, resolve_positive_label

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")

BIG = 2**60
#: BIG+1 and BIG+2 are one float64 (2^60), BIG+1001 another (2^60 + 1024)
IDS = [BIG + 1, BIG + 2, BIG + 1001]
N = 3000


def _frame() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Feature a: IDS[0]'s rows in [0, 1], IDS[1]'s in [2, 3], IDS[2]'s in [4, 5]."""
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.uniform(2 * i, 2 * i + 1, N) for i in range(3)])
    ids = np.repeat(np.array(IDS, dtype=np.int64), N)
    return a, ids, np.repeat(np.float32([0.1, 0.2, 0.3]), N)


@pytest.fixture
def parquet(tmp_path: Path) -> Path:
    a, ids, f = _frame()
    path = tmp_path / "l.parquet"
    pq.write_table(pa.table({"a": a, "id": pa.array(ids, pa.int64()),
                             "f": pa.array(f, pa.float32())}), path)
    return path


def _fit(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
         *options: str) -> dict:
    out = tmp_path / "f.json"
    code, _, err = run(["fit", "--input", str(path), "--features", "a", "--epsilon", "1",
                        "--delta", "1e-6", "--grid", "0:8:1024", "--seed", "1",
                        "--output", str(out), "--quiet", *options], capsys)
    assert code == 0, err
    return json.loads(out.read_text())


def test_the_resolved_label_is_the_columns_own_value() -> None:
    assert resolve_positive_label(LabelText(str(IDS[0])), "numeric", "id",
                                  integral=True) == IDS[0]
    assert resolve_positive_label(LabelText("1e3"), "numeric", "id", integral=True) == 1000
    # listed text classes are checked against the column's type (s51-labels): two ids
    # one float64 reads alike are two labels of an integer column, one of a float column
    listed = [LabelText(str(IDS[0])), LabelText(str(IDS[1]))]
    assert len(check_classes(listed)) == 2
    check_class_pairs(listed, "numeric", "id", integral=True)
    with pytest.raises(ParameterError, match="numeric column"):
        check_class_pairs(listed, "numeric", "f")


def test_an_int64_positive_label_past_2_53_names_its_own_rows(
        parquet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    got = _fit(parquet, tmp_path, capsys, "--label", "id", "--positive-label", str(IDS[0]))
    assert got["upper"][0] <= 1.5  # IDS[1]'s rows (up to 3) not pooled in


def test_int64_classes_listed_and_found_are_their_own_rows(
        parquet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listed = _fit(parquet, tmp_path, capsys, "--label", "id", "--classes",
                  f"{IDS[0]},{IDS[2]}")
    assert listed["classes"] == [str(IDS[0]), str(IDS[2])]
    assert listed["rectangles"][str(IDS[0])]["upper"][0] <= 1.5
    assert listed["rectangles"][str(IDS[2])]["lower"][0] >= 3.5
    apart = _fit(parquet, tmp_path, capsys, "--label", "id", "--classes",
                 f"{IDS[0]},{IDS[1]}")  # one float64, two int64 labels: two classes
    assert apart["rectangles"][str(IDS[0])]["upper"][0] <= 1.5
    assert apart["rectangles"][str(IDS[1])]["lower"][0] >= 1.5
    found = _fit(parquet, tmp_path, capsys, "--label", "id", "--select-groups",
                 "--selection-epsilon", "0.5", "--selection-delta", "1e-6")
    assert sorted(found["classes"]) == sorted(str(i) for i in IDS)
    assert found["rectangles"][str(IDS[1])]["lower"][0] >= 1.5
    beside = _fit(parquet, tmp_path, capsys, "--label", "id", "--classes", str(IDS[1]),
                  "--select-groups", "--selection-epsilon", "0.5", "--selection-delta",
                  "1e-6")
    assert beside["classes"][0] == str(IDS[1])  # listed, never selected a second time
    assert sorted(beside["classes"]) == sorted(str(i) for i in IDS)


def test_the_python_api_compares_labels_in_ys_type() -> None:
    a, ids, _ = _frame()
    X = a.reshape(-1, 1)
    res = dprect.fit(X, ids, positive_label=IDS[0], grid="0:8:1024", epsilon=1.0,
                     delta=1e-6, seed=1)
    assert res.upper[0] <= 1.5
    found = dprect.fit(X, ids, grid="0:8:1024", epsilon=1.0, delta=1e-6, seed=1,
                       select_groups=True, selection_epsilon=0.5, selection_delta=1e-6)
    assert sorted(found.classes) == sorted(str(i) for i in IDS)


def test_a_float32_label_is_read_as_its_nearest_float32(
        parquet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A float32 label column (or y) takes a label by its nearest float32, as a group
    value (s51-labels): ``0.2`` names float32(0.2)'s rows, which as float64 it never
    matched; two classes of one float32 are one label, refused before anything runs."""
    got = _fit(parquet, tmp_path, capsys, "--label", "f", "--positive-label", "0.2")
    assert 1.5 <= got["lower"][0] and got["upper"][0] <= 3.5
    a, _, f = _frame()
    res = dprect.fit(a.reshape(-1, 1), f, positive_label=0.2, grid="0:8:1024", epsilon=1.0,
                     delta=1e-6, seed=1)
    assert 1.5 <= res.lower[0] and res.upper[0] <= 3.5
    assert resolve_positive_label(LabelText("1e300"), "numeric", "f", single=True) is None
    with pytest.raises(ParameterError, match=r"y \(numeric labels\)"):
        dprect.fit(a.reshape(-1, 1), f, classes=[0.1, 0.10000000149011612],
                   grid="0:8:1024", epsilon=1.0, delta=1e-6)
