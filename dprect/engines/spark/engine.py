"""The Spark engine: the core's engine interface (:mod:`dprect.core.engine`) on a DataFrame.

The positive rows stay in Spark. Each feature becomes its *sort value* through the SQL
expression its domain writes (:meth:`dprect.core.domains.Domain.sort_sql`, no per-row
Python), which reproduces :meth:`dprect.core.domains.Domain.encode` bit for bit, so the
engine answers every question exactly as :class:`~dprect.engines.numpy_engine.NumpyEngine`
does on the same rows, and the core returns the identical rectangle for the same seed
(docs/algorithm.md §7).

The engine validates, records the cuts and delegates every window and cut to ONE strategy,
built when the engine is prepared: ``collect``, ``pass``, ``prefetch`` or ``rounds``, each
in its own module and listed in :mod:`dprect.engines.spark.strategy`; ``auto`` is resolved
then by :func:`dprect.engines.spark.chooser.choose_strategy` from public settings and the
size hint. Every strategy answers identically: the choice changes run time and driver
memory, never an answer.

Ties (:mod:`dprect.core.ties`). With a :class:`~dprect.core.ties.TieBreaker` (the
constructor's ``ties``, or :meth:`SparkEngine.set_ties` before :meth:`SparkEngine.prepare`),
every axis's sort values are the rows' refined sort values r_j, computed in Spark SQL from
the row's hash h' (its values' hash h and its occurrence rank among the positives
identical to it, a window: :func:`dprect.engines.spark.prefetch.with_ranks`), which is one
column computed once per row in its own projection
(:func:`dprect.engines.spark.prefetch.refine`): the encoded rows of ``rounds`` hold r_j,
and the ``prefetch`` lists are prefixes of the refined orders (their pass computes r_j
too), so both strategies answer exactly as :meth:`NumpyEngine.set_ties
<dprect.engines.numpy_engine.NumpyEngine.set_ties>` makes the numpy engine answer. The
ties must be known before the pass: a fit passes them to the constructor, so the one
pass already gathers in the refined order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812

from dprect.core.domains import Domain, Side
from dprect.core.errors import InputDataError, ParameterError
from dprect.core.ties import TieBreaker
from dprect.engines.input_errors import missing_columns
from dprect.engines.numpy_engine import JIT_VALUES, axes_thresholds
from dprect.engines.spark import prefetch as prefetch_module
from dprect.engines.spark.chooser import (
    DEFAULT_DRIVER_BUDGET_MB,
    DEFAULT_STRATEGY,
    STRATEGIES,
    check_budget,
    choose_strategy,
    may_prefetch,
)
from dprect.engines.spark.collect import CollectStrategy
from dprect.engines.spark.file_sample import PassSample
from dprect.engines.spark.order_pass import PassEngine, PassRunner, PassStrategy
from dprect.engines.spark.prefetch import (
    LabelCount,
    PrefetchStrategy,
    PrefixSpec,
    law_quantile,
    prefetch_specs,
    sampled_positives,
    take_sample,
)
from dprect.engines.spark.remote import partition_count
from dprect.engines.spark.rounds import RoundsStrategy
from dprect.engines.spark.shipped import shipped_widths
from dprect.engines.spark.sql import as_double
from dprect.engines.spark.strategy import Cut, Rows, Strategy

__all__ = ["DEFAULT_DRIVER_BUDGET_MB", "DEFAULT_STRATEGY", "STRATEGIES", "PrefixSpec",
           "SparkEngine", "check_budget", "choose_strategy", "law_quantile", "prefetch_specs",
           "sort_value"]

#: prefix length of every order when the engine is used without a privacy plan's lists
DEFAULT_PREFIX_ROWS = 4096
#: the ``prefetch`` pass's sample (feature index → values) and the table's partition count,
#: taken by :meth:`SparkEngine.presample`
Presampled = tuple[dict[int, np.ndarray], int | None]
#: a driver-side reader of the pass's sample (:func:`~dprect.engines.spark.file_sample.file_sample`
#: with the table's label and policy bound): given the rows wanted and the table's row
#: count (None: unknown), every feature's values and the estimate of the positives — the
#: record the Spark sample gives too —, or None where it cannot answer
SampleReader = Callable[[int, int | None], PassSample | None]


def sort_value(name: str, domain: Domain) -> Column:
    """Column ``name``'s sort value (:meth:`Domain.sort_sql <dprect.core.domains.Domain.sort_sql>`)
    as a Spark Column."""
    return F.expr(domain.sort_sql(name))


class SparkEngine:
    """The engine interface on the rows of a DataFrame.

    ``data``: the table; ``positive``: a Spark SQL predicate (text, see :mod:`.sql`)
    choosing the rows to learn from (None: every row), which must have numeric, non-null,
    finite ``features`` unless ``problem`` flags them (see
    :class:`dprect.engines.spark.checks.TableChecks`). Guarantee: :meth:`window` and :meth:`cut`
    answer exactly as :class:`~dprect.engines.numpy_engine.NumpyEngine` on those rows, whatever the
    strategy, the prefix lengths, the size hint or the partitioning.

    ``strategy`` — ``auto``, ``collect``, ``pass``, ``prefetch`` or ``rounds`` (module
    notes); ``auto``
    is resolved by :meth:`prepare` from the size hint and ``driver_budget_mb``
    (:func:`choose_strategy`), after which :attr:`strategy` names the one used.
    ``prefix`` — the prefetch lists: a list of :class:`PrefixSpec` (see
    :func:`prefetch_specs`), or one row count for every (axis, side) order carrying every
    column, or None for :data:`DEFAULT_PREFIX_ROWS`.
    ``problem`` / ``on_problem``: rows that make the input invalid (SQL text), and what to
    do when :meth:`prepare` finds one (raise: no window is answered after a problem row).
    ``size_hint``: about how many rows ``positive`` selects, used only to set the prefetch
    thresholds (:mod:`dprect.engines.spark.prefetch`) and to resolve ``auto``: a speed and
    memory aid inside the driver — no answer, message or error depends on it.
    ``driver_budget_mb``: ``auto``'s driver memory budget in MiB (None:
    :data:`DEFAULT_DRIVER_BUDGET_MB`). The engine refuses nothing for the rows' values; zero
    rows, or zero selected, is an ordinary input (every window is then empty).
    ``cache`` — persist the encoded rows for window jobs (released by :meth:`close`).
    ``ties`` — the refinement of the sort values (:meth:`set_ties`; None: none).
    ``never_cuts`` — the plan never cuts (the composition baseline:
    :func:`~dprect.engines.spark.prefetch.never_cuts`, from the public plan): the ``pass``
    strategy then lists keys without row ids (more orders per pass), and :meth:`cut` is
    refused.
    ``ready_pass`` — ``pass`` only: a pass engine (and its runner) whose first pass another
    job ran (a classes' fit: :mod:`dprect.engines.spark.class_pass`), answering in place
    of one this engine would build.
    ``presampled`` — ``prefetch`` only: the sample and partition count another engine on
    the same table took (:meth:`presample`), used as this engine's own.
    ``count_first`` — ``pass`` and ``prefetch`` only: the first pass counts the rows
    learned from (:meth:`remaining`), ``auto``'s count without a job — ``pass``'s reads
    every row (no JVM prefilter), ``prefetch``'s counts them in its one job
    (:mod:`dprect.engines.spark.prefetch`, "The count"; not with ties unless ``labels``
    gives them: then :attr:`counts` is False).
    ``labels`` — ``prefetch`` with ``count_first``: the fit's label count
    (:class:`~dprect.engines.spark.prefetch.LabelCount`): where it is known and drops no
    labelled row, it is the count (with ties too); its ``rows`` None marks a route
    taken on an estimate (the pass's thresholds then keep a margin).
    ``histograms_only`` — the plan asks :meth:`histograms` only (the quantile box): a
    strategy other than ``collect`` runs no first pass (``prefetch``'s lists, ``pass``'s
    keys: read for windows never asked); each query is one job (the rounds strategy's),
    and :attr:`strategy` names ``rounds`` once prepared (what ran). With ``count_first``
    (the box predicted for a pending plan, :func:`~dprect.engines.spark.fit.prepare_fit`)
    the one exception is ``prefetch``, whose pass counts the rows learned from in its
    one job; ``pass``'s would ship every positive to the Python
    workers only to count them — dearer than one aggregation (issue #43, d = 1,024) — so
    the box on ``pass`` runs no pass and its count is its first histogram job
    (:meth:`count_ahead`; :attr:`counts` False);
    ``collect``'s count (:meth:`remaining`) lists nothing for a window.
    ``hold`` — with ``histograms_only``, where the plan asks more than one query (the
    box's centres, then its sides): the rows learned from are persisted in the executors
    by the first job and read from there by the next (their raw values packed in
    binary blocks, :mod:`~dprect.engines.spark.held_kernel`; with ties their feature
    columns: :class:`~dprect.engines.spark.rounds.RoundsStrategy`; released by
    :meth:`close`).
    """

    def __init__(self, data: DataFrame, domains: Sequence[Domain],
                 features: Sequence[str] | None = None, *, strategy: str = DEFAULT_STRATEGY,
                 prefix: Sequence[PrefixSpec] | int | None = None, cache: bool = True,
                 positive: str | None = None, problem: str | None = None,
                 on_problem: Callable[[], None] | None = None,
                 size_hint: int | None = None, ties: TieBreaker | None = None,
                 driver_budget_mb: float | None = None,
                 schedule: Sequence[PrefixSpec] | None = None,
                 never_cuts: bool = False,
                 ready_pass: tuple[PassEngine, PassRunner] | None = None,
                 count_first: bool = False, histograms_only: bool = False,
                 hold: bool = False,
                 presampled: Presampled | None = None,
                 labels: LabelCount | None = None) -> None:
        if strategy not in STRATEGIES:
            raise ParameterError(f"spark strategy must be one of {', '.join(STRATEGIES)}; "
                                 f"got {strategy!r}")
        self._budget_mb = check_budget(driver_budget_mb)
        self._domains = list(domains)
        if not self._domains:
            raise InputDataError("the engine needs at least one feature column")
        names = list(features) if features is not None else list(data.columns)
        if len(names) != len(self._domains):
            raise ParameterError(
                f"{len(self._domains)} domains but {len(names)} feature columns")
        missing = [n for n in names if n not in data.columns]
        if missing:
            raise missing_columns(None, missing, list(data.columns))
        self.strategy = strategy
        self._data = data
        self._names = names
        self._positive = positive
        self._problem = problem
        self._on_problem = on_problem
        self._size_hint = size_hint
        self._cache = cache
        # each axis's sort values have the dtype of the core's own encoding (int64, float64)
        self._dtypes = [d.sort_dtype for d in self._domains]
        self._cuts: list[Cut] = []
        self._specs = self._resolve_prefix(prefix)
        self._schedule = self._specs if schedule is None else self._resolve_prefix(schedule)
        self._sample: dict[int, np.ndarray] | None = None
        self._partitions: int | None = None
        if presampled is not None:
            self._sample, self._partitions = presampled
        self._strategy: Strategy | None = None
        self._used = False  # a cut has been recorded or a window answered
        self._ties = self._check_ties(ties)
        self._never_cuts = bool(never_cuts)
        # a plan without tie bits that never cuts: collect answers on the shipped rows
        # as they are (MatrixEngine), without encoded columns (collect_bytes' held bound)
        self._held = self._never_cuts and self._ties is None
        self._ready_pass = ready_pass
        self._count_first = count_first
        self._labels = labels
        self._histograms_only = histograms_only
        self._hold = hold
        #: a histogram query answered ahead (:meth:`count_ahead`): its thresholds and
        #: counts, kept for the first :meth:`histograms` call, dropped by any other
        self._ahead: tuple[list[np.ndarray], list[np.ndarray]] | None = None
        #: about how many rows ``positive`` selects, from :meth:`presample`'s sample and
        #: the table's rows (None: not estimated); a speed aid inside the driver only
        self.estimate: int | None = None
        #: jobs run, rounds that fell back to a job, whether the pass was pruned and whether
        #: it was direct (diagnostics for tests and benchmarks; never part of a result)
        self.stats = {"window_jobs": 0, "prefetch_jobs": 0, "fallbacks": 0, "pruned": 0,
                      "direct": 0, "collect_jobs": 0, "passes": 0}

    # -- the engine interface ----------------------------------------------------------
    @property
    def dims(self) -> int:
        return len(self._domains)

    @property
    def implementation(self) -> Strategy | None:
        """The strategy object answering (None before :meth:`prepare`)."""
        return self._strategy

    def set_ties(self, ties: TieBreaker) -> None:
        """Refine every axis's sort values by ``ties`` (:mod:`dprect.core.ties`).

        The same ties as the engine's (the constructor's, or inactive ties when it has
        none): nothing to do. Otherwise only before :meth:`prepare` and before any window
        or cut: the ``prefetch`` pass must gather the lists in the refined order, so a fit
        hands the ties to the constructor and this call is then a no-op. The one
        exception: a prepared ``collect`` engine built without ties refines its collected
        rows on the driver, in place, before any window or cut (``auto``'s count chooses
        the method after the collect)."""
        wanted = self._check_ties(ties)
        if wanted == self._ties:
            return
        if (isinstance(self._strategy, CollectStrategy) and self._ties is None
                and wanted is not None and not self._used):
            self._strategy.set_ties(wanted)  # the collected rows, refined on the driver
            self._ties = wanted
            return
        if self._strategy is not None or self._used:
            raise ParameterError("set_ties must come before prepare() and the first window "
                                 "or cut (give the ties to the engine's constructor)")
        self._ties = wanted

    @property
    def counts(self) -> bool:
        """Whether the prepared engine holds the count of the rows learned from, so that
        :meth:`remaining` answers without a job: before any round, on ``collect``'s
        collected rows, or after a ``pass`` / ``prefetch`` first pass that counted them
        (``count_first``; ``prefetch``'s not with ties or on Spark Connect: its module
        notes, "The count"). False before :meth:`prepare` and for the other strategies
        (the fit then counts with a job of its own)."""
        return ((isinstance(self._strategy, CollectStrategy) and not self._used)
                or self._counted() is not None)

    def remaining(self) -> int:
        """Where the engine :attr:`counts` only, before any cut: the
        number of positives collected (counted by the first pass) — the rows learned from,
        the count ``auto``'s private count adds its noise to (exact, inside the driver).
        ``collect``'s count on the shipped rows also lists for a first window, unless
        the engine is ``histograms_only`` (no window is expected — speed only,
        :meth:`MatrixEngine.remaining <dprect.engines.numpy_matrix.MatrixEngine.remaining>`)."""
        if not self.counts:
            raise ParameterError("only a prepared collect engine, or a first pass that "
                                 "counted, before any round, counts its positives")
        s = self._strategy
        if isinstance(s, CollectStrategy):
            return s.remaining(lists=not self._histograms_only)
        counted = self._counted()
        assert counted is not None
        return counted

    def _counted(self) -> int | None:
        """The rows learned from as a ``pass`` / ``prefetch`` first pass counted them,
        before any round (None: not counted, or another strategy)."""
        s = self._strategy
        if self._used or not isinstance(s, PassStrategy | PrefetchStrategy):
            return None
        return s.learned()

    def presample(self, *, maybe: bool = False, rows: int | None = None,
                  read: SampleReader | None = None) -> Presampled | None:
        """For ``prefetch``: take the pass's sample and count the table's partitions now
        (short jobs that a caller may run beside others, e.g. the label checks); returns
        them (None: not taken), for an engine built later on the same table
        (``presampled``). ``maybe``: also for ``auto`` when it may resolve to ``prefetch``
        (:func:`may_prefetch`), sampling every feature (the specs of the method the count
        will choose are not known yet); otherwise not for ``auto``, whose sample may go
        unused. ``rows``: the table's row count (file metadata:
        :func:`~dprect.engines.spark.file_rows.file_rows`); the sample then also gives
        :attr:`estimate`, about how many rows ``positive`` selects
        (:func:`~dprect.engines.spark.prefetch.sampled_positives`; a speed aid inside the
        driver). ``read``: the sample read by the driver from the table's files where it
        can (:mod:`dprect.engines.spark.file_sample`: every feature, no Spark job); the
        Spark sample (:meth:`_spark_sample`) where it answers None or is not given. Either
        reader gives a :class:`~dprect.engines.spark.file_sample.PassSample`, taken the
        same way."""
        every = maybe and self.strategy == "auto" and may_prefetch(self.dims, self._budget_mb)
        if ((self.strategy == "prefetch" or every) and self._sample is None
                and (self._count_first or not self._histograms_only)):
            got = None if read is None else read(prefetch_module.SAMPLE_ROWS, rows)
            if got is None:
                got = self._spark_sample(rows, every=every)
            self._sample, self.estimate = got.values, got.estimate
            self._partitions = partition_count(self._data)
        return None if self._sample is None else (self._sample, self._partitions)

    def _spark_sample(self, rows: int | None, *, every: bool) -> PassSample:
        """The Spark sample, the reader that always answers: a job taking the first
        :data:`~dprect.engines.spark.prefetch.SAMPLE_ROWS` rows learned from
        (:func:`~dprect.engines.spark.prefetch.take_sample`) with every feature
        (``every``) or the columns the lists carry, and — given the table's ``rows`` —
        the estimate of the positives from the sampled rows' ids
        (:func:`~dprect.engines.spark.prefetch.sampled_positives`)."""
        values = {j: as_double(n) for j, n in enumerate(self._names)}
        specs = [PrefixSpec(0, "lo", 1, tuple(range(self.dims)))] if every else self._specs
        ids: list[np.ndarray] = []  # the sampled rows' ids, numbered where rows is given
        sample = take_sample(self._data, values, specs, positive=self._positive,
                             ids=None if rows is None else ids)
        return PassSample(sample, None if rows is None else sampled_positives(ids[0], rows))

    def prepare(self, size_hint: int | None = None) -> None:
        """Build the strategy and run its first job(s) (``prefetch``: the one pass;
        ``collect``: the one job; ``pass``: the first pass; ``rounds``: the input check);
        ``size_hint`` replaces the constructor's; ``auto`` is resolved here. Idempotent;
        :meth:`window` calls it first."""
        if self._strategy is not None:
            return
        self.resolve(size_hint)
        rows = Rows(self._data, self._names, self._domains, self._positive, self._problem,
                    self._ties, self._size_hint, self._cuts, self.stats)
        built: Strategy
        if self.strategy == "collect":
            built = CollectStrategy(rows, held=self._held)
        elif self._histograms_only and not (self._count_first and self.strategy == "prefetch"):
            # no first pass for windows never asked (prefetch's counts): histogram jobs
            built = RoundsStrategy(rows, cache=False, hold=self._hold)
            self.strategy = "rounds"  # what runs, not what was asked (``pass``, ...)
        elif self.strategy == "pass":
            built = PassStrategy(rows, self._schedule, self._budget_mb * 2**20,
                                 keys_only=self._never_cuts and self._ties is None,
                                 ready=self._ready_pass, count_first=self._count_first)
        elif self.strategy == "prefetch":
            built = PrefetchStrategy(rows, self._specs,
                                     RoundsStrategy(rows, cache=self._cache),
                                     sample=self._sample, partitions=self._partitions,
                                     count=self._count_first, labels=self._labels)
        else:
            built = RoundsStrategy(rows, cache=self._cache)
        bad = built.prepare()
        self._strategy = built
        if bad and self._on_problem is not None:
            self._on_problem()

    def resolve(self, size_hint: int | None = None) -> str:
        """The strategy, ``auto`` resolved (:func:`choose_strategy`; no job — inside the
        driver: run time and memory only); ``size_hint`` replaces the constructor's."""
        if size_hint is not None:
            self._size_hint = size_hint
        if self.strategy == "auto":
            self.strategy = choose_strategy(self._size_hint, self.dims, self._budget_mb,
                                            shipped_widths(self._data, self._names),
                                            held=self._held)
        return self.strategy

    def window(self, axis: int, side: Side, stop: int, size: int) -> np.ndarray:
        """Sort values at ranks [stop − size, stop) of the remaining rows ordered from
        ``side`` (rank 0 = largest for hi, smallest for lo); ranks past the remaining rows
        are absent. Same multiset as :meth:`NumpyEngine.window`."""
        self._check_axis(axis, side)
        self._used = True
        stop, size = int(stop), int(size)
        first = max(0, stop - size)
        if stop <= first:
            return np.empty(0, dtype=self._dtypes[axis])
        self.prepare()
        assert self._strategy is not None
        return self._strategy.window(axis, side, first, stop)

    def count_ahead(self, thresholds: Sequence[np.ndarray]) -> int:
        """Before any window or cut: answer the histogram query ``thresholds`` now (as
        :meth:`histograms`, one job on Spark) and return the number of remaining rows —
        its first axis's total, every row lying in exactly one slot of an axis — the
        count ``auto``'s private count adds its noise to, without a job of its own (issue
        #43: the quantile box's first query, :func:`~dprect.core.algorithms.box_first_query`,
        is public before the count). The counts are kept inside the driver for the first
        :meth:`histograms` call, answered from them if it asks exactly ``thresholds``
        before any cut (else dropped): nothing is released that the run does not ask."""
        if self._used:
            raise ParameterError("count_ahead must come before the first window or cut")
        asked = [np.array(t, copy=True) for t in axes_thresholds(thresholds, self.dims)]
        answer = self._answer(asked)  # a query answered ahead is no round of the run
        self._ahead = (asked, answer)
        return int(answer[0].sum())

    def histograms(self, thresholds: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Counts of the remaining rows between each axis's thresholds, as
        :meth:`NumpyEngine.histograms` gives them: on the driver's collected rows
        (``collect``), else ONE job over every axis (the rounds strategy's); a query
        :meth:`count_ahead` answered, asked first and before any cut, from its counts."""
        cuts = axes_thresholds(thresholds, self.dims)
        ahead, self._ahead = self._ahead, None
        self._used = True
        if ahead is not None and not self._cuts and all(
                np.array_equal(a, b) for a, b in zip(ahead[0], cuts, strict=True)):
            return ahead[1]
        return self._answer(cuts)

    def _answer(self, cuts: list[np.ndarray]) -> list[np.ndarray]:
        """The histogram query ``cuts`` (checked thresholds) answered by the strategy:
        on ``collect``'s rows, else one job (:meth:`histograms`, :meth:`count_ahead`)."""
        self.prepare()
        strat = self._strategy
        assert strat is not None
        if isinstance(strat, CollectStrategy):
            return strat.histograms(cuts)
        rounds = strat if isinstance(strat, RoundsStrategy) else RoundsStrategy(
            strat.rows, cache=False)  # type: ignore[attr-defined]
        # compiled on the executors where the table's public size pays for loading numba
        return rounds.histograms(
            cuts, compiled=(self._size_hint or 0) * self.dims >= JIT_VALUES)

    def cut(self, axis: int, side: Side, threshold: int | float) -> None:
        """Remove remaining rows with sort value ≥ threshold (hi) or ≤ threshold (lo)."""
        self._check_axis(axis, side)
        if self._never_cuts:
            raise ParameterError("this engine was built for a plan that never cuts")
        self._used = True
        t: int | float = float(threshold) if self._dtypes[axis] == np.float64 else int(threshold)
        self._cuts.append((axis, side, t))
        if self._strategy is not None:
            self._strategy.cut(axis, side, t)

    # -- resources ---------------------------------------------------------------------
    def close(self) -> None:
        """Release what the strategy holds (cached rows; the engine can still answer)."""
        if self._strategy is not None:
            self._strategy.close()

    def __enter__(self) -> SparkEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------
    def _check_axis(self, axis: int, side: str) -> None:
        if not 0 <= int(axis) < self.dims:
            raise ParameterError(f"axis must be in [0, {self.dims}), got {axis}")
        if side not in ("hi", "lo"):
            raise ParameterError(f"side must be 'hi' or 'lo', got {side!r}")

    def _check_ties(self, ties: TieBreaker | None) -> TieBreaker | None:
        """``ties`` if it refines some axis (None otherwise), checked against the axes."""
        if ties is None:
            return None
        if len(ties.bits) != self.dims:
            raise ParameterError(f"tie bits for {len(ties.bits)} axes, engine has {self.dims}")
        return ties if ties.active else None

    def _resolve_prefix(self, prefix: Sequence[PrefixSpec] | int | None) -> list[PrefixSpec]:
        if prefix is None or isinstance(prefix, int | np.integer):
            rows = DEFAULT_PREFIX_ROWS if prefix is None else int(prefix)
            if rows < 1:
                raise ParameterError(f"prefix rows must be >= 1, got {rows}")
            every = tuple(range(self.dims))
            return [PrefixSpec(j, s, rows, every) for j in range(self.dims)
                    for s in ("lo", "hi")]
        specs = list(prefix)
        for s in specs:
            self._check_axis(s.axis, s.side)
            if s.rows < 1 or s.axis not in s.columns:
                raise ParameterError(f"bad prefix spec {s!r}")
        return specs
