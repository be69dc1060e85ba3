"""dprect through Spark Connect: the same JSON as the classic session for a seed.

One local Connect server (the ``connect_url`` fixture, tests/spark/connect_server.py)
serves every test here; the clients run as child processes (a Connect session switches
pyspark into Connect mode for its whole process). Each result is compared with the same
run on the tests' classic session: the Python API on a user's
``SparkSession.builder.remote(...)`` session (every Spark strategy, the bounds' pass),
``dprect fit``, ``dprect aggregate``, ``dprect bounds`` and ``dprect describe`` with
``--remote`` (and groups found privately), and the fit job with
``spark.remote`` in its configuration.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from connect_client import BOUNDS, FIT, STRATEGIES
from connect_server import client_env
from ports import free_port

from dprect.app.cli import main

pytestmark = pytest.mark.connect

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CLI_FIT = ["--features", "a,b", "--label", "y", "--epsilon", "4", "--delta", "1e-6",
           "--grid=-3:3:64", "--seed", "5", "--engine", "spark"]
CLI_BOUNDS = ["--columns", "a,b", "--group-by", "part", "--groups", "even,odd",
              "--epsilon", "1", "--seed", "5", "--engine", "spark"]
CLI_DESCRIBE = [*CLI_BOUNDS[:6], "--epsilon", "2", "--seed", "5", "--engine", "spark"]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of three Parquet files (three partitions): two features, a 0/1 label and
    a two-valued group column."""
    gen = np.random.default_rng(11)
    folder = tmp_path_factory.mktemp("connect") / "train"
    folder.mkdir()
    for part in range(3):
        n = 300
        X = gen.normal(size=(n, 2))
        y = (np.abs(X).max(axis=1) < 1.0).astype(np.int64)
        pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "y": y,
                                 "part": np.where(np.arange(n) % 2, "odd", "even")}),
                       folder / f"part-{part}.parquet")
    return folder


def _child(args: list[str], cwd: Path, timeout: float = 300, *, warnings: bool = False
           ) -> subprocess.CompletedProcess[str]:
    env = client_env()
    if warnings:
        env["PYTHONWARNINGS"] = "always"
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=env)


