"""Variance and std on Spark (issue #41 point 4; docs/privacy.md §17): the one
``mapInArrow`` pass counts the exact sums of squared significands as two more "sum"
columns per column (their high and low 30-bit words), and the cells equal the numpy
engine's — Σ M² past int64 included — so a seeded ``dprect aggregate`` with
``variance,std`` writes the same JSON, table and lines on both engines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run
from engine_cells import assert_same_cells, both_engines
from golden_cases import SEED

from dprect.core.statistic import QUERY, SEARCH_GRID


def test_spark_counts_the_squares_as_numpy_does(spark, tmp_path: Path):
    gen = np.random.default_rng(21)
    n = 6000
    a = gen.normal(0, 30, n)
    a[::11] = np.nan
    big = np.where(gen.uniform(size=n) < 0.5, np.nextafter(2.0, 0.0), gen.normal(5, 1, n))
    g = gen.choice(["p", "q", "unlisted"], n)
    spec = QUERY.spec([SEARCH_GRID] * 2, ("count", "variance"))
    got, want = both_engines(spark, tmp_path / "t.parquet", {"a": a, "big": big, "g": g},
                             ["a", "big"], spec, ["q", "empty", "p"])
    assert_same_cells(got, want)
    assert want[(0, 1)].squares is not None
    assert max(int(v) for v in want[(0, 1)].squares) > 1 << 63  # past int64, exact


def test_a_variance_run_is_the_same_on_both_engines(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    gen = np.random.default_rng(4)
    n = 12_000
    data = tmp_path / "d.parquet"
    pq.write_table(pa.table({"x": gen.normal(10, 3, n), "z": gen.exponential(4, n),
                             "g": gen.choice(["a", "b"], n)}), data)
    outs = {}
    for engine in ("numpy", "spark"):
        out, table = tmp_path / f"{engine}.json", tmp_path / f"{engine}.csv"
        code, _, err = run(["aggregate", "--input", str(data), "--columns", "x,z",
                            "--statistics", "bounds,count,mean,variance,std",
                            "--epsilon", "2", "--group-by", "g", "--groups", "a,b",
                            "--seed", SEED, "--engine", engine, "--output", str(out),
                            "--table", str(table)], capsys)
        assert code == 0, err
        outs[engine] = (json.loads(out.read_text())["results"], table.read_text())
    assert outs["numpy"] == outs["spark"]
    for r in outs["spark"][0]:  # released from the squares, not clipped to an end
        assert 0 < r["variance"] < ((r["upper"] - r["lower"]) / 2) ** 2
