"""``dprect.PrivacyBudget``: every release of the Python API is charged to a shared budget,
one past its cap is refused before anything is computed, in memory and on the Delta ledger
(release/budget.py)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from special_paths import KINDS, special

import dprect
from dprect.core.accounting import Guarantee, replace_one
from dprect.core.errors import ParameterError
from dprect.release.budget import PrivacyBudget
from dprect.release.ledger import BudgetExceededError, Ledger

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")

GEN = np.random.default_rng(5)
X = GEN.uniform(0, 1, (300, 2))
Y = (X[:, 0] > 0.5).astype(float)
GRID = "0:1:64"


def releases(budget: PrivacyBudget | None) -> dict[str, object]:
    """One call of each product of the Python API, charged to ``budget``."""
    return {
        "fit": dprect.fit(X, Y, grid=GRID, epsilon=0.5, delta=1e-6, seed=1, budget=budget),
        "classes": dprect.fit(X, Y, grid=GRID, classes=[0, 1], epsilon=0.5, delta=1e-6,
                              seed=1, budget=budget),
        "bounds": dprect.bounds(X, epsilon=0.25, seed=1, budget=budget),
        "describe": dprect.describe(X, epsilon=0.25, seed=1, budget=budget),
    }


def guarantee(result: object) -> Guarantee:
    g = getattr(result, "privacy", None) or getattr(result, "guarantee", None)
    assert isinstance(g, Guarantee)
    return g


def test_each_release_is_charged_its_guarantee():
    budget = PrivacyBudget()  # no cap: the spend is counted
    out = releases(budget)
    assert [c.what for c in budget.charges] == ["fit", "classes", "bounds", "describe"]
    for charge, result in zip(budget.charges, out.values(), strict=True):
        assert charge.guarantee == guarantee(result)
    spent = budget.spent()
    assert spent is not None
    assert spent.epsilon == pytest.approx(sum(guarantee(r).epsilon for r in out.values()))
    assert spent.delta == pytest.approx(sum(guarantee(r).delta for r in out.values()))
    assert budget.remaining() is None


@pytest.mark.parametrize("product", ["fit", "classes", "bounds", "describe"])
def test_past_the_cap_nothing_is_computed(product, monkeypatch):
    import dprect.app.api as api
    from dprect.core.statistic import RUNS

    computed: list[str] = []
    original = api.run_plan
    monkeypatch.setattr(api, "run_plan", lambda *a, **k: (computed.append("run_plan"),
                                                           original(*a, **k))[1])
    for name, runs in list(RUNS.items()):  # every mechanism's draw
        monkeypatch.setitem(RUNS, name, runs._replace(
            draw=lambda *a, _o=runs.draw, _n=name, **k: (computed.append(_n), _o(*a, **k))[1]))
    budget = PrivacyBudget(0.1, 1e-9)  # below every product's charge
    calls = {
        "fit": lambda: dprect.fit(X, Y, grid=GRID, epsilon=0.5, delta=1e-6, budget=budget),
        "classes": lambda: dprect.fit(X, Y, grid=GRID, classes=[0, 1], epsilon=0.5,
                                      delta=1e-6, budget=budget),
        "bounds": lambda: dprect.bounds(X, epsilon=0.25, budget=budget),
        "describe": lambda: dprect.describe(X, epsilon=0.25, budget=budget),
    }
    with pytest.raises(BudgetExceededError, match="nothing was computed"):
        calls[product]()
    assert computed == [] and budget.charges == []
    assert dprect.BudgetExceededError is BudgetExceededError


def test_the_cap_admits_up_to_it_and_refuses_the_next():
    budget = PrivacyBudget(1.0, 1e-5)
    for _ in range(2):
        dprect.fit(X, Y, grid=GRID, epsilon=0.5, delta=1e-6, budget=budget)
    with pytest.raises(BudgetExceededError):
        dprect.fit(X, Y, grid=GRID, epsilon=0.5, delta=1e-6, budget=budget)
    assert len(budget.charges) == 2
    remaining = budget.remaining()
    assert remaining is not None and remaining.epsilon == pytest.approx(0.0, abs=1e-6)


def test_relations_follow_the_ledger_rule():
    ar = PrivacyBudget(10.0, 1e-3)  # add-remove cap: a replace-one release implies nothing
    with pytest.raises(dprect.ParameterError, match="implies nothing"):
        dprect.fit(X, Y, grid=GRID, epsilon=1, delta=1e-6, neighbouring="replace-one",
                   budget=ar)
    assert ar.charges == []
    ro = PrivacyBudget(10.0, 1e-3, neighbouring="replace-one")
    res = dprect.fit(X, Y, grid=GRID, epsilon=1, delta=1e-6, budget=ro)  # add-remove
    spent = ro.spent()
    assert spent is not None and res.privacy is not None
    image = replace_one(res.privacy)  # charged its group-privacy image
    assert spent.epsilon == pytest.approx(image.epsilon)
    assert spent.delta == pytest.approx(image.delta, rel=1e-9)


def test_the_cap_holds_to_the_ledgers_slack_and_a_delta_counts_its_image():
    """In memory as on the ledger: a charge past the cap by more than the ledger's relative
    slack (10^-12) is refused and not recorded, and under a replace-one cap an add/remove
    (ε, δ) with δ > 0 counts (2ε, (1 + e^ε)δ) (docs/privacy.md §14)."""
    budget = PrivacyBudget(1.0, 1e-6)
    for over in (Guarantee(1.0 + 1e-9, 0.0, "add-remove", "test"),
                 Guarantee(0.5, 1e-6 * (1 + 1e-9), "add-remove", "test")):
        with pytest.raises(BudgetExceededError), budget.charge(over, "test"):
            pass
    assert budget.charges == []
    ro = PrivacyBudget(10.0, 1e-3, neighbouring="replace-one")
    charged = Guarantee(1.0, 1e-6, "add-remove", "test")
    with ro.charge(charged, "test"):
        pass
    spent, image = ro.spent(), replace_one(charged)
    assert spent is not None and image.delta > 2 * charged.delta
    assert (spent.epsilon, spent.delta) == pytest.approx((image.epsilon, image.delta),
                                                         rel=1e-12)


def test_shared_by_reference_and_not_silently_copied_to_a_process():
    budget = PrivacyBudget(1.0, 1e-6)
    assert copy.deepcopy(budget) is budget and copy.copy(budget) is budget
    assert copy.deepcopy({"b": budget})["b"] is budget
    with pytest.raises(dprect.ParameterError, match="n_jobs=1"):
        pickle.dumps(budget)
    with pytest.raises(dprect.ParameterError):
        dprect.fit(X, Y, epsilon=1, delta=1e-6, budget="not a budget")  # type: ignore[call-overload]
    with pytest.raises(dprect.ParameterError):
        PrivacyBudget(1.0)  # a cap needs both


def test_exported_with_a_docstring():
    assert dprect.PrivacyBudget is PrivacyBudget
    assert "cap" in (PrivacyBudget.__doc__ or "")
    assert {"PrivacyBudget", "PrivacyBudgetWarning", "BudgetExceededError"} <= set(
        dprect.__all__)


def test_ledger_backed_budget_reserves_and_releases(tmp_path):
    path = tmp_path / "ledger"
    led = Ledger(path)
    led.init()
    led.set_cap("ds", 1.6, 1e-4)
    budget = PrivacyBudget.ledger(str(path), "ds")
    out = releases(budget)
    runs = Ledger(path).runs("ds")
    assert sorted(r.method for r in runs) == ["bounds", "classes", "describe", "fit"]
    assert all(r.status == "released" for r in runs)
    spent = budget.spent()
    assert spent is not None
    assert spent.epsilon == pytest.approx(sum(guarantee(r).epsilon for r in out.values()))
    # the ledger's cap (1.6) holds: 1.5 is spent, so the next release is refused
    with pytest.raises(BudgetExceededError):
        dprect.bounds(X, epsilon=0.25, budget=budget)
    assert len(Ledger(path).runs("ds")) == 4
    # a ledger budget crosses processes: it pickles to the same ledger and dataset
    again = pickle.loads(pickle.dumps(budget))
    assert again.dataset == "ds" and again.spent() == budget.spent()


def test_ledger_backed_budget_with_its_own_cap_and_failure(tmp_path, monkeypatch):
    path = tmp_path / "ledger"
    Ledger(path).init()
    budget = PrivacyBudget.ledger(str(path), "ds", 0.6, 1e-5)  # a cap of its own
    dprect.fit(X, Y, grid=GRID, epsilon=0.5, delta=1e-6, budget=budget)
    with pytest.raises(BudgetExceededError):
        dprect.fit(X, Y, grid=GRID, epsilon=0.5, delta=1e-6, budget=budget)

    import dprect.app.api as api

    def boom(*args: object, **kwargs: object) -> object:
        raise RuntimeError("SENTINEL-7f3a")

    monkeypatch.setattr(api, "run_plan", boom)
    with pytest.raises(RuntimeError):
        dprect.fit(X, Y, grid=GRID, epsilon=0.05, delta=1e-7, budget=budget)
    runs = {r.status: r for r in Ledger(path).runs("ds")}
    assert set(runs) == {"released", "failed"}  # the failed release stays charged
    events = Ledger(path).events("ds")
    assert not any("SENTINEL" in str(e) for e in events)  # its type only is recorded
    with pytest.raises(dprect.DprectError):
        PrivacyBudget.ledger(str(tmp_path / "none"), "ds")  # no ledger there


@pytest.mark.parametrize("kind", KINDS)
def test_a_ledger_at_a_device_fifo_or_socket_is_refused_when_named(tmp_path, kind):
    """``PrivacyBudget.ledger(path, ...)`` and ``Ledger(path)`` at a device, a FIFO or a
    socket, or a link to one: the first said the ledger was "damaged" and asked for a
    backup, the second was accepted until its first read. Both refuse it when named, with
    a :class:`ParameterError` naming the path and what it is, from ``os.stat`` alone (the
    FIFO is never opened), nothing written."""
    path, said = special(kind, tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    expected = (f"the budget ledger {str(path)!r} {said}, not a folder: a budget ledger "
                "is a Delta table's folder; give a folder path")
    for make in (lambda: PrivacyBudget.ledger(str(path), "ds"), lambda: Ledger(path)):
        with pytest.raises(ParameterError) as refused:
            make()
        assert str(refused.value) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == before
