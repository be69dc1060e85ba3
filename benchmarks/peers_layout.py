"""Where the real-peer benchmark keeps its files (paths relative to the repository, whose
root is :data:`REPO`): shared by ``peers_real.py`` (the steps) and ``peers_compare.py``
(the comparison), so neither imports the other."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = Path("benchmarks/output/peers")  # relative to the repository (runs use cwd = REPO)
CACHE = OUT / "cache"
MANIFEST = OUT / "manifest.json"
VENVS = Path(".bench-venvs")
PEERS_JSON = Path("docs/figures/bounds_peers.json")
COMPARE_JSON = Path("docs/figures/bounds_compare.json")
