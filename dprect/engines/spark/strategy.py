"""The Spark engine's strategies behind one small interface.

:class:`~dprect.engines.spark.engine.SparkEngine` answers the core's windows and cuts
through ONE :class:`Strategy`, chosen when the engine is prepared
(:mod:`dprect.engines.spark.chooser` for ``auto``); each strategy lives in its own module:

* ``collect`` — :class:`dprect.engines.spark.collect.CollectStrategy`: every positive
  row's raw features to the driver in one job, answered there by the numpy engine;
* ``pass`` — :class:`dprect.engines.spark.order_pass.PassStrategy`: vectorised passes
  gather every order's list, driver memory within a public budget;
* ``prefetch`` — :class:`dprect.engines.spark.prefetch.PrefetchStrategy`: one filtered
  scan gathers a prefix of every order, a round whose list runs short falls back to a job;
* ``rounds`` — :class:`dprect.engines.spark.rounds.RoundsStrategy`: one top-N job a round;
  the simple reference the exactness tests compare the others with.

Every strategy answers exactly as :class:`~dprect.engines.numpy_engine.NumpyEngine` on the
same rows (docs/algorithm.md §7): the choice changes run time and memory, never an answer.
A strategy is built from the engine's :class:`Rows` (the table and its public settings,
the cuts made so far, the diagnostics it counts into).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from pyspark.sql import DataFrame

from dprect.core.domains import Domain, Side
from dprect.core.ties import TieBreaker

#: a cut as the engine records it: (axis, side, sort-value threshold)
Cut = tuple[int, Side, int | float]


@dataclass
class Rows:
    """What every strategy reads: the table, its feature columns and their domains, the
    SQL predicates choosing the rows learned from (``positive``) and flagging invalid ones
    (``problem``), the tie refinement, the size hint (a speed aid only), the cuts recorded
    so far (shared with the engine: a strategy sees every later cut too) and the engine's
    diagnostic counters."""

    data: DataFrame
    names: list[str]
    domains: list[Domain]
    positive: str | None
    problem: str | None
    ties: TieBreaker | None
    size_hint: int | None
    cuts: list[Cut]
    stats: dict[str, int]
    sorts: dict[int, str] = field(init=False)
    dtypes: list[np.dtype] = field(init=False)

    def __post_init__(self) -> None:
        # each axis's sort values: the SQL twin of the core's encoding, with its dtype
        self.sorts = {j: d.sort_sql(n) for j, (n, d) in enumerate(
            zip(self.names, self.domains, strict=True))}
        self.dtypes = [np.dtype(d.sort_dtype) for d in self.domains]


class Strategy(Protocol):
    """How a prepared Spark engine answers the core."""

    def prepare(self) -> bool:
        """Run the strategy's first job(s) and apply the cuts recorded so far; whether a
        row that makes the input invalid was seen."""
        ...

    def window(self, axis: int, side: Side, first: int, stop: int) -> np.ndarray:
        """Sort values at ranks [first, stop) of the remaining rows ordered from ``side``
        (ranks past the remaining rows are absent)."""
        ...

    def cut(self, axis: int, side: Side, threshold: int | float) -> None:
        """A cut the engine has just recorded in :attr:`Rows.cuts`."""
        ...

    def close(self) -> None:
        """Release what the strategy holds (cached rows)."""
        ...


__all__ = ["Cut", "Rows", "Strategy"]
