"""A PNG of a grouped-aggregate release of the query mechanism (``--plot``, needs the count
and the mean): per column, each public group's DP mean with its noise interval as the
error bar.

What a picture may show is what the release publishes: it is drawn from the recorded JSON
only (the released lower, upper, count and mean of each (group, column), and the public
plan), never from a data point.

**The error bars** are the released mean's noise interval, ``mean_low`` to ``mean_high``
at the plan's ``interval_level`` (:mod:`dprect.core.intervals`, docs/privacy.md §15),
when the record holds it (it covers the noise: the clamped mean at the released bounds,
not the clipped rows' bias). A record made before the intervals draws, as it did, ± one
standard deviation of the mean's NOISE, bounded from above
with public quantities and released values only (:func:`mean_noise_sd`). The released
mean is p + γ·S̃/ñ with ñ = n + DLap(1/ε_n) and γ·S̃ = γ·S + γ·DLap(2^K/ε_S), γ·2^K = w =
max(U − p, p − L) for a pivot p in [L, U]. A discrete Laplace variable of scale b has
variance 2e^(−1/b)/(1 − e^(−1/b))² ≤ 2b², so the sum's noise has sd ≤ √2·w/ε_S and the
count's ≤ √2/ε_n; to first order in the count's noise the mean's noise sd is
√((√2·w/ε_S)² + (√2·(mean − p)/ε_n)²)/n. The pivot is not released, so w ≤ U − L and
|mean − p| ≤ max(mean − L, U − mean) bound it, and n is replaced by the released count
(at least 1). So the bar is a bound on the noise's spread as the plan and the release
state it — not the clipped rows' bias (the plan's printout bounds the rows clipped per
side) and not a confidence interval for the group's true mean.

One panel per column (at most :data:`MAX_PANELS`, two a row), the groups along the x axis
in their public order; a group whose released mean is not finite is left out of its
panel (and says so in the panel's note). A group flagged ``below_row_need`` — its
released count below the plan's row need (:func:`dprect.release.aggregate_record.rows_needed`),
where the plan no longer promises a centre inside the data, so its bounds and mean may be
far off — is drawn hollow and grey, and the y range is set by the other groups (by every
group when all are flagged) — a choice made from released values and the public plan
only.

**Many groups.** With more than :data:`MANY_GROUPS` listed groups (a public number) a
panel no longer draws a point per group but the distribution of the groups' released
means: a histogram of the means of the groups with rows enough and, on the same bins, of
those flagged ``below_row_need`` (grey outline); above it a bar as wide as the groups'
median noise interval (``mean_high − mean_low``, or twice the sd bound of an older
record), centred on the median mean, and the panel's note gives that median width and
the width 90% of the groups stay under (:func:`_draw_column_spread`). A panel whose groups
are all flagged has no such median and draws no bar: its note says so
(:data:`NO_BAR`), and so does the figure's title when no panel draws one for that reason
(``bar (where drawn)`` when some panels draw one and others not). The view spans the
means of the groups with rows enough (of every group when none has) from their
:data:`TRIM` to their 1 − :data:`TRIM` quantile; a mean beyond it is counted out of view
in the note, never handed to matplotlib.

**Rendering cannot fail on a released value.** The view is finite and no wider than
±:data:`VIEW_LIMIT`; a bar is cut at the view's edge and a mean outside the view (a tiny
group's mean at ±1e297, say) is drawn as a triangle at the edge pointing its way. Each
panel's note, the figure's title and the line the sink prints say how many means are out
of view. Rendered with matplotlib's Agg backend into memory; the same record gives the
same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from dprect.core.extras import require
from dprect.release.aggregate_record import BELOW_ROW_NEED, rows_needed
from dprect.release.plotting import fitted_title, plain_text, png_bytes
from dprect.release.row_pass import RowPass
from dprect.release.sinks import FileSink, Release, Write, check_png_path, file_write

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MAX_PANELS = 8
#: with more listed groups than this a panel shows the distribution of the groups'
#: released values instead of one mark per group (a public threshold on a public count)
MANY_GROUPS = 60
#: the bins of a distribution panel's histogram, over its view
BINS = 40
#: a distribution panel's view leaves out this share of the values at each end (counted
#: out of view in its note)
TRIM = 0.005
#: a distribution panel's y range is this many times its highest bin (room for its note)
HEADROOM = 1.6
#: x tick labels shown at most per panel (every k-th group beyond that)
MAX_TICKS = 25
POINT = "tab:blue"
FEW = "0.55"  # a group flagged below the plan's row need (below_row_need)
#: no mean or bar end beyond this magnitude is handed to matplotlib (its axis arithmetic
#: overflows near the float maximum); such a mean is drawn out of view
VIEW_LIMIT = 1e300


def mean_noise_sd(lower: float, upper: float, mean: float, count: float,
                  sum_epsilon: float, count_epsilon: float) -> float:
    """An upper bound on the standard deviation of a released mean's noise, from the
    released ``lower``, ``upper``, ``mean`` and ``count`` and the plan's public ε of the
    sum and of the count (the module docstring gives the derivation)."""
    width = upper - lower
    lever = max(mean - lower, upper - mean)
    n = max(1.0, count)
    return math.sqrt(2.0) * math.hypot(width / sum_epsilon, lever / count_epsilon) / n


#: a group's tick label past this many characters is cut, ending in an ellipsis (the
#: whole key stays in the JSON and the results table): long keys pushed the panels out
#: of the figure's layout
MAX_KEY_CHARS = 24


def _group_label(group: str | None) -> str:
    """A group's tick label: its key, cut to :data:`MAX_KEY_CHARS` characters (the last
    an ellipsis) when longer; ``(all rows)`` for the ungrouped row."""
    if group is None:
        return "(all rows)"
    text = str(group)
    return text if len(text) <= MAX_KEY_CHARS else text[:MAX_KEY_CHARS - 1] + "…"


def panel_grid(panels: int, groups: int, dpi: int) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    cols = min(panels, 2)
    rows = math.ceil(panels / cols)
    width = max(5.6, min(14.0, 0.35 * groups + 2.0))
    fig = Figure(figsize=(width * cols, 4.2 * rows + 0.6), dpi=dpi, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[panels:]:
        ax.set_visible(False)
    return fig, axes


@dataclass(frozen=True)
class _Point:
    """One group's released mean as drawn: its x position, mean, its bar's reach below
    and above the mean, and whether its group is below the plan's row need (the released
    flag)."""

    x: int
    y: float
    down: float
    up: float
    few: bool


def _bar(row: Mapping[str, Any], sum_epsilon: float, count_epsilon: float
         ) -> tuple[float, float]:
    """How far a mean's bar reaches below and above it: to its released noise interval
    (``mean_low``, ``mean_high``) when the record has one, else ± :func:`mean_noise_sd`
    (a record made before the intervals); inf where not finite."""
    mean, low, high = row["mean"], row.get("mean_low"), row.get("mean_high")
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        return max(mean - low, 0.0), max(high - mean, 0.0)
    bar = mean_noise_sd(row["lower"], row["upper"], mean, row["count"], sum_epsilon,
                        count_epsilon)
    bar = bar if math.isfinite(bar) else math.inf
    return bar, bar


def _view(points: Sequence[_Point]) -> tuple[float, float]:
    """The panel's y limits: the span of the means ± bars of the groups with rows enough
    (of every group when none has), each end cut to ±:data:`VIEW_LIMIT` and a mean beyond
    it left out, plus a margin; finite, and wider than rounding at its scale."""
    base = [p for p in points if not p.few] or list(points)
    ends = [e for p in base if abs(p.y) <= VIEW_LIMIT
            for e in (max(p.y - p.down, -VIEW_LIMIT), min(p.y + p.up, VIEW_LIMIT))]
    if not ends:
        return -1.0, 1.0
    lo, hi = min(ends), max(ends)
    pad = max(0.1 * (hi - lo), 1e-9 * max(abs(lo), abs(hi)))
    if pad == 0.0:
        pad = 1.0
    return lo - pad, hi + pad


def _draw_column(ax: Any, column: str, rows: Sequence[Mapping[str, Any]],
                 sum_epsilon: float, count_epsilon: float) -> int:
    """One column's panel: each group's mean at its position with its bar, its label;
    returns how many means are out of view. Groups flagged below the plan's row need are
    drawn hollow and grey and set the y range only when no group has rows enough. Every
    value handed to matplotlib lies in the panel's finite view (:func:`_view`): a bar is
    cut at the view's edge, and a mean outside it is drawn as a triangle at the edge
    pointing its way — out of view, and the panel's note says how many."""
    points: list[_Point] = []
    skipped = 0
    for i, row in enumerate(rows):
        lo, hi, mean, count = row["lower"], row["upper"], row["mean"], row["count"]
        if mean is None or count is None or not all(
                math.isfinite(v) for v in (lo, hi, mean, count)):
            skipped += 1
            continue
        down, up = _bar(row, sum_epsilon, count_epsilon)
        points.append(_Point(i, mean, down, up, bool(row.get(BELOW_ROW_NEED))))
    bottom, top = _view(points)
    ax.set_ylim(bottom, top)
    out = 0
    for few in (False, True):
        colour = FEW if few else POINT
        shown = [p for p in points if p.few == few and bottom <= p.y <= top]
        if shown:
            ax.errorbar([p.x for p in shown], [p.y for p in shown],
                        yerr=[[p.y - max(p.y - p.down, bottom) for p in shown],
                              [min(p.y + p.up, top) - p.y for p in shown]],
                        fmt="o", color=colour, ecolor=colour, capsize=3, markersize=4,
                        lw=1.2, mfc="none" if few else colour,
                        gid=f"means {column}" + (" (few rows)" if few else ""))
        beyond = [p for p in points if p.few == few and not bottom <= p.y <= top]
        for up in (True, False):
            side = [p for p in beyond if (p.y > top) == up]
            if side:
                edge = top if up else bottom
                ax.plot([p.x for p in side], [edge] * len(side), "^" if up else "v",
                        color=colour, mfc="none" if few else colour, markersize=7,
                        clip_on=False, gid=f"out of view {column}")
        out += len(beyond)
    finish_group_panel(ax, column, rows, "DP mean", [],
                       f"{out} mean(s) out of view (triangles at the edge)" if out else None,
                       f"{skipped} group(s) without a finite mean not drawn" if skipped
                       else None)
    return out


