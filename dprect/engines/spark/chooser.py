"""``auto``: which Spark strategy a fit uses (:mod:`dprect.engines.spark.strategy`).

A speed and memory decision made inside the driver from public settings and the size hint
(the positive count the fit computes anyway) — every strategy returns the identical
answers, so the choice changes run time and memory, never a result. Measurements behind
the thresholds: benchmarks/spark_fit.py and docs/architecture.md's sweep.
"""

from __future__ import annotations

from collections.abc import Sequence

from dprect.core.errors import ParameterError
from dprect.engines.spark.collect import collect_bytes

STRATEGIES = ("auto", "collect", "pass", "prefetch", "rounds")
#: ``collect`` when it fits the driver budget, else ``pass`` (benchmarks/spark_fit.py
#: and docs/architecture.md for measurements)
DEFAULT_STRATEGY = "auto"
#: the driver memory budget of ``auto`` (MiB): a public setting, never a data quantity
DEFAULT_DRIVER_BUDGET_MB = 1024
#: ``auto`` takes ``prefetch`` at most at this many features (its filter is one OR over the
#: orders: fine at 8, a Catalyst problem from about 16 on) ...
PREFETCH_MAX_DIMS = 8
#: ... above this many positive values (positives × features: below it the count and
#: the sample jobs cost more than converting the positives to Arrow saves) ...
PREFETCH_MIN_VALUES = 1 << 24
#: ... and with a driver budget that holds its fixed cell budgets (MiB)
PREFETCH_DRIVER_MB = 512


def check_budget(driver_budget_mb: float | None) -> float:
    """The driver budget in MiB (None: :data:`DEFAULT_DRIVER_BUDGET_MB`), checked."""
    if driver_budget_mb is None:
        return float(DEFAULT_DRIVER_BUDGET_MB)
    if (isinstance(driver_budget_mb, bool) or not isinstance(driver_budget_mb, int | float)
            or not driver_budget_mb >= 0 or driver_budget_mb == float("inf")):
        raise ParameterError(f"driver_budget_mb must be a finite number >= 0, "
                             f"got {driver_budget_mb!r}")
    return float(driver_budget_mb)


def may_prefetch(dims: int, driver_budget_mb: float | None = None) -> bool:
    """Whether ``auto`` can choose ``prefetch`` for ``dims`` features and the budget
    (MiB), whatever the positive count: from public settings only."""
    return dims <= PREFETCH_MAX_DIMS and check_budget(driver_budget_mb) >= PREFETCH_DRIVER_MB


def choose_strategy(positives: int | None, dims: int, driver_budget_mb: float | None = None,
                    widths: Sequence[int] | None = None, *, held: bool = False) -> str:
    """``auto``'s choice. At most :data:`PREFETCH_MAX_DIMS` features with more than
    :data:`PREFETCH_MIN_VALUES` positive values and a budget of at least
    :data:`PREFETCH_DRIVER_MB`: ``prefetch`` (its JVM filter ships a few rows per order
    where the others convert every positive to Arrow: ≈ 1.4× a scan against 1.8× at
    1.6·10^7 rows × 8 features, benchmarks/spark_fit.py; its driver memory is bounded by
    its own fixed cell budgets). Otherwise ``collect`` when :func:`collect_bytes` (with
    the features' shipped ``widths``, from the schema; None: 8 bytes each) ≤ the budget
    (MiB), else ``pass`` (also when ``positives`` is unknown), whose driver memory
    the budget bounds whatever the table. ``held``: the plan has no tie bits and never
    cuts (public, from the plan), so ``collect`` answers on the shipped rows without
    encoded columns (:func:`collect_bytes` with ``held``). A speed and memory decision
    inside the driver: every plan returns the identical answers."""
    budget = check_budget(driver_budget_mb)
    if positives is None:
        return "pass"
    if may_prefetch(dims, budget) and positives * dims > PREFETCH_MIN_VALUES:
        return "prefetch"
    return "collect" if collect_fits(positives, dims, budget, widths, held=held) else "pass"


def collect_fits(positives: int, dims: int, driver_budget_mb: float | None = None,
                 widths: Sequence[int] | None = None, *, held: bool = False) -> bool:
    """Whether ``collect``'s driver memory for ``positives`` rows (:func:`collect_bytes`)
    is within the budget (MiB); ``widths`` and ``held`` as in :func:`choose_strategy`."""
    return collect_bytes(positives, dims, widths, held=held) <= \
        check_budget(driver_budget_mb) * 2**20


__all__ = ["DEFAULT_DRIVER_BUDGET_MB", "DEFAULT_STRATEGY", "STRATEGIES", "check_budget",
           "choose_strategy", "collect_fits", "may_prefetch"]
