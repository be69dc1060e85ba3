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


def _listed_modules(text: str) -> set[str]:
    """The modules the tables of docs/architecture.md's "The modules" list, as paths under
    dprect/ (``spark/a.py`` rows inside the engines table are ``engines/spark/a.py``)."""
    part = text.split("## The modules", 1)[1].split("\n## ", 1)[0]
    out: set[str] = set()
    layer = ""
    for line in part.splitlines():
        heading = re.match(r"### .*\(`dprect/(\w+)/`\)", line)
        if heading:
            layer = heading.group(1)
        if line.startswith("| `"):
            cell = line.split("|")[1]
            out.update(f"{layer}/{name}" for name in re.findall(r"`([\w/]+\.py)`", cell))
    return out


def test_architecture_lists_every_module_once():
    """docs/architecture.md's module tables name every module of dprect/core, engines,
    release and app, and nothing that does not exist (issue #22)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = _listed_modules(text)
    present = {str(p.relative_to(ROOT / "dprect")) for layer in ("core", "engines",
                                                                  "release", "app")
               for p in (ROOT / "dprect" / layer).rglob("*.py") if p.name != "__init__.py"}
    assert listed - present == set(), "listed but absent"
    assert present - listed == set(), "present but not listed"
