"""A real Spark standalone cluster: master + one worker from the installed Spark, on
127.0.0.1 with free ports, and the jobs submitted to it with spark-submit.

The fixture starts both daemons in their own process groups, with capped memory and
cores and their logs and work folders under the test's tmp folder, and stops both by PID
in its teardown — whatever the test did — then checks that no JVM of theirs is left.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SPARK_HOME = Path(os.environ.get("SPARK_HOME") or "")
if not (SPARK_HOME / "bin" / "spark-class").exists():
    import pyspark

    SPARK_HOME = Path(pyspark.__file__).parent


def free_port() -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cluster_env(tmp: Path) -> dict[str, str]:
    """Environment of the daemons and of spark-submit: loopback only, capped, in tmp."""
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_MASTER_HOST": "127.0.0.1",
        "SPARK_LOG_DIR": str(tmp / "logs"),
        "SPARK_WORKER_DIR": str(tmp / "work"),
        "SPARK_PID_DIR": str(tmp / "pids"),
        "SPARK_DAEMON_MEMORY": "384m",
        "SPARK_WORKER_CORES": "1",
        "SPARK_WORKER_MEMORY": "1g",
        "PYSPARK_PYTHON": PYTHON,
        "PYSPARK_DRIVER_PYTHON": PYTHON,
        "PYTHONHASHSEED": "0",
    })
    env.pop("SPARK_CONF_DIR", None)  # daemons log at Spark's default level, into files
    for d in ("logs", "work", "pids"):
        (tmp / d).mkdir(parents=True, exist_ok=True)
    return env


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a daemon (and the executors it started) by its PID / process group."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _master_state(ui_port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as r:
        return json.loads(r.read())


class Cluster:
    """Addresses of the running cluster."""

    def __init__(self, url: str, ui_port: int, env: dict[str, str], logs: Path) -> None:
        self.url, self.ui_port, self.env, self.logs = url, ui_port, env, logs

    def state(self) -> dict:
        return _master_state(self.ui_port)

    def log_tail(self) -> str:
        parts = []
        for f in sorted(self.logs.glob("*.log")):
            parts.append(f"--- {f.name}\n" + "\n".join(f.read_text().splitlines()[-15:]))
        return "\n".join(parts)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("standalone")
    env = cluster_env(tmp)
    port, ui, wport, wui = free_port(), free_port(), free_port(), free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    logs = tmp / "logs"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(logs / "master.log", "wb") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(ui)],
                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        url = f"spark://127.0.0.1:{port}"
        with open(logs / "worker.log", "wb") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--port", str(wport), "--webui-port", str(wui), "--cores", "1",
                 "--memory", "1g", "--work-dir", str(tmp / "work"), url],
                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        c = Cluster(url, ui, env, logs)
        deadline = time.monotonic() + 120
        while True:
            for p in procs:
                assert p.poll() is None, f"a daemon exited early\n{c.log_tail()}"
            try:
                st = c.state()
                if st.get("status") == "ALIVE" and any(
                        w.get("state") == "ALIVE" for w in st.get("workers", [])):
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"cluster did not come up\n{c.log_tail()}"
            time.sleep(1.0)
        yield c
    finally:
        for p in reversed(procs):
            _stop(p)
        for p in procs:
            assert p.poll() is not None, f"daemon {p.pid} still running"
            assert _group_gone(p.pid), f"processes of daemon {p.pid}'s group still run"


def _group_gone(pgid: int, wait: float = 15.0) -> bool:
    """True once no process is left in the group (executors die with their worker)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.5)
    return False


def submit(cluster: Cluster, job: str, *args: str, timeout: float = 400
           ) -> subprocess.CompletedProcess[str]:
    """spark-submit a job of ``jobs/`` to the cluster (client mode)."""
    env = dict(cluster.env)
    env["SPARK_CONF_DIR"] = str(REPO / "conf" / "spark")  # quiet driver logs
    cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster.url,
           "--driver-memory", "1g", "--conf", "spark.executor.memory=512m",
           "--conf", "spark.cores.max=1", str(REPO / "jobs" / job), *args]
    return subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def test_fit_job_on_standalone_cluster(cluster: Cluster, tmp_path: Path) -> None:
    out = tmp_path
    common = ["--config", str(REPO / "conf" / "standalone.yaml")]
    gen = submit(cluster, "generate_synthetic.py", *common,
                 "--set", f"generate.output={out / 'data'}", "--set", "generate.rows=60000",
                 "--set", f"generate.truth={out / 'truth.json'}")
    assert gen.returncode == 0, gen.stdout + gen.stderr + cluster.log_tail()
    fit = submit(cluster, "fit_rectangle.py", *common,
                 "--set", f"fit.input={out / 'data'}",
                 "--set", f"fit.output={out / 'result.json'}",
                 "--set", f"fit.results_table={out / 'results'}",
                 "--set", f"fit.plot={out / 'rect.png'}",
                 "--set", f"fit.truth={out / 'truth.json'}",
                 "--set", "fit.seed=11")
    assert fit.returncode == 0, fit.stdout + fit.stderr + cluster.log_tail()

    result = json.loads((out / "result.json").read_text())
    assert result["features"] == ["f0", "f1", "f2"]
    assert result["privacy"]["epsilon"] <= 1.0 + 1e-9
    assert result["privacy"]["delta"] <= 1e-6
    assert result["seeded"] is True and "NOT private" in result["warning"]
    truth = json.loads((out / "truth.json").read_text())
    for j in range(3):  # plenty of positives: the private bounds land near the true ones
        assert abs(result["lower"][j] - truth["true_lower"][j]) < 50
        assert abs(result["upper"][j] - truth["true_upper"][j]) < 50
    assert (out / "rect.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    from dprect.release.results_table import read_results

    assert read_results(out / "results").num_rows == 1
    # both applications really ran on this cluster
    names = {a["name"] for a in cluster.state().get("completedapps", [])}
    assert {"generate_synthetic", "fit_rectangle"} <= names, names
