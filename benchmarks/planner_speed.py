"""The planner's speed, before and after a change: ``dprect plan``'s two parts, the plan
(:func:`dprect.core.planner.plan`) and the crossover search
(:func:`dprect.core.crossover.crossover_lines`), at several d, for this checkout and for
a git revision (``--before``, default ``main``, exported with ``git archive`` to a
temporary folder).

Every measurement runs in a fresh interpreter (the accountant's caches start cold, as in a
CLI call), best of ``--repeats``; the imports are not timed. Each run also prints a digest
of the plan's JSON record and the crossover, so the table says whether both revisions
plan the same numbers. Ratios, not absolute times, are the result: the machine is shared.

    python benchmarks/planner_speed.py                 # main against this checkout
    python benchmarks/planner_speed.py --dims 1,4096 --repeats 5 --before HEAD~1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: what one fresh interpreter runs: the CLI's plan (float-order domains, ε = 1, δ = 10^−6,
#: auto without --positives) and its crossover line, timed apart
_CHILD = r"""
import hashlib, json, sys, time
from dprect.core.crossover import crossover_lines
from dprect.core.domains import resolve_domains
from dprect.core.planner import plan
from dprect.core.request import PlanRequest, make_request

d, eps, delta = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
names = [f"x{j}" for j in range(d)]
domains = resolve_domains(None, names)
request = make_request(PlanRequest, None, {"epsilon": eps, "delta": delta})
t0 = time.perf_counter()
p = plan(request, domains=domains, features=names)
t1 = time.perf_counter()
line, crossing = crossover_lines(request, domains)
t2 = time.perf_counter()
text = json.dumps({**p.to_json(), "crossover": crossing}, sort_keys=True) + p.table() + line
print(json.dumps({"plan": t1 - t0, "crossover": t2 - t1,
                  "digest": hashlib.sha256(text.encode()).hexdigest()[:16]}))
"""


def _export(rev: str, into: str) -> str:
    """``git archive rev`` unpacked into ``into``; returns the folder."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                             capture_output=True).stdout
    path = Path(into) / "src"
    path.mkdir()
    tar = Path(into) / "src.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as t:
        t.extractall(path, filter="data")
    return str(path)


def _measure(source: str, d: int, eps: float, delta: float) -> dict:
    env = {**os.environ, "PYTHONPATH": source, "PYTHONHASHSEED": "0"}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(d), repr(eps), repr(delta)],
                         check=True, capture_output=True, text=True, env=env, cwd=source)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="main", help="git revision to compare with")
    ap.add_argument("--dims", default="1,1024,4096")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    dims = [int(x) for x in args.dims.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        sources = {"before": _export(args.before, tmp), "after": str(ROOT)}
        best: dict[tuple[str, int], dict] = {}
        for _ in range(args.repeats):  # interleaved: the machine's load hits both alike
            for d in dims:
                for label, source in sources.items():
                    got = _measure(source, d, args.epsilon, args.delta)
                    old = best.get((label, d))
                    if old is not None and old["digest"] != got["digest"]:
                        raise SystemExit(f"{label} at d = {d}: the plan changed between runs")
                    best[(label, d)] = got if old is None else {
                        k: min(old[k], got[k]) if k != "digest" else got[k] for k in got}
    print(f"epsilon {args.epsilon:g}, delta {args.delta:g}, best of {args.repeats} "
          f"(before = {args.before})")
    print(f"{'d':>6} {'plan before':>12} {'after':>8} {'ratio':>6} "
          f"{'crossover before':>17} {'after':>8} {'ratio':>6}  same output")
    for d in dims:
        b, a = best[("before", d)], best[("after", d)]
        print(f"{d:>6} {b['plan']:>11.3f}s {a['plan']:>7.3f}s {b['plan'] / a['plan']:>5.1f}x "
              f"{b['crossover']:>16.3f}s {a['crossover']:>7.3f}s "
              f"{b['crossover'] / a['crossover']:>5.1f}x  "
              f"{'yes' if a['digest'] == b['digest'] else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
