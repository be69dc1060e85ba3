"""Per-job figures of a Spark session from its event log (benchmarks only).

``benchmarks/spark_fit.py --profile`` turns Spark's event log on (:func:`conf`), tags each
timed scan and fit with a job group (``scan3``, ``fit3``: ``SparkContext.setJobGroup``)
and, once the session has stopped (the log is complete then), reads it back with
:func:`jobs_by_group`: per job its wall seconds (submission to completion), the executor
CPU and run seconds of its tasks (``Executor CPU Time``, ``Executor Run Time``), its task
count and the bytes its tasks returned to the driver (``Result Size``). CPU seconds are
what compares across a shared machine's loads; walls are the load's.

The log holds task metrics and query plans, never rows — but a fit's plans carry its
sampled thresholds as literals (docs/privacy.md: protect event logs like the data), so
``--profile`` is for benchmark data, and the log is removed once read.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path


def conf(directory: Path) -> dict[str, str]:
    """Session settings that write an uncompressed event log into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(directory),
            "spark.eventLog.compress": "false"}


def _events(directory: Path) -> list[dict]:
    """Every event of the (one) application logged in ``directory``, in order."""
    files = sorted(p for p in directory.rglob("*") if p.is_file()
                   and not p.name.startswith(".") and not p.name.startswith("appstatus"))
    out: list[dict] = []
    for path in files:
        with path.open() as lines:
            out.extend(json.loads(line) for line in lines if line.strip())
    return out


def jobs_by_group(directory: Path) -> dict[str, list[dict]]:
    """Per job group (jobs without one under ``""``), its jobs in submission order:
    ``{"job", "wall_s", "cpu_s", "run_s", "tasks", "result_mb"}``."""
    jobs: dict[int, dict] = {}
    stages: dict[int, Counter] = defaultdict(Counter)
    for event in _events(directory):
        kind = event.get("Event")
        if kind == "SparkListenerJobStart":
            props = event.get("Properties") or {}
            jobs[event["Job ID"]] = {"group": props.get("spark.jobGroup.id") or "",
                                     "start": event["Submission Time"],
                                     "stages": event["Stage IDs"]}
        elif kind == "SparkListenerJobEnd" and event["Job ID"] in jobs:
            jobs[event["Job ID"]]["end"] = event["Completion Time"]
        elif kind == "SparkListenerTaskEnd":
            metrics = event.get("Task Metrics") or {}
            tally = stages[event["Stage ID"]]
            tally["cpu_ns"] += metrics.get("Executor CPU Time", 0)
            tally["run_ms"] += metrics.get("Executor Run Time", 0)
            tally["result"] += metrics.get("Result Size", 0)
            tally["tasks"] += 1
    out: dict[str, list[dict]] = defaultdict(list)
    for job_id, job in sorted(jobs.items()):
        tally = sum((stages[s] for s in job["stages"]), Counter())
        out[job["group"]].append({
            "job": job_id, "wall_s": (job.get("end", job["start"]) - job["start"]) / 1e3,
            "cpu_s": tally["cpu_ns"] / 1e9, "run_s": tally["run_ms"] / 1e3,
            "tasks": tally["tasks"], "result_mb": tally["result"] / 1e6})
    return dict(out)


def summary(jobs: list[dict]) -> str:
    """One line: the jobs' executor CPU and returned MB, one entry per job."""
    parts = [f"{j['cpu_s']:.2f} s CPU/{j['tasks']} tasks/{j['result_mb']:.2f} MB"
             for j in jobs]
    total = sum(j["cpu_s"] for j in jobs)
    return f"{len(jobs)} jobs, executor CPU {total:.2f} s: " + "; ".join(parts)


#: a stage's task metrics summed over its tasks (``timeline``): key -> (the event log's
#: field, a path "Outer/Inner" for a nested one; the divisor to seconds or MB). On a local
#: master the executor's CPU is the JVM's task threads' (a Python worker is another
#: process: its CPU is not in ``cpu_s``); ``gc_s`` is the wall time the tasks spent in GC
TASK_METRICS: dict[str, tuple[str, float]] = {
    "gc_s": ("JVM GC Time", 1e3),
    "deserialize_cpu_s": ("Executor Deserialize CPU Time", 1e9),
    "result_serialize_s": ("Result Serialization Time", 1e3),
    "result_mb": ("Result Size", 1e6),
    "input_mb": ("Input Metrics/Bytes Read", 1e6),
    "shuffle_read_mb": ("Shuffle Read Metrics/Local Bytes Read", 1e6),
    "shuffle_remote_mb": ("Shuffle Read Metrics/Remote Bytes Read", 1e6),
    "shuffle_fetch_wait_s": ("Shuffle Read Metrics/Fetch Wait Time", 1e3),
    "shuffle_write_mb": ("Shuffle Write Metrics/Shuffle Bytes Written", 1e6),
    "shuffle_write_s": ("Shuffle Write Metrics/Shuffle Write Time", 1e9),
    "spill_memory_mb": ("Memory Bytes Spilled", 1e6),
    "spill_disk_mb": ("Disk Bytes Spilled", 1e6),
}


