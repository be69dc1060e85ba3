"""A PNG of a learned rectangle: 2-D projections, with the true rectangle when it is known.

What a picture may show is what a result may publish: the private rectangle, the public
grid bounds of each feature and, for synthetic data, the public true rectangle. It never
draws data points — a scatter of the rows would leak them — and it takes no data argument.

Panels pair consecutive features (f0 × f1, f2 × f3, …; an odd last feature pairs with
the one before it; a single feature gets a 1-D panel). Each panel:

* draws the learned (DP) rectangle as a solid red outline and the true rectangle, when
  given, as a dashed blue outline on top of it, so the two stay apart even where they
  nearly coincide; one legend for the figure names both;
* zooms to the union of the two rectangles plus a small margin (not to the whole grid;
  the grid's public bounds are in the axis label and drawn dotted where they are in view);
* writes the bounds as numbers above the panel: one line per rectangle with each axis's
  ``[lower, upper]``, rounded to the panel's scale.

An unbounded side (a float-order domain), or one beyond ±1e300, is drawn at the panel's
edge and written ``-inf`` / ``inf`` (or its value); the legend says so, and so does the
line the sink prints (:func:`open_sides`), so no released value can fail the plot.
Rendering uses matplotlib's Agg backend into memory, so the sink can write the file
atomically; the same inputs give the same bytes. :func:`render_figure`
returns the matplotlib figure itself (for tests and notebooks); :func:`render_png` is what
``dprect fit --plot`` and the fit job write.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dprect.core.extras import require
from dprect.core.result import FitResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MAX_PANELS = 8


@dataclass(frozen=True)
class Outline:
    """How a rectangle's outline is drawn (matplotlib colour, line width, line style)."""

    colour: str
    width: float
    style: str


#: the learned rectangle solid, the true one dashed, in other colours; the grid dotted
LEARNED = Outline("tab:red", 2.4, "-")
TRUE = Outline("tab:blue", 1.6, "--")
GRID = Outline("0.55", 1.0, ":")
MARGIN = 0.08  # of the union's extent, on each side
_HUGE = 1e300  # finite ends beyond this (float-order extremes) are treated as open


@contextmanager
def plain_text() -> Iterator[None]:
    """Draw every text as it is written, whatever matplotlib's settings: a title (the
    dataset's name), a column, class or group name — a public one, or a key found privately
    — holding ``$`` (``a$b``, ``$\\frac{$``) is no mathtext expression, and no text needs
    LaTeX (``text.usetex`` in a user's matplotlibrc). Either made the drawing raise after
    the release was charged (no plot, and a replay of the run id failing alike). Every
    plotter renders and saves its figure inside this; a text without ``$`` is drawn as
    before, byte for byte. matplotlib's warnings about the drawing are not shown: they
    quoted a name's characters raw (``Glyph 27 (\x1b) missing from font(s)``: a terminal
    escape of a key found privately) and the renderer's source line, several lines on
    stderr of a run that succeeded. Without matplotlib it names the ``plot`` extra
    (:func:`~dprect.core.extras.require`), as every plotter does."""
    require("plot")
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def open_sides(result: FitResult) -> int:
    """How many sides of a (non-empty) rectangle are drawn at a panel's edge because
    they cannot be placed: infinite, or beyond ±1e300 (:data:`_HUGE`)."""
    if result.empty:
        return 0
    return sum(1 for v in (*result.lower, *result.upper)
               if not (math.isfinite(v) and abs(v) < _HUGE))


def edge_note(sides: int) -> str:
    """What the line saying where a plot went adds for ``sides`` open sides."""
    return f" ({sides} open side(s) drawn at the panel's edge)" if sides else ""


def feature_pairs(dims: int) -> list[tuple[int, int]]:
    """Feature index pairs shown, one per panel (at most :data:`MAX_PANELS`)."""
    if dims == 1:
        return [(0, 0)]
    pairs = [(j, j + 1) for j in range(0, dims - 1, 2)]
    if dims % 2:
        pairs.append((dims - 2, dims - 1))
    return pairs[:MAX_PANELS]


