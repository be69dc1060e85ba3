"""No library's exception text in a message (issue #40, the reading rule made structural).

An exception caught by dprect can carry a row, a cell or a file's bytes in its text
(pyarrow, Spark, deltalake, pandas). So no ``except ... as exc`` block may put the
exception's text in anything — ``str(exc)``, ``repr(exc)``, ``f"{exc}"``, ``exc.args`` —
except where this list vouches that the text holds no data (the exceptions are dprect's
own, or a builtin one raised on a path or a parameter). A library's exception class
(``yaml.YAMLError``, ``PySparkException``: their text quotes a file's lines or a plan's
values) can never be vouched for: the message is built from the path, format, schema and
options only (the charter), e.g. a parser's line and column as integers. A reader maps its
failures with :mod:`dprect.engines.input_errors` instead; a new reader that forgets fails
here.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "dprect"
#: the Spark jobs, scanned too (their modules named ``jobs/<file>``)
JOBS = ROOT.parent / "jobs"

#: (module, function) -> why the caught exception's text holds no data
VOUCHED = {
    ("app/api.py", "positive_mask"): "ParameterError: dprect's own text (label, column type)",
    ("app/classifier.py", "_read"): "InputDataError: dprect's own text (X's shape)",
    ("engines/spark/cli.py", "cli_session"): "ValueError: the master or remote URL given",
    ("core/domains.py", "parse_domain"): "a grid given on the command line, a parameter",
    ("release/ledger/writes.py", "init"):
        "read to tell a concurrent creation apart, never quoted (failure_reason)",
    ("release/ledger/log.py", "_load"): "DamageError: dprect's own text",
    ("release/ledger/log.py", "history"): "DamageError: dprect's own text",
    ("release/ledger/log.py", "verify"): "DamageError: dprect's own text",
    ("release/ledger/log.py", "_index"): "DamageError: dprect's own text",
    ("release/ledger/queries.py", "_result_of"): "DamageError: dprect's own text",
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


def _imports(tree: ast.AST) -> dict[str, str]:
    """Each name a module binds by an import (anywhere in it) -> the module it comes from."""
    bound: dict[str, str] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                bound.setdefault(a.asname or a.name.split(".")[0], a.name)
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            for a in n.names:
                bound.setdefault(a.asname or a.name, n.module)
    return bound


def _library_types(handler: ast.ExceptHandler, bound: dict[str, str]) -> list[str]:
    """The exception classes ``handler`` catches that belong to a library (not dprect, not
    a builtin): a name imported from outside dprect, or an attribute of a module reached
    by a name or a call (``yaml.YAMLError``, ``_yaml().YAMLError``)."""
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    found = []
    for t in types:
        root = t
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Call) and root is not t:
            found.append(ast.unparse(t))  # a module handed out by a function
        elif isinstance(root, ast.Name) and root.id in bound \
                and not bound[root.id].startswith("dprect"):
            found.append(ast.unparse(t))
    return found


def _handlers() -> list[tuple[str, str, ast.ExceptHandler, dict[str, str]]]:
    """(module, function, handler, the module's imports) for each handler that puts the
    caught exception's text somewhere."""
    found = []
    paths = [(p, p.relative_to(ROOT).as_posix()) for p in sorted(ROOT.rglob("*.py"))]
    paths += [(p, p.relative_to(ROOT.parent).as_posix()) for p in sorted(JOBS.rglob("*.py"))]
    for path, module in paths:
        tree = ast.parse(path.read_text())
        bound = _imports(tree)
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for handler in ast.walk(func):
                if isinstance(handler, ast.ExceptHandler) and handler.name \
                        and any(_uses_text(s, handler.name) for s in handler.body):
                    found.append((module, func.name, handler, bound))
    return found


def offenders() -> set[tuple[str, str]]:
    return {(module, func) for module, func, _, _ in _handlers()}


def test_no_library_exception_text_even_where_vouched() -> None:
    """A library's exception class is never vouched for: its text is the library's (a YAML
    parser quotes the config's lines, Spark a plan's values)."""
    assert [(m, f, _library_types(h, b)) for m, f, h, b in _handlers()
            if _library_types(h, b)] == []


def test_the_library_check_sees_a_library_class() -> None:
    """The check above can fail: the handlers main had (a YAML error, a Spark one)."""
    tree = ast.parse("import yaml\nfrom pyspark.errors import PySparkException\n"
                     "from dprect.core.errors import DprectError\n"
                     "def f():\n    try:\n        pass\n"
                     "    except _yaml().YAMLError as exc:\n        raise E(str(exc))\n"
                     "    except yaml.YAMLError as exc:\n        raise E(str(exc))\n"
                     "    except (PySparkException, ValueError) as exc:\n"
                     "        raise E(str(exc))\n"
                     "    except (DprectError, OSError) as exc:\n        raise E(str(exc))\n")
    bound = _imports(tree)
    caught = [_library_types(h, bound) for h in ast.walk(tree)
              if isinstance(h, ast.ExceptHandler)]
    assert caught == [["_yaml().YAMLError"], ["yaml.YAMLError"], ["PySparkException"], []]


def test_no_caught_exception_text_reaches_a_message() -> None:
    assert offenders() - set(VOUCHED) == set()


def test_every_vouched_place_still_exists() -> None:
    assert set(VOUCHED) - offenders() == set()


# -- an operating-system error: its number and path, never its raiser's text (s42 audit) --
#: what a library's OSError can carry (pyarrow's ArrowIOError, delta-rs's I/O errors)
_QUOTED = "cell-SENTINEL-42"


def test_an_os_error_is_told_by_its_number_and_path() -> None:
    """Before, the command printed ``str(exc)`` of any OSError and the jobs (and a
    ledger's ``fail`` row) that of a missing or forbidden path: a library raising one
    with its own message (pyarrow's ``FileNotFoundError(2, "Failed to open ...")``)
    had it passed on. Python's own OSError reads as before."""
    import errno
    import os

    from dprect.app.failures import describe_failure

    for exc in (FileNotFoundError(errno.ENOENT, f"Failed to open {_QUOTED}"),
                PermissionError(_QUOTED), OSError(errno.EIO, _QUOTED),
                OSError(f"Couldn't deserialize: {_QUOTED}"), OSError(_QUOTED, _QUOTED)):
        code, message = describe_failure(exc)
        assert _QUOTED not in message, (exc, message)
        assert code == (2 if isinstance(exc.errno, int) or type(exc) is not OSError else 1)
    own = FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), "/data/in.parquet")
    assert describe_failure(own) == (2, str(own))
    moved = OSError(errno.EXDEV, os.strerror(errno.EXDEV), "/a", "/b")
    assert describe_failure(moved) == (2, str(moved))


def test_a_library_os_error_in_a_run_is_not_quoted(tmp_path, capsys, monkeypatch) -> None:
    """A library's OSError raised while a run computes (after the charge): the command's
    line and the ledger's ``fail`` row are the same, with the error's number and no
    text of the raiser."""
    import errno

    from cli_run import messages, run
    from sink_table import sink_table

    from dprect.app.aggregate_flow import AggregateProduct
    from dprect.release.ledger import Ledger

    def failing(self, prepared, progress):
        raise OSError(errno.EIO, f"IOError: reading row 3: {_QUOTED}")

    monkeypatch.setattr(AggregateProduct, "compute", failing)
    led = tmp_path / "ledger"
    Ledger(led).init()
    code, _, err = run(["describe", "--input", str(sink_table(tmp_path)), "--columns", "f0",
                        "--epsilon", "1", "--output", str(tmp_path / "r.json"),
                        "--ledger", str(led), "--dataset", "ds"], capsys)
    lines = messages(err)
    assert code == 2 and lines == ["dprect: error: [Errno 5] Input/output error"], err
    fail = [e for e in Ledger(led).events("ds") if e["event"] == "fail"]
    assert [e["message"] for e in fail] == ["[Errno 5] Input/output error"]
