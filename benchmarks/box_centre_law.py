"""The unaimed quantile box's miss from its centre's law, exactly, on the float-order tables
of docs/results.md §4.1 (issue #44, s35).

For each float-order cell (iris, wine, breast cancer and its jittered copy at ε ∈ {0.5, 1,
4}; every one unaimed) this computes, beside the plan (:func:`~dprect.core.planner.
quantiles_predicted`) and the box's measured FN (docs/figures/small_tables.json, 200 seeded
runs):

* **the mechanism's expected miss given the table's rows**: per axis
  Σ_b P(C = b·2^s)·E[clip | C], P the centre's law on the coarse bins (∝ e^{ε·depth(b)},
  :func:`~dprect.core.quantile_box.centre_from_counts`'s) and E[clip | C] each side's mean
  clip under its draw's law (∝ e^{−ε_s·q_k − μk}) over its own candidates
  (:func:`~dprect.core.quantile_box.side_candidates`), then the independent union over the
  axes — a function of the rows (a benchmark's number, never a plan's): where it meets the
  measured FN and the plan does not, the plan's error is in what it cannot see;
* its parts: P(C in the data's bins), the clip from there and the clip from an empty bin
  (the branch :func:`~dprect.core.quantile_box.empty_bin_reach` models since s35);
* with ``--what-if`` two candidate changes, simulated on the box's own code path (200
  seeded runs): (a) the centre refined inside its coarse bin (a second stage on 2^8
  sub-bins ∝ e^{ε·depth}, drawn by numpy: NOT private as written — an estimate of what a
  centre at the data's median would do), and (b) every side aimed (AIM_MIN_NATS = 0).

Writes ``box_centre_law.json`` (docs/figures/, or benchmarks/output/ with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from fractions import Fraction
from typing import Any

import numpy as np
from evidence_common import FIGURES, output_dir, write_json

import dprect
import dprect.core.quantile_box as qb
from dprect.core.algorithms import run_quantiles
from dprect.core.domains import Domain
from dprect.core.planner import predicted_at
from dprect.core.randomness import RandomSource
from dprect.engines.numpy_engine import NumpyEngine

DELTA = 1e-6
TABLES = ("iris", "wine", "breast-cancer", "breast-cancer-jittered")
EPSILONS = (0.5, 1.0, 4.0)
#: sub-bins of the what-if (a) centre: 2^FINE_SUB per coarse bin
FINE_SUB = 8


def side_mean_clip(col: np.ndarray, cands: list[int], side: str, eps: float, mu: float
                   ) -> float:
    """A side's mean clip under its draw's law ∝ e^{−ε·q_k − μk} (t = 0)."""
    c = np.asarray(cands, dtype=np.uint64)
    q = (len(col) - np.searchsorted(col, c, side="right") if side == "hi"
         else np.searchsorted(col, c, side="left")).astype(np.float64)
    lw = -eps * q - mu * np.arange(len(q))
    w = np.exp(lw - lw.max())
    return float((w * q).sum() / w.sum())


def axis_law(col: np.ndarray, dom: Domain, eps: float, mu: float) -> dict[str, float]:
    """The axis's expected clip Σ_b P(b)·E[clip | b] and its parts (centre rate = ε_s)."""
    col = np.sort(np.asarray(col, dtype=np.uint64))
    n, s, bins = len(col), qb.coarse_shift(dom), qb.coarse_bins(dom)
    cnt = np.bincount((col >> np.uint64(s)).astype(np.int64), minlength=bins)
    incl = np.cumsum(cnt)
    depth = np.minimum(incl, n - (incl - cnt))
    lw = eps * depth
    p = np.exp(lw - lw.max())
    p /= p.sum()
    clip = np.zeros(bins)
    for b in np.flatnonzero(p > 1e-12 * p.max()):
        c = int(b) << s
        alone = qb.tiny_centre(dom, c)
        clip[b] = sum(side_mean_clip(col, qb.side_candidates(dom, c, side, qb.STEPS_PER_OCTAVE,
                                                             alone, alone), side, eps, mu)
                      for side in ("lo", "hi"))
    data = np.zeros(bins, dtype=bool)
    data[int(col[0] >> np.uint64(s)):int(col[-1] >> np.uint64(s)) + 1] = True
    p_in = float(p[data].sum())
    return {"clip": float((p * clip).sum()), "p_in_data_bins": p_in,
            "clip_in": float((p * clip)[data].sum() / max(p_in, 1e-300)),
            "clip_out": float((p * clip)[~data].sum() / max(1 - p_in, 1e-300))}


