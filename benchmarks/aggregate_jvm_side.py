"""Benchmark: the JVM's side of ``dprect aggregate --engine spark``'s one pass, against a
plain ``groupBy(g).agg(count, sum, min, max)`` of the same columns, in the same run and
session (issue #41; docs/results.md §5.3b).

    python benchmarks/aggregate_jvm_side.py [--rows 2000000] [--columns 64] [--groups 1000]
                                            [--pairs 2] [--runs plain,count,pass,merged]

Each run's CPU seconds are split between the session's JVM itself (its own user and system
time: the Parquet read, the rows made for ``mapInArrow`` and written as Arrow, the socket,
the shuffle, the tasks) and its Python workers (the JVM's subtree less the JVM: the
benchmarks' daemon, spark_daemon.py, reaps its workers so their CPU stays counted;
:mod:`spark_bench`). The runs, alternated pair by pair after a warm-up pair:

* ``plain``: the baseline, collected (spark_bench's :meth:`Bench.plain`);
* ``read``: the pass's input read and written to Spark's ``noop`` sink (the Parquet pages
  decoded into Spark's column batches; no Python);
* ``count``: a reference ``mapInArrow`` over the pass's input — the same columns selected
  and coalesced as :func:`~dprect.engines.spark.statistics.counting_pass` does — whose
  Python side only counts the rows: what the JVM spends to hand the rows over, with no
  kernel;
* ``pass``: the pass's ``mapInArrow`` (:func:`~dprect.engines.spark.statistics.partial_bins`
  with the executor route's blocks) written to Spark's ``noop`` sink, no merge;
* ``merged``: the whole pass as the executor route runs it (the pass, the shuffle of the
  partial blobs and each block's merge, ``counting_pass(..., blocks=...)``) to ``noop``;
* ``stacked``: no Python — the columns stacked into (group, column, value) rows and counted
  per (group, column) by Spark SQL: what one row per value costs the JVM's aggregation;
* ``sqlbins``: no Python — the same stacked rows counted and their truncated significands
  summed per (group, column, search bin) by Spark SQL (:func:`sql_bins`): the pass's
  sufficient statistics counted in the JVM before any hand-over, as far as Spark SQL's
  built-in functions can (a value's IEEE bits are not one of them);
* ``sqlmath``: the same bins and significands computed but summed per (group, column) only:
  the bins' arithmetic without the aggregation over (group, column, bin);
* ``jvmbins``: no Python — the pass's sufficient statistics (per (group, column, search
  bin): the rows, the sum of the truncated significands and, when the statistics hold a
  variance, of their squares' two 30-bit words) counted by a native JVM aggregate,
  dprect/engines/spark/jvm/BinsAggregator.java (the product's jar, built when missing,
  :func:`bins_jar`): one hash lookup a row (its group), the rows buffered 2^14 at a time
  as columns, then column by column each value's IEEE bits' bin and significand added in
  place in that column's dense bin-major table over every group (one per sign, as
  describe_jit's numba kernel does), capped at ``--dense-cells`` (bin, group) cells — the
  first chunk's densest window of bins, grown only within it — with the bins outside kept
  in a sparse tail (a hash of (group, bin)); each partition's tables and tails shuffled by
  group as sparse blobs and merged exactly into per-(group, column, sign) tables of at
  most ``--merge-bins`` dense bins and a sparse tail: memory bounded whatever the values'
  spread. ``--check`` first compares its every count and sum (capped as given and at 2
  bins, and jvmrows') with the pass's own per-chunk lists
  (:func:`~dprect.engines.spark.statistics.column_lists`) on two small tables, one with
  tails over 1e-300 … 1e300, zeros, subnormals, ±inf, NaN and nulls (:func:`wide_table`);
* ``jvmrows``: the same a row at a time — each value added to its own (group, column,
  sign)'s table as the row is read (every column's tables touched a row);
* ``jvmread``, ``jvmpartial``: jvmbins' stages — the same rows read in the JVM (every
  value's bits touched, no tables), and each partition's tables counted and written as
  blobs (no shuffle, no merge).

A run may carry session settings after ``@`` (runtime SQL settings set before the run and
restored after it), e.g. ``count@spark.sql.execution.arrow.maxRecordsPerBatch=65536``.
Nothing is asserted; quote the load with the figures (``--pairs 0``: the warm-up round
alone, kept in the output's ``warm_up``). The result is written to
``benchmarks/output/aggregate_jvm_side-{rows}x{columns}x{groups}{label}.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_bench import (
    OUTPUT,
    ensure_data,
    open_bench,
    own_cpu,
    peak_memory,
    spark_arguments,
    tree_cpu,
)

from dprect.engines.spark.jvm_bins import DENSE_CELLS, MERGE_BINS, group_keys

#: every statistic of one run (aggregate_spark.py's ALL)
ALL = "bounds,count,sum,mean,variance,std,p1,p5,p10,p25,median,p75,p90,p95,p99"


def count_rows(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body of the reference: the partition's rows counted, nothing else."""
    import pyarrow as pa

    n = 0
    for b in batches:
        n += b.num_rows
    yield pa.RecordBatch.from_arrays([pa.array([n], pa.int64())], names=["n"])


