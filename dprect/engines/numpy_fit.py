"""The numpy engine's part of a fit: the table read in memory with
:mod:`dprect.engines.arrow_input` (Parquet or CSV), its schema checked, the positive rows
kept (float64) and fitted on a :class:`~dprect.engines.numpy_engine.NumpyEngine` (the Spark
engine's twin: :mod:`dprect.engines.spark.fit`). Nothing depends on the rows' values:
other labels and nulls are negatives, rows with an invalid feature are dropped (unless
``invalid_rows`` is ``error``), and no rows or no positives make an ordinary run."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from dprect.core.algorithms import run_plan
from dprect.core.domains import Domain
from dprect.core.labels import check_class_pairs, resolve_positive_label
from dprect.core.planner import Plan
from dprect.core.randomness import RandomSource
from dprect.core.reading import check_invalid_rows, select_rows
from dprect.core.request import FitRequest, InvalidRows, Source
from dprect.core.result import FitResult
from dprect.engines.contest_tally import numpy_tally
from dprect.engines.prepared import PreparedRun

if TYPE_CHECKING:
    import pyarrow as pa


class NumpyPrepared(PreparedRun):
    """The rows in memory (float64), fitted on a
    :class:`~dprect.engines.numpy_matrix.MatrixEngine` over the table's matrix and its
    ``positive`` flags (the ``drop`` policy: the engine selects the same rows as
    :func:`select_rows`, without copying them) — or, ``positive`` None, on a
    :class:`NumpyEngine` over ``rows``, the positive rows already selected."""

    def __init__(self, rows: np.ndarray, domains: list[Domain], features: list[str],
                 plan: Plan, positive: np.ndarray | None = None,
                 table: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        super().__init__()
        self.rows = rows
        self.positive = positive
        #: the whole table and its positive flags, for auto's contest's tally (with
        #: ``positive`` given: ``rows`` and ``positive`` themselves)
        self.table = table if table is not None or positive is None else (rows, positive)
        self.domains = domains
        self.features = features
        self.plan = plan

    def run(self, *, seed: int | None = None) -> FitResult:
        from dprect.engines.numpy_engine import NumpyEngine
        from dprect.engines.numpy_matrix import MatrixEngine

        engine = (NumpyEngine.from_features(self.rows, self.domains) if self.positive is None
                  else MatrixEngine(self.rows, self.positive, self.domains))
        tally = (None if self.table is None
                 else numpy_tally(self.table[0], self.table[1], self.domains))
        return run_plan(engine, self.domains, self.features, self.plan,
                        RandomSource(seed=seed), tally=tally)



class NumpyRoute:
    """Read the table in memory with :mod:`dprect.engines.arrow_input` (Parquet or CSV)
    and check its schema. Nothing depends on the rows' values: other labels and nulls are
    negatives, rows with an invalid feature are dropped (unless ``invalid_rows`` is
    ``error``), and no rows or no positives make an ordinary run."""

    def open(self, source: Source, domains: list[Domain], request: FitRequest, plan: Plan,
             progress: Callable[[str], None]) -> NumpyPrepared:
        progress(f"reading {source.path}")
        return self._prepared(source, domains, [request], plan)[0]

    def open_classes(self, source: Source, domains: list[Domain],
                     requests: Sequence[FitRequest], plan: Plan,
                     progress: Callable[[str], None]) -> NumpyClasses:
        """Every class of a classes' fit on ONE read of the file: each class's positives
        selected from it as :meth:`open` selects one class's."""
        progress(f"reading {source.path} (once for {len(requests)} classes)")
        return NumpyClasses(self._prepared(source, domains, requests, plan))

    def open_selected_classes(self, source: Source, domains: list[Domain],
                              choose: Callable[[Mapping[str, int], str],
                                               Sequence[FitRequest]],
                              plan: Plan, progress: Callable[[str], None], *,
                              invalid_rows: InvalidRows | str) -> NumpyClasses:
        """The classes found privately (docs/privacy.md §18) on ONE read of the file:
        every schema check, the ``error`` invalid-rows policy's check over every row
        (:func:`~dprect.core.reading.check_invalid_rows`: before the draw, so a refusal
        never depends on which classes it keeps), then each label value's rows
        (:func:`~dprect.core.classes.label_candidates`) and the label's kind handed to
        ``choose``, which gives the classes' requests; each prepared as
        :meth:`open_classes` does."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from dprect.core.classes import label_candidates
        from dprect.engines.arrow_input import python_values
        from dprect.engines.bounds_input import integral_arrow

        progress(f"reading {source.path} (once: the classes found privately)")
        table, matrix, kind = self._read(source)
        check_invalid_rows(matrix, source.features, invalid_rows)  # before the draw
        col = table.column(source.fit_label)
        if pa.types.is_dictionary(col.type):
            col = pc.cast(col, col.type.value_type)
        if kind == "numeric" and not integral_arrow(col.type):
            # labels compare as float64, an integer type's as its exact integers
            col = pc.cast(col, pa.float64(), safe=False)
        counted = pc.value_counts(col) if kind != "null" else None
        pairs = [] if counted is None else list(zip(  # text as Spark reads its bytes
            python_values(counted.field("values")), counted.field("counts").to_pylist(),
            strict=True))
        requests = choose(label_candidates(pairs, kind), kind)
        return NumpyClasses(self._prepared(source, domains, requests, plan,
                                           (table, matrix, kind)))

    @staticmethod
    def _read(source: Source) -> tuple[pa.Table, np.ndarray, str]:
        """The file read once: the table, the features' matrix, the label's kind (from
        the schema: no row is looked at)."""
        from dprect.engines.arrow_input import label_kind, numeric_column, read_table

        label = source.fit_label
        table = read_table(source.path, [*source.features, label], source.format)
        matrix = np.column_stack([numeric_column(table, f, nulls_as_nan=True)
                                  for f in source.features])
        return table, matrix, label_kind(table, label)

    @staticmethod
    def _prepared(source: Source, domains: list[Domain], requests: Sequence[FitRequest],
                  plan: Plan, read: tuple[pa.Table, np.ndarray, str] | None = None
                  ) -> list[NumpyPrepared]:
        """The file read once (or ``read``: :meth:`_read`'s); per request, its positive
        rows (the label's kind from the schema: no row is looked at)."""
        import pyarrow as pa

        from dprect.engines.arrow_input import label_matches
        from dprect.engines.bounds_input import integral_arrow

        label = source.fit_label
        table, matrix, kind = read if read is not None else NumpyRoute._read(source)
        label_type = table.schema.field(label).type
        # two classes the column's type reads as one, refused naming its kind (schema and
        # list only, before anything is charged)
        single = pa.types.is_float32(label_type)  # a float32 label column
        check_class_pairs([r.positive_label for r in requests], kind, label,
                          integral=integral_arrow(label_type), single=single)
        prepared = []
        for request in requests:
            value = resolve_positive_label(request.positive_label, kind, label,
                                           integral=integral_arrow(label_type),
                                           single=single)
            positive = label_matches(table, label, value)
            if InvalidRows.parse(request.invalid_rows, "invalid_rows") is InvalidRows.DROP:
                prepared.append(NumpyPrepared(matrix, domains, list(source.features), plan,
                                              positive=positive))
                continue
            rows = select_rows(matrix, positive, source.features,
                               invalid_rows=request.invalid_rows)
            prepared.append(NumpyPrepared(rows, domains, list(source.features), plan,
                                          table=(matrix, positive)))
        return prepared


class NumpyClasses(PreparedRun):
    """Every class's prepared fit, in class order."""

    def __init__(self, prepared: list[NumpyPrepared]) -> None:
        super().__init__()
        self.prepared = prepared


__all__ = ["NumpyClasses", "NumpyPrepared", "NumpyRoute"]