def _stage_tally() -> dict:
    return {"cpu_s": 0.0, "run_s": 0.0, "done": 0, **dict.fromkeys(TASK_METRICS, 0.0)}


def _metric(metrics: dict, field: str) -> float:
    """A task metric by its path (``Outer/Inner``), 0 where the task has none."""
    value: object = metrics
    for part in field.split("/"):
        value = value.get(part, 0) if isinstance(value, dict) else 0
    return float(value) if isinstance(value, int | float) else 0.0


def _scopes(info: dict) -> list[str]:
    """The operators a stage runs (its RDDs' scope names: ``Exchange``, ``MapInArrow``,
    ``InMemoryTableScan``, ...), each once, in the order listed: what a stage IS when its
    call-site name (``toArrow at ...``) says only which action ran it."""
    names: list[str] = []
    for rdd in info.get("RDD Info") or []:
        try:
            name = json.loads(rdd.get("Scope") or "{}").get("name") or ""
        except ValueError:
            name = ""
        if name and name not in names:
            names.append(name)
    return names


def timeline(directory: Path) -> dict:
    """The session's jobs and stages on one clock (seconds from the first job's
    submission): per job its start, end, stages and tasks; per stage its start, end,
    tasks, executor run and CPU seconds, :data:`TASK_METRICS` and its operators
    (:func:`_scopes`) — where a run is serial (one job after another,
    stages of one task) or idle (gaps between jobs: the driver's own work)."""
    jobs: dict[int, dict] = {}
    stages: dict[int, dict] = {}
    spans: list[tuple[int, int]] = []
    for event in _events(directory):
        kind = event.get("Event")
        if kind == "SparkListenerJobStart":
            jobs[event["Job ID"]] = {"start": event["Submission Time"],
                                     "stages": event["Stage IDs"]}
        elif kind == "SparkListenerJobEnd" and event["Job ID"] in jobs:
            jobs[event["Job ID"]]["end"] = event["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            if "Submission Time" in info:
                stages.setdefault(info["Stage ID"], _stage_tally()).update(
                    name=info.get("Stage Name", ""), start=info["Submission Time"],
                    end=info.get("Completion Time", info["Submission Time"]),
                    scopes=_scopes(info))
        elif kind == "SparkListenerTaskEnd":
            metrics = event.get("Task Metrics") or {}
            tally = stages.setdefault(event["Stage ID"], _stage_tally())
            tally["cpu_s"] += metrics.get("Executor CPU Time", 0) / 1e9
            tally["run_s"] += metrics.get("Executor Run Time", 0) / 1e3
            tally["done"] += 1
            for key, (field, scale) in TASK_METRICS.items():
                tally[key] += _metric(metrics, field) / scale
            info = event.get("Task Info") or {}
            if info.get("Launch Time") and info.get("Finish Time"):
                spans.append((info["Launch Time"], info["Finish Time"]))
    if not jobs:
        return {"zero_epoch_s": None, "jobs": [], "stages": []}
    zero = min(j["start"] for j in jobs.values())
    out_jobs = [{"job": k, "start": (j["start"] - zero) / 1e3,
                 "end": (j.get("end", j["start"]) - zero) / 1e3,
                 "stages": [s for s in j["stages"] if s in stages and "start" in stages[s]]}
                for k, j in sorted(jobs.items())]
    out_stages = [{"stage": k, "name": s["name"], "tasks": s["done"],
                   "start": (s["start"] - zero) / 1e3, "end": (s["end"] - zero) / 1e3,
                   "run_s": s["run_s"], "cpu_s": s["cpu_s"],
                   **{key: s[key] for key in TASK_METRICS}, "scopes": s.get("scopes", [])}
                  for k, s in sorted(stages.items()) if "start" in s]
    return {"zero_epoch_s": zero / 1e3, "jobs": out_jobs, "stages": out_stages,
            "tasks_running_s": running(spans, zero)}


def running(spans: list[tuple[int, int]], zero: int, end: int | None = None
            ) -> dict[str, float]:
    """Seconds from ``zero`` to ``end`` (ms; default the last task's end) during which
    0, 1, 2, ... tasks ran at once, from the tasks' (launch, finish) times (ms): time with
    fewer tasks than cores is a core idle for the executors (the driver's own work, a
    job's start, a stage's straggler)."""
    marks = sorted([(a, 1) for a, _ in spans] + [(z, -1) for _, z in spans])
    last = end if end is not None else max((z for _, z in spans), default=zero)
    out: dict[str, float] = {}
    at, now = zero, 0
    for t, step in [*marks, (last, 0)]:
        t = min(max(t, zero), last)
        out[str(now)] = out.get(str(now), 0.0) + (t - at) / 1e3
        at, now = t, now + step
    return out
