"""An interrupt while pyspark starts its JVM ends that JVM (session 40: a SIGTERM one
second after the run id left a ``SparkSubmit`` JVM running with no Python side, for
good — pyspark removes the folder its connection file goes to, and py4j's server thread
keeps the JVM alive).

The scenario runs in a fresh Python child: in the test's own process an earlier test has
usually started a JVM already, and then :func:`~dprect.engines.spark.session.local_session`
starts none (session 42: the test skipped in the full suite)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: the scenario, in a Python child that has no JVM: prints ``ended`` (the stand-in was
#: killed) or ``alive`` (it was not), then ``other alive`` when the unrelated child runs
SCENARIO = r"""
import subprocess
import sys
import time

from pyspark.sql import SparkSession

from dprect.engines.spark import session

assert session.SparkContext._gateway is None
sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
other = subprocess.Popen(sleeper)
started = []


def interrupted_launch(self):
    started.append(subprocess.Popen([*sleeper, "org.apache.spark.deploy.SparkSubmit"]))
    time.sleep(0.2)
    raise KeyboardInterrupt


SparkSession.Builder.getOrCreate = interrupted_launch
try:
    try:
        session.local_session("local[1]")
    except KeyboardInterrupt:
        print("interrupted")
    (jvm,) = started
    try:
        code = jvm.wait(timeout=10)
        print("ended" if code != 0 else "exited")
    except subprocess.TimeoutExpired:
        print("alive")
    print("other alive" if other.poll() is None else "other ended")
finally:
    for p in [other, *started]:
        p.kill()
        p.wait()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_interrupted_launch_ends_the_child_jvm_and_nothing_else() -> None:
    """Two children of a fresh Python process: one whose command line names SparkSubmit
    (as the JVM pyspark starts), one that does not. After an interrupted ``getOrCreate``,
    the first is ended and the second left alone. Simulated: the builder's
    ``getOrCreate`` starts the stand-in and raises KeyboardInterrupt. (With
    ``_end_starting_jvms`` a no-op, the child prints ``alive``.)"""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", SCENARIO], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["interrupted", "ended", "other alive"], \
        (done.stdout, done.stderr)
