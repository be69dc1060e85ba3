"""Golden outputs of ``dprect bounds`` / ``dprect describe --engine spark`` (issue #41):
for a seed, the result JSON, the table and the printed lines equal the ones recorded
before the grouped-aggregate seam was built (tests/golden_cases.py; the numpy twin is
tests/app/test_golden.py). Recorded on both engines, the
outputs were identical, so both engines are held to the one fixture per case."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden_cases import CASES, GOLDEN, check, run_case


def test_spark_reproduces_every_golden_output(spark, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]):
    for name in sorted(CASES):  # one test: the cases share the session's warm-up
        check(GOLDEN / f"{name}.json", run_case(name, "spark", tmp_path, capsys))
