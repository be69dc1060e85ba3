"""A PNG of a describe release: per column, each public group's DP mean with an error bar.

What a picture may show is what the release publishes: it is drawn from the recorded JSON
only (the released lower, upper, count and mean of each (group, column), and the public
plan), never from a data point.

**The error bars** are ± one standard deviation of the mean's NOISE, bounded from above
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
panel (and says so in the panel's note). A group whose released count is below the plan's
``centre_rows`` (where the plan no longer promises a centre inside the data, so its bounds
and mean may be far off) is drawn hollow and grey, and the y range is set by the other
groups — a choice made from released values and the public plan only. Rendered with
matplotlib's Agg backend into memory; the same record gives the same bytes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dprect.core.extras import require
from dprect.release.describe_record import table_rows
from dprect.release.sinks import FileSink, Release, Write

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MAX_PANELS = 8
#: x tick labels shown at most per panel (every k-th group beyond that)
MAX_TICKS = 25
POINT = "tab:blue"
FEW = "0.55"  # a group below the plan's centre_rows released rows


def mean_noise_sd(lower: float, upper: float, mean: float, count: float,
                  sum_epsilon: float, count_epsilon: float) -> float:
    """An upper bound on the standard deviation of a released mean's noise, from the
    released ``lower``, ``upper``, ``mean`` and ``count`` and the plan's public ε of the
    sum and of the count (the module docstring gives the derivation)."""
    width = upper - lower
    lever = max(mean - lower, upper - mean)
    n = max(1.0, count)
    return math.sqrt(2.0) * math.hypot(width / sum_epsilon, lever / count_epsilon) / n


def _group_label(group: str | None) -> str:
    return "(all rows)" if group is None else str(group)


def _panel_grid(panels: int, groups: int, dpi: int) -> tuple[Any, Any]:
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


def _draw_column(ax: Any, column: str, rows: Sequence[Mapping[str, Any]],
                 sum_epsilon: float, count_epsilon: float, enough: int) -> None:
    """One column's panel: each group's mean at its position with its bar, its label.
    Groups whose released count is below ``enough`` (the plan's centre_rows) are drawn
    hollow and grey and do not set the panel's y range."""
    points: dict[bool, tuple[list[int], list[float], list[float]]] = {
        True: ([], [], []), False: ([], [], [])}
    skipped = 0
    for i, row in enumerate(rows):
        lo, hi, mean, count = row["lower"], row["upper"], row["mean"], row["count"]
        if mean is None or count is None or not all(
                math.isfinite(v) for v in (lo, hi, mean, count)):
            skipped += 1
            continue
        xs, ys, bars = points[count >= enough]
        xs.append(i)
        ys.append(mean)
        bars.append(mean_noise_sd(lo, hi, mean, count, sum_epsilon, count_epsilon))
    for full, (xs, ys, bars) in points.items():
        if xs:
            colour = POINT if full else FEW
            ax.errorbar(xs, ys, yerr=bars, fmt="o", color=colour, ecolor=colour, capsize=3,
                        markersize=4, lw=1.2, mfc=colour if full else "none",
                        gid=f"means {column}" + ("" if full else " (few rows)"))
    notes = []
    xs, ys, bars = points[True]
    if xs and points[False][0]:  # the y range of the groups with rows enough
        lo = min(y - b for y, b in zip(ys, bars, strict=True))
        hi = max(y + b for y, b in zip(ys, bars, strict=True))
        pad = 0.1 * (hi - lo) if hi > lo else max(1.0, abs(hi))
        ax.set_ylim(lo - pad, hi + pad)
        out = sum(1 for y in points[False][1] if not lo - pad <= y <= hi + pad)
        if out:
            notes.append(f"{out} few-row group(s) out of view")
    step = max(1, math.ceil(len(rows) / MAX_TICKS))
    ticks = list(range(0, len(rows), step))
    ax.set_xticks(ticks)
    ax.set_xticklabels([_group_label(rows[i]["group"]) for i in ticks], rotation=45,
                       ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_title(column, fontsize=10)
    ax.set_ylabel("DP mean", fontsize=9)
    if skipped:
        notes.append(f"{skipped} group(s) without a finite mean not drawn")
    if notes:
        ax.annotate("; ".join(notes), (0.0, 1.0), xycoords="axes fraction", xytext=(0, 4),
                    textcoords="offset points", fontsize=8, ha="left", va="bottom")


def render_describe_figure(record: Mapping[str, Any], *, title: str | None = None,
                           dpi: int = 110) -> Figure:
    """The matplotlib figure of a released describe record (the module docstring)."""
    require("plot", "the describe plot")
    rows = table_rows(record)
    per_column = record["plan"]["per_column"]
    sum_eps, count_eps = float(per_column["sum_epsilon"]), float(per_column["count_epsilon"])
    columns = list(record["columns"])[:MAX_PANELS]
    groups = len(record["groups"])
    fig, axes = _panel_grid(len(columns), groups, dpi)
    for ax, column in zip(axes.flat, columns, strict=False):
        _draw_column(ax, column, [r for r in rows if r["column"] == column], sum_eps,
                     count_eps, int(record["plan"]["centre_rows"]))
    g = record["privacy"]
    subtitle = (f"DP means per group, ({float(g['epsilon']):.3g}, {float(g['delta']):.2g})-DP "
                "in one charge\nbars: ± the noise's sd (a bound from the plan's public "
                "scales and the released values; clipping bias not included)\nhollow grey: "
                f"fewer than {int(record['plan']['centre_rows']):,} rows released")
    if len(record["columns"]) > MAX_PANELS:
        subtitle += f"; the first {MAX_PANELS} of {len(record['columns'])} columns"
    if record.get("seeded"):
        subtitle += " — SEEDED RUN, not for publication"
    fig.suptitle(f"{title + ': ' if title else ''}{subtitle}", fontsize=9)
    return fig


def render_describe_png(record: Mapping[str, Any], *, title: str | None = None,
                        dpi: int = 110) -> bytes:
    """The PNG bytes of :func:`render_describe_figure`."""
    fig = render_describe_figure(record, title=title, dpi=dpi)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


@dataclass(frozen=True)
class DescribePngSink(FileSink):
    """``--plot``: the PNG of the released means (:func:`render_describe_png`), titled
    with ``title`` (the dataset or the input's name)."""

    title: str = ""

    def check(self) -> None:
        require("plot", "the describe plot")
        super().check()

    def prepare(self, release: Release) -> Write:
        return self._writer(render_describe_png(release.record,
                                                title=self.title), "plot")


__all__ = ["MAX_PANELS", "DescribePngSink", "mean_noise_sd", "render_describe_figure",
           "render_describe_png"]
