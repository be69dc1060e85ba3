"""No library's exception text in a message (issue #40, the reading rule made structural).

An exception caught by dprect can carry a row, a cell or a file's bytes in its text
(pyarrow, Spark, deltalake, pandas). So no ``except ... as exc`` block may put the
exception's text in anything — ``str(exc)``, ``repr(exc)``, ``f"{exc}"``, ``exc.args`` —
except where this list vouches that the text holds no data (the exceptions are dprect's
own, or come from a config file, a pipe or a parameter). A reader maps its failures with
:mod:`dprect.engines.input_errors` instead; a new reader that forgets fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "dprect"
#: the Spark jobs, scanned too (their modules named ``jobs/<file>``)
JOBS = ROOT.parent / "jobs"

#: (module, function) -> why the caught exception's text holds no data
VOUCHED = {
    ("app/cli.py", "_main"): "DprectError (dprect's own text) and OSError (errno and path)",
    ("app/api.py", "positive_mask"): "ParameterError: dprect's own text (label, column type)",
    ("app/classifier.py", "_read"): "InputDataError: dprect's own text (X's shape)",
    ("app/jobs_support.py", "load_config"): "a YAML error quotes the config file, a setting",
    ("engines/spark/cli.py", "cli_session"): "Spark failing to start: its configuration",
    ("core/domains.py", "parse_domain"): "a grid given on the command line, a parameter",
    ("release/ledger/writes.py", "init"): "creating an empty ledger: no row of any input",
    ("release/ledger/log.py", "_load"): "DamageError: dprect's own text",
    ("release/ledger/log.py", "history"): "DamageError: dprect's own text",
    ("release/ledger/log.py", "verify"): "DamageError: dprect's own text",
    ("release/ledger/log.py", "_index"): "DamageError: dprect's own text",
    ("release/ledger/queries.py", "_result_of"): "DamageError: dprect's own text",
    ("release/ledger/writes.py", "_transact"): "writing the ledger's own rows (no input data)",
    ("release/ledger/compaction.py", "_checkpoint"):
        "an OSError writing the run index: errno, path",
}
_TEXT_ATTRS = {"args", "message", "msg", "text", "desc"}


def _uses_text(node: ast.AST, name: str) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.FormattedValue) and isinstance(n.value, ast.Name) \
                and n.value.id == name:
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                and n.func.id in ("str", "repr", "format") and n.args \
                and isinstance(n.args[0], ast.Name) and n.args[0].id == name:
            return True
        if isinstance(n, ast.Attribute) and n.attr in _TEXT_ATTRS \
                and isinstance(n.value, ast.Name) and n.value.id == name:
            return True
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) \
                and isinstance(n.right, ast.Name) and n.right.id == name:
            return True
    return False


def offenders() -> set[tuple[str, str]]:
    found = set()
    paths = [(p, p.relative_to(ROOT).as_posix()) for p in sorted(ROOT.rglob("*.py"))]
    paths += [(p, p.relative_to(ROOT.parent).as_posix()) for p in sorted(JOBS.rglob("*.py"))]
    for path, module in paths:
        tree = ast.parse(path.read_text())
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for handler in ast.walk(func):
                if isinstance(handler, ast.ExceptHandler) and handler.name \
                        and any(_uses_text(s, handler.name) for s in handler.body):
                    found.add((module, func.name))
    return found


def test_no_caught_exception_text_reaches_a_message() -> None:
    assert offenders() - set(VOUCHED) == set()


def test_every_vouched_place_still_exists() -> None:
    assert set(VOUCHED) - offenders() == set()
