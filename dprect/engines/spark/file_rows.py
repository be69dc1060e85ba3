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
    paths = plain_parquet_files(df)
    return None if paths is None else _footer_rows(paths)


def plain_parquet_files(df: DataFrame, *, renames: bool = True) -> list[str] | None:
    """The local paths of the Parquet files ``df`` is a plain read of (module notes), in
    Spark's listing order, or None. ``renames=False``: only projections that keep columns
    under their names (no expression, no alias), so that each column of ``df`` is the
    files' column of that name."""
    if is_connect(df):
        return None
    try:
        node = df._jdf.queryExecution().optimizedPlan()
        while node.getClass().getSimpleName() in _PASS_THROUGH:
            if not renames:
                items = node.projectList()
                if any(items.apply(i).getClass().getSimpleName() != "AttributeReference"
                       for i in range(items.size())):
                    return None
            node = node.child()
        if node.getClass().getSimpleName() != "LogicalRelation":
            return None
        relation = node.relation()
        if (relation.getClass().getSimpleName() != "HadoopFsRelation"
                or not relation.fileFormat().getClass().getSimpleName()
                .endswith("ParquetFileFormat")):
            return None
        paths = []
        for path in relation.location().inputFiles():
            url = urlparse(path)
            if url.scheme != "file":
                return None
            paths.append(unquote(url.path))
        return paths
    except Exception:  # a speed aid: any failure means "not known"
        return None


def _footer_rows(paths: list[str]) -> int | None:
    """The sum of the Parquet files' ``num_rows``; None where pyarrow reads no footer."""
    import pyarrow.parquet as pq

    try:
        return sum(int(pq.read_metadata(path).num_rows) for path in paths)
    except Exception:  # a speed aid: any failure means "not known"
        return None


__all__ = ["file_rows", "plain_parquet_files"]
