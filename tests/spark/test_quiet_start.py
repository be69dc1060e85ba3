"""What a session dprect starts leaves in the user's current folder and prints: no
``spark-warehouse/`` (nor Derby's ``metastore_db/``, ``derby.log``) and no WARN line
(session 42: the CLI set the level to WARN after start-up, over the ERROR of dprect's
log4j2 configuration, and Spark made ``spark-warehouse/`` in the current folder). Run in
a fresh Python child, so that the JVM is started by the session under test."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: the child: the command line's session (its defaults), the catalog touched (which
#: makes the warehouse folder), a Delta table written by path, and a warning logged by a
#: Spark logger; prints the warehouse folder it used
CHILD = r"""
import sys

from dprect.engines.spark.cli import cli_session

spark, owned = cli_session(None)
assert owned
spark.catalog.listTables()
spark.range(3).write.format("delta").save(sys.argv[1])
jvm = spark.sparkContext._jvm
jvm.org.apache.logging.log4j.LogManager.getLogger("org.apache.spark.SparkContext").warn(
    "a warning for the operator")
print(spark.conf.get("spark.sql.warehouse.dir"))
spark.stop()
"""

#: a log4j line at WARN (the layout's ``%p``) or a Spark start-up warning
WARN_LINE = re.compile(r"\bWARN\b")


def test_a_session_dprect_starts_leaves_no_warehouse_and_prints_no_warning(tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("SPARK_CONF_DIR", None)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "t")],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    assert done.returncode == 0, done.stderr
    left = sorted(p.name for p in cwd.iterdir())  # spark-warehouse, metastore_db, ...
    warnings = [ln for ln in done.stderr.splitlines() if WARN_LINE.search(ln)]
    assert (left, warnings) == ([], []), done.stderr
    (warehouse,) = done.stdout.split()
    assert "dprect-warehouse-" in warehouse
    assert not Path(warehouse.removeprefix("file:")).exists()  # removed at exit
    assert (tmp_path / "t" / "_delta_log").is_dir()  # the table went where it was named
