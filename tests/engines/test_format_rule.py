"""One rule of an input's format for both engines
(:func:`dprect.engines.file_schemas.format_by_name`): Delta for a folder holding
``_delta_log``, CSV for a name ending in ``.csv`` / ``.csv.gz`` — a trailing ``/`` aside —,
Parquet otherwise. The numpy engine took ``x.csv/`` as Parquet where Spark's took it as
CSV; the Spark engine's side is tests/spark/test_format_rule_spark.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from dprect.engines.arrow_input import detect_format
from dprect.engines.file_schemas import format_by_name

#: a name, as given, and its format without a _delta_log folder
NAMES = {"x.csv": "csv", "x.csv/": "csv", "X.CSV.GZ": "csv", "x.csv.gz/": "csv",
         "x.parquet": "parquet", "x.parquet/": "parquet", "dir": "parquet", "dir/": "parquet",
         "x.csv.bak": "parquet", "csv": "parquet"}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_the_rule_by_name(name: str) -> None:
    assert format_by_name(name, False) == NAMES[name]
    assert format_by_name(name, True) == "delta"


def make_inputs(root: Path, with_log: bool) -> dict[str, str]:
    """A folder per name of :data:`NAMES` (with ``_delta_log`` when ``with_log``) under
    ``root`` (one folder of its own each): each path as given (its trailing ``/`` kept)
    and the format it must have."""
    out = {}
    for i, (name, fmt) in enumerate(NAMES.items()):
        folder = root / str(i) / name.rstrip("/")
        folder.mkdir(parents=True)
        if with_log:
            (folder / "_delta_log").mkdir()
        out[f"{root}/{i}/{name}"] = "delta" if with_log else fmt
    return out


@pytest.mark.parametrize("with_log", [False, True])
def test_the_numpy_engine_follows_the_rule(tmp_path: Path, with_log: bool) -> None:
    for path, fmt in make_inputs(tmp_path, with_log).items():
        assert detect_format(path) == fmt, path
        assert detect_format(Path(path)) == fmt, path
