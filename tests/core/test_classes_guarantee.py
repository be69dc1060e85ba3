"""One rectangle per class (dprect.core.classes): the public class list and the guarantee
of k runs on disjoint positive sets, checked against the accountant.

* add-remove: the k-tuple costs one run's guarantee (parallel composition), whatever k;
* replace-one: the cross-class move (two runs one add/remove step apart each, (2ε, 2δ) by
  basic composition) is within the same-class case (group privacy, (2ε, (1 + e^ε)δ)),
  so the tuple costs the plan's replace-one guarantee — and the planner's replace-one
  plan charges exactly that;
* the class list is public and checked without data.
"""

from __future__ import annotations

import math

import pytest

from dprect.core import classes as classes_module
from dprect.core import guarantee_check
from dprect.core.accounting import (
    ADD_REMOVE,
    REPLACE_ONE,
    Guarantee,
    refined_best,
    replace_one,
)
from dprect.core.classes import (
    MAX_CLASSES,
    check_classes,
    checked_charge,
    class_seeds,
    classes_charge,
    classes_guarantee,
    label_key,
)
from dprect.core.domains import Grid
from dprect.core.errors import ParameterError
from dprect.core.guarantee_check import GuaranteeCheckError, check_classes_plan
from dprect.core.labels import LabelText, check_class_pairs
from dprect.core.planner import plan
from dprect.core.request import FitRequest


@pytest.mark.parametrize("per_class", [
    Guarantee(0.8, 0.0, ADD_REMOVE, "basic composition of 8 rounds"),
    refined_best(0.05, q=0.2, rounds=8, target_delta=1e-6),
])
def test_guarantee_is_one_run_under_add_remove(per_class):
    assert classes_guarantee(per_class, ADD_REMOVE) == per_class


@pytest.mark.parametrize("per_class", [
    Guarantee(2.0, 0.0, ADD_REMOVE, "basic composition of 4 rounds"),
    refined_best(0.05, q=0.2, rounds=8, target_delta=1e-6),
])
def test_replace_one_covers_the_cross_class_move(per_class):
    tuple_g = classes_guarantee(per_class, REPLACE_ONE)
    assert tuple_g == replace_one(per_class)
    # cross class: two independent runs, each one add/remove step apart: (2ε, 2δ)
    assert 2 * per_class.epsilon <= tuple_g.epsilon
    assert 2 * per_class.delta <= tuple_g.delta
    # and it is not free: the tuple is strictly more than one run's add/remove cost
    assert tuple_g.epsilon == pytest.approx(2 * per_class.epsilon)
    if per_class.delta > 0:
        assert tuple_g.delta == pytest.approx((1 + math.exp(per_class.epsilon))
                                              * per_class.delta)


def test_add_remove_only_input():
    with pytest.raises(ParameterError):
        classes_guarantee(replace_one(Guarantee(1.0, 0.0, ADD_REMOVE, "two rounds")),
                          REPLACE_ONE)


@pytest.mark.parametrize("neighbouring", ["add-remove", "replace-one"])
@pytest.mark.parametrize("method", ["randmargins", "composition"])
def test_charge_of_a_plan_is_its_guarantee_within_the_budget(neighbouring, method):
    req = FitRequest(epsilon=2.0, delta=1e-6, method=method, neighbouring=neighbouring,
                     classes=("a", "b", "c", "d", "e"))
    domains = [Grid(0, 1, 2**12)] * 3
    p = plan(req.budget(), domains=domains, auto_count=False)
    g = classes_charge(p.chosen)
    assert g == p.chosen.guarantee  # k = 5 classes, ONE charge: the plan's own
    assert g.epsilon <= 2.0 * (1 + 1e-12) and g.delta <= 1e-6 * (1 + 1e-12)
    assert g.neighbouring == neighbouring
    charged, report = checked_charge(p, domains, 5)  # re-derived independently
    assert charged == g and report.product == "classes" and report.neighbouring == neighbouring
    assert report.epsilon <= g.epsilon and report.delta <= g.delta


def _classes_request(neighbouring: str, method: str = "auto") -> tuple[FitRequest, list]:
    return (FitRequest(epsilon=2.0, delta=1e-6, method=method, neighbouring=neighbouring,
                       classes=("a", "b", "c")), [Grid(0, 1, 2**10)] * 2)


@pytest.mark.parametrize("method", ["randmargins", "composition"])
def test_check_refuses_a_composition_without_the_replace_one_factor_2(monkeypatch, method):
    """Theorem K′: a replaced row is two add/remove steps among the runs. With the
    composition's factor 2 dropped the charge is one run's add/remove (ε, δ) stated as a
    replace-one guarantee: the independent check refuses it (add/remove is untouched)."""
    req, domains = _classes_request("replace-one", method)
    p = plan(req.budget(), domains=domains, auto_count=False)
    monkeypatch.setattr(classes_module, "REPLACE_STEPS", 1)
    assert classes_charge(p.chosen).epsilon == p.chosen.add_remove_guarantee.epsilon
    with pytest.raises(GuaranteeCheckError, match="classes plan"):
        checked_charge(p, domains, 3)
    req, domains = _classes_request("add-remove", method)
    p = plan(req.budget(), domains=domains, auto_count=False)
    assert checked_charge(p, domains, 3)[0] == p.chosen.guarantee


