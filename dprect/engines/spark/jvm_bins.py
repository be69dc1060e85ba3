"""The JVM count of describe's search bins (issue #41): the kernel shipped as Java source
(``jvm/BinsAggregator.java``, package data), its jar and the one call that runs it.

On a classic session whose JVM holds ``dprect.spark.BinsAggregator`` at :data:`VERSION`
(:func:`~dprect.engines.spark.session.has_bins`), the Spark pass
(:func:`~dprect.engines.spark.statistics.partial_pass`) counts a run's describe columns
(the search grid ``FloatBins(SEARCH_BITS)`` with sums, and a variance's square words) in
the JVM instead of in ``mapInArrow`` (a mixed run's other columns, quantiles or coverage
bounds, still in ``mapInArrow``; the two partial outputs are merged as one). The JVM's
count: per row one hash lookup of its group, per value its IEEE bits' search bin and
truncated significand M (:func:`~dprect.core.describe_stats.significands`) added in place
to a (column, sign)'s dense bin-major table over every group, capped at
:data:`DENSE_CELLS` (bin, group) cells, the bins outside in a sparse tail — then each
partition's tables shuffled by group and merged exactly (int64 ``Math.addExact``: an
overflow fails the run, never wraps) into at most :data:`MERGE_BINS` dense bins a (group,
column, sign) and a sparse tail (docs/results.md §5.3b, s36). Only the merged cells go to
Python (:func:`merged_cells`: one row per (group, column) with values), where
:func:`~dprect.engines.spark.statistics.jvm_blobs` writes them as the pass's own partial
blobs; the merge, the blocks and the draws then run as they do after ``mapInArrow``. The
cells are the pass's :func:`~dprect.engines.spark.statistics.column_lists`, cell for cell
(tests/spark/test_jvm_bins.py; benchmarks/aggregate_jvm_side.py ``--check``), so a seed
gives the same release on either route.

Row rules, the pass's: a value is read as float64 (a long rounded to nearest, a float
exactly, a boolean as 1.0 or 0.0); a null, NaN or ±inf is left out of its column only; a
row whose group is null or not listed is dropped; a group column of an integer type is
compared by its exact integers, another numeric one as float64 with −0.0 as 0.0 (a float
widened exactly: :func:`group_keys`). Columns or groups of other types (decimal, string)
take the ``mapInArrow`` pass (:func:`readable`), decided from the schema alone
(:func:`~dprect.engines.spark.statistics.jvm_route`).

**Build** (``make setup``'s ``bins`` target, or ``python -m dprect.engines.spark.jvm_bins``):
``javac --release 17`` against the installed pyspark's ``jars/*`` into
``.jars/spark-<major.minor>/dprect-bins-<VERSION>.jar`` (:func:`build_jar`); the class
uses Spark's and Scala's Java APIs only, so no Maven. No ``javac``: a warning, and every
run takes the ``mapInArrow`` pass.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dprect.engines.row_kernels import exact_integer
from dprect.engines.spark.session import BINS_CLASS, BINS_VERSION, bins_jar

#: the kernel's version (BinsAggregator.VERSION must agree; the jar's name carries it) and
#: its class in the JVM: the session's, which loads and checks them
VERSION = BINS_VERSION
CLASS = BINS_CLASS
#: the kernel's source, shipped as package data
SOURCE = Path(__file__).resolve().parent / "jvm" / "BinsAggregator.java"
#: a map-side (column, sign) table's most (bin, group) cells: max(1, this / groups) bins
#: (131 at 1,000 groups, ~4 MB with a variance's four words; past it, the sparse tail)
DENSE_CELLS = 1 << 17
#: a merged (group, column, sign)'s most dense bins (past them, the group's sparse tail)
MERGE_BINS = 128
#: the most public groups and columns the JVM count takes in one run, so that its memory
#: is bounded whatever the values: a map-side (column, sign) table holds at most
#: DENSE_CELLS (bin, group) cells (4 words each with a variance's squares), the merge side
#: at most MERGE_BINS dense bins a (group, column, sign) — at MAX_COLUMNS × MAX_GROUPS
#: about 0.5 GB a running partition and 0.5 GB merged, the shape measured (64 columns ×
#: 1,000 groups × 10^7 rows, docs/results.md §5.3b). Past MAX_GROUPS = DENSE_CELLS /
#: MERGE_BINS (1,024) a group gets fewer than MERGE_BINS dense bins and the hashed tails,
#: whose memory grows with the distinct (group, bin) cells, take most values: at 10^6
#: groups × 8 columns × 10^7 rows the session's 3 GB heap ran out (s37). Such runs take the
#: ``mapInArrow`` pass, whose memory is bounded by its blocks.
MAX_GROUPS = DENSE_CELLS // MERGE_BINS
MAX_COLUMNS = 64
#: the Spark types whose values the JVM count reads (the others: the ``mapInArrow`` pass)
READABLE = frozenset({"double", "float", "bigint", "int", "smallint", "tinyint", "boolean"})


def build_jar(out: Path) -> Path:
    """:data:`SOURCE` compiled with ``javac --release 17`` against pyspark's jars into
    ``out`` (again when the source is newer); a :class:`FileNotFoundError` without
    ``javac``."""
    import pyspark

    if out.exists() and out.stat().st_mtime >= SOURCE.stat().st_mtime:
        return out
    javac = shutil.which("javac")
    if javac is None:
        raise FileNotFoundError("no javac on PATH")
    out.parent.mkdir(parents=True, exist_ok=True)
    jars = Path(pyspark.__file__).parent / "jars"
    with tempfile.TemporaryDirectory() as classes:
        subprocess.run([javac, "-nowarn", "--release", "17", "-cp", f"{jars}/*", "-d",
                        classes, str(SOURCE)], check=True)
        tmp = out.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w") as z:
            for f in sorted(Path(classes).rglob("*.class")):
                z.write(f, f.relative_to(classes).as_posix())
        tmp.replace(out)
    return out


def takes(groups: int, columns: int) -> bool:
    """Whether the JVM count takes a run of ``groups`` public groups and ``columns``
    columns to count (at most :data:`MAX_GROUPS` and :data:`MAX_COLUMNS`) — public: the
    public list's length and the spec."""
    return groups <= MAX_GROUPS and columns <= MAX_COLUMNS


