"""The README's install table lists every extra pyproject.toml declares (issue #40: the
``sklearn`` extra was missing), and nothing else."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_extras_table_lists_every_extra():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
                 ["project"]["optional-dependencies"])
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| extra "):]
    table = table[:table.index("\n\n")]
    listed = set(re.findall(r"^\| `([\w-]+)` *\|", table, flags=re.M))
    assert "sklearn" in extras
    assert listed == extras
