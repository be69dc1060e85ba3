"""The private core never imports pyspark (the Spark engine lives in dprect.engines.spark)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import dprect

CORE_MODULES = sorted(
    m.name for m in pkgutil.walk_packages(dprect.__path__, prefix="dprect.")
    if not m.name.startswith("dprect.engines.spark")
)


def test_core_modules_do_not_import_pyspark():
    code = (
        "import importlib, sys\n"
        f"for name in {CORE_MODULES!r}:\n"
        "    if name != 'dprect.__main__':\n"
        "        importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ""


def test_core_sources_never_mention_pyspark_imports():
    root = Path(dprect.__file__).parent
    spark = root / "engines" / "spark"
    for path in root.rglob("*.py"):
        if spark in path.parents:
            continue
        text = path.read_text()
        assert "import pyspark" not in text and "from pyspark" not in text, path