def finish_group_panel(ax: Any, column: str, rows: Sequence[Mapping[str, Any]], label: str,
                       notes: list[str], *extra: str | None, pad: float | None = None
                       ) -> None:
    """A panel of a mark per group's last touches, every statistic's: the groups' names
    under their positions (every k-th past :data:`MAX_TICKS`), the column as the title
    (``pad`` above the axes), ``label`` on the y axis, the notes (with each given
    ``extra`` line: what is out of view, what is not drawn)."""
    step = max(1, math.ceil(len(rows) / MAX_TICKS))
    ticks = list(range(0, len(rows), step))
    ax.set_xticks(ticks)
    ax.set_xticklabels([_group_label(rows[i]["group"]) for i in ticks], rotation=45,
                       ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_title(column, fontsize=10, pad=pad)
    ax.set_ylabel(label, fontsize=9)
    note(ax, notes + [line for line in extra if line])


def span(values: Sequence[float], trim: float = 0.0) -> tuple[float, float]:
    """A panel's limits: the span of ``values`` within ±:data:`VIEW_LIMIT` (the others
    are out of view) — from its ``trim`` to its 1 − ``trim`` quantile (a distribution
    panel's :data:`TRIM`: one far value does not squeeze the others into a bin) — plus a
    margin; finite, and wider than rounding at its scale ((-1, 1) when none is in
    range)."""
    import numpy as np

    inside = [v for v in values if abs(v) <= VIEW_LIMIT]
    if not inside:
        return -1.0, 1.0
    lo, hi = (float(q) for q in np.quantile(inside, [trim, 1.0 - trim]))
    pad = max(0.05 * (hi - lo), 1e-9 * max(abs(lo), abs(hi)))
    if pad == 0.0:
        pad = 1.0
    return max(lo - pad, -VIEW_LIMIT), min(hi + pad, VIEW_LIMIT)


def histograms(ax: Any, series: Sequence[tuple[str, Sequence[float], str, bool]],
               view: tuple[float, float]) -> int:
    """Step histograms of each of ``series`` (its label, values, colour and whether
    filled) on :data:`BINS` common bins over ``view``; returns how many values lay out of
    view (not drawn: the caller's note says so)."""
    import numpy as np

    lo, hi = view
    edges = np.linspace(lo, hi, BINS + 1)
    out = 0
    for label, values, colour, filled in series:
        inside = [v for v in values if lo <= v <= hi]
        out += len(values) - len(inside)
        if inside:
            counts, _ = np.histogram(inside, bins=edges)
            ax.stairs(counts, edges, fill=filled, color=colour, alpha=0.6 if filled else 1.0,
                      label=f"{label} ({len(inside):,})", gid=f"histogram {label}")
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, HEADROOM * max(ax.get_ylim()[1], 1.0))
    ax.set_ylabel("groups", fontsize=9)
    return out