def test_python_api_on_a_remote_session_equals_classic(spark, connect_url: str,
                                                       table: Path, tmp_path: Path) -> None:
    from dprect.core.domains import FloatBins
    from dprect.core.statistic import COVERAGE
    from dprect.engines.spark.fit import fit_dataframe
    from dprect.engines.spark.remote import is_connect, partition_count
    from dprect.engines.spark.statistics import spark_statistics

    out = tmp_path / "seen.json"
    done = _child([str(HERE / "connect_client.py"), connect_url, str(table), str(out)],
                  tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(out.read_text())

    df = spark.read.parquet(str(table))
    assert not is_connect(spark) and seen["connect"]
    assert seen["partitions"] == partition_count(df)  # counted without the JVM
    assert seen["partitions_of_8"] == 8
    # the server runs with conf/spark (SPARK_CONF_DIR): its JIT flag is read remotely
    assert seen["compiles_huge_methods"] is True
    for plan in STRATEGIES:
        classic = fit_dataframe(df, strategy=plan, **FIT).to_json()  # type: ignore[arg-type]
        assert seen["fits"][plan] == json.loads(json.dumps(classic)), plan
    domains = [FloatBins(12)] * len(BOUNDS["columns"])
    histograms = spark_statistics(df, BOUNDS["columns"], COVERAGE.spec(domains),
                                  group_by="part", groups=BOUNDS["groups"])
    assert seen["histograms"] == {f"{g},{c}": [h.keys.tolist(), h.counts.tolist()]
                                  for (g, c), h in sorted(histograms.items())}


def test_cli_fit_bounds_and_describe_with_remote_write_the_classic_json(
        spark, connect_url: str, table: Path, tmp_path: Path) -> None:
    # classic: in this process, on the tests' session
    assert main(["fit", "--input", str(table), "--output", str(tmp_path / "fit.json"),
                 *CLI_FIT]) == 0
    assert main(["bounds", "--input", str(table), "--output", str(tmp_path / "bounds.json"),
                 *CLI_BOUNDS]) == 0
    assert main(["describe", "--input", str(table), "--output",
                 str(tmp_path / "describe.json"), *CLI_DESCRIBE]) == 0
    # Connect: a relative input path is this process's, not the server's working folder
    remote = ["--remote", connect_url]
    fit = _child(["-m", "dprect", "fit", "--input", "train", "--output", "r-fit.json",
                  *CLI_FIT, *remote], table.parent)
    assert fit.returncode == 0, fit.stderr[-2000:]
    bounds = _child(["-m", "dprect", "bounds", "--input", "train", "--output",
                     "r-bounds.json", *CLI_BOUNDS, *remote], table.parent)
    assert bounds.returncode == 0, bounds.stderr[-2000:]
    # describe's pass merges its key ranges with applyInArrow: through Connect too
    described = _child(["-m", "dprect", "describe", "--input", "train", "--output",
                        "r-describe.json", *CLI_DESCRIBE, *remote], table.parent)
    assert described.returncode == 0, described.stderr[-2000:]
    for name in ("fit", "bounds", "describe"):
        remote_json = json.loads((table.parent / f"r-{name}.json").read_text())
        assert remote_json == json.loads((tmp_path / f"{name}.json").read_text()), name


def test_cli_aggregate_and_fit_of_privately_selected_groups_with_remote_write_the_classic_json(
        spark, connect_url: str, table: Path, tmp_path: Path) -> None:
    """``dprect aggregate`` (a mean and a median: the query's and the quantiles'
    mechanisms in one charge) and ``dprect fit`` (one rectangle per class) over groups
    found privately (``--select-groups``) through Connect: the classic session's JSON."""
    selection = ["--select-groups", "--selection-epsilon", "1", "--selection-delta", "1e-6"]
    runs = {
        "aggregate": ["aggregate", "--columns", "a,b", "--statistics", "mean,median",
                      "--group-by", "part", "--epsilon", "2", "--seed", "5",
                      "--engine", "spark", "--quiet", *selection],
        "fit": ["fit", *[o for o in CLI_FIT if o not in ("--label", "y")], "--label", "part",
                "--quiet", *selection],
    }
    for name, options in runs.items():
        classic = tmp_path / f"{name}.json"
        assert main([*options, "--input", str(table), "--output", str(classic)]) == 0
        done = _child(["-m", "dprect", *options, "--input", str(table), "--output",
                       str(tmp_path / f"r-{name}.json"), "--remote", connect_url], tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        assert (json.loads((tmp_path / f"r-{name}.json").read_text())
                == json.loads(classic.read_text())), name


def test_describe_of_many_groups_draws_in_the_executors_through_connect(
        spark, connect_url: str, tmp_path: Path) -> None:
    """Past EXECUTOR_CELLS (groups × columns) describe draws in the executors and fetches
    the blocks in order (``executor_draws._in_order``: cut by ``repartitionById`` on a
    Connect session): the same JSON as the classic session's in-process route."""
    from dprect.engines.spark.executor_draws import EXECUTOR_CELLS

    groups = EXECUTOR_CELLS // 2 + 8  # × 2 columns: past the threshold
    gen = np.random.default_rng(3)
    folder = tmp_path / "many"
    folder.mkdir()
    n = 6 * groups
    pq.write_table(pa.table({"a": gen.normal(size=n), "b": gen.exponential(size=n),
                             "g": np.arange(n) % groups}), folder / "part-0.parquet")
    names = tmp_path / "groups.txt"
    names.write_text("\n".join(str(g) for g in range(groups)) + "\n")
    options = ["--columns", "a,b", "--group-by", "g", "--groups-file", str(names),
               "--epsilon", "2", "--seed", "9", "--engine", "spark"]
    classic = tmp_path / "classic.json"
    assert main(["describe", "--input", str(folder), "--output", str(classic), *options,
                 "--quiet"]) == 0
    done = _child(["-m", "dprect", "describe", "--input", str(folder), "--output",
                   str(tmp_path / "remote.json"), *options, "--quiet",
                   "--remote", connect_url], tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (json.loads((tmp_path / "remote.json").read_text())
            == json.loads(classic.read_text()))


def test_fit_job_with_spark_remote_writes_the_classic_result(
        spark, connect_url: str, table: Path, tmp_path: Path) -> None:
    import fit_rectangle

    def args(out: Path) -> list[str]:
        return ["--set", f"fit.input={table}", "--set", "fit.features=[a, b]",
                "--set", "fit.label=y", "--set", "fit.grid=-3:3:64", "--set", "fit.epsilon=4",
                "--set", "fit.delta=1e-6", "--set", "fit.seed=5", "--set", "fit.dataset=t",
                "--set", f"fit.output={out / 'result.json'}",
                "--set", f"fit.results_table={out / 'results'}"]

    classic, remote = tmp_path / "classic", tmp_path / "remote"
    assert fit_rectangle.main(args(classic), spark) == 0
    # a config written for spark-submit: its static settings are the server's, skipped
    done = _child([str(REPO / "jobs" / "fit_rectangle.py"), *args(remote),
                   "--set", f"spark.remote={connect_url}",
                   "--set", "spark.conf.spark.executor.memory=1g",
                   "--set", "spark.conf.spark.sql.shuffle.partitions=3"], tmp_path,
                  warnings=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "CANNOT_MODIFY" not in done.stdout + done.stderr
    assert (json.loads((remote / "result.json").read_text())
            == json.loads((classic / "result.json").read_text()))
    from dprect.release.results_table import read_results

    rows = read_results(remote / "results").to_pylist()
    assert len(rows) == 1 and rows[0]["dataset"] == "t"


def test_unreachable_or_malformed_server_one_line_exit_2(table: Path, tmp_path: Path) -> None:
    # a URL's parameters can hold a credential: never shown
    for url, message in ((f"sc://127.0.0.1:{free_port()}/;token=SECRET-TOKEN",
                          "no Spark Connect server answers"),
                         ("http://127.0.0.1:15002", "looks like sc://HOST:PORT")):
        out = tmp_path / "never.json"
        # --quiet: the connection attempt may take 10 s, when the heartbeat would speak
        done = _child(["-m", "dprect", "fit", "--input", str(table), "--output", str(out),
                       *CLI_FIT, "--remote", url, "--quiet"], tmp_path, timeout=120)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and "Traceback" not in done.stderr
        assert "SECRET-TOKEN" not in done.stderr
        assert not out.exists()
