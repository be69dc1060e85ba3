"""The ``collect`` strategy: every positive row's raw features to the driver in one job.

:func:`collect_positives` runs ONE Spark job that keeps the positive rows (and the rows
that make the input invalid, flagged so that they are reported and never used) and ships
each feature's *raw* value as Arrow: FloatType and DoubleType columns as they are (a
float32 column stays float32: half the bytes), every other numeric type (integers,
decimals, booleans, the null type) read as a double by Spark's cast
(:func:`~dprect.engines.spark.sql.as_double`). No sort value and no tie hash is computed
in SQL: the driver encodes the values with the core's own code, batch by batch and column
by column (float64 conversion, :meth:`Domain.encode <dprect.core.domains.Domain.encode>`,
then :meth:`TieBreaker.refine <dprect.core.ties.TieBreaker.refine>` when the engine has
ties), releasing each Arrow batch once converted, and answers every window and cut with
:class:`~dprect.engines.numpy_engine.NumpyEngine` on the encoded columns.

**Exactness.** The numpy engine encodes the float64 a feature reads as: a Spark engine
(:meth:`Domain.sort_sql <dprect.core.domains.Domain.sort_sql>`) reads it as
``CAST(x AS DOUBLE)``, and the in-memory input path
(:func:`dprect.engines.arrow_input.numeric_column`) as Arrow's cast to float64 — the two
agree (integers rounded to the nearest double, booleans 0/1, floats widened). Here the
driver sees that same float64: a DoubleType value is shipped as those 64 bits; a FloatType
value is shipped as its 32 bits and widened on the driver (float32 → float64 is exact in
IEEE-754, as is Spark's cast, so both give the same double); every other type is shipped
as Spark's own ``CAST(x AS DOUBLE)``, the very double ``sort_sql`` encodes. The driver then
applies :meth:`Domain.encode` — the reference encoding, identical to the numpy engine by
construction — to those doubles, and the tie refinement with the core's
:meth:`TieBreaker.refine`. A sort value depends on its own value and r_j on its own row and
its occurrence rank among the rows identical to it, computed once over all the collected
rows (:func:`~dprect.core.ties.occurrence_ranks`) before the blocks, so encoding batch by
batch, or refining block by block, gives the same integers as encoding the whole column
at once. Arrow moves bits, not decimal text, so no
rounding happens in transit. Hence every column equals what the numpy engine holds for the
same rows, bit for bit and with the same dtype (int64 or float64), and the engine answers
exactly as :class:`~dprect.engines.numpy_engine.NumpyEngine` does.

**Driver memory** (:func:`collect_bytes`). With W shipped bytes per row (4 per float32
feature, 8 per other feature), n positives and d features: the JVM's collected Arrow
result (≈ W·n), the Python Arrow batches (≈ W·n, freed batch by batch as they are
encoded) and the int64/float64 numpy columns (8·d·n), plus one batch column's or one
refine block's transients (bounded by Spark's Arrow batch size and
:data:`~dprect.engines.numpy_engine.REFINE_CELLS`,
not by n: :data:`TRANSIENT_BYTES`; with ties, the occurrence ranks and their transients —
about six int64 per row, :func:`~dprect.core.ties.occurrence_ranks` — come after the Arrow
batches are freed and stay within their W·n bytes from d = 12 features on, or 6 shipped
as doubles; not measured below), plus one more W·n: at d = 128 the Python driver's
peak measured 1.38 GB over the interpreter for n = 6·10^5 (W = 512), above W·n + 8·d·n
= 0.92 GB — the Arrow stream's read buffers and the allocator's retained pages. So
n·(3·W + 8·d) + that constant (1.57 GB there); with every feature shipped as 8 bytes
that is n·d·32 bytes (:data:`COLLECT_OVERHEAD` = 4 times
8 bytes).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame

from dprect.core.domains import Domain, Side
from dprect.core.ties import TieBreaker
from dprect.engines.numpy_engine import REFINE_CELLS, NumpyEngine, refine_in_place
from dprect.engines.numpy_matrix import LIST_BYTES, MatrixEngine
from dprect.engines.spark.shipped import BAD, DOUBLE_BYTES, shipped_rows, shipped_widths
from dprect.engines.spark.strategy import Rows

__all__ = ["COLLECT_OVERHEAD", "REFINE_CELLS", "SHIPPED_COPIES", "TRANSIENT_BYTES",
           "CollectStrategy", "collect_bytes", "collect_positives", "encode_collected",
           "holds_rows", "shipped_widths"]

#: copies of the shipped bytes the driver holds at its peak: the JVM's Arrow result, the
#: Python Arrow batches, and their read buffers and retained pages (module notes)
SHIPPED_COPIES = 3
#: driver bytes per collected value over 8 bytes when every feature ships as a double:
#: the shipped copies plus the int64/float64 numpy column
COLLECT_OVERHEAD = SHIPPED_COPIES + 1

#: the driver's constant share: the transients of one refine block (REFINE_CELLS int64
#: values and a few row arrays) or of one column of an Arrow batch
TRANSIENT_BYTES = 32 << 20


def collect_bytes(positives: int, dims: int, widths: Sequence[int] | None = None, *,
                  held: bool = False) -> int:
    """An upper bound on the driver memory the plan needs for ``positives`` rows of
    ``dims`` features (module notes): positives × (:data:`SHIPPED_COPIES` × shipped bytes
    per row + 8 × dims) + a constant for one batch's transients. ``widths``: the bytes each
    feature is shipped as (:func:`shipped_widths`); None: 8 each, the bound for every
    schema, i.e. positives × dims × 8 × :data:`COLLECT_OVERHEAD` bytes (+ the constant).
    ``held``: the plan may be answered where the rows are shipped (no tie bits, never
    cuts: :class:`~dprect.engines.numpy_matrix.MatrixEngine` on the Arrow batches, no
    8 × dims encoded bytes a row but the engine's lists,
    :data:`~dprect.engines.numpy_matrix.LIST_BYTES`), which ``collect`` does when that is
    the smaller bound (:func:`holds_rows`): the smaller of the two."""
    encoded = _bytes(positives, dims, widths, held=False)
    return min(encoded, _bytes(positives, dims, widths, held=True)) if held else encoded


def holds_rows(positives: int, dims: int, widths: Sequence[int] | None = None) -> bool:
    """Whether a plan that may be answered on the shipped rows (``held``) is: when that
    bound (3 shipped copies + the lists' cap) is below the encoded columns' — from about
    :data:`~dprect.engines.numpy_matrix.LIST_BYTES` / (8·dims) positives on."""
    return _bytes(positives, dims, widths, held=True) < _bytes(positives, dims, widths,
                                                                held=False)


def _bytes(positives: int, dims: int, widths: Sequence[int] | None, *, held: bool) -> int:
    shipped = DOUBLE_BYTES * int(dims) if widths is None else int(sum(widths))
    if held:
        return int(positives) * SHIPPED_COPIES * shipped + LIST_BYTES + TRANSIENT_BYTES
    return int(positives) * (SHIPPED_COPIES * shipped + 8 * int(dims)) + TRANSIENT_BYTES


def collect_positives(data: DataFrame, names: Sequence[str], domains: Sequence[Domain], *,
                      positive: str | None = None, problem: str | None = None,
                      ties: TieBreaker | None = None, held: bool = False
                      ) -> tuple[bool, NumpyEngine | MatrixEngine]:
    """The plan's one job, then the driver's encoding (module notes).

    Keeps the rows where ``positive`` holds (every row when None) and, when ``problem`` is
    given, the rows where it holds too, flagged: such rows are reported, never used.
    Returns whether a flagged row was seen and the :class:`NumpyEngine` on the encoded
    (and, with ``ties``, refined) positives; its columns have the dtype of each domain's
    :meth:`~dprect.core.domains.Domain.encode`. ``held``: a
    :class:`~dprect.engines.numpy_matrix.MatrixEngine` on the shipped Arrow batches
    instead (no encoded columns; for a plan without tie bits that never cuts)."""
    table = shipped_rows(data, names, positive, problem).toArrow()
    if held and (ties is None or not ties.active):
        rows, used, bad = _unflagged(table, problem is not None)
        widths = [rows.schema.field(j).type.byte_width for j in range(len(domains))]
        if holds_rows(rows.num_rows, len(domains), widths):  # answered where shipped
            del table
            return bad, MatrixEngine.from_batches(rows.to_batches(), used, list(domains))
        del rows
    return encode_collected(table, domains, flagged=problem is not None, ties=ties)


def _unflagged(table: pa.Table, flagged: bool) -> tuple[pa.Table, np.ndarray | None, bool]:
    """The shipped rows without their problem flag, which rows are used (None: every
    row) and whether a flagged row was seen."""
    if not flagged:
        return table, None, False
    flags = table.column(BAD).to_numpy(zero_copy_only=False).astype(bool)
    bad = bool(flags.any())
    return table.drop_columns([BAD]), (~flags if bad else None), bad


def encode_collected(table: pa.Table, domains: Sequence[Domain], *, flagged: bool,
                     ties: TieBreaker | None = None) -> tuple[bool, NumpyEngine]:
    """The driver's half of :func:`collect_positives`: the shipped rows ``table``
    (:func:`~dprect.engines.spark.shipped.shipped_rows`: one column per domain, then,
    when ``flagged``, the problem flag) encoded and, with ``ties``, refined into a
    :class:`NumpyEngine` (the module notes' exactness); whether a flagged row was seen.
    Also the classes' one collect (:mod:`dprect.engines.spark.class_collect`), on each
    class's rows."""
    table, used, bad = _unflagged(table, flagged)  # used: per row, not flagged
    total = table.num_rows if used is None else int(used.sum())
    columns = [np.empty(total, dtype=d.sort_dtype) for d in domains]
    batches = table.to_batches()
    del table  # the batches alone hold the Arrow data now: each is freed once encoded
    batches.reverse()
    start = stop = 0  # rows of the batch in the collected table; rows written so far
    written = 0
    while batches:
        batch = batches.pop()
        stop = start + batch.num_rows
        mask = None if used is None else used[start:stop]
        for j, domain in enumerate(domains):
            x = _as_float64(batch.column(j), mask)
            columns[j][written:written + len(x)] = domain.encode(x)
            del x
        written += batch.num_rows if mask is None else int(mask.sum())
        start = stop
        del batch
    if ties is not None and ties.active:  # ranks over all the positives, then blocks
        refine_in_place(columns, ties)
    return bad, NumpyEngine(columns, refined=ties)


def _as_float64(values: pa.Array, mask: np.ndarray | None) -> np.ndarray:
    """A shipped column as float32 or float64 numbers, the ``mask`` rows only: every
    ``Domain.encode`` widens float32 to float64 itself, exactly, so no widened copy is
    made here.

    A null (only in a flagged row, which ``mask`` drops) reads as NaN here."""
    x = values.to_numpy(zero_copy_only=False)
    return x if mask is None else x[mask]


class CollectStrategy:
    """The ``collect`` strategy (:mod:`dprect.engines.spark.strategy`): the one job of
    :func:`collect_positives`, then every window and cut answered on the driver by the
    numpy engine on the encoded columns — or, ``held`` (a plan without tie bits that never
    cuts), by :class:`~dprect.engines.numpy_matrix.MatrixEngine` on the shipped batches."""

    def __init__(self, rows: Rows, *, held: bool = False) -> None:
        self.rows = rows
        self.held = held
        self._local: NumpyEngine | MatrixEngine | None = None

    def prepare(self) -> bool:
        r = self.rows
        bad, local = collect_positives(r.data, r.names, r.domains, positive=r.positive,
                                       problem=r.problem, ties=r.ties, held=self.held)
        for axis, side, t in r.cuts:  # cuts recorded before the job
            local.cut(axis, side, t)
        self._local = local
        r.stats["collect_jobs"] = 1
        return bad

    def remaining(self, *, lists: bool = True) -> int:
        """The collected rows not yet cut (all the positives learned from, before a cut);
        ``lists``: on the shipped rows, the count's pass also lists for a first window
        (:meth:`MatrixEngine.remaining <dprect.engines.numpy_matrix.MatrixEngine.remaining>`)."""
        assert self._local is not None
        if isinstance(self._local, MatrixEngine):
            return self._local.remaining(lists=lists)
        return self._local.remaining()

    def set_ties(self, ties: TieBreaker) -> None:
        """Refine the collected columns now, on the driver and in place (before any
        window or cut): the same values the job's own refinement gives."""
        assert self._local is not None
        self._local.set_ties(ties, in_place=True)

    def window(self, axis: int, side: Side, first: int, stop: int) -> np.ndarray:
        assert self._local is not None
        return self._local.window(axis, side, stop, stop - first)

    def histograms(self, thresholds: Sequence[np.ndarray]) -> list[np.ndarray]:
        assert self._local is not None
        return self._local.histograms(thresholds)

    def cut(self, axis: int, side: Side, threshold: int | float) -> None:
        if self._local is not None:
            self._local.cut(axis, side, threshold)

    def close(self) -> None:
        """Nothing is held in Spark."""
