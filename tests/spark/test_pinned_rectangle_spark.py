"""The pinned rectangle of ``tests/app/test_pinned_rectangle.py`` through ``dprect fit --engine
spark`` (both Spark strategy): first recorded before the restructure (issue 11), pinned after
accounting v2, issue #12 (same data, same seed; the new planner changes the per-round ε)."""

from __future__ import annotations

import json

import pytest
from pin_data import PIN_AUTO, assert_pinned, cli_args, write_parquet

from dprect.app.cli import main


@pytest.mark.parametrize("plan", ["prefetch", "rounds"])
def test_cli_spark_pinned(spark, tmp_path, plan):
    out = tmp_path / "result.json"
    assert main(cli_args(write_parquet(tmp_path), out, "--engine", "spark",
                         "--plan", plan)) == 0
    assert_pinned(json.loads(out.read_text()), PIN_AUTO)