def panel_grid(features: int, dpi: int, *, legend_height: float
               ) -> tuple[Any, Any, list[tuple[int, int]]]:
    """A headless figure with one panel per feature pair (:func:`feature_pairs`), two
    panels a row, the unused ones hidden: the figure, its axes and the pairs."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    pairs = feature_pairs(features)
    cols = min(len(pairs), 2)
    rows = math.ceil(len(pairs) / cols)
    fig = Figure(figsize=(5.6 * cols, 5.0 * rows + legend_height), dpi=dpi,
                 layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[len(pairs):]:
        ax.set_visible(False)
    return fig, axes, pairs


def frame_panel(ax: Any, pair: tuple[int, int], xlim: tuple[float, float],
                ylim: tuple[float, float], result: FitResult) -> None:
    """A panel's limits and axis labels (a 1-D panel, a == b, has no y axis)."""
    a, b = pair
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel(_axis_label(a, result), fontsize=9)
    if a == b:
        ax.set_yticks([])
    else:
        ax.set_ylabel(_axis_label(b, result), fontsize=9)


def _clip(lo: float, hi: float, lim: tuple[float, float]) -> tuple[float, float]:
    """An interval cut to the panel: open or far-away ends are drawn at its edges."""
    return min(max(lo, lim[0]), lim[1]), min(max(hi, lim[0]), lim[1])


def _view(j: int, result: FitResult, true_lower: Sequence[float] | None,
          true_upper: Sequence[float] | None) -> tuple[float, float]:
    """Axis limits of feature j: the union of the rectangles' finite ends with a margin of
    :data:`MARGIN`; the grid bounds (else ±1) when neither rectangle gives one."""
    ends: list[float] = []
    if not result.empty:
        ends += [result.lower[j], result.upper[j]]
    if true_lower is not None and true_upper is not None:
        ends += [float(true_lower[j]), float(true_upper[j])]
    return axis_limits(ends, result.domains[j].bounds)


def axis_limits(ends: Sequence[float], bounds: tuple[float, float] | None
                ) -> tuple[float, float]:
    """A panel axis's limits: the span of the finite ``ends`` with a margin of
    :data:`MARGIN`; the public grid ``bounds`` (else ±1) when no end is finite."""
    finite = [e for e in ends if math.isfinite(e) and abs(e) < _HUGE]
    if finite:
        lo, hi = min(finite), max(finite)
    elif bounds is not None:
        lo, hi = bounds
    else:
        lo, hi = -1.0, 1.0
    if not hi > lo:  # a single point: widen it around itself
        half = 0.5 * abs(lo) if lo != 0 else 1.0
        lo, hi = lo - half, hi + half
    pad = MARGIN * (hi - lo)
    return lo - pad, hi + pad


def format_bound(value: float, extent: float) -> str:
    """A bound written short: decimals to about 1/10,000 of ``extent`` (the panel's
    width) without trailing zeros; 4 significant digits for values of 10^7 and more or a
    panel narrower than 10^-3; ``inf``/``-inf`` for an open side."""
    if not math.isfinite(value):
        return "inf" if value > 0 else "-inf"
    decimals = 4 - math.floor(math.log10(extent)) if extent > 0 else 2
    if abs(value) >= 1e7 or decimals > 6:
        return f"{value:.4g}"
    text = f"{value:.{max(decimals, 0)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if float(text) == 0 else text  # no "-0"


def _bounds_line(name: str, lows: Sequence[float], highs: Sequence[float],
                 features: Sequence[str], extent: float) -> str:
    cells = [f"{f} [{format_bound(lo, extent)}, {format_bound(hi, extent)}]"
             for f, lo, hi in zip(features, lows, highs, strict=True)]
    return f"{name}: " + "   ".join(cells)


def _axis_label(j: int, result: FitResult) -> str:
    bounds = result.domains[j].bounds
    if bounds is None:
        return f"{result.features[j]}  (float order, no bounds)"
    return f"{result.features[j]}  (grid {bounds[0]:g} … {bounds[1]:g})"


