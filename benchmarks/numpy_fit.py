"""The in-memory fit against one min/max pass of the same matrix (issue #43).

    python benchmarks/numpy_fit.py [--rows 10000000] [--dims 8] [--pairs 5]
                                   [--dtypes float32,float64] [--positive-share 1.0]
                                   [--copied] [--json PATH]
                                   [--method quantiles] [--target-miss 0.02]

Public synthetic data (standard normal, seed 0), labels 1 on a --positive-share of the
rows. For each dtype, in one process: one warm-up pair, then --pairs interleaved pairs of
(reference, fit) — the reference is ``X.min(0)`` and ``X.max(0)`` of the same matrix (the
issue's min/max pass), the fit ``dprect.fit(X, y, epsilon=1, delta=1e-6, seed=1)`` (the
planner's choice on the float-order domain; ``--method`` forces a method, e.g. the
quantile box, and ``--target-miss`` states a miss target: ``auto`` with one takes the
aimed box at its private count, docs/algorithm.md §10) — and the median fit over the
median reference. The same pairs also time a faster min/max of the same matrix, ``contiguous``:
a row-major (n, d) matrix reduced as (n·d/64, 64) rows — a contiguous inner loop of 64
values instead of d — then 64/d rows of d (when d divides 64 and n·d is a multiple of
64; else not timed): the floor of a numpy pass, to say how far the fit is from it.
``--copied`` adds the route before issue #43 in the same pairs (X read into float64, its
positive rows copied and encoded into a :class:`~dprect.engines.numpy_engine.NumpyEngine`),
for the before/after ratio. The fit's peak allocation (tracemalloc, after the timed pairs)
is printed beside. Every fit's rectangle is checked equal to the first's. Each timed fit
plans from cold (the accountant's memo, :mod:`dprect.core.accounting`, is cleared first):
the cost of one fit, not of a process that fits again. The warm-up pair also loads numba
(the compiled list pass, :mod:`dprect.engines.matrix_jit`, ~0.4 s once per process).
Nothing is asserted on times: this is a measurement; quote the machine's load (`uptime`)
with it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import tracemalloc
import warnings
from collections.abc import Callable

import numpy as np

import dprect
from dprect.core import accounting
from dprect.core.domains import FloatOrder
from dprect.core.reading import select_rows
from dprect.engines.numpy_engine import NumpyEngine


def _seconds(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def _cold_plan() -> None:
    """The accountant's memo cleared: the next plan computes every conversion again."""
    accounting.zcdp_to_dp_cks_with_order.cache_clear()
    accounting._cks_rho_estimate.cache_clear()


#: the fit's method and miss target (``--method``, ``--target-miss``)
FIT_OPTIONS: dict[str, object] = {}


def _copied_fit(X: np.ndarray, y: np.ndarray) -> dprect.FitResult:
    """The route before issue #43: float64 copy, positive rows copied, columns encoded."""
    names = [f"x{j}" for j in range(X.shape[1])]
    domains = [FloatOrder()] * X.shape[1]
    _cold_plan()
    rows = select_rows(X.astype(np.float64), y == 1, names)
    return dprect.fit_engine(NumpyEngine.from_features(rows, domains), domains, names,
                             epsilon=1.0, delta=1e-6, seed=1, **FIT_OPTIONS)


