"""An independent re-draw of a describe run for tests (issue #23): the documented draw
order — one stream per group, seeded by the run's source in the group order; in a
group's stream every centre first (columns in order), then per cell the lower side, the
upper side, the count noise, the sum noise — with the sorted-array functions of
:mod:`dprect.core.tail_bounds` and the row-by-row truncated sum
(:func:`~dprect.core.aggregates.centred_integer_sum`), not the statistics route. An engine
whose order or truncation differs from the documented one disagrees with it."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dprect.core.aggregates import Cell, DescribePlan, centred_integer_sum, choose_pivot
from dprect.core.intervals import query_intervals
from dprect.core.randomness import RandomSource
from dprect.core.step_exponential import draw_step
from dprect.core.tail_bounds import CandidateStream, candidates, draw_centre, tail_counts


def _float(column: Any) -> np.ndarray:
    out = pc.fill_null(pc.cast(column, pa.float64(), safe=False), float("nan"))
    return np.asarray(out.to_numpy(zero_copy_only=False), dtype=np.float64)


def reference_describe(plan: DescribePlan, table: pa.Table, columns: Sequence[str],
                       group_by: str | None, groups: Sequence[Any] | None,
                       rng: RandomSource) -> list[list[Cell]]:
    """``cells[g][j]`` of a describe run of ``table`` drawn the documented way."""
    if group_by is None:
        member = [np.ones(table.num_rows, dtype=bool)]
    else:
        g = np.array(table.column(group_by).to_pylist(), dtype=object)
        member = [g == v for v in (groups or [])]
    data = []
    for m in member:
        row = []
        for c in columns:
            x = _float(table.column(c))[m]
            row.append(np.sort(x[np.isfinite(x)]))
        data.append(row)
    streams = [RandomSource.stream(s) for s in rng.stream_seeds(len(data))]
    centres = [[draw_centre(x, plan.centre_rate, r) for x in row]
               for row, r in zip(data, streams, strict=True)]
    k = plan.sum_sensitivity
    out = []
    for row, crow, rng in zip(data, centres, streams, strict=True):
        cells = []
        for x, c in zip(row, crow, strict=True):
            lo, hi = (_side(x, c, side, plan, rng) for side in ("lower", "upper"))
            if not plan.statistics:
                cells.append(Cell(lo, hi))
                continue
            assert plan.count_scale is not None
            noisy_n = len(x) + rng.discrete_laplace(plan.count_scale)
            if plan.sum_scale is None:  # count only: no sum noise
                n_out = float(max(noisy_n, 0))
                cells.append(Cell(lo, hi, n_out, intervals=query_intervals(
                    ("count",), plan.interval_level, plan.count_epsilon, 0.0, k, lo, hi,
                    c, 0.0, noisy_n, None, n_out, None, None)))
                continue
            p = choose_pivot(lo, c, hi, plan.count_epsilon, plan.sum_epsilon)
            noisy_s = centred_integer_sum(x, lo, hi, p, k) + rng.discrete_laplace(
                plan.sum_scale)
            gamma = float(max(Fraction(hi) - Fraction(p), Fraction(p) - Fraction(lo)) / k)
            count = max(noisy_n, 0)
            mean = min(max(p + gamma * noisy_s / max(1, noisy_n), lo), hi)
            want = set(plan.statistics)
            total = p * count + gamma * noisy_s
            # the intervals: post-processing of the released values and ñ, S̃ (privacy.md §15)
            spans = query_intervals(plan.statistics, plan.interval_level, plan.count_epsilon,
                                    plan.sum_epsilon, k, lo, hi, p, gamma, noisy_n, noisy_s,
                                    float(count), total, mean)
            cells.append(Cell(lo, hi, float(count) if "count" in want else None,
                              total if "sum" in want else None,
                              mean if "mean" in want else None, spans))
        out.append(cells)
    return out


def _side(x: np.ndarray, centre: float, side: str, plan: Any, rng: RandomSource) -> float:
    """One side's bound from the whole candidate array and its tail counts by bisection
    (not the statistics' lazy stream and interval sums the engines read)."""
    cands = candidates(centre, side)  # type: ignore[arg-type]
    k = draw_step(tail_counts(x, cands, side), CandidateStream(centre, side),  # type: ignore[arg-type]
                  plan.target, plan.side_rate, rng)
    return float(cands[k])
