"""numba's disk cache never serves code older than the source (dprect.core.jit_cache).

numba keys a cached kernel on its own file only (numba/numba#8396): a caller whose callee
lives in another module keeps its cached machine code, the callee's old code inlined, when
only the callee's file changes. The end-to-end test builds that pair twice in tmp_path — once
compiled by ``cached_njit``, once by plain ``numba.njit(cache=True)`` as the control that
shows the setup does hit the hazard — runs each in a fresh process, edits only the callees
and runs again: the guarded caller must use the new callee (the plain one, today, does not).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dprect
from dprect.core import jit_cache

ROOT = Path(dprect.__file__).resolve().parent.parent

CALLEE = """\
from {jit_import}

def _step(x):
    return x + {add}

step = {jit}(_step)
"""

CALLER = """\
from {jit_import}
from {package}.callee import step

def _kernel(x):
    return step(x) * 10

kernel = {jit}(_kernel)
"""

RUN = """\
import json
from guarded.caller import kernel as guarded
from plain.caller import kernel as plain
print(json.dumps({"guarded": int(guarded(1)), "plain": int(plain(1))}))
"""

JITS = {"guarded": ("dprect.core.jit_cache import cached_njit", "cached_njit"),
        "plain": ("numba import njit", "njit(cache=True)")}


def _write(tmp_path: Path, add: int, callee_only: bool = False) -> None:
    for package, (jit_import, jit) in JITS.items():
        where = tmp_path / package
        where.mkdir(exist_ok=True)
        fill = {"jit_import": jit_import, "jit": jit, "package": package, "add": add}
        (where / "callee.py").write_text(CALLEE.format(**fill))
        if not callee_only:
            (where / "__init__.py").write_text("")
            (where / "caller.py").write_text(CALLER.format(**fill))


def _run(tmp_path: Path) -> dict[str, int]:
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
           "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", RUN], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_a_callee_edited_in_another_module_is_used_by_the_next_process(tmp_path: Path):
    pytest.importorskip("numba")
    _write(tmp_path, add=1)
    assert _run(tmp_path) == {"guarded": 20, "plain": 20}
    cached = sorted(p.name for p in (tmp_path / "cache").rglob("caller.*.nbi"))
    assert len(cached) == 2, cached  # both callers were cached on disk
    _write(tmp_path, add=2222, callee_only=True)
    again = _run(tmp_path)
    # the control: numba's own check keeps the caller's code with the old callee inlined
    # (if numba comes to check a callee's file, this line tells: the guard is then moot)
    assert again["plain"] == 20, again
    assert again["guarded"] == (1 + 2222) * 10, again


def test_a_stale_directory_loses_only_its_modules_cached_files(tmp_path: Path):
    source, cache = tmp_path / "src", tmp_path / "cache"
    source.mkdir()
    cache.mkdir()
    (source / "kern.py").write_text("")
    kept = ["other.f-3.py311.nbi", "other.f-3.py311.1.nbc", "kern.cpython-311.pyc"]
    gone = ["kern.f-3.py311.nbi", "kern.f-3.py311.1.nbc", "kern.g-9.py311.2.nbc"]
    for name in kept + gone:
        (cache / name).write_text("x")
    stamp = cache / jit_cache.STAMP.format(package="dprect")
    stamp.write_text("0" * 64)
    assert jit_cache._renew(cache, source, "dprect")
    assert sorted(p.name for p in cache.iterdir()) == sorted([*kept, stamp.name])
    assert stamp.read_text() == jit_cache.source_fingerprint("dprect")
    # fresh now: a file cached from the present sources is kept
    (cache / gone[0]).write_text("x")
    assert jit_cache._renew(cache, source, "dprect")
    assert (cache / gone[0]).exists()


def test_a_fingerprint_that_cannot_be_stored_refuses_the_cache(tmp_path: Path):
    source, cache = tmp_path / "src", tmp_path / "cache"
    source.mkdir()
    cache.mkdir()
    (cache / jit_cache.STAMP.format(package="dprect")).mkdir()  # not a writable file
    assert not jit_cache._renew(cache, source, "dprect")
    assert not jit_cache._renew(cache, source, "no_such_package_loaded")


def test_the_fingerprint_covers_every_source_of_the_package(tmp_path: Path, monkeypatch):
    package = tmp_path / "fpkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "deep.py").write_text("A = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("fpkg")
    try:
        before = jit_cache.source_fingerprint.__wrapped__("fpkg")
        (package / "sub" / "deep.py").write_text("A = 2\n")
        after = jit_cache.source_fingerprint.__wrapped__("fpkg")
    finally:
        sys.modules.pop("fpkg", None)
    assert before is not None and after is not None and before != after

