"""Text keys whose bytes are not UTF-8. A Parquet string column can hold such bytes
(a writer that does not check them); pyarrow reads them unchecked, and the numpy engine's
private selection turned the distinct keys into Python text with ``to_pylist``, which
raised UnicodeDecodeError once the budget was reserved: ``aggregate --select-groups`` and
``fit --select-groups`` ended "internal error (UnicodeDecodeError)", exit 1, the ledger's
reservation failed and spent. Spark reads such a key as Java does, each bad sequence one
U+FFFD, and released it. The numpy engine now reads it the same way
(:func:`dprect.engines.arrow_input.python_values`); tests/spark/test_group_selection_spark.py
compares the two engines' bytes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dprect.engines.arrow_input import python_values
from tests.cli_run import run

SELECT = ["--select-groups", "--selection-epsilon", "1", "--selection-delta", "1e-6"]


def bad_text_table(path: Path, column: str, rows: int = 600) -> Path:
    """Half the rows keyed ``ok``, half by the bytes ``\\xffbad`` (not UTF-8), in a
    Parquet string column ``column``, beside two numeric columns ``x`` and ``z``."""
    gen = np.random.default_rng(11)
    keys = pa.array([b"\xffbad" if i % 2 else b"ok" for i in range(rows)],
                    pa.binary()).view(pa.string())
    pq.write_table(pa.table({"x": gen.normal(size=rows), "z": gen.normal(size=rows),
                             column: keys}), path)
    return path


@pytest.mark.parametrize("statistics", ["count,mean", "median", "coverage"])
def test_a_selection_over_keys_that_are_not_utf8_releases_them_as_spark_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], statistics: str) -> None:
    data = bad_text_table(tmp_path / "t.parquet", "g")
    ledger, out = tmp_path / "ledger", tmp_path / "o.json"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    code, _, err = run(["aggregate", "--input", str(data), "--columns", "x",
                        "--statistics", statistics, "--epsilon", "1", "--group-by", "g",
                        *SELECT, "--seed", "1", "--quiet", "--output", str(out),
                        "--ledger", str(ledger), "--dataset", "ds"], capsys)
    assert code == 0, err
    assert sorted(json.loads(out.read_text())["groups"]) == ["ok", "\ufffdbad"]


def test_a_class_selection_over_labels_that_are_not_utf8_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = bad_text_table(tmp_path / "t.parquet", "y", rows=3000)
    out = tmp_path / "o.json"
    code, _, err = run(["fit", "--input", str(data), "--features", "x,z", "--label", "y",
                        *SELECT, "--epsilon", "1", "--delta", "1e-6", "--grid=-4:4:16",
                        "--seed", "1", "--quiet", "--output", str(out)], capsys)
    assert code == 0, err
    assert sorted(json.loads(out.read_text())["classes"]) == ["ok", "\ufffdbad"]


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string(), pa.string_view()])
def test_python_values_reads_each_bad_sequence_as_one_replacement(kind) -> None:
    raw = pa.array([b"\xff\xfebad", b"ok", None, "\u00e9".encode(), b"\xc3"], pa.binary())
    values = raw.view(pa.string()).cast(kind) if kind != pa.string() else raw.view(kind)
    assert python_values(values) == ["\ufffd\ufffdbad", "ok", None, "\u00e9", "\ufffd"]
    assert python_values(pa.array([1.5, None])) == [1.5, None]
    assert python_values(pa.array([True, False])) == [True, False]


def test_python_values_reads_a_surrogates_bytes_as_java_does() -> None:
    raw = pa.array([b"\xed\xa0\x80", b"\xed\xa0\x80\xed\xb0\x80", b"a\xed\xa0", b"\xed\xa0z",
                    b"\xed\x9f\xbf"], pa.binary())
    assert python_values(raw.view(pa.string())) == [
        "\ufffd", "\ufffd\ufffd", "a\ufffd", "\ufffdz", "\ud7ff"]


def test_a_csv_group_with_a_bad_byte_runs_on_numpy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "t.csv"
    data.write_bytes(b"g,x\n" + b"ok,1.5\n\xffbad,2.5\n" * 300)
    out = tmp_path / "o.json"
    code, _, err = run(["aggregate", "--input", str(data), "--columns", "x",
                        "--statistics", "count", "--epsilon", "1", "--group-by", "g",
                        *SELECT, "--seed", "1", "--quiet", "--output", str(out)], capsys)
    assert code == 0, err
    assert sorted(json.loads(out.read_text())["groups"]) == ["ok", "\ufffdbad"]
