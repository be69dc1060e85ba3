"""Learning a private rectangle from a Spark DataFrame.

:func:`prepare_fit` checks the table and readies a
:class:`~dprect.engines.spark.engine.SparkEngine` (with ``prefetch``: one pass that gathers the
prefix lists and checks the features); :meth:`PreparedFit.run` then runs
:func:`dprect.app.api.fit_engine`: planning, accounting and every random draw stay in the
private core, so for the same seed the result is identical to :func:`dprect.fit` on the
same rows. :func:`fit_dataframe` does both; jobs call them apart so that a table whose
schema does not fit is refused before a budget is reserved. No refusal depends on the
rows' values, except under the opt-in ``error`` invalid-row policy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.util import InheritableThread

from dprect.app.api import GridArg, feature_names, fit_engine, resolve_domains
from dprect.core.accounting import ADD_REMOVE
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.planner import plan
from dprect.core.result import FitResult
from dprect.engines.spark.checks import TableChecks
from dprect.engines.spark.engine import DEFAULT_PLAN, PLANS, SparkEngine, prefetch_specs
from dprect.engines.spark.source import SPARK_ERRORS, spark_message

T = TypeVar("T")


def _beside(action: Callable[[], T], session: SparkSession) -> Callable[[], T]:
    """Start ``action`` (Spark jobs) in a thread that inherits the caller's Spark job
    properties; the returned function waits for it and returns its value or raises its
    error. Two short jobs side by side keep both cores of a small cluster busy."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = action()
        except BaseException as exc:  # handed to the caller by result()
            box["error"] = exc

    thread = InheritableThread(target=run, session=session)
    thread.start()

    def result() -> T:
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["value"]

    return result


def validate_dataframe(df: DataFrame, features: Sequence[str], label: str, *,
                       positive_label: object = 1) -> None:
    """Check that ``df`` can be learned from; raise :class:`InputDataError` naming the
    problem otherwise (never a Spark traceback, never a count or a value of the data).

    The schema checks of every fit — every named column exists, every feature is numeric
    (integer, floating, decimal or boolean), the label column's type can hold
    ``positive_label`` — and, beyond them, the ``error`` policy's check that no feature
    holds a null, NaN or ±inf (one Spark job). That last check looks at the rows' values:
    its answer is OUTSIDE the privacy guarantee; treat it as an internal check. Labels are
    never refused (other values and nulls are negatives); an empty table, or one without
    positives, passes.
    """
    TableChecks(df, features, label, invalid_rows="error",
                positive_label=positive_label).check_features()


