"""One rectangle per class, in one charge: the public class list, the guarantee of the
k runs together, and their result.

A label column with a PUBLIC list of classes c₁ … c_k (never read from the data: the set
of values a column holds is itself data-dependent) is fitted as k ordinary fits, one per
class: class c's run takes the rows labelled c as its positives and every other row —
another listed class, an unlisted class, a null label — as a negative. All k runs use the
same plan (one planner call, no data), and each run's noise is independent of the
others'.

Why one charge (docs/privacy.md §12): a run's output depends on its
positives only — the engines are loaded with the positive rows alone and the negatives
enter neither the margins, the interior points nor the cuts. The classes' positive sets
are disjoint, so the k runs form a parallel composition:

* add-remove: adding or removing one row changes the positive set of at most one class
  (none when its label is unlisted or null, or a feature is invalid): the other k − 1
  runs see identical inputs, so the k-tuple is (ε, δ)-DP — the plan's own add-remove
  guarantee, whatever k;
* replace-one: replacing row r by r′ either changes one class's positives by one
  replacement (the same class, or one of them unlisted: a replacement, an add or a
  remove inside that class) — the plan's replace-one guarantee, group privacy of size 2,
  (2ε, (1 + e^ε)·δ) — or moves a row from class a to class b: class a loses a row, class
  b gains one, two runs with independent noise each change by one add/remove step, so
  by basic composition of the two the tuple is (2ε, 2δ)-DP. Since 2 ≤ 1 + e^ε, the
  second case is within the first, and the k-tuple costs the plan's replace-one
  guarantee: still one charge.

:func:`classes_guarantee` states this as code (the charge of the tuple from the plan's
add-remove guarantee), and the tests check it against the accountant.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dprect.core.accounting import ADD_REMOVE, REPLACE_ONE, Guarantee, replace_one
from dprect.core.errors import ParameterError
from dprect.core.labels import MAX_CLASSES, LabelText, PositiveLabel, check_classes, label_key
from dprect.core.result import FitResult


def classes_guarantee(per_class: Guarantee, neighbouring: str) -> Guarantee:
    """The guarantee of k runs on disjoint positive sets (the module docstring's proof),
    from ONE run's add-remove guarantee ``per_class``:

    * add-remove: ``per_class`` itself (parallel composition: one run changes);
    * replace-one: the worse of the same-class case, :func:`replace_one` (group privacy,
      (2ε, (1 + e^ε)δ)), and the cross-class case, two runs each one add/remove step
      apart, (2ε, 2δ) by basic composition — the former, as 2 ≤ 1 + e^ε.
    """
    if per_class.neighbouring != ADD_REMOVE:
        raise ParameterError("classes_guarantee expects a run's add/remove guarantee")
    if neighbouring == ADD_REMOVE:
        return per_class
    if neighbouring != REPLACE_ONE:
        raise ParameterError(f"unknown neighbouring relation {neighbouring!r}")
    same_class = replace_one(per_class)
    cross_eps, cross_delta = 2 * per_class.epsilon, 2 * per_class.delta
    assert cross_eps <= same_class.epsilon and cross_delta <= same_class.delta
    return same_class


def classes_charge(planned: Guarantee) -> Guarantee:
    """The charge of k runs of one plan whose guarantee is ``planned`` (the planner's: an
    add-remove guarantee, or the replace-one image :func:`replace_one` of one): the same
    guarantee, after checking that the cross-class case of replace-one — two runs each
    one add/remove step apart, (2·ε/2, 2·δ_ar) with δ_ar = δ/(1 + e^(ε/2)) — is within
    it (:func:`classes_guarantee`)."""
    if planned.neighbouring == REPLACE_ONE:
        eps_ar = planned.epsilon / 2
        delta_ar = planned.delta / (1 + np.exp(eps_ar))
        if not (2 * eps_ar <= planned.epsilon and 2 * delta_ar <= planned.delta):
            raise AssertionError("the cross-class case exceeds the plan's guarantee")
    elif planned.neighbouring != ADD_REMOVE:
        raise ParameterError(f"unknown neighbouring relation {planned.neighbouring!r}")
    return planned


@dataclass(frozen=True)
class ClassesResult:
    """One rectangle per listed class (in the list's order), and the ONE guarantee of
    them all (:func:`classes_guarantee`; every class's own result states the same)."""

    classes: list[str]
    results: list[FitResult]

    def __post_init__(self) -> None:
        if len(self.classes) != len(self.results) or not self.results:
            raise ParameterError("one result per class")

    def __getitem__(self, cls: object) -> FitResult:
        key = label_key(cls)
        try:
            return self.results[self.classes.index(key)]
        except ValueError:
            raise KeyError(key) from None

    @property
    def privacy(self) -> Guarantee | None:
        return self.results[0].privacy

    @property
    def features(self) -> list[str]:
        return self.results[0].features

    @property
    def seeded(self) -> bool:
        return self.results[0].seeded

    @property
    def method(self) -> str:
        return self.results[0].method

    def contains(self, X: np.ndarray) -> np.ndarray:
        """(n, k) booleans: row i inside class c's rectangle (:meth:`FitResult.contains`)."""
        return np.column_stack([r.contains(X) for r in self.results])

    def to_json(self) -> dict[str, Any]:
        """The result JSON: the classes, their one guarantee, and each class's result."""
        g = self.privacy
        out: dict[str, Any] = {
            "method": "classes",
            "classes": list(self.classes),
            "features": list(self.features),
            "privacy": None if g is None else g.to_json(),
            "charge": "one charge for every class (parallel composition: disjoint rows)",
            "rectangles": {c: r.to_json() for c, r in zip(self.classes, self.results,
                                                           strict=True)},
            "seeded": self.seeded,
            "version": self.results[0].version,
        }
        return out

    def to_json_string(self) -> str:
        return json.dumps(self.to_json(), indent=2, allow_nan=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClassesResult:
        classes = [str(c) for c in data["classes"]]
        return cls(classes, [FitResult.from_json(data["rectangles"][c]) for c in classes])

    def summary(self) -> str:
        parts = []
        for c, r in zip(self.classes, self.results, strict=True):
            text = r.summary().splitlines()
            keep = [line for line in text if line.startswith("  ")]
            parts.append(f"class {c}:" + ("\n" + "\n".join(keep) if keep else ""))
        head = self.results[0].summary().splitlines()
        head = [line for line in head if not line.startswith("  ")]
        head.append(f"{len(self.classes)} classes, one charge (disjoint rows)")
        return "\n".join([*head, *parts])


def is_classes_record(record: Any) -> bool:
    """True for a :meth:`ClassesResult.to_json` record."""
    return isinstance(record, dict) and record.get("method") == "classes"


def class_seeds(seed: int | None, count: int) -> list[int | None]:
    """Each class's seed from a run's seed (tests only), the same on every engine: class
    i draws from ``SeedSequence([seed, i])``; None (OS entropy) stays None."""
    if seed is None:
        return [None] * count
    return [int(np.random.SeedSequence([seed, i]).generate_state(1, np.uint64)[0] >> 1)
            for i in range(count)]


def class_labels(values: Sequence[PositiveLabel | LabelText]) -> list[str]:
    """The classes' names in a result (:func:`label_key`)."""
    return [label_key(v) for v in values]


__all__ = ["MAX_CLASSES", "ClassesResult", "check_classes", "class_labels", "class_seeds",
           "classes_charge", "classes_guarantee", "is_classes_record", "label_key"]
