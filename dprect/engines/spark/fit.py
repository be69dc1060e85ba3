"""Learning a private rectangle from a Spark DataFrame.

:func:`prepare_fit` checks the table and readies a
:class:`~dprect.engines.spark.engine.SparkEngine` for a plan (with ``prefetch``: one pass
that gathers the prefix lists and checks the features); :meth:`PreparedFit.run` then runs
the plan (:func:`dprect.core.algorithms.run_plan`): accounting and every random draw stay in the
private core, so for the same seed the result is identical to :func:`dprect.fit` on the
same rows. :func:`fit_dataframe` does both; the fit flow (:mod:`dprect.app.flow`) calls
them apart through :class:`SparkRoute`, so that a table whose schema does not fit is
refused before a budget is reserved. The plan is made once: by the flow (and handed to
:func:`prepare_fit`), or by :func:`prepare_fit` when it is called alone. No refusal
depends on the rows' values, except under the opt-in ``error`` invalid-row policy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from pyspark.sql import DataFrame, SparkSession
from pyspark.util import InheritableThread

from dprect.core.algorithms import box_first_query, resolve_auto, run_plan
from dprect.core.contest import Tally
from dprect.core.domains import GridArg, check_dims, feature_names, resolve_domains
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.planner import Plan
from dprect.core.planner import plan as make_plan
from dprect.core.randomness import RandomSource
from dprect.core.request import FitOptions, FitRequest, InvalidRows, Source, make_request
from dprect.core.result import FitResult
from dprect.core.ties import TieBreaker
from dprect.engines.prepared import PreparedRun
from dprect.engines.spark.checks import TableChecks
from dprect.engines.spark.chooser import choose_strategy, collect_fits, may_prefetch
from dprect.engines.spark.class_collect import (
    CollectedClass,
    collect_classes,
    count_classes,
    fits_budget,
    label_value_counts,
    tag_classes,
)
from dprect.engines.spark.class_pass import prepare_pass_classes
from dprect.engines.spark.contest_tally import spark_tally
from dprect.engines.spark.engine import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    Presampled,
    SparkEngine,
    check_budget,
    prefetch_specs,
)
from dprect.engines.spark.file_rows import file_rows
from dprect.engines.spark.file_sample import file_sample
from dprect.engines.spark.prefetch import LabelCount, never_cuts
from dprect.engines.spark.shipped import shipped_widths
from dprect.engines.spark.source import SPARK_ERRORS, opened_source, spark_message

if TYPE_CHECKING:
    from dprect.core.domains import Domain

T = TypeVar("T")
#: the ``pass`` strategy's lists are not capped by prefetch's cell budget: its own budget
#: (the driver's) decides how many orders one pass serves
UNLIMITED = 2**62


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


def _prefetch_rows(df: DataFrame, dims: int, budget: float) -> int | None:
    """The table's row count from its files (:func:`~dprect.engines.spark.file_rows.file_rows`)
    where so many rows could make ``auto`` take ``prefetch`` (the positives are at most
    the rows); else None. Inside the driver only (a speed aid)."""
    if not may_prefetch(dims, budget):
        return None
    rows = file_rows(df)
    return rows if rows is not None and choose_strategy(rows, dims, budget) == "prefetch" \
        else None


def _estimated(estimate: int | None, rows: int, plan: Plan, domains: list[Domain],
               budget: float, widths: Sequence[int]) -> int | None:
    """The sample's estimate of the positives (``estimate``, of a table of ``rows`` rows)
    as the pending plan's hint, where every choice made on it is safe whatever the true
    count; None where the fit needs the label count first. ``auto``'s route from the
    estimate (:func:`choose_strategy`): ``prefetch`` — its driver memory is bounded by
    its fixed cell budgets — when the method guessed there refines no ties (its pass then
    counts the rows learned from itself: :func:`~dprect.engines.spark.prefetch.filter_rows`;
    with ties that count would sit below a shuffle); ``pass`` — bounded by the budget;
    ``collect`` only when the table's ``rows`` themselves would fit the budget (the
    positives are no more). A wrong estimate changes the speed only (another route, a
    guess the drawn count overturns: one more pass; thresholds that ship more or fewer
    rows), never an answer."""
    if estimate is None or plan.count is None:
        return None
    route = choose_strategy(estimate, len(domains), budget, widths)
    if route == "collect" and not collect_fits(rows, len(domains), budget, widths):
        return None
    if route == "prefetch":
        ties = plan.resolved(replace(plan.count, noisy=max(estimate, 1))).chosen \
            .tie_breaker(domains)
        if ties is not None and ties.active:
            return None
    return estimate


def validate_dataframe(df: DataFrame, features: Sequence[str], label: str, *,
                       positive_label: object = FitRequest.positive_label) -> None:
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


class PreparedFit(PreparedRun):
    """A checked table with its engine ready for its plan: :meth:`run` draws the noise
    and learns.

    Built by :func:`prepare_fit`; a context manager that releases cached data on exit
    (and then calls ``on_close``, e.g. to stop a session started for this fit).
    """

    def __init__(self, engine: SparkEngine | None, domains: list[Domain], features: list[str],
                 plan: Plan, on_close: Callable[[], None] | None = None,
                 count: Callable[[], int] | None = None,
                 ready: Callable[[Plan], SparkEngine] | None = None,
                 tally: Tally | None = None) -> None:
        super().__init__(on_close)
        #: the engine; for a pending ``auto`` plan None (or, ``collect``, the collected rows
        #: not yet refined) until :meth:`run` has drawn its count
        self.engine = engine
        self.domains = domains
        self.features = features
        self.plan = plan
        #: a pending ``auto`` plan's exact count of the rows learned from (one job) and the
        #: engine readied for the method the private count chooses (its first job)
        self.count = count
        self.ready = ready
        #: auto's contest's tally of the rows (one job, only where the contest runs)
        self.tally = tally

    def run(self, *, seed: int | None = None, trace: list[Any] | None = None) -> FitResult:
        """The fit (:func:`dprect.core.algorithms.run_plan`); a seed is for tests only.

        A pending ``auto`` plan first draws its private count of the rows learned from
        (the numpy engine's count: with ``collect`` the collected rows, else one Spark
        job) and makes its choice (:func:`~dprect.core.algorithms.resolve_auto`); only
        then is the engine readied for the chosen method (``collect``: its rows refined
        on the driver if the method refines ties; else the strategy's first job): the
        rectangle is the numpy engine's, and no job is spent on the method not chosen."""
        rng = RandomSource(seed=seed)
        try:
            the_plan = self.plan
            if the_plan.pending:
                if self.count is None or self.ready is None:
                    raise ParameterError("this prepared fit cannot count its positives")
                the_plan = resolve_auto(the_plan, self.count, rng)
                self.engine = self.ready(the_plan)
            if self.engine is None:
                raise ParameterError("this prepared fit has no engine")
            return run_plan(self.engine, self.domains, self.features, the_plan, rng,
                            trace=trace, tally=self.tally)
        except SPARK_ERRORS as exc:
            raise InputDataError(f"Spark failed while fitting: {spark_message(exc)}") from None

    def release(self) -> None:
        if self.engine is not None:
            self.engine.close()


def prepare_fit(
    df: DataFrame,
    *,
    features: Sequence[str],
    label: str,
    grid: GridArg = None,
    request: FitRequest | None = None,
    plan: Plan | None = None,
    strategy: str | None = None,
    prefix_rows: int | None = None,
    driver_budget_mb: float | None = None,
    **options: Unpack[FitOptions],
) -> PreparedFit:
    """Check everything and read the data; nothing is drawn yet (see :meth:`PreparedFit.run`).

    ``request``: the :class:`~dprect.core.request.FitRequest` (or its fields as keywords:
    ``epsilon``, ``delta``, ``method``, …, ``invalid_rows``, ``positive_label``).
    ``plan``: the run's plan, made from that request by the caller (the fit flow plans
    once per run); None plans it here.

    Order: parameters and the public plan (no Spark job); the schema — columns, their
    types, the positive label against the label column's type (no job); then one job
    counting the positive labels (a speed aid, inside the driver only), beside it for
    ``prefetch`` the pass's short sample job; then ``auto`` becomes ``collect`` when the
    positives' sort values fit ``driver_budget_mb``
    (:func:`~dprect.engines.spark.engine.choose_strategy`; run time and memory only, never the
    rectangle), else ``pass``; then, with ``collect``, the one job that collects the
    positives' values (and, under ``error``, checks the features), with ``pass`` the
    first vectorised pass (checks likewise), with ``prefetch``, the one pass that gathers
    the prefix lists (checks likewise), or with ``rounds`` (``error`` only) one feature
    aggregation — except for the quantile box, which asks histograms only: no pass or
    sample for windows (its two histogram jobs run in the run; ``error``'s check by one
    aggregation here). So a refused table is refused before a budget is reserved, and the
    reserved run does no more than the driver-side fit (plus a pass or job if a list runs
    short). A pending ``auto`` plan (its private count, :mod:`dprect.core.auto_count`)
    chooses its method — and so its tie refinement — only from the count drawn after the
    reservation: with ``collect`` the one job runs here as always, the rows unrefined,
    and the run counts them on the driver and refines them there if the chosen method
    needs it (no extra job); with the other strategies only the labels are counted here
    (beside them, when ``auto`` may take ``prefetch``, the pass's sample: every feature;
    under ``error``, the features checked by one aggregation), and the run counts the rows
    learned from, draws, and then runs the chosen method's first job — with ``pass`` and
    ``prefetch`` the count is the first job of the method predicted at the label count
    (its pass counts the rows learned from: ``count_first``; kept when the draw chooses
    that method; where the table is a plain Parquet read whose footers say ``auto`` may
    take ``prefetch`` (:func:`~dprect.engines.spark.file_rows.file_rows`, no job), the
    labels are not counted first: the pass's sample alone, its estimate of the positives
    taking the label count's place in the route, the guess and the hint wherever a wrong
    estimate is safe (``_estimated``), and the pass counts the rows learned from; a
    predicted quantile box, which asks no window, is counted — where its
    first job would be ``pass``'s — by its first histogram job, the centres' query whose
    thresholds are public (:meth:`SparkEngine.count_ahead
    <dprect.engines.spark.engine.SparkEngine.count_ahead>`; the origin shape: one
    aggregation)), else one aggregation.

    Nothing here refuses a table for its values, except the opt-in ``error`` policy: rows
    whose label is not ``positive_label`` (other values, nulls) are negatives, and a table
    with no rows or no positives is fitted as any other (an empty rectangle, most likely).

    ``positive_label``: the label of the positive rows: a number, a string, a boolean, or
    :class:`dprect.core.labels.LabelText` (text read against the column's type).
    ``invalid_rows``: ``drop`` leaves out rows with a null, NaN or ±inf feature —
    row-local, so it costs no privacy; ``error`` refuses such a table naming the feature,
    a data-dependent refusal OUTSIDE the privacy guarantee.
    Other parameters as in :func:`fit_dataframe`.
    """
    req = make_request(FitRequest, request, options, "prepare_fit")
    listed = [features] if isinstance(features, str) else list(features)
    check_dims(len(listed), "features")
    names = feature_names(listed, len(listed))
    if not names:
        raise ParameterError("give at least one feature column")
    if label in names:
        raise ParameterError(f"the label column {label!r} is also listed as a feature")
    chosen = strategy or DEFAULT_STRATEGY
    if chosen not in STRATEGIES:
        raise ParameterError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")
    budget = check_budget(driver_budget_mb)
    if prefix_rows is not None and (isinstance(prefix_rows, bool)
                                    or not isinstance(prefix_rows, int) or prefix_rows < 1):
        raise ParameterError(f"prefix_rows must be an integer >= 1, got {prefix_rows!r}")
    doms = resolve_domains(grid, names)
    the_plan = plan if plan is not None else make_plan(req, domains=doms, features=names)
    checks = TableChecks(df, names, label, invalid_rows=req.invalid_rows,
                         positive_label=req.positive_label)
    # the plan's tie refinement is known now, so the one pass gathers in the refined order
    # (the run's set_ties is then a no-op: no second pass)

    presampled: Presampled | None = None  # a pending plan's sample, for a later engine

    def build(ties: TieBreaker | None, for_plan: Plan, count_first: bool = False,
              labels: LabelCount | None = None) -> SparkEngine:
        """An engine readied for ``for_plan``'s chosen method (its lists), with ``ties``
        (``count_first``: its first pass counts the rows learned from, ``prefetch``'s from
        the label count ``labels``)."""
        return SparkEngine(
            df, doms, names, strategy=chosen,
            prefix=prefix_rows if prefix_rows is not None else prefetch_specs(
                for_plan.chosen),
            cache=chosen == "rounds", positive=checks.positive,
            problem=checks.problem, on_problem=checks.raise_invalid_feature,
            ties=ties, driver_budget_mb=budget,
            schedule=None if prefix_rows is not None else prefetch_specs(
                for_plan.chosen, cell_budget=UNLIMITED),
            # a pending plan's engine may serve whichever method the count chooses
            never_cuts=not for_plan.pending and never_cuts(for_plan.chosen),
            count_first=count_first, labels=labels,
            # the quantile box asks histograms only: no first pass for windows (the
            # engine's choice of its first job, with count_first too)
            histograms_only=(not for_plan.pending and for_plan.chosen.method == "quantiles"),
            # two queries (the centres', then the sides'): the first keeps the rows
            hold=(not for_plan.pending
                  and box_first_query(for_plan.chosen, doms) is not None),
            presampled=presampled)

    pending = the_plan.pending
    # a pending auto plan's method (so its ties) is chosen by the private count, drawn
    # after the reservation: a collect engine collects now, unrefined, and refines on the
    # driver once the method is known; any other strategy is readied after the count
    engine: SparkEngine | None
    engine = build(None if pending else the_plan.chosen.tie_breaker(doms), the_plan)
    route = None
    labelled: int | None = None  # the label count L; None: not counted (an estimate)
    try:
        # a pending auto plan on a table whose files say auto may take prefetch: the
        # sample alone first (no round of the labels before the pass), the route from
        # its estimate where that is safe, else the label count after it
        rows = (_prefetch_rows(df, len(doms), budget)
                if pending and chosen == "auto" and checks.problem is None else None)
        if rows is not None:
            presampled = engine.presample(maybe=True, rows=rows, read=partial(
                file_sample, df, names, checks.label, checks.label_kind,
                checks.positive_label, finite=checks.dropped is not None))
            estimate = _estimated(engine.estimate, rows, the_plan, doms, budget,
                                  shipped_widths(df, names))
            if estimate is None:
                ones = labelled = checks.count_positives()
            else:
                ones = estimate
        else:
            count = _beside(checks.count_positives, df.sparkSession)
            try:  # the pass's sample, while the labels are counted (a pending plan's: in
                # case auto takes prefetch, for the engine the run readies after its count)
                presampled = engine.presample(maybe=pending)
            finally:
                ones = labelled = count()
        # speed and memory only: the hint (and auto's choice from it) never changes an answer
        route = engine.resolve(size_hint=ones) if pending else None
        if not pending or route == "collect":
            engine.prepare(size_hint=ones)
        else:  # the error policy's refusal still comes before the reservation
            engine.close()
            engine = None
            checks.check_features()
    except SPARK_ERRORS as exc:
        if engine is not None:
            engine.close()
        raise InputDataError(f"cannot read the input: {spark_message(exc)}") from None
    except BaseException:
        if engine is not None:
            engine.close()
        raise
    if not pending:
        return PreparedFit(engine, doms, names, the_plan)
    # auto's contest (a counting plan's, where its gate holds at the released count):
    # its tally is one job over the rows, run only then
    tally = (spark_tally(df, names, checks.positive, doms)
             if the_plan.contest is not None else None)
    if engine is not None:  # collect: its rows are the rows learned from; ties at the run
        collected = engine
        return PreparedFit(collected, doms, names, the_plan, count=collected.remaining,
                           ready=lambda _: collected, tally=tally)

    # pass / prefetch: the first pass of the method the hint predicts (the choice at N =
    # the label count: a speed aid inside the driver) counts the rows learned from (pass:
    # it reads every row; prefetch: its first filter's own row count, or the label count
    # where no labelled row is dropped) — no count job of its own;
    # the engine is kept when the private count chooses that method (nearly always), else
    # closed and the chosen method's built. A predicted quantile box asks no window: on
    # ``collect`` its count lists nothing, and where it would take ``pass`` its engine
    # runs no pass (its histogram jobs only) and it is counted by its first histogram
    # job (the centres' query, public before the count: SparkEngine.count_ahead), or by
    # one aggregation for the origin shape
    guess = the_plan.resolved(replace(the_plan.count, noisy=max(ones, 1))) \
        if route in ("pass", "prefetch") and the_plan.count is not None else None
    early: list[SparkEngine] = []

    def count_by_pass() -> int:
        """The rows learned from, counted by the guessed method's first job (the engine
        chooses it: a predicted box on ``pass`` runs no pass, :class:`SparkEngine`'s
        ``histograms_only``)."""
        assert guess is not None
        fresh = build(guess.chosen.tie_breaker(doms), guess, count_first=True,
                      labels=checks.label_count(labelled))
        try:
            fresh.resolve(size_hint=ones)  # the route first (no job): presample sees prefetch
            fresh.presample()
            fresh.prepare()
            if fresh.counts:
                count = fresh.remaining()
            else:
                # a first job that did not count (the box on pass, prefetch with ties): the
                # box's centres' query, public, is its count (no read of its own: kept for
                # the box's first query, dropped otherwise); else (the origin shape, whose
                # one query needs the count's target, or another method) a job
                first = box_first_query(guess.chosen, doms)
                count = (checks.count_learned() if first is None
                         else fresh.count_ahead(first))
        except BaseException:
            fresh.close()  # its held rows too: nothing stays persisted after a failure
            raise
        early.append(fresh)
        return count

    def ready(for_plan: Plan) -> SparkEngine:
        """The engine for a resolved plan's chosen method, with its first job(s) run."""
        while early:
            made = early.pop()
            if guess is not None and for_plan.chosen.method == guess.chosen.method:
                return made
            made.close()
        fresh = build(for_plan.chosen.tie_breaker(doms), for_plan)
        try:
            fresh.presample()
            fresh.prepare(size_hint=ones)
        except BaseException:
            fresh.close()
            raise
        return fresh

    return PreparedFit(None, doms, names, the_plan,
                       count=checks.count_learned if guess is None else count_by_pass,
                       ready=ready, tally=tally)


def fit_dataframe(
    df: DataFrame,
    *,
    features: Sequence[str],
    label: str,
    grid: GridArg = None,
    request: FitRequest | None = None,
    strategy: str | None = None,
    seed: int | None = None,
    prefix_rows: int | None = None,
    driver_budget_mb: float | None = None,
    trace: list[Any] | None = None,
    **options: Unpack[FitOptions],
) -> FitResult:
    """Learn an (ε, δ)-DP axis-aligned rectangle around the rows of ``df`` whose label
    equals ``positive_label`` (default 1).

    ``features``/``label``: column names (a single string is one feature). ``grid``:
    per-feature public domains (as :func:`dprect.fit`'s) — a Domain, a list, a
    ``--grid`` string, or None for the float-order domain.
    ``request`` (a :class:`~dprect.core.request.FitRequest`) or its
    fields as keywords — ``epsilon``, ``delta``, ``method``, ``beta``, ``accounting``,
    ``shape``, ``margin_law``, ``neighbouring``, ``positive_label``, ``invalid_rows`` —
    and ``seed``: as in :func:`dprect.fit` (a seed is for tests only).
    ``strategy``: ``auto``, ``collect``, ``pass``, ``prefetch`` or ``rounds`` (None:
    :data:`DEFAULT_STRATEGY`, ``auto``: ``collect`` when the positives' values fit the
    driver budget, else ``pass``); ``driver_budget_mb``: that budget in MiB (None:
    :data:`~dprect.engines.spark.engine.DEFAULT_DRIVER_BUDGET_MB`); ``prefix_rows``:
    override the prefetch lengths derived from the plan (speed only).

    ``positive_label``, ``invalid_rows``: as in :func:`prepare_fit` (``error`` is a
    data-dependent refusal outside the guarantee).

    Guarantees: parameters and the schema are checked before any Spark job, and nothing
    else refuses the table unless ``invalid_rows="error"``: other labels and nulls are
    negatives, an empty table or one without positives gives an ordinary (empty) result;
    the result is identical to :func:`dprect.fit` on the same rows with the same seed and
    options, whatever the plan or the partitioning; cached data is released before
    returning.
    """
    prepared = prepare_fit(df, features=features, label=label, grid=grid,
                           request=make_request(FitRequest, request, options,
                                                "fit_dataframe"),
                           strategy=strategy, prefix_rows=prefix_rows,
                           driver_budget_mb=driver_budget_mb)
    with prepared:
        return prepared.run(seed=seed, trace=trace)


class SparkRoute:
    """The Spark engine's part of the fit flow (:class:`dprect.app.flow.EngineRoute`):
    start or reuse a session (``session`` returns it and whether this fit owns it), read
    the table (:func:`~dprect.engines.spark.source.read_source`) and prepare the fit for
    the flow's plan. A session the fit owns is stopped when the prepared fit closes, or
    at once if reading fails."""

    def __init__(self, session: Callable[[], tuple[SparkSession, bool]],
                 strategy: str | None = None,
                 driver_budget_mb: float | None = None) -> None:
        self.session = session
        self.strategy = strategy
        self.driver_budget_mb = driver_budget_mb

    def open(self, source: Source, domains: list[Domain], request: FitRequest, plan: Plan,
             progress: Callable[[str], None]) -> PreparedFit:
        with opened_source(self.session, source, progress) as (df, stop):
            progress("checking the input and reading what the fit needs")
            prepared = prepare_fit(df, features=source.features, label=source.fit_label,
                                   grid=domains, request=request, plan=plan,
                                   strategy=self.strategy,
                                   driver_budget_mb=self.driver_budget_mb)
            prepared.on_close = stop
            return prepared

    def open_classes(self, source: Source, domains: list[Domain],
                     requests: Sequence[FitRequest], plan: Plan,
                     progress: Callable[[str], None]) -> PreparedClasses:
        """Every class of a classes' fit on ONE read of the table (:func:`open_classes`)."""
        return open_classes(self, source, domains, requests, plan, progress)

    def open_selected_classes(self, source: Source, domains: list[Domain],
                              choose: Callable[[Mapping[str, int], str], Sequence[FitRequest]],
                              plan: Plan, progress: Callable[[str], None], *,
                              invalid_rows: InvalidRows | str) -> PreparedClasses:
        """The classes found privately on ONE read of the table
        (:func:`open_selected_classes`)."""
        return open_selected_classes(self, source, domains, choose, plan, progress,
                                     invalid_rows=invalid_rows)


# -- every class of a classes' fit on one read (dprect.engines.spark.classes explains) ------
class PreparedClasses(PreparedRun):
    """The k prepared classes (in order): from the classes' one collect
    (:mod:`dprect.engines.spark.class_collect`), or one prepared fit per class on one
    cached DataFrame; closing releases every class's engine, the cache, then (if owned)
    the session."""

    def __init__(self, prepared: list[PreparedFit | CollectedClass], cached: DataFrame | None,
                 on_close: Callable[[], None] | None) -> None:
        super().__init__(on_close)
        self.prepared = prepared
        self.cached = cached
        #: the Spark jobs the classes shared (count, collect, pass jobs; empty when each
        #: class was prepared alone): diagnostics for tests and benchmarks, never output
        self.stats: dict[str, int] = {}

    def release(self) -> None:
        for p in reversed(self.prepared):
            p.release()
        if self.cached is not None:
            self.cached.unpersist()


def _cache(df: DataFrame, done: PreparedClasses) -> DataFrame:
    """``df``, cached for the classes' passes over it: by this run (``done`` unpersists it
    when it closes), or already by the caller (then left as it is: unpersisting it would
    drop the caller's cache). Idempotent: once cached, ``df`` reads as cached."""
    level = df.storageLevel
    if level.useMemory or level.useDisk:
        return df
    done.cached = df.cache()
    return done.cached


def _silent(_: str) -> None:
    """A progress callback that shows nothing (the lines of a route ``auto`` chose)."""


def prepare_classes(df: DataFrame, *, features: Sequence[str], label: str,
                    domains: list[Domain], requests: Sequence[FitRequest], plan: Plan,
                    strategy: str | None, driver_budget_mb: float | None,
                    progress: Callable[[str], None] = lambda _: None,
                    on_close: Callable[[], None] | None = None) -> PreparedClasses:
    """One prepared run per request (one per class) on ``df``, the classes' Spark jobs
    shared (:mod:`dprect.engines.spark.classes`): after one job counting every class
    (:func:`~dprect.engines.spark.class_collect.count_classes`), ``collect`` (or ``auto``
    when every class fits the budget together) collects every class in one more job;
    ``pass`` (or ``auto`` over that budget, unless a class would take ``prefetch``) runs
    every class's first pass in ONE job on ``df`` cached
    (:func:`~dprect.engines.spark.class_pass.prepare_pass_classes`); otherwise one
    :func:`prepare_fit` per class on ``df`` cached once.

    Every class is prepared before any runs, so all k classes' lists (or collected rows)
    are held at once: each class's engine gets 1/k of ``driver_budget_mb`` (before,
    every class got the whole budget — k times it in all). The joint collect is sized
    against the whole budget (:func:`~dprect.engines.spark.class_collect.joint_bytes`
    counts every class). On any failure everything opened so far is released.

    Under ``auto`` the route taken depends on the classes' row counts, so nothing on
    ``progress`` may tell which (docs/privacy.md §8: the choice is neither printed nor
    recorded): one line says the classes are being read, and the routes' own lines are
    not shown. A strategy the caller named is public, and its route's lines are shown."""
    names = list(features)
    done = PreparedClasses([], None, on_close)
    chosen = strategy or DEFAULT_STRATEGY
    if chosen not in STRATEGIES:
        raise ParameterError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")
    share = check_budget(driver_budget_mb) / max(1, len(requests))
    if chosen == "auto":  # the route depends on the classes' counts: say nothing of it
        progress(f"reading what the {len(requests)} classes need")
        progress = _silent
    try:
        table = tag_classes(_cache(df, done) if chosen == "pass" else df, names, label, requests)
        if table is not None and chosen in ("auto", "collect", "pass"):
            done.stats = table.stats
            counts = count_classes(table, progress)
            if chosen == "collect" or (chosen == "auto"
                                       and fits_budget(table, counts, driver_budget_mb)):
                done.prepared = list(collect_classes(table, domains, plan, progress))
                return done
            widths = shipped_widths(table.tagged, names)
            if chosen == "pass" or all(choose_strategy(n, len(names), share, widths) != "prefetch"
                                       for n in counts):
                if chosen != "pass":  # the same requests on the cached table: no job
                    again = tag_classes(_cache(df, done), names, label, requests)
                    assert again is not None
                    again.stats = table.stats
                    table = again
                done.prepared = [PreparedFit(e, domains, names, plan) for e in
                                 prepare_pass_classes(table, counts, domains, plan, share,
                                                      progress)]
                return done
        cached = _cache(df, done)
        for i, request in enumerate(requests):
            progress(f"checking the input and reading what class {i + 1} of "
                     f"{len(requests)} needs")
            done.prepared.append(prepare_fit(
                cached, features=names, label=label, grid=domains, request=request,
                plan=plan, strategy=strategy, driver_budget_mb=share))
    except SPARK_ERRORS as exc:
        done.close()
        raise InputDataError(f"cannot read the input: {spark_message(exc)}") from None
    except BaseException:
        done.close()
        raise
    return done


def open_selected_classes(route: SparkRoute, source: Source, domains: list[Domain],
                          choose: Callable[[Mapping[str, int], str], Sequence[FitRequest]],
                          plan: Plan, progress: Callable[[str], None], *,
                          invalid_rows: InvalidRows | str) -> PreparedClasses:
    """The classes found privately (docs/privacy.md §18): ``source`` read once, each label
    value's rows counted (:func:`~dprect.engines.spark.class_collect.label_value_counts`,
    every schema check first, and the ``error`` ``invalid_rows`` policy's check over every
    row: before the draw, so a refusal never depends on which classes it keeps),
    ``choose`` gives the classes' requests from them and the label's kind, each prepared
    on the same table (:func:`prepare_classes`; none kept: nothing to prepare) with no
    progress line of its own (they would tell the number kept before the charge). On any
    failure everything opened so far is released (and an owned session stopped)."""
    with opened_source(route.session, source, progress) as (df, stop):
        counts, kind = label_value_counts(df, list(source.features), source.fit_label,
                                          invalid_rows)
        requests = choose(counts, kind)
        # how many classes were kept is the release's: nothing before the reservation
        # tells it (no route line names a number of classes)
        progress("reading what the classes found need")
        if not requests:
            return PreparedClasses([], None, stop)
        return _prepared_on(route, source, df, stop, domains, requests, plan, _silent)


def open_classes(route: SparkRoute, source: Source, domains: list[Domain],
                 requests: Sequence[FitRequest], plan: Plan,
                 progress: Callable[[str], None]) -> PreparedClasses:
    """Read ``source`` once and prepare every class on it (:func:`prepare_classes`); on
    any failure everything opened so far is released (and an owned session stopped)."""
    with opened_source(route.session, source, progress) as (df, stop):
        return _prepared_on(route, source, df, stop, domains, requests, plan, progress)


def _prepared_on(route: SparkRoute, source: Source, df: DataFrame,
                 stop: Callable[[], None] | None,
                 domains: list[Domain], requests: Sequence[FitRequest], plan: Plan,
                 progress: Callable[[str], None]) -> PreparedClasses:
    """:func:`prepare_classes` of ``requests`` on the opened ``df`` with ``route``'s
    strategy and budget; closing the result calls ``stop`` (an owned session's end)."""
    done = prepare_classes(df, features=source.features, label=source.fit_label,
                           domains=domains, requests=requests, plan=plan,
                           strategy=route.strategy, driver_budget_mb=route.driver_budget_mb,
                           progress=progress)
    done.on_close = stop
    return done
