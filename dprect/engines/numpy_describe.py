"""The numpy engine's part of a describe run (DP count, sum and mean per public group and
column: :mod:`dprect.core.aggregates`): the table read in memory as bounds reads it
(:func:`dprect.engines.numpy_bounds.read_grouped`: Parquet or CSV, schema checked), then
the core's :func:`~dprect.core.aggregates.run_describe` on every (group, column)'s values,
in blocks of groups drawn by worker processes on a large run
(:mod:`dprect.engines.driver_pool`; the same result for a seed).

The row rules (:func:`values_by_cell`, shared with :func:`dprect.describe`): every row
counts; a null, NaN or ±inf value is left out of its column only; a row of no listed group
is dropped and never reported; a listed group without rows is described all the same.
They are row-local, so neighbouring tables stay neighbouring and they cost no privacy.
Nothing here depends on the rows' values but what the core is handed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dprect.core.aggregates import DescribePlan, DescribeResult, run_describe
from dprect.core.randomness import RandomSource
from dprect.core.request import Source
from dprect.engines.driver_pool import block_mapper
from dprect.engines.numpy_bounds import read_grouped
from dprect.engines.prepared import PreparedRun


def values_by_cell(values: Sequence[np.ndarray], group: np.ndarray,
                   group_names: Sequence[Any]) -> dict[tuple[Any, int], np.ndarray]:
    """Each (group name, column index)'s finite values, as the core takes them:
    ``values[j]`` is column j as float64 (nulls as NaN), ``group[i]`` row i's index in
    the public list ``group_names`` (−1: no listed group, dropped). The rows are sorted by
    group once (stable), so many groups cost one sort per column."""
    order = np.argsort(group, kind="stable")
    cuts = np.searchsorted(np.asarray(group)[order], np.arange(len(group_names) + 1))
    out: dict[tuple[Any, int], np.ndarray] = {}
    for j, column in enumerate(values):
        x = np.asarray(column, dtype=np.float64)[order]
        for gi, name in enumerate(group_names):
            part = x[cuts[gi]:cuts[gi + 1]]
            out[(name, j)] = part[np.isfinite(part)]
    return out


class NumpyDescribePrepared(PreparedRun):
    """The columns in memory (float64, nulls as NaN) and each row's group index."""

    def __init__(self, columns: list[str], values: list[np.ndarray], group: np.ndarray
                 ) -> None:
        super().__init__()
        self.columns = columns
        self.values = values
        self.group = group

    def describe(self, plan: DescribePlan, group_names: list[Any], rng: RandomSource
                 ) -> DescribeResult:
        """Every (group, column) of the run, in the public order of ``group_names`` (the
        core's names: the listed values, or ``[None]`` ungrouped)."""
        cells = values_by_cell(self.values, self.group, group_names)
        with block_mapper(len(group_names), len(self.columns)) as (mapper, parts):
            return run_describe(plan, cells, group_names, self.columns, rng, mapper, parts)


class NumpyDescribeRoute:
    """Read the table in memory and check its schema (numeric columns, a group column
    able to hold the listed values); nothing drawn, spent or written, no refusal that
    depends on a value."""

    def open(self, source: Source, groups: list[str] | None,
             progress: Callable[[str], None]) -> NumpyDescribePrepared:
        values, group, _ = read_grouped(source, groups, progress)
        return NumpyDescribePrepared(list(source.columns), values, group)


__all__ = ["NumpyDescribePrepared", "NumpyDescribeRoute", "values_by_cell"]
