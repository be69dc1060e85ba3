"""A local Spark Connect server for the tests, started from the pip-installed Spark.

pyspark ships the server (``jars/spark-connect_2.13-*.jar``) but not
``sbin/start-connect-server.sh``; what that script runs is ``spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer``, which :class:`ConnectServer`
runs on 127.0.0.1 and a free port, with conf/spark as its ``SPARK_CONF_DIR`` (the JIT flag,
quiet loggers: the server-side configuration docs/operations.md describes) and this
interpreter for its Python workers. The Connect clients run in child processes: a
Connect session switches pyspark into Connect mode for its whole process
(``SPARK_CONNECT_MODE_ENABLED``), which the tests' classic session must not see.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from ports import free_port

REPO = Path(__file__).resolve().parents[2]
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def client_env() -> dict[str, str]:
    """The environment of a Connect client child: no inherited Spark Connect or gateway
    settings, the tests' interpreter for Python workers."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "PYSPARK_GATEWAY_PORT")}
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env["PYTHONWARNINGS"] = "ignore"
    return env


class ConnectServer:
    """``with ConnectServer() as url:`` a server at ``sc://127.0.0.1:PORT`` until the
    block ends (then it is stopped: terminated, killed after 30 s)."""

    def __init__(self, log: Path, timeout: float = 180.0) -> None:
        self.log = log
        self.timeout = timeout
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def __enter__(self) -> str:
        import pyspark

        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        env = {**client_env(), "SPARK_CONF_DIR": str(REPO / "conf" / "spark"),
               "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [str(submit), "--class", SERVER_CLASS, "--master", "local[2]",
                 "--driver-memory", "1g", "--conf", "spark.ui.enabled=false",
                 "--conf", "spark.sql.shuffle.partitions=4",
                 "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                 "--conf", f"spark.connect.grpc.binding.port={self.port}",
                 "spark-internal"],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Connect server exited ({self.process.returncode}); "
                                   f"see {self.log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self.url
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the Connect server did not listen within {self.timeout:g} s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def kill(self) -> None:
        """Kill the server at once (SIGKILL to its process group: spark-submit and its
        JVM), as a server that dies mid-run; wait for it to be gone."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def __exit__(self, *exc: object) -> None:
        self.stop()