def stacked_values(df: Any, columns: list[str]) -> Any:
    """(g, c, x): one row per (row, column) — ``stack`` over the selected columns."""
    pairs = ", ".join(f"{i}, `{c}`" for i, c in enumerate(columns))
    return df.selectExpr("g", f"stack({len(columns)}, {pairs}) as (c, x)")


def sql_bins(df: Any, columns: list[str], search_bits: int, *, by_bin: bool = True) -> Any:
    """Per (g, c, bin): the rows and the sum of their 20-bit truncated significands, the bin
    a value's binade and its ``search_bits`` leading mantissa bits, mirrored for negatives,
    0 for ±0 — from Spark SQL's own functions: e = floor(log2|x|) corrected to the exact
    binade (2^e ≤ |x| < 2^(e+1); powers of two and the divisions by them are exact for
    normal doubles), then the bits read from |x| / 2^e ∈ [1, 2). ``by_bin`` False: the
    same bins and significands computed but only summed per (g, c) — the arithmetic's cost
    without the larger aggregation's keys."""
    from pyspark.sql import functions as sf

    x = sf.col("x")
    a = sf.abs(x)
    two = sf.lit(2.0)
    e0 = sf.floor(sf.log2(a))
    e = (sf.when(sf.pow(two, e0) > a, e0 - 1)
         .when(sf.pow(two, e0 + 1) <= a, e0 + 1).otherwise(e0))
    frac = a / sf.pow(two, e)
    bucket = (e + 1100) * (1 << search_bits) + sf.floor((frac - 1) * (1 << search_bits))
    b = sf.when(a == 0, sf.lit(0)).otherwise(bucket * sf.signum(x)).cast("long")
    significand = sf.floor(frac * (1 << 20)).cast("long")
    cells = stacked_values(df, columns).select("g", "c", b.alias("b"), significand.alias("s"))
    if not by_bin:
        return cells.groupBy("g", "c").agg(sf.sum("b"), sf.sum("s"))
    return cells.groupBy("g", "c", "b").agg(sf.count(sf.lit(1)), sf.sum("s"))


def bins_jar() -> Path:
    """The product's jar of dprect/engines/spark/jvm/BinsAggregator.java
    (:func:`dprect.engines.spark.session.bins_jar`), built with ``javac`` against
    pyspark's jars when missing or older than the source
    (:func:`dprect.engines.spark.jvm_bins.build_jar`, ``make setup``'s ``bins``)."""
    from dprect.engines.spark.jvm_bins import build_jar
    from dprect.engines.spark.session import bins_jar as product_jar

    target = product_jar(existing=False)
    assert target is not None
    return build_jar(target)


