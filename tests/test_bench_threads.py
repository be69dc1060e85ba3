"""Benchmarks that pin numpy's BLAS to one thread (as Spark's Python workers run) do so
before numpy loads, and through ``benchmarks/blas_threads.py`` also when a wrapper loaded
numpy first (s40-edges item 5): ``os.environ.setdefault("OMP_NUM_THREADS", "1")`` after
numpy is loaded does nothing — a wrapper that imported numpy before ``runpy``-running
every_block_draws.py kept OpenBLAS on both cores (docs/results.md, s39-digest)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
HELPER = "blas_threads"
VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: modules a script may import before the pin: the standard library's and the helper
BEFORE_PIN = set(sys.stdlib_module_names) | {HELPER, "__future__"}


def pinning() -> list[Path]:
    """The benchmarks that pin threads (name a thread variable or call the helper)."""
    return sorted(p for p in BENCH.glob("*.py") if p.stem != HELPER and any(
        word in p.read_text(encoding="utf-8") for word in (*VARIABLES, "pin_blas_threads")))


def _imported(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name.split(".")[0] for a in node.names]
    if isinstance(node, ast.ImportFrom):
        return [(node.module or "").split(".")[0]]
    return []


def _is_pin(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "pin_blas_threads")


def order_fault(source: str) -> str | None:
    """Why a script's pin is not effective, or None: it must call ``pin_blas_threads()``
    at module level, import only the standard library (and the helper) before it, and set
    no thread variable itself (a ``setdefault`` after numpy loads is a silent no-op)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in VARIABLES:
            return f"names {node.value} itself: pin through {HELPER}.pin_blas_threads"
    for node in tree.body:
        if _is_pin(node):
            return None
        early = [m for m in _imported(node) if m not in BEFORE_PIN]
        if early:
            return f"imports {early[0]} before pin_blas_threads()"
    return "no module-level pin_blas_threads() call"


def test_the_checker_sees_a_late_or_hand_made_pin() -> None:
    """The checker's power: each way to get the pin wrong is reported."""
    good = "import os\nfrom blas_threads import pin_blas_threads\npin_blas_threads()\n" \
           "import numpy\n"
    assert order_fault(good) is None
    assert "imports numpy" in str(order_fault("import numpy\n" + good))
    assert "names OMP_NUM_THREADS" in str(order_fault(
        'import os\nos.environ.setdefault("OMP_NUM_THREADS", "1")\nimport numpy\n'))
    assert "no module-level" in str(order_fault("import os\n"))
    assert "no module-level" in str(order_fault(
        "from blas_threads import pin_blas_threads\ndef f():\n    pin_blas_threads()\n"))


def test_every_pinning_benchmark_pins_before_numpy_loads() -> None:
    found = pinning()
    assert len(found) >= 3, found  # aggregate_pass_profile, describe/every_block_draws
    faults = {p.name: order_fault(p.read_text(encoding="utf-8")) for p in found}
    assert {k: v for k, v in faults.items() if v} == {}


CHILD = """
import json, runpy, sys
import numpy  # the wrapper's numpy, loaded before the script: its BLAS on every core
from threadpoolctl import threadpool_info
def blas():
    return sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
before = blas()
sys.path.insert(0, sys.argv[2])
runpy.run_path(sys.argv[1], run_name="imported_by_a_wrapper")
print(json.dumps({"before": before, "after": blas()}))
"""


@pytest.mark.parametrize("script", [p.name for p in pinning()])
def test_the_pin_holds_when_a_wrapper_loaded_numpy_first(script: str) -> None:
    pytest.importorskip("threadpoolctl")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: BLAS has one thread whatever the pin")
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", CHILD, str(BENCH / script), str(BENCH)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    threads = json.loads(done.stdout.strip().splitlines()[-1])
    assert max(threads["before"]) > 1, threads  # power: the wrapper's BLAS had threads
    assert threads["after"] == [1], threads
