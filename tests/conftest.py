"""What every test shares.

The layout follows the package: tests/core, tests/engines (the numpy engines),
tests/release, tests/app, and tests/spark for the Spark engine (its fixtures in
tests/spark/conftest.py); the structure and docs checks sit at the top. The jobs, the
benchmarks and the helpers in this folder import by module name through pytest's
``pythonpath`` (pyproject.toml), so no test inserts into ``sys.path``. Every test under
tests/spark carries the ``spark`` marker, so ``make test-core`` (``pytest -m "not
spark"``) needs no JVM.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SPARK_TESTS = Path(__file__).resolve().parent / "spark"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test collected under tests/spark ``spark``."""
    for item in items:
        if SPARK_TESTS in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.spark)