def measure(X: np.ndarray, y: np.ndarray, pairs: int, copied: bool) -> dict:
    def reference() -> object:
        return X.min(0), X.max(0)

    def fit() -> dprect.FitResult:
        _cold_plan()
        return dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=1, **FIT_OPTIONS)

    d = X.shape[1]
    wide = 64 % d == 0 and X.size % 64 == 0

    def contiguous() -> object:
        W = X.reshape(-1, 64)
        return (W.min(0).reshape(-1, d).min(0), W.max(0).reshape(-1, d).max(0))

    if wide:  # the same values as the reference
        assert all((a == b).all() for a, b in zip(reference(), contiguous(), strict=True))
    times: dict[str, list[float]] = {"reference": [], "fit": [], "copied": [],
                                     "contiguous": []}
    first: dprect.FitResult | None = None
    for i in range(pairs + 1):  # pair 0 warms up and is discarded
        ref, _ = _seconds(reference)
        flat = _seconds(contiguous)[0] if wide else None
        secs, result = _seconds(fit)
        assert isinstance(result, dprect.FitResult)
        first = first or result
        assert (result.lower_index, result.upper_index) == (first.lower_index,
                                                             first.upper_index)
        old = None
        if copied:
            old, res = _seconds(lambda: _copied_fit(X, y))
            assert isinstance(res, dprect.FitResult)
            assert (res.lower_index, res.upper_index) == (first.lower_index,
                                                          first.upper_index)
        if i:
            times["reference"].append(ref)
            times["fit"].append(secs)
            if flat is not None:
                times["contiguous"].append(flat)
            if old is not None:
                times["copied"].append(old)
    tracemalloc.start()
    fit()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    ref, fitted = statistics.median(times["reference"]), statistics.median(times["fit"])
    out = {"reference_s": ref, "fit_s": fitted, "ratio": fitted / ref,
           "fit_peak_alloc_mb": peak / 2**20, "matrix_mb": X.nbytes / 2**20,
           "method": first.method if first else None, "pairs": times}
    if times["contiguous"]:
        out["contiguous_s"] = statistics.median(times["contiguous"])
        out["contiguous_ratio"] = fitted / out["contiguous_s"]
    if times["copied"]:
        out["copied_s"] = statistics.median(times["copied"])
        out["copied_ratio"] = out["copied_s"] / ref
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--dims", type=int, default=8)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--positive-share", type=float, default=1.0)
    ap.add_argument("--copied", action="store_true",
                    help="also time the route before issue #43, in the same pairs")
    ap.add_argument("--json", help="write the measurements to this file")
    ap.add_argument("--method", default="auto", help="the fit's method (default auto)")
    ap.add_argument("--target-miss", type=float, default=None,
                    help="the fit's target_miss (auto with one: the aimed quantile box)")
    args = ap.parse_args()
    if args.method != "auto":
        FIT_OPTIONS["method"] = args.method
    if args.target_miss is not None:
        FIT_OPTIONS["target_miss"] = args.target_miss
    warnings.simplefilter("ignore")  # seeded fits: a measurement, not a release
    gen = np.random.default_rng(0)
    base = gen.standard_normal((args.rows, args.dims), dtype=np.float32)
    y = (gen.random(args.rows) < args.positive_share).astype(np.int8)
    load = os.getloadavg()  # `uptime`'s three numbers, before and after
    print(f"{args.rows:,} rows x {args.dims} features, positive share "
          f"{args.positive_share}; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")
    results = {}
    for name in args.dtypes.split(","):
        X = base if name == "float32" else base.astype(name)
        r = measure(X, y, args.pairs, args.copied)
        results[name] = r
        extra = (f"; before #43 {r['copied_s']:.3f} s ({r['copied_ratio']:.2f}x)"
                 if "copied_s" in r else "")
        if "contiguous_s" in r:
            extra += (f"; contiguous min/max {r['contiguous_s']:.3f} s (fit "
                      f"{r['contiguous_ratio']:.2f}x it)")
        print(f"{name}: min/max {r['reference_s']:.3f} s, fit ({r['method']}) "
              f"{r['fit_s']:.3f} s = {r['ratio']:.2f}x (median of {args.pairs}){extra}; "
              f"fit's peak allocation {r['fit_peak_alloc_mb']:.0f} MB of a "
              f"{r['matrix_mb']:.0f} MB matrix")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": args.rows, "dims": args.dims, "load": load,
                       "fit_options": FIT_OPTIONS,
                       "load_after": os.getloadavg(),
                       "positive_share": args.positive_share, "results": results}, fh,
                      indent=1)


if __name__ == "__main__":
    main()