def readable(types: Sequence[str], group_type: str | None) -> bool:
    """Whether the JVM count reads these columns' Spark types (``simpleString``) and the
    group column's (None: ungrouped) — public: the schema only."""
    return all(t in READABLE for t in types) and (group_type is None or group_type in READABLE)


def group_keys(values: Sequence[Any], kind: str, integral: bool = False) -> list[int] | None:
    """The listed group values (:func:`~dprect.engines.bounds_input.resolve_groups`'
    ints, floats or booleans) as the JVM's keys (BinsAggregator.groupKey): a boolean's 1
    or 0, an integer's own value for a column of an integer type (``integral``: compared
    exactly), another number's float64 bits after adding 0.0 (−0.0 as 0.0; a float
    column's values already rounded to float32 by the list's resolution). None when a
    listed integer lies outside the long range (no key stands for it: the run takes the
    ``mapInArrow`` pass) — public: the list and the schema only."""
    if kind == "boolean":
        return [1 if v else 0 for v in values]
    if integral:
        keys = [exact_integer(v) for v in values]
        if any(k is None or not -(1 << 63) <= k < 1 << 63 for k in keys):
            return None
        return [int(k) for k in keys]  # type: ignore[arg-type]
    return [struct.unpack("<q", struct.pack("<d", float(v) + 0.0))[0] for v in values]


def merged_cells(df: Any, group_by: str | None, columns: Sequence[str], keys: Sequence[int],
                 *, shift: int, zero_bin: int, drop: int, squares: bool, reducers: int) -> Any:
    """BinsAggregator.cells over ``df`` (the pass's input): a DataFrame, not yet run, of
    one row per (group, column) with values — ``g`` the group's index in ``keys``
    (:func:`group_keys`; ungrouped: 0), ``c`` the column's index in ``columns``, ``b``
    little-endian int64 rows (bin, count, Σ M[, Σ of M²'s high 30-bit word, of its low])
    in bin order — merged on ``reducers`` partitions."""
    from pyspark.sql import DataFrame

    spark = df.sparkSession
    gateway = spark.sparkContext._gateway
    names = gateway.new_array(gateway.jvm.java.lang.String, len(columns))
    for i, c in enumerate(columns):
        names[i] = c
    listed = gateway.new_array(gateway.jvm.long, len(keys))
    for i, k in enumerate(keys):
        listed[i] = k
    jdf = spark.sparkContext._jvm.dprect.spark.BinsAggregator.cells(
        df._jdf, group_by, names, listed, shift, zero_bin, drop, squares, reducers,
        DENSE_CELLS, MERGE_BINS)
    return DataFrame(jdf, spark)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dprect.engines.spark.jvm_bins``: build the jar into the session's jar
    cache (:func:`~dprect.engines.spark.session.bins_jar`); without ``javac`` a warning
    (exit 0: every run then takes the ``mapInArrow`` pass)."""
    target = bins_jar(existing=False)
    assert target is not None  # existing=False: the path, there or not
    try:
        print(build_jar(target))
    except FileNotFoundError:
        print("warning: no javac on PATH: the JVM bin count is not built (describe's bins "
              "are counted by the mapInArrow pass)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
