"""The ``prefetch`` pass's sample read from the Parquet files by the driver: no Spark job.

The pass's sample (:func:`~dprect.engines.spark.prefetch.take_sample`: the first
:data:`~dprect.engines.spark.prefetch.SAMPLE_ROWS` rows learned from, each feature as a
double) is a Spark job of its own: a query planned, a ``limit`` run, its rows pickled
back and turned into ``Row`` objects — on the d = 8 × 10^7-row cell of issue #43 about
as much driver time as a fifth of the scan it is measured against. Where the frame is a
plain read of local Parquet files that keeps its columns under their names
(:func:`~dprect.engines.spark.file_rows.plain_parquet_files` with ``renames=False``),
:func:`file_sample` reads the same kind of rows with pyarrow instead: the files in
Spark's listing order, batch by batch, the label and the features only, until it holds
``limit`` rows learned from — the label equal to the positive label (numbers compared as
doubles, booleans and strings as they are: :func:`~dprect.engines.spark.checks.label_equals`)
and, under ``drop``, every feature a finite number.

A speed aid inside the driver, like the Spark sample it stands in for: the sample sets
the pass's thresholds and, with the files' row count, the estimate of the positives
(:func:`estimated_positives`), given together as a :class:`PassSample` — the record the
Spark sample's reader gives too, so the engine takes either the same way — and both
change the speed only, never an answer (:mod:`dprect.engines.spark.prefetch`, the
module notes). Any doubt (a column missing from a file, a type pyarrow cannot cast, an
unreadable file) gives None, and the Spark sample runs as before. On one file read in
one split the rows are the ones Spark's ``limit`` returns: the first rows learned from
in file order, so the same thresholds. Nothing read here is output or logged.

The driver reads at most :data:`READ_CELLS` values (rows × columns read): a table whose
first rows hold few rows learned from (rare positives, or positives stored last) gives
None past it, and the Spark sample — a job in the executors — finds them instead; the
driver never scans the table. Batches hold about :data:`BATCH_CELLS` values whatever
the width, so a wide table is not read a 65,536-row batch at a time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame

from dprect.engines.spark.file_rows import plain_parquet_files

#: values (rows × columns read) per batch: 65,536 rows of 8 features and the label (the
#: read stops after the batch that completes the sample)
BATCH_CELLS = 65_536 * 9
#: values the driver reads at most before leaving the sample to Spark (about 10^6 rows
#: of 8 features and the label)
READ_CELLS = 1 << 23
#: bytes per read of a column chunk (pyarrow's buffered stream)
READ_BUFFER = 1 << 20


@dataclass(frozen=True)
class PassSample:
    """The pass's sample as each of its readers gives it — :func:`file_sample` here, the
    Spark sample (:func:`~dprect.engines.spark.prefetch.take_sample`) in
    :meth:`SparkEngine.presample <dprect.engines.spark.engine.SparkEngine.presample>`:
    ``values``, feature j's values (float64) of the sampled rows under key j, and
    ``estimate``, about how many of the table's rows are learned from
    (:func:`estimated_positives`; None where the table's row count was not given). Inside
    the driver only (module notes)."""

    values: dict[int, np.ndarray]
    estimate: int | None


def file_sample(df: DataFrame, names: Sequence[str], label: str, kind: str,
                value: bool | float | str | None, limit: int, rows: int | None = None, *,
                finite: bool) -> PassSample | None:
    """Up to ``limit`` rows of ``df`` learned from, read from its files (module notes),
    with the estimate of the positives among the table's ``rows`` rows (None: no
    estimate) from how many rows were read up to the last sampled one (all of them when
    fewer than ``limit`` were found); None where the files cannot answer.
    ``kind``/``value``: the label column's kind and the positive label
    (:class:`~dprect.engines.spark.checks.TableChecks`); ``finite``: only rows whose
    features are all finite (``drop``)."""
    paths = plain_parquet_files(df, renames=False)
    if paths is None or value is None or kind not in ("numeric", "boolean", "string"):
        return None
    try:
        got = _read(paths, list(names), label, kind, value, finite, limit)
    except Exception:  # a speed aid: any failure means the Spark sample runs
        return None
    if got is None:
        return None
    values, read = got
    return PassSample(values, None if rows is None
                      else estimated_positives(len(values[0]), read, rows, limit))


def _read(paths: list[str], names: list[str], label: str, kind: str,
          value: bool | float | str, finite: bool, limit: int
          ) -> tuple[dict[int, np.ndarray], int] | None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from dprect.engines.arrow_input import label_matches

    chunks: list[np.ndarray] = []
    found = read = 0
    width = len(names) + 1
    batch_rows = max(1, BATCH_CELLS // width)
    for path in paths:
        # no pre-buffered row group, no read-ahead threads: the first pages only
        source = pq.ParquetFile(path, pre_buffer=False, buffer_size=READ_BUFFER)
        if any(c not in source.schema_arrow.names for c in [*names, label]):
            return None
        for batch in source.iter_batches(batch_size=batch_rows, columns=[*names, label],
                                         use_threads=False):
            if (read + batch.num_rows) * width > READ_CELLS:
                return None  # not the driver's to scan: the Spark sample runs
            labels = batch.column(label)
            if kind == "numeric":  # compared in the column's type, as the pass compares
                keep = label_matches(pa.table({label: labels}), label, value)
            else:
                equal = pc.equal(labels, pa.scalar(value, labels.type))
                keep = pc.fill_null(equal, False).to_numpy(zero_copy_only=False)
            x = np.column_stack([
                pc.cast(batch.column(c), pa.float64(), safe=False)
                .to_numpy(zero_copy_only=False) for c in names])
            if finite:
                keep &= np.isfinite(x).all(axis=1)
            idx = np.flatnonzero(keep)[:limit - found]
            chunks.append(x[idx])
            found += len(idx)
            if found >= limit:
                return _columns(chunks, len(names)), read + int(idx[-1]) + 1
            read += len(keep)
    return _columns(chunks, len(names)), read


def _columns(chunks: list[np.ndarray], d: int) -> dict[int, np.ndarray]:
    rows = np.concatenate(chunks) if chunks else np.empty((0, d))
    return {j: np.ascontiguousarray(rows[:, j]) for j in range(d)}


def estimated_positives(found: int, read: int, rows: int, limit: int) -> int:
    """About how many of the table's ``rows`` rows are learned from, from a sample of
    ``found`` of them among the first ``read`` rows: ``found`` itself when the sample is
    short of ``limit`` (every row was read), else ``rows`` × ``found`` / ``read`` — the
    one formula of both samples' estimates
    (:func:`~dprect.engines.spark.prefetch.sampled_positives` gives it the rows read in
    each partition it reached)."""
    if found < limit:
        return found
    return math.ceil(rows * found / max(1, read))


__all__ = ["BATCH_CELLS", "READ_CELLS", "PassSample", "estimated_positives", "file_sample"]
