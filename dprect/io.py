"""Reading tables for the in-memory engine, and writing outputs atomically.

Parquet (a file or a directory of files) and CSV through pyarrow. Only the named columns
are read. Outputs are written to a temporary file in the target folder and renamed into
place, so a reader sees the whole file or nothing.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dprect.errors import InputDataError

FORMATS = ("parquet", "csv")


def detect_format(path: str | os.PathLike[str]) -> str:
    """``csv`` for *.csv / *.csv.gz, ``parquet`` otherwise (files or dataset folders)."""
    name = str(path).lower()
    return "csv" if name.endswith((".csv", ".csv.gz")) else "parquet"


def read_table(path: str | os.PathLike[str], columns: list[str], fmt: str | None = None
               ) -> pa.Table:
    """Read ``columns`` of a Parquet or CSV table; errors name the file and the column."""
    p = Path(path)
    if not p.exists():
        raise InputDataError(f"input {str(path)!r} does not exist")
    fmt = fmt or detect_format(p)
    try:
        if fmt == "csv":
            import pyarrow.csv as pcsv

            table = pcsv.read_csv(p)
        elif fmt == "parquet":
            import pyarrow.dataset as ds

            dataset = ds.dataset(p, format="parquet", partitioning="hive")
            missing = [c for c in columns if c not in dataset.schema.names]
            if missing:
                raise InputDataError(
                    f"input {str(path)!r} has no column(s) {', '.join(map(repr, missing))}; "
                    f"it has {', '.join(dataset.schema.names)}")
            table = dataset.to_table(columns=columns)
        else:
            raise InputDataError(f"unknown input format {fmt!r}; use one of {FORMATS}")
    except InputDataError:
        raise
    except (pa.ArrowInvalid, pa.ArrowException, OSError) as exc:
        raise InputDataError(f"cannot read {str(path)!r} as {fmt}: {exc}") from None
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise InputDataError(
            f"input {str(path)!r} has no column(s) {', '.join(map(repr, missing))}; "
            f"it has {', '.join(table.column_names)}")
    return table.select(columns)


def numeric_column(table: pa.Table, name: str, *, nulls_as_nan: bool = False) -> np.ndarray:
    """A column as float64; a non-numeric type is an error naming the column. Nulls are an
    error too, unless ``nulls_as_nan`` (then they become NaN, for a row policy to handle)."""
    col = table.column(name)
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)
            or pa.types.is_decimal(col.type) or pa.types.is_boolean(col.type)):
        raise InputDataError(f"column {name!r} must be numeric, but its type is {col.type}")
    if col.null_count and not nulls_as_nan:
        raise InputDataError(f"column {name!r} has null values")
    out = pc.cast(col, pa.float64())
    if col.null_count:
        out = pc.fill_null(out, float("nan"))
    return out.to_numpy(zero_copy_only=False)


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write ``data`` to ``path`` so that ``path`` holds the old content or the whole new
    one, never a part (temporary file in the same folder, fsync, rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
