"""The describe pass's compiled merge of a range's partial lists
(``dprect.engines.spark.describe_jit.merge_flat``) — CPU nanoseconds an entry at
``--few`` lists and at ``--lists``, against a reference copy of the module in the same
run. Issue #41: the merge was a heap of the lists' next keys below 8 lists and windows of
sorted words from 8, each with its own run step; sharing that step as a numba callee cost
1.47× the heap's time and 2.7× the windows' (numba counts the references of the arrays a
callee is handed at every entry, even inlined), so the heap went instead: the windows
merge any number of lists, two lists the linear pass of ``merge_two``. Measured (load
9–14, 9–15 interleaved runs a side, 2·10^6 entries): 40 lists 0.94–1.03×, 7 lists 0.98×,
3 to 5 lists 1.08–1.35×, 2 lists 0.91–1.00× the heap.

The lists: a range's partial lists as the pass sends them — k lists of strictly
increasing int64 keys drawn from one sparse set of (group, bin) keys (each list holds
about a third of them, so most keys stand in many lists), a count and ``--words`` sum
words an entry, ``--entries`` entries in all. Each merge runs ``--repeats`` times a side,
the reference and this tree alternately (interleaved pairs: the machine's load falls on
both); the medians and their ratio are printed, the outputs checked equal.

    python benchmarks/describe_merge.py --reference /tmp/describe_jit_ref.py \\
        [--entries 2000000] [--few 4] [--lists 40] [--words 3] [--repeats 7]

``--reference``: a describe_jit.py of another commit (``git show REV:dprect/engines/spark/
describe_jit.py > /tmp/describe_jit_ref.py``); without it the tree is timed alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from dprect.engines.jit import compile_kernel
from dprect.engines.spark import describe_jit


def lists(entries: int, k: int, words: int) -> tuple[np.ndarray, ...]:
    """(keys, counts, sums (words × n), offsets) of k lists laid end to end."""
    gen = np.random.default_rng(41)
    universe = np.unique(gen.integers(0, 1 << 40, 3 * entries // k))
    parts = [np.flatnonzero(gen.random(len(universe)) < 1 / 3) for _ in range(k)]
    keys = np.concatenate([universe[p] for p in parts]).astype(np.int64)
    offsets = np.cumsum([0, *(len(p) for p in parts)]).astype(np.int64)
    counts = gen.integers(1, 1 << 20, len(keys)).astype(np.int64)
    sums = gen.integers(-(1 << 40), 1 << 40, (words, len(keys))).astype(np.int64)
    return keys, counts, sums, offsets


def load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("describe_jit_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's cache reloads a kernel's module by name
    spec.loader.exec_module(module)
    return module


def timed(fn: Any, *args: Any) -> tuple[Any, float]:
    cpu = time.process_time()
    out = fn(*args)
    return out, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", default=None)
    parser.add_argument("--entries", type=int, default=2_000_000)
    parser.add_argument("--few", type=int, default=4)
    parser.add_argument("--lists", type=int, default=40)
    parser.add_argument("--words", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    sides = {"tree": describe_jit}
    if args.reference:
        sides = {"reference": load(args.reference), **sides}
    for module in sides.values():  # numba loaded, the kernels loaded or compiled
        if compile_kernel(module._window_runs) is None:
            raise SystemExit("numba is not installed")
        for k in (args.few, args.lists):
            few = lists(1000, k, args.words)
            module.merge_flat(*few)
    print(f"{args.entries} entries, {args.words} words, {args.repeats} interleaved runs a "
          "side")
    for k in (args.few, args.lists):
        keys, counts, sums, offsets = lists(args.entries, k, args.words)
        seconds: dict[str, list[float]] = {name: [] for name in sides}
        outs: dict[str, Any] = {}
        for _ in range(args.repeats):
            for name, module in sides.items():
                outs[name], s = timed(module.merge_flat, keys, counts, sums, offsets)
                seconds[name].append(s)
        got = [outs[name] for name in sides]
        assert all(o is not None for o in got)
        for other in got[1:]:
            assert all(np.array_equal(np.asarray(a), np.asarray(b))
                       for a, b in zip(got[0], other, strict=True))
        med = {name: statistics.median(v) * 1e9 / len(keys) for name, v in seconds.items()}
        line = ", ".join(f"{name} {m:.1f} ns" for name, m in med.items())
        ratio = (f" (tree/reference {med['tree'] / med['reference']:.3f})"
                 if "reference" in med else "")
        print(f"{k} lists ({len(keys)} entries): {line} an entry, median CPU{ratio}")
    print(f"module: {Path(describe_jit.__file__).name}")


if __name__ == "__main__":
    main()
