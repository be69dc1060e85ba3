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

:func:`classes_guarantee` states this as code (the charge of the tuple from one run's
add-remove guarantee), :func:`classes_charge` is what a run charges, and
:func:`checked_charge` has the independent check re-derive it before any data is read
(:func:`dprect.core.guarantee_check.check_classes_plan`); the tests check it against the
accountant and mutate :data:`REPLACE_STEPS` to see the run refused.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from dprect._version import __version__
from dprect.core.accounting import ADD_REMOVE, REPLACE_ONE, Guarantee, group_privacy
from dprect.core.domains import Domain
from dprect.core.errors import ParameterError
from dprect.core.group_selection import SelectionPlan, select_keys
from dprect.core.guarantee_check import CheckReport, check_classes_plan
from dprect.core.labels import (
    MAX_CLASSES,
    LabelText,
    PositiveLabel,
    check_classes,
    label_key,
    resolve_positive_label,
)
from dprect.core.planner import MethodPlan, Plan
from dprect.core.randomness import RandomSource
from dprect.core.result import FitResult, checked_rows
from dprect.core.validation import is_blank, line_text

#: the add/remove steps one replace-one neighbour makes among the k runs (Theorem K′):
#: both inside one class's run, or one in each of two classes' runs
REPLACE_STEPS = 2


def classes_guarantee(per_class: Guarantee, neighbouring: str) -> Guarantee:
    """The guarantee of k runs on disjoint positive sets (the module docstring's proof),
    from ONE run's add-remove guarantee ``per_class`` (ε, δ):

    * add-remove: ``per_class`` itself (parallel composition: one run changes);
    * replace-one: a replaced row is s = :data:`REPLACE_STEPS` = 2 add/remove steps; the
      worse of the same-class case, group privacy of size s (sε, δ·Σ_{i<s} e^{iε}) =
      (2ε, (1 + e^ε)δ), and the cross-class case, s runs each one add/remove step apart,
      (sε, sδ) by basic composition — the former, as 2 ≤ 1 + e^ε; for s = 2 exactly
      :func:`~dprect.core.accounting.replace_one`'s floats.
    """
    if per_class.neighbouring != ADD_REMOVE:
        raise ParameterError("classes_guarantee expects a run's add/remove guarantee")
    if neighbouring == ADD_REMOVE:
        return per_class
    if neighbouring != REPLACE_ONE:
        raise ParameterError(f"unknown neighbouring relation {neighbouring!r}")
    steps = REPLACE_STEPS
    eps, same_delta = group_privacy(per_class, steps)
    cross_delta = steps * per_class.delta
    if Fraction(cross_delta) < steps * Fraction(per_class.delta):
        cross_delta = math.nextafter(cross_delta, math.inf)
    return Guarantee(eps, max(same_delta, cross_delta), REPLACE_ONE,
                     per_class.bound + "; replace-one by group privacy (2eps, (1+e^eps)delta)")


def classes_charge(chosen: MethodPlan) -> Guarantee:
    """The ONE charge of k runs of the plan whose chosen method is ``chosen``:
    :func:`classes_guarantee` of one run's add/remove guarantee under the plan's
    neighbouring relation (the planner's own replace-one statement when the composition
    is right). :func:`checked_charge` has it re-derived independently."""
    return classes_guarantee(chosen.add_remove_guarantee, chosen.guarantee.neighbouring)


def checked_charge(the_plan: Plan, domains: Sequence[Domain], classes: int | None
                   ) -> tuple[Guarantee, CheckReport]:
    """:func:`classes_charge` of ``the_plan`` for ``classes`` classes (None: any number,
    the classes a private selection keeps; the charge does not depend on it), re-derived
    by the
    independent check (:func:`dprect.core.guarantee_check.check_classes_plan`, docs/
    privacy.md §10 and §12) before any data is read: a charge the check cannot re-derive
    refuses the run (:class:`~dprect.core.guarantee_check.GuaranteeCheckError`, one line
    naming parameters only)."""
    charge = classes_charge(the_plan.chosen)
    report = check_classes_plan(the_plan.chosen, list(domains),
                                beta=float(the_plan.request["beta"]),
                                shape=str(the_plan.request["shape"]), charge=charge,
                                classes=classes)
    return charge, report


