"""A table's row count from its files' metadata, with no Spark job: a speed aid.

:func:`file_rows` answers for a DataFrame that is a plain read of Parquet files (only
projections over one file relation: no filter, join, union, aggregate, sample or
generator, so every row of the files is a row of the frame and no other) whose files the
driver can open (``file:`` paths): the sum of the files' ``num_rows`` footers (pyarrow).
Anything else — another format, a filtered frame, a remote store, a file that cannot be
read — gives None. Nothing is read but the footers.

Used inside the driver only, like the label count it stands in for
(:func:`dprect.engines.spark.fit.prepare_fit`): it bounds the positives from above, so a
route taken on it (``auto``'s ``collect`` when the table's rows fit the driver budget)
is memory-safe whatever the labels, and it scales the pass's sample into a hint. No
answer, message, refusal or exit code depends on it, and it is never output or logged.
"""

from __future__ import annotations

from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame

from dprect.engines.spark.remote import is_connect

#: the logical nodes a plain read may have above its file relation (every row kept)
_PASS_THROUGH = ("Project",)


def file_rows(df: DataFrame) -> int | None:
    """The number of rows of ``df`` from its Parquet footers, or None (module notes)."""
    if is_connect(df):
        return None
    try:
        node = df._jdf.queryExecution().optimizedPlan()
        while node.getClass().getSimpleName() in _PASS_THROUGH:
            node = node.child()
        if node.getClass().getSimpleName() != "LogicalRelation":
            return None
        relation = node.relation()
        if (relation.getClass().getSimpleName() != "HadoopFsRelation"
                or not relation.fileFormat().getClass().getSimpleName()
                .endswith("ParquetFileFormat")):
            return None
        paths = list(relation.location().inputFiles())
        return _footer_rows(paths)
    except Exception:  # a speed aid: any failure means "not known"
        return None


def _footer_rows(paths: list[str]) -> int | None:
    """The sum of the Parquet files' ``num_rows``; None unless every path is a local
    (``file:``) file whose footer pyarrow reads."""
    import pyarrow.parquet as pq

    total = 0
    for path in paths:
        url = urlparse(path)
        if url.scheme != "file":
            return None
        total += int(pq.read_metadata(unquote(url.path)).num_rows)
    return total


__all__ = ["file_rows"]
