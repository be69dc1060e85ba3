"""Temporary folders a library was given are removed when the process ends, also by the
two ends that skip the interpreter's teardown with ``os._exit`` (the console script's
and a job's): session 42 found a Spark warehouse folder (``dprect-warehouse-*``) left in
the temporary folder after every ``dprect ... --engine spark`` run, its ``atexit``
handler skipped. Each end runs in a Python child."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

ENDS = {
    "the console script": "import dprect.app.cli as cli\ncli.main = lambda: 0\ncli.run()",
    "a job": "from dprect.app.jobs_support import exit_now\nexit_now(0)",
    "the interpreter's exit": "pass",
}


@pytest.mark.parametrize("end", sorted(ENDS))
def test_a_folder_named_for_removal_is_gone_after_the_process_ends(tmp_path, end):
    folder = tmp_path / "dprect-warehouse-x"
    (folder / "inside").mkdir(parents=True)
    (folder / "inside" / "f").write_text("x")
    code = ("from dprect.core.leftovers import remove_at_exit\n"
            f"remove_at_exit({str(folder)!r})\n{ENDS[end]}\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not folder.exists()
    assert tmp_path.is_dir()
