"""A class label prints on its own line, whatever it holds (s50-fitedge's audit): on main
a class the private selection released (a value of the data) or a public class holding a
newline printed a line of its own in the fit's summary — ``class x`` then ``y: forged
line:`` — and one holding U+202E reversed the rest of its line on a terminal. Such a label
now prints as its Python literal, as the aggregate's group lines print every value; a
label of visible characters prints as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

from dprect.core.validation import line_text

FORGED = "x\nprivacy: (0.001, 0)-DP"
BIDI = "p\u202eq"


def test_line_text_keeps_visible_text_and_escapes_the_rest() -> None:
    assert line_text("cat") == "cat" and line_text("ねこ 1") == "ねこ 1"
    assert line_text(FORGED) == repr(FORGED) and "\n" not in line_text(FORGED)
    assert line_text(BIDI) == "'p\\u202eq'"


def _table(tmp_path: Path) -> Path:
    gen = np.random.default_rng(2)
    n = 3000
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": gen.normal(size=n), "b": gen.normal(size=n),
                             "lab": gen.choice(np.array(["ok", FORGED, BIDI]), n)}), path)
    return path


@pytest.mark.parametrize("how", [["--select-groups", "--selection-epsilon", "1",
                                  "--selection-delta", "1e-6"],
                                 ["--classes", f"ok,{BIDI}"]], ids=["selected", "listed"])
def test_a_class_label_prints_on_its_own_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], how: list[str]) -> None:
    code, out, err = run(["fit", "--input", str(_table(tmp_path)), "--features", "a,b",
                          "--label", "lab", "--epsilon", "1", "--delta", "1e-6", "--seed",
                          "1", "--quiet", "--output", str(tmp_path / "r.json"), *how],
                         capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert "\u202e" not in out
    classes = [line for line in lines if line.startswith("class ")]
    assert "class ok:" in classes and f"class {BIDI!r}:" in classes
    if how[0] == "--select-groups":  # the released label: no forged line
        assert not any(line.startswith("privacy: (0.001") for line in lines)
        assert f"class {FORGED!r}:" in classes
