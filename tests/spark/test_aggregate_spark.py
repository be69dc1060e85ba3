"""``dprect aggregate --engine spark`` (issue #41, point 3): the general form of the one
grouped-aggregate product reproduces its presets' golden outputs on Spark too — one case
of each mechanism, through the one ``mapInArrow`` primitive (the numpy twin of this test,
every case, is tests/app/test_aggregate_cli.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run
from golden_cases import GOLDEN, INPUT, SEED, check, stable

#: golden case → ``aggregate``'s arguments after ``--input`` (the preset's, statistics named)
CASES = {
    "describe_groups": ["--columns", "x,y,z", "--epsilon", "2", "--statistics",
                        "bounds,count,sum,mean", "--group-by", "g", "--groups", "a,b,c,d"],
    "bounds_coverage": ["--columns", "x,z", "--epsilon", "2", "--coverage", "0.95",
                        "--beta", "0.01", "--rows", "1000", "--statistics", "coverage"],
}


def test_spark_aggregate_reproduces_the_presets_golden_outputs(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, args in CASES.items():  # one test: the cases share the session's warm-up
        out, table = tmp_path / f"{name}.json", tmp_path / f"{name}.csv"
        code, printed, err = run(["aggregate", "--input", str(INPUT), *args, "--seed", SEED,
                                  "--engine", "spark", "--output", str(out), "--table",
                                  str(table)], capsys)
        assert code == 0, err
        check(GOLDEN / f"{name}.json", {
            "result": stable(json.loads(out.read_text())),
            "table": table.read_text().splitlines(),
            "printed": printed.replace(str(tmp_path), "<tmp>").splitlines()})


def test_spark_runs_a_mixed_list_as_numpy_does_for_a_seed(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--statistics mean,median,p90`` (two mechanisms, one charge, one pass: each source
    column counted once per mechanism, docs/privacy.md §11b) gives on Spark the record and
    table numpy gives for the seed."""
    args = ["--columns", "x,y,z", "--epsilon", "2", "--statistics", "mean,median,p90",
            "--group-by", "g", "--groups", "a,b,c,d", "--seed", SEED]
    outputs = {}
    for engine in ("numpy", "spark"):
        out, table = tmp_path / f"{engine}.json", tmp_path / f"{engine}.csv"
        code, _, err = run(["aggregate", "--input", str(INPUT), *args, "--engine", engine,
                            "--output", str(out), "--table", str(table)], capsys)
        assert code == 0, err
        outputs[engine] = (json.loads(out.read_text()), table.read_text())
    assert outputs["spark"] == outputs["numpy"]
    assert outputs["spark"][0]["method"] == "describe+quantiles"


def test_columns_named_with_a_dot_or_a_backtick_are_read_as_numpy_reads_them(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A column named ``a.b`` or ``we`ird`` (and such a group column) is the column of that
    name on Spark as on numpy: pyspark's ``mapInArrow`` resolves its input's columns by
    name, where ``a.b`` is a struct field and a backtick a syntax error, so the pass reads
    them under plain names (quantiles and coverage bounds ended in "Spark failed", exit 3).
    ``mean`` is counted in the JVM where the session has the bin count, ``median`` in
    ``mapInArrow``: both of the pass's inputs."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    data = tmp_path / "names.parquet"
    pq.write_table(pa.table({"a.b": rng.normal(50, 10, 300), "we`ird": rng.normal(0, 1, 300),
                             "g.k": rng.choice([1, 2], 300)}), data)
    args = ["aggregate", "--input", str(data), "--columns", "a.b,we`ird", "--statistics",
            "mean,median", "--group-by", "g.k", "--groups", "1,2", "--epsilon", "1",
            "--seed", SEED, "--quiet"]
    results = {}
    for engine in ("numpy", "spark"):
        out = tmp_path / f"{engine}.json"
        code, _, err = run([*args, "--engine", engine, "--output", str(out)], capsys)
        assert code == 0, err
        results[engine] = stable(json.loads(out.read_text()))
    assert results["spark"] == results["numpy"]
    assert {r["column"] for r in results["spark"]["results"]} == {"a.b", "we`ird"}
