"""Learning a private rectangle from a Spark DataFrame.

:func:`fit_dataframe` validates the table (:func:`validate_dataframe`), keeps the positive
rows in Spark, and runs :func:`dprect.api.fit_engine` on a
:class:`~dprect.spark.engine.SparkEngine`: planning, accounting and every random draw stay
in the private core, so for the same seed the result is identical to :func:`dprect.fit` on
the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql import types as T  # noqa: N812

from dprect.accounting import ADD_REMOVE
from dprect.api import INVALID_ROWS, GridArg, feature_names, fit_engine, resolve_domains
from dprect.errors import InputDataError, ParameterError
from dprect.planner import plan
from dprect.result import FitResult
from dprect.spark.engine import DEFAULT_PLAN, PLANS, SparkEngine, prefetch_specs, quote
from dprect.spark.source import spark_message

_NUMERIC = (T.NumericType, T.BooleanType)


def _column_types(df: DataFrame) -> dict[str, T.DataType]:
    return {f.name: f.dataType for f in df.schema.fields}


def _invalid_feature(x: Any, dtype: T.DataType) -> Any:
    """True where a feature value is null, NaN or ±inf."""
    bad = x.isNull()
    if isinstance(dtype, T.FloatType | T.DoubleType):
        bad = bad | F.isnan(x) | (F.abs(x) == F.lit(float("inf")))
    return bad


def _check(df: DataFrame, features: Sequence[str], label: str, *, invalid_rows: str,
           require_positives: bool) -> DataFrame:
    """The checks of :func:`validate_dataframe` / :func:`prepare_dataframe` (one job)."""
    if invalid_rows not in INVALID_ROWS:
        raise ParameterError(f"invalid_rows must be one of {', '.join(INVALID_ROWS)}; "
                             f"got {invalid_rows!r}")
    names = [features] if isinstance(features, str) else list(features)
    if not names:
        raise ParameterError("give at least one feature column")
    types = _column_types(df)
    missing = [c for c in [*names, label] if c not in types]
    if missing:
        raise InputDataError(
            f"the input has no column(s) {', '.join(map(repr, missing))}; "
            f"it has {', '.join(map(repr, types)) or 'no columns'}")
    for c in [*names, label]:
        if not isinstance(types[c], _NUMERIC):
            raise InputDataError(
                f"column {c!r} must be numeric, but its type is {types[c].simpleString()}")
    y = F.col(quote(label))
    invalid = [_invalid_feature(F.col(quote(c)), types[c]) for c in names]
    valid_row = ~reduce(lambda a, b: a | b, invalid)
    positive = y.cast("double") == F.lit(1.0)
    if invalid_rows == "drop":
        positive = positive & valid_row
    flag = lambda cond: F.max(F.when(cond, 1).otherwise(0))  # noqa: E731 — 0/1, no counts
    aggs = [flag(F.lit(True)).alias("any_row"),
            flag(y.isNull()).alias("label_null"),
            flag(y.isNotNull() & ~y.cast("double").isin(0.0, 1.0)).alias("label_bad"),
            flag(positive).alias("any_positive")]
    if invalid_rows == "error":
        aggs += [flag(bad).alias(f"invalid{j}") for j, bad in enumerate(invalid)]
    try:
        row = df.agg(*aggs).collect()[0].asDict()
    except PySparkException as exc:
        raise InputDataError(f"cannot read the input: {spark_message(exc)}") from None
    if not row["any_row"]:
        raise InputDataError("the input table is empty (zero rows)")
    if row["label_null"]:
        raise InputDataError(f"labels must be 0 or 1; column {label!r} has null values")
    if row["label_bad"]:
        raise InputDataError(f"labels must be 0 or 1; column {label!r} holds other values")
    if invalid_rows == "error":
        for j, c in enumerate(names):
            if row[f"invalid{j}"]:
                raise InputDataError(
                    f"feature {c!r} has null, NaN or infinite values"
                    + (" (the 'drop' invalid-rows policy drops such rows)"
                       if require_positives else ""))
    if require_positives and not row["any_positive"]:
        raise InputDataError(f"the input has no positive rows ({label} = 1)")
    return df.filter(valid_row) if invalid_rows == "drop" else df


def validate_dataframe(df: DataFrame, features: Sequence[str], label: str) -> None:
    """Check that ``df`` can be learned from; raise :class:`InputDataError` naming the
    problem otherwise (never a Spark traceback, never a count or a value of the data).

    Guarantees, in this order: every named column exists; every one is numeric (integer,
    floating, decimal or boolean); the table has at least one row; every label is 0 or 1
    (a null label is an error); no feature holds a null, NaN or ±inf. Costs one Spark job
    (a single aggregation over the table); column checks cost none. A table without
    positive rows passes (the fit then rests on pads only); see :func:`prepare_dataframe`.
    """
    _check(df, features, label, invalid_rows="error", require_positives=False)


def prepare_dataframe(df: DataFrame, features: Sequence[str], label: str, *,
                      invalid_rows: str = "drop") -> DataFrame:
    """The table checked for a release, with invalid rows handled by policy.

    Same checks as :func:`validate_dataframe`, except for rows with a null, NaN or ±inf
    feature: ``invalid_rows="drop"`` (default) removes them — a row-local filter, so a
    neighbouring table stays neighbouring and it costs no privacy — and ``"error"``
    refuses the table naming the feature. Then a table with no positive row left is
    refused ("the input has no positive rows"). Returns the (lazily) filtered DataFrame;
    pass it to :func:`fit_dataframe` with ``validate=False``. One Spark job; messages
    carry no counts or values of the data.
    """
    return _check(df, features, label, invalid_rows=invalid_rows, require_positives=True)


def fit_dataframe(
    df: DataFrame,
    *,
    features: Sequence[str],
    label: str,
    domains: GridArg = None,
    epsilon: float,
    delta: float,
    method: str = "auto",
    beta: float = 1e-4,
    spark_plan: str | None = None,
    seed: int | None = None,
    accounting: str = "refined",
    shape: str = "general",
    margin_law: str = "staircase",
    neighbouring: str = ADD_REMOVE,
    prefix_rows: int | None = None,
    validate: bool = True,
    trace: list[Any] | None = None,
) -> FitResult:
    """Learn an (ε, δ)-DP axis-aligned rectangle around the rows of ``df`` labelled 1.

    ``features``/``label``: column names (a single string is one feature). ``domains``:
    per-feature public domains — a Domain, a list, a ``--grid`` string, or None for the
    float-order domain. ``epsilon``, ``delta``, ``method``, ``beta``, ``accounting``,
    ``shape``, ``margin_law``, ``neighbouring``, ``seed``: as in :func:`dprect.fit` (a seed
    is for tests only).
    ``spark_plan``: ``rounds`` or ``prefetch`` (None: :data:`DEFAULT_PLAN`, the faster);
    ``prefix_rows``: override the prefetch lengths derived from the plan (speed only).

    Guarantees: parameters are checked before any Spark job; the table is validated
    (:func:`validate_dataframe`) unless ``validate=False``; the result is identical to
    :func:`dprect.fit` on the same rows with the same seed, whatever the plan or the
    partitioning; cached data is released before returning.
    """
    listed = [features] if isinstance(features, str) else list(features)
    names = feature_names(listed, len(listed))
    if not names:
        raise ParameterError("give at least one feature column")
    if label in names:
        raise ParameterError(f"the label column {label!r} is also listed as a feature")
    chosen_plan = spark_plan or DEFAULT_PLAN
    if chosen_plan not in PLANS:
        raise ParameterError(f"spark_plan must be one of {', '.join(PLANS)}; got {spark_plan!r}")
    if prefix_rows is not None and (isinstance(prefix_rows, bool)
                                    or not isinstance(prefix_rows, int) or prefix_rows < 1):
        raise ParameterError(f"prefix_rows must be an integer >= 1, got {prefix_rows!r}")
    doms = resolve_domains(domains, names)
    budget = {"epsilon": epsilon, "delta": delta, "method": method, "beta": beta,
              "accounting": accounting, "shape": shape, "margin_law": margin_law,
              "neighbouring": neighbouring}
    the_plan = plan(domains=doms, **budget)  # public; errors before any Spark job
    if validate:
        validate_dataframe(df, names, label)
    positives = df.filter(F.col(quote(label)).cast("double") == F.lit(1.0))
    prefix = prefix_rows if prefix_rows is not None else prefetch_specs(the_plan.chosen,
                                                                         len(doms))
    engine = SparkEngine(positives, doms, names, plan=chosen_plan, prefix=prefix)
    try:
        return fit_engine(engine, doms, names, seed=seed, trace=trace, **budget)
    except PySparkException as exc:
        raise InputDataError(f"Spark failed while fitting: {spark_message(exc)}") from None
    finally:
        engine.close()
