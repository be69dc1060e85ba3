"""A Delta table given to the numpy engine without ``--format`` is refused, as
``--format delta`` is: the engine reads Parquet and CSV only, and a Delta table's folder
holds Parquet files its log has removed (an overwrite's old rows), which a Parquet folder
read takes in silence. The Spark engine detects such a folder as Delta
(:func:`dprect.engines.spark.source.detect_format`); so does the numpy engine now."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from cli_run import messages, run

from dprect.release.ledger import Ledger

deltalake = pytest.importorskip("deltalake")


def test_a_delta_table_is_not_read_as_a_parquet_folder_by_the_numpy_engine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "t"
    deltalake.write_deltalake(str(table), pa.table({"x": [1.0] * 50, "y": [1, 0] * 25}))
    deltalake.write_deltalake(str(table), pa.table({"x": [2.0] * 50, "y": [1, 0] * 25}),
                              mode="overwrite")  # the first version's file stays
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    commands = {
        "fit": ["fit", "--features", "x", "--label", "y", "--epsilon", "1", "--delta",
                "1e-7", "--grid", "0:4:16"],
        "aggregate": ["aggregate", "--columns", "x", "--statistics", "count",
                      "--epsilon", "1"],
    }
    for name, command in commands.items():
        out = tmp_path / f"{name}.json"
        code, _, err = run([*command, "--input", str(table), "--engine", "numpy",
                            "--output", str(out), "--ledger", str(ledger), "--dataset", name],
                           capsys)
        assert code == 2, (name, err)
        assert messages(err) == [f"dprect: error: input {str(table)!r} is a Delta table (it "
                                 "holds a _delta_log folder): Delta input needs the Spark "
                                 "engine (--engine spark)"]
        assert not out.exists()
        assert Ledger(str(ledger)).events(name) == []
