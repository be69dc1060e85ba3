"""An interrupt while pyspark starts its JVM ends that JVM (session 40: a SIGTERM one
second after the run id left a ``SparkSubmit`` JVM running with no Python side, for
good — pyspark removes the folder its connection file goes to, and py4j's server thread
keeps the JVM alive)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_interrupted_launch_ends_the_child_jvm_and_nothing_else() -> None:
    """Two children of this process: one whose command line names SparkSubmit (as the
    JVM pyspark starts), one that does not. After an interrupted ``getOrCreate``, the
    first is ended and the second left alone. Simulated: the builder's ``getOrCreate``
    starts the stand-in and raises KeyboardInterrupt."""
    from pyspark.sql import SparkSession

    from dprect.engines.spark import session

    sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
    other = subprocess.Popen(sleeper)
    started: list[subprocess.Popen[bytes]] = []

    def interrupted_launch(self):
        started.append(subprocess.Popen([*sleeper, "org.apache.spark.deploy.SparkSubmit"]))
        time.sleep(0.2)
        raise KeyboardInterrupt

    real = SparkSession.Builder.getOrCreate
    try:
        SparkSession.Builder.getOrCreate = interrupted_launch  # type: ignore[method-assign]
        if session.SparkContext._gateway is not None:
            pytest.skip("a JVM is running in this process already")
        with pytest.raises(KeyboardInterrupt):
            session.local_session("local[1]")
        (jvm,) = started
        assert jvm.wait(timeout=10) != 0  # killed
        assert other.poll() is None
    finally:
        SparkSession.Builder.getOrCreate = real  # type: ignore[method-assign]
        other.kill()
        other.wait()
        for p in started:
            p.kill()
            p.wait()