class PreparedFit:
    """A checked table with its engine ready: :meth:`run` draws the noise and learns.

    Built by :func:`prepare_fit`; a context manager that releases cached data on exit.
    """

    def __init__(self, engine: SparkEngine, domains: list, features: list[str],
                 budget: dict[str, Any]) -> None:
        self.engine = engine
        self.domains = domains
        self.features = features
        self.budget = budget

    def run(self, *, seed: int | None = None, trace: list[Any] | None = None) -> FitResult:
        """The fit (:func:`dprect.app.api.fit_engine`); a seed is for tests only."""
        try:
            return fit_engine(self.engine, self.domains, self.features, seed=seed,
                              trace=trace, **self.budget)
        except SPARK_ERRORS as exc:
            raise InputDataError(f"Spark failed while fitting: {spark_message(exc)}") from None

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> PreparedFit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def prepare_fit(
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
    accounting: str = "refined",
    shape: str = "general",
    margin_law: str = "staircase",
    neighbouring: str = ADD_REMOVE,
    prefix_rows: int | None = None,
    invalid_rows: str | None = "drop",
    positive_label: object = 1,
) -> PreparedFit:
    """Check everything and read the data; nothing is drawn yet (see :meth:`PreparedFit.run`).

    Order: parameters and the public plan (no Spark job); the schema — columns, their
    types, the positive label against the label column's type (no job); then one job
    counting the positive labels (a speed aid, inside the driver only), beside it for
    ``prefetch`` the pass's short sample job; then, with ``prefetch``, the one pass that
    gathers the prefix lists (and, under ``error``, checks the features), or with
    ``rounds`` (``error`` only) one feature aggregation. So a refused table is refused
    before a budget is reserved, and the reserved run does no more than the driver-side
    fit (plus a job if a list runs short).

    Nothing here refuses a table for its values, except the opt-in ``error`` policy: rows
    whose label is not ``positive_label`` (other values, nulls) are negatives, and a table
    with no rows or no positives is fitted as any other (an empty rectangle, most likely).

    ``positive_label``: the label of the positive rows (default 1): a number, a string, a
    boolean, or :class:`dprect.app.api.LabelText` (text read against the column's type).
    ``invalid_rows``: ``drop`` (default) leaves out rows with a null, NaN or ±inf feature
    — row-local, so it costs no privacy; ``error`` refuses such a table naming the
    feature, a data-dependent refusal OUTSIDE the privacy guarantee; None skips the
    feature checks (the caller vouches for the table).
    Other parameters as in :func:`fit_dataframe`.
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
    checks = TableChecks(df, names, label, invalid_rows=invalid_rows,
                         positive_label=positive_label)
    prefix = prefix_rows if prefix_rows is not None else prefetch_specs(the_plan.chosen,
                                                                         len(doms))
    engine = SparkEngine(df, doms, names, plan=chosen_plan, prefix=prefix,
                         cache=chosen_plan == "rounds", positive=checks.positive,
                         problem=checks.problem, on_problem=checks.raise_invalid_feature)
    try:
        count = _beside(checks.count_positives, df.sparkSession)
        try:
            engine.presample()  # the pass's sample, while the labels are counted
        finally:
            ones = count()
        engine.prepare(size_hint=ones)  # speed only: the hint never changes an answer
    except SPARK_ERRORS as exc:
        engine.close()
        raise InputDataError(f"cannot read the input: {spark_message(exc)}") from None
    except BaseException:
        engine.close()
        raise
    return PreparedFit(engine, doms, names, budget)


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
    invalid_rows: str | None = "drop",
    positive_label: object = 1,
    trace: list[Any] | None = None,
) -> FitResult:
    """Learn an (ε, δ)-DP axis-aligned rectangle around the rows of ``df`` whose label
    equals ``positive_label`` (default 1).

    ``features``/``label``: column names (a single string is one feature). ``domains``:
    per-feature public domains — a Domain, a list, a ``--grid`` string, or None for the
    float-order domain. ``epsilon``, ``delta``, ``method``, ``beta``, ``accounting``,
    ``shape``, ``margin_law``, ``neighbouring``, ``seed``: as in :func:`dprect.fit` (a seed
    is for tests only).
    ``spark_plan``: ``rounds`` or ``prefetch`` (None: :data:`DEFAULT_PLAN`, the faster);
    ``prefix_rows``: override the prefetch lengths derived from the plan (speed only).

    ``positive_label``, ``invalid_rows``: as in :func:`prepare_fit` (``drop`` by default;
    ``error`` is a data-dependent refusal outside the guarantee).

    Guarantees: parameters and the schema are checked before any Spark job, and nothing
    else refuses the table unless ``invalid_rows="error"``: other labels and nulls are
    negatives, an empty table or one without positives gives an ordinary (empty) result;
    the result is identical to :func:`dprect.fit` on the same rows with the same seed and
    options, whatever the plan or the partitioning; cached data is released before
    returning.
    """
    prepared = prepare_fit(
        df, features=features, label=label, domains=domains, epsilon=epsilon, delta=delta,
        method=method, beta=beta, spark_plan=spark_plan, accounting=accounting, shape=shape,
        margin_law=margin_law, neighbouring=neighbouring, prefix_rows=prefix_rows,
        invalid_rows=invalid_rows, positive_label=positive_label)
    with prepared:
        return prepared.run(seed=seed, trace=trace)
