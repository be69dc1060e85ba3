"""A Spark Connect server that dies mid-run: the run ends within a bound, and SIGTERM
still exits at once (dprect/engines/spark/connect_retry.py).

Each test starts a server of its own (``own_connect_server``) and kills it while a
``dprect describe --remote`` child is paused at a step after its table was read: the
child (:data:`PAUSED`) creates a marker file at that step and waits for its stdin to
close, so the server is dead before the run's next call to it, whatever the machine's
speed. pyspark's own retry policy would keep the child waiting about ten minutes (and as
long again to release its session, even after a SIGTERM); the children's timeouts make
such a wait a failure, not a hang. Warnings are shown (``PYTHONWARNINGS=always``): the
run's stderr must still be its one line.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from connect_server import ConnectServer, client_env

from dprect.app.failures import EXIT_SPARK, EXIT_TERMINATED
from dprect.engines.spark.connect_retry import CONNECT_RETRY_SECONDS

pytestmark = pytest.mark.connect

REPO = Path(__file__).resolve().parents[2]
#: the child: ``dprect`` whose first read of the session's parallelism (in the
#: statistics' pass, after the table was read) creates the file argv[1] names and waits
#: for stdin to close; argv[2:] are the command's arguments
PAUSED = """
import sys
from pathlib import Path
import dprect.engines.spark.statistics as statistics
from dprect.app.cli import main

real = statistics.default_parallelism

def paused(spark):
    statistics.default_parallelism = real
    Path(sys.argv[1]).touch()
    sys.stdin.read()
    return real(spark)

statistics.default_parallelism = paused
sys.exit(main(sys.argv[2:]))
"""


def _table(folder: Path) -> Path:
    gen = np.random.default_rng(3)
    folder.mkdir()
    n = 1000
    pq.write_table(pa.table({"a": gen.normal(size=n), "b": gen.normal(size=n),
                             "part": np.where(np.arange(n) % 2, "odd", "even")}),
                   folder / "part-0.parquet")
    return folder


@contextmanager
def _paused_describe(server: ConnectServer, tmp_path: Path
                     ) -> Iterator[tuple[subprocess.Popen[bytes], Path, Path]]:
    """A ``dprect describe --remote`` child paused mid-run (see the module's notes),
    its server killed; the child, its output's path and its stderr's file. The child is
    killed at the block's end if it still runs (a test that failed)."""
    marker, out, err = tmp_path / "paused", tmp_path / "stats.json", tmp_path / "stderr"
    args = ["describe", "--input", str(_table(tmp_path / "t")), "--output", str(out),
            "--columns", "a,b", "--group-by", "part", "--groups", "even,odd",
            "--epsilon", "2", "--seed", "5", "--engine", "spark",
            "--remote", server.url, "--quiet"]
    with open(err, "wb") as stderr:
        child = subprocess.Popen([sys.executable, "-c", PAUSED, str(marker), *args],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                 stderr=stderr, cwd=tmp_path,
                                 env={**client_env(), "PYTHONWARNINGS": "always"})
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert child.poll() is None, err.read_text()
            assert time.monotonic() < deadline, "the child never reached its pause"
            time.sleep(0.2)
        server.kill()
        yield child, out, err
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)


def test_a_server_lost_mid_run_ends_it_within_the_bound(own_connect_server: ConnectServer,
                                                         tmp_path: Path) -> None:
    with _paused_describe(own_connect_server, tmp_path) as (child, out, err):
        assert child.stdin is not None
        child.stdin.close()
        # the failing call's retries, then the release tried once; pyspark's policy:
        # about 10 minutes, and as long again for the release
        rc = child.wait(timeout=CONNECT_RETRY_SECONDS + 60)
    lines = err.read_text().strip().splitlines()
    assert rc == EXIT_SPARK, lines
    assert len(lines) == 1 and "Spark Connect server stopped answering" in lines[0], lines
    assert not out.exists()


def test_sigterm_after_the_server_was_lost_exits_at_once(own_connect_server: ConnectServer,
                                                         tmp_path: Path) -> None:
    with _paused_describe(own_connect_server, tmp_path) as (child, out, err):
        child.send_signal(signal.SIGTERM)
        # the session's release is tried once (pyspark's policy: about 10 minutes)
        rc = child.wait(timeout=20)
    lines = err.read_text().strip().splitlines()
    assert rc == EXIT_TERMINATED, lines
    assert lines == ["dprect: terminated"]
    assert not out.exists()