def jvm_bins(df: Any, columns: list[str], groups: list[str], *, squares: bool,
             reducers: int, collect: bool, part: str = "all", cells: int | None = None,
             merge_bins: int | None = None) -> Any:
    """BinsAggregator.run over ``df`` (the pass's input: the columns and an integer group
    column ``g``): with ``collect``, an int64 array of rows (group index, column, bin,
    count, sum of M[, of M²'s high word, of its low word]) in (group, column, bin) order;
    without, the number of non-empty (group, column, bin) cells; ``part`` "read" or
    "partial": only the rows read, or only each partition's tables and blobs made
    (BinsAggregator.run's stages: ``jvmread``, ``jvmpartial``); ``cells`` and
    ``merge_bins`` cap the dense tables (None: the product's :data:`DENSE_CELLS`,
    :data:`MERGE_BINS`: the bins past them kept sparse, so the memory is bounded whatever
    the tails)."""
    import numpy as np

    from dprect.core.describe_stats import DROPPED_BITS
    from dprect.core.statistic import SEARCH_GRID

    gw = df.sparkSession.sparkContext._gateway
    jvm = df.sparkSession.sparkContext._jvm
    names = gw.new_array(jvm.java.lang.String, len(columns))
    for i, c in enumerate(columns):
        names[i] = c
    values = gw.new_array(gw.jvm.long, len(groups))
    for i, key in enumerate(group_keys([float(g) for g in groups], "numeric")):
        values[i] = key
    raw = jvm.dprect.spark.BinsAggregator.run(
        df._jdf, "g", names, values, SEARCH_GRID.shift, SEARCH_GRID.size // 2, DROPPED_BITS,
        squares, reducers, collect, part, DENSE_CELLS if cells is None else cells,
        MERGE_BINS if merge_bins is None else merge_bins)
    out = np.frombuffer(bytes(raw), dtype="<i8")
    return out.reshape(-1, 7 if squares else 5) if collect else int(out[0])