@pytest.mark.parametrize("steps", [1, 3])
def test_the_check_own_factor_is_load_bearing(monkeypatch, steps):
    """The check's own constant broken: 3 steps refuses a correct replace-one charge; 1
    step accepts what 2 refuses (a charge of one run's add/remove guarantee)."""
    req, domains = _classes_request("replace-one")
    p = plan(req.budget(), domains=domains, auto_count=False)
    monkeypatch.setattr(guarantee_check, "CLASSES_REPLACE_STEPS", steps)
    if steps == 3:
        with pytest.raises(GuaranteeCheckError):
            checked_charge(p, domains, 3)
    else:
        monkeypatch.setattr(classes_module, "REPLACE_STEPS", 1)
        checked_charge(p, domains, 3)


def test_a_charge_below_one_run_is_refused():
    """A charge below one run's guarantee is refused under either relation."""
    for neighbouring in ("add-remove", "replace-one"):
        req, domains = _classes_request(neighbouring)
        p = plan(req.budget(), domains=domains, auto_count=False)
        g = p.chosen.guarantee
        low = Guarantee(g.epsilon * 0.9, g.delta, g.neighbouring, g.bound)
        with pytest.raises(GuaranteeCheckError):
            check_classes_plan(p.chosen, domains, beta=req.beta, shape=req.shape.value,
                               charge=low, classes=3)


def test_class_list_is_checked_without_data():
    assert check_classes([2, "a", True]) == [2, "a", True]
    assert check_classes([LabelText("a"), LabelText("b"), 3]) is not None
    assert [label_key(v) for v in check_classes([1.0, 2.5, False, LabelText("x")])] == [
        "1", "2.5", "false", "x"]
    for bad in (None, "abc", [], [1, 1.0], [float("nan")], [[1]],
                list(range(MAX_CLASSES + 1)),
                # the same label once read against some column type: rows not disjoint
                [1, True], [LabelText("yes"), True], [0, LabelText("no")]):
        with pytest.raises(ParameterError):
            check_classes(bad)
    # two classes given as text are read against the label column's type, so their pair
    # is checked where the schema is known (check_class_pairs, by the column's kind)
    for pair, refused_on in (([LabelText("1"), LabelText("1.0")], {"numeric"}),
                             ([LabelText("true"), LabelText("1")], {"numeric", "boolean"})):
        assert check_classes(pair) is not None
        for kind in ("numeric", "boolean", "string"):
            if kind in refused_on:
                with pytest.raises(ParameterError, match=f"a {kind} column"):
                    check_class_pairs(pair, kind, "y")
            else:
                check_class_pairs(pair, kind, "y")
    with pytest.raises(ParameterError, match="listed twice"):
        FitRequest(epsilon=1, delta=0, classes=("a", LabelText("a")))


def test_class_seeds_are_fixed_distinct_and_none_without_a_seed():
    seeds = class_seeds(7, 4)
    assert seeds == class_seeds(7, 4) and len(set(seeds)) == 4
    assert all(isinstance(s, int) and s >= 0 for s in seeds)
    assert class_seeds(8, 4) != seeds
    assert class_seeds(None, 3) == [None, None, None]


def test_classes_and_a_positive_label_are_not_both_given():
    with pytest.raises(ParameterError, match="not both"):
        FitRequest(epsilon=1, delta=0, classes=("a", "b"), positive_label="a")
    with pytest.raises(ParameterError, match="not both"):
        FitRequest(epsilon=1, delta=0, classes=("a", "b"), positive_label=LabelText("1"))


@pytest.mark.parametrize("classes", [("a", ""), ("a", " "), (LabelText("a"), LabelText(""))])
def test_an_empty_class_is_refused_as_an_empty_group_is(classes):
    """'a,,b' was skipped on the command line but read as a class from a list: an empty
    or blank text class is refused everywhere (s39-edges, as --groups a,,b)."""
    with pytest.raises(ParameterError, match="empty class"):
        FitRequest(epsilon=1, delta=0, classes=classes)
    assert FitRequest(epsilon=1, delta=0, classes=(0, 1)).classes == (0, 1)


def test_for_class_drops_the_list():
    req = FitRequest(epsilon=1, delta=0, classes=(1, 2))
    one = req.for_class(2)
    assert one.classes is None and one.positive_label == 2 and one.budget() == req.budget()
