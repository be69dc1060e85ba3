"""One rectangle per class, in memory: :func:`fit_classes` (``dprect.fit(..., classes=)``).

The same steps as :func:`dprect.fit` for each class of a PUBLIC list, with ONE plan and
one guarantee for all of them (:mod:`dprect.core.classes`): class c's positives are the
rows labelled c (compared as :func:`~dprect.app.api.positive_mask` compares a positive
label); every other row — another class, an unlisted label, a null — is its negative.
"""

from __future__ import annotations

from collections.abc import Sequence

from dprect.app.api import _in_memory
from dprect.core.algorithms import run_plan
from dprect.core.classes import ClassesResult, class_labels, class_seeds, classes_charge
from dprect.core.domains import GridArg
from dprect.core.planner import plan
from dprect.core.randomness import RandomSource
from dprect.core.request import FitRequest


def fit_classes(X: object, y: object, request: FitRequest, *, grid: GridArg = None,
                features: Sequence[str] | None = None, seed: int | None = None
                ) -> ClassesResult:
    """Fit ``request.classes`` (a request with a class list): one plan, then class i's
    rectangle on its positives with its own noise (a test seed gives class i
    :func:`~dprect.core.classes.class_seeds`' seed i, as every engine does)."""
    assert request.classes is not None
    values = list(request.classes)
    engines = []
    names: list[str] = []
    domains = []
    for value in values:  # every check (shapes, types, labels) before any noise
        names, domains, engine = _in_memory(X, y, grid, features, request.invalid_rows,
                                            value)
        engines.append(engine)
    the_plan = plan(request.budget(), domains=domains)
    classes_charge(the_plan.chosen.guarantee)
    results = [run_plan(engine, domains, names, the_plan, RandomSource(seed=s))
               for engine, s in zip(engines, class_seeds(seed, len(values)), strict=True)]
    return ClassesResult(class_labels(values), results)


__all__ = ["fit_classes"]