def wide_table(rows: int = 20_000, groups: int = 20) -> Path:
    """A check table whose tails are wide (benchmarks/output/jvm-wide-{rows}x{groups}
    .parquet, written once): ``g`` int64 over the groups plus a group not listed (−1: its
    rows dropped) and nulls; ``c0`` log-uniform magnitudes over 1e-300 … 1e300 of either
    sign; ``c1`` the edge values — ±0.0, subnormals of either sign (random mantissas), the
    least and greatest normal doubles, ±inf, NaN and nulls (the non-finite and the nulls
    skipped, as the pass skips them) — among normal values; ``c2`` a normal column with
    one value in a hundred at ±1e±200; ``c3`` a negative exponential's near-zero tail."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = OUTPUT / f"jvm-wide-{rows}x{groups}.parquet"
    if path.exists():
        return path
    gen = np.random.default_rng(4136)
    g = gen.integers(0, groups, rows)
    g[gen.random(rows) < 0.02] = -1
    g_null = gen.random(rows) < 0.01
    sign = np.where(gen.random(rows) < 0.5, -1.0, 1.0)
    c0 = sign * 10.0 ** gen.uniform(-300, 300, rows)
    edges = np.array([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308,
                      -2.2250738585072014e-308, 1.7976931348623157e308,
                      -1.7976931348623157e308, np.inf, -np.inf, np.nan])
    subnormal = (gen.integers(1, 1 << 52, rows, dtype=np.int64).view(np.float64)
                 * sign)
    pick = gen.random(rows)
    c1 = np.where(pick < 0.3, gen.normal(0.0, 3.0, rows),
                  np.where(pick < 0.6, subnormal, edges[gen.integers(0, len(edges), rows)]))
    c1_null = gen.random(rows) < 0.05
    c2 = gen.normal(50.0, 10.0, rows)
    out = gen.random(rows) < 0.01
    c2[out] = sign[out] * 10.0 ** gen.choice([-200.0, 200.0], int(out.sum()))
    c3 = -gen.exponential(1e-3, rows)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    table = pa.table({"g": pa.array(g, pa.int64(), mask=g_null), "c0": pa.array(c0),
                      "c1": pa.array(c1, mask=c1_null), "c2": pa.array(c2),
                      "c3": pa.array(c3)})
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp)
    tmp.rename(path)
    return path


def expected_bins(path: Path, names: list[str], groups: int) -> Any:
    """The pass's own lists (:func:`~dprect.engines.spark.statistics.column_lists` over
    each whole column's finite values of the listed groups: a chunk's lists, which the pass
    merges by adding) as :func:`jvm_bins`' collected rows, in (group, column, bin) order."""
    import numpy as np
    import pyarrow.parquet as pq

    from dprect.core.statistic import SEARCH_GRID
    from dprect.engines.spark import statistics as st

    table = pq.read_table(path)
    gcol = table.column("g")
    group = gcol.to_numpy(zero_copy_only=False)
    listed = ~np.asarray(gcol.is_null()) & (np.nan_to_num(group, nan=-1) >= 0) & \
        (np.nan_to_num(group, nan=-1) < groups)
    want = []
    for j, name in enumerate(names):
        col = table.column(name)
        x = col.to_numpy(zero_copy_only=False).astype(np.float64)
        use = listed & ~np.asarray(col.is_null()) & np.isfinite(x)
        gi = group[use].astype(np.int32)
        lists = [st.column_lists(gi, x[use], groups, SEARCH_GRID, True, word=w)
                 for w in (0, 1, 2)]
        g, b, n, s0 = lists[0]
        for other in lists[1:]:
            assert (other[0] == g).all() and (other[1] == b).all() and (other[2] == n).all()
        want.append(np.column_stack([g, np.full(len(g), j), b, n, s0, lists[1][3],
                                     lists[2][3]]).astype(np.int64))
    expected = np.concatenate(want)
    return expected[np.lexsort((expected[:, 2], expected[:, 1], expected[:, 0]))]


def check_bins(spark: Any, reducers: int, rows: int = 20_000, columns: int = 4,
               groups: int = 20) -> int:
    """Every (group, column, bin)'s count and sums of :func:`jvm_bins` equal to those of
    the pass's own lists (:func:`expected_bins`) on two small tables — describe_spark.py's
    and :func:`wide_table`'s (tails over 1e-300 … 1e300, zeros, subnormals, ±inf, NaN,
    nulls, unlisted groups) — each counted column by column with the default caps and with
    caps of 2 bins (nearly every value in the sparse tails, map and merge side), and a row
    at a time (uncapped); raises on the first difference; the number of cells compared."""
    public = [str(i) for i in range(groups)]
    names = [f"c{j}" for j in range(columns)]
    compared = 0
    for path in (ensure_data(rows, columns, groups), wide_table(rows, groups)):
        expected = expected_bins(path, names, groups)
        source = spark.read.parquet(str(path)).repartition(3)
        variants = {"jvmbins": {}, "jvmbins capped at 2 bins": {"cells": 2 * groups,
                                                                "merge_bins": 2},
                    "jvmrows": {"part": "rowsall"}}
        for label, options in variants.items():
            cells = jvm_bins(source, names, public, squares=True, reducers=reducers,
                             collect=True, **options)
            if cells.shape != expected.shape or not (cells == expected).all():
                raise SystemExit(f"{label} differs from the pass's lists on {path.name}: "
                                 f"{cells.shape} cells against {expected.shape}")
            compared += len(cells)
        print(f"check: {path.name}: {len(expected)} cells equal in each of "
              f"{', '.join(variants)}", flush=True)
    return compared