def legend_note(ax: Any, lines: Sequence[str]) -> None:
    """A distribution panel's legend, its note (counts and widths only) as its title,
    top left above the bars (:data:`HEADROOM`)."""
    legend = ax.legend(title="\n".join(lines), fontsize=7, title_fontsize=7,
                       loc="upper left", alignment="left")
    legend.get_frame().set_edgecolor("0.8")


def note(ax: Any, lines: Sequence[str]) -> None:
    """A panel's note, top left (counts and widths only)."""
    if lines:
        ax.text(0.01, 0.99, "\n".join(lines), transform=ax.transAxes, fontsize=8,
                ha="left", va="top", bbox={"facecolor": "white", "edgecolor": "0.8"})


#: a describe row as a many-groups panel keeps it (:func:`spread_item`): whether it is
#: drawn (``"ok"``: rows enough, ``"few"``: below_row_need, ``"skip"``: no finite mean),
#: its mean and its noise interval's width (None: not finite or not kept)
SpreadItem = tuple[str, float | None, float | None]


def spread_item(row: Mapping[str, Any], sum_epsilon: float, count_epsilon: float
                ) -> SpreadItem:
    """What :func:`_draw_column_spread` reads of one row: a few floats, not the row (the
    plot of many groups is built in one pass over the record's blocks, issue #42)."""
    lo, hi, mean, count = row["lower"], row["upper"], row["mean"], row["count"]
    if mean is None or count is None or not all(
            math.isfinite(v) for v in (lo, hi, mean, count)):
        return ("skip", None, None)
    if row.get(BELOW_ROW_NEED):
        return ("few", mean, None)
    down, up = _bar(row, sum_epsilon, count_epsilon)
    return ("ok", mean, down + up if math.isfinite(down + up) else None)


