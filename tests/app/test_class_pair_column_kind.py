"""Two listed classes that the label column's type reads as one are refused naming the
column's real kind (s51-labels item 1): ``dprect fit --label <boolean column> --classes
yes,true`` was refused by the list's own check, before the schema was read, as "the same
label of a numeric column". The engines now check a text list's pairs against the column's
kind from its schema, before anything is charged: one line, exit 2, no ledger row, no
output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run

import dprect
from dprect.release.ledger import Ledger

GRID = "0:1:64"


def write(tmp: Path, label: pa.Array) -> Path:
    gen = np.random.default_rng(0)
    n = len(label)
    path = tmp / "t.parquet"
    pq.write_table(pa.table({"a": gen.uniform(0, 1, n), "b": gen.uniform(0, 1, n),
                             "y": label}), path)
    return path


def refused(path: Path, tmp: Path, classes: str, capsys: pytest.CaptureFixture[str],
            engine: str = "numpy") -> str:
    led = tmp / "ledger"
    assert run(["budget", "init", "--ledger", str(led)], capsys)[0] == 0
    code, _, err = run(["fit", "--input", str(path), "--features", "a,b", "--label", "y",
                          "--classes", classes, "--epsilon", "1", "--delta", "1e-6",
                          "--grid", GRID, "--engine", engine, "--ledger", str(led),
                          "--dataset", "ds", "--output", str(tmp / "r.json")], capsys)
    lines = messages(err)
    assert code == 2 and "Traceback" not in err, err
    assert Ledger(str(led)).events("ds") == []  # no ledger row
    assert not (tmp / "r.json").exists()
    return lines[-1]


@pytest.mark.parametrize("classes", ["yes,true", "0,no", "x,1,true"])
def test_a_boolean_label_column_is_named_boolean(tmp_path: Path, classes: str,
                                                 capsys: pytest.CaptureFixture[str]):
    path = write(tmp_path, pa.array([True, False] * 20))
    line = refused(path, tmp_path, classes, capsys)
    assert "boolean column" in line and "numeric" not in line and "'y'" in line, line


def test_a_numeric_label_column_is_named_numeric(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]):
    path = write(tmp_path, pa.array([1.5, 2.0] * 20))
    line = refused(path, tmp_path, "1,yes", capsys)
    assert "numeric column" in line and "'y'" in line, line


def test_text_pairs_a_string_column_reads_apart_are_classes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """``yes`` and ``true`` are two labels of a string column: no refusal (the list's
    check no longer refuses them for a type the column does not have)."""
    path = write(tmp_path, pa.array(["yes", "true", "no"] * 20))
    code, _, err = run(["fit", "--input", str(path), "--features", "a,b", "--label", "y",
                        "--classes", "yes,true", "--epsilon", "1", "--delta", "1e-6",
                        "--grid", GRID, "--seed", "1", "--output",
                        str(tmp_path / "r.json")], capsys)
    assert code == 0, err


def test_the_lists_own_check_still_refuses_typed_pairs():
    """Values that are not text keep the list's check on every kind (the API's untyped
    y, a config's booleans); the kind-free check refuses text pairs too."""
    from dprect.core.labels import LabelText, check_class_pairs, check_classes

    with pytest.raises(dprect.ParameterError, match="numeric column"):
        check_classes([True, 1])
    assert len(check_classes([LabelText("yes"), LabelText("true")])) == 2
    with pytest.raises(dprect.ParameterError, match="numeric column"):
        check_class_pairs([LabelText("yes"), LabelText("true")])
    with pytest.raises(dprect.ParameterError, match=r"'y' \(a boolean column\)"):
        check_class_pairs([LabelText("yes"), LabelText("true")], "boolean", "y")
    # an integer column's exact integers are two labels; a float column's one
    big = [LabelText("9007199254740992"), LabelText("9007199254740993")]
    check_class_pairs(big, "numeric", "y", integral=True)
    with pytest.raises(dprect.ParameterError, match="numeric column"):
        check_class_pairs(big, "numeric", "y")