def parse_runs(text: str) -> list[tuple[str, str, dict[str, str]]]:
    """``name[@key=value[@key=value…]]`` items: (label, name, settings)."""
    out = []
    for item in text.split(","):
        name, *pairs = item.split("@")
        settings = dict(p.split("=", 1) for p in pairs)
        out.append((item, name, settings))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    spark_arguments(ap, columns=64, groups=1000)
    ap.set_defaults(rows=2_000_000)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--runs", default="plain,count,pass,merged")
    ap.add_argument("--statistics", default=ALL)
    ap.add_argument("--label", default="")
    ap.add_argument("--java-options", default="",
                    help="more options for the session's JVM (after dprect's own)")
    ap.add_argument("--check", action="store_true",
                    help="compare jvmbins' every count and sum with the pass's first")
    ap.add_argument("--dense-cells", type=int, default=DENSE_CELLS,
                    help="jvmbins: a (column, sign) table's most (bin, group) cells")
    ap.add_argument("--merge-bins", type=int, default=MERGE_BINS,
                    help="jvmbins: a merged (group, column, sign)'s most dense bins")
    args = ap.parse_args(argv)

    from dprect.app.aggregate_flow import aggregate_settings
    from dprect.core.mixed import repeated
    from dprect.engines.spark import executor_draws as ed
    from dprect.engines.spark import statistics as st

    extra: dict[str, str] = {}
    if args.java_options:
        from dprect.engines.spark.session import JIT_OPTION

        extra = {"spark.driver.extraJavaOptions": f"{JIT_OPTION} {args.java_options}",
                 "spark.executor.extraJavaOptions": f"{JIT_OPTION} {args.java_options}"}
    if args.check or "jvmbins" in args.runs:
        jar = str(bins_jar())
        extra.update({"spark.jars": jar, "spark.driver.extraClassPath": jar})
    bench = open_bench(args, "dprect-bench-jvm-side", extra)
    if args.check:
        print(f"check: jvmbins equal to the pass's lists in all "
              f"{check_bins(bench.spark, bench.cores)} cells compared", flush=True)
    spark, df, columns = bench.spark, bench.df, bench.columns
    groups = [str(i) for i in range(args.groups)]
    settings = aggregate_settings({
        "input": str(bench.path), "columns": columns, "statistics": args.statistics,
        "group_by": "g", "groups": groups, "epsilon": args.epsilon,
        "output": os.path.join(tempfile.mkdtemp(), "unused.json")})
    spec = settings.spec
    source = repeated(columns, spec)
    kernel, _ = st.virtual_columns(spec)
    starts = ed.block_starts(args.groups, len(kernel.columns), bench.cores)

    def plain() -> None:
        bench.plain()

    def count() -> None:
        rows = st.pass_input(df, source, "g").mapInArrow(count_rows, "n bigint").collect()
        assert sum(r[0] for r in rows) == args.rows

    def read() -> None:
        st.pass_input(df, source, "g").write.format("noop").mode("overwrite").save()

    def the_pass() -> None:
        partial, _, _ = st.partial_pass(df, source, spec, group_by="g", groups=groups,
                                        blocks=starts)
        partial.write.format("noop").mode("overwrite").save()

    def merged() -> None:
        out, _, _ = st.counting_pass(df, source, spec, group_by="g", groups=groups,
                                     blocks=starts)
        out.write.format("noop").mode("overwrite").save()

    def stacked() -> None:
        from pyspark.sql import functions as sf

        (stacked_values(df, columns).groupBy("g", "c").agg(sf.count(sf.lit(1)))
         .write.format("noop").mode("overwrite").save())

    def sqlbins() -> None:
        from dprect.core.tail_bounds import SEARCH_BITS

        sql_bins(df, columns, SEARCH_BITS).write.format("noop").mode("overwrite").save()

    def sqlmath() -> None:
        from dprect.core.tail_bounds import SEARCH_BITS

        (sql_bins(df, columns, SEARCH_BITS, by_bin=False)
         .write.format("noop").mode("overwrite").save())

    squares = any(s in args.statistics.split(",") for s in ("variance", "std"))

    def jvm_stage(part: str) -> Callable[[], None]:
        """A run of BinsAggregator's ``part`` (:func:`jvm_bins`) over the pass's input."""
        def run() -> None:
            jvm_bins(st.pass_input(df, columns, "g"), columns, groups, squares=squares,
                     reducers=bench.cores, collect=False, part=part,
                     cells=args.dense_cells, merge_bins=args.merge_bins)
        return run

    jvmbins, jvmrows = jvm_stage("all"), jvm_stage("rowsall")
    jvmread, jvmpartial = jvm_stage("read"), jvm_stage("partial")

    bodies: dict[str, Callable[[], None]] = {"plain": plain, "read": read, "count": count,
                                             "pass": the_pass, "merged": merged,
                                             "stacked": stacked, "sqlbins": sqlbins,
                                             "sqlmath": sqlmath, "jvmbins": jvmbins,
                                             "jvmread": jvmread, "jvmpartial": jvmpartial,
                                             "jvmrows": jvmrows}
    runs = parse_runs(args.runs)
    for _, name, _ in runs:
        if name not in bodies:
            raise SystemExit(f"unknown run {name!r}: {', '.join(bodies)}")
    jvm = bench.jvm_pid
    times: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in runs}
    warm_up: dict[str, dict[str, float]] = {}
    load = [os.getloadavg()]
    for r in range(args.pairs + 1):
        for label, name, conf in (runs if r % 2 == 0 else runs[::-1]):
            old = {k: spark.conf.get(k, None) for k in conf}
            for k, v in conf.items():
                spark.conf.set(k, v)
            try:
                t, j0, c0 = time.perf_counter(), own_cpu(jvm), tree_cpu(jvm)
                d0 = time.process_time()
                bodies[name]()
                wall = time.perf_counter() - t
                j1, c1 = own_cpu(jvm), tree_cpu(jvm)
                d1 = time.process_time()
            finally:
                for k, v in old.items():
                    if v is None:
                        spark.conf.unset(k)
                    else:
                        spark.conf.set(k, v)
            got = {"wall": wall, "jvm": j1 - j0, "workers": (c1 - c0) - (j1 - j0),
                   "driver": d1 - d0}
            if r:
                times[label].append(got)
            else:
                warm_up[label] = got
            print(f"{'warm-up' if not r else f'pair {r}'} {label}: wall {wall:.1f} s, CPU "
                  f"JVM {got['jvm']:.1f} s, workers {got['workers']:.1f} s, driver "
                  f"{got['driver']:.1f} s; load {os.getloadavg()[0]:.1f}", flush=True)
        load.append(os.getloadavg())
    med = {label: {k: statistics.median(x[k] for x in v) for k in v[0]}
           for label, v in times.items() if v}
    out = {"rows": args.rows, "java_options": args.java_options, "columns": args.columns,
           "dense_cells": args.dense_cells, "merge_bins": args.merge_bins,
           "driver_memory": args.driver_memory,
           "groups": args.groups,
           "statistics": args.statistics, "master": args.master, "pairs": args.pairs,
           "warm_up": warm_up, "runs": times, "median": med, "load": load,
           "peak_rss_mb": peak_memory(spark)}
    OUTPUT.mkdir(parents=True, exist_ok=True)
    name = f"aggregate_jvm_side-{args.rows}x{args.columns}x{args.groups}{args.label}.json"
    (OUTPUT / name).write_text(json.dumps(out, indent=2) + "\n")
    for label, m in med.items():
        print(f"median {label}: wall {m['wall']:.1f} s, CPU JVM {m['jvm']:.1f} s, workers "
              f"{m['workers']:.1f} s, driver {m['driver']:.1f} s")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
