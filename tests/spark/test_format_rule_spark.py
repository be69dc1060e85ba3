"""Both engines detect an input's format by one rule
(:func:`dprect.engines.file_schemas.format_by_name`; tests/engines/test_format_rule.py):
the same format for the same path, a trailing ``/`` or a ``_delta_log`` folder alike (the
numpy engine took ``x.csv/`` as Parquet, the Spark engine as CSV)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dprect.engines import arrow_input
from dprect.engines.spark import source

#: a path, as given, and its format without a _delta_log folder
NAMES = {"x.csv": "csv", "x.csv/": "csv", "x.CSV.gz/": "csv", "x.parquet": "parquet",
         "x.parquet/": "parquet", "dir": "parquet", "dir/": "parquet"}


@pytest.mark.parametrize("with_log", [False, True])
def test_both_engines_detect_one_format(spark, tmp_path: Path, with_log: bool) -> None:
    for i, (name, fmt) in enumerate(NAMES.items()):
        folder = tmp_path / str(i) / name.rstrip("/")
        folder.mkdir(parents=True)
        if with_log:
            (folder / "_delta_log").mkdir()
        path = f"{tmp_path}/{i}/{name}"
        want = "delta" if with_log else fmt
        assert arrow_input.detect_format(path) == want, path
        assert source.detect_format(spark, path) == want, path
