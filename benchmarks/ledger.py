"""Time per ledger operation against the ledger's age (issue #26).

    python benchmarks/ledger.py [--sizes 1000,2000,5000,10000,20000] [--repeat 16]
                                [--datasets 20] [--out docs/figures]

A scheduled platform's ledger: ``--datasets`` datasets (20), each with a cap, charged by
runs that reserve and then release (two events each), round robin. The ledger is grown to
each size in ``--sizes`` (events) with ``tests/ledger_fill.fill`` (the
ledger's own rows and checkpoints, written fast) and copied at each size. The copies are
then measured in turn, round after round (``--repeat`` rounds), so that a change in the
machine's load falls on every size alike and the ratios between sizes stay comparable.
Per size and round:

* ``reserve+release`` — :meth:`Ledger.reserve` then :meth:`Ledger.release` of a new run id
  (what every run adds to its compute), *cold* (the process's caches are emptied first,
  :func:`dprect.release.ledger.forget`, as in a new job process: the release then reads
  only what the reserve did not) and *warm* (a long-lived process);
* ``status`` — :meth:`Ledger.status` of one dataset (spend and cap: it reads no run
  index; ``dprect budget show``, which lists the runs, is measured below), cold and warm,
  each timed right after a reserve+release, so that both sample the whole checkpoint
  cycle (what an operation reads depends on how many events follow the newest
  checkpoint: 16 rounds are 64 events, two cycles);

each as the median wall-clock time and the median CPU time of this process (all its
threads: what the operation costs when the machine is not shared);
* ``show`` — ``dprect budget show`` of one dataset of a ledger that also holds caps of
  1,000 datasets (measured once, at the end, after ``dprect budget compact``).

Writes ``ledger_bench.json`` and ``ledger_bench.png`` to ``--out``, prints a table and the
acceptance lines of issue #26 (≤ 100 ms at 10^4 and 2·10^4 events; growth < 1.5× from
10^3 to 2·10^4). Timings are wall clock on this machine (medians, same run); nothing is
asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dprect.release.ledger as ledger_module
from dprect.release.ledger import Ledger
from tests.ledger_fill import fill

REQ = {"method": "randmargins", "features": ["a", "b"], "bound": "benchmark",
       "neighbouring": "add-remove"}


def history(start: int, runs: int, datasets: int) -> Iterator[dict[str, Any]]:
    for i in range(start, start + runs):
        name = f"d{i % datasets}"
        yield {"event": "reserve", "dataset": name, "run_id": f"fill-{i}", "epsilon": 1e-4,
               "delta": 1e-13, "method": "randmargins", "features": '["a", "b"]',
               "bound": "benchmark", "neighbouring": "add-remove"}
        yield {"event": "release", "dataset": name, "run_id": f"fill-{i}",
               "result": json.dumps({"method": "randmargins", "lower": [0.0, 1.0],
                                     "upper": [2.0, 3.0]}), "method": "randmargins"}


class Timings:
    """Times ``actions``, run in turn once per :meth:`run`; :meth:`medians` gives per
    action the median wall-clock and the median CPU (this process, all its threads)
    milliseconds."""

    def __init__(self, actions: list[Callable[[], Any]]) -> None:
        self.actions = actions
        self.wall: list[list[float]] = [[] for _ in actions]
        self.cpu: list[list[float]] = [[] for _ in actions]

    def run(self) -> None:
        for i, action in enumerate(self.actions):
            start, start_cpu = time.perf_counter(), time.process_time()
            action()
            self.wall[i].append(time.perf_counter() - start)
            self.cpu[i].append(time.process_time() - start_cpu)

    def medians(self) -> list[tuple[float, float]]:
        return [(1000 * statistics.median(w), 1000 * statistics.median(c))
                for w, c in zip(self.wall, self.cpu, strict=True)]


def median_ms(action: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Median wall-clock and median CPU (this process, all its threads) milliseconds."""
    timings = Timings([action])
    for _ in range(repeat):
        timings.run()
    return timings.medians()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,2000,5000,10000,20000")
    parser.add_argument("--repeat", type=int, default=16)
    parser.add_argument("--datasets", type=int, default=20)
    parser.add_argument("--out", default="docs/figures")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ledger"
        led = Ledger(path)
        led.init()
        for d in range(args.datasets):
            led.set_cap(f"d{d}", 1e6, 0.5)
        runs_filled = 0
        copies: list[tuple[int, Path]] = []
        for size in sizes:  # grown once; a copy kept at each size
            events = led.verify()
            if events < size:
                runs = (size - events) // 2
                fill(led, history(runs_filled, runs, args.datasets))
                runs_filled += runs
            copies.append((led.verify(), Path(tmp) / f"at-{size}"))
            shutil.copytree(path, copies[-1][1])
            print(f"filled to {copies[-1][0]} events", flush=True)

        # the sizes measured in turn, round after round: a change in the machine's load
        # falls on every size alike, so the ratios between sizes stay comparable
        counter = 0

        def reserve_release(at: Ledger) -> None:
            nonlocal counter
            counter += 1
            name = f"d{counter % args.datasets}"
            at.reserve(name, f"bench-{counter}", epsilon=1e-4, delta=1e-13, **REQ)
            at.release(name, f"bench-{counter}", {"method": "randmargins"})

        def cold(action: Callable[[], Any]) -> Callable[[], Any]:
            def run() -> Any:  # as a new process would: nothing read before
                ledger_module.forget()
                return action()
            return run

        ledgers = [Ledger(where) for _, where in copies]
        samples = [Timings(
            [cold(functools.partial(reserve_release, at)),
             cold(functools.partial(at.status, "d3")),
             functools.partial(reserve_release, at), functools.partial(at.status, "d3")])
            for at in ledgers]
        for _ in range(args.repeat):
            for sample in samples:
                sample.run()
        for (events, where), sample in zip(copies, samples, strict=True):
            (rr, rr_cpu), (st, st_cpu), (rr_warm, _), (st_warm, _) = sample.medians()
            files = sum(1 for p in where.rglob("*") if p.is_file())
            rows.append({"events": events, "reserve_release_ms": rr, "status_ms": st,
                         "reserve_release_cpu_ms": rr_cpu, "status_cpu_ms": st_cpu,
                         "reserve_release_warm_ms": rr_warm, "status_warm_ms": st_warm,
                         "files": files})
            print(f"{events:>7} events  reserve+release {rr:7.1f} ms (cpu {rr_cpu:6.1f}, "
                  f"warm {rr_warm:6.1f})  status {st:7.1f} ms (cpu {st_cpu:6.1f}, warm "
                  f"{st_warm:6.1f})  ({files} files)", flush=True)

        # dprect budget show with 1,000 datasets, after compaction
        fill(led, ({"event": "cap", "dataset": f"many-{k}", "epsilon": 1.0, "delta": 1e-6,
                    "neighbouring": "add-remove"} for k in range(1000)))
        start = time.perf_counter()
        led.compact()
        compact_s = time.perf_counter() - start
        from dprect.app.cli import main as cli

        def show() -> None:
            with contextlib.redirect_stdout(io.StringIO()):
                cli(["budget", "show", "many-999", "--ledger", str(path)])

        show_ms = median_ms(show, args.repeat)[0]
        files_after = sum(1 for p in path.rglob("*") if p.is_file())
        print(f"1,000 more datasets, compacted in {compact_s:.1f} s to {files_after} files; "
              f"`dprect budget show` {show_ms:.1f} ms")

    first, last = rows[0], rows[-1]
    summary = {
        "rows": rows, "datasets": args.datasets, "repeat": args.repeat,
        "show_1000_datasets_ms": show_ms, "compact_s": compact_s, "files_after_compact":
            files_after,
        "growth_reserve_release": last["reserve_release_ms"] / first["reserve_release_ms"],
        "growth_status": last["status_ms"] / first["status_ms"],
        "growth_reserve_release_cpu":
            last["reserve_release_cpu_ms"] / first["reserve_release_cpu_ms"],
        "growth_status_cpu": last["status_cpu_ms"] / first["status_cpu_ms"],
    }
    for r in rows:
        if r["events"] >= 10_000:
            ok = r["reserve_release_ms"] <= 100 and r["status_ms"] <= 100
            print(f"acceptance at {r['events']} events (both <= 100 ms): "
                  f"{'met' if ok else 'NOT met'}")
    print(f"CPU time: growth x{summary['growth_reserve_release_cpu']:.2f} (reserve+release), "
          f"x{summary['growth_status_cpu']:.2f} (status)")
    worst = max(summary["growth_reserve_release"], summary["growth_status"])
    print(f"growth from {first['events']} to {last['events']} events: reserve+release "
          f"x{summary['growth_reserve_release']:.2f}, status x{summary['growth_status']:.2f} "
          f"(< 1.5: {'met' if worst < 1.5 else 'NOT met'})")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ledger_bench.json").write_text(json.dumps(summary, indent=2) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    xs = [r["events"] for r in rows]
    ax.plot(xs, [r["reserve_release_ms"] for r in rows], "o-", label="reserve + release")
    ax.plot(xs, [r["status_ms"] for r in rows], "s-", label="status")
    ax.plot(xs, [r["reserve_release_cpu_ms"] for r in rows], "o--", color="C0", alpha=0.6,
            label="reserve + release (CPU time)")
    ax.plot(xs, [r["status_cpu_ms"] for r in rows], "s--", color="C1", alpha=0.6,
            label="status (CPU time)")
    ax.axhline(100, color="grey", linestyle=":", label="acceptance (100 ms)")
    ax.set_xscale("log")
    ax.set_xlabel("events in the ledger")
    ax.set_ylabel("median time per operation (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"budget ledger: {args.datasets} datasets, checkpoints every 32 events")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "ledger_bench.png", dpi=120)
    print(f"wrote {out / 'ledger_bench.json'} and {out / 'ledger_bench.png'}")


if __name__ == "__main__":
    main()
