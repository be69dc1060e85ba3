"""`dprect fit --engine spark` end to end: the same JSON as the numpy engine, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dprect.app.cli import main


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    gen = np.random.default_rng(3)
    n = 400
    X = gen.normal(size=(n, 2))
    y = (np.abs(X).max(axis=1) < 1.0).astype(np.int64)
    path = tmp_path_factory.mktemp("cli") / "train.parquet"
    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "y": y,
                             "part": np.where(np.arange(n) % 2, "odd", "even")}), path)
    return path


ARGS = ["--features", "a,b", "--label", "y", "--epsilon", "4", "--delta", "1e-6",
        "--grid=-3:3:64", "--seed", "5"]


def _fit(path, out, *extra):
    return main(["fit", "--input", str(path), "--output", str(out), *ARGS, *extra])


def test_spark_engine_writes_the_numpy_json(spark, data_file, tmp_path, capsys):
    assert _fit(data_file, tmp_path / "numpy.json") == 0
    for plan in ("prefetch", "rounds"):
        out = tmp_path / f"spark-{plan}.json"
        assert _fit(data_file, out, "--engine", "spark", "--strategy", plan) == 0
        spark_json = json.loads(out.read_text())
        numpy_json = json.loads((tmp_path / "numpy.json").read_text())
        assert spark_json == numpy_json
    assert "result written to" in capsys.readouterr().out
    assert spark.sparkContext._jsc is not None  # the test session is left running


def test_spark_engine_where_filter(spark, data_file, tmp_path):
    out = tmp_path / "odd.json"
    assert _fit(data_file, out, "--engine", "spark", "--where", "part = 'odd'") == 0
    assert json.loads(out.read_text())["features"] == ["a", "b"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--engine", "spark", "--features", "a,zz"], "zz"),
    (["--engine", "spark", "--label", "part", "--features", "b"], "holds strings"),
    (["--engine", "spark", "--label", "y", "--positive-label", "odd"], "must be a number"),
    (["--engine", "spark", "--where", "nonsense >"], "row filter"),
    (["--engine", "spark", "--format", "delta"], "not a Delta table"),
    (["--engine", "spark", "--delta-version", "1"], "Delta version"),
    (["--engine", "spark", "--delta-version", "1", "--delta-timestamp", "2024-01-01"],
     "not both"),
    (["--plan", "rounds"], "--strategy needs --engine spark"),
    (["--format", "delta"], "--format delta needs --engine spark"),
])
def test_bad_input_exit_2_and_no_output(spark, data_file, tmp_path, capsys, extra, message):
    out = tmp_path / "never.json"
    assert _fit(data_file, out, *extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("dprect: error:") and message in err
    assert "Traceback" not in err
    assert not out.exists()


def test_missing_input_exit_2(spark, tmp_path, capsys):
    out = tmp_path / "never.json"
    assert _fit(tmp_path / "missing.parquet", out, "--engine", "spark") == 2
    assert "does not exist" in capsys.readouterr().err
    assert not out.exists()


def test_numpy_path_does_not_import_pyspark(data_file, tmp_path):
    code = ("import sys; from dprect.app.cli import main; "
            f"rc = main(['fit', '--input', {str(data_file)!r}, '--output', "
            f"{str(tmp_path / 'n.json')!r}, *{ARGS!r}]); "
            "assert rc == 0, rc; assert 'pyspark' not in sys.modules, 'pyspark imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_spark_engine_positive_label_and_any_label_values(spark, data_file, tmp_path):
    """A string label column with --positive-label; a double column read as labels (its
    values other than 1.0 are negatives) fits like any other: the same JSON as numpy."""
    for extra in (["--label", "part", "--positive-label", "odd", "--features", "a,b"],
                  ["--label", "a", "--features", "b"]):
        outs = []
        for engine in ("numpy", "spark"):
            out = tmp_path / f"{engine}.json"
            assert _fit(data_file, out, "--engine", engine, *extra) == 0
            outs.append(json.loads(out.read_text()))
        assert outs[0] == outs[1]
