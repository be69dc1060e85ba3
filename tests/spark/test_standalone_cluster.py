"""A real Spark standalone cluster: master + two workers from the installed Spark, on
127.0.0.1 with free ports, and the jobs submitted to it with spark-submit.

The fixture starts the three daemons in their own process groups, with capped memory and
cores (each worker 1 core, 1g) and their logs and work folders under the test's tmp
folder, and stops them by PID in its teardown — whatever the test did — then checks that
no JVM of theirs is left.

Issue #15: at d = 128, on a small table dominated by ties written as hive-partitioned
Parquet (several files, several input partitions), the fit job run with executors on both
workers releases, for a seed, the identical rectangle to the numpy engine's — for every
Spark strategy that gathers the positives on the driver.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from ports import free_ports
from tie_tables import ties_table as _ties_table

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SPARK_HOME = Path(os.environ.get("SPARK_HOME") or "")
if not (SPARK_HOME / "bin" / "spark-class").exists():
    import pyspark

    SPARK_HOME = Path(pyspark.__file__).parent


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


WORKERS = 2


class Cluster:
    """Addresses of the running cluster."""

    def __init__(self, url: str, ui_port: int, env: dict[str, str], logs: Path,
                 worker_uis: list[int]) -> None:
        self.url, self.ui_port, self.env, self.logs = url, ui_port, env, logs
        self.worker_uis = worker_uis

    def state(self) -> dict:
        return _master_state(self.ui_port)

    def worker_states(self) -> list[dict]:
        """Each worker's own /json/ (its running and finished executors)."""
        return [_master_state(port) for port in self.worker_uis]

    def log_tail(self) -> str:
        parts = []
        for f in sorted(self.logs.glob("*.log")):
            parts.append(f"--- {f.name}\n" + "\n".join(f.read_text().splitlines()[-15:]))
        return "\n".join(parts)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("standalone")
    env = cluster_env(tmp)
    port, ui, *worker_ports = free_ports(2 + 2 * WORKERS)
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
        worker_uis = []
        for i in range(WORKERS):
            wport, wui = worker_ports[2 * i], worker_ports[2 * i + 1]
            work = tmp / f"work{i}"
            work.mkdir()
            with open(logs / f"worker{i}.log", "wb") as out:
                procs.append(subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.worker.Worker", "--host",
                     "127.0.0.1", "--port", str(wport), "--webui-port", str(wui), "--cores",
                     "1", "--memory", "1g", "--work-dir", str(work), url],
                    env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
            worker_uis.append(wui)
        c = Cluster(url, ui, env, logs, worker_uis)
        deadline = time.monotonic() + 120
        while True:
            for p in procs:
                assert p.poll() is None, f"a daemon exited early\n{c.log_tail()}"
            try:
                st = c.state()
                alive = [w for w in st.get("workers", []) if w.get("state") == "ALIVE"]
                if st.get("status") == "ALIVE" and len(alive) == WORKERS:
                    break
            except (OSError, ValueError):  # not listening yet, or a page that is not JSON
                pass  # while the UI starts (a fresh-clone CI run once read HTML there)
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


def submit(cluster: Cluster, job: str, *args: str, cores: int = 1, timeout: float = 400
           ) -> subprocess.CompletedProcess[str]:
    """spark-submit a job of ``jobs/`` to the cluster (client mode), with at most
    ``cores`` executor cores (one per worker)."""
    env = dict(cluster.env)
    env["SPARK_CONF_DIR"] = str(REPO / "conf" / "spark")  # quiet driver logs
    cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster.url,
           "--driver-memory", "1g", "--conf", "spark.executor.memory=512m",
           "--conf", f"spark.cores.max={cores}", str(REPO / "jobs" / job), *args]
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


# ---------------------------------------------------------------------------------------
# d = 128 on two workers: the identical rectangle to the numpy engine (issue #15)

DIMS, ROWS, PARTS = 128, 3000, 4
TIES_EPSILON, TIES_DELTA, TIES_SEED = 8.0, 1e-6, 4


