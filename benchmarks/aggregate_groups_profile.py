"""Profile: where a grouped aggregate of many public groups spends its CPU on Spark, drawn
in the executors (issue #42; docs/results.md §5.3c) — the driver's part by stage, the
session's split between its JVM and its Python workers.

    python benchmarks/aggregate_groups_profile.py [--rows 1000000] [--groups 100000]
                                                  [--columns 8] [--cprofile FILE]
                                                  [--event-log DIR] [--jfr FILE]
                                                  [--java-options OPTS] [--conf K=V]

One run of ``aggregate_spark_groups.py``'s ``aggregate`` (the describe preset from OS
entropy, end to end: a fresh budget ledger, the JSON output and a Parquet ``--table``) in
a local session, with:

* the driver's CPU (``time.process_time``: every thread of this process) cut into
  stages by timers around the functions that make them (:data:`STAGES`), each stage's
  time EXCLUSIVE of the stages it calls (a generator's time is taken at each ``next``):
  the released blocks' fetch and unpickling, the record rows, the spool's writes and
  reads, the JSON text, the ledger's stored copy (gzip and hash), the JSON output's copy
  of the kept text, the table's rows, the Parquet feed, the summary; the rest is
  "other" (the session's client, the pools, the plan, ...);
* the session's CPU (``/proc``): the JVM's own threads (driver, scheduler and the
  executors' tasks on a local master) and its Python workers (the pass, the merge and
  the draws; with ``benchmarks/spark_daemon.py`` every ended worker is counted);
* the JVM's CPU by thread kind (:func:`thread_split`, ``/proc/<jvm>/task``): Spark's
  task threads (the Arrow hand-over to and from the Python workers, the shuffles, the
  cache) against the JIT's compiler threads, the GC's threads and the rest — on a local
  master most of the JVM's CPU is NOT its tasks' (docs/results.md §5.3c, s34);
* with ``--event-log DIR``, per Spark stage (:func:`spark_event_log.timeline`): its
  operators, tasks, run and task-thread CPU seconds, GC time, shuffle MB written and
  read, result MB;
* with ``--jfr FILE``, Java Flight Recorder over the run (``jcmd JFR.start``, the JDK's
  profile settings with every compilation kept: :func:`jfr_settings`): the execution
  samples by thread and by top method, the compile and GC totals (:func:`jfr_summary`),
  and every JIT compilation by kind (:func:`compilations`: the classes a query generates,
  janino and Spark's code generator, Spark's Arrow and Python paths, ...).

``--java-options`` and ``--conf KEY=VALUE`` start the session with other JVM options (the
JIT flag kept) or Spark settings: a change's pair (e.g. ``--java-options=-XX:+UseParallelGC``).
``--own-whole-stage false`` plans and runs the route's own queries without whole-stage
code generation (:func:`own_whole_stage`; s36's pair, not adopted). ``--plain-first`` runs
the plain groupBy once before the profiled run, in the same JVM, as
``aggregate_spark_groups.py``'s first round does; ``--again N`` runs the aggregate N more
times after it in the same JVM (the JIT warm), each run's CPU split reported.

Divide by the cells (groups × columns) for a figure a cell. Nothing is asserted; quote
the load (printed) with the figures. ``--cprofile FILE`` also runs the driver under
cProfile (slower: the stages' ratios, not their times) and dumps the stats there.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from spark_bench import OUTPUT, open_bench, spark_arguments, tree_cpu  # noqa: E402

#: (stage, module, attribute path): the driver's functions timed (exclusive)
STAGES: list[tuple[str, str, str]] = [
    ("fetch + unpickle released blocks", "dprect.engines.spark.executor_draws", "_in_order"),
    ("fetch + unpickle released blocks", "dprect.engines.spark.executor_draws", "_arriving"),
    ("phase-1 pools collected", "dprect.engines.spark.executor_draws", "_collect"),
    ("pools joined, anchors", "dprect.engines.spark.executor_draws", "column_centres"),
    ("cells of a block", "dprect.engines.spark.executor_draws", "released_rows"),
    ("spool append", "dprect.release.row_spool", "RowSpool.append"),
    ("spool read (LZ4, JSON parse)", "dprect.release.row_spool", "RowSpool.blocks"),
    ("spool texts read (LZ4)", "dprect.release.row_spool", "RowSpool.item_texts"),
    ("JSON text encoded", "dprect.release.record_text", "record_chunks"),
    ("ledger stored copy (gzip, sha256)", "dprect.release.ledger.reservations", "store"),
    ("table rows", "dprect.release.row_pass", "table_blocks"),
    ("Parquet feed", "dprect.release.aggregate_table", "ParquetFeed.__call__"),
    ("Parquet close", "dprect.release.aggregate_table", "ParquetFeed.close"),
    ("summary overview", "dprect.release.aggregate_record", "Overview.take"),
]


class Timers:
    """Exclusive CPU seconds per stage: a stack of running stages, each nested stage's
    time taken off the stage it runs in."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}
        self.stack: list[list[Any]] = []  # [stage, started, nested]

    def enter(self, stage: str) -> None:
        self.stack.append([stage, time.process_time(), 0.0])

    def leave(self) -> None:
        stage, started, nested = self.stack.pop()
        took = time.process_time() - started
        self.spent[stage] = self.spent.get(stage, 0.0) + took - nested
        if self.stack:
            self.stack[-1][2] += took

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        import inspect

        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen(*args: Any, **kwargs: Any) -> Iterator[Any]:
                self.enter(stage)
                try:
                    it = fn(*args, **kwargs)
                finally:
                    self.leave()
                while True:
                    self.enter(stage)
                    try:
                        item = next(it)
                    except StopIteration:
                        return
                    finally:
                        self.leave()
                    yield item
            return gen

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            self.enter(stage)
            try:
                return fn(*args, **kwargs)
            finally:
                self.leave()
        return run