#: a many-groups panel's note, and the figure's title, when every group of the panel (of
#: every panel) is flagged ``below_row_need``: there is no median noise interval to draw
NO_BAR = "every group below its row need: no bar"
#: what a many-groups panel drew for its bar (:func:`_draw_column_spread`): ``"drawn"``;
#: ``"flagged"``, none as every group is flagged below the row need; ``"none"``, none for
#: another reason (no group with rows enough has a finite mean or interval, the interval
#: reaches out of the view)
BarDrawn = str


def _draw_column_spread(ax: Any, column: str, items: Sequence[SpreadItem],
                        bars: list[BarDrawn] | None = None) -> int:
    """One column's panel for many groups (module notes), from its groups'
    :func:`spread_item`: the histogram of the groups' released means (rows enough;
    flagged ``below_row_need`` in grey), a bar of the median noise interval's width at
    the median mean, and a note with that width and its 90th percentile over the groups
    with rows enough — or :data:`NO_BAR` when every group is flagged; returns how many
    means are out of view, and appends what it drew for its bar to ``bars`` when given."""
    import numpy as np

    ok = [mean for kind, mean, _ in items if kind == "ok" and mean is not None]
    few = [mean for kind, mean, _ in items if kind == "few" and mean is not None]
    widths = [w for kind, _, w in items if kind == "ok" and w is not None]
    skipped = sum(1 for kind, _, _ in items if kind == "skip")
    view = span(ok or few, TRIM)
    out = histograms(ax, [("groups with rows enough", ok, POINT, True),
                          (BELOW_ROW_NEED, few, FEW, False)], view)
    notes = [f"{len(items):,} groups"]
    bar: BarDrawn = "none"
    if few and not ok and not skipped:
        notes.append(NO_BAR)
        bar = "flagged"
    if widths:
        median, p90 = (float(v) for v in np.quantile(widths, [0.5, 0.9]))
        notes.append(f"noise interval width: median {median:.3g}, 90% of groups <= {p90:.3g}")
        centre = float(np.median(ok))
        if view[0] <= centre - median / 2 and centre + median / 2 <= view[1]:
            # just above the highest bin, below the note (HEADROOM)
            ax.errorbar([centre], [ax.get_ylim()[1] / HEADROOM * 1.05],
                        xerr=[[median / 2], [median / 2]], fmt="|", color="black",
                        capsize=4, lw=1.2, label="median noise interval",
                        gid=f"median interval {column}")
            bar = "drawn"
    if bars is not None:
        bars.append(bar)
    finish_panel(ax, column, "DP mean", notes,
                 f"{out:,} mean(s) out of view" if out else None,
                 f"{skipped:,} group(s) without a finite mean not drawn" if skipped else None)
    return out


