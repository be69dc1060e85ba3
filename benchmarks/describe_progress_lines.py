"""What a user sees during a describe of very many public groups (issue #42, output at
scale): the number of lines on stdout and the seconds between two progress lines on
stderr.

    python benchmarks/describe_progress_lines.py [--groups 1000000]
        [--json benchmarks/output/describe_progress_lines.json]

The input is public synthetic data made here (cached under benchmarks/output/): one float
column, TINY groups (0 to 3 rows each, uniform: about 1.5 rows a group, a quarter of the
groups empty), so the run's time is the per-group work — the groups' index, the mechanism
of every (group, column) cell, the outputs — not the rows. The command is
``dprect describe --engine numpy --seed 1`` WITHOUT ``--quiet`` (the heartbeat on: a line
on stderr at least every 10 s, docs/operations.md), run as a subprocess; every stderr line
is time-stamped as it arrives (a reader thread), so the gaps between lines are the
heartbeat's as the user sees them.

Recorded: the stdout lines, the stderr lines, the largest gap between two stderr lines
(and between the start and the first one, the last one and the end), the wall time and the
load average before and after; and the row spool's largest size on disk (the command runs
with its own ``TMPDIR``, whose files' total size is sampled every second by a thread,
:mod:`dprect.release.row_spool`) beside the JSON output's size. Nothing is asserted: a
measurement (docs/results.md §5.3d).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "benchmarks" / "output"


def write_input(groups: int, seed: int = 11) -> tuple[Path, Path]:
    """The table (group ``grp`` = g0, g1, …, column ``a``) as Parquet and the public group
    list, cached."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    OUTPUT.mkdir(parents=True, exist_ok=True)
    path = OUTPUT / f"progress_groups_{groups}.parquet"
    listed = OUTPUT / f"progress_groups_{groups}.groups"
    if not path.exists() or not listed.exists():
        gen = np.random.default_rng(seed)
        sizes = gen.integers(0, 4, groups)
        group = np.repeat(np.arange(groups, dtype=np.int64), sizes)
        a = gen.normal(50, 10, len(group))
        pq.write_table(pa.table({"grp": pa.array(np.char.add("g", group.astype(str))),
                                 "a": a}), path)
        listed.write_text("\n".join(f"g{i}" for i in range(groups)) + "\n")
    return path, listed


def run(path: Path, listed: Path) -> dict[str, Any]:
    """The command with its stderr lines time-stamped (seconds since the start)."""
    out = OUTPUT / "progress_groups_result.json"
    spool_dir = OUTPUT / "progress_tmp"
    shutil.rmtree(spool_dir, ignore_errors=True)
    spool_dir.mkdir(parents=True)
    load_before = os.getloadavg()
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dprect", "describe", "--input", str(path), "--columns", "a",
         "--epsilon", "4", "--group-by", "grp", "--groups-file", str(listed), "--seed", "1",
         "--engine", "numpy", "--output", str(out)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(spool_dir)})
    stamps: list[tuple[float, str]] = []
    spool_peak = [0]

    def sample_spool() -> None:  # the temporary files' total size, every second
        while proc.poll() is None:
            with contextlib.suppress(OSError):
                size = sum(p.stat().st_size for p in spool_dir.iterdir())
                spool_peak[0] = max(spool_peak[0], size)
            time.sleep(1.0)

    sampler = threading.Thread(target=sample_spool, daemon=True)
    sampler.start()

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            stamps.append((time.monotonic() - start, line.rstrip("\n")))

    reader = threading.Thread(target=read_stderr)  # the only reader of stderr
    reader.start()
    assert proc.stdout is not None
    stdout = proc.stdout.read()
    proc.wait()
    reader.join()
    sampler.join()
    wall = time.monotonic() - start
    times = [0.0, *(t for t, _ in stamps), wall]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # the seconds each heartbeat line states itself ("still running (S s)": its own clock)
    stated = [int(m.group(1)) for _, line in stamps
              if (m := re.search(r"still running \((\d+) s\)", line))]
    return {"returncode": proc.returncode, "wall_seconds": wall,
            "stdout_lines": len(stdout.splitlines()), "stdout": stdout.splitlines(),
            "stderr_lines": len(stamps),
            "largest_gap_seconds": max(gaps),
            "largest_gap_between_progress_lines": max(gaps[1:-1], default=None),
            "largest_gap_stated_by_the_heartbeat": max(
                (b - a for a, b in itertools.pairwise(stated)), default=None),
            "spool_bytes_peak": spool_peak[0],
            "json_bytes": out.stat().st_size if out.exists() else None,
            "stderr": [f"{t:8.1f} s  {line}" for t, line in stamps],
            "load_before": load_before, "load_after": os.getloadavg()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=1_000_000)
    ap.add_argument("--json", type=Path, default=OUTPUT / "describe_progress_lines.json")
    args = ap.parse_args()
    path, listed = write_input(args.groups)
    out = {"groups": args.groups, "columns": 1, **run(path, listed)}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k not in ("stdout", "stderr")},
                     indent=2))


if __name__ == "__main__":
    main()
