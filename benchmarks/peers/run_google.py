"""Google's differential-privacy library through its Python binding ``python-dp`` (PyDP):
a DP mean and a DP sum of each column with NO bounds given, so that the library runs its
own ApproxBounds first (``pydp.algorithms.laplacian.BoundedMean`` / ``BoundedSum``,
``dtype="float"``, ``delta=0``: pure ε-DP, ε split between the bounds and the aggregate
by the library itself). Runs inside the ``pydp`` virtual environment (``make
bench-peers-venvs``); see ``benchmarks/peers_real.py``.

Speed. ApproxBounds costs about 60 µs per entry here, so adding a 336,776-row column 20
times per ε would take hours. Each column's entries are therefore added ONCE per algorithm
(``add_entries``), the algorithm's summary is taken (``serialize``), and every run merges
that summary into a FRESH algorithm built with the run's ε (``merge`` then ``result``):
the library's own distributed-aggregation path. A summary holds exact counts and partial
sums only; every bit of noise — the ApproxBounds histogram's and the aggregate's — is drawn
by ``result``, so each run is an independent release. The bounds ApproxBounds picks are not
exposed by the binding (``lower``/``upper`` are null).
"""

from __future__ import annotations

import numpy as np
from peer_common import (
    Cell,
    Clock,
    append,
    done_cells,
    key,
    load_manifest,
    parse_args,
    run_record,
)


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    import pydp
    from pydp.algorithms.laplacian import BoundedMean, BoundedSum

    manifest = load_manifest(args.manifest)
    done = done_cells(args.out)
    runs = int(manifest["runs"])
    epsilons = [float(e) for e in manifest["epsilons"]]
    for col in manifest["columns"]:
        todo = [e for e in epsilons
                if key("google", col["table"], col["column"], e) not in done]
        if not todo:
            continue
        clock = Clock()
        values = np.load(col["npy"]).astype(np.float64).tolist()
        summaries = {}
        for name, algo in (("mean", BoundedMean), ("sum", BoundedSum)):
            a = algo(epsilon=1.0, delta=0.0, dtype="float")  # ε is the run's, set at merge
            a.add_entries(values)
            summaries[name] = a.serialize()
        build = clock.seconds()
        for i, eps in enumerate(todo):
            cell_clock = Clock()
            out = []
            for _ in range(runs):
                got = {}
                for name, algo in (("mean", BoundedMean), ("sum", BoundedSum)):
                    a = algo(epsilon=eps, delta=0.0, dtype="float")
                    a.merge(summaries[name])
                    try:
                        got[name] = a.result()
                    except Exception:  # ApproxBounds found no bin: the library's error
                        got[name] = None
                out.append(run_record(got["mean"], got["sum"]))
            cell = Cell(col["table"], col["column"], eps, col["npy"], col["parquet"],
                        col["n"])
            # the one-off summary build is charged to the column's first ε
            append(args.out, "google", "python-dp", pydp.__version__, cell, out,
                   cell_clock.seconds() + (build if i == 0 else 0.0))
            print(f"google {col['table']}/{col['column']} ε={eps:g} done", flush=True)


if __name__ == "__main__":
    main()
