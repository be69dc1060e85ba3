"""The checks of an input table: its schema, and the rows learned from as small Spark
column expressions.

:class:`TableChecks` checks the columns (existence, types) and the positive label against
the label column's type when it is built, with no Spark job. Nothing it decides depends on
a row's value: a label other than the positive label — another value, a null — makes a
negative row, and a table with no rows or no positives is an ordinary input (the fit's
pads make that private). It then offers

* :attr:`TableChecks.positive` — the rows learned from: label equal to the positive
  label (and, under ``drop``, every feature finite);
* :meth:`TableChecks.count_positives` — one aggregation over the label column: the
  number of rows with the positive label, which the engine uses *inside the driver only*
  to size its sample (a speed aid: no result, message, refusal or exit code depends on
  it, and it is never output or logged) — and, after the reservation, for a pending
  ``auto`` plan on ``prefetch`` where no labelled row is dropped (not ``drop``), as the exact
  count of the rows learned from (:meth:`TableChecks.label_count`; that count then gets
  its noise like any other; elsewhere the pass counts the rows learned from itself,
  :mod:`dprect.engines.spark.prefetch`, "The count");
* :attr:`TableChecks.problem` — under the opt-in ``error`` policy, rows with a null, NaN
  or ±inf feature (any label); the engine's pass reports whether one exists, and one
  stops the fit before any row is used. That refusal depends on the data: it is OUTSIDE
  the privacy guarantee;
* :meth:`TableChecks.raise_invalid_feature` — the ``error`` policy's error, naming the
  first bad feature.

Messages name the problem and never carry a count or a value of the data. Expressions are
kept small on purpose: a generated Java method over 8000 bytes is never JIT-compiled by
the JVM, and a scan running interpreted code is some 30× slower.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NoReturn

from pyspark.sql import DataFrame
from pyspark.sql import types as T  # noqa: N812

from dprect.core.errors import InputDataError, ParameterError
from dprect.core.labels import check_label_value, resolve_positive_label
from dprect.core.request import InvalidRows
from dprect.engines.input_errors import missing_columns, not_label_kind, not_numeric
from dprect.engines.spark.prefetch import LabelCount
from dprect.engines.spark.source import SPARK_ERRORS, spark_message
from dprect.engines.spark.sql import all_of, any_of, as_double, finite, ident, literal, seen

_NUMERIC = (T.NumericType, T.BooleanType, T.NullType)  # null type: a column of nulls
#: above this many features the finite checks are one flat ``forall`` over an array: the
#: optimizer rebuilds a conjunction as a left-deep tree, and one of ~1000 terms overflows
#: the stack of the thread that plans the query (measured at 1024 features)
FLAT_CHECKS = 128
_STRING = (T.StringType, T.VarcharType, T.CharType)


def integral_type(data_type: T.DataType) -> bool:
    """Whether a Spark type holds integers only: an integer type or a decimal of scale 0
    (Spark reads Parquet's uint64 as decimal(20,0)) — as
    :func:`dprect.engines.bounds_input.integral_arrow` reads Arrow's."""
    return isinstance(data_type, T.IntegralType) or (
        isinstance(data_type, T.DecimalType) and data_type.scale == 0)


def label_kind(data_type: T.DataType, column: str, role: str = "label") -> str:
    """What label column ``column`` can hold, from its Spark type only (the kinds of
    :data:`dprect.core.labels.LABEL_KINDS`); another type is refused, naming it. ``role``
    names the column's use in that message (a group column uses the same kinds)."""
    if isinstance(data_type, T.BooleanType):
        return "boolean"
    if isinstance(data_type, T.NumericType):
        return "numeric"
    if isinstance(data_type, _STRING):
        return "string"
    if isinstance(data_type, T.NullType):
        return "null"
    raise not_label_kind(role, column, data_type.simpleString())


def string_literal(text: str) -> str:
    """An exact Spark string literal that no text can escape: the UTF-8 bytes in hex."""
    return f"CAST(unhex('{text.encode('utf-8').hex()}') AS STRING)"


def label_equals(column: str, kind: str, value: bool | float | int | str | None) -> str:
    """SQL text: true where the label equals ``value`` (from
    :func:`dprect.core.labels.resolve_positive_label`), false or null elsewhere (null labels
    included). Numbers are compared in the column's own type, as the numpy engine does: an
    int (the label of a column of an integer type) exactly, as a long or a decimal(38,0)
    (beyond both: no row), others as doubles."""
    if value is None or kind == "null":
        return "false"
    if kind == "boolean":
        return f"({ident(column)} = {'true' if value else 'false'})"
    if kind == "string":
        return f"({ident(column)} = {string_literal(str(value))})"
    if isinstance(value, int) and not isinstance(value, bool):
        if -(1 << 63) <= value < 1 << 63:
            return f"({ident(column)} = CAST('{value}' AS BIGINT))"
        if abs(value) < 10**38:
            return f"({ident(column)} = CAST('{value}' AS DECIMAL(38,0)))"
        return "false"
    return f"({as_double(column)} = {literal(float(value))})"


def type_name(obj: object) -> str:
    """``obj``'s type as a message names it: its package and name (``pandas.DataFrame``),
    a built-in type's name alone (``NoneType``)."""
    package = type(obj).__module__.split(".")[0]
    name = type(obj).__name__
    return name if package == "builtins" else f"{package}.{name}"


def check_spark_frame(df: object) -> None:
    """Refuse, by its type alone, a ``df`` that is no Spark DataFrame (classic or
    Connect): one :class:`InputDataError` naming its type and pointing an in-memory table
    at :func:`dprect.fit` — where the first schema read raised Python's
    ``AttributeError`` ('no attribute schema')."""
    if not isinstance(df, DataFrame):
        raise InputDataError(
            f"the Spark engine reads a Spark DataFrame, got {type_name(df)}: for an "
            "in-memory table (a pandas DataFrame, a numpy array, a pyarrow Table) use "
            "dprect.fit (or dprect.bounds, dprect.describe)")


class TableChecks:
    """What the fit learns from, for ``features`` and ``label`` of ``df``.

    ``positive_label``: the label of the positive rows (default 1; a number, a string, a
    boolean, or :class:`dprect.core.labels.LabelText` read against the column's type); it must be
    comparable with the label column's type (numeric ↔ number or boolean, boolean ↔
    boolean or 0/1, string ↔ string), a decision from the schema only.
    ``invalid_rows``: ``drop`` (rows with a null, NaN or ±inf feature are left out — a
    row-local filter, so neighbouring tables stay neighbouring), ``error`` (such a row
    anywhere refuses the table — data-dependent, outside the guarantee), or None (no
    checks: every positive row is used as is; the caller vouches for the features).
    Raises at once, with no Spark job, for a missing column, a non-numeric feature or a
    label column that cannot hold the positive label.
    """

    def __init__(self, df: DataFrame, features: Sequence[str], label: str, *,
                 invalid_rows: InvalidRows | str | None, positive_label: object) -> None:
        if invalid_rows is not None:
            invalid_rows = InvalidRows.parse(invalid_rows, "invalid_rows")
        check_label_value(positive_label)
        names = [features] if isinstance(features, str) else list(features)
        if not names:
            raise ParameterError("give at least one feature column")
        check_spark_frame(df)
        types = {f.name: f.dataType for f in df.schema.fields}
        missing = [c for c in [*names, label] if c not in types]
        if missing:
            raise missing_columns(None, missing, list(types))
        for c in names:
            if not isinstance(types[c], _NUMERIC):
                raise not_numeric(c, types[c].simpleString())
        kind = label_kind(types[label], label)
        self.positive_label = resolve_positive_label(
            positive_label, kind, label, integral=integral_type(types[label]),
            single=isinstance(types[label], T.FloatType))  # a float32 label column
        #: the label column's kind (:func:`label_kind`), for a reader of the files
        self.label_kind = kind
        self.df = df
        self.features = names
        self.label = label
        self.invalid_rows = invalid_rows
        self._types = types
        is_positive = label_equals(label, kind, self.positive_label)
        self._is_positive = is_positive
        #: Spark SQL predicates (text, see :mod:`dprect.engines.spark.sql`): the rows learned from,
        #: and (``error`` policy) the rows that refuse the table. Under ``error`` a problem
        #: row stops the fit before any row is used, so ``positive`` need not test features.
        self.positive: str = is_positive
        self.problem: str | None = None
        #: among the rows with the positive label, those not learned from (SQL text; None:
        #: every one is): ``positive`` ≡ label AND NOT ``dropped`` (:meth:`label_count`)
        self.dropped: str | None = None
        flat = len(names) > FLAT_CHECKS
        if invalid_rows is InvalidRows.DROP:
            kept = [self._all_finite()] if flat else list(map(self._finite, names))
            self.positive = all_of([is_positive, *kept])
            # a finite check is null on a null feature: coalesced, the row is dropped
            self.dropped = f"NOT coalesce({all_of(kept)}, false)"
        elif invalid_rows is InvalidRows.ERROR:
            self.problem = (f"NOT {self._all_finite()}" if flat else
                            any_of(f"NOT coalesce({self._finite(c)}, false)" for c in names))

    def _all_finite(self) -> str:
        """True where every feature is a finite number, false otherwise (nulls included):
        one ``forall`` over an array of the features as doubles, whatever their number."""
        if any(isinstance(self._types[c], T.NullType) for c in self.features):
            return "false"
        values = ", ".join(as_double(c) for c in self.features)
        return (f"forall(array({values}), x -> coalesce(abs(x) < {literal(math.inf)}, "
                f"false))")

    def _finite(self, name: str) -> str:
        """True where the feature is a finite number; null or false where it is null."""
        if isinstance(self._types[name], T.NullType):
            return "false"
        return finite(name, isinstance(self._types[name], T.FloatType | T.DoubleType))

    def _collect(self, frame: DataFrame) -> dict:
        try:
            return frame.collect()[0].asDict()
        except SPARK_ERRORS as exc:
            raise InputDataError(f"cannot read the input: {spark_message(exc)}") from None

    def count_positives(self) -> int:
        """One job over the label column: the number of rows with the positive label.
        A speed aid for the engine, used inside the driver only; never a reason to refuse
        or a part of any message."""
        row = self._collect(self.df.selectExpr(
            f"count(CASE WHEN {self._is_positive} THEN 1 END) AS ones"))
        return int(row["ones"])

    def label_count(self, rows: int | None) -> LabelCount:
        """``rows`` — :meth:`count_positives`' answer, the exact number of rows with the
        positive label, or None: not counted — as a
        :class:`~dprect.engines.spark.prefetch.LabelCount`, with :attr:`dropped`: the
        rows learned from (:attr:`positive`) are the labelled rows on which ``dropped``
        does not hold, so ``rows`` is their count where ``dropped`` is None."""
        return LabelCount(rows, self.dropped)

    def count_learned(self) -> int:
        """One aggregation: the number of rows learned from (:attr:`positive`) — the exact
        count ``auto``'s private count adds its noise to (the numpy engine's row count),
        run only after the budget is reserved; never output without that noise."""
        row = self._collect(self.df.selectExpr(
            f"count(CASE WHEN {self.positive} THEN 1 END) AS learned"))
        return int(row["learned"])

    def check_features(self) -> None:
        """One aggregation: the ``error`` policy's feature check (data-dependent, outside
        the guarantee). Does nothing under the other policies."""
        if self.problem is None:
            return
        row = self._collect(self.df.selectExpr(f"{seen(self.problem)} AS problem"))
        if row["problem"]:
            self.raise_invalid_feature()

    def raise_invalid_feature(self) -> NoReturn:
        """Name the first feature holding a null, NaN or ±inf (one job; error path only)."""
        bad = self._collect(self.df.selectExpr(*[
            f"{seen(f'NOT coalesce({self._finite(c)}, false)')} AS f{j}"
            for j, c in enumerate(self.features)]))
        name = next((c for j, c in enumerate(self.features) if bad[f"f{j}"]),
                    self.features[0])
        raise InputDataError(f"feature {name!r} has null, NaN or infinite values (refused "
                             "under the 'error' invalid-rows policy; the default 'drop' "
                             "drops such rows)")
