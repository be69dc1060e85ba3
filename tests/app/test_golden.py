"""Golden outputs of ``dprect bounds`` / ``dprect describe`` on the numpy engine and of
``dprect.bounds`` / ``dprect.describe`` (issue #41): for a seed, the result JSON, the table
and the printed lines equal the ones recorded before the grouped-aggregate seam was built
(tests/golden_cases.py; the Spark twin is tests/spark/test_golden_spark.py)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
from golden_cases import CASES, GOLDEN, INPUT, check, run_case, stable

import dprect


@pytest.mark.parametrize("name", sorted(CASES))
def test_command_reproduces_its_golden_output(name: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]):
    check(GOLDEN / f"{name}.json", run_case(name, "numpy", tmp_path, capsys))


def test_python_functions_reproduce_their_golden_output():
    df = pd.read_csv(INPUT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        described = dprect.describe(df, ["x", "y", "z"], group_by="g",
                                    groups=["a", "b", "c", "d"], epsilon=2.0, seed=7)
        counted = dprect.describe(df, ["x"], epsilon=1.0, statistics=("count",), seed=7)
        aimed = dprect.mean_bounds(df, ["z"], epsilon=1.0, query_epsilon=0.5, seed=7)
        bounded = dprect.bounds(df, ["x", "y"], group_by="g", groups=["a", "b", "c"],
                                epsilon=1.0, coverage=0.99, seed=7)
        plain = dprect.bounds(df[["z"]].to_numpy(), epsilon=2.0, beta=0.01, seed=7)
    check(GOLDEN / "python_api.json", stable({
        "describe": described.to_dict(), "describe_count": counted.to_dict(),
        "mean_bounds": aimed.to_dict(), "bounds": bounded.to_json(),
        "bounds_array": plain.to_json()}))
