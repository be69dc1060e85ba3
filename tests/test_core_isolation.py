"""The private core never imports pyspark (the Spark engine lives in dprect.spark)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import dprect

CORE_MODULES = sorted(
    f"dprect.{m.name}" for m in pkgutil.iter_modules(dprect.__path__)
    if m.name != "spark"
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
    for path in root.glob("*.py"):
        text = path.read_text()
        assert "import pyspark" not in text and "from pyspark" not in text, path