def install(timers: Timers) -> None:
    import importlib

    for stage, module, path in STAGES:
        owner: Any = importlib.import_module(module)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        if not hasattr(owner, name):  # another version of the code (a before/after pair)
            continue
        wrapped = timers.wrap(stage, getattr(owner, name))
        if isinstance(vars(owner).get(name), staticmethod):
            wrapped = staticmethod(wrapped)
        setattr(owner, name, wrapped)


def numba_cache_writes(since: float) -> int:
    """How many of numba's cache files (``*.nbi`` index, ``*.nbc`` code) of dprect's
    compiled kernels were written at or after ``since`` (epoch seconds): 0 on a warm
    cache; more means the run's Python workers compiled kernels in their first tasks
    (a new checkout, or a kernel's source changed: numba keys its cache on the source
    file's path and time stamp) — about 25 CPU-s a worker a phase's kernels, in the
    first tasks of each phase (docs/results.md §5.3c, s34-waves), so such a run's
    first wave is not a figure to compare. ``NUMBA_CACHE_DIR`` is looked in where set."""
    root = Path(os.environ.get("NUMBA_CACHE_DIR") or REPO / "dprect")
    return sum(1 for pattern in ("*.nbi", "*.nbc") for f in root.rglob(pattern)
               if f.stat().st_mtime >= since)


