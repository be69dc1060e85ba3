"""A seeded classes' fit warns ONCE a run (s51-clf item 1): ``dprect.fit(classes=...,
seed=...)``, the same with ``select_groups`` and ``RectangleClassifier(random_state=...)``
issued the seeded-run warning once per class (and once more for the selection's draw)
where warnings are not de-duplicated by line (``always``, a logger, a notebook's reruns).
Now the run warns once, at the caller's line, and its classes' sources stay quiet."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dprect
from dprect.core.randomness import SEEDED_WARNING

GRID = "0:10:64"
CLASSES = ["x", "y", "z"]


def _data() -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(1)
    y = np.array(["x", "y", "z", "w"] * 300)
    return gen.uniform(0, 10, (len(y), 2)), y


def _seeded_warnings(run) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run()
    return [w for w in seen if str(w.message) == SEEDED_WARNING]


@pytest.mark.parametrize("select", [False, True])
def test_the_api_warns_once_a_run(select: bool) -> None:
    X, y = _data()
    extra = {"select_groups": True, "selection_epsilon": 0.5,
             "selection_delta": 1e-6} if select else {}
    seen = _seeded_warnings(lambda: dprect.fit(X, y, classes=CLASSES, grid=GRID,
                                               epsilon=2.0, delta=1e-6, seed=5, **extra))
    assert len(seen) == 1
    assert seen[0].filename == __file__  # the caller's line, not dprect's


def test_an_unseeded_classes_fit_does_not_warn() -> None:
    X, y = _data()
    assert not _seeded_warnings(lambda: dprect.fit(X, y, classes=CLASSES, grid=GRID,
                                                   epsilon=2.0, delta=1e-6))


@pytest.mark.parametrize("select", [False, True])
def test_the_classifier_warns_once_a_fit(select: bool) -> None:
    pytest.importorskip("sklearn")
    X, y = _data()
    extra = {"select_groups": True, "selection_epsilon": 0.5,
             "selection_delta": 1e-6} if select else {"classes": CLASSES}
    clf = dprect.RectangleClassifier(2.0, 1e-6, grid=GRID, random_state=5, **extra)
    assert len(_seeded_warnings(lambda: clf.fit(X, y))) == 1
