"""The checks of an input table, as small Spark column expressions and short jobs.

:class:`TableChecks` checks columns (existence, numeric types) when it is built, with no
Spark job, and then offers

* :meth:`TableChecks.check_labels` — one aggregation that reads the label column only:
  the table is not empty, every label is 0 or 1; it also returns the number of rows
  labelled 1, which the engine uses *inside the driver only* to size its sample (a speed
  decision: the result does not depend on it, and it is never output);
* :attr:`TableChecks.positive` — the rows learned from: label 1 (and, under ``drop``, every
  feature finite);
* :attr:`TableChecks.problem` — under the ``error`` policy, rows with a null, NaN or ±inf
  feature (any label); the engine's pass reports whether one exists, and one stops the fit
  before any row is used;
* :meth:`TableChecks.raise_invalid_feature` — the error naming the first bad feature.

Messages name the problem and never carry a count or a value of the data. Expressions are
kept small on purpose: a generated Java method over 8000 bytes is never JIT-compiled by
the JVM, and a scan running interpreted code is some 30× slower.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql import types as T  # noqa: N812

from dprect.api import INVALID_ROWS
from dprect.errors import InputDataError, ParameterError
from dprect.spark.source import spark_message
from dprect.spark.sql import all_of, any_of, as_double, finite, literal, seen

_NUMERIC = (T.NumericType, T.BooleanType)


class TableChecks:
    """What makes a table learnable, for ``features`` and ``label`` of ``df``.

    ``invalid_rows``: ``drop`` (rows with a null, NaN or ±inf feature are left out — a
    row-local filter, so neighbouring tables stay neighbouring), ``error`` (such a row
    anywhere refuses the table), or None (no checks: every row labelled 1 is used as is).
    ``require_positives``: refuse a table with no positive row left.
    Raises :class:`InputDataError` at once for a missing or non-numeric column.
    """

    def __init__(self, df: DataFrame, features: Sequence[str], label: str, *,
                 invalid_rows: str | None = "error", require_positives: bool = False) -> None:
        if invalid_rows is not None and invalid_rows not in INVALID_ROWS:
            raise ParameterError(f"invalid_rows must be one of {', '.join(INVALID_ROWS)}; "
                                 f"got {invalid_rows!r}")
        names = [features] if isinstance(features, str) else list(features)
        if not names:
            raise ParameterError("give at least one feature column")
        types = {f.name: f.dataType for f in df.schema.fields}
        missing = [c for c in [*names, label] if c not in types]
        if missing:
            raise InputDataError(
                f"the input has no column(s) {', '.join(map(repr, missing))}; "
                f"it has {', '.join(map(repr, types)) or 'no columns'}")
        for c in [*names, label]:
            if not isinstance(types[c], _NUMERIC):
                raise InputDataError(
                    f"column {c!r} must be numeric, but its type is {types[c].simpleString()}")
        self.df = df
        self.features = names
        self.label = label
        self.invalid_rows = invalid_rows
        self.require_positives = require_positives
        self._types = types
        self._label_value = as_double(label)
        is_one = f"{self._label_value} = {literal(1.0)}"
        #: Spark SQL predicates (text, see :mod:`dprect.spark.sql`): the rows learned from,
        #: and (``error`` policy) the rows that refuse the table. Under ``error`` a problem
        #: row stops the fit before any row is used, so ``positive`` need not test features.
        self.positive: str = is_one
        self.problem: str | None = None
        if invalid_rows == "drop":
            self.positive = all_of([is_one, *map(self._finite, names)])
        elif invalid_rows == "error":
            self.problem = any_of(f"NOT coalesce({self._finite(c)}, false)" for c in names)

    def _finite(self, name: str) -> str:
        """True where the feature is a finite number; null where it is null."""
        return finite(name, isinstance(self._types[name], T.FloatType | T.DoubleType))

    def _collect(self, frame: DataFrame) -> dict:
        try:
            return frame.collect()[0].asDict()
        except PySparkException as exc:
            raise InputDataError(f"cannot read the input: {spark_message(exc)}") from None

    def check_labels(self) -> int:
        """One job over the label column: raise if the table is empty or a label is null or
        not 0/1 (when checking); return the number of rows labelled 1 (internal only)."""
        y = self._label_value
        row = self._collect(self.df.selectExpr(
            "count(1) AS rows",
            f"{seen(f'{y} IS NULL')} AS label_null",
            f"{seen(f'{y} IS NOT NULL AND {y} NOT IN ({literal(0.0)}, {literal(1.0)})')}"
            " AS label_bad",
            f"count(CASE WHEN {y} = {literal(1.0)} THEN 1 END) AS ones"))
        if self.invalid_rows is not None:
            if not row["rows"]:
                raise InputDataError("the input table is empty (zero rows)")
            if row["label_null"]:
                raise InputDataError(
                    f"labels must be 0 or 1; column {self.label!r} has null values")
            if row["label_bad"]:
                raise InputDataError(
                    f"labels must be 0 or 1; column {self.label!r} holds other values")
            if self.require_positives and not row["ones"]:
                self.raise_no_positives()
        return int(row["ones"])

    def check_features(self) -> None:
        """One aggregation: the ``error`` policy's feature check, and (when required) that
        a positive row is left. Used where no prefetch pass does it."""
        aggs = [f"{seen(self.positive)} AS positive"]
        if self.problem is not None:
            aggs.append(f"{seen(self.problem)} AS problem")
        row = self._collect(self.df.selectExpr(*aggs))
        if row.get("problem"):
            self.raise_invalid_feature()
        if self.require_positives and not row["positive"]:
            self.raise_no_positives()

    def raise_invalid_feature(self) -> NoReturn:
        """Name the first feature holding a null, NaN or ±inf (one job; error path only)."""
        bad = self._collect(self.df.selectExpr(*[
            f"{seen(f'NOT coalesce({self._finite(c)}, false)')} AS f{j}"
            for j, c in enumerate(self.features)]))
        name = next((c for j, c in enumerate(self.features) if bad[f"f{j}"]),
                    self.features[0])
        hint = " (the 'drop' invalid-rows policy drops such rows)" \
            if self.require_positives else ""
        raise InputDataError(f"feature {name!r} has null, NaN or infinite values{hint}")

    def raise_no_positives(self) -> NoReturn:
        raise InputDataError(f"the input has no positive rows ({self.label} = 1)")