def what_if(X: np.ndarray, domains: list[Domain], eps: float, runs: int, mode: str,
            tag: str) -> float:
    """The box's mean FN under a candidate change (module docstring; seeded)."""
    n, d = X.shape
    idx = np.stack([dom.to_index(dom.encode(X[:, j])) for j, dom in enumerate(domains)], 1)
    orig_centre, orig_nats = qb.centre_from_counts, qb.AIM_MIN_NATS
    calls = {"j": 0}
    gen = np.random.default_rng(zlib.crc32(tag.encode()))

    def finer(counts: np.ndarray, domain: Domain, rate: Fraction, rng: RandomSource,
              favour_zero: bool = False) -> int:
        c = orig_centre(counts, domain, rate, rng, favour_zero)
        col = idx[:, calls["j"] % d]
        calls["j"] += 1
        s = qb.coarse_shift(domain)
        k = min(s, FINE_SUB)
        inside = col[(col >= np.uint64(c)) & (col < np.uint64(c) + np.uint64(1 << s))]
        if k == 0 or len(inside) == 0:
            return c
        sub = np.bincount(((inside - np.uint64(c)) >> np.uint64(s - k)).astype(np.int64),
                          minlength=1 << k)
        below = int((col < np.uint64(c)).sum()) + np.concatenate([[0], np.cumsum(sub)[:-1]])
        lw = float(rate) * np.minimum(below + sub, n - below)
        w = np.exp(lw - lw.max())
        return c + (int(gen.choice(len(w), p=w / w.sum())) << (s - k))

    try:
        if mode == "finer-centre":
            qb.centre_from_counts = finer  # type: ignore[assignment]
        else:
            qb.AIM_MIN_NATS = Fraction(0)
        box = dprect.plan(epsilon=eps, delta=DELTA, domains=domains, positives=n,
                          method="quantiles").chosen
        fn = []
        for s in range(runs):
            res = run_quantiles(NumpyEngine.from_features(X, domains), domains, box,
                                RandomSource(zlib.crc32(repr((tag, eps, s)).encode())), n)
            ok = (idx >= np.array(res.lo, dtype=np.uint64)) & (
                idx <= np.array(res.hi, dtype=np.uint64))
            fn.append(1.0 - float(ok.all(axis=1).mean()))
        return float(np.mean(fn))
    finally:
        qb.centre_from_counts, qb.AIM_MIN_NATS = orig_centre, orig_nats  # type: ignore[assignment]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--what-if", action="store_true")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from small_tables import small_tables  # scikit-learn's tables (benchmarks' extras)

    measured = {(c["table"], c["epsilon"]): c["quantiles"]["fn"] for c in json.loads(
        (FIGURES / "small_tables.json").read_text())["cells"]}
    tables = small_tables(list(TABLES[:1] if args.quick else TABLES))
    rows = []
    for t in tables:
        X = t.X[t.y]
        n, d = X.shape
        for eps in EPSILONS:
            box = dprect.plan(epsilon=eps, delta=DELTA, domains=t.domains, positives=n,
                              method="quantiles").chosen
            es = float(Fraction(box.details["side_epsilon"]))
            mu = float(Fraction(box.details["decay"]))
            axes = [axis_law(dom.to_index(dom.encode(X[:, j])), dom, es, mu)
                    for j, dom in enumerate(t.domains)]
            clips = np.array([a["clip"] for a in axes])
            r: dict[str, Any] = {
                "table": t.name, "positives": n, "dims": d, "epsilon": eps,
                "side_epsilon": es, "planned": predicted_at(box, n) / n,
                "measured": measured.get((t.name, eps)),
                "exact_given_rows": float(1 - np.prod(1 - clips / n)),
                "axis_clip_model": float(qb.predicted_axis_clip(
                    es, n, 0, mu, int(t.domains[0].size), es / 2, True)),
                "axis_clip_exact": float(clips.mean()),
                "p_in_data_bins": float(np.mean([a["p_in_data_bins"] for a in axes])),
                "clip_in": float(np.mean([a["clip_in"] for a in axes])),
                "clip_out": float(np.mean([a["clip_out"] for a in axes]))}
            if args.what_if:
                runs = 5 if args.quick else args.runs
                for mode in ("finer-centre", "every-side-aimed"):
                    r[mode] = what_if(X, list(t.domains), eps, runs, mode, f"{t.name}|{mode}")
            m = r["measured"]
            r["plan_within"] = m is not None and abs(r["planned"] - m) <= max(0.02, 0.25 * m)
            print(f"{t.name:<24}{eps:>4} plan {r['planned']:.3f} measured "
                  f"{m if m is None else round(m, 3)} exact|rows {r['exact_given_rows']:.3f}"
                  f" | axis clip model {r['axis_clip_model']:.2f} exact "
                  f"{r['axis_clip_exact']:.2f} | P(in) {r['p_in_data_bins']:.2f} clip|in "
                  f"{r['clip_in']:.2f} clip|out {r['clip_out']:.2f}"
                  + ("".join(f" | {k} {r[k]:.3f}" for k in ("finer-centre", "every-side-aimed")
                             if k in r)), flush=True)
            rows.append(r)
    write_json(output_dir(args.out, args.quick) / "box_centre_law.json", {"cells": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
