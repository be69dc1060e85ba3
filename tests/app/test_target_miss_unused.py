"""A stated ``target_miss`` that the run cannot use is refused at the plan, before
anything is read or charged (s50-fitedge's audit). On main a forced ``randmargins`` or
``composition`` — and a classes' fit without a public N, whose ``auto`` never weighs the
box (it counts no positives) — took ``--target-miss 0.1`` silently: the run drew another
method's rectangle and its record listed the unused target in its request."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_run import messages, run
from golden_cases import INPUT

import dprect
from dprect.core.domains import FloatOrder
from dprect.core.errors import ParameterError
from dprect.core.planner import plan
from dprect.release.budget import PrivacyBudget
from dprect.release.ledger import Ledger

UNUSED = "target_miss aims the quantiles method's box, which this run cannot choose"


@pytest.mark.parametrize("method", ["randmargins", "composition"])
def test_a_forced_method_refuses_a_target_it_never_draws(method: str) -> None:
    with pytest.raises(ParameterError, match=f"{UNUSED} \\(method={method} never"):
        plan(epsilon=1.0, delta=1e-6, domains=[FloatOrder()] * 2, method=method,
             target_miss=0.05, positives=1000)


def test_auto_and_quantiles_keep_their_target() -> None:
    for method in ("auto", "quantiles"):
        p = plan(epsilon=1.0, delta=1e-6, domains=[FloatOrder()] * 2, method=method,
                 target_miss=0.05, positives=1000)
        assert p.to_json()["request"]["target_miss"] == 0.05
    counted = plan(epsilon=1.0, delta=1e-6, domains=[FloatOrder()] * 2, target_miss=0.05)
    assert counted.to_json()["request"]["target_miss"] == 0.05  # auto counts N


def test_a_classes_fit_refuses_a_target_without_n() -> None:
    gen = np.random.default_rng(1)
    X, y = gen.normal(size=(200, 2)), gen.integers(0, 2, 200)
    budget = PrivacyBudget()
    with pytest.raises(ParameterError, match=UNUSED):
        dprect.fit(X, y, epsilon=1.0, delta=1e-6, classes=[0, 1], target_miss=0.05,
                   budget=budget)
    assert budget.charges == []


@pytest.mark.parametrize("extra", [["--method", "randmargins"], ["--classes", "a,b"]],
                         ids=["randmargins", "classes"])
def test_the_command_line_refuses_before_the_ledger(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    label = [] if extra[0] == "--classes" else ["--positive-label", "a"]
    code, _, err = run(["fit", "--input", str(INPUT), "--features", "x,y", "--label", "g",
                        *label, "--epsilon", "1", "--delta", "1e-6", "--target-miss",
                        "0.1", "--output", str(tmp_path / "r.json"), "--ledger",
                        str(ledger), "--dataset", "ds", *extra], capsys)
    assert code == 2, err
    assert len(messages(err)) == 1 and f"--{UNUSED.replace('_', '-')}" in err, err
    assert not (tmp_path / "r.json").exists() and Ledger(str(ledger)).runs("ds") == []
