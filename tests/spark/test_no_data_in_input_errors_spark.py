"""No value of the input in any message of the Spark engine (issue #40, point 1), and
schema agreement of a multi-file input on Spark (point 2).

The inputs of :mod:`tests.sentinel_inputs` (Delta tables too) through every command, with
and without a ledger, in this process on the shared session — one test, so one batch of
Spark runs; then the issue's folder repros, each one line and exit 2.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.cli_run import messages, run
from tests.sentinel_inputs import SENTINEL, build, garbage, run_all

SPARK = ["--engine", "spark", "--master", "local[2]"]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_no_sentinel_through_any_command_on_spark(spark, tmp_path: Path, capsys) -> None:
    pytest.importorskip("deltalake")
    inputs = build(tmp_path, delta=True)
    seen = run_all(lambda argv: run(argv, capsys), tmp_path, inputs, SPARK)
    code = {k: v[0] for k, v in seen.items()}
    for ledger in (False, True):
        for command in ("fit", "classes", "bounds", "describe"):
            for name in ("parquet: text cell in a numeric column",
                         "csv: text cell in a numeric column", "parquet: garbage bytes",
                         "parquet folder: renamed file", "parquet folder: text file",
                         "parquet folder: garbage file",
                         "delta: text cell in a numeric column",
                         "delta: garbage data file"):
                assert code[(name, command, ledger)] == 2, (name, command)
        for name in ("parquet: text label", "csv: text label", "delta: text label"):
            assert code[(name, "fit", ledger)] == 2  # a numeric positive label
            assert code[(name, "classes", ledger)] == 0
            assert code[(name, "bounds", ledger)] == 0
    assert spark.sparkContext._jsc is not None  # the shared session is left running


def _fit(path: Path, tmp: Path, capsys) -> str:
    code, _, err = run(["fit", "--input", str(path), "--format", "parquet", "--features", "x",
                        "--label", "y", "--epsilon", "1", "--delta", "1e-6",
                        "--output", str(tmp / "r.json"), *SPARK], capsys)
    lines = messages(err)
    assert code == 2 and len(lines) == 1, err
    assert not (tmp / "r.json").exists()
    return lines[0]


def test_folders_whose_files_disagree_are_refused(spark, tmp_path: Path, capsys) -> None:
    for name, second, words in [
            ("renamed", {"x_new": [1.0, 2.0], "y": [1, 1]}, "absent from 'b.parquet'"),
            ("text", {"x": ["SSN 123-45-6789", "3"], "y": [1, 1]}, "string in 'b.parquet'")]:
        folder = tmp_path / name
        folder.mkdir()
        pq.write_table(pa.table({"x": [1.0, 2.0], "y": [1, 0]}), folder / "a.parquet")
        pq.write_table(pa.table(second), folder / "b.parquet")
        line = _fit(folder, tmp_path, capsys)
        assert "column 'x'" in line and "double in 'a.parquet'" in line and words in line
        assert "123-45" not in line


def test_csv_folders_whose_headers_disagree_are_refused(spark, tmp_path: Path,
                                                        capsys) -> None:
    folder = tmp_path / "t.csv"
    folder.mkdir()
    (folder / "a.csv").write_text("x,y\n1.0,1\n2.0,0\n")
    (folder / "b.csv").write_text("y,x\n1,3.0\n0,4.0\n")  # Spark matches fields by place
    code, _, err = run(["fit", "--input", str(folder), "--features", "x", "--label", "y",
                        "--epsilon", "1", "--delta", "1e-6",
                        "--output", str(tmp_path / "r.json"), *SPARK], capsys)
    assert code == 2 and "column 'x'" in err, err
    assert "header field 1 in 'a.csv'" in err and "header field 2 in 'b.csv'" in err


def test_folders_elsewhere_are_checked_through_the_jvm(spark, tmp_path: Path,
                                                       monkeypatch) -> None:
    """A folder that is not on this machine (s3a://, hdfs://) has its files listed and
    their footers read by the driver's JVM: here a local folder taken for a remote one."""
    from dprect.core.errors import InputDataError
    from dprect.engines.spark import source

    monkeypatch.setattr(source, "_is_local", lambda path: False)

    def folder(name: str, second: dict | None) -> Path:
        d = tmp_path / name
        d.mkdir()
        pq.write_table(pa.table({"x": [1.0, 2.0], "y": [1, 0]}), d / "a.parquet")
        if second is None:
            (d / "b.parquet").write_bytes(garbage())
        else:
            pq.write_table(pa.table(second), d / "b.parquet")
        (d / "_SUCCESS").write_bytes(b"")
        return d

    same = folder("same", {"x": [3.0], "y": [1], "other": ["not read"]})
    df = source.read_source(spark, str(same), columns=["x", "y"])
    assert df.count() == 3
    for name, second, words in [
            ("text", {"x": [SENTINEL], "y": [1]}, "it is DOUBLE in 'a.parquet' but BINARY "
                                                  "(STRING) in 'b.parquet'"),
            ("renamed", {"x_new": [1.0], "y": [1]}, "absent from 'b.parquet'"),
            ("garbage", None, "b.parquet' as parquet: it is not a Parquet file")]:
        with pytest.raises(InputDataError) as caught:
            source.read_source(spark, str(folder(name, second)), columns=["x", "y"])
        assert words in str(caught.value) and SENTINEL not in str(caught.value), name