def jvm_split(jvm_pid: int) -> tuple[float, float]:
    """(the JVM's own CPU seconds, its Python workers' and daemon's)."""
    fields = Path(f"/proc/{jvm_pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    own = (int(fields[11]) + int(fields[12])) / tick
    return own, tree_cpu(jvm_pid) - own


def jvm_threads(jvm_pid: int) -> dict[int, tuple[str, float]]:
    """Each live thread of the JVM: (its name as the kernel keeps it, 15 characters, with
    digits folded to ``#`` so a pool's threads count together; its CPU seconds)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[str, float]] = {}
    for entry in Path(f"/proc/{jvm_pid}/task").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        out[int(entry.name)] = (re.sub(r"\d+", "#", name).strip(),
                                (int(fields[11]) + int(fields[12])) / tick)
    return out


def thread_split(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]],
                 total: float) -> dict[str, float]:
    """The JVM's CPU seconds between two :func:`jvm_threads` readings by thread kind
    (Spark's task threads, "Executor task l"; the JIT's "C# CompilerThre"; the GC's "GC
    Thread#", "G# Conc#", "VM Thread"; Python's writer threads, ...), most first, and
    ``ended threads``: the JVM's CPU not in a thread alive at the end (a thread that
    ended in the run — each task's Python writer does — takes its CPU with it)."""
    split: dict[str, float] = {}
    for tid, (name, cpu) in after.items():
        used = cpu - before.get(tid, ("", 0.0))[1]
        if used > 0:
            split[name] = split.get(name, 0.0) + used
    split = dict(sorted(split.items(), key=lambda kv: -kv[1]))
    split["ended threads"] = total - sum(split.values())
    return split


def jfr_summary(recording: Path, top: int = 25) -> dict[str, Any]:
    """A Java Flight Recorder recording (``jcmd JFR.start settings=profile``) read back
    with the JDK's ``jfr`` tool: the execution samples (Java code running on a thread;
    the JVM's own GC and JIT threads are not sampled) by their top frame's method (self
    time) and by the first frame of a Spark, Arrow, Netty or JDK package (where the
    time goes, by library), the GC's pause and compile totals."""
    text = subprocess.run(["jfr", "print", "--events", "jdk.ExecutionSample",
                           "--stack-depth", "12", str(recording)], capture_output=True,
                          text=True, check=True).stdout
    self_time: collections.Counter[str] = collections.Counter()
    by_thread: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    samples = 0
    for event in text.split("jdk.ExecutionSample {")[1:]:
        thread = re.search(r'sampledThread = "([^"]*)"', event)
        frames = re.findall(r"^\s+([\w$.<>/]+)\(", event, re.M)
        if not frames:
            continue
        samples += 1
        by_thread[re.sub(r"\d+", "#", thread.group(1)) if thread else "?"] += 1
        self_time[frames[0]] += 1
        for f in dict.fromkeys(".".join(f.split(".")[:-1]) for f in frames):
            inclusive[f] += 1
    stats: dict[str, float] = {}
    for kind, field in (("jdk.GarbageCollection", "sumOfPauses"),
                        ("jdk.Compilation", "duration")):
        out = subprocess.run(["jfr", "print", "--events", kind, str(recording)],
                             capture_output=True, text=True, check=True).stdout
        total = 0.0
        for value, unit in re.findall(rf"{field} = ([\d.]+) (ms|s|us)", out):
            total += float(value) * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[unit]
        stats[f"{kind} {field} s"] = total
    return {"samples": samples, "compilations": compilations(recording),
            "by_thread": dict(by_thread.most_common(top)),
            "self": dict(self_time.most_common(top)),
            "inclusive_classes": dict(inclusive.most_common(top)), **stats}


#: a compiled method's kind by its class (first match): Spark's whole-stage and expression
#: code generated for a query (a new class each query, janino's), then by library
COMPILED_KINDS = [
    ("generated classes (a query's own)", r"GeneratedClass|SpecificUnsafeProjection|"
                                          r"SpecificPredicate|SpecificOrdering|"
                                          r"SpecificSafeProjection"),
    ("janino, Spark's codegen (the generator)", r"org\.codehaus|catalyst\.expressions\.codegen|"
                                                r"WholeStageCodegen|CodegenSupport"),
    ("spark sql arrow / python", r"org\.apache\.spark\.sql\.execution\.(arrow|python)|"
                                 r"org\.apache\.spark\.api\.python"),
    ("arrow", r"org\.apache\.arrow"),
    ("spark sql", r"org\.apache\.spark\.sql"),
    ("spark core (scheduler, shuffle, storage, rpc)", r"org\.apache\.spark"),
    ("scala", r"^scala\."),
    ("netty, py4j, parquet, other libraries", r"io\.netty|py4j|org\.apache\.parquet|"
                                              r"com\.|org\."),
    ("jdk", r"^(java|javax|jdk|sun)\."),
]

def jfr_settings(where: Path) -> Path:
    """The JDK's profile.jfc with every ``jdk.Compilation`` event kept, written to
    ``where``."""
    java = Path(subprocess.run(["readlink", "-f", subprocess.run(
        ["which", "java"], capture_output=True, text=True, check=True).stdout.strip()],
        capture_output=True, text=True, check=True).stdout.strip())
    text = (java.parent.parent / "lib" / "jfr" / "profile.jfc").read_text()
    text = re.sub(r'(<event name="jdk\.Compilation">\s*<setting name="enabled"[^<]*</setting>'
                  r'\s*<setting name="threshold"[^>]*>)[^<]*(</setting>)', r"\g<1>0 ms\g<2>",
                  text)
    where.write_text(text)
    return where


def compilations(recording: Path) -> dict[str, Any]:
    """Every JIT compilation of a recording (:func:`jfr_settings`) by :data:`COMPILED_KINDS`
    and by compiler: count and summed duration (the compile's wall time on its compiler
    thread), with the classes that took longest."""
    out = subprocess.run(["jfr", "print", "--events", "jdk.Compilation", str(recording)],
                         capture_output=True, text=True, check=True).stdout
    kinds: dict[str, list[float]] = {}
    compilers: dict[str, list[float]] = {}
    classes: collections.Counter[str] = collections.Counter()
    for event in out.split("jdk.Compilation {")[1:]:
        dur = re.search(r"duration = ([\d.]+) (ms|s|us|ns)", event)
        method = re.search(r"method = ([^\s(]+)", event)
        compiler = re.search(r'compiler = "?(\w+)', event)
        if not dur or not method:
            continue
        seconds = float(dur.group(1)) * {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[
            dur.group(2)]
        name = method.group(1)
        kind = next((k for k, pattern in COMPILED_KINDS if re.search(pattern, name)), "other")
        for into, key in ((kinds, kind), (compilers, compiler.group(1) if compiler else "?")):
            into.setdefault(key, [0, 0.0])
            into[key][0] += 1
            into[key][1] += seconds
        classes[re.sub(r"\d+", "#", name.rsplit(".", 1)[0])] += seconds
    return {"by_kind": {k: {"count": n, "seconds": t} for k, (n, t) in
                        sorted(kinds.items(), key=lambda kv: -kv[1][1])},
            "by_compiler": {k: {"count": n, "seconds": t} for k, (n, t) in compilers.items()},
            "top_classes_s": dict(classes.most_common(20))}


def own_whole_stage(value: str) -> None:
    """The route's own queries (everything
    :func:`~dprect.engines.spark.executor_draws.draw_in_executors` plans and runs) with
    ``spark.sql.codegen.wholeStage`` at ``value``, the session's setting put back after
    (unset stays unset), so the plain groupBy keeps its own: s36's experiment (a), whose
    pairs showed no change of the JVM's CPU beyond the run-to-run spread
    (docs/results.md §5.3c), kept here to pair again."""
    from dprect.engines.spark import grouped_route

    real = grouped_route.draw_in_executors
    key = "spark.sql.codegen.wholeStage"

    def with_setting(df: Any, *args: Any, **kwargs: Any) -> Any:
        conf = df.sparkSession.conf
        old = conf.get(key, None)
        conf.set(key, value)
        try:
            return real(df, *args, **kwargs)
        finally:
            if old is None:
                conf.unset(key)
            else:
                conf.set(key, old)

    grouped_route.draw_in_executors = with_setting  # type: ignore[assignment]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    spark_arguments(ap, columns=8, groups=100_000)
    ap.set_defaults(rows=1_000_000)
    ap.add_argument("--statistics", default="bounds,count,sum,mean")
    ap.add_argument("--cprofile", type=Path, default=None)
    ap.add_argument("--label", default="")
    ap.add_argument("--event-log", type=Path, default=None,
                    help="turn Spark's event log on in this (empty) folder and add the "
                         "run's job and stage timeline to the output (benchmark data only: "
                         "the log holds plans; removed once read)")
    ap.add_argument("--old-fetch", action="store_true",
                    help="draw the last phase whole, then fetch it a block a job (the "
                         "route before the waves, still a Spark Connect session's): to "
                         "compare the Python workers' per-task cost")
    ap.add_argument("--jfr", type=Path, default=None,
                    help="record the run in the JVM with Java Flight Recorder (jcmd "
                         "JFR.start settings=profile, stopped after the run) into this "
                         "file, and add its summary (jfr_summary) to the output")
    ap.add_argument("--java-options", default=None,
                    help="the session JVM's options (the JIT flag is kept), e.g. a GC")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting of the session (repeatable)")
    ap.add_argument("--own-whole-stage", choices=("true", "false"), default=None,
                    help="plan and run the route's own queries (the pass, the merge, the "
                         "phases, the waves: draw_in_executors) with "
                         "spark.sql.codegen.wholeStage at this value, the session's own "
                         "put back after (s36's experiment; default: the session's)")
    ap.add_argument("--again", type=int, default=0,
                    help="after the profiled run, run it this many times more in the same "
                         "JVM (its JIT warm): each run's CPU split in the output's 'again'")
    ap.add_argument("--plain-first", action="store_true",
                    help="run the plain groupBy (noop sink) once before the profiled run, "
                         "in the same JVM, as aggregate_spark_groups.py's first round does "
                         "(the JIT then has Spark's common paths compiled); its wall and "
                         "CPU are in the output")
    args = ap.parse_args(argv)
    if args.own_whole_stage is not None:
        own_whole_stage(args.own_whole_stage)
    if args.old_fetch:
        import dprect.engines.spark.executor_draws as executor_draws

        executor_draws.is_connect = lambda df: True  # type: ignore[assignment]

    import spark_event_log

    from dprect.app.aggregate_flow import aggregate_settings, run_aggregate_flow
    from dprect.app.spine import Reporter, silent
    from dprect.engines.spark.grouped_route import SparkGroupedRoute
    from dprect.release.ledger import Ledger

    extra = spark_event_log.conf(args.event_log) if args.event_log is not None else {}
    if args.java_options is not None:
        from dprect.engines.spark.session import JIT_OPTION

        for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
            extra[key] = f"{JIT_OPTION} {args.java_options}"
    extra.update(kv.split("=", 1) for kv in args.conf)
    bench = open_bench(args, "dprect-bench-aggregate-groups-profile", extra)
    assert bench.jvm_pid is not None
    groups = [str(i) for i in range(args.groups)]
    route = SparkGroupedRoute(lambda: (bench.spark, False))
    timers = Timers()
    install(timers)

    def aggregate() -> None:
        with tempfile.TemporaryDirectory(prefix="aggregate-run-", dir=OUTPUT) as where:
            Ledger(f"{where}/ledger").init()
            settings = aggregate_settings({
                "input": str(bench.path), "columns": bench.columns, "group_by": "g",
                "groups": groups, "statistics": args.statistics, "epsilon": args.epsilon,
                "output": f"{where}/result.json", "table": f"{where}/table.parquet",
                "ledger": f"{where}/ledger", "dataset": "bench", "run_id": "run"})
            run_aggregate_flow(settings, route, Reporter(say=silent, show=silent))

    plain: dict[str, float] | None = None
    if args.plain_first:
        c0, p0 = bench.cpu_now(), time.perf_counter()
        bench.plain(collect=False)
        c1 = bench.cpu_now()
        plain = {"wall": time.perf_counter() - p0,
                 **dict(zip(("driver", "cluster", "jvm"),
                            (b - a for a, b in zip(c0, c1, strict=True)), strict=True))}
    if args.jfr is not None:
        subprocess.run(["jcmd", str(bench.jvm_pid), "JFR.start", "name=dprect-profile",
                        f"settings={jfr_settings(args.jfr.with_suffix('.jfc')).resolve()}",
                        f"filename={args.jfr.resolve()}"],
                       check=True, capture_output=True)
    load = [os.getloadavg()[0]]
    threads0 = jvm_threads(bench.jvm_pid)
    jvm0, workers0 = jvm_split(bench.jvm_pid)
    cpu0, wall0, epoch0 = time.process_time(), time.perf_counter(), time.time()
    if args.cprofile is not None:
        prof = cProfile.Profile(time.process_time)
        prof.runcall(aggregate)
        prof.dump_stats(str(args.cprofile))
    else:
        aggregate()
    driver, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    epoch1 = time.time()
    compiled = numba_cache_writes(epoch0 - 1)
    jvm1, workers1 = jvm_split(bench.jvm_pid)
    threads1 = jvm_threads(bench.jvm_pid)
    load.append(os.getloadavg()[0])
    if args.jfr is not None:
        subprocess.run(["jcmd", str(bench.jvm_pid), "JFR.stop", "name=dprect-profile"],
                       check=True, capture_output=True)
    cells = args.groups * args.columns
    stages = dict(sorted(timers.spent.items(), key=lambda kv: -kv[1]))
    stages["other"] = driver - sum(timers.spent.values())
    out = {"rows": args.rows, "columns": args.columns, "groups": args.groups,
           "cells": cells, "statistics": args.statistics, "wall": wall, "load": load,
           "cpu": {"driver": driver, "jvm": jvm1 - jvm0, "python workers":
                   workers1 - workers0},
           "driver_stages": stages, "cprofile": args.cprofile is not None,
           "jvm_threads": thread_split(threads0, threads1, jvm1 - jvm0),
           "java_options": args.java_options, "conf": args.conf,
           "own_whole_stage": args.own_whole_stage, "plain_first": plain,
           "numba_cache_files_written": compiled}
    if args.jfr is not None:
        out["jfr"] = jfr_summary(args.jfr)
    out["again"] = []
    for _ in range(args.again):  # the same run again in the same (now warm) JVM
        t0, (j0, w0), d0 = jvm_threads(bench.jvm_pid), jvm_split(bench.jvm_pid), \
            time.process_time()
        p0, l0 = time.perf_counter(), os.getloadavg()[0]
        aggregate()
        t1, (j1, w1) = jvm_threads(bench.jvm_pid), jvm_split(bench.jvm_pid)
        out["again"].append({
            "wall": time.perf_counter() - p0, "load": [l0, os.getloadavg()[0]],
            "cpu": {"driver": time.process_time() - d0, "jvm": j1 - j0,
                    "python workers": w1 - w0},
            "jvm_threads": thread_split(t0, t1, j1 - j0)})
    OUTPUT.mkdir(parents=True, exist_ok=True)
    name = f"aggregate_groups_profile-{args.rows}x{args.columns}x{args.groups}{args.label}.json"
    (OUTPUT / name).write_text(json.dumps(out, indent=2) + "\n")
    print(f"{cells:,} cells, wall {wall:.1f} s, load {load}")
    if plain is not None:
        print("  plain groupBy first: " + ", ".join(f"{k} {v:.1f} s" for k, v in plain.items()))
    if compiled:
        print(f"  numba's cache was cold: {compiled} cache files written during the run "
              "(the workers compiled kernels in their first tasks); run again to compare")
    for k, v in out["cpu"].items():
        print(f"  CPU {k:<16} {v:8.1f} s  {1e6 * v / cells:8.1f} us a cell")
    for k, v in stages.items():
        print(f"    driver: {k:<40} {v:7.2f} s  {1e6 * v / cells:7.2f} us a cell")
    for k, v in out["jvm_threads"].items():
        print(f"    JVM thread: {k:<34} {v:7.2f} s")
    for i, again in enumerate(out["again"]):
        top = list(again["jvm_threads"].items())[:4]
        print(f"  again {i + 1}: wall {again['wall']:.1f} s, load {again['load']}, CPU "
              + ", ".join(f"{k} {v:.1f} s" for k, v in again["cpu"].items()) + "; JVM "
              + ", ".join(f"{k} {v:.1f} s" for k, v in top))
    if args.jfr is not None:
        print("    JFR samples by thread: " + json.dumps(out["jfr"]["by_thread"]))
        for k, v in out["jfr"]["self"].items():
            print(f"    JFR self {v:6d} {k}")
        for k, c in out["jfr"]["compilations"]["by_kind"].items():
            print(f"    JIT compiled {k:<48} {c['count']:6d} methods {c['seconds']:7.2f} s")
    bench.spark.stop()
    if args.event_log is not None:  # complete once the session has stopped
        import shutil

        out["timeline"] = spark_event_log.timeline(args.event_log)
        out["run_epoch_s"] = [epoch0, epoch1]
        (OUTPUT / name).write_text(json.dumps(out, indent=2) + "\n")
        shutil.rmtree(args.event_log, ignore_errors=True)
        for s in out["timeline"]["stages"]:
            print(f"    stage {s['stage']:4d} {s['start']:8.1f} -> {s['end']:8.1f} s "
                  f"{s['tasks']:5d} tasks run {s['run_s']:7.1f} s CPU {s['cpu_s']:7.1f} s "
                  f"GC {s['gc_s']:5.1f} s shuffle w/r {s['shuffle_write_mb']:7.1f}/"
                  f"{s['shuffle_read_mb']:7.1f} MB result {s['result_mb']:7.1f} MB "
                  f"{','.join(s['scopes'])[:80]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
