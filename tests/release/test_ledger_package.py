"""The budget ledger as a package (issue #41): its modules in the order its docstring lists
them, each importing only the modules listed above it, and the names the rest of dprect,
the tests and the benchmarks import from ``dprect.release.ledger`` still there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_layers import graph

import dprect.release.ledger as ledger

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "dprect.release.ledger"


def listed_order() -> list[str]:
    """The modules the package docstring's "The modules" list names, in its order."""
    part = (ledger.__doc__ or "").split("**The modules**", 1)[1]
    return re.findall(r"^\* :mod:`~dprect\.release\.ledger\.(\w+)`", part, flags=re.M)


def test_the_docstring_lists_every_module_of_the_package_once():
    present = sorted(p.stem for p in (ROOT / "dprect/release/ledger").glob("*.py")
                     if p.name != "__init__.py")
    assert sorted(listed_order()) == present
    assert len(set(listed_order())) == len(listed_order())


def test_each_module_imports_only_the_modules_listed_above_it():
    order = listed_order()
    g = graph(ROOT)
    upward = []
    for i, name in enumerate(order):
        for target in g[f"{PACKAGE}.{name}"]:
            if target == PACKAGE:
                upward.append(f"{name} -> the package (it imports every module)")
            elif target.startswith(PACKAGE + "."):
                other = target.removeprefix(PACKAGE + ".")
                if order.index(other) >= i:
                    upward.append(f"{name} -> {other}")
    assert upward == []


def test_the_names_callers_import_are_re_exported():
    """Every name imported ``from dprect.release.ledger`` anywhere is public and there."""
    callers = [*ROOT.glob("dprect/**/*.py"), *ROOT.glob("jobs/*.py"),
               *ROOT.glob("tests/**/*.py"), *ROOT.glob("benchmarks/*.py")]
    wanted = {alias.name for path in callers
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(node, ast.ImportFrom) and node.module == PACKAGE
              for alias in node.names}
    assert wanted, "no caller found: the pattern is out of date"
    assert sorted(n for n in wanted if n.startswith("_")) == []
    assert sorted(wanted - set(ledger.__all__)) == []
    assert sorted(n for n in ledger.__all__ if not hasattr(ledger, n)) == []
