"""docs/results.md §8 against its measurements (docs/figures/high_d_real.json, written by
benchmarks/high_d_real.py): every measured cell is a row of the section's table, and the
acceptance sentence states what the d = 256, ε = 1 cells measured."""

from __future__ import annotations

import json
from pathlib import Path

import high_d_real

ROOT = Path(__file__).resolve().parent.parent
FIGURE = ROOT / "docs" / "figures" / "high_d_real.json"
RESULTS = ROOT / "docs" / "results.md"


def section() -> str:
    text = RESULTS.read_text()
    start = text.index("## 8. High dimension on real-world marginals")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def cells() -> list[dict]:
    return json.loads(FIGURE.read_text())["cells"]


def test_every_measured_cell_is_a_row_of_section_8() -> None:
    rows = high_d_real.table_rows(cells())
    text = section()
    assert len(rows) >= 14
    missing = [r for r in rows if r not in text]
    assert not missing, missing[:3]


def test_the_acceptance_cells_are_measured_as_stated() -> None:
    """d = 256, 10^6 positives, ε = 1: at least 5 runs per cell; the section's acceptance
    line says whether auto's mean miss is within composition's and whether forced
    RandMargins was ever empty — as measured."""
    at = [c for c in cells() if c["dims"] == 256 and c["epsilon"] == 1.0]
    assert at and all(c["runs"] >= 5 and c["positives"] == 1_000_000 for c in at)
    mean = {(c["method"], c["declared"]): c["positives_outside"]["mean"] for c in at}
    empty = sum(c["empty_runs"] for c in at if c["method"] == "randmargins")
    comp = next(c for c in at if c["method"] == "composition" and not c["declared"])

    def met(method: str) -> bool:
        """A mean within composition's, or composition itself in every run (the same
        method with other seeds, so the two cells' ranges overlap)."""
        cell = next(c for c in at if c["method"] == method and not c["declared"])
        same = (cell["chosen"] == "composition" and cell["positives_outside"]["min"]
                <= comp["positives_outside"]["max"])
        return mean[(method, False)] <= mean[("composition", False)] or same

    auto_ok = met("auto")
    text = section()
    assert (f"auto's miss ≤ composition's: **{'met' if auto_ok else 'not met'}**"
            in text)
    assert (f"forced RandMargins never empty: **{'met' if empty == 0 else 'not met'}**"
            in text)
    if ("auto-n", False) in mean:
        n_ok = met("auto-n")
        assert f"with the estimate N: **{'met' if n_ok else 'not met'}**" in text
