"""A PNG of a learned rectangle: 2-D projections, with the true rectangle when it is known.

What a picture may show is what a result may publish: the private rectangle, the public
grid bounds of each feature and, for synthetic data, the public true rectangle. It never
draws data points — a scatter of the rows would leak them — and it takes no data argument.

Panels pair consecutive features (f0 × f1, f2 × f3, …; an odd last feature pairs with
the one before it; a single feature gets a 1-D panel). An unbounded side (a float-order
domain) is drawn to the panel's edge and marked open. Rendering uses matplotlib's Agg
backend into memory, so :func:`write_png` can write the file atomically.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence

from dprect.core.extras import require
from dprect.core.result import FitResult
from dprect.release.files import write_atomic

MAX_PANELS = 8


def feature_pairs(dims: int) -> list[tuple[int, int]]:
    """Feature index pairs shown, one per panel (at most :data:`MAX_PANELS`)."""
    if dims == 1:
        return [(0, 0)]
    pairs = [(j, j + 1) for j in range(0, dims - 1, 2)]
    if dims % 2:
        pairs.append((dims - 2, dims - 1))
    return pairs[:MAX_PANELS]


def _clip(lo: float, hi: float, lim: tuple[float, float]) -> tuple[float, float]:
    """An interval with infinite ends replaced by the panel's edges."""
    return (lo if math.isfinite(lo) else lim[0]), (hi if math.isfinite(hi) else lim[1])


def _view(j: int, result: FitResult, true_lower: Sequence[float] | None,
          true_upper: Sequence[float] | None) -> tuple[float, float]:
    """Axis limits of feature j: the grid bounds, else the rectangles' finite ends."""
    bounds = result.domains[j].bounds  # public; None for the unbounded float order
    if bounds is not None:
        lo, hi = bounds
    else:
        ends = [result.lower[j], result.upper[j]]
        if true_lower is not None and true_upper is not None:
            ends += [true_lower[j], true_upper[j]]
        finite = [e for e in ends if math.isfinite(e) and abs(e) < 1e300]
        lo, hi = (min(finite), max(finite)) if finite else (-1.0, 1.0)
    if not hi > lo:
        lo, hi = lo - 1.0, hi + 1.0
    pad = 0.06 * (hi - lo)
    return lo - pad, hi + pad


def render_png(result: FitResult, *, true_lower: Sequence[float] | None = None,
               true_upper: Sequence[float] | None = None, title: str | None = None,
               dpi: int = 110) -> bytes:
    """The PNG bytes of the rectangle's 2-D projections (see the module docstring)."""
    require("plot")
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    dims = len(result.features)
    pairs = feature_pairs(dims)
    cols = min(len(pairs), 2)
    rows = math.ceil(len(pairs) / cols)
    fig = Figure(figsize=(5.2 * cols, 4.6 * rows), dpi=dpi, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[len(pairs):]:
        ax.set_visible(False)
    for ax, (a, b) in zip(axes.flat, pairs, strict=False):
        xlim = _view(a, result, true_lower, true_upper)
        ylim = (0.0, 1.0) if a == b else _view(b, result, true_lower, true_upper)

        # public grid bounds
        gx, gy = result.domains[a].bounds, result.domains[b].bounds
        if gx is not None and (a == b or gy is not None):
            gy_ = (0.05, 0.95) if a == b else gy
            assert gy_ is not None
            ax.add_patch(Rectangle((gx[0], gy_[0]), gx[1] - gx[0], gy_[1] - gy_[0],
                                   fill=False, ls=":", lw=1.0, ec="0.45",
                                   label="grid bounds (public)"))
        if true_lower is not None and true_upper is not None:
            x0, x1 = _clip(true_lower[a], true_upper[a], xlim)
            y0, y1 = (0.2, 0.8) if a == b else _clip(true_lower[b], true_upper[b], ylim)
            ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=True, alpha=0.18,
                                   fc="tab:green", ec="tab:green", lw=2.0,
                                   label="true rectangle"))
        lo_a, hi_a = result.lower[a], result.upper[a]
        lo_b, hi_b = (0.25, 0.75) if a == b else (result.lower[b], result.upper[b])
        if lo_a <= hi_a and lo_b <= hi_b:
            x0, x1 = _clip(lo_a, hi_a, xlim)
            y0, y1 = _clip(lo_b, hi_b, ylim)
            open_side = not all(math.isfinite(v) for v in (lo_a, hi_a, lo_b, hi_b))
            ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False,
                                   ec="tab:red", lw=2.0, ls="--" if open_side else "-",
                                   label="learned (private)"
                                         + (" — open side" if open_side else "")))
        else:
            ax.text(0.5, 0.5, "empty rectangle", transform=ax.transAxes, ha="center",
                    color="tab:red")
        ax.set_xlim(*xlim)
        ax.set_ylim(*ylim)
        ax.set_xlabel(result.features[a])
        if a == b:
            ax.set_yticks([])
        else:
            ax.set_ylabel(result.features[b])
        ax.legend(loc="upper right", fontsize=7, framealpha=0.8)
    g = result.privacy
    subtitle = (f"{result.method}, ({g.epsilon:.3g}, {g.delta:.2g})-DP"
                if g is not None else f"{result.method}, NOT private")
    if result.seeded:
        subtitle += " — SEEDED RUN, not for publication"
    fig.suptitle(f"{title + ': ' if title else ''}{subtitle}", fontsize=10)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def write_png(path: str | os.PathLike[str], result: FitResult, **kwargs: object) -> None:
    """Render (:func:`render_png`) and write the PNG atomically: whole file or none."""
    write_atomic(path, render_png(result, **kwargs))  # type: ignore[arg-type]


__all__ = ["MAX_PANELS", "feature_pairs", "render_png", "write_png"]
