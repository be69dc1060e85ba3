"""Both engines detect an input's format by one rule
(:func:`dprect.engines.file_schemas.format_by_name`; tests/engines/test_format_rule.py):
the same format for the same path, a trailing ``/`` or a ``_delta_log`` folder alike (the
numpy engine took ``x.csv/`` as Parquet, the Spark engine as CSV). A ``_delta_log`` that is
a FILE makes no Delta table on either engine
(:func:`dprect.engines.file_schemas.holds_delta_log`): the numpy engine counted it only as a
folder, the Spark engine as any entry, so a Parquet folder holding such a file ran on numpy
and was refused as "not a Delta table" on Spark."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run

from dprect.engines import arrow_input
from dprect.engines.spark import source

#: a path, as given, and its format without a _delta_log folder
NAMES = {"x.csv": "csv", "x.csv/": "csv", "x.CSV.gz/": "csv", "x.parquet": "parquet",
         "x.parquet/": "parquet", "dir": "parquet", "dir/": "parquet"}


@pytest.mark.parametrize("log", ["none", "folder", "file", "link to a folder"])
def test_both_engines_detect_one_format(spark, tmp_path: Path, log: str) -> None:
    (tmp_path / "elsewhere").mkdir()
    for i, (name, fmt) in enumerate(NAMES.items()):
        folder = tmp_path / str(i) / name.rstrip("/")
        folder.mkdir(parents=True)
        if log == "folder":
            (folder / "_delta_log").mkdir()
        elif log == "file":
            (folder / "_delta_log").write_text("{}\n")
        elif log == "link to a folder":
            (folder / "_delta_log").symlink_to(tmp_path / "elsewhere")
        path = f"{tmp_path}/{i}/{name}"
        want = "delta" if log in ("folder", "link to a folder") else fmt
        assert arrow_input.detect_format(path) == want, path
        assert source.detect_format(spark, path) == want, path


def test_a_parquet_folder_holding_a_delta_log_file_is_read_alike_on_both_engines(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Parquet folder holding a ``_delta_log`` FILE — a stray name, no log — is that
    folder, read without ``--format`` on both engines: the file is skipped as every ``_``
    name is, and a seeded run gives the same result on numpy and Spark (Spark took the
    folder for a Delta table and refused it: "not a Delta table (no _delta_log folder)")."""
    gen = np.random.default_rng(8)
    table = pa.table({"x": gen.uniform(0, 10, 80), "z": gen.uniform(0, 10, 80)})
    folder = tmp_path / "t"
    folder.mkdir()
    for k in range(2):
        pq.write_table(table.slice(40 * k, 40), folder / f"part-{k}.parquet")
    (folder / "_delta_log").write_text('{"commitInfo": {}}\n')
    results = {}
    for engine in ("numpy", "spark"):
        out = tmp_path / f"{engine}.json"
        code, _, err = run(["describe", "--input", str(folder), "--columns", "x,z",
                            "--epsilon", "1", "--engine", engine, "--output", str(out),
                            "--seed", "5", "--quiet"], capsys)
        assert code == 0 and messages(err) == [], (engine, err)
        results[engine] = json.loads(out.read_text())
    assert results["spark"] == results["numpy"]