def finish_panel(ax: Any, column: str, label: str, notes: list[str],
                 *extra: str | None) -> None:
    """A many-groups panel's last touches, every statistic's: the notes (with each given
    ``extra`` line: what is out of view, what is not drawn) in the legend's box, the
    column as the title, ``label`` under the axis."""
    legend_note(ax, notes + [line for line in extra if line])
    ax.set_title(column, fontsize=10)
    ax.set_xlabel(label, fontsize=9)


def render_describe_figure(record: Mapping[str, Any], *, title: str | None = None,
                           dpi: int = 110) -> Figure:
    """The matplotlib figure of a released describe record (the module docstring)."""
    return _describe_figure(record, title=title, dpi=dpi)[0]


def _describe_figure(record: Mapping[str, Any], *, title: str | None, dpi: int
                     ) -> tuple[Figure, int]:
    """The figure and how many means it shows out of view."""
    return drawn(record, lambda rows: _describe_drawing(record, rows, title=title, dpi=dpi))


def _describe_drawing(record: Mapping[str, Any], rows: RowPass, *, title: str | None,
                      dpi: int) -> Drawing:
    """:func:`grouped_figure` of the released means."""
    require("plot", "the describe plot")
    per_column = record["plan"]["per_column"]
    sum_eps, count_eps = float(per_column["sum_epsilon"]), float(per_column["count_epsilon"])
    groups = len(record["groups"])
    bars: list[BarDrawn] = []  # each many-groups panel's, drawn before the title

    def bar_line() -> str:
        if bars and all(b == "flagged" for b in bars):
            return NO_BAR
        where = "" if all(b == "drawn" for b in bars) else " (where drawn)"
        return f"bar{where}: the median noise interval's width (clipping bias not included)"

    def subtitle(many: bool) -> str:
        g = record["privacy"]
        needs = sorted({rows_needed(record["plan"], c)
                        for c in list(record["columns"])[:MAX_PANELS]})
        need = (f"{needs[0]:,}" if len(needs) == 1 else
                f"{needs[0]:,}–{needs[-1]:,} (per column)")
        guarantee = f"({float(g['epsilon']):.3g}, {float(g['delta']):.2g})-DP in one charge"
        if many:
            return (f"DP means of {groups:,} groups, {guarantee}\n{bar_line()}\ngrey: "
                    f"{BELOW_ROW_NEED} (fewer than {need} rows released:\nthe mean may be far "
                    "off)")
        level = record["plan"].get("interval_level")
        marks = ("bars: ± the noise's sd (a bound from the plan's public scales\nand the "
                "released values" if level is None else  # a record made before the intervals
                f"bars: the mean's noise interval at level {float(level):g} (mean_low to "
                "mean_high,\nfrom the plan and the released values")
        return (f"DP means per group, {guarantee}\n{marks}; clipping bias not included)"
                f"\nhollow grey: {BELOW_ROW_NEED} (fewer than {need} rows released:\nthe "
                "mean may be far off)")

    return grouped_figure(
        record, rows,
        lambda ax, column, rows: _draw_column(ax, column, rows, sum_eps, count_eps),
        lambda ax, column, items: _draw_column_spread(ax, column, items, bars), subtitle,
        lambda out, many: (f"{out} mean(s) out of view" if many else
                                     f"triangles at a panel's edge: {out} mean(s) out of view"),
        title=title, dpi=dpi, keep=lambda row: spread_item(row, sum_eps, count_eps))


