"""The plot of one rectangle per class: every non-empty class drawn on every panel, in its
own colour, and every class (an empty one marked) in the legend."""

from __future__ import annotations

import dataclasses

import pytest

from dprect.core.classes import ClassesResult
from dprect.core.domains import Grid
from dprect.core.result import FitResult
from dprect.release.class_plot import render_classes_figure, render_classes_png


def rect(lo: list[float], hi: list[float]) -> FitResult:
    m = 100
    return FitResult(["a", "b", "c"], lo, hi, [int(v * m) for v in lo],
                     [int(v * m) - 1 for v in hi], [Grid(0, 1, m)] * 3, "composition",
                     None, {}, seeded=False)


def test_every_class_is_drawn_and_listed():
    a = rect([0.1, 0.1, 0.1], [0.4, 0.4, 0.4])
    b = rect([0.5, 0.5, 0.5], [0.9, 0.9, 0.9])
    empty = dataclasses.replace(a, lower_index=[50, 0, 0], upper_index=[10, 99, 99])
    res = ClassesResult(["x", "y", "z"], [a, b, empty])
    fig = render_classes_figure(res, title="t")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 2  # (a, b) and (b, c)
    for ax in panels:
        gids = {p.get_gid() for p in ax.patches}
        assert gids == {"class x", "class y"}  # the empty class is drawn nowhere
        colours = {p.get_edgecolor() for p in ax.patches}
        assert len(colours) == 2
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["class x", "class y", "class z (empty)"]
    assert render_classes_png(res)[:4] == b"\x89PNG"


def test_needs_one_result_per_class():
    with pytest.raises(Exception, match="one result per class"):
        ClassesResult(["x", "y"], [rect([0.1] * 3, [0.2] * 3)])


def test_the_title_names_the_classes_the_guarantee_and_a_seeded_run():
    """The title (one helper with the fit's plot: release/plotting.py ``suptitle``)."""
    from dprect.core.accounting import Guarantee
    from dprect.release.plotting import render_figure

    a = rect([0.1, 0.1, 0.1], [0.4, 0.4, 0.4])
    private = dataclasses.replace(a, privacy=Guarantee(1.0, 1e-6, "add-remove", "b"),
                                  seeded=True)
    res = ClassesResult(["x", "y"], [private, private])
    got = render_classes_figure(res, title="t", label="kind").get_suptitle()
    assert got == ("t: one rectangle around each listed value of kind; 2 classes, "
                   "composition, (1, 1e-06)-DP in one charge — SEEDED RUN, not for publication")
    plain = ClassesResult(["x", "y"], [a, a])
    assert render_classes_figure(plain).get_suptitle() == "composition, NOT private"
    assert render_figure(private, title="t", around="y = 1").get_suptitle() == (
        "t: rectangle around y = 1; composition, (1, 1e-06)-DP — SEEDED RUN, not for "
        "publication")
    assert render_figure(a).get_suptitle() == "composition, NOT private"


LONG_TITLE = ("the quarterly survey of household spending, second wave, reweighted "
              "extract for the regional offices")


def _title_inside(fig) -> str:
    """The figure drawn (:func:`png_bytes`), its title's box inside the figure's: its
    text, with its line breaks as spaces."""
    from dprect.release.plotting import png_bytes

    png_bytes(fig)
    box = fig._suptitle.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height
    return fig.get_suptitle().replace("\n", " ")


@pytest.mark.parametrize("features", [1, 3])
def test_a_long_title_is_wrapped_whole_into_the_figure(features: int):
    """s51-clf item 5: a centred title wider than the figure was cut at both edges (the
    start of a long dataset name lost). Now it is broken between words into lines that
    fit, every character kept; a title that fits is unchanged (the tests above)."""
    from dprect.core.accounting import Guarantee
    from dprect.release.plotting import render_figure

    one = FitResult(["a", "b", "c"][:features], [0.1] * features, [0.4] * features,
                    [10] * features, [39] * features, [Grid(0, 1, 100)] * features,
                    "composition", Guarantee(1.0, 1e-6, "add-remove", "b"), {}, seeded=True)
    res = ClassesResult(["x", "y"], [one, one])
    text = _title_inside(render_classes_figure(res, title=LONG_TITLE,
                                               label="kind_of_the_label_column"))
    assert text == (f"{LONG_TITLE}: one rectangle around each listed value of "
                    "kind_of_the_label_column; 2 classes, composition, (1, 1e-06)-DP in "
                    "one charge — SEEDED RUN, not for publication")
    text = _title_inside(render_figure(one, title=LONG_TITLE, around="label = 1"))
    assert text.startswith(LONG_TITLE + ": rectangle around label = 1")


def test_a_word_wider_than_the_figure_is_cut_keeping_every_character():
    from matplotlib.figure import Figure

    from dprect.release.plotting import fitted_title

    word = "k" * 400
    lines = fitted_title(Figure(figsize=(5.6, 5.0)), f"a {word} b", 10).split("\n")
    assert len(lines) > 2 and "".join(lines[1:-1]) + lines[-1].split(" ")[0] == word
    assert lines[0] == "a" and lines[-1].endswith(" b")
    assert fitted_title(Figure(figsize=(5.6, 5.0)), "short\ntitle", 10) == "short\ntitle"
