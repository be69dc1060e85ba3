"""A PNG of one rectangle per class: every class's rectangle on the same 2-D projections.

The rules of :mod:`dprect.release.plotting` hold: only what the result publishes is drawn
(the private rectangles and the public grid bounds, never a data point). Panels pair
consecutive features as there (:func:`~dprect.release.plotting.feature_pairs`); each
class is one colour (a solid outline, listed in the legend by its class name); a class
whose rectangle is empty is listed as ``(empty)`` in the legend and drawn nowhere; a
result with no class (a private selection kept none) is one line saying so. Each
panel zooms to the union of the classes' finite bounds plus a margin. Given the label
column, the legend names each class ``label = c`` and the title says each rectangle is
around one listed value of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dprect.core.accounting import Guarantee
from dprect.core.classes import ClassesResult
from dprect.core.extras import require
from dprect.release.plotting import (
    _clip,
    axis_limits,
    frame_panel,
    panel_grid,
    plain_text,
    png_bytes,
    suptitle,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: one colour per class, cycled past ten classes (line styles then differ)
COLOURS = ("tab:red", "tab:blue", "tab:green", "tab:orange", "tab:purple", "tab:brown",
           "tab:pink", "tab:olive", "tab:cyan", "tab:gray")
STYLES = ("-", "--", ":", "-.")


def _view(j: int, result: ClassesResult) -> tuple[float, float]:
    """Feature j's limits: the union of every non-empty class's finite ends, with a
    margin; the grid bounds (else ±1) when no class gives one."""
    ends = [v for r in result.results if not r.empty for v in (r.lower[j], r.upper[j])]
    return axis_limits(ends, result.results[0].domains[j].bounds)


def render_classes_figure(result: ClassesResult, *, title: str | None = None,
                          dpi: int = 110, label: str | None = None,
                          privacy: Guarantee | None = None) -> Figure:
    """The matplotlib figure of every class's rectangle (the module docstring); with the
    ``label`` column's name each class is named ``label = c`` (the rows it is around).
    ``privacy``: the run's guarantee when it is not the classes' own (after a private
    selection of the classes: the two composed)."""
    require("plot")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    if not result.results:  # a private selection kept no class: the figure says so
        return _no_class_figure(result, title, dpi, label, privacy)
    first = result.results[0]
    fig, axes, pairs = panel_grid(len(first.features), dpi, legend_height=0.6)
    handles: list[Any] = []
    for i, (c, r) in enumerate(zip(result.classes, result.results, strict=True)):
        colour, style = COLOURS[i % len(COLOURS)], STYLES[(i // len(COLOURS)) % len(STYLES)]
        handles.append(Line2D([], [], color=colour, ls=style, lw=2.0,
                              label=(f"{label} = {c}" if label else f"class {c}")
                              + (" (empty)" if r.empty else "")))
    for ax, (a, b) in zip(axes.flat, pairs, strict=False):
        one_d = a == b
        xlim = _view(a, result)
        ylim = (0.0, 1.0) if one_d else _view(b, result)
        k = len(result.classes)
        for i, r in enumerate(result.results):
            if r.empty:
                continue
            colour = COLOURS[i % len(COLOURS)]
            style = STYLES[(i // len(COLOURS)) % len(STYLES)]
            # 1-D: each class a band at its own height, so overlapping classes stay apart
            ys = ((i + 0.2) / k, (i + 0.8) / k) if one_d else (r.lower[b], r.upper[b])
            xs, ys = _clip(r.lower[a], r.upper[a], xlim), _clip(*ys, ylim)
            ax.add_patch(Rectangle((xs[0], ys[0]), xs[1] - xs[0], ys[1] - ys[0],
                                   fill=False, ec=colour, lw=2.0, ls=style,
                                   gid=f"class {result.classes[i]}", zorder=3 + i))
        frame_panel(ax, (a, b), xlim, ylim, first)
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 5),
               fontsize=8, frameon=False)
    g = privacy or result.privacy
    suptitle(fig, title, f"one rectangle around each listed value of {label}" if label
             else None,
             f"{len(result.classes)} classes, {result.method}" if g is not None
             else result.method,
             f"({g.epsilon:.3g}, {g.delta:.2g})-DP in one charge" if g is not None else None,
             result.seeded)
    return fig


def _no_class_figure(result: ClassesResult, title: str | None, dpi: int,
                     label: str | None, privacy: Guarantee | None) -> Figure:
    """The figure of a result with no class (a private selection kept none): no panel,
    one line saying so, the title and the one charge."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12.0, 2.4), dpi=dpi, layout="constrained")
    fig.text(0.5, 0.45, "no class passed the private selection: no rectangle is released",
             ha="center", va="center", fontsize=10)
    g = privacy or result.privacy
    suptitle(fig, title, f"the values of {label} found privately" if label else None,
             f"0 classes, {result.method}",
             f"({g.epsilon:.3g}, {g.delta:.2g})-DP in one charge" if g is not None else None,
             result.seeded)
    return fig


def render_classes_png(result: ClassesResult, *, title: str | None = None,
                       dpi: int = 110, label: str | None = None,
                       privacy: Guarantee | None = None) -> bytes:
    """The PNG bytes of :func:`render_classes_figure`, drawn and saved with its texts
    plain (a class named ``a$b``: :func:`~dprect.release.plotting.plain_text`,
    :func:`~dprect.release.plotting.png_bytes`)."""
    with plain_text():
        return png_bytes(render_classes_figure(result, title=title, dpi=dpi, label=label,
                                               privacy=privacy))


__all__ = ["COLOURS", "render_classes_figure", "render_classes_png"]
