"""A bad test seed is refused before the charge, and a refused fit is no "same data" fit
(s50-fitedge's audit).

On main a fit's seed was checked only where its noise was drawn: ``dprect fit --seed -1``
with a ledger reserved and charged its run (a ``failed`` row, ε spent) before exit 2; a
class list's fit (``--classes``, ``dprect.fit(classes=)``, the classifier) spent the
budget and then failed inside NumPy (``SeedSequence``: exit 1 "internal error", a
``ValueError``/``TypeError`` from the API); a private class selection charged first too.
And the classifier remembered a fit's data before the fit ran, so a fit refused for a
parameter (a bad grid, a bad seed, a cap) made the corrected fit on the same data warn
"fitted again on the same data" — or refused it under ``same_data="refuse"``, although
nothing was ever released."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from cli_run import messages, run
from golden_cases import INPUT

import dprect
from dprect.app.classifier import RectangleClassifier
from dprect.release.budget import PrivacyBudget, PrivacyBudgetWarning
from dprect.release.ledger import BudgetExceededError, Ledger

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")

FIT = ["fit", "--input", str(INPUT), "--features", "x,y", "--label", "g",
       "--epsilon", "1", "--delta", "0", "--quiet"]
GEN = np.random.default_rng(5)
Y = GEN.choice(np.array([0, 1]), 300)
X = GEN.uniform(0, 1, (300, 2)) + Y[:, None]
BAD_SEEDS = [-1, 1.5, "7", True, np.random.RandomState(0)]
SEED_IDS = ["negative", "float", "text", "bool", "RandomState"]


@pytest.mark.parametrize("classes", [["--positive-label", "a"], ["--classes", "a,b"],
                                     ["--select-groups", "--selection-epsilon", "0.5",
                                      "--selection-delta", "1e-6"]],
                         ids=["one", "classes", "select"])
def test_a_negative_seed_is_refused_before_the_ledger(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], classes: list[str]) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    code, out, err = run([*FIT, *classes, "--seed", "-1", "--output",
                          str(tmp_path / "r.json"), "--ledger", str(ledger),
                          "--dataset", "ds"], capsys)
    assert code == 2, (out, err)
    lines = messages(err)
    assert len(lines) == 1 and "--seed must be a non-negative integer" in lines[0], err
    assert not (tmp_path / "r.json").exists()
    assert Ledger(str(ledger)).runs("ds") == []  # nothing reserved, nothing spent


@pytest.mark.parametrize("seed", BAD_SEEDS, ids=SEED_IDS)
@pytest.mark.parametrize("kind", ["one", "classes", "select"])
def test_the_api_refuses_a_bad_seed_before_the_charge(seed: object, kind: str) -> None:
    budget = PrivacyBudget()
    options = {"one": {}, "classes": {"classes": [0, 1]},
               "select": {"select_groups": True, "selection_epsilon": 0.5,
                          "selection_delta": 1e-6}}[kind]
    with pytest.raises(dprect.ParameterError, match="seed must be a non-negative integer"):
        dprect.fit(X, Y, epsilon=1.0, delta=1e-6, seed=seed, budget=budget, **options)
    assert budget.charges == []


@pytest.mark.parametrize("seed", BAD_SEEDS, ids=SEED_IDS)
def test_the_classifier_refuses_a_bad_random_state_before_the_charge(seed: object) -> None:
    budget = PrivacyBudget()
    est = RectangleClassifier(1.0, 1e-6, classes=[0, 1], random_state=seed, budget=budget)
    with pytest.raises(dprect.ParameterError, match="seed must be a non-negative integer"):
        est.fit(X, Y)
    assert budget.charges == [] and not hasattr(est, "result_")


@pytest.mark.parametrize("shared", [True, False], ids=["budget", "estimator"])
@pytest.mark.parametrize("bad", [{"grid": "nonsense"}, {"random_state": -1},
                                 {"method": "nonsense"}], ids=["grid", "seed", "method"])
def test_a_refused_fit_leaves_no_same_data_mark(shared: bool, bad: dict) -> None:
    budget = PrivacyBudget() if shared else None
    est = RectangleClassifier(1.0, 1e-6, classes=[0, 1], budget=budget,
                              same_data="refuse", **{"random_state": 3, **bad})
    with pytest.raises(dprect.ParameterError) as refused:
        est.fit(X, Y)
    assert "same data" not in str(refused.value)
    est.set_params(**{k: 3 if k == "random_state" else RectangleClassifier().get_params()[k]
                      for k in bad})
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyBudgetWarning)
        est.fit(X, Y)  # the first fit released: no repeat, no refusal
    assert hasattr(est, "result_")
    with pytest.raises(dprect.ParameterError, match="same data"):
        est.fit(X, Y)  # a released fit's data is remembered


def test_a_fit_past_the_cap_leaves_no_same_data_mark() -> None:
    budget = PrivacyBudget(0.5, 1e-3)
    est = RectangleClassifier(1.0, 1e-6, classes=[0, 1], budget=budget, random_state=3,
                              same_data="refuse")
    for _ in range(2):  # the cap again, not "the same data"
        with pytest.raises(BudgetExceededError):
            est.fit(X, Y)
    est.set_params(epsilon=0.25)
    est.fit(X, Y)
    assert len(budget.charges) == 1
