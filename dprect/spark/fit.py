"""Learning a private rectangle from a Spark DataFrame.

:func:`fit_dataframe` validates the table (:func:`validate_dataframe`), keeps the positive
rows in Spark, and runs :func:`dprect.api.fit_engine` on a
:class:`~dprect.spark.engine.SparkEngine`: planning, accounting and every random draw stay
in the private core, so for the same seed the result is identical to :func:`dprect.fit` on
the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql import types as T  # noqa: N812

from dprect.accounting import ADD_REMOVE
from dprect.api import GridArg, feature_names, fit_engine, resolve_domains
from dprect.errors import InputDataError, ParameterError
from dprect.planner import plan
from dprect.result import FitResult
from dprect.spark.engine import DEFAULT_PLAN, PLANS, SparkEngine, prefetch_specs, quote
from dprect.spark.source import spark_message

_NUMERIC = (T.NumericType, T.BooleanType)


def _column_types(df: DataFrame) -> dict[str, T.DataType]:
    return {f.name: f.dataType for f in df.schema.fields}


def validate_dataframe(df: DataFrame, features: Sequence[str], label: str) -> None:
    """Check that ``df`` can be learned from; raise :class:`InputDataError` naming the
    problem otherwise (never a Spark traceback).

    Guarantees, in this order: every named column exists; every one is numeric (integer,
    floating, decimal or boolean); the table has at least one row; every label is 0 or 1
    (a null label is an error); no feature holds a null, NaN or ±inf. Costs one Spark job
    (a single aggregation over the table); column checks cost none.
    """
    names = list(features)
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
    y_num = y.cast("double")
    bad_label = y.isNotNull() & ~y_num.isin(0.0, 1.0)
    aggs = [F.count(F.lit(1)).alias("rows"),
            F.sum(F.when(y.isNull(), 1).otherwise(0)).alias("label_nulls"),
            F.sum(F.when(bad_label, 1).otherwise(0)).alias("label_bad"),
            F.first(F.when(bad_label, y.cast("string")), ignorenulls=True).alias("label_ex")]
    for j, c in enumerate(names):
        x = F.col(quote(c))
        aggs.append(F.sum(F.when(x.isNull(), 1).otherwise(0)).alias(f"null{j}"))
        if isinstance(types[c], T.FloatType | T.DoubleType):
            nonfinite = F.isnan(x) | (F.abs(x) == F.lit(float("inf")))
            aggs.append(F.sum(F.when(nonfinite, 1).otherwise(0)).alias(f"nonfinite{j}"))
    try:
        row = df.agg(*aggs).collect()[0].asDict()
    except PySparkException as exc:
        raise InputDataError(f"cannot read the input: {spark_message(exc)}") from None
    if not row["rows"]:
        raise InputDataError("the input table is empty (zero rows)")
    if row["label_nulls"]:
        raise InputDataError(
            f"labels must be 0 or 1; column {label!r} has {row['label_nulls']} null value(s)")
    if row["label_bad"]:
        raise InputDataError(
            f"labels must be 0 or 1; column {label!r} has {row['label_bad']} other value(s), "
            f"e.g. {row['label_ex']}")
    for j, c in enumerate(names):
        if row[f"null{j}"]:
            raise InputDataError(f"feature {c!r} has {row[f'null{j}']} null value(s)")
        if row.get(f"nonfinite{j}"):
            raise InputDataError(
                f"feature {c!r} has NaN or infinite values ({row[f'nonfinite{j}']} row(s))")


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

    ``features``/``label``: column names. ``domains``: per-feature public domains — a
    Domain, a list, a ``--grid`` string, or None for the float-order domain. ``epsilon``,
    ``delta``, ``method``, ``beta``, ``accounting``, ``shape``, ``margin_law``,
    ``neighbouring``, ``seed``: as in :func:`dprect.fit` (a seed is for tests only).
    ``spark_plan``: ``rounds`` or ``prefetch`` (None: :data:`DEFAULT_PLAN`, the faster);
    ``prefix_rows``: override the prefetch lengths derived from the plan (speed only).

    Guarantees: parameters are checked before any Spark job; the table is validated
    (:func:`validate_dataframe`) unless ``validate=False``; the result is identical to
    :func:`dprect.fit` on the same rows with the same seed, whatever the plan or the
    partitioning; cached data is released before returning.
    """
    names = feature_names(list(features), len(list(features)))
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