#: one column's panel: (axes, column, that column's rows — or, past
#: :data:`MANY_GROUPS`, what the figure's ``keep`` made of each) -> how many values it
#: shows out of view
DrawPanel = Callable[[Any, str, Sequence[Any]], int]


#: a plot that has added its reader to the record's rows: drawn once they are read, it
#: gives the figure and how many values it shows out of view
Drawing = Callable[[], tuple["Figure", int]]


def column_items(rows: RowPass, columns: Sequence[str],
                 keep: Callable[[dict[str, Any]], Any]) -> dict[str, list[Any]]:
    """Per column of ``columns``, ``keep`` of each of its rows in record order, filled by
    the record's one read of its rows (``rows``: a block at a time, a record spooled on
    disk is never read whole; the other columns' rows are not kept)."""
    out: dict[str, list[Any]] = {c: [] for c in columns}

    def read(block: Sequence[dict[str, Any]]) -> None:
        for row in block:
            into = out.get(row["column"])
            if into is not None:
                into.append(keep(row))

    rows.add(read)
    return out


def drawn(record: Mapping[str, Any], drawing: Callable[[RowPass], Drawing]
          ) -> tuple[Figure, int]:
    """A plot of ``record`` on its own: ``drawing`` reads the record's rows in a read of
    their own, then draws."""
    rows = RowPass(record)
    draw = drawing(rows)
    rows.run()
    return draw()


def grouped_figure(record: Mapping[str, Any], rows: RowPass, draw_few: DrawPanel,
                   draw_many: DrawPanel, subtitle: Callable[[bool], str],
                   out_of_view: Callable[[int, bool], str], *, title: str | None, dpi: int,
                   keep: Callable[[dict[str, Any]], Any] = lambda row: row) -> Drawing:
    """The skeleton every grouped-aggregate plot shares: a panel per column (the first
    :data:`MAX_PANELS`) drawn by ``draw_few`` from the column's rows, or by ``draw_many``
    past :data:`MANY_GROUPS` listed groups (a public count) from ``keep`` of each (what
    its panel reads of a row, :func:`column_items`, from ``rows``: the record's one read,
    issue #42); titled ``subtitle(many)``, then ``out_of_view(out, many)`` when values
    are out of view, the columns left out and the seeded run's warning. Returns the
    drawing, to call once ``rows`` are read."""
    columns = list(record["columns"])[:MAX_PANELS]
    groups = len(record["groups"])
    many = groups > MANY_GROUPS
    per_column = column_items(rows, columns, keep if many else lambda row: row)
    return lambda: _grouped(record, columns, per_column, draw_few if not many else draw_many,
                            subtitle, out_of_view, many, title, dpi)


