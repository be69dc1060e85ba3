"""The docs own the design: every section the code cites exists, and no doc points outside
the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [*ROOT.glob("dprect/**/*.py"), *ROOT.glob("jobs/*.py"), *ROOT.glob("tests/**/*.py"),
           *ROOT.glob("benchmarks/*.py"), *ROOT.glob("docs/*.md"), ROOT / "README.md"]
CITATION = re.compile(r"docs/(\w+)\.md §(\d+)")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_cited_sections_exist():
    cited = {(m.group(1), int(m.group(2))) for path in SOURCES
             for m in CITATION.finditer(_text(path))}
    assert cited, "no citation found: the pattern is out of date"
    for doc, section in sorted(cited):
        path = ROOT / "docs" / f"{doc}.md"
        assert path.exists(), f"docs/{doc}.md is cited but missing"
        headings = re.findall(r"^## (\d+)\. ", _text(path), flags=re.M)
        assert str(section) in headings, f"docs/{doc}.md has no section {section}"


def test_no_reference_outside_the_repository():
    this = Path(__file__).resolve()
    for path in SOURCES:
        if path.resolve() == this:
            continue
        text = _text(path)
        for bad in ("design note", "shared/design", "](../", "`../"):
            assert bad not in text, f"{path.relative_to(ROOT)} mentions {bad!r}"


def test_relative_links_resolve():
    for path in [*ROOT.glob("docs/*.md"), ROOT / "README.md"]:
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", _text(path)):
            resolved = (path.parent / target).resolve()
            assert ROOT in resolved.parents or resolved == ROOT, (path, target)
            assert resolved.exists(), f"{path.relative_to(ROOT)} links to missing {target}"
