"""A PNG of a grouped-aggregate release of the quantiles (``--plot`` with quantile
statistics): per column, each public group's released quantiles as a ladder, or with
many groups their distribution over the groups.

Drawn from the recorded JSON only — each (group, column)'s released quantiles, their
``<name>_rank_error`` and the ``below_row_need`` flag, and the public plan — never from
a data point, like every plot of a release (:mod:`dprect.release.aggregate_plot`).

**Up to** :data:`~dprect.release.aggregate_plot.MANY_GROUPS` **groups** a panel shows, at
each group's position, a vertical line from its lowest to its highest released quantile
with a tick at each, the median (when released) as a dot and, when both are released, a
box from p25 to p75. A quantile's interval is a statement about ranks, not values
(docs/privacy.md §15: with probability at least the plan's ``interval_level`` every
quantile of a cell lies within ``<name>_rank_error`` rows of its target rank): the
released rank error is written above each group's ladder (``±T``, rows; none for a group
drawn by the small split), and the panel's note gives its range. A group flagged
``below_row_need`` (its noisy count below the plan's ``rows_needed``: the values may be
far off) is drawn grey, and the y range is set by the other groups (by every group when
all are flagged).

**More groups** than that: a panel shows, for each released quantile, the histogram of
its value over the groups with rows enough (of every group when all are flagged), on
common bins over the values' central 99% (:func:`~dprect.release.aggregate_plot.histograms`,
:data:`~dprect.release.aggregate_plot.TRIM`), and the note gives the
median released rank error and how many groups are flagged and left out.

**Rendering cannot fail on a released value**: a value that is not finite or beyond
±:data:`~dprect.release.aggregate_plot.VIEW_LIMIT` is never handed to matplotlib; a value
out of the view is drawn as a triangle at the edge (ladders) or counted (histograms), and
the note, the title and the sink's line say how many.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dprect.core.extras import require
from dprect.core.intervals import BELOW_ROW_NEED
from dprect.core.statistic import QUANTILES
from dprect.core.statistic import STATISTICS as STATISTIC_OF
from dprect.release.aggregate_plot import (
    FEW,
    MAX_TICKS,
    POINT,
    TRIM,
    VIEW_LIMIT,
    AggregatePngSink,
    Drawing,
    drawn,
    finish_group_panel,
    finish_panel,
    grouped_figure,
    histograms,
    span,
)
from dprect.release.row_pass import RowPass

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: a colour per released quantile in a distribution panel (cycled)
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
           "tab:pink", "tab:olive", "tab:cyan")


def quantile_names(record: Mapping[str, Any]) -> list[str]:
    """The quantiles a record released, in the registry's order (p1 … p99)."""
    released = set(record.get("statistics") or ())
    return [s.name for s in STATISTIC_OF.values()
            if s.mechanism is QUANTILES and s.name in released]


def _finite(value: Any) -> float | None:
    """A released value as drawn: a finite float within ±VIEW_LIMIT, else None."""
    if value is None:
        return None
    v = float(value)
    return v if math.isfinite(v) and abs(v) <= VIEW_LIMIT else None


