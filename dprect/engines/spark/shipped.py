"""The positive rows as the ``collect`` and ``pass`` strategies read them: raw feature values.

Neither plan computes a sort value or a tie hash in SQL: both ship each feature's raw
value and encode it with the core's own code (:meth:`Domain.encode
<dprect.core.domains.Domain.encode>`, :meth:`TieBreaker.refine
<dprect.core.ties.TieBreaker.refine>`) — on the driver (``collect``) or in Spark's Python
workers (``pass``). What is shipped: a FloatType or DoubleType column as it is (float32
stays float32: half the bytes; widening it to float64 is exact, in numpy as in Spark's
cast), any other numeric type (integers, decimals, booleans, the null type) as Spark's
``CAST(x AS DOUBLE)`` (:func:`~dprect.engines.spark.sql.as_double`) — the very double every
Spark strategy's ``sort_sql`` encodes and the in-memory input path
(:func:`dprect.engines.arrow_input.numeric_column`) reads. Arrow moves bits, so the
encoder sees, bit for bit, the float64 the numpy engine encodes for the same row.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import types as T  # noqa: N812

from dprect.engines.spark.pass_kernel import BAD, feature_column
from dprect.engines.spark.sql import all_of, any_of, as_double, ident

__all__ = ["BAD", "DOUBLE_BYTES", "feature_column", "shipped_rows", "shipped_widths"]

#: bytes shipped per value of a feature that is not FloatType
DOUBLE_BYTES = 8


def shipped_widths(data: DataFrame, names: Sequence[str]) -> list[int]:
    """Bytes per row each feature is shipped as: 4 for FloatType, 8 for every other type
    (from the schema only)."""
    types = {f.name: f.dataType for f in data.schema.fields}
    return [4 if isinstance(types.get(n), T.FloatType) else DOUBLE_BYTES for n in names]


def shipped_rows(data: DataFrame, names: Sequence[str], positive: str | None,
                 problem: str | None) -> DataFrame:
    """The rows where ``positive`` holds (every row when None) with feature j's raw value
    as column ``_x{j}`` (:func:`~dprect.engines.spark.pass_kernel.feature_column`; module
    notes) and, when ``problem`` is given, the rows where it holds too, flagged in column
    ``_bad`` (:data:`~dprect.engines.spark.pass_kernel.BAD`): reported, never used."""
    types = {f.name: f.dataType for f in data.schema.fields}
    keep = [] if positive is None else [positive]
    flag: list[str] = []
    if problem is not None:
        keep = [any_of([problem, all_of(keep)])] if keep else [problem]
        flag = [f"coalesce({problem}, false) AS {BAD}"]
    rows = data.where(all_of(keep)) if keep else data
    return rows.selectExpr(*flag, *(
        f"{ident(n) if isinstance(types[n], T.FloatType | T.DoubleType) else as_double(n)}"
        f" AS {feature_column(j)}" for j, n in enumerate(names)))