def _write_partitioned(path: Path, X: np.ndarray, y: np.ndarray, names: list[str]) -> None:
    """Hive-partitioned Parquet: one folder (one file) per value of ``part``, which is not a
    feature; the rows are shuffled first, so every file holds ties and duplicates."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    order = np.random.default_rng(0).permutation(len(y))
    table = pa.table({**{n: X[order, j] for j, n in enumerate(names)},
                      "y": pa.array(y[order], pa.int32()),
                      "part": pa.array(np.arange(len(y)) % PARTS, pa.int32())})
    pq.write_to_dataset(table, str(path), partition_cols=["part"])


def _spark_plans() -> list[str]:
    """The plans that gather the positives on the driver (``pass`` once it exists)."""
    from dprect.engines.spark.engine import STRATEGIES

    return [p for p in ("collect", "pass") if p in STRATEGIES]


@pytest.mark.parametrize("method", ["randmargins"])
@pytest.mark.parametrize("strategy", _spark_plans())
def test_two_workers_partitioned_128_dims_match_numpy(cluster: Cluster, tmp_path: Path,
                                                      strategy: str, method: str) -> None:
    import warnings

    import yaml

    import dprect

    X, y, domains = _ties_table(ROWS, DIMS, seed=DIMS)
    names = [f"x{j}" for j in range(DIMS)]
    data = tmp_path / "data"
    _write_partitioned(data, X, y, names)
    assert len(list(data.glob("part=*/*.parquet"))) == PARTS

    grid = {n: "0:20:64" if j == 0 else "int:0:16" for j, n in enumerate(names)}
    config = tmp_path / "fit.yaml"
    config.write_text(yaml.safe_dump({
        "spark": {"log_level": "ERROR", "conf": {
            "spark.sql.shuffle.partitions": 4,
            # one input partition per file (no packing of the small files)
            "spark.sql.files.openCostInBytes": 134217728}},
        "fit": {"input": str(data), "format": "parquet", "features": names, "label": "y",
                "grid": grid, "epsilon": TIES_EPSILON, "delta": TIES_DELTA,
                "method": method, "strategy": strategy,
                "output": str(tmp_path / "result.json")},
    }))
    before = {a["id"] for a in cluster.state().get("completedapps", [])}
    fit = submit(cluster, "fit_rectangle.py", "--config", str(config),
                 "--set", f"fit.seed={TIES_SEED}", cores=WORKERS)
    assert fit.returncode == 0, fit.stdout + fit.stderr + cluster.log_tail()
    got = json.loads((tmp_path / "result.json").read_text())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.fit(X, y, grid=domains, epsilon=TIES_EPSILON, delta=TIES_DELTA,
                          method=method, seed=TIES_SEED, features=names).to_json()
    assert got["method"] == want["method"] == method
    assert got["features"] == names
    assert got["grid"]["lower_index"] == want["grid"]["lower_index"], strategy
    assert got["grid"]["upper_index"] == want["grid"]["upper_index"], strategy
    assert got["lower"] == want["lower"] and got["upper"] == want["upper"], strategy
    assert got["grid"]["domains"] == want["grid"]["domains"]
    assert got["empty"] == want["empty"]
    assert got["privacy"] == want["privacy"]
    assert got["seeded"] is True
    # not a trivial answer: some pixel axes are cut inside 0…16 (small n at d = 128
    # leaves too few positives for a non-empty box, the same on both engines)
    lo, hi = (np.array(want["grid"][k][1:], dtype=np.int64) for k in ("lower_index",
                                                                        "upper_index"))
    assert ((lo <= hi) & ((lo > 0) | (hi < 16))).sum() >= 2

    # the application ran on this cluster with an executor on each worker
    apps = [a for a in cluster.state().get("completedapps", [])
            if a["id"] not in before and a["name"] == "fit_rectangle"]
    assert len(apps) == 1, apps
    used = [w for w in cluster.worker_states()
            if any(e.get("appid") == apps[0]["id"]
                   for e in w.get("finishedexecutors", []) + w.get("executors", []))]
    assert len(used) == WORKERS, cluster.worker_states()