def _outline(ax: Any, xs: tuple[float, float], ys: tuple[float, float], outline: Outline,
             gid: str, zorder: int) -> None:
    """An unfilled rectangle [xs] × [ys] on ``ax``, tagged ``gid`` (grid, learned, true)."""
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((xs[0], ys[0]), xs[1] - xs[0], ys[1] - ys[0], fill=False,
                           ec=outline.colour, lw=outline.width, ls=outline.style, gid=gid,
                           zorder=zorder))


def _legend_entry(outline: Outline, label: str) -> Any:
    from matplotlib.lines import Line2D

    return Line2D([], [], color=outline.colour, lw=outline.width, ls=outline.style,
                  label=label)


def render_figure(result: FitResult, *, true_lower: Sequence[float] | None = None,
                  true_upper: Sequence[float] | None = None, title: str | None = None,
                  dpi: int = 110, around: str | None = None) -> Figure:
    """The matplotlib figure of the rectangle's 2-D projections (see the module
    docstring); :func:`render_png` saves it. Headless: the figure has an Agg canvas.
    ``around`` names the rows the rectangle is around (``label = 1``: the label column
    and the positive label), written in the title and the legend."""
    require("plot")
    truth = None
    if true_lower is not None and true_upper is not None:
        truth = [float(v) for v in true_lower], [float(v) for v in true_upper]
    fig, axes, pairs = panel_grid(len(result.features), dpi, legend_height=0.4)
    open_side = False
    for ax, (a, b) in zip(axes.flat, pairs, strict=False):
        one_d = a == b  # a single feature: a 1-D panel, the boxes as bands
        shown = [a] if one_d else [a, b]
        names = [result.features[j] for j in shown]
        xlim = _view(a, result, true_lower, true_upper)
        ylim = (0.0, 1.0) if one_d else _view(b, result, true_lower, true_upper)
        # one rounding per panel: the narrower axis's
        extent = min(xlim[1] - xlim[0], math.inf if one_d else ylim[1] - ylim[0])

        gx = result.domains[a].bounds
        gy = (0.05, 0.95) if one_d else result.domains[b].bounds
        if gx is not None and gy is not None:  # public; mostly out of view once zoomed
            _outline(ax, gx, gy, GRID, "grid", 1)
        lines: list[tuple[str, str]] = []
        if not result.empty:
            lo, hi = result.lower, result.upper
            ys = (0.25, 0.75) if one_d else (lo[b], hi[b])
            open_side |= not all(math.isfinite(v) and abs(v) < _HUGE
                                 for v in (lo[a], hi[a], *ys))
            _outline(ax, _clip(lo[a], hi[a], xlim), _clip(*ys, ylim), LEARNED, "learned", 3)
            lines.append((_bounds_line("learned (DP)", [lo[j] for j in shown],
                                       [hi[j] for j in shown], names, extent),
                          LEARNED.colour))
        else:
            ax.text(0.5, 0.5, "empty rectangle", transform=ax.transAxes, ha="center",
                    color=LEARNED.colour)
            lines.append(("learned (DP): empty rectangle (every row is a negative)",
                          LEARNED.colour))
        if truth is not None:
            tlo, thi = truth
            ys = (0.2, 0.8) if one_d else (tlo[b], thi[b])
            _outline(ax, _clip(tlo[a], thi[a], xlim), _clip(*ys, ylim), TRUE, "true", 4)
            lines.append((_bounds_line("true", [tlo[j] for j in shown],
                                       [thi[j] for j in shown], names, extent), TRUE.colour))
        for k, (text, colour) in enumerate(reversed(lines)):  # the learned line on top
            ax.annotate(text, (0.0, 1.0), xycoords="axes fraction", xytext=(0, 4 + 11 * k),
                        textcoords="offset points", fontsize=8, family="monospace",
                        color=colour, ha="left", va="bottom", annotation_clip=False)
        frame_panel(ax, (a, b), xlim, ylim, result)
    handles = [_legend_entry(LEARNED, "learned rectangle (DP)"
                             + (f" around {around}" if around else "")
                             + (" — open sides at the panel edge" if open_side else ""))]
    if truth is not None:
        handles.append(_legend_entry(TRUE, "true rectangle (public)"))
    if any(d.bounds is not None for d in result.domains):
        handles.append(_legend_entry(GRID, "grid bounds (public)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8,
               frameon=False)
    g = result.privacy
    private = f"({g.epsilon:.3g}, {g.delta:.2g})-DP" if g is not None else None
    suptitle(fig, title, f"rectangle around {around}" if around else None, result.method,
             private, result.seeded)
    return fig


def suptitle(fig: Any, title: str | None, what: str | None, method: str,
             private: str | None, seeded: bool) -> None:
    """A fit's or a class fit's figure title: ``title: what; method, guarantee`` — ``NOT
    private`` without one — and the seeded run's warning (public inputs only), wrapped to
    the figure's width (:func:`fitted_title`)."""
    subtitle = f"{method}, {private}" if private is not None else f"{method}, NOT private"
    if what:
        subtitle = f"{what}; {subtitle}"
    if seeded:
        subtitle += " — SEEDED RUN, not for publication"
    text = f"{title + ': ' if title else ''}{subtitle}"
    fig.suptitle(fitted_title(fig, text, 10), fontsize=10)


#: the share of a figure's width one line of its title may take
TITLE_WIDTH = 0.96


def _text_width(text: str, fontsize: float) -> float:
    """The width of ``text`` drawn plain (no mathtext) in the default font at
    ``fontsize``, in points (matplotlib's own metrics of its glyphs: no renderer)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    width, _, _ = text_to_path.get_text_width_height_descent(
        text, FontProperties(size=fontsize), ismath=False)
    return float(width)


def _wrapped(line: str, fontsize: float, room: float) -> list[str]:
    """One line of a title as lines of at most ``room`` points: broken between words,
    and a word wider than a line cut where it must be (every character kept)."""
    if _text_width(line, fontsize) <= room:
        return [line]
    out: list[str] = []
    current = ""
    for word in line.split(" "):
        joined = f"{current} {word}" if current else word
        if _text_width(joined, fontsize) <= room:
            current = joined
            continue
        if current:
            out.append(current)
        while len(word) > 1 and _text_width(word, fontsize) > room:
            lo, hi = 1, len(word) - 1  # the longest head that fits (at least one char)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if _text_width(word[:mid], fontsize) <= room:
                    lo = mid
                else:
                    hi = mid - 1
            out.append(word[:lo])
            word = word[lo:]
        current = word
    out.append(current)
    return out


def fitted_title(fig: Any, text: str, fontsize: float) -> str:
    """A figure's title as it is drawn whole: each of its lines that is wider than
    :data:`TITLE_WIDTH` of the figure broken into lines that fit (a centred title wider
    than the figure was cut at both edges: a long dataset name, label or key). A title
    that fits is returned as it is, so its figure is drawn as before, byte for byte."""
    room = fig.get_figwidth() * 72.0 * TITLE_WIDTH
    return "\n".join(part for line in text.split("\n")
                     for part in _wrapped(line, fontsize, room))


def render_png(result: FitResult, *, true_lower: Sequence[float] | None = None,
               true_upper: Sequence[float] | None = None, title: str | None = None,
               dpi: int = 110, around: str | None = None) -> bytes:
    """The PNG bytes of :func:`render_figure` (see the module docstring), drawn and saved
    with its texts plain (:func:`plain_text`, :func:`png_bytes`)."""
    with plain_text():
        return png_bytes(render_figure(result, true_lower=true_lower, true_upper=true_upper,
                                       title=title, dpi=dpi, around=around))


def png_bytes(fig: Figure) -> bytes:
    """The PNG bytes of a figure, its every text drawn as it is: a text made before the
    figure reached here is set plain too (no mathtext: a dataset id, a feature or group
    name, a label or a class holding two ``$`` — ``$\\frac{`` — failed the drawing after
    the charge; one holding ``$x$`` was drawn as a formula), and the texts the drawing
    makes (tick labels) are made inside :func:`plain_text`, without matplotlib's warnings
    on stderr. Every plot sink saves through it."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)
    buf = io.BytesIO()
    with plain_text():
        fig.savefig(buf, format="png")
    return buf.getvalue()


__all__ = ["MAX_PANELS", "TITLE_WIDTH", "edge_note", "feature_pairs", "fitted_title",
           "format_bound", "open_sides", "plain_text", "png_bytes", "render_figure",
           "render_png", "suptitle"]