def _grouped(record: Mapping[str, Any], columns: list[str], per_column: dict[str, list[Any]],
             draw: DrawPanel, subtitle: Callable[[bool], str],
             out_of_view: Callable[[int, bool], str], many: bool, title: str | None,
             dpi: int) -> tuple[Figure, int]:
    """:func:`grouped_figure`'s figure, from its columns' rows as read."""
    groups = len(record["groups"])
    fig, axes = panel_grid(len(columns), 12 if many else groups, dpi)
    out = 0
    for ax, column in zip(axes.flat, columns, strict=False):
        out += draw(ax, column, per_column.pop(column))
    text = subtitle(many)
    if out:
        text += "\n" + out_of_view(out, many)
    if len(record["columns"]) > MAX_PANELS:
        text += f"\nthe first {MAX_PANELS} of {len(record['columns'])} columns"
    if record.get("seeded"):
        text += "\nSEEDED RUN, not for publication"
    fig.suptitle(fitted_title(fig, f"{title + ': ' if title else ''}{text}", 9), fontsize=9)
    return fig, out


def png(fig: Figure) -> bytes:
    """The PNG bytes of an aggregate's figure (:func:`dprect.release.plotting.png_bytes`:
    every text drawn as it is)."""
    return png_bytes(fig)


@dataclass(frozen=True)
class AggregatePngSink(FileSink):
    """``--plot`` of a grouped aggregate: the PNG :meth:`figure` draws from the released
    record, titled with ``title`` (the dataset or the input's name); its line says where
    and how many values are out of view (a count, never a value)."""

    title: str = ""

    def check(self) -> None:
        require("plot", "the aggregate plot")
        check_png_path(self.path, self.name)
        super().check()

    def drawing(self, record: Mapping[str, Any], rows: RowPass) -> tuple[Drawing, str]:
        """The plot, its reader added to ``rows`` (:func:`grouped_figure`), and how it
        shows the values out of view."""
        raise NotImplementedError

    @staticmethod
    def out_of_view(record: Mapping[str, Any], what: str) -> str:
        """How the plot shows the ``what`` out of view: counted in the panels' notes past
        :data:`MANY_GROUPS` listed groups (a public count), else drawn as triangles at the
        panel's edge."""
        where = ("counted in the panels' notes" if len(record["groups"]) > MANY_GROUPS else
                 "drawn as triangles at the panel's edge")
        return f"{what} out of view, {where}"

    def prepare(self, release: Release) -> Write:
        draw, how = self.drawing(release.record, release.rows)
        out: list[int] = []

        def data(fh: BinaryIO) -> None:  # once the rows are read
            with plain_text():  # a group or column named ``a$b`` drawn as it is
                fig, n = draw()
                out.append(n)
                fh.write(png(fig))

        def said() -> str:
            return f"plot written to {self.path}" + (f" ({out[-1]} {how})" if out[-1] else "")

        return file_write(self.path, data, said, release.rows)


@dataclass(frozen=True)
class DescribePngSink(AggregatePngSink):
    """``--plot`` of the query mechanism: the released means (:func:`render_describe_figure`)."""

    def drawing(self, record: Mapping[str, Any], rows: RowPass) -> tuple[Drawing, str]:
        return (_describe_drawing(record, rows, title=self.title, dpi=110),
                self.out_of_view(record, "mean(s)"))


__all__ = ["BINS", "HEADROOM", "MANY_GROUPS", "MAX_KEY_CHARS", "MAX_PANELS", "TRIM",
           "AggregatePngSink",
           "DescribePngSink", "DrawPanel", "Drawing", "SpreadItem", "column_items", "drawn",
           "finish_group_panel",
           "grouped_figure", "histograms", "legend_note", "mean_noise_sd", "note",
           "panel_grid", "png", "render_describe_figure", "span", "spread_item"]