@dataclass(frozen=True)
class NoClass:
    """What a class's result would state, for a result with NO class (a private class
    selection kept none: docs/privacy.md §18): the per-class guarantee, the features, the
    plan's method, whether seeded, the version."""

    privacy: Guarantee | None
    features: list[str]
    method: str
    seeded: bool
    version: str


@dataclass(frozen=True)
class ClassesResult:
    """One rectangle per listed class (in the list's order), and the ONE guarantee of
    them all (:func:`classes_guarantee`; every class's own result states the same). With
    no class (a private selection kept none), ``none`` says what a class's would."""

    classes: list[str]
    results: list[FitResult]
    #: what the independent check re-derived for the one charge (None: not recorded)
    check: dict[str, Any] | None = None
    none: NoClass | None = None

    def __post_init__(self) -> None:
        if len(self.classes) != len(self.results) or (not self.results
                                                       and self.none is None):
            raise ParameterError("one result per class")

    def __getitem__(self, cls: object) -> FitResult:
        key = label_key(cls)
        try:
            return self.results[self.classes.index(key)]
        except ValueError:
            raise KeyError(key) from None

    @property
    def _first(self) -> FitResult | NoClass:
        if self.results:
            return self.results[0]
        assert self.none is not None
        return self.none

    @property
    def privacy(self) -> Guarantee | None:
        return self._first.privacy

    @property
    def features(self) -> list[str]:
        return self._first.features

    @property
    def seeded(self) -> bool:
        return self._first.seeded

    @property
    def method(self) -> str:
        return self._first.method

    def contains(self, X: np.ndarray) -> np.ndarray:
        """(n, k) booleans: row i inside class c's rectangle (:meth:`FitResult.contains`);
        X is read once. A selection that kept no class gives (n, 0) — X checked all the
        same."""
        rows = checked_rows(X, self.features)
        return np.column_stack([r.contains(rows) for r in self.results]) if self.results \
            else np.zeros((len(rows), 0), dtype=bool)

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
            "version": self._first.version,
        }
        if not self.results:  # no class: the plan's method is read back from here
            out["fit_method"] = self.method
        if self.check is not None:
            out["guarantee_check"] = self.check
        return out

    def to_json_string(self) -> str:
        return json.dumps(self.to_json(), indent=2, allow_nan=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClassesResult:
        classes = [str(c) for c in data["classes"]]
        none = None
        if not classes:
            g = data.get("statistics_privacy", data.get("privacy"))
            none = NoClass(None if g is None else Guarantee(**g), list(data["features"]),
                           str(data["fit_method"]), bool(data["seeded"]),
                           str(data["version"]))
        return cls(classes, [FitResult.from_json(data["rectangles"][c]) for c in classes],
                   data.get("guarantee_check"), none)

    def summary(self) -> str:
        parts = []
        for c, r in zip(self.classes, self.results, strict=True):
            text = r.summary().splitlines()
            keep = [line for line in text if line.startswith("  ")]
            parts.append(f"class {line_text(c)}:" + ("\n" + "\n".join(keep) if keep else ""))
        if not self.results:
            return "no class passed the private selection: no rectangle is released"
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


def label_candidates(pairs: Iterable[tuple[object, int]], kind: str) -> dict[str, int]:
    """The candidates of a private class selection (docs/privacy.md §18): each label
    value seen in the data, named as a class is (:func:`label_key` of the value read as
    the column's ``kind`` — an int by its exact digits for a column of an integer type,
    which both engines count as its integers, else a float, as they compare labels),
    → its rows, from (value, rows) pairs (an engine's count per value; pairs naming one
    class are summed, e.g. 0.0 and -0.0). Nulls, NaN and ±inf are no class (a class is a
    finite label), and so is an empty or blank text (a class is never blank:
    :func:`~dprect.core.labels.check_label_value`; kept, it would refuse the run after the
    draw — an outcome of the selection shown without its charge): left out, row by row.
    Every engine gives the same keys and counts."""
    out: dict[str, int] = {}
    for value, rows in pairs:
        if value is None or kind == "null":
            continue
        if kind == "numeric":
            if isinstance(value, int | Decimal) and not isinstance(value, bool) \
                    and value == int(value):  # an integer type's value: exact
                key = str(int(value))
            else:
                number = float(value)  # type: ignore[arg-type]
                if not math.isfinite(number):
                    continue
                key = label_key(number)
        elif kind == "boolean":
            key = label_key(bool(value))
        else:
            key = str(value)
            if is_blank(key):
                continue
        out[key] = out.get(key, 0) + int(rows)
    return out


def class_labels(values: Sequence[PositiveLabel | LabelText]) -> list[str]:
    """The classes' names in a result (:func:`label_key`)."""
    return [label_key(v) for v in values]


def unlisted_candidates(counts: Mapping[str, int],
                        listed: Sequence[PositiveLabel | LabelText], kind: str,
                        column: str) -> dict[str, int]:
    """The candidates a private class selection draws over beside a PUBLIC class list
    (docs/privacy.md §18, Theorem S′): ``counts`` (:func:`label_candidates`) without the
    key of any listed class, each read against the label column's ``kind``
    (:func:`resolve_positive_label`: from the schema and the list only — a class the
    column cannot hold is refused, naming the column) — by every numeric reading (a
    float64's, a float32's nearest float32, an integer type's exact one), as ``kind``
    does not say which: a listed
    class's rows are never a candidate's, and a candidate left out for a reading another
    type would give is left out by the public list alone."""
    out = dict(counts)
    for value in listed:
        read = resolve_positive_label(value, kind, column)
        if read is None:
            continue
        out.pop(label_key(read), None)
        if kind != "numeric":
            continue
        single = resolve_positive_label(value, kind, column, single=True)
        if single is not None:  # a float32 column's reading (its nearest float32)
            out.pop(label_key(single), None)
        try:
            exact = resolve_positive_label(value, kind, column, integral=True)
        except ParameterError:
            continue  # a fraction: no integer type's row holds it
        out.pop(label_key(exact), None)
    return out


def select_classes(selection: SelectionPlan, candidates: Mapping[str, int],
                   rng: RandomSource, listed: int = 0) -> tuple[list[str], int]:
    """The classes a private selection adds beside ``listed`` public ones
    (docs/privacy.md §18, "At most MAX_CLASSES classes"): the keys
    :func:`~dprect.core.group_selection.select_keys` keeps, at most
    :data:`MAX_CLASSES` − ``listed`` of them — the first in the order of their text —
    and how many it kept past that cap (0 below it). A function of the selection's
    output and the public list only: post-processing, no privacy spent (the number kept
    is part of the DP output already). Whether the cap binds is known only after the
    draw, so it truncates rather than refuses: a refusal would depend on the data."""
    kept = select_keys(selection, candidates, rng)
    room = MAX_CLASSES - listed
    return kept[:room], max(0, len(kept) - room)


def fit_each_class(names: Sequence[str], runs: Sequence[Callable[..., FitResult]],
                   seed: int | None, charge: Guarantee, check: CheckReport,
                   the_plan: Plan, features: Sequence[str]) -> ClassesResult:
    """The rectangles of the classes ``names``: class i's from ``runs[i](seed=s)``, s
    :func:`class_seeds`' seed i (None: OS entropy), the same on every engine and front
    end; with no class (a private selection kept none, docs/privacy.md §18), a result
    stating what a class's would (:class:`NoClass`: the per-class ``charge``)."""
    results = [run(seed=s) for run, s in zip(runs, class_seeds(seed, len(runs)),
                                             strict=True)]
    none = None if results else NoClass(charge, list(features), the_plan.chosen.method,
                                        seed is not None, __version__)
    return ClassesResult(list(names), results, check.to_json(), none)


__all__ = ["MAX_CLASSES", "REPLACE_STEPS", "ClassesResult", "NoClass", "check_classes",
           "checked_charge",
           "class_labels", "class_seeds", "classes_charge", "classes_guarantee",
           "fit_each_class", "is_classes_record", "label_candidates", "label_key",
           "select_classes", "unlisted_candidates"]
