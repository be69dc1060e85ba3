"""The classifier and the budget: every refit of scikit-learn's model-selection helpers is a
release charged to the shared budget (clone keeps it by reference), a cap stops a grid
search, and a refit on the same data warns or is refused (docs/operations.md, "Model
selection on private data")."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import (
    GridSearchCV,
    RandomizedSearchCV,
    cross_val_predict,
    cross_val_score,
    cross_validate,
    learning_curve,
    permutation_test_score,
    validation_curve,
)

import dprect
from dprect.app.classifier import RectangleClassifier
from dprect.release.budget import PrivacyBudget, PrivacyBudgetWarning
from dprect.release.ledger import BudgetExceededError, Ledger

pytestmark = [pytest.mark.filterwarnings("ignore:this run used a fixed seed"),
              pytest.mark.filterwarnings("ignore::dprect.release.budget.PrivacyBudgetWarning")]

GEN = np.random.default_rng(11)
Y = GEN.choice(np.array(["p", "q"]), 400)
X = np.where(Y[:, None] == "p", 0.3, 0.7) + GEN.uniform(-0.1, 0.1, (400, 2))


def clf(budget: PrivacyBudget | None, **kw: object) -> RectangleClassifier:
    params: dict = {"grid": "0:1:64", "classes": ["p", "q"], "random_state": 0,
                    "budget": budget, **kw}
    return RectangleClassifier(1.0, 1e-6, **params)


HELPERS = {  # name → (call, the number of fits it makes)
    "cross_val_score": (lambda e: cross_val_score(e, X, Y, cv=5), 5),
    "cross_validate": (lambda e: cross_validate(e, X, Y, cv=3), 3),
    "cross_val_predict": (lambda e: cross_val_predict(e, X, Y, cv=3), 3),
    "GridSearchCV": (lambda e: GridSearchCV(e, {"epsilon": [0.5, 1.0]}, cv=3).fit(X, Y),
                     2 * 3 + 1),
    "RandomizedSearchCV": (lambda e: RandomizedSearchCV(
        e, {"epsilon": [0.5, 1.0, 2.0]}, n_iter=2, cv=3, random_state=0).fit(X, Y),
        2 * 3 + 1),
    "learning_curve": (lambda e: learning_curve(e, X, Y, train_sizes=[0.5, 1.0], cv=3),
                       2 * 3),
    "validation_curve": (lambda e: validation_curve(e, X, Y, param_name="epsilon",
                                                    param_range=[0.5, 1.0], cv=3), 2 * 3),
    "permutation_test_score": (lambda e: permutation_test_score(
        e, X, Y, cv=2, n_permutations=2, random_state=0), (1 + 2) * 2),
}


@pytest.mark.parametrize("helper", sorted(HELPERS))
def test_every_refit_of_a_model_selection_helper_is_charged(helper):
    call, fits = HELPERS[helper]
    budget = PrivacyBudget()
    est = clf(budget)
    call(est)
    assert len(budget.charges) == fits
    assert all(c.what == "classes" for c in budget.charges)
    assert not hasattr(est, "result_")  # the helper fitted clones: all charged the budget
    spent = budget.spent()
    assert spent is not None
    assert spent.epsilon == pytest.approx(sum(c.guarantee.epsilon for c in budget.charges))
    assert spent.epsilon > fits * 0.49  # each fit about its ε (0.5 or more)


def test_clone_keeps_the_budget_by_reference():
    budget = PrivacyBudget(1.0, 1e-6)
    assert clone(clf(budget)).budget is budget
    assert clone(clone(clf(budget))).get_params()["budget"] is budget


def test_a_cap_stops_a_grid_search():
    budget = PrivacyBudget(3.0, 1e-3)  # three fits at ε = 1
    search = GridSearchCV(clf(budget), {"epsilon": [1.0, 0.99]}, cv=3,
                          error_score="raise")
    with pytest.raises(BudgetExceededError):
        search.fit(X, Y)
    assert len(budget.charges) == 3
    spent = budget.spent()
    assert spent is not None and spent.epsilon <= 3.0 * (1 + 1e-9)
    # scikit-learn's default error_score=nan turns a refused fit into a NaN score and a
    # FitFailedWarning; the refit on the whole data is refused outright
    budget2 = PrivacyBudget(3.0, 1e-3)
    with pytest.warns(FitFailedWarning), pytest.raises(BudgetExceededError):
        GridSearchCV(clf(budget2), {"epsilon": [1.0, 0.99]}, cv=3).fit(X, Y)
    spent2 = budget2.spent()
    assert spent2 is not None and spent2.epsilon <= 3.0 * (1 + 1e-9)


def test_a_ledger_budget_caps_a_cross_validation(tmp_path):
    path = tmp_path / "ledger"
    led = Ledger(path)
    led.init()
    led.set_cap("adult", 2.5, 1e-4)
    budget = PrivacyBudget.ledger(str(path), "adult")
    with pytest.raises(BudgetExceededError):
        cross_val_score(clf(budget), X, Y, cv=5, error_score="raise")
    runs = Ledger(path).runs("adult")
    assert len(runs) == 2 and all(r.status == "released" for r in runs)


def test_refitting_on_the_same_data_warns_or_is_refused():
    budget = PrivacyBudget()
    est = clf(budget)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyBudgetWarning)
        est.fit(X, Y)
        est.fit(X[:-1], Y[:-1])  # other data: no warning
    with pytest.warns(PrivacyBudgetWarning, match="same data"):
        est.fit(X, Y)
    with pytest.warns(PrivacyBudgetWarning):  # another estimator sharing the budget
        clf(budget, beta=1e-3).fit(X.copy(), Y.copy())
    assert len(budget.charges) == 4
    refusing = clf(budget, same_data="refuse")
    with pytest.raises(dprect.ParameterError, match="same data"):
        refusing.fit(X, Y)
    assert len(budget.charges) == 4 and not hasattr(refusing, "result_")  # nothing charged
    # without a budget the estimator keeps its own digests (a clone starts afresh)
    alone = clf(None)
    alone.fit(X, Y)
    with pytest.warns(PrivacyBudgetWarning):
        alone.fit(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyBudgetWarning)
        clone(alone).fit(X, Y)


def test_a_second_cross_validation_on_the_same_folds_warns():
    budget = PrivacyBudget()
    cross_val_score(clf(budget), X, Y, cv=3)
    with pytest.warns(PrivacyBudgetWarning):
        cross_val_score(clf(budget), X, Y, cv=3)
    assert len(budget.charges) == 6


def test_the_plan_passes_the_independent_check_before_any_charge(monkeypatch):
    est = clf(None).fit(X, Y)
    check = est.result_.results[0].to_json()["parameters"]["guarantee_check"]
    assert check["product"] == "rectangle" and check["epsilon"] <= 1.0
    import dprect.core.planner as planner
    from dprect.core.guarantee_check import GuaranteeCheckError

    def refuse(*args: object, **kwargs: object) -> object:
        raise GuaranteeCheckError("refused by the test")

    monkeypatch.setattr(planner, "check_fit_plan", refuse)
    budget = PrivacyBudget()
    refused = clf(budget)
    with pytest.raises(GuaranteeCheckError):
        refused.fit(X, Y)
    assert budget.charges == [] and not hasattr(refused, "result_")