def _rank_errors(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[float]:
    """The released rank errors of the rows (one per cell: the first quantile's; None —
    a small group's — left out)."""
    key = f"{names[0]}_rank_error" if names else ""
    return [float(r[key]) for r in rows if r.get(key) is not None]


def _rank_note(errors: Sequence[float], level: Any) -> str:
    if not errors:
        return "no rank interval released (small groups)"
    lo, hi = min(errors), max(errors)
    reach = f"±{lo:,.0f}" if round(lo) == round(hi) else f"±{lo:,.0f} to ±{hi:,.0f}"
    return f"ranks within {reach} rows of target (level {float(level):g})"


def _draw_ladders(ax: Any, column: str, rows: Sequence[Mapping[str, Any]],
                  names: Sequence[str], level: Any) -> int:
    """One column's panel of a ladder per group (module notes); returns how many values
    are out of view (triangles at the edge)."""
    ladders = [(i, [_finite(r.get(n)) for n in names], bool(r.get(BELOW_ROW_NEED)))
               for i, r in enumerate(rows)]
    base = [v for _, values, few in ladders if not few for v in values if v is not None]
    bottom, top = span(base or [v for _, values, _ in ladders for v in values
                                if v is not None])
    out = skipped = 0
    for i, values, few in ladders:
        colour = FEW if few else POINT
        drawn = [v for v in values if v is not None and bottom <= v <= top]
        beyond = [v for v in values if v is not None and not bottom <= v <= top]
        skipped += sum(v is None for v in values)
        out += len(beyond)
        if drawn:
            ax.vlines(i, min(drawn), max(drawn), color=colour, lw=1.0)
            ax.plot([i] * len(drawn), drawn, "_", color=colour, markersize=10,
                    gid=f"quantiles {column}" + (" (few rows)" if few else ""))
        marks = dict(zip(names, values, strict=True))
        median = marks.get("median")
        if median is not None and bottom <= median <= top:
            ax.plot([i], [median], "o", color=colour, markersize=4,
                    mfc="none" if few else colour)
        q1, q3 = marks.get("p25"), marks.get("p75")
        if q1 is not None and q3 is not None and bottom <= min(q1, q3) \
                and max(q1, q3) <= top:
            ax.bar([i], [abs(q3 - q1)], bottom=[min(q1, q3)], width=0.5, fill=False,
                   edgecolor=colour, lw=1.0)
        for up in (True, False):
            if any((v > top) == up for v in beyond):
                ax.plot([i], [top if up else bottom], "^" if up else "v", color=colour,
                        markersize=7, clip_on=False, gid=f"out of view {column}")
    ax.set_ylim(bottom, top)
    errors = _rank_errors(rows, names)
    if len(rows) <= MAX_TICKS:  # the rank error above each ladder
        key = f"{names[0]}_rank_error" if names else ""
        for i, r in enumerate(rows):
            if r.get(key) is not None:
                ax.annotate(f"±{float(r[key]):,.0f}", (i, 1.0), xycoords=("data", "axes fraction"),
                            ha="center", va="bottom", fontsize=6, annotation_clip=False)
    finish_group_panel(ax, column, rows, "DP quantiles", [_rank_note(errors, level)],
                       f"{out} value(s) out of view (triangles at the edge)" if out else None,
                       f"{skipped} value(s) not finite or beyond ±{VIEW_LIMIT:g}, not drawn"
                       if skipped else None, pad=12)
    return out


def _draw_spread(ax: Any, column: str, rows: Sequence[Mapping[str, Any]],
                 names: Sequence[str], level: Any) -> int:
    """One column's panel for many groups (module notes); returns how many values are out
    of view (counted)."""
    flagged = sum(1 for r in rows if r.get(BELOW_ROW_NEED))
    kept = [r for r in rows if not r.get(BELOW_ROW_NEED)] or list(rows)
    series = [(name, [v for r in kept if (v := _finite(r.get(name))) is not None],
               COLOURS[k % len(COLOURS)], False) for k, name in enumerate(names)]
    view = span([v for _, values, _, _ in series for v in values], TRIM)
    out = histograms(ax, series, view)
    notes = [f"{len(rows):,} groups", _rank_note(_rank_errors(kept, names), level)]
    if flagged and len(kept) < len(rows):
        notes.append(f"{flagged:,} group(s) {BELOW_ROW_NEED} not drawn")
    elif flagged:
        notes.append(f"every group {BELOW_ROW_NEED}: the values may be far off")
    skipped = sum(len(kept) - len(values) for _, values, _, _ in series)
    finish_panel(ax, column, "DP quantile", notes,
                 f"{out:,} value(s) out of view" if out else None,
                 f"{skipped:,} value(s) not finite or beyond ±{VIEW_LIMIT:g}, not drawn"
                 if skipped else None)
    return out


def quantiles_figure(record: Mapping[str, Any], *, title: str | None = None,
                     dpi: int = 110) -> tuple[Figure, int]:
    """The figure of a released quantiles record (module notes) and how many values it
    shows out of view."""
    return drawn(record, lambda rows: quantiles_drawing(record, rows, title=title, dpi=dpi))


def quantiles_drawing(record: Mapping[str, Any], rows: RowPass, *, title: str | None = None,
                      dpi: int = 110) -> Drawing:
    """:func:`quantiles_figure` from the record's one read of its rows (``rows``)."""
    require("plot", "the quantiles plot")
    names = quantile_names(record)
    level = record["plan"].get("interval_level", math.nan)
    groups = len(record["groups"])
    # what a many-groups panel reads of a row (:func:`_draw_spread`): not the whole row
    read = (BELOW_ROW_NEED, *names, *(f"{names[0]}_rank_error" for _ in names[:1]))

    def subtitle(many: bool) -> str:
        g = record["privacy"]
        what = (f"DP quantiles {', '.join(names)} of {groups:,} groups" if many else
                f"DP quantiles {', '.join(names)} per group (ladder; dot: median, box: "
                "p25-p75)")
        return (f"{what}, ({float(g['epsilon']):.3g}, {float(g['delta']):.2g})-DP in one "
                f"charge\n±T: the released rank error in rows (level {float(level):g})"
                f"\ngrey: {BELOW_ROW_NEED} (fewer than "
                f"{int(record['plan']['rows_needed']):,} rows: the values may be far off)")

    return grouped_figure(
        record, rows, lambda ax, column, rows: _draw_ladders(ax, column, rows, names, level),
        lambda ax, column, rows: _draw_spread(ax, column, rows, names, level),
        subtitle, lambda out, _: f"{out} value(s) out of view", title=title, dpi=dpi,
        keep=lambda row: {key: row.get(key) for key in read})


@dataclass(frozen=True)
class QuantilesPngSink(AggregatePngSink):
    """``--plot`` of the quantiles (:func:`quantiles_figure`)."""

    def drawing(self, record: Mapping[str, Any], rows: RowPass) -> tuple[Drawing, str]:
        return (quantiles_drawing(record, rows, title=self.title),
                self.out_of_view(record, "value(s)"))


__all__ = ["COLOURS", "QuantilesPngSink", "quantile_names", "quantiles_drawing",
           "quantiles_figure"]
