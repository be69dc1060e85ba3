"""A small table every product reads (the output tests' input): features f0, f1, a 0/1
label, a group g."""

from __future__ import annotations

from pathlib import Path


def sink_table(folder: Path) -> Path:
    """Write the table as ``folder/sinks.parquet``; its path."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    gen = np.random.default_rng(40)
    n = 3000
    x = gen.uniform(0, 10, (n, 2))
    y = ((x > 2) & (x < 7)).all(axis=1).astype(np.int64)
    path = folder / "sinks.parquet"
    pq.write_table(pa.table({"f0": x[:, 0], "f1": x[:, 1], "label": y,
                             "g": np.where(gen.random(n) < 0.5, "a", "b")}), path)
    return path
