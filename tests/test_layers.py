"""The package's layers: core ← engines ← release ← app ← the package front ← jobs.

Every import inside ``dprect/`` and ``jobs/`` — at module level or inside a function — points
down or sideways within its layer, never up, and no modules import each other in a circle
(imports under ``if TYPE_CHECKING:`` are annotations only and do not count). The checker
reads the source with :mod:`ast`; it is tested on a small tree with an injected upward
import and an injected circle, so a checker that sees nothing fails too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: the layers from the bottom: a module may import its own layer and those below it
#: (``dprect._version``, a constant every layer reads, sits with the core)
LAYERS = ("dprect.core", "dprect.engines", "dprect.release", "dprect.app", "dprect", "jobs")
BOTTOM = ("dprect._version",)


def layer(module: str) -> int:
    """The index in :data:`LAYERS` of a module's layer (its longest matching prefix)."""
    if module in BOTTOM:
        return 0
    best = -1
    for i, prefix in enumerate(LAYERS):
        inside = module == prefix or module.startswith(prefix + ".")
        if inside and (best < 0 or len(prefix) > len(LAYERS[best])):
            best = i
    return best


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _type_checking_block(node: ast.AST) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING")


def imports_of(path: Path, root: Path) -> set[str]:
    """The project modules ``path`` imports at run time (absolute or relative imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = module_name(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    skip = {id(n) for node in ast.walk(tree) if _type_checking_block(node)
            for n in ast.walk(node)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join([*base, *([node.module] if node.module else [])])
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # `from pkg import module`
    return {m for m in out if m.split(".")[0] in ("dprect", "jobs")}


def graph(root: Path) -> dict[str, set[str]]:
    """module → the project modules it imports (only those that exist in the tree)."""
    files = [*root.glob("dprect/**/*.py"), *root.glob("jobs/*.py")]
    names = {module_name(f, root): f for f in files}
    return {name: {m for m in imports_of(f, root) if m in names and m != name}
            for name, f in names.items()}


def upward(g: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in g.items() for b in targets
                  if layer(b) > layer(a))


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_no_import_points_up() -> None:
    assert upward(graph(ROOT)) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert circles(graph(ROOT)) == []


def test_the_core_never_imports_pyspark() -> None:
    for f in ROOT.glob("dprect/core/**/*.py"):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "pyspark" for n in names), f


def _tree(tmp: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp


def test_the_checker_sees_an_injected_upward_import_and_circle(tmp_path: Path) -> None:
    base = {"dprect/__init__.py": "", "dprect/core/__init__.py": "",
            "dprect/app/__init__.py": "", "dprect/engines/__init__.py": "",
            "dprect/app/cli.py": "from dprect.core.a import x\n",
            "dprect/core/a.py": "x = 1\n",
            "dprect/engines/e.py": "def f():\n    from ..core import a\n"}
    clean = graph(_tree(tmp_path / "clean", base))
    assert upward(clean) == [] and circles(clean) == []
    up = graph(_tree(tmp_path / "up", base | {
        "dprect/core/a.py": "def f():\n    from dprect.app import cli\n"}))
    assert "dprect.core.a -> dprect.app.cli" in upward(up)
    loop = graph(_tree(tmp_path / "loop", base | {
        "dprect/core/b.py": "from dprect.core.c import y\nx = 1\n",
        "dprect/core/c.py": "from . import b\ny = 2\n"}))
    assert circles(loop) == [["dprect.core.b", "dprect.core.c"]]
    typed = graph(_tree(tmp_path / "typed", base | {
        "dprect/core/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                            "    from dprect.app.cli import z\n"}))
    assert upward(typed) == []
