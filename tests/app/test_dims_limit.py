"""More than MAX_DIMS features are refused at once, before anything is built, read or
charged (s50-dims's audit).

On main nothing bounded the dimension: ``dprect plan --dims 10000000000`` built a list
of 10^10 names and was killed for lack of memory (exit 137), ``--dims 1000000`` ran for
minutes (the accountant's search over k <= 2d paid rounds, for each of the 99 staircase
ratios), and a fit or ``dprect.plan`` with as many features alike."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from cli_run import messages, run
from golden_cases import INPUT

import dprect
from dprect.core.domains import MAX_DIMS, FloatOrder
from dprect.core.errors import ParameterError

BUDGET = ["--epsilon", "1", "--delta", "1e-6"]


@pytest.mark.parametrize("dims", [MAX_DIMS + 1, 10**6, 10**10])
def test_plan_past_the_limit_is_one_line_and_exit_2(dims, capsys):
    start = time.perf_counter()
    code, out, err = run(["plan", "--dims", str(dims), *BUDGET], capsys)
    assert time.perf_counter() - start < 2.0
    assert code == 2 and out == ""
    assert messages(err) == [f"dprect: error: --dims gives {dims:,} features, more than "
                             f"the limit of {MAX_DIMS:,} features (MAX_DIMS)"]


def test_plan_features_past_the_limit(capsys):
    names = ",".join(f"f{j}" for j in range(MAX_DIMS + 1))
    code, out, err = run(["plan", "--features", names, *BUDGET], capsys)
    assert code == 2 and out == ""
    assert messages(err) == [f"dprect: error: --features gives {MAX_DIMS + 1:,} features, "
                             f"more than the limit of {MAX_DIMS:,} features (MAX_DIMS)"]


def test_fit_features_past_the_limit_writes_nothing(tmp_path: Path, capsys):
    names = ",".join(["x", "y", *(f"f{j}" for j in range(MAX_DIMS - 1))])
    output, ledger = tmp_path / "out.json", tmp_path / "ledger"
    code, out, err = run(["fit", "--input", str(INPUT), "--features", names, "--label", "g",
                          *BUDGET, "--output", str(output), "--ledger", str(ledger),
                          "--dataset", "d", "--quiet"], capsys)
    assert code == 2 and out == ""
    assert messages(err) == [f"dprect: error: --features gives {MAX_DIMS + 1:,} features, "
                             f"more than the limit of {MAX_DIMS:,} features (MAX_DIMS)"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kwargs, what", [
    ({"dims": MAX_DIMS + 1}, "dims"), ({"dims": 10**10}, "dims"),
    ({"domains": [FloatOrder()] * (MAX_DIMS + 1)}, "domains")])
def test_api_plan_past_the_limit(kwargs, what):
    start = time.perf_counter()
    with pytest.raises(ParameterError, match=f"^{what} gives .* the limit of 4,096 features"):
        dprect.plan(epsilon=1.0, delta=1e-6, **kwargs)
    assert time.perf_counter() - start < 2.0


def test_api_fit_past_the_limit():
    X = np.zeros((3, MAX_DIMS + 1))
    with pytest.raises(ParameterError, match=r"^X gives 4,097 features, more than the limit"):
        dprect.fit(X, np.ones(3), epsilon=1.0, delta=1e-6, seed=1)


def test_the_limit_itself_is_planned():
    got = dprect.plan(dims=MAX_DIMS, epsilon=1.0, delta=1e-6)
    assert len(got.chosen.rounds) == 2 * MAX_DIMS


def test_spark_api_features_past_the_limit():
    """The Spark API refuses from the names alone (no DataFrame is touched)."""
    pytest.importorskip("pyspark")
    from dprect.core.request import FitRequest
    from dprect.engines.spark.classes import fit_dataframe_classes
    from dprect.engines.spark.fit import prepare_fit

    names = [f"f{j}" for j in range(MAX_DIMS + 1)]
    with pytest.raises(ParameterError, match=r"^features gives 4,097 features"):
        prepare_fit(None, features=names, label="g", epsilon=1.0, delta=1e-6)
    with pytest.raises(ParameterError, match=r"^features gives 4,097 features"):
        fit_dataframe_classes(None, features=names, label="g", request=FitRequest(
            epsilon=1.0, delta=1e-6, classes=("a", "b")))
