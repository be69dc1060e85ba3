"""The numpy engine's part of a bounds run: the table read in memory with
:mod:`dprect.engines.arrow_input` (Parquet or CSV), its schema checked, and every (group,
column) histogram counted by the core's :func:`~dprect.core.bounds.histogram` (the Spark
engine's twin: :mod:`dprect.engines.spark.bounds`). Row rules as docs/algorithm.md §9
states them: a null, NaN or ±inf value is left out of its column only; a row of an
unlisted group is dropped. Nothing depends on the rows' values but the histograms."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dprect.core.bounds import histogram
from dprect.core.domains import Domain
from dprect.core.errors import ParameterError
from dprect.core.request import Source
from dprect.engines.bounds_input import Histograms, group_kind_of_arrow, resolve_groups
from dprect.engines.prepared import PreparedRun
from dprect.engines.row_kernels import group_index


class NumpyBoundsPrepared(PreparedRun):
    """The columns in memory (float64, nulls as NaN) and each row's group index."""

    def __init__(self, values: list[np.ndarray], group: np.ndarray, groups: int,
                 domains: list[Domain]) -> None:
        super().__init__()
        self.values = values
        self.group = group
        self.groups = groups
        self.domains = domains

    def histograms(self) -> Histograms:
        """The core's :func:`~dprect.core.bounds.histogram` of each (group, column): the
        rows sorted by group once per column, so many groups cost no more passes."""
        out: Histograms = {}
        listed = self.group >= 0  # rows of unlisted groups: dropped
        for j, (x, domain) in enumerate(zip(self.values, self.domains, strict=True)):
            use = listed & np.isfinite(x)  # null, NaN, ±inf: left out of this column only
            group, values = self.group[use], x[use]
            order = np.argsort(group, kind="stable")
            group, values = group[order], values[order]
            edges = np.searchsorted(group, np.arange(self.groups + 1))
            for g in range(self.groups):
                out[(g, j)] = histogram(values[edges[g]:edges[g + 1]], domain)
        return out



def read_grouped(source: Source, groups: list[str] | None, progress: Callable[[str], None]
                 ) -> tuple[list[np.ndarray], np.ndarray, int]:
    """A grouped table read in memory with :mod:`dprect.engines.arrow_input` (Parquet or
    CSV), its schema checked (every column numeric, the group column able to hold the
    listed values): each column as float64 (nulls as NaN), each row's index in the public
    group list (−1: a row of no listed group) and the number of groups. Shared by the
    numpy routes of bounds and of describe (:mod:`dprect.engines.numpy_describe`);
    nothing depends on the rows' values."""
    from dprect.engines.arrow_input import numeric_column, read_table

    if source.format == "delta":
        raise ParameterError("Delta input needs the Spark engine (--engine spark)")
    if (source.where, source.version, source.timestamp) != (None, None, None):
        raise ParameterError("a row filter or a Delta snapshot needs the Spark engine "
                             "(--engine spark)")
    progress(f"reading {source.path}")
    table = read_table(source.path, source.read_columns(), source.format)
    values = [numeric_column(table, c, nulls_as_nan=True) for c in source.columns]
    if source.group_by is None:
        return values, np.zeros(table.num_rows, dtype=np.int32), 1
    assert groups is not None
    kind = group_kind_of_arrow(table.schema.field(source.group_by).type, source.group_by)
    resolved = resolve_groups(groups, kind, source.group_by)  # schema + list only
    return values, group_index(table.column(source.group_by), kind, resolved), len(groups)


class NumpyBoundsRoute:
    """Read the table in memory (:func:`read_grouped`) and check its schema; nothing
    depends on the rows' values."""

    def open(self, source: Source, domains: list[Domain], groups: list[str] | None,
             progress: Callable[[str], None]) -> NumpyBoundsPrepared:
        values, group, count = read_grouped(source, groups, progress)
        return NumpyBoundsPrepared(values, group, count, domains)


__all__ = ["NumpyBoundsPrepared", "NumpyBoundsRoute", "read_grouped"]
